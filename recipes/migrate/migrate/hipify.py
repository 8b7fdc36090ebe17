"""Run hipify-perl on one file and produce its warnings.

hipify-perl's own warning pass costs (lines x ~10,000 identifiers) regex compilations: 21 s of CPU
for a 47 KB DeepSpeed source, against 0.13 s for the translation alone (measured with
hipify-perl 7.2.4). So the translation runs with -quiet-warnings and the warnings are computed
here from the identifier tables read out of the installed hipify-perl script, with one compiled
regex per table and the same wording and line numbers as hipify-perl. When the tables cannot be
read (another hipify-perl layout), hipify-perl runs with its own warning pass instead.
"""

from __future__ import annotations

import functools
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from .errors import ToolError

HASHES = {"deprecated_funcs": "deprecated", "removed_funcs": "removed", "experimental_funcs": "experimental"}
ARRAYS = {"HipOnlyUnsupportedFunctions": "unsupported HIP identifier",
          "HipDNNOnlyUnsupportedFunctions": "unsupported hipDNN identifier",
          "UnsupportedDeviceDataTypes": "unsupported device data type identifier"}
STDERR_WARNING = re.compile(r"^\s*(?:warning: )?\S+?:#?(\d+)\s*:\s*warning: (.*)$|^\s*warning: \S+?:#(\d+) : (.*)$")


@dataclass(frozen=True)
class HipifyWarning:
    """One hipify-perl warning: line (1-based; input lines, or output lines for leftover cuda*
    identifiers, as hipify-perl counts them) and message."""

    line: int
    message: str


WORD = re.compile(r"\w+")


@dataclass(frozen=True)
class Tables:
    """hipify-perl's warning tables: for each hash table {name: version}, for each array table its
    names, and the unsupported device functions. Every name in hipify-perl 7.2's tables is one word
    (\\w+), and a `\\bNAME\\b` match of a word is exactly a maximal word of the text equal to it, so a
    line is checked by splitting it into words once (set lookups) instead of running a regex of
    thousands of alternatives over it. Measured in the dev image on the 173 ggml-cuda and ggml-sycl
    files of the llama-cpp-python 0.3.36 sdist: the same warnings, 1.5 s instead of 38.9 s."""

    hashes: dict[str, dict[str, str]]
    arrays: dict[str, frozenset[str]]
    device_functions: frozenset[str]


def read_tables(script: Path) -> Tables | None:
    """Parse the identifier tables out of the hipify-perl script; None when a table is missing or
    empty, or holds a name that is not one word."""
    text = script.read_text(encoding="utf-8", errors="replace")
    hashes = {}
    for name in HASHES:
        m = re.search(rf"^my %{name} = \((.*?)^\);", text, re.M | re.S)
        if not m:
            return None
        entries = dict(re.findall(r'"([^"]+)"\s*=>\s*"([^"]*)"', m.group(1)))
        if not entries:
            return None
        hashes[name] = entries
    arrays = {}
    for name in [*ARRAYS, "UnsupportedDeviceFunctions"]:
        m = re.search(rf"^@{name} = \((.*?)^\);", text, re.M | re.S)
        if not m:
            return None
        arrays[name] = frozenset(re.findall(r'"([^"]+)"', m.group(1)))
    names = [n for table in hashes.values() for n in table] + [n for table in arrays.values() for n in table]
    if any(not WORD.fullmatch(n) for n in names):
        return None
    device = arrays.pop("UnsupportedDeviceFunctions")
    return Tables(hashes=hashes, arrays={k: v for k, v in arrays.items() if v}, device_functions=device)


