"""Each failed compile is tied to the finding that explains it (migrate/explain.py): a finding of the scan
at or near the error, a diagnostic rule read from the compiler's error, or an error finding of a file the
unit compiles. Inputs are real compiler errors and build lines of the projects named."""

import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "recipes" / "migrate"))

from migrate import explain, flags, includes, pipeline, report, rules
from migrate.errors import InputError

RULES = rules.load_rules()
# ggml 0.3.36 (llama-cpp-python's vendor/llama.cpp/ggml/cmake/common.cmake, lines 100-107)
GGML_COMMON_CMAKE = """function(ggml_get_fa_defs)
    foreach(TYPE_K ${TYPES_K})
        foreach(TYPE_V ${TYPES_V})
            set(COMPILED 0)
            string(TOUPPER "GGML_CUDA_FA_${TYPE_K}_${TYPE_V}" COMBINATION_DEF)
            add_compile_definitions(${COMBINATION_DEF}=${COMPILED})
        endforeach()
    endforeach()
endfunction()
"""
FATTN_ERROR = ("/out/run/hip/src/ggml-cuda/fattn.cu:312:9: error: use of undeclared identifier "
               "'GGML_CUDA_FA_F16_F16'")
SHADOW_ERROR = ("/out/run/torch/csrc/fp_quantizer/fp_quantize_impl.hip:235:19: error: declaration of "
                "'q_exponent_bits' shadows template parameter")
CUTLASS_ERROR = ("/out/run/torch/csrc/deepspeed4science/evoformer_attn/gemm_kernel_utils.h:40:10: fatal error: "
                 "'cutlass/arch/mma.h' file not found")


def identity(line: int) -> int:
    return line


def finding(rule: str, rel: str, line: int, severity: str = "error", status: str = "open") -> dict:
    return {"rule": rule, "severity": severity, "file": rel, "line": line, "status": status}


def checks(src: Path, texts: dict[str, str] | None = None) -> list[explain.Diagnostic]:
    return explain.diagnostics(RULES, {"build-generated": flags.build_generated(src),
                                       "build-template": flags.header_template(src)},
                               {"tree-incomplete": explain.own_header(texts or {}),
                                "std-library": explain.in_project_std_library(
                                    texts or {}, includes.IncludeGraph(dict(texts or {})).standard_folders),
                                "tree-undeclared": explain.declared_nowhere(texts or {}),
                                "other-unit": explain.declared_in_another_unit(texts or {}),
                                "unincluded-header": explain.declared_in_unincluded_header(
                                    texts or {}, includes.IncludeGraph(dict(texts or {})).reach),
                                "include-gated": explain.declared_behind_build_switch(
                                    texts or {}, includes.IncludeGraph(dict(texts or {})), frozenset(),
                                    flags.build_generated(src)),
                                "tree-redefined": explain.defined_elsewhere(texts or {}),
                                "uses-deviceptr": explain.file_uses(texts or {}, ("CUdeviceptr",)),
                                "uses-void-handle": explain.file_uses(texts or {}, explain.VOID_HANDLES),
                                "tree-arity": explain.declared_with_other_arity(texts or {}),
                                "error-directive": explain.own_error_directive(texts or {}),
                                "hip-name": explain.redeclares_hip(texts or {}),
                                "device-code": explain.in_device_code(texts or {}),
                                "arch-gated": explain.declared_for_nvidia_only(texts or {}),
                                "build-gated": explain.declared_off_by_build(texts or {}, frozenset(),
                                                                             flags.build_generated(src)),
                                "own-rocm": explain.in_own_rocm_code(texts or {}),
                                "torch-header": explain.in_torch_headers("/opt/rocmig/torch/include")})


def ggml_tree(tmp_path: Path) -> Path:
    src = tmp_path / "ggml"
    (src / "cmake").mkdir(parents=True)
    (src / "cmake" / "common.cmake").write_text(GGML_COMMON_CMAKE)
    # src/CMakeLists.txt:428-429: a backend's option name, which matches any GGML_ name
    (src / "CMakeLists.txt").write_text("project(ggml)\nadd_compile_definitions(GGML_SCHED_MAX_COPIES=4)\n"
                                        "function(ggml_add_backend backend)\n"
                                        '    string(TOUPPER "GGML_${backend}" backend_id)\nendfunction()\n')
    return src


def test_a_define_the_build_computes_is_named_with_the_build_line(tmp_path):
    src = ggml_tree(tmp_path)
    read = {"/out/run/hip/src/ggml-cuda/fattn.cu": ("src/ggml-cuda/fattn.cu", identity)}
    where = explain.locate(FATTN_ERROR, read)
    assert (where.rel, where.line) == ("src/ggml-cuda/fattn.cu", 312)
    why, made = explain.explain(where, where.rel, lambda rel: [], checks(src), lambda rel, line: "FATTN_VEC_CASE")
    assert why == {"rule": "build-defined-macro", "file": "src/ggml-cuda/fattn.cu", "line": 312,
                   "how": "the compiler's error"}
    assert made["note"] == "CMake computes it: `GGML_CUDA_FA_${TYPE_K}_${TYPE_V}` at cmake/common.cmake:5"
    assert made["status"] == "open" and made["severity"] == "error"


def test_a_literal_define_of_the_build_is_named_and_other_names_are_not_claimed(tmp_path):
    check = flags.build_generated(ggml_tree(tmp_path))
    assert check("GGML_SCHED_MAX_COPIES") == "the build passes -DGGML_SCHED_MAX_COPIES=4 at CMakeLists.txt:2"
    # an undeclared name the build does not define is some other fault: no build-defined-macro finding
    assert check("GGML_CUDA_CC_TURING") == ""  # GGML_${backend} spells too little of it
    assert check("GGML_CUDA") == "CMake computes it: `GGML_${backend}` at CMakeLists.txt:4"
    assert check("fa_kernel") == ""
    where = explain.Location("src/a.cu", 3, "use of undeclared identifier 'my_helper'")
    assert explain.explain(where, "src/a.cu", lambda rel: [], checks(tmp_path / "ggml"), lambda r, n: "") == (None, None)


def test_a_define_of_a_jit_extension_build_in_python_is_named_without_its_runtime_value(tmp_path):
    """rwkv 0.8.32: model.py JIT-builds its kernels with load(..., extra_cuda_cflags=[..., f"-D_N_={HEAD_SIZE}",
    f"-D_T_={4096}"]); a .py file without such a call (a name that merely appears) is not read as a build."""
    src = tmp_path / "rwkv"
    (src / "src" / "rwkv" / "cuda").mkdir(parents=True)
    (src / "src" / "rwkv" / "model.py").write_text(
        "from torch.utils.cpp_extension import load\n\nHEAD_SIZE = 64\n"
        'load(name="wkv5", sources=["cuda/wkv5_op.cpp", "cuda/wkv5_cuda.cu"], verbose=True,\n'
        '     extra_cuda_cflags=["-res-usage", "-O3", f"-D_N_={HEAD_SIZE}", "-D_CHUNK_=32"])\n')
    (src / "src" / "rwkv" / "notes.py").write_text('FLAGS = "-D_M_=3"\n')
    check = flags.build_generated(src)
    assert check("_N_") == "the build passes -D_N_ at src/rwkv/model.py:5"
    assert check("_CHUNK_") == "the build passes -D_CHUNK_=32 at src/rwkv/model.py:5"
    assert check("_M_") == ""
    where = explain.Location("src/rwkv/cuda/wkv5_cuda.cu", 16, "use of undeclared identifier '_N_'")
    why, made = explain.explain(where, where.rel, lambda rel: [], checks(src), lambda rel, line: "")
    assert why["rule"] == "build-defined-macro" and made["note"] == "the build passes -D_N_ at src/rwkv/model.py:5"


def test_a_define_on_a_python_builds_own_nvcc_command_line_is_named(tmp_path):
    """warp-lang 0.8.0: warp/build.py writes nvcc's command line itself, with -DWP_ENABLE_CUDA=1 among literal
    flags in an f-string; warp.cpp then reads the name as a value (`return int(WP_ENABLE_CUDA);`)."""
    src = tmp_path / "warp"
    (src / "warp" / "native").mkdir(parents=True)
    (src / "warp" / "build.py").write_text(
        "def build_dll(cu_path, cuda_home, mode):\n    if cu_path:\n"
        "        cuda_cmd = f'\"{cuda_home}/bin/nvcc\" -O3 -DNDEBUG -DWP_CUDA -DWP_ENABLE_CUDA=1 -o out -c \"{cu_path}\"'\n"
        "    cpp_flags = f'-O3 -DWP_CPU -fPIC'\n")
    check = flags.build_generated(src)
    assert check("WP_ENABLE_CUDA") == "the build passes -DWP_ENABLE_CUDA=1 at warp/build.py:3"
    (src / "warp" / "notes.py").write_text('print("nvcc is the compiler")\nFLAGS = "-DWP_OTHER=1"\n')
    assert flags.build_generated(src)("WP_OTHER") == ""  # no -D on a line that names nvcc: not a build file


def test_a_shadowed_template_parameter_is_diagnosed_at_the_cuda_line(tmp_path):
    # the torch.utils.hipify output has one line more at the top than the CUDA input
    read = {"/out/run/torch/csrc/fp_quantizer/fp_quantize_impl.hip":
            ("csrc/fp_quantizer/fp_quantize_impl.cu", lambda line: line - 1)}
    where = explain.locate(SHADOW_ERROR, read)
    assert where == explain.Location("csrc/fp_quantizer/fp_quantize_impl.cu", 234,
                                     "declaration of 'q_exponent_bits' shadows template parameter")
    why, made = explain.explain(where, where.rel, lambda rel: [], checks(tmp_path),
                                lambda rel, line: "constexpr int q_exponent_bits = total_q_bits - mantisa_bits - 1;")
    assert why["rule"] == "template-param-shadow" and made["line"] == 234
    assert made["text"].startswith("constexpr int q_exponent_bits")


def test_on_the_errors_line_an_error_finding_explains_before_a_warning(tmp_path):
    """gptqmodel 7.7.0 gemv_cuda.cu:73 `__shfl_xor_sync(~0, fpsum[i], 16)` carries the warning
    warp-sync-intrinsic and the error warp-mask-32bit; HIP's static_assert on the mask is the error's."""
    rel = "gptqmodel_ext/awq/gemv_cuda.cu"
    found = [finding("warp-sync-intrinsic", rel, 73, "warning"), finding("warp-mask-32bit", rel, 73, "error"),
             finding("warp-reduce-offset-16", rel, 72, "warning")]
    where = explain.Location(rel, 73, "static assertion failed due to requirement 'sizeof(int) == 8'")
    why, _ = explain.explain(where, rel, lambda r: found, checks(tmp_path), lambda r, n: "")
    assert why["rule"] == "warp-mask-32bit"


def test_a_hipblas_half_call_without_a_match_is_tied_to_the_half_type(tmp_path):
    """gptqmodel 7.7.0 exllamav3/hgemm.cu:61 with half data and no HIPBLAS_USE_HIP_HALF."""
    where = explain.Location("gptqmodel_ext/exllamav3/hgemm.cu", 61, "no matching function for call to 'hipblasHgemm'")
    why, made = explain.explain(where, where.rel, lambda r: [], checks(tmp_path), lambda r, n: "cublasHgemm(")
    assert why["rule"] == "hipblas-half-type" and made["line"] == 61


