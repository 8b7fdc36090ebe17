"""Worker-side setup shared by the distributed jobs: device, backend, process group, one-line failures.

Environment read (set by torchrun and recipes.distributed.launch): RANK, WORLD_SIZE, LOCAL_RANK,
MASTER_ADDR, MASTER_PORT (torchrun); ROCMIG_DIST_TIMEOUT_S (collective timeout in seconds, default
60); ROCMIG_DIST_ERROR_DIR (where a failing rank writes its one-line reason as rank-<N>.err).
"""

from __future__ import annotations

import datetime
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

import torch
import torch.distributed as dist


@dataclass(frozen=True)
class Dist:
    """The process's place in the job: rank, world size, local rank, device, backend, timeout in s."""

    rank: int
    world_size: int
    local_rank: int
    device: torch.device
    backend: str
    timeout_s: float


def init() -> Dist:
    """Pick the device and backend and join the process group.

    GPU when torch.cuda.is_available() (a ROCm build answers through torch.cuda) with backend 'nccl'
    (RCCL on ROCm), device cuda:LOCAL_RANK; otherwise CPU with 'gloo'. The collective timeout goes to
    init_process_group(timeout=...). Raises KeyError if torchrun's RANK/WORLD_SIZE are missing.
    """
    rank, world, local = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]), int(os.environ.get("LOCAL_RANK", 0))
    timeout_s = float(os.environ.get("ROCMIG_DIST_TIMEOUT_S", "60"))
    if torch.cuda.is_available():
        torch.cuda.set_device(local)
        device, backend = torch.device("cuda", local), "nccl"
    else:
        device, backend = torch.device("cpu"), "gloo"
    kwargs = {"device_id": device} if backend == "nccl" else {}
    dist.init_process_group(backend=backend, timeout=datetime.timedelta(seconds=timeout_s), **kwargs)
    return Dist(rank, world, local, device, backend, timeout_s)


def user_advice() -> str:
    """What to do when a mounted folder is not writable by the image's user (uid 1000, `rocm`)."""
    return (f"the container runs as uid {os.getuid()}: run it with --user $(id -u):$(id -g), or chown that folder "
            f"to {os.getuid()} on the host")


def require_writable(flag: str, path: Path, folder: bool = True) -> None:
    """Before any work: `path` (a folder, or the folder a file goes into) can be created and written by
    this user; else exit 2 through fail() naming the flag, the real error and user_advice()."""
    target = path if folder else path.parent
    try:
        target.mkdir(parents=True, exist_ok=True)
        probe = target / f".rocmig-write-probe-{os.getpid()}"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as exc:
        fail(f"{flag} {path}: not writable ({exc.strerror or exc}); {user_advice()}", code=2)


def fail(message: str, code: int = 3) -> NoReturn:
    """Print `message` as one line on stderr, copy it to ROCMIG_DIST_ERROR_DIR/rank-<RANK>.err, exit `code`."""
    line = " ".join(message.split())
    print(f"rocmig-distributed: error: {line}", file=sys.stderr, flush=True)
    err_dir = os.environ.get("ROCMIG_DIST_ERROR_DIR")
    if err_dir:
        Path(err_dir).mkdir(parents=True, exist_ok=True)
        (Path(err_dir) / f"rank-{os.environ.get('RANK', '0')}.err").write_text(line + "\n", encoding="utf-8")
    os._exit(code)  # skip atexit/NCCL teardown, which can block on a dead peer
