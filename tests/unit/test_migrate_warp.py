"""Warp advice is right on both wavefront sizes: each kernel's CUDA original runs on emulated 32-lane
warps, its migrated HIP (the recipe's fixups) and its suggestions on emulated wave64 and wave32
wavefronts (tests/unit/warp_emulator.py), on random data; the results must agree, and every finding
the report closes must be one the migrated code made safe."""

import random
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "recipes" / "migrate"))

from migrate import advice, cpp, rules, warp
from migrate.archs import Arch

from tests.shared_cases import CASES_DIR
from tests.unit.warp_emulator import Machine, Trap

ARCHS = [Arch("gfx942", "CDNA3", 64, 65536), Arch("gfx1100", "RDNA3", 32, 65536)]
WARP_RULES = advice.WARP32_RULES | advice.MASK_RULES | {advice.MIXED_RULE}

REDUCE = """#include <cuda_runtime.h>
__global__ void reduce(const float* x, float* total) {
  float v = x[blockIdx.x * blockDim.x + threadIdx.x];
  for (int offset = 16; offset > 0; offset /= 2) v += __shfl_down_sync(0xffffffff, v, offset);
  if (threadIdx.x % 32 == 0) atomicAdd(total, v);
}
"""
# REDUCE after the suggestions the recipe used to give (offset = warpSize / 2, lane % warpSize).
REDUCE_OLD_ADVICE = REDUCE.replace("offset = 16", "offset = warpSize / 2").replace("% 32", "% warpSize")

BLOCK_SUM = """#define FULL_MASK 0xffffffff
__device__ float warp_reduce(float v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(FULL_MASK, v, o);
  return v;
}
__global__ void block_sum(const float* x, float* out) {
  __shared__ float partial[32];
  int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  float v = warp_reduce(x[blockIdx.x * blockDim.x + threadIdx.x]);
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < blockDim.x / 32 ? partial[lane] : 0.0f;
    v = warp_reduce(v);
    if (lane == 0) out[blockIdx.x] = v;
  }
}
"""

VOTES = """__global__ void votes(const int* x, int* out) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int p = x[i] > 4;
  int any = __any_sync(0xffffffff, p);
  int all = __all_sync(0xffffffff, x[i] >= 0);
  unsigned act = __activemask();
  unsigned b = __ballot_sync(act, p);
  out[i] = any + 2 * all + 4 * __popc(b) + 1000 * __popc(act);
}
"""

LEADER = """__global__ void leader(const int* x, int* out) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int v = x[i];
  unsigned m = __ballot_sync(0xffffffffu, v > 3);
  if (v > 3) {
    int first = __ffs(m) - 1;
    out[i] = __shfl_sync(m, v * 100 + (threadIdx.x & 31), first);
  } else {
    out[i] = -1;
  }
}
"""

SCAN = """__global__ void scan(const int* x, int* out) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int lane = threadIdx.x & 31;
  int v = x[i];
  for (int d = 1; d < 32; d *= 2) {
    int n = __shfl_up_sync(0xffffffff, v, d);
    if (lane >= d) v += n;
  }
  out[i] = v;
}
"""

SEGMENTS = """__global__ void segments(const int* x, int* out) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int v = x[i];
  for (int o = 4; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffff, v, o, 8);
  unsigned same = __match_any_sync(0xffffffff, x[i] % 3);
  out[i] = v * 1000 + __popc(same);
}
"""

LEGACY = """__global__ void legacy(const float* x, float* out) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  float v = x[i];
  for (int o = warpSize / 2; o > 0; o /= 2) v += __shfl_down(v, o);
  unsigned big = __ballot(x[i] > 5.0f);
  if (threadIdx.x % warpSize == 0) out[i / warpSize] = v + 100 * __popc(big) + 1000 * __any(x[i] > 8.0f);
}
"""

# __activemask() in a data-dependent branch: the active set is partial, so a truncated 64-bit HIP mask
# placed on the upper 32-lane group names the wrong lanes
ACTIVE = """__global__ void active(const int* x, int* out) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int v = x[i];
  if (v > 3) {
    unsigned act = __activemask();
    out[i] = __popc(act) * 100 + __popc(__ballot_sync(act, v > 6));
  } else {
    out[i] = -1;
  }
}
"""

# name -> (source, kernel, grid, block, arguments factory)
# The reduction of REDUCE as a user writes it: a WARP_SIZE macro, the lane in a variable, a tail guard
# that leaves the last block's upper lanes at zero, `lane % 32 == 0` picking each warp's leader.
TAIL_SUM = """#include <cuda_runtime.h>
#define WARP_SIZE 32
__global__ void tail_sum(const float* x, float* total, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  float v = i < n ? x[i] : 0.0f;
  int lane = threadIdx.x % WARP_SIZE;
  for (int offset = 16; offset > 0; offset >>= 1) {
    v += __shfl_down_sync(0xffffffff, v, offset);
  }
  if (lane % 32 == 0) {
    atomicAdd(total, v);
  }
}
"""

