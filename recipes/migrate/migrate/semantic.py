"""Semantic hipify: translate one translation unit with hipify-clang, using that unit's flags.

hipify-clang parses the unit as CUDA with clang (it sees macros, templates and overloads, where
hipify-perl sees text), so it needs CUDA headers: the dev image lays out the headers of Debian's
nvidia-cuda-dev as a CUDA installation at $ROCMIG_CUDA_PATH (include/, bin/, nvvm/libdevice/,
version.json), which clang's CUDA detection accepts with --cuda-path. No libdevice is shipped, so
clang runs with -nocudalib (a parse never links device libraries).

hipify-clang rewrites only the main file it is given; the tree's headers keep hipify-perl's
translation. Its parse gets cuda_parse_prelude.h (what nvcc's implicit cuda_runtime.h declares and
clang's CUDA wrapper does not). hipify-clang's own default parses every preprocessor branch at once,
which fails wherever the branches of one #if define the same name or include another OS's header
(`#ifdef _WIN32` / `#include <windows.h>`: 42 of the CUDA samples' 143 units); so the unit is
parsed with the branches its defines take (--default-preprocessor), and hipify-perl then translates
what the branches not taken hold. A unit whose parse fails (a header of the project that is not
found, a CUDA feature the headers lack, a crash) keeps hipify-perl's translation, and the reason is
kept for the report.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
from dataclasses import dataclass
from pathlib import Path

from .errors import ToolError

CUDA_PATH_ENV = "ROCMIG_CUDA_PATH"
# clang accepts a CUDA installation given by --cuda-path only when these exist (clang's
# CudaInstallationDetector: include/ and bin/; nvvm/libdevice/ under strict checking).
LAYOUT = ("include/cuda.h", "bin", "nvvm/libdevice")
# Device pass for one sm_ arch is enough to see the device code; 7.0 is the oldest arch with the
# features DL kernels use (tensor cores, independent thread scheduling) and is known to clang 22.
CUDA_ARCH = "sm_70"
PRELUDE = Path(__file__).with_name("cuda_parse_prelude.h")
# A name hipify-perl would still translate (CUDA runtime, driver and library APIs, CUDA's types):
# where hipify-clang's output has none, the branches it did not take hold nothing to translate
CUDA_NAME = re.compile(r"\b(?:cuda|cu[A-Z]|CU_|CUDA_|cublas|CUBLAS_|curand|CURAND_|cusparse|CUSPARSE_|cufft|CUFFT_|"
                       r"cusolver|CUSOLVER_|cudnn|CUDNN_|nccl|nvtx|__nv_|nv_bfloat)\w*")
LOCATED_ERROR = re.compile(r"^[^\s:][^:]*:\d+:\d+: (?:fatal )?error: ")


@dataclass(frozen=True)
class Tool:
    """hipify-clang ready to run: path of the binary and of the CUDA installation it parses with."""

    path: Path
    cuda_path: Path


@dataclass(frozen=True)
class Outcome:
    """Result of one unit's semantic translation: ok (hipify-clang wrote the output), reason (first
    error line when not ok, "" when ok), seconds (wall time)."""

    ok: bool
    reason: str
    seconds: float


def find_tool(env: dict[str, str] | None = None) -> tuple[Tool | None, str]:
    """(Tool, "") when hipify-clang is on PATH and $ROCMIG_CUDA_PATH holds a CUDA layout clang
    accepts; else (None, why not) - the run then uses hipify-perl for every file."""
    env = dict(os.environ) if env is None else env
    found = shutil.which("hipify-clang", path=env.get("PATH"))
    if not found:
        return None, "hipify-clang not on PATH"
    cuda = env.get(CUDA_PATH_ENV, "")
    if not cuda:
        return None, f"${CUDA_PATH_ENV} not set (no CUDA headers for hipify-clang's parse)"
    missing = [p for p in LAYOUT if not (Path(cuda) / p).exists()]
    if missing:
        return None, f"${CUDA_PATH_ENV}={cuda}: not a CUDA layout clang accepts (missing {', '.join(missing)})"
    return Tool(Path(found), Path(cuda)), ""


def command(tool: Tool, src: Path, dst: Path, include_dirs: list[Path], defines: list[str],
            std: str = "c++17") -> list[str]:
    """The hipify-clang argument list for one unit: output to `dst`, the preprocessor branches the
    unit's -I and -D flags select (--default-preprocessor), and the clang options after `--` (CUDA
    mode, the unit's C++ standard `std`, -nocudalib, one device arch, the prelude)."""
    args = [str(tool.path), str(src), f"-o={dst}", f"--cuda-path={tool.cuda_path}", "--default-preprocessor"]
    args += [f"-I={d}" for d in include_dirs]
    args += [f"-D={d}" for d in defines]
    # -isystem puts the CUDA headers before /usr/include, which holds ROCm's own thrust/ and hip/.
    args += ["--", "-x", "cuda", f"-std={std}", "-nocudalib", f"--cuda-gpu-arch={CUDA_ARCH}",
             "-isystem", str(tool.cuda_path / "include"), "-include", str(PRELUDE), "-w"]
    return args


