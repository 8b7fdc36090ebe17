"""Staged promotion (`buildctl push`) and verified pulls (`buildctl pull`) through a registry.

Staging is by digest, so promotion leaves no staging tag behind:
  1. check the registry answers and takes the credentials, and that every selected image is built, before
     anything is pushed;
  2. per cell, parents first: the engine pushes the image to the scratch repository
     `HOST/rocmig-staging/<role>:<tag>` (the engine pushes only tags); its blobs are mounted into
     `rocmig/<role>` and its manifest is PUT there by digest only (untagged); the scratch manifest is then
     deleted (registry v2 deletes manifests, with their tags, per repository). `HOST/rocmig/<role>@<digest>`
     is pulled back, its digest checked, and the role's image tests (images/<role>/image.yaml `tests`) run
     against that pulled copy: the cells file (tests/images/conftest.py, ROCMIG_CELLS_FILE) names it;
  3. only when the whole selection passed, promote: PUT the tested manifest under the final tags
     (buildctl.tags.final_tags). With keep_going, every cell is tried and the cells that passed, with all
     their parents, are promoted; a failed cell never gets a tag.
A failure anywhere leaves at most an untagged manifest (garbage-collectable) and no tag moved. Where the
registry refuses deletes (storage.delete.enabled false), the scratch tag stays and the result says so.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

from docker import DockerClient

from buildctl.console import UI, buildctl_command, escape
from buildctl.errors import BuildError, CredentialsError, DigestMismatchError, RegistryError, UnreachableError
from buildctl.load import Project
from buildctl.plan import REPOSITORY, Cell, Plan
from buildctl.registry import Registry
from buildctl.results import cell_fields

STAGING_REPOSITORY = "rocmig-staging"
CELLS_FILE_ENV = "ROCMIG_CELLS_FILE"


class PushStatus(StrEnum):
    """A cell's way through staged promotion."""

    PENDING = "pending"
    STAGED = "staged"
    TESTED = "tested"
    FAILED = "failed"
    SKIPPED = "skipped"
    PROMOTED = "promoted"


@dataclass
class CellPush:
    """One cell's way through staged promotion: status, the staged manifest digest, why, the final refs."""

    cell: Cell
    status: PushStatus = PushStatus.PENDING
    digest: str | None = None
    detail: str = ""
    final: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        """The outcome as plain data for `buildctl push --json`."""
        return {**cell_fields(self.cell), "status": str(self.status), "digest": self.digest,
                "detail": self.detail, "final": self.final}


def write_cells_file(path: Path, cells: list[Cell], images: dict[str, str] | None = None) -> Path:
    """Write the cells file the image tests read (tests/images/conftest.py): schema_version, and per cell
    its coordinates and `image`, the reference to test (default: the cell's own local reference)."""
    images = images or {}
    doc = {"schema_version": 1, "kind": "cells",
           "cells": [{**cell_fields(c), "test_image": images.get(c.ref, c.ref)} for c in cells]}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=2) + "\n")
    return path


def run_image_tests(root: Path, cell: Cell, image: str, out_root: Path) -> tuple[bool, str, Path]:
    """Run the role's image tests against `image` (a registry copy of the cell); (passed, last line of
    pytest's output, log path)."""
    log = out_root / "logs" / f"push-{cell.name}.log"
    if not cell.image.tests:
        return True, "no image tests listed", log
    cells_file = write_cells_file(out_root / "logs" / f"push-{cell.name}.cells.json", [cell], {cell.ref: image})
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("w") as fh:
        rc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *cell.image.tests],
                            cwd=root, env={**os.environ, CELLS_FILE_ENV: str(cells_file.resolve())},
                            stdout=fh, stderr=subprocess.STDOUT).returncode
    lines = [ln for ln in log.read_text(errors="replace").splitlines() if ln.strip()]
    return rc == 0, (lines[-1] if lines else f"pytest exited {rc}"), log


def stage(registry: Registry, client: DockerClient, cell_ref: str) -> tuple[str, str]:
    """Push local `cell_ref` (`rocmig/<role>:<tag>`) into `rocmig/<role>` by digest, untagged; returns
    (digest, note): note is '' or says the scratch tag could not be deleted."""
    name, tag = cell_ref.rsplit(":", 1)
    scratch = f"{STAGING_REPOSITORY}/{name.split('/', 1)[1]}"
    digest = registry.push(client, cell_ref, f"{registry.name}/{scratch}:{tag}")
    found = registry.manifest(scratch, digest)
    if found is None:
        raise RegistryError(f"registry {registry.name}: pushed manifest {scratch}@{digest} is not there")
    body, media, _ = found
    doc = json.loads(body)
    for blob in [doc["config"], *doc.get("layers", [])]:
        registry.mount_blob(name, blob["digest"], scratch)
    stored = registry.put_manifest(name, digest, body, media)
    if stored != digest:
        raise DigestMismatchError(f"{registry.name}/{name}@{digest}: the registry stored digest {stored}")
    note = "" if registry.delete_manifest(scratch, digest) else (
        f"{registry.name}/{scratch}:{tag} kept: the registry refuses deletes (storage.delete.enabled)")
    return digest, note


