// cuda_texture_soft.h's arrays, copies and texture objects against CUDA's own, on an NVIDIA GPU.
// HIP's names map to CUDA's below (ROCMIG_TEXTURE_CUDA_CHECK), so the header's HIP code runs as written:
// each case fills a CUDA array and a rocmig_tex array with the same texels through the same kind of copy
// (2D, 3D with offsets, linear, pitched, layered), makes a texture object of each, fetches both at the
// same coordinates and prints "api CASE FETCHES WRONG WIDEST": fetches compared, fetches outside the
// bounds (point sampling bit for bit, linear within 2/256 of the texel span), the widest gap over the
// span. The round-trip case copies back out of both arrays and compares bytes; the surface case writes
// through CUDA's surface object and the header's, reads past the edges under the zero and clamp boundary
// modes, and compares the reads and both arrays' bytes. Exit status 1 when a case has a wrong fetch.
#include <cuda_runtime.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <vector>

#define hipError_t cudaError_t
#define hipSuccess cudaSuccess
#define hipErrorInvalidValue cudaErrorInvalidValue
#define hipErrorOutOfMemory cudaErrorMemoryAllocation
#define hipErrorNotSupported cudaErrorNotSupported
#define hipMalloc cudaMalloc
#define hipFree cudaFree
#define hipMemcpy cudaMemcpy
#define hipMemcpyAsync cudaMemcpyAsync
#define hipMemcpy2D cudaMemcpy2D
#define hipMemcpy2DAsync cudaMemcpy2DAsync
#define hipMemcpy3D cudaMemcpy3D
#define hipMemcpy3DAsync cudaMemcpy3DAsync
#define hipMemcpyKind cudaMemcpyKind
#define hipMemcpyHostToDevice cudaMemcpyHostToDevice
#define hipStream_t cudaStream_t
#define hipArray cudaArray
#define hipArray_t cudaArray_t
#define hipArray_const_t cudaArray_const_t
#define hipArrayLayered cudaArrayLayered
#define hipChannelFormatDesc cudaChannelFormatDesc
#define hipChannelFormatKindSigned cudaChannelFormatKindSigned
#define hipChannelFormatKindUnsigned cudaChannelFormatKindUnsigned
#define hipExtent cudaExtent
#define make_hipExtent make_cudaExtent
#define make_hipPitchedPtr make_cudaPitchedPtr
#define hipMemcpy3DParms cudaMemcpy3DParms
#define hipResourceDesc cudaResourceDesc
#define hipTextureDesc cudaTextureDesc
#define hipResourceViewDesc cudaResourceViewDesc
#define hipTextureObject_t cudaTextureObject_t
#define hipResourceTypeArray cudaResourceTypeArray
#define hipResourceTypeLinear cudaResourceTypeLinear
#define hipResourceTypePitch2D cudaResourceTypePitch2D
#define hipFilterModeLinear cudaFilterModeLinear
#define hipReadModeNormalizedFloat cudaReadModeNormalizedFloat
#define hipSurfaceObject_t cudaSurfaceObject_t
#define hipSurfaceBoundaryMode cudaSurfaceBoundaryMode
#define hipBoundaryModeZero cudaBoundaryModeZero
#define hipBoundaryModeClamp cudaBoundaryModeClamp
#define hipBoundaryModeTrap cudaBoundaryModeTrap
#define ROCMIG_TEXTURE_CUDA_CHECK
#include "cuda_texture_soft.h"

namespace rocmig_tex {
// CUDA's float4 is a plain struct (HIP's vector types have their own Result)
template <> struct Result<float4> {
  static constexpr bool is_float = true;
  template <class V> __device__ static float4 make(const V* v) { return make_float4(v[0], v[1], v[2], v[3]); }
};
}  // namespace rocmig_tex

#define CHECK(call)                                                                         \
  do {                                                                                      \
    cudaError_t e = (call);                                                                 \
    if (e != cudaSuccess) {                                                                 \
      fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e));  \
      exit(2);                                                                              \
    }                                                                                       \
  } while (0)

