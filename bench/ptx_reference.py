"""Reference results of inline PTX on an NVIDIA GPU, for the exactness test of migrate's PTX translation.

Each case is an asm statement as real CUDA code writes it (AWQ / Marlin / exllama dequantization, the
CUDA samples, hand-written integer and f16 code). On a machine with nvcc and an NVIDIA GPU:

    python3 bench/ptx_reference.py --out tests/data/ptx_reference.json

compiles one kernel per case (`nvcc -arch=sm_90`), runs it on SAMPLES random inputs (fixed seed) and
writes the cases, inputs and outputs (bits, hex). tests/images/test_ptx_exact.py builds the same harness
with each asm statement replaced by migrate's translation (recipes/migrate/migrate/ptx.py) and compares
the outputs bit for bit (any NaN matches any NaN: NVIDIA returns its canonical NaN, C++ keeps payloads).
"""

from __future__ import annotations

import argparse
import json
import random
import struct
import subprocess
import sys
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path

SAMPLES = 512
SEED = 20261206


@dataclass(frozen=True)
class Case:
    """One asm statement: ins/outs are (C type, name, generator) with generator one of bits (random
    bits of the type), shift (0..70), float (a float in [-2^20, 2^20]); init: outputs read before the asm
    (`+r`) start from the input of that name; mem: the statement reads or writes `mem`, four uint32_t
    that start as four more random inputs and are outputs afterwards; host: for a CUDA intrinsic rather than
    asm (`asm` is then CUDA code calling it), the rocmig helper call the host side runs instead."""
    name: str
    asm: str
    ins: tuple[tuple[str, str, str], ...]
    outs: tuple[tuple[str, str], ...]
    init: dict[str, str] = field(default_factory=dict)
    mem: bool = False
    host: str = ""


def _u(name: str, gen: str = "bits") -> tuple[str, str, str]:
    return ("uint32_t", name, gen)


