// rocmig: CUDA texture objects in software (migrate's fixup texture-soft).
// HIP marks its texture fetches unavailable where the GPU has no image instructions (gfx940 and later
// CDNA: __HIP_NO_IMAGE_SUPPORT), and ROCm's runtime refuses some texture setups CUDA accepts (linear
// filtering of float texels on gfx90a, normalized or filtered Pitch2D resources). Here a texture object
// is a device copy of rocmig_tex::Texture: its texels stay in plain device memory and each fetch
// addresses and filters them with CUDA's rules (CUDA C++ Programming Guide, "Texture Fetching": point
// and linear filtering, linear weights in 9-bit fixed point with 8 fractional bits, wrap / clamp /
// mirror / border addressing), the same on every AMD target. Arrays (hipMallocArray, hipMalloc3DArray)
// become dense device buffers that the rocmig_tex copy functions fill; texture references keep HIP's
// texture<> variables, bound to such texture objects.
#ifndef ROCMIG_TEXTURE_SOFT_H
#define ROCMIG_TEXTURE_SOFT_H
#include <math.h>
#if defined(__CUDACC__) || defined(__HIP__)
#define ROCMIG_TEX_HD __host__ __device__ inline
#else
#define ROCMIG_TEX_HD inline
#endif
// no fused multiply-add in the coordinate and filter arithmetic: hipcc contracts a * b + c by default,
// which moves a coordinate's texel at the edges and a footprint's weights (the arithmetic was checked
// unfused; nvcc builds of the checks pass -fmad=false)
#if defined(__clang__)
#define ROCMIG_TEX_UNFUSED _Pragma("clang fp contract(off)")
#else
#define ROCMIG_TEX_UNFUSED
#endif

