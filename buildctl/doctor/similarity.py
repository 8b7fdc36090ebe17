"""Ranked text similarity between a log's error region and each catalog entry (Okapi BM25, rank-bm25).

Why BM25 (rank_bm25.BM25Okapi) rather than TF-IDF cosine: a log repeats its error line many times and
BM25 saturates term frequency (k1) so repetition does not swamp the rest; it normalises by document
length (b) so an entry with three fixtures is not favoured over one with one; and rank-bm25 needs only
numpy, which keeps the import under the doctor (run by every failing build and test) cheap, where
scikit-learn would bring scipy along.

An entry's document is its title, symptom and trigger, the signatures of its symptom and fixtures, and
the error-region words of its fixtures. A log's query is its error region: lines that carry a signature
or an error word, with one line of context either side. Signature tokens (``§hip:hiperror...``) are
terms like any other, so a rare status name weighs much more than a common word.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from buildctl.doctor.literals import TextIndex, required_literals
from buildctl.doctor.models import Entry
from buildctl.doctor.signatures import Signature, extract, is_weak

_WORD = re.compile(r"[a-z_][a-z0-9_+]*(?:[.-][a-z0-9_+]+)*")
_ERRORISH = re.compile(
    r"error|fail|fatal|fault|warn|abort|killed|denied|unable|cannot|can't|not found|no such|exception|"
    r"traceback|timeout|timed out|hang|segmentation|invalid|unsupported|not supported|mismatch|undefined|"
    r"slow|nan\b|inf\b|diverg|wrong|incorrect|differ",
    re.IGNORECASE,
)
_ERRORISH_LITERALS = required_literals(_ERRORISH.pattern) or frozenset()
_STOP = frozenset(
    ["the", "and", "for", "with", "from", "this", "that", "was", "were", "are", "not", "but", "you", "your", "have", "has", "had", "can", "its", "into", "when", "then", "than", "been", "will", "would", "could", "should", "which", "what", "there", "their", "they", "them", "also", "only", "all", "any", "our", "out", "use", "used", "using", "line", "file", "run", "running", "error", "errors"]
)
CONTEXT_LINES = 1
MAX_QUERY_LINES = 400
SIGNATURE_REPEAT = 3  # a signature counts as this many word occurrences in documents and queries


def words(text: str) -> list[str]:
    """Lower-case word terms of ``text`` (3+ characters, no stop words, no pure numbers)."""
    return [w for w in _WORD.findall(text.lower()) if len(w) > 2 and w not in _STOP]


def error_region(lines: Sequence[str], signatures: Iterable[Signature], numbers: Sequence[int],
                 index: TextIndex | None = None) -> list[str]:
    """The lines of a log that describe its failure: lines with a signature or an error word, +-1 line,
    at most MAX_QUERY_LINES (the last ones: errors sit at the end of a log)."""
    index_of = {n: i for i, n in enumerate(numbers)}
    marked = {index_of[s.line] for s in signatures if s.line in index_of}
    index = index or TextIndex(lines)
    marked |= {i for i in index.lines_with(_ERRORISH_LITERALS) if _ERRORISH.search(lines[i])}
    keep = sorted({j for i in marked for j in range(i - CONTEXT_LINES, i + CONTEXT_LINES + 1) if 0 <= j < len(lines)})
    return [lines[i] for i in keep[-MAX_QUERY_LINES:]]


def terms(lines: Sequence[str], signatures: Iterable[Signature]) -> list[str]:
    """Query or document terms: the words of ``lines`` plus each distinct signature token, repeated."""
    out = [w for line in lines for w in words(line)]
    for token in sorted({s.token for s in signatures}):
        out += ["§" + token] * SIGNATURE_REPEAT
    return out


@dataclass(frozen=True)
class Hit:
    """One entry's similarity to a log: BM25 ``score``, ``relative`` (score / best score of this log,
    0..1], the signature tokens the log shares with the entry, and those of them that name a fault by
    themselves (``distinctive``: not signatures.is_weak)."""

    score: float
    relative: float
    shared: tuple[str, ...]
    distinctive: tuple[str, ...] = ()


class SimilarityIndex:
    """BM25 over catalog entries. ``fixtures`` maps an entry id to the texts of its example logs.

    Build cost: one pass over every entry and fixture (about 0.1 s for 150 entries).
    """

    def __init__(self, entries: Sequence[Entry], fixtures: Mapping[str, Sequence[str]]) -> None:
        self.entries = tuple(entries)
        self.signatures: list[frozenset[str]] = []
        docs: list[list[str]] = []
        for entry in self.entries:
            own = [entry.title, entry.symptom, entry.trigger]
            sigs = extract([entry.symptom])
            region: list[str] = []
            for text in fixtures.get(entry.id, ()):
                lines = text.splitlines()
                fsigs = extract(lines)
                sigs += fsigs
                region += error_region(lines, fsigs, range(1, len(lines) + 1))
            self.signatures.append(frozenset(s.token for s in sigs))
            docs.append(terms(own + region, sigs))
        # Imported here: numpy (under rank_bm25) costs ~0.2 s and a refused binary input needs none of it.
        from rank_bm25 import BM25Okapi

        self._bm25: Any = BM25Okapi(docs) if docs else None

    def query(self, lines: Sequence[str], signatures: Sequence[Signature], numbers: Sequence[int],
              index: TextIndex | None = None) -> dict[str, Hit]:
        """Entry id -> Hit for every entry with a positive score against the log's error region."""
        if self._bm25 is None:
            return {}
        query = terms(error_region(lines, signatures, numbers, index), signatures)
        if not query:
            return {}
        scores = self._bm25.get_scores(query)
        best = float(max(scores)) if len(scores) else 0.0
        if best <= 0:
            return {}
        log_tokens = {s.token for s in signatures}
        out: dict[str, Hit] = {}
        for entry, score, sigset in zip(self.entries, scores, self.signatures):
            if score > 0:
                shared = tuple(sorted(log_tokens & sigset))
                out[entry.id] = Hit(float(score), float(score) / best, shared,
                                    tuple(t for t in shared if not is_weak(t)))
        return out
