"""Exact rewrites of CUDA features hipify-perl leaves (migrate/features.py): the SIMD video helpers
compute CUDA's documented per-lane results (run on the warp emulator against a reference on random
data with the lane boundary values), and each text rewrite gives the HIP spelling and is closed in
the report."""

import random
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "recipes" / "migrate"))

from migrate import advice, cpp, features, ptx, rules
from migrate.archs import Arch

from tests.unit.warp_emulator import Machine


def split(v: int, lanes: int, signed: bool) -> list[int]:
    bits = 32 // lanes
    out = []
    for i in range(lanes):
        x = (v >> (i * bits)) & ((1 << bits) - 1)
        out.append(x - (1 << bits) if signed and x >> (bits - 1) else x)
    return out


def reference(stem: str, lanes: int, a: int, b: int) -> int:
    """CUDA Math API, SIMD intrinsics: the result of __v<stem><lanes>(a, b), lane by lane."""
    signed = stem in ("addss", "subss", "absdiffs", "absss", "maxs", "mins", "neg", "negss", "sads") or \
        (stem[:3] in ("cmp", "set") and stem.endswith("s") and stem[3:] not in ("eq", "ne"))
    bits = 32 // lanes
    lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)
    xs, ys = split(a, lanes, signed), split(b, lanes, signed)
    def clamp(v):
        return max(lo, min(hi, v))
    compare = {"eq": lambda x, y: x == y, "ne": lambda x, y: x != y, "ge": lambda x, y: x >= y,
               "gt": lambda x, y: x > y, "le": lambda x, y: x <= y, "lt": lambda x, y: x < y}
    if stem in ("sads", "sadu"):
        return sum(abs(x - y) for x, y in zip(xs, ys))
    ops = {"add": lambda x, y: x + y, "sub": lambda x, y: x - y, "addss": lambda x, y: clamp(x + y),
           "subss": lambda x, y: clamp(x - y), "addus": lambda x, y: clamp(x + y), "subus": lambda x, y: clamp(x - y),
           "absdiffs": lambda x, y: abs(x - y), "absdiffu": lambda x, y: abs(x - y), "absss": lambda x, y: clamp(abs(x)),
           "maxs": max, "maxu": max, "mins": min, "minu": min, "haddu": lambda x, y: (x + y) // 2,
           "avgu": lambda x, y: (x + y + 1) // 2, "neg": lambda x, y: -x, "negss": lambda x, y: clamp(-x)}
    if stem[:3] in ("cmp", "set"):
        test = compare[stem[3:5]]
        ops[stem] = lambda x, y: ((1 << bits) - 1 if stem.startswith("cmp") else 1) if test(x, y) else 0
    return sum((ops[stem](x, y) & ((1 << bits) - 1)) << (i * bits) for i, (x, y) in enumerate(zip(xs, ys)))


def edge_words(rng: random.Random, n: int) -> list[int]:
    special = [0x00, 0x01, 0x7F, 0x80, 0x81, 0xFF, 0xFE]
    return [int.from_bytes(bytes(rng.choice(special) if rng.random() < 0.5 else rng.randrange(256) for _ in range(4)),
                           "little") for _ in range(n)]


@pytest.mark.parametrize("lanes", [4, 2])
def test_simd_video_helpers_match_cuda_semantics(lanes):
    rng = random.Random(lanes)
    a, b = edge_words(rng, 24), edge_words(rng, 24)
    stems = sorted(features.SIMD_OPS)
    calls = "\n".join(f"  r[{k} * 24 + i] = rocmig_v{stem}{lanes}(a[i]{'' if stem in features.UNARY else ', b[i]'});"
                      for k, stem in enumerate(stems))
    source = features.CLAMP_HELPER + "".join(features._simd_helper(s, lanes) for s in stems) + \
        f"__global__ void t(const unsigned* a, const unsigned* b, unsigned* r) {{\n  int i = threadIdx.x;\n{calls}\n}}\n"
    (result,) = Machine(source, "hip", 64).launch("t", 1, 24, [a, b, [0] * (24 * len(stems))])[2:]
    for k, stem in enumerate(stems):
        got = result[k * 24:(k + 1) * 24]
        want = [reference(stem, lanes, x, y) for x, y in zip(a, b)]
        assert got == want, stem


def test_simd_calls_renamed_and_helpers_inserted_once():
    text = '#include "hip/hip_runtime.h"\n__device__ unsigned f(unsigned a, unsigned b) { return __vmaxs4(a, b) + __vmaxs4(b, a) + __vsadu2(a, b); }\n'
    out = features.simd_video(text)
    assert out.count("rocmig_vmaxs4(") == 3 and "__vmaxs4" not in out  # the definition and two calls
    assert out.index("rocmig_vsadu2(unsigned int a") > out.index('#include "hip/hip_runtime.h"')
    assert features.simd_video(out) == out


def test_simd_functions_the_file_defines_itself_stay_its_own():
    """aphrodite-engine 0.10.0's gguf ggml-common.h defines __vcmpeq4 and __vsub4 for its ROCm build: renamed,
    they collided with the helpers ("redefinition of 'rocmig_vcmpeq4'"); other intrinsics still get helpers."""
    text = ('#include "hip/hip_runtime.h"\n#if defined(USE_ROCM)\nstatic __device__ __forceinline__ uint32_t __vcmpeq4(const uint32_t a,\n'
            "    const uint32_t b) {\n  return a ^ b;\n}\n#endif\n"
            "__device__ unsigned f(unsigned a) { return __vcmpeq4(a, 1u) + __vmaxs4(a, 2u); }\n")
    out = features.simd_video(text)
    assert out.count("__vcmpeq4(") == 2 and "rocmig_vcmpeq4" not in out
    assert out.count("rocmig_vmaxs4(") == 2  # its helper and the call


def test_ffs_calls_get_cudas_signature():
    text = "int a = __ffsll(m[i]); int b = __ffs(x & 3); int c = __ffsll((long long)(y));\n"
    assert features.ffs_signature(text) == \
        "int a = __ffsll((long long)(m[i])); int b = __ffs((int)(x & 3)); int c = __ffsll((long long)(y));\n"


def test_header_and_namespace_rewrites():
    text = ("#include <builtin_types.h>\n#include <nvtx3/nvToolsExt.h>\n#include <mma.h>\nusing namespace nvcuda;\n"
            "#include <cooperative_groups/reduce.h>\nnamespace cg = cooperative_groups;\n"
            "__device__ float f(cg::thread_block_tile<32> t, float v) { return cg::reduce(t, v, cg::plus<float>()); }\n"
            "__device__ unsigned g(unsigned* p) { return atomicInc_system(p, 7u); }\n")
    out = text
    for step in (features.builtin_types, features.nvtx, features.wmma, features.cg_reduce, features.atomic_system):
        out = step(out)
    assert "#include <hip/hip_runtime.h>\n" in out and "builtin_types" not in out
    assert "roctxRangePushA(name)" in out and "nvToolsExt" not in out.split("//")[0]
    assert "#include <rocwmma/rocwmma.hpp>" in out and "namespace wmma = rocwmma;" in out
    assert "rocmig_cg::reduce(t, v, rocmig_cg::plus<float>())" in out and "cooperative_groups/reduce.h" not in out
    assert "return rocmig_atomicInc_system(p, 7u);" in out and '__ATOMIC_RELAXED, "")' in out


def test_cub_headers_become_hipcubs_and_internal_dispatch_stays_a_finding():
    # XGBoost 3.4.1 src/common/device_helpers.cuh, src/common/algorithm.cuh
    cuda = ("#include <cub/cub.cuh>\n#include <cub/util_type.cuh>  // for UnitWord, DoubleBuffer\n"
            "#include <cub/block/block_scan.cuh>  // for BlockScan\n"
            "#include <cub/device/dispatch/dispatch_radix_sort.cuh>  // for DispatchSegmentedRadixSort\n"
            "void f() { cub::DispatchSegmentedRadixSort<false, int, int, int*, int*, int>::Dispatch(); }\n")
    hip = cuda.replace("<cub/cub.cuh>", "<hipcub/hipcub.hpp>").replace("cub::", "hipcub::")
    out = features.cub_headers(hip)
    assert out.split("\n")[1:4] == ["#include <hipcub/util_type.hpp>  // for UnitWord, DoubleBuffer",
                                    "#include <hipcub/block/block_scan.hpp>  // for BlockScan",
                                    "#include <cub/device/dispatch/dispatch_radix_sort.cuh>  // for DispatchSegmentedRadixSort"]
    migrated = advice.migrate_tree({"a.cuh": (cuda, hip)}, rules.load_rules(), [Arch("gfx942", "CDNA3", 64, 65536)])
    status = sorted((f.line, f.rule, f.status) for f in migrated.findings["a.cuh"] if f.rule.startswith("cub"))
    assert status == [(2, "cub-header", "fixed"), (3, "cub-header", "fixed"), (4, "cub-header", "open"),
                      (4, "cub-internal-dispatch", "open"), (5, "cub-internal-dispatch", "open")]


def test_libcudacxx_uses_are_findings_at_their_line():
    # XGBoost 3.4.1 src/common/device_helpers.cuh, src/metric/auc.cu, src/common/algorithm.cuh
    cuda = ("#include <cuda/functional>  // for proclaim_return_type\n#include <cuda/std/tuple>\n"
            "auto it = dh::MakeTransformIterator<float>(c, cuda::proclaim_return_type<float>([=] __device__(int i) { return 1.f; }));\n"
            "auto p = cuda::std::make_pair(fp, tp);\n"
            "thrust::sort(thrust::cuda::par(alloc), b, e);\n"
            "auto lane = cuda::ptx::get_sreg_laneid();\n")
    migrated = advice.migrate_tree({"auc.cu": (cuda, cuda)}, rules.load_rules(), [Arch("gfx942", "CDNA3", 64, 65536)])
    assert [f.line for f in migrated.findings["auc.cu"] if f.rule == "cuda-libcudacxx"] == [1, 3, 6]
    assert [(f.line, f.status) for f in migrated.findings["auc.cu"] if f.rule == "libcudacxx-rocthrust"] == \
        [(2, "fixed"), (4, "fixed")]


def test_libcudacxx_pairs_tuples_and_function_objects_become_rocthrusts():
    # XGBoost 3.4.1 src/common/device_helpers.cuh and src/metric/auc.cu; cuda::std::visit has no
    # rocThrust counterpart and stays a finding on its line, also beside a rewritten name
    cuda = ("#include <cuda/std/utility>   // for pair\n#include <cuda/std/iterator>  // for iterator_traits\n"
            "#include <cuda/std/variant>\n"
            "using V = typename ::cuda::std::iterator_traits<It>::value_type;\n"
            "__device__ void f(float fp, float tp) { float a, b; cuda::std::tie(a, b) = cuda::std::make_pair(fp, tp); }\n"
            "auto r = cuda::std::get<0>(p) + cuda::std::visit(g, v);\n"
            "thrust::cuda::par(alloc); my::cuda::std::pair<int, int> q;\n")
    out = features.libcudacxx_thrust(cuda)
    assert out.split("\n")[:7] == [
        "#include <thrust/pair.h>   // for pair", "#include <thrust/iterator/iterator_traits.h>",
        "#include <thrust/distance.h>  // for iterator_traits", "#include <cuda/std/variant>",
        "using V = typename ::thrust::iterator_traits<It>::value_type;",
        "__device__ void f(float fp, float tp) { float a, b; thrust::tie(a, b) = thrust::make_pair(fp, tp); }",
        "auto r = thrust::get<0>(p) + cuda::std::visit(g, v);"]
    assert out.endswith("thrust::cuda::par(alloc); my::cuda::std::pair<int, int> q;\n")
    migrated = advice.migrate_tree({"auc.cu": (cuda, cuda)}, rules.load_rules(), [Arch("gfx942", "CDNA3", 64, 65536)])
    by_rule = sorted((f.line, f.rule, f.status) for f in migrated.findings["auc.cu"] if "libcudacxx" in f.rule)
    assert by_rule == [(1, "libcudacxx-rocthrust", "fixed"), (2, "libcudacxx-rocthrust", "fixed"),
                       (3, "cuda-libcudacxx", "open"), (4, "libcudacxx-rocthrust", "fixed"),
                       (5, "libcudacxx-rocthrust", "fixed"), (6, "cuda-libcudacxx", "open"),
                       (6, "libcudacxx-rocthrust", "fixed")]


def test_ptx_trap_becomes_builtin_trap_and_other_asm_stays_open():
    # LightGBM 4.7.0 src/treelearner/cuda/cuda_best_split_finder.cu: its CUDA branch (USE_ROCM is not
    # defined by a plain HIP build) traps with PTX
    cuda = ("__device__ void f(bool categorical, float* r, float v) {\n  if (categorical) {\n    __threadfence();\n"
            "#if defined(USE_ROCM)\n    __builtin_trap();\n#else\n    asm(\"trap;\");\n#endif\n  }\n"
            "  asm volatile (\"trap;\");\n  asm volatile(\"nanosleep.u32 100;\" ::: \"memory\");\n}\n")
    assert features.ptx_trap(cuda).count("__builtin_trap();") == 3
    migrated = advice.migrate_tree({"f.cu": (cuda, cuda)}, rules.load_rules(), [Arch("gfx942", "CDNA3", 64, 65536)])
    assert [(f.line, f.status) for f in migrated.findings["f.cu"] if f.rule == "inline-ptx-asm"] == \
        [(7, "fixed"), (10, "fixed"), (11, "open")]


def test_event_wait_flags_get_their_hip_names():
    # XGBoost 3.4.1 src/common/cuda_stream.h after hipify-perl 7.2
    hip = "    dh::safe_cuda(hipStreamWaitEvent(stream_, hipEvent_t{e}, cudaEventWaitDefault));\n"
    assert features.event_wait_flags(hip) == "    dh::safe_cuda(hipStreamWaitEvent(stream_, hipEvent_t{e}, hipEventWaitDefault));\n"
    assert features.event_wait_flags("f(cudaEventWaitExternal); cudaEventWaitDefaultX;") == \
        "f(hipEventWaitExternal); cudaEventWaitDefaultX;"


def test_nccl_header_becomes_rccl_and_the_finding_is_closed():
    # LightGBM 4.7.0 include/LightGBM/cuda/cuda_utils.hu, its CUDA branch
    cuda = ("#if defined(USE_ROCM)\n#include <rccl/rccl.h>\n#else\n#include <cuda.h>\n#include <cuda_runtime.h>\n"
            "#include <nccl.h>\n#endif\n#include \"nccl.h\"\nvoid f(ncclComm_t c) { ncclCommDestroy(c); }\n")
    hip = cuda.replace("<cuda.h>", "<hip/hip_runtime.h>").replace("<cuda_runtime.h>", "<hip/hip_runtime.h>")
    out = features.nccl_rccl(hip)
    assert out.count("#include <rccl/rccl.h>\n") == 3 and "nccl.h" not in out
    assert "ncclCommDestroy(c)" in out
    archs = [Arch("gfx942", "CDNA3", 64, 65536)]
    migrated = advice.migrate_tree({"u.hu": (cuda, hip)}, rules.load_rules(), archs)
    # without PyTorch, nothing defines USE_ROCM: the #else branch is the one compiled, and scanned
    assert [(f.line, f.status) for f in migrated.findings["u.hu"] if f.rule == "nccl-header"] == [(6, "fixed"), (8, "fixed")]
    assert "#include <rccl/rccl.h>\n#endif" in migrated.final["u.hu"]
    own_rocm_build = advice.migrate_tree({"u.hu": (cuda, hip)}, rules.load_rules(), archs, defines=frozenset({"USE_ROCM"}))
    assert [f.line for f in own_rocm_build.findings["u.hu"] if f.rule == "nccl-header"] == [8]  # the unguarded include after the #if chain


def test_feature_findings_closed_by_their_fixups():
    cuda = ("#include <cuda_runtime.h>\n#include <builtin_types.h>\n#include <nvToolsExt.h>\n"
            "__global__ void k(unsigned* a) { a[0] = __vcmpgtu4(a[1], a[2]); atomicDec_system(a, 3u); }\n"
            "void h() { nvtxRangePushA(\"r\"); nvtxRangePop(); nvtxDomainCreateA(\"d\"); }\n")
    hip = cuda.replace("#include <cuda_runtime.h>", '#include "hip/hip_runtime.h"')
    migrated = advice.migrate_tree({"k.cu": (cuda, hip)}, rules.load_rules(), [Arch("gfx942", "CDNA3", 64, 65536)])
    status = {(f.rule, f.status) for f in migrated.findings["k.cu"]}
    assert {("builtin-types-header", "fixed"), ("nvtx", "fixed"), ("simd-video-intrinsic", "fixed"),
            ("atomic-system-inc", "fixed"), ("nvtx-unmapped", "open")} <= status


# torch_scatter 2.1.2 csrc/cuda/utils.cuh (its ROCm branch shuffles at::Half with HIP's __shfl_up)
SCATTER_UTILS = """#pragma once
#include "../extensions.h"
__device__ __inline__ at::Half __shfl_up_sync(const unsigned mask, const at::Half var,
                                              const unsigned int delta) {
  return __shfl_up_sync(mask, var.operator __half(), delta);
}
#ifdef USE_ROCM
#define SHFL_UP_SYNC(mask, var, delta) __shfl_up(var, delta)
#else
#define SHFL_UP_SYNC __shfl_up_sync
#endif
"""


def test_half_shuffles_inserted_once_after_the_includes_leaving_the_projects_own_overloads():
    declared = features.half_overloads([SCATTER_UTILS])
    assert declared == {"__shfl_up_sync"}
    out = features.half_shuffles(SCATTER_UTILS, declared)
    block = out[out.index("#ifndef ROCMIG_HALF_SHUFFLES"):out.index("#endif\n", out.index("ROCMIG_HALF_SHUFFLES")) + 7]
    assert out.index(block) > out.index('#include "../extensions.h"')
    assert "c10::Half __shfl_up(c10::Half var, unsigned int lane_delta, int width) " \
           "{ return c10::Half(__shfl_up(static_cast<__half>(var), lane_delta, width)); }" in block
    assert "__shfl_up_sync(unsigned long long mask" not in block  # the project overloads it itself
    assert "__shfl_xor_sync(unsigned long long mask, c10::Half var, int lane_mask, int width)" in block
    assert "warpSize" not in block  # each forwarder passes its caller's width on
    assert features.half_shuffles(out, declared) == out
    assert features.half_shuffles("#include <torch/extension.h>\nint f(int x) { return x; }\n") == \
        "#include <torch/extension.h>\nint f(int x) { return x; }\n"


def test_half_shuffles_only_in_pytorch_files_and_not_a_warp_operation():
    """The block goes only where PyTorch's headers are included, and the warp analysis does not count
    its forwarders as wavefront operations (no warp-width-mixed beside the 32-lane group forms)."""
    cuda = SCATTER_UTILS + "__device__ float r(float v) { return __shfl_down_sync(0xffffffff, v, 1); }\n"
    archs = [Arch("gfx942", "CDNA3", 64, 65536)]
    plain = advice.migrate_tree({"u.cuh": (cuda, cuda)}, rules.load_rules(), archs, defines=frozenset({"USE_ROCM"}))
    assert "ROCMIG_HALF_SHUFFLES" not in plain.final["u.cuh"]
    torch = advice.migrate_tree({"u.cuh": (cuda, cuda)}, rules.load_rules(), archs, pytorch_files=frozenset({"u.cuh"}))
    assert "ROCMIG_HALF_SHUFFLES" in torch.final["u.cuh"]
    assert "half-shuffle-overloads" in [x.id for x in torch.fixes["u.cuh"]]
    def decided(m):
        return sorted((f.line, f.rule, f.status, f.message.split(" while ")[0]) for f in m.findings["u.cuh"])
    assert decided(torch) == decided(plain)


def test_torch_units_keep_a_tree_header_torch_hipify_did_not_reach(tmp_path):
    """transformer-engine-torch 2.20.2: csrc/extensions/gemm.cpp includes the project's own
    "common/util/cuda_runtime.h", which torch.utils.hipify rewrote to "common/util/hip/hip_runtime.h" and so
    never reached (the header is not among its files); the include keeps the tree's name."""
    from migrate import torch_ext
    cuda = '#include <torch/extension.h>\n#include "common/util/cuda_runtime.h"\nint f();\n'
    hipified = '#include <torch/extension.h>\n#include "common/util/hip/hip_runtime.h"\nint f();\n'
    (tmp_path / "csrc").mkdir()
    (tmp_path / "csrc" / "gemm_hip.cpp").write_text(hipified)
    tree = {"csrc/gemm.cpp": cuda, "common_headers/common/util/cuda_runtime.h": "namespace te { namespace cuda {} }\n"}
    archs = [Arch("gfx942", "CDNA3", 64, 65536)]
    done = torch_ext.apply_fixups(
        {"csrc/gemm.cpp": "csrc/gemm_hip.cpp"}, tree, tmp_path,
        lambda part: advice.migrate_tree(part, rules.load_rules(), archs, tree_cuda=tree, pytorch_files=frozenset(part)))
    assert '#include "common/util/cuda_runtime.h"' in (tmp_path / "csrc" / "gemm_hip.cpp").read_text()
    assert "tree-include-kept" in [x.id for x in done.fixes["csrc/gemm_hip.cpp"]]


def test_headers_torch_hipify_never_reached_get_the_trees_translation(tmp_path):
    """transformer-engine-torch 2.20.2: after tree-include-kept, gemm_hip.cpp includes the project's
    common/util/cuda_runtime.h, which torch.utils.hipify never reached (its copy is still CUDA:
    `#include <cuda_runtime_api.h>`); the extension build compiles the tree's translation of it instead.
    A header torch.utils.hipify mapped, one no extension unit reaches and one it changed are left."""
    from migrate import torch_ext
    cuda = {"common/util/cuda_runtime.h": "#include <cuda_runtime_api.h>\n", "csrc/gemm.cpp": "int g();\n",
            "csrc/util.h": "#include <cuda.h>\n", "other/alone.h": "#include <cuda.h>\n"}
    for rel, text in cuda.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    (tmp_path / "csrc" / "util.h").write_text("#include <hip/hip_runtime.h>\n")  # torch.utils.hipify's own
    translated = {rel: text.replace("cuda_runtime_api.h", "hip/hip_runtime_api.h").replace("cuda.h", "hip/hip_runtime.h")
                  for rel, text in cuda.items()}
    written = torch_ext.fill_unreached(tmp_path, {"csrc/gemm.cpp": "csrc/gemm.cpp"},
                                       {"common/util/cuda_runtime.h", "csrc/gemm.cpp", "csrc/util.h"}, cuda, translated)
    assert written == ["common/util/cuda_runtime.h"]
    assert (tmp_path / "common/util/cuda_runtime.h").read_text() == "#include <hip/hip_runtime_api.h>\n"
    assert (tmp_path / "other/alone.h").read_text() == "#include <cuda.h>\n"


def test_fixups_run_on_torch_hipify_output_under_its_names(tmp_path):
    """torch.utils.hipify renames csrc/cuda/utils.cuh to csrc/hip/utils.cuh; the fixups run on that file
    (with the tree-wide facts of the CUDA tree) and the findings name the original file."""
    from migrate import torch_ext
    hipified = SCATTER_UTILS.replace('"../extensions.h"', '"../extensions.h"  // hipified')
    (tmp_path / "csrc" / "hip").mkdir(parents=True)
    (tmp_path / "csrc" / "hip" / "utils.cuh").write_text(hipified)
    archs = [Arch("gfx942", "CDNA3", 64, 65536)]
    done = torch_ext.apply_fixups(
        {"csrc/cuda/utils.cuh": "csrc/hip/utils.cuh"}, {"csrc/cuda/utils.cuh": SCATTER_UTILS}, tmp_path,
        lambda part: advice.migrate_tree(part, rules.load_rules(), archs, tree_cuda={"utils.cuh": SCATTER_UTILS},
                                         pytorch_files=frozenset(part)))
    written = (tmp_path / "csrc" / "hip" / "utils.cuh").read_text()
    assert written == done.final["csrc/hip/utils.cuh"] and "ROCMIG_HALF_SHUFFLES" in written
    assert "(unsigned long long)(unsigned)(mask) << (__lane_id() & 32)" in written
    assert {f.file for f in done.findings["csrc/hip/utils.cuh"]} == {"csrc/cuda/utils.cuh"}


def _labeled_helpers() -> str:
    """The lane logic of rocmig_cg's labeled groups, as the fixup inserts it, in the emulator's C subset."""
    block = features.CG_REDUCE_BLOCK
    start = block.index("__device__ inline unsigned long long labeled_lanes")
    return block[start:block.index("struct labeled_group")]


# gsplat 1.5.3 (Projection2DGSFused.cu): a 32-lane tile split by a label, a reduction over each part,
# rank 0 of each part writes. Written with the labeled group's lane functions; the shuffles are its
# shfl_down / shfl methods.
LABELED = _labeled_helpers() + """
__global__ void labeled(const int* label, const int* x, int* sums, int* ranks) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  unsigned long long mask = labeled_lanes(__match_any((long long)label[i]), 32);
  unsigned int n = __popcll(mask), rank = labeled_rank(mask);
  int v = x[i];
  for (unsigned int d = 1; d < n; d *= 2) {
    unsigned int r = rank + d;
    int other = __shfl(v, r < n ? labeled_lane(mask, r) : (int)__lane_id(), warpSize);
    if (r < n) v = v + other;
  }
  sums[i] = __shfl(v, labeled_lane(mask, 0), warpSize);
  ranks[i] = rank;
}
"""


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_labeled_partition_groups_the_tiles_lanes_as_cuda_does(seed):
    """CUDA (Cooperative Groups, labeled_partition): the threads of the parent tile with the same label
    form a group, ranked in lane order; each group's sum reaches all its members. The reference is that
    definition over 32-lane warps; the helpers run on emulated wave64 (two tiles per wavefront) and wave32."""
    rng = random.Random(seed)
    n = 256
    labels = [rng.randint(0, 4) for _ in range(n)]
    xs = [rng.randint(-50, 50) for _ in range(n)]
    sums, ranks = [0] * n, [0] * n
    for w in range(0, n, 32):
        for i in range(w, w + 32):
            members = [j for j in range(w, w + 32) if labels[j] == labels[i]]
            sums[i], ranks[i] = sum(xs[j] for j in members), members.index(i)
    for wave in (64, 32):
        got = Machine(LABELED, "hip", wave).launch("labeled", 2, 128, [list(labels), list(xs), [0] * n, [0] * n])
        assert got[2:] == [sums, ranks], wave


def test_labeled_partition_rewritten_and_its_finding_closed():
    cuda = ("#include <cooperative_groups.h>\nnamespace cg = cooperative_groups;\n"
            "__global__ void k(const int* g, float* out, float v) {\n"
            "  auto warp = cg::tiled_partition<32>(cg::this_thread_block());\n"
            "  auto part = cg::labeled_partition(warp, g[threadIdx.x]);\n"
            "  v = cg::reduce(part, v, cg::plus<float>());\n"
            "  if (part.thread_rank() == 0) atomicAdd(out + g[threadIdx.x], v);\n}\n")
    migrated = advice.migrate_tree({"k.cu": (cuda, cuda)}, rules.load_rules(), [Arch("gfx942", "CDNA3", 64, 65536)])
    final = migrated.final["k.cu"]
    assert "auto part = rocmig_cg::labeled_partition(warp, g[threadIdx.x]);" in final
    assert final.count("#define ROCMIG_CG_REDUCE") == 1
    open_cg = [f for f in migrated.findings["k.cu"] if f.rule == "cooperative-groups-unsupported" and f.status == "open"]
    assert open_cg == [], open_cg
    assert [f for f in migrated.findings["k.cu"] if f.rule == advice.MIXED_RULE] == []


def test_cuda_version_gate_renamed_by_torch_hipify_stays_open():
    """gsplat 1.5.3's third_party/glm/glm/simd/platform.h: torch.utils.hipify turns `#elif CUDA_VERSION
    < 7000` into a TORCH_HIP_VERSION test, which fails the same way (glm's #error): the finding stays open."""
    cuda = "#elif defined(__CUDACC__)\n#\tif CUDA_VERSION >= 8000\n#\telif CUDA_VERSION < 7000\n#\terror \"GLM requires CUDA 7.0\"\n#\tendif\n"
    hip = cuda.replace("__CUDACC__", "__HIPCC__").replace("CUDA_VERSION", "TORCH_HIP_VERSION")
    migrated = advice.migrate_tree({"p.h": (cuda, hip)}, rules.load_rules(), [Arch("gfx942", "CDNA3", 64, 65536)])
    assert {(f.line, f.status) for f in migrated.findings["p.h"] if f.rule == "cuda-version-macro"} == {(2, "open"), (3, "open")}


def test_cuda_version_gate_through_a_tree_alias_is_found():
    """pycuda 2026.1's src/cpp/cuda.hpp: `#define CUDAPP_CUDA_VERSION CUDA_VERSION` (beside a
    CUDAPP_PRETEND_CUDA_VERSION branch), then `#if CUDAPP_CUDA_VERSION >= 4000` in another file: under
    hipcc the alias is 0 too, so its test is a CUDA version test; a name that does not come from a
    version macro is not."""
    header = ("#ifdef CUDAPP_PRETEND_CUDA_VERSION\n#define CUDAPP_CUDA_VERSION CUDAPP_PRETEND_CUDA_VERSION\n"
              "#else\n#define CUDAPP_CUDA_VERSION CUDA_VERSION\n#endif\n"
              "#define CUDAPP_AT_LEAST_4 (CUDAPP_CUDA_VERSION >= 4000)\n#define OTHER_VERSION 3\n")
    unit = ('#include "cuda.hpp"\n#if CUDAPP_CUDA_VERSION >= 4000\nint a;\n#endif\n'
            "#if CUDAPP_AT_LEAST_4\nint b;\n#endif\n#if OTHER_VERSION >= 2\nint c;\n#endif\n")
    migrated = advice.migrate_tree({"cuda.hpp": (header, header), "w.cpp": (unit, unit)}, rules.load_rules(),
                                   [Arch("gfx942", "CDNA3", 64, 65536)])
    assert [f.line for f in migrated.findings["w.cpp"] if f.rule == "cuda-version-macro"] == [2, 5]


GLM_PLATFORM = """// CUDA
#elif defined(__CUDACC__)
#\tif !defined(CUDA_VERSION) && !defined(GLM_FORCE_CUDA)
#\t\tinclude <cuda.h>  // make sure version is defined since nvcc does not define it itself!
#\tendif
#\tif defined(__CUDACC_RTC__)
#\t\tdefine GLM_COMPILER GLM_COMPILER_CUDA_RTC
#\telif CUDA_VERSION >= 8000
#\t\tdefine GLM_COMPILER GLM_COMPILER_CUDA80
#\telif CUDA_VERSION < 7000
#\t\terror "GLM requires CUDA 7.0 or higher"
#\tendif

// HIP
#elif defined(__HIP__)
#\tdefine GLM_COMPILER GLM_COMPILER_HIP

// Clang
#elif defined(__clang__)
#\tdefine GLM_COMPILER GLM_COMPILER_CLANG
#endif
"""


def _glm(hip_of):
    """glm 1.0's simd/platform.h compiler chain (as vendored by gsplat 1.5.3), from its Intel branch on."""
    cuda = "#if defined(__INTEL_COMPILER)\n#\tdefine GLM_COMPILER GLM_COMPILER_INTEL\n" + GLM_PLATFORM
    return cuda, hip_of(cuda)


@pytest.mark.parametrize("translator", [
    # torch.utils.hipify 2.14.1 (cuda_to_hip_mappings.py: __CUDACC__ -> __HIPCC__, CUDA_VERSION ->
    # TORCH_HIP_VERSION, cuda.h -> hip/hip_runtime.h)
    lambda t: t.replace("__CUDACC__", "__HIPCC__").replace("CUDA_VERSION", "TORCH_HIP_VERSION")
                .replace("<cuda.h>", "<hip/hip_runtime.h>"),
    # hipify-perl 7.2.4 (__CUDACC__ -> __HIPCC__, cuda.h -> hip/hip_runtime.h)
    lambda t: t.replace("__CUDACC__", "__HIPCC__").replace("<cuda.h>", "<hip/hip_runtime.h>"),
], ids=["torch.utils.hipify", "hipify-perl"])
def test_own_hip_branch_takes_glms_hip_branch_again(translator):
    """After the translators rename __CUDACC__, glm's CUDA branch claims hipcc (which defines __HIPCC__)
    and stops at its #error; the fixup puts the test back, so the chain reaches glm's own HIP branch, and
    the CUDA-version findings inside the CUDA branch are closed as not compiled on AMD."""
    cuda, hip = _glm(translator)
    assert "GLM_COMPILER_HIP" not in _live(hip)
    migrated = advice.migrate_tree({"glm/simd/platform.h": (cuda, hip)}, rules.load_rules(),
                                   [Arch("gfx942", "CDNA3", 64, 65536)])
    final = migrated.final["glm/simd/platform.h"]
    assert "#elif defined(__CUDACC__)" in final
    assert "<hip/hip_runtime.h>" in final  # the rest of the translation stays
    live = _live(final)
    assert "GLM_COMPILER_HIP" in live and "error" not in live and "GLM_COMPILER_CLANG" not in live
    assert [f.id for f in migrated.fixes["glm/simd/platform.h"]][:1] == ["own-hip-branch"]
    versions = [f for f in migrated.findings["glm/simd/platform.h"] if f.rule == "cuda-version-macro"]
    assert versions and all(f.status == "fixed" for f in versions), versions


def _live(text):
    """The lines hipcc compiles, conditionals left out: __HIP__ and __HIPCC__ defined, the rest not (the
    chain's branches test nothing else)."""
    from migrate import cpp
    blanked = cpp.blank(text)
    dead = cpp.dead_lines(blanked, frozenset({"__INTEL_COMPILER", "GLM_FORCE_CUDA", "__clang__"}) | cpp.HIPCC_UNDEFINED)
    return "\n".join(line for n, line in enumerate(text.split("\n"), 1) if n not in dead and not features.DIRECTIVE.match(line))


def test_own_hip_branch_leaves_chains_without_a_hip_branch():
    """`#ifdef __CUDACC__ ... #else ... #endif` is hipify's to translate: hipcc compiles the CUDA
    branch (as __HIPCC__); a chain that tests HIP first is already right."""
    cuda = ("#ifdef __CUDACC__\n#define HD __host__ __device__\n#else\n#define HD\n#endif\n"
            "#if defined(__HIP__)\n#define X 1\n#elif defined(__CUDACC__)\n#define X 2\n#endif\n")
    hip = cuda.replace("__CUDACC__", "__HIPCC__")
    migrated = advice.migrate_tree({"a.h": (cuda, hip)}, rules.load_rules(), [Arch("gfx942", "CDNA3", 64, 65536)])
    assert migrated.final["a.h"] == hip


def test_kernel_arguments_of_function_attribute_calls_become_const_void_pointers():
    """torch-harmonics 0.8.1 attention_cuda_utils.cu:120 `cudaFuncGetAttributes(&attrs, empty_k)` compiles
    with CUDA's template overload (cuda_runtime.h: `(const void*)entry`) and not with HIP 7.2, which has
    only `hipFuncGetAttributes(hipFuncAttributes*, const void*)`; the other attribute calls likewise."""
    cuda = ("__global__ void empty_k() {}\n"
            "static int getPtxver() {\n    cudaFuncAttributes attrs;\n"
            "    CHECK_CUDA(cudaFuncGetAttributes(&attrs, empty_k));\n    return attrs.ptxVersion*10;\n}\n"
            "void f(const void* p) {\n"
            "  cudaFuncSetAttribute(k<float, 4>, cudaFuncAttributeMaxDynamicSharedMemorySize,\n                       smem);\n"
            "  cudaFuncSetCacheConfig((const void*)k2, cudaFuncCachePreferShared);\n"
            "  cudaFuncGetAttributes(&a, p);\n"
            "  cudaFuncSetAttribute(ROCM_ONLY((void *)) k3, cudaFuncAttributeMaxDynamicSharedMemorySize, 0);\n"
            "  cudaFuncSetAttribute(pick((void *)p), cudaFuncAttributeMaxDynamicSharedMemorySize, 0);\n}\n")
    hip = '#include "hip/hip_runtime.h"\n' + cuda.replace("cuda", "hip")  # as hipify-perl writes it
    migrated = advice.migrate_tree({"u.cu": (cuda, hip)}, rules.load_rules(), [Arch("gfx942", "CDNA3", 64, 65536)])
    final = migrated.final["u.cu"].split("\n")[1:]
    assert final[3] == "    CHECK_CUDA(hipFuncGetAttributes(&attrs, reinterpret_cast<const void*>(empty_k)));"
    assert final[7] == "  hipFuncSetAttribute(reinterpret_cast<const void*>(k<float, 4>), hipFuncAttributeMaxDynamicSharedMemorySize,"
    assert final[8] == "                       smem);"
    assert final[9] == "  hipFuncSetCacheConfig((const void*)k2, hipFuncCachePreferShared);"
    assert final[10] == "  hipFuncGetAttributes(&a, reinterpret_cast<const void*>(p));"
    # a macro that expands to the cast is a cast already; a call that takes a void* is not
    assert final[11] == "  hipFuncSetAttribute(ROCM_ONLY((void *)) k3, hipFuncAttributeMaxDynamicSharedMemorySize, 0);"
    assert final[12] == "  hipFuncSetAttribute(reinterpret_cast<const void*>(pick((void *)p)), hipFuncAttributeMaxDynamicSharedMemorySize, 0);"
    assert "func-pointer-cast" in [f.id for f in migrated.fixes["u.cu"]]


def test_out_pointer_arguments_get_the_cast_cudas_template_overloads_make():
    """CUDA by Example (chapter11/portable.cu) and a course's zeroCopyAllocation.cu pass `&dev_a` (an int**)
    to cudaHostGetDevicePointer, which cuda_runtime.h's `template<class T>` overload casts to void**;
    HIP 7.2 declares only `hipHostGetDevicePointer(void**, void*, unsigned int)`."""
    cuda = ("    HANDLE_ERROR( cudaHostGetDevicePointer( &dev_a, a, 0 ) );\n"
            "    CHECK_CUDA(cudaHostGetDevicePointer(&d_b, h_b, 0));\n"
            "    cudaHostGetDevicePointer((void**)&d_c, h_c, 0);\n"
            "    cudaMallocHost(&host, n * sizeof(float));\n"
            "    cudaHostGetDevicePointer(reinterpret_cast<void**>(&d_d), h_d, 0);\n")
    hip = cuda.replace("cudaMallocHost", "hipMallocHost").replace("cuda", "hip")
    migrated = advice.migrate_tree({"u.cu": (cuda, hip)}, rules.load_rules(), [Arch("gfx942", "CDNA3", 64, 65536)])
    final = migrated.final["u.cu"].split("\n")
    assert final[0] == "    HANDLE_ERROR( hipHostGetDevicePointer( (void**)(&dev_a), a, 0 ) );"
    assert final[1] == "    CHECK_CUDA(hipHostGetDevicePointer((void**)(&d_b), h_b, 0));"
    assert final[2] == "    hipHostGetDevicePointer((void**)&d_c, h_c, 0);"
    assert final[3] == "    hipMallocHost((void**)(&host), n * sizeof(float));"
    assert final[4] == "    hipHostGetDevicePointer(reinterpret_cast<void**>(&d_d), h_d, 0);"
    assert "out-pointer-cast" in [f.id for f in migrated.fixes["u.cu"]]


def test_dispatch_on_the_deprecated_type_becomes_scalar_type():
    """AutoGPTQ 0.7.1 autogptq_cuda_kernel_64.cu:271 `AT_DISPATCH_FLOATING_TYPES(vec.type(), ...)`: PyTorch
    2.x has no conversion from Tensor::type()'s DeprecatedTypeProperties to ScalarType."""
    cuda = ("#include <torch/extension.h>\n"
            "void f(torch::Tensor vec, torch::Tensor out) {\n"
            "  AT_DISPATCH_FLOATING_TYPES(\n    vec.type(), \"vecquant2matmul_cuda\", ([&] {\n      g(out.type());\n    })\n  );\n"
            "  AT_DISPATCH_FLOATING_TYPES_AND_HALF(vec.scalar_type(), \"k\", ([&] {}));\n"
            "  auto t = vec.type();\n"
            "  AT_DISPATCH_FLOATING_TYPES_AND(at::ScalarType::BFloat16, input->type(), \"k\", ([&] {}));\n}\n")
    migrated = advice.migrate_tree({"u.cu": (cuda, cuda)}, rules.load_rules(), [Arch("gfx942", "CDNA3", 64, 65536)],
                                   pytorch_files=frozenset({"u.cu"}))
    final = migrated.final["u.cu"].split("\n")
    assert final[3] == "    vec.scalar_type(), \"vecquant2matmul_cuda\", ([&] {"
    assert final[4] == "      g(out.type());"  # not a dispatch argument
    assert final[7] == "  AT_DISPATCH_FLOATING_TYPES_AND_HALF(vec.scalar_type(), \"k\", ([&] {}));"
    assert final[8] == "  auto t = vec.type();"
    assert final[9] == "  AT_DISPATCH_FLOATING_TYPES_AND(at::ScalarType::BFloat16, input->scalar_type(), \"k\", ([&] {}));"
    assert "dispatch-scalar-type" in [f.id for f in migrated.fixes["u.cu"]]
    # outside a PyTorch extension nothing changes
    plain = advice.migrate_tree({"u.cu": (cuda, cuda)}, rules.load_rules(), [Arch("gfx942", "CDNA3", 64, 65536)])
    assert "vec.type(), \"vecquant2matmul_cuda\"" in plain.final["u.cu"]


def test_event_create_with_flags_takes_cudas_overload():
    # CUDA samples simpleIPC.cu: cudaEventCreate(&event, cudaEventDisableTiming | cudaEventInterprocess)
    text = ("hipEventCreate(&start);\ncheck(hipEventCreate(&ev[i], hipEventDisableTiming | hipEventInterprocess));\n"
            "hipEventCreateWithFlags(&e, 0);\n")
    assert features.event_create_flags(text) == (
        "hipEventCreate(&start);\ncheck(hipEventCreateWithFlags(&ev[i], hipEventDisableTiming | hipEventInterprocess));\n"
        "hipEventCreateWithFlags(&e, 0);\n")


def test_cuda_arch_choice_of_host_device_qualifiers_is_taken_under_hipcc():
    """fast_rnnt 1.3's mutual_information.h: FT_CUDA_HOSTDEV is `__host__ __device__` under __CUDA_ARCH__ and
    empty otherwise; hipcc never defines __CUDA_ARCH__, so the test also takes __HIP__. A branch that
    defines only __device__, an #else with __device__, other names, or more than #defines stay as they are."""
    text = ("#ifdef __CUDA_ARCH__\n#define FT_CUDA_HOSTDEV __host__ __device__\n#else\n#define FT_CUDA_HOSTDEV\n#endif\n"
            "FT_CUDA_HOSTDEV inline float f(float x) { return x; }\n")
    out = features.cuda_arch_hostdev(text)
    assert out == text.replace("#ifdef __CUDA_ARCH__", "#if defined(__CUDA_ARCH__) || defined(__HIP__)")
    spaced = text.replace("#ifdef __CUDA_ARCH__", "# if defined( __CUDA_ARCH__ )").replace("#else", "# else  // host")
    assert features.cuda_arch_hostdev(spaced).startswith("#if defined(__CUDA_ARCH__) || defined(__HIP__)\n")
    for kept in (text.replace("__host__ __device__", "__device__"),
                 text.replace("#define FT_CUDA_HOSTDEV\n", "#define FT_CUDA_HOSTDEV __device__\n"),
                 text.replace("#define FT_CUDA_HOSTDEV\n", "#define OTHER\n"),
                 text.replace("#else\n", "int x;\n#else\n"),
                 text.replace("#ifdef __CUDA_ARCH__", "#if __CUDA_ARCH__ >= 800")):
        assert features.cuda_arch_hostdev(kept) == kept


def test_runtime_included_inside_extern_c_comes_first_too():
    """Rodinia's b+tree util/cuda/cuda.cu includes cuda.h inside `extern "C" {`: nvcc's implicit cuda_runtime.h
    made that a no-op; HIP's headers hold templates ("templates must have C++ linkage"), so the unit gets
    hip_runtime.h first. A closed block, or one in a comment, leaves the unit as it is."""
    inside = '#include <stdio.h>\n#ifdef __cplusplus\nextern "C" {\n#endif\n#include "hip/hip_runtime.h"\nvoid f(void);\n}\n'
    out = features.nvcc_implicit_runtime(inside, lambda _name: False)
    assert out.startswith("#include <hip/hip_runtime.h>") and out.endswith(inside)
    for kept in ('extern "C" { void g(void); }\n#include "hip/hip_runtime.h"\n',
                 '// extern "C" {\n#include "hip/hip_runtime.h"\n'):
        assert features.nvcc_implicit_runtime(kept, lambda _name: False) == kept


def test_grid_constant_is_dropped():
    # CUDA samples LargeKernelParameter.cu
    text = "__global__ void kernelLargeParam(__grid_constant__ const param_large_t p, int *result) {}\n"
    assert features.grid_constant(text) == "__global__ void kernelLargeParam(const param_large_t p, int *result) {}\n"


def test_cuda_integer_min_max_get_cudas_definitions():
    # CUDA samples mergeSort.cu: `uint newPos = umin(pos + stride, L);`
    text = "#include <hip/hip_runtime.h>\n__device__ uint f(uint a, uint b) { return umin(a, b) + ullmax(1ull, 2ull); }\n"
    out = features.int_minmax(text)
    assert "static inline __host__ __device__ unsigned int umin(unsigned int a, unsigned int b) { return a < b ? a : b; }" in out
    assert "unsigned long long int ullmax(unsigned long long int a, unsigned long long int b) { return a > b ? a : b; }" in out
    assert out.index("umin(unsigned") < out.index("__device__ uint f") and "umax(" not in out
    own = "#define umin(a, b) ((a) < (b) ? (a) : (b))\n__device__ int g() { return umin(1, 2); }\n"
    assert features.int_minmax(own) == own
    mine = "static __device__ unsigned int umin(unsigned int a, unsigned int b);\nint x = umin(1, 2);\n"
    assert features.int_minmax(mine) == mine


def test_mixed_sign_min_max_get_cudas_unsigned_overloads():
    # llm.c dev/cuda/softmax_forward.cu indexes with min(int, unsigned): CUDA returns unsigned int,
    # HIP's promoting template double ("array subscript is not an integer")
    text = ("#include <hip/hip_runtime.h>\n"
            "__global__ void k(float* x, int i, unsigned n) { x[min(i, n - 1)] = max(1.0f, x[0]); }\n")
    out = features.mixed_minmax(text)
    assert ("__device__ static constexpr inline unsigned int (min)(int a, unsigned int b) "
            "{ return (unsigned int)a < (unsigned int)b ? (unsigned int)a : (unsigned int)b; }") in out
    assert "unsigned long long int (max)(unsigned long long int a, long long int b)" in out
    assert out.index("ROCMIG_MIXED_MIN_MAX") < out.index("__global__ void k") and out.count("(min)(") == 6
    host = "#include <algorithm>\nint f(int a, int b) { return min(a, b); }\n"
    assert features.mixed_minmax(host) == host
    qualified = "__device__ int g(int a, int b) { return std::min(a, b) + v.max() + ::max(a, b); }\n"
    assert features.mixed_minmax(qualified) == qualified
    macro = "#define min(a, b) ((a) < (b) ? (a) : (b))\n__device__ int g(int a, int b) { return min(a, b); }\n"
    assert features.mixed_minmax(macro) == macro
    own = "__device__ unsigned min(int a, unsigned b) { return 0; }\n__device__ int g() { return min(1, 2u); }\n"
    assert features.mixed_minmax(own) == own


def test_half_atomic_add_gets_cas_overloads_under_the_header_guards():
    # llm.c dev/cuda/layernorm_backward.cu: atomicAdd(__nv_bfloat162*, __nv_bfloat162), which HIP lacks
    text = ("#include <hip/hip_runtime.h>\n#include <hip/hip_bf16.h>\n"
            "__global__ void k(__hip_bfloat162* p, __hip_bfloat162 v) { atomicAdd(p, v); }\n")
    out = features.half_atomic_add(text)
    assert "#if defined(_HIP_INCLUDE_HIP_AMD_DETAIL_HIP_BF16_H_) && !defined(ROCMIG_ATOMIC_ADD_HIP_BFLOAT16)" in out
    assert "#if defined(HIP_INCLUDE_HIP_AMD_DETAIL_HIP_FP16_H) && !defined(ROCMIG_ATOMIC_ADD_HALF)" in out
    assert "__host__ __device__ static inline __hip_bfloat162 atomicAdd(__hip_bfloat162* address, __hip_bfloat162 val)" in out
    assert "want = (old & ~(0xffffu << shift)) | ((unsigned int)sum << shift);" in out
    assert out.index("ROCMIG_ATOMIC_ADD_HALF") < out.index("__global__ void k")
    # an old-arch fallback of the project's own keeps its type; no atomicAdd call, no change
    own = ("__device__ __half atomicAdd(__half* a, __half v) { return v; }\n"
           "__global__ void k(__half* p) { atomicAdd(p, __half(1)); }\n")
    out = features.half_atomic_add(own)
    assert "ROCMIG_ATOMIC_ADD_HALF" not in out and "ROCMIG_ATOMIC_ADD_HIP_BFLOAT16" in out
    plain = "__global__ void k(float* p) { p[0] += 1.f; atomicAdd(p, 1.f); }\n"
    assert features.half_atomic_add(plain) == plain
    header = "#include <hip/hip_bf16.h>\ntypedef __hip_bfloat16 floatX;\n"
    assert features.half_atomic_add(header) == header


def test_a_half_atomic_add_the_tree_declares_in_another_file_is_kept():
    """gptqmodel 7.7.0: exllamav2/cuda/compat.cuh declares `__device__ void atomicAdd(half2* address, half2
    val)` under USE_ROCM; q_gemm_kernel.cuh, which calls atomicAdd(out, result01), got a second
    overload of the same parameters ("cannot overload __device__ function 'atomicAdd'")."""
    compat = ("#if defined(__CUDA_ARCH__) || defined(USE_ROCM)\n"
              "__device__ __forceinline__ void atomicAdd(half* address, half val) { atomicAdd_half(address, val); }\n"
              "__device__ __forceinline__ void atomicAdd(half2* address, half2 val) { atomicAdd_half2(address, val); }\n"
              "#endif\n")
    kernel = ('#include "compat.cuh"\n#include <hip/hip_fp16.h>\n'
              "__global__ void k(half2* out, half2 result01) { atomicAdd(out, result01); }\n")
    declared = features.half_atomics_declared([cpp.blank(compat), cpp.blank(kernel)])
    assert declared == {"__half"}
    out = features.half_atomic_add(kernel, declared)
    assert "ROCMIG_ATOMIC_ADD_HALF" not in out and "ROCMIG_ATOMIC_ADD_HIP_BFLOAT16" in out
    migrated = advice.migrate_tree({"compat.cuh": (compat, compat), "q_gemm_kernel.cuh": (kernel, kernel)},
                                   rules.load_rules(), [Arch("gfx942", "CDNA3", 64, 65536)])
    assert "ROCMIG_ATOMIC_ADD_HALF" not in migrated.final["q_gemm_kernel.cuh"]


def test_a_half_atomic_add_declared_where_a_unit_never_looks_is_not_its_own():
    """gptqmodel 7.7.0: exllamav2's compat.cuh declares atomicAdd(half2*, half2) for exllamav2's units;
    marlin/marlin_template.h (a unit of another extension, which never includes it) calls
    atomicAdd(&C_half2[a], ...) and needs the CAS overloads ("no matching function for call to 'atomicAdd'")."""
    compat = "__device__ __forceinline__ void atomicAdd(half2* address, half2 val) { atomicAdd_half2(address, val); }\n"
    kernel = '#include "compat.cuh"\n#include <hip/hip_fp16.h>\n__global__ void k(half2* o, half2 v) { atomicAdd(o, v); }\n'
    marlin = "#include <hip/hip_fp16.h>\n__global__ void m(half2* c, half2 v) { atomicAdd(&c[0], v); }\n"
    migrated = advice.migrate_tree({"exllamav2/compat.cuh": (compat, compat), "exllamav2/q_gemm.cu": (kernel, kernel),
                                    "marlin/marlin.cu": (marlin, marlin)},
                                   rules.load_rules(), [Arch("gfx942", "CDNA3", 64, 65536)])
    assert "ROCMIG_ATOMIC_ADD_HALF" not in migrated.final["exllamav2/q_gemm.cu"]
    assert "ROCMIG_ATOMIC_ADD_HALF" in migrated.final["marlin/marlin.cu"]


def test_merged_error_overloads_keep_the_first_definition():
    # the CUDA samples' helper_cuda.h after hipify: _cudaGetErrorEnum(cudaError_t) and, under
    # CUDA_DRIVER_API, _cudaGetErrorEnum(CUresult) both take hipError_t
    text = ("#ifdef HIP_INCLUDE_HIP_DRIVER_TYPES_H\n"
            "static const char *_cudaGetErrorEnum(hipError_t error) {\n  return hipGetErrorName(error);\n}\n#endif\n"
            "#ifdef CUDA_DRIVER_API\n// CUDA Driver API errors\nstatic const char *\n_cudaGetErrorEnum(hipError_t error) {\n"
            "  const char *ret = NULL;\n  if (error) { hipDrvGetErrorName(error, &ret); }\n  return ret;\n}\n#endif\n"
            "void f(hipError_t e) { if (e) { } }\n")
    out = features.merged_error_overloads(text)
    lines = out.splitlines()
    define = lines.index("#define ROCMIG_DEFINED__cudaGetErrorEnum_HIPERROR")
    guard = lines.index("#ifndef ROCMIG_DEFINED__cudaGetErrorEnum_HIPERROR")
    assert lines[define - 1] == "}" and lines[guard + 1] == "static const char *" and lines[guard - 1] == "// CUDA Driver API errors"
    assert lines[lines.index("  return ret;") + 2] == "#endif" and out.count("#endif") == 3
    # one definition per name (and control statements) is left as it is
    assert features.merged_error_overloads(text.split("#ifdef CUDA_DRIVER_API")[0]) == text.split("#ifdef CUDA_DRIVER_API")[0]


def test_cuda_gl_interop_headers_become_hips():
    # CUDA samples simpleCUDA2GL/main.cpp and boxFilter.cpp
    text = '#include <GL/freeglut.h>\n#include <cuda_gl_interop.h>\n#include "cudaGL.h"\n'
    assert features.gl_interop(text) == '#include <GL/freeglut.h>\n#include <hip/hip_gl_interop.h>\n#include <hip/hip_gl_interop.h>\n'


def test_struct_before_a_hip_typedef_name_is_dropped():
    # CUDA samples simpleCUDA2GL/main.cpp: struct cudaGraphicsResource *cuda_pbo_resource;
    text = "struct hipGraphicsResource *cuda_pbo_resource;\nstruct hipDeviceProp_t p; // struct hipUUID\n"
    assert features.struct_typedef(text) == "hipGraphicsResource *cuda_pbo_resource;\nstruct hipDeviceProp_t p; // struct hipUUID\n"


def test_graphics_map_flags_become_hips_register_flags():
    # CUDA samples boxFilter.cpp: cudaGraphicsGLRegisterBuffer(&res, pbo, cudaGraphicsMapFlagsWriteDiscard)
    text = "hipGraphicsGLRegisterBuffer(&r, pbo, cudaGraphicsMapFlagsWriteDiscard); f(cudaGraphicsMapFlagsNone);\n"
    assert features.graphics_map_flags(text) == ("hipGraphicsGLRegisterBuffer(&r, pbo, hipGraphicsRegisterFlagsWriteDiscard); "
                                                 "f(hipGraphicsRegisterFlagsNone);\n")


def test_cache_hinted_loads_and_stores_become_plain_ones():
    # llm.c llmc/cuda_common.h: Packed128 loads and stores through __ldcs / __stcs on int4
    text = ("#include <hip/hip_runtime.h>\n"
            "template<class T> __device__ P<T> load128cs(const T* a) { return P<T>{__ldcs(reinterpret_cast<const int4*>(a))}; }\n"
            "__device__ void st(float* p, float v) { __stcs(p, v); __stwt(p, __ldcg(p)); }\n")
    out = features.cache_hints(text)
    assert "rocmig_cache_load(reinterpret_cast<const int4*>(a))" in out
    assert "rocmig_cache_store(p, v); rocmig_cache_store(p, rocmig_cache_load(p));" in out
    assert "__ldcs" not in out and out.count("ROCMIG_CACHE_HINTS") == 2
    own = "__device__ inline bf16 __ldcs(const bf16* p) { return *p; }\n__device__ bf16 f(const bf16* p) { return __ldcs(p); }\n"
    assert "__device__ inline bf16 rocmig_cache_load(const bf16* p)" in features.cache_hints(own)
    macro = "#define __ldcs(p) (*(p))\n__device__ float f(const float* p) { return __ldcs(p); }\n"
    assert features.cache_hints(macro) == macro
    assert features.cache_hints("__device__ float f(const float* p) { return __ldcv(p); }\n").count("__ldcv") == 1


def test_cache_hints_keep_values_in_hip(tmp_path):
    """The helpers compile for the host with g++ (their bodies are plain C++) and keep every value."""
    import shutil
    import subprocess
    if not shutil.which("g++"):
        pytest.skip("no g++")
    body = features.CACHE_HINT_HELPERS.replace("__device__ ", "")
    src = tmp_path / "t.cpp"
    src.write_text(body + "#include <cstdio>\nstruct int4 { int x, y, z, w; };\nint main() {\n"
                   "  int4 a{1, -2, 3, 2147483647}, b{};\n  rocmig_cache_store(&b, rocmig_cache_load(&a));\n"
                   "  return (b.x == 1 && b.y == -2 && b.z == 3 && b.w == 2147483647) ? 0 : 1;\n}\n")
    subprocess.run(["g++", "-std=c++17", str(src), "-o", str(tmp_path / "t")], check=True)
    assert subprocess.run([str(tmp_path / "t")]).returncode == 0


def test_nvtx_cuda_runtime_header_and_generic_names():
    # llm.c llmc/cuda_common.h includes both NVTX headers; zero.cuh names its streams
    text = "#include <nvtx3/nvToolsExt.h>\n#include <nvtx3/nvToolsExtCudaRt.h>\nvoid f(hipStream_t s) { nvtxRangePush(\"x\"); nvtxNameCudaStreamA(s, \"main\"); }\n"
    out = features.nvtx(text)
    assert out.count("#define nvtxNameCudaStreamA(stream, name)") == 1 and "<nvtx3/nvToolsExtCudaRt.h>: in the NVTX block above" in out
    assert "#define nvtxRangePush(name) nvtxRangePushA(name)" in out and "#include <nvtx3" not in out


def test_nvtx_beyond_ranges_keeps_nvidias_header_only_nvtx3():
    # MinkowskiEngine 0.5.4 src/3rdparty/cudf/detail/nvtx/nvtx3.hpp (cudf's copy of NVIDIA's C++ API) and a
    # user of its domains; torch.utils.hipify turned the include into <nvtx3/roctracer/roctx.h>
    cuda = ("#include <nvtx3/nvToolsExt.h>\n#include <nvToolsExtCudaRt.h>\nnamespace nvtx3 {\n"
            "inline nvtxDomainHandle_t make() { return nvtxDomainCreateA(\"cudf\"); }\n}\n")
    torch = cuda.replace("nvtx3/nvToolsExt.h", "nvtx3/roctracer/roctx.h")
    out = features.nvtx(torch, cuda)
    assert out.startswith("#include <nvtx3/nvToolsExt.h>\n// nvToolsExtCudaRt.h / nvToolsExtCuda.h name CUDA objects")
    assert "roctx" not in out and "nvtxDomainCreateA" in out
    assert features.nvtx(cuda) == out  # the same from hipify-perl's text, which keeps NVTX's names
    # a torch translation whose simple calls hipify renamed to roctx's keeps roctx beside NVTX 3
    renamed = torch.replace("return nvtxDomainCreateA", "roctxRangePushA(\"x\"); return nvtxDomainCreateA")
    assert features.nvtx(renamed, cuda).startswith("#include <nvtx3/nvToolsExt.h>\n#include <roctracer/roctx.h>\n")
    # the C++ header itself; a project's own roctx include (no NVTX in its CUDA text) is left
    assert features.nvtx('#include "nvtx3/nvtx3.hpp"\nnvtx3::thread_range r{"x"};\n').startswith("#include <nvtx3/nvtx3.hpp>\n")
    own = "#include <roctracer/roctx.h>\nvoid f() { roctxMarkA(\"x\"); }\n"
    assert features.nvtx(own, own) == own
    # nvtx3.hpp's own text names nvtx3.hpp; its include of the C header is still the C header
    named = "// nvtx3.hpp: NVTX's C++ API\n" + cuda
    assert features.nvtx(named.replace("nvtx3/nvToolsExt.h", "nvtx3/roctracer/roctx.h"), named).split("\n")[1] == \
        "#include <nvtx3/nvToolsExt.h>"


def test_bf16_round_to_nearest_conversion_takes_hips_name():
    # llm.c llmc/cuda_utils.cuh: `__nv_bfloat16 r = __float2bfloat16_rn(v);`
    text = "__device__ __hip_bfloat16 f(float v) { return __float2bfloat16_rn(v) + __float2bfloat16_rn (2.0f); }\n"
    assert features.bf16_rn(text) == "__device__ __hip_bfloat16 f(float v) { return __float2bfloat16(v) + __float2bfloat16 (2.0f); }\n"
    own = "__device__ bf16 __float2bfloat16_rn(float x) { return bf16(x); }\nbf16 y = __float2bfloat16_rn(1.0f);\n"
    assert features.bf16_rn(own) == own


def test_vector_functions_header_becomes_hips_runtime_header():
    # CUDA samples (2_Concepts_and_Techniques): `#include <vector_functions.h>` for make_float4, and
    # particles/particleSystem.h's quoted "vector_functions.h"; a project's own header of that name is left
    text = '#include <vector_functions.h>\n#include "vector_functions.h"\n'
    assert features.builtin_types(text) == '#include <hip/hip_runtime.h>\n#include <hip/hip_runtime.h>\n'
    assert features.builtin_types(text, lambda name: True) == '#include <hip/hip_runtime.h>\n#include "vector_functions.h"\n'


def test_hipify_perl_cast_that_ends_inside_template_arguments_is_redone():
    # optimum-quanto 0.2.7 marlin_cuda_kernel.cu: hipify-perl 7.2 closes its const void* cast at the
    # first comma of Marlin<...>'s template arguments
    hip = ("    hipFuncSetAttribute(reinterpret_cast<const void*>( \\\n"
           "      Marlin<THREADS), THREAD_M_BLOCKS, STAGES, GROUP_BLOCKS>, \\\n"
           "      hipFuncAttributeMaxDynamicSharedMemorySize, SHARED_MEM);\n")
    out = features.func_pointer_cast(hip)
    assert "Marlin<THREADS, THREAD_M_BLOCKS, STAGES, GROUP_BLOCKS>)" in out
    assert out.count("reinterpret_cast<const void*>") == 1
    fine = "hipFuncSetAttribute(reinterpret_cast<const void*>(k<float, 4>), hipFuncAttributeMaxDynamicSharedMemorySize, n);\n"
    assert features.func_pointer_cast(fine) == fine


def test_hip_header_macros_undone_where_the_file_uses_the_name():
    # optimum-quanto 0.2.7 marlin/fp8_marlin.cu against HIP 7.2's amd_device_functions.h `#define MASK1 0x00ff00ff`
    hip = ("#include <hip/hip_runtime.h>\n__device__ int f() {\n  constexpr int MASK1 = 0x80000000;\n"
           "  constexpr int MASK2 = MASK1 >> 7;\n  return MASK2;\n}\n")
    out = features.hip_macros_undone(hip, frozenset({"MASK1", "MASK2", "HW_ID"}))
    assert "#undef MASK1\n#undef MASK2\n" in out and "HW_ID" not in out
    assert out.index("#include <hip/hip_runtime.h>") < out.index("#undef MASK1") < out.index("__device__ int f()")
    assert features.hip_macros_undone(hip, frozenset({"HW_ID"})) == hip


def test_helpers_go_inside_an_include_guard_below_a_translator_include():
    # optimum-quanto 0.2.7 marlin_cuda_kernel.cu after hipify: hip_runtime.h above the file's own guard
    text = ('#include "hip/hip_runtime.h"\n/* license */\n#ifndef MARLIN_CUDA_KERNEL_CUH\n#define MARLIN_CUDA_KERNEL_CUH\n'
            "#include <hip/hip_fp16.h>\n__device__ void f() { use(); }\n#endif\n")
    out = features.insert_after_includes(text, "// block\n")
    assert out.index("#include <hip/hip_fp16.h>") < out.index("// block") < out.index("__device__ void f()")


def test_bf16_pair_conversions_become_helpers_unless_the_file_has_them():
    # optimum-quanto 0.2.7 marlin/fp8_marlin.cu
    hip = "#include <hip/hip_bf16.h>\n__device__ void f(float s, __hip_bfloat162* o) { o[0] = __float2bfloat162_rn(s); o[1] = __floats2bfloat162_rn(s, 2.f); }\n"
    out = features.bf16_pairs(hip)
    assert "o[0] = rocmig_float2bfloat162_rn(s); o[1] = rocmig_floats2bfloat162_rn(s, 2.f);" in out
    assert out.count("#define ROCMIG_BF16_PAIRS") == 1
    # DeepSpeed 0.19.8's conversion_utils.h includes cuda_bf16.h only under BF16_AVAILABLE: without it the
    # helpers must not name __hip_bfloat162 ("unknown type name"), so they sit under hip_bf16.h's guard
    assert "defined(_HIP_INCLUDE_HIP_AMD_DETAIL_HIP_BF16_H_)" in out.split("rocmig_float2bfloat162_rn(float a)")[0]
    own = "__device__ __hip_bfloat162 __float2bfloat162_rn(float x) { return y; }\n__device__ void g() { __float2bfloat162_rn(1.f); }\n"
    assert features.bf16_pairs(own) == own


def test_half2_min_max_get_cudas_definitions_and_other_types_hips():
    # gptqmodel 7.7.0 qqq/qqq_gemm.cu clamps half2 values; HIP 7.2 declares __hmax2 / __hmin2 for bf16 only
    hip = ("#include <hip/hip_fp16.h>\n__device__ half2 clamp(half2 t, half2 lo, half2 hi) {\n"
           "  return __hmin2(__hmax2(t, lo), hi);\n}\n")
    out = features.half2_minmax(hip, ptx.helpers_for)
    assert "return rocmig_hmin2(rocmig_hmax2(t, lo), hi);" in out
    assert "template <class T> __host__ __device__ inline T rocmig_hmax2(T a, T b) { return __hmax2(a, b); }" in out
    assert out.count("#define ROCMIG_PTX_HELPERS") == 1 and out.count("#define ROCMIG_HALF2_MINMAX") == 1
    # only the helpers the overloads call: h2minmax and the hminmax it uses, not the whole header
    assert "#define ROCMIG_PTX_h2minmax" in out and "#define ROCMIG_PTX_hminmax" in out and "mma_16bit" not in out
    own = "__device__ half2 __hmax2(const half2 a, const half2 b) { return a; }\n__device__ half2 f(half2 x) { return __hmax2(x, x); }\n"
    assert features.half2_minmax(own, ptx.helpers_for) == own


def test_half2_min_max_goes_below_helpers_the_file_already_has():
    # gptqmodel 7.7.0 qqq_gemm.cu: ptx-inline-asm inserted the helpers first, the overloads use them
    helpers = ptx.helpers_for("rocmig_ptx::lop3(a, b, c, 0x96)", "")
    hip = "#include <hip/hip_fp16.h>\n" + helpers + "__device__ half2 f(half2 a, half2 b) { return __hmax2(a, b); }\n"
    out = features.half2_minmax(hip, ptx.helpers_for)
    assert out.count("#define ROCMIG_PTX_HELPERS") == 1 and out.count("#define ROCMIG_PTX_lop3") == 1
    # the helpers the overloads add come below the file's block, then the overloads
    assert out.index("#define ROCMIG_PTX_lop3") < out.index("#define ROCMIG_PTX_h2minmax") < \
        out.index("#define ROCMIG_HALF2_MINMAX") < out.index("__device__ half2 f")


def test_plain_shuffles_of_bf16_pairs_get_overloads_and_gemm_ex_compute_types_are_compute_types():
    # gptqmodel 7.7.0 swordfish: the warp rewrite's __shfl(pair, src, 32) on __hip_bfloat162, and
    # hipblasGemmEx(..., HIP_R_32F, HIPBLAS_GEMM_DEFAULT) with hipBLAS 3's hipblasComputeType_t
    text = ("#include <hip/hip_bf16.h>\ntemplate <class T2> __device__ T2 pick(T2 v) { return __shfl(v, 3, 32); }\n"
            "__device__ __hip_bfloat162 f(__hip_bfloat162 v) { return pick(v); }\n")
    out = features.bf16x2_shuffles(text, pytorch=False)
    assert "__device__ inline __hip_bfloat162 __shfl_xor(__hip_bfloat162 v, int lane_mask, int width = warpSize)" in out
    assert out.index("#define ROCMIG_BF16X2_SHUFFLES") > out.index("#include <hip/hip_bf16.h>")
    assert features.bf16x2_shuffles("__device__ int g(int v) { return __shfl(v, 0); }\n", pytorch=False).count("ROCMIG") == 0
    gemm = ("  CHECK(hipblasGemmEx(\n      handle, HIPBLAS_OP_N, HIPBLAS_OP_N, n, m, k, &alpha, w, ct, n, a, ct,\n"
            "      k, &beta, c, ct, n, HIP_R_32F, HIPBLAS_GEMM_DEFAULT));\n")
    assert features.gemm_ex_compute_type(gemm) == gemm.replace("HIP_R_32F,", "HIPBLAS_COMPUTE_32F,")
    already = gemm.replace("HIP_R_32F,", "HIPBLAS_COMPUTE_32F_FAST_TF32,")
    assert features.gemm_ex_compute_type(already) == already


def test_gemm_ex_compute_type_given_by_an_expression_goes_through_the_typed_helper():
    # rwkv 0.8.32 gemm_fp16_cublas.cpp: `const auto compute_type = CUDA_R_32F;` passed as the compute type
    text = ("#include <hipblas/hipblas.h>\n#include <torch/extension.h>\n\nvoid g(hipblasHandle_t h) {\n"
            "  const auto compute_type = HIP_R_32F;\n"
            "  hipblasGemmEx(h, HIPBLAS_OP_N, HIPBLAS_OP_N, 1, 1, 1, &a, x, HIP_R_16F, 1, y, HIP_R_16F, 1, &b, z,\n"
            "      HIP_R_16F, 1, compute_type, algo);\n"
            "  hipblasGemmStridedBatchedEx(h, HIPBLAS_OP_N, HIPBLAS_OP_N, 1, 1, 1, &a, x, t, 1, 1, y, t, 1, 1, &b, z,\n"
            "      t, 1, 1, n, half ? HIP_R_16F : HIP_R_32F, algo);\n}\n")
    out = features.gemm_ex_compute_type(text)
    assert "1, rocmig_gemm_compute_type(compute_type), algo);" in out
    assert "n, rocmig_gemm_compute_type(half ? HIP_R_16F : HIP_R_32F), algo);" in out
    assert out.count("#define ROCMIG_GEMM_COMPUTE_TYPE") == 1
    assert out.index("#include <torch/extension.h>") < out.index("ROCMIG_GEMM_COMPUTE_TYPE") < out.index("void g(")
    assert "case HIP_R_32F: case HIP_C_32F: return HIPBLAS_COMPUTE_32F;" in out
    assert features.gemm_ex_compute_type(out) == out
    literal = text.replace("compute_type, algo", "HIP_C_64F, algo")
    assert "HIPBLAS_COMPUTE_64F, algo" in features.gemm_ex_compute_type(literal)


def test_cuda_typedefs_header_becomes_the_runtime_header_unless_its_pfn_typedefs_are_used():
    # marlin-kernels 0.1.0 marlin/sparse/common/mma.h includes it for CUDA_VERSION (through cuda.h)
    text = '#pragma once\n#include "base.h"\n#include <cudaTypedefs.h>\n'
    assert features.builtin_types(text) == '#pragma once\n#include "base.h"\n#include <hip/hip_runtime.h>\n'
    used = text + "static PFN_cuTensorMapEncodeTiled_v12000 encode;\n"
    assert features.builtin_types(used) == used


def test_cuda_fp16_half_aliases_become_the_half_types():
    # vLLM 0.34.0 csrc/mnnvl_lamport.cuh:318 names __nv_half, a cuda_fp16.h typedef HIP lacks
    text = "template <> struct Neg<__nv_half> { using T = ::__nv_half2; nv_half h; __nv_half_raw r; };\n"
    assert features.half_aliases(text) == "template <> struct Neg<__half> { using T = __half2; __half h; __half_raw r; };\n"
    own = "typedef __half nv_half;\nnv_half f(nv_half x) { return x; }\n"  # a HIP port's own alias
    assert features.half_aliases(own) == own
    assert features.half_aliases("int my_nv_half_count;\n// __nv_half in a comment\n") == "int my_nv_half_count;\n// __nv_half in a comment\n"


def test_thrust_names_get_the_headers_that_declare_them():
    # MinkowskiEngine 0.5.4 src/spmm.cu: thrust::sort_by_key(thrust::device, ..., thrust::make_zip_iterator(
    # thrust::make_tuple(...))) with only <thrust/host_vector.h> reached through its own utils.hpp
    text = ('#include "gpu_hip.cuh"\n#include <hipsparse/hipsparse.h>\nvoid f() {\n'
            "  thrust::sort_by_key(thrust::device, k, k + n, thrust::make_zip_iterator(thrust::make_tuple(a, b)));\n"
            "  // thrust::reduce_by_key in a comment\n}\n")
    out = features.thrust_headers(text)
    assert out.split("\n")[:6] == ['#include "gpu_hip.cuh"', "#include <thrust/execution_policy.h>",
                                   "#include <thrust/iterator/zip_iterator.h>", "#include <thrust/sort.h>",
                                   "#include <thrust/tuple.h>", "#include <hipsparse/hipsparse.h>"]
    # an include guard does not count as an #if; headers the file includes itself are not added twice
    guarded = "#ifndef UTILS_HPP\n#define UTILS_HPP\n#include <thrust/sort.h>\ninline void g() { thrust::sort(thrust::host, p, p); }\n#endif\n"
    assert features.thrust_headers(guarded) == guarded.replace("#include <thrust/sort.h>\n",
                                                               "#include <thrust/sort.h>\n#include <thrust/execution_policy.h>\n")
    fragment = "thrust::sort(p, p + 1);\n"  # included mid-file: left
    assert features.thrust_headers(fragment) == fragment
    assert features.thrust_headers("#include <x.h>\nthrust::custom_thing y;\n") == "#include <x.h>\nthrust::custom_thing y;\n"


def test_thrust_headers_go_after_the_files_own_thrust_include_and_review_cases():
    # a file's Thrust configuration before its Thrust include stays before the added headers
    text = ("#include <cstdio>\n#define THRUST_IGNORE_CUB_VERSION_CHECK\n#include <thrust/device_vector.h>\n"
            "void f() { thrust::sort(thrust::device, p, p); }\n")
    assert features.thrust_headers(text).split("\n")[3:5] == ["#include <thrust/execution_policy.h>", "#include <thrust/sort.h>"]
    # `#ifndef M_PI / #define M_PI / #endif` is no include guard: the header goes after the first top-level include
    pi = ("#ifndef M_PI\n#define M_PI 3.14\n#endif\n#ifdef _WIN32\n#include <windows.h>\n#endif\n#include <x.h>\n"
          "void g() { thrust::sort(p, p); }\n")
    assert features.thrust_headers(pi).split("\n")[6:8] == ["#include <x.h>", "#include <thrust/sort.h>"]


def test_half_aliases_leave_other_namespaces_and_see_only_their_own_declarations():
    assert features.half_aliases("my::nv_half h; ::__nv_half2 g;\n") == "my::nv_half h; __half2 g;\n"
    assert features.half_aliases("typedef __nv_half nv_half_t;\n") == "typedef __half nv_half_t;\n"
    own = "struct nv_half { short x; };\nnv_half z;\n"
    assert features.half_aliases(own) == own


def test_a_projects_own_nvtx_macro_is_not_the_full_nvtx_api():
    text = "#include <nvToolsExt.h>\n#define NVTX_PUSH(n) nvtxRangePushA(n)\nvoid f() { NVTX_PUSH(\"x\"); nvtxRangePop(); }\n"
    assert "#define nvtxRangePushA(name)" in features.nvtx(text) and "#include <nvtx3/nvToolsExt.h>" not in features.nvtx(text)


def test_restrict_on_a_parameter_passed_by_value_is_dropped():
    # MinkowskiEngine 0.5.4 coordinate_map_gpu.cu: origin_field_map_kernel(..., map_type const __restrict__ origin_map, ...)
    text = ("__global__ void k(size_type const n, coordinate_field_type const *__restrict__ d,\n"
            "    map_type const __restrict__ origin_map, index_type *__restrict__ p, T& __restrict__ r,\n"
            "    int (*f)(int), S<a, b> __restrict__ s) {\n  float * __restrict__ q = p; /* __restrict__ v */\n}\n")
    assert features.restrict_by_value(text) == (
        "__global__ void k(size_type const n, coordinate_field_type const *__restrict__ d,\n"
        "    map_type const origin_map, index_type *__restrict__ p, T& __restrict__ r,\n"
        "    int (*f)(int), S<a, b> s) {\n  float * __restrict__ q = p; /* __restrict__ v */\n}\n")


def test_an_unused_memcpy_async_header_and_cuda_runtime_headers_take_hips():
    # DCNv4 1.0.0 src/cuda/dcnv4_im2col_cuda.cuh includes memcpy_async.h and calls none of it
    text = "#include <cooperative_groups.h>\n#include <cooperative_groups/memcpy_async.h>\nnamespace cg = cooperative_groups;\n"
    assert features.cg_memcpy_header(text).split("\n")[1] == "#include <hip/hip_cooperative_groups.h>"
    used = text + "__device__ void f(cg::thread_block b, float* d, const float* s) { cg::memcpy_async(b, d, s, 64); cg::wait(b); }\n"
    assert features.cg_memcpy_header(used) == used
    # warp-rnnt 0.7.0 core.cu
    runtime = "#include <device_atomic_functions.h>\n#include <device_launch_parameters.h>\n"
    assert features.builtin_types(runtime) == "#include <hip/hip_runtime.h>\n#include <hip/hip_runtime.h>\n"
    # DyNet 2.1.2's init.cc after hipify-perl, which writes `#include <>` for <device_launch_parameters.h>
    perl = '#if HAVE_CUDA\n#include "dynet/cuda.h"\n#include <>\n# include ""\n#endif\n'
    assert features.builtin_types(perl) == ('#if HAVE_CUDA\n#include "dynet/cuda.h"\n#include <hip/hip_runtime.h>\n'
                                            '# include <hip/hip_runtime.h>\n#endif\n')


def test_brace_elision_into_a_vector_member_gets_its_braces():
    # cudf's hash/helper_functions.cuh (MinkowskiEngine 0.5.4): one union name, a uint4 member in one branch, a uint2 in the next
    text = ("if (sizeof(uint4) == sizeof(pair_type)) {\n  union pair_type2vec_type { uint4 vec_val; pair_type pair_val; };\n"
            "  pair_type2vec_type converter = {0, 0, 0, 0};\n} else {\n"
            "  union pair_type2vec_type { uint2 vec_val; pair_type pair_val; };\n"
            "  pair_type2vec_type converter = {0, 0};\n  pair_type2vec_type braced = {{0, 0}};\n"
            "  pair_type2vec_type wide = {0, 0, 0};\n}\nstruct plain { int a; int b; };\nplain p = {1, 2};\n")
    out = features.vector_brace_elision(text).split("\n")
    assert out[2] == "  pair_type2vec_type converter = {{0, 0, 0, 0}};" and out[5] == "  pair_type2vec_type converter = {{0, 0}};"
    assert out[6] == "  pair_type2vec_type braced = {{0, 0}};"
    assert out[7] == "  pair_type2vec_type wide = {0, 0, 0};"  # more items than the vector's components: left
    assert out[10] == "plain p = {1, 2};"


def test_ldg_of_c10_half_gets_a_plain_load_overload_in_pytorch_files():
    # megablocks 0.10.0 replicate.h: `T value = __ldg((T*)x + bin_idx);` instantiated with c10::Half
    text = ("#include <hipcub/hipcub.hpp>\n#include <torch/extension.h>\n\nnamespace megablocks {\n"
            "template <typename T> __global__ void k(T* x, T* out) { T value = __ldg((T*)x + 1); *out = value; }\n}\n")
    out = features.half_ldg(text)
    assert out.count("#define ROCMIG_HALF_LDG") == 1
    assert out.index("#include <torch/extension.h>") < out.index("namespace c10 {") < out.index("namespace megablocks")
    assert "__device__ inline Half __ldg(const T* ptr) { return *ptr; }" in out
    assert features.half_ldg(out) == out
    assert features.half_ldg("#include <torch/extension.h>\n// __ldg in a comment\n") == "#include <torch/extension.h>\n// __ldg in a comment\n"
    own = text + "__device__ c10::Half __ldg(const c10::Half* p) { return *p; }\n"
    assert features.half_ldg(own) == own


def test_syncwarp_masks_are_dropped_keeping_any_side_effect():
    # CUTLASS 1.x k_split_control.h (pytorch-block-sparse 0.1.2): __syncwarp(0x00000001) in a spin loop
    text = ("__global__ void k(int* x) {\n  __syncwarp(0xffffffff);\n  unsigned m = __activemask();\n  __syncwarp(m);\n"
            "  if (threadIdx.x == 0) __syncwarp(0x1);\n  __syncwarp(mask_of(x) & FULL);\n  __syncwarp();\n"
            "  __syncwarp(s->mask);\n}\n")
    out = features.syncwarp_mask(text)
    assert out.count("__syncwarp()") == 6
    assert "  ((void)(mask_of(x) & FULL), __syncwarp());\n" in out
    assert "__syncwarp(0" not in out and "__syncwarp(m)" not in out
    assert features.syncwarp_mask(out) == out
    own = "#define __syncwarp(m) my_sync(m)\n" + text
    assert features.syncwarp_mask(own) == own


def test_half2_raw_members_read_the_unsigned_short_inside_hips_half_raw():
    # ColossalAI 0.5.0 / vLLM fp8 cast functors: `__half2_raw res = ...; tmp.u16[0] = res.x;`, and a
    # `__half_raw res` in the next specialization, whose .x is already the unsigned short
    text = ("__device__ uint32_t a(uint16_t val) {\n  union { uint16_t u16[2]; uint32_t u32; } tmp;\n"
            "  __half2_raw res = cvt(val);\n  tmp.u16[0] = res.x;\n  tmp.u16[1] = res.y;\n  return tmp.u32;\n}\n"
            "__device__ uint16_t b(uint8_t val) {\n  __half_raw res = cvt1(val);\n  return res.x;\n}\n"
            "__device__ void c(__half2_raw r, uint16_t* o) { o[0] = r.x; r.y.x = 1; }\n")
    out = features.half2_raw_members(text)
    assert "tmp.u16[0] = res.x.x;\n  tmp.u16[1] = res.y.x;" in out
    assert "  __half_raw res = cvt1(val);\n  return res.x;\n" in out
    assert "o[0] = r.x.x; r.y.x = 1;" in out
    assert features.half2_raw_members(out) == out


def test_an_mma_include_no_file_uses_is_left_out_and_a_used_one_becomes_rocwmma():
    # lightseq 3.0.1 cublas_wrappers.h: `#include <mma.h>` with no WMMA anywhere in the tree
    header = "#pragma once\n#include <hipblas/hipblas.h>\n#include <mma.h>\nint gemm();\n"
    assert features.wmma_used([header]) is False
    out = features.wmma(header, used=False)
    assert "// #include <mma.h>  (no file of the tree uses WMMA)\n" in out and out.count("\n") == header.count("\n")
    kernel = "using namespace nvcuda;\n__global__ void k() { wmma::fragment<wmma::accumulator, 16, 16, 16, float> c; }\n"
    assert features.wmma_used([header, kernel]) is True
    assert "#include <rocwmma/rocwmma.hpp>" in features.wmma(header, used=True)


def test_cub_wrapped_in_a_namespace_by_cub_ns_prefix_becomes_hipcub():
    # lightseq 3.0.1 ls_cub.cuh (DGL's dgl_cub.cuh): CUB_NS_PREFIX namespace ls {, then ls::cub::CachingDeviceAllocator
    header = ("#define CUB_NS_PREFIX namespace ls {\n#define CUB_NS_POSTFIX }\n#define CUB_NS_QUALIFIER ::ls::cub\n"
              '#include "hipcub/hipcub.hpp"\n')
    assert features.cub_namespaces([header, "// #define CUB_NS_PREFIX namespace old {\n".replace("// ", "int x; // ")]) == {"ls"}
    unit = ("ls::cub::CachingDeviceAllocator g_allocator(true);\nvoid f() { ::ls::hipcub::DeviceScan::ExclusiveSum(a, b, c, d, n); "
            "hipcub::DeviceReduce::Sum(a, b, c, d, n); tools::cub::x(); }\n")
    out = features.cub_namespace_prefix(unit, frozenset({"ls"}))
    assert out.startswith("hipcub::CachingDeviceAllocator g_allocator(true);")
    assert "{ hipcub::DeviceScan::ExclusiveSum(a, b, c, d, n); hipcub::DeviceReduce::Sum" in out
    assert "tools::cub::x()" in out
    assert features.cub_namespace_prefix(unit, frozenset()) == unit


def test_cub_names_the_translator_left_become_hipcub_where_hipcub_is_included():
    # ColossalAI 0.5.0 moe_kernel.cu after torch.utils.hipify
    text = ("#include <hipcub/hipcub.hpp>\n"
            "typedef hipcub::BlockLoad<T, block_size, pack_size, cub::BLOCK_LOAD_VECTORIZE> BlockLoad;\n"
            "// cub::in a comment\nauto s = \"cub::in a string\"; ::cub::WarpReduce<int> w; my::cub::x y;\n")
    out = features.cub_names(text)
    assert "hipcub::BlockLoad<T, block_size, pack_size, hipcub::BLOCK_LOAD_VECTORIZE>" in out
    assert "// cub::in a comment" in out and '"cub::in a string"' in out
    assert "hipcub::WarpReduce<int> w;" in out and "my::cub::x y;" in out
    assert features.cub_names(out) == out
    assert features.cub_names(text.replace("hipcub/hipcub.hpp", "cub/cub.cuh")) == text.replace("hipcub/hipcub.hpp", "cub/cub.cuh")
    # flashinfer-python 0.2.2 include/flashinfer/sampling.cuh: `using namespace cub;` and unqualified names
    using = "#include <hipcub/block/block_scan.hpp>\nnamespace flashinfer {\nusing namespace cub;\nusing BlockScanT = BlockScan<float, 256>;\n}\n"
    assert features.cub_names(using) == using.replace("namespace cub;", "namespace hipcub;")
    own = "#include <hipcub/hipcub.hpp>\nnamespace cub {\nint f();\n}\nusing namespace cub;\n"
    assert features.cub_names(own) == own


def test_a_torch_hipified_unit_including_its_own_header_first_gets_the_hip_runtime(tmp_path):
    """DCNv2 0.4's dcn_v2_cuda.cu includes "cuda/dcn_v2_im2col_cuda.h" (which names cudaStream_t and
    includes nothing) before ATen: nvcc's implicit cuda_runtime.h declares the type. torch.utils.hipify
    writes the unit as hip/dcn_v2_hip.hip including "hip/dcn_v2_im2col_hip.h"; the unit gets
    hip/hip_runtime.h first, under the hipified names, and the header does not."""
    from migrate import torch_ext
    header = "void im2col(cudaStream_t stream, const float* x);\n"
    unit = '#include <vector>\n#include "cuda/dcn_v2_im2col_cuda.h"\n#include <ATen/ATen.h>\nint n() { return 1; }\n'
    hip_header = header.replace("cudaStream_t", "hipStream_t")
    hip_unit = unit.replace("cuda/dcn_v2_im2col_cuda.h", "hip/dcn_v2_im2col_hip.h")
    (tmp_path / "src" / "hip").mkdir(parents=True)
    (tmp_path / "src" / "hip" / "dcn_v2_im2col_hip.h").write_text(hip_header)
    (tmp_path / "src" / "hip" / "dcn_v2_hip.hip").write_text(hip_unit)
    mapped = {"src/cuda/dcn_v2_im2col_cuda.h": "src/hip/dcn_v2_im2col_hip.h", "src/cuda/dcn_v2_cuda.cu": "src/hip/dcn_v2_hip.hip"}
    cuda = {"src/cuda/dcn_v2_im2col_cuda.h": header, "src/cuda/dcn_v2_cuda.cu": unit}
    archs = [Arch("gfx942", "CDNA3", 64, 65536)]
    done = torch_ext.apply_fixups(mapped, cuda, tmp_path,
                                  lambda part: advice.migrate_tree(part, rules.load_rules(), archs, tree_cuda=cuda,
                                                                   pytorch_files=frozenset(part)))
    assert done.final["src/hip/dcn_v2_hip.hip"] == "#include <hip/hip_runtime.h>  // nvcc includes cuda_runtime.h first in every .cu unit\n" + hip_unit
    assert done.final["src/hip/dcn_v2_im2col_hip.h"] == hip_header


def test_status_cases_hip_lacks_are_commented_out_in_error_string_switches():
    # the CUDA samples' Common/helper_cuda.h after hipify-perl 7.2: hipFFT has no license error
    text = ('    case HIPFFT_NOT_IMPLEMENTED:\n      return "HIPFFT_NOT_IMPLEMENTED";\n\n'
            '    case CUFFT_LICENSE_ERROR:\n      return "CUFFT_LICENSE_ERROR";\n\n'
            '    case CUDA_ERROR_STUB_LIBRARY: return "CUDA_ERROR_STUB_LIBRARY";\n'
            '    case CUFFT_MINE: return "mine";\n    case CUBLAS_STATUS_X: log(); return "x";\n'
            'enum own { CUFFT_MINE };\n')
    out = features.unmapped_status_cases(text).split("\n")
    assert len(out) == len(text.split("\n"))
    assert out[3] == "    // case CUFFT_LICENSE_ERROR:" and out[4].startswith('      // return "CUFFT_LICENSE_ERROR";')
    assert out[6].startswith('    // case CUDA_ERROR_STUB_LIBRARY: return')
    assert out[7] == '    case CUFFT_MINE: return "mine";'  # the tree's own enumerator
    assert out[8] == '    case CUBLAS_STATUS_X: log(); return "x";'  # a body that does more than return a string
    assert out[0] == "    case HIPFFT_NOT_IMPLEMENTED:"


def test_cuda_headers_whose_content_hip_runtime_holds_become_it():
    # the CUDA samples' volumeRender.cpp includes driver_functions.h for make_cudaExtent
    # flashinfer-python 0.2.2's include/flashinfer/utils.cuh includes cuda_device_runtime_api.h
    text = ("#include <driver_functions.h>\n#include <sm_20_atomic_functions.h>\n#include <host_defines.h>\n"
            "#include <cuda_device_runtime_api.h>\n#include <driver_types.h>\n")
    assert features.builtin_types(text) == "#include <hip/hip_runtime.h>\n" * 4 + "#include <driver_types.h>\n"


def test_make_bfloat162_becomes_halves2bfloat162_unless_the_file_defines_it_live():
    # flashinfer-python 0.2.2 include/flashinfer/vec_dtypes.cuh: its own make_bfloat162 sits in a branch for
    # CUDA < 12.4 on sm_7x, which hipcc never takes
    text = ("#if (__CUDACC_VER_MAJOR__ * 10000 + __CUDACC_VER_MINOR__ * 100 < 120400) && \\\n"
            "    (defined(__CUDA_ARCH__) && (__CUDA_ARCH__ < 800))\n"
            "FLASHINFER_INLINE __nv_bfloat162 make_bfloat162(const __nv_bfloat16 x, const __nv_bfloat16 y) {\n"
            "  __nv_bfloat162 t; t.x = x; t.y = y; return t;\n}\n#endif\n"
            "FLASHINFER_INLINE void fill(nv_bfloat16 val) { data = make_bfloat162(val, val); }\n")
    dead = cpp.dead_lines(cpp.blank(text), cpp.HIPCC_UNDEFINED)
    out = features.make_bf16_pair(text, dead)
    assert out.split("\n")[2] == text.split("\n")[2]
    assert out.split("\n")[6] == "FLASHINFER_INLINE void fill(nv_bfloat16 val) { data = __halves2bfloat162(val, val); }"
    live = text.replace("#if (__CUDACC", "#if 1 || (__CUDACC")
    assert features.make_bf16_pair(live, cpp.dead_lines(cpp.blank(live), cpp.HIPCC_UNDEFINED)) == live


def test_a_dependent_member_template_call_gets_the_template_keyword():
    # flashinfer-python 0.2.2 include/flashinfer/vec_dtypes.cuh; a qualifier that names no template parameter,
    # a call without template arguments, a call that has the keyword, and a comparison stay
    text = ("template <typename src_float_t, typename tgt_float_t, size_t vec_size>\n"
            "FLASHINFER_INLINE void cast_from_impl(vec_t<tgt_float_t, vec_size>& dst, const vec_t<src_float_t, vec_size>& src) {\n"
            "  vec_cast<tgt_float_t, src_float_t>::cast<vec_size>(dst.ptr(), src.ptr());\n"
            "  vec_cast<float, half>::cast<4>(a, b);\n  Ops<T>::apply(a);\n  Ops<tgt_float_t>::template run<2>(a);\n"
            "  bool c = Lim<vec_size>::value < 3 && (x > 1);\n}\n"
            "void host() { vec_cast<tgt_float_t, src_float_t>::cast<8>(a, b); }\n")
    out = features.dependent_template_keyword(text).split("\n")
    assert out[2] == "  vec_cast<tgt_float_t, src_float_t>::template cast<vec_size>(dst.ptr(), src.ptr());"
    # sampling.cuh: a member template of a temporary of a dependent class
    temp = ("template <uint32_t VEC_SIZE, uint32_t BLOCK_THREADS, typename T>\n__device__ void f(T* v, Storage* s) {\n"
            "  T a = BlockReduce<T, BLOCK_THREADS>(s->reduce(0))\n          .Sum<VEC_SIZE>(v);\n"
            "  T b = BlockReduce<float, 4>(s->reduce(1)).Sum<2>(v);\n"
            "  T c = hipcub::BlockScan<T, BLOCK_THREADS>(s->scan).InclusiveSum<VEC_SIZE>(v, v);\n}\n")
    out_temp = features.dependent_template_keyword(temp).split("\n")
    assert out_temp[3] == "          .template Sum<VEC_SIZE>(v);" and out_temp[4] == temp.split("\n")[4]
    assert out_temp[5] == "  T c = hipcub::BlockScan<T, BLOCK_THREADS>(s->scan).template InclusiveSum<VEC_SIZE>(v, v);"
    assert out[3:8] == text.split("\n")[3:8] and out[8] == text.split("\n")[8]


def test_std_min_max_that_torch_hipify_made_global_is_restored():
    # flashinfer-python 0.2.2 include/flashinfer/attention/cascade.cuh: torch.utils.hipify 2.14 writes ::max,
    # which HIP declares without constexpr; a ::max the CUDA line had itself stays
    cuda = ["    constexpr uint32_t vec_size = std::max(16U / sizeof(DTypeIn), HEAD_DIM / 32U);",
            "    int a = ::max(x, y);", "    auto b = std::min(p, std::max(q, r));"]
    hip = ["    constexpr uint32_t vec_size = ::max(16U / sizeof(DTypeIn), HEAD_DIM / 32U);",
           "    int a = ::max(x, y);", "    auto b = ::min(p, ::max(q, r));"]
    out = features.std_minmax_restored("\n".join(hip), cuda, [0, 1, 2]).split("\n")
    assert out == [cuda[0], hip[1], cuda[2]]


def test_a_libcudacxx_include_nothing_uses_is_commented_out():
    # flashinfer-python 0.2.2 include/flashinfer/permuted_smem.cuh: <cuda/pipeline>, and cp.async in inline PTX
    text = "#include <cuda/pipeline>\n#include <cuda/std/limits>\n#include <cuda_runtime.h>\n"
    blanked = [cpp.blank(text), cpp.blank("auto p = thrust::cuda::par; cuda::std::numeric_limits<float> l;\n"),
               cpp.blank("#define CUTLASS_STL_NAMESPACE cuda::std\n")]  # its vendored CUTLASS's platform.h
    assert not features.libcudacxx_used(blanked)
    out = features.libcudacxx_unused_includes(text, features.libcudacxx_used(blanked)).split("\n")
    assert out[0] == "// #include <cuda/pipeline>  (rocmig: no file of the tree names a cuda:: entity)" and out[1:3] == text.split("\n")[1:3]
    # the CUDA samples' globalToShmemAsyncCopy.cu uses the pipeline; a tree with a namespace cuda of its own keeps it
    assert features.libcudacxx_used([cpp.blank("auto pipe = cuda::make_pipeline();\n")])
    assert features.libcudacxx_used([cpp.blank("namespace cuda { int f(); }\n")])
    migrated = advice.migrate_tree({"p.cuh": (text, text)}, rules.load_rules(), [Arch("gfx942", "CDNA3", 64, 65536)])
    assert [(f.line, f.status) for f in migrated.findings["p.cuh"] if f.rule == "cuda-libcudacxx"] == [(1, "fixed")]


def test_libcudacxx_limits_of_builtin_types_and_integer_types_become_std():
    # flashinfer-python 0.2.2 include/flashinfer/sampling.cuh; numeric_limits of a class type (__half:
    # libcu++ specializes it, std gives T() for every member) or of a template parameter stays a finding
    cuda = ("#include <cuda/std/limits>\n#include <cuda/std/cstdint>\n"
            "  float pivot = -cuda::std::numeric_limits<float>::infinity();\n"
            "  auto big = ::cuda::std::numeric_limits<unsigned long long>::max() + cuda::std::numeric_limits< std::int32_t >::min();\n"
            "  cuda::std::uint64_t n = 0; cuda::std::size_t s = 0;\n")
    out = features.libcudacxx_std(cuda)
    assert out.split("\n")[:5] == [
        "#include <limits>", "#include <cstdint>", "  float pivot = -std::numeric_limits<float>::infinity();",
        "  auto big = ::std::numeric_limits<unsigned long long>::max() + std::numeric_limits< std::int32_t >::min();",
        "  std::uint64_t n = 0; std::size_t s = 0;"]
    kept = "#include <cuda/std/limits>\nT a = cuda::std::numeric_limits<T>::max();\n__half b = cuda::std::numeric_limits<__half>::max();\n"
    assert features.libcudacxx_std(kept) == kept
    migrated = advice.migrate_tree({"s.cu": (cuda + kept, cuda + kept)}, rules.load_rules(), [Arch("gfx942", "CDNA3", 64, 65536)])
    by_rule = sorted((f.line, f.rule, f.status) for f in migrated.findings["s.cu"] if "libcudacxx" in f.rule)
    # the file still names numeric_limits<T>: both <cuda/std/limits> includes stay, open
    assert by_rule == [(1, "libcudacxx-std", "open"), (2, "libcudacxx-std", "fixed"), (3, "libcudacxx-std", "fixed"),
                       (4, "libcudacxx-std", "fixed"), (5, "libcudacxx-std", "fixed"), (6, "libcudacxx-std", "open"),
                       (7, "cuda-libcudacxx", "open"), (8, "cuda-libcudacxx", "open")]


def test_error_overloads_with_more_parameters_keep_their_first_definition():
    # NVIDIA's Video Codec SDK NvCodecUtils.h (PyNvCodec 0.0.6): check(CUresult, int, const char*) under
    # __cuda_cuda_h__ and check(cudaError_t, int, const char*) under __CUDA_RUNTIME_H__, both hipError_t now
    text = ("#ifdef HIP_INCLUDE_HIP_HIP_RUNTIME_H\ninline bool check(hipError_t e, int iLine, const char *szFile) {\n"
            "    return e == hipSuccess;\n}\n#endif\n"
            "#ifdef HIP_INCLUDE_HIP_HIP_RUNTIME_H\ninline bool check(hipError_t err, int line, const char* file) {\n"
            "    return true;\n}\n#endif\n"
            "inline bool check(hipError_t e, const char *what) {\n    return false;\n}\n")
    out = features.merged_error_overloads(text)
    assert out.count("#ifndef ROCMIG_DEFINED_check_HIPERROR_3") == 1 and out.count("#define ROCMIG_DEFINED_check_HIPERROR_3") == 1
    assert out.index("#ifndef ROCMIG_DEFINED_check_HIPERROR_3") < out.index("hipError_t err, int line")
    assert "ROCMIG_DEFINED_check_HIPERROR_2" not in out  # the two-parameter overload is another function


def test_hip_headers_inside_extern_c_are_also_included_before_the_block():
    # PyNvCodec 0.0.6's decoder.h wraps its includes (cuda.h, now hip_runtime.h) in extern "C"
    text = ('#pragma once\n#ifdef __cplusplus\nextern "C" {\n#endif\n\n#include <hip/hip_runtime.h>\n'
            '#include <libavcodec/avcodec.h>\n\nint f(void);\n#ifdef __cplusplus\n}\n#endif\n'
            'extern "C" {\n#include <stdio.h>\n}\n')
    out = features.hip_includes_out_of_extern_c(text)
    assert out.startswith('#pragma once\n#include <hip/hip_runtime.h>  // rocmig: before extern "C" (C++ templates)\n'
                          '#ifdef __cplusplus\nextern "C" {\n')
    assert out.count("#include <hip/hip_runtime.h>") == 2 and out.endswith('extern "C" {\n#include <stdio.h>\n}\n')
    assert features.hip_includes_out_of_extern_c("// extern \"C\" {\n#include <hip/hip_runtime.h>\n") == (
        "// extern \"C\" {\n#include <hip/hip_runtime.h>\n")
