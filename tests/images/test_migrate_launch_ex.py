"""CUDA 12's extensible launch through the whole recipe (fixup launch-ex, cuda_launch_ex.h): a launcher in the
shape of vLLM 0.34.0's (programmatic dependent launch and cluster attributes, cudaGridDependencySynchronize,
griddepcontrol PTX) compiles for gfx942 and gfx1100, and the header's attribute conversion, compiled by
the dev image's hipcc and run on the host CPU (no GPU call), keeps HIP's attributes, drops the ones that
leave results unchanged and refuses the ones HIP cannot honour.

Image: $ROCMIG_DEV_IMAGE (default rocmig/dev:rocm7.2.4-gfx942-debian); skipped when it is not built.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.images.test_migrate_cases import image_or_skip, migrate_tree_in_image, run_recipe

pytestmark = pytest.mark.docker

SOURCE = """#include <cuda_runtime.h>
__global__ void rms(const float* x, float* y, int n) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
  cudaGridDependencySynchronize();
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i] * x[i];
  cudaTriggerProgrammaticLaunchCompletion();
}
cudaError_t launch(const float* x, float* y, int n, int cluster, cudaStream_t stream) {
  cudaLaunchConfig_t cfg;
  cfg.gridDim = (n + 255) / 256;
  cfg.blockDim = 256;
  cfg.dynamicSmemBytes = 0;
  cfg.stream = stream;
  cudaLaunchAttribute attribute[2];
  attribute[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attribute[0].val.programmaticStreamSerializationAllowed = 1;
  attribute[1].id = cudaLaunchAttributeClusterDimension;
  attribute[1].val.clusterDim.x = cluster;
  attribute[1].val.clusterDim.y = 1;
  attribute[1].val.clusterDim.z = 1;
  cfg.attrs = attribute;
  cfg.numAttrs = 2;
  return cudaLaunchKernelEx(&cfg, rms, x, y, n);
}
"""

CHECK = r"""#include "cuda_launch_ex.h"
#include <cstdio>
int main() {
  rocmig_launch::Attribute a[4] = {};
  a[0].id = rocmig_launch::ProgrammaticStreamSerialization; a[0].val.programmaticStreamSerializationAllowed = 1;
  a[1].id = rocmig_launch::Priority; a[1].val.priority = 3;
  a[2].id = rocmig_launch::ClusterDimension; a[2].val.clusterDim.x = 1; a[2].val.clusterDim.y = 1; a[2].val.clusterDim.z = 1;
  a[3].id = rocmig_launch::Cooperative; a[3].val.cooperative = 1;
  rocmig_launch::Config c = {};
  c.gridDim = dim3(7, 2); c.blockDim = dim3(64); c.dynamicSmemBytes = 128; c.attrs = a; c.numAttrs = 4;
  hipLaunchConfig_t h; std::vector<hipLaunchAttribute> kept;
  int s = rocmig_launch::to_hip(&c, &h, &kept);
  std::printf("ok %d n %u grid %u %u block %u smem %zu ids %d %d val %d %d\n", s, h.numAttrs, h.gridDim.x, h.gridDim.y,
              h.blockDim.x, h.dynamicSmemBytes, (int)h.attrs[0].id, (int)h.attrs[1].id, h.attrs[0].val.priority,
              h.attrs[1].val.cooperative);
  a[2].val.clusterDim.x = 2;
  std::printf("cluster2 %d\n", rocmig_launch::to_hip(&c, &h, &kept) == hipErrorNotSupported);
  a[2].val.clusterDim.x = 1; a[0].id = rocmig_launch::ProgrammaticEvent;
  std::printf("event %d\n", rocmig_launch::to_hip(&c, &h, &kept) == hipErrorNotSupported);
  c.attrs = nullptr;
  std::printf("null %d\n", rocmig_launch::to_hip(&c, &h, &kept) == hipErrorInvalidValue);
  return 0;
}
"""


def test_a_pdl_and_cluster_launch_migrates_and_compiles_on_both_archs(tmp_path: Path) -> None:
    image_or_skip()
    report = migrate_tree_in_image(tmp_path, {"minimax_like.cu": SOURCE})
    (unit,) = [f for f in report["files"] if f.get("unit")]
    for arch in ("gfx942", "gfx1100"):
        assert unit["compile"][arch]["status"] == "ok", unit["compile"][arch]
    assert "launch-ex" in {x["id"] for x in unit["fixes"]}
    migrated = (tmp_path / "out" / "run" / "hip" / "minimax_like.cu").read_text(encoding="utf-8")
    code = migrated.split("#endif  // ROCMIG_CUDA_LAUNCH_EX_H\n", 1)[1]
    assert "rocmig_launch::LaunchKernelEx(&cfg, rms, x, y, n)" in code and "cudaLaunch" not in code
    assert not [f for f in unit["findings"] if f["severity"] == "error"], unit["findings"]
    assert "launch-cluster-dimension" in {f["rule"] for f in unit["findings"]}


def test_the_attribute_conversion_keeps_hips_drops_hints_and_refuses_the_rest(tmp_path: Path) -> None:
    image_or_skip()
    src = tmp_path / "src"
    src.mkdir()
    (src / "check.cpp").write_text(CHECK, encoding="utf-8")
    command = ("hipcc -x hip -std=c++17 -O1 --offload-arch=gfx942 -I/opt/rocmig/recipes/migrate/migrate "
               "/src/check.cpp -o /out/check && /out/check")
    run = run_recipe(src, tmp_path / "out", "-c", command, entry=("bash",))
    assert run.returncode == 0, run.stderr[-3000:]
    assert run.stdout.split("\n")[:4] == ["ok 0 n 2 grid 7 2 block 64 smem 128 ids 8 2 val 3 1", "cluster2 1", "event 1", "null 1"]
