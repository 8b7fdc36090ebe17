"""All-reduce bandwidth test reporting algbw and busbw as nccl-tests / rccl-tests define them (under torchrun).

For each message size (bytes, geometric from --min-bytes to --max-bytes by --factor) every rank first
checks one all-reduce for correctness (rank r contributes r+1, every element must equal n(n+1)/2), then
times --warmup untimed and k timed in-place all-reduces of a float32 tensor; k is --iters, lowered for
large messages so that a size takes about --budget-s seconds (all ranks agree on k through an all-reduce
MAX). The time reported is the slowest rank's mean per call. algbw = size / time, busbw = algbw *
2(n-1)/n (recipes/distributed/bandwidth.py gives the source). With --p2p-copy and two GPUs visible,
rank 0 also times a device-to-device copy cuda:0 -> cuda:1 of the largest size.

    python -m recipes.distributed.launch --nproc-per-node 2 -- allreduce_bw --min-bytes 8 --max-bytes 1G
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import torch
import torch.distributed as dist

from . import bandwidth, runtime


def parse_args(argv: list[str]) -> argparse.Namespace:
    """Flags of the test; byte counts accept K/M/G suffixes. Exits 2 with a one-line message on bad input."""
    p = argparse.ArgumentParser(prog="allreduce_bw", description=__doc__.splitlines()[0])
    p.add_argument("--min-bytes", default="8")
    p.add_argument("--max-bytes", default="1G")
    p.add_argument("--factor", type=int, default=2)
    p.add_argument("--iters", type=int, default=20)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--budget-s", type=float, default=2.0, help="target timed seconds per size")
    p.add_argument("--json", type=Path, default=None, help="write the results (rank 0) to this file")
    p.add_argument("--p2p-copy", action="store_true", help="also time a cuda:0 -> cuda:1 copy (rank 0)")
    a = p.parse_args(argv)
    try:
        lo = bandwidth.parse_size(a.min_bytes, "--min-bytes")
        hi = bandwidth.parse_size(a.max_bytes, "--max-bytes")
        a.sizes = [s for s in bandwidth.message_sizes(lo, hi, a.factor)]
    except ValueError as exc:
        p.error(str(exc))
    if any(s % 4 for s in a.sizes):
        p.error("message sizes must be multiples of 4 bytes (float32 elements)")
    if a.iters < 1 or a.warmup < 0 or a.budget_s <= 0:
        p.error("--iters >= 1, --warmup >= 0 and --budget-s > 0 are required")
    return a


def _sync(d: runtime.Dist) -> None:
    if d.device.type == "cuda":
        torch.cuda.synchronize(d.device)


def measure(d: runtime.Dist, size: int, a: argparse.Namespace) -> dict:
    """Check and time all-reduce of `size` bytes; returns one result row (seconds per call, GB/s)."""
    n = size // 4
    buf = torch.full((n,), float(d.rank + 1), dtype=torch.float32, device=d.device)
    dist.all_reduce(buf)
    wrong = int((buf != d.world_size * (d.world_size + 1) / 2).sum().item())
    for _ in range(a.warmup):
        dist.all_reduce(buf)
    _sync(d)
    t = time.perf_counter()
    dist.all_reduce(buf)
    _sync(d)
    probe = torch.tensor([time.perf_counter() - t], dtype=torch.float64, device=d.device)
    dist.all_reduce(probe, op=dist.ReduceOp.MAX)
    iters = max(1, min(a.iters, int(a.budget_s / max(probe.item(), 1e-9))))
    dist.barrier()
    t = time.perf_counter()
    for _ in range(iters):
        dist.all_reduce(buf)
    _sync(d)
    per = torch.tensor([(time.perf_counter() - t) / iters], dtype=torch.float64, device=d.device)
    dist.all_reduce(per, op=dist.ReduceOp.MAX)
    sec = per.item()
    return {"bytes": size, "count": n, "type": "float", "redop": "sum", "iters": iters, "time_us": sec * 1e6,
            "algbw_gbps": bandwidth.algbw_gbps(size, sec),
            "busbw_gbps": bandwidth.busbw_gbps(size, sec, d.world_size), "wrong": wrong}


def p2p_copy_gbps(size: int, iters: int = 10) -> float:
    """GB/s of copying `size` bytes from cuda:0 to cuda:1 (mean of `iters`). Raises RuntimeError with < 2 GPUs."""
    if torch.cuda.device_count() < 2:
        raise RuntimeError(f"--p2p-copy needs 2 visible GPUs, found {torch.cuda.device_count()}")
    src = torch.empty(size, dtype=torch.uint8, device="cuda:0")
    dst = torch.empty(size, dtype=torch.uint8, device="cuda:1")
    dst.copy_(src)
    torch.cuda.synchronize("cuda:0")
    torch.cuda.synchronize("cuda:1")
    t = time.perf_counter()
    for _ in range(iters):
        dst.copy_(src)
    torch.cuda.synchronize("cuda:0")
    torch.cuda.synchronize("cuda:1")
    return bandwidth.algbw_gbps(size, (time.perf_counter() - t) / iters)


def main(argv: list[str]) -> int:
    """Run the sweep; rank 0 prints an nccl-tests style table and optionally writes JSON."""
    a = parse_args(argv)
    if a.json and int(os.environ.get("RANK", "0")) == 0:
        runtime.require_writable("--json", a.json, folder=False)
    d = runtime.init()
    dev_name = torch.cuda.get_device_name(d.device) if d.device.type == "cuda" else "cpu"
    if d.rank == 0:
        print(f"# all_reduce sum float32, backend {d.backend}, world size {d.world_size}, device {dev_name}", flush=True)
        print(bandwidth.HEADER, flush=True)
    rows = []
    try:
        for size in a.sizes:
            row = measure(d, size, a)
            rows.append(row)
            if d.rank == 0:
                print(bandwidth.format_row(size, 4, "float", row["time_us"] / 1e6, d.world_size)
                      + (f"  WRONG={row['wrong']}" if row["wrong"] else ""), flush=True)
    except (RuntimeError, dist.DistBackendError) as exc:
        runtime.fail(f"rank {d.rank}: all_reduce failed: {(str(exc).strip().splitlines() or [''])[0][:300]}")
    result = {"backend": d.backend, "world_size": d.world_size, "device": dev_name, "rows": rows}
    if a.p2p_copy and d.rank == 0:
        result["p2p_copy_gbps"] = p2p_copy_gbps(a.sizes[-1])
        print(f"# p2p copy cuda:0 -> cuda:1, {a.sizes[-1]} B: {result['p2p_copy_gbps']:.3f} GB/s", flush=True)
    if d.rank == 0 and a.json:
        a.json.write_text(json.dumps(result, indent=1), encoding="utf-8")
    dist.barrier()
    dist.destroy_process_group()
    return 1 if any(r["wrong"] for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
