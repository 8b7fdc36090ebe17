"""Make the model the serve image ships: a byte-level BPE tokenizer trained here and a tiny Llama.

    python -m recipes.serve.bundled --out /opt/rocmig/models/tiny-llama [--seed 0]

The tokenizer is trained with `tokenizers` on the project's dataset (recipes/data, through
recipes.finetune.tiny) and carries a chat template, so /v1/chat/completions works; the model is a
LlamaForCausalLM with random weights (seeded), saved in bfloat16 as safetensors: head_dim 64, which
aiter's and triton's attention kernels both take. Nothing is downloaded (HF_HUB_OFFLINE=1).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

# Turns as '<|role|>\ncontent<|eos|>\n'; OpenAI content parts (a list of {type: text, text}) are joined.
CHAT_TEMPLATE = (
    "{% for m in messages %}<|{{ m['role'] }}|>\n"
    "{% if m['content'] is string %}{{ m['content'] }}"
    "{% else %}{% for part in m['content'] %}{% if part['type'] == 'text' %}{{ part['text'] }}{% endif %}{% endfor %}"
    "{% endif %}{{ eos_token }}\n{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>\n{% endif %}"
)
SHAPE = {"hidden_size": 256, "intermediate_size": 512, "num_hidden_layers": 2, "num_attention_heads": 4,
         "num_key_value_heads": 2, "max_position_embeddings": 4096}


def make(out: Path, seed: int = 0, vocab: int = 512) -> Path:
    """Write tokenizer, chat template, config and bfloat16 weights to `out`; returns `out`.

    Raises OSError when `out` cannot be written, ValueError when the dataset is malformed.
    """
    from recipes.finetune.tiny import DATA, corpus, save_llama, train_tokenizer

    tok = train_tokenizer(corpus(DATA), vocab)
    tok.chat_template = CHAT_TEMPLATE
    return save_llama(out, tok, seed, dtype="bfloat16", **SHAPE)


def main(argv: list[str]) -> int:
    """CLI entry: see the module doc. Exit 0, or 2 with one line when the model cannot be written."""
    p = argparse.ArgumentParser(prog="python -m recipes.serve.bundled", description=__doc__.splitlines()[0])
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args(argv)
    try:
        path = make(a.out, a.seed)
    except (OSError, ValueError) as exc:
        print(f"rocmig-serve: error: {' '.join(str(exc).split())}", file=sys.stderr)
        return 2
    print(json.dumps({"model": str(path)}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
