"""migrate's software textures (recipes/migrate/migrate/cuda_texture_soft.h, the fixup texture-soft).

tests/images/sources/texture_reference.json holds the fetches an NVIDIA H100's texture units returned for
bench/texture_harness.cpp's 252 configurations (bench/texture_reference.py, nvcc 13.0, sm_90). Here the same
harness is built for the host with the dev image's clang, so the header's fetches run on the same texels
and coordinates, and each configuration is compared (texture_reference.compare: point sampling, gathers
and integer reads bit for bit, linear filtering within two steps of the 8-bit weights over the texel span).
Then a tree with CUDA texture objects (2D array with linear filtering, a 3D volume, a linear resource read
by tex1Dfetch) goes through the whole recipe and compiles for gfx942, which has no image instructions,
and gfx1100, as does one that writes a surface object; a tree with a surface reference keeps HIP's textures
and its gfx942 finding.

Image: $ROCMIG_DEV_IMAGE (default rocmig/dev:rocm7.2.4-gfx942-debian); skipped when it is not built.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

from tests.images.test_migrate_cases import ROOT, image_or_skip, migrate_tree_in_image, run_recipe

sys.path.insert(0, str(ROOT / "bench"))

from texture_reference import compare, parse  # noqa: E402

pytestmark = pytest.mark.docker

REFERENCE = Path(__file__).parent / "sources" / "texture_reference.json"

TRANSFORM_CUH = """\
#pragma once
#include <cuda_runtime.h>

// rotates the texture by theta around its centre (CUDA samples' simpleTexture, texture-object form)
__global__ void transformKernel(float *outputData, int width, int height, float theta, cudaTextureObject_t tex) {
  unsigned int x = blockIdx.x * blockDim.x + threadIdx.x;
  unsigned int y = blockIdx.y * blockDim.y + threadIdx.y;
  float u = (float)x - (float)width / 2;
  float v = (float)y - (float)height / 2;
  float tu = (u * cosf(theta) - v * sinf(theta)) / width + 0.5f;
  float tv = (v * cosf(theta) + u * sinf(theta)) / height + 0.5f;
  outputData[y * width + x] = tex2D<float>(tex, tu, tv);
}
"""

MAIN_CU = """\
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cuda_runtime.h>
#include "transform.cuh"

int main() {
  const int width = 64, height = 32;
  float *h = (float *)malloc(width * height * sizeof(float));
  for (int i = 0; i < width * height; ++i) h[i] = (float)i;
  cudaChannelFormatDesc desc = cudaCreateChannelDesc(32, 0, 0, 0, cudaChannelFormatKindFloat);
  cudaArray *cuArray;
  cudaMallocArray(&cuArray, &desc, width, height);
  cudaMemcpy2DToArray(cuArray, 0, 0, h, width * sizeof(float), width * sizeof(float), height, cudaMemcpyHostToDevice);
  cudaResourceDesc texRes;
  memset(&texRes, 0, sizeof(cudaResourceDesc));
  texRes.resType = cudaResourceTypeArray;
  texRes.res.array.array = cuArray;
  cudaTextureDesc texDescr;
  memset(&texDescr, 0, sizeof(cudaTextureDesc));
  texDescr.normalizedCoords = true;
  texDescr.filterMode = cudaFilterModeLinear;
  texDescr.addressMode[0] = cudaAddressModeWrap;
  texDescr.addressMode[1] = cudaAddressModeWrap;
  texDescr.readMode = cudaReadModeElementType;
  cudaTextureObject_t tex;
  cudaCreateTextureObject(&tex, &texRes, &texDescr, NULL);  // the texture the kernel reads
  float *d;
  cudaMalloc(&d, width * height * sizeof(float));
  dim3 block(8, 8), grid(width / 8, height / 8);
  transformKernel<<<grid, block>>>(d, width, height, 0.5f, tex);
  cudaMemcpy(h, d, width * height * sizeof(float), cudaMemcpyDeviceToHost);
  printf("%f\\n", h[0]);
  cudaDestroyTextureObject(tex);
  cudaFreeArray(cuArray);
  cudaFree(d);
  free(h);
  return 0;
}
"""

VOLUME_CU = """\
#include <cuda_runtime.h>

__global__ void sample(cudaTextureObject_t volume, cudaTextureObject_t table, float *out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    float4 weights = tex1Dfetch<float4>(table, i);
    out[i] = weights.x * tex3D<float>(volume, i * 0.01f, 0.5f, 0.25f);
  }
}

