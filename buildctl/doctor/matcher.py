"""Score catalog entries against a log: which known failures does this text show, and where.

Scoring (per entry, each pattern counted once however many lines it hits):
  score = sum(weights of ``any``, ``all`` and ``also`` patterns that hit) - sum(weights of ``not`` hits)
An entry is a candidate only when at least one ``any`` pattern and every ``all`` pattern hit, and is
reported only when its score reaches ``min_score``. Reported entries are ranked by score, then by
catalog order. Lines are searched one by one, case-insensitively, after ANSI colour codes are removed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from buildctl.doctor.models import ALSO_WEIGHT, ANY_WEIGHT, CATALOG_DIR, NOT_WEIGHT, Entry, Pattern, load_catalog

_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
MAX_EVIDENCE = 6  # lines shown per match
MAX_LINE_CHARS = 4000  # longer lines are searched only up to this many characters


@dataclass(frozen=True)
class Evidence:
    """One log line that a pattern hit. ``line`` is 1-based; ``group`` is any/all/also/not."""

    line: int
    text: str
    pattern: str
    group: str


@dataclass(frozen=True)
class Match:
    """A catalog entry the log matched: its score, the lines that raised it and the lines that lowered it."""

    entry: Entry
    score: int
    evidence: tuple[Evidence, ...]
    demoted_by: tuple[Evidence, ...]

    def to_dict(self) -> dict[str, object]:
        """JSON-ready form (schema in docs/doctor.md)."""
        return {
            "id": self.entry.id,
            "title": self.entry.title,
            "category": self.entry.category.value,
            "harmless": self.entry.harmless,
            "score": self.score,
            "evidence": [{"line": e.line, "text": e.text, "pattern": e.pattern} for e in self.evidence],
            "demoted_by": [{"line": e.line, "text": e.text, "pattern": e.pattern} for e in self.demoted_by],
            "root_cause": self.entry.root_cause,
            "fix": list(self.entry.fix),
            "check": self.entry.check,
            "links": list(self.entry.links),
        }


@lru_cache(maxsize=4)
def cached_catalog(directory: Path = CATALOG_DIR) -> tuple[Entry, ...]:
    """load_catalog() memoised per directory (the catalog ships with the package and does not change)."""
    return load_catalog(directory)


def split_lines(text: str) -> list[str]:
    """The log's lines with ANSI escape codes removed; ``\\r`` progress redraws count as line breaks."""
    return [_ANSI.sub("", line)[:MAX_LINE_CHARS] for line in text.splitlines()]


@dataclass(frozen=True)
class Log:
    """A log prepared for matching: its lines, and the same lines joined (for a fast whole-text pre-check)."""

    lines: list[str]
    text: str

    @classmethod
    def of(cls, text: str) -> "Log":
        """Split ``text`` with split_lines() and keep the joined form."""
        lines = split_lines(text)
        return cls(lines, "\n".join(lines))


@lru_cache(maxsize=2048)
def _compiled(regex: str) -> re.Pattern[str]:
    return re.compile(regex, re.IGNORECASE | re.MULTILINE)


def _hits(pattern: Pattern, log: Log, group: str) -> list[Evidence]:
    rx = _compiled(pattern.re)
    # A hit on one line is also a hit in the joined text (^/$ are per line, '.' stops at newlines), so a
    # miss there means no line can match: most patterns are ruled out by one search in C.
    if not rx.search(log.text):
        return []
    return [Evidence(n, line.strip(), pattern.re, group) for n, line in enumerate(log.lines, 1) if rx.search(line)]


def score_entry(entry: Entry, log: Log) -> Match | None:
    """Score one entry against a prepared log; None when it is not a candidate or below min_score."""
    spec = entry.match
    any_hits = [(p, _hits(p, log, "any")) for p in spec.any]
    if not any(h for _, h in any_hits):
        return None
    all_hits = [(p, _hits(p, log, "all")) for p in spec.all]
    if not all(h for _, h in all_hits):
        return None
    also_hits = [(p, _hits(p, log, "also")) for p in spec.also]
    not_hits = [(p, _hits(p, log, "not")) for p in spec.not_]

    score = 0
    positive: list[Evidence] = []
    for (pattern, hits), default in (
        *((ph, ANY_WEIGHT) for ph in any_hits),
        *((ph, ANY_WEIGHT) for ph in all_hits),
        *((ph, ALSO_WEIGHT) for ph in also_hits),
    ):
        if hits:
            score += pattern.weight or default
            positive.extend(hits)
    negative: list[Evidence] = []
    for pattern, hits in not_hits:
        if hits:
            score -= pattern.weight or NOT_WEIGHT
            negative.extend(hits)
    if score < spec.min_score:
        return None
    return Match(entry, score, _first_lines(positive), _first_lines(negative))


def _first_lines(hits: list[Evidence]) -> tuple[Evidence, ...]:
    by_line: dict[int, Evidence] = {}
    for hit in sorted(hits, key=lambda e: e.line):
        by_line.setdefault(hit.line, hit)
    return tuple(list(by_line.values())[:MAX_EVIDENCE])


def rank(text: str, entries: tuple[Entry, ...]) -> list[Match]:
    """Every reported entry for ``text``, best first (score descending, then catalog order)."""
    log = Log.of(text)
    found = [m for m in (score_entry(e, log) for e in entries) if m is not None]
    return sorted(found, key=lambda m: -m.score)