namespace rocmig_tex {

// values of cudaChannelFormatKind / hipChannelFormatKind and cudaTextureAddressMode / hipTextureAddressMode
enum : int { kSigned = 0, kUnsigned = 1, kFloat = 2 };
enum : int { kWrap = 0, kClamp = 1, kMirror = 2, kBorder = 3 };

struct Texture {
  const unsigned char* data;         // texel (0, 0, 0)
  unsigned long long row_pitch;      // bytes from one row (or 1D layer) to the next
  unsigned long long slice_pitch;    // bytes from one slice (or 2D layer) to the next
  int extent[3];                     // texels along x, y, z (1 where the texture has fewer dimensions)
  int dims;                          // 1, 2 or 3 filtered coordinates
  int layers;                        // layers of a layered texture, else 0
  int channels, channel_bytes, kind; // channels per texel (1, 2 or 4), bytes per channel, format kind
  int address[3];                    // address mode per coordinate
  int linear_filter;                 // 1: linear filtering, 0: point sampling
  int normalized_read;               // 1: 8- and 16-bit integer texels read as floats in [0, 1] / [-1, 1]
  int normalized_coords;             // 1: coordinates in [0, 1) span the extent
  int fetch_only;                    // 1: a linear resource, read by tex1Dfetch with integer indices
  float border[4];                   // border color per channel
};

ROCMIG_TEX_HD float half_to_float(unsigned short h) {
  unsigned sign = (h >> 15) & 1u, exponent = (h >> 10) & 0x1Fu, mantissa = h & 0x3FFu;
  float magnitude;
  if (exponent == 0) {
    magnitude = ldexpf((float)mantissa, -24);
  } else if (exponent == 31) {
    magnitude = mantissa ? NAN : INFINITY;
  } else {
    magnitude = ldexpf((float)(mantissa | 0x400u), (int)exponent - 25);
  }
  return sign ? -magnitude : magnitude;
}

// channel c of the texel at p, as the integer the texel stores (32-bit channels as their bits);
// little-endian bytes, read one by one (texels of 1 and 2 bytes have no 4-byte alignment)
ROCMIG_TEX_HD int channel_raw(const Texture& t, const unsigned char* p, int c) {
  p += c * t.channel_bytes;
  if (t.channel_bytes == 1) {
    return t.kind == kSigned ? (int)(signed char)p[0] : (int)p[0];
  }
  if (t.channel_bytes == 2) {
    unsigned short v = (unsigned short)(p[0] | (p[1] << 8));
    return t.kind == kSigned ? (int)(short)v : (int)v;
  }
  return (int)((unsigned)p[0] | ((unsigned)p[1] << 8) | ((unsigned)p[2] << 16) | ((unsigned)p[3] << 24));
}

ROCMIG_TEX_HD float bits_to_float(int bits) {
  union {
    int i;
    float f;
  } u;
  u.i = bits;
  return u.f;
}

ROCMIG_TEX_HD int float_to_bits(float f) {
  union {
    float f;
    int i;
  } u;
  u.f = f;
  return u.i;
}

// channel c of the texel at p as a float: float texels as they are, integer texels normalized when
// read as normalized floats (unsigned v / (2^n - 1), signed max(v / (2^(n-1) - 1), -1)), else converted
ROCMIG_TEX_HD float channel_float(const Texture& t, const unsigned char* p, int c) {
  ROCMIG_TEX_UNFUSED
  int raw = channel_raw(t, p, c);
  if (t.kind == kFloat) {
    if (t.channel_bytes == 2) {
      return half_to_float((unsigned short)raw);
    }
    return bits_to_float(raw);
  }
  if (t.normalized_read && t.channel_bytes < 4) {
    float scale = t.channel_bytes == 1 ? (t.kind == kSigned ? 127.0f : 255.0f) : (t.kind == kSigned ? 32767.0f : 65535.0f);
    return fmaxf((float)raw / scale, -1.0f);
  }
  return t.kind == kUnsigned ? (float)(unsigned)raw : (float)raw;
}

// the texel index i of an extent n after the address mode; -1 for a border texel
ROCMIG_TEX_HD int address(int i, int n, int mode) {
  if (mode == kWrap) {
    i %= n;
    return i < 0 ? i + n : i;
  }
  if (mode == kMirror) {
    int period = 2 * n;
    i %= period;
    i = i < 0 ? i + period : i;
    return i < n ? i : period - 1 - i;
  }
  if (mode == kBorder) {
    return i < 0 || i >= n ? -1 : i;
  }
  return i < 0 ? 0 : (i >= n ? n - 1 : i);
}

// the texel coordinate of coordinate u along axis a; wrap and mirror apply to normalized coordinates
// only (CUDA treats them as clamp otherwise)
ROCMIG_TEX_HD float texel_coordinate(const Texture& t, float u, int a, int* mode) {
  ROCMIG_TEX_UNFUSED
  *mode = t.address[a];
  if (!t.normalized_coords) {
    if (*mode == kWrap || *mode == kMirror) {
      *mode = kClamp;
    }
    return u;
  }
  return u * (float)t.extent[a];
}

ROCMIG_TEX_HD const unsigned char* texel(const Texture& t, int x, int y, int z, int layer) {
  unsigned long long texel_bytes = (unsigned long long)t.channels * t.channel_bytes;
  unsigned long long offset = x * texel_bytes + (unsigned long long)y * t.row_pitch + (unsigned long long)z * t.slice_pitch;
  if (t.layers) {
    offset += (unsigned long long)layer * (t.dims == 1 ? t.row_pitch : t.slice_pitch);
  }
  return t.data + offset;
}

// a float rounded to a half, as a float: to nearest (ties to even), or toward zero
ROCMIG_TEX_HD float round_to_half(float f, bool toward_zero) {
  ROCMIG_TEX_UNFUSED
  float magnitude = fabsf(f);
  if (!(magnitude < 65520.0f)) return f != f ? f : copysignf(INFINITY, f);
  int exponent;
  frexpf(magnitude, &exponent);  // magnitude in [2^(exponent-1), 2^exponent)
  float quantum = ldexpf(1.0f, (exponent < -13 ? -13 : exponent) - 11);  // 10 mantissa bits, subnormals below 2^-14
  float steps = magnitude / quantum;
  return copysignf((toward_zero ? floorf(steps) : rintf(steps)) * quantum, f);
}

// channel c of the border color as a float texel reads it: the color is stored in the texel's format
// first (measured on an H100: a half texture returns it rounded toward zero to a half, a normalized 8- or 16-bit one
// clamps it to [0, 1] / [-1, 1] and rounds it to the format's steps)
ROCMIG_TEX_HD float border_float(const Texture& t, int c, bool gathered = false) {
  ROCMIG_TEX_UNFUSED
  float color = t.border[c];
  if (t.kind == kFloat) return t.channel_bytes == 2 ? round_to_half(color, true) : color;
  if (t.normalized_read && t.channel_bytes < 4) {
    float scale = t.channel_bytes == 1 ? (t.kind == kSigned ? 127.0f : 255.0f) : (t.kind == kSigned ? 32767.0f : 65535.0f);
    color = fminf(fmaxf(color, t.kind == kSigned ? -1.0f : 0.0f), 1.0f);
    return (gathered ? truncf(color * scale) : rintf(color * scale)) / scale;
  }
  return color;
}

// the texel at integer indices index[0..axes) (before addressing) as floats, or the border color
ROCMIG_TEX_HD void load_float(const Texture& t, int axes, const int* index, const int* mode, int layer, float out[4]) {
  int at[3] = {0, 0, 0};
  for (int a = 0; a < axes; ++a) {
    at[a] = address(index[a], t.extent[a], mode[a]);
    if (at[a] < 0) {
      for (int c = 0; c < 4; ++c) out[c] = border_float(t, c);
      return;
    }
  }
  const unsigned char* p = texel(t, at[0], at[1], at[2], layer);
  for (int c = 0; c < 4; ++c) out[c] = c < t.channels ? channel_float(t, p, c) : 0.0f;
}

ROCMIG_TEX_HD int clamp_layer(const Texture& t, int layer) {
  return !t.layers ? 0 : (layer < 0 ? 0 : (layer >= t.layers ? t.layers - 1 : layer));
}

// a weight rounded to 8 fractional bits (the filter's 9-bit fixed point format)
ROCMIG_TEX_HD float fixed_weight(float w) {
  ROCMIG_TEX_UNFUSED
  return rintf(w * 256.0f) * (1.0f / 256.0f);
}

// a filtered fetch at coordinates u[0..dims) of a layer, as floats (channels past the texel's are 0).
// Linear filtering as NVIDIA's texture units do it (measured on an H100, bench/texture_reference.py):
// each axis' weight in fixed point, then each corner's product of them rounded again, x with z first
// in 3D; under border addressing a 1D texture is filtered as a 2D one of height 1 read at y = 0, so half
// of each fetch is the border color; half texels give a result rounded to a half.
ROCMIG_TEX_HD void sample_float(const Texture& t, const float* u, int layer, float out[4]) {
  ROCMIG_TEX_UNFUSED
  int mode[3], base[3];
  float weight[3];
  layer = clamp_layer(t, layer);
  int axes = t.linear_filter && t.dims == 1 && !t.layers && t.address[0] == kBorder ? 2 : t.dims;
  for (int a = 0; a < axes; ++a) {
    float x = texel_coordinate(t, a < t.dims ? u[a] : 0.0f, a, &mode[a]);
    if (t.linear_filter) {
      float below = floorf(x - 0.5f);
      base[a] = (int)below;
      weight[a] = fixed_weight(x - 0.5f - below);
    } else {
      base[a] = (int)floorf(x);
      weight[a] = 0.0f;
    }
  }
  if (!t.linear_filter) {
    load_float(t, axes, base, mode, layer, out);
    return;
  }
  for (int c = 0; c < 4; ++c) out[c] = 0.0f;
  for (int corner = 0; corner < (1 << axes); ++corner) {
    int index[3];
    float w[3];
    for (int a = 0; a < axes; ++a) {
      int upper = (corner >> a) & 1;
      index[a] = base[a] + upper;
      w[a] = upper ? weight[a] : 1.0f - weight[a];
    }
    float product = axes == 1 ? w[0] : (axes == 2 ? fixed_weight(w[0] * w[1]) : fixed_weight(fixed_weight(w[0] * w[2]) * w[1]));
    float texel_value[4];
    load_float(t, axes, index, mode, layer, texel_value);
    for (int c = 0; c < 4; ++c) out[c] += product * texel_value[c];
  }
  if (t.kind == kFloat && t.channel_bytes == 2) {
    for (int c = 0; c < 4; ++c) out[c] = round_to_half(out[c], false);
  }
}

// channel c of the border color as an integer texel: the low bytes of the float's bits, as NVIDIA's
// texture units return it (measured on an H100: border 39.0f = 0x421C0000 reads as 0 from 8-bit texels)
ROCMIG_TEX_HD int border_raw(const Texture& t, int c) {
  int bits = float_to_bits(t.border[c]);
  if (t.channel_bytes == 1) return t.kind == kSigned ? (int)(signed char)bits : bits & 0xFF;
  if (t.channel_bytes == 2) return t.kind == kSigned ? (int)(short)bits : bits & 0xFFFF;
  return bits;
}

// a point-sampled fetch at coordinates u[0..dims) of a layer, as the integers the texel stores
// (a border texel gives border_raw)
ROCMIG_TEX_HD void sample_raw(const Texture& t, const float* u, int layer, int out[4]) {
  ROCMIG_TEX_UNFUSED
  int mode[3], at[3] = {0, 0, 0};
  layer = clamp_layer(t, layer);
  for (int a = 0; a < t.dims; ++a) {
    float x = texel_coordinate(t, u[a], a, &mode[a]);
    at[a] = address((int)floorf(x), t.extent[a], mode[a]);
    if (at[a] < 0) {
      for (int c = 0; c < 4; ++c) out[c] = border_raw(t, c);
      return;
    }
  }
  const unsigned char* p = texel(t, at[0], at[1], at[2], layer);
  for (int c = 0; c < 4; ++c) out[c] = c < t.channels ? channel_raw(t, p, c) : 0;
}

// tex2Dgather: channel `component` of the four texels that 2D linear filtering at (x, y) reads, in
// Direct3D's Gather4 order: (x0, y1), (x1, y1), (x1, y0), (x0, y0); floats, or with `raw` the integers
// the texels store; a border texel gives the border color's channel
ROCMIG_TEX_HD void gather(const Texture& t, float x, float y, int component, bool raw, float out_float[4],
                          int out_raw[4]) {
  ROCMIG_TEX_UNFUSED
  int mode[2], base[2];
  float u[2] = {x, y};
  for (int a = 0; a < 2; ++a) {
    float below = texel_coordinate(t, u[a], a, &mode[a]) - 0.5f;
    float whole = floorf(below);
    // the footprint of linear filtering: a fraction that rounds to 256/256 moves it one texel on
    base[a] = (int)whole + (fixed_weight(below - whole) == 1.0f);
  }
  const int corner[4][2] = {{0, 1}, {1, 1}, {1, 0}, {0, 0}};
  for (int k = 0; k < 4; ++k) {
    int at[2];
    bool border = false;
    for (int a = 0; a < 2; ++a) {
      at[a] = address(base[a] + corner[k][a], t.extent[a], mode[a]);
      border = border || at[a] < 0;
    }
    if (border) {
      out_float[k] = border_float(t, component, true);
      out_raw[k] = border_raw(t, component);
      continue;
    }
    const unsigned char* p = texel(t, at[0], at[1], 0, 0);
    out_float[k] = raw ? 0.0f : channel_float(t, p, component);
    out_raw[k] = channel_raw(t, p, component);
  }
}

// tex1Dfetch: element i of a linear resource (or of an array's first row); 0 outside the extent
ROCMIG_TEX_HD void fetch_float(const Texture& t, int i, float out[4]) {
  for (int c = 0; c < 4; ++c) out[c] = 0.0f;
  if (i < 0 || i >= t.extent[0]) return;
  const unsigned char* p = texel(t, i, 0, 0, 0);
  for (int c = 0; c < t.channels; ++c) out[c] = channel_float(t, p, c);
}

ROCMIG_TEX_HD void fetch_raw(const Texture& t, int i, int out[4]) {
  for (int c = 0; c < 4; ++c) out[c] = 0;
  if (i < 0 || i >= t.extent[0]) return;
  const unsigned char* p = texel(t, i, 0, 0, 0);
  for (int c = 0; c < t.channels; ++c) out[c] = channel_raw(t, p, c);
}

}  // namespace rocmig_tex

