"""Which sources the migrate recipe compiles, and what its report and progress say about the rest:
C/C++ sources that use PyTorch's CUDA headers or CUDA types are units, every file not compiled is named
with its reason, counts are pluralized, the warp-sync define's reason follows the image's HIP version."""

import io
import sys
import tarfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "recipes" / "migrate"))
sys.path.insert(0, str(ROOT / "bench"))

from migrate import pipeline, report, tree  # noqa: E402
from migrate.archs import Arch  # noqa: E402
from migrate.compile import Result  # noqa: E402

from buildctl.console import UI  # noqa: E402
from buildctl.migrate import PROGRESS, _route, recipe_error  # noqa: E402

TORCH_CUDA = {
    "guard.cpp": "#include <torch/extension.h>\n#include <c10/cuda/CUDAGuard.h>\nvoid f() {}\n",
    "context.cpp": "#include <ATen/cuda/CUDAContext.h>\nvoid f() {}\n",
    "stream_type.cpp": "void launch(int n, cudaStream_t stream);\n",
    "namespace.cc": "#include <torch/extension.h>\nauto s() { return at::cuda::getCurrentCUDAStream(); }\n",
    "check.cpp": "void g() { C10_CUDA_KERNEL_LAUNCH_CHECK(); }\n",
    "driver.cpp": "CUresult r; CUstream s;\n",
}


def _tree(tmp_path: Path, files: dict[str, str]) -> tree.Tree:
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    return tree.discover(tmp_path)


def test_sources_using_torch_cuda_headers_or_cuda_types_are_units(tmp_path):
    found = _tree(tmp_path, {**TORCH_CUDA, "k.cu": "__global__ void k() {}\n",
                             "bind.cpp": "#include <torch/extension.h>\nbool on(at::Tensor x) { return x.is_cuda(); }\n",
                             "cuda_names.cpp": "// cudaStream_t in a comment is still text\nint cudaish = 1;\n"})
    units = {u.rel for u in tree.units(found)}
    assert units >= set(TORCH_CUDA) | {"k.cu"}, sorted(set(TORCH_CUDA) - units)
    assert "bind.cpp" not in units  # torch host code without CUDA use: the host compiler's


@pytest.mark.pypi
def test_causal_conv1d_binding_source_is_a_unit(tmp_path):
    from migrate_projects import fetch_sdist

    try:
        sdist = fetch_sdist("causal-conv1d==1.7.0", ROOT / "build" / "cache" / "sdists")
    except (OSError, RuntimeError) as exc:
        pytest.skip(f"cannot download the causal-conv1d sdist from PyPI: {exc}")
    with tarfile.open(sdist) as tar:
        tar.extractall(tmp_path, filter="data")
    src = next(tmp_path.iterdir()) / "csrc"
    units = {u.rel for u in tree.units(tree.discover(src))}
    assert units == {"causal_conv1d.cpp", "causal_conv1d_fwd.cu", "causal_conv1d_bwd.cu", "causal_conv1d_update.cu"}


def _data(files: list[dict], exit_code_archs=("gfx942",)) -> dict:
    return {"source": "/src", "archs": [{"name": a, "family": "CDNA3", "wavefront": 64, "lds_bytes": 65536}
                                        for a in exit_code_archs],
            "tools": {"hipcc": "HIP version: 7.2", "hipify_perl": "7.2"}, "timings": {"wall_s": 1.0},
            "options": {"baseline": False}, "defines": [], "skipped": [], "files": files}


def _file(path, kind, unit, status="ok"):
    return {"path": path, "kind": kind, "unit": unit, "findings": [], "fixes": [], "hipify_warnings": [],
            "compile": {"gfx942": {"status": status, "first_error": "", "log": "", "seconds": 1.0, "opt": "-O0"}}
            if unit else {}, "baseline": {}}


