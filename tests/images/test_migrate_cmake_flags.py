"""What a project's CMake build says about its ROCm build, through the whole recipe: a define its HIP branch
passes in a flag list (vLLM 0.34.0's cmake/utils.cmake `list(APPEND GPU_FLAGS "-DENABLE_FP8")`) reaches the
compile, and a unit its CMakeLists.txt lists for CUDA builds only gets the warning unit-cuda-only-in-project,
which explains its failed compile when nothing more specific does.

Image: $ROCMIG_DEV_IMAGE (default rocmig/dev:rocm7.2.4-gfx942-debian); skipped when it is not built.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.images.test_migrate_cases import image_or_skip, migrate_tree_in_image

pytestmark = pytest.mark.docker

TREE = {
    "CMakeLists.txt": """project(kernels LANGUAGES CXX)
function(gpu_flags OUT LANG)
  if(${LANG} STREQUAL "CUDA")
    list(APPEND FLAGS "-DENABLE_FP8")
  elseif(${LANG} STREQUAL "HIP")
    list(APPEND FLAGS "-DUSE_ROCM" "-DENABLE_FP8")
  endif()
  set(${OUT} ${FLAGS} PARENT_SCOPE)
endfunction()
set(SRC "quant.cu")
if(GPU_LANG STREQUAL "CUDA")
  list(APPEND SRC "hopper_only.cu")
endif()
""",
    "quant.cu": """#include <cuda_runtime.h>
#ifndef ENABLE_FP8
#error "quant.cu needs the build's ENABLE_FP8"
#endif
__global__ void scale(float* x, float s) { x[threadIdx.x] *= s; }
""",
    "hopper_only.cu": """#include <cuda_runtime.h>
template <int N> struct Tile { static_assert(N % 3 == 0, "tiles of three"); };
__global__ void k(float* x) { Tile<4> t; (void)t; x[0] = 1.f; }
""",
}


def test_a_hip_branch_define_reaches_the_compile_and_a_cuda_only_unit_is_named(tmp_path: Path) -> None:
    image_or_skip()
    report = migrate_tree_in_image(tmp_path, TREE)
    units = {f["path"]: f for f in report["files"] if f.get("unit")}
    inferred = {d["define"] for d in report["options"]["project_flags"]["inferred_defines"]}
    assert "ENABLE_FP8" in inferred
    for arch in ("gfx942", "gfx1100"):
        assert units["quant.cu"]["compile"][arch]["status"] == "ok", units["quant.cu"]["compile"][arch]
        hopper = units["hopper_only.cu"]["compile"][arch]
        assert hopper["status"] == "failed" and hopper["explained_by"]["rule"] == "unit-cuda-only-in-project", hopper
    (finding,) = [f for f in units["hopper_only.cu"]["findings"] if f["rule"] == "unit-cuda-only-in-project"]
    assert finding["note"] == "listed for CUDA builds only at CMakeLists.txt:12"
    assert not [f for f in units["quant.cu"]["findings"] if f["rule"] == "unit-cuda-only-in-project"]
