"""Two hipBLAS / bf16 shapes of real quantization kernels (gptqmodel 7.7.0's swordfish) through the whole
recipe: a bf16-pair warp shuffle the warp rewrite makes plain (`__shfl_xor(pair, o, 32)`) and cublasGemmEx
with a legacy data-type compute type; both compile for gfx942 and gfx1100 after the fixups.

Image: $ROCMIG_DEV_IMAGE (default rocmig/dev:rocm7.2.4-gfx942-debian); skipped when it is not built.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.images.test_migrate_cases import image_or_skip, migrate_tree_in_image

pytestmark = pytest.mark.docker

SOURCE = """#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <cublas_v2.h>
template <class T2> __device__ T2 warp_sum(T2 v) {
  for (int o = 16; o > 0; o >>= 1) {
    T2 other = __shfl_xor_sync(0xffffffff, v, o);
    v = __hadd2(v, other);
  }
  return v;
}
__global__ void rows(const __nv_bfloat162* x, __nv_bfloat162* y) {
  y[threadIdx.x] = warp_sum(x[threadIdx.x]);
}
void gemm(cublasHandle_t handle, int m, int n, int k, const void* a, const void* w, void* c) {
  const float alpha = 1.0f, beta = 0.0f;
  cublasGemmEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &alpha, w, CUDA_R_16BF, n, a, CUDA_R_16BF,
               k, &beta, c, CUDA_R_16BF, n, CUDA_R_32F, CUBLAS_GEMM_DEFAULT);
}
"""


def test_bf16_pair_shuffles_and_a_legacy_gemm_ex_compute_type_compile(tmp_path: Path) -> None:
    image_or_skip()
    report = migrate_tree_in_image(tmp_path, {"swordfish_like.cu": SOURCE})
    (unit,) = [f for f in report["files"] if f.get("unit")]
    for arch in ("gfx942", "gfx1100"):
        assert unit["compile"][arch]["status"] == "ok", unit["compile"][arch]
    fixes = {x["id"] for x in unit["fixes"]}
    assert {"bf16x2-shuffles", "gemm-ex-compute-type", "warp-sync-full-mask"} <= fixes, fixes
