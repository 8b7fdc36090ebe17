"""`docker run rocmig/serve` serves: the entrypoint, the bundled model, the OpenAI API, preflight, SIGTERM.

One container of the serve image runs for the module (no arguments: the bundled model; in the debian
lane the CPU engine), published on a loopback port of the host. The preflight failures each start a
short container with the real option that produces them (no --device, a device node of another group,
a small --shm-size, a bad or unreadable model path, a shared network namespace, another GPU's KFD
topology mounted over /sys/class) and check the line and the exit code (recipes/serve/errors.py).
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import time
import urllib.request
import uuid
from concurrent.futures import ThreadPoolExecutor

import pytest

from buildctl.load import load_project
from recipes.serve import errors, kfd
from recipes.serve.launch import BUNDLED_MODEL
from tests.images.conftest import ROOT, image_under_test, slice_cells

CELLS = slice_cells("serve")
pytestmark = [pytest.mark.docker, pytest.mark.usefixtures("docker_engine")]
HEALTHY_S = 240
DIRECT = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def _docker(*args: str, timeout: float = 180) -> subprocess.CompletedProcess:
    return subprocess.run(["docker", *args], check=False, capture_output=True, text=True, timeout=timeout)


def _run(image: str, *args: str, options: tuple[str, ...] = ()) -> subprocess.CompletedProcess:
    """`docker run --rm [options] image args...`: the entrypoint's exit code and output."""
    return _docker("run", "--rm", *options, image, *args)


@pytest.fixture(scope="module", params=CELLS, ids=lambda c: c.ref)
def server(request):
    """(cell, image, container name, base URL) of a running `docker run -p 127.0.0.1::30000 IMAGE`."""
    cell = request.param
    image = image_under_test(cell.ref)
    if _docker("image", "inspect", image).returncode != 0:
        pytest.fail(f"image {image} is not built: run `make images IMAGES=serve` first")
    name = f"rocmig-serve-{uuid.uuid4().hex[:8]}"
    started = _docker("run", "-d", "--name", name, "-p", "127.0.0.1::30000", image)
    assert started.returncode == 0, started.stderr
    try:
        deadline = time.monotonic() + HEALTHY_S
        logs = ""
        while "healthy after" not in logs:
            state = json.loads(_docker("inspect", name).stdout)[0]["State"]
            logs = _docker("logs", name).stderr
            assert state["Running"], f"server exited with {state['ExitCode']}:\n{logs[-3000:]}"
            assert time.monotonic() < deadline, f"not healthy within {HEALTHY_S} s:\n{logs[-3000:]}"
            time.sleep(1)
        port = _docker("port", name, "30000/tcp").stdout.split()[0].rsplit(":", 1)[1]
        yield cell, image, name, f"http://127.0.0.1:{port}"
    finally:
        _docker("rm", "-f", name)


def _get(url: str) -> tuple[int, bytes]:
    with DIRECT.open(url, timeout=30) as resp:
        return resp.status, resp.read()


def _post(url: str, body: dict) -> tuple[int, bytes]:
    req = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    with DIRECT.open(req, timeout=60) as resp:
        return resp.status, resp.read()


def _chat(base: str, model: str, text: str, **extra) -> tuple[int, bytes]:
    return _post(f"{base}/v1/chat/completions", {"model": model, "max_tokens": 8,
                                                  "messages": [{"role": "user", "content": text}], **extra})


def test_health_models_and_chat(server):
    _, _, _, base = server
    assert _get(f"{base}/health")[0] == 200
    models = json.loads(_get(f"{base}/v1/models")[1])
    ids = [m["id"] for m in models["data"]]
    assert ids == [BUNDLED_MODEL]
    status, body = _chat(base, ids[0], "What does hipify do?")
    reply = json.loads(body)
    assert status == 200 and reply["object"] == "chat.completion"
    message = reply["choices"][0]["message"]
    assert message["role"] == "assistant" and isinstance(message["content"], str)
    assert 1 <= reply["usage"]["completion_tokens"] <= 8 and reply["usage"]["prompt_tokens"] > 5


