"""Checks run before the engine starts; each failure is a ServeError with one actionable line.

Facts used:
- ROCm in a container needs /dev/kfd (the compute interface) and the render nodes /dev/dri/renderD*
  (docker run --device=/dev/kfd --device=/dev/dri); the nodes keep the host's owner and group, so the
  user needs the host's gid of the group that owns them (video or render): `--group-add <gid>` by
  number, because a group name resolves in the image's /etc/group, whose ids may differ from the host's.
- AMD documents `--ipc=host --shm-size 16g` for SGLang; Docker's /dev/shm default is 64 MiB, too small for
  RCCL's and SGLang's inter-process buffers once several GPU workers run (--tp > 1).
- With HF_HUB_OFFLINE=1 (set in the serve image) a model id that is not in the local hub cache cannot load.
"""

from __future__ import annotations

import errno
import grp
import os
import socket
from collections.abc import Mapping
from pathlib import Path

from recipes.serve import kfd
from recipes.serve.cell import Cell
from recipes.serve.errors import (
    ARCH_MISMATCH,
    DEVICE_DENIED,
    MODEL_UNUSABLE,
    NO_DEVICE,
    PORT_TAKEN,
    SHM_TOO_SMALL,
    ServeError,
)

GPU_FLAGS = ("--device=/dev/kfd --device=/dev/dri --group-add $(getent group video | cut -d: -f3) "
             "--group-add $(getent group render | cut -d: -f3) --ipc=host --shm-size 16g")
MIN_SHM_BYTES_TP = 1 << 30
RECOMMENDED_SHM_BYTES = 16 << 30


def device_nodes(dev: Path = Path("/dev")) -> list[Path]:
    """[dev/kfd, dev/dri/renderD...] the GPU path needs. Raises ServeError(NO_DEVICE) naming the missing
    node and the docker flags to add."""
    kfd_node = dev / "kfd"
    if not kfd_node.exists():
        raise ServeError(NO_DEVICE, f"{kfd_node} is missing: run the container with {GPU_FLAGS}")
    render = sorted((dev / "dri").glob("renderD*")) if (dev / "dri").is_dir() else []
    if not render:
        raise ServeError(NO_DEVICE, f"{dev / 'dri'}/renderD* is missing: run the container with {GPU_FLAGS}")
    return [kfd_node, *render]


def _group_name(gid: int) -> str:
    try:
        return grp.getgrgid(gid).gr_name
    except KeyError:
        return "no name in this image"


def check_open(nodes: list[Path]) -> None:
    """Open each node read-write as the current user. Raises ServeError(DEVICE_DENIED) for the first
    that is refused, naming its group id and what to pass to docker run."""
    for node in nodes:
        try:
            os.close(os.open(node, os.O_RDWR))
        except PermissionError:
            st = node.stat()
            groups = sorted(set(os.getgroups()))
            who = f"uid {os.getuid()} with groups {','.join(map(str, groups))}"
            if st.st_mode & 0o060 != 0o060:
                raise ServeError(DEVICE_DENIED, f"cannot open {node} (owner {st.st_uid}:{st.st_gid}, mode "
                                 f"{st.st_mode & 0o777:04o}) as {who}: its group has no read-write permission; "
                                 "fix the node's permissions on the host (amdgpu's udev rules)") from None
            raise ServeError(DEVICE_DENIED, f"cannot open {node} (group {st.st_gid}, mode {st.st_mode & 0o777:04o}) "
                             f"as {who}: add --group-add {st.st_gid} to docker run (the host's gid by number; "
                             f"in this image gid {st.st_gid} is {_group_name(st.st_gid)})") from None
        except OSError as exc:
            if exc.errno in (errno.ENXIO, errno.ENODEV):
                raise ServeError(NO_DEVICE, f"{node} exists but no driver answers ({exc.strerror}): "
                                 "is the amdgpu driver loaded on the host?") from None
            raise ServeError(DEVICE_DENIED, f"cannot open {node}: {exc.strerror}") from None


