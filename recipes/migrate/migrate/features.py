"""Exact rewrites of CUDA features that hipify-perl 7.2 leaves untranslated, checked against HIP
7.2's headers (/usr/include/hip in the dev image). Each function takes and returns one file's text.

  simd_video     __vmaxs4, __vabsdiffu4, __vcmpeq2, ... (CUDA's SIMD video intrinsics, absent from HIP)
                 -> rocmig_vmaxs4 ...: byte-/halfword-wise C implementations of the semantics in the CUDA
                 Math API reference ("SIMD Intrinsics"), inserted once per file under an include guard
  ffs_signature  __ffs(x) -> __ffs((int)(x)), __ffsll(x) -> __ffsll((long long)(x)): CUDA declares one
                 signature each, HIP two (int / unsigned int, long long / unsigned long long in
                 amd_device_functions.h), so a size_t, long or uint64_t argument is ambiguous on HIP
  atomic_system  atomicInc_system / atomicDec_system (absent from HIP) -> HIP's own atomicInc/atomicDec
                 body (amd_hip_atomic.h: __builtin_amdgcn_atomic_inc32, relaxed) at system scope, with
                 the fine-grained-memory attribute HIP's *_system atomics carry
  cub_headers    <cub/block/block_scan.cuh>, <cub/util_type.cuh>, ... -> <hipcub/block/block_scan.hpp>, ...:
                 hipify-perl maps only <cub/cub.cuh> (to <hipcub/hipcub.hpp>) and the cub:: names; hipCUB
                 keeps CUB's header layout with .hpp (HIPCUB_HEADERS)
  libcudacxx_thrust  <cuda/std/utility>, <cuda/std/tuple>, <cuda/std/functional>, <cuda/std/iterator> and
                 cuda::std::pair / make_pair / tuple / make_tuple / get / tie / tuple_size / tuple_element /
                 plus / minus / multiplies / greater / less / equal_to / ... / distance / iterator_traits ->
                 rocThrust's headers and thrust:: names: the same types and function objects, host and
                 device (libcu++ has no ROCm package; XGBoost 3.4 uses these throughout)
  ptx_trap       asm("trap;") -> __builtin_trap(): PTX's trap aborts the kernel and reports an error
                 to the host (CUDA's __trap() is this asm); clang's __builtin_trap does the same on AMDGPU
                 (s_trap), and HIP's own abort() in device code is it
  event_wait_flags  cudaEventWaitDefault / cudaEventWaitExternal -> HIP's flags of the same value
  nccl_rccl      <nccl.h> -> <rccl/rccl.h>: RCCL implements NCCL's API under NCCL's own names
                 (ncclComm_t, ncclAllReduce, ...; /usr/include/rccl/rccl.h of the dev image), which
                 hipify-perl leaves as they are
  trap           __trap() (CUDA: end the kernel with an error) -> __builtin_trap(), the body of HIP's
                 device abort() (hip/amd_detail/hip_assert.h); HIP 7.2 declares no __trap
  gemm_tensor_op CUBLAS_GEMM_DEFAULT_TENSOR_OP / CUBLAS_GEMM_DFALT_TENSOR_OP (deprecated cuBLAS algos:
                 the default heuristic, also allowed to use reduced-precision tensor-op kernels; hipify-perl
                 7.2 leaves them) -> HIPBLAS_GEMM_DEFAULT, hipBLAS's only algo (hipblas.h); the result is
                 at least as precise. ggml's own vendors/hip.h maps it the same way
  builtin_types  <builtin_types.h> -> <hip/hip_runtime.h> (CUDA's header only gathers the runtime's
                 types; HIP's runtime header declares the same ones)
  nvtx           <nvtx3/nvToolsExt.h> / <nvToolsExt.h> -> roctx when its header is present
                 (rocprofiler-sdk-roctx or roctracer), else the NVTX range and mark calls become no-ops
  cg_reduce      <cooperative_groups/reduce.h>, cg::reduce and its operators (absent from HIP 7.2)
                 -> rocmig_cg::reduce: a shuffle tree over the group's ranks with shfl_down and a
                 broadcast from rank 0 (HIP's thread_block_tile and coalesced_group both have them),
                 right for any group size; cg::labeled_partition(tile or coalesced group, label) ->
                 rocmig_cg::labeled_partition: the parent's lanes with the same label (__match_any,
                 restricted to the lane's tile), ranked in lane order, with size / thread_rank / shfl /
                 shfl_down / shfl_up / sync
  runtime_guard  `#ifdef __CUDA_RUNTIME_H__` (a helper header's test that cuda_runtime.h came first)
                 -> HIP_INCLUDE_HIP_HIP_RUNTIME_H, the include guard of hip/hip_runtime.h, to which
                 the translators rename that include; the other CUDA headers' guards likewise
                 (driver_types.h, cuBLAS, cuRAND, cuFFT, cuSPARSE, cuSOLVER, fp16, bf16, ...: HEADER_GUARDS)
  runtime_include_once  the second #include of hip/hip_runtime.h that hipify-perl leaves (it adds one
                 at the top and also renames the file's own cuda_runtime.h include): the later one, at
                 file level, is dropped; the header's include guard made it a no-op
  half_shuffles  in a file compiled against PyTorch's headers that shuffles: __shfl / _up / _down / _xor
                 (and their _sync forms) overloads for c10::Half that shuffle its bits through HIP's
                 __half overloads (amd_hip_fp16.h), inserted once after the includes. c10::Half converts
                 to both __half and float (torch/headeronly/util/Half.h, for __HIPCC__), so a call with
                 at::Half is ambiguous among HIP's int/float/double/__half/... overloads (ROCm/ROCm#2783);
                 the width and mask are passed on as given. Names the tree already overloads for Half
                 are left out
  own_hip_branch in a #if / #elif chain of the CUDA text that tests a HIP compiler macro (__HIP__,
                 __HIPCC__, __HIP_PLATFORM_AMD__, ...) in a later branch, the earlier branches' tests of
                 CUDA's compiler (__CUDACC__, CUDA_VERSION, __CUDA_ARCH__, ...) are put back as written:
                 hipcc defines none of those, so the chain takes the file's own HIP branch, as it does
                 when hipcc compiles the untranslated file. The translators rename __CUDACC__ to __HIPCC__
                 (and torch.utils.hipify CUDA_VERSION to TORCH_HIP_VERSION), which makes the CUDA branch
                 claim hipcc too (glm's simd/platform.h then stops at `#error "GLM requires CUDA 7.0 or
                 higher"`; glm's HIP branch, g-truc/glm#1082, comes after its CUDA one)
  func_pointer_cast  hipFuncGetAttributes / hipFuncSetAttribute / hipFuncSetCacheConfig /
                 hipFuncSetSharedMemConfig called with a kernel: its argument -> reinterpret_cast<const
                 void*>(kernel). CUDA's cuda_runtime.h declares a template overload of each taking `T*
                 entry` that calls the C function with `(const void*)entry`; HIP 7.2 declares only the
                 `const void*` form (hip_runtime_api.h), so a kernel argument does not convert
  wmma           <mma.h>, nvcuda::wmma -> <rocwmma/rocwmma.hpp>, rocwmma (same names: fragment,
                 matrix_a/b, accumulator, row/col_major, mem_row/col_major, load/store_matrix_sync,
                 fill_fragment, mma_sync); the tile-per-wavefront question stays a finding
"""

from __future__ import annotations

import re
from collections.abc import Callable

from . import cpp, includes, pch, warp

INCLUDE_LINE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*[<"][^>"\n]+[>"][^\n]*$', re.MULTILINE)

# SIMD video intrinsics: name stem -> (lane expression over x, y, or "sad"), signed lanes?
SIMD_OPS = {
    "add": ("x + y", False), "sub": ("x - y", False),
    "addss": ("CLAMP(x + y)", True), "subss": ("CLAMP(x - y)", True),
    "addus": ("CLAMP(x + y)", False), "subus": ("CLAMP(x - y)", False),
    "absdiffs": ("(x > y ? x - y : y - x)", True), "absdiffu": ("(x > y ? x - y : y - x)", False),
    "absss": ("CLAMP(x < 0 ? -x : x)", True),
    "maxs": ("(x > y ? x : y)", True), "maxu": ("(x > y ? x : y)", False),
    "mins": ("(x < y ? x : y)", True), "minu": ("(x < y ? x : y)", False),
    "haddu": ("((x + y) >> 1)", False), "avgu": ("((x + y + 1) >> 1)", False),
    "neg": ("-x", True), "negss": ("CLAMP(-x)", True),
    "sads": ("sad", True), "sadu": ("sad", False),
}
for _cmp, _op in (("eq", "=="), ("ne", "!="), ("ges", ">="), ("geu", ">="), ("gts", ">"), ("gtu", ">"),
                  ("les", "<="), ("leu", "<="), ("lts", "<"), ("ltu", "<")):
    _signed = _cmp.endswith("s")
    SIMD_OPS[f"cmp{_cmp}"] = (f"(x {_op} y ? LANEMAX : 0)", _signed)
    SIMD_OPS[f"set{_cmp}"] = (f"(x {_op} y ? 1 : 0)", _signed)
UNARY = frozenset({"absss", "neg", "negss"})
SIMD_CALL = re.compile(r"(?<![\w.:])__v(" + "|".join(sorted(SIMD_OPS, key=len, reverse=True)) + r")([24])\s*\(")


SIMD_USE = re.compile(r"\brocmig_v\w+\s*\(")


def _simd_helper(stem: str, lanes: int) -> str:
    """C for rocmig_v<stem><lanes>: split into `lanes` lanes of 32 / lanes bits, apply, pack."""
    expr, signed = SIMD_OPS[stem]
    bits = 32 // lanes
    mask = (1 << bits) - 1
    lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, mask)
    ctype = ("signed char" if bits == 8 else "short") if signed else ""
    take = (lambda v: f"(int)({ctype})(({v} >> i) & {mask}u)") if signed else (lambda v: f"(int)(({v} >> i) & {mask}u)")
    name = f"rocmig_v{stem}{lanes}"
    guard = f"ROCMIG_V{stem.upper()}{lanes}"
    args = "unsigned int a" if stem in UNARY else "unsigned int a, unsigned int b"
    y = "0" if stem in UNARY else take("b")
    head = f"#ifndef {guard}\n#define {guard}\n__device__ static inline unsigned int {name}({args}) {{\n"
    if expr == "sad":
        body = (f"  unsigned int r = 0u;\n  for (int i = 0; i < 32; i += {bits}) {{\n"
                f"    int x = {take('a')}, y = {y};\n    r += (unsigned int)(x > y ? x - y : y - x);\n  }}\n  return r;\n")
    else:
        lane = expr.replace("LANEMAX", str(mask))
        lane = re.sub(r"CLAMP\((.*)\)$", lambda m: f"rocmig_clamp({m.group(1)}, {lo}, {hi})", lane)
        body = (f"  unsigned int r = 0u;\n  for (int i = 0; i < 32; i += {bits}) {{\n"
                f"    int x = {take('a')}, y = {y};\n    (void)y;\n"
                f"    r |= ((unsigned int)({lane}) & {mask}u) << i;\n  }}\n  return r;\n")
    return head + body + "}\n#endif\n"


CLAMP_HELPER = ("#ifndef ROCMIG_CLAMP\n#define ROCMIG_CLAMP\n__device__ static inline int rocmig_clamp(int v, int lo, int hi) "
                "{ return v < lo ? lo : v > hi ? hi : v; }\n#endif\n")




def _line_end(text: str, at: int) -> int:
    """The offset just past the line of `text` that holds offset `at` (its newline included)."""
    newline = text.find("\n", at)
    return len(text) if newline < 0 else newline + 1


def insert_after_includes(text: str, block: str, first_use: re.Pattern[str] | None = None) -> str:
    """`text` with `block` placed after its last #include line (at the top when it has none); with
    `first_use` (the names the block defines), after the last #include above their first use, since a
    file can include more at its end (CUTLASS's arch/memory.h includes memory_sm75.h and memory_sm80.h
    after its code). When that include sits in an #if block, `block` goes after the block's #endif, so
    that every branch that follows sees it (cupy 14.2.0's cupy_cub.cu ends its includes inside
    `#ifndef CUPY_USE_HIP ... #else`), or before its #if where the first use lies inside the block; a
    file's include guard (cpp.include_guard) is not such a block."""
    blanked = cpp.blank(text)
    use = first_use.search(blanked) if first_use else None
    limit = use.start() if use else len(text)
    includes = [m for m in INCLUDE_LINE.finditer(text) if m.start() < limit]
    if not includes:
        return block + text
    base = 1 if cpp.include_guard(blanked) else 0
    last = includes[-1]
    end, depth, opened = _line_end(text, last.end()), 0, []
    for m in cpp.NESTING.finditer(blanked):
        if m.start() > last.start() and depth <= base:
            break
        enclosing = opened[base] if m.start() > last.start() and len(opened) > base else None
        depth += -1 if m.group(1) == "endif" else 1
        if m.group(1) == "endif":
            opened = opened[:-1]
        else:
            opened.append(m.start())
        if m.start() > last.start() and depth <= base:
            end = _line_end(text, m.start())
            if end > limit and enclosing is not None:
                end = text.rfind("\n", 0, enclosing) + 1
            break
    return text[:end] + ("" if text[:end].endswith("\n") else "\n") + block + text[end:]


def _defines_function(blanked: str, call: re.Match[str]) -> bool:
    """Whether the `name(` that `call` matched in blanked text starts a function definition: a return type
    or specifier before it, a body after its parameter list."""
    close = cpp.closing_paren(blanked, call.end())
    return close is not None and re.match(r"\s*\{", blanked[close:]) is not None and re.search(
        r"\b(?:u?int\w*|unsigned|int|auto|__forceinline__|inline)\s*$", blanked[max(0, call.start() - 80):call.start()]) is not None


def simd_video(text: str) -> str:
    """__v<op><2|4>(...) -> rocmig_v<op><2|4>(...) with the used helpers inserted (see module doc)."""
    if "__v" not in text:
        return text
    blanked = cpp.blank(text)
    # the file's own definitions for its ROCm build stay its own (aphrodite-engine 0.10.0's gguf ggml-common.h
    # defines __vcmpeq4 and __vsub4 under USE_ROCM): neither they nor their calls are renamed
    own = {(m.group(1), m.group(2)) for m in SIMD_CALL.finditer(blanked) if _defines_function(blanked, m)}
    calls = [m for m in SIMD_CALL.finditer(blanked) if (m.group(1), m.group(2)) not in own]
    used = sorted({(m.group(1), int(m.group(2))) for m in calls})
    if not used:
        return text
    for m in reversed(calls):
        text = text[:m.start()] + "rocmig_v" + text[m.start() + 3:]
    helpers = "".join(_simd_helper(stem, lanes) for stem, lanes in used)
    if "rocmig_clamp(" in helpers:
        helpers = CLAMP_HELPER + helpers
    return insert_after_includes(text, "// CUDA SIMD video intrinsics (absent from HIP), written out lane by lane\n" + helpers,
                                 SIMD_USE)


def _cast_first_arg(text: str, name: str, cast: str) -> str:
    if name not in text:
        return text
    blanked = cpp.blank(text)
    out, pos = [], 0
    for m in re.finditer(rf"(?<![\w.:]){name}\s*\(", blanked):
        k = cpp.closing_paren(blanked, m.end())
        if k is None:
            continue
        arg = text[m.end():k - 1]
        if arg.replace(" ", "").startswith(cast.replace(" ", "")) or m.start() < pos:
            continue
        out.append(text[pos:m.end()] + f"{cast}({arg.strip()})")
        pos = k - 1
    out.append(text[pos:])
    return "".join(out)


def ffs_signature(text: str) -> str:
    """CUDA's single __ffs(int) / __ffsll(long long) signature made explicit (see module doc)."""
    return _cast_first_arg(_cast_first_arg(text, "__ffsll", "(long long)"), "__ffs", "(int)")


ATOMIC_SYSTEM = {
    "atomicInc_system": ("#ifndef ROCMIG_ATOMICINC_SYSTEM\n#define ROCMIG_ATOMICINC_SYSTEM\n"
                         "__device__ inline unsigned int rocmig_atomicInc_system(unsigned int* address, unsigned int val) {\n"
                         "  __HIP_ATOMIC_BACKWARD_COMPAT_MEMORY {\n"
                         "    return __builtin_amdgcn_atomic_inc32(address, val, __ATOMIC_RELAXED, \"\");\n  }\n}\n#endif\n"),
    "atomicDec_system": ("#ifndef ROCMIG_ATOMICDEC_SYSTEM\n#define ROCMIG_ATOMICDEC_SYSTEM\n"
                         "__device__ inline unsigned int rocmig_atomicDec_system(unsigned int* address, unsigned int val) {\n"
                         "  __HIP_ATOMIC_BACKWARD_COMPAT_MEMORY {\n"
                         "    return __builtin_amdgcn_atomic_dec32(address, val, __ATOMIC_RELAXED, \"\");\n  }\n}\n#endif\n"),
}


def atomic_system(text: str) -> str:
    """atomicInc_system / atomicDec_system -> system-scope HIP implementations (see module doc)."""
    if "_system" not in text:
        return text
    blanked = cpp.blank(text)
    used = [n for n in ATOMIC_SYSTEM if re.search(rf"(?<![\w.:]){n}\s*\(", blanked)]
    if not used:
        return text
    for name in used:
        spans = [m.start() for m in re.finditer(rf"(?<![\w.:]){name}\s*\(", blanked)]
        for start in reversed(spans):
            text = text[:start] + "rocmig_" + text[start:]
        blanked = cpp.blank(text)
    return insert_after_includes(text, "".join(ATOMIC_SYSTEM[n] for n in used))


# hipCUB 7.2's public headers (/usr/include/hipcub of the dev image, backend/ left out), without .hpp:
# each declares the hipcub:: counterparts of CUB's header of the same path
HIPCUB_HEADERS = frozenset({"agent/single_pass_scan_operators", "block/block_adjacent_difference",
    "block/block_discontinuity", "block/block_exchange", "block/block_histogram", "block/block_load",
    "block/block_merge_sort", "block/block_radix_rank", "block/block_radix_sort", "block/block_raking_layout",
    "block/block_reduce", "block/block_run_length_decode", "block/block_scan", "block/block_shuffle",
    "block/block_store", "block/radix_rank_sort_operations", "config", "device/device_adjacent_difference",
    "device/device_copy", "device/device_for", "device/device_histogram", "device/device_memcpy",
    "device/device_merge", "device/device_merge_sort", "device/device_partition", "device/device_radix_sort",
    "device/device_reduce", "device/device_run_length_encode", "device/device_scan",
    "device/device_segmented_radix_sort", "device/device_segmented_reduce", "device/device_segmented_sort",
    "device/device_select", "device/device_spmv", "device/device_transform", "grid/grid_barrier",
    "grid/grid_even_share", "grid/grid_mapping", "grid/grid_queue", "iterator/arg_index_input_iterator",
    "iterator/cache_modified_input_iterator", "iterator/cache_modified_output_iterator",
    "iterator/constant_input_iterator", "iterator/counting_input_iterator", "iterator/discard_output_iterator",
    "iterator/tex_obj_input_iterator", "iterator/transform_input_iterator", "thread/thread_load",
    "thread/thread_operators", "thread/thread_reduce", "thread/thread_scan", "thread/thread_search",
    "thread/thread_sort", "thread/thread_store", "util_allocator", "util_deprecated", "util_device", "util_macro",
    "util_ptx", "util_temporary_storage", "util_type", "warp/warp_exchange", "warp/warp_load",
    "warp/warp_merge_sort", "warp/warp_reduce", "warp/warp_scan", "warp/warp_store"})
