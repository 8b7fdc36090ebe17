"""`buildctl review [BASE]`: leftover CUDA dependencies and hard-coded platform paths in a change.

The change is `git diff BASE` (committed and uncommitted work against BASE). Two rule sets run on the files
it touches and report what sits on a changed line:
- the migrate recipe's scanner (recipes/migrate: rules.yaml applied by migrate/scan.py, imported from the
  project, with the matrix's arch table for the LDS check) on C, C++, CUDA and HIP files;
- buildctl/review_rules.yaml: CUDA API calls and headers, nvcc-only flags, CUDA libraries, CUDA wheels in
  requirements, /usr/local/cuda and versioned /opt/rocm-X.Y paths, per file kind.
"""

from __future__ import annotations

import ast
import fnmatch
import importlib.util
import io
import re
import subprocess
import sys
import tokenize
from dataclasses import asdict, dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import yaml

from buildctl.errors import ConfigError, InputError
from buildctl.load import Project

RULES_FILE = Path(__file__).with_name("review_rules.yaml")
SOURCE_SUFFIXES = (".cu", ".cuh", ".cpp", ".cc", ".cxx", ".c", ".h", ".hpp", ".hip")
HUNK = re.compile(r"^@@ -\d+(?:,\d+)? \+(\d+)(?:,(\d+))? @@")
MIGRATE_PACKAGE = "rocmig_migrate_recipe"


@dataclass(frozen=True)
class ReviewRule:
    """One rule of review_rules.yaml (see its header for the keys)."""

    id: str
    severity: str
    message: str
    hint: str
    files: tuple[str, ...]
    patterns: tuple[re.Pattern[str], ...]
    unless_file: tuple[re.Pattern[str], ...] = ()

    def applies_to(self, path: str, text: str = "") -> bool:
        """Whether the rule reviews the file `path` (its name matches `files`) holding `text` (no
        `unless_file` pattern matches it)."""
        name = Path(path).name
        return (any(fnmatch.fnmatch(name, pattern) for pattern in self.files)
                and not any(p.search(text) for p in self.unless_file))


@dataclass(frozen=True)
class Finding:
    """One hit: file (relative to the repository), line and col (1-based), the rule, its source
    (`review` or `migrate`), severity (error / warning / info), the line's text, message and hint."""

    file: str
    line: int
    col: int
    rule: str
    source: str
    severity: str
    text: str
    message: str
    hint: str

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def load_review_rules(path: Path = RULES_FILE) -> list[ReviewRule]:
    """Read review_rules.yaml. Raises ConfigError naming the file, rule and key when it is malformed."""
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise ConfigError(f"{path}: cannot read ({exc})") from None
    rules = []
    for i, raw in enumerate((data or {}).get("rules", [])):
        where = f"{path}: rules[{raw.get('id', i) if isinstance(raw, dict) else i}]"
        try:
            if raw["severity"] not in ("error", "warning", "info"):
                raise ConfigError(f"{where}.severity: {raw['severity']!r} (allowed: error, warning, info)")
            rules.append(ReviewRule(raw["id"], raw["severity"], raw["message"], raw["hint"], tuple(raw["files"]),
                                    tuple(re.compile(p) for p in raw["patterns"]),
                                    tuple(re.compile(p, re.MULTILINE) for p in raw.get("unless_file", []))))
        except KeyError as exc:
            raise ConfigError(f"{where}: required key {exc.args[0]!r} is missing") from None
        except re.error as exc:
            raise ConfigError(f"{where}.patterns/unless_file: does not compile ({exc})") from None
    return rules


