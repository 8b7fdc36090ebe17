"""Which load generator drives a `bench serve` run: AIPerf where it is installed (the host, CI, the lent
H200: Python 3.11 to 3.13), GuideLLM where AIPerf cannot be (the debian lane's serve image, Python 3.14).
docs/compare.md compares the candidates; both are driven the same way, one run per concurrency level."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from buildctl.bench import guidellm, loadgen
from buildctl.bench.loadgen import LevelRequest
from buildctl.bench.runfile import Level, Memory
from buildctl.errors import InputError

NAMES = ("auto", "aiperf", "guidellm")


@dataclass(frozen=True)
class LoadGenerator:
    """One load generator: `version()` names it (raises InputError when it is not installed), `run_level`
    runs one level (request, artifacts folder, log file, temporary folder) and returns its parsed output,
    `parse_export` turns that output into a `Level`."""

    name: str
    version: Callable[[], str]
    run_level: Callable[[LevelRequest, Path, Path, Path], dict[str, Any]]
    parse_export: Callable[[dict[str, Any], int, Memory | None], Level]


GENERATORS = {
    "aiperf": LoadGenerator("aiperf", loadgen.version, loadgen.run_level, loadgen.parse_export),
    "guidellm": LoadGenerator("guidellm", guidellm.version, guidellm.run_level, guidellm.parse_export),
}


def pick(name: str) -> tuple[LoadGenerator, str]:
    """The generator for --load-generator `name` and its version line (`aiperf 0.13.0`).

    `auto` takes AIPerf when it is installed, else GuideLLM.

    Raises:
        InputError: the named generator is not installed; for `auto`, neither is.
    """
    if name != "auto":
        gen = GENERATORS[name]
        return gen, gen.version()
    for gen in GENERATORS.values():
        try:
            return gen, gen.version()
        except InputError:
            continue
    raise InputError("--load-generator auto: neither AIPerf (pip install 'rocmig[bench]') nor GuideLLM "
                     "(pip install guidellm) is installed in this environment")
