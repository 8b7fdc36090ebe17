"""Rank catalog entries against a log: which known failures does this text show, where, and how sure.

Three kinds of evidence, combined per entry:
  1. patterns: the entry's own regular expressions (models.MatchSpec), searched line by line,
     case-insensitively, after ANSI colour codes are removed. Each pattern counts once:
     pattern points = sum(weights of any/all/also hits) - sum(weights of ``not`` hits). An entry is a
     pattern candidate when an ``any`` and every ``all`` pattern hit and the points reach ``min_score``.
  2. signatures: the error signatures of the log (signatures.py) that the entry's symptom or fixtures
     also carry.
  3. similarity: BM25 of the log's error region against the entry's text and fixtures (similarity.py),
     as ``relative`` = score / best score for this log.
score = pattern points + SIM_POINTS * relative (+ SIGNATURE_POINTS when a distinctive signature is shared).
An entry without a pattern hit is reported only when its similarity is the log's best or close to it
(relative >= SIM_RELATIVE_FLOOR), its BM25 score reaches SIM_SCORE_FLOOR and it shares at least one
distinctive signature (not a signal, a timeout or a generic diagnostic such as "use of undeclared
identifier"): that confidence floor keeps healthy logs free of matches, and a compiler error of another
fault from being named as this one.
Ranking: harmless warnings last; entries marked ``generic`` (a symptom with many causes: memory access
fault, out of memory) after every specific entry that was reported; then by score, then catalog order.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from buildctl.doctor.literals import TextIndex
from buildctl.doctor.models import (
    ALSO_WEIGHT,
    ANY_WEIGHT,
    CATALOG_DIR,
    NOT_WEIGHT,
    Entry,
    Pattern,
    load_catalog,
)
from buildctl.doctor.prepare import prepare
from buildctl.doctor.reading import LogText, from_text
from buildctl.doctor.signatures import Signature, extract
from buildctl.doctor.similarity import Hit, SimilarityIndex

FIXTURES_DIR = Path(__file__).parent / "fixtures"
MAX_EVIDENCE = 6  # lines shown per match
SIM_POINTS = 12
SIGNATURE_POINTS = 4
SIM_RELATIVE_FLOOR = 0.85
SIM_SCORE_FLOOR = 12.0


@dataclass(frozen=True)
class Evidence:
    """One log line that raised or lowered a match. ``line`` is 1-based in the original log;
    ``group`` is any/all/also/not for a pattern, ``signature`` for a shared error signature."""

    line: int
    text: str
    pattern: str
    group: str


@dataclass(frozen=True)
class Match:
    """A catalog entry the log matched.

    ``score``: combined points (module docstring); ``pattern_score``: the pattern points alone (0 when
    no pattern hit); ``similarity``: BM25 relative to the best entry for this log, 0..1;
    ``signatures``: shared signature tokens; ``confidence``: high / medium / low (see ``confidence_of``).
    """

    entry: Entry
    score: int
    evidence: tuple[Evidence, ...]
    demoted_by: tuple[Evidence, ...]
    pattern_score: int = 0
    similarity: float = 0.0
    signatures: tuple[str, ...] = ()
    confidence: str = "medium"

    def to_dict(self) -> dict[str, object]:
        """JSON-ready form (schema in docs/doctor.md)."""
        return {
            "id": self.entry.id,
            "title": self.entry.title,
            "category": self.entry.category.value,
            "harmless": self.entry.harmless,
            "generic": self.entry.generic,
            "score": self.score,
            "confidence": self.confidence,
            "pattern_score": self.pattern_score,
            "similarity": round(self.similarity, 3),
            "signatures": list(self.signatures),
            "evidence": [{"line": e.line, "text": e.text, "pattern": e.pattern} for e in self.evidence],
            "demoted_by": [{"line": e.line, "text": e.text, "pattern": e.pattern} for e in self.demoted_by],
            "root_cause": self.entry.root_cause,
            "fix": list(self.entry.fix),
            "confirm": list(self.entry.confirm),
            "check": self.entry.check,
            "links": list(self.entry.links),
        }

    def __str__(self) -> str:
        return f"{self.entry.id}: {self.entry.title} (score {self.score}, {self.confidence} confidence)"


def load_fixtures(directory: Path = FIXTURES_DIR) -> dict[str, list[str]]:
    """Entry id -> texts of its example logs: ``<id>.log`` and ``variants/<id>.<n>.log`` in ``directory``."""
    out: dict[str, list[str]] = {}
    for path in sorted(directory.glob("*.log")) + sorted((directory / "variants").glob("*.log")):
        out.setdefault(path.name.split(".", 1)[0], []).append(path.read_text(encoding="utf-8", errors="replace"))
    return out


@dataclass(frozen=True)
class Matcher:
    """A catalog and the similarity index built over it (and its fixtures)."""

    entries: tuple[Entry, ...]
    index: SimilarityIndex

    @classmethod
    def build(cls, entries: Sequence[Entry], fixtures: Mapping[str, Sequence[str]]) -> Matcher:
        """Index ``entries`` with their ``fixtures`` (entry id -> log texts)."""
        return cls(tuple(entries), SimilarityIndex(entries, fixtures))


@lru_cache(maxsize=4)
def cached_catalog(directory: Path = CATALOG_DIR) -> tuple[Entry, ...]:
    """load_catalog() memoised per directory (the catalog ships with the package and does not change)."""
    return load_catalog(directory)


@lru_cache(maxsize=4)
def cached_matcher(directory: Path = CATALOG_DIR, fixtures: Path = FIXTURES_DIR) -> Matcher:
    """The Matcher for a catalog directory and its fixtures, built once per process."""
    return Matcher.build(cached_catalog(directory), load_fixtures(fixtures))


@dataclass(frozen=True)
class Log:
    """A log prepared for matching: kept lines as prepare.prepare() gives them (colour removed, wrapped
    diagnostics joined, numeric HSA statuses named), their 1-based numbers, a TextIndex (which lines can
    a pattern hit) and the log's signatures."""

    lines: list[str]
    numbers: list[int]
    index: TextIndex
    signatures: tuple[Signature, ...]

    @classmethod
    def of(cls, log: str | LogText) -> Log:
        """Prepare a text (every line kept) or a LogText from reading.read_stream."""
        kept = from_text(log) if isinstance(log, str) else log
        lines, numbers = prepare(kept.lines, kept.numbers)
        index = TextIndex(lines)
        return cls(lines, numbers, index, tuple(extract(lines, numbers, index)))


