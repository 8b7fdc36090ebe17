"""The fixup cuda-arch-branch (recipes/migrate/migrate/archbranch.py): AMD's device code takes a CUDA arch
branch whose PTX translates instead of a trap stub; nothing else changes."""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "recipes" / "migrate"))

from migrate import advice, archbranch, cpp, rules  # noqa: E402
from migrate.archs import Arch  # noqa: E402

ARCHS = [Arch("gfx942", "CDNA3", 64, 65536), Arch("gfx1100", "RDNA3", 32, 65536)]
UNDEFINED = cpp.AMD_UNDEFINED

# AutoGPTQ 0.7.1 autogptq_extension/marlin/marlin_cuda_kernel.cu, two of its helpers
MARLIN = """#include <cuda_runtime.h>
#include <cassert>
__device__ inline void cp_async4_pred(void* smem_ptr, const void* glob_ptr, bool pred = true) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800  // Ampere
  const int BYTES = 16;
  uint32_t smem = static_cast<uint32_t>(__cvta_generic_to_shared(smem_ptr));
  asm volatile(
    "{\\n"
    "   .reg .pred p;\\n"
    "   setp.ne.b32 p, %0, 0;\\n"
    "   @p cp.async.cg.shared.global [%1], [%2], %3;\\n"
    "}\\n" :: "r"((int) pred), "r"(smem), "l"(glob_ptr), "n"(BYTES)
  );
#else
  assert(0);
#endif
}
__device__ inline void cp_async_fence() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.commit_group;\\n" ::);
#else
  assert(0);
#endif
}
"""


def _migrate(cuda: str) -> advice.Migrated:
    hip = cuda.replace("<cuda_runtime.h>", "<hip/hip_runtime.h>")
    return advice.migrate_tree({"k.cu": (cuda, hip)}, rules.load_rules(), ARCHS)


def test_a_stub_gated_branch_whose_ptx_translates_is_taken_on_amd():
    migrated = _migrate(MARLIN)
    final = migrated.final["k.cu"]
    assert final.count("#if (defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800) || defined(__AMDGCN__)") == 2, final
    assert "#if (defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800) || defined(__AMDGCN__)  // Ampere" in final
    assert "rocmig_ptx::cp_async(" in final and "asm volatile" not in final  # translated, now that AMD compiles it
    assert "assert(0);" in final  # the host pass keeps the stub, as NVIDIA's host pass does
    stubs = [(f.line, f.status) for f in migrated.findings["k.cu"] if f.rule == "cuda-arch-stub"]
    assert stubs == [(4, "fixed"), (19, "fixed")], stubs
    # the cp.async AMD now compiles is a completed copy: its warning is open as for any other cp.async
    assert [(f.line, f.status) for f in migrated.findings["k.cu"] if f.rule == "ptx-async-copy-synchronous"] == [(7, "open")]


def test_of_an_sm90_and_an_sm80_branch_the_translatable_one_is_taken():
    cuda = ("__device__ inline unsigned f(unsigned a, unsigned b) {\n  unsigned d;\n"
            "#if __CUDA_ARCH__ >= 900\n  asm volatile(\"wgmma.fence.sync.aligned;\\n\" ::);\n  d = a;\n"
            "#elif __CUDA_ARCH__ >= 800\n  asm(\"lop3.b32 %0, %1, %2, 0, 0x96;\" : \"=r\"(d) : \"r\"(a), \"r\"(b));\n"
            "#else\n  __trap();\n#endif\n  return d;\n}\n")
    out = archbranch.enable(cuda, UNDEFINED, cuda_warps=True)
    assert "#if __CUDA_ARCH__ >= 900\n" in out and "#elif (__CUDA_ARCH__ >= 800) || defined(__AMDGCN__)\n" in out


