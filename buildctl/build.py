"""Build a plan's cells with `docker buildx bake` (fifth arrow of the flow).

Cells build one at a time in plan order (parents first), each with its own log under
`<out>/logs/<target>.log`. Before a cell builds, its content key (buildctl.cache) is computed from its
rendered folder, build args and its parent's image ID as it is now: a cell whose image carries that key
is skipped ('cached'), or pulled when a registry has it ('pulled'); a rebuilt parent has a new image ID,
so its descendants rebuild. A built cell gets provenance labels through bake and an SBOM layer
(buildctl.provenance). A failed cell's descendants are skipped; the failure's log tail is shown, with
the error library's diagnosis (buildctl.doctor).
"""

from __future__ import annotations

import functools
import re
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from docker import DockerClient

from buildctl.bake import BuildOptions, write_bake_file
from buildctl.cache import Action, Decision, decide_cell, engine_lookup
from buildctl.console import UI, escape
from buildctl.doctor import diagnose, format_matches
from buildctl.engine import drop_untagged
from buildctl.errors import InputError, RocmigError
from buildctl.plan import Cell, Plan
from buildctl.provenance import add_sbom, build_labels, created_now, git_revision, source_url
from buildctl.render import cell_dir
from buildctl.results import cell_fields

if TYPE_CHECKING:
    from buildctl.registry import Registry

LOG_TAIL_LINES = 30
DISK_FULL = "no space left on device"


class BuildStatus(StrEnum):
    """Outcome of one cell's build: built; cached (an image has its key); pulled (a registry had its key);
    failed; skipped (a parent or an earlier cell failed)."""

    BUILT = "built"
    CACHED = "cached"
    PULLED = "pulled"
    FAILED = "failed"
    SKIPPED = "skipped"


GOOD = (BuildStatus.BUILT, BuildStatus.CACHED, BuildStatus.PULLED)


@dataclass(frozen=True)
class CellResult:
    """Outcome of one cell: its status, wall time in seconds, its log (None when nothing was built) and why."""

    cell: Cell
    status: BuildStatus
    seconds: float
    log: Path | None
    detail: str = ""

    def to_json(self) -> dict[str, Any]:
        """The result as plain data for `buildctl build --json`."""
        return {**cell_fields(self.cell), "status": str(self.status), "seconds": round(self.seconds, 1),
                "log": str(self.log) if self.log else None, "detail": self.detail}


def _image_id(client: DockerClient, ref: str) -> str | None:
    """The image ID `ref` names now, or None."""
    import docker.errors

    try:
        return str(client.images.get(ref).id)
    except docker.errors.ImageNotFound:
        return None


def _drop_untagged(client: DockerClient, image_id: str | None, log: IO[str]) -> None:
    """engine.drop_untagged, its line written to the cell's log."""
    note = drop_untagged(client, image_id)
    if note:
        log.write(f"# buildctl: {note}\n")


def log_tail(path: Path, lines: int = LOG_TAIL_LINES) -> str:
    """The last `lines` lines of a log file."""
    return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])


def failure_detail(log: Path, rc: int) -> str:
    """One line saying why a cell failed: disk full gets its own message, else the exit status."""
    text = log.read_text(errors="replace")
    if DISK_FULL in text.lower():
        return (f"disk full during the build ({DISK_FULL!r} in {log}): free space where Docker keeps its data "
                "(`docker system df`; `docker builder prune` drops the build cache) and build again")
    return f"docker buildx bake exited {rc}"


def diagnosis(text: str) -> str:
    """The error library's matches for a failed log tail (buildctl.doctor), or '' when none matches."""
    matches = diagnose(text)
    return format_matches(matches) if matches else ""


@dataclass(frozen=True)
class BuildContext:
    """What every cell of one build shares.

    project_root: for the git revision and source URL labels. builder: a buildx builder name (remote
    BuildKit, kubernetes driver) or None for the engine's own. remote: a buildctl.registry.Registry to
    look for already-built keys in (and pull from), or None. sbom: add the SBOM layer to built cells.
    """

    project_root: Path
    builder: str | None = None
    remote: Registry | None = None
    sbom: bool = True


def check_builder(name: str) -> None:
    """Raise InputError naming --builder when buildx has no builder `name` (`docker buildx ls` lists them)."""
    result = subprocess.run(["docker", "buildx", "inspect", name], capture_output=True, text=True)
    if result.returncode != 0:
        raise InputError(f"--builder: no buildx builder named {name!r} ({result.stderr.strip()[:200]}); "
                         "`docker buildx ls` lists them, `docker buildx create` makes one")


# A BuildKit plain-progress line that starts a Dockerfile step: `#7 [builder 3/9] RUN pip wheel ...`.
STEP_RE = re.compile(r"^#\d+ \[(?:(?P<stage>[^\]]*?) )?(?P<i>\d+)/(?P<n>\d+)\] (?P<what>.*)$")
STEP_TEXT_MAX = 120


def step_of(line: str) -> str | None:
    """'step 3/9 (builder): RUN pip wheel ...' for a BuildKit plain-progress line that starts a step, else None."""
    m = STEP_RE.match(line)
    if m is None:
        return None
    stage = f" ({m.group('stage')})" if m.group("stage") else ""
    what = m.group("what")
    what = what if len(what) <= STEP_TEXT_MAX else what[:STEP_TEXT_MAX - 3] + "..."
    return f"step {m.group('i')}/{m.group('n')}{stage}: {what}"


def _show_step(update: Callable[[str], None], head: str, step: str) -> None:
    update(f"{head}: {escape(step)}")


