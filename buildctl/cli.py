"""The `buildctl` command line (also `python -m buildctl`; BuildKit's own client has the same name).

Exit codes (README.md, "Exit codes"): 0 success; 1 a command's own negative result (`doctor` found nothing,
`migrate --fail-on` met); 2 bad input (matrix.yaml, flags, paths, pins, credentials); 3 no Docker engine or
buildx; 4 a base image, apt repository or registry unreachable; 5 a build or recipe failed; 6 a registry
failed on its side, a digest mismatch, or a cell not promoted.
"""

from __future__ import annotations

import functools
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from buildctl import __version__
from buildctl.bake import BuildOptions, default_max_jobs
from buildctl.bench.cli import bench, compare
from buildctl.console import UI, buildctl_command, escape
from buildctl.doctor.cli import doctor
from buildctl.errors import (
    EXIT_BAD_INPUT,
    EXIT_BUILD,
    EXIT_INTERRUPTED,
    EXIT_NEGATIVE,
    EXIT_OK,
    ChildExit,
    ConfigError,
    InputError,
    NegativeResult,
    RegistryError,
    RocmigError,
)
from buildctl.ghflow_cli import bump_cmd, ci_group, releases_cmd, report_group, review_cmd, support_cmd
from buildctl.kernels_cli import kernels
from buildctl.lifecycle import deprecation_warnings, refuse_end_of_life
from buildctl.load import Project, load_project
from buildctl.migrate_options import passthrough_arguments, recipe_arguments, recipe_options
from buildctl.plan import Plan, Selection, make_plan, require_cells, resolve
from buildctl.results import document

if TYPE_CHECKING:
    from buildctl.build import CellResult
    from buildctl.registry import Registry

DEFAULT_CA_BUNDLE = Path("/etc/ssl/certs/ca-certificates.crt")


def _project(ctx: click.Context) -> Project:
    return load_project(ctx.obj["root"])


def selection_options(func: Callable[..., None]) -> Callable[..., None]:
    """--source/--rocm/--arch/--image (repeatable or comma lists) and --all, handed to the command as one
    `selection` argument (a Selection of the raw flag values; buildctl.plan.resolve fills the defaults)."""
    @functools.wraps(func)
    def wrapper(*args: Any, sources: tuple[str, ...], rocms: tuple[str, ...], archs: tuple[str, ...],
                images: tuple[str, ...], everything: bool, **kwargs: Any) -> None:
        return func(*args, selection=Selection(sources, rocms, archs, images), everything=everything, **kwargs)

    command: Callable[..., None] = click.option("--all", "everything", is_flag=True,
                           help="every value on the axes no flag names (default: matrix.yaml's default cell)")(wrapper)
    for name, help_text in reversed([
        ("source", "source of ROCm: amd or debian"),
        ("rocm", "ROCm minor line or full release, e.g. 6.2 or 7.2.4"),
        ("arch", "GPU arch (offload arch) or product, e.g. gfx942 or MI300X"),
        ("image", "image role, e.g. dev"),
    ]):
        command = click.option(f"--{name}", f"{name}s", multiple=True,
                               help=f"{help_text} (repeatable, or a comma list)")(command)
    return command


def _resolve(ctx: click.Context, project: Project, selection: Selection, everything: bool) -> Selection:
    """The command's selection with the matrix default filled in (buildctl.plan.resolve), saying so."""
    resolved = resolve(project, selection, everything)
    if resolved.note():
        _ui(ctx).info(resolved.note())
    return resolved.selection


def _planned(ctx: click.Context, project: Project, selection: Selection, everything: bool,
             with_parents: bool = True) -> Plan:
    """The plan `build`, `plan`, `push` and `pull` work on; ConfigError when it has no cell."""
    chosen = _resolve(ctx, project, selection, everything)
    plan = make_plan(project, chosen, with_parents=with_parents, allow_eol=ctx.obj.get("allow_eol", False))
    if not everything:
        refuse_end_of_life(plan)
    for line in deprecation_warnings(plan):
        click.echo(line, err=True)
    return require_cells(project, plan, chosen)


