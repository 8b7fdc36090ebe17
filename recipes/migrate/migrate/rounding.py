"""CUDA's directed-rounding arithmetic on HIP: the fixup directed-rounding.

CUDA's __fadd_rd / __fadd_ru / __fadd_rz and their kin (__fsub, __fmul, __fdiv, __frcp, __fsqrt, __fmaf in
single precision; __dadd, __dsub, __dmul, __ddiv, __drcp, __dsqrt in double) are IEEE 754 operations
rounded toward -inf, +inf or zero (CUDA Math API, "Single Precision Intrinsics" and "Double Precision
Intrinsics"); interval arithmetic is built on them (the CUDA samples' interval, MinkowskiEngine's
coordinate hashing). HIP 7.2 declares them only under OCML_BASIC_ROUNDED_OPERATIONS
(clang 22's __clang_hip_math.h), and its device library has no __ocml_{add,div,...}_rtn/rtp/rtz bodies, so
they neither compile without that macro nor link with it.

This fixup renames each call to rocmig_<name> and inserts exact implementations once per file, under an
include guard. Each one rounds to nearest, finds the exact sign of that rounding error, and steps one ulp
(nextafter) where the mode asks for the other neighbour:
  - a sum: Knuth's TwoSum error term (exact for every finite sum; an overflow to inf is one ulp past the
    largest finite value);
  - a product, quotient or square root: an FMA residual on operands scaled by frexp into [0.5, 1), so that
    no residual underflows, even where the result is subnormal;
  - single precision: the operation in double (a product of two floats is exact there), then rounded to
    float with the error sign taken from the double result where that is not itself a float (double
    rounding is then harmless: only the sign of the total error decides the step).
An exact zero sum is -0 when rounding down, as IEEE 754 requires. The double-precision __fma_rd / _ru /
_rz have no exact form here and stay a finding.
"""

from __future__ import annotations

import re

from . import cpp
from .features import insert_after_includes

# CUDA name stem -> (C type, parameter names, body computing `r` rounded to nearest and `e`, the sign of
# exact - r, kind: "sum" / "fma" where an exact zero takes IEEE 754's sign rule); in a float op, r is a
# double rounded by rocmig_directed_f32
OPS = {
    "fadd": ("float", "a, b", "double r = (double)a + (double)b;\n  int e = rocmig_sum_err(a, b, r);", "sum"),
    "fsub": ("float", "a, b", "double r = (double)a - (double)b;\n  int e = rocmig_sum_err(a, -(double)b, r);", "sum"),
    "fmul": ("float", "a, b", "double r = (double)a * (double)b;  /* exact */\n  int e = 0;", ""),
    "fdiv": ("float", "a, b", "double r = (double)a / (double)b;\n  int e = rocmig_quot_err(a, b, r);", ""),
    "frcp": ("float", "a", "double r = 1.0 / (double)a;\n  int e = rocmig_quot_err(1.0, a, r);", ""),
    "fsqrt": ("float", "a", "double r = sqrt((double)a);\n  int e = rocmig_sqrt_err(a, r);", ""),
    "fmaf": ("float", "a, b, c", "double p = (double)a * (double)b;  /* exact */\n"
             "  double r = p + (double)c;\n  int e = rocmig_sum_err(p, c, r);", "fma"),
    "dadd": ("double", "a, b", "double r = a + b;\n  int e = rocmig_sum_err(a, b, r);", "sum"),
    "dsub": ("double", "a, b", "double r = a - b;\n  int e = rocmig_sum_err(a, -b, r);", "sum"),
    "dmul": ("double", "a, b", "double r = a * b;\n  int e = rocmig_prod_err(a, b, r);", ""),
    "ddiv": ("double", "a, b", "double r = a / b;\n  int e = rocmig_quot_err(a, b, r);", ""),
    "drcp": ("double", "a", "double r = 1.0 / a;\n  int e = rocmig_quot_err(1.0, a, r);", ""),
    "dsqrt": ("double", "a", "double r = sqrt(a);\n  int e = rocmig_sqrt_err(a, r);", ""),
}
MODES = {"rd": -1, "ru": 1, "rz": 0}
NAMES = "|".join(sorted(OPS, key=len, reverse=True))
# a call (not a member: `.`, `->`, `X::`; `::__fadd_rd` is one), and a project's own definition of the name
CALL = re.compile(r"(?<![\w.])(?<!->)(?<![\w>]::)(?:::)?__(" + NAMES + r")_(rd|ru|rz)\b(?=\s*\()")
HELPER_USE = re.compile(r"\brocmig_(?:" + NAMES + r")_r[duz]\b")
DEFINED = re.compile(r"\b(?:float|double)\s+__(" + NAMES + r")_(rd|ru|rz)\s*\(")

