"""Exact fixups applied to hipify-perl's output. Each one rewrites only what has a single correct
HIP form; everything else stays a scanner finding with a suggested rewrite.

Fixups (ids used in rules.yaml `fixed_by` and in the report):
  vendored-toolkit-header  an #include that finds the tree's copy of a CUDA toolkit header (its include
                        guard) -> hipify-perl's HIP header for that name
  tree-include-kept     an #include of the tree's own header that the translator renamed to a name found
                        nowhere ("cuda_stream.h" -> "hip_stream.h") keeps its own name
  translator-self-define  a `#define cudaX hipY` of the project that the translator made `#define hipY hipY`
                        is commented out (a no-op at best; it hides HIP's own macro of that name)
  hipify-dot-identifier an identifier hipify-perl took for a header name (`cublas_h` -> `hipblas.h`: its
                        include patterns leave the dot unescaped) gets its CUDA name back
  hip-header-layout     <hipblas.h> -> <hipblas/hipblas.h>, same for hipRAND, hipSPARSE, ... (ROCm >= 6
                        installs the library headers in per-library folders)
  bf16-header-type      cuda_bf16.h -> hip/hip_bf16.h; __nv_bfloat16(2) -> __hip_bfloat16(2), __nv_bfloat16(2)_raw ->
                        __hip_bfloat16(2)_raw (the same unsigned short x / x, y structs); an older
                        hipify's hip_bfloat16 on lines that held __nv_bfloat16 -> __hip_bfloat16; a file
                        naming __hip_bfloat16 without a bf16 include gets hip/hip_bf16.h
  fp8-ocp               cuda_fp8.h -> cuda_fp8_ocp.h, NVIDIA's OCP E4M3 / E5M2 conversions in software (hipify's
                        __hip_fp8_e4m3_fnuz is another encoding); __nv_fp8_e4m3 (or hipify's FNUZ name for it)
                        -> rocmig_fp8::e4m3, __nv_cvt_* -> rocmig_fp8::cvt_*, __NV_E4M3 -> rocmig_fp8::E4M3 (fp8.py)
  thrust-hip-policy     thrust::cuda::par(_nosync) -> thrust::hip::par(_nosync), system::cuda -> system::hip,
                        thrust::cuda_category() -> thrust::hip_category() (rocThrust's error category),
                        THRUST_DEVICE_SYSTEM_CUDA -> THRUST_DEVICE_SYSTEM_HIP, thrust/system/cuda/ -> .../hip/
  warp-sync-full-mask   CUDA warp operations -> their exact HIP forms for CUDA's 32-lane warps (warp.py):
                        __shfl*_sync(<all 32 lanes>, v, x) -> __shfl*(v, x, 32); votes and
                        __activemask on the lane's 32-lane group; in a CUDA-only tree every mask;
                        elsewhere a mask of unseen width through warp.TYPED_HELPER's type dispatch
  warp-size-cuda-32     device-code warpSize -> 32 in a CUDA-only tree (CUDA's warpSize is 32 on every
                        NVIDIA GPU; HIP's is the wavefront, 64 on CDNA), except in functions that use
                        WMMA, whose rocWMMA fragments belong to the whole wavefront
  warp-size-host-32     host reads of the device's warp size (prop.warpSize, hipDeviceAttributeWarpSize,
                        at::cuda::warp_size()) -> 32 where warp-size-cuda-32 applies
  hipblas-datatype-v3   hipblasDatatype_t -> hipDataType, hipblasComplex / hipblasDoubleComplex -> hipComplex /
                        hipDoubleComplex when the toolchain's hipBLAS is 3 or later (it removed the types;
                        HIPBLAS_R_* are hipDataType values there, its complex functions take HIP's complex types)
  builtin-types-header, struct-typedef-name, graphics-map-flags, gl-interop-header, cub-hipcub-headers, libcudacxx-thrust, libcudacxx-std, libcudacxx-unused-include, ptx-trap, event-wait-flags, event-create-flags,
  cuda-library-header, math-constants, thrust-headers, restrict-by-value, vector-brace-elision, half-alias-names, grid-constant, int-min-max, mixed-sign-min-max, merged-error-overloads, cache-hint-load-store, half-atomic-add, bf16-rn-conversion, bf16-pair-conversion, make-bf16-pair, half2-min-max, nccl-rccl, cuda-trap, gemm-tensor-op-algo, gemm-ex-compute-type, hiprtc-link-header, blas-status-string, bf16x2-shuffles, simd-video-intrinsics, ffs-cuda-signature, atomic-system-scope, nvtx-roctx,
  hip-include-extern-c  `#include <hip/...>` inside an `extern "C" {` block (a C header's translation) also
                        included before the block, where its C++ templates get C++ linkage (features.py)
  unmapped-status-case  `case X: return "...";` of a CUDA library status or driver error the translator left
                        (HIP's library has no such value) -> commented out (features.py)
  cg-reduce, cg-memcpy-header, wmma-rocwmma, cuda-runtime-guard, hip-runtime-include-once: CUDA features hipify-perl leaves (features.py)
  directed-rounding     __fadd_rd / __fdiv_ru / __dsqrt_rz / ... (CUDA's directed-rounding arithmetic, absent from
                        HIP) -> exact rocmig_* helpers inserted once per file (rounding.py); double __fma_r* left
  libcudacxx-atomic     cuda::atomic / cuda::atomic_ref / cuda::thread_scope_* / cuda::memory_order_* (also under
                        cuda::std::) -> cuda_atomic.h's rocmig_cuda:: types on HIP's scoped atomic builtins, put
                        where <cuda/atomic> or <cuda/std/atomic> was included
  launch-ex             cudaLaunchKernelEx / cudaLaunchConfig_t / cudaLaunchAttribute* -> cuda_launch_ex.h's
                        rocmig_launch names: CUDA's layout, launched through hipLaunchKernelEx, PDL dropped
                        (HIP keeps stream order; its device calls do nothing) (launch.py)
  texture-soft          texture objects, CUDA arrays and their fetches -> cuda_texture_soft.h's (texels in device
                        memory, CUDA's addressing and filtering in code, checked against NVIDIA's texture units)
                        in every file of a tree that fetches from texture objects and uses nothing the header
                        lacks (surfaces, texture references, mipmaps, gathers) (texture.py)
  cuda-arch-branch      `#if __CUDA_ARCH__ >= N` branches whose AMD side only traps (assert(0)) get
                        `|| defined(__AMDGCN__)` where every asm statement in them translates (archbranch.py)
  cuda-arch-hostdev     `#ifdef __CUDA_ARCH__` around `#define Q __host__ __device__` with an #else that defines Q
                        without __device__ -> `#if defined(__CUDA_ARCH__) || defined(__HIP__)` (features.py)
  ptx-inline-asm        asm statements whose every PTX instruction has an exact C++ form (lop3, prmt, f16x2
                        arithmetic, cp.async as a completed copy, ld/st with cache hints, ...) -> that C++
                        with helpers inserted once per file, and __cvta_generic_to_shared (absent from HIP)
                        -> its LDS-offset helper (ptx.py; compared with NVIDIA's PTX on random data)
  nvcc-implicit-runtime a .cu unit (.hip from torch.utils.hipify) that includes a tree header before any
                        hip/hip_runtime.h gets it first (nvcc's implicit cuda_runtime.h precedes everything;
                        headers test its include guards or use its types)
  texture-iterator-cstring <cstring> before an include that reaches rocPRIM 7.2's texture_cache_iterator.hpp,
                        which calls memset without including it (nvcc's implicit runtime gave CUB <string.h>)
  nvcc-implicit-headers a .cu unit using memcpy / printf / malloc / clock / assert gets the C header nvcc's
                        implicit cuda_runtime.h includes (string.h, stdio.h, stdlib.h, time.h, assert.h)
  cuda-default-arguments  calls that leave out trailing arguments CUDA's runtime defaults and HIP 7.2 does not
                        (hipMalloc3DArray's flags, hipMemcpyToSymbolAsync's offset and kind, hipLaunchCooperativeKernel's
                        shared memory and stream, ...) get CUDA's defaults (features.CUDA_DEFAULTS)
  std-headers           the standard header of std:: names a file uses without including it (std::logic_error ->
                        <stdexcept>, std::string -> <string>, ...): older libstdc++ included them transitively
  dependent-template-keyword `C<T>::f<N>(args)` in a template over T -> `C<T>::template f<N>(args)` (features.py)
  std-min-max           `::max(` / `::min(` that torch.utils.hipify made of the CUDA line's `std::max(` -> std:: again
  template-keyword-without-args `X::template f(args)` -> `X::f(args)` where no template argument list follows
                        (nvcc and clang < 19 accept the keyword there; clang 19+ rejects it: CUB 1.8)
  launch-spelling       `k << <g, b >> >(a)` (a formatter's spacing, nvcc-only) -> `k<<<g, b>>>(a)`
  cudart-calling-convention  CUDART_CB / CUDARTAPI / CUDAAPI dropped (CUDA defines them empty outside Windows)
  func-pointer-cast     the kernel argument of hipFuncGetAttributes / hipFuncSetAttribute / hipFuncSetCacheConfig /
                        hipFuncSetSharedMemConfig -> reinterpret_cast<const void*>(...), as CUDA's template overloads do;
                        hipify-perl's own cast that ends inside a template argument list is taken out first
  hip-macro-undef       #undef after the includes of the HIP headers' plain-named macros (MASK1, MASK2, HW_ID, ...)
                        that the file uses as its own identifiers
  out-pointer-cast      the T** out argument of hipHostGetDevicePointer / hipMallocHost -> (void**)(...), as
                        CUDA's template overloads do (HIP 7.2 has T** templates for hipMalloc and others only)
  own-hip-branch        a chain's CUDA-compiler tests put back where the chain has its own HIP branch
                        (the translators' __CUDACC__ -> __HIPCC__ would make it take the CUDA one; features.py)
  half-shuffle-overloads  c10::Half overloads of the shuffles in files that include PyTorch (features.py)
  half2-raw-members     `r.x` / `r.y` of a __half2_raw variable -> `r.x.x` / `r.y.x`: HIP's members are __half_raw
                        unions over CUDA's unsigned short (features.py)
  syncwarp-mask         __syncwarp(mask) -> __syncwarp(): HIP's masked form refuses 32-bit masks and only checks the
                        mask before the same wavefront-wide fence and barrier (features.py)
  launch-token-paste    hipLaunchKernelGGL((K), g, b, s, q, args) -> K<<<g, b, s, q>>>(args) in an argument that a
                        macro pastes a token onto (`general_##__VA_ARGS__`; features.py)
  half-ldg              __ldg(const c10::Half*) (PyTorch declares it for CUDA compilers only) as a plain load, in
                        files that include PyTorch (features.py)
  dispatch-scalar-type  AT_DISPATCH_*(x.type(), ...) -> x.scalar_type() in files that include PyTorch: the
                        deprecated DeprecatedTypeProperties -> ScalarType conversion is gone in PyTorch 2.x
  vector-operator-guard element-wise float2/int4/... operators (body `return make_T(a.x OP b.x, ...)`,
                        `a.x OP= b.x; ...` or unary `return make_T(-a.x, ...)`) kept for CUDA builds only: HIP's vector types define the same
                        operators, so the user copies are ambiguous (ROCm/hip#3510)
"""