def _plan_rows(plan: Plan) -> list[list[str]]:
    rows = [[c.role, c.release.source, c.release.full, c.arch_name, c.ref, "[green]planned[/]"] for c in plan.cells]
    for ex in plan.excluded:
        c = ex.cell
        rows.append([c.role, c.release.source, c.release.full, c.arch_name, c.ref,
                     f"[yellow]excluded[/] ({ex.rule}): {ex.reason}"])
    return rows


def _ui(ctx: click.Context, stdout: bool = False) -> UI:
    """The UI of this run (-q/-v of the group) on stderr (progress) or stdout (results)."""
    ui: UI = ctx.obj["ui"]
    return ui.with_stream(sys.stdout) if stdout else ui


def default_root(cwd: Path) -> Path:
    """The project root when --root is not given: `cwd` when it holds matrix.yaml, else the checkout
    this buildctl was installed from (`pip install -e .`, used from another folder: `buildctl migrate
    ~/src/project`), else `cwd` (where load_project then says matrix.yaml is missing)."""
    if (cwd / "matrix.yaml").is_file():
        return cwd
    checkout = Path(__file__).resolve().parents[1]
    return checkout if (checkout / "matrix.yaml").is_file() else cwd


@click.group()
@click.version_option(__version__, prog_name="buildctl (rocmig)")
@click.option("--root", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="project root holding matrix.yaml, images/ and templates/ [default: the working directory "
                   "when it holds matrix.yaml, else the checkout buildctl runs from]")
@click.option("-q", "--quiet", is_flag=True, help="only results, warnings and errors (no progress lines)")
@click.option("-v", "--verbose", is_flag=True, help="more detail (e.g. every BuildKit progress line of a build)")
@click.option("--allow-eol", is_flag=True, help="plan and build cells whose ROCm release or arch is end-of-life")
@click.pass_context
def main(ctx: click.Context, root: Path | None, quiet: bool, verbose: bool, allow_eol: bool) -> None:
    """rocmig's buildctl: ROCm container images from matrix.yaml (not BuildKit's buildctl).

    Output is plain and unwrapped when stdout/stderr is not a terminal (pipes, CI logs).
    """
    ctx.obj = {"root": root if root is not None else default_root(Path(".")), "ui": UI.stderr(quiet=quiet, verbose=verbose), "allow_eol": allow_eol}


@main.group("matrix", invoke_without_command=True)
@selection_options
@click.option("--json", "as_json", is_flag=True, help="print the plan as JSON (cells and excluded cells)")
@click.pass_context
def matrix_cmd(ctx: click.Context, selection: Selection, everything: bool, as_json: bool) -> None:
    """Show the selected cells (default: matrix.yaml's default cell; --all: every cell), excluded cells with
    their rule and reason included. `matrix bump` adds a ROCm release."""
    if ctx.invoked_subcommand:
        return
    project = _project(ctx)
    plan = make_plan(project, _resolve(ctx, project, selection, everything))
    if as_json:
        click.echo(json.dumps(document("matrix", plan.to_json()), indent=2))
    else:
        _ui(ctx, stdout=True).table(f"{len(plan.cells)} cells planned, {len(plan.excluded)} excluded",
                                    ("image", "source", "ROCm", "arch", "tag", "status"), _plan_rows(plan))


@main.command("render")
@selection_options
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), default=Path("build"), show_default=True)
@click.pass_context
def render_cmd(ctx: click.Context, selection: Selection, everything: bool, out: Path) -> None:
    """Write OUT/<image>/<tag>/Dockerfile and its context for the selected cells, and OUT/docker-bake.json."""
    from buildctl.bake import write_bake_file
    from buildctl.render import render_cell

    project = _project(ctx)
    plan = make_plan(project, _resolve(ctx, project, selection, everything))
    out = output_dir(out, "--out")
    for cell in plan.cells:
        click.echo(render_cell(project, cell, out))
    click.echo(write_bake_file(plan, out, BuildOptions(apt_check_valid_until=_valid_until(None))))


