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
    target = f"/src/{src.name}" if src.is_file() else "/src"
    command = ["python3", "-m", "migrate", target]
    for arch in archs:
        command += ["--arch", arch]
    command += ["--out", "/out", *extra_args]
    container = client.containers.run(
        cell.ref, command, detach=True,
        user=f"{os.getuid()}:{os.getgid()}",
        environment={"PYTHONPATH": RECIPE_DIR, "HOME": "/tmp"},
        volumes={str(src): {"bind": target, "mode": "ro"}, str(out): {"bind": "/out", "mode": "rw"}},
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


def annotate_report(root: Path, out: Path) -> int:
    """Match each failed unit's first compiler error against the error case library (buildctl.doctor)
    and rewrite the report with the matches; returns how many compile results got a match.

    The recipe runs inside the image, where the catalog is not; its own report writer (recipes/migrate,
    loaded from the project root) renders the matches into report.md and report.html. A report without
    "complete": true (an interrupted run) is left as it is.
    """
    import importlib.util
    import json

    from buildctl.doctor import diagnose

    path = out / "report.json"
    if not path.exists():
        return 0
    data = json.loads(path.read_text())
    if not data.get("complete"):
        return 0
    matched = 0
    for entry in data["files"]:
        for result in entry.get("compile", {}).values():
            if result.get("status") == "failed" and result.get("first_error"):
                matches = diagnose(result["first_error"], limit=1)
                result["doctor"] = [{"id": m.entry.id, "title": m.entry.title, "fix": m.entry.fix[0]}
                                    for m in matches]
                matched += bool(matches)
    spec = importlib.util.spec_from_file_location("rocmig_migrate_report",
                                                  root / "recipes" / "migrate" / "migrate" / "report.py")
    report = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(report)
    report.write_all(out, data)
    return matched
