"""`buildctl report hardware`: the hardware test report a pull request pastes (Markdown or JSON).

Says on which AMD GPU, driver, firmware, ROCm, OS and container a change was verified. Sources, each
optional (a host without one of them reports the rest): rocminfo, `amd-smi static`, the KFD topology in
/sys/class/kfd, /sys/module/amdgpu/version, /opt/rocm/.info/version, /etc/os-release, uname, the
container markers (/.dockerenv, /run/.containerenv, /proc/1/cgroup) and /etc/rocmig/cell.json, which
every rocmig image carries. A host without an AMD GPU gets a report that says so; it is not an error.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import subprocess
import xml.etree.ElementTree as ET
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from buildctl.hwparse import (
    Gpu,
    RocminfoSystem,
    kfd_gpu,
    parse_amdsmi_static,
    parse_kfd_properties,
    parse_rocminfo,
    parse_rocminfo_system,
)

TOOL_TIMEOUT_S = 60
KFD_TOPOLOGY = Path("sys/class/kfd/kfd/topology/nodes")


@dataclass(frozen=True)
class Host:
    """The host or container the report was made in. container: docker, podman, kubernetes, or None."""

    os: str
    kernel: str
    machine: str
    container: str | None
    image: str | None
    image_digest: str | None
    rocm: str | None
    amdgpu_driver: str | None
    kfd: RocminfoSystem | None


@dataclass(frozen=True)
class TestSummary:
    """Counts of a JUnit XML file (pytest --junitxml); failed lists `classname::name` of failures and errors."""

    path: str
    tests: int
    failures: int
    errors: int
    skipped: int
    seconds: float
    failed: list[str] = field(default_factory=list)
    exit_code: int | None = None


@dataclass(frozen=True)
class Report:
    """The whole report: host, the GPUs (one entry per GPU, from the best source), notes on what was missing."""

    host: Host
    gpus: list[Gpu]
    notes: list[str]
    tests: TestSummary | None = None
    kernels_bench: str | None = None  # path of a `buildctl kernels bench` result JSON

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def _read(path: Path) -> str | None:
    try:
        return path.read_text(errors="replace")
    except OSError:
        return None


def _run_tool(argv: list[str], notes: list[str]) -> str | None:
    """stdout of a tool, or None (with a note) when it is not on PATH, fails or hangs."""
    if shutil.which(argv[0]) is None:
        notes.append(f"{argv[0]}: not on PATH")
        return None
    try:
        proc = subprocess.run(argv, check=False, capture_output=True, text=True, timeout=TOOL_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        notes.append(f"{' '.join(argv)}: no answer in {TOOL_TIMEOUT_S} s")
        return None
    if proc.returncode != 0:
        first = (proc.stderr or proc.stdout).strip().splitlines()
        notes.append(f"{' '.join(argv)}: exit {proc.returncode}{': ' + first[0] if first else ''}")
        return proc.stdout or None
    return proc.stdout


def kfd_gpus(root: Path) -> list[Gpu]:
    """GPUs of the KFD topology under root (normally /): one per node with SIMDs, in node order."""
    nodes = root / KFD_TOPOLOGY
    if not nodes.is_dir():
        return []
    gpus = []
    for node in sorted((p for p in nodes.iterdir() if p.name.isdigit()), key=lambda p: int(p.name)):
        props = parse_kfd_properties(_read(node / "properties") or "")
        banks = [parse_kfd_properties(_read(b / "properties") or "").get("size_in_bytes", 0)
                 for b in sorted((node / "mem_banks").glob("*"))]
        gpu = kfd_gpu(int(node.name), props, [b for b in banks if b])
        if gpu is not None:
            gpus.append(gpu)
    return gpus


def merge_gpus(rocminfo: list[Gpu], amdsmi: list[Gpu], kfd: list[Gpu]) -> list[Gpu]:
    """One entry per GPU: rocminfo's agents first (they name arch, CUs, wavefront, VRAM), completed by
    amd-smi's GPU of the same index (driver, IFWI/VBIOS, BDF); without rocminfo amd-smi's list, then KFD's."""
    primary = rocminfo or amdsmi or kfd
    merged = []
    for i, gpu in enumerate(primary):
        extra = amdsmi[i] if primary is not amdsmi and i < len(amdsmi) else None
        if extra is not None:
            values = asdict(gpu)
            for key, value in asdict(extra).items():
                if key == "firmware":
                    values["firmware"] = {**gpu.firmware, **extra.firmware}
                elif values.get(key) in (None, "") and value not in (None, ""):
                    values[key] = value
            values["source"] = f"{gpu.source}+{extra.source}"
            gpu = Gpu(**values)
        merged.append(gpu)
    return merged