def test_headers_of_any_extension_that_a_source_includes_are_sources(tmp_path):
    # LightGBM 4.7.0 keeps its CUDA helpers in include/LightGBM/cuda/cuda_utils.hu; Eigen's headers
    # have no extension (<Eigen/Dense>); a file nothing includes stays out
    found = _tree(tmp_path, {
        "src/cuda/cuda_algorithms.cu": "#include <LightGBM/cuda/cuda_algorithms.hpp>\n__global__ void k() {}\n",
        "include/LightGBM/cuda/cuda_algorithms.hpp": "#include <LightGBM/cuda/cuda_utils.hu>\n",
        "include/LightGBM/cuda/cuda_utils.hu": "#include <cuda_runtime.h>\n#include <Eigen/Dense>\n",
        "external_libs/eigen/Eigen/Dense": '#include "Core"\n',
        "external_libs/eigen/Eigen/Core": "#define EIGEN_CORE_H\n",
        "external_libs/eigen/Eigen/Sparse": "#define EIGEN_SPARSE_H\n",
        "README": "#include <nothing>\n"})
    by_rel = {f.rel: f for f in found.files}
    assert set(by_rel) == {"src/cuda/cuda_algorithms.cu", "include/LightGBM/cuda/cuda_algorithms.hpp",
                           "include/LightGBM/cuda/cuda_utils.hu", "external_libs/eigen/Eigen/Dense",
                           "external_libs/eigen/Eigen/Core"}
    assert by_rel["include/LightGBM/cuda/cuda_utils.hu"].kind == "header"
    assert by_rel["include/LightGBM/cuda/cuda_utils.hu"].uses_cuda
    assert [u.rel for u in tree.units(found)] == ["src/cuda/cuda_algorithms.cu"]
    assert [f.rel for f in found.files] == sorted(by_rel)


def test_every_file_not_compiled_is_in_the_report_with_its_reason(tmp_path):
    found = _tree(tmp_path, {"k.cu": '#include "common.h"\n__global__ void k() {}\n', "common.h": "#define N 4\n",
                             "unused.h": "#define M 4\n", "host.cpp": "int main() { return 0; }\n"})
    reach = {"k.cu": {"k.cu", "common.h"}}
    reasons = pipeline.not_compiled(list(found.files), reach)
    assert set(reasons) == {"common.h", "unused.h", "host.cpp"}
    assert "compiled within the 1 unit that includes it (k.cu)" in reasons["common.h"]
    assert "no unit includes" in reasons["unused.h"]
    assert "host compiler" in reasons["host.cpp"]
    files = [_file("k.cu", "cu", True)] + [{**_file(rel, "header" if rel.endswith(".h") else "cxx", False),
                                            "not_compiled": why} for rel, why in reasons.items()]
    data = _data(files)
    data["summary"] = report.summarize(data, "error")
    assert data["summary"]["sources_not_compiled"] == 1 and data["summary"]["headers_not_included"] == 1
    md, page = report.to_markdown(data), report.to_html(data)
    section = md[md.index("## Not compiled"):md.index("## Files")]
    for rel, why in reasons.items():
        assert f"- {rel}: {why}" in section
        assert rel in page
    line = report.summary_line(data["summary"], Path("/out/report.html"))
    assert line.startswith("migrate: 1 unit; gfx942: 1 ok") and "1 C/C++ source without CUDA use not compiled" in line


def test_files_no_unit_reaches_and_without_cuda_are_copied_not_translated(tmp_path):
    """ggml's folder holds every backend: the SYCL and Vulkan sources are neither included by a CUDA
    unit nor use CUDA, so hipify-perl does not run on them; a CUDA header no unit includes still is."""
    from migrate import includes

    found = _tree(tmp_path, {"src/ggml-cuda/acc.cu": '#include "common.cuh"\n__global__ void k() {}\n',
                             "src/ggml-cuda/common.cuh": '#include "ggml.h"\n', "include/ggml.h": "#pragma once\n",
                             "src/ggml-sycl/common.hpp": "#include <sycl/sycl.hpp>\n",
                             "src/ggml-vulkan/vk.cpp": '#include "ggml.h"\nint main() { return 0; }\n',
                             "src/ggml-cuda/unused.cuh": "__device__ int f();\n",
                             "tools/stream.h": "cudaStream_t s();\n"})
    units = tree.units(found)
    graph = includes.IncludeGraph({f.rel: f.text for f in found.files})
    assert pipeline.unused_files(list(found.files), graph, units) == {"src/ggml-sycl/common.hpp", "src/ggml-vulkan/vk.cpp"}


