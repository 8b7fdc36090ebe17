"""The migrate recipe's own options as click options of `buildctl migrate` (kept out of
buildctl.migrate so that the CLI module imports them without the Docker SDK)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import click

from buildctl.errors import InputError

# The recipe's own options (recipes/migrate/migrate/cli.py), shown by `buildctl migrate --help` and
# taken anywhere on the command line; tests/unit/test_migrate_host_cli.py keeps the two lists equal.
RECIPE_OPTIONS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("--jobs", {"type": click.IntRange(min=1), "help": "parallel hipify / hipcc processes (default: the image's CPU count)"}),
    ("--baseline", {"is_flag": True, "default": False, "help": "also compile plain hipify-perl output, report the delta"}),
    ("--fail-on", {"type": click.Choice(["error", "warning", "never"]), "help": "exit 1 at open findings of this "
                   "severity or failed units (default: error)"}),
    ("--opt", {"type": click.Choice(["O0", "O1", "O2", "O3"]), "help": "optimization level of the compile check "
               "(default: O0; back-end failures are retried at O2)"}),
    ("--timeout", {"type": click.IntRange(min=1), "help": "seconds per hipcc call (default: 900)"}),
    ("--max-file-bytes", {"type": click.IntRange(min=1), "help": "larger sources are skipped (default: 8 MiB)"}),
    ("--hipcc-flag", {"multiple": True, "help": "extra hipcc flag (repeat), e.g. --hipcc-flag=-DBF16_AVAILABLE"}),
    ("--compile-commands", {"type": click.Path(dir_okay=False, path_type=Path),
                            "help": "compile_commands.json of a CMake or bear build: each unit's include folders and defines"}),
    ("--include-dir", {"multiple": True, "help": "include folder for every unit, relative to SRC (repeat)"}),
    ("--define", {"multiple": True, "help": "NAME or NAME=VALUE for every unit (repeat)"}),
    ("--undefine", {"multiple": True, "help": "NAME undefined for every unit and never inferred, e.g. the "
                    "project's own ROCm switch (repeat)"}),
    ("--only", {"multiple": True, "metavar": "GLOB", "help": "compile only the units whose path in SRC matches, e.g. "
                "--only='csrc/quantization/*' (repeat); the whole tree stays for includes"}),
)


def recipe_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """Add RECIPE_OPTIONS to a click command (their values arrive as keyword arguments)."""
    for flag, kwargs in reversed(RECIPE_OPTIONS):
        command = click.option(flag, **kwargs)(command)
    return command


def recipe_arguments(values: dict[str, Any]) -> list[str]:
    """The recipe's command-line arguments for the RECIPE_OPTIONS values click parsed (unset ones left out)."""
    args: list[str] = []
    for flag, kwargs in RECIPE_OPTIONS:
        value = values.get(flag.lstrip("-").replace("-", "_"))
        if kwargs.get("is_flag"):
            args += [flag] if value else []
        elif kwargs.get("multiple"):
            args += [f"{flag}={v}" for v in value or ()]
        elif value is not None:
            args += [flag, str(value)]
    return args


# Recipe options that take a path inside the image and so are not offered as click options; they pass through.
PASSTHROUGH = ("--arch-table",)


def passthrough_arguments(extra: tuple[str, ...], group_options: Mapping[str, str]) -> list[str]:
    """The command line's arguments that click did not parse, checked before the dev image is looked up:
    only PASSTHROUGH options (`--arch-table PATH` or `--arch-table=PATH`) may remain. group_options:
    buildctl's own options (`-q` -> `-q`, `--root` -> `--root ROOT`), which go before the subcommand.
    Raises InputError naming the first other argument (one of group_options and where it goes, an
    unknown option, a second SRC)."""
    args, i = list(extra), 0
    while i < len(args):
        flag = args[i].split("=", 1)[0]
        if flag in group_options:
            raise InputError(f"{flag}: an option of buildctl itself, before the subcommand: "
                             f"`buildctl {group_options[flag]} migrate SRC ...`")
        if flag not in PASSTHROUGH:
            what = "no such option of buildctl migrate" if args[i].startswith("-") else "unexpected argument (migrate takes one SRC)"
            raise InputError(f"{args[i]}: {what} (see `buildctl migrate --help`)")
        if "=" not in args[i] and (i + 1 == len(args) or args[i + 1].startswith("-")):
            raise InputError(f"{flag}: needs a value (a path inside the dev image)")
        i += 1 if "=" in args[i] else 2
    return args