def test_chat_streamed(server):
    _, _, _, base = server
    status, body = _chat(base, BUNDLED_MODEL, "Stream this.", stream=True)
    events = [line[len("data: "):] for line in body.decode().splitlines() if line.startswith("data: ")]
    chunks = [json.loads(e) for e in events if e != "[DONE]"]
    assert status == 200 and len(chunks) >= 2
    assert all(c["object"] == "chat.completion.chunk" for c in chunks)
    assert "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks if c["choices"])


def test_four_concurrent_requests_all_answered(server):
    _, _, _, base = server
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda i: _chat(base, BUNDLED_MODEL, f"request {i}"), range(4)))
    assert [s for s, _ in results] == [200] * 4
    assert all(json.loads(b)["choices"][0]["message"]["content"] is not None for _, b in results)


def test_log_names_engine_choices_and_time_to_healthy(server):
    cell, _, name, _ = server
    logs = _docker("logs", name).stderr
    assert f"rocmig-serve: image {cell.ref}" in logs
    assert "rocmig-serve: default --host 0.0.0.0: all interfaces" in logs
    assert f"rocmig-serve: default --model-path {BUNDLED_MODEL}" in logs
    assert "rocmig-serve: healthy after " in logs


def test_every_arch_launch_passes_sglang_parser(server):
    """The SGLang command line the entrypoint builds for each arch of the matrix (and for the CPU engine),
    through SGLang's parser."""
    _, _, name, _ = server
    script = (
        "import json, os\n"
        "from recipes.serve import explain, launch, validate\n"
        "from recipes.serve.cell import load_cell\n"
        "here, parser, out = load_cell(), validate.sglang_parser(), {}\n"
        "for arch in sorted(here.archs):\n"
        "    cell = explain.cell_on(here, arch)\n"
        "    plan = launch.plan_gpu(cell, ['--tp', '2'], {}, cell.family in ('CDNA3', 'CDNA4'))\n"
        "    ns = validate.check(plan.sglang_args, parser)\n"
        "    out[arch] = [ns.attention_backend, ns.host, ns.port, ns.tensor_parallel_size, ns.model_path]\n"
        "ns = validate.check(launch.plan_cpu([], 'cpu').sglang_args, parser)\n"
        "out['cpu'] = [ns.device, ns.host, ns.port, ns.model_path]\n"
        "print(json.dumps(out))\n")
    result = _docker("exec", name, "python", "-c", script)
    assert result.returncode == 0, result.stderr[-2000:]
    parsed = json.loads(result.stdout.strip().splitlines()[-1])
    assert parsed["gfx942"] == ["aiter", "0.0.0.0", 30000, 2, BUNDLED_MODEL]
    assert parsed["gfx1100"][0] == "triton" and parsed["gfx90a"][0] == "triton"
    assert len(parsed) >= 7 and parsed["cpu"] == ["cpu", "0.0.0.0", 30000, BUNDLED_MODEL]


