"""What kind of server answers at a URL, and what it says about itself.

- SGLang: `GET /get_server_info` (older releases) or `/server_info` answers JSON with `model_path`; the
  run keeps its version, dtype, quantization, KV cache size (`max_total_num_tokens`), KV cache dtype,
  `mem_fraction_static`, page size, TP size, attention backend and, where the scheduler reports it
  (`internal_states[0].memory_usage`), weight / KV cache / graph memory in GB and the token capacity.
  Output length is held fixed with SGLang's sampling parameter `ignore_eos`.
- transformers serve: accepts a `generation_config` JSON string per request (transformers
  cli/serving/utils.py, `_build_generation_config`); `min_new_tokens` holds the output length fixed.
  It refuses fields it does not know with HTTP 422 (so `ignore_eos` cannot be sent to it).
- anything else OpenAI-compatible: plain requests, output length not enforced (recorded as such).
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from dataclasses import dataclass

from buildctl.errors import UnreachableError

SGLANG_INFO_PATHS = ("/get_server_info", "/server_info")
SGLANG_KEYS = ("version", "model_path", "served_model_name", "dtype", "quantization", "kv_cache_dtype",
               "max_total_num_tokens", "mem_fraction_static", "page_size", "tp_size", "attention_backend",
               "context_length", "device")
KINDS = ("auto", "sglang", "transformers", "openai")


@dataclass(frozen=True)
class ServerFacts:
    """`kind`: sglang, transformers or openai; `models`: ids from /v1/models; `info`: flat facts kept in the run."""

    kind: str
    models: list[str]
    info: dict[str, str | int | float | bool | None]


def _get_json(url: str, timeout_s: float = 10.0) -> object | None:
    try:
        with urllib.request.urlopen(url, timeout=timeout_s) as resp:
            data: object = json.loads(resp.read())
            return data
    except (urllib.error.URLError, OSError, ValueError):
        return None


def _post_status(url: str, body: dict[str, object], timeout_s: float = 60.0) -> int | None:
    req = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout_s) as resp:
            return int(resp.status)
    except urllib.error.HTTPError as exc:
        return int(exc.code)
    except (urllib.error.URLError, OSError):
        return None


# internal_states[].memory_usage as SGLang's scheduler reports it (sglang/srt/managers/scheduler.py,
# get_internal_state, 0.5.10): weight, kvcache and graph in GB; token_capacity in tokens.
MEMORY_USAGE_GB = ("weight", "kvcache", "graph")


def server_info_facts(data: object) -> dict[str, str | int | float | bool | None] | None:
    """The kept facts of one SGLang server-info answer (already parsed), or None when it is not one.

    SGLang's `/server_info` answers `{**asdict(server_args), **scheduler_info, "internal_states": [...],
    "version": ...}` (sglang/srt/entrypoints/http_server.py); the keys in SGLANG_KEYS are kept when they
    are scalars, and the first data-parallel rank's memory use as `memory_usage.weight_gb`,
    `memory_usage.kvcache_gb`, `memory_usage.graph_gb` and `memory_usage.token_capacity` (tokens).
    """
    if not isinstance(data, dict) or "model_path" not in data:
        return None
    info: dict[str, str | int | float | bool | None] = {
        k: data[k] for k in SGLANG_KEYS if isinstance(data.get(k), (str, int, float, bool))}
    states = data.get("internal_states")
    usage = states[0].get("memory_usage") if isinstance(states, list) and states and isinstance(
        states[0], dict) else None
    if isinstance(usage, dict):
        for key, value in usage.items():
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                info[f"memory_usage.{key}_gb" if key in MEMORY_USAGE_GB else f"memory_usage.{key}"] = value
    return info


def sglang_info(base: str) -> dict[str, str | int | float | bool | None] | None:
    """The kept facts of SGLang's server info (`server_info_facts`), or None when no SGLang server-info
    endpoint answers at `base`."""
    for path in SGLANG_INFO_PATHS:
        info = server_info_facts(_get_json(base + path))
        if info is not None:
            return info
    return None


def models(base: str) -> list[str]:
    """Model ids from `GET /v1/models`.

    Raises:
        UnreachableError: nothing OpenAI-compatible answers at `base`.
    """
    data = _get_json(base + "/v1/models")
    if not isinstance(data, dict) or not isinstance(data.get("data"), list):
        raise UnreachableError(f"--url {base}: no OpenAI-compatible server answers (GET /v1/models)")
    return [str(m.get("id")) for m in data["data"] if isinstance(m, dict) and m.get("id")]


def accepts_generation_config(base: str, model: str) -> bool:
    """True when a one-token completion with a `generation_config` field is answered with 200."""
    body = {"model": model, "prompt": "a", "max_tokens": 1,
            "generation_config": json.dumps({"max_new_tokens": 1, "do_sample": False})}
    return _post_status(base + "/v1/completions", body) == 200


def probe(base: str, kind: str, model: str | None) -> ServerFacts:
    """Identify the server at `base` (`kind` auto) or trust the given kind; see the module doc.

    Raises:
        UnreachableError: nothing answers /v1/models at `base`.
    """
    ids = models(base)
    info = sglang_info(base) if kind in ("auto", "sglang") else None
    if kind == "sglang" or (kind == "auto" and info is not None):
        return ServerFacts("sglang", ids, info or {})
    name = model or (ids[0] if ids else "")
    if kind == "transformers" or (kind == "auto" and name and accepts_generation_config(base, name)):
        return ServerFacts("transformers", ids, {})
    return ServerFacts("openai", ids, {})


def length_control(kind: str, output_len: int) -> tuple[str, dict[str, object]]:
    """How the server is told to emit exactly `output_len` tokens: (name, extra request fields)."""
    if kind == "sglang":
        return "ignore_eos", {"ignore_eos": True}
    if kind == "transformers":
        config = {"min_new_tokens": output_len, "max_new_tokens": output_len, "do_sample": False}
        return "min_new_tokens", {"generation_config": json.dumps(config)}
    return "", {}
