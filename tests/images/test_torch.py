"""The torch image: pinned torch of the cell, the constraints guard holds (case C04's kind), no CUDA."""

import pytest

from tests.images.checks import assert_cell_labels, assert_no_cuda
from tests.images.conftest import inspect_image, slice_cells

CELLS = slice_cells("torch")
pytestmark = [pytest.mark.docker, pytest.mark.usefixtures("docker_engine")]


@pytest.fixture(params=CELLS, ids=lambda c: c.ref)
def torch_host(request, container_for):
    return request.param, container_for(request.param)


def test_torch_versions_match_the_matrix(torch_host):
    cell, host = torch_host
    version = host.check_output("python -c 'import torch; print(torch.__version__)'")
    constraints = host.file("/etc/rocmig/constraints.txt").content_string
    assert f"torch=={version}" in constraints
    if cell.release.torch is not None:
        assert version.startswith(cell.release.torch.torch) and "+rocm" in version
        assert host.check_output("python -c 'import torch; print(torch.version.hip)'") != "None"
    else:
        # Debian's CPU build: the version Debian ships for the release's suite.
        assert host.check_output("python -c 'import torch; print(torch.version.hip)'") == "None"
    host.run_test("python -c 'import torchvision, torchaudio'")
    assert host.check_output("echo $PIP_CONSTRAINT") == "/etc/rocmig/constraints.txt"


def test_a_later_pip_install_cannot_replace_torch(torch_host):
    """C04: a requirements file naming another torch must fail, not swap the build for PyPI's CUDA one."""
    cell, host = torch_host
    before = host.check_output("python -c 'import torch; print(torch.__version__)'")
    host.run_test("printf 'torch==2.5.1\\n' > /tmp/req.txt")
    result = host.run("pip install --dry-run -r /tmp/req.txt")
    assert result.rc != 0
    assert "conflict" in (result.stdout + result.stderr).lower() or "constraint" in (result.stdout + result.stderr).lower()
    assert host.check_output("python -c 'import torch; print(torch.__version__)'") == before


def test_guard_fails_on_a_cuda_wheel(torch_host):
    """The guard is not vacuous: a fake nvidia-* distribution in the venv makes it fail, naming it."""
    cell, host = torch_host
    host.run_test("mkdir -p /tmp/fake/nvidia_cudnn_cu12-9.1.0.dist-info && printf 'Metadata-Version: 2.1\\n"
                  "Name: nvidia-cudnn-cu12\\nVersion: 9.1.0\\n' > /tmp/fake/nvidia_cudnn_cu12-9.1.0.dist-info/METADATA")
    result = host.run("PYTHONPATH=/tmp/fake python /etc/rocmig/torch_guard.py check")
    assert result.rc == 1 and "nvidia-cudnn-cu12" in result.stderr
    clean = host.run("python /etc/rocmig/torch_guard.py check")
    assert clean.rc == 0, clean.stderr


def test_labels_user_no_cuda(torch_host):
    cell, host = torch_host
    assert_cell_labels(inspect_image(cell.ref), cell)
    assert host.user().uid != 0
    assert_no_cuda(host)


def test_sympy_dynamo_and_a_small_compile(torch_host):
    """What users import: sympy, torch._dynamo, and torch.compile of a small function (AOTAutograd backend:
    the runtime images hold no C++ compiler, which inductor's CPU code generation needs) equal to eager."""
    cell, host = torch_host
    host.run_test("python -c 'import sympy, torch._dynamo'")
    script = ("import torch\n"
              "f = lambda x, w: torch.nn.functional.gelu(x @ w).sum(-1)\n"
              "x, w = torch.randn(8, 16), torch.randn(16, 4)\n"
              "c = torch.compile(f, backend='aot_eager', fullgraph=True)\n"
              "assert torch.allclose(c(x, w), f(x, w)), 'compiled differs from eager'\n"
              "print(torch._dynamo.utils.counters['stats']['unique_graphs'])\n")
    assert int(host.check_output(f"python -c \"{script}\"").splitlines()[-1]) >= 1