@lru_cache(maxsize=4096)
def _compiled(regex: str) -> re.Pattern[str]:
    return re.compile(regex, re.IGNORECASE | re.MULTILINE)


def _hits(pattern: Pattern, log: Log, group: str) -> list[Evidence]:
    rx = _compiled(pattern.re)
    candidates = log.index.candidates(pattern.re)
    if candidates is None:
        # No literal to look for: one search of the joined text rules most patterns out (a hit on one
        # line is also a hit there: ^/$ are per line, '.' stops at newlines).
        if not rx.search(log.index.lower):
            return []
        candidates = list(range(len(log.lines)))
    lines, numbers = log.lines, log.numbers
    return [Evidence(numbers[i], lines[i].strip(), pattern.re, group) for i in candidates if rx.search(lines[i])]


@dataclass(frozen=True)
class PatternResult:
    """Pattern points of one entry and the lines behind them. ``vetoed``: a ``not`` pattern hit and the
    points stayed below min_score, so the log shows a look-alike of this entry (and similarity must not
    bring it back)."""

    points: int
    positive: tuple[Evidence, ...]
    negative: tuple[Evidence, ...]
    vetoed: bool = False


def score_patterns(entry: Entry, log: Log) -> PatternResult | None:
    """Pattern points of one entry; None when it is not a pattern candidate or below min_score without
    a ``not`` hit; a result with ``vetoed`` set when a ``not`` hit kept it below min_score."""
    spec = entry.match
    any_hits = [(p, _hits(p, log, "any")) for p in spec.any]
    if not any(h for _, h in any_hits):
        return None
    all_hits = [(p, _hits(p, log, "all")) for p in spec.all]
    if not all(h for _, h in all_hits):
        return None
    also_hits = [(p, _hits(p, log, "also")) for p in spec.also]
    not_hits = [(p, _hits(p, log, "not")) for p in spec.not_]
    points = 0
    positive: list[Evidence] = []
    for (pattern, hits), default in (
        *((ph, ANY_WEIGHT) for ph in any_hits),
        *((ph, ANY_WEIGHT) for ph in all_hits),
        *((ph, ALSO_WEIGHT) for ph in also_hits),
    ):
        if hits:
            points += pattern.weight or default
            positive.extend(hits)
    negative: list[Evidence] = []
    for pattern, hits in not_hits:
        if hits:
            points -= pattern.weight or NOT_WEIGHT
            negative.extend(hits)
    if points < spec.min_score:
        return PatternResult(points, (), tuple(negative), vetoed=True) if negative else None
    return PatternResult(points, tuple(positive), tuple(negative))