def test_a_pytorch_header_is_never_taken_for_a_tree_file_whose_path_ends_the_same():
    """fvdb-core 0.6.0: dispatch/torch/types.h includes <torch/types.h>, PyTorch's; the tree's own file of that
    path suffix is not it (it would include itself through an -I dispatch the build never names)."""
    from migrate import includes

    graph = includes.IncludeGraph({"dispatch/torch/types.h": "#pragma once\n#include <torch/types.h>\n",
                                   "examples/relu.h": "#pragma once\n#include <torch/types.h>\n",
                                   "examples/relu.cu": '#include "relu.h"\n#include "dispatch/torch/types.h"\n'})
    assert graph.reach("examples/relu.cu") == {"examples/relu.cu", "examples/relu.h", "dispatch/torch/types.h"}
    closure = graph.closure("examples/relu.cu")
    assert closure.torch and closure.torch_header == "torch/types.h" and closure.dirs == (".",)


def test_units_only_left_out_and_their_headers_are_counted_as_left_out(tmp_path):
    """`--only 'ops/conv/*'` on fvdb-core 0.6.0: the other units and the headers only they include are
    reported as left out, not as sources without CUDA use or headers no unit includes."""
    from migrate import includes

    found = _tree(tmp_path, {"ops/conv/conv.cu": '#include "conv.h"\n__global__ void k() {}\n', "ops/conv/conv.h": "int c();\n",
                             "ops/pool/pool.cu": '#include "pool.h"\n__global__ void p() {}\n', "ops/pool/pool.h": "int p();\n",
                             "host/io.cpp": "int io() { return 0; }\n", "unused.h": "int u();\n"})
    graph = includes.IncludeGraph({f.rel: f.text for f in found.files})
    reasons = pipeline.not_compiled(list(found.files), {"ops/conv/conv.cu": graph.reach("ops/conv/conv.cu")},
                                    {"ops/pool/pool.cu": graph.reach("ops/pool/pool.cu")})
    assert reasons["ops/pool/pool.cu"] == report.LEFT_OUT and reasons["ops/pool/pool.h"] == report.INCLUDED_BY_LEFT_OUT
    assert reasons["unused.h"].startswith("header that no unit includes") and reasons["host/io.cpp"].startswith("C/C++ source")
    files = [_file("ops/conv/conv.cu", "cu", True)] + [
        {**_file(rel, "header" if rel.endswith(".h") else "cu" if rel.endswith(".cu") else "cxx", False), "not_compiled": why}
        for rel, why in reasons.items()]
    summary = report.summarize(_data(files), "error")
    assert (summary["units_left_out"], summary["sources_not_compiled"], summary["headers_not_included"]) == (1, 1, 1)
    assert "; 1 C/C++ source without CUDA use not compiled (report: Not compiled); 1 unit left out by --only;" in \
        report.summary_line(summary, Path("/o"))


