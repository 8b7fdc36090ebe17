"""The kernels image compiles every TileLang kernel for every AMD target offline (no GPU).

Image under test: the tag in ROCMIG_KERNELS_IMAGE (e.g. rocmig/kernels:rocm7.2.4-gfx942-debian); the test
is skipped when it is unset. Inside the image `python -m kernels.offline` compiles GEMM, FlashAttention and
RMSNorm (fp16 and bf16) for gfx90a, gfx942, gfx950 and gfx1100 through TileLang's HIP backend (hipcc), reads
the arch from each code object, and the test cross-checks every code object with LLVM's own
clang-offload-bundler. About 4 minutes on 2 cores.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.docker

def _slice_image() -> str:
    from tests.images.conftest import slice_cells

    cells = slice_cells("kernels")
    return cells[0].ref if cells else ""


IMAGE = os.environ.get("ROCMIG_KERNELS_IMAGE") or _slice_image()
# Every arch of the matrix (all AMD): each must have a tile table and compile.
from buildctl.load import load_project  # noqa: E402
from tests.images.conftest import ROOT  # noqa: E402

AMD_TARGETS = tuple(load_project(ROOT).matrix.archs)

# Runs inside the image: list each code object's bundle entries with clang-offload-bundler.
LIST_BUNDLES = r"""
import glob, json, subprocess, sys
tool = glob.glob("/usr/lib/llvm-*/bin/clang-offload-bundler") + glob.glob("/opt/rocm*/llvm/bin/clang-offload-bundler")
out = {}
for path in sorted(glob.glob("/out/co/*/*/kernel.hsaco")):
    res = subprocess.run([tool[0], "--list", "--type=o", "--input=" + path], capture_output=True, text=True)
    out[path] = res.stdout.split() if res.returncode == 0 else ["ERROR " + res.stderr]
json.dump(out, sys.stdout)
"""


def _docker(*args: str, timeout: int = 1200) -> subprocess.CompletedProcess:
    return subprocess.run(["docker", *args], capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def offline_run(tmp_path_factory):
    if not IMAGE:
        pytest.skip("ROCMIG_KERNELS_IMAGE is unset: name the kernels image to test, e.g. rocmig/kernels:rocm7.2.4-gfx942-debian")
    if _docker("image", "inspect", IMAGE).returncode != 0:
        pytest.fail(f"ROCMIG_KERNELS_IMAGE={IMAGE}: no such image here")
    out = tmp_path_factory.mktemp("kernels-offline")
    out.chmod(0o777)  # the image runs as its unprivileged user
    run = _docker("run", "--rm", "-v", f"{out}:/out", IMAGE,
                  "python", "-m", "kernels.offline", "--out", "/out/co", "--json", "/out/records.json")
    return out, run


def test_patch_was_applied_at_build_time():
    if not IMAGE:
        pytest.skip("ROCMIG_KERNELS_IMAGE is unset")
    res = _docker("run", "--rm", IMAGE, "python", "/opt/rocmig/kernels/tools/patch_tilelang_hip.py", timeout=120)
    assert res.returncode == 0, res.stderr
    assert "already patched" in res.stdout, res.stdout


def test_every_kernel_compiles_for_every_amd_target(offline_run):
    out, run = offline_run
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    records = json.loads((Path(out) / "records.json").read_text())
    by_target: dict[str, list[dict]] = {}
    for rec in records:
        by_target.setdefault(rec["target"], []).append(rec)
    assert sorted(by_target) == sorted(AMD_TARGETS)
    labels = {t: sorted(r["label"] for r in recs) for t, recs in by_target.items()}
    assert len({tuple(v) for v in labels.values()}) == 1, labels  # same kernel set everywhere
    kernels = {r["kernel"] for r in records}
    assert kernels == {"gemm", "flash_attention", "rmsnorm"}
    for rec in records:
        assert rec["ok"], rec
        assert rec["archs"] == [rec["target"]], rec


def test_code_objects_hold_exactly_their_target_per_llvm(offline_run):
    out, run = offline_run
    assert run.returncode == 0
    res = _docker("run", "--rm", "-v", f"{out}:/out:ro", IMAGE, "python", "-c", LIST_BUNDLES, timeout=300)
    assert res.returncode == 0, res.stderr
    listing = json.loads(res.stdout)
    assert len(listing) == len(json.loads((Path(out) / "records.json").read_text()))
    for path, entries in listing.items():
        target = Path(path).parts[-3]
        device = [e for e in entries if e.startswith("hip")]
        assert device == [f"hipv4-amdgcn-amd-amdhsa--{target}"], (path, entries)
