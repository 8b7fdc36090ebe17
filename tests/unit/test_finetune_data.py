"""recipes/data: the project's SFT dataset is well-formed and registered; tiny.corpus reads it or names the file."""

import json
from pathlib import Path

import pytest

from recipes.finetune import tiny

DATA = Path(__file__).resolve().parents[2] / "recipes" / "data"


def test_dataset_registered_and_well_formed():
    info = json.loads((DATA / "dataset_info.json").read_text())
    assert info == {"rocmig_sft": {"file_name": "rocmig_sft.json"}}
    rows = json.loads((DATA / "rocmig_sft.json").read_text())
    assert len(rows) >= 50
    assert all(set(r) == {"instruction", "input", "output"} and r["instruction"] and r["output"] for r in rows)
    assert len({r["instruction"] + r["input"] for r in rows}) == len(rows)


def test_corpus_has_one_text_per_record():
    texts = tiny.corpus(DATA / "rocmig_sft.json")
    assert len(texts) == len(json.loads((DATA / "rocmig_sft.json").read_text()))
    assert texts[0].startswith("What is a gfx arch?")


def test_corpus_rejects_other_shapes(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"instruction": "x"}))
    with pytest.raises(ValueError, match=f"{bad}: expected a JSON list"):
        tiny.corpus(bad)
