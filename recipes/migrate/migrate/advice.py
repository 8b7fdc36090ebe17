"""Findings decided together with the fixups: which are closed, and the one suggestion per line.

A finding is closed ("fixed", with a note saying why) when
- a fixup its rule names changed its line, or the migrated line no longer matches the rule, or
  the migrated line is dead on AMD; or
- it is a 32-lane-warp assumption (lane % 32, offsets 16..1, a warp size of 32, arrays of 32, a
  32-bit ballot) and every warp operation compiled together with its file works on 32-lane groups
  after the fixups (warp.ops): then 32 is the right number on wave64 and on wave32.
When the files compiled together mix 32-lane-group operations with operations on the whole wavefront
(warpSize, HIP's own __ballot, a shuffle without width), the mix is an open error
(`warp-width-mixed`) and the 32-lane findings stay open without a rewrite: no line-local rewrite
is right for both wavefront sizes there. Suggested rewrites come from warp.rewrite applied to the
migrated line, so they agree with the fixups already on that line and with each other.
"""

from __future__ import annotations

import functools
import os
import posixpath
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace

from . import archbranch, cpp, features, fixups, hipify, includes, linemap, ptx, scan, sysdeps, texture, warp
from .archs import Arch
from .rules import Rule

WARP32_RULES = frozenset({"warp-lane-arith-32", "warp-reduce-offset-16", "warp-size-constant-32", "warp-array-32",
                          "warp-vote-32bit-result"})
MASK_RULES = frozenset({"warp-mask-32bit", "warp-sync-intrinsic", "warp-vote-32bit-result"})
MIXED_RULE = "warp-width-mixed"


@dataclass(frozen=True)
class FileState:
    """One file after the fixups: cuda (input text), final (migrated text), in_to_hip (CUDA line ->
    hipify line, 0-based), hip_to_final (hipify line -> migrated line), fixes (applied fixups)."""

    cuda: str
    final: str
    in_to_hip: list[int | None]
    hip_to_final: list[int | None]
    fixes: list[fixups.Fix]

    def final_line(self, cuda_line: int) -> int | None:
        """0-based migrated line of a 1-based CUDA line, or None when it was deleted."""
        hip = self.in_to_hip[cuda_line - 1] if cuda_line - 1 < len(self.in_to_hip) else None
        if hip is None or hip >= len(self.hip_to_final):
            return None
        return self.hip_to_final[hip]

    def cuda_line(self, final_line: int) -> int | None:
        """1-based CUDA line that became the 1-based migrated line `final_line`, or None."""
        for i, hip in enumerate(self.in_to_hip):
            if hip is not None and hip < len(self.hip_to_final) and self.hip_to_final[hip] == final_line - 1:
                return i + 1
        return None


IDENTIFIER = re.compile(r"\b[A-Za-z_]\w*")


def _full_mask_names(ctx: scan.Context, blanked: str) -> list[str]:
    """Names that stand for CUDA's all-32-lanes mask 0xffffffff in one file: the tree's unambiguous
    constants of that value (ctx.full_mask), and the file's own (`#define mask 0xFFFFFFFF` in one program
    of a collection whose other programs use `mask` for other values keeps its meaning in its file). Where
    the file defines a name the tree holds otherwise, the names the file writes are evaluated again with
    its own values (a tree's thousands of constants are not, for each file of it)."""
    own = {k: v for k, v in cpp.symbols(blanked).items() if v and ctx.symbols.get(k) != v}
    if not own:
        return list(ctx.full_mask)
    names = {**ctx.symbols, **own}
    written = (set(IDENTIFIER.findall(blanked)) | set(own)) & set(names)
    cache: dict[tuple[str, int], int | None] = {}
    full = {n for n in written if cpp.evaluate(names[n], names, cache=cache) == scan.FULL_MASK_VALUE}
    return sorted(full | (set(ctx.full_mask) - written))