def push_plan(project: Project, plan: Plan, registry: Registry, client: DockerClient, out_root: Path, console: UI,
              keep_going: bool = False, test: bool = True) -> list[CellPush]:
    """Staged push of every cell of `plan` (see the module doc); returns one CellPush per cell.

    Raises BuildError (exit 5) before pushing anything when a selected image is not built; CredentialsError or
    UnreachableError from the registry check. Cell failures are recorded, not raised.
    """
    import docker.errors

    from buildctl.tags import final_tags

    missing = []
    for cell in plan.cells:
        try:
            client.images.get(cell.ref)
        except docker.errors.ImageNotFound:
            missing.append(cell.ref)
    if missing:
        raise BuildError(f"not built: {', '.join(missing)}; run `{buildctl_command('build')}` for this selection first "
                         "(nothing was pushed)")
    with console.status(f"checking registry {registry.name}"):
        registry.ping()
    results = [CellPush(c) for c in plan.cells]
    by_ref = {r.cell.ref: r for r in results}
    stop = False
    for r in results:
        cell = r.cell
        parent = by_ref.get(cell.parent_ref) if cell.parent_ref else None
        if stop or (parent is not None and parent.status != PushStatus.TESTED):
            r.status, r.detail = PushStatus.SKIPPED, ("parent did not pass" if parent is not None
                                                      and parent.status != PushStatus.TESTED
                                                      else "an earlier cell failed")
            console.info(f"{cell.ref}: [yellow]skipped[/] ({r.detail})")
            continue
        name = cell.ref.rsplit(":", 1)[0]
        try:
            with console.status(f"{cell.ref}: pushing to {registry.name}/{name} by digest"):
                r.digest, r.detail = stage(registry, client, cell.ref)
            r.status = PushStatus.STAGED
            staged = f"{registry.name}/{name}@{r.digest}"
            with console.status(f"{cell.ref}: pulling {staged} back"):
                registry.pull_verified(client, staged, r.digest)
            console.info(f"{cell.ref}: staged as {staged} (untagged), pulled back with the same digest")
            if test:
                with console.status(f"{cell.ref}: image tests on {staged}"):
                    passed, last, log = run_image_tests(project.root, cell, staged, out_root)
                if not passed:
                    raise RegistryError(f"image tests failed on {staged}: {last} (log: {log})")
            r.status = PushStatus.TESTED
            console.info(f"{cell.ref}: [green]passed[/]" + ("" if test else " (tests not run: --no-test)"))
        except (RegistryError, CredentialsError, UnreachableError) as exc:
            r.status, r.detail = PushStatus.FAILED, str(exc)
            console.result(f"{cell.ref}: [red]failed[/]: {escape(str(exc))}")
            if isinstance(exc, (CredentialsError, UnreachableError)) or not keep_going:
                stop = True
    tested = [r for r in results if r.status == PushStatus.TESTED]
    if len(tested) != len(results) and not keep_going:
        for r in tested:
            r.detail = "passed, not promoted: another cell of the selection failed (use --keep-going to promote it)"
        return results
    for r in tested:
        name = f"{REPOSITORY}/{r.cell.role}"
        assert r.digest is not None
        for tag in final_tags(project, r.cell):
            registry.put_tag(name, tag, r.digest)
            r.final.append(f"{registry.name}/{name}:{tag}")
        r.status = PushStatus.PROMOTED
        console.info(f"{r.cell.ref}: [green]promoted[/] to {', '.join(r.final)}")
    return results


def pull_plan(plan: Plan, registry: Registry, client: DockerClient, console: UI) -> list[dict[str, Any]]:
    """Pull every cell of `plan` by its full tag, check the digest the engine pulled against the registry's,
    and tag it locally (full tag, ROCm-line alias, and `latest` per buildctl.tags.tag_local).

    Returns one dict per cell (coordinates, remote ref, digest, local tags). Raises UnreachableError /
    CredentialsError from the registry check, RegistryError when a tag is absent, DigestMismatchError.
    """
    from buildctl.tags import tag_local

    with console.status(f"checking registry {registry.name}"):
        registry.ping()
    pulled = []
    for cell in plan.cells:
        name, tag = cell.ref.rsplit(":", 1)
        found = registry.manifest(name, tag)
        remote = registry.remote_ref(cell.ref)
        if found is None:
            raise RegistryError(f"{remote}: no such tag in the registry (push it first)")
        with console.status(f"{cell.ref}: pulling {remote}"):
            digest = registry.pull_verified(client, remote, found[2])
        image = client.images.get(remote)
        for ref in cell.local_refs:
            repo, local_tag = ref.rsplit(":", 1)
            image.tag(repo, local_tag)
        console.result(f"{remote}@{digest} -> {cell.ref}")
        pulled.append({**cell_fields(cell), "remote": remote, "digest": digest, "local_tags": list(cell.local_refs)})
    for line in tag_local(client, list(plan.cells)):
        console.info(line)
    last_of_role = {entry["image"]: entry for entry in pulled}  # tag_local points latest at the last one
    for entry in last_of_role.values():
        entry["local_tags"] = [*entry["local_tags"], f"{REPOSITORY}/{entry['image']}:latest"]
    return pulled
