"""Resolve each amd cell's Python requirements with pip against PyPI before any build (needs PyPI).

A cell's image installs its components with pip on top of its torch image, whose constraints file pins the
torch family. `pip install --dry-run --report` with the cell's Python version and manylinux platform
tags (from matrix.yaml `os_images`: python, glibc) and the torch family as constraints finds, before an
hour of building, what the build would meet at its pip step:
  - Requires-Python a release refuses, a pin that does not exist for that Python, a conflict between pins
    (compressed-tensors releases that require torch < 2.11 against a torch 2.11 cell): pip exits non-zero;
  - a package that pulls CUDA wheels or PyPI's `triton` (a CUDA build of the package ROCm torch gets from
    pytorch-triton-rocm / triton-rocm): the torch images refuse `triton` in their constraints, so such a
    requirement fails the build (install it with --no-deps: matrix.yaml `no_deps`).
PyPI's torch stands in for the ROCm build in the resolution (same version, so the same conflicts); its own
CUDA dependencies are not held against the cell. Components that PyPI has only as an sdist (DeepSpeed,
flash-attention) are resolved through the Requires-Dist of their sdist's PKG-INFO, fetched from PyPI.
A component with `entry_modules` (SGLang) has its import closure read from its pinned sdist for the HIP
platform (buildctl.import_closure); each third-party module the closure requires must be provided by a
wheel of the resolution (its top-level names read by buildctl.wheel_contents), the torch family and its
Triton, or a component the cell builds from source.
"""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
import tarfile
import tempfile
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from buildctl.import_closure import closure
from buildctl.load import Project
from buildctl.plan import Cell, Plan
from buildctl.wheel_contents import wheel_modules

TORCH_FAMILY = ("torch", "torchvision", "torchaudio")
CUDA_NAME = re.compile(r"^(nvidia-|cuda-|cupy-cuda|flashinfer|triton$)")
SIMPLE_JSON = "application/vnd.pypi.simple.v1+json"
PYPI_SIMPLE = "https://pypi.org/simple/{name}/"
TIMEOUT_S = 300
WHEEL_READERS = 8
# pip settings of the calling environment that would change what it resolves against.
_PIP_ENV = ("PIP_FIND_LINKS", "PIP_CONSTRAINT", "PIP_EXTRA_INDEX_URL", "PIP_INDEX_URL", "PIP_NO_INDEX")


@dataclass(frozen=True)
class Resolution:
    """What one pip resolution of a cell checks: requirements under constraints, for a Python and platform.

    no_deps: requirements the image installs with --no-deps; each must exist for the Python and
    platform, and its own requirements (less CUDA ones) must be in the resolution.
    imports: (third-party top-level module, first-party module importing it) an entry point requires at
    start; provided: modules the cell installs outside this resolution (the torch family, its Triton,
    components built from source).
    """

    label: str
    python: str
    glibc: str
    requirements: tuple[str, ...]
    constraints: tuple[str, ...] = ()
    no_deps: tuple[str, ...] = ()
    imports: tuple[tuple[str, str], ...] = ()
    provided: tuple[str, ...] = ()


@dataclass
class Outcome:
    """The result of one resolution: problems (empty: it resolves), the versions pip chose and the URL
    of each chosen file (no_deps ones included), by canonical name."""

    resolution: Resolution
    problems: list[str] = field(default_factory=list)
    chosen: dict[str, str] = field(default_factory=dict)
    urls: dict[str, str] = field(default_factory=dict)


def platform_tags(glibc: str) -> list[str]:
    """manylinux tags an x86_64 system with this glibc runs, newest first (PEP 600 and the legacy aliases)."""
    minor = int(glibc.split(".")[1])
    tags = [f"manylinux_2_{m}_x86_64" for m in range(minor, 4, -1)]
    return tags + ["manylinux2014_x86_64", "manylinux2010_x86_64", "manylinux1_x86_64", "linux_x86_64"]


def _marker_env(python: str, extra: str = "") -> dict[str, str]:
    return {"python_version": python, "python_full_version": f"{python}.0", "platform_machine": "x86_64",
            "sys_platform": "linux", "platform_system": "Linux", "os_name": "posix",
            "implementation_name": "cpython", "platform_python_implementation": "CPython", "extra": extra}


