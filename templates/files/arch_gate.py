#!/usr/bin/env python3
"""Read the GPU arch gate of a component's own setup file and check the cell's arch against it (stdlib only).

  arch_gate.py SETUP_PY ARCH     exit 0 when SETUP_PY accepts ARCH, 1 (one line naming file, arch and the
                                 accepted archs) when it refuses it, 2 when no gate can be read from it

Copied to /etc/rocmig/arch_gate.py of the builder stages, where it reads the file that will gate the build
(sgl-kernel's setup_rocm.py, flash-attention's setup.py) before the build spends an hour on it: the
accepted archs come from that source, not from an assumption about it.

A gate is a membership test against gfx names: `if target not in ["gfx942", "gfx950"]: sys.exit(1)`
(sgl-kernel), `assert all(arch in allowed_archs for arch in archs)` (flash-attention). Names bound to
lists, tuples or sets of strings, and sums of them, are resolved first (SUPPORTED = CDNA + RDNA3).
"""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

GFX = re.compile(r"^gfx[0-9a-f]+$")


def _strings(node: ast.AST, names: dict[str, list[str]]) -> list[str] | None:
    """The string items of a literal list/tuple/set, a bound name, or a `+` of them; None otherwise."""
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        items = [e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
        return items if len(items) == len(node.elts) else None
    if isinstance(node, ast.Name):
        return names.get(node.id)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _strings(node.left, names), _strings(node.right, names)
        return None if left is None or right is None else left + right
    return None


def read_gate(source: str) -> list[str]:
    """The gfx archs a setup file's gate accepts, in source order without repeats; [] when it has no gate.

    Refusing tests (`not in`) decide when present; otherwise the tests inside `assert` statements.
    Raises SyntaxError when `source` is not Python.
    """
    tree = ast.parse(source)
    names: dict[str, list[str]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            items = _strings(node.value, names)
            if items is not None:
                names[node.targets[0].id] = items
    refusing: list[str] = []
    asserted: list[str] = []
    for node in ast.walk(tree):
        tests = [node.test] if isinstance(node, ast.Assert) else []
        for test in tests:
            for sub in ast.walk(test):
                if isinstance(sub, ast.Compare):
                    asserted += _gate_items(sub, ast.In, names)
        if isinstance(node, ast.Compare):
            refusing += _gate_items(node, ast.NotIn, names)
    chosen = refusing or asserted
    return list(dict.fromkeys(a for a in chosen if GFX.match(a)))


def _gate_items(node: ast.Compare, op: type, names: dict[str, list[str]]) -> list[str]:
    out: list[str] = []
    for kind, comparator in zip(node.ops, node.comparators):
        if isinstance(kind, op):
            items = _strings(comparator, names) or []
            if any(GFX.match(i) for i in items):
                out += items
    return out


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: arch_gate.py SETUP_PY ARCH", file=sys.stderr)
        return 2
    path, arch = Path(argv[0]), argv[1]
    gate = read_gate(path.read_text(encoding="utf-8"))
    if not gate:
        print(f"arch_gate: {path}: no gfx arch gate found (expected a `not in [...]` or asserted `in` test)",
              file=sys.stderr)
        return 2
    if arch not in gate:
        print(f"arch_gate: {path} refuses {arch}; it accepts {', '.join(gate)}", file=sys.stderr)
        return 1
    print(f"arch_gate: {path} accepts {arch} ({', '.join(gate)})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
