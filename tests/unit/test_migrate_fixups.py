"""Fixups: each exact rewrite applied where it is exact and nowhere else; diffs and lines recorded;
line maps and include resolution."""

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
from tests.shared_cases import CASES_DIR

CUDA = CASES_DIR / "cuda"
sys.path.insert(0, str(ROOT / "recipes" / "migrate"))

from migrate import features, fixups, includes, linemap, warp


def read_case(name: str) -> str:
    """Text of a shared case file; skips when the shared case set is not checked out next to the repo."""
    if not (CUDA / name).is_file():
        pytest.skip(f"{CUDA / name} is absent: the shared case set is not checked out next to this repository")
    return (CUDA / name).read_text()


def apply(cuda: str, hip: str | None = None, names=()) -> tuple[str, list[fixups.Fix]]:
    hip = cuda if hip is None else hip
    return fixups.apply_all("f.cu", cuda, hip, list(names), linemap.map_lines(cuda.split("\n"), hip.split("\n")))[:2]


def apply_cuda_only(cuda: str, names=()) -> tuple[str, list[fixups.Fix]]:
    return fixups.apply_all("f.cu", cuda, cuda, list(names), linemap.map_lines(cuda.split("\n"), cuda.split("\n")),
                            cuda_only=True)[:2]


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


def test_other_masks_typed_in_a_hip_aware_tree_grouped_in_a_cuda_only_tree():
    cuda = "a = __shfl_sync(0x0000ffff, v, 0);\nb = __shfl_sync(mask, v, 0);\nc = __ballot_sync(MASK, p);\n"
    out, fixes = apply(cuda)
    assert [f.id for f in fixes] == ["warp-sync-full-mask"]
    assert out.startswith(warp.TYPED_HELPER)  # no includes: the helper, which includes the HIP runtime, goes first
    assert out.removeprefix(warp.TYPED_HELPER) == (
        "a = __shfl_sync(rocmig_lane_mask(0x0000ffff), v, 0, rocmig_lane_width(0x0000ffff));\n"
        "b = __shfl_sync(rocmig_lane_mask(mask), v, 0, rocmig_lane_width(mask));\n"
        "c = rocmig_ballot_sync(MASK, p);\n")
    assert apply(out)[0] == out  # typed forms are kept as they are
    cuda = cuda.replace("c = __ballot_sync(MASK, p);\n", "")
    out, fixes = apply_cuda_only(cuda)
    assert out == ("a = __shfl_sync(((unsigned long long)(unsigned)(0x0000ffff) << (__lane_id() & 32)), v, 0, 32);\n"
                   "b = __shfl_sync(((unsigned long long)(unsigned)(mask) << (__lane_id() & 32)), v, 0, 32);\n")


def test_warp_size_is_cudas_32_in_a_cuda_only_tree():
    cuda = "for (int o = warpSize / 2; o; o /= 2) v += __shfl_down(v, o);\nint n = prop.warpSize;\nfake.warpSize = 64;\n"
    out, fixes = apply_cuda_only(cuda)
    assert out == "for (int o = 32 / 2; o; o /= 2) v += __shfl_down(v, o, 32);\nint n = 32;\nfake.warpSize = 64;\n"
    assert [f.id for f in fixes] == ["warp-sync-full-mask", "warp-size-cuda-32", "warp-size-host-32"]
    assert apply(cuda)[0] == cuda  # a tree with HIP code paths: warpSize and width-less shuffles are HIP's


def test_warp_size_in_the_helpers_other_fixups_insert_is_left():
    """openfold 0.0.1's attention kernel shuffles bf16 pairs in a CUDA-only tree: the bf16x2-shuffles
    helpers (HIP's signatures, default width warpSize) are not the user's code, and the rewritten calls
    pass width 32, so warp-size-cuda-32 changes only the user's warpSize and reports no helper lines."""
    cuda = ('#include <cuda_bf16.h>\n__device__ __nv_bfloat162 f(__nv_bfloat162 v) {\n'
            '  return __shfl_xor_sync(0xffffffff, v, 1);\n}\n__device__ int lanes() { return warpSize; }\n')
    out, fixes = apply_cuda_only(cuda)
    assert "__shfl_xor(v, 1, 32)" in out and "int width = warpSize) {" in out
    assert "__device__ int lanes() { return 32; }" in out
    (size,) = [f for f in fixes if f.id == "warp-size-cuda-32"]
    assert size.lines == (5,)


def test_warp_size_is_kept_in_a_function_that_uses_wmma():
    """A rocWMMA fragment belongs to the whole wavefront: a WMMA kernel's tile index `tid / warpSize`
    (Learn-CUDA-Programming's tensorcore.cu) must not become `tid / 32`, which would give one wave64
    wavefront two tiles; the reduction kernel of the same file keeps CUDA's 32."""
    cuda = ("__global__ void reduce(float *v) {\n  int lane = threadIdx.x % warpSize;\n}\n"
            "__global__ void wmma_gemm(half *a) {\n  int warpM = (blockIdx.x * blockDim.x + threadIdx.x) / warpSize;\n"
            "  if (warpM < 4) {\n    wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::col_major> a_frag;\n"
            "    wmma::load_matrix_sync(a_frag, a, 16);\n  }\n}\n")
    out, fixes = apply_cuda_only(cuda)
    assert "int lane = threadIdx.x % 32;" in out
    assert "int warpM = (blockIdx.x * blockDim.x + threadIdx.x) / warpSize;" in out
    assert "warp-size-cuda-32" in [f.id for f in fixes]


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


# ggml-cuda (llama-cpp-python 0.3.36 sdist, vendor/llama.cpp/ggml/src/ggml-cuda): common.cuh picks its
# vendor header, whose first include is the CUDA toolkit's <cuda.h>.
GGML_COMMON = ('#pragma once\n#include "ggml.h"\n#if defined(GGML_USE_HIP)\n#include "vendors/hip.h"\n'
               '#elif defined(GGML_USE_MUSA)\n#include "vendors/musa.h"\n#else\n#include "vendors/cuda.h"\n'
               '#endif // defined(GGML_USE_HIP)\n')
GGML_VENDOR = "#pragma once\n\n#include <cuda_runtime.h>\n#include <cuda.h>\n#include <cublas_v2.h>\n"


def test_tree_header_named_like_a_cuda_header_keeps_its_include():
    """hipify-perl 7.2 turns `#include "vendors/cuda.h"` into "vendors/hip/hip_runtime.h" (measured on
    ggml's common.cuh), which exists nowhere; the tree's own file keeps its name (tree-include-kept)."""
    from migrate import advice, rules
    from migrate.archs import Arch
    hip = GGML_COMMON.replace('"vendors/cuda.h"', '"vendors/hip/hip_runtime.h"')
    texts = {"src/ggml-cuda/common.cuh": (GGML_COMMON, hip), "src/ggml-cuda/vendors/cuda.h": (GGML_VENDOR, GGML_VENDOR),
             "include/ggml.h": ("#pragma once\n", "#pragma once\n")}
    migrated = advice.migrate_tree(texts, rules.load_rules(), [Arch("gfx942", "CDNA3", 64, 65536)], ("include",))
    assert '#include "vendors/cuda.h"' in migrated.final["src/ggml-cuda/common.cuh"]
    assert "tree-include-kept" in [f.id for f in migrated.fixes["src/ggml-cuda/common.cuh"]]


def test_angle_include_never_resolves_to_the_including_file(tmp_path):
    """vendors/cuda.h's <cuda.h> is the CUDA toolkit's: the suffix lookup must not find the file itself
    (that put src/ggml-cuda/vendors on hipify-clang's -I path, where it shadowed the toolkit's cuda.h:
    "cuda.h did not define CUDA_VERSION")."""
    texts = {"src/ggml-cuda/vendors/cuda.h": GGML_VENDOR, "src/ggml-cuda/common.cuh": GGML_COMMON,
             "src/ggml-cuda/acc.cu": '#include "common.cuh"\n'}
    graph = includes.IncludeGraph(texts)
    assert graph.closure("src/ggml-cuda/acc.cu").dirs == ()
    other = {**texts, "src/k.cu": "#include <cuda.h>\n"}
    assert includes.IncludeGraph(other).closure("src/k.cu").dirs == ("src/ggml-cuda/vendors",)  # a guess, kept
    (tmp_path / "cuda.h").write_text("")  # the CUDA headers hipify-clang parses with are a system folder
    assert includes.IncludeGraph(other, system_dirs=(str(tmp_path),)).closure("src/k.cu").dirs == ()


