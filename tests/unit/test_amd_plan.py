"""What the amd lane's cells hold, decided from data: Requires-Python against the OS image's Python,
arch gates, the torch/Triton pairing per release, and the rendered steps that follow from them."""

from pathlib import Path

import pytest

from buildctl.load import load_project
from buildctl.plan import REQUIRES_PYTHON, Selection, make_plan
from buildctl.render import render_cell

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def project():
    return load_project(ROOT)


def _cell(project, rocm, arch, role):
    return make_plan(project, Selection(("amd",), (rocm,), (arch,), (role,))).cells[0]


def test_llamafactory_is_left_out_where_the_os_python_is_older_than_it_requires(project):
    jammy = _cell(project, "6.2", "gfx942", "train")
    assert not jammy.has("llamafactory")
    rule, reason = next((r, why) for name, r, why in jammy.excluded_components if name == "llamafactory")
    assert rule == REQUIRES_PYTHON and "3.11" in reason and "3.10" in reason
    assert _cell(project, "7.2", "gfx942", "train").has("llamafactory")


def test_sgl_kernel_and_aiter_follow_their_gates(project):
    cdna = _cell(project, "7.2", "gfx942", "serve")
    rdna = _cell(project, "7.2", "gfx1100", "serve")
    assert cdna.has("sgl-kernel") and cdna.has("aiter")
    assert not rdna.has("sgl-kernel") and not rdna.has("aiter")


@pytest.mark.parametrize("rocm,dist,version", [("6.4", "pytorch-triton-rocm", "3.5.1"),
                                               ("7.1", "triton-rocm", "3.6.0"),
                                               ("7.2", "triton-rocm", "3.6.0")])
def test_the_torch_image_pins_the_rocm_triton_and_refuses_pypis(project, tmp_path, rocm, dist, version):
    text = (render_cell(project, _cell(project, rocm, "gfx942", "torch"), tmp_path) / "Dockerfile").read_text()
    assert f" {dist}=={version} " in text
    assert f"torchaudio {dist} --refuse triton" in text
    assert "pip==" in text.split("--index-url")[0]  # build tools before torch


def test_deepspeed_builds_only_its_allowlist(project, tmp_path):
    text = (render_cell(project, _cell(project, "7.2", "gfx942", "train"), tmp_path) / "Dockerfile").read_text()
    ops = project.matrix.frameworks["deepspeed-ops"].ops
    assert "DS_BUILD_OPS=0 " + " ".join(f"DS_BUILD_{op}=1" for op in ops) in text
    assert "DS_BUILD_OPS=1" not in text