def load_migrate(project_root: Path) -> ModuleType:
    """Import the project's migrate recipe package (recipes/migrate/migrate) under a private name.

    Returns the package; its submodules (cpp, rules, scan, archs) are imported with it. Raises
    ConfigError when the recipe is missing.
    """
    if MIGRATE_PACKAGE in sys.modules:
        return sys.modules[MIGRATE_PACKAGE]
    init = project_root / "recipes" / "migrate" / "migrate" / "__init__.py"
    if not init.is_file():
        raise ConfigError(f"{init}: the migrate recipe is missing (buildctl review uses its scanner)")
    spec = importlib.util.spec_from_file_location(MIGRATE_PACKAGE, init, submodule_search_locations=[str(init.parent)])
    assert spec is not None and spec.loader is not None
    package = importlib.util.module_from_spec(spec)
    sys.modules[MIGRATE_PACKAGE] = package
    spec.loader.exec_module(package)
    for name in ("cpp", "rules", "scan", "archs"):
        importlib.import_module(f"{MIGRATE_PACKAGE}.{name}")
    return package


def _git(repo: Path, *args: str) -> str:
    proc = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise InputError(f"git {' '.join(args)}: {proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else 'failed'}")
    return proc.stdout


def changed_lines(repo: Path, base: str) -> dict[str, set[int]]:
    """{file: changed line numbers (of the new version)} of `git diff BASE`, deleted files left out, plus
    untracked files (every line). Raises InputError when repo is not a git work tree or BASE is unknown."""
    _git(repo, "rev-parse", "--is-inside-work-tree")
    if subprocess.run(["git", "-C", str(repo), "rev-parse", "--verify", "--quiet", f"{base}^{{commit}}"],
                      capture_output=True, check=False).returncode != 0:
        raise InputError(f"BASE: {base!r} is not a commit of {repo} (give a branch, tag or commit, e.g. origin/main)")
    diff = _git(repo, "diff", "--no-color", "--no-ext-diff", "-U0", "--diff-filter=d", base, "--")
    changed: dict[str, set[int]] = {}
    current = None
    for line in diff.splitlines():
        if line.startswith("+++ "):
            current = line[6:] if line.startswith("+++ b/") else None
            if current is not None:
                changed.setdefault(current, set())
        elif current is not None and (m := HUNK.match(line)):
            start, count = int(m.group(1)), int(m.group(2) or 1)
            changed[current].update(range(start, start + count))
    for path in _git(repo, "ls-files", "--others", "--exclude-standard").splitlines():
        text = _read(repo / path)
        if text is not None:
            changed[path] = set(range(1, text.count("\n") + 2))
    return changed


def _read(path: Path) -> str | None:
    try:
        data = path.read_bytes()
    except OSError:
        return None
    if b"\0" in data[:8192]:
        return None  # binary
    return data.decode("utf-8", errors="replace")


def python_prose_lines(text: str) -> set[int]:
    """Lines of Python source that hold only a comment or lie inside a docstring (a string that is a
    statement of its own): prose, not code. Empty when the text does not tokenize."""
    prose: set[int] = set()
    code: set[int] = set()
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
    except (tokenize.TokenError, SyntaxError):
        return set()
    skip = (tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT, tokenize.COMMENT, tokenize.ENDMARKER)
    statement_start = True
    for i, tok in enumerate(tokens):
        if tok.type == tokenize.COMMENT:
            prose.add(tok.start[0])
        elif tok.type == tokenize.STRING and statement_start:
            after = next((t for t in tokens[i + 1:] if t.type not in (tokenize.COMMENT, tokenize.NL)), None)
            if after is None or after.type in (tokenize.NEWLINE, tokenize.ENDMARKER):
                prose.update(range(tok.start[0], tok.end[0] + 1))
                continue
        if tok.type not in skip:
            code.update(range(tok.start[0], tok.end[0] + 1))
        statement_start = tok.type in (tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT) or (
            statement_start and tok.type in (tokenize.NL, tokenize.COMMENT))
    return prose - code


_AMD_NAME = re.compile(r"rocm|hip", re.IGNORECASE)


