"""CUDA's texture hardware against migrate's software textures (recipes/migrate/migrate/cuda_texture_soft.h).

bench/texture_harness.cpp enumerates 216 texture configurations: 1D / 2D / 3D CUDA arrays of float, half,
8- and 16-bit normalized and 8- and 32-bit integer texels; point and linear filtering; wrap, clamp, mirror
and border addressing; normalized and texel coordinates; 64 random coordinates each (a fixed splitmix64
sequence, so every build sees the same inputs). On a machine with nvcc and an NVIDIA GPU:

    python3 bench/texture_reference.py --out tests/images/sources/texture_reference.json

builds the harness with nvcc, fetches each configuration through the hardware and through the header's
functions on the same GPU, prints how far they are apart per configuration class, and writes the
hardware's fetches. It then builds bench/texture_api_check.cu, which runs the header's arrays, copies and
texture objects (its HIP code under CUDA's names) beside CUDA's own, and prints its "api" lines; the exit
status is that program's (1: a fetch or copy differs). tests/images/test_texture_soft.py builds the harness for the host and compares the
header's host results with that file (compare() below).
"""

from __future__ import annotations

import argparse
import json
import struct
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HARNESS = ROOT / "bench" / "texture_harness.cpp"
API_CHECK = ROOT / "bench" / "texture_api_check.cu"
HEADER_DIR = ROOT / "recipes" / "migrate" / "migrate"
# the span of texel values per format of texture_harness.cpp (floats in [-4, 4], halves within +-2^7,
# normalized 8-bit [0, 1] and 16-bit [-1, 1]): linear fetches may differ by two steps of the filter's
# 8-bit weights over it, as NVIDIA's own rounding of corner weights and results is matched only in part
SPAN = {"f32x1": 8.0, "f32x4": 8.0, "f16x1": 256.0, "u8x4n": 1.0, "s16x2n": 2.0}
LINEAR_STEPS = 2 / 256


def parse(output: str, kind: str) -> dict[str, list[int]]:
    """The harness's `kind` lines ("hw" or "soft"): configuration name -> 4 x 64 values (32-bit words)."""
    rows: dict[str, list[int]] = {}
    for line in output.splitlines():
        word, name, *values = line.split()
        if word == kind:
            rows[name] = [int(v, 16) for v in values]
    return rows


def _float(bits: int) -> float:
    return float(struct.unpack("<f", struct.pack("<I", bits))[0])


def compare(name: str, hardware: list[int], software: list[int]) -> tuple[int, float]:
    """(fetches that differ, widest gap as a fraction of the format's SPAN) of one configuration: integer
    results and point-sampled floats must match bit for bit, linear-filtered floats within LINEAR_STEPS of
    the span; NaN matches NaN. Configuration names are texture_harness.cpp's (dims-format-filter-...)."""
    fmt, linear = name.split("-")[1], "-linear-" in name
    wrong, widest = 0, 0.0
    for i in range(0, len(hardware), 4):
        bad = False
        for h, s in zip(hardware[i:i + 4], software[i:i + 4]):
            if h == s:
                continue
            if not linear:
                bad = True
                continue
            a, b = _float(h), _float(s)
            if a != a and b != b:
                continue
            gap = abs(a - b) / SPAN[fmt]
            widest = max(widest, gap)
            bad = bad or not gap <= LINEAR_STEPS
        wrong += bad
    return wrong, widest


def summary(hardware: dict[str, list[int]], software: dict[str, list[int]]) -> list[str]:
    """One line per format and filter: fetches, fetches outside compare()'s bounds, fetches not equal bit
    for bit, the widest gap (fraction of the span)."""
    classes: dict[str, list[float]] = {}
    for name, values in hardware.items():
        wrong, widest = compare(name, values, software[name])
        _dims, fmt, filt, *_rest = name.split("-")
        total = classes.setdefault(f"{fmt} {filt}", [0, 0, 0, 0.0])
        total[0] += len(values) // 4
        total[1] += wrong
        total[2] += sum(values[i:i + 4] != software[name][i:i + 4] for i in range(0, len(values), 4))
        total[3] = max(total[3], widest)
    return [f"{key:<14} {int(n):>5} fetches {int(w):>4} out of bounds {int(d):>5} not bit-equal  widest gap {g:.2%} of span"
            for key, (n, w, d, g) in sorted(classes.items())]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, required=True, help="JSON file to write")
    parser.add_argument("--arch", default="sm_90", help="nvcc -arch (default sm_90)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        exe = Path(tmp) / "texture_harness"
        subprocess.run(["nvcc", "-x", "cu", f"-arch={args.arch}", "-O2", "-fmad=false", "-std=c++17", "-I", str(HEADER_DIR),
                        str(HARNESS), "-o", str(exe)], check=True)
        output = subprocess.run([str(exe)], check=True, capture_output=True, text=True).stdout
        api_exe = Path(tmp) / "texture_api_check"
        subprocess.run(["nvcc", f"-arch={args.arch}", "-O2", "-fmad=false", "-std=c++17", "-I", str(HEADER_DIR), str(API_CHECK),
                        "-o", str(api_exe)], check=True)
        api = subprocess.run([str(api_exe)], capture_output=True, text=True)
    hardware, software = parse(output, "hw"), parse(output, "soft")
    gpu = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                         capture_output=True, text=True).stdout.strip()
    nvcc = subprocess.run(["nvcc", "--version"], capture_output=True, text=True).stdout.strip().splitlines()[-1]
    for line in summary(hardware, software):
        print(line)
    result = {"gpu": gpu, "nvcc": nvcc, "arch": args.arch,
              "hardware": {name: [f"{v:x}" for v in values] for name, values in hardware.items()}}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, separators=(",", ":")) + "\n", encoding="utf-8")
    print(f"texture_reference: {len(hardware)} configurations on {gpu} -> {args.out}")
    print(api.stdout + api.stderr, end="")
    return api.returncode


if __name__ == "__main__":
    sys.exit(main())