def test_identifier_taken_for_a_header_name_gets_its_cuda_name_back():
    """hipify-perl 7.2's output of ggml-cuda.cu (measured): `cublas_h` matched its unescaped
    `\\bcublas.h\\b` and became `hipblas.h`, which does not compile ("expected ';'")."""
    cuda = ("    cublasHandle_t cublas_h = ctx.cublas_handle();\n"
            "    CUBLAS_CHECK(cublasSetStream(cublas_h, main_stream));\n"
            "#include <cublas.h>\n    float h = v.h + cuda_h;\n")
    hip = ("    hipblasHandle_t hipblas.h = ctx.cublas_handle();\n"
           "    HIPBLAS_CHECK(hipblasSetStream(hipblas.h, main_stream));\n"
           "#include <rocblas.h>\n    float h = v.h + hip/hip_runtime.h;\n")
    out, fixes = apply(cuda, hip)
    assert out.split("\n")[:2] == ["    hipblasHandle_t cublas_h = ctx.cublas_handle();",
                                   "    HIPBLAS_CHECK(hipblasSetStream(cublas_h, main_stream));"]
    assert "#include <rocblas/rocblas.h>" in out  # include lines are the header-layout fixup's
    assert "    float h = v.h + cuda_h;" in out  # a member `.h` of the CUDA line is left as it is
    assert "hipify-dot-identifier" in [f.id for f in fixes]


def test_trap_becomes_hips_device_abort():
    """ggml's common.cuh ends no_device_code() with __trap(); HIP 7.2 has no __trap, and its device
    abort() is __builtin_trap() (hip/amd_detail/hip_assert.h)."""
    cuda = "    GGML_UNUSED(arch_list);\n#endif\n    __trap();\n\n    GGML_UNUSED(no_device_code);\n"
    out, fixes = apply(cuda)
    assert "    __builtin_trap();\n" in out and "__trap();" not in out.replace("__builtin_trap", "")
    assert [f.id for f in fixes] == ["cuda-trap"] and fixes[0].lines == (3,)
    own = "__device__ void __trap() { abort(); }\n__global__ void k() { __trap(); }\n"
    out, fixes = apply(own)
    assert "cuda-trap" not in [f.id for f in fixes] and out.endswith(own)


def test_a_cu_units_host_calls_get_the_headers_nvccs_implicit_include_gives():
    """CUDA_Freshman's reduce_shfl.cu (Tony-Tan/CUDA_Freshman) calls malloc and memcpy in host code
    with only freshman.h / cuda_runtime.h included: nvcc's implicit cuda_runtime.h brings <string.h>
    and <stdlib.h>; hipcc's headers declare only the __device__ memcpy ('no matching function')."""
    cuda = ('#include <cuda_runtime.h>\n#include <stdio.h>\n#include "freshman.h"\nint main() {\n'
            '\tint * tmp = (int*)malloc(bytes);\n\tmemcpy(tmp, idata_host, bytes);\n\tprintf("%d", tmp[0]);\n}\n')
    hip = cuda.replace("#include <cuda_runtime.h>", '#include "hip/hip_runtime.h"')
    out, fixes = apply(cuda, hip)
    # after the leading includes, so that units keep sharing a precompiled header of those
    assert out.startswith('#include "hip/hip_runtime.h"\n#include <stdio.h>\n#include "freshman.h"\n'
                          '#include <string.h>  // nvcc\'s cuda_runtime.h includes it in every .cu unit\n'
                          '#include <stdlib.h>  // nvcc\'s cuda_runtime.h includes it in every .cu unit\nint main() {\n')
    assert [f.id for f in fixes] == ["nvcc-implicit-headers"]
    # a header is compiled within the .cu units that include it, after nvcc's implicit include (llm.c's
    # dev/cuda/common.h calls memset and isfinite in host code); a C++ source the host compiler builds
    # is not a .cu unit: nvcc's include does not apply
    assert fixups.apply_all("f.cuh", cuda, hip, [], linemap.map_lines(cuda.split("\n"), hip.split("\n")))[0] == out
    assert fixups.apply_all("f.cpp", cuda, hip, [], linemap.map_lines(cuda.split("\n"), hip.split("\n")))[0] == hip
    # names in comments and strings, and headers included in their <cstring> form, add nothing
    quiet = '#include <cstring>\n// malloc(n) later\nvoid f() { memcpy(a, b, 4); puts_msg("free(x)"); }\n'
    assert apply(quiet)[0] == quiet


def test_a_launch_spaced_by_a_formatter_is_a_launch_again():
    """nosferalatu/SimpleGPUHashTable linearprobing.cu:138 and :201 (Visual Studio's spacing); a
    template argument list that ends in `>> >` is left alone."""
    cuda = ("    gpu_hashtable_insert << <gridsize, threadblocksize >> > (pHashTable, device_kvs, (uint32_t)num_kvs);\n"
            "    gpu_hashtable_delete<< <gridsize, threadblocksize >> > (pHashTable, device_kvs, (uint32_t)num_kvs);\n"
            "    auto v = make<std::vector<std::pair<int, int>> >(n);\n    int s = a << b, t = c >> d;\n"
            # NVIDIA's Video Codec SDK ColorSpace.cu (PyNvCodec 0.0.6): a template kernel, the launch on its own line
            "    Yuv444ToRgbPlanarKernel<ushort2, COLOR32, uchar2>\n        << <dim3(nWidth / 64, 2), dim3(32, 2) >> >\n"
            "        (dpYUV444, nPitch);\n")
    out, fixes = apply(cuda)
    assert out == ("    gpu_hashtable_insert <<<gridsize, threadblocksize >>> (pHashTable, device_kvs, (uint32_t)num_kvs);\n"
                   "    gpu_hashtable_delete<<<gridsize, threadblocksize >>> (pHashTable, device_kvs, (uint32_t)num_kvs);\n"
                   "    auto v = make<std::vector<std::pair<int, int>> >(n);\n    int s = a << b, t = c >> d;\n"
                   "    Yuv444ToRgbPlanarKernel<ushort2, COLOR32, uchar2>\n        <<<dim3(nWidth / 64, 2), dim3(32, 2) >>>\n"
                   "        (dpYUV444, nPitch);\n")
    assert [f.id for f in fixes] == ["launch-spelling"] and fixes[0].lines == (1, 2, 6)


def test_cudas_callback_calling_convention_is_dropped():
    """CUDA_Freshman stream_call_back.cu:6; CUDA's driver_types.h defines CUDART_CB as __stdcall on
    Windows and as nothing elsewhere; a tree that defines it itself keeps it."""
    cuda = "void CUDART_CB my_callback(cudaStream_t stream,cudaError_t status,void * data)\n"
    out, fixes = apply(cuda, cuda.replace("cudaStream_t", "hipStream_t").replace("cudaError_t", "hipError_t"))
    assert out == "void my_callback(hipStream_t stream,hipError_t status,void * data)\n"
    assert [f.id for f in fixes] == ["cudart-calling-convention"]
    own = "#define CUDART_CB\nvoid CUDART_CB cb(void *p);\n"
    assert apply(own)[0] == own


def test_deprecated_tensor_op_gemm_algo_becomes_hipblas_default():
    """ggml-cuda.cu (llama-cpp-python 0.3.36) passes CUBLAS_GEMM_DEFAULT_TENSOR_OP to cublasGemmEx;
    hipify-perl 7.2 leaves it ("use of undeclared identifier")."""
    cuda = ("                    cu_data_type, ne0,\n                    cu_compute_type,\n"
            "                    CUBLAS_GEMM_DEFAULT_TENSOR_OP));\n")
    out, fixes = apply(cuda)
    assert "HIPBLAS_GEMM_DEFAULT));" in out and [f.id for f in fixes] == ["gemm-tensor-op-algo"]
    aliased = "#define CUBLAS_GEMM_DEFAULT_TENSOR_OP HIPBLAS_GEMM_DEFAULT\nint a = CUBLAS_GEMM_DEFAULT_TENSOR_OP;\n"
    assert apply(aliased)[0] == aliased


