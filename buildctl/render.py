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
import shlex
import shutil
import tempfile
import traceback
from pathlib import Path

import jinja2

from buildctl.errors import ConfigError
from buildctl.load import Project
from buildctl.plan import Cell

_SKIP = shutil.ignore_patterns("__pycache__", "*.pyc", ".pytest_cache")


def shell_quote(value: object) -> str:
    """The `sh` filter: `value` as one POSIX shell word (shlex.quote). A value of only safe characters
    (letters, digits, `@%+=:,./-_`) comes back unchanged; anything else is single-quoted, so a matrix value
    such as `1.0 && curl http://x | sh` stays one argument and runs nothing."""
    return shlex.quote(str(value))


def double_quoted(value: object) -> str:
    """The `dq` filter: `value` for the inside of a double-quoted string (POSIX shell, or a Dockerfile
    LABEL/ENV value): backslash, double quote, `$` and backtick are backslash-escaped."""
    text = str(value)
    for ch in ("\\", '"', "$", "`"):
        text = text.replace(ch, "\\" + ch)
    return text


@functools.lru_cache(maxsize=8)
def _environment(templates: Path) -> jinja2.Environment:
    """One Jinja environment per templates folder, so each template compiles once per process (its
    loader re-reads a template whose file changed). Filters: `sh` (shell_quote), `dq` (double_quoted)."""
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(templates),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        autoescape=False,
    )
    env.filters["sh"] = shell_quote
    env.filters["dq"] = double_quoted
    return env


def template_error(exc: jinja2.TemplateError, templates: Path, cell: Cell) -> ConfigError:
    """A one-line ConfigError naming the template file and line, the cell and what is wrong (an undefined
    variable, a syntax error, a missing template)."""
    where = ""
    if isinstance(exc, jinja2.TemplateSyntaxError) and exc.filename:
        where = f"{exc.filename}:{exc.lineno}"
    else:
        frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename.endswith(".j2")]
        if frames:
            where = f"{frames[-1].filename}:{frames[-1].lineno}"
    if where.startswith(str(templates)):
        where = "templates" + where[len(str(templates)):]
    if isinstance(exc, jinja2.TemplateNotFound):
        what = f"template {exc.name} not found under {templates}"
    elif isinstance(exc, jinja2.UndefinedError):
        what = f"undefined variable: {exc.message}"
    else:
        what = exc.message or exc.__class__.__name__
    where = where or f"templates/{cell.image.template}"
    return ConfigError(f"{where}: {what} (rendering {cell.ref})")


def cell_dir(out_root: Path, cell: Cell) -> Path:
    """Where a cell's Dockerfile and context live: <out_root>/<role>/<tag>."""
    return out_root / cell.role / cell.tag


def _write(path: Path, text: str, mode: int = 0o644) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    os.chmod(path, mode)


def _json(data: object) -> str:
    return json.dumps(data, indent=2, sort_keys=True) + "\n"


def render_cell(project: Project, cell: Cell, out_root: Path) -> Path:
    """Render one cell into `cell_dir(out_root, cell)`; returns that folder.

    Raises ConfigError (exit 2, one line naming the template, line and variable) when a template uses a
    name the cell does not define (StrictUndefined), has a syntax error or includes a missing template;
    the cell's old folder is then left as it was.
    """
    env = _environment(project.root / "templates")
    final = cell_dir(out_root, cell)
    final.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{cell.tag}.", dir=final.parent))
    try:
        # A source may carry its own template of a role (templates/<source>/<template>).
        own = f"{cell.release.source}/{cell.image.template}"
        template = own if (project.root / "templates" / own).is_file() else cell.image.template
        dockerfile = env.get_template(template).render(
            cell=cell, project_frameworks=project.matrix.frameworks, template_name=template)
        _write(staging / "Dockerfile", dockerfile)
        _write(staging / "rocmig" / "cell.json", _json(cell.coordinates()))
        # The lifecycle (support) is plan data, not image content: it stays out of the context and the key.
        archs = {name: arch.model_dump(exclude={"support"}) for name, arch in project.matrix.archs.items()}
        _write(staging / "rocmig" / "archs.json", _json(archs))
        if cell.image.parent is None:
            setup = env.get_template(f"partials/apt-setup-{cell.release.source}.sh.j2").render(cell=cell)
            _write(staging / "rocmig" / "apt-setup.sh", setup, 0o755)
            prune = env.get_template("partials/prune-archs.sh.j2").render(cell=cell)
            _write(staging / "rocmig" / "prune-archs.sh", prune, 0o755)
        for name in (*cell.image.files, *cell.source.files):
            shutil.copy(project.root / "templates" / "files" / name, staging / "rocmig" / name)
        for name in cell.image.rendered:
            text = env.get_template(f"partials/{name}.j2").render(cell=cell)
            _write(staging / "rocmig" / name, text, 0o755 if name.endswith(".sh") else 0o644)
        for folder in cell.image.context_dirs:
            shutil.copytree(project.root / folder, staging / folder, ignore=_SKIP)
        os.chmod(staging, 0o755)
        _swap(staging, final)
    except jinja2.TemplateError as exc:
        raise template_error(exc, project.root / "templates", cell) from None
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return final


def _swap(staging: Path, final: Path) -> None:
    """Replace `final` by `staging` whole (rename; the old folder is removed after)."""
    if final.exists():
        old = final.with_name(final.name + ".old")
        shutil.rmtree(old, ignore_errors=True)
        final.rename(old)
        staging.rename(final)
        shutil.rmtree(old)
    else:
        staging.rename(final)