KERNELS = {
    "tail_sum": (TAIL_SUM, "tail_sum", 2, 128, lambda r, n: [ints(r, n, -9, 9), [0], n - 37]),
    "reduce": (REDUCE, "reduce", 2, 128, lambda r, n: [ints(r, n, 0, 9), [0]]),
    "reduce_old_advice": (REDUCE_OLD_ADVICE, "reduce", 2, 128, lambda r, n: [ints(r, n, 0, 9), [0]]),
    "block_sum": (BLOCK_SUM, "block_sum", 2, 256, lambda r, n: [ints(r, n, -5, 9), [0, 0]]),
    "votes": (VOTES, "votes", 1, 128, lambda r, n: [ints(r, n, -1, 9), [0] * n]),
    "leader": (LEADER, "leader", 1, 128, lambda r, n: [ints(r, n, 0, 9), [0] * n]),
    "scan": (SCAN, "scan", 1, 128, lambda r, n: [ints(r, n, -3, 9), [0] * n]),
    "segments": (SEGMENTS, "segments", 1, 128, lambda r, n: [ints(r, n, 0, 9), [0] * n]),
    "active": (ACTIVE, "active", 1, 128, lambda r, n: [ints(r, n, 0, 9), [0] * n]),
    "legacy": (LEGACY, "legacy", 1, 128, lambda r, n: [ints(r, n, 0, 9), [0] * 4]),
}


def ints(rng: random.Random, n: int, low: int, high: int) -> list[int]:
    values = [rng.randint(low, high) for _ in range(n)]
    assert len(set(values)) > 2  # random data, never all ones
    return values


def hipified(cuda: str) -> str:
    """What hipify-perl does to these kernels: the runtime header (warp intrinsics keep their names)."""
    return cuda.replace("#include <cuda_runtime.h>", '#include "hip/hip_runtime.h"')


def migrate(cuda: str) -> advice.Migrated:
    return advice.migrate_tree({"k.cu": (cuda, hipified(cuda))}, rules.load_rules(), ARCHS)


def run(source: str, mode: str, wave: int, name: str, seed: int = 0):
    """Launch kernel `name` of KERNELS, compiled from `source`, on fresh random arguments of `seed`."""
    _source, kernel, grid, block, make_args = KERNELS[name]
    return Machine(source, mode, wave).launch(kernel, grid, block, make_args(random.Random(seed), grid * block))


def with_suggestions(migrated: advice.Migrated, rel: str = "k.cu") -> str:
    """The migrated text with every open finding's suggestion put in place of its migrated line."""
    lines = migrated.final[rel].split("\n")
    for f in migrated.findings[rel]:
        if f.status == "open" and f.suggestion:
            index = migrated.states[rel].final_line(f.line)
            indent = lines[index][: len(lines[index]) - len(lines[index].lstrip())]
            lines[index] = indent + f.suggestion
    return "\n".join(lines)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_emulator_tells_the_old_advice_apart(seed):
    """The advice the recipe used to give for REDUCE is wrong on wave64 (HIP's __shfl_down returns the
    lane's own value past the width); the emulator must see it, or it proves nothing."""
    old_hip = REDUCE_OLD_ADVICE.replace("0xffffffff, v, offset)", "0xffffffffffffffffull, v, offset, 32)")
    cuda = run(REDUCE, "cuda", 32, "reduce", seed)
    assert run(old_hip, "hip", 32, "reduce", seed) == cuda
    assert run(old_hip, "hip", 64, "reduce", seed) != cuda


def test_emulator_traps_on_the_64bit_all_ones_mask_with_a_partly_active_wavefront():
    """__hip_check_mask asserts MASK == __ballot(true): the all-ones 64-bit mask in `if (warp == 0)`."""
    hip = BLOCK_SUM.replace("__shfl_xor_sync(FULL_MASK, v, o)", "__shfl_xor_sync(0xffffffffffffffffull, v, o, 32)")
    with pytest.raises(Trap, match="MASK == __ballot"):
        run(hip, "hip", 64, "block_sum")
    with pytest.raises(Trap, match="64-bit"):
        run(BLOCK_SUM, "hip", 64, "block_sum")  # CUDA's 32-bit mask does not compile for HIP


@pytest.mark.parametrize("name", sorted(KERNELS))
@pytest.mark.parametrize("seed", [1, 2])
def test_migrated_cuda_only_tree_computes_what_cuda_computes(name, seed):
    source = KERNELS[name][0]
    migrated = migrate(source)
    final = migrated.final["k.cu"]
    cuda = run(source, "cuda", 32, name, seed)
    for wave in (64, 32):
        assert run(final, "hip", wave, name, seed) == cuda, (wave, final)
    open_warp = [f for f in migrated.findings["k.cu"] if f.rule in WARP_RULES and f.status == "open"]
    assert open_warp == [], open_warp  # every warp finding was made safe by the fixups, and it is


