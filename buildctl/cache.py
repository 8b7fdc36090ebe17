"""Content keys of cells: build a cell only when what goes into it changed.

A cell's key is sha256 over (in this order, each part length-prefixed so no two inputs collide):
  1. every file of its rendered build folder (`build/<role>/<tag>/`: Dockerfile, rocmig/*, recipes/...),
     as relative path, executable bit and bytes, in sorted path order;
  2. its build args (sorted JSON), except those in NOT_CONTENT_ARGS (MAX_JOBS: how, not what);
  3. the image ID (config digest, `sha256:...`) of its parent: the parent cell's image, or the OS base
     image (`debian:trixie`) for a root cell. An image ID survives a registry round trip unchanged, so a
     key computed here matches an image pulled back from a registry.
The idea and the input set follow bashbrew (docker-library), which keys rebuilds the same way.

Adopting an existing parent image (`build --parent`) is buildctl.parent's job.

The key is stored in the built image as the label `io.rocmig.cache-key` (passed as a bake target's
`labels`, not written into the rendered Dockerfile, which stays byte-identical). A cell whose image
already carries its current key is skipped; any change to its inputs, or a rebuilt parent (new image
ID), makes it dirty, and so its descendants.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

from docker import DockerClient

from buildctl.plan import Cell, Plan
from buildctl.results import cell_fields

CACHE_KEY_LABEL = "io.rocmig.cache-key"
# Build args that change how a build runs, not what it makes: left out of the key, so a host with more
# cores (a larger MAX_JOBS) reuses images built elsewhere.
NOT_CONTENT_ARGS = frozenset({"MAX_JOBS"})


@dataclass(frozen=True)
class ImageFacts:
    """What the cache needs to know of an image: its ID (`sha256:...` config digest) and its labels."""

    image_id: str
    labels: dict[str, str]


# Looks up an image reference: returns ImageFacts, or None when there is no such image.
Lookup = Callable[[str], "ImageFacts | None"]


class Action(StrEnum):
    """What happens to a cell: it builds, or it is skipped because an image has its key."""

    BUILD = "build"
    SKIP = "skip"


@dataclass(frozen=True)
class Decision:
    """Whether a cell builds, and why.

    action: 'build' or 'skip'. key: the cell's content key (`sha256:<64 hex>`), None when it cannot be
    known yet (its parent rebuilds first). where: for a skip, 'local' or the registry holding the image.
    """

    cell: Cell
    action: Action
    reason: str
    key: str | None = None
    where: str | None = None

    def to_json(self) -> dict[str, Any]:
        """The decision as plain data for `buildctl plan --json`: the cell's coordinates, action, reason,
        key and where a skipped cell's image is."""
        return {**cell_fields(self.cell), "action": str(self.action), "reason": self.reason, "key": self.key,
                "where": self.where}


def _feed(h: hashlib._Hash, data: bytes) -> None:
    h.update(len(data).to_bytes(8, "big"))
    h.update(data)


def context_digest(folder: Path) -> str:
    """sha256 hex over the files of a build folder (relative path, executable bit, bytes; sorted paths).

    Symbolic links count by their target text. Raises FileNotFoundError when `folder` does not exist.
    """
    if not folder.is_dir():
        raise FileNotFoundError(f"{folder}: rendered build folder missing (run `buildctl render`)")
    h = hashlib.sha256()
    for path in sorted(folder.rglob("*"), key=lambda p: p.relative_to(folder).as_posix()):
        rel = path.relative_to(folder).as_posix()
        if path.is_symlink():
            _feed(h, f"L {rel}".encode())
            _feed(h, os.readlink(path).encode())
        elif path.is_file():
            executable = "x" if os.stat(path).st_mode & 0o111 else "-"
            _feed(h, f"F {rel} {executable}".encode())
            _feed(h, path.read_bytes())
    return h.hexdigest()