def first_error(output: str) -> str:
    """The first located `error:` line of hipify-clang's output (file:line:col: error: ...), else its
    last line, for the report. hipify-clang 7.2 always prints four driver errors of its own first
    ("cannot find libdevice for sm_52", ...) that do not stop it; they carry no location."""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    for line in lines:
        if LOCATED_ERROR.match(line):
            return line
    return lines[-1] if lines else "hipify-clang failed without output"


def _run(args: list[str], timeout: int) -> tuple[int | None, str]:
    """(exit code, stdout + stderr) of one hipify-clang run; (None, why) when it ran past `timeout` s."""
    try:
        proc = subprocess.run(args, capture_output=True, text=True, errors="replace", timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        return None, f"hipify-clang ran past {timeout} s and was stopped"
    return proc.returncode, proc.stdout + proc.stderr


def tree_paths(reason: str, src: Path, rel: str, cuda_dir: Path) -> str:
    """`reason` with hipify-clang's paths made the tree's: the copy of the main file it parses
    (`<tmp>/<name>-<hex>.hip`) becomes `rel`, files under `cuda_dir` their path in the tree."""
    reason = re.sub(r"\S*/" + re.escape(src.name) + r"-[0-9a-f]+\.hip\b", rel, reason)
    return reason.replace(f"{cuda_dir}/", "")


def translate(tool: Tool, src: Path, dst: Path, include_dirs: list[Path], defines: list[str],
              timeout: int, perl: Path, std: str = "c++17") -> Outcome:
    """Translate `src` into `dst` with hipify-clang, parsing the preprocessor branches the unit's
    defines take; hipify-perl (`perl`, its path) then translates what the branches not taken hold.
    `dst` is only replaced when hipify-clang exits 0 and wrote a non-empty file; otherwise it keeps
    what it held (hipify-perl's translation) and the reason is the parse's first error."""
    import time

    from . import hipify

    tmp = dst.with_name(dst.name + ".hipify-clang")
    started = time.monotonic()
    code, output = _run(command(tool, src, tmp, include_dirs, defines, std), timeout)
    try:
        if code == 0 and tmp.is_file() and tmp.stat().st_size > 0:
            rest = bool(CUDA_NAME.search(tmp.read_text(encoding="utf-8", errors="replace")))
            try:
                if rest:
                    hipify.translate_rest(perl, tmp, dst)
            except ToolError:  # hipify-perl failed on it: hipify-clang's text is kept as it is
                rest = False
            if not rest:
                os.replace(tmp, dst)
            return Outcome(True, "", round(time.monotonic() - started, 2))
    finally:
        tmp.unlink(missing_ok=True)
    return Outcome(False, f"{_exit_text(code)}: {first_error(output)}" if code is not None else output,
                   round(time.monotonic() - started, 2))


def _exit_text(code: int) -> str:
    """How hipify-clang ended: "exit 1", or "aborted (SIGABRT)" for a process a signal stopped (a
    negative code: hipify-clang 7.2 aborts after a fatal parse error such as a missing header)."""
    if code >= 0:
        return f"exit {code}"
    try:
        name = signal.Signals(-code).name
    except ValueError:
        name = f"signal {-code}"
    return f"{'aborted' if name == 'SIGABRT' else 'stopped'} ({name})"


def translate_units(tool: Tool, units: dict[str, tuple[list[Path], list[str], str]], cuda_dir: Path, hip_dir: Path,
                    perl_dir: Path, workers: int, timeout: int) -> dict[str, Outcome]:
    """hipify-clang every unit {rel: (include dirs, defines, C++ standard)} from `cuda_dir` into `hip_dir`, `workers`
    at a time. hipify-perl's translation of each unit (what `hip_dir` held) is kept under `perl_dir`
    for the per-unit fallback and the baseline. Returns {rel: Outcome}."""
    from concurrent.futures import ThreadPoolExecutor

    from . import hipify

    perl = hipify.find_hipify()

    def one(rel: str) -> tuple[str, Outcome]:
        keep = perl_dir / rel
        keep.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(hip_dir / rel, keep)
        dirs, defines, std = units[rel]
        made = translate(tool, cuda_dir / rel, hip_dir / rel, dirs, defines, timeout, perl, std)
        return rel, Outcome(made.ok, tree_paths(made.reason, cuda_dir / rel, rel, cuda_dir), made.seconds)

    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        return dict(pool.map(one, sorted(units)))
