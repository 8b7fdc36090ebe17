#ifndef ROCMIG_CUDA_FP8
#define ROCMIG_CUDA_FP8
// CUDA's cuda_fp8.h for HIP (rocmig migrate, fixup fp8-ocp): NVIDIA's OCP E4M3 / E5M2 encodings, in
// software on every AMD arch. HIP 7.2's hip_fp8.h offers the FNUZ encodings on gfx942 (exponent bias one
// higher, 0x80 is NaN) and turns its OCP types off there; hipify's __hip_fp8_e4m3_fnuz reads OCP bytes as
// half their value. The conversions follow cuda_fp8.hpp: round to nearest even; past the largest finite
// value __NV_SATFINITE clamps to it and __NV_NOSAT gives NaN (E4M3) or infinity (E5M2); they were compared
// bit for bit with an NVIDIA H100 (tests/images/test_fp8_exact.py).
#include <hip/hip_bf16.h>
#include <hip/hip_fp16.h>

// cuda_fp8.h's own marker (CUB's util_type.cuh and projects test it to turn their FP8 code on)
#define __CUDA_FP8_TYPES_EXIST__

// cuda_fp8.h's names, as the fixup renames them: __nv_fp8_e4m3 -> rocmig_fp8::e4m3, __nv_fp8x2_e4m3 ->
// rocmig_fp8::e4m3x2, __nv_fp8_storage_t -> rocmig_fp8::storage_t, __NV_E4M3 -> rocmig_fp8::E4M3,
// __NV_SATFINITE -> rocmig_fp8::SATFINITE, __nv_cvt_float_to_fp8 -> rocmig_fp8::cvt_float_to_fp8, ...
namespace rocmig_fp8 {

typedef unsigned char storage_t;
typedef unsigned short int storage2_t;
typedef unsigned int storage4_t;
typedef enum saturation_t { NOSAT, SATFINITE } saturation_t;
typedef enum interpretation_t { E4M3, E5M2 } interpretation_t;

__host__ __device__ inline storage_t cvt_double_to_fp8(const double x, const saturation_t saturate,
                                                                     const interpretation_t interp) {
  const unsigned long long xbits = __builtin_bit_cast(unsigned long long, x);
  const bool e4m3 = interp == E4M3;
  const unsigned bias = e4m3 ? 7u : 15u, significand = e4m3 ? 4u : 3u, mantissa_mask = e4m3 ? 0x7u : 0x3u;
  const unsigned long long min_denorm_o2 = e4m3 ? 0x3F50000000000000ull : 0x3EE0000000000000ull;  // 2^-10, 2^-17
  const unsigned long long overflow = e4m3 ? 0x407D000000000000ull : 0x40EE000000000000ull - 1ull;  // 464, < 61440
  const unsigned long long min_norm = e4m3 ? 0x3F90000000000000ull : 0x3F10000000000000ull;       // 2^-6, 2^-14
  const unsigned char max_norm = e4m3 ? 0x7E : 0x7B;                                              // 448, 57344
  const unsigned long long half_ulp = 1ull << (53u - significand - 1u);
  const unsigned char sign = (unsigned char)((xbits >> 63) << 7);
  const unsigned char exponent = (unsigned char)((((unsigned)(xbits >> 52)) & 0x7FFu) - 1023u + bias);
  unsigned char mantissa = (unsigned char)((xbits >> (53u - significand)) & mantissa_mask);
  const unsigned long long absx = xbits & 0x7FFFFFFFFFFFFFFFull;
  unsigned char res;
  if (absx <= min_denorm_o2) {
    res = 0;
  } else if (absx > 0x7FF0000000000000ull) {
    res = e4m3 ? 0x7F : (unsigned char)(0x7E | mantissa);
  } else if (absx > overflow) {
    res = saturate == SATFINITE ? max_norm : (e4m3 ? 0x7F : 0x7C);
  } else if (absx >= min_norm) {
    res = (unsigned char)((exponent << (significand - 1u)) | mantissa);
    const unsigned long long round = xbits & ((half_ulp << 1) - 1ull);
    if (round > half_ulp || (round == half_ulp && (mantissa & 1u))) ++res;
  } else {
    const unsigned shift = 1u - exponent;
    mantissa |= (unsigned char)(1u << (significand - 1u));
    res = (unsigned char)(mantissa >> shift);
    const unsigned long long round = (xbits | (1ull << 52)) & ((half_ulp << (shift + 1u)) - 1ull);
    if (round > (half_ulp << shift) || (round == (half_ulp << shift) && (res & 1u))) ++res;
  }
  return (storage_t)(res | sign);
}
__host__ __device__ inline storage_t cvt_float_to_fp8(const float x, const saturation_t saturate,
                                                                    const interpretation_t interp) {
  const unsigned xbits = __builtin_bit_cast(unsigned, x);
  const float canonical = (xbits & 0x7FFFFFFFu) > 0x7F800000u ? __builtin_bit_cast(float, 0x7FFFFFFFu) : x;  // any NaN
  return cvt_double_to_fp8((double)canonical, saturate, interp);
}
__host__ __device__ inline storage_t cvt_halfraw_to_fp8(const __half_raw x, const saturation_t saturate,
                                                                      const interpretation_t interp) {
  return cvt_float_to_fp8((float)__builtin_bit_cast(_Float16, x.x), saturate, interp);
}
__host__ __device__ inline storage_t cvt_bfloat16raw_to_fp8(const __hip_bfloat16_raw x,
                                                                          const saturation_t saturate,
                                                                          const interpretation_t interp) {
  return cvt_float_to_fp8(__builtin_bit_cast(float, (unsigned)x.x << 16), saturate, interp);
}
__host__ __device__ inline storage2_t cvt_double2_to_fp8x2(const double2 x, const saturation_t saturate,
                                                                          const interpretation_t interp) {
  return (storage2_t)(cvt_double_to_fp8(x.x, saturate, interp) |
                                (cvt_double_to_fp8(x.y, saturate, interp) << 8));
}
__host__ __device__ inline storage2_t cvt_float2_to_fp8x2(const float2 x, const saturation_t saturate,
                                                                         const interpretation_t interp) {
  return (storage2_t)(cvt_float_to_fp8(x.x, saturate, interp) |
                                (cvt_float_to_fp8(x.y, saturate, interp) << 8));
}
__host__ __device__ inline storage2_t cvt_halfraw2_to_fp8x2(const __half2_raw x, const saturation_t saturate,
                                                                           const interpretation_t interp) {
  const unsigned bits = __builtin_bit_cast(unsigned, x);  // HIP's __half2_raw holds two __half_raw
  __half_raw lo, hi;
  lo.x = (unsigned short)bits;
  hi.x = (unsigned short)(bits >> 16);
  return (storage2_t)(cvt_halfraw_to_fp8(lo, saturate, interp) | (cvt_halfraw_to_fp8(hi, saturate, interp) << 8));
}
__host__ __device__ inline storage2_t cvt_bfloat16raw2_to_fp8x2(const __hip_bfloat162_raw x,
                                                                               const saturation_t saturate,
                                                                               const interpretation_t interp) {
  return (storage2_t)(cvt_bfloat16raw_to_fp8(__hip_bfloat16_raw{x.x}, saturate, interp) |
                                (cvt_bfloat16raw_to_fp8(__hip_bfloat16_raw{x.y}, saturate, interp) << 8));
}
// Every E4M3 and E5M2 value is a half: exact; NaN -> 0x7FFF.
__host__ __device__ inline __half_raw cvt_fp8_to_halfraw(const storage_t x, const interpretation_t interp) {
  unsigned short ur = (unsigned short)(x << 8);
  if (interp == E5M2) {
    if ((ur & 0x7FFFu) > 0x7C00u) ur = 0x7FFFu;
  } else {
    const unsigned short sign = ur & 0x8000u;
    unsigned short exponent = (unsigned short)(((ur & 0x7800u) >> 1) + 0x2000u);
    unsigned short mantissa = (unsigned short)((ur & 0x0700u) >> 1);
    if ((x & 0x7Fu) == 0x7Fu) {
      ur = 0x7FFFu;
    } else if (exponent == 0x2000u) {
      if (mantissa != 0u) {
        mantissa = (unsigned short)(mantissa << 1);
        while ((mantissa & 0x0400u) == 0u) {
          mantissa = (unsigned short)(mantissa << 1);
          exponent = (unsigned short)(exponent - 0x0400u);
        }
        mantissa &= 0x03FFu;
      } else {
        exponent = 0u;
      }
      ur = (unsigned short)(sign | exponent | mantissa);
    } else {
      ur = (unsigned short)(sign | exponent | mantissa);
    }
  }
  __half_raw r;
  r.x = ur;
  return r;
}
__host__ __device__ inline __half2_raw cvt_fp8x2_to_halfraw2(const storage2_t x,
                                                                  const interpretation_t interp) {
  return __builtin_bit_cast(__half2_raw, (unsigned)cvt_fp8_to_halfraw((storage_t)x, interp).x |
                                             ((unsigned)cvt_fp8_to_halfraw((storage_t)(x >> 8), interp).x << 16));
}

// The scalar, pair and quad types: CUDA's constructors convert with SATFINITE, the conversions to
// wider types are exact (via half).
__host__ __device__ inline float to_float(storage_t x, interpretation_t interp) {
  const unsigned short h = cvt_fp8_to_halfraw(x, interp).x;  // NaN: 0x7FFF, as a float NVIDIA's 0x7FFFFFFF
  return h == 0x7FFFu ? __builtin_bit_cast(float, 0x7FFFFFFFu) : (float)__builtin_bit_cast(_Float16, h);
}
__host__ __device__ inline __half to_half(storage_t x, interpretation_t interp) {
  return __half(cvt_fp8_to_halfraw(x, interp));
}
__host__ __device__ inline float bf16_float(__hip_bfloat16 x) {
  return __builtin_bit_cast(float, (unsigned)__builtin_bit_cast(unsigned short, x) << 16);
}
template <class T> __host__ __device__ inline T rz(float v, T lo, T hi) {
  // NaN: 0, except cuda_fp16.hpp's 64-bit conversions (__half2ll_rz, __half2ull_rz), which give 0x8000000000000000
  return v != v ? (sizeof(T) == 8 ? (T)0x8000000000000000ull : T(0)) : v <= (float)lo ? lo : v >= (float)hi ? hi : (T)v;
}
template <interpretation_t I>
struct scalar {
  storage_t __x;
  scalar() = default;
  __host__ __device__ explicit scalar(const __half f) : __x(cvt_halfraw_to_fp8(static_cast<__half_raw>(f), SATFINITE, I)) {}
  __host__ __device__ explicit scalar(const __hip_bfloat16 f) : __x(cvt_float_to_fp8(bf16_float(f), SATFINITE, I)) {}
  __host__ __device__ explicit scalar(const float f) : __x(cvt_float_to_fp8(f, SATFINITE, I)) {}
  __host__ __device__ explicit scalar(const double f) : __x(cvt_double_to_fp8(f, SATFINITE, I)) {}
  __host__ __device__ explicit scalar(const unsigned short v) : scalar((float)v) {}
  __host__ __device__ explicit scalar(const unsigned int v) : scalar((float)v) {}
  __host__ __device__ explicit scalar(const unsigned long v) : scalar((float)v) {}
  __host__ __device__ explicit scalar(const unsigned long long v) : scalar((float)v) {}
  __host__ __device__ explicit scalar(const short v) : scalar((float)v) {}
  __host__ __device__ explicit scalar(const int v) : scalar((float)v) {}
  __host__ __device__ explicit scalar(const long v) : scalar((float)v) {}
  __host__ __device__ explicit scalar(const long long v) : scalar((float)v) {}
  __host__ __device__ explicit operator __half() const { return to_half(__x, I); }
  __host__ __device__ explicit operator float() const { return to_float(__x, I); }
  __host__ __device__ explicit operator double() const { return (double)to_float(__x, I); }
  __host__ __device__ explicit operator __hip_bfloat16() const { return __float2bfloat16(to_float(__x, I)); }
  __host__ __device__ explicit operator bool() const { return (__x & 0x7Fu) != 0u; }
  // CUDA converts through __half with __half2*_rz (chars: through float): toward zero, saturating, NaN -> 0
  __host__ __device__ explicit operator unsigned char() const { return rz<unsigned char>(to_float(__x, I), 0, 255); }
  __host__ __device__ explicit operator signed char() const { return rz<signed char>(to_float(__x, I), -128, 127); }
  __host__ __device__ explicit operator char() const {
    return (char)-1 < (char)0 ? (char)rz<signed char>(to_float(__x, I), -128, 127) : (char)rz<unsigned char>(to_float(__x, I), 0, 255);
  }
  __host__ __device__ explicit operator short() const { return rz<short>(to_float(__x, I), -32768, 32767); }
  __host__ __device__ explicit operator unsigned short() const { return rz<unsigned short>(to_float(__x, I), 0, 65535); }
  __host__ __device__ explicit operator int() const { return rz<int>(to_float(__x, I), -2147483647 - 1, 2147483647); }
  __host__ __device__ explicit operator unsigned int() const { return rz<unsigned int>(to_float(__x, I), 0u, 4294967295u); }
  __host__ __device__ explicit operator long() const { return rz<long>(to_float(__x, I), -9223372036854775807l - 1, 9223372036854775807l); }
  __host__ __device__ explicit operator unsigned long() const { return rz<unsigned long>(to_float(__x, I), 0ul, 18446744073709551615ul); }
  __host__ __device__ explicit operator long long() const { return rz<long long>(to_float(__x, I), -9223372036854775807ll - 1, 9223372036854775807ll); }
  __host__ __device__ explicit operator unsigned long long() const { return rz<unsigned long long>(to_float(__x, I), 0ull, 18446744073709551615ull); }
};
template <interpretation_t I>
struct pair {
  storage2_t __x;
  pair() = default;
  __host__ __device__ explicit pair(const __half2 f)
      : __x(cvt_halfraw2_to_fp8x2(static_cast<__half2_raw>(f), SATFINITE, I)) {}
  __host__ __device__ explicit pair(const __hip_bfloat162 f)
      : __x(cvt_bfloat16raw2_to_fp8x2(static_cast<__hip_bfloat162_raw>(f), SATFINITE, I)) {}
  __host__ __device__ explicit pair(const float2 f) : __x(cvt_float2_to_fp8x2(f, SATFINITE, I)) {}
  __host__ __device__ explicit pair(const double2 f) : __x(cvt_double2_to_fp8x2(f, SATFINITE, I)) {}
  __host__ __device__ explicit operator __half2() const { return __half2(cvt_fp8x2_to_halfraw2(__x, I)); }
  __host__ __device__ explicit operator float2() const {
    return make_float2(to_float((storage_t)__x, I), to_float((storage_t)(__x >> 8), I));
  }
};
template <interpretation_t I>
struct quad {
  storage4_t __x;
  quad() = default;
  __host__ __device__ explicit quad(const __half2 lo, const __half2 hi)
      : __x((unsigned)pair<I>(lo).__x | ((unsigned)pair<I>(hi).__x << 16)) {}
  __host__ __device__ explicit quad(const __hip_bfloat162 lo, const __hip_bfloat162 hi)
      : __x((unsigned)pair<I>(lo).__x | ((unsigned)pair<I>(hi).__x << 16)) {}
  __host__ __device__ explicit quad(const float4 f)
      : __x((unsigned)pair<I>(make_float2(f.x, f.y)).__x | ((unsigned)pair<I>(make_float2(f.z, f.w)).__x << 16)) {}
  __host__ __device__ explicit quad(const double4 f)
      : __x((unsigned)pair<I>(make_double2(f.x, f.y)).__x | ((unsigned)pair<I>(make_double2(f.z, f.w)).__x << 16)) {}
  __host__ __device__ explicit operator float4() const {
    return make_float4(to_float((storage_t)__x, I), to_float((storage_t)(__x >> 8), I),
                       to_float((storage_t)(__x >> 16), I), to_float((storage_t)(__x >> 24), I));
  }
};
typedef scalar<E4M3> e4m3;
typedef scalar<E5M2> e5m2;
typedef pair<E4M3> e4m3x2;
typedef pair<E5M2> e5m2x2;
typedef quad<E4M3> e4m3x4;
typedef quad<E5M2> e5m2x4;
}  // namespace rocmig_fp8
#endif
