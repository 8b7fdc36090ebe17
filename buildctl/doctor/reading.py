"""Read a log for the doctor: refuse binary input, and keep memory bounded however long the log is.

A log of any size is read as a stream of byte chunks. Up to HEAD_BYTES + TAIL_BYTES everything is kept;
beyond that the doctor keeps the first ``HEAD_BYTES``, the last ``TAIL_BYTES`` and, from the middle, only lines
that look like errors or warnings (``SALIENT``), at most ``MAX_MIDDLE_LINES`` of them (the latest win).
Each kept line keeps its real 1-based line number, so evidence still points into the original file.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import BinaryIO

CHUNK_BYTES = 1 << 20
SNIFF_BYTES = 8192
HEAD_BYTES = 1 << 20
TAIL_BYTES = 4 << 20
MAX_MIDDLE_LINES = 20_000
MAX_LINE_CHARS = 4000  # longer lines are kept only up to this many characters

# Lines worth keeping from the middle of a huge log: one of these (lower-case) words is on the line.
SALIENT_WORDS = (
    b"error", b"fail", b"fatal", b"fault", b"warn", b"abort", b"killed", b"denied", b"unable", b"cannot",
    b"can't", b"not found", b"no such", b"exception", b"traceback", b"timeout", b"timed out", b"hang",
    b"segmentation", b"hiperror", b"hsa_status", b"_status_", b"amdgpu", b"kfd", b"out of memory",
    b"invalid", b"not supported", b"unsupported", b"mismatch", b"undefined",
)


def salient_lines(block: bytes, first_line: int) -> list[tuple[int, bytes]]:
    """(line number, line) of the lines of ``block`` (whole lines; its first is number ``first_line``)
    that hold a SALIENT_WORDS word, in order. Runs bytes.find over the block, so it costs about one
    pass of memchr per word rather than a regex per line."""
    lower = block.lower()
    starts: set[int] = set()
    for word in SALIENT_WORDS:
        pos = lower.find(word)
        while pos != -1:
            start = lower.rfind(b"\n", 0, pos) + 1
            starts.add(start)
            end = lower.find(b"\n", pos)
            if end == -1:
                break
            pos = lower.find(word, end)
    out: list[tuple[int, bytes]] = []
    line, prev = first_line, 0
    for start in sorted(starts):
        line += block.count(b"\n", prev, start)
        prev = start
        end = block.find(b"\n", start)
        out.append((line, block[start:] if end == -1 else block[start:end]))
    return out


# Magic numbers of binary formats people pass by mistake, and what to say about them.
_MAGIC = (
    (b"\x7fELF", "an ELF binary (executable, .so or .o)"),
    (b"\x1f\x8b", "gzip-compressed (decompress it first: zcat LOG | buildctl doctor -)"),
    (b"PK\x03\x04", "a zip archive (unpack it and give the log inside)"),
    (b"\xfd7zXZ\x00", "xz-compressed (decompress it first: xzcat LOG | buildctl doctor -)"),
    (b"\x28\xb5\x2f\xfd", "zstd-compressed (decompress it first: zstdcat LOG | buildctl doctor -)"),
    (b"BZh", "bzip2-compressed (decompress it first: bzcat LOG | buildctl doctor -)"),
    (b"\x89PNG", "a PNG image"),
    (b"%PDF", "a PDF document"),
    (b"!<arch>", "an ar archive (.a or .deb)"),
)
_TEXT_CONTROL_OK = frozenset(b"\t\n\r\x0c\x1b\x08")


class BinaryInput(ValueError):
    """The input is not a text log; the message says what it looks like (one line)."""


def sniff_binary(head: bytes) -> str | None:
    """What ``head`` (the first bytes of an input) looks like when it is not text, else None.

    Text is UTF-8 or Latin-1 with few control characters; NUL bytes or more than 10% control bytes
    (other than tab, newline, CR, form feed, backspace and ESC) mean binary.
    """
    if head.startswith(b"BZh") and not head[3:4].isdigit():
        return None
    for magic, what in _MAGIC:
        if head.startswith(magic):
            return what
    if b"\x00" in head:
        return "binary data (it contains NUL bytes)"
    if head:
        control = sum(1 for b in head if b < 32 and b not in _TEXT_CONTROL_OK)
        if control * 10 > len(head):
            return f"binary data ({control} of the first {len(head)} bytes are control characters)"
    return None


@dataclass
class LogText:
    """A log as kept for matching: ``lines`` with their 1-based ``numbers`` in the original input.

    ``total_lines`` and ``total_bytes`` describe the whole input; ``omitted_lines`` counts lines of the
    middle that were not kept (0 when the whole log was kept).
    """

    lines: list[str] = field(default_factory=list)
    numbers: list[int] = field(default_factory=list)
    total_lines: int = 0
    total_bytes: int = 0
    omitted_lines: int = 0

    @property
    def note(self) -> str | None:
        """One line saying how much of a huge log was searched, or None when all of it was."""
        if not self.omitted_lines:
            return None
        mib = self.total_bytes / (1 << 20)
        return (f"log is {mib:.0f} MiB ({self.total_lines} lines): searched the first {HEAD_BYTES >> 20} MiB, "
                f"the last {TAIL_BYTES >> 20} MiB and the error/warning lines between "
                f"({self.omitted_lines} other lines skipped)")

    @property
    def text(self) -> str:
        """The kept lines joined by newlines."""
        return "\n".join(self.lines)


def _decode(raw: bytes) -> str:
    return raw.decode("utf-8", errors="replace")[:MAX_LINE_CHARS]


def read_stream(stream: BinaryIO, progress: Callable[[int], None] | None = None) -> LogText:
    """Read ``stream`` to its end in CHUNK_BYTES pieces with memory bounded by the constants above.

    ``progress``, when given, is called after every chunk with the bytes read so far.
    Raises BinaryInput when the first SNIFF_BYTES are not text, OSError when reading fails.
    """
    out = LogText()
    head: list[tuple[int, bytes]] = []
    middle: deque[tuple[int, bytes]] = deque(maxlen=MAX_MIDDLE_LINES)
    blocks: deque[tuple[int, bytes]] = deque()  # (number of the block's first line, whole lines)
    tail_bytes = head_bytes = 0
    line_no = 0  # lines seen so far
    pending = b""
    first = True
    while True:
        chunk = stream.read(CHUNK_BYTES)
        if first:
            what = sniff_binary(chunk[:SNIFF_BYTES])
            if what:
                raise BinaryInput(what)
            first = False
        if not chunk:
            break
        out.total_bytes += len(chunk)
        if progress is not None:
            progress(out.total_bytes)
        data = pending + chunk
        cut = data.rfind(b"\n")
        if cut < 0:
            pending = data[: 4 * MAX_LINE_CHARS]  # one endless line: keep its start only
            continue
        pending, data = data[cut + 1:], data[:cut]
        if head_bytes < HEAD_BYTES:
            for raw in data.split(b"\n"):
                line_no += 1
                if head_bytes < HEAD_BYTES:
                    head.append((line_no, raw))
                    head_bytes += len(raw) + 1
                else:
                    blocks.append((line_no, raw))
                    tail_bytes += len(raw) + 1
            continue
        blocks.append((line_no + 1, data))
        line_no += data.count(b"\n") + 1
        tail_bytes += len(data) + 1
        while len(blocks) > 1 and tail_bytes - len(blocks[0][1]) - 1 >= TAIL_BYTES:
            start, old = blocks.popleft()
            tail_bytes -= len(old) + 1
            middle.extend(salient_lines(old, start))
    if pending:
        line_no += 1
        if head_bytes < HEAD_BYTES:
            head.append((line_no, pending))
        else:
            blocks.append((line_no, pending))
    tail = [(start + n, raw) for start, block in blocks for n, raw in enumerate(block.split(b"\n"))]
    out.total_lines = line_no
    for number, raw in (*head, *middle, *tail):
        out.numbers.append(number)
        out.lines.append(_decode(raw))
    out.omitted_lines = line_no - len(out.lines)
    return out


def from_text(text: str) -> LogText:
    """A LogText holding every line of an in-memory ``text`` (lines cut at MAX_LINE_CHARS)."""
    lines = [line[:MAX_LINE_CHARS] for line in text.splitlines()]
    return LogText(lines, list(range(1, len(lines) + 1)), len(lines), len(text), 0)
