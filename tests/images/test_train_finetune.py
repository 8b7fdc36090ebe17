"""A real LoRA fine-tune inside the train image on CPU, with no network (issue 8).

A tiny Llama-architecture model and a tokenizer are made in the container from the project's dataset
(recipes/data), then `llamafactory-cli train` runs LoRA SFT for the config's max_steps through the
checking launcher. Asserts: the loss goes down, the adapter is saved, reloads, and changes the logits.
Image: $ROCMIG_TRAIN_IMAGE, else the slice's train cell; skipped when the slice has no train cell, failed when it is not built.
"""

from __future__ import annotations

import json
import time

import pytest

docker = pytest.importorskip("docker")

from tests.images.conftest import train_image  # noqa: E402

pytestmark = pytest.mark.docker
IMAGE = train_image() or "rocmig/train:rocm7.2.4-gfx942-debian"
CONFIG = "/opt/rocmig/recipes/finetune/configs/tiny_llama_lora_sft_cpu.yaml"
ENV = {"PYTHONPATH": "/opt/rocmig", "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}


@pytest.fixture(scope="module")
def box(train_client):
    """One container of the train image, network disabled (so nothing can be downloaded); removed after."""
    c = train_client.containers.run(IMAGE, ["sleep", "infinity"], detach=True, network_disabled=True,
                              environment=ENV, working_dir="/tmp")
    try:
        yield c
    finally:
        c.remove(force=True)


def _exec(box, argv: list[str]) -> tuple[int, str]:
    res = box.exec_run(argv, environment=ENV, workdir="/tmp")
    return res.exit_code, res.output.decode(errors="replace")


def test_lora_sft_loss_drops_adapter_saved_reloads_and_changes_outputs(box):
    rc, out = _exec(box, ["python3", "-m", "recipes.finetune.tiny", "--out", "/tmp/tiny"])
    assert rc == 0, out
    rc, out = _exec(box, ["python3", "-m", "recipes.finetune.launch", CONFIG, "--device", "cpu",
                          "model_name_or_path=/tmp/tiny/model", "output_dir=/tmp/tiny/lora"])
    assert rc == 0, out[-4000:]
    result = json.loads(next(x for x in out.splitlines() if x.startswith("rocmig-finetune: result: "))
                        .split("result: ", 1)[1])
    assert result["steps"] == 30

    rc, state = _exec(box, ["cat", "/tmp/tiny/lora/trainer_state.json"])
    losses = [e["loss"] for e in json.loads(state)["log_history"] if "loss" in e]
    assert len(losses) == 30
    first, last = sum(losses[:5]) / 5, sum(losses[-5:]) / 5
    assert last < first - 0.1, f"loss did not go down: first 5 mean {first:.4f}, last 5 mean {last:.4f}"

    rc, out = _exec(box, ["python3", "-m", "recipes.finetune.check_adapter",
                          "--base", "/tmp/tiny/model", "--adapter", "/tmp/tiny/lora"])
    assert rc == 0, out[-3000:]
    check = json.loads(out.strip().splitlines()[-1])
    assert {"adapter_model.safetensors", "adapter_config.json"} <= set(check["adapter_files"])
    assert check["max_abs_logit_diff"] > 1e-3
    print(f"\nfine-tune: {result['steps']} steps, {result['s_per_step']:.3f} s/step, "
          f"loss {first:.3f} -> {last:.3f} (means of first/last 5), max |dlogit| {check['max_abs_logit_diff']:.3f}")


def test_missing_model_refused_in_seconds(box):
    start = time.monotonic()
    rc, out = _exec(box, ["python3", "-m", "recipes.finetune.launch", CONFIG, "--device", "cpu",
                          "model_name_or_path=/nonexistent/model", "output_dir=/tmp/x"])
    assert rc == 2 and time.monotonic() - start < 15
    assert out.strip().splitlines()[-1] == (f"rocmig-finetune: error: {CONFIG}: model_name_or_path '/nonexistent/model' "
                                            "does not exist (a directory with config.json is allowed)")


def test_hub_model_not_cached_refused_offline(box):
    rc, out = _exec(box, ["python3", "-m", "recipes.finetune.launch",
                          "/opt/rocmig/recipes/finetune/configs/qwen2_5_lora_sft_ds2.yaml", "--dry-run"])
    assert rc == 2 and "'Qwen/Qwen2.5-7B-Instruct' is not in the Hugging Face cache" in out, out


def test_gpu_run_on_a_cpu_torch_is_refused(box):
    rc, out = _exec(box, ["python3", "-m", "recipes.finetune.tiny", "--out", "/tmp/t2"])
    assert rc == 0, out
    rc, out = _exec(box, ["python3", "-m", "recipes.finetune.launch", CONFIG, "--device", "gpu", "--dry-run",
                          "model_name_or_path=/tmp/t2/model", "output_dir=/tmp/t2/out"])
    assert rc == 2 and "a GPU run on AMD needs a ROCm build (torch.version.hip set)" in out, out