LUTS = (0xEA, 0x96, 0x1E, 0xF8, 0xE4, 0x6A, 0x00, 0xFF, 0x78, 0xB4)
CASES: list[Case] = [
    *(Case(f"lop3_{lut:02x}", f'asm volatile("lop3.b32 %0, %1, %2, %3, {lut:#04x};\\n" : "=r"(d) : "r"(a), "r"(b), "r"(c));',
           (_u("a"), _u("b"), _u("c")), (("uint32_t", "d"),)) for lut in LUTS),
    Case("lop3_awq_dequant", 'asm volatile("lop3.b32 %0, %1, %2, %3, %4;\\n" : "=r"(d) : "r"(a), "n"(0x000f000f), '
         '"n"(0x64006400), "n"((0xf0 & 0xcc) | 0xaa));', (_u("a"),), (("uint32_t", "d"),)),
    Case("vabsdiff4_add", 'asm("vabsdiff4.u32.u32.u32.add %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(c));',
         (_u("a"), _u("b"), _u("c")), (("uint32_t", "d"),)),
    Case("prmt_register", 'asm("prmt.b32 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(c));',
         (_u("a"), _u("b"), _u("c")), (("uint32_t", "d"),)),
    Case("prmt_5140", 'asm volatile("prmt.b32 %0, %1, %2, %3;\\n" : "=r"(d) : "r"(a), "n"(0x64006400), "n"(0x5140));',
         (_u("a"),), (("uint32_t", "d"),)),
    Case("prmt_sign", 'asm volatile("prmt.b32 %0, %1, %2, 0x9B8A;" : "=r"(d) : "r"(a), "r"(b));',
         (_u("a"), _u("b")), (("uint32_t", "d"),)),
    Case("sub_f16x2", 'asm volatile("sub.f16x2 %0, %1, %2;\\n" : "=r"(d) : "r"(a), "r"(b));',
         (_u("a"), _u("b")), (("uint32_t", "d"),)),
    Case("add_f16x2", 'asm("add.f16x2 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));', (_u("a"), _u("b")), (("uint32_t", "d"),)),
    Case("mul_rn_f16x2", 'asm("mul.rn.f16x2 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));', (_u("a"), _u("b")),
         (("uint32_t", "d"),)),
    Case("fma_rn_f16x2", 'asm volatile("fma.rn.f16x2 %0, %1, %2, %3;\\n" : "=r"(d) : "r"(a), "r"(b), "r"(c));',
         (_u("a"), _u("b"), _u("c")), (("uint32_t", "d"),)),
    Case("fma_awq_scale", 'asm volatile("fma.rn.f16x2 %0, %1, %2, %3;\\n" : "=r"(d) : "r"(a), "r"(0x2c002c00), "r"(0xd400d400));',
         (_u("a"),), (("uint32_t", "d"),)),
    Case("add_f16", 'asm("add.f16 %0, %1, %2;" : "=h"(d) : "h"(a), "h"(b));',
         (("uint16_t", "a", "bits"), ("uint16_t", "b", "bits")), (("uint16_t", "d"),)),
    Case("fma_rn_f16", 'asm("fma.rn.f16 %0, %1, %2, %3;" : "=h"(d) : "h"(a), "h"(b), "h"(c));',
         (("uint16_t", "a", "bits"), ("uint16_t", "b", "bits"), ("uint16_t", "c", "bits")), (("uint16_t", "d"),)),
    Case("add_rn_f32", 'asm("add.rn.f32 %0, %1, %2;" : "=f"(d) : "f"(a), "f"(b));',
         (("float", "a", "float"), ("float", "b", "float")), (("float", "d"),)),
    Case("fma_rn_f32", 'asm("fma.rn.f32 %0, %1, %2, %3;" : "=f"(d) : "f"(a), "f"(b), "f"(c));',
         (("float", "a", "float"), ("float", "b", "float"), ("float", "c", "float")), (("float", "d"),)),
    Case("cvt_rn_f16x2_f32", 'asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(d) : "f"(a), "f"(b));',
         (("float", "a", "float"), ("float", "b", "bits")), (("uint32_t", "d"),)),
    Case("cvt_rn_f16_f32", 'asm("cvt.rn.f16.f32 %0, %1;" : "=h"(d) : "f"(a));', (("float", "a", "float"),),
         (("uint16_t", "d"),)),
    *(Case(name, f"{{ __half2 r = __{name}(*reinterpret_cast<const __half2*>(&a), *reinterpret_cast<const __half2*>(&b)); "
                 f"d = *reinterpret_cast<uint32_t*>(&r); }}", (_u("a", "h2mix"), _u("b", "h2mix")), (("uint32_t", "d"),),
           host=f"d = rocmig_ptx::h2minmax(a, b, {str('max' in name).lower()}, {str('nan' in name).lower()});")
      for name in ("hmax2", "hmin2", "hmax2_nan", "hmin2_nan")),
    Case("cvt_rn_bf16x2_f32", 'asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(d) : "f"(a), "f"(b));',
         (("float", "a", "bits"), ("float", "b", "float")), (("uint32_t", "d"),)),
    Case("cvt_rn_bf16_f32", 'asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(d) : "f"(a));', (("float", "a", "bits"),),
         (("uint16_t", "d"),)),
    Case("cvt_f32_bf16", 'asm("cvt.f32.bf16 %0, %1;" : "=f"(d) : "h"(a));', (("uint16_t", "a", "bits"),), (("float", "d"),)),
    Case("cvt_rn_f32_s32", 'asm("cvt.rn.f32.s32 %0, %1;" : "=f"(d) : "r"(a));', (("int32_t", "a", "bits"),), (("float", "d"),)),
    Case("cvt_rzi_s32_f32", 'asm("cvt.rzi.s32.f32 %0, %1;" : "=r"(d) : "f"(a));', (("float", "a", "bits"),),
         (("int32_t", "d"),)),
    Case("cvt_rni_s32_f32", 'asm("cvt.rni.s32.f32 %0, %1;" : "=r"(d) : "f"(a));', (("float", "a", "float"),),
         (("int32_t", "d"),)),
    Case("cvt_f32_f16", 'asm("cvt.f32.f16 %0, %1;" : "=f"(d) : "h"(a));', (("uint16_t", "a", "bits"),), (("float", "d"),)),
    Case("mov_pack_b32", 'asm("mov.b32 %0, {%1, %2};" : "=r"(d) : "h"(a), "h"(b));',
         (("uint16_t", "a", "bits"), ("uint16_t", "b", "bits")), (("uint32_t", "d"),)),
    Case("mov_unpack_b32", 'asm("mov.b32 {%0, %1}, %2;" : "=h"(lo), "=h"(hi) : "r"(a));', (_u("a"),),
         (("uint16_t", "lo"), ("uint16_t", "hi"))),
    Case("mov_pack_b64", 'asm("mov.b64 %0, {%1, %2};" : "=l"(d) : "r"(a), "r"(b));', (_u("a"), _u("b")),
         (("uint64_t", "d"),)),
    Case("shl_b32", 'asm("shl.b32 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(n));', (_u("a"), _u("n", "shift")), (("uint32_t", "d"),)),
    Case("shr_u32", 'asm("shr.u32 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(n));', (_u("a"), _u("n", "shift")), (("uint32_t", "d"),)),
    Case("shr_s32", 'asm("shr.s32 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(n));', (("int32_t", "a", "bits"), _u("n", "shift")),
         (("int32_t", "d"),)),
    Case("shr_s64", 'asm("shr.s64 %0, %1, %2;" : "=l"(d) : "l"(a), "r"(n));', (("int64_t", "a", "bits"), _u("n", "shift")),
         (("int64_t", "d"),)),
    Case("int_alu", 'asm("{\\n\\t.reg .b32 t<3>;\\n\\tadd.u32 t0, %1, %2;\\n\\tmul.lo.u32 t1, t0, %3;\\n\\t'
         'xor.b32 t2, t1, %1;\\n\\tnot.b32 t2, t2;\\n\\tmad.lo.s32 %0, t2, %2, %3;\\n}" : "=r"(d) : "r"(a), "r"(b), "r"(c));',
         (_u("a"), _u("b"), _u("c")), (("uint32_t", "d"),)),
    Case("mul_wide_s32", 'asm("mul.wide.s32 %0, %1, %2;" : "=l"(d) : "r"(a), "r"(b));',
         (("int32_t", "a", "bits"), ("int32_t", "b", "bits")), (("int64_t", "d"),)),
    Case("mul_wide_u32", 'asm("mul.wide.u32 %0, %1, %2;" : "=l"(d) : "r"(a), "r"(b));', (_u("a"), _u("b")),
         (("uint64_t", "d"),)),
    Case("min_max", 'asm("{\\n.reg .s32 m;\\nmin.s32 m, %1, %2;\\nmax.u32 %0, m, %3;\\n}" : "=r"(d) : "r"(a), "r"(b), "r"(c));',
         (("int32_t", "a", "bits"), ("int32_t", "b", "bits"), _u("c")), (("uint32_t", "d"),)),
    Case("setp_selp", 'asm("{\\n  .reg .pred p;\\n  setp.lt.s32 p, %1, %2;\\n  selp.b32 %0, %3, %4, p;\\n}" '
         ': "=r"(d) : "r"(a), "r"(b), "r"(c), "r"(e));',
         (("int32_t", "a", "bits"), ("int32_t", "b", "bits"), _u("c"), _u("e")), (("uint32_t", "d"),)),
    Case("guarded_add", 'asm volatile("{\\n .reg .pred p;\\n setp.hi.u32 p, %1, %2;\\n @p add.u32 %0, %0, %1;\\n'
         ' @!p sub.u32 %0, %0, %2;\\n}\\n" : "+r"(d) : "r"(a), "r"(b));',
         (_u("a"), _u("b"), _u("d0")), (("uint32_t", "d"),), init={"d": "d0"}),
    Case("cvt_ints", 'asm("{\\n.reg .b64 w;\\ncvt.s64.s32 w, %1;\\ncvt.u32.u64 %0, w;\\nshr.u64 w, w, 32;\\n'
         'cvt.u32.u64 %1, w;\\n}" : "=r"(d), "+r"(a));', (_u("a0"),), (("uint32_t", "d"), ("uint32_t", "a")),
         init={"a": "a0"}),
    Case("ld_global_nc_v4", 'asm volatile("ld.global.nc.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(x), "=r"(y), "=r"(z), '
         '"=r"(w) : "l"(mem));', (), (("uint32_t", "x"), ("uint32_t", "y"), ("uint32_t", "z"), ("uint32_t", "w")), mem=True),
    Case("ld_global_s8_offset", 'asm("ld.global.s8 %0, [%1+5];" : "=r"(d) : "l"(mem));', (), (("int32_t", "d"),), mem=True),
    Case("st_global_cs_v2", 'asm volatile("st.global.cs.v2.u32 [%0+8], {%1, %2};" :: "l"(mem), "r"(a), "r"(b) : "memory");',
         (_u("a"), _u("b")), (), mem=True),
]


