"""Two hipBLAS / bf16 shapes of real quantization kernels (gptqmodel 7.7.0's swordfish) through the whole
recipe: a bf16-pair warp shuffle the warp rewrite makes plain (`__shfl_xor(pair, o, 32)`) and cublasGemmEx
with a legacy data-type compute type, literal or in a variable (rwkv 0.8.32's `compute_type`), beside a
cublasComputeType_t variable; all compile for gfx942 and gfx1100 after the fixups.

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
void gemm_typed(cublasHandle_t handle, int m, int n, int k, const void* a, const void* w, void* c, bool tf32) {
  const float alpha = 1.0f, beta = 0.0f;
  const auto compute_type = CUDA_R_32F;
  cublasGemmEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &alpha, w, CUDA_R_16F, n, a, CUDA_R_16F,
               k, &beta, c, CUDA_R_16F, n, compute_type, CUBLAS_GEMM_DEFAULT);
  cublasComputeType_t fast = tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  cublasGemmStridedBatchedEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &alpha, w, CUDA_R_32F, n, 0, a,
                             CUDA_R_32F, k, 0, &beta, c, CUDA_R_32F, n, 0, 1, fast, CUBLAS_GEMM_DEFAULT);
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


TORCH_SOURCE = """#include <cublas_v2.h>
#include <cuda_fp16.h>
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
namespace ext {
template <typename T> __global__ void replicate(T* x, int* bins, T* out) {
  int end = __ldg(bins + blockIdx.x);
  T value = __ldg((T*)x + blockIdx.x);
  if (threadIdx.x < end) out[threadIdx.x] = value;
}
}  // namespace ext
void run(torch::Tensor x, torch::Tensor bins, torch::Tensor out) {
  ext::replicate<c10::Half><<<1, 64>>>(x.data_ptr<c10::Half>(), bins.data_ptr<int>(), out.data_ptr<c10::Half>());
  ext::replicate<float><<<1, 64>>>(x.data_ptr<float>(), bins.data_ptr<int>(), out.data_ptr<float>());
}
void gemm(torch::Tensor a, torch::Tensor b, torch::Tensor c) {
  const auto compute_type = CUDA_R_32F;
  const float alpha = 1.f, beta = 0.f;
  cublasHandle_t handle = at::cuda::getCurrentCUDABlasHandle();
  cublasGemmEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, 4, 4, 4, &alpha, a.data_ptr(), CUDA_R_16F, 4, b.data_ptr(),
               CUDA_R_16F, 4, &beta, c.data_ptr(), CUDA_R_16F, 4, compute_type, CUBLAS_GEMM_DEFAULT);
}
"""


def test_a_torch_extension_loading_c10_half_through_ldg_and_a_compute_type_variable_compiles(tmp_path: Path) -> None:
    """megablocks 0.10.0's `__ldg((T*)x + i)` with T = c10::Half (PyTorch declares that __ldg for CUDA
    compilers only) and rwkv 0.8.32's GemmEx compute type held in a variable, in a PyTorch extension."""
    image_or_skip()
    report = migrate_tree_in_image(tmp_path, {"ops.cu": TORCH_SOURCE})
    (unit,) = [f for f in report["files"] if f.get("unit")]
    assert unit["translator"]["name"] == "torch.utils.hipify", unit["translator"]
    for arch in ("gfx942", "gfx1100"):
        assert unit["compile"][arch]["status"] == "ok", unit["compile"][arch]
    assert {"half-ldg", "gemm-ex-compute-type"} <= {x["id"] for x in unit["fixes"]}, unit["fixes"]
