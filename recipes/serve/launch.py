"""The engine command line and environment for this cell: defaults chosen from the arch, each with why.

A flag the user gave always wins over a default (a default is only appended when its flag is absent);
an environment variable the user set (docker run -e) always wins over the image's. Facts used:
- SGLang 0.5.10.post1 (server_args.py, _get_default_attn_backend) picks the `aiter` attention backend on
  every HIP device. aiter is AMD's CDNA kernel library (built here for gfx942 / gfx950 only), so on RDNA
  (and where the image has no aiter) the portable `triton` backend is chosen instead.
- SGLang listens on 127.0.0.1 by default; in a container that is unreachable through `-p 30000:30000`.
- The environment AMD's SGLang ROCm image sets (sglang docker/rocm.Dockerfile, "Performance
  environment variable"): HIP_FORCE_DEV_KERNARG=1, HSA_NO_SCRATCH_RECLAIM=1, SGLANG_USE_AITER=1,
  SGLANG_SET_CPU_AFFINITY=1, SGLANG_MOE_PADDING=1, SGLANG_ROCM_FUSED_DECODE_MLA=1,
  SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1, SGLANG_DISABLE_CUDNN_CHECK=1, NCCL_MIN_NCHANNELS=112.
  That image is built for MI300 / MI350 (CDNA3 / CDNA4): its aiter and MI300-tuned RCCL settings are
  applied here on CDNA only.
- multiprocessing's resource_tracker (a process of the engine's, SGLang's and transformers' alike)
  warns "resource_tracker: There appear to be N leaked semaphore objects" when SIGTERM ends the engine
  before its workers release their semaphores (CPython Lib/multiprocessing/resource_tracker.py): at a
  stop that is noise, so PYTHONWARNINGS ignores that one warning in the engine's processes.
- The CPU engine is transformers' OpenAI-compatible server (`transformers serve MODEL --device cpu`,
  transformers 5.x, transformers/cli/serve.py); SGLang flags with a transformers counterpart are mapped.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from recipes.serve import flags
from recipes.serve.cell import Cell

DEFAULT_PORT = 30000
DEFAULT_HOST = "0.0.0.0"
BUNDLED_MODEL = "/opt/rocmig/models/tiny-llama"
AMD_IMAGE = "AMD's SGLang ROCm image sets it"


@dataclass(frozen=True)
class Choice:
    """One launch decision: `what` ('--attention-backend aiter', 'SGLANG_USE_AITER=1'), `why`, and
    whether it came from the user (`yours`: the default was not applied)."""

    what: str
    why: str
    yours: bool = False

    def line(self) -> str:
        """The log line for this choice."""
        return f"{'kept yours' if self.yours else 'default'} {self.what}: {self.why}"


@dataclass(frozen=True)
class Launch:
    """What to run: `argv` (the engine's command), `env` (variables to add), `sglang_args` (the SGLang
    flags the launch stands for, for SGLang's parser), the address the engine listens on, the model,
    the tensor-parallel size and the choices made (for the log)."""

    engine: str
    argv: tuple[str, ...]
    env: dict[str, str]
    sglang_args: tuple[str, ...]
    host: str
    port: int
    model: str
    tp: int
    choices: tuple[Choice, ...]


def attention_backend(cell: Cell, has_aiter: bool) -> tuple[str, str]:
    """(backend, why) for SGLang's --attention-backend on this cell's GPU."""
    if cell.cdna and has_aiter:
        return "aiter", f"{cell.arch} is {cell.family} (wavefront {cell.wavefront}) and the image holds aiter, AMD's CDNA attention kernels"
    if cell.cdna:
        return "triton", f"{cell.arch} is {cell.family} but this image has no aiter (built for gfx942/gfx950 only); SGLang's own HIP default would be aiter"
    return "triton", (f"{cell.arch} is {cell.family} (wavefront {cell.wavefront}): aiter has no RDNA kernels, so SGLang's "
                      "HIP default (aiter) would fail; triton compiles for any gfx arch")


def _with_defaults(user: list[str], defaults: list[tuple[str, str, str]]) -> tuple[list[str], list[Choice]]:
    """user argv plus [flag, value] for each (key, value, why) default whose flag the user did not give."""
    argv, choices = list(user), []
    for key, val, why in defaults:
        name = flags.SPELLINGS[key][0]
        given = flags.value(user, key)
        if given is None:
            argv += [name, val]
            choices.append(Choice(f"{name} {val}", why))
        else:
            choices.append(Choice(f"{name} {given}", f"default would be {val} ({why})", yours=True))
    return argv, choices


def gpu_env(cell: Cell, env: Mapping[str, str], has_aiter: bool, tp: int) -> tuple[dict[str, str], list[Choice]]:
    """Variables to add for SGLang on this cell's GPU ({name: value}) and the choices, the user's kept."""
    wanted: list[tuple[str, str, str]] = [
        ("HIP_FORCE_DEV_KERNARG", "1", f"kernel arguments in device memory, lower launch latency ({AMD_IMAGE})"),
        ("HSA_NO_SCRATCH_RECLAIM", "1", f"scratch memory stays allocated between kernels ({AMD_IMAGE})"),
        ("SGLANG_SET_CPU_AFFINITY", "1", f"workers pinned to the CPUs near their GPU ({AMD_IMAGE})"),
        ("SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN", "1", f"--context-length may exceed the model's ({AMD_IMAGE})"),
        ("SGLANG_DISABLE_CUDNN_CHECK", "1", f"no cuDNN on ROCm: MIOpen stands in ({AMD_IMAGE})"),
    ]
    if cell.cdna and has_aiter:
        wanted += [
            ("SGLANG_USE_AITER", "1", f"{cell.family}: aiter kernels for attention, MoE and norms ({AMD_IMAGE})"),
            ("SGLANG_ROCM_FUSED_DECODE_MLA", "1", f"{cell.family}: aiter's fused MLA decode for DeepSeek-style models ({AMD_IMAGE})"),
            ("SGLANG_MOE_PADDING", "1", f"{cell.family}: MoE weights padded for CDNA GEMM tiles ({AMD_IMAGE})"),
        ]
    else:
        wanted.append(("SGLANG_USE_AITER", "0", f"{cell.arch}: no aiter kernels for this arch in the image"))
    if cell.family in ("CDNA3", "CDNA4") and tp > 1:
        wanted.append(("NCCL_MIN_NCHANNELS", "112", f"{cell.family} XGMI all-reduce across {tp} GPUs: RCCL channels as {AMD_IMAGE}"))
    add, choices = {}, []
    for name, val, why in wanted:
        if name in env:
            choices.append(Choice(f"{name}={env[name]}", f"default would be {val} ({why})", yours=True))
        else:
            add[name] = val
            choices.append(Choice(f"{name}={val}", why))
    return add, choices


QUIET_WARNINGS = "ignore:resource_tracker:UserWarning:multiprocessing.resource_tracker"


def quiet_env(env: Mapping[str, str]) -> tuple[dict[str, str], Choice]:
    """PYTHONWARNINGS for the engine's processes ({name: value}, empty when the user set it) and its choice."""
    why = "the engine's resource_tracker warning of semaphores left at SIGTERM is noise at a stop"
    if "PYTHONWARNINGS" in env:
        return {}, Choice(f"PYTHONWARNINGS={env['PYTHONWARNINGS']}", f"default would be {QUIET_WARNINGS} ({why})",
                          yours=True)
    return {"PYTHONWARNINGS": QUIET_WARNINGS}, Choice(f"PYTHONWARNINGS={QUIET_WARNINGS}", why)


def plan_gpu(cell: Cell, user: list[str], env: Mapping[str, str], has_aiter: bool) -> Launch:
    """SGLang on the cell's GPU: `python -m sglang.launch_server` with the user's flags and the defaults."""
    attn, attn_why = attention_backend(cell, has_aiter)
    argv, choices = _with_defaults(user, [
        ("model", BUNDLED_MODEL, "the model bundled in the image (random weights, for a first request)"),
        ("host", DEFAULT_HOST, "all interfaces, so docker run -p 30000:30000 reaches it (SGLang's default is 127.0.0.1)"),
        ("port", str(DEFAULT_PORT), "SGLang's port; the image EXPOSEs it"),
        ("attention", attn, attn_why),
    ])
    tp = flags.int_value(argv, "tp", 1)
    add, env_choices = gpu_env(cell, env, has_aiter, tp)
    quiet, quiet_choice = quiet_env(env)
    add.update(quiet)
    env_choices.append(quiet_choice)
    return Launch("sglang", ("python", "-m", "sglang.launch_server", *argv), add, tuple(argv),
                  flags.value(argv, "host") or DEFAULT_HOST, flags.int_value(argv, "port", DEFAULT_PORT),
                  flags.value(argv, "model") or BUNDLED_MODEL, tp, tuple(choices + env_choices))


_DTYPES = {"auto": "auto", "half": "float16", "float16": "float16", "bfloat16": "bfloat16",
           "float": "float32", "float32": "float32"}
_MAPPED = ("model", "host", "port", "dtype", "seed", "log_level", "trust_remote_code", "device")


def _unmapped(argv: list[str]) -> list[str]:
    names = {n for key in _MAPPED for n in flags.SPELLINGS[key]}
    return [a.partition("=")[0] for a in argv if a.startswith("--") and a.partition("=")[0] not in names]


def plan_cpu(user: list[str], why_cpu: str, env: Mapping[str, str] | None = None) -> Launch:
    """transformers' OpenAI-compatible server on the CPU, with the SGLang flags that map to it; `env` is
    the container's environment (the user's variables win over the engine's).

    Raises ValueError naming the flag for a --dtype transformers cannot take.
    """
    argv, choices = _with_defaults(user, [
        ("model", BUNDLED_MODEL, "the model bundled in the image (random weights, for a first request)"),
        ("host", DEFAULT_HOST, "all interfaces, so docker run -p 30000:30000 reaches it"),
        ("port", str(DEFAULT_PORT), "SGLang's port, kept on the CPU so clients need no change"),
        ("device", "cpu", why_cpu),
    ])
    model = flags.value(argv, "model") or BUNDLED_MODEL
    host = flags.value(argv, "host") or DEFAULT_HOST
    port = flags.int_value(argv, "port", DEFAULT_PORT)
    cmd = ["transformers", "serve", model, "--device", "cpu", "--host", host, "--port", str(port)]
    dtype = flags.value(argv, "dtype")
    if dtype is not None:
        if dtype not in _DTYPES:
            raise ValueError(f"--dtype {dtype}: the CPU engine takes {', '.join(sorted(_DTYPES))}")
        cmd += ["--dtype", _DTYPES[dtype]]
    seed = flags.value(argv, "seed")
    if seed is not None:
        cmd += ["--default-seed", seed]
    log_level = flags.value(argv, "log_level")
    if log_level is not None:
        cmd += ["--log-level", log_level]
    if flags.present(argv, "trust_remote_code"):
        cmd.append("--trust-remote-code")
    choices.append(Choice("engine transformers serve", f"{why_cpu}; SGLang 0.5.10.post1 cannot start on a CPU "
                          "without sgl_kernel, which has no CPU build for this image"))
    ignored = _unmapped(argv)
    if ignored:
        choices.append(Choice("ignored " + " ".join(ignored), "SGLang flags with no counterpart in the CPU engine "
                              "(checked by SGLang's parser, not used)"))
    quiet, quiet_choice = quiet_env(env or {})
    choices.append(quiet_choice)
    return Launch("transformers", tuple(cmd), quiet, tuple(argv), host, port, model,
                  flags.int_value(argv, "tp", 1), tuple(choices))
