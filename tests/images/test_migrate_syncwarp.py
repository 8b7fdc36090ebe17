"""CUDA's masked __syncwarp through the whole recipe: HIP 7.2's refuses a 32-bit mask (a static_assert in
amd_warp_sync_functions.h); after the syncwarp-mask fixup the unit compiles for gfx942 (wave64) and gfx1100
(wave32), with the masks CUDA code writes (full, __activemask(), a single lane, a computed one).

Image: $ROCMIG_DEV_IMAGE (default rocmig/dev:rocm7.2.4-gfx942-debian); skipped when it is not built.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.images.test_migrate_cases import image_or_skip, migrate_tree_in_image

pytestmark = pytest.mark.docker

SOURCE = """#include <cuda_runtime.h>
__device__ unsigned lanes_below(unsigned n) { return n >= 32 ? 0xffffffffu : (1u << n) - 1; }
__global__ void rotate(int* x, volatile int* flag) {
  __shared__ int s[64];
  s[threadIdx.x] = x[threadIdx.x];
  __syncwarp(0xffffffff);
  x[threadIdx.x] = s[(threadIdx.x + 1) % 32];
  unsigned m = __activemask();
  __syncwarp(m);
  if (threadIdx.x == 0) {
    while (*flag == 0) __syncwarp(0x00000001);
  }
  __syncwarp(lanes_below(blockDim.x));
  __syncwarp();
}
int main() {
  int* x = nullptr;
  int* flag = nullptr;
  rotate<<<1, 32>>>(x, flag);
  return cudaDeviceSynchronize() == cudaSuccess ? 0 : 1;
}
"""


def test_masked_syncwarp_compiles_for_wave64_and_wave32(tmp_path: Path) -> None:
    image_or_skip()
    report = migrate_tree_in_image(tmp_path, {"rotate.cu": SOURCE})
    (unit,) = [f for f in report["files"] if f.get("unit")]
    for arch in ("gfx942", "gfx1100"):
        assert unit["compile"][arch]["status"] == "ok", unit["compile"][arch]
    assert "syncwarp-mask" in {x["id"] for x in unit["fixes"]}
    hip = (tmp_path / "out" / "run" / "hip" / "rotate.cu").read_text()
    assert "__syncwarp(0x" not in hip and "((void)(lanes_below(blockDim.x)), __syncwarp());" in hip
