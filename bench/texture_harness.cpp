// Texture fetches of CUDA's hardware against migrate's software textures (cuda_texture_soft.h).
// The same file builds two ways:
//   nvcc -x cu -arch=sm_90 -I recipes/migrate/migrate: for every configuration a CUDA array and texture
//     object, fetched by the hardware; prints "hw NAME HEX..." lines (and "soft" lines: the header's
//     fetches run on the same GPU);
//   c++ -I recipes/migrate/migrate: the header's fetches on the host; prints "soft NAME HEX..." lines.
// Texels, coordinates and border colors come from a fixed splitmix64 sequence per configuration, so both
// builds see the same inputs. Each value prints as the 8 hex digits of its 32 bits (float or int), four
// channels per fetch.
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <string>
#include <vector>

#define ROCMIG_TEXTURE_FETCH_ONLY
#include "cuda_texture_soft.h"

namespace {

const int kSamples = 64;
const int kExtent[3] = {13, 7, 5};

struct Format {
  const char* name;
  int channels, channel_bytes, kind, normalized_read, float_result;
};
// float x1 / x4 and half texels read as elements, 8- and 16-bit integers read as normalized floats,
// 8- and 32-bit integers read as elements (point sampling only)
const Format kFormats[] = {
    {"f32x1", 1, 4, rocmig_tex::kFloat, 0, 1},    {"f32x4", 4, 4, rocmig_tex::kFloat, 0, 1},
    {"f16x1", 1, 2, rocmig_tex::kFloat, 0, 1},    {"u8x4n", 4, 1, rocmig_tex::kUnsigned, 1, 1},
    {"s16x2n", 2, 2, rocmig_tex::kSigned, 1, 1},  {"u8x1", 1, 1, rocmig_tex::kUnsigned, 0, 0},
    {"s32x1", 1, 4, rocmig_tex::kSigned, 0, 0},
};
const char* kModes[] = {"wrap", "clamp", "mirror", "border"};

struct Config {
  std::string name;
  Format format;
  int dims, linear, mode, normalized_coords;
  int gather;  // 0, or 1 + the channel tex2Dgather reads
};

std::vector<Config> configs() {
  std::vector<Config> out;
  for (int dims = 1; dims <= 3; ++dims)
    for (const Format& f : kFormats)
      for (int linear = 0; linear <= f.float_result; ++linear)
        for (int normalized = 0; normalized <= 1; ++normalized)
          for (int mode = 0; mode < 4; ++mode) {
            if (!normalized && (mode == rocmig_tex::kWrap || mode == rocmig_tex::kMirror)) continue;
            std::string name = std::to_string(dims) + "d-" + f.name + (linear ? "-linear-" : "-point-") + kModes[mode] +
                               (normalized ? "-norm" : "-texel");
            out.push_back(Config{name, f, dims, linear, mode, normalized, 0});
          }
  // tex2Dgather of the first and last channel: clamp and border on texel coordinates, wrap and mirror on
  // normalized ones
  const int gather_modes[4][2] = {{rocmig_tex::kClamp, 0}, {rocmig_tex::kBorder, 0}, {rocmig_tex::kWrap, 1},
                                  {rocmig_tex::kMirror, 1}};
  for (const Format& f : kFormats) {
    if (f.channel_bytes == 4 && f.kind != rocmig_tex::kFloat) continue;  // 32-bit integers: no gather in CUDA
    for (int component = 0; component < f.channels; component += f.channels > 1 ? f.channels - 1 : 1) {
      for (const auto& m : gather_modes) {
        std::string name = std::string("2d-") + f.name + "-gather" + std::to_string(component) + "-" + kModes[m[0]] +
                           (m[1] ? "-norm" : "-texel");
        out.push_back(Config{name, f, 2, 0, m[0], m[1], component + 1});
      }
    }
  }
  return out;
}

uint64_t splitmix(uint64_t* state) {
  uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

float uniform(uint64_t* state, float lo, float hi) {
  return lo + (hi - lo) * (float)(splitmix(state) >> 40) / (float)(1ull << 24);
}

struct Inputs {
  std::vector<unsigned char> texels;  // dense: rows of kExtent[0] texels, slices of rows
  std::vector<float> coords;          // kSamples x 3
  float border[4];
  int extent[3];
};

Inputs inputs(const Config& c, uint64_t seed) {
  Inputs in;
  uint64_t state = seed;
  size_t count = 1;
  for (int a = 0; a < 3; ++a) {
    in.extent[a] = a < c.dims ? kExtent[a] : 1;
    count *= in.extent[a];
  }
  in.texels.resize(count * c.format.channels * c.format.channel_bytes);
  for (size_t i = 0; i < count * c.format.channels; ++i) {
    unsigned char* p = &in.texels[i * c.format.channel_bytes];
    if (c.format.kind == rocmig_tex::kFloat && c.format.channel_bytes == 4) {
      float v = uniform(&state, -4.0f, 4.0f);
      memcpy(p, &v, 4);
    } else if (c.format.kind == rocmig_tex::kFloat) {
      // a finite half: sign, exponent 8..21 (about 2^-7 .. 2^6), random mantissa
      uint64_t r = splitmix(&state);
      unsigned short h = (unsigned short)(((r & 1) << 15) | ((8 + (r >> 1) % 14) << 10) | ((r >> 8) & 0x3FF));
      memcpy(p, &h, 2);
    } else {
      uint64_t r = splitmix(&state);
      memcpy(p, &r, c.format.channel_bytes);
    }
  }
  for (int i = 0; i < kSamples; ++i)
    for (int a = 0; a < 3; ++a) {
      float v = c.normalized_coords ? uniform(&state, -1.25f, 2.25f)
                                    : uniform(&state, -2.0f, (float)in.extent[a] + 2.0f);
      in.coords.push_back(a < c.dims ? v : 0.0f);
    }
  for (int ch = 0; ch < 4; ++ch)
    in.border[ch] = c.format.float_result ? uniform(&state, -2.0f, 2.0f) : (float)(int)uniform(&state, 0.0f, 100.0f);
  return in;
}

rocmig_tex::Texture software_texture(const Config& c, const Inputs& in, const unsigned char* data) {
  rocmig_tex::Texture t{};
  t.data = data;
  t.row_pitch = (unsigned long long)in.extent[0] * c.format.channels * c.format.channel_bytes;
  t.slice_pitch = t.row_pitch * in.extent[1];
  for (int a = 0; a < 3; ++a) {
    t.extent[a] = in.extent[a];
    t.address[a] = c.mode;
  }
  t.dims = c.dims;
  t.channels = c.format.channels;
  t.channel_bytes = c.format.channel_bytes;
  t.kind = c.format.kind;
  t.linear_filter = c.linear;
  t.normalized_read = c.format.normalized_read;
  t.normalized_coords = c.normalized_coords;
  for (int ch = 0; ch < 4; ++ch) t.border[ch] = in.border[ch];
  return t;
}

// four 32-bit values per fetch: floats or integers
ROCMIG_TEX_HD void software_fetch(const rocmig_tex::Texture& t, int float_result, int gather, const float* u,
                                  uint32_t out[4]) {
  if (gather) {
    float f[4];
    int r[4];
    rocmig_tex::gather(t, u[0], u[1], gather - 1, !float_result, f, r);
    for (int ch = 0; ch < 4; ++ch) out[ch] = float_result ? (uint32_t)rocmig_tex::float_to_bits(f[ch]) : (uint32_t)r[ch];
    return;
  }
  if (float_result) {
    float v[4];
    rocmig_tex::sample_float(t, u, 0, v);
    for (int ch = 0; ch < 4; ++ch) out[ch] = (uint32_t)rocmig_tex::float_to_bits(v[ch]);
  } else {
    int v[4];
    rocmig_tex::sample_raw(t, u, 0, v);
    for (int ch = 0; ch < 4; ++ch) out[ch] = (uint32_t)v[ch];
  }
  for (int ch = t.channels; ch < 4; ++ch) out[ch] = 0;  // the fetch's type has the texel's channels only
}

void print(const char* kind, const std::string& name, const std::vector<uint32_t>& values) {
  printf("%s %s", kind, name.c_str());
  for (uint32_t v : values) printf(" %08x", v);
  printf("\n");
}

}  // namespace

#ifdef __CUDACC__

#define CHECK(call)                                                                  \
  do {                                                                               \
    cudaError_t e = (call);                                                          \
    if (e != cudaSuccess) {                                                          \
      fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e)); \
      exit(1);                                                                       \
    }                                                                                \
  } while (0)