WARPS = 64  # samples of each warp case: one 32-lane warp each


@dataclass(frozen=True)
class WarpCase:
    """A warp-wide asm statement (mma.sync, ldmatrix): ins/outs per lane as in Case, with generators
    f16int / bf16int (two 16-bit floats of small integers, -8..8, so every sum is exact whatever the
    order), f16rand (two 16-bit floats in [-1, 1]), f32int (a float of a small integer), bits, row
    (0..31: the lane's row of the warp's shared tile, given to the statement as `addr`, its shared
    address); tile: the warp has a shared tile of 32 rows of 16 bytes (128 random words)."""
    name: str
    asm: str
    ins: tuple[tuple[str, str, str], ...]
    outs: tuple[tuple[str, str], ...]
    tile: bool = False


def _regs(prefix: str, n: int, gen: str, ctype: str = "uint32_t") -> tuple[tuple[str, str, str], ...]:
    return tuple((ctype, f"{prefix}{i}", gen) for i in range(n))


def _outs(prefix: str, n: int, ctype: str = "uint32_t") -> tuple[tuple[str, str], ...]:
    return tuple((ctype, f"{prefix}{i}") for i in range(n))


def _mma(shape: str, types: str, a: int, b: int, c: int, float_acc: bool) -> str:
    letters = "f" if float_acc else "r"
    ops = [f"%{i}" for i in range(c + a + b + c)]
    d_ops, a_ops = ops[:c], ops[c:c + a]
    b_ops, c_ops = ops[c + a:c + a + b], ops[c + a + b:]
    outs = ", ".join(f'"={letters}"(d{i})' for i in range(c))
    ins = ", ".join([*(f'"r"(a{i})' for i in range(a)), *(f'"r"(b{i})' for i in range(b)),
                     *(f'"{letters}"(c{i})' for i in range(c))])
    return (f'asm volatile("mma.sync.aligned.{shape}.row.col.{types} {{{", ".join(d_ops)}}}, {{{", ".join(a_ops)}}}, '
            f'{{{", ".join(b_ops)}}}, {{{", ".join(c_ops)}}};\\n" : {outs} : {ins});')


