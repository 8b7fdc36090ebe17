"""`build --parent`: adopt an existing image as the parent of the selected leaf cells (no parent rebuild).

Separate from buildctl.cache (content keys): adopting a parent only tags an image the engine has or pulls.
"""

from __future__ import annotations

import re

from docker import DockerClient

from buildctl.errors import InputError
from buildctl.plan import Plan

# NAME@sha256:<manifest digest>, or an image ID: sha256:<64 hex>, or its first 12+ hex digits (what
# `docker images` and buildctl print), with or without the sha256: prefix.
_DIGEST_RE = re.compile(r"^([^@\s]+@sha256:[0-9a-f]{64}|(sha256:)?[0-9a-f]{12,64})$")


def use_parent(client: DockerClient, plan: Plan, parent: str) -> str:
    """Make an existing image, given by digest, the parent of the plan's (leaf) cells.

    parent: `NAME@sha256:<manifest digest>` (pulled when not local) or an image ID, full or short
    (`sha256:0123abcd...`, `0123456789ab`: 12 or more hex digits, resolved by the engine). Its
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
        raise InputError(f"--parent: {parent!r} is not IMAGE@sha256:<digest> or an image ID (sha256:<hex>, or its "
                         "first 12+ hex digits)")
    try:
        image = client.images.get(parent)
    except docker.errors.NotFound:
        if "@" not in parent:
            raise InputError(f"--parent: no local image has ID {parent} (`docker images` lists them)") from None
        try:
            image = client.images.pull(parent)
        except docker.errors.APIError as exc:
            raise InputError(f"--parent: {parent} is neither local nor pullable ({exc.explanation})") from None
    except docker.errors.APIError as exc:
        raise InputError(f"--parent: {parent}: {exc.explanation} (give more hex digits of the image ID)") from None
    cell = plan.cells[0]
    want = {"io.rocmig.role": cell.image.parent, "io.rocmig.source": cell.release.source,
            "io.rocmig.rocm.full": cell.release.full, "io.rocmig.arch": cell.arch_name}
    have = image.labels or {}
    wrong = [f"{k}={have.get(k)!r} (need {v!r})" for k, v in want.items() if have.get(k) != v]
    if wrong:
        raise InputError(f"--parent: {parent} is not a parent of {cell.ref}: {', '.join(wrong)}")
    repo, tag = refs[0].rsplit(":", 1)
    image.tag(repo, tag)
    return f"--parent: {parent} (image {str(image.id)[:19]}) tagged as {refs[0]}; no parent cell is built"
