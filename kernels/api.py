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


def compile(kernel: str, target: str, problem, config: Config | None = None):
    """Compile ``kernel`` for ``target`` and return TileLang's ``JITKernel``.

    The returned object is callable with torch tensors in the argument order of
    the kernel's ``main`` (GEMM: A, B, C; FlashAttention: Q, K, V, O; RMSNorm:
    X, W, Y); outputs are written in place. ``.get_kernel_source()`` gives the
    generated CUDA / HIP source.

    Raises:
        ValueError: as ``build``.
        RuntimeError: the device compiler (hipcc / nvcc) failed; TileLang's message.
    """
    import tilelang

    func = build(kernel, target, problem, config)
    return tilelang.compile(func, target=get_target(target).tilelang_target())


def write_hip_code_object(jit_kernel, target: str, path: Path) -> bytes:
    """Compile a HIP ``JITKernel``'s source again with TileLang's own hipcc call
    (same flags as its HIP backend) into ``path``, and return the code object.

    TileLang 0.1.15 keeps the code object inside its runtime module, which cannot
    write it out (``Module[hip] does not support WriteToFile``) and takes no
    output-folder option for HIP; this is the way to inspect what it built.

    Raises:
        ValueError: ``target`` is not an AMD target.
        RuntimeError: hipcc failed.
    """
    from tilelang.contrib import hipcc
    from tilelang.env import TILELANG_TEMPLATE_PATH

    if get_target(target).vendor != "amd":
        raise ValueError(f"target {target!r} is not an AMD target")
    return bytes(
        hipcc.compile_hip(
            jit_kernel.get_kernel_source(),
            target_format="hsaco",
            arch=target,
            options=["-std=c++17", f"-I{TILELANG_TEMPLATE_PATH}"],
            path_target=str(path),
        )
    )
