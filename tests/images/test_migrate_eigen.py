"""Eigen in a CUDA unit (torch-kdtree's nndistance_g.cu includes <unsupported/Eigen/CXX11/Tensor>): the dev
image has Debian's libeigen3-dev, and migrate gives a unit that includes Eigen pkg-config's -I for it and
-DEIGEN_USE_HIP (Eigen's GPU code then takes its HIP path, not cuda_runtime.h), so host and device code
that use Eigen with EIGEN_USE_GPU compile for gfx942 and gfx1100.

Image: $ROCMIG_DEV_IMAGE (default rocmig/dev:rocm7.2.4-gfx942-debian); skipped when it is not built.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.images.test_migrate_cases import image_or_skip, migrate_tree_in_image

pytestmark = pytest.mark.docker

SOURCE = """#define EIGEN_USE_GPU
#include <cuda_runtime.h>
#include <Eigen/Dense>
#include <unsupported/Eigen/CXX11/Tensor>
__global__ void project(const float* points, const float* axis, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    Eigen::Map<const Eigen::Vector3f> p(points + 3 * i), a(axis);
    out[i] = p.dot(a.normalized());
  }
}
float host_norm(const float* v) {
  Eigen::Tensor<float, 1> t(3);
  for (int k = 0; k < 3; ++k) t(k) = v[k];
  Eigen::Tensor<float, 0> s = (t * t).sum();
  return s();
}
void launch(const float* p, const float* a, float* out, int n, cudaStream_t stream) {
  project<<<(n + 127) / 128, 128, 0, stream>>>(p, a, out, n);
}
"""


def test_a_unit_using_eigen_compiles_on_both_archs(tmp_path: Path) -> None:
    image_or_skip()
    report = migrate_tree_in_image(tmp_path, {"nndistance.cu": SOURCE})
    (unit,) = [f for f in report["files"] if f.get("unit")]
    for arch in ("gfx942", "gfx1100"):
        assert unit["compile"][arch]["status"] == "ok", unit["compile"][arch]