CORE = r"""// CUDA's directed-rounding arithmetic (absent from HIP): rounded to nearest, then one ulp toward the
// mode's side where the exact sign of the rounding error says so (mode: -1 down, 1 up, 0 toward zero)
#ifndef ROCMIG_DIRECTED_ROUNDING
#define ROCMIG_DIRECTED_ROUNDING
__host__ __device__ static inline int rocmig_sign(double x) { return (x > 0) - (x < 0); }
/* sign of a + b - s, s = a + b rounded (TwoSum; an overflow to inf from finite a, b lies past it) */
__host__ __device__ static inline int rocmig_sum_err(double a, double b, double s) {
  if (__builtin_isinf(s) && __builtin_isfinite(a) && __builtin_isfinite(b)) return s > 0 ? -1 : 1;
  double bb = s - a;
  return rocmig_sign((a - (s - bb)) + (b - bb));
}
/* sign of a * b - p, on a and b scaled into [0.5, 1) so that the residual cannot underflow */
__host__ __device__ static inline int rocmig_prod_err(double a, double b, double p) {
  int ea, eb;
  double ma = frexp(a, &ea), mb = frexp(b, &eb);
  return rocmig_sign(fma(ma, mb, -ldexp(p, -(ea + eb))));
}
/* sign of a / b - q, scaled likewise */
__host__ __device__ static inline int rocmig_quot_err(double a, double b, double q) {
  int ea, eb;
  double ma = frexp(a, &ea), mb = frexp(b, &eb);
  return rocmig_sign(fma(-ldexp(q, eb - ea), mb, ma)) * rocmig_sign(mb);
}
/* sign of sqrt(a) - s, on a scaled into [0.5, 2) by an even power of two */
__host__ __device__ static inline int rocmig_sqrt_err(double a, double s) {
  int e;
  double m = frexp(a, &e);
  if (e & 1) { m *= 2; e -= 1; }
  double t = ldexp(s, -e / 2);
  return rocmig_sign(fma(-t, t, m));
}
/* r (rounded to nearest, error sign e) rounded in `mode`; an exact zero sum (zero_sum) is -0 rounding down */
__host__ __device__ static inline double rocmig_directed(double r, int e, int mode, bool zero_sum) {
  if (zero_sum && r == 0 && e == 0 && mode < 0) return -0.0;
  if (e == 0 || (mode < 0 && e > 0) || (mode > 0 && e < 0)) return r;
  double n = mode == 0 ? ((r > 0 && e < 0) || (r < 0 && e > 0) ? nextafter(r, 0.0) : r)
                       : nextafter(r, mode < 0 ? -HUGE_VAL : HUGE_VAL);
  return n == 0 ? copysign(0.0, r) : n;  /* a step onto zero keeps r's sign (not every nextafter does) */
}
/* d (a double with error sign e) rounded to float in `mode` */
__host__ __device__ static inline float rocmig_directed_f32(double d, int e, int mode, bool zero_sum) {
  float f = (float)d;
  if ((double)f != d) e = rocmig_sign(d - (double)f);
  if (zero_sum && f == 0 && e == 0 && mode < 0) return -0.0f;
  if (e == 0 || (mode < 0 && e > 0) || (mode > 0 && e < 0)) return f;
  float n = mode == 0 ? ((f > 0 && e < 0) || (f < 0 && e > 0) ? nextafterf(f, 0.0f) : f)
                      : nextafterf(f, mode < 0 ? -HUGE_VALF : HUGE_VALF);
  return n == 0 ? copysignf(0.0f, f) : n;
}
#endif
"""


def _zero_sum(kind: str, stem: str) -> str:
    """The C condition under which an exact zero result takes IEEE 754's sign for rounding down: a sum or
    difference whose operands are not both +0 (x - x, x + -x, +0 + -0)."""
    if kind == "sum":
        return "(__builtin_signbit(a) || __builtin_signbit(b))" if "add" in stem else "(__builtin_signbit(a) || !__builtin_signbit(b))"
    if kind == "fma":
        return "(__builtin_signbit(p) || __builtin_signbit(c))"
    return "false"


def helper(stem: str, mode: str) -> str:
    """C for rocmig_<stem>_<mode> (after CORE), under its own guard."""
    ctype, params, body, kind = OPS[stem]
    args = ", ".join(f"{ctype} {p.strip()}" for p in params.split(","))
    finish = "rocmig_directed_f32" if ctype == "float" else "rocmig_directed"
    name = f"rocmig_{stem}_{mode}"
    guard = name.upper()
    return (f"#ifndef {guard}\n#define {guard}\n__host__ __device__ static inline {ctype} {name}({args}) {{\n"
            f"  {body}\n  return {finish}(r, e, {MODES[mode]}, {_zero_sum(kind, stem)});\n}}\n#endif\n")


def directed_rounding(text: str) -> str:
    """`text` with each call of a CUDA directed-rounding operation (CALL) renamed to rocmig_'s and CORE and
    the used helpers inserted after the includes above the first call (features.insert_after_includes);
    unchanged without one. Names the file defines itself (DEFINED: a HIP fallback of the project's) are
    left to that definition."""
    if "_r" not in text:
        return text
    blanked = cpp.blank(text)
    own = {m.groups() for m in DEFINED.finditer(blanked)}  # the project's own fallback keeps its calls
    calls = [m for m in CALL.finditer(blanked) if m.groups() not in own]
    if not calls:
        return text
    for m in reversed(calls):
        text = text[:m.start()] + f"rocmig_{m.group(1)}_{m.group(2)}" + text[m.end():]
    used = sorted({(m.group(1), m.group(2)) for m in calls})
    return insert_after_includes(text, CORE + "".join(helper(stem, mode) for stem, mode in used), HELPER_USE)
