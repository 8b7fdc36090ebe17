#!/usr/bin/env python3
"""Build-time guard of rocmig's therock images (copied to /etc/rocmig/device_guard.py; stdlib only).

  device_guard.py ARCH [--require DIST...] [--path DIR...]
      exit 1 when a device package of another gfx arch is installed (rocm-sdk-device-<gfx>,
      amd-torch-device-<gfx>, amd-torchvision-device-<gfx>, ... : any distribution named *-device-gfx*)
      or a required distribution is missing; exit 0 otherwise. --path: look in these site dirs instead
      of sys.path.

Why: TheRock ships ROCm and PyTorch as an arch-neutral part plus one device package per ISA; an image is
meant to carry only its cell's arch (about 1.1 GB against about 5.5 GB for every arch). A dependency that
pulls another arch's device package, or a multi-arch extra, grows the image silently; a missing one fails
at run time with hipErrorInvalidImage. SGLang's ROCm 10 Dockerfile makes the same two checks.
"""

from __future__ import annotations

import argparse
import importlib.metadata as md
import re
import sys

DEVICE = re.compile(r"^(?P<family>[a-z0-9-]+)-device-(?P<arch>gfx[0-9a-z]+)$")


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def installed(paths: list[str] | None) -> dict[str, str]:
    """{normalized distribution name: version} of the environment (or of the site dirs in paths)."""
    dists = md.distributions(path=paths) if paths else md.distributions()
    return {_norm(d.metadata["Name"] or ""): d.version for d in dists}


def problems(arch: str, required: list[str], dists: dict[str, str]) -> list[str]:
    """Device packages of other archs and missing required distributions, one line each."""
    found = []
    for name, version in sorted(dists.items()):
        m = DEVICE.match(name)
        if m and m.group("arch") != arch.lower():
            found.append(f"{name} {version} is the device code of {m.group('arch')}, not {arch}")
    for name in required:
        if _norm(name) not in dists:
            found.append(f"{name} is not installed (the device code of {arch})")
    return found


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="device_guard.py")
    parser.add_argument("arch")
    parser.add_argument("--require", nargs="*", default=[], metavar="DIST")
    parser.add_argument("--path", nargs="*", default=None, metavar="DIR")
    args = parser.parse_args(argv)
    dists = installed(args.path)
    found = problems(args.arch, args.require, dists)
    for line in found:
        print(f"device_guard: {line}", file=sys.stderr)
    if found:
        print(f"device_guard: this image is for {args.arch} only; see docs/images.md", file=sys.stderr)
        return 1
    devices = sorted(n for n in dists if DEVICE.match(n))
    print(f"device_guard: {args.arch} only ({', '.join(devices) or 'no device packages'})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
