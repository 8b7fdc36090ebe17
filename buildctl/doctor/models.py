"""Typed model of the error catalog (buildctl/doctor/catalog/*.yaml) and its loader.

A catalog file is a YAML mapping with one key, ``entries``: a list of entries. Every entry names a
known failure of a CUDA-to-ROCm migration: how to recognise it in a log (``match``), why it happens,
how to fix it and which command proves the fix. Unknown keys are refused so that a typo in a pattern
group (``nott:``) cannot silently disable it.
"""

from __future__ import annotations

import re
from enum import StrEnum
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from buildctl.errors import ConfigError
from buildctl.yamlfile import read_yaml

CATALOG_DIR = Path(__file__).parent / "catalog"

# Default weights of one distinct pattern hit, by group (see Match in matcher.py for the score).
ANY_WEIGHT = 10
ALSO_WEIGHT = 3
NOT_WEIGHT = 15


class CatalogError(ConfigError):
    """A catalog file is unreadable or does not fit the schema. Message: ``<file>: <key path>: <why>``."""


class Category(StrEnum):
    """The six kinds of failure the catalog and docs/troubleshooting.md are grouped by (in this order)."""

    COMPILE = "compile-time"
    RUNTIME = "runtime crash"
    PERFORMANCE = "performance anomaly"
    NUMERICS = "numerical precision"
    CONTAINER = "container and permissions"
    BUILD = "build and dependencies"


class Pattern(BaseModel):
    """One regular expression searched line by line (case-insensitive) and the score a hit is worth.

    Written in YAML either as a bare string (group default weight) or as ``{re: ..., weight: N}``.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    re: str = Field(min_length=1)
    weight: int | None = Field(default=None, ge=1, le=100)

    @field_validator("re")
    @classmethod
    def _compiles(cls, value: str) -> str:
        try:
            re.compile(value)
        except re.error as exc:
            raise ValueError(f"invalid regular expression {value!r}: {exc}") from None
        return value


def _coerce_pattern(value: object) -> object:
    return {"re": value} if isinstance(value, str) else value


class MatchSpec(BaseModel):
    """How an entry is recognised.

    - ``any``: anchor patterns; at least one must hit or the entry is not a candidate (default weight 10).
    - ``all``: patterns that must all hit (several tokens that only together name the fault; weight 10).
    - ``also``: supporting evidence, each distinct hit adds its weight (default 3).
    - ``not``: look-alike markers, each distinct hit subtracts its weight (default 15).
    - ``min_score``: the least total score for the entry to be reported.
    """

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    any: tuple[Pattern, ...] = Field(min_length=1)
    all: tuple[Pattern, ...] = ()
    also: tuple[Pattern, ...] = ()
    not_: tuple[Pattern, ...] = Field(default=(), alias="not")
    min_score: int = Field(default=10, ge=1)

    @field_validator("any", "all", "also", "not_", mode="before")
    @classmethod
    def _strings_are_patterns(cls, value: object) -> object:
        if isinstance(value, list):
            return [_coerce_pattern(item) for item in value]
        return value


class Entry(BaseModel):
    """One known failure: identity, recognition, explanation, fix and check.

    ``symptom`` is what the user sees (a typical log line); ``trigger`` is what they were doing;
    ``check`` is one shell command whose output shows the fix took; ``links`` are public reports.
    ``harmless`` marks warnings that are expected and need no action. ``generic`` marks a symptom with
    many causes (a memory access fault, out of memory): it ranks below any specific entry that matched.
    ``confirm`` are shell commands whose output confirms the cause (rocminfo, amd-smi, dmesg, env, ...).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(pattern=r"^[a-z0-9][a-z0-9-]*[a-z0-9]$")
    title: str = Field(min_length=5)
    category: Category
    harmless: bool = False
    generic: bool = False
    symptom: str = Field(min_length=5)
    trigger: str = Field(min_length=5)
    match: MatchSpec
    root_cause: str = Field(min_length=20)
    fix: tuple[str, ...] = Field(min_length=1)
    confirm: tuple[str, ...] = ()
    check: str = Field(min_length=3)
    links: tuple[str, ...] = Field(min_length=1)

    @field_validator("links")
    @classmethod
    def _public_urls(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for url in value:
            if not url.startswith("https://"):
                raise ValueError(f"link {url!r} is not an https:// URL")
        return value


class CatalogFile(BaseModel):
    """The content of one catalog YAML file."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    entries: tuple[Entry, ...] = Field(min_length=1)

    @model_validator(mode="after")
    def _unique_ids(self) -> CatalogFile:
        seen: set[str] = set()
        for entry in self.entries:
            if entry.id in seen:
                raise ValueError(f"duplicate entry id {entry.id!r}")
            seen.add(entry.id)
        return self


def _key_path(loc: tuple[object, ...]) -> str:
    parts: list[str] = []
    for item in loc:
        if isinstance(item, int):
            parts.append(f"[{item}]")
        else:
            parts.append(("." if parts else "") + ("not" if item == "not_" else str(item)))
    return "".join(parts) or "(top level)"


def load_file(path: Path) -> CatalogFile:
    """Load and validate one catalog file.

    Raises CatalogError with ``<path>: <key path>: <message>`` on unreadable YAML or a schema error
    (first error only, one line).
    """
    data = read_yaml(path, CatalogError)
    try:
        return CatalogFile.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        msg = err["msg"].removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            msg = "unknown key (the schema is in buildctl/doctor/models.py)"
        raise CatalogError(f"{path}: {_key_path(tuple(err['loc']))}: {msg}") from None


def load_catalog(directory: Path = CATALOG_DIR) -> tuple[Entry, ...]:
    """Load every ``*.yaml`` in ``directory`` (sorted by file name) into one tuple of entries.

    Raises CatalogError when a file is invalid, when an id appears in two files, or when the
    directory holds no catalog file.
    """
    files = sorted(directory.glob("*.yaml"))
    if not files:
        raise CatalogError(f"{directory}: no *.yaml catalog files")
    entries: list[Entry] = []
    origin: dict[str, Path] = {}
    for path in files:
        for index, entry in enumerate(load_file(path).entries):
            if entry.id in origin:
                raise CatalogError(
                    f"{path}: entries[{index}].id: {entry.id!r} already defined in {origin[entry.id].name}"
                )
            origin[entry.id] = path
            entries.append(entry)
    return tuple(entries)
