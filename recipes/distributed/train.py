"""DDP or FSDP training job with atomic, checksummed checkpoints and exact resume (run under torchrun).

Every rank trains an MLP regressor on synthetic data that is a pure function of (seed, step, rank):
the batch of step s on rank r comes from a torch.Generator seeded with seed*1_000_003 + s*1009 + r, so a
resumed run sees the same batches as an uninterrupted one and, with model and optimizer state restored
from the checkpoint, ends with bitwise-equal weights on CPU (gloo's ring all-reduce sums in a fixed
order for a fixed world size). Checkpoints hold full (unsharded) state dicts gathered to rank 0
(torch.distributed.checkpoint.state_dict, full_state_dict=True), so DDP and FSDP share one format.

    python -m recipes.distributed.launch ... -- train --steps 200 --ckpt-dir /ckpt --ckpt-every 20
    python -m recipes.distributed.launch ... -- train ... --resume auto

Prints one JSON line per logged step and, at the end, {"final_step": N, "weights_sha256": ...}.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import os
import sys
import time
from pathlib import Path

import torch
import torch.distributed as dist
from torch.distributed.checkpoint.state_dict import StateDictOptions, get_state_dict, set_state_dict

from . import checkpoint as ckpt
from . import runtime

SHAPE_KEYS = ("parallel", "hidden", "layers", "features", "batch", "lr", "seed")


def parse_args(argv: list[str]) -> argparse.Namespace:
    """Command line of the job (see module doc). Exits 2 with argparse's message on bad flags."""
    p = argparse.ArgumentParser(prog="train", description=__doc__.splitlines()[0])
    p.add_argument("--parallel", choices=("ddp", "fsdp"), default="ddp")
    p.add_argument("--steps", type=int, default=200, help="total optimizer steps")
    p.add_argument("--hidden", type=int, default=512)
    p.add_argument("--layers", type=int, default=3)
    p.add_argument("--features", type=int, default=64)
    p.add_argument("--batch", type=int, default=64, help="samples per rank per step")
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--seed", type=int, default=1234)
    p.add_argument("--ckpt-dir", type=Path, required=True, help="directory every rank can read; rank 0 writes")
    p.add_argument("--ckpt-every", type=int, default=20, help="checkpoint every N steps (and at the end)")
    p.add_argument("--resume", default=None, help="'auto' (newest checkpoint, must verify) or a step-N directory")
    p.add_argument("--log-every", type=int, default=10)
    a = p.parse_args(argv)
    for flag in ("steps", "hidden", "layers", "features", "batch", "ckpt_every", "log_every"):
        if getattr(a, flag) < 1:
            p.error(f"--{flag.replace('_', '-')} must be >= 1")
    return a


def build_model(a: argparse.Namespace) -> torch.nn.Module:
    """MLP features -> hidden (x layers, ReLU) -> 1, initialised from a.seed."""
    torch.manual_seed(a.seed)
    mods, width = [], a.features
    for _ in range(a.layers):
        mods += [torch.nn.Linear(width, a.hidden), torch.nn.ReLU()]
        width = a.hidden
    mods.append(torch.nn.Linear(width, 1))
    return torch.nn.Sequential(*mods)