def _projected(state: FileState, analysed: str, raw: list[scan.Finding], full_mask: re.Pattern) -> str:
    """The migrated text as analysed (warp.expand_macros of state.final) with the mask rewrite
    suggested for each warp-mask-32bit line put in place:
    the warp operations are classified as they will be once the suggestion is taken (a 32-bit CUDA
    mask left in a *_sync call does not compile for HIP, so it works on neither width)."""
    lines = analysed.split("\n")
    for finding in raw:
        index = state.final_line(finding.line) if finding.rule in ("warp-mask-32bit", "warp-vote-32bit-result") else None
        model = warp.Model(full_mask, legacy=False, any_mask=True, activemask=finding.rule == "warp-vote-32bit-result")
        if index is not None:
            lines[index] = warp.rewrite(lines[index], model)
    return "\n".join(lines)


def _macro_scope(texts: dict[str, tuple[str, str]], copied: frozenset[str], undefined: frozenset[str],
                 reach: dict[str, set[str]]) -> dict[str, warp.Macros]:
    """{file: the project's own warp macros (warp.own_macros of the translations) that apply to it}: those
    defined in a file that it, and every unit that includes it, reach through their includes. undefined:
    macros hipcc leaves undefined; reach: {file: files it reaches through includes, itself included}."""
    own = {rel: found for rel, (_cuda, hip) in texts.items() if rel not in copied
           and (found := warp.own_macros(cpp.blank(hip), undefined))}
    if not own:
        return {}
    units = [rel for rel in texts if posixpath.splitext(rel)[1] in UNIT_SUFFIXES]
    defining = set(own)
    # per file, the defining files that every unit including it reaches (one pass over the closures)
    common: dict[str, set[str]] = {}
    for unit in units:
        seen = reach[unit] & defining
        for rel in reach[unit]:
            common[rel] = common[rel] & seen if rel in common else set(seen)
    scoped: dict[str, warp.Macros] = {}
    for rel in texts:
        where_all = common[rel] if rel in common else reach[rel] & defining
        for where, found in own.items():
            if where in where_all:
                for name, macro in found.items():
                    scoped.setdefault(rel, {}).setdefault(name, macro)
    return scoped


def _atomics_scope(texts: dict[str, tuple[str, str]], reach: dict[str, set[str]]) -> dict[str, frozenset[str]]:
    """{file: the 16-bit float types whose atomicAdd a file compiled together with it declares
    (features.half_atomics_declared)}: gptqmodel 7.7.0's exllamav2 declares atomicAdd(half2*, half2) for
    its own units, which its Marlin units never include (they need the CAS overloads). reach: see scopes()."""
    declaring = {rel: found for rel, (cuda, _hip) in texts.items()
                 if "atomicAdd" in cuda and (found := features.half_atomics_declared([cpp.blank(cuda)]))}
    if not declaring:
        return {}
    together = scopes(reach, list(texts), set(declaring))
    return {rel: frozenset().union(*(declaring[f] for f in together[rel])) for rel in texts}


def _warp_facts(blanked: dict[str, str], reach: dict[str, set[str]],
                tree_blanked: list[str] | None) -> dict[str, tuple[bool, bool]]:
    """{file: (cuda_only, own_warp_size)}: whether no file compiled with it has a HIP code path
    (warp.hip_aware) and whether one declares its own warpSize (warp.declares_warp_size). Decided over
    the files compiled together (scopes()): one program of a benchmark collection with a HIP path does
    not make the CUDA-only programs beside it HIP-aware. blanked: {file: its blanked CUDA text};
    tree_blanked: the whole tree's blanked CUDA texts when the files are a part of it (a PyTorch
    extension's units): then the whole tree decides."""
    if tree_blanked is not None:
        facts = (not warp.hip_aware(tree_blanked), warp.declares_warp_size(tree_blanked))
        return {rel: facts for rel in blanked}
    aware = {rel for rel, text in blanked.items() if warp.hip_aware([text])}
    own_size = {rel for rel, text in blanked.items() if warp.declares_warp_size([text])}
    together = scopes(reach, list(blanked), aware | own_size)
    return {rel: (not (together[rel] & aware), bool(together[rel] & own_size)) for rel in blanked}


# warp.Op kinds that work on the whole wavefront, or may
WIDE_KINDS = ("wavefront", "unknown")
HELPER_OPEN = re.compile(r"^[ \t]*#[ \t]*(?:ifndef[ \t]+|if[ \t]+!defined\(\s*)ROCMIG_\w+")
DIRECTIVE = re.compile(r"^[ \t]*#[ \t]*(if|ifdef|ifndef|endif)\b")