def _mma_case(name: str, shape: str, types: str, a: int, b: int, c: int, gen: str, acc_gen: str,
              float_acc: bool) -> WarpCase:
    acc_type = "float" if float_acc else "uint32_t"
    return WarpCase(name, _mma(shape, types, a, b, c, float_acc),
                    _regs("a", a, gen) + _regs("b", b, gen) + _regs("c", c, acc_gen, acc_type), _outs("d", c, acc_type))


WARP_CASES: list[WarpCase] = [
    *(WarpCase(f"ldmatrix_{x}{'_trans' if trans else ''}",
               f'asm volatile("ldmatrix.sync.aligned.m8n8.{x}{".trans" if trans else ""}.shared.b16 '
               f'{{{", ".join(f"%{i}" for i in range(int(x[1])))}}}, [%{int(x[1])}];\\n" : '
               f'{", ".join(f"{chr(34)}=r{chr(34)}(d{i})" for i in range(int(x[1])))} : "r"(addr));',
               (("uint32_t", "row", "row"),), _outs("d", int(x[1])), tile=True)
      for x in ("x1", "x2", "x4") for trans in (False, True)),
    _mma_case("mma_m16n8k16_f32_f16", "m16n8k16", "f32.f16.f16.f32", 4, 2, 4, "f16int", "f32int", True),
    _mma_case("mma_m16n8k16_f32_bf16", "m16n8k16", "f32.bf16.bf16.f32", 4, 2, 4, "bf16int", "f32int", True),
    _mma_case("mma_m16n8k16_f16_f16", "m16n8k16", "f16.f16.f16.f16", 4, 2, 2, "f16int", "f16int", False),
    _mma_case("mma_m16n8k8_f32_f16", "m16n8k8", "f32.f16.f16.f32", 2, 1, 4, "f16int", "f32int", True),
    _mma_case("mma_m16n8k16_f32_f16_random", "m16n8k16", "f32.f16.f16.f32", 4, 2, 4, "f16rand", "f32int", True),
    _mma_case("mma_m16n8k32_s32_s8_satfinite", "m16n8k32", "satfinite.s32.s8.s8.s32", 4, 2, 4, "bits", "bits", False),
    _mma_case("mma_m16n8k16_s32_u8_s8", "m16n8k16", "s32.u8.s8.s32", 2, 1, 4, "bits", "bits", False),
]


