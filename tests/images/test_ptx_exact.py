"""migrate's inline-PTX translation (recipes/migrate/migrate/ptx.py) against NVIDIA's own PTX.

tests/images/sources/ptx_reference.json holds each case's asm statement, 512 random inputs and the
outputs an NVIDIA H100 gave (bench/ptx_reference.py, nvcc 13.0, sm_90), and for the warp-wide cases
(mma.sync, ldmatrix) 64 warps of 32 lanes each. Here every statement is translated by ptx.translate,
built for the host with the dev image's clang (the helpers are __host__ __device__ C++; 32 threads in
lockstep stand in for a warp, with a barrier-based __shfl) and run on the same inputs: the outputs must
match bit for bit, except that any NaN matches any NaN (NVIDIA returns its canonical NaN, C++ keeps the
payload) and float sums of random data, whose order NVIDIA does not specify. Then a tree with
real asm shapes (AWQ's dequantization, Marlin's cp.async helpers, an LDS load, %laneid) goes through the
whole recipe and compiles for gfx942 and gfx1100 with the inline-ptx-asm findings closed (with vLLM's
acquire / release / volatile flag accesses and atom / red, which become HIP's scoped atomics), while an
mma.sync statement (no exact C++ form) is left as it is and its finding explains the failed compile.

Image: $ROCMIG_DEV_IMAGE (default rocmig/dev:rocm7.2.4-gfx942-debian); skipped when it is not built.
"""

from __future__ import annotations

import json
import struct
import sys
from pathlib import Path

import pytest

from tests.images.test_migrate_cases import ROOT, image_or_skip, migrate_tree_in_image, run_recipe

sys.path.insert(0, str(ROOT / "recipes" / "migrate"))
sys.path.insert(0, str(ROOT / "bench"))

from migrate import ptx  # noqa: E402
from ptx_reference import HOST_PRELUDE, Case, WarpCase, host_program, warp_host_program  # noqa: E402

pytestmark = pytest.mark.docker

SOURCES = Path(__file__).parent / "sources"
REFERENCE = SOURCES / "ptx_reference.json"


def _is_nan(bits: int, width: int) -> bool:
    if width == 16:
        return (bits >> 10) & 0x1F == 0x1F and bits & 0x3FF != 0
    if width == 32:
        return (bits >> 23) & 0xFF == 0xFF and bits & 0x7FFFFF != 0
    return False


def _same(ref: int, got: int, lanes: tuple[int, ...]) -> bool:
    """Equal bits, or NaN in both for each float lane (lane widths in bits, low lane first)."""
    if ref == got:
        return True
    shift = 0
    for width in lanes:
        mask = (1 << width) - 1
        r, g = (ref >> shift) & mask, (got >> shift) & mask
        if r != g and not (_is_nan(r, width) and _is_nan(g, width)):
            return False
        shift += width
    return True


def _lanes(case: Case, ctype: str) -> tuple[int, ...]:
    """Float lanes of an output whose NaNs may differ in payload; bf16 results are compared exactly
    (both sides give the canonical 0x7FFF)."""
    if "bf16" in case.name and ctype != "float":
        return ()
    if "f16x2" in case.name or "awq_scale" in case.name:
        return (16, 16)
    if ctype == "float":
        return (32,)
    if ctype == "uint16_t" and ("f16" in case.name):
        return (16,)
    return ()


def _run_on_host(tmp_path: Path, program: str) -> list[str]:
    """Build `program` with the helpers for the host (HOST_PRELUDE's lockstep threads stand in for a
    warp) with the dev image's clang and return its output lines."""
    src = tmp_path / "src"
    src.mkdir()
    (src / "host.cpp").write_text(program, encoding="utf-8")
    (src / "prelude.h").write_text(HOST_PRELUDE, encoding="utf-8")
    (src / "ptx_helpers.h").write_text(ptx.HELPERS.read_text(encoding="utf-8"), encoding="utf-8")
    run = run_recipe(src, tmp_path / "out", "-c", "clang++-22 -std=c++20 -O1 -pthread -D__host__= -D__device__= "
                     "-include /src/prelude.h -include /src/ptx_helpers.h /src/host.cpp -o /out/host && /out/host",
                     entry=("bash",))
    assert run.returncode == 0, run.stderr[-3000:]
    return run.stdout.splitlines()


def _translated(asm: str) -> str:
    (stmt,) = ptx.statements(asm)
    return asm[:stmt.start] + ptx.translate(stmt, cuda_warps=True) + asm[stmt.end:]


