"""Make a tiny Llama-architecture model and a byte-level BPE tokenizer locally, from the project's dataset.

    python -m recipes.finetune.tiny --out /tmp/tiny [--vocab 512] [--hidden 64] [--layers 2] [--seed 0]

Writes OUT/model/ (config.json, model.safetensors, tokenizer files): a LlamaForCausalLM initialised
from --seed and a tokenizer trained with `tokenizers` on recipes/data/rocmig_sft.json. No network:
nothing is downloaded (HF_HUB_OFFLINE=1 is set for the process).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

DATA = Path(__file__).resolve().parents[1] / "data" / "rocmig_sft.json"
SPECIALS = {"bos_token": "<|bos|>", "eos_token": "<|eos|>", "pad_token": "<|pad|>", "unk_token": "<|unk|>"}


def corpus(data: Path) -> list[str]:
    """Texts to train the tokenizer on: instruction, input and output of every alpaca-format record.

    Raises ValueError naming `data` if it is not a JSON list of such records.
    """
    rows = json.loads(data.read_text(encoding="utf-8"))
    if not isinstance(rows, list) or not all(isinstance(r, dict) and "output" in r for r in rows):
        raise ValueError(f"{data}: expected a JSON list of {{instruction, input, output}} records")
    return [" ".join(str(r.get(k, "")) for k in ("instruction", "input", "output")) for r in rows]


def train_tokenizer(texts: list[str], vocab: int):
    """A PreTrainedTokenizerFast wrapping a byte-level BPE of `vocab` entries (incl. SPECIALS) trained on `texts`."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE(unk_token=SPECIALS["unk_token"]))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab, special_tokens=list(SPECIALS.values()),
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(texts, trainer=trainer)
    return PreTrainedTokenizerFast(tokenizer_object=tok, **SPECIALS)


def save_llama(target: Path, tok, seed: int, dtype: str | None = None, **shape) -> Path:
    """Write `tok` and a LlamaForCausalLM with random weights (torch seed `seed`) to `target`; returns it.

    shape: LlamaConfig keywords (hidden_size, num_hidden_layers, ...); vocabulary size and the bos / eos /
    pad ids come from `tok`, embeddings are untied. dtype: a torch dtype name (e.g. "bfloat16") to cast the
    weights to, None for float32. Raises OSError when `target` cannot be written. Nothing is downloaded
    (HF_HUB_OFFLINE=1 is set for the process).
    """
    os.environ["HF_HUB_OFFLINE"] = "1"
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    cfg = LlamaConfig(vocab_size=len(tok), bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id,
                      pad_token_id=tok.pad_token_id, tie_word_embeddings=False, **shape)
    torch.manual_seed(seed)
    model = LlamaForCausalLM(cfg)
    if dtype is not None:
        model = model.to(getattr(torch, dtype))
    target.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(target, safe_serialization=True)
    tok.save_pretrained(target)
    return target


def make(out: Path, vocab: int, hidden: int, layers: int, seed: int, data: Path = DATA, init_std: float = 0.1) -> Path:
    """Write the tokenizer and a randomly initialised tiny LlamaForCausalLM to out/model; returns that path.

    init_std is the weights' normal std (HF's default 0.02 leaves a frozen 64-wide lm_head able to
    move the logits by about 1, too little for LoRA on the other layers to lower the loss visibly).
    """
    return save_llama(out / "model", train_tokenizer(corpus(data), vocab), seed,
                      hidden_size=hidden, intermediate_size=hidden * 2, num_hidden_layers=layers,
                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=512,
                      initializer_range=init_std)


def main(argv: list[str]) -> int:
    """CLI entry: see module doc. Exits 2 with one line on a bad flag or dataset."""
    p = argparse.ArgumentParser(prog="python -m recipes.finetune.tiny", description=__doc__.splitlines()[0])
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--vocab", type=int, default=512)
    p.add_argument("--hidden", type=int, default=64)
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--data", type=Path, default=DATA)
    p.add_argument("--init-std", type=float, default=0.1)
    a = p.parse_args(argv)
    if a.vocab < 300 or a.hidden < 8 or a.hidden % 4 or a.layers < 1:
        p.error("--vocab >= 300 (byte alphabet + specials), --hidden a multiple of 4 >= 8, --layers >= 1")
    try:
        path = make(a.out, a.vocab, a.hidden, a.layers, a.seed, a.data, a.init_std)
    except (OSError, ValueError) as exc:
        print(f"rocmig-finetune: error: {' '.join(str(exc).split())}", file=sys.stderr)
        return 2
    print(json.dumps({"model": str(path)}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
