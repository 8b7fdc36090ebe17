"""The load generator: NVIDIA's AIPerf (`aiperf profile`, PyPI `aiperf`), one invocation per concurrency level.

Why AIPerf (docs/compare.md has the whole comparison): it drives any OpenAI-compatible server, sends only
OpenAI request fields unless told otherwise, and takes the server's own length control through
--extra-inputs (SGLang's `ignore_eos`, transformers serve's `generation_config`). SGLang's
`sglang.bench_serving` always adds `ignore_eos`, which transformers serve refuses with HTTP 422.

Each level is one `aiperf profile` run with a fixed concurrency, request count, synthetic prompt of
`input_len` tokens (stddev 0) and `output_len` output tokens; its `profile_export_aiperf.json` holds the
metrics read here (keys as AIPerf 0.13 writes them: `time_to_first_token`, `inter_token_latency`,
`request_latency`, each with `avg`/`p50`/`p99` in ms; `output_token_throughput`, `request_throughput`).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

from buildctl.bench.runfile import Level, Memory, Stat
from buildctl.errors import BuildError, InputError

EXPORT = "profile_export_aiperf.json"


@dataclass(frozen=True)
class LevelRequest:
    """One level to run: where, what and how hard. `extra_inputs` goes into every request body."""

    url: str
    model: str
    tokenizer: str
    endpoint: str
    input_len: int
    output_len: int
    concurrency: int
    num_prompts: int
    seed: int
    extra_inputs: dict[str, object]


def version() -> str:
    """`aiperf <version>`, or raises InputError when AIPerf is not installed (pip install 'rocmig[bench]').

    Raises:
        InputError: AIPerf is not installed in this Python.
    """
    try:
        return f"aiperf {metadata.version('aiperf')}"
    except metadata.PackageNotFoundError as exc:
        raise InputError("bench serve: the load generator AIPerf is not installed in this environment "
                         "(pip install 'rocmig[bench]')") from exc


def argv(req: LevelRequest, artifacts: Path) -> list[str]:
    """The `aiperf profile` command line for one level (with this interpreter: `python -m aiperf`)."""
    args = [sys.executable, "-m", "aiperf", "profile",
            "--model", req.model, "--url", req.url, "--endpoint-type", req.endpoint, "--streaming",
            "--tokenizer", req.tokenizer,
            "--concurrency", str(req.concurrency), "--request-count", str(req.num_prompts),
            "--warmup-request-count", str(req.concurrency),
            "--synthetic-input-tokens-mean", str(req.input_len), "--synthetic-input-tokens-stddev", "0",
            "--output-tokens-mean", str(req.output_len), "--output-tokens-stddev", "0",
            "--random-seed", str(req.seed), "--output-artifact-dir", str(artifacts),
            "--ui-type", "none", "--no-server-metrics"]
    if req.extra_inputs:
        args += ["--extra-inputs", json.dumps(req.extra_inputs)]
    return args


def _stat(metric: object) -> Stat:
    if not isinstance(metric, dict):
        return Stat()
    return Stat(mean=metric.get("avg"), p50=metric.get("p50"), p99=metric.get("p99"))


def _avg(data: dict[str, Any], key: str) -> float | None:
    metric = data.get(key)
    return metric.get("avg") if isinstance(metric, dict) else None


def parse_export(data: dict[str, Any], concurrency: int, memory: Memory | None) -> Level:
    """One `Level` from AIPerf's `profile_export_aiperf.json` (already parsed).

    `output_len_mean` prefers the server's usage count (`usage_completion_tokens`) over AIPerf's
    re-tokenized count of the streamed text (`output_sequence_length`).
    """
    completed = int(_avg(data, "completed_request_count") or _avg(data, "request_count") or 0)
    errors = sum(int(e.get("count", 1)) for e in data.get("error_summary") or [] if isinstance(e, dict))
    out_len = _avg(data, "usage_completion_tokens")
    return Level(concurrency=concurrency, completed=completed, errors=errors,
                 duration_s=_avg(data, "benchmark_duration"),
                 ttft_ms=_stat(data.get("time_to_first_token")), itl_ms=_stat(data.get("inter_token_latency")),
                 e2e_ms=_stat(data.get("request_latency")),
                 output_tok_s=_avg(data, "output_token_throughput"), request_s=_avg(data, "request_throughput"),
                 output_len_mean=out_len if out_len is not None else _avg(data, "output_sequence_length"),
                 memory=memory)


def child_env(req: LevelRequest, tmp: Path) -> dict[str, str]:
    """The load generator's environment: this one with TMPDIR set to `tmp` (its processes make temporary
    folders there, removed with the run's own folder even when they are killed), less HF_HUB_OFFLINE /
    TRANSFORMERS_OFFLINE when the tokenizer is a local folder. In offline mode AIPerf 0.13 resolves every tokenizer name through the hub cache
    (aiperf/common/tokenizer.py, `_from_pretrained_local` -> `snapshot_download`), which refuses a path
    with HFValidationError; a local folder needs no hub, so the flags only break it.
    """
    env = {**os.environ, "TMPDIR": str(tmp)}
    if Path(req.tokenizer).is_dir():
        env.pop("HF_HUB_OFFLINE", None)
        env.pop("TRANSFORMERS_OFFLINE", None)
    return env


def _group_alive(pgid: int) -> bool:
    """Whether any process of group `pgid` is left (signal 0 probes without sending)."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


def stop_group(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM a load generator's process group, SIGKILL what is left of it after 10 s, and return once every process
    of the group is gone (the leader exiting first leaves its service processes still writing)."""
    for sig, wait_s in ((signal.SIGTERM, 10.0), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            break
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline:
            proc.poll()
            if not _group_alive(proc.pid):
                return
            time.sleep(0.1)
    proc.poll()


def run_level(req: LevelRequest, artifacts: Path, log: Path, tmp: Path) -> dict[str, Any]:
    """Run AIPerf for one level; its output goes to `log`, its temporary files under the existing folder
    `tmp`. Returns the parsed export.

    Raises:
        BuildError: AIPerf failed (every request failed, server unreachable); names the log and its last line.
        KeyboardInterrupt and the like pass through after AIPerf's processes are stopped.
    """
    with log.open("w") as fh:
        # Its own process group: AIPerf starts a dozen service processes, all stopped together below.
        proc = subprocess.Popen(argv(req, artifacts), stdout=fh, stderr=subprocess.STDOUT, env=child_env(req, tmp),
                                start_new_session=True)
        try:
            code = proc.wait()
        except BaseException:
            stop_group(proc)
            raise
    export = artifacts / EXPORT
    if code != 0 or not export.is_file():
        tail = [ln.strip() for ln in log.read_text(errors="replace").splitlines() if ln.strip()]
        detail = next((ln for ln in reversed(tail) if "Reason" in ln or "Error" in ln), tail[-1] if tail else "")
        raise BuildError(f"bench serve: AIPerf failed at concurrency {req.concurrency} (exit {code}): "
                         f"{detail.strip('│ ')} (log: {log})")
    data: dict[str, Any] = json.loads(export.read_text())
    return data
