"""CLI failures that need a real engine (or its absence): clear one-line messages and documented exit codes."""

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.docker


def buildctl(*args: str, env: dict | None = None, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "buildctl", *args], capture_output=True, text=True,
                          cwd=cwd, env={**os.environ, **(env or {})}, timeout=120)


def test_no_docker_engine_exit_3():
    result = buildctl("build", env={"DOCKER_HOST": "unix:///nonexistent/docker.sock"})
    assert result.returncode == 3
    assert "no Docker engine answers" in result.stderr and "Traceback" not in result.stderr


def test_amd_source_unreachable_fails_fast_naming_what_and_the_alternative(docker_engine):
    start = time.monotonic()
    result = buildctl("build", "--rocm", "6.2", "--arch", "gfx942", "--out", "build/test-unreachable")
    took = time.monotonic() - start
    if result.returncode == 0:
        pytest.fail("the amd lane built: this host reaches its registry; the test assumes it cannot")
    assert result.returncode == 4, result.stderr
    assert took < 30
    assert "ubuntu:22.04" in result.stderr and "SOURCE=debian" in result.stderr


def test_migrate_missing_path_exit_2(tmp_path):
    result = buildctl("migrate", str(tmp_path / "nope"), "--arch", "gfx942", "--out", str(tmp_path / "out"))
    assert result.returncode == 2
    assert "no such file or folder" in result.stderr
    assert not (tmp_path / "out").exists()


def test_migrate_unknown_arch_lists_valid_values(tmp_path):
    # gfx1300 has an offload arch's shape, so the host passes it on and the recipe asks the toolchain.
    src = tmp_path / "src"
    src.mkdir()
    (src / "k.cu").write_text("__global__ void k(float* x) { x[0] = 1.0f; }\n")
    result = buildctl("migrate", str(src), "--arch", "gfx1300", "--out", str(tmp_path / "out"))
    assert result.returncode == 2
    errors = [ln for ln in result.stderr.splitlines() if ln.startswith("buildctl: error:")]
    assert len(errors) == 1 and "Traceback" not in result.stderr, result.stderr
    assert "--arch: unknown value 'gfx1300' (allowed:" in errors[0] and "gfx942" in errors[0]
    assert not (tmp_path / "out").exists()


def test_migrate_out_inside_the_source_is_refused(tmp_path):
    (tmp_path / "k.cu").write_text("__global__ void k(float* x) { x[0] = 1.0f; }\n")
    result = buildctl("migrate", str(tmp_path), "--arch", "gfx942", "--out", str(tmp_path / "report"))
    assert result.returncode == 2
    assert "must lie outside the source" in result.stderr
    assert not (tmp_path / "report").exists()


def test_migrate_bad_input_leaves_no_empty_out_folder(tmp_path):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "notes.txt").write_text("no CUDA here\n")
    result = buildctl("migrate", str(tmp_path / "src"), "--arch", "gfx942", "--out", str(tmp_path / "out"))
    assert result.returncode == 2
    assert str(tmp_path / "src") in result.stdout + result.stderr  # the host path, not /src
    assert not (tmp_path / "out").exists()
