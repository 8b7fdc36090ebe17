"""Reload a saved LoRA adapter on its base model and measure how it changes the outputs.

    python -m recipes.finetune.check_adapter --base /tmp/tiny/model --adapter /tmp/tiny/lora

Prints one JSON object: adapter files, max |logit difference| between base and base+adapter on the
project's first prompts, and greedy continuations of one prompt with and without the adapter.
Exit 1 when the adapter does not change the logits (max difference <= --min-diff), 2 on missing files.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from .tiny import DATA

ADAPTER_FILES = ("adapter_config.json", "adapter_model.safetensors")


def prompts(n: int, data: Path = DATA) -> list[str]:
    """The first `n` instructions of the project's dataset, as in LLaMA-Factory's default template."""
    rows = json.loads(data.read_text(encoding="utf-8"))[:n]
    return [f"Human: {r['instruction']}\nAssistant:" for r in rows]


def compare(base: Path, adapter: Path, n_prompts: int = 4, new_tokens: int = 12) -> dict:
    """Logits of base vs base+adapter on `n_prompts` prompts; returns max_abs_logit_diff and generations."""
    os.environ["HF_HUB_OFFLINE"] = "1"
    import torch
    from peft import PeftModel
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(base)
    batch = tok(prompts(n_prompts), return_tensors="pt", padding=True)
    model = AutoModelForCausalLM.from_pretrained(base).eval()
    with torch.no_grad():
        ref = model(**batch).logits
        gen_ref = model.generate(**tok(prompts(1), return_tensors="pt"), max_new_tokens=new_tokens, do_sample=False)
    tuned = PeftModel.from_pretrained(model, adapter).eval()
    with torch.no_grad():
        out = tuned(**batch).logits
        gen = tuned.generate(**tok(prompts(1), return_tensors="pt"), max_new_tokens=new_tokens, do_sample=False)
    return {"max_abs_logit_diff": float((out - ref).abs().max()),
            "base_text": tok.decode(gen_ref[0], skip_special_tokens=True),
            "adapter_text": tok.decode(gen[0], skip_special_tokens=True)}


def main(argv: list[str]) -> int:
    """CLI entry: see module doc."""
    p = argparse.ArgumentParser(prog="python -m recipes.finetune.check_adapter", description=__doc__.splitlines()[0])
    p.add_argument("--base", type=Path, required=True)
    p.add_argument("--adapter", type=Path, required=True)
    p.add_argument("--min-diff", type=float, default=1e-4)
    a = p.parse_args(argv)
    missing = [str(a.adapter / f) for f in ADAPTER_FILES if not (a.adapter / f).is_file()]
    if missing or not (a.base / "config.json").is_file():
        print(f"rocmig-finetune: error: missing {', '.join(missing) or a.base / 'config.json'}", file=sys.stderr)
        return 2
    result = {"adapter_files": sorted(x.name for x in a.adapter.iterdir()), **compare(a.base, a.adapter)}
    print(json.dumps(result))
    return 0 if result["max_abs_logit_diff"] > a.min_diff else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
