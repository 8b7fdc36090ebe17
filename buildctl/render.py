"""Render each cell's Dockerfile and build context (third arrow of the flow).

Output: `<out>/<role>/<tag>/Dockerfile` plus the context beside it:
  rocmig/cell.json     the cell's coordinates (copied to /etc/rocmig/ in the image)
  rocmig/archs.json    the matrix's arch table (wavefront, LDS bytes, ...) for recipes
  rocmig/apt-setup.sh  the source's apt configuration (base images only)
  rocmig/<file>        files from templates/files/ listed in image.yaml `files` (e.g. torch_guard.py)
  <folder>/            project folders listed in image.yaml `context_dirs` (recipes/migrate, kernels, ...)
Rendering is deterministic (byte-identical on re-run) and atomic per cell: a cell's folder is written
beside the old one and swapped in whole.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import tempfile
from pathlib import Path

import jinja2

from buildctl.load import Project
from buildctl.plan import Cell

_SKIP = shutil.ignore_patterns("__pycache__", "*.pyc", ".pytest_cache")


@functools.lru_cache(maxsize=8)
def _environment(templates: Path) -> jinja2.Environment:
    """One Jinja environment per templates folder, so each template compiles once per process (its
    loader re-reads a template whose file changed)."""
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(templates),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        autoescape=False,
    )


def cell_dir(out_root: Path, cell: Cell) -> Path:
    """Where a cell's Dockerfile and context live: <out_root>/<role>/<tag>."""
    return out_root / cell.role / cell.tag


def _write(path: Path, text: str, mode: int = 0o644) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    os.chmod(path, mode)


def _json(data) -> str:
    return json.dumps(data, indent=2, sort_keys=True) + "\n"


def render_cell(project: Project, cell: Cell, out_root: Path) -> Path:
    """Render one cell into `cell_dir(out_root, cell)`; returns that folder.

    Raises jinja2.UndefinedError when a template uses a name the cell does not define (StrictUndefined).
    """
    env = _environment(project.root / "templates")
    final = cell_dir(out_root, cell)
    final.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{cell.tag}.", dir=final.parent))
    try:
        dockerfile = env.get_template(cell.image.template).render(
            cell=cell, project_frameworks=project.matrix.frameworks)
        _write(staging / "Dockerfile", dockerfile)
        _write(staging / "rocmig" / "cell.json", _json(cell.coordinates()))
        archs = {name: arch.model_dump() for name, arch in project.matrix.archs.items()}
        _write(staging / "rocmig" / "archs.json", _json(archs))
        if cell.image.parent is None:
            setup = env.get_template(f"partials/apt-setup-{cell.release.source}.sh.j2").render(cell=cell)
            _write(staging / "rocmig" / "apt-setup.sh", setup, 0o755)
            prune = env.get_template("partials/prune-archs.sh.j2").render(cell=cell)
            _write(staging / "rocmig" / "prune-archs.sh", prune, 0o755)
        for name in cell.image.files:
            shutil.copy(project.root / "templates" / "files" / name, staging / "rocmig" / name)
        for name in cell.image.rendered:
            text = env.get_template(f"partials/{name}.j2").render(cell=cell)
            _write(staging / "rocmig" / name, text, 0o755 if name.endswith(".sh") else 0o644)
        for folder in cell.image.context_dirs:
            shutil.copytree(project.root / folder, staging / folder, ignore=_SKIP)
        os.chmod(staging, 0o755)
        if final.exists():
            old = final.with_name(final.name + ".old")
            shutil.rmtree(old, ignore_errors=True)
            final.rename(old)
            staging.rename(final)
            shutil.rmtree(old)
        else:
            staging.rename(final)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return final