def cache_key(folder: Path, build_args: dict[str, str], parent_id: str) -> str:
    """The content key `sha256:<hex>` of a rendered cell folder, its build args and its parent's image ID.

    parent_id: `sha256:...` image ID of the parent (or the OS base image). Raises ValueError when empty.
    """
    if not parent_id:
        raise ValueError("parent_id: an image ID (sha256:...) is required")
    h = hashlib.sha256()
    _feed(h, b"rocmig-cache-key-v1")
    _feed(h, context_digest(folder).encode())
    content_args = {k: v for k, v in build_args.items() if k not in NOT_CONTENT_ARGS}
    _feed(h, json.dumps(content_args, sort_keys=True).encode())
    _feed(h, parent_id.encode())
    return "sha256:" + h.hexdigest()


def parent_of(cell: Cell) -> str:
    """The image a cell builds FROM: its parent cell's reference, or the OS base image of a root cell."""
    return cell.parent_ref or cell.os_image


def short(key: str | None) -> str:
    """`sha256:0123456789ab` (first 12 hex digits) for messages; '-' for None."""
    return "-" if key is None else key[:19]


def decide_cell(cell: Cell, folder: Path, build_args: dict[str, str], local: Lookup,
                remote: Lookup | None = None, remote_name: str = "") -> Decision:
    """Decide one cell whose parent is settled (built or skipped): skip when an image has its key.

    local: looks up the engine's image store; remote: looks up `remote_name` (a registry), or None.
    The parent must be visible through `local` (or, when remote is given, through `remote`).
    """
    parent = parent_of(cell)
    facts = local(parent) or (remote(parent) if remote else None)
    if facts is None:
        return Decision(cell, Action.BUILD, f"parent image {parent} is not built yet, so the key is not known")
    key = cache_key(folder, build_args, facts.image_id)
    mine = local(cell.ref)
    if mine is not None and mine.labels.get(CACHE_KEY_LABEL) == key:
        return Decision(cell, Action.SKIP, f"up to date: local image {mine.image_id[:19]} has key {short(key)}",
                        key, "local")
    if remote is not None:
        theirs = remote(cell.ref)
        if theirs is not None and theirs.labels.get(CACHE_KEY_LABEL) == key:
            return Decision(cell, Action.SKIP, f"up to date in {remote_name}: image has key {short(key)} (pulled)",
                            key, remote_name)
    if mine is None:
        why = f"no image {cell.ref}"
    elif CACHE_KEY_LABEL not in mine.labels:
        why = f"image {cell.ref} has no {CACHE_KEY_LABEL} label (built before content keys)"
    else:
        why = f"inputs changed: image has key {short(mine.labels[CACHE_KEY_LABEL])}, inputs give {short(key)}"
    return Decision(cell, Action.BUILD, why, key)


def decide_plan(plan: Plan, out_root: Path, build_args: dict[str, str], local: Lookup,
                remote: Lookup | None = None, remote_name: str = "",
                folder_of: Callable[[Cell], Path] | None = None) -> list[Decision]:
    """Decide every cell of a rendered plan, parents first: a cell whose parent builds builds too.

    folder_of: where a cell's rendered folder is (default `<out_root>/<role>/<tag>`).
    Returns one Decision per cell, in plan order.
    """
    from buildctl.render import cell_dir

    folder_of = folder_of or (lambda c: cell_dir(out_root, c))
    rebuilding: set[str] = set()
    out: list[Decision] = []
    for cell in plan.cells:
        if cell.parent_ref in rebuilding:
            decision = Decision(cell, Action.BUILD, f"parent {cell.parent_ref} rebuilds (new image ID, new key)")
        else:
            decision = decide_cell(cell, folder_of(cell), build_args, local, remote, remote_name)
        if decision.action == Action.BUILD:
            rebuilding.add(cell.ref)
        out.append(decision)
    return out


def engine_lookup(client: DockerClient) -> Lookup:
    """A Lookup over a Docker engine's image store (docker SDK client)."""
    import docker.errors

    def lookup(ref: str) -> ImageFacts | None:
        try:
            image = client.images.get(ref)
        except docker.errors.ImageNotFound:
            return None
        return ImageFacts(str(image.id), dict(image.labels or {}))

    return lookup
