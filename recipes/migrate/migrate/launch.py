"""CUDA 12's extensible kernel launch on HIP: the fixup launch-ex.

cudaLaunchKernelEx(&config, kernel, args...) with a cudaLaunchConfig_t and cudaLaunchAttribute list is how
CUDA 12 code asks for programmatic dependent launch (sm_90's PDL) and thread block clusters (vLLM 0.34's
router GEMM, MiniMax all-reduce and MoE kernels). torch.utils.hipify leaves the names; hipify-perl 7.2 maps
the types to HIP's, whose attribute values lack programmaticStreamSerializationAllowed and clusterDim, and
leaves cudaLaunchKernelEx and the PDL attribute ids. This fixup renames them to cuda_launch_ex.h's
(namespace rocmig_launch: CUDA's layout and ids, launched through hipLaunchKernelEx with the attributes HIP
has, PDL dropped as HIP keeps stream order) and puts the header before the file's first live #include.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

from . import cpp

HEADER = Path(__file__).with_name("cuda_launch_ex.h")

# CUDA 12.8 driver_types.h's attribute ids (cuda_launch_ex.h's AttributeID)
ATTRIBUTES = ("Ignore", "AccessPolicyWindow", "Cooperative", "SynchronizationPolicy", "ClusterDimension",
              "ClusterSchedulingPolicyPreference", "ProgrammaticStreamSerialization", "ProgrammaticEvent",
              "Priority", "MemSyncDomainMap", "MemSyncDomain", "PreferredClusterDimension", "LaunchCompletionEvent",
              "DeviceUpdatableKernelNode", "PreferredSharedMemoryCarveout", "NvlinkUtilCentricScheduling")
# CUDA name -> rocmig_launch's
RENAMES = {
    "cudaLaunchConfig_t": "Config", "cudaLaunchConfig_st": "Config",
    "cudaLaunchAttribute": "Attribute", "cudaLaunchAttribute_st": "Attribute",
    "cudaLaunchAttributeValue": "AttributeValue", "cudaLaunchAttributeID": "AttributeID",
    "cudaLaunchKernelEx": "LaunchKernelEx", "cudaLaunchKernelExC": "LaunchKernelExC",
    "cudaGridDependencySynchronize": "GridDependencySynchronize",
    "cudaTriggerProgrammaticLaunchCompletion": "TriggerProgrammaticLaunchCompletion",
    **{f"cudaLaunchAttribute{name}": name for name in ATTRIBUTES},
}
# hipify-perl 7.2's names for the CUDA ones (its cudaLaunch* -> hipLaunch* table)
HIP_FORMS = {"hipLaunchConfig_t": "Config", "hipLaunchConfig_st": "Config", "hipLaunchAttribute": "Attribute",
             "hipLaunchAttribute_st": "Attribute", "hipLaunchAttributeValue": "AttributeValue",
             "hipLaunchAttributeID": "AttributeID", "hipLaunchKernelExC": "LaunchKernelExC",
             **{f"hipLaunchAttribute{name}": name for name in ATTRIBUTES}}
CUDA_NAME = re.compile(r"(?<![\w.>:])(?:::)?(" + "|".join(sorted(RENAMES, key=len, reverse=True)) + r")\b")
HIP_NAME = re.compile(r"(?<![\w.>:])(?:::)?(" + "|".join(sorted(HIP_FORMS, key=len, reverse=True)) + r")\b")
# the CUDA uses that need the header: the launch itself or PDL's device calls
NEEDS_HEADER = re.compile(r"\b(?:cudaLaunchKernelExC?|cudaLaunchConfig_t|cudaLaunchConfig_st|cudaGridDependencySynchronize"
                          r"|cudaTriggerProgrammaticLaunchCompletion)\b")
MARK = "  // rocmig: cuda_launch_ex.h below"
PRAGMA_ONCE = re.compile(r"^[ \t]*#[ \t]*pragma[ \t]+once\b")


@functools.cache
def header_text() -> str:
    """The text of cuda_launch_ex.h, read once per run."""
    return HEADER.read_text(encoding="utf-8")


def _renamed(line: str, blanked: str, pattern: re.Pattern[str], names: dict[str, str]) -> str:
    """`line` with each match of `pattern` in its blanked form (comments and strings set aside) renamed."""
    for m in reversed(list(pattern.finditer(blanked))):
        line = line[:m.start()] + "rocmig_launch::" + names[m.group(1)] + line[m.end():]
    return line


def rename(text: str, cuda_text: str, mapping: list[int | None],
           dead: set[int] | frozenset[int] = frozenset()) -> str:
    """`text` (a translation of `cuda_text`) with CUDA's extensible-launch names (RENAMES) renamed to
    rocmig_launch's, and hipify-perl's HIP names for them (HIP_FORMS) on the lines that came from CUDA lines
    naming them (mapping: CUDA line -> line of `text`, 0-based), so that a project's own hipLaunchKernelEx
    code is left; only in a file whose CUDA text launches that way or calls PDL's device functions
    (NEEDS_HEADER: a file that only fills in stream attributes keeps HIP's types), and never in comments or
    strings. The first #include outside every #if (cpp.top_level_includes) not in `dead` (1-based lines
    of `text` not compiled on AMD), else the first live `#pragma once`, gets MARK: header() puts
    cuda_launch_ex.h before an #include (so that the headers it brings see the names too) and after a
    #pragma once; a file with neither is left as it was."""
    cuda_blanked = cpp.blank(cuda_text)
    if not NEEDS_HEADER.search(cuda_blanked):
        return text
    lines, blanked = text.split("\n"), cpp.blank(text).split("\n")
    first = first_live_include(text, blanked, dead)
    if first is None:
        return text
    from_cuda = {mapping[i] for i, line in enumerate(cuda_blanked.split("\n"))
                 if i < len(mapping) and mapping[i] is not None and CUDA_NAME.search(line)}
    for k, line in enumerate(lines):
        if k >= len(blanked):
            break
        renamed = _renamed(line, blanked[k], CUDA_NAME, RENAMES)
        if k in from_cuda:
            renamed = _renamed(renamed, cpp.blank(renamed), HIP_NAME, HIP_FORMS)
        lines[k] = renamed
    if MARK not in text:
        lines[first] += MARK
    return "\n".join(lines)