template <class T>
__device__ T hardware_fetch(cudaTextureObject_t o, int dims, const float* u) {
  if (dims == 1) return tex1D<T>(o, u[0]);
  if (dims == 2) return tex2D<T>(o, u[0], u[1]);
  return tex3D<T>(o, u[0], u[1], u[2]);
}

template <class T>
__global__ void hardware_kernel(cudaTextureObject_t o, int dims, const float* coords, T* out) {
  int i = threadIdx.x;
  out[i] = hardware_fetch<T>(o, dims, coords + 3 * i);
}

__global__ void software_kernel(rocmig_tex::Texture t, int float_result, int gather, const float* coords, uint32_t* out) {
  int i = threadIdx.x;
  software_fetch(t, float_result, gather, coords + 3 * i, out + 4 * i);
}

template <class T>
__global__ void gather_kernel(cudaTextureObject_t o, int component, const float* coords, T* out) {
  int i = threadIdx.x;
  out[i] = tex2Dgather<T>(o, coords[3 * i], coords[3 * i + 1], component);
}

// the hardware's fetches as four 32-bit values each (channels past the texel's are 0)
template <class T>
std::vector<uint32_t> run_hardware(cudaTextureObject_t o, int dims, const float* coords, int channels, int float_result,
                                   int gather = 0) {
  T* d_out;
  CHECK(cudaMalloc(&d_out, kSamples * sizeof(T)));
  if (gather) {
    gather_kernel<T><<<1, kSamples>>>(o, gather - 1, coords, d_out);
  } else {
    hardware_kernel<T><<<1, kSamples>>>(o, dims, coords, d_out);
  }
  CHECK(cudaGetLastError());
  std::vector<T> got(kSamples);
  CHECK(cudaMemcpy(got.data(), d_out, kSamples * sizeof(T), cudaMemcpyDeviceToHost));
  CHECK(cudaFree(d_out));
  std::vector<uint32_t> out(4 * kSamples, 0);
  for (int i = 0; i < kSamples; ++i) {
    const unsigned char* p = reinterpret_cast<const unsigned char*>(&got[i]);
    for (int ch = 0; ch < channels; ++ch) {
      if (float_result || sizeof(T) / channels == 4) {
        memcpy(&out[4 * i + ch], p + 4 * ch, 4);
      } else {
        out[4 * i + ch] = p[ch];  // unsigned char elements
      }
    }
  }
  return out;
}

