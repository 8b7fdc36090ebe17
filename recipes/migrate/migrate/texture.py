"""CUDA texture objects in software: the fixup texture-soft.

HIP marks its texture fetches unavailable on GPUs without image instructions (gfx940 and later CDNA, where
hipcc sets __HIP_NO_IMAGE_SUPPORT), so a unit that calls tex2D<T>(obj, x, y) does not compile for gfx942;
ROCm's runtime also refuses texture setups CUDA accepts on other CDNA parts (linear filtering of float
texels on gfx90a, ROCm/clr#276; normalized or filtered Pitch2D resources, ROCm/rocm-systems#5540).
cuda_texture_soft.h keeps the texels in plain device memory and fetches them with CUDA's addressing and
filtering rules, checked against an NVIDIA H100's texture units (bench/texture_reference.py).

A program takes it whole or not at all: texture objects are made on the host (hipCreateTextureObject,
hipMallocArray, the array copies, the texture reference binds) and read in kernels, often in different
files, and both sides must agree on what a hipTextureObject_t points to. Texture references keep HIP's
texture<> variables (host objects with a registered device copy); binding one makes a software texture
object and copies the reference to the device, and the fetches read its textureObject. Surface objects
over such arrays read and write the texels in place (surf2Dwrite and the rest, with CUDA's boundary
modes; HIP's lack the boundary argument). soft_files
decides which files take it: the whole tree where some file fetches from a texture object or reference
and none uses what the header does not emulate (BLOCKERS: surface references, mipmapped arrays,
cube maps, gradients, the driver API's arrays and texture references), else the self-contained folders far
from such a use. Each file naming one of the calls gets them renamed to rocmig_tex's and the header
before its first live #include.
"""

from __future__ import annotations

import functools
import posixpath
import re
from collections.abc import Mapping
from pathlib import Path

from . import cpp, launch

HEADER = Path(__file__).with_name("cuda_texture_soft.h")
MARK = "  // rocmig: cuda_texture_soft.h below"

FETCHES = ("tex1Dfetch", "tex1D", "tex2D", "tex3D", "tex1DLayered", "tex2DLayered", "tex1DLod", "tex2DLod",
           "tex3DLod", "tex1DLayeredLod", "tex2DLayeredLod", "tex2Dgather",
           *(f"surf{shape}{op}" for shape in ("1D", "2D", "3D", "1DLayered", "2DLayered") for op in ("read", "write")))
# HIP runtime call -> rocmig_tex's (cuda_texture_soft.h)
HOST_CALLS = {f"hip{name}": name for name in (
    "MallocArray", "Malloc3DArray", "FreeArray", "GetChannelDesc", "Memcpy2DToArray", "Memcpy2DToArrayAsync",
    "Memcpy2DFromArray", "Memcpy2DFromArrayAsync", "MemcpyToArray", "MemcpyToArrayAsync", "MemcpyFromArray",
    "MemcpyFromArrayAsync", "Memcpy3D", "Memcpy3DAsync", "CreateTextureObject", "DestroyTextureObject",
    "BindTexture", "BindTexture2D", "BindTextureToArray", "UnbindTexture", "CreateSurfaceObject",
    "DestroySurfaceObject")}
FETCH_CALL = re.compile(r"(?<![\w.>:])(" + "|".join(sorted(FETCHES, key=len, reverse=True)) + r")(?=\s*[<(])")
HOST_CALL = re.compile(r"(?<![\w.>:])(" + "|".join(sorted(HOST_CALLS, key=len, reverse=True)) + r")\b")
# host calls that make a texture object or bind a reference (CUDA names)
CREATION = re.compile(r"\b(?:cuda|hip)(?:CreateTextureObject|BindTexture|BindTexture2D|BindTextureToArray"
                      r"|CreateSurfaceObject)\s*\(")
