"""The scanner: apply the rules of rules.yaml to the CUDA input, line by line, plus the computed
checks (LDS per workgroup against the arch table, block sizes above 1024).

Lines in branches that are dead on AMD (`#ifndef __HIP_PLATFORM_AMD__` ...) and comments are not
scanned: that code never reaches hipcc.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from . import cpp, ptx, warp
from .archs import Arch
from .rules import CUDA_VERSION_MACROS, Rule, fill

WARP_NAME = re.compile(r"(?i)warp_?(size|sz)|^ws$|^warp$|lanes?_?(per|count|num)|num_?lanes")
FULL_MASK_VALUE = 0xFFFFFFFF
MAX_BLOCK = 1024  # work-items per workgroup on every AMD GPU (HIP: hipDeviceProp_t.maxThreadsPerBlock)


@dataclass(frozen=True)
class Finding:
    """One rule hit: file (tree-relative path), line/col (1-based, in the CUDA input), text (the
    source line), message, hint, suggestion (the migrated line rewritten, or ""), status ("open"
    until advice.decide closes it as "fixed"), note (why it was closed, or what the suggestion assumes)."""

    rule: str
    severity: str
    file: str
    line: int
    col: int
    text: str
    message: str
    hint: str
    suggestion: str
    status: str = "open"
    note: str = ""


@dataclass(frozen=True)
class Context:
    """What a scan of one tree knows: tree-wide symbols {name: expr}, placeholder regexes, archs, the
    macros undefined on AMD, and the symbols whose value is CUDA's full warp mask 0xffffffff."""

    symbols: dict[str, str]
    placeholders: dict[str, str]
    archs: tuple[Arch, ...]
    undefined: frozenset[str]
    full_mask: tuple[str, ...] = ()


def version_aliases(blanked_texts: list[str]) -> set[str]:
    """Names #defined, in any branch, from CUDA's version macros or from such names
    (`#define CUDAPP_CUDA_VERSION CUDA_VERSION`, `#define CUDA_11 (CUDA_VERSION >= 11000)`): under
    hipcc they are as undefined, or as 0, as the macros themselves."""
    defined = [(m.group(1), m.group(2)) for text in blanked_texts for m in cpp.DEFINE.finditer(text)]
    names = set(CUDA_VERSION_MACROS)
    while True:
        uses = re.compile(r"\b(?:" + "|".join(re.escape(n) for n in sorted(names)) + r")\b")
        new = {name for name, value in defined if name not in names and uses.search(value)}
        if not new:
            return names - set(CUDA_VERSION_MACROS)
        names |= new


def tree_context(blanked_texts: list[str], archs: list[Arch]) -> Context:
    """Collect #define / constexpr constants over all files of a tree, the macros undefined on AMD
    (cpp.amd_undefined), and the placeholder alternations: {WS32} (32 and names defined as 32 that
    name a warp size), {WS31}, {FULLMASK}, {BALLOT} (names assigned from a ballot), {U32} (names
    declared only as 32-bit integers), {CUDAVER} (CUDA's version macros and the names #defined from them,
    version_aliases)."""
    merged: dict[str, str] = {}
    for text in blanked_texts:
        for name, value in cpp.symbols(text).items():
            if merged.get(name, value) != value:
                value = ""
            merged[name] = value
    cache: dict[tuple[str, int], int | None] = {}
    values = {n: cpp.evaluate(v, merged, cache=cache) for n, v in merged.items()}
    warp = sorted(n for n in merged if WARP_NAME.search(n) and values[n] == 32)
    full = sorted(n for n in merged if values[n] == FULL_MASK_VALUE)
    ballot, narrow, wide = set(), set(), set()
    for text in blanked_texts:
        ballot.update(re.findall(r"\b(\w+)\s*=\s*(?:__ballot(?:_sync)?|__activemask)\s*\(", text))
        narrow.update(re.findall(r"\b(?:unsigned\s+int|unsigned|uint32_t|int32_t|int)\s+(\w+)\s*[=;,)]", text))
        wide.update(re.findall(r"\b(?:unsigned\s+long\s+long|uint64_t|int64_t|long\s+long|size_t|auto)\s+(\w+)\s*[=;,)]", text))

    def alternation(names) -> str:
        names = sorted(names)
        return "(?:" + "|".join(rf"\b{re.escape(n)}\b" for n in names) + ")" if names else "(?!x)x"

    alt = "|".join(re.escape(n) for n in warp)
    placeholders = {
        "WS32": f"(?:32|{alt})" if warp else "32",
        "WS31": f"(?:31|(?:{alt})\\s*-\\s*1)" if warp else "31",
        "FULLMASK": "(?:" + cpp.FULL_MASK_LITERAL
                    + "".join(f"|\\b{re.escape(n)}\\b" for n in full) + ")",
        "BALLOT": alternation(ballot),
        "U32": alternation(narrow - wide),
        "CUDAVER": alternation(set(CUDA_VERSION_MACROS) | version_aliases(blanked_texts)),
    }
    return Context(symbols=merged, placeholders=placeholders, archs=tuple(archs),
                   undefined=cpp.amd_undefined(blanked_texts), full_mask=tuple(full))