def test_a_near_finding_on_the_line_that_holds_the_quoted_name_wins(tmp_path):
    """pycuda 2026.1's cuda.hpp: hipify adds three lines above, so the error at HIP line 315 is CUDA line
    312, whose unmapped error code the error quotes; the version gate at 314 is nearer but names it not."""
    rel = "src/cpp/cuda.hpp"
    where = explain.locate(f"/out/run/hip/{rel}:315:16: error: use of undeclared identifier "
                           "'CUDA_ERROR_LAUNCH_INCOMPATIBLE_TEXTURING'", {f"/out/run/hip/{rel}": (rel, identity)})
    unmapped = {**finding("cuda-name-unmapped", rel, 312),
                "text": '  case CUDA_ERROR_LAUNCH_INCOMPATIBLE_TEXTURING: return "launch incompatible texturing";'}
    gate = {**finding("cuda-version-macro", rel, 314, "warning"), "text": "#if CUDAPP_CUDA_VERSION >= 4000"}
    why, made = explain.explain(where, "src/wrapper/mempool.cpp", lambda r: [gate, unmapped],
                                checks(tmp_path), lambda r, n: "")
    assert (why["rule"], why["line"], made) == ("cuda-name-unmapped", 312, None)
    # without a name on either line, the nearest one explains it
    why, _ = explain.explain(where, "u.cpp", lambda r: [gate, {**unmapped, "text": "  case X:"}],
                             checks(tmp_path), lambda r, n: "")
    assert (why["rule"], why["line"]) == ("cuda-version-macro", 314)


def test_an_unmapped_driver_call_is_named_rather_than_its_api_family(tmp_path):
    """pyvkfft 2025.1.1's vkfft_cuda.cu: `cuFuncSetAttribute` has no HIP name in hipify 7.2; the warning
    cuda-driver-api on the line only names the driver API, cuda-name-unmapped says the call has no counterpart."""
    rel = "src/vkfft_cuda.cu"
    where = explain.Location(rel, 40, "use of undeclared identifier 'cuFuncSetAttribute'")
    driver = {**finding("cuda-driver-api", rel, 40, "warning"), "text": "res = cuFuncSetAttribute(f, a, v);"}
    why, made = explain.explain(where, rel, lambda r: [driver], checks(tmp_path), lambda r, n: "res = cuFuncSetAttribute(f, a, v);")
    assert why["rule"] == "cuda-name-unmapped" and made["line"] == 40 and made["file"] == rel
    # another warning at the line (a CUDA version test) still explains it
    gate = {**finding("cuda-version-macro", rel, 40, "warning"), "text": "#if CUDA_VERSION >= 12000"}
    why, made = explain.explain(where, rel, lambda r: [gate], checks(tmp_path), lambda r, n: "")
    assert (why["rule"], made) == ("cuda-version-macro", None)


def test_a_finding_at_the_error_line_wins_over_the_generic_diagnostic(tmp_path):
    rel = "csrc/deepspeed4science/evoformer_attn/gemm_kernel_utils.h"
    read = {f"/out/run/torch/{rel}": (rel, identity)}
    where = explain.locate(CUTLASS_ERROR, read)
    found = {rel: [finding("cuda-version-macro", rel, 12, "warning"), finding("cutlass-no-rocm", rel, 40)]}
    why, made = explain.explain(where, "csrc/deepspeed4science/evoformer_attn/attention_cu.cu",
                                lambda r: found.get(r, []), checks(tmp_path), lambda r, n: "")
    assert why == {"rule": "cutlass-no-rocm", "file": rel, "line": 40, "how": "a finding at the error's line"}
    assert made is None
    # without that finding, the generic rule explains the missing header
    why, made = explain.explain(where, "u.cu", lambda r: [], checks(tmp_path), lambda r, n: "")
    assert why["rule"] == "header-not-found" and made["file"] == rel
    assert made["note"] == f"`cutlass/arch/mma.h`, included in {rel}"  # the note names the missing header
    # a header of the image that lacks its own parts is the image's fault, not the tree's
    image = explain.locate("/usr/include/rocwmma/rocwmma.hpp:29:10: fatal error: 'internal/accessors.hpp' file not found", read)
    why, made = explain.explain(image, "src/tensorcore.cu", lambda r: [], checks(tmp_path), lambda r, n: "")
    assert why["rule"] == "toolchain-header-incomplete" and made["file"] == "src/tensorcore.cu" and made["line"] == 0
    assert made["note"] == "`internal/accessors.hpp`, included in a header of the dev image, not of the tree"


def test_a_missing_header_the_build_writes_from_a_template_names_the_template(tmp_path):
    """StarPU 1.4.10: include/starpu.h:39 includes starpu_config.h, which ./configure writes from
    include/starpu_config.h.in; its src/common/config.h comes from a CMake-style template too."""
    src = tmp_path / "starpu"
    (src / "include").mkdir(parents=True)
    (src / "include" / "starpu_config.h.in").write_text("#undef STARPU_USE_CUDA\n")
    (src / "src" / "common").mkdir(parents=True)
    (src / "src" / "common" / "config.h.cmake").write_text("#cmakedefine HAVE_X\n")
    (src / "Makefile.in").write_text("all:\n")
    rel = "include/starpu.h"
    read = {f"/out/run/hip/{rel}": (rel, identity)}
    where = explain.locate(f"/out/run/hip/{rel}:39:10: fatal error: 'starpu_config.h' file not found", read)
    why, made = explain.explain(where, "examples/pi/pi_kernel.cu", lambda r: [], checks(src), lambda r, n: "")
    assert why == {"rule": "header-generated", "file": rel, "line": 39, "how": "the compiler's error"}
    assert made["note"] == "written by the project's build from include/starpu_config.h.in"
    check = flags.header_template(src)
    assert check("common/config.h") == "written by the project's build from src/common/config.h.cmake"
    assert check("config.h") and not check("Makefile") and not check("onfig.h") and not check("starpu.h")
    # a header without a template stays the generic finding
    where = explain.locate(f"/out/run/hip/{rel}:40:10: fatal error: 'libaio.h' file not found", read)
    assert explain.explain(where, "u.cu", lambda r: [], checks(src), lambda r, n: "")[0]["rule"] == "header-not-found"



def test_a_missing_header_a_python_build_step_writes_is_generated(tmp_path):
    """flashinfer-python 0.2.2: setup.py writes csrc/generated/dispatch.inc (`gen_dir / "dispatch.inc"` then
    write_if_different), which csrc/aot_extension_utils.h includes; a Python file that writes nothing does not
    count."""
    src = tmp_path / "flashinfer"
    (src / "csrc").mkdir(parents=True)
    (src / "setup.py").write_text('gen_dir = root / "csrc" / "generated"\n\n'
                                  'write_if_different(\n    gen_dir / "dispatch.inc",\n    text,\n)\n')
    (src / "docs.py").write_text('print("see mla_config.inc")\n')
    rel = "csrc/aot_extension_utils.h"
    read = {f"/out/run/hip/{rel}": (rel, identity)}
    where = explain.locate(f"/out/run/hip/{rel}:16:10: fatal error: 'generated/dispatch.inc' file not found", read)
    why, made = explain.explain(where, "csrc/norm.cu", lambda r: [], checks(src), lambda r, n: "")
    assert why["rule"] == "header-generated" and made["note"] == "written by the project's Python build (setup.py:4 names it)"
    assert flags.header_template(src)("mla_config.inc") == ""


def test_findings_away_from_the_error_or_closed_explain_nothing(tmp_path):
    """A front-end error stops the compile before most code is reached: inline PTX on line 6 does not
    explain an unrelated error on line 18, nor does an error finding of an included header."""
    unit, header = "src/k.cu", "src/k.cuh"
    found = {unit: [finding("inline-ptx-asm", unit, 6), finding("warp-mask-32bit", unit, 17, status="fixed")],
             header: [finding("inline-ptx-asm", header, 7)]}
    where = explain.Location(unit, 18, "no matching function for call to 'foo'")
    assert explain.explain(where, unit, lambda r: found.get(r, []), checks(tmp_path), lambda r, n: "") == (None, None)
    # an intrinsic HIP lacks is its own finding
    where = explain.Location(unit, 18, "use of undeclared identifier '__nanosleep'")
    why, made = explain.explain(where, unit, lambda r: found.get(r, []), checks(tmp_path), lambda r, n: "__nanosleep(ns);")
    assert why["rule"] == "cuda-intrinsic-unmapped" and made["text"] == "__nanosleep(ns);"


def test_an_error_outside_the_tree_keeps_the_message_without_the_header_location():
    error = ("/out/run/hip/k.cu:9:5: error: static assertion failed: The mask must be a 64-bit integer "
             "(in /opt/rocm/include/hip/amd_detail/amd_warp_sync_functions.h:218:3)")
    where = explain.locate(error, {"/out/run/hip/k.cu": ("k.cu", identity)})
    assert where == explain.Location("k.cu", 9, "static assertion failed: The mask must be a 64-bit integer")
    outside = explain.locate("/opt/rocm/include/hip/x.h:3:1: error: boom", {})
    assert (outside.rel, outside.line, outside.message) == ("", 0, "boom")
    # a path with ../ in it (hipified folder names) is found normalized
    norm = explain.locate("/out/run/torch/a/hip_ln/../hip_ln/ln.h:11:10: fatal error: 'x.h' file not found",
                          {"/out/run/torch/a/hip_ln/ln.h": ("a/cuda_ln/ln.h", identity)})
    assert norm.rel == "a/cuda_ln/ln.h"


def test_the_report_counts_failures_without_a_finding(tmp_path):
    """explain_failures writes explained_by and the new findings into the report's entries; the summary
    counts what is left per arch."""
    src = ggml_tree(tmp_path)
    files_out = {
        "src/ggml-cuda/fattn.cu": {"path": "src/ggml-cuda/fattn.cu", "kind": "cu", "unit": True, "findings": [], "fixes": [],
                                   "baseline": {}, "compile": {
                                       "gfx942": {"status": "failed", "first_error": FATTN_ERROR},
                                       "gfx1100": {"status": "failed", "first_error": FATTN_ERROR}}},
        "src/ggml-cuda/acc.cu": {"path": "src/ggml-cuda/acc.cu", "kind": "cu", "unit": True, "findings": [], "fixes": [],
                                 "baseline": {}, "compile": {
                                     "gfx942": {"status": "ok", "first_error": ""},
                                     "gfx1100": {"status": "failed", "first_error": "/out/run/hip/src/ggml-cuda/acc.cu:5:1: error: odd"}}},
    }
    read = {f"/out/run/hip/{rel}": (rel, identity) for rel in files_out}
    pipeline.explain_failures(files_out, list(files_out), set(), read, checks(src),
                              {"src/ggml-cuda/fattn.cu": "\n" * 311 + "        FATTN_VEC_CASE(64, GGML_TYPE_F16, GGML_TYPE_F16)\n"})
    fattn = files_out["src/ggml-cuda/fattn.cu"]
    assert [x["rule"] for x in fattn["findings"]] == ["build-defined-macro"]  # once, not once per arch
    assert fattn["findings"][0]["text"] == "FATTN_VEC_CASE(64, GGML_TYPE_F16, GGML_TYPE_F16)"
    # one explanation for the same error on every arch (not "a finding at the error's line" for the second)
    assert fattn["compile"]["gfx942"]["explained_by"] == fattn["compile"]["gfx1100"]["explained_by"]
    assert fattn["compile"]["gfx942"]["explained_by"]["how"] == "the compiler's error"
    data = {"archs": [{"name": "gfx942"}, {"name": "gfx1100"}], "options": {"baseline": False}, "files": list(files_out.values())}
    summary = report.summarize(data, "error")
    assert summary["unexplained"] == {"gfx942": 0, "gfx1100": 1}
    line = report.summary_line({**summary, "compile": {a: {"ok": 0, "failed": n, "timeout": 0, "needs-torch": 0}
                                                      for a, n in (("gfx942", 1), ("gfx1100", 2))}}, Path("r.md"))
    assert "gfx1100: 0 ok / 2 failed (1 without a finding) / 0 needs-torch" in line
    assert "gfx942: 0 ok / 1 failed / 0 needs-torch" in line
    timed = report.summary_line({**summary, "compile": {a: {"ok": 0, "failed": 1, "timeout": 1, "needs-torch": 0}
                                                       for a in ("gfx942", "gfx1100")}}, Path("r.md"))
    assert "gfx1100: 0 ok / 2 failed (1 timed out, 1 without a finding) / 0 needs-torch" in timed
    assert "gfx942: 0 ok / 2 failed (1 timed out) / 0 needs-torch" in timed