def _os_name(root: Path) -> str:
    text = _read(root / "etc/os-release") or ""
    for line in text.splitlines():
        if line.startswith("PRETTY_NAME="):
            return line.split("=", 1)[1].strip().strip('"')
    return "unknown (no /etc/os-release)"


def _container(root: Path) -> str | None:
    if (root / ".dockerenv").exists():
        return "docker"
    if (root / "run/.containerenv").exists():
        return "podman"
    cgroup = _read(root / "proc/1/cgroup") or ""
    for marker, name in (("kubepods", "kubernetes"), ("docker", "docker"), ("containerd", "containerd")):
        if marker in cgroup:
            return name
    return None


def _rocm_version(root: Path) -> str | None:
    text = _read(root / "opt/rocm/.info/version")
    if text:
        return text.strip()
    cell = _cell(root)
    return cell.get("rocm_full") if cell else None


def _cell(root: Path) -> dict[str, Any] | None:
    text = _read(root / "etc/rocmig/cell.json")
    try:
        return json.loads(text) if text else None
    except json.JSONDecodeError:
        return None


def collect(root: Path = Path("/")) -> Report:
    """Gather the report on this host. root: the filesystem root the files are read under (tests point
    it at a copied tree); tools are run from PATH. Never raises for a missing tool or file: notes say what
    was missing."""
    notes: list[str] = []
    rocminfo_text = _run_tool(["rocminfo"], notes)
    amdsmi_text = _run_tool(["amd-smi", "static"], notes)
    gpus = merge_gpus(parse_rocminfo(rocminfo_text or ""), parse_amdsmi_static(amdsmi_text or ""), kfd_gpus(root))
    cell = _cell(root)
    driver = _read(root / "sys/module/amdgpu/version")
    if not (root / "dev/kfd").exists():
        notes.append("/dev/kfd is absent: no AMD GPU is visible here (on a container, pass --device=/dev/kfd)")
    host = Host(
        os=_os_name(root), kernel=platform.release(), machine=platform.machine(), container=_container(root),
        image=cell.get("ref") if cell else None, image_digest=os.environ.get("ROCMIG_IMAGE_DIGEST") or None,
        rocm=_rocm_version(root), amdgpu_driver=driver.strip() if driver else None,
        kfd=parse_rocminfo_system(rocminfo_text) if rocminfo_text else None)
    return Report(host, gpus, notes)


def summarize_junit(path: Path, exit_code: int | None = None) -> TestSummary:
    """Counts of a pytest JUnit XML file (a <testsuites> root or a single <testsuite>).

    Raises OSError or xml.etree.ElementTree.ParseError when the file is missing or not XML.
    """
    root = ET.parse(path).getroot()
    suites = [root] if root.tag == "testsuite" else list(root.iter("testsuite"))
    failed = [f"{case.get('classname')}::{case.get('name')}" for s in suites for case in s.iter("testcase")
              if case.find("failure") is not None or case.find("error") is not None]
    return TestSummary(str(path), sum(int(s.get("tests", 0)) for s in suites),
                       sum(int(s.get("failures", 0)) for s in suites), sum(int(s.get("errors", 0)) for s in suites),
                       sum(int(s.get("skipped", 0)) for s in suites), round(sum(float(s.get("time", 0)) for s in suites), 2),
                       failed, exit_code)


def run_amdgpu_tests(project_root: Path, junit: Path) -> TestSummary:
    """Run `pytest -m amdgpu tests` under project_root with JUnit XML written to junit; summarize it.

    pytest's own output (its progress) goes to this process's stderr, so stdout keeps only the report
    (`--json` output stays one JSON document).
    """
    import sys

    junit.parent.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run([sys.executable, "-m", "pytest", "-m", "amdgpu", "-q", f"--junitxml={junit}", "tests"],
                          cwd=project_root, stdout=sys.stderr.fileno(), check=False)
    return summarize_junit(junit, proc.returncode)


