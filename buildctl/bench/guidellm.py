"""The load generator inside the serve image: GuideLLM (`guidellm run`, PyPI `guidellm`), one run per level.

Why GuideLLM there (docs/compare.md has the whole comparison): AIPerf needs Python < 3.14 and the debian
lane's serve image runs 3.14, where GuideLLM 0.8.1 installs (its torch requirement met by the image's own
torch). GuideLLM sends `ignore_eos` (a field transformers serve refuses with HTTP 422) only when the data
fixes the output length (guidellm/backends/openai/request_handlers.py): so for a server that takes
`ignore_eos` (SGLang) the synthetic data carries `output_tokens`, and for any other the output length goes
as the backend's `max_tokens` plus the server's own length control (`extra_inputs`, e.g. transformers
serve's `generation_config`) in the request body.

Each level is one `guidellm run --config SCENARIO` with a `concurrent` profile of one stream count, a
`max_requests` constraint and synthetic prompts of exactly `input_len` tokens; its JSON output
(`benchmarks[0].metrics`, GuideLLM 0.8: `time_to_first_token_ms`, `inter_token_latency_ms`,
`request_latency` in seconds, `output_tokens_per_second`, `requests_per_second`, `output_token_count`,
`request_totals`, each split into successful / errored / total with mean, median and percentiles) is read.

GuideLLM 0.8.1 tracks request states across its worker processes with updates that can race (its
scheduler/worker_group.py drops an update it cannot place: "Already finalized by a racing terminal
update"); on a loaded 2-core host a level then, rarely, accounts for fewer successful or errored requests
than it sent, with no error. Such a level is run once more, in a fresh folder; a second short count is
kept as measured (the run file's `completed` says how many requests it covers).
"""

from __future__ import annotations

import json
import subprocess
import sys
from importlib import metadata
from pathlib import Path
from typing import Any

from buildctl.bench.loadgen import LevelRequest, child_env, stop_group
from buildctl.bench.runfile import Level, Memory, Stat
from buildctl.errors import BuildError, InputError

EXPORT = "benchmarks.json"


def version() -> str:
    """`guidellm <version>`, or raises InputError when GuideLLM is not installed here."""
    try:
        return f"guidellm {metadata.version('guidellm')}"
    except metadata.PackageNotFoundError as exc:
        raise InputError("bench serve: the load generator GuideLLM is not installed in this environment "
                         "(pip install guidellm; the serve image has it)") from exc


def scenario(req: LevelRequest, export: Path) -> dict[str, Any]:
    """GuideLLM's scenario (the `spec` of `guidellm run --config`) for one level; see the module doc."""
    backend: dict[str, Any] = {"kind": "openai_http", "target": req.url, "model": req.model, "stream": True,
                               "request_format": "/v1/chat/completions" if req.endpoint == "chat"
                               else "/v1/completions"}
    data: dict[str, Any] = {"kind": "synthetic_text", "prompt_tokens": req.input_len}
    if "ignore_eos" in req.extra_inputs:
        data["output_tokens"] = req.output_len
        extra = {k: v for k, v in req.extra_inputs.items() if k != "ignore_eos"}
    else:
        backend["max_tokens"] = req.output_len
        extra = dict(req.extra_inputs)
    if extra:
        backend["extras"] = {"body": extra}
    return {"spec": {
        "backend": backend,
        "profile": {"kind": "concurrent", "streams": [req.concurrency]},
        "constraints": [{"kind": "max_requests", "count": req.num_prompts}],
        "tokenizer": {"kind": "huggingface_auto", "model": req.tokenizer},
        "data": [data],
        "seed": {"kind": "static", "value": req.seed},
        "outputs": [{"kind": "json", "path": str(export)}],
    }}


def argv(config: Path) -> list[str]:
    """The `guidellm run` command line (with this interpreter: `python -m guidellm`)."""
    return [sys.executable, "-m", "guidellm", "run", "--config", str(config), "--disable-console-interactive"]


def accounted(data: dict[str, Any]) -> int:
    """How many requests GuideLLM's output accounts for as finished: successful plus errored requests of its
    first benchmark (`metrics.request_totals`; cancelled ones, `incomplete`, are not counted)."""
    totals = (data["benchmarks"][0].get("metrics") or {}).get("request_totals") or {}
    return int(totals.get("successful") or 0) + int(totals.get("errored") or 0)


