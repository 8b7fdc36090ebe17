"""torch_guard.py's constraints: the installed pins plus refusals (`NAME<0`), which pip reads as a
requirement no release satisfies, so a package declaring PyPI's `triton` fails to resolve."""

import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

GUARD = Path(__file__).resolve().parents[2] / "templates" / "files" / "torch_guard.py"


def test_constraints_pin_the_installed_and_refuse_the_named(tmp_path):
    out = tmp_path / "constraints.txt"
    done = subprocess.run([sys.executable, str(GUARD), "constraints", str(out), "click", "jinja2", "--refuse", "triton"],
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert out.read_text().splitlines() == [f"click=={version('click')}", f"jinja2=={version('jinja2')}", "triton<0"]


def test_a_name_that_is_not_installed_cannot_be_pinned(tmp_path):
    done = subprocess.run([sys.executable, str(GUARD), "constraints", str(tmp_path / "c.txt"), "no-such-dist-here"],
                          capture_output=True, text=True, check=False)
    assert done.returncode == 1 and "no-such-dist-here is not installed" in done.stderr
    assert not (tmp_path / "c.txt").exists()
