"""Long checks say what they are doing: in a pipe one plain line on stderr when the step starts (stdout keeps
only the result), none with -q."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PINS_LINE = "checking every pin on its index (PyPI, the PyTorch ROCm index, TheRock's index)"


def _docker_answers() -> bool:
    return subprocess.run(["docker", "info"], capture_output=True, check=False).returncode == 0


@pytest.mark.skipif(not _docker_answers(), reason="plan reads the local images (no Docker engine answers)")
@pytest.mark.parametrize("quiet", [False, True], ids=["default", "-q"])
def test_check_pins_says_it_is_checking(quiet: bool) -> None:
    """The debian base cell installs no pip pin, so nothing is fetched; the step's line still shows."""
    args = [sys.executable, "-m", "buildctl", *(["-q"] if quiet else []), "plan", "--check-pins", "--image", "base",
            "--json"]
    proc = subprocess.run(args, cwd=ROOT, capture_output=True, text=True, check=False, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["kind"] == "plan"
    assert (PINS_LINE in proc.stderr.splitlines()) is not quiet, proc.stderr
