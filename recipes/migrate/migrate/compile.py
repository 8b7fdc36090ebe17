"""Compile translation units with hipcc for the selected offload archs, in parallel.

Each unit is compiled in passes: one host pass (`--offload-host-only`) per set of defines (archs
whose defines are equal share it; a wavefront define gives one per value), and one device pass
(`--offload-device-only`) per offload arch. These are the cc1 jobs one `hipcc -c` call runs for the
same archs; as separate calls each arch's error is its own and each pass can load the precompiled
header of its configuration (pch.py). Objects are produced (-c), not just a syntax check.

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
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field, replace
from pathlib import Path

from . import fixits, pch, proc, tree
from .archs import Arch
from .errors import ToolError

ERROR_LINE = re.compile(r"^(?P<loc>[^\s:][^:]*:\d+:\d+: )?(?:fatal )?error: .*$", re.M)
# Failures of the compiler's back end, retried at RETRY_OPT. "Illegal instruction detected": clang 22
# at -O0 emits a DPP wavefront shift for gfx1100, which RDNA lacks (ggml's mmf-instance-ncols_8.cu,
# its own ROCm path; it compiles at -O2).
BACKEND_ERROR = re.compile(r"error in backend|Cannot select|<unknown>:0:0|LLVM ERROR|must be a constant integer"
                           r"|Illegal instruction detected")
RETRY_OPT = "-O2"
# A device pass whose link of the unit's code object misses a device symbol: the symbol is defined in
# another unit, which CUDA builds as relocatable device code (nvcc -rdc=true, CMake's
# CUDA_SEPARABLE_COMPILATION) and links at the end; such a pass is retried with hipcc's RDC_FLAG.
DEVICE_LINK_UNDEFINED = re.compile(r"lld: error: undefined (?:hidden )?symbol:")
RDC_FLAG = "-fgpu-rdc"
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
    ("path:line" relative to the out dir of each line where clang's narrowing cast was inserted), rdc
    (compiled as relocatable device code, RDC_FLAG: the unit uses a device symbol of another unit)."""

    status: str
    first_error: str
    log: str
    seconds: float
    opt: str
    fixits: tuple[str, ...] = ()
    rdc: bool = False


def host_only(kind: str, blanked: str) -> bool:
    """True when a unit of tree.SourceFile `kind` ("cu", "cxx") with this text (comments and string
    literals blanked: cpp.blank) is host code only: a C/C++ source with no DEVICE_CODE. A .cu unit is
    always compiled for the device, as nvcc and hipcc do."""
    return kind == "cxx" and not DEVICE_CODE.search(blanked)


