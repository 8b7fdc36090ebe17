"""The migrate recipe's own options as click options of `buildctl migrate` (kept out of
buildctl.migrate so that the CLI module imports them without the Docker SDK)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

# The recipe's own options (recipes/migrate/migrate/cli.py), shown by `buildctl migrate --help` and
# taken anywhere on the command line; tests/unit/test_migrate_host_cli.py keeps the two lists equal.
RECIPE_OPTIONS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("--jobs", {"type": int, "help": "parallel hipify / hipcc processes (default: the image's CPU count)"}),
    ("--baseline", {"is_flag": True, "default": False, "help": "also compile plain hipify-perl output, report the delta"}),
    ("--fail-on", {"type": click.Choice(["error", "warning", "never"]), "help": "exit 1 at open findings of this "
                   "severity or failed units (default: error)"}),
    ("--opt", {"type": click.Choice(["O0", "O1", "O2", "O3"]), "help": "optimization level of the compile check "
               "(default: O0; back-end failures are retried at O2)"}),
    ("--timeout", {"type": int, "help": "seconds per hipcc call (default: 900)"}),
    ("--max-file-bytes", {"type": int, "help": "larger sources are skipped (default: 8 MiB)"}),
    ("--hipcc-flag", {"multiple": True, "help": "extra hipcc flag (repeat), e.g. --hipcc-flag=-DBF16_AVAILABLE"}),
    ("--compile-commands", {"type": click.Path(dir_okay=False, path_type=Path),
                            "help": "compile_commands.json of a CMake or bear build: each unit's include folders and defines"}),
    ("--include-dir", {"multiple": True, "help": "include folder for every unit, relative to SRC (repeat)"}),
    ("--define", {"multiple": True, "help": "NAME or NAME=VALUE for every unit (repeat)"}),
    ("--undefine", {"multiple": True, "help": "NAME undefined for every unit and never inferred, e.g. the "
                    "project's own ROCm switch (repeat)"}),
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