// ROCMIG_TEXTURE_CUDA_CHECK: the includer maps HIP's names to CUDA's (bench/texture_api_check.cu runs the
// arrays, copies and texture objects below against CUDA's own on an NVIDIA GPU); texture references,
// which CUDA 12 removed, and HIP's vector types are then left out
#if (defined(__HIP__) || defined(__HIP_PLATFORM_AMD__) || defined(ROCMIG_TEXTURE_CUDA_CHECK)) && \
    !defined(ROCMIG_TEXTURE_FETCH_ONLY)
#ifndef ROCMIG_TEXTURE_CUDA_CHECK
#include <hip/hip_runtime_api.h>
#endif
#include <limits.h>
#include <new>

namespace rocmig_tex {

// an array made by MallocArray / Malloc3DArray: dense device memory, rows of width texels
struct Array {
  unsigned char* data;
  hipChannelFormatDesc desc;
  size_t width, height, depth;  // as allocated (0 where the array has fewer dimensions)
  size_t row_pitch, slice_pitch;
  unsigned flags;
  bool layered() const { return (flags & hipArrayLayered) != 0; }
  // coordinates a fetch filters: 1, 2 (also a layered array's) or 3
  int dims() const { return height == 0 ? 1 : (depth == 0 || layered() ? 2 : 3); }
  int layers() const { return layered() ? (int)depth : 0; }
};

inline Array* array_of(hipArray_const_t array) { return reinterpret_cast<Array*>(const_cast<hipArray*>(array)); }

inline int channel_count(const hipChannelFormatDesc& d) { return (d.x > 0) + (d.y > 0) + (d.z > 0) + (d.w > 0); }

inline size_t texel_bytes(const hipChannelFormatDesc& d) { return (size_t)(d.x + d.y + d.z + d.w) / 8; }

inline hipError_t Malloc3DArray(hipArray_t* array, const hipChannelFormatDesc* desc, hipExtent extent,
                                unsigned int flags = 0) {
  if (!array || !desc || extent.width == 0 || texel_bytes(*desc) == 0) return hipErrorInvalidValue;
  Array* a = new (std::nothrow) Array{};
  if (!a) return hipErrorOutOfMemory;
  a->desc = *desc;
  a->width = extent.width;
  a->height = extent.height;
  a->depth = extent.depth;
  a->flags = flags;
  a->row_pitch = extent.width * texel_bytes(*desc);
  a->slice_pitch = a->row_pitch * (extent.height ? extent.height : 1);
  hipError_t status = hipMalloc(reinterpret_cast<void**>(&a->data), a->slice_pitch * (extent.depth ? extent.depth : 1));
  if (status != hipSuccess) {
    delete a;
    return status;
  }
  *array = reinterpret_cast<hipArray_t>(a);
  return hipSuccess;
}

inline hipError_t MallocArray(hipArray_t* array, const hipChannelFormatDesc* desc, size_t width, size_t height = 0,
                              unsigned int flags = 0) {
  return Malloc3DArray(array, desc, make_hipExtent(width, height, 0), flags);
}

inline hipError_t FreeArray(hipArray_t array) {
  if (!array) return hipSuccess;
  hipError_t status = hipFree(array_of(array)->data);
  delete array_of(array);
  return status;
}

inline hipError_t GetChannelDesc(hipChannelFormatDesc* desc, hipArray_const_t array) {
  *desc = array_of(array)->desc;
  return hipSuccess;
}

// offsets: w_offset in bytes, h_offset in rows (CUDA's cudaMemcpy2DToArray)
inline unsigned char* at(hipArray_const_t array, size_t w_offset, size_t h_offset) {
  return array_of(array)->data + h_offset * array_of(array)->row_pitch + w_offset;
}

inline hipError_t Memcpy2DToArray(hipArray_t dst, size_t w_offset, size_t h_offset, const void* src, size_t spitch,
                                  size_t width, size_t height, hipMemcpyKind kind) {
  return hipMemcpy2D(at(dst, w_offset, h_offset), array_of(dst)->row_pitch, src, spitch, width, height, kind);
}

inline hipError_t Memcpy2DToArrayAsync(hipArray_t dst, size_t w_offset, size_t h_offset, const void* src, size_t spitch,
                                       size_t width, size_t height, hipMemcpyKind kind, hipStream_t stream = 0) {
  return hipMemcpy2DAsync(at(dst, w_offset, h_offset), array_of(dst)->row_pitch, src, spitch, width, height, kind,
                          stream);
}

inline hipError_t Memcpy2DFromArray(void* dst, size_t dpitch, hipArray_const_t src, size_t w_offset, size_t h_offset,
                                    size_t width, size_t height, hipMemcpyKind kind) {
  return hipMemcpy2D(dst, dpitch, at(src, w_offset, h_offset), array_of(src)->row_pitch, width, height, kind);
}

// count bytes from (w_offset bytes, h_offset rows) on, row after row (the array's rows are dense)
inline hipError_t MemcpyToArray(hipArray_t dst, size_t w_offset, size_t h_offset, const void* src, size_t count,
                                hipMemcpyKind kind) {
  return hipMemcpy(at(dst, w_offset, h_offset), src, count, kind);
}

inline hipError_t MemcpyToArrayAsync(hipArray_t dst, size_t w_offset, size_t h_offset, const void* src, size_t count,
                                     hipMemcpyKind kind, hipStream_t stream = 0) {
  return hipMemcpyAsync(at(dst, w_offset, h_offset), src, count, kind, stream);
}

inline hipError_t MemcpyFromArray(void* dst, hipArray_const_t src, size_t w_offset, size_t h_offset, size_t count,
                                  hipMemcpyKind kind) {
  return hipMemcpy(dst, at(src, w_offset, h_offset), count, kind);
}

inline hipError_t Memcpy2DFromArrayAsync(void* dst, size_t dpitch, hipArray_const_t src, size_t w_offset, size_t h_offset,
                                         size_t width, size_t height, hipMemcpyKind kind, hipStream_t stream = 0) {
  return hipMemcpy2DAsync(dst, dpitch, at(src, w_offset, h_offset), array_of(src)->row_pitch, width, height, kind,
                          stream);
}

inline hipError_t MemcpyFromArrayAsync(void* dst, hipArray_const_t src, size_t w_offset, size_t h_offset, size_t count,
                                       hipMemcpyKind kind, hipStream_t stream = 0) {
  return hipMemcpyAsync(dst, at(src, w_offset, h_offset), count, kind, stream);
}

// a hipMemcpy3DParms with arrays given as pitched pointers: an array's position and, where an array takes
// part, the extent's width are in the array's texels (CUDA's rule for cudaMemcpy3D; a pointer's position
// is in bytes) and become bytes
inline hipMemcpy3DParms pitched(const hipMemcpy3DParms& p) {
  hipMemcpy3DParms q = p;
  size_t texel = 0;
  if (p.srcArray) {
    Array* a = array_of(p.srcArray);
    texel = texel_bytes(a->desc);
    q.srcPtr = make_hipPitchedPtr(a->data, a->row_pitch, a->row_pitch, a->height ? a->height : 1);
    q.srcPos.x *= texel;
    q.srcArray = nullptr;
  }
  if (p.dstArray) {
    Array* a = array_of(p.dstArray);
    texel = texel_bytes(a->desc);
    q.dstPtr = make_hipPitchedPtr(a->data, a->row_pitch, a->row_pitch, a->height ? a->height : 1);
    q.dstPos.x *= texel;
    q.dstArray = nullptr;
  }
  if (texel) {
    q.extent.width *= texel;
    q.extent.height = q.extent.height ? q.extent.height : 1;
    q.extent.depth = q.extent.depth ? q.extent.depth : 1;
  }
  return q;
}

inline hipError_t Memcpy3D(const hipMemcpy3DParms* p) {
  hipMemcpy3DParms q = pitched(*p);
  return hipMemcpy3D(&q);
}

inline hipError_t Memcpy3DAsync(const hipMemcpy3DParms* p, hipStream_t stream = 0) {
  hipMemcpy3DParms q = pitched(*p);
  return hipMemcpy3DAsync(&q, stream);
}

inline void set_format(Texture* t, const hipChannelFormatDesc& d) {
  t->channels = channel_count(d);
  t->channel_bytes = d.x / 8;
  t->kind = d.f == hipChannelFormatKindSigned ? kSigned : (d.f == hipChannelFormatKindUnsigned ? kUnsigned : kFloat);
}

// a device copy of `host` (a Texture or Surface), its address stored in *object as the handle type H
template <class D, class H> hipError_t device_copy(const D& host, H* object) {
  D* device = nullptr;
  hipError_t status = hipMalloc(reinterpret_cast<void**>(&device), sizeof(D));
  if (status != hipSuccess) return status;
  status = hipMemcpy(device, &host, sizeof(D), hipMemcpyHostToDevice);
  if (status != hipSuccess) {
    (void)hipFree(device);
    return status;
  }
  *object = reinterpret_cast<H>(device);
  return hipSuccess;
}

inline hipError_t CreateTextureObject(hipTextureObject_t* object, const hipResourceDesc* res, const hipTextureDesc* tex,
                                      const hipResourceViewDesc* = nullptr) {
  if (!object || !res || !tex) return hipErrorInvalidValue;
  Texture t{};
  t.extent[0] = t.extent[1] = t.extent[2] = 1;
  if (res->resType == hipResourceTypeArray) {
    const Array* a = array_of(res->res.array.array);
    set_format(&t, a->desc);
    t.data = a->data;
    t.row_pitch = a->row_pitch;
    t.slice_pitch = a->slice_pitch;
    t.extent[0] = (int)a->width;
    t.dims = a->dims();
    if (a->height) t.extent[1] = (int)a->height;
    if (t.dims == 3) t.extent[2] = (int)a->depth;
    t.layers = a->layers();
  } else if (res->resType == hipResourceTypeLinear) {
    set_format(&t, res->res.linear.desc);
    t.data = static_cast<const unsigned char*>(res->res.linear.devPtr);
    // hipBindTexture's default size is UINT_MAX (CUDA's): as many texels as an int holds
    size_t texels = res->res.linear.sizeInBytes / texel_bytes(res->res.linear.desc);
    t.extent[0] = texels > (size_t)INT_MAX ? INT_MAX : (int)texels;
    t.row_pitch = res->res.linear.sizeInBytes;
    t.dims = 1;
    t.fetch_only = 1;
  } else if (res->resType == hipResourceTypePitch2D) {
    set_format(&t, res->res.pitch2D.desc);
    t.data = static_cast<const unsigned char*>(res->res.pitch2D.devPtr);
    t.extent[0] = (int)res->res.pitch2D.width;
    t.extent[1] = (int)res->res.pitch2D.height;
    t.row_pitch = res->res.pitch2D.pitchInBytes;
    t.dims = 2;
  } else {
    return hipErrorNotSupported;  // mipmapped arrays
  }
  for (int a = 0; a < 3; ++a) t.address[a] = (int)tex->addressMode[a];
  t.linear_filter = tex->filterMode == hipFilterModeLinear;
  t.normalized_read = tex->readMode == hipReadModeNormalizedFloat;
  t.normalized_coords = tex->normalizedCoords != 0;
  for (int c = 0; c < 4; ++c) t.border[c] = tex->borderColor[c];
  return device_copy(t, object);
}

inline hipError_t DestroyTextureObject(hipTextureObject_t object) {
  return object ? hipFree(reinterpret_cast<void*>(object)) : hipSuccess;
}

// A surface object over an array: a device copy of Surface, read and written in place.
struct Surface {
  unsigned char* data;
  unsigned long long row_pitch, slice_pitch;
  int extent[3];  // texels along x, y, z (1 where the array has fewer dimensions)
  int dims, layers, texel_bytes;
};

inline hipError_t CreateSurfaceObject(hipSurfaceObject_t* object, const hipResourceDesc* res) {
  if (!object || !res) return hipErrorInvalidValue;
  if (res->resType != hipResourceTypeArray) return hipErrorNotSupported;
  const Array* a = array_of(res->res.array.array);
  Surface s{};
  s.data = a->data;
  s.row_pitch = a->row_pitch;
  s.slice_pitch = a->slice_pitch;
  s.dims = a->dims();
  s.extent[0] = (int)a->width;
  s.extent[1] = a->height ? (int)a->height : 1;
  s.extent[2] = s.dims == 3 ? (int)a->depth : 1;
  s.layers = a->layers();
  s.texel_bytes = (int)texel_bytes(a->desc);
  return device_copy(s, object);
}

inline hipError_t DestroySurfaceObject(hipSurfaceObject_t object) {
  return object ? hipFree(reinterpret_cast<void*>(object)) : hipSuccess;
}

#ifndef ROCMIG_TEXTURE_CUDA_CHECK
// Texture references (texture<T, dim, readMode>, HIP's deprecated form of CUDA's): the variable stays
// HIP's (a host object with a device copy the runtime registers); binding makes a software texture
// object from the reference's fields, stores it in textureObject and copies the reference to its
// device copy, which the fetches below read.
inline hipError_t bind(const textureReference* ref, const hipResourceDesc& res, hipTextureReadMode read_mode) {
  textureReference* r = const_cast<textureReference*>(ref);
  hipTextureDesc td{};
  for (int a = 0; a < 3; ++a) td.addressMode[a] = r->addressMode[a];
  td.filterMode = r->filterMode;
  td.readMode = read_mode;
  td.normalizedCoords = r->normalized;
  if (r->textureObject) (void)DestroyTextureObject(r->textureObject);
  r->textureObject = nullptr;
  hipError_t status = CreateTextureObject(&r->textureObject, &res, &td, nullptr);
  if (status != hipSuccess) return status;
  return hipMemcpyToSymbol(ref, r, sizeof(textureReference));
}

inline hipError_t BindTexture(size_t* offset, const textureReference* ref, const void* ptr,
                              const hipChannelFormatDesc* desc, size_t size = UINT_MAX) {
  if (offset) *offset = 0;
  hipResourceDesc res{};
  res.resType = hipResourceTypeLinear;
  res.res.linear.devPtr = const_cast<void*>(ptr);
  res.res.linear.desc = *desc;
  res.res.linear.sizeInBytes = size;
  return bind(ref, res, ref->readMode);
}

inline hipError_t BindTexture2D(size_t* offset, const textureReference* ref, const void* ptr,
                                const hipChannelFormatDesc* desc, size_t width, size_t height, size_t pitch) {
  if (offset) *offset = 0;
  hipResourceDesc res{};
  res.resType = hipResourceTypePitch2D;
  res.res.pitch2D.devPtr = const_cast<void*>(ptr);
  res.res.pitch2D.desc = *desc;
  res.res.pitch2D.width = width;
  res.res.pitch2D.height = height;
  res.res.pitch2D.pitchInBytes = pitch;
  return bind(ref, res, ref->readMode);
}

inline hipError_t BindTextureToArray(const textureReference* ref, hipArray_const_t array,
                                     const hipChannelFormatDesc* = nullptr) {
  hipResourceDesc res{};
  res.resType = hipResourceTypeArray;
  res.res.array.array = const_cast<hipArray_t>(array);
  return bind(ref, res, ref->readMode);
}

inline hipError_t UnbindTexture(const textureReference* ref) {
  textureReference* r = const_cast<textureReference*>(ref);
  hipError_t status = DestroyTextureObject(r->textureObject);
  r->textureObject = nullptr;
  return status;
}

template <class T, int D, enum hipTextureReadMode M>
hipError_t BindTexture(size_t* offset, const texture<T, D, M>& ref, const void* ptr, size_t size = UINT_MAX) {
  return BindTexture(offset, &ref, ptr, &ref.channelDesc, size);
}
template <class T, int D, enum hipTextureReadMode M>
hipError_t BindTexture(size_t* offset, const texture<T, D, M>& ref, const void* ptr, const hipChannelFormatDesc& desc,
                       size_t size = UINT_MAX) {
  return BindTexture(offset, &ref, ptr, &desc, size);
}
template <class T, int D, enum hipTextureReadMode M>
hipError_t BindTexture2D(size_t* offset, const texture<T, D, M>& ref, const void* ptr, size_t width, size_t height,
                         size_t pitch) {
  return BindTexture2D(offset, &ref, ptr, &ref.channelDesc, width, height, pitch);
}
template <class T, int D, enum hipTextureReadMode M>
hipError_t BindTexture2D(size_t* offset, const texture<T, D, M>& ref, const void* ptr, const hipChannelFormatDesc& desc,
                         size_t width, size_t height, size_t pitch) {
  return BindTexture2D(offset, &ref, ptr, &desc, width, height, pitch);
}
template <class T, int D, enum hipTextureReadMode M>
hipError_t BindTextureToArray(const texture<T, D, M>& ref, hipArray_const_t array) {
  return BindTextureToArray(&ref, array);
}
template <class T, int D, enum hipTextureReadMode M>
hipError_t BindTextureToArray(const texture<T, D, M>& ref, hipArray_const_t array, const hipChannelFormatDesc&) {
  return BindTextureToArray(&ref, array);
}
template <class T, int D, enum hipTextureReadMode M>
hipError_t UnbindTexture(const texture<T, D, M>& ref) {
  return UnbindTexture(&ref);
}
#endif  // ROCMIG_TEXTURE_CUDA_CHECK

}  // namespace rocmig_tex
#endif

