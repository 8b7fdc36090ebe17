"""CUDA that compiles under nvcc and meets a gap of ROCm 7.2 or clang, through the whole recipe: one unit holds
libKMCUDA 6.2.3's 3-argument cudaMemcpyToSymbolAsync (HIP declares no default offset and kind), pytigre 0.1.8's
3-argument cudaMalloc3DArray (no default flags in HIP), bagua 0.9.2's
vendored CUB test include of <cub/iterator/tex_obj_input_iterator.cuh> after the runtime header (rocPRIM 7.2's
texture_cache_iterator.hpp calls memset without <cstring>) and CUB 1.8.0's `X::template f(args)` (clang 19+
rejects the keyword without template arguments), fast_rnnt 1.3's `#ifdef __CUDA_ARCH__` choice of __host__
__device__ qualifiers (hipcc never defines __CUDA_ARCH__, and clang checks kernel bodies in both passes). After the
fixups cuda-default-arguments, texture-iterator-cstring, template-keyword-without-args and cuda-arch-hostdev the unit
compiles for gfx942 (wave64) and gfx1100 (wave32).

Image: $ROCMIG_DEV_IMAGE (default rocmig/dev:rocm7.2.4-gfx942-debian); skipped when it is not built.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.images.test_migrate_cases import image_or_skip, migrate_tree_in_image, run_recipe

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
  cudaArray* volume = nullptr;
  cudaChannelFormatDesc desc = cudaCreateChannelDesc<float>();
  cudaMalloc3DArray(&volume, &desc, make_cudaExtent(8, 8, 8));
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
    assert {"cuda-default-arguments", "texture-iterator-cstring", "template-keyword-without-args",
            "cuda-arch-hostdev"} <= {f["id"] for f in unit["fixes"]}
    hip = (tmp_path / "out" / "run" / "hip" / "gaps.cu").read_text()
    assert "hipMemcpyToSymbolAsync(HIP_SYMBOL(d_changed), &zero, sizeof(zero), 0, hipMemcpyHostToDevice);" in hip
    assert "hipMemcpyFromSymbolAsync(&back, HIP_SYMBOL(d_changed), sizeof(back), 0, hipMemcpyDeviceToHost);" in hip
    assert "hipMalloc3DArray(&volume, &desc, make_hipExtent(8, 8, 8), 0);" in hip
    assert "Iterate<N>::Store(p, v);" in hip
    assert "#if defined(__CUDA_ARCH__) || defined(__HIP__)\n#define FT_CUDA_HOSTDEV __host__ __device__" in hip
    assert hip.index("#include <cstring>") < hip.index("tex_obj_input_iterator.hpp")


LIBRARY_GAPS_TREE = {
    # flashinfer-python 0.2.2's include/flashinfer/utils.cuh, sampling.cuh and gemm/bmm_fp8.cuh: the device
    # runtime header, libcu++'s limits, and a cuBLASLt error check that prints cublasGetStatusString
    "utils.cuh": "#pragma once\n#include <cuda_device_runtime_api.h>\n#include <cuda_runtime.h>\n#include <cuda/std/limits>\n",
    "bmm_fp8.cuh": ("#pragma once\n#include <cublasLt.h>\n#include <cstdio>\n"
                    "#define FLASHINFER_CUBLAS_CHECK(EXPR) { cublasStatus_t e = (EXPR); if (e != CUBLAS_STATUS_SUCCESS) "
                    "printf(\"CUBLAS Error: %s\\n\", cublasGetStatusString(e)); }\n"
                    "inline void check_handle(cublasLtHandle_t h) { FLASHINFER_CUBLAS_CHECK(cublasLtDestroy(h)); }\n"),
    "sampling.cu": ("#include \"utils.cuh\"\n#include \"bmm_fp8.cuh\"\n"
                    "__global__ void pivot(const float* x, float* out, int n) {\n"
                    "  float m = -cuda::std::numeric_limits<float>::infinity();\n"
                    "  for (int i = threadIdx.x; i < n; i += blockDim.x) m = fmaxf(m, x[i]);\n"
                    "  out[threadIdx.x] = m + (float)cuda::std::numeric_limits<cuda::std::int32_t>::max();\n}\n"
                    # vec_dtypes.cuh: a member template of a dependent class called without the `template` keyword
                    "template <typename D, typename S> struct vec_cast {\n"
                    "  template <int N> __device__ static void cast(D* d, const S* s) { for (int i = 0; i < N; ++i) d[i] = (D)s[i]; }\n};\n"
                    "template <typename S, typename D, int N> __device__ void cast_from(D* d, const S* s) {\n"
                    "  vec_cast<D, S>::cast<N>(d, s);\n}\n"
                    "__global__ void widen(float* d, const int* s) { cast_from<int, float, 4>(d, s); }\n"),
}


def test_units_meeting_cuda_library_header_gaps_compile(tmp_path: Path) -> None:
    """<cuda_device_runtime_api.h> (builtin-types-header), <cuda/std/limits> with numeric_limits of built-in
    types (libcudacxx-std), cublasGetStatusString in a file that includes only cuBLASLt (blas-status-string
    adds hipblas.h, which declares hipblasStatusToString) and a dependent member template called without
    `template` (dependent-template-keyword) compile for gfx942 and gfx1100."""
    image_or_skip()
    report = migrate_tree_in_image(tmp_path, LIBRARY_GAPS_TREE)
    (unit,) = [f for f in report["files"] if f.get("unit")]
    for arch in ("gfx942", "gfx1100"):
        assert unit["compile"][arch]["status"] == "ok", unit["compile"][arch]
    hip = tmp_path / "out" / "run" / "hip"
    assert "#include <limits>" in (hip / "utils.cuh").read_text()
    assert "#include <hipblas/hipblas.h>" in (hip / "bmm_fp8.cuh").read_text()
    assert "-std::numeric_limits<float>::infinity()" in (hip / "sampling.cu").read_text()
    assert "vec_cast<D, S>::template cast<N>(d, s);" in (hip / "sampling.cu").read_text()


HOST_ISA_UNIT = """#include <cuda_runtime.h>
#include <immintrin.h>
// bmtrain 1.0.1's adam_cpu.hpp: half -> float on the CPU with F16C
float first_half(const unsigned short* p) {
  __m128 f = _mm_cvtph_ps(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)));
  float out[4];
  _mm_storeu_ps(out, f);
  return out[0];
}
__global__ void scale(float* x, float s) { x[threadIdx.x] *= s; }
int main() {
  unsigned short h[4] = {0x3c00, 0, 0, 0};
  float* x = nullptr;
  cudaMalloc(&x, 64 * sizeof(float));
  scale<<<1, 64>>>(x, first_half(h));
  return cudaDeviceSynchronize() == cudaSuccess ? 0 : 1;
}
"""


def test_cpu_intrinsics_get_the_instruction_set_flags_the_build_names(tmp_path: Path) -> None:
    """The CMake build passes -mf16c (bmtrain's AVX_FLAGS); the unit's host pass gets it, so F16C's
    _mm_cvtph_ps compiles, while the gfx942 and gfx1100 device passes get nothing x86."""
    image_or_skip()
    report = migrate_tree_in_image(tmp_path, {"CMakeLists.txt": 'set(AVX_FLAGS "${AVX_FLAGS} -mavx -mf16c")\n',
                                              "adam.cu": HOST_ISA_UNIT})
    (unit,) = [f for f in report["files"] if f.get("unit")]
    for arch in ("gfx942", "gfx1100"):
        assert unit["compile"][arch]["status"] == "ok", unit["compile"][arch]
    assert [f["flag"] for f in report["options"]["project_flags"]["host_isa_flags"]] == ["-mavx", "-mf16c"]
    logs = "".join(p.read_text() for p in (tmp_path / "out" / "run" / "build").rglob("adam.cu*.log"))
    assert "-Xarch_host -mf16c" in logs


def test_only_compiles_the_units_it_names_and_keeps_the_tree_for_includes(tmp_path: Path) -> None:
    """--only 'kernels/a*': kernels/a.cu compiles (with the shared header of the tree), kernels/b.cu is reported
    as left out; a glob that matches no source exits 2 with one line naming the flag."""
    image_or_skip()
    src = tmp_path / "src"
    (src / "kernels").mkdir(parents=True)
    (src / "common.cuh").write_text("__device__ inline float twice(float v) { return 2 * v; }\n")
    for name in ("a", "b"):
        (src / "kernels" / f"{name}.cu").write_text(f'#include "../common.cuh"\n__global__ void {name}(float* x) '
                                                    "{ x[threadIdx.x] = twice(x[threadIdx.x]); }\n")
    run = run_recipe(src, tmp_path / "out", "/src", "--out", "/out/run", "--arch", "gfx942", "--only", "kernels/a*")
    assert run.returncode == 0, run.stderr[-2000:]
    files = {f["path"]: f for f in json.loads((tmp_path / "out" / "run" / "report.json").read_text())["files"]}
    assert files["kernels/a.cu"]["compile"]["gfx942"]["status"] == "ok"
    assert not files["kernels/b.cu"].get("compile") and files["kernels/b.cu"]["unit"] is False
    assert files["kernels/b.cu"]["not_compiled"] == "unit left out by --only: not compiled in this run"
    bad = run_recipe(src, tmp_path / "out2", "/src", "--out", "/out/run", "--arch", "gfx942", "--only", "csrc/*.cu")
    assert bad.returncode == 2 and bad.stderr.strip().splitlines()[-1].startswith("migrate: --only csrc/*.cu: matches no source")
