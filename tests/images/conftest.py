"""Image tests (testinfra) run against containers started from the built images of the selected slice.

The slice is the one `make images` built: ROCMIG_SOURCE / ROCMIG_ROCM / ROCMIG_ARCH (Makefile passes
SOURCE / ROCM / ARCH), defaulting to matrix.yaml's default cell. A selected image that is not built is a
failure, not a skip: `make test` builds the slice first.
"""

from __future__ import annotations

import os
import subprocess
import uuid
from pathlib import Path

import pytest

from buildctl.cli import narrow_to_default_source
from buildctl.load import load_project
from buildctl.plan import Cell, Selection, make_plan

ROOT = Path(__file__).resolve().parents[2]


def _docker(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["docker", *args], capture_output=True, text=True)


def slice_cells(role: str) -> list[Cell]:
    """The cells of `role` in the selected slice (those `make images` built); [] when ROCMIG_IMAGES
    names roles and `role` is not one of them."""
    roles = os.environ.get("ROCMIG_IMAGES", "").split()
    if roles and role not in roles:
        return []
    project = load_project(ROOT)
    d = project.matrix.default
    env = os.environ
    selection = Selection(
        tuple(env["ROCMIG_SOURCE"].split()) if env.get("ROCMIG_SOURCE") else (),
        tuple(env.get("ROCMIG_ROCM", d.rocm).split()),
        tuple(env.get("ROCMIG_ARCH", d.arch).split()),
        (role,))
    return list(make_plan(project, narrow_to_default_source(project, selection)).cells)


@pytest.fixture(scope="session")
def docker_engine():
    if _docker("info").returncode != 0:
        pytest.fail("no Docker engine answers: image tests need one (.ci/run and scripts/setup-docker.sh start it)")


def image_under_test(ref: str) -> str:
    """The image to test for cell reference `ref`: `ref` itself, or its registry copy when
    ROCMIG_IMAGE_REPOSITORY is set (e.g. `127.0.0.1:5000/rocmig`; ROCMIG_IMAGE_TAG_SUFFIX, e.g. `-staging`,
    is appended to the tag). ROCMIG_IMAGE_REFS (space-separated cell refs) limits the mapping to those cells;
    the others are tested as built. `buildctl push` sets all three to test the pulled staging copy of the
    cell it is about to promote."""
    repository = os.environ.get("ROCMIG_IMAGE_REPOSITORY")
    only = os.environ.get("ROCMIG_IMAGE_REFS")
    if not repository or (only is not None and ref not in only.split()):
        return ref
    name, tag = ref.rsplit(":", 1)
    return f"{repository}/{name.split('/', 1)[1]}:{tag}{os.environ.get('ROCMIG_IMAGE_TAG_SUFFIX', '')}"


def start_container(ref: str, extra: tuple[str, ...] = ()) -> str:
    """Start `ref` (or its registry copy: image_under_test) detached (sleeping) and return the container name;
    fails the test if the image is absent."""
    ref = image_under_test(ref)
    if _docker("image", "inspect", ref).returncode != 0:
        pytest.fail(f"image {ref} is not built: run `make images` first")
    name = f"rocmig-test-{uuid.uuid4().hex[:8]}"
    result = _docker("run", "-d", "--name", name, *extra, ref, "sleep", "infinity")
    assert result.returncode == 0, result.stderr
    return name


@pytest.fixture
def container_for():
    """Factory: container_for(cell) -> testinfra host of a running container of that cell's image."""
    import testinfra

    names: list[str] = []

    def make(cell: Cell):
        name = start_container(cell.ref)
        names.append(name)
        return testinfra.get_host(f"docker://{name}")

    yield make
    for name in names:
        _docker("rm", "-f", name)


def inspect_image(ref: str) -> dict:
    """`docker image inspect` of ref as a dict."""
    import json

    result = _docker("image", "inspect", image_under_test(ref))
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)[0]


TRAIN_IMAGE = os.environ.get("ROCMIG_TRAIN_IMAGE", "rocmig/train:rocm7.2.4-gfx942-debian")


@pytest.fixture(scope="module")
def train_client():
    """A docker SDK client whose engine holds TRAIN_IMAGE ($ROCMIG_TRAIN_IMAGE); skips, naming why, otherwise."""
    import docker

    try:
        client = docker.from_env()
        client.ping()
    except docker.errors.DockerException as exc:
        pytest.skip(f"no Docker engine answers: {exc}")
    try:
        client.images.get(TRAIN_IMAGE)
    except docker.errors.ImageNotFound:
        pytest.skip(f"train image {TRAIN_IMAGE} is not built here (set ROCMIG_TRAIN_IMAGE or build it first)")
    return client