def test_cublas_status_text_becomes_hipblas_status_to_string():
    """HeCBench ludb-cuda's error check prints cublasGetStatusString(status); hipify-perl 7.2 lists it
    (and cublasGetStatusName) as unsupported in HIP mode; hipBLAS has hipblasStatusToString."""
    cuda = ('    printf("cuBLAS error %s at %d\\n", cublasGetStatusString(status), __LINE__);\n'
            "  const char* n = cublasGetStatusName (s);\n")
    out, fixes = apply(cuda, cuda.replace("cuBLAS", "hipBLAS"))
    assert out.count("hipblasStatusToString(") == 1 and "hipblasStatusToString (s)" in out, out
    assert "blas-status-string" in [f.id for f in fixes]
    own = "const char* cublasGetStatusString(int s) { return \"x\"; }\nint a = cublasGetStatusString(1)[0];\n"
    assert apply(own)[0] == own
    # flashinfer-python 0.2.2 include/flashinfer/gemm/bmm_fp8.cuh includes cublasLt.h only: hipblaslt.h
    # does not include hipblas.h, which declares hipblasStatusToString
    lt = '#include <cublasLt.h>\n#include <iostream>\nauto s = cublasGetStatusString(e);\n'
    out = apply(lt, lt.replace("cublasLt.h", "hipblaslt/hipblaslt.h"))[0]
    assert out.split("\n")[:3] == ["#include <hipblaslt/hipblaslt.h>", "#include <iostream>",
                                   "#include <hipblas/hipblas.h>  // rocmig: hipblasStatusToString"], out
    has = "#include <hipblas/hipblas.h>\nauto s = cublasGetStatusString(e);\n"
    assert apply(has)[0] == has.replace("cublasGetStatusString", "hipblasStatusToString")


def test_hiprtc_link_names_get_their_header():
    # the CUDA samples' ptxjit.cpp: cuda.h only, CUlinkState / cuLinkCreate, which hipify maps to hipRTC's linker
    cuda = "#include <cuda.h>\n#include <cstring>\nvoid ptxJIT(CUlinkState *lState) { cuLinkCreate(0, 0, 0, lState); }\n"
    hip = "#include <hip/hip_runtime.h>\n#include <cstring>\nvoid ptxJIT(hiprtcLinkState *lState) { hiprtcLinkCreate(0, 0, 0, lState); }\n"
    out, fixes = apply(cuda, hip)
    assert out.split("\n")[2] == "#include <hip/hiprtc.h>  // rocmig: hiprtcLink*" and "hiprtc-link-header" in [f.id for f in fixes]
    assert apply(hip.replace("<cstring>", "<hip/hiprtc.h>"))[0] == hip.replace("<cstring>", "<hip/hiprtc.h>")


def test_translator_self_define_is_commented_out_and_hip_macro_survives(tmp_path):
    """LightGBM 4.7.0 include/LightGBM/cuda/cuda_rocm_interop.h: hipify-perl 7.2 turns the project's
    `#define cudaDeviceProp hipDeviceProp_t` into `#define hipDeviceProp_t hipDeviceProp_t`, which hides
    HIP 7's `#define hipDeviceProp_t hipDeviceProp_tR0600`; a #define N N of the CUDA text itself stays."""
    cuda = ("#define cudaDeviceProp hipDeviceProp_t\n#define cudaStream_t hipStream_t  // stream\n"
            "#define HAVE_FOO HAVE_FOO\n#define cudaMalloc(p, n) hipMalloc(p, n)\n")
    hip = ("#define hipDeviceProp_t hipDeviceProp_t\n#define hipStream_t hipStream_t  // stream\n"
           "#define HAVE_FOO HAVE_FOO\n#define hipMalloc(p, n) hipMalloc(p, n)\n")
    out = fixups.self_defines(hip, cuda.split("\n"), list(range(5))).split("\n")
    assert out[0].startswith("// #define hipDeviceProp_t hipDeviceProp_t") and out[1].startswith("// #define hipStream_t")
    assert out[2] == "#define HAVE_FOO HAVE_FOO" and out[3] == "#define hipMalloc(p, n) hipMalloc(p, n)"
    # what it guards against, run through the C preprocessor: with the self-define the name is no type
    header = ("#define hipDeviceProp_t hipDeviceProp_tR0600\ntypedef struct { int major; } hipDeviceProp_tR0600;\n")
    for text, ok in ((hip, False), ("\n".join(out), True)):
        unit = tmp_path / f"u{ok}.cc"
        unit.write_text(header + text + "int f() { hipDeviceProp_t p; p.major = 9; return p.major; }\n")
        run = subprocess.run(["cc", "-fsyntax-only", "-x", "c++", str(unit)], capture_output=True, text=True)
        assert (run.returncode == 0) is ok, run.stderr


@pytest.mark.parametrize("major,rewritten", [(3, True), (2, False), (None, False)])
def test_hipblas_datatype_follows_the_toolchains_hipblas(tmp_path, major, rewritten):
    """DeepSpeed 0.19.8 blas_utils.h after torch.utils.hipify 2.14 (cublasDataType_t -> hipblasDatatype_t):
    hipBLAS 3 (ROCm 7.2) has no hipblasDatatype_t and takes hipDataType; hipBLAS 2 without HIPBLAS_V2
    still takes hipblasDatatype_t, so the rewrite follows the version header hipcc would include."""
    from migrate import advice, rules, sysdeps
    from migrate.archs import Arch
    if major is not None:
        (tmp_path / "hipblas").mkdir()
        (tmp_path / "hipblas" / "hipblas-version.h").write_text(f"#define hipblasVersionMajor {major}\n")
    assert sysdeps.hipblas_major((str(tmp_path),)) == major
    cuda = "cublasDataType_t get_datatype(BlasType type) { return HIPBLAS_R_32F; }\n"
    hip = "hipblasDatatype_t get_datatype(BlasType type) { return HIPBLAS_R_32F; }\n"
    migrated = advice.migrate_tree({"blas_utils.h": (cuda, hip)}, rules.load_rules(), [Arch("gfx942", "CDNA3", 64, 65536)],
                                   system_dirs=(str(tmp_path),))
    assert ("hipDataType get_datatype" in migrated.final["blas_utils.h"]) is rewritten
    assert ("hipblas-datatype-v3" in [f.id for f in migrated.fixes["blas_utils.h"]]) is rewritten


def test_hipblas_complex_types_become_hips_where_no_member_call_needs_the_old_class():
    """qulacs 0.6.14 gpu_wrapping.h's own HIP branch: `using gpublasDoubleComplex = hipblasDoubleComplex;`,
    the type its hipblasZdotc / hipblasZgemm calls cast to; hipBLAS 3 (ROCm 7.2) has only hipDoubleComplex."""
    text = ("using gpublasDoubleComplex = hipblasDoubleComplex;\nhipblasComplex* c;\n"
            "// hipblasComplex in a comment\nhipblasDatatype_t t;\n")
    assert features.hipblas_datatype(text) == ("using gpublasDoubleComplex = hipDoubleComplex;\nhipComplex* c;\n"
                                               "// hipComplex in a comment\nhipDataType t;\n")
    member = "hipblasComplex z(1.f, 2.f);\nfloat r = z.real();\nhipblasDatatype_t t;\n"
    assert features.hipblas_datatype(member) == "hipblasComplex z(1.f, 2.f);\nfloat r = z.real();\nhipDataType t;\n"


def test_bf16_header_for_a_file_that_names_the_type_without_it():
    """DeepSpeed 0.19.8 cutlass_ops/mixed_gemm/mixed_gemm.cu names __nv_bfloat16 with only c10 headers
    included (they bring cuda_bf16.h for CUDA builds, not hip_bf16.h for ROCm ones): hipcc said
    "unknown type name '__hip_bfloat16'"."""
    hip = ('#ifdef X\n#include <x.h>\n#endif\n#include <c10/hip/HIPStream.h>\n#include "mixed_gemm.h"\n'
           "using T = __nv_bfloat16;\n")
    out = fixups.bf16(hip, hip.split("\n"), list(range(7)))
    assert out.split("\n")[3:6] == ["#include <c10/hip/HIPStream.h>", "#include <hip/hip_bf16.h>", '#include "mixed_gemm.h"']
    assert out.endswith("using T = __hip_bfloat16;\n")
    has = "#include <hip/hip_bf16.h>\n__hip_bfloat16 x;\n"
    assert fixups.bf16(has, has.split("\n"), list(range(3))) == has
    fragment = "// included inside a namespace\n__hip_bfloat16 y;\n"
    assert fixups.bf16(fragment, fragment.split("\n"), list(range(3))) == fragment


