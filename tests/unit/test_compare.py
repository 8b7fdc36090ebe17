"""`buildctl compare` on the real runs committed in docs/compare/ (an NVIDIA H200 run and a CPU run of the
serve image, both made by `buildctl bench serve`), through the console entry's exit_code(): the report,
its ratios, its plots read back as images, and every bad input the README promises one line and exit 2 for."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from matplotlib import image as mpimg

from buildctl.bench.compare import METRICS
from buildctl.bench.plots import COLORS
from buildctl.bench.report import num
from buildctl.cli import exit_code

ROOT = Path(__file__).resolve().parents[2]
RUNS = ROOT / "docs" / "compare"
BEFORE, AFTER = RUNS / "h200.json", RUNS / "cpu.json"


@dataclass
class Result:
    returncode: int
    stderr: str


@pytest.fixture
def compare(capsys):
    def run(*args: str) -> Result:
        code = exit_code(["compare", *args])
        return Result(code, capsys.readouterr().err)
    return run


def _one_line_error(result: Result) -> str:
    assert result.returncode == 2, result.stderr
    lines = [ln for ln in result.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    return lines[0]


def _hex_rgb(color: str) -> np.ndarray:
    return np.array([int(color[i:i + 2], 16) / 255 for i in (1, 3, 5)])


def test_report_of_real_runs(compare, tmp_path):
    out = tmp_path / "report"
    result = compare(str(BEFORE), str(AFTER), "--out", str(out))
    assert result.returncode == 0, result.stderr
    md = (out / "report.md").read_text()
    html = (out / "report.html").read_text()
    before, after = json.loads(BEFORE.read_text()), json.loads(AFTER.read_text())
    for level in before["workload"]["concurrency"]:
        assert f"### Concurrency {level}" in md and f"<h3>Concurrency {level}</h3>" in html
        b = next(lv for lv in before["levels"] if lv["concurrency"] == level)
        a = next(lv for lv in after["levels"] if lv["concurrency"] == level)
        ttft = a["ttft_ms"]["p50"] / b["ttft_ms"]["p50"]
        assert f"| TTFT p50 (ms) | {num(b['ttft_ms']['p50'])} | {num(a['ttft_ms']['p50'])} | {ttft:.3g}× |" in md
    for key in ("gpus", "torch", "os"):
        assert f"| {key} |" in md
    assert "What differs:" in md and "gpus" in md.split("What differs:")[1]
    assert before["environment"]["gpus"][0]["name"] in md
    names = {"ttft.png", "itl.png", "throughput.png", "memory.png"}
    assert names <= {p.name for p in out.glob("*.png")}
    for name in names:
        assert "![" in md and f"({name})" in md and f'src="{name}"' in html
        pixels = mpimg.imread(out / name)[..., :3]
        assert pixels.shape[0] > 200 and pixels.shape[1] > 300
        assert pixels.std() > 0.05, f"{name} is blank"
        for color in COLORS:
            near = np.abs(pixels - _hex_rgb(color)).max(axis=-1) < 0.1
            assert near.sum() > 50, f"{name}: no line of color {color} (both runs belong on one axis)"


def test_ratio_rows_cover_every_metric(compare, tmp_path):
    out = tmp_path / "r"
    assert compare(str(BEFORE), str(AFTER), "--out", str(out)).returncode == 0
    md = (out / "report.md").read_text()
    levels = json.loads(BEFORE.read_text())["workload"]["concurrency"]
    for name, unit, _get, _lower in METRICS:
        assert md.count(f"| {name} ({unit}) |") == len(levels)


def _edited(tmp_path: Path, edit) -> Path:
    data = json.loads(AFTER.read_text())
    edit(data)
    path = tmp_path / "edited.json"
    path.write_text(json.dumps(data))
    return path


def test_different_workload_is_refused_naming_the_field(compare, tmp_path):
    def longer(data):
        data["workload"]["output_len"] += 1
    edited = _edited(tmp_path, longer)
    out = tmp_path / "r"
    line = _one_line_error(compare(str(BEFORE), str(edited), "--out", str(out)))
    assert "workload.output_len" in line and "--allow-different-workload" in line
    assert not out.exists()

    allowed = compare(str(BEFORE), str(edited), "--out", str(out), "--allow-different-workload")
    assert allowed.returncode == 0, allowed.stderr
    md = (out / "report.md").read_text()
    assert "The workloads differ" in md and "| output_len |" in md


def test_different_levels_compare_only_shared_ones(compare, tmp_path):
    def fewer(data):
        data["workload"]["concurrency"] = data["workload"]["concurrency"][:1]
        data["levels"] = data["levels"][:1]
    edited = _edited(tmp_path, fewer)
    line = _one_line_error(compare(str(BEFORE), str(edited), "--out", str(tmp_path / "r")))
    assert "workload.concurrency" in line
    result = compare(str(BEFORE), str(edited), "--out", str(tmp_path / "r"), "--allow-different-workload")
    assert result.returncode == 0, result.stderr
    md = (tmp_path / "r" / "report.md").read_text()
    first = json.loads(AFTER.read_text())["levels"][0]["concurrency"]
    assert md.count("### Concurrency") == 1 and f"### Concurrency {first}" in md


def test_truncated_run_is_one_line(compare, tmp_path):
    text = AFTER.read_text()
    cut = tmp_path / "cut.json"
    cut.write_text(text[: len(text) // 2])
    line = _one_line_error(compare(str(BEFORE), str(cut), "--out", str(tmp_path / "r")))
    assert str(cut) in line and "truncated" in line


def test_foreign_json_is_one_line(compare, tmp_path):
    foreign = ROOT / "recipes" / "data" / "dataset_info.json"
    line = _one_line_error(compare(str(foreign), str(AFTER), "--out", str(tmp_path / "r")))
    assert str(foreign) in line and "rocmig.bench.serve/1" in line
    listed = tmp_path / "list.json"
    listed.write_text("[1, 2]")
    assert "schema" in _one_line_error(compare(str(listed), str(AFTER), "--out", str(tmp_path / "r")))


def test_schema_break_names_the_key(compare, tmp_path):
    def broken(data):
        data["levels"][0]["ttft_ms"] = "fast"
    line = _one_line_error(compare(str(BEFORE), str(_edited(tmp_path, broken)), "--out", str(tmp_path / "r")))
    assert "levels.0.ttft_ms" in line


def test_missing_file_is_one_line(compare, tmp_path):
    line = _one_line_error(compare(str(BEFORE), str(tmp_path / "none.json"), "--out", str(tmp_path / "r")))
    assert "none.json" in line
