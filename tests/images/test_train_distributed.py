"""Multi-node training across real containers of the train image (gloo on CPU), issue 8.

Two containers on a user-defined Docker network are two nodes (MASTER_ADDR = node 0's name). A host
directory bind-mounted at /ckpt is the shared checkpoint filesystem. Image: $ROCMIG_TRAIN_IMAGE
(default rocmig/train:rocm7.2.4-gfx942-debian); skipped with the reason when it is absent.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
import uuid
from pathlib import Path

import pytest

docker = pytest.importorskip("docker")

from tests.images.conftest import train_image  # noqa: E402

pytestmark = pytest.mark.docker
IMAGE = train_image() or "rocmig/train:rocm7.2.4-gfx942-debian"
LAUNCH = ["python3", "-m", "recipes.distributed.launch"]
TIMEOUT_S = 20  # collective timeout given to init_process_group
TRAIN = ["train", "--steps", "400", "--ckpt-every", "40", "--hidden", "256", "--log-every", "100"]


class Cluster:
    """Containers and one network created by a test; `close` removes every one of them."""

    def __init__(self, client):
        self.client, self.tag = client, uuid.uuid4().hex[:8]
        self.net = client.networks.create(f"rocmig-t8-{self.tag}", driver="bridge")
        self.dir = Path(tempfile.mkdtemp(prefix="rocmig-t8-ckpt-"))
        self.dir.chmod(0o777)  # the image's default user is not root
        self.containers = []

    def name(self, rank: int) -> str:
        return f"rocmig-t8-{self.tag}-node{rank}"

    def node(self, rank: int, args: list[str], nnodes: int = 2, nproc: int = 1, master: str | None = None):
        """Start node `rank` running the launcher with `args` after the job name (detached)."""
        cmd = [*LAUNCH, "--nnodes", str(nnodes), "--node-rank", str(rank), "--nproc-per-node", str(nproc),
               "--master-addr", master or self.name(0), "--master-port", "29500", "--preset", "ethernet",
               "--env", "NCCL_SOCKET_IFNAME=eth0", "--timeout-s", str(TIMEOUT_S),
               "--connect-timeout-s", "15", "--join-timeout-s", "30", *args]
        for old in [c for c in self.containers if c.name == self.name(rank)]:
            old.remove(force=True)  # a restarted node reuses its name: the network's DNS resolves names
            self.containers.remove(old)
        c = self.client.containers.run(IMAGE, cmd, name=self.name(rank), hostname=self.name(rank),
                                       network=self.net.name, detach=True,
                                       environment={"PYTHONPATH": "/opt/rocmig"},
                                       volumes={str(self.dir): {"bind": "/ckpt", "mode": "rw"}})
        self.containers.append(c)
        return c

    def close(self):
        for c in self.containers:
            try:
                c.remove(force=True)
            except docker.errors.APIError:
                pass
        try:
            self.net.remove()
        except docker.errors.APIError:
            pass
        shutil.rmtree(self.dir, ignore_errors=True)


@pytest.fixture
def cluster(train_client):
    c = Cluster(train_client)
    try:
        yield c
    finally:
        c.close()


def _wait(container, timeout: float) -> tuple[int, str, float]:
    start = time.monotonic()
    rc = container.wait(timeout=timeout)["StatusCode"]
    return rc, container.logs().decode(errors="replace"), time.monotonic() - start


def _final(logs: str) -> dict:
    lines = [json.loads(x) for x in logs.splitlines() if x.startswith('{"final_step"')]
    assert lines, logs[-3000:]
    return lines[-1]


def _run_pair(cluster, args, timeout=300):
    n0 = cluster.node(0, args)
    n1 = cluster.node(1, args)
    r0, l0, _ = _wait(n0, timeout)
    r1, l1, _ = _wait(n1, timeout)
    return (r0, l0), (r1, l1)


def test_two_nodes_run_to_the_end_then_kill_and_resume_bitwise(cluster):
    # (a) uninterrupted run on two nodes
    (r0, l0), (r1, l1) = _run_pair(cluster, [*TRAIN, "--ckpt-dir", "/ckpt/full"])
    assert (r0, r1) == (0, 0), l0[-2000:] + l1[-2000:]
    reference = _final(l0)
    assert reference["final_step"] == 400

    # (b) same job, node 1 killed after the second checkpoint: node 0 fails clearly, no hang
    n0 = cluster.node(0, [*TRAIN, "--ckpt-dir", "/ckpt/crash"])
    n1 = cluster.node(1, [*TRAIN, "--ckpt-dir", "/ckpt/crash"])
    deadline = time.monotonic() + 240
    while not (cluster.dir / "crash" / "step-00000080").exists():
        assert time.monotonic() < deadline, n0.logs().decode()[-2000:]
        time.sleep(0.05)
    n1.kill()
    rc, logs, took = _wait(n0, TIMEOUT_S + 60)
    assert rc != 0
    assert took < TIMEOUT_S + 30, f"node 0 took {took:.1f} s to fail"
    err = [x for x in logs.splitlines() if x.startswith("rocmig-distributed: error: node 0: job train failed")]
    assert err and "collective failed at step" in err[0] and "restart every node with --resume auto" in err[0], logs[-3000:]
    steps_done = sorted(p.name for p in (cluster.dir / "crash").iterdir() if p.name.startswith("step-"))
    assert steps_done and steps_done[-1] != "step-00000400", "the kill came too late to interrupt the run"

    # (c) both restarted with --resume auto: continue from the last checkpoint, same final weights
    (r0, l0), (r1, l1) = _run_pair(cluster, [*TRAIN, "--ckpt-dir", "/ckpt/crash", "--resume", "auto"])
    assert (r0, r1) == (0, 0), l0[-2000:] + l1[-2000:]
    resumed = [json.loads(x) for x in l0.splitlines() if x.startswith('{"resumed_from"')]
    assert resumed and resumed[0]["step"] >= 80
    assert _final(l0)["weights_sha256"] == reference["weights_sha256"]


def test_world_size_mismatch_fails_within_seconds_on_both_nodes(cluster):
    n0 = cluster.node(0, ["train", "--steps", "10", "--ckpt-dir", "/ckpt/m"], nnodes=2)
    n1 = cluster.node(1, ["train", "--steps", "10", "--ckpt-dir", "/ckpt/m"], nnodes=3)
    for c in (n0, n1):
        rc, logs, took = _wait(c, 60)
        assert rc == 2 and took < 20, logs
        assert "world size mismatch: node 1" in logs and "declares --nnodes 3" in logs


def test_missing_node_and_unreachable_master(cluster):
    alone = cluster.node(0, ["--join-timeout-s", "5", "train", "--steps", "10", "--ckpt-dir", "/ckpt/x"])
    rc, logs, took = _wait(alone, 60)
    # the second --join-timeout-s wins (argparse keeps the last)
    assert rc == 2 and "only 1 of 2 nodes joined within 5 s (missing node ranks: 1)" in logs and took < 20, logs
    cluster.net.reload()
    subnet = cluster.net.attrs["IPAM"]["Config"][0]["Subnet"]  # e.g. 172.18.0.0/16: .0.250 is unused
    ghost = subnet.split("/")[0].rsplit(".", 1)[0] + ".250"
    lost = cluster.node(1, ["--connect-timeout-s", "4", "train", "--steps", "10", "--ckpt-dir", "/ckpt/x"],
                        master=ghost)
    rc, logs, took = _wait(lost, 60)
    assert rc == 2 and f"master {ghost}:29501 unreachable for 4 s" in logs and took < 20, logs
    nowhere = cluster.node(1, ["train", "--steps", "10", "--ckpt-dir", "/ckpt/x"], master="no-such-node")
    rc, logs, _ = _wait(nowhere, 60)
    assert rc == 2 and "--master-addr 'no-such-node' does not resolve" in logs, logs


def test_fsdp_resume_bitwise_and_corrupt_checkpoint_refused(cluster):
    job = ["train", "--parallel", "fsdp", "--steps", "60", "--ckpt-every", "20", "--hidden", "128"]
    full = cluster.node(0, [*job, "--ckpt-dir", "/ckpt/a"], nnodes=1, nproc=2, master="127.0.0.1")
    rc, logs, _ = _wait(full, 300)
    assert rc == 0, logs[-3000:]
    reference = _final(logs)
    (cluster.dir / "b").mkdir()
    shutil.copytree(cluster.dir / "a" / "step-00000020", cluster.dir / "b" / "step-00000020")
    os.chmod(cluster.dir / "b", 0o777)
    resumed = cluster.node(0, [*job, "--ckpt-dir", "/ckpt/b", "--resume", "auto"], nnodes=1, nproc=2, master="127.0.0.1")
    rc, logs, _ = _wait(resumed, 300)
    assert rc == 0 and _final(logs)["weights_sha256"] == reference["weights_sha256"], logs[-3000:]

    model = cluster.dir / "a" / "step-00000060" / "model.pt"
    data = bytearray(model.read_bytes())
    data[len(data) // 2] ^= 0xFF
    model.write_bytes(bytes(data))
    refused = cluster.node(0, [*job, "--ckpt-dir", "/ckpt/a", "--resume", "auto"], nnodes=1, nproc=2, master="127.0.0.1")
    rc, logs, _ = _wait(refused, 300)
    assert rc == 2 and "step-00000060/model.pt: SHA-256" in logs and "corrupt" in logs, logs[-3000:]
    assert "step-00000040 (pass it to --resume explicitly" in logs
    assert '{"final_step"' not in logs  # never silently restarted


def test_allreduce_busbw_table_between_two_nodes(cluster):
    args = ["allreduce_bw", "--min-bytes", "8", "--max-bytes", "1M", "--iters", "5", "--json", "/ckpt/bw.json"]
    (r0, l0), (r1, l1) = _run_pair(cluster, args)
    assert (r0, r1) == (0, 0), l0[-2000:] + l1[-2000:]
    result = json.loads((cluster.dir / "bw.json").read_text())
    rows = result["rows"]
    assert result["backend"] == "gloo" and result["world_size"] == 2
    assert [r["bytes"] for r in rows] == [8 << k for k in range(18)]
    assert all(r["wrong"] == 0 for r in rows)
    for r in rows:  # n = 2: busbw = algbw * 2(n-1)/n = algbw
        assert r["busbw_gbps"] == pytest.approx(r["algbw_gbps"])
        assert r["algbw_gbps"] == pytest.approx(r["bytes"] / (r["time_us"] * 1e-6) / 1e9)


def _start_and_wait_for_checkpoint(cluster, ckpt: str, step: int = 80):
    nodes = [cluster.node(r, [*TRAIN, "--ckpt-dir", f"/ckpt/{ckpt}"]) for r in (0, 1)]
    deadline = time.monotonic() + 240
    while not (cluster.dir / ckpt / f"step-{step:08d}").exists():
        assert time.monotonic() < deadline, nodes[0].logs().decode()[-2000:]
        time.sleep(0.05)
    return nodes


def test_master_node_killed_worker_node_fails_fast(cluster):
    n0, n1 = _start_and_wait_for_checkpoint(cluster, "kill0")
    n0.kill()
    rc, logs, took = _wait(n1, TIMEOUT_S + 60)
    assert rc != 0 and took < TIMEOUT_S + 30, f"{took:.1f} s"
    assert "rocmig-distributed: error: node 1: job train failed: rank 1: collective failed at step" in logs, logs[-3000:]


def test_network_partition_fails_within_the_collective_timeout(cluster):
    """No reset reaches the peers here (the link just goes away): the timeout is what ends the job."""
    n0, n1 = _start_and_wait_for_checkpoint(cluster, "split")
    cluster.net.disconnect(n1)
    for c in (n0, n1):
        rc, logs, took = _wait(c, TIMEOUT_S + 60)
        assert rc != 0 and took < TIMEOUT_S + 30, f"{took:.1f} s"
        assert f"the {TIMEOUT_S} s timeout passed" in logs and "Timed out" in logs, logs[-3000:]