from __future__ import annotations

import difflib
import posixpath
import re
from collections.abc import Callable
from dataclasses import dataclass

from . import archbranch, atomic, cpp, features, fp8, launch, linemap, ptx, rounding, texture, warp

HEADER_LAYOUT = {
    "hipblas.h": "hipblas/hipblas.h",
    "hipblas_v2.h": "hipblas/hipblas.h",
    "hiprand.h": "hiprand/hiprand.h",
    "hiprand_kernel.h": "hiprand/hiprand_kernel.h",
    "hiprand_mtgp32_host.h": "hiprand/hiprand_mtgp32_host.h",
    "hipsparse.h": "hipsparse/hipsparse.h",
    "hipfft.h": "hipfft/hipfft.h",
    "hipfftXt.h": "hipfft/hipfftXt.h",
    "hipsolver.h": "hipsolver/hipsolver.h",
    "hipblaslt.h": "hipblaslt/hipblaslt.h",
    "hipblasLt.h": "hipblaslt/hipblaslt.h",
    "rocblas.h": "rocblas/rocblas.h",
    "rocrand.h": "rocrand/rocrand.h",
    "rocrand_kernel.h": "rocrand/rocrand_kernel.h",
    "rccl.h": "rccl/rccl.h",
    "roctx.h": "roctracer/roctx.h",
}
VECTOR_TYPES = ("float", "double", "int", "uint", "char", "uchar", "short", "ushort", "long", "ulong",
                "longlong", "ulonglong")


@dataclass(frozen=True)
class Fix:
    """One fixup applied to one file: id, what it did, lines (1-based, in the translator's output, the
    text before the first fixup) it changed (an insertion counts at the line it precedes; a line an
    earlier fixup inserted has none), and the unified diff of that step (its hunks count lines of the
    text that step saw)."""

    id: str
    title: str
    lines: tuple[int, ...]
    diff: str


def _changed(before: str, after: str, rel: str, fix_id: str) -> tuple[tuple[int, ...], str]:
    a, b = before.split("\n"), after.split("\n")
    lines: list[int] = []
    for tag, i1, i2, _j1, _j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag != "equal":
            lines.extend(range(i1 + 1, max(i2, i1 + 1) + 1))
    diff = "\n".join(_shortened(list(difflib.unified_diff(a, b, f"a/{rel}", f"b/{rel} ({fix_id})", n=1, lineterm=""))))
    return tuple(sorted(set(lines))), diff


LONG_ADDITION = 16  # added lines in a row that the report's diff shows in full


def _shortened(diff: list[str]) -> list[str]:
    """`diff` (unified, lines) with each run of more than LONG_ADDITION added lines cut to its first 8 and a
    count: a helper block of 200 lines inserted once per file (ptx_helpers.h) would fill the report; the
    migrated file holds it whole."""
    out: list[str] = []
    run: list[str] = []
    for line in diff + [""]:
        if line.startswith("+") and not line.startswith("+++"):
            run.append(line)
            continue
        if len(run) > LONG_ADDITION:
            run = run[:8] + [f"+... ({len(run) - 8} more added lines: see the migrated file)"]
        out.extend(run)
        run = []
        out.append(line)
    return out[:-1]


UNDERSCORE_H = re.compile(r"\b[A-Za-z_]\w*_h\b")
HEADER_TOKEN = re.compile(r"(?<![\w/.])[A-Za-z_][\w/]*\.h\b")


