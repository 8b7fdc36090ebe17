"""The exit contract (README "Exit codes", buildctl/errors.py) through the console entry point, as a shell
sees it: every subcommand's documented bad inputs give their code and one `buildctl: error: ` line on stderr
(with -q, which drops the progress lines; `warning:` lines, such as a deprecated ROCm line's, may come before it), never a
traceback."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from buildctl import errors

ROOT = Path(__file__).resolve().parents[2]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _run(*args: str, cwd: Path = ROOT, timeout: int = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "buildctl", "-q", *args], capture_output=True, text=True,
                          cwd=cwd, timeout=timeout, env={**os.environ, "PYTHONPATH": str(ROOT)})


def _docker_answers() -> bool:
    return subprocess.run(["docker", "info"], capture_output=True).returncode == 0


# (arguments, exit code, text the one line must hold). {tmp} is a fresh folder, {port} a closed port.
CASES = [
    (["matrix", "--rocm", "9.9"], 2, "--rocm: unknown value '9.9'"),
    (["matrix", "--arch", "gfx943"], 2, "did you mean gfx942?"),
    (["matrix", "--arch", "gfx942,,gfx1100"], 2, "--arch: empty value in 'gfx942,,gfx1100'"),
    (["matrix", "--image", "srve"], 2, "did you mean serve?"),
    (["matrix", "--source", "nvidia"], 2, "--source: unknown value 'nvidia'"),
    (["matrix", "--no-such-flag"], 2, "No such option"),
    (["matrix", "-v"], 2, "-v is an option of buildctl itself, before the subcommand: `buildctl -v matrix ...`"),
    (["matrix", "bump", "amd", "7.9.0", "--root", "{tmp}"], 2, "`buildctl --root ROOT matrix bump ...`"),
    (["--root", "{tmp}/none", "matrix"], 2, "matrix.yaml: not found"),
    (["render", "--out", "/proc/rocmig-cannot"], 2, "--out /proc/rocmig-cannot: cannot create it"),
    (["render", "--source", "{ex_source}", "--rocm", "{ex_rocm}", "--arch", "{ex_arch}", "--image", "{ex_image}",
      "--out", "{tmp}/out"], 0, ""),
    (["plan", "--out", "/proc/rocmig-cannot"], 2, "--out /proc/rocmig-cannot"),
    (["plan", "--source", "{ex_source}", "--rocm", "{ex_rocm}", "--arch", "{ex_arch}", "--image", "{ex_image}"], 2,
     "nothing to build"),
    (["build", "--max-jobs", "0"], 2, "--max-jobs"),
    (["build", "--apt-mirror", "ftp://mirror"], 2, "--apt-mirror: 'ftp://mirror' is not an http(s) URL"),
    (["build", "--apt-mirror", "http://127.0.0.1:{port}/debian"], 4, "--apt-mirror http://127.0.0.1:{port}/debian: unreachable"),
    (["build", "--image", "base", "--parent", "0123456789ab"], 2, "--parent: the selection includes root cells"),
    (["build", "--image", "dev", "--parent", "not-a-digest"], 2, "--parent: 'not-a-digest' is not"),
    (["push", "--registry", "http://127.0.0.1:5000"], 2, "--registry:"),
    (["pull", "--registry", "127.0.0.1:{port}", "--retries", "1"], 4, "registry 127.0.0.1:{port}"),
    (["--root", "{copy}", "tags", "--check"], 1, "is stale"),
    (["--root", "{copy}", "tags", "--check", "--write"], 2, "--write, --check and --json exclude each other"),
    (["--root", "{copy}", "support", "--write", "--check"], 2, "--write and --check exclude each other"),
    (["migrate", "{tmp}/no-such-tree", "--arch", "gfx942", "--out", "{tmp}/report"], 2, "no-such-tree"),
    (["migrate", "{copy}/recipes", "--arch", "gfx94", "--out", "{tmp}/report"], 2, "did you mean gfx942?"),
    (["migrate", "{tmp}", "--arch", "gfx942", "--rocm", "7.3", "--out", "{tmp}-report"], 2, "did you mean 7.2?"),
    (["migrate", "{tmp}", "--out", "{tmp}-report"], 2, "Missing option '--arch'"),
    (["migrate", "{tmp}", "--arch", "gfx942", "--out", "/proc/rocmig-cannot/report"], 2,
     "--out /proc/rocmig-cannot/report: cannot create it"),
    (["base", "bootstrap", "../trixie"], 2, "SUITE: '../trixie' is not a Debian suite name"),
    (["doctor", "{tmp}/missing.log"], 2, "missing.log"),
    (["doctor", "--limit", "0", "/dev/null"], 2, "buildctl: error: Invalid value for '--limit': 0 is not in the range"),
    (["doctor", "--limit", "0", "/dev/null"], 2, "(see `buildctl doctor --help`)"),
    (["doctor", "/dev/null"], 2, "buildctl: error: /dev/null: the log is empty"),
    (["kernels", "configs", "--no-such-flag"], 2, "buildctl: error: No such option '--no-such-flag'"),
    (["kernels", "configs", "--target", "gfx943"], 2, "--target"),
    (["kernels", "offline", "--out", "{tmp}/co", "--target", "gfx908"], 2,
     "Invalid value for --target: 'gfx908' is not one of gfx90a, gfx942"),
    (["kernels", "bench", "--out", "{tmp}/bench.json", "--quick"], 2,
     'docker run --rm --device=/dev/kfd --device=/dev/dri --group-add video --group-add "$(stat -c %g /dev/kfd)"'),
    (["--root", "{broken}", "render", "--image", "dev", "--out", "{tmp}/out"], 2,
     "templates/dev.Dockerfile.j2:"),
]
NEEDS_ENGINE = {"build", "pull", "push", "migrate"}


def _excluded_leaf() -> dict[str, str]:
    """Coordinates of an excluded cell whose parent is planned (its plan would build parents only)."""
    from buildctl.load import load_project
    from buildctl.plan import Selection, make_plan

    plan = make_plan(load_project(ROOT), Selection())
    planned = {c.ref for c in plan.cells}
    e = next(e.cell for e in plan.excluded if e.cell.parent_ref in planned)
    return {"{ex_source}": e.release.source, "{ex_rocm}": e.release.version, "{ex_arch}": e.arch_name,
            "{ex_image}": e.role}


@pytest.fixture
def broken_template(project_copy):
    tpl = project_copy / "templates" / "dev.Dockerfile.j2"
    tpl.write_text(tpl.read_text() + "\nENV X={{ cell.no_such_field }}\n")
    return project_copy


@pytest.mark.parametrize("args,code,text", CASES, ids=lambda v: " ".join(v) if isinstance(v, list) else None)
def test_documented_bad_inputs(args, code, text, tmp_path, project_copy, request):
    if "tags" in args:
        (project_copy / "docs").mkdir(exist_ok=True)
        (project_copy / "docs" / "tags.md").write_text("stale\n")
    port = _free_port()
    broken = request.getfixturevalue("broken_template") if "{broken}" in args else project_copy
    fill = {"{tmp}": str(tmp_path), "{port}": str(port), "{copy}": str(project_copy), "{broken}": str(broken),
            **_excluded_leaf()}

    def sub(value: str) -> str:
        for key, val in fill.items():
            value = value.replace(key, val)
        return value

    if args[0] in NEEDS_ENGINE and code not in (2,) and not _docker_answers():
        pytest.skip("needs a Docker engine (scripts/setup-docker.sh)")
    result = _run(*[sub(a) for a in args])
    assert result.returncode == code, result.stderr
    assert "Traceback" not in result.stderr
    if code:
        lines = [ln for ln in result.stderr.strip().splitlines() if not ln.startswith("warning: ")]
        assert len(lines) == 1, result.stderr
        assert lines[0].startswith("buildctl: error: "), lines[0]
        assert sub(text) in lines[0], lines[0]


def test_child_exit_codes_are_passed_on():
    """A recipe's documented code stays itself (kernels bench's 2 stays 2); anything else is 5."""
    assert errors.ChildExit("bench", 2).exit_code == 2
    assert errors.ChildExit("offline", 1).exit_code == 1
    assert errors.ChildExit("killed", 137).exit_code == errors.EXIT_BUILD
    assert errors.ChildExit("ctrl-c", 130).exit_code == 130


def test_every_error_class_has_a_documented_code():
    readme = (ROOT / "README.md").read_text()
    classes = [c for c in vars(errors).values() if isinstance(c, type) and issubclass(c, errors.RocmigError)]
    assert len(classes) >= 10
    for cls in classes:
        if cls is errors.ChildExit:
            continue
        assert f"| {cls.exit_code} |" in readme, f"{cls.__name__}: exit {cls.exit_code} is not in README's table"


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_ctrl_c_exits_130_without_a_traceback():
    # the child starts with Ctrl-C's default disposition, as a terminal gives it: a shell's background
    # job (`cmd &`, how a CI script may be started) inherits SIGINT ignored, and Python keeps it so
    proc = subprocess.Popen([sys.executable, "-m", "buildctl", "doctor", "-"], stdin=subprocess.PIPE,
                            stderr=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=ROOT,
                            preexec_fn=_default_sigint)
    wchan = Path(f"/proc/{proc.pid}/wchan")
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and "pipe" not in (wchan.read_text() if wchan.exists() else ""):
        time.sleep(0.1)  # wait until it blocks reading stdin (imports done)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "Traceback" not in err and err.strip().splitlines()[-1].startswith("buildctl: interrupted")


def _readme_exit_rows() -> dict[int, str]:
    """README's "Exit codes" table as {code: meaning}."""
    section = (ROOT / "README.md").read_text().split("## Exit codes", 1)[1].split("\n## ", 1)[0]
    rows = [line.split("|") for line in section.splitlines() if line.startswith("| ") and "---" not in line]
    return {int(cells[1]): cells[2].strip() for cells in rows if cells[1].strip().isdigit()}


