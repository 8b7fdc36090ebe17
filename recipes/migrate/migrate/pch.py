"""Precompiled headers for the leading includes that several compiler passes of a run share.

A HIP unit's compile parses clang's HIP wrapper headers in every pass (host and each offload arch),
and most hipified units start with `#include "hip/hip_runtime.h"`; a PyTorch extension unit starts
with `<torch/extension.h>` or ATen headers. Parsing those is most of the cost of a unit: on
HIP-Clang 22 an empty -x hip file takes about 2 s per pass, and PyTorch's extension headers 36 s
for the host pass (docs/benchmarks.md). A precompiled header (PCH) of them is parsed once per
compiler configuration and loaded by every pass that shares it.

What goes into a PCH is exactly the unit's own leading `#include` lines, up to its first line that
is anything else (comments and blank lines aside), written so that each resolves to the header the
unit's include resolves to (shared_prefix). The pass then compiles a copy of the unit with those
lines left empty and a `#line` directive naming the unit (blanked_copy): what the compiler sees is
the unit's text in the unit's order, and its diagnostics name the unit's path and lines. A
project's common header (most real units start with one, after the `hip/hip_runtime.h` hipify puts
first) thus goes in with what it includes. The PCH is built with the pass's own flags (defines,
include folders, standard, optimization, offload arch), since clang rejects a PCH made for another
target or macro set, and a key is given a PCH only when two or more passes share it. A pass that
fails with a PCH is compiled again from the unit itself without one (compile.py), so a PCH can
make a unit faster and never decides that it fails.

A HIP pass (`-x hip`) whose unit shares no leading include with another unit still parses what clang
puts before every HIP unit's first line (`-include __clang_hip_runtime_wrapper.h`, with the C and C++
math headers it pulls in): about 1.2 s of the 1.9 s an empty unit takes per pass here. Such a pass gets
the PCH of an empty prefix (its key: its flags alone), which holds exactly those implicit headers, and
compiles the unit itself, unchanged, with it (measured on a plain-CUDA unit starting with `<cstdio>`:
device pass 2.1 s to 1.2 s, host pass 2.3 s to 1.1 s; docs/benchmarks.md). A host-only unit compiled as
C++ has no implicit headers and no such PCH.
"""

from __future__ import annotations

import hashlib
import re
import threading
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from . import proc

BLOCK_COMMENT = re.compile(r"/\*.*?\*/", re.DOTALL)


PREFIX_LINE = re.compile(r'\s*#\s*include\s*([<"])([^>"]+)[>"]\s*(?://.*)?$')


def include_lines(text: str) -> list[tuple[int, str, str]]:
    """The leading #include lines of `text` as (0-based line number, delimiter, header name):
    comments and blank lines are skipped; the first line that is anything else, or an include
    line that also holds a block comment, ends the list."""
    found = []
    lines = text.split("\n")
    bare = BLOCK_COMMENT.sub(lambda m: "\n" * m.group(0).count("\n"), text).split("\n")
    for number, line in enumerate(bare):
        code = line.split("//", 1)[0].strip()
        if not code:
            continue
        m = PREFIX_LINE.match(lines[number]) if number < len(lines) else None
        if not m:
            break
        found.append((number, m.group(1), m.group(2)))
    return found


@dataclass(frozen=True)
class Prefix:
    """What a PCH holds for a unit: lines (the #include lines of its header) and blank (0-based
    line numbers of the unit's text that hold those includes)."""

    lines: tuple[str, ...] = ()
    blank: tuple[int, ...] = ()


def shared_prefix(source: Path, text: str) -> Prefix:
    """The leading includes of `source` (whose content is `text`) for a PCH, written to resolve
    from the PCH's header as they do from the unit; empty when the unit does not start with one.

    A quote include found next to the unit is named by its path (the PCH's header lies in a folder
    of its own); every other include keeps its form, since its search (-iquote, -I, -isystem, the
    system folders) is the same from there (and `#include_next` in the header keeps its meaning).
    The unit is then compiled as its blanked_copy."""
    lines, blank = [], []
    for number, delimiter, name in include_lines(text):
        beside = source.parent / name
        if delimiter == '"' and beside.is_file():
            lines.append(f'#include "{beside}"')
        else:
            lines.append(f'#include "{name}"' if delimiter == '"' else f"#include <{name}>")
        blank.append(number)
    return Prefix(tuple(lines), tuple(blank))


