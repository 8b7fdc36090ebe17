"""Every `--json` result of buildctl is one JSON document on stdout with the envelope of buildctl.results
(`schema_version`, `kind`), whatever the command prints on stderr; cells carry their coordinates."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from buildctl.results import SCHEMA_VERSION

ROOT = Path(__file__).resolve().parents[2]
COORDINATES = {"image", "source", "rocm", "full", "arch", "ref", "tag"}


def _docker_answers() -> bool:
    return subprocess.run(["docker", "info"], capture_output=True, check=False).returncode == 0


# (arguments, kind, key holding the cells or None, needs a Docker engine)
CASES = [
    (["matrix", "--json"], "matrix", "cells", False),
    (["matrix", "--all", "--json"], "matrix", "cells", False),
    (["tags", "--json"], "tags", "cells", False),
    (["plan", "--json"], "plan", "cells", True),
    (["build", "--dry-run", "--json"], "plan", "cells", True),
    (["report", "hardware", "--json"], "report-hardware", None, False),
    (["review", "HEAD", "--format", "json"], "review", None, False),
    (["kernels", "configs", "--json"], "kernel-configs", None, False),
    (["doctor", "--json", "buildctl/doctor/fixtures/aiter-on-radeon-unsupported.log"], "doctor", None, False),
]


@pytest.mark.parametrize(("args", "kind", "cells", "docker"), CASES, ids=[" ".join(c[0]) for c in CASES])
def test_json_result_has_the_envelope(args: list[str], kind: str, cells: str | None, docker: bool) -> None:
    if docker and not _docker_answers():
        pytest.skip("no Docker engine answers (plan reads the local images)")
    proc = subprocess.run([sys.executable, "-m", "buildctl", *args], cwd=ROOT, capture_output=True, text=True,
                          check=False, timeout=300)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert list(doc)[:2] == ["schema_version", "kind"], list(doc)[:4]
    assert doc["schema_version"] == SCHEMA_VERSION and doc["kind"] == kind
    if cells is not None:
        assert doc[cells], f"{args}: no cells"
        for cell in doc[cells]:
            assert COORDINATES <= set(cell), f"{args}: a cell lacks {COORDINATES - set(cell)}"
