"""`buildctl plan --check-pins` against the real PyPI (reachable from this workplace and CI): the matrix's
framework pins exist; a pin that does not is bad input naming the pin and the index."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from buildctl.load import load_project
from buildctl.pins import check_pins
from buildctl.plan import Selection, make_plan

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.network


def test_every_pypi_pin_of_the_debian_lane_exists():
    project = load_project(ROOT)
    plan = make_plan(project, Selection(("debian",), ("7.2",), ("gfx942",)))
    checks = check_pins(project, plan)
    pypi = {c.package: c for c in checks if "pypi.org" in c.index}
    assert set(pypi) == {"deepspeed", "llamafactory", "sglang", "tilelang"}
    unreachable = [c for c in pypi.values() if c.found is None]
    assert not unreachable, f"PyPI did not answer: {unreachable}"
    assert all(c.found for c in pypi.values()), [c for c in pypi.values() if not c.found]


def test_a_pin_missing_from_its_index_is_named_at_plan_time(tmp_path):
    for name in ("images", "templates", "recipes", "kernels"):
        shutil.copytree(ROOT / name, tmp_path / name, ignore=shutil.ignore_patterns("__pycache__"))
    data = yaml.safe_load((ROOT / "matrix.yaml").read_text())
    data["frameworks"]["llamafactory"]["version"] = "0.0.999"
    (tmp_path / "matrix.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    result = subprocess.run([sys.executable, "-m", "buildctl", "--root", str(tmp_path), "plan", "--check-pins",
                             "--image", "train", "--out", str(tmp_path / "build")],
                            capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert result.returncode == 2, result.stderr
    assert "llamafactory==0.0.999 not on https://pypi.org/simple/llamafactory/" in result.stderr