@dataclass(frozen=True)
class Compiled:
    """A rule with its patterns compiled for one tree, line by line and (`anywhere`, MULTILINE) over a
    whole file."""

    rule: Rule
    patterns: tuple[re.Pattern, ...]
    anywhere: tuple[re.Pattern, ...]


def compile_rules(rules: list[Rule], ctx: Context) -> list[Compiled]:
    """Fill the placeholders of every rule for this tree and compile its regexes; diagnostic rules,
    which read compiler errors rather than the source (explain.py), are left out."""
    out = []
    for r in rules:
        if not r.diagnostic:
            filled = [fill(p, ctx.placeholders) for p in r.patterns]
            out.append(Compiled(rule=r, patterns=tuple(re.compile(p) for p in filled),
                                anywhere=tuple(re.compile(p, re.MULTILINE) for p in filled)))
    return out


def matches(compiled: Compiled, blanked_line: str) -> re.Match | None:
    """First match of any of the rule's patterns in a blanked line."""
    for pattern in compiled.patterns:
        m = pattern.search(blanked_line)
        if m:
            return m
    return None


def scan_file(rel: str, text: str, rules: list[Compiled], ctx: Context) -> list[Finding]:
    """Findings of every rule in one file, sorted by line then rule order."""
    blanked = cpp.blank_code(text)
    dead = cpp.dead_lines(blanked, ctx.undefined)
    raw_lines = text.split("\n")
    names = {**ctx.symbols, **{k: v for k, v in cpp.symbols(blanked).items() if v}}
    findings: list[Finding] = []
    # a rule that matches no line matches nowhere in the file (MULTILINE anchors; \s may span lines,
    # so the file-wide test only lets more rules through): test the file first, then its lines
    present = [c for c in rules if any(p.search(blanked) for p in c.anywhere)]
    for number, line in enumerate(blanked.split("\n"), start=1):
        if number in dead:
            continue
        for compiled in present:
            m = matches(compiled, line)
            if m:
                r = compiled.rule
                findings.append(Finding(r.id, r.severity, rel, number, m.start() + 1, raw_lines[number - 1].strip(),
                                        r.message, r.hint, ""))
    by_check = {c.rule.check: c.rule for c in rules if c.rule.check}
    if "lds" in by_check:
        findings += _lds(rel, blanked, raw_lines, dead, names, ctx.archs, by_check["lds"])
    if "wave64-constant" in by_check and any(a.wavefront == 32 for a in ctx.archs) and "64" in blanked:
        findings += _wave64_constant(rel, blanked, raw_lines, dead, ctx, by_check["wave64-constant"])
    if "block-size" in by_check:
        findings += _block_size(rel, blanked, raw_lines, dead, names, by_check["block-size"])
    if "arch-stub" in by_check:
        findings += _arch_stub(rel, blanked, raw_lines, dead, ctx.undefined, by_check["arch-stub"])
    # emulations in CUDA arch branches count too: the fixup cuda-arch-branch may have AMD take them (where
    # it does not, the finding's line is not compiled on AMD and the finding closes as such)
    arch_live = cpp.dead_lines(ARCH_COMPARISON.sub("ROCMIG_ARCH_TEST", blanked).replace("__CUDA_ARCH__", "ROCMIG_CUDA_ARCH"),
                               ctx.undefined) if "__CUDA_ARCH__" in text else dead
    if "warp-matrix-asm" in by_check and "asm" in text:
        findings += _emulated_asm(rel, text, raw_lines, arch_live, by_check["warp-matrix-asm"], WARP_MATRIX)
    if "async-copy" in by_check and ("cp.async" in text or "__pipeline_memcpy_async" in text):
        rule = by_check["async-copy"]
        findings += _emulated_asm(rel, text, raw_lines, arch_live, rule, ASYNC_COPY)
        findings += [_hit(rule, rel, raw_lines, n, m.start() + 1, rule.message)
                     for n, row in enumerate(blanked.split("\n"), 1) if n not in dead
                     for m in [PIPELINE_COPY.search(row)] if m]
    order = {c.rule.id: i for i, c in enumerate(rules)}
    findings.sort(key=lambda f: (f.line, order[f.rule]))
    return findings


