"""texture.py: which trees take cuda_texture_soft.h, and the renames in each file."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "recipes" / "migrate"))

from migrate import cpp, texture  # noqa: E402

KERNEL = "__global__ void k(cudaTextureObject_t t, float* o) { o[0] = tex2D<float>(t, 0.5f, 0.5f); }\n"


def _soft(tree: dict[str, str]) -> frozenset[str]:
    return texture.soft_files({rel: cpp.blank(text) for rel, text in tree.items()})


def test_a_tree_that_fetches_from_texture_objects_takes_the_software_textures() -> None:
    assert _soft({"k.cu": KERNEL, "main.cpp": "int main() { return 0; }\n"}) == {"k.cu", "main.cpp"}
    assert _soft({"f.cu": "void f(float* p, cudaTextureObject_t t) { tex1Dfetch(p, t, 3); }\n"}) == {"f.cu"}


def test_a_tree_without_fetches_or_with_what_the_header_lacks_keeps_hip_textures() -> None:
    assert not _soft({"a.cu": "cudaMallocArray(&a, &d, 4, 4);\n"})
    assert not _soft({"a.cu": "// tex2D<float>(t, x, y)\nint x;\n"})
    for other in ("surface<void, 2> out;\n", "cudaBindSurfaceToArray(out, a);\n", "cudaGetTextureReference(&r, &tex);\n", "cudaMallocMipmappedArray(&m, &d, e, 4);\n",
                  "float4 g = texCubemap<float4>(t, x, y, z);\n", "cuArrayCreate(&a, &d);\n",
                  "surfCubemapwrite(v, s, x, y, face);\n"):
        assert not _soft({"k.cu": KERNEL, "other.cu": other}), other


def test_rename_moves_fetches_and_runtime_calls_and_marks_the_first_include() -> None:
    text = ('#include <hip/hip_runtime.h>\n#include "kernel.h"\n'
            "// hipMallocArray in a comment stays\n"
            'void run(hipArray_t a, Obj o) { hipMallocArray(&a, &d, 8, 8); o.tex2D<float>(1); puts("tex2D<"); }\n'
            "__device__ float f(hipTextureObject_t t) { return tex2D<float>(t, 1, 2) + tex1Dfetch<float>(t, 3); }\n")
    out = texture.rename(text).split("\n")
    assert out[0] == "#include <hip/hip_runtime.h>" + texture.MARK
    assert out[2] == "// hipMallocArray in a comment stays"
    assert "rocmig_tex::MallocArray(&a, &d, 8, 8)" in out[3] and "o.tex2D<float>(1)" in out[3] and '"tex2D<"' in out[3]
    assert out[4].count("rocmig_tex::") == 2 and "rocmig_tex::tex1Dfetch<float>(t, 3)" in out[4]
    placed = texture.header("\n".join(out))
    assert texture.MARK not in placed
    assert placed.index("#define ROCMIG_TEXTURE_SOFT_H") < placed.index("#include <hip/hip_runtime.h>\n#include \"kernel.h\"")


def test_rename_leaves_files_without_texture_names_and_puts_the_header_first_where_nothing_is_included() -> None:
    assert texture.rename("#include <cstdio>\nint main() { return 0; }\n") == "#include <cstdio>\nint main() { return 0; }\n"
    placed = texture.header(texture.rename("float f(hipTextureObject_t t) { return tex2D<float>(t, 0, 0); }\n"))
    assert placed.startswith("// rocmig: CUDA texture objects in software")
    assert placed.endswith("float f(hipTextureObject_t t) { return rocmig_tex::tex2D<float>(t, 0, 0); }\n")


def test_texture_references_take_the_software_textures_and_keep_their_declarations() -> None:
    cuda = ("typedef texture<float, 2, cudaReadModeElementType> texture2D;\nstatic texture2D gT;\n"
            "__global__ void k(float* o) { o[0] = tex2D(gT, 0.5f, 0.5f); }\n")
    assert _soft({"fan_bp.cu": cuda}) == {"fan_bp.cu"}
    hip = ('#include <hip/hip_runtime.h>\n'
           "typedef texture<float, 2, hipReadModeElementType> texture2D;\n#define TEX(T) texture<T, 1> \\\n  t\n"
           "static texture2D gT;\n__global__ void k(float* o) { o[0] = tex2D(gT, 0.5f, 0.5f); }\n"
           "void bind(const float* p, hipChannelFormatDesc d) { hipBindTexture2D(0, gT, p, d, 16, 8, 64); }\n")
    out = texture.rename(hip).split("\n")
    assert out[1].endswith(texture.REFERENCE_NOTE) and out[1].startswith("typedef texture<float, 2,")
    assert out[2].endswith("\\")  # a macro line keeps its continuation
    assert "rocmig_tex::tex2D(gT, 0.5f, 0.5f)" in out[5] and "rocmig_tex::BindTexture2D(0, gT, p, d, 16, 8, 64)" in out[6]


def test_in_a_collection_of_programs_one_with_surface_references_keeps_hip_textures_alone() -> None:
    make = "void run(cudaTextureObject_t* t) { cudaCreateTextureObject(t, &r, &d, NULL); }\n"
    tree = {"Samples/simpleTexture/kernel.cu": KERNEL, "Samples/simpleTexture/main.cu": make,
            "Samples/oldSurface/surf.cu": KERNEL + make + "surface<void, 2> out;\n",
            "Samples/split/kernels/k.cu": KERNEL, "Samples/split/host/h.cu": make,
            "Common/helper_cuda.h": "int helper();\n"}
    # a self-contained folder away from the surface program takes them; the program split over two folders
    # keeps HIP's on both sides (its objects would cross from one folder into the other)
    assert _soft(tree) == {"Samples/simpleTexture/kernel.cu", "Samples/simpleTexture/main.cu"}
    tree["surf_at_root.cu"] = "surface<void, 2> out;\n"
    assert not _soft(tree)


def test_surface_objects_take_the_software_path_too() -> None:
    write = ("__global__ void w(cudaSurfaceObject_t s) { surf2Dwrite(1.0f, s, 4 * threadIdx.x, 0, cudaBoundaryModeZero); }\n"
             "void run(cudaSurfaceObject_t* s, cudaResourceDesc r) { cudaCreateSurfaceObject(s, &r); }\n")
    assert _soft({"surf.cu": write}) == {"surf.cu"}
    hip = write.replace("cuda", "hip").replace("hipBoundaryModeZero", "hipBoundaryModeZero")
    out = texture.rename("#include <hip/hip_runtime.h>\n" + hip)
    assert "rocmig_tex::surf2Dwrite(1.0f, s," in out and "rocmig_tex::CreateSurfaceObject(s, &r)" in out