def warnings_for(tables: Tables, shown: str, cuda_text: str, hip_text: str) -> list[HipifyWarning]:
    """The warnings hipify-perl (default options) prints for a file, in its wording.

    `shown` is the file name used in the messages; `cuda_text` the input; `hip_text` the translated
    text before hipify-perl adds its hip_runtime.h include line (line numbers as hipify-perl's).
    """
    out: list[HipifyWarning] = []
    for number, line in enumerate(cuda_text.split("\n"), start=1):
        words = list(dict.fromkeys(WORD.findall(line)))
        if not words:
            continue
        for table, kind in (("experimental_funcs", "experimental"), ("removed_funcs", "removed"),
                            ("deprecated_funcs", "deprecated")):
            versions = tables.hashes[table]
            for name in (w for w in words if w in versions):
                version = versions[name]
                if kind == "experimental":
                    out.append(HipifyWarning(number, f"experimental ROCm HIP identifier: {name} {version}"))
                else:
                    lib = "CUDNN" if name.lower().startswith("cudnn") else "CUDA"
                    out.append(HipifyWarning(number, f"{kind} CUDA identifier: {name} since {lib} {version}"))
        for table, message in ARRAYS.items():
            names = tables.arrays.get(table, frozenset())
            for name in (w for w in words if w in names):
                out.append(HipifyWarning(number, f"{message}: {name}"))
        for name in WORD.findall(line):
            if name in tables.device_functions and re.search(rf"\b{re.escape(name)}\b\s*\(.*\)", line) \
                    and not re.search(rf"\w+::{re.escape(name)}\s*\(.*\)", line):
                out.append(HipifyWarning(number, f'unsupported device function "{name}": {line}'))
                break
    for number, line in enumerate(hip_text.split("\n"), start=1):
        m = re.search(r"\bcuda[A-Z]\w+", line)
        if m:
            out.append(HipifyWarning(number, f"CUDA identifier left untranslated ({m.group(0)}): {line.strip()}"))
    return out


@functools.cache
def _simple_substitutions() -> list[tuple[str, str, str]]:
    """(CUDA name, HIP name, kind) of the installed hipify-perl's default (HIP, not -roc) substitutions, the
    `subst("cusparse_v2.h", "hipsparse.h", "include_cuda_main_header_v2")` lines of its
    simpleSubstitutions; [] without hipify-perl on PATH or where the script has no such section. Read once
    per run."""
    found = shutil.which("hipify-perl")
    if not found:
        return []
    text = Path(found).read_text(encoding="utf-8", errors="replace")
    m = re.search(r"^sub simpleSubstitutions \{(.*?)^\}", text, re.M | re.S)
    if not m:
        return []
    return [(cuda.replace("\\/", "/"), hip.replace("\\/", "/"), kind)
            for cuda, hip, kind in re.findall(r'subst\("([^"]+)",\s*"([^"]+)",\s*"(\w+)"\)', m.group(1))]


def include_map() -> dict[str, str]:
    """{CUDA header: HIP header} of hipify-perl's include substitutions (_simple_substitutions)."""
    return {cuda: hip for cuda, hip, kind in _simple_substitutions() if kind.startswith("include")}


def math_constant_map() -> dict[str, str]:
    """{CUDART_* constant of math_constants.h: its HIP_* name in hip/hip_math_constants.h} of hipify-perl's
    define substitutions (_simple_substitutions): `CUDART_INF_F` -> `HIP_INF_F`."""
    return {cuda: hip for cuda, hip, kind in _simple_substitutions() if kind == "define" and cuda.startswith("CUDART_")}


def find_hipify() -> Path:
    """Path of hipify-perl on PATH; raises ToolError when it is missing."""
    found = shutil.which("hipify-perl")
    if not found:
        raise ToolError("hipify-perl: not found on PATH (the dev image installs it; apt-get install hipify-perl)")
    return Path(found)