@pytest.mark.parametrize("raw, key", [
    ({"diagnostic": "x", "patterns": ["y"]}, "rules[r]: a `diagnostic` rule has no `patterns`"),
    ({"diagnostic": "x", "check": "lds"},
     "rules[r].check: expected one of ('build-generated', 'build-template', 'in-tree', 'outside-tree', 'tree-incomplete', "
     "'tree-undeclared', 'tree-redefined', 'uses-deviceptr', 'hip-name', "
     "'device-code', 'arch-gated', 'build-gated', 'own-rocm', 'torch-header', 'other-unit', "
     "'unincluded-header', 'include-gated', 'uses-void-handle', 'tree-arity', 'error-directive', 'std-library')"),
    ({"diagnostic": "(unclosed"}, "rules[r].diagnostic: '(unclosed' does not compile"),
    ({"patterns": ["x"], "scope": "c++20"}, "rules[r].scope: expected one of ('cxx20',), got 'c++20'"),
])
def test_a_bad_diagnostic_rule_names_the_rule_and_key(tmp_path, raw, key):
    path = tmp_path / "rules.yaml"
    import yaml
    path.write_text(yaml.safe_dump({"rules": [{"id": "r", "severity": "error", "message": "m", "hint": "h", **raw}]}))
    with pytest.raises(InputError, match="^" + re.escape(f"{path}: {key}")):
        rules.load_rules(path)


def test_a_missing_own_header_beside_its_source_says_the_tree_is_incomplete(tmp_path):
    """AutoGPTQ 0.7.1's sdist: exllama/cuda_buffers.cu:4 includes "cuda_buffers.cuh", which it lacks."""
    rel = "autogptq_extension/exllama/cuda_buffers.cu"
    texts = {rel: '#define _cuda_buffers_cu\n#include <cuda_runtime.h>\n\n#include "cuda_buffers.cuh"\n',
             "autogptq_extension/exllama/q4_matrix.cu": '#include "q4_matrix.cuh"\n#include <cublas_v2.h>\n'}
    read = {f"/out/run/hip/{r}": (r, identity) for r in texts}
    where = explain.locate(f"/out/run/hip/{rel}:4:10: fatal error: 'cuda_buffers.cuh' file not found", read)
    why, made = explain.explain(where, rel, lambda r: [], checks(tmp_path, texts), lambda r, n: "")
    assert why == {"rule": "header-missing-from-tree", "file": rel, "line": 4, "how": "the compiler's error"}
    assert made["note"] == f"`cuda_buffers.cuh`, included in {rel}; the tree has {rel} but not the header"
    # in the tree under another folder (an include folder the build names): not missing from the tree
    moved = {**texts, "include/cuda_buffers.cuh": "#pragma once\n"}
    where = explain.locate(f"/out/run/hip/{rel}:4:10: fatal error: 'cuda_buffers.cuh' file not found", read)
    why, _made = explain.explain(where, rel, lambda r: [], checks(tmp_path, moved), lambda r, n: "")
    assert why is not None and why["rule"] == "header-not-found", why
    # a library header (angle brackets) or one without a same-named source stays header-not-found
    other = "autogptq_extension/exllama/q4_matrix.cu"
    for line, name in ((2, "cublas_v2.h"), (1, "nvcomp.h")):
        where = explain.locate(f"/out/run/hip/{other}:{line}:10: fatal error: '{name}' file not found", read)
        why, _made = explain.explain(where, other, lambda r: [], checks(tmp_path, texts), lambda r, n: "")
        assert why is not None and why["rule"] == "header-not-found", (name, why)

    # mmdet3d 0.17.3: <spconv/indice.h> from mmdet3d/ops/spconv/src/, whose spconv/include/ the sdist lacks
    spconv = "mmdet3d/ops/spconv/src/indice_cuda.cu"
    tree = {spconv: "#include <ATen/ATen.h>\n#include <spconv/indice.h>\n#include <tensorview/helper_launch.h>\n"}
    read = {f"/out/run/hip/{spconv}": (spconv, identity)}
    where = explain.locate(f"/out/run/hip/{spconv}:2:10: fatal error: 'spconv/indice.h' file not found", read)
    why, made = explain.explain(where, spconv, lambda r: [], checks(tmp_path, tree), lambda r, n: "")
    assert why["rule"] == "header-missing-from-tree"
    assert made["note"] == f"`spconv/indice.h`, included in {spconv}: a header of the project's own mmdet3d/ops/spconv/, which the tree lacks"
    where = explain.locate(f"/out/run/hip/{spconv}:3:10: fatal error: 'tensorview/helper_launch.h' file not found", read)
    why, _made = explain.explain(where, spconv, lambda r: [], checks(tmp_path, tree), lambda r, n: "")
    assert why["rule"] == "header-not-found"  # no folder of that name around the includer


def test_a_header_only_the_projects_own_standard_library_holds(tmp_path):
    """CatBoost 1.2.10's util/generic/fwd.h includes <stlfwd>, which only its vendored libc++ copies hold;
    those folders are off the include path (they hold <cstdint>, ...), so the header is missing there."""
    texts = {"contrib/libs/cxxsupp/libcxx/include/stlfwd": "#pragma once\n",
             "contrib/libs/cxxsupp/libcxx/include/cstdint": "#pragma once\n",
             "util/generic/fwd.h": "#pragma once\n#include <stlfwd>\n#include <util/missing.h>\n"}
    read = {f"/out/run/hip/{r}": (r, identity) for r in texts}
    where = explain.locate("/out/run/hip/util/generic/fwd.h:2:10: fatal error: 'stlfwd' file not found", read)
    why, made = explain.explain(where, "catboost/k.cu", lambda r: [], checks(tmp_path, texts), lambda r, n: "")
    assert why["rule"] == "header-in-project-std-library"
    assert made["note"] == "`stlfwd` is in the project's C++ standard library contrib/libs/cxxsupp/libcxx/include/ (left off the include path)"
    where = explain.locate("/out/run/hip/util/generic/fwd.h:3:10: fatal error: 'util/missing.h' file not found", read)
    why, _made = explain.explain(where, "catboost/k.cu", lambda r: [], checks(tmp_path, texts), lambda r, n: "")
    assert why["rule"] != "header-in-project-std-library"


def test_every_diagnostic_rule_matches_the_real_error_it_was_written_for():
    real = {
        "build-defined-macro": "use of undeclared identifier 'GGML_CUDA_FA_F16_F16'",
        "template-param-shadow": "declaration of 'q_exponent_bits' shadows template parameter",
        "texture-object-integer": ("invalid operands to binary expression ('hipTextureObject_t' (aka 'struct __hip_texture *') "
                                   "and 'unsigned int')"),
        "host-overload-of-hostdevice": "__host__ function 'float_to_half' cannot overload __host__ __device__ function 'float_to_half'",
        "device-redeclaration-of-hip-function": "__device__ function '__heq' cannot overload __host__ __device__ function '__heq'",
        "header-in-project-std-library": "'stlfwd' file not found",
        "half-operators-hidden": "no matching conversion for C-style cast from 'float' to '__half'",
        "header-not-found": "'libaio.h' file not found",
        "header-generated": "'starpu_config.h' file not found",
        "header-missing-from-tree": "'cuda_buffers.cuh' file not found",
        "toolchain-header-incomplete": "'internal/accessors.hpp' file not found",
        "dynamic-parallelism": "device-side kernel call/launch is not supported",
        "cuda-name-unmapped": "use of undeclared identifier 'CU_DEVICE_ATTRIBUTE_VIRTUAL_ADDRESS_MANAGEMENT_SUPPORTED'",
        "cuda-intrinsic-unmapped": "use of undeclared identifier '__vmaxs4'",
        "name-declared-nowhere": "use of undeclared identifier 'my_normcdf'; did you mean 'normcdf'?",
        "hip-name-redeclared": "typedef redefinition with different types ('unsigned long long' vs 'void *')",
        "cg-shuffle-type": "no matching function for call to '__shfl_xor'",
        "tree-defines-twice": "static declaration of 'cublas_handle' follows non-static declaration",
        "merge-conflict-markers": "version control conflict marker in file",
        "tree-call-arity": "too many arguments to function call, expected 5, have 7",
        "tree-error-directive": '"Please provide the N_FLATS variable"',
        "cu-deviceptr-integer": ("incompatible integer to pointer conversion assigning to 'hipDeviceptr_t' "
                                 "(aka 'void *') from 'size_t' (aka 'unsigned long')"),
        "hip-overloaded-api-address": "address of overloaded function 'hipMalloc' does not match required type 'void'",
        "hip-api-signature-differs": "no matching function for call to 'hipMemPrefetchAsync'",
        "cuda-device-runtime-api": "no matching function for call to 'hipGetErrorString'",
        "c-void-pointer-conversion": "cannot initialize a variable of type 'float *' with an rvalue of type 'void *'",
        "hipblas-half-type": "no matching function for call to 'hipblasHgemm'",
        "cuda-arch-gated-declaration": "no member named 'num2float' in 'gptq_marlin::ScalarType<__hip_bfloat16>'",
        "torch-hip-version-undefined": "use of undeclared identifier 'TORCH_HIP_VERSION'",
        "hip-declares-device-function": ("functions that differ only in their return type cannot be overloaded "
                                         "(previous declaration: /usr/include/hip/amd_detail/amd_hip_atomic.h:484)"),
        "torch-bfloat16-hip-conversion": ("no matching function for call to object of type 'CastFunctor<c10::BFloat16, float>' "
                                          "(candidate not viable: no known conversion from '__hip_bfloat16' to "
                                          "'c10::BFloat16' for 1st argument)"),
        "build-gated-declaration": "no member named 'scaled_vec_conversion' in namespace 'vllm::fp8'",
        "eigen-before-3-4-api": "allocation of incomplete type 'Eigen::CudaStreamDevice'",
        "cxx20-keyword-older-standard": "unknown type name 'requires'",
        "hip-library-handles-void": "class member cannot be redeclared",
        "host-isa-feature": ("always_inline function '_mm256_cvtph_ps' requires target feature 'f16c', but would be "
                             "inlined into function 'operator()' that is compiled without support for 'f16c'"),
        "own-rocm-code-fails": "no viable conversion from '__half' to '__fp16'",
        "torch-header-error": "arithmetic on a pointer to an incomplete type 'const at::Tensor'",
        "vector-type-brace-elision": "no viable conversion from 'int' to 'uint4' (aka 'HIP_vector_type<unsigned int, 4>')",
        "shared-variable-constructor": "initialization is not supported for __shared__ variables",
        "name-declared-in-another-unit": "use of undeclared identifier 'params'",
        "name-declared-in-unincluded-header": "no template named 'ScalarConvert'",
        "name-declared-behind-build-switch": "use of undeclared identifier 'WARNING'",
        "torch-thc-removed": "'THH/THHNumerics.cuh' file not found",
        "tensorrt-no-rocm": "'NvInferPlugin.h' file not found",
        "cuquantum-no-rocm": "'custatevec.h' file not found",
        "hipify-launch-token-paste": "use of undeclared identifier 'general_hipLaunchKernelGGL'",
        "cub-name-not-in-hipcub": "no member named 'PtxVersion' in namespace 'hipcub'; did you mean 'hipFuncAttributes::ptxVersion'?",
        "device-header-in-host-unit": "/usr/include/rocprim/intrinsics/arch.hpp:46:12: error: use of undeclared identifier "
                                      "'__builtin_amdgcn_wavefrontsize'",
    }
    found = {d.rule.id: d for d in explain.diagnostics(RULES, {"build-generated": lambda name: "x",
                                                                "build-template": lambda name: "x"},
                                                       {"tree-incomplete": lambda name, where: "x",
                                                        "tree-undeclared": lambda name, where: "x",
                                                        "other-unit": lambda name, where: "x",
                                                        "unincluded-header": lambda name, where: "x",
                                                        "include-gated": lambda name, where: "x",
                                                        "tree-redefined": lambda name, where: "x",
                                                        "uses-deviceptr": lambda name, where: "x",
                                                        "uses-void-handle": lambda name, where: "x",
                                                        "tree-arity": lambda name, where: "x",
                                                        "error-directive": lambda name, where: "x",
                                                        "hip-name": lambda name, where: "x",
                                                        "device-code": lambda name, where: "x",
                                                        "arch-gated": lambda name, where: "x",
                                                        "build-gated": lambda name, where: "x",
                                                        "own-rocm": lambda name, where: "x",
                                                        "std-library": lambda name, where: "x",
                                                        "torch-header": lambda name, where: "x"})}
    assert set(found) == set(real)
    for rid, message in real.items():
        assert found[rid].pattern.search(message), rid
    assert found["cu-deviceptr-integer"].pattern.search(
        "no matching function for call to 'cuvidMapVideoFrame' (candidate not viable: no known conversion from "
        "'hipDeviceptr_t *' (aka 'void **') to 'unsigned long long *' for 3rd argument)")
    # flashinfer-python 0.2.2's sampling.cuh: a member CUB deprecated and hipCUB lacks
    assert found["cub-name-not-in-hipcub"].pattern.search("no member named 'FlagHeads' in 'hipcub::BlockAdjacentDifference<bool, 1024>'")
    assert found["torch-thc-removed"].pattern.search("'THH/THH.h' file not found")  # DCNv2 0.4's THC/THC.h, hipified
    assert not found["torch-thc-removed"].pattern.search("'THH/THH.hpp' file not found")
    ambiguous = "use of overloaded operator '+' is ambiguous (with operand types 'const __half' and 'const __half')"
    assert found["half-operators-hidden"].pattern.search(ambiguous)
    assert not found["half-operators-hidden"].pattern.search("no matching conversion for C-style cast from 'float' to 'int2'")


