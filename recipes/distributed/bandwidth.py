"""Collective bandwidth arithmetic as nccl-tests / rccl-tests define it (torch-free).

Source: NVIDIA nccl-tests, doc/PERFORMANCE.md ("algbw" and "busbw"): algbw = S / t, where S is the
message size in bytes and t the time of one collective call; busbw = algbw * factor, with
factor = 2(n-1)/n for all-reduce, (n-1)/n for all-gather and reduce-scatter, 1 for broadcast and reduce.
rccl-tests (ROCm's fork) keeps the same definitions. Bandwidths here are in GB/s (1e9 bytes/s), as there.
"""

from __future__ import annotations

import re

_UNITS = {"": 1, "B": 1, "K": 1 << 10, "KB": 1 << 10, "KIB": 1 << 10, "M": 1 << 20, "MB": 1 << 20,
          "MIB": 1 << 20, "G": 1 << 30, "GB": 1 << 30, "GIB": 1 << 30}
_BUS_FACTOR = {
    "all_reduce": lambda n: 2 * (n - 1) / n,
    "all_gather": lambda n: (n - 1) / n,
    "reduce_scatter": lambda n: (n - 1) / n,
    "broadcast": lambda n: 1.0,
    "reduce": lambda n: 1.0,
}


def parse_size(text: str, flag: str = "--min-bytes") -> int:
    """Parse a byte count like '8', '64K', '1M', '1G' or '1GiB' (binary units, as nccl-tests' -b/-e).

    Returns bytes (int > 0). Raises ValueError naming `flag` for anything else.
    """
    m = re.fullmatch(r"\s*(\d+)\s*([A-Za-z]*)\s*", text)
    if not m or m.group(2).upper() not in _UNITS or int(m.group(1)) <= 0:
        raise ValueError(f"{flag} {text!r}: expected a positive byte count like 8, 64K, 1M, 1G or 1GiB")
    return int(m.group(1)) * _UNITS[m.group(2).upper()]


def message_sizes(min_bytes: int, max_bytes: int, factor: int = 2) -> list[int]:
    """Geometric series of message sizes in bytes, min_bytes * factor**k <= max_bytes (nccl-tests -b -e -f).

    Raises ValueError if min_bytes < 1, max_bytes < min_bytes or factor < 2.
    """
    if min_bytes < 1 or max_bytes < min_bytes:
        raise ValueError(f"message sizes: need 1 <= --min-bytes <= --max-bytes, got {min_bytes} and {max_bytes}")
    if factor < 2:
        raise ValueError(f"--factor {factor}: must be an integer >= 2")
    sizes, s = [], min_bytes
    while s <= max_bytes:
        sizes.append(s)
        s *= factor
    return sizes


def bus_factor(collective: str, world_size: int) -> float:
    """The busbw/algbw ratio for `collective` over `world_size` ranks (nccl-tests PERFORMANCE.md).

    Raises ValueError for an unknown collective or world_size < 1.
    """
    if collective not in _BUS_FACTOR:
        raise ValueError(f"collective {collective!r} unknown (allowed: {', '.join(_BUS_FACTOR)})")
    if world_size < 1:
        raise ValueError(f"world size must be >= 1, got {world_size}")
    return _BUS_FACTOR[collective](world_size)


def algbw_gbps(size_bytes: int, seconds: float) -> float:
    """Algorithm bandwidth in GB/s (1e9 B/s): size_bytes / seconds. Raises ValueError if seconds <= 0."""
    if seconds <= 0:
        raise ValueError(f"time must be > 0 s, got {seconds}")
    return size_bytes / seconds / 1e9


def busbw_gbps(size_bytes: int, seconds: float, world_size: int, collective: str = "all_reduce") -> float:
    """Bus bandwidth in GB/s: algbw * bus_factor(collective, world_size)."""
    return algbw_gbps(size_bytes, seconds) * bus_factor(collective, world_size)


def format_row(size_bytes: int, dtype_bytes: int, dtype: str, seconds: float, world_size: int) -> str:
    """One result line in nccl-tests' column order: size(B) count type redop time(us) algbw busbw (GB/s)."""
    return (f"{size_bytes:>12d} {size_bytes // dtype_bytes:>12d} {dtype:>8s} {'sum':>6s} "
            f"{seconds * 1e6:>12.1f} {algbw_gbps(size_bytes, seconds):>8.3f} "
            f"{busbw_gbps(size_bytes, seconds, world_size):>8.3f}")


HEADER = (f"{'size(B)':>12s} {'count':>12s} {'type':>8s} {'redop':>6s} {'time(us)':>12s} "
          f"{'algbw':>8s} {'busbw':>8s}   (GB/s)")