def test_bf16_raw_structs_get_their_hip_names():
    """CUTLASS's bfloat16.h (vendored by natten 0.21.7) builds `__nv_bfloat16_raw raw(x);`: cuda_bf16.h's
    {unsigned short x;} struct, which amd_hip_bf16.h declares as __hip_bfloat16_raw (x, y for the 2-wide)."""
    hip = "#include <hip/hip_bf16.h>\n__nv_bfloat16_raw r; __nv_bfloat162_raw r2; my__nv_bfloat16_raw_t k;\n"
    out = fixups.bf16(hip, hip.split("\n"), list(range(3)))
    assert out.split("\n")[1] == "__hip_bfloat16_raw r; __hip_bfloat162_raw r2; my__nv_bfloat16_raw_t k;"


def test_no_bf16_header_where_the_tree_declares_the_type_itself():
    """DeepSpeed 0.19.8 csrc/transformer/inference/csrc/gelu.cu: `using __nv_bfloat162 = __half2;` for builds
    without BF16_AVAILABLE; adding hip_bf16.h made it a typedef redefinition ('__half2' vs '__hip_bfloat162')."""
    from migrate import advice, rules
    from migrate.archs import Arch
    cuda = ('#include "conversion_utils.h"\n#ifndef BF16_AVAILABLE\nusing __nv_bfloat162 = __half2;\n#endif\n'
            "__device__ void f(__nv_bfloat162 x);\n")
    hip = '#include "hip/hip_runtime.h"\n' + cuda.replace("__nv_bfloat162", "__hip_bfloat162")
    assert fixups.declares_bf16([cuda]) and not fixups.declares_bf16(["typedef __nv_bfloat16 bf16;\n"])
    migrated = advice.migrate_tree({"gelu.cu": (cuda, hip)}, rules.load_rules(), [Arch("gfx942", "CDNA3", 64, 65536)])
    assert "hip_bf16.h" not in migrated.final["gelu.cu"]
    # a unit that names the type without declaring it still gets the header when only another unit declares it
    other = '#include <c10/hip/HIPStream.h>\nusing T = __nv_bfloat16;\n'
    both = advice.migrate_tree({"gelu.cu": (cuda, hip), "mixed_gemm.cu": (other, other)}, rules.load_rules(),
                               [Arch("gfx942", "CDNA3", 64, 65536)])
    assert "hip_bf16.h" not in both.final["gelu.cu"] and "#include <hip/hip_bf16.h>" in both.final["mixed_gemm.cu"]
    header = advice.migrate_tree({"fallback.h": (cuda, hip), "mixed_gemm.cu": (other, other)}, rules.load_rules(),
                                 [Arch("gfx942", "CDNA3", 64, 65536)])
    assert "hip_bf16.h" not in header.final["mixed_gemm.cu"]  # a header nobody is seen to include may reach any file
    # a declaring header with known includers counts for the files compiled with it only (vLLM 0.34.0's
    # amd/quant_utils.cuh `using __nv_bfloat16 = __hip_bfloat16;`, and kimi_k3's unit that includes neither)
    user = '#include "fallback.h"\n__device__ void g(__nv_bfloat162 x);\n'
    placed = advice.migrate_tree({"fallback.h": (cuda, hip), "user.cu": (user, user), "mixed_gemm.cu": (other, other)},
                                 rules.load_rules(), [Arch("gfx942", "CDNA3", 64, 65536)])
    assert "hip_bf16.h" not in placed.final["user.cu"] and "#include <hip/hip_bf16.h>" in placed.final["mixed_gemm.cu"]


def test_a_crlf_input_maps_to_its_lf_migration_line_by_line():
    """CUDA by Example's common/gl_helper.h has CRLF line ends; its migrated text is read back with LF
    ones. The error at its line 44 (`#include <GL/glut.h>`) must map back to line 44, not to none."""
    cuda = ["/* header */\r", "\r", "#ifdef _WIN32\r", "#include \"GL/glut.h\"\r", "#else\r",
            "#include <GL/glut.h>\r", "#endif\r", ""]
    hip = [line.rstrip("\r") for line in cuda]
    assert linemap.map_lines(cuda, hip) == list(range(len(cuda)))


def _fixup_ids() -> list[str]:
    """The ids of the steps apply_all runs, read from its `steps` list."""
    import ast
    tree = ast.parse((ROOT / "recipes" / "migrate" / "migrate" / "fixups.py").read_text())
    apply_all = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "apply_all")
    steps = next(n.value for n in ast.walk(apply_all)
                 if isinstance(n, ast.Assign) and getattr(n.targets[0], "id", "") == "steps")
    return [t.elts[0].value for t in steps.elts if isinstance(t, ast.Tuple) and isinstance(t.elts[0], ast.Constant)]


def test_every_fixup_is_in_the_docs_table():
    import re
    ids = _fixup_ids()
    table = set(re.findall(r"^\s*\| `([a-z0-9-]+)` \|", (ROOT / "docs" / "migrate.md").read_text(), re.MULTILINE))
    assert len(ids) > 30
    assert [i for i in ids if i not in table] == []


def _header_dirs(tmp_path):
    """A hipcc include folder with hip/hip_runtime_api.h and hipcub/hipcub.hpp, and a CUDA toolkit
    include folder with cuda_runtime.h and cub/cub.cuh."""
    system, toolkit = tmp_path / "rocm", tmp_path / "cuda"
    for path in (system / "hip/hip_runtime_api.h", system / "hipcub/hipcub.hpp",
                 toolkit / "cuda_runtime.h", toolkit / "cub/cub.cuh"):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("#pragma once\n")
    return (str(system),), (str(toolkit),)


def test_a_project_header_mapped_to_a_hip_header_keeps_its_name(tmp_path):
    """hipify 7.2's header table maps the CUDA samples' own Common/helper_cuda.h to
    hip/hip_runtime_api.h, which exists: the project's findCudaDevice / checkCudaErrors were lost and
    every sample failed with 'use of undeclared identifier'. A header of the tree that is no CUDA
    toolkit header keeps its name; a vendored copy of a toolkit header (cub/) is still translated."""
    from migrate import advice, rules
    from migrate.archs import Arch
    system, toolkit = _header_dirs(tmp_path)
    cuda = "#include <cuda_runtime.h>\n#include <helper_cuda.h>\n#include <cub/cub.cuh>\n"
    hip = "#include <hip/hip_runtime.h>\n#include <hip/hip_runtime_api.h>\n#include <hipcub/hipcub.hpp>\n"
    texts = {"Samples/asyncAPI/asyncAPI.cu": (cuda, hip), "Common/helper_cuda.h": ("#pragma once\n", "#pragma once\n"),
             "third_party/cub/cub.cuh": ("#pragma once\n", "#pragma once\n")}
    archs = [Arch("gfx942", "CDNA3", 64, 65536)]
    migrated = advice.migrate_tree(texts, rules.load_rules(), archs, ("Common",), system, toolkit_dirs=toolkit)
    assert migrated.final["Samples/asyncAPI/asyncAPI.cu"] == \
        "#include <hip/hip_runtime.h>\n#include <helper_cuda.h>\n#include <hipcub/hipcub.hpp>\n"
    # without the toolkit's headers a project header cannot be told from a vendored toolkit one: left
    unknown = advice.migrate_tree(texts, rules.load_rules(), archs, ("Common",), system)
    assert unknown.final["Samples/asyncAPI/asyncAPI.cu"] == hip


def test_a_rename_to_another_file_of_the_tree_is_kept(tmp_path):
    """torch.utils.hipify renames the include of a tree header x_cuda.cuh to its hipified file x_hip.cuh."""
    from migrate import advice, rules
    from migrate.archs import Arch
    system, toolkit = _header_dirs(tmp_path)
    texts = {"csrc/k.cu": ('#include "k_cuda.cuh"\n', '#include "k_hip.cuh"\n'),
             "csrc/k_cuda.cuh": ("#pragma once\n", "#pragma once\n"), "csrc/k_hip.cuh": ("#pragma once\n", "#pragma once\n")}
    migrated = advice.migrate_tree(texts, rules.load_rules(), [Arch("gfx942", "CDNA3", 64, 65536)], (), system,
                                   toolkit_dirs=toolkit)
    assert migrated.final["csrc/k.cu"] == ('#include <hip/hip_runtime.h>  // nvcc includes cuda_runtime.h first in every '
                                           '.cu unit\n#include "k_hip.cuh"\n')


