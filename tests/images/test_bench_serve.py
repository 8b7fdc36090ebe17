"""`buildctl bench serve` and `buildctl compare` against the real server: `docker run rocmig/serve` in its
CPU mode (transformers serve with the bundled model), from the host as a user would run them, and inside
the serve image itself (its Python 3.14 and its GuideLLM).

Two runs with two concurrency settings, compared (the shared level, with --allow-different-workload); the
plots read back as images; a run killed midway leaves no run file; a run inside the image; SGLang's
server-info keys against the image's SGLang. Small lengths and few prompts keep it to about two minutes of
server time on two cores.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
import uuid
from pathlib import Path

import numpy as np
import psutil
import pytest
from matplotlib import image as mpimg

from tests.images.conftest import image_under_test, slice_cells

ROOT = Path(__file__).resolve().parents[2]
CELLS = slice_cells("serve")
WORKLOAD = ("--input-len", "16", "--output-len", "4", "--num-prompts", "4", "--dtype", "bfloat16")

pytestmark = [pytest.mark.docker,
              pytest.mark.skipif(not CELLS, reason="serve is not among the selected images (ROCMIG_IMAGES)")]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="module")
def server(docker_engine):
    """`docker run -p 127.0.0.1:PORT:30000 rocmig/serve` (no arguments: the bundled model); its base URL."""
    ref = image_under_test(CELLS[0].ref)
    if subprocess.run(["docker", "image", "inspect", ref], capture_output=True).returncode != 0:
        pytest.fail(f"image {ref} is not built: run `make images` first")
    port, name = _free_port(), f"rocmig-bench-{uuid.uuid4().hex[:8]}"
    subprocess.run(["docker", "run", "-d", "--name", name, "-p", f"127.0.0.1:{port}:30000", ref],
                   check=True, capture_output=True)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(url + "/v1/models", timeout=5) as resp:
                    if resp.status == 200:
                        break
            except OSError:
                time.sleep(2)
        else:
            logs = subprocess.run(["docker", "logs", name], capture_output=True, text=True)
            pytest.fail(f"{ref} did not answer /v1/models in 300 s: {logs.stdout[-2000:]}{logs.stderr[-2000:]}")
        yield url, name, ref
    finally:
        subprocess.run(["docker", "rm", "-f", name], capture_output=True)


def _bench(url: str, out: Path, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "buildctl", "bench", "serve", "--url", url, "--out", str(out),
                             *WORKLOAD, *args], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _finish(proc: subprocess.Popen[str]) -> str:
    out, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err
    return err


def test_two_runs_compared(server, tmp_path):
    url, name, ref = server
    one, two = tmp_path / "c1.json", tmp_path / "c12.json"
    log = _finish(_bench(url, one, "--concurrency", "1", "--label", "c1"))
    assert "tokenizer /opt/rocmig/models/tiny-llama copied out of container" in log
    _finish(_bench(url, two, "--concurrency", "1,2", "--label", "c12", "--container", name))
    for path, levels in ((one, [1]), (two, [1, 2])):
        run = json.loads(path.read_text())
        assert run["server"]["kind"] == "transformers" and run["workload"]["output_len_enforced"] == "min_new_tokens"
        assert run["environment"]["image"] and run["environment"]["image_digest"].startswith("sha256:")
        assert run["environment"]["torch"] and run["environment"]["transformers"]
        assert [lv["concurrency"] for lv in run["levels"]] == levels
        for lv in run["levels"]:
            assert lv["completed"] == 4 and lv["errors"] == 0
            assert lv["output_len_mean"] == 4  # the server's usage count: min_new_tokens held the length
            assert 0 < lv["ttft_ms"]["p50"] <= lv["e2e_ms"]["p50"]
            # ITL can be 0: a server may stream several tokens in one chunk (a text streamer holds back a
            # word's pieces), and a 4-token answer in one chunk has no gap between its tokens.
            assert lv["itl_ms"]["p50"] is not None and 0 <= lv["itl_ms"]["p50"] <= lv["e2e_ms"]["p50"]
            assert lv["output_tok_s"] > 0
            assert lv["memory"]["source"] == "process" and lv["memory"]["samples"] >= 2
            assert lv["memory"]["peak_mib"] >= lv["memory"]["mean_mib"] > 50  # a model server, not a shell

    refused = subprocess.run([sys.executable, "-m", "buildctl", "compare", str(one), str(two), "--out",
                              str(tmp_path / "r")], cwd=ROOT, capture_output=True, text=True)
    assert refused.returncode == 2 and "workload.concurrency" in refused.stderr
    report = tmp_path / "report"
    done = subprocess.run([sys.executable, "-m", "buildctl", "compare", str(one), str(two), "--out", str(report),
                           "--allow-different-workload"], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    md = (report / "report.md").read_text()
    assert "### Concurrency 1" in md and "### Concurrency 2" not in md and "The workloads differ" in md
    for png in ("ttft.png", "itl.png", "throughput.png", "memory.png"):
        pixels = mpimg.imread(report / png)[..., :3]
        assert pixels.std() > 0.05, f"{png} is blank"
        assert (np.abs(pixels - np.array([1.0, 0.498, 0.055])).max(axis=-1) < 0.1).sum() > 20, f"{png}: no after line"



def test_run_inside_the_serve_image(server, tmp_path):
    """`buildctl bench serve` on the serve image's own Python (3.14, where AIPerf does not install): the load
    comes from the image's GuideLLM, in the server's network and process namespaces (memory: its RSS)."""
    _, name, ref = server
    out = tmp_path / "out"
    out.mkdir()
    out.chmod(0o777)  # the image runs as its own user
    done = subprocess.run(["docker", "run", "--rm", "--network", f"container:{name}", "--pid", f"container:{name}",
                           "-v", f"{ROOT}:/src:ro", "-v", f"{out}:/out", "-w", "/src", "-e", "PYTHONPATH=/src",
                           "--entrypoint", "python", ref, "-m", "buildctl", "bench", "serve",
                           "--url", "http://127.0.0.1:30000", "--out", "/out/in-image.json", *WORKLOAD,
                           "--concurrency", "2", "--memory", "cpu",  # the server: the process on the port
                           "--tokenizer", "/opt/rocmig/models/tiny-llama", "--label", "in the serve image"],
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    run = json.loads((out / "in-image.json").read_text())
    assert run["server"]["load_generator"].startswith("guidellm ")
    assert run["server"]["kind"] == "transformers" and run["workload"]["output_len_enforced"] == "min_new_tokens"
    assert "+debian" in run["environment"]["torch"] and run["environment"]["sglang"]
    assert [lv["concurrency"] for lv in run["levels"]] == [2]  # one level: each GuideLLM start costs ~20 s
    for lv in run["levels"]:
        assert lv["completed"] == 4 and lv["errors"] == 0
        assert lv["output_len_mean"] == 4  # no ignore_eos sent (422 there): generation_config held the length
        assert 0 < lv["ttft_ms"]["p50"] <= lv["e2e_ms"]["p50"] and lv["itl_ms"]["p50"] > 0
        assert lv["output_tok_s"] > 0 and lv["request_s"] > 0
        assert lv["memory"]["source"] == "process" and lv["memory"]["peak_mib"] > 50

def _started(url: str, out: Path, tmp: Path) -> subprocess.Popen[str]:
    """A two-level run in its own process group, TMPDIR in `tmp`; returns once its first level started. Its levels
    send 400 requests each, one at a time, so the run is still in them when signalled: with WORKLOAD's 4 a loaded
    host's run could finish its levels, write its file and be exiting when the signal came."""
    proc = subprocess.Popen([sys.executable, "-m", "buildctl", "bench", "serve", "--url", url, "--out", str(out),
                             *WORKLOAD, "--num-prompts", "400", "--concurrency", "1,2"], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True,
                            env={**os.environ, "TMPDIR": str(tmp)})
    assert proc.stderr is not None
    for line in proc.stderr:
        if line.startswith("[1/2]"):
            break
    time.sleep(3)
    return proc