def applies(req: Requirement, python: str, extras: tuple[str, ...] = ()) -> bool:
    """True when `req`'s marker holds on x86_64 Linux CPython `python` with any of `extras` (or none)."""
    if req.marker is None:
        return True
    return any(req.marker.evaluate(_marker_env(python, e)) for e in ("", *extras))


def pypi_files(name: str, version: str) -> list[dict[str, Any]]:
    """The files PyPI lists for name==version (PEP 691 JSON: filename, url, ...); [] when none.

    Raises urllib errors when PyPI does not answer.
    """
    request = urllib.request.Request(PYPI_SIMPLE.format(name=canonicalize_name(name)),
                                     headers={"Accept": SIMPLE_JSON})
    with urllib.request.urlopen(request, timeout=60) as response:
        files = json.load(response)["files"]
    stem = re.sub(r"[-_.]+", "[-_.]", re.escape(canonicalize_name(name)).replace("\\-", "-"))
    wanted = re.compile(rf"^{stem}-{re.escape(version)}(-|\.tar\.gz$)", re.IGNORECASE)
    return [f for f in files if wanted.match(f["filename"])]


def _sdist(files: list[dict[str, Any]], cache: Path) -> Path:
    """The sdist among `files`, downloaded into `cache` once. Raises LookupError when there is none."""
    match = next((f for f in files if f["filename"].endswith(".tar.gz")), None)
    if match is None:
        raise LookupError("no sdist")
    local: Path = cache / str(match["filename"])
    if not local.exists():
        with urllib.request.urlopen(match["url"], timeout=120) as response:
            local.write_bytes(response.read())
    return local


def sdist_requires(files: list[dict[str, Any]], cache: Path) -> list[str]:
    """The Requires-Dist lines of the PKG-INFO of the sdist among `files` (downloaded into `cache` once).

    Raises LookupError when `files` holds no sdist.
    """
    local = _sdist(files, cache)
    with tarfile.open(fileobj=io.BytesIO(local.read_bytes()), mode="r:gz") as tar:
        member = next(m for m in tar.getmembers() if m.name.count("/") == 1 and m.name.endswith("/PKG-INFO"))
        text = tar.extractfile(member).read().decode()  # type: ignore[union-attr]
    return [line.split(":", 1)[1].strip() for line in text.splitlines() if line.startswith("Requires-Dist:")]


def sdist_imports(files: list[dict[str, Any]], entries: list[str], cache: Path) -> tuple[tuple[str, str], ...]:
    """(module, importer) of each third-party module the import closure of `entries` requires on the HIP
    platform, read from the sdist among `files` (unpacked into `cache` once).

    Raises LookupError when there is no sdist or it holds no source of the entries' package.
    """
    local = _sdist(files, cache)
    unpacked = cache / (local.name[: -len(".tar.gz")] + ".src")
    if not unpacked.is_dir():
        with tarfile.open(local, mode="r:gz") as tar:
            tar.extractall(unpacked, filter="data")
    package = entries[0].split(".")[0]
    inits = sorted(unpacked.glob(f"**/{package}/__init__.py"), key=lambda p: len(p.parts))
    if not inits:
        raise LookupError(f"{local.name} holds no {package}/__init__.py")
    return tuple(sorted(closure(inits[0].parent.parent, entries, "hip").required.items()))


def _provided(project: Project, cell: Cell) -> tuple[str, ...]:
    """Import names the cell installs outside its PyPI resolution: the torch family, its ROCm Triton
    (the `triton` package) and each component (its name, or its PyPI name, with - as _)."""
    names = {"torch", "torchvision", "torchaudio", "triton"}
    for component in cell.components:
        fw = project.matrix.frameworks[component]
        names |= {n.replace("-", "_") for n in (component, fw.pypi) if n}
    return tuple(sorted(names))


