"""Scanner: group A cases report each listed leftover CUDA-ism at its line; no reports in comments,
dead-on-AMD branches or already-correct HIP; LDS and block-size checks follow the arch table."""

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
from tests.shared_cases import CASES_DIR

CASES = CASES_DIR
sys.path.insert(0, str(ROOT / "recipes" / "migrate"))

from migrate import cpp, rules, scan
from migrate.archs import Arch
from migrate.errors import InputError


def read_case(name: str) -> str:
    """Text of a shared case file; skips when the shared case set is not checked out next to the repo."""
    if not (CUDA / name).is_file():
        pytest.skip(f"{CUDA / name} is absent: the shared case set is not checked out next to this repository")
    return (CUDA / name).read_text()

GFX942 = Arch("gfx942", "CDNA3", 64, 65536)
GFX950 = Arch("gfx950", "CDNA4", 64, 163840)
GFX1100 = Arch("gfx1100", "RDNA3", 32, 65536)
CUDA = CASES / "cuda"


def findings(text: str, archs=(GFX942, GFX1100), extra_files=()) -> list[scan.Finding]:
    ctx = scan.tree_context([cpp.blank(t) for t in (text, *extra_files)], list(archs))
    return scan.scan_file("f.cu", text, scan.compile_rules(rules.load_rules(), ctx), ctx)


def hits(text: str, **kw) -> set[tuple[int, str]]:
    return {(f.line, f.rule) for f in findings(text, **kw)}


# (case file, {(line, rule)} that must be reported): the case's "leftover_cuda_isms_to_flag", located by hand.
CASE_EXPECTATIONS = {
    "A02_shfl_xor_sync_mask.cu": {(6, "warp-mask-32bit"), (6, "warp-sync-intrinsic"), (5, "warp-reduce-offset-16"),
                                  (11, "warp-lane-arith-32")},
    "A03_warp32_ballot.cu": {(3, "warp-size-constant-32"), (7, "warp-lane-arith-32"), (9, "warp-vote-32bit-result"),
                             (9, "warp-mask-32bit"), (10, "warp-vote-32bit-result"), (12, "warp-vote-32bit-result"),
                             (12, "warp-lane-arith-32")},
    "A06_max_dynamic_smem.cu": {(19, "max-dynamic-smem-attribute"), (19, "lds-over-limit"), (20, "lds-over-limit"),
                                (19, "unchecked-func-attribute")},
    "A08_bf16_header.cu": {(3, "bf16-cuda-type"), (5, "bf16-cuda-type"), (14, "bf16-cuda-type"), (15, "bf16-cuda-type")},
    "A10_thrust_cuda_par.cu": {(12, "thrust-cuda-policy"), (13, "thrust-cuda-policy")},
    "A11_texture_reference.cu": {(5, "texture-reference"), (9, "texture-reference"), (17, "texture-reference"),
                                 (20, "texture-reference")},
    "A14_float2_operators.cu": {(4, "vector-type-operator"), (7, "vector-type-operator")},
}


@pytest.mark.parametrize("name", sorted(CASE_EXPECTATIONS))
def test_group_a_case_leftovers_reported_at_their_line(name):
    got = hits(read_case(name))
    assert CASE_EXPECTATIONS[name] <= got, f"missing: {CASE_EXPECTATIONS[name] - got}"


@pytest.mark.parametrize("name", sorted(CASE_EXPECTATIONS))
def test_group_a_expected_hip_has_no_error_findings(name):
    """The correct HIP of each case must not be reported as an error (precision on right code)."""
    right = (CUDA / name.replace(".cu", ".expected.hip")).read_text()
    errors = [f for f in findings(right) if f.severity == "error"]
    if name == "A03_warp32_ballot.cu":
        assert errors == []
    else:
        assert all(f.rule != "warp-mask-32bit" for f in errors), errors


def test_case_files_cover_every_group_a_case():
    import json
    ids = {c["id"] for c in json.loads(read_case("../cases.json")) if c["group"] == "A"}
    assert ids == {name.split("_")[0] for name in CASE_EXPECTATIONS}


