"""Memory samplers: one reading in MiB per call, taken while a concurrency level runs.

- `amd`: `amd-smi metric --mem-usage --json` (used VRAM summed over GPUs); `rocm-smi --showmeminfo vram
  --json` where amd-smi is missing ("VRAM Total Used Memory (B)", ROCm SMI's JSON keys).
- `nvidia`: `nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits` (MiB, summed over GPUs).
- `cpu`: resident set size of the server process and its children (psutil); the server is found by
  --server-pid, by --container (the container's init process, read from the Docker engine), or by the
  process listening on the URL's port (a container that publishes the port counts as that container).

`SampleLoop` reads one sampler on a thread every `interval_s` and gives peak and mean per level.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

import psutil

from buildctl.bench.runfile import Memory
from buildctl.errors import InputError

MIB = 1024 * 1024
# amd-smi prints binary units under SI names (its "MB" is 2**20 bytes, as ROCm SMI's library counts).
_UNIT_BYTES = {"B": 1, "KB": 1024, "MB": MIB, "GB": 1024 * MIB, "KIB": 1024, "MIB": MIB, "GIB": 1024 * MIB}
KINDS = ("auto", "amd", "nvidia", "cpu", "none")


@dataclass(frozen=True)
class Sampler:
    """A named memory reading. `read()` returns MiB, or None when the tool gave nothing this time."""

    source: str
    read: Callable[[], float | None]


def _run_tool(argv: list[str], timeout_s: float = 10.0) -> str | None:
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout if done.returncode == 0 else None


def _value_mib(value: object) -> float | None:
    """amd-smi's `{"value": 283, "unit": "MB"}` (or a bare number, MB) as MiB."""
    if isinstance(value, dict):
        unit = str(value.get("unit", "MB")).upper()
        value = value.get("value")
    else:
        unit = "MB"
    if not isinstance(value, (int, float)) or unit not in _UNIT_BYTES:
        return None
    return float(value) * _UNIT_BYTES[unit] / MIB


def _used_vram(gpu: object) -> float | None:
    """One GPU object's `mem_usage.used_vram` in MiB; None where amd-smi wrote "N/A" for the block or value."""
    usage = gpu.get("mem_usage") if isinstance(gpu, dict) else None
    return _value_mib(usage.get("used_vram")) if isinstance(usage, dict) else None


def parse_amd_smi(text: str) -> float | None:
    """Used VRAM in MiB summed over the GPUs of `amd-smi metric --mem-usage --json` output.

    Accepts a list of per-GPU objects (amd-smi of ROCm 6.x) or `{"gpu_data": [...]}` (ROCm 7.x); each
    object's `mem_usage.used_vram`. amd-smi writes the string "N/A" for a block or value it cannot read
    (a partition, a virtual function): such a GPU is left out of the sum. None when no GPU gives a value.
    Real outputs are in tests/unit/smi_samples/ (SOURCES.md names where each was published).
    """
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        return None
    gpus = data.get("gpu_data", []) if isinstance(data, dict) else data
    if not isinstance(gpus, list):
        return None
    found = [u for u in (_used_vram(g) for g in gpus) if u is not None]
    return sum(found) if found else None


def parse_rocm_smi(text: str) -> float | None:
    """Used VRAM in MiB summed over the cards of `rocm-smi --showmeminfo vram --json` output.

    ROCm SMI prints one object per card (`card0`, ...), each value a string of bytes under
    "VRAM Total Used Memory (B)"; a card without that key (other --show flags, "N/A") is left out.
    None when no card gives a value.
    """
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        return None
    if not isinstance(data, dict):
        return None
    found = [int(card["VRAM Total Used Memory (B)"]) / MIB for card in data.values()
             if isinstance(card, dict) and str(card.get("VRAM Total Used Memory (B)", "")).isdigit()]
    return sum(found) if found else None


def parse_nvidia_smi(text: str) -> float | None:
    """Used memory in MiB summed over the lines of `nvidia-smi --query-gpu=memory.used` (csv, no units)."""
    values = [float(line) for line in text.split() if line.replace(".", "", 1).isdigit()]
    return sum(values) if values else None


