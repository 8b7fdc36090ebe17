"""CUDA that compiles under nvcc and meets a gap of ROCm 7.2 or clang, through the whole recipe: one unit holds
libKMCUDA 6.2.3's 3-argument cudaMemcpyToSymbolAsync (HIP declares no default offset and kind), bagua 0.9.2's
vendored CUB test include of <cub/iterator/tex_obj_input_iterator.cuh> after the runtime header (rocPRIM 7.2's
texture_cache_iterator.hpp calls memset without <cstring>) and CUB 1.8.0's `X::template f(args)` (clang 19+
rejects the keyword without template arguments), fast_rnnt 1.3's `#ifdef __CUDA_ARCH__` choice of __host__
__device__ qualifiers (hipcc never defines __CUDA_ARCH__, and clang checks kernel bodies in both passes). After the
fixups symbol-async-defaults, texture-iterator-cstring, template-keyword-without-args and cuda-arch-hostdev the unit
compiles for gfx942 (wave64) and gfx1100 (wave32).

Image: $ROCMIG_DEV_IMAGE (default rocmig/dev:rocm7.2.4-gfx942-debian); skipped when it is not built.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.images.test_migrate_cases import image_or_skip, migrate_tree_in_image

pytestmark = pytest.mark.docker

SOURCE = """#include <cuda_runtime.h>
#include <cub/iterator/tex_obj_input_iterator.cuh>
__constant__ unsigned d_changed;
#ifdef __CUDA_ARCH__
#define FT_CUDA_HOSTDEV __host__ __device__
#else
#define FT_CUDA_HOSTDEV
#endif
FT_CUDA_HOSTDEV inline float log_add(float x, float y) { return x > y ? x + log1pf(expf(y - x)) : y + log1pf(expf(x - y)); }
template <int N> struct Iterate {
  template <typename T> static __device__ void Store(T* p, T v) { p[N] = v; }
};
template <int N, typename T> __device__ void store(T* p, T v) { Iterate<N>::template Store(p, v); }
__global__ void mark(float* x) { store<0>(x, log_add(1.0f, d_changed)); }
int main() {
  unsigned zero = 0, back = 1;
  cudaMemcpyToSymbolAsync(d_changed, &zero, sizeof(zero));
  cudaMemcpyFromSymbolAsync(&back, d_changed, sizeof(back));
  cub::TexObjInputIterator<float> it;
  float* x = nullptr;
  mark<<<1, 64>>>(x);
  return cudaStreamSynchronize(0) == cudaSuccess && back == 0 && sizeof(it) > 0 && log_add(0.f, 0.f) > 0.f ? 0 : 1;
}
"""


def test_units_meeting_rocm_header_and_clang_gaps_compile(tmp_path: Path) -> None:
    image_or_skip()
    report = migrate_tree_in_image(tmp_path, {"gaps.cu": SOURCE})
    (unit,) = [f for f in report["files"] if f.get("unit")]
    for arch in ("gfx942", "gfx1100"):
        assert unit["compile"][arch]["status"] == "ok", unit["compile"][arch]
    assert {"symbol-async-defaults", "texture-iterator-cstring", "template-keyword-without-args",
            "cuda-arch-hostdev"} <= {f["id"] for f in unit["fixes"]}
    hip = (tmp_path / "out" / "run" / "hip" / "gaps.cu").read_text()
    assert "hipMemcpyToSymbolAsync(HIP_SYMBOL(d_changed), &zero, sizeof(zero), 0, hipMemcpyHostToDevice);" in hip
    assert "hipMemcpyFromSymbolAsync(&back, HIP_SYMBOL(d_changed), sizeof(back), 0, hipMemcpyDeviceToHost);" in hip
    assert "Iterate<N>::Store(p, v);" in hip
    assert "#if defined(__CUDA_ARCH__) || defined(__HIP__)\n#define FT_CUDA_HOSTDEV __host__ __device__" in hip
    assert hip.index("#include <cstring>") < hip.index("tex_obj_input_iterator.hpp")
