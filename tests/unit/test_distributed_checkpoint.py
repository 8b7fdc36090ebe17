"""recipes.distributed.checkpoint on real files: atomic commit, verification, refusal of bad checkpoints."""

import json
import os

import pytest

from recipes.distributed import checkpoint as ck


def _payload():
    return {"model.pt": os.urandom(4096), "optim.pt": os.urandom(1000)}


def test_save_then_verify_roundtrip(tmp_path):
    data = _payload()
    path = ck.save(tmp_path, 40, data, meta={"world_size": 2})
    assert path.name == "step-00000040"
    c = ck.verify(path)
    assert c.step == 40 and c.meta == {"world_size": 2} and c.files == ("model.pt", "optim.pt")
    assert c.file("model.pt").read_bytes() == data["model.pt"]
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".tmp-")]


def test_latest_picks_newest_and_ignores_tmp_dirs(tmp_path):
    ck.save(tmp_path, 20, _payload())
    ck.save(tmp_path, 100, _payload())
    (tmp_path / ".tmp-step-00000120-999").mkdir()  # a crash mid-write leaves this
    assert ck.committed_steps(tmp_path) == [20, 100]
    assert ck.latest(tmp_path).step == 100


def test_refuses_overwrite(tmp_path):
    ck.save(tmp_path, 20, _payload())
    with pytest.raises(ck.CheckpointError, match="already exists"):
        ck.save(tmp_path, 20, _payload())


@pytest.mark.parametrize("damage, message", [
    (lambda d: (d / "model.pt").write_bytes((d / "model.pt").read_bytes()[:-1]), "truncated or corrupt"),
    (lambda d: (d / "model.pt").write_bytes(bytes([(d / "model.pt").read_bytes()[0] ^ 0xFF])
                                            + (d / "model.pt").read_bytes()[1:]), "SHA-256"),
    (lambda d: (d / "optim.pt").unlink(), "missing: partial"),
    (lambda d: (d / "manifest.json").unlink(), "manifest missing"),
    (lambda d: (d / "manifest.json").write_text("{not json"), "manifest unreadable"),
    (lambda d: (d / "stray.bin").write_bytes(b"1"), "not in manifest"),
])
def test_corrupt_or_partial_is_refused_with_hint(tmp_path, damage, message):
    ck.save(tmp_path, 20, _payload())
    newest = ck.save(tmp_path, 40, _payload())
    damage(newest)
    with pytest.raises(ck.CheckpointError, match=message) as exc:
        ck.latest(tmp_path)
    assert "step-00000020" in str(exc.value)  # names the earlier checkpoint, does not fall back to it
    assert "\n" not in str(exc.value)


def test_manifest_step_must_match_directory(tmp_path):
    path = ck.save(tmp_path, 20, _payload())
    m = json.loads((path / "manifest.json").read_text())
    m["step"] = 30
    (path / "manifest.json").write_text(json.dumps(m))
    with pytest.raises(ck.CheckpointError, match="manifest says step 30"):
        ck.verify(path)


def test_empty_root_is_an_error_not_a_fresh_start(tmp_path):
    with pytest.raises(ck.CheckpointError, match="no checkpoint"):
        ck.latest(tmp_path / "nothing-here")


def test_bad_file_name_rejected(tmp_path):
    with pytest.raises(ValueError, match="not allowed"):
        ck.save(tmp_path, 1, {"../escape": b""})