def batch(a: argparse.Namespace, step: int, rank: int, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    """Inputs (batch, features) and targets (batch, 1) of `step` on `rank`: a fixed nonlinear teacher."""
    g = torch.Generator().manual_seed(a.seed * 1_000_003 + step * 1009 + rank)
    x = torch.randn(a.batch, a.features, generator=g)
    t = torch.Generator().manual_seed(a.seed)
    w = torch.randn(a.features, 1, generator=t) / a.features ** 0.5
    y = torch.sin(x @ w) + 0.1 * (x[:, :1] ** 2)
    return x.to(device), y.to(device)


def weights_sha256(state: dict[str, torch.Tensor]) -> str:
    """SHA-256 over the raw bytes of every tensor in `state`, keys sorted: equal iff bitwise equal."""
    h = hashlib.sha256()
    for k in sorted(state):
        h.update(k.encode())
        h.update(state[k].detach().cpu().contiguous().view(torch.uint8).numpy().tobytes())
    return h.hexdigest()


def _to_bytes(obj) -> bytes:
    buf = io.BytesIO()
    torch.save(obj, buf)
    return buf.getvalue()


def _meta(a: argparse.Namespace, world: int) -> dict:
    return {"world_size": world, **{k: getattr(a, k) for k in SHAPE_KEYS}}


def save(a, d: runtime.Dist, model, optim, step: int) -> tuple[Path | None, str]:
    """Gather full state dicts to rank 0, which commits checkpoint `step`.

    Returns (checkpoint path, weights SHA-256); the digest is '' on ranks other than 0.
    """
    opts = StateDictOptions(full_state_dict=True, cpu_offload=True)
    msd, osd = get_state_dict(model, optim, options=opts)
    digest = ""
    if d.rank == 0:
        digest = weights_sha256(msd)
        try:
            ckpt.save(a.ckpt_dir, step, {"model.pt": _to_bytes(msd), "optim.pt": _to_bytes(osd)},
                      meta={**_meta(a, d.world_size), "weights_sha256": digest})
        except OSError as exc:
            runtime.fail(f"rank 0: writing checkpoint step {step} to --ckpt-dir {a.ckpt_dir} failed "
                         f"({exc.strerror or exc}); {runtime.user_advice()}", code=2)
    dist.barrier()
    return Path(a.ckpt_dir) / ckpt.step_dir_name(step), digest


def pick_resume(a, d: runtime.Dist) -> ckpt.Checkpoint | None:
    """The checkpoint to resume from, verified on every rank, or None for a fresh start.

    Exits through runtime.fail (one line) when --resume is given but nothing valid is there, when the
    checkpoint's shape/world metadata differ from this run, or when --resume is absent but --ckpt-dir
    already holds checkpoints (never overwrite or silently restart).
    """
    if a.resume is None:
        steps = ckpt.committed_steps(a.ckpt_dir)
        if steps:
            runtime.fail(f"--ckpt-dir {a.ckpt_dir} already holds checkpoints (newest step {steps[-1]}): "
                         f"pass --resume auto to continue, or use an empty directory", code=2)
        return None
    try:
        c = ckpt.latest(a.ckpt_dir) if a.resume == "auto" else ckpt.verify(Path(a.resume))
    except ckpt.CheckpointError as exc:
        runtime.fail(f"--resume {a.resume}: {exc}", code=2)
    want = _meta(a, d.world_size)
    diff = {k: (c.meta.get(k), v) for k, v in want.items() if c.meta.get(k) != v}
    if diff:
        detail = ", ".join(f"{k}: checkpoint {old!r} vs run {new!r}" for k, (old, new) in diff.items())
        runtime.fail(f"--resume {c.path}: written by a different job ({detail})", code=2)
    return c


def main(argv: list[str]) -> int:
    """Run the job; returns 0, or exits through runtime.fail with a one-line reason."""
    a = parse_args(argv)
    # deterministic kernels so that a resumed GPU run can match bitwise too (on CUDA, cuBLAS needs a
    # fixed workspace for that: CUBLAS_WORKSPACE_CONFIG, PyTorch docs "Reproducibility")
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    torch.use_deterministic_algorithms(True)
    if int(os.environ.get("RANK", "0")) == 0:  # rank 0 writes the checkpoints
        runtime.require_writable("--ckpt-dir", Path(a.ckpt_dir))
    d = runtime.init()
    model = build_model(a).to(d.device)
    if a.parallel == "ddp":
        model = torch.nn.parallel.DistributedDataParallel(model, device_ids=[d.local_rank] if d.backend == "nccl" else None)
    else:
        from torch.distributed.fsdp import fully_shard
        for m in model:
            if isinstance(m, torch.nn.Linear):
                fully_shard(m)
        fully_shard(model)
    optim = torch.optim.AdamW(model.parameters(), lr=a.lr)
    start = 0
    resume = pick_resume(a, d)
    if resume is not None:
        msd = torch.load(resume.file("model.pt"), map_location="cpu", weights_only=True)
        osd = torch.load(resume.file("optim.pt"), map_location="cpu", weights_only=True)
        set_state_dict(model, optim, model_state_dict=msd, optim_state_dict=osd,
                       options=StateDictOptions(full_state_dict=True))
        start = resume.step
        if d.rank == 0:
            print(json.dumps({"resumed_from": str(resume.path), "step": start}), flush=True)
    last_ckpt, step, t0 = (resume.path if resume else None), start, time.perf_counter()
    digest = resume.meta.get("weights_sha256", "") if resume else ""
    try:
        for step in range(start + 1, a.steps + 1):
            x, y = batch(a, step, d.rank, d.device)
            loss = torch.nn.functional.mse_loss(model(x), y)
            optim.zero_grad(set_to_none=True)
            loss.backward()
            optim.step()
            if step % a.log_every == 0 and d.rank == 0:
                dt = (time.perf_counter() - t0) / (step - start)
                print(json.dumps({"step": step, "loss": round(loss.item(), 6), "s_per_step": round(dt, 5)}), flush=True)
            if step % a.ckpt_every == 0 or step == a.steps:
                last_ckpt, digest = save(a, d, model, optim, step)
        if d.rank == 0:
            print(json.dumps({"final_step": a.steps, "weights_sha256": digest,
                              "s_per_step": round((time.perf_counter() - t0) / max(1, a.steps - start), 5)}), flush=True)
        dist.barrier()
        dist.destroy_process_group()
    except (RuntimeError, dist.DistBackendError) as exc:
        first = (str(exc).strip().splitlines() or [exc.__class__.__name__])[0]
        where = f"last checkpoint {last_ckpt}" if last_ckpt else "no checkpoint yet"
        runtime.fail(f"rank {d.rank}: collective failed at step {step} (a peer died or the {d.timeout_s:g} s "
                     f"timeout passed): {first[:300]}; {where}; restart every node with --resume auto")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