def test_a_renamed_project_include_is_found_when_the_line_map_pairs_it_with_a_blank(tmp_path):
    """hipify-clang 7.2.4 on the CUDA samples' cudaOpenMP.cu, whose first include is <helper_cuda.h>:
    it adds a blank line and hip/hip_runtime.h above it and renames it to hip/hip_runtime_api.h; the
    line map pairs the include with the blank line."""
    from migrate import fixups
    system, toolkit = _header_dirs(tmp_path)
    cuda = " */\n\n#include <helper_cuda.h>\n#include <omp.h>\n"
    hip = " */\n\n\n#include <hip/hip_runtime.h>\n#include <hip/hip_runtime_api.h>\n#include <omp.h>\n"
    headers = fixups.HeaderLookup(lambda name: name == "helper_cuda.h",
                                  lambda name: name in ("hip/hip_runtime.h", "hip/hip_runtime_api.h", "omp.h"),
                                  lambda name: name == "cuda_runtime.h")
    out = fixups.tree_includes_kept(hip, cuda.split("\n"), [0, 1, 2, 5, 6], headers)
    assert out == " */\n\n\n#include <hip/hip_runtime.h>\n#include <helper_cuda.h>\n#include <omp.h>\n"
    # the added hip_runtime.h is never taken for the renamed include
    assert fixups.tree_includes_kept(hip, cuda.split("\n"), [0, 1, 3, 5, 6], headers) == out


def test_a_tree_copy_of_a_cuda_library_header_does_not_keep_the_include():
    """A ROCm fork of llm.c keeps shims llmc/hip_shims/cublas_v2.h and cublasLt.h; dev/cuda/common.h's
    <cublas_v2.h> is cuBLAS's (not in the toolkit headers hipify-clang has), so hipify's hipBLAS stands."""
    from migrate import fixups
    cuda = "#include <cublas_v2.h>\n#include <cublasLt.h>\n#include <helper_cuda.h>\n"
    hip = "#include <hipblas/hipblas.h>\n#include <hipblaslt/hipblaslt.h>\n#include <hip/hip_runtime_api.h>\n"
    headers = fixups.HeaderLookup(lambda name: name in ("cublas_v2.h", "cublasLt.h", "helper_cuda.h"),
                                  lambda name: name.startswith(("hip/", "hipblas")), lambda name: name == "cuda_runtime.h")
    out = fixups.tree_includes_kept(hip, cuda.split("\n"), [0, 1, 2, 3], headers)
    assert out == "#include <hipblas/hipblas.h>\n#include <hipblaslt/hipblaslt.h>\n#include <helper_cuda.h>\n"


def test_a_quoted_include_of_a_file_beside_the_includer_is_the_trees_whatever_its_name():
    """transformer-engine-torch 2.20.2's common/util/pybind_helper.h includes "cuda_runtime.h": the
    preprocessor finds its own common/util/cuda_runtime.h beside it first (namespace transformer_engine::cuda);
    torch.utils.hipify made it "hip/hip_runtime.h". The same name in angle brackets, or quoted in a folder
    without such a file, is CUDA's, and hipify's HIP header stands."""
    from migrate import fixups
    cuda = '#include <pybind11/pybind11.h>\n#include "cuda_runtime.h"\n#include <cuda_runtime.h>\n'
    hip = '#include <pybind11/pybind11.h>\n#include "hip/hip_runtime.h"\n#include <hip/hip_runtime.h>\n'
    tree = {"common_headers/common/util/cuda_runtime.h", "common_headers/common/util/pybind_helper.h"}
    headers = fixups.HeaderLookup(lambda name: any(("/" + p).endswith("/" + name) for p in tree),
                                  lambda name: name.startswith(("hip/", "pybind11/")), lambda name: name == "cuda_runtime.h")
    out = fixups.tree_includes_kept(hip, cuda.split("\n"), [0, 1, 2, 3], headers, "common_headers/common/util")
    assert out == '#include <pybind11/pybind11.h>\n#include "cuda_runtime.h"\n#include <hip/hip_runtime.h>\n'
    assert fixups.tree_includes_kept(hip, cuda.split("\n"), [0, 1, 2, 3], headers, "csrc") == hip


def test_an_include_paired_with_another_includes_translation_is_left():
    """optimum-quanto 0.2.7 awq/v2/gemm_cuda.cu after torch.utils.hipify, which adds a banner and
    "hip/hip_runtime.h" above the rewritten includes: the line map pairs CUDA's `"gemm_cuda.h"` (line 2) with
    `<hip/hip_fp16.h>`, the translation of `<cuda_fp16.h>`. Translators keep an include's delimiters, so that
    pair is not a rename, and the tree's gemm_cuda.h must not replace hip_fp16.h."""
    from migrate import fixups
    cuda = '#include <cuda_fp16.h>\n#include "semaphore.h"\n#include "gemm_cuda.h"\n'
    hip = ('// !!! This is a file automatically generated by hipify!!!\n#include "hip/hip_runtime.h"\n'
           '#include <hip/hip_fp16.h>\n#include "../hip/semaphore.h"\n#include "../hip/gemm_hip.h"\n')
    tree = {"cuda/gemm_cuda.h", "cuda/semaphore.h", "hip/gemm_hip.h", "hip/semaphore.h"}
    headers = fixups.HeaderLookup(lambda name: any(("/" + p).endswith("/" + name.lstrip("./")) for p in tree),
                                  lambda name: name.startswith("hip/"), lambda name: name == "cuda_fp16.h")
    assert fixups.tree_includes_kept(hip, cuda.split("\n"), [0, 1, 2, 3], headers, "hip") == hip


def test_a_relative_project_include_keeps_its_name_where_the_tree_lacks_it():
    """Rodinia (as stored): kmeans_cuda.cu includes "../../common/cuda/helper_cuda.h", a folder outside the
    copy; hipify-perl makes it "../../common/cuda/hip/hip_runtime_api.h", a file nobody has. The relative path
    is the project's, so it keeps its name; a bare name the tree lacks stays hipify's."""
    from migrate import fixups
    cuda = '#include "../../common/cuda/helper_cuda.h"\n#include "helper_cuda.h"\n#include <stdlib.h>\n'
    hip = ('#include "../../common/cuda/hip/hip_runtime_api.h"\n#include "hip/hip_runtime_api.h"\n'
           "#include <stdlib.h>\n")
    headers = fixups.HeaderLookup(lambda name: False, lambda name: name.startswith("hip/"), lambda name: False)
    out = fixups.tree_includes_kept(hip, cuda.split("\n"), [0, 1, 2, 3], headers)
    assert out == hip.replace("../../common/cuda/hip/hip_runtime_api.h", "../../common/cuda/helper_cuda.h")


def test_renamed_project_includes_in_a_run_are_paired_in_order():
    """hipify-clang 7.2.4 on the CUDA samples' fp16ScalarProduct.cu: "cuda_fp16.h" then "helper_cuda.h";
    it adds a blank and hip/hip_runtime.h above them, and the line map pairs the two includes with
    those; the run of two includes is paired with the two renamed ones in order."""
    from migrate import fixups, linemap
    cuda = ' */\n\n#include "cuda_fp16.h"\n#include "helper_cuda.h"\n\n#include <cstdio>\n'
    hip = ' */\n\n\n#include <hip/hip_runtime.h>\n#include "hip/hip_fp16.h"\n#include "hip/hip_runtime_api.h"\n\n#include <cstdio>\n'
    headers = fixups.HeaderLookup(lambda name: name == "helper_cuda.h", lambda name: name.startswith("hip/"),
                                  lambda name: name in ("cuda_runtime.h", "cuda_fp16.h"))
    mapping = linemap.map_lines(cuda.split("\n"), hip.split("\n"))
    out = fixups.tree_includes_kept(hip, cuda.split("\n"), mapping, headers)
    assert out == hip.replace('"hip/hip_runtime_api.h"', '"helper_cuda.h"')


