"""TileLang kernels (GEMM, FlashAttention forward, RMSNorm) with per-target tile configs.

``kernels.compile(kernel, target, problem)`` is the one entry point; see
``kernels.api``. Tile tables: ``kernels.configs``; targets: ``kernels.targets``.
Importing this package needs neither TileLang nor torch; building a kernel needs
TileLang, running one needs torch and a GPU.
"""

from kernels.api import KERNELS, build, compile, kernel_module
from kernels.configs import autotune_space, default_config
from kernels.problems import FlashAttentionProblem, GemmProblem, RmsNormProblem
from kernels.targets import AMD_TARGETS, TARGETS, get_target

__all__ = [
    "AMD_TARGETS",
    "KERNELS",
    "TARGETS",
    "FlashAttentionProblem",
    "GemmProblem",
    "RmsNormProblem",
    "autotune_space",
    "build",
    "compile",
    "default_config",
    "get_target",
    "kernel_module",
]
