"""The kernels' AMD target facts are matrix.yaml's: read from it (checkout) or from the archs.json that
`buildctl render` writes from it (images), never written twice."""

import json
from pathlib import Path

from buildctl.load import load_project
from kernels import targets

ROOT = Path(__file__).resolve().parents[2]


def test_amd_targets_carry_the_matrix_facts():
    archs = load_project(ROOT).matrix.archs
    amd = {name: spec for name, spec in targets.TARGETS.items() if spec.vendor == "amd"}
    assert set(amd) == set(targets.ELF_MACH) and set(amd) <= set(archs)
    for name, spec in amd.items():
        assert (spec.family, spec.wavefront, spec.lds_bytes) == (archs[name].family, archs[name].wavefront,
                                                                 archs[name].lds_bytes)


def test_the_image_copy_gives_the_same_facts(tmp_path, monkeypatch):
    """Inside an image there is no matrix.yaml: the rendered /etc/rocmig/archs.json is read instead."""
    project = load_project(ROOT)
    rendered = tmp_path / "archs.json"
    rendered.write_text(json.dumps({n: a.model_dump(mode="json") for n, a in project.matrix.archs.items()}))
    monkeypatch.setattr(targets, "MATRIX", tmp_path / "no-matrix.yaml")
    monkeypatch.setattr(targets, "IMAGE_ARCHS", rendered)
    assert targets._targets() == targets.TARGETS