OBJECT_FETCH = re.compile(r"\b(?:" + "|".join(FETCHES) + r")\s*(?:<[^;(){}]*>)?\s*\(")
# a texture reference's declaration or typedef (HIP's texture<T, dim, readMode>, kept)
REFERENCE = re.compile(r"(?<![\w:])texture\s*<")
REFERENCE_NOTE = "  // rocmig: fetched through cuda_texture_soft.h"
# what cuda_texture_soft.h does not emulate (CUDA names: the tree's own text is read before translation);
# texture references and surface objects are emulated (texture<> declarations stay HIP's), surface
# references are not
BLOCKERS = re.compile(
    r"(?:^|[^\w:])surface\s*<|\bsurfaceReference\b|\b(?:cuda|hip)GetTextureReference\b"
    r"|\b(?:cuda|hip)(?:Bind|Unbind)Surface\w*|\b(?:cuda|hip)GetSurface\w*|\bsurfCubemap\w*"
    r"|\b(?:cuda|hip)\w*Mipmapped\w*"
    r"|\btexCubemap\w*|\btex[123]DGrad\b|\btex[12]DLayeredGrad\b"
    r"|\b(?:cuda|hip)(?:ArrayGetInfo|ArrayGetPlane|ArrayGetSparseProperties|ArrayGetMemoryRequirements"
    r"|Memcpy2DArrayToArray|MemcpyArrayToArray|GetTextureObject\w+|Graphics\w*MappedArray)\b"
    r"|\bcu(?:Array\w*|TexObject\w*|TexRef\w*|Surf\w*)\s*\(|\bCUarray\b",
    re.MULTILINE)


@functools.cache
def header_text() -> str:
    """The text of cuda_texture_soft.h, read once per run."""
    return HEADER.read_text(encoding="utf-8")


def soft_files(blanked_cuda: Mapping[str, str]) -> frozenset[str]:
    """The files (relative paths -> CUDA text, comments and strings blanked) that take the software
    textures (rename). A tree that fetches from texture objects or references (OBJECT_FETCH) and uses
    nothing cuda_texture_soft.h lacks (BLOCKERS) takes them in every file. Where some file uses such a
    thing, a folder still takes them when it is self-contained, its own files both making textures
    (CREATION) and fetching, so that no texture object crosses into a folder that keeps HIP's; and when
    no file of it, of a folder above it or of one below it, uses what the header lacks (a collection of
    programs, such as the CUDA samples, where one program writes surfaces)."""
    if not any(OBJECT_FETCH.search(t) for t in blanked_cuda.values()):
        return frozenset()
    blocked = {posixpath.dirname(rel) for rel, t in blanked_cuda.items() if BLOCKERS.search(t)}
    if not blocked:
        return frozenset(blanked_cuda)
    folders: dict[str, list[str]] = {}
    for rel in blanked_cuda:
        folders.setdefault(posixpath.dirname(rel), []).append(rel)

    def related(a: str, b: str) -> bool:
        return a == b or not a or not b or a.startswith(b + "/") or b.startswith(a + "/")

    soft: set[str] = set()
    for folder, files in folders.items():
        texts = [blanked_cuda[rel] for rel in files]
        if (any(OBJECT_FETCH.search(t) for t in texts) and any(CREATION.search(t) for t in texts)
                and not any(related(folder, other) for other in blocked)):
            soft.update(files)
    return frozenset(soft)


def rename(text: str, dead: set[int] | frozenset[int] = frozenset()) -> str:
    """`text` (a HIP translation) with texture fetches (FETCHES) and HIP's texture and array calls
    (HOST_CALLS) renamed to rocmig_tex's, never in comments or strings, a texture reference's live
    declaration (kept: HIP's texture<>) noted with REFERENCE_NOTE, and MARK on its first live #include
    (launch.first_live_include; `dead`: 1-based lines not compiled on AMD), else on its first line, for
    header(); a file without either kind of name is left as it was."""
    blanked = cpp.blank(text).split("\n")
    if not any(FETCH_CALL.search(line) or HOST_CALL.search(line) or REFERENCE.search(line) for line in blanked):
        return text
    first = launch.first_live_include(text, blanked, dead)
    first = 0 if first is None else first
    lines = text.split("\n")
    for k, line in enumerate(blanked):
        if (REFERENCE.search(line) and k + 1 not in dead and REFERENCE_NOTE not in lines[k]
                and not lines[k].rstrip().endswith("\\")):
            lines[k] += REFERENCE_NOTE
        for m in sorted([*FETCH_CALL.finditer(line), *HOST_CALL.finditer(line)], key=lambda m: m.start(), reverse=True):
            name = m.group(1)
            lines[k] = lines[k][:m.start(1)] + "rocmig_tex::" + HOST_CALLS.get(name, name) + lines[k][m.end(1):]
    if MARK not in text:
        lines[first] += MARK
    return "\n".join(lines)


def header(text: str) -> str:
    """`text` with cuda_texture_soft.h placed at the line rename() marked (the last fixup steps)."""
    return launch.place(text, MARK, header_text())
