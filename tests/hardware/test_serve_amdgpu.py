"""`docker run rocmig/serve` on a real AMD GPU: SGLang serves the bundled model and answers one chat request.

Run with `pytest -m amdgpu tests/hardware`. Skipped without /dev/kfd. The image is the amd lane's serve
image for the GPU's arch (read from the KFD topology): $ROCMIG_SERVE_IMAGE, default
rocmig/serve:rocm7.2.4-<arch>; it must be built (make images SOURCE=amd ROCM=7.2 ARCH=<arch> IMAGES=serve).
The device nodes' groups are passed by number, as docs/serve.md says.
"""

from __future__ import annotations

import glob
import json
import os
import subprocess
import time
import urllib.request
import uuid

import pytest

from recipes.serve import kfd
from recipes.serve.launch import BUNDLED_MODEL

pytestmark = [pytest.mark.amdgpu, pytest.mark.docker,
              pytest.mark.skipif(not os.path.exists("/dev/kfd"), reason="no AMD GPU (/dev/kfd missing)")]
HEALTHY_S = 900


def _docker(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["docker", *args], check=False, capture_output=True, text=True, timeout=300)


def test_sglang_serves_bundled_model_on_the_gpu():
    arch = kfd.gpu_archs()[0]
    image = os.environ.get("ROCMIG_SERVE_IMAGE", f"rocmig/serve:rocm7.2.4-{arch}")
    assert _docker("image", "inspect", image).returncode == 0, f"{image} is not built"
    gids = sorted({os.stat(p).st_gid for p in ["/dev/kfd", *glob.glob("/dev/dri/renderD*")]})
    groups = [opt for gid in gids for opt in ("--group-add", str(gid))]
    name = f"rocmig-serve-gpu-{uuid.uuid4().hex[:8]}"
    started = _docker("run", "-d", "--name", name, "--device=/dev/kfd", "--device=/dev/dri", *groups,
                      "--ipc=host", "-p", "127.0.0.1::30000", image)
    assert started.returncode == 0, started.stderr
    try:
        deadline = time.monotonic() + HEALTHY_S
        while "healthy after" not in (logs := _docker("logs", name).stderr):
            state = json.loads(_docker("inspect", name).stdout)[0]["State"]
            assert state["Running"], f"exited {state['ExitCode']}:\n{logs[-4000:]}"
            assert time.monotonic() < deadline, logs[-4000:]
            time.sleep(2)
        assert "engine sglang" in logs
        port = _docker("port", name, "30000/tcp").stdout.split()[0].rsplit(":", 1)[1]
        body = json.dumps({"model": BUNDLED_MODEL, "max_tokens": 8,
                           "messages": [{"role": "user", "content": "hello"}]}).encode()
        req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/chat/completions", data=body,
                                     headers={"Content-Type": "application/json"})
        with urllib.request.build_opener(urllib.request.ProxyHandler({})).open(req, timeout=120) as resp:
            reply = json.loads(resp.read())
        assert reply["choices"][0]["message"]["role"] == "assistant"
        assert reply["usage"]["completion_tokens"] >= 1
        stop = _docker("stop", "-t", "15", name)
        assert stop.returncode == 0
        assert json.loads(_docker("inspect", name).stdout)[0]["State"]["ExitCode"] == 0
    finally:
        _docker("rm", "-f", name)
