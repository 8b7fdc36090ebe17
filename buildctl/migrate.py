"""`buildctl migrate`: run the in-image `migrate` recipe (recipes/migrate) in a dev image.

The CUDA tree is mounted read-only at /src, the output folder (created here, so owned by the calling
user) at /out, and the container runs as the calling user's UID:GID.
"""

from __future__ import annotations

import os
from pathlib import Path

import docker

from buildctl.engine import image_exists
from buildctl.errors import BuildError, InputError
from buildctl.plan import Cell

RECIPE_DIR = "/opt/rocmig/recipes/migrate"


def pick_dev_image(client: docker.DockerClient, dev_cells: list[Cell]) -> Cell:
    """The first of `dev_cells` whose image is in the local image store.

    dev_cells: the dev cells of the selected ROCm release, one per requested arch (hipcc in any of
    them compiles for every offload arch). Raises BuildError naming the image to build when none exists.
    """
    for cell in dev_cells:
        if image_exists(client, cell.ref):
            return cell
    first = dev_cells[0]
    raise BuildError(
        f"no dev image for ROCm {first.release.version} ({first.release.source}) is built: build it with "
        f"`buildctl build --source {first.release.source} --rocm {first.release.version} --arch {first.arch_name} "
        f"--image dev` (or `make images`)")


def resolve_src(src: Path) -> Path:
    """The absolute path of a CUDA tree or file. Raises InputError when it does not exist."""
    if not src.exists():
        raise InputError(f"{src}: no such file or folder (give a CUDA source tree or a .cu file)")
    return src.resolve()


def run_migrate(client: docker.DockerClient, cell: Cell, src: Path, out: Path, archs: list[str],
                extra_args: list[str]) -> tuple[int, str]:
    """Run the recipe on `src` (from resolve_src) for `archs`, writing the report into `out`.

    Returns (the recipe's exit code, its output).
    """
    out = out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    command = ["python3", "-m", "migrate", "/src"]
    for arch in archs:
        command += ["--arch", arch]
    command += ["--out", "/out", *extra_args]
    container = client.containers.run(
        cell.ref, command, detach=True,
        user=f"{os.getuid()}:{os.getgid()}",
        environment={"PYTHONPATH": RECIPE_DIR, "HOME": "/tmp"},
        volumes={str(src): {"bind": "/src", "mode": "ro"}, str(out): {"bind": "/out", "mode": "rw"}},
        working_dir="/tmp")
    try:
        chunks = []
        for chunk in container.logs(stream=True, follow=True):
            text = chunk.decode(errors="replace")
            chunks.append(text)
            print(text, end="", flush=True)
        code = container.wait()["StatusCode"]
    finally:
        container.remove(force=True)
    return code, "".join(chunks)
