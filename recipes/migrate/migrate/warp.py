"""CUDA warp operations and their exact HIP forms on wave32 and wave64.

A CUDA warp has 32 lanes. A HIP wavefront has warpSize lanes: 64 on CDNA (gfx90a, gfx942, gfx950),
32 on RDNA. The migrated code keeps CUDA's 32-lane warps: each CUDA warp becomes one 32-lane group
of the wavefront (lanes 0-31 and 32-63 on wave64; the whole wavefront on wave32), so lane arithmetic
with 32 (`threadIdx.x % 32`, offsets 16..1, `1u << lane`) keeps its meaning. The forms below are
exact for that model; their semantics are those of HIP 7.2's amd_detail/amd_warp_functions.h and
amd_warp_sync_functions.h (ROCm/clr):

  __shfl*_sync(all 32 lanes, v, x[, w])  -> __shfl*(v, x, w or 32)
      HIP's shuffles work inside groups of `width` lanes. The non-sync form is used because the
      *_sync forms check that the mask equals the active lanes (`__hip_assert(MASK == __ballot(true))`,
      a trap in builds without NDEBUG): a 64-bit all-ones mask fails that check whenever a wavefront
      is only partly active (a 32-thread block on wave64, `if (warp == 0)` in a block reduction).
  __shfl*_sync(m, v, x[, w])             -> __shfl*_sync(GROUP(m), v, x, w or 32)
  __ballot_sync(all, p)                  -> HALF(__ballot(p))
  __ballot_sync(m, p)                    -> HALF(__ballot_sync(GROUP(m), p))
  __any_sync(all, p) / __all_sync(all, p) -> HALF(__ballot(p)) != 0u / == HALF(__ballot(1))
  __any_sync(m, p) / __all_sync(m, p)    -> __any_sync(GROUP(m), p) / __all_sync(GROUP(m), p)
  __match_any_sync(m, v)                 -> HALF(__match_any_sync(GROUP(m), v))
  __activemask()                         -> HALF(__ballot(1))  (CUDA-only trees; elsewhere only where
                                            the result is kept in 32 bits, as a suggestion)
  where GROUP(m) = ((unsigned long long)(unsigned)(m) << (__lane_id() & 32)) places CUDA's 32-bit
  lane mask (CUDA's mask parameter is `unsigned`) on the lane's 32-lane group, and
  HALF(b) = ((unsigned)((b) >> (__lane_id() & 32))) takes that group's 32 bits of a 64-bit result.
  On wave32 `__lane_id() & 32` is 0 and both are the identity.

A mask that is a parameter of a 32-bit integer type (`unsigned`, `uint32_t`, `int`, ...) of the
function that makes the call, and that the function does not assign, is CUDA's 32-bit lane mask in
every tree (a 32-bit parameter cannot carry a 64-bit HIP mask): a project's own wrapper or overload
of a *_sync intrinsic (`at::Half __shfl_up_sync(const unsigned mask, ...)`) gets the GROUP(m) form
above in trees with HIP code paths too. Widening the parameter to 64 bits instead would zero-extend
CUDA's all-lanes 0xffffffff to lanes 0-31 of a wave64 wavefront: wrong (a trap in HIP's mask check)
whenever lanes 32-63 are active.

In a tree that has HIP code paths, a mask that is neither all lanes nor a 32-bit parameter (a macro's
parameter, a constant of another file, an expression) may be CUDA's 32-bit mask or HIP's 64-bit one;
the compiler knows which, so the call gets the type-dispatched forms of TYPED_HELPER:
  __shfl*_sync(m, v, x[, w])  -> __shfl*_sync(rocmig_lane_mask(m), v, x, w or rocmig_lane_width(m))
  __ballot_sync(m, p)         -> rocmig_ballot_sync(m, p)
  __any_sync(m, p) / __all_sync(m, p) -> __any_sync(rocmig_lane_mask(m), p) / __all_sync(...)
where a mask of 32 bits or less gets GROUP(m), width 32 and a HALF ballot (CUDA's forms above), and a
64-bit mask is passed on as written, with HIP's default width (warpSize) and 64-bit ballot: the call
as HIP 7.2 compiles it. A 32-bit mask does not compile in HIP 7.2's *_sync forms (a static assertion
that the mask has 64 bits), so code that compiled before keeps its meaning.

In a tree written for CUDA only (no HIP platform macro anywhere), CUDA's pre-9 forms mean 32 lanes
too: `__shfl*(v, x)` gets width 32, `__ballot/__any/__all(p)` the group forms, and device-code
`warpSize` (always 32 on NVIDIA GPUs) becomes 32. In a tree that already has HIP code paths those
names mean the wavefront and stay.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from . import cpp

GROUP_SHIFT = "(__lane_id() & 32)"
TYPED_GUARD = "ROCMIG_LANE_MASK"
TYPED_USE = re.compile(r"\b(?:rocmig_lane_mask|rocmig_lane_width|rocmig_ballot_sync)\b")
TYPED_HELPER = f"""// CUDA's 32-bit lane masks on the lane's 32-lane group of the wavefront, HIP's 64-bit ones as written
#ifndef {TYPED_GUARD}
#define {TYPED_GUARD}
#include <hip/hip_runtime.h>
template <typename M> __device__ inline unsigned long long rocmig_lane_mask(M mask) {{
  return sizeof(M) <= 4 ? (unsigned long long)(unsigned)mask << {GROUP_SHIFT} : (unsigned long long)mask;
}}
template <typename M> __device__ inline int rocmig_lane_width(M) {{ return sizeof(M) <= 4 ? 32 : warpSize; }}
template <int Bytes> struct rocmig_ballot_word {{ typedef unsigned long long type; }};
template <> struct rocmig_ballot_word<4> {{ typedef unsigned type; }};
template <typename M>
__device__ inline typename rocmig_ballot_word<(sizeof(M) <= 4 ? 4 : 8)>::type rocmig_ballot_sync(M mask, int predicate) {{
  return (typename rocmig_ballot_word<(sizeof(M) <= 4 ? 4 : 8)>::type)(
      __ballot_sync(rocmig_lane_mask(mask), predicate) >> (sizeof(M) <= 4 ? {GROUP_SHIFT} : 0));
}}
#endif
"""
# include guards of the helpers the fixups insert (features.py), which ops() does not classify: the
# Half shuffles pass their caller's width and mask on unchanged (the caller's call is the operation),
# rocmig_cg's reduce and labeled groups shuffle by rank over a group's own lanes, named absolutely
FORWARDERS_GUARD = "ROCMIG_HALF_SHUFFLES"
HELPER_GUARDS = (FORWARDERS_GUARD, "ROCMIG_CG_REDUCE", TYPED_GUARD)
SHUFFLES = ("__shfl", "__shfl_up", "__shfl_down", "__shfl_xor")
NAMES = (r"__shfl(?:_up|_down|_xor)?(?:_sync)?|__ballot(?:_sync|64)?|__any(?:_sync)?|__all(?:_sync)?"
         r"|__match_any_sync|__match_all_sync|__activemask|__lane_id")
CALL = re.compile(rf"(?<![\w.:>])({NAMES})\s*\(")
HALF_AFTER = re.compile(r"\s*\)?\s*>>\s*\(\s*__lane_id\s*\(\s*\)\s*&\s*32\s*\)")
WARP_SIZE = re.compile(r"(?<![\w.>])warpSize\b")
WARP_SIZE_DECL = re.compile(r"\b(?:int|unsigned|auto|size_t|long|short|uint32_t|int32_t)\s+(?:const\s+)?warpSize\b"
                            r"|#\s*define\s+warpSize\b|\bwarpSize\s*=[^=]")
HIP_MARKERS = re.compile(r"\b(__HIP_PLATFORM_AMD__|__HIP_PLATFORM_HCC__|__HIPCC__|__HIP__|__HIP_DEVICE_COMPILE__|USE_ROCM|"
                         r"ROCM_WAVEFRONT_SIZE|__AMDGCN_WAVEFRONT_SIZE|__HIP_PLATFORM_AMD|C10_WARP_SIZE|"
                         r"WARP_SHFL(?:_UP|_DOWN|_XOR)?|WARP_BALLOT)\b|[<\"]hip/")
GROUP_MASK = re.compile(r"<<\s*\(\s*__lane_id\s*\(\s*\)\s*&\s*32\s*\)\s*\)?\s*$")
PARAMETER = re.compile(r"^(?:(?:const|volatile|unsigned|signed)\s+)*[A-Za-z_][\w:<>]*(?:\s*[*&]+\s*|\s+)[A-Za-z_]\w*(?:\s*=.*)?$",
                       re.DOTALL)
DEFINE_HEAD = re.compile(r"[ \t]*#[ \t]*define[ \t]+")
DIRECTIVE = re.compile(r"^[ \t]*#[ \t]*(?:if|ifdef|ifndef|elif)\b[^\n]*$", re.MULTILINE)
WAVEFRONT_NAMES = re.compile(r"\b(__AMDGCN_WAVEFRONT_SIZE|ROCM_WAVEFRONT_SIZE|C10_WARP_SIZE)\b")
NARROW_PARAMETER = re.compile(r"^(?:(?:const|volatile|register)\s+)*(?:unsigned(?:\s+int)?|(?:std::)?u?int32_t|int|signed(?:\s+int)?)"
                              r"(?:\s+(?:const|volatile))*\s+(?P<name>[A-Za-z_]\w*)\s*(?:=[^,]*)?$", re.DOTALL)
CONTROL = re.compile(r"\b(?:if|for|while|switch|catch|return|sizeof|decltype|alignof)\s*$")
QUALIFIERS = re.compile(r"(?:\s*(?:\b(?:const|noexcept|override|final|mutable|volatile)\b|__attribute__\s*\(\(.*?\)\)))*\s*$")


def half(expr: str) -> str:
    """The lane's 32-lane group of a 64-bit lane mask, as CUDA's 32-bit value."""
    return f"((unsigned)(({expr}) >> {GROUP_SHIFT}))"


def group(mask: str) -> str:
    """CUDA's 32-bit lane mask `mask`, placed on the lane's 32-lane group of the wavefront."""
    return f"((unsigned long long)(unsigned)({mask}) << {GROUP_SHIFT})"


def hip_aware(blanked_texts: list[str]) -> bool:
    """True when any file of the tree already has HIP code paths or reads the wavefront size (a HIP
    platform macro, a hip/ include, ROCM_WAVEFRONT_SIZE): then the pre-9 CUDA forms and warpSize
    are left as they are, since the tree may use them for the wavefront."""
    return any(HIP_MARKERS.search(t) for t in blanked_texts)


MACRO_DEFINITION = re.compile(rf"^[ \t]*#[ \t]*define[ \t]+({NAMES})\(", re.MULTILINE)


Macros = dict[str, tuple[tuple[str, ...], str]]  # warp-intrinsic name -> (parameters, body)


def definition_end(blanked: str, start: int) -> int:
    """Offset of the newline that ends the #define at `start` (its backslash-continued lines
    included), or len(blanked)."""
    end = start
    while True:
        end = blanked.find("\n", end)
        if end < 0:
            return len(blanked)
        if not blanked[blanked.rfind("\n", 0, end) + 1:end].rstrip(" \t\r").endswith("\\"):
            return end
        end += 1


def own_macros(blanked: str, undefined: frozenset[str]) -> Macros:
    """{name: (parameters, body)} of the warp intrinsics that a translated file defines as
    function-like macros in code hipcc surely compiles (`#define __shfl_xor_sync(mask, var, laneMask)
    __shfl_xor(var, laneMask)` under `#ifdef USE_ROCM` in a PyTorch extension): the project's own HIP
    form of its calls, which the rewrite leaves to the macro and the analysis reads expanded
    (expand_macros). A definition under a test of unknown value, or one hipcc skips, does not count;
    the first definition of a name counts. undefined: macros that count as not defined."""
    found: Macros = {}
    if "define" not in blanked or not MACRO_DEFINITION.search(blanked):
        return found
    unsure = cpp.unsure_lines(blanked, undefined)
    for m in MACRO_DEFINITION.finditer(blanked):
        close = blanked.find(")", m.end())
        end = definition_end(blanked, m.start())
        if close < 0 or close > end or m.group(1) in found or cpp.line_of(blanked, m.start()) in unsure:
            continue
        body = blanked[close + 1:end].replace("\\\n", " ")
        params = tuple(p.strip() for p in blanked[m.end():close].split(",") if p.strip())
        found[m.group(1)] = (params, " ".join(body.split()))
    return found


def expand_macros(text: str, macros: Macros) -> str:
    """`text` with each call of a macro of own_macros() replaced by the macro's expansion and the
    macro definitions of those names blanked, line count kept (the analysis's view of the code)."""
    if not macros:
        return text
    blanked = cpp.blank(text)
    out, pos = [], 0
    for m in MACRO_DEFINITION.finditer(blanked):
        if m.group(1) not in macros or m.start() < pos:
            continue
        end = definition_end(blanked, m.start())
        out.append(text[pos:m.start()] + "\n" * text[m.start():end].count("\n"))
        pos = end
    text = "".join(out) + text[pos:]
    blanked = cpp.blank(text)
    out, pos = [], 0
    for call in calls(text, blanked):
        params, body = macros.get(call.name, ((), ""))
        if call.name not in macros or len(params) != len(call.args):
            continue
        values = dict(zip(params, (a.strip() for a in call.args)))
        expanded = re.sub(r"\b[A-Za-z_]\w*\b", lambda t, v=values: v.get(t.group(0), t.group(0)), body)
        out.append(text[pos:call.start] + expanded + "\n" * text[call.start:call.end].count("\n"))
        pos = call.end
    return "".join(out) + text[pos:]


def declares_warp_size(blanked_texts: list[str]) -> bool:
    """True when the tree declares, defines or assigns its own `warpSize` (then it is not CUDA's)."""
    return any(WARP_SIZE_DECL.search(t) for t in blanked_texts)


@dataclass(frozen=True)
class Call:
    """One warp-intrinsic call: name, start (offset of the name), end (offset after the closing
    parenthesis), args (argument texts, from the original text)."""

    name: str
    start: int
    end: int
    args: tuple[str, ...]


def calls(text: str, blanked: str | None = None) -> list[Call]:
    """Outermost warp-intrinsic calls of `text` in order (comments and strings are skipped); a
    declaration or definition of a function with such a name (a wrapper the project overloads for
    its own types: `at::Half __shfl_up_sync(const unsigned mask, ...)`) is not a call, nor is the
    head of a macro definition of that name (`#define __shfl_xor_sync(mask, var, laneMask) ...`)."""
    blanked = cpp.blank(text) if blanked is None else blanked
    found: list[Call] = []
    pos = 0
    while True:
        m = CALL.search(blanked, pos)
        if not m:
            return found
        k = cpp.closing_paren(blanked, m.end())
        if k is None:
            return found
        inner = blanked[m.end():k - 1]
        args = [] if not inner.strip() else cpp.split_args(text[m.end():k - 1], scan=inner, angle=False)
        line_head = blanked[blanked.rfind("\n", 0, m.start()) + 1:m.start()]
        if not any(PARAMETER.match(cpp.blank(a)) for a in args) and not DEFINE_HEAD.fullmatch(line_head):
            found.append(Call(m.group(1), m.start(), k, tuple(args)))
        pos = k


def _followed_by_half(text: str, end: int) -> bool:
    return bool(HALF_AFTER.match(text, end))


@dataclass(frozen=True)
class Model:
    """What the rewrite may assume about a tree: full_mask (regex matching a whole all-32-lanes mask
    argument), legacy (CUDA-only tree: pre-9 forms and warpSize are CUDA's 32-lane ones),
    any_mask (rewrite *_sync calls whose mask is not provably all lanes too: exact when the mask is
    CUDA's 32-bit one, which every mask of a CUDA-only tree is), activemask (rewrite __activemask():
    CUDA's is 32-bit, HIP's 64-bit; default: as legacy), narrow_params (rewrite *_sync calls whose
    mask is a 32-bit parameter of the calling function, which is CUDA's 32-bit mask in any tree),
    own_macros (names the tree defines as macros for AMD, own_macros(): their calls are kept),
    typed_mask (give the *_sync calls the other rules leave the type-dispatched forms of TYPED_HELPER:
    a tree with HIP code paths, where a mask may have either width)."""

    full_mask: re.Pattern[str]
    legacy: bool
    any_mask: bool
    activemask: bool | None = None
    narrow_params: bool = True
    own_macros: frozenset[str] = frozenset()  # names of own_macros(): their calls are kept
    typed_mask: bool = False


def narrow_mask_parameters(blanked: str, offset: int) -> set[str]:
    """Names of the parameters of a 32-bit integer type (NARROW_PARAMETER) of the function or lambda
    whose body holds `offset` of the blanked text, less those the body assigns before `offset`;
    empty when `offset` lies in no function body (a macro, file scope). Blocks of if/for/while/...
    are looked through to the function around them."""
    depth, k = 0, offset
    while k > 0:
        k -= 1
        c = blanked[k]
        if c == "}":
            depth += 1
        elif c == "{" and depth:
            depth -= 1
        elif c == "{":
            head = blanked[:k]
            qualifiers = QUALIFIERS.search(head, max(0, len(head) - 400))
            head = head[:qualifiers.start()] if qualifiers else head
            if not head.endswith(")"):
                continue
            start = cpp.matching_open(blanked, len(head) - 1)
            if start is None:
                return set()
            before = blanked[:start].rstrip()
            if CONTROL.search(before) or not re.search(r"(?:[\w~]|\])$", before):
                continue
            params = [NARROW_PARAMETER.match(p.strip()) for p in cpp.split_args(blanked[start + 1:len(head) - 1])]
            body = blanked[k + 1:offset]
            return {m.group("name") for m in params if m
                    and not re.search(rf"(?<![\w.>]){m.group('name')}\s*(?:[-+*/%&|^]|<<|>>)?=(?!=)|(?:\+\+|--)\s*{m.group('name')}\b"
                                      rf"|\b{m.group('name')}\s*(?:\+\+|--)", body)}
    return set()


def rewrite(text: str, model: Model) -> str:
    """`text` with every CUDA warp operation that has an exact 32-lane-group form rewritten (see the
    module doc); calls already in a group form, and calls the model does not cover, are kept."""
    if not CALL.search(text):
        return text
    out, pos = [], 0
    blanked = cpp.blank(text)
    wide = wide_names(blanked) if model.typed_mask else frozenset()
    for call in calls(text, blanked):
        out.append(text[pos:call.start])
        if call.name in model.own_macros:
            open_paren = blanked.index("(", call.start + len(call.name))
            out.append(text[call.start:open_paren + 1] + rewrite(text[open_paren + 1:call.end - 1], model) + ")")
            pos = call.end
            continue
        narrow = bool(model.narrow_params and call.args and re.fullmatch(r"\(?\s*([A-Za-z_]\w*)\s*\)?", call.args[0])
                      and call.args[0].strip("() \t\n") in narrow_mask_parameters(blanked, call.start))
        out.append(_rewrite_call(text, call, model, narrow, wide))
        pos = call.end
    out.append(text[pos:])
    return "".join(out)


def _rewrite_call(text: str, call: Call, model: Model, narrow: bool = False,
                  wide_names: frozenset[str] = frozenset()) -> str:
    """One call in its exact form; narrow: its mask is a 32-bit parameter of the calling function;
    wide_names: names the file declares 64-bit only (wide_names())."""
    original = text[call.start:call.end]
    if _followed_by_half(text, call.end) or (call.name == "__lane_id"):
        return original
    args = [rewrite(a, model) if CALL.search(a) else a for a in call.args]
    name = call.name
    full = bool(args) and bool(model.full_mask.fullmatch(args[0]))
    if narrow:
        model = replace(model, any_mask=True)
    if args and (GROUP_MASK.search(cpp.blank(args[0])) or TYPED_USE.match(args[0].strip())):  # already placed
        return original if args == list(call.args) else f"{name}({', '.join(args)})"
    if model.typed_mask and not full and not model.any_mask and not _wide(args[0] if args else "", wide_names):
        return _typed_call(name, args) or (original if args == list(call.args) else f"{name}({', '.join(args)})")
    if name.endswith("_sync") and name[:-5] in SHUFFLES and len(args) in (3, 4):
        width = args[3] if len(args) == 4 else "32"
        if full:
            return f"{name[:-5]}({args[1]}, {args[2]}, {width})"
        if model.any_mask:
            return f"{name}({group(args[0])}, {args[1]}, {args[2]}, {width})"
    elif name == "__ballot_sync" and len(args) == 2:
        if full:
            return half(f"__ballot({args[1]})")
        if model.any_mask:
            return half(f"__ballot_sync({group(args[0])}, {args[1]})")
    elif name in ("__any_sync", "__all_sync") and len(args) == 2:
        if full:
            votes = half(f"__ballot({args[1]})")
            return f"({votes} != 0u)" if name == "__any_sync" else f"({votes} == {half('__ballot(1)')})"
        if model.any_mask:
            return f"{name}({group(args[0])}, {args[1]})"
    elif name == "__match_any_sync" and len(args) == 2 and (full or model.any_mask):
        return half(f"__match_any_sync({group(args[0])}, {args[1]})")
    elif name == "__activemask" and not args and (model.legacy if model.activemask is None else model.activemask):
        return half("__ballot(1)")
    elif model.legacy and name in SHUFFLES and len(args) == 2:
        return f"{name}({args[0]}, {args[1]}, 32)"
    elif model.legacy and name == "__ballot" and len(args) == 1:
        return half(f"__ballot({args[0]})")
    elif model.legacy and name in ("__any", "__all") and len(args) == 1:
        votes = half(f"__ballot({args[0]})")
        return f"({votes} != 0u)" if name == "__any" else f"({votes} == {half('__ballot(1)')})"
    return original if args == list(call.args) else f"{name}({', '.join(args)})"


INTEGER_DECL = re.compile(r"\b(?P<type>(?:unsigned\s+|signed\s+)?long\s+long(?:\s+int)?|(?:unsigned\s+|signed\s+)?long(?:\s+int)?"
                          r"|(?:std::)?u?int64_t|size_t|uint64|(?:unsigned|signed)(?:\s+int)?|int|(?:std::)?u?int32_t)"
                          r"(?:\s+const)?\s+(?P<name>[A-Za-z_]\w*)\s*[=;,)\[]")
WIDE_TYPE = re.compile(r"long|64|size_t")
WIDE_MASK = re.compile(r"\(?\s*(?:(?:0[xX][0-9a-fA-F]+|\d+)(?:[uU]?(?:ll|LL|l|L)|(?:ll|LL|l|L)[uU])|~\s*0(?:[uU]?(?:ll|LL)|(?:ll|LL)[uU])"
                       r"|\(\s*(?:unsigned\s+long\s+long|u?int64_t|uint64)\s*\).*|(?:u?int64_t|uint64)\s*\(.*"
                       r"|__activemask\s*\(\s*\)|__ballot(?:64)?\s*\(.*)\s*\)?", re.DOTALL)


def wide_names(blanked: str) -> frozenset[str]:
    """Names `blanked` declares with a 64-bit integer type and never with a narrower one."""
    wide, narrow = set(), set()
    for m in INTEGER_DECL.finditer(blanked):
        (wide if WIDE_TYPE.search(m.group("type")) else narrow).add(m.group("name"))
    return frozenset(wide - narrow)


def _wide(mask: str, names: frozenset[str]) -> bool:
    """The mask is evidently HIP's 64-bit one: a 64-bit literal or cast, a 64-bit HIP vote, or a name the
    file declares 64-bit only (its call compiles as written and keeps its meaning)."""
    mask = mask.strip()
    return bool(WIDE_MASK.fullmatch(mask)) or mask.strip("() \t") in names


def _typed_call(name: str, args: list[str]) -> str | None:
    """The TYPED_HELPER form of a *_sync call whose mask (args[0]) may have either width, or None."""
    mask = args[0].strip() if args else ""
    if name.endswith("_sync") and name[:-5] in SHUFFLES and len(args) in (3, 4):
        width = args[3] if len(args) == 4 else f"rocmig_lane_width({mask})"
        return f"{name}(rocmig_lane_mask({mask}), {args[1]}, {args[2]}, {width})"
    if name == "__ballot_sync" and len(args) == 2:
        return f"rocmig_ballot_sync({mask}, {args[1]})"
    if name in ("__any_sync", "__all_sync") and len(args) == 2:
        return f"{name}(rocmig_lane_mask({mask}), {args[1]})"
    return None


def _wmma_bodies(blanked: str) -> list[tuple[int, int]]:
    """(start, end) offsets of the outermost brace blocks opened right after a `)` (function bodies,
    and the loops and ifs of code outside any function) that use WMMA (`wmma::`)."""
    pairs, stack = [], []
    for i, ch in enumerate(blanked):
        if ch == "{":
            stack.append(i)
        elif ch == "}" and stack:
            pairs.append((stack.pop(), i))
    bodies = sorted((s, e) for s, e in pairs if blanked[:s].rstrip().endswith(")") and "wmma::" in blanked[s:e])
    outermost: list[tuple[int, int]] = []
    for s, e in bodies:
        if not outermost or s > outermost[-1][1]:
            outermost.append((s, e))
    return outermost


HELPER_BLOCK = re.compile(r"^[ \t]*#[ \t]*if(?:ndef[ \t]+|[ \t]+!\s*defined\s*\(\s*)ROCMIG_\w+.*?^[ \t]*#[ \t]*endif\b",
                          re.MULTILINE | re.DOTALL)


def _helper_blocks(blanked: str) -> list[tuple[int, int]]:
    """(start, end) offsets of the helper blocks earlier fixups inserted (`#ifndef ROCMIG_...` or
    `#if !defined(ROCMIG_...) ...` up to its `#endif`; they hold no nested #if): their `warpSize` is HIP's
    default width of HIP's own signatures, which the rewritten calls of a CUDA tree always pass."""
    return [m.span() for m in HELPER_BLOCK.finditer(blanked)]


def rewrite_warp_size(text: str) -> str:
    """Device-code `warpSize` (not a member such as prop.warpSize) -> 32, CUDA's value, except in a
    function that uses WMMA: a rocWMMA fragment and its load / mma / store calls belong to the whole
    wavefront (64 lanes on CDNA), so a tile index computed per 32 threads would give one wavefront two
    tiles; there warpSize is kept and the wmma-fragment-wavefront finding stays open for the tile
    mapping, which has no exact rewrite (the launch of CUDA code sizes its grid for 32-thread warps).
    The helper blocks other fixups insert (_helper_blocks) are left too."""
    if "warpSize" not in text:
        return text
    blanked = cpp.blank(text)
    kept = (_wmma_bodies(blanked) if "wmma::" in blanked else []) + _helper_blocks(blanked)
    spans = [m.span() for m in WARP_SIZE.finditer(blanked) if not any(s < m.start() < e for s, e in kept)]
    for start, end in reversed(spans):
        text = text[:start] + "32" + text[end:]
    return text


HOST_WARP_SIZE_MEMBER = re.compile(r"(?:\.|->)\s*warpSize\b(?!\s*(?:[-+*/%&|^]|<<|>>)?=(?!=))")
TORCH_WARP_SIZE = re.compile(r"\bat::cuda::warp_size\s*\(\s*\)")
WARP_SIZE_ATTRIBUTE = re.compile(r"\bhipDeviceGetAttribute\s*\(")


def _object_start(blanked: str, end: int) -> int:
    """Start of the postfix expression that ends at `end` (`prop`, `props[i]`, `this->prop_`,
    `at::cuda::getCurrentDeviceProperties()`, `(*prop)`): names, `::`, `.`, `->` and balanced () / []
    going back."""
    k = end
    while k > 0 and blanked[k - 1] in " \t":
        k -= 1
    while k > 0:
        ch = blanked[k - 1]
        if blanked[max(k - 2, 0):k] in ("::", "->"):
            k -= 2
        elif ch.isalnum() or ch in "_.":
            k -= 1
        elif ch in ")]":
            opening, depth = ("[" if ch == "]" else "("), 0
            for j in range(k - 1, -1, -1):
                depth += 1 if blanked[j] == ch else -1 if blanked[j] == opening else 0
                if depth == 0:
                    break
            if depth:
                break
            k = j
        else:
            break
    return k


def rewrite_host_warp_size(text: str) -> str:
    """The device's warp size as host code reads it -> 32, CUDA's value, to match warp-size-cuda-32 and
    the 32-lane forms of the warp operations: `prop.warpSize` (hipDeviceProp_t, also through `->` and
    `at::cuda::getCurrentDeviceProperties()->warpSize`), `at::cuda::warp_size()`, and
    `hipDeviceGetAttribute(&v, hipDeviceAttributeWarpSize, d)` (hipify's name for cudaDeviceGetAttribute
    and cuDeviceGetAttribute with the warp-size attribute), which becomes a call that queries the device
    as before and then stores 32 when it succeeded. A CUDA program that passes the queried value to its
    kernels (`o = ws / 2` shuffle offsets, `threads / prop.warpSize` slots of shared memory) then sizes
    them for 32-lane warps, as the migrated kernels are: with HIP's 64 on wave64, width-32 shuffles
    from offset 32 return the lane's own value and per-warp slots are too few. An assignment to the
    member (`prop.warpSize = 64;`) is kept."""
    if "warpSize" not in text and "warp_size" not in text and "WarpSize" not in text:
        return text
    blanked = cpp.blank(text)
    edits: list[tuple[int, int, str]] = []
    for m in HOST_WARP_SIZE_MEMBER.finditer(blanked):
        start = _object_start(blanked, m.start())
        if start < m.start():
            edits.append((start, m.end(), "32"))
    edits += [(m.start(), m.end(), "32") for m in TORCH_WARP_SIZE.finditer(blanked)]
    for m in WARP_SIZE_ATTRIBUTE.finditer(blanked):
        close = cpp.closing_paren(blanked, m.end())
        if close is None:
            continue
        args = cpp.split_args(text[m.end():close - 1], blanked[m.end():close - 1])
        if len(args) == 3 and args[1].strip() == "hipDeviceAttributeWarpSize":
            value, device = args[0].strip(), args[2].strip()
            edits.append((m.start(), close,
                          f"[&]() {{ hipError_t rocmig_status = hipDeviceGetAttribute({value}, hipDeviceAttributeWarpSize, "
                          f"{device}); if (rocmig_status == hipSuccess) *({value}) = 32; return rocmig_status; }}()"))
    for start, end, new in sorted(edits, reverse=True):
        text = text[:start] + new + text[end:]
    return text


@dataclass(frozen=True)
class Op:
    """A warp operation of migrated code: line (1-based), kind ("group32": works on 32-lane groups;
    "wavefront": works on, or reads the size of, the whole wavefront; "unknown": width not a
    constant), text (the call or name)."""

    line: int
    kind: str
    text: str


def ops(text: str, symbols: dict[str, str], dead: set[int] | frozenset[int] = frozenset()) -> list[Op]:
    """Classify the warp operations of migrated (HIP) code, skipping lines in `dead`."""
    if not CALL.search(text) and "warpSize" not in text and not WAVEFRONT_NAMES.search(text):
        return []
    blanked = cpp.blank(text)
    found: list[Op] = []
    for name in HELPER_GUARDS:
        guard = blanked.find(f"#ifndef {name}")
        if guard >= 0:
            first, end = cpp.line_of(blanked, guard), blanked.find("#endif", guard)
            dead = set(dead) | set(range(first, cpp.line_of(blanked, end if end >= 0 else len(blanked)) + 1))

    def add(offset: int, kind: str, what: str) -> None:
        number = cpp.line_of(blanked, offset)
        if number not in dead:
            found.append(Op(number, kind, what.strip()[:80]))

    for call in _all_calls(text, blanked):
        shown = text[call.start:call.end]
        name = call.name.removesuffix("_sync")
        if name == "__lane_id":
            if not re.match(r"\s*&\s*32\s*\)", blanked[call.end:]):
                add(call.start, "wavefront", shown)
            continue
        if _followed_by_half(blanked, call.end):
            add(call.start, "group32", shown)
            continue
        if name in SHUFFLES:
            base = 1 if call.name.endswith("_sync") else 0
            if len(call.args) < base + 3:
                add(call.start, "wavefront", shown)
                continue
            width = cpp.evaluate(cpp.blank(call.args[base + 2]), symbols)
            if width is None and WARP_SIZE.search(call.args[base + 2]):
                add(call.start, "wavefront", shown)
            elif width is None:
                add(call.start, "unknown", shown)
            else:
                add(call.start, "group32" if width <= 32 else "wavefront", shown)
        elif name in ("__ballot", "__ballot64", "__any", "__all", "__activemask", "__match_any", "__match_all"):
            grouped = call.name.endswith("_sync") and call.args and GROUP_MASK.search(call.args[0])
            add(call.start, "group32" if grouped else "wavefront", shown)
    tests = {cpp.line_of(blanked, m.start()) for m in DIRECTIVE.finditer(blanked)}  # #if lines test, not use
    for m in WARP_SIZE.finditer(blanked):
        if cpp.line_of(blanked, m.start()) not in tests:
            add(m.start(), "wavefront", "warpSize")
    for m in WAVEFRONT_NAMES.finditer(blanked):
        if cpp.line_of(blanked, m.start()) not in tests:
            add(m.start(), "wavefront", m.group(1))
    found.sort(key=lambda o: o.line)
    return found


def _all_calls(text: str, blanked: str) -> list[Call]:
    """Every warp-intrinsic call, nested ones included."""
    found = []
    for call in calls(text, blanked):
        found.append(call)
        head = call.start + len(call.name)
        open_paren = blanked.index("(", head)
        inner_text, inner_blanked = text[open_paren + 1:call.end - 1], blanked[open_paren + 1:call.end - 1]
        found += [Call(c.name, c.start + open_paren + 1, c.end + open_paren + 1, c.args)
                  for c in _all_calls(inner_text, inner_blanked)]
    return found