def _tool_sampler(source: str, argv: list[str], parse: Callable[[str], float | None]) -> Sampler:
    def read() -> float | None:
        out = _run_tool(argv)
        return parse(out) if out is not None else None
    return Sampler(source, read)


def amd_sampler() -> Sampler | None:
    """amd-smi where it is on PATH and answers, else rocm-smi; None when neither answers."""
    candidates = [("amd-smi", ["amd-smi", "metric", "--mem-usage", "--json"], parse_amd_smi),
                  ("rocm-smi", ["rocm-smi", "--showmeminfo", "vram", "--json"], parse_rocm_smi)]
    for source, argv, parse in candidates:
        if shutil.which(argv[0]):
            sampler = _tool_sampler(source, argv, parse)
            if sampler.read() is not None:
                return sampler
    return None


def nvidia_sampler() -> Sampler | None:
    """nvidia-smi where it is on PATH and answers; None otherwise."""
    if not shutil.which("nvidia-smi"):
        return None
    sampler = _tool_sampler("nvidia-smi", ["nvidia-smi", "--query-gpu=memory.used",
                                           "--format=csv,noheader,nounits"], parse_nvidia_smi)
    return sampler if sampler.read() is not None else None


def process_sampler(pid: int, source: str = "process") -> Sampler:
    """RSS of process `pid` and all its children, MiB (children started later are counted too).

    Raises:
        InputError: no process `pid`.
    """
    try:
        root = psutil.Process(pid)
    except psutil.NoSuchProcess as exc:
        raise InputError(f"--server-pid {pid}: no such process") from exc

    def read() -> float | None:
        try:
            procs = [root, *root.children(recursive=True)]
        except psutil.NoSuchProcess:
            return None
        total = 0
        for proc in procs:
            try:
                total += proc.memory_info().rss
            except (psutil.NoSuchProcess, psutil.AccessDenied):
                continue
        return total / MIB
    return Sampler(source, read)


def listening_pid(port: int) -> int | None:
    """PID of the process that listens on TCP `port` on this host, None when none is visible."""
    try:
        conns = psutil.net_connections(kind="tcp")
    except psutil.AccessDenied:
        return None
    for conn in conns:
        if conn.status == psutil.CONN_LISTEN and conn.laddr and conn.laddr.port == port and conn.pid:
            return int(conn.pid)
    return None


def pick_sampler(kind: str, pid_of_server: Callable[[], int | None]) -> Sampler | None:
    """The sampler for --memory `kind`: `auto` tries AMD, then NVIDIA, then the server process.

    `pid_of_server` is called only when the process sampler is needed. None for `none`.

    Raises:
        InputError: the chosen kind has no working tool here, or (cpu) the server process is not found.
    """
    if kind == "none":
        return None
    if kind in ("amd", "auto"):
        found = amd_sampler()
        if found or kind == "amd":
            if not found:
                raise InputError("--memory amd: neither amd-smi nor rocm-smi answers on this host")
            return found
    if kind in ("nvidia", "auto"):
        found = nvidia_sampler()
        if found or kind == "nvidia":
            if not found:
                raise InputError("--memory nvidia: nvidia-smi is missing or does not answer on this host")
            return found
    pid = pid_of_server()
    if pid is None:
        raise InputError(f"--memory {kind}: the server process was not found; give --server-pid or "
                         "--container (or --memory none)")
    return process_sampler(pid)


@dataclass
class SampleLoop:
    """Reads `sampler` every `interval_s` seconds on a daemon thread between `start()` and `stop()`."""

    sampler: Sampler
    interval_s: float = 0.25
    values: list[float] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def start(self) -> None:
        self.values.clear()
        self._stop.clear()
        self._take()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()

    def _take(self) -> None:
        value = self.sampler.read()
        if value is not None:
            self.values.append(value)

    def _loop(self) -> None:
        while not self._stop.wait(self.interval_s):
            self._take()

    def stop(self) -> Memory:
        """End sampling; peak and mean MiB of what was read (None when no reading succeeded)."""
        self._stop.set()
        if self._thread:
            self._thread.join()
        self._take()
        vals = self.values
        return Memory(source=self.sampler.source, peak_mib=round(max(vals), 1) if vals else None,
                      mean_mib=round(sum(vals) / len(vals), 1) if vals else None, samples=len(vals))