def helpers_blanked(text: str) -> str:
    """`text` with the blocks the fixups inserted (`#ifndef ROCMIG_...` to its #endif: rocmig_ptx's warp
    emulation, CAS loops, ...) as empty lines, for the warp analysis: their lane arithmetic
    (`__lane_id() & 31`) is rocmig's own, checked by its tests, not code of the tree to advise on."""
    lines = text.split("\n")
    depth = 0
    for k, line in enumerate(lines):
        if depth == 0 and not HELPER_OPEN.match(line):
            continue
        m = DIRECTIVE.match(line)
        if m:
            depth += -1 if m.group(1) == "endif" else 1
        lines[k] = ""
    return "\n".join(lines)


@functools.cache
def _toolkit_guard(path: str) -> str | None:
    """The include guard macro of a CUDA toolkit header (cpp.guard_name), read once per run."""
    with open(path, encoding="utf-8", errors="replace") as handle:
        return cpp.guard_name(cpp.blank(handle.read()))


def scopes(reach: dict[str, set[str]], rels: list[str], marked: set[str]) -> dict[str, set[str]]:
    """For each file of `rels`, the files of `marked` compiled together with it: those in its own include
    closure and in the closures of every unit that includes it. reach: {unit or file: files it reaches
    through includes, itself included}. Only the marked files (few: those with a HIP code path, a
    wavefront-wide warp operation, ...) are collected, so the time grows with the total size of the
    closures, not with its square (CatBoost 1.2.10's 16,000 files share their util/ headers)."""
    out = {rel: reach.get(rel, {rel}) & marked for rel in rels}
    for closure in reach.values():
        found = closure & marked
        if found:
            for rel in closure:
                if rel in out:
                    out[rel] |= found
    return out


def _status(finding: scan.Finding, rule: scan.Compiled, state: FileState, final_blanked: list[str],
            final_dead: set[int]) -> scan.Finding:
    hip_line = state.in_to_hip[finding.line - 1] if finding.line - 1 < len(state.in_to_hip) else None
    if hip_line is None:
        return finding
    touched = [f.id for f in state.fixes if f.id in rule.rule.fixed_by and hip_line + 1 in f.lines]
    if touched:
        return replace(finding, status="fixed", note=f"rewritten by the fixup {touched[0]}")
    if not rule.patterns:
        return finding
    final = state.final_line(finding.line)
    if final is None:
        return finding
    if final + 1 in final_dead:
        return replace(finding, status="fixed", note="the migrated line is not compiled on AMD")
    if scan.matches(rule, final_blanked[final]) is None:
        return replace(finding, status="fixed", note="the migrated line no longer has it")
    return finding


def _stub_gone(state: FileState, cuda_line: int, final_blanked: str, undefined: frozenset[str]) -> bool:
    """True when the #if chain of the cuda-arch-stub finding at `cuda_line` no longer leaves AMD only its
    stub in the migrated text (the fixup cuda-arch-branch made AMD's device code take a CUDA branch)."""
    head = state.final_line(cuda_line)
    if head is None:
        return False
    chain = next((c for c in cpp.if_chains(final_blanked, undefined | cpp.HIPCC_UNDEFINED) if c[0].line == head + 1), None)
    return chain is not None and archbranch.AMD_DEVICE in chain[0].condition + "".join(b.condition for b in chain) \
        and scan.stub_branches(chain, state.final.split("\n")) is None


PARTIAL_MASK = re.compile(r"\b__\w+_sync\s*\(\s*(0[xX][0-9a-fA-F]{1,8})[uU]?\s*[,)]")


