"""How the migrate recipe splits a unit's compile into hipcc passes (one host pass per set of defines,
one device pass per offload arch; a C/C++ source without device code is one host-only pass whose
result stands for every arch) and which leading includes of a unit may go into a shared PCH."""

import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "recipes" / "migrate"))

from migrate import cpp  # noqa: E402
from migrate.archs import Arch  # noqa: E402
from migrate.compile import Job, call_groups, first_error, host_only, passes  # noqa: E402
from migrate.pch import Prefix, blanked_copy, choose, shared_prefix, worth_a_pch  # noqa: E402
from migrate.proc import run_tree  # noqa: E402
from migrate.tree import read_work_text  # noqa: E402

GFX942 = Arch("gfx942", "CDNA3", 64, 65536)
GFX90A = Arch("gfx90a", "CDNA2", 64, 65536)
GFX1100 = Arch("gfx1100", "RDNA3", 32, 65536)
GROUPS = [[GFX942, GFX90A], [GFX1100]]


def _names(calls):
    return [[a.name for a in call] for call in calls]


def test_archs_with_equal_defines_share_one_call():
    job = Job("k.cu", Path("k.cu"), (), {64: ("HIP_ENABLE_WARP_SYNC_BUILTINS",), 32: ("HIP_ENABLE_WARP_SYNC_BUILTINS",)})
    assert _names(call_groups(job, GROUPS)) == [["gfx942", "gfx90a", "gfx1100"]]
    assert _names(call_groups(Job("k.cu", Path("k.cu"), ()), GROUPS)) == [["gfx942", "gfx90a", "gfx1100"]]


def test_a_wavefront_define_keeps_one_call_per_value():
    job = Job("k.cu", Path("k.cu"), (), {64: ("ROCM_WAVEFRONT_SIZE=64",), 32: ("ROCM_WAVEFRONT_SIZE=32",)})
    assert _names(call_groups(job, GROUPS)) == [["gfx942", "gfx90a"], ["gfx1100"]]


@pytest.mark.parametrize("kind, text, expected", [
    ("cxx", "#include <torch/extension.h>\nPYBIND11_MODULE(m, x) { x.def(\"f\", &f); }\n", True),
    ("cxx", "#include <hip/hip_runtime.h>\nvoid f(hipStream_t s) { hipStreamSynchronize(s); }\n"
            "// a __global__ kernel lives in k.cu\nconst char* s = \"<<<\";\n", True),
    ("cxx", "__global__ void k(float* x) { x[0] = 1; }\n", False),
    ("cxx", "__device__ inline float twice(float x) { return 2 * x; }\n", False),
    ("cxx", "void f() { hipLaunchKernelGGL(k, dim3(1), dim3(64), 0, 0); }\n", False),
    ("cxx", "void f() { k<<<1, 64>>>(); }\n", False),
    ("cu", "void f() {}\n", False),
])
def test_host_only_units_are_c_cxx_sources_without_device_code(kind, text, expected):
    assert host_only(kind, cpp.blank(text)) is expected


def _passes(job):
    return [(p.mode, [a.name for a in p.archs]) for p in passes(Path("/usr/bin/hipcc"), job, GROUPS, [], "-O0")]


def test_a_device_unit_is_one_host_pass_per_call_group_and_one_device_pass_per_arch():
    job = Job("k.cu", Path("k.cu"), (), {64: ("ROCM_WAVEFRONT_SIZE=64",), 32: ("ROCM_WAVEFRONT_SIZE=32",)})
    assert _passes(job) == [("host", ["gfx942", "gfx90a"]), ("gfx942", ["gfx942"]), ("gfx90a", ["gfx90a"]),
                            ("host", ["gfx1100"]), ("gfx1100", ["gfx1100"])]
    device = passes(Path("/usr/bin/hipcc"), job, GROUPS, [], "-O0")[1]
    assert "--offload-device-only" in device.args and "--offload-arch=gfx942" in device.args
    assert "-DROCM_WAVEFRONT_SIZE=64" in device.args


def test_a_host_only_unit_is_one_host_pass():
    assert _passes(Job("b.cpp", Path("b.cpp"), (), host_only=True)) == [("host", ["gfx942", "gfx90a", "gfx1100"])]
    # compiled as C++, as the build's host compiler does (no offload flags, the platform macro given)
    (one,) = passes(Path("hipcc"), Job("b.cpp", Path("b.cpp"), (), host_only=True), GROUPS, [], "-O0")
    x = one.args.index("-x")
    assert one.args[x + 1] == "c++" and "hip" not in one.args and "-D__HIP_PLATFORM_AMD__=1" in one.args
    assert not any(a.startswith("--offload") for a in one.args)


def test_the_platform_macro_is_given_once_when_the_units_flags_name_it():
    """A PyTorch extension's flags (cpp_extension's COMMON_HIP_FLAGS) define __HIP_PLATFORM_AMD__ already."""
    job = Job("t.hip", Path("t.hip"), (), flags=("-D__HIP_PLATFORM_AMD__=1", "-DUSE_ROCM=1"))
    for one in passes(Path("hipcc"), job, GROUPS, [], "-O0"):
        assert one.args.count("-D__HIP_PLATFORM_AMD__=1") == 1, one.args


