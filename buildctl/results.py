"""JSON results of buildctl commands (`--json`): one envelope with a schema version, cells by coordinates.

Every document is `{"schema_version": 1, "kind": "<command>", ...}`; each cell in it carries
`image, source, rocm, full, arch, ref, tag` (cell_fields). A consumer checks schema_version before reading;
new keys may appear within a version, none are renamed or removed.
"""

from __future__ import annotations

from typing import Any

from buildctl.plan import Cell

SCHEMA_VERSION = 1


def cell_fields(cell: Cell) -> dict[str, str]:
    """The coordinates of a cell every JSON result carries: image role, source, ROCm line, full release,
    gfx arch, full reference and tag."""
    return {"image": cell.role, "source": cell.release.source, "rocm": cell.release.version,
            "full": cell.release.full, "arch": cell.arch_name, "ref": cell.ref, "tag": cell.tag}


def document(kind: str, body: dict[str, Any]) -> dict[str, Any]:
    """The envelope of one command's JSON result: schema_version and kind first, then `body`."""
    return {"schema_version": SCHEMA_VERSION, "kind": kind, **body}
