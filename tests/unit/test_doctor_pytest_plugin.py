"""The pytest plugin adds a 'rocmig doctor' section to failing tests (run in a real pytest subprocess)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]

TESTS = '''
def test_fails_with_known_error():
    print("hipErrorNoBinaryForGpu: Unable to find code object for all current devices!")
    assert False

def test_fails_with_unknown_error():
    print("something unrelated went wrong")
    assert 1 == 2

def test_passes_with_known_text():
    print("hipErrorNoBinaryForGpu: Unable to find code object for all current devices!")

def test_fails_in_longrepr_only():
    raise RuntimeError("HIP out of memory. Tried to allocate 2.00 GiB")
'''


def _run_pytest(tmp_path: Path) -> str:
    (tmp_path / "test_sample.py").write_text(TESTS)
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "buildctl.doctor.pytest_plugin", "-p", "no:cacheprovider",
         "--rootdir", str(tmp_path), str(tmp_path / "test_sample.py")],
        capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120, check=False,
    )
    assert proc.returncode == 1, proc.stdout + proc.stderr  # three tests fail on purpose
    return proc.stdout


def _failure_block(output: str, test_name: str) -> str:
    start = output.index(f"_ {test_name} _")
    rest = output[start + 1:]
    end = min((rest.index(m) for m in ("\n____", "\n====") if m in rest), default=len(rest))
    return rest[:end]


def test_plugin_sections(tmp_path):
    out = _run_pytest(tmp_path)
    known = _failure_block(out, "test_fails_with_known_error")
    assert "rocmig doctor" in known and "[hip-no-binary-for-gpu]" in known
    unknown = _failure_block(out, "test_fails_with_unknown_error")
    assert "rocmig doctor" not in unknown
    longrepr = _failure_block(out, "test_fails_in_longrepr_only")
    assert "[hip-out-of-memory]" in longrepr
    assert "3 failed, 1 passed" in out


def test_repository_conftest_registers_the_plugin(request):
    """The plugin is loaded in this very run (tests/conftest.py registers it), not just named in a file."""
    assert request.config.pluginmanager.has_plugin("buildctl.doctor.pytest_plugin")
