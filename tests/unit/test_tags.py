"""Tags of a cell and the generated docs/tags.md (fails when the page is stale)."""

from pathlib import Path

from buildctl.load import load_project
from buildctl.plan import Selection, make_plan
from buildctl.tags import TAGS_DOC, final_refs, final_tags, tags_markdown

ROOT = Path(__file__).resolve().parents[2]


def test_docs_tags_md_is_generated_from_the_matrix():
    project = load_project(ROOT)
    assert (ROOT / TAGS_DOC).read_text() == tags_markdown(project), \
        "docs/tags.md is stale: run `python -m buildctl tags --write`"


def test_full_alias_and_latest_tags():
    """In a registry `latest` is only on the amd lane's newest GPU-torch line on the default arch: never on
    the debian lane (Debian's CPU torch), never on an older line or another arch."""
    project = load_project(ROOT)
    d = project.matrix.default
    cells = make_plan(project, Selection((d.source,), (d.rocm,), (d.arch, "gfx90a"), ("dev", "train"))).cells
    default = next(c for c in cells if c.arch_name == d.arch and c.role == "train")
    other = next(c for c in cells if c.arch_name == "gfx90a" and c.role == "dev")
    assert final_tags(project, default) == ["rocm7.2.4-gfx942-debian", "rocm7.2-gfx942-debian"]
    assert final_tags(project, other) == ["rocm7.2.4-gfx90a-debian", "rocm7.2-gfx90a-debian"]
    assert final_refs(project, other, "127.0.0.1:5000/rocmig")[0] == "127.0.0.1:5000/rocmig/dev:rocm7.2.4-gfx90a-debian"
    amd = make_plan(project, Selection(("amd",), ("6.2",), ("gfx942",), ("base",))).cells[0]
    assert final_tags(project, amd) == ["rocm6.2.4-gfx942", "rocm6.2-gfx942"]
    newest = make_plan(project, Selection(("amd",), ("7.2",), ("gfx942", "gfx90a"), ("train",))).cells
    by_arch = {c.arch_name: final_tags(project, c) for c in newest}
    assert by_arch["gfx942"] == ["rocm7.2.4-gfx942", "rocm7.2-gfx942", "latest"] and newest[0].release.torch
    assert "latest" not in by_arch["gfx90a"]
    with_latest = [c for c in make_plan(project, Selection()).cells if "latest" in final_tags(project, c)]
    assert len({c.role for c in with_latest}) == len(with_latest)  # one latest per role
    assert all(c.release.source == "amd" and c.release.torch is not None for c in with_latest)


def test_page_lists_every_planned_cell_and_excluded_ones_with_reason():
    project = load_project(ROOT)
    page = tags_markdown(project)
    plan = make_plan(project, Selection())
    for cell in plan.cells:
        assert f"| `{cell.tag}` |" in page
    for ex in plan.excluded:
        assert f"`{ex.cell.ref}`" in page and ex.reason in page
