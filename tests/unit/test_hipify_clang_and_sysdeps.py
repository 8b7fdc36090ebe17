"""The migrate recipe's semantic translator setup (hipify-clang + a CUDA header layout) and the system
library flags (OpenMP, MPI) it derives per unit. Runs on the host: no image needed."""

from __future__ import annotations

import os
import sys
import sysconfig
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "recipes" / "migrate"))

from migrate import flags, pipeline, semantic, sysdeps  # noqa: E402


def _layout(root: Path, parts: tuple[str, ...] = semantic.LAYOUT) -> Path:
    for part in parts:
        target = root / part
        if part.endswith(".h"):
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text("#define CUDA_VERSION 12050\n")
        else:
            target.mkdir(parents=True, exist_ok=True)
    return root


@pytest.fixture()
def bin_dir(tmp_path):
    """A PATH folder holding an executable named hipify-clang (find_tool only checks it is there)."""
    folder = tmp_path / "bin"
    folder.mkdir()
    exe = folder / "hipify-clang"
    exe.write_text("#!/bin/sh\nexit 0\n")
    exe.chmod(0o755)
    return folder


def test_no_hipify_clang_on_path_means_hipify_perl(tmp_path):
    tool, why = semantic.find_tool({"PATH": str(tmp_path), semantic.CUDA_PATH_ENV: str(_layout(tmp_path / "cuda"))})
    assert tool is None and "hipify-clang not on PATH" in why


def test_cuda_path_unset_or_incomplete_is_named(tmp_path, bin_dir):
    tool, why = semantic.find_tool({"PATH": str(bin_dir)})
    assert tool is None and semantic.CUDA_PATH_ENV in why
    partial = _layout(tmp_path / "cuda", ("include/cuda.h", "bin"))
    tool, why = semantic.find_tool({"PATH": str(bin_dir), semantic.CUDA_PATH_ENV: str(partial)})
    assert tool is None and "nvvm/libdevice" in why and str(partial) in why


def test_complete_layout_gives_a_tool_and_the_unit_flags_reach_the_command(tmp_path, bin_dir):
    cuda = _layout(tmp_path / "cuda")
    tool, why = semantic.find_tool({"PATH": str(bin_dir), semantic.CUDA_PATH_ENV: str(cuda)})
    assert why == "" and tool is not None and tool.cuda_path == cuda
    args = semantic.command(tool, Path("/t/a.cu"), Path("/o/a.cu"), [Path("/t/include")], ["BF16_AVAILABLE", "N=4"])
    assert args[:4] == [str(bin_dir / "hipify-clang"), "/t/a.cu", "-o=/o/a.cu", f"--cuda-path={cuda}"]
    assert "-I=/t/include" in args and "-D=BF16_AVAILABLE" in args and "-D=N=4" in args
    clang = args[args.index("--") + 1:]
    # The CUDA headers must come before /usr/include (ROCm's thrust/ and hip/ live there).
    assert clang[clang.index("-isystem") + 1] == str(cuda / "include")
    assert "-nocudalib" in clang and "cuda" == clang[clang.index("-x") + 1]


def test_first_error_skips_hipify_clangs_own_driver_lines():
    output = ("error: cannot find libdevice for sm_52; provide path to different CUDA installation\n"
              "error: cannot find CUDA installation; provide its path via '--cuda-path'\n"
              "[HIPIFY] CUDA_VERSION: 12050\n"
              "/src/k.cu:12:10: fatal error: 'cutlass/cutlass.h' file not found\n"
              "/src/k.cu:40:3: error: use of undeclared identifier 'foo'\n")
    assert semantic.first_error(output) == "/src/k.cu:12:10: fatal error: 'cutlass/cutlass.h' file not found"
    assert semantic.first_error("Segmentation fault\n") == "Segmentation fault"


