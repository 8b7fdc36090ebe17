"""migrate's FP8 fixup (fp8-ocp: cuda_fp8.h -> cuda_fp8_ocp.h, recipes/migrate/migrate/fp8.py) against NVIDIA.

bench/fp8_reference.py's harness evaluates 35 conversions of cuda_fp8.h (float, double, half, bfloat16 to
E4M3 / E5M2 with and without saturation, pairs and quads, back to half, float and the integer types, the
types' constructors and operators) on every half, bfloat16, FP8 and FP8-pair bit pattern and 81952 floats (every half's value,
16384 random bit patterns, the rounding and overflow boundaries). Here the harness goes through the
fixup, is compiled by the dev image's hipcc for gfx942 and gfx1100 and run on the host CPU (the
conversions are __host__ __device__ software), and every output byte is compared with NVIDIA's: the
same harness built against NVIDIA's own cuda_fp8.hpp (Debian's CUDA 12.5 headers, which the dev image
carries for hipify-clang; clang compiles them as CUDA host code), and, where
tests/images/sources/fp8_reference.json is present, the outputs an NVIDIA H100 gave in device code
(the sm_89+ hardware cvt instructions). Then a kernel using the FP8 types goes through the whole recipe.

Image: $ROCMIG_DEV_IMAGE (default rocmig/dev:rocm7.2.4-gfx942-debian); skipped when it is not built.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.images.test_migrate_cases import ROOT, image_or_skip, migrate_tree_in_image, run_recipe

sys.path.insert(0, str(ROOT / "recipes" / "migrate"))
sys.path.insert(0, str(ROOT / "bench"))

from fp8_reference import OUTPUTS, harness, parse, unpack  # noqa: E402
from migrate import fp8  # noqa: E402

pytestmark = pytest.mark.docker

REFERENCE = Path(__file__).parent / "sources" / "fp8_reference.json"
NVIDIA_HOST = ("clang++-22 -x cuda --cuda-host-only -nocudalib --cuda-path=/opt/rocmig/cuda --cuda-gpu-arch=sm_90 "
               "-std=c++17 -O1 /src/nvidia.cu -o /out/nvidia && /out/nvidia > /out/nvidia.txt")
MIGRATED = ("hipcc -x hip -std=c++17 -O1 --offload-arch=gfx942 --offload-arch=gfx1100 /src/migrated.cpp -o /out/migrated "
            "&& /out/migrated > /out/migrated.txt")


def _first_difference(name: str, ours: bytes, theirs: bytes) -> str:
    width = {n: w for n, _count, w in OUTPUTS}[name]
    k = next(i for i in range(len(ours)) if ours[i] != theirs[i]) // width
    return f"{name}: entry {k}: {ours[k * width:(k + 1) * width].hex()} != {theirs[k * width:(k + 1) * width].hex()}"


@pytest.fixture(scope="module")
def outputs(tmp_path_factory) -> tuple[dict[str, bytes], dict[str, bytes]]:
    """(the migrated harness's outputs, NVIDIA's cuda_fp8.hpp host outputs), each {name: bytes}."""
    image_or_skip()
    src, out = tmp_path_factory.mktemp("src"), tmp_path_factory.mktemp("out")
    cuda = harness("__hip_bfloat16_raw", on_device=False)
    migrated = fp8.header(fp8.ocp(cuda, cuda))
    assert "#define ROCMIG_CUDA_FP8" in migrated and "__nv_" not in migrated.split("}  // namespace rocmig_fp8")[1]
    (src / "migrated.cpp").write_text(migrated, encoding="utf-8")
    (src / "nvidia.cu").write_text(harness("__nv_bfloat16_raw", on_device=False), encoding="utf-8")
    for command in (MIGRATED, NVIDIA_HOST):
        run = run_recipe(src, out, "-c", command, entry=("bash",))
        assert run.returncode == 0, run.stderr[-3000:]
    return (parse((out / "migrated.txt").read_text(encoding="utf-8")),
            parse((out / "nvidia.txt").read_text(encoding="utf-8")))


def test_every_conversion_matches_nvidias_cuda_fp8_bit_for_bit(outputs) -> None:
    ours, nvidia = outputs
    assert set(ours) == set(nvidia) == {name for name, _count, _width in OUTPUTS}
    wrong = [_first_difference(name, ours[name], nvidia[name]) for name in ours if ours[name] != nvidia[name]]
    assert not wrong, wrong
    # the input set reaches what it is meant to: saturation, NaN, infinity and subnormal outputs
    assert {0x7E, 0x7F, 0xFE, 0x01, 0x81} <= set(ours["f_e4_sat"]) | set(ours["f_e4_nosat"])
    assert {0x7B, 0x7C, 0x7F, 0x01} <= set(ours["f_e5_sat"]) | set(ours["f_e5_nosat"])


def test_every_conversion_matches_an_nvidia_gpu(outputs) -> None:
    if not REFERENCE.is_file():
        pytest.skip(f"{REFERENCE} is absent: bench/fp8_reference.py writes it on a machine with an NVIDIA GPU")
    ours, _nvidia = outputs
    gpu = {name: unpack(text) for name, text in json.loads(REFERENCE.read_text(encoding="utf-8"))["outputs"].items()}
    wrong = [_first_difference(name, ours[name], gpu[name]) for name in gpu if ours[name] != gpu[name]]
    assert not wrong, wrong


KERNEL = """#include <cuda_fp8.h>
#include <cuda_fp16.h>
__global__ void dequant(const __nv_fp8_e4m3* w, const __nv_fp8x2_e5m2* g, float* out, __half* h) {
  int i = threadIdx.x;
  out[i] = float(w[i]) + float2(g[i]).y;
  __nv_fp8x4_e4m3 q(make_float4(out[i], 1.0f, -2.0f, 500.0f));
  h[i] = __half(__nv_fp8_e4m3(out[i] * 2.0f)) + __half(__nv_cvt_fp8_to_halfraw((__nv_fp8_storage_t)q.__x, __NV_E4M3));
}
"""


def test_a_kernel_with_fp8_types_migrates_and_compiles_on_both_archs(tmp_path: Path) -> None:
    image_or_skip()
    report = migrate_tree_in_image(tmp_path, {"dequant.cu": KERNEL})
    (unit,) = [f for f in report["files"] if f.get("unit")]
    for arch in ("gfx942", "gfx1100"):
        assert unit["compile"][arch]["status"] == "ok", unit["compile"][arch]
    assert {f["status"] for f in unit["findings"] if f["rule"] == "fp8-cuda-type"} == {"fixed"}
    assert "fp8-ocp" in [x["id"] for x in unit["fixes"]]
    migrated = (tmp_path / "out" / "run" / "hip" / "dequant.cu").read_text(encoding="utf-8")
    assert "_fnuz" not in migrated.split("}  // namespace rocmig_fp8")[-1]
