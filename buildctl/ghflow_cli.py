"""Commands of the GitHub flow: `report hardware`, `review`, `ci render`.

Exit codes (README.md): 0 success; 1 the command's own negative result (`report hardware --run-tests`:
a GPU test failed; `review`: a finding of severity error; `ci render --check`: the workflows are stale);
2 bad input.
"""

from __future__ import annotations

import json
from pathlib import Path

import click

from buildctl.console import buildctl_command
from buildctl.errors import InputError, NegativeResult
from buildctl.results import document


@click.group("report")
def report_group() -> None:
    """Reports to paste into a pull request."""


@report_group.command("hardware")
@click.option("--json", "as_json", is_flag=True, help="print the report as JSON instead of Markdown")
@click.option("--run-tests", is_flag=True,
              help="also run `pytest -m amdgpu tests` (JUnit XML next to --out, or build/amdgpu-junit.xml) and, "
                   "on an AMD GPU, `buildctl kernels bench --quick --no-tune`")
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), help="write the report to FILE")
@click.pass_context
def report_hardware_cmd(ctx: click.Context, as_json: bool, run_tests: bool, out: Path | None) -> None:
    """GPU model, gfx arch, VRAM, CUs, driver, firmware, ROCm, OS, container: the PR's hardware report.

    Without an AMD GPU the report says so and the command succeeds.
    """
    from dataclasses import replace

    from buildctl.report_hw import collect, markdown, run_amdgpu_tests, run_kernels_bench

    if out is not None and not out.parent.is_dir():
        raise InputError(f"--out: folder {out.parent} does not exist")
    report = collect()
    if run_tests:
        folder = out.parent if out else ctx.obj["root"] / "build"
        report = replace(report, tests=run_amdgpu_tests(ctx.obj["root"], folder / "amdgpu-junit.xml"))
        if report.gpus and Path("/dev/kfd").exists():
            bench, why = run_kernels_bench(folder / "kernels-bench.json")
            report = replace(report, kernels_bench=str(bench) if bench else None,
                             notes=report.notes + ([why] if why else []))
        else:
            report = replace(report, notes=report.notes + ["kernels bench: not run (no AMD GPU)"])
    text = json.dumps(document("report-hardware", report.to_json()), indent=2) + "\n" if as_json else markdown(report)
    if out is not None:
        out.write_text(text)
        click.echo(f"report: {out}", err=True)
    else:
        click.echo(text, nl=False)
    t = report.tests
    if t is not None and (t.failures or t.errors or t.exit_code not in (0, None)):
        raise NegativeResult(f"pytest -m amdgpu: {t.failures} failed, {t.errors} errors (exit {t.exit_code}); "
                             f"JUnit XML: {t.path}")


def _default_base(repo: Path) -> str:
    """origin/main when the clone has it (CI), else main."""
    import subprocess

    found = subprocess.run(["git", "-C", str(repo), "rev-parse", "--verify", "--quiet", "origin/main^{commit}"],
                           capture_output=True, check=False).returncode == 0
    return "origin/main" if found else "main"


@click.command("review")
@click.argument("base", required=False)
@click.option("--repo", type=click.Path(file_okay=False, exists=True, path_type=Path), default=None,
              help="git work tree to review (default: the project root)")
@click.option("--format", "fmt", type=click.Choice(["text", "json", "github"]), default="text", show_default=True,
              help="github: workflow commands that annotate the pull request")
@click.option("--all-lines", is_flag=True, help="report every line of a touched file, not only the changed ones")
@click.pass_context
def review_cmd(ctx: click.Context, base: str | None, repo: Path | None, fmt: str, all_lines: bool) -> None:
    """Flag leftover CUDA dependencies and hard-coded platform paths in `git diff BASE` (default origin/main
    or main): the migrate scanner's rules on C/C++/CUDA/HIP files, buildctl/review_rules.yaml on build
    files and requirements. Exits 1 when a finding is an error."""
    from buildctl.load import load_project
    from buildctl.review import format_github, format_text, review

    project = load_project(ctx.obj["root"])
    repo = repo or project.root
    base = base or _default_base(repo)
    findings = review(project, repo, base, all_lines)
    if fmt == "json":
        click.echo(json.dumps(document("review", {"base": base, "findings": [f.to_json() for f in findings]}), indent=2))
    else:
        click.echo((format_github if fmt == "github" else format_text)(findings), nl=False)
    errors = sum(f.severity == "error" for f in findings)
    click.echo(f"review against {base}: {errors} error(s), {len(findings) - errors} other finding(s)", err=True)
    if errors:
        raise NegativeResult(f"review: {errors} leftover CUDA dependenc{'y' if errors == 1 else 'ies'} or "
                             "platform path(s) on changed lines")