def registry_options(func: Callable[..., None]) -> Callable[..., None]:
    """--registry HOST[:PORT], --username, --retries (the password comes from ROCMIG_REGISTRY_PASSWORD)."""
    func = click.option("--retries", type=click.IntRange(1, 20), default=4, show_default=True,
                        help="attempts per registry operation on transient errors (exponential backoff)")(func)
    func = click.option("--username", envvar="ROCMIG_REGISTRY_USER",
                        help="registry user (env ROCMIG_REGISTRY_USER); password: env ROCMIG_REGISTRY_PASSWORD")(func)
    return func


def _registry(host: str | None, username: str | None, retries: int) -> Registry | None:
    if not host:
        return None
    from buildctl.registry import Credentials, Registry, RetryPolicy

    creds = Credentials(username, os.environ.get("ROCMIG_REGISTRY_PASSWORD", "")) if username else None
    return Registry(host, creds, RetryPolicy(attempts=retries))


def _required_registry(host: str, username: str | None, retries: int) -> Registry:
    """The registry of a required --registry flag."""
    registry = _registry(host, username, retries)
    assert registry is not None, "--registry is required"
    return registry


def _render_all(project: Project, plan: Plan, out: Path) -> None:
    from buildctl.render import render_cell

    for cell in plan.cells:
        render_cell(project, cell, out)


@main.command("build")
@selection_options
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), default=Path("build"), show_default=True)
@click.option("--apt-mirror", metavar="URL", help="Debian mirror to use instead of deb.debian.org (e.g. a snapshot)")
@click.option("--apt-check-valid-until/--no-apt-check-valid-until", default=None,
              help="off for snapshot mirrors, whose Release files have expired [default: the host apt's setting]")
@click.option("--max-jobs", type=click.IntRange(min=1), default=None,
              help="compile jobs in builder stages (MAX_JOBS); default: min(cores, memory GiB / 9)")
@click.option("--ca-bundle", type=click.Path(dir_okay=False, exists=True, path_type=Path),
              default=DEFAULT_CA_BUNDLE if DEFAULT_CA_BUNDLE.exists() else None,
              help="CA bundle handed to builds as the BuildKit secret ca_bundle (for HTTPS proxies)")
@click.option("--keep-going", is_flag=True, help="build the other cells when one fails")
@click.option("--registry", metavar="HOST[:PORT]", help="skip (and pull) cells whose content key this registry has")
@registry_options
@click.option("--builder", metavar="NAME", help="buildx builder to use (remote BuildKit, kubernetes driver)")
@click.option("--parent", "parent", metavar="IMAGE@sha256:DIGEST",
              help="build the selected leaf cells on this existing parent image (by digest or image ID) "
                   "instead of building the chain")
@click.option("--sbom/--no-sbom", default=True, show_default=True,
              help="add the CycloneDX SBOM layer (/usr/share/rocmig/sbom.cdx.json) to built cells")