def _failing_parse(tmp_path: Path, bin_dir: Path, script: str) -> tuple[semantic.Outcome, Path]:
    """translate() with a hipify-clang that runs `script` (sh), into a file holding hipify-perl's text."""
    fake = bin_dir / "hipify-clang"
    fake.write_text("#!/bin/sh\n" + script)
    dst = tmp_path / "a.cu"
    dst.write_text("hipify-perl output\n")
    outcome = semantic.translate(semantic.Tool(fake, _layout(tmp_path / "cuda")), tmp_path / "src.cu", dst, [], [],
                                 timeout=30, perl=Path("/absent/hipify-perl"))
    return outcome, dst


def test_translate_keeps_hipify_perl_output_when_hipify_clang_fails(tmp_path, bin_dir):
    outcome, dst = _failing_parse(tmp_path, bin_dir, "echo \"/src/a.cu:1:10: fatal error: 'x.h' file not found\" >&2\nexit 1\n")
    assert not outcome.ok and "'x.h' file not found" in outcome.reason and "exit 1" in outcome.reason
    assert dst.read_text() == "hipify-perl output\n"
    assert not any(p.name.endswith(".hipify-clang") for p in tmp_path.iterdir())


def test_an_aborted_parse_says_so(tmp_path, bin_dir):
    """hipify-clang 7.2 aborts (SIGABRT, exit -6) after a fatal error such as a missing header."""
    outcome, _dst = _failing_parse(tmp_path, bin_dir,
                                   "echo \"/src/a.cu:3:10: fatal error: 'mpi.h' file not found\" >&2\nkill -ABRT $$\n")
    assert outcome.reason == "aborted (SIGABRT): /src/a.cu:3:10: fatal error: 'mpi.h' file not found"


OPENMP_FLAGS = ("-fopenmp", "-Wno-error=hip-omp-target-directives")


@pytest.mark.parametrize(("text", "expected"), [
    ("#include <omp.h>\nint f();\n", OPENMP_FLAGS),
    ("void f() {\n  #pragma omp parallel for\n  for (;;) {}\n}\n", OPENMP_FLAGS),
    ("// #pragma omp parallel\n/* #include <omp.h> */\n", ()),
    ("#include <cuda_runtime.h>\n", ()),
])
def test_openmp_flag(text, expected):
    assert sysdeps.flags_for([text]) == expected


def test_openmp_found_through_a_tree_header():
    edges = {"k.cu": [("inc/par.h", "inc")], "inc/par.h": [("inc/omp_use.h", "")], "inc/omp_use.h": []}
    texts = {"k.cu": '#include "par.h"\n', "inc/par.h": '#include "omp_use.h"\n', "inc/omp_use.h": "#include <omp.h>\n"}
    assert sysdeps.unit_flags(edges, texts, "k.cu") == OPENMP_FLAGS
    assert sysdeps.unit_flags(edges, {**texts, "inc/omp_use.h": ""}, "k.cu") == ()


def test_mpi_flags_come_from_the_installation(monkeypatch, tmp_path):
    sysdeps.mpi_flags.cache_clear()
    pc = tmp_path / "pkg-config"
    pc.write_text("#!/bin/sh\n[ \"$2\" = mpi ] && echo '-I/usr/lib/x86_64-linux-gnu/openmpi/include -pthread -L/x -lmpi'\n")
    pc.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    try:
        assert sysdeps.flags_for(["#include <mpi.h>\n"]) == ("-I/usr/lib/x86_64-linux-gnu/openmpi/include", "-pthread")
    finally:
        sysdeps.mpi_flags.cache_clear()


