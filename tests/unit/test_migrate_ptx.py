"""ptx.py: which asm statements are translated and which are left with their finding. That the
translations compute what NVIDIA's PTX computes is tests/images/test_ptx_exact.py (reference outputs
from an NVIDIA GPU)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "recipes" / "migrate"))

from migrate import cpp, fixups, ptx  # noqa: E402


def _translate(asm: str, cuda_warps: bool = True) -> str:
    (stmt,) = ptx.statements(asm)
    return ptx.translate(stmt, cuda_warps)


def test_sections_with_empty_outputs_and_clobbers() -> None:
    (stmt,) = ptx.statements('asm volatile("cp.async.wait_group %0;\\n" ::"n"(N) : "memory");')
    assert stmt.extended and [op.letter for op in stmt.operands] == ["n"] and not stmt.operands[0].output


def test_scope_operator_inside_an_operand_is_not_a_section() -> None:
    (stmt,) = ptx.statements('asm("mov.b32 %0, %1;" : "=r"(out) : "r"(std::max(a, b)));')
    assert [op.expr for op in stmt.operands] == ["out", "std::max(a, b)"]


@pytest.mark.parametrize("asm", [
    'asm volatile(CP_ASYNC_CG "[%0], [%1], 16;" :: "r"(s), "l"(g));',  # template built from a macro
    'asm("mov.b32 %[d], %[s];" : [d] "=r"(x) : [s] "r"(y));',  # named operands
])
def test_statements_outside_the_parsed_forms_are_not_listed(asm: str) -> None:
    assert ptx.statements(asm) == []


@pytest.mark.parametrize("asm", [
    'asm volatile("mma.sync.aligned.m16n8k32.row.col.f16.e4m3.e4m3.f16 {%0,%1}, {%2,%3,%4,%5}, {%6,%7}, '
    '{%0,%1};" : "+r"(a), "+r"(b) : "r"(x), "r"(x), "r"(x), "r"(x), "r"(x), "r"(x));',
    'asm volatile("mma.sync.aligned.m8n8k4.row.col.f32.f16.f16.f32 {%0,%1}, {%2,%3}, {%4,%5}, {%0,%1};" '
    ': "+f"(a), "+f"(b) : "r"(x), "r"(x), "r"(x), "r"(x));',
    'asm volatile("ldmatrix.sync.aligned.m16n16.x1.trans.shared.b8 {%0,%1}, [%2];" : "=r"(a), "=r"(b) : "r"(s));',
    'asm volatile("shfl.sync.bfly.b32 %0, %1, %2, 0x1f, %3;" : "=r"(v) : "r"(v), "r"(m), "r"(mask));',
    'asm volatile("ld.acquire.cluster.global.u32 %0, [%1];" : "=r"(v) : "l"(p));',
    'asm volatile("ld.mmio.relaxed.sys.global.u32 %0, [%1];" : "=r"(v) : "l"(p));',
    'asm volatile("ld.acquire.gpu.global.v2.u32 {%0, %1}, [%2];" : "=r"(v), "=r"(w) : "l"(p));',
    'asm volatile("atom.global.inc.u32 %0, [%1], %2;" : "=r"(v) : "l"(p), "r"(n));',
    'asm volatile("atom.global.and.s32 %0, [%1], %2;" : "=r"(v) : "l"(p), "r"(n));',
    'asm volatile("bar.sync 1, 64;");',
    'asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));',
    'asm("add.ftz.f32 %0, %1, %2;" : "=f"(d) : "f"(a), "f"(b));',
    'asm("setp.lt.f32 p, %1, %2;" : "=r"(d) : "f"(a), "f"(b));',
    'asm volatile("L_%=: bra L_%=;");',
])
def test_instructions_without_an_exact_form_are_refused(asm: str) -> None:
    with pytest.raises(ptx.Unsupported):
        _translate(asm)


def test_laneid_is_the_lane_of_cudas_32_lane_warp_only_in_a_cuda_only_tree() -> None:
    asm = 'asm("mov.u32 %0, %%laneid;" : "=r"(lane));'
    assert "rocmig_ptx::lane32()" in _translate(asm, cuda_warps=True)
    with pytest.raises(ptx.Unsupported):
        _translate(asm, cuda_warps=False)


def test_each_input_is_evaluated_once_and_outputs_written_back() -> None:
    code = _translate('asm("add.u32 %0, %1, %1;" : "=r"(out[i]) : "r"(next()));')
    assert code.count("next()") == 1 and code.count("out[i]") == 1
    assert code.startswith("do {") and code.endswith("} while (0)")


def test_guarded_instruction_and_predicate_register() -> None:
    code = _translate('asm volatile("{ .reg .pred p; setp.ne.b32 p, %0, 0; @!p st.global.u32 [%1], %2; }" '
                      ':: "r"(flag), "l"(ptr), "r"(v));')
    assert "bool _r_p = false;" in code and "if (!_r_p) {" in code
    assert "rocmig_ptx::global_ptr<rocmig_ptx::u32>" in code


SOURCE = """#include <cuda_fp16.h>
__device__ unsigned f(unsigned a, unsigned b) {
  unsigned d;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm("sub.f16x2 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
#else
  d = a - b;
#endif
  return d;
}
"""


def _dead(text: str) -> set[int]:
    return cpp.dead_lines(cpp.blank(text), cpp.HIPCC_UNDEFINED)


def test_asm_in_branches_not_compiled_on_amd_is_left_alone() -> None:
    assert ptx.rewrite(SOURCE, dead=_dead(SOURCE)) == SOURCE


def test_helpers_inserted_once_after_the_includes() -> None:
    text = SOURCE.replace("#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800", "#if 1")
    out = ptx.rewrite(text, dead=_dead(text))
    assert out.count("#define ROCMIG_PTX_HELPERS") == 1
    assert out.index("#include <cuda_fp16.h>") < out.index("#define ROCMIG_PTX_HELPERS") < out.index("__device__ unsigned f")
    assert "rocmig_ptx::sub_f16x2(" in out and not ptx.statements(out)
    assert ptx.rewrite(out, dead=_dead(out)) == out


def test_cvta_calls_map_to_the_helper_and_untranslatable_files_stay_unchanged() -> None:
    text = "__device__ unsigned s(void* p) { return (unsigned)__cvta_generic_to_shared(p); }\n"
    out = ptx.rewrite(text)
    assert "rocmig_ptx::cvta_generic_to_shared(p)" in out and "#define ROCMIG_PTX_HELPERS" in out
    only_mma = 'asm volatile("mma.sync.aligned.m8n8k4.row.col.f32.f16.f16.f32 {%0}, {%1}, {%2}, {%0};" : "+f"(c) : "r"(a), "r"(b));\n'
    assert ptx.rewrite(only_mma) == only_mma


def test_fixup_is_recorded_on_the_asm_lines() -> None:
    cuda = SOURCE.replace("#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800", "#if 1")
    hip = cuda.replace("cuda_fp16.h", "hip/hip_fp16.h")
    mapping = list(range(len(cuda.split("\n"))))
    text, fixes, _ = fixups.apply_all("f.cu", cuda, hip, [], mapping, cuda_only=True)
    (fix,) = [f for f in fixes if f.id == "ptx-inline-asm"]
    assert hip.split("\n").index('  asm("sub.f16x2 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));') + 1 in fix.lines
    assert "rocmig_ptx::sub_f16x2(" in text


@pytest.mark.parametrize(("asm", "expected"), [
    ('asm volatile("ld.acquire.sys.global.u32 %0, [%1];" : "=r"(f) : "l"(p));',
     "__hip_atomic_load(rocmig_ptx::global_ptr<rocmig_ptx::u32>(((rocmig_ptx::u64)_p1)), __ATOMIC_ACQUIRE, "
     "__HIP_MEMORY_SCOPE_SYSTEM)"),
    ('asm volatile("st.volatile.global.u32 [%1], %0;" ::"r"(f), "l"(p));', "__ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_SYSTEM"),
    ('asm volatile("ld.relaxed.cta.shared.s32 %0, [%1];" : "=r"(f) : "r"(s));',
     "rocmig_ptx::shared_ptr<int>(((rocmig_ptx::u64)_p1)), __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_WORKGROUP"),
    ('asm volatile("atom.add.release.gpu.u32 %0, [%1], %2;" : "=r"(o) : "l"(p), "r"(1));',
     "__hip_atomic_fetch_add(rocmig_ptx::global_ptr<rocmig_ptx::u32>(((rocmig_ptx::u64)_p1)), "
     "(rocmig_ptx::u32)((rocmig_ptx::u32)_p2), __ATOMIC_RELEASE, __HIP_MEMORY_SCOPE_AGENT)"),
    ('asm volatile("red.global.add.f32 [%0], %1;" ::"l"(p), "f"(v));', "rocmig_ptx::f32(((rocmig_ptx::u32)_p1)), "
     "__ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_AGENT"),
    ('asm volatile("atom.acquire.gpu.global.cas.b32 %0, [%1], %2, %3;" : "=r"(o) : "l"(p), "r"(c), "r"(v));',
     "__ATOMIC_ACQUIRE, __ATOMIC_ACQUIRE, __HIP_MEMORY_SCOPE_AGENT); _p0 = (rocmig_ptx::u32)(rocmig_ptx::bits(_expected));"),
    # a float load moves the bits; a .v4 volatile load (vLLM's Lamport all-reduce) is one relaxed load per lane
    ('asm volatile("ld.relaxed.gpu.global.f32 %0, [%1];" : "=f"(r) : "l"(p));',
     "_p0 = (rocmig_ptx::u32)(rocmig_ptx::bits(__hip_atomic_load(rocmig_ptx::global_ptr<float>(((rocmig_ptx::u64)_p1)), "
     "__ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_AGENT)));"),
    ('asm volatile("ld.volatile.global.v4.f32 {%0, %1, %2, %3}, [%4];" : "=f"(a), "=f"(b), "=f"(c), "=f"(d) : "l"(p));',
     "_p3 = (rocmig_ptx::u32)(rocmig_ptx::bits(__hip_atomic_load(_a + 3, __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_SYSTEM)));"),
    ('asm volatile("st.volatile.global.v2.u32 [%0], {%1, %2};" :: "l"(p), "r"(a), "r"(b));',
     "__hip_atomic_store(rocmig_ptx::global_ptr<rocmig_ptx::u32>(((rocmig_ptx::u64)_p0)) + 1, "
     "(rocmig_ptx::u32)((rocmig_ptx::u32)_p2), __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_SYSTEM);"),
])
def test_memory_orders_and_atomics_become_hip_scoped_atomics(asm: str, expected: str) -> None:
    """PTX's .relaxed / .acquire / .release at .cta / .gpu / .sys are C++'s orders at HIP's workgroup /
    agent / system scope; .volatile is .relaxed.sys (PTX ISA, memory consistency model); atom without
    an order is relaxed at .gpu scope."""
    assert expected in _translate(asm)


def test_mma_and_ldmatrix_become_the_warp_emulation() -> None:
    code = _translate('asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, '
                      '{%8,%9}, {%10,%11,%12,%13};\\n" : "=f"(c[0]), "=f"(c[1]), "=f"(c[2]), "=f"(c[3]) : "r"(a[0]), '
                      '"r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "f"(c[0]), "f"(c[1]), "f"(c[2]), "f"(c[3]));')
    assert "rocmig_ptx::mma_16bit<16>(_a, _b, _c, _d, true);" in code
    # inputs are bound before the outputs are written back: c[i] is read, then replaced
    assert code.index("rocmig_ptx::bits((float)(c[0]))") < code.index("rocmig_ptx::assign<32>(c[0], _p0);")
    code = _translate('asm volatile("mma.sync.aligned.m16n8k16.row.col.satfinite.s32.s8.s8.s32 {%0,%1,%2,%3}, {%4,%5}, '
                      '{%6}, {%7,%8,%9,%10};" : "=r"(d[0]), "=r"(d[1]), "=r"(d[2]), "=r"(d[3]) : "r"(a[0]), "r"(a[1]), '
                      '"r"(b[0]), "r"(c[0]), "r"(c[1]), "r"(c[2]), "r"(c[3]));')
    assert "rocmig_ptx::mma_8bit<16>(_a, _b, _c, _d, true, true, true);" in code
    code = _translate('asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0, %1}, [%2];" : "=r"(x), "=r"(y) '
                      ': "r"(smem));')
    assert "_m = ((rocmig_ptx::u64)_p2);" in code and "rocmig_ptx::ldmatrix_b16(_m, 1u, true)" in code


def test_pipeline_primitives_become_completed_copies() -> None:
    # gptqmodel 7.7.0 awq/quantization_new/gemm/gemm_cuda.cu, optimum-quanto 0.2.7 awq/v2/gemm_cuda.cu
    text = ("#include <cuda_pipeline_primitives.h>\n__global__ void k(const int4* g) {\n  __shared__ int4 s[32];\n"
            "  __pipeline_memcpy_async(&s[threadIdx.x], &g[threadIdx.x], sizeof(int4));\n"
            "  __pipeline_commit();\n  __pipeline_wait_prior(0);\n}\n")
    out = ptx.rewrite(text)
    assert "rocmig_ptx::pipeline_memcpy_async(&s[threadIdx.x], &g[threadIdx.x], sizeof(int4));" in out
    assert "rocmig_ptx::pipeline_commit();" in out and "rocmig_ptx::pipeline_wait_prior(0);" in out
    assert "\n#include <cuda_pipeline_primitives.h>" not in out and "#define ROCMIG_PTX_HELPERS" in out
    own = "__device__ void __pipeline_commit() {}\n__global__ void k() { __pipeline_commit(); }\n"
    assert ptx.rewrite(own) == own


def test_pipeline_header_dropped_where_only_dead_code_uses_it() -> None:
    # optimum-quanto 0.2.7 awq/v2/gemm_cuda.cu: every __pipeline_ call sits under `#if QUANTO_CUDA_ARCH >= 800`
    text = ("#include <cuda_pipeline_primitives.h>\n#if defined(ARCH) && ARCH >= 800\n"
            "__global__ void k() { __pipeline_commit(); __pipeline_wait_prior(0); }\n#endif\n")
    out = ptx.rewrite(text, dead={3})
    assert out.startswith("// #include <cuda_pipeline_primitives.h>: HIP lacks it; no line compiled on AMD uses it\n")
    assert "__pipeline_commit(); __pipeline_wait_prior(0);" in out and "ROCMIG_PTX_HELPERS" not in out
    live = text.replace("__pipeline_commit();", "__pipeline_arrive_on(b);")
    assert ptx.rewrite(live).startswith("#include <cuda_pipeline_primitives.h>\n")  # a name the helpers lack


@pytest.mark.parametrize(("asm", "expected"), [
    # a .s result fills a wider register with its sign (PTX ISA: ld / cvt sign-extend signed types)
    ('asm("ld.global.s16 %0, [%1];" : "=r"(d) : "l"(p));', "_p0 = (rocmig_ptx::u64)(long long)(short)(_a[0]);"),
    ('asm("cvt.s16.s32 %0, %1;" : "=r"(d) : "r"(a));', "_p0 = (rocmig_ptx::u64)(long long)(short)((int)((rocmig_ptx::u32)_p1));"),
    # the address is read before a destination that is also the address register is written
    ('asm("ld.global.v2.u64 {%0, %1}, [%0];" : "+l"(p), "=l"(q));', "{ const rocmig_ptx::u64* _a = "),
    # cp.async's ignore-src predicate: true zero-fills the whole copy
    ('asm volatile("{ .reg .pred p; setp.ne.b32 p, %2, 0; cp.async.ca.shared.global [%0], [%1], 16, p; }" '
     ':: "r"(s), "l"(g), "r"(z));', "(_r_p ? 0u : ((rocmig_ptx::u32)(16ull)))"),
    # asm volatile loads happen every time (a spin on a flag stays a loop)
    ('asm volatile("ld.global.cg.u32 %0, [%1];" : "=r"(v) : "l"(flag));', "volatile const rocmig_ptx::u32* _a"),
    # a "memory" clobber stays a compiler barrier
    ('asm volatile("" ::: "memory");', "__atomic_signal_fence(__ATOMIC_SEQ_CST);"),
    # a "+r" operand's expression is evaluated once
    ('asm("add.u32 %0, %0, %1;" : "+r"(x[i++]) : "r"(a));', "auto& _o0 = (x[i++]);"),
    # 16-bit products multiply as unsigned 32-bit values (u16 * u16 would be int)
    ('asm("mul.lo.u16 %0, %1, %2;" : "=h"(d) : "h"(a), "h"(b));', "((rocmig_ptx::u32)((rocmig_ptx::u16)_p1) * (rocmig_ptx::u32)"),
])
def test_review_cases_of_exact_semantics(asm: str, expected: str) -> None:
    code = _translate(asm)
    assert expected in code
    assert code.count("x[i++]") <= 1


@pytest.mark.parametrize("asm", [
    'asm("mul.f32 %0, %1, 2;" : "=f"(d) : "f"(a));',  # an integer literal in a float instruction
    'asm("add.f32 %0, %1, %2;" : "=f"(d) : "f"(a), "n"(1));',
    'asm("{ .reg .pred p; setp.ne.b32 p, %1, 0; add.u32 %0, p, 1; }" : "=r"(d) : "r"(a));',  # a predicate as a value
])
def test_ambiguous_operands_are_refused(asm: str) -> None:
    with pytest.raises(ptx.Unsupported):
        _translate(asm)


def test_string_macros_in_templates_are_expanded_from_the_live_definition() -> None:
    # gptqmodel 7.7.0 awq/quantization_new/gemm/gemm_cuda.cu: nvcc's version test picks the L2 hint
    text = ('#if (__CUDACC_VER_MAJOR__ >= 11) && (__CUDACC_VER_MINOR__ >= 4)\n#define L2_CACHEHINT(size) ".L2::" #size "B"\n'
            "#else\n#define L2_CACHEHINT(size)\n#endif\n"
            '__device__ void f(unsigned s, const void* g) {\n  asm volatile("cp.async.cg.shared.global" L2_CACHEHINT(128) '
            '" [%0], [%1], 16;" :: "r"(s), "l"(g));\n}\n')
    out = ptx.rewrite(text)
    assert "rocmig_ptx::cp_async(" in out and not ptx.statements(out)
    macros = ptx.string_macros(text, set(range(1, 3)))
    assert macros == {"L2_CACHEHINT": ("size", "")}
    live_cuda = ptx.string_macros(text, {3, 4, 5})
    (stmt,) = ptx.statements(text, None, live_cuda)
    assert "cp.async.cg.shared.global.L2::128B [%0]" in stmt.template.replace("\x00", "%")


def _migrated_for_gfx942(rel: str, cuda: str):
    """advice.migrate_tree over one file whose translation only renames cuda_runtime.h, for gfx942."""
    from migrate import advice, rules
    from migrate.archs import Arch
    return advice.migrate_tree({rel: (cuda, cuda.replace("cuda_runtime.h", "hip/hip_runtime.h"))}, rules.load_rules(),
                               [Arch("gfx942", "CDNA3", 64, 65536)])


def test_inserted_helpers_do_not_count_as_the_trees_warp_code() -> None:
    # llm.c's llmc/cuda_utils.cuh: a stochastic-rounding asm beside 32-lane warp reductions; the helpers'
    # own `__lane_id() & 31` (and a translated %laneid) made the reductions "mixed" (warp-width-mixed)
    cuda = ("#include <cuda_runtime.h>\n__device__ unsigned sr(unsigned a, unsigned b) {\n  unsigned d;\n"
            '  asm("prmt.b32 %0, %1, %2, 0x5140;" : "=r"(d) : "r"(a), "r"(b));\n'
            '  unsigned l;\n  asm("mov.u32 %0, %%laneid;" : "=r"(l));\n  return d + l;\n}\n'
            "__device__ float warpReduceSum(float val) {\n  for (int offset = 16; offset > 0; offset /= 2) {\n"
            "    val += __shfl_xor_sync(0xFFFFFFFF, val, offset);\n  }\n  return val;\n}\n")
    migrated = _migrated_for_gfx942("u.cuh", cuda)
    assert "#define ROCMIG_PTX_HELPERS" in migrated.final["u.cuh"]
    assert not [f for f in migrated.findings["u.cuh"] if f.rule == "warp-width-mixed" and f.status == "open"]


def test_an_open_finding_names_what_blocked_the_translation_and_async_copies_warn() -> None:
    cuda = ("#include <cuda_runtime.h>\n__global__ void k(unsigned long long* t, const int4* g) {\n"
            "  __shared__ int4 s[32];\n"
            '  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t[0]));\n'
            '  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" :: "r"((unsigned)__cvta_generic_to_shared(&s[0])), "l"(g));\n'
            "  __pipeline_memcpy_async(&s[1], g + 1, 16);\n}\n")
    migrated = _migrated_for_gfx942("k.cu", cuda)
    by_rule = {(f.rule, f.line): f for f in migrated.findings["k.cu"]}
    assert by_rule[("inline-ptx-asm", 4)].status == "open"
    assert by_rule[("inline-ptx-asm", 4)].note == "not translated: operand '%globaltimer'"
    assert by_rule[("inline-ptx-asm", 5)].status == "fixed"
    assert by_rule[("ptx-async-copy-synchronous", 5)].status == "open"
    assert by_rule[("ptx-async-copy-synchronous", 6)].status == "open"


def test_an_l2_cache_policy_is_created_and_only_hinted_with() -> None:
    # AutoGPTQ 0.7.1 marlin cp_async4_stream: createpolicy's opaque policy feeds cp.async's .L2::cache_hint,
    # which changes where lines are cached, never the values
    text = ('  asm volatile(\n    "{\\n"\n    "   .reg .b64 p;\\n"\n    "   createpolicy.fractional.L2::evict_first.b64 p, 1.0;"\n'
            '    "   cp.async.cg.shared.global.L2::cache_hint [%0], [%1], %2, p;\\n"\n'
            '    "}\\n" :: "r"(smem), "l"(glob_ptr), "n"(BYTES)\n  );\n')
    (stmt,) = ptx.statements(text)
    code = ptx.translate(stmt, True)
    assert "rocmig_ptx::cp_async(((rocmig_ptx::u64)_p0), ((rocmig_ptx::u64)_p1), ((rocmig_ptx::u32)_p2), ((rocmig_ptx::u32)_p2));" in code
    with pytest.raises(ptx.Unsupported):
        ptx.translate(ptx.statements('asm("createpolicy.fractional.L2::evict_last.b32 %0, 1.0;" : "=r"(p));')[0], True)


def test_a_translation_spans_the_lines_of_its_statement() -> None:
    # a 7-line mma.sync (Marlin's helper): the translation takes 7 lines, indented, so every line below
    # keeps its number
    text = ('__device__ void f(const unsigned* a, const unsigned* b, float* c) {\n  asm volatile(\n'
            '    "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "\n'
            '    "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%10,%11,%12,%13};\\n"\n'
            '    : "=f"(c[0]), "=f"(c[1]), "=f"(c[2]), "=f"(c[3])\n'
            '    :  "r"(a[0]),  "r"(a[1]),  "r"(a[2]),  "r"(a[3]),  "r"(b[0]),  "r"(b[1]),\n'
            '       "f"(c[0]),  "f"(c[1]),  "f"(c[2]),  "f"(c[3]));\n  c[0] += 1.0f;\n}\n')
    out = ptx.rewrite(text, True)
    body = out[out.index("__device__ void f"):].split("\n")
    assert body[1].startswith("  do { /* PTX: mma.sync") and body[6].endswith("} while (0);") and body[7] == "  c[0] += 1.0f;"
    assert all(line.startswith("    ") for line in body[2:7]), body


def test_fp8_tensor_core_fragments_are_emulated() -> None:
    # gptqmodel 7.7.0 swordfish marlin_mma.h (FP8 activations on sm_89+)
    text = ('asm volatile(\n  "mma.sync.aligned.m16n8k16.row.col.f32.e4m3.e4m3.f32 "\n'
            '  "{%0,%1,%2,%3}, {%4,%5}, {%6}, {%7,%8,%9,%10};\\n"\n'
            '  : "=f"(c[0]), "=f"(c[1]), "=f"(c[2]), "=f"(c[3])\n'
            '  : "r"(a[idx * 2]), "r"(a[idx * 2 + 1]), "r"(b[idx]), "f"(c[0]), "f"(c[1]), "f"(c[2]), "f"(c[3]));\n')
    (stmt,) = ptx.statements(text)
    assert "rocmig_ptx::mma_fp8<16>(_a, _b, _c, _d, false, false);" in ptx.translate(stmt, True)
    with pytest.raises(ptx.Unsupported):  # e4m3 with an f16 accumulator has no emulation here
        ptx.translate(ptx.statements(text.replace("f32.e4m3.e4m3.f32", "f16.e4m3.e4m3.f16"))[0], True)


def test_packed_half_atomic_adds_become_compare_and_swap_loops() -> None:
    # gptqmodel 7.7.0 swordfish_decode.cuh red_add2: red.global.add.noftz.{bf16x2,f16x2}
    for packed, adder in (("bf16x2", "add_bf16x2"), ("f16x2", "add_f16x2")):
        text = f'asm volatile("red.global.add.noftz.{packed} [%0], %1;" ::"l"(p), "r"(bits) : "memory");'
        code = ptx.translate(ptx.statements(text)[0], False)
        assert f"__hip_atomic_compare_exchange_weak(_w, &_old, rocmig_ptx::{adder}(_old, _v), __ATOMIC_RELAXED" in code
    with pytest.raises(ptx.Unsupported):  # only add has a packed form here
        ptx.translate(ptx.statements('asm("red.global.max.f16x2 [%0], %1;" :: "l"(p), "r"(b));')[0], False)


def test_helpers_precede_their_first_use_where_the_file_includes_more_at_its_end():
    """CUTLASS 4's arch/memory.h includes memory_sm75.h and memory_sm80.h after its code: the helper block
    goes after the includes above the first translated statement, not after the last include."""
    text = ('#pragma once\n#include "cutlass/cutlass.h"\n#include "cutlass/arch/cache_operation.h"\n'
            "namespace cutlass { namespace arch {\n"
            "__device__ void load(unsigned &d, void const *ptr, bool guard) {\n"
            '  asm volatile("{\\n .reg .pred p;\\n setp.ne.b32 p, %2, 0;\\n @p ld.global.lu.u32 %0, [%1];\\n}\\n"\n'
            '      : "=r"(d) : "l"(ptr), "r"((int)guard));\n}\n}}\n'
            '#include "cutlass/arch/memory_sm75.h"\n#include "cutlass/arch/memory_sm80.h"\n')
    out = ptx.rewrite(text)
    assert "asm volatile" not in out and "rocmig_ptx::global_ptr" in out
    helpers = out.index("namespace rocmig_ptx {")
    assert out.index('#include "cutlass/arch/cache_operation.h"') < helpers < out.index("namespace cutlass {")
    assert out.endswith('#include "cutlass/arch/memory_sm75.h"\n#include "cutlass/arch/memory_sm80.h"\n')


def test_host_assembly_and_compiler_barriers_are_no_ptx_findings() -> None:
    """deepwave 0.1.0's common_cpu.h (`fxsave %0`) and catboost 1.2.10's yassert.h (`int $3`), datetime.h
    (`rdtscp`) and compiler.h (an empty barrier) are CPU headers a unit includes: no inline-ptx-asm error
    for them; PTX beside them (a predicate block, %laneid) stays a finding."""
    from migrate import ptx
    cuda = ("#include <cuda_runtime.h>\nstatic inline void save(char* state) {\n"
            '  __asm__ volatile("fxsave %0" : "=m"(*state));\n}\n'
            'static inline void stop() { __asm__ volatile("int $3\\n"); }\n'
            'static inline unsigned long long ticks() { unsigned lo, hi; asm volatile("rdtscp" : "=a"(lo), "=d"(hi) :: "%rcx"); return lo; }\n'
            'template <class T> void keep(T& x) { __asm__ __volatile__("" : : "m"(x)); }\n'
            '__global__ void k(int* o) { int id; asm volatile("mov.u32 %0, %%laneid;" : "=r"(id)); o[0] = id; }\n')
    migrated = _migrated_for_gfx942("k.cu", cuda)
    assert [f.line for f in migrated.findings["k.cu"] if f.rule == "inline-ptx-asm"] == [8]
    assert ptx.not_ptx('asm("{ .reg .pred p; setp.ne.b32 p, %1, 0; selp.b32 %0, 1, 0, p; }" : "=r"(o) : "r"(i));', 1) == ""
    assert ptx.not_ptx("asm(MACRO_TEMPLATE : \"=r\"(x));", 1) == ""


def test_video_sum_of_absolute_differences_becomes_its_helper():
    # the CUDA samples' stereoDisparity defines __usad4 with this statement
    src = ('__device__ unsigned int __usad4(unsigned int A, unsigned int B, unsigned int C = 0) {\n'
           '  unsigned int result;\n  asm(\n      "vabsdiff4.u32.u32.u32.add"\n      " %0, %1, %2, %3;"\n'
           '      : "=r"(result)\n      : "r"(A), "r"(B), "r"(C));\n  return result;\n}\n')
    (stmt,) = ptx.statements(src)
    assert "rocmig_ptx::vabsdiff4_add(" in ptx.translate(stmt, cuda_warps=True)
    with pytest.raises(ptx.Unsupported):  # a secondary operation other than .add has no helper
        _translate('asm("vabsdiff4.u32.u32.u32.max %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(c));')
