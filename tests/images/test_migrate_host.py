"""`buildctl migrate` from the host: a single .cu file as input, and failed units' first compiler errors
matched to the error case library in report.json, report.md and report.html."""

import json
import shutil
import subprocess
import sys

import pytest

from tests.images.conftest import ROOT, slice_cells

# A port in progress (it has HIP code paths): a 32-bit CUDA lane mask left in __match_any_sync, which
# HIP's static_assert refuses and which has no type-dispatched form (the shuffles and votes have one); the
# recipe leaves it open.
SOURCE = """#include <hip/hip_runtime.h>
__global__ void leader(const int* x, int* out) {
  unsigned m = __activemask();
  out[threadIdx.x] = __match_any_sync(m, x[threadIdx.x]);
}
"""
pytestmark = [pytest.mark.docker, pytest.mark.usefixtures("docker_engine")]


@pytest.mark.skipif(not slice_cells("dev"), reason="dev is not in the slice")
def test_single_file_with_doctor_matches(tmp_path):
    src = tmp_path / "leader.cu"
    src.write_text(SOURCE)
    out = tmp_path / "out"
    # gfx90a: any dev image of the release compiles for every offload arch (the slice builds gfx942's).
    result = subprocess.run([sys.executable, "-m", "buildctl", "migrate", str(src), "--arch", "gfx942",
                             "--arch", "gfx90a", "--out", str(out)], capture_output=True, text=True, cwd=ROOT,
                            timeout=600)
    assert result.returncode == 1, result.stderr  # open error findings meet the default --fail-on error
    # stdout is the one result line, ending with the error case library's count
    (line,) = result.stdout.splitlines()
    assert line.startswith("migrate: 1 unit;") and f"report: {out / 'report.html'} (also report.md, report.json);" in line
    assert line.endswith("; error case library (buildctl doctor): 2 of 2 failed compile result(s) matched a "
                         "known ROCm error, named in report.md"), line
    report = json.loads((out / "report.json").read_text())
    (entry,) = [f for f in report["files"] if f["unit"]]
    compiled = entry["compile"]["gfx942"]
    assert compiled["status"] == "failed"
    assert [m["id"] for m in compiled["doctor"]] == ["hip-warp-sync-mask-32bit"]
    assert "hip-warp-sync-mask-32bit" in (out / "report.html").read_text()
    handbook = (ROOT / "docs" / "troubleshooting.md").as_uri()
    assert f"({handbook}#hip-warp-sync-mask-32bit)" in (out / "report.md").read_text()
    assert report["source"] == str(src) and report["out"] == str(out)
    # the user's line that requested HIP's static assertion, with the host's path (not the container's /out)
    assert compiled["first_error"].startswith(f"{out}/hip/leader.cu:4:"), compiled["first_error"]
    assert "(in /usr/include/hip/amd_detail/amd_warp_sync_functions.h:" in compiled["first_error"]
    assert entry["compile"]["gfx90a"]["status"] == "failed"
    assert src.read_text() == SOURCE


KERNEL = """#include <hip/hip_runtime.h>
#include "decl.h"
__global__ void scale_{name}(float* x, float a) {{ x[threadIdx.x] *= a * WIDTH{tail}; }}
"""
# A project header without an include guard, as many real ones are: a second include would redefine WIDTH.
DECL = "#include <cstdint>\nstatic constexpr int WIDTH = 4;\n"


