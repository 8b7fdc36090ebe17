"""Load and check the scanner rules (recipes/migrate/rules.yaml).

A rule is data: id, severity, message, hint, optional doc and scope (SCOPES), and either `patterns`
(regular expressions per line, with tree placeholders), `check` (a computed check in scan.py), or
`diagnostic` (a regular expression over a failed compile's first error message, explain.py), which
may have a DIAGNOSTIC_CHECKS check of its `name` group.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import yaml

from .errors import InputError

RULES_FILE = Path(__file__).resolve().parent.parent / "rules.yaml"
SEVERITIES = ("error", "warning", "info")
CHECKS = ("lds", "block-size", "warp-scope", "build-tested", "arch-stub", "guarded-off", "warp-matrix-asm", "async-copy",
          "cuda-only-unit", "unit-not-built", "include-outside-build-path", "wave64-constant")
# `scope` of a rule: where its hits count. "cxx20": only in files compiled with -std=c++20, the
# PyTorch 2.x extension files (cpp_extension's flag); without a scope, everywhere.
SCOPES = ("cxx20",)
DIAGNOSTIC_CHECKS = ("build-generated", "build-template", "in-tree", "outside-tree", "tree-incomplete",
                     "tree-undeclared", "tree-redefined", "uses-deviceptr",
                     "hip-name", "device-code", "arch-gated", "build-gated", "own-rocm", "torch-header",
                     "other-unit", "unincluded-header", "include-gated", "uses-void-handle", "tree-arity",
                     "error-directive", "std-library")
KEYS = {"id", "severity", "message", "hint", "doc", "patterns", "check", "diagnostic", "fixed_by", "scope"}
# Placeholder values used to check that patterns compile; scan.py fills them per tree.
# CUDA's version macros, which hipcc leaves undefined (CUDA Runtime API reference: CUDART_VERSION;
# CUDA driver API cuda.h: CUDA_VERSION; nvcc's predefined __CUDACC_VER_*__).
CUDA_VERSION_MACROS = ("CUDA_VERSION", "CUDART_VERSION", "__CUDACC_VER_MAJOR__", "__CUDACC_VER_MINOR__")
PLACEHOLDER_DEFAULTS = {"WS32": "32", "WS31": "31", "FULLMASK": "0xffffffff", "BALLOT": "(?!x)x", "U32": "(?!x)x",
                        "CUDAVER": r"\b(?:" + "|".join(CUDA_VERSION_MACROS) + r")\b"}


@dataclass(frozen=True)
class Rule:
    """One scanner rule; `fixed_by` names the fixups that rewrite its hits exactly. Suggested rewrites
    are computed from the migrated line (advice.py), not stored per rule."""

    id: str
    severity: str
    message: str
    hint: str
    doc: str
    patterns: tuple[str, ...]
    check: str
    fixed_by: tuple[str, ...]
    diagnostic: str = ""
    scope: str = ""


def fill(pattern: str, values: dict[str, str]) -> str:
    """Replace {WS32}, {WS31}, {FULLMASK}, {BALLOT}, {U32}, {CUDAVER} in `pattern` by the regex alternations in
    `values`."""
    for key, value in values.items():
        pattern = pattern.replace("{" + key + "}", value)
    return pattern


def _fail(path: Path, where: str, what: str) -> InputError:
    return InputError(f"{path}: {where}: {what}")


def load_rules(path: Path = RULES_FILE) -> list[Rule]:
    """Read and check the rules file; returns the rules in file order.

    Raises InputError naming the file, the rule id and the key when the YAML is malformed, a key is
    unknown, a required key is missing, the severity or check is not one of the allowed values,
    a pattern does not compile, or an id repeats.
    """
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise InputError(f"{path}: cannot read rules ({exc})") from None
    if not isinstance(data, dict) or not isinstance(data.get("rules"), list):
        raise _fail(path, "rules", "expected a top-level key `rules` holding a list")
    rules: list[Rule] = []
    seen: set[str] = set()
    for index, raw in enumerate(data["rules"]):
        where = f"rules[{index}]"
        if not isinstance(raw, dict):
            raise _fail(path, where, "expected a mapping")
        rid = raw.get("id")
        if not isinstance(rid, str) or not re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", rid):
            raise _fail(path, f"{where}.id", f"expected a kebab-case id, got {rid!r}")
        where = f"rules[{rid}]"
        if rid in seen:
            raise _fail(path, where, "duplicate id")
        seen.add(rid)
        unknown = set(raw) - KEYS
        if unknown:
            raise _fail(path, where, f"unknown key(s) {sorted(unknown)}; allowed: {sorted(KEYS)}")
        if raw.get("severity") not in SEVERITIES:
            raise _fail(path, f"{where}.severity", f"expected one of {SEVERITIES}, got {raw.get('severity')!r}")
        for key in ("message", "hint"):
            if not isinstance(raw.get(key), str) or not raw[key].strip():
                raise _fail(path, f"{where}.{key}", "expected a non-empty string")
        patterns = raw.get("patterns") or []
        check = raw.get("check") or ""
        diagnostic = raw.get("diagnostic") or ""
        if diagnostic:
            if patterns:
                raise _fail(path, where, "a `diagnostic` rule has no `patterns`")
            if check and check not in DIAGNOSTIC_CHECKS:
                raise _fail(path, f"{where}.check", f"expected one of {DIAGNOSTIC_CHECKS} beside `diagnostic`, got {check!r}")
            try:
                re.compile(diagnostic)
            except (re.error, TypeError) as exc:
                raise _fail(path, f"{where}.diagnostic", f"{diagnostic!r} does not compile ({exc})") from None
        elif bool(patterns) == bool(check):
            raise _fail(path, where, "give exactly one of `patterns` (list of regexes), `check` " + str(CHECKS)
                        + " or `diagnostic` (a regex over a compiler error)")
        elif check not in CHECKS + ("",):
            raise _fail(path, f"{where}.check", f"expected one of {CHECKS}, got {check!r}")
        scope = raw.get("scope") or ""
        if scope and scope not in SCOPES:
            raise _fail(path, f"{where}.scope", f"expected one of {SCOPES}, got {scope!r}")
        for pattern in patterns:
            try:
                re.compile(fill(pattern, PLACEHOLDER_DEFAULTS))
            except re.error as exc:
                raise _fail(path, f"{where}.patterns", f"{pattern!r} does not compile ({exc})") from None
        rules.append(Rule(
            id=rid, severity=raw["severity"], message=raw["message"].strip(), hint=raw["hint"].strip(),
            doc=(raw.get("doc") or "").strip(), patterns=tuple(patterns), check=check,
            fixed_by=tuple(raw.get("fixed_by") or ()), diagnostic=diagnostic, scope=scope))
    return rules
