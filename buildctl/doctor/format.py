"""Human text for doctor matches: short enough to print under a failed build or test."""

from __future__ import annotations

from buildctl.doctor.matcher import Match

DOCS_PAGE = "docs/troubleshooting.md"
_TEXT_CHARS = 160


def _clip(text: str) -> str:
    return text if len(text) <= _TEXT_CHARS else text[: _TEXT_CHARS - 3] + "..."


def _first_sentence(text: str) -> str:
    head, dot, _ = " ".join(text.split()).partition(". ")
    return head + ("." if dot or not head.endswith(".") else "")


def format_matches(matches: list[Match]) -> str:
    """Render matches as numbered blocks: id, title, score, matched lines, cause, fix steps, check, doc link.

    An empty list gives one line saying that no known cause matched.
    """
    if not matches:
        return "rocmig doctor: no known cause matched this log"
    noun = "cause" if len(matches) == 1 else "causes"
    out = [f"rocmig doctor: {len(matches)} likely {noun} (best first)"]
    for n, m in enumerate(matches, 1):
        e = m.entry
        tag = ", harmless warning" if e.harmless else ""
        out.append(f"{n}. [{e.id}] {e.title} ({e.category.value}{tag}; score {m.score})")
        for ev in m.evidence:
            out.append(f"   line {ev.line}: {_clip(ev.text)}")
        out.append(f"   cause: {_first_sentence(e.root_cause)}")
        for step in e.fix:
            out.append(f"   fix:   {' '.join(step.split())}")
        out.append(f"   check: {e.check}")
        out.append(f"   more:  {DOCS_PAGE}#{e.id}")
    return "\n".join(out)