@click.option("--dry-run", is_flag=True, help="render and say per cell what would build and why; build nothing")
@click.option("--json", "as_json", is_flag=True, help="print the results (or with --dry-run the decisions) as JSON")
@click.pass_context
def build_cmd(ctx: click.Context, selection: Selection, everything: bool, out: Path, apt_mirror: str | None,
              apt_check_valid_until: bool | None, max_jobs: int | None, ca_bundle: Path | None, keep_going: bool,
              registry: str | None, username: str | None, retries: int, builder: str | None, parent: str | None,
              sbom: bool, dry_run: bool, as_json: bool) -> None:
    """Render and build the selected cells (and their parents) whose content key is not built yet; then
    `rocmig/<role>:latest` and the ROCm-line alias name the cells of this selection."""
    from buildctl.build import GOOD, BuildContext, build_plan
    from buildctl.engine import check_apt_mirror, docker_client, preflight, require_buildx
    from buildctl.tags import tag_local

    project = _project(ctx)
    plan = _planned(ctx, project, selection, everything, with_parents=parent is None)
    out = output_dir(out, "--out")
    if apt_mirror:
        check_apt_mirror(apt_mirror, plan)
    options = BuildOptions(apt_mirror, _valid_until(apt_check_valid_until), ca_bundle, max_jobs or default_max_jobs())
    if dry_run:
        _render_all(project, plan, out)
        _show_decisions(ctx, plan, out, options, _registry(registry, username, retries), as_json, dry_run=True)
        return
    client = docker_client()
    require_buildx()
    console = _ui(ctx)
    if parent is not None:
        from buildctl.parent import use_parent

        console.info(use_parent(client, plan, parent))
    else:
        debian = [r.version for r in project.matrix.rocm if r.source == "debian"]
        preflight(client, plan, f"SOURCE=debian ROCM={' or '.join(debian)}")
    _render_all(project, plan, out)
    if builder:
        from buildctl.build import check_builder

        check_builder(builder)
    context = BuildContext(project.root, builder, _registry(registry, username, retries), sbom)
    results = build_plan(plan, out, options, console, keep_going, context, client)
    good = [r.cell for r in results if r.status in GOOD]
    local = tag_local(client, good)
    for line in local:
        console.info(line)
    if as_json:
        click.echo(json.dumps(document("build", {"cells": [r.to_json() for r in results], "local_tags": local}),
                              indent=2))
    bad = [r for r in results if r.status not in GOOD]
    if bad:
        raise _build_failure(bad)


def output_dir(path: Path, flag: str) -> Path:
    """`path` created (with parents) and writable; InputError naming `flag` otherwise."""
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"{flag} {path}: cannot create it: {exc.strerror or exc}") from None
    if not os.access(path, os.W_OK | os.X_OK):
        raise InputError(f"{flag} {path}: not writable by uid {os.getuid()}")
    return path


def _show_decisions(ctx: click.Context, plan: Plan, out: Path, options: BuildOptions, remote: Registry | None,
                    as_json: bool,
                    dry_run: bool = False) -> None:
    """Decide every rendered cell (build or skip, and why) and print it as a table or JSON; with dry_run
    also the bake command each dirty cell would run."""
    from buildctl.bake import write_bake_file
    from buildctl.build import bake_cmd
    from buildctl.cache import Action, decide_plan, engine_lookup
    from buildctl.engine import docker_client

    decisions = decide_plan(plan, out, options.build_args(), engine_lookup(docker_client()),
                            remote.lookup if remote else None, remote.name if remote else "")
    bake_file = write_bake_file(plan, out, options)
    if as_json:
        cells = [{**d.to_json(), **({"command": bake_cmd(bake_file, d.cell.name, None)}
                                    if dry_run and d.action == Action.BUILD else {})} for d in decisions]
        click.echo(json.dumps(document("plan", {"cells": cells}), indent=2))
        return
    rows = [[d.cell.ref, f"[{'green' if d.action == Action.BUILD else 'cyan'}]{d.action}[/]", (d.key or "-")[:19],
             escape(d.reason)] for d in decisions]
    _ui(ctx, stdout=True).table(f"{sum(d.action == Action.BUILD for d in decisions)} to build, "
                                f"{sum(d.action == Action.SKIP for d in decisions)} up to date",
                                ("cell", "action", "key", "why"), rows)
    if dry_run:
        for d in decisions:
            if d.action == Action.BUILD:
                click.echo("would run: " + " ".join(bake_cmd(bake_file, d.cell.name, None)))