CUB_INCLUDE = re.compile(r'^([ \t]*#[ \t]*include[ \t]*)[<"]cub/([\w/]+)\.cuh[>"]', re.MULTILINE)


def cub_headers(text: str) -> str:
    """<cub/PATH.cuh> -> <hipcub/PATH.hpp> where hipCUB has that header (HIPCUB_HEADERS); CUB's internal
    headers (cub/device/dispatch/...) stay."""
    return CUB_INCLUDE.sub(lambda m: f"{m.group(1)}<hipcub/{m.group(2)}.hpp>" if m.group(2) in HIPCUB_HEADERS
                           else m.group(0), text)


CUB_LEFT = re.compile(r"(?<![\w:])(?:::)?cub\s*::(?=\s*[A-Za-z_])")
USING_CUB = re.compile(r"\busing\s+namespace\s+(?:::)?(cub)\s*;")
HIPCUB_INCLUDED = re.compile(r'^[ \t]*#[ \t]*include[ \t]*[<"]hipcub/', re.MULTILINE)


def cub_names(text: str) -> str:
    """`cub::X` left by the translator -> `hipcub::X`, in a file that includes a hipCUB header:
    torch.utils.hipify 2.14 renames the CUB names in its table only (`cub::BlockLoad` becomes
    `hipcub::BlockLoad`, its template argument `cub::BLOCK_LOAD_VECTORIZE` stays: ColossalAI 0.5.0's
    moe_kernel.cu), and hipCUB declares CUB's API under `hipcub`; `using namespace cub;` too (flashinfer-python
    0.2.2's sampling.cuh). A file that declares a namespace cub of its own is left alone."""
    if "cub" not in text or not HIPCUB_INCLUDED.search(text):
        return text
    blanked = cpp.blank(text)
    if re.search(r"\bnamespace\s+cub\s*[{=]", blanked):
        return text
    spans = sorted([(*m.span(), "hipcub::") for m in CUB_LEFT.finditer(blanked)]
                   + [(*m.span(1), "hipcub") for m in USING_CUB.finditer(blanked)])
    for start, end, name in reversed(spans):
        text = text[:start] + name + text[end:]
    return text


# rocPRIM 7.2's iterator/texture_cache_iterator.hpp calls memset in bind_texture without including
# <cstring>: a unit that reaches it through these headers after hip/hip_runtime.h (which declares only
# HIP's __device__ memset) and before any <cstring> stops at "no matching function for call to 'memset'"
# (measured in the dev image; hipcub/hipcub.hpp includes <cstring> before it)
TEXTURE_ITERATOR_INCLUDE = re.compile(
    r'^[ \t]*#[ \t]*include[ \t]*[<"](?:hipcub/iterator/tex_obj_input_iterator\.hpp|hipcub/device/device_spmv\.hpp'
    r'|rocprim/rocprim\.hpp|rocprim/iterator\.hpp|rocprim/iterator/texture_cache_iterator\.hpp)[>"]', re.MULTILINE)
STRING_H_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*[<"](?:cstring|string\.h)[>"]', re.MULTILINE)


def texture_iterator_cstring(text: str) -> str:
    """`#include <cstring>` before the first include of a header that reaches rocPRIM's
    texture_cache_iterator.hpp (TEXTURE_ITERATOR_INCLUDE), unless <cstring> / <string.h> comes first:
    the header uses the C library's memset and includes nothing that declares it. Under nvcc every .cu
    unit has <string.h> from the implicit cuda_runtime.h, so CUB's tex_obj_input_iterator.cuh and
    device_spmv.cuh never needed it."""
    m = TEXTURE_ITERATOR_INCLUDE.search(text)
    if not m or STRING_H_INCLUDE.search(text, 0, m.start()):
        return text
    return text[:m.start()] + "#include <cstring>  // rocPRIM's texture_cache_iterator.hpp calls memset\n" + text[m.start():]


# libcu++ headers and names with a rocThrust counterpart of the same meaning, usable in device code
# (rocThrust 7.2 without libhipcxx keeps its own __host__ __device__ pair / tuple / functional objects;
# std::tie's assignment is not constexpr in C++17, so ::std is no substitute in device code)
LIBCUDACXX_HEADERS = {"utility": ("thrust/pair.h",), "tuple": ("thrust/tuple.h",),
                      "functional": ("thrust/functional.h",),
                      "iterator": ("thrust/iterator/iterator_traits.h", "thrust/distance.h")}
LIBCUDACXX_NAMES = ("pair", "make_pair", "tuple", "make_tuple", "get", "tie", "tuple_size", "tuple_element",
                    "plus", "minus", "multiplies", "greater", "less", "equal_to", "not_equal_to", "greater_equal",
                    "less_equal", "distance", "iterator_traits")
LIBCUDACXX_INCLUDE = re.compile(r'^([ \t]*#[ \t]*include[ \t]*)[<"]cuda/std/(\w+)[>"]', re.MULTILINE)
LIBCUDACXX_NAME = re.compile(r"(?<![\w:])(::)?cuda::std::(" + "|".join(LIBCUDACXX_NAMES) + r")\b")


def libcudacxx_thrust(text: str) -> str:
    """<cuda/std/utility|tuple|functional|iterator> -> rocThrust's headers (LIBCUDACXX_HEADERS) and
    cuda::std::pair, make_pair, tuple, get, tie, plus, greater, distance, iterator_traits, ... ->
    thrust:: (LIBCUDACXX_NAMES); other cuda::std names and headers stay (a finding)."""
    def include(m: re.Match) -> str:
        heads = LIBCUDACXX_HEADERS.get(m.group(2))
        return "\n".join(f"{m.group(1)}<{h}>" for h in heads) if heads else m.group(0)
    return LIBCUDACXX_NAME.sub(lambda m: f"{m.group(1) or ''}thrust::{m.group(2)}", LIBCUDACXX_INCLUDE.sub(include, text))


# libcu++ headers whose every name has the standard library's meaning in HIP device code: macros, integer
# types, and std::numeric_limits of a built-in arithmetic type (its members are constexpr, which clang's
# HIP mode compiles for the device). numeric_limits of another type stays: cuda::std's is specialized for
# __half and __nv_bfloat16, std's gives T() for every member there, silently.
LIBCUDACXX_STD_HEADERS = ("limits", "climits", "cfloat", "cstdint", "cstddef")
ARITHMETIC_TYPE = (r"(?:(?:un)?signed\s+)?(?:char|short|int|long|long\s+long)(?:\s+int)?|unsigned|signed|float|double"
                   r"|long\s+double|bool|wchar_t|char(?:8|16|32)_t|(?:std::)?u?int(?:8|16|32|64|ptr|max)_t|(?:std::)?size_t")
LIBCUDACXX_STD_NAME = re.compile(r"(?<![\w:])(::)?cuda::std::(numeric_limits\s*<\s*(?:" + ARITHMETIC_TYPE + r")\s*>"
                                 r"|u?int(?:8|16|32|64|ptr|max)_t\b|size_t\b|ptrdiff_t\b|max_align_t\b|nullptr_t\b)")
LIBCUDACXX_STD_INCLUDE = re.compile(r'^([ \t]*#[ \t]*include[ \t]*)[<"]cuda/std/(' + "|".join(LIBCUDACXX_STD_HEADERS)
                                    + r')[>"]', re.MULTILINE)


def libcudacxx_std(text: str) -> str:
    """cuda::std::numeric_limits<float> (or another built-in arithmetic type, ARITHMETIC_TYPE) and
    cuda::std's integer types -> std::, and <cuda/std/limits|climits|cfloat|cstdint|cstddef> -> the standard
    header; <cuda/std/limits> stays where a cuda::std::numeric_limits of another type remains (a finding)."""
    if "cuda/std/" not in text and "cuda::std::" not in text:
        return text
    for _ in range(2):  # numeric_limits<cuda::std::int32_t> matches once its argument is std::int32_t
        text = LIBCUDACXX_STD_NAME.sub(lambda m: f"{m.group(1) or ''}std::{m.group(2)}", text)
    keep_limits = re.search(r"\bcuda::std::numeric_limits\b", cpp.blank(text)) is not None

    def include(m: re.Match[str]) -> str:
        return m.group(0) if keep_limits and m.group(2) == "limits" else f"{m.group(1)}<{m.group(2)}>"
    return LIBCUDACXX_STD_INCLUDE.sub(include, text)


PTX_TRAP = re.compile(r'\b(?:asm|__asm__)\s*(?:volatile\s*|__volatile__\s*)?\(\s*"trap;"\s*\)')


def ptx_trap(text: str) -> str:
    """asm("trap;") (and its volatile / __asm__ spellings) -> __builtin_trap()."""
    return PTX_TRAP.sub("__builtin_trap()", text)


def event_wait_flags(text: str) -> str:
    """cudaEventWaitDefault / cudaEventWaitExternal -> hipEventWaitDefault / hipEventWaitExternal (HIP 7.2
    hip_runtime_api.h defines both, 0x00 and 0x01 as CUDA's; hipify-perl 7.2 maps neither)."""
    return re.sub(r"\bcudaEventWait(Default|External)\b", r"hipEventWait\1", text)


EVENT_CREATE = re.compile(r"(?<![\w.:>])hipEventCreate\s*\(")


def event_create_flags(text: str) -> str:
    """hipEventCreate(&e, flags) -> hipEventCreateWithFlags(&e, flags): CUDA's cuda_runtime.h has a C++
    overload cudaEventCreate(cudaEvent_t*, unsigned int) that calls cudaEventCreateWithFlags; HIP 7.2
    declares hipEventCreate(hipEvent_t*) only, and the translators keep the name."""
    if "hipEventCreate" not in text:
        return text
    blanked = cpp.blank(text)
    for m in reversed(list(EVENT_CREATE.finditer(blanked))):
        spans = _arg_spans(blanked, m.end())
        if spans and len(spans[0]) == 2:
            text = text[:m.start()] + "hipEventCreateWithFlags" + text[m.start() + len("hipEventCreate"):]
    return text


# CUDA's cache-hinted loads and stores (ld.global.cs / .cg / .ca / .lu, st.global.cs / .cg / .wb / .wt):
# the hint changes where a line is cached, never the value; HIP 7.2 declares __ldcs / __ldcg for
# __half and __half2 only. __ldcv (a volatile load, fetched again every time) has no plain form here.
CACHE_LOADS = ("__ldcs", "__ldcg", "__ldca", "__ldlu")
CACHE_STORES = ("__stcs", "__stcg", "__stwb", "__stwt")
CACHE_HINT_CALL = re.compile(r"(?<![\w.:>])(" + "|".join(CACHE_LOADS + CACHE_STORES) + r")\s*\(")
CACHE_HINT_HELPERS = ("#ifndef ROCMIG_CACHE_HINTS\n#define ROCMIG_CACHE_HINTS\n"
                      "// CUDA's cache-hinted loads and stores: the same values as a plain load or store\n"
                      "template <class T> __device__ inline T rocmig_cache_load(const T* p) { return *p; }\n"
                      "template <class T> __device__ inline void rocmig_cache_store(T* p, T v) { *p = v; }\n#endif\n")


def cache_hints(text: str) -> str:
    """__ldcs / __ldcg / __ldca / __ldlu (p) -> rocmig_cache_load(p), __stcs / __stcg / __stwb / __stwt
    (p, v) -> rocmig_cache_store(p, v), a plain load and store (see CACHE_LOADS). A project's own
    overload of a name (llm.c's `__ldcs(const floatX*)` for old nvcc) is renamed with its calls and
    stays an overload, preferred to the template where it matches; a name the file #defines is left."""
    if not any(name in text for name in CACHE_LOADS + CACHE_STORES):
        return text
    blanked = cpp.blank(text)
    own = set(re.findall(r"#\s*define\s+(" + "|".join(CACHE_LOADS + CACHE_STORES) + r")\b", blanked))
    calls = [m for m in CACHE_HINT_CALL.finditer(blanked) if m.group(1) not in own]
    if not calls:
        return text
    for m in reversed(calls):
        name = "rocmig_cache_load" if m.group(1) in CACHE_LOADS else "rocmig_cache_store"
        text = text[:m.start()] + name + text[m.start() + len(m.group(1)):]
    return insert_after_includes(text, CACHE_HINT_HELPERS)


# CUDA's atomicAdd on 16-bit floats (__half: sm_70, __half2: sm_60, __nv_bfloat16(2): sm_80); HIP 7.2
# has none (amd_hip_bf16.h's unsafeAtomicAdd uses the hardware add, which fine-grained memory may drop).
# Each is a compare-and-swap loop on the aligned 32-bit word at agent scope (CUDA's device scope), adding
# with HIP's round-to-nearest __hadd / __hadd2; a scalar keeps the other half of the word bit for bit.
# Each type's overload sits under its HIP header's include guard, so it is inert where the type is not
# declared. scalar -> (guard, pair type, make pair, low half, high half, to unsigned short, from it).
HALF_ATOMIC_TYPES = {
    "__half": ("HIP_INCLUDE_HIP_AMD_DETAIL_HIP_FP16_H", "__half2", "__halves2half2", "__low2half", "__high2half",
               "__half_as_ushort", "__ushort_as_half"),
    "__hip_bfloat16": ("_HIP_INCLUDE_HIP_AMD_DETAIL_HIP_BF16_H_", "__hip_bfloat162", "__halves2bfloat162",
                       "__low2bfloat16", "__high2bfloat16", "__bfloat16_as_ushort", "__ushort_as_bfloat16"),
}
HALF_ATOMIC_NAMES = {"__half": ("__half", "half"), "__hip_bfloat16": ("__hip_bfloat16", "__nv_bfloat16", "hip_bfloat16")}
ATOMIC_ADD_CALL = re.compile(r"(?<![\w.:>])atomicAdd\s*\(")
HALF_TYPE = re.compile(r"\b(?:__half2?|half2?|__hip_bfloat162?|__nv_bfloat162?|hip_bfloat16)\b")


def _half_atomic_block(scalar: str) -> str:
    guard, pair, make, low, high, to_u, from_u = HALF_ATOMIC_TYPES[scalar]
    tag = "ROCMIG_ATOMIC_ADD_" + scalar.strip("_").upper()
    word = ("__hip_atomic_load(word, __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_AGENT)")
    cas = ("__hip_atomic_compare_exchange_weak(word, &old, want, __ATOMIC_RELAXED, __ATOMIC_RELAXED, "
           "__HIP_MEMORY_SCOPE_AGENT)")
    as_pair = f"{make}({from_u}((unsigned short)old), {from_u}((unsigned short)(old >> 16)))"
    return (
        f"#if defined({guard}) && !defined({tag})\n#define {tag}\n"
        f"__host__ __device__ static inline {pair} atomicAdd({pair}* address, {pair} val) {{\n"
        f"  unsigned int* word = reinterpret_cast<unsigned int*>(address);\n"
        f"  unsigned int old = {word}, want;\n"
        f"  do {{\n    {pair} sum = __hadd2({as_pair}, val);\n"
        f"    want = (unsigned int){to_u}({low}(sum)) | ((unsigned int){to_u}({high}(sum)) << 16);\n"
        f"  }} while (!{cas});\n  return {as_pair};\n}}\n"
        f"__host__ __device__ static inline {scalar} atomicAdd({scalar}* address, {scalar} val) {{\n"
        f"  unsigned long long at = reinterpret_cast<unsigned long long>(address);\n"
        f"  unsigned int* word = reinterpret_cast<unsigned int*>(at & ~3ull);\n"
        f"  unsigned int shift = (at & 2u) ? 16u : 0u, old = {word}, want;\n"
        f"  do {{\n    unsigned short sum = {to_u}(__hadd({from_u}((unsigned short)(old >> shift)), val));\n"
        f"    want = (old & ~(0xffffu << shift)) | ((unsigned int)sum << shift);\n"
        f"  }} while (!{cas});\n  return {from_u}((unsigned short)(old >> shift));\n}}\n#endif\n")


def half_atomics_declared(blanked_texts: list[str]) -> frozenset[str]:
    """The scalars of HALF_ATOMIC_NAMES ("__half", "__hip_bfloat16") for which some file of the tree
    declares its own atomicAdd (an old-arch fallback, `__device__ void atomicAdd(half* address, half
    val)`: gptqmodel 7.7.0's exllamav2/cuda/compat.cuh, under `USE_ROCM` too)."""
    found = set()
    for scalar, names in HALF_ATOMIC_NAMES.items():
        spelled = "|".join(re.escape(n) for n in names)
        own = re.compile(r"\batomicAdd\s*\(\s*(?:const\s+)?(?:" + spelled + r")2?\s*\*")
        if any("atomicAdd" in t and own.search(t) for t in blanked_texts):
            found.add(scalar)
    return frozenset(found)


def half_atomic_add(text: str, declared: frozenset[str] = frozenset()) -> str:
    """A file that names a 16-bit float type (HALF_TYPE) and calls atomicAdd gets CUDA's atomicAdd
    overloads for __half / __half2 and __hip_bfloat16 / __hip_bfloat162 (HALF_ATOMIC_TYPES:
    compare-and-swap loops, each under its HIP header's include guard) after its includes. A type whose
    atomicAdd the file or a file compiled with it (`declared`: half_atomics_declared of those) defines
    itself keeps its own: a second overload of the same parameters would not compile."""
    if "atomicAdd" not in text:
        return text
    blanked = cpp.blank(text)
    if not HALF_TYPE.search(blanked) or not ATOMIC_ADD_CALL.search(blanked):
        return text
    blocks = []
    for scalar in HALF_ATOMIC_NAMES:
        if scalar in declared or scalar in half_atomics_declared([blanked]):
            continue
        blocks.append(_half_atomic_block(scalar))
    if not blocks:
        return text
    return insert_after_includes(text, "// CUDA's atomicAdd on 16-bit floats (HIP has none): CAS loops\n" + "".join(blocks))


# cuda_fp16.h's typedefs of its half types (CUDA 12.5, cuda_fp16.h:5245-5270); HIP declares none of them
HALF_ALIASES = {"__nv_half": "__half", "__nv_half2": "__half2", "__nv_half_raw": "__half_raw",
                "__nv_half2_raw": "__half2_raw", "nv_half": "__half", "nv_half2": "__half2"}