def cell_resolutions(project: Project, cell: Cell, cache: Path) -> list[Resolution]:
    """The resolutions one amd cell's pip steps need ([] for cells without ROCm torch or OS facts).

    torch: the venv tools. Other roles, per component: its runtime_deps when it is installed without its
    own dependency set (SGLang); the Requires-Dist of its sdist when it is built from the sdist (compiled
    against torch, or PyPI has no wheel of it); name==version otherwise (a component also built from git,
    TileLang, has that release's requirements). Components with no PyPI name (aiter), or whose PyPI
    release has no sdist to read (sglang-kernel: CUDA wheels only) have no PyPI step. Network: PyPI's
    simple pages.
    """
    torch, os_facts = cell.release.torch, cell.os
    if torch is None or os_facts is None:
        return []
    pins = (f"torch=={torch.torch}", f"torchvision=={torch.torchvision}", f"torchaudio=={torch.torchaudio}")
    label = f"{cell.ref} (Python {os_facts.python})"
    if cell.role == "torch":
        return [Resolution(label, os_facts.python, os_facts.glibc, tuple(torch.tools))]
    requirements: list[str] = []
    no_deps: list[str] = []
    imports: list[tuple[str, str]] = []
    for name in cell.components:
        fw = project.matrix.frameworks[name]
        no_deps += fw.no_deps + fw.overrides
        if fw.entry_modules and fw.pypi:
            imports += sdist_imports(pypi_files(fw.pypi, fw.version), fw.entry_modules, cache)
        if fw.runtime_deps:
            requirements += fw.runtime_deps
            continue
        if fw.pypi is None:
            continue
        files = pypi_files(fw.pypi, fw.version)
        has_wheel = any(f["filename"].endswith(".whl") for f in files)
        if has_wheel and not fw.needs_rocm_torch:
            requirements.append(f"{fw.pypi}=={fw.version}")
            continue
        try:
            requirements += [r for r in sdist_requires(files, cache) if applies(Requirement(r), os_facts.python)]
        except LookupError:
            continue  # a CUDA-only wheel on PyPI (sglang-kernel): the ROCm build comes from git
    if not requirements:
        return []
    return [Resolution(label, os_facts.python, os_facts.glibc, tuple(dict.fromkeys(requirements)), pins,
                       tuple(dict.fromkeys(no_deps)), tuple(imports),
                       _provided(project, cell) if imports else ())]


def _pip(args: list[str], workdir: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in _PIP_ENV}
    env["PIP_CONFIG_FILE"] = os.devnull
    cmd = [sys.executable, "-m", "pip", "install", "--dry-run", "--ignore-installed", "--progress-bar", "off",
           "--index-url", "https://pypi.org/simple", *args]
    try:
        return subprocess.run(cmd, cwd=workdir, env=env, capture_output=True, text=True, timeout=TIMEOUT_S,
                              check=False)
    except subprocess.TimeoutExpired:
        return subprocess.CompletedProcess(cmd, -1, "", f"ERROR: pip did not finish in {TIMEOUT_S} s")


def _target(resolution: Resolution) -> list[str]:
    args = ["--python-version", resolution.python, "--only-binary", ":all:"]
    for tag in platform_tags(resolution.glibc):
        args += ["--platform", tag]
    return args


def _error(stderr: str) -> str:
    """pip's reason in one line: its ERROR lines and the requirements it names as the conflict."""
    lines = [ln.strip() for ln in stderr.splitlines() if ln.strip() and not ln.startswith("WARNING")]
    cause = [ln for ln in lines if ln.startswith("ERROR") or " depends on " in ln or "requested" in ln
             or "requires a different Python" in ln]
    return " | ".join((cause or lines)[-8:])


def resolve(resolution: Resolution) -> Outcome:
    """Run pip's resolver for `resolution`; the Outcome lists what a build's pip step would meet."""
    outcome = Outcome(resolution)
    with tempfile.TemporaryDirectory(prefix="rocmig-resolve-") as tmp:
        work = Path(tmp)
        args = _target(resolution) + ["--report", "report.json"]
        if resolution.constraints:
            (work / "constraints.txt").write_text("\n".join(resolution.constraints) + "\n")
            args += ["--constraint", "constraints.txt"]
        done = _pip(args + list(resolution.requirements), work)
        if done.returncode != 0:
            outcome.problems.append(f"{resolution.label}: pip cannot resolve: {_error(done.stdout + done.stderr)}")
            return outcome
        report = json.loads((work / "report.json").read_text())
        outcome.chosen = {canonicalize_name(i["metadata"]["name"]): i["metadata"]["version"]
                          for i in report["install"]}
        outcome.urls = {canonicalize_name(i["metadata"]["name"]): i["download_info"]["url"]
                        for i in report["install"]}
        outcome.problems += _cuda_pulls(report, resolution)
        for spec in resolution.no_deps:
            outcome.problems += _check_no_deps(spec, resolution, outcome, work)
        if resolution.imports:
            outcome.problems += missing_imports(resolution, outcome.urls)
    return outcome