def test_translated_ptx_matches_nvidia(tmp_path: Path) -> None:
    image_or_skip()
    reference = json.loads(REFERENCE.read_text(encoding="utf-8"))
    cases, data, bodies = [], [], []
    for raw in reference["cases"]:
        case = Case(raw["name"], raw["asm"], tuple(tuple(x) for x in raw["ins"]), tuple(tuple(x) for x in raw["outs"]),
                    raw["init"], raw["mem"], raw["host"])
        bodies.append(case.host or _translated(case.asm))
        cases.append(case)
        data.append([[int(v, 16) for v in sample] for sample in raw["inputs"]])
    got: dict[tuple[int, int], list[int]] = {}
    for line in _run_on_host(tmp_path, host_program(cases, data, bodies)):
        _word, index, sample, *values = line.split()
        got[(int(index), int(sample))] = [int(v, 16) for v in values]
    wrong = []
    for i, (case, raw) in enumerate(zip(cases, reference["cases"])):
        types = [ctype for ctype, _name in case.outs] + ["uint32_t"] * (4 if case.mem else 0)
        for s, expected in enumerate(raw["outputs"]):
            for k, value in enumerate(expected):
                if not _same(int(value, 16), got[(i, s)][k], _lanes(case, types[k])):
                    wrong.append(f"{case.name} sample {s} output {k}: NVIDIA {value}, translated {got[(i, s)][k]:x} "
                                 f"(inputs {raw['inputs'][s]})")
    assert len(got) == sum(len(raw["outputs"]) for raw in reference["cases"])
    assert not wrong, "\n".join(wrong[:20])


def _float(bits: int) -> float:
    return struct.unpack("<f", struct.pack("<I", bits))[0]


def test_warp_matrix_emulation_matches_nvidia(tmp_path: Path) -> None:
    """ldmatrix (.x1 / .x2 / .x4, .trans) and mma.sync (16-bit floats into f32 and f16, s8 / u8 into s32
    with and without .satfinite) on 64 warps of random fragments each: bit for bit where every sum is
    exact (small-integer data, integers), within 2e-4 on random f16 data (NVIDIA does not specify its
    tensor cores' summation order)."""
    image_or_skip()
    reference = json.loads(REFERENCE.read_text(encoding="utf-8"))
    cases = [WarpCase(raw["name"], raw["asm"], tuple(tuple(x) for x in raw["ins"]), tuple(tuple(x) for x in raw["outs"]),
                      raw["tile"]) for raw in reference["warp_cases"]]
    data = [[[[int(v, 16) for v in lane] for lane in warp] for warp in raw["inputs"]] for raw in reference["warp_cases"]]
    lines = _run_on_host(tmp_path, warp_host_program(cases, data, [_translated(c.asm) for c in cases]))
    got = {}
    for line in lines:
        _word, index, warp, lane, *values = line.split()
        got[(int(index), int(warp), int(lane))] = [int(v, 16) for v in values]
    wrong = []
    for i, (case, raw) in enumerate(zip(cases, reference["warp_cases"])):
        for w, warp in enumerate(raw["outputs"]):
            for lane, expected in enumerate(warp):
                for k, value in enumerate(expected):
                    mine, theirs = got[(i, w, lane)][k], int(value, 16)
                    if "random" in case.name:
                        ok = abs(_float(mine) - _float(theirs)) <= 2e-4
                    else:
                        ok = mine == theirs
                    if not ok:
                        wrong.append(f"{case.name} warp {w} lane {lane} output {k}: NVIDIA {value}, emulated {mine:x}")
    assert len(got) == sum(32 * len(raw["outputs"]) for raw in reference["warp_cases"])
    assert not wrong, "\n".join(wrong[:20])


