"""Errors of the migrate recipe, one exit code each (documented in docs/migrate.md, "Exit codes").

Each error carries one line that names the path or flag at fault and what is allowed.
"""


class MigrateError(Exception):
    """Base class: reported to the user as one line, without a traceback."""

    exit_code = 1


class InputError(MigrateError):
    """Bad input: missing path, no CUDA sources, binary / non-UTF-8 / oversized file, symlink loop,
    unknown arch, bad flag value. Exit 2."""

    exit_code = 2


class ToolError(MigrateError):
    """A tool the recipe needs (hipify-perl, hipcc) is missing or unusable. Exit 3."""

    exit_code = 3
