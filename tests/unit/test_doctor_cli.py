"""`buildctl doctor [LOG|-] [--json] [--limit N]` through click's CliRunner: output, JSON and exit codes."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from buildctl.doctor.cli import EXIT_BAD_INPUT, EXIT_MATCH, EXIT_NO_MATCH, doctor
from buildctl.doctor.matcher import FIXTURES_DIR
from buildctl.doctor.models import load_catalog

LOGS = FIXTURES_DIR
HEALTHY_DIR = Path(__file__).parent / "doctor_logs" / "healthy"


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
    result = _run(str(HEALTHY_DIR / "torch-training-rocm.log"))
    assert result.exit_code == 1
    assert f"no known cause matched ({len(load_catalog())} catalog entries checked)" in result.output


def test_json_output_schema():
    result = _run(str(LOGS / "miopen-user-db-unwritable.log"), "--json")
    assert result.exit_code == 0
    doc = json.loads(result.output)
    assert set(doc) == {"schema_version", "kind", "log", "catalog_entries", "lines", "lines_searched", "matches"}
    assert doc["schema_version"] == 1 and doc["kind"] == "doctor"
    assert doc["catalog_entries"] == len(load_catalog())
    first = doc["matches"][0]
    assert set(first) == {"id", "title", "category", "harmless", "generic", "score", "confidence",
                          "pattern_score", "similarity", "signatures", "evidence", "demoted_by",
                          "root_cause", "fix", "confirm", "check", "links"}
    assert first["confidence"] in ("high", "medium", "low") and 0 <= first["similarity"] <= 1
    assert first["id"] == "miopen-user-db-unwritable"
    assert all(set(e) == {"line", "text", "pattern"} and e["line"] >= 1 for e in first["evidence"])
    assert [m["score"] for m in doc["matches"]] == sorted((m["score"] for m in doc["matches"]), reverse=True)


def test_json_with_no_match_is_valid_json_and_exit_1():
    result = _run("-", "--json", stdin="all good\n")
    assert result.exit_code == 1
    doc = json.loads(result.output)
    assert doc["matches"] == [] and doc["collect_next"]["items"]


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


def test_no_match_says_what_to_collect_next_for_that_kind_of_log():
    runtime = _run(str(HEALTHY_DIR / "torch-training-rocm.log"))
    assert runtime.exit_code == 1
    assert "collect next" in runtime.output and "rocminfo" in runtime.output and "dmesg" in runtime.output
    build = _run("-", stdin="#5 [base 2/7] RUN apt-get update\n#5 0.412 Get:1 http://deb.debian.org/debian trixie InRelease\n")
    assert build.exit_code == 1
    assert "image build" in build.output and "apt-cache policy" in build.output


ELF_HEAD = b"\x7fELF\x02\x01\x01\x00" + bytes(range(256)) * 40


@pytest.mark.parametrize(("data", "says"), [
    (ELF_HEAD, "ELF binary"),
    (b"\x1f\x8b\x08\x00" + bytes(200), "gzip-compressed"),
    (b"log start\n\x00\x00\x00\x01\x02 junk", "NUL bytes"),
    (bytes(range(1, 32)) * 300, "control characters"),
])
def test_binary_input_is_refused_in_one_line_with_exit_2(tmp_path, data, says):
    path = tmp_path / "libfoo.so"
    path.write_bytes(data)
    result = _run(str(path))
    assert result.exit_code == 2
    assert result.output.strip().count("\n") == 0
    assert f"{path}: not a text log" in result.output and says in result.output


@pytest.mark.parametrize("content", [b"", b"\n", b"  \r\n\t\n"])
def test_empty_log_is_bad_input_naming_the_file(tmp_path, content):
    path = tmp_path / "build.log"
    path.write_bytes(content)
    result = _run(str(path))
    assert result.exit_code == 2, result.output
    assert result.output.count("\n") == 1
    assert result.output.startswith(f"buildctl: error: {path}: the log is empty ({len(content)} bytes")


def test_empty_stdin_is_bad_input():
    result = _run("-", stdin="")
    assert result.exit_code == 2 and "buildctl: error: <stdin>: the log is empty" in result.output


def test_binary_on_stdin_is_refused():
    result = CliRunner().invoke(doctor, ["-"], input=ELF_HEAD)
    assert result.exit_code == 2 and "<stdin>: not a text log" in result.output


def test_a_real_shared_library_is_refused_quickly_without_loading_the_catalog():
    import sys
    lib = next(Path(sys.base_prefix).glob("lib/libpython3*.so*"), None) or Path(sys.executable).resolve()
    start = time.perf_counter()
    result = subprocess.run([sys.executable, "-m", "buildctl", "doctor", str(lib)], capture_output=True, text=True,
                            timeout=60, check=False)
    assert result.returncode == 2, result.stderr
    assert result.stdout == "" and result.stderr.count("\n") == 1 and "ELF binary" in result.stderr
    assert time.perf_counter() - start < 30  # the whole interpreter start; the refusal itself reads 1 MiB


def test_no_argument_on_a_terminal_says_it_reads_stdin():
    import os
    import pty
    import sys
    master, slave = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "buildctl", "doctor"], stdin=slave, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    os.close(slave)
    os.write(master, b"hipErrorNoBinaryForGpu: Unable to find code object for all current devices!\n\x04")
    out, err = proc.communicate(timeout=60)
    os.close(master)
    assert "reading the log from stdin" in err
    assert proc.returncode == 0 and "[hip-no-binary-for-gpu]" in out


def test_huge_log_is_read_in_bounded_memory_and_says_so(tmp_path):
    path = tmp_path / "train.log"
    filler = b"[rank0] step 100 loss 2.34 lr 1e-4 tokens/s 51234\n" * 150_000  # about 7.5 MB
    path.write_bytes(filler + b"HIP error: hipErrorNoBinaryForGpu: Unable to find code object for all current devices!\n"
                     + filler)
    result = _run(str(path), "--json")
    assert result.exit_code == 0
    doc = json.loads(result.output.split("\n", 1)[1] if result.output.startswith("rocmig") else result.output)
    assert doc["lines"] == 300_001 and doc["lines_searched"] < 150_000
    assert doc["matches"][0]["id"] == "hip-no-binary-for-gpu"
    assert doc["matches"][0]["evidence"][0]["line"] == 150_001


def _big_log(tmp_path: Path) -> Path:
    path = tmp_path / "build.log"
    filler = b"[ 42%] Building HIP object csrc/kernels/attention.hip.o\n" * 120_000  # about 6.6 MB
    path.write_bytes(filler + b'clang-14: error: unable to execute command: Executable "ld.lld" doesn\'t exist!\n')
    return path


def test_large_log_shows_progress_on_a_terminal(tmp_path):
    import os
    import pty
    import sys
    master, slave = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "buildctl", "doctor", str(_big_log(tmp_path))],
                            stdout=subprocess.PIPE, stderr=slave)
    os.close(slave)
    seen = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # the child closed its end
            break
        if not chunk:
            break
        seen += chunk
    out, _ = proc.communicate(timeout=120)
    os.close(master)
    assert proc.returncode == 0 and b"[rocm-lld-not-found]" in out
    assert b"reading " in seen and b" MiB" in seen and b"matching " in seen


def test_large_log_in_a_pipe_writes_no_progress(tmp_path):
    import sys
    result = subprocess.run([sys.executable, "-m", "buildctl", "doctor", str(_big_log(tmp_path))],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0
    assert "reading " not in result.stderr and "matching " not in result.stderr
    assert "\x1b[" not in result.stderr + result.stdout
