"""The report's figures (matplotlib's object API, no pyplot state): each metric against concurrency, both
runs on one axis (before blue, after orange; p50 solid, p99 dashed), log2 concurrency axis."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from matplotlib.figure import Figure

from buildctl.bench.compare import Comparison, levels_of
from buildctl.bench.runfile import Level, Run

COLORS = ("#1f77b4", "#ff7f0e")
Getter = Callable[[Level], float | None]


@dataclass(frozen=True)
class Plot:
    """One figure: file name, title, y label and its series (label suffix, getter, line style)."""

    name: str
    title: str
    ylabel: str
    series: tuple[tuple[str, Getter, str], ...]
    names_source: bool = False


PLOTS = (
    Plot("ttft.png", "Time to first token", "TTFT (ms)",
         (("p50", lambda lv: lv.ttft_ms.p50, "-"), ("p99", lambda lv: lv.ttft_ms.p99, "--"))),
    Plot("itl.png", "Inter-token latency", "ITL (ms)",
         (("p50", lambda lv: lv.itl_ms.p50, "-"), ("p99", lambda lv: lv.itl_ms.p99, "--"))),
    Plot("throughput.png", "Output throughput", "output tokens/s",
         (("", lambda lv: lv.output_tok_s, "-"),)),
    Plot("memory.png", "Memory while serving", "MiB",
         (("peak", lambda lv: lv.memory.peak_mib if lv.memory else None, "-"),
          ("mean", lambda lv: lv.memory.mean_mib if lv.memory else None, "--")), names_source=True),
)


def memory_source(run: Run) -> str:
    """How the run's memory was measured (the sampler of its first level), '-' when it was not."""
    found = next((lv.memory.source for lv in run.levels if lv.memory), "")
    return {"process": "server process RSS", "nvidia-smi": "GPU memory used (nvidia-smi)",
            "amd-smi": "VRAM used (amd-smi)", "rocm-smi": "VRAM used (rocm-smi)"}.get(found, found or "-")


def _figure(plot: Plot, comparison: Comparison) -> Figure | None:
    fig = Figure(figsize=(6.4, 4.0), dpi=100)
    ax = fig.add_subplot()
    drawn = 0
    for color, run in zip(COLORS, (comparison.before, comparison.after)):
        levels = levels_of(run, comparison.levels)
        for suffix, get, style in plot.series:
            points = [(lv.concurrency, get(lv)) for lv in levels]
            points = [(x, y) for x, y in points if y is not None]
            if not points:
                continue
            xs, ys = zip(*points)
            label = f"{run.label} {suffix}".strip()
            if plot.names_source:
                label += f" [{memory_source(run)}]"
            ax.plot(xs, ys, style, color=color, marker="o", label=label)
            drawn += 1
    if not drawn:
        return None
    ax.set_xscale("log", base=2)
    ax.set_xticks(comparison.levels, [str(c) for c in comparison.levels])
    ax.set_xlabel("concurrency")
    ax.set_ylabel(plot.ylabel)
    ax.set_title(plot.title)
    ax.set_ylim(bottom=0)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize="small")
    fig.tight_layout()
    return fig


def write_plots(comparison: Comparison, out: Path) -> list[tuple[str, str]]:
    """Write each figure that has data to `out`; returns (file name, title) of those written."""
    written = []
    for plot in PLOTS:
        fig = _figure(plot, comparison)
        if fig is not None:
            fig.savefig(out / plot.name)
            written.append((plot.name, plot.title))
    return written
