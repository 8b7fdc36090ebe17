"""A client of one container registry (Docker Registry HTTP API V2), with retries.

Manifests, tags, blob mounts and deletes over HTTP; pushes and pulls through the Docker engine. The
staged promotion that uses it is buildctl.promote.

Transient errors (connection refused or reset, timeouts, HTTP 5xx and 429) are retried with exponential
backoff (tenacity); wrong credentials, a full registry disk and digest mismatches are not.
Plain HTTP is used for loopback registries (Docker treats 127.0.0.0/8 as insecure by default), HTTPS
for every other host. Credentials are HTTP basic auth (the registry's htpasswd mode); registries that
hand out bearer tokens (Docker Hub) are not supported here.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from email.message import Message
from typing import Any, TypeVar

import tenacity
from docker import DockerClient

from buildctl.cache import ImageFacts
from buildctl.errors import CredentialsError, DigestMismatchError, InputError, RegistryError, UnreachableError

T = TypeVar("T")
HOST_RE = re.compile(r"^(?P<host>[A-Za-z0-9.-]+|\[[0-9a-fA-F:]+\])(:(?P<port>\d{1,5}))?$")
MANIFEST_TYPES = ", ".join([
    "application/vnd.docker.distribution.manifest.v2+json",
    "application/vnd.oci.image.manifest.v1+json",
    "application/vnd.docker.distribution.manifest.list.v2+json",
    "application/vnd.oci.image.index.v1+json",
])
INDEX_TYPES = ("application/vnd.docker.distribution.manifest.list.v2+json", "application/vnd.oci.image.index.v1+json")
_TRANSIENT = ("connection refused", "connection reset", "i/o timeout", "timeout", "eof", "broken pipe",
              "503", "502", "504", "500 internal", "429", "too many requests", "tls handshake")
_AUTH = ("unauthorized", "authentication required", "denied", "401")
_FULL = ("no space left on device", "disk quota exceeded")


class TransientError(Exception):
    """A registry or network error worth retrying (connection refused, timeout, HTTP 5xx/429).

    server_side: the registry answered (HTTP 5xx), so it is reachable but failing (full disk, storage).
    """

    def __init__(self, message: str, server_side: bool = False):
        super().__init__(message)
        self.server_side = server_side


@dataclass(frozen=True)
class RetryPolicy:
    """attempts: tries per operation (>= 1); base_s: first backoff in seconds, doubling up to max_s."""

    attempts: int = 4
    base_s: float = 1.0
    max_s: float = 15.0


@dataclass(frozen=True)
class Credentials:
    """HTTP basic-auth credentials of a registry."""

    username: str
    password: str = field(repr=False)


def parse_host(value: str) -> str:
    """Validate `--registry HOST[:PORT]` and return it. Raises InputError naming the flag and the form."""
    m = HOST_RE.match(value or "")
    if not m or (m.group("port") and not 0 < int(m.group("port")) < 65536) or "/" in value:
        raise InputError(f"--registry: {value!r} is not HOST[:PORT] (e.g. 127.0.0.1:5000 or registry.example.com)")
    return value


def classify(message: str, registry: str) -> Exception:
    """Turn an engine push/pull error message into the error to raise (TransientError is retried)."""
    low = message.lower()
    if any(s in low for s in _FULL):
        return RegistryError(f"registry {registry} is out of disk space ({message.strip()}); free space in its "
                             "storage and push again (nothing was promoted)")
    if any(s in low for s in _AUTH):
        return CredentialsError(f"registry {registry} refused the push/pull: {message.strip()} (check --username "
                                "and ROCMIG_REGISTRY_PASSWORD)")
    if any(s in low for s in _TRANSIENT):
        return TransientError(message.strip(), server_side=bool(re.search(r"\b5\d\d\b", low)))
    return RegistryError(f"registry {registry}: {message.strip()}")


class Registry:
    """One registry at HOST[:PORT]; images live under `HOST/rocmig/<role>:<tag>`.

    credentials: basic-auth credentials or None. retry: the backoff policy for transient errors.
    """

    def __init__(self, host: str, credentials: Credentials | None = None, retry: RetryPolicy = RetryPolicy(),
                 timeout_s: float = 30.0):
        self.name = parse_host(host)
        self.credentials = credentials
        self.retry = retry
        self.timeout_s = timeout_s
        bare = self.name.rsplit(":", 1)[0] if not self.name.startswith("[") else self.name.split("]")[0] + "]"
        loopback = bare in ("localhost", "[::1]") or bare.startswith("127.")
        self.base_url = f"{'http' if loopback else 'https'}://{self.name}"

    # -- plumbing -------------------------------------------------------------------------------------
    def _retrying(self, what: str, call: Callable[[], T]) -> T:
        try:
            for attempt in tenacity.Retrying(
                    retry=tenacity.retry_if_exception_type(TransientError),
                    stop=tenacity.stop_after_attempt(max(1, self.retry.attempts)),
                    wait=tenacity.wait_exponential(multiplier=self.retry.base_s, max=self.retry.max_s),
                    reraise=True):
                with attempt:
                    return call()
        except TransientError as exc:
            if exc.server_side:
                raise RegistryError(
                    f"registry {self.name}: {what} failed after {self.retry.attempts} attempt(s): {exc}: the "
                    "registry answers but fails on its side (full disk, storage fault: see its log); nothing "
                    "was promoted") from None
            raise UnreachableError(f"registry {self.name}: {what} failed after {self.retry.attempts} attempt(s): "
                                   f"{exc} (is the registry running and reachable?)") from None
        raise AssertionError("tenacity.Retrying with reraise=True returns or raises")

    def _request(self, method: str, path: str, headers: dict[str, str] | None = None,
                 data: bytes | None = None) -> tuple[int, Message, bytes]:
        """One HTTP request to the registry: (status, headers, body). Raises TransientError on network errors."""
        req = urllib.request.Request(self.base_url + path, method=method, data=data, headers=dict(headers or {}))
        if self.credentials:
            token = base64.b64encode(f"{self.credentials.username}:{self.credentials.password}".encode()).decode()
            req.add_header("Authorization", f"Basic {token}")
        try:
            with urllib.request.urlopen(req, timeout=self.timeout_s) as resp:
                return resp.status, resp.headers, resp.read()
        except urllib.error.HTTPError as exc:
            body = exc.read()
            if exc.code >= 500 or exc.code == 429:
                raise TransientError(f"HTTP {exc.code} on {method} {path}", server_side=exc.code >= 500) from None
            return exc.code, exc.headers, body
        except (urllib.error.URLError, OSError) as exc:
            raise TransientError(str(getattr(exc, "reason", exc))) from None

    def _auth_failed(self, status: int) -> CredentialsError:
        if self.credentials:
            return CredentialsError(f"registry {self.name} refused the credentials of user "
                                    f"{self.credentials.username!r} (HTTP {status})")
        return CredentialsError(f"registry {self.name} requires credentials (HTTP {status}): pass --username "
                                "and the password in ROCMIG_REGISTRY_PASSWORD")

    def auth_config(self) -> dict[str, str] | None:
        """The engine's X-Registry-Auth payload for this registry, or None without credentials."""
        if not self.credentials:
            return None
        return {"username": self.credentials.username, "password": self.credentials.password,
                "serveraddress": self.name}

    # -- registry API ---------------------------------------------------------------------------------
    def ping(self) -> None:
        """Check `GET /v2/` answers 200 with these credentials.

        Raises UnreachableError (after retries) when it does not answer, CredentialsError on 401/403.
        """
        status, _, body = self._retrying("GET /v2/", lambda: self._request("GET", "/v2/"))
        if status in (401, 403):
            raise self._auth_failed(status)
        if status != 200:
            raise RegistryError(f"registry {self.name}: GET /v2/ answered HTTP {status}, not a Docker registry (V2)?")

    def remote_ref(self, ref: str, suffix: str = "") -> str:
        """`rocmig/dev:TAG` -> `HOST/rocmig/dev:TAG<suffix>`."""
        return f"{self.name}/{ref}{suffix}"

    def manifest(self, name: str, reference: str) -> tuple[bytes, str, str] | None:
        """(body, media type, digest) of `name` at a tag or digest; None when absent (404).

        The digest is sha256 over the body as served. Raises CredentialsError on 401/403.
        """
        status, headers, body = self._retrying(
            f"GET manifest {name}:{reference}",
            lambda: self._request("GET", f"/v2/{name}/manifests/{reference}", {"Accept": MANIFEST_TYPES}))
        if status == 404:
            return None
        if status in (401, 403):
            raise self._auth_failed(status)
        if status != 200:
            raise RegistryError(f"registry {self.name}: GET manifest {name}:{reference} answered HTTP {status}")
        media = headers.get("Content-Type", "").split(";")[0].strip()
        return body, media, "sha256:" + hashlib.sha256(body).hexdigest()

    def lookup(self, ref: str) -> ImageFacts | None:
        """ImageFacts (config digest = image ID, labels) of local-style `ref` (`rocmig/dev:TAG`) in this
        registry, or None when the registry has no such tag. A buildctl.cache.Lookup."""
        name, tag = ref.rsplit(":", 1)
        found = self.manifest(name, tag)
        if found is None:
            return None
        body, media, _ = found
        doc = json.loads(body)
        if media in INDEX_TYPES:
            amd64 = [m for m in doc.get("manifests", []) if m.get("platform", {}).get("architecture") == "amd64"]
            if not amd64:
                return None
            found = self.manifest(name, amd64[0]["digest"])
            if found is None:
                return None
            doc = json.loads(found[0])
        config_digest = doc["config"]["digest"]
        status, _, blob = self._retrying(f"GET config {name}@{config_digest}",
                                         lambda: self._request("GET", f"/v2/{name}/blobs/{config_digest}"))
        if status != 200:
            raise RegistryError(f"registry {self.name}: config blob {config_digest} of {name}:{tag}: HTTP {status}")
        labels = (json.loads(blob).get("config") or {}).get("Labels") or {}
        return ImageFacts(config_digest, dict(labels))

    def put_tag(self, name: str, tag: str, digest: str) -> None:
        """Point `name:tag` at the manifest `digest` already in the registry (same bytes, same digest).

        Raises DigestMismatchError when the registry serves other bytes for the digest or answers another.
        """
        found = self.manifest(name, digest)
        if found is None:
            raise RegistryError(f"registry {self.name}: manifest {name}@{digest} is gone; nothing promoted")
        body, media, served = found
        if served != digest:
            raise DigestMismatchError(f"{self.name}/{name}@{digest}: the registry serves a manifest with digest "
                                      f"{served}")
        status, headers, text = self._retrying(
            f"PUT manifest {name}:{tag}",
            lambda: self._request("PUT", f"/v2/{name}/manifests/{tag}", {"Content-Type": media}, body))
        if status in (401, 403):
            raise self._auth_failed(status)
        if status not in (200, 201):
            raise RegistryError(f"registry {self.name}: PUT manifest {name}:{tag} answered HTTP {status}: "
                                f"{text[:200]!r}")
        answered = headers.get("Docker-Content-Digest")
        if answered and answered != digest:
            raise DigestMismatchError(f"{self.name}/{name}:{tag}: registry stored digest {answered}, expected {digest}")

    def put_manifest(self, name: str, reference: str, body: bytes, media: str) -> str:
        """PUT manifest `body` (of media type `media`) as `name:reference` (a tag, or its own digest for an
        untagged manifest); returns the digest the registry stored. Raises CredentialsError, RegistryError."""
        status, headers, text = self._retrying(
            f"PUT manifest {name}:{reference}",
            lambda: self._request("PUT", f"/v2/{name}/manifests/{reference}", {"Content-Type": media}, body))
        if status in (401, 403):
            raise self._auth_failed(status)
        if status not in (200, 201):
            raise RegistryError(f"registry {self.name}: PUT manifest {name}:{reference} answered HTTP {status}: "
                                f"{text[:200]!r}")
        return headers.get("Docker-Content-Digest") or "sha256:" + hashlib.sha256(body).hexdigest()

    def mount_blob(self, name: str, digest: str, source: str) -> None:
        """Make blob `digest` of repository `source` part of repository `name` without copying it (cross-
        repository blob mount). Raises RegistryError when the registry does not mount it."""
        status, _, text = self._retrying(
            f"mount blob {digest[:19]} into {name}",
            lambda: self._request("POST", f"/v2/{name}/blobs/uploads/?mount={digest}&from={source}"))
        if status in (401, 403):
            raise self._auth_failed(status)
        if status != 201:
            raise RegistryError(f"registry {self.name}: mounting blob {digest} from {source} into {name} answered "
                                f"HTTP {status} (cross-repository mounts needed for promotion)")

    def delete_manifest(self, name: str, digest: str) -> bool:
        """DELETE manifest `name@digest` and the tags on it in that repository; True when deleted, False
        when the registry has deletes turned off (HTTP 405: storage.delete.enabled is false)."""
        status, _, text = self._retrying(
            f"DELETE manifest {name}@{digest[:19]}",
            lambda: self._request("DELETE", f"/v2/{name}/manifests/{digest}"))
        if status in (401, 403):
            raise self._auth_failed(status)
        if status == 405:
            return False
        if status not in (200, 202, 404):
            raise RegistryError(f"registry {self.name}: DELETE manifest {name}@{digest} answered HTTP {status}")
        return True

    def tags(self, name: str) -> list[str]:
        """The tags of repository `name` (GET /v2/<name>/tags/list); [] when the repository does not exist."""
        status, _, body = self._retrying(f"GET tags of {name}", lambda: self._request("GET", f"/v2/{name}/tags/list"))
        if status == 404:
            return []
        if status in (401, 403):
            raise self._auth_failed(status)
        if status != 200:
            raise RegistryError(f"registry {self.name}: GET /v2/{name}/tags/list answered HTTP {status}")
        return sorted(json.loads(body).get("tags") or [])

    # -- through the engine ---------------------------------------------------------------------------
    def _stream(self, what: str, produce: Callable[[], Iterable[dict[str, Any]]]) -> list[dict[str, Any]]:
        """Run an engine push/pull stream; retry its transient errors, except server-side ones (HTTP 5xx):
        dockerd already retried each layer upload five times before it reports those."""
        def once() -> list[dict[str, Any]]:
            lines = list(produce())
            for line in lines:
                if "error" in line:
                    err = classify(line.get("error") or str(line.get("errorDetail")), self.name)
                    if isinstance(err, TransientError) and err.server_side:
                        raise RegistryError(
                            f"registry {self.name}: {what} failed: {err}: the registry answers but fails on its "
                            "side (full disk, storage fault: see its log); nothing was promoted")
                    raise err
            return lines
        return self._retrying(what, once)

    def push(self, client: DockerClient, local_ref: str, remote_ref: str) -> str:
        """Tag `local_ref` as `remote_ref` in the engine, push it, untag; returns the pushed manifest digest.

        Raises CredentialsError, RegistryError (full disk, refused), UnreachableError (after retries).
        """
        repo, tag = remote_ref.rsplit(":", 1)
        image = client.images.get(local_ref)
        image.tag(repo, tag)
        try:
            lines = self._stream(f"push {remote_ref}", lambda: client.api.push(
                repo, tag, stream=True, decode=True, auth_config=self.auth_config()))
        finally:
            client.images.remove(remote_ref, noprune=True)
        digests = [line["aux"]["Digest"] for line in lines if isinstance(line.get("aux"), dict)
                   and "Digest" in line["aux"]]
        if not digests:
            raise RegistryError(f"push {remote_ref}: the engine reported no digest")
        return str(digests[-1])

    def pull(self, client: DockerClient, remote_ref: str) -> str:
        """Pull `remote_ref` (`HOST/NAME:TAG` or `HOST/NAME@sha256:...`) into the engine; returns the digest
        the engine pulled (`sha256:...`)."""
        repo, tag = remote_ref.split("@", 1) if "@" in remote_ref else remote_ref.rsplit(":", 1)
        lines = self._stream(f"pull {remote_ref}", lambda: client.api.pull(
            repo, tag, stream=True, decode=True, auth_config=self.auth_config()))
        for line in lines:
            m = re.match(r"Digest: (sha256:[0-9a-f]{64})", line.get("status", ""))
            if m:
                return m.group(1)
        raise RegistryError(f"pull {remote_ref}: the engine reported no digest")

    def pull_verified(self, client: DockerClient, remote_ref: str, expected: str) -> str:
        """Pull `remote_ref` and check its digest equals `expected`. Raises DigestMismatchError otherwise."""
        got = self.pull(client, remote_ref)
        if got != expected:
            raise DigestMismatchError(f"{remote_ref}: pulled digest {got} differs from pushed {expected} (the tag "
                                      "moved in between, or the registry altered the image); nothing promoted")
        return got

    def pull_as(self, client: DockerClient, ref: str, local_tags: list[str]) -> None:
        """Pull `HOST/<ref>` and give the image the local tags (for builds that skip a cell the registry has)."""
        remote = self.remote_ref(ref)
        self.pull(client, remote)
        image = client.images.get(remote)
        for t in local_tags:
            repo, tag = t.rsplit(":", 1)
            image.tag(repo, tag)
