"""Include resolution inside the tree: which folders a unit needs on the include path, and whether
it needs PyTorch's C++ headers.

Resolution follows the compiler's order: a quoted include next to the including file; then the
include folders the project's build names (flags.py), in order; then, for a name the compiler's own
search path does not have (system_include_dirs), a lookup by path suffix among the tree's files, of
several candidates the one sharing the longest folder prefix with the including file (DeepSpeed
ships the same headers under csrc/ and deepspeed/ops/csrc/), never one in another program's folder
(a sibling folder with a main() of its own: a benchmark suite's per-benchmark folders). A tree's own <unistd.h> shim for
another OS therefore never shadows the system header, and the lookup never resolves a file's include
to that file itself: ggml's vendors/cuda.h includes <cuda.h>, the CUDA toolkit's header.
"""

from __future__ import annotations

import hashlib
import os
import posixpath
import re
import subprocess
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from . import cpp

INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*([<"])([^>"\n]+)[>"]', re.MULTILINE)
TORCH = re.compile(r"^(torch/|ATen/|c10/|caffe2/)")
PROGRAM_MAIN = re.compile(r"^[ \t]*(?:int|void)\s+main\s*\(", re.MULTILINE)
SOURCE_SUFFIXES = (".cu", ".cpp", ".cc", ".cxx", ".c")


@dataclass(frozen=True)
class UnitIncludes:
    """Include needs of one unit: dirs (tree-relative folders for -I, sorted), torch (it includes
    PyTorch headers that the tree does not hold), torch_header (the first such include, for the report)."""

    dirs: tuple[str, ...]
    torch: bool
    torch_header: str


CONDITIONAL_DIRECTIVE = re.compile(r"^[ \t]*#[ \t]*(if|ifdef|ifndef|endif)\b", re.MULTILINE)


def _conditional_lines(blanked: str) -> set[int]:
    """1-based numbers of the lines of `blanked` (cpp.blank) inside an #if / #ifdef / #ifndef block,
    its own directive lines excluded; a header's include guard (cpp.include_guard) is no such block."""
    inside, depth, last = set(), 0, 1
    base = 1 if cpp.include_guard(blanked) else 0
    for m in CONDITIONAL_DIRECTIVE.finditer(blanked):
        line = cpp.line_of(blanked, m.start())
        if depth > base:
            inside.update(range(last + 1, line))
        depth = depth + 1 if m.group(1) != "endif" else max(0, depth - 1)
        last = line
    return inside


@dataclass(frozen=True)
class Programs:
    """The folders of a tree that hold a program (a source that defines main(): PROGRAM_MAIN) and the
    folders that hold any source."""

    programs: frozenset[str]
    sources: frozenset[str]

    @classmethod
    def of(cls, texts: Mapping[str, str]) -> Programs:
        """The program and source folders of a tree ({rel: text})."""
        return cls(frozenset(posixpath.dirname(rel) for rel, text in texts.items()
                             if rel.endswith(SOURCE_SUFFIXES) and PROGRAM_MAIN.search(text)),
                   frozenset(posixpath.dirname(rel) for rel in texts if rel.endswith(SOURCE_SUFFIXES)))

    def other(self, here: str, there: str) -> bool:
        """Whether folder `there` is another program's than folder `here`: neither holds the other, `here`
        holds a program, and `there` does too or, in a collection of programs (two or more), holds
        sources of its own (a program whose main() the copy lacks: HeCBench's mmcsf-cuda/ beside
        interleave-cuda/, each with its own util.h). A benchmark suite's folders never lend each other
        headers or declarations; a library's folders (DeepSpeed's ragged_ops/moe_gather/ and
        top_k_gating/) and an include folder of headers only (the CUDA samples' Common/) serve their
        neighbours. In a collection, `here` holding sources of its own counts as a program too (Rodinia's
        srad_v1/ whose main.cu the copy lacks: its kernels' `fp` is not lavaMD's)."""
        if not here or here == there or (here + "/").startswith(there + "/") or (there + "/").startswith(here + "/"):
            return False
        collection = len(self.programs) > 1
        if here not in self.programs and not (collection and here in self.sources):
            return False
        return there in self.programs or (collection and there in self.sources)


class Edges:
    """{file: [(included tree path, -I folder or "")]} under one include path, each file resolved when
    first asked for (a unit's own include path reaches a part of the tree only)."""

    def __init__(self, resolve: Callable[[str], list[tuple[str, str]]]):
        self._resolve = resolve
        self._memo: dict[str, list[tuple[str, str]]] = {}

    def get(self, rel: str, default: list[tuple[str, str]] | None = None) -> list[tuple[str, str]]:
        """The resolved includes of `rel` (empty for a file the tree does not hold)."""
        if rel not in self._memo:
            self._memo[rel] = self._resolve(rel)
        return self._memo[rel]


class IncludeGraph:
    """The include edges of a tree: built once from {rel: text}, queried per unit."""

    # C++ standard headers with no suffix (ISO C++ [headers]) that no project names a file of its own:
    # a tree folder that holds one is a standard library's (a vendored libcu++ `cuda/std/`), and
    # putting it on the include path would hide the compiler's own <cmath> and <cstdint>
    STANDARD_HEADERS = frozenset({"cassert", "cctype", "cerrno", "cfenv", "cfloat", "cinttypes", "climits", "clocale",
                                  "cmath", "csetjmp", "csignal", "cstdarg", "cstddef", "cstdint", "cstdio", "cstdlib",
                                  "cstring", "ctime", "cuchar", "cwchar", "cwctype", "type_traits", "initializer_list"})

    def __init__(self, texts: dict[str, str], undefined: frozenset[str] = frozenset(),
                 include_dirs: tuple[str, ...] = (), system_dirs: tuple[str, ...] = (),
                 defined: frozenset[str] = frozenset(), unit_dirs: Mapping[str, tuple[str, ...]] | None = None):
        """texts: {tree-relative POSIX path: file content}; undefined: macros undefined on AMD;
        include_dirs: tree-relative folders the build names; system_dirs: the compiler's own
        include search path (absolute folders); defined: macros every unit's compile defines (an
        include under `#ifndef` one of them is never read: cupy's `#ifndef CUPY_USE_HIP` CUB includes);
        unit_dirs: {unit: its own include folders}, searched before include_dirs for everything that
        unit includes (a builder's per-extension folders: opbuilders.unit_include_dirs)."""
        self.paths = set(texts)
        self.include_dirs = include_dirs
        self.unit_dirs = dict(unit_dirs or {})
        self.system_dirs = system_dirs
        self._by_name: dict[str, list[str]] = {}  # file name -> tree paths, for the lookup by path suffix
        for path in sorted(self.paths):
            self._by_name.setdefault(posixpath.basename(path), []).append(path)
        self._in_system: dict[str, bool] = {}  # include name -> found on the compiler's own search path
        self.standard_folders = {posixpath.dirname(p) for p in self.paths if posixpath.basename(p) in self.STANDARD_HEADERS}
        # folders holding a source that defines main(): each is a program of its own
        self._programs = Programs.of(texts)
        self.content = {rel: hashlib.sha256(text.encode()).hexdigest() for rel, text in texts.items()}
        # (file, included file) of the #include lines inside an #if / #ifdef / #ifndef block
        self.conditional: set[tuple[str, str]] = set()
        self.torch: dict[str, str] = {}
        # each file's live #include lines: (name, quoted, inside an #if block)
        self._includes: dict[str, list[tuple[str, bool, bool]]] = {}
        for rel, text in texts.items():
            blanked = cpp.blank(text)
            dead = cpp.dead_lines(blanked, undefined, defined)
            nested = _conditional_lines(blanked)
            self._includes[rel] = [(m.group(2).strip(), m.group(1) == '"', line in nested) for m in INCLUDE.finditer(text)
                                   if (line := cpp.line_of(text, m.start())) not in dead]
        self._edges: dict[tuple[str, ...], Edges] = {}
        self.edges = self._edges_with(include_dirs)
        for rel in self._includes:
            self.edges.get(rel)

    def _edges_with(self, dirs: tuple[str, ...]) -> Edges:
        """The edges with `dirs` as the include folders (one Edges per include path)."""
        if dirs not in self._edges:
            self._edges[dirs] = Edges(lambda rel: self._resolve_all(rel, dirs))
        return self._edges[dirs]

    def _resolve_all(self, rel: str, dirs: tuple[str, ...]) -> list[tuple[str, str]]:
        """[(included tree path, -I folder or "")] of the live #include lines of `rel` found in the tree."""
        resolved = []
        for name, quoted, nested in self._includes.get(rel, []):
            target, folder = self._resolve(rel, name, quoted, dirs)
            if target:
                resolved.append((target, folder))
                if nested:
                    self.conditional.add((rel, target))
            elif TORCH.match(name) and rel not in self.torch:
                self.torch[rel] = name
        return resolved

    def unit_edges(self, unit: str) -> Edges:
        """The edges as compiling `unit` resolves them: its own include path (unit_dirs) when it has one."""
        own = self.unit_dirs.get(unit)
        return self._edges_with(tuple(dict.fromkeys(own + self.include_dirs))) if own else self.edges

    def _resolve(self, rel: str, name: str, quoted: bool, dirs: tuple[str, ...]) -> tuple[str, str]:
        """(tree path of the included file, folder to add with -I or "" when none is needed), with `dirs`
        as the include folders."""
        here = posixpath.dirname(rel)
        if quoted:
            local = posixpath.normpath(posixpath.join(here, name))
            if local in self.paths:
                return local, ""
        for folder in dirs:
            target = posixpath.normpath(posixpath.join(folder, name))
            if target in self.paths and folder not in self.standard_folders:
                return target, folder
        if name not in self._in_system:
            self._in_system[name] = any(os.path.isfile(os.path.join(d, name)) for d in self.system_dirs)
        if self._in_system[name] or TORCH.match(name):
            # a PyTorch header (<torch/types.h>) comes from PyTorch's include path, which the build names, not
            # from a tree file whose path ends the same (fvdb-core 0.6.0's dispatch/torch/types.h includes it)
            return "", ""
        suffix = "/" + name.lstrip("./")
        candidates = [p for p in self._by_name.get(posixpath.basename(suffix), []) if ("/" + p).endswith(suffix) and p != rel
                      and not self._programs.other(here, posixpath.dirname(p))
                      and not self._within_standard(p[: len(p) - len(suffix) + 1].rstrip("/"))]
        if not candidates:
            return "", ""
        best = max(candidates, key=lambda p: (len(os.path.commonprefix([p, rel])), -len(p)))
        folder = best[: len(best) - len(suffix) + 1].rstrip("/")
        return best, folder if folder else "."

    def _within_standard(self, folder: str) -> bool:
        """Whether `folder` (the -I folder a suffix match would add) is a standard library's folder
        (standard_folders) or lies below one: the match would find the library's internals (CatBoost's
        vendored libc++ holds `__thread/support/windows.h`, which a Linux build's `<windows.h>` must not
        become). A name that spells the way into one (<cuda/std/__cccl/builtin.h> from above libcu++'s
        cuda/std/) is the library's public path and matches."""
        while folder:
            if folder in self.standard_folders:
                return True
            folder = posixpath.dirname(folder)
        return False

    def closure(self, unit: str) -> UnitIncludes:
        """Include needs of `unit`, following includes transitively."""
        seen, stack, dirs, torch = {unit}, [unit], set(), ""
        edges = self.unit_edges(unit)
        while stack:
            rel = stack.pop()
            if not torch and rel in self.torch:
                torch = self.torch[rel]
            for target, folder in edges.get(rel, []):
                if folder:
                    dirs.add(folder)
                if target not in seen:
                    seen.add(target)
                    stack.append(target)
        return UnitIncludes(dirs=tuple(sorted(dirs)), torch=bool(torch), torch_header=torch)

    def reach(self, rel: str) -> set[str]:
        """The files `rel` includes, transitively, and `rel` itself (as compiling `rel` resolves them)."""
        seen, stack = {rel}, [rel]
        edges = self.unit_edges(rel)
        while stack:
            for target, _folder in edges.get(stack.pop(), []):
                if target not in seen:
                    seen.add(target)
                    stack.append(target)
        return seen

    def units_through_includes(self, sources: list[str], cuda: set[str]) -> tuple[list[str], dict[str, list[str]]]:
        """(units, included) for a tree whose .cu / C / C++ files are `sources` (tree paths); `cuda` are
        the tree files that use CUDA by their own text (tree.units, and the headers that do).

        A source that another source `#include`s is compiled within its includers, as its project's
        build does, not as a unit of its own: included = {source: the sources that include it,
        transitively} (`#include "kernel.cu"`; StarPU 1.4.10's starpufft.c and starpufftf.c include
        starpufftx.c, which includes starpufftx1d.c, and its sgemm_layout.c includes xgemm_layout.c, which
        `#error`s when compiled alone). The units are the sources nobody includes that use CUDA or
        include a file that does (starpufft.c, through starpufftx.c; a .cpp through its CUDA-using
        header). Two sources that include each other both stay. Only #include lines outside any #if block
        count: XGBoost 3.4.1's hinge.cc includes hinge.cu under `#ifndef XGBOOST_USE_CUDA`, for its CPU build; its CUDA build compiles
        hinge.cu as a unit."""
        reach = {rel: self.reach_unconditional(rel) for rel in sources}
        included: dict[str, list[str]] = {}
        for rel in sources:
            users = sorted(other for other in sources if other != rel and rel in reach[other] and other not in reach[rel])
            if users:
                included[rel] = users
        units = [rel for rel in sources if rel not in included and (rel in cuda or reach[rel] & cuda)]
        return units, included

    def reach_unconditional(self, rel: str) -> set[str]:
        """reach(rel) through the #include lines outside any #if block (an include guard aside) only."""
        seen, stack = {rel}, [rel]
        edges = self.unit_edges(rel)
        while stack:
            here = stack.pop()
            for target, _folder in edges.get(here, []):
                if target not in seen and (here, target) not in self.conditional:
                    seen.add(target)
                    stack.append(target)
        return seen

    def fingerprint(self, unit: str) -> str:
        """Digest of what compiling `unit` sees: its content and, in include order, the fingerprints of
        the files it includes (a file met again on the way, e.g. through a cycle, counts by content).
        Units with equal fingerprints and flags compile the same way: DeepSpeed ships csrc/ twice."""
        memo: dict[str, str] = {}
        edges = self.unit_edges(unit)

        def visit(rel: str, path: tuple[str, ...]) -> str:
            if rel in memo:
                return memo[rel]
            parts = [self.content[rel]]
            for target, _folder in edges.get(rel, []):
                parts.append(self.content[target] if target in path else visit(target, path + (target,)))
            memo[rel] = hashlib.sha256("".join(parts).encode()).hexdigest()
            return memo[rel]

        return visit(unit, (unit,))


def system_include_dirs(hipcc: Path) -> tuple[str, ...]:
    """The folders hipcc searches for <...> includes by itself (its `-E -v` search list), or () when
    it cannot be run."""
    try:
        proc = subprocess.run([str(hipcc), "-x", "hip", "-E", "-v", "-", "-o", os.devnull], input="", capture_output=True,
                              text=True, timeout=120, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return ()
    dirs, inside = [], False
    for line in proc.stderr.splitlines():
        if line.startswith("#include <...> search starts here"):
            inside = True
        elif line.startswith("End of search list"):
            inside = False
        elif inside and line.startswith(" "):
            dirs.append(os.path.normpath(line.strip()))
    return tuple(dict.fromkeys(dirs))

