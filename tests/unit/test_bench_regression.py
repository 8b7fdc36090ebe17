"""bench/regression.py: a figure worse than stored beyond its tolerance fails (exit 1), within it passes,
a figure the output lacks or a failing command is exit 2, --update stores the fresh figures; the committed
checks file names a script that exists and the pr workflow runs every check."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "bench" / "regression.py"


def run(results: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), *args, "--results", str(results)],
                          capture_output=True, text=True, check=False)


def write(tmp_path: Path, printed: str, stored: float, direction: str = "higher", code: int = 0) -> Path:
    results = tmp_path / "regression.json"
    results.write_text(json.dumps({"demo": {
        "command": ["{python}", "-c", f"import sys; print({printed!r}); sys.exit({code})"],
        "figures": {"rate": {"regex": r"rate = ([\d.]+)%", "stored": stored, "direction": direction,
                             "tolerance": 2.0}}}}))
    return results


def test_regression_beyond_tolerance_fails_within_passes(tmp_path):
    assert run(write(tmp_path, "rate = 84.0%", 85.2), "demo").returncode == 0
    worse = run(write(tmp_path, "rate = 80.0%", 85.2), "demo")
    assert worse.returncode == 1 and "rate: 80 against stored 85.2" in worse.stderr
    lower = run(write(tmp_path, "rate = 90.0%", 85.0, "lower"), "demo")
    assert lower.returncode == 1


def test_bad_inputs_exit_2(tmp_path):
    assert run(write(tmp_path, "no figure here", 1.0), "demo").returncode == 2
    assert run(write(tmp_path, "rate = 90.0%", 1.0, code=3), "demo").returncode == 2
    unknown = run(write(tmp_path, "rate = 1%", 1.0), "nope")
    assert unknown.returncode == 2 and "no check 'nope'" in unknown.stderr


def test_update_stores_the_fresh_figures(tmp_path):
    results = write(tmp_path, "rate = 70.5%", 85.2)
    assert run(results, "demo", "--update").returncode == 0
    assert json.loads(results.read_text())["demo"]["figures"]["rate"]["stored"] == 70.5
    assert run(results, "demo").returncode == 0


def test_committed_checks_run_in_the_pr_workflow():
    checks = json.loads((ROOT / "bench" / "results" / "regression.json").read_text())
    pr = yaml.safe_load((ROOT / ".github" / "workflows" / "pr.yml").read_text())
    runs = [s.get("run", "") for s in pr["jobs"]["bench"]["steps"]]
    for name, check in checks.items():
        assert f".venv/bin/python bench/regression.py {name}" in runs
        assert (ROOT / check["command"][1]).is_file(), check["command"]
