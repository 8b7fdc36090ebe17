"""Write docker-bake.json for a plan (fourth arrow of the flow).

One bake target per cell, named `<role>_<tag>` with dots replaced. The Docker engine's embedded
BuildKit (Engine 20.10, the `docker` driver) refuses named build contexts (`target:`), so parents are
wired by image reference instead: a child's Dockerfile says `FROM rocmig/<parent>:<tag>` and the build
runs cells in plan order (parents first), each into the engine's image store; the `default` group lists
every target in that order.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from buildctl.plan import Plan
from buildctl.render import cell_dir


@dataclass(frozen=True)
class BuildOptions:
    """Options every cell's build gets.

    apt_mirror: a Debian mirror URL replacing deb.debian.org (e.g. snapshot.debian.org/archive/...).
    apt_check_valid_until: False for snapshot mirrors, whose Release files are past Valid-Until.
    ca_bundle: a PEM bundle handed to builds as the BuildKit secret `ca_bundle` (never in a layer).
    max_jobs: parallel compile jobs in builder stages (MAX_JOBS); None keeps the Dockerfile's default.
    """

    apt_mirror: str | None = None
    apt_check_valid_until: bool = True
    ca_bundle: Path | None = None
    max_jobs: int | None = None

    def build_args(self) -> dict[str, str]:
        args = {"APT_CHECK_VALID_UNTIL": "true" if self.apt_check_valid_until else "false"}
        if self.max_jobs is not None:
            args["MAX_JOBS"] = str(self.max_jobs)
        if self.apt_mirror:
            args["APT_MIRROR"] = self.apt_mirror
        return args


GIB_PER_COMPILE_JOB = 9


def default_max_jobs() -> int:
    """Compile jobs this host can afford: min(cores, memory GiB / 9), at least 1.

    9 GiB per job: flash-attention 2.8.3's setup.py sizes its own MAX_JOBS at "~8-9GB" peak per CK job
    (NinjaBuildExtension); CK translation units take several GB per clang process (case C07:
    OOM-killed compilers). Cells build one at a time, so one cell has the whole budget.
    """
    mem_gib = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return max(1, min(os.cpu_count() or 1, int(mem_gib // GIB_PER_COMPILE_JOB)))


def bake_definition(plan: Plan, out_root: Path, options: BuildOptions,
                    labels: dict[str, dict[str, str]] | None = None) -> dict[str, Any]:
    """The bake file as data: {"group": {...}, "target": {...}}.

    labels: per bake target name, labels the build adds (content key, provenance: buildctl.provenance);
    they live here rather than in the rendered Dockerfile, which stays byte-identical across builds.
    """
    targets = {}
    for cell in plan.cells:
        target = {
            "context": str(cell_dir(out_root, cell).resolve()),
            "dockerfile": "Dockerfile",
            "tags": cell.local_refs,
            "args": options.build_args(),
        }
        if options.ca_bundle is not None:
            target["secret"] = [f"id=ca_bundle,src={options.ca_bundle.resolve()}"]
        if labels and cell.name in labels:
            target["labels"] = dict(labels[cell.name])
        targets[cell.name] = target
    return {"group": {"default": {"targets": [c.name for c in plan.cells]}}, "target": targets}


def write_bake_file(plan: Plan, out_root: Path, options: BuildOptions,
                    labels: dict[str, dict[str, str]] | None = None) -> Path:
    """Write `<out_root>/docker-bake.json` (sorted keys, stable across runs) and return its path."""
    path = out_root / "docker-bake.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(bake_definition(plan, out_root, options, labels), indent=2, sort_keys=True) + "\n")
    tmp.replace(path)
    return path