def test_flat_rocm_library_includes_get_the_librarys_folder(tmp_path):
    """cupy 14.2.0's own HIP code includes <hiprand_kernel.h>, which ROCm 6 moved to
    <hiprand/hiprand_kernel.h>; its build adds include/hiprand (install_build.py:167), and so does the
    compile here, only where the flat name is missing and the library's folder has it."""
    system = tmp_path / "include"
    (system / "hiprand").mkdir(parents=True)
    (system / "hiprand" / "hiprand_kernel.h").write_text("")
    (system / "hipblas.h").write_text("")
    (system / "hipblas").mkdir()
    (system / "hipblas" / "hipblas.h").write_text("")
    texts = ["#include <hiprand_kernel.h>\n#include <hipblas.h>\n#include <hipfft.h>\n", '#include "hiprand_kernel.h"\n']
    assert sysdeps.flags_for(texts, (str(system),)) == ("-isystem", str(system / "hiprand"))
    assert sysdeps.flags_for(["#include <hiprand/hiprand_kernel.h>\n"], (str(system),)) == ()


def test_hip_leaked_macros_are_plain_object_like_names_no_hip_macro_uses(tmp_path):
    hip = tmp_path / "include" / "hip"
    (hip / "amd_detail").mkdir(parents=True)
    (hip / "hip_runtime.h").write_text("#ifndef HIP_INCLUDE_HIP_HIP_RUNTIME_H\n#define HIP_INCLUDE_HIP_HIP_RUNTIME_H\n#endif\n")
    (hip / "amd_detail" / "amd_device_functions.h").write_text(
        "#define MASK1 0x00ff00ff\n#define MASK2 0xff00ff00\n#define HW_ID 4\n#define GETREG_IMMED(a, b) ((a) | (b))\n"
        "#define HW_ID_CU_ID_SIZE 4\n#define __hip_x 1\n#define hipFoo 2\n#define CUDA_SUCCESS hipSuccess\n"
        "#define AMD_X_H\n#define USES \\\n  HW_ID_CU_ID_SIZE\n")
    assert sysdeps.hip_leaked_macros((str(tmp_path / "include"),)) == frozenset({"MASK1", "MASK2", "HW_ID", "USES"})
    assert sysdeps.hip_leaked_macros((str(tmp_path),)) == frozenset()


def test_eigen_flags_come_from_pkg_config(monkeypatch, tmp_path):
    """Debian's libeigen3-dev keeps Eigen under /usr/include/eigen3: a unit that includes <Eigen/...> (or
    Eigen's unsupported modules) gets pkg-config's -I; a unit that does not gets nothing."""
    sysdeps.eigen_flags.cache_clear()
    pc = tmp_path / "pkg-config"
    pc.write_text("#!/bin/sh\n[ \"$2\" = eigen3 ] && echo '-I/usr/include/eigen3'\n")
    pc.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    try:
        eigen = ("-I/usr/include/eigen3", "-DEIGEN_USE_HIP")
        assert sysdeps.flags_for(["#include <Eigen/Dense>\n"]) == eigen
        assert sysdeps.flags_for(['#include "unsupported/Eigen/CXX11/Tensor"\n']) == eigen
        assert sysdeps.flags_for(["#include <EigenDense.h>\n// <Eigen/Dense>\n"]) == ()
        sysdeps.eigen_flags.cache_clear()
        pc.write_text("#!/bin/sh\nexit 1\n")  # no Eigen installed: the project's own copy still takes HIP's path
        assert sysdeps.flags_for(["#include <Eigen/Dense>\n"]) == ("-DEIGEN_USE_HIP",)
    finally:
        sysdeps.eigen_flags.cache_clear()