PIPELINE_TREE = {
    "dequant.cuh": """#pragma once
#include <cuda_fp16.h>
#include <stdint.h>

__inline__ __device__ void dequantize_s4_to_fp16x2(half2 const &source, uint4 *result) {
  uint32_t *h = reinterpret_cast<uint32_t *>(result);
  uint32_t const i4s = reinterpret_cast<uint32_t const &>(source);
  static constexpr uint32_t immLut = (0xf0 & 0xcc) | 0xaa;
  static constexpr uint32_t BOTTOM_MASK = 0x000f000f;
  static constexpr uint32_t I4s_TO_F16s_MAGIC_NUM = 0x64006400;
  asm volatile("lop3.b32 %0, %1, %2, %3, %4;\\n"
               : "=r"(h[0])
               : "r"(i4s), "n"(BOTTOM_MASK), "n"(I4s_TO_F16s_MAGIC_NUM), "n"(immLut));
  asm volatile("sub.f16x2 %0, %1, %2;\\n" : "=r"(h[0]) : "r"(h[0]), "r"(I4s_TO_F16s_MAGIC_NUM));
  asm volatile("fma.rn.f16x2 %0, %1, %2, %3;\\n" : "=r"(h[1]) : "r"(h[0]), "r"(0x2c002c00), "r"(0xd400d400));
}
""",
    "flags.cuh": """#pragma once
#include <stdint.h>

// vLLM's custom all-reduce flags (csrc/custom_all_reduce.cuh) and atomics in inline PTX
__device__ __forceinline__ void st_flag_release(uint32_t* flag_addr, uint32_t flag) {
  asm volatile("st.release.sys.global.u32 [%1], %0;" ::"r"(flag), "l"(flag_addr));
}
__device__ __forceinline__ uint32_t ld_flag_acquire(uint32_t* flag_addr) {
  uint32_t flag;
  asm volatile("ld.acquire.sys.global.u32 %0, [%1];" : "=r"(flag) : "l"(flag_addr));
  return flag;
}
__device__ __forceinline__ void st_flag_volatile(uint32_t* flag_addr, uint32_t flag) {
  asm volatile("st.volatile.global.u32 [%1], %0;" ::"r"(flag), "l"(flag_addr));
}
__device__ __forceinline__ uint32_t ld_flag_volatile(uint32_t* flag_addr) {
  uint32_t flag;
  asm volatile("ld.volatile.global.u32 %0, [%1];" : "=r"(flag) : "l"(flag_addr));
  return flag;
}
__device__ __forceinline__ uint32_t bump(uint32_t* counter, float* sum, float v) {
  uint32_t old, seen;
  asm volatile("atom.add.release.gpu.u32 %0, [%1], %2;" : "=r"(old) : "l"(counter), "r"(1));
  asm volatile("atom.global.cas.b32 %0, [%1], %2, %3;" : "=r"(seen) : "l"(counter), "r"(old + 1), "r"(0));
  asm volatile("red.relaxed.gpu.global.add.f32 [%0], %1;" ::"l"(sum), "f"(v));
  return old + seen;
}
""",
    "pipeline.cu": """#include <cuda_runtime.h>
#include <cuda_fp16.h>
#include "dequant.cuh"
#include "flags.cuh"

__device__ inline void cp_async4_pred(void* smem_ptr, const void* glob_ptr, bool pred = true) {
  const int BYTES = 16;
  uint32_t smem = static_cast<uint32_t>(__cvta_generic_to_shared(smem_ptr));
  asm volatile(
      "{\\n"
      "   .reg .pred p;\\n"
      "   setp.ne.b32 p, %0, 0;\\n"
      "   @p cp.async.cg.shared.global [%1], [%2], %3;\\n"
      "}\\n" ::"r"((int)pred),
      "r"(smem), "l"(glob_ptr), "n"(BYTES));
}

__device__ inline void cp_async4_zfill(void* smem_ptr, const void* glob_ptr, int src_bytes) {
  uint32_t smem = static_cast<uint32_t>(__cvta_generic_to_shared(smem_ptr));
  asm volatile("cp.async.cg.shared.global.L2::128B [%0], [%1], 16, %2;\\n" ::"r"(smem), "l"(glob_ptr), "r"(src_bytes));
}

__device__ inline void cp_async_fence() { asm volatile("cp.async.commit_group;\\n" ::); }

template <int n>
__device__ inline void cp_async_wait() { asm volatile("cp.async.wait_group %0;\\n" ::"n"(n)); }

__device__ inline uint32_t ld_shared(const void* p) {
  uint32_t v;
  asm volatile("ld.shared.u32 %0, [%1];" : "=r"(v) : "r"((uint32_t)__cvta_generic_to_shared(p)));
  return v;
}

__global__ void dequant_kernel(const int4* __restrict__ q, uint4* out, int n) {
  __shared__ int4 tile[128];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  cp_async4_pred(&tile[threadIdx.x], &q[i], i < n);
  cp_async4_zfill(&tile[threadIdx.x ^ 1], &q[i], (i < n) ? 16 : 0);
  cp_async_fence();
  cp_async_wait<0>();
  __syncthreads();
  uint32_t w = ld_shared(&tile[threadIdx.x]);
  uint4 r;
  dequantize_s4_to_fp16x2(*reinterpret_cast<half2*>(&w), &r);
  unsigned laneid;
  asm("mov.u32 %0, %%laneid;" : "=r"(laneid));
  if (i < n) out[i] = make_uint4(r.x, r.y, r.z + laneid, r.w);
}

__global__ void flag_kernel(uint32_t* flags, float* sum) {
  st_flag_release(flags, 1);
  st_flag_volatile(flags + 1, ld_flag_acquire(flags) + ld_flag_volatile(flags + 2));
  bump(flags + 3, sum, 1.5f);
}
""",
}

