#ifndef ROCMIG_PTX_HELPERS
#define ROCMIG_PTX_HELPERS
// C++ forms of PTX instructions (rocmig migrate, fixup ptx-inline-asm): exact for the scalar instructions;
// cp.async copies at once; mma.sync / ldmatrix are emulated over the 32-lane warp (see below).
// Every PTX register is held as its bits (16, 32 or 64); the semantics follow the PTX ISA 8.5 reference.
namespace rocmig_ptx {
typedef unsigned short u16;
typedef unsigned int u32;
typedef unsigned long long u64;
typedef _Float16 f16x2_t __attribute__((ext_vector_type(2)));

// The bits of an asm operand: integers and enums converted, pointers as addresses, floats and
// 2/4/8-byte structs (__half2, ...) bit for bit.
template <class T> __host__ __device__ inline u64 bits(const T& v) {
  if constexpr (__is_pointer(T)) {
    return (u64)(__UINTPTR_TYPE__)v;
  } else if constexpr (__is_integral(T) || __is_enum(T)) {
    return (u64)v;
  } else if constexpr (sizeof(T) == 2) {
    return __builtin_bit_cast(u16, v);
  } else if constexpr (sizeof(T) == 4) {
    return __builtin_bit_cast(u32, v);
  } else {
    return __builtin_bit_cast(u64, v);
  }
}
// An asm output: `bits` (of the PTX register's width W) written to the operand's own type.
template <int W, class T> __host__ __device__ inline void assign(T& out, u64 value) {
  if constexpr (__is_integral(T) || __is_enum(T)) {
    out = (T)value;
  } else if constexpr (__is_pointer(T)) {
    out = (T)(__UINTPTR_TYPE__)value;
  } else if constexpr (sizeof(T) == 2) {
    out = __builtin_bit_cast(T, (u16)value);
  } else if constexpr (sizeof(T) == 4) {
    out = __builtin_bit_cast(T, (u32)value);
  } else {
    out = __builtin_bit_cast(T, value);
  }
}
__host__ __device__ inline float f32(u32 b) { return __builtin_bit_cast(float, b); }
__host__ __device__ inline u32 b32(float f) { return __builtin_bit_cast(u32, f); }
__host__ __device__ inline double f64(u64 b) { return __builtin_bit_cast(double, b); }
__host__ __device__ inline u64 b64(double f) { return __builtin_bit_cast(u64, f); }
__host__ __device__ inline _Float16 f16(u16 b) { return __builtin_bit_cast(_Float16, b); }
__host__ __device__ inline u16 b16(_Float16 h) { return __builtin_bit_cast(u16, h); }
__host__ __device__ inline f16x2_t f16x2(u32 b) { return __builtin_bit_cast(f16x2_t, b); }
__host__ __device__ inline u32 b32(f16x2_t h) { return __builtin_bit_cast(u32, h); }

// lop3.b32: bit i of the result is bit ((a_i << 2) | (b_i << 1) | c_i) of lut (PTX: F(0xF0, 0xCC, 0xAA)).
__host__ __device__ inline u32 lop3(u32 a, u32 b, u32 c, u32 lut) {
  u32 r = 0;
  for (int k = 0; k < 8; ++k) {
    if ((lut >> k) & 1u) {
      r |= ((k & 4) ? a : ~a) & ((k & 2) ? b : ~b) & ((k & 1) ? c : ~c);
    }
  }
  return r;
}
// prmt.b32 (default mode): result byte n is byte (c >> 4n) & 7 of {b, a}; with bit 3 of that nibble set,
// the selected byte's sign bit is replicated over all 8 bits.
__host__ __device__ inline u32 prmt(u32 a, u32 b, u32 c) {
  u64 both = ((u64)b << 32) | a;
  u32 r = 0;
  for (int n = 0; n < 4; ++n) {
    u32 sel = (c >> (4 * n)) & 0xFu;
    u32 byte = (u32)(both >> (8 * (sel & 7u))) & 0xFFu;
    if (sel & 8u) byte = (byte & 0x80u) ? 0xFFu : 0u;
    r |= byte << (8 * n);
  }
  return r;
}
// vabsdiff4.u32.u32.u32.add: the absolute differences of the four unsigned byte pairs of a and b,
// summed and added to c (PTX ISA 8.5, "SIMD video instructions": a four-way sum of absolute differences).
__host__ __device__ inline u32 vabsdiff4_add(u32 a, u32 b, u32 c) {
  for (int n = 0; n < 4; ++n) {
    u32 x = (a >> (8 * n)) & 0xFFu, y = (b >> (8 * n)) & 0xFFu;
    c += x > y ? x - y : y - x;
  }
  return c;
}
// shl / shr: PTX clamps shift amounts above the register width (C++ leaves them undefined).
__host__ __device__ inline u32 shl32(u32 a, u32 n) { return n > 31 ? 0u : a << n; }
__host__ __device__ inline u32 shr_u32(u32 a, u32 n) { return n > 31 ? 0u : a >> n; }
__host__ __device__ inline u32 shr_s32(u32 a, u32 n) { return (u32)((int)a >> (n > 31 ? 31 : n)); }
__host__ __device__ inline u64 shl64(u64 a, u32 n) { return n > 63 ? 0ull : a << n; }
__host__ __device__ inline u64 shr_u64(u64 a, u32 n) { return n > 63 ? 0ull : a >> n; }
__host__ __device__ inline u64 shr_s64(u64 a, u32 n) { return (u64)((long long)a >> (n > 63 ? 63 : n)); }

// f16 / f16x2 / f32 arithmetic, round to nearest even, one rounding per instruction (fma: one rounding):
// no contraction inside these bodies, whatever -ffp-contract the file is built with.
__host__ __device__ inline u32 add_f16x2(u32 a, u32 b) {
#pragma clang fp contract(off)
  return b32(f16x2(a) + f16x2(b));
}
__host__ __device__ inline u32 sub_f16x2(u32 a, u32 b) {
#pragma clang fp contract(off)
  return b32(f16x2(a) - f16x2(b));
}
__host__ __device__ inline u32 mul_f16x2(u32 a, u32 b) {
#pragma clang fp contract(off)
  return b32(f16x2(a) * f16x2(b));
}
__host__ __device__ inline u32 fma_f16x2(u32 a, u32 b, u32 c) {
#pragma clang fp contract(off)
  return b32(__builtin_elementwise_fma(f16x2(a), f16x2(b), f16x2(c)));
}
__host__ __device__ inline u16 add_f16(u16 a, u16 b) {
#pragma clang fp contract(off)
  return b16(f16(a) + f16(b));
}
__host__ __device__ inline u16 sub_f16(u16 a, u16 b) {
#pragma clang fp contract(off)
  return b16(f16(a) - f16(b));
}
__host__ __device__ inline u16 mul_f16(u16 a, u16 b) {
#pragma clang fp contract(off)
  return b16(f16(a) * f16(b));
}
__host__ __device__ inline u16 fma_f16(u16 a, u16 b, u16 c) {
#pragma clang fp contract(off)
  return b16(__builtin_elementwise_fma(f16(a), f16(b), f16(c)));
}
__host__ __device__ inline u32 add_f32(u32 a, u32 b) {
#pragma clang fp contract(off)
  return b32(f32(a) + f32(b));
}
__host__ __device__ inline u32 sub_f32(u32 a, u32 b) {
#pragma clang fp contract(off)
  return b32(f32(a) - f32(b));
}
__host__ __device__ inline u32 mul_f32(u32 a, u32 b) {
#pragma clang fp contract(off)
  return b32(f32(a) * f32(b));
}
__host__ __device__ inline u32 fma_f32(u32 a, u32 b, u32 c) {
#pragma clang fp contract(off)
  return b32(__builtin_fmaf(f32(a), f32(b), f32(c)));
}
// cvt.rn.f16x2.f32 d, a, b: a to the upper half, b to the lower half.
__host__ __device__ inline u32 cvt_rn_f16x2_f32(u32 a, u32 b) {
  return ((u32)b16((_Float16)f32(a)) << 16) | b16((_Float16)f32(b));
}

// CUDA's __hmax / __hmin on one half's bits (cuda_fp16.hpp): a NaN input gives the other input, two NaNs
// (or, with nan_wins, any NaN) the canonical NaN 0x7FFF, and +0 is above -0.
__host__ __device__ inline u16 hminmax(u16 a, u16 b, bool max, bool nan_wins) {
  const bool a_nan = (a & 0x7FFFu) > 0x7C00u, b_nan = (b & 0x7FFFu) > 0x7C00u;
  if (a_nan || b_nan) return (nan_wins || (a_nan && b_nan)) ? (u16)0x7FFFu : (a_nan ? b : a);
  const int ka = (a & 0x8000u) ? -(int)(a & 0x7FFFu) - 1 : (int)a;  // ordered like the values, -0 < +0
  const int kb = (b & 0x8000u) ? -(int)(b & 0x7FFFu) - 1 : (int)b;
  return (max ? ka > kb : ka < kb) ? a : b;
}
__host__ __device__ inline u32 h2minmax(u32 a, u32 b, bool max, bool nan_wins) {
  return (u32)hminmax((u16)a, (u16)b, max, nan_wins) | ((u32)hminmax((u16)(a >> 16), (u16)(b >> 16), max, nan_wins) << 16);
}
// bf16: round to nearest even from float, NaN -> the canonical 0x7FFF (PTX cvt.rn.bf16.f32).
__host__ __device__ inline u16 bf16_rn(u32 f) {
  if ((f & 0x7FFFFFFFu) > 0x7F800000u) return 0x7FFFu;
  return (u16)((f + 0x7FFFu + ((f >> 16) & 1u)) >> 16);
}
__host__ __device__ inline u32 cvt_rn_bf16x2_f32(u32 a, u32 b) { return ((u32)bf16_rn(a) << 16) | bf16_rn(b); }
// add of bf16 pairs, each rounded to nearest even: the float sum of two bf16 values rounds to the same bf16 as
// the exact sum (exact when their exponents are within 16, else the smaller is below half a bf16 ulp)
__host__ __device__ inline u32 add_bf16x2(u32 a, u32 b) {
  const u32 lo = bf16_rn(b32(f32(a << 16) + f32(b << 16)));
  const u32 hi = bf16_rn(b32(f32(a & 0xFFFF0000u) + f32(b & 0xFFFF0000u)));
  return (hi << 16) | lo;
}
// cvt.{rzi,rni}.s32.f32: toward zero / to nearest even, saturated to the int range, NaN -> 0.
__host__ __device__ inline u32 cvt_s32_f32(u32 bits, bool nearest) {
  const float f = f32(bits);
  if (f != f) return 0u;
  const float r = nearest ? __builtin_rintf(f) : __builtin_truncf(f);
  if (r >= 2147483648.0f) return 0x7FFFFFFFu;
  if (r < -2147483648.0f) return 0x80000000u;
  return (u32)(int)r;
}

// Shared (LDS) addresses: CUDA's shared window offsets are AMDGPU's address space 3 offsets.
__device__ inline u64 cvta_generic_to_shared(const void* p) {
  return (u32)(__UINTPTR_TYPE__)(const __attribute__((address_space(3))) char*)p;
}
__device__ inline void* cvta_shared_to_generic(u64 a) {
  return (void*)(__attribute__((address_space(3))) char*)(__UINTPTR_TYPE__)(u32)a;
}
template <class T> __device__ inline T* shared_ptr(u64 a) { return (T*)cvta_shared_to_generic(a); }
template <class T> __device__ inline T* global_ptr(u64 a) { return (T*)(__UINTPTR_TYPE__)a; }

// A copy of `size` bytes (4, 8 or 16, aligned to it) whose bytes from `src_size` on are zero.
__device__ inline void copy_zfill(unsigned char* d, const unsigned char* s, u32 size, u32 src_size) {
  if (src_size >= size) {
    if (size == 16) {
      typedef u32 v4 __attribute__((ext_vector_type(4)));
      *(v4*)d = *(const v4*)s;
    } else if (size == 8) {
      *(u64*)d = *(const u64*)s;
    } else {
      *(u32*)d = *(const u32*)s;
    }
    return;
  }
  for (u32 i = 0; i < size; ++i) d[i] = i < src_size ? s[i] : 0;
}
// cp.async.{ca,cg}.shared.global [dst], [src], cp_size{, src_size}: the copy is done when the
// instruction returns (a completed copy is one the later cp.async.wait_* would wait for); bytes from
// src_size up to cp_size are zero (PTX: the rest of the destination is filled with zeros).
__device__ inline void cp_async(u64 dst, u64 src, u32 cp_size, u32 src_size) {
  copy_zfill(shared_ptr<unsigned char>(dst), global_ptr<const unsigned char>(src), cp_size, src_size);
}
// cuda_pipeline_primitives.h: __pipeline_memcpy_async(dst, src, size, zfill) copies size - zfill bytes
// and zeroes zfill; done on return, so __pipeline_commit and __pipeline_wait_prior have nothing to do.
__device__ inline void pipeline_memcpy_async(void* dst, const void* src, unsigned long size, unsigned long zfill = 0) {
  copy_zfill((unsigned char*)dst, (const unsigned char*)src, (u32)size, (u32)(size - zfill));
}
__device__ inline void pipeline_commit() {}
__device__ inline void pipeline_wait_prior(unsigned long) {}

// Warp-wide matrix instructions. Each 32-lane group of the wavefront is one CUDA warp (wave64 runs two
// side by side), as the width-32 shuffles of migrate's warp rewrites; fragments are laid out as the PTX
// ISA's "Matrix Fragments for mma.m16n8k*" and ldmatrix sections say, and move between lanes with
// shuffles, so every lane of the 32-lane warp must execute them together (mma.sync.aligned and
// ldmatrix.sync.aligned require that too).
__device__ inline u32 lane32() { return (u32)__lane_id() & 31u; }
__device__ inline u32 shfl32(u32 v, u32 src) { return (u32)__shfl((int)v, (int)src, 32); }
__device__ inline u64 shfl32_u64(u64 v, u32 src) {
  return ((u64)shfl32((u32)(v >> 32), src) << 32) | shfl32((u32)v, src);
}
// ldmatrix.sync.aligned.m8n8{.trans}.shared.b16, matrix `m` of .x1 / .x2 / .x4: lanes 8m .. 8m+7 hold the
// addresses of its rows 0..7 (8 b16 each); lane l receives row l/4, columns 2(l%4) and 2(l%4)+1, or
// with .trans column l/4 of rows 2(l%4) and 2(l%4)+1.
__device__ inline u32 ldmatrix_b16(u64 row_address, u32 m, bool trans) {
  const u32 lane = lane32();
  if (!trans) {
    return shared_ptr<const u32>(shfl32_u64(row_address, 8 * m + lane / 4))[lane % 4];
  }
  const u64 row0 = shfl32_u64(row_address, 8 * m + 2 * (lane % 4));
  const u64 row1 = shfl32_u64(row_address, 8 * m + 2 * (lane % 4) + 1);
  return (u32)shared_ptr<const u16>(row0)[lane / 4] | ((u32)shared_ptr<const u16>(row1)[lane / 4] << 16);
}
__host__ __device__ inline float half_lane(u32 reg, int e, bool bf16) {
  const u16 bits = (u16)(reg >> (16 * e));
  return bf16 ? f32((u32)bits << 16) : (float)f16(bits);
}
// mma.sync.aligned.m16n8k{8,16}.row.col with .f16 / .bf16 inputs: A (16xK) in K/4 registers, B (Kx8) in
// K/8, C and D (16x8) as 4 floats (c0, c1: row g, columns 2t, 2t+1; c2, c3: row g+8), where g = lane/4
// and t = lane%4. Products of 16-bit floats are exact in float; the sum runs over k in order with one
// float rounding per step (NVIDIA does not specify its tensor cores' summation order or rounding).
template <int K> __device__ inline void mma_16bit(const u32* a, const u32* b, const float* c, float* d, bool bf16) {
  const u32 lane = lane32(), g = lane / 4, t = lane % 4;
  float acc[4] = {c[0], c[1], c[2], c[3]};
  for (int kk = 0; kk < K / 2; ++kk) {  // k = 2kk, 2kk+1: one register of each fragment
    const int half = kk / 4;            // k >= 8: A's registers 2 and 3, B's register 1
    const u32 src = (u32)(kk % 4);
    const u32 a0 = shfl32(a[2 * half], 4 * g + src), a1 = shfl32(a[2 * half + 1], 4 * g + src);
    const u32 b0 = shfl32(b[half], 4 * (2 * t) + src), b1 = shfl32(b[half], 4 * (2 * t + 1) + src);
    for (int e = 0; e < 2; ++e) {
      const float x0 = half_lane(a0, e, bf16), x1 = half_lane(a1, e, bf16);
      const float y0 = half_lane(b0, e, bf16), y1 = half_lane(b1, e, bf16);
      acc[0] = __builtin_fmaf(x0, y0, acc[0]);
      acc[1] = __builtin_fmaf(x0, y1, acc[1]);
      acc[2] = __builtin_fmaf(x1, y0, acc[2]);
      acc[3] = __builtin_fmaf(x1, y1, acc[3]);
    }
  }
  for (int i = 0; i < 4; ++i) d[i] = acc[i];
}
// The 8-bit fragments of mma.m16n8k{16,32} (A: K/8 registers of four bytes, B: K/16) walked over k in order:
// for k = 4kq + e, `step(a0, a1, b0, b1, e)` gets the registers whose byte e holds A[g][k], A[g+8][k],
// B[k][2t], B[k][2t+1] (g = lane / 4, t = lane % 4).
template <int K, class Step> __device__ inline void fragments_8bit(const u32* a, const u32* b, Step step) {
  const u32 lane = lane32(), g = lane / 4, t = lane % 4;
  for (int kq = 0; kq < K / 4; ++kq) {  // k = 4kq .. 4kq+3: one register of each fragment
    const int half = kq / 4;            // k >= 16: A's registers 2 and 3, B's register 1
    const u32 src = (u32)(kq % 4);
    const u32 a0 = shfl32(a[2 * half], 4 * g + src), a1 = shfl32(a[2 * half + 1], 4 * g + src);
    const u32 b0 = shfl32(b[half], 4 * (2 * t) + src), b1 = shfl32(b[half], 4 * (2 * t + 1) + src);
    for (int e = 0; e < 4; ++e) step(a0, a1, b0, b1, e);
  }
}
// mma.sync.aligned.m16n8k{16,32}.row.col.s32.{s8,u8}.{s8,u8}.s32{.satfinite}: 4 8-bit values a register
// (A: K/8 registers, B: K/16), exact integer sums; .satfinite clamps to the int range, otherwise wraps.
template <int K> __device__ inline void mma_8bit(const u32* a, const u32* b, const u32* c, u32* d, bool a_signed,
                                                 bool b_signed, bool satfinite) {
  long long acc[4] = {(int)c[0], (int)c[1], (int)c[2], (int)c[3]};
  fragments_8bit<K>(a, b, [&](u32 a0, u32 a1, u32 b0, u32 b1, int e) {
    const int x0 = a_signed ? (int)(signed char)(a0 >> (8 * e)) : (int)((a0 >> (8 * e)) & 0xFFu);
    const int x1 = a_signed ? (int)(signed char)(a1 >> (8 * e)) : (int)((a1 >> (8 * e)) & 0xFFu);
    const int y0 = b_signed ? (int)(signed char)(b0 >> (8 * e)) : (int)((b0 >> (8 * e)) & 0xFFu);
    const int y1 = b_signed ? (int)(signed char)(b1 >> (8 * e)) : (int)((b1 >> (8 * e)) & 0xFFu);
    acc[0] += (long long)x0 * y0;
    acc[1] += (long long)x0 * y1;
    acc[2] += (long long)x1 * y0;
    acc[3] += (long long)x1 * y1;
  });
  for (int i = 0; i < 4; ++i) {
    long long v = acc[i];
    if (satfinite) v = v > 2147483647ll ? 2147483647ll : v < -2147483648ll ? -2147483648ll : v;
    d[i] = (u32)v;
  }
}
// An OCP FP8 byte (NVIDIA's E4M3: bias 7, S.1111.111 NaN, no infinity; E5M2: the upper byte of a half) as a float,
// exactly (every FP8 value is a float).
__host__ __device__ inline float fp8_float(u32 byte, bool e5m2) {
  byte &= 0xFFu;
  if (e5m2) return (float)f16((u16)(byte << 8));
  const u32 sign = (byte & 0x80u) << 24, exponent = (byte >> 3) & 0xFu, mantissa = byte & 7u;
  if (exponent == 15u && mantissa == 7u) return f32(0x7FFFFFFFu);
  if (exponent == 0u) return f32(sign | b32((float)mantissa * (1.0f / 512.0f)));
  return f32(sign | ((exponent + 120u) << 23) | (mantissa << 20));
}
// mma.sync.aligned.m16n8k{16,32}.row.col.f32 with .e4m3 / .e5m2 inputs: the 8-bit fragments
// (fragments_8bit), each byte an FP8 value; products of FP8 values are exact in
// float, summed over k in order with one float rounding per step (NVIDIA does not specify its order).
template <int K> __device__ inline void mma_fp8(const u32* a, const u32* b, const float* c, float* d, bool a_e5m2,
                                                bool b_e5m2) {
  float acc[4] = {c[0], c[1], c[2], c[3]};
  fragments_8bit<K>(a, b, [&](u32 a0, u32 a1, u32 b0, u32 b1, int e) {
    const float x0 = fp8_float(a0 >> (8 * e), a_e5m2), x1 = fp8_float(a1 >> (8 * e), a_e5m2);
    const float y0 = fp8_float(b0 >> (8 * e), b_e5m2), y1 = fp8_float(b1 >> (8 * e), b_e5m2);
    acc[0] = __builtin_fmaf(x0, y0, acc[0]);
    acc[1] = __builtin_fmaf(x0, y1, acc[1]);
    acc[2] = __builtin_fmaf(x1, y0, acc[2]);
    acc[3] = __builtin_fmaf(x1, y1, acc[3]);
  });
  for (int i = 0; i < 4; ++i) d[i] = acc[i];
}
}  // namespace rocmig_ptx
#endif
