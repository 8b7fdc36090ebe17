"""`buildctl kernels ...`: the TileLang kernels of kernels/ (issue 7) from the command line.

- `bench`: correctness and speed against torch on whatever GPU this host has (AMD or NVIDIA), JSON out.
- `offline`: compile every kernel for AMD targets without a GPU and check each code object's arch.
- `configs`: print the per-target tile tables and autotune spaces.

`bench` and `offline` run `python -m kernels.bench.gpu` / `python -m kernels.offline` with this
interpreter, so one failing GPU kernel cannot take buildctl down; their exit status is passed on
(buildctl.errors.ChildExit). Where TileLang is not importable (a host outside the kernels image),
`offline` runs the same module in the kernels image with `docker run`, printing the command.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from dataclasses import asdict
from pathlib import Path

import click

from buildctl.console import buildctl_command
from buildctl.errors import BuildError, ChildExit, InputError
from buildctl.results import document

KERNELS_IMAGE = "rocmig/kernels:latest"


def kernels_root(root: Path) -> Path:
    """Folder that holds the `kernels` package: `root` when `root/kernels/` exists (a checkout),
    else wherever this interpreter finds it (the kernels image puts it under /opt/rocmig).

    Raises:
        InputError: neither place has it.
    """
    if (root / "kernels" / "__init__.py").is_file():
        return root.resolve()
    spec = importlib.util.find_spec("kernels")
    if spec is not None and spec.origin:
        return Path(spec.origin).resolve().parent.parent
    raise InputError(f"--root {root}: no kernels/ package there, and none importable by {sys.executable}")


def _run_module(root: Path, module: str, args: list[str]) -> int:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(kernels_root(root)), env.get("PYTHONPATH", "")) if p)
    env.setdefault("PYTHONUNBUFFERED", "1")
    return subprocess.run([sys.executable, "-m", module, *args], env=env).returncode


@click.group("kernels")
def kernels() -> None:
    """TileLang kernels (GEMM, FlashAttention forward, RMSNorm): bench, offline compile, tile tables."""


@kernels.command("bench")
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), required=True, help="JSON file to write")
@click.option("--quick", is_flag=True, help="smallest size of each kernel only")
@click.option("--no-tune", is_flag=True, help="default tile config only (no autotune)")
@click.option("--kernels", "names", default="gemm,flash_attention,rmsnorm", show_default=True,
              help="comma list of kernels")
@click.option("--budget-s", type=click.FloatRange(min=30), default=3600, show_default=True,
              help="stop starting new cases after this many seconds")
@click.pass_context
def bench(ctx: click.Context, out: Path, quick: bool, no_tune: bool, names: str, budget_s: float) -> None:
    """Check and time the kernel table against torch on this host's GPU 0 and save JSON to --out.

    Needs torch with GPU support and tilelang importable; the GPU's arch must have a tile table
    (gfx90a, gfx942, gfx950, gfx1100, sm_90). Exit 0 done; 2 no usable GPU or bad flags.
    """
    args = ["--out", str(out), "--kernels", names, "--budget-s", str(budget_s)]
    args += ["--quick"] if quick else []
    args += ["--no-tune"] if no_tune else []
    missing = [m for m in ("torch", "tilelang") if importlib.util.find_spec(m) is None]
    if missing:
        import shlex

        out_abs = out.resolve()
        # The render group by the host's gid (the owner of /dev/kfd): `--group-add render` would name the
        # image's own render group, whose gid differs between hosts (README, docs/serve.md).
        cmd = ["docker", "run", "--rm", "--device=/dev/kfd", "--device=/dev/dri", "--group-add", "video",
               "--group-add", "KFD_GID", "--user", f"{os.getuid()}:{os.getgid()}", "-v", f"{out_abs.parent}:/work/out",
               KERNELS_IMAGE, "python", "-m", "kernels.bench.gpu", "--out", f"/work/out/{out_abs.name}",
               *args[2:]]
        shown = shlex.join(cmd).replace(" KFD_GID ", ' "$(stat -c %g /dev/kfd)" ')
        raise InputError(f"kernels bench needs {' and '.join(missing)} and a GPU, which this Python lacks: run it in "
                         f"an amd-lane kernels image on the GPU host: {shown}")
    code = _run_module(ctx.obj["root"], "kernels.bench.gpu", args)
    if code != 0:
        raise ChildExit(f"kernels bench exited with status {code} (see its message above)", code)


@kernels.command("offline")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), required=True,
              help="folder for generated sources and code objects")
@click.option("--target", "targets", multiple=True, help="AMD target, e.g. gfx942 (repeatable; default: all)")
@click.option("--json", "json_path", type=click.Path(dir_okay=False, path_type=Path), help="write records here")
@click.option("--image", "image", default=KERNELS_IMAGE, show_default=True,
              help="kernels image to run in when TileLang is not importable here")
@click.pass_context
def offline(ctx: click.Context, out: Path, targets: tuple[str, ...], json_path: Path | None, image: str) -> None:
    """Compile every kernel for AMD targets (hipcc, no GPU) and check each code object's gfx arch.

    Runs here when TileLang is importable (inside the kernels image), else in the kernels image (--image).
    Exit 0 all compiled; 1 a kernel failed or has the wrong arch; 5 the kernels image is not built.
    """
    sys.path.insert(0, str(kernels_root(ctx.obj["root"])))
    from kernels.targets import AMD_TARGETS

    for t in targets:
        if t not in AMD_TARGETS:
            raise click.BadParameter(f"{t!r} is not one of {', '.join(AMD_TARGETS)}", param_hint="--target")
    flags = ["--targets", ",".join(targets)] if targets else []
    if importlib.util.find_spec("tilelang") is None:
        code = _offline_in_image(image, out, flags, json_path)
    else:
        args = ["--out", str(out), *flags] + (["--json", str(json_path)] if json_path else [])
        code = _run_module(ctx.obj["root"], "kernels.offline", args)
    if code == 1:
        raise ChildExit("kernels offline: a kernel failed to compile or has the wrong arch (see the lines above)", code)
    if code != 0:
        raise ChildExit(f"kernels offline exited with status {code} (see its message above)", code)


def offline_docker_command(image: str, out: Path, flags: list[str], json_path: Path | None) -> list[str]:
    """The `docker run` that compiles the kernels in `image`, writing into host folder `out` (and the
    folder of `json_path`) as the calling user, so the files are theirs."""
    out = out.resolve()
    cmd = ["docker", "run", "--rm", "--user", f"{os.getuid()}:{os.getgid()}", "-v", f"{out}:/work/out"]
    args = ["--out", "/work/out", *flags]
    if json_path is not None:
        json_path = json_path.resolve()
        cmd += ["-v", f"{json_path.parent}:/work/json"]
        args += ["--json", f"/work/json/{json_path.name}"]
    return [*cmd, image, "python", "-m", "kernels.offline", *args]


def _offline_in_image(image: str, out: Path, flags: list[str], json_path: Path | None) -> int:
    """Run kernels.offline in the kernels image; the exit status of the run. Raises BuildError (exit 5)
    naming the command when the image is not built."""
    import shlex

    from buildctl.engine import docker_client, image_exists

    for folder in (out, *([json_path.parent] if json_path else [])):
        folder.mkdir(parents=True, exist_ok=True)
    cmd = offline_docker_command(image, out, flags, json_path)
    shown = shlex.join(cmd)
    if not image_exists(docker_client(), image):
        raise BuildError(f"kernels offline needs TileLang, which this Python cannot import; it runs in the kernels "
                         f"image {image}, which is not built here: `{buildctl_command('build --image kernels')}`, then {shown}")
    click.echo(f"kernels offline: TileLang is not importable here; running in {image}: {shown}", err=True)
    return subprocess.run(cmd).returncode


@kernels.command("configs")
@click.option("--target", "targets", multiple=True, help="target, e.g. gfx950 (repeatable; default: all)")
@click.option("--json", "as_json", is_flag=True, help="print JSON instead of a table")
@click.pass_context
def configs(ctx: click.Context, targets: tuple[str, ...], as_json: bool) -> None:
    """Print the default tile config and autotune space of each kernel per target."""
    sys.path.insert(0, str(kernels_root(ctx.obj["root"])))
    from kernels.configs import DEFAULTS, autotune_space
    from kernels.targets import TARGETS

    chosen = targets or tuple(TARGETS)
    for t in chosen:
        if t not in TARGETS:
            raise click.BadParameter(f"{t!r} is not one of {', '.join(TARGETS)}", param_hint="--target")
    table = {
        t: {
            k: {
                "default": asdict(DEFAULTS[k][t]),
                "lds_bytes": DEFAULTS[k][t].lds_bytes(),
                "space": [asdict(c) for c in autotune_space(k, t)],
            }
            for k in DEFAULTS
        }
        for t in chosen
    }
    if as_json:
        click.echo(json.dumps(document("kernel-configs", {"targets": table}), indent=1))
        return
    for t in chosen:
        spec = TARGETS[t]
        click.echo(f"{t} ({spec.family}, wavefront {spec.wavefront}, LDS {spec.lds_bytes // 1024} KiB)")
        for k, row in table[t].items():
            cfg = ", ".join(f"{a}={b}" for a, b in row["default"].items())
            click.echo(f"  {k:<16} {cfg}  [{row['lds_bytes'] // 1024} KiB LDS, {len(row['space'])} in autotune space]")