def dot_identifiers(text: str, cuda_lines: list[str], mapping: list[int | None]) -> str:
    """Undo hipify-perl's header-name rewrite of identifiers. hipify-perl 7.2 substitutes header names
    with `s/\\bcublas.h\\b/hipblas.h/g`, the dot unescaped, so the variable `cublas_h` (ggml-cuda.cu:
    `cublasHandle_t cublas_h = ctx.cublas_handle();`) becomes `hipblas.h`. On each line that is not an
    #include, the header-like tokens (`name.h`) the translator added are paired in order with the
    `*_h` identifiers of the CUDA line that it removed, and given back when the counts agree."""
    lines = text.split("\n")
    for i, line in enumerate(cuda_lines):
        j = mapping[i] if i < len(mapping) else None
        if j is None or "_h" not in line or INCLUDE_NAME.match(line):
            continue
        hip = lines[j]
        lost = [m for m in UNDERSCORE_H.findall(line) if not re.search(rf"\b{re.escape(m)}\b", hip)]
        added = [m for m in HEADER_TOKEN.finditer(hip) if m.group(0) not in line]
        if lost and len(lost) == len(added):
            for m, name in reversed(list(zip(added, lost))):
                hip = hip[:m.start()] + name + hip[m.end():]
            lines[j] = hip
    return "\n".join(lines)


SELF_DEFINE = re.compile(r"^([ \t]*)#[ \t]*define[ \t]+([A-Za-z_]\w*)[ \t]+([A-Za-z_]\w*)[ \t]*(?://[^\n]*|/\*[^\n]*\*/[ \t]*)?$")


def self_defines(text: str, cuda_lines: list[str], mapping: list[int | None]) -> str:
    """Comment out the object-like `#define N N` lines the translator made from the project's own
    `#define cudaX N` (LightGBM 4.7.0 cuda_rocm_interop.h: `#define cudaDeviceProp hipDeviceProp_t`
    becomes `#define hipDeviceProp_t hipDeviceProp_t`). After the translation every use already says
    N, so the line changes nothing, except where HIP's headers define N as a macro themselves (HIP 7:
    `#define hipDeviceProp_t hipDeviceProp_tR0600`): then it replaces HIP's definition and N names no
    type. A `#define N N` the CUDA text itself holds (a feature-test idiom) is left alone."""
    lines = text.split("\n")
    for i, line in enumerate(cuda_lines):
        j = mapping[i] if i < len(mapping) else None
        if j is None or j >= len(lines):
            continue
        cuda, hip = SELF_DEFINE.match(line), SELF_DEFINE.match(lines[j])
        if cuda and hip and hip.group(2) == hip.group(3) and cuda.group(2) != cuda.group(3):
            lines[j] = f"{hip.group(1)}// {lines[j].strip()}  (self-referential after hipify: the name is HIP's)"
    return "\n".join(lines)


def header_layout(text: str, cuda_lines: list[str], mapping: list[int | None]) -> str:
    """<hipblas.h> -> <hipblas/hipblas.h> etc. on #include lines."""
    def sub(m: re.Match) -> str:
        return f"{m.group(1)}{m.group(2)}{HEADER_LAYOUT[m.group(3)]}{m.group(4)}"
    names = "|".join(re.escape(k) for k in HEADER_LAYOUT)
    return re.sub(rf'^(\s*#\s*include\s*)([<"])({names})([>"])', sub, text, flags=re.MULTILINE)


BF16_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*[<"](?:hip/)?(?:hip_bf16|amd_detail/amd_hip_bf16)\.h[>"]', re.M)
TOP_INCLUDE = re.compile(r'^[ \t]*#[ \t]*(if|ifdef|ifndef|endif|include)\b[^\n]*\n?', re.M)


BF16_DECLARED = re.compile(r"\busing\s+(?:__)?nv_bfloat16\w*\s*=|\btypedef\b[^;]*\b(?:__)?nv_bfloat16\w*\s*;"
                           r"|#\s*define\s+(?:__)?nv_bfloat16\w*\b|\b(?:struct|class)\s+(?:__)?nv_bfloat16\w*\s*[{:]")


def declares_bf16(blanked_texts: list[str]) -> bool:
    """True when one of the CUDA texts (comments and strings blanked) declares a bfloat16 type name
    itself, e.g. DeepSpeed 0.19.8's fallback `using __nv_bfloat162 = __half2;` for builds without
    BF16_AVAILABLE: hip_bf16.h is then not added to that file, nor anywhere when a header declares
    one (its type would clash with the tree's)."""
    return any(BF16_DECLARED.search(t) for t in blanked_texts)


def bf16_include(text: str) -> str:
    """`#include <hip/hip_bf16.h>` after the first top-level #include line of a file whose code names
    __hip_bfloat16 but which includes no bf16 header itself. In CUDA the type often arrives through
    another header (PyTorch's c10 headers include cuda_bf16.h for CUDA builds, not hip_bf16.h for
    ROCm ones: DeepSpeed 0.19.8 mixed_gemm.cu names __nv_bfloat16 after including c10 only). The
    header declares exactly the type the translation names; a file without a top-level include
    (a fragment included mid-file) is left alone."""
    if not re.search(r"\b__hip_bfloat16", cpp.blank(text)) or BF16_INCLUDE.search(text):
        return text
    depth = 0
    for m in TOP_INCLUDE.finditer(cpp.blank_code(text)):
        word = m.group(1)
        if word.startswith("if"):
            depth += 1
        elif word == "endif":
            depth -= 1
        elif depth == 0:
            end = m.end()
            return text[:end] + ("" if text[:end].endswith("\n") else "\n") + "#include <hip/hip_bf16.h>\n" + text[end:]
    return text


def bf16(text: str, cuda_lines: list[str], mapping: list[int | None], include: bool = True) -> str:
    """cuda_bf16.h / __nv_bfloat16 -> hip_bf16.h / __hip_bfloat16 (see module doc); include: add
    hip_bf16.h where the type is named without it (bf16_include; off when the tree declares the
    type itself: declares_bf16)."""
    text = re.sub(r'(#\s*include\s*)[<"]cuda_bf16\.h[>"]', r"\1<hip/hip_bf16.h>", text)
    text = re.sub(r"\b(?:__)?nv_bfloat16(2?)\b", r"__hip_bfloat16\1", text)
    # cuda_bf16.h's {unsigned short x;} / {unsigned short x, y;} structs, as amd_hip_bf16.h declares them
    text = re.sub(r"\b__nv_bfloat16(2?)_raw\b", r"__hip_bfloat16\1_raw", text)
    lines = text.split("\n")
    for i, line in enumerate(cuda_lines):
        j = mapping[i]
        if j is None:
            continue
        if re.search(r"\b(__)?nv_bfloat16", line):
            lines[j] = re.sub(r"(?<!__)\bhip_bfloat16(2?)\b", r"__hip_bfloat16\1", lines[j])
        if re.search(r'#\s*include\s*[<"]cuda_bf16\.h', line):
            lines[j] = re.sub(r'[<"]hip/hip_bfloat16\.h[>"]', "<hip/hip_bf16.h>", lines[j])
    return bf16_include("\n".join(lines)) if include else "\n".join(lines)


