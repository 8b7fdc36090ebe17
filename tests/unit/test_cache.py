"""Content keys: which inputs change a cell's key, and the build/skip decisions of a plan."""

import os
import shutil
from pathlib import Path

import pytest

from buildctl.cache import CACHE_KEY_LABEL, ImageFacts, cache_key, context_digest, decide_plan
from buildctl.load import load_project
from buildctl.plan import Selection, make_plan
from buildctl.render import cell_dir, render_cell

ROOT = Path(__file__).resolve().parents[2]
ARGS = {"APT_CHECK_VALID_UNTIL": "false"}
OS_ID = "sha256:" + "a" * 64


@pytest.fixture
def rendered(tmp_path):
    project = load_project(ROOT)
    plan = make_plan(project, Selection(("debian",), ("7.2",), ("gfx942",), ("base", "dev")))
    for cell in plan.cells:
        render_cell(project, cell, tmp_path)
    return plan, tmp_path


def test_key_is_stable_and_each_input_changes_it(rendered):
    plan, out = rendered
    folder = cell_dir(out, plan.cells[1])
    key = cache_key(folder, ARGS, OS_ID)
    assert key == cache_key(folder, dict(reversed(list(ARGS.items()))), OS_ID)
    assert key.startswith("sha256:") and len(key) == 7 + 64
    assert cache_key(folder, {**ARGS, "APT_MIRROR": "http://m"}, OS_ID) != key
    assert cache_key(folder, ARGS, "sha256:" + "b" * 64) != key
    assert cache_key(folder, {**ARGS, "MAX_JOBS": "16"}, OS_ID) == key  # how, not what
    recipe = next(p for p in (folder / "recipes").rglob("*") if p.is_file())
    recipe.write_text(recipe.read_text() + "\n# touched\n")
    assert cache_key(folder, ARGS, OS_ID) != key


def test_mtime_and_location_do_not_change_the_key_but_mode_does(rendered, tmp_path):
    plan, out = rendered
    folder = cell_dir(out, plan.cells[0])
    before = context_digest(folder)
    copy = tmp_path / "elsewhere"
    shutil.copytree(folder, copy)
    for path in copy.rglob("*"):
        os.utime(path, (1_000_000_000, 1_000_000_000))  # other mtimes, other absolute path
    assert context_digest(copy) == before
    dockerfile = copy / "Dockerfile"
    dockerfile.chmod(0o755)
    assert context_digest(copy) != before


def test_missing_folder_and_empty_parent_are_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="rendered build folder missing"):
        context_digest(tmp_path / "nope")
    (tmp_path / "x").mkdir()
    with pytest.raises(ValueError, match="parent_id"):
        cache_key(tmp_path / "x", {}, "")


class Store:
    """An image store as a dict ref -> ImageFacts (the Lookup the cache takes)."""

    def __init__(self, images):
        self.images = dict(images)

    def __call__(self, ref):
        return self.images.get(ref)


def _keys(plan, out, base_id):
    base, dev = plan.cells
    kb = cache_key(cell_dir(out, base), ARGS, OS_ID)
    kd = cache_key(cell_dir(out, dev), ARGS, base_id)
    return base, dev, kb, kd


def test_plan_skips_built_keys_and_rebuilds_dirty_cells_with_descendants(rendered):
    plan, out = rendered
    base_id = "sha256:" + "c" * 64
    base, dev, kb, kd = _keys(plan, out, base_id)
    store = Store({base.os_image: ImageFacts(OS_ID, {}),
                   base.ref: ImageFacts(base_id, {CACHE_KEY_LABEL: kb}),
                   dev.ref: ImageFacts("sha256:" + "d" * 64, {CACHE_KEY_LABEL: kd})})
    decisions = decide_plan(plan, out, ARGS, store)
    assert [d.action for d in decisions] == ["skip", "skip"]
    assert "up to date" in decisions[1].reason and decisions[1].key == kd

    # A changed recipe dirties dev only.
    recipe = next(p for p in (cell_dir(out, dev) / "recipes").rglob("*") if p.is_file())
    recipe.write_text(recipe.read_text() + "\n# changed\n")
    decisions = decide_plan(plan, out, ARGS, store)
    assert [d.action for d in decisions] == ["skip", "build"]
    assert "inputs changed" in decisions[1].reason

    # A changed build arg dirties base, and dev with it (its key is not known before base is built).
    decisions = decide_plan(plan, out, {**ARGS, "APT_MIRROR": "http://snapshot"}, store)
    assert [d.action for d in decisions] == ["build", "build"]
    assert decisions[1].key is None and "parent rocmig/base" in decisions[1].reason


def test_remote_lookup_counts_as_built_and_reasons_name_the_state(rendered):
    plan, out = rendered
    base_id = "sha256:" + "e" * 64
    base, dev, kb, kd = _keys(plan, out, base_id)
    local = Store({base.os_image: ImageFacts(OS_ID, {}), base.ref: ImageFacts(base_id, {})})
    remote = Store({base.ref: ImageFacts(base_id, {CACHE_KEY_LABEL: kb}),
                    dev.ref: ImageFacts("sha256:" + "f" * 64, {CACHE_KEY_LABEL: kd})})
    decisions = decide_plan(plan, out, ARGS, local, remote, "127.0.0.1:5000")
    assert [(d.action, d.where) for d in decisions] == [("skip", "127.0.0.1:5000"), ("skip", "127.0.0.1:5000")]
    only_local = decide_plan(plan, out, ARGS, local)
    assert "no io.rocmig.cache-key label" in only_local[0].reason
    assert decide_plan(plan, out, ARGS, Store({}))[0].reason.startswith("parent image debian:trixie is not built")