def missing_imports(resolution: Resolution, urls: dict[str, str]) -> list[str]:
    """One problem per module of resolution.imports that neither a wheel at `urls` (by its top-level
    names, read by Range requests) nor resolution.provided supplies. Network: the wheels' host."""
    wheels = {name: url for name, url in urls.items() if name not in TORCH_FAMILY}
    with ThreadPoolExecutor(max_workers=WHEEL_READERS) as pool:
        tops = dict(zip(wheels, pool.map(wheel_modules, wheels.values()), strict=True))
    have = set(resolution.provided).union(*tops.values())
    return [f"{resolution.label}: {importer} imports {module}, which no distribution the image installs "
            f"provides: add the distribution that provides it (matrix.yaml runtime_deps)"
            for module, importer in resolution.imports if module not in have]


def _requires(item: dict[str, Any], python: str) -> list[Requirement]:
    extras = tuple(item.get("requested_extras") or ())
    out = []
    for text in item["metadata"].get("requires_dist") or []:
        try:
            req = Requirement(text)
        except InvalidRequirement:
            continue
        if applies(req, python, extras):
            out.append(req)
    return out


def _cuda_pulls(report: dict[str, Any], resolution: Resolution) -> list[str]:
    """Packages outside the torch family that require a CUDA wheel or PyPI's triton."""
    out = []
    for item in report["install"]:
        name = canonicalize_name(item["metadata"]["name"])
        if name in TORCH_FAMILY or CUDA_NAME.match(name):
            continue
        for req in _requires(item, resolution.python):
            if CUDA_NAME.match(canonicalize_name(req.name)):
                out.append(f"{resolution.label}: {item['metadata']['name']} {item['metadata']['version']} "
                           f"requires {req} (a CUDA package; the torch image refuses triton): install it "
                           f"with --no-deps (matrix.yaml no_deps) and list its other requirements")
    return out


def _check_no_deps(spec: str, resolution: Resolution, outcome: Outcome, work: Path) -> list[str]:
    """Problems of one --no-deps requirement; its file's URL is added to outcome.urls."""
    done = _pip(_target(resolution) + ["--no-deps", "--report", "nodeps.json", spec], work)
    if done.returncode != 0:
        return [f"{resolution.label}: {spec} (installed with --no-deps) does not install: "
                f"{_error(done.stdout + done.stderr)}"]
    item = json.loads((work / "nodeps.json").read_text())["install"][0]
    have = set(outcome.chosen) | set(TORCH_FAMILY)
    outcome.urls[canonicalize_name(item["metadata"]["name"])] = item["download_info"]["url"]
    return [f"{resolution.label}: {spec} requires {req}, which the image does not install"
            for req in _requires(item, resolution.python)
            if not CUDA_NAME.match(canonicalize_name(req.name)) and canonicalize_name(req.name) not in have]


def plan_resolutions(project: Project, plan: Plan, cache: Path) -> list[Resolution]:
    """The distinct resolutions of a plan's cells (cells of one release and role mostly share one)."""
    unique: dict[tuple[object, ...], Resolution] = {}
    for cell in plan.cells:
        for r in cell_resolutions(project, cell, cache):
            unique.setdefault((r.python, r.glibc, r.requirements, r.constraints, r.no_deps, r.imports,
                               r.provided), r)
    return list(unique.values())


def check_plan(project: Project, plan: Plan, workers: int = 2) -> list[Outcome]:
    """Resolve every distinct resolution of `plan` (pip in `workers` parallel runs); one Outcome each.

    Network: PyPI. Each pip run is bounded by TIMEOUT_S (a run past it is a problem, not a hang).
    """
    with tempfile.TemporaryDirectory(prefix="rocmig-sdists-") as tmp:
        resolutions = plan_resolutions(project, plan, Path(tmp))
        with ThreadPoolExecutor(max_workers=workers) as pool:
            return list(pool.map(resolve, resolutions))