# calls that stop a kernel on either vendor; a branch of nothing but these statements is a stub
TRAP_CALLS = (r"(?:std::)?assert\s*\(\s*(?:(?:0|false)\s*(?:&&\s*\"[^\"]*\"\s*)?|!\s*\"[^\"]*\"\s*)\)"
              r"|__trap\s*\(\s*\)|__builtin_trap\s*\(\s*\)|(?:std::)?abort\s*\(\s*\)")
# a branch that only traps: messages printed first, a value returned after the trap (never reached)
STUB = re.compile(rf"(?:\s*printf\s*\([^;]*\)\s*;)*(?:\s*(?:{TRAP_CALLS})\s*;)+(?:\s*return\b[^;]*;)?\s*")
# NVIDIA's traps as well: a gated branch of nothing but these traps on NVIDIA too (CUTLASS's uint128_t::exception)
NVIDIA_TRAP = re.compile(rf"(?:\s*(?:{TRAP_CALLS}|__brkpt\s*\(\s*\)"
                         r"|asm\s*(?:volatile\s*)?\(\s*\"\s*(?:brkpt|trap)\s*;?\s*(?:\\n)?\s*\"\s*(?::\s*)*\))\s*;)+\s*")
ARCH_TEST = re.compile(r"\b__CUDA_ARCH__\b")
ARCH_COMPARISON = re.compile(r"\b__CUDA_ARCH__\s*>=?\s*\d+")  # a lower bound: what cuda-arch-branch may turn on
COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.DOTALL)
# a function head that may run on the GPU: CUDA's qualifiers, or a macro that may expand to them
# (CUTLASS_HOST_DEVICE, DEVICE_INLINE, ...); constexpr functions run on the device with --expt-relaxed-constexpr
DEVICE_HEAD = re.compile(r"__device__|__global__|[A-Z_]*(?:DEVICE|HOST|GLOBAL|INLINE)[A-Z_]*|\bconstexpr\b|\[[^\]]*\]\s*\(")
STUB_KINDS = (("inline PTX", re.compile(r"\basm\b")), ("cp.async", re.compile(r"cp_async|cp\.async")),
              ("ldmatrix", re.compile(r"ldmatrix")), ("mma", re.compile(r"\bmma\b|mma_sync|wmma")),
              ("barrier", re.compile(r"\bbarrier|\bbar\.")))


