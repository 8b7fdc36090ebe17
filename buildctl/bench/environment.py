"""What a run ran on: host, CPU, memory, GPUs (model, gfx arch or compute capability, VRAM), driver,
ROCm / CUDA, torch / sglang / transformers versions, and the image (tag and digest) when the server runs
in a container.

Sources: `nvidia-smi --query-gpu=name,compute_cap,memory.total,driver_version` and its banner's
"CUDA Version"; the KFD topology (`/sys/class/kfd/kfd/topology/nodes/*/properties`, `gfx_target_version`
= major*10000 + minor*100 + stepping, minor and stepping written in hex in the gfx name: 90402 is gfx942,
90010 gfx90a), `/sys/class/drm/card*/device/mem_info_vram_total`, `amd-smi static --asic --json`
(`market_name`), `/sys/module/amdgpu/version`, `/opt/rocm/.info/version`. Package versions come from the
server's container when one is named (its own Python), else from this interpreter.
"""

from __future__ import annotations

import json
import os
import platform
import re
import shutil
import socket
import subprocess
from collections.abc import Callable
from importlib import metadata
from pathlib import Path

import psutil

from buildctl.bench.runfile import Environment, Gpu

KFD_NODES = Path("/sys/class/kfd/kfd/topology/nodes")
PACKAGES = ("torch", "sglang", "transformers")
_VERSIONS_PY = ("import importlib.metadata as m, json\n"
                "def v(n):\n    try: return m.version(n)\n    except Exception: return ''\n"
                "import sys; print(json.dumps({n: v(n) for n in sys.argv[1:]}))")


def _out(argv: list[str]) -> str:
    if not shutil.which(argv[0]):
        return ""
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=20, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return done.stdout if done.returncode == 0 else ""


def gfx_name(target_version: int) -> str:
    """KFD `gfx_target_version` as a gfx arch name: 90402 -> gfx942, 90010 -> gfx90a, 110000 -> gfx1100."""
    major, minor, step = target_version // 10000, target_version // 100 % 100, target_version % 100
    return f"gfx{major}{minor:x}{step:x}"


def nvidia_gpus() -> tuple[list[Gpu], str, str]:
    """(GPUs, driver version, CUDA version) from nvidia-smi; empty when it is missing."""
    rows = _out(["nvidia-smi", "--query-gpu=name,compute_cap,memory.total,driver_version",
                 "--format=csv,noheader,nounits"])
    gpus, driver = [], ""
    for line in rows.strip().splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) == 4:
            name, cap, mem, driver = parts
            vram = float(mem) if mem.replace(".", "", 1).isdigit() else None
            gpus.append(Gpu(vendor="nvidia", name=name, arch="sm_" + cap.replace(".", ""), vram_mib=vram))
    banner = re.search(r"CUDA Version:\s*([\d.]+)", _out(["nvidia-smi"])) if gpus else None
    return gpus, driver, banner.group(1) if banner else ""


def amd_gpus() -> tuple[list[Gpu], str, str]:
    """(GPUs, amdgpu driver version, ROCm version) from the KFD topology and sysfs; empty without them."""
    archs = []
    for props in sorted(KFD_NODES.glob("*/properties")) if KFD_NODES.is_dir() else []:
        fields = dict(line.split(None, 1) for line in props.read_text().splitlines() if " " in line)
        target = int(fields.get("gfx_target_version", "0").strip() or 0)
        if target:
            archs.append(gfx_name(target))
    if not archs:
        return [], "", ""
    vram = [int(p.read_text()) / 2**20 for p in sorted(Path("/sys/class/drm").glob("card*/device/mem_info_vram_total"))]
    names = []
    try:
        static = json.loads(_out(["amd-smi", "static", "--asic", "--json"]) or "[]")
        entries = static.get("gpu_data", []) if isinstance(static, dict) else static
        names = [str((e.get("asic") or {}).get("market_name", "")) for e in entries if isinstance(e, dict)]
    except json.JSONDecodeError:
        pass
    gpus = [Gpu(vendor="amd", name=names[i] if i < len(names) and names[i] else f"AMD GPU ({arch})", arch=arch,
                vram_mib=vram[i] if i < len(vram) else None) for i, arch in enumerate(archs)]
    driver_file, rocm_file = Path("/sys/module/amdgpu/version"), Path("/opt/rocm/.info/version")
    driver = driver_file.read_text().strip() if driver_file.is_file() else ""
    rocm = rocm_file.read_text().strip() if rocm_file.is_file() else ""
    return gpus, driver, rocm


def local_versions(names: tuple[str, ...] = PACKAGES) -> dict[str, str]:
    """Installed versions of `names` in this interpreter ('' for those missing)."""
    found = {}
    for name in names:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            found[name] = ""
    return found


def _os_name() -> str:
    release = Path("/etc/os-release")
    if release.is_file():
        for line in release.read_text().splitlines():
            if line.startswith("PRETTY_NAME="):
                return line.split("=", 1)[1].strip('"')
    return platform.platform()


def _cpu_name() -> str:
    info = Path("/proc/cpuinfo")
    if info.is_file():
        for line in info.read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor()


def capture(container_versions: Callable[[tuple[str, ...]], dict[str, str]] | None = None,
            image: tuple[str, str] = ("", "")) -> Environment:
    """The environment of this host. `container_versions` reads package versions in the server's container
    (None: this interpreter's); `image` is the server container's (tag, digest)."""
    gpus, driver, cuda = nvidia_gpus()
    rocm = ""
    if not gpus:
        gpus, driver, rocm = amd_gpus()
    versions = container_versions(PACKAGES) if container_versions else local_versions()
    return Environment(host=socket.gethostname(), os=_os_name(), cpu=_cpu_name(), cpu_count=os.cpu_count() or 0,
                       memory_mib=round(psutil.virtual_memory().total / 2**20, 1), gpus=gpus, driver=driver,
                       rocm=rocm, cuda=cuda, torch=versions.get("torch", ""), sglang=versions.get("sglang", ""),
                       transformers=versions.get("transformers", ""), image=image[0], image_digest=image[1])


def versions_script() -> str:
    """Python source that prints the versions of the packages named in argv as one JSON object."""
    return _VERSIONS_PY
