"""Masks whose width the source does not show, in a tree with HIP code paths, through the whole recipe:
ColossalAI 0.5.0's funcs/reduce_function.h passes its `const unsigned int kWarpReduceMask = 0xffffffff`
to __shfl_xor_sync through a macro parameter, in a tree that also uses C10_WARP_SIZE. HIP 7.2's *_sync
forms refuse a 32-bit mask (a static_assert); after the warp fixup's type-dispatched forms
(rocmig_lane_mask, rocmig_lane_width, rocmig_ballot_sync) the unit compiles for gfx942 (wave64) and
gfx1100 (wave32), with a 32-bit mask and a 64-bit one. The semantics of the forms on both wavefront
sizes are checked on random data by tests/unit/test_migrate_warp.py.

Image: $ROCMIG_DEV_IMAGE (default rocmig/dev:rocm7.2.4-gfx942-debian); skipped when it is not built.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.images.test_migrate_cases import image_or_skip, migrate_tree_in_image

pytestmark = pytest.mark.docker

HEADER = """#pragma once
#include <cuda_runtime.h>
const unsigned int kWarpReduceMask = 0xffffffff;
#define SHFL_REDUCE(MASK, VAL, WIDTH) \\
  for (int delta = (WIDTH) >> 1; delta > 0; delta >>= 1) VAL += __shfl_xor_sync(MASK, VAL, delta, WIDTH)
#ifdef __HIP_PLATFORM_AMD__
#define WARP_WIDTH 64
#else
#define WARP_WIDTH 32
#endif
"""

SOURCE = """#include "reduce.h"
__device__ unsigned lanes_below(unsigned n) { return n >= 32 ? 0xffffffffu : (1u << n) - 1; }
template <int width = 32>
__device__ float warp_sum(float v) {
  SHFL_REDUCE(kWarpReduceMask, v, width);
  return v;
}
__global__ void sums(const float* x, float* out, unsigned long long wide, unsigned* votes) {
  float v = warp_sum(x[threadIdx.x]);
  votes[threadIdx.x] = __ballot_sync(lanes_below(blockDim.x), v > 0.0f);
  out[threadIdx.x] = v + __shfl_sync(wide, v, 0);
}
int main() {
  sums<<<1, 64>>>(nullptr, nullptr, ~0ull, nullptr);
  return cudaDeviceSynchronize() == cudaSuccess ? 0 : 1;
}
"""


def test_masks_of_unseen_width_compile_for_wave64_and_wave32(tmp_path: Path) -> None:
    image_or_skip()
    report = migrate_tree_in_image(tmp_path, {"reduce.h": HEADER, "sums.cu": SOURCE})
    (unit,) = [f for f in report["files"] if f.get("unit")]
    for arch in ("gfx942", "gfx1100"):
        assert unit["compile"][arch]["status"] == "ok", unit["compile"][arch]
    header = (tmp_path / "out" / "run" / "hip" / "reduce.h").read_text()
    assert "__shfl_xor_sync(rocmig_lane_mask(MASK), VAL, delta, WIDTH)" in header
    assert header.count("#define ROCMIG_LANE_MASK") == 1
    hip = (tmp_path / "out" / "run" / "hip" / "sums.cu").read_text()
    assert "votes[threadIdx.x] = rocmig_ballot_sync(lanes_below(blockDim.x), v > 0.0f);" in hip
    assert "__shfl_sync(wide, v, 0)" in hip  # a mask the source shows to be 64-bit is HIP's, as written
