"""GPU targets the kernels are tiled for, and how TileLang names them.

Facts per target (wavefront size, LDS / shared memory per workgroup) come from
AMD's "GPU hardware specifications" table in the ROCm docs (CDNA2 gfx90a, CDNA3
gfx942: 64 KiB LDS; CDNA4 gfx950: 160 KiB LDS; RDNA3 gfx1100: wave32, 64 KiB LDS),
also recorded in docs/design.md, and NVIDIA's CUDA C++ Programming Guide
(compute capability 9.0: 227 KiB of shared memory per thread block, warp 32).
"""

from __future__ import annotations

from dataclasses import dataclass

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


TARGETS: dict[str, TargetSpec] = {
    "gfx90a": TargetSpec("gfx90a", "amd", "CDNA2", 64, 64 * KIB, 0x03F),
    "gfx942": TargetSpec("gfx942", "amd", "CDNA3", 64, 64 * KIB, 0x04C),
    "gfx950": TargetSpec("gfx950", "amd", "CDNA4", 64, 160 * KIB, 0x04F),
    "gfx1100": TargetSpec("gfx1100", "amd", "RDNA3", 32, 64 * KIB, 0x041),
    "gfx1101": TargetSpec("gfx1101", "amd", "RDNA3", 32, 64 * KIB, 0x046),
    "gfx1201": TargetSpec("gfx1201", "amd", "RDNA4", 32, 64 * KIB, 0x04E),
    "sm_90": TargetSpec("sm_90", "nvidia", "Hopper", 32, 227 * KIB, compile_arch="sm_90a"),
}

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
