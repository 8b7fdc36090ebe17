"""recipes.distributed.spawn: torchrun's environment contract and stop-on-first-failure, with real processes."""

import sys
import time

from recipes.distributed import spawn


def test_worker_env_matches_torchrun_contract():
    env = spawn.worker_env({"PATH": "/bin"}, node_rank=1, nnodes=2, nproc=4, local_rank=3,
                           master_addr="node0", master_port=29500)
    assert env["RANK"] == "7" and env["WORLD_SIZE"] == "8" and env["LOCAL_RANK"] == "3"
    assert env["LOCAL_WORLD_SIZE"] == "4" and env["GROUP_RANK"] == "1"
    assert env["MASTER_ADDR"] == "node0" and env["MASTER_PORT"] == "29500" and env["USE_LIBUV"] == "0"
    assert env["PATH"] == "/bin"


def _envs(n):
    return [spawn.worker_env({}, 0, 1, n, i, "127.0.0.1", 1) for i in range(n)]


def test_all_workers_succeed():
    argv = [sys.executable, "-c", "import os, sys; sys.exit(0 if os.environ['RANK'] in '01' else 9)"]
    assert spawn.run_workers(argv, _envs(2)) == 0


def test_first_failure_stops_the_others_quickly():
    code = "import os, sys, time\nif os.environ['RANK'] == '1': sys.exit(7)\ntime.sleep(60)"
    start = time.monotonic()
    assert spawn.run_workers([sys.executable, "-c", code], _envs(3), grace_s=2) == 7
    assert time.monotonic() - start < 10
