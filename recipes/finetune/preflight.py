"""Checks a LLaMA-Factory training config against the files on disk and the environment, before training.

Two layers: `check_config` looks only at the YAML and the files it names (model, dataset, DeepSpeed
JSON, output directory); `check_env` compares what the config asks for with an `EnvFacts` record of the
installed stack (`probe_env` fills it: torch build, GPUs and their gfx archs, flash-attention and
DeepSpeed). Each returns Findings; an error stops the launcher with one line. Facts used:
- torch.version.hip is set only in ROCm builds of PyTorch (PyTorch docs, "HIP (ROCm) semantics").
- flash-attention's CK build (flash_attn_2_cuda) carries one code object per offload arch; a HIP fat
  binary names each as 'hipv4-amdgcn-amd-amdhsa--<gfx arch>' (clang offload bundle IDs). Its Triton
  backend (FLASH_ATTENTION_TRITON_AMD_ENABLE=TRUE) compiles at run time for any arch Triton supports.
- LLaMA-Factory's attention choices: auto, disabled, sdpa, fa2, fa3 (llamafactory.extras.constants);
  FA3 is a Hopper (sm_90) kernel set: not available on ROCm.
- datasets 4.0.0 overrides pickle's Pickler._batch_setitems(items) in datasets/utils/_dill.py; Python
  3.14 calls it with (items, obj): hashing fails with a TypeError. datasets 4.4.0 takes *args (read in
  the 4.0.0 and 4.4.0 wheels). llamafactory 0.9.5 pins datasets<=4.0.0 and checks it at run time
  unless DISABLE_VERSION_CHECK=1.
- fp16 needs loss scaling, bf16 does not (mixed precision: Micikevicius et al. 2018; DeepSpeed config
  docs: fp16.loss_scale 0 means dynamic).
"""

from __future__ import annotations

import json
import mmap
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

ATTENTION = ("auto", "disabled", "sdpa", "fa2", "fa3")
_BUNDLE_RE = re.compile(rb"amdgcn-amd-amdhsa--(gfx[0-9a-f]+)")
DIVERGENCE_ADVICE = ("if the loss diverges (nan/inf or rising), check AMP loss scaling (fp16: dynamic scale, "
                     "DeepSpeed fp16.loss_scale 0) or fall back to fp32 (bf16: false, fp16: false)")


@dataclass(frozen=True)
class Finding:
    """One result of a check: level 'error' or 'warning', and a one-line message naming file and key."""

    level: str
    message: str


@dataclass(frozen=True)
class EnvFacts:
    """What the installed stack offers; `probe_env` measures it, tests may state it.

    gpu_archs are base gfx names ('gfx942'), one per visible GPU. flash_attn_archs is None when the
    build's archs are unknown or irrelevant (Triton backend, or flash-attn absent).
    """

    torch_version: str | None
    hip_version: str | None
    cuda_version: str | None
    gpu_archs: tuple[str, ...] = ()
    bf16_supported: bool = False
    flash_attn_version: str | None = None
    flash_attn_archs: tuple[str, ...] | None = None
    flash_attn_triton: bool = False
    deepspeed_version: str | None = None
    python_version: tuple[int, int] = (3, 11)
    datasets_version: str | None = None


@dataclass
class Report:
    """Findings collected by the checks; `errors` and `warnings` filter them."""

    findings: list[Finding] = field(default_factory=list)

    def error(self, msg: str) -> None:
        """Add an error (the run must not start)."""
        self.findings.append(Finding("error", msg))

    def warn(self, msg: str) -> None:
        """Add a warning (the run may start)."""
        self.findings.append(Finding("warning", msg))

    @property
    def errors(self) -> list[str]:
        """Messages of the errors, in the order found."""
        return [f.message for f in self.findings if f.level == "error"]

    @property
    def warnings(self) -> list[str]:
        """Messages of the warnings, in the order found."""
        return [f.message for f in self.findings if f.level == "warning"]