def _report_pins(ui: UI, project: Project, plan: Plan) -> None:
    """Print each unchecked pin; raise ConfigError naming every pin its index does not have."""
    from buildctl.pins import check_pins

    with ui.status("checking every pin on its index (PyPI, the PyTorch ROCm index, TheRock's index)"):
        checks = check_pins(project, plan)
    for c in checks:
        if c.found is None:
            click.echo(f"pin {c.package}=={c.version}: not checked, {c.index} unreachable ({c.detail}); "
                       "the build will name it if it is missing", err=True)
    missing = [c for c in checks if c.found is False]
    if missing:
        raise ConfigError("matrix.yaml: pins missing from their index: " + "; ".join(
            f"{c.package}=={c.version} not on {c.index}{' (' + c.detail + ')' if c.detail else ''}" for c in missing))
    click.echo(f"pins: {sum(c.found is True for c in checks)} found, {sum(c.found is None for c in checks)} "
               "not checked (index unreachable)", err=True)


def _valid_until(flag: bool | None) -> bool:
    """The flag when given, else what the host's apt does (a host on a snapshot mirror turns it off)."""
    from buildctl.engine import host_apt_checks_valid_until

    return host_apt_checks_valid_until() if flag is None else flag


def _build_failure(bad: list[CellResult]) -> RocmigError:
    from buildctl.errors import BuildError

    detail = ", ".join(f"{r.cell.ref} ({r.status}{': ' + r.detail if r.detail else ''})" for r in bad)
    return BuildError(f"{len(bad)} cell(s) not built: {detail}")


@main.command("plan")
@selection_options
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), default=Path("build"), show_default=True)
@click.option("--json", "as_json", is_flag=True, help="print the decisions as JSON")
@click.option("--apt-mirror", metavar="URL", help="as for build (a build arg: part of the content key)")
@click.option("--apt-check-valid-until/--no-apt-check-valid-until", default=None,
              help="as for build [default: the host apt's setting]")
@click.option("--registry", metavar="HOST[:PORT]", help="also count keys this registry has as built")
@click.option("--check-pins", is_flag=True,
              help="check that every version pin of the plan exists on its index (network); a missing pin exits 2")
@click.option("--check-resolve", is_flag=True,
              help="run pip's resolver on the plan's pip steps against PyPI (network); a problem exits 2")
@registry_options
@click.pass_context
def plan_cmd(ctx: click.Context, selection: Selection, everything: bool, out: Path, as_json: bool,
             apt_mirror: str | None, apt_check_valid_until: bool | None, registry: str | None, check_pins: bool,
             check_resolve: bool, username: str | None, retries: int) -> None:
    """Say for each cell of a build whether it builds or is skipped, and why (renders into --out)."""
    project = _project(ctx)
    plan = _planned(ctx, project, selection, everything)
    if check_pins:
        _report_pins(_ui(ctx), project, plan)
    if check_resolve:
        from buildctl.resolve import check_plan

        with _ui(ctx).status(f"resolving the pip steps of {len(plan.cells)} cell(s) with pip against PyPI"):
            outcomes = check_plan(project, plan)
        problems = [p for outcome in outcomes for p in outcome.problems]
        if problems:
            raise ConfigError("pip's resolver: " + "; ".join(problems))
    out = output_dir(out, "--out")
    _render_all(project, plan, out)
    options = BuildOptions(apt_mirror, _valid_until(apt_check_valid_until), None)
    _show_decisions(ctx, plan, out, options, _registry(registry, username, retries), as_json)


@main.command("push")
@selection_options
@click.option("--registry", metavar="HOST[:PORT]", required=True, help="registry to push to, e.g. 127.0.0.1:5000")
@registry_options
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), default=Path("build"), show_default=True,
              help="logs of the image tests go to OUT/logs/push-<cell>.log")
@click.option("--keep-going", is_flag=True,
              help="test the other cells when one fails and promote those that passed (never the failed one)")