@pytest.mark.parametrize("name", sorted(set(KERNELS) - {"legacy"}))
@pytest.mark.parametrize("seed", [1, 2])
def test_hip_aware_tree_suggestions_are_right_or_an_error_stays_open(name, seed):
    """In a tree that already has HIP code paths only the provably exact rewrites are applied; the
    suggestions of the open findings, applied, give CUDA's result on both wavefront sizes, or an
    error stays open (never a clean report with wrong code)."""
    source = "#include <hip/hip_runtime.h>\n" + KERNELS[name][0]
    migrated = migrate(source)
    text = with_suggestions(migrated)
    cuda = run(KERNELS[name][0], "cuda", 32, name, seed)
    results = []
    for wave in (64, 32):
        try:
            results.append(run(text, "hip", wave, name, seed) == cuda)
        except Trap:
            results.append(False)
    open_errors = [f for f in migrated.findings["k.cu"] if f.status == "open" and f.severity == "error"]
    assert all(results) or open_errors, text
    as_migrated = []  # the migrated code as the report leaves it: right on both sizes, or an error open
    for wave in (64, 32):
        try:
            as_migrated.append(run(migrated.final["k.cu"], "hip", wave, name, seed) == cuda)
        except Trap:
            as_migrated.append(False)
    assert all(as_migrated) or open_errors, migrated.final["k.cu"]


def test_old_advice_in_a_hip_aware_tree_is_an_open_error():
    migrated = migrate("#include <hip/hip_runtime.h>\n" + REDUCE_OLD_ADVICE)
    mixed = [f for f in migrated.findings["k.cu"] if f.rule == advice.MIXED_RULE]
    assert mixed and all(f.status == "open" and f.severity == "error" for f in mixed)
    assert "warpSize" in mixed[0].message
    lane = [f for f in migrated.findings["k.cu"] if f.rule == "warp-reduce-offset-16"]
    assert lane == []  # warpSize / 2 is not a 16 offset; the mix is what is wrong


def test_reduce_findings_closed_with_the_reason():
    migrated = migrate(REDUCE)
    by_rule = {f.rule: f for f in migrated.findings["k.cu"]}
    for rule in ("warp-reduce-offset-16", "warp-lane-arith-32", "warp-mask-32bit"):
        assert by_rule[rule].status == "fixed" and by_rule[rule].note, rule
        assert by_rule[rule].suggestion == ""
    assert "__shfl_down(v, offset, 32)" in migrated.final["k.cu"]


def test_one_suggestion_per_line_agrees_with_the_fixups():
    """warp-sync-intrinsic and warp-vote-32bit-result on one line get the same rewrite of the migrated
    line, and the error stays open until it is taken; the ballot whose mask is that 32-bit variable gets
    the type-dispatched form (exact for either width) and is closed."""
    source = "#include <hip/hip_runtime.h>\n" + VOTES
    migrated = migrate(source)
    line = source.split("\n").index("  unsigned act = __activemask();") + 1
    on_line = [f for f in migrated.findings["k.cu"] if f.line == line and f.suggestion]
    assert len(on_line) >= 2 and len({f.suggestion for f in on_line}) == 1
    assert on_line[0].suggestion == "unsigned act = ((unsigned)((__ballot(1)) >> (__lane_id() & 32)));"
    assert any(f.severity == "error" and f.status == "open" for f in on_line)
    assert "unsigned b = rocmig_ballot_sync(act, p);" in migrated.final["k.cu"]


@pytest.mark.parametrize("case", ["A02_shfl_xor_sync_mask.cu", "A03_warp32_ballot.cu"])
@pytest.mark.parametrize("seed", [1, 2])
def test_shared_warp_cases_migrate_exactly(case, seed):
    path = CASES_DIR / "cuda" / case
    if not path.is_file():
        pytest.skip(f"{path} is absent: the shared case set is not checked out next to this repository")
    source = path.read_text()
    migrated = migrate(source)
    final = migrated.final["k.cu"]
    rng = random.Random(seed)
    if case.startswith("A02"):
        kernel, grid, block = "row_sums", 4, 32  # the case launches 32-thread blocks: half a wave64
        args = [ints(rng, 4 * 100, -9, 9), [0] * 4, 100]
    else:
        kernel, grid, block = "warp_compact", 2, 128
        args = [[rng.randint(0, 1) for _ in range(256)], [0] * 256, [0]]
    cuda = Machine(source, "cuda").launch(kernel, grid, block, [list(a) if isinstance(a, list) else a for a in args])
    for wave in (64, 32):
        assert Machine(final, "hip", wave).launch(kernel, grid, block, args) == cuda, final
    assert not [f for f in migrated.findings["k.cu"] if f.rule in WARP_RULES and f.status == "open"]


