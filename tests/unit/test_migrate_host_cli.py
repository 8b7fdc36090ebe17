"""`buildctl migrate`: the recipe's options are shown by --help and parsed anywhere on the command
line; --arch takes matrix archs, products and any other gfx offload arch; logs get host paths."""

import os
import sys
from pathlib import Path

import click
import pytest

from buildctl.cli import main
from buildctl.errors import ConfigError
from buildctl.load import load_project
from buildctl.migrate import OTHER_ARCHS, Mounts, host_files, relabel_logs, split_archs
from buildctl.migrate_options import RECIPE_OPTIONS, recipe_arguments

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "recipes" / "migrate"))

from migrate import archs  # noqa: E402
from migrate import cli as recipe_cli  # noqa: E402

HOST_ONLY = {"--arch", "--out", "--arch-table", "--help"}  # set by buildctl itself, or a path inside the image


def test_host_offers_every_recipe_option():
    recipe = {s for a in recipe_cli.parser()._actions for s in a.option_strings if s.startswith("--")}
    assert {flag for flag, _ in RECIPE_OPTIONS} == recipe - HOST_ONLY


def test_help_lists_the_recipe_options():
    text = main.commands["migrate"].get_help(click.Context(main.commands["migrate"], info_name="migrate"))
    for flag, _ in RECIPE_OPTIONS:
        assert flag in text


@pytest.mark.parametrize("argv", [
    ["--jobs", "3", "--baseline", "src", "--arch", "gfx942", "--out", "o", "--hipcc-flag=-DX", "--define", "A=1"],
    ["src", "--arch", "gfx942", "--out", "o", "--define", "A=1", "--jobs", "3", "--hipcc-flag", "-DX", "--baseline"],
])
def test_recipe_options_anywhere(argv):
    ctx = main.commands["migrate"].make_context("migrate", list(argv))
    values = {k: v for k, v in ctx.params.items() if k not in ("src", "rocm", "source", "archs", "out", "recipe_args")}
    assert recipe_arguments(values) == ["--jobs", "3", "--baseline", "--hipcc-flag=-DX", "--define=A=1"]
    assert ctx.params["recipe_args"] == ()
    parsed = recipe_cli.parse(["/src", "--arch", "gfx942", "--out", "/out", *recipe_arguments(values)])
    assert parsed.jobs == 3 and parsed.baseline and parsed.hipcc_flag == ["-DX"] and parsed.define == ["A=1"]


def test_arch_beyond_the_matrix_is_passed_to_the_recipe():
    project = load_project(ROOT)
    assert split_archs(project, ("gfx942", "gfx908", "gfx1030", "gfx11-generic")) == \
        (("gfx942",), ("gfx942", "gfx908", "gfx1030", "gfx11-generic"))
    assert split_archs(project, ("gfx942,gfx1100", "gfx908")) == (("gfx942", "gfx1100"), ("gfx942", "gfx1100", "gfx908"))
    with pytest.raises(ConfigError) as error:
        split_archs(project, ("sm_90",))
    message = str(error.value)
    assert "\n" not in message and message.startswith("--arch: unknown value 'sm_90'")
    assert "gfx942" in message and message.endswith(f"; {OTHER_ARCHS})")  # inside the list's parenthesis
    assert message.count("(") == message.count(")")
    assert archs.OTHER_ARCHS == OTHER_ARCHS  # the recipe's own --arch error ends with the same words
    with pytest.raises(ConfigError) as error:
        split_archs(project, ("MI30X",))
    assert str(error.value).endswith(f"; {OTHER_ARCHS}); did you mean MI300X or MI350X?")
    with pytest.raises(ConfigError, match=r"^--arch: empty value in 'gfx942,,gfx1100' "):
        split_archs(project, ("gfx942,,gfx1100",))


