"""Log lines as the matcher reads them: colour codes removed, wrapped compiler messages joined, numeric
HSA status codes named.

- clang and gcc wrap a long diagnostic when the terminal (or CMake / ninja) sets a message width: the
  ``file:line:col: error:`` head ends the line and the message follows on lines indented by six spaces.
  Those continuation lines are joined to the head, so a pattern or a signature sees the whole message.
- A log copied from a terminal of fixed width breaks a long line anywhere, also inside a quoted name
  (``fatal error: 'hip/amd_detail/amd_hip_b`` / ``f16.h' file not found``): a diagnostic line that ends
  inside a quote is joined, without a space, to the next line when that line closes the quote.
- ROCr tools print a failed call's ``hsa_status_t`` as a number (rocminfo: ``Call returned 4104``); the
  name of that status (``HSA_STATUS_ERROR_OUT_OF_RESOURCES``) is appended to the line so the entries
  written for the name also match the number. The values are those of ROCr's hsa.h.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
_DIAGNOSTIC_HEAD = re.compile(r"\b(?:fatal error|error|warning|note):\s*$")
_CONTINUATION = re.compile(r"^ {6}(?! )(?!\s*\d*\s*\|)\S")
MAX_CONTINUATION_LINES = 4
_OPEN_QUOTE = re.compile(r"\b(?:fatal error|error|warning|note): (?:[^']*'[^']*')*[^']*'[^']*$")

# hsa_status_t values of ROCr's include/hsa/hsa.h (HSA_STATUS_ERROR = 0x1000 ... 0x1026).
HSA_STATUS_NAMES = {
    0x1000: "HSA_STATUS_ERROR", 0x1001: "HSA_STATUS_ERROR_INVALID_ARGUMENT",
    0x1002: "HSA_STATUS_ERROR_INVALID_QUEUE_CREATION", 0x1003: "HSA_STATUS_ERROR_INVALID_ALLOCATION",
    0x1004: "HSA_STATUS_ERROR_INVALID_AGENT", 0x1005: "HSA_STATUS_ERROR_INVALID_REGION",
    0x1006: "HSA_STATUS_ERROR_INVALID_SIGNAL", 0x1007: "HSA_STATUS_ERROR_INVALID_QUEUE",
    0x1008: "HSA_STATUS_ERROR_OUT_OF_RESOURCES", 0x1009: "HSA_STATUS_ERROR_INVALID_PACKET_FORMAT",
    0x100A: "HSA_STATUS_ERROR_RESOURCE_FREE", 0x100B: "HSA_STATUS_ERROR_NOT_INITIALIZED",
    0x100C: "HSA_STATUS_ERROR_REFCOUNT_OVERFLOW", 0x100D: "HSA_STATUS_ERROR_INCOMPATIBLE_ARGUMENTS",
    0x100E: "HSA_STATUS_ERROR_INVALID_INDEX", 0x100F: "HSA_STATUS_ERROR_INVALID_ISA",
    0x1010: "HSA_STATUS_ERROR_INVALID_CODE_OBJECT", 0x1011: "HSA_STATUS_ERROR_INVALID_EXECUTABLE",
    0x1012: "HSA_STATUS_ERROR_FROZEN_EXECUTABLE", 0x1013: "HSA_STATUS_ERROR_INVALID_SYMBOL_NAME",
    0x1014: "HSA_STATUS_ERROR_VARIABLE_ALREADY_DEFINED", 0x1015: "HSA_STATUS_ERROR_VARIABLE_UNDEFINED",
    0x1016: "HSA_STATUS_ERROR_EXCEPTION", 0x1017: "HSA_STATUS_ERROR_INVALID_ISA_NAME",
    0x1018: "HSA_STATUS_ERROR_INVALID_CODE_SYMBOL", 0x1019: "HSA_STATUS_ERROR_INVALID_EXECUTABLE_SYMBOL",
    0x1020: "HSA_STATUS_ERROR_INVALID_FILE", 0x1021: "HSA_STATUS_ERROR_INVALID_CODE_OBJECT_READER",
    0x1022: "HSA_STATUS_ERROR_INVALID_CACHE", 0x1023: "HSA_STATUS_ERROR_INVALID_WAVEFRONT",
    0x1024: "HSA_STATUS_ERROR_INVALID_SIGNAL_GROUP", 0x1025: "HSA_STATUS_ERROR_INVALID_RUNTIME_STATE",
    0x1026: "HSA_STATUS_ERROR_FATAL",
}
# A number printed as an hsa_status_t: "hsa api call failure ... Call returned 4104", "hsa_status 0x1008".
_HSA_NUMBER = re.compile(r"\b(?:call returned|hsa_status(?:_t)?|hsa error|hsa status)\W{0,3}(0x1[0-9a-f]{3}|4[01]\d\d)\b",
                         re.IGNORECASE)


def name_hsa_status(line: str) -> str:
    """``line`` with ``(HSA_STATUS_...)`` appended when it prints a known hsa_status_t as a number."""
    m = _HSA_NUMBER.search(line)
    if not m or "HSA_STATUS_" in line:
        return line
    name = HSA_STATUS_NAMES.get(int(m.group(1), 0))
    return f"{line} ({name})" if name else line


def prepare(lines: Sequence[str], numbers: Sequence[int]) -> tuple[list[str], list[int]]:
    """The matcher's lines and their 1-based numbers for raw log ``lines`` (module docstring): a joined
    diagnostic keeps the number of its head line; every other line is kept one for one."""
    clean = [_ANSI.sub("", line) for line in lines]
    out: list[str] = []
    out_numbers: list[int] = []
    i = 0
    while i < len(clean):
        line, j = clean[i], i + 1
        if _DIAGNOSTIC_HEAD.search(line):
            parts = [line.rstrip()]
            while j < len(clean) and j - i <= MAX_CONTINUATION_LINES and _CONTINUATION.match(clean[j]):
                parts.append(clean[j].strip())
                j += 1
            line = " ".join(parts)
        elif _OPEN_QUOTE.search(line) and j < len(clean) and "'" in clean[j]:
            line, j = line + clean[j], j + 1
        out.append(name_hsa_status(line))
        out_numbers.append(numbers[i])
        i = j
    return out, out_numbers
