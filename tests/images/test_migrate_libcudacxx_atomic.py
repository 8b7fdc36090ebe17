"""libcu++'s scoped atomics through the whole recipe (fixup libcudacxx-atomic, cuda_atomic.h): a runtime in the
shape of numba-cuda 0.9.0's NRT (a stats struct of `cuda::atomic<size_t, cuda::thread_scope_device>` in a header
that includes <cuda/atomic>) and a hash-map insert in the shape of DGL's (`cuda::atomic_ref` compare-exchange)
compile for gfx942 and gfx1100, and the migrated host code, compiled by the dev image's hipcc and run on the host
CPU, gives libcu++'s results (fetch_add returns the old value, operators return the new one, a failed
compare-exchange loads the current value) and keeps libcu++'s layout (one T).

Image: $ROCMIG_DEV_IMAGE (default rocmig/dev:rocm7.2.4-gfx942-debian); skipped when it is not built.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.images.test_migrate_cases import image_or_skip, migrate_tree_in_image, run_recipe

pytestmark = pytest.mark.docker

MEMSYS = """#pragma once
#include <cuda/atomic>
struct NRT_MemSys {
  struct { cuda::atomic<size_t, cuda::thread_scope_device> alloc, free; } stats;
};
"""
NRT = """#include <cstdio>
#include "memsys.cuh"
__device__ NRT_MemSys* TheMSys;
__global__ void nrt_alloc(unsigned* keys, unsigned key, int* slot_out) {
  TheMSys->stats.alloc.fetch_add(1, cuda::memory_order_relaxed);
  for (unsigned i = 0; i < 64; ++i) {
    cuda::atomic_ref<unsigned, cuda::thread_scope_device> ref(keys[(key + i) % 64]);
    unsigned empty = 0;
    if (ref.compare_exchange_strong(empty, key, cuda::memory_order_acq_rel)) { *slot_out = (key + i) % 64; return; }
  }
}
int host_check() {
  NRT_MemSys sys{};
  sys.stats.alloc.store(5);
  size_t old = sys.stats.alloc.fetch_add(2, cuda::memory_order_relaxed);
  size_t now = ++sys.stats.alloc;
  unsigned word = 7, expected = 3;
  cuda::atomic_ref<unsigned, cuda::thread_scope_system> ref(word);
  bool swapped = ref.compare_exchange_strong(expected, 9);
  ref.fetch_max(11);
  cuda::std::atomic_ref<int> signed_ref(*reinterpret_cast<int*>(&word));
  int after = (signed_ref -= 1);
  std::printf("%zu %zu %d %u %d %zu\\n", old, now, (int)swapped, expected, after, sizeof(sys.stats.alloc));
  return 0;
}
"""
MAIN = """int host_check();
int main() { return host_check(); }
"""


def test_libcudacxx_atomics_migrate_compile_and_keep_their_meaning(tmp_path: Path) -> None:
    image_or_skip()
    report = migrate_tree_in_image(tmp_path, {"memsys.cuh": MEMSYS, "nrt.cu": NRT})
    (unit,) = [f for f in report["files"] if f.get("unit")]
    for arch in ("gfx942", "gfx1100"):
        assert unit["compile"][arch]["status"] == "ok", unit["compile"][arch]
    header = next(f for f in report["files"] if f["path"] == "memsys.cuh")
    assert "libcudacxx-atomic" in {x["id"] for x in unit["fixes"]} | {x["id"] for x in header["fixes"]}
    hip = tmp_path / "out" / "run" / "hip"
    code = (hip / "nrt.cu").read_text(encoding="utf-8").split("}  // namespace rocmig_cuda\n#endif\n")[-1]
    assert "rocmig_cuda::atomic_ref<unsigned, rocmig_cuda::thread_scope_device>" in code
    assert not re.search(r"(?<!\w)cuda::", code)
    (hip / "main.cpp").write_text(MAIN, encoding="utf-8")
    command = "hipcc -std=c++17 -O1 --offload-arch=gfx942 /src/nrt.cu /src/main.cpp -o /out/nrt && /out/nrt"
    run = run_recipe(hip, tmp_path / "bin", "-c", command, entry=("bash",))
    assert run.returncode == 0, run.stderr[-3000:]
    # old 5, then 8 after ++; 7 != 3 so no swap and expected reads 7; max(7, 11) = 11, minus 1 = 10; one size_t
    assert run.stdout.split("\n")[0] == "5 8 0 7 10 8"