def test_a_branch_the_build_would_select_is_noted_at_its_test(tmp_path):
    """ggml's CMake turns options into defines (add_compile_definitions(GGML_CUDA_FORCE_MMQ)); compiled
    without the build's configuration, an #ifdef of one takes the other branch: an info finding names
    the test and the build line, never for a name the tree defines itself or the compile gets."""
    src = tmp_path / "p"
    src.mkdir()
    (src / "CMakeLists.txt").write_text("project(p)\nif (GGML_CUDA_FORCE_MMQ)\n    add_compile_definitions(GGML_CUDA_FORCE_MMQ)\n"
                                        "endif()\nadd_compile_definitions(NDEBUG GGML_USE_CUDA K_QUANTS_PER_ITERATION=2)\n")
    texts = {"mmq.cuh": "// GGML_CUDA_FORCE_MMQ in a comment\n#ifdef GGML_CUDA_FORCE_MMQ\nint a;\n#endif\n"
                        "#if defined(GGML_USE_CUDA) && K_QUANTS_PER_ITERATION == 2\n#endif\n#ifndef NDEBUG\n#endif\n",
             "own.cuh": "#define MY_SWITCH 1\n#if MY_SWITCH\n#endif\n#ifdef GGML_CUDA_FORCE_MMQ\n#endif\n"}
    found = flags.build_tested(texts, frozenset({"GGML_USE_CUDA"}), flags.build_generated(src))
    assert [(rel, line, name) for rel, line, name, _where in found] == [
        ("mmq.cuh", 2, "GGML_CUDA_FORCE_MMQ"), ("mmq.cuh", 5, "K_QUANTS_PER_ITERATION"), ("mmq.cuh", 7, "NDEBUG"),
        ("own.cuh", 4, "GGML_CUDA_FORCE_MMQ")]
    assert found[0][3] == "the build passes -DGGML_CUDA_FORCE_MMQ at CMakeLists.txt:3"
    files_out = {rel: {"findings": []} for rel in texts}
    pipeline.note_build_branches(files_out, RULES, texts, frozenset({"GGML_USE_CUDA"}), flags.build_generated(src))
    notes = [(x["file"], x["line"], x["severity"], x["note"]) for rel in texts for x in files_out[rel]["findings"]]
    assert ("mmq.cuh", 2, "info", "GGML_CUDA_FORCE_MMQ: the build passes -DGGML_CUDA_FORCE_MMQ at CMakeLists.txt:3") in notes
    assert not any("NDEBUG" in note for *_rest, note in notes)  # a release build's flag, not an option
    assert files_out["mmq.cuh"]["findings"][0]["text"] == "#ifdef GGML_CUDA_FORCE_MMQ"


def test_an_error_inside_a_block_chosen_by_a_flagged_test_is_explained_by_it(tmp_path):
    """The CUDA samples' simpleZeroCopy: `#if CUDART_VERSION >= 2020` is false under hipcc, so the
    #else branch (legacy code) is compiled and fails 7 lines below the flagged test; an error after
    the block's #endif, or in a nested block that closed before it, is not claimed."""
    unit = "simpleZeroCopy.cu"
    lines = ["int main() {", "#if CUDART_VERSION >= 2020", "  hipHostMalloc(&a, n, hipHostMallocMapped);",
             "#else", "#if defined(X)", "  int y;", "#endif", "  a = (float *)malloc(n);", "  ", "",
             "  cudaThreadSynchronize();", "#endif", "  foo();", "}"]
    text = {i + 1: line for i, line in enumerate(lines)}
    found = {unit: [finding("cuda-version-macro", unit, 2, severity="warning")]}
    where = explain.Location(unit, 11, "expected expression")
    why, made = explain.explain(where, unit, lambda r: found.get(r, []), checks(tmp_path), lambda r, n: text[n])
    assert made is None and why == {"rule": "cuda-version-macro", "file": unit, "line": 2,
                                    "how": "a finding on the #if that encloses the error's line"}
    after = explain.Location(unit, 13, "no matching function for call to 'foo'")
    assert explain.explain(after, unit, lambda r: found.get(r, []), checks(tmp_path), lambda r, n: text[n]) == (None, None)


def test_an_error_directive_under_a_build_defined_test_is_explained_by_its_info_finding(tmp_path):
    """deepwave 0.1.0's staggered_grid.h: `#if DW_ACCURACY == 2 ... #else #error DW_ACCURACY must be specified`;
    the build passes -DDW_ACCURACY (info finding build-defined-branch on the #if), migrate did not."""
    rel = "src/deepwave/staggered_grid.h"
    lines = ["#if DW_ACCURACY == 2", "#define A 1", "#elif DW_ACCURACY == 4", "#define A 2", "#else",
             "#error DW_ACCURACY must be specified", "#endif"]
    found = {rel: [finding("build-defined-branch", rel, 1, severity="info")]}
    where = explain.Location(rel, 6, "DW_ACCURACY must be specified")
    why, made = explain.explain(where, "src/deepwave/scalar.cu", lambda r: found.get(r, []), checks(tmp_path),
                                lambda r, n: lines[n - 1])
    assert made is None and (why["rule"], why["line"]) == ("build-defined-branch", 1)


def test_a_name_no_file_of_the_tree_declares_is_said_so_and_a_declared_one_is_not_claimed(tmp_path):
    """HeCBench aop-cuda (as stored): main.cu calls my_normcdf, which no file of its folder declares."""
    texts = {"aop-cuda/main.cu": ("#include <cmath>\nfloat f(float d) {\n"
                                  "  return K * std::exp(-r * T) * my_normcdf(-d2) - S0 * my_normcdf(-d1);\n}\n"
                                  "// my_normcdf is in the header\n"),
             "aop-cuda/other.cu": "float g(float z) { return my_normcdf(z); }\n"}
    where = explain.Location("aop-cuda/main.cu", 3, "use of undeclared identifier 'my_normcdf'; did you mean 'normcdf'?")
    why, made = explain.explain(where, "aop-cuda/main.cu", lambda r: [], checks(tmp_path, texts), lambda r, n: "x")
    assert why["rule"] == "name-declared-nowhere" and made["note"] == (
        "`my_normcdf` is used in 2 file(s) of the tree (aop-cuda/main.cu, aop-cuda/other.cu) and declared in none")
    # a declaration elsewhere in the tree is not claimed by this rule: in a header main.cu does not
    # include it is name-declared-in-unincluded-header's; in a header it includes, no rule's
    for declared in ("static __device__ float my_normcdf(float x);\n", "#define my_normcdf(x) normcdf(x)\n",
                     "template <class T> T* my_normcdf;\n"):
        mine = dict(texts, **{"aop-cuda/decl.h": declared})
        why, _ = explain.explain(where, "aop-cuda/main.cu", lambda r: [], checks(tmp_path, mine), lambda r, n: "x")
        assert why and why["rule"] == "name-declared-in-unincluded-header", declared
        mine["aop-cuda/main.cu"] = '#include "decl.h"\n' + mine["aop-cuda/main.cu"]
        why, _ = explain.explain(where, "aop-cuda/main.cu", lambda r: [], checks(tmp_path, mine), lambda r, n: "x")
        assert why is None, declared


def test_a_redefined_template_member_is_named_by_its_class():
    """lightseq 3.0.1: ops/normalize_layer.cpp defines Normalize_Layer<T>'s constructor out of line while
    ops/includes/normalize_layer.h now defines it in the class."""
    texts = {"csrc/ops/includes/normalize_layer.h": "template <typename T>\nclass Normalize_Layer {\n public:\n"
                                                    "  Normalize_Layer(int c) : c_(c) {}\n  int c_;\n};\n",
             "csrc/ops/normalize_layer.cpp": '#include "normalize_layer.h"\ntemplate <typename T>\n'
                                             "Normalize_Layer<T>::Normalize_Layer(int c) : c_(c) {}\n"}
    for message in ("redefinition of 'Normalize_Layer<T>'", "redefinition of '~Normalize_Layer<T>'"):
        where = explain.Location("csrc/ops/normalize_layer.cpp", 3, message)
        why, made = explain.explain(where, where.rel, lambda rel: [], checks(Path("/nonexistent"), texts), lambda r, n: "")
        assert why["rule"] == "tree-defines-twice", message
        assert made["note"] == ("`Normalize_Layer` is defined in csrc/ops/normalize_layer.cpp and also in "
                                "csrc/ops/includes/normalize_layer.h")


