"""Image tags of a cell, in a registry and locally, and the generated supported-tags page (docs/tags.md).

Tags: `rocmig/<role>:rocm<full>-<arch>` (the debian source adds `-debian`) never moves; the alias
`rocm<major.minor>-<arch>[-debian]` follows the newest full release of the line; `latest`:
- in a registry, only on the cell whose PyTorch can use an AMD GPU: the amd source's newest ROCm line that
  has PyTorch ROCm wheel pins, on the matrix default arch (the debian lane's torch is Debian's CPU build, so
  `docker pull rocmig/train` onto an MI300X must not fetch it);
- locally, on the cell this host last built (`buildctl build`, `make images`) or pulled, so
  `docker run rocmig/serve` runs what you have (tag_local).
`docs/tags.md` is generated from matrix.yaml: `python -m buildctl tags --write`; a unit test fails when the
page is stale.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from docker import DockerClient

from buildctl.load import Project
from buildctl.model import version_tuple
from buildctl.plan import REPOSITORY, Cell, Selection, make_plan
from buildctl.results import cell_fields

TAGS_DOC = Path("docs") / "tags.md"
LATEST = "latest"


def latest_line(project: Project) -> str | None:
    """The ROCm line whose cells carry `latest` in a registry: the newest amd line with torch pins."""
    lines = [r.version for r in project.matrix.rocm if r.source == "amd" and r.torch is not None]
    return max(lines, key=version_tuple) if lines else None


def is_latest(project: Project, cell: Cell) -> bool:
    """True when `cell` gets `latest` in a registry (see the module doc)."""
    return (cell.release.source == "amd" and cell.release.torch is not None
            and cell.release.version == latest_line(project) and cell.arch_name == project.matrix.default.arch)


def final_tags(project: Project, cell: Cell) -> list[str]:
    """Tags (without repository) a promoted cell gets in a registry: full, moving alias, and `latest` for
    the amd lane's newest GPU-torch cell on the default arch."""
    tags = [cell.tag, *cell.alias_tags]
    if is_latest(project, cell):
        tags.append(LATEST)
    return tags


def tag_local(client: DockerClient, cells: list[Cell]) -> list[str]:
    """Point `rocmig/<role>:latest` and the ROCm-line alias of each role at the cell of `cells` just built or
    pulled (of several cells of a role, the last one). Returns one line per role saying where they point,
    and one per image a moved tag left untagged (removed, or kept while a container uses it).
    Cells whose image is absent are passed over."""
    import docker.errors

    from buildctl.engine import drop_untagged

    chosen: dict[str, Cell] = {}
    for cell in cells:
        chosen[cell.role] = cell
    lines = []
    for role, cell in chosen.items():
        try:
            image = client.images.get(cell.ref)
        except docker.errors.ImageNotFound:
            continue
        moved = []
        for tag in (*cell.alias_tags, LATEST):
            try:
                moved.append(client.images.get(f"{REPOSITORY}/{role}:{tag}").id)
            except docker.errors.ImageNotFound:
                pass
            image.tag(f"{REPOSITORY}/{role}", tag)
        lines.append(f"{REPOSITORY}/{role}:{LATEST} -> {cell.ref}")
        for old in dict.fromkeys(i for i in moved if i != image.id):
            note = drop_untagged(client, old)
            if note:
                lines.append(f"{REPOSITORY}/{role}: {note}")
    return lines


def tags_json(project: Project) -> dict[str, Any]:
    """Every planned cell with its registry tags (for `buildctl tags --json`)."""
    plan = make_plan(project, Selection())
    return {"latest": {"source": "amd", "rocm": latest_line(project), "arch": project.matrix.default.arch},
            "cells": [{**cell_fields(c), "tags": final_tags(project, c)} for c in plan.cells]}


def final_refs(project: Project, cell: Cell, repository: str = REPOSITORY) -> list[str]:
    """`<repository>/<role>:<tag>` for each of final_tags (repository e.g. `127.0.0.1:5000/rocmig`)."""
    return [f"{repository}/{cell.role}:{t}" for t in final_tags(project, cell)]


def _support(cell: Cell) -> str:
    """The cell's lifecycle for the tags page: **deprecated** with its end-of-life date, else the status."""
    what, support = cell.support
    if support.status == "deprecated":
        return f"**deprecated** ({what}): not rebuilt after {support.end_of_life}"
    return support.status


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
        "moves to the newest full release of its line. The debian source's tags end in `-debian`.",
        "",
        f"`latest` in a registry is only on cells whose PyTorch can use an AMD GPU: source amd, ROCm "
        f"{latest_line(project)}, {project.matrix.default.arch}. The debian lane (Debian's CPU PyTorch) never "
        "gets it there.",
        "Locally, `buildctl build` / `make images` and `buildctl pull` point `latest` and the alias at the cell",
        "they built or fetched, so `docker run rocmig/<role>` runs what this host has.",
        "The support column is the cell's lifecycle (docs/support.md): a **deprecated** tag stops being rebuilt",
        "on the date it names.",
        "",
    ]
    for role, spec in project.images.items():
        cells = [c for c in plan.cells if c.role == role]
        lines += [f"## {REPOSITORY}/{role}", "", spec.description, "",
                  "| tag | aliases | source | ROCm | arch | OS | support |", "|---|---|---|---|---|---|---|"]
        for c in cells:
            aliases = ", ".join(f"`{t}`" for t in final_tags(project, c)[1:])
            lines.append(f"| `{c.tag}` | {aliases} | {c.release.source} | {c.release.full} | {c.arch_name} "
                         f"({c.arch.family}) | {c.release.os_version} | {_support(c)} |")
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