def test_a_cu_unit_including_a_tree_header_first_gets_the_hip_runtime_first():
    """The CUDA samples' simpleTexture3D_kernel.cu: <helper_cuda.h> first, no cuda_runtime.h (nvcc's is
    implicit); helper_cuda.h declares checkCudaErrors under the runtime's include guard."""
    text = "#include <helper_cuda.h>\n#include <math.h>\n__global__ void k() {}\n"
    out = features.nvcc_implicit_runtime(text, lambda name: name == "helper_cuda.h")
    assert out.startswith("#include <hip/hip_runtime.h>  // nvcc includes") and out.endswith(text)
    first = "#include <hip/hip_runtime.h>\n#include <helper_cuda.h>\n"
    assert features.nvcc_implicit_runtime(first, lambda name: True) == first
    system_only = "#include <thrust/sort.h>\n"
    assert features.nvcc_implicit_runtime(system_only, lambda name: False) == system_only


def test_a_cu_kernel_source_without_includes_gets_the_hip_runtime():
    """The CUDA samples' matrixMulDrv/matrixMul_kernel.cu (loaded with cuModuleLoad by the driver-API
    sample): <stdio.h> only and a kernel using blockIdx; hipify-clang adds no HIP include to it."""
    text = "#include <stdio.h>\n__global__ void matrixMul(float *C) { int bx = blockIdx.x; }\n"
    out = features.nvcc_implicit_runtime(text, lambda name: False)
    assert out.startswith("#include <hip/hip_runtime.h>") and out.endswith(text)
    host_only = "#include <stdio.h>\n// a __global__ kernel is launched elsewhere\nint main() { puts(\"<<<\"); }\n"
    assert features.nvcc_implicit_runtime(host_only, lambda name: False) == host_only


@pytest.mark.parametrize("mask", ["~0", "-1", "~ 0"])
def test_int_all_ones_masks_are_cudas_full_mask(mask):
    """gptqmodel 7.7.0 gemv_cuda.cu:73 `__shfl_xor_sync(~0, fpsum[i], 16)`: CUDA's unsigned mask
    parameter makes ~0 (and -1) 0xffffffff; HIP's template refuses an int mask (static_assert), so the
    exact width-32 form is written as for 0xffffffff, in a tree with HIP code paths too."""
    cuda = f"v += __shfl_xor_sync({mask}, v, 16);\nw = __shfl_xor_sync(~0ull, w, 16);\nx = __shfl_sync(m - 1, x, 0);\n"
    out, fixes = apply(cuda)
    out = out.removeprefix(warp.TYPED_HELPER)
    assert out.split("\n")[0] == "v += __shfl_xor(v, 16, 32);"
    # a 64-bit all-ones mask is HIP's own; an expression ending in - 1 is no literal: its type decides
    assert out.split("\n")[1:] == [cuda.split("\n")[1], "x = __shfl_sync(rocmig_lane_mask(m - 1), x, 0, rocmig_lane_width(m - 1));", ""]
    assert [f.id for f in fixes] == ["warp-sync-full-mask"]


def test_helpers_go_after_the_if_block_that_holds_the_last_include():
    """cupy 14.2.0 cupy_cub.cu ends its includes inside `#ifndef CUPY_USE_HIP ... #else ... #endif`:
    a helper block placed after the last include would sit in the #else branch only."""
    text = ("#include <cupy/cuda_runtime.h>\n#ifndef CUPY_USE_HIP\n#include <cub/device/device_reduce.cuh>\n"
            "#else\n#include <hipcub/device/device_reduce.hpp>\n#endif\n\nint f();\n")
    out = features.insert_after_includes(text, "// HELPER\n")
    assert out == text.replace("#endif\n", "#endif\n// HELPER\n")
    # a header's include guard is no such block; an include at the top level ends the search
    header = "#ifndef A_H\n#define A_H\n#include <a.h>\nint g();\n#endif\n"
    assert features.insert_after_includes(header, "// HELPER\n") == header.replace("<a.h>\n", "<a.h>\n// HELPER\n")
    nested = "#if X\n#if Y\n#include <y.h>\n#endif\n#include <x.h>\n#endif\nint h();\n"
    assert features.insert_after_includes(nested, "// H\n") == nested.replace("<x.h>\n#endif\n", "<x.h>\n#endif\n// H\n")
    plain = "#include <a.h>\n#if X\nint x;\n#endif\n"
    assert features.insert_after_includes(plain, "// H\n") == "#include <a.h>\n// H\n#if X\nint x;\n#endif\n"


def test_helpers_go_above_their_first_use_and_only_their_own():
    """With the block's own names (first_use), the includes after their first use do not count, and a
    first use inside the #if block that holds the last include puts the block before that #if (both
    branches see it); another block's names move nothing."""
    import re as regex

    use = regex.compile(r"\brocmig_fadd_r[du]\b")
    tail = "#include <a.h>\nfloat f(float x) { return rocmig_fadd_rd(x, x); }\n#include <b.h>\n"
    assert features.insert_after_includes(tail, "// H\n", use) == tail.replace("<a.h>\n", "<a.h>\n// H\n")
    branch = ("#include <hip/hip_runtime.h>\n#ifdef USE_FAST\n#include <fast.h>\nfloat f(float x) { return rocmig_fadd_rd(x, x); }\n"
              "#else\nfloat f(float x) { return rocmig_fadd_ru(x, x); }\n#endif\n")
    assert features.insert_after_includes(branch, "// H\n", use) == branch.replace("#ifdef", "// H\n#ifdef")
    half = ("#include <hip/hip_runtime.h>\nfloat lo(float x) { return rocmig_fadd_rd(x, x); }\n#include <hip/hip_fp16.h>\n"
            "__half2 m(__half2 a) { return __hmax2(a, a); }\n")
    assert features.insert_after_includes(half, "// H\n") == half.replace("<hip/hip_fp16.h>\n", "<hip/hip_fp16.h>\n// H\n")


def test_long_inserted_blocks_are_cut_in_the_report_diff():
    before = "#include <x.h>\nint f();\n"
    block = "".join(f"// helper line {i}\n" for i in range(40))
    after = "#include <x.h>\n" + block + "int f();\n"
    lines, diff = fixups._changed(before, after, "a.cu", "ptx-inline-asm")
    assert "+// helper line 7" in diff and "+// helper line 8" not in diff
    assert "+... (32 more added lines: see the migrated file)" in diff and " int f();" in diff
    short = "#include <x.h>\n// one\nint f();\n"
    assert "+// one" in fixups._changed(before, short, "a.cu", "x")[1]


def test_fix_lines_count_the_translators_lines_after_an_earlier_fixup_removed_one():
    """hip-runtime-include-once drops hipify's second runtime include before warp-sync-full-mask runs; the
    warp fix's line is still the translator's line, so the open *_sync call on the line above it (a
    64-bit mask: no exact form) is not reported as fixed by it."""
    from migrate import advice, rules
    from migrate.archs import Arch

    cuda = ("#include <cuda_runtime.h>\n#include <cuda.h>\n#ifdef __HIP_PLATFORM_AMD__\n#endif\n"
            "__global__ void k(const int* x, int* out) {\n  int v = x[threadIdx.x];\n"
            "  unsigned long long wide = __ballot_sync(0xffffffffffffffffull, v > 0);\n"
            "  v += __shfl_sync(wide, v, 1);\n  v += __shfl_sync(0xffffffff, v, 2);\n  out[threadIdx.x] = v;\n}\n")
    hip = cuda.replace("<cuda_runtime.h>", "<hip/hip_runtime.h>").replace("<cuda.h>", "<hip/hip_runtime.h>")
    migrated = advice.migrate_tree({"k.cu": (cuda, hip)}, rules.load_rules(), [Arch("gfx942", "CDNA3", 64, 65536)])
    final = migrated.final["k.cu"]
    assert final.count("hip/hip_runtime.h") == 1 and "__shfl(v, 2, 32)" in final and "__shfl_sync(wide, v, 1)" in final
    warp_fix = [f for f in migrated.fixes["k.cu"] if f.id == "warp-sync-full-mask"]
    assert [f.lines for f in warp_fix] == [(9,)], warp_fix
    # the report names the line of the migrated file, one line up after the removed include
    (entry,) = [e for e in migrated.fix_entries("k.cu") if e["id"] == "warp-sync-full-mask"]
    assert entry["lines"] == [8] and "__shfl(v, 2, 32)" in final.split("\n")[7]
    line8 = [f for f in migrated.findings["k.cu"] if f.line == 8 and f.rule == "warp-sync-intrinsic"]
    assert line8 and line8[0].status == "open", line8


