"""`buildctl doctor [LOG|-]`: name the known cause of a failing ROCm build or run log.

Exit codes (also in docs/doctor.md): 0 at least one catalog entry matched; 1 nothing matched;
2 bad input (LOG missing, unreadable, not text or empty, bad --limit, invalid catalog).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import sys
from collections.abc import Callable, Iterator
from typing import BinaryIO

import click

from buildctl import results
from buildctl.console import UI
from buildctl.doctor import diagnose, format_matches
from buildctl.doctor.advice import collect_next
from buildctl.doctor.matcher import cached_catalog
from buildctl.doctor.models import CatalogError
from buildctl.doctor.reading import BinaryInput, LogText, read_stream
from buildctl.errors import EXIT_BAD_INPUT
from buildctl.errors import EXIT_NEGATIVE as EXIT_NO_MATCH
from buildctl.errors import EXIT_OK as EXIT_MATCH

# Inputs at least this large (or of unknown size: a pipe) take a second or more to read and match.
PROGRESS_MIN_BYTES = 4 << 20


def _read_log(log: str, progress: Callable[[int], None] | None = None) -> LogText:
    """LOG ('-' = stdin) as read_stream keeps it. Raises OSError (unreadable) or BinaryInput (not text)."""
    if log == "-":
        stdin: BinaryIO = sys.stdin.buffer
        # A terminal's end of input (Ctrl-D) is not sticky: read it in one call, text typed or pasted is small.
        return read_stream(io.BytesIO(stdin.read()) if stdin.isatty() else stdin, progress)
    with open(log, "rb") as stream:
        return read_stream(stream, progress)


@contextlib.contextmanager
def _progress(log: str, name: str) -> Iterator[Callable[[str], None]]:
    """A spinner on stderr while a large log (or a pipe) is read and matched, in a terminal only: nothing
    is written when stderr is not a terminal, or for a small file (done in well under a second)."""
    ui = UI.stderr()
    try:
        small = log != "-" and os.path.getsize(log) < PROGRESS_MIN_BYTES
    except OSError:
        small = True  # the open below reports it
    if not ui.tty or small or (log == "-" and sys.stdin.isatty()):
        yield lambda _text: None
        return
    with ui.status(f"reading {name}") as update:
        yield update


@click.command("doctor")
@click.argument("log", required=False, default="-", metavar="[LOG|-]")
@click.option("--json", "as_json", is_flag=True, help="print the matches as JSON (schema in docs/doctor.md)")
@click.option("--limit", type=click.IntRange(min=1), default=3, show_default=True,
              help="how many matches to show at most")
@click.pass_context
def doctor(ctx: click.Context, log: str, as_json: bool, limit: int) -> None:
    """Match a build or run LOG (or stdin) against rocmig's error case library.

    Prints the best matches with their score and confidence, the evidence (log lines, error signatures,
    text similarity), the root cause, the fix, commands that confirm the cause and one that checks the
    fix; with no match, what to collect next. Logs of any size are read in bounded memory (beyond 5 MiB:
    head, tail and the error lines between). Exit 0: matched; 1: no known cause; 2: bad input (also an empty log).
    """
    name = "<stdin>" if log == "-" else log
    if log == "-" and sys.stdin.isatty():
        click.echo("rocmig doctor: reading the log from stdin (end with Ctrl-D; or give a file: "
                   "buildctl doctor build.log)", err=True)
    with _progress(log, name) as update:
        try:
            text = _read_log(log, lambda n: update(f"reading {name}: {n >> 20} MiB"))
        except OSError as exc:
            click.echo(f"buildctl: error: {log}: {exc.strerror or exc} (give a readable log file or '-' for stdin)",
                       err=True)
            ctx.exit(EXIT_BAD_INPUT)
        except BinaryInput as exc:
            click.echo(f"buildctl: error: {name}: not a text log: {exc}", err=True)
            ctx.exit(EXIT_BAD_INPUT)
        if not any(line.strip() for line in text.lines):
            click.echo(f"buildctl: error: {name}: the log is empty ({text.total_bytes} bytes, no non-blank line); "
                       "give the failing build or run log", err=True)
            ctx.exit(EXIT_BAD_INPUT)
        update(f"matching {name} against the error case library")
        try:
            matches = diagnose(text, limit=limit)
            checked = len(cached_catalog())
        except CatalogError as exc:
            click.echo(f"buildctl: error: {exc}", err=True)
            ctx.exit(EXIT_BAD_INPUT)
    if text.note:
        click.echo(f"rocmig doctor: {text.note}", err=True)
    if as_json:
        body: dict[str, object] = {"log": name, "catalog_entries": checked, "lines": text.total_lines,
                                    "lines_searched": len(text.lines),
                                    "matches": [m.to_dict() for m in matches]}
        if not matches:
            kind, collect = collect_next(text.lines)
            body["collect_next"] = {"log_kind": kind, "items": list(collect)}
        click.echo(json.dumps(results.document("doctor", body), indent=2))
    elif matches:
        noun = "cause" if len(matches) == 1 else "causes"
        click.echo(f"rocmig doctor: {name}: {len(matches)} likely {noun}, best first")
        click.echo(format_matches(matches))
    else:
        click.echo(f"rocmig doctor: {name}: no known cause matched ({checked} catalog entries checked)")
        kind, collect = collect_next(text.lines)
        click.echo(f"this looks like a {kind} log; collect next and run the doctor on it again:"
                   if kind != "unknown" else "collect next and run the doctor on it again:")
        for item in collect:
            click.echo(f"  - {item}")
    ctx.exit(EXIT_MATCH if matches else EXIT_NO_MATCH)
