"""hipify-clang in the dev image on the shapes of real CUDA units that its plain parse refuses (real
hipify-clang, hipify-perl and hipcc): every preprocessor branch parsed at once (the CUDA samples'
simpleHyperQ.cu defines `time_clocks` in both branches of an #if; their `#ifdef _WIN32` includes
<windows.h>), what nvcc's implicit cuda_runtime.h declares (llm.c's dev/cuda/common.h: isfinite in a
host template, host max(int, int), clock(), __stcs), and a kernel source without any include (the
driver-API sample's matrixMul_kernel.cu); and cuBLAS's half-precision GEMM with CUDA's half data
(gptqmodel 7.7.0's exllamav3/hgemm.cu), which hipBLAS takes as __half only with HIPBLAS_USE_HIP_HALF.

Image: $ROCMIG_DEV_IMAGE (default rocmig/dev:rocm7.2.4-gfx942-debian); skipped when it is not built.
"""

from __future__ import annotations

import json

import pytest

from tests.images.test_migrate_cases import image_or_skip, run_recipe

pytestmark = pytest.mark.docker

SOURCES = {
    "hyperq.cu": """#include <stdio.h>
#ifdef _WIN32
#define WINDOWS_LEAN_AND_MEAN
#include <windows.h>
#endif
#include <cuda_runtime.h>

__global__ void spin(clock_t *d_o, clock_t clock_count) {
  clock_t start_clock = clock64();
  while (clock64() - start_clock < clock_count) {}
  d_o[0] = clock_count;
}

#ifdef USE_PINNED
static void pinned(float **p) { cudaMallocHost((void **)p, 4); }
#endif

int main() {
  float kernel_time = 10;
  int clockRate = 1000;
#if defined(__arm__) || defined(__aarch64__)
  clock_t time_clocks = (clock_t)(kernel_time * (clockRate / 100));
#else
  clock_t time_clocks = (clock_t)(kernel_time * clockRate);
#endif
  clock_t *d_a;
  cudaMalloc((void **)&d_a, sizeof(clock_t));
  spin<<<1, 1>>>(d_a, time_clocks);
  cudaDeviceSynchronize();
  cudaFree(d_a);
  return 0;
}
""",
    "validate.cu": """#include <stdlib.h>
#include <stdio.h>
#include <cuda_runtime.h>
#include <float.h>

template<class D, class T>
int validate_result(D* device_result, const T* cpu_reference, std::size_t num_elements) {
    D* out_gpu = (D*)malloc(num_elements * sizeof(D));
    cudaMemcpy(out_gpu, device_result, num_elements * sizeof(D), cudaMemcpyDeviceToHost);
    int nfaults = 0;
    for (int i = 0; i < num_elements; i++) {
        if(!isfinite(cpu_reference[i]))
            continue;
        if (fabs(cpu_reference[i] - (T)out_gpu[i]) > FLT_EPSILON) nfaults++;
    }
    free(out_gpu);
    return nfaults;
}

__global__ void layernorm_mean(float* mean, const float* inp, int N) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx < N) __stcs(mean + idx, inp[idx]);
}

int main() {
    int N = 1024, block_size = 256;
    int grid = max(1, N / block_size);
    float *d_mean, *d_inp;
    cudaMalloc(&d_mean, N * sizeof(float));
    cudaMalloc(&d_inp, N * sizeof(float));
    clock_t start = clock();
    layernorm_mean<<<grid, block_size>>>(d_mean, d_inp, N);
    float* ref = (float*)calloc(N, sizeof(float));
    printf("%d %ld\\n", validate_result(d_mean, ref, N), (long)(clock() - start));
    return 0;
}
""",
    "matrixMul_kernel.cu": """#ifndef _MATRIXMUL_KERNEL_H_
#define _MATRIXMUL_KERNEL_H_

#include <stdio.h>

#define AS(i, j) As[i][j]

template <int block_size, typename size_type>
__device__ void matrixMul(float *C, float *A, float *B, size_type wA) {
  size_type bx = blockIdx.x;
  size_type tx = threadIdx.x;
  size_type ty = threadIdx.y;
  __shared__ float As[block_size][block_size];
  AS(ty, tx) = A[wA * ty + tx];
  __syncthreads();
  C[block_size * bx + wA * ty + tx] = AS(ty, tx) * B[tx];
}

extern "C" __global__ void matrixMul_bs8_64bit(float *C, float *A, float *B, size_t wA) {
  matrixMul<8, size_t>(C, A, B, wA);
}

#endif  // #ifndef _MATRIXMUL_KERNEL_H_
""",
    "hgemm.cu": """#include <cuda_fp16.h>
#include <cublas_v2.h>

void hgemm(cublasHandle_t handle, const half* a_ptr, const half* b_ptr, half* c_ptr, int size_m, int size_n,
           int size_k) {
    half alpha_ = __float2half(1.0f);
    half beta_ = __float2half(0.0f);
    cublasHgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, size_n, size_m, size_k, &alpha_, b_ptr, size_n, a_ptr, size_k,
                &beta_, c_ptr, size_n);
}
""",
    "missing_header.cu": """#include <cuda_runtime.h>
#include "absent_helpers.h"
__global__ void k(float* p) { p[threadIdx.x] = helper(); }
""",
}


