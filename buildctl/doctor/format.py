"""Human text for doctor matches: short enough to print under a failed build or test."""

from __future__ import annotations

import textwrap

from buildctl.doctor.matcher import Match

DOCS_PAGE = "docs/troubleshooting.md"
_TEXT_CHARS = 160
_WRAP = 110


def _clip(text: str) -> str:
    return text if len(text) <= _TEXT_CHARS else text[: _TEXT_CHARS - 3] + "..."


def _wrapped(label: str, text: str) -> list[str]:
    return textwrap.wrap(" ".join(text.split()), width=_WRAP, initial_indent=f"   {label:<7}",
                         subsequent_indent=" " * 10)


def _how(m: Match) -> str:
    parts = []
    if m.pattern_score:
        groups = sorted({ev.group for ev in m.evidence if ev.group != "signature"})
        parts.append(f"patterns ({'/'.join(groups)}) {m.pattern_score} points")
    if m.signatures:
        parts.append("signatures " + ", ".join(m.signatures[:4]))
    if m.similarity:
        parts.append(f"text similarity {m.similarity:.2f} of the best")
    if m.entry.generic:
        parts.append("generic symptom: ranked below specific causes")
    return "; ".join(parts) or "patterns"


def format_matches(matches: list[Match]) -> str:
    """Render matches, best first, as numbered blocks: id, title, score and confidence, which evidence
    matched (patterns, signatures, similarity), matched lines (with line numbers), root cause, fix steps,
    confirm commands, check command and the docs anchor. No header line, so
    callers can put it under their own ("rocmig doctor:"). An empty list gives one line saying so.
    """
    if not matches:
        return "no known cause matched this log"
    out: list[str] = []
    for n, m in enumerate(matches, 1):
        e = m.entry
        tag = ", harmless warning" if e.harmless else ""
        out.append(f"{n}. [{e.id}] {e.title} ({e.category.value}{tag}; score {m.score}, {m.confidence} confidence)")
        out.append(f"   how:   {_how(m)}")
        for ev in m.evidence:
            out.append(f"   line {ev.line}: {_clip(ev.text)}")
        out.extend(_wrapped("cause:", e.root_cause))
        for step in e.fix:
            out.extend(_wrapped("fix:", step))
        for command in e.confirm:
            out.append(f"   confirm: {command}")
        out.append(f"   check: {e.check}")
        out.append(f"   more:  {DOCS_PAGE}#{e.id}")
    return "\n".join(out)