def thrust(text: str, cuda_lines: list[str], mapping: list[int | None]) -> str:
    """Thrust CUDA policies and system namespace -> rocThrust's hip ones."""
    text = re.sub(r"\bthrust::cuda::", "thrust::hip::", text)
    text = re.sub(r"\bthrust::system::cuda::", "thrust::system::hip::", text)
    text = re.sub(r"\bthrust::cuda_cub::", "thrust::hip_rocprim::", text)
    text = re.sub(r"\bthrust::(system::)?cuda_category\b", r"thrust::\1hip_category", text)
    text = re.sub(r"\bTHRUST_DEVICE_SYSTEM_CUDA\b", "THRUST_DEVICE_SYSTEM_HIP", text)
    return re.sub(r'(#\s*include\s*[<"]thrust/system/)cuda/', r"\1hip/", text)


def warp_forms(text: str, model: warp.Model) -> str:
    """warp.rewrite of `text`, with warp.TYPED_HELPER placed after the includes above its first use
    when a call got a type-dispatched mask form."""
    text = warp.rewrite(text, model)
    if warp.TYPED_USE.search(cpp.blank(text)) and f"#define {warp.TYPED_GUARD}" not in text:
        text = features.insert_after_includes(text, warp.TYPED_HELPER, warp.TYPED_USE)
    return text


def full_mask_regex(full_mask_names: list[str]) -> re.Pattern:
    """A regex that matches the whole of an all-32-lanes mask argument: cpp.FULL_MASK_LITERAL
    (0xffffffff, ~0u, uint32_t(-1), ...) or one of `full_mask_names` (names the tree defines as 0xffffffff)."""
    alts = [cpp.FULL_MASK_LITERAL] + [re.escape(n) for n in full_mask_names]
    return re.compile(r"\(?\s*(?:" + "|".join(alts) + r")\s*\)?")


def _operator_regexes() -> list[re.Pattern]:
    types = "|".join(f"{t}[1-4]" for t in VECTOR_TYPES)
    head = (r"^[ \t]*(?:(?:__host__|__device__|__forceinline__|inline|static|constexpr|HOST_DEVICE\w*)\s+)*")
    binary = re.compile(
        head + rf"(?P<T>{types})\s+operator\s*(?P<op>[-+*/])\s*\(\s*(?:const\s+)?(?P=T)\s*&?\s*(?P<a>\w+)\s*,"
        rf"\s*(?:const\s+)?(?P=T)\s*&?\s*(?P<b>\w+)\s*\)\s*\{{\s*return\s+make_(?P=T)\s*\((?P<body>[^;{{}}]*)\)\s*;\s*\}}[ \t]*\n?",
        re.MULTILINE)
    compound = re.compile(
        head + rf"(?:(?P<T>{types})\s*&\s*|void\s+)operator\s*(?P<op>[-+*/])=\s*\(\s*(?P<T2>{types})\s*&\s*(?P<a>\w+)\s*,"
        rf"\s*(?:const\s+)?(?P=T2)\s*&?\s*(?P<b>\w+)\s*\)\s*\{{(?P<body>[^{{}}]*)\}}[ \t]*\n?",
        re.MULTILINE)
    unary = re.compile(
        head + rf"(?P<T>{types})\s+operator\s*(?P<op>-)\s*\(\s*(?:const\s+)?(?P=T)\s*&?\s*(?P<a>\w+)\s*\)"
        rf"\s*\{{\s*return\s+make_(?P=T)\s*\((?P<body>[^;{{}}]*)\)\s*;\s*\}}[ \t]*\n?",
        re.MULTILINE)
    return [binary, compound, unary]


OPERATOR_REGEXES = _operator_regexes()


def _elementwise(m: re.Match) -> bool:
    """True when the operator body is exactly the element-wise operation on every component."""
    t = m.group("T") or m.group("T2")
    n = int(t[-1])
    op, a = re.escape(m.group("op")), re.escape(m.group("a"))
    comps = "xyzw"[:n]
    if "b" not in m.re.groupindex:  # unary minus: make_T(-a.x, -a.y, ...)
        parts = cpp.split_args(m.group("body"))
        return len(parts) == n and all(re.fullmatch(rf"-\s*{a}\.{c}", p) for p, c in zip(parts, comps))
    b = re.escape(m.group("b"))
    if "T2" in m.re.groupindex:
        stmts = [s.strip() for s in m.group("body").split(";") if s.strip()]
        if stmts and re.fullmatch(rf"return\s+{a}", stmts[-1]) and m.group("T"):
            stmts = stmts[:-1]
        return len(stmts) == n and all(re.fullmatch(rf"{a}\.{c}\s*{op}=\s*{b}\.{c}", s) for s, c in zip(stmts, comps))
    parts = cpp.split_args(m.group("body"))
    return len(parts) == n and all(re.fullmatch(rf"{a}\.{c}\s*{op}\s*{b}\.{c}", p) for p, c in zip(parts, comps))


def vector_operator_guard(text: str, undefined: frozenset[str] = frozenset()) -> str:
    """Wrap element-wise vector-type operators in #if !defined(__HIP_PLATFORM_AMD__) ... #endif
    (adjacent ones share one guard); operators already inside such a guard are left alone."""
    blanked = cpp.blank(text)
    dead = cpp.dead_lines(blanked, undefined)
    spans = []
    for regex in OPERATOR_REGEXES:
        for m in regex.finditer(text):
            if _elementwise(m) and cpp.line_of(text, m.start()) not in dead:
                spans.append([m.start(), m.end()])
    if not spans:
        return text
    spans.sort()
    merged = [spans[0]]
    for start, end in spans[1:]:
        if text[merged[-1][1]:start].strip() == "":
            merged[-1][1] = end
        else:
            merged.append([start, end])
    for start, end in reversed(merged):
        body = text[start:end]
        if not body.endswith("\n"):
            body += "\n"
        text = text[:start] + "#if !defined(__HIP_PLATFORM_AMD__)\n" + body + "#endif\n" + text[end:]
    return text


INCLUDE_NAME = re.compile(r'^([ \t]*#[ \t]*include[ \t]*)([<"])([^>"\n]+)([>"])')


@dataclass(frozen=True)
class HeaderLookup:
    """Where an #include name resolves: tree(name) among the tree's own files, path(name) on hipcc's
    include path, toolkit(name) among the CUDA toolkit's headers (None when no CUDA headers are known:
    then no tree header is told apart from a vendored copy of a toolkit header)."""

    tree: Callable[[str], bool]
    path: Callable[[str], bool]
    toolkit: Callable[[str], bool] | None = None
    vendored: Callable[[str, str], bool] | None = None


# Headers of NVIDIA's CUDA libraries (cuBLAS, cuRAND, cuFFT, cuSPARSE, cuSOLVER, NCCL, cuDNN, NVTX,
# NVRTC, NPP, nvJPEG, cuTENSOR, NVML, CUPTI, cuFile, CUB, Thrust, libcu++), which the dev image's CUDA
# toolkit headers (hipify-clang's) do not hold: a tree file of such a name is a vendored copy or a shim
# (a ROCm fork's llmc/hip_shims/cublas_v2.h), and the translator's mapping to the ROCm library stands.
CUDA_LIBRARY_HEADER = re.compile(r"^(?:cublas|curand|cufft|cusparse|cusolver|nccl|cudnn|nvToolsExt|nvtx3/|nvrtc|npp|"
                                 r"nvjpeg|cutensor|nvml|cupti|cufile|cub/|thrust/|cuda/)")