def _still_running(proc: subprocess.Popen[str]) -> None:
    """Skip when the run ended by itself before it could be signalled (AIPerf failed to start): then there is
    no interrupted run whose cleanup this test could check; the reason names the run's exit and last lines."""
    if proc.poll() is not None:
        rest = proc.stderr.read() if proc.stderr else ""
        pytest.skip(f"the run ended by itself (exit {proc.returncode}) before the signal: {rest.strip()[-400:]}")


def _load_generator_failed(proc: subprocess.Popen[str], code: int) -> None:
    """Skip when the run ended with the load generator's own failure (exit 5, "AIPerf failed") although it was
    signalled: AIPerf failed (a loaded host) while the signal was on its way, and the run reported that first,
    so there is no interrupted run to check; any other exit is left to the test's assertion."""
    rest = proc.stderr.read() if proc.stderr else ""
    if code == 5 and "AIPerf failed" in rest:
        pytest.skip(f"the load generator failed by itself as the signal came (exit 5): {rest.strip()[-400:]}")


def test_killed_run_leaves_no_file(server, tmp_path):
    url, _, _ = server
    termed, killed = tmp_path / "termed.json", tmp_path / "killed.json"
    temp = tmp_path / "tmp"
    temp.mkdir()
    proc = _started(url, termed, temp)
    _still_running(proc)
    proc.send_signal(signal.SIGTERM)
    code = proc.wait(timeout=60)
    if code != 130:
        _load_generator_failed(proc, code)
    assert code == 130
    assert not termed.exists() and not list(temp.iterdir()), "SIGTERM left files behind"

    proc = _started(url, killed, temp)
    _still_running(proc)
    os.killpg(proc.pid, signal.SIGKILL)  # the whole job, as a CI timeout kills it: nothing can clean up
    proc.wait(timeout=30)
    orphans = [p for p in psutil.process_iter(["cmdline"]) if str(temp) in " ".join(p.info["cmdline"] or [])]
    for orphan in orphans:  # AIPerf's own group outlives a SIGKILL of buildctl's
        orphan.kill()
    assert not killed.exists()
    assert not list(tmp_path.glob(".killed.json.*")) and not list(tmp_path.glob(".termed.json.*"))