def run_bake(cmd: list[str], log: IO[str], on_step: Callable[[str], None],
             on_line: Callable[[str], None]) -> int:
    """Run `docker buildx bake --progress plain`, copying its output to `log`; calls on_step once per
    Dockerfile step it starts (a step counter) and on_line for every line. Returns the exit status."""
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace")
    assert proc.stdout is not None
    seen: set[str] = set()
    for line in proc.stdout:
        log.write(line)
        text = line.rstrip("\n")
        on_line(text)
        step = step_of(text)
        if step is not None and step not in seen:
            seen.add(step)
            log.flush()
            on_step(step)
    return proc.wait()


def bake_cmd(bake_file: Path, target: str, builder: str | None) -> list[str]:
    """The `docker buildx bake` argument list that builds one target of `bake_file` (plain progress)."""
    cmd = ["docker", "buildx", "bake"]
    if builder:
        cmd += ["--builder", builder, "--load"]
    return cmd + ["--file", str(bake_file), "--progress", "plain", target]


def build_plan(plan: Plan, out_root: Path, options: BuildOptions, console: UI,
               keep_going: bool = False, context: BuildContext | None = None, client: DockerClient | None = None) -> list[CellResult]:
    """Build the dirty cells of `plan` (already rendered under `out_root`); returns one result per cell.

    keep_going: build the remaining independent cells after a failure (descendants are still skipped).
    client: a docker SDK client (buildctl.engine.docker_client()); context: see BuildContext.
    """
    from buildctl.engine import docker_client

    context = context or BuildContext(project_root=Path("."))
    client = client or docker_client()
    local = engine_lookup(client)
    remote = context.remote
    revision, source = git_revision(context.project_root), source_url(context.project_root)
    logs = out_root / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    labels: dict[str, dict[str, str]] = {}
    write_bake_file(plan, out_root, options)  # the static definition; rewritten with labels per built cell
    failed: set[str] = set()
    results: list[CellResult] = []
    n = len(plan.cells)
    for i, cell in enumerate(plan.cells, 1):
        head = f"[{i}/{n}] {cell.ref}"
        if cell.parent_ref in failed or (failed and not keep_going):
            failed.add(cell.ref)
            reason = f"parent {cell.parent_ref} failed" if cell.parent_ref in failed else "an earlier cell failed"
            results.append(CellResult(cell, BuildStatus.SKIPPED, 0.0, None, reason))
            console.info(f"{head}: [yellow]skipped[/] ({reason})")
            continue
        start = time.monotonic()
        decision: Decision = decide_cell(cell, cell_dir(out_root, cell), options.build_args(), local,
                                         remote.lookup if remote else None, remote.name if remote else "")
        if decision.action == Action.SKIP and decision.where == "local":
            results.append(CellResult(cell, BuildStatus.CACHED, time.monotonic() - start, None, decision.reason))
            console.info(f"{head}: [cyan]cached[/] ({decision.reason})")
            continue
        if decision.action == Action.SKIP and remote is not None:
            with console.status(f"{head}: pulling from {remote.name}"):
                remote.pull_as(client, cell.ref, cell.local_refs)
            results.append(CellResult(cell, BuildStatus.PULLED, time.monotonic() - start, None, decision.reason))
            console.info(f"{head}: [cyan]pulled[/] ({decision.reason})")
            continue
        created = created_now()
        key = decision.key or ""  # known here: the parent is built or cached by now (plan order)
        labels[cell.name] = build_labels(cell, key, revision, source, created)
        bake_file = write_bake_file(plan, out_root, options, labels)
        log = logs / f"{cell.name}.log"
        replaced = _image_id(client, cell.ref)
        with console.status(f"{head}: building ({escape(decision.reason)}); log: {log}") as update, \
                log.open("w") as fh:
            cmd = bake_cmd(bake_file, cell.name, context.builder)
            fh.write(f"# buildctl: {cell.ref}: {decision.reason}; key {decision.key}\n# buildctl: {' '.join(cmd)}\n")
            fh.flush()
            rc = run_bake(cmd, fh, functools.partial(_show_step, update, head),
                          lambda line: console.detail(escape(line)))
            sbom_error = ""
            if rc == 0 and context.sbom:
                before_sbom = _image_id(client, cell.ref)
                try:
                    add_sbom(cell, out_root, cell.local_refs, created, fh)
                except RocmigError as exc:
                    sbom_error = str(exc)
                _drop_untagged(client, before_sbom, fh)
            if rc == 0:
                _drop_untagged(client, replaced, fh)
        seconds = time.monotonic() - start
        if rc == 0 and not sbom_error:
            results.append(CellResult(cell, BuildStatus.BUILT, seconds, log, decision.reason))
            console.info(f"{head}: [green]built[/] in {seconds:.1f} s (key {key[:19]})")
            continue
        failed.add(cell.ref)
        detail = sbom_error or failure_detail(log, rc)
        results.append(CellResult(cell, BuildStatus.FAILED, seconds, log, detail))
        tail = log_tail(log)
        console.result(f"{head}: [red]failed[/] after {seconds:.0f} s: {detail}; full log: {log}")
        console.text(tail)
        found = diagnosis(tail)
        if found:
            console.text("rocmig doctor:\n" + found)
    print_summary(console, results)
    return results


def print_summary(console: UI, results: list[CellResult]) -> None:
    """The build summary table: one row per cell with its status, seconds and detail."""
    colors = {"built": "green", "cached": "cyan", "pulled": "cyan", "failed": "red", "skipped": "yellow"}
    console.table("build summary", ("cell", "status", "seconds", "detail"),
                  [[r.cell.ref, f"[{colors[r.status]}]{r.status}[/]", f"{r.seconds:.1f}", escape(r.detail)]
                   for r in results])
