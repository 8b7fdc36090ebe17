"""The `buildctl` command line (also `python -m buildctl`; BuildKit's own client has the same name).

Exit codes (README.md, "Exit codes"): 0 success; 1 a command's own negative result (`doctor` found nothing,
`migrate --fail-on` met); 2 bad input (matrix.yaml, flags, paths, pins, credentials); 3 no Docker engine or
buildx; 4 a base image, apt repository or registry unreachable; 5 a build or recipe failed; 6 a registry
failed on its side, a digest mismatch, or a cell not promoted.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import click

from buildctl import __version__
from buildctl.bake import BuildOptions, default_max_jobs
from buildctl.console import UI
from buildctl.doctor.cli import doctor
from buildctl.errors import EXIT_INTERRUPTED, ChildExit, ConfigError, NegativeResult, RocmigError
from buildctl.ghflow_cli import ci_group, report_group, review_cmd
from buildctl.kernels_cli import kernels
from buildctl.load import Project, load_project
from buildctl.plan import Plan, Selection, check_selection, make_plan

DEFAULT_CA_BUNDLE = Path("/etc/ssl/certs/ca-certificates.crt")


def _project(ctx: click.Context) -> Project:
    return load_project(ctx.obj["root"])


def selection_options(func):
    """--source/--rocm/--arch/--image, each repeatable."""
    for name, help_text in reversed([
        ("source", "source of ROCm: amd or debian"),
        ("rocm", "ROCm minor line, e.g. 6.2"),
        ("arch", "GPU arch (offload arch), e.g. gfx942"),
        ("image", "image role, e.g. dev"),
    ]):
        func = click.option(f"--{name}", f"{name}s", multiple=True, help=f"{help_text} (repeatable)")(func)
    return func


def _selection(sources, rocms, archs, images) -> Selection:
    return Selection(tuple(sources), tuple(rocms), tuple(archs), tuple(images))


def narrow_to_default_source(project: Project, selection: Selection) -> Selection:
    """For builds: when no --source is given and the default source has the selected ROCm lines, use it.

    `make images ROCM=7.2` thus builds Debian's 7.2 (buildable here), `ROCM=6.2` AMD's (only amd has it).
    """
    if selection.sources:
        return selection
    default = project.matrix.default.source
    versions = selection.rocm or (project.matrix.default.rocm,)
    have = {r.version for r in project.matrix.rocm if r.source == default}
    if all(v in have for v in versions):
        return Selection((default,), selection.rocm, selection.archs, selection.images)
    return selection


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


@click.group()
@click.version_option(__version__, prog_name="buildctl (rocmig)")
@click.option("--root", type=click.Path(file_okay=False, path_type=Path), default=Path("."), show_default=True,
              help="project root holding matrix.yaml, images/ and templates/")
@click.option("-q", "--quiet", is_flag=True, help="only results, warnings and errors (no progress lines)")
@click.option("-v", "--verbose", is_flag=True, help="more detail (e.g. every BuildKit progress line of a build)")
@click.pass_context
def main(ctx: click.Context, root: Path, quiet: bool, verbose: bool) -> None:
    """rocmig's buildctl: ROCm container images from matrix.yaml (not BuildKit's buildctl).

    Output is plain and unwrapped when stdout/stderr is not a terminal (pipes, CI logs).
    """
    ctx.obj = {"root": root, "ui": UI.stderr(quiet=quiet, verbose=verbose)}


@main.command("matrix")
@selection_options
@click.option("--json", "as_json", is_flag=True, help="print the plan as JSON (cells and excluded cells)")
@click.pass_context
def matrix_cmd(ctx, sources, rocms, archs, images, as_json):
    """Show the matrix's cells, excluded cells with their rule and reason included."""
    project = _project(ctx)
    plan = make_plan(project, _selection(sources, rocms, archs, images))
    if as_json:
        click.echo(json.dumps(plan.to_json(), indent=2))
    else:
        _ui(ctx, stdout=True).table(f"{len(plan.cells)} cells planned, {len(plan.excluded)} excluded",
                                    ("image", "source", "ROCm", "arch", "tag", "status"), _plan_rows(plan))


