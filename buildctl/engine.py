"""Checks on the Docker engine and the reachability of what a selection pulls from (preflight).

Each check answers within seconds and raises an error naming what was unreachable and the alternative.
"""

from __future__ import annotations

import subprocess
import urllib.error
import urllib.request

import docker
import docker.errors

from buildctl.console import buildctl_command
from buildctl.errors import EngineError, InputError, UnreachableError
from buildctl.plan import Plan

PROBE_TIMEOUT_S = 5


def docker_client() -> docker.DockerClient:
    """A client for the local engine. Raises EngineError when none answers."""
    try:
        client = docker.from_env(timeout=30)
        client.ping()
    except docker.errors.DockerException as exc:
        raise EngineError(
            f"no Docker engine answers ({exc.__class__.__name__}); start dockerd, or run scripts/setup-docker.sh "
            "as root on Debian") from None
    return client


def require_buildx() -> None:
    """Raise EngineError when the buildx plugin (BuildKit's bake) is missing."""
    result = subprocess.run(["docker", "buildx", "version"], capture_output=True, text=True)
    if result.returncode != 0:
        raise EngineError("docker buildx is missing: install the docker-buildx plugin (scripts/setup-docker.sh does)")


def image_exists(client: docker.DockerClient, ref: str) -> bool:
    """True when the engine's image store holds `ref`."""
    try:
        client.images.get(ref)
    except docker.errors.ImageNotFound:
        return False
    return True


def drop_untagged(client: docker.DockerClient, image_id: str | None) -> str | None:
    """Remove image `image_id` when no tag names it any more (the image a rebuild, the SBOM layer or a
    moved `latest` replaced), so buildctl leaves no dangling `<none>` images. Returns a line saying what
    was done, or None when there was nothing to do (no ID, the image is gone or still tagged). An image a
    container still uses stays (the engine refuses; the line says so)."""
    if image_id is None:
        return None
    try:
        image = client.images.get(image_id)
        if image.tags:
            return None
        client.images.remove(image_id, noprune=False)
    except docker.errors.ImageNotFound:
        return None
    except docker.errors.APIError as exc:
        return f"kept the untagged image {image_id[:19]}: {exc.explanation}"
    return f"removed the untagged image {image_id[:19]} it replaced"


def host_apt_checks_valid_until() -> bool:
    """False when the host's apt has Acquire::Check-Valid-Until "false" (a snapshot mirror, as on this
    workplace's hosts), else True; True where apt-config is absent."""
    try:
        dump = subprocess.run(["apt-config", "dump", "Acquire::Check-Valid-Until"], capture_output=True,
                              text=True).stdout
    except FileNotFoundError:
        return True
    return 'Acquire::Check-Valid-Until "false"' not in dump


def _reachable(url: str) -> str | None:
    """None when `url` answers an HTTP request (any status), else the reason."""
    try:
        urllib.request.urlopen(urllib.request.Request(url, method="HEAD"), timeout=PROBE_TIMEOUT_S)
    except urllib.error.HTTPError:
        return None  # it answered
    except (urllib.error.URLError, OSError) as exc:
        return str(getattr(exc, "reason", exc))
    return None


def preflight(client: docker.DockerClient, plan: Plan, alternative: str) -> None:
    """Check that every OS base image the plan starts from is local or pullable, and its apt repository answers.

    alternative: what to build instead, for the message (e.g. "SOURCE=debian ROCM=7.2").
    Raises UnreachableError (exit 4) naming the unreachable image or URL and the alternative.
    """
    seen: set[str] = set()
    for cell in plan.cells:
        if cell.image.parent is not None or cell.os_image in seen:
            continue
        seen.add(cell.os_image)
        source = cell.release.source
        if not image_exists(client, cell.os_image):
            if cell.source.registry_probe is None:
                raise UnreachableError(
                    f"base image {cell.os_image} is not in the local image store; create it with "
                    f"`{buildctl_command(f'base bootstrap {cell.release.suite}')}` (debootstrap + docker import)")
            why = _reachable(cell.source.registry_probe)
            if why is not None:
                raise UnreachableError(
                    f"source {source}: base image {cell.os_image} is not local and {cell.source.registry_probe} "
                    f"is unreachable ({why}); load the image with `docker load`, or build the debian lane: "
                    f"{alternative}")
        if cell.source.apt_key:
            why = _reachable(cell.source.apt_key)
            if why is not None:
                raise UnreachableError(
                    f"source {source}: apt repository key {cell.source.apt_key} is unreachable ({why}); "
                    f"use a mirror or build the debian lane: {alternative}")


def check_apt_mirror(mirror: str, plan: Plan) -> None:
    """Check `--apt-mirror URL` before a build: an http(s) URL that answers, and that serves the Release
    file of every Debian suite the plan's root cells use.

    Raises InputError (exit 2) for a URL that is not http(s) or serves no such suite (HTTP 4xx: not a
    Debian mirror, or a wrong path), UnreachableError (exit 4) naming the mirror when it does not answer.
    """
    import pydantic

    from buildctl.kinds import Url

    try:
        pydantic.TypeAdapter(Url).validate_python(mirror)
    except pydantic.ValidationError as exc:
        raise InputError(f"--apt-mirror: {exc.errors()[0]['msg'].removeprefix('Value error, ')}") from None
    suites = sorted({s for c in plan.cells if c.image.parent is None and c.release.source == "debian"
                     for s in {c.release.suite, c.release.apt_suite} if s})
    for suite in suites:
        url = f"{mirror.rstrip('/')}/dists/{suite}/Release"
        try:
            with urllib.request.urlopen(urllib.request.Request(url, method="HEAD"), timeout=PROBE_TIMEOUT_S):
                pass
        except urllib.error.HTTPError as exc:
            raise InputError(f"--apt-mirror {mirror}: {url} answered HTTP {exc.code}: not a Debian mirror with "
                             f"suite {suite} (e.g. http://deb.debian.org/debian)") from None
        except (urllib.error.URLError, OSError) as exc:
            raise UnreachableError(f"--apt-mirror {mirror}: unreachable ({getattr(exc, 'reason', exc)}); check "
                                   "the URL and the network, or leave --apt-mirror out") from None
