"""Compile translation units with hipcc for the selected offload archs, in parallel.

All archs of a unit are built by one hipcc call when the unit's defines are the same for each
(clang parses the host side once and runs one device pass per arch); archs whose defines differ (a
wavefront define: one value per wavefront size) get one call per value. When a call fails and it
covered several archs, each arch is compiled alone so the error is attributed per arch. Code objects
are produced (-c), not just a syntax check.

Host-only units (a C/C++ source that uses the CUDA runtime API but holds no device code: no kernel,
no __device__ function, no launch) are built the way their project builds them, by the host
compiler: one `--offload-host-only` call whose result stands for every arch, since no code of the
unit is compiled for a GPU. PyTorch's cpp_extension compiles .cpp sources with the host C++ compiler;
a binding source that includes torch/extension.h costs 2-3 device passes of those headers otherwise.

Optimization: -O0 by default. DeepSpeed's heaviest unit (blocked_kv_rotary_cuda.cu, gfx942) takes
17 s at -O0 and 75 s at -O1 or -O2 on this 2-core host; front-end errors are the same at every level.
A failure that comes from the back end (e.g. an intrinsic whose immediate only becomes constant after
inlining) is retried once at -O2 before it counts. A failure with clang's non-constant narrowing
errors in the migrated tree gets clang's own casts (fixits.py) and is retried once.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field, replace
from pathlib import Path

from . import fixits
from .archs import Arch
from .errors import ToolError

ERROR_LINE = re.compile(r"^(?P<loc>[^\s:][^:]*:\d+:\d+: )?(?:fatal )?error: .*$", re.M)
BACKEND_ERROR = re.compile(r"error in backend|Cannot select|<unknown>:0:0|LLVM ERROR|must be a constant integer")
RETRY_OPT = "-O2"
# Device code in a unit's own text (comments and strings blanked): a kernel or device function, a
# launch, LDS, or HIP's launch macro.
DEVICE_CODE = re.compile(r"\b(__global__|__device__|__shared__|__constant__|hipLaunchKernelGGL)\b|<<<")


@dataclass(frozen=True)
class Job:
    """One unit to compile: rel (tree path), source (absolute path of the file to compile),
    include_dirs (absolute), defines per arch group key (wavefront) -> ["NAME=VALUE", ...], flags
    (more hipcc flags of this unit: -fopenmp, -iquote DIR, a PyTorch extension's defines and -I),
    std (C++ standard: c++17, or c++20 for PyTorch extensions as cpp_extension builds them), host_only
    (no device code in the unit: one host-compiler pass stands for every arch), casts (clang's
    narrowing casts may be applied to the tree: fixits.py; off for the plain baseline)."""

    rel: str
    source: Path
    include_dirs: tuple[Path, ...]
    defines: dict[int, tuple[str, ...]] = field(default_factory=dict)
    flags: tuple[str, ...] = ()
    std: str = "c++17"
    host_only: bool = False
    casts: bool = True


@dataclass(frozen=True)
class Result:
    """Outcome for one unit and arch: status ("ok", "failed", "timeout"), first_error (first
    compiler error line, "" when ok), log (path of the compiler output, relative to the out dir),
    seconds (wall time of the hipcc call that decided it), opt (its optimization flag), fixits
    ("path:line" relative to the out dir of each line where clang's narrowing cast was inserted)."""

    status: str
    first_error: str
    log: str
    seconds: float
    opt: str
    fixits: tuple[str, ...] = ()


def host_only(kind: str, blanked: str) -> bool:
    """True when a unit of tree.SourceFile `kind` ("cu", "cxx") with this text (comments and string
    literals blanked: cpp.blank) is host code only: a C/C++ source with no DEVICE_CODE. A .cu unit is
    always compiled for the device, as nvcc and hipcc do."""
    return kind == "cxx" and not DEVICE_CODE.search(blanked)


def find_hipcc() -> Path:
    """Path of hipcc on PATH; raises ToolError when missing."""
    found = shutil.which("hipcc")
    if not found:
        raise ToolError("hipcc: not found on PATH (the dev image installs it; apt-get install hipcc)")
    return Path(found)


REQUESTED = re.compile(r"^(?P<loc>[^\s:][^:]*:\d+:\d+: )note: in instantiation of .* requested here$", re.M)


def first_error(output: str, user_root: str = "") -> str:
    """The first `error:` line of compiler output (with its file:line:col when given), or the last
    non-empty line when no error line is found. When that error lies in a header outside
    `user_root` (a HIP static assertion) and clang names the user's line that requested the
    template, that line is quoted, with the header's location in parentheses."""
    m = ERROR_LINE.search(output)
    if m:
        line, loc = m.group(0).strip(), m.group("loc") or ""
        if user_root and loc and not loc.startswith(user_root):
            following = ERROR_LINE.search(output, m.end())
            for note in REQUESTED.finditer(output, m.end(), following.start() if following else len(output)):
                if note.group("loc").startswith(user_root):
                    return f"{note.group('loc')}{line[len(loc):]} (in {loc.rstrip(': ')})"
        return line
    lines = [line for line in output.splitlines() if line.strip()]
    return lines[-1].strip() if lines else "hipcc failed without output"


def _hipcc(hipcc: Path, job: Job, archs: list[Arch], base: Path, out_root: Path,
           extra: list[str], timeout: int, opt: str) -> tuple[Result, str]:
    """One hipcc call for `archs`; object and log at <base>.o / <base>.log. Returns (result, output)."""
    obj, log = base.with_name(base.name + ".o"), base.with_name(base.name + ".log")
    defines = job.defines.get(archs[0].wavefront, ())
    args = [str(hipcc), "-c", "-x", "hip", f"-std={job.std}", opt, "-w",
            *(["--offload-host-only"] if job.host_only else []), *(f"--offload-arch={a.name}" for a in archs),
            *(f"-D{d}" for d in defines), *(f"-I{d}" for d in job.include_dirs), *job.flags, *extra, fixits.FLAG,
            str(job.source), "-o", str(obj)]
    obj.parent.mkdir(parents=True, exist_ok=True)
    log.parent.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    try:
        proc = subprocess.run(args, capture_output=True, text=True, errors="replace", timeout=timeout, check=False)
        output, code = proc.stdout + proc.stderr, proc.returncode
    except subprocess.TimeoutExpired as exc:
        output = (exc.stdout or b"").decode(errors="replace") if isinstance(exc.stdout, bytes) else (exc.stdout or "")
        output += f"\nrocmig: hipcc ran past {timeout} s and was stopped\n"
        code = None
    seconds = round(time.monotonic() - started, 2)
    log.write_text("$ " + " ".join(args) + "\n" + output, encoding="utf-8")
    rel_log = str(log.relative_to(out_root))
    if code is None:
        return Result("timeout", f"hipcc ran past {timeout} s", rel_log, seconds, opt), output
    if code == 0 and obj.exists():
        return Result("ok", "", rel_log, seconds, opt), output
    return Result("failed", first_error(output, str(out_root)), rel_log, seconds, opt), output


def _build(hipcc: Path, job: Job, archs: list[Arch], base: Path, out_root: Path, extra: list[str],
           timeout: int, opt: str) -> Result:
    """_hipcc, retried once with clang's narrowing casts applied (fixits.py) when the failure has
    them, and once at RETRY_OPT when a failure comes from the compiler back end."""
    result, output = _hipcc(hipcc, job, archs, base, out_root, extra, timeout, opt)
    casts = fixits.narrowing_casts(output, str(out_root)) if result.status == "failed" and job.casts else []
    if casts:
        changed = tuple(f"{os.path.relpath(path, out_root)}:{line}" for path, line in fixits.apply(casts))
        result, output = _hipcc(hipcc, job, archs, base.with_name(base.name + ".fixit"), out_root, extra, timeout, opt)
        result = replace(result, fixits=changed)
    if result.status == "failed" and opt != RETRY_OPT and BACKEND_ERROR.search(output):
        result, _ = _hipcc(hipcc, job, archs, base.with_name(base.name + RETRY_OPT), out_root, extra, timeout, RETRY_OPT)
    return result


def call_groups(job: Job, groups: list[list[Arch]]) -> list[list[Arch]]:
    """The archs of each hipcc call of `job`: the wavefront `groups` (archs.wavefront_groups) whose
    defines are equal for this job are merged into one call, in the order of the groups."""
    merged: dict[tuple[str, ...], list[Arch]] = {}
    for group in groups:
        merged.setdefault(tuple(job.defines.get(group[0].wavefront, ())), []).extend(group)
    return list(merged.values())


def compile_unit(hipcc: Path, job: Job, groups: list[list[Arch]], build_dir: Path, out_root: Path,
                 extra: list[str], timeout: int, opt: str) -> dict[str, Result]:
    """Compile one unit for every arch; returns {arch name: Result}.

    groups: archs grouped by wavefront (archs.wavefront_groups), merged per call_groups; build_dir
    receives code objects and logs (<build_dir>/<rel>.<archs>.o / .log, <rel>.host-<archs>.o for a
    host-only unit); opt: optimization flag, e.g. "-O0". A host-only unit's failure is not split per arch: no
    code of it depends on the offload arch.
    """
    results: dict[str, Result] = {}
    for group in call_groups(job, groups):
        tag = ("host-" if job.host_only else "") + "+".join(a.name for a in group)
        result = _build(hipcc, job, group, build_dir / f"{job.rel}.{tag}", out_root, extra, timeout, opt)
        if result.status == "ok" or len(group) == 1 or job.host_only:
            results.update({a.name: result for a in group})
            continue
        for arch in group:
            results[arch.name] = _build(hipcc, job, [arch], build_dir / f"{job.rel}.{arch.name}", out_root,
                                        extra, timeout, opt)
    return results


def compile_all(hipcc: Path, jobs: list[Job], groups: list[list[Arch]], build_dir: Path, out_root: Path,
                workers: int, extra: list[str], timeout: int, opt: str = "-O0",
                done: Callable[[dict[str, dict[str, Result]], int], None] | None = None) -> dict[str, dict[str, Result]]:
    """Compile every job with `workers` hipcc processes at a time; returns {rel: {arch: Result}}.
    Larger sources start first so that the slowest units do not finish last. done(results so far,
    number of jobs) is called after each unit, in the calling thread."""
    ordered = sorted(jobs, key=lambda j: j.source.stat().st_size, reverse=True)
    results: dict[str, dict[str, Result]] = {}
    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        futures = {pool.submit(compile_unit, hipcc, job, groups, build_dir, out_root, extra, timeout, opt): job.rel
                   for job in ordered}
        for future in as_completed(futures):
            results[futures[future]] = future.result()
            if done is not None:
                done(results, len(ordered))
    return {job.rel: results[job.rel] for job in ordered}
