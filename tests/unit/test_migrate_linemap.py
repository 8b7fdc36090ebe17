"""linemap.map_lines on edits like hipify's and the fixups': lines rewritten in place, inserted, deleted."""

import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "recipes" / "migrate"))

from migrate import linemap  # noqa: E402


def _edited(old: list[str], seed: int) -> tuple[list[str], list[int | None]]:
    """A random edit of `old` and the true line map: 2 % deleted, 2 % followed by an inserted line,
    6 % rewritten in place."""
    rng, new, truth = random.Random(seed), [], []
    for line in old:
        r = rng.random()
        if r < 0.02:
            truth.append(None)
            continue
        truth.append(len(new))
        if r < 0.04:
            new += [line, "#include <hip/hip_runtime.h>"]
        elif r < 0.10:
            new.append(line.replace("cuda", "hip") + " // rewritten")
        else:
            new.append(line)
    return new, truth


def test_every_unique_kept_line_maps_to_where_it_went():
    """A header shaped like CUTLASS's: many repeated lines (braces, blanks, the same statement)
    around unique ones; each unique line that survives maps to its true place."""
    rng = random.Random(7)
    old = []
    for n in range(3000):
        old += [f"template <int N{n}> struct mma_{n} {{", "  cudaStream_t s;", "", "}", rng.choice(["", "}", "  ;"])]
    for seed in range(3):
        new, truth = _edited(old, seed)
        mapped = linemap.map_lines(old, new)
        unique = [i for i, line in enumerate(old) if line.startswith("template")]
        assert all(mapped[i] == truth[i] for i in unique if truth[i] is not None and new[truth[i]] == old[i])
        assert all(mapped[i] is None or mapped[i] < len(new) for i in range(len(old)))
        kept = [m for m in mapped if m is not None]
        assert kept == sorted(kept) and len(set(kept)) == len(kept)


def test_equal_texts_and_crlf_map_one_to_one():
    old = ["}", "", "}"] * 20000 + ["a\r", "b"]
    assert linemap.map_lines(old, [line.rstrip("\r") for line in old]) == list(range(len(old)))
    assert linemap.map_lines([], ["x"]) == [] and linemap.map_lines(["x"], []) == [None]


def test_a_rewritten_run_maps_line_by_line():
    old = ["#include <cuda.h>", "a", "b", "c", "d"]
    assert linemap.map_lines(old, ["#include <hip/hip_runtime.h>", "A", "B", "c", "d"]) == [0, 1, 2, 3, 4]
    assert linemap.map_lines(old, ["#include <hip/hip_runtime.h>", "X", "c", "d"]) == [0, 1, None, 2, 3]


def test_nested_anchor_gaps_are_not_limited_by_the_call_stack():
    """A pair whose anchors each leave a gap with anchors of its own, 1200 levels deep."""
    k = 1200
    old = ["p"] + [x for i in range(k, 0, -1) for x in (f"M{i}", f"M{i - 1}")]
    new = ["q"] + [x for i in range(k, 0, -1) for x in (f"M{i}", f"B{i}")]
    mapped = linemap.map_lines(old, new)
    kept = [m for m in mapped if m is not None]
    assert len(mapped) == len(old) and kept == sorted(set(kept)) and kept[-1] < len(new)