FP8_MMA = """
__global__ void fp8_kernel(const unsigned* a, float* c) {
  unsigned h0, h1;
  asm volatile("mma.sync.aligned.m16n8k32.row.col.f16.e4m3.e4m3.f16 {%0,%1}, {%2,%3,%4,%5}, {%6,%7}, {%8,%9};\\n"
               : "=r"(h0), "=r"(h1)
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(a[4]), "r"(a[5]), "r"(a[6]), "r"(a[7]));
  c[0] = (float)(h0 ^ h1);
}
"""

# gptqmodel 7.7.0's Marlin fragments (marlin/marlin_template.h ldsm, marlin/marlin_mma.h mma)
MARLIN_MMA = """#pragma once
#include <cuda_fp16.h>
#include <stdint.h>

template <int count>
__device__ inline void ldsm(uint32_t* a, const void* smem_ptr) {
  uint32_t smem = static_cast<uint32_t>(__cvta_generic_to_shared(smem_ptr));
  if constexpr (count == 4) {
    asm volatile(
        "ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\\n"
        : "=r"(a[0]), "=r"(a[1]), "=r"(a[2]), "=r"(a[3])
        : "r"(smem));
  } else {
    asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0,%1}, [%2];\\n"
                 : "=r"(a[0]), "=r"(a[1])
                 : "r"(smem));
  }
}

__device__ inline void mma(const uint32_t* a, const uint32_t* b, float* c) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ == 750
  asm volatile(
      "mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32 "
      "{%0,%1,%2,%3}, {%4,%5}, {%6}, {%7,%8,%9,%10};\\n"
      : "=f"(c[0]), "=f"(c[1]), "=f"(c[2]), "=f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(b[0]), "f"(c[0]), "f"(c[1]), "f"(c[2]), "f"(c[3]));
#else
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
      "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%10,%11,%12,%13};\\n"
      : "=f"(c[0]), "=f"(c[1]), "=f"(c[2]), "=f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]),
        "f"(c[0]), "f"(c[1]), "f"(c[2]), "f"(c[3]));
#endif
}

__device__ inline void mma_fp16_accum(const uint32_t* a, const uint32_t* b, uint32_t* c) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16 "
      "{%0,%1}, {%2,%3,%4,%5}, {%6,%7}, {%8,%9};\\n"
      : "=r"(c[0]), "=r"(c[1])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]),
        "r"(c[0]), "r"(c[1]));
}
"""

MARLIN_KERNEL = """#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include "marlin_mma.cuh"

__global__ void tile_kernel(const int4* A, const int4* B, float* C, uint32_t* H) {
  __shared__ int4 sa[64], sb[64];
  sa[threadIdx.x] = A[threadIdx.x];
  sb[threadIdx.x] = B[threadIdx.x];
  __syncthreads();
  uint32_t a[4], b[2], h[2] = {0, 0};
  float c[4] = {0.f, 0.f, 0.f, 0.f};
  ldsm<4>(a, &sa[threadIdx.x % 32]);
  ldsm<2>(b, &sb[threadIdx.x % 32]);
  mma(a, b, c);
  mma_fp16_accum(a, b, h);
  C[threadIdx.x] = c[0] + c[1] + c[2] + c[3];
  __nv_bfloat162 scale = __float2bfloat162_rn(c[0]);
  __nv_bfloat162 pair = __floats2bfloat162_rn(c[1], c[2]);
  H[threadIdx.x] = h[0] ^ h[1] ^ *reinterpret_cast<uint32_t*>(&scale) ^ *reinterpret_cast<uint32_t*>(&pair);
}
"""


def test_real_asm_shapes_compile_on_both_archs(tmp_path: Path) -> None:
    image_or_skip()
    report = migrate_tree_in_image(tmp_path, PIPELINE_TREE)
    (unit,) = [f for f in report["files"] if f.get("unit")]
    for arch in ("gfx942", "gfx1100"):
        assert unit["compile"][arch]["status"] == "ok", unit["compile"][arch]
    ptx_findings = [f for file in report["files"] for f in file["findings"] if f["rule"] == "inline-ptx-asm"]
    assert ptx_findings and all(f["status"] == "fixed" for f in ptx_findings), ptx_findings
    migrated = (tmp_path / "out" / "run" / "hip" / "pipeline.cu").read_text(encoding="utf-8")
    assert not ptx.statements(migrated)
    assert "rocmig_ptx::cp_async(" in migrated and "rocmig_ptx::lane32()" in migrated
    flags = (tmp_path / "out" / "run" / "hip" / "flags.cuh").read_text(encoding="utf-8")
    assert "__hip_atomic_store(" in flags and "__ATOMIC_ACQUIRE, __HIP_MEMORY_SCOPE_SYSTEM" in flags
    assert "__hip_atomic_compare_exchange_strong(" in flags and not ptx.statements(flags)


