"""hipcc flags a unit needs for system libraries it uses: OpenMP and MPI; and the version of the
toolchain's hipBLAS, whose API the fixups follow.

A unit (or a header it includes from the tree) that includes <omp.h> or has an `#pragma omp` line is
compiled with -fopenmp (clang 22 with libomp-22-dev in the debian lane) and
-Wno-error=hip-omp-target-directives: clang ignores OpenMP target directives in HIP code and makes that
an error by default; ignored, a target region runs on the host as OpenMP's host fallback runs it where
no offload device is configured (gcc -fopenmp under nvcc). A unit that includes <mpi.h>
gets the compile flags of the MPI installation: `pkg-config --cflags mpi` (Debian's mpi-default-dev
alternative, Open MPI), else `mpicc --showme:compile` (Open MPI's wrapper), else nothing. A unit that
includes Eigen (`<Eigen/...>`, `<unsupported/Eigen/...>`) gets `pkg-config --cflags eigen3` (Debian's
libeigen3-dev keeps the headers under /usr/include/eigen3, which no compiler searches by default) and
-DEIGEN_USE_HIP (eigen_flags). A unit that includes the Python C API (<Python.h>, pybind11, nanobind, Boost.Python,
NumPy's C API) gets -isystem for the running interpreter's include folder, and NumPy's where NumPy is installed
(python_flags), as the project's setup.py / CMake build passes them.
A unit that includes x86 intrinsics headers (<immintrin.h>, ...) gets the x86 instruction-set flags the
tree's build files name (-mavx, -mf16c, ...: flags.host_isa_flags).
"""

from __future__ import annotations

import functools
import importlib.util
import os
import posixpath
import re
import shlex
import shutil
import subprocess
import sysconfig
from collections.abc import Mapping

from . import flags, includes
from .fixups import HEADER_LAYOUT

OPENMP = re.compile(r'^[ \t]*#[ \t]*(?:include[ \t]*[<"]omp\.h[>"]|pragma[ \t]+omp\b)', re.M)
MPI = re.compile(r'^[ \t]*#[ \t]*include[ \t]*[<"]mpi\.h[>"]', re.M)
EIGEN = re.compile(r'^[ \t]*#[ \t]*include[ \t]*[<"](?:unsupported/)?Eigen/', re.M)
PYTHON_API = re.compile(r'^[ \t]*#[ \t]*include[ \t]*[<"](?:Python\.h|pybind11/|nanobind/|boost/python|numpy/)', re.M)
NVTX3 = re.compile(r'^[ \t]*#[ \t]*include[ \t]*<nvtx3/(?:nvToolsExt\.h|nvtx3\.hpp)>', re.M)


def nvtx_dir() -> str:
    """The dev image's folder holding only NVIDIA's header-only NVTX 3 (nvtx3/, from the CUDA headers at
    $ROCMIG_CUDA_PATH; templates/dev.Dockerfile.j2 links it), or "" where there is none."""
    cuda = os.environ.get("ROCMIG_CUDA_PATH", "")
    folder = os.path.join(cuda, "nvtx") if cuda else ""
    return folder if folder and os.path.isfile(os.path.join(folder, "nvtx3", "nvToolsExt.h")) else ""


def _first_cflags(commands: tuple[tuple[str, ...], ...]) -> tuple[str, ...]:
    """The -I / -D / -pthread flags printed by the first of `commands` that runs and prints any; ()."""
    for args in commands:
        if not shutil.which(args[0]):
            continue
        try:
            proc = subprocess.run(args, capture_output=True, text=True, timeout=30, check=False)
        except (OSError, subprocess.TimeoutExpired):
            continue
        if proc.returncode == 0 and proc.stdout.strip():
            return tuple(f for f in shlex.split(proc.stdout) if f.startswith(("-I", "-D", "-pthread")))
    return ()


@functools.lru_cache(maxsize=1)
def mpi_flags() -> tuple[str, ...]:
    """Compile flags of the installed MPI (see module doc); () when none answers."""
    return _first_cflags((("pkg-config", "--cflags", "mpi"), ("pkg-config", "--cflags", "ompi"),
                          ("mpicc", "--showme:compile")))


