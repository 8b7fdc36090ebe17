"""torchrun launcher with RCCL presets, a roll call across nodes and one-line failure reports.

    python -m recipes.distributed.launch --nnodes 2 --node-rank 0 --nproc-per-node 1 \\
        --master-addr node0 --master-port 29500 --preset ethernet --env NCCL_SOCKET_IFNAME=eth0 \\
        --timeout-s 30 -- train --steps 200 --ckpt-dir /ckpt

Steps: validate the RCCL/NCCL environment for this host (rccl_env), run the roll call on
MASTER_PORT+1 (rollcall: world size disagreements, missing nodes and an unreachable master fail within
--join-timeout-s / --connect-timeout-s), then start `python -m torch.distributed.run` (torchrun, static
rendezvous, no restarts) on the job module with an argument list; a torch without libuv in its
TCPStore (Debian's) cannot run torchrun's rendezvous, so there the workers are started by spawn.py
with torchrun's environment contract (--spawner says which; auto picks). The collective timeout reaches the
job as ROCMIG_DIST_TIMEOUT_S and from there init_process_group(timeout=...). Exit codes: 0 ok, 2 bad
input, 3 the job failed (its ranks' one-line reasons are printed).
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

from . import rccl_env, rollcall, spawn

JOBS = {"train": "recipes.distributed.train", "allreduce_bw": "recipes.distributed.allreduce_bw"}
PKG_ROOT = Path(__file__).resolve().parents[2]  # the directory holding recipes/


def parse_args(argv: list[str]) -> argparse.Namespace:
    """Launcher flags, then '--', the job name (train, allreduce_bw) and its own flags."""
    p = argparse.ArgumentParser(prog="python -m recipes.distributed.launch", description=__doc__.splitlines()[0])
    p.add_argument("--nnodes", type=int, default=1)
    p.add_argument("--node-rank", type=int, default=0)
    p.add_argument("--nproc-per-node", type=int, default=1)
    p.add_argument("--master-addr", default="127.0.0.1")
    p.add_argument("--master-port", type=int, default=29500, help="torchrun's store; the roll call uses port+1")
    p.add_argument("--preset", default="single-node", help=f"one of: {', '.join(rccl_env.PRESETS)}")
    p.add_argument("--env", action="append", default=[], metavar="KEY=VALUE", help="override a variable (repeatable)")
    p.add_argument("--timeout-s", type=float, default=60.0, help="collective timeout (init_process_group)")
    p.add_argument("--join-timeout-s", type=float, default=120.0, help="how long node 0 waits for all nodes")
    p.add_argument("--connect-timeout-s", type=float, default=60.0, help="how long a node retries the master")
    p.add_argument("--spawner", choices=("auto", "torchrun", "local"), default="auto",
                   help="auto: torchrun when this torch's TCPStore has libuv, else the local spawner (spawn.py)")
    p.add_argument("job", choices=sorted(JOBS))
    p.add_argument("job_args", nargs=argparse.REMAINDER)
    a = p.parse_args(argv)
    if not 1 <= a.master_port <= 65534:
        p.error(f"--master-port {a.master_port}: allowed 1..65534 (port+1 is the roll call)")
    if min(a.timeout_s, a.join_timeout_s, a.connect_timeout_s) <= 0:
        p.error("--timeout-s, --join-timeout-s and --connect-timeout-s must be > 0")
    return a


def torchrun_argv(a: argparse.Namespace) -> list[str]:
    """The torchrun command as an argument list (static rendezvous at master_addr:master_port, no restarts)."""
    return [sys.executable, "-m", "torch.distributed.run",
            "--nnodes", str(a.nnodes), "--node-rank", str(a.node_rank), "--nproc-per-node", str(a.nproc_per_node),
            "--master-addr", a.master_addr, "--master-port", str(a.master_port), "--max-restarts", "0",
            "-m", JOBS[a.job], *a.job_args]


def torch_has_libuv() -> bool:
    """Whether this torch's TCPStore has the libuv backend (torchrun needs it; see spawn.py).

    Probed by opening a libuv store on an ephemeral localhost port (imports torch: about a second).
    """
    import datetime

    import torch.distributed as dist  # ImportError is handled by the caller

    try:
        dist.TCPStore("127.0.0.1", 0, is_master=True, use_libuv=True, timeout=datetime.timedelta(seconds=5))
    except (RuntimeError, dist.DistStoreError):
        return False
    return True


def run(argv: list[str]) -> int:
    """Validate, roll call, run torchrun; returns the exit code (0, 2 bad input, 3 job failed)."""
    a = parse_args(argv)
    if a.job_args and a.job_args[0] == "--":
        a.job_args = a.job_args[1:]
    try:
        env = rccl_env.build_env(a.preset, rccl_env.parse_assignments(a.env),
                                 rccl_env.host_interfaces(), rccl_env.host_ib_devices())
        me = rollcall.Declaration(a.node_rank, a.nnodes, a.nproc_per_node, socket.gethostname())
        if a.node_rank == 0:
            rollcall.host(me, a.master_port + 1, a.join_timeout_s)
        else:
            rollcall.join(me, a.master_addr, a.master_port + 1, a.connect_timeout_s, a.join_timeout_s)
    except (rccl_env.EnvError, rollcall.RollCallError) as exc:
        print(f"rocmig-distributed: error: {exc}", file=sys.stderr, flush=True)
        return 2
    with tempfile.TemporaryDirectory(prefix="rocmig-dist-err-") as err_dir:
        env.update({"ROCMIG_DIST_TIMEOUT_S": f"{a.timeout_s:g}", "ROCMIG_DIST_ERROR_DIR": err_dir,
                    "PYTHONPATH": os.pathsep.join(filter(None, [str(PKG_ROOT), os.environ.get("PYTHONPATH")]))})
        full = rccl_env.merged_environ(env)
        try:
            spawner = a.spawner if a.spawner != "auto" else ("torchrun" if torch_has_libuv() else "local")
        except ImportError:
            print(f"rocmig-distributed: error: torch is not importable by {sys.executable}: run inside the train image",
                  file=sys.stderr, flush=True)
            return 2
        if spawner == "torchrun":
            rc = subprocess.run(torchrun_argv(a), env=full, check=False).returncode
        else:
            envs = [spawn.worker_env(full, a.node_rank, a.nnodes, a.nproc_per_node, lr, a.master_addr, a.master_port)
                    for lr in range(a.nproc_per_node)]
            rc = spawn.run_workers(spawn.python_module_argv(JOBS[a.job], a.job_args), envs)
        reasons = list(dict.fromkeys(p.read_text(encoding="utf-8").strip()
                                     for p in sorted(Path(err_dir).glob("rank-*.err"))))
    if rc == 0:
        return 0
    # The rank that failed first says why; its peers only saw a collective fail after it: their lines last.
    reasons.sort(key=lambda line: "collective failed" in line)
    why = "; ".join(reasons) if reasons else f"{spawner} exited {rc} (see the output above)"
    print(f"rocmig-distributed: error: node {a.node_rank}: job {a.job} failed: {why}", file=sys.stderr, flush=True)
    return 2 if rc == 2 else 3


if __name__ == "__main__":
    sys.exit(run(sys.argv[1:]))