def _migrated_files(src, out, lines: list[str] | None = None):
    """`buildctl migrate SRC --arch gfx942 --arch gfx1100 --out OUT --fail-on never`, which must exit 0;
    report.json's files by path. lines: receives the stdout lines."""
    result = subprocess.run([sys.executable, "-m", "buildctl", "migrate", str(src), "--arch", "gfx942",
                             "--arch", "gfx1100", "--out", str(out), "--fail-on", "never"],
                            capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert result.returncode == 0, result.stderr
    if lines is not None:
        lines.extend(result.stdout.splitlines())
    return {f["path"]: f for f in json.loads((out / "report.json").read_text())["files"]}


@pytest.mark.skipif(not slice_cells("dev"), reason="dev is not in the slice")
def test_units_sharing_library_headers_share_a_pch_and_a_failure_is_not_decided_with_it(tmp_path):
    src, out = tmp_path / "proj", tmp_path / "out"
    src.mkdir()
    (src / "decl.h").write_text(DECL)
    for name, tail in (("a", ""), ("b", " + 1.0f"), ("c", " + undeclared_value")):
        (src / f"{name}.cu").write_text(KERNEL.format(name=name, tail=tail))
    files = _migrated_files(src, out)
    for name in ("a.cu", "b.cu"):
        for arch in ("gfx942", "gfx1100"):
            assert files[name]["compile"][arch]["status"] == "ok"
            assert "-include-pch" in (out / files[name]["compile"][arch]["log"]).read_text()
    for arch in ("gfx942", "gfx1100"):
        failed = files["c.cu"]["compile"][arch]
        assert failed["status"] == "failed"
        assert "undeclared_value" in failed["first_error"] and f"{out}/hip/c.cu:3:" in failed["first_error"]
        assert "-include-pch" not in (out / failed["log"]).read_text()  # decided by a compile without the PCH
    assert not (out / "build" / "hip" / "pch").exists()
    assert sorted(p.name for p in (out / "hip").iterdir()) == ["a.cu", "b.cu", "c.cu", "decl.h"]  # no copies left


PORTED = """#ifdef USE_ROCM
#include <hip/hip_runtime.h>
#else
#include <cuda_runtime.h>
#endif
__global__ void twice_{name}(float* x) {{ x[threadIdx.x] *= 2.0f; }}
"""


@pytest.mark.skipif(not slice_cells("dev"), reason="dev is not in the slice")
def test_units_without_a_leading_include_share_the_pch_of_the_implicit_hip_headers(tmp_path):
    """A project with its own ROCm path (its build defines USE_ROCM) is compiled untranslated: these units
    start with `#ifdef`, so no include is shared, and each is compiled as itself with the PCH of what clang
    puts before every HIP unit (__clang_hip_runtime_wrapper.h)."""
    src, out = tmp_path / "proj", tmp_path / "out"
    src.mkdir()
    (src / "CMakeLists.txt").write_text("add_compile_definitions(USE_ROCM)\n")
    for name in ("d", "e"):
        (src / f"{name}.cu").write_text(PORTED.format(name=name))
    lines: list[str] = []
    files = _migrated_files(src, out, lines)
    (line,) = lines
    assert line.startswith("migrate: 2 units;") and "error case library" not in line, line  # nothing failed
    for name in ("d.cu", "e.cu"):
        assert files[name]["translator"]["name"] == "none"
        for arch in ("gfx942", "gfx1100"):
            assert files[name]["compile"][arch]["status"] == "ok"
            command = (out / files[name]["compile"][arch]["log"]).read_text().split("\n", 1)[0]
            assert "-include-pch" in command
            assert command.split(" -c ", 1)[1].split(" ")[0].endswith(f"/hip/{name}")  # the unit itself, no copy
    assert not (out / "build" / "hip" / "pch").exists()
    assert sorted(p.name for p in (out / "hip").iterdir()) == ["d.cu", "e.cu"]  # no copies left


@pytest.mark.skipif(not slice_cells("dev"), reason="dev is not in the slice")
@pytest.mark.parametrize("setup, expect", [
    ("foreign-out", "folder is not empty and holds no previous migrate output"),
    ("no-cuda", "no CUDA sources found"),
])
def test_refusals_in_the_image_print_one_line_on_a_piped_stderr(tmp_path, setup, expect):
    """Refusals the recipe makes before its first step: stderr (a pipe here) holds only the one error
    line, without a 'running the recipe' progress line before it; exit 2; the user's files are kept."""
    src, out = tmp_path / "src", tmp_path / "out"
    src.mkdir()
    (src / "k.cu" if setup == "foreign-out" else src / "main.cpp").write_text(
        "__global__ void k() {}\n" if setup == "foreign-out" else "int main() { return 0; }\n")
    if setup == "foreign-out":
        out.mkdir()
        (out / "notes.txt").write_text("mine\n")
    result = subprocess.run([sys.executable, "-m", "buildctl", "migrate", str(src), "--arch", "gfx942",
                             "--out", str(out)], capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert result.returncode == 2, result.stderr
    (line,) = result.stderr.splitlines()
    assert line.startswith("buildctl: error: ") and expect in line, line
    assert result.stdout == ""
    assert sorted(p.name for p in out.iterdir()) == ["notes.txt"] if setup == "foreign-out" else not out.exists()


@pytest.mark.skipif(not slice_cells("dev"), reason="dev is not in the slice")
def test_a_unit_using_another_units_device_function_compiles_as_relocatable_device_code(tmp_path):
    """The CUDA samples' simpleSeparateCompilation: a kernel calls an extern __device__ function that
    another unit defines (nvcc -rdc=true). The device pass of the caller alone cannot link it; with
    -fgpu-rdc it compiles, and the report says so (whether another unit defines the symbol is the
    device link's question, which a compile check does not ask)."""
    src, out = tmp_path / "proj", tmp_path / "out"
    src.mkdir()
    (src / "lib.cu").write_text("#include <cuda_runtime.h>\n__device__ float twice(float x) { return 2.0f * x; }\n")
    (src / "main.cu").write_text("#include <cuda_runtime.h>\nextern __device__ float twice(float x);\n"
                                 "__device__ float (*ptr)(float) = twice;\n"
                                 "__global__ void k(float* x) { x[threadIdx.x] = twice(x[threadIdx.x]); }\n")
    files = _migrated_files(src, out)
    for arch in ("gfx942", "gfx1100"):
        assert files["main.cu"]["compile"][arch]["status"] == "ok", files["main.cu"]["compile"][arch]
        assert files["main.cu"]["compile"][arch]["rdc"] is True
        assert files["lib.cu"]["compile"][arch]["rdc"] is False
    assert "-fgpu-rdc" in (out / "report.md").read_text()


@pytest.mark.skipif(not slice_cells("dev"), reason="dev is not in the slice")
def test_a_checkout_whose_recipe_differs_from_the_images_is_told(tmp_path):
    """buildctl migrate runs the dev image's copy of recipes/migrate: a changed or added file of the
    checkout's is named (the CLI prints it as a warning, with `make images` to rebuild)."""
    import docker

    from buildctl.migrate import recipe_drift

    (cell,) = slice_cells("dev")[:1]
    shutil.copytree(ROOT / "recipes" / "migrate", tmp_path / "recipes" / "migrate",
                    ignore=shutil.ignore_patterns("__pycache__"))
    (tmp_path / "recipes" / "migrate" / "migrate" / "fp8.py").write_text("# changed\n")
    (tmp_path / "recipes" / "migrate" / "migrate" / "added.py").write_text("# new\n")
    drift = recipe_drift(docker.from_env(), cell.ref, tmp_path)
    assert {"migrate/fp8.py", "migrate/added.py"} <= set(drift), drift