def test_readme_table_has_exactly_the_codes_of_errors_py():
    codes = {value for name, value in vars(errors).items() if name.startswith("EXIT_")}
    assert set(_readme_exit_rows()) == codes


def _commands(group, path: str):
    import click
    yield path, group
    if isinstance(group, click.Group):
        for name, sub in group.commands.items():
            yield from _commands(sub, f"{path} {name}".strip())


def test_every_check_flag_is_listed_under_exit_1():
    """A --check flag exits 1 on drift (a stale page or workflow): README's exit-1 row names each one."""
    from buildctl.cli import main

    negative = _readme_exit_rows()[errors.EXIT_NEGATIVE]
    checks = [path for path, cmd in _commands(main, "") if any("--check" in p.opts for p in cmd.params)]
    assert len(checks) >= 3
    missing = [path for path in checks if f"`{path} --check`" not in negative]
    assert missing == [], f"README's exit 1 row does not name: {missing}"


def _dev_image_or_skip() -> None:
    from tests.images.test_migrate_cases import image_or_skip

    image_or_skip()


def test_migrate_recipe_bad_input_is_one_buildctl_error_line(tmp_path):
    """The recipe's own bad-input line (an offload arch hipcc does not know) is buildctl's one error line, exit 2."""
    _dev_image_or_skip()
    src = tmp_path / "src"
    src.mkdir()
    (src / "k.cu").write_text("__global__ void k() {}\n")
    result = _run("migrate", str(src), "--arch", "gfx9999", "--out", str(tmp_path / "out"))
    assert result.returncode == 2, result.stderr
    lines = [ln for ln in result.stderr.strip().splitlines() if not ln.startswith("warning: ")]
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("buildctl: error: --arch: unknown value 'gfx9999' (allowed:"), lines[0]


