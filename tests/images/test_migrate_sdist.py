"""Real input, never seen by the recipe's authors when it was written: a PyTorch CUDA extension from its
PyPI sdist (causal-conv1d 1.7.0, whose .cu units include torch/ATen/c10 and CUB), migrated in the dev
image for gfx942. To stay cheap the tree keeps one of its three .cu units, csrc/causal_conv1d_update.cu (the
others instantiate many more kernels; bench/migrate_projects.py measures the whole sdist), and the binding
source csrc/causal_conv1d.cpp, a unit through its c10/cuda includes and cudaStream_t. Its units are hipified by torch.utils.hipify, as PyTorch's own extension build does,
and compiled against the image's ROCm-flavoured PyTorch headers (a reconstruction in the debian lane).
The second tree, torch-scatter 2.1.2 cut to one unit, is the class of a project's own at::Half wrappers
of the warp intrinsics, for a wave64 and a wave32 arch.

Needs PyPI (the sdist is downloaded into build/cache/sdists/, skipped when PyPI cannot be reached) and
the dev image ($ROCMIG_DEV_IMAGE, skipped when it is not built).
"""

from __future__ import annotations

import json
import shutil
import sys
import tarfile
from pathlib import Path

import pytest

from tests.images.test_migrate_cases import digests, image_or_skip, run_recipe

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))
from migrate_projects import fetch_sdist, keep_only  # noqa: E402

pytestmark = [pytest.mark.docker, pytest.mark.pypi]
SPEC = "causal-conv1d==1.7.0"
UNIT = "causal_conv1d_update.cu"


def _unpacked_sdist(spec: str, work: Path) -> Path:
    """The source tree of sdist `spec` (NAME==VERSION, cached under build/cache/sdists) unpacked into `work`;
    skips the test when PyPI cannot be reached."""
    try:
        sdist = fetch_sdist(spec, ROOT / "build" / "cache" / "sdists")
    except (OSError, RuntimeError) as exc:
        pytest.skip(f"cannot download the {spec} sdist from PyPI: {exc}")
    with tarfile.open(sdist) as tar:
        tar.extractall(work, filter="data")
    return next(work.iterdir())


@pytest.fixture(scope="module")
def sdist_run(tmp_path_factory):
    image_or_skip()
    src = _unpacked_sdist(SPEC, tmp_path_factory.mktemp("sdist"))
    for unit in src.rglob("*.cu"):
        if unit.name != UNIT:
            unit.unlink()
    before = digests(src)
    out = tmp_path_factory.mktemp("out")
    proc = run_recipe(src, out, "/src", "--out", "/out/run", "--arch", "gfx942", "--jobs", "2", "--fail-on", "never")
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads((out / "run" / "report.json").read_text())
    return {"report": report, "before": before, "after": digests(src)}


def test_torch_extension_units_are_hipified_by_torch_and_compile(sdist_run):
    report = sdist_run["report"]
    units = [f for f in report["files"] if f["unit"]]
    assert [f["path"].rsplit("/", 1)[-1] for f in units if f["kind"] == "cu"] == [UNIT]
    torch_units = [f for f in units if f["translator"]["name"] == "torch.utils.hipify"]
    assert torch_units, [f["translator"] for f in units]
    statuses = {f["path"]: f["compile"]["gfx942"]["status"] for f in units}
    assert "needs-torch" not in statuses.values(), statuses
    ok = sum(s == "ok" for s in statuses.values())
    failures = {f["path"]: f["compile"]["gfx942"]["first_error"] for f in units if f["compile"]["gfx942"]["status"] != "ok"}
    assert ok / len(units) >= 0.9, failures
    assert report["tools"]["torch_headers"]["origin"] in ("reconstruction", "install")
    assert statuses.get("csrc/causal_conv1d.cpp") == "ok", statuses
    # the binding source has no device code: one host-only pass, as cpp_extension's C++ compiler builds it
    host = {f["path"] for f in units if f.get("host_only")}
    assert host == {"csrc/causal_conv1d.cpp"}, host


def test_every_file_left_out_is_named_with_its_reason(sdist_run):
    for f in sdist_run["report"]["files"]:
        assert f["unit"] or f.get("not_compiled"), f["path"]
    assert sdist_run["report"]["summary"]["sources_not_compiled"] == 0


def test_every_file_names_its_translator_and_the_input_is_untouched(sdist_run):
    names = {f["translator"]["name"] for f in sdist_run["report"]["files"]}
    assert names <= {"hipify-clang", "hipify-perl", "torch.utils.hipify"}
    for f in sdist_run["report"]["files"]:
        if f["translator"]["name"] != "hipify-clang":
            assert f["translator"]["reason"], f
    assert sdist_run["before"] == sdist_run["after"]