def stub_branches(chain: list[cpp.Branch], raw_lines: list[str]) -> tuple[cpp.Branch, list[cpp.Branch]] | None:
    """(the branch AMD takes, the branches it never takes that hold code) of an #if chain (cpp.if_chains)
    that tests __CUDA_ARCH__ and whose branch for AMD only traps; None for any other chain. raw_lines:
    the text's lines (an NVIDIA branch of nothing but traps of its own is no code)."""
    taken = next((b for b in chain if b.on_amd is True), None)
    gated = [b for b in chain if b.on_amd is False and b.code.strip()
             and not NVIDIA_TRAP.fullmatch(COMMENT.sub("", "\n".join(raw_lines[b.line:b.line + b.code.count("\n") + 1])))]
    if taken is None or not gated or not STUB.fullmatch(taken.code) \
            or not any(ARCH_TEST.search(b.condition) for b in chain if b.word != "else"):
        return None
    return taken, gated


def _arch_stub(rel, blanked, raw_lines, dead, undefined, rule) -> list[Finding]:
    """#if chains that test __CUDA_ARCH__ where AMD takes a branch that only traps (`assert(0);`,
    `__trap();`) and a branch never compiled on AMD holds the code: the unit compiles, and the
    kernel stops when it reaches the stub."""
    found = []
    for chain in cpp.if_chains(blanked, undefined):
        if chain[0].line in dead:
            continue
        stub = stub_branches(chain, raw_lines)
        if stub is None or host_only(blanked, chain[0].line):
            continue
        taken, gated = stub
        kinds = [kind for kind, regex in STUB_KINDS if any(regex.search(b.code) for b in gated)]
        what = f" ({', '.join(kinds)})" if kinds else ""
        found.append(_hit(rule, rel, raw_lines, chain[0].line, 1,
                          f"On AMD this #if takes the branch at line {taken.line} (`{' '.join(taken.code.split())}`): "
                          f"the code of `#{chain[0].word} {chain[0].condition}`{what} is not compiled, so the unit "
                          "compiles and the kernel traps where it reaches the stub."))
    return found


WARP_MATRIX = re.compile(r"\b(?:mma\.sync|ldmatrix)\b")


ASYNC_COPY = re.compile(r"\bcp\.async\.c[ag]\b")
PIPELINE_COPY = re.compile(r"(?<![\w.:])__pipeline_memcpy_async\s*\(")


def _emulated_asm(rel, text, raw_lines, dead, rule, kind: re.Pattern) -> list[Finding]:
    """asm statements whose template matches `kind` (mma.sync / ldmatrix; cp.async) that the
    ptx-inline-asm fixup translates into an emulation (ptx.py): right results, another cost."""
    found = []
    for stmt in ptx.statements(text):
        line = cpp.line_of(text, stmt.start)
        if line in dead or not kind.search(stmt.template):
            continue
        try:
            ptx.translate(stmt, cuda_warps=True)
        except ptx.Unsupported:
            continue
        found.append(_hit(rule, rel, raw_lines, line, 1, rule.message))
    return found


def host_only(blanked: str, line: int) -> bool:
    """True when line (1-based) lies in a function whose head has no device qualifier, nor a macro or
    lambda that may give it one: NVIDIA compiles such a function for the host alone, where
    __CUDA_ARCH__ is never defined, so its #else is taken on NVIDIA too and no AMD stub is new."""
    offset = sum(len(row) + 1 for row in blanked.split("\n")[:line - 1])
    head = cpp.enclosing_function_head(blanked, offset)
    return head is not None and not DEVICE_HEAD.search(head)


LAUNCH = re.compile(r"<<<(.*?)>>>", re.DOTALL)
# runtime launch calls: (regex, index of the block argument, index of the shared-memory argument)
LAUNCH_CALLS = ((re.compile(r"\b(?:cuda|hip)Launch(?:Cooperative)?Kernel\s*\(([^;]*?)\)\s*;", re.DOTALL), 2, 4),
                (re.compile(r"\bhipLaunchKernelGGL\s*\(([^;]*?)\)\s*;", re.DOTALL), 2, 3))


def launches(blanked: str) -> list[tuple[int, list[str]]]:
    """(offset, [grid, block, shared bytes?]) of every kernel launch: <<<...>>> and runtime launch calls."""
    found = [(m.start(), cpp.split_args(m.group(1))) for m in LAUNCH.finditer(blanked)]
    for regex, block, smem in LAUNCH_CALLS:
        for m in regex.finditer(blanked):
            args = cpp.split_args(m.group(1))
            if len(args) > block:
                found.append((m.start(), [args[block - 1], args[block]] + ([args[smem]] if len(args) > smem else [])))
    return found
