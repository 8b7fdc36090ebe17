"""The directed-rounding fixup (rounding.py): calls renamed, helpers inserted once, and every helper equal,
bit for bit, to the host FPU's own IEEE 754 operation under fesetround on random operands (every bit
pattern: subnormals, infinities, NaNs; and operands chosen so that results are exact, tie-free, subnormal or
overflow), for each of the three directions.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "recipes" / "migrate"))
from migrate import rounding  # noqa: E402


def test_calls_renamed_and_helpers_inserted_once():
    cuda = ("#include <cuda_runtime.h>\n#include \"interval.h\"\n"
            "__device__ float lo(float a, float b) { return __fdiv_rd(a, b) + ::__fadd_ru(a, b); }\n"
            "// __fdiv_rz(a, b) in a comment stays\n"
            "__device__ double hi(double a) { return __dsqrt_ru(a) + __dsqrt_ru(a) + __fma_rd(a, a, a); }\n")
    out = rounding.directed_rounding(cuda)
    assert "rocmig_fdiv_rd(a, b) + rocmig_fadd_ru(a, b)" in out
    assert "rocmig_dsqrt_ru(a) + rocmig_dsqrt_ru(a) + __fma_rd(a, a, a)" in out  # double fma: no exact form
    assert "// __fdiv_rz(a, b) in a comment stays" in out
    assert out.count("#define ROCMIG_DIRECTED_ROUNDING") == 1 and out.count("#define ROCMIG_DSQRT_RU\n") == 1
    assert "rocmig_fdiv_rz(" not in out and "rocmig_fadd_rd(" not in out
    assert out.index('#include "interval.h"') < out.index("ROCMIG_DIRECTED_ROUNDING") < out.index("__device__ float lo")
    assert rounding.directed_rounding(out) == out  # nothing left to rename: the second pass adds nothing
    plain = "__device__ float f(float a) { return __fdiv_rn(a, 2.0f) + my__fdiv_rd(a) + s.__fadd_rd(a, a); }\n"
    assert rounding.directed_rounding(plain) == plain
    # after `>`, `?` and `:` a call is still a call; `p->__fadd_rd(...)` and `X::__fadd_rd(...)` are members
    mixed = ("__device__ float g(float a, float b, P* p) { return a>__fadd_rd(a, b) ? b:__fadd_ru(a, b) + "
             "p->__fadd_rd(a, b) + X::__fadd_rd(a, b); }\n")
    out = rounding.directed_rounding(mixed)
    assert "a>rocmig_fadd_rd(a, b) ? b:rocmig_fadd_ru(a, b)" in out and "p->__fadd_rd(a, b) + X::__fadd_rd(a, b)" in out
    # a project's own HIP fallback keeps its name and its calls
    own = ("#ifdef __HIP_PLATFORM_AMD__\n__device__ inline float __fadd_rd(float a, float b) { return a + b; }\n#endif\n"
           "__device__ float h(float a) { return __fadd_rd(a, a) + __fadd_ru(a, a); }\n")
    out = rounding.directed_rounding(own)
    assert "float __fadd_rd(float a, float b)" in out and "return __fadd_rd(a, a) + rocmig_fadd_ru(a, a);" in out


CHECK = r"""
#include <cfenv>
#include <cmath>
#include <cstdio>
#include <cstdint>
#include <cstring>
#include <random>
#define __host__
#define __device__
#ifdef OCML_LIKE_NEXTAFTER
/* a device library whose nextafter steps onto +0 from either side (ROCm device-libs' older OCML) */
static double ocml_nextafter(double x, double y) { double n = std::nextafter(x, y); return n == 0 ? 0.0 : n; }
static float ocml_nextafterf(float x, float y) { float n = std::nextafterf(x, y); return n == 0 ? 0.0f : n; }
#define nextafter ocml_nextafter
#define nextafterf ocml_nextafterf
#endif
%(helpers)s
/* operands where the sign of zero, an exact zero sum or the overflow threshold decides the result */
static const double DS[][2] = {{1.5, -1.5}, {0.0, -0.0}, {-0.0, 0.0}, {-0.0, -0.0}, {0x1.fffffffffffffp1023, 0x1p970},
                               {-0x1p-1074, 0.75}, {0x1p-1074, 0.5}, {-0x1p-1074, -0.25}, {-0x1p-1000, 0x1p-80},
                               {0x1p-1022, -0x1.8p52}, {-0x1.fffffffffffffp1023, -0x1p970}, {-1.0, 3.0}};