@pytest.fixture(scope="module")
def semantic_run(tmp_path_factory):
    """One recipe run over SOURCES for gfx942 (fail-on never)."""
    image_or_skip()
    src = tmp_path_factory.mktemp("semantic") / "src"
    src.mkdir()
    for name, text in SOURCES.items():
        (src / name).write_text(text)
    out = tmp_path_factory.mktemp("out")
    proc = run_recipe(src, out, "/src", "--out", "/out/run", "--arch", "gfx942", "--jobs", "2", "--fail-on", "never")
    assert proc.returncode == 0, proc.stderr
    report = json.loads((out / "run" / "report.json").read_text())
    return {"files": {f["path"]: f for f in report["files"]}, "hip": out / "run" / "hip",
            "defines": [d["name"] for d in report["defines"]]}


def test_both_branches_defining_a_name_parse_with_the_branches_taken(semantic_run):
    entry = semantic_run["files"]["hyperq.cu"]
    assert entry["translator"] == {"name": "hipify-clang", "reason": ""}
    hip = (semantic_run["hip"] / "hyperq.cu").read_text()
    # the branch not taken (USE_PINNED) is translated too (by hipify-perl), nothing of CUDA's runtime is left
    assert "hipHostMalloc((void **)p, 4)" in hip or "hipMallocHost((void **)p, 4)" in hip
    assert "cuda" not in hip.lower().replace("// nvcc includes cuda_runtime.h", "")
    assert hip.count("hip_runtime.h") == 1
    assert entry["compile"]["gfx942"]["status"] == "ok", entry["compile"]["gfx942"]["first_error"]


@pytest.mark.parametrize("name", ["validate.cu", "matrixMul_kernel.cu"])
def test_units_nvcc_builds_are_hipify_clangs_and_compile(semantic_run, name):
    entry = semantic_run["files"][name]
    assert entry["translator"] == {"name": "hipify-clang", "reason": ""}
    assert entry["compile"]["gfx942"]["status"] == "ok", entry["compile"]["gfx942"]["first_error"]


def test_a_kernel_source_without_includes_gets_the_hip_runtime(semantic_run):
    first = (semantic_run["hip"] / "matrixMul_kernel.cu").read_text().split("\n", 1)[0]
    assert first.startswith(('#include "hip/hip_runtime.h"', "#include <hip/hip_runtime.h>")), first


def test_a_failed_parse_names_the_trees_file(semantic_run):
    translator = semantic_run["files"]["missing_header.cu"]["translator"]
    assert translator["name"] == "hipify-perl"
    assert "missing_header.cu:2:10: fatal error: 'absent_helpers.h' file not found" in translator["reason"]
    assert "/tmp/" not in translator["reason"] and "/out/" not in translator["reason"]


def test_cublas_half_gemm_with_half_data_compiles(semantic_run):
    entry = semantic_run["files"]["hgemm.cu"]
    assert entry["compile"]["gfx942"]["status"] == "ok", entry["compile"]["gfx942"]["first_error"]
    assert "HIPBLAS_USE_HIP_HALF" in semantic_run["defines"]