def test_instruction_without_exact_form_keeps_its_finding(tmp_path: Path) -> None:
    image_or_skip()
    tree = dict(PIPELINE_TREE, **{"pipeline.cu": PIPELINE_TREE["pipeline.cu"] + FP8_MMA})
    report = migrate_tree_in_image(tmp_path, tree)
    (unit,) = [f for f in report["files"] if f.get("unit")]
    failed = unit["compile"]["gfx942"]
    assert failed["status"] == "failed"
    assert failed["explained_by"]["rule"] == "inline-ptx-asm"
    still = [f for file in report["files"] for f in file["findings"]
             if f["rule"] == "inline-ptx-asm" and f["status"] == "open"]
    assert [f["file"] for f in still] == ["pipeline.cu"]
    assert "e4m3" in (tmp_path / "out" / "run" / "hip" / "pipeline.cu").read_text(encoding="utf-8")


def test_marlin_tensor_core_fragments_compile_emulated_with_a_warning(tmp_path: Path) -> None:
    image_or_skip()
    report = migrate_tree_in_image(tmp_path, {"marlin_mma.cuh": MARLIN_MMA, "tile.cu": MARLIN_KERNEL})
    (unit,) = [f for f in report["files"] if f.get("unit")]
    for arch in ("gfx942", "gfx1100"):
        assert unit["compile"][arch]["status"] == "ok", unit["compile"][arch]
    findings = [f for file in report["files"] for f in file["findings"]]
    assert {f["status"] for f in findings if f["rule"] == "inline-ptx-asm"} == {"fixed"}
    emulated = sorted(f["line"] for f in findings if f["rule"] == "ptx-mma-emulated")
    assert emulated == [9, 14, 28, 38] and all(f["status"] == "open" for f in findings if f["rule"] == "ptx-mma-emulated")
    migrated = (tmp_path / "out" / "run" / "hip" / "marlin_mma.cuh").read_text(encoding="utf-8")
    assert "rocmig_ptx::mma_16bit<16>(" in migrated and "rocmig_ptx::ldmatrix_b16(" in migrated


LOP3_HEADER = """#pragma once
#include <cuda_runtime.h>
__device__ inline unsigned xor3(unsigned a, unsigned b, unsigned c) {
  unsigned d;
  asm("lop3.b32 %0, %1, %2, %3, 0x96;" : "=r"(d) : "r"(a), "r"(b), "r"(c));
  return d;
}
"""
PRMT_UNIT = """#include "bits.cuh"
__global__ void mix(const unsigned* x, unsigned* y) {
  unsigned a = x[threadIdx.x], b = x[threadIdx.x + 32], d, e;
  asm("prmt.b32 %0, %1, %2, 0x5140;" : "=r"(d) : "r"(a), "r"(b));
  asm("lop3.b32 %0, %1, %2, %3, 0xE8;" : "=r"(e) : "r"(a), "r"(b), "r"(d));
  y[threadIdx.x] = xor3(d, e, a);
}
"""


def test_helper_blocks_of_files_compiled_together_add_up(tmp_path: Path) -> None:
    """Each file gets the helpers its own translations call, each under its own guard: the unit's block
    (prmt, lop3) and its header's (lop3) compile together, lop3 defined once, and neither holds the
    helpers nobody calls (the warp-matrix emulation)."""
    image_or_skip()
    report = migrate_tree_in_image(tmp_path, {"bits.cuh": LOP3_HEADER, "mix.cu": PRMT_UNIT})
    (unit,) = [f for f in report["files"] if f.get("unit")]
    for arch in ("gfx942", "gfx1100"):
        assert unit["compile"][arch]["status"] == "ok", unit["compile"][arch]
    header = (tmp_path / "out" / "run" / "hip" / "bits.cuh").read_text(encoding="utf-8")
    migrated = (tmp_path / "out" / "run" / "hip" / "mix.cu").read_text(encoding="utf-8")
    assert "#define ROCMIG_PTX_lop3" in header and "#define ROCMIG_PTX_prmt" not in header
    assert "#define ROCMIG_PTX_prmt" in migrated and "#define ROCMIG_PTX_lop3" in migrated
    assert "mma_16bit" not in header + migrated and "ldmatrix_b16" not in header + migrated