@click.option("--test/--no-test", default=True, show_default=True, help="run the image tests on the staged copy")
@click.option("--json", "as_json", is_flag=True, help="print each cell's outcome, digest and final tags as JSON")
@click.pass_context
def push_cmd(ctx: click.Context, selection: Selection, everything: bool, registry: str, username: str | None,
             retries: int, out: Path, keep_going: bool, test: bool, as_json: bool) -> None:
    """Staged push: push by digest, pull back, test, then put the final tags on that digest (all or nothing)."""
    from buildctl.engine import docker_client
    from buildctl.promote import PushStatus, push_plan

    project = _project(ctx)
    plan = _planned(ctx, project, selection, everything)
    out = output_dir(out, "--out")
    results = push_plan(project, plan, _required_registry(registry, username, retries), docker_client(), out,
                        _ui(ctx), keep_going, test)
    if as_json:
        click.echo(json.dumps(document("push", {"registry": registry, "cells": [r.to_json() for r in results]}),
                              indent=2))
    bad = [r for r in results if r.status != PushStatus.PROMOTED]
    if bad:
        raise RegistryError(f"{len(bad)} cell(s) not promoted: " + "; ".join(
            f"{r.cell.ref} ({r.status}: {r.detail})" for r in bad))


@main.command("pull")
@selection_options
@click.option("--registry", metavar="HOST[:PORT]", required=True)
@registry_options
@click.option("--json", "as_json", is_flag=True, help="print each pulled cell, its digest and local tags as JSON")
@click.pass_context
def pull_cmd(ctx: click.Context, selection: Selection, everything: bool, registry: str, username: str | None,
             retries: int, as_json: bool) -> None:
    """Pull the selected cells' final tags, check each digest against the registry, tag them locally
    (full tag, ROCm-line alias and `latest`)."""
    from buildctl.engine import docker_client
    from buildctl.promote import pull_plan

    project = _project(ctx)
    plan = _planned(ctx, project, selection, everything, with_parents=False)
    pulled = pull_plan(plan, _required_registry(registry, username, retries), docker_client(), _ui(ctx))
    if as_json:
        click.echo(json.dumps(document("pull", {"registry": registry, "cells": pulled}), indent=2))


@main.command("tags")
@click.option("--write", is_flag=True, help="write docs/tags.md")
@click.option("--check", is_flag=True, help="exit 1 when docs/tags.md differs from the matrix")
@click.option("--json", "as_json", is_flag=True, help="print every cell's registry tags as JSON")
@click.pass_context
def tags_cmd(ctx: click.Context, write: bool, check: bool, as_json: bool) -> None:
    """Print (or --write / --check) docs/tags.md, the supported tags generated from matrix.yaml."""
    from buildctl.tags import TAGS_DOC, tags_json, tags_markdown, write_tags_doc

    if write + check + as_json > 1:
        raise click.UsageError("--write, --check and --json exclude each other: give one", ctx)
    project = _project(ctx)
    if as_json:
        click.echo(json.dumps(document("tags", tags_json(project)), indent=2))
    elif write:
        click.echo(write_tags_doc(project))
    elif check:
        path = project.root / TAGS_DOC
        if not path.exists() or path.read_text() != tags_markdown(project):
            raise NegativeResult(f"{path} is stale: run `{buildctl_command('tags --write')}`")
    else:
        click.echo(tags_markdown(project), nl=False)


@main.group("base")
def base_group() -> None:
    """OS base images for hosts without a registry."""


