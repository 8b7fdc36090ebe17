"""Check at plan time that the plan's version pins exist on their package indexes.

Pins checked: each planned cell's torch family on its PyTorch ROCm wheel index
(https://download.pytorch.org/whl/<index>/<package>/) and the PyPI frameworks its components install
(https://pypi.org/simple/<name>/), and the therock source's packages on its AMD index (therock_pins); all
are PEP 503 simple pages listing one link per file. An index that does not answer is not
an error here: the pin is reported as unchecked and the build names it if it fails there.
"""

from __future__ import annotations

import re
import urllib.error
import urllib.request
from dataclasses import dataclass

from buildctl.load import Project
from buildctl.plan import Cell, Plan

TIMEOUT_S = 10
TORCH_INDEX = "https://download.pytorch.org/whl/{index}/{package}/"
PYPI = "https://pypi.org/simple/{package}/"


@dataclass(frozen=True)
class PinCheck:
    """One pin: `found` True (exists), False (the index answered without it) or None (index unreachable)."""

    package: str
    version: str
    index: str
    found: bool | None
    detail: str = ""


def _fetch(url: str) -> tuple[int | None, str]:
    """(HTTP status, body) or (None, reason) when nothing answered."""
    try:
        with urllib.request.urlopen(url, timeout=TIMEOUT_S) as response:
            return response.status, response.read().decode(errors="replace")
    except urllib.error.HTTPError as exc:
        return exc.code, ""
    except (urllib.error.URLError, OSError) as exc:
        return None, str(getattr(exc, "reason", exc))


def _simple_index_pin(url: str, package: str, version: str) -> PinCheck:
    """Look for a file of package==version (a wheel or an sdist; a +local suffix allowed) on a simple page."""
    status, body = _fetch(url)
    if status is None:
        return PinCheck(package, version, url, None, body)
    name = "[-_.]".join(re.escape(part) for part in re.split(r"[-_.]", package))
    # Index pages write the local-version '+' as is or URL-encoded (%2B: torch-2.11.0%2Brocm10.0.0-...).
    plus = r"(?:\+|%2B)"
    wanted = plus.join(re.escape(part) for part in version.split("+"))
    file = re.compile(rf"{name}-{wanted}({plus}[\w.]+)?(-|\.tar\.gz|\.zip)", re.IGNORECASE)
    return PinCheck(package, version, url, status == 200 and bool(file.search(body)),
                    "" if status == 200 else f"HTTP {status}")


# Roles of the therock source whose images (or builder stages) install TheRock's development tree.
THEROCK_DEVEL_ROLES = ("dev", "serve", "train", "kernels")


def therock_pins(cell: Cell) -> list[tuple[str, str]]:
    """(package, version) of TheRock's packages the cell installs from its index: the SDK's arch-neutral
    part and the cell arch's device package (base), rocm-sdk-devel (roles that compile), the torch family
    with its device packages (torch). Empty for the other sources."""
    r = cell.release.therock
    if r is None:
        return []
    arch = cell.arch_name
    if cell.role == "base":
        return [("rocm-sdk-core", r.sdk), ("rocm-sdk-libraries", r.sdk), (f"rocm-sdk-device-{arch}", r.sdk)]
    if cell.role == "torch":
        return [("torch", r.torch), ("torchvision", r.torchvision), ("torchaudio", r.torchaudio),
                (f"amd-torch-device-{arch}", r.torch), (f"amd-torchvision-device-{arch}", r.torchvision),
                ("triton", r.triton)]
    return [("rocm-sdk-devel", r.sdk)] if cell.role in THEROCK_DEVEL_ROLES else []


def check_pins(project: Project, plan: Plan) -> list[PinCheck]:
    """Every distinct pin the plan's cells install, checked once each (network: one request per pin)."""
    wanted: dict[tuple[str, ...], None] = {}
    for cell in plan.cells:
        torch = cell.release.torch
        if cell.role == "torch" and torch is not None:
            for package, version in (("torch", torch.torch), ("torchvision", torch.torchvision),
                                     ("torchaudio", torch.torchaudio), (torch.triton_dist, torch.triton)):
                if version:
                    wanted[("torch", torch.index, package, str(version))] = None
        for package, version in therock_pins(cell):
            wanted[("index", cell.release.therock.index if cell.release.therock else "", package, version)] = None
        for component in cell.components:
            fw = project.matrix.frameworks[component]
            if fw.pypi:
                wanted[("pypi", fw.pypi, fw.version)] = None
    results = []
    for key in wanted:
        if key[0] == "torch":
            _, index, package, version = key
            results.append(_simple_index_pin(TORCH_INDEX.format(index=index, package=package), package, version))
        elif key[0] == "index":
            _, index, package, version = key
            results.append(_simple_index_pin(f"{index.rstrip('/')}/{package}/", package, version))
        else:
            _, package, version = key
            results.append(_simple_index_pin(PYPI.format(package=package.lower()), package, version))
    return results