def test_prefix_is_the_leading_includes_written_to_resolve_as_from_the_unit(tmp_path):
    unit = tmp_path / "hip" / "k.hip"
    unit.parent.mkdir()
    (unit.parent / "local.h").write_text("int unguarded;\n")
    text = ('#include "hip/hip_runtime.h"\n/* Copyright\n   notice */\n// a comment\n\n#include <torch/extension.h>\n'
            '#include <vector>  // std\n#include "local.h"\n#include "elsewhere.h"\n__global__ void k() {}\n#include <cmath>\n')
    prefix = shared_prefix(unit, text)
    assert prefix.lines == ('#include "hip/hip_runtime.h"', "#include <torch/extension.h>", "#include <vector>",
                            f'#include "{unit.parent}/local.h"', '#include "elsewhere.h"')
    assert prefix.blank == (0, 5, 6, 7, 8)


@pytest.mark.parametrize("text", [
    '#define X 1\n#include <vector>\n',                 # a define before the includes may change them
    '#if 1\n#include <vector>\n#endif\n',
    '__global__ void k() {}\n#include <vector>\n',
    '#include <vector> /* a block comment on the line\n   goes on */\n',
])
def test_no_prefix_when_the_unit_does_not_start_with_an_include_line(tmp_path, text):
    assert shared_prefix(tmp_path / "k.hip", text).lines == ()


def test_blanked_copy_keeps_the_units_folder_lines_and_name(tmp_path):
    unit = tmp_path / "k.hip"
    text = '#include "hip/hip_runtime.h"\n// c\n#include <vector>\nint main() { return __LINE__; }\n'
    copy = blanked_copy(unit, text, "utf-8", shared_prefix(unit, text))
    assert copy.parent == tmp_path and copy.name.startswith(".")
    assert copy.read_text() == f'#line 1 "{unit}"\n\n// c\n\nint main() {{ return __LINE__; }}\n'


def test_blanked_copy_of_a_latin1_unit_keeps_its_bytes(tmp_path):
    """A work-tree copy restored to latin-1 (tree.restore_encodings) is copied byte for byte past the prefix."""
    unit = tmp_path / "k.hip"
    unit.write_bytes(b'#include <vector>\nconst char unit[] = "\xb5s";\n')
    text, codec = read_work_text(unit)
    assert codec == "latin-1"
    copy = blanked_copy(unit, text, codec, shared_prefix(unit, text))
    assert copy.read_bytes() == f'#line 1 "{unit}"\n\n'.encode() + b'const char unit[] = "\xb5s";\n'


def test_units_share_the_part_of_their_leading_includes_they_agree_on():
    def p(*names):
        return Prefix(tuple(f"#include <{n}>" for n in names), tuple(range(len(names))))
    prefixes = {"a": p("hip/hip_runtime.h", "common.h", "a.h"), "b": p("hip/hip_runtime.h", "common.h", "b.h"),
                "c": p("hip/hip_runtime.h", "common.h", "a.h"), "d": p("hip/hip_runtime.h", "other.h"),
                "e": p("torch/extension.h"), "f": p("hip/hip_runtime.h", "common.h")}
    configs = dict.fromkeys(prefixes, "-O0") | {"f": "-O0 -DX"}
    chosen = choose(prefixes, configs)
    assert chosen["a"] == chosen["c"] == p("hip/hip_runtime.h", "common.h", "a.h")
    # b and d agree with the rest on hip_runtime.h only: they share that PCH
    assert chosen["b"] == chosen["d"] == p("hip/hip_runtime.h")
    assert chosen["e"] == Prefix() and chosen["f"] == Prefix()  # nobody to share with (f: other flags)
    alone = choose({"a": prefixes["a"], "b": prefixes["b"], "c": prefixes["c"]}, configs)
    assert alone["b"] == Prefix() and alone["a"] == prefixes["a"]  # b would be the only user of any shorter one


def test_a_hip_pass_without_a_shared_include_still_has_the_implicit_headers_for_a_pch():
    hip = ["/usr/bin/hipcc", "-x", "hip", "-std=c++17", "-O0", "--offload-device-only", "--offload-arch=gfx942"]
    cxx = ["/usr/bin/hipcc", "-x", "c++", "-std=c++17", "-O0"]  # a host-only unit compiled as C++
    one = Prefix(("#include <hip/hip_runtime.h>",), (0,))
    assert worth_a_pch(hip, Prefix()) and worth_a_pch(hip, one) and worth_a_pch(cxx, one)
    assert not worth_a_pch(cxx, Prefix())
    assert not worth_a_pch(["/usr/bin/hipcc", "-xhip", "hip"], Prefix())  # "-x hip" is one flag and its value


def test_a_command_past_its_timeout_is_stopped_with_its_children(tmp_path):
    pidfile = tmp_path / "child"
    output, code = run_tree(["sh", "-c", f"sleep 60 & echo $! > {pidfile}; echo started; wait"], 1)
    assert code is None and "started" in output
    child = int(pidfile.read_text())
    deadline = time.monotonic() + 5
    while Path(f"/proc/{child}").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not Path(f"/proc/{child}").exists()