def warp_inputs(case: WarpCase, rng: random.Random) -> list[list[int]]:
    """One warp's inputs: 32 lanes' input bits, then the tile's 128 words as a 33rd list (empty
    without a tile)."""
    def f16(v: float) -> int:
        return struct.unpack("<H", struct.pack("<e", v))[0]

    def value(gen: str) -> int:
        if gen == "f16int":
            return f16(rng.randint(-8, 8)) | f16(rng.randint(-8, 8)) << 16
        if gen == "f16rand":
            return f16(rng.uniform(-1, 1)) | f16(rng.uniform(-1, 1)) << 16
        if gen == "bf16int":
            return (struct.unpack("<I", struct.pack("<f", rng.randint(-8, 8)))[0] >> 16) | \
                (struct.unpack("<I", struct.pack("<f", rng.randint(-8, 8)))[0] >> 16) << 16
        if gen == "f32int":
            return struct.unpack("<I", struct.pack("<f", rng.randint(-64, 64)))[0]
        if gen == "row":
            return rng.randrange(32)
        return rng.getrandbits(32)
    lanes = [[value(gen) for _ctype, _name, gen in case.ins] for _ in range(32)]
    return lanes + [[rng.getrandbits(32) for _ in range(128)] if case.tile else []]


def warp_harness(cases: list[WarpCase], bodies: list[str], qualifier: str) -> str:
    """C++ of the warp case functions: `run_warp_case_<i>(in, out, tile)` runs on one lane of a 32-lane
    warp; in: the lane's inputs, tile: the warp's 128 words of shared memory, whose address the macro
    ROCMIG_CVTA gives."""
    src = []
    for i, (case, body) in enumerate(zip(cases, bodies)):
        lines = [f"{qualifier} void run_warp_case_{i}(const uint64_t* in, uint64_t* out, uint32_t* tile) {{"]
        for k, (ctype, name, _gen) in enumerate(case.ins):
            lines.append(f"  {ctype} {name} = from_bits<{ctype}>(in[{k}]);")
        if case.tile:
            lines.append("  uint32_t addr = (uint32_t)ROCMIG_CVTA(tile + 4 * row);")
        lines.extend(f"  {ctype} {name} = 0;" for ctype, name in case.outs)
        lines.append(f"  {body}")
        lines.extend(f"  out[{k}] = to_bits({name});" for k, (_ctype, name) in enumerate(case.outs))
        lines.append("}")
        src.extend(lines)
    return "\n".join(src) + "\n"


def _flat_warps(case: WarpCase, warps: list[list[list[int]]]) -> str:
    values = []
    for warp in warps:
        for lane in warp[:32]:
            values.extend(lane)
        values.extend(warp[32] if case.tile else [])
    return ", ".join(f"{v:#x}ull" for v in values) or "0"


def warp_cuda_program(cases: list[WarpCase], data: list[list[list[list[int]]]]) -> str:
    """CUDA program of the warp cases: one 32-thread block per warp sample, printing
    `warp index warp lane out0 out1 ...` (hex)."""
    src = ["#include <cstdint>\n#include <cstring>\n#include <cstdio>",
           "template <class T> __device__ T from_bits(uint64_t b) { T v; memcpy(&v, &b, sizeof v); return v; }",
           "template <class T> __device__ uint64_t to_bits(T v) { uint64_t b = 0; memcpy(&b, &v, sizeof v); return b; }",
           "#define ROCMIG_CVTA(p) __cvta_generic_to_shared(p)", warp_harness(cases, [c.asm for c in cases], "__device__")]
    for i, case in enumerate(cases):
        n_in, stride = len(case.ins), 32 * len(case.ins) + (128 if case.tile else 0)
        src.append(f"__global__ void w{i}(const uint64_t* in, uint64_t* out) {{\n  __shared__ uint32_t tile[128];\n"
                   f"  const uint64_t* warp = in + blockIdx.x * {stride};\n"
                   + (f"  for (int w = threadIdx.x; w < 128; w += 32) tile[w] = (uint32_t)warp[{32 * n_in} + w];\n"
                      "  __syncthreads();\n" if case.tile else "")
                   + f"  run_warp_case_{i}(warp + threadIdx.x * {n_in}, out + (blockIdx.x * 32 + threadIdx.x) * "
                     f"{len(case.outs)}, tile);\n}}")
    src.append("int main() {\n  uint64_t *in, *out;\n  cudaMallocManaged(&in, 1 << 24);\n  cudaMallocManaged(&out, 1 << 24);")
    for i, case in enumerate(cases):
        src.append(f"  {{ static const uint64_t d[] = {{{_flat_warps(case, data[i])}}};\n    memcpy(in, d, sizeof d);\n"
                   f"    w{i}<<<{len(data[i])}, 32>>>(in, out);\n"
                   f"    if (cudaDeviceSynchronize() != cudaSuccess) {{ printf(\"error {i}\\n\"); return 1; }}\n"
                   f"    for (int t = 0; t < {len(data[i]) * 32}; ++t) {{ printf(\"warp {i} %d %d\", t / 32, t % 32);\n"
                   f"      for (int k = 0; k < {len(case.outs)}; ++k) printf(\" %llx\", (unsigned long long)out[t * "
                   f"{len(case.outs)} + k]);\n      printf(\"\\n\"); }} }}")
    src.append("  return 0;\n}")
    return "\n".join(src) + "\n"


