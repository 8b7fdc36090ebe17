"""recipes.finetune: shipped configs, config checks on real files, environment checks on stated facts."""

import json
import time
from pathlib import Path

import pytest
import yaml

from recipes.finetune import launch
from recipes.finetune import preflight as pf

CONFIGS = Path(__file__).resolve().parents[2] / "recipes" / "finetune" / "configs"
GPU_CONFIGS = sorted(p for p in CONFIGS.glob("*.yaml") if not p.name.startswith("tiny"))
ROCM = pf.EnvFacts(torch_version="2.10.0+rocm7.1", hip_version="7.1.25", cuda_version=None,
                   gpu_archs=("gfx942",), bf16_supported=True)


@pytest.fixture
def offline_cache(tmp_path, monkeypatch):
    """An HF hub cache holding snapshots of the models the shipped configs name (the real cache layout)."""
    cache = tmp_path / "hub"
    for repo in ("meta-llama/Llama-3.1-8B-Instruct", "Qwen/Qwen2.5-7B-Instruct"):
        (cache / ("models--" + repo.replace("/", "--")) / "snapshots" / "0123abcd").mkdir(parents=True)
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.chdir(tmp_path)
    return cache


def _local_model(tmp_path):
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text("{}")
    return model


def test_llama3_and_qwen_lora_full_zero2_zero3_all_present():
    names = {p.name for p in GPU_CONFIGS}
    assert {"llama3_lora_sft.yaml", "llama3_full_sft_ds3.yaml", "qwen2_5_lora_sft_ds2.yaml",
            "qwen2_5_full_sft_ds3.yaml"} <= names
    confs = [yaml.safe_load(p.read_text()) for p in GPU_CONFIGS]
    assert {c["finetuning_type"] for c in confs} == {"lora", "full"}
    assert all(c["bf16"] is True and not c.get("fp16") for c in confs)
    assert {c["flash_attn"] for c in confs} == {"sdpa", "fa2"}
    stages = {json.loads((CONFIGS / c["deepspeed"]).read_text())["zero_optimization"]["stage"]
              for c in confs if "deepspeed" in c}
    assert stages == {2, 3}


@pytest.mark.parametrize("cfg", GPU_CONFIGS, ids=lambda p: p.name)
def test_shipped_configs_pass_static_checks_and_rocm_gpu(cfg, offline_cache):
    conf = launch.load_config(cfg, [])
    assert Path(conf["dataset_dir"]).is_absolute()
    rep = pf.check_config(conf, cfg)
    assert rep.errors == []
    facts = ROCM if conf["flash_attn"] != "fa2" else pf.EnvFacts(
        **{**ROCM.__dict__, "flash_attn_version": "2.8.3", "flash_attn_archs": ("gfx90a", "gfx942", "gfx950"),
           "deepspeed_version": "0.18.0"})
    if conf.get("deepspeed"):
        facts = pf.EnvFacts(**{**facts.__dict__, "deepspeed_version": "0.18.0"})
    assert pf.check_env(conf, cfg, "gpu", facts).errors == []