static const float FS[][3] = {{1, 1, -1}, {3, 5, -15}, {0.0f, 2, -0.0f}, {-0.0f, 2, 0.0f}, {-0.0f, 2, -0.0f},
                              {1.5f, -1.5f, 0}, {-0x1p-149f, 0.75f, 0}, {0x1p-149f, 0.5f, -0.0f},
                              {0x1.fffffep127f, 0x1p103f, 0}, {-0x1p-149f, -0.25f, 0}, {-0x1p-100f, 0x1p-60f, 0x1p-200f},
                              {-2, 3, 6}};
static const int NS = sizeof(DS) / sizeof(DS[0]);
static std::mt19937_64 rng(20261206);
static uint64_t bits64() { return rng(); }
static double any_double(int k) {
  uint64_t u = bits64();
  double x;
  switch (k %% 6) {
    case 0: std::memcpy(&x, &u, 8); return x;                                     // any pattern
    case 1: return std::ldexp((double)(u >> 11) / 9007199254740992.0 + 0.5, (int)(u %% 80) - 40) * (u & 1 ? -1 : 1);
    case 2: return std::ldexp((double)(u >> 11) / 9007199254740992.0 + 0.5, -1000 - (int)(u %% 74));  // subnormal
    case 3: return std::ldexp((double)(u >> 11) / 9007199254740992.0 + 0.5, 1000 + (int)(u %% 24));   // huge
    case 4: return (double)(int64_t)(u %% 2001) - 1000;                               // small integers: exact
    default: return std::ldexp(1.0, (int)(u %% 200) - 100) * (double)(1 + (u >> 60));
  }
}
static float any_float(int k) {
  uint32_t u = (uint32_t)bits64();
  float x;
  switch (k %% 6) {
    case 0: std::memcpy(&x, &u, 4); return x;
    case 1: return std::ldexp((float)(u >> 8) / 16777216.0f + 0.5f, (int)(u %% 40) - 20) * (u & 1 ? -1 : 1);
    case 2: return std::ldexp((float)(u >> 8) / 16777216.0f + 0.5f, -126 - (int)(u %% 24));
    case 3: return std::ldexp((float)(u >> 8) / 16777216.0f + 0.5f, 120 + (int)(u %% 8));
    case 4: return (float)((int)(u %% 2001) - 1000);
    default: return std::ldexp(1.0f, (int)(u %% 60) - 30) * (float)(1 + (u >> 28));
  }
}
template <class T> static bool same(T x, T y) {
  if (std::isnan(x) && std::isnan(y)) return true;
  return std::memcmp(&x, &y, sizeof(T)) == 0;
}
static long bad = 0, runs = 0;
template <class T> static void check(const char* name, int mode, T got, T want, T a, T b, T c) {
  ++runs;
  if (!same(got, want) && bad++ < 12)
    std::printf("%%s mode %%d (%%a, %%a, %%a): got %%a want %%a\n", name, mode, (double)a, (double)b, (double)c,
                (double)got, (double)want);
}
int main() {
  const int modes[3] = {FE_DOWNWARD, FE_UPWARD, FE_TOWARDZERO};
  for (int i = 0; i < %(n)d; ++i) {
    float fa = any_float(i), fb = any_float(i / 6), fc = any_float(i / 36);
    double da = any_double(i), db = any_double(i / 6);
    if (i %% 7 == 3) fb = fa;                       // x - x: an exact zero
    if (i %% 7 == 5) { da = db * (double)(i %% 97); fa = fb * (float)(i %% 89); }  // exact quotients
    if (i %% 11 == 4) { fa = fb * fb; da = db * db; }                               // exact roots
    if (i < NS) { da = DS[i][0]; db = DS[i][1]; fa = FS[i][0]; fb = FS[i][1]; fc = FS[i][2]; }
    for (int m = 0; m < 3; ++m) {
      volatile float va = fa, vb = fb, vc = fc;
      volatile double wa = da, wb = db;
      std::fesetround(modes[m]);
      float f_add = va + vb, f_sub = va - vb, f_mul = va * vb, f_div = va / vb, f_rcp = 1.0f / va;
      float f_sqrt = std::sqrt((float)va), f_fma = std::fma((float)va, (float)vb, (float)vc);
      double d_add = wa + wb, d_sub = wa - wb, d_mul = wa * wb, d_div = wa / wb, d_rcp = 1.0 / wa;
      double d_sqrt = std::sqrt((double)wa);
      std::fesetround(FE_TONEAREST);
%(calls)s
    }
  }
  std::printf("%%ld mismatches in %%ld\n", bad, runs);
  return bad != 0;
}
"""

CALLS = {"fadd": "f_add, fa, fb, 0.0f", "fsub": "f_sub, fa, fb, 0.0f", "fmul": "f_mul, fa, fb, 0.0f",
         "fdiv": "f_div, fa, fb, 0.0f", "frcp": "f_rcp, fa, 0.0f, 0.0f", "fsqrt": "f_sqrt, fa, 0.0f, 0.0f",
         "fmaf": "f_fma, fa, fb, fc", "dadd": "d_add, da, db, 0.0", "dsub": "d_sub, da, db, 0.0",
         "dmul": "d_mul, da, db, 0.0", "ddiv": "d_div, da, db, 0.0", "drcp": "d_rcp, da, 0.0, 0.0",
         "dsqrt": "d_sqrt, da, 0.0, 0.0"}


def _call(stem: str, mode: str) -> str:
    want, *operands = [s.strip() for s in CALLS[stem].split(",")]
    arity = rounding.OPS[stem][1].count(",") + 1
    args = ", ".join(operands[:arity])
    guard = {"rd": "m == 0", "ru": "m == 1", "rz": "m == 2"}[mode]
    return (f"      if ({guard}) check(\"{stem}_{mode}\", m, rocmig_{stem}_{mode}({args}), {want}, "
            f"{', '.join(operands)});\n")


@pytest.mark.parametrize("nextafter", ["libm", "ocml-like"])
def test_helpers_equal_the_fpu_in_every_direction(tmp_path, nextafter):
    """Also with a nextafter that returns +0 wherever it steps onto zero, as older OCML does: the helpers
    give the step's zero the sign of the value it left."""
    if not shutil.which("g++"):
        pytest.skip("no g++")
    helpers = rounding.CORE + "".join(rounding.helper(s, m) for s in rounding.OPS for m in rounding.MODES)
    calls = "".join(_call(s, m) for s in rounding.OPS for m in rounding.MODES)
    src = tmp_path / "rounding.cpp"
    src.write_text(CHECK % {"helpers": helpers, "calls": calls, "n": 60000})
    # -frounding-math: the reference operations are done in the mode fesetround sets, never folded
    subprocess.run(["g++", "-std=c++17", "-O1", "-frounding-math", "-ffp-contract=off", str(src), "-o",
                    str(tmp_path / "t"), *(["-DOCML_LIKE_NEXTAFTER"] if nextafter == "ocml-like" else [])], check=True)
    done = subprocess.run([str(tmp_path / "t")], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout
    assert "0 mismatches in 2340000" in done.stdout


def test_a_wrong_direction_is_caught(tmp_path):
    """The comparison can fail: a helper that rounds down where it should round up differs."""
    if not shutil.which("g++"):
        pytest.skip("no g++")
    wrong = rounding.helper("fdiv", "ru").replace("return rocmig_directed_f32(r, e, 1,", "return rocmig_directed_f32(r, e, -1,")
    helpers = rounding.CORE + wrong
    src = tmp_path / "rounding.cpp"
    src.write_text(CHECK % {"helpers": helpers, "calls": _call("fdiv", "ru"), "n": 2000})
    subprocess.run(["g++", "-std=c++17", "-O1", "-frounding-math", str(src), "-o", str(tmp_path / "t")], check=True)
    done = subprocess.run([str(tmp_path / "t")], capture_output=True, text=True, timeout=300)
    assert done.returncode == 1 and "fdiv_ru mode 1" in done.stdout