def _first_lines(hits: Sequence[Evidence]) -> tuple[Evidence, ...]:
    by_line: dict[int, Evidence] = {}
    for hit in sorted(hits, key=lambda e: e.line):
        by_line.setdefault(hit.line, hit)
    return tuple(list(by_line.values())[:MAX_EVIDENCE])


def confidence_of(pattern: PatternResult | None, hit: Hit | None) -> str:
    """high: patterns hit and the similarity agrees (shared signature or best-ranked text);
    medium: patterns alone, or similarity alone with a shared signature and a clear lead;
    low: anything weaker that still passed the floor."""
    agrees = hit is not None and (bool(hit.shared) or hit.relative >= SIM_RELATIVE_FLOOR)
    if pattern is not None:
        return "high" if agrees else "medium"
    if hit is not None and hit.distinctive and hit.relative >= 0.999 and hit.score >= 2 * SIM_SCORE_FLOOR:
        return "medium"
    return "low"


def _above_floor(hit: Hit | None) -> bool:
    """Similarity alone reports an entry: a distinctive shared signature, near the best score, above the
    score floor."""
    return (hit is not None and bool(hit.distinctive) and hit.relative >= SIM_RELATIVE_FLOOR
            and hit.score >= SIM_SCORE_FLOOR)


def _signature_evidence(log: Log, shared: Sequence[str]) -> list[Evidence]:
    wanted = set(shared)
    return [Evidence(s.line, s.text, s.token, "signature") for s in log.signatures if s.token in wanted]


def rank_log(log: Log, matcher: Matcher) -> list[Match]:
    """Every reported entry for a prepared log, best first (module docstring)."""
    hits = matcher.index.query(log.lines, log.signatures, log.numbers, log.index)
    found: list[tuple[int, Match]] = []
    for order, entry in enumerate(matcher.entries):
        pattern = score_patterns(entry, log)
        hit = hits.get(entry.id)
        if pattern is not None and pattern.vetoed:
            continue
        if pattern is None and not _above_floor(hit):
            continue
        points = pattern.points if pattern else 0
        sim = hit.relative if hit else 0.0
        shared = hit.shared if hit else ()
        score = points + round(SIM_POINTS * sim) + (SIGNATURE_POINTS if hit and hit.distinctive else 0)
        positive = list(pattern.positive) if pattern else []
        positive += _signature_evidence(log, shared)
        match = Match(entry, score, _first_lines(positive), _first_lines(pattern.negative) if pattern else (),
                      points, sim, tuple(shared), confidence_of(pattern, hit))
        found.append((order, match))
    specific = any(not m.entry.generic and not m.entry.harmless for _, m in found)
    found.sort(key=lambda om: (om[1].entry.harmless, specific and om[1].entry.generic, -om[1].score, om[0]))
    return [m for _, m in found]


def rank(text: str | LogText, entries: tuple[Entry, ...] | None = None, matcher: Matcher | None = None) -> list[Match]:
    """Every reported entry for ``text``, best first. ``matcher`` defaults to the packaged catalog's;
    ``entries`` (without ``matcher``) indexes those entries with the packaged fixtures."""
    if matcher is None:
        matcher = cached_matcher() if entries is None else Matcher.build(entries, load_fixtures())
    return rank_log(Log.of(text), matcher)