void run(const unsigned char *voxels, cudaExtent extent, const float4 *d_table, int n, float *d_out) {
  cudaChannelFormatDesc desc = cudaCreateChannelDesc<unsigned char>();
  cudaArray_t array;
  cudaMalloc3DArray(&array, &desc, extent);
  cudaMemcpy3DParms copy = {0};
  copy.srcPtr = make_cudaPitchedPtr((void *)voxels, extent.width, extent.width, extent.height);
  copy.dstArray = array;
  copy.extent = extent;
  copy.kind = cudaMemcpyHostToDevice;
  cudaMemcpy3D(&copy);
  cudaResourceDesc res = {};
  res.resType = cudaResourceTypeArray;
  res.res.array.array = array;
  cudaTextureDesc td = {};
  td.filterMode = cudaFilterModeLinear;
  td.readMode = cudaReadModeNormalizedFloat;
  td.normalizedCoords = 1;
  cudaTextureObject_t volume, table;
  cudaCreateTextureObject(&volume, &res, &td, nullptr);
  cudaResourceDesc linear = {};
  linear.resType = cudaResourceTypeLinear;
  linear.res.linear.devPtr = (void *)d_table;
  linear.res.linear.desc = cudaCreateChannelDesc<float4>();
  linear.res.linear.sizeInBytes = n * sizeof(float4);
  cudaTextureDesc point = {};
  cudaCreateTextureObject(&table, &linear, &point, nullptr);
  sample<<<(n + 127) / 128, 128>>>(volume, table, d_out, n);
  cudaDestroyTextureObject(volume);
  cudaDestroyTextureObject(table);
  cudaFreeArray(array);
}
"""

# astra-toolbox 1.8's fan-beam back projection, cut down: a typedef'd 2D texture reference bound to pitched
# memory, linear filtering, border addressing; and pytigre's 3D reference bound to an array
REFERENCE_CU = """\
#include <cuda_runtime.h>

typedef texture<float, 2, cudaReadModeElementType> texture2D;
static texture2D gT_FanProjTexture;
texture<float, cudaTextureType3D, cudaReadModeElementType> tex;

bool bindProjDataTexture(float* data, unsigned int pitch, unsigned int width, unsigned int height,
                         cudaTextureAddressMode mode = cudaAddressModeBorder) {
  cudaChannelFormatDesc channelDesc = cudaCreateChannelDesc<float>();
  gT_FanProjTexture.addressMode[0] = mode;
  gT_FanProjTexture.addressMode[1] = mode;
  gT_FanProjTexture.filterMode = cudaFilterModeLinear;
  gT_FanProjTexture.normalized = false;
  cudaBindTexture2D(0, gT_FanProjTexture, (const void*)data, channelDesc, width, height, sizeof(float) * pitch);
  return true;
}

__global__ void devFanBP(float* D_volData, unsigned int volPitch, float fT, float fA) {
  float fVal = tex2D(gT_FanProjTexture, fT, fA);
  fVal += tex3D(tex, fT + 0.5, fA + 0.5, 0.5);
  D_volData[threadIdx.x * volPitch] += fVal;
}

void bindVolume(cudaArray* d_imagedata) {
  tex.normalized = false;
  tex.filterMode = cudaFilterModePoint;
  tex.addressMode[0] = cudaAddressModeBorder;
  cudaChannelFormatDesc channelDesc = cudaCreateChannelDesc<float>();
  cudaBindTextureToArray(tex, d_imagedata, channelDesc);
}

void unbind() {
  cudaUnbindTexture(gT_FanProjTexture);
  cudaUnbindTexture(tex);
}
"""

SURFACE_CU = """\
#include <cuda_runtime.h>

__global__ void fill(cudaSurfaceObject_t surface, cudaTextureObject_t tex, int width) {
  int x = threadIdx.x;
  surf2Dwrite(tex2D<float>(tex, x, 0), surface, x * sizeof(float), 0, cudaBoundaryModeZero);
}

void run(cudaArray_t array, cudaTextureObject_t tex) {
  cudaResourceDesc res = {};
  res.resType = cudaResourceTypeArray;
  res.res.array.array = array;
  cudaSurfaceObject_t surface;
  cudaCreateSurfaceObject(&surface, &res);
  fill<<<1, 32>>>(surface, tex, 32);
  cudaDestroySurfaceObject(surface);
}
"""

# a surface reference (CUDA 11 and before): not emulated, so the tree keeps HIP's textures
SURFACE_REFERENCE_CU = """\
#include <cuda_runtime.h>

surface<void, 2> output;