@click.group("ci")
def ci_group() -> None:
    """GitHub Actions workflows generated from the plan."""


@ci_group.command("render")
@click.option("--check", is_flag=True, help="write nothing; exit 1 when a workflow differs from a fresh render")
@click.pass_context
def ci_render_cmd(ctx: click.Context, check: bool) -> None:
    """Write .github/workflows/*.yml (pr, matrix, gpu, nightly, release) from matrix.yaml and images/."""
    from buildctl.ci import stale_workflows, write_workflows
    from buildctl.load import load_project

    project = load_project(ctx.obj["root"])
    if check:
        stale = stale_workflows(project)
        if stale:
            raise NegativeResult(f"stale generated workflows: {', '.join(stale)}: run `{buildctl_command('ci render')}`")
        click.echo("workflows are current", err=True)
        return
    for path in write_workflows(project):
        click.echo(path)


@click.command("support")
@click.option("--write", is_flag=True, help="write docs/support.md")
@click.option("--check", is_flag=True, help="exit 1 when docs/support.md differs from matrix.yaml")
@click.pass_context
def support_cmd(ctx: click.Context, write: bool, check: bool) -> None:
    """Print (or --write / --check) docs/support.md: each ROCm release's and arch's support status and dates."""
    from buildctl.lifecycle import SUPPORT_DOC, support_markdown, write_support_doc
    from buildctl.load import load_project

    if write and check:
        raise click.UsageError("--write and --check exclude each other: give one", ctx)
    project = load_project(ctx.obj["root"])
    if write:
        click.echo(write_support_doc(project))
    elif check:
        path = project.root / SUPPORT_DOC
        if not path.exists() or path.read_text() != support_markdown(project):
            raise NegativeResult(f"{path} is stale: run `{buildctl_command('support --write')}`")
    else:
        click.echo(support_markdown(project), nl=False)


@click.command("bump")
@click.argument("source")
@click.argument("version")
@click.option("--from", "from_line", metavar="X.Y", help="the release line to copy (default: the nearest older line)")
@click.option("--dry-run", is_flag=True, help="print what would change; write nothing")
@click.pass_context
def bump_cmd(ctx: click.Context, source: str, version: str, from_line: str | None, dry_run: bool) -> None:
    """Add ROCm VERSION (X.Y.Z) of SOURCE to matrix.yaml, copied from the nearest release, comments and order
    kept; validate it and print what a human must confirm. A version matrix.yaml has exits 2."""
    from buildctl.bump import apply_bump, plan_bump, validate

    root = ctx.obj["root"]
    if dry_run:
        bump = plan_bump((root / "matrix.yaml").read_text(), source, version, from_line)
        validate(root, bump.text)
    else:
        bump = apply_bump(root, source, version, from_line)
    click.echo(("would change " if dry_run else "matrix.yaml: ") + bump.summary)
    click.echo("confirm by hand before merging:")
    for item in bump.confirm:
        click.echo(f"  - {item}")
    line = ".".join(version.split(".")[:2])
    then = [f"plan --check-pins --source {source} --rocm {line} --all", "ci render", "tags --write", "support --write"]
    click.echo(f"then: {'; '.join(buildctl_command(c) for c in then)} (docs/maintenance.md)")


@click.command("releases")
@click.option("--markdown", "markdown_out", type=click.Path(dir_okay=False, path_type=Path),
              help="also write the report as Markdown (the nightly workflow's issue body) to FILE")
@click.option("--json", "as_json", is_flag=True, help="print the findings as JSON")
@click.pass_context
def releases_cmd(ctx: click.Context, markdown_out: Path | None, as_json: bool) -> None:
    """Look up AMD's apt repository, PyTorch's ROCm wheels and TheRock's index for ROCm releases newer than
    matrix.yaml's (network). Exits 1 when one is found; an index that does not answer is reported as not
    checked."""
    from dataclasses import asdict

    from buildctl.load import load_project
    from buildctl.releases import markdown, newer_releases

    if markdown_out is not None and not markdown_out.parent.is_dir():
        raise InputError(f"--markdown: folder {markdown_out.parent} does not exist")
    found, unchecked = newer_releases(load_project(ctx.obj["root"]))
    text = markdown(found, unchecked)
    if markdown_out is not None:
        markdown_out.write_text(text)
    if as_json:
        click.echo(json.dumps(document("releases", {"found": [asdict(f) for f in found],
                                                   "unchecked": [asdict(u) for u in unchecked]}), indent=2))
    else:
        click.echo(text, nl=False)
    if found:
        raise NegativeResult(f"{len(found)} ROCm release(s) newer than matrix.yaml: "
                             + ", ".join(f"{f.source} {f.version}" for f in found))
