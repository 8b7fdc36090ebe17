"""Map line numbers between two versions of a file (CUDA input -> hipify output -> fixed output)."""

from __future__ import annotations

import difflib


def map_lines(old: list[str], new: list[str]) -> list[int | None]:
    """For each 0-based line of `old`, the 0-based line of `new` it became, or None when deleted.

    Equal runs map one to one; a replaced run maps line by line while both sides last (hipify and
    the fixups rewrite within lines), and the rest of the longer side maps to None. Lines compare
    without a trailing carriage return: a CRLF input's migrated text has LF line ends (it is read
    back with Python's universal newlines), and its lines are the same lines.
    """
    result: list[int | None] = [None] * len(old)
    matcher = difflib.SequenceMatcher(None, [line.rstrip("\r") for line in old], [line.rstrip("\r") for line in new],
                                      autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag in ("equal", "replace"):
            for k in range(min(i2 - i1, j2 - j1)):
                result[i1 + k] = j1 + k
    return result