def test_a_redefinition_another_tree_file_also_defines_is_said_so():
    """llm.c files of two versions: dev/cuda/attention_backward.cu's static cublas_handle meets the
    extern one of the common.h it includes; a name only the unit defines (a clash with HIP) is not claimed."""
    texts = {"dev/cuda/common.h": "extern cublasHandle_t cublas_handle;\n",
             "dev/cuda/attention_backward.cu": '#include "common.h"\nstatic cublasHandle_t cublas_handle;\n'}
    check = explain.defined_elsewhere(texts)
    where = explain.Location("dev/cuda/attention_backward.cu", 2, "static declaration of 'cublas_handle' follows non-static declaration")
    assert check("cublas_handle", where) == "`cublas_handle` is defined in dev/cuda/attention_backward.cu and also in dev/cuda/common.h"
    assert check("rocmig_only", where) == "" and check("cublas_handle", explain.Location("", 0, "x")) == ""
    # typedef redefinition with different types: the message has no name, the error's line has it
    texts = dict(texts, **{"dev/cuda/gelu_forward.cu": '#include "common.h"\ntypedef __nv_bfloat16 floatX;\n',
                           "dev/cuda/common.h": "typedef float floatX;\n",
                           "dev/cuda/encoder_forward.cu": "typedef float floatX;\n"})  # another unit: not named
    where = explain.Location("dev/cuda/gelu_forward.cu", 2, "typedef redefinition with different types ('__hip_bfloat16' vs 'float')")
    assert explain.defined_elsewhere(texts)("", where) == "`floatX` is defined in dev/cuda/gelu_forward.cu and also in dev/cuda/common.h"


def test_a_declaration_a_tree_headers_macro_expands_into_is_said_so(tmp_path):
    """llm.c of two versions: common.h's `#define WARP_SIZE 32U` and classifier_fused.cu's
    `constexpr int WARP_SIZE = 32;` (clang: "expected unqualified-id" at the declaration)."""
    texts = {"dev/cuda/common.h": "#include <cuda_runtime.h>\n#define WARP_SIZE 32U\n",
             "dev/cuda/classifier_fused.cu": '#include "common.h"\n// the warp size\nconstexpr int WARP_SIZE = 32;\n',
             "dev/cuda/other.cu": "#define WARP_SIZE 64\n"}  # another unit's macro is compiled apart: not named
    where = explain.Location("dev/cuda/classifier_fused.cu", 3, "expected unqualified-id")
    why, made = explain.explain(where, "dev/cuda/classifier_fused.cu", lambda r: [], checks(tmp_path, texts),
                                lambda r, n: "x")
    assert why["rule"] == "tree-defines-twice" and made["note"] == (
        "`WARP_SIZE` is declared in dev/cuda/classifier_fused.cu and is a macro of dev/cuda/common.h "
        "(`#define WARP_SIZE 32U`), which the preprocessor expands in the declaration")
    # a use of the macro, or a function-like macro of that name, is no such clash
    for line in ("int lanes = WARP_SIZE;", "int WARP_SIZE(int x);"):
        mine = dict(texts, **{"dev/cuda/classifier_fused.cu": f'#include "common.h"\n\n{line}\n'})
        if "(" in line:
            mine["dev/cuda/common.h"] = "#define WARP_SIZE(x) (x)\n"
        assert explain.explain(where, "dev/cuda/classifier_fused.cu", lambda r: [], checks(tmp_path, mine),
                               lambda r, n: "x") == (None, None), line


def test_pointer_arithmetic_on_a_device_address_is_tied_to_cudeviceptr_only_where_the_file_uses_it(tmp_path):
    """vectorAddMMAP's multidevicealloc_memmap.cpp adds an offset to a CUdeviceptr (void * in HIP)."""
    texts = {"memmap.cpp": "CUresult f(CUdeviceptr *dptr) {\n  x(*dptr + (stripe * idx));\n}\n",
             "other.cpp": "void g(void *p) {\n  p + 1;\n}\n"}
    where = explain.Location("memmap.cpp", 2, "arithmetic on a pointer to void")
    why, made = explain.explain(where, "memmap.cpp", lambda r: [], checks(tmp_path, texts), lambda r, n: "x")
    assert why["rule"] == "cu-deviceptr-integer" and made["note"] == "memmap.cpp uses CUdeviceptr"
    other = explain.Location("other.cpp", 2, "arithmetic on a pointer to void")
    assert explain.explain(other, "other.cpp", lambda r: [], checks(tmp_path, texts), lambda r, n: "x") == (None, None)


def test_a_tree_copy_of_cuda_declarations_renamed_to_hips_is_said_so(tmp_path):
    """matrixMulDynlinkJIT's cuda_drvapi_dynlink_cuda.h: typedef unsigned long long CUdeviceptr -> hipDeviceptr_t."""
    texts = {"dynlink/cuda_drvapi_dynlink_cuda.h": "#pragma once\ntypedef unsigned long long CUdeviceptr;\n",
             "dynlink/k.cpp": "typedef float real;\n"}
    where = explain.Location("dynlink/cuda_drvapi_dynlink_cuda.h", 2,
                             "typedef redefinition with different types ('unsigned long long' vs 'void *')")
    why, made = explain.explain(where, "dynlink/k.cpp", lambda r: [], checks(tmp_path, texts), lambda r, n: "x")
    assert why["rule"] == "hip-name-redeclared"
    assert made["note"] == ("dynlink/cuda_drvapi_dynlink_cuda.h declares `CUdeviceptr`, which HIP's headers declare too "
                            "(under its HIP name)")
    own = explain.Location("dynlink/k.cpp", 1, "typedef redefinition with different types ('float' vs 'double')")
    assert explain.explain(own, "dynlink/k.cpp", lambda r: [], checks(tmp_path, texts), lambda r, n: "x") == (None, None)


def test_a_hip_runtime_call_in_device_code_is_the_device_runtime_and_on_the_host_a_signature(tmp_path):
    """HeCBench logic-rewrite-cuda common.h: cudaGetErrorString inside a __device__ function."""
    texts = {"common.h": ("__device__ __forceinline__ void cdpAssert(hipError_t code, const char *file)\n{\n"
                          "   if (code != hipSuccess)\n   {\n      printf(\"%s\", hipGetErrorString(code));\n   }\n}\n"
                          "void host(float* p) {\n  hipMemPrefetchAsync(p, 4, loc, 0, 0);\n}\n")}
    where = explain.Location("common.h", 5, "no matching function for call to 'hipGetErrorString'")
    why, made = explain.explain(where, "u.cu", lambda r: [], checks(tmp_path, texts), lambda r, n: "x")
    assert why["rule"] == "cuda-device-runtime-api" and made["note"].startswith(
        "`hipGetErrorString` is called in device code: __device__ __forceinline__ void cdpAssert(")
    host = explain.Location("common.h", 9, "no matching function for call to 'hipMemPrefetchAsync'")
    assert explain.explain(host, "u.cu", lambda r: [], checks(tmp_path, texts), lambda r, n: "x")[0]["rule"] == "hip-api-signature-differs"


def test_a_finding_on_a_multi_line_statement_explains_an_error_further_down_it(tmp_path):
    # gptqmodel 7.7.0 awq/quantization_new/gemm/gemm_cuda.cu: the asm starts at line 2, clang names the
    # "l" operand six lines below ("invalid input constraint 'l' in asm")
    lines = ["void f() {", '  asm volatile("{"', '               "  .reg .pred p;"',
             '               "  setp.ne.b32 p, %0, 0;"', '               "  @p cp.async.cg.shared.global" L2(128) " [%1], [%2], %3;"',
             '               "}" ::"r"((int)mask),', '               "r"(smem),', '               "l"(src),',
             '               "n"(16));', "  x = 1;", "}"]
    asm = finding("inline-ptx-asm", "g.cu", 2)
    where = explain.Location("g.cu", 8, "invalid input constraint 'l' in asm")
    why, made = explain.explain(where, "g.cu", lambda rel: [asm], checks(tmp_path), lambda rel, n: lines[n - 1])
    assert why["rule"] == "inline-ptx-asm" and why["line"] == 2 and made is None
    after = explain.Location("g.cu", 10, "use of undeclared identifier 'x'")
    assert explain.explain(after, "g.cu", lambda rel: [asm], checks(tmp_path), lambda rel, n: lines[n - 1])[0] is None


def test_a_member_declared_only_for_newer_nvidia_gpus_is_explained(tmp_path):
    # optimum-quanto 0.2.7 marlin/gptq_marlin_dtypes.cuh and fp8_marlin.cu
    dtypes = ("template <> class ScalarType<half> {\n public:\n"
              "  static __device__ float inline num2float(const half x) { return __half2float(x); }\n};\n"
              "template <> class ScalarType<nv_bfloat16> {\n public:\n  using scalar_t = nv_bfloat16;\n"
              "#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800\n"
              "  static __device__ float inline num2float(const nv_bfloat16 x) { return __bfloat162float(x); }\n"
              "#endif\n};\n")
    user = '#include "dtypes.cuh"\n__device__ float f(nv_bfloat16 v) { return ScalarType<nv_bfloat16>::num2float(v); }\n'
    texts = {"dtypes.cuh": dtypes, "fp8_marlin.cu": user}
    where = explain.Location("fp8_marlin.cu", 2, "no member named 'num2float' in 'ScalarType<__hip_bfloat16>'")
    why, made = explain.explain(where, "fp8_marlin.cu", lambda rel: [], checks(tmp_path, texts), lambda rel, n: "x")
    assert why["rule"] == "cuda-arch-gated-declaration" and "dtypes.cuh:8" in made["note"]
    # declared for AMD too (an #else, or no #if): not this finding
    both = dtypes.replace("#endif\n", "#else\n  static __device__ float inline num2float(const nv_bfloat16 x) { return 0.f; }\n#endif\n")
    why, _made = explain.explain(where, "fp8_marlin.cu", lambda rel: [], checks(tmp_path, {"dtypes.cuh": both, "fp8_marlin.cu": user}),
                                 lambda rel, n: "x")
    assert why["rule"] == "cuda-arch-gated-declaration"  # a member: the gated class's own declaration counts
    undeclared = explain.Location("fp8_marlin.cu", 2, "use of undeclared identifier 'num2float'")
    why, _made = explain.explain(undeclared, "fp8_marlin.cu", lambda rel: [], checks(tmp_path, texts), lambda rel, n: "x")
    assert why is None or why["rule"] != "cuda-arch-gated-declaration"  # a free name declared for AMD too


# vLLM 0.34.0 cmake/utils.cmake:138-141 and csrc/quantization/w8a8/fp8/nvidia/quant_utils.cuh, shortened
VLLM_UTILS_CMAKE = """function (get_torch_gpu_compiler_flags OUT_GPU_FLAGS GPU_LANG)
  if (${GPU_LANG} STREQUAL "CUDA")
    if (CUDA_VERSION VERSION_GREATER_EQUAL 11.8)
      list(APPEND GPU_FLAGS "-DENABLE_FP8")
    endif()
  endif()
endfunction()
"""
VLLM_QUANT_UTILS = """#pragma once
namespace vllm {
namespace fp8 {
#ifdef ENABLE_FP8
template <typename Tout, typename Tin>
__inline__ __device__ Tout scaled_vec_conversion(const Tin& x, const float scale) { return x; }
#endif
}  // namespace fp8
}  // namespace vllm
"""