# AutoGPTQ 0.7.1's marlin_cuda_kernel.cu keeps each tensor-core helper under `__CUDA_ARCH__ >= 800` with an
# assert(0) stub for every other GPU, AMD's included
STUB_GATED = """#include <cuda_runtime.h>
#include <cuda_fp16.h>
#include <cassert>
template <typename T, int n> struct Vec { T elems[n]; };
using FragA = Vec<half2, 4>;
using FragB = Vec<half2, 2>;
using FragC = Vec<float, 4>;
__device__ inline void cp_async4_pred(void* smem_ptr, const void* glob_ptr, bool pred = true) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  const int BYTES = 16;
  uint32_t smem = static_cast<uint32_t>(__cvta_generic_to_shared(smem_ptr));
  asm volatile("{\\n   .reg .pred p;\\n   setp.ne.b32 p, %0, 0;\\n   @p cp.async.cg.shared.global [%1], [%2], %3;\\n}\\n"
               :: "r"((int) pred), "r"(smem), "l"(glob_ptr), "n"(BYTES));
#else
  assert(0);
#endif
}
__device__ inline void cp_async_wait_all() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.wait_all;\\n" ::);
#else
  assert(0);
#endif
}
__device__ inline void mma(const FragA& a_frag, const FragB& frag_b, FragC& frag_c) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  const uint32_t* a = reinterpret_cast<const uint32_t*>(&a_frag);
  const uint32_t* b = reinterpret_cast<const uint32_t*>(&frag_b);
  float* c = reinterpret_cast<float*>(&frag_c);
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
               "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%10,%11,%12,%13};\\n"
               : "=f"(c[0]), "=f"(c[1]), "=f"(c[2]), "=f"(c[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]),
                 "f"(c[0]), "f"(c[1]), "f"(c[2]), "f"(c[3]));
#else
  assert(0);
#endif
}
__global__ void tile(const int4* A, float* C) {
  __shared__ int4 sa[32];
  cp_async4_pred(&sa[threadIdx.x % 32], &A[threadIdx.x], threadIdx.x < 32);
  cp_async_wait_all();
  __syncthreads();
  FragA a = *reinterpret_cast<const FragA*>(&sa[threadIdx.x % 32]);
  FragB b = *reinterpret_cast<const FragB*>(&sa[(threadIdx.x + 1) % 32]);
  FragC c = {};
  mma(a, b, c);
  C[threadIdx.x] = c.elems[0] + c.elems[3];
}
"""


def test_stub_gated_tensor_core_helpers_compile_with_their_cuda_branch_on_amd(tmp_path: Path) -> None:
    """cuda-arch-branch has AMD's device code take the `__CUDA_ARCH__ >= 800` branches (their cp.async and
    mma.sync translated) instead of the assert(0) stubs: the unit compiles on both archs with every
    cuda-arch-stub finding closed and no stub left in the device code."""
    image_or_skip()
    report = migrate_tree_in_image(tmp_path, {"gptq_tile.cu": STUB_GATED})
    (unit,) = [f for f in report["files"] if f.get("unit")]
    for arch in ("gfx942", "gfx1100"):
        assert unit["compile"][arch]["status"] == "ok", unit["compile"][arch]
    stubs = [f for f in unit["findings"] if f["rule"] == "cuda-arch-stub"]
    assert len(stubs) == 3 and {f["status"] for f in stubs} == {"fixed"}, stubs
    migrated = (tmp_path / "out" / "run" / "hip" / "gptq_tile.cu").read_text(encoding="utf-8")
    assert migrated.count("|| defined(__AMDGCN__)") == 3 and not ptx.statements(migrated)
    assert "rocmig_ptx::mma_16bit<16>(" in migrated and "rocmig_ptx::cp_async(" in migrated