def library_headers(text: str, include_map: dict[str, str], in_tree: Callable[[str], bool]) -> str:
    """#include of a CUDA library header (CUDA_LIBRARY_HEADER; NVTX aside, the nvtx-roctx step's) or of
    math_constants.h that the translation left as written -> hipify-perl's HIP header for it (include_map:
    hipify.include_map), unless the tree has a header of that name. torch.utils.hipify's table lacks some
    that hipify-perl's has (MinkowskiEngine 0.5.4's `<cusparse_v2.h>`, vLLM's `<math_constants.h>` stayed,
    "file not found"); hip-header-layout then moves the HIP name to its ROCm 6 folder."""
    def sub(m: re.Match[str]) -> str:
        name = m.group(3).strip()
        hip = include_map.get(name)
        if not hip or NVTX_HEADER.match(name) or in_tree(name) or not (
                CUDA_LIBRARY_HEADER.match(name) or name == "math_constants.h"):
            return m.group(0)
        return f"{m.group(1)}<{hip}>"
    return INCLUDE_LINE.sub(sub, text) if include_map else text


def math_constants(text: str, constant_map: dict[str, str]) -> str:
    """math_constants.h's CUDART_* names (CUDART_INF_F, CUDART_PI_F, ...) -> hip/hip_math_constants.h's HIP_*
    names (constant_map: hipify.math_constant_map), outside comments and strings, in a file that includes
    hip_math_constants.h or names them: hipify-perl renames them, torch.utils.hipify leaves them (vLLM
    0.34.0's dcp_direct_a2a_lse_reduce.cu). HIP's header defines the same values; a file that defines a
    CUDART_ name itself is left."""
    if "CUDART_" not in text or not constant_map:
        return text
    blanked = cpp.blank(text)
    if re.search(r"#\s*define\s+CUDART_", blanked):
        return text
    for m in reversed(list(re.finditer(r"\bCUDART_\w+\b", blanked))):
        hip = constant_map.get(m.group(0))
        if hip:
            text = text[:m.start()] + hip + text[m.end():]
    return text


NVTX_HEADER = re.compile(r"^(?:nvToolsExt|nvtx3/)")
INCLUDE_LINE = re.compile(r'^([ \t]*#[ \t]*include[ \t]*)([<"])([^>"\n]+)([>"])', re.M)


def tree_includes_kept(text: str, cuda_lines: list[str], mapping: list[int | None], headers: HeaderLookup,
                       folder: str = "") -> str:
    """Put back an #include of the tree's own header that the translator renamed:
    - to a name found nowhere (hipify-perl's cuda_stream -> hip_stream turns XGBoost's "cuda_stream.h"
      into "hip_stream.h");
    - or, for a header that is no CUDA toolkit or library header (CUDA_LIBRARY_HEADER), to a name
      outside the tree (hipify's table maps
      the CUDA samples' own helper_cuda.h to hip/hip_runtime_api.h, which drops the helpers the
      project's header declares).
    The tree's header is itself migrated, so it keeps its name in the migrated tree. A rename to another
    file of the tree (torch.utils.hipify's x_cuda.h -> x_hip.h) is kept. A quoted `./` or `../` path is the
    project's own file even where the tree lacks it (Rodinia's "../../common/cuda/helper_cuda.h", which
    hipify-perl made "../../common/cuda/hip/hip_runtime_api.h"): it keeps its name, and a failure then
    names the file the project needs. A quoted name that the tree holds beside the includer (`folder`, the
    includer's tree folder) is the tree's file whatever its name, as the preprocessor looks there first
    (transformer-engine-torch's common/util/pybind_helper.h includes "cuda_runtime.h", its own
    common/util/cuda_runtime.h, which torch.utils.hipify made "hip/hip_runtime.h")."""
    lines = text.split("\n")
    for i, line in enumerate(cuda_lines):
        m = INCLUDE_NAME.match(line)
        j = _include_line(i, mapping, lines, cuda_lines) if m else None
        if j is None or not m:
            continue
        h = INCLUDE_NAME.match(lines[j])
        old, new = m.group(3).strip(), (h.group(3).strip() if h else "")
        # a quoted ./ or ../ path names a file of the project even where this copy of the tree lacks it
        relative = m.group(2) == '"' and old.startswith(("./", "../"))
        # translators keep an include's delimiters: a pair that differs in them is the line map's mistake
        # (torch.utils.hipify's two added head lines shift a run of rewritten includes)
        if not h or h.group(2) != m.group(2) or new == old or not (headers.tree(old) or relative) or headers.tree(new):
            continue
        beside = m.group(2) == '"' and headers.tree(posixpath.normpath(posixpath.join(folder, old)))
        own = relative or beside or (headers.toolkit is not None and not headers.toolkit(old)
                                     and not CUDA_LIBRARY_HEADER.match(old))
        if own or not headers.path(new):
            lines[j] = h.group(1) + m.group(2) + m.group(3) + m.group(4) + lines[j][h.end():]
    return "\n".join(lines)


def vendored_toolkit_headers(text: str, include_map: dict[str, str], headers: HeaderLookup, folder: str = "") -> str:
    """#include of a tree file that is a copy of a CUDA toolkit header (headers.vendored: numba-cuda 0.9.0
    ships NVIDIA's cuda_fp16.h and cuda_fp16.hpp beside its sources for NVRTC) -> hipify-perl's HIP header
    for that name (include_map), which is what the name means on AMD. Left in place, the copy is
    hipified as a header of the tree, and NVIDIA's header hipified is neither NVIDIA's nor HIP's (its
    own `#error "Do not include this file directly"` fires). `folder`: the includer's tree folder."""
    if headers.vendored is None or not include_map:
        return text
    lines = text.split("\n")
    for j, line in enumerate(lines):
        m = INCLUDE_NAME.match(line)
        name = m.group(3).strip() if m else ""
        if m and name in include_map and headers.vendored(name, folder):
            lines[j] = f"{m.group(1)}<{include_map[name]}>{line[m.end():]}"
    return "\n".join(lines)


def _include_line(i: int, mapping: list[int | None], lines: list[str], cuda_lines: list[str]) -> int | None:
    """The output line (0-based) of CUDA include line i: its mapped line when that is an #include the
    translator did not add; else, within the run of CUDA #include lines around i (up to the nearest
    mapped lines that are no #include), the output #include lines other than an added
    hip/hip_runtime.h (one mapped from a CUDA runtime include is its translation) in the same span,
    paired in order when the two runs have the same length
    (hipify-clang adds hip_runtime.h and a blank line above the first include, and the line map may
    pair the renamed includes with those)."""
    j = mapping[i] if i < len(mapping) else None
    if j is not None and j < len(lines) and INCLUDE_NAME.match(lines[j]) and (
            not ADDED_RUNTIME.match(lines[j]) or CUDA_RUNTIME_INCLUDE.match(cuda_lines[i])):
        return j

    def anchor(k: int) -> bool:
        return k < len(mapping) and mapping[k] is not None and not INCLUDE_NAME.match(cuda_lines[k])
    lo = next((k for k in range(min(i, len(mapping)) - 1, -1, -1) if anchor(k)), -1)
    hi = next((k for k in range(i + 1, len(cuda_lines)) if anchor(k)), len(cuda_lines))
    before = mapping[lo] if lo >= 0 else -1
    after = mapping[hi] if hi < len(cuda_lines) else len(lines)
    run = [k for k in range(lo + 1, hi) if INCLUDE_NAME.match(cuda_lines[k])]
    found = [k for k in range(before + 1, after) if INCLUDE_NAME.match(lines[k]) and not ADDED_RUNTIME.match(lines[k])]
    return found[run.index(i)] if len(found) == len(run) and i in run else None