def header(text: str) -> str:
    """`text` with cuda_launch_ex.h before the #include line rename() marked, or after its #pragma once
    line (the last fixup step, after every step that maps the translator's lines)."""
    return place(text, MARK, header_text())


def first_live_include(text: str, blanked: list[str], dead: set[int] | frozenset[int]) -> int | None:
    """The 0-based line of `text`'s first #include outside every #if (cpp.top_level_includes) that is not in
    `dead` (1-based lines not compiled on AMD), else of its first live `#pragma once`; None without either."""
    first = next((cpp.line_of(text, m.start()) - 1 for m in cpp.top_level_includes("\n".join(blanked))
                  if cpp.line_of(text, m.start()) not in dead), None)
    if first is None:
        first = next((k for k, line in enumerate(blanked) if PRAGMA_ONCE.match(line) and k + 1 not in dead), None)
    return first


def place(text: str, mark: str, block: str) -> str:
    """`text` with `block` (a header's text) before the line that ends in `mark`, or after it where that
    line is a `#pragma once`; the mark itself is removed. `text` without the mark is returned as it is."""
    at = text.find(mark)
    if at < 0:
        return text
    start = text.rfind("\n", 0, at) + 1
    end = text.find("\n", at)
    end = len(text) if end < 0 else end
    line, block = text[start:at] + text[at + len(mark):end], block.rstrip("\n")
    placed = line + "\n" + block if PRAGMA_ONCE.match(line) else block + "\n" + line
    return text[:start] + placed + text[end:]