def test_a_source_that_other_sources_include_is_compiled_within_them(tmp_path):
    """StarPU 1.4.10's examples/mult/sgemm.c and dgemm.c `#include "xgemm.c"`, which `#error`s when compiled
    alone; CUDA code often includes a kernel file (`#include "kernel.cu"`); a chain includes through a
    header. Two sources that include each other both stay units."""
    from migrate import includes

    found = _tree(tmp_path, {
        "mult/sgemm.c": '#define TYPE float\n#include "xgemm.c"\n',
        "mult/dgemm.c": '#define TYPE double\n#include "xgemm.c"\n',
        "mult/xgemm.c": '#ifndef TYPE\n#error "Do not compile xgemm.c directly"\n#endif\n#include <cuda_runtime.h>\n'
                        'void f() { cudaDeviceSynchronize(); }\n',
        "app/main.cu": '#include "kernels.cuh"\nint main() { return 0; }\n',
        "app/kernels.cuh": '#include "kernel.cu"\n', "app/kernel.cu": "__global__ void k() {}\n",
        "loop/a.cu": '#include "b.cu"\n__global__ void ka() {}\n',
        "loop/b.cu": '#pragma once\n#include "a.cu"\n__global__ void kb() {}\n',
        # XGBoost 3.4.1 src/objective/hinge.cc: its CPU build includes the .cu, its CUDA build compiles it
        "obj/hinge.cc": '#include <dmlc/registry.h>\n#ifndef XGBOOST_USE_CUDA\n#include "hinge.cu"\n#endif\n',
        "obj/hinge.cu": '#include <cuda_runtime.h>\n__global__ void hinge_k() {}\n',
        # torch-points-kernels 0.7.0: interpolate.cpp reaches the ATen CUDA headers through its utils.h
        "tpk/interpolate.cpp": '#include "utils.h"\nvoid three_nn();\n', "tpk/utils.h": "#include <ATen/cuda/CUDAContext.h>\n",
        "tpk/host.cpp": '#include "plain.h"\n', "tpk/plain.h": "int g();\n",
        # deepwave 0.1.0: acoustic.c includes a header whose CUDA qualifiers sit under #ifdef __CUDACC__ only
        "dw/acoustic.c": '#include "kernels.h"\nvoid step(void) {}\n',
        "dw/kernels.h": "#ifdef __CUDACC__\n#define HD __host__ __device__\n#else\n#define HD\n#endif\nHD int idx(int i);\n",
        # the CUDA samples' HSOpticalFlow: flowGold.cpp reaches CUDA through common.h, whose include sits inside
        # its include guard (no #if block), into helpers.h
        "hs/flowGold.cpp": '#include "common.h"\nvoid gold() {}\n',
        "hs/common.h": '#ifndef COMMON_H\n#define COMMON_H\n#include "helpers.h"\n#endif\n',
        "hs/helpers.h": "#pragma once\n#include <cuda_runtime.h>\ninline void sync() { cudaDeviceSynchronize(); }\n"})
    graph = includes.IncludeGraph({f.rel: f.text for f in found.files})
    units, included = graph.units_through_includes([f.rel for f in found.files if f.kind != "header"], tree.cuda_files(found))
    assert included == {"mult/xgemm.c": ["mult/dgemm.c", "mult/sgemm.c"], "app/kernel.cu": ["app/main.cu"]}
    # sgemm.c and dgemm.c use no CUDA by their own text: they are units through the file they include
    assert sorted(units) == ["app/main.cu", "hs/flowGold.cpp", "loop/a.cu", "loop/b.cu", "mult/dgemm.c", "mult/sgemm.c",
                             "obj/hinge.cu", "tpk/interpolate.cpp"]
    reasons = pipeline.not_compiled(list(found.files), {u: graph.reach(u) for u in units})
    assert reasons["mult/xgemm.c"].startswith(report.INCLUDED_SOURCE)
    assert "compiled within the 2 units that include it (mult/dgemm.c, mult/sgemm.c)" in reasons["mult/xgemm.c"]
    assert "(app/main.cu)" in reasons["app/kernel.cu"] and "loop/a.cu" in units and "loop/b.cu" in units
    files = [_file(u, "cu", True) for u in units] + [
        {**_file(rel, "header" if rel.endswith((".cuh", ".h")) else "cxx", False), "not_compiled": why} for rel, why in reasons.items()]
    summary = report.summarize(_data(files), "error")
    assert (summary["sources_not_compiled"], summary["sources_included"]) == (3, 2)  # hinge.cc, host.cpp, acoustic.c: the host compiler's
    assert "; 2 sources compiled within the sources that #include them;" in report.summary_line(summary, Path("/o"))


@pytest.mark.parametrize("units,words", [(1, "1 unit;"), (2, "2 units;"), (0, "0 units;")])
def test_summary_line_pluralizes(units, words):
    data = _data([_file(f"k{i}.cu", "cu", True) for i in range(units)])
    line = report.summary_line(report.summarize(data, "error"), Path("/out/report.html"))
    assert line.startswith(f"migrate: {words}"), line
    assert report.count(1, "file") == "1 file" and report.count(3, "file") == "3 files"