ADDED_RUNTIME = re.compile(r'[ \t]*#[ \t]*include[ \t]*[<"]hip/hip_runtime\.h[>"]')
# a CUDA line whose own translation is that include (not one a translator added)
CUDA_RUNTIME_INCLUDE = re.compile(r'[ \t]*#[ \t]*include[ \t]*[<"](?:[\w./-]*/)?cuda_runtime(?:_api)?\.h[>"]')


def apply_all(rel: str, cuda_text: str, hip_text: str, full_mask_names: list[str],
              mapping: list[int | None], undefined: frozenset[str] = frozenset(), cuda_only: bool = False,
              own_warp_size: bool = False, pytorch: bool = False,
              half_declared: frozenset[str] = frozenset(),
              headers: HeaderLookup | None = None,
              hipblas_major: int | None = None, bf16_declared: bool = False,
              own_macros: frozenset[str] = frozenset(),
              atomics_declared: frozenset[str] = frozenset(),
              hip_macros: frozenset[str] = frozenset(),
              include_map: dict[str, str] | None = None,
              constant_map: dict[str, str] | None = None,
              wmma_used: bool = True, soft_textures: bool = False,
              cub_namespaces: frozenset[str] = frozenset(),
              libcudacxx_used: bool = True) -> tuple[str, list[Fix], list[int | None]]:
    """Apply every fixup in order to one file's hipify output.

    rel: tree-relative path (for diffs); mapping: CUDA input line -> hipify output line (0-based);
    undefined: macros undefined on AMD (cpp.amd_undefined); cuda_only: the tree has no HIP code path
    (warp.hip_aware is false), so every warp mask, pre-9 warp form and warpSize is CUDA's 32-lane one;
    own_warp_size: the tree declares its own warpSize (warp.declares_warp_size), which is then kept;
    pytorch: the file includes PyTorch's headers (c10::Half is declared after its includes);
    half_declared: features.half_overloads of the tree; headers: see tree_includes_kept (None:
    that step is skipped); hipblas_major: the toolchain's hipBLAS major version (sysdeps.hipblas_major);
    bf16_declared: a header compiled together with this file declares a bfloat16 type name itself (declares_bf16).
    own_macros: warp-intrinsic names the tree defines as macros for AMD (warp.own_macros): their calls are kept;
    atomics_declared: the 16-bit types whose atomicAdd the tree declares (features.half_atomics_declared);
    hip_macros: plain-named macros of the HIP headers that the tree does not #define (sysdeps.hip_leaked_macros);
    include_map: hipify-perl's CUDA -> HIP header names (hipify.include_map; None: that step is skipped);
    constant_map: its CUDART_* -> HIP_* constant names (hipify.math_constant_map; None: skipped);
    wmma_used: some file of the tree uses WMMA (features.wmma_used); without, <mma.h> is left out;
    soft_textures: the file takes cuda_texture_soft.h's texture objects (texture.soft_files);
    cub_namespaces: the namespaces the tree wraps CUB in (features.cub_namespaces);
    libcudacxx_used: some file of the tree names a cuda:: entity outside cuda::std (features.libcudacxx_used).
    Returns (fixed text, the fixes that changed something, each with its lines and diff, for each 0-based
    line of the fixed text the 0-based hipify output line it came from or None for a line a fixup added),
    the last composed from each step's own line map: one diff of the whole change pairs a line a step
    inserted next to lines other steps rewrote with the wrong neighbours.
    """
    cuda_lines = cuda_text.split("\n")
    steps = [
        ("fp8-ocp", "cuda_fp8.h -> cuda_fp8_ocp.h (NVIDIA's OCP FP8 encodings, in software), its names -> rocmig_fp8's",
         lambda t: fp8.ocp(t, cuda_text, mapping, cpp.dead_lines(cpp.blank(t), undefined | cpp.HIPCC_UNDEFINED))),
        ("launch-ex", "cudaLaunchKernelEx / cudaLaunchConfig_t / cudaLaunchAttribute* -> cuda_launch_ex.h's (PDL dropped: "
         "HIP keeps stream order)",
         lambda t: launch.rename(t, cuda_text, mapping, cpp.dead_lines(cpp.blank(t), undefined | cpp.HIPCC_UNDEFINED))),
        ("libcudacxx-atomic", "libcu++'s cuda::atomic / atomic_ref / thread scopes / memory orders -> cuda_atomic.h's "
         "(HIP's scoped atomic builtins)",
         lambda t: atomic.rename(t, cpp.dead_lines(cpp.blank(t), undefined | cpp.HIPCC_UNDEFINED))),
        ("tree-include-kept", "#include of the tree's own header renamed by the translator -> its own name",
         lambda t: tree_includes_kept(t, cuda_lines, mapping, headers, posixpath.dirname(rel)) if headers else t),
        ("vendored-toolkit-header", "#include of the tree's copy of a CUDA toolkit header -> the HIP header for it",
         lambda t: vendored_toolkit_headers(t, include_map or {}, headers, posixpath.dirname(rel)) if headers else t),
        ("own-hip-branch", "CUDA-compiler tests put back in #if chains that have their own HIP branch",
         lambda t: features.own_hip_branch(t, cuda_lines, mapping)),
        ("translator-self-define", "#define N N lines the translator made from the project's #define cudaX N commented out",
         lambda t: self_defines(t, cuda_lines, mapping)),
        ("hipify-dot-identifier", "identifiers hipify-perl took for header names get their CUDA names back",
         lambda t: dot_identifiers(t, cuda_lines, mapping)),
        ("std-min-max", "::max / ::min that torch.utils.hipify made of the CUDA line's std::max / std::min -> std:: "
         "(HIP's are not constexpr)", lambda t: features.std_minmax_restored(t, cuda_lines, mapping)),
        ("hip-runtime-include-once", "repeated #include of hip/hip_runtime.h dropped", features.runtime_include_once),
        ("cuda-library-header", "#include of a CUDA library header the translator left -> hipify-perl's HIP header",
         lambda t: library_headers(t, include_map or {}, headers.tree if headers else lambda _name: False)),
        ("math-constants", "math_constants.h's CUDART_* constants -> hip_math_constants.h's HIP_* names",
         lambda t: math_constants(t, constant_map or {})),
        ("hip-header-layout", "library headers moved to their ROCm >= 6 folders",
         lambda t: header_layout(t, cuda_lines, mapping)),
        ("bf16-header-type", "CUDA bfloat16 header/type -> hip/hip_bf16.h / __hip_bfloat16",
         lambda t: bf16(t, cuda_lines, mapping, include=not (bf16_declared or declares_bf16([cpp.blank(cuda_text)])))),
        ("thrust-hip-policy", "Thrust CUDA execution policy/system -> rocThrust thrust::hip",
         lambda t: thrust(t, cuda_lines, mapping)),
        ("thrust-headers", "the Thrust headers that declare the thrust:: names a file uses (CUDA's Thrust includes "
         "more of itself than rocThrust)", features.thrust_headers),
        ("warp-sync-full-mask", "CUDA 32-lane warp operations -> exact HIP forms on wave32 and wave64",
         lambda t: warp_forms(t, warp.Model(full_mask_regex(full_mask_names), legacy=cuda_only, any_mask=cuda_only,
                                            own_macros=own_macros, typed_mask=not cuda_only))),
        ("bf16x2-shuffles", "plain __shfl / _up / _down / _xor for __hip_bfloat162 (HIP 7.2 has the *_sync forms only)",
         lambda t: features.bf16x2_shuffles(t, pytorch)),
        ("warp-size-cuda-32", "CUDA's warpSize (32) kept: device-code warpSize -> 32",
         lambda t: warp.rewrite_warp_size(t) if cuda_only and not own_warp_size else t),
        ("warp-size-host-32", "CUDA's warp size (32) as host code reads it: prop.warpSize, the warp-size attribute -> 32",
         lambda t: warp.rewrite_host_warp_size(t) if cuda_only and not own_warp_size else t),
        ("builtin-types-header", "<builtin_types.h> / <vector_functions.h> / <device_launch_parameters.h> / ... -> "
         "<hip/hip_runtime.h>",
         lambda t: features.builtin_types(t, headers.tree if headers else lambda _name: False)),
        ("struct-typedef-name", "`struct hipGraphicsResource` and other HIP typedef names -> the name alone",
         features.struct_typedef),
        ("graphics-map-flags", "cudaGraphicsMapFlags* -> hipGraphicsRegisterFlags* (same values)",
         features.graphics_map_flags),
        ("gl-interop-header", "<cuda_gl_interop.h> / <cudaGL.h> -> <hip/hip_gl_interop.h>", features.gl_interop),
        ("cub-hipcub-headers", "CUB headers -> hipCUB's (<cub/X.cuh> -> <hipcub/X.hpp>)", features.cub_headers),
        ("libcudacxx-thrust", "libcu++ pair / tuple / function objects -> rocThrust's (thrust::)", features.libcudacxx_thrust),
        ("libcudacxx-unused-include", "#include <cuda/pipeline> / <cuda/barrier> / ... commented out where no file of "
         "the tree names a cuda:: entity", lambda t: features.libcudacxx_unused_includes(t, libcudacxx_used)),
        ("libcudacxx-std", "libcu++ numeric_limits of built-in types, integer types, <cuda/std/limits|cstdint|...> -> std::",
         features.libcudacxx_std),
        ("ptx-trap", 'asm("trap;") -> __builtin_trap()', features.ptx_trap),
        ("cuda-arch-branch", "#if __CUDA_ARCH__ >= N branches whose AMD side only traps also taken in AMD device code",
         lambda t: archbranch.enable(t, undefined, cuda_only)),
        ("cuda-arch-hostdev", "`#ifdef __CUDA_ARCH__` choosing __host__ __device__ qualifiers -> also taken under hipcc",
         features.cuda_arch_hostdev),
        ("ptx-inline-asm", "inline PTX whose every instruction has an exact C++ form -> that C++ (ptx.py)",
         lambda t: ptx.rewrite(t, cuda_only, cpp.dead_lines(cpp.blank(t), undefined | cpp.HIPCC_UNDEFINED))),
        ("event-wait-flags", "cudaEventWait* flags -> hipEventWait*", features.event_wait_flags),
        ("event-create-flags", "hipEventCreate(&e, flags) -> hipEventCreateWithFlags (CUDA's C++ overload)",
         features.event_create_flags),
        ("cache-hint-load-store", "__ldcs / __ldcg / __stcs / ... -> plain loads and stores (the hint keeps values)",
         features.cache_hints),
        ("half-atomic-add", "CUDA's atomicAdd on __half(2) / bfloat16(2) -> compare-and-swap loops (HIP has none)",
         lambda t: features.half_atomic_add(t, atomics_declared)),
        ("bf16-rn-conversion", "__float2bfloat16_rn -> __float2bfloat16 (HIP's rounds to nearest even)", features.bf16_rn),
        ("half-alias-names", "__nv_half / nv_half / __nv_half2 / ... -> the __half types cuda_fp16.h's typedefs name",
         features.half_aliases),
        ("bf16-pair-conversion", "__float2bfloat162_rn / __floats2bfloat162_rn -> pairs of HIP's __float2bfloat16",
         features.bf16_pairs),
        ("make-bf16-pair", "make_bfloat162(x, y) -> __halves2bfloat162(x, y)",
         lambda t: features.make_bf16_pair(t, cpp.dead_lines(cpp.blank(t), undefined | cpp.HIPCC_UNDEFINED))),
        ("half2-min-max", "__hmax2 / __hmin2 (/ _nan) on __half2 -> CUDA's lane-wise definitions (HIP has bf16 ones only)",
         lambda t: features.half2_minmax(t, ptx.helpers_for)),
        ("launch-token-paste", "hipLaunchKernelGGL((K), ...) -> K<<<...>>>(...) in an argument a macro pastes a token onto",
         features.launch_token_paste),
        ("grid-constant", "__grid_constant__ dropped from kernel parameters (HIP has no such keyword)",
         features.grid_constant),
        ("restrict-by-value", "__restrict__ dropped from parameters passed by value (clang rejects it on a class type)",
         features.restrict_by_value),
        ("vector-brace-elision", "`U u = {0, 0, 0, 0};` with a vector-type first member -> `{{0, 0, 0, 0}}` (HIP's vector "
         "types are classes)", features.vector_brace_elision),
        ("int-min-max", "umin / umax / llmin / llmax / ullmin / ullmax -> CUDA's definitions", features.int_minmax),
        ("mixed-sign-min-max", "CUDA's device min / max of one signed and one unsigned integer (unsigned compare)",
         features.mixed_minmax),
        ("merged-error-overloads", "a function's CUresult and cudaError_t overloads (both hipError_t) -> its first "
         "definition", features.merged_error_overloads),
        ("hipblas-datatype-v3", "hipblasDatatype_t -> hipDataType, hipblas(Double)Complex -> hip(Double)Complex "
         "(hipBLAS >= 3 removed the types)",
         lambda t: features.hipblas_datatype(t) if hipblas_major is not None and hipblas_major >= 3 else t),
        ("gemm-ex-compute-type", "GemmEx compute type given as a data type (HIP_R_32F) -> HIPBLAS_COMPUTE_32F (hipBLAS >= 3)",
         lambda t: features.gemm_ex_compute_type(t) if hipblas_major is not None and hipblas_major >= 3 else t),
        ("nccl-rccl", "<nccl.h> -> <rccl/rccl.h> (RCCL keeps NCCL's API names)", features.nccl_rccl),
        ("cuda-trap", "__trap() -> __builtin_trap() (HIP's device abort)", features.trap),
        ("gemm-tensor-op-algo", "deprecated CUBLAS_GEMM_DEFAULT_TENSOR_OP -> HIPBLAS_GEMM_DEFAULT", features.gemm_tensor_op),
        ("unmapped-status-case", "`case CUFFT_LICENSE_ERROR: return \"...\";` of a library status HIP lacks -> "
         "commented out", features.unmapped_status_cases),
        ("hiprtc-link-header", "#include <hip/hiprtc.h> in a file that names hiprtcLink* (hipify's cuLink*) without it",
         features.hiprtc_link_header),
        ("blas-status-string", "cublasGetStatusString / cublasGetStatusName -> hipblasStatusToString", features.blas_status_string),
        ("simd-video-intrinsics", "CUDA SIMD video intrinsics -> lane-by-lane implementations", features.simd_video),
        ("directed-rounding", "__fadd_rd / __fdiv_ru / __dsqrt_rz / ... -> exact rocmig_* helpers (HIP lacks them)",
         rounding.directed_rounding),
        ("ffs-cuda-signature", "__ffs / __ffsll called with CUDA's int / long long argument", features.ffs_signature),
        ("atomic-system-scope", "atomicInc_system / atomicDec_system -> system-scope HIP atomics", features.atomic_system),
        ("nvtx-roctx", "NVTX ranges and marks -> roctx, or no-ops without it; NVIDIA's header-only NVTX 3 kept where "
         "more of NVTX is used", lambda t: features.nvtx(t, cuda_text)),
        ("cg-reduce", "cooperative_groups::reduce -> a shuffle tree over the group (rocmig_cg)", features.cg_reduce),
        ("cg-memcpy-header", "<cooperative_groups/memcpy_async.h> unused -> <hip/hip_cooperative_groups.h>",
         features.cg_memcpy_header),
        ("cub-names", "cub::X left by the translator -> hipcub::X in files that include hipCUB", features.cub_names),
        ("texture-iterator-cstring", "<cstring> before hipCUB / rocPRIM headers that reach rocPRIM's texture_cache_iterator.hpp "
         "(it calls memset without including it)", features.texture_iterator_cstring),
        ("cub-namespace-prefix", "CUB wrapped in a namespace by CUB_NS_PREFIX (`ls::cub::X`) -> hipcub::X",
         lambda t: features.cub_namespace_prefix(t, cub_namespaces)),
        ("wmma-rocwmma", "<mma.h> / nvcuda::wmma -> rocWMMA (an <mma.h> no file uses is left out)",
         lambda t: features.wmma(t, wmma_used)),
        ("cuda-runtime-guard", "tests of CUDA headers' include guards (cuda_runtime.h, driver_types.h, cuBLAS, ...) -> "
         "their HIP headers'", features.runtime_guard),
        ("func-pointer-cast", "kernel arguments of hipFuncGetAttributes / hipFuncSetAttribute / ... -> const void*",
         features.func_pointer_cast),
        ("hip-macro-undef", "#undef of HIP header macros (MASK1, HW_ID, ...) whose names the file uses as identifiers",
         lambda t: features.hip_macros_undone(t, hip_macros)),
        ("cuda-default-arguments", "HIP calls that leave out arguments CUDA's runtime defaults get CUDA's defaults",
         features.cuda_default_arguments),
        ("out-pointer-cast", "T** out arguments of hipHostGetDevicePointer / hipMallocHost -> void**",
         features.out_pointer_cast),
        ("nvcc-implicit-headers", "the C headers nvcc's implicit cuda_runtime.h gives every .cu unit, where it uses them",
         lambda t: features.nvcc_implicit_headers(t) if rel.endswith((".cu", ".hip", ".cuh", ".h", ".hpp", ".hh")) else t),
        ("nvcc-implicit-runtime", "hip/hip_runtime.h first in every .cu unit, as nvcc's implicit cuda_runtime.h",
         lambda t: features.nvcc_implicit_runtime(t, headers.tree) if headers and rel.endswith((".cu", ".hip")) else t),
        ("hip-include-extern-c", "a HIP header included inside `extern \"C\" {` also included before the block",
         features.hip_includes_out_of_extern_c),
        ("launch-spelling", "`k << <g, b >> >(...)` -> `k<<<g, b>>>(...)`", features.launch_spelling),
        ("std-headers", "<stdexcept> / <string> / <cstdint> / ... for std:: names the file uses without their header "
         "(older libstdc++ included them from other headers)", features.std_headers),
        ("dependent-template-keyword", "`C<T>::f<N>(args)` in a template over T -> `C<T>::template f<N>(args)` (clang "
         "needs the keyword for a dependent member template)", features.dependent_template_keyword),
        ("template-keyword-without-args", "`X::template f(args)` -> `X::f(args)` where no template arguments follow "
         "(clang 19+ rejects the keyword there, nvcc accepts it)", features.template_keyword_without_args),
        ("cudart-calling-convention", "CUDART_CB / CUDARTAPI / CUDAAPI dropped (empty outside Windows)",
         features.cudart_calling_convention),
        ("vector-operator-guard", "element-wise vector-type operators kept for CUDA builds only",
         lambda t: vector_operator_guard(t, undefined)),
        ("dispatch-scalar-type", "AT_DISPATCH_*(x.type(), ...) -> x.scalar_type() (PyTorch 2.x removed the conversion)",
         lambda t: features.dispatch_scalar_type(t) if pytorch else t),
        ("half-shuffle-overloads", "c10::Half shuffles through HIP's __half ones (the float/__half overloads are ambiguous)",
         lambda t: features.half_shuffles(t, half_declared) if pytorch else t),
        ("half2-raw-members", "`r.x` / `r.y` of a __half2_raw -> `r.x.x` / `r.y.x` (HIP's members are __half_raw, CUDA's "
         "unsigned short)", features.half2_raw_members),
        ("syncwarp-mask", "__syncwarp(mask) -> __syncwarp() (HIP's takes 64-bit masks only and syncs the whole wavefront)",
         features.syncwarp_mask),
        ("half-ldg", "__ldg on c10::Half pointers -> a plain load (PyTorch's overload is for CUDA compilers only)",
         lambda t: features.half_ldg(t) if pytorch else t),
        ("texture-soft", "texture objects, arrays and fetches -> cuda_texture_soft.h's (texels in device memory, "
         "CUDA's addressing and filtering in code: gfx94x has no image instructions)",
         lambda t: texture.rename(t, cpp.dead_lines(cpp.blank(t), undefined | cpp.HIPCC_UNDEFINED)) if soft_textures else t),
        ("fp8-ocp", "cuda_fp8_ocp.h in place of the cuda_fp8.h include", fp8.header),
        ("launch-ex", "cuda_launch_ex.h before the first #include", launch.header),
        ("libcudacxx-atomic", "cuda_atomic.h in place of <cuda/atomic>", atomic.header),
        ("texture-soft", "cuda_texture_soft.h before the first #include", texture.header),
    ]
    fixes: list[Fix] = []
    text = hip_text
    to_hip: list[int | None] = list(range(hip_text.count("\n") + 1))  # line of `text` -> hipify output line
    for fix_id, title, step in steps:
        after = step(text)
        if after != text:
            lines, diff = _changed(text, after, rel, fix_id)
            # the step's lines count lines of the text it saw; earlier steps may have inserted or removed some
            hip_lines = sorted({to_hip[n - 1] + 1 for n in lines if n - 1 < len(to_hip) and to_hip[n - 1] is not None})
            fixes.append(Fix(fix_id, title, tuple(hip_lines), diff))
            after_lines = after.split("\n")
            came_from: list[int | None] = [None] * len(after_lines)
            for old, new in enumerate(linemap.map_lines(text.split("\n"), after_lines)):
                if new is not None:
                    came_from[new] = to_hip[old]
            to_hip, text = came_from, after
    return text, fixes, to_hip