def test_warp_size_macro_resolved_through_other_header():
    header = "#define WARP_SZ 32\n"
    unit = "__global__ void k(){ int lane = threadIdx.x % WARP_SZ; int w = threadIdx.x / WARP_SZ; }\n"
    assert {(1, "warp-lane-arith-32")} <= hits(unit, extra_files=(header,))


def test_full_mask_macro_and_64bit_mask():
    text = ("#define FULL_MASK 0xffffffff\n"
            "__device__ float f(float v){ v += __shfl_down_sync(FULL_MASK, v, 1);\n"
            " v += __shfl_down_sync(0xffffffffffffffffull, v, 1); return v; }\n")
    got = hits(text)
    assert (2, "warp-mask-32bit") in got
    assert (3, "warp-mask-32bit") not in got


def test_comments_strings_and_dead_branches_not_reported():
    text = ('// asm("mov.u32 %0, %laneid;")\n'
            'const char* s = "__shfl_xor_sync(0xffffffff, v, 1)";\n'
            "#ifndef __HIP_PLATFORM_AMD__\n"
            "constexpr int hw_warp_size = 32;\n"
            'asm volatile("bar.sync 0;");\n'
            "#else\n"
            "constexpr int hw_warp_size = ROCM_WAVEFRONT_SIZE;\n"
            "#endif\n")
    assert hits(text) == set()


def test_live_inline_ptx_reported():
    assert (1, "inline-ptx-asm") in hits('__device__ int lane(){ int l; asm volatile("mov.u32 %0, %%laneid;" : "=r"(l)); return l; }\n')


def test_lds_limit_read_from_arch_table():
    text = "const int smem = 96 * 1024;\nvoid run(){ k<<<32, 256, smem>>>(); }\n"
    assert (2, "lds-over-limit") in hits(text, archs=(GFX942,))
    assert (2, "lds-over-limit") not in hits(text, archs=(GFX950,))
    msg = [f.message for f in findings(text, archs=(GFX942, GFX950)) if f.rule == "lds-over-limit"][0]
    assert "gfx942: 65536 bytes" in msg and "gfx950" not in msg


def test_static_shared_array_over_lds():
    text = "__global__ void k(){ __shared__ float tile[128][160]; }\n"  # 81920 bytes
    assert (1, "lds-over-limit") in hits(text, archs=(GFX942,))
    assert hits(text, archs=(GFX950,)) == set()


def test_block_size_and_launch_bounds_over_1024():
    text = ("dim3 block(32, 32, 2);\nvoid a(){ k<<<1, block>>>(); }\nvoid b(){ k<<<1, 2048>>>(); }\n"
            "__global__ void __launch_bounds__(1024) ok(){}\n__global__ void __launch_bounds__(2048) bad(){}\n"
            "void c(){ k<<<1, 1024>>>(); }\n")
    got = {line for line, rule in hits(text) if rule == "block-size-over-1024"}
    assert got == {2, 3, 5}


def test_thrust_cub_driver_cg_graph_rules():
    text = ("#include <cuda.h>\n"
            "CUdeviceptr p; cuMemAlloc(&p, 4);\n"
            "cg::memcpy_async(block, dst, src, n);\n"
            "cudaGraphLaunch(exec, s);\n"
            "auto v = cub::ThreadLoad<cub::LOAD_CG>(ptr);\n"
            "cublasLtMatmul(h, d, a, A, Ad, B, Bd, b, C, Cd, D, Dd, algo, ws, n, s);\n")
    got = hits(text)
    assert {(1, "cuda-driver-header"), (2, "cuda-driver-api"), (3, "cooperative-groups-unsupported"),
            (4, "cuda-graphs"), (5, "cub-cuda-specific"), (6, "cublaslt")} <= got


def test_scanner_suggests_nothing_by_itself():
    """Suggested rewrites are decided with the fixups on the migrated line (test_migrate_warp), never
    by a line-local regex on the CUDA input."""
    assert all(x.suggestion == "" for x in findings("unsigned bal = __ballot_sync(0xffffffffu, p);\n"))


