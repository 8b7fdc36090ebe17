"""The serve entrypoint: `python -m recipes.serve [SGLANG FLAGS...]` (the serve images' ENTRYPOINT).

1. Engine: SGLang on the GPU when the image's torch is a ROCm build, transformers' server on the CPU
   when it is a CPU build (the debian lane) or `--device cpu` is given. `--device cuda` (SGLang's name
   for ROCm's HIP devices) asks for the GPU.
2. Flags: each `--flag` must be one of SGLang's (read from its server_args.py source, no import), so a
   misplaced docker option exits 2 before any preflight check.
   Preflight (recipes.serve.preflight): what the image cannot do (a CPU torch, no sgl-kernel), then
   GPU device nodes, their groups, the GPUs' gfx arch; /dev/shm for --tp > 1; the model path; the
   port. CPU mode then runs SGLang's parser over the user's flags.
3. Launch defaults (recipes.serve.launch), each logged with its reason; the user's flags and -e
   variables win.
4. Supervise (recipes.serve.supervise): time to healthy, SIGTERM forwarded, exit 0 after a stop.
Every line is printed to stderr prefixed 'rocmig-serve: '. Exit codes: recipes.serve.errors.
"""

from __future__ import annotations

import importlib.metadata as md
import importlib.util
import os
import shlex
import sys

from recipes.serve import flags, launch, preflight, validate
from recipes.serve.cell import Cell, load_cell
from recipes.serve.errors import BAD_FLAG, NO_GPU_ENGINE, ServeError
from recipes.serve.supervise import Supervisor, health_url


def log(message: str) -> None:
    """One unwrapped line on stderr."""
    print(f"rocmig-serve: {message}", file=sys.stderr, flush=True)


def torch_build() -> tuple[str, bool]:
    """(installed torch version, whether it is a ROCm build: PyTorch's ROCm wheels carry '+rocm')."""
    try:
        version = md.version("torch")
    except md.PackageNotFoundError:
        return "none", False
    return version, "+rocm" in version


def gpu_launch(cell: Cell, user: list[str], env: dict[str, str]) -> launch.Launch:
    """Preflight of the GPU path, then the SGLang launch. What this image cannot do at all (a CPU torch, no
    sgl-kernel: NO_GPU_ENGINE) is checked before what the user can add to docker run (devices, groups).
    Raises ServeError."""
    version, rocm = torch_build()
    if not rocm:
        raise ServeError(NO_GPU_ENGINE, f"this image's torch {version} is a CPU build ({cell.source} lane): for "
                         f"the GPU use the amd lane's image (make images SOURCE=amd IMAGES=serve ARCH={cell.arch}), "
                         "or leave out --device to serve on the CPU")
    if importlib.util.find_spec("sgl_kernel") is None:
        why = dict(cell.excluded).get("sgl-kernel", "not installed")
        raise ServeError(NO_GPU_ENGINE, f"SGLang cannot start in {cell.ref}: its sgl-kernel was left out ({why}); "
                         "serve on the CPU with --device cpu, or use an image of an arch sgl-kernel builds for")
    nodes = preflight.device_nodes()
    preflight.check_open(nodes)
    gpus = preflight.check_arch(cell, env)
    log(f"GPUs {', '.join(gpus)} ({cell.family}, wavefront {cell.wavefront}): this image's arch {cell.arch}")
    return launch.plan_gpu(cell, user, env, importlib.util.find_spec("aiter") is not None)


def choose(cell: Cell, user: list[str], env: dict[str, str]) -> launch.Launch:
    """The launch for this command line: engine choice, its preflight, its defaults. Raises ServeError."""
    device = flags.value(user, "device")
    version, rocm = torch_build()
    if device in ("cuda", "hip", "gpu"):
        if device != "cuda":
            raise ServeError(BAD_FLAG, f"--device {device}: SGLang names ROCm GPUs --device cuda")
        return gpu_launch(cell, user, env)
    if device not in (None, "cpu"):
        raise ServeError(BAD_FLAG, f"--device {device}: this image serves on cuda (ROCm GPUs) or cpu")
    if device is None and rocm:
        return gpu_launch(cell, user, env)
    why = "you asked --device cpu" if device == "cpu" else (
        f"this image's torch {version} is a CPU build ({cell.source} lane), so the CPU engine serves")
    return launch.plan_cpu(user, why, env)


def check_flags(plan: launch.Launch) -> None:
    """Run SGLang's parser over the flags the CPU engine stands for (SGLang checks its own on the GPU;
    without user flags the command line is the entrypoint's own, which the image tests parse for every
    arch, so the import of SGLang is spared). Raises ServeError(BAD_FLAG)."""
    try:
        parser = validate.sglang_parser()
    except ImportError as exc:
        log(f"SGLang's parser cannot be imported ({exc}): flags not checked")
        return
    validate.check(plan.sglang_args, parser)


def check_known(argv: list[str]) -> None:
    """Refuse a flag SGLang does not have before any preflight check (a docker run option placed after the
    image name would otherwise meet a preflight first), from server_args.py's source: no import of SGLang.
    Raises ServeError(BAD_FLAG)."""
    source = validate.server_args_source()
    if source is None:
        log("SGLang is not installed: flags not checked before the preflight")
        return
    validate.check_known(argv, validate.known_flags(source))


def main(argv: list[str]) -> int:
    """Entrypoint (see the module doc). Returns the exit code."""
    env = dict(os.environ)
    try:
        cell = load_cell()
    except (OSError, KeyError, ValueError) as exc:
        log(f"error: /etc/rocmig/cell.json unusable ({exc}): this image was not built by buildctl")
        return BAD_FLAG
    try:
        check_known(argv)
        plan = choose(cell, argv, env)
        preflight.check_shm(plan.tp)
        preflight.check_model(plan.model, env)
        preflight.check_port(plan.host, plan.port)
        if plan.engine == "transformers" and argv:
            check_flags(plan)
    except ServeError as exc:
        log(f"error: {exc}")
        return exc.code
    except ValueError as exc:
        log(f"error: {exc}")
        return BAD_FLAG
    log(f"image {cell.ref}: engine {plan.engine}")
    for choice in plan.choices:
        log(choice.line())
    log("starting: " + shlex.join(plan.argv))
    timeout = float(env.get("ROCMIG_SERVE_HEALTH_TIMEOUT", "1800"))
    try:
        return Supervisor(plan.argv, {**env, **plan.env}, log).run(health_url(plan.host, plan.port), timeout)
    except ServeError as exc:
        log(f"error: {exc}")
        return exc.code