HALF_ALIAS = re.compile(r"(?<![\w.>:])(?:::)?(" + "|".join(sorted(HALF_ALIASES, key=len, reverse=True)) + r")\b")
HALF_ALIAS_NAME = "(?:" + "|".join(sorted(HALF_ALIASES, key=len, reverse=True)) + ")"
# a declaration of one of the names by the file itself: typedef, using, #define, struct / class
HALF_ALIAS_DECLARED = re.compile(rf"#\s*define\s+{HALF_ALIAS_NAME}\b|\busing\s+{HALF_ALIAS_NAME}\s*=|"
                                 rf"\btypedef\b[^;]*\b{HALF_ALIAS_NAME}\s*;|\b(?:struct|class|union)\s+{HALF_ALIAS_NAME}\b")


def half_aliases(text: str) -> str:
    """__nv_half / nv_half / __nv_half2 / nv_half2 / __nv_half_raw / __nv_half2_raw -> the __half types they
    name in cuda_fp16.h (vLLM 0.34.0's mnnvl_lamport.cuh: `unknown type name '__nv_half'` under hipcc). A
    file that declares one of the names itself (typedef, using, #define) is left."""
    if "nv_half" not in text:
        return text
    blanked = cpp.blank(text)
    if HALF_ALIAS_DECLARED.search(blanked):
        return text
    for m in reversed(list(HALF_ALIAS.finditer(blanked))):
        text = text[:m.start()] + HALF_ALIASES[m.group(1)] + text[m.end():]
    return text


BF16_RN = re.compile(r"(?<![\w.:>])__float2bfloat16_rn(\s*\()")


def bf16_rn(text: str) -> str:
    """__float2bfloat16_rn(x) -> __float2bfloat16(x): CUDA's round-to-nearest-even conversion; HIP 7.2
    has no _rn name, and its __float2bfloat16 (the __bf16 conversion of amd_hip_bf16.h) rounds to
    nearest even (tests/images/test_dev.py checks it against the bit-exact rule on random floats)."""
    if "__float2bfloat16_rn" not in text:
        return text
    blanked = cpp.blank(text)
    if re.search(r"#\s*define\s+__float2bfloat16_rn\b|\b\w+\s+__float2bfloat16_rn\s*\(\s*(?:const\s+)?float\s+\w", blanked):
        return text
    for m in reversed(list(BF16_RN.finditer(blanked))):
        text = text[:m.start()] + "__float2bfloat16" + text[m.start(1):]
    return text


def _calls_renamed(text: str, calls: re.Pattern, own: str) -> str | None:
    """`text` with each call `__NAME(` that `calls` finds (group 1: NAME, group 2: the spaces and '(')
    made `rocmig_NAME(`, except names the file declares itself (`own`: a regex with {name}); None when
    no call is left to rename."""
    blanked = cpp.blank(text)
    hits = [m for m in calls.finditer(blanked) if not re.search(own.replace("{name}", m.group(1)), blanked)]
    if not hits:
        return None
    for m in reversed(hits):
        text = text[:m.start()] + "rocmig_" + m.group(1) + text[m.start(2):]
    return text


BF16_PAIR = re.compile(r"(?<![\w.:>])__(float2bfloat162_rn|floats2bfloat162_rn)(\s*\()")
BF16_PAIR_HELPERS = (  # under hip_bf16.h's include guard: a file may include it only in some builds
    "#if !defined(ROCMIG_BF16_PAIRS) && defined(_HIP_INCLUDE_HIP_AMD_DETAIL_HIP_BF16_H_)\n#define ROCMIG_BF16_PAIRS\n"
    "// CUDA's __float2bfloat162_rn / __floats2bfloat162_rn (absent from HIP 7.2): both halves rounded to\n"
    "// nearest even by HIP's __float2bfloat16, the first argument in the low half\n"
    "__host__ __device__ inline __hip_bfloat162 rocmig_float2bfloat162_rn(float a) {\n"
    "  return __halves2bfloat162(__float2bfloat16(a), __float2bfloat16(a));\n}\n"
    "__host__ __device__ inline __hip_bfloat162 rocmig_floats2bfloat162_rn(float a, float b) {\n"
    "  return __halves2bfloat162(__float2bfloat16(a), __float2bfloat16(b));\n}\n#endif\n")


def bf16_pairs(text: str) -> str:
    """__float2bfloat162_rn(x) / __floats2bfloat162_rn(a, b) -> rocmig_ helpers (BF16_PAIR_HELPERS) where the
    file neither defines nor declares them itself (optimum-quanto 0.2.7's fp8_marlin.cu)."""
    if "bfloat162_rn" not in text:
        return text
    renamed = _calls_renamed(text, BF16_PAIR, r"#\s*define\s+__{name}\b|\b\w+\s+__{name}\s*\(\s*(?:const\s+)?float\s+\w")
    return text if renamed is None else insert_after_includes(renamed, BF16_PAIR_HELPERS)


MAKE_BF16_PAIR = re.compile(r"(?<![\w.:>])make_bfloat162(?=\s*\()")
MAKE_BF16_PAIR_DEFINITION = re.compile(r"\bmake_bfloat162\s*\([^;{)]*\)\s*\{|#\s*define\s+make_bfloat162\b")


def make_bf16_pair(text: str, dead: set[int]) -> str:
    """make_bfloat162(x, y) (cuda_bf16.h of CUDA 12: x in the low half) -> HIP's __halves2bfloat162(x, y), the
    same pair; HIP 7.2 has no make_bfloat162. A file with a live definition of its own keeps its calls; one in a
    branch hipcc never takes (`dead`, 1-based line numbers: flashinfer-python 0.2.2's vec_dtypes.cuh defines it
    for CUDA < 12.4 on sm_7x only) does not count."""
    if "make_bfloat162" not in text:
        return text
    blanked = cpp.blank(text)
    if any(blanked.count("\n", 0, m.start()) + 1 not in dead for m in MAKE_BF16_PAIR_DEFINITION.finditer(blanked)):
        return text
    for m in reversed(list(MAKE_BF16_PAIR.finditer(blanked))):
        if blanked.count("\n", 0, m.start()) + 1 not in dead:
            text = text[:m.start()] + "__halves2bfloat162" + text[m.end():]
    return text


PLAIN_SHUFFLE = re.compile(r"(?<![\w.:>])__shfl(?:_up|_down|_xor)?\s*\(")
BF16X2_SHUFFLES = (  # under hip_bf16.h's include guard, as the bf16 pairs
    "#if !defined(ROCMIG_BF16X2_SHUFFLES) && defined(_HIP_INCLUDE_HIP_AMD_DETAIL_HIP_BF16_H_)\n#define ROCMIG_BF16X2_SHUFFLES\n"
    "// HIP 7.2 shuffles __hip_bfloat162 in the *_sync forms only; the plain forms CUDA's 32-lane warp rewrites\n"
    "// use, as HIP's *_sync ones do it: the pair's 32 bits as one unsigned int\n"
    + "".join(f"__device__ inline __hip_bfloat162 __shfl{name}(__hip_bfloat162 v, {kind} {arg}, int width = warpSize) {{\n"
              f"  union {{ __hip_bfloat162 b; unsigned int u; }} x{{v}};\n  x.u = __shfl{name}(x.u, {arg}, width);\n  return x.b;\n}}\n"
              for name, kind, arg in (("", "int", "src_lane"), ("_up", "unsigned int", "lane_delta"),
                                      ("_down", "unsigned int", "lane_delta"), ("_xor", "int", "lane_mask")))
    + "#endif\n")


def bf16x2_shuffles(text: str, pytorch: bool) -> str:
    """HIP's plain shuffles (__shfl, __shfl_up / _down / _xor) for __hip_bfloat162 (BF16X2_SHUFFLES), in a
    file that calls them and names bfloat16 or is part of a PyTorch extension (whose templates take
    bf16 pairs): CUDA's `__shfl_xor_sync(0xffffffff, pair, o)` becomes `__shfl_xor(pair, o, 32)` (warp.py),
    which HIP 7.2 declares for __half2 and __hip_bfloat16 but not for the bf16 pair (gptqmodel 7.7.0's
    swordfish decode: "no matching function for call to '__shfl'")."""
    if not PLAIN_SHUFFLE.search(cpp.blank(text)) or not ("bfloat16" in text or pytorch):
        return text
    return insert_after_includes(text, BF16X2_SHUFFLES)


GRID_CONSTANT = re.compile(r"\b__grid_constant__\s*")


def grid_constant(text: str) -> str:
    """`__grid_constant__` dropped from kernel parameters: CUDA 11.7's annotation of a const kernel
    parameter whose address the kernel may take without a copy; HIP has no such keyword, and
    without it the const parameter holds the same value (only its address may differ)."""
    if "__grid_constant__" not in text:
        return text
    blanked = cpp.blank(text)
    for m in reversed(list(GRID_CONSTANT.finditer(blanked))):
        text = text[:m.start()] + text[m.end():]
    return text


ARCH_TEST = re.compile(r"^[ \t]*#[ \t]*(?:ifdef[ \t]+__CUDA_ARCH__|if[ \t]+defined[ \t]*(?:\([ \t]*__CUDA_ARCH__[ \t]*\)|"
                       r"[ \t]+__CUDA_ARCH__))[ \t]*$")
DEFINE_LINE = re.compile(r"^[ \t]*#[ \t]*define[ \t]+(\w+)\b(.*)$")
DIRECTIVE = re.compile(r"^[ \t]*#[ \t]*(\w+)")


def _qualifier_defines(lines: list[str]) -> dict[str, str] | None:
    """{name: value} of a branch made only of object-like #defines (blank lines allowed), else None."""
    found = {}
    for line in lines:
        m = DEFINE_LINE.match(line)
        if m and not m.group(2).startswith("("):
            found[m.group(1)] = m.group(2)
        elif line.strip():
            return None
    return found


def cuda_arch_hostdev(text: str) -> str:
    """`#ifdef __CUDA_ARCH__` / `#define Q __host__ __device__` / `#else` / `#define Q` / `#endif` (k2's and
    fast_rnnt's FT_CUDA_HOSTDEV) -> `#if defined(__CUDA_ARCH__) || defined(__HIP__)`. nvcc's device pass sees
    the functions as __host__ __device__ and its host pass, which never compiles kernel bodies, as host
    functions; hipcc never defines __CUDA_ARCH__ (it defines __HIP_DEVICE_COMPILE__), and clang checks kernel
    bodies in both passes, so the functions would stay host-only and every kernel call fails. clang defines
    __HIP__ in both passes of a HIP compile; there the qualifiers hold what nvcc's device pass saw."""
    if "__CUDA_ARCH__" not in text:
        return text
    lines = cpp.blank(text).split("\n")
    out = text.split("\n")
    for at, line in enumerate(lines):
        if not ARCH_TEST.match(line):
            continue
        ends = []
        for end in range(at + 1, min(at + 12, len(lines))):
            m = DIRECTIVE.match(lines[end])
            if m and m.group(1) in ("else", "endif"):
                ends.append(end)
                if m.group(1) == "endif":
                    break
            elif m and m.group(1) not in ("define",):
                break
        if len(ends) != 2:
            continue
        device = _qualifier_defines(lines[at + 1:ends[0]])
        host = _qualifier_defines(lines[ends[0] + 1:ends[1]])
        if (device and host is not None and set(device) == set(host)
                and all(re.search(r"\b__host__\b", v) and re.search(r"\b__device__\b", v) for v in device.values())
                and not any(re.search(r"\b__(?:device|global)__\b", v) for v in host.values())):
            out[at] = "#if defined(__CUDA_ARCH__) || defined(__HIP__)"
    return "\n".join(out)


# CUDA's integer min / max functions (math_functions.hpp: __host__ __device__, for unsigned int, long
# long and unsigned long long); HIP 7.2 declares none of them
INT_MINMAX = {"umin": "unsigned int", "umax": "unsigned int", "llmin": "long long int", "llmax": "long long int",
              "ullmin": "unsigned long long int", "ullmax": "unsigned long long int"}
INT_MINMAX_CALL = re.compile(r"(?<![\w.:>])(" + "|".join(INT_MINMAX) + r")\s*\(")


def int_minmax(text: str) -> str:
    """umin / umax / llmin / llmax / ullmin / ullmax calls get CUDA's definitions (host and device),
    each under its own guard, after the includes; a file that defines or declares the name itself
    (a function of that name, a macro) keeps its own."""
    if not any(name in text for name in INT_MINMAX):
        return text
    blanked = cpp.blank(text)
    used = sorted({m.group(1) for m in INT_MINMAX_CALL.finditer(blanked)})
    own = set(re.findall(r"(?:#\s*define\s+|\b(?:int|long|unsigned|auto|T)\s+)(" + "|".join(INT_MINMAX) + r")\b", blanked))
    used = [name for name in used if name not in own]
    if not used:
        return text
    helpers = "".join(
        f"#ifndef ROCMIG_{name.upper()}\n#define ROCMIG_{name.upper()}\n"
        f"static inline __host__ __device__ {INT_MINMAX[name]} {name}({INT_MINMAX[name]} a, {INT_MINMAX[name]} b) "
        f"{{ return a {'<' if name.endswith('min') else '>'} b ? a : b; }}\n#endif\n" for name in used)
    return insert_after_includes(text, "// CUDA's integer min / max (math_functions.hpp), absent from HIP\n" + helpers)


# CUDA's mixed-sign integer min / max (crt/math_functions.hpp: the signed argument is converted to the
# unsigned type, then compared); HIP's device headers have none, so its promoting template
# (__clang_hip_cmath.h, __HIP_OVERLOAD2) takes such a call and returns double
MIXED_MINMAX_TYPES = (("int", "unsigned int"), ("long int", "unsigned long int"),
                      ("long long int", "unsigned long long int"))
MINMAX_CALL = re.compile(r"(?<![\w.:>~])(?:min|max)\s*\(")
OWN_MINMAX = re.compile(r"#\s*define\s+(?:min|max)\b|\b(?:int|long|unsigned)\s+\(?(?:min|max)\)?\s*\(\s*(?:const\s+)?"
                        r"(?:int|long|unsigned)\b[^,()]*,\s*(?:const\s+)?(?:int|long|unsigned)\b")


def _mixed_minmax_helpers() -> str:
    lines = ["#ifndef ROCMIG_MIXED_MIN_MAX", "#define ROCMIG_MIXED_MIN_MAX",
             "// CUDA's mixed-sign integer min / max (math_functions.hpp): compared as the unsigned type"]
    for signed, unsigned in MIXED_MINMAX_TYPES:
        for name, op in (("min", "<"), ("max", ">")):
            for a, b in ((signed, unsigned), (unsigned, signed)):
                lines.append(f"__device__ static constexpr inline {unsigned} ({name})({a} a, {b} b) "
                             f"{{ return ({unsigned})a {op} ({unsigned})b ? ({unsigned})a : ({unsigned})b; }}")
    return "\n".join(lines + ["#endif", ""])


def mixed_minmax(text: str) -> str:
    """A file with device code that calls min / max unqualified gets CUDA's mixed-sign integer
    overloads (`unsigned int min(int, unsigned int)` and the long / long long pairs, MIXED_MINMAX_TYPES),
    device-side, after its includes: a call with one signed and one unsigned argument then has CUDA's
    type and value instead of the double of HIP's promoting template. Calls of other types resolve as
    before (an exact non-template match is the only one these overloads win). A file that #defines
    min / max or declares its own integer min / max keeps its own."""
    if "min" not in text and "max" not in text:
        return text
    blanked = cpp.blank(text)
    if not re.search(r"\b__(?:global|device)__\b", blanked) or not MINMAX_CALL.search(blanked):
        return text
    if OWN_MINMAX.search(blanked):
        return text
    return insert_after_includes(text, _mixed_minmax_helpers())


# A function defined for both CUDA error types (CUresult and cudaError_t are distinct enums, as in the
# CUDA samples' helper_cuda.h `_cudaGetErrorEnum` under CUDA_DRIVER_API): both become hipError_t
ERROR_OVERLOAD_DEF = re.compile(r"\b([A-Za-z_]\w*)\s*\(\s*((?:const\s+)?hipError_t(?:\s+\w+)?\s*(?:,[^(){};]*)?)\)\s*\{")
NOT_A_FUNCTION = frozenset({"if", "for", "while", "switch", "catch", "return", "sizeof", "decltype"})


def _block_end(blanked: str, brace: int) -> int:
    """Offset just past the `}` that closes the `{` at `brace` (len(blanked) when unbalanced)."""
    depth = 0
    for i in range(brace, len(blanked)):
        depth += {"{": 1, "}": -1}.get(blanked[i], 0)
        if depth == 0:
            return i + 1
    return len(blanked)


def _declaration_start(blanked: str, offset: int) -> int:
    """Start of the line where the declaration holding `offset` begins: after the previous `;`, `{`, `}`
    or preprocessor line (a return type on the line above the name is the declaration's)."""
    before = blanked[:offset]
    stop = max(before.rfind(";"), before.rfind("{"), before.rfind("}"))
    for m in re.finditer(r"^[ \t]*#[^\n]*$", before, re.MULTILINE):
        stop = max(stop, m.end())
    start = stop + 1
    while start < offset and blanked[start] in " \t\n":
        start += 1
    return blanked.rfind("\n", 0, start) + 1


def _parameter_types(parameters: str) -> tuple[str, ...]:
    """The types of a parameter list's parameters (`hipError_t e, int iLine, const char *szFile` ->
    `hipError_t`, `int`, `const char*`): each parameter without its trailing name, spaces normalized."""
    types = []
    for parameter in parameters.split(","):
        words = re.sub(r"\s*([*&])\s*", r" \1 ", parameter).split()
        if len(words) > 1 and re.fullmatch(r"[A-Za-z_]\w*", words[-1]) and words[-1] not in ("const", "volatile"):
            words = words[:-1]
        types.append(" ".join(words).replace(" *", "*").replace(" &", "&"))
    return tuple(types)


def merged_error_overloads(text: str) -> str:
    """A function defined more than once with hipError_t as its first parameter and the same parameter
    types after it (its CUresult and cudaError_t overloads, which hipify merges: the CUDA samples'
    `_cudaGetErrorEnum(e)`, NVIDIA's Video Codec SDK `check(e, iLine, szFile)`) keeps its first definition:
    each later one is compiled only where the first was not (`#ifndef ROCMIG_DEFINED_<name>_HIPERROR`, defined after the first). Where both
    were in the same build this drops the copy that is now a redefinition; where they sat in exclusive
    #if branches the one the build takes stays."""
    if text.count("hipError_t") < 2:
        return text
    blanked = cpp.blank(text)
    defs: dict[tuple[str, tuple[str, ...]], list[re.Match[str]]] = {}
    for m in ERROR_OVERLOAD_DEF.finditer(blanked):
        if m.group(1) not in NOT_A_FUNCTION:
            defs.setdefault((m.group(1), _parameter_types(m.group(2))), []).append(m)
    edits: list[tuple[int, str]] = []
    for (name, types), found in defs.items():
        if len(found) < 2:
            continue
        macro = f"ROCMIG_DEFINED_{name}_HIPERROR" + (f"_{len(types)}" if len(types) > 1 else "")
        edits.append((_block_end(blanked, found[0].end() - 1), f"\n#define {macro}\n"))
        for m in found[1:]:
            edits.append((_declaration_start(blanked, m.start()), f"#ifndef {macro}\n"))
            edits.append((_block_end(blanked, m.end() - 1), "\n#endif\n"))
    for at, insert in sorted(edits, key=lambda e: e[0], reverse=True):
        text = text[:at] + insert + text[at:]
    return text