def test_uncached_hub_model_offline_is_refused_fast(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    start = time.monotonic()
    rep = pf.check_config(launch.load_config(CONFIGS / "llama3_lora_sft.yaml", []), Path("llama3_lora_sft.yaml"))
    assert time.monotonic() - start < 2
    assert len(rep.errors) == 1 and "'meta-llama/Llama-3.1-8B-Instruct' is not in the Hugging Face cache" in rep.errors[0]


@pytest.mark.parametrize("override, message", [
    ("model_name_or_path=/nonexistent/model", "model_name_or_path '/nonexistent/model' does not exist"),
    ("dataset=alpaca_nope", "dataset 'alpaca_nope' not in"),
    ("dataset_dir=/nonexistent", "dataset_dir '/nonexistent' has no dataset_info.json"),
    ("deepspeed=/nonexistent/ds.json", "deepspeed '/nonexistent/ds.json' does not exist"),
    ("fp16=true", "bf16 and fp16 are both true"),
    ("flash_attn=fa3", "fa3 is a Hopper"),
    ("flash_attn=xformers", "allowed: auto, disabled, sdpa, fa2, fa3"),
    ("output_dir=/proc/1/nope/out", "output_dir '/proc/1/nope/out' cannot be created"),
])
def test_bad_config_named_in_one_line(override, message, offline_cache):
    cfg = CONFIGS / "llama3_lora_sft.yaml"
    rep = pf.check_config(launch.load_config(cfg, [override]), cfg)
    assert any(message in e for e in rep.errors), rep.errors
    assert all("\n" not in e for e in rep.errors)


def test_local_model_without_config_json(tmp_path, offline_cache):
    (tmp_path / "m").mkdir()
    cfg = CONFIGS / "llama3_lora_sft.yaml"
    rep = pf.check_config(launch.load_config(cfg, [f"model_name_or_path={tmp_path / 'm'}"]), cfg)
    assert any("has no config.json" in e for e in rep.errors)


def test_dataset_file_missing(tmp_path, offline_cache):
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "dataset_info.json").write_text(json.dumps({"x": {"file_name": "x.json"}}))
    cfg = CONFIGS / "llama3_lora_sft.yaml"
    rep = pf.check_config(launch.load_config(cfg, [f"dataset_dir={tmp_path / 'd'}", "dataset=x"]), cfg)
    assert any("names file 'x.json', missing" in e for e in rep.errors)


def test_deepspeed_amp_mismatch_and_static_loss_scale(tmp_path, offline_cache):
    ds = tmp_path / "ds.json"
    ds.write_text(json.dumps({"fp16": {"enabled": True, "loss_scale": 128}, "zero_optimization": {"stage": 3}}))
    cfg = CONFIGS / "llama3_lora_sft.yaml"
    rep = pf.check_config(launch.load_config(cfg, [f"deepspeed={ds}"]), cfg)
    assert any("fp16.enabled true but" in e for e in rep.errors)
    rep = pf.check_config(launch.load_config(cfg, [f"deepspeed={ds}", "bf16=false", "fp16=true"]), cfg)
    assert rep.errors == [] and any("static" in w for w in rep.warnings)


@pytest.mark.parametrize("facts, message", [
    (pf.EnvFacts("2.14.1", None, None), "is a CPU-only build, but a GPU run on AMD needs a ROCm build"),
    (pf.EnvFacts("2.9.1+cu128", None, "12.8"), "a CUDA build (torch.version.cuda=12.8)"),
    (pf.EnvFacts("2.10.0+rocm7.1", "7.1.25", None), "sees no GPU: run the container with --device=/dev/kfd"),
    (pf.EnvFacts("2.10.0+rocm7.1", "7.1.25", None, ("gfx906",), bf16_supported=False), "has no bf16 support"),
    (pf.EnvFacts(None, None, None), "torch is not importable"),
    (pf.EnvFacts("2.14.1", "7.2", None, ("gfx942",), True, python_version=(3, 14), datasets_version="4.0.0"),
     "datasets 4.0.0 cannot hash on Python 3.14"),
])
def test_environment_mismatch_for_gpu_run(facts, message):
    cfg = CONFIGS / "llama3_lora_sft.yaml"
    errors = pf.check_env(yaml.safe_load(cfg.read_text()), cfg, "gpu", facts).errors
    assert any(message in e for e in errors), errors


def test_flash_attention_build_must_cover_the_gpu_arch():
    conf = {"flash_attn": "fa2", "bf16": True}
    rdna = pf.EnvFacts("2.10.0+rocm7.1", "7.1.25", None, ("gfx1100",), True, "2.8.3", ("gfx90a", "gfx942", "gfx950"))
    errors = pf.check_env(conf, Path("c.yaml"), "gpu", rdna).errors
    assert errors and "not for this GPU's gfx1100: rebuild with GPU_ARCHS=gfx1100" in errors[0]
    triton = pf.EnvFacts(**{**rdna.__dict__, "flash_attn_triton": True})
    assert pf.check_env(conf, Path("c.yaml"), "gpu", triton).errors == []
    absent = pf.EnvFacts(**{**rdna.__dict__, "flash_attn_version": None, "flash_attn_archs": None})
    assert "flash-attn is not installed" in pf.check_env(conf, Path("c.yaml"), "gpu", absent).errors[0]


