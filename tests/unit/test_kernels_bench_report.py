"""The committed H200 result, its rendering in docs/benchmarks.md, and `buildctl kernels` without a GPU."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from buildctl.cli import main
from kernels.bench.gpu import ERROR_BOUND, all_cases
from kernels.bench.report import goal_met, render_table
from kernels.configs import DEFAULTS
from kernels.targets import TARGETS

ROOT = Path(__file__).resolve().parents[2]
RESULT = ROOT / "kernels" / "bench" / "results" / "h200.json"


def test_docs_table_is_the_rendering_of_the_committed_result():
    result = json.loads(RESULT.read_text())
    section = (ROOT / "docs" / "benchmarks.md").read_text().split("## TileLang kernels (issue 7)", 1)[1]
    assert render_table(result) in section


def test_committed_result_covers_the_issue_table_and_is_internally_consistent():
    result = json.loads(RESULT.read_text())
    assert result["target"] == "sm_90" and "H200" in result["device"]
    assert [c["case"] for c in result["cases"]] == list(range(len(all_cases())))
    for case in result["cases"]:
        best = case["best"]
        assert best["correct"] and best["rel_error"] <= ERROR_BOUND[case["problem"]["dtype"]]
        assert min(t["ms"] for t in case["tried"] if t.get("correct")) == best["ms"]
        assert abs(case["speedup_vs_torch"] - case["torch_ms"] / best["ms"]) < 1e-9


def test_goal_verdicts_follow_the_numbers():
    goals = {"gemm": 0.95, "flash_attention": 1.0, "rmsnorm": 0.85}
    assert goal_met({"kernel": "gemm", "best": {}, "speedup_vs_torch": 0.951}, goals)
    assert not goal_met({"kernel": "gemm", "best": {}, "speedup_vs_torch": 0.949}, goals)
    assert not goal_met({"kernel": "rmsnorm", "best": {}, "speedup_vs_torch": 12.0, "fraction_of_copy": 0.71}, goals)
    assert goal_met({"kernel": "rmsnorm"}, goals) is None


def test_cli_configs_json_lists_every_target_and_kernel():
    res = CliRunner().invoke(main, ["--root", str(ROOT), "kernels", "configs", "--json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.output)
    assert doc["schema_version"] == 1 and doc["kind"] == "kernel-configs"
    table = doc["targets"]
    assert set(table) == set(TARGETS)
    assert all(set(row) == set(DEFAULTS) for row in table.values())
    assert table["gfx950"]["gemm"]["lds_bytes"] > 64 * 1024


def test_cli_configs_rejects_unknown_target():
    res = CliRunner().invoke(main, ["--root", str(ROOT), "kernels", "configs", "--target", "gfx908"])
    assert res.exit_code == 2
    assert "'gfx908' is not one of gfx90a, gfx942, gfx950, gfx1100, gfx1101, gfx1201, sm_90" in res.output


def test_docs_kernels_md_shows_the_current_tile_tables():
    res = CliRunner().invoke(main, ["--root", str(ROOT), "kernels", "configs"])
    assert res.exit_code == 0, res.output
    assert res.output.strip() in (ROOT / "docs" / "kernels.md").read_text()
