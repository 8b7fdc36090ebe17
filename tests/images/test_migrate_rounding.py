"""CUDA's directed-rounding arithmetic through the whole recipe (fixup directed-rounding): an interval
header in the shape of the CUDA samples' cuda_interval_rounded_arith.h (every float and double operation
rounded down and up) compiles for gfx942 and gfx1100, where hipcc alone fails on each call; the one
operation without an exact form here (double __fma_rd) stays a finding and a failed compile.

Image: $ROCMIG_DEV_IMAGE (default rocmig/dev:rocm7.2.4-gfx942-debian); skipped when it is not built.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.images.test_migrate_cases import image_or_skip, migrate_tree_in_image

pytestmark = pytest.mark.docker

HEADER = """#ifndef ROUNDED_ARITH_H
#define ROUNDED_ARITH_H
template <class T> struct rounded_arith {};
template <> struct rounded_arith<float> {
  __device__ float add_down(float x, float y) { return __fadd_rd(x, y); }
  __device__ float add_up(float x, float y) { return __fadd_ru(x, y); }
  __device__ float sub_down(float x, float y) { return __fsub_rd(x, y); }
  __device__ float mul_down(float x, float y) { return __fmul_rd(x, y); }
  __device__ float mul_up(float x, float y) { return __fmul_ru(x, y); }
  __device__ float div_down(float x, float y) { return __fdiv_rd(x, y); }
  __device__ float div_up(float x, float y) { return __fdiv_ru(x, y); }
  __device__ float sqrt_down(float x) { return __fsqrt_rd(x); }
  __device__ float sqrt_up(float x) { return __fsqrt_ru(x); }
  __device__ float rcp_zero(float x) { return __frcp_rz(x); }
  __device__ float fma_down(float x, float y, float z) { return __fmaf_rd(x, y, z); }
};
template <> struct rounded_arith<double> {
  __device__ double add_down(double x, double y) { return __dadd_rd(x, y); }
  __device__ double add_up(double x, double y) { return __dadd_ru(x, y); }
  __device__ double sub_up(double x, double y) { return __dsub_ru(x, y); }
  __device__ double mul_down(double x, double y) { return __dmul_rd(x, y); }
  __device__ double mul_up(double x, double y) { return __dmul_ru(x, y); }
  __device__ double div_down(double x, double y) { return __ddiv_rd(x, y); }
  __device__ double div_up(double x, double y) { return __ddiv_ru(x, y); }
  __device__ double sqrt_down(double x) { return __dsqrt_rd(x); }
  __device__ double sqrt_up(double x) { return __dsqrt_ru(x); }
  __device__ double rcp_zero(double x) { return __drcp_rz(x); }
};
#endif
"""

KERNEL = """#include <cuda_runtime.h>
#include "rounded_arith.h"
template <class T>
__global__ void bounds(const T* x, const T* y, T* lo, T* hi, int n) {
  rounded_arith<T> r;
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    lo[i] = r.sqrt_down(r.add_down(r.mul_down(x[i], y[i]), r.div_down(x[i], y[i])));
    hi[i] = r.sqrt_up(r.add_up(r.mul_up(x[i], y[i]), r.div_up(x[i], y[i]))) + r.rcp_zero(y[i]);
  }
}
template __global__ void bounds<float>(const float*, const float*, float*, float*, int);
template __global__ void bounds<double>(const double*, const double*, double*, double*, int);
__global__ void fma_bound(const float* x, float* out) { out[threadIdx.x] = rounded_arith<float>().fma_down(x[0], x[1], x[2]); }
"""

LEFT = """#include <cuda_runtime.h>
__global__ void dfma(const double* x, double* out) { out[threadIdx.x] = __fma_rd(x[0], x[1], x[2]); }
"""


def test_interval_arithmetic_compiles_on_both_archs(tmp_path: Path) -> None:
    image_or_skip()
    report = migrate_tree_in_image(tmp_path, {"rounded_arith.h": HEADER, "interval.cu": KERNEL, "dfma.cu": LEFT})
    units = {f["path"]: f for f in report["files"] if f.get("unit")}
    header = next(f for f in report["files"] if f["path"] == "rounded_arith.h")
    for arch in ("gfx942", "gfx1100"):
        assert units["interval.cu"]["compile"][arch]["status"] == "ok", units["interval.cu"]["compile"][arch]
        assert units["dfma.cu"]["compile"][arch]["status"] == "failed"
    assert "directed-rounding" in {x["id"] for x in header["fixes"]}
    migrated = (tmp_path / "out" / "run" / "hip" / "rounded_arith.h").read_text(encoding="utf-8")
    assert "return rocmig_fdiv_rd(x, y);" in migrated and "__fdiv_rd" not in migrated
    assert migrated.count("#define ROCMIG_DIRECTED_ROUNDING") == 1
    rounded = [f for f in header["findings"] if f["rule"] == "directed-rounding-arithmetic"]
    assert len(rounded) == 21 and {f["status"] for f in rounded} == {"fixed"}
    assert {f["rule"] for f in units["dfma.cu"]["findings"]} >= {"directed-rounding-double-fma"}
    assert "directed-rounding-arithmetic" not in {f["rule"] for f in units["dfma.cu"]["findings"]}