def _partial_mask_note(finding: scan.Finding, cuda_text: str) -> scan.Finding:
    """A fixed warp finding whose CUDA line passes a constant mask of fewer than 32 lanes (catboost 1.2.10's
    `__shfl_down_sync(0xFFFFFF, v, s)` in a reduction all 32 lanes run) gets a note: the rewrite keeps the
    mask, and HIP 7.2's *_sync functions check, in builds without NDEBUG, that the mask names exactly the
    lanes that make the call (amd_warp_sync_functions.h's __hip_check_mask) and trap otherwise; CUDA leaves
    a call by lanes the mask does not name undefined."""
    lines = cuda_text.split("\n")
    line = lines[finding.line - 1] if 0 < finding.line <= len(lines) else ""
    m = PARTIAL_MASK.search(line)
    if not m or int(m.group(1), 16) == 0xFFFFFFFF:
        return finding
    lanes = bin(int(m.group(1), 16)).count("1")
    note = (f"the mask {m.group(1)} names {lanes} of 32 lanes: HIP checks, in builds without NDEBUG, that it names "
            "exactly the lanes that make the call and traps otherwise (CUDA leaves extra lanes undefined); "
            "check that only those lanes reach it")
    return replace(finding, note=f"{finding.note}; {note}" if finding.note else note)


def decide(rel: str, findings: list[scan.Finding], by_id: dict[str, scan.Compiled], states: dict[str, FileState],
           scope: set[str], file_ops: dict[str, list[warp.Op]], full_mask: re.Pattern,
           undefined: frozenset[str], analysed: str) -> list[scan.Finding]:
    """The findings of file `rel` with their status, note and suggestion decided (see module doc),
    plus the warp-width-mixed errors of the file. file_ops: {file: warp.ops of its migrated text};
    analysed: the migrated text with the project's own warp macros expanded (warp.expand_macros),
    which the statuses are decided on."""
    state = states[rel]
    final_lines = state.final.split("\n")
    final_blanked = cpp.blank_code(analysed)
    dead = cpp.dead_lines(final_blanked, undefined | cpp.HIPCC_UNDEFINED)
    blanked_lines = final_blanked.split("\n")
    wide = [(f, op) for f in sorted(scope) for op in file_ops.get(f, []) if op.kind in WIDE_KINDS]
    first_wide: tuple[str, warp.Op] | None = next(((f, op) for f, op in wide if op.kind == "wavefront"),
                                                  wide[0] if wide else None)
    # suggestions only where the line shows a 32-bit mask or a 32-bit ballot result (a 64-bit mask
    # written for HIP must stay as it is)
    narrow = {f.line for f in findings if f.rule in ("warp-mask-32bit", "warp-vote-32bit-result")}
    narrow_votes = {f.line for f in findings if f.rule == "warp-vote-32bit-result"}
    out = []
    analysed_lines = analysed.split("\n")
    for finding in findings:
        finding = _status(finding, by_id[finding.rule], state, blanked_lines, dead)
        if finding.rule == "cuda-arch-stub" and finding.status == "open" and _stub_gone(state, finding.line, final_blanked, undefined):
            finding = replace(finding, status="fixed",
                              note="the fixup cuda-arch-branch has AMD's device code take the CUDA arch branch, whose PTX "
                                   "is translated (ptx-inline-asm), instead of the stub")
        if finding.rule == "inline-ptx-asm" and finding.status == "open" and ptx.not_ptx(state.cuda, finding.line):
            continue  # a compiler barrier or the host's assembly: nothing for the migration to do
        if finding.rule == "inline-ptx-asm" and finding.status == "open" and not finding.note:
            why = ptx.untranslated(state.cuda, finding.line)
            finding = replace(finding, note=f"not translated: {why}") if why else finding
        if finding.rule in MASK_RULES and finding.status == "fixed":
            finding = _partial_mask_note(finding, state.cuda)
        final = state.final_line(finding.line)
        if finding.status == "fixed" and final is not None and finding.rule.startswith("warp") \
                and analysed_lines[final] != final_lines[final]:
            finding = replace(finding, note="the project's own macro of this warp operation, compiled on AMD, is its "
                                            "HIP form: the line is checked as the macro expands it")
        suggested = None
        if finding.status == "open" and finding.rule in MASK_RULES and finding.line in narrow:
            final = state.final_line(finding.line)
            if final is not None:
                model = warp.Model(full_mask, legacy=False, any_mask=True, activemask=finding.line in narrow_votes)
                new = warp.rewrite(final_lines[final], model)
                suggested = new.strip() if new != final_lines[final] else None
        if finding.status == "open" and finding.rule in WARP32_RULES:
            if not wide and suggested is None:  # the ops were classified with the line's suggestion taken
                finding = replace(finding, status="fixed", suggestion="",
                                  note="CUDA's 32-lane warp is kept: every warp operation compiled with this line works "
                                       "on 32-lane groups after the fixups, on wave64 and on wave32")
            elif first_wide is not None:
                f, op = first_wide
                width = " (its width is not a constant)" if op.kind == "unknown" else ""
                finding = replace(finding, suggestion="",
                                  note=f"hip/{f}:{op.line} `{op.text}` works on the whole wavefront{width} while "
                                       "this line assumes 32-lane warps; make them agree by hand (see warp-width-mixed)")
        if finding.status == "open" and suggested is not None:
            finding = replace(finding, suggestion=suggested,
                              note="exact for CUDA's 32-bit lane mask or ballot, which this line keeps in 32 bits")
        out.append(finding)
    out += _mixed(rel, state, file_ops.get(rel, []), first_wide, by_id.get(MIXED_RULE))
    return out