def translate(hipify: Path, src: Path, dst: Path, tables: Tables | None) -> list[HipifyWarning]:
    """Translate `src` into `dst` with hipify-perl; returns its warnings.

    With `tables`, hipify-perl runs with -quiet-warnings and the warnings come from warnings_for;
    without, hipify-perl's own warning pass runs and its stderr is parsed. Raises ToolError when
    hipify-perl exits non-zero.
    """
    dst.parent.mkdir(parents=True, exist_ok=True)
    args = [str(hipify), *(["-quiet-warnings"] if tables else []), f"-o={dst}", str(src)]
    proc = subprocess.run(args, capture_output=True, text=True, errors="replace", check=False)
    if proc.returncode != 0:
        raise ToolError(f"hipify-perl failed on {src} (exit {proc.returncode}): {proc.stderr.strip()[:300]}")
    if tables is None:
        found = []
        for line in proc.stderr.splitlines():
            m = STDERR_WARNING.match(line)
            if m:
                found.append(HipifyWarning(int(m.group(1) or m.group(3)), (m.group(2) or m.group(4)).strip()))
        return found
    return _table_warnings(tables, src, dst)


def translate_rest(hipify: Path, src: Path, dst: Path) -> None:
    """Translate with hipify-perl the CUDA names left in `src`, a file hipify-clang made from only the
    preprocessor branches its parse took, into `dst` (no warnings: the unit's were reported from its
    CUDA source). hipify-perl puts `#include "hip/hip_runtime.h"` on top of a file with kernels;
    that line is dropped when `src` includes hip_runtime.h already. Raises ToolError when hipify-perl
    exits non-zero."""
    proc = subprocess.run([str(hipify), "-quiet-warnings", f"-o={dst}", str(src)], capture_output=True, text=True,
                          errors="replace", check=False)
    if proc.returncode != 0:
        raise ToolError(f"hipify-perl failed on {src} (exit {proc.returncode}): {proc.stderr.strip()[:300]}")
    before, after = src.read_text(encoding="utf-8"), dst.read_text(encoding="utf-8")
    added = '#include "hip/hip_runtime.h"\n'
    if after.startswith(added) and not before.startswith(added) and "hip/hip_runtime.h" in before:
        dst.write_text(after[len(added):], encoding="utf-8")


def _table_warnings(tables: Tables, src: Path, dst: Path) -> list[HipifyWarning]:
    cuda_text = src.read_text(encoding="utf-8")
    hip_text = dst.read_text(encoding="utf-8")
    if hip_text.startswith('#include "hip/hip_runtime.h"') and not cuda_text.startswith('#include "hip/hip_runtime.h"'):
        hip_text = hip_text.split("\n", 1)[1] if "\n" in hip_text else ""
    return warnings_for(tables, src.name, cuda_text, hip_text)


def translate_many(hipify: Path, pairs: list[tuple[Path, Path]], tables: Tables) -> list[list[HipifyWarning]]:
    """Translate each (src, dst) of `pairs` with one hipify-perl process; returns each pair's warnings
    (warnings_for), in order. Same output as translate() per file, one perl start instead of one per
    file (about 0.14 s each here): hipify-perl's -inplace mode resets its per-file state for each file
    it is given and, when `<file>.prehip` exists, reads that and writes `<file>`. So each src is copied
    to `<dst>.prehip` first (no shell is involved) and those copies are removed afterwards.

    Raises ToolError when hipify-perl exits non-zero (naming the first file of the batch)."""
    staged = [dst.with_name(dst.name + ".prehip") for _src, dst in pairs]
    try:
        for (src, dst), prehip in zip(pairs, staged):
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(src, prehip)
            dst.touch()
        proc = subprocess.run([str(hipify), "-inplace", "-quiet-warnings", *(str(dst) for _src, dst in pairs)],
                              capture_output=True, text=True, errors="replace", check=False)
        if proc.returncode != 0:
            raise ToolError(f"hipify-perl failed on a batch of {len(pairs)} files from {pairs[0][0]} "
                            f"(exit {proc.returncode}): {proc.stderr.strip()[:300]}")
    finally:
        for prehip in staged:
            prehip.unlink(missing_ok=True)
    return [_table_warnings(tables, src, dst) for src, dst in pairs]
