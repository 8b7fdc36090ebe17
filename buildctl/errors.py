"""Error classes of rocmig, one exit code each (documented in README.md, "Exit codes").

Every error carries a one-line message that names the file, the key or flag, and what is allowed.
"""


class RocmigError(Exception):
    """Base class: a failure reported to the user as one line, without a traceback."""

    exit_code = 1


class ConfigError(RocmigError):
    """matrix.yaml or an images/*/image.yaml is malformed, or a flag names an unknown value. Exit 2."""

    exit_code = 2


class InputError(RocmigError):
    """An input path (a CUDA tree, a log) is missing or unusable. Exit 2."""

    exit_code = 2


class EngineError(RocmigError):
    """No Docker engine answers, or buildx is missing. Exit 3."""

    exit_code = 3


class UnreachableError(RocmigError):
    """A base image, apt repository or registry the selection needs cannot be reached. Exit 4."""

    exit_code = 4


class BuildError(RocmigError):
    """`docker buildx bake` or a recipe run inside an image failed. Exit 5."""

    exit_code = 5