def gfx_base(arch_name: str) -> str:
    """'gfx942:sramecc+:xnack-' -> 'gfx942' (torch's gcnArchName carries target features after ':')."""
    return arch_name.split(":")[0].strip()


def bundle_archs(binary: Path) -> tuple[str, ...]:
    """gfx archs of the HIP code objects bundled in `binary` (a .so or .o), sorted, deduplicated.

    Scans for clang offload bundle IDs '...amdgcn-amd-amdhsa--gfxNNN'. Raises OSError if unreadable.
    """
    with open(binary, "rb") as fh:
        if os.fstat(fh.fileno()).st_size == 0:
            return ()
        with mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm:
            return tuple(sorted({m.group(1).decode() for m in _BUNDLE_RE.finditer(mm)}))


def hf_cache_dir() -> Path:
    """The Hugging Face hub cache: HF_HUB_CACHE, else HF_HOME/hub, else ~/.cache/huggingface/hub."""
    if os.environ.get("HF_HUB_CACHE"):
        return Path(os.environ["HF_HUB_CACHE"])
    return Path(os.environ.get("HF_HOME", Path.home() / ".cache" / "huggingface")) / "hub"


def _is_local(ref: str) -> bool:
    return ref.startswith(("/", "./", "../", "~")) or Path(ref).exists()


def _offline() -> bool:
    return os.environ.get("HF_HUB_OFFLINE", "0").lower() in ("1", "true", "yes")


def _check_hub_model(repo: str, key: str, cfg: Path, rep: Report) -> None:
    cached = hf_cache_dir() / ("models--" + repo.replace("/", "--")) / "snapshots"
    if cached.is_dir() and any(cached.iterdir()):
        return
    if _offline():
        rep.error(f"{cfg}: {key} '{repo}' is not in the Hugging Face cache ({hf_cache_dir()}) and HF_HUB_OFFLINE=1: "
                  f"download it first or point {key} at a local directory")
        return
    try:
        from huggingface_hub import HfApi
        from huggingface_hub.errors import GatedRepoError, RepositoryNotFoundError
    except ImportError:
        rep.warn(f"{cfg}: {key} '{repo}' not cached and huggingface_hub is absent: cannot check it exists")
        return
    try:
        HfApi().model_info(repo, timeout=10)
    except GatedRepoError:
        rep.error(f"{cfg}: {key} '{repo}' is gated: accept its license on the Hub and set HF_TOKEN")
    except RepositoryNotFoundError:
        rep.error(f"{cfg}: {key} '{repo}' does not exist on the Hugging Face Hub (or is private: set HF_TOKEN)")
    except Exception as exc:  # network errors come in many classes; any of them means "cannot check"
        rep.error(f"{cfg}: {key} '{repo}' is not cached and the Hub is unreachable ({exc.__class__.__name__}): "
                  f"use a local directory, or HF_ENDPOINT for a mirror")


def _check_model(conf: dict, cfg: Path, rep: Report) -> None:
    ref = str(conf.get("model_name_or_path", ""))
    if not ref:
        rep.error(f"{cfg}: model_name_or_path missing (a local model directory or a Hugging Face repo id)")
    elif _is_local(ref):
        p = Path(ref).expanduser()
        if not p.is_dir():
            rep.error(f"{cfg}: model_name_or_path '{ref}' does not exist (a directory with config.json is allowed)")
        elif not (p / "config.json").is_file():
            rep.error(f"{cfg}: model_name_or_path '{ref}' has no config.json: not a Hugging Face model directory")
    elif re.fullmatch(r"[\w.-]+/[\w.-]+", ref):
        _check_hub_model(ref, "model_name_or_path", cfg, rep)
    else:
        rep.error(f"{cfg}: model_name_or_path '{ref}' is neither an existing directory nor a repo id 'org/name'")


