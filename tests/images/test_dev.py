"""The dev image: hipcc of the cell's ROCm, hipify-perl, hip* dev headers, kernels compile per offload arch."""

import pytest

from tests.images.checks import assert_cell_labels, assert_no_cuda
from tests.images.conftest import inspect_image, slice_cells

CELLS = slice_cells("dev")
pytestmark = [pytest.mark.docker, pytest.mark.usefixtures("docker_engine")]

SAXPY = r"""
#include <hip/hip_runtime.h>
__global__ void saxpy(int n, float a, const float* x, float* y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}
int main() { float *x, *y; hipMalloc(&x, 4); hipMalloc(&y, 4);
  hipLaunchKernelGGL(saxpy, dim3(1), dim3(64), 0, 0, 1, 2.0f, x, y); return 0; }
"""


@pytest.fixture(params=CELLS, ids=lambda c: c.ref)
def dev(request, container_for):
    return request.param, container_for(request.param)


def test_hipcc_matches_the_cell(dev):
    cell, host = dev
    out = host.check_output("hipcc --version")
    assert f"HIP version: {cell.release.full.rsplit('.', 1)[0]}" in out, out


def test_hipify_perl_and_dev_headers(dev):
    cell, host = dev
    assert host.exists("hipify-perl")
    translated = host.check_output("printf '#include <cuda_runtime.h>\\ncudaMalloc(&p, n);\\n' > /tmp/a.cu"
                                   " && hipify-perl /tmp/a.cu")
    assert "hipMalloc" in translated and "hip/hip_runtime.h" in translated
    for header in ("hipblas/hipblas.h", "hiprand/hiprand.h", "hipcub/hipcub.hpp", "rocprim/rocprim.hpp",
                   "thrust/device_vector.h"):
        found = host.run(f"find /usr/include /opt/rocm/include -path '*{header}' 2>/dev/null | head -1")
        assert found.stdout.strip(), f"{header} missing"


def test_kernel_compiles_for_each_arch_and_the_code_object_holds_it(dev):
    cell, host = dev
    host.run_test("cat > /tmp/saxpy.hip <<'EOF'\n" + SAXPY + "\nEOF")
    for arch in sorted({cell.arch_name, "gfx90a", "gfx1100"}):
        obj = f"/tmp/saxpy-{arch}.o"
        result = host.run(f"hipcc --offload-arch={arch} -c /tmp/saxpy.hip -o {obj}")
        assert result.rc == 0, result.stderr
        # llvm-objdump --offloading extracts the offload bundles and names each by its target triple.
        bundles = host.check_output(
            f"cd /tmp && \"$(hipconfig --hipclangpath)/llvm-objdump\" --offloading {obj}")
        assert f"amdgcn-amd-amdhsa--{arch}" in bundles, bundles


def test_migrate_recipe_is_in_the_image(dev):
    cell, host = dev
    assert host.file("/opt/rocmig/recipes/migrate").is_directory
    assert host.file("/etc/rocmig/archs.json").contains("gfx950")


def test_labels_user_and_no_cuda(dev):
    cell, host = dev
    assert_cell_labels(inspect_image(cell.ref), cell)
    assert host.user().name == "rocm" and host.user().uid != 0
    assert_no_cuda(host)
