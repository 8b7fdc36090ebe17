"""Reference results of CUDA's cuda_fp8.h on an NVIDIA GPU, for the exactness test of migrate's OCP FP8
header (recipes/migrate/migrate/cuda_fp8_ocp.h).

One harness (HARNESS below) evaluates each conversion of cuda_fp8.h (35 outputs) on a fixed input set: every half and
bfloat16 bit pattern, every E4M3 / E5M2 byte and pair, the floats of every half plus 16384 random float
bit patterns and the overflow / rounding boundaries (448, 464, 480, 57344, 61440, their neighbours,
infinities, NaNs), with both saturation modes. On a machine with nvcc and an NVIDIA GPU:

    python3 bench/fp8_reference.py --out tests/images/sources/fp8_reference.json

runs it in device code (`nvcc -arch=sm_90`: the hardware cvt instructions of sm_89 and later where
cuda_fp8.hpp uses them) and writes each output as zlib-compressed hex. tests/images/test_fp8_exact.py
builds the same harness against cuda_fp8_ocp.h with the dev image's hipcc, runs it on the host CPU and
compares every byte.
"""

from __future__ import annotations

import argparse
import base64
import json
import subprocess
import sys
import tempfile
import zlib
from pathlib import Path

# (name, count expression, bytes per entry); the harness's eval() writes entry i of output `fn`
OUTPUTS = (
    ("f_e4_sat", "N_F", 1), ("f_e4_nosat", "N_F", 1), ("f_e5_sat", "N_F", 1), ("f_e5_nosat", "N_F", 1),
    ("d_e4_sat", "N_F", 1), ("d_e4_nosat", "N_F", 1), ("d_e5_sat", "N_F", 1), ("d_e5_nosat", "N_F", 1),
    ("h_e4_sat", "65536", 1), ("h_e4_nosat", "65536", 1), ("h_e5_sat", "65536", 1), ("h_e5_nosat", "65536", 1),
    ("b_e4_sat", "65536", 1), ("b_e4_nosat", "65536", 1), ("b_e5_sat", "65536", 1), ("b_e5_nosat", "65536", 1),
    ("e4_to_half", "256", 2), ("e5_to_half", "256", 2),
    ("f2_e4_sat", "N_F", 2), ("f2_e5_sat", "N_F", 2), ("f2_e4_nosat", "N_F", 2), ("f2_e5_nosat", "N_F", 2),
    ("h2_e4_sat", "65536", 2), ("h2_e5_sat", "65536", 2),
    ("x2_e4_to_half2", "65536", 4), ("x2_e5_to_half2", "65536", 4),
    ("ctor_e4_float", "N_F", 1), ("ctor_e5_float", "N_F", 1), ("ctor_e4_half", "65536", 1),
    ("e4_to_float", "256", 4), ("e5_to_float", "256", 4),
    ("ctor_x4_e4_float4", "N_F / 4", 4), ("x4_e4_to_float4", "16384", 16),
    ("e4_to_ints", "256", 16), ("e5_to_ints", "256", 16),
)