def test_cuda_library_headers_the_translator_left_take_hipify_perls_names(tmp_path, monkeypatch):
    """MinkowskiEngine 0.5.4 src/broadcast_kernel.cuh includes <cusparse_v2.h>, which torch.utils.hipify's
    table lacks; hipify-perl 7.2.4's simpleSubstitutions maps it (its -roc table, to rocsparse.h, is not read)."""
    from migrate import hipify
    script = tmp_path / "hipify-perl"
    script.write_text('sub rocSubstitutions {\n    subst("cusparse_v2.h", "rocsparse.h", "include_cuda_main_header_v2");\n}\n'
                      'sub simpleSubstitutions {\n    subst("cusparse_v2.h", "hipsparse.h", "include_cuda_main_header_v2");\n'
                      '    subst("curand_kernel.h", "hiprand\\/hiprand_kernel.h", "include");\n'
                      '    subst("cudaMalloc", "hipMalloc", "memory");\n'
                      '    subst("math_constants.h", "hip\\/hip_math_constants.h", "include");\n'
                      '    subst("CUDART_INF_F", "HIP_INF_F", "define");\n}\n')
    script.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    hipify._simple_substitutions.cache_clear()
    try:
        table, constants = hipify.include_map(), hipify.math_constant_map()
    finally:
        hipify._simple_substitutions.cache_clear()
    assert table == {"cusparse_v2.h": "hipsparse.h", "curand_kernel.h": "hiprand/hiprand_kernel.h",
                     "math_constants.h": "hip/hip_math_constants.h"}
    assert constants == {"CUDART_INF_F": "HIP_INF_F"}
    # vLLM 0.34.0 dcp_direct_a2a_lse_reduce.cu as torch.utils.hipify leaves it
    vllm = '#include <math_constants.h>\nfloat m = -CUDART_INF_F; // CUDART_INF_F\nconst char* s = "CUDART_INF_F";\n'
    assert fixups.math_constants(fixups.library_headers(vllm, table, lambda name: False), constants) == (
        '#include <hip/hip_math_constants.h>\nfloat m = -HIP_INF_F; // CUDART_INF_F\nconst char* s = "CUDART_INF_F";\n')
    own = "#define CUDART_INF_F (1.f / 0.f)\nfloat m = CUDART_INF_F;\n"
    assert fixups.math_constants(own, constants) == own
    text = '#include <array>\n#include <cusparse_v2.h>\n#include "curand_kernel.h"\n#include <nvToolsExt.h>\n'
    assert fixups.library_headers(text, table | {"nvToolsExt.h": "roctracer/roctx.h"}, lambda name: False) == (
        '#include <array>\n#include <hipsparse.h>\n#include <hiprand/hiprand_kernel.h>\n#include <nvToolsExt.h>\n')
    # a project's own header of that name stays
    assert fixups.library_headers(text, table, lambda name: name == "curand_kernel.h").split("\n")[2] == '#include "curand_kernel.h"'


# ColossalAI 0.5.0 extensions/csrc/kernel/cuda/rms_layernorm_kernel.cu, after torch.utils.hipify (shortened)
PASTED_LAUNCH = """#define RMSNORM_LAUNCHER(UNROLL_FACTOR, THREADDIM)                                 \\
  DISPATCH_RMSNORM(                                                                \\
    input.scalar_type(),                                                           \\
   hipLaunchKernelGGL(( rms_layernorm_kernel<scalar_t, UNROLL_FACTOR>), dim3(grid), dim3(THREADDIM), 0, stream,  \\
      out.data_ptr<scalar_t>(),                                                    \\
      hidden_size);)

#define DISPATCH_RMSNORM(TYPE, ...)                                         \\
  switch (TYPE) {                                                           \\
    case at::ScalarType::Float: {                                           \\
      using scalar_t = float;                                               \\
      general_##__VA_ARGS__;                                                \\
      break;                                                                \\
    }                                                                       \\
  }
void f() {
  hipLaunchKernelGGL(( plain_kernel<float>), dim3(grid), dim3(block), 0, stream, x);
}
"""


def test_a_launch_in_a_pasted_macro_argument_gets_its_triple_chevrons_back():
    out = features.launch_token_paste(PASTED_LAUNCH)
    assert ("   rms_layernorm_kernel<scalar_t, UNROLL_FACTOR><<<dim3(grid), dim3(THREADDIM), 0, stream>>>(\\\n"
            "      out.data_ptr<scalar_t>(),") in out
    assert "general_##__VA_ARGS__;" in out  # the pasting macro itself is not touched
    assert "hipLaunchKernelGGL(( plain_kernel<float>), dim3(grid), dim3(block), 0, stream, x);" in out  # nothing pastes on it
    assert features.launch_token_paste(out) == out
    no_paste = PASTED_LAUNCH.replace("general_##__VA_ARGS__", "__VA_ARGS__")
    assert features.launch_token_paste(no_paste) == no_paste


def test_cstring_goes_before_headers_reaching_rocprims_texture_iterator():
    """bagua 0.9.2's vendored CUB test_iterator.cu includes <cub/iterator/tex_obj_input_iterator.cuh>
    (hipCUB's tex_obj_input_iterator.hpp after the translator) after the runtime header: rocPRIM 7.2's
    texture_cache_iterator.hpp then finds only HIP's __device__ memset."""
    text = ("#include <hip/hip_runtime.h>\n#include <stdio.h>\n#include <hipcub/iterator/tex_obj_input_iterator.hpp>\n"
            "#include <rocprim/rocprim.hpp>\n")
    out = features.texture_iterator_cstring(text)
    assert out == text.replace("#include <hipcub/", "#include <cstring>  // rocPRIM's texture_cache_iterator.hpp calls memset\n"
                                                    "#include <hipcub/", 1)
    assert features.texture_iterator_cstring(out) == out
    already = "#include <string.h>\n#include <hipcub/device/device_spmv.hpp>\n"
    assert features.texture_iterator_cstring(already) == already
    unrelated = "#include <hipcub/hipcub.hpp>\n"  # includes <cstring> before the iterator itself
    assert features.texture_iterator_cstring(unrelated) == unrelated


def test_the_template_keyword_before_a_name_without_arguments_is_dropped():
    """CUB 1.8.0's thread_store.cuh (vendored by bagua 0.9.2): hipcc 7.2's clang rejects the keyword
    where no template argument list follows; with arguments, or in a comment, it stays."""
    text = ("    IterateThreadStore<0, VOLATILE_MULTIPLE>::template Dereference(\n        ptr, words);\n"
            "    x.template get<0>(); p->template  run (a); // a::template f(x)\n")
    assert features.template_keyword_without_args(text) == (
        "    IterateThreadStore<0, VOLATILE_MULTIPLE>::Dereference(\n        ptr, words);\n"
        "    x.template get<0>(); p->run (a); // a::template f(x)\n")
    assert features.template_keyword_without_args("template <int N> struct S;\n") == "template <int N> struct S;\n"


def test_templated_call_operator_keeps_its_template_keyword(tmp_path):
    """vLLM 0.34.0 csrc/gdn/fused_gdn_decode_kernel.cu: `split_v == 4 ? launch.template operator()<4>() : ...`
    on a generic lambda inside a function template. The keyword is needed there (the template argument list
    follows `operator()`), so template-keyword-without-args must leave it: without it the host C++ compiler,
    like clang, rejects the call."""
    text = ("template <typename T> int run(T split) {\n"
            "  auto launch = [&]<int N>() { return N * static_cast<int>(split); };\n"
            "  return split == 4 ? launch.template operator()<4>() : (&launch)->template operator() <1>();\n}\n"
            "int main() { return run(4) - 16; }\n")
    assert features.template_keyword_without_args(text) == text
    for name, source, ok in (("kept", text, True), ("dropped", text.replace("template operator", "operator"), False)):
        unit = tmp_path / f"{name}.cc"
        unit.write_text(source)
        built = subprocess.run(["c++", "-std=c++20", str(unit), "-o", str(tmp_path / name)], capture_output=True, text=True)
        assert (built.returncode == 0) is ok, built.stderr
    assert subprocess.run([str(tmp_path / "kept")]).returncode == 0


