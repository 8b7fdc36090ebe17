"""Two runs side by side: refuse different workloads, pair the levels, compute after/before ratios, list
what differs in the environments, then plot and write the report (`plots`, `report`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from buildctl.bench.runfile import Environment, Level, Run, read_run
from buildctl.errors import InputError

# Workload fields two runs must share to be compared (seed and endpoint may differ: same lengths and load).
WORKLOAD_KEYS = ("model", "dtype", "quantization", "input_len", "output_len", "concurrency", "num_prompts")

# (name, unit, getter, lower is better) for the ratio table; a getter returns None when not measured.
METRICS: tuple[tuple[str, str, Callable[[Level], float | None], bool], ...] = (
    ("TTFT p50", "ms", lambda lv: lv.ttft_ms.p50, True),
    ("TTFT p99", "ms", lambda lv: lv.ttft_ms.p99, True),
    ("ITL p50", "ms", lambda lv: lv.itl_ms.p50, True),
    ("ITL p99", "ms", lambda lv: lv.itl_ms.p99, True),
    ("E2E p50", "ms", lambda lv: lv.e2e_ms.p50, True),
    ("output tok/s", "tok/s", lambda lv: lv.output_tok_s, False),
    ("requests/s", "req/s", lambda lv: lv.request_s, False),
    ("peak memory", "MiB", lambda lv: lv.memory.peak_mib if lv.memory else None, True),
)


@dataclass(frozen=True)
class Row:
    """One metric at one level: before, after, after/before (None where either is missing or before is 0)."""

    concurrency: int
    metric: str
    unit: str
    before: float | None
    after: float | None
    ratio: float | None
    lower_is_better: bool


@dataclass(frozen=True)
class Comparison:
    """Everything the report shows."""

    before: Run
    after: Run
    before_path: Path
    after_path: Path
    workload_diff: list[tuple[str, object, object]]
    environment_diff: list[tuple[str, str, str]]
    levels: list[int]
    rows: list[Row]


def workload_diff(before: Run, after: Run) -> list[tuple[str, object, object]]:
    """(key, before, after) for each of WORKLOAD_KEYS that differs."""
    b, a = before.workload.model_dump(), after.workload.model_dump()
    return [(k, b[k], a[k]) for k in WORKLOAD_KEYS if b[k] != a[k]]


def gpu_summary(env: Environment) -> str:
    """The environment's GPUs on one line: `NVIDIA H200 (sm_90, 143771 MiB)`, `none (CPU)` without any."""
    return "; ".join(f"{g.name} ({g.arch or '?'}, {g.vram_mib:.0f} MiB)" if g.vram_mib else f"{g.name} ({g.arch})"
                     for g in env.gpus) or "none (CPU)"


def environment_diff(before: Environment, after: Environment) -> list[tuple[str, str, str]]:
    """(field, before, after) for each environment field that differs; GPUs as one summary line."""
    rows = []
    b, a = before.model_dump(), after.model_dump()
    for key in b:
        if key == "gpus":
            if gpu_summary(before) != gpu_summary(after):
                rows.append(("gpus", gpu_summary(before), gpu_summary(after)))
        elif b[key] != a[key]:
            rows.append((key, str(b[key]) or "-", str(a[key]) or "-"))
    return rows


def _ratio(before: float | None, after: float | None) -> float | None:
    if before is None or after is None or before == 0:
        return None
    return after / before


def pair_rows(before: Run, after: Run) -> tuple[list[int], list[Row]]:
    """Concurrency levels both runs have (ascending) and one Row per (level, metric)."""
    b = {lv.concurrency: lv for lv in before.levels}
    a = {lv.concurrency: lv for lv in after.levels}
    levels = sorted(set(b) & set(a))
    rows = []
    for conc in levels:
        for name, unit, get, lower in METRICS:
            bv, av = get(b[conc]), get(a[conc])
            rows.append(Row(conc, name, unit, bv, av, _ratio(bv, av), lower))
    return levels, rows


def compare_runs(before_path: Path, after_path: Path, allow_different_workload: bool) -> Comparison:
    """Read both runs and compare them.

    Raises:
        InputError: a file is missing, truncated or foreign (one line, from `read_run`); the workloads
            differ and `allow_different_workload` is off (names the first differing field); the runs share
            no concurrency level.
    """
    before, after = read_run(before_path), read_run(after_path)
    diff = workload_diff(before, after)
    if diff and not allow_different_workload:
        key, bv, av = diff[0]
        more = f" (and {', '.join(k for k, _, _ in diff[1:])})" if len(diff) > 1 else ""
        raise InputError(f"workloads differ: `workload.{key}` is {bv!r} in {before_path} and {av!r} in "
                         f"{after_path}{more}; --allow-different-workload compares them anyway")
    levels, rows = pair_rows(before, after)
    if not levels:
        raise InputError(f"{before_path} and {after_path} share no concurrency level "
                         f"({before.workload.concurrency} against {after.workload.concurrency})")
    return Comparison(before, after, before_path, after_path, diff,
                      environment_diff(before.environment, after.environment), levels, rows)


def levels_of(run: Run, levels: list[int]) -> list[Level]:
    """The run's levels at the given concurrencies, in that order."""
    by = {lv.concurrency: lv for lv in run.levels}
    return [by[c] for c in levels]


def write_report(before_path: Path, after_path: Path, out: Path, allow_different_workload: bool) -> Path:
    """Compare and write OUT/report.md, OUT/report.html and OUT/*.png; returns report.md's path.

    Raises:
        InputError: as `compare_runs`, or OUT exists and is not a folder.
    """
    from buildctl.bench import plots, report

    comparison = compare_runs(before_path, after_path, allow_different_workload)
    if out.exists() and not out.is_dir():
        raise InputError(f"--out {out}: exists and is not a folder")
    out.mkdir(parents=True, exist_ok=True)
    figures = plots.write_plots(comparison, out)
    return report.write(comparison, figures, out)