def test_rules_file_is_valid_and_documented():
    loaded = rules.load_rules()
    assert len({r.id for r in loaded}) == len(loaded) >= 20
    assert all(r.message and r.hint for r in loaded)


def test_bad_rules_file_one_line_error(tmp_path: Path):
    bad = tmp_path / "rules.yaml"
    bad.write_text("rules:\n  - id: x\n    severity: fatal\n    message: m\n    hint: h\n    patterns: ['a']\n")
    with pytest.raises(InputError, match=r"rules\[x\]\.severity: expected one of"):
        rules.load_rules(bad)
    bad.write_text("rules:\n  - id: x\n    severity: error\n    message: m\n    hint: h\n    patterns: ['(']\n")
    with pytest.raises(InputError, match="does not compile"):
        rules.load_rules(bad)


def test_conditional_evaluation():
    text = ("#if defined(BF16_AVAILABLE) && !defined(__HIP_PLATFORM_AMD__)\nA\n#endif\n"
            "#if defined(__HIP_PLATFORM_AMD__) and ROCM_WAVEFRONT_SIZE == 64\nB\n#else\nC\n#endif\n"
            "#ifdef __HIP_PLATFORM_AMD__\nD\n#elif defined(FOO)\nE\n#else\nF\n#endif\n")
    assert cpp.dead_lines(cpp.blank(text)) == {2, 12, 14}
    # a condition continued with a backslash (flashinfer-python 0.2.2's vec_dtypes.cuh), also nested in a dead branch
    continued = ("#if (__CUDACC_VER_MAJOR__ * 10000 < 120400) && \\\n    (defined(__CUDA_ARCH__) && (__CUDA_ARCH__ < 800))\nG\n#endif\n"
                 "#ifndef __HIP_PLATFORM_AMD__\n#if defined(X) || \\\n    defined(Y)\nH\n#endif\n#endif\nI\n")
    assert cpp.dead_lines(cpp.blank(continued)) == {3, 6, 7, 8, 9}


def test_constant_evaluation():
    names = {"TILE": "64", "SMEM": "TILE * TILE * sizeof(float)"}
    assert cpp.evaluate("SMEM", names) == 16384
    assert cpp.evaluate("96 * 1024u", {}) == 98304
    assert cpp.evaluate("n * 4", {}) is None


def test_character_literals_evaluate_as_ints_and_strings_are_not_constants():
    # fmt's format.h (bundled by LightGBM 4.7.0): `const auto overflow = '0' + 10;`
    text = "int f(int e) {\n  const auto overflow = '0' + 10;\n  return e > overflow;\n}\n"
    names = cpp.symbols(cpp.blank(text))
    assert cpp.evaluate("overflow", {**names, "overflow": "'0' + 10"}) == 58
    assert cpp.evaluate("'\\n' * 2", {}) == 20
    assert cpp.evaluate('"ab" + 1', {}) is None
    assert cpp.evaluate("1.5 + 2", {}) is None
    blanked = [cpp.blank(text)]
    assert scan.tree_context(blanked, [])


def test_mask_held_in_32bit_variable_and_ballot_variable():
    text = ("__device__ int f(float v, int p){ unsigned m = __activemask();\n"
            " v = __shfl_sync(m, v, 0);\n"
            " uint64_t wide = __ballot(p); v = __shfl_sync(wide, v, 0);\n"
            " unsigned votes = __ballot_sync(0xffffffff, p);\n"
            " return __popc(votes); }\n")
    got = hits(text)
    assert (2, "warp-mask-32bit") in got and (3, "warp-mask-32bit") not in got
    assert {(4, "warp-vote-32bit-result"), (5, "warp-vote-32bit-result")} <= got


def test_lane_mask_with_parenthesized_macro():
    text = "#define WARPSZ 32\n__global__ void k(){ int lane = threadIdx.x & (WARPSZ - 1); }\n"
    assert (2, "warp-lane-arith-32") in hits(text)


