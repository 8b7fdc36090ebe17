"""Checks shared by the image tests (a testinfra host and `docker image inspect` data)."""

from buildctl.plan import Cell

# File name patterns of CUDA / NVIDIA libraries and wheels that must never be in a ROCm image.
CUDA_FIND_ARGS = ["-name", "libcudart*", "-o", "-name", "libcuda.so*", "-o", "-name", "libcublas*",
                  "-o", "-name", "libnvrtc*", "-o", "-name", "libcudnn*", "-o", "-name", "nvidia_*", "-o",
                  "-name", "nvidia-*.dist-info", "-o", "-path", "*/site-packages/nvidia"]


def assert_no_cuda(host) -> None:
    """No CUDA or NVIDIA library or wheel anywhere in the image's filesystem."""
    cmd = host.run("find / -xdev ( " + " ".join(CUDA_FIND_ARGS) + " ) -print 2>/dev/null | head -20")
    assert cmd.stdout.strip() == "", f"CUDA/NVIDIA files in the image:\n{cmd.stdout}"


def assert_cell_labels(info: dict, cell: Cell) -> None:
    """The OCI and rocmig labels carry the cell's coordinates; the default user is not root."""
    labels = info["Config"]["Labels"]
    assert labels["io.rocmig.source"] == cell.release.source
    assert labels["io.rocmig.rocm.full"] == cell.release.full
    assert labels["io.rocmig.arch"] == cell.arch_name
    assert labels["io.rocmig.role"] == cell.role
    assert labels["org.opencontainers.image.title"] == f"rocmig/{cell.role}"
    assert info["Config"]["User"] not in ("", "root", "0")
