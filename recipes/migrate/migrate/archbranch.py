"""AMD's device code takes a CUDA arch branch instead of a trap: the fixup cuda-arch-branch.

hipcc never defines __CUDA_ARCH__, so in

    #if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
      ... cp.async / ldmatrix / mma.sync / bf16 code ...
    #else
      assert(0);
    #endif

AMD compiles the #else: the unit compiles and the kernel traps when it reaches the stub (AutoGPTQ's
Marlin wraps every tensor-core helper so; scan.py's cuda-arch-stub finding). Where every asm statement of
such a branch has an exact translation or emulation (ptx.py) and the branch names no sm_90 feature
(wgmma, TMA, clusters: no translation exists), its directive gets `|| defined(__AMDGCN__)`, which clang
defines in AMD device compilation only: AMD's device code then runs the branch NVIDIA's sm_80 runs (the
ptx-inline-asm fixup translates it), and the host pass keeps the stub, as NVIDIA's host pass does. Of a
chain with several such branches (sm_90, then sm_80), the first translatable one is taken.

Declarations that only NVIDIA's newer GPUs get (`#if __CUDA_ARCH__ >= 800` around member functions, no
#else, outside any function, no #define) get `|| defined(__HIP__)`: AMD lacks them otherwise at every use
(the cuda-arch-gated-declaration diagnostic), and clang's host pass instantiates the device templates
that use them too, where nvcc's does not.
"""

from __future__ import annotations

import re

from . import cpp, ptx, scan

ARCH_LOWER_BOUND = re.compile(r"\b__CUDA_ARCH__\s*>=?\s*\d+")
ARCH_UPPER_BOUND = re.compile(r"\b__CUDA_ARCH__\s*(?:<=?|==)")
# sm_90 features with no translation, in asm templates or CUDA C++ (cooperative_groups clusters, TMA)
SM90_ONLY = re.compile(r"\b(?:wgmma|cp\.async\.bulk|mbarrier|setmaxnreg|griddepcontrol|elect\.sync|fence\.proxy|"
                       r"cluster_group|this_cluster|cuTensorMap\w*|CUtensorMap\w*)\b|__cluster_dims__")
AMD_DEVICE = "defined(__AMDGCN__)"  # AMD device compilation only: the host pass keeps NVIDIA's host branch
AMD_HIP = "defined(__HIP__)"  # both HIP passes: declarations a device function's template uses in either
SM80 = 800  # the newest arch whose features (cp.async, ldmatrix, mma.sync f16 / bf16 / s8, bf16) ptx.py emulates
DEFINE = re.compile(r"^\s*#\s*define\b", re.MULTILINE)
DIRECTIVE = re.compile(r"^(\s*#\s*(?:if|elif)\b)")
ASM_KEYWORD = re.compile(r"(?<![\w.])(?:asm|__asm__|__asm)\b")


def _translatable(text: str, blanked: str, start: int, end: int, cuda_warps: bool) -> bool:
    """True when every asm statement of text[start:end] parses (ptx.statements) and has a translation
    (ptx.translate)."""
    macros = ptx.string_macros(text, cpp.dead_lines(blanked, cpp.HIPCC_UNDEFINED | ptx.NVCC_ONLY))
    found = [stmt for stmt in ptx.statements(text, blanked, macros) if start <= stmt.start < end]
    if len(ASM_KEYWORD.findall(blanked[start:end])) > len(found):
        return False
    try:
        for stmt in found:
            ptx.translate(stmt, cuda_warps)
    except ptx.Unsupported:
        return False
    return True


def _declarations_only(chain: list[cpp.Branch], blanked: str, starts: list[int]) -> bool:
    """True for `#if __CUDA_ARCH__ >= N ... #endif` (N <= 800, no other branch) outside any function whose
    code defines no macro: declarations only NVIDIA's newer GPUs get (gptq_marlin_dtypes.cuh's
    ScalarType<nv_bfloat16>::num2float under `__CUDA_ARCH__ >= 800`), which AMD then lacks at each use."""
    if len(chain) != 1 or chain[0].on_amd is not False or DEFINE.search(chain[0].code):
        return False
    bound = ARCH_LOWER_BOUND.search(chain[0].condition)
    return bound is not None and int(re.sub(r"\D", "", bound.group(0).split(">")[-1])) <= SM80 \
        and cpp.enclosing_function_head(blanked, starts[chain[0].line - 1]) is None


def enable(text: str, undefined: frozenset[str], cuda_warps: bool) -> str:
    """`text` with the first translatable CUDA arch branch of each chain whose AMD branch only traps
    (scan.stub_branches) also taken in AMD device code (see module doc). undefined: macros undefined
    on AMD (cpp.amd_undefined; __CUDA_ARCH__ among them); cuda_warps: the tree is CUDA-only (ptx.rewrite)."""
    if "__CUDA_ARCH__" not in text:
        return text
    blanked = cpp.blank(text)
    lines = text.split("\n")
    blanked_lines = blanked.split("\n")
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line) + 1)
    edits: dict[int, str] = {}
    for chain in cpp.if_chains(blanked, undefined | {"__CUDA_ARCH__"}):
        if scan.stub_branches(chain, lines) is not None and not scan.host_only(blanked, chain[0].line):
            taker = AMD_DEVICE
        elif _declarations_only(chain, blanked, starts):
            taker = AMD_HIP
        else:
            continue
        for branch in chain:
            head = blanked_lines[branch.line - 1]
            if branch.on_amd is not False or branch.word not in ("if", "elif") or head.rstrip().endswith("\\") \
                    or not ARCH_LOWER_BOUND.search(branch.condition) or ARCH_UPPER_BOUND.search(branch.condition):
                continue
            start, end = starts[branch.line], starts[branch.end - 1]
            if SM90_ONLY.search(text[start:end]) or not _translatable(text, blanked, start, end, cuda_warps):
                continue
            m = DIRECTIVE.match(lines[branch.line - 1])
            if m is None:
                break
            condition_end = len(head.rstrip())
            condition = lines[branch.line - 1][m.end():condition_end].strip()
            comment = lines[branch.line - 1][condition_end:]
            edits[branch.line - 1] = f"{m.group(1)} ({condition}) || {taker}{comment}"
            break
    for index, line in edits.items():
        lines[index] = line
    return "\n".join(lines)