def _mixed(rel: str, state: FileState, ops: list[warp.Op], first_wide: tuple[str, warp.Op] | None,
           rule: scan.Compiled | None) -> list[scan.Finding]:
    """warp-width-mixed errors at the 32-lane-group operations of `rel` when the scope also works on
    the whole wavefront."""
    if rule is None or first_wide is None or first_wide[1].kind != "wavefront":
        return []
    f, op = first_wide
    raw = state.cuda.split("\n")
    found, seen = [], set()
    for mine in ops:
        if mine.kind != "group32":
            continue
        line = state.cuda_line(mine.line)
        if line is None or line in seen:
            continue
        seen.add(line)
        r = rule.rule
        found.append(scan.Finding(r.id, r.severity, rel, line, 1, raw[line - 1].strip(),
                                  f"`{mine.text}` works on 32-lane groups (CUDA's warp) while hip/{f}:{op.line} `{op.text}` "
                                  "works on the whole wavefront (64 lanes on CDNA); on wave64 the two disagree.",
                                  r.hint, ""))
    return found


@dataclass(frozen=True)
class Migrated:
    """A tree after the fixups and the scan: final ({rel: migrated text}), fixes ({rel: [Fix]}),
    findings ({rel: [Finding]} sorted by line), graph (include graph of the migrated tree), states
    ({rel: FileState}: the line maps)."""

    final: dict[str, str]
    fixes: dict[str, list[fixups.Fix]]
    findings: dict[str, list[scan.Finding]]
    graph: includes.IncludeGraph
    states: dict[str, FileState]

    def fix_entries(self, rel: str) -> list[dict]:
        """The report's entries of one file's fixes: id, title, lines (1-based, of the migrated file, where
        the fixed text sits now: a fix of a translator line another fixup deleted has none), diff."""
        to_final = self.states[rel].hip_to_final
        return [{"id": x.id, "title": x.title, "diff": x.diff,
                 "lines": sorted({to_final[n - 1] + 1 for n in x.lines if n - 1 < len(to_final) and to_final[n - 1] is not None})}
                for x in self.fixes[rel]]


# Suffixes of translation units, the CUDA ones and torch.utils.hipify's names for them (.hip)
UNIT_SUFFIXES = frozenset({".cu", ".hip", ".cpp", ".cc", ".cxx", ".c"})


