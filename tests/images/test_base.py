"""The base image: ROCm runtime of the cell, non-root default user, cell labels, no CUDA."""

import pytest

from tests.images.conftest import inspect_image, slice_cells
from tests.images.checks import assert_no_cuda, assert_cell_labels

CELLS = slice_cells("base")
pytestmark = [pytest.mark.docker, pytest.mark.usefixtures("docker_engine")]


@pytest.mark.parametrize("cell", CELLS, ids=lambda c: c.ref)
def test_base_image(cell, container_for):
    host = container_for(cell)
    assert host.user().uid != 0 and host.user().name == "rocm"
    assert {"video", "render"} <= set(host.user().groups)
    assert host.exists("rocminfo")
    cell_json = host.file("/etc/rocmig/cell.json").content_string
    assert f'"arch": "{cell.arch_name}"' in cell_json
    assert_cell_labels(inspect_image(cell.ref), cell)
    assert_no_cuda(host)
