"""Every buildctl command in a code block of README.md, CONTRIBUTING.md and docs/ runs when pasted after
README's setup (`make venv`, nothing activated): it is called as `.venv/bin/python -m buildctl` (or
`.venv/bin/buildctl`), its subcommand exists and every flag it names is one of that subcommand's options.

Flags are checked against the Click command tree itself, so a renamed or removed option fails here."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import click
import pytest

from buildctl.cli import main

ROOT = Path(__file__).resolve().parents[2]
RUNNABLE = (".venv/bin/python -m buildctl", ".venv/bin/buildctl")
# `buildctl` (or `python -m buildctl`) where a shell reads a command word: line start, after env
# assignments, `|`, `&&`, `;` or `$(`. A path such as buildctl/cli.py is not a command.
COMMAND = re.compile(r"(?:^|[|;&(]\s*|^\s*(?:\w+=\S*\s+)+)((?:\S*python3?\s+-m\s+)?\S*buildctl)(?=\s+[a-z-])")


def _documents() -> list[Path]:
    return [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *sorted((ROOT / "docs").glob("**/*.md"))]


def _commands(doc: Path) -> list[tuple[int, str, str]]:
    """(line number, invocation, the rest of the command) for each buildctl command in doc's code blocks;
    shell comments and trailing `\\` continuations are joined/dropped first."""
    found, in_block, pending = [], False, ""
    for number, line in enumerate(doc.read_text(encoding="utf-8").splitlines(), 1):
        if line.lstrip().startswith("```"):
            in_block, pending = not in_block, ""
            continue
        if not in_block:
            continue
        code = pending + re.sub(r"(^|\s)#.*$", "", line)
        if code.rstrip().endswith("\\"):
            pending = code.rstrip()[:-1] + " "
            continue
        pending = ""
        for piece in re.split(r"\s*(?:\|\||&&|[|;])\s*", code):
            match = COMMAND.search(piece)
            if match:
                found.append((number, match.group(1), piece[match.end(1):]))
    return found


CASES = [(doc, *cmd) for doc in _documents() for cmd in _commands(doc)]


def test_the_docs_document_commands() -> None:
    """The scan finds the documented commands (an empty scan would pass everything below)."""
    docs = {doc.name for doc, *_ in CASES}
    assert {"README.md", "build-engine.md", "doctor.md", "maintenance.md", "compare.md"} <= docs, docs
    assert len(CASES) >= 30


def _command(args: list[str]) -> tuple[click.Command, list[str]]:
    """The subcommand that args name and the arguments left for it (group options before it skipped)."""
    command: click.Command = main
    rest = list(args)
    while isinstance(command, click.Group):
        while rest and rest[0].startswith("-"):
            rest.pop(0)
        if not rest or rest[0] not in command.commands:
            break
        command = command.commands[rest.pop(0)]
    return command, rest


@pytest.mark.parametrize(("doc", "line", "invocation", "rest"), CASES,
                         ids=[f"{d.relative_to(ROOT)}:{n}" for d, n, *_ in CASES])
def test_command_runs_as_pasted(doc: Path, line: int, invocation: str, rest: str) -> None:
    where = f"{doc.relative_to(ROOT)}:{line}"
    if "compare.md" in where and "h200.json" in rest:
        pytest.skip("the record of a run on a lent machine (PYTHONPATH, no venv), not a command to paste")
    assert invocation in RUNNABLE, f"{where}: `{invocation}` is not on PATH after `make venv`; write {RUNNABLE[0]}"
    words = [w for w in shlex.split(re.sub(r"\[([^\]]*)\]", r"\1", rest)) if w != "..."]
    command, args = _command(words)
    assert command is not main, f"{where}: `{rest.strip()}` names no buildctl subcommand"
    if isinstance(command, click.Group):
        assert not args or args[0].startswith("-"), f"{where}: {command.name} has no subcommand {args[0]!r}"
    if any(p.nargs == -1 and isinstance(p.type, click.types.UnprocessedParamType) for p in command.params):
        return  # migrate: the recipe's own flags pass through
    known = {opt for p in command.params for opt in (*p.opts, *p.secondary_opts)} | {"--help"}
    for word in args:
        flag = word.split("=", 1)[0]
        if flag.startswith("-") and flag != "-":
            assert flag in known, f"{where}: `{command.name}` has no option {flag} (it has {sorted(known)})"


def test_hints_in_messages_run_when_pasted(tmp_path: Path) -> None:
    """A "run `...`" hint names this buildctl as it was started (here `<venv python> -m buildctl`), so the
    pasted line runs ours: checked on a stale docs/tags.md of a copy, by running the hint's command."""
    import shutil
    import subprocess
    import sys

    copy = tmp_path / "project"
    for part in ("images", "templates"):
        shutil.copytree(ROOT / part, copy / part)
    shutil.copy(ROOT / "matrix.yaml", copy / "matrix.yaml")
    (copy / "docs").mkdir()
    (copy / "docs" / "tags.md").write_text("stale\n")
    proc = subprocess.run([sys.executable, "-m", "buildctl", "--root", str(copy), "tags", "--check"], cwd=copy,
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 1, proc.stderr
    hint = re.search(r"run `([^`]+)`", proc.stderr)
    assert hint, proc.stderr
    words = shlex.split(hint.group(1))
    assert words[1:3] == ["-m", "buildctl"] and Path(copy, words[0]).resolve() == Path(sys.executable).resolve()
    rerun = subprocess.run(words, cwd=copy, capture_output=True, text=True, check=False)
    assert rerun.returncode == 0, rerun.stderr
    assert (copy / "docs" / "tags.md").read_text() != "stale\n"
