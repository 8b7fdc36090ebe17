"""The third-party modules a Python entry point imports at start, read from its package's source.

SGLang imports most of its dependencies at module level, behind platform tests (`if _is_hip:`, `if
is_cuda():`), environment switches (`if get_bool_env_var(...)`) and `try: ... except ImportError`. The
closure is walked from entry modules (matrix.yaml `entry_modules`) through the first-party modules they
import, statement by statement:
  - module-level imports, and those inside `with`, class bodies and `if` blocks, are followed;
    function bodies are not (they run later, if ever);
  - an `if` whose test is a platform test is decided for the target platform (`hip`: `_is_hip`,
    `is_hip()`, `is_cuda_alike()` hold, `_is_cuda`, `_is_npu`, `is_xpu()`, ... do not); any other test
    (an environment switch) makes both branches optional; `if TYPE_CHECKING:` is skipped;
  - imports inside a `try` whose handler catches ImportError (or Exception) are optional.
Required third-party modules are what the image must provide; optional ones are reported apart.

Standard library only: the serve image test runs this file inside the image (`python import_closure.py
SITE_PACKAGES PLATFORM DISTRIBUTION ENTRY...`, JSON on stdout) against the installed source and imports
every first-party module of the closure there; buildctl.resolve walks the pinned sdist from PyPI for
the cells it cannot build.
"""

from __future__ import annotations

import ast
import importlib.metadata
import importlib.util
import json
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

PLATFORMS = ("cuda", "hip", "npu", "xpu", "cpu", "musa", "mps", "hpu")
# Predicates that hold on a platform besides its own name (SGLang's utils/common.py: is_cuda_alike() is
# is_cuda() or is_hip()).
ALSO_TRUE = {"hip": ("cuda_alike",), "cuda": ("cuda_alike",)}
PREDICATE = re.compile(r"^_?is_(" + "|".join((*PLATFORMS, "cuda_alike")) + r")$")
GUARDS = {"ImportError", "ModuleNotFoundError", "Exception", "BaseException"}


@dataclass
class Closure:
    """What an entry point's import closure holds.

    modules: first-party modules reached (dotted names); required / optional: third-party top-level
    module -> the first first-party module found importing it.
    """

    modules: set[str] = field(default_factory=set)
    required: dict[str, str] = field(default_factory=dict)
    optional: dict[str, str] = field(default_factory=dict)


def platform_truth(test: ast.expr, platform: str) -> bool | None:
    """The value of an `if` test on `platform` when it is a platform test (and/or/not of SGLang's is_*
    predicates, called or not), None when it depends on anything else. `__name__ == "__main__"` is False
    (the closure's modules are imported, not run)."""
    node = test.func if isinstance(test, ast.Call) and not test.args else test
    if isinstance(node, ast.Name):
        match = PREDICATE.match(node.id)
        if match is None:
            return None
        return match.group(1) == platform or match.group(1) in ALSO_TRUE.get(platform, ())
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        value = platform_truth(node.operand, platform)
        return None if value is None else not value
    if isinstance(node, ast.BoolOp):
        values = [platform_truth(v, platform) for v in node.values]
        decided, undecided = (False, True) if isinstance(node.op, ast.And) else (True, False)
        if decided in values:
            return decided
        return undecided if all(v is undecided for v in values) else None
    if ast.unparse(node) in ("__name__ == '__main__'", "'__main__' == __name__"):
        return False
    return None


def _catches_import_errors(handler: ast.ExceptHandler) -> bool:
    if handler.type is None:
        return True
    return any(isinstance(n, ast.Name) and n.id in GUARDS for n in ast.walk(handler.type))


def module_imports(tree: ast.Module, module: str, is_package: bool, platform: str) -> list[tuple[str, bool]]:
    """(absolute dotted name, required) of each import a module runs when imported on `platform`.

    `from a import b` yields both `a` and `a.b` (b may be a submodule). Relative imports are made
    absolute against `module` (a package's own name for its __init__).
    """
    out: list[tuple[str, bool]] = []

    def visit(statements: list[ast.stmt], required: bool) -> None:
        for stmt in statements:
            if isinstance(stmt, ast.Import):
                out.extend((alias.name, required) for alias in stmt.names)
            elif isinstance(stmt, ast.ImportFrom):
                base = stmt.module or ""
                if stmt.level:
                    parts = module.split(".")
                    keep = len(parts) - stmt.level + (1 if is_package else 0)
                    base = ".".join([*parts[:keep], *([stmt.module] if stmt.module else [])])
                out.append((base, required))
                out.extend((f"{base}.{alias.name}", required) for alias in stmt.names if alias.name != "*")
            elif isinstance(stmt, ast.Try):
                guarded = any(_catches_import_errors(h) for h in stmt.handlers)
                visit(stmt.body, required and not guarded)
                for handler in stmt.handlers:
                    visit(handler.body, False)
                visit(stmt.orelse, required and not guarded)
                visit(stmt.finalbody, required)
            elif isinstance(stmt, ast.If):
                if "TYPE_CHECKING" in ast.unparse(stmt.test):
                    visit(stmt.orelse, required)
                    continue
                value = platform_truth(stmt.test, platform)
                if value is not False:
                    visit(stmt.body, required and value is True)
                if value is not True:
                    visit(stmt.orelse, required and value is False)
            elif isinstance(stmt, (ast.With, ast.ClassDef)):
                visit(stmt.body, required)

    visit(tree.body, True)
    return [(name, required) for name, required in out if name]