def test_a_command_within_its_timeout_gives_output_and_exit_code():
    assert run_tree(["sh", "-c", "echo out; echo err >&2; exit 3"], 10) == ("out\nerr\n", 3)


def test_an_assembler_rejecting_the_compilers_own_instruction_is_a_back_end_failure():
    # clang 22 -O0, gfx1100, ggml's template-instances/mmf-instance-ncols_8.cu (compiles at -O2)
    from migrate.compile import BACKEND_ERROR
    assert BACKEND_ERROR.search("2:error: Illegal instruction detected: Invalid dpp_ctrl value: wavefront shifts "
                                "are not supported on GFX10+")
    assert not BACKEND_ERROR.search("k.hip:3:5: error: use of undeclared identifier 'x'")


def test_a_cpp_unit_reaching_rocthrust_is_named_for_the_hip_compile():
    # MinkowskiEngine 0.5.4: direct_max_pool.cpp -> types.hpp -> robin_hood.h -> utils.hpp -> <thrust/host_vector.h>
    from migrate import compile as compile_mod
    from migrate import cpp
    closure = ['#include "types_hip.hpp"\nint f();\n', '// #include <thrust/sort.h> in a comment\n',
               '#include <thrust/host_vector.h>\n#include "x.h"\n']
    assert compile_mod.device_library_header([cpp.blank_code(t) for t in closure]) == "thrust/host_vector.h"
    assert compile_mod.device_library_header([cpp.blank_code(t) for t in closure[:2]]) == ""


# hipcc 7.2's output for ColossalAI 0.5.0's rms_layernorm_kernel.cu (bf16 launch), shortened to its first
# error, one note of the instantiation and the candidate's note, then the next error
NO_MATCHING_CALL = """/out/run/torch/k/hip/rms_layernorm_kernel.hip:86:16: error: no matching function for call to object of type 'CastFunctor<c10::BFloat16, float>'
   86 |     float v1 = CastFunctor<scalar_t,float>()(x_local[cnt].x);
      |                ^~~~~~~~~~~~~~~~~~~~~~~~~~~~~
/out/run/torch/k/hip/rms_layernorm_kernel.hip:265:7: note: in instantiation of function template specialization 'rms_layernorm_kernel<c10::BFloat16, 8>' requested here
/out/run/torch/k/funcs/cast_functor_hip.h:327:17: note: candidate function not viable: no known conversion from '__hip_bfloat16' to 'c10::BFloat16' for 1st argument
  327 |   HOSTDEVICE To operator()(From val) { return static_cast<To>(val); }
/out/run/torch/k/hip/rms_layernorm_kernel.hip:87:16: error: use of undeclared identifier 'v3'
/out/run/torch/k/funcs/other.h:3:1: note: candidate function not viable: no known conversion from 'int' to 'float *' for 1st argument
"""


def test_the_first_errors_candidate_type_mismatch_follows_it():
    """A "no matching function" error says what was called; the candidate's note says which conversion is
    missing, the part a diagnostic rule can name: it follows the error, and notes of later errors do not."""
    assert first_error(NO_MATCHING_CALL) == (
        "/out/run/torch/k/hip/rms_layernorm_kernel.hip:86:16: error: no matching function for call to object of type "
        "'CastFunctor<c10::BFloat16, float>' (candidate not viable: no known conversion from '__hip_bfloat16' to "
        "'c10::BFloat16' for 1st argument)")
    second = NO_MATCHING_CALL[NO_MATCHING_CALL.index("/out/run/torch/k/hip/rms_layernorm_kernel.hip:87"):]
    assert first_error(second.replace("no known conversion", "requires 2 arguments")) == (
        "/out/run/torch/k/hip/rms_layernorm_kernel.hip:87:16: error: use of undeclared identifier 'v3'")


def test_a_redefinitions_previous_declaration_in_a_hip_header_follows_it():
    """libKMCUDA 6.2.3's tricks.cuh defines a float atomicMin, which HIP declares: the HIP header's place
    is named; a previous declaration inside the migrated tree is not (the error's own file says it)."""
    output = ("In file included from /out/run/hip/kmeans.cu:14:\n"
              "/out/run/hip/tricks.cuh:75:33: error: functions that differ only in their return type cannot be overloaded\n"
              "   75 | __device__ __forceinline__ void atomicMin(\n"
              "/usr/include/hip/amd_detail/amd_hip_atomic.h:484:25: note: previous definition is here\n")
    assert first_error(output, "/out/run") == (
        "/out/run/hip/tricks.cuh:75:33: error: functions that differ only in their return type cannot be overloaded "
        "(previous declaration: /usr/include/hip/amd_detail/amd_hip_atomic.h:484)")
    inside = output.replace("/usr/include/hip/amd_detail/amd_hip_atomic.h", "/out/run/hip/other.cuh")
    assert first_error(inside, "/out/run").endswith("cannot be overloaded")
