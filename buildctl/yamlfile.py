"""The one YAML reader of buildctl (matrix.yaml, image.yaml, the doctor catalog, scanner rules).

One error format for every file: `FILE: file not found`, `FILE: cannot read: <reason>`,
`FILE:LINE:COLUMN: YAML syntax error: <problem>`; the schema errors that follow use `FILE: KEY.PATH: ...`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from buildctl.errors import ConfigError


def read_yaml(path: Path, error: type[ConfigError] = ConfigError) -> Any:
    """The parsed content of the YAML file `path` (yaml.safe_load: plain data, no tags).

    error: the ConfigError subclass to raise (e.g. the doctor's CatalogError). Raises it, with one line in
    the format above, when the file is missing, unreadable or not valid YAML.
    """
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise error(f"{path}: file not found") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise error(f"{path}: cannot read: {getattr(exc, 'strerror', None) or exc}") from None
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f":{mark.line + 1}:{mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise error(f"{path}{where}: YAML syntax error: {problem}") from None