def test_lds_through_variable_and_runtime_launch_calls():
    text = ("void run(){ size_t bytes = 80 * 1024;\n"
            " hipLaunchKernelGGL(k, dim3(1), dim3(256), bytes, 0, x);\n"
            " cudaLaunchKernel((void*)k, grid, 2048, args, 0, s);\n"
            " size_t again = 1024; again = 2 * again;\n"
            " k<<<1, 64, again>>>(); }\n")
    got = hits(text, archs=(GFX942,))
    assert (2, "lds-over-limit") in got and (3, "block-size-over-1024") in got
    assert (5, "lds-over-limit") not in got  # reassigned: not a known constant


def test_fp8_complex_operator_and_texture_reference_kinds():
    text = ("#include <cuda_fp8.h>\n__nv_fp8_e4m3 a;\n"
            "__device__ cuFloatComplex operator*(cuFloatComplex a, cuFloatComplex b);\n"
            "textureReference* ref; cudaGetTextureReference(&ref, &sym);\n")
    got = hits(text)
    assert {(1, "fp8-cuda-type"), (2, "fp8-cuda-type"), (3, "vector-type-operator"), (4, "texture-reference")} <= got


def test_texture_fetch_flagged_for_archs_without_images():
    got = hits(read_case("A11_texture_reference.cu"))
    assert (9, "texture-fetch-no-image") in got
    right = hits(read_case("A11_texture_reference.expected.hip"))
    assert (6, "texture-fetch-no-image") in right  # texture objects: still no image support on gfx942
    assert not any(rule == "texture-reference" for _, rule in right)


def test_a_tree_lerp_that_cxx20_std_lerp_conflicts_with():
    """nerfacc 0.5.3's helper_math copy: its float and vector lerp lines; only the scalar ones clash."""
    text = ("inline __device__ __host__ float lerp(float a, float b, float t) { return a + t * (b - a); }\n"
            "inline __device__ __host__ float2 lerp(float2 a, float2 b, float t) { return a + t * (b - a); }\n"
            "static double lerp(const double a, double b, double t);\n"
            "float y = lerp(a, b, t);\n")
    got = {h for h in hits(text) if h[1] == "cxx20-std-lerp"}
    assert got == {(1, "cxx20-std-lerp"), (3, "cxx20-std-lerp")}


def test_cutlass_include_is_reported_at_its_line():
    # DeepSpeed 0.19.8 csrc/deepspeed4science/evoformer_attn/gemm_kernel_utils.h:40, and a CuTe include
    text = ('#pragma once\n#include "cutlass/arch/mma.h"\n#include <cute/tensor.hpp>\n'
            '#include "cutlass_helpers.h"\n// #include "cutlass/gemm/gemm.h"\n')
    got = {h for h in hits(text) if h[1] == "cutlass-no-rocm"}
    assert got == {(2, "cutlass-no-rocm"), (3, "cutlass-no-rocm")}


STUB_CHAIN = """__device__ inline void mma(const int* a, float* c) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0}, {%1};" : "+f"(c[0]) : "r"(a[0]));
#else
  assert(0);
#endif
}
"""


@pytest.mark.parametrize("head", ["__host__ __device__ void mma(const int* a, float* c) {",
                                  "CUTLASS_HOST_DEVICE void mma(const int* a, float* c) {",
                                  "DEVICE_INLINE void mma(const int* a, float* c) {",
                                  "constexpr void mma(const int* a, float* c) {",
                                  "void host(const int* a, float* c) {\n  auto f = [=] __device__ (int i) {"])
def test_an_arch_stub_in_code_that_may_run_on_the_device_stays_an_error(head):
    text = STUB_CHAIN.replace("__device__ inline void mma(const int* a, float* c) {", head)
    assert any(rule == "cuda-arch-stub" for _line, rule in hits(text))