def test_warp_rewrite_is_idempotent_and_keeps_64bit_hip_masks():
    model = warp.Model(__import__("migrate.fixups", fromlist=["x"]).full_mask_regex([]), legacy=True, any_mask=True)
    once = warp.rewrite(VOTES + LEGACY + SCAN + WRAPPERS, model)
    assert warp.rewrite(once, model) == once
    hip = "v = __shfl_xor_sync(0xffffffffffffffffull, v, 1);"
    assert warp.rewrite(hip, warp.Model(model.full_mask, legacy=False, any_mask=False)) == hip


def test_wrapper_definitions_are_not_calls():
    """torch_scatter 2.1.2 (csrc/cuda/utils.cuh) overloads __shfl_up_sync for at::Half: the definition
    stays as written, the call inside it gets the exact form."""
    from migrate import fixups
    text = ("__device__ __inline__ at::Half __shfl_up_sync(const unsigned mask, const at::Half var,\n"
            "                                              const unsigned int delta, const int width = 32) {\n"
            "  return __shfl_up_sync(mask, var.operator __half(), delta);\n}\n")
    out = warp.rewrite(text, warp.Model(fixups.full_mask_regex([]), legacy=True, any_mask=True))
    assert out.split("{")[0] == text.split("{")[0]
    assert "__shfl_up_sync(((unsigned long long)(unsigned)(mask) << (__lane_id() & 32)), var.operator __half(), delta, 32)" in out


def test_wavefront_macro_tested_for_is_fine_used_bare_is_an_error():
    source = ("#if defined(__AMDGCN_WAVEFRONT_SIZE)\n#define W __AMDGCN_WAVEFRONT_SIZE\n#endif\n"
              "#if __AMDGCN_WAVEFRONT_SIZE == 64\n#endif\n")
    hits = {(f.line, f.rule) for f in migrate(source).findings["k.cu"]}
    assert (1, "amdgcn-wavefront-macro") not in hits
    assert {(2, "amdgcn-wavefront-macro"), (4, "amdgcn-wavefront-macro")} <= hits


def test_hip_code_with_64bit_masks_is_left_alone():
    """A tree with HIP code paths keeps its 64-bit __activemask and masks: no rewrite, no suggestion."""
    source = ("#include <hip/hip_runtime.h>\n__device__ float f(float v) {\n"
              "  unsigned long long m = __activemask();\n  return __shfl_sync(m, v, 0);\n}\n")
    migrated = migrate(source)
    assert migrated.fixes["k.cu"] == []
    assert all(f.suggestion == "" for f in migrated.findings["k.cu"])


# A project's own wrappers of *_sync intrinsics taking CUDA's 32-bit mask as a parameter (the
# class of torch_scatter 2.1.2 / torch_sparse 0.6.18 csrc/cuda/utils.cuh), in a tree with HIP code
# paths, called with the all-lanes mask and with a ballot of some lanes.
WRAPPERS = """#include <hip/hip_runtime.h>
__device__ int bcast(unsigned mask, int v, int src) { return __shfl_sync(mask, v, src); }
__device__ int wsum(const unsigned int mask, int v) {
  for (int o = 16; o > 0; o /= 2) v += __shfl_xor_sync(mask, v, o);
  return v;
}
__device__ unsigned votes(uint32_t mask, int p) { return __ballot_sync(mask, p); }
__global__ void wrapped(const int* x, int* out) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int v = x[i];
  int s = wsum(0xffffffff, v);
  unsigned m = __ballot_sync(0xffffffff, v > 3);
  int r = -1;
  if (v > 3) {
    r = bcast(m, v * 100 + (threadIdx.x & 31), __ffs(m) - 1);
    r += 10000 * __popc(votes(m, v > 6));
  }
  out[i] = s * 1000000 + r;
}
"""
KERNELS["wrappers"] = (WRAPPERS, "wrapped", 2, 128, lambda r, n: [ints(r, n, 0, 9), [0] * n])


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_wrappers_with_a_32bit_mask_parameter_migrate_exactly(seed):
    """The mask parameter's 32-bit type proves it is CUDA's lane mask, so the call inside the wrapper
    takes the lane's 32-lane group form in a tree with HIP code paths too: CUDA's results on wave64
    and wave32, and no warp finding left open. Widening the parameter to 64 bits instead (what the
    static assertion seems to ask for) traps on wave64 (0xffffffff zero-extended names lanes 0-31 of
    a wavefront whose 64 lanes are active) and is only right on wave32."""
    migrated = migrate(WRAPPERS)
    final = migrated.final["k.cu"]
    cuda = run(WRAPPERS, "cuda", 32, "wrappers", seed)
    for wave in (64, 32):
        assert run(final, "hip", wave, "wrappers", seed) == cuda, (wave, final)
    assert "__shfl_sync(((unsigned long long)(unsigned)(mask) << (__lane_id() & 32)), v, src, 32)" in final
    open_warp = [f for f in migrated.findings["k.cu"] if f.rule in WARP_RULES and f.status == "open"]
    assert open_warp == [], open_warp
    with pytest.raises(Trap, match="64-bit"):
        run(hipified(WRAPPERS), "hip", 64, "wrappers", seed)
    widened = re.sub(r"\((?:const )?(?:unsigned int|unsigned|uint32_t) mask", "(unsigned long long mask",
                     final.replace(warp.group("mask"), "mask"))
    assert run(widened, "hip", 32, "wrappers", seed) == cuda
    with pytest.raises(Trap, match="MASK == __ballot"):
        run(widened, "hip", 64, "wrappers", seed)


