"""The top-level import names a wheel on an index provides, read without downloading the wheel.

A wheel is a zip file whose central directory sits at its end; zipfile reads only that directory for
namelist(), so a file object that answers each read with an HTTP Range request fetches a few KiB of a
wheel of any size (PyPI's file host answers Range requests with 206, as pip's lazy wheel fetch relies on).
"""

from __future__ import annotations

import io
import re
import urllib.request
import zipfile
from typing import Any

TIMEOUT_S = 60


class RangeReader(io.RawIOBase):
    """A seekable, read-only file object over an HTTP(S) URL, reading by Range requests.

    Raises urllib errors when the server does not answer; ValueError when it ignores Range (200 with
    the whole body would not be a range reader any more).
    """

    def __init__(self, url: str) -> None:
        super().__init__()
        self.url = url
        self.pos = 0
        request = urllib.request.Request(url, headers={"Range": "bytes=-1"})
        with urllib.request.urlopen(request, timeout=TIMEOUT_S) as response:
            span = response.headers.get("Content-Range", "")
            if response.status != 206 or "/" not in span:
                raise ValueError(f"{url}: the server does not answer Range requests")
        self.size = int(span.rsplit("/", 1)[1])

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self.pos

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self.pos, io.SEEK_END: self.size}[whence]
        self.pos = max(0, base + offset)
        return self.pos

    def readinto(self, buffer: Any) -> int:
        view = memoryview(buffer).cast("B")
        if self.pos >= self.size or not len(view):
            return 0
        end = min(self.size, self.pos + len(view)) - 1
        request = urllib.request.Request(self.url, headers={"Range": f"bytes={self.pos}-{end}"})
        with urllib.request.urlopen(request, timeout=TIMEOUT_S) as response:
            data = response.read()
        view[:len(data)] = data
        self.pos += len(data)
        return len(data)


def top_level_modules(names: list[str]) -> set[str]:
    """Import names at the top of a wheel's file list: packages (folders holding Python files or
    extensions) and single-file modules; .dist-info / .data folders are not importable."""
    out: set[str] = set()
    for name in names:
        first, sep, _rest = name.partition("/")
        if first.endswith((".dist-info", ".data")):
            continue
        if sep:
            out.add(first)
        elif name.endswith(".py"):
            out.add(name[:-3])
        elif re.search(r"\.(so|pyd)$", name):
            out.add(name.split(".")[0])
    return {m for m in out if m.isidentifier()}


def wheel_modules(url: str) -> set[str]:
    """Top-level import names of the wheel at `url` (its central directory only, by Range requests).

    Raises urllib errors, ValueError (no Range support) or zipfile.BadZipFile.
    """
    reader = RangeReader(url)
    with zipfile.ZipFile(io.BufferedReader(reader, buffer_size=64 * 1024)) as wheel:
        return top_level_modules(wheel.namelist())