def run_level(req: LevelRequest, artifacts: Path, log: Path, tmp: Path) -> dict[str, Any]:
    """Run GuideLLM for one level; its scenario and output go to the new folder `artifacts`, its console to
    `log`, its temporary files under `tmp`. Returns the parsed output.

    A run that accounts for fewer than `req.num_prompts` requests (see the module doc) is run once more,
    in `artifacts/rerun` with its console in `log` + `.rerun`, and a line on stderr says so.

    Raises:
        BuildError: GuideLLM failed or wrote no benchmark; names the log and its last line.
        KeyboardInterrupt and the like pass through after GuideLLM's processes are stopped.
    """
    artifacts.mkdir()
    data = _run_once(req, artifacts, log, tmp)
    if accounted(data) >= req.num_prompts:
        return data
    print(f"      GuideLLM accounted for {accounted(data)} of {req.num_prompts} requests at concurrency "
          f"{req.concurrency}; running the level once more", file=sys.stderr, flush=True)
    rerun = artifacts / "rerun"
    rerun.mkdir()
    return _run_once(req, rerun, log.with_name(log.name + ".rerun"), tmp)


def _run_once(req: LevelRequest, artifacts: Path, log: Path, tmp: Path) -> dict[str, Any]:
    export, config = artifacts / EXPORT, artifacts / "scenario.json"
    config.write_text(json.dumps(scenario(req, export), indent=2))
    with log.open("w") as fh:
        proc = subprocess.Popen(argv(config), stdout=fh, stderr=subprocess.STDOUT, env=child_env(req, tmp),
                                cwd=artifacts, start_new_session=True)
        try:
            code = proc.wait()
        except BaseException:
            stop_group(proc)
            raise
    data: dict[str, Any] = json.loads(export.read_text()) if export.is_file() else {}
    if code != 0 or not data.get("benchmarks"):
        tail = [ln.strip() for ln in log.read_text(errors="replace").splitlines() if ln.strip()]
        detail = next((ln for ln in reversed(tail) if "Error" in ln), tail[-1] if tail else "")
        raise BuildError(f"bench serve: GuideLLM failed at concurrency {req.concurrency} (exit {code}): "
                         f"{detail} (log: {log})")
    return data


def _successful(metrics: dict[str, Any], key: str) -> dict[str, Any]:
    metric = metrics.get(key)
    part = metric.get("successful") if isinstance(metric, dict) else None
    return part if isinstance(part, dict) else {}


def _stat(part: dict[str, Any], scale: float = 1.0) -> Stat:
    found = part.get("percentiles")
    pct: dict[str, Any] = found if isinstance(found, dict) else {}
    values = (part.get("mean"), pct.get("p50", part.get("median")), pct.get("p99"))
    mean, p50, p99 = (v * scale if isinstance(v, (int, float)) else None for v in values)
    return Stat(mean=mean, p50=p50, p99=p99)


def parse_export(data: dict[str, Any], concurrency: int, memory: Memory | None) -> Level:
    """One `Level` from GuideLLM's JSON output (already parsed): its first benchmark's successful requests.

    `request_latency` is in seconds there (milliseconds here); `output_len_mean` is GuideLLM's output
    token count, which it takes from the server's usage count when the server reports one.
    """
    bench = data["benchmarks"][0]
    metrics = bench.get("metrics") or {}
    totals = metrics.get("request_totals") or {}
    return Level(concurrency=concurrency, completed=int(totals.get("successful") or 0),
                 errors=int(totals.get("errored") or 0), duration_s=bench.get("duration"),
                 ttft_ms=_stat(_successful(metrics, "time_to_first_token_ms")),
                 itl_ms=_stat(_successful(metrics, "inter_token_latency_ms")),
                 e2e_ms=_stat(_successful(metrics, "request_latency"), 1000.0),
                 output_tok_s=_successful(metrics, "output_tokens_per_second").get("mean"),
                 request_s=_successful(metrics, "requests_per_second").get("mean"),
                 output_len_mean=_successful(metrics, "output_token_count").get("mean"),
                 memory=memory)
