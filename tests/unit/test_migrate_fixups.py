"""Fixups: each exact rewrite applied where it is exact and nowhere else; diffs and lines recorded;
line maps and include resolution."""

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
from tests.shared_cases import CASES_DIR

CUDA = CASES_DIR / "cuda"
sys.path.insert(0, str(ROOT / "recipes" / "migrate"))

from migrate import fixups, includes, linemap


def read_case(name: str) -> str:
    """Text of a shared case file; skips when the shared case set is not checked out next to the repo."""
    if not (CUDA / name).is_file():
        pytest.skip(f"{CUDA / name} is absent: the shared case set is not checked out next to this repository")
    return (CUDA / name).read_text()


def apply(cuda: str, hip: str | None = None, names=()) -> tuple[str, list[fixups.Fix]]:
    hip = cuda if hip is None else hip
    return fixups.apply_all("f.cu", cuda, hip, list(names), linemap.map_lines(cuda.split("\n"), hip.split("\n")))


def apply_cuda_only(cuda: str, names=()) -> tuple[str, list[fixups.Fix]]:
    return fixups.apply_all("f.cu", cuda, cuda, list(names), linemap.map_lines(cuda.split("\n"), cuda.split("\n")),
                            cuda_only=True)


def test_a02_full_mask_becomes_the_width_32_shuffle():
    """All 32 lanes: HIP's non-sync shuffle with width 32 (a 64-bit all-ones mask would trap in HIP's
    mask check on the case's 32-thread blocks on wave64; test_migrate_warp runs both)."""
    cuda = read_case("A02_shfl_xor_sync_mask.cu")
    out, fixes = apply(cuda)
    assert "__shfl_xor(v, off, 32)" in out
    assert [f.id for f in fixes] == ["warp-sync-full-mask"]
    assert fixes[0].lines == (6,)
    assert "-    v += __shfl_xor_sync(0xffffffffu, v, off);" in fixes[0].diff


def test_mask_macro_width_kept_and_multiline_call():
    cuda = "x = __shfl_down_sync(FULL,\n   v, 1);\ny = __shfl_sync(0xFFFFFFFF, v, 0, 4);\n"
    out, _ = apply(cuda, names=["FULL"])
    assert out == "x = __shfl_down(v, 1, 32);\ny = __shfl(v, 0, 4);\n"


def test_full_mask_votes_keep_the_32_lane_group():
    cuda = "c = __ballot_sync(0xffffffff, p);\nd = __any_sync(0xffffffffu, p);\n"
    out, _ = apply(cuda)
    assert out == ("c = ((unsigned)((__ballot(p)) >> (__lane_id() & 32)));\n"
                   "d = (((unsigned)((__ballot(p)) >> (__lane_id() & 32))) != 0u);\n")


def test_other_masks_rewritten_only_in_a_cuda_only_tree():
    cuda = "a = __shfl_sync(0x0000ffff, v, 0);\nb = __shfl_sync(mask, v, 0);\n"
    out, fixes = apply(cuda)
    assert out == cuda and fixes == []
    out, fixes = apply_cuda_only(cuda)
    assert out == ("a = __shfl_sync(((unsigned long long)(unsigned)(0x0000ffff) << (__lane_id() & 32)), v, 0, 32);\n"
                   "b = __shfl_sync(((unsigned long long)(unsigned)(mask) << (__lane_id() & 32)), v, 0, 32);\n")


def test_warp_size_is_cudas_32_in_a_cuda_only_tree():
    cuda = "for (int o = warpSize / 2; o; o /= 2) v += __shfl_down(v, o);\nint n = prop.warpSize;\n"
    out, fixes = apply_cuda_only(cuda)
    assert out == "for (int o = 32 / 2; o; o /= 2) v += __shfl_down(v, o, 32);\nint n = prop.warpSize;\n"
    assert [f.id for f in fixes] == ["warp-sync-full-mask", "warp-size-cuda-32"]
    assert apply(cuda)[0] == cuda  # a tree with HIP code paths: warpSize and width-less shuffles are HIP's


def test_a08_bf16_header_and_type():
    cuda = read_case("A08_bf16_header.cu")
    old_hipify = cuda.replace("#include <cuda_bf16.h>", "#include <hip/hip_bfloat16.h>").replace("__nv_bfloat16", "hip_bfloat16")
    out, fixes = apply(cuda, old_hipify)
    assert "#include <hip/hip_bf16.h>" in out and "hip_bfloat16.h" not in out
    assert "__hip_bfloat16* x" in out and " hip_bfloat16" not in out
    assert [f.id for f in fixes] == ["bf16-header-type"]
    out2, _ = apply(cuda)  # CUDA spelling left by hipify
    assert "cuda_bf16" not in out2 and "__nv_bfloat16" not in out2