@main.command("render")
@selection_options
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), default=Path("build"), show_default=True)
@click.pass_context
def render_cmd(ctx, sources, rocms, archs, images, out):
    """Write build/<image>/<tag>/Dockerfile and its context for the selected cells."""
    from buildctl.render import render_cell

    project = _project(ctx)
    plan = make_plan(project, _selection(sources, rocms, archs, images))
    for cell in plan.cells:
        click.echo(render_cell(project, cell, out))


def build_selection(project: Project, sources, rocms, archs, images, with_parents: bool = True) -> Plan:
    """The plan `build`, `plan` and `push` work on: the default images, arch and ROCm line unless given."""
    selection = narrow_to_default_source(project, _selection(sources, rocms, archs, images or project.matrix.default.images))
    if not selection.archs:
        selection = Selection(selection.sources, selection.rocm, (project.matrix.default.arch,), selection.images)
    if not selection.rocm:
        selection = Selection(selection.sources, (project.matrix.default.rocm,), selection.archs, selection.images)
    plan = make_plan(project, selection, with_parents=with_parents)
    if not plan.cells:
        if plan.excluded:
            raise ConfigError("nothing to build: " + "; ".join(f"{e.cell.ref}: {e.reason}" for e in plan.excluded))
        lines = ", ".join(f"{r.source} {r.version}" for r in project.matrix.rocm)
        raise ConfigError(f"nothing to build: no cell matches --source/--rocm {'/'.join(selection.sources)} "
                          f"{'/'.join(selection.rocm)} (releases: {lines})")
    return plan


def registry_options(func):
    """--registry HOST[:PORT], --username, --retries (the password comes from ROCMIG_REGISTRY_PASSWORD)."""
    func = click.option("--retries", type=click.IntRange(1, 20), default=4, show_default=True,
                        help="attempts per registry operation on transient errors (exponential backoff)")(func)
    func = click.option("--username", envvar="ROCMIG_REGISTRY_USER",
                        help="registry user (env ROCMIG_REGISTRY_USER); password: env ROCMIG_REGISTRY_PASSWORD")(func)
    return func


def _registry(host: str | None, username: str | None, retries: int):
    if not host:
        return None
    from buildctl.registry import Credentials, Registry, RetryPolicy

    creds = Credentials(username, os.environ.get("ROCMIG_REGISTRY_PASSWORD", "")) if username else None
    return Registry(host, creds, RetryPolicy(attempts=retries))


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
              help="compile jobs in builder stages (MAX_JOBS); default: min(cores, memory GiB / 5)")
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
@click.pass_context
def build_cmd(ctx, sources, rocms, archs, images, out, apt_mirror, apt_check_valid_until, max_jobs, ca_bundle,
              keep_going, registry, username, retries, builder, parent, sbom):
    """Render and build the selected cells (and their parents) whose content key is not built yet."""
    from buildctl.build import GOOD, BuildContext, build_plan
    from buildctl.engine import docker_client, preflight, require_buildx

    project = _project(ctx)
    plan = build_selection(project, sources, rocms, archs, images, with_parents=parent is None)
    client = docker_client()
    require_buildx()
    console = _ui(ctx)
    if parent is not None:
        from buildctl.cache import use_parent

        console.info(use_parent(client, plan, parent))
    else:
        debian = [r.version for r in project.matrix.rocm if r.source == "debian"]
        preflight(client, plan, f"SOURCE=debian ROCM={' or '.join(debian)}")
    _render_all(project, plan, out)
    options = BuildOptions(apt_mirror, _valid_until(apt_check_valid_until), ca_bundle, max_jobs or default_max_jobs())
    if builder:
        from buildctl.build import check_builder

        check_builder(builder)
    context = BuildContext(project.root, builder, _registry(registry, username, retries), sbom)
    results = build_plan(plan, out, options, console, keep_going, context, client)
    bad = [r for r in results if r.status not in GOOD]
    if bad:
        raise _build_failure(bad)


def _report_pins(project: Project, plan: Plan) -> None:
    """Print each unchecked pin; raise ConfigError naming every pin its index does not have."""
    from buildctl.pins import check_pins

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