def test_a_declaration_under_a_macro_the_build_passes_in_a_flag_list_is_explained(tmp_path):
    src = tmp_path / "vllm"
    (src / "cmake").mkdir(parents=True)
    (src / "cmake" / "utils.cmake").write_text(VLLM_UTILS_CMAKE)
    user = '#include "quant_utils.cuh"\nvoid f() { vllm::fp8::scaled_vec_conversion<float>(1.f, 2.f); }\n'
    texts = {"quant_utils.cuh": VLLM_QUANT_UTILS, "cache_kernels.cu": user}
    where = explain.Location("cache_kernels.cu", 2, "no member named 'scaled_vec_conversion' in namespace 'vllm::fp8'")
    why, made = explain.explain(where, "cache_kernels.cu", lambda rel: [], checks(src, texts), lambda rel, n: "x")
    assert why["rule"] == "build-gated-declaration"
    assert made["note"] == ("`scaled_vec_conversion` is declared only under `#ifdef ENABLE_FP8` (quant_utils.cuh:4); "
                            "the build passes -DENABLE_FP8 at cmake/utils.cmake:4, this compile does not: --define ENABLE_FP8")
    # passed to the compile, or not a define of the build: some other fault
    passed = explain.declared_off_by_build(texts, frozenset({"ENABLE_FP8"}), flags.build_generated(src))
    assert passed("scaled_vec_conversion", where) == ""
    (src / "cmake" / "utils.cmake").write_text("function(f)\nendfunction()\n")
    assert explain.declared_off_by_build(texts, frozenset(), flags.build_generated(src))("scaled_vec_conversion", where) == ""


# vLLM 0.34.0 CMakeLists.txt:486-488 and its HIP branch, shortened
VLLM_SOURCES_CMAKE = """set(VLLM_EXT_SRC "csrc/cache_kernels.cu")
if(VLLM_GPU_LANG STREQUAL "CUDA")
  list(APPEND VLLM_EXT_SRC
    "csrc/fused_qknorm_rope_cache_kernel.cu"
    "csrc/cache_kernels.cu")
elseif(VLLM_GPU_LANG STREQUAL "HIP")
  list(APPEND VLLM_ROCM_EXT_SRC "csrc/rocm/attention.cu")
endif()
"""


def test_a_unit_the_projects_rocm_build_leaves_out_explains_what_nothing_else_does(tmp_path):
    src = tmp_path / "vllm"
    src.mkdir()
    (src / "CMakeLists.txt").write_text(VLLM_SOURCES_CMAKE)
    units = {"csrc/fused_qknorm_rope_cache_kernel.cu", "csrc/cache_kernels.cu", "csrc/rocm/attention.cu"}
    listed = flags.cuda_only_units(src, units)
    assert listed == {"csrc/fused_qknorm_rope_cache_kernel.cu": "CMakeLists.txt:4"}  # cache_kernels.cu is listed for all
    error = "/out/run/torch/csrc/fused_qknorm_rope_cache_kernel.hip:186:19: error: use of undeclared identifier 'fp8'"
    rel = "csrc/fused_qknorm_rope_cache_kernel.cu"
    files_out = {rel: {"path": rel, "kind": "cu", "unit": True, "findings": [], "fixes": [], "compile": {
        "gfx942": {"status": "failed", "first_error": error}, "gfx1100": {"status": "ok", "first_error": ""}}}}
    pipeline.note_unit_findings(files_out, RULES, "cuda-only-unit",
                                {rel: f"listed for CUDA builds only at {where}" for rel, where in listed.items()})
    (made,) = files_out[rel]["findings"]
    assert made["rule"] == "unit-cuda-only-in-project" and made["note"] == "listed for CUDA builds only at CMakeLists.txt:4"
    pipeline.explain_failures(files_out, [rel], {rel}, {f"/out/run/torch/{rel[:-3]}.hip": (rel, identity)}, checks(src),
                              {rel: ""}, pipeline.unit_fallbacks(RULES))
    assert files_out[rel]["compile"]["gfx942"]["explained_by"] == {
        "rule": "unit-cuda-only-in-project", "file": rel, "line": 0, "how": "the project's build leaves the unit out"}
    # a CUDA project without a HIP build lists every source under a CUDA test: no finding
    (src / "CMakeLists.txt").write_text(VLLM_SOURCES_CMAKE.split("elseif")[0] + "endif()\n")
    assert flags.cuda_only_units(src, units) == {}


def test_a_unit_that_includes_cutlass_is_explained_by_that_include_where_nothing_else_does(tmp_path):
    """xformers 0.0.35's sparse24 kernels: CUTLASS_DEVICE is `inline` (host) without __CUDACC__, so the
    project's own kernel calling a CUTLASS-style device function fails in the project's file; the CUTLASS
    include two headers down explains it. A unit that does not reach the include stays unexplained."""
    rel, header = "xformers/csrc/sparse24/sparse24_largest_mask_2d.cu", "xformers/csrc/sparse24/warp_tensor.h"
    error = (f"/out/run/torch/{rel[:-3]}.hip:184:11: error: reference to __host__ function 'run' in __global__ "
             "function")
    cutlass = {"rule": "cutlass-no-rocm", "severity": "error", "file": header, "line": 3, "status": "open"}
    files_out = {
        rel: {"path": rel, "kind": "cu", "unit": True, "findings": [], "fixes": [], "compile": {
            "gfx942": {"status": "failed", "first_error": error}}},
        "plain.cu": {"path": "plain.cu", "kind": "cu", "unit": True, "findings": [], "fixes": [], "compile": {
            "gfx942": {"status": "failed", "first_error": error.replace(rel[:-3], "plain")}}},
        header: {"path": header, "kind": "header", "unit": False, "findings": [cutlass], "fixes": []}}
    read = {f"/out/run/torch/{r[:-3]}.hip": (r, identity) for r in (rel, "plain.cu")}
    pipeline.explain_failures(files_out, [rel, "plain.cu"], set(), read, checks(tmp_path), {rel: "", "plain.cu": ""},
                              pipeline.unit_fallbacks(RULES), {rel: {rel, header}, "plain.cu": {"plain.cu"}})
    assert files_out[rel]["compile"]["gfx942"]["explained_by"] == {
        "rule": "cutlass-no-rocm", "file": header, "line": 3, "how": "the unit uses CUTLASS, which has no ROCm build"}
    assert "explained_by" not in files_out["plain.cu"]["compile"]["gfx942"]


# exllama 0.1.0: cuda_func/q4_attn.cu includes hip_compat.cuh under `#if defined(USE_ROCM)`; its line 11 fails under HIP 7.2
EXLLAMA_COMPAT = """#ifndef _hip_compat_cuh
#define _hip_compat_cuh
__device__ __forceinline__ __half2 __compat_h2rcp(__half2 x) {
    return _Float16_2{static_cast<_Float16>(__builtin_amdgcn_rcph(x.x)),
        static_cast<_Float16>(__builtin_amdgcn_rcph(x.y))};
}
#endif
"""
EXLLAMA_ATTN = """#include "q4_attn.cuh"
#if defined(USE_ROCM)
#include "../hip_compat.cuh"
#endif
#ifndef USE_ROCM
__device__ half2 own(half2 x) { return x; }
#else
__device__ half2 own(half2 x) { return __builtin_bad(x); }
#endif
"""


def test_an_error_in_the_projects_own_rocm_code_is_explained_as_such(tmp_path):
    texts = {"exllama_ext/hip_compat.cuh": EXLLAMA_COMPAT, "exllama_ext/cuda_func/q4_attn.cu": EXLLAMA_ATTN}
    compat = explain.Location("exllama_ext/hip_compat.cuh", 4, "no viable conversion from '__half' to '__fp16'")
    why, made = explain.explain(compat, "exllama_ext/cuda_func/q4_attn.cu", lambda rel: [], checks(tmp_path, texts),
                                lambda rel, n: "x")
    assert why["rule"] == "own-rocm-code-fails"
    assert made["note"] == ("exllama_ext/hip_compat.cuh is the project's own ROCm code: included only from ROCm branches "
                            "(exllama_ext/cuda_func/q4_attn.cu:3)")
    branch = explain.Location("exllama_ext/cuda_func/q4_attn.cu", 8, "use of undeclared identifier '__builtin_bad'")
    check = explain.in_own_rocm_code(texts)
    assert check("", branch) == "the error's line is in the project's own ROCm branch `#else` (exllama_ext/cuda_func/q4_attn.cu:7)"
    # the CUDA branch, and a file also included outside ROCm branches, are not the project's ROCm code
    assert check("", explain.Location("exllama_ext/cuda_func/q4_attn.cu", 6, "x")) == ""
    both = dict(texts, **{"other.cu": '#include "exllama_ext/hip_compat.cuh"\n'})
    assert explain.in_own_rocm_code(both)("", compat) == ""
    # a unit the project's own ROCm build compiles as written (ctransformers 0.2.27's ggml-cuda.cu under
    # GGML_USE_HIPBLAS): any line of it
    own = explain.in_own_rocm_code({"ggml-cuda.cu": "void f() {\n  memcpy(&eps, p, 4);\n}\n"},
                                   {"ggml-cuda.cu": "its switch GGML_USE_HIPBLAS"})
    assert own("", explain.Location("ggml-cuda.cu", 2, "no matching function for call to 'memcpy'")) == (
        "ggml-cuda.cu is compiled as the project's own ROCm build compiles it (its switch GGML_USE_HIPBLAS), not translated")
    assert own("", explain.Location("other.cu", 2, "x")) == ""


def test_an_error_inside_pytorchs_headers_is_named_with_the_header(tmp_path):
    # MinkowskiEngine 0.5.4 spmm.cu under PyTorch 2.14's headers
    error = ("/opt/rocmig/torch/include/torch/headeronly/util/HeaderOnlyArrayRef.h:115:23: error: arithmetic on a "
             "pointer to an incomplete type 'const at::Tensor'")
    where = explain.locate(error, {})
    assert where.path == "/opt/rocmig/torch/include/torch/headeronly/util/HeaderOnlyArrayRef.h" and not where.rel
    why, made = explain.explain(where, "src/spmm.cu", lambda rel: [], checks(tmp_path), lambda rel, n: "")
    assert why["rule"] == "torch-header-error" and made["file"] == "src/spmm.cu"
    assert made["note"] == "in PyTorch's torch/headeronly/util/HeaderOnlyArrayRef.h"
    # a HIP header's error is not PyTorch's
    hip = explain.locate("/usr/include/hip/amd_detail/amd_warp_functions.h:10:1: error: static assertion failed", {})
    assert explain.in_torch_headers("/opt/rocmig/torch/include")("", hip) == ""


def test_a_dead_else_of_a_chain_without_rocm_macros_is_not_rocm_code():
    text = "#ifdef USE_ROCM\nint a;\n#endif\n#if 1\nint b;\n#else\nint c;\n#endif\n"
    assert explain.in_own_rocm_code({"k.cu": text})("", explain.Location("k.cu", 7, "x")) == ""
    assert explain.in_own_rocm_code({"k.cu": text})("", explain.Location("k.cu", 2, "x")).startswith(
        "the error's line is in the project's own ROCm branch `USE_ROCM`")