def test_launch_server_import_closure_is_installed(server):
    """Every third-party module the import closure of `python -m sglang.launch_server` requires (walked from
    the image's own SGLang source for HIP, buildctl/import_closure.py run in the image) is installed, and
    every first-party module of that closure imports for real; only the modules of components the cell
    leaves out (matrix rules, e.g. sgl-kernel in the debian lane) may be missing."""
    cell, image, _, _ = server
    sglang = load_project(ROOT).matrix.frameworks["sglang"]
    left_out = {name.replace("-", "_") for name, _, _ in cell.excluded_components}
    site = _docker("run", "--rm", "--entrypoint", "python", image, "-c",
                   "import sysconfig; print(sysconfig.get_paths()['purelib'])").stdout.strip()
    script = "/tmp/rocmig_import_closure.py"
    done = _docker("run", "--rm", "-v", f"{ROOT / 'buildctl' / 'import_closure.py'}:{script}:ro",
                   "--entrypoint", "python", image, script, site, "hip", sglang.pypi, *sglang.entry_modules,
                   timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert found["first_party"] > 100 and {"torch", "transformers", "zmq", "fastapi"} <= set(found["modules"])
    absent = [f"{module} (imported by {m['importer']}; {sglang.pypi} declares {m['declared'] or 'nothing named so'})"
              for module, m in found["modules"].items() if not m["found"] and module not in left_out]
    assert not absent, "not installed in the image: " + "; ".join(absent)
    unexpected = {m: name for m, name in found["missing"].items() if name not in left_out}
    assert not unexpected, f"ModuleNotFoundError on import: {unexpected}"
    assert not found["failed"], f"modules of the closure that do not import: {found['failed']}"


def test_port_taken(server):
    _, image, name, _ = server
    result = _run(image, options=("--network", f"container:{name}"))
    assert result.returncode == errors.PORT_TAKEN, result.stderr[-2000:]
    assert "port 30000 on 0.0.0.0 is taken" in result.stderr


def _one_error_line(result: subprocess.CompletedProcess) -> str:
    """The entrypoint's stderr, which must be exactly one `rocmig-serve: error:` line (no third-party warning)."""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("rocmig-serve: error: "), result.stderr[-2000:]
    return lines[0]


def test_unknown_flag_refused_before_preflight(server):
    """A docker option placed after the image (--shm-size) is an unknown flag, exit 2, even where a
    preflight check (/dev/shm for --tp 2) would fail: flags are read from SGLang's source first."""
    _, image, _, _ = server
    for args in (("--tpp", "2"), ("--tp", "2", "--shm-size", "16m")):
        result = _run(image, *args)
        assert result.returncode == errors.BAD_FLAG, result.stderr[-2000:]
        assert f"unrecognized argument {args[-2]}:" in _one_error_line(result)


def test_bad_value_refused_by_sglang_parser_in_one_line(server):
    _, image, _, _ = server
    result = _run(image, "--attention-backend", "nope")
    assert result.returncode == errors.BAD_FLAG, result.stderr[-2000:]
    line = _one_error_line(result)
    assert "SGLang's parser refused" in line and "--attention-backend" in line and "'nope'" in line


def _cpu_torch(cell) -> bool:
    """Whether the cell's torch is a CPU build (the debian lane: no PyTorch ROCm wheel in its release)."""
    return cell.release.torch is None


def _preflight(image: str, options: tuple[str, ...]) -> subprocess.CompletedProcess:
    """The GPU preflight's device and arch checks (recipes.serve.preflight) in a container of `image`, as
    the entrypoint runs them on an image that can serve on the GPU."""
    script = ("import os, sys\n"
              "from recipes.serve import errors, preflight\n"
              "from recipes.serve.cell import load_cell\n"
              "try:\n"
              "    preflight.check_open(preflight.device_nodes())\n"
              "    preflight.check_arch(load_cell(), os.environ)\n"
              "except errors.ServeError as exc:\n"
              "    print(f'rocmig-serve: error: {exc}', file=sys.stderr)\n"
              "    sys.exit(exc.code)\n")
    return _docker("run", "--rm", *options, "--entrypoint", "python", image, "-c", script)


def test_no_gpu_devices(server):
    """Without --device: a CPU-torch image says it cannot serve on the GPU at all (16) before asking for
    devices; the device check itself (10) runs in its container."""
    cell, image, _, _ = server
    result = _run(image, "--device", "cuda")
    missing = "/dev/kfd is missing: run the container with --device=/dev/kfd --device=/dev/dri"
    if _cpu_torch(cell):
        assert result.returncode == errors.NO_GPU_ENGINE, result.stderr[-2000:]
        assert "is a CPU build" in _one_error_line(result)
        result = _preflight(image, ())
    assert result.returncode == errors.NO_DEVICE, result.stderr[-2000:]
    assert missing in result.stderr


@pytest.fixture(scope="module")
def gpu_nodes(tmp_path_factory):
    """Two character device nodes (major 1 minor 3, read as /dev/null) owned by gid 4242, mode 0660: a
    GPU's /dev/kfd and render node as the host's render group owns them."""
    if os.getuid() != 0:
        pytest.skip("mknod needs root")
    folder = tmp_path_factory.mktemp("dev")
    nodes = []
    for name in ("kfd", "renderD128"):
        path = folder / name
        os.mknod(path, stat.S_IFCHR | 0o660, os.makedev(1, 3))
        os.chown(path, 0, 4242)
        path.chmod(0o660)
        nodes.append(str(path))
    return ("--device", f"{nodes[0]}:/dev/kfd", "--device", f"{nodes[1]}:/dev/dri/renderD128")


def test_device_of_another_group_names_its_gid(server, gpu_nodes):
    cell, image, _, _ = server
    options = (*gpu_nodes, "--group-add", "video")
    result = _run(image, "--device", "cuda", options=options)
    if _cpu_torch(cell):
        assert result.returncode == errors.NO_GPU_ENGINE, result.stderr[-2000:]
        result = _preflight(image, options)
    assert result.returncode == errors.DEVICE_DENIED, result.stderr[-2000:]
    assert "cannot open /dev/kfd (group 4242, mode 0660)" in result.stderr and "--group-add 4242" in result.stderr


def test_arch_mismatch_names_the_image_to_pull(server, gpu_nodes, tmp_path):
    cell, image, _, _ = server
    node = tmp_path / "kfd" / "kfd" / "topology" / "nodes" / "1"
    node.mkdir(parents=True)
    (node / "properties").write_text("simd_count 192\ngfx_target_version 110000\n")
    tmp_path.chmod(0o755)
    opts = (*gpu_nodes, "--group-add", "4242", "-v", f"{tmp_path}:/sys/class:ro")
    result = _run(image, "--device", "cuda", options=opts)
    if _cpu_torch(cell):
        assert result.returncode == errors.NO_GPU_ENGINE, result.stderr[-2000:]
        result = _preflight(image, opts)
    assert result.returncode == errors.ARCH_MISMATCH, result.stderr[-2000:]
    assert f"the GPU is gfx1100 but this image ({cell.ref}) holds {cell.arch_name} kernels" in result.stderr
    assert cell.ref.replace(cell.arch_name, "gfx1100") in result.stderr
    major, minor, step = (int(x) for x in kfd.override_value(cell.arch_name).split("."))
    (node / "properties").write_text(f"gfx_target_version {major * 10000 + minor * 100 + step}\n")
    matched = _preflight(image, opts)
    assert matched.returncode == 0, matched.stderr[-2000:]


def test_small_shm_with_tensor_parallelism(server):
    _, image, _, _ = server
    result = _run(image, "--tp", "2", options=("--shm-size", "16m"))
    assert result.returncode == errors.SHM_TOO_SMALL, result.stderr[-2000:]
    assert "/dev/shm is 16 MiB, too small for --tp 2" in result.stderr and "--shm-size 16g" in result.stderr


def test_bad_and_unreadable_model_paths(server, tmp_path):
    _, image, _, _ = server
    missing = _run(image, "--model-path", "/models/nope")
    assert missing.returncode == errors.MODEL_UNUSABLE, missing.stderr[-2000:]
    assert "--model-path /models/nope: no such file or folder in the container" in missing.stderr
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    (private / "config.json").write_text("{}")
    denied = _run(image, "--model-path", "/models/private", options=("-v", f"{private}:/models/private:ro"))
    assert denied.returncode == errors.MODEL_UNUSABLE, denied.stderr[-2000:]
    assert "folder not readable by uid 1000" in denied.stderr


def test_sigterm_stops_it_in_under_15_s(server):
    _, _, name, _ = server
    start = time.monotonic()
    stopped = _docker("stop", "-t", "15", name)
    elapsed = time.monotonic() - start
    assert stopped.returncode == 0, stopped.stderr
    state = json.loads(_docker("inspect", name).stdout)[0]["State"]
    logs = _docker("logs", name).stderr
    assert elapsed < 15 and state["ExitCode"] == 0, f"{elapsed:.1f} s, exit {state['ExitCode']}:\n{logs[-2000:]}"
    assert "SIGTERM: stopping the engine" in logs and "engine stopped " in logs
    assert "leaked semaphore" not in logs, logs[-2000:]


SIZE_LIMIT_BYTES = 5_000_000_000  # the debian-lane serve image stays under 5 GB (as `docker images` counts)


@pytest.mark.parametrize("cell", [c for c in CELLS if c.release.source == "debian"], ids=lambda c: c.ref)
def test_debian_serve_image_stays_under_5_gb(cell):
    image = image_under_test(cell.ref)
    inspected = _docker("image", "inspect", "--format", "{{.Size}}", image)
    assert inspected.returncode == 0, f"image {image} is not built: run `make images IMAGES=serve` first"
    size = int(inspected.stdout)
    assert size < SIZE_LIMIT_BYTES, f"{image} is {size / 1e9:.2f} GB (limit 5 GB): see docs/benchmarks.md's layers"
