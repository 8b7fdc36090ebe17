"""`buildctl matrix bump` on a copy of the project: a new line is inserted in order with everything else
of matrix.yaml byte-identical (comments, flow style, quotes), it validates and plans, a patch release
changes one line, an existing version or bad input exits 2 with the file untouched."""

from __future__ import annotations

import difflib
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from buildctl.bump import plan_bump, validate
from buildctl.errors import ConfigError
from buildctl.load import load_project
from buildctl.plan import Selection, make_plan

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    for part in ("images", "templates"):
        shutil.copytree(ROOT / part, root / part)
    shutil.copy(ROOT / "matrix.yaml", root / "matrix.yaml")
    return root


def bump(root: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "buildctl", "--root", str(root), "matrix", "bump", *args],
                          capture_output=True, text=True, check=False)


def changes(before: str, after: str) -> list[str]:
    return [line for line in difflib.ndiff(before.splitlines(), after.splitlines()) if line[:2] in ("- ", "+ ")]


def test_round_trip_keeps_matrix_yaml_byte_for_byte():
    """The YAML library writes back what it read: the precondition for a bump touching nothing else."""
    import io

    from buildctl.bump import _yaml

    text = (ROOT / "matrix.yaml").read_text()
    y = _yaml()
    out = io.StringIO()
    y.dump(y.load(text), out)
    assert out.getvalue() == text


def test_new_line_is_inserted_after_the_newest_and_validates(project):
    before = (project / "matrix.yaml").read_text()
    proc = bump(project, "amd", "7.3.0")
    assert proc.returncode == 0, proc.stderr
    after = (project / "matrix.yaml").read_text()
    diff = changes(before, after)
    assert diff and all(line.startswith("+ ") for line in diff), "only added lines: comments and order kept"
    m = load_project(project).matrix
    new = next(r for r in m.rocm if (r.source, r.version) == ("amd", "7.3"))
    old = next(r for r in m.rocm if (r.source, r.version) == ("amd", "7.2"))
    assert new.full == "7.3.0" and new.torch.index == "rocm7.3" and new.support.status == "supported"
    assert new.packages == old.packages and new.ubuntu == old.ubuntu
    versions = [r.version for r in m.rocm if r.source == "amd"]
    assert versions.index("7.3") == versions.index("7.2") + 1
    assert make_plan(load_project(project), Selection(("amd",), ("7.3",), ("gfx942",), ())).cells
    assert "torch pins copied from amd 7.2" in proc.stdout and "rocm7.3" in proc.stdout


def test_line_between_existing_lines_keeps_the_order_and_from_picks_the_copy(project):
    proc = bump(project, "amd", "6.5.0", "--from", "6.3")
    assert proc.returncode == 0, proc.stderr
    m = load_project(project).matrix
    amd = [r for r in m.rocm if r.source == "amd"]
    assert [r.version for r in amd] == sorted((r.version for r in amd), key=lambda v: tuple(map(int, v.split("."))))
    new = next(r for r in amd if r.version == "6.5")
    assert new.ubuntu == "22.04", "copied from 6.3 (--from), not from the nearest 6.4"


def test_patch_release_changes_one_line(project):
    before = (project / "matrix.yaml").read_text()
    assert bump(project, "debian", "7.2.5").returncode == 0
    diff = changes(before, (project / "matrix.yaml").read_text())
    assert diff == ["-     full: 7.2.4", "+     full: 7.2.5"]


@pytest.mark.parametrize("args, message", [
    (("amd", "7.2.4"), "already ROCm 7.2.4"),
    (("amd", "7.3"), "not a full release X.Y.Z"),
    (("cuda", "12.4.0"), "SOURCE: 'cuda' has no release"),
    (("amd", "7.3.0", "--from", "9.9"), "--from: amd has no line 9.9"),
    (("debian", "7.2.1"), "older than rocm[debian 7.2].full 7.2.4"),
])
def test_bad_bumps_exit_2_and_leave_the_file(project, args, message):
    before = (project / "matrix.yaml").read_bytes()
    proc = bump(project, *args)
    assert proc.returncode == 2 and message in proc.stderr, proc.stderr
    assert (project / "matrix.yaml").read_bytes() == before


def test_validation_names_the_key_without_the_temporary_folder(project):
    text = plan_bump((project / "matrix.yaml").read_text(), "amd", "7.3.0").text
    broken = text.replace('    ubuntu: "24.04"\n', '    ubuntu: "23.10"\n', 1)
    with pytest.raises(ConfigError) as exc:
        validate(project, broken)
    assert "does not validate" in str(exc.value) and "ubuntu" in str(exc.value) and "rocmig-bump-" not in str(exc.value)


MATRIX = """\
tools: &venv_tools [pip==25.3]
rocm:
  - source: amd
    version: "7.2"
    full: 7.2.4   # the last 7.2 release
    ubuntu: "24.04"
    # torch 2.11.0+rocm7.2 pulls triton-rocm 3.6.0
    # (SGLang's Dockerfile).
    torch: {index: rocm7.2, torch: 2.11.0, tools: *venv_tools}
    packages:
      # every library hipify maps to
      dev: [hipcc]
  - source: therock
    version: "10.0"
    full: 10.0.0
    therock: {sdk: 10.0.0, torch: 2.11.0+rocm10.0.0}
"""


def test_copied_comments_naming_the_old_line_are_dropped_and_listed():
    """A comment that names the copied line (7.2, 7.2.4, rocm7.2) would state the old release's facts in the
    new entry: it is dropped there, kept on the old entry, and the confirm list quotes it. Other comments
    and anchors (`*venv_tools`) are copied as they are."""
    result = plan_bump(MATRIX, "amd", "7.3.0")
    new = result.text.split('version: "7.3"', 1)[1].split("- source: therock", 1)[0]
    assert "rocm7.2" not in new and "SGLang" not in new and "last 7.2" not in new, new
    assert "# every library hipify maps to" in new and "tools: *venv_tools}" in new
    assert result.text.count("# torch 2.11.0+rocm7.2 pulls triton-rocm 3.6.0") == 1, "the old entry keeps it"
    quoted = [c for c in result.confirm if c.startswith("dropped a comment")]
    assert len(quoted) == 2, result.confirm
    assert "torch 2.11.0+rocm7.2 pulls triton-rocm 3.6.0 (SGLang's Dockerfile)." in quoted[1] + quoted[0]
    assert any("the last 7.2 release" in c for c in quoted)
    # what remains parses to the same new release
    from ruamel.yaml import YAML

    entry = YAML(typ="safe").load(result.text)["rocm"][1]
    assert entry["full"] == "7.3.0" and entry["torch"]["tools"] == ["pip==25.3"] and entry["packages"]["dev"] == ["hipcc"]


def test_therock_pins_are_listed_for_confirmation():
    confirm = plan_bump(MATRIX, "therock", "10.1.0").confirm
    assert any("therock pins copied from therock 10.0" in c and "sdk 10.0.0" in c for c in confirm), confirm