@functools.lru_cache(maxsize=1)
def eigen_flags() -> tuple[str, ...]:
    """Compile flags for a unit that includes Eigen 3: the installed Eigen's (`pkg-config --cflags eigen3`,
    none where it is not installed and the project brings its own copy) and -DEIGEN_USE_HIP, which has
    Eigen's GPU code (EIGEN_USE_GPU) include and use HIP's runtime instead of cuda_runtime.h, as
    TensorFlow's ROCm build sets it for every source (Eigen 3.4, GpuHipCudaDefines.inc)."""
    return (*_first_cflags((("pkg-config", "--cflags", "eigen3"),)), "-DEIGEN_USE_HIP")


def python_include_dir() -> str:
    """The running Python's C API folder (sysconfig's `include` path) when it holds Python.h, else "".
    The interpreter is the dev image's, whose python3-dev holds the headers."""
    python = sysconfig.get_paths().get("include", "")
    return python if python and os.path.isfile(os.path.join(python, "Python.h")) else ""


@functools.lru_cache(maxsize=1)
def python_flags() -> tuple[str, ...]:
    """-isystem for the running Python's C API headers (python_include_dir) and for NumPy's (its
    package's _core/include or core/include, when NumPy is installed); () for what is missing."""
    python = python_include_dir()
    out = ["-isystem", python] if python else []
    spec = importlib.util.find_spec("numpy")
    for base in (spec.submodule_search_locations or []) if spec else []:
        for sub in ("_core", "core"):
            folder = os.path.join(base, sub, "include")
            if os.path.isfile(os.path.join(folder, "numpy", "arrayobject.h")):
                return (*out, "-isystem", folder)
    return tuple(out)


# A ROCm library header by the name it had before ROCm 6 moved it into the library's folder
# (fixups.HEADER_LAYOUT: <hiprand_kernel.h> -> <hiprand/hiprand_kernel.h>): a project's own HIP code
# that still includes it gets that folder from its build (cupy 14.2.0's install_build.py: `include/hiprand`)
FLAT_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*[<"]([\w.]+)[>"]', re.M)


@functools.lru_cache(maxsize=65536)
def _asks(text: str) -> tuple[frozenset[str], frozenset[str]]:
    """What one file's text asks of the compile: the dependencies it includes or uses ("openmp", "mpi",
    "eigen", "python", "nvtx3", and "x86" for an x86 intrinsics header) and the ROCm library headers it includes by their flat names
    (HEADER_LAYOUT). Cached by text: a header is read once, not once per unit that reaches it."""
    asked = frozenset(name for name, pattern in (("openmp", OPENMP), ("mpi", MPI), ("eigen", EIGEN), ("python", PYTHON_API),
                                                 ("nvtx3", NVTX3), ("x86", X86_INTRINSICS)) if pattern.search(text))
    return asked, frozenset(m.group(1) for m in FLAT_INCLUDE.finditer(text)) & frozenset(HEADER_LAYOUT)


def flags_for(texts: list[str], system_dirs: tuple[str, ...] = ()) -> tuple[str, ...]:
    """Flags for a unit whose include closure (the unit and the tree files it includes) has `texts`:
    -fopenmp, MPI's, Eigen's, Python's (python_flags), -isystem for NVTX 3 where a file includes it (features.nvtx keeps it for files that
    use more than NVTX's ranges; nvtx_dir), and -isystem for the folder of each ROCm library header
    included by its flat name that `system_dirs` (hipcc's search path) hold only under the library's
    folder."""
    asks = [_asks(t) for t in texts]
    out: list[str] = []
    if any("openmp" in a for a, _flat in asks):
        out += ["-fopenmp", "-Wno-error=hip-omp-target-directives"]
    if any("mpi" in a for a, _flat in asks):
        out.extend(mpi_flags())
    if any("eigen" in a for a, _flat in asks):
        out.extend(eigen_flags())
    if any("python" in a for a, _flat in asks):
        out.extend(python_flags())
    nvtx = nvtx_dir() if any("nvtx3" in a for a, _flat in asks) else ""
    if nvtx:
        out += ["-isystem", nvtx]
    flat = frozenset().union(*(f for _asked, f in asks))
    for name in sorted(flat):
        if any(os.path.isfile(os.path.join(d, name)) for d in system_dirs):
            continue
        for d in system_dirs:
            folder = os.path.join(d, posixpath.dirname(HEADER_LAYOUT[name]))
            if os.path.isfile(os.path.join(folder, name)):
                out += [] if folder in out else ["-isystem", folder]
                break
    return tuple(out)


