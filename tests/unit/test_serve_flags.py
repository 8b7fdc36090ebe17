"""The entrypoint's order of refusals: unknown flags before any preflight, what the image cannot do before
what docker run must add; and the warnings it keeps out of its one-line errors."""

import subprocess
import sys
from pathlib import Path

import pytest

from recipes.serve import cli, errors, launch, validate
from recipes.serve.cell import Cell

ROOT = Path(__file__).resolve().parents[2]
CPU_CELL = Cell(arch="gfx942", family="CDNA3", wavefront=64, source="debian", rocm_full="7.2.4",
                ref="rocmig/serve:rocm7.2.4-gfx942-debian", components=("sglang",), archs={},
                excluded=(("sgl-kernel", "no sdist on PyPI"),))
LEAK = ("import multiprocessing as mp, os\n"
        "lock = mp.get_context('spawn').Lock()\n"
        "os._exit(0)\n")


def test_known_flags_read_from_argparse_source():
    """explain.py's own parser, read from its source: names, the --no- twin of a BooleanOptionalAction."""
    known = validate.known_flags(ROOT / "recipes" / "serve" / "explain.py")
    assert {"--arch", "--aiter", "--no-aiter", "-h", "--help"} <= known
    assert "sglang" not in known


def test_unknown_flag_refused_by_name_and_prefixes_kept():
    known = frozenset({"-h", "--help", "--tp-size", "--tensor-parallel-size", "--model-path", "--host"})
    validate.check_known(["--tp", "2", "--model=/m", "--host", "0.0.0.0"], known)
    with pytest.raises(errors.ServeError) as exc:
        validate.check_known(["--tp", "2", "--shm-size", "16m"], known)
    assert exc.value.code == errors.BAD_FLAG and "unrecognized argument --shm-size" in str(exc.value)
    assert "before the image name" in str(exc.value)
    with pytest.raises(errors.ServeError, match="--tpp"):
        validate.check_known(["--tpp=2"], known)
    validate.check_known(["--", "--anything"], known)


@pytest.mark.skipif(Path("/dev/kfd").exists(), reason="this host has a GPU: its device nodes would pass")
def test_cpu_torch_said_before_missing_devices():
    """--device cuda on an image whose torch is not a ROCm build stops with NO_GPU_ENGINE (adding the
    devices cannot help), not NO_DEVICE, even where /dev/kfd is missing."""
    version, rocm = cli.torch_build()
    if rocm:
        pytest.skip(f"torch {version} is a ROCm build")
    with pytest.raises(errors.ServeError) as exc:
        cli.choose(CPU_CELL, ["--device", "cuda"], {})
    assert exc.value.code == errors.NO_GPU_ENGINE, str(exc.value)
    assert "is a CPU build" in str(exc.value)


def test_engine_env_silences_the_resource_tracker_leak_warning():
    """A real child leaving a semaphore to multiprocessing's resource_tracker: its warning is printed
    without the engine's PYTHONWARNINGS and not with it; other warnings still are."""
    plan = launch.plan_cpu([], "test", {})
    assert plan.env["PYTHONWARNINGS"] == launch.QUIET_WARNINGS
    bare = subprocess.run([sys.executable, "-c", LEAK], capture_output=True, text=True, env={}, timeout=60)
    assert "leaked semaphore" in bare.stderr
    quiet = subprocess.run([sys.executable, "-c", LEAK], capture_output=True, text=True,
                           env=plan.env, timeout=60)
    assert quiet.stderr == ""
    other = subprocess.run([sys.executable, "-c", "import warnings; warnings.warn('real')"],
                           capture_output=True, text=True, env=plan.env, timeout=60)
    assert "UserWarning: real" in other.stderr


def test_users_pythonwarnings_wins():
    plan = launch.plan_cpu([], "test", {"PYTHONWARNINGS": "error"})
    assert "PYTHONWARNINGS" not in plan.env
    assert any(c.yours and c.what == "PYTHONWARNINGS=error" for c in plan.choices)