def test_a_mask_parameter_the_wrapper_assigns_or_a_64bit_one_is_left_alone():
    model = warp.Model(__import__("migrate.fixups", fromlist=["x"]).full_mask_regex([]), legacy=False, any_mask=False)
    text = ("__device__ float g(unsigned m, float v) { m = __activemask(); return __shfl_xor_sync(m, v, 1); }\n"
            "__device__ float h(unsigned long long m, float v) { return __shfl_xor_sync(m, v, 1); }\n"
            "#define S(mask, v) __shfl_sync(mask, v, 0)\n")
    assert warp.rewrite(text, model) == text
    nested = "__device__ float f(unsigned m, float v) {\n  if (v > 0) { for (;;) { v = __shfl_sync(m, v, 0); } }\n  return v;\n}\n"
    assert "__shfl_sync(((unsigned long long)(unsigned)(m) << (__lane_id() & 32)), v, 0, 32)" in warp.rewrite(nested, model)


# A PyTorch extension's block sum written for both platforms (exllamav2 0.0.3 rms_norm.cu): on AMD the
# project's own macro drops the mask, and the reduction runs over warpSize lanes, 64 on wave64.
OWN_MACRO = """#include <torch/extension.h>
#include <cuda_runtime.h>
#if defined(USE_ROCM)
#define __shfl_xor_sync(mask, var, laneMask) __shfl_xor(var, laneMask)
#endif
__global__ void row_sum(const float* x, float* out) {
  __shared__ float partial[32];
  float v = x[blockIdx.x * blockDim.x + threadIdx.x];
  for (int offset = warpSize / 2; offset > 0; offset /= 2) v += __shfl_xor_sync(0xffffffff, v, offset);
  int warp = threadIdx.x / warpSize, lane = threadIdx.x % warpSize;
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  if (threadIdx.x == 0) {
    float s = 0.0f;
    for (int w = 0; w < blockDim.x / warpSize; w++) s += partial[w];
    out[blockIdx.x] = s;
  }
}
"""


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_projects_own_warp_macro_is_kept_and_read_expanded(seed):
    """Rewriting the calls to CUDA's 32-lane form (`__shfl_xor(v, offset, 32)`) would bypass the macro
    and, with offsets from warpSize / 2 = 32, add each lane's value twice on wave64. The calls and the
    macro stay; the compiled code (the macro expanded, as hipcc does) gives CUDA's block sums on both
    wavefront sizes; no warp finding stays open on the macro's definition or its calls."""
    migrated = advice.migrate_tree({"k.cu": (OWN_MACRO, hipified(OWN_MACRO))}, rules.load_rules(), ARCHS,
                                   pytorch_files=frozenset({"k.cu"}))
    final = migrated.final["k.cu"]
    assert "__shfl_xor_sync(0xffffffff, v, offset)" in final and "__shfl_xor(v, offset, 32)" not in final
    kernel = final[final.index("__global__"):]  # the emulator's C subset: without the c10::Half overloads
    compiled = warp.expand_macros(kernel, warp.own_macros(cpp.blank(final), frozenset()))
    assert "v += __shfl_xor(v, offset);" in compiled
    args = lambda: [ints(random.Random(seed), 256, -5, 9), [0, 0]]  # noqa: E731
    cuda = Machine(OWN_MACRO, "cuda", 32).launch("row_sum", 2, 128, args())
    for wave in (64, 32):
        assert Machine(compiled, "hip", wave).launch("row_sum", 2, 128, args()) == cuda
    rewritten = kernel.replace("__shfl_xor_sync(0xffffffff, v, offset)", "__shfl_xor(v, offset, 32)")
    assert Machine(rewritten, "hip", 64).launch("row_sum", 2, 128, args()) != cuda  # what the rewrite gave
    warp_open = [f for f in migrated.findings["k.cu"] if f.status == "open" and f.rule.startswith("warp")
                 and (f.line in (4, 9) or f.severity == "error")]
    assert warp_open == [], warp_open
    assert {(f.line, f.rule) for f in migrated.findings["k.cu"] if f.status == "fixed"} >= {(4, "warp-sync-intrinsic"),
                                                                                           (9, "warp-mask-32bit")}
    # without USE_ROCM (not a PyTorch extension) the macro is not compiled and the calls are rewritten
    plain = advice.migrate_tree({"k.cu": (OWN_MACRO, hipified(OWN_MACRO))}, rules.load_rules(), ARCHS).final["k.cu"]
    assert "__shfl_xor_sync(0xffffffff, v, offset)" not in plain