def blanked_copy(source: Path, text: str, codec: str, prefix: Prefix) -> Path:
    """A copy of the unit next to it (so that its quote includes resolve alike) whose prefix lines
    are empty, since the PCH holds them, and whose `#line 1` directive gives diagnostics, __FILE__
    and __LINE__ the unit's own path and lines; written in `codec`, the encoding its text was read
    in (tree.read_work_text), so that its other lines keep their bytes. The caller removes it after
    the compile."""
    lines = text.split("\n")
    for number in prefix.blank:
        lines[number] = ""
    name = str(source).replace("\\", "\\\\").replace('"', '\\"')
    copy = source.with_name(f".{source.name}.rocmig-pch")
    copy.write_text(f'#line 1 "{name}"\n' + "\n".join(lines), encoding=codec, errors="replace")
    return copy


def worth_a_pch(args: list[str], prefix: Prefix) -> bool:
    """Whether a pass with hipcc arguments `args` and `prefix` parses headers a PCH can hold: the prefix's
    includes, or, for a HIP pass (`-x hip`) with an empty prefix, clang's implicit HIP wrapper headers."""
    return bool(prefix.lines) or any(a == "-x" and b == "hip" for a, b in zip(args, args[1:]))


def truncated(prefix: Prefix, n: int) -> Prefix:
    """The first `n` include lines of `prefix`."""
    return Prefix(prefix.lines[:n], prefix.blank[:n])


def choose(prefixes: dict[str, Prefix], configs: dict[str, str]) -> dict[str, Prefix]:
    """The prefix each unit's passes use: its longest leading run of include lines that another unit
    with the same pass configuration (`configs`: {unit: its passes' arguments, joined}) also starts
    with, so that units whose leading includes agree only in part (`hip/hip_runtime.h`, then the
    project's common header, then each its own) still share a PCH of the part they agree on. A unit
    left as the only user of its choice moves to a shorter shared one, or to none; a PCH with one
    user costs a build and saves nothing. prefixes: {unit: shared_prefix}."""
    count = Counter((configs[rel], p.lines[:n]) for rel, p in prefixes.items() for n in range(1, len(p.lines) + 1))
    length = {rel: max((n for n in range(1, len(p.lines) + 1) if count[(configs[rel], p.lines[:n])] > 1), default=0)
              for rel, p in prefixes.items()}
    users = Counter((configs[rel], prefixes[rel].lines[:n]) for rel, n in length.items() if n)
    moved = True
    while moved:
        moved = False
        for rel, n in length.items():
            key = (configs[rel], prefixes[rel].lines[:n])
            if not n or users[key] > 1:
                continue
            shorter = [m for m in range(1, n) if users[(configs[rel], prefixes[rel].lines[:m])] > 0
                       or count[(configs[rel], prefixes[rel].lines[:m])] > 1]
            users[key] -= 1
            length[rel] = max(shorter, default=0)
            if length[rel]:
                users[(configs[rel], prefixes[rel].lines[:length[rel]])] += 1
            moved = True
    return {rel: truncated(prefixes[rel], n) for rel, n in length.items()}


class Cache:
    """PCHs built on first use, one per key (pass flags + prefix), for the keys in `shared` only.
    Thread-safe: passes running in parallel that need the same PCH wait for one build."""

    def __init__(self, folder: Path, shared: set[str]):
        self.folder = folder
        self.shared = shared
        self._lock = threading.Lock()
        self._locks: dict[str, threading.Lock] = {}
        self._built: dict[str, Path | None] = {}

    @staticmethod
    def key(args: list[str], prefix: Prefix) -> str:
        """The key of a pass: its compiler arguments (without source and output) and its prefix."""
        return hashlib.sha256("\0".join([*args, "\n", *prefix.lines]).encode()).hexdigest()[:20]

    def get(self, args: list[str], prefix: Prefix, timeout: int) -> Path | None:
        """The PCH of a pass with hipcc arguments `args` (without -c, source and output) and `prefix`,
        built on first use; None when no other pass shares its key or the build failed (the pass then
        runs without)."""
        key = self.key(args, prefix)
        if key not in self.shared:
            return None
        with self._lock:
            lock = self._locks.setdefault(key, threading.Lock())
        with lock:
            if key not in self._built:
                self._built[key] = self._build(key, args, prefix, timeout)
            return self._built[key]

    def _build(self, key: str, args: list[str], prefix: Prefix, timeout: int) -> Path | None:
        folder = self.folder / key
        folder.mkdir(parents=True, exist_ok=True)
        header, pch = folder / "rocmig-pch-prefix.h", folder / "rocmig-pch-prefix.pch"
        header.write_text("\n".join(prefix.lines) + "\n", encoding="utf-8")
        _, code = proc.run_tree([*args, "-S", str(header), "-Xclang", "-emit-pch", "-o", str(pch)], timeout)
        return pch if code == 0 and pch.is_file() else None