KERNELS_BENCH_BUDGET_S = 900


def run_kernels_bench(out: Path) -> tuple[Path | None, str]:
    """Run `buildctl kernels bench --quick --no-tune` (the TileLang kernels against torch on GPU 0) into out.

    Returns (result path, "") or (None, why it did not run: its exit code and last line). Exit 2 of the
    bench means no usable GPU or no tile table for its arch.
    """
    import sys

    out.parent.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run([sys.executable, "-m", "buildctl", "kernels", "bench", "--quick", "--no-tune",
                           "--budget-s", str(KERNELS_BENCH_BUDGET_S), "--out", str(out)],
                          capture_output=True, text=True, check=False)
    if proc.returncode == 0 and out.is_file():
        return out, ""
    last = (proc.stderr or proc.stdout).strip().splitlines()
    return None, f"kernels bench: exit {proc.returncode}{': ' + last[-1] if last else ''}"


def kernels_section(path: Path) -> list[str]:
    """Markdown lines for a kernels bench result: device and target, then kernels.bench.report's table."""
    from kernels.bench.report import goal_met, render_table

    result = json.loads(path.read_text())
    met = [goal_met(c, result["goals"]) for c in result["cases"]]
    return ["", f"### `buildctl kernels bench` on {result['device']} ({result['target']})", "",
            f"{sum(m is True for m in met)} of {len(met)} cases meet their goal; "
            f"{sum(m is None for m in met)} had no correct config. Result: `{path}`", "",
            render_table(result)]


def _size(n: int | None) -> str:
    return "-" if n is None else f"{n / 2**30:.1f} GiB" if n >= 2**30 else f"{n // 1024} KiB"


def markdown(report: Report) -> str:
    """The report as Markdown for a pull request body."""
    h = report.host
    kfd = "-"
    if h.kfd is not None:
        kfd = h.kfd.kfd_version or ("loaded" if h.kfd.kfd_loaded else "-")
        if h.kfd.runtime_version:
            kfd += f" (HSA runtime {h.kfd.runtime_version})"
    lines = ["## Hardware report", "", "| | |", "|---|---|",
             f"| OS | {h.os} |", f"| kernel | {h.kernel} ({h.machine}) |",
             f"| ROCm | {h.rocm or '-'} |", f"| amdgpu driver | {h.amdgpu_driver or '-'} |", f"| KFD | {kfd} |",
             f"| container | {h.container or 'none'} |", f"| image | {h.image or '-'} |",
             f"| image digest | {h.image_digest or '-'} |", ""]
    if report.gpus:
        lines += ["| # | GPU | gfx arch | CUs | wavefront | VRAM | LDS | driver | firmware | source |",
                  "|---|---|---|---|---|---|---|---|---|---|"]
        for i, g in enumerate(report.gpus):
            gfx = g.gfx or "-"
            if g.features:
                gfx += f" ({g.features})"
            firmware = ", ".join(f"{k} {v}" for k, v in g.firmware.items()) or "-"
            lines.append(f"| {i} | {g.name or '-'} | {gfx} | {g.compute_units or '-'} | {g.wavefront or '-'} | "
                         f"{_size(g.vram_bytes)} | {_size(g.lds_bytes)} | {g.driver or '-'} | {firmware} | {g.source} |")
    else:
        lines.append("**No AMD GPU is present on this host**: nothing here was verified on AMD hardware.")
    if report.tests is not None:
        t = report.tests
        passed = t.tests - t.failures - t.errors - t.skipped
        lines += ["", "### `pytest -m amdgpu`", "",
                  (f"{t.tests} tests: {passed} passed, {t.failures} failed, {t.errors} errors, "
                   f"{t.skipped} skipped in {t.seconds} s (JUnit XML: `{t.path}`)")]
        lines += [f"- failed: `{name}`" for name in t.failed]
    if report.kernels_bench is not None:
        lines += kernels_section(Path(report.kernels_bench))
    if report.notes:
        lines += ["", "<details><summary>what could not be read</summary>", ""]
        lines += [f"- {n}" for n in report.notes]
        lines += ["", "</details>"]
    return "\n".join(lines) + "\n"
