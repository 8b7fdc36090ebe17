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
# CUDA intrinsics of sm_70 / sm_80 code that HIP 7.2 does not declare (no translation either)
NO_HIP_FORM = re.compile(r"(?<![\w.:])(?:__nanosleep|__reduce_\w+_sync|__match_all_sync|__isGlobal|__isShared|__stwt|__ldlu)\s*\("
                         r"|\bcuda::")
DIRECTIVE = re.compile(r"^(\s*#\s*(?:if|elif)\b)")
ASM_KEYWORD = re.compile(r"(?<![\w.])(?:asm|__asm__|__asm)\b")


def _translatable(statements: list[ptx.Statement], blanked: str, start: int, end: int, cuda_warps: bool) -> bool:
    """True when every asm statement of the text's [start, end) parses (`statements`: ptx.statements of the
    whole text) and has a translation (ptx.translate)."""
    found = [stmt for stmt in statements if start <= stmt.start < end]
    if len(ASM_KEYWORD.findall(blanked[start:end])) > len(found):
        return False
    try:
        for stmt in found:
            ptx.translate(stmt, cuda_warps)
    except ptx.Unsupported:
        return False
    return True


def _lone_gated(chain: list[cpp.Branch]) -> bool:
    """True for `#if __CUDA_ARCH__ >= N ... #endif` (N <= 800, no other branch) whose code defines no
    macro: declarations or statements only NVIDIA's sm_N and newer get (gptq_marlin_dtypes.cuh's
    ScalarType<nv_bfloat16>::num2float; a kernel's `out[i] = ...` under `#if __CUDA_ARCH__ >= 800`),
    which AMD otherwise lacks or skips. A macro switch would turn on code elsewhere: left."""
    if len(chain) != 1 or chain[0].on_amd is not False or DEFINE.search(chain[0].code):
        return False
    bound = ARCH_LOWER_BOUND.search(chain[0].condition)
    return bound is not None and int(re.sub(r"\D", "", bound.group(0).split(">")[-1])) <= SM80


def _amd_takes_an_arch_branch(chains: list[list[cpp.Branch]], lines: list[str]) -> bool:
    """True when AMD takes a branch of a chain that tests __CUDA_ARCH__ and is no trap stub: the file has
    its own path for GPUs without the feature (`#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ < 800`), which
    a lone `>= 800` block turned on as well would duplicate or run twice."""
    return any(scan.ARCH_TEST.search(" ".join(b.condition for b in chain)) and any(b.on_amd is True for b in chain)
               and scan.stub_branches(chain, lines) is None for chain in chains)


def _directive(line: str, blanked: str, extra: str) -> str | None:
    """An #if / #elif line with `extra` (`|| X` or `&& X`) after its condition, which is parenthesized;
    its trailing comment kept. None for another line or one continued with a backslash."""
    m = DIRECTIVE.match(line)
    if m is None or blanked.rstrip().endswith("\\"):
        return None
    condition_end = len(blanked.rstrip())
    return f"{m.group(1)} ({line[m.end():condition_end].strip()}) {extra}{line[condition_end:]}"


def _usable(text: str, blanked: str, statements: list[ptx.Statement], start: int, end: int, cuda_warps: bool) -> bool:
    """True when text[start:end], an NVIDIA branch, may be compiled on AMD: no sm_90 feature, no CUDA
    intrinsic HIP lacks, every asm statement translatable (`statements`: the text's, ptx.statements)."""
    code = text[start:end]
    return not SM90_ONLY.search(code) and not NO_HIP_FORM.search(code) \
        and _translatable(statements, blanked, start, end, cuda_warps)


def enable(text: str, undefined: frozenset[str], cuda_warps: bool) -> str:
    """`text` with CUDA arch branches also taken on AMD (see module doc): in each chain whose AMD branch
    only traps (scan.stub_branches), the first usable branch for NVIDIA's newer GPUs, `|| defined(__AMDGCN__)`
    on its #if / #elif, or, when it is the #else after the stub, `&& !defined(__AMDGCN__)` on the stub's
    line; a lone `#if __CUDA_ARCH__ >= N` block (N <= 800: declarations, `|| defined(__HIP__)`; statements
    in a function, `|| defined(__AMDGCN__)`) where the file has no arch path of its own for AMD to take.
    undefined: macros undefined on AMD (cpp.amd_undefined); cuda_warps: the tree is CUDA-only (ptx.rewrite)."""
    if "__CUDA_ARCH__" not in text:
        return text
    blanked = cpp.blank(text)
    lines, blanked_lines = text.split("\n"), blanked.split("\n")
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line) + 1)
    chains = cpp.if_chains(blanked, undefined | {"__CUDA_ARCH__"})
    own_path = _amd_takes_an_arch_branch(chains, lines)
    macros = ptx.string_macros(text, cpp.dead_lines(blanked, cpp.HIPCC_UNDEFINED | ptx.NVCC_ONLY))
    statements = ptx.statements(text, blanked, macros) if ASM_KEYWORD.search(blanked) else []
    edits: dict[int, str] = {}
    for chain in chains:
        stub = scan.stub_branches(chain, lines)
        if stub is not None and not scan.host_only(blanked, chain[0].line):
            taken = stub[0]
            for k, branch in enumerate(chain):
                start, end = starts[branch.line], starts[branch.end - 1]
                if branch.on_amd is not False or not _usable(text, blanked, statements, start, end, cuda_warps):
                    continue
                if branch.word in ("if", "elif") and ARCH_LOWER_BOUND.search(branch.condition) \
                        and not ARCH_UPPER_BOUND.search(branch.condition):
                    edit = (branch.line, _directive(lines[branch.line - 1], blanked_lines[branch.line - 1], f"|| {AMD_DEVICE}"))
                elif branch.word == "else" and k > 0 and chain[k - 1] is taken and taken.word in ("if", "elif"):
                    edit = (taken.line, _directive(lines[taken.line - 1], blanked_lines[taken.line - 1], f"&& !{AMD_DEVICE}"))
                else:
                    continue
                if edit[1] is not None:
                    edits[edit[0] - 1] = edit[1]
                break
        elif not own_path and _lone_gated(chain):
            branch = chain[0]
            start, end = starts[branch.line], starts[branch.end - 1]
            if not _usable(text, blanked, statements, start, end, cuda_warps):
                continue
            inside = cpp.enclosing_function_head(blanked, starts[branch.line - 1]) is not None
            edit_line = _directive(lines[branch.line - 1], blanked_lines[branch.line - 1], f"|| {AMD_DEVICE if inside else AMD_HIP}")
            if edit_line is not None:
                edits[branch.line - 1] = edit_line
    for index, line in edits.items():
        lines[index] = line
    return "\n".join(lines)