def test_migrate_fail_on_met_is_a_result_line_not_an_error(tmp_path):
    """--fail-on met (an open error finding: inline PTX) exits 1 with the recipe's result line, no error line."""
    _dev_image_or_skip()
    src = tmp_path / "src"
    src.mkdir()
    (src / "k.cu").write_text('__global__ void k() { asm volatile("nanosleep.u32 100;"); }\n')
    result = _run("migrate", str(src), "--arch", "gfx942", "--out", str(tmp_path / "out"), "--jobs", "1", timeout=600)
    assert result.returncode == 1, result.stderr
    assert "error:" not in result.stderr, result.stderr
    assert "Traceback" not in result.stderr
    assert any(ln.startswith("migrate: 1 unit;") and "--fail-on error met (exit 1)" in ln
               for ln in result.stdout.splitlines()), result.stdout
    assert "report: " in result.stdout


@pytest.mark.parametrize("args", [[], ["report"], ["ci"]], ids=["buildctl", "report", "ci"])
def test_a_group_without_a_subcommand_prints_its_help(args):
    """`buildctl` (or `buildctl report`) alone prints the help, as --help does, and succeeds; it is not an
    error squeezed into one line."""
    proc = subprocess.run([sys.executable, "-m", "buildctl", *args], capture_output=True, text=True, cwd=ROOT,
                          timeout=60, env={**os.environ, "PYTHONPATH": str(ROOT)})
    helped = subprocess.run([sys.executable, "-m", "buildctl", *args, "--help"], capture_output=True, text=True,
                            cwd=ROOT, timeout=60, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    assert proc.stdout == helped.stdout and proc.stdout.startswith(f"Usage: buildctl {' '.join(args)}".rstrip())


def test_without_root_a_folder_outside_the_checkout_uses_the_checkout(tmp_path):
    """`buildctl matrix` from a folder without matrix.yaml reads the matrix of the checkout buildctl runs
    from; a folder with its own matrix.yaml is the root; --root still wins, and a --root without one is
    the documented exit 2."""
    from buildctl.cli import default_root

    outside = _run("matrix", cwd=tmp_path)
    assert outside.returncode == 0 and "cells planned" in outside.stdout, outside.stderr
    assert default_root(tmp_path) == ROOT
    (tmp_path / "matrix.yaml").write_text("{}\n")
    assert default_root(tmp_path) == tmp_path
    named = _run("--root", str(tmp_path / "none"), "matrix", cwd=tmp_path)
    assert named.returncode == 2 and "matrix.yaml: not found" in named.stderr
