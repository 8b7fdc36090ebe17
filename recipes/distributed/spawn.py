"""A torchrun stand-in for torch builds whose TCPStore cannot use libuv (torch-free).

torchrun (torch.distributed.run) creates its rendezvous TCPStore without passing use_libuv, and
TCPStore's default is the libuv backend; the USE_LIBUV variable is read only by env:// rendezvous
(torch/distributed/rendezvous.py) and by elastic.utils.distributed.create_c10d_store. A torch built
without libuv (Debian's python3-torch 2.14.1) therefore fails in torchrun's static and c10d rendezvous
("use_libuv was requested but PyTorch was built without libuv support"). This module starts the
workers itself with torchrun's environment contract (RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE,
GROUP_RANK, MASTER_ADDR, MASTER_PORT) and USE_LIBUV=0; rank 0's env:// rendezvous hosts the store.
Like torchrun with --max-restarts 0, the first failing worker stops the others (SIGTERM, then SIGKILL).
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time


def worker_env(base: dict[str, str], node_rank: int, nnodes: int, nproc: int, local_rank: int,
               master_addr: str, master_port: int) -> dict[str, str]:
    """Environment of worker `local_rank` on node `node_rank`, as torchrun would set it (global rank =
    node_rank * nproc + local_rank)."""
    return {**base, "RANK": str(node_rank * nproc + local_rank), "LOCAL_RANK": str(local_rank),
            "WORLD_SIZE": str(nnodes * nproc), "LOCAL_WORLD_SIZE": str(nproc), "GROUP_RANK": str(node_rank),
            "MASTER_ADDR": master_addr, "MASTER_PORT": str(master_port), "USE_LIBUV": "0",
            "OMP_NUM_THREADS": base.get("OMP_NUM_THREADS", "1")}


def run_workers(argv: list[str], envs: list[dict[str, str]], grace_s: float = 5.0) -> int:
    """Start one process per env in `envs` running `argv`; wait for all.

    Returns 0 when every worker exits 0, else the first non-zero exit code seen (a worker killed by a
    signal counts as 128+signal). The other workers are stopped then, as torchrun does.
    """
    procs = [subprocess.Popen(argv, env=e) for e in envs]
    first_bad = 0
    try:
        while True:
            codes = [p.poll() for p in procs]
            bad = [c for c in codes if c not in (None, 0)]
            if bad and not first_bad:
                first_bad = bad[0] if bad[0] > 0 else 128 - bad[0]
                _stop([p for p in procs if p.poll() is None], grace_s)
            if all(c is not None for c in codes):
                return first_bad
            time.sleep(0.1)
    except KeyboardInterrupt:
        _stop(procs, grace_s)
        return 130


def _stop(procs: list[subprocess.Popen], grace_s: float) -> None:
    for p in procs:
        p.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    for p in procs:
        try:
            p.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def python_module_argv(module: str, args: list[str]) -> list[str]:
    """[sys.executable, '-m', module, *args]."""
    return [sys.executable, "-m", module, *args]