# The server-info answer as SGLang's own /server_info composes it (sglang/srt/entrypoints/http_server.py):
# asdict(ServerArgs) from the image's SGLang, the scheduler's max_total_num_tokens, and internal_states with
# the scheduler's memory_usage keys (scheduler.py, get_internal_state). SGLang's server cannot start on a
# CPU (no sgl-kernel in this lane), so its answer is composed from its own dataclass, not fetched.
SERVER_INFO = """
import dataclasses, json
from sglang.srt.server_args import ServerArgs
from sglang.version import __version__
args = {f.name: f.default for f in dataclasses.fields(ServerArgs) if f.default is not dataclasses.MISSING}
args = {k: v for k, v in args.items() if v is None or isinstance(v, (str, int, float, bool, list, dict))}
args["model_path"] = "/opt/rocmig/models/tiny-llama"
state = {**args, "last_gen_throughput": 0.0,
         "memory_usage": {"weight": 0.01, "kvcache": 1.5, "token_capacity": 65536, "graph": 0.25}}
print(json.dumps({**args, "max_total_num_tokens": 65536, "internal_states": [state], "version": __version__}))
"""


def test_sglang_server_info_keys_are_sglangs(docker_engine):
    from buildctl.bench.probe import SGLANG_KEYS, server_info_facts

    ref = image_under_test(CELLS[0].ref)
    done = subprocess.run(["docker", "run", "--rm", "--entrypoint", "python", ref, "-c", SERVER_INFO],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    data = json.loads(done.stdout.strip().splitlines()[-1])
    info = server_info_facts(data)
    assert info is not None
    # Every key kept is one SGLang's answer has (a rename in SGLang fails here); each scalar one is kept
    # (ServerArgs leaves some None until the server resolves them at start: page_size, attention_backend).
    assert set(SGLANG_KEYS) <= set(data), set(SGLANG_KEYS) - set(data)
    scalars = {k for k in SGLANG_KEYS if isinstance(data[k], (str, int, float, bool))}
    assert {"model_path", "dtype", "kv_cache_dtype", "tp_size", "version", "max_total_num_tokens"} <= scalars
    assert {k for k in info if not k.startswith("memory_usage.")} == scalars
    assert info["version"] == data["version"] and info["max_total_num_tokens"] == 65536
    assert info["memory_usage.kvcache_gb"] == 1.5 and info["memory_usage.token_capacity"] == 65536
    assert "memory_usage.token_capacity_gb" not in info