HARNESS = r"""
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>
#include <cuda_fp8.h>

#define N_F (65536 + 16384 + 32)

__host__ __device__ inline uint32_t mix(uint32_t x) {  // a fixed hash: the random inputs of both sides
  x ^= x >> 16; x *= 0x7feb352dU; x ^= x >> 15; x *= 0x846ca68bU; x ^= x >> 16;
  return x;
}
__host__ __device__ inline float bits_float(uint32_t b) { float f; memcpy(&f, &b, 4); return f; }
__host__ __device__ inline uint32_t float_bits(float f) { uint32_t b; memcpy(&b, &f, 4); return b; }
__host__ __device__ inline float half_float(uint32_t h) {  // IEEE binary16 -> float, exact
  uint32_t sign = (h & 0x8000u) << 16, exp = (h >> 10) & 0x1Fu, man = h & 0x3FFu;
  if (exp == 0x1Fu) return bits_float(sign | 0x7F800000u | (man << 13));
  if (exp == 0u) {
    float v = (float)man * (1.0f / 16777216.0f);
    return sign ? -v : v;
  }
  return bits_float(sign | ((exp + 112u) << 23) | (man << 13));
}
__host__ __device__ inline float input_f(uint32_t i) {
  if (i < 65536u) return half_float(i);
  if (i < 65536u + 16384u) return bits_float(mix(i));
  const uint32_t special[32] = {0x00000000u, 0x80000000u, 0x7F800000u, 0xFF800000u, 0x7FC00000u, 0xFFC00000u,
      0x7F800001u, 0x43E00000u /* 448 */, 0x43E80000u /* 464 */, 0x43E80001u, 0x43E7FFFFu, 0x43F00000u /* 480 */,
      0x47600000u /* 57344 */, 0x47700000u /* 61440 */, 0x476FFFFFu, 0x47700001u, 0x3A800000u /* 2^-10 */,
      0x3A800001u, 0x3A7FFFFFu, 0x37000000u /* 2^-17 */, 0x37000001u, 0x36FFFFFFu, 0x3B000000u, 0x3B400000u,
      0xC3E80000u, 0xC7700000u, 0x3C800000u /* 2^-6 */, 0x38800000u /* 2^-14 */, 0x00000001u, 0x807FFFFFu,
      0x4F000000u, 0xCF000000u};
  return bits_float(special[i - 65536u - 16384u]);
}

__host__ __device__ inline void eval(int fn, uint32_t i, uint8_t* out) {
  const __nv_saturation_t S = __NV_SATFINITE, U = __NV_NOSAT;
  const __nv_fp8_interpretation_t E4 = __NV_E4M3, E5 = __NV_E5M2;
  const float f = input_f(i % N_F);
  __half_raw hr; hr.x = (unsigned short)i;
  BF16_RAW br; br.x = (unsigned short)i;
  uint16_t u16; uint32_t u32;
  switch (fn) {
    case 0: out[0] = __nv_cvt_float_to_fp8(f, S, E4); break;
    case 1: out[0] = __nv_cvt_float_to_fp8(f, U, E4); break;
    case 2: out[0] = __nv_cvt_float_to_fp8(f, S, E5); break;
    case 3: out[0] = __nv_cvt_float_to_fp8(f, U, E5); break;
    case 4: out[0] = __nv_cvt_double_to_fp8((double)f, S, E4); break;
    case 5: out[0] = __nv_cvt_double_to_fp8((double)f, U, E4); break;
    case 6: out[0] = __nv_cvt_double_to_fp8((double)f, S, E5); break;
    case 7: out[0] = __nv_cvt_double_to_fp8((double)f, U, E5); break;
    case 8: out[0] = __nv_cvt_halfraw_to_fp8(hr, S, E4); break;
    case 9: out[0] = __nv_cvt_halfraw_to_fp8(hr, U, E4); break;
    case 10: out[0] = __nv_cvt_halfraw_to_fp8(hr, S, E5); break;
    case 11: out[0] = __nv_cvt_halfraw_to_fp8(hr, U, E5); break;
    case 12: out[0] = __nv_cvt_bfloat16raw_to_fp8(br, S, E4); break;
    case 13: out[0] = __nv_cvt_bfloat16raw_to_fp8(br, U, E4); break;
    case 14: out[0] = __nv_cvt_bfloat16raw_to_fp8(br, S, E5); break;
    case 15: out[0] = __nv_cvt_bfloat16raw_to_fp8(br, U, E5); break;
    case 16: u16 = __nv_cvt_fp8_to_halfraw((__nv_fp8_storage_t)i, E4).x; memcpy(out, &u16, 2); break;
    case 17: u16 = __nv_cvt_fp8_to_halfraw((__nv_fp8_storage_t)i, E5).x; memcpy(out, &u16, 2); break;
    case 18: case 19: case 20: case 21: {
      float2 p = make_float2(f, input_f((i * 7919u + 13u) % N_F));
      u16 = __nv_cvt_float2_to_fp8x2(p, fn < 20 ? S : U, (fn % 2 == 0) ? E4 : E5);
      memcpy(out, &u16, 2); break;
    }
    case 22: case 23: {
      __half2_raw h2; u32 = (i & 0xFFFFu) | (((i * 40503u) & 0xFFFFu) << 16); memcpy(&h2, &u32, 4);
      u16 = __nv_cvt_halfraw2_to_fp8x2(h2, S, fn == 22 ? E4 : E5);
      memcpy(out, &u16, 2); break;
    }
    case 24: case 25: {
      __half2_raw h2 = __nv_cvt_fp8x2_to_halfraw2((__nv_fp8x2_storage_t)i, fn == 24 ? E4 : E5);
      memcpy(out, &h2, 4); break;
    }
    case 26: out[0] = __nv_fp8_e4m3(f).__x; break;
    case 27: out[0] = __nv_fp8_e5m2(f).__x; break;
    case 28: out[0] = __nv_fp8_e4m3(*(const __half*)&hr).__x; break;
    case 29: { __nv_fp8_e4m3 v; v.__x = (__nv_fp8_storage_t)i; u32 = float_bits((float)v); memcpy(out, &u32, 4); break; }
    case 30: { __nv_fp8_e5m2 v; v.__x = (__nv_fp8_storage_t)i; u32 = float_bits((float)v); memcpy(out, &u32, 4); break; }
    case 31: {
      float4 q = make_float4(input_f(4 * i), input_f(4 * i + 1), input_f(4 * i + 2), input_f(4 * i + 3));
      u32 = __nv_fp8x4_e4m3(q).__x; memcpy(out, &u32, 4); break;
    }
    case 32: {
      __nv_fp8x4_e4m3 v; v.__x = mix(i * 2654435761u + 7u);
      float4 q = (float4)v;
      u32 = float_bits(q.x); memcpy(out, &u32, 4); u32 = float_bits(q.y); memcpy(out + 4, &u32, 4);
      u32 = float_bits(q.z); memcpy(out + 8, &u32, 4); u32 = float_bits(q.w); memcpy(out + 12, &u32, 4); break;
    }
    case 33: case 34: {  // unsigned char, signed char, short, int, long long (CUDA: toward zero, saturating, NaN 0)
      unsigned char uc; signed char sc; short sh; int in; long long ll;
      if (fn == 33) { __nv_fp8_e4m3 v; v.__x = (__nv_fp8_storage_t)i; uc = (unsigned char)v; sc = (signed char)v;
                      sh = (short)v; in = (int)v; ll = (long long)v; }
      else { __nv_fp8_e5m2 v; v.__x = (__nv_fp8_storage_t)i; uc = (unsigned char)v; sc = (signed char)v;
             sh = (short)v; in = (int)v; ll = (long long)v; }
      out[0] = uc; memcpy(out + 1, &sc, 1); memcpy(out + 2, &sh, 2); memcpy(out + 4, &in, 4); memcpy(out + 8, &ll, 8); break;
    }
  }
}

struct Output { const char* name; uint32_t count; int width; };
static const Output OUTPUTS[] = {OUTPUT_TABLE};

#ifdef ON_DEVICE
__global__ void run(int fn, uint32_t count, int width, uint8_t* out) {
  for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < count; i += gridDim.x * blockDim.x) eval(fn, i, out + (size_t)i * width);
}
#endif

int main() {
  for (int fn = 0; fn < (int)(sizeof(OUTPUTS) / sizeof(OUTPUTS[0])); ++fn) {
    const Output& o = OUTPUTS[fn];
    std::vector<uint8_t> host((size_t)o.count * o.width);
#ifdef ON_DEVICE
    uint8_t* dev = nullptr;
    cudaMalloc(&dev, host.size());
    run<<<256, 256>>>(fn, o.count, o.width, dev);
    if (cudaMemcpy(host.data(), dev, host.size(), cudaMemcpyDeviceToHost) != cudaSuccess) return 1;
    cudaFree(dev);
#else
    for (uint32_t i = 0; i < o.count; ++i) eval(fn, i, host.data() + (size_t)i * o.width);
#endif
    printf("%s ", o.name);
    for (uint8_t b : host) printf("%02x", b);
    printf("\n");
  }
  return 0;
}
"""


