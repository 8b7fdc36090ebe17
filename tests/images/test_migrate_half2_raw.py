"""CUDA's __half2_raw members read as unsigned shorts, as vLLM's and ColossalAI 0.5.0's fp8 cast functors
do after __nv_cvt_fp8x2_to_halfraw2: HIP 7.2's __half2_raw holds __half_raw unions instead, and the
half2-raw-members fixup reads the unsigned short inside them; the unit compiles for gfx942 and gfx1100.

Image: $ROCMIG_DEV_IMAGE (default rocmig/dev:rocm7.2.4-gfx942-debian); skipped when it is not built.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.images.test_migrate_cases import image_or_skip, migrate_tree_in_image

pytestmark = pytest.mark.docker

SOURCE = """#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cstdint>
__device__ uint32_t fp8x2_to_half2_bits(uint16_t val) {
  union { uint16_t u16[2]; uint32_t u32; } tmp;
  __half2_raw res = __nv_cvt_fp8x2_to_halfraw2(val, __NV_E5M2);
  tmp.u16[0] = res.x;
  tmp.u16[1] = res.y;
  return tmp.u32;
}
__device__ uint16_t fp8_to_half_bits(uint8_t val) {
  __half_raw res = __nv_cvt_fp8_to_halfraw(val, __NV_E4M3);
  return res.x;
}
__global__ void widen(const uint16_t* in, uint32_t* out, const uint8_t* in1, uint16_t* out1) {
  out[threadIdx.x] = fp8x2_to_half2_bits(in[threadIdx.x]);
  out1[threadIdx.x] = fp8_to_half_bits(in1[threadIdx.x]);
}
"""


def test_half2_raw_members_compile_after_the_fixup(tmp_path: Path) -> None:
    image_or_skip()
    report = migrate_tree_in_image(tmp_path, {"cast.cu": SOURCE})
    (unit,) = [f for f in report["files"] if f.get("unit")]
    for arch in ("gfx942", "gfx1100"):
        assert unit["compile"][arch]["status"] == "ok", unit["compile"][arch]
    assert "half2-raw-members" in {x["id"] for x in unit["fixes"]}
