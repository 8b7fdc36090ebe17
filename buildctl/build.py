"""Build a plan's cells with `docker buildx bake` (fifth arrow of the flow).

Cells build one at a time in plan order (parents first), each with its own log under
`<out>/logs/<target>.log`. A failed cell's descendants are skipped; the failure's log tail is shown.
"""

from __future__ import annotations

import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console

from buildctl.bake import BuildOptions, write_bake_file
from buildctl.plan import Cell, Plan

LOG_TAIL_LINES = 30


@dataclass(frozen=True)
class CellResult:
    """Outcome of one cell: status is 'built', 'failed' or 'skipped'; seconds is wall time."""

    cell: Cell
    status: str
    seconds: float
    log: Path | None
    detail: str = ""


def log_tail(path: Path, lines: int = LOG_TAIL_LINES) -> str:
    """The last `lines` lines of a log file."""
    return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])


def build_plan(plan: Plan, out_root: Path, options: BuildOptions, console: Console,
               keep_going: bool = False) -> list[CellResult]:
    """Build every cell of `plan` (already rendered under `out_root`); returns one result per cell.

    keep_going: build the remaining independent cells after a failure (descendants are still skipped).
    """
    bake_file = write_bake_file(plan, out_root, options)
    logs = out_root / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    failed: set[str] = set()
    results: list[CellResult] = []
    for i, cell in enumerate(plan.cells, 1):
        if cell.parent_ref in failed or (failed and not keep_going):
            failed.add(cell.ref)
            reason = f"parent {cell.parent_ref} failed" if cell.parent_ref in failed else "an earlier cell failed"
            results.append(CellResult(cell, "skipped", 0.0, None, reason))
            console.print(f"[{i}/{len(plan.cells)}] {cell.ref}: [yellow]skipped[/] ({reason})")
            continue
        log = logs / f"{cell.name}.log"
        start = time.monotonic()
        with console.status(f"[{i}/{len(plan.cells)}] building {cell.ref} (log: {log})"):
            with log.open("w") as fh:
                rc = subprocess.run(
                    ["docker", "buildx", "bake", "--file", str(bake_file), "--progress", "plain", cell.name],
                    stdout=fh, stderr=subprocess.STDOUT).returncode
        seconds = time.monotonic() - start
        if rc == 0:
            results.append(CellResult(cell, "built", seconds, log))
            console.print(f"[{i}/{len(plan.cells)}] {cell.ref}: [green]built[/] in {seconds:.0f} s")
        else:
            failed.add(cell.ref)
            results.append(CellResult(cell, "failed", seconds, log, f"docker buildx bake exited {rc}"))
            console.print(f"[{i}/{len(plan.cells)}] {cell.ref}: [red]failed[/] after {seconds:.0f} s; log: {log}")
            console.print(log_tail(log), markup=False, highlight=False)
    return results
