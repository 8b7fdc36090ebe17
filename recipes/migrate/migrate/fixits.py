"""Narrowing in braced initializers: clang's own fix-it, applied to the migrated tree after a failed compile.

`int64_t dims[] = {n, h, w, c};` with a non-constant `size_t c` is a narrowing conversion in list
initialization. nvcc (EDG in GNU mode) and GCC, which build the CUDA project, accept it with a warning
("invalid narrowing conversion", GCC's -Wnarrowing: "a narrowing conversion from a non-constant
produces a warning") and convert the value implicitly; clang, hence hipcc, rejects it
(`error: non-constant-expression cannot be narrowed ... [-Wc++11-narrowing]`) and proposes the fix-it
`static_cast<int64_t>(c)`, which performs the same conversion. Which initializer narrows depends on
the types the compiler knows, so the rewrite is taken from clang's diagnostic
(-fdiagnostics-parseable-fixits) and not from the text. Only that error class is rewritten; a narrowing
of a constant that does not fit (an error for GCC too) is left as it is.
"""

from __future__ import annotations

import os
import re
import tempfile
from dataclasses import dataclass

FLAG = "-fdiagnostics-parseable-fixits"
ERROR = re.compile(r"^[^\s:][^:\n]*:\d+:\d+: (?:fatal )?error: [^\n]*$", re.M)
NARROWING = re.compile(r"error: non-constant-expression cannot be narrowed from type '[^']+'(?: \(aka '[^']+'\))? "
                       r"to '(?P<to>[^']+)'(?: \(aka '(?P<aka>[^']+)'\))? in initializer list")
FIXIT = re.compile(r'^fix-it:"(?P<file>[^"\n]+)":\{(?P<line>\d+):(?P<col>\d+)-(?P<end_line>\d+):(?P<end_col>\d+)\}:'
                   r'"(?P<text>(?:[^"\\\n]|\\.)*)"$', re.M)
INSTANTIATION = re.compile(r"note: in instantiation of ")
# Target types written into a cast: arithmetic types by their own names, which mean the same in every
# scope (a member typedef such as std::vector's value_type does not).
PLAIN_TYPE = re.compile(r"(?:std::)?(?:u?int(?:8|16|32|64)_t|size_t|ptrdiff_t|float|double|bool|unsigned|signed"
                        r"|(?:(?:unsigned|signed) )?(?:char|short|int|long|long long)(?: int)?)")


@dataclass(frozen=True)
class Insertion:
    """Text inserted at file:line:col (1-based line, 1-based byte column)."""

    file: str
    line: int
    col: int
    text: str


def _cast_type(error: re.Match[str], in_template: bool) -> str | None:
    """The type to cast to: the initializer's element type as written when it is a plain arithmetic
    type name; else, outside a template instantiation (where the type cannot depend on a template
    argument), its canonical type; None when neither is safe to write at the user's line."""
    written, canonical = error.group("to").removeprefix("const "), (error.group("aka") or "").removeprefix("const ")
    if PLAIN_TYPE.fullmatch(written):
        return written
    if not in_template and canonical and PLAIN_TYPE.fullmatch(canonical):
        return canonical
    return None


def narrowing_casts(output: str, root: str) -> list[Insertion]:
    """Casts for clang's non-constant narrowing errors in compiler `output` (run with FLAG): at the
    places of clang's own fix-it (`static_cast<T>(` before the expression, `)` after it), with T from
    _cast_type; only in files under `root` (the migrated tree: system and PyTorch headers are never
    edited); duplicates (one per offload arch or template instance) once, in file order."""
    errors = list(ERROR.finditer(output))
    found: set[Insertion] = set()
    root = os.path.realpath(root) + os.sep
    for i, m in enumerate(errors):
        error = NARROWING.search(m.group(0))
        if not error:
            continue
        end = errors[i + 1].start() if i + 1 < len(errors) else len(output)
        cast = _cast_type(error, bool(INSTANTIATION.search(output, m.end(), end)))
        places = [f for f in FIXIT.finditer(output, m.end(), end)
                  if (f.group("line"), f.group("col")) == (f.group("end_line"), f.group("end_col"))]
        if cast is None or len(places) != 2 or not places[0].group("text").startswith("static_cast<") \
                or places[1].group("text") != ")":
            continue
        path = os.path.realpath(places[0].group("file"))
        if not path.startswith(root) or places[1].group("file") != places[0].group("file"):
            continue
        found.add(Insertion(path, int(places[0].group("line")), int(places[0].group("col")), f"static_cast<{cast}>("))
        found.add(Insertion(path, int(places[1].group("line")), int(places[1].group("col")), ")"))
    return sorted(found, key=lambda x: (x.file, x.line, x.col))


def apply(insertions: list[Insertion]) -> list[tuple[str, int]]:
    """Insert each text at its place (columns count bytes, as clang's do) and replace each file
    atomically; returns the (file, line) pairs changed. An insertion past the end of its line is
    skipped (the file changed since the compile)."""
    changed: list[tuple[str, int]] = []
    by_file: dict[str, list[Insertion]] = {}
    for x in insertions:
        by_file.setdefault(x.file, []).append(x)
    for path, items in by_file.items():
        with open(path, "rb") as handle:
            lines = handle.read().split(b"\n")
        for x in sorted(items, key=lambda i: (i.line, i.col), reverse=True):
            if x.line > len(lines) or x.col - 1 > len(lines[x.line - 1]):
                continue
            row = lines[x.line - 1]
            lines[x.line - 1] = row[:x.col - 1] + x.text.encode() + row[x.col - 1:]
            changed.append((path, x.line))
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".fixit-")
        with os.fdopen(fd, "wb") as handle:
            handle.write(b"\n".join(lines))
        os.chmod(tmp, os.stat(path).st_mode)
        os.replace(tmp, path)
    return sorted(set(changed))