int main() {
  std::vector<Config> all = configs();
  for (size_t k = 0; k < all.size(); ++k) {
    const Config& c = all[k];
    Inputs in = inputs(c, 1000 + k);
    cudaChannelFormatKind kind = c.format.kind == rocmig_tex::kFloat ? cudaChannelFormatKindFloat
                                 : c.format.kind == rocmig_tex::kSigned ? cudaChannelFormatKindSigned
                                                                       : cudaChannelFormatKindUnsigned;
    int bits = 8 * c.format.channel_bytes;
    cudaChannelFormatDesc desc = cudaCreateChannelDesc(bits, c.format.channels > 1 ? bits : 0,
                                                       c.format.channels > 2 ? bits : 0, c.format.channels > 3 ? bits : 0,
                                                       kind);
    cudaArray_t array;
    cudaExtent extent = make_cudaExtent(in.extent[0], c.dims >= 2 ? in.extent[1] : 0, c.dims == 3 ? in.extent[2] : 0);
    CHECK(cudaMalloc3DArray(&array, &desc, extent, c.gather ? cudaArrayTextureGather : 0));
    size_t row = (size_t)in.extent[0] * c.format.channels * c.format.channel_bytes;
    cudaMemcpy3DParms copy = {};
    copy.srcPtr = make_cudaPitchedPtr(in.texels.data(), row, in.extent[0], in.extent[1]);
    copy.dstArray = array;
    copy.extent = make_cudaExtent(in.extent[0], in.extent[1], in.extent[2]);
    copy.kind = cudaMemcpyHostToDevice;
    CHECK(cudaMemcpy3D(&copy));
    cudaResourceDesc res = {};
    res.resType = cudaResourceTypeArray;
    res.res.array.array = array;
    cudaTextureDesc tex = {};
    for (int a = 0; a < 3; ++a) tex.addressMode[a] = (cudaTextureAddressMode)c.mode;
    tex.filterMode = c.linear ? cudaFilterModeLinear : cudaFilterModePoint;
    tex.readMode = c.format.normalized_read ? cudaReadModeNormalizedFloat : cudaReadModeElementType;
    tex.normalizedCoords = c.normalized_coords;
    for (int ch = 0; ch < 4; ++ch) tex.borderColor[ch] = in.border[ch];
    cudaTextureObject_t object;
    CHECK(cudaCreateTextureObject(&object, &res, &tex, nullptr));
    float* d_coords;
    CHECK(cudaMalloc(&d_coords, in.coords.size() * sizeof(float)));
    CHECK(cudaMemcpy(d_coords, in.coords.data(), in.coords.size() * sizeof(float), cudaMemcpyHostToDevice));
    std::vector<uint32_t> hw;
    const char* f = c.format.name;
    if (c.gather && c.format.float_result) hw = run_hardware<float4>(object, 2, d_coords, 4, 1, c.gather);
    else if (c.gather) hw = run_hardware<uchar4>(object, 2, d_coords, 4, 0, c.gather);
    else if (!strcmp(f, "f32x1") || !strcmp(f, "f16x1")) hw = run_hardware<float>(object, c.dims, d_coords, 1, 1);
    else if (!strcmp(f, "f32x4") || !strcmp(f, "u8x4n")) hw = run_hardware<float4>(object, c.dims, d_coords, 4, 1);
    else if (!strcmp(f, "s16x2n")) hw = run_hardware<float2>(object, c.dims, d_coords, 2, 1);
    else if (!strcmp(f, "u8x1")) hw = run_hardware<unsigned char>(object, c.dims, d_coords, 1, 0);
    else hw = run_hardware<int>(object, c.dims, d_coords, 1, 0);
    print("hw", c.name, hw);

    unsigned char* d_texels;
    CHECK(cudaMalloc(&d_texels, in.texels.size()));
    CHECK(cudaMemcpy(d_texels, in.texels.data(), in.texels.size(), cudaMemcpyHostToDevice));
    uint32_t* d_soft;
    CHECK(cudaMalloc(&d_soft, 16 * kSamples));
    software_kernel<<<1, kSamples>>>(software_texture(c, in, d_texels), c.format.float_result, c.gather, d_coords, d_soft);
    CHECK(cudaGetLastError());
    std::vector<uint32_t> soft(4 * kSamples);
    CHECK(cudaMemcpy(soft.data(), d_soft, 16 * kSamples, cudaMemcpyDeviceToHost));
    print("soft", c.name, soft);
    CHECK(cudaDestroyTextureObject(object));
    CHECK(cudaFreeArray(array));
    CHECK(cudaFree(d_coords));
    CHECK(cudaFree(d_texels));
    CHECK(cudaFree(d_soft));
  }
  return 0;
}

#else

int main() {
  std::vector<Config> all = configs();
  for (size_t k = 0; k < all.size(); ++k) {
    const Config& c = all[k];
    Inputs in = inputs(c, 1000 + k);
    rocmig_tex::Texture t = software_texture(c, in, in.texels.data());
    std::vector<uint32_t> soft(4 * kSamples);
    for (int i = 0; i < kSamples; ++i) software_fetch(t, c.format.float_result, c.gather, &in.coords[3 * i], &soft[4 * i]);
    print("soft", c.name, soft);
  }
  return 0;
}

#endif
