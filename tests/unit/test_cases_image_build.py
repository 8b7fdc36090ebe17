"""Group C cases (../shared/cases): image build problems rocmig's images must not have.

Each test renders the cells the case is about and checks the property that prevents the fault (the image
tests check the same on built debian-lane images). The kinds, not only the samples: every amd cell of the
matrix is checked, not one.
"""

import re
from pathlib import Path

import pytest

from buildctl.load import load_project
from buildctl.plan import Selection, make_plan
from buildctl.render import render_cell

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def rendered(tmp_path_factory):
    project = load_project(ROOT)
    out = tmp_path_factory.mktemp("render")
    plan = make_plan(project, Selection())
    return {cell.ref: (cell, render_cell(project, cell, out)) for cell in plan.cells}


def _stages(dockerfile: str) -> list[str]:
    return re.split(r"(?m)^(?=FROM )", dockerfile)[1:]


def test_c01_runtime_stages_hold_wheels_not_compilers(rendered):
    checked = 0
    for ref, (cell, folder) in rendered.items():
        if cell.role not in ("train", "serve"):
            continue
        stages = _stages((folder / "Dockerfile").read_text())
        runtime = stages[-1]
        assert "hipcc" not in runtime and "build-essential" not in runtime, ref
        if cell.has("flash-attention") or cell.has("sgl-kernel"):
            assert len(stages) == 2 and " AS builder" in stages[0], ref
            assert "COPY --from=builder /wheels /tmp/wheels" in runtime
            assert "rm -rf /tmp/wheels" in runtime or "rm -rf /tmp/sdist /tmp/wheels" in runtime
            checked += 1
    assert checked > 20


def test_c02_repo_radeon_key_is_fetched_fresh_and_scoped(rendered):
    checked = 0
    for cell, folder in rendered.values():
        if cell.role != "base" or cell.release.source != "amd":
            continue
        setup = (folder / "rocmig" / "apt-setup.sh").read_text()
        assert "apt-key" not in setup
        assert "https://repo.radeon.com/rocm/rocm.gpg.key | gpg --dearmor -o /etc/apt/keyrings/rocm.gpg" in setup
        assert f"signed-by=/etc/apt/keyrings/rocm.gpg] https://repo.radeon.com/rocm/apt/{cell.release.full} " in setup
        # Plain Ubuntu base: no old rocm/* image with an expired key baked in.
        assert (folder / "Dockerfile").read_text().count(f"FROM ubuntu:{cell.release.ubuntu}") == 1
        checked += 1
    assert checked >= 30


def test_c04_torch_family_from_the_rocm_index_in_one_step_then_constrained(rendered):
    seen: dict[str, int] = {}
    for ref, (cell, folder) in rendered.items():
        text = (folder / "Dockerfile").read_text()
        seen[cell.role] = seen.get(cell.role, 0) + 1
        if cell.role == "torch" and cell.release.torch:
            seen["torch-rocm-wheels"] = seen.get("torch-rocm-wheels", 0) + 1
            t = cell.release.torch
            one_step = re.search(rf"--index-url https://download.pytorch.org/whl/{re.escape(t.index)} \\\n\s+"
                                 rf"torch=={t.torch} torchvision=={t.torchvision} torchaudio=={t.torchaudio}", text)
            assert one_step, ref
            assert "torch_guard.py check --expect-rocm" in text
        if cell.role == "torch":
            assert "PIP_CONSTRAINT=/etc/rocmig/constraints.txt" in text
        if cell.role in ("train", "serve", "kernels"):
            assert "torch_guard.py check" in text, ref
            if cell.release.therock:
                # TheRock's compilers (rocm-sdk-devel, no torch) come from its index, under PIP_CONSTRAINT.
                devel = f"pip install --index-url {cell.release.therock.index} rocm-sdk-devel=={cell.release.therock.sdk} "
                assert devel in text, ref
                text = text.replace(devel, "")
            assert "--index-url" not in text and "--extra-index-url" not in text, ref
    # the loop must have met both torch kinds and every child role, or it proved nothing
    assert all(seen.get(k) for k in ("torch", "torch-rocm-wheels", "train", "serve", "kernels")), seen


def test_c07_builder_parallelism_is_bounded_and_archs_restricted(rendered):
    checked = 0
    for ref, (cell, folder) in rendered.items():
        text = (folder / "Dockerfile").read_text()
        if " AS builder" not in text:
            continue
        assert re.search(r"(?m)^ARG MAX_JOBS=\d+$", text), ref
        assert "MAX_JOBS=${MAX_JOBS}" in text
        assert f"PYTORCH_ROCM_ARCH={cell.arch_name} " in text and f"GPU_ARCHS={cell.arch_name}" in text
        checked += 1
    assert checked > 20


def test_flash_attention_triton_backend_is_a_matrix_option(project_copy, tmp_path):
    import yaml

    data = yaml.safe_load((project_copy / "matrix.yaml").read_text())
    data["frameworks"]["flash-attention"]["backend"] = "triton"
    (project_copy / "matrix.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    project = load_project(project_copy)
    cell = make_plan(project, Selection(("amd",), ("6.4",), ("gfx942",), ("train",))).cells[0]
    stages = _stages((render_cell(project, cell, tmp_path) / "Dockerfile").read_text())
    assert all("FLASH_ATTENTION_TRITON_AMD_ENABLE=TRUE" in stage for stage in stages)
