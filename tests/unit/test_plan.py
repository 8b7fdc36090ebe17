"""Plan: cells, exclusions with rule and reason, filters, JSON, default-source narrowing."""

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from buildctl.cli import main
from buildctl.errors import ConfigError
from buildctl.load import load_project
from buildctl.plan import ARCH_FIRST_ROCM, Selection, make_plan, normalize, resolve

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def project():
    return load_project(ROOT)


def test_archs_newer_than_the_release_are_excluded_with_reason(project):
    plan = make_plan(project, Selection(rocm=("6.2",), archs=("gfx950",)))
    assert plan.cells == ()
    assert {e.rule for e in plan.excluded} == {ARCH_FIRST_ROCM}
    assert all("gfx950" in e.reason and "7.0" in e.reason and "6.2.4" in e.reason for e in plan.excluded)


def test_debian_57_excludes_gfx942_but_keeps_gfx90a(project):
    plan = make_plan(project, Selection(sources=("debian",), rocm=("5.7",), images=("base",)))
    built = {c.arch_name for c in plan.cells}
    excluded = {e.cell.arch_name for e in plan.excluded}
    assert "gfx90a" in built and "gfx1100" in built
    assert {"gfx942", "gfx950", "gfx1201"} <= excluded


def test_parents_come_first_and_tags_carry_the_cell(project):
    plan = make_plan(project, Selection(sources=("debian",), rocm=("7.2",), archs=("gfx942",)))
    refs = [c.ref for c in plan.cells]
    assert refs[:2] == ["rocmig/base:rocm7.2.4-gfx942-debian", "rocmig/dev:rocm7.2.4-gfx942-debian"]
    assert plan.cells[1].parent_ref == refs[0]
    for cell in plan.cells:
        if cell.parent_ref:
            assert refs.index(cell.parent_ref) < refs.index(cell.ref)
    amd = make_plan(project, Selection(sources=("amd",), rocm=("6.2",), archs=("gfx90a",), images=("dev",)))
    assert amd.cells[0].ref == "rocmig/dev:rocm6.2.4-gfx90a" and amd.cells[0].alias_tags == ("rocm6.2-gfx90a",)


def test_with_parents_adds_the_chain(project):
    plan = make_plan(project, Selection(sources=("debian",), rocm=("7.2",), archs=("gfx942",), images=("dev",)),
                     with_parents=True)
    assert [c.role for c in plan.cells] == ["base", "dev"]


def test_unknown_filter_value_lists_valid_values(project):
    with pytest.raises(ConfigError, match=r"--rocm: unknown value '9.9' \(allowed: 5.7, 6.1, 6.2"):
        make_plan(project, Selection(rocm=("9.9",)))


def test_default_source_narrowing(project):
    assert resolve(project, Selection(rocm=("7.2",))).selection.sources == ("debian",)
    assert resolve(project, Selection(rocm=("6.2",))).selection.sources == ()
    assert resolve(project, Selection(sources=("amd",), rocm=("7.2",))).selection.sources == ("amd",)


def test_one_default_selection_filled_per_axis_and_said(project):
    """No flag: matrix.yaml's default cell on every axis; a named axis keeps its value; --all opens the rest."""
    d = project.matrix.default
    none = resolve(project, Selection())
    assert none.selection == Selection((d.source,), (d.rocm,), (d.arch,), tuple(d.images))
    assert none.note().startswith(f"selection: --source {d.source} --rocm {d.rocm} --arch {d.arch} --image ")
    named = resolve(project, Selection(images=("serve",)))
    assert named.selection.images == ("serve",) and "--image" not in named.note()
    assert resolve(project, Selection(images=("serve",)), everything=True).selection == Selection(images=("serve",))
    assert resolve(project, Selection(("debian",), ("7.2",), ("gfx942",), ("dev",))).note() == ""


@pytest.mark.parametrize("given,expected", [
    (Selection(rocm=("7.2.4",)), Selection(rocm=("7.2",))),
    (Selection(rocm=("6.2.4", "6.2")), Selection(rocm=("6.2",))),
    (Selection(archs=("gfx942,gfx90a",)), Selection(archs=("gfx942", "gfx90a"))),
    (Selection(archs=("mi300x",)), Selection(archs=("gfx942",))),
    (Selection(archs=("MI250X", "RX 7900 XTX")), Selection(archs=("gfx90a", "gfx1100"))),
    (Selection(archs=("GFX942",)), Selection(archs=("gfx942",))),
    (Selection(sources=("Debian",), images=("dev,serve",)), Selection(("debian",), (), (), ("dev", "serve"))),
])
def test_lenient_selection_values(project, given, expected):
    assert normalize(project, given) == expected