def test_an_arch_gate_whose_amd_branch_only_traps_is_an_error():
    """AutoGPTQ 0.7.1 marlin_cuda_kernel.cu:56: the #else that AMD compiles is `assert(0);`."""
    assert (2, "cuda-arch-stub") in hits(STUB_CHAIN)
    assert (2, "cuda-arch-stub") in hits(STUB_CHAIN.replace("assert(0);", "__trap();"))
    # nested in a branch AMD never compiles: nothing of it is compiled, so nothing traps
    nested = STUB_CHAIN.replace("#if defined", "#ifdef __CUDA_ARCH__\n#if defined").replace("#endif", "#endif\n#endif")
    assert not any(rule == "cuda-arch-stub" for _line, rule in hits(nested))
    (finding,) = [f for f in findings(STUB_CHAIN) if f.rule == "cuda-arch-stub"]
    assert finding.severity == "error" and "`assert(0);`" in finding.message and "inline PTX" in finding.message


@pytest.mark.parametrize("text", [
    # AMD takes real code; the stub is NVIDIA's
    STUB_CHAIN.replace("asm volatile(\"mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0}, {%1};\" : \"+f\"(c[0]) : "
                       "\"r\"(a[0]));", "assert(0);", 1).replace("#else\n  assert(0);", "#else\n  c[0] = 1.0f;"),
    # an optional feature without an #else: AMD compiles nothing, nothing traps
    "__device__ void nap() {\n#if __CUDA_ARCH__ >= 700\n  __nanosleep(10);\n#endif\n}\n",
    # a gate that is not on the arch
    STUB_CHAIN.replace("defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800", "defined(__NVCC__)"),
    # NVIDIA traps too (CUTLASS 3.x uint128.h:175, uint128_t::exception)
    "__device__ void exception() {\n#if defined(__CUDA_ARCH__)\n  asm volatile (\"  brkpt;\\n\");\n#else\n"
    "  // not yet implemented\n  abort();\n#endif\n}\n",
    "__device__ void exception() {\n#if defined(__CUDA_ARCH__)\n  asm volatile (\"brkpt;\\n\" ::);\n#else\n  abort();\n#endif\n}\n",
    "__device__ void stop() {\n#if defined(__CUDA_ARCH__)\n  __brkpt();\n#else\n  assert(false);\n#endif\n}\n",
    # a check of a value, not a trap
    STUB_CHAIN.replace("assert(0);", "assert(!use_tc);"),
    # the project's own AMD branch
    STUB_CHAIN.replace("#else\n", "#elif defined(__HIP_PLATFORM_AMD__)\n  c[0] = 0.0f;\n#else\n"),
    # a host-only function: NVIDIA's host compile never defines __CUDA_ARCH__, so it takes the #else too
    STUB_CHAIN.replace("__device__ inline void", "inline void"),
    STUB_CHAIN.replace("__device__ inline void mma(const int* a, float* c) {",
                       "template <typename T>\nvoid Runner<T>::mma(const int* a, float* c) const noexcept {"),
])
def test_arch_gates_that_are_not_stubs_on_amd_are_left_alone(text):
    assert not any(rule == "cuda-arch-stub" for _line, rule in hits(text))


def test_cxx20_std_lerp_counts_only_in_files_compiled_as_cxx20():
    """A plain CUDA unit is compiled with -std=c++17, where libstdc++'s math.h has no global lerp: the
    CUDA samples' helper_math.h lerp is fine there; in a PyTorch extension file (-std=c++20) it clashes."""
    from migrate import advice, rules
    from migrate.archs import Arch
    text = "inline __device__ __host__ float lerp(float a, float b, float t) { return a + t * (b - a); }\n"
    arch = [Arch("gfx942", "CDNA3", 64, 65536)]
    plain = advice.migrate_tree({"helper_math.h": (text, text)}, rules.load_rules(), arch)
    assert not [f for f in plain.findings["helper_math.h"] if f.rule == "cxx20-std-lerp"]
    torch = advice.migrate_tree({"helper_math.h": (text, text)}, rules.load_rules(), arch,
                                pytorch_files=frozenset({"helper_math.h"}))
    assert [f.line for f in torch.findings["helper_math.h"] if f.rule == "cxx20-std-lerp"] == [1]
    # nerfacc 0.5.3: the header includes no PyTorch header itself; the extension's unit that includes it
    # does, and the header is compiled with -std=c++20 inside that unit
    unit = '#include <torch/extension.h>\n#include "helper_math.h"\n'
    both = advice.migrate_tree({"helper_math.h": (text, text), "grid.cu": (unit, unit)}, rules.load_rules(), arch,
                               pytorch_files=frozenset({"grid.cu"}))
    assert [f.line for f in both.findings["helper_math.h"] if f.rule == "cxx20-std-lerp"] == [1]