@base_group.command("bootstrap")
@click.argument("suite")
@click.option("--mirror", default="http://deb.debian.org/debian", show_default=True)
@click.option("--tag", help="image tag to create (default debian:SUITE)")
@click.option("--if-missing", is_flag=True, help="do nothing when the tag already exists")
def bootstrap_cmd(suite: str, mirror: str, tag: str | None, if_missing: bool) -> None:
    """debootstrap SUITE and docker-import it as debian:SUITE (about 40 s)."""
    from buildctl.bootstrap import bootstrap, check_suite
    from buildctl.engine import docker_client, image_exists

    check_suite(suite)
    tag = tag or f"debian:{suite}"
    client = docker_client()
    if if_missing and image_exists(client, tag):
        click.echo(f"{tag} already exists")
        return
    click.echo(f"{tag}: {bootstrap(suite, tag, mirror)}")


@main.command("migrate", context_settings={"ignore_unknown_options": True})
@click.argument("src", type=click.Path(path_type=Path))
@click.option("--rocm", default=None, help="ROCm minor line of the dev image (default: matrix default)")
@click.option("--source", default=None, help="source of the dev image (default: matrix default)")
@click.option("--arch", "archs", multiple=True, required=True,
              help="offload arch to compile for (repeatable or a comma list): a matrix arch or product, or any gfx "
                   "arch hipcc knows")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), required=True, help="report folder")
@recipe_options
@click.argument("recipe_args", nargs=-1, type=click.UNPROCESSED)
@click.pass_context
def migrate_cmd(ctx: click.Context, /, src: Path, rocm: str | None, source: str | None, archs: tuple[str, ...],
                out: Path, recipe_args: tuple[str, ...], **recipe: Any) -> None:
    """Hipify SRC, compile it for each --arch in the dev image and write report.json / report.md / report.html to --out.

    The recipe's options below work anywhere on the command line; `--arch-table PATH` (a path inside
    the image) is passed on to the recipe as it is.
    """
    from buildctl.engine import docker_client
    from buildctl.migrate import (
        Mounts,
        annotate_report,
        check_paths,
        pick_dev_image,
        recipe_drift,
        recipe_error,
        run_migrate,
        split_archs,
    )

    project = _project(ctx)
    matrix_archs, archs = split_archs(project, tuple(archs))
    chosen = resolve(project, Selection((source,) if source else (), (rocm,) if rocm else (), matrix_archs,
                                        ("dev",))).selection
    rocm = chosen.rocm[0]
    dev_cells = make_plan(project, Selection(chosen.sources, chosen.rocm, (), ("dev",))).cells
    if not dev_cells:
        raise ConfigError(f"--rocm {rocm}: no dev image is planned for it (see `{buildctl_command('matrix --image dev')}`)")
    mounts = Mounts(*check_paths(src, out), recipe.get("compile_commands"))
    # after check_paths, so that `buildctl migrate -q SRC` is told where -q goes
    recipe_args = (*recipe_arguments(recipe), *passthrough_arguments(recipe_args, _group_options()))
    client = docker_client()
    cell = pick_dev_image(client, list(dev_cells), list(archs))
    drift = recipe_drift(client, cell.ref, project.root)
    if drift:
        click.echo(f"warning: the dev image {cell.ref} holds another version of recipes/migrate than this checkout "
                   f"({len(drift)} file(s) differ: {', '.join(drift[:3])}{', ...' if len(drift) > 3 else ''}); "
                   "the run uses the image's: `make images` rebuilds it", err=True)
    code, lines = run_migrate(client, cell, mounts, list(archs), list(recipe_args), _ui(ctx))
    if code in (EXIT_BAD_INPUT, EXIT_INTERRUPTED):
        # The recipe's bad-input / interrupt line is the whole message: one line, as every error of buildctl.
        raise ChildExit(recipe_error(lines) or f"migrate recipe exited with status {code} in {cell.ref}", code)
    failed, matched = annotate_report(project.root, mounts)
    ui = _ui(ctx, stdout=True)
    if code not in (0, EXIT_NEGATIVE):
        # hipcc missing (3), a crash, an OOM kill: a failed recipe run (5), its output shown for the diagnosis.
        for line in lines:
            ui.text(line)
        _print_diagnosis("\n".join(lines))
        raise ChildExit(f"migrate recipe exited with status {code} in {cell.ref}: {recipe_error(lines) or 'no message'}",
                        EXIT_BUILD)
    if lines and failed:
        # The recipe's result line is its last; the library's matches belong to it, so it stays the last line.
        lines[-1] += (f"; error case library (buildctl doctor): {matched} of {failed} failed compile result(s) "
                      f"matched a known ROCm error, named in report.md")
    for line in lines:
        ui.result(escape(line))
    # 1: the --fail-on threshold was met, a result the recipe's summary line states (docs/migrate.md).
    ctx.exit(code)