HIPBLAS_DATATYPE = re.compile(r"\bhipblasDatatype_t\b")
HIPBLAS_COMPLEX = re.compile(r"\bhipblas(Double)?Complex\b")
COMPLEX_MEMBER_CALL = re.compile(r"(?:\.|->)\s*(?:real|imag)\s*\(")


def hipblas_datatype(text: str) -> str:
    """hipblasDatatype_t -> hipDataType, hipblasComplex -> hipComplex and hipblasDoubleComplex ->
    hipDoubleComplex, for hipBLAS 3 and later (ROCm 7), which removed these types: its GEMM-Ex API takes
    hipDataType, its HIPBLAS_R_* / HIPBLAS_C_* names are macros for the HIP_R_* / HIP_C_* values of
    hipDataType (hipblas.h, "Macros used before hipBLAS version 3.0"), and its complex functions take
    hipComplex / hipDoubleComplex (the HIPBLAS_V2 API, the only one in 3.0). torch.utils.hipify 2.14
    still maps cublasDataType_t to hipblasDatatype_t, and ports written for ROCm 5-6 name these types
    (DeepSpeed 0.19.8 blas_utils.h; qulacs 0.6.14 gpu_wrapping.h's `using gpublasDoubleComplex =
    hipblasDoubleComplex`). The complex types are left in a file that calls .real() / .imag(): hipBLAS
    2's C++ class had those members, HIP's float2 / double2 complex types do not."""
    text = HIPBLAS_DATATYPE.sub("hipDataType", text)
    if HIPBLAS_COMPLEX.search(text) and not COMPLEX_MEMBER_CALL.search(cpp.blank(text)):
        text = HIPBLAS_COMPLEX.sub(lambda m: "hipDoubleComplex" if m.group(1) else "hipComplex", text)
    return text


GEMM_EX = re.compile(r"(?<![\w.:>])hipblasGemm(?:StridedBatched|Batched)?Ex(?:_v2)?\s*\(")
# cuBLAS's legacy compute types (a cudaDataType_t) and the compute type its C++ overload takes for each
# (cublas_api.h, cublasMigrateComputeType: complex types compute in their real precision)
COMPUTE_TYPES = {f"{prefix}_{kind}_{bits}": f"HIPBLAS_COMPUTE_{bits}" for prefix in ("HIP", "HIPBLAS")
                 for kind, bits in (("R", "32F"), ("R", "64F"), ("R", "16F"), ("R", "32I"), ("C", "32F"), ("C", "64F"))}
COMPUTE_HELPER_USE = re.compile(r"\brocmig_gemm_compute_type\b")
COMPUTE_HELPER = """// cuBLAS's GemmEx overloads that take the compute type as a cudaDataType_t (cublas_api.h,
// cublasMigrateComputeType, default math mode): hipBLAS 3 takes hipblasComputeType_t only
#ifndef ROCMIG_GEMM_COMPUTE_TYPE
#define ROCMIG_GEMM_COMPUTE_TYPE
static inline hipblasComputeType_t rocmig_gemm_compute_type(hipblasComputeType_t t) { return t; }
static inline hipblasComputeType_t rocmig_gemm_compute_type(hipDataType t) {
  switch (t) {
    case HIP_R_32F: case HIP_C_32F: return HIPBLAS_COMPUTE_32F;
    case HIP_R_64F: case HIP_C_64F: return HIPBLAS_COMPUTE_64F;
    case HIP_R_16F: return HIPBLAS_COMPUTE_16F;
    case HIP_R_32I: return HIPBLAS_COMPUTE_32I;
    default: return (hipblasComputeType_t)-1;  /* cuBLAS answers CUBLAS_STATUS_NOT_SUPPORTED; hipBLAS rejects it */
  }
}
#endif
"""


def gemm_ex_compute_type(text: str) -> str:
    """The compute type of hipblasGemmEx / GemmBatchedEx / GemmStridedBatchedEx (the argument before the
    algo, the last) given as a data type -> the compute type, for hipBLAS 3 and later, whose compute type
    is hipblasComputeType_t only. cuBLAS keeps C++ overloads taking the legacy cudaDataType_t there
    (cublas_api.h) and maps it as cublasMigrateComputeType does (CUDA_R_32F and CUDA_C_32F to
    CUBLAS_COMPUTE_32F, ...). A literal data type is renamed (gptqmodel 7.7.0's swordfish_dense_tier.cu
    passes CUDA_R_32F); any other expression (a variable, rwkv 0.8.32's `compute_type`) is passed through
    rocmig_gemm_compute_type, whose overloads keep a hipblasComputeType_t and map a hipDataType, so the
    compiler picks by the expression's type. The helper goes after the includes above the first call."""
    if "Ex" not in text or not GEMM_EX.search(text):
        return text
    blanked = cpp.blank(text)
    wrapped = False
    for m in reversed(list(GEMM_EX.finditer(blanked))):
        found = _arg_spans(blanked, m.end())
        if found is None or len(found[0]) < 3:
            continue
        start, end = found[0][-2]
        value = text[start:end].strip()
        if value in COMPUTE_TYPES:
            text = text[:start] + text[start:end].replace(value, COMPUTE_TYPES[value]) + text[end:]
        elif value and not value.startswith("HIPBLAS_COMPUTE_") and not COMPUTE_HELPER_USE.search(value):
            lead = len(text[start:end]) - len(text[start:end].lstrip())
            at = start + lead
            text = text[:at] + f"rocmig_gemm_compute_type({value})" + text[at + len(value):]
            wrapped = True
    if wrapped and "#define ROCMIG_GEMM_COMPUTE_TYPE" not in text:
        text = insert_after_includes(text, COMPUTE_HELPER, COMPUTE_HELPER_USE)
    return text


def nccl_rccl(text: str) -> str:
    """<nccl.h> / "nccl.h" -> <rccl/rccl.h>."""
    return re.sub(r'^([ \t]*#[ \t]*include[ \t]*)[<"]nccl\.h[>"]', r"\1<rccl/rccl.h>", text, flags=re.MULTILINE)
TRAP = re.compile(r"(?<![\w.:>])__trap\s*\(\s*\)")


def trap(text: str) -> str:
    """__trap() -> __builtin_trap() (see module doc); a function of the tree named __trap is kept."""
    if re.search(r"\b(?:void|int)\s+__trap\s*\(", cpp.blank(text)):
        return text
    return TRAP.sub("__builtin_trap()", text)


GEMM_TENSOR_OP = re.compile(r"\b(?:CUBLAS|HIPBLAS)_GEMM_(?:DEFAULT|DFALT)_TENSOR_OP\b")


def gemm_tensor_op(text: str) -> str:
    """CUBLAS_GEMM_DEFAULT_TENSOR_OP -> HIPBLAS_GEMM_DEFAULT (see module doc); a tree that defines the
    name itself (a HIP vendor header's alias) keeps it."""
    if re.search(r"#\s*define\s+(?:CUBLAS|HIPBLAS)_GEMM_(?:DEFAULT|DFALT)_TENSOR_OP\b", text):
        return text
    return GEMM_TENSOR_OP.sub("HIPBLAS_GEMM_DEFAULT", text)


# `case X:` of a CUDA library status or driver error the translator left (hipify maps every value HIP's
# libraries have, so a name left is one they lack), whose body only returns a string literal
UNMAPPED_STATUS_CASE = re.compile(
    r'^([ \t]*)(case[ \t]+(?:CUFFT|CUBLAS|CUSPARSE|CURAND|CUSOLVER|NVJPEG|CUDNN|NPP|CUDA_ERROR)_\w+[ \t]*:)'
    r'([ \t]*\n?[ \t]*)(return[ \t]+"[^"\n]*"[ \t]*;)', re.MULTILINE)


def unmapped_status_cases(text: str) -> str:
    """`case CUFFT_LICENSE_ERROR: return "CUFFT_LICENSE_ERROR";` -> the same commented out, where the value
    is a CUDA library status (or driver API error) the translator left: HIP's library has no such value,
    so the label does not compile and no call returns it (the CUDA samples' helper_cuda.h error-string
    switches: cuFFT's license error, which hipFFT 7.2 lacks). Lines stay where they were; a tree that
    declares the name itself keeps the case (its own enum)."""
    def comment(m: re.Match[str]) -> str:
        name = m.group(2).split()[1].rstrip(":")
        if re.search(r"(?:#\s*define\s+|\benum\b[^;]*?\b)" + re.escape(name) + r"\b", text):
            return m.group(0)
        gap = m.group(3)
        if "\n" in gap:
            trailing, indent = gap.split("\n")
            gap = f"{trailing}\n{indent}// "
        return f"{m.group(1)}// {m.group(2)}{gap}{m.group(4)}  // rocmig: HIP's library has no such value"
    return UNMAPPED_STATUS_CASE.sub(comment, text)


BLAS_STATUS_TEXT = re.compile(r"(?<![\w.:>])cublasGetStatus(?:String|Name)(?=\s*\()")


def blas_status_string(text: str) -> str:
    """cublasGetStatusString(s) / cublasGetStatusName(s) -> hipblasStatusToString(s): the text for a
    hipBLAS status (hipblas.h of ROCm 7.2; hipify-perl 7.2 lists both cuBLAS names as unsupported in its
    HIP mode). hipBLAS returns the status's name ("HIPBLAS_STATUS_NOT_INITIALIZED") for both, where
    cuBLAS's String gives a sentence: the same use, an error message, with other words. A tree that
    defines the name itself keeps it. A file that does not include hipblas.h gets it (HIPBLAS_INCLUDE)."""
    if "cublasGetStatus" not in text or re.search(r"\bcublasGetStatus(?:String|Name)\s*\([^)]*\)\s*\{", text):
        return text
    text = BLAS_STATUS_TEXT.sub("hipblasStatusToString", text)
    if HIPBLAS_INCLUDE.search(text):
        return text
    return insert_after_includes(text, "#include <hipblas/hipblas.h>  // rocmig: hipblasStatusToString\n")


# hipblasStatusToString is declared in hipblas.h only; a cuBLASLt file includes hipblaslt.h, which
# includes hipblas-common.h (the status enum) and not hipblas.h (ROCm 7.2 headers)
HIPBLAS_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*[<"]hipblas(?:/hipblas)?\.h[>"]', re.MULTILINE)


def builtin_types(text: str, in_tree: Callable[[str], bool] = lambda _name: False) -> str:
    """<builtin_types.h>, <vector_functions.h> (make_float4, ...), <device_launch_parameters.h> (threadIdx, ...)
    <device_atomic_functions.h> (atomicAdd, ...), <driver_functions.h> (make_cudaExtent, make_cudaPos,
    make_cudaPitchedPtr: the CUDA samples' volumeRender), <cuda_device_runtime_api.h> (the runtime calls
    device code may make: flashinfer 0.2.2's utils.cuh includes it), <host_defines.h> and the <sm_NN_atomic_functions.h> /
    <sm_NN_intrinsics.h> headers -> <hip/hip_runtime.h>, which declares the runtime types, the make_ functions,
    the built-in variables, the qualifiers, the atomics and intrinsics (warp-rnnt 0.7.0's core.cu includes
    device_launch_parameters.h and device_atomic_functions.h); a quoted include of one of them too (it falls back to CUDA's include path), unless the tree has
    a header of that name (in_tree(name)).
    <cudaTypedefs.h> too in a file that names none of its PFN_ driver entry-point typedefs: it is then
    included for what it includes (cuda.h, whose CUDA_VERSION a HIP build leaves undefined). An `#include <>`
    (hipify-perl's output for such a header, EMPTY_INCLUDE) too."""
    names = ("builtin_types|vector_functions|device_launch_parameters|device_atomic_functions|driver_functions"
             "|cuda_device_runtime_api"
             r"|host_defines|sm_\d+_atomic_functions|sm_\d+_intrinsics"
             + ("" if re.search(r"\bPFN_\w", text) else "|cudaTypedefs"))

    def sub(m: re.Match[str]) -> str:
        quoted = m.group(2) == '"'
        return m.group(0) if quoted and in_tree(m.group(3)) else m.group(1) + "<hip/hip_runtime.h>"
    text = re.sub(rf'^([ \t]*#[ \t]*include[ \t]*)([<"])((?:{names})\.h)[>"]', sub, text, flags=re.MULTILINE)
    return EMPTY_INCLUDE.sub(r"\1<hip/hip_runtime.h>", text)


# hipify-perl maps the headers whose content hip_runtime.h holds (<device_launch_parameters.h>, ...) to ""
# and writes `#include <>`, which no compiler accepts ("empty filename")
EMPTY_INCLUDE = re.compile(r'^([ \t]*#[ \t]*include[ \t]*)(?:<>|"")', re.MULTILINE)


# HIP 7.2 names that are typedefs, where CUDA's are struct tags (`struct cudaGraphicsResource *r;`
# in the CUDA samples' GL interop): `struct hipGraphicsResource` is then an error. Measured in the dev
# image: each name below fails `struct NAME *p;` after hip_runtime.h and hip_gl_interop.h.
HIP_TYPEDEF_NOT_TAG = ("hipGraphicsResource", "hipIpcMemHandle_t", "hipIpcEventHandle_t", "hipUUID",
                       "hipLaunchParams", "hipStreamAttrValue", "hipLaunchAttribute", "hipExternalMemoryHandleDesc",
                       "hipExternalMemoryBufferDesc", "hipExternalSemaphoreHandleDesc")
STRUCT_TYPEDEF = re.compile(r"\bstruct\s+(" + "|".join(HIP_TYPEDEF_NOT_TAG) + r")\b(?!\s*\{)")


def struct_typedef(text: str) -> str:
    """`struct hipGraphicsResource *r` -> `hipGraphicsResource *r` for the HIP typedef names of
    HIP_TYPEDEF_NOT_TAG (CUDA's are struct tags); the same type, named as HIP declares it."""
    if "struct" not in text:
        return text
    blanked = cpp.blank(text)
    for m in reversed(list(STRUCT_TYPEDEF.finditer(blanked))):
        text = text[:m.start()] + text[m.start(1):]
    return text


# CUDA's cudaGraphicsMapFlags* (0, 1, 2), which CUDA code also passes as register flags (the samples'
# cudaGraphicsGLRegisterBuffer(&r, pbo, cudaGraphicsMapFlagsWriteDiscard)); hipify 7.2 maps none, and
# HIP's hipGraphicsRegisterFlags* hold the same values (None 0, ReadOnly 1, WriteDiscard 2 in both).
GRAPHICS_MAP_FLAG = re.compile(r"\bcudaGraphicsMapFlags(None|ReadOnly|WriteDiscard)\b")


def graphics_map_flags(text: str) -> str:
    """cudaGraphicsMapFlagsNone / ReadOnly / WriteDiscard -> hipGraphicsRegisterFlags of the same
    name and value (GRAPHICS_MAP_FLAG)."""
    return GRAPHICS_MAP_FLAG.sub(r"hipGraphicsRegisterFlags\1", text) if "cudaGraphicsMapFlags" in text else text


GL_INTEROP_INCLUDE = re.compile(r'^([ \t]*#[ \t]*include[ \t]*)[<"](?:cuda_gl_interop|cudaGL)\.h[>"]', re.MULTILINE)


def gl_interop(text: str) -> str:
    """<cuda_gl_interop.h> / <cudaGL.h> (CUDA's OpenGL interop, runtime and driver) -> <hip/hip_gl_interop.h>,
    which declares the hipGraphicsGL* functions hipify maps their calls to; hipify 7.2 leaves the include."""
    return GL_INTEROP_INCLUDE.sub(r"\1<hip/hip_gl_interop.h>", text)


# CUDA's vector types (vector_types.h): the name and its number of components
VECTOR_TYPE = re.compile(r"\b(?:u?(?:char|short|int|long|longlong)|float|double)([1-4])\b")
AGGREGATE_WITH_VECTOR = re.compile(r"\b(?:union|struct)\s+([A-Za-z_]\w*)\s*\{\s*((?:u?(?:char|short|int|long|longlong)|float|double)[1-4])\s+\w+\s*;")


def vector_brace_elision(text: str) -> str:
    """`T var = {0, 0, 0, 0};` -> `T var = {{0, 0, 0, 0}};` where T is a union or struct of the file whose first
    member is a CUDA vector type and the list has no more items than that type has components: CUDA's uint4
    is a plain struct, which brace elision fills from the outer list; HIP's is a class with constructors,
    which it cannot ("no viable conversion from 'int' to 'uint4'": cudf's hash helpers, vendored by
    MinkowskiEngine 0.5.4). The braced form initializes the same member with the same values on both."""
    if "{" not in text:
        return text
    blanked = cpp.blank(text)
    # (offset, name, components) of each declaration: a use takes the nearest one above it (cudf declares a
    # local union of one name with a uint4 in one branch and a uint2 in the next)
    declared = [(m.start(), m.group(1), int(VECTOR_TYPE.fullmatch(m.group(2)).group(1)))
                for m in AGGREGATE_WITH_VECTOR.finditer(blanked)]
    if not declared:
        return text
    names = sorted({name for _at, name, _n in declared})
    pattern = re.compile(r"\b(" + "|".join(map(re.escape, names)) + r")\s+[A-Za-z_]\w*\s*=?\s*(\{)([^{};]*)(\})\s*;")
    for m in reversed(list(pattern.finditer(blanked))):
        above = [n for at, name, n in declared if name == m.group(1) and at < m.start()]
        items = [x for x in cpp.split_args(m.group(3)) if x.strip()]
        if not above or not items or len(items) > above[-1]:
            continue
        text = text[:m.start(2)] + "{" + text[m.start(2):m.end(4)] + "}" + text[m.end(4):]
    return text


RESTRICT = re.compile(r"\b__restrict(?:__)?\b")