LITERAL_MASKS = """#include <hip/hip_runtime.h>
__global__ void masks(const int* x, int* out) {
  int v = x[blockIdx.x * blockDim.x + threadIdx.x];
  for (int o = 16; o > 0; o /= 2) v += __shfl_xor_sync(~0u, v, o);
  int w = __shfl_sync((unsigned)-1, v, 0);
  out[blockIdx.x * blockDim.x + threadIdx.x] = v * 1000 + w;
}
"""


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_literal_all_lane_masks_take_the_exact_form_in_a_hip_aware_tree(seed):
    """fast-transformers 0.4.0 writes CUDA's all-lanes mask as `uint32_t(-1)`; `~0u` and `(unsigned)-1`
    are the same 32-bit value. In a tree with HIP code paths they take the exact 32-lane-group form, as
    0xffffffff does, and give CUDA's results on wave64 and wave32."""
    migrated = migrate(LITERAL_MASKS)
    final = migrated.final["k.cu"]
    assert "__shfl_xor(v, o, 32)" in final and "__shfl(v, 0, 32)" in final, final
    args = lambda: [ints(random.Random(seed), 128, -5, 9), [0] * 128]  # noqa: E731
    cuda = Machine(LITERAL_MASKS, "cuda", 32).launch("masks", 1, 128, args())
    for wave in (64, 32):
        assert Machine(final, "hip", wave).launch("masks", 1, 128, args()) == cuda
    cast = migrate(LITERAL_MASKS.replace("~0u", "uint32_t(-1)")).final["k.cu"]
    assert "__shfl_xor(v, o, 32)" in cast
    # int -1 and ~0: CUDA's unsigned mask parameter makes them 0xffffffff, and HIP's *_sync templates
    # refuse an int mask (static_assert, HIP 7.2), so they take the same exact form (gptqmodel 7.7.0's
    # gemv_cuda.cu `__shfl_xor_sync(~0, ...)`), with CUDA's results on both wavefront sizes
    for spelling in ("-1", "~0"):
        source = LITERAL_MASKS.replace("~0u", spelling).replace("(unsigned)-1", spelling)
        final = migrate(source).final["k.cu"]
        assert "__shfl_xor(v, o, 32)" in final and "__shfl(v, 0, 32)" in final, final
        for wave in (64, 32):
            assert Machine(final, "hip", wave).launch("masks", 1, 128, args()) == cuda, (spelling, wave)


@pytest.mark.parametrize("where", ["other-file", "not-hipcc", "unknown"])
def test_a_warp_macro_hipcc_may_not_see_leaves_the_calls_to_the_rewrite(where):
    """Only a definition hipcc surely compiles, in a file the unit reaches, is the project's HIP form:
    a CPU emulator's macro in a header no kernel includes, one under `#ifndef __CUDACC__`, or one under
    a test of unknown value leaves the calls to the exact rewrite."""
    macro = "#define __shfl_down_sync(mask, var, delta) (shflDownSync((mask), (var), (delta)))\n"
    kernel = ("#include <cuda_runtime.h>\n__global__ void k(float* x) {\n  float v = x[threadIdx.x];\n"
              "  for (int o = 16; o > 0; o /= 2) v += __shfl_down_sync(0xffffffff, v, o);\n  x[threadIdx.x] = v;\n}\n")
    guard = {"other-file": ("", ""), "not-hipcc": ("#ifndef __CUDACC__\n", "#endif\n"),
             "unknown": ("#if defined(CUDART_VERSION) && CUDART_VERSION < 9000\n", "#endif\n")}[where]
    texts = {"k.cu": (kernel, hipified(kernel))}
    if where == "other-file":
        texts["tests/emulate.hpp"] = (macro, macro)
    else:
        cuda = guard[0] + macro + guard[1] + kernel
        hip = cuda.replace("__CUDACC__", "__HIPCC__")
        texts["k.cu"] = (cuda, hipified(hip))
    final = advice.migrate_tree(texts, rules.load_rules(), ARCHS).final["k.cu"]
    assert "v += __shfl_down(v, o, 32);" in final, final