def migrate_tree(texts: dict[str, tuple[str, str]], rules: list[Rule], archs: list[Arch],
                 include_dirs: tuple[str, ...] = (), system_dirs: tuple[str, ...] = (),
                 tree_cuda: Mapping[str, str] | None = None, pytorch_files: frozenset[str] = frozenset(),
                 defines: frozenset[str] = frozenset(), copied: frozenset[str] = frozenset(),
                 toolkit_dirs: tuple[str, ...] | None = None,
                 unit_dirs: Mapping[str, tuple[str, ...]] | None = None) -> Migrated:
    """Apply the fixups to hipify's output and decide the scanner's findings for a whole tree.

    texts: {tree-relative path of the translation: (CUDA input text, translator output text)}; the
    translator is hipify-perl, hipify-clang or torch.utils.hipify (the fixups only rewrite what has one
    correct HIP form, so they hold on each one's output); rules: rules.load_rules(); archs: the
    selected offload archs (for the LDS check); include_dirs / system_dirs: see includes.IncludeGraph;
    tree_cuda: {tree-relative path: CUDA text} of the whole tree when `texts` is a part of it (the
    tree-wide facts: macros, full-mask names, whether the tree has HIP code paths, and which #include
    names are the tree's own headers, come from the whole tree);
    pytorch_files: the keys of `texts` whose includes reach PyTorch's headers (non-empty: `texts` is
    compiled as a PyTorch extension, which defines USE_ROCM); defines: macro names the compile of
    `texts` defines (--define): without PyTorch, USE_ROCM is undefined unless it is one of them;
    copied: the keys of `texts` that were not translated (their translation is their CUDA text): they
    are kept as they are, not fixed and not scanned, and still resolve includes; toolkit_dirs: the CUDA
    toolkit's include folders (hipify-clang's CUDA headers), which tell a project's own header from a
    toolkit header (None: not known); unit_dirs: each unit's own include folders (includes.IncludeGraph)."""
    blanked_of = {rel: cpp.blank(cuda) for rel, (cuda, _hip) in texts.items()}
    blanked = [cpp.blank(cuda) for cuda in tree_cuda.values()] if tree_cuda is not None else list(blanked_of.values())
    ctx = scan.tree_context(blanked, archs)
    if not pytorch_files:
        ctx = replace(ctx, undefined=ctx.undefined | (cpp.ROCM_BUILD_MACROS - defines))
    compiled = scan.compile_rules(rules, ctx)
    by_id = {c.rule.id: c for c in compiled}
    mask_names = {rel: _full_mask_names(ctx, text) for rel, text in blanked_of.items()}
    hipcc_undefined = ctx.undefined | cpp.HIPCC_UNDEFINED
    pre_graph = includes.IncludeGraph({rel: hip for rel, (_cuda, hip) in texts.items()}, hipcc_undefined, include_dirs, system_dirs,
                                      unit_dirs=unit_dirs)
    reach = {rel: pre_graph.reach(rel) for rel in texts}
    warp_facts = _warp_facts(blanked_of, reach, blanked if tree_cuda is not None else None)
    macros_for = _macro_scope(texts, copied, hipcc_undefined, reach)
    half_declared = features.half_overloads(blanked) if pytorch_files else frozenset()
    wmma_used = features.wmma_used(blanked)
    libcudacxx_used = features.libcudacxx_used(blanked)
    soft_textures = texture.soft_files(blanked_of)
    cub_namespaces = features.cub_namespaces(blanked)
    atomics_for = _atomics_scope(texts, reach)
    hipblas_major = sysdeps.hipblas_major(system_dirs)
    tree_macros = {m.group(1) for text in blanked for m in sysdeps.MACRO_DEFINE.finditer(text)}
    hip_macros = sysdeps.hip_leaked_macros(system_dirs) - tree_macros
    include_map, constant_map = hipify.include_map(), hipify.math_constant_map()
    # headers that declare a bfloat16 type name themselves: hip_bf16.h is not added where one is compiled,
    # nor anywhere while one of them is included by no file found (its includers are not known)
    bf16_headers = {rel for rel, (cuda, _hip) in texts.items()
                    if posixpath.splitext(rel)[1] not in UNIT_SUFFIXES and fixups.declares_bf16([cpp.blank(cuda)])}
    bf16_anywhere = any(all(h not in files for other, files in reach.items() if other != h) for h in bf16_headers)
    bf16_together = scopes(reach, list(texts), bf16_headers)
    states: dict[str, FileState] = {}
    by_name: dict[str, list[str]] = {}
    for path in sorted(set(texts) | set(tree_cuda or ())):  # the translations' names and the whole tree's
        by_name.setdefault(posixpath.basename(path), []).append(path)

    def tree_path(name: str) -> str | None:
        """The first tree file whose path ends with the include name."""
        suffix = "/" + name.lstrip("./")
        return next((p for p in by_name.get(posixpath.basename(name), []) if ("/" + p).endswith(suffix)), None)

    def in_tree(name: str) -> bool:
        return tree_path(name) is not None

    def in_dirs(dirs: tuple[str, ...]) -> Callable[[str], bool]:
        return lambda name: any(os.path.isfile(os.path.join(d, name)) for d in dirs)

    cuda_of = {**(tree_cuda or {}), **{rel: cuda for rel, (cuda, _hip) in texts.items()}}

    def vendored(name: str, folder: str) -> bool:
        toolkit = next((os.path.join(d, name) for d in toolkit_dirs or () if os.path.isfile(os.path.join(d, name))), None)
        if toolkit is None:
            return False
        beside = posixpath.normpath(posixpath.join(folder, name))
        found = beside if beside in cuda_of else tree_path(name)
        guard = cpp.guard_name(cpp.blank(cuda_of[found])) if found else None
        return guard is not None and guard == _toolkit_guard(toolkit)

    headers = fixups.HeaderLookup(in_tree, in_dirs(system_dirs), None if toolkit_dirs is None else in_dirs(toolkit_dirs),
                                  vendored if toolkit_dirs is not None else None)

    for rel, (cuda, hip) in texts.items():
        if rel in copied:
            same = list[int | None](range(cuda.count("\n") + 1))
            states[rel] = FileState(cuda, cuda, same, same, [])
            continue
        cuda_lines, hip_lines = cuda.split("\n"), hip.split("\n")
        in_to_hip = linemap.map_lines(cuda_lines, hip_lines)
        final, fixes, to_hip = fixups.apply_all(rel, cuda, hip, mask_names[rel], in_to_hip, ctx.undefined,
                                        cuda_only=warp_facts[rel][0], own_warp_size=warp_facts[rel][1], pytorch=rel in pytorch_files,
                                        half_declared=half_declared, headers=headers,
                                        hipblas_major=hipblas_major, bf16_declared=bf16_anywhere or bool(bf16_together[rel]),
                                        own_macros=frozenset(macros_for.get(rel, {})), atomics_declared=atomics_for.get(rel, frozenset()),
                                        hip_macros=hip_macros, include_map=include_map,
                                        constant_map=constant_map, wmma_used=wmma_used, soft_textures=rel in soft_textures,
                                        cub_namespaces=cub_namespaces, libcudacxx_used=libcudacxx_used)
        hip_to_final: list[int | None] = [None] * len(hip_lines)
        for line, came_from in enumerate(to_hip):
            if came_from is not None and came_from < len(hip_to_final) and hip_to_final[came_from] is None:
                hip_to_final[came_from] = line
        states[rel] = FileState(cuda, final, in_to_hip, hip_to_final, fixes)
    final_texts = {rel: st.final for rel, st in states.items()}
    graph = includes.IncludeGraph(final_texts, ctx.undefined | cpp.HIPCC_UNDEFINED, include_dirs, system_dirs,
                                  unit_dirs=unit_dirs)
    full_mask = {rel: fixups.full_mask_regex(names) for rel, names in mask_names.items()}
    cxx20 = {c.rule.id for c in compiled if c.rule.scope == "cxx20"}
    # a PyTorch extension's files (its units and every header they include) are compiled with -std=c++20
    raw = {rel: [f for f in scan.scan_file(rel, cuda, compiled, ctx) if pytorch_files or f.rule not in cxx20]
           for rel, (cuda, _hip) in texts.items() if rel not in copied}
    analysed = {rel: warp.expand_macros(helpers_blanked(text), macros_for.get(rel, {})) for rel, text in final_texts.items()
                if rel not in copied}
    file_ops = {rel: warp.ops(_projected(states[rel], analysed[rel], raw[rel], full_mask[rel]), ctx.symbols,
                              cpp.dead_lines(cpp.blank(text), ctx.undefined | cpp.HIPCC_UNDEFINED))
                for rel, text in final_texts.items() if rel not in copied}
    wide_files = {rel for rel, found in file_ops.items() if any(op.kind in WIDE_KINDS for op in found)}
    scope_of = scopes({rel: graph.reach(rel) for rel in final_texts}, list(final_texts), wide_files)
    findings: dict[str, list[scan.Finding]] = {rel: [] for rel in copied}
    for rel in raw:
        found = decide(rel, raw[rel], by_id, states, scope_of[rel], file_ops, full_mask[rel], ctx.undefined, analysed[rel])
        findings[rel] = sorted(found, key=lambda x: x.line)
    return Migrated(final_texts, {rel: st.fixes for rel, st in states.items()}, findings, graph, states)