SCATTER = "torch-scatter==2.1.2"
SCATTER_UNIT = "csrc/cuda/segment_coo_cuda.cu"


@pytest.fixture(scope="module")
def scatter_run(tmp_path_factory):
    """torch-scatter 2.1.2 cut to csrc/cuda/segment_coo_cuda.cu, for gfx942 (wave64) and gfx1100 (wave32):
    its csrc/cuda/utils.cuh overloads __shfl_up_sync / __shfl_down_sync for at::Half with a 32-bit mask
    outside its USE_ROCM branch (HIP's static assertion) and, inside it, shuffles at::Half with HIP's
    __shfl_up (ambiguous between HIP's float and __half overloads)."""
    image_or_skip()
    src = _unpacked_sdist(SCATTER, tmp_path_factory.mktemp("scatter"))
    for unit in [*src.rglob("*.cu"), *src.rglob("*.cpp")]:
        if unit.relative_to(src).as_posix() != SCATTER_UNIT:
            unit.unlink()
    out = tmp_path_factory.mktemp("out")
    proc = run_recipe(src, out, "/src", "--out", "/out/run", "--arch", "gfx942", "--arch", "gfx1100", "--jobs", "2",
                      "--fail-on", "never")
    assert proc.returncode == 0, proc.stderr[-3000:]
    return {"report": json.loads((out / "run" / "report.json").read_text()), "out": out / "run"}


def test_torch_extension_wrappers_of_warp_intrinsics_compile_on_wave64_and_wave32(scatter_run):
    files = {f["path"]: f for f in scatter_run["report"]["files"]}
    unit = files[SCATTER_UNIT]
    assert {a: r["status"] for a, r in unit["compile"].items()} == {"gfx942": "ok", "gfx1100": "ok"}, \
        {a: r["first_error"] for a, r in unit["compile"].items()}
    utils = files["csrc/cuda/utils.cuh"]
    assert utils["translator"]["name"] == "torch.utils.hipify"
    assert {"warp-sync-full-mask", "half-shuffle-overloads"} <= {x["id"] for x in utils["fixes"]}
    made = (scatter_run["out"] / "torch" / utils["translator"]["hipified_path"]).read_text()
    assert "__shfl_up_sync(((unsigned long long)(unsigned)(mask) << (__lane_id() & 32)), var.operator __half(), delta, 32)" in made
    assert "c10::Half __shfl_up(c10::Half var, unsigned int lane_delta)" in made


HIPIFY_UNITS = """
import json, sys
from pathlib import Path
from migrate import torch_ext
units = json.loads(sys.argv[1])
mapped = torch_ext.hipify_units(torch_ext.find(), Path("/src"), Path("/out/torch"), {u: tuple(d) for u, d in units.items()})
print(json.dumps(mapped))
"""


def test_each_copy_of_a_header_folder_serves_its_own_units(tmp_path):
    """DeepSpeed 0.19.8 ships csrc/ twice (csrc/ and deepspeed/ops/csrc/), each unit built with its own
    copy's includes/ folder. torch.utils.hipify resolves an include in every header folder it is given,
    the last match winning: hipified in one call, csrc/transformer/gelu_kernels.cu included the other
    copy's custom_hip_layers.h and its compile failed with 'custom_hip_layers.h' file not found (61 of
    the sdist's 114 units). Each unit's hipified include must resolve in its own folder."""
    image_or_skip()
    whole = _unpacked_sdist("deepspeed==0.19.8", tmp_path / "sdist")
    src = tmp_path / "src"
    units = {}
    for top in ("csrc", "deepspeed/ops/csrc"):
        for rel in ("includes", "transformer/gelu_kernels.cu"):
            target = src / top / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            (shutil.copytree if (whole / top / rel).is_dir() else shutil.copyfile)(whole / top / rel, target)
        units[f"{top}/transformer/gelu_kernels.cu"] = [f"{top}/includes"]
    proc = run_recipe(src, tmp_path / "out", "-c", HIPIFY_UNITS, json.dumps(units), entry=("python3",))
    assert proc.returncode == 0, proc.stderr[-3000:]
    mapped = json.loads(proc.stdout.strip().splitlines()[-1])
    out = tmp_path / "out" / "torch"
    for unit, (folder,) in units.items():
        text = (out / mapped[unit]).read_text()
        assert '#include "custom_hip_layers.h"' in text, text[:500]
        assert (out / folder / "custom_hip_layers.h").is_file(), sorted(p.name for p in (out / folder).iterdir())
        assert mapped[f"{folder}/custom_cuda_layers.h"] == f"{folder}/custom_hip_layers.h"