def test_a_macro_ends_at_its_last_continued_line_and_nested_calls_are_still_rewritten():
    """A trailing backslash before an empty line ends the definition there; a call inside an own
    macro's arguments is rewritten as any other; a macro without parameters is expanded."""
    text = ("#define __shfl_xor_sync(mask, var, laneMask) __shfl_xor(var, laneMask) \\\n\n"
            "#define __activemask() __ballot(1)\n"
            "int f(int v) { return __shfl_xor_sync(0xffffffff, v, 1) + __activemask(); }\n")
    macros = warp.own_macros(cpp.blank(text), frozenset())
    assert macros == {"__shfl_xor_sync": (("mask", "var", "laneMask"), "__shfl_xor(var, laneMask)"),
                      "__activemask": ((), "__ballot(1)")}
    expanded = warp.expand_macros(text, macros)
    assert expanded.split("\n") == ["", "", "", "int f(int v) { return __shfl_xor(v, 1) + __ballot(1); }", ""]
    nested = "x = __shfl_xor_sync(0xffffffff, __shfl_sync(0xffffffff, v, s), 1);"
    model = warp.Model(re.compile(r"0xffffffff"), legacy=False, any_mask=False, own_macros=frozenset({"__shfl_xor_sync"}))
    assert warp.rewrite(nested, model) == "x = __shfl_xor_sync(0xffffffff, __shfl(v, s, 32), 1);"


# One program of a benchmark collection (HeCBench's jaccard-cuda) names CUDA's all-lanes mask `mask`
# by a #define; another program of the same tree uses `mask` for other values, and a third has HIP code
# paths, so the tree-wide constants cannot say what `mask` is.
COLLECTION_SCAN = """#define mask 0xFFFFFFFF
__global__ void scan(const int* x, int* out) {
  int v = x[blockIdx.x * blockDim.x + threadIdx.x];
  int last = __shfl_sync(mask, v, blockDim.x - 1, blockDim.x);
  for (int j = 1; j < blockDim.x; j *= 2) {
    int n = __shfl_up_sync(mask, v, j, blockDim.x);
    if (threadIdx.x >= j) v += n;
  }
  out[blockIdx.x * blockDim.x + threadIdx.x] = v * 1000 + last;
}
"""


@pytest.mark.parametrize("seed", [1, 2])
def test_a_files_own_full_mask_define_counts_in_a_collection_tree(seed):
    """The file's own `#define mask 0xFFFFFFFF` makes its *_sync calls take the exact form although
    the tree defines `mask` otherwise elsewhere; the results are CUDA's on wave64 and wave32."""
    tree = {"jaccard/main.cu": COLLECTION_SCAN,
            "other/main.cu": "unsigned int mask = 3;\n__global__ void k(int* p) { p[0] = mask; }\n",
            "hip/main.cu": "#ifdef __HIP_PLATFORM_AMD__\n#define X 1\n#endif\n"}
    migrated = advice.migrate_tree({rel: (text, hipified(text)) for rel, text in tree.items()}, rules.load_rules(), ARCHS)
    final = migrated.final["jaccard/main.cu"]
    assert "__shfl(v, blockDim.x - 1, blockDim.x)" in final and "__shfl_up(v, j, blockDim.x)" in final, final
    assert not [f for f in migrated.findings["jaccard/main.cu"] if f.status == "open" and f.severity == "error"]
    args = lambda: [ints(random.Random(seed), 32, -5, 9), [0] * 32]  # noqa: E731
    cuda = Machine(COLLECTION_SCAN, "cuda", 32).launch("scan", 1, 32, args())
    for wave in (64, 32):
        assert Machine(final, "hip", wave).launch("scan", 1, 32, args()) == cuda, wave


@pytest.mark.parametrize("seed", [1, 2])
def test_hip_code_paths_count_only_for_the_files_compiled_with_them(seed):
    """A collection of programs: one program has a HIP path (a header with `__HIP_PLATFORM_AMD__`), so
    its pre-9 forms and warpSize may mean the wavefront and stay; LEGACY, a CUDA-only program beside it,
    gets CUDA's 32-lane forms and CUDA's results on wave64 and wave32."""
    hip_program = '#include "bench.h"\n' + LEGACY.replace("legacy", "other")
    tree = {"legacy/main.cu": LEGACY, "mr/main.cu": hip_program,
            "mr/bench.h": "#ifdef __HIP_PLATFORM_AMD__\n#define BENCH_HIP 1\n#endif\n"}
    migrated = advice.migrate_tree({rel: (text, hipified(text)) for rel, text in tree.items()}, rules.load_rules(), ARCHS)
    assert "__shfl_down(v, o)" in migrated.final["mr/main.cu"] and "warpSize" in migrated.final["mr/main.cu"]
    final = migrated.final["legacy/main.cu"]
    assert "__shfl_down(v, o, 32)" in final and "warpSize" not in final, final
    cuda = run(LEGACY, "cuda", 32, "legacy", seed)
    for wave in (64, 32):
        assert Machine(final, "hip", wave).launch("legacy", 1, 128, KERNELS["legacy"][4](random.Random(seed), 128)) == cuda


