"""report.md and report.html of a comparison (Jinja2 templates beside this module, autoescaped HTML)."""

from __future__ import annotations

from pathlib import Path

from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape

from buildctl.bench.compare import Comparison, Row, gpu_summary
from buildctl.bench.plots import memory_source
from buildctl.bench.runfile import Run, write_atomic

ENV_FIELDS = ("host", "os", "cpu", "cpu_count", "memory_mib", "gpus", "driver", "rocm", "cuda", "torch", "sglang",
              "transformers", "image", "image_digest")


def num(value: float | None) -> str:
    """A measured value for a table: 3 significant figures at most one decimal below 100; '-' when missing."""
    if value is None:
        return "-"
    return f"{value:.3g}" if abs(value) < 100 else f"{value:,.0f}"


def ratio(row: Row) -> str:
    """after/before to 3 significant figures (`0.42×`, `0.0044×`, `249×`), '-' when not computable."""
    return "-" if row.ratio is None else f"{row.ratio:.3g}×"


def verdict(row: Row) -> str:
    """CSS class: `better` / `worse` by the metric's direction (within 2% is neither)."""
    if row.ratio is None or abs(row.ratio - 1) < 0.02:
        return ""
    return "better" if (row.ratio < 1) == row.lower_is_better else "worse"


def _env_rows(c: Comparison) -> list[tuple[str, str, str]]:
    rows = []
    for key in ENV_FIELDS:
        if key == "gpus":
            rows.append((key, gpu_summary(c.before.environment), gpu_summary(c.after.environment)))
        else:
            b, a = getattr(c.before.environment, key), getattr(c.after.environment, key)
            rows.append((key, str(b) if b != "" else "-", str(a) if a != "" else "-"))
    return rows


def _counts(run: Run, level: int) -> str:
    found = next(lv for lv in run.levels if lv.concurrency == level)
    return f"{found.completed} / {found.errors}"


def render(c: Comparison, figures: list[tuple[str, str]], template: str) -> str:
    """Render `template` (report.md.j2 or report.html.j2) for comparison `c` and its written figures."""
    env = Environment(loader=PackageLoader("buildctl.bench", "templates"), undefined=StrictUndefined,
                      autoescape=select_autoescape(["html.j2"]), trim_blocks=True, lstrip_blocks=True,
                      keep_trailing_newline=True)
    info_keys = sorted(set(c.before.server.info) | set(c.after.server.info))
    return env.get_template(template).render(
        c=c, figures=figures, env_rows=_env_rows(c), info_keys=info_keys, num=num, ratio=ratio, verdict=verdict,
        counts=_counts, memory_source=memory_source, rows_at=lambda level: [r for r in c.rows if r.concurrency == level])


def write(c: Comparison, figures: list[tuple[str, str]], out: Path) -> Path:
    """Write OUT/report.md and OUT/report.html (each atomically); returns report.md's path."""
    for template in ("report.md.j2", "report.html.j2"):
        write_atomic(out / template.removesuffix(".j2"), render(c, figures, template))
    return out / "report.md"