def check_arch(cell: Cell, env: Mapping[str, str], topology: Path = kfd.TOPOLOGY) -> list[str]:
    """The GPUs' gfx archs from the KFD topology, checked against the image's arch. Returns them.

    HSA_OVERRIDE_GFX_VERSION in env, when set, is the arch the runtime reports for every GPU. Raises
    ServeError(NO_DEVICE) when the topology lists no GPU, ServeError(ARCH_MISMATCH) naming the image to
    pull or the override to set when a GPU's arch is not the image's.
    """
    gpus = kfd.gpu_archs(topology)
    if not gpus:
        raise ServeError(NO_DEVICE, f"no GPU in the KFD topology ({topology}): /dev/kfd is there but the "
                         "amdgpu driver reports no GPU node; check `dmesg | grep amdgpu` on the host")
    override = env.get("HSA_OVERRIDE_GFX_VERSION")
    if override:
        try:
            seen = kfd.arch_from_override(override)
        except ValueError as exc:
            raise ServeError(ARCH_MISMATCH, str(exc)) from None
        if seen == cell.arch:
            return gpus
        raise ServeError(ARCH_MISMATCH, f"HSA_OVERRIDE_GFX_VERSION={override} makes the GPUs report {seen}, "
                         f"but this image holds {cell.arch} kernels: use {kfd.override_value(cell.arch)} "
                         "or unset it")
    for gpu in gpus:
        if gpu == cell.arch:
            continue
        if gpu in cell.archs:
            hint = f"pull {cell.ref_for(gpu)}"
        else:
            hint = f"no image of this matrix is built for {gpu} (built: {', '.join(sorted(cell.archs))})"
        via = kfd.override_for(gpu, cell.arch)
        if via:
            hint += f", or run this one with -e HSA_OVERRIDE_GFX_VERSION={via} (same ISA generation)"
        raise ServeError(ARCH_MISMATCH, f"the GPU is {gpu} but this image ({cell.ref}) holds {cell.arch} "
                         f"kernels: {hint}")
    return gpus


def check_shm(tp: int, shm: Path = Path("/dev/shm")) -> int:
    """Size of `shm` in bytes; raises ServeError(SHM_TOO_SMALL) when tp > 1 and it is under 1 GiB."""
    st = os.statvfs(shm)
    size = st.f_frsize * st.f_blocks
    if tp > 1 and size < MIN_SHM_BYTES_TP:
        raise ServeError(SHM_TOO_SMALL, f"{shm} is {size >> 20} MiB, too small for --tp {tp} (RCCL and SGLang's "
                         "worker processes share memory through it; Docker's default is 64 MiB): add --ipc=host "
                         "or --shm-size 16g to docker run")
    return size


def _hub_cache(env: Mapping[str, str]) -> Path:
    if env.get("HF_HUB_CACHE"):
        return Path(env["HF_HUB_CACHE"])
    home = Path(env["HF_HOME"]) if env.get("HF_HOME") else Path(env.get("HOME", "/root")) / ".cache" / "huggingface"
    return home / "hub"


def _looks_like_path(model: str) -> bool:
    return model.startswith(("/", "./", "../", "~")) or os.path.exists(model)


def check_model(model: str, env: Mapping[str, str]) -> None:
    """A local model must be a readable folder holding a readable config.json (or a readable file, e.g.
    a .gguf); a hub id must be in the local hub cache when HF_HUB_OFFLINE is on. Raises
    ServeError(MODEL_UNUSABLE) naming the path and what to mount."""
    mount = "mount it with -v /host/models:/models:ro and pass --model-path /models/<name>"
    if not _looks_like_path(model):
        offline = env.get("HF_HUB_OFFLINE", "").lower() in ("1", "true", "yes", "on")
        cached = _hub_cache(env) / ("models--" + model.replace("/", "--"))
        if offline and not cached.is_dir():
            raise ServeError(MODEL_UNUSABLE, f"--model-path {model}: not a local path and not in the hub cache "
                             f"{cached.parent} (HF_HUB_OFFLINE=1: nothing is downloaded): {mount}")
        return
    path = Path(model).expanduser()
    if not path.exists():
        raise ServeError(MODEL_UNUSABLE, f"--model-path {model}: no such file or folder in the container: {mount}")
    if path.is_dir():
        if not os.access(path, os.R_OK | os.X_OK):
            raise ServeError(MODEL_UNUSABLE, f"--model-path {model}: folder not readable by uid {os.getuid()}: "
                             "make it world-readable on the host (chmod -R a+rX) or run with --user "
                             "<its owner's uid>")
        config = path / "config.json"
        if not config.is_file():
            raise ServeError(MODEL_UNUSABLE, f"--model-path {model}: no config.json in it (a Hugging Face model "
                             "folder holds config.json, tokenizer files and weights)")
        if not os.access(config, os.R_OK):
            raise ServeError(MODEL_UNUSABLE, f"--model-path {model}: {config} not readable by uid {os.getuid()}: "
                             "chmod -R a+rX it on the host")
    elif not os.access(path, os.R_OK):
        raise ServeError(MODEL_UNUSABLE, f"--model-path {model}: not readable by uid {os.getuid()}")


def check_port(host: str, port: int) -> None:
    """Bind (host, port) once and release it. Raises ServeError(PORT_TAKEN) when something holds it."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                raise ServeError(PORT_TAKEN, f"port {port} on {host} is taken in this container's network "
                                 "(another server, or --network host/container: shares it): pass --port N "
                                 "or stop the other server") from None
            raise ServeError(PORT_TAKEN, f"cannot bind {host}:{port}: {exc.strerror}") from None