def test_a_constant_mask_of_fewer_lanes_is_kept_with_a_note_on_hips_check():
    """catboost 1.2.10's kernel_helpers.cuh: `__shfl_down_sync(0xFFFFFF, v, s)` in a reduction all 32 lanes run.
    The rewrite keeps the 24-lane mask on the lane's 32-lane group; the finding says that HIP's debug check
    traps when other lanes make the call. A full mask gets no such note."""
    cuda = ("#include <cuda_runtime.h>\n__device__ float r(float v) {\n"
            "  for (int s = 16; s > 0; s >>= 1) v += __shfl_down_sync(0xFFFFFF, v, s);\n"
            "  for (int s = 16; s > 0; s >>= 1) v += __shfl_down_sync(0xffffffff, v, s);\n  return v;\n}\n")
    migrated = advice.migrate_tree({"k.cu": (cuda, cuda.replace("cuda_runtime.h", "hip/hip_runtime.h"))},
                                   rules.load_rules(), [Arch("gfx942", "CDNA3", 64, 65536)])
    notes = {(f.line, f.rule): f.note for f in migrated.findings["k.cu"] if f.rule in advice.MASK_RULES}
    assert "the mask 0xFFFFFF names 24 of 32 lanes" in notes[(3, "warp-mask-32bit")]
    assert "traps otherwise" in notes[(3, "warp-sync-intrinsic")]
    assert notes[(4, "warp-mask-32bit")] == "rewritten by the fixup warp-sync-full-mask"
    assert "(unsigned)(0xFFFFFF) << (__lane_id() & 32)" in migrated.final["k.cu"]


WS_KERNEL = """#include <cuda_runtime.h>
__global__ void row_sum(const float* x, float* total, int ws) {
  float s = x[blockIdx.x * blockDim.x + threadIdx.x];
  for (int o = ws / 2; o > 0; o /= 2) s += __shfl_down_sync(0xffffffff, s, o);
  if (threadIdx.x % ws == 0) atomicAdd(total, s);
}
"""
WS_HOSTS = {
    "attribute": ("int launch(const float* x, float* total) {\n  int ws = 0;\n"
                  "  cudaDeviceGetAttribute(&ws, cudaDevAttrWarpSize, 0);\n"
                  "  row_sum<<<2, 128>>>(x, total, ws);\n  return ws;\n}\n"),
    "property": ("int launch(const float* x, float* total) {\n  cudaDeviceProp prop;\n"
                 "  cudaGetDeviceProperties(&prop, 0);\n  int ws = prop.warpSize;\n"
                 "  row_sum<<<2, 128>>>(x, total, ws);\n  return ws;\n}\n"),
}
HIP_NAMES = (("cudaDeviceGetAttribute", "hipDeviceGetAttribute"), ("cudaDevAttrWarpSize", "hipDeviceAttributeWarpSize"),
             ("cudaDeviceProp", "hipDeviceProp_t"), ("cudaGetDeviceProperties", "hipGetDeviceProperties"))


def host_warp_size(host: str, wave: int) -> int:
    """The `ws` that migrated host code passes on a device of `wave` lanes: HIP's warp-size property and
    attribute give the wavefront size (hipDeviceProp_t::warpSize, hipDeviceAttributeWarpSize); a
    constant assigned to it, or stored after the query, is what it passes."""
    assigned = re.search(r"\bint ws = (\d+);\n  row_sum", host)
    stored = re.search(r"hipDeviceAttributeWarpSize, 0\); if \(rocmig_status == hipSuccess\) \*\(&ws\) = (\d+);", host)
    found = assigned or stored
    return int(found.group(1)) if found else wave


@pytest.mark.parametrize("host", sorted(WS_HOSTS))
@pytest.mark.parametrize("seed", [1, 2])
def test_a_warp_size_the_host_queries_is_cudas_in_the_migrated_program(host, seed):
    """A CUDA program that reads the warp size on the host and passes it to its kernel (shuffle offsets
    from ws / 2, lanes % ws) computes CUDA's result on wave64 and wave32 after migration: the host reads
    32, as the kernel's width-32 shuffles expect. With HIP's wavefront size (64 on CDNA) it would not."""
    cuda = WS_KERNEL + "// host\n" + WS_HOSTS[host]
    hip = cuda.replace("#include <cuda_runtime.h>", '#include "hip/hip_runtime.h"')
    for old, new in HIP_NAMES:
        hip = hip.replace(old, new)
    migrated = advice.migrate_tree({"k.cu": (cuda, hip)}, rules.load_rules(), ARCHS)
    kernel, host_text = migrated.final["k.cu"].split("// host\n")
    assert "warp-size-host-32" in {f.id for f in migrated.fixes["k.cu"]}

    def launch(source: str, mode: str, wave: int, ws: int) -> list:
        rng = random.Random(seed)
        return Machine(source, mode, wave).launch("row_sum", 2, 128, [ints(rng, 256, -9, 9), [0], ws])

    expected = launch(WS_KERNEL, "cuda", 32, 32)
    for wave in (64, 32):
        assert launch(kernel, "hip", wave, host_warp_size(host_text, wave)) == expected, (wave, host_text)
    assert launch(kernel, "hip", 64, 64) != expected  # HIP's own warp size with the width-32 shuffles: wrong
