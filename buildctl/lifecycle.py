"""The support lifecycle of ROCm releases and gfx arches (matrix.yaml `support`): what a plan warns
about or refuses, and the generated page docs/support.md.

A cell's lifecycle is its release's or its arch's, whichever is further along (Cell.support). Deprecated
cells are built and warned about, with their end-of-life date; end-of-life cells are excluded from plans
(rule `end-of-life`) and refused by build, plan and push unless `--allow-eol` is given.
"""

from __future__ import annotations

from pathlib import Path

from buildctl.errors import ConfigError
from buildctl.load import Project
from buildctl.model import Support
from buildctl.plan import END_OF_LIFE, Plan

SUPPORT_DOC = Path("docs") / "support.md"
MEANING = {
    "supported": "built on every change, fixed, and tested on GPU runners",
    "maintenance": "rebuilt for security, pin and packaging fixes only; no new features",
    "deprecated": "still built until its end-of-life date; plan and build warn; move to a supported line",
    "end-of-life": "not built or pushed (`--allow-eol` builds it anyway); existing tags stay in the registry, unmaintained",
}


def deprecation_warnings(plan: Plan) -> list[str]:
    """One line per deprecated release or arch the plan's cells touch: what, since, end-of-life date."""
    seen: dict[str, Support] = {}
    for cell in plan.cells:
        what, support = cell.support
        if support.status == "deprecated":
            seen.setdefault(what, support)
    return [f"warning: {what} is deprecated{f' since {s.since}' if s.since else ''}; end of life on "
            f"{s.end_of_life}: its tags stop being rebuilt then (docs/support.md){f'. {s.note}' if s.note else ''}"
            for what, s in seen.items()]


def refuse_end_of_life(plan: Plan) -> None:
    """Raise ConfigError (exit 2) when the plan left out selected cells because they are end-of-life."""
    eol = [e for e in plan.excluded if e.rule == END_OF_LIFE]
    if eol:
        names = sorted({e.cell.support[0] for e in eol})
        raise ConfigError(f"{', '.join(names)}: end-of-life ({len(eol)} selected cell(s): {eol[0].reason}); "
                          "pass --allow-eol to build them anyway, or select a supported release")


def _dates(s: Support) -> str:
    parts = [f"since {s.since}" if s.since else "", f"end of life {s.end_of_life}" if s.end_of_life else ""]
    return ", ".join(p for p in parts if p) or "-"


def support_markdown(project: Project) -> str:
    """docs/support.md: every release and arch with its status, dates and note, and what the statuses mean."""
    m = project.matrix
    lines = ["# Support lifecycle", "",
             "Generated from matrix.yaml (`support` of each release and arch) by `python -m buildctl support --write`;",
             "do not edit by hand (tests/unit/test_lifecycle.py fails when this page is stale). How a status changes",
             "and how deprecations are announced: docs/maintenance.md.", "",
             "A cell (image × release × arch) takes the status of its release or its arch, whichever is further along.",
             "", "| status | meaning |", "|---|---|"]
    lines += [f"| {status} | {meaning} |" for status, meaning in MEANING.items()]
    lines += ["", "## ROCm releases", "", "| source | ROCm | full release | OS | status | dates | note |",
              "|---|---|---|---|---|---|---|"]
    for r in m.rocm:
        s = r.support
        lines.append(f"| {r.source} | {r.version} | {r.full} | {r.os_version} | {s.status} | {_dates(s)} | {s.note or ''} |")
    lines += ["", "## GPU archs", "", "| arch | family | products | status | dates | note |", "|---|---|---|---|---|---|"]
    for name, a in m.archs.items():
        s = a.support
        lines.append(f"| {name} | {a.family} | {', '.join(a.products)} | {s.status} | {_dates(s)} | {s.note or ''} |")
    return "\n".join(lines) + "\n"


def write_support_doc(project: Project) -> Path:
    """Write docs/support.md under the project root; returns its path."""
    path = project.root / SUPPORT_DOC
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(support_markdown(project))
    return path
