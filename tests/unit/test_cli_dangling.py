"""No dangling images: when `latest` and the ROCm-line alias move to the cell just built or pulled
(tags.tag_local), the image they named goes when no tag names it any more, and stays (said so) while a
container uses it. Real images in the local engine (two one-file `docker import`s) under a throwaway role."""

from __future__ import annotations

import dataclasses
import io
import subprocess
import tarfile
import uuid
from pathlib import Path

import pytest

from buildctl.load import load_project
from buildctl.plan import REPOSITORY, Cell, Selection, make_plan
from buildctl.tags import tag_local

ROOT = Path(__file__).resolve().parents[2]


def _docker_answers() -> bool:
    return subprocess.run(["docker", "info"], capture_output=True, check=False).returncode == 0


pytestmark = pytest.mark.skipif(not _docker_answers(), reason="needs a Docker engine (scripts/setup-docker.sh)")


def _image(ref: str, content: str, made: list[str]) -> str:
    """A one-file image imported as `ref`; its ID (also added to `made`, for the clean-up)."""
    data = io.BytesIO()
    with tarfile.open(fileobj=data, mode="w") as tar:
        blob = content.encode()
        info = tarfile.TarInfo("probe.txt")
        info.size = len(blob)
        tar.addfile(info, io.BytesIO(blob))
    out = subprocess.run(["docker", "import", "-", ref], input=data.getvalue(), capture_output=True, check=True)
    made.append(out.stdout.decode().strip())
    return made[-1]


@pytest.fixture
def made():
    """IDs of the images a test imports; each is removed afterwards (with its probe containers)."""
    import docker

    ids: list[str] = []
    yield ids
    client = docker.from_env()
    for image_id in ids:
        for c in client.containers.list(all=True, filters={"ancestor": image_id}):
            c.remove(force=True)
        try:
            client.images.remove(image_id, force=True)
        except docker.errors.ImageNotFound:
            pass


@pytest.fixture
def cell():
    """A real plan cell under a role no one else uses."""
    real = make_plan(load_project(ROOT), Selection()).cells[0]
    probe: Cell = dataclasses.replace(real, image=real.image.model_copy(update={"role": f"probe-{uuid.uuid4().hex[:8]}"}))
    return probe


def _rebuild(cell: Cell, made: list[str]) -> tuple[str, str]:
    """The cell built once (full tag, alias, latest: image A), then again (full tag and alias: image B)."""
    import docker

    old = _image(cell.ref, f"first {cell.role}", made)
    image = docker.from_env().images.get(old)
    for tag in (*cell.alias_tags, "latest"):
        image.tag(f"{REPOSITORY}/{cell.role}", tag)
    new = _image(cell.ref, f"second {cell.role}", made)
    for ref in cell.local_refs[1:]:
        subprocess.run(["docker", "tag", new, ref], check=True)
    return old, new


def test_the_image_latest_named_goes_when_latest_moves(cell, made):
    import docker

    old, new = _rebuild(cell, made)
    lines = tag_local(docker.from_env(), [cell])
    assert lines[0] == f"{REPOSITORY}/{cell.role}:latest -> {cell.ref}"
    assert lines[1] == f"{REPOSITORY}/{cell.role}: removed the untagged image {old[:19]} it replaced", lines
    assert subprocess.run(["docker", "image", "inspect", old], capture_output=True).returncode != 0
    latest = subprocess.run(["docker", "image", "inspect", "-f", "{{.Id}}", f"{REPOSITORY}/{cell.role}:latest"],
                            capture_output=True, text=True, check=True).stdout.strip()
    assert latest == new


def test_an_image_a_container_uses_is_kept_and_said(cell, made):
    import docker

    old, _ = _rebuild(cell, made)
    subprocess.run(["docker", "create", old, "/probe.txt"], capture_output=True, check=True)
    lines = tag_local(docker.from_env(), [cell])
    assert len(lines) == 2 and lines[1].startswith(f"{REPOSITORY}/{cell.role}: kept the untagged image {old[:19]}: ")
    assert subprocess.run(["docker", "image", "inspect", old], capture_output=True).returncode == 0