def harness(bf16_raw: str, on_device: bool) -> str:
    """The harness source: bf16_raw (the bfloat16 raw struct's name: __nv_bfloat16_raw in CUDA,
    __hip_bfloat16_raw in HIP, where migrate's fixup fp8-ocp turns the cuda_fp8.h include and names into
    cuda_fp8_ocp.h's), on_device (run as a kernel, on the GPU)."""
    table = ", ".join(f'{{"{name}", (uint32_t)({count}), {width}}}' for name, count, width in OUTPUTS)
    head = f"#define BF16_RAW {bf16_raw}\n" + ("#define ON_DEVICE 1\n" if on_device else "")
    return head + HARNESS.replace("OUTPUT_TABLE", table)


def parse(stdout: str) -> dict[str, bytes]:
    """{output name: its bytes} from the harness's `name hex` lines."""
    return {name: bytes.fromhex(hexes) for name, hexes in (line.split(" ", 1) for line in stdout.splitlines() if line)}


def pack(data: bytes) -> str:
    return base64.b64encode(zlib.compress(data, 9)).decode()


def unpack(text: str) -> bytes:
    return zlib.decompress(base64.b64decode(text))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--arch", default="sm_90", help="nvcc -arch (default sm_90)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        cu = Path(tmp) / "fp8.cu"
        cu.write_text(harness("__nv_bfloat16_raw", True), encoding="utf-8")
        subprocess.run(["nvcc", f"-arch={args.arch}", "-O2", "-o", str(Path(tmp) / "fp8"), str(cu)], check=True)
        outputs = parse(subprocess.run([str(Path(tmp) / "fp8")], check=True, capture_output=True, text=True).stdout)
    gpu = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                         capture_output=True, text=True, check=False).stdout.strip()
    nvcc = subprocess.run(["nvcc", "--version"], capture_output=True, text=True, check=False).stdout.strip().splitlines()[-1]
    args.out.write_text(json.dumps({"gpu": gpu, "nvcc": nvcc, "arch": args.arch,
                                    "outputs": {name: pack(data) for name, data in outputs.items()}}, indent=1) + "\n",
                        encoding="utf-8")
    print(f"{len(outputs)} outputs, {sum(len(d) for d in outputs.values())} bytes -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
