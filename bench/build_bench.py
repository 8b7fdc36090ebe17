"""Build-engine benchmarks: render+plan of the whole matrix, no-op rebuild of the CI slice, rebuild after
changing one recipe file. Results go to stdout as JSON (and Markdown rows for docs/benchmarks.md).

Usage (from the project root, with the slice already built once, e.g. by `make images`):
    .venv/bin/python bench/build_bench.py [--repeat 5] [--json-out bench/results/latest.json]

The builds run on a snapshot copy of the project (matrix.yaml, images/, templates/, the images' context folders) so that
edits others make meanwhile do not change the inputs; the images are the engine's real rocmig/* tags.
The recipe step appends one comment line to a file of recipes/migrate (copied only into dev), builds,
then restores the file and builds again, so the dev image ends with its original content.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from buildctl.cache import context_digest  # noqa: E402
from buildctl.load import load_project  # noqa: E402
from buildctl.plan import Selection, make_plan  # noqa: E402
from buildctl.render import cell_dir, render_cell  # noqa: E402

STATUS_RE = re.compile(r"^\[\d+/\d+\] (\S+): (built|cached|pulled|failed|skipped)", re.M)


def snapshot(dest: Path) -> Path:
    """Copy the inputs of a build (matrix.yaml, images/, templates/ and every image's context_dirs) to
    dest; returns dest."""
    folders = {"images", "templates", "recipes"}
    for spec in load_project(ROOT).images.values():
        folders |= {d.split("/")[0] for d in spec.context_dirs}
    for name in sorted(folders):
        shutil.copytree(ROOT / name, dest / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc", ".pytest_cache"))
    shutil.copy(ROOT / "matrix.yaml", dest / "matrix.yaml")
    return dest


def render_plan_seconds(root: Path, repeat: int) -> dict:
    """Median seconds, over `repeat` runs, to load + plan the whole matrix, to render every planned cell
    into a fresh folder, and to compute every cell's context digest (the file part of its content key)."""
    runs = []
    cells = 0
    for _ in range(repeat):
        with tempfile.TemporaryDirectory() as out:
            t0 = time.perf_counter()
            project = load_project(root)
            plan = make_plan(project, Selection())
            t1 = time.perf_counter()
            for cell in plan.cells:
                render_cell(project, cell, Path(out))
            t2 = time.perf_counter()
            for cell in plan.cells:
                context_digest(cell_dir(Path(out), cell))
            t3 = time.perf_counter()
            runs.append((t1 - t0, t2 - t1, t3 - t2))
            cells = len(plan.cells)

    def med(i: int) -> float:
        return round(statistics.median(r[i] for r in runs), 3)

    return {"cells": cells, "load_plan_s": med(0), "render_s": med(1), "context_digest_s": med(2),
            "total_s": round(statistics.median(sum(r) for r in runs), 3)}


def build(root: Path, out: Path) -> dict:
    """Run `python -m buildctl build` for the default slice; wall seconds and each cell's status."""
    cmd = [sys.executable, "-m", "buildctl", "--root", str(root), "build", "--no-apt-check-valid-until",
           "--out", str(out)]
    start = time.perf_counter()
    result = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "COLUMNS": "200"})
    seconds = time.perf_counter() - start
    if result.returncode != 0:
        raise SystemExit(f"build failed (exit {result.returncode}):\n{result.stderr[-3000:]}")
    return {"seconds": round(seconds, 2), "cells": dict(STATUS_RE.findall(result.stderr))}


def main() -> None:
    """Run the benchmarks and print JSON; --json-out also writes it to a file."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5, help="runs of render+plan (median reported)")
    ap.add_argument("--cold-s", type=float, default=214.0,
                    help="cold build seconds of the slice to compare with (default: 3m34s, the measured first "
                         "build of base+dev on this host)")
    ap.add_argument("--json-out", type=Path)
    args = ap.parse_args()
    results = {"machine": f"{platform.node()}: {_cores()} cores, {platform.system()} {platform.release()}, "
                          f"Docker {_docker_version()}", "cold_build_s": args.cold_s}
    with tempfile.TemporaryDirectory(prefix="rocmig-bench-") as tmp:
        root = snapshot(Path(tmp) / "project")
        out = Path(tmp) / "build"
        results["render_plan_whole_matrix"] = render_plan_seconds(root, args.repeat)
        results["settle_build"] = build(root, out)  # builds whatever the snapshot changed; not a measurement
        results["noop_rebuild"] = build(root, out)
        recipe = sorted(p for p in (root / "recipes" / "migrate").rglob("*.py") if p.is_file())[0]
        original = recipe.read_bytes()
        recipe.write_bytes(original + b"\n# rocmig bench: one changed line\n")
        results["changed_recipe"] = {"file": str(recipe.relative_to(root)), **build(root, out)}
        recipe.write_bytes(original)
        results["restore_recipe"] = build(root, out)
    results["ratios"] = {
        "noop_vs_cold": round(results["noop_rebuild"]["seconds"] / args.cold_s, 4),
        "changed_recipe_vs_cold": round(results["changed_recipe"]["seconds"] / args.cold_s, 4),
    }
    text = json.dumps(results, indent=2)
    print(text)
    if args.json_out:
        args.json_out.parent.mkdir(parents=True, exist_ok=True)
        args.json_out.write_text(text + "\n")


def _cores() -> int:
    return os.cpu_count() or 0


def _docker_version() -> str:
    r = subprocess.run(["docker", "version", "--format", "{{.Server.Version}}"], capture_output=True, text=True)
    return r.stdout.strip() or "unknown"


if __name__ == "__main__":
    main()