def restrict_by_value(text: str) -> str:
    """`__restrict__` dropped from a function parameter declared without `*` or `&` before it (`map_type const
    __restrict__ map`): nvcc ignores it there, clang rejects it once the type is a class ("restrict requires
    a pointer or reference": MinkowskiEngine 0.5.4's origin_field_map_kernel, a substitution failure that
    leaves no kernel to launch). restrict only ever promises that pointers do not alias, so dropping it
    keeps every result; where a template parameter becomes a pointer only that optimization hint is lost."""
    if "__restrict" not in text:
        return text
    blanked = cpp.blank(text)
    for m in reversed(list(RESTRICT.finditer(blanked))):
        depth, k = 0, m.start() - 1
        while k >= 0:
            c = blanked[k]
            if c in ")]>":
                depth += 1
            elif c in "([<":
                if depth == 0:
                    break
                depth -= 1
            elif c in ",;{}" and depth == 0:
                break
            k -= 1
        if k < 0 or blanked[k] not in "(,":
            continue
        declared = blanked[k + 1:m.start()]
        after = re.match(r"\s*[A-Za-z_]\w*\s*(?:=[^,)]*)?[,)]", blanked[m.end():])
        if "*" in declared or "&" in declared or not declared.strip() or not after:
            continue
        end = m.end() + (1 if blanked[m.end():m.end() + 1] == " " else 0)
        text = text[:m.start()] + text[end:]
    return text


