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
INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*[<"](?:cuda_fp8\.h|hip/hip_fp8\.h)[>"][^\n]*\n?', re.MULTILINE)


@functools.cache
def header_text() -> str:
    """The text of cuda_fp8_ocp.h, read once per run."""
    return HEADER.read_text(encoding="utf-8")


def _renamed(m: re.Match[str]) -> str:
    name = m.group(2)
    return m.group(1) + "rocmig_fp8::" + (RENAMES.get(name) or "cvt_" + name.split("_cvt_", 1)[1])


def ocp(text: str, cuda_text: str) -> str:
    """`text` (a translation of `cuda_text`) with cuda_fp8.h's include replaced by cuda_fp8_ocp.h and its
    names (or hipify's FNUZ names for them) renamed to rocmig_fp8's; unchanged when `cuda_text` does not
    use cuda_fp8.h (a file that names HIP's FNUZ types itself keeps them)."""
    if not CUDA_USE.search(cuda_text):
        return text
    if "#define ROCMIG_CUDA_FP8" not in text:
        first = INCLUDE.search(text)
        if first:
            text = text[:first.start()] + header_text() + INCLUDE.sub("", text[first.end():])
    else:
        text = INCLUDE.sub("", text)
    head, guard, rest = text.partition("#define ROCMIG_CUDA_FP8\n")
    if not guard:
        return NAME.sub(_renamed, text)
    header_end = rest.index("#endif\n", rest.index("}  // namespace rocmig_fp8")) + len("#endif\n")
    return NAME.sub(_renamed, head) + guard + rest[:header_end] + NAME.sub(_renamed, rest[header_end:])
