"""Content keys of cells: build a cell only when what goes into it changed.

A cell's key is sha256 over (in this order, each part length-prefixed so no two inputs collide):
  1. every file of its rendered build folder (`build/<role>/<tag>/`: Dockerfile, rocmig/*, recipes/...),
     as relative path, executable bit and bytes, in sorted path order;
  2. its build args (sorted JSON), except those in NOT_CONTENT_ARGS (MAX_JOBS: how, not what);
  3. the image ID (config digest, `sha256:...`) of its parent: the parent cell's image, or the OS base
     image (`debian:trixie`) for a root cell. An image ID survives a registry round trip unchanged, so a
     key computed here matches an image pulled back from a registry.
The idea and the input set follow bashbrew (docker-library), which keys rebuilds the same way.

The key is stored in the built image as the label `io.rocmig.cache-key` (passed as a bake target's
`labels`, not written into the rendered Dockerfile, which stays byte-identical). A cell whose image
already carries its current key is skipped; any change to its inputs, or a rebuilt parent (new image
ID), makes it dirty, and so its descendants.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from buildctl.errors import InputError
from buildctl.plan import Cell, Plan

CACHE_KEY_LABEL = "io.rocmig.cache-key"
# Build args that change how a build runs, not what it makes: left out of the key, so a host with more
# cores (a larger MAX_JOBS) reuses images built elsewhere.
NOT_CONTENT_ARGS = frozenset({"MAX_JOBS"})


@dataclass(frozen=True)
class ImageFacts:
    """What the cache needs to know of an image: its ID (`sha256:...` config digest) and its labels."""

    image_id: str
    labels: dict


# Looks up an image reference: returns ImageFacts, or None when there is no such image.
Lookup = Callable[[str], "ImageFacts | None"]


@dataclass(frozen=True)
class Decision:
    """Whether a cell builds, and why.

    action: 'build' or 'skip'. key: the cell's content key (`sha256:<64 hex>`), None when it cannot be
    known yet (its parent rebuilds first). where: for a skip, 'local' or the registry holding the image.
    """

    cell: Cell
    action: str
    reason: str
    key: str | None = None
    where: str | None = None

    def to_json(self) -> dict:
        """The decision as plain data for `buildctl plan --json`."""
        return {"ref": self.cell.ref, "action": self.action, "reason": self.reason, "key": self.key,
                "where": self.where}


def _feed(h, data: bytes) -> None:
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
        return Decision(cell, "build", f"parent image {parent} is not built yet, so the key is not known")
    key = cache_key(folder, build_args, facts.image_id)
    mine = local(cell.ref)
    if mine is not None and mine.labels.get(CACHE_KEY_LABEL) == key:
        return Decision(cell, "skip", f"up to date: local image {mine.image_id[:19]} has key {short(key)}",
                        key, "local")
    if remote is not None:
        theirs = remote(cell.ref)
        if theirs is not None and theirs.labels.get(CACHE_KEY_LABEL) == key:
            return Decision(cell, "skip", f"up to date in {remote_name}: image has key {short(key)} (pulled)",
                            key, remote_name)
    if mine is None:
        why = f"no image {cell.ref}"
    elif CACHE_KEY_LABEL not in mine.labels:
        why = f"image {cell.ref} has no {CACHE_KEY_LABEL} label (built before content keys)"
    else:
        why = f"inputs changed: image has key {short(mine.labels[CACHE_KEY_LABEL])}, inputs give {short(key)}"
    return Decision(cell, "build", why, key)


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
            decision = Decision(cell, "build", f"parent {cell.parent_ref} rebuilds (new image ID, new key)")
        else:
            decision = decide_cell(cell, folder_of(cell), build_args, local, remote, remote_name)
        if decision.action == "build":
            rebuilding.add(cell.ref)
        out.append(decision)
    return out


def engine_lookup(client) -> Lookup:
    """A Lookup over a Docker engine's image store (docker SDK client)."""
    import docker.errors

    def lookup(ref: str) -> ImageFacts | None:
        try:
            image = client.images.get(ref)
        except docker.errors.ImageNotFound:
            return None
        return ImageFacts(image.id, dict(image.labels or {}))

    return lookup


_DIGEST_RE = re.compile(r"^(sha256:[0-9a-f]{64}|[^@\s]+@sha256:[0-9a-f]{64})$")


def use_parent(client, plan: Plan, parent: str) -> str:
    """Make an existing image, given by digest, the parent of the plan's (leaf) cells.

    parent: `NAME@sha256:<manifest digest>` (pulled when not local) or `sha256:<image ID>`. Its
    io.rocmig.* labels must match the parent cell (role, source, ROCm release, arch). The image is tagged
    as the parent reference the rendered Dockerfile builds FROM (the engine's BuildKit takes no named
    contexts), so no parent cell is rebuilt. Returns a one-line message. Raises InputError naming
    --parent when the selection has no single parent, the value is not a digest, the image is missing,
    or its labels belong to another cell.
    """
    import docker.errors

    refs = sorted({c.parent_ref or "" for c in plan.cells})
    if "" in refs:
        raise InputError("--parent: the selection includes root cells (base), which have no parent image; "
                         "select leaf roles with --image")
    if len(refs) != 1:
        raise InputError(f"--parent: the selection builds on {len(refs)} parent images ({', '.join(refs)}); "
                         "select one --source/--rocm/--arch")
    if not _DIGEST_RE.match(parent):
        raise InputError(f"--parent: {parent!r} is not IMAGE@sha256:<digest> or sha256:<image ID>")
    try:
        image = client.images.get(parent)
    except docker.errors.ImageNotFound:
        if "@" not in parent:
            raise InputError(f"--parent: no local image has ID {parent}") from None
        try:
            image = client.images.pull(parent)
        except docker.errors.APIError as exc:
            raise InputError(f"--parent: {parent} is neither local nor pullable ({exc.explanation})") from None
    cell = plan.cells[0]
    want = {"io.rocmig.role": cell.image.parent, "io.rocmig.source": cell.release.source,
            "io.rocmig.rocm.full": cell.release.full, "io.rocmig.arch": cell.arch_name}
    have = image.labels or {}
    wrong = [f"{k}={have.get(k)!r} (need {v!r})" for k, v in want.items() if have.get(k) != v]
    if wrong:
        raise InputError(f"--parent: {parent} is not a parent of {cell.ref}: {', '.join(wrong)}")
    repo, tag = refs[0].rsplit(":", 1)
    image.tag(repo, tag)
    return f"--parent: {parent} (image {image.id[:19]}) tagged as {refs[0]}; no parent cell is built"