SET_ATTR = re.compile(r"\b(?:cuda|hip)FuncSetAttribute\s*\(([^;]*?)\)\s*;", re.DOTALL)
STATIC_SHARED = re.compile(r"__shared__\s+(?:__align__\s*\(\s*\d+\s*\)\s*)?([\w:]+(?:\s+int)?)\s+\w+((?:\s*\[[^\]]+\])+)\s*;")
LAUNCH_BOUNDS = re.compile(r"__launch_bounds__\s*\(([^)]*)\)")


def _hit(rule: Rule, rel: str, raw_lines: list[str], number: int, col: int, message: str) -> Finding:
    return Finding(rule.id, rule.severity, rel, number, col, raw_lines[number - 1].strip(), message, rule.hint, "")


# a warp-size constant of 64: `#define WARP_SIZE 64`, `constexpr int kWarpSize = 64;`
WAVE64_CONSTANT = re.compile(r"^[ \t]*(?:#[ \t]*define[ \t]+(?P<macro>\w+)[ \t]+\(?[ \t]*64[ \t]*[uU]?\)?[ \t]*$"
                             r"|(?:(?:static|inline|constexpr|const|unsigned|signed|int|long|size_t|u?int32_t|auto)[ \t]+)+"
                             r"(?P<var>\w+)[ \t]*(?:=[ \t]*64[uU]?|\{[ \t]*64[uU]?[ \t]*\})[ \t]*;)", re.MULTILINE)
WARP_SIZE_NAME = re.compile(r"(?i)warp_?size|wave(?:front)?_?size|threads_per_warp|lanes_per_warp")
# conditions that pick a value per offload arch: the constant is right where they hold
ARCH_CONDITION = re.compile(r"__gfx\w+__|__GFX\d+__|WAVEFRONT_SIZE|wavefrontsize|__gfx9|GFX9|CDNA|RDNA", re.IGNORECASE)
NEGATED = re.compile(r"^\s*!\s*(?:defined\s*\(?\s*)?\w+\s*\)?\s*$")


def _hip_branch(chain: list[cpp.Branch], index: int) -> bool:
    """Whether branch `index` of an #if chain is taken for HIP by its own test: `#if defined(__HIP_PLATFORM_AMD__)`,
    `#ifdef USE_ROCM`, or the #else of `#ifndef USE_ROCM` / `#if !defined(__HIPCC__)`."""
    branch = chain[index]
    if branch.word == "else":
        first = chain[0]
        return bool(warp.HIP_MARKERS.search(first.condition)) and (first.word == "ifndef" or bool(NEGATED.match(first.condition)))
    return bool(warp.HIP_MARKERS.search(branch.condition)) and branch.word != "ifndef" and not NEGATED.match(branch.condition)


def _wave64_constant(rel, blanked, raw_lines, dead, ctx, rule) -> list[Finding]:
    """Warp-size constants of 64 (WAVE64_CONSTANT, named as a warp or wavefront size) in a branch the
    tree's own HIP code path takes (_hip_branch), not chosen per offload arch (ARCH_CONDITION), when a
    selected arch has 32-lane wavefronts: the HIP port assumed CDNA's wave64."""
    hits = [m for m in WAVE64_CONSTANT.finditer(blanked) if WARP_SIZE_NAME.search(m.group("macro") or m.group("var"))]
    if not hits:
        return []
    chains = cpp.if_chains(blanked, ctx.undefined)
    wave32 = ", ".join(a.name for a in ctx.archs if a.wavefront == 32)
    found = []
    for m in hits:
        number = cpp.line_of(blanked, m.start())
        enclosing = [(chain, k) for chain in chains for k, b in enumerate(chain) if b.line < number < b.end]
        if number in dead or not any(_hip_branch(chain, k) for chain, k in enclosing) \
                or any(ARCH_CONDITION.search(b.condition) for chain, _k in enclosing for b in chain):
            continue
        name = m.group("macro") or m.group("var")
        found.append(_hit(rule, rel, raw_lines, number, 1, f"{rule.message} Here: {name} = 64 on {wave32} (32 lanes)."))
    return found


