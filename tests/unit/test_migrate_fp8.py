"""The fixup fp8-ocp (recipes/migrate/migrate/fp8.py) on the texts each translator leaves: hipify-perl's FNUZ
renames and torch.utils.hipify's untouched cuda_fp8.h."""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "recipes" / "migrate"))

from migrate import fp8  # noqa: E402

# gptqmodel 7.7.0 swordfish marlin_dtypes.cuh, as torch.utils.hipify leaves it (cuda_fp8.h is not in its map)
TORCH_TEXT = """#include <hip/hip_bf16.h>
#include <cuda_fp8.h>
template <> class MarlinScalarType<__nv_fp8_e4m3> {
  using scalar_t = __nv_fp8_e4m3;
  using scalar_t2 = __nv_fp8x2_e4m3;
  using FragA = Vec<__nv_fp8x4_e4m3, 4>;
  static __device__ float2 num22float2(const __nv_fp8x2_e4m3 x) { return float2(x); }
};
"""


def _migrated(text: str, cuda: str) -> str:
    return fp8.header(fp8.ocp(text, cuda))


def test_torch_hipifys_text_gets_the_header_and_rocmig_names():
    out = _migrated(TORCH_TEXT, TORCH_TEXT)
    assert out.count("#define ROCMIG_CUDA_FP8") == 1 and "#include <cuda_fp8.h>" not in out
    code = out.split("}  // namespace rocmig_fp8\n#endif\n", 1)[1]
    assert "template <> class MarlinScalarType<rocmig_fp8::e4m3> {" in code
    assert "using FragA = Vec<rocmig_fp8::e4m3x4, 4>;" in code and "const rocmig_fp8::e4m3x2 x" in code
    assert "__nv_" not in code


def test_hipify_perls_fnuz_names_and_conversions_become_rocmig_names():
    cuda = ('#include "cuda_fp8.h"\n__device__ __nv_fp8_storage_t q(float x) {\n'
            "  return __nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E5M2);\n}\n")
    hip = ('#include "hip/hip_fp8.h"\n__device__ __hip_fp8_storage_t q(float x) {\n'
           "  return __hip_cvt_float_to_fp8(x, __HIP_SATFINITE, __HIP_E5M2_FNUZ);\n}\n")
    code = _migrated(hip, cuda).split("}  // namespace rocmig_fp8\n#endif\n", 1)[1]
    assert code == ("__device__ rocmig_fp8::storage_t q(float x) {\n"
                    "  return rocmig_fp8::cvt_float_to_fp8(x, rocmig_fp8::SATFINITE, rocmig_fp8::E5M2);\n}\n")


def test_a_file_without_cuda_fp8_names_is_left_and_a_user_of_the_header_only_renamed():
    own = "#include <hip/hip_fp8.h>\n__device__ float f(__hip_fp8_e4m3_fnuz x) { return float(x); }\n"
    assert fp8.ocp(own, own) == own  # the tree's own FNUZ code
    user = '#include "dtypes.cuh"\n__device__ float g(__nv_fp8_e5m2 x) { return float(x); }\n'
    assert fp8.ocp(user, user) == '#include "dtypes.cuh"\n__device__ float g(rocmig_fp8::e5m2 x) { return float(x); }\n'


def test_global_scope_names_and_a_header_that_names_only_the_enums():
    cuda = "using fp8 = ::__nv_fp8_e4m3;\nstruct Fp8Cfg { __nv_fp8_interpretation_t interp; __nv_saturation_t sat; };\n"
    hip = cuda.replace("__nv_fp8_e4m3", "__hip_fp8_e4m3_fnuz").replace("__nv_fp8_interp", "__hip_fp8_interp").replace("__nv_sat", "__hip_sat")
    assert fp8.ocp(hip, cuda) == ("using fp8 = ::rocmig_fp8::e4m3;\n"
                                  "struct Fp8Cfg { rocmig_fp8::interpretation_t interp; rocmig_fp8::saturation_t sat; };\n")


# vLLM 0.34.0 csrc/fused_deepseek_v4_qnorm_rope_kv_insert_kernel.cu: its own ROCm branch with HIP's FP8 types
VLLM = """#ifndef USE_ROCM
  #include <cuda_fp8.h>
#else
  #include <hip/hip_fp8.h>
#endif
#ifdef USE_ROCM
__device__ uint8_t cvt(float val) {
  __hip_fp8_e4m3_fnuz fp8_val(val);
  return fp8_val.__x;
}
#else
__device__ uint8_t cvt(float val) { return __nv_fp8_e4m3(val).__x; }
#endif
"""


def test_a_projects_own_rocm_fp8_branch_is_left_where_the_build_takes_it():
    from migrate import cpp

    hip = VLLM.replace("<cuda_fp8.h>", "<hip/hip_fp8.h>")  # hipify's include; the __nv_ name below too
    hip = hip.replace("return __nv_fp8_e4m3(val)", "return __hip_fp8_e4m3_fnuz(val)")
    torch_build = cpp.dead_lines(cpp.blank(hip), cpp.HIPCC_UNDEFINED)  # USE_ROCM defined (unknown): nothing dead
    assert fp8.header(fp8.ocp(hip, VLLM, dead=torch_build | {2})) == hip  # the cuda_fp8.h include not compiled
    plain = fp8.header(fp8.ocp(hip, VLLM, dead={6, 7, 8, 9, 10, 11}))  # USE_ROCM undefined: the CUDA branch
    assert "#define ROCMIG_CUDA_FP8" in plain and "  #include <hip/hip_fp8.h>\n#endif" in plain  # its own include kept
    assert "__hip_fp8_e4m3_fnuz fp8_val(val);" in plain  # the tree's own FNUZ name kept
    assert "return rocmig_fp8::e4m3(val).__x;" in plain
