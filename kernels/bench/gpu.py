"""Correctness and speed of the TileLang kernels against torch on the GPU at hand.

One call does everything: measures the device's copy bandwidth, then for each
case compiles the kernel's autotune space (in parallel), checks each config on
fresh random inputs against a float64 reference, times the correct ones and
torch's own operator (medians of ``triton.testing.do_bench``, which flushes L2
between runs), and keeps the fastest. Results go to a JSON file; a table is
printed last.

Units: times in milliseconds (median), throughput in TFLOP/s, bandwidth in GB/s
(10^9 bytes/s), errors as ``||out - ref||_F / ||ref||_F``.

Run: ``python -m kernels.bench.gpu --out results.json`` (``--help`` for options).
"""

from __future__ import annotations

import argparse
import json
import platform
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict
from pathlib import Path

from kernels import api
from kernels.configs import autotune_space, default_config
from kernels.problems import FlashAttentionProblem, GemmProblem, RmsNormProblem
from kernels.targets import TARGETS

# Relative Frobenius error bounds per output dtype (METHOD: fp16 output rounding
# is 2^-11, bf16 2^-8; a correct kernel sits well under these, a wrong one far above).
ERROR_BOUND = {"float16": 4e-3, "bfloat16": 2e-2}

GOALS = {"gemm": 0.95, "flash_attention": 1.0, "rmsnorm": 0.85}


def detect_target() -> str:
    """Target name of GPU 0 as torch sees it (``gfx942``, ``sm_90``, ...).

    Raises:
        RuntimeError: no GPU, or one whose arch has no tile table here.
    """
    import torch

    if not torch.cuda.is_available():
        raise RuntimeError("no GPU visible to torch (torch.cuda.is_available() is False)")
    props = torch.cuda.get_device_properties(0)
    if getattr(torch.version, "hip", None):
        name = props.gcnArchName.split(":")[0]
    else:
        name = f"sm_{props.major}{props.minor}"
    if name not in TARGETS:
        raise RuntimeError(f"GPU arch {name} has no tile table; known: {', '.join(TARGETS)}")
    return name


def rel_error(out, ref) -> float:
    """``||out - ref||_F / ||ref||_F`` in float64; NaN anywhere gives inf."""
    import torch

    diff = out.double() - ref
    if not torch.isfinite(out).all():
        return float("inf")
    return (diff.norm() / ref.norm()).item()


def median_ms(fn) -> float:
    """Median time of ``fn()`` in ms (triton's do_bench: CUDA events, L2 flushed)."""
    from triton.testing import do_bench

    return float(do_bench(fn, warmup=25, rep=100, return_mode="median"))


def copy_bandwidth_gbs(nbytes: int = 4 << 30) -> float:
    """Device-to-device copy bandwidth in GB/s of an ``nbytes`` buffer, counting bytes
    read plus written (METHOD.md's ceiling for memory-bound kernels)."""
    import torch

    src = torch.empty(nbytes // 2, dtype=torch.float16, device="cuda").normal_()
    dst = torch.empty_like(src)
    ms = median_ms(lambda: dst.copy_(src))
    return 2 * nbytes / (ms * 1e-3) / 1e9


def _reference(kernel: str, problem, tensors):
    """float64 reference output (attention: batch 0, first heads only) and the
    matching slice function for the kernel's output."""
    from kernels import flash_attention, gemm, rmsnorm

    if kernel == "gemm":
        a, b, _ = tensors
        return gemm.reference(a, b), lambda out: out
    if kernel == "flash_attention":
        q, k, v, _ = tensors
        heads = 1 if problem.seq_len > 8192 else 2  # float64 scores of a few heads only
        sl = (slice(0, 1), slice(0, heads))
        return flash_attention.reference(q[sl], k[sl], v[sl], problem.causal), lambda out: out[sl]
    x, w, _ = tensors
    return rmsnorm.reference(x, w, problem.eps), lambda out: out


def _torch_call(kernel: str, problem, tensors):
    from kernels import flash_attention, gemm, rmsnorm

    if kernel == "gemm":
        a, b, _ = tensors
        return lambda: gemm.torch_baseline(a, b)
    if kernel == "flash_attention":
        q, k, v, _ = tensors
        return lambda: flash_attention.torch_baseline(q, k, v, problem.causal)
    x, w, _ = tensors
    return lambda: rmsnorm.torch_baseline(x, w, problem.eps)


def _check(kernel: str, problem, fn, seed: int):
    """Run ``fn`` once on fresh inputs into a NaN-poisoned output; return (error, tensors).

    Any element left unwritten stays NaN and makes the error infinite.
    """
    import torch

    tensors = api.kernel_module(kernel).make_inputs(problem, "cuda", seed)
    fn(*tensors)
    torch.cuda.synchronize()
    out = tensors[-1]
    if not torch.isfinite(out).all():
        return float("inf"), tensors
    ref, view = _reference(kernel, problem, tensors)
    return rel_error(view(out), ref), tensors


def _compile_all(kernel, target, problem, indexed_configs, workers):
    def one(item):
        idx, cfg = item
        t0 = time.time()
        try:
            return idx, cfg, api.compile(kernel, target, problem, cfg), None, time.time() - t0
        except Exception as exc:  # a config the compiler rejects is reported, not fatal
            text = str(exc)
            brief = text if len(text) < 1200 else text[:600] + " ... " + text[-600:]
            return idx, cfg, None, f"{type(exc).__name__}: {brief}", time.time() - t0

    with ThreadPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(one, indexed_configs))


