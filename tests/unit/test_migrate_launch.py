"""The fixup launch-ex (recipes/migrate/migrate/launch.py): CUDA 12's extensible launch, as vLLM 0.34.0's
fp32_router_gemm.cu and minimax_reduce_rms_kernel.cu write it, on the texts each translator leaves, and
the PTX form of programmatic dependent launch."""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "recipes" / "migrate"))

from migrate import launch, ptx  # noqa: E402

# vLLM 0.34.0 csrc/fp32_router_gemm.cu's launcher, shortened
CUDA = """#include <cuda_runtime.h>
#include "router.cuh"
__global__ void gemm(float* out) {
  cudaGridDependencySynchronize();
  out[threadIdx.x] = 1.f;
  cudaTriggerProgrammaticLaunchCompletion();
}
void launch(float* out, cudaStream_t stream) {
  cudaLaunchConfig_t config;
  config.gridDim = 4;
  config.stream = stream;
  cudaLaunchAttribute attrs[1];
  attrs[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attrs[0].val.programmaticStreamSerializationAllowed = 1;
  config.numAttrs = 1;
  config.attrs = attrs;
  cudaLaunchKernelEx(&config, gemm, out);
}
"""
# what hipify-perl 7.2 makes of it: its table maps the types and some attribute ids, not cudaLaunchKernelEx
PERL = (CUDA.replace("cuda_runtime.h", "hip/hip_runtime.h").replace("cudaStream_t", "hipStream_t")
        .replace("cudaLaunchConfig_t", "hipLaunchConfig_t").replace("cudaLaunchAttribute attrs", "hipLaunchAttribute attrs"))
SAME = list(range(CUDA.count("\n") + 1))


def test_hipify_perls_text_gets_rocmig_launch_names_and_the_header_before_the_first_include():
    marked = launch.rename(PERL, CUDA, SAME)
    assert marked.split("\n")[0] == "#include <hip/hip_runtime.h>" + launch.MARK
    out = launch.header(marked)
    block, code = out.split("#endif  // ROCMIG_CUDA_LAUNCH_EX_H\n", 1)
    assert out.startswith("// CUDA 12's extensible kernel launch") and launch.MARK not in out
    assert code.startswith('#include <hip/hip_runtime.h>\n#include "router.cuh"\n')
    for line in ("  rocmig_launch::GridDependencySynchronize();", "  rocmig_launch::Config config;",
                 "  rocmig_launch::Attribute attrs[1];", "  attrs[0].id = rocmig_launch::ProgrammaticStreamSerialization;",
                 "  attrs[0].val.programmaticStreamSerializationAllowed = 1;",
                 "  rocmig_launch::LaunchKernelEx(&config, gemm, out);", "  rocmig_launch::TriggerProgrammaticLaunchCompletion();"):
        assert line + "\n" in code, line
    assert "cudaLaunch" not in code and "hipLaunch" not in code


def test_torch_hipifys_untouched_names_are_renamed_and_the_line_count_kept_until_the_header():
    torch_text = CUDA.replace("cuda_runtime.h", "hip/hip_runtime.h")
    marked = launch.rename(torch_text, CUDA, SAME)
    assert marked.count("\n") == torch_text.count("\n")  # one marked line: later fixups' line maps hold
    assert "rocmig_launch::Config config;" in marked and "cudaLaunch" not in marked


def test_a_projects_own_hip_launch_code_is_left():
    # a ROCm branch written by the project: its hipLaunch* lines came from hip lines of the CUDA text
    cuda = ("#include <cuda_runtime.h>\n#ifdef USE_ROCM\nvoid a(hipLaunchConfig_t* c, void* f, void** p) { hipLaunchKernelExC(c, f, p); }\n"
            "#else\nvoid b(cudaLaunchConfig_t* c, void* f, void** p) { cudaLaunchKernelExC(c, f, p); }\n#endif\n")
    hip = cuda.replace("cuda_runtime.h", "hip/hip_runtime.h").replace("cudaLaunchConfig_t", "hipLaunchConfig_t") \
        .replace("cudaLaunchKernelExC", "hipLaunchKernelExC")
    out = launch.rename(hip, cuda, list(range(cuda.count("\n") + 1))).split("\n")
    assert out[2] == "void a(hipLaunchConfig_t* c, void* f, void** p) { hipLaunchKernelExC(c, f, p); }"
    assert out[4] == "void b(rocmig_launch::Config* c, void* f, void** p) { rocmig_launch::LaunchKernelExC(c, f, p); }"


