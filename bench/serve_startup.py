"""Time to healthy and first-token latency of the serve image's bundled model, against a baseline.

Usage (from the project root, with the serve image built):
    .venv/bin/python bench/serve_startup.py [--image rocmig/serve:rocm7.2.4-gfx942-debian] [--starts 3] [--requests 20]

Two ways to start the same engine on the same image, alternated --starts times each:
  entrypoint: `docker run IMAGE` (preflight, SGLang's parser over the flags, defaults, engine, health wait)
  baseline:   `docker run --entrypoint transformers IMAGE serve MODEL --device cpu --host 0.0.0.0 --port 30000`
Time to healthy is from `docker run` to the first 200 of /health seen from the host. Then --requests
streamed chat requests (8 tokens each, one at a time) measure TTFT (time to the first content chunk) and
the whole request. Prints one JSON object: medians per way and the entrypoint/baseline ratios.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from recipes.serve.launch import BUNDLED_MODEL

DIRECT = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def _docker(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["docker", *args], check=False, capture_output=True, text=True, timeout=300)


def _healthy(base: str) -> bool:
    try:
        with DIRECT.open(f"{base}/health", timeout=2) as resp:
            return resp.status == 200
    except (urllib.error.URLError, OSError):
        return False


def _stream(base: str) -> tuple[float, float]:
    """(seconds to the first content chunk, seconds to the end) of one streamed 8-token chat request."""
    body = json.dumps({"model": BUNDLED_MODEL, "max_tokens": 8, "stream": True,
                       "messages": [{"role": "user", "content": "How do I port a CUDA kernel?"}]}).encode()
    req = urllib.request.Request(f"{base}/v1/chat/completions", data=body, headers={"Content-Type": "application/json"})
    start, first = time.perf_counter(), None
    with DIRECT.open(req, timeout=60) as resp:
        for raw in resp:
            line = raw.decode().strip()
            if first is None and line.startswith("data: {") and '"content"' in line:
                first = time.perf_counter() - start
    return (first if first is not None else float("nan")), time.perf_counter() - start


def one_start(image: str, baseline: bool, requests: int) -> dict:
    """Start the image one way, measure, remove the container."""
    name = f"rocmig-bench-serve-{uuid.uuid4().hex[:8]}"
    way = (["--entrypoint", "transformers", image, "serve", BUNDLED_MODEL, "--device", "cpu", "--host", "0.0.0.0",
            "--port", "30000"] if baseline else [image])
    t0 = time.perf_counter()
    started = _docker("run", "-d", "--name", name, "-p", "127.0.0.1::30000", *way)
    if started.returncode != 0:
        raise SystemExit(f"bench: docker run failed: {started.stderr.strip()}")
    try:
        port = _docker("port", name, "30000/tcp").stdout.split()[0].rsplit(":", 1)[1]
        base = f"http://127.0.0.1:{port}"
        while not _healthy(base):
            if time.perf_counter() - t0 > 300:
                raise SystemExit(f"bench: {name} not healthy in 300 s")
            time.sleep(0.1)
        to_healthy = time.perf_counter() - t0
        timings = [_stream(base) for _ in range(requests)]
        logged = next((float(line.split("healthy after ")[1].split()[0]) for line in _docker("logs", name).stderr.splitlines()
                       if "healthy after" in line), None)
        return {"to_healthy_s": to_healthy, "engine_to_healthy_s": logged,
                "ttft_ms": [t * 1000 for t, _ in timings], "e2e_ms": [e * 1000 for _, e in timings]}
    finally:
        _docker("rm", "-f", name)


def main(argv: list[str]) -> int:
    """CLI entry (see module doc)."""
    p = argparse.ArgumentParser(prog="bench/serve_startup.py", description=__doc__.splitlines()[0])
    p.add_argument("--image", default="rocmig/serve:rocm7.2.4-gfx942-debian")
    p.add_argument("--starts", type=int, default=3)
    p.add_argument("--requests", type=int, default=20)
    a = p.parse_args(argv)
    runs: dict[str, list[dict]] = {"entrypoint": [], "baseline": []}
    for i in range(a.starts):
        for way in ("entrypoint", "baseline"):
            runs[way].append(one_start(a.image, way == "baseline", a.requests))
            print(f"bench: start {i + 1}/{a.starts} {way}: healthy after {runs[way][-1]['to_healthy_s']:.2f} s",
                  file=sys.stderr)
    out: dict = {"image": a.image, "starts": a.starts, "requests_per_start": a.requests}
    for way, rs in runs.items():
        out[way] = {"to_healthy_s_median": statistics.median(r["to_healthy_s"] for r in rs),
                    "ttft_ms_median": statistics.median(t for r in rs for t in r["ttft_ms"]),
                    "ttft_ms_p90": statistics.quantiles([t for r in rs for t in r["ttft_ms"]], n=10)[-1],
                    "e2e_ms_median": statistics.median(t for r in rs for t in r["e2e_ms"])}
        logged = [r["engine_to_healthy_s"] for r in rs if r["engine_to_healthy_s"] is not None]
        if logged:
            out[way]["entrypoint_logged_healthy_s_median"] = statistics.median(logged)
    out["ratio_to_healthy"] = out["entrypoint"]["to_healthy_s_median"] / out["baseline"]["to_healthy_s_median"]
    out["ratio_ttft"] = out["entrypoint"]["ttft_ms_median"] / out["baseline"]["ttft_ms_median"]
    print(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
