"""Image tests (testinfra) run against containers started from the built images of the selected slice.

The cells come from the JSON file named by ROCMIG_CELLS_FILE, which the caller writes: `make test` writes
`buildctl matrix --json` of the slice `make images` built; `buildctl push` writes the staged cell with
`test_image`, the registry copy (`HOST/rocmig/<role>@sha256:...`) to test instead of the local image.
Without the variable, the slice is every role of buildctl's default selection (buildctl.plan.resolve:
matrix.yaml's default cell), what `make images IMAGES=all` builds. A selected image that is not built is a failure, not a skip:
`make test` builds the slice first.
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import uuid
from pathlib import Path

import pytest

from buildctl.load import load_project
from buildctl.plan import Cell, Selection, make_plan, resolve

ROOT = Path(__file__).resolve().parents[2]
CELLS_FILE_ENV = "ROCMIG_CELLS_FILE"


def _docker(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["docker", *args], capture_output=True, text=True)


@functools.cache
def _selected() -> tuple[tuple[Cell, ...], dict[str, str]]:
    """(cells under test, {cell ref: image to test}) from the cells file, or the default selection."""
    project = load_project(ROOT)
    path = os.environ.get(CELLS_FILE_ENV)
    if not path:
        every_role = Selection(images=tuple(project.images))
        return make_plan(project, resolve(project, every_role).selection).cells, {}
    doc = json.loads(Path(path).read_text())
    if doc.get("schema_version") != 1:
        raise pytest.UsageError(f"{CELLS_FILE_ENV}={path}: schema_version {doc.get('schema_version')!r}, expected 1")
    by_ref = {c.ref: c for c in make_plan(project, Selection()).cells}
    unknown = [c["ref"] for c in doc["cells"] if c["ref"] not in by_ref]
    if unknown:
        raise pytest.UsageError(f"{CELLS_FILE_ENV}={path}: cells not in the matrix: {', '.join(unknown)}")
    cells = tuple(by_ref[c["ref"]] for c in doc["cells"])
    return cells, {c["ref"]: c["test_image"] for c in doc["cells"] if c.get("test_image")}


def slice_cells(role: str) -> list[Cell]:
    """The cells of `role` under test (from the cells file, or the default selection); [] when the slice
    has none of that role."""
    return [c for c in _selected()[0] if c.role == role]


@pytest.fixture(scope="session")
def docker_engine():
    if _docker("info").returncode != 0:
        pytest.fail("no Docker engine answers: image tests need one (.ci/run and scripts/setup-docker.sh start it)")


def image_under_test(ref: str) -> str:
    """The image to test for cell reference `ref`: the cells file's `test_image` for it (the registry copy
    `buildctl push` stages), else `ref` itself."""
    return _selected()[1].get(ref, ref)


def start_container(ref: str, extra: tuple[str, ...] = ()) -> str:
    """Start `ref` (or its registry copy: image_under_test) detached, sleeping in place of its entrypoint,
    and return the container name; fails the test if the image is absent."""
    ref = image_under_test(ref)
    if _docker("image", "inspect", ref).returncode != 0:
        pytest.fail(f"image {ref} is not built: run `make images` first")
    name = f"rocmig-test-{uuid.uuid4().hex[:8]}"
    # --rm: a container whose test process was killed before teardown goes when it stops, and with it the
    # hold it has on its image (an untagged image a container uses cannot be removed by a rebuild).
    result = _docker("run", "-d", "--rm", "--name", name, "--entrypoint", "sleep", *extra, ref, "infinity")
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


def train_image() -> str | None:
    """The train image under test: $ROCMIG_TRAIN_IMAGE, else the slice's train cell (None: not in the slice)."""
    if os.environ.get("ROCMIG_TRAIN_IMAGE"):
        return os.environ["ROCMIG_TRAIN_IMAGE"]
    cells = slice_cells("train")
    return image_under_test(cells[0].ref) if cells else None


@pytest.fixture(scope="module")
def train_client():
    """A docker SDK client whose engine holds the train image under test (train_image()). Skips when the
    slice has no train cell; fails, as for every selected image, when it is not built."""
    import docker

    image = train_image()
    if image is None:
        pytest.skip("the slice has no train cell (ROCMIG_CELLS_FILE / ROCMIG_TRAIN_IMAGE)")
    try:
        client = docker.from_env()
        client.ping()
    except docker.errors.DockerException as exc:
        pytest.fail(f"no Docker engine answers: {exc} (scripts/setup-docker.sh starts one)")
    try:
        client.images.get(image)
    except docker.errors.ImageNotFound:
        pytest.fail(f"train image {image} is not built: run `make images IMAGES=all` first")
    return client