def _configs(kernel: str, target: str, tune: bool) -> list:
    return autotune_space(kernel, target) if tune else [default_config(kernel, target)]


def child_case(case: int, target: str, *, tune: bool, workers: int, seed: int, skip: set[int], lines: Path) -> None:
    """Child process body: compile, check and time the configs of case ``case`` not
    in ``skip``, then time torch; one JSON line per event appended to ``lines``.

    A config that kills the process (device-side assert, illegal address) leaves a
    ``start`` line without a result; the parent records it and starts a new child.
    """
    import torch

    kernel, problem = all_cases()[case]
    todo = [(i, c) for i, c in enumerate(_configs(kernel, target, tune)) if i not in skip]

    def emit(obj):
        with lines.open("a") as fh:
            fh.write(json.dumps(obj) + "\n")

    for idx, cfg, fn, err, secs in _compile_all(kernel, target, problem, todo, workers):
        rec = {"config": asdict(cfg), "compile_s": round(secs, 1)}
        if fn is None:
            rec["compile_error"] = err
            emit({"idx": idx, "rec": rec})
            continue
        emit({"idx": idx, "start": True})
        error, tensors = _check(kernel, problem, fn, seed + idx)
        rec["rel_error"] = error
        rec["correct"] = error <= ERROR_BOUND[problem.dtype]
        if rec["correct"]:
            rec["ms"] = median_ms(lambda fn=fn, t=tensors: fn(*t))
        emit({"idx": idx, "rec": rec})
        del tensors
    tensors = api.kernel_module(kernel).make_inputs(problem, "cuda", seed + 1000)
    call = _torch_call(kernel, problem, tensors)
    ref, view = _reference(kernel, problem, tensors)
    torch_err = rel_error(view(call()), ref)
    del ref
    torch.cuda.empty_cache()
    line = {"torch_ms": median_ms(call), "torch_rel_error": torch_err}
    if kernel == "rmsnorm":  # what a plain copy of the same bytes reaches (small sizes pay launch/tail)
        line["copy_same_size_gbs"] = copy_bandwidth_gbs(problem.tokens * problem.hidden * 2)
    emit(line)


