"""Provenance of built images: OCI labels from the build and a CycloneDX SBOM of the image's packages.

Labels that change from build to build (created, revision, the content key) are handed to bake as a
target's `labels`, never written into the rendered Dockerfile, so renders stay byte-identical. Label
names: the OCI image spec's annotations (github.com/opencontainers/image-spec, annotations.md) and
`io.rocmig.*` for the cell.

The SBOM lists the Debian packages (`dpkg-query`) and the Python distributions (`importlib.metadata` of
the image's python3) found in the built image, as CycloneDX 1.6 JSON made with cyclonedx-python-lib
(OWASP's maintained library). It is written beside the image (`build/sbom/<role>/<tag>.cdx.json`) and
into the image at `/usr/share/rocmig/sbom.cdx.json` by a one-COPY layer on top of the built cell.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from buildctl import __version__
from buildctl.cache import CACHE_KEY_LABEL
from buildctl.errors import BuildError
from buildctl.plan import Cell

SBOM_IN_IMAGE = "/usr/share/rocmig/sbom.cdx.json"
SBOM_LABEL = "io.rocmig.sbom"
_DPKG_FORMAT = "${Package}\t${Version}\t${Architecture}\t${db:Status-Abbrev}\n"
_PY_LIST = ("import importlib.metadata as m, json; "
            "print(json.dumps(sorted({(d.metadata['Name'], d.version) for d in m.distributions() "
            "if d.metadata['Name']})))")


def git_revision(root: Path) -> str | None:
    """The commit checked out in `root` (40 hex digits), or None outside a git work tree."""
    result = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True)
    return result.stdout.strip() if result.returncode == 0 else None


def source_url(root: Path) -> str | None:
    """Where the source lives: $ROCMIG_SOURCE_URL, else the git remote `origin`, else None."""
    if os.environ.get("ROCMIG_SOURCE_URL"):
        return os.environ["ROCMIG_SOURCE_URL"]
    result = subprocess.run(["git", "-C", str(root), "config", "remote.origin.url"], capture_output=True, text=True)
    return result.stdout.strip() or None


def created_now() -> str:
    """RFC 3339 UTC time of the build; $SOURCE_DATE_EPOCH (reproducible-builds.org) overrides it."""
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    when = dt.datetime.fromtimestamp(int(epoch), dt.UTC) if epoch else dt.datetime.now(dt.UTC)
    return when.replace(microsecond=0).isoformat().replace("+00:00", "Z")


def pins(cell: Cell) -> dict[str, Any]:
    """What the matrix pins for the cell: its role's package list and the release's PyTorch wheel pins."""
    torch = cell.release.torch.model_dump(exclude_none=True) if cell.release.torch else None
    return {"packages": list(cell.release.packages.get(cell.role, [])), "torch": torch}


def build_labels(cell: Cell, key: str, revision: str | None, source: str | None, created: str) -> dict[str, str]:
    """Labels a build of `cell` gets through bake: OCI created/revision/source/version and the cell.

    key: the cell's content key (`sha256:...`, buildctl.cache). revision/source: None leaves that label out.
    """
    labels = {
        "org.opencontainers.image.created": created,
        "org.opencontainers.image.version": cell.tag,
        "io.rocmig.version": __version__,
        "io.rocmig.cell": json.dumps(cell.coordinates(), sort_keys=True, separators=(",", ":")),
        "io.rocmig.pins": json.dumps(pins(cell), sort_keys=True, separators=(",", ":")),
        CACHE_KEY_LABEL: key,
        SBOM_LABEL: SBOM_IN_IMAGE,
    }
    if revision:
        labels["org.opencontainers.image.revision"] = revision
        labels["io.rocmig.commit"] = revision
    if source:
        labels["org.opencontainers.image.source"] = source
    return labels


@dataclass(frozen=True)
class Package:
    """One installed package. kind: 'deb' or 'pypi'; arch: the Debian architecture (deb only)."""

    kind: str
    name: str
    version: str
    arch: str | None = None


def _in_image(ref: str, args: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["docker", "run", "--rm", "--network", "none", "--user", "0", "--entrypoint", args[0],
                           ref, *args[1:]], capture_output=True, text=True, timeout=300)


def parse_dpkg(text: str) -> list[Package]:
    """Packages from `dpkg-query -W -f '${Package}\\t${Version}\\t${Architecture}\\t${db:Status-Abbrev}\\n'`.

    Only installed ones ('ii'); raises ValueError on a line without four tab-separated fields.
    """
    out = []
    for line in text.splitlines():
        if not line.strip():
            continue
        parts = line.split("\t")
        if len(parts) != 4:
            raise ValueError(f"dpkg-query line has {len(parts)} fields, expected 4: {line!r}")
        name, version, arch, status = parts
        if status.strip() == "ii":
            out.append(Package("deb", name, version, arch))
    return out


def image_packages(ref: str) -> list[Package]:
    """Debian packages and Python distributions installed in image `ref` (runs two throwaway containers).

    Raises BuildError when dpkg-query fails; an image without python3 just has no pypi packages.
    """
    dpkg = _in_image(ref, ["dpkg-query", "-W", "-f", _DPKG_FORMAT])
    if dpkg.returncode != 0:
        raise BuildError(f"SBOM of {ref}: dpkg-query failed: {dpkg.stderr.strip()[-300:]}")
    packages = parse_dpkg(dpkg.stdout)
    py = _in_image(ref, ["python3", "-c", _PY_LIST])
    if py.returncode == 0:
        packages += [Package("pypi", name, version) for name, version in json.loads(py.stdout)]
    return packages


def sbom_json(cell: Cell, packages: list[Package], created: str) -> str:
    """CycloneDX 1.6 JSON of `packages` describing the container image `cell.ref`.

    The serial number is a UUID5 of the ref and the package list, so equal inputs give equal documents.
    """
    from cyclonedx.model.bom import Bom
    from cyclonedx.model.component import Component, ComponentType
    from cyclonedx.output import make_outputter
    from cyclonedx.schema import OutputFormat, SchemaVersion
    from packageurl import PackageURL

    listing = "\n".join(f"{p.kind} {p.name} {p.version} {p.arch}" for p in packages)
    bom = Bom(serial_number=uuid.uuid5(uuid.NAMESPACE_URL, f"{cell.ref}\n{listing}"))
    bom.metadata.timestamp = dt.datetime.fromisoformat(created.replace("Z", "+00:00"))
    root = Component(type=ComponentType.CONTAINER, name=f"rocmig/{cell.role}", version=cell.tag,
                     bom_ref=cell.ref)
    bom.metadata.component = root
    components: list[Component] = []
    for p in packages:
        if p.kind == "deb":
            purl = PackageURL("deb", "debian", p.name, p.version, {"arch": p.arch} if p.arch else None)
        else:
            purl = PackageURL("pypi", None, p.name.lower().replace("_", "-"), p.version)
        ref = purl.to_string()
        if any(c.bom_ref.value == ref for c in components):
            continue
        components.append(Component(type=ComponentType.LIBRARY, name=p.name, version=p.version, purl=purl,
                                    bom_ref=ref))
    for c in components:
        bom.components.add(c)
    bom.register_dependency(root, components)
    return make_outputter(bom, OutputFormat.JSON, SchemaVersion.V1_6).output_as_string(indent=2) + "\n"


def sbom_path(out_root: Path, cell: Cell) -> Path:
    """Where the SBOM beside the image goes: `<out_root>/sbom/<role>/<tag>.cdx.json`."""
    return out_root / "sbom" / cell.role / f"{cell.tag}.cdx.json"


def add_sbom(cell: Cell, out_root: Path, tags: list[str], created: str, log: IO[str]) -> Path:
    """Write the SBOM of the built `cell.ref` beside it and COPY it into the image (re-tagging `tags`).

    log: a writable text file receiving the layer build's output. Returns the SBOM path on the host.
    Raises BuildError when the SBOM layer does not build.
    """
    text = sbom_json(cell, image_packages(cell.ref), created)
    path = sbom_path(out_root, cell)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    context = out_root / "sbom" / cell.role / f"{cell.tag}.context"
    context.mkdir(parents=True, exist_ok=True)
    (context / "sbom.cdx.json").write_text(text)
    (context / "Dockerfile").write_text(
        f"# Generated by buildctl: adds the SBOM to {cell.ref}.\nFROM {cell.ref}\n"
        f"COPY sbom.cdx.json {SBOM_IN_IMAGE}\n")
    cmd = ["docker", "buildx", "build", "--progress", "plain", "--load"]
    for tag in tags:
        cmd += ["--tag", tag]
    result = subprocess.run([*cmd, str(context)], stdout=log, stderr=subprocess.STDOUT)
    if result.returncode != 0:
        raise BuildError(f"{cell.ref}: the SBOM layer did not build (docker buildx build exited {result.returncode})")
    return path
