"""The arch table: what an offload arch decides (wavefront size, LDS per workgroup).

The table is JSON rendered by the lead from matrix.yaml into the image (/etc/rocmig/archs.json):
    {"gfx942": {"family": "CDNA3", "wavefront": 64, "lds_bytes": 65536, ...}, ...}
The recipe never derives wavefront or LDS from an arch name; it reads them here. An offload arch
the table lacks (gfx908, gfx1030, ...) is taken when the toolchain compiles for it: its wavefront
size is the one hipcc's LLVM target features give the arch (+wavefrontsize32 / +wavefrontsize64),
its LDS per workgroup the 64 KiB that LLVM's AMDGPUUsage gives GFX7 to GFX12 (the larger LDS of
gfx950 is in the table; a larger one elsewhere only makes the LDS check stricter than needed).
"""

from __future__ import annotations

import difflib
import json
import re
import subprocess
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from .errors import InputError

DEFAULT_TABLE = Path("/etc/rocmig/archs.json")
DEFAULT_LDS_BYTES = 65536  # LLVM AMDGPUUsage: 64 KiB of LDS per work-group on GFX7-GFX12
WAVEFRONT_FEATURE = re.compile(r"[+]wavefrontsize(32|64)\b")
# A kernel, since clang always emits kernels: an unused __device__ function is dropped, and the IR then
# holds no function attributes, so no target features to read (Debian clang 22.1.8, gfx1030).
PROBE_SOURCE = "__attribute__((global)) void rocmig_probe() {}\n"


@dataclass(frozen=True)
class Arch:
    """One offload arch: name (e.g. "gfx942"), family ("CDNA3"), wavefront (lanes: 32 or 64),
    lds_bytes (LDS per workgroup, bytes)."""

    name: str
    family: str
    wavefront: int
    lds_bytes: int


def load_table(path: Path) -> dict[str, Arch]:
    """Read the arch table at `path`; returns {arch name: Arch}.

    Raises InputError (one line naming the file and key) when the file is missing, is not JSON,
    or an entry lacks an integer `wavefront` (32 or 64) or a positive integer `lds_bytes`.
    """
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError(f"--arch-table {path}: file not found (the dev image carries /etc/rocmig/archs.json)") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError(f"--arch-table {path}: not a readable JSON file ({exc})") from None
    if not isinstance(raw, dict) or not raw:
        raise InputError(f"--arch-table {path}: expected a non-empty JSON object {{arch: {{wavefront, lds_bytes, ...}}}}")
    table: dict[str, Arch] = {}
    for name, entry in raw.items():
        if not isinstance(entry, dict):
            raise InputError(f"--arch-table {path}: {name}: expected an object, got {type(entry).__name__}")
        wave = entry.get("wavefront")
        lds = entry.get("lds_bytes")
        if wave not in (32, 64) or isinstance(wave, bool):
            raise InputError(f"--arch-table {path}: {name}.wavefront: expected 32 or 64, got {wave!r}")
        if not isinstance(lds, int) or isinstance(lds, bool) or lds <= 0:
            raise InputError(f"--arch-table {path}: {name}.lds_bytes: expected a positive integer, got {lds!r}")
        table[name] = Arch(name=name, family=str(entry.get("family", "")), wavefront=wave, lds_bytes=lds)
    return table


def wavefront_of(ir: str) -> int | None:
    """The wavefront size in the target features of device LLVM IR (+wavefrontsize32/64), or None."""
    found = set(WAVEFRONT_FEATURE.findall(ir))
    return int(found.pop()) if len(found) == 1 else None


def toolchain_arch(name: str, hipcc: Path) -> Arch | None:
    """The Arch of an offload arch the table lacks, as hipcc compiles for it (see module doc), or None
    when hipcc does not take the name (or cannot run). The probe is a file, not stdin: hipcc 7.2
    compiles `-` for its default target (gfx906) whatever --offload-arch says, so the IR's target-cpu
    must be the name asked for."""
    if not re.fullmatch(r"gfx[0-9a-z-]+", name):
        return None
    with tempfile.TemporaryDirectory(prefix="rocmig-probe-") as folder:
        probe = Path(folder) / "probe.hip"
        probe.write_text(PROBE_SOURCE)
        args = [str(hipcc), "-x", "hip", "--cuda-device-only", f"--offload-arch={name}", "-nogpulib", "-nogpuinc",
                "-S", "-emit-llvm", "-o", "-", str(probe)]
        try:
            proc = subprocess.run(args, capture_output=True, text=True, timeout=120, check=False)
        except (OSError, subprocess.TimeoutExpired):
            return None
    if proc.returncode != 0 or f'"target-cpu"="{name}"' not in proc.stdout:
        return None
    wave = wavefront_of(proc.stdout)
    return Arch(name=name, family="", wavefront=wave, lds_bytes=DEFAULT_LDS_BYTES) if wave else None


# How both `buildctl migrate` and the recipe name the offload archs beyond the table
OTHER_ARCHS = ("or any other processor hipcc compiles for, such as gfx908, gfx1030, gfx11-generic: "
               "`clang --target=amdgcn-amd-amdhsa -mcpu=help` lists them")


def select(table: dict[str, Arch], names: list[str], probe: Callable[[str], Arch | None] | None = None) -> list[Arch]:
    """Return the Arch for each requested name, in order, without duplicates; a name the table lacks
    is given to `probe` (toolchain_arch with the image's hipcc).

    Raises InputError naming the unknown arch, the valid values and the closest ones ("did you mean").
    """
    picked: list[Arch] = []
    for name in names:
        arch = table.get(name) or (probe(name) if probe else None)
        if arch is None:
            close = difflib.get_close_matches(name, sorted(table), n=2, cutoff=0.8)
            hint = f"; did you mean {' or '.join(close)}?" if close else ""
            raise InputError(f"--arch: unknown value '{name}' (allowed: {', '.join(sorted(table))}; {OTHER_ARCHS}){hint}")
        if arch not in picked:
            picked.append(arch)
    return picked


def wavefront_groups(archs: list[Arch]) -> list[list[Arch]]:
    """Group archs that share a wavefront size, so that one hipcc call can build them together
    with one value of a wavefront define. Order follows the first arch of each group."""
    groups: dict[int, list[Arch]] = {}
    for arch in archs:
        groups.setdefault(arch.wavefront, []).append(arch)
    return list(groups.values())