def test_a_name_declared_only_in_another_program_of_a_collection_is_declared_nowhere():
    """The CUDA samples' particles/particleSystem_cuda.cu copies to `params`, but its own header declares
    `cudaParams`; other samples declare a `params` of their own, which this program never sees."""
    texts = {"Samples/particles/particleSystem_cuda.cu": "void set(SimParams* h) { copy(params, h); }\n",
             "Samples/particles/particles.cpp": "int main() {}\n",
             "Samples/particles/particles_kernel_impl.cuh": "__constant__ SimParams cudaParams;\n",
             "Samples/nbody/nbody.cu": "__constant__ float params[4];\nint main() { return (int)params[0]; }\n"}
    where = explain.Location("Samples/particles/particleSystem_cuda.cu", 1, "use of undeclared identifier 'params'")
    note = explain.declared_nowhere(texts)("params", where)
    assert note == "`params` is used in 1 file(s) of the tree (Samples/particles/particleSystem_cuda.cu) and declared in none"
    # one program alone: its library folder's declaration counts
    single = {"app/main.cu": "int main() { return params; }\n", "lib/params.cu": "int params = 3;\n"}
    assert explain.declared_nowhere(single)("params", explain.Location("app/main.cu", 1, "")) == ""


def test_an_enumerator_is_a_declaration():
    """horovod 0.28.1's collective_operations.h writes LOG(WARNING) where its includer did not bring
    logging.h (whose enum class LogLevel declares WARNING): the name is declared in the tree, so the
    failure is not 'declared nowhere'."""
    texts = {"common/ops/collective_operations.h": "void f() {\n  LOG(WARNING) << 1;\n}\n",
             "common/logging.h": "enum class LogLevel {\n  TRACE, DEBUG, INFO, WARNING = 3, ERROR, FATAL\n};\n"}
    where = explain.Location("common/ops/collective_operations.h", 2, "use of undeclared identifier 'WARNING'")
    assert explain.declared_nowhere(texts)("WARNING", where) == ""
    assert explain.declared_nowhere({**texts, "common/logging.h": "// WARNING, ERROR\n"})("WARNING", where).startswith("`WARNING` is used")


def test_a_name_declared_behind_a_build_switched_include_names_the_switch(tmp_path):
    """horovod 0.28.1: collective_operations.h writes LOG(WARNING); logging.h (LogLevel's WARNING) comes only
    through global_state.h's `#if HAVE_GLOO`, which its CMake defines when built with Gloo."""
    (tmp_path / "CMakeLists.txt").write_text("if(HAVE_GLOO)\n    add_definitions(-DHAVE_GLOO=1)\nendif()\n")
    texts = {"common/ops/collective_operations.h": '#include "../global_state.h"\nvoid f() {\n  LOG(WARNING) << 1;\n}\n',
             "common/global_state.h": '#include <queue>\n#if HAVE_GLOO\n#include "gloo/gloo_context.h"\n#endif\nstruct S {};\n',
             "common/gloo/gloo_context.h": '#include "../logging.h"\n',
             "common/logging.h": "enum class LogLevel { TRACE, WARNING, ERROR };\n#define LOG(l) Log(LogLevel::l)\n",
             "common/ops/gpu_operations.cc": '#include "collective_operations.h"\n'}
    where = explain.Location("common/ops/collective_operations.h", 3, "use of undeclared identifier 'WARNING'")
    why, made = explain.explain(where, "common/ops/gpu_operations.cc", lambda rel: [], checks(tmp_path, texts),
                                lambda rel, n: "")
    assert why["rule"] == "name-declared-behind-build-switch", why
    assert made["note"] == ("`WARNING` is declared in common/logging.h, which common/ops/collective_operations.h reaches only "
                            "through `#if HAVE_GLOO` (common/global_state.h:2); the build passes -DHAVE_GLOO=1 at "
                            "CMakeLists.txt:2, this compile does not: --define HAVE_GLOO")
    # included outside the #if as well: the switch is not the cause
    open_texts = {**texts, "common/ops/collective_operations.h": '#include "../logging.h"\n' + texts["common/ops/collective_operations.h"]}
    gate = explain.declared_behind_build_switch(open_texts, includes.IncludeGraph(open_texts), frozenset(),
                                                flags.build_generated(tmp_path))
    assert gate("WARNING", where) == ""


def test_a_name_only_another_translation_unit_declares_is_named():
    """particles: particleSystem_cuda.cu uses `params`, which only particles.cpp (another source of the
    program, not included) declares; a name the file itself or a header declares is left alone, and so
    is one whose declaring source the file includes (llm.c's test files include the training .cu)."""
    texts = {"Samples/particles/particleSystem_cuda.cu": '#include "particles_kernel_impl.cuh"\n'
                                                         "void set(SimParams* h) { copy(params, h); }\n",
             "Samples/particles/particles.cpp": "ParamListGL *params;\nint main() { params = 0; }\n",
             "Samples/particles/particles_kernel_impl.cuh": "__constant__ SimParams cudaParams;\n",
             "Samples/nbody/nbody.cu": "__constant__ float params[4];\nint main() { return (int)params[0]; }\n"}
    where = explain.Location("Samples/particles/particleSystem_cuda.cu", 2, "use of undeclared identifier 'params'")
    check = explain.declared_in_another_unit(texts)
    assert check("params", where) == ("`params` is declared only in Samples/particles/particles.cpp, another "
                                      "translation unit of the program, which Samples/particles/particleSystem_cuda.cu "
                                      "does not include")
    assert check("cudaParams", where) == ""  # a header declares it
    included = {**texts, "Samples/particles/particleSystem_cuda.cu": '#include "particles.cpp"\nint f() { return params; }\n'}
    assert explain.declared_in_another_unit(included)("params", where) == ""
    # through the rules: the failure is explained by the new rule, not left without a finding
    made = explain.explain(where, "Samples/particles/particleSystem_cuda.cu", lambda rel: [], checks(Path("/nonexistent"), texts),
                           lambda rel, line: "")
    assert made[0] and made[0]["rule"] == "name-declared-in-another-unit"


def test_a_program_folder_without_its_main_keeps_its_own_declarations():
    """Rodinia (as stored): srad/srad_v1/ lacks main.cu, which includes define.c (`#define fp float`) before the
    kernels; the kernels use `fp`, which b+tree's common.h and lavaMD's lavaMD.h declare too. In a collection of
    programs the folder is a program of its own, so the failure names its own define.c, not other programs'."""
    texts = {"srad/srad_v1/extract_kernel.cu": "__global__ void extract(long n, fp* d_I) {}\n",
             "srad/srad_v1/define.c": "#define fp float\n",
             "b+tree/common.h": "#define fp float\n", "b+tree/main.c": '#include "common.h"\nint main() {}\n',
             "lavaMD/lavaMD.h": "#define fp float\n", "lavaMD/main.c": '#include "lavaMD.h"\nint main() {}\n'}
    where = explain.Location("srad/srad_v1/extract_kernel.cu", 1, "unknown type name 'fp'")
    assert explain.declared_in_another_unit(texts)("fp", where) == (
        "`fp` is declared only in srad/srad_v1/define.c, another translation unit of the program, which "
        "srad/srad_v1/extract_kernel.cu does not include")
    assert explain.declared_nowhere(texts)("fp", where) == ""


def test_a_name_only_an_unincluded_header_declares_is_named():
    """torch-encoding 1.2.1: rectify_cuda.cu uses ScalarConvert, which only common.h (not included by it,
    directly or through its includes) defines; a header reached through another header counts as included,
    and a source file's declaration is left to name-declared-in-another-unit."""
    texts = {"encoding/lib/gpu/rectify_cuda.cu": "#include <torch/extension.h>\n#include \"device_tensor.h\"\n"
                                                 "__global__ void k(float* x) { x[0] = ScalarConvert<int, float>::to(1); }\n",
             "encoding/lib/gpu/device_tensor.h": "#pragma once\ntemplate <class T> struct DeviceTensor { T* p; };\n",
             "encoding/lib/gpu/common.h": "#pragma once\ntemplate <typename In, typename Out>\nstruct ScalarConvert {\n"
                                          "  static __host__ __device__ Out to(const In v) { return (Out) v; }\n};\n",
             "encoding/lib/gpu/syncbn_kernel.cu": '#include "common.h"\nfloat g() { return ScalarConvert<int, float>::to(2); }\n'}
    graph = includes.IncludeGraph(texts)
    where = explain.Location("encoding/lib/gpu/rectify_cuda.cu", 3, "no template named 'ScalarConvert'")
    check = explain.declared_in_unincluded_header(texts, graph.reach)
    assert check("ScalarConvert", where) == ("`ScalarConvert` is declared only in encoding/lib/gpu/common.h, which "
                                             "encoding/lib/gpu/rectify_cuda.cu does not include, directly or through its includes")
    # included through device_tensor.h: not this class
    chained = {**texts, "encoding/lib/gpu/device_tensor.h": '#pragma once\n#include "common.h"\n'}
    assert explain.declared_in_unincluded_header(chained, includes.IncludeGraph(chained).reach)("ScalarConvert", where) == ""
    # declared in a source file as well: the other-unit rule's class, not this one
    in_source = {**texts, "encoding/lib/gpu/operator.cpp": "template <class A, class B> struct ScalarConvert;\n"}
    assert explain.declared_in_unincluded_header(in_source, includes.IncludeGraph(in_source).reach)("ScalarConvert", where) == ""
    made = explain.explain(where, "encoding/lib/gpu/rectify_cuda.cu", lambda rel: [], checks(Path("/nonexistent"), texts),
                           lambda rel, line: "")
    assert made[0] and made[0]["rule"] == "name-declared-in-unincluded-header"


def test_a_folder_no_build_file_names_is_not_built_and_explains_its_failures(tmp_path):
    """lightseq 3.0.1: its op builders name csrc/ops_new/*.cpp and comment csrc/ops/*.cpp out; lsflow's
    CMakeLists.txt names a context.cpp of its own folder; the vendored CUB's tests are named nowhere."""
    src = tmp_path / "lightseq"
    for rel, text in {
        "lightseq/training/ops/pytorch/builder/operator_builder.py":
            "class OperatorBuilder:\n    def sources(self):\n        return [\n"
            "            # \"csrc/ops/context.cpp\",\n            \"csrc/ops_new/dropout.cpp\",\n        ]\n",
        "lightseq/csrc/lsflow/CMakeLists.txt": "add_library(lsflow STATIC context.cpp)\n",
        "lightseq/csrc/lsflow/context.cpp": "", "lightseq/csrc/ops/context.cpp": "", "lightseq/csrc/ops/dropout.cpp": "",
        "lightseq/csrc/ops_new/dropout.cpp": "", "3rdparty/cub/test/test_warp_scan.cu": "",
    }.items():
        (src / rel).parent.mkdir(parents=True, exist_ok=True)
        (src / rel).write_text(text)
    units = {"lightseq/csrc/lsflow/context.cpp", "lightseq/csrc/ops/context.cpp", "lightseq/csrc/ops/dropout.cpp",
             "lightseq/csrc/ops_new/dropout.cpp", "3rdparty/cub/test/test_warp_scan.cu"}
    notes = flags.unbuilt_units(src, units)
    assert sorted(notes) == ["3rdparty/cub/test/test_warp_scan.cu", "lightseq/csrc/ops/context.cpp",
                             "lightseq/csrc/ops/dropout.cpp"]
    rel = "lightseq/csrc/ops/context.cpp"
    error = f"/out/run/hip/{rel}:3:1: error: use of undeclared identifier 'Context'; did you mean 'lightseq::Context'?"
    files_out = {rel: {"path": rel, "kind": "cxx", "unit": True, "findings": [], "fixes": [], "compile": {
        "gfx942": {"status": "failed", "first_error": error}}}}
    pipeline.note_unit_findings(files_out, RULES, "unit-not-built", {rel: notes[rel]})
    pipeline.explain_failures(files_out, [rel], set(), {f"/out/run/hip/{rel}": (rel, identity)}, checks(src),
                              {rel: ""}, pipeline.unit_fallbacks(RULES))
    assert files_out[rel]["compile"]["gfx942"]["explained_by"]["rule"] == "unit-not-built"
    # the unit's finding holds no line (0): the compiler's error, read by a diagnostic, goes first
    made = files_out[rel]["findings"][0]
    assert made["line"] == 0
    near = explain.Location(rel, 2, "redefinition of 'Forward'")
    assert explain.explain(near, rel, lambda _rel: [made], [], lambda _rel, _n: "") == (None, None)
    # a build that lists folders: nothing can be said
    (src / "setup.py").write_text("import glob\nsources = glob.glob('csrc/**/*.cpp')\n")
    assert flags.unbuilt_units(src, units) == {}