def test_branches_without_a_translation_or_with_a_real_amd_branch_are_left():
    untranslated = MARLIN.replace('asm volatile("cp.async.commit_group;\\n" ::);', 'asm volatile("nanosleep.u32 100;" ::);')
    migrated = _migrate(untranslated)
    assert migrated.final["k.cu"].count("defined(__AMDGCN__)") == 1
    stubs = {(f.line, f.status) for f in migrated.findings["k.cu"] if f.rule == "cuda-arch-stub"}
    assert stubs == {(4, "fixed"), (19, "open")}, stubs
    fallback = ("__device__ float g(float x) {\n#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800\n"
                "  return __expf(x);\n#else\n  return expf(x);\n#endif\n}\n")
    assert archbranch.enable(fallback, UNDEFINED, cuda_warps=True) == fallback
    upper = MARLIN.replace("__CUDA_ARCH__ >= 800", "__CUDA_ARCH__ < 800")  # a branch for older GPUs
    assert archbranch.enable(upper, UNDEFINED, cuda_warps=True) == upper
    host = "void h() {\n#ifdef __CUDA_ARCH__\n  x();\n#else\n  assert(0);\n#endif\n}\n"
    assert archbranch.enable(host, UNDEFINED, cuda_warps=True) == host


# optimum-quanto 0.2.7 marlin/gptq_marlin_dtypes.cuh: bf16 members only NVIDIA's sm_80 and later declare
DTYPES = """template <typename scalar_t> class ScalarType {};
template <> class ScalarType<nv_bfloat16> {
 public:
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  static __device__ float inline num2float(const nv_bfloat16 x) { return __bfloat162float(x); }
#endif
};
"""


def test_declarations_only_newer_nvidia_gpus_get_are_declared_on_amd():
    out = archbranch.enable(DTYPES, UNDEFINED, cuda_warps=False)
    assert "#if (defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800) || defined(__HIP__)\n" in out
    # left: a macro switch (it would turn on code elsewhere), an sm_90 bound
    for other in (DTYPES.replace("  static __device__", "#define BF16_OK 1\n  static __device__"),
                  DTYPES.replace(">= 800", ">= 900")):
        assert archbranch.enable(other, UNDEFINED, cuda_warps=False) == other


def test_statements_only_newer_nvidia_gpus_run_run_in_amd_device_code():
    """A kernel's work under `#if __CUDA_ARCH__ >= 800` with no #else: AMD skipped it (the kernel wrote
    nothing); now it runs it, as NVIDIA's sm_80 does, in device code only."""
    kernel = ("__global__ void k(const __nv_bfloat16* in, float* out) {\n  int i = threadIdx.x;\n"
              "#if __CUDA_ARCH__ >= 800\n  out[i] = __bfloat162float(in[i]);\n#endif\n}\n")
    assert "#if (__CUDA_ARCH__ >= 800) || defined(__AMDGCN__)\n" in archbranch.enable(kernel, UNDEFINED, cuda_warps=True)
    # a file with its own path for older GPUs, which AMD takes: turning the >= 800 block on as well would
    # define fast_exp twice (or, in a function, run both paths)
    fallback = ("#if __CUDA_ARCH__ >= 800\n__device__ __forceinline__ float fast_exp(float x) { return __expf(x); }\n#endif\n"
                "#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ < 800\n"
                "__device__ __forceinline__ float fast_exp(float x) { return expf(x); }\n#endif\n")
    assert archbranch.enable(fallback, UNDEFINED, cuda_warps=True) == fallback
    # an intrinsic HIP lacks (no translation): left, with the stub
    sleep = ("__device__ void wait(volatile int* f) {\n#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 700\n"
             "  while (*f == 0) __nanosleep(64);\n#else\n  assert(0);\n#endif\n}\n")
    assert archbranch.enable(sleep, UNDEFINED, cuda_warps=True) == sleep


def test_stubs_that_print_or_return_after_the_trap_and_reversed_chains():
    add = 'float y; asm("add.f32 %0, %1, %1;" : "=f"(y) : "f"(x)); return y;'
    trailing = (f"__device__ inline float v3(float x) {{\n#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800\n  {add}\n"
                '#else\n  assert(false && "requires sm_80");\n  return 0.f;\n#endif\n}\n')
    assert "#if (defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800) || defined(__AMDGCN__)\n" in \
        archbranch.enable(trailing, UNDEFINED, cuda_warps=True)
    reversed_chain = (f"__device__ inline float v5(float x) {{\n#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ < 800\n"
                      f"  __trap();\n  return x;\n#else\n  {add}\n#endif\n}}\n")
    out = archbranch.enable(reversed_chain, UNDEFINED, cuda_warps=True)
    assert "#if (!defined(__CUDA_ARCH__) || __CUDA_ARCH__ < 800) && !defined(__AMDGCN__)\n" in out, out