def run_case(case: int, target: str, *, tune: bool, workers: int, seed: int, timeout_s: float) -> dict:
    """Run case ``case`` in child processes until every config has a record; returns
    the JSON record (problem, every tried config with its compile error, crash, or
    error and time, the best correct config, torch's time, and the ratios)."""
    kernel, problem = all_cases()[case]
    n = len(_configs(kernel, target, tune))
    records: dict[int, dict] = {}
    torch_line: dict = {}
    deadline = time.time() + timeout_s
    with tempfile.TemporaryDirectory() as tmp:
        lines = Path(tmp) / "lines.jsonl"
        while (len(records) < n or not torch_line) and time.time() < deadline:
            lines.write_text("")
            cmd = [sys.executable, "-m", "kernels.bench.gpu", "--child", str(case), "--lines", str(lines),
                   "--skip", ",".join(map(str, records)), "--seed", str(seed), "--workers", str(workers)]
            if not tune:
                cmd.append("--no-tune")
            try:
                proc = subprocess.run(cmd, capture_output=True, text=True, timeout=max(deadline - time.time(), 1))
                rc, tail = proc.returncode, (proc.stderr or "")[-600:]
            except subprocess.TimeoutExpired:
                rc, tail = -1, "timed out"
            started = None
            for raw in lines.read_text().splitlines():
                item = json.loads(raw)
                if "rec" in item:
                    records[item["idx"]] = item["rec"]
                    started = None
                elif "start" in item:
                    started = item["idx"]
                else:
                    torch_line = item
            if rc != 0:
                if started is None:  # died outside a config run: give up on this case
                    torch_line = torch_line or {"torch_error": f"exit {rc}: {tail}"}
                    break
                cfg = _configs(kernel, target, tune)[started]
                records[started] = {"config": asdict(cfg), "run_error": f"process died (exit {rc}): {tail}"}
    tried = [records[i] for i in sorted(records)]
    out = {"kernel": kernel, "target": target, "problem": asdict(problem), "tried": tried, **torch_line}
    good = [t for t in tried if t.get("correct")]
    if good and "torch_ms" in out:
        best = min(good, key=lambda t: t["ms"])
        out["best"] = best
        if kernel == "rmsnorm":
            out["tilelang_gbs"] = problem.bytes_moved() / (best["ms"] * 1e-3) / 1e9
            out["torch_gbs"] = problem.bytes_moved() / (out["torch_ms"] * 1e-3) / 1e9
        else:
            out["tilelang_tflops"] = problem.flops() / (best["ms"] * 1e-3) / 1e12
            out["torch_tflops"] = problem.flops() / (out["torch_ms"] * 1e-3) / 1e12
        out["speedup_vs_torch"] = out["torch_ms"] / best["ms"]
    return out


def all_cases() -> list[tuple[str, object]]:
    """The table of issue 7: GEMM 4096^3 / 8192^3 fp16+bf16; attention B8 H32 D128
    at 1k/4k/16k causal and not (fp16), plus head_dim 64 bf16; RMSNorm bf16
    4k/16k/64k tokens x 4096/8192 hidden. Order is fixed: indices name cases."""
    cases: list[tuple[str, object]] = []
    for size in (4096, 8192):
        for dt in ("float16", "bfloat16"):
            cases.append(("gemm", GemmProblem(size, size, size, dt)))
    for seq in (1024, 4096, 16384):
        for causal in (False, True):
            cases.append(("flash_attention", FlashAttentionProblem(8, 32, seq, 128, causal, "float16")))
    cases.append(("flash_attention", FlashAttentionProblem(8, 32, 4096, 64, True, "bfloat16")))
    cases.append(("flash_attention", FlashAttentionProblem(8, 32, 4096, 128, False, "bfloat16")))
    for tokens in (4096, 16384, 65536):
        for hidden in (4096, 8192):
            cases.append(("rmsnorm", RmsNormProblem(tokens, hidden, "bfloat16")))
    return cases


def quick_case(kernel: str, problem) -> bool:
    """The smallest size of each kernel (``--quick``)."""
    size = {"gemm": "m", "flash_attention": "seq_len", "rmsnorm": "tokens"}[kernel]
    return getattr(problem, size) in (4096, 1024) and getattr(problem, "head_dim", 128) == 128


