"""GPUs as the amdgpu kernel driver's KFD reports them, without rocminfo.

Each node of /sys/class/kfd/kfd/topology/nodes/<n>/properties is a 'key value' text file; CPU nodes
have gfx_target_version 0, GPU nodes major*10000 + minor*100 + stepping, the three numbers of the gfx
name read as hex digits: gfx942 -> 90402, gfx90a -> 90010, gfx1100 -> 110000 (ROCr's
topology code, and the values HSA_OVERRIDE_GFX_VERSION takes as 'major.minor.stepping').
"""

from __future__ import annotations

import re
from pathlib import Path

TOPOLOGY = Path("/sys/class/kfd/kfd/topology/nodes")
_GFX = re.compile(r"^gfx([0-9]+)([0-9a-f])([0-9a-f])$")

# GPUs that run another arch's code objects under HSA_OVERRIDE_GFX_VERSION: the same ISA generation,
# as ROCm users run RX 7800 XT / 7600 (gfx1101 / gfx1102) on gfx1100 builds and early MI300
# steppings (gfx940 / gfx941) on gfx942 builds. Other pairs differ in ISA (gfx908 vs gfx90a).
OVERRIDE_GROUPS = (("gfx1100", "gfx1101", "gfx1102", "gfx1103"), ("gfx940", "gfx941", "gfx942"))


def gfx_from_target_version(value: int) -> str:
    """gfx name of a KFD gfx_target_version: 90402 -> 'gfx942', 90010 -> 'gfx90a'. Raises ValueError for <= 0."""
    if value <= 0:
        raise ValueError(f"gfx_target_version {value} is not a GPU")
    major, minor, step = value // 10000, (value // 100) % 100, value % 100
    return f"gfx{major}{minor:x}{step:x}"


def override_value(arch: str) -> str:
    """HSA_OVERRIDE_GFX_VERSION spelling of a gfx name: 'gfx1100' -> '11.0.0', 'gfx90a' -> '9.0.10'.

    Raises ValueError for a name that is not gfx<major><minor hex><stepping hex>.
    """
    m = _GFX.match(arch)
    if not m:
        raise ValueError(f"not a gfx arch name: {arch!r}")
    return f"{int(m.group(1))}.{int(m.group(2), 16)}.{int(m.group(3), 16)}"


def arch_from_override(value: str) -> str:
    """gfx name an HSA_OVERRIDE_GFX_VERSION value stands for: '11.0.0' -> 'gfx1100'. Raises ValueError."""
    parts = value.strip().split(".")
    if len(parts) != 3 or not all(p.isdigit() for p in parts):
        raise ValueError(f"HSA_OVERRIDE_GFX_VERSION={value!r}: expected major.minor.stepping, e.g. 11.0.0")
    major, minor, step = (int(p) for p in parts)
    return gfx_from_target_version(major * 10000 + minor * 100 + step)


def gpu_archs(topology: Path = TOPOLOGY) -> list[str]:
    """gfx names of the GPU nodes under `topology`, in node order; [] when the folder is absent (no
    amdgpu driver, or /sys not the host's). Unreadable or malformed nodes are skipped."""
    if not topology.is_dir():
        return []
    found = []
    for node in sorted(topology.iterdir(), key=lambda p: int(p.name) if p.name.isdigit() else -1):
        try:
            text = (node / "properties").read_text(encoding="ascii", errors="replace")
        except OSError:
            continue
        for line in text.splitlines():
            key, _, value = line.partition(" ")
            if key == "gfx_target_version" and value.strip().isdigit() and int(value) > 0:
                found.append(gfx_from_target_version(int(value)))
    return found


def override_for(gpu: str, image_arch: str) -> str | None:
    """The HSA_OVERRIDE_GFX_VERSION value that lets a `gpu` run `image_arch` code objects, or None when
    they are not of one override group (OVERRIDE_GROUPS)."""
    for group in OVERRIDE_GROUPS:
        if gpu in group and image_arch in group and gpu != image_arch:
            return override_value(image_arch)
    return None
