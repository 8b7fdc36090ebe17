"""train, serve and kernels images: frameworks import at the matrix's versions, the torch guard still holds,
runtime images hold no compilers (case C01's kind), components left out per cell are really absent."""

import pytest

from buildctl.load import load_project
from tests.images.checks import assert_cell_labels, assert_no_cuda
from tests.images.conftest import ROOT, inspect_image, slice_cells

FRAMEWORKS = load_project(ROOT).matrix.frameworks
pytestmark = [pytest.mark.docker, pytest.mark.usefixtures("docker_engine")]


def _version(host, dist: str) -> str:
    return host.check_output(f"python -c 'import importlib.metadata as m; print(m.version(\"{dist}\"))'")


def _common(cell, host):
    assert_cell_labels(inspect_image(cell.ref), cell)
    assert host.user().uid != 0
    assert_no_cuda(host)
    guard = host.run("python /etc/rocmig/torch_guard.py check")
    assert guard.rc == 0, guard.stderr
    torch_pin = host.file("/etc/rocmig/constraints.txt").content_string.splitlines()[0]
    assert torch_pin == "torch==" + host.check_output("python -c 'import torch; print(torch.__version__)'")


@pytest.mark.parametrize("cell", slice_cells("train"), ids=lambda c: c.ref)
def test_train_image(cell, container_for):
    host = container_for(cell)
    _common(cell, host)
    out = host.check_output("llamafactory-cli version")
    assert FRAMEWORKS["llamafactory"].version in out
    assert _version(host, "deepspeed") == FRAMEWORKS["deepspeed"].version
    host.run_test("python -c 'import deepspeed'")
    flash = host.run("python -c 'import flash_attn'")
    assert (flash.rc == 0) == cell.has("flash-attention")
    for compiler in ("hipcc", "g++", "clang++"):
        assert not host.exists(compiler), f"{compiler} in a runtime image"
    assert host.file("/opt/rocmig/recipes/finetune").is_directory


@pytest.mark.parametrize("cell", slice_cells("serve"), ids=lambda c: c.ref)
def test_serve_image(cell, container_for):
    host = container_for(cell)
    _common(cell, host)
    assert host.check_output("python -c 'import sglang; print(sglang.__version__)'") == FRAMEWORKS["sglang"].version
    kernel = host.run("python -c 'import sgl_kernel'")
    assert (kernel.rc == 0) == cell.has("sgl-kernel")
    for compiler in ("hipcc", "g++", "clang++"):
        assert not host.exists(compiler), f"{compiler} in a runtime image"


@pytest.mark.parametrize("cell", slice_cells("kernels"), ids=lambda c: c.ref)
def test_kernels_image(cell, container_for):
    host = container_for(cell)
    _common(cell, host)
    assert _version(host, "tilelang") == FRAMEWORKS["tilelang"].version
    host.run_test("python -c 'import tilelang'")
    assert host.exists("hipcc")
