"""`buildctl matrix releases`: ROCm releases on the indexes that are newer than matrix.yaml's.

Looked up (network; the nightly workflow opens an issue when something is found):
- amd: the directory listing of AMD's apt repository (matrix.yaml `sources.amd.apt_repo` without its
  `{full}`: https://repo.radeon.com/rocm/apt/), whose entries are release folders (`7.2.4/`, `latest/`);
- amd: PyTorch's ROCm wheels (https://download.pytorch.org/whl/torch/, a PEP 503 page), whose local
  versions name the ROCm index they were built for (`torch-2.11.0+rocm7.2-...`);
- therock: `rocm-sdk-core` on the release's index (matrix.yaml `therock.index`).
The debian source follows Debian's own archive and is not looked up. An index that does not answer is
reported as not checked, never as "nothing new".
"""

from __future__ import annotations

import re
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass

from buildctl.load import Project
from buildctl.model import version_tuple

TIMEOUT_S = 15
PYTORCH_TORCH_PAGE = "https://download.pytorch.org/whl/torch/"
_FOLDER = re.compile(r'href="(?:[^"]*/)?(\d+\.\d+(?:\.\d+)?)/"')
_ROCM_LOCAL = re.compile(r"(?:\+|%2B)rocm(\d+\.\d+(?:\.\d+)?)", re.IGNORECASE)


@dataclass(frozen=True)
class Found:
    """A release newer than the matrix's newest of its source: where it was seen and what the matrix has."""

    source: str
    version: str
    where: str
    newest_in_matrix: str


@dataclass(frozen=True)
class Unchecked:
    """An index that did not answer (URL and reason)."""

    url: str
    reason: str


def _fetch(url: str) -> tuple[str | None, str]:
    """(body, "") or (None, reason)."""
    try:
        with urllib.request.urlopen(url, timeout=TIMEOUT_S) as response:
            return response.read().decode(errors="replace"), ""
    except urllib.error.HTTPError as exc:
        return None, f"HTTP {exc.code}"
    except (urllib.error.URLError, OSError) as exc:
        return None, str(getattr(exc, "reason", exc))


def _newest(project: Project, source: str) -> str | None:
    fulls = [r.full for r in project.matrix.rocm if r.source == source]
    return max(fulls, key=version_tuple) if fulls else None


def _padded(version: str) -> tuple[int, ...]:
    parts = version_tuple(version)
    return parts + (0,) * (3 - len(parts))


def newer_releases(project: Project, pytorch_page: str = PYTORCH_TORCH_PAGE) -> tuple[list[Found], list[Unchecked]]:
    """Releases on the indexes newer than the matrix's newest per source, and the indexes not checked.

    A version seen as X.Y (a PyTorch index) counts as X.Y.0: newer only when the matrix's newest is older.
    """
    found: list[Found] = []
    unchecked: list[Unchecked] = []
    amd = _newest(project, "amd")
    if amd and "amd" in project.matrix.sources:
        listing = project.matrix.sources["amd"].apt_repo.split("{full}")[0]
        body, why = _fetch(listing)
        if body is None:
            unchecked.append(Unchecked(listing, why))
        else:
            for v in sorted(set(_FOLDER.findall(body)), key=_padded):
                if _padded(v) > _padded(amd):
                    found.append(Found("amd", v, listing, amd))
        body, why = _fetch(pytorch_page)
        if body is None:
            unchecked.append(Unchecked(pytorch_page, why))
        else:
            lines = {r.version for r in project.matrix.rocm if r.source == "amd"}
            for v in sorted(set(_ROCM_LOCAL.findall(body)), key=_padded):
                line = ".".join(v.split(".")[:2])
                if line not in lines and _padded(v) > _padded(amd):
                    found.append(Found("amd", v, pytorch_page, amd))
    for release in project.matrix.rocm:
        if release.source != "therock" or release.therock is None or release.full != _newest(project, "therock"):
            continue
        page = urllib.parse.urljoin(release.therock.index, "rocm-sdk-core/")
        body, why = _fetch(page)
        if body is None:
            unchecked.append(Unchecked(page, why))
            continue
        versions = set(re.findall(r"rocm[_-]sdk[_-]core-(\d+\.\d+\.\d+)(?=[-.])", body))
        for v in sorted(versions, key=_padded):
            if _padded(v) > _padded(release.full):
                found.append(Found("therock", v, page, release.full))
    return found, unchecked


def markdown(found: list[Found], unchecked: list[Unchecked]) -> str:
    """The issue body: a title line (`# ...`), each new release with where it was seen and the bump command."""
    if found:
        title = ", ".join(f"{f.source} {f.version}" for f in found)
        lines = [f"# {title}", "", "Releases newer than matrix.yaml's (found by `buildctl matrix releases`):", "",
                 "| source | release | seen on | newest in matrix.yaml |", "|---|---|---|---|"]
        lines += [f"| {f.source} | {f.version} | {f.where} | {f.newest_in_matrix} |" for f in found]
        lines += ["", "Next (docs/maintenance.md):", ""]
        lines += [f"- `python -m buildctl matrix bump {f.source} {f.version if f.version.count('.') == 2 else f.version + '.0'} --dry-run`"
                  for f in found]
    else:
        lines = ["# no ROCm release newer than matrix.yaml"]
    if unchecked:
        lines += ["", "Not checked (the index did not answer):", ""]
        lines += [f"- {u.url}: {u.reason}" for u in unchecked]
    return "\n".join(lines) + "\n"
