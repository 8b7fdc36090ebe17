"""Image tags of a cell and the generated supported-tags page (docs/tags.md).

Tags: `rocmig/<role>:rocm<full>-<arch>` (the debian source adds `-debian`), the moving alias
`rocm<major.minor>-<arch>[-debian]` (follows the newest full release of the line), and `latest` for
the matrix's default cell of each role. `docs/tags.md` is generated from matrix.yaml:
`python -m buildctl tags --write`; a unit test fails when the page is stale.
"""

from __future__ import annotations

from pathlib import Path

from buildctl.load import Project
from buildctl.plan import REPOSITORY, Cell, Selection, make_plan

TAGS_DOC = Path("docs") / "tags.md"


def is_default(project: Project, cell: Cell) -> bool:
    """True when `cell` is the matrix's default cell (default source, ROCm line and arch)."""
    d = project.matrix.default
    return (cell.release.source, cell.release.version, cell.arch_name) == (d.source, d.rocm, d.arch)


def final_tags(project: Project, cell: Cell) -> list[str]:
    """Tags (without repository) a promoted cell gets: full, moving alias, and `latest` for the default cell."""
    tags = [cell.tag, *cell.alias_tags]
    if is_default(project, cell):
        tags.append("latest")
    return tags


def final_refs(project: Project, cell: Cell, repository: str = REPOSITORY) -> list[str]:
    """`<repository>/<role>:<tag>` for each of final_tags (repository e.g. `127.0.0.1:5000/rocmig`)."""
    return [f"{repository}/{cell.role}:{t}" for t in final_tags(project, cell)]


def tags_markdown(project: Project) -> str:
    """The supported-tags page as Markdown: per role, every planned cell's tags; then excluded cells."""
    plan = make_plan(project, Selection())
    lines = [
        "# Supported tags",
        "",
        "Generated from matrix.yaml by `python -m buildctl tags --write`; do not edit by hand",
        "(tests/unit/test_tags.py fails when this page is stale).",
        "",
        f"Full tags `{REPOSITORY}/<role>:rocm<full>-<arch>` never move. The alias `rocm<major.minor>-<arch>`",
        "moves to the newest full release of its line; `latest` is the default cell "
        f"(source {project.matrix.default.source}, ROCm {project.matrix.default.rocm}, "
        f"{project.matrix.default.arch}). The debian source's tags end in `-debian`.",
        "",
    ]
    for role, spec in project.images.items():
        cells = [c for c in plan.cells if c.role == role]
        lines += [f"## {REPOSITORY}/{role}", "", spec.description, "",
                  "| tag | aliases | source | ROCm | arch | OS |", "|---|---|---|---|---|---|"]
        for c in cells:
            aliases = ", ".join(f"`{t}`" for t in final_tags(project, c)[1:])
            lines.append(f"| `{c.tag}` | {aliases} | {c.release.source} | {c.release.full} | {c.arch_name} "
                         f"({c.arch.family}) | {c.release.os_version} |")
        lines.append("")
    if plan.excluded:
        lines += ["## Not built", "", "| image | reason |", "|---|---|"]
        for e in plan.excluded:
            lines.append(f"| `{e.cell.ref}` | {e.rule}: {e.reason} |")
        lines.append("")
    return "\n".join(lines)


def write_tags_doc(project: Project) -> Path:
    """Write docs/tags.md under the project root; returns its path."""
    path = project.root / TAGS_DOC
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(tags_markdown(project))
    return path