FP8_MMA_CHECK = r"""#include <thread>
#include <vector>
#include <cstdio>
#include <cstring>
// every FP8 byte decoded, then the same warp's mma.sync m16n8k32 twice: FP8 bytes encoding small integers
// (mma_fp8) and those integers as s8 bytes (mma_8bit, whose layout matches an NVIDIA H100 bit for bit)
static unsigned char enc[17];  // e4m3 byte of -8..8 (index v + 8)
int main() {
  for (unsigned b = 0; b < 256; ++b) {
    float f = rocmig_ptx::fp8_float(b, false), g = rocmig_ptx::fp8_float(b, true);
    unsigned fu, gu; memcpy(&fu, &f, 4); memcpy(&gu, &g, 4);
    printf("decode %u %08x %08x\n", b, fu, gu);
    for (int v = -8; v <= 8; ++v) if (f == (float)v && !(v == 0 && b != 0)) enc[v + 8] = (unsigned char)b;
  }
  std::barrier<> barrier(32);
  rocmig_host_barrier = &barrier;
  static int vals[32][6][4];
  unsigned seed = 12345;
  for (auto& lane : vals) for (auto& reg : lane) for (int& v : reg) { seed = seed * 1103515245u + 12345u; v = (int)((seed >> 16) % 17) - 8; }
  static float d8[32][4], dfp8[32][4];
  std::vector<std::thread> lanes;
  for (unsigned l = 0; l < 32; ++l)
    lanes.emplace_back([l] {
      rocmig_host_lane = l;
      unsigned s8[6] = {}, fp[6] = {};
      for (int r = 0; r < 6; ++r) for (int e = 0; e < 4; ++e) {
        s8[r] |= (unsigned)(unsigned char)(signed char)vals[l][r][e] << (8 * e);
        fp[r] |= (unsigned)enc[vals[l][r][e] + 8] << (8 * e);
      }
      unsigned c[4] = {0, 0, 0, 0}, d[4];
      rocmig_ptx::mma_8bit<32>(s8, s8 + 4, c, d, true, true, false);
      for (int i = 0; i < 4; ++i) d8[l][i] = (float)(int)d[i];
      float cf[4] = {0, 0, 0, 0};
      rocmig_ptx::mma_fp8<32>(fp, fp + 4, cf, dfp8[l], false, false);
    });
  for (auto& t : lanes) t.join();
  int same = 0;
  for (int l = 0; l < 32; ++l) for (int i = 0; i < 4; ++i) same += d8[l][i] == dfp8[l][i];
  printf("mma %d\n", same);
  return 0;
}
"""


def _ocp_fp8(byte: int, e5m2: bool) -> float:
    """An OCP FP8 byte's value (the OCP 8-bit floating point specification), independently of rocmig's code."""
    if e5m2:
        return struct.unpack("<e", bytes([0, byte]))[0]
    sign = -1.0 if byte & 0x80 else 1.0
    exponent, mantissa = (byte >> 3) & 0xF, byte & 7
    if exponent == 15 and mantissa == 7:
        return float("nan")
    return sign * (mantissa / 8 * 2.0 ** -6 if exponent == 0 else (1 + mantissa / 8) * 2.0 ** (exponent - 7))


def test_fp8_tensor_core_fragments_decode_exactly_and_share_the_verified_8bit_layout(tmp_path: Path) -> None:
    """mma.sync with .e4m3 / .e5m2 inputs (gptqmodel's swordfish FP8 Marlin): every FP8 byte decodes to the
    OCP value, and on a warp of small integers the FP8 emulation gives exactly the s8 emulation's sums, whose
    fragment layout was compared with an NVIDIA H100 (test_warp_matrix_emulation_matches_nvidia)."""
    image_or_skip()
    lines = _run_on_host(tmp_path, FP8_MMA_CHECK)
    decoded = [line.split() for line in lines if line.startswith("decode ")]
    assert len(decoded) == 256
    for _word, byte, e4, e5 in decoded:
        for bits, e5m2 in ((e4, False), (e5, True)):
            want = _ocp_fp8(int(byte), e5m2)
            got = struct.unpack("<f", int(bits, 16).to_bytes(4, "little"))[0]
            assert (got != got and want != want) or got == want, (byte, e5m2, got, want)
    assert "mma 128" in lines, lines[-1]


BF16X2_ADD_CHECK = r"""#include <cstdio>
int main() {
  unsigned s = 2463534242u;
  for (int i = 0; i < 4096; ++i) {
    s ^= s << 13; s ^= s >> 17; s ^= s << 5; unsigned a = s;
    s ^= s << 13; s ^= s >> 17; s ^= s << 5; unsigned b = s;
    if (i % 4 == 0) b = (b & 0x807F807Fu) | (a & 0x7F807F80u);  // equal exponents: sums that carry and cancel
    printf("%08x %08x %08x\n", a, b, rocmig_ptx::add_bf16x2(a, b));
  }
  return 0;
}
"""


