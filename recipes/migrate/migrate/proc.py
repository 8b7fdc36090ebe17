"""Child processes of the recipe that start their own children (hipcc runs clang, lld and the
offload bundler)."""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path


def descendants(pid: int, proc_root: Path = Path("/proc")) -> list[int]:
    """Process ids of every descendant of `pid`, read from /proc/<pid>/stat (Linux), children
    before their own children; processes that end while being read are skipped."""
    children: dict[int, list[int]] = {}
    for stat in proc_root.glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    found, queue = [], list(children.get(pid, []))
    while queue:
        child = queue.pop(0)
        found.append(child)
        queue.extend(children.get(child, []))
    return found


def run_tree(cmd: list[str], timeout: int) -> tuple[str, int | None]:
    """Run `cmd`; returns (stdout + stderr, exit code), or (output so far, None) when it ran past
    `timeout` seconds: then it and all its descendants are killed, since hipcc's clang, lld and
    bundler children would otherwise go on using the CPU after hipcc itself is stopped. The
    children stay in the caller's process group, so an interrupt from the terminal reaches them."""
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace")
    try:
        output, _ = proc.communicate(timeout=timeout)
        return output, proc.returncode
    except subprocess.TimeoutExpired:
        for pid in [proc.pid, *descendants(proc.pid)]:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        output, _ = proc.communicate()
        return output, None
