"""PyTorch extension units: hipified and compiled the way PyTorch's own extension build does on ROCm.

When a user pip-installs a CUDA extension against ROCm PyTorch, torch.utils.cpp_extension runs
torch.utils.hipify over the extension (is_pytorch_extension=True: foo.cu -> foo.hip, foo_cuda.cu ->
foo_hip.hip, a header whose name does not change gets a _hip suffix, includes rewritten to match) and
compiles the results with hipcc and its own flags (COMMON_HIP_FLAGS + COMMON_HIPCC_FLAGS in
cpp_extension.py, -std=c++20, torch/include and torch/include/torch/csrc/api/include, Python's
include folder). This module does the same for the units of a tree that include torch/ATen/c10.

The headers and torch.utils.hipify come from $ROCMIG_TORCH_PATH (OUT of migrate.torch_headers in the
debian lane: a reconstruction; a ROCm PyTorch install in the amd lane). Source of the flags:
torch/utils/cpp_extension.py of PyTorch 2.14.1.
"""

from __future__ import annotations

import glob
import io
import os
import shutil
import sys
import sysconfig
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass
from pathlib import Path

TORCH_PATH_ENV = "ROCMIG_TORCH_PATH"
# cpp_extension.py: COMMON_HIP_FLAGS (less -fPIC, added below) + COMMON_HIPCC_FLAGS, and the extension
# defines BuildExtension adds.
FLAGS = ("-D__HIP_PLATFORM_AMD__=1", "-DUSE_ROCM=1", "-DHIPBLAS_V2", "-DCUDA_HAS_FP16=1",
         "-D__HIP_NO_HALF_OPERATORS__=1", "-D__HIP_NO_HALF_CONVERSIONS__=1", "-DHIP_ENABLE_WARP_SYNC_BUILTINS=1",
         "-DTORCH_API_INCLUDE_EXTENSION_H", "-DTORCH_EXTENSION_NAME=rocmig_check", "-fPIC")
STD = "c++20"


@dataclass(frozen=True)
class Torch:
    """A PyTorch header set for ROCm: include_dirs (absolute, in -I order), hipify_parent (folder that
    holds torch.utils.hipify as `hipify/`), origin (for the report: "reconstruction" or "install")."""

    include_dirs: tuple[str, ...]
    hipify_parent: str
    origin: str


def find(env: dict[str, str] | None = None) -> Torch | None:
    """The torch header set: $ROCMIG_TORCH_PATH (include/ + hipify/), else an installed ROCm PyTorch
    (site-packages torch/include with ATen/hip, and torch/utils/hipify); None when neither is present."""
    env = dict(os.environ) if env is None else env
    python = sysconfig.get_paths().get("include", "")
    extra = (python,) if python and os.path.exists(os.path.join(python, "Python.h")) else ()
    root = env.get(TORCH_PATH_ENV, "")
    if root and os.path.exists(os.path.join(root, "include", "torch", "extension.h")) \
            and os.path.isdir(os.path.join(root, "hipify")):
        inc = os.path.join(root, "include")
        return Torch((inc, os.path.join(inc, "torch", "csrc", "api", "include")) + extra, root, "reconstruction")
    for base in sorted(glob.glob("/usr/lib/python3*/*-packages/torch") + glob.glob("/usr/local/lib/python3*/*-packages/torch")
                       + glob.glob("/opt/venv/lib/python3*/site-packages/torch")):
        inc = os.path.join(base, "include")
        if os.path.isdir(os.path.join(inc, "ATen", "hip")) and os.path.isdir(os.path.join(base, "utils", "hipify")):
            return Torch((inc, os.path.join(inc, "torch", "csrc", "api", "include")) + extra,
                         os.path.join(base, "utils"), "install")
    return None


def hipify_units(torch: Torch, cuda_dir: Path, out_dir: Path, units: list[str]) -> dict[str, str]:
    """Copy `cuda_dir` to `out_dir` and hipify `units` (tree-relative) there with torch.utils.hipify in
    extension mode, headers they include following; returns {unit: hipified tree-relative path}.
    A unit torch.utils.hipify leaves as it is maps to itself."""
    if out_dir.exists():
        shutil.rmtree(out_dir)
    shutil.copytree(cuda_dir, out_dir)
    if torch.hipify_parent not in sys.path:
        sys.path.insert(0, torch.hipify_parent)
    from hipify import hipify_python  # type: ignore[import-not-found]

    sources = [str(out_dir / u) for u in units]
    with redirect_stdout(io.StringIO()), redirect_stderr(io.StringIO()):
        result = hipify_python.hipify(project_directory=str(out_dir), output_directory=str(out_dir),
                                      includes=[f"{out_dir}/*"], extra_files=sources, show_detailed=False,
                                      show_progress=False, is_pytorch_extension=True, hipify_extra_files_only=True)
    mapped = {}
    for unit, source in zip(units, sources):
        entry = result.get(source)
        path = getattr(entry, "hipified_path", None) if entry is not None else None
        mapped[unit] = os.path.relpath(path, out_dir) if path else unit
    return mapped


def flags(torch: Torch) -> list[str]:
    """The compile flags of an extension unit besides the offload archs: defines, -fPIC, -I dirs."""
    return [*FLAGS, *(f"-I{d}" for d in torch.include_dirs)]