def test_hip_bfloat16_elsewhere_untouched():
    cuda = "#include <hip/hip_bfloat16.h>\nhip_bfloat16 x;\n"
    out, fixes = apply(cuda)
    assert out == cuda and fixes == []


def test_a10_thrust_policy_matches_expected_hip():
    cuda = read_case("A10_thrust_cuda_par.cu")
    expected = read_case("A10_thrust_cuda_par.expected.hip")
    hipified = (cuda.replace("cuda_runtime.h", "hip/hip_runtime.h").replace("cudaStream", "hipStream"))
    out, fixes = apply(cuda, hipified)
    assert out == expected
    assert {f.id for f in fixes} == {"thrust-hip-policy"}
    cuda2 = "#include <thrust/system/cuda/execution_policy.h>\n#if THRUST_DEVICE_SYSTEM == THRUST_DEVICE_SYSTEM_CUDA\nthrust::cuda::par_nosync\n#endif\n"
    out2, _ = apply(cuda2)
    assert out2 == "#include <thrust/system/hip/execution_policy.h>\n#if THRUST_DEVICE_SYSTEM == THRUST_DEVICE_SYSTEM_HIP\nthrust::hip::par_nosync\n#endif\n"


def test_a14_operators_guarded_like_expected_hip():
    cuda = read_case("A14_float2_operators.cu")
    expected = read_case("A14_float2_operators.expected.hip")
    out, fixes = apply(cuda)
    guarded = out[out.index("#if !defined(__HIP_PLATFORM_AMD__)"):out.index("#endif") + len("#endif")]
    assert guarded in expected
    assert fixes[0].id == "vector-operator-guard" and fixes[0].lines == (4, 10)
    again, more = apply(out)  # idempotent: already guarded operators stay as they are
    assert again == out and more == []


def test_non_elementwise_operator_not_guarded():
    cuda = ("__device__ float2 operator*(float2 a, float2 b) { return make_float2(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x); }\n"
            "__device__ float4& operator+=(float4& a, const float4 b) { a.x += b.x; a.y += b.y; a.z += b.z; a.w += b.w; return a; }\n")
    out, _ = apply(cuda)
    assert out.startswith("__device__ float2 operator*")
    assert "#if !defined(__HIP_PLATFORM_AMD__)\n__device__ float4& operator+=" in out


def test_header_layout():
    cuda = '#include <cublas_v2.h>\n#include "curand_kernel.h"\n'
    hip = '#include <hipblas.h>\n#include "hiprand_kernel.h"\n'
    out, fixes = apply(cuda, hip)
    assert out == '#include <hipblas/hipblas.h>\n#include "hiprand/hiprand_kernel.h"\n'
    assert fixes[0].id == "hip-header-layout" and fixes[0].lines == (1, 2)


def test_line_map_with_inserted_first_line():
    old = ["a", "b", "c"]
    assert linemap.map_lines(old, ["#include x", "a", "B", "c"]) == [1, 2, 3]


def test_include_resolution_prefers_nearest_copy_and_flags_torch():
    texts = {
        "csrc/includes/util.h": "#pragma once\n",
        "ops/csrc/includes/util.h": "#pragma once\n",
        "ops/csrc/adam/adam.cu": '#include "util.h"\n#include <torch/extension.h>\n',
        "csrc/lamb/lamb.cu": '#include "util.h"\n',
        "csrc/x/plain.cu": '#include "../includes/util.h"\n#ifndef __HIP_PLATFORM_AMD__\n#include <torch/extension.h>\n#endif\n',
    }
    graph = includes.IncludeGraph(texts)
    adam = graph.closure("ops/csrc/adam/adam.cu")
    assert adam.dirs == ("ops/csrc/includes",) and adam.torch and adam.torch_header == "torch/extension.h"
    assert graph.closure("csrc/lamb/lamb.cu").dirs == ("csrc/includes",)
    plain = graph.closure("csrc/x/plain.cu")
    assert plain.dirs == () and not plain.torch


def test_fingerprint_equal_for_byte_identical_closures_only():
    texts = {
        "a/inc/u.h": "#pragma once\nint u;\n",
        "b/inc/u.h": "#pragma once\nint u;\n",
        "c/inc/u.h": "#pragma once\nint v;\n",
        "a/k.cu": '#include "inc/u.h"\n',
        "b/k.cu": '#include "inc/u.h"\n',
        "c/k.cu": '#include "inc/u.h"\n',
        "loop/x.h": '#include "y.h"\n',
        "loop/y.h": '#include "x.h"\n',
        "loop/k.cu": '#include "x.h"\n',
    }
    graph = includes.IncludeGraph(texts)
    assert graph.fingerprint("a/k.cu") == graph.fingerprint("b/k.cu") != graph.fingerprint("c/k.cu")
    assert graph.fingerprint("loop/k.cu")  # include cycles terminate