def python_nvidia_only_lines(text: str) -> set[int]:
    """Lines of Python source that only run where the platform is not ROCm: the body of an `if` whose test
    negates a ROCm/HIP check (`if not self.is_rocm_pytorch():`, `if torch.version.hip is None:`) and the
    `else` of an `if` that asserts one (`if is_rocm():`). Empty when the text does not parse."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return set()
    lines: set[int] = set()

    def span(nodes: list[ast.stmt]) -> set[int]:
        return {n for node in nodes for n in range(node.lineno, (node.end_lineno or node.lineno) + 1)}

    for node in ast.walk(tree):
        if not isinstance(node, ast.If) or not _AMD_NAME.search(ast.unparse(node.test)):
            continue
        test = node.test
        negated = (isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not)) or (
            isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], (ast.Is, ast.Eq))
            and isinstance(test.comparators[0], ast.Constant) and test.comparators[0].value in (None, False))
        lines |= span(node.body) if negated else span(node.orelse)
    return lines


def _review_hits(rules: list[ReviewRule], path: str, text: str, lines: set[int], migrate: ModuleType,
                 undefined: frozenset[str]) -> list[Finding]:
    applicable = [r for r in rules if r.applies_to(path, text)]
    if not applicable:
        return []
    source = path.endswith(SOURCE_SUFFIXES)
    raw_lines = text.split("\n")
    if source:
        scanned = migrate.cpp.blank(text)
        dead = migrate.cpp.dead_lines(scanned, undefined)
        scan_lines = scanned.split("\n")
    else:
        dead = python_prose_lines(text) | python_nvidia_only_lines(text) if path.endswith(".py") else set()
        scan_lines = raw_lines
    found = []
    for number in sorted(lines):
        if number > len(scan_lines) or number in dead:
            continue
        line = scan_lines[number - 1]
        if not source and line.lstrip().startswith(("#", "//")) and not line.lstrip().startswith("#include"):
            continue
        for rule in applicable:
            m = next((m for p in rule.patterns if (m := p.search(line))), None)
            if m:
                found.append(Finding(path, number, m.start() + 1, rule.id, "review", rule.severity,
                                     raw_lines[number - 1].strip(), rule.message, rule.hint))
    return found


def review(project: Project, repo: Path, base: str, all_lines: bool = False) -> list[Finding]:
    """Findings on the changed lines (every line of a touched file with all_lines) of `git diff BASE` in
    repo, sorted by file and line. Raises InputError (bad BASE, not a git tree), ConfigError (rules)."""
    migrate = load_migrate(project.root)
    rules = load_review_rules()
    changed = changed_lines(repo, base)
    texts = {p: t for p in sorted(changed) if (t := _read(repo / p)) is not None}
    sources = {p: t for p, t in texts.items() if p.endswith(SOURCE_SUFFIXES)}
    archs = [migrate.archs.Arch(name, a.family, a.wavefront, a.lds_bytes) for name, a in project.matrix.archs.items()]
    ctx = migrate.scan.tree_context([migrate.cpp.blank(t) for t in sources.values()], archs)
    compiled = migrate.scan.compile_rules(migrate.rules.load_rules(), ctx)
    findings: list[Finding] = []
    for path, text in texts.items():
        lines = set(range(1, text.count("\n") + 2)) if all_lines else changed[path]
        findings += _review_hits(rules, path, text, lines, migrate, ctx.undefined)
        if path in sources:
            findings += [Finding(path, f.line, f.col, f.rule, "migrate", f.severity, f.text, f.message, f.hint)
                         for f in migrate.scan.scan_file(path, text, compiled, ctx) if f.line in lines]
    return sorted(findings, key=lambda f: (f.file, f.line, f.col, f.rule))


def format_text(findings: list[Finding]) -> str:
    """`file:line:col: severity [rule] message` then an indented hint and the line, one block per finding."""
    return "".join(f"{f.file}:{f.line}:{f.col}: {f.severity} [{f.rule}] {f.message}\n    {f.text}\n    fix: {f.hint}\n"
                   for f in findings)


def format_github(findings: list[Finding]) -> str:
    """GitHub Actions workflow commands (::error / ::warning file=...,line=...) that annotate the PR."""
    def esc(s: str) -> str:
        return s.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")

    level = {"error": "error", "warning": "warning", "info": "notice"}
    return "".join(f"::{level[f.severity]} file={f.file},line={f.line},col={f.col},title={f.rule}::"
                   f"{esc(f.message + ' Fix: ' + f.hint)}\n" for f in findings)