# The host's stand-ins for a warp: 32 threads in lockstep; __shfl trades values through a slot array
# between two barriers, and the shared tile sits below 4 GiB (MAP_32BIT) so its 32-bit shared address
# is its address.
HOST_PRELUDE = """#include <barrier>
#include <cstdint>
static thread_local unsigned rocmig_host_lane;
static std::barrier<>* rocmig_host_barrier;
static int rocmig_host_slots[32];
inline unsigned __lane_id() { return rocmig_host_lane; }
inline int __shfl(int v, int src, int width) {
  rocmig_host_slots[rocmig_host_lane] = v;
  rocmig_host_barrier->arrive_and_wait();
  int r = rocmig_host_slots[(rocmig_host_lane & ~(unsigned)(width - 1)) + ((unsigned)src & (unsigned)(width - 1))];
  rocmig_host_barrier->arrive_and_wait();
  return r;
}
"""


def warp_host_program(cases: list[WarpCase], data: list[list[list[list[int]]]], bodies: list[str]) -> str:
    """The warp cases on the host (HOST_PRELUDE's lockstep threads), printing the same lines."""
    src = ["#include <sys/mman.h>\n#include <thread>\n#include <vector>\n#include <cstring>\n#include <cstdio>",
           "template <class T> T from_bits(uint64_t b) { T v; memcpy(&v, &b, sizeof v); return v; }",
           "template <class T> uint64_t to_bits(T v) { uint64_t b = 0; memcpy(&b, &v, sizeof v); return b; }",
           "#define ROCMIG_CVTA(p) rocmig_ptx::cvta_generic_to_shared(p)", warp_harness(cases, bodies, ""),
           "int main() {\n  uint32_t* tile = (uint32_t*)mmap(nullptr, 4096, PROT_READ | PROT_WRITE, "
           "MAP_PRIVATE | MAP_ANONYMOUS | MAP_32BIT, -1, 0);\n  std::barrier<> barrier(32);\n"
           "  rocmig_host_barrier = &barrier;\n  static uint64_t out[32][16];"]
    for i, case in enumerate(cases):
        n_in, stride = len(case.ins), 32 * len(case.ins) + (128 if case.tile else 0)
        src.append(f"  {{ static const uint64_t d[] = {{{_flat_warps(case, data[i])}}};\n"
                   f"    for (int w = 0; w < {len(data[i])}; ++w) {{\n      const uint64_t* warp = d + w * {stride};\n"
                   + (f"      for (int k = 0; k < 128; ++k) tile[k] = (uint32_t)warp[{32 * n_in} + k];\n" if case.tile else "")
                   + "      std::vector<std::thread> lanes;\n      for (unsigned l = 0; l < 32; ++l)\n"
                     "        lanes.emplace_back([&, l] { rocmig_host_lane = l; "
                     f"run_warp_case_{i}(warp + l * {n_in}, out[l], tile); }});\n"
                     "      for (auto& t : lanes) t.join();\n"
                     f"      for (int l = 0; l < 32; ++l) {{ printf(\"warp {i} %d %d\", w, l);\n"
                     f"        for (int k = 0; k < {len(case.outs)}; ++k) printf(\" %llx\", (unsigned long long)out[l][k]);\n"
                     "        printf(\"\\n\"); } } }")
    src.append("  return 0;\n}")
    return "\n".join(src) + "\n"


def inputs(case: Case, rng: random.Random) -> list[int]:
    """One sample's input bits (mem words last)."""
    sizes = {"uint16_t": 16, "uint32_t": 32, "int32_t": 32, "float": 32, "uint64_t": 64, "int64_t": 64}
    out = []
    for ctype, _name, gen in case.ins:
        if gen == "h2mix":  # two halves from signed zeros, infinities, NaNs, +-1 and random bits
            special = (0x0000, 0x8000, 0x7C00, 0xFC00, 0x7E00, 0x7FFF, 0xFE01, 0x3C00, 0xBC00)
            out.append(sum((rng.choice(special) if rng.random() < 0.6 else rng.getrandbits(16)) << (16 * k) for k in (0, 1)))
        elif gen == "shift":
            out.append(rng.randrange(0, 71))
        elif gen == "float":
            out.append(struct.unpack("<I", struct.pack("<f", rng.uniform(-2.0**20, 2.0**20) * rng.choice((1, 2.0**-30))))[0])
        else:
            out.append(rng.getrandbits(sizes[ctype]))
    return out + ([rng.getrandbits(32) for _ in range(4)] if case.mem else [])