@pytest.mark.parametrize("given,message", [
    (Selection(rocm=("7.3",)), r"--rocm: unknown value '7.3' .*full releases: .*7.2.4.*; did you mean 7.2\?"),
    (Selection(archs=("gfx943",)), r"--arch: unknown value 'gfx943' .*did you mean gfx942\?"),
    (Selection(archs=("mi300xx",)), r"--arch: unknown value 'mi300xx' .*did you mean MI300X\?"),
    (Selection(images=("srve",)), r"--image: unknown value 'srve' .*did you mean serve\?"),
    (Selection(archs=("gfx90",)), r"--arch: unknown value 'gfx90' .*did you mean gfx90a or gfx950\?"),
    (Selection(rocm=("7.2.9",)), r"--rocm: unknown value '7.2.9' .*; did you mean 7.2\?"),
    (Selection(rocm=("6.0",)), r"--rocm: unknown value '6.0' .*; did you mean 6.1\?"),
    (Selection(rocm=("seven",)), r"--rocm: unknown value 'seven' \(allowed: [^?]*\)$"),
    (Selection(archs=("gfx942,,gfx1100",)), r"^--arch: empty value in 'gfx942,,gfx1100' \(allowed: "),
    (Selection(images=("dev", " ")), r"^--image: empty value in ' ' "),
])
def test_unknown_values_say_did_you_mean(project, given, message):
    with pytest.raises(ConfigError, match=message):
        normalize(project, given)


def test_matrix_json_includes_excluded_cells_with_reasons():
    result = CliRunner().invoke(main, ["--root", str(ROOT), "matrix", "--json", "--all", "--arch", "gfx950"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["cells"] and all(c["arch"] == "gfx950" for c in data["cells"])
    assert all(e["rule"] and e["reason"] for e in data["excluded"])
    assert {e["rocm"] for e in data["excluded"]} >= {"6.1", "6.2", "6.3", "6.4", "5.7"}


def test_matrix_table_filters_by_source_and_image():
    result = CliRunner(env={"COLUMNS": "250"}).invoke(
        main, ["--root", str(ROOT), "matrix", "--source", "debian", "--image", "dev"])
    assert "rocm5.7.1" not in result.output  # the default ROCm line fills the axis no flag named
    assert result.exit_code == 0
    assert "rocmig/dev:rocm7.2.4-gfx942-debian" in result.output
    assert "rocmig/base" not in result.output


def test_debian_lane_leaves_out_what_needs_rocm_torch_with_the_reason(project):
    plan = make_plan(project, Selection(("debian",), ("7.2",), ("gfx942",), ("train", "serve")))
    by_role = {c.role: c for c in plan.cells}
    assert set(by_role) == {"train", "serve"}
    train = by_role["train"]
    assert train.has("llamafactory") and train.has("deepspeed")
    assert not train.has("flash-attention") and not train.has("deepspeed-ops")
    left_out = {name: (rule, why) for name, rule, why in train.excluded_components}
    assert left_out["flash-attention"][0] == "needs-rocm-torch" and "CPU build" in left_out["flash-attention"][1]
    assert not by_role["serve"].has("sgl-kernel") and by_role["serve"].has("sglang")


def test_flash_attention_is_left_out_for_archs_its_release_rejects(project):
    """Case B13's kind: flash-attention's setup rejects gfx1100; the plan says so instead of a failed build."""
    gfx1100 = make_plan(project, Selection(("amd",), ("6.4",), ("gfx1100",), ("train",))).cells[0]
    assert not gfx1100.has("flash-attention") and gfx1100.has("deepspeed-ops")
    (name, rule, why), = [e for e in gfx1100.excluded_components if e[0] == "flash-attention"]
    assert rule == "framework-archs" and "gfx90a, gfx942, gfx950" in why and "gfx1100" in why
    gfx942 = make_plan(project, Selection(("amd",), ("6.4",), ("gfx942",), ("train",))).cells[0]
    assert gfx942.has("flash-attention") and gfx942.has("deepspeed-ops")


def test_amd_70_builds_torch_from_its_wheel_index_and_serve_needs_torch_29(project):
    """ROCm 7.0 has a torch 2.10 wheel index (whl/rocm7.0); SGLang is left out where torch is older than 2.9."""
    plan = make_plan(project, Selection(("amd",), ("7.0",), ("gfx942",)))
    assert [c.role for c in plan.cells] == ["base", "dev", "torch", "serve", "train", "kernels"] \
        or {c.role for c in plan.cells} == {"base", "dev", "torch", "serve", "train", "kernels"}
    torch = next(c for c in plan.cells if c.role == "torch").release.torch
    assert torch.index == "rocm7.0" and torch.triton_dist == "triton-rocm"
    old = make_plan(project, Selection(("amd",), ("6.3",), ("gfx942",), ("serve",)))
    assert not old.cells and old.excluded[0].rule == "sglang-torch-2.9"
    assert "torch 2.9" in old.excluded[0].reason