def test_python_c_api_units_get_the_interpreters_headers():
    """libKMCUDA 6.2.3's python.cc includes <Python.h> and <numpy/arrayobject.h>, lightseq's pybind units
    <pybind11/pybind11.h> (which includes Python.h), pycuda's <boost/python.hpp>: their builds pass Python's include folder (and
    NumPy's), and so does the compile, from the running interpreter; other units get nothing."""
    python = sysconfig.get_paths()["include"]
    flags = sysdeps.flags_for(["#include <pybind11/pybind11.h>\n"])
    assert flags[:2] == ("-isystem", python) and os.path.isfile(os.path.join(python, "Python.h"))
    assert sysdeps.flags_for(['#include "Python.h"\n#include <numpy/arrayobject.h>\n']) == flags
    # pycuda 2026.1's src/cpp/cuda.cpp reaches pyconfig.h through Boost.Python only
    assert sysdeps.flags_for(["#include <boost/python.hpp>\n"]) == flags
    assert sysdeps.flags_for(["#include <nanobind/nanobind.h>\n"]) == flags
    for folder in flags[3::2]:  # NumPy's, where this interpreter has NumPy
        assert os.path.isfile(os.path.join(folder, "numpy", "arrayobject.h"))
    assert sysdeps.flags_for(["#include <PythonQt.h>\n// #include <Python.h>\n"]) == ()
    # hipify-clang parses the unit with the same folders (cuvec 6.0.1's units failed with "'Python.h' file not found")
    assert pipeline.include_folders(flags)[0] == Path(python)
    assert pipeline.include_folders(("-fopenmp", "-I/a", "-I", "/b", "-isystem", "/c", "-DX")) == [Path("/a"), Path("/b"), Path("/c")]


def test_units_with_x86_intrinsics_get_the_builds_instruction_set_flags(tmp_path):
    """bmtrain 1.0.1's CMakeLists.txt passes `-mavx -mfma -mf16c -mavx512f` (or -march=native, the
    building machine's, which is not taken); its adam_cpu.hpp includes <immintrin.h> and calls
    _mm256_cvtph_ps (F16C). Units whose closure includes an intrinsics header get the flags, others not."""
    (tmp_path / "CMakeLists.txt").write_text(
        'if(NOT DEFINED ENV{BUILD_DOCKER_ENV})\n    set(AVX_FLAGS "${AVX_FLAGS} -march=native")\nelse()\n'
        '    set(AVX_FLAGS "${AVX_FLAGS} -mavx -mfma -mf16c -mavx512f")\nendif()\n'
        'set(CMAKE_CXX_FLAGS "${CMAKE_CXX_FLAGS} -mavx")  # again\n')
    (tmp_path / "tools").mkdir()
    (tmp_path / "tools" / "setup.py").write_text("extra_compile_args=['-O3', '-msse4.2', '-mno-avx', '-mcmodel=large']\n")
    found = flags.host_isa_flags(tmp_path)
    assert found == (("-mavx", "CMakeLists.txt:4"), ("-mfma", "CMakeLists.txt:4"), ("-mf16c", "CMakeLists.txt:4"),
                     ("-mavx512f", "CMakeLists.txt:4"), ("-msse4.2", "tools/setup.py:1"))
    texts = {"bind.cpp": '#include "adam_cpu.hpp"\n', "adam_cpu.hpp": "#include <immintrin.h>\n", "k.cu": "int x;\n",
             "tools/t.cpp": "#include <x86intrin.h>\n"}
    edges = {"bind.cpp": [("adam_cpu.hpp", "")]}
    # each flag for the host pass only; a unit gets the flags of the build files at or above its folder
    assert sysdeps.unit_flags(edges, texts, "bind.cpp", (), found)[-8:] == (
        "-Xarch_host", "-mavx", "-Xarch_host", "-mfma", "-Xarch_host", "-mf16c", "-Xarch_host", "-mavx512f")
    assert sysdeps.unit_flags(edges, texts, "tools/t.cpp", (), found)[-10:-8] == ("-Xarch_host", "-mavx")
    assert sysdeps.unit_flags(edges, texts, "tools/t.cpp", (), found)[-2:] == ("-Xarch_host", "-msse4.2")
    assert "-msse4.2" not in sysdeps.unit_flags(edges, texts, "bind.cpp", (), found)
    assert sysdeps.unit_flags(edges, texts, "k.cu", (), found) == ()
    assert flags.host_isa_flags(tmp_path / "CMakeLists.txt") == ()