def _build_failure(bad) -> RocmigError:
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
@registry_options
@click.pass_context
def plan_cmd(ctx, sources, rocms, archs, images, out, as_json, apt_mirror, apt_check_valid_until, registry,
             check_pins, username, retries):
    """Say for each cell of a build whether it builds or is skipped, and why (renders into --out)."""
    from buildctl.cache import decide_plan, engine_lookup
    from buildctl.engine import docker_client

    project = _project(ctx)
    plan = build_selection(project, sources, rocms, archs, images)
    if check_pins:
        _report_pins(project, plan)
    _render_all(project, plan, out)
    remote = _registry(registry, username, retries)
    options = BuildOptions(apt_mirror, _valid_until(apt_check_valid_until), None)
    decisions = decide_plan(plan, out, options.build_args(), engine_lookup(docker_client()),
                            remote.lookup if remote else None, remote.name if remote else "")
    if as_json:
        click.echo(json.dumps({"cells": [d.to_json() for d in decisions]}, indent=2))
        return
    rows = [[d.cell.ref, f"[{'green' if d.action == 'build' else 'cyan'}]{d.action}[/]", (d.key or "-")[:19], d.reason]
            for d in decisions]
    _ui(ctx, stdout=True).table(f"{sum(d.action == 'build' for d in decisions)} to build, "
                                f"{sum(d.action == 'skip' for d in decisions)} up to date",
                                ("cell", "action", "key", "why"), rows)


@main.command("push")
@selection_options
@click.option("--registry", metavar="HOST[:PORT]", required=True, help="registry to push to, e.g. 127.0.0.1:5000")
@registry_options
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), default=Path("build"), show_default=True,
              help="logs of the image tests go to OUT/logs/push-<cell>.log")
@click.option("--keep-going", is_flag=True,
              help="test the other cells when one fails and promote those that passed (never the failed one)")
@click.option("--test/--no-test", default=True, show_default=True, help="run the image tests on the staged copy")
@click.pass_context
def push_cmd(ctx, sources, rocms, archs, images, registry, username, retries, out, keep_going, test):
    """Staged push: push to <tag>-staging, pull back, test, then move the final tags (all or nothing)."""
    from buildctl.engine import docker_client
    from buildctl.registry import RegistryError, push_plan

    project = _project(ctx)
    plan = build_selection(project, sources, rocms, archs, images)
    results = push_plan(project, plan, _registry(registry, username, retries), docker_client(), out,
                        _ui(ctx), keep_going, test)
    bad = [r for r in results if r.status != "promoted"]
    if bad:
        raise RegistryError(f"{len(bad)} cell(s) not promoted: " + "; ".join(
            f"{r.cell.ref} ({r.status}: {r.detail})" for r in bad))


@main.command("pull")
@selection_options
@click.option("--registry", metavar="HOST[:PORT]", required=True)
@registry_options
@click.pass_context
def pull_cmd(ctx, sources, rocms, archs, images, registry, username, retries):
    """Pull the selected cells' final tags, check each digest against the registry, tag them locally."""
    from buildctl.engine import docker_client
    from buildctl.registry import RegistryError

    project = _project(ctx)
    plan = build_selection(project, sources, rocms, archs, images)
    reg = _registry(registry, username, retries)
    reg.ping()
    client = docker_client()
    for cell in plan.cells:
        name, tag = cell.ref.rsplit(":", 1)
        found = reg.manifest(name, tag)
        if found is None:
            raise RegistryError(f"{reg.remote_ref(cell.ref)}: no such tag in the registry (push it first)")
        digest = reg.pull_verified(client, reg.remote_ref(cell.ref), found[2])
        client.images.get(reg.remote_ref(cell.ref)).tag(name, tag)
        click.echo(f"{reg.remote_ref(cell.ref)}@{digest} -> {cell.ref}")


@main.command("tags")
@click.option("--write", is_flag=True, help="write docs/tags.md")
@click.option("--check", is_flag=True, help="exit 1 when docs/tags.md differs from the matrix")
@click.pass_context
def tags_cmd(ctx, write, check):
    """Print (or --write / --check) docs/tags.md, the supported tags generated from matrix.yaml."""
    from buildctl.tags import TAGS_DOC, tags_markdown, write_tags_doc

    project = _project(ctx)
    if write:
        click.echo(write_tags_doc(project))
    elif check:
        path = project.root / TAGS_DOC
        if not path.exists() or path.read_text() != tags_markdown(project):
            raise NegativeResult(f"{path} is stale: run `python -m buildctl tags --write`")
    else:
        click.echo(tags_markdown(project), nl=False)