def _read_json(path: Path, missing: str, rep: Report) -> dict | None:
    """The JSON object in `path`, or None after reporting `missing` (absent file) or the parse error."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        rep.error(missing)
    except ValueError as exc:
        rep.error(f"{path}: not valid JSON ({exc})")
    return None


def _check_dataset(conf: dict, cfg: Path, rep: Report) -> None:
    names = [n.strip() for n in str(conf.get("dataset", "")).split(",") if n.strip()]
    if conf.get("do_train") and not names:
        rep.error(f"{cfg}: dataset missing (names from dataset_dir/dataset_info.json)")
        return
    ddir = Path(str(conf.get("dataset_dir", "data")))
    info_path = ddir / "dataset_info.json"
    info = _read_json(info_path, f"{cfg}: dataset_dir '{ddir}' has no dataset_info.json", rep)
    if info is None:
        return
    for name in names:
        if name not in info:
            rep.error(f"{cfg}: dataset '{name}' not in {info_path} (allowed: {', '.join(sorted(info)) or 'none'})")
            continue
        entry = info[name]
        if "file_name" in entry and not (ddir / entry["file_name"]).exists():
            rep.error(f"{info_path}: dataset '{name}' names file '{entry['file_name']}', missing in {ddir}")
        elif "file_name" not in entry and _offline():
            rep.warn(f"{info_path}: dataset '{name}' comes from a hub and HF_HUB_OFFLINE=1: it must be cached")


def _check_amp(conf: dict, cfg: Path, rep: Report) -> None:
    bf16, fp16, pure = bool(conf.get("bf16")), bool(conf.get("fp16")), bool(conf.get("pure_bf16"))
    if bf16 and fp16:
        rep.error(f"{cfg}: bf16 and fp16 are both true: choose one (bf16 on CDNA2+ needs no loss scaling)")
    if pure and fp16:
        rep.error(f"{cfg}: pure_bf16 with fp16: true is contradictory: set fp16: false")
    attn = str(conf.get("flash_attn", "auto"))
    if attn not in ATTENTION:
        rep.error(f"{cfg}: flash_attn '{attn}' not allowed (allowed: {', '.join(ATTENTION)})")
    elif attn == "fa3":
        rep.error(f"{cfg}: flash_attn fa3 is a Hopper (sm_90) kernel set, not built for ROCm: use fa2 or sdpa")


def _check_deepspeed(conf: dict, cfg: Path, rep: Report) -> None:
    ds = conf.get("deepspeed")
    if not ds:
        return
    path = Path(str(ds))
    dsc = _read_json(path, f"{cfg}: deepspeed '{ds}' does not exist", rep)
    if dsc is None:
        return
    stage = dsc.get("zero_optimization", {}).get("stage", 0)
    if stage not in (0, 1, 2, 3):
        rep.error(f"{path}: zero_optimization.stage {stage!r} not allowed (0, 1, 2, 3)")
    if stage == 3 and conf.get("pure_bf16"):
        rep.error(f"{cfg}: pure_bf16 is incompatible with DeepSpeed ZeRO-3 ({path}): use bf16: true")
    ds_fp16 = dsc.get("fp16", {}).get("enabled", False)
    ds_bf16 = dsc.get("bf16", {}).get("enabled", False)
    if ds_fp16 is True and conf.get("bf16"):
        rep.error(f"{path}: fp16.enabled true but {cfg} asks for bf16: set fp16.enabled to \"auto\" or false")
    if ds_bf16 is True and conf.get("fp16"):
        rep.error(f"{path}: bf16.enabled true but {cfg} asks for fp16: set bf16.enabled to \"auto\" or false")
    scale = dsc.get("fp16", {}).get("loss_scale", 0)
    if (conf.get("fp16") or ds_fp16 is True) and scale not in (0, "auto"):
        rep.warn(f"{path}: fp16.loss_scale {scale} is static; 0 (dynamic) avoids overflow and underflow")


def _check_output(conf: dict, cfg: Path, rep: Report) -> None:
    out = conf.get("output_dir")
    if not out:
        rep.error(f"{cfg}: output_dir missing")
        return
    p = Path(str(out)).expanduser().absolute()
    anc = next((a for a in [p, *p.parents] if a.exists()), None)
    if anc is None or not anc.is_dir() or not os.access(anc, os.W_OK):
        rep.error(f"{cfg}: output_dir '{out}' cannot be created: {anc} is not a writable directory for uid "
                  f"{os.getuid()} (run the container with --user $(id -u):$(id -g), or chown it on the host)")


def check_config(conf: dict, cfg: Path) -> Report:
    """Static checks of a loaded LLaMA-Factory config `conf` (from file `cfg`); paths already resolved.

    Errors: missing keys (model_name_or_path, stage, finetuning_type, output_dir, dataset when training),
    a model/dataset/DeepSpeed file that does not exist, contradictory AMP settings, an unknown attention.
    """
    rep = Report()
    for key in ("stage", "finetuning_type"):
        if key not in conf:
            rep.error(f"{cfg}: {key} missing (e.g. stage: sft, finetuning_type: lora or full)")
    _check_model(conf, cfg, rep)
    _check_dataset(conf, cfg, rep)
    _check_amp(conf, cfg, rep)
    _check_deepspeed(conf, cfg, rep)
    _check_output(conf, cfg, rep)
    return rep


def check_env(conf: dict, cfg: Path, device: str, facts: EnvFacts) -> Report:
    """Compare what `conf` asks for with `facts`, for a run on `device` ('gpu' or 'cpu').

    GPU: a ROCm PyTorch (torch.version.hip), at least one visible GPU, bf16 support when bf16 is asked,
    flash-attention present and built for every visible GPU's arch when flash_attn is fa2, DeepSpeed
    importable when a DeepSpeed config is named. CPU: no fp16, DeepSpeed or fa2; bf16 allowed with a
    warning. Raises ValueError for another `device`.
    """
    rep = Report()
    if device not in ("gpu", "cpu"):
        raise ValueError(f"--device {device!r} not allowed (gpu, cpu)")
    if facts.torch_version is None:
        rep.error("torch is not importable in this Python: install the image's pinned torch")
        return rep
    if facts.python_version >= (3, 14) and facts.datasets_version and _version_tuple(facts.datasets_version) < (4, 4):
        rep.error(f"datasets {facts.datasets_version} cannot hash on Python {facts.python_version[0]}."
                  f"{facts.python_version[1]} (its dill Pickler override): install datasets>=4.4.0 "
                  f"and set DISABLE_VERSION_CHECK=1 for llamafactory's datasets<=4.0.0 pin")
    attn = str(conf.get("flash_attn", "auto"))
    if device == "cpu":
        for key, why in (("fp16", "fp16 AMP needs a GPU"), ("deepspeed", "DeepSpeed here is for GPUs"),
                         ("pure_bf16", "pure_bf16 needs a GPU")):
            if conf.get(key):
                rep.error(f"{cfg}: {key} set but --device cpu: {why}; remove it for a CPU run")
        if attn == "fa2":
            rep.error(f"{cfg}: flash_attn fa2 needs a GPU; use sdpa for a CPU run")
        if conf.get("bf16"):
            rep.warn(f"{cfg}: bf16 on CPU runs through CPU autocast, slowly; bf16: false is the usual CPU choice")
        return rep
    if facts.hip_version is None:
        kind = f"a CUDA build (torch.version.cuda={facts.cuda_version})" if facts.cuda_version else "a CPU-only build"
        rep.error(f"torch {facts.torch_version} is {kind}, but a GPU run on AMD needs a ROCm build "
                  f"(torch.version.hip set): this image's torch is pinned (PIP_CONSTRAINT) and cannot be replaced; "
                  f"use an amd-lane train image (rocmig/train:rocm<full>-<arch>, docs/tags.md), or pass --device cpu")
        return rep
    if not facts.gpu_archs:
        rep.error(f"ROCm torch {facts.torch_version} (HIP {facts.hip_version}) sees no GPU: run the container with "
                  f"--device=/dev/kfd --device=/dev/dri --group-add video --group-add render, "
                  f"and check HIP_VISIBLE_DEVICES")
        return rep
    if (conf.get("bf16") or conf.get("pure_bf16")) and not facts.bf16_supported:
        rep.error(f"{cfg}: bf16 asked but {facts.gpu_archs[0]} has no bf16 support: use fp16 with dynamic loss "
                  f"scaling, or fp32")
    if attn == "fa2":
        if facts.flash_attn_version is None:
            rep.error(f"{cfg}: flash_attn fa2 but flash-attn is not installed in this image: use flash_attn: sdpa")
        elif not facts.flash_attn_triton and facts.flash_attn_archs is not None:
            missing = sorted(set(facts.gpu_archs) - set(facts.flash_attn_archs))
            if missing:
                rep.error(f"flash-attn {facts.flash_attn_version} is built for {', '.join(facts.flash_attn_archs) or 'no arch'}, "
                          f"not for this GPU's {', '.join(missing)}: rebuild with GPU_ARCHS={';'.join(missing)}, "
                          f"set FLASH_ATTENTION_TRITON_AMD_ENABLE=TRUE (Triton backend), or use flash_attn: sdpa")
    if conf.get("deepspeed") and facts.deepspeed_version is None:
        rep.error(f"{cfg}: deepspeed '{conf['deepspeed']}' named but DeepSpeed is not installed: "
                  f"use a train image with DeepSpeed, or drop the deepspeed key")
    return rep


def _version_tuple(v: str) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", v)[:3])


def probe_env() -> EnvFacts:
    """Measure the installed stack: imports torch (and looks for flash_attn and deepspeed) lazily."""
    import importlib.metadata as md
    import importlib.util
    import sys

    try:
        import torch
    except ImportError:
        return EnvFacts(None, None, None)
    archs: tuple[str, ...] = ()
    bf16 = False
    if torch.cuda.is_available():
        archs = tuple(gfx_base(getattr(torch.cuda.get_device_properties(i), "gcnArchName", "") or "unknown")
                      for i in range(torch.cuda.device_count()))
        bf16 = torch.cuda.is_bf16_supported()

    def version(dist: str) -> str | None:
        try:
            return md.version(dist)
        except md.PackageNotFoundError:
            return None

    fa_version = version("flash_attn") or version("flash-attn")
    fa_archs = None
    spec = importlib.util.find_spec("flash_attn_2_cuda") if fa_version else None
    if spec and spec.origin:
        fa_archs = bundle_archs(Path(spec.origin))
    return EnvFacts(torch_version=torch.__version__, hip_version=torch.version.hip, cuda_version=torch.version.cuda,
                    gpu_archs=archs, bf16_supported=bf16, flash_attn_version=fa_version, flash_attn_archs=fa_archs,
                    flash_attn_triton=os.environ.get("FLASH_ATTENTION_TRITON_AMD_ENABLE", "").upper() == "TRUE",
                    deepspeed_version=version("deepspeed"), python_version=sys.version_info[:2],
                    datasets_version=version("datasets"))


def loss_verdict(log_history: list[dict]) -> tuple[list[float], str | None]:
    """Training losses from a Trainer log_history and a divergence message, or None when it looks sane.

    Diverged: a non-finite loss, or the mean of the last quarter above 1.5x the mean of the first
    quarter (at least 4 logged losses). The message ends with DIVERGENCE_ADVICE.
    """
    losses = [float(e["loss"]) for e in log_history if "loss" in e]
    if not losses:
        return losses, None
    bad = [i for i, v in enumerate(losses) if v != v or v in (float("inf"), float("-inf"))]
    if bad:
        return losses, f"loss became {losses[bad[0]]} at logged entry {bad[0] + 1}: {DIVERGENCE_ADVICE}"
    if len(losses) >= 4:
        q = max(1, len(losses) // 4)
        first, last = sum(losses[:q]) / q, sum(losses[-q:]) / q
        if last > 1.5 * first:
            return losses, f"loss rose from {first:.4g} to {last:.4g}: {DIVERGENCE_ADVICE}"
    return losses, None
