"""Map line numbers between two versions of a file (CUDA input -> hipify output -> fixed output)."""

from __future__ import annotations

import bisect
import difflib
from collections import Counter


def map_lines(old: list[str], new: list[str]) -> list[int | None]:
    """For each 0-based line of `old`, the 0-based line of `new` it became, or None when deleted.

    Equal runs map one to one; a replaced run of equal length maps line by line (hipify and the fixups
    rewrite within lines); in a replaced run of unequal length (a translator or fixup also added or
    removed lines: torch.utils.hipify's banner and hip_runtime.h include above a changed include) each
    line pairs with the most similar line in order (_pair_by_similarity), and the lines between two
    such pairs pair from the top as far as both sides last. Lines compare
    without a trailing carriage return: a CRLF input's migrated text has LF line ends (it is read
    back with Python's universal newlines), and its lines are the same lines.

    The common head and tail map one to one, and the middle is split at lines that occur once on
    each side (patience diff's anchors); difflib's SequenceMatcher aligns what lies between two
    anchors. SequenceMatcher alone (autojunk off) is quadratic in a file's repeated lines: 5 to 8 s
    for one 60 000-line CUTLASS header, even for two equal texts.
    """
    result: list[int | None] = [None] * len(old)
    _align([line.rstrip("\r") for line in old], [line.rstrip("\r") for line in new], 0, len(old), 0, len(new), result)
    return result


def _align(a: list[str], b: list[str], i1: int, i2: int, j1: int, j2: int, result: list[int | None]) -> None:
    """Fill result[i] for a[i1:i2] aligned with b[j1:j2] (see map_lines); the gaps between anchors
    are kept on a work list, not a call stack, so no input is too deep."""
    work = [(i1, i2, j1, j2)]
    while work:
        i1, i2, j1, j2 = work.pop()
        while i1 < i2 and j1 < j2 and a[i1] == b[j1]:
            result[i1] = j1
            i1, j1 = i1 + 1, j1 + 1
        while i1 < i2 and j1 < j2 and a[i2 - 1] == b[j2 - 1]:
            i2, j2 = i2 - 1, j2 - 1
            result[i2] = j2
        if i1 == i2 or j1 == j2:
            continue
        anchors = _anchors(a, b, i1, i2, j1, j2)
        if not anchors:
            matcher = difflib.SequenceMatcher(None, a[i1:i2], b[j1:j2], autojunk=False)
            for tag, k1, k2, l1, l2 in matcher.get_opcodes():
                if tag == "equal" or (tag == "replace" and k2 - k1 == l2 - l1):
                    for k in range(k2 - k1):
                        result[i1 + k1 + k] = j1 + l1 + k
                elif tag == "replace":
                    for k, m in _pair_by_similarity(a[i1 + k1:i1 + k2], b[j1 + l1:j1 + l2]):
                        result[i1 + k1 + k] = j1 + l1 + m
            continue
        for i, j in anchors:
            work.append((i1, i, j1, j))
            result[i] = j
            i1, j1 = i + 1, j + 1
        work.append((i1, i2, j1, j2))


# a replaced run this large (lines x lines) pairs from the top instead: similarity is quadratic in it
SIMILARITY_CELLS = 2500
# the least difflib ratio at which two lines of a replaced run pair
SIMILAR = 0.5


def _pair_by_similarity(a: list[str], b: list[str]) -> list[tuple[int, int]]:
    """(k, m) pairs, increasing in both, that pair lines of a replaced run a -> b: the order-keeping
    matching of greatest total similarity (difflib ratio of the stripped lines) among pairs at least
    SIMILAR alike, and between two of those (and before the first, after the last) the remaining lines
    from the top as far as both sides last; a run of more than SIMILARITY_CELLS line pairs pairs from
    the top only."""
    if len(a) * len(b) > SIMILARITY_CELLS:
        return [(k, k) for k in range(min(len(a), len(b)))]
    score = [[difflib.SequenceMatcher(None, x.strip(), y.strip()).ratio() for y in b] for x in a]
    best = [[0.0] * (len(b) + 1) for _ in range(len(a) + 1)]
    for k in range(len(a) - 1, -1, -1):
        for m in range(len(b) - 1, -1, -1):
            take = best[k + 1][m + 1] + score[k][m] if score[k][m] >= SIMILAR else -1.0
            best[k][m] = max(take, best[k + 1][m], best[k][m + 1])
    similar, k, m = [], 0, 0
    while k < len(a) and m < len(b):
        if score[k][m] >= SIMILAR and best[k][m] == best[k + 1][m + 1] + score[k][m]:
            similar.append((k, m))
            k, m = k + 1, m + 1
        elif best[k][m] == best[k + 1][m]:
            k += 1
        else:
            m += 1
    pairs, k, m = [], 0, 0
    for k_end, l_end in [*similar, (len(a), len(b))]:
        pairs.extend((k + n, m + n) for n in range(min(k_end - k, l_end - m)))
        if k_end < len(a):
            pairs.append((k_end, l_end))
        k, m = k_end + 1, l_end + 1
    return pairs


def _anchors(a: list[str], b: list[str], i1: int, i2: int, j1: int, j2: int) -> list[tuple[int, int]]:
    """(i, j) pairs, increasing in both, of lines that occur exactly once in a[i1:i2] and once in
    b[j1:j2]: the longest increasing chain of such pairs (patience sorting)."""
    count_a, count_b = Counter(a[i1:i2]), Counter(b[j1:j2])
    where_b = {b[j]: j for j in range(j1, j2) if count_b[b[j]] == 1}
    pairs = [(i, where_b[a[i]]) for i in range(i1, i2) if count_a[a[i]] == 1 and a[i] in where_b]
    # longest increasing subsequence of the j's (pairs are in increasing i)
    tails: list[int] = []
    tail_at: list[int] = []
    back: list[int] = [-1] * len(pairs)
    for n, (_i, j) in enumerate(pairs):
        k = bisect.bisect_left(tails, j)
        if k == len(tails):
            tails.append(j)
            tail_at.append(n)
        else:
            tails[k], tail_at[k] = j, n
        back[n] = tail_at[k - 1] if k else -1
    chain, n = [], tail_at[-1] if tail_at else -1
    while n != -1:
        chain.append(pairs[n])
        n = back[n]
    return chain[::-1]