def test_fail_on_met_is_stated_in_the_result_line():
    data = _data([_file("k.cu", "cu", True, status="failed")])
    s = report.summarize(data, "error")
    assert s["exit_code"] == 1
    assert "--fail-on error met (exit 1): 1 failed compile" in report.summary_line(s, Path("/out/report.html"))
    assert "met" not in report.summary_line(report.summarize(data, "never"), Path("/out/report.html"))


def test_findings_in_files_no_unit_compiles_meet_no_fail_on():
    """The CUDA samples' Common/helper_math.h, which no sample of a subset includes: its open
    vector-type-operator errors are reported and counted apart, and exit 1 comes only from what a
    unit compiles (the unit, a header it includes)."""
    error = {"rule": "vector-type-operator", "severity": "error", "status": "open", "line": 3, "message": "m",
             "hint": "h", "suggestion": ""}
    lone = {**_file("Common/helper_math.h", "header", False), "findings": [error, error],
            "not_compiled": "header that no unit includes: not compiled"}
    data = _data([_file("k.cu", "cu", True), lone])
    s = report.summarize(data, "error")
    assert s["exit_code"] == 0 and s["findings"]["error"]["open"] == 2
    assert s["findings_not_compiled"] == {"error": 2, "warning": 0, "info": 0}
    line = report.summary_line(s, Path("/out/report.html"))
    assert "findings open: 2 error, 0 warning (2 error, 0 warning in files no unit compiles);" in line
    data["summary"] = s
    assert "in files no unit compiles (reported, meeting no --fail-on): 2 error, 0 warning, 0 info." in report.to_markdown(data)
    used = {**lone, "not_compiled": "header: compiled within the 1 unit that includes it (k.cu)"}
    assert report.summarize(_data([_file("k.cu", "cu", True), used]), "error")["exit_code"] == 1
    own = report.summarize(_data([{**_file("k.cu", "cu", True), "findings": [error]}]), "error")
    assert own["exit_code"] == 1
    assert report.summary_line(own, Path("/o")).endswith("met (exit 1): 1 open finding at or above error in compiled files")


SYNC_TREE = {"k.cu": "__global__ void k(int *x) { x[0] = __shfl_xor_sync(0xffffffffffffffffull, x[0], 1); }\n"}
ARCHS = (Arch("gfx942", "CDNA3", 64, 65536),)


@pytest.mark.parametrize("hipcc_output,expect,absent", [
    ("HIP version: 7.2.53211-9999\nclang version 22", "HIP 7.2 declares them by default", "only with this define"),
    ("HIP version: 6.4.43483-a187df25c\n", "HIP 6.4 declares them only with this define", "by default"),
    ("HIP version: 6.1.40093\n", "HIP 6.1 has none of them", "by default"),
    ("", "HIP version unknown", "HIP 7.2"),
])
def test_warp_sync_define_reason_follows_the_hip_version(hipcc_output, expect, absent):
    defines = pipeline._defines(SYNC_TREE, ARCHS, pipeline.hip_version(hipcc_output))
    (sync,) = [d for d in defines if d["name"] == "HIP_ENABLE_WARP_SYNC_BUILTINS"]
    assert expect in sync["reason"] and absent not in sync["reason"], sync["reason"]


def test_compile_progress_counts_units_per_arch():
    ok = Result("ok", "", "", 1.0, "-O0")
    bad = Result("failed", "e", "", 1.0, "-O0")
    line = pipeline.compile_progress("compile", {"a.cu": {"gfx942": ok, "gfx1100": ok},
                                                 "b.cu": {"gfx942": ok, "gfx1100": bad}}, 5)
    assert line == "compile: 2/5 units; gfx942: 2 ok; gfx1100: 1 ok, 1 failed"