def _bf16_exact_sum(a: int, b: int) -> int | None:
    """The bf16 nearest (ties to even) to the exact sum of two bf16 bit patterns; None for NaN or infinite
    inputs or results (their bits are the canonical NaN / infinity, checked apart)."""
    from fractions import Fraction

    def value(h: int) -> Fraction | None:
        exponent, mantissa = (h >> 7) & 0xFF, h & 0x7F
        if exponent == 0xFF:
            return None
        v = Fraction(mantissa, 128) * Fraction(2) ** -126 if exponent == 0 else (1 + Fraction(mantissa, 128)) * Fraction(2) ** (exponent - 127)
        return -v if h & 0x8000 else v
    x, y = value(a), value(b)
    if x is None or y is None:
        return None
    total = x + y
    if total == 0:
        return 0x8000 if (a & b & 0x8000) else 0
    sign = 0x8000 if total < 0 else 0
    magnitude = abs(total)
    exponent = max(magnitude.numerator.bit_length() - magnitude.denominator.bit_length(), -126)
    while Fraction(2) ** exponent > magnitude:
        exponent -= 1
    exponent = max(exponent, -126)
    ulp = Fraction(2) ** (exponent - 7)
    q, r = divmod(magnitude, ulp)
    q = int(q) + (1 if r > ulp / 2 or (r == ulp / 2 and int(q) % 2) else 0)
    if q * ulp >= Fraction(2) ** 128:
        return None
    e = exponent
    if q >= 256:  # rounding carried into the next binade
        q //= 2
        e += 1
    biased = 0 if q < 128 else e + 127
    return sign | (biased << 7) | (q & 0x7F)


def test_bf16_pair_atomic_add_rounds_each_half_as_the_exact_sum(tmp_path: Path) -> None:
    """red.global.add.noftz.bf16x2's C++ form adds each bf16 half through float and rounds to nearest
    even: the same bf16 as the exact sum, on 4096 random pairs (and pairs of equal exponents)."""
    image_or_skip()
    checked = 0
    for line in _run_on_host(tmp_path, BF16X2_ADD_CHECK):
        a, b, got = (int(x, 16) for x in line.split())
        for shift in (0, 16):
            want = _bf16_exact_sum((a >> shift) & 0xFFFF, (b >> shift) & 0xFFFF)
            if want is not None:
                assert (got >> shift) & 0xFFFF == want, (hex(a), hex(b), shift, hex(got), hex(want))
                checked += 1
    assert checked > 6000



VOLATILE_ACCESSES = r"""#include <cstdio>
#include <cstring>
struct float4 { float x, y, z, w; };
// the scopes of clang's __hip_atomic_* builtins, which HIP's headers name (clang's AtomicScopeModel values)
enum { __HIP_MEMORY_SCOPE_AGENT = 3, __HIP_MEMORY_SCOPE_SYSTEM = 5 };
// vLLM 0.34.0 minimax_reduce_rms_kernel.cu's Lamport buffer accesses
float4 ld_global_volatile(float4* addr) {
  float4 val;
  asm volatile("ld.volatile.global.v4.f32 {%0, %1, %2, %3}, [%4];"
               : "=f"(val.x), "=f"(val.y), "=f"(val.z), "=f"(val.w)
               : "l"(addr));
  return val;
}
void st_global_volatile(float4* addr, float4 v) {
  asm volatile("st.volatile.global.v4.f32 [%0], {%1, %2, %3, %4};" :: "l"(addr), "f"(v.x), "f"(v.y), "f"(v.z), "f"(v.w));
}
float ld_relaxed(float* addr) {
  float r;
  asm volatile("ld.relaxed.gpu.global.f32 %0, [%1];" : "=f"(r) : "l"(addr));
  return r;
}
int ld_volatile_s32(int* addr) {
  int r;
  asm volatile("ld.volatile.global.s32 %0, [%1];" : "=r"(r) : "l"(addr));
  return r;
}
int main() {
  const unsigned in[4] = {0x3fc00000u, 0xc0100000u, 0x7fc01234u, 0x7f7fffffu};  // 1.5, -2.25, a NaN payload, FLT_MAX
  float4 src, dst;
  std::memcpy(&src, in, 16);
  st_global_volatile(&dst, ld_global_volatile(&src));
  float y = ld_relaxed(&src.y);
  int neg = -7;
  unsigned out[5];
  std::memcpy(out, &dst, 16);
  std::memcpy(out + 4, &y, 4);
  std::printf("%08x %08x %08x %08x %08x %d\n", out[0], out[1], out[2], out[3], out[4], ld_volatile_s32(&neg));
  return 0;
}
"""


def test_volatile_vector_and_float_loads_keep_the_bits(tmp_path: Path) -> None:
    # relaxed / volatile accesses become HIP's scoped atomics, a .v4 one per lane; a float's bits are moved, not its value
    image_or_skip()
    program = VOLATILE_ACCESSES
    for stmt in reversed(ptx.statements(program)):
        program = program[:stmt.start] + ptx.translate(stmt, cuda_warps=True) + program[stmt.end:]
    assert "asm volatile" not in program
    assert _run_on_host(tmp_path, program) == ["3fc00000 c0100000 7fc01234 7f7fffff c0100000 -7"]