def _print_diagnosis(text: str) -> None:
    """Run a failing log's tail through the error case library and print its matches."""
    from buildctl.doctor import diagnose, format_matches

    matches = diagnose("\n".join(text.splitlines()[-200:]))
    if matches:
        click.echo("rocmig doctor:\n" + format_matches(matches), err=True)


main.add_command(bench)
main.add_command(compare)
main.add_command(doctor)
main.add_command(kernels)
main.add_command(report_group)
main.add_command(review_cmd)
main.add_command(ci_group)
main.add_command(support_cmd)
matrix_cmd.add_command(bump_cmd)
matrix_cmd.add_command(releases_cmd)


def _group_options() -> dict[str, str]:
    """The options of the `buildctl` group itself (-q, --root, ...), which go before a subcommand: each name
    and how it is written (`--root ROOT`)."""
    usage = {}
    for param in main.params:
        value = "" if getattr(param, "is_flag", False) or param.name is None else f" {param.name.upper()}"
        usage.update({name: name + value for name in (*param.opts, *param.secondary_opts)})
    return usage


def exit_code(args: list[str] | None = None) -> int:
    """Run the CLI on `args` (default: sys.argv[1:]) and return its exit code (buildctl.errors): a
    RocmigError or click usage error becomes one `buildctl: error: ...` line on stderr and its class's
    code (a usage error: 2, with the subcommand's --help to read), Ctrl-C 130."""
    try:
        # Without standalone mode click returns a command's ctx.exit(code) instead of exiting with it.
        # prog_name: command paths say `buildctl doctor` also when run as `python -m buildctl`.
        code = main.main(args=args, prog_name="buildctl", standalone_mode=False)
    except (click.exceptions.Abort, KeyboardInterrupt):
        click.echo("buildctl: interrupted (Ctrl-C)", err=True)
        return EXIT_INTERRUPTED
    except click.exceptions.NoArgsIsHelpError as exc:
        # `buildctl` or a group (`buildctl report`) without a subcommand asks for its help: print it as --help does.
        click.echo(exc.ctx.get_help() if exc.ctx else main.get_help(click.Context(main)))
        return EXIT_OK
    except click.UsageError as exc:
        where = exc.ctx.command_path if exc.ctx else "buildctl"
        hint = f"see `{where} --help`"
        name = exc.option_name if isinstance(exc, click.exceptions.NoSuchOption) else ""
        usage = _group_options().get(name)
        if usage:
            hint = f"{name} is an option of buildctl itself, before the subcommand: " \
                   f"`buildctl {usage} {where.removeprefix('buildctl ')} ...`"
        click.echo(f"buildctl: error: {' '.join(exc.format_message().split())} ({hint})", err=True)
        return exc.exit_code
    except click.ClickException as exc:
        click.echo(f"buildctl: error: {' '.join(exc.format_message().split())}", err=True)
        return exc.exit_code
    except click.exceptions.Exit as exc:
        return exc.exit_code
    except RocmigError as exc:
        click.echo(f"buildctl: error: {' '.join(str(exc).split())}", err=True)
        return exc.exit_code
    return code if isinstance(code, int) else 0


def run() -> None:
    """Console-script entry (`buildctl`, `python -m buildctl`): exits with exit_code()."""
    raise SystemExit(exit_code())
