"""CUDA's FP8 types (cuda_fp8.h) kept exact on AMD: the fixup fp8-ocp.

cuda_fp8.h's __nv_fp8_e4m3 / __nv_fp8_e5m2 hold NVIDIA's encodings, those of the OCP 8-bit floating point
specification. hipify-perl 7.2 renames them to HIP's __hip_fp8_e4m3_fnuz / __hip_fp8_e5m2_fnuz, another
encoding (exponent bias one higher, 0x80 is NaN): an OCP byte read as FNUZ is half its value. HIP 7.2's
hip_fp8.h turns its OCP types off in gfx942 device code. torch.utils.hipify leaves cuda_fp8.h, absent
from ROCm. This fixup puts cuda_fp8_ocp.h (namespace rocmig_fp8: cuda_fp8.hpp's conversions in software,
compared bit for bit with NVIDIA's) in place of the cuda_fp8.h include and renames cuda_fp8.h's names, or
the FNUZ names hipify made of them, to rocmig_fp8's, in files whose CUDA text uses cuda_fp8.h's names.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

HEADER = Path(__file__).with_name("cuda_fp8_ocp.h")

# CUDA name, and what hipify-perl 7.2 made of it, -> rocmig_fp8's name
RENAMES = {
    "__nv_fp8_e4m3": "e4m3", "__hip_fp8_e4m3_fnuz": "e4m3", "__nv_fp8_e5m2": "e5m2", "__hip_fp8_e5m2_fnuz": "e5m2",
    "__nv_fp8x2_e4m3": "e4m3x2", "__hip_fp8x2_e4m3_fnuz": "e4m3x2", "__nv_fp8x2_e5m2": "e5m2x2",
    "__hip_fp8x2_e5m2_fnuz": "e5m2x2", "__nv_fp8x4_e4m3": "e4m3x4", "__hip_fp8x4_e4m3_fnuz": "e4m3x4",
    "__nv_fp8x4_e5m2": "e5m2x4", "__hip_fp8x4_e5m2_fnuz": "e5m2x4",
    "__nv_fp8_storage_t": "storage_t", "__hip_fp8_storage_t": "storage_t", "__nv_fp8x2_storage_t": "storage2_t",
    "__hip_fp8x2_storage_t": "storage2_t", "__nv_fp8x4_storage_t": "storage4_t", "__hip_fp8x4_storage_t": "storage4_t",
    "__nv_saturation_t": "saturation_t", "__hip_saturation_t": "saturation_t",
    "__nv_fp8_interpretation_t": "interpretation_t", "__hip_fp8_interpretation_t": "interpretation_t",
    "__NV_NOSAT": "NOSAT", "__HIP_NOSAT": "NOSAT", "__NV_SATFINITE": "SATFINITE", "__HIP_SATFINITE": "SATFINITE",
    "__NV_E4M3": "E4M3", "__HIP_E4M3_FNUZ": "E4M3", "__NV_E5M2": "E5M2", "__HIP_E5M2_FNUZ": "E5M2",
}
CONVERSIONS = ("double_to_fp8", "float_to_fp8", "halfraw_to_fp8", "bfloat16raw_to_fp8", "double2_to_fp8x2",
               "float2_to_fp8x2", "halfraw2_to_fp8x2", "bfloat16raw2_to_fp8x2", "fp8_to_halfraw", "fp8x2_to_halfraw2")
# a name, unqualified or with the global scope's `::` (kept: `::rocmig_fp8::e4m3`)
NAME = re.compile(r"(?<![\w.>:])((?:::)?)(" + "|".join(sorted(map(re.escape, RENAMES), key=len, reverse=True))
                  + r"|__(?:nv|hip)_cvt_(?:" + "|".join(CONVERSIONS) + r"))\b")
CUDA_USE = re.compile(r"\b(?:__nv_fp8x?[24]?_(?:e4m3|e5m2|storage_t)|__nv_fp8_interpretation_t|__nv_saturation_t"
                      r"|__nv_cvt_\w*fp8\w*|__NV_(?:E4M3|E5M2|SATFINITE|NOSAT))\b|#\s*include\s*[<\"]cuda_fp8\.h[>\"]")
# HIP FP8 code of the project's own, written in its CUDA text
OWN_HIP = re.compile(r"\b(?:__hip_fp8\w*|__HIP_E[45]M[23]\w*|__hip_cvt_\w*fp8\w*)\b|#\s*include\s*[<\"]hip/hip_fp8\.h[>\"]")
MARKER = "#pragma rocmig_cuda_fp8_ocp"  # where ocp() puts cuda_fp8_ocp.h, expanded by header()
INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*[<"](?:cuda_fp8\.h|hip/hip_fp8\.h)[>"][^\n]*\n?', re.MULTILINE)


@functools.cache
def header_text() -> str:
    """The text of cuda_fp8_ocp.h, read once per run."""
    return HEADER.read_text(encoding="utf-8")


def _renamed(m: re.Match[str]) -> str:
    name = m.group(2)
    return m.group(1) + "rocmig_fp8::" + (RENAMES.get(name) or "cvt_" + name.split("_cvt_", 1)[1])


def ocp(text: str, cuda_text: str, mapping: list[int | None] | None = None, dead: set[int] | frozenset[int] = frozenset()) -> str:
    """`text` (a translation of `cuda_text`) with cuda_fp8.h's include marked for cuda_fp8_ocp.h (header()
    puts it there) and cuda_fp8.h's names, or hipify's FNUZ names for them, renamed to rocmig_fp8's. A
    project's own HIP FP8 code is left: where the CUDA text names HIP's FP8 types or includes hip/hip_fp8.h
    itself, only the lines that came from CUDA lines naming cuda_fp8.h's are changed (mapping: CUDA line ->
    line of `text`, 0-based; None: the same lines), and a file whose cuda_fp8.h include sits in a branch AMD
    does not compile (`#ifndef USE_ROCM` in a build that defines it: the project's ROCm branch brings its
    own FP8 types) is left whole. dead: 1-based lines of `text` not compiled on AMD."""
    if not CUDA_USE.search(cuda_text):
        return text
    lines = text.split("\n")
    cuda_lines = cuda_text.split("\n")
    own_hip = bool(OWN_HIP.search(cuda_text))
    if own_hip:
        mapping = mapping if mapping is not None else list(range(len(cuda_lines)))
        ours = sorted({mapping[i] for i, line in enumerate(cuda_lines)
                       if i < len(mapping) and mapping[i] is not None and CUDA_USE.search(line)})
        includes = [k for k in ours if INCLUDE.match(lines[k] + "\n")]
    else:
        ours = list(range(len(lines)))
        includes = [k for k, line in enumerate(lines) if INCLUDE.match(line + "\n")]
    if includes and all(k + 1 in dead for k in includes):
        return text
    for k in ours:
        if k not in includes:
            lines[k] = NAME.sub(_renamed, lines[k])
    if includes and "#define ROCMIG_CUDA_FP8" not in text and MARKER not in text:
        lines[includes[0]] = MARKER  # one line, so that later fixups' line maps hold; header() expands it
        includes = includes[1:]
    for k in includes:
        lines[k] = "// " + lines[k].strip() + ": cuda_fp8_ocp.h above"
    return "\n".join(lines)


def header(text: str) -> str:
    """`text` with ocp()'s marker line replaced by the text of cuda_fp8_ocp.h (the last fixup step, after
    every step that maps the translator's lines)."""
    return text.replace(MARKER, header_text().rstrip("\n"), 1) if MARKER in text else text
