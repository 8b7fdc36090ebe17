"""recipes.serve launch defaults on the cells `buildctl render` writes: entrypoint, arch defaults, user wins."""

from pathlib import Path

import pytest

from buildctl.load import load_project
from buildctl.plan import Selection, make_plan
from buildctl.render import render_cell
from recipes.serve import flags, launch
from recipes.serve.cell import load_cell

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def rendered(tmp_path_factory):
    """{(source, rocm, arch): rendered serve cell folder} for amd gfx942 / gfx950 / gfx90a / gfx1100 and debian
    (whose cell has no aiter: a CDNA3 arch without it)."""
    project = load_project(ROOT)
    out = tmp_path_factory.mktemp("render")
    folders = {}
    for source, rocm, arch in [("amd", "7.2", "gfx942"), ("amd", "7.2", "gfx950"), ("amd", "7.2", "gfx1100"),
                               ("amd", "6.4", "gfx90a"), ("amd", "6.4", "gfx942"), ("debian", "7.2", "gfx942")]:
        cells = [c for c in make_plan(project, Selection((source,), (rocm,), (arch,), ("serve",))).cells
                 if c.role == "serve"]
        assert len(cells) == 1, (source, rocm, arch)
        folders[(source, rocm, arch)] = render_cell(project, cells[0], out)
    return folders


def _plan(folder: Path, user=(), env=None):
    cell = load_cell(folder / "rocmig")
    return cell, launch.plan_gpu(cell, list(user), env or {}, "aiter" in cell.components)


def test_every_serve_dockerfile_has_the_entrypoint_port_and_bundled_model(rendered):
    for folder in rendered.values():
        text = (folder / "Dockerfile").read_text()
        assert 'ENTRYPOINT ["python", "-m", "recipes.serve"]' in text
        assert "\nEXPOSE 30000\n" in text
        assert "python -m recipes.serve.bundled --out " + launch.BUNDLED_MODEL in text
        assert (folder / "recipes" / "serve" / "cli.py").is_file()
        runtime = text.rsplit("\nFROM ", 1)[1]
        assert "hipcc" not in runtime and "build-essential" not in runtime


def test_debian_lane_brings_triton_without_its_nvidia_binaries(rendered):
    text = (rendered[("debian", "7.2", "gfx942")] / "Dockerfile").read_text()
    assert " triton==3.9.0 " in text and "backends/nvidia/bin" in text and "transformers==5.24.0" in text
    assert " triton==" not in (rendered[("amd", "7.2", "gfx942")] / "Dockerfile").read_text()


@pytest.mark.parametrize("key", [("amd", "7.2", "gfx942"), ("amd", "7.2", "gfx950"), ("amd", "6.4", "gfx942")])
def test_cdna3_cdna4_defaults_aiter_and_amd_env(rendered, key):
    cell, plan = _plan(rendered[key])
    assert cell.family in ("CDNA3", "CDNA4") and "aiter" in cell.components
    argv = list(plan.argv)
    assert argv[:3] == ["python", "-m", "sglang.launch_server"]
    assert flags.value(argv, "attention") == "aiter"
    assert flags.value(argv, "host") == "0.0.0.0" and flags.value(argv, "port") == "30000"
    assert flags.value(argv, "model") == launch.BUNDLED_MODEL
    assert plan.env["SGLANG_USE_AITER"] == "1" and plan.env["HIP_FORCE_DEV_KERNARG"] == "1"
    assert "NCCL_MIN_NCHANNELS" not in plan.env
    assert all(c.why for c in plan.choices)


def test_mi300x_tp8_gets_rccl_channels(rendered):
    _, plan = _plan(rendered[("amd", "7.2", "gfx942")], ["--model-path", "/models/llama", "--tp", "8"])
    assert plan.tp == 8 and plan.env["NCCL_MIN_NCHANNELS"] == "112"
    assert flags.value(list(plan.argv), "model") == "/models/llama"


@pytest.mark.parametrize("key", [("amd", "7.2", "gfx1100"), ("amd", "6.4", "gfx90a"), ("debian", "7.2", "gfx942")])
def test_no_aiter_means_triton_attention(rendered, key):
    cell, plan = _plan(rendered[key])
    assert "aiter" not in cell.components
    assert flags.value(list(plan.argv), "attention") == "triton"
    assert plan.env["SGLANG_USE_AITER"] == "0"
    why = next(c.why for c in plan.choices if c.what.startswith("--attention-backend"))
    assert cell.arch in why and cell.family in why


def test_rdna3_choice_names_its_wavefront(rendered):
    cell, plan = _plan(rendered[("amd", "7.2", "gfx1100")])
    assert cell.wavefront == 32
    assert any("wavefront 32" in c.why for c in plan.choices)


def test_user_flags_and_env_win(rendered):
    _, plan = _plan(rendered[("amd", "7.2", "gfx942")], ["--attention-backend=triton", "--port", "8000"],
                    {"SGLANG_USE_AITER": "0"})
    argv = list(plan.argv)
    assert argv.count("--attention-backend") == 0 and flags.value(argv, "attention") == "triton"
    assert plan.port == 8000 and "SGLANG_USE_AITER" not in plan.env
    yours = [c.what for c in plan.choices if c.yours]
    assert "--attention-backend triton" in yours and "SGLANG_USE_AITER=0" in yours and "--port 8000" in yours


def test_cpu_engine_maps_sglang_flags():
    plan = launch.plan_cpu(["--model-path", "/m", "--dtype", "half", "--random-seed", "3", "--tp", "2",
                            "--mem-fraction-static", "0.8", "--trust-remote-code"], "test")
    assert plan.argv == ("transformers", "serve", "/m", "--device", "cpu", "--host", "0.0.0.0", "--port", "30000",
                         "--dtype", "float16", "--default-seed", "3", "--trust-remote-code")
    assert flags.value(list(plan.sglang_args), "device") == "cpu" and plan.tp == 2
    ignored = next(c.what for c in plan.choices if c.what.startswith("ignored"))
    assert "--tp" in ignored and "--mem-fraction-static" in ignored and "--dtype" not in ignored
    with pytest.raises(ValueError, match="--dtype fp8"):
        launch.plan_cpu(["--dtype", "fp8"], "test")


def test_cells_without_sgl_kernel_say_why(rendered):
    """The GPU preflight names why SGLang cannot start where sgl-kernel was left out (RDNA, the debian lane)."""
    for key in [("amd", "7.2", "gfx1100"), ("debian", "7.2", "gfx942")]:
        cell = load_cell(rendered[key] / "rocmig")
        assert "sgl-kernel" not in cell.components
        assert dict(cell.excluded)["sgl-kernel"]
    assert "sgl-kernel" in load_cell(rendered[("amd", "7.2", "gfx942")] / "rocmig").components
