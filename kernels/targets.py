"""GPU targets the kernels are tiled for, and how TileLang names them.

The AMD facts per target (family, wavefront size, LDS per workgroup) are matrix.yaml's `archs`, the one
place they are written: read from the checkout's matrix.yaml, or inside an image from
/etc/rocmig/archs.json, which `buildctl render` writes from it. What matrix.yaml does not hold is here:
the ELF machine number of each AMD target's code objects (LLVM AMDGPUUsage, "AMDGPU ELF Header") and
the one NVIDIA target, from NVIDIA's CUDA C++ Programming Guide (compute capability 9.0: 227 KiB of
shared memory per thread block, warp 32).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

KIB = 1024


@dataclass(frozen=True)
class TargetSpec:
    """One compile target.

    Attributes:
        name: offload arch as users write it: ``gfx942`` or ``sm_90``.
        vendor: ``amd`` or ``nvidia``.
        family: architecture family (``CDNA3``, ``RDNA3``, ``Hopper``).
        wavefront: threads per wavefront (AMD) or warp (NVIDIA).
        lds_bytes: most LDS (AMD) / shared memory (NVIDIA) one workgroup may use, bytes.
        elf_mach: EF_AMDGPU_MACH value in the code object's ELF e_flags (AMD only;
            LLVM AMDGPUUsage "AMDGPU ELF Header" table), 0 for NVIDIA.
        compile_arch: arch handed to the compiler when it differs from ``name``:
            Hopper builds for ``sm_90a``, the arch-specific target that has the
            wgmma and setmaxnreg instructions (plain sm_90 code trips CUTLASS's
            "wgmma.fence without CUTE_ARCH_MMA_SM90A_ENABLED" assertion at run time).
    """

    name: str
    vendor: str
    family: str
    wavefront: int
    lds_bytes: int
    elf_mach: int = 0
    compile_arch: str = ""

    def tilelang_target(self) -> dict[str, str]:
        """Target in the dict form TileLang 0.1.15 accepts.

        The string form ``"hip -mcpu=gfx942"`` is refused by 0.1.15 and, without
        a GPU, HIP falls back to gfx900; the dict form pins the arch.
        """
        if self.vendor == "amd":
            return {"kind": "hip", "mcpu": self.name}
        return {"kind": "cuda", "arch": self.compile_arch or self.name}


# EF_AMDGPU_MACH of the AMD targets the kernels have tile tables for (kernels/configs.py).
ELF_MACH = {"gfx90a": 0x03F, "gfx942": 0x04C, "gfx950": 0x04F, "gfx1100": 0x041, "gfx1101": 0x046, "gfx1201": 0x04E}
MATRIX = Path(__file__).resolve().parent.parent / "matrix.yaml"
IMAGE_ARCHS = Path("/etc/rocmig/archs.json")


def arch_facts() -> dict[str, dict[str, object]]:
    """matrix.yaml's `archs` table (gfx arch -> family, wavefront, lds_bytes, ...): from the checkout's
    matrix.yaml, else the image's /etc/rocmig/archs.json. Raises FileNotFoundError when neither exists."""
    if MATRIX.is_file():
        import yaml

        archs: dict[str, dict[str, object]] = yaml.safe_load(MATRIX.read_text(encoding="utf-8"))["archs"]
        return archs
    if IMAGE_ARCHS.is_file():
        return dict(json.loads(IMAGE_ARCHS.read_text(encoding="utf-8")))
    raise FileNotFoundError(f"neither {MATRIX} nor {IMAGE_ARCHS}: the arch facts live in matrix.yaml")


def _targets() -> dict[str, TargetSpec]:
    facts = arch_facts()
    missing = sorted(set(ELF_MACH) - set(facts))
    if missing:
        raise RuntimeError(f"matrix.yaml archs lacks {', '.join(missing)}, which kernels/targets.py tiles for")
    amd = {name: TargetSpec(name, "amd", str(facts[name]["family"]), int(str(facts[name]["wavefront"])),
                            int(str(facts[name]["lds_bytes"])), mach) for name, mach in ELF_MACH.items()}
    return {**amd, "sm_90": TargetSpec("sm_90", "nvidia", "Hopper", 32, 227 * KIB, compile_arch="sm_90a")}


TARGETS: dict[str, TargetSpec] = _targets()

AMD_TARGETS = tuple(name for name, spec in TARGETS.items() if spec.vendor == "amd")


def get_target(name: str) -> TargetSpec:
    """Return the spec for ``name``.

    Raises:
        ValueError: ``name`` is not a known target; the message lists the allowed ones.
    """
    try:
        return TARGETS[name]
    except KeyError:
        raise ValueError(f"target {name!r} unknown; allowed: {', '.join(TARGETS)}") from None
