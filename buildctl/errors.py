"""Every error class of rocmig and its exit code: the one contract README.md's "Exit codes" table documents.

| code | class                                   | meaning                                                     |
|------|-----------------------------------------|-------------------------------------------------------------|
| 0    | (success)                               |                                                             |
| 1    | NegativeResult                          | the command's own negative result (doctor matched nothing,  |
|      |                                         | migrate met --fail-on, a --check found a stale page)        |
| 2    | ConfigError, InputError, CredentialsError | bad input: matrix.yaml / image.yaml / a template, a flag,  |
|      |                                         | a path, a pin, registry credentials                         |
| 3    | EngineError                             | no Docker engine answers, or buildx is missing              |
| 4    | UnreachableError                        | a base image, apt repository or registry does not answer    |
| 5    | BuildError                              | a build or a recipe run failed, or a needed image is absent |
| 6    | RegistryError, DigestMismatchError      | a registry failed on its side, a digest differs, a cell was |
|      |                                         | not promoted                                                |
| 130  | Interrupted                             | Ctrl-C (SIGINT): 128 + signal 2, as shells report it        |

Every error carries a one-line message that names the file, the key or flag, and what is allowed.
`buildctl.cli.exit_code` prints it as `buildctl: error: <message>` and returns the class's code; no command
calls sys.exit.
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_NEGATIVE = 1
EXIT_BAD_INPUT = 2
EXIT_ENGINE = 3
EXIT_UNREACHABLE = 4
EXIT_BUILD = 5
EXIT_REGISTRY = 6
EXIT_INTERRUPTED = 130


class RocmigError(Exception):
    """Base class: a failure reported to the user as one line, without a traceback. Exit 1."""

    exit_code = EXIT_NEGATIVE


class NegativeResult(RocmigError):
    """The command ran and its answer is no (doctor matched nothing, migrate met --fail-on). Exit 1."""

    exit_code = EXIT_NEGATIVE


class ConfigError(RocmigError):
    """matrix.yaml, an images/*/image.yaml or a template is malformed, or a flag names an unknown value. Exit 2."""

    exit_code = EXIT_BAD_INPUT


class InputError(RocmigError):
    """An input path (a CUDA tree, a log, an output folder) is missing or unusable. Exit 2."""

    exit_code = EXIT_BAD_INPUT


class CredentialsError(InputError):
    """The registry refused the credentials, or wants some and none were given. Exit 2."""


class EngineError(RocmigError):
    """No Docker engine answers, or buildx is missing. Exit 3."""

    exit_code = EXIT_ENGINE


class UnreachableError(RocmigError):
    """A base image, apt repository or registry the selection needs cannot be reached. Exit 4."""

    exit_code = EXIT_UNREACHABLE


class BuildError(RocmigError):
    """`docker buildx bake` or a recipe run inside an image failed, or the image it needs is absent. Exit 5."""

    exit_code = EXIT_BUILD


class RegistryError(RocmigError):
    """The registry refused an operation for good (full disk, bad request), or a pushed image failed. Exit 6."""

    exit_code = EXIT_REGISTRY


class DigestMismatchError(RegistryError):
    """The digest pulled back differs from the digest pushed. Exit 6."""


class Interrupted(RocmigError):
    """The user pressed Ctrl-C (SIGINT). Exit 130."""

    exit_code = EXIT_INTERRUPTED


class ChildExit(RocmigError):
    """A recipe or module run as a child process exited non-zero; its own exit code is passed on.

    exit_code is set per instance: the child's status when it is one of the documented codes (1-6, 130),
    else 5 (a crash or a kill is a failed recipe run).
    """

    DOCUMENTED = frozenset({EXIT_NEGATIVE, EXIT_BAD_INPUT, EXIT_ENGINE, EXIT_UNREACHABLE, EXIT_BUILD,
                            EXIT_REGISTRY, EXIT_INTERRUPTED})

    def __init__(self, message: str, child_code: int):
        super().__init__(message)
        self.child_code = child_code
        self.exit_code = child_code if child_code in self.DOCUMENTED else EXIT_BUILD
