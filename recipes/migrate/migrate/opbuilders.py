"""Each unit's include folders from the op builders of a Python build (DeepSpeed's op_builder pattern).

DeepSpeed, and the projects that copied its builder (lightseq 3.0.1's training/ops/pytorch/builder,
ColossalAI 0.5.0's extensions), build each PyTorch extension from a class whose `sources()` lists the
extension's units and whose `include_paths()` lists the folders they are compiled with, in order; the
JIT build (torch.utils.cpp_extension.load) passes them as -I in that order. A tree may hold two
generations of one library with same-named headers (lightseq's ops/includes/softmax.h and
ops_new/includes/softmax.h): only the builder says which one a unit takes. The classes are read with
Python's ast, not run: the string literals of the two methods, matched against the tree's units and
folders by path suffix (a builder names its paths from its package root, `csrc/ops/includes`).
"""

from __future__ import annotations

import ast
import posixpath

SOURCE_METHODS = frozenset({"sources", "sources_files"})
INCLUDE_METHODS = frozenset({"include_paths", "include_dirs"})


def _strings(method: ast.FunctionDef) -> list[str]:
    """The non-empty string literals of `method` that are listed paths: elements of a list, tuple or set
    display, or arguments of `.append()`; parts of a path being built (`parents[5] / "3rdparty"`) are not."""
    found = []
    for node in ast.walk(method):
        if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
            found += node.elts
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "append":
            found += node.args
    found = [n for n in found if isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value.strip()]
    return [_normal(n.value) for n in sorted(found, key=lambda n: (n.lineno, n.col_offset))]


def _normal(path: str) -> str:
    path = posixpath.normpath(path.strip())
    return "" if path in (".", "") or path.startswith("../") or posixpath.isabs(path) else path


def _package_root(builder: str, names: list[str], paths: set[str]) -> str:
    """The folder above `builder` (or the tree root, "") under which the most of `names` are tree paths:
    the package root the builder names its paths from; of equals, the nearest."""
    folder, best, score = posixpath.dirname(builder), "", 0
    while True:
        found = sum(posixpath.join(folder, n) in paths for n in names)
        if found > score:
            best, score = folder, found
        if not folder:
            return best
        folder = posixpath.dirname(folder)


def _resolve(name: str, root: str, paths: set[str]) -> str | None:
    """The tree path of `name`: under `root`, else the one tree path ending with "/name"; None otherwise."""
    if not name:
        return None
    if posixpath.join(root, name) in paths:
        return posixpath.join(root, name)
    found = [p for p in paths if p.endswith("/" + name)]
    return found[0] if len(found) == 1 else None


def unit_include_dirs(builders: list[tuple[str, str]], units: set[str], folders: set[str]) -> dict[str, tuple[str, ...]]:
    """{unit: tree-relative include folders, in the builder's order} from the op-builder classes of
    `builders` ((tree-relative path of a Python file, its text)): each class that defines both a
    sources method (SOURCE_METHODS) and an include method (INCLUDE_METHODS) gives the units its sources
    name the folders its include method names. A unit several builders compile gets their folders in the
    order the builders come; a file that does not parse is skipped. Paths are taken from the builder's
    package root (_package_root), else by a unique path suffix. units: the tree's units; folders: the
    tree's folders (tree-relative)."""
    out: dict[str, list[str]] = {}
    for rel, text in builders:
        try:
            tree = ast.parse(text)
        except (SyntaxError, ValueError):
            continue
        for cls in (n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)):
            methods = {f.name: f for f in cls.body if isinstance(f, ast.FunctionDef)}
            source = next((methods[m] for m in SOURCE_METHODS if m in methods), None)
            include = next((methods[m] for m in INCLUDE_METHODS if m in methods), None)
            if source is None or include is None:
                continue
            sources, includes = _strings(source), _strings(include)
            root = _package_root(rel, sources + includes, units | folders)
            dirs = [d for name in includes if (d := _resolve(name, root, folders))]
            if not dirs:
                continue
            for name in sources:
                unit = _resolve(name, root, units)
                if unit:
                    out.setdefault(unit, []).extend(dirs)
    return {unit: tuple(dict.fromkeys(dirs)) for unit, dirs in out.items()}