def _lds(rel, blanked, raw_lines, dead, names, archs, rule) -> list[Finding]:
    """Dynamic shared memory in launches and MaxDynamicSharedMemorySize attributes, and static
    __shared__ arrays, whose byte count is a constant above the LDS of a selected arch."""
    sites: list[tuple[int, int, str]] = []  # (offset, bytes, what)
    for offset, args in launches(blanked):
        if len(args) >= 3:
            value = cpp.evaluate(args[2], names)
            if value is not None:
                sites.append((offset, value, f"dynamic shared memory of the launch ({args[2]})"))
    for m in SET_ATTR.finditer(blanked):
        args = cpp.split_args(m.group(1))
        if len(args) == 3 and "MaxDynamicSharedMemorySize" in args[1]:
            value = cpp.evaluate(args[2], names)
            if value is not None:
                sites.append((m.start(), value, f"MaxDynamicSharedMemorySize ({args[2]})"))
    for m in STATIC_SHARED.finditer(blanked):
        size = cpp.SIZEOF.get(m.group(1).strip())
        dims = [cpp.evaluate(d, names) for d in re.findall(r"\[([^\]]+)\]", m.group(2))]
        if size and dims and all(d is not None for d in dims):
            total = size
            for d in dims:
                total *= d
            sites.append((m.start(), total, f"static __shared__ array ({m.group(1).strip()}{m.group(2).strip()})"))
    found = []
    for offset, value, what in sites:
        number = cpp.line_of(blanked, offset)
        over = [a for a in archs if value > a.lds_bytes]
        if number in dead or not over:
            continue
        limits = ", ".join(f"{a.name}: {a.lds_bytes} bytes" for a in over)
        found.append(_hit(rule, rel, raw_lines, number, 1,
                          f"{what} is {value} bytes, above the LDS per workgroup of {limits}; "
                          "the launch fails with hipErrorInvalidValue."))
    return found


def _block_size(rel, blanked, raw_lines, dead, names, rule) -> list[Finding]:
    """Launch block sizes (constants, or dim3 NAME(x, y, z) of the same file) and
    __launch_bounds__ maxima above 1024 threads."""
    dims: dict[str, int] = {}
    for m in re.finditer(r"\bdim3\s+(\w+)\s*[({]([^;]*?)[)}]\s*;", blanked):
        values = [cpp.evaluate(a, names) for a in cpp.split_args(m.group(2))]
        if values and all(v is not None for v in values):
            product = 1
            for v in values:
                product *= v
            dims[m.group(1)] = product if m.group(1) not in dims else -1
    found = []
    for offset, args in launches(blanked):
        if len(args) < 2:
            continue
        block = args[1]
        value = dims.get(block) if block in dims else cpp.evaluate(block, names)
        if value is None and block.startswith("dim3"):
            inner = [cpp.evaluate(a, names) for a in cpp.split_args(block[4:].strip("(){} "))]
            if inner and all(v is not None for v in inner):
                value = 1
                for v in inner:
                    value *= v
        number = cpp.line_of(blanked, offset)
        if value is not None and value > MAX_BLOCK and number not in dead:
            found.append(_hit(rule, rel, raw_lines, number, 1,
                              f"block of {value} threads ({block}) is above the 1024 work-items per workgroup of AMD GPUs."))
    for m in LAUNCH_BOUNDS.finditer(blanked):
        value = cpp.evaluate(cpp.split_args(m.group(1))[0], names)
        number = cpp.line_of(blanked, m.start())
        if value is not None and value > MAX_BLOCK and number not in dead:
            found.append(_hit(rule, rel, raw_lines, number, 1,
                              f"__launch_bounds__({value}) is above the 1024 work-items per workgroup of AMD GPUs."))
    return found
