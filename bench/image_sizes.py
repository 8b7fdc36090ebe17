"""Benchmark: arch-pruned vs unpruned base image of one cell (issue 3, arch pruning).

Builds the cell's rendered base Dockerfile a second time with ROCMIG_PRUNE_ARCHS=0 under a bench tag and
compares `docker image inspect` sizes with the pruned image `make images` built. Prints a Markdown row.

    .venv/bin/python bench/image_sizes.py --source debian --rocm 7.2 --arch gfx942 [--no-apt-check-valid-until]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

from buildctl.load import load_project
from buildctl.plan import Selection, make_plan
from buildctl.render import render_cell

ROOT = Path(__file__).resolve().parents[1]


def image_bytes(ref: str) -> int:
    """Uncompressed size of a local image in bytes (docker image inspect .Size)."""
    out = subprocess.run(["docker", "image", "inspect", ref], capture_output=True, text=True, check=True).stdout
    return json.loads(out)[0]["Size"]


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--source", default="debian")
    parser.add_argument("--rocm", default="7.2")
    parser.add_argument("--arch", default="gfx942")
    parser.add_argument("--no-apt-check-valid-until", action="store_true")
    parser.add_argument("--ca-bundle", default="/etc/ssl/certs/ca-certificates.crt")
    args = parser.parse_args()
    project = load_project(ROOT)
    cell = make_plan(project, Selection((args.source,), (args.rocm,), (args.arch,), ("base",))).cells[0]
    folder = render_cell(project, cell, ROOT / "build" / "bench")
    unpruned = f"rocmig-bench/base:{cell.tag}-unpruned"
    command = ["docker", "buildx", "build", "--progress", "plain", "--load", "-t", unpruned,
               "--build-arg", "ROCMIG_PRUNE_ARCHS=0",
               "--build-arg", f"APT_CHECK_VALID_UNTIL={'false' if args.no_apt_check_valid_until else 'true'}"]
    if Path(args.ca_bundle).exists():
        command += ["--secret", f"id=ca_bundle,src={args.ca_bundle}"]
    subprocess.run(command + [str(folder)], check=True, stdout=subprocess.DEVNULL)
    pruned_size, unpruned_size = image_bytes(cell.ref), image_bytes(unpruned)
    print("| cell | unpruned | pruned | pruned / unpruned |")
    print("|---|---|---|---|")
    print(f"| {cell.ref} | {unpruned_size / 1e9:.2f} GB | {pruned_size / 1e9:.2f} GB | "
          f"{pruned_size / unpruned_size:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