def test_cpu_run_refuses_gpu_only_settings():
    facts = pf.EnvFacts("2.14.1", None, None)
    rep = pf.check_env({"fp16": True, "flash_attn": "fa2", "deepspeed": "x.json"}, Path("c.yaml"), "cpu", facts)
    assert len(rep.errors) == 3
    rep = pf.check_env({"bf16": True, "flash_attn": "sdpa"}, Path("c.yaml"), "cpu", facts)
    assert rep.errors == [] and rep.warnings


def test_bundle_archs_reads_offload_bundle_ids(tmp_path):
    blob = tmp_path / "flash_attn_2_cuda.so"
    blob.write_bytes(b"\x7fELF" + b"\0" * 64 + b"__CLANG_OFFLOAD_BUNDLE____" + b"hipv4-amdgcn-amd-amdhsa--gfx942\0"
                     + b"\1" * 100 + b"hipv4-amdgcn-amd-amdhsa--gfx90a\0hip-amdgcn-amd-amdhsa--gfx942\0")
    assert pf.bundle_archs(blob) == ("gfx90a", "gfx942")
    assert pf.gfx_base("gfx942:sramecc+:xnack-") == "gfx942"


@pytest.mark.parametrize("losses, verdict", [
    ([6.2, 6.0, 5.5, 5.1], None),
    ([6.2, 6.0, float("nan"), 5.1], "loss became nan"),
    ([2.0, 2.1, 3.5, 4.0, 5.0, 9.0], "loss rose from"),
])
def test_loss_verdict_gives_amp_advice(losses, verdict):
    _, msg = pf.loss_verdict([{"loss": v} for v in losses] + [{"train_runtime": 1.0}])
    if verdict is None:
        assert msg is None
    else:
        assert verdict in msg and "AMP loss scaling" in msg and "fp32" in msg


def test_launcher_on_a_host_without_torch_says_so(offline_cache, tmp_path, capsys):
    pytest.importorskip("yaml")
    try:
        import torch  # noqa: F401
        pytest.skip("torch is installed here")
    except ImportError:
        pass
    model = _local_model(tmp_path)
    rc = launch.run([str(CONFIGS / "tiny_llama_lora_sft_cpu.yaml"), "--device", "cpu", "--dry-run",
                     f"model_name_or_path={model}", f"output_dir={tmp_path / 'out'}"])
    assert rc == 2 and "torch is not importable" in capsys.readouterr().err


def test_launcher_bad_input_exits_2_with_one_line_within_seconds(tmp_path, capsys, offline_cache):
    start = time.monotonic()
    rc = launch.run([str(CONFIGS / "tiny_llama_lora_sft_cpu.yaml"), "--device", "cpu",
                     "model_name_or_path=/nonexistent/tiny"])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and time.monotonic() - start < 5
    assert err[-1].startswith("rocmig-finetune: error: ") and "/nonexistent/tiny' does not exist" in err[-1]


def test_launcher_missing_config_and_bad_override(tmp_path, capsys):
    assert launch.run([str(tmp_path / "nope.yaml"), "--dry-run"]) == 2
    assert capsys.readouterr().err.strip() == f"rocmig-finetune: error: config {tmp_path / 'nope.yaml'} does not exist"
    bad = tmp_path / "list.yaml"
    bad.write_text("- a\n- b\n")
    with pytest.raises(launch.LaunchError, match="expected a YAML mapping"):
        launch.load_config(bad, [])
    with pytest.raises(launch.LaunchError, match="expected key=value"):
        launch.load_config(CONFIGS / "llama3_lora_sft.yaml", ["learning_rate"])