LIGHTGBM_UNITS = ("src/objective/cuda/cuda_rank_objective.cu", "src/treelearner/cuda/cuda_single_gpu_tree_learner.cpp")


def test_a_project_with_its_own_rocm_path_is_built_the_way_it_builds_for_rocm(tmp_path):
    """LightGBM 4.7.0 ships a ROCm build (`cmake -DUSE_ROCM=ON`: -DUSE_CUDA -DUSE_ROCM, cuda_rocm_interop.h's
    `#define cudaDeviceProp hipDeviceProp_t`, ...), which hands its sources to hipcc untranslated. Cut to
    two of its units: cuda_rank_objective.cu failed once hipify made that line `#define hipDeviceProp_t
    hipDeviceProp_t` (HIP 7 defines hipDeviceProp_t as a macro itself), and cuda_single_gpu_tree_learner.cpp
    calls a __device__ member from host code, which its build's C++ compiler accepts and a HIP compile
    does not."""
    image_or_skip()
    src = _unpacked_sdist("lightgbm==4.7.0", tmp_path / "sdist")
    for path in list(src.rglob("*.cu")) + list(src.rglob("*.cpp")):
        if path.relative_to(src).as_posix() not in LIGHTGBM_UNITS:
            path.unlink()
    out = tmp_path / "out"
    proc = run_recipe(src, out, "/src", "--out", "/out/run", "--arch", "gfx942", "--jobs", "2", "--fail-on", "never")
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads((out / "run" / "report.json").read_text())
    files = {f["path"]: f for f in report["files"]}
    status = {u: (files[u]["compile"]["gfx942"]["status"], files[u]["compile"]["gfx942"]["first_error"]) for u in LIGHTGBM_UNITS}
    assert all(s == "ok" for s, _error in status.values()), status
    inferred = {d["define"]: d["reason"] for d in report["options"]["project_flags"]["inferred_defines"]}
    assert inferred["USE_ROCM"].startswith("the project's own ROCm build switch") and "CMakeLists.txt:" in inferred["USE_ROCM"]
    # its ROCm build compiles the sources as they are: so does migrate
    translators = {f["translator"]["name"] for f in report["files"]}
    assert translators == {"none"}, translators
    assert files[LIGHTGBM_UNITS[0]]["translator"]["reason"].startswith("the project's own ROCm path (USE_ROCM)")
    assert files[LIGHTGBM_UNITS[1]].get("host_only"), files[LIGHTGBM_UNITS[1]]


def test_a_failure_names_the_build_line_of_the_define_it_lacks(tmp_path):
    """ggml (llama-cpp-python 0.3.36's vendor/llama.cpp/ggml) computes one define per flash-attention
    K/V type pair in CMake (cmake/common.cmake: `string(TOUPPER "GGML_CUDA_FA_${TYPE_K}_${TYPE_V}" ...)`,
    `add_compile_definitions(...)`), and src/ggml-cuda/fattn.cu reads them as values. Without the build's
    values the unit fails; the report ties the failure to a build-defined-macro finding that names that
    CMake line, not to its option-name template `GGML_${backend}`."""
    image_or_skip()
    try:
        sdist = fetch_sdist("llama-cpp-python==0.3.36", ROOT / "build" / "cache" / "sdists")
    except (OSError, RuntimeError) as exc:
        pytest.skip(f"cannot download the llama-cpp-python sdist from PyPI: {exc}")
    with tarfile.open(sdist) as tar:
        tar.extractall(tmp_path / "sdist", members=[m for m in tar.getmembers() if "/vendor/llama.cpp/ggml/" in m.name],
                       filter="data")
    src = next((tmp_path / "sdist").iterdir()) / "vendor" / "llama.cpp" / "ggml"
    keep_only(src, ["src/ggml-cuda/fattn.cu"])
    out = tmp_path / "out"
    proc = run_recipe(src, out, "/src", "--out", "/out/run", "--arch", "gfx942", "--jobs", "2", "--fail-on", "never")
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads((out / "run" / "report.json").read_text())
    unit = next(f for f in report["files"] if f["path"] == "src/ggml-cuda/fattn.cu")
    result = unit["compile"]["gfx942"]
    assert result["status"] == "failed" and "GGML_CUDA_FA_" in result["first_error"], result
    assert result["explained_by"]["rule"] == "build-defined-macro", result
    made = next(x for x in unit["findings"] if x["rule"] == "build-defined-macro")
    assert made["line"] == result["explained_by"]["line"] and made["text"], made
    assert made["note"].startswith("CMake computes it: `GGML_CUDA_FA_${TYPE_K}_${TYPE_V}` at cmake/common.cmake:"), made
    assert report["summary"]["unexplained"] == {"gfx942": 0}
