"""`buildctl doctor [LOG|-] [--json] [--limit N]` through click's CliRunner: output, JSON and exit codes."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from buildctl.doctor.cli import EXIT_BAD_INPUT, EXIT_MATCH, EXIT_NO_MATCH, doctor
from buildctl.doctor.models import load_catalog

LOGS = Path(__file__).parent / "doctor_logs"


def _run(*args: str, stdin: str | None = None):
    return CliRunner().invoke(doctor, list(args), input=stdin)


def test_exit_codes_are_0_1_2():
    assert (EXIT_MATCH, EXIT_NO_MATCH, EXIT_BAD_INPUT) == (0, 1, 2)


def test_log_file_match_prints_entry_score_and_matched_lines():
    path = LOGS / "hip-invalid-launch-configuration.log"
    result = _run(str(path))
    assert result.exit_code == 0, result.output
    assert f"rocmig doctor: {path}: " in result.output
    assert "1. [hip-invalid-launch-configuration]" in result.output
    assert "score " in result.output
    assert "line 4: bench_scatter.hip:88: HIP error 9 (hipErrorInvalidConfiguration)" in result.output


def test_stdin_dash_is_read():
    result = _run("-", stdin="Err:3 https://repo.radeon.com/rocm/apt/6.2 jammy InRelease\n  NO_PUBKEY 9386B48A1A693C5C\n")
    assert result.exit_code == 0, result.output
    assert "[repo-radeon-no-pubkey]" in result.output
    assert "<stdin>" in result.output


def test_no_argument_reads_stdin():
    result = _run(stdin="E: Release file for http://x/dists/trixie/InRelease is expired (invalid since 2d)\n")
    assert result.exit_code == 0 and "[apt-release-file-expired]" in result.output


def test_healthy_log_exits_1_and_says_how_many_entries_were_checked():
    result = _run(str(LOGS / "healthy" / "torch-training-rocm.log"))
    assert result.exit_code == 1
    assert f"no known cause matched ({len(load_catalog())} catalog entries checked)" in result.output


def test_json_output_schema():
    result = _run(str(LOGS / "miopen-user-db-unwritable.log"), "--json")
    assert result.exit_code == 0
    doc = json.loads(result.output)
    assert set(doc) == {"log", "catalog_entries", "matches"}
    assert doc["catalog_entries"] == len(load_catalog())
    first = doc["matches"][0]
    assert set(first) == {"id", "title", "category", "harmless", "score", "evidence", "demoted_by",
                          "root_cause", "fix", "check", "links"}
    assert first["id"] == "miopen-user-db-unwritable"
    assert all(set(e) == {"line", "text", "pattern"} and e["line"] >= 1 for e in first["evidence"])
    assert [m["score"] for m in doc["matches"]] == sorted((m["score"] for m in doc["matches"]), reverse=True)


def test_json_with_no_match_is_valid_json_and_exit_1():
    result = _run("-", "--json", stdin="all good\n")
    assert result.exit_code == 1
    assert json.loads(result.output)["matches"] == []


def test_limit_restricts_matches():
    path = str(LOGS / "miopen-user-db-unwritable.log")
    assert len(json.loads(_run(path, "--json").output)["matches"]) == 2
    assert len(json.loads(_run(path, "--json", "--limit", "1").output)["matches"]) == 1


def test_missing_file_is_one_line_exit_2_without_traceback(tmp_path):
    missing = tmp_path / "no-such.log"
    result = _run(str(missing))
    assert result.exit_code == 2
    assert result.output.strip().count("\n") == 0
    assert str(missing) in result.output and "No such file or directory" in result.output
    assert "Traceback" not in result.output
    assert not isinstance(result.exception, Exception) or isinstance(result.exception, SystemExit)


def test_directory_as_log_is_bad_input(tmp_path):
    result = _run(str(tmp_path))
    assert result.exit_code == 2
    assert "Traceback" not in result.output


def test_limit_below_one_is_refused_with_the_flag_named():
    result = _run("-", "--limit", "0", stdin="x\n")
    assert result.exit_code == 2
    assert "--limit" in result.output


def test_binary_bytes_in_log_do_not_crash(tmp_path):
    path = tmp_path / "mixed.log"
    path.write_bytes(b"\xff\xfe garbage\nhipErrorNoBinaryForGpu: Unable to find code object for all current devices!\n")
    result = _run(str(path))
    assert result.exit_code == 0 and "[hip-no-binary-for-gpu]" in result.output
