"""The base image: ROCm runtime of the cell, non-root default user, cell labels, no CUDA."""

import re

import pytest

from tests.images.checks import assert_cell_labels, assert_no_cuda
from tests.images.conftest import inspect_image, slice_cells

CELLS = slice_cells("base")
pytestmark = [pytest.mark.docker, pytest.mark.usefixtures("docker_engine")]


@pytest.mark.parametrize("cell", CELLS, ids=lambda c: c.ref)
def test_base_image(cell, container_for):
    host = container_for(cell)
    assert host.user().uid != 0 and host.user().name == "rocm"
    assert {"video", "render"} <= set(host.user().groups)
    # Every id is the documented one, none picked by groupadd/useradd (templates/partials/accounts.j2).
    assert (host.user().uid, host.user().gid, host.group("rocm").gid) == (1000, 1000, 1000)
    assert (host.group("video").gid, host.group("render").gid) == (44, 109)
    assert host.exists("rocminfo")
    cell_json = host.file("/etc/rocmig/cell.json").content_string
    assert f'"arch": "{cell.arch_name}"' in cell_json
    assert_cell_labels(inspect_image(cell.ref), cell)
    assert_no_cuda(host)


@pytest.mark.parametrize("cell", CELLS, ids=lambda c: c.ref)
def test_only_the_cell_archs_kernel_files_are_left(cell, container_for):
    """Arch pruning: per-arch kernel files of other archs are gone; the cell arch's that the packages ship stay."""
    host = container_for(cell)
    dirs = "/usr/lib/x86_64-linux-gnu/rocblas /usr/lib/x86_64-linux-gnu/hipblaslt /opt/rocm/lib/rocblas /opt/rocm/lib/hipblaslt"
    present = host.run(f"find {dirs} -type f -name '*gfx*' 2>/dev/null").stdout.split()
    archs = {tok for path in present for tok in re.findall(r"gfx[0-9a-f]+", path.rsplit("/", 1)[-1])}
    assert archs == {cell.arch_name}, f"code objects of other archs left: {sorted(archs - {cell.arch_name})}"
    if cell.release.source == "debian":
        shipped = host.run("dpkg -L librocblas5 librocblas0 2>/dev/null").stdout.split()
        wanted = [p for p in shipped if cell.arch_name in re.findall(r"gfx[0-9a-f]+", p.rsplit("/", 1)[-1])]
        assert wanted, "the rocBLAS package ships no file for the cell arch"
        assert all(p in present for p in wanted)


HOST_CA = "/etc/ssl/certs/ca-certificates.crt"


@pytest.mark.parametrize("role", ["base", "torch", "serve"])
def test_the_ca_bundle_secret_is_not_left_in_a_layer(role, container_for):
    """Builds get the host's CA bundle as a BuildKit secret (for the HTTPS proxy); no layer keeps it."""
    import hashlib
    from pathlib import Path

    if not Path(HOST_CA).exists():
        pytest.skip(f"{HOST_CA} is absent: builds got no CA bundle")
    cells = slice_cells(role)
    if not cells:
        pytest.skip(f"{role} is not in the slice")
    host = container_for(cells[0])
    digest = hashlib.sha256(Path(HOST_CA).read_bytes()).hexdigest()
    found = host.run("find / -xdev -type f \\( -name '*.crt' -o -name '*.pem' -o -name 'ca_bundle' \\) "
                     "-exec sha256sum {} + 2>/dev/null").stdout
    assert digest not in found
    assert not host.file("/run/secrets/ca_bundle").exists