def test_calls_get_the_arguments_cuda_defaults_and_hip_does_not():
    """libKMCUDA 6.2.3's kmeans.cu: `cudaMemcpyToSymbolAsync(d_changed_number, &zero, sizeof(zero))`;
    pytigre 0.1.8's Siddon_projection.cu and astra-toolbox 1.8b5's util3d.cu:
    `cudaMalloc3DArray(&d_imagedata, &channelDesc, extent)`. CUDA's defaults complete them, HIP 7.2's
    declarations do not."""
    text = ("CUCH(hipMemcpyToSymbolAsync(d_changed_number, &zero, sizeof(zero)),\n     kmcudaMemoryCopyError);\n"
            "hipMemcpyFromSymbolAsync(&h, HIP_SYMBOL(d_passed), sizeof(f(a, b)), 4);\n"
            "hipMemcpyToSymbolAsync(s, p, n, 0, hipMemcpyDeviceToDevice, stream);\n"
            "hipMalloc3DArray(&d_imagedata, &channelDesc, extent);\nhipMalloc3DArray(&a, &d, e, hipArraySurfaceLoadStore);\n"
            "hipLaunchCooperativeKernel(k, grid, block, args);\nhipLaunchCooperativeKernel(k, grid, block, args, smem);\n")
    assert features.cuda_default_arguments(text) == (
        "CUCH(hipMemcpyToSymbolAsync(d_changed_number, &zero, sizeof(zero), 0, hipMemcpyHostToDevice),\n"
        "     kmcudaMemoryCopyError);\n"
        "hipMemcpyFromSymbolAsync(&h, HIP_SYMBOL(d_passed), sizeof(f(a, b)), 4, hipMemcpyDeviceToHost);\n"
        "hipMemcpyToSymbolAsync(s, p, n, 0, hipMemcpyDeviceToDevice, stream);\n"
        "hipMalloc3DArray(&d_imagedata, &channelDesc, extent, 0);\nhipMalloc3DArray(&a, &d, e, hipArraySurfaceLoadStore);\n"
        "hipLaunchCooperativeKernel(k, grid, block, args, 0, 0);\nhipLaunchCooperativeKernel(k, grid, block, args, smem, 0);\n")
    own = "hipError_t hipMemcpyToSymbolAsync(const void* s, const void* p, size_t n);\nhipMemcpyToSymbolAsync(s, p, n);\n"
    assert features.cuda_default_arguments(own) == own
    assert features.cuda_default_arguments("hipMalloc3DArray(&a, &d);\n") == "hipMalloc3DArray(&a, &d);\n"


def test_standard_headers_older_libstdcxx_included_transitively_are_added():
    """horovod 0.28.1's common.h: std::logic_error after <functional>, <memory>, <string> and <unordered_map>
    only, which the dev image's libstdc++ 16 does not follow to <stdexcept>; byteps 0.2.5's ready_table.h
    names std::string after <mutex> and <thread>."""
    horovod = ("#include <functional>\n#include <memory>\n#include <string>\n#include <unordered_map>\n\n"
               "inline void check(bool ok) {\n  if (!ok) throw std::logic_error(\"bad\");\n}\n")
    out = features.std_headers(horovod)
    assert out == horovod.replace("#include <unordered_map>\n", "#include <unordered_map>\n"
                                  "#include <stdexcept>  // newer libstdc++ headers no longer include it\n", 1)
    assert features.std_headers(out) == out
    byteps = "#include <mutex>\n#include <thread>\nclass ReadyTable {\n  std::string _name;\n  std::uint32_t n;\n};\n"
    fixed = features.std_headers(byteps)
    assert "#include <string>  //" in fixed and "#include <cstdint>  //" in fixed and fixed.endswith(byteps[byteps.index("class"):])
    fragment = "  std::string name = s;  // pasted into a function by its includer\n"
    assert features.std_headers(fragment) == fragment
    comment = "#include <vector>\n// throws std::runtime_error\nconst char* s = \"std::string\";\n"
    assert features.std_headers(comment) == comment
    c_block = 'extern "C" {\n#include <cuda.h>\n}\nstd::string name;\n'
    assert features.std_headers(c_block) == c_block


def test_an_include_of_the_trees_copy_of_a_toolkit_header_gets_the_hip_header(tmp_path, monkeypatch):
    """numba-cuda 0.9.0 ships NVIDIA's cuda_fp16.h (guard __CUDA_FP16_H__) beside cpp_function_wrappers.cu,
    which includes "cuda_fp16.h": hipify-clang leaves the include (it finds the local file), and the copy,
    hipified, stops at its own #error. A copy with the toolkit header's guard is the toolkit header: the
    include becomes HIP's; a project's own header of that name (another guard) stays."""
    from migrate import advice, hipify, rules
    from migrate.archs import Arch
    script = tmp_path / "hipify-perl"  # hipify-perl 7.2's line for the header (its table is read from the script)
    script.write_text('sub simpleSubstitutions {\n    subst("cuda_fp16.h", "hip\\/hip_fp16.h", "include");\n}\n')
    script.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    hipify._simple_substitutions.cache_clear()
    toolkit = tmp_path / "cuda" / "include"
    toolkit.mkdir(parents=True)
    nvidia = "/* NVIDIA */\n#ifndef __CUDA_FP16_H__\n#define __CUDA_FP16_H__\nstruct __half;\n#endif\n"
    (toolkit / "cuda_fp16.h").write_text(nvidia)
    unit = '#include "cuda_fp16.h"\n__global__ void k(__half* x) {}\n'
    hip = '#include "hip/hip_runtime.h"\n#include "cuda_fp16.h"\n__global__ void k(__half* x) {}\n'

    def final(copy: str) -> str:
        texts = {"nb/k.cu": (unit, hip), "nb/cuda_fp16.h": (copy, copy)}
        return advice.migrate_tree(texts, rules.load_rules(), [Arch("gfx942", "CDNA3", 64, 65536)],
                                   toolkit_dirs=(str(toolkit),)).final["nb/k.cu"]

    try:
        assert "#include <hip/hip_fp16.h>\n" in final(nvidia)
        assert '#include "cuda_fp16.h"\n' in final("#ifndef NB_FP16_SHIM\n#define NB_FP16_SHIM\nstruct __half;\n#endif\n")
    finally:
        hipify._simple_substitutions.cache_clear()


def test_libcudacxx_atomic_names_take_cuda_atomic_h():
    """libcu++'s atomics (numba-cuda 0.9.0's memsys.cuh) -> cuda_atomic.h's rocmig_cuda:: names, its text where
    <cuda/atomic> was; names in comments and cuda::std::atomic_thread_fence stay."""
    from migrate import atomic
    header = ("#pragma once\n#include <cuda/atomic>\n"
              "struct S { cuda::atomic<size_t, cuda::thread_scope_device> n; }; // cuda::atomic\n"
              "__device__ void f(S* s, int* p) { s->n.fetch_add(1, ::cuda::memory_order_relaxed);\n"
              "  cuda::std::atomic_ref<int> r(*p); r++; cuda::std::atomic_thread_fence(cuda::std::memory_order_seq_cst); }\n")
    out = atomic.header(atomic.rename(header))
    assert out.startswith("#pragma once\n" + atomic.header_text()) and "// #include <cuda/atomic>\n" in out
    code = out.split("// #include <cuda/atomic>\n")[1]
    assert code.startswith("struct S { rocmig_cuda::atomic<size_t, rocmig_cuda::thread_scope_device> n; }; // cuda::atomic\n")
    assert "fetch_add(1, rocmig_cuda::memory_order_relaxed)" in code and "rocmig_cuda::atomic_ref<int> r(*p)" in code
    assert "cuda::std::atomic_thread_fence(rocmig_cuda::memory_order_seq_cst)" in code
    # a file that names them without the include gets the header before its first include
    unit = '#include "memsys.cuh"\n__global__ void k(cuda::atomic<int>* a) { a->store(1); }\n'
    assert atomic.header(atomic.rename(unit)).startswith(atomic.header_text())
    assert atomic.rename("#include <cstdio>\nint x;\n") == "#include <cstdio>\nint x;\n"