def _source(root: Path, module: str) -> Path | None:
    path = root.joinpath(*module.split("."))
    if (path / "__init__.py").is_file():
        return path / "__init__.py"
    return path.with_suffix(".py") if path.with_suffix(".py").is_file() else None


def closure(root: Path, entries: list[str], platform: str) -> Closure:
    """Walk the import closure of `entries` (modules of the package folder under `root`, e.g. an
    unpacked sdist's python/ folder or site-packages) on `platform` (one of PLATFORMS).

    First-party means the entries' own top-level package; the standard library is left out.
    Raises FileNotFoundError when an entry module has no source under `root`, SyntaxError when a
    source does not parse.
    """
    first_party = {e.split(".")[0] for e in entries}
    for entry in entries:
        if _source(root, entry) is None:
            raise FileNotFoundError(f"{root}: no source for entry module {entry}")
    found = Closure()
    todo = list(entries)
    while todo:
        module = todo.pop()
        if module in found.modules:
            continue
        source = _source(root, module)
        if source is None:
            continue
        found.modules.add(module)
        parts = module.split(".")
        todo += [".".join(parts[:i]) for i in range(1, len(parts))]  # parents run first
        tree = ast.parse(source.read_text(encoding="utf-8"), filename=str(source))
        for name, required in module_imports(tree, module, source.name == "__init__.py", platform):
            top = name.split(".")[0]
            if top in first_party:
                if required:
                    todo.append(name)
            elif top not in sys.stdlib_module_names:
                (found.required if required else found.optional).setdefault(top, module)
    for top in found.required:
        found.optional.pop(top, None)
    return found


def _declared(distribution: str, module: str) -> list[str]:
    """Requirements of an installed distribution whose name is the module's (case, - and _ aside)."""
    wanted = re.sub(r"[-_.]+", "-", module).lower()
    return [r for r in importlib.metadata.requires(distribution) or []
            if re.sub(r"[-_.]+", "-", re.split(r"[ ;<>=!~\[(]", r, maxsplit=1)[0]).lower() == wanted]


def _import_each(modules: list[str]) -> tuple[dict[str, str], dict[str, str]]:
    """Import each module in this interpreter: ({first-party module: missing top-level module} for
    ModuleNotFoundError, {first-party module: 'Type: message'} for any other exception)."""
    import warnings

    missing: dict[str, str] = {}
    failed: dict[str, str] = {}
    warnings.simplefilter("ignore")
    for module in modules:
        try:
            importlib.import_module(module)
        except ModuleNotFoundError as exc:
            missing[module] = (exc.name or str(exc)).split(".")[0]
        except Exception as exc:  # noqa: BLE001 - every failure is reported, by module
            failed[module] = f"{type(exc).__name__}: {exc}"[:300]
    return missing, failed


def in_image(root: Path, entries: list[str], platform: str, distribution: str) -> dict[str, object]:
    """The closure as this interpreter sees it, for the image test: each required third-party module
    with its importer, whether it is found, the distributions providing it (importlib.metadata; [] for
    ones not recorded there, such as Debian's python3-* packages) and the requirements of
    `distribution` named like it; then every first-party module of the closure imported for real
    (`missing`: ModuleNotFoundError by module, `failed`: any other exception)."""
    found = closure(root, entries, platform)
    owners = importlib.metadata.packages_distributions()
    modules = {top: {"importer": importer, "found": importlib.util.find_spec(top) is not None,
                     "distributions": sorted(set(owners.get(top, []))), "declared": _declared(distribution, top)}
               for top, importer in sorted(found.required.items())}
    missing, failed = _import_each(sorted(found.modules))
    return {"first_party": len(found.modules), "modules": modules, "optional": sorted(found.optional),
            "missing": missing, "failed": failed}


if __name__ == "__main__":
    if len(sys.argv) < 5:
        sys.exit("usage: import_closure.py ROOT PLATFORM DISTRIBUTION ENTRY_MODULE...")
    print(json.dumps(in_image(Path(sys.argv[1]), sys.argv[4:], sys.argv[2], sys.argv[3])))