def test_a_unit_the_cmake_globs_of_its_folder_do_not_match_is_not_built(tmp_path):
    """qulacs 0.6.14: src/gpusim/CMakeLists.txt compiles `file(GLOB GPUSIM_SRC "*.cu" "*.cuh" "*.h")`, so its
    stale test.cpp (calling X_gate_host with 3 of 5 arguments) is built by nothing; the root's clang-format
    GLOB_RECURSE feeds no target, and a configure_file() loop over headers compiles nothing either."""
    src = tmp_path / "qulacs"
    files = {
        "CMakeLists.txt": "file(GLOB_RECURSE header_files ${CMAKE_CURRENT_SOURCE_DIR}/src/*.h)\n"
                          "file(GLOB_RECURSE ALL_CXX_SOURCE_FILES ${CMAKE_CURRENT_SOURCE_DIR}/src/*.[ch]pp)\n"
                          "add_custom_target(format COMMAND clang-format -i ${ALL_CXX_SOURCE_FILES})\n",
        "src/gpusim/CMakeLists.txt": 'file(GLOB GPUSIM_SRC\n    "*.cu"\n    "*.cuh"\n    "*.h")\n'
                                     "set(ALL_SRC ${GPUSIM_SRC})\nadd_library(gpusim_static STATIC ${ALL_SRC})\n",
        "src/gpusim/util.cu": "", "src/gpusim/stat_ops.cu": "", "src/gpusim/test.cpp": "",
        "src/cppsim/CMakeLists.txt": 'file(GLOB_RECURSE CPPSIM_SRC "*.cpp")\nadd_library(cppsim STATIC ${CPPSIM_SRC})\n',
        "src/cppsim/gate/gate.cpp": "",
    }
    for rel, text in files.items():
        (src / rel).parent.mkdir(parents=True, exist_ok=True)
        (src / rel).write_text(text)
    units = {"src/gpusim/util.cu", "src/gpusim/stat_ops.cu", "src/gpusim/test.cpp", "src/cppsim/gate/gate.cpp"}
    notes = flags.unbuilt_units(src, units)
    assert list(notes) == ["src/gpusim/test.cpp"] and "file(GLOB) patterns" in notes["src/gpusim/test.cpp"]
    # a pattern under a variable this reading does not resolve: nothing can be said
    (src / "src/gpusim/CMakeLists.txt").write_text("file(GLOB S ${SRC_DIR}/*.cu)\nadd_library(g ${S})\n")
    assert flags.unbuilt_units(src, units) == {}


def test_a_call_with_another_count_than_the_trees_declaration_is_explained(tmp_path):
    """altis (file by file from the store): dwt.cu's `dwt_cuda::fdwt53(in, out, width, height, levels, verbose,
    quiet)` against dwt_cuda/dwt.h's five-parameter declaration. A count no tree declaration has (a HIP API
    called with CUDA's arguments) is not this finding."""
    texts = {"dwt2d/dwt.cu": ('#include "dwt_cuda/dwt.h"\ninline float fdwt(int *in, int *out, int width, int height, int levels,'
                              ' bool verbose, bool quiet)\n{\n        return dwt_cuda::fdwt53(in, out, width, height, levels,'
                              ' verbose, quiet);\n}\n'),
             "dwt2d/dwt_cuda/dwt.h": ("namespace dwt_cuda {\n  float fdwt53(int * in, int * out, int sizeX, int sizeY, int levels);\n"
                                      "  void rdwt53(int * in, int * out, int sizeX, int sizeY, int levels = 1);\n}\n")}
    check = explain.declared_with_other_arity(texts)
    where = explain.Location("dwt2d/dwt.cu", 4, "too many arguments to function call, expected 5, have 7")
    assert check("5", where) == ("`fdwt53` is declared in dwt2d/dwt_cuda/dwt.h with 5 parameters; dwt2d/dwt.cu calls it "
                                 "with another count (the files come from different versions of the project)")
    assert check("4", where) == "" and check("5", explain.Location("", 4, "")) == ""
    assert [explain._parameter_count(p) for p in ("", "void", "int a", "std::map<int, int> m, int b = f(1, 2)")] == [0, 0, 1, 2]
    rel, error = "dwt2d/dwt.cu", "/out/run/hip/dwt2d/dwt.cu:4:65: error: too many arguments to function call, expected 5, have 7"
    files_out = {rel: {"path": rel, "kind": "cu", "unit": True, "findings": [], "fixes": [], "compile": {
        "gfx942": {"status": "failed", "first_error": error}}}}
    pipeline.explain_failures(files_out, [rel], set(), {f"/out/run/hip/{rel}": (rel, identity)}, checks(tmp_path, texts),
                              {rel: ""}, pipeline.unit_fallbacks(RULES))
    assert files_out[rel]["compile"]["gfx942"]["explained_by"]["rule"] == "tree-call-arity"


def test_a_header_outside_the_builders_include_path_is_named_for_a_failed_unit(tmp_path):
    """lightseq 3.0.1's pybind_op.cpp: its operator builder names csrc/ops_new/includes and csrc/lsflow/includes,
    and it includes normalize_layer.h, which only csrc/ops/includes holds."""
    src = tmp_path / "lightseq"
    for rel, text in {
        "training/builder/operator_builder.py":
            "class OperatorBuilder:\n    def sources(self):\n        return ['csrc/pybind/pybind_op.cpp', 'csrc/ops_new/x.cpp']\n"
            "    def include_paths(self):\n        return ['csrc/ops_new/includes', 'csrc/lsflow/includes']\n",
        "csrc/pybind/pybind_op.cpp": '#include "context.h"\n#include "normalize_layer.h"\n',
        "csrc/ops_new/x.cpp": '#include "context.h"\n',
        "csrc/lsflow/includes/context.h": "#pragma once\n",
        "csrc/ops/includes/normalize_layer.h": "#pragma once\n",
        "csrc/ops/includes/context.h": "#pragma once\n",
        "csrc/ops_new/includes/softmax.h": "#pragma once\n",
    }.items():
        (src / rel).parent.mkdir(parents=True, exist_ok=True)
        (src / rel).write_text(text)
    texts = {p.relative_to(src).as_posix(): p.read_text() for p in src.rglob("*") if p.suffix in (".cpp", ".h")}
    units = ["csrc/pybind/pybind_op.cpp", "csrc/ops_new/x.cpp"]
    project = flags.project_flags(src, set(texts), None, (), ())
    graph = includes.IncludeGraph(texts, include_dirs=project.all_dirs(), unit_dirs=project.unit_dirs(units))
    notes = pipeline.outside_build_path(graph, project, units)
    assert notes == {"csrc/pybind/pybind_op.cpp": "normalize_layer.h is found only in csrc/ops/includes, which the include "
                                                  "path its op builder gives (csrc/ops_new/includes, csrc/lsflow/includes) lacks"}
    rel = units[0]
    error = f"/out/run/hip/{rel}:9:12: error: no member named 'new_thread_context' in 'lightseq::Context'"
    files_out = {rel: {"path": rel, "kind": "cxx", "unit": True, "findings": [], "fixes": [], "compile": {
        "gfx942": {"status": "failed", "first_error": error}}}}
    pipeline.note_unit_findings(files_out, RULES, "include-outside-build-path", notes)
    pipeline.explain_failures(files_out, [rel], set(), {f"/out/run/hip/{rel}": (rel, identity)}, checks(src),
                              {rel: ""}, pipeline.unit_fallbacks(RULES))
    assert files_out[rel]["compile"]["gfx942"]["explained_by"]["rule"] == "include-outside-build-path"


def test_overloads_on_two_cuda_library_handles_are_explained_by_hips_void_handles(tmp_path):
    """pennylane-lightning-gpu 0.45.0's LinearAlg.hpp: HandleDeleter's operator() for cublasHandle_t and for
    cusparseHandle_t are one function in HIP (both void*); a file without such handles is not claimed."""
    rel = "pennylane_lightning/core/utils/cuda_utils/LinearAlg.hpp"
    texts = {rel: "struct HandleDeleter {\n  void operator()(cublasHandle_t h) const { cublasDestroy(h); }\n"
                  "  void operator()(cusparseHandle_t h) const { cusparseDestroy(h); }\n};\n",
             "other.hpp": "struct S {\n  void f(int);\n  void f(int);\n};\n"}
    where = explain.Location(rel, 3, "class member cannot be redeclared")
    why, made = explain.explain(where, "AlgorithmsGPU.cpp", lambda r: [], checks(tmp_path, texts), lambda r, n: "")
    assert why["rule"] == "hip-library-handles-void" and made["note"] == f"{rel} uses cublasHandle_t"
    elsewhere = explain.Location("other.hpp", 3, "class member cannot be redeclared")
    why, _ = explain.explain(elsewhere, "u.cpp", lambda r: [], checks(tmp_path, texts), lambda r, n: "")
    assert why is None or why["rule"] != "hip-library-handles-void"


def test_the_projects_own_error_directive_explains_the_unit(tmp_path):
    # nabu 2026.1.2's flatfield.cu: CuPy passes -DN_FLATS=... when it compiles the kernel at run time
    rel = "nabu/cuda/src/flatfield.cu"
    texts = {rel: '#include <stdio.h>\n#ifndef N_FLATS\n  #error "Please provide the N_FLATS variable"\n#endif\n'
                  "__global__ void k(float* x) {}\n"}
    read = {f"/out/run/hip/{rel}": (rel, lambda line: line)}
    where = explain.locate(f'/out/run/hip/{rel}:3:4: error: "Please provide the N_FLATS variable"', read)
    why, made = explain.explain(where, rel, lambda r: [], checks(tmp_path, texts), lambda r, n: "")
    assert why is not None and why["rule"] == "tree-error-directive", why
    assert made is not None and made["note"] == f'{rel}:3 is the project\'s own `#error "Please provide the N_FLATS variable"`'
    # an error on an ordinary line is not this rule's
    where = explain.locate(f"/out/run/hip/{rel}:5:33: error: expected expression", read)
    why, _made = explain.explain(where, rel, lambda r: [], checks(tmp_path, texts), lambda r, n: "")
    assert why is None or why["rule"] != "tree-error-directive"