@pytest.mark.parametrize("quiet", [False, True])
def test_recipe_progress_lines_reach_a_pipe_as_plain_lines(quiet):
    stream = io.StringIO()
    ui = UI(stream, quiet=quiet, tty=False)
    lines: list[str] = []
    with ui.status("migrate: running") as update:
        for line in [PROGRESS + "compile: 1/2 units; gfx942: 1 ok", "migrate: 2 units; gfx942: 2 ok"]:
            _route(line, lines, update)
    assert lines == ["migrate: 2 units; gfx942: 2 ok"]
    assert stream.getvalue() == ("" if quiet else "migrate: running\nmigrate: compile: 1/2 units; gfx942: 1 ok\n")


def test_a_deferred_status_in_a_pipe_prints_nothing_for_a_step_refused_before_progress():
    """`buildctl migrate` with a foreign non-empty --out, or a SRC without CUDA: the recipe refuses before
    its first progress line, and stderr holds only the error, not a 'running the recipe' line before it."""
    refused, started = io.StringIO(), io.StringIO()
    lines: list[str] = []
    with UI(refused, tty=False).status("migrate: running", defer=True) as update:
        _route("migrate: --out /o: folder is not empty and holds no previous migrate output", lines, update)
    with UI(started, tty=False).status("migrate: running", defer=True) as update:
        _route(PROGRESS + "3 files read", lines, update)
        _route(PROGRESS + "compile: 1/1 units", lines, update)
    assert refused.getvalue() == ""
    assert started.getvalue() == "migrate: running\nmigrate: 3 files read\nmigrate: compile: 1/1 units\n"


def test_recipe_error_is_its_last_migrate_line():
    assert recipe_error(["noise", "migrate: --arch: unknown value 'gfx9999' (allowed: gfx942)"]) == \
        "--arch: unknown value 'gfx9999' (allowed: gfx942)"
    assert recipe_error(["Traceback (most recent call last):"]) == ""


def test_hipblas_half_functions_get_cudas_half_type():
    """gptqmodel 7.7.0 exllamav3/hgemm.cu: cublasHgemm(..., &alpha_, b_ptr, ...) with half data; hipBLAS
    takes hipblasHalf (uint16_t) unless HIPBLAS_USE_HIP_HALF makes it __half, as cuBLAS's type is."""
    tree = {"hgemm.cu": "void f(hipblasHandle_t h, const half* a) {\n"
                        "  hipblasHgemm(h, HIPBLAS_OP_N, HIPBLAS_OP_N, 1, 1, 1, &alpha_, a, 1, a, 1, &beta_, c, 1);\n}\n"}
    (half,) = [d for d in pipeline._defines(tree, ARCHS) if d["name"] == "HIPBLAS_USE_HIP_HALF"]
    assert half["values"] == {"gfx942": ""} and "hipblasHgemm with CUDA's __half data" in half["reason"]
    # a tree written for hipBLAS's own uint16_t half type keeps it; hipblasGemmEx takes void pointers
    own = {"k.cu": tree["hgemm.cu"] + "hipblasHalf one = 0x3c00;\n"}
    assert not [d for d in pipeline._defines(own, ARCHS) if d["name"] == "HIPBLAS_USE_HIP_HALF"]
    # gptqmodel's exllamav2/cuda/compat_gemm.cuh casts the half data to hipblasHalf pointers: either type holds
    cast = {**tree, "compat_gemm.cuh": "hipblasHgemm(h, ta, tb, m, n, k, reinterpret_cast<const hipblasHalf *>(alpha),\n"
                                       "  reinterpret_cast<hipblasHalf *>(CP), ldc);\n"}
    assert [d for d in pipeline._defines(cast, ARCHS) if d["name"] == "HIPBLAS_USE_HIP_HALF"]
    ex = {"k.cu": "hipblasGemmEx(h, HIPBLAS_OP_N, HIPBLAS_OP_N, 1, 1, 1, &a, x, HIP_R_16F, 1, x, HIP_R_16F, 1, &b, y);\n"}
    assert not [d for d in pipeline._defines(ex, ARCHS) if d["name"] == "HIPBLAS_USE_HIP_HALF"]