def test_unary_minus_guarded_and_other_types():
    cuda = ("inline __host__ __device__ float3 operator-(float3 &a) { return make_float3(-a.x, -a.y, -a.z); }\n"
            "inline __host__ __device__ int2 operator+(const int2 a, const int2 b) { return make_int2(a.x + b.x, a.y + b.y); }\n")
    out, fixes = apply(cuda)
    assert out == "#if !defined(__HIP_PLATFORM_AMD__)\n" + cuda + "#endif\n"
    assert fixes[0].lines == (1, 3)  # insertions are reported at the line they precede


def test_finding_status_fixed_only_where_the_migrated_line_changed():
    """advice.decide: fixed when a listed fixup touched the line, or the rule no longer matches it; a
    32-lane assumption is closed when the warp operations it meets work on 32-lane groups, and stays
    open beside a wavefront-wide one."""
    from migrate import advice, rules
    from migrate.archs import Arch

    cuda = ("#include <thrust/execution_policy.h>\n"
            "void f(){ thrust::sort(thrust::cuda::par, a, b); }\n"
            "__device__ float g(float v){ int lane = threadIdx.x & 31; return __shfl_xor_sync(0xffffffff, v, 1); }\n")
    hip = '#include "hip/hip_runtime.h"\n' + cuda
    archs = [Arch("gfx942", "CDNA3", 64, 65536)]
    migrated = advice.migrate_tree({"f.cu": (cuda, hip)}, rules.load_rules(), archs)
    status = {(f.line, f.rule): f.status for f in migrated.findings["f.cu"]}
    assert status[(2, "thrust-cuda-policy")] == "fixed"
    assert status[(3, "warp-mask-32bit")] == "fixed"
    assert status[(3, "warp-lane-arith-32")] == "fixed"
    wide = cuda + "__device__ int n(){ return __popcll(__ballot(1)); }\n#include <hip/hip_runtime.h>\n"
    migrated = advice.migrate_tree({"f.cu": (wide, '#include "hip/hip_runtime.h"\n' + wide)}, rules.load_rules(), archs)
    status = {(f.line, f.rule): f.status for f in migrated.findings["f.cu"]}
    assert status[(3, "warp-lane-arith-32")] == "open" and status[(3, "warp-width-mixed")] == "open"


def test_tree_header_renamed_by_hipify_keeps_its_name():
    from migrate import advice, rules
    from migrate.archs import Arch
    # XGBoost 3.4.1 src/common/cuda_rt_utils.h: hipify-perl 7.2's cuda_stream -> hip_stream rule renames the
    # include of the project's own src/common/cuda_stream.h, and no hip_stream.h exists anywhere
    cuda = '#pragma once\n#include <cuda_runtime.h>\n#include "cuda_stream.h"  // for StreamRef\n'
    hip = '#pragma once\n#include <hip/hip_runtime.h>\n#include "hip_stream.h"  // for StreamRef\n'
    tree = {"src/common/cuda_rt_utils.h": (cuda, hip), "src/common/cuda_stream.h": ("#pragma once\n", "#pragma once\n")}
    migrated = advice.migrate_tree(tree, rules.load_rules(), [Arch("gfx942", "CDNA3", 64, 65536)])
    final = migrated.final["src/common/cuda_rt_utils.h"]
    assert final == '#pragma once\n#include <hip/hip_runtime.h>\n#include "cuda_stream.h"  // for StreamRef\n'
    assert [f.id for f in migrated.fixes["src/common/cuda_rt_utils.h"]] == ["tree-include-kept"]
    alone = advice.migrate_tree({"src/common/cuda_rt_utils.h": (cuda, hip)}, rules.load_rules(),
                                [Arch("gfx942", "CDNA3", 64, 65536)])
    assert '"hip_stream.h"' in alone.final["src/common/cuda_rt_utils.h"]  # not the tree's header: left


def test_thrust_cuda_error_category_becomes_rocthrusts():
    # XGBoost 3.4.1 src/common/common.cu after hipify-perl 7.2 (thrust/system/cuda/error.h -> .../hip/error.h)
    hip = ("#include <thrust/system/hip/error.h>\n"
           "    LOG(FATAL) << thrust::system_error(code, thrust::cuda_category(),\n"
           "auto& c = thrust::system::cuda_category();\n")
    out = fixups.thrust(hip, hip.split("\n"), list(range(3)))
    assert "thrust::hip_category()," in out and "thrust::system::hip_category();" in out and "cuda_category" not in out