#if (defined(__HIP__) || defined(ROCMIG_TEXTURE_CUDA_CHECK)) && !defined(ROCMIG_TEXTURE_FETCH_ONLY)
#ifndef ROCMIG_TEXTURE_CUDA_CHECK
#include <hip/hip_runtime.h>
#endif

namespace rocmig_tex {

// a fetch result of type T built from four floats or four integers: scalars take channel 0,
// HIP's vector types (float2, uchar4, ...) their first N channels
template <class T> struct Result {
  static constexpr bool is_float = (T)0.5f != (T)0;
  template <class V> __device__ static T make(const V* v) { return (T)v[0]; }
};
#ifndef ROCMIG_TEXTURE_CUDA_CHECK
template <class S, unsigned N> struct Result<HIP_vector_type<S, N>> {
  static constexpr bool is_float = (S)0.5f != (S)0;
  template <class V> __device__ static HIP_vector_type<S, N> make(const V* v) {
    HIP_vector_type<S, N> r;
    for (unsigned c = 0; c < N; ++c) r[c] = (S)v[c];
    return r;
  }
};
#endif

__device__ inline const Texture& texture_of(hipTextureObject_t object) {
  return *reinterpret_cast<const Texture*>(object);
}

template <class T> __device__ T sample(hipTextureObject_t object, float x, float y, float z, int layer) {
  const Texture& t = texture_of(object);
  float u[3] = {x, y, z};
  if (Result<T>::is_float) {
    float v[4];
    sample_float(t, u, layer, v);
    return Result<T>::make(v);
  }
  int v[4];
  sample_raw(t, u, layer, v);
  return Result<T>::make(v);
}

template <class T> __device__ T tex1Dfetch(hipTextureObject_t object, int x) {
  const Texture& t = texture_of(object);
  if (Result<T>::is_float) {
    float v[4];
    fetch_float(t, x, v);
    return Result<T>::make(v);
  }
  int v[4];
  fetch_raw(t, x, v);
  return Result<T>::make(v);
}
template <class T> __device__ T tex2Dgather(hipTextureObject_t object, float x, float y, int component = 0) {
  float f[4];
  int r[4];
  gather(texture_of(object), x, y, component, !Result<T>::is_float, f, r);
  return Result<T>::is_float ? Result<T>::make(f) : Result<T>::make(r);
}
template <class T> __device__ T tex1D(hipTextureObject_t o, float x) { return rocmig_tex::sample<T>(o, x, 0.0f, 0.0f, 0); }
template <class T> __device__ T tex2D(hipTextureObject_t o, float x, float y) { return rocmig_tex::sample<T>(o, x, y, 0.0f, 0); }
template <class T> __device__ T tex3D(hipTextureObject_t o, float x, float y, float z) { return rocmig_tex::sample<T>(o, x, y, z, 0); }
template <class T> __device__ T tex1DLayered(hipTextureObject_t o, float x, int layer) {
  return rocmig_tex::sample<T>(o, x, 0.0f, 0.0f, layer);
}
template <class T> __device__ T tex2DLayered(hipTextureObject_t o, float x, float y, int layer) {
  return rocmig_tex::sample<T>(o, x, y, 0.0f, layer);
}
// textures here have one level (no mipmapped arrays), which every level of detail reads
template <class T> __device__ T tex1DLod(hipTextureObject_t o, float x, float) { return rocmig_tex::tex1D<T>(o, x); }
template <class T> __device__ T tex2DLod(hipTextureObject_t o, float x, float y, float) { return rocmig_tex::tex2D<T>(o, x, y); }
template <class T> __device__ T tex3DLod(hipTextureObject_t o, float x, float y, float z, float) {
  return rocmig_tex::tex3D<T>(o, x, y, z);
}

template <class T> __device__ T tex1DLayeredLod(hipTextureObject_t o, float x, int layer, float) {
  return rocmig_tex::tex1DLayered<T>(o, x, layer);
}
template <class T> __device__ T tex2DLayeredLod(hipTextureObject_t o, float x, float y, int layer, float) {
  return rocmig_tex::tex2DLayered<T>(o, x, y, layer);
}
// CUDA's forms that store the fetch through a pointer
template <class T> __device__ void tex1Dfetch(T* out, hipTextureObject_t o, int x) { *out = rocmig_tex::tex1Dfetch<T>(o, x); }
template <class T> __device__ void tex1D(T* out, hipTextureObject_t o, float x) { *out = rocmig_tex::tex1D<T>(o, x); }
template <class T> __device__ void tex2D(T* out, hipTextureObject_t o, float x, float y) { *out = rocmig_tex::tex2D<T>(o, x, y); }
template <class T> __device__ void tex3D(T* out, hipTextureObject_t o, float x, float y, float z) {
  *out = rocmig_tex::tex3D<T>(o, x, y, z);
}
template <class T> __device__ void tex1DLayered(T* out, hipTextureObject_t o, float x, int layer) {
  *out = rocmig_tex::tex1DLayered<T>(o, x, layer);
}
template <class T> __device__ void tex2DLayered(T* out, hipTextureObject_t o, float x, float y, int layer) {
  *out = rocmig_tex::tex2DLayered<T>(o, x, y, layer);
}
template <class T> __device__ void tex1DLod(T* out, hipTextureObject_t o, float x, float level) {
  *out = rocmig_tex::tex1DLod<T>(o, x, level);
}
template <class T> __device__ void tex2DLod(T* out, hipTextureObject_t o, float x, float y, float level) {
  *out = rocmig_tex::tex2DLod<T>(o, x, y, level);
}
template <class T> __device__ void tex3DLod(T* out, hipTextureObject_t o, float x, float y, float z, float level) {
  *out = rocmig_tex::tex3DLod<T>(o, x, y, z, level);
}

// surface reads and writes: x in bytes, y / z in rows / slices (CUDA's); out of range, the boundary mode
// decides: zero (reads give 0, writes are dropped), clamp (the nearest texel in range), trap (the kernel
// stops, __builtin_trap)
__device__ inline unsigned char* surface_texel(hipSurfaceObject_t object, int x, int y, int z, int layer,
                                               hipSurfaceBoundaryMode mode) {
  const Surface& s = *reinterpret_cast<const Surface*>(object);
  int at[3] = {x, y, z};
  int dims = s.dims;
  for (int a = 0; a < dims; ++a) {
    int limit = a == 0 ? s.extent[0] * s.texel_bytes : s.extent[a];
    if (at[a] >= 0 && at[a] < limit) continue;
    if (mode == hipBoundaryModeZero) return nullptr;
    if (mode != hipBoundaryModeClamp) {
#if defined(__CUDACC__) && !defined(__HIP__)
      __trap();  // the CUDA build of the checks
#else
      __builtin_trap();
#endif
    }
    at[a] = at[a] < 0 ? 0 : (a == 0 ? limit - s.texel_bytes : limit - 1);
  }
  unsigned long long offset = (unsigned long long)at[0] + (unsigned long long)at[1] * s.row_pitch +
                              (unsigned long long)at[2] * s.slice_pitch;
  if (s.layers) offset += (unsigned long long)layer * (dims == 1 ? s.row_pitch : s.slice_pitch);
  return s.data + offset;
}

template <class T> __device__ void surface_write(T value, hipSurfaceObject_t o, int x, int y, int z, int layer,
                                                 hipSurfaceBoundaryMode mode) {
  unsigned char* p = surface_texel(o, x, y, z, layer, mode);
  const unsigned char* bytes = reinterpret_cast<const unsigned char*>(&value);
  for (unsigned i = 0; p && i < sizeof(T); ++i) p[i] = bytes[i];
}
template <class T> __device__ T surface_read(hipSurfaceObject_t o, int x, int y, int z, int layer,
                                             hipSurfaceBoundaryMode mode) {
  T value{};
  const unsigned char* p = surface_texel(o, x, y, z, layer, mode);
  unsigned char* bytes = reinterpret_cast<unsigned char*>(&value);
  for (unsigned i = 0; p && i < sizeof(T); ++i) bytes[i] = p[i];
  return value;
}

template <class T> __device__ void surf1Dwrite(T v, hipSurfaceObject_t o, int x,
                                               hipSurfaceBoundaryMode m = hipBoundaryModeTrap) {
  surface_write(v, o, x, 0, 0, 0, m);
}
template <class T> __device__ void surf2Dwrite(T v, hipSurfaceObject_t o, int x, int y,
                                               hipSurfaceBoundaryMode m = hipBoundaryModeTrap) {
  surface_write(v, o, x, y, 0, 0, m);
}
template <class T> __device__ void surf3Dwrite(T v, hipSurfaceObject_t o, int x, int y, int z,
                                               hipSurfaceBoundaryMode m = hipBoundaryModeTrap) {
  surface_write(v, o, x, y, z, 0, m);
}
template <class T> __device__ void surf1DLayeredwrite(T v, hipSurfaceObject_t o, int x, int layer,
                                                      hipSurfaceBoundaryMode m = hipBoundaryModeTrap) {
  surface_write(v, o, x, 0, 0, layer, m);
}
template <class T> __device__ void surf2DLayeredwrite(T v, hipSurfaceObject_t o, int x, int y, int layer,
                                                      hipSurfaceBoundaryMode m = hipBoundaryModeTrap) {
  surface_write(v, o, x, y, 0, layer, m);
}
template <class T> __device__ T surf1Dread(hipSurfaceObject_t o, int x, hipSurfaceBoundaryMode m = hipBoundaryModeTrap) {
  return surface_read<T>(o, x, 0, 0, 0, m);
}
template <class T> __device__ T surf2Dread(hipSurfaceObject_t o, int x, int y,
                                           hipSurfaceBoundaryMode m = hipBoundaryModeTrap) {
  return surface_read<T>(o, x, y, 0, 0, m);
}
template <class T> __device__ T surf3Dread(hipSurfaceObject_t o, int x, int y, int z,
                                           hipSurfaceBoundaryMode m = hipBoundaryModeTrap) {
  return surface_read<T>(o, x, y, z, 0, m);
}
template <class T> __device__ T surf1DLayeredread(hipSurfaceObject_t o, int x, int layer,
                                                  hipSurfaceBoundaryMode m = hipBoundaryModeTrap) {
  return surface_read<T>(o, x, 0, 0, layer, m);
}
template <class T> __device__ T surf2DLayeredread(hipSurfaceObject_t o, int x, int y, int layer,
                                                  hipSurfaceBoundaryMode m = hipBoundaryModeTrap) {
  return surface_read<T>(o, x, y, 0, layer, m);
}
template <class T> __device__ void surf1Dread(T* out, hipSurfaceObject_t o, int x,
                                              hipSurfaceBoundaryMode m = hipBoundaryModeTrap) {
  *out = surface_read<T>(o, x, 0, 0, 0, m);
}
template <class T> __device__ void surf2Dread(T* out, hipSurfaceObject_t o, int x, int y,
                                              hipSurfaceBoundaryMode m = hipBoundaryModeTrap) {
  *out = surface_read<T>(o, x, y, 0, 0, m);
}
template <class T> __device__ void surf3Dread(T* out, hipSurfaceObject_t o, int x, int y, int z,
                                              hipSurfaceBoundaryMode m = hipBoundaryModeTrap) {
  *out = surface_read<T>(o, x, y, z, 0, m);
}

#ifndef ROCMIG_TEXTURE_CUDA_CHECK
// fetches through a texture reference: T for element reads, floats of T's channel count for
// normalized reads (CUDA's texture<uchar4, 2, cudaReadModeNormalizedFloat> gives float4)
template <class T, enum hipTextureReadMode M> struct RefResult { using type = T; };
template <class T> struct RefResult<T, hipReadModeNormalizedFloat> { using type = float; };
template <class S, unsigned N> struct RefResult<HIP_vector_type<S, N>, hipReadModeNormalizedFloat> {
  using type = HIP_vector_type<float, N>;
};

template <class T, int D, enum hipTextureReadMode M>
__device__ typename RefResult<T, M>::type tex1Dfetch(texture<T, D, M> ref, int x) {
  return rocmig_tex::tex1Dfetch<typename RefResult<T, M>::type>(ref.textureObject, x);
}
template <class T, int D, enum hipTextureReadMode M>
__device__ typename RefResult<T, M>::type tex1D(texture<T, D, M> ref, float x) {
  return rocmig_tex::tex1D<typename RefResult<T, M>::type>(ref.textureObject, x);
}
template <class T, int D, enum hipTextureReadMode M>
__device__ typename RefResult<T, M>::type tex2D(texture<T, D, M> ref, float x, float y) {
  return rocmig_tex::tex2D<typename RefResult<T, M>::type>(ref.textureObject, x, y);
}
template <class T, int D, enum hipTextureReadMode M>
__device__ typename RefResult<T, M>::type tex3D(texture<T, D, M> ref, float x, float y, float z) {
  return rocmig_tex::tex3D<typename RefResult<T, M>::type>(ref.textureObject, x, y, z);
}
template <class T, int D, enum hipTextureReadMode M>
__device__ typename RefResult<T, M>::type tex1DLayered(texture<T, D, M> ref, float x, int layer) {
  return rocmig_tex::tex1DLayered<typename RefResult<T, M>::type>(ref.textureObject, x, layer);
}
template <class T, int D, enum hipTextureReadMode M>
__device__ typename RefResult<T, M>::type tex2DLayered(texture<T, D, M> ref, float x, float y, int layer) {
  return rocmig_tex::tex2DLayered<typename RefResult<T, M>::type>(ref.textureObject, x, y, layer);
}

#endif  // ROCMIG_TEXTURE_CUDA_CHECK
}  // namespace rocmig_tex
#endif
#endif  // ROCMIG_TEXTURE_SOFT_H
