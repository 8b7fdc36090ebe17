"""`buildctl doctor [LOG|-]`: name the known cause of a failing ROCm build or run log.

Exit codes (also in docs/doctor.md): 0 at least one catalog entry matched; 1 nothing matched;
2 bad input (LOG missing or unreadable, bad --limit, invalid catalog).
"""

from __future__ import annotations

import json
from pathlib import Path

import click

from buildctl.doctor import diagnose, format_matches
from buildctl.doctor.matcher import cached_catalog
from buildctl.doctor.models import CatalogError

EXIT_MATCH = 0
EXIT_NO_MATCH = 1
EXIT_BAD_INPUT = 2


def _read_log(log: str) -> str:
    """The text of LOG ('-' = stdin), undecodable bytes replaced. Raises OSError when LOG cannot be read."""
    if log == "-":
        return click.get_binary_stream("stdin").read().decode("utf-8", errors="replace")
    return Path(log).read_text(encoding="utf-8", errors="replace")


@click.command("doctor")
@click.argument("log", required=False, default="-", metavar="[LOG|-]")
@click.option("--json", "as_json", is_flag=True, help="print the matches as JSON (schema in docs/doctor.md)")
@click.option("--limit", type=click.IntRange(min=1), default=3, show_default=True,
              help="how many matches to show at most")
@click.pass_context
def doctor(ctx: click.Context, log: str, as_json: bool, limit: int) -> None:
    """Match a build or run LOG (or stdin) against rocmig's error case library.

    Prints the best matches with their score, the log lines that matched, the root cause, the fix and
    a command that checks the fix. Exit 0: matched; 1: no known cause; 2: bad input.
    """
    try:
        text = _read_log(log)
    except OSError as exc:
        click.echo(f"buildctl doctor: error: {log}: {exc.strerror or exc} (give a readable log file or '-' for stdin)",
                   err=True)
        ctx.exit(EXIT_BAD_INPUT)
    try:
        matches = diagnose(text, limit=limit)
        checked = len(cached_catalog())
    except CatalogError as exc:
        click.echo(f"buildctl doctor: error: {exc}", err=True)
        ctx.exit(EXIT_BAD_INPUT)
    name = "<stdin>" if log == "-" else log
    if as_json:
        doc = {"log": name, "catalog_entries": checked, "matches": [m.to_dict() for m in matches]}
        click.echo(json.dumps(doc, indent=2))
    elif matches:
        noun = "cause" if len(matches) == 1 else "causes"
        click.echo(f"rocmig doctor: {name}: {len(matches)} likely {noun}, best first")
        click.echo(format_matches(matches))
    else:
        click.echo(f"rocmig doctor: {name}: no known cause matched ({checked} catalog entries checked)")
    ctx.exit(EXIT_MATCH if matches else EXIT_NO_MATCH)
