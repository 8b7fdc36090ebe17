#!/usr/bin/env python3
"""Build-time guard of rocmig's torch images (copied to /etc/rocmig/torch_guard.py; stdlib only).

  torch_guard.py constraints OUT NAME... [--refuse NAME]
                                           write NAME==VERSION for the installed NAMEs (a pip constraints file);
                                           each refused NAME gets `NAME<0`, so a requirement on it fails to resolve
  torch_guard.py check [--expect-rocm]     fail (exit 1) when a CUDA wheel, a +cu build or libcudart is present,
                                           or when two distributions install the same `triton` package

Why: PyPI's default torch is a CUDA build that pulls several GB of nvidia-* wheels, and one
`pip install` of a package requiring torch silently replaces a ROCm build with it (docs/design.md; cases C04, B07).
The same holds for Triton: ROCm torch requires its own Triton distribution (`pytorch-triton-rocm`, or
`triton-rocm` from torch 2.10), which installs the `triton` package; a requirement on plain `triton` (xgrammar
declares one) makes pip add PyPI's CUDA build over the same files.
"""

from __future__ import annotations

import argparse
import importlib.metadata as md
import re
import sys
from pathlib import Path

CUDA_DIST = re.compile(r"^nvidia[-_]|^(cupy-cuda|jax-cuda|flashinfer)", re.IGNORECASE)
CUDA_LIB = re.compile(r"^lib(cudart|cublas|cudnn|nvrtc|cuda)\.so")
ROCM_TRITON = ("pytorch-triton-rocm", "triton-rocm")


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _who_requires(name: str) -> list[str]:
    wanted = _norm(name)
    out = []
    for dist in md.distributions():
        for req in dist.requires or []:
            req_name = re.split(r"[ ;<>=!~\[(]", req, maxsplit=1)[0]
            if _norm(req_name) == wanted:
                out.append(f"{dist.metadata['Name']} {dist.version} (requires {req})")
    return out


def problems(expect_rocm: bool) -> list[str]:
    """Every CUDA artefact found: distribution names, +cu versions, libcudart-like files in site dirs."""
    found = []
    for dist in md.distributions():
        name, version = dist.metadata["Name"] or "?", dist.version
        pulled = _who_requires(name)
        via = f"; pulled in by {', '.join(pulled)}" if pulled else ""
        if CUDA_DIST.match(name):
            found.append(f"CUDA wheel {name} {version}{via}")
        elif "+cu" in version:
            found.append(f"CUDA build {name} {version}{via}")
        for f in dist.files or []:
            if CUDA_LIB.match(Path(str(f)).name):
                found.append(f"CUDA library {f} in {name} {version}")
    owners = sorted(f"{d.metadata['Name']} {d.version}" for d in md.distributions()
                    if any(str(f) == "triton/__init__.py" for f in d.files or []))
    if len(owners) > 1:
        found.append(f"two distributions install the triton package: {', '.join(owners)}")
    if expect_rocm:
        try:
            cuda_triton = md.version("triton")
        except md.PackageNotFoundError:
            pass
        else:
            pulled = _who_requires("triton")
            via = f" (pulled in by {', '.join(pulled)})" if pulled else ""
            found.append(f"PyPI's triton {cuda_triton}{via} beside ROCm torch, whose Triton is "
                         f"{' or '.join(ROCM_TRITON)}")
        try:
            torch_version = md.version("torch")
        except md.PackageNotFoundError:
            found.append("torch is not installed")
        else:
            if "+rocm" not in torch_version:
                found.append(f"torch {torch_version} is not a ROCm build (expected +rocm)")
    return found


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="torch_guard.py")
    sub = parser.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("constraints")
    c.add_argument("out")
    c.add_argument("names", nargs="+")
    c.add_argument("--refuse", action="append", default=[], metavar="NAME")
    k = sub.add_parser("check")
    k.add_argument("--expect-rocm", action="store_true")
    args = parser.parse_args(argv)
    if args.cmd == "constraints":
        lines = []
        for name in args.names:
            try:
                lines.append(f"{name}=={md.version(name)}")
            except md.PackageNotFoundError:
                print(f"torch_guard: {name} is not installed; cannot pin it", file=sys.stderr)
                return 1
        refused = [f"{name}<0" for name in args.refuse]
        Path(args.out).write_text("\n".join(lines + refused) + "\n")
        print(f"torch_guard: pinned {', '.join(lines)} in {args.out}")
        return 0
    found = problems(args.expect_rocm)
    for line in found:
        print(f"torch_guard: {line}", file=sys.stderr)
    if found:
        print("torch_guard: a CUDA wheel or build in a ROCm image; see docs/troubleshooting.md", file=sys.stderr)
        return 1
    print("torch_guard: no CUDA wheels, builds or libraries")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