def unit_flags(edges: includes.Edges | Mapping[str, list[tuple[str, str]]], texts: dict[str, str], unit: str,
               system_dirs: tuple[str, ...] = (), isa: tuple[tuple[str, str], ...] = ()) -> tuple[str, ...]:
    """flags_for over `unit` and every tree file it includes, transitively (edges: IncludeGraph.edges,
    {rel: [(included rel, -I folder)]}), then, where that closure includes an x86 intrinsics header, the
    host ISA flags of `isa` (flags.host_isa_flags) named by a build file at or above the unit's folder, each as
    `-Xarch_host FLAG`: clang's HIP driver gives it to the host pass only (the device passes compile for
    amdgcn, where x86 features mean nothing)."""
    seen, stack = {unit}, [unit]
    while stack:
        for target, _folder in edges.get(stack.pop(), []):
            if target not in seen:
                seen.add(target)
                stack.append(target)
    closure = [texts[r] for r in sorted(seen) if r in texts]
    out = flags_for(closure, system_dirs)
    if not isa or not any("x86" in _asks(t)[0] for t in closure):
        return out
    return out + tuple(word for flag, where in isa if flags.covers(where, unit) for word in ("-Xarch_host", flag))


# an x86 SIMD intrinsics header (GCC's and clang's <immintrin.h> family)
X86_INTRINSICS = re.compile(r'^[ \t]*#[ \t]*include[ \t]*[<"](?:[a-z]*mmintrin|x86intrin|x86gprintrin|cpuid)\.h[>"]', re.M)
HIPBLAS_MAJOR = re.compile(r"^[ \t]*#[ \t]*define[ \t]+hipblasVersionMajor[ \t]+(\d+)", re.M)


def hipblas_major(system_dirs: tuple[str, ...]) -> int | None:
    """The major version of the hipBLAS whose hipblas/hipblas-version.h the first of `system_dirs`
    (hipcc's include search path) holds (3 in ROCm 7.x), None when none does."""
    for d in system_dirs:
        path = os.path.join(d, "hipblas", "hipblas-version.h")
        if os.path.isfile(path):
            with open(path, encoding="utf-8", errors="replace") as f:
                m = HIPBLAS_MAJOR.search(f.read())
            return int(m.group(1)) if m else None
    return None


MACRO_DEFINE = re.compile(r"^[ \t]*#[ \t]*define[ \t]+([A-Za-z_]\w*)(\(?)(.*)$", re.M)
IDENTIFIER = re.compile(r"[A-Za-z_]\w*")


def hip_leaked_macros(system_dirs: tuple[str, ...]) -> frozenset[str]:
    """Object-like macros that the HIP headers under the first of `system_dirs` holding
    hip/hip_runtime.h define with plain names (amd_device_functions.h's MASK1, MASK2, HW_ID, XCC_ID, ...;
    not _-, hip- / HIP- or CUDA_-prefixed, nor include guards ending in _H) and that no other HIP macro
    expands to, so an #undef after the includes changes no HIP code: a CUDA program's own identifier of
    that name ("constexpr int MASK1 = ...") would otherwise become a number. Empty without HIP headers."""
    root = next((os.path.join(d, "hip") for d in system_dirs
                 if os.path.isfile(os.path.join(d, "hip", "hip_runtime.h"))), None)
    if root is None:
        return frozenset()
    names: set[str] = set()
    used: set[str] = set()
    for folder, _dirs, files in os.walk(root):
        for name in files:
            if not name.endswith(".h"):
                continue
            with open(os.path.join(folder, name), encoding="utf-8", errors="replace") as f:
                text = f.read().replace("\\\n", " ")
            for m in MACRO_DEFINE.finditer(text):
                used.update(IDENTIFIER.findall(m.group(3)))
                macro = m.group(1)
                if not m.group(2) and not macro.startswith(("_", "CUDA_")) and not macro.lower().startswith("hip") \
                        and not macro.endswith("_H"):
                    names.add(macro)
    return frozenset(names - used)
