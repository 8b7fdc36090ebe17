"""libcu++'s scoped atomics on HIP: the fixup libcudacxx-atomic.

ROCm has no libcu++, so `#include <cuda/atomic>` is not found and `cuda::atomic_ref<T, cuda::thread_scope_device>`
(hash maps, counters, flags: DGL's sampling, numba-cuda's NRT) has no HIP name. cuda_atomic.h gives the same
types on HIP's scoped atomic builtins (`__hip_atomic_fetch_add(p, v, order, __HIP_MEMORY_SCOPE_AGENT)`); this
step renames libcu++'s names to it and puts its text where `<cuda/atomic>` or `<cuda/std/atomic>` was
included, or, in a file that names them without that include, before its first live #include
(launch.first_live_include).
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

from . import cpp, launch

HEADER = Path(__file__).with_name("cuda_atomic.h")
NAMES = ("atomic_ref", "atomic", "thread_scope_system", "thread_scope_device", "thread_scope_block", "thread_scope_thread",
         "thread_scope", "memory_order_relaxed", "memory_order_consume", "memory_order_acquire", "memory_order_release",
         "memory_order_acq_rel", "memory_order_seq_cst", "memory_order")
# `cuda::atomic_ref`, `::cuda::std::atomic`, `cuda::memory_order_relaxed`, ... (not cuda::std::atomic_thread_fence)
NAME = re.compile(r"(?<![\w.>:])(?:::)?cuda::(?:std::)?(" + "|".join(NAMES) + r")\b")
INCLUDE = re.compile(r"^[ \t]*#[ \t]*include[ \t]*<cuda/(?:std/)?atomic>[^\n]*$", re.MULTILINE)
MARK = "  // rocmig: cuda_atomic.h below"


@functools.cache
def header_text() -> str:
    """The text of cuda_atomic.h, read once per run."""
    return HEADER.read_text(encoding="utf-8")


def rename(text: str, dead: set[int] | frozenset[int] = frozenset()) -> str:
    """`text` with libcu++'s atomic names (NAMES under `cuda::` or `cuda::std::`, outside comments and
    strings) -> `rocmig_cuda::` names, and each `#include <cuda/atomic>` / `<cuda/std/atomic>` line marked
    for header(); a file that renamed names but includes neither gets the mark on its first live #include
    (`dead`: 1-based lines not compiled on AMD). The function-like `cuda::std::atomic_thread_fence(...)`
    and the other libcu++ names are left (the cuda-libcudacxx finding)."""
    blanked = cpp.blank(text)
    renamed = list(NAME.finditer(blanked))
    includes = list(INCLUDE.finditer(blanked))
    if not renamed and not includes:
        return text
    for m in reversed(renamed):
        text = text[:m.start()] + "rocmig_cuda::" + m.group(1) + text[m.end():]
    lines = text.split("\n")
    for m in includes:
        k = cpp.line_of(blanked, m.start()) - 1
        lines[k] = "// " + lines[k].strip() + MARK
    if not includes:
        first = launch.first_live_include(text, cpp.blank(text).split("\n"), dead)
        if first is None:
            return text
        lines[first] += MARK
    return "\n".join(lines)


def header(text: str) -> str:
    """`text` with cuda_atomic.h before each line rename() marked (its guard keeps one copy per unit)."""
    while MARK in text:
        text = launch.place(text, MARK, header_text())
    return text
