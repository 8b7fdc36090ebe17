"""One entry point: ``compile(kernel, target, problem, config=None)``.

``kernel`` is ``"gemm"``, ``"flash_attention"`` or ``"rmsnorm"``; ``target`` a
name from ``kernels.targets.TARGETS`` (gfx90a, gfx942, gfx950, gfx1100, sm_90);
``problem`` the matching dataclass from ``kernels.problems``. AMD targets compile
offline (TileLang's HIP backend calls hipcc; no GPU needed); sm_90 needs nvcc.
"""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

from kernels import flash_attention, gemm, rmsnorm
from kernels.configs import Config, default_config, fits
from kernels.problems import FlashAttentionProblem, GemmProblem, RmsNormProblem
from kernels.targets import get_target

KERNELS: dict[str, tuple[ModuleType, type]] = {
    "gemm": (gemm, GemmProblem),
    "flash_attention": (flash_attention, FlashAttentionProblem),
    "rmsnorm": (rmsnorm, RmsNormProblem),
}


def kernel_module(kernel: str) -> ModuleType:
    """The module (``build``, ``reference``, ``torch_baseline``, ``make_inputs``) of ``kernel``.

    Raises:
        ValueError: unknown kernel name.
    """
    try:
        return KERNELS[kernel][0]
    except KeyError:
        raise ValueError(f"kernel {kernel!r} unknown; allowed: {', '.join(KERNELS)}") from None


def build(kernel: str, target: str, problem, config: Config | None = None):
    """TileLang ``PrimFunc`` of ``kernel`` for ``problem`` with ``config`` (default: the target's).

    Raises:
        ValueError: unknown kernel/target, a problem of the wrong type, or a config
            that breaks the target's LDS size or wavefront multiple.
    """
    module = kernel_module(kernel)
    expected = KERNELS[kernel][1]
    if not isinstance(problem, expected):
        raise ValueError(f"{kernel} takes a {expected.__name__}, got {type(problem).__name__}")
    spec = get_target(target)
    cfg = config if config is not None else default_config(kernel, target)
    if not fits(cfg, spec):
        raise ValueError(
            f"{kernel} config {cfg} needs {cfg.lds_bytes()} B of LDS and threads a multiple of "
            f"{spec.wavefront}; {target} allows {spec.lds_bytes} B"
        )
    return module.build(problem, cfg)


def compile(kernel: str, target: str, problem, config: Config | None = None, *, output_dir: Path | None = None):
    """Compile ``kernel`` for ``target`` and return TileLang's ``JITKernel``.

    The returned object is callable with torch tensors in the argument order of
    the kernel's ``main`` (GEMM: A, B, C; FlashAttention: Q, K, V, O; RMSNorm:
    X, W, Y); outputs are written in place. ``.get_kernel_source()`` gives the
    generated CUDA / HIP source.

    Args:
        output_dir: AMD targets only: where hipcc writes the source and the code
            object (``.hsaco``), kept for inspection.

    Raises:
        ValueError: as ``build``.
        RuntimeError: the device compiler (hipcc / nvcc) failed; TileLang's message.
    """
    import tilelang

    spec = get_target(target)
    func = build(kernel, target, problem, config)
    pass_configs = {}
    if output_dir is not None:
        key = "hip.kernels_output_dir" if spec.vendor == "amd" else "cuda.kernels_output_dir"
        pass_configs[key] = str(output_dir)
    return tilelang.compile(func, target=spec.tilelang_target(), pass_configs=pass_configs or None)