@main.group("base")
def base_group():
    """OS base images for hosts without a registry."""


@base_group.command("bootstrap")
@click.argument("suite")
@click.option("--mirror", default="http://deb.debian.org/debian", show_default=True)
@click.option("--tag", help="image tag to create (default debian:SUITE)")
@click.option("--if-missing", is_flag=True, help="do nothing when the tag already exists")
def bootstrap_cmd(suite, mirror, tag, if_missing):
    """debootstrap SUITE and docker-import it as debian:SUITE (about 40 s)."""
    from buildctl.bootstrap import bootstrap
    from buildctl.engine import docker_client, image_exists

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
@click.option("--arch", "archs", multiple=True, required=True, help="offload arch to compile for (repeatable)")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), required=True, help="report folder")
@click.argument("recipe_args", nargs=-1, type=click.UNPROCESSED)
@click.pass_context
def migrate_cmd(ctx, src, rocm, source, archs, out, recipe_args):
    """Hipify SRC, compile it for each --arch in the dev image and write report.json / report.md to --out.

    Extra arguments (e.g. --baseline, --fail-on error, --jobs 2) go to the recipe.
    """
    from buildctl.engine import docker_client
    from buildctl.migrate import Mounts, annotate_report, check_paths, pick_dev_image, run_migrate

    project = _project(ctx)
    rocm = rocm or project.matrix.default.rocm
    selection = narrow_to_default_source(project, Selection((source,) if source else (), (rocm,), tuple(archs), ()))
    check_selection(project, selection)
    dev_cells = make_plan(project, Selection(selection.sources, (rocm,), (), ("dev",))).cells
    if not dev_cells:
        raise ConfigError(f"--rocm {rocm}: no dev image is planned for it (see `buildctl matrix --image dev`)")
    mounts = Mounts(*check_paths(src, out))
    client = docker_client()
    cell = pick_dev_image(client, list(dev_cells), list(archs))
    code, output = run_migrate(client, cell, mounts, list(archs), list(recipe_args))
    matched = annotate_report(project.root, mounts)
    if (mounts.out / "report.json").exists():
        click.echo(f"report: {mounts.out / 'report.html'} ({matched} failed compile result(s) matched "
                   f"the error case library)")
    if code != 0:
        _print_diagnosis(output)
        # The recipe's codes (docs/migrate.md): 1 the --fail-on threshold was met, 2 bad input; anything
        # else (hipcc missing, a crash, an OOM kill) is a failed recipe run (5).
        raise ChildExit(f"migrate recipe exited with status {code} in {cell.ref}",
                        code if code in (1, 2, 130) else 5)


def _print_diagnosis(text: str) -> None:
    """Run a failing log's tail through the error case library and print its matches."""
    from buildctl.doctor import diagnose, format_matches

    matches = diagnose("\n".join(text.splitlines()[-200:]))
    if matches:
        click.echo("rocmig doctor:\n" + format_matches(matches), err=True)


main.add_command(doctor)
main.add_command(kernels)
main.add_command(report_group)
main.add_command(review_cmd)
main.add_command(ci_group)


def exit_code(args: list[str] | None = None) -> int:
    """Run the CLI on `args` (default: sys.argv[1:]) and return its exit code (buildctl.errors): a
    RocmigError becomes one `buildctl: error: ...` line on stderr and its class's code, a click usage
    error click's message and 2, Ctrl-C 130."""
    try:
        # Without standalone mode click returns a command's ctx.exit(code) instead of exiting with it.
        code = main.main(args=args, standalone_mode=False)
    except (click.exceptions.Abort, KeyboardInterrupt):
        click.echo("buildctl: interrupted (Ctrl-C)", err=True)
        return EXIT_INTERRUPTED
    except click.ClickException as exc:
        exc.show()
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