namespace {

const int kFetches = 256;

// a fixed pseudo-random sequence (xorshift32)
struct Random {
  unsigned state;
  unsigned next() {
    state ^= state << 13;
    state ^= state >> 17;
    state ^= state << 5;
    return state;
  }
  float uniform(float lo, float hi) { return lo + (hi - lo) * (float)(next() >> 8) / (float)(1u << 24); }
};

// both textures fetched at the same coordinates (layer: 0 unless layered); channel 0 as float
__global__ void fetch_both(cudaTextureObject_t hardware, cudaTextureObject_t software, int kind, const float4* at,
                           float* out) {
  int i = threadIdx.x + blockIdx.x * blockDim.x;
  float4 c = at[i];
  float h = 0.0f, s = 0.0f;
  if (kind == 1) {
    h = tex1Dfetch<float4>(hardware, (int)c.x).y;
    s = rocmig_tex::tex1Dfetch<float4>(software, (int)c.x).y;
  } else if (kind == 2) {
    h = tex2D<float>(hardware, c.x, c.y);
    s = rocmig_tex::tex2D<float>(software, c.x, c.y);
  } else if (kind == 3) {
    h = tex3D<float>(hardware, c.x, c.y, c.z);
    s = rocmig_tex::tex3D<float>(software, c.x, c.y, c.z);
  } else {
    h = tex2DLayered<float>(hardware, c.x, c.y, (int)c.w);
    s = rocmig_tex::tex2DLayered<float>(software, c.x, c.y, (int)c.w);
  }
  out[2 * i] = h;
  out[2 * i + 1] = s;
}

int report(const char* name, cudaTextureObject_t hardware, cudaTextureObject_t software, int kind,
           const std::vector<float4>& at, bool linear, float span) {
  float4* d_at;
  float* d_out;
  CHECK(cudaMalloc(&d_at, at.size() * sizeof(float4)));
  CHECK(cudaMalloc(&d_out, 2 * at.size() * sizeof(float)));
  CHECK(cudaMemcpy(d_at, at.data(), at.size() * sizeof(float4), cudaMemcpyHostToDevice));
  fetch_both<<<(int)at.size() / 64, 64>>>(hardware, software, kind, d_at, d_out);
  CHECK(cudaGetLastError());
  std::vector<float> out(2 * at.size());
  CHECK(cudaMemcpy(out.data(), d_out, out.size() * sizeof(float), cudaMemcpyDeviceToHost));
  CHECK(cudaFree(d_at));
  CHECK(cudaFree(d_out));
  int wrong = 0;
  float widest = 0.0f;
  for (size_t i = 0; i < at.size(); ++i) {
    float h = out[2 * i], s = out[2 * i + 1];
    float gap = fabsf(h - s) / span;
    widest = fmaxf(widest, gap);
    wrong += linear ? !(gap <= 2.0f / 256.0f) : memcmp(&h, &s, 4) != 0;
  }
  printf("api %s %zu %d %.3g\n", name, at.size(), wrong, widest);
  return wrong;
}

cudaTextureObject_t object_of(const cudaResourceDesc& res, const cudaTextureDesc& tex, bool software) {
  cudaTextureObject_t object;
  if (software) {
    CHECK(rocmig_tex::CreateTextureObject(&object, &res, &tex, nullptr));
  } else {
    CHECK(cudaCreateTextureObject(&object, &res, &tex, nullptr));
  }
  return object;
}

void destroy(cudaTextureObject_t hardware, cudaTextureObject_t software) {
  CHECK(cudaDestroyTextureObject(hardware));
  CHECK(rocmig_tex::DestroyTextureObject(software));
}

cudaTextureDesc texture_desc(cudaTextureAddressMode mode, bool linear, bool normalized_coords, bool normalized_read) {
  cudaTextureDesc tex = {};
  for (int a = 0; a < 3; ++a) tex.addressMode[a] = mode;
  tex.filterMode = linear ? cudaFilterModeLinear : cudaFilterModePoint;
  tex.readMode = normalized_read ? cudaReadModeNormalizedFloat : cudaReadModeElementType;
  tex.normalizedCoords = normalized_coords;
  tex.borderColor[0] = 0.25f;
  return tex;
}

// a 2D float array filled by Memcpy2DToArray from a wider host buffer, linear filtering, wrap
int array_2d(Random* r) {
  const int w = 37, h = 19, spitch = 48 * sizeof(float);
  std::vector<float> host(48 * h);
  for (float& v : host) v = r->uniform(-4.0f, 4.0f);
  cudaChannelFormatDesc desc = cudaCreateChannelDesc<float>();
  cudaArray_t hw_array, sw_array;
  CHECK(cudaMallocArray(&hw_array, &desc, w, h));
  CHECK(rocmig_tex::MallocArray(&sw_array, &desc, w, h));
  CHECK(cudaMemcpy2DToArray(hw_array, 0, 0, host.data(), spitch, w * sizeof(float), h, cudaMemcpyHostToDevice));
  CHECK(rocmig_tex::Memcpy2DToArray(sw_array, 0, 0, host.data(), spitch, w * sizeof(float), h, cudaMemcpyHostToDevice));
  cudaResourceDesc res = {};
  res.resType = cudaResourceTypeArray;
  cudaTextureDesc tex = texture_desc(cudaAddressModeWrap, true, true, false);
  res.res.array.array = hw_array;
  cudaTextureObject_t hardware = object_of(res, tex, false);
  res.res.array.array = sw_array;
  cudaTextureObject_t software = object_of(res, tex, true);
  std::vector<float4> at(kFetches);
  for (float4& c : at) c = make_float4(r->uniform(-1.5f, 2.5f), r->uniform(-1.5f, 2.5f), 0.0f, 0.0f);
  int wrong = report("array-2d-memcpy2d-linear-wrap", hardware, software, 2, at, true, 8.0f);
  destroy(hardware, software);
  CHECK(cudaFreeArray(hw_array));
  CHECK(rocmig_tex::FreeArray(sw_array));
  return wrong;
}

// a 3D uchar array filled by two Memcpy3D calls into halves of it (source and destination offsets),
// normalized reads, linear filtering, clamp; then point sampling of the same array, border
int array_3d(Random* r) {
  const int w = 21, h = 13, d = 9;
  std::vector<unsigned char> host(w * h * d);
  for (unsigned char& v : host) v = (unsigned char)r->next();
  cudaChannelFormatDesc desc = cudaCreateChannelDesc<unsigned char>();
  cudaArray_t hw_array, sw_array;
  CHECK(cudaMalloc3DArray(&hw_array, &desc, make_cudaExtent(w, h, d)));
  CHECK(rocmig_tex::Malloc3DArray(&sw_array, &desc, make_cudaExtent(w, h, d)));
  for (int half = 0; half < 2; ++half) {
    cudaMemcpy3DParms copy = {};
    copy.srcPtr = make_cudaPitchedPtr(host.data(), w, w, h);
    copy.srcPos = make_cudaPos(half ? 8 : 0, 0, half ? 4 : 0);
    copy.dstPos = copy.srcPos;
    copy.extent = make_cudaExtent(half ? w - 8 : 8, h, half ? d - 4 : 4);
    copy.kind = cudaMemcpyHostToDevice;
    copy.dstArray = hw_array;
    CHECK(cudaMemcpy3D(&copy));
    copy.dstArray = sw_array;
    CHECK(rocmig_tex::Memcpy3D(&copy));
    if (half == 0) {  // the parts neither half covers, whole slices 4..d of x < 8 and 0..4 of x >= 8
      cudaMemcpy3DParms rest = copy;
      rest.srcPos = rest.dstPos = make_cudaPos(0, 0, 4);
      rest.extent = make_cudaExtent(8, h, d - 4);
      rest.dstArray = hw_array;
      CHECK(cudaMemcpy3D(&rest));
      rest.dstArray = sw_array;
      CHECK(rocmig_tex::Memcpy3D(&rest));
      rest.srcPos = rest.dstPos = make_cudaPos(8, 0, 0);
      rest.extent = make_cudaExtent(w - 8, h, 4);
      rest.dstArray = hw_array;
      CHECK(cudaMemcpy3D(&rest));
      rest.dstArray = sw_array;
      CHECK(rocmig_tex::Memcpy3D(&rest));
    }
  }
  cudaResourceDesc res = {};
  res.resType = cudaResourceTypeArray;
  int wrong = 0;
  for (int linear = 1; linear >= 0; --linear) {
    cudaTextureDesc tex = texture_desc(linear ? cudaAddressModeClamp : cudaAddressModeBorder, linear, false, true);
    res.res.array.array = hw_array;
    cudaTextureObject_t hardware = object_of(res, tex, false);
    res.res.array.array = sw_array;
    cudaTextureObject_t software = object_of(res, tex, true);
    std::vector<float4> at(kFetches);
    for (float4& c : at) {
      c = make_float4(r->uniform(-1.0f, w + 1.0f), r->uniform(-1.0f, h + 1.0f), r->uniform(-1.0f, d + 1.0f), 0.0f);
    }
    wrong += report(linear ? "array-3d-memcpy3d-offsets-linear-clamp" : "array-3d-memcpy3d-offsets-point-border",
                    hardware, software, 3, at, linear, 1.0f);
    destroy(hardware, software);
  }
  CHECK(cudaFreeArray(hw_array));
  CHECK(rocmig_tex::FreeArray(sw_array));
  return wrong;
}

// a float4 linear resource (tex1Dfetch, in and out of range) and a pitched 2D resource (point, border)
int linear_and_pitched(Random* r) {
  const int n = 200, w = 30, h = 11;
  const size_t pitch = 256;
  std::vector<float> host(4 * n), plane(pitch / 4 * h);
  for (float& v : host) v = r->uniform(-4.0f, 4.0f);
  for (float& v : plane) v = r->uniform(-4.0f, 4.0f);
  float *d_linear, *d_plane;
  CHECK(cudaMalloc(&d_linear, host.size() * 4));
  CHECK(cudaMalloc(&d_plane, plane.size() * 4));
  CHECK(cudaMemcpy(d_linear, host.data(), host.size() * 4, cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(d_plane, plane.data(), plane.size() * 4, cudaMemcpyHostToDevice));
  cudaResourceDesc res = {};
  res.resType = cudaResourceTypeLinear;
  res.res.linear.devPtr = d_linear;
  res.res.linear.desc = cudaCreateChannelDesc<float4>();
  res.res.linear.sizeInBytes = host.size() * 4;
  cudaTextureDesc tex = texture_desc(cudaAddressModeClamp, false, false, false);
  cudaTextureObject_t hardware = object_of(res, tex, false), software = object_of(res, tex, true);
  std::vector<float4> at(kFetches);
  for (float4& c : at) c = make_float4(floorf(r->uniform(-10.0f, n + 10.0f)), 0.0f, 0.0f, 0.0f);
  int wrong = report("linear-tex1Dfetch", hardware, software, 1, at, false, 8.0f);
  destroy(hardware, software);
  res = {};
  res.resType = cudaResourceTypePitch2D;
  res.res.pitch2D.devPtr = d_plane;
  res.res.pitch2D.desc = cudaCreateChannelDesc<float>();
  res.res.pitch2D.width = w;
  res.res.pitch2D.height = h;
  res.res.pitch2D.pitchInBytes = pitch;
  tex = texture_desc(cudaAddressModeBorder, false, false, false);
  hardware = object_of(res, tex, false);
  software = object_of(res, tex, true);
  for (float4& c : at) c = make_float4(r->uniform(-2.0f, w + 2.0f), r->uniform(-2.0f, h + 2.0f), 0.0f, 0.0f);
  wrong += report("pitch2d-point-border", hardware, software, 2, at, false, 8.0f);
  destroy(hardware, software);
  CHECK(cudaFree(d_linear));
  CHECK(cudaFree(d_plane));
  return wrong;
}

// a layered 2D float array (Malloc3DArray with the layered flag, filled by Memcpy3D), linear filtering
int layered(Random* r) {
  const int w = 17, h = 9, layers = 5;
  std::vector<float> host(w * h * layers);
  for (float& v : host) v = r->uniform(-4.0f, 4.0f);
  cudaChannelFormatDesc desc = cudaCreateChannelDesc<float>();
  cudaArray_t hw_array, sw_array;
  CHECK(cudaMalloc3DArray(&hw_array, &desc, make_cudaExtent(w, h, layers), cudaArrayLayered));
  CHECK(rocmig_tex::Malloc3DArray(&sw_array, &desc, make_cudaExtent(w, h, layers), cudaArrayLayered));
  cudaMemcpy3DParms copy = {};
  copy.srcPtr = make_cudaPitchedPtr(host.data(), w * sizeof(float), w, h);
  copy.extent = make_cudaExtent(w, h, layers);
  copy.kind = cudaMemcpyHostToDevice;
  copy.dstArray = hw_array;
  CHECK(cudaMemcpy3D(&copy));
  copy.dstArray = sw_array;
  CHECK(rocmig_tex::Memcpy3D(&copy));
  cudaResourceDesc res = {};
  res.resType = cudaResourceTypeArray;
  cudaTextureDesc tex = texture_desc(cudaAddressModeClamp, true, false, false);
  res.res.array.array = hw_array;
  cudaTextureObject_t hardware = object_of(res, tex, false);
  res.res.array.array = sw_array;
  cudaTextureObject_t software = object_of(res, tex, true);
  std::vector<float4> at(kFetches);
  for (float4& c : at) {
    c = make_float4(r->uniform(-1.0f, w + 1.0f), r->uniform(-1.0f, h + 1.0f), 0.0f, (float)(r->next() % layers));
  }
  int wrong = report("array-2d-layered-linear-clamp", hardware, software, 4, at, true, 8.0f);
  destroy(hardware, software);
  CHECK(cudaFreeArray(hw_array));
  CHECK(rocmig_tex::FreeArray(sw_array));
  return wrong;
}

// MemcpyToArray at an offset, then MemcpyFromArray and Memcpy2DFromArray back out: same bytes as CUDA's
int round_trip(Random* r) {
  const int w = 24, h = 7;
  std::vector<int> host(w * h);
  for (int& v : host) v = (int)r->next();
  cudaChannelFormatDesc desc = cudaCreateChannelDesc<int>();
  cudaArray_t hw_array, sw_array;
  CHECK(cudaMallocArray(&hw_array, &desc, w, h));
  CHECK(rocmig_tex::MallocArray(&sw_array, &desc, w, h));
  CHECK(cudaMemcpy2DToArray(hw_array, 0, 0, host.data(), w * 4, w * 4, h, cudaMemcpyHostToDevice));
  CHECK(rocmig_tex::Memcpy2DToArray(sw_array, 0, 0, host.data(), w * 4, w * 4, h, cudaMemcpyHostToDevice));
  std::vector<int> patch(w * 2 + 5, 7);
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
  CHECK(cudaMemcpyToArray(hw_array, 3 * 4, 2, patch.data(), patch.size() * 4, cudaMemcpyHostToDevice));
  CHECK(rocmig_tex::MemcpyToArray(sw_array, 3 * 4, 2, patch.data(), patch.size() * 4, cudaMemcpyHostToDevice));
  std::vector<int> hw_back(w * h), sw_back(w * h), hw_part(10 * 3), sw_part(10 * 3);
  CHECK(cudaMemcpyFromArray(hw_back.data(), hw_array, 0, 0, w * h * 4, cudaMemcpyDeviceToHost));
  CHECK(rocmig_tex::MemcpyFromArray(sw_back.data(), sw_array, 0, 0, w * h * 4, cudaMemcpyDeviceToHost));
#pragma GCC diagnostic pop
  CHECK(cudaMemcpy2DFromArray(hw_part.data(), 40, hw_array, 5 * 4, 3, 40, 3, cudaMemcpyDeviceToHost));
  CHECK(rocmig_tex::Memcpy2DFromArray(sw_part.data(), 40, sw_array, 5 * 4, 3, 40, 3, cudaMemcpyDeviceToHost));
  int wrong = (hw_back != sw_back) + (hw_part != sw_part);
  printf("api array-copies-round-trip 2 %d 0\n", wrong);
  CHECK(cudaFreeArray(hw_array));
  CHECK(rocmig_tex::FreeArray(sw_array));
  return wrong;
}

// each thread writes a float2 through both surfaces (x in bytes)
__global__ void surface_writes(cudaSurfaceObject_t hardware, cudaSurfaceObject_t software, int width) {
  int x = threadIdx.x, y = blockIdx.x;
  float2 v = make_float2(x + 0.25f * y, -x - 0.5f * y);
  if (x < width) {
    surf2Dwrite(v, hardware, x * (int)sizeof(float2), y);
    rocmig_tex::surf2Dwrite(v, software, x * (int)sizeof(float2), y);
  }
}

// then (a later kernel: CUDA's surface reads do not see the same kernel's writes) each reads the texel
// left of it under the zero boundary mode and the one right of it under clamp (the edges are out of range)
__global__ void surface_reads(cudaSurfaceObject_t hardware, cudaSurfaceObject_t software, float* reads) {
  int x = threadIdx.x, y = blockIdx.x;
  int left = (x - 1) * (int)sizeof(float2), right = (x + 1) * (int)sizeof(float2), i = 4 * (y * blockDim.x + x);
  reads[i] = surf2Dread<float2>(hardware, left, y, cudaBoundaryModeZero).x;
  reads[i + 1] = rocmig_tex::surf2Dread<float2>(software, left, y, cudaBoundaryModeZero).x;
  reads[i + 2] = surf2Dread<float2>(hardware, right, y, cudaBoundaryModeClamp).y;
  reads[i + 3] = rocmig_tex::surf2Dread<float2>(software, right, y, cudaBoundaryModeClamp).y;
}

// surface objects over 2D arrays: the texels each wrote, and reads past the edges, compared
int surface_objects() {
  const int w = 29, h = 6, threads = 32;
  cudaChannelFormatDesc desc = cudaCreateChannelDesc<float2>();
  cudaArray_t hw_array, sw_array;
  CHECK(cudaMallocArray(&hw_array, &desc, w, h, cudaArraySurfaceLoadStore));
  CHECK(rocmig_tex::MallocArray(&sw_array, &desc, w, h, cudaArraySurfaceLoadStore));
  cudaResourceDesc res = {};
  res.resType = cudaResourceTypeArray;
  res.res.array.array = hw_array;
  cudaSurfaceObject_t hardware, software;
  CHECK(cudaCreateSurfaceObject(&hardware, &res));
  res.res.array.array = sw_array;
  CHECK(rocmig_tex::CreateSurfaceObject(&software, &res));
  float* d_reads;
  CHECK(cudaMalloc(&d_reads, 4 * h * threads * sizeof(float)));
  surface_writes<<<h, threads>>>(hardware, software, w);
  CHECK(cudaGetLastError());
  surface_reads<<<h, threads>>>(hardware, software, d_reads);
  CHECK(cudaGetLastError());
  std::vector<float> reads(4 * h * threads), hw_back(2 * w * h), sw_back(2 * w * h);
  CHECK(cudaMemcpy(reads.data(), d_reads, reads.size() * sizeof(float), cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy2DFromArray(hw_back.data(), w * 8, hw_array, 0, 0, w * 8, h, cudaMemcpyDeviceToHost));
  CHECK(rocmig_tex::Memcpy2DFromArray(sw_back.data(), w * 8, sw_array, 0, 0, w * 8, h, cudaMemcpyDeviceToHost));
  int wrong = hw_back != sw_back;
  for (size_t i = 0; i < reads.size(); i += 2) wrong += memcmp(&reads[i], &reads[i + 1], 4) != 0;
  printf("api surface-2d-write-read-zero-clamp %zu %d 0\n", 1 + reads.size() / 2, wrong);
  CHECK(cudaDestroySurfaceObject(hardware));
  CHECK(rocmig_tex::DestroySurfaceObject(software));
  CHECK(cudaFree(d_reads));
  CHECK(cudaFreeArray(hw_array));
  CHECK(rocmig_tex::FreeArray(sw_array));
  return wrong;
}

}  // namespace

int main() {
  Random r{20261207u};
  int wrong = array_2d(&r) + array_3d(&r) + linear_and_pitched(&r) + layered(&r) + round_trip(&r) + surface_objects();
  return wrong ? 1 : 0;
}
