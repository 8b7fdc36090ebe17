"""Reconstruct ROCm-flavoured PyTorch C++ headers from a CUDA-capable header set (image build step).

The debian lane has no ROCm PyTorch. Debian's libtorch-dev ships PyTorch's C++ headers including
ATen/cuda, ATen/native/cuda and c10/cuda; a ROCm build of PyTorch installs, beside them, the HIP
headers that PyTorch's own build makes by hipifying those folders (tools/amd_build, which calls
torch.utils.hipify on the source tree: aten/src/ATen/cuda -> aten/src/ATen/hip, c10/cuda -> c10/hip).
This step does the same on the installed headers: it lays the CUDA folders out as their source-tree
paths, runs torch.utils.hipify (the copy shipped by python3-torch of the same version), and copies the
hip/ folders back beside the CUDA ones. The torch/ folder is hipified in place, as PyTorch's build does
(tools/amd_build/build_amd.py lists "torch/*" in its includes, and hipify_python.is_out_of_place is
False under torch/): a ROCm PyTorch's torch/headeronly/cuda/Atomic.h includes <hip/hip_runtime.h> where
the CUDA one includes <cuda.h>, and `defined(__CUDACC__)` tests read `defined(__HIPCC__)`. Two headers that a real build generates with CMake are written
here (see GENERATED), and the THC compatibility header that only GPU builds install (LEGACY). The result is a reconstruction: good for compile checks of extensions, not a
ROCm PyTorch.

    python3 -m migrate.torch_headers --include /usr/include --hipify DIR/torch/utils --out /opt/rocmig/torch

Output: OUT/include (the headers), OUT/hipify (torch.utils.hipify, importable as `hipify` with OUT on
sys.path, for the recipe's own hipify of extension sources), OUT/version.json.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import shutil
import sys
import tempfile
from contextlib import redirect_stdout
from pathlib import Path

# installed folder -> PyTorch source-tree folder (what torch.utils.hipify's path rules expect)
CUDA_FOLDERS = {"ATen/cuda": "aten/src/ATen/cuda", "ATen/native/cuda": "aten/src/ATen/native/cuda",
                "c10/cuda": "c10/cuda"}
# installed folder hipified in place (same paths), as PyTorch's build does for its torch/ tree
IN_PLACE = "torch"
# Headers a ROCm build generates from *.h.in with CMake (configure_file); values of a ROCm build with
# shared libraries, MIOpen and hipSPARSELt, without cuDNN, cuSPARSELt or MAGMA.
GENERATED = {
    "c10/hip/impl/hip_cmake_macros.h": "#pragma once\n// rocmig reconstruction of PyTorch's generated "
    "c10/cuda/impl/cuda_cmake_macros.h for a HIP build.\n#define C10_CUDA_BUILD_SHARED_LIBS\n",
    "ATen/hip/HIPConfig.h": "#pragma once\n// rocmig reconstruction of PyTorch's generated ATen/cuda/CUDAConfig.h "
    "for a ROCm build.\n#define AT_CUDNN_ENABLED() 0\n#define AT_CUSPARSELT_ENABLED() 0\n"
    "#define AT_HIPSPARSELT_ENABLED() 1\n#define AT_ROCM_ENABLED() 1\n#define AT_MAGMA_ENABLED() 0\n"
    "#define NVCC_FLAGS_EXTRA \"\"\n",
}
# THC/THCAtomics.cuh is the one THC header PyTorch 2.x still installs, and only in CUDA and ROCm builds
# (Debian's CPU build has none): a one-line forward to ATen/cuda/Atomic.cuh, kept for extensions written
# before THC was removed (mmcv 2.2.0's pytorch_cuda_helper.hpp, older torchvision). A ROCm build
# installs it as torch.utils.hipify names it, THH/THHAtomics.cuh, forwarding to ATen/hip/Atomic.cuh.
LEGACY = {
    "THH/THHAtomics.cuh": "#pragma once\n// rocmig reconstruction of a ROCm PyTorch's THH/THHAtomics.cuh (PyTorch's "
    "aten/src/THC/THCAtomics.cuh, hipified).\n#include <ATen/hip/Atomic.cuh>\n",
}


def hipify_folders(include: Path, hipify_parent: Path, work: Path) -> list[str]:
    """Hipify include/<CUDA_FOLDERS> (into hip/ folders beside them) and include/<IN_PLACE> (in place)
    with torch.utils.hipify (found as `hipify` in hipify_parent); returns the installed-path names of
    the files written. Raises ImportError when hipify is missing, FileNotFoundError when a CUDA folder
    or the torch/ folder is."""
    for installed, source in {**CUDA_FOLDERS, IN_PLACE: IN_PLACE}.items():
        if not (include / installed).is_dir():
            raise FileNotFoundError(f"{include / installed}: no such folder (a header set with CUDA headers is needed)")
        shutil.copytree(include / installed, work / source, symlinks=True)
    sys.path.insert(0, str(hipify_parent))
    from hipify import hipify_python  # type: ignore[import-not-found]

    with redirect_stdout(io.StringIO()):
        hipify_python.hipify(project_directory=str(work), output_directory=str(work), includes=[f"{work}/*"],
                             show_detailed=False, show_progress=False, hip_clang_launch=True)
    written = []
    for installed, source in CUDA_FOLDERS.items():
        hip_source = work / source.replace("cuda", "hip")
        hip_installed = installed.replace("cuda", "hip")
        for path in sorted(hip_source.rglob("*")):
            if path.is_file():
                rel = path.relative_to(hip_source)
                target = include / hip_installed / rel
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(path, target)
                written.append(f"{hip_installed}/{rel}")
    for path in sorted((work / IN_PLACE).rglob("*")):
        target = include / path.relative_to(work)
        if path.is_file() and not path.is_symlink() and path.read_bytes() != target.read_bytes():
            shutil.copyfile(path, target)
            written.append(str(path.relative_to(work)))
    return written


def build(include: Path, hipify_dir: Path, out: Path, version: str) -> dict:
    """Write OUT/include, OUT/hipify and OUT/version.json; returns the version data."""
    if out.exists():
        shutil.rmtree(out)
    shutil.copytree(include, out / "include", symlinks=True)
    shutil.copytree(hipify_dir / "hipify", out / "hipify", ignore=shutil.ignore_patterns("__pycache__"))
    with tempfile.TemporaryDirectory() as tmp:
        written = hipify_folders(out / "include", out, Path(tmp))
    for rel, text in {**GENERATED, **LEGACY}.items():
        target = out / "include" / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    data = {"torch": version, "reconstruction": True, "hipified_files": len(written),
            "generated": sorted({**GENERATED, **LEGACY}),
            "how": "Debian libtorch-dev headers; ATen/hip, ATen/native/hip, c10/hip made by torch.utils.hipify "
                   "of the same version and torch/ hipified in place, as PyTorch's tools/amd_build does for a ROCm build"}
    (out / "version.json").write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    return data


def main(argv: list[str] | None = None) -> int:
    """CLI entry (image build). Exit 0 on success, 2 when an input folder is missing."""
    p = argparse.ArgumentParser(prog="python3 -m migrate.torch_headers", description=__doc__.split("\n")[0])
    p.add_argument("--include", type=Path, required=True, help="installed PyTorch headers (ATen/, c10/, torch/)")
    p.add_argument("--hipify", type=Path, required=True, help="folder holding torch.utils.hipify as hipify/")
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--version", default="", help="PyTorch version of the headers, for version.json")
    args = p.parse_args(argv)
    for flag, folder in (("--include", args.include), ("--hipify", args.hipify / "hipify")):
        if not folder.is_dir():
            print(f"torch_headers: {flag} {folder}: no such folder", file=sys.stderr)
            return 2
    try:
        data = build(args.include, args.hipify, args.out, args.version)
    except FileNotFoundError as exc:
        print(f"torch_headers: {exc}", file=sys.stderr)
        return 2
    print(f"torch_headers: {data['hipified_files']} HIP headers made; {os.path.join(args.out, 'include')}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
