"""Render a bench result JSON (``kernels.bench.gpu``) as the Markdown table in docs/benchmarks.md.

Run: ``python -m kernels.bench.report RESULT.json`` prints the table.
Pure Python: no torch, no GPU.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

GOAL_TEXT = {
    "gemm": ">= 0.95x torch.matmul",
    "flash_attention": ">= 1.0x SDPA (flash)",
    "rmsnorm": ">= 0.85 of copy bandwidth",
}


def _problem_text(kernel: str, p: dict) -> str:
    dt = {"float16": "fp16", "bfloat16": "bf16"}[p["dtype"]]
    if kernel == "gemm":
        return f"{p['m']}x{p['n']}x{p['k']} {dt}"
    if kernel == "flash_attention":
        causal = "causal" if p["causal"] else "full"
        return f"B{p['batch']} H{p['heads']} S{p['seq_len']} D{p['head_dim']} {causal} {dt}"
    return f"{p['tokens']} x {p['hidden']} {dt}"


def _config_text(cfg: dict) -> str:
    return " ".join(str(v) if not isinstance(v, bool) else ("T" if v else "F") for v in cfg.values())


def goal_met(case: dict, goals: dict) -> bool | None:
    """Whether ``case`` reaches its kernel's goal; None when no correct config ran."""
    if "best" not in case:
        return None
    if case["kernel"] == "rmsnorm":
        return case["fraction_of_copy"] >= goals["rmsnorm"]
    return case["speedup_vs_torch"] >= goals[case["kernel"]]


def render_table(result: dict) -> str:
    """Markdown table of every case in ``result`` (keys as written by ``kernels.bench.gpu``).

    Columns: kernel, problem, TileLang and torch medians (ms) and throughput
    (TFLOP/s, or GB/s for RMSNorm), the ratio the goal is stated in, the goal,
    whether it is met, relative errors against the float64 reference, and the
    winning tile config (field values in ``kernels.configs`` order).
    """
    rows = [
        "| kernel | problem | TileLang ms | TileLang | torch ms | torch | ratio | goal | met | rel. error TileLang / torch | tile config |",
        "|---|---|---:|---:|---:|---:|---:|---|---|---|---|",
    ]
    for case in result["cases"]:
        kernel, prob = case["kernel"], _problem_text(case["kernel"], case["problem"])
        if "best" not in case:
            rows.append(f"| {kernel} | {prob} | - | - | - | - | - | {GOAL_TEXT[kernel]} | no correct config | - | - |")
            continue
        best = case["best"]
        if kernel == "rmsnorm":
            ours, theirs = f"{case['tilelang_gbs']:.0f} GB/s", f"{case['torch_gbs']:.0f} GB/s"
            ratio = f"{case['fraction_of_copy']:.2f} of copy ({case['speedup_vs_torch']:.1f}x torch)"
        else:
            ours, theirs = f"{case['tilelang_tflops']:.0f} TFLOP/s", f"{case['torch_tflops']:.0f} TFLOP/s"
            ratio = f"{case['speedup_vs_torch']:.3f}x"
        met = "yes" if goal_met(case, result["goals"]) else "**no**"
        rows.append(
            f"| {kernel} | {prob} | {best['ms']:.3f} | {ours} | {case['torch_ms']:.3f} | {theirs} | {ratio} | "
            f"{GOAL_TEXT[kernel]} | {met} | {best['rel_error']:.1e} / {case['torch_rel_error']:.1e} | "
            f"{_config_text(best['config'])} |"
        )
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    """CLI: print the table of the result JSON given as the one argument."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m kernels.bench.report RESULT.json", file=sys.stderr)
        return 2
    path = Path(args[0])
    try:
        result = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        print(f"kernels.bench.report: {path}: {exc}", file=sys.stderr)
        return 2
    print(render_table(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