def test_a_cudnn_include_is_reported_at_its_line():
    """dlib 20.0.1 dlib/cuda/cudnn_dlibapi.cpp:10 `#include <cudnn.h>` (hipify: <hipDNN.h>, absent from ROCm)."""
    text = ('#include "cudnn_dlibapi.h"\n#include <cudnn.h>\n#include "cudnn_ops.h"\n// #include <cudnn.h>\n'
            '#include <cudnn_ops_infer.h>\n#include "cudnn.h"\n')
    assert {h for h in hits(text) if h[1] == "cudnn-no-hip-header"} == {(2, "cudnn-no-hip-header"), (5, "cudnn-no-hip-header"),
                                                                      (6, "cudnn-no-hip-header")}


def test_openmp_target_directives_are_a_warning_and_other_omp_pragmas_nothing():
    """HeCBench mr-cuda's sprp32.h: `#pragma omp declare target` in a header a HIP unit includes."""
    text = ("#ifdef _OPENMP\n#pragma omp declare target\n#endif\nint f(int x);\n#pragma omp end declare target\n"
            "void g(int* a) {\n  #pragma omp target teams distribute parallel for map(a[0:4])\n"
            "  for (int i = 0; i < 4; i++) a[i] = i;\n  #pragma omp parallel for\n  for (int i = 0; i < 4; i++) a[i]++;\n}\n")
    found = [f for f in findings(text) if f.rule == "openmp-target-in-hip"]
    assert [(f.line, f.severity) for f in found] == [(2, "warning"), (5, "warning"), (7, "warning")]


def test_fp8_types_get_the_ocp_header_not_hipifys_fnuz_rename():
    """hipify-perl 7.2 turns __nv_fp8_e4m3 into __hip_fp8_e4m3_fnuz (another encoding: OCP byte 0x40 is
    2.0, FNUZ 1.0); the fixup fp8-ocp gives the file cuda_fp8_ocp.h and rocmig_fp8's names instead, which
    closes the warning; a FNUZ name of the tree's own is no fix and keeps it open."""
    from migrate import advice

    cuda = ("#include <cuda_fp8.h>\n__global__ void k(const __nv_fp8_e4m3* w, float* o) {\n"
            "  o[threadIdx.x] = float(w[threadIdx.x]) + (float)__nv_cvt_fp8_to_halfraw(w[0].__x, __NV_E4M3).x;\n}\n")
    hip = (cuda.replace("<cuda_fp8.h>", "<hip/hip_fp8.h>").replace("__nv_fp8_e4m3", "__hip_fp8_e4m3_fnuz")
           .replace("__nv_cvt_", "__hip_cvt_").replace("__NV_E4M3", "__HIP_E4M3_FNUZ"))
    migrated = advice.migrate_tree({"k.cu": (cuda, hip)}, rules.load_rules(), [GFX942, GFX1100])
    final = migrated.final["k.cu"]
    assert "#define ROCMIG_CUDA_FP8" in final and "hip/hip_fp8.h" not in final and "_fnuz" not in final.split("#endif")[-1]
    assert "const rocmig_fp8::e4m3* w" in final and "rocmig_fp8::cvt_fp8_to_halfraw(w[0].__x, rocmig_fp8::E4M3)" in final
    fp8 = {(f.line, f.status) for f in migrated.findings["k.cu"] if f.rule == "fp8-cuda-type"}
    assert fp8 == {(1, "fixed"), (2, "fixed"), (3, "fixed")}, fp8
    assert not [f.note for f in migrated.findings["k.cu"] if "warp operation" in (f.note or "")]  # a warp macro's note
    own = "#include <hip/hip_fp8.h>\n__device__ float f(__hip_fp8_e4m3_fnuz x) { return float(x); }\n"
    kept = advice.migrate_tree({"own.cuh": (own, own)}, rules.load_rules(), [GFX942, GFX1100])
    assert kept.final["own.cuh"] == own
    assert [(f.line, f.status) for f in kept.findings["own.cuh"] if f.rule == "fp8-cuda-type"] == [(2, "open")]