def test_a_file_without_launch_names_is_left_and_a_header_without_includes_gets_it_after_pragma_once():
    plain = "#include <hip/hip_runtime.h>\n__global__ void k() {}\n"
    assert launch.rename(plain, plain, [0, 1, 2]) == plain
    header = "#pragma once\ninline void go(const cudaLaunchConfig_t* c, void* f, void** a) { cudaLaunchKernelExC(c, f, a); }\n"
    out = launch.header(launch.rename(header, header, [0, 1, 2]))
    assert out.startswith("#pragma once\n// CUDA 12's extensible kernel launch")
    assert out.endswith("#endif  // ROCMIG_CUDA_LAUNCH_EX_H\ninline void go(const rocmig_launch::Config* c, void* f, void** a) "
                        "{ rocmig_launch::LaunchKernelExC(c, f, a); }\n")


def test_an_include_in_a_branch_amd_does_not_compile_is_not_where_the_header_goes():
    cuda = ("#ifndef USE_ROCM\n#include <cuda_bf16.h>\n#endif\n#include <cuda_runtime.h>\n"
            "void f(const cudaLaunchConfig_t* c, void* k, void** a) { cudaLaunchKernelExC(c, k, a); }\n")
    out = launch.rename(cuda, cuda, list(range(6)), dead={2}).split("\n")
    assert out[1] == "#include <cuda_bf16.h>" and out[3] == "#include <cuda_runtime.h>" + launch.MARK


def test_griddepcontrol_ptx_has_nothing_to_do_on_hip():
    code = ('__global__ void k(float* x) {\n  asm volatile("griddepcontrol.wait;" ::: "memory");\n  x[0] = 1.f;\n'
            '  asm volatile("griddepcontrol.launch_dependents;");\n}\n')
    assert ptx.rewrite(code, True).split("\n")[1:4] == [
        "  do { /* PTX: griddepcontrol.wait */ __atomic_signal_fence(__ATOMIC_SEQ_CST); (void)0; "
        "__atomic_signal_fence(__ATOMIC_SEQ_CST); } while (0);",
        "  x[0] = 1.f;", "  do { /* PTX: griddepcontrol.launch_dependents */ (void)0; } while (0);"]
    # an operand or another modifier is not the instruction above: left for the finding
    odd = '__global__ void k() { asm volatile("griddepcontrol.wait.x;"); }\n'
    assert ptx.rewrite(odd, True) == odd


def test_stream_attributes_strings_and_conditional_includes_are_left():
    # a file that only fills in a stream attribute keeps hipify's HIP types
    stream = ("#include <cuda_runtime.h>\nvoid f(cudaStream_t s) { cudaLaunchAttributeValue v; "
              "cudaStreamSetAttribute(s, cudaLaunchAttributeAccessPolicyWindow, &v); }\n")
    assert launch.rename(stream, stream, list(range(3))) == stream
    # names in strings and comments stay; the header goes before the first #include outside every #if
    cuda = ('#ifdef _WIN32\n#include <windows.h>\n#endif\n#include <cuda_runtime.h>\n'
            'void g(const cudaLaunchConfig_t* c, void* k, void** a) {\n'
            '  if (cudaLaunchKernelExC(c, k, a)) printf("cudaLaunchKernelEx failed");  // cudaLaunchKernelEx\n}\n')
    out = launch.rename(cuda, cuda, list(range(8))).split("\n")
    assert out[1] == "#include <windows.h>" and out[3] == "#include <cuda_runtime.h>" + launch.MARK
    assert out[5] == ('  if (rocmig_launch::LaunchKernelExC(c, k, a)) printf("cudaLaunchKernelEx failed");  '
                      "// cudaLaunchKernelEx")