# Thrust's public names -> the header that declares them (Thrust 2 / rocThrust 7.2 layout: thrust/<name>.h)
THRUST_HEADERS = {
    **{name: "thrust/sort.h" for name in ("sort", "sort_by_key", "stable_sort", "stable_sort_by_key", "is_sorted")},
    **{name: "thrust/reduce.h" for name in ("reduce", "reduce_by_key")},
    **{name: "thrust/scan.h" for name in ("inclusive_scan", "exclusive_scan", "inclusive_scan_by_key",
                                          "exclusive_scan_by_key")},
    **{name: "thrust/remove.h" for name in ("remove", "remove_if", "remove_copy", "remove_copy_if")},
    **{name: "thrust/unique.h" for name in ("unique", "unique_by_key", "unique_copy", "unique_count")},
    **{name: "thrust/extrema.h" for name in ("min_element", "max_element", "minmax_element")},
    **{name: "thrust/binary_search.h" for name in ("lower_bound", "upper_bound", "binary_search", "equal_range")},
    **{name: "thrust/count.h" for name in ("count", "count_if")},
    **{name: "thrust/find.h" for name in ("find", "find_if", "find_if_not")},
    **{name: "thrust/copy.h" for name in ("copy", "copy_if", "copy_n")},
    **{name: "thrust/fill.h" for name in ("fill", "fill_n")},
    **{name: "thrust/transform.h" for name in ("transform", "transform_if")},
    **{name: "thrust/functional.h" for name in ("plus", "minus", "multiplies", "divides", "modulus", "negate",
                                                "equal_to", "not_equal_to", "greater", "less", "greater_equal",
                                                "less_equal", "logical_and", "logical_or", "maximum", "minimum",
                                                "identity", "bit_and", "bit_or", "bit_xor")},
    **{name: "thrust/execution_policy.h" for name in ("device", "host", "seq")},
    **{name: "thrust/tuple.h" for name in ("tuple", "make_tuple", "get", "tie")},
    **{name: "thrust/pair.h" for name in ("pair", "make_pair")},
    "for_each": "thrust/for_each.h", "for_each_n": "thrust/for_each.h", "sequence": "thrust/sequence.h",
    "gather": "thrust/gather.h", "scatter": "thrust/scatter.h", "transform_reduce": "thrust/transform_reduce.h",
    "inner_product": "thrust/inner_product.h", "tabulate": "thrust/tabulate.h", "partition": "thrust/partition.h",
    "merge": "thrust/merge.h", "merge_by_key": "thrust/merge.h", "adjacent_difference": "thrust/adjacent_difference.h",
    "set_union": "thrust/set_operations.h", "set_intersection": "thrust/set_operations.h",
    "set_difference": "thrust/set_operations.h", "equal": "thrust/equal.h", "replace": "thrust/replace.h",
    "replace_if": "thrust/replace.h", "reverse": "thrust/reverse.h", "generate": "thrust/generate.h",
    "device_vector": "thrust/device_vector.h", "host_vector": "thrust/host_vector.h", "device_ptr": "thrust/device_ptr.h",
    "device_pointer_cast": "thrust/device_ptr.h", "raw_pointer_cast": "thrust/memory.h",
    "make_zip_iterator": "thrust/iterator/zip_iterator.h", "zip_iterator": "thrust/iterator/zip_iterator.h",
    "counting_iterator": "thrust/iterator/counting_iterator.h", "make_counting_iterator": "thrust/iterator/counting_iterator.h",
    "constant_iterator": "thrust/iterator/constant_iterator.h", "make_constant_iterator": "thrust/iterator/constant_iterator.h",
    "transform_iterator": "thrust/iterator/transform_iterator.h", "make_transform_iterator": "thrust/iterator/transform_iterator.h",
    "permutation_iterator": "thrust/iterator/permutation_iterator.h",
    "make_permutation_iterator": "thrust/iterator/permutation_iterator.h",
    "discard_iterator": "thrust/iterator/discard_iterator.h", "make_discard_iterator": "thrust/iterator/discard_iterator.h",
}
THRUST_USE = re.compile(r"(?<![\w:])(?:::)?thrust::(\w+)\b")
THRUST_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*[<"](thrust/[^>"]+)[>"]', re.M)


def thrust_headers(text: str) -> str:
    """The Thrust headers that declare the thrust:: names a file uses (THRUST_HEADERS) and that it does not
    include itself: CUDA's Thrust headers include more of Thrust than rocThrust's (MinkowskiEngine 0.5.4's
    spmm.cu calls thrust::sort_by_key with thrust::device and reaches only <thrust/host_vector.h>, through
    utils.hpp: "no member named 'sort_by_key' in namespace 'thrust'" under hipcc). They go after the file's
    first Thrust include (after any THRUST_* configuration before it), else after its first #include outside
    every #if (cpp.top_level_includes); a file with neither (a fragment included mid-file) is left. Each
    header declares what the file names and has its own guard."""
    blanked = cpp.blank_code(text)
    wanted = sorted({THRUST_HEADERS[m.group(1)] for m in THRUST_USE.finditer(blanked)
                     if m.group(1) in THRUST_HEADERS} - set(THRUST_INCLUDE.findall(blanked)))
    if not wanted:
        return text
    first = THRUST_INCLUDE.search(blanked)
    if first:
        end = blanked.find("\n", first.end())
        end = len(text) if end < 0 else end + 1
    else:
        top = cpp.top_level_includes(blanked)
        if not top:
            return text
        end = top[0].end()
    block = "".join(f"#include <{h}>\n" for h in wanted)
    return text[:end] + ("" if text[:end].endswith("\n") else "\n") + block + text[end:]


NVTX_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*[<"](?:nvtx3/)?(?:nvToolsExt(?:CudaRt|Cuda)?\.h|nvtx3\.hpp)[>"][^\n]*$', re.MULTILINE)
# torch.utils.hipify's names for them (its CUDA_INCLUDE_MAP: nvToolsExt.h and nvtx3/nvtx3.hpp -> roctracer/roctx.h)
NVTX_TORCH_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*[<"](?:nvtx3/)?roctracer/roctx\.h[>"][^\n]*$', re.MULTILINE)
# NVTX beyond ranges, marks and naming: domains, event attributes, registered strings, categories, the
# nvtx3:: C++ API (cudf's vendored nvtx3.hpp in MinkowskiEngine 0.5.4)
NVTX_FULL = re.compile(r"\bnvtx3::|\bnvtx(?:Domain|EventAttributes|StringHandle|Payload|Message|Color|Category|Initialize|"
                       r"NameCategory|NameOsThread|ResourceAttributes|SyncUser)\w*|\bNVTX_(?:VERSION|EVENT_ATTRIB_STRUCT_SIZE|"
                       r"COLOR_\w+|MESSAGE_\w+|PAYLOAD_\w+|RESOURCE_\w+|CATEGORY_\w+|INITIALIZATION_\w+)\b")
NVTX_NAMING = """// nvToolsExtCudaRt.h / nvToolsExtCuda.h name CUDA objects for the profiler only: no-ops
#define nvtxNameCudaStreamA(stream, name) ((void)(stream), (void)(name))
#define nvtxNameCudaEventA(event, name) ((void)(event), (void)(name))
#define nvtxNameCudaDeviceA(device, name) ((void)(device), (void)(name))
#define nvtxNameCuStreamA(stream, name) ((void)(stream), (void)(name))
#define nvtxNameCuEventA(event, name) ((void)(event), (void)(name))
#define nvtxNameCuDeviceA(device, name) ((void)(device), (void)(name))
#define nvtxNameCudaStream(stream, name) nvtxNameCudaStreamA(stream, name)
#define nvtxNameCudaEvent(event, name) nvtxNameCudaEventA(event, name)
#define nvtxNameCudaDevice(device, name) nvtxNameCudaDeviceA(device, name)"""
NVTX_BLOCK = """// NVTX -> roctx when its header is present (link -lrocprofiler-sdk-roctx or -lroctx64); else no-ops
#if __has_include(<rocprofiler-sdk-roctx/roctx.h>)
#include <rocprofiler-sdk-roctx/roctx.h>
#define ROCMIG_ROCTX 1
#elif __has_include(<roctracer/roctx.h>)
#include <roctracer/roctx.h>
#define ROCMIG_ROCTX 1
#endif
#if defined(ROCMIG_ROCTX)
#define nvtxRangePushA(name) roctxRangePushA(name)
#define nvtxRangePop() roctxRangePop()
#define nvtxMarkA(name) roctxMarkA(name)
#define nvtxRangeStartA(name) roctxRangeStartA(name)
#define nvtxRangeEnd(id) roctxRangeStop(id)
typedef roctx_range_id_t nvtxRangeId_t;
#else
#define nvtxRangePushA(name) ((void)(name), 0)
#define nvtxRangePop() 0
#define nvtxMarkA(name) ((void)(name))
#define nvtxRangeStartA(name) ((void)(name), (nvtxRangeId_t)0)
#define nvtxRangeEnd(id) ((void)(id))
typedef unsigned long long nvtxRangeId_t;
#endif
#define nvtxRangePush(name) nvtxRangePushA(name)
#define nvtxMark(name) nvtxMarkA(name)
#define nvtxRangeStart(name) nvtxRangeStartA(name)
""" + NVTX_NAMING


def nvtx(text: str, cuda_text: str = "") -> str:
    """The NVTX headers (nvToolsExt.h, nvToolsExtCudaRt.h, nvToolsExtCuda.h, nvtx3/nvtx3.hpp; in a translation
    of a CUDA text that includes one of them also torch.utils.hipify's roctracer/roctx.h for them). A file
    that uses NVTX's ranges, marks and CUDA object naming only: roctx or no-ops, the first include becomes
    NVTX_BLOCK, the others a comment. A file that uses more of NVTX (NVTX_FULL: domains, event attributes,
    the nvtx3:: C++ API) keeps NVIDIA's header-only NVTX 3 (`<nvtx3/nvToolsExt.h>`, `<nvtx3/nvtx3.hpp>`:
    plain C and C++ that record nothing unless a profiler injects itself; the dev image has them, and
    sysdeps puts them on the unit's path), its CUDA naming headers becoming NVTX_NAMING's no-ops."""
    pattern = NVTX_INCLUDE
    if cuda_text and NVTX_INCLUDE.search(cuda_text) and NVTX_TORCH_INCLUDE.search(text):
        pattern = re.compile(f"{NVTX_INCLUDE.pattern}|{NVTX_TORCH_INCLUDE.pattern}", re.MULTILINE)
    found = list(pattern.finditer(text))
    if not found:
        return text
    full = bool(NVTX_FULL.search(cpp.blank(text)))
    # the CUDA header each include came from, in order (torch.utils.hipify maps two of them to one name)
    cuda_headers = [m.group(0).split("include", 1)[1].strip() for m in NVTX_INCLUDE.finditer(cuda_text)]
    cuda_headers = cuda_headers if len(cuda_headers) == len(found) else [m.group(0).split("include", 1)[1].strip()
                                                                          for m in found]
    named = False
    for i, m in reversed(list(enumerate(found))):
        header = cuda_headers[i]
        if not full:
            block = NVTX_BLOCK if i == 0 else f"// NVTX {header}: in the NVTX block above"
        elif "Cuda" in header:
            block = NVTX_NAMING if not named else f"// NVTX {header}: its CUDA naming calls are no-ops above"
            named = True
        else:
            block = "#include <nvtx3/nvtx3.hpp>" if "nvtx3.hpp" in header else "#include <nvtx3/nvToolsExt.h>"
            if "roctx" in m.group(0) and re.search(r"\broctx[A-Z]\w*", cpp.blank(text)):
                block += "\n#include <roctracer/roctx.h>"  # calls torch.utils.hipify renamed to roctx's
        text = text[:m.start()] + block + text[m.end():]
    return text


CG_REDUCE_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*[<"]cooperative_groups/reduce\.h[>"][^\n]*$', re.MULTILINE)
CG_NAMES = re.compile(r"\b(?:cg|cooperative_groups)::(reduce|plus|less|greater|bit_and|bit_or|bit_xor|labeled_partition)\b(?!_)")
CG_REDUCE_BLOCK = """#include <hip/hip_cooperative_groups.h>
// cooperative_groups::reduce and its operators (absent from HIP 7.2): a shuffle tree over the group's
// ranks, then rank 0's value to every rank (CUDA's cg::reduce returns the result to all of them)
#ifndef ROCMIG_CG_REDUCE
#define ROCMIG_CG_REDUCE
namespace rocmig_cg {
template <class T> struct plus { __device__ T operator()(T a, T b) const { return a + b; } };
template <class T> struct less { __device__ T operator()(T a, T b) const { return b < a ? b : a; } };
template <class T> struct greater { __device__ T operator()(T a, T b) const { return a < b ? b : a; } };
template <class T> struct bit_and { __device__ T operator()(T a, T b) const { return a & b; } };
template <class T> struct bit_or { __device__ T operator()(T a, T b) const { return a | b; } };
template <class T> struct bit_xor { __device__ T operator()(T a, T b) const { return a ^ b; } };
template <class Group, class T, class Op>
__device__ T reduce(const Group& g, T v, Op op) {
  const unsigned int n = g.size(), rank = g.thread_rank();
  for (unsigned int d = 1; d < n; d *= 2) {
    T other = g.shfl_down(v, d);
    if (rank + d < n) v = op(v, other);
  }
  return g.shfl(v, 0);
}
// cooperative_groups::labeled_partition (absent from HIP 7.2): the lanes of the parent tile (or of the
// active lanes, for a coalesced group) that hold the same label, ranked in lane order as CUDA's
// coalesced groups are; shuffles name absolute lanes of the wavefront (width warpSize)
__device__ inline unsigned long long labeled_lanes(unsigned long long same, unsigned int tile_size) {
  if (tile_size >= 64u) return same;
  return same & (((1ull << tile_size) - 1ull) << (__lane_id() & ~(tile_size - 1u)));
}
__device__ inline unsigned int labeled_rank(unsigned long long mask) {
  return __popcll(mask & ((1ull << __lane_id()) - 1ull));
}
__device__ inline int labeled_lane(unsigned long long mask, unsigned int rank) {
  for (unsigned int i = 0; i < rank; i++) mask &= mask - 1ull;
  return __ffsll((long long)mask) - 1;
}
struct labeled_group {
  unsigned long long mask;
  __device__ unsigned int size() const { return __popcll(mask); }
  __device__ unsigned int num_threads() const { return __popcll(mask); }
  __device__ unsigned int thread_rank() const { return labeled_rank(mask); }
  __device__ void sync() const { __builtin_amdgcn_wave_barrier(); }
  template <class T> __device__ T shfl(T v, unsigned int rank) const { return __shfl(v, labeled_lane(mask, rank), warpSize); }
  template <class T> __device__ T shfl_down(T v, unsigned int d) const {
    const unsigned int r = labeled_rank(mask) + d;
    return __shfl(v, r < (unsigned int)__popcll(mask) ? labeled_lane(mask, r) : (int)__lane_id(), warpSize);
  }
  template <class T> __device__ T shfl_up(T v, unsigned int d) const {
    const unsigned int r = labeled_rank(mask);
    return __shfl(v, r >= d ? labeled_lane(mask, r - d) : (int)__lane_id(), warpSize);
  }
};
template <unsigned int N, class P, class Label>
__device__ labeled_group labeled_partition(const cooperative_groups::thread_block_tile<N, P>&, Label label) {
  return labeled_group{labeled_lanes(__match_any((long long)label), N)};
}
template <class Label>
__device__ labeled_group labeled_partition(const cooperative_groups::coalesced_group&, Label label) {
  return labeled_group{__match_any((long long)label)};
}
}  // namespace rocmig_cg
#endif"""


def cg_reduce(text: str) -> str:
    """cooperative_groups/reduce.h -> rocmig_cg::reduce (see module doc)."""
    if "::" not in text and "reduce.h" not in text:
        return text
    blanked = cpp.blank(text)
    if not CG_REDUCE_INCLUDE.search(text) and not CG_NAMES.search(blanked):
        return text
    for m in reversed(list(CG_NAMES.finditer(blanked))):
        text = text[:m.start()] + f"rocmig_cg::{m.group(1)}" + text[m.end():]
    if CG_REDUCE_INCLUDE.search(text):
        return CG_REDUCE_INCLUDE.sub(lambda m: CG_REDUCE_BLOCK, text, count=1)
    return text if "ROCMIG_CG_REDUCE" in text else insert_after_includes(text, CG_REDUCE_BLOCK + "\n")


CG_MEMCPY_INCLUDE = re.compile(r'^([ \t]*#[ \t]*include[ \t]*)[<"]cooperative_groups/memcpy_async\.h[>"]', re.MULTILINE)
CG_MEMCPY_NAMES = re.compile(r"\b(?:memcpy_async|wait_prior|wait)\s*[(<]")


def cg_memcpy_header(text: str) -> str:
    """<cooperative_groups/memcpy_async.h> -> <hip/hip_cooperative_groups.h> in a file that calls none of
    its functions (memcpy_async, wait, wait_prior): HIP 7.2 has no such header, and the file only needs the
    groups (DCNv4 1.0.0's im2col headers include it and use none of it). A file that calls them keeps it
    (cooperative-groups-unsupported names the call)."""
    if "memcpy_async.h" not in text or CG_MEMCPY_NAMES.search(cpp.blank(text)):
        return text
    return CG_MEMCPY_INCLUDE.sub(r"\1<hip/hip_cooperative_groups.h>", text)


CUB_NS_PREFIX = re.compile(r"^[ \t]*#[ \t]*define[ \t]+CUB_NS_PREFIX[ \t]+namespace[ \t]+([A-Za-z_]\w*)[ \t]*\{", re.MULTILINE)


def cub_namespaces(blanked_texts: list[str]) -> frozenset[str]:
    """The namespaces the tree wraps CUB in (`#define CUB_NS_PREFIX namespace ls {`, DGL's dgl_cub.cuh
    pattern, copied by lightseq 3.0.1), from its CUDA files with comments blanked."""
    return frozenset(m.group(1) for t in blanked_texts if "CUB_NS_PREFIX" in t for m in CUB_NS_PREFIX.finditer(t))


def cub_namespace_prefix(text: str, namespaces: frozenset[str]) -> str:
    """`ls::cub::X` (or `::ls::cub::X`, `ls::hipcub::X` after the translator) -> `hipcub::X` for each
    namespace of cub_namespaces. CUB_NS_PREFIX / CUB_NS_POSTFIX make CUB's headers declare cub inside
    that namespace, so that two copies of CUB in one program do not collide; hipCUB has no such switch
    and always declares `hipcub` (the translator's name for `cub`), with the same API."""
    if not namespaces or "cub::" not in text:
        return text
    names = "|".join(re.escape(n) for n in sorted(namespaces))
    return re.sub(rf"(?<![\w:])(?:::)?(?:{names})\s*::\s*(?:hip)?cub\s*::", "hipcub::", text)


WMMA_USE = re.compile(r"\b(?:wmma|nvcuda)\b")


# libcu++'s headers outside cuda/std (their names live in namespace cuda itself: cuda::pipeline, cuda::barrier,
# cuda::annotated_ptr, cuda::atomic_ref, ...) and a use of any such name
LIBCUDACXX_OWN_INCLUDE = re.compile(
    r'^([ \t]*#[ \t]*include[ \t]*[<"]cuda/(?:barrier|pipeline|atomic|annotated_ptr|latch|semaphore|functional|'
    r'memory_resource|stream_ref|ptx|cmath|utility|type_traits|bit|version|iterator)[>"][^\n]*)', re.MULTILINE)
LIBCUDACXX_OWN_NAME = re.compile(r"(?<![\w:])(?:::)?cuda\s*::\s*(?!std\b)[A-Za-z_]|\bnamespace\s+cuda\b")


def libcudacxx_used(blanked_texts: list[str]) -> bool:
    """Whether any of the tree's CUDA files (comments blanked) names a libcu++ entity outside cuda::std
    (`cuda::pipeline`, `cuda::memcpy_async`, `cuda::barrier`, ...) or opens a namespace cuda of its own."""
    return any(LIBCUDACXX_OWN_NAME.search(t) for t in blanked_texts)


def libcudacxx_unused_includes(text: str, used: bool) -> str:
    """`#include <cuda/pipeline>` (and libcu++'s other headers outside cuda/std, LIBCUDACXX_OWN_INCLUDE) commented
    out where no file of the tree names anything they declare (`used` false: libcudacxx_used): flashinfer-python
    0.2.2's permuted_smem.cuh includes <cuda/pipeline> and issues cp.async in inline PTX. ROCm has no libcu++,
    and an include that declares nothing the tree uses changes nothing by its absence."""
    if used or "cuda/" not in text:
        return text
    return LIBCUDACXX_OWN_INCLUDE.sub(r"// \1  (rocmig: no file of the tree names a cuda:: entity)", text)


def wmma_used(blanked_texts: list[str]) -> bool:
    """Whether any of the tree's CUDA files (comments blanked) names WMMA (`nvcuda::wmma`, `wmma::`)."""
    return any(WMMA_USE.search(t) for t in blanked_texts)


def wmma(text: str, used: bool = True) -> str:
    """<mma.h> / nvcuda::wmma -> <rocwmma/rocwmma.hpp> / rocwmma (see module doc). Where no file of the tree
    uses WMMA (`used` false: wmma_used), the <mma.h> include is commented out instead: lightseq 3.0.1's
    cublas_wrappers.h includes it and nothing uses it, and rocWMMA's header is a large one to parse (and
    incomplete in Debian's librocwmma-dev 7.2.4, which lacks its internal/ headers)."""
    if not used:
        return re.sub(r'^([ \t]*#[ \t]*include[ \t]*[<"]mma\.h[>"][^\n]*)', r"// \1  (no file of the tree uses WMMA)",
                      text, flags=re.MULTILINE)
    text = re.sub(r'^([ \t]*#[ \t]*include[ \t]*)[<"]mma\.h[>"]', r"\1<rocwmma/rocwmma.hpp>", text, flags=re.MULTILINE)
    text = re.sub(r"\busing\s+namespace\s+nvcuda\s*::\s*wmma\s*;", "using namespace rocwmma;", text)
    text = re.sub(r"\busing\s+namespace\s+nvcuda\s*;", "namespace wmma = rocwmma;", text)
    return re.sub(r"\bnvcuda\s*::\s*wmma\b", "rocwmma", text)


# CUDA header include guard -> the include guard of the HIP header the translators map it to (read from
# CUDA 12.5's headers and ROCm 7.2.4's; each HIP guard is defined once its header is included, which
# hip_runtime.h does for driver_types.h, vector types, library types). The CUDA samples' helper_cuda.h
# declares checkCudaErrors under `#ifdef __DRIVER_TYPES_H__` and its cuBLAS / cuRAND / cuFFT error
# strings under each library's guard.
HEADER_GUARDS = {"__CUDA_RUNTIME_H__": "HIP_INCLUDE_HIP_HIP_RUNTIME_H",
                 "__CUDA_RUNTIME_API_H__": "HIP_INCLUDE_HIP_HIP_RUNTIME_API_H",
                 "__cuda_cuda_h__": "HIP_INCLUDE_HIP_HIP_RUNTIME_H",
                 "__DRIVER_TYPES_H__": "HIP_INCLUDE_HIP_DRIVER_TYPES_H",
                 "__VECTOR_TYPES_H__": "HIP_INCLUDE_HIP_HIP_VECTOR_TYPES_H",
                 "__LIBRARY_TYPES_H__": "HIP_INCLUDE_HIP_LIBRARY_TYPES_H",
                 "__CUDA_FP16_H__": "HIP_INCLUDE_HIP_HIP_FP16_H",
                 "__CUDA_BF16_H__": "HIP_INCLUDE_HIP_HIP_BF16_H",
                 "_COOPERATIVE_GROUPS_H_": "HIP_INCLUDE_HIP_HIP_COOPERATIVE_GROUP_H",
                 "CU_COMPLEX_H_": "HIP_INCLUDE_HIP_HIP_COMPLEX_H",
                 "CUBLAS_API_H_": "HIPBLAS_H", "CUBLAS_V2_H_": "HIPBLAS_H",
                 "CURAND_H_": "HIPRAND_H_", "_CUFFT_H_": "HIPFFT_H_", "CUSPARSE_H_": "HIPSPARSE_H",
                 "CUSOLVER_COMMON_H_": "HIPSOLVER_H"}
HEADER_GUARD = re.compile(r"\b(" + "|".join(HEADER_GUARDS) + r")\b")
CONDITIONAL = re.compile(r"^[ \t]*#[ \t]*(?:if|ifdef|ifndef|elif)\b[^\n]*$", re.MULTILINE)


def runtime_guard(text: str) -> str:
    """CUDA headers' include guards tested in #if lines -> their HIP headers' (HEADER_GUARDS, module doc);
    a guard the file #defines itself (a vendored copy of the header) is its own and stays."""
    own = set(re.findall(r"^[ \t]*#[ \t]*define[ \t]+(\w+)", text, re.MULTILINE))

    def sub(g: re.Match[str]) -> str:
        return g.group(0) if g.group(1) in own else HEADER_GUARDS[g.group(1)]
    return CONDITIONAL.sub(lambda m: HEADER_GUARD.sub(sub, m.group(0)), text)


RUNTIME_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*[<"]hip/hip_runtime\.h[>"][ \t]*\n', re.MULTILINE)


def runtime_include_once(text: str) -> str:
    """Drop file-level repeats of `#include hip/hip_runtime.h` after the first one (see module doc)."""
    found = list(RUNTIME_INCLUDE.finditer(text))
    if len(found) < 2:
        return text
    depth_at: dict[int, int] = {}
    depth = 0
    for m in re.finditer(r"^[ \t]*#[ \t]*(if|ifdef|ifndef|endif)\b|^[ \t]*#[ \t]*include\b", text, re.MULTILINE):
        word = m.group(1)
        if word in ("if", "ifdef", "ifndef"):
            depth += 1
        elif word == "endif":
            depth = max(0, depth - 1)
        else:
            depth_at[m.start()] = depth
    top = [m for m in found if depth_at.get(m.start(), 1) == 0]
    for m in reversed(top[1:]):
        text = text[:m.start()] + text[m.end():]
    return text


DEVICE_CODE = re.compile(r"\b(?:__global__|__device__|__shared__|__constant__|threadIdx|blockIdx|blockDim|gridDim)\b|<<<")


def nvcc_implicit_runtime(text: str, in_tree: Callable[[str], bool]) -> str:
    """A .cu unit that includes a header of its own tree (in_tree(name)) before any hip/hip_runtime.h,
    or that holds device code and includes hip/hip_runtime.h nowhere, gets hip/hip_runtime.h as its
    first line: nvcc includes cuda_runtime.h before anything of a .cu unit, so its include guards
    (__CUDA_RUNTIME_H__, __DRIVER_TYPES_H__, which cuda-runtime-guard maps to HIP's) hold in every
    header the unit includes (the CUDA samples' helper_cuda.h defines checkCudaErrors and
    findCudaDevice only then), and a kernel source with no include at all (a driver-API sample's
    matrixMul_kernel.cu) sees blockIdx and __syncthreads. hipcc's implicit header declares neither. A unit
    whose first hip/hip_runtime.h include sits inside an `extern "C" {` block gets it first too."""
    line = "#include <hip/hip_runtime.h>  // nvcc includes cuda_runtime.h first in every .cu unit\n"
    for m in includes.INCLUDE.finditer(text):
        name = m.group(2).strip()
        if name == "hip/hip_runtime.h":
            return line + text if _in_extern_c(text, m.start()) else text
        if in_tree(name):
            return line + text
    return line + text if DEVICE_CODE.search(cpp.blank(text)) else text


EXTERN_C = re.compile(r'\bextern\s+"C"\s*\{')


def _in_extern_c(text: str, at: int) -> bool:
    """Whether offset `at` of a source lies inside an `extern "C" {` block (Rodinia's b+tree util/cuda/cuda.cu
    includes cuda.h there: nvcc's implicit cuda_runtime.h made it a no-op, HIP's templates need C++ linkage)."""
    blanked = cpp.blank_code(text)  # the same offsets, comments and literals blanked
    for m in EXTERN_C.finditer(text, 0, at):
        if blanked.startswith("extern", m.start()) and blanked.count("{", m.end(), at) >= blanked.count("}", m.end(), at):
            return True
    return False


SHUFFLE_USE = re.compile(r"(?<![\w.:>])__shfl(?:_up|_down|_xor)?(?:_sync)?\s*\(")
HALF_OVERLOAD = re.compile(r"\b(__shfl(?:_up|_down|_xor)?(?:_sync)?)\s*\(([^()]*)\)\s*[{;]")
# HIP 7.2's __half shuffles (amd_hip_fp16.h): name -> its second parameter
HALF_SHUFFLES = {"__shfl": "int src_lane", "__shfl_up": "unsigned int lane_delta",
                 "__shfl_down": "unsigned int lane_delta", "__shfl_xor": "int lane_mask"}


def half_overloads(blanked_texts: list[str]) -> frozenset[str]:
    """Names of the __shfl* functions the tree itself declares with a Half parameter (left out of
    half_shuffles' block: a second overload would make the project's calls ambiguous)."""
    return frozenset(m.group(1) for t in blanked_texts for m in HALF_OVERLOAD.finditer(t) if re.search(r"\bHalf\b", m.group(2)))


def half_shuffles(text: str, declared: frozenset[str] = frozenset()) -> str:
    """The c10::Half shuffle overloads inserted after the includes of a file that shuffles (see module
    doc); the caller decides that the file includes PyTorch's headers."""
    if warp.FORWARDERS_GUARD in text or not SHUFFLE_USE.search(cpp.blank(text)):
        return text
    lines = []
    for name, second in HALF_SHUFFLES.items():
        arg = second.split()[-1]
        if name not in declared:
            lines.append(f"__device__ inline c10::Half {name}(c10::Half var, {second}, int width) "
                         f"{{ return c10::Half({name}(static_cast<__half>(var), {arg}, width)); }}")
            lines.append(f"__device__ inline c10::Half {name}(c10::Half var, {second}) "
                         f"{{ return c10::Half({name}(static_cast<__half>(var), {arg})); }}")
        if f"{name}_sync" not in declared:
            lines.append(f"__device__ inline c10::Half {name}_sync(unsigned long long mask, c10::Half var, {second}, int width) "
                         f"{{ return c10::Half({name}_sync(mask, static_cast<__half>(var), {arg}, width)); }}")
            lines.append(f"__device__ inline c10::Half {name}_sync(unsigned long long mask, c10::Half var, {second}) "
                         f"{{ return c10::Half({name}_sync(mask, static_cast<__half>(var), {arg})); }}")
    if not lines:
        return text
    block = (f"#ifndef {warp.FORWARDERS_GUARD}\n#define {warp.FORWARDERS_GUARD}\n"
             "// c10::Half converts to __half and to float: HIP's shuffles of both are ambiguous for it; these pass\n"
             "// its bits through HIP's __half shuffles, with the caller's width and mask\n"
             + "\n".join(lines) + "\n#endif\n")
    return insert_after_includes(text, block)


HALF2_RAW_DECL = re.compile(r"\b__half2_raw\s*&?\s*([A-Za-z_]\w*)\s*(?=[=;,)({\[])")


def _scope_end(blanked: str, at: int) -> int:
    """Offset just past the scope of the name declared right before offset `at`: for a parameter (`,` or
    `)` follows) its function's body, else the block that holds it (len(blanked) at file scope)."""
    if blanked[at:at + 1] in (",", ")"):
        body = blanked.find("{", at)
        return _block_end(blanked, body) if body >= 0 else len(blanked)
    depth = 0
    for k in range(at, len(blanked)):
        depth += {"{": 1, "}": -1}.get(blanked[k], 0)
        if depth < 0:
            return k
    return len(blanked)


def half2_raw_members(text: str) -> str:
    """`r.x` / `r.y` of a __half2_raw variable -> `r.x.x` / `r.y.x`, within the block that declares it.
    CUDA's __half2_raw holds two unsigned shorts (cuda_fp16.h); HIP 7.2's holds two __half_raw, each a
    union whose `x` is that unsigned short (amd_hip_fp16.h), so `tmp.u16[0] = res.x;` fails ("assigning
    to 'uint16_t' from incompatible type '__half_raw'") and `res.x.x` is the same bits, read or written.
    vLLM's and ColossalAI 0.5.0's fp8 cast functors unpack __nv_cvt_fp8x2_to_halfraw2's result so. A
    member already followed by `.` is left as it is."""
    if "__half2_raw" not in text:
        return text
    blanked = cpp.blank(text)
    edits: list[tuple[int, int, str]] = []
    for decl in HALF2_RAW_DECL.finditer(blanked):
        name = decl.group(1)
        end = _scope_end(blanked, decl.end())
        for m in re.finditer(rf"(?<![\w.>])({re.escape(name)}\s*\.\s*[xy])\b(?!\s*\.)", blanked[decl.end():end]):
            at = decl.end() + m.end(1)
            edits.append((at, at, ".x"))
    for start, stop, insert in sorted(set(edits), reverse=True):
        text = text[:start] + insert + text[stop:]
    return text


SYNCWARP = re.compile(r"(?<![\w.:>])__syncwarp\s*\(")
# a mask expression that neither writes nor calls anything: literals, names, members, operators
PURE_MASK = re.compile(r"(?:[\w\s.|&^~<>()+\-*/%\[\]]|->)*")


def syncwarp_mask(text: str) -> str:
    """__syncwarp(mask) -> __syncwarp(). HIP 7.2's masked __syncwarp takes a 64-bit mask only (a
    static_assert refuses CUDA's 32-bit `0xffffffff` or `unsigned m`), and does nothing with it but
    check it before calling __syncwarp() (amd_warp_sync_functions.h): a wavefront-scope release fence,
    a wave barrier, an acquire fence. That orders memory across the whole wavefront, a superset of
    any CUDA mask's lanes on wave64 and wave32 alike, and a wavefront has no lanes running ahead to wait
    for. A mask that writes or calls something (`mask = f()`) keeps its evaluation:
    `((void)(mask), __syncwarp())`. A file that defines its own __syncwarp is left alone."""
    if "__syncwarp" not in text:
        return text
    blanked = cpp.blank(text)
    if re.search(r"\b(?:void|auto)\s+__syncwarp\s*\(|#\s*define\s+__syncwarp\b", blanked):
        return text
    for m in reversed(list(SYNCWARP.finditer(blanked))):
        found = _arg_spans(blanked, m.end())
        if found is None or len(found[0]) != 1:
            continue
        (start, end), close = found[0][0], found[1]
        mask = text[start:end].strip()
        if not mask:
            continue
        pure = PURE_MASK.fullmatch(blanked[start:end]) and not re.search(r"\w\s*\(|\+\+|--|(?<![=!<>])=(?!=)", blanked[start:end])
        replacement = "__syncwarp()" if pure else f"((void)({mask}), __syncwarp())"
        text = text[:m.start()] + replacement + text[close + 1:]
    return text


LDG_USE = re.compile(r"(?<![\w.:>])__ldg\s*\(")
HALF_LDG_GUARD = "ROCMIG_HALF_LDG"
HALF_LDG = f"""#ifndef {HALF_LDG_GUARD}
#define {HALF_LDG_GUARD}
// PyTorch declares __ldg(const c10::Half*) for CUDA compilers only (c10/util/Half.h); on HIP it is a plain
// load, as HIP's own __ldg overloads are (hip_ldg.h). A template, so that a non-template overload wins.
namespace c10 {{
template <class T, typename std::enable_if<std::is_same<T, Half>::value, int>::type = 0>
__device__ inline Half __ldg(const T* ptr) {{ return *ptr; }}
}}  // namespace c10
#endif
"""
OWN_HALF_LDG = re.compile(r"\b__ldg\s*\(\s*const\s+(?:\w+::)*Half\s*\*")


def half_ldg(text: str) -> str:
    """__ldg of a c10::Half pointer, in a file that includes PyTorch's headers (the caller decides):
    PyTorch declares that overload under `__CUDA_ARCH__ >= 350 || (__clang__ && __CUDA__)` only
    (torch/headeronly/util/Half.h of PyTorch 2.14; its BFloat16 one covers HIP), so
    `__ldg((c10::Half*)p)` finds no HIP overload (megablocks 0.10.0's replicate.h, torch-scatter 2.0.9's
    segment_csr_cuda.cu). HALF_LDG, in namespace c10 so that argument-dependent lookup finds it from any
    namespace, is inserted after the includes above the first __ldg; a file that overloads __ldg for
    Half itself is left alone."""
    if "__ldg" not in text or HALF_LDG_GUARD in text:
        return text
    blanked = cpp.blank(text)
    if not LDG_USE.search(blanked) or OWN_HALF_LDG.search(blanked):
        return text
    return insert_after_includes(text, HALF_LDG, LDG_USE)


# Preprocessor tests of NVIDIA's compiler and of HIP's (hipcc defines __HIP__ and __HIPCC__, and
# __HIP_DEVICE_COMPILE__ in device passes; none of the CUDA ones: `hipcc -dM -E` in the dev image).
CUDA_COMPILER_TEST = re.compile(r"\b(?:__CUDACC__|__CUDACC_RTC__|__NVCC__|__CUDA_ARCH__|CUDA_VERSION|CUDART_VERSION"
                                r"|__CUDACC_VER_MAJOR__|__CUDACC_VER_MINOR__)\b")
HIP_COMPILER_TEST = re.compile(r"\b(?:__HIP__|__HIPCC__|__HIPCC_RTC__|__HIP_PLATFORM_AMD__|__HIP_PLATFORM_HCC__"
                               r"|__HIP_DEVICE_COMPILE__)\b")
DIRECTIVE = re.compile(r"^[ \t]*#[ \t]*(if|ifdef|ifndef|elif|else|endif)\b(.*)$")


def _cuda_before_hip(blanked_lines: list[str]) -> list[int]:
    """0-based lines of the #if / #ifdef / #elif branches that test CUDA's compiler (and no HIP macro)
    in a chain whose later branch tests a HIP compiler macro."""
    found: list[int] = []
    stack: list[list[tuple[int, str]]] = []
    for i, line in enumerate(blanked_lines):
        m = DIRECTIVE.match(line)
        if not m:
            continue
        word, condition = m.group(1), m.group(2)
        if word in ("if", "ifdef", "ifndef"):
            stack.append([(i, condition)])
        elif word in ("elif", "else") and stack:
            stack[-1].append((i, condition if word == "elif" else ""))
        elif word == "endif" and stack:
            branches = stack.pop()
            for k, (start, cond) in enumerate(branches):
                if CUDA_COMPILER_TEST.search(cond) and not HIP_COMPILER_TEST.search(cond) \
                        and any(HIP_COMPILER_TEST.search(later) for _, later in branches[k + 1:]):
                    found.append(start)
    return sorted(found)


def own_hip_branch(text: str, cuda_lines: list[str], mapping: list[int | None]) -> str:
    """Put back the CUDA-compiler tests of chains that have their own HIP branch (see module doc).
    cuda_lines: the CUDA input; mapping: CUDA line -> line of `text` (0-based, linemap.map_lines).
    Only directive lines the translator changed are restored, with their continuation lines."""
    lines = text.split("\n")
    blanked = cpp.blank("\n".join(cuda_lines)).split("\n")
    for start in _cuda_before_hip(blanked):
        i = start
        while i < len(cuda_lines):
            j = mapping[i] if i < len(mapping) else None
            if j is None or j >= len(lines) or (i == start and not DIRECTIVE.match(lines[j])):
                break
            lines[j] = cuda_lines[i]
            if not cuda_lines[i].rstrip().endswith("\\"):
                break
            i += 1
    return "\n".join(lines)


# HIP function -> index of its kernel argument (hip_runtime_api.h of HIP 7.2: `const void* func`)
FUNC_POINTER_ARG = {"hipFuncGetAttributes": 1, "hipFuncSetAttribute": 0, "hipFuncSetCacheConfig": 0,
                    "hipFuncSetSharedMemConfig": 0}
FUNC_POINTER_CALL = re.compile(r"(?<![\w.:>])(" + "|".join(FUNC_POINTER_ARG) + r")\s*\(")
VOID_POINTER = re.compile(r"^(?:reinterpret_cast\s*<\s*(?:const\s+)?void\s*\*\s*>|\(\s*(?:const\s+)?void\s*\*\s*\))")


def _arg_spans(blanked: str, start: int) -> tuple[list[tuple[int, int]], int] | None:
    """Spans (offsets into the text) of the top-level arguments of the call whose '(' ends at `start`,
    and the offset of its ')'; None when the parentheses do not close. A '<' right after a name opens
    a template argument list (`k<float, 4>`) unless it is '<<' or '<='."""
    depth, angle, k, spans, begin = 1, 0, start, [], start
    while k < len(blanked):
        c = blanked[k]
        if c == "<" and re.match(r"\w", blanked[k - 1]) and blanked[k + 1:k + 2] not in ("<", "="):
            angle += 1
        elif c == ">" and angle:
            angle -= 1
        elif c == "," and angle:
            pass
        elif c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
            if depth == 0:
                spans.append((begin, k))
                return spans, k
        elif c == "," and depth == 1:
            spans.append((begin, k))
            begin = k + 1
        k += 1
    return None


def _cast_already(arg: str, already: re.Pattern) -> bool:
    """True when `arg` starts with a cast `already` matches, or is `MACRO(... cast ...) rest`: a macro
    whose expansion casts what follows it (a call `f((void*)p)` ends at its ')' and is not such a prefix)."""
    if already.match(arg):
        return True
    head = re.match(r"\w+\s*\(", arg)
    return bool(head) and not arg.endswith(")") and any(already.match(arg[m.start():])
                                                            for m in re.finditer(r"\(|reinterpret_cast", arg))


def _cast_arg(text: str, table: dict[str, int], call: re.Pattern, cast: str, already: re.Pattern) -> str:
    """Each call of a name of `table` (name -> index of the argument) found by `call`, with that argument
    written as `{cast}(argument)`, unless it is empty or cast already: `already` matches it, or it is
    a macro call holding such a cast that prefixes the rest (`ROCM_ONLY((void *)) kernel`)."""
    if not any(name in text for name in table):
        return text
    blanked = cpp.blank(text)
    edits = []
    for m in call.finditer(blanked):
        found = _arg_spans(blanked, m.end())
        index = table[m.group(1)]
        if found is None or len(found[0]) <= index:
            continue
        a, b = found[0][index]
        arg = text[a:b]
        if not arg.strip() or _cast_already(arg.strip(), already):
            continue
        edits.append((a + len(arg) - len(arg.lstrip()), a + len(arg.rstrip())))
    for a, b in reversed(edits):
        text = text[:a] + f"{cast}({text[a:b]})" + text[b:]
    return text


DISPATCH_CALL = re.compile(r"(?<![\w.:>])(AT_DISPATCH_\w+)\s*\(")
TYPE_CALL = re.compile(r"(\.|->)\s*type\s*\(\s*\)$")


def dispatch_scalar_type(text: str) -> str:
    """`AT_DISPATCH_*(x.type(), ...)` -> `AT_DISPATCH_*(x.scalar_type(), ...)`, for the type argument
    wherever the variant takes it (`AT_DISPATCH_FLOATING_TYPES_AND(kBFloat16, x.type(), ...)`) and for
    `x->type()`. Tensor::type() is the
    DeprecatedTypeProperties, whose implicit conversion to ScalarType PyTorch 2.x removed (measured
    with the dev image's PyTorch 2.14 headers: "no viable conversion from 'const DeprecatedTypeProperties'
    to 'torch::headeronly::ScalarType'"); scalar_type() is the same type on every PyTorch since 1.0,
    on CUDA and ROCm builds alike."""
    if "AT_DISPATCH_" not in text or ".type" not in text:
        return text
    blanked = cpp.blank(text)
    edits = []
    for m in DISPATCH_CALL.finditer(blanked):
        found = _arg_spans(blanked, m.end())
        if found is None:
            continue
        for a, b in found[0]:
            t = TYPE_CALL.search(blanked[a:b].rstrip())
            if t:
                edits.append((a + t.start(), a + len(blanked[a:b].rstrip()), t.group(1)))
    for a, b, accessor in reversed(edits):
        text = text[:a] + accessor + "scalar_type()" + text[b:]
    return text


def hip_macros_undone(text: str, names: frozenset[str]) -> str:
    """#undef after the includes for each macro of `names` (sysdeps.hip_leaked_macros, less those the
    tree #defines itself) that this file's code uses as an identifier: HIP's amd_device_functions.h
    defines MASK1 and MASK2, so optimum-quanto 0.2.7's `constexpr int MASK1 = 0x80000000;` reads
    `constexpr int 0x00ff00ff = ...` ("expected unqualified-id"); CUDA defines no such macro."""
    if not names:
        return text
    code = "\n".join(line for line in cpp.blank(text).split("\n") if not line.lstrip().startswith("#"))
    used = sorted(names & set(re.findall(r"\b[A-Z_][A-Z0-9_]*\b", code)))
    if not used:
        return text
    block = ("// HIP's headers define these names as macros; this file's own identifiers of the same name\n"
             + "".join(f"#undef {name}\n" for name in used))
    return insert_after_includes(text, block)


HELPERS_END = "}  // namespace rocmig_ptx\n"  # the last line of a rocmig_ptx helper block (ptx.helpers_for)
HALF2_MINMAX = re.compile(r"(?<![\w.:>])__(hmax2|hmin2|hmax2_nan|hmin2_nan)(\s*\()")
HALF2_MINMAX_BLOCK = (  # under hip_fp16.h's include guard, as the bf16 pairs
    "#if !defined(ROCMIG_HALF2_MINMAX) && defined(HIP_INCLUDE_HIP_AMD_DETAIL_HIP_FP16_H)\n#define ROCMIG_HALF2_MINMAX\n"
    "// CUDA's __hmax2 / __hmin2 (/ _nan) on __half2, absent from HIP 7.2 (which has them for bf16 only):\n"
    "// lane by lane as cuda_fp16.hpp defines them (rocmig_ptx::hminmax); other types go to HIP's own\n"
    "__host__ __device__ inline __half2 rocmig_h2minmax(__half2 a, __half2 b, bool max, bool nan_wins) {\n"
    "  return __builtin_bit_cast(__half2, rocmig_ptx::h2minmax(__builtin_bit_cast(unsigned, a), "
    "__builtin_bit_cast(unsigned, b), max, nan_wins));\n}\n"
    + "".join(f"__host__ __device__ inline __half2 rocmig_{name}(__half2 a, __half2 b) {{ return rocmig_h2minmax(a, b, "
              f"{'true' if 'max' in name else 'false'}, {'true' if 'nan' in name else 'false'}); }}\n"
              f"template <class T> __host__ __device__ inline T rocmig_{name}(T a, T b) {{ return __{name}(a, b); }}\n"
              for name in ("hmax2", "hmin2", "hmax2_nan", "hmin2_nan"))
    + "#endif\n")


def half2_minmax(text: str, helpers_for: Callable[[str, str], str]) -> str:
    """__hmax2 / __hmin2 / __hmax2_nan / __hmin2_nan -> rocmig_ overloads (HALF2_MINMAX_BLOCK, after the
    rocmig_ptx helpers it calls: helpers_for(code, present) is ptx.helpers_for), where the file does not
    define the names itself (gptqmodel 7.7.0's qqq_gemm.cu clamps half2 values with them; HIP 7.2
    declares them for __hip_bfloat162 only)."""
    if "__hm" not in text:
        return text
    renamed = _calls_renamed(text, HALF2_MINMAX, r"\b\w+\s+__{name}\s*\(\s*(?:const\s+)?\w+\s+\w+\s*,")
    if renamed is None:
        return text
    text = renamed
    block = helpers_for(HALF2_MINMAX_BLOCK, text) + HALF2_MINMAX_BLOCK
    end = text.rfind(HELPERS_END)
    if end >= 0:  # the file has helpers already: the overloads (and the helpers they add) go right below them
        end += len(HELPERS_END)
        return text[:end] + block + text[end:]
    return insert_after_includes(text, block)


SPLIT_CAST = re.compile(r"reinterpret_cast\s*<\s*const\s+void\s*\*\s*>\s*\(")


def _unclosed_template(code: str) -> bool:
    """True when `code` (blanked) opens a template argument list (`name<`) that it does not close."""
    depth = 0
    for k, c in enumerate(code):
        if c == "<" and k and re.match(r"\w", code[k - 1]) and code[k + 1:k + 2] not in ("<", "="):
            depth += 1
        elif c == ">" and depth:
            depth -= 1
    return depth > 0


def split_casts_undone(text: str) -> str:
    """hipify-perl 7.2 casts the first argument of cudaFuncSetAttribute and its kin to const void*
    but closes the cast at the first comma, inside a template argument list:
    `reinterpret_cast<const void*>(Marlin<THREADS), STAGES>` (optimum-quanto 0.2.7's Marlin). Such a
    cast is taken out again (func_pointer_cast then casts the whole argument)."""
    if "reinterpret_cast" not in text:
        return text
    blanked = cpp.blank(text)
    edits = []
    for m in SPLIT_CAST.finditer(blanked):
        k = cpp.closing_paren(blanked, m.end())
        if k is not None and _unclosed_template(blanked[m.end():k - 1]):
            edits.append((m.start(), m.end(), k - 1))
    for start, inner, close in reversed(edits):
        text = text[:start] + text[inner:close] + text[close + 1:]
    return text


def func_pointer_cast(text: str) -> str:
    """The kernel argument of HIP's function-attribute calls cast to const void* (see module doc), after
    hipify-perl's casts that end inside a template argument list are taken out (split_casts_undone)."""
    return _cast_arg(split_casts_undone(text), FUNC_POINTER_ARG, FUNC_POINTER_CALL, "reinterpret_cast<const void*>",
                     VOID_POINTER)


# HIP function -> index of its `void**` out argument that CUDA's cuda_runtime.h also takes as `T**`
# (`template<class T> cudaHostGetDevicePointer(T **pDevice, ...)` calls the C function with
# `(void**)(void*)pDevice`); HIP 7.2's hip_runtime_api.h has a T** template for hipMalloc, hipHostMalloc,
# hipHostAlloc, hipMallocManaged and hipMallocPitch, but not for these (measured: "no matching function").
OUT_POINTER_ARG = {"hipHostGetDevicePointer": 0, "hipMallocHost": 0}
OUT_POINTER_CALL = re.compile(r"(?<![\w.:>])(" + "|".join(OUT_POINTER_ARG) + r")\s*\(")
VOID_POINTER_POINTER = re.compile(r"^(?:reinterpret_cast\s*<\s*void\s*\*\s*\*\s*>|\(\s*void\s*\*\s*\*\s*\))")


def out_pointer_cast(text: str) -> str:
    """The `T**` out argument of hipHostGetDevicePointer / hipMallocHost cast to void**, as CUDA's
    template overloads do (OUT_POINTER_ARG)."""
    return _cast_arg(text, OUT_POINTER_ARG, OUT_POINTER_CALL, "(void**)", VOID_POINTER_POINTER)


# nvcc includes cuda_runtime.h in every .cu unit before its first line, and cuda_runtime.h's
# crt/common_functions.h includes <string.h>, <time.h>, <new>, <stdio.h>, <stdlib.h> and <assert.h>
# (CUDA 12's header, lines 85-174), so .cu host code calls memcpy or malloc without including them.
# hipcc's HIP headers declare only the device memcpy / memset / malloc / free.
IMPLICIT_HEADERS = (
    ("string.h", r"\b(?:memcpy|memset|memcmp|memmove|strlen|strcpy|strncpy|strcmp|strncmp|strcat|strchr|strrchr|strstr|strerror)\s*\("),
    ("stdio.h", r"\b(?:printf|fprintf|sprintf|snprintf|puts|fputs|fopen|fclose|fread|fwrite|fflush|fgets|perror|getchar)\s*\(|\bstderr\b|\bstdout\b"),
    ("stdlib.h", r"\b(?:malloc|calloc|realloc|free|exit|abort|atoi|atol|atof|strtol|strtod|rand|srand|qsort|getenv|system)\s*\(|\bEXIT_(?:SUCCESS|FAILURE)\b|\bRAND_MAX\b"),
    ("time.h", r"\b(?:clock|time|difftime|localtime|strftime)\s*\(|\bCLOCKS_PER_SEC\b"),
    ("assert.h", r"\bassert\s*\("),
    ("math.h", r"(?<![\w.:])(?:isfinite|isnan|isinf|fabsf?|sqrtf?|expf?|logf?|powf?|tanhf?|floorf?|ceilf?|roundf?|fmaxf?|fminf?)\s*\("),
)
def _after_leading_includes(text: str) -> int:
    """Offset just past the last of the text's leading #include lines (pch.include_lines), 0 when it
    starts with anything else."""
    leading = pch.include_lines(text)
    if not leading:
        return 0
    lines = text.split("\n")
    return min(sum(len(line) + 1 for line in lines[:leading[-1][0] + 1]), len(text))


def nvcc_implicit_headers(text: str) -> str:
    """The C headers nvcc's implicit cuda_runtime.h gives a .cu unit (IMPLICIT_HEADERS), each included
    when the unit uses a name it declares and does not include it or its <c...> form itself:
    `memcpy(h_a, src, n)` in host code of a .cu unit then finds <string.h>'s, as under nvcc, not only
    HIP's __device__ one. They go after the unit's leading #include lines, so units keep sharing a
    precompiled header of those (pch.py); a C header included once more, or later, declares the same
    names. The unit's own text is not otherwise changed."""
    blanked = cpp.blank_code(text)
    missing = [h for h, uses in IMPLICIT_HEADERS
               if re.search(uses, blanked)
               and not re.search(rf'^[ \t]*#[ \t]*include[ \t]*[<"](?:{re.escape(h)}|c{re.escape(h[:-2])})[>"]', text, re.M)]
    if not missing:
        return text
    block = "".join(f"#include <{h}>  // nvcc's cuda_runtime.h includes it in every .cu unit\n" for h in missing)
    at = _after_leading_includes(text)
    if at and not text[:at].endswith("\n"):
        block = "\n" + block
    return text[:at] + block + text[at:]


# a HIP or ROCm library header (C++ templates under __cplusplus) included inside an `extern "C" {` block:
# the translation of a C header such as cuda.h or nvcuvid's includes, which C++ linkage rejects
EXTERN_C_OPEN = re.compile(r'^[ \t]*extern[ \t]+" "[ \t]*\{', re.MULTILINE)
CPLUSPLUS_TEST = re.compile(r"^[ \t]*#[ \t]*(?:ifdef[ \t]+__cplusplus|if[ \t]+defined[ \t]*\(?[ \t]*__cplusplus)\b[^\n]*\n\Z")
HIP_INCLUDE_LINE = re.compile(
    r'^[ \t]*#[ \t]*include[ \t]*<(?:hip/|hipblas|hipblaslt|hiprand|hipfft|hipsparse|hipsolver|hipcub|rocblas|rccl)'
    r'[^>\n]*>[^\n]*$', re.MULTILINE)


def hip_includes_out_of_extern_c(text: str) -> str:
    """`#include <hip/hip_runtime.h>` (or a ROCm library header) inside an `extern "C" {` block -> the same
    include also before the block (before its `#ifdef __cplusplus` line), so the header's C++ templates get
    C++ linkage; its include guard makes the one inside the block empty. A C header the block wrapped (cuda.h,
    nvcuvid.h) became a C++ header in translation: PyNvCodec's decoder.h wraps `#include <cuda.h>` in
    `extern "C"`, and clang stops at "templates must have C++ linkage" inside libstdc++."""
    if "extern" not in text or "#" not in text:
        return text
    blanked = cpp.blank(text)
    edits: list[tuple[int, str]] = []
    for m in EXTERN_C_OPEN.finditer(blanked):
        end = _block_end(blanked, m.end() - 1)
        includes = [text[i.start():i.end()].strip() for i in HIP_INCLUDE_LINE.finditer(blanked, m.end(), end)]
        if not includes:
            continue
        start = m.start()
        line_before = blanked.rfind("\n", 0, start - 1) + 1 if start else 0
        if start and CPLUSPLUS_TEST.match(blanked[line_before:start]):
            start = line_before
        edits.append((start, "".join(f"{line}  // rocmig: before extern \"C\" (C++ templates)\n" for line in includes)))
    for at, insert in sorted(edits, reverse=True):
        text = text[:at] + insert + text[at:]
    return text


# `kernel << <grid, block >> > (args)`: the launch as an editor's C++ formatter spaces it (Visual
# Studio's), which nvcc's front end accepts and clang does not (`<< <` is a shift then a less-than).
SPACED_LAUNCH = re.compile(r"([\w>])(\s*)<<\s+<(?!<)([^;]*?)>>\s+>(?!>)(\s*\()")


def launch_spelling(text: str) -> str:
    """`k << <g, b >> >(a)` -> `k <<<g, b>>>(a)`: only a launch opened by `<< <` (never valid C++
    otherwise) after a name or a template argument list (`K<T>\n << <g, b >> >\n (a)`: NVIDIA's Video
    Codec SDK ColorSpace.cu), closed by the first `>> >` before its `(`; a template argument list ending
    `>> >` elsewhere is not touched. The text between the name and the launch (a line break) is kept."""
    blanked = cpp.blank(text)
    out, last = [], 0
    for m in SPACED_LAUNCH.finditer(blanked):
        out.append(text[last:m.start()] + m.group(1) + text[m.start(2):m.end(2)] + "<<<" + text[m.start(3):m.end(3)] + ">>>"
                   + text[m.start(4):m.end()])
        last = m.end()
    return "".join(out) + text[last:] if out else text


CUDART_CALLING = re.compile(r"\b(?:CUDART_CB|CUDARTAPI|CUDAAPI)\b[ \t]*")


# `X::template name(args)` / `x.template name(args)`: the keyword before a name without template
# arguments, which nvcc's front end and clang before 19 accept; clang 19 and later reject it by default
# (-Wmissing-template-arg-list-after-template-kw, [temp.names]/5 since CWG 96). CUB 1.8's thread_store.cuh
# (not `x.template operator()<N>()`, a templated call operator with its argument list after the `()`)
TEMPLATE_WITHOUT_ARGS = re.compile(r"(::|\.|->)(\s*)template\s+(?!operator\b)([A-Za-z_]\w*)(?=\s*\()")


def template_keyword_without_args(text: str) -> str:
    """`::template f(args)` -> `::f(args)` (also after `.` and `->`) where no template argument list
    follows the name: the call is to the same dependent member, its template arguments deduced either
    way, so dropping the keyword changes nothing but what clang 19 and later accept. Code in comments
    and strings is left."""
    if "template" not in text:
        return text
    blanked = cpp.blank(text)
    spans = [(m.start(), m.end(), m.group(1) + m.group(2) + m.group(3)) for m in TEMPLATE_WITHOUT_ARGS.finditer(blanked)]
    for start, end, kept in reversed(spans):
        text = text[:start] + kept + text[end:]
    return text


HIPRTC_LINK = re.compile(r"\bhiprtcLink\w*")
HIPRTC_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*[<"](?:hip/)?hiprtc\.h[>"]', re.MULTILINE)


def hiprtc_link_header(text: str) -> str:
    """`#include <hip/hiprtc.h>` after the includes of a file that names hipRTC's linker (hiprtcLinkState,
    hiprtcLinkCreate, ...) without including it: hipify maps the driver API's CUlinkState / cuLink* there, and a
    file that included only cuda.h (the CUDA samples' ptxjit.cpp) then misses the declarations, which
    hip_runtime.h does not hold."""
    if "hiprtcLink" not in text or HIPRTC_INCLUDE.search(text) or not HIPRTC_LINK.search(cpp.blank(text)):
        return text
    return insert_after_includes(text, "#include <hip/hiprtc.h>  // rocmig: hiprtcLink*\n", HIPRTC_LINK)


# A template's head (`template <typename S, typename T, size_t N>`) and, in its body, a call of a member template
# of a class template specialization without the `template` keyword: `vec_cast<T, S>::cast<N>(...)`
TEMPLATE_HEAD = re.compile(r"\btemplate\s*<((?:[^<>;{}]|<[^<>;{}]*>)*)>")
# found from its `>::f<N>(` end, then back to the class on the same line
QUALIFIED_MEMBER_CALL = re.compile(r">\s*::\s*(?!template\b)([A-Za-z_]\w*)\s*<(?:[^<>;{}()]|<[^<>;{}()]*>)*>\s*\(")
# `C<T>(args).f<N>(`: a member template called on a temporary of a dependent class; found from its
# `).f<N>(` end, then back to the class before the matching `(`
MEMBER_TEMPLATE_CALL = re.compile(r"\)\s*\.\s*(?!template\b)([A-Za-z_]\w*)\s*<(?:[^<>;{}()]|<[^<>;{}()]*>)*>\s*\(")
# the class template specialization that ends where a search stops (`vec_cast<tgt_float_t, src_float_t>`)
TEMPORARY_CLASS = re.compile(r"(?<![\w.>])([A-Za-z_]\w*)\s*<((?:[^<>;{}()]|<[^<>;{}()]*>)*)>\s*$")


def _template_parameters(head: str) -> set[str]:
    """The parameter names of a template head's list (`typename T, size_t N = 4, class... Ts`)."""
    names = set()
    for part in re.split(r",(?![^<>]*>)", head):
        m = re.search(r"([A-Za-z_]\w*)\s*$", part.split("=")[0].strip())
        if m and m.group(1) not in ("typename", "class"):
            names.add(m.group(1))
    return names


def dependent_template_keyword(text: str) -> str:
    """`C<T>::f<N>(args)` -> `C<T>::template f<N>(args)` in a template whose parameter T the qualifier's arguments
    name: the member is then a dependent name, and C++ reads `f < N > (args)` as comparisons unless the keyword
    says it is a template ([temp.names]/4). nvcc's front end takes it as a template anyway; clang rejects the call
    ("reference to overloaded function could not be resolved": flashinfer-python 0.2.2's vec_dtypes.cuh,
    `vec_cast<tgt_float_t, src_float_t>::cast<vec_size>(...)`); `C<T>(args).f<N>(...)` on a temporary of such a
    class alike (its sampling.cuh: `BlockReduce<T, BLOCK_THREADS, ALGO>(storage).Sum<VEC_SIZE>(v)`). Only calls
    with an explicit template argument list are changed, inside the body that follows the template head."""
    if "template" not in text:
        return text
    blanked = cpp.blank(text)
    closes: dict[int, int] = {}  # offset of each `{` -> just past its `}`, in one pass (headers run to megabytes)
    opened: list[int] = []
    for brace in re.finditer(r"[{}]", blanked):
        if brace.group() == "{":
            opened.append(brace.start())
        elif opened:
            closes[opened.pop()] = brace.end()
    scopes: list[tuple[int, int, set[str]]] = []  # (body start, body end, the template's parameters)
    for head in TEMPLATE_HEAD.finditer(blanked):
        params = _template_parameters(head.group(1))
        brace = blanked.find("{", head.end())
        semicolon = blanked.find(";", head.end())
        if params and brace >= 0 and not 0 <= semicolon < brace:
            scopes.append((brace, closes.get(brace, len(blanked)), params))
    if not scopes:
        return text

    def dependent(at: int, arguments: str) -> bool:
        names = set(re.findall(r"[A-Za-z_]\w*", arguments))
        return any(start <= at < end and names & params for start, end, params in scopes)

    inserts = set()
    for member in QUALIFIED_MEMBER_CALL.finditer(blanked):
        qualifier = TEMPORARY_CLASS.search(blanked, blanked.rfind("\n", 0, member.start()) + 1, member.start() + 1)
        if qualifier and dependent(qualifier.start(), qualifier.group(2)):
            inserts.add(member.start(1))
    for member in MEMBER_TEMPLATE_CALL.finditer(blanked):
        opening = cpp.matching_open(blanked, member.start())
        line_start = blanked.rfind("\n", 0, opening) + 1 if opening is not None else 0
        temporary = TEMPORARY_CLASS.search(blanked, line_start, opening) if opening is not None else None
        if temporary and dependent(temporary.start(), temporary.group(2)):
            inserts.add(member.start(1))
    for at in sorted(inserts, reverse=True):
        text = text[:at] + "template " + text[at:]
    return text


# torch.utils.hipify 2.14 turns std::max / std::min into ::max / ::min in .cu / .cuh files (its
# MATH_TRANSPILATIONS); HIP's ::max / ::min overloads are no constexpr functions, std's are (and clang's HIP
# mode compiles constexpr functions for the device too)
TORCH_MINMAX = re.compile(r"(?<![\w:])::(max|min)(?=\s*\()")


def std_minmax_restored(text: str, cuda_lines: list[str], mapping: list[int | None]) -> str:
    """`::max(` / `::min(` on a line whose CUDA line (mapping: CUDA line -> this text's line, 0-based) calls
    std::max / std::min as often -> std:: again: the CUDA code's own function. A constexpr initializer
    (`constexpr uint32_t vec_size = std::max(16U / sizeof(T), HEAD_DIM / 32U);`, flashinfer-python 0.2.2's
    cascade.cuh) needs it; elsewhere it is the same call the CUDA code made."""
    if "::m" not in text:
        return text
    lines = text.split("\n")
    for i, cuda in enumerate(cuda_lines):
        j = mapping[i] if i < len(mapping) else None
        if j is None or j >= len(lines) or "std::m" not in cuda:
            continue
        wanted = len(re.findall(r"\bstd\s*::\s*(?:max|min)\s*\(", cuda))
        if wanted and len(TORCH_MINMAX.findall(lines[j])) == wanted:
            lines[j] = TORCH_MINMAX.sub(r"std::\1", lines[j])
    return "\n".join(lines)


# Trailing parameters that CUDA's runtime declares with a default and HIP 7.2 without one, so that a call
# leaving them out finds no HIP candidate: name -> (index of the first such parameter, CUDA's defaults from
# there on). Read from CUDA 12's cuda_runtime_api.h (`__dv(...)`) and cuda_runtime.h (C++ template
# overloads) against ROCm 7.2.4's hip_runtime_api.h (`__dparm(...)`); a default HIP does declare (the
# symbol copies' stream) is left to HIP.
CUDA_DEFAULTS = {
    "hipMemcpyToSymbolAsync": (3, ("0", "hipMemcpyHostToDevice")),
    "hipMemcpyFromSymbolAsync": (3, ("0", "hipMemcpyDeviceToHost")),
    "hipMalloc3DArray": (3, ("0",)),
    "hipMemcpy2DArrayToArray": (8, ("hipMemcpyDeviceToDevice",)),
    "hipLaunchCooperativeKernel": (4, ("0", "0")),
    "hipLaunchCooperativeKernelMultiDevice": (2, ("0",)),
    "hipSignalExternalSemaphoresAsync": (3, ("0",)),
    "hipWaitExternalSemaphoresAsync": (3, ("0",)),
    "hipGraphInstantiateWithFlags": (2, ("0",)),
}
DEFAULTED_CALL = re.compile(r"(?<![\w.:>])(" + "|".join(CUDA_DEFAULTS) + r")\s*\(")


def cuda_default_arguments(text: str) -> str:
    """Calls of the HIP APIs in CUDA_DEFAULTS that leave out trailing arguments CUDA defaults get CUDA's
    defaults appended: hipMalloc3DArray(&a, &desc, extent) -> hipMalloc3DArray(&a, &desc, extent, 0);
    hipMemcpyToSymbolAsync(symbol, src, count) -> (..., count, 0, hipMemcpyHostToDevice). Calls that pass
    every argument, calls with fewer than CUDA's required ones, and names the file declares or #defines
    itself are left."""
    if not any(name in text for name in CUDA_DEFAULTS):
        return text
    blanked = cpp.blank(text)
    own = set(re.findall(r"(?:hipError_t|#\s*define)\s+(hip\w+)\b", blanked))
    edits = []
    for m in DEFAULTED_CALL.finditer(blanked):
        first, defaults = CUDA_DEFAULTS[m.group(1)]
        end = cpp.closing_paren(blanked, m.end())
        if m.group(1) in own or end is None:
            continue
        given = len(cpp.split_args(text[m.end():end - 1], blanked[m.end():end - 1]))
        if first <= given < first + len(defaults):
            edits.append((blanked.rindex(")", m.end(), end), "".join(", " + d for d in defaults[given - first:])))
    for at, added in reversed(edits):
        text = text[:at] + added + text[at:]
    return text


# Standard library names whose header older libstdc++ releases included from other headers (<string>,
# <memory>, <functional>, ...) and newer ones no longer do (the dev image's libstdc++ 16; GCC 13 dropped
# <cstdint> from many): code written against the old transitive includes fails in a current toolchain
# whatever the GPU (horovod 0.28.1's common.h throws std::logic_error after <functional>, <memory>,
# <string> and <unordered_map> only; byteps 0.2.5's ready_table.h names std::string after <mutex>,
# <thread> and <unordered_map>)
STD_HEADERS = (
    ("stdexcept", r"logic_error|runtime_error|invalid_argument|out_of_range|domain_error|length_error|range_error"
                  r"|overflow_error|underflow_error"),
    ("string", r"string|wstring|basic_string|to_string|stoi|stol|stoll|stoul|stoull|stof|stod"),
    ("cstdint", r"u?int(?:8|16|32|64)_t|u?intptr_t"),
    ("limits", r"numeric_limits"),
    ("sstream", r"[io]?stringstream"),
    ("iomanip", r"setw|setprecision|setfill"),
)


def std_headers(text: str) -> str:
    """`#include <H>` for each standard header H of STD_HEADERS whose names the file uses as `std::name`
    without including H: placed after the #include lines above the first use (insert_after_includes),
    and only in a file that has an #include before that use (a fragment pasted into another file's
    code is left) and no `extern "C" {` block (whose includes a C++ header must not follow). A standard
    header included once more changes nothing."""
    if "std::" not in text or re.search(r'extern\s*"C"\s*\{', text):
        return text
    blanked = cpp.blank(text)
    have = {m.group(2) for m in includes.INCLUDE.finditer(text) if m.group(1) == "<"}
    for header, names in STD_HEADERS:
        if header in have:
            continue
        use = re.compile(rf"\bstd::(?:{names})\b")
        first = use.search(blanked)
        if not first or not any(m.start() < first.start() for m in includes.INCLUDE.finditer(text)):
            continue
        text = insert_after_includes(text, f"#include <{header}>  // newer libstdc++ headers no longer include it\n", use)
        blanked, have = cpp.blank(text), have | {header}
    return text


def cudart_calling_convention(text: str) -> str:
    """CUDART_CB / CUDARTAPI / CUDAAPI dropped: CUDA's driver_types.h defines them as `__stdcall` on
    Windows and as nothing elsewhere, and HIP has no such macro, so `void CUDART_CB cb(...)` does not
    compile; on Linux the result is what CUDA's preprocessor makes. A tree that defines one keeps it."""
    if re.search(r"#\s*define\s+(?:CUDART_CB|CUDARTAPI|CUDAAPI)\b", text):
        return text
    blanked = cpp.blank(text)
    spans = [m.span() for m in CUDART_CALLING.finditer(blanked)]
    for start, end in reversed(spans):
        text = text[:start] + text[end:]
    return text


FUNCTION_MACRO = re.compile(r"^[ \t]*#[ \t]*define[ \t]+(\w+)\(([^)\n]*)\)", re.MULTILINE)
LAUNCH_GGL = re.compile(r"(?<![\w.:>])hipLaunchKernelGGL\s*\(")


def _pasting_macros(blanked: str) -> dict[str, int]:
    """{function-like macro: index of its first parameter that its body pastes a token onto (`x##P`,
    `P##x`; `...` as __VA_ARGS__)} of the macros `blanked` defines."""
    found = {}
    for m in FUNCTION_MACRO.finditer(blanked):
        body = blanked[m.end():warp.definition_end(blanked, m.start())]
        if "##" not in body:
            continue
        pasted = set(re.findall(r"##\s*(\w+)", body)) | set(re.findall(r"(\w+)\s*##", body))
        params = ["__VA_ARGS__" if p.strip() == "..." else p.strip() for p in m.group(2).split(",")]
        first = next((i for i, p in enumerate(params) if p in pasted), None)
        if first is not None:
            found[m.group(1)] = first
    return found


def launch_token_paste(text: str) -> str:
    """`hipLaunchKernelGGL((K), grid, block, shmem, stream, args...)` -> `K<<<grid, block, shmem,
    stream>>>(args...)` in the arguments that a macro pastes a token onto. torch.utils.hipify rewrites
    every `<<<...>>>` launch into hipLaunchKernelGGL, so ColossalAI 0.5.0's `general_##__VA_ARGS__` (with
    `rms_layernorm_kernel<T, N><<<...>>>(...)` as the argument) pastes `general_hipLaunchKernelGGL`
    instead of `general_rms_layernorm_kernel`; hipcc compiles the triple-chevron launch as CUDA does,
    with the same grid, block, dynamic LDS bytes and stream."""
    if "##" not in text or "hipLaunchKernelGGL" not in text:
        return text
    blanked = cpp.blank(text)
    edits: dict[int, tuple[int, str]] = {}
    for name, first in _pasting_macros(blanked).items():
        for call in re.finditer(rf"(?<![\w#])\b{name}\s*\(", blanked):
            if re.search(r"#[ \t]*define[ \t]+$", blanked[blanked.rfind("\n", 0, call.start()) + 1:call.start()]):
                continue
            found = _arg_spans(blanked, call.end())
            if found is None or len(found[0]) <= first:
                continue
            for launch in LAUNCH_GGL.finditer(blanked, found[0][first][0], found[1]):
                inner = _arg_spans(blanked, launch.end())
                if inner is None or len(inner[0]) < 5:
                    continue
                args = [text[a:b] for a, b in inner[0]]
                kernel = args[0].strip()
                kernel = kernel[1:-1].strip() if kernel.startswith("(") and kernel.endswith(")") else kernel
                launch_args = ",".join(args[5:]).lstrip(" ")
                edits[launch.start()] = (inner[1] + 1, f"{kernel}<<<{', '.join(a.strip() for a in args[1:5])}>>>({launch_args})")
    for start in sorted(edits, reverse=True):
        end, new = edits[start]
        text = text[:start] + new + text[end:]
    return text