def test_compile_commands_mounted_and_logs_relabelled(tmp_path):
    db = tmp_path / "compile_commands.json"
    db.write_text("[]")
    args, volumes = host_files(["--baseline", "--compile-commands", str(db)])
    assert args == ["--baseline", "--compile-commands", "/project-flags/compile_commands.json"]
    # the database's folder: CMake's response files (CMakeFiles/<target>.dir/includes_CUDA.rsp) lie there
    assert volumes == {str(tmp_path): {"bind": "/project-flags", "mode": "ro"}}
    assert Mounts(tmp_path, tmp_path / "r", db).relabel('"source": "/project-flags/compile_commands.json"') == \
        f'"source": "{db}"'
    src, out = tmp_path / "proj", tmp_path / "report"
    (out / "build" / "hip").mkdir(parents=True)
    src.mkdir()
    log = out / "build" / "hip" / "k.cu.gfx942.log"
    log.write_text("$ hipcc -I/out/hip/inc /out/hip/k.cu\n/out/hip/k.cu:3:1: error: x (from /src/k.cu)\n")
    relabel_logs(Mounts(src, out))
    assert log.read_text() == (f"$ hipcc -I{out}/hip/inc {out}/hip/k.cu\n{out}/hip/k.cu:3:1: error: x (from {src}/k.cu)\n")


def test_a_global_option_after_the_command_is_named_as_one(tmp_path):
    """`buildctl migrate -q SRC`: -q is buildctl's own option, taken as SRC; the one-line error (exit 2)
    says where it goes."""
    from buildctl.errors import InputError
    from buildctl.migrate import check_paths
    with pytest.raises(InputError, match=r"^-q: not an option of migrate.*buildctl -q migrate SRC"):
        check_paths(Path("-q"), tmp_path / "out")
    with pytest.raises(InputError, match=r"no such file or folder \(give a CUDA source tree"):
        check_paths(tmp_path / "nope", tmp_path / "out")


@pytest.mark.parametrize(("extra", "message"), [
    (["--jobs", "0"], "Invalid value for '--jobs': 0 is not in the range x>=1. (see `buildctl migrate --help`)"),
    (["--timeout", "-1"], "Invalid value for '--timeout': -1 is not in the range x>=1. (see `buildctl migrate --help`)"),
    (["--bogus", "3"], "--bogus: no such option of buildctl migrate (see `buildctl migrate --help`)"),
    (["second_src"], "second_src: unexpected argument (migrate takes one SRC) (see `buildctl migrate --help`)"),
    (["-q"], "-q: an option of buildctl itself, before the subcommand: `buildctl -q migrate SRC ...`"),
    (["--root", "."], "--root: an option of buildctl itself, before the subcommand: `buildctl --root ROOT migrate SRC ...`"),
    (["--arch-table"], "--arch-table: needs a value (a path inside the dev image)"),
    (["--arch-table", "--bogus"], "--arch-table: needs a value (a path inside the dev image)"),
])
def test_bad_recipe_arguments_fail_on_the_host_before_any_image(tmp_path, extra, message):
    """Checked before the dev image is looked up: no Docker engine or image is needed to hear of a bad
    flag, and the one line names it (exit 2)."""
    import subprocess
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "k.cu").write_text("__global__ void k() {}\n")
    done = subprocess.run([sys.executable, "-m", "buildctl", "--root", str(ROOT), "migrate", str(tmp_path / "src"),
                           "--arch", "gfx942", "--out", str(tmp_path / "out"), *extra],
                          capture_output=True, text=True, check=False, env={**os.environ, "DOCKER_HOST": "unix:///nonexistent"})
    assert done.returncode == 2
    assert done.stderr.splitlines() == [f"buildctl: error: {message}"] and done.stdout == ""
    assert not (tmp_path / "out").exists()


def test_arch_table_passes_through_to_the_recipe():
    from buildctl.migrate_options import passthrough_arguments
    assert passthrough_arguments(("--arch-table", "/etc/x.json"), {"-q": "-q"}) == ["--arch-table", "/etc/x.json"]
    assert passthrough_arguments(("--arch-table=/etc/x.json",), {}) == ["--arch-table=/etc/x.json"]


def test_a_global_option_after_migrate_is_named_before_other_argument_errors(tmp_path):
    """`buildctl migrate -q SRC ...`: click takes -q as SRC and SRC as an extra argument; the error says
    where -q goes, not that SRC is unexpected."""
    import subprocess
    (tmp_path / "src").mkdir()
    done = subprocess.run([sys.executable, "-m", "buildctl", "--root", str(ROOT), "migrate", "-q", str(tmp_path / "src"),
                           "--arch", "gfx942", "--out", str(tmp_path / "out")],
                          capture_output=True, text=True, check=False, env={**os.environ, "DOCKER_HOST": "unix:///nonexistent"})
    assert done.returncode == 2
    assert done.stderr.startswith("buildctl: error: -q: not an option of migrate"), done.stderr
