"""The golden renders under tests/unit/golden/<role>/<tag>/ and the one comparison every golden test makes."""

from __future__ import annotations

import os
from pathlib import Path

from buildctl.plan import Cell

GOLDEN = Path(__file__).parent / "golden"
COMPARED = ("Dockerfile", "rocmig/apt-setup.sh")


def assert_golden(out: Path, cell: Cell) -> None:
    """Each COMPARED file of the render `out` of `cell` equals its golden copy, and a file the render does
    not write has none. UPDATE_GOLDEN=1 in the environment writes the render as the new golden copy first."""
    for name in COMPARED:
        produced, golden = out / name, GOLDEN / cell.role / cell.tag / name
        if not produced.exists():
            assert not golden.exists(), f"{golden}: the render writes no {name}"
            continue
        if os.environ.get("UPDATE_GOLDEN"):
            golden.parent.mkdir(parents=True, exist_ok=True)
            golden.write_bytes(produced.read_bytes())
        assert produced.read_text() == golden.read_text(), f"{golden} is stale: re-render with UPDATE_GOLDEN=1"
