"""Terminal output of buildctl: live (colours, spinners, tables) in a terminal, plain and unwrapped in a pipe.

When the stream is not a TTY (a pipe, a CI log, a file), nothing is wrapped at 80 columns: messages are
printed as given, one per line, markup stripped; tables become tab-separated lines with a header row, so
`buildctl matrix | grep -c rocm7.2.4-gfx942-debian` counts cells and `cut -f` picks columns; spinners
become one line printed when the step starts. In a terminal, rich draws tables, colours and spinners.

Verbosity: `quiet` drops info lines (errors, warnings, tables and results stay), `verbose` adds detail
lines (every BuildKit progress line of a build, for example).
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

__all__ = ["UI", "buildctl_command", "escape", "plain"]


def buildctl_command(args: str) -> str:
    """`args` as a buildctl command line that runs this same buildctl when pasted in the current folder:
    `.venv/bin/buildctl ARGS` when started as the console script, else `.venv/bin/python -m buildctl ARGS`
    (the Python running now); paths below the current folder are relative. For hints in messages
    ("run `...`"): a bare `buildctl` may be BuildKit's client or not on PATH (README, "Which `buildctl`")."""
    script = Path(sys.argv[0])
    head = _here(script) if script.name == "buildctl" else f"{_here(Path(sys.executable))} -m buildctl"
    return f"{head} {args}"


def _here(path: Path) -> str:
    """path relative to the current folder when it lies below it, else absolute."""
    absolute = Path(os.path.abspath(path))
    try:
        return str(absolute.relative_to(Path.cwd()))
    except ValueError:
        return str(absolute)


def plain(markup: str) -> str:
    """`markup` (rich console markup, e.g. '[green]built[/]') as plain text ('built')."""
    return Text.from_markup(markup).plain


def _is_tty(stream: IO[str]) -> bool:
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


def _rich_console(stream: IO[str], tty: bool) -> Console:
    if tty:
        return Console(file=stream, highlight=False)
    # Not a terminal: no colour codes, no wrapping (soft_wrap), no width guess from COLUMNS.
    return Console(file=stream, highlight=False, soft_wrap=True, no_color=True, width=100_000,
                   force_terminal=False, force_interactive=False)


@dataclass
class UI:
    """One output channel (stdout for results, or stderr for progress), plain or live by the stream's TTY.

    stream: where to write (default: sys.stderr, evaluated at construction); quiet / verbose: see the
    module doc. tty: None = ask the stream.
    """

    stream: IO[str] = field(default_factory=lambda: sys.stderr)
    quiet: bool = False
    verbose: bool = False
    tty: bool | None = None
    rich: Console = field(init=False, repr=False)

    def __post_init__(self) -> None:
        if self.tty is None:
            self.tty = _is_tty(self.stream)
        self.rich = _rich_console(self.stream, self.tty)

    @classmethod
    def stdout(cls, quiet: bool = False, verbose: bool = False) -> UI:
        """A UI on sys.stdout (for results: tables, JSON, lines a pipe consumes)."""
        return cls(sys.stdout, quiet, verbose)

    @classmethod
    def stderr(cls, quiet: bool = False, verbose: bool = False) -> UI:
        """A UI on sys.stderr (for progress and messages, kept out of a pipe's data)."""
        return cls(sys.stderr, quiet, verbose)

    def with_stream(self, stream: IO[str]) -> UI:
        """The same verbosity on another stream."""
        return UI(stream, self.quiet, self.verbose)

    # -- lines --------------------------------------------------------------------------------------
    def _line(self, markup: str) -> None:
        if self.tty:
            self.rich.print(markup)
        else:
            self.stream.write(plain(markup) + "\n")
            self.stream.flush()

    def result(self, markup: str) -> None:
        """A line that is the command's answer: printed even with quiet."""
        self._line(markup)

    def info(self, markup: str) -> None:
        """A progress or status line (rich markup allowed): dropped with quiet."""
        if not self.quiet:
            self._line(markup)

    def detail(self, markup: str) -> None:
        """A line shown only with verbose."""
        if self.verbose:
            self._line(markup)

    def text(self, text: str) -> None:
        """Literal text (a log tail): no markup is interpreted, printed even with quiet."""
        if self.tty:
            self.rich.print(text, markup=False, highlight=False)
        else:
            self.stream.write(text + ("" if text.endswith("\n") else "\n"))
            self.stream.flush()

    # -- structure ----------------------------------------------------------------------------------
    def table(self, title: str, columns: Sequence[str], rows: Sequence[Sequence[str]]) -> None:
        """A table of rows (cells may hold rich markup). In a pipe: a '# title' line, a tab-separated
        header row, then one tab-separated line per row (tabs and newlines inside cells become spaces)."""
        if self.tty:
            table = Table(title=title)
            for col in columns:
                table.add_column(col, overflow="fold")
            for row in rows:
                table.add_row(*row)
            self.rich.print(table)
            return
        def clean(cell: str) -> str:
            return " ".join(plain(cell).split())
        lines = [f"# {title}", "\t".join(columns)] + ["\t".join(clean(c) for c in row) for row in rows]
        self.stream.write("\n".join(lines) + "\n")
        self.stream.flush()

    @contextlib.contextmanager
    def status(self, markup: str, defer: bool = False) -> Iterator[Callable[[str], None]]:
        """A long step: a spinner in a terminal, one line at its start in a pipe (dropped with quiet).

        Yields update(markup): in a terminal it replaces the spinner's text, in a pipe it prints a line
        (a step counter for CI logs). defer: in a pipe, the start line waits for the first update, so
        that a step refused before it makes progress prints only its error.
        """
        if self.tty and not self.quiet:
            with self.rich.status(markup) as spinner:
                yield lambda text: spinner.update(text)
            return
        if not defer:
            self.info(markup)
            yield self.info
            return
        started = False

        def update(text: str) -> None:
            nonlocal started
            if not started:
                self.info(markup)
                started = True
            self.info(text)
        yield update