# rocThrust, hipCUB and rocPRIM headers, which call AMDGPU builtins (__builtin_amdgcn_wavefrontsize) in
# rocPRIM's arch.hpp and so compile only as HIP; CUDA's Thrust also compiles under a host compiler
DEVICE_LIBRARY_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*[<"]((?:thrust|hipcub|rocprim|cub)/[^>"]+)[>"]', re.M)


def device_library_header(texts: list[str]) -> str:
    """The first rocThrust / hipCUB / rocPRIM header (DEVICE_LIBRARY_INCLUDE) the texts (a unit's include
    closure, comments and strings blanked except include names: cpp.blank_code) include, or "": a C++ unit
    that includes one is compiled as HIP (MinkowskiEngine 0.5.4's direct_max_pool.cpp reaches
    <thrust/host_vector.h> through its utils.hpp; as C++ rocPRIM's arch.hpp fails)."""
    for text in texts:
        m = DEVICE_LIBRARY_INCLUDE.search(text)
        if m:
            return m.group(1)
    return ""


def find_hipcc() -> Path:
    """Path of hipcc on PATH; raises ToolError when missing."""
    found = shutil.which("hipcc")
    if not found:
        raise ToolError("hipcc: not found on PATH (the dev image installs it; apt-get install hipcc)")
    return Path(found)


REQUESTED = re.compile(r"^(?P<loc>[^\s:][^:]*:\d+:\d+: )note: in instantiation of .* requested here$", re.M)
# clang's reason a candidate of an overload or conversion does not apply, when it is a type mismatch:
# the mismatch is the cause of a "no matching function / constructor" error, not the call
NOT_VIABLE = re.compile(r"^[^\s:][^:]*:\d+:\d+: note: candidate [^:\n]* not viable: (?P<why>no known conversion from .*)$", re.M)
# where clang's "previous declaration" of a redefined or conflicting name lies: a HIP header, when CUDA
# lacks a function the project therefore wrote itself (float atomicMin) and HIP declares it
PREVIOUS = re.compile(r"^(?P<loc>[^\s:][^:]*:\d+):\d+: note: previous (?:definition|declaration|implicit declaration) is here$", re.M)


def first_error(output: str, user_root: str = "") -> str:
    """The first `error:` line of compiler output (with its file:line:col when given), or the last
    non-empty line when no error line is found. When a note of that error says a candidate is not
    viable for a type mismatch ("no known conversion from 'A' to 'B'"), the first such reason follows
    in parentheses, and so does the previous declaration of a redefined name when it lies outside
    `user_root` (a HIP header's). When that error lies in a header outside `user_root` (a HIP static assertion) and
    clang names the user's line that requested the template, that line is quoted, with the header's
    location in parentheses."""
    m = ERROR_LINE.search(output)
    if m:
        line, loc = m.group(0).strip(), m.group("loc") or ""
        following = ERROR_LINE.search(output, m.end())
        notes_end = following.start() if following else len(output)
        mismatch = NOT_VIABLE.search(output, m.end(), notes_end)
        if mismatch:
            line += f" (candidate not viable: {mismatch.group('why').strip()})"
        previous = PREVIOUS.search(output, m.end(), notes_end)
        if user_root and previous and not previous.group("loc").startswith(user_root):
            line += f" (previous declaration: {previous.group('loc')})"
        if user_root and loc and not loc.startswith(user_root):
            for note in REQUESTED.finditer(output, m.end(), notes_end):
                if note.group("loc").startswith(user_root):
                    return f"{note.group('loc')}{line[len(loc):]} (in {loc.rstrip(': ')})"
        return line
    lines = [line for line in output.splitlines() if line.strip()]
    return lines[-1].strip() if lines else "hipcc failed without output"


# A host-only unit is compiled as C++, as its build's host compiler compiles it (CMake's CXX compiler,
# cpp_extension's c++), where HIP's headers define __host__ / __device__ / __global__ as nothing: a
# .cpp may call a __device__ member of a header's class (LightGBM 4.7.0 cuda_single_gpu_tree_learner.cpp),
# which -x hip rejects.
HOST_CXX = ["-x", "c++"]
# Every pass defines the platform macro on the command line, as CMake's hip::host / hip::device
# targets and cpp_extension's COMMON_HIP_FLAGS do: hipcc leaves it to hip/hip_common.h (which keeps a
# given value), and a source that tests it before including a HIP header (LightGBM's
# cuda_rocm_interop.h, compiled untranslated) would otherwise see it undefined.
PLATFORM = "-D__HIP_PLATFORM_AMD__=1"


def _args(hipcc: Path, job: Job, defines: tuple[str, ...], mode: list[str], extra: list[str], opt: str) -> list[str]:
    """The hipcc arguments of one pass of `job` without -c, source and output: mode is
    ["--offload-host-only", archs...], ["--offload-device-only", "--offload-arch=A"], or HOST_CXX for
    a host-only unit."""
    language = [] if mode == HOST_CXX else ["-x", "hip"]
    platform = [] if PLATFORM in job.flags else [PLATFORM]  # a PyTorch extension's flags name it already
    return [str(hipcc), *language, f"-std={job.std}", opt, "-w", *mode, *platform, *(f"-D{d}" for d in defines),
            *(f"-I{d}" for d in job.include_dirs), *job.flags, *extra, fixits.FLAG]


def _hipcc(args: list[str], source: Path, base: Path, out_root: Path, timeout: int, opt: str,
           pch_file: Path | None = None) -> tuple[Result, str]:
    """One hipcc pass (`args` from _args) of `source` (the unit, or its pch.blanked_copy with
    `pch_file` loaded); object and log at <base>.o / <base>.log. Returns (result, output)."""
    obj, log = base.with_name(base.name + ".o"), base.with_name(base.name + ".log")
    cmd = [*args, *(["-include-pch", str(pch_file)] if pch_file else []), "-c", str(source), "-o", str(obj)]
    obj.parent.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    output, code = proc.run_tree(cmd, timeout)
    if code is None:
        output += f"\nrocmig: hipcc ran past {timeout} s and was stopped\n"
    seconds = round(time.monotonic() - started, 2)
    log.write_text("$ " + " ".join(cmd) + "\n" + output, encoding="utf-8")
    rel_log = str(log.relative_to(out_root))
    if code is None:
        return Result("timeout", f"hipcc ran past {timeout} s", rel_log, seconds, opt), output
    if code == 0 and obj.exists():
        return Result("ok", "", rel_log, seconds, opt), output
    return Result("failed", first_error(output, str(out_root)), rel_log, seconds, opt), output


@dataclass(frozen=True)
class Pass:
    """One compiler pass of a unit: mode ("host" or an offload arch name), its defines, the archs
    whose result it decides, and the hipcc arguments from _args."""

    mode: str
    defines: tuple[str, ...]
    archs: tuple[Arch, ...]
    args: tuple[str, ...]


def passes(hipcc: Path, job: Job, groups: list[list[Arch]], extra: list[str], opt: str) -> list[Pass]:
    """The passes of `job`: per call group (call_groups) one host pass, and for a unit with device
    code one device pass per arch of the group. A unit is compiled for an arch when the host pass
    of its group and the device pass of that arch both produce an object."""
    found = []
    for group in call_groups(job, groups):
        defines = job.defines.get(group[0].wavefront, ())
        host_mode = HOST_CXX if job.host_only else ["--offload-host-only", *(f"--offload-arch={a.name}" for a in group)]
        found.append(Pass("host", defines, tuple(group), tuple(_args(hipcc, job, defines, host_mode, extra, opt))))
        if not job.host_only:
            found += [Pass(a.name, defines, (a,), tuple(_args(hipcc, job, defines, ["--offload-device-only",
                                                                                   f"--offload-arch={a.name}"],
                                                              extra, opt)))
                      for a in group]
    return found


def _build(job: Job, one: Pass, base: Path, out_root: Path, timeout: int, opt: str,
           shared: tuple[Path, Path] | None) -> Result:
    """One pass of `job`; with `shared` (PCH, blanked copy of the unit) the copy is compiled with the
    PCH first, and a failure that way is compiled again from the unit itself. A failure with clang's
    narrowing casts gets them applied (fixits.py) and is compiled once more; one from the compiler
    back end is retried once at RETRY_OPT; one whose device link misses a symbol of another unit is
compiled once more as relocatable device code (RDC_FLAG). So neither a PCH, -O0 nor the whole-program
device link of one unit decides that a unit fails."""
    args = list(one.args)
    if shared:
        result, output = _hipcc(args, shared[1], base, out_root, timeout, opt, shared[0])
        if result.status == "ok":
            return result
    result, output = _hipcc(args, job.source, base, out_root, timeout, opt)
    casts = fixits.narrowing_casts(output, str(out_root)) if result.status == "failed" and job.casts else []
    if casts:
        changed = tuple(f"{os.path.relpath(path, out_root)}:{line}" for path, line in fixits.apply(casts))
        result, output = _hipcc(args, job.source, base.with_name(base.name + ".fixit"), out_root, timeout, opt)
        result = replace(result, fixits=changed)
    if result.status == "failed" and one.mode != "host" and RDC_FLAG not in args and DEVICE_LINK_UNDEFINED.search(output):
        args = [*args, RDC_FLAG]
        result, output = _hipcc(args, job.source, base.with_name(base.name + ".rdc"), out_root, timeout, opt)
        result = replace(result, rdc=True)
    if result.status == "failed" and opt != RETRY_OPT and BACKEND_ERROR.search(output):
        retry = [RETRY_OPT if a == opt else a for a in args]
        result, _ = _hipcc(retry, job.source, base.with_name(base.name + RETRY_OPT), out_root, timeout, RETRY_OPT)
        result = replace(result, rdc=RDC_FLAG in args)
    return result


def call_groups(job: Job, groups: list[list[Arch]]) -> list[list[Arch]]:
    """The archs of each host pass of `job`: the wavefront `groups` (archs.wavefront_groups) whose
    defines are equal for this job are merged, in the order of the groups."""
    merged: dict[tuple[str, ...], list[Arch]] = {}
    for group in groups:
        merged.setdefault(tuple(job.defines.get(group[0].wavefront, ())), []).extend(group)
    return list(merged.values())


def _tag(one: Pass) -> str:
    return "host-" + "+".join(a.name for a in one.archs) if one.mode == "host" else one.mode


def compile_unit(job: Job, unit_passes: list[Pass], build_dir: Path, out_root: Path, timeout: int, opt: str,
                 cache: pch.Cache, prefix: pch.Prefix) -> dict[str, Result]:
    """Compile one unit for every arch; returns {arch name: Result}.

    unit_passes: passes(job, ...); build_dir receives objects and logs (<build_dir>/<rel>.<arch>.o /
    .log for a device pass, <rel>.host-<archs>.o / .log for a host pass); opt: optimization flag,
    e.g. "-O0"; cache and prefix: the run's shared PCHs and the unit's shared_prefix (a pass whose
    PCH the cache has compiles the unit's blanked copy, removed at the end, or with an empty prefix
    the unit itself). An arch's result is
    its host pass's when that failed, else its device pass's (a host-only unit: the host pass's);
    seconds add up both passes.
    """
    results: dict[str, Result] = {}
    host: Result | None = None
    copy: Path | None = None
    try:
        for one in unit_passes:
            if one.mode in results:
                continue
            pch_file = cache.get(list(one.args), prefix, timeout)
            if pch_file and prefix.lines and copy is None:
                copy = pch.blanked_copy(job.source, *tree.read_work_text(job.source), prefix)
            # An empty prefix's PCH holds the implicit headers only: the unit itself is compiled with it.
            with_pch = copy if prefix.lines else job.source
            shared = (pch_file, with_pch) if pch_file and with_pch else None
            result = _build(job, one, build_dir / f"{job.rel}.{_tag(one)}", out_root, timeout, opt, shared)
            if result.fixits and copy is not None:  # the tree changed: the next pass copies it again
                copy.unlink(missing_ok=True)
                copy = None
            if one.mode == "host":
                host = result
                if job.host_only or result.status != "ok":
                    results.update({a.name: result for a in one.archs})
                continue
            spent = round(result.seconds + (host.seconds if host else 0.0), 2)
            results[one.mode] = replace(result, seconds=spent)
    finally:
        if copy is not None:
            copy.unlink(missing_ok=True)
    return results


def compile_all(hipcc: Path, jobs: list[Job], groups: list[list[Arch]], build_dir: Path, out_root: Path,
                workers: int, extra: list[str], timeout: int, opt: str = "-O0",
                done: Callable[[dict[str, dict[str, Result]], int], None] | None = None) -> dict[str, dict[str, Result]]:
    """Compile every job with `workers` hipcc processes at a time; returns {rel: {arch: Result}}.
    Larger sources start first so that the slowest units do not finish last. Passes that share
    compiler arguments and leading includes share one PCH (pch.choose; HIP passes that share no
    include share the PCH of clang's implicit HIP headers), built under build_dir/pch and removed at
    the end. done(results so far, number of jobs) is called after each unit, in the
    calling thread."""
    ordered = sorted(jobs, key=lambda j: j.source.stat().st_size, reverse=True)
    plan = {job.rel: passes(hipcc, job, groups, extra, opt) for job in ordered}
    prefixes = pch.choose({job.rel: pch.shared_prefix(job.source, job.source.read_text(encoding="utf-8", errors="replace"))
                           for job in ordered},
                          {rel: "\0\n".join("\0".join(one.args) for one in unit_passes) for rel, unit_passes in plan.items()})
    uses = Counter(pch.Cache.key(list(one.args), prefixes[rel]) for rel, unit_passes in plan.items()
                   for one in unit_passes if pch.worth_a_pch(list(one.args), prefixes[rel]))
    cache = pch.Cache(build_dir / "pch", {key for key, n in uses.items() if n > 1})
    results: dict[str, dict[str, Result]] = {}
    try:
        with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
            futures = {pool.submit(compile_unit, job, plan[job.rel], build_dir, out_root, timeout, opt, cache,
                                   prefixes[job.rel]): job.rel for job in ordered}
            for future in as_completed(futures):
                results[futures[future]] = future.result()
                if done is not None:
                    done(results, len(ordered))
    finally:
        shutil.rmtree(build_dir / "pch", ignore_errors=True)
    return {job.rel: results[job.rel] for job in ordered}