def test_a_unit_whose_code_sits_in_an_undefined_macros_block_is_said_to_compile_empty():
    """dlib 20.0.1 dlib/cuda/cusolver_dlibapi.cu without DLIB_USE_CUDA: compiled "ok" with nothing in it."""
    from migrate import rules as rules_mod
    text = ("#ifndef DLIB_DNN_CuSOLVER_CU_\n#define DLIB_DNN_CuSOLVER_CU_\n\n#ifdef DLIB_USE_CUDA\n"
            "#include <cusolverDn.h>\nint f() { return 1; }\n#endif // DLIB_USE_CUDA\n\n#endif\n")
    files_out = {rel: {"findings": []} for rel in ("a.cu", "b.cu", "c.cu")}
    pipeline.note_guarded_units(files_out, rules_mod.load_rules(), {
        "a.cu": (text, ()), "b.cu": (text, ("DLIB_USE_CUDA=1",)),
        "c.cu": (text.replace("DLIB_USE_CUDA", "__CUDACC__"), ())})
    (found,) = files_out["a.cu"]["findings"]
    assert (found["rule"], found["line"], found["text"], found["severity"]) == (
        "unit-guarded-off", 4, "#ifdef DLIB_USE_CUDA", "warning")
    assert found["note"] == "DLIB_USE_CUDA is not defined for this unit"
    assert files_out["b.cu"]["findings"] == [] and files_out["c.cu"]["findings"] == []

def test_a_folder_holding_a_standard_library_is_never_searched():
    """CatBoost 1.2.10's CUDA build names its own libc++ (contrib/libs/cxxsupp/libcxxcuda11/include, with
    -nostdinc++): <cstdint> and <stdlib.h> must come from the toolchain, not from that folder, even when the
    build's include folders name it; a project folder beside it still resolves."""
    from migrate import includes
    texts = {"lib/cxx/include/cstdint": "#pragma once\n", "lib/cxx/include/stdlib.h": "#include_next <stdlib.h>\n",
             "src/util.h": "#pragma once\n", "src/k.cu": "#include <cstdint>\n#include <stdlib.h>\n#include <util.h>\n"}
    texts["lib/cxx/include/__thread/support/windows.h"] = "#pragma once\n"
    texts["src/win.cpp"] = "#ifdef _WIN32\n#include <windows.h>\n#endif\n"
    graph = includes.IncludeGraph(texts, include_dirs=("lib/cxx/include", "src"))
    assert graph.standard_folders == {"lib/cxx/include"}
    assert graph.reach("src/k.cu") == {"src/k.cu", "src/util.h"}
    # nor is a file below it a suffix match for a header the system lacks (Linux has no <windows.h>)
    assert graph.reach("src/win.cpp") == {"src/win.cpp"}


def test_cuda_qualifiers_only_for_clangs_cuda_mode_are_host_code():
    """LLVM flang-rt's api-attrs.h (vendored by CatBoost 1.2.10): `__host__ __device__` only under
    `defined(__CUDACC__) || defined(__CUDA__)`, which neither a host compiler nor hipcc defines."""
    header = "#if defined(__CUDACC__) || defined(__CUDA__)\n#define RT_API_ATTRS __host__ __device__\n#else\n#define RT_API_ATTRS\n#endif\n"
    assert not tree.host_uses_cuda(header)
    assert tree.host_uses_cuda(header.replace("defined(__CUDA__)", "defined(USE_GPU)"))


def test_an_include_named_in_an_error_directive_is_no_cuda_use():
    """LLVM flang-rt's complex.h (vendored by CatBoost 1.2.10): `#error #include <cuda/std/complex>` under a
    build switch is a message, not an #include; `using cuda::std::complex` behind the switch is libcu++, no CUDA API."""
    header = "#if RT_USE_LIBCUDACXX\n#error #include <cuda/std/complex>\n#endif\n#include <complex>\n"
    assert not tree.uses_cuda(header) and not tree.host_uses_cuda(header)
    assert tree.uses_cuda("  #  include <cuda/std/complex>\n")
