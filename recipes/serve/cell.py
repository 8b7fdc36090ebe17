"""The image's cell, as `buildctl render` wrote it: /etc/rocmig/cell.json and /etc/rocmig/archs.json."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ETC = Path("/etc/rocmig")


@dataclass(frozen=True)
class Cell:
    """The facts of the image's cell that launch decisions use.

    arch: gfx arch the image's kernels were built for ('gfx942'); family: 'CDNA3', 'RDNA3', ...;
    wavefront: 64 or 32 (lanes); source: 'amd' (ROCm PyTorch) or 'debian' (Debian's CPU PyTorch);
    ref: the image reference ('rocmig/serve:rocm7.2.4-gfx942'); components: what the image holds
    ('sglang', 'sgl-kernel', 'aiter'); archs: the matrix's arch table (name -> family, wavefront, ...);
    excluded: (component, reason) for each component the cell left out.
    """

    arch: str
    family: str
    wavefront: int
    source: str
    rocm_full: str
    ref: str
    components: tuple[str, ...]
    archs: dict[str, dict[str, Any]]
    excluded: tuple[tuple[str, str], ...] = ()

    @property
    def cdna(self) -> bool:
        """True for Instinct (CDNA) archs, whose wavefront is 64."""
        return self.family.startswith("CDNA")

    def ref_for(self, arch: str) -> str:
        """This image's reference with `arch` in place of the cell's ('rocmig/serve:rocm7.2.4-gfx1100')."""
        name, tag = self.ref.rsplit(":", 1)
        return f"{name}:{tag.replace(self.arch, arch, 1)}"


def load_cell(etc: Path = ETC) -> Cell:
    """Read etc/cell.json and etc/archs.json (JSON objects written by buildctl.render).

    Raises OSError when a file is missing or unreadable, KeyError / ValueError when it lacks a key.
    """
    data = json.loads((etc / "cell.json").read_text(encoding="utf-8"))
    archs = json.loads((etc / "archs.json").read_text(encoding="utf-8"))
    return Cell(arch=data["arch"], family=data["family"], wavefront=int(data["wavefront"]),
                source=data["source"], rocm_full=data["rocm_full"], ref=data["ref"],
                components=tuple(data["components"]), archs=archs,
                excluded=tuple((e["component"], e["reason"]) for e in data.get("excluded_components", [])))
