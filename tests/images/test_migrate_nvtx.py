"""NVTX beyond ranges and marks through the whole recipe: a unit that uses NVTX domains and event attributes
(as cudf's nvtx3.hpp, vendored by MinkowskiEngine 0.5.4, does) keeps NVIDIA's header-only NVTX 3, which the
dev image carries with its CUDA headers, and compiles for gfx942 and gfx1100; the calls record nothing
unless a profiler injects itself, so the program runs on the host as it does without a profiler.

Image: $ROCMIG_DEV_IMAGE (default rocmig/dev:rocm7.2.4-gfx942-debian); skipped when it is not built.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.images.test_migrate_cases import image_or_skip, migrate_tree_in_image, run_recipe

pytestmark = pytest.mark.docker

SOURCE = """#include <cstdio>
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>
#include <nvtx3/nvToolsExtCudaRt.h>
__global__ void scale(float* x, float a) { x[threadIdx.x] *= a; }
int run(float* x, cudaStream_t s) {
  nvtxDomainHandle_t domain = nvtxDomainCreateA("minkowski");
  nvtxEventAttributes_t attr = {};
  attr.version = NVTX_VERSION;
  attr.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  attr.messageType = NVTX_MESSAGE_TYPE_ASCII;
  attr.message.ascii = "scale";
  nvtxNameCudaStreamA(s, "main");
  int depth = nvtxDomainRangePushEx(domain, &attr);
  scale<<<1, 32, 0, s>>>(x, 2.0f);
  nvtxDomainRangePop(domain);
  nvtxDomainDestroy(domain);
  return depth;
}
int main(int argc, char**) {
  if (argc > 1) {  // the NVTX calls alone, on the host: no profiler attached, nothing recorded
    nvtxDomainHandle_t domain = nvtxDomainCreateA("host");
    nvtxEventAttributes_t attr = {};
    attr.version = NVTX_VERSION;
    attr.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    std::printf("push %d pop %d\\n", nvtxDomainRangePushEx(domain, &attr), nvtxDomainRangePop(domain));
    return 0;
  }
  return run(nullptr, 0);
}
"""


def test_a_unit_using_nvtx_domains_keeps_nvtx3_and_compiles_and_runs(tmp_path: Path) -> None:
    image_or_skip()
    report = migrate_tree_in_image(tmp_path, {"domains.cu": SOURCE})
    (unit,) = [f for f in report["files"] if f.get("unit")]
    for arch in ("gfx942", "gfx1100"):
        assert unit["compile"][arch]["status"] == "ok", unit["compile"][arch]
    migrated = (tmp_path / "out" / "run" / "hip" / "domains.cu").read_text(encoding="utf-8")
    assert "#include <nvtx3/nvToolsExt.h>" in migrated and "nvToolsExtCudaRt.h>" not in migrated.replace("// nvToolsExtCudaRt.h", "")
    run = run_recipe(tmp_path / "out" / "run" / "hip", tmp_path / "bin", "-c",
                     "hipcc -x hip -std=c++17 --offload-arch=gfx942 -isystem $ROCMIG_CUDA_PATH/nvtx /src/domains.cu "
                     "-o /out/domains -ldl && /out/domains host", entry=("bash",))
    assert run.returncode == 0, run.stderr[-3000:]
    assert run.stdout.split("\n")[0] == "push -2 pop -2"  # NVTX_NO_PUSH_POP_TRACKING: no tool injected