def test_evaluate_with_a_cache_gives_the_values_without_one():
    """A shared cache (one per symbol table) changes no value: chains, a cycle, a name deeper than the
    depth limit when reached from another name, and names that are no constant."""
    names = {f"L{i}": f"L{i + 1} + 1" for i in range(12)} | {"L12": "0", "A": "B", "B": "A",
                                                               "W": "32", "M": "(1u << W) - 1", "F": "foo(3)",
                                                               "D": "M * 2 + L10"}
    cache: dict[tuple[str, int], int | None] = {}
    for name in ["L3", *names, *reversed(names)]:  # L3 first: a shallow value must not stand in for a deep one
        assert cpp.evaluate(names[name], names, cache=cache) == cpp.evaluate(names[name], names), name
    assert cpp.evaluate("L0", names, cache=cache) is None  # 12 names deep: past the limit, as without a cache
    assert cpp.evaluate("M", names, cache=cache) == 0xFFFFFFFF and cpp.evaluate("A", names, cache=cache) is None
    assert cpp.evaluate("F", names, cache=cache) is None and cpp.evaluate("D", names, cache=cache) == 0x1FFFFFFFE + 2


def test_a_run_time_ptx_compiler_is_a_finding_at_its_include():
    # warp-lang 0.8.0 warp/native/warp.cu; NVRTC (hipify maps it to hipRTC) is no such finding
    text = ('#include "warp.h"\n#include <nvPTXCompiler.h>\n#include <nvrtc.h>\n#include "nvvm.h"\n'
            "  myErr = cuLinkAddData(*lState, CU_JIT_INPUT_PTX, (void *)ptx_source.c_str(), n, 0, 0, 0, 0);\n")
    assert {(line, rule) for line, rule in hits(text) if rule == "ptx-runtime-compiler"} == {
        (2, "ptx-runtime-compiler"), (4, "ptx-runtime-compiler"), (5, "ptx-runtime-compiler")}


HIP_WAVE64 = """#if defined(__HIP_PLATFORM_AMD__)
#define WARP_SIZE 64
#else
#define WARP_SIZE 32
#endif
#ifndef USE_ROCM
constexpr int kWarpSize = 32;
#else
constexpr int kWarpSize = 64;
#endif
#ifdef USE_ROCM
#if defined(__GFX9__)
#define WAVE_SIZE 64
#else
#define WAVE_SIZE 32
#endif
#define BLOCK_THREADS 64
#endif
"""


def test_hip_path_wave64_constant_only_for_wave32_targets():
    """The tree's own HIP branch that fixes the warp size to 64 is wrong on RDNA (wave32); a value chosen
    per arch (__GFX9__), the CUDA branch, and constants that are no warp size are not findings."""
    assert {h for h in hits(HIP_WAVE64, archs=(GFX942, GFX1100)) if h[1] == "hip-path-wave64-constant"} == \
        {(2, "hip-path-wave64-constant"), (9, "hip-path-wave64-constant")}
    assert not [h for h in hits(HIP_WAVE64, archs=(GFX942, GFX950)) if h[1] == "hip-path-wave64-constant"]
    message = next(f.message for f in findings(HIP_WAVE64, archs=(GFX942, GFX1100)) if f.line == 2)
    assert message.endswith("Here: WARP_SIZE = 64 on gfx1100 (32 lanes).") and "gfx942 (" not in message