__global__ void fill(cudaTextureObject_t tex) {
  int x = threadIdx.x;
  surf2Dwrite(tex2D<float>(tex, x, 0), output, x * sizeof(float), 0);
}
"""


def test_software_textures_match_nvidia_texture_units(tmp_path: Path) -> None:
    image_or_skip()
    src = tmp_path / "src"
    src.mkdir()
    shutil.copy(ROOT / "bench" / "texture_harness.cpp", src)
    shutil.copy(ROOT / "recipes" / "migrate" / "migrate" / "cuda_texture_soft.h", src)
    run = run_recipe(src, tmp_path / "out", "-c", "clang++-22 -std=c++17 -O1 -Wall -Werror -I /src "
                     "/src/texture_harness.cpp -o /out/harness && /out/harness", entry=("bash",))
    assert run.returncode == 0, run.stderr[-3000:]
    software = parse(run.stdout, "soft")
    reference = json.loads(REFERENCE.read_text(encoding="utf-8"))
    hardware = {name: [int(v, 16) for v in values] for name, values in reference["hardware"].items()}
    assert len(hardware) == 252 and set(software) == set(hardware)
    wrong = {name: compare(name, values, software[name]) for name, values in hardware.items()}
    assert not {name: w for name, w in wrong.items() if w[0]}, {name: w for name, w in wrong.items() if w[0]}
    exact = [name for name in hardware if "-point-" in name or "-gather" in name]
    assert len(exact) == 162 and all(hardware[name] == software[name] for name in exact)


def test_texture_object_tree_compiles_for_gfx942_with_software_textures(tmp_path: Path) -> None:
    image_or_skip()
    report = migrate_tree_in_image(tmp_path, {"transform.cuh": TRANSFORM_CUH, "main.cu": MAIN_CU, "volume.cu": VOLUME_CU})
    units = {f["path"]: f for f in report["files"] if f.get("unit")}
    for path in ("main.cu", "volume.cu"):
        for arch in ("gfx942", "gfx1100"):
            assert units[path]["compile"][arch]["status"] == "ok", units[path]["compile"][arch]
    fetches = [f for file in report["files"] for f in file["findings"] if f["rule"] == "texture-fetch-no-image"]
    assert len(fetches) == 3 and all(f["status"] == "fixed" for f in fetches), fetches
    hip = tmp_path / "out" / "run" / "hip"
    main, transform = (hip / "main.cu").read_text(encoding="utf-8"), (hip / "transform.cuh").read_text(encoding="utf-8")
    assert "rocmig_tex::MallocArray(&cuArray" in main and "rocmig_tex::CreateTextureObject(&tex" in main
    assert "rocmig_tex::tex2D<float>(tex, tu, tv)" in transform
    assert "// the texture the kernel reads" in main
    volume = (hip / "volume.cu").read_text(encoding="utf-8")
    assert "rocmig_tex::Memcpy3D(&copy)" in volume and "rocmig_tex::tex1Dfetch<float4>(table, i)" in volume


def test_texture_reference_tree_compiles_for_gfx942_with_software_textures(tmp_path: Path) -> None:
    image_or_skip()
    report = migrate_tree_in_image(tmp_path, {"fan_bp.cu": REFERENCE_CU})
    (unit,) = [f for f in report["files"] if f.get("unit")]
    for arch in ("gfx942", "gfx1100"):
        assert unit["compile"][arch]["status"] == "ok", unit["compile"][arch]
    rules = {(f["rule"], f["status"]) for f in unit["findings"] if f["rule"].startswith("texture-")}
    assert rules and all(status == "fixed" for _rule, status in rules), unit["findings"]
    migrated = (tmp_path / "out" / "run" / "hip" / "fan_bp.cu").read_text(encoding="utf-8")
    assert "static texture2D gT_FanProjTexture;" in migrated
    assert "rocmig_tex::BindTexture2D(0, gT_FanProjTexture," in migrated and "rocmig_tex::tex3D(tex, " in migrated
    assert "rocmig_tex::BindTextureToArray(tex, d_imagedata, channelDesc)" in migrated


def test_surface_objects_compile_on_both_archs(tmp_path: Path) -> None:
    """HIP's surf2Dwrite has no boundary-mode argument (gfx1100 fails too) and needs image instructions
    (gfx942): the software surfaces take CUDA's forms on both."""
    image_or_skip()
    report = migrate_tree_in_image(tmp_path, {"fill.cu": SURFACE_CU})
    (unit,) = [f for f in report["files"] if f.get("unit")]
    for arch in ("gfx942", "gfx1100"):
        assert unit["compile"][arch]["status"] == "ok", unit["compile"][arch]
    migrated = (tmp_path / "out" / "run" / "hip" / "fill.cu").read_text(encoding="utf-8")
    assert "rocmig_tex::surf2Dwrite(rocmig_tex::tex2D<float>(tex, x, 0), surface," in migrated
    assert "rocmig_tex::CreateSurfaceObject(&surface, &res)" in migrated


def test_tree_with_surface_references_keeps_hip_textures(tmp_path: Path) -> None:
    image_or_skip()
    report = migrate_tree_in_image(tmp_path, {"fill.cu": SURFACE_REFERENCE_CU})
    (unit,) = [f for f in report["files"] if f.get("unit")]
    assert unit["compile"]["gfx942"]["status"] != "ok"
    migrated = (tmp_path / "out" / "run" / "hip" / "fill.cu").read_text(encoding="utf-8")
    assert "rocmig_tex" not in migrated
    assert {f["status"] for f in unit["findings"] if f["rule"] == "texture-fetch-no-image"} == {"open"}
