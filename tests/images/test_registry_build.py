"""Build engine on the real engine: a failing cell keeps its old tag, its full log, shows the tail; the
content key skips a cell whose inputs are unchanged (run in a snapshot of the project)."""

from __future__ import annotations

import pytest

from tests.images.test_registry import _image_id, _snapshot, buildctl

pytestmark = [pytest.mark.docker, pytest.mark.usefixtures("docker_engine")]
DEV = "rocmig/dev:rocm7.2.4-gfx942-debian"


def test_failed_cell_keeps_its_tag_and_log_and_shows_the_tail(tmp_path):
    root = _snapshot(tmp_path, "project")
    settle = buildctl("--root", str(root), "build", "--image", "dev", "--no-apt-check-valid-until",
                      "--out", str(tmp_path / "settle"), timeout=1800)
    assert settle.returncode == 0, settle.stderr[-3000:]
    before = _image_id(DEV)
    template = root / "templates" / "dev.Dockerfile.j2"
    template.write_text(template.read_text() + "RUN echo 'rocmig-test: this step fails on purpose' >&2 && exit 3\n")
    out = tmp_path / "out"
    result = buildctl("--root", str(root), "build", "--image", "dev", "--no-apt-check-valid-until",
                      "--out", str(out), timeout=1800)
    assert result.returncode == 5, result.stderr[-3000:]
    assert "rocmig/base:rocm7.2.4-gfx942-debian: cached" in result.stderr
    assert f"{DEV}: failed" in result.stderr and "docker buildx bake exited 1" in result.stderr
    assert "rocmig-test: this step fails on purpose" in result.stderr  # the tail is shown
    log = out / "logs" / "dev_rocm7_2_4-gfx942-debian.log"
    assert "exit code: 3" in log.read_text(errors="replace")
    assert _image_id(DEV) == before  # no tag moved to a half-built image


def test_unknown_builder_is_refused_before_building():
    result = buildctl("build", "--image", "dev", "--builder", "no-such-builder")
    assert result.returncode == 2 and "--builder: no buildx builder named 'no-such-builder'" in result.stderr


def test_named_builder_runs_bake_on_it(tmp_path):
    """The engine's own builder (`default`, docker driver) named explicitly: a changed recipe rebuilds dev
    through `bake --builder default --load`; the dev image is restored afterwards."""
    root = _snapshot(tmp_path, "project")
    args = ("build", "--image", "dev", "--no-apt-check-valid-until", "--out", str(tmp_path / "out"))
    recipe = sorted((root / "recipes" / "migrate").rglob("*.py"))[0]
    original = recipe.read_text()
    recipe.write_text(original + "\n# changed for the --builder test\n")
    try:
        result = buildctl("--root", str(root), *args, "--builder", "default", timeout=1800)
        assert result.returncode == 0, result.stderr[-3000:]
        assert f"{DEV}: built" in result.stderr
        assert "--builder default --load" in "".join(
            line for line in (tmp_path / "out" / "logs" / "dev_rocm7_2_4-gfx942-debian.log").open()
            if line.startswith("# buildctl:"))
    finally:
        recipe.write_text(original)
        restore = buildctl("--root", str(root), *args, timeout=1800)
        assert restore.returncode == 0, restore.stderr[-3000:]