def n_inputs(case: Case) -> int:
    return len(case.ins) + (4 if case.mem else 0)


def n_outputs(case: Case) -> int:
    return len(case.outs) + (4 if case.mem else 0)


def harness(cases: list[Case], bodies: list[str], qualifier: str) -> str:
    """C++ source of the case functions, `body` in place of each case's asm: `run_case_<i>(in, out, mem)`
    reads its inputs (uint64_t bit patterns) and writes n_outputs(case); mem: four uint32_t of the
    sample's own (global memory on the GPU), which the caller fills with the sample's last four input
    words before the call (a kernel must not write what ld.global.nc reads); qualifier: `__device__` (nvcc) or `` (host)."""
    src = ["#include <cstdint>", "#include <cstring>", "#include <cstdio>",
           "#if defined(__CUDACC__)\n#include <cuda_fp16.h>\n#endif",
           "template <class T> __host__ __device__ T from_bits(uint64_t b) { T v; memcpy(&v, &b, sizeof v); return v; }",
           "template <class T> __host__ __device__ uint64_t to_bits(T v) { uint64_t b = 0; memcpy(&b, &v, sizeof v); return b; }"]
    for i, (case, body) in enumerate(zip(cases, bodies)):
        lines = [f"{qualifier} void run_case_{i}(const uint64_t* in, uint64_t* out, uint32_t* mem) {{"]
        for k, (ctype, name, _gen) in enumerate(case.ins):
            lines.append(f"  {ctype} {name} = from_bits<{ctype}>(in[{k}]);")
        for ctype, name in case.outs:
            if name in case.init:
                continue
            lines.append(f"  {ctype} {name} = 0;")
        for name, source in case.init.items():
            ctype = next(t for t, n in case.outs if n == name)
            lines.append(f"  {ctype} {name} = {source};")
        lines.append(f"  {body}")
        for k, (_ctype, name) in enumerate(case.outs):
            lines.append(f"  out[{k}] = to_bits({name});")
        if case.mem:
            lines.extend(f"  out[{len(case.outs) + w}] = mem[{w}];" for w in range(4))
        lines.append("}")
        src.extend(lines)
    return "\n".join(src) + "\n"


def _fill_mem(case: Case, target: str, data: str) -> str:
    """C++ lines that copy sample s's four mem input words from `data` to `target` (none without mem)."""
    if not case.mem:
        return ""
    stride = n_inputs(case)
    copy = "".join(f"{target}[{w}] = (uint32_t){data}[s * {stride} + {len(case.ins) + w}]; " for w in range(4))
    if target == "mem":
        return f"      {copy}\n"
    return f"    for (int s = 0; s < {SAMPLES}; ++s) {{ {copy}}}\n"


def cuda_program(cases: list[Case], data: list[list[list[int]]]) -> str:
    """The whole CUDA program: harness with the real asm, one kernel per case over its samples, printing
    one line `case index out0 out1 ...` (hex) per sample."""
    src = [harness(cases, [c.asm for c in cases], "__device__")]
    for i, case in enumerate(cases):
        src.append(f"__global__ void k{i}(const uint64_t* in, uint64_t* out, uint32_t* mem, int n) {{ int s = blockIdx.x * "
                   f"blockDim.x + threadIdx.x; if (s < n) run_case_{i}(in + s * {max(n_inputs(case), 1)}, out + s * "
                   f"{max(n_outputs(case), 1)}, mem + 4 * s); }}")
    src.append("int main() {\n  uint64_t *in, *out;\n  uint32_t* mem;\n  cudaMallocManaged(&in, 1 << 20);\n  cudaMallocManaged(&out, 1 << 20);\n  cudaMallocManaged(&mem, 1 << 20);")
    for i, case in enumerate(cases):
        flat = [v for sample in data[i] for v in (sample or [0])]
        src.append(f"  {{ static const uint64_t d[] = {{{', '.join(f'{v:#x}ull' for v in flat)}}};\n"
                   f"    memcpy(in, d, sizeof d);\n{_fill_mem(case, '(mem + 4 * s)', 'd')}    k{i}<<<({SAMPLES} + 127) / 128, 128>>>(in, out, mem, {SAMPLES});\n"
                   f"    if (cudaDeviceSynchronize() != cudaSuccess) {{ printf(\"error {i}\\n\"); return 1; }}\n"
                   f"    for (int s = 0; s < {SAMPLES}; ++s) {{ printf(\"case {i} %d\", s);\n"
                   f"      for (int k = 0; k < {n_outputs(case)}; ++k) printf(\" %llx\", (unsigned long long)out[s * "
                   f"{max(n_outputs(case), 1)} + k]);\n      printf(\"\\n\"); }} }}")
    src.append("  return 0;\n}")
    return "\n".join(src) + "\n"


