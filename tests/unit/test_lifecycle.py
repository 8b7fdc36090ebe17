"""Support lifecycle as data: matrix.yaml `support` is validated, a cell takes the further-along status of
its release and arch, deprecated cells warn, end-of-life cells are excluded and refused (exit 2) unless
--allow-eol, docs/support.md is generated (staleness test) and docs/tags.md marks deprecated tags."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from buildctl.errors import ConfigError
from buildctl.lifecycle import (
    SUPPORT_DOC,
    deprecation_warnings,
    refuse_end_of_life,
    support_markdown,
)
from buildctl.load import load_project
from buildctl.plan import END_OF_LIFE, Selection, make_plan
from buildctl.tags import tags_markdown

ROOT = Path(__file__).resolve().parents[2]
DEPRECATED_61 = ('support: {status: deprecated, since: 2026-09-01, end_of_life: 2027-03-01, '
                 'note: "Oldest amd line; its PyTorch index stops at torch 2.6."}')


def copy_project(tmp_path: Path, old: str = "", new: str = "") -> Path:
    root = tmp_path / "project"
    for part in ("images", "templates"):
        shutil.copytree(ROOT / part, root / part)
    text = (ROOT / "matrix.yaml").read_text()
    if old:
        assert old in text, old
        text = text.replace(old, new, 1)
    (root / "matrix.yaml").write_text(text)
    return root


def test_docs_support_md_is_generated_from_the_matrix():
    project = load_project(ROOT)
    assert (ROOT / SUPPORT_DOC).read_text() == support_markdown(project), \
        "docs/support.md is stale: run `python -m buildctl support --write`"


def test_every_release_and_arch_is_on_the_page():
    project = load_project(ROOT)
    page = support_markdown(project)
    for r in project.matrix.rocm:
        assert f"| {r.source} | {r.version} | {r.full} | {r.os_version} | {r.support.status} |" in page
    for name, a in project.matrix.archs.items():
        assert f"| {name} | {a.family} |" in page and a.support.status in page


def test_deprecated_cells_warn_with_their_end_of_life_date():
    project = load_project(ROOT)
    plan = make_plan(project, Selection(("amd",), ("6.1",), ("gfx942",), ("base",)))
    (warning,) = deprecation_warnings(plan)
    assert "amd 6.1 is deprecated since 2026-09-01; end of life on 2027-03-01" in warning
    assert deprecation_warnings(make_plan(project, Selection(("amd",), ("7.2",), ("gfx942",), ()))) == []


def test_tags_page_marks_deprecated_tags():
    project = load_project(ROOT)
    page = tags_markdown(project)
    rows = [line for line in page.splitlines() if line.startswith("| `rocm6.1.2-")]
    assert rows and all("**deprecated** (amd 6.1): not rebuilt after 2027-03-01" in r for r in rows)
    assert all("deprecated" not in line for line in page.splitlines() if line.startswith("| `rocm7.2.4-"))


def test_end_of_life_release_is_excluded_and_refused(tmp_path):
    root = copy_project(tmp_path, DEPRECATED_61, "support: {status: end-of-life, since: 2026-11-01}")
    project = load_project(root)
    plan = make_plan(project, Selection())
    eol = [e for e in plan.excluded if e.rule == END_OF_LIFE]
    assert eol and {e.cell.release.version for e in eol} == {"6.1"}
    assert "amd 6.1 is end-of-life since 2026-11-01" in eol[0].reason
    assert not any(c.release.version == "6.1" and c.release.source == "amd" for c in plan.cells)
    with pytest.raises(ConfigError, match="amd 6.1: end-of-life"):
        refuse_end_of_life(make_plan(project, Selection(("amd",), ("6.1",), ("gfx942",), ("base",))))
    allowed = make_plan(project, Selection(("amd",), ("6.1",), ("gfx942",), ("base",)), allow_eol=True)
    assert [c.ref for c in allowed.cells] == ["rocmig/base:rocm6.1.2-gfx942"]
    proc = subprocess.run([sys.executable, "-m", "buildctl", "--root", str(root), "plan", "--out", str(tmp_path / "b"),
                           "--source", "amd", "--rocm", "6.1", "--image", "base"],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 2 and "--allow-eol" in proc.stderr


def test_an_end_of_life_arch_ends_its_cells_on_every_release(tmp_path):
    old = '  gfx90a: {family: CDNA2, products: [MI210, MI250, MI250X], wavefront: 64, lds_bytes: 65536, first_rocm: "5.0"}'
    root = copy_project(tmp_path, old, old[:-1] + ", support: {status: end-of-life, since: 2026-10-01}}")
    plan = make_plan(load_project(root), Selection())
    assert not any(c.arch_name == "gfx90a" for c in plan.cells)
    assert {e.cell.support[0] for e in plan.excluded if e.rule == END_OF_LIFE} == {"gfx90a"}


@pytest.mark.parametrize("support, message", [
    ("{status: deprecated, since: 2026-09-01}", "end_of_life: required when status is deprecated"),
    ("{status: end-of-life}", "since: required when status is end-of-life"),
    ("{status: retired, since: 2026-09-01}", "'retired' is not allowed"),
    ("{status: deprecated, since: 2026-09-01, end_of_life: 2026-01-01}", "is before since"),
])
def test_bad_lifecycle_is_one_line_naming_the_key(tmp_path, support, message):
    root = copy_project(tmp_path, DEPRECATED_61, f"support: {support}")
    with pytest.raises(ConfigError) as exc:
        load_project(root)
    assert "matrix.yaml" in str(exc.value) and "support" in str(exc.value) and message in str(exc.value)