def _summary(records: list[dict], copy_gbs: float) -> list[str]:
    lines = [f"copy bandwidth: {copy_gbs:.0f} GB/s"]
    for r in records:
        p = r["problem"]
        shape = ",".join(f"{k}={v}" for k, v in p.items() if k not in ("eps",))
        if "best" not in r:
            errs = [t.get("compile_error") or t.get("run_error") or f"err={t.get('rel_error')}" for t in r["tried"]]
            why = errs[0][:300] if errs else r.get("torch_error", "no config ran")
            lines.append(f"{r['kernel']:<16}{shape:<60} NO CORRECT CONFIG: {why}")
            continue
        if r["kernel"] == "rmsnorm":
            frac = r["tilelang_gbs"] / copy_gbs
            same = r.get("copy_same_size_gbs", float("nan"))
            perf = (f"{r['tilelang_gbs']:7.0f} GB/s ({frac:.2f} of copy, {r['tilelang_gbs'] / same:.2f} of "
                    f"same-size copy) torch {r['torch_gbs']:6.0f} GB/s")
        else:
            perf = f"{r['tilelang_tflops']:6.1f} TFLOP/s torch {r['torch_tflops']:6.1f}"
        lines.append(
            f"{r['kernel']:<16}{shape:<60} {r['best']['ms']:8.3f} ms {perf} "
            f"x{r['speedup_vs_torch']:.3f} err {r['best']['rel_error']:.1e}"
        )
    return lines


def main(argv: list[str] | None = None) -> int:
    """CLI: run the table, write JSON, print the summary. Returns the exit status."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, help="JSON file to write (required unless --child)")
    ap.add_argument("--quick", action="store_true", help="smallest size of each kernel only")
    ap.add_argument("--no-tune", action="store_true", help="default config only")
    ap.add_argument("--kernels", default="gemm,flash_attention,rmsnorm", help="comma list")
    ap.add_argument("--cases", default="", help="comma list of case indices (default: all)")
    ap.add_argument("--workers", type=int, default=8, help="parallel compiles")
    ap.add_argument("--seed", type=int, default=int(time.time()) % 100000, help="first input seed")
    ap.add_argument("--budget-s", type=float, default=3600, help="stop starting cases after this")
    ap.add_argument("--child", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--lines", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--skip", default="", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    try:
        target = detect_target()
        import tilelang  # noqa: F401  (fail here, in one line, when it is missing)
    except (ImportError, RuntimeError) as exc:
        print(f"kernels bench: error: {exc}", file=sys.stderr)
        return 2
    if args.child is not None:
        skip = {int(i) for i in args.skip.split(",") if i}
        child_case(args.child, target, tune=not args.no_tune, workers=args.workers, seed=args.seed,
                   skip=skip, lines=args.lines)
        return 0
    if args.out is None:
        ap.error("--out is required")
    wanted = args.kernels.split(",")
    for name in wanted:
        api.kernel_module(name)
    import tilelang
    import torch

    props = torch.cuda.get_device_properties(0)
    copy_gbs = copy_bandwidth_gbs()
    torch.cuda.empty_cache()
    result = {
        "device": props.name,
        "target": target,
        "torch": torch.__version__,
        "tilelang": tilelang.__version__,
        "host": platform.node(),
        "seed": args.seed,
        "copy_gbs": copy_gbs,
        "error_bounds": ERROR_BOUND,
        "goals": GOALS,
        "cases": [],
    }
    chosen = {int(i) for i in args.cases.split(",") if i}
    t_start = time.time()
    for idx, (kernel, problem) in enumerate(all_cases()):
        if kernel not in wanted or (chosen and idx not in chosen) or (args.quick and not quick_case(kernel, problem)):
            continue
        left = args.budget_s - (time.time() - t_start)
        if left < 20:
            print(f"case {idx} skipped: time budget spent", flush=True)
            continue
        t0 = time.time()
        rec = run_case(idx, target, tune=not args.no_tune, workers=args.workers, seed=args.seed, timeout_s=left)
        rec["case"] = idx
        rec["wall_s"] = round(time.time() - t0, 1)
        if kernel == "rmsnorm" and "best" in rec:
            rec["fraction_of_copy"] = rec["tilelang_gbs"] / copy_gbs
        result["cases"].append(rec)
        args.out.write_text(json.dumps(result, indent=1))
        print(_summary([rec], copy_gbs)[-1], f"({rec['wall_s']} s)", flush=True)
    print("\n".join(_summary(result["cases"], copy_gbs)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