def host_program(cases: list[Case], data: list[list[list[int]]], bodies: list[str]) -> str:
    """The same harness for the host with `bodies` in place of the asm, printing the same lines."""
    src = [harness(cases, bodies, ""), "int main() {\n  static uint64_t out[64];\n  static uint32_t mem[4];"]
    for i, case in enumerate(cases):
        flat = [v for sample in data[i] for v in (sample or [0])]
        stride = max(n_inputs(case), 1)
        src.append(f"  {{ static const uint64_t d[] = {{{', '.join(f'{v:#x}ull' for v in flat)}}};\n"
                   f"    for (int s = 0; s < {len(data[i])}; ++s) {{\n{_fill_mem(case, 'mem', 'd')}"
                   f"      run_case_{i}(d + s * {stride}, out, mem);\n"
                   f"      printf(\"case {i} %d\", s);\n"
                   f"      for (int k = 0; k < {n_outputs(case)}; ++k) printf(\" %llx\", (unsigned long long)out[k]);\n"
                   f"      printf(\"\\n\"); }} }}")
    src.append("  return 0;\n}")
    return "\n".join(src) + "\n"


def sample_inputs() -> list[list[list[int]]]:
    rng = random.Random(SEED)
    return [[inputs(case, rng) for _ in range(SAMPLES)] for case in CASES]


def warp_sample_inputs() -> list[list[list[list[int]]]]:
    rng = random.Random(SEED + 1)
    return [[warp_inputs(case, rng) for _ in range(WARPS)] for case in WARP_CASES]


def _build_and_run(source: str, tmp: Path, name: str, arch: str) -> str:
    cu = tmp / f"{name}.cu"
    cu.write_text(source, encoding="utf-8")
    subprocess.run(["nvcc", f"-arch={arch}", "-O2", "-o", str(tmp / name), str(cu)], check=True)
    return subprocess.run([str(tmp / name)], check=True, capture_output=True, text=True).stdout


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, required=True, help="JSON file to write")
    parser.add_argument("--arch", default="sm_90", help="nvcc -arch (default sm_90)")
    args = parser.parse_args(argv)
    data, warp_data = sample_inputs(), warp_sample_inputs()
    with tempfile.TemporaryDirectory() as tmp:
        scalar = _build_and_run(cuda_program(CASES, data), Path(tmp), "scalar", args.arch)
        warp = _build_and_run(warp_cuda_program(WARP_CASES, warp_data), Path(tmp), "warp", args.arch)
    gpu = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                         capture_output=True, text=True).stdout.strip()
    nvcc = subprocess.run(["nvcc", "--version"], capture_output=True, text=True).stdout.strip().splitlines()[-1]
    outputs: list[list[list[int]]] = [[[] for _ in range(SAMPLES)] for _ in CASES]
    for line in scalar.splitlines():
        _word, case, sample, *values = line.split()
        outputs[int(case)][int(sample)] = [int(v, 16) for v in values]
    warp_outputs: list[list[list[list[int]]]] = [[[[] for _ in range(32)] for _ in range(WARPS)] for _ in WARP_CASES]
    for line in warp.splitlines():
        _word, case, sample, lane, *values = line.split()
        warp_outputs[int(case)][int(sample)][int(lane)] = [int(v, 16) for v in values]
    hexed = lambda rows: [[f"{v:x}" for v in row] for row in rows]  # noqa: E731
    result = {"gpu": gpu, "nvcc": nvcc, "arch": args.arch, "seed": SEED, "samples": SAMPLES, "warps": WARPS,
              "cases": [dict(asdict(case), inputs=hexed(data[i]), outputs=hexed(outputs[i])) for i, case in enumerate(CASES)],
              "warp_cases": [dict(asdict(case), inputs=[hexed(w) for w in warp_data[i]],
                                  outputs=[hexed(w) for w in warp_outputs[i]]) for i, case in enumerate(WARP_CASES)]}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=None, separators=(",", ":")) + "\n", encoding="utf-8")
    print(f"ptx_reference: {len(CASES)} cases x {SAMPLES} samples, {len(WARP_CASES)} warp cases x {WARPS} warps "
          f"on {gpu} -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
