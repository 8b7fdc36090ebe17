"""Exit codes through the console entry point (`python -m buildctl`), not click's test runner: the codes
README.md documents are the ones a shell sees."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _run(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "buildctl", *args], input=stdin, capture_output=True,
                          text=True, cwd=ROOT, timeout=60)


def test_doctor_exit_codes(tmp_path):
    clean = tmp_path / "clean.log"
    clean.write_text("Setting up cmake (4.4.4-1) ...\n[100%] Built target saxpy\n")
    assert _run("doctor", str(clean)).returncode == 1
    missing = _run("doctor", str(tmp_path / "nope.log"))
    assert missing.returncode == 2 and "Traceback" not in missing.stderr
    crash = "hipErrorNoBinaryForGpu: Unable to find code object for all current devices!\n"
    assert _run("doctor", "-", stdin=crash).returncode == 0


def test_success_is_zero_and_usage_error_is_two():
    assert _run("matrix", "--json", "--arch", "gfx942").returncode == 0
    assert _run("matrix", "--no-such-flag").returncode == 2
