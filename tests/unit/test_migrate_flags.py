"""The project's own flags: a compilation database gives each unit's include folders and defines;
without it the build files' folders; angle includes never resolve to a tree's shim of a system header."""

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "recipes" / "migrate"))

from migrate import cmake, configure, features, flags, includes, setuppy
from migrate.errors import InputError


def tree(tmp_path: Path) -> Path:
    src = tmp_path / "proj"
    for rel, text in {
        "src/k.cu": '#include <unistd.h>\n#include <mylib/api.h>\n#include "helpers.cuh"\n',
        "src/helpers.cuh": "#pragma once\n",
        "include/mylib/api.h": "#pragma once\n",
        "compat/win/unistd.h": "// a shim for Windows builds\n",
        "other/mylib/api.h": "#pragma once\n",
        "CMakeLists.txt": "project(p)\ninclude_directories(${CMAKE_CURRENT_SOURCE_DIR}/include)\n"
                          "target_include_directories(k PRIVATE compat/win)\n",
    }.items():
        (src / rel).parent.mkdir(parents=True, exist_ok=True)
        (src / rel).write_text(text)
    return src


def texts(src: Path) -> dict[str, str]:
    return {p.relative_to(src).as_posix(): p.read_text() for p in src.rglob("*") if p.suffix in (".cu", ".cuh", ".h")}


def test_compile_commands_give_each_unit_its_folders_and_defines(tmp_path):
    src = tree(tmp_path)
    db = tmp_path / "compile_commands.json"
    build = "/home/dev/proj"  # where the project was built: not this tree's path
    db.write_text(json.dumps([
        {"directory": f"{build}/build", "file": f"{build}/src/k.cu",
         "command": f"nvcc -I{build}/include -isystem /usr/local/cuda/include -DUSE_FAST=1 -D WITH_X -UOLD -c ../src/k.cu"},
        {"directory": f"{build}/build", "file": "../tools/gen.cu", "arguments": ["nvcc", "-I", "../include", "-c", "x"]},
    ]))
    found = flags.project_flags(src, set(texts(src)), db, ("src",), ("EXTRA",))
    unit = found.for_unit("src/k.cu")
    assert unit.include_dirs == ("include", "src")
    assert unit.defines == ("USE_FAST=1", "WITH_X", "EXTRA") and unit.undefines == ("OLD",)
    assert found.outside == ("/usr/local/cuda/include",)


@pytest.mark.parametrize("content, message", [
    ("{", "not a readable JSON file"),
    ('{"a": 1}', "expected a JSON list"),
    ('[{"file": "x.cu"}]', "entry 0: expected directory and file strings"),
    ('[{"directory": "/b", "file": "x.cu"}]', "entry 0: expected `arguments`"),
    ('[{"directory": "/b", "file": "/b/nothere.cu", "command": "nvcc -c x"}]', "none of its 1 files is in the source tree"),
])
def test_bad_compile_commands_one_line(tmp_path, content, message):
    src = tree(tmp_path)
    db = tmp_path / "cc.json"
    db.write_text(content)
    with pytest.raises(InputError, match=message):
        flags.project_flags(src, set(texts(src)), db, (), ())


def test_build_files_name_the_folders_without_a_database(tmp_path):
    src = tree(tmp_path)
    assert flags.project_flags(src, set(texts(src)), None, (), ()).common.include_dirs == ("include", "compat/win")
    with pytest.raises(InputError, match="--include-dir ../x: not a folder of the source tree"):
        flags.project_flags(src, set(texts(src)), None, ("../x",), ())
    with pytest.raises(InputError, match="--define 1X: expected NAME"):
        flags.project_flags(src, set(texts(src)), None, (), ("1X",))


def test_cmake_variables_and_project_folders_resolve(tmp_path):
    # LightGBM 4.7.0 CMakeLists.txt: a set() variable; XGBoost 3.4.1: the C++ project sits in cpp_src/
    # below the sdist's own CMakeLists.txt, src/CMakeLists.txt names ${xgboost_SOURCE_DIR}/include,
    # the top one a $<BUILD_INTERFACE:...> folder; an unknown variable names nothing
    for rel, text in {
        "lgb/CMakeLists.txt": 'project(lightgbm LANGUAGES C CXX)\nset(EIGEN_DIR "${PROJECT_SOURCE_DIR}/external_libs/eigen")\n'
                              "include_directories(${EIGEN_DIR})\nset(LightGBM_HEADER_DIR ${PROJECT_SOURCE_DIR}/include)\n"
                              "include_directories(${LightGBM_HEADER_DIR})\ninclude_directories(${CUDAToolkit_INCLUDE_DIRS})\n",
        "xgb/CMakeLists.txt": "project(xgboost_python LANGUAGES NONE)\n",
        "xgb/cpp_src/CMakeLists.txt": "project(xgboost LANGUAGES CXX C VERSION 3.4.1)\n"
                                      "target_include_directories(xgboost\n  INTERFACE\n  $<INSTALL_INTERFACE:$<INSTALL_PREFIX>/include>\n"
                                      "  $<BUILD_INTERFACE:${CMAKE_CURRENT_LIST_DIR}/include>)\n",
        "xgb/cpp_src/src/CMakeLists.txt": "target_include_directories(objxgboost\n  PRIVATE\n  ${xgboost_SOURCE_DIR}/include\n"
                                          "  ${xgboost_SOURCE_DIR}/dmlc-core/include)\n",
    }.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    for folder in ("lgb/include", "lgb/external_libs/eigen", "xgb/cpp_src/include", "xgb/cpp_src/dmlc-core/include"):
        (tmp_path / folder).mkdir(parents=True)
    assert flags.infer_from_build_files(tmp_path / "lgb") == ("external_libs/eigen", "include")
    assert set(flags.infer_from_build_files(tmp_path / "xgb")) == {"cpp_src/include", "cpp_src/dmlc-core/include"}


LGB_UNIT = """/*!
 * Copyright (c) 2021-2026 Microsoft Corporation. All rights reserved.
 */

#ifdef USE_CUDA

#include <LightGBM/cuda/cuda_algorithms.hpp>

namespace LightGBM {
__global__ void K(double* v) { v[threadIdx.x] = 0; }
}  // namespace LightGBM

#endif  // USE_CUDA
"""


def test_a_define_that_guards_whole_units_is_taken_from_the_build(tmp_path):
    # LightGBM 4.7.0: every CUDA source sits in #ifdef USE_CUDA, CMakeLists.txt adds -DUSE_CUDA under
    # if(USE_CUDA); without it the units compile to nothing
    (tmp_path / "CMakeLists.txt").write_text('option(USE_CUDA "Enable CUDA-accelerated training " OFF)\n'
                                             "if(USE_CUDA)\n    add_definitions(-DUSE_CUDA)\nendif()\n"
                                             "target_compile_definitions(x PRIVATE GUARD_B=2)\n")
    units = {"src/a.cu": LGB_UNIT, "src/b.cu": LGB_UNIT.replace("#ifdef USE_CUDA", "#if defined(USE_CUDA)"),
             "src/c.cu": LGB_UNIT.replace("USE_CUDA", "GUARD_B"),
             "src/d.cu": LGB_UNIT.replace("#endif  // USE_CUDA", "#endif\n__global__ void L() {}"),
             "src/e.cu": LGB_UNIT.replace("USE_CUDA", "NOT_IN_THE_BUILD")}
    found = flags.unit_guard_defines(tmp_path, units, ())
    assert [d for d, _why in found] == ["USE_CUDA", "GUARD_B=2"]
    assert found[0][1] == "guards all the code of 2 units (src/a.cu, src/b.cu); the build defines it at CMakeLists.txt:3"
    assert flags.unit_guard_defines(tmp_path, units, ("USE_CUDA=0",)) == found[1:]  # the user's own value wins
    project = flags.project_flags(tmp_path, set(units), None, (), ("X",), units)
    assert project.common.defines == ("USE_CUDA", "GUARD_B=2", "X") and project.inferred == found
    assert flags.whole_unit_guard(LGB_UNIT.replace("#endif  // USE_CUDA", "#else\nint x;\n#endif")) is None


def test_a_guard_inside_the_units_include_guard_defined_by_a_config_template(tmp_path):
    """dlib 20.0.1: dlib/cuda/cusolver_dlibapi.cu and the CUDA .cpp units hold all their code in
    `#ifdef DLIB_USE_CUDA` inside their own include guard; CMake's `option(DLIB_USE_CUDA ...)` turns
    dlib/config.h.in's `#cmakedefine DLIB_USE_CUDA` into a #define of the generated config.h."""
    (tmp_path / "dlib").mkdir()
    (tmp_path / "dlib" / "CMakeLists.txt").write_text("option(DLIB_USE_CUDA ${DLIB_USE_CUDA_STR} ON)\n"
                                                      "toggle_preprocessor_switch(DLIB_USE_CUDA)\n")
    (tmp_path / "dlib" / "config.h.in").write_text("// config\n#cmakedefine ENABLE_ASSERTS\n#cmakedefine DLIB_USE_CUDA\n")
    unit = ("// Copyright (C) 2017  Davis E. King\n#ifndef DLIB_DNN_CuSOLVER_CU_\n#define DLIB_DNN_CuSOLVER_CU_\n\n"
            "#ifdef DLIB_USE_CUDA\n\n#include \"cusolver_dlibapi.h\"\n#include <cusolverDn.h>\nint f() { return 1; }\n"
            "#endif // DLIB_USE_CUDA\n\n#endif // DLIB_DNN_CuSOLVER_CU_\n")
    cpp_unit = "#pragma once\n#ifdef DLIB_USE_CUDA\n#include <cublas_v2.h>\nint g();\n#endif\n"
    found = flags.unit_guard_defines(tmp_path, {"dlib/cuda/cusolver_dlibapi.cu": unit,
                                                "dlib/cuda/cublas_dlibapi.cpp": cpp_unit}, ())
    assert found == (("DLIB_USE_CUDA", "guards all the code of 2 units (dlib/cuda/cublas_dlibapi.cpp, "
                      "dlib/cuda/cusolver_dlibapi.cu); the build defines it at dlib/config.h.in:3 (#cmakedefine, "
                      "on when its CMake option is)"),)
    # an include guard alone guards nothing to infer; code outside the inner block is not guarded
    assert flags.whole_unit_guard("#ifndef A_H\n#define A_H\nint x;\n#endif\n") is None
    assert flags.whole_unit_guard(unit.replace("#endif // DLIB_USE_CUDA\n", "#endif // DLIB_USE_CUDA\nint y;\n")) is None



def test_a_unit_in_one_bare_if_block_is_guarded_by_its_macro_which_a_python_nvcc_build_defines(tmp_path):
    # warp-lang 0.8.0: warp/native/cuda_util.cpp is one `#if WP_ENABLE_CUDA` block, and warp/build.py runs nvcc
    # with -DWP_ENABLE_CUDA=1; `#if 0` guards no macro
    (tmp_path / "warp" / "native").mkdir(parents=True)
    (tmp_path / "warp" / "build.py").write_text(
        "def build(cuda_home, cu_path):\n    cmd = f'\"{cuda_home}/bin/nvcc\" -O3 -DWP_CUDA -DWP_ENABLE_CUDA=1 -c \"{cu_path}\"'\n")
    unit = "/** Copyright */\n\n#if WP_ENABLE_CUDA\n\n#include \"cuda_util.h\"\nint f() { return 1; }\n\n#endif // WP_ENABLE_CUDA\n"
    assert flags.whole_unit_guard(unit) == "WP_ENABLE_CUDA"
    assert flags.whole_unit_guard(unit.replace("#if WP_ENABLE_CUDA", "#if 0")) is None
    assert flags.unit_guard_defines(tmp_path, {"warp/native/cuda_util.cpp": unit}, ()) == (
        ("WP_ENABLE_CUDA=1", "guards all the code of 1 unit (warp/native/cuda_util.cpp); the build defines it at "
                             "warp/build.py:2"),)


def test_system_header_is_never_a_tree_shim(tmp_path):
    """<unistd.h> is the system one even when the tree has compat/win/unistd.h (found by suffix
    before), unless the build puts that folder on the path; project headers resolve by the build's
    folders first, then by suffix."""
    src = tree(tmp_path)
    system = tmp_path / "sysroot"
    (system / "unistd.h").parent.mkdir(parents=True)
    (system / "unistd.h").write_text("")
    graph = includes.IncludeGraph(texts(src), system_dirs=(str(system),))
    assert "compat/win" not in graph.closure("src/k.cu").dirs
    assert "compat/win/unistd.h" not in graph.reach("src/k.cu")
    declared = includes.IncludeGraph(texts(src), include_dirs=("include",), system_dirs=(str(system),))
    assert "include/mylib/api.h" in declared.reach("src/k.cu") and "other/mylib/api.h" not in declared.reach("src/k.cu")
    assert declared.closure("src/k.cu").dirs == ("include",)


def test_a_standard_library_folder_of_the_tree_is_never_put_on_the_include_path():
    """cupy 14.2.0 vendors CCCL: cuda/std/__cccl/builtin.h's `#include <__memory/addressof.h>` (libc++'s,
    in a branch for libc++) matched the tree's libcudacxx/include/cuda/std/__memory/addressof.h; with
    that folder on the path, the unit's <cmath> and <cstdint> became libcu++'s own."""
    texts = {"cupy/_core/include/cupy/cupy_cub.cu": "#include <cuda/std/__cccl/builtin.h>\n#include <cmath>\n",
             "cccl/libcudacxx/include/cuda/std/__cccl/builtin.h": "#include <__memory/addressof.h>\n",
             "cccl/libcudacxx/include/cuda/std/__memory/addressof.h": "",
             "cccl/libcudacxx/include/cuda/std/cstdint": "", "cccl/libcudacxx/include/cuda/std/cmath": ""}
    graph = includes.IncludeGraph(texts)
    dirs = graph.closure("cupy/_core/include/cupy/cupy_cub.cu").dirs
    assert dirs == ("cccl/libcudacxx/include",)
    assert "cccl/libcudacxx/include/cuda/std/__memory/addressof.h" not in graph.reach("cupy/_core/include/cupy/cupy_cub.cu")


def test_includes_under_an_ifndef_of_a_defined_switch_are_not_followed():
    """cupy 14.2.0 with its ROCm switch CUPY_USE_HIP defined: cupy_cub.cu's `#ifndef CUPY_USE_HIP`
    CUB and Thrust includes are never read, so the vendored CCCL folders stay off the include path
    (there, hipcub's own <thrust/...> include found CCCL's Thrust and its cuda_runtime_api.h)."""
    texts = {"cupy/cuda/cupy_cub.cu": "#ifndef CUPY_USE_HIP\n#include <thrust/iterator/counting_iterator.h>\n#else\n"
                                      "#include <hipcub/device/device_reduce.hpp>\n#endif\n",
             "cupy/_core/include/cupy/_cccl/thrust/thrust/iterator/counting_iterator.h": ""}
    assert includes.IncludeGraph(texts).closure("cupy/cuda/cupy_cub.cu").dirs == ("cupy/_core/include/cupy/_cccl/thrust",)
    graph = includes.IncludeGraph(texts, defined=frozenset({"CUPY_USE_HIP"}))
    assert graph.closure("cupy/cuda/cupy_cub.cu").dirs == () and len(graph.reach("cupy/cuda/cupy_cub.cu")) == 1


def test_a_header_missing_from_one_program_folder_is_not_taken_from_another():
    """HeCBench (as stored): ced-cuda/main.cu includes "kernel.h", which its folder lacks; ert-cuda/ has
    its own main() and kernel.h, another program's. A folder without main() (the CUDA samples'
    Common/) still serves every folder, and a subfolder its parent."""
    texts = {"src/ced-cuda/main.cu": '#include "kernel.h"\n#include <helper_cuda.h>\n#include "util/timer.h"\nint main() {}\n',
             "src/ert-cuda/main.cu": '#include "kernel.h"\nint main(int argc, char** argv) {}\n', "src/ert-cuda/kernel.h": "",
             "src/Common/helper_cuda.h": "", "src/ced-cuda/util/timer.h": ""}
    graph = includes.IncludeGraph(texts)
    reach = graph.reach("src/ced-cuda/main.cu")
    assert "src/ert-cuda/kernel.h" not in reach and "src/Common/helper_cuda.h" in reach
    assert "src/ced-cuda/util/timer.h" in reach and graph.closure("src/ced-cuda/main.cu").dirs == ("src/Common",)
    # DeepSpeed 0.19.8: ragged_ops/moe_gather/moe_gather_cuda.cu includes "top_k_gating.cuh" of its
    # sibling kernel folder; neither defines main(), so the library's folders serve each other
    library = {"ragged_ops/moe_gather/moe_gather_cuda.cu": '#include "top_k_gating.cuh"\n',
               "ragged_ops/top_k_gating/top_k_gating_cuda.cu": "", "ragged_ops/top_k_gating/top_k_gating.cuh": ""}
    assert "ragged_ops/top_k_gating/top_k_gating.cuh" in includes.IncludeGraph(library).reach("ragged_ops/moe_gather/moe_gather_cuda.cu")
    # HeCBench (as stored): mmcsf-cuda/ has kernels.cu and util.h but its main() is not in the copy; in a
    # collection, interleave-cuda/main.cu's "util.h" (missing beside it) is not mmcsf's
    suite = {"interleave-cuda/main.cu": '#include "util.h"\nint main() {}\n', "interleave-cuda/util.cpp": "",
             "mmcsf-cuda/kernels.cu": '#include "util.h"\n', "mmcsf-cuda/util.h": "",
             "ced-cuda/main.cu": "int main() {}\n", "Common/helper_cuda.h": ""}
    assert "mmcsf-cuda/util.h" not in includes.IncludeGraph(suite).reach("interleave-cuda/main.cu")
    # one program beside its library's source folder: app/main.cu's "kernels.h" is src/'s
    app = {"app/main.cu": '#include "kernels.h"\nint main() {}\n', "src/kernels.cu": "", "src/kernels.h": ""}
    assert "src/kernels.h" in includes.IncludeGraph(app).reach("app/main.cu")


def test_cuda_runtime_guard_follows_the_renamed_include():
    text = ('#include "hip/hip_runtime.h"\n#ifdef __CUDA_RUNTIME_H__\n__device__ int helper();\n#endif\n'
            "#if defined(__CUDA_RUNTIME_API_H__) && X\n#endif\n#define HAS_RUNTIME defined(__CUDA_RUNTIME_H__)\n")
    out = features.runtime_guard(text)
    assert "#ifdef HIP_INCLUDE_HIP_HIP_RUNTIME_H\n" in out and "#if defined(HIP_INCLUDE_HIP_HIP_RUNTIME_API_H) && X" in out
    assert out.endswith("#define HAS_RUNTIME defined(__CUDA_RUNTIME_H__)\n")  # only tests are rewritten


def test_library_header_guards_follow_the_renamed_includes():
    """The CUDA samples' Common/helper_cuda.h: checkCudaErrors under driver_types.h's guard, cuBLAS and
    cuRAND error strings under theirs; a vendored header that defines its own guard keeps it."""
    text = ("#ifdef __DRIVER_TYPES_H__\n#define checkCudaErrors(val) check((val), #val)\n#endif\n"
            "#ifdef CUBLAS_API_H_\n#endif\n#if defined(CURAND_H_) || defined(_CUFFT_H_)\n#endif\n#ifdef CUSPARSEAPI\n#endif\n")
    out = features.runtime_guard(text)
    assert out.startswith("#ifdef HIP_INCLUDE_HIP_DRIVER_TYPES_H\n")
    assert "#ifdef HIPBLAS_H\n" in out and "#if defined(HIPRAND_H_) || defined(HIPFFT_H_)" in out
    assert "#ifdef CUSPARSEAPI" in out  # a macro of cusparse.h, not its include guard: left
    vendored = "#ifndef CU_COMPLEX_H_\n#define CU_COMPLEX_H_\n#endif\n"
    assert features.runtime_guard(vendored) == vendored


# Entries and a response file as CMake 4.4 wrote them for LightGBM 4.7.0 (`cmake -G "Unix Makefiles"
# -DUSE_CUDA=ON -DCMAKE_EXPORT_COMPILE_COMMANDS=ON -DCMAKE_CUDA_USE_RESPONSE_FILE_FOR_INCLUDES=ON
# -DCMAKE_CXX_USE_RESPONSE_FILE_FOR_INCLUDES=ON`, nvcc 13.0), paths shortened: nvcc gets the include
# folders through `--options-file`, g++ through `@file`, both relative to the entry's directory.
LGBM = "/work/lightgbm-4.7.0"
LGBM_DEFINES = "-DEIGEN_DONT_PARALLELIZE -DEIGEN_MPL2_ONLY -DMM_MALLOC -DMM_PREFETCH -DUSE_CUDA -DUSE_SOCKET"
LGBM_RSP = (f'-I"{LGBM}/external_libs/eigen" -I"{LGBM}/external_libs/fmt/include" '
            '-I"/usr/local/cuda/targets/x86_64-linux/include" '
            f'-I"{LGBM}/include" -I"{LGBM}/build-make/external_libs/nanoarrow/src"')


def lightgbm_tree(tmp_path: Path) -> Path:
    src = tmp_path / "lightgbm"
    for rel in ("src/cuda/cuda_algorithms.cu", "src/cuda/cuda_utils.cpp", "include/LightGBM/cuda/cuda_utils.hu",
                "external_libs/eigen/Eigen/Dense", "external_libs/fmt/include/fmt/format.h"):
        (src / rel).parent.mkdir(parents=True, exist_ok=True)
        (src / rel).write_text("// x\n")
    return src


def lightgbm_db(folder: Path, build: str = f"{LGBM}/build-make") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    db = folder / "compile_commands.json"
    db.write_text(json.dumps([
        {"directory": build,
         "command": f"/usr/local/cuda/bin/nvcc -forward-unknown-to-host-compiler -ccbin=/opt/gcc/bin/g++ {LGBM_DEFINES} "
                    "--options-file CMakeFiles/lightgbm_objs.dir/includes_CUDA.rsp  -Xcompiler=-fopenmp -Xcompiler=-fPIC "
                    '-O3 -lineinfo -std=c++17 "--generate-code=arch=compute_90,code=[compute_90,sm_90]" -x cu -rdc=true '
                    f"-c {LGBM}/src/cuda/cuda_algorithms.cu -o CMakeFiles/lightgbm_objs.dir/src/cuda/cuda_algorithms.cu.o",
         "file": f"{LGBM}/src/cuda/cuda_algorithms.cu"},
        {"directory": build,
         "command": f"/opt/gcc/bin/g++ {LGBM_DEFINES} @CMakeFiles/lightgbm_objs.dir/includes_CXX.rsp  -fopenmp -O3 -fPIC "
                    f"-std=gnu++17 -o CMakeFiles/lightgbm_objs.dir/src/cuda/cuda_utils.cpp.o -c {LGBM}/src/cuda/cuda_utils.cpp",
         "file": f"{LGBM}/src/cuda/cuda_utils.cpp"},
    ]))
    return db


def write_rsp(build_folder: Path) -> None:
    for lang in ("CUDA", "CXX"):
        rsp = build_folder / "CMakeFiles" / "lightgbm_objs.dir" / f"includes_{lang}.rsp"
        rsp.parent.mkdir(parents=True, exist_ok=True)
        rsp.write_text(LGBM_RSP)


LGBM_DIRS = ("external_libs/eigen", "external_libs/fmt/include", "include", "build-make/external_libs/nanoarrow/src")


@pytest.mark.parametrize("where", ["beside-database", "build-folder-in-tree"])
def test_response_files_of_a_cmake_makefile_build_are_read(tmp_path, where):
    """CMake's Makefile generator hands nvcc its include folders in `--options-file` and g++ in `@file`:
    found beside the database (the build folder compile_commands.json was written to) or in a build
    folder inside the tree, each unit gets them, in order, with its defines."""
    src = lightgbm_tree(tmp_path)
    if where == "beside-database":
        db = lightgbm_db(tmp_path / "copied-build")
        write_rsp(tmp_path / "copied-build")
    else:
        db = lightgbm_db(tmp_path / "elsewhere")
        write_rsp(src / "build-make")
    rels = {p.relative_to(src).as_posix() for p in src.rglob("*") if p.is_file()}
    found = flags.project_flags(src, rels, db, (), ())
    for unit in ("src/cuda/cuda_algorithms.cu", "src/cuda/cuda_utils.cpp"):
        own = found.for_unit(unit)
        assert own.include_dirs == LGBM_DIRS, unit
        assert own.defines == ("EIGEN_DONT_PARALLELIZE", "EIGEN_MPL2_ONLY", "MM_MALLOC", "MM_PREFETCH", "USE_CUDA",
                               "USE_SOCKET")
    assert found.outside == ("/usr/local/cuda/targets/x86_64-linux/include",)
    assert found.unread_options == ()


def test_a_response_file_that_is_nowhere_is_named_not_fatal(tmp_path):
    src = lightgbm_tree(tmp_path)
    db = lightgbm_db(tmp_path / "only-the-json")
    rels = {p.relative_to(src).as_posix() for p in src.rglob("*") if p.is_file()}
    found = flags.project_flags(src, rels, db, (), ())
    assert found.for_unit("src/cuda/cuda_algorithms.cu").defines[-2:] == ("USE_CUDA", "USE_SOCKET")
    assert found.for_unit("src/cuda/cuda_algorithms.cu").include_dirs == ()
    assert found.unread_options == tuple(f"{LGBM}/build-make/CMakeFiles/lightgbm_objs.dir/includes_{lang}.rsp"
                                         for lang in ("CUDA", "CXX"))


def test_nvcc_long_options_and_relative_directories(tmp_path):
    """nvcc's own spellings (--include-path, --system-include, --define-macro, --undefine-macro, with
    `=` or a separate value), -idirafter, and a `directory` given relative to the database's folder
    (as compiledb and hand-written databases have it)."""
    src = tree(tmp_path)
    (src / "build").mkdir()
    db = src / "build" / "compile_commands.json"
    db.write_text(json.dumps([{"directory": ".", "file": "../src/k.cu", "arguments": [
        "nvcc", "--include-path=../include", "--system-include", "../compat/win", "-idirafter../other",
        "--define-macro", "A=1", "--define-macro=B", "--undefine-macro=C", "-D", "E=\"x y\"", "-c", "../src/k.cu"]}]))
    found = flags.project_flags(src, set(texts(src)), db, (), ())
    unit = found.for_unit("src/k.cu")
    assert unit.include_dirs == ("include", "compat/win", "other")
    assert unit.defines == ("A=1", "B", 'E="x y"') and unit.undefines == ("C",)


def test_a_rocm_switch_defined_by_a_python_build_helper(tmp_path):
    """cupy 14.2.0: setup.py imports install/cupy_builder/cupy_setup_build.py, whose
    `define_macros.append(('CUPY_USE_HIP', '1'))` (line 357 there) is the ROCm build's switch; a
    Python file that is no build helper (a test) is not read."""
    (tmp_path / "setup.py").write_text("import cupy_builder\n")
    (tmp_path / "install" / "cupy_builder").mkdir(parents=True)
    (tmp_path / "install" / "cupy_builder" / "cupy_setup_build.py").write_text(
        "def make_extensions(ctx):\n    if ctx.use_hip:\n        settings['define_macros'].append(('CUPY_USE_HIP', '1'))\n")
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_hip.py").write_text("define_macros = [('USE_HIP', '1')]\n")
    files = {"cupy/_core/include/cupy/cuda_runtime.h": "#ifndef CUPY_USE_HIP\n#include <cuda_runtime.h>\n#endif\n",
             "cupy/_core/include/cupy/hip.h": "#ifdef USE_HIP\nint x;\n#endif\n"}
    found = flags.hip_switch_defines(tmp_path, files, ())
    assert found == (("CUPY_USE_HIP=1", "the project's own ROCm build switch: tested in 1 file "
                      "(cupy/_core/include/cupy/cuda_runtime.h), defined by its build at "
                      "install/cupy_builder/cupy_setup_build.py:3; --undefine CUPY_USE_HIP migrates the CUDA path instead"),)


def test_the_projects_own_rocm_switch_is_defined_from_its_build(tmp_path):
    # LightGBM 4.7.0: `option(USE_ROCM ...)`, add_definitions(-DUSE_ROCM) under if(USE_ROCM), and its
    # headers branch on it (vector_cudahost.h: `#if CUDA_VERSION >= 10000 || defined(USE_ROCM)`); ggml's
    # HIP backend: add_compile_definitions(GGML_USE_HIP) in another folder's CMakeLists.txt
    (tmp_path / "CMakeLists.txt").write_text('option(USE_ROCM "Enable ROCm-accelerated training " OFF)\n'
                                             "if(USE_ROCM)\n    add_definitions(-DUSE_ROCM)\nendif()\n")
    (tmp_path / "ggml-hip").mkdir()
    (tmp_path / "ggml-hip" / "CMakeLists.txt").write_text("add_compile_definitions(GGML_USE_HIP)\n")
    files = {"include/vector_cudahost.h": "#if CUDA_VERSION >= 10000 || defined(USE_ROCM)\nint a;\n#endif\n",
             "include/random.hpp": "#ifndef USE_ROCM\n#include <cub/cub.cuh>\n#endif\n",
             "src/common.cuh": "#if defined(GGML_USE_HIP)\n#include \"vendors/hip.h\"\n#endif\n",
             "src/other.cuh": "#ifdef WITH_HIP\nint b;\n#endif\n// USE_HIP in a comment, and USE_ROCM_X\n"}
    found = flags.hip_switch_defines(tmp_path, files, ())
    assert [d for d, _why in found] == ["GGML_USE_HIP", "USE_ROCM"]  # WITH_HIP: no build defines it
    assert found[1][1].startswith("the project's own ROCm build switch: tested in 2 files "
                                  "(include/random.hpp, include/vector_cudahost.h), defined by its build at CMakeLists.txt:3")
    assert flags.hip_switch_defines(tmp_path, files, ("USE_ROCM=1",), ("GGML_USE_HIP",)) == ()
    project = flags.project_flags(tmp_path, set(files), None, (), (), {}, files, ("USE_ROCM",))
    assert project.common.defines == ("GGML_USE_HIP",) and project.for_unit("src/k.cu").undefines == ("USE_ROCM",)
    assert project.hip_switches == {"GGML_USE_HIP"}
    with pytest.raises(InputError, match="--undefine 1X: expected a macro NAME"):
        flags.project_flags(tmp_path, set(files), None, (), (), {}, files, ("1X",))


def test_ggmls_older_hipblas_switch_is_a_rocm_switch(tmp_path):
    """ctransformers 0.2.27 vendors a 2023 ggml whose ROCm path is GGML_USE_HIPBLAS, defined under
    if (CT_HIPBLAS) with target_compile_definitions; GGML_USE_CUBLAS beside it is no ROCm switch."""
    (tmp_path / "CMakeLists.txt").write_text(
        'option(CT_HIPBLAS "Use hipBLAS" OFF)\nif (CT_HIPBLAS)\n'
        "    target_compile_definitions(ctransformers PRIVATE GGML_USE_HIPBLAS)\n"
        "    target_compile_definitions(ctransformers PRIVATE GGML_USE_CUBLAS)\nendif()\n")
    files = {"models/ggml/ggml-cuda.cu": "#if defined(GGML_USE_HIPBLAS)\n#include <hip/hip_runtime.h>\n#else\n"
                                         "#include <cuda_runtime.h>\n#endif\n#ifdef GGML_USE_CUBLAS\nint c;\n#endif\n"}
    found = flags.hip_switch_defines(tmp_path, files, ())
    assert [d for d, _why in found] == ["GGML_USE_HIPBLAS"]
    assert "defined by its build at CMakeLists.txt:3" in found[0][1]


SPATIAL_SETUP = """import os
from torch.utils.cpp_extension import BuildExtension, CUDAExtension, CppExtension
CPU_ONLY = False
DEBUG = os.getenv("DEBUG")

def launch_setup():
    if CPU_ONLY:
        Extension = CppExtension
        macro = [("CPU_ONLY", None)]
    else:
        Extension = CUDAExtension
        macro = [("USE_CUDA", None)]
    if DEBUG:
        macro += [("VERBOSE", None)]
    extra = {"nvcc": ["-DTHREADS=256" if DEBUG else "-DTHREADS=512", "-DPACKED=1"]}
    setup(ext_modules=[Extension("backend", ["a.cpp"], define_macros=macro, extra_compile_args=extra)])
"""


def test_setup_py_defines_of_the_gpu_build_are_read_from_its_branches():
    """spatial-correlation-sampler 0.5.0: `macro = [("USE_CUDA", None)]` in the else of `if CPU_ONLY:`;
    a define under a debug switch, the CPU branch's and one inside a conditional expression are not the
    GPU build's; `if torch.cuda.is_available() or FORCE_CUDA:` and a branch building a CUDAExtension are."""
    found = {(name, value) for name, value, _line in setuppy.gpu_build_defines(SPATIAL_SETUP)}
    assert found == {("USE_CUDA", ""), ("PACKED", "1")}
    assert [line for name, _v, line in setuppy.gpu_build_defines(SPATIAL_SETUP) if name == "USE_CUDA"] == [12]
    other = ("import torch\nmacros = []\nif torch.cuda.is_available() or os.getenv('FORCE_CUDA'):\n"
             "    macros += [('WITH_CUDA', None)]\nif not torch.cuda.is_available():\n    macros += [('NO_GPU', None)]\n"
             "if WITH_OPT:\n    ext = CUDAExtension('x', [], define_macros=[('WITH_OPT', '2')])\n")
    assert [(n, v) for n, v, _l in setuppy.gpu_build_defines(other)] == [("WITH_CUDA", ""), ("WITH_OPT", "2")]
    assert setuppy.gpu_build_defines("def broken(:\n") == []


def test_a_build_modules_defines_count_only_where_they_are_the_gpu_compilers():
    """ColossalAI 0.5.0 extensions/cuda_extension.py: `class _CudaExtension` whose nvcc_flags() returns
    ["-DCOLOSSAL_WITH_CUDA"]; its CPU extension's cxx flags and a JIT loader's extra_cflags are not
    the GPU build's, a JIT loader's extra_cuda_cflags and an "nvcc" entry of extra_compile_args are."""
    module = ("class _CppExtension:\n    def cxx_flags(self):\n        return ['-DCOLOSSAL_WITH_CPU']\n"
              "class _CudaExtension(_CppExtension):\n    def nvcc_flags(self):\n        return ['-DCOLOSSAL_WITH_CUDA']\n"
              "load('k', ['k.cu'], extra_cflags=['-DHOST_ONLY'], extra_cuda_cflags=['-DKERNEL_OPT=2'])\n"
              "args = {'cxx': ['-DCXX_SIDE'], 'nvcc': ['-DNVCC_SIDE']}\n")
    assert [(n, v) for n, v, _l in setuppy.gpu_build_defines(module, helper=True)] == [
        ("COLOSSAL_WITH_CUDA", ""), ("KERNEL_OPT", "2"), ("NVCC_SIDE", "")]
    # DeepSpeed's op_builder: ROCm flags under `if self.is_rocm_pytorch():`, formatted values and reserved names
    builder = ("class CUDAOpBuilder:\n    def nvcc_args(self):\n        if self.is_rocm_pytorch():\n"
               "            args = ['-D__HIP_PLATFORM_AMD__=1', '-DROCM_VERSION_MAJOR=%s' % major, '-DROCM_MINOR={}'.format(m),\n"
               "                    f'-DROCM_PATCH={p}', '-DUSE_ROCM_OPS']\n        else:\n            args = ['-DCUDA_ONLY_OPS']\n"
               "        return args\n")
    assert [(n, v) for n, v, _l in setuppy.gpu_build_defines(builder, helper=True)] == [("USE_ROCM_OPS", "")]
    # as a setup.py every unconditional define counts
    assert {n for n, _v, _l in setuppy.gpu_build_defines(module)} >= {"COLOSSAL_WITH_CPU", "CXX_SIDE"}


def test_setup_py_gpu_defines_the_sources_test_become_defines(tmp_path):
    (tmp_path / "setup.py").write_text(SPATIAL_SETUP)
    files = {"Correlation_Module/correlation_sampler.cpp": "#include <torch/extension.h>\n#ifdef USE_CUDA\nint gpu;\n#endif\n",
             "Correlation_Module/k.cu": "int x;\n"}
    found = flags.setup_gpu_defines(tmp_path, files, ())
    assert found == (("USE_CUDA", "the project's Python build passes it in its GPU build (setup.py:12), which PyTorch's ROCm "
                      "build takes too, and 1 file tests it (Correlation_Module/correlation_sampler.cpp); --undefine "
                      "USE_CUDA leaves it out"),)  # PACKED: no source tests it
    assert flags.setup_gpu_defines(tmp_path, files, ("USE_CUDA",)) == ()
    project = flags.project_flags(tmp_path, set(files), None, (), (), {}, files)
    assert "USE_CUDA" in project.common.defines
    (tmp_path / "extensions").mkdir()
    (tmp_path / "extensions" / "cuda_extension.py").write_text(
        "from torch.utils.cpp_extension import CUDA_HOME\nclass _CudaExtension:\n    def nvcc_flags(self):\n"
        "        return ['-DCOLOSSAL_WITH_CUDA']\n")
    files["Correlation_Module/common.h"] = "#if defined(COLOSSAL_WITH_CUDA)\nint v;\n#endif\n"
    assert [d for d, _why in flags.setup_gpu_defines(tmp_path, files, ())] == ["COLOSSAL_WITH_CUDA", "USE_CUDA"]
    assert flags.project_flags(tmp_path, set(files), None, (), (), {}, files, ("USE_CUDA",)).common.defines == (
        "COLOSSAL_WITH_CUDA",)


def test_a_build_scripts_half_switches_become_hipcc_undefines(tmp_path):
    # DeepSpeed 0.19.8 op_builder/builder.py: nvcc_args() names them for CUDA, and the HIP ones for ROCm
    from migrate import torch_ext
    (tmp_path / "op_builder").mkdir()
    (tmp_path / "op_builder" / "builder.py").write_text(
        "        if self.is_rocm_pytorch():\n            args += ['-std=c++17', '-U__HIP_NO_HALF_OPERATORS__',\n"
        "        else:\n            args += ['-U__CUDA_NO_HALF_OPERATORS__', '-U__CUDA_NO_HALF_CONVERSIONS__',\n"
        "                     \"-U__CUDA_NO_BFLOAT16_CONVERSIONS__\"]\n# '-U__CUDA_NO_SOMETHING_ELSE__'\n")
    (tmp_path / "setup.py").write_text("setup(name='x')\n")
    assert torch_ext.half_undefines(tmp_path) == (
        ("-U__HIP_NO_BFLOAT16_CONVERSIONS__", "op_builder/builder.py:5"),
        ("-U__HIP_NO_HALF_CONVERSIONS__", "op_builder/builder.py:4"),
        ("-U__HIP_NO_HALF_OPERATORS__", "op_builder/builder.py:2"))
    assert torch_ext.half_undefines(tmp_path / "setup.py") == ()


def test_switches_a_build_removes_from_torchs_nvcc_flags_become_hipcc_undefines(tmp_path):
    # flashinfer-python 0.2.2 setup.py: the -D strings, then torch_cpp_ext.COMMON_NVCC_FLAGS.remove(flag); a -D
    # string far from any remove() (an nvcc argument list of its own) does not count
    from migrate import torch_ext
    (tmp_path / "setup.py").write_text(
        "    for flag in [\n        \"-D__CUDA_NO_HALF_OPERATORS__\",\n        \"-D__CUDA_NO_HALF_CONVERSIONS__\",\n"
        "    ]:\n        try:\n            torch_cpp_ext.COMMON_NVCC_FLAGS.remove(flag)\n        except ValueError:\n"
        "            pass\n" + "\n" * 20 + "nvcc_flags = ['-D__CUDA_NO_BFLOAT16_CONVERSIONS__']\n")
    assert torch_ext.half_undefines(tmp_path) == (("-U__HIP_NO_HALF_CONVERSIONS__", "setup.py:3"),
                                                  ("-U__HIP_NO_HALF_OPERATORS__", "setup.py:2"))


def test_a_cmake_builds_hip_half_switches_count_and_its_nvcc_ones_do_not(tmp_path):
    # vLLM 0.34.0 cmake/utils.cmake get_torch_gpu_compiler_flags: REMOVE_ITEM of the CUDA -D switches for nvcc,
    # APPEND of -U__HIP_NO_HALF_CONVERSIONS__ / -U__HIP_NO_HALF_OPERATORS__ for hipcc
    from migrate import torch_ext
    (tmp_path / "cmake").mkdir()
    (tmp_path / "cmake" / "utils.cmake").write_text(
        '    list(REMOVE_ITEM GPU_FLAGS\n        "-D__CUDA_NO_HALF_OPERATORS__"\n        "-U__CUDA_NO_HALF2_OPERATORS__")\n'
        '    list(APPEND GPU_FLAGS\n      "-DUSE_ROCM"\n      "-U__HIP_NO_HALF_CONVERSIONS__"\n      "-U__HIP_NO_HALF_OPERATORS__")\n')
    assert torch_ext.half_undefines(tmp_path) == (("-U__HIP_NO_HALF_CONVERSIONS__", "cmake/utils.cmake:6"),
                                                  ("-U__HIP_NO_HALF_OPERATORS__", "cmake/utils.cmake:7"))


def test_defines_a_cmakelists_always_passes_are_taken_when_the_sources_test_them(tmp_path):
    # natten 0.21.7: csrc/CMakeLists.txt:147 add_definitions("-DNATTEN_WITH_CUTLASS") at its top level, and
    # the op bodies sit in `#ifdef NATTEN_WITH_CUTLASS ... #else TORCH_CHECK(false, ...)`; a define inside
    # if() is an option, one in another folder's CMakeLists.txt is another target's, one nobody tests changes nothing
    csrc = tmp_path / "csrc"
    (csrc / "src").mkdir(parents=True)
    (csrc / "CMakeLists.txt").write_text(
        'if(${NATTEN_WITH_HOPPER_FNA})\n  add_definitions("-DNATTEN_WITH_HOPPER_FNA=1")\nendif()\n'
        '# add_definitions(-DCOMMENTED)\n#[[ a bracket comment\nadd_definitions(-DBRACKETED)\n]]\n'
        'add_definitions("-DWITH_CUDA")\nadd_definitions("-DNATTEN_WITH_CUTLASS")\n'
        'if(WIN32) add_definitions(-DONE_LINE) endif()\n'
        'add_compile_definitions(MSG="#x")\nset(FOO bar)\n'
        'add_definitions(-DDATA_DIR="${CMAKE_SOURCE_DIR}/d")\n'
        "add_compile_definitions(\n  TILE=128\n  -DFAST)\n"
        "foreach(x a b)\n  add_definitions(-DLOOPED)\nendforeach()\n"
        "add_definitions(-DBACKEND=1)\n")
    (tmp_path / "tools").mkdir()
    (tmp_path / "tools" / "CMakeLists.txt").write_text("add_definitions(-DTOOLS_ONLY -DBACKEND=0)\n")
    (tmp_path / "tools" / "bench.cu").write_text("#ifdef TOOLS_ONLY\n#endif\n")
    unit = ("#ifdef NATTEN_WITH_CUTLASS\nint run();\n#else\nint fail();\n#endif\n#if TILE > 64 && defined(FAST)\n#endif\n"
            "#if NATTEN_WITH_HOPPER_FNA || COMMENTED || BRACKETED || LOOPED || ONE_LINE || BACKEND\n#endif\n"
            "#if defined(MSG) || defined(FOO) || defined(bar) || defined(DATA_DIR)\n#endif\n/*\n#ifdef WITH_CUDA\n*/\n")
    units = {"csrc/src/fna_forward.cu": unit, "tools/bench.cu": "#ifdef TOOLS_ONLY\n#endif\nint x;\n"}
    found = flags.cmake_always_defines(tmp_path, {**units, "csrc/x.h": "#ifdef FAST\n#endif\n"}, units, ())
    assert [(f, d) for f, d, _why in found] == [("csrc", "FAST"), ("csrc", 'MSG="#x"'), ("csrc", "NATTEN_WITH_CUTLASS"),
                                                ("csrc", "TILE=128"), ("tools", "TOOLS_ONLY")]
    assert found[2][2] == ("the build always defines it for the units under csrc/ (outside any if() at "
                           "csrc/CMakeLists.txt:9) and 1 file tests it (csrc/src/fna_forward.cu)")
    assert [d for _f, d, _why in flags.cmake_always_defines(tmp_path, units, units, ("NATTEN_WITH_CUTLASS=0",),
                                                            ("FAST", "MSG"))] == ["TILE=128", "TOOLS_ONLY"]
    project = flags.project_flags(tmp_path, set(units), None, (), (), units, units)
    assert project.for_unit("csrc/src/fna_forward.cu").defines == ("FAST", 'MSG="#x"', "NATTEN_WITH_CUTLASS", "TILE=128")
    assert project.for_unit("tools/bench.cu").defines == ("TOOLS_ONLY",)  # each folder's own, as in CMake
    assert not project.common.defines and not project.hip_switches
    assert {"NATTEN_WITH_CUTLASS", "TOOLS_ONLY"} <= project.defined_names()


# vLLM 0.34.0: cmake/utils.cmake:130-165 and CMakeLists.txt:1290-1340 / 1760-1830, shortened
VLLM_UTILS = """function (get_torch_gpu_compiler_flags OUT_GPU_FLAGS GPU_LANG)
  if (${GPU_LANG} STREQUAL "CUDA")
    if (CUDA_VERSION VERSION_GREATER_EQUAL 11.8)
      list(APPEND GPU_FLAGS "-DENABLE_FP8")
    endif()
  elseif(${GPU_LANG} STREQUAL "HIP")
    list(APPEND GPU_FLAGS
      "-DUSE_ROCM"
      "-DENABLE_FP8"
      "-U__HIP_NO_HALF_CONVERSIONS__"
      "-fno-gpu-rdc")
  endif()
endfunction()
"""
VLLM_LISTS = """if(VLLM_GPU_LANG STREQUAL "CUDA" OR VLLM_GPU_LANG STREQUAL "HIP")
  add_compile_definitions(SHARED_GPU)
  target_compile_definitions(_C_stable_libtorch PRIVATE
    TORCH_TARGET_VERSION=0x020B000000000000ULL)
  if(VLLM_GPU_LANG STREQUAL "CUDA")
    target_compile_definitions(_C_stable_libtorch PRIVATE USE_CUDA)
  elseif(VLLM_GPU_LANG STREQUAL "HIP")
    if(FUSED_KDA_DECODE_HIP_SRC)
      target_compile_definitions(_C_stable_libtorch PRIVATE VLLM_ENABLE_FUSED_KDA_DECODE=1)
    endif()
  endif()
endif()
if(VLLM_GPU_LANG STREQUAL "HIP")
  if(VLLM_SKINNY_ARCHES)
    target_compile_definitions(_rocm_C_skinny PRIVATE "-DTORCH_EXTENSION_NAME=_rocm_C")
  else()
    list(APPEND VLLM_ROCM_EXT_FLAGS "-DVLLM_SKIP_SKINNY_GEMMS")
  endif()
  if(VLLM_ROCM_HAS_GFX1100)
    target_compile_definitions(_rocm_C PRIVATE VLLM_ROCM_GFX1100)
  endif()
  if(NOT USE_ROCM)
    add_definitions(-DNOT_ROCM_AFTER_ALL)
  endif()
  add_compile_definitions(ROCM_ALWAYS)
endif()
"""


def test_defines_a_cmake_builds_hip_branch_passes_are_taken_where_the_sources_test_them(tmp_path):
    (tmp_path / "cmake").mkdir()
    (tmp_path / "cmake" / "utils.cmake").write_text(VLLM_UTILS)
    (tmp_path / "CMakeLists.txt").write_text(VLLM_LISTS)
    assert cmake.hip_branch_defines(VLLM_UTILS) == [("USE_ROCM", 7), ("ENABLE_FP8", 7)]
    # the shared CUDA-or-HIP branch counts; one target's define, a further condition (an option, an arch
    # list), an else() and a NOT do not
    assert cmake.hip_branch_defines(VLLM_LISTS) == [("SHARED_GPU", 2), ("ROCM_ALWAYS", 25)]
    names = ("ENABLE_FP8", "USE_ROCM", "TORCH_TARGET_VERSION", "SHARED_GPU", "ROCM_ALWAYS", "VLLM_SKIP_SKINNY_GEMMS",
             "VLLM_ROCM_GFX1100", "VLLM_ENABLE_FUSED_KDA_DECODE")
    files = {"csrc/quant_utils.cuh": "".join(f"#ifdef {n}\nint x{i};\n#endif\n" for i, n in enumerate(names)),
             "csrc/other.cu": "// #ifdef ENABLE_FP8 in a comment\n#if defined(ENABLE_FP8)\n#endif\n"}
    found = flags.cmake_hip_branch_defines(tmp_path, files, ())
    # USE_ROCM is the project's ROCm switch: hip_switch_defines' part
    assert [d for d, _why in found] == ["ENABLE_FP8", "ROCM_ALWAYS", "SHARED_GPU"]
    assert found[0][1] == ("the project's ROCm build passes it (a HIP branch at cmake/utils.cmake:7) and 2 files test it "
                           "(csrc/other.cu, csrc/quant_utils.cuh); --undefine ENABLE_FP8 leaves it out")
    project = flags.project_flags(tmp_path, set(files), None, (), (), {}, files, ("ROCM_ALWAYS",))
    assert "ENABLE_FP8" in project.common.defines and "ROCM_ALWAYS" not in project.common.defines
    assert not project.hip_switches  # a define of the HIP branch is not the switch to the project's own port


# DyNet 2.1.2's dynet/CMakeLists.txt (shortened): its CUDA backend passes HAVE_CUDA to nvcc, under an
# arch choice whose both branches give it
DYNET_CMAKE = """if(WITH_CUDA_BACKEND)
  if(CUDA_ARCH)
    list(APPEND CUDA_NVCC_FLAGS "-arch=sm_${CUDA_ARCH};-std=c++11;-DVERBOSE;-DEIGEN_USE_GPU;-DHAVE_CUDA;-D_FORCE_INLINES")
  else()
    list(APPEND CUDA_NVCC_FLAGS "-gencode;arch=compute_52,code=sm_52;-DVERBOSE;-DEIGEN_USE_GPU;-DHAVE_CUDA")
  endif()
  if(CUDNN_FOUND)
    list(APPEND CUDA_NVCC_FLAGS "-DHAVE_CUDNN")
  endif()
  set(CMAKE_CUDA_FLAGS "${CMAKE_CUDA_FLAGS} -DKERNEL_DEBUG=1 -DWIDTH=${W}")
  set(CMAKE_CXX_FLAGS "${CMAKE_CXX_FLAGS} -DHOST_ONLY")
  message(STATUS "pass -DNOT_A_FLAG to nvcc")
endif()
"""


def test_defines_a_cuda_only_cmake_build_passes_nvcc_are_taken_where_the_sources_test_them(tmp_path):
    (tmp_path / "dynet").mkdir()
    (tmp_path / "dynet" / "CMakeLists.txt").write_text(DYNET_CMAKE)
    # given in a branch that names CUDA (`if(CUDA_ARCH)` counts as one) or in the CUDA backend's branch itself;
    # not an option's (HAVE_CUDNN), not a host flag or a message
    assert cmake.cuda_flag_defines(DYNET_CMAKE) == [("VERBOSE", 3), ("EIGEN_USE_GPU", 3), ("HAVE_CUDA", 3), ("_FORCE_INLINES", 3),
                                                    ("KERNEL_DEBUG=1", 10)]
    # an unnamed choice counts where every branch, else() included, gives the define
    choice = ('if(FAST)\n  list(APPEND CUDA_NVCC_FLAGS "-DA -DB")\nelseif(SMALL)\n  list(APPEND CUDA_NVCC_FLAGS -DA)\n'
              'else()\n  list(APPEND CUDA_NVCC_FLAGS -DA -DC)\nendif()\nif(OPT)\n  list(APPEND CUDA_NVCC_FLAGS -DA -DD)\nendif()\n')
    assert cmake.cuda_flag_defines(choice) == [("A", 2)]
    files = {"dynet/cuda.h": "#if HAVE_CUDA\n#define CUDA_CHECK(x) x\n#endif\n#ifdef HOST_ONLY\n#endif\n#if HAVE_CUDNN\n#endif\n",
             "dynet/gpu-ops.cu": "#if KERNEL_DEBUG\n#endif\n#ifdef NOT_A_FLAG\n#endif\n"}
    found = flags.cmake_cuda_flag_defines(tmp_path, files, ())
    assert [d for d, _why in found] == ["HAVE_CUDA", "KERNEL_DEBUG=1"]
    assert found[0][1] == ("the project's CUDA build passes it to nvcc (dynet/CMakeLists.txt:3) and 1 file tests it "
                           "(dynet/cuda.h); --undefine HAVE_CUDA leaves it out")
    project = flags.project_flags(tmp_path, set(files), None, (), (), {}, files, ("KERNEL_DEBUG",))
    assert "HAVE_CUDA" in project.common.defines and not any(d.startswith("KERNEL_DEBUG") for d in project.common.defines)
    # a tree whose CMake build has its own HIP branch takes that branch's defines instead
    (tmp_path / "CMakeLists.txt").write_text("if(USE_ROCM)\n  add_definitions(-DHAVE_ROCM)\nendif()\n")
    assert flags.cmake_cuda_flag_defines(tmp_path, files, ()) == ()


def test_cmake_reading_leaves_negations_messages_and_external_projects(tmp_path):
    # NOT negates a whole comparison; a message or an external project's CMAKE_ARGS are no compile flags
    text = ('if(NOT GPU_LANG STREQUAL "HIP")\n  add_definitions(-DCUDA_ONLY_FEATURE)\nendif()\n'
            'if(USE_ROCM)\n  message(STATUS "use -DBUILD_FOO=ON")\n'
            '  ExternalProject_Add(ck CMAKE_ARGS -DGPU_TARGETS=gfx942)\n  add_compile_options(-DROCM_FLAG)\nendif()\n')
    assert cmake.hip_branch_defines(text) == [("ROCM_FLAG", 7)]
    # a NOT WITH_CUDA branch may be a CPU build: its sources are no CUDA-only sources; paths are normalized
    (tmp_path / "python").mkdir()
    (tmp_path / "CMakeLists.txt").write_text('if(USE_ROCM)\nendif()\nif(NOT WITH_CUDA)\n  list(APPEND S cpu/ops.cpp)\nendif()\n'
                                             'if(WITH_CUDA)\n  list(APPEND S src/k.cu src/only.cu)\nendif()\n')
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "CMakeLists.txt").write_text("add_library(k k.cu)\n")
    (tmp_path / "python" / "CMakeLists.txt").write_text('if(WITH_CUDA)\n  list(APPEND S ../csrc/x.cu)\nendif()\n')
    units = {"cpu/ops.cpp", "src/k.cu", "src/only.cu", "csrc/x.cu"}
    # src/k.cu is built unconditionally by src/CMakeLists.txt
    assert flags.cuda_only_units(tmp_path, units) == {"src/only.cu": "CMakeLists.txt:7", "csrc/x.cu": "python/CMakeLists.txt:2"}


# horovod 0.28.1's CMakeLists.txt: the CUDA sources in a macro the CUDA branch calls, named from
# ${PROJECT_SOURCE_DIR}, beside the ROCm branch of the same chain
HOROVOD_CMAKE = """macro(ADD_CUDA)
    find_package(CUDAToolkit REQUIRED)
    list(APPEND SOURCES "${PROJECT_SOURCE_DIR}/horovod/common/ops/cuda_operations.cc"
                        "${PROJECT_SOURCE_DIR}/horovod/common/ops/gpu_operations.cc")
    add_definitions(-DHAVE_CUDA=1 -DHAVE_GPU=1)
endmacro()

if(DEFINED HOROVOD_GPU_ALLREDUCE)
    if(NOT DEFINED HOROVOD_GPU OR HOROVOD_GPU STREQUAL "CUDA")
        add_cuda()
    elseif(HOROVOD_GPU STREQUAL "ROCM")
        list(APPEND SOURCES "${PROJECT_SOURCE_DIR}/horovod/common/ops/hip_operations.cc"
                            "${PROJECT_SOURCE_DIR}/horovod/common/ops/gpu_operations.cc")
        add_definitions(-DHAVE_ROCM=1 -DHAVE_GPU=1)
    endif()
endif()
"""


def test_sources_of_a_macro_only_the_cuda_branch_calls_are_cuda_only(tmp_path):
    (tmp_path / "CMakeLists.txt").write_text(HOROVOD_CMAKE)
    units = {"horovod/common/ops/cuda_operations.cc", "horovod/common/ops/gpu_operations.cc",
             "horovod/common/ops/hip_operations.cc"}
    assert flags.cuda_only_units(tmp_path, units) == {"horovod/common/ops/cuda_operations.cc": "CMakeLists.txt:3"}
    # a macro called from a branch that is not the CUDA one too is nobody's build in particular
    both = HOROVOD_CMAKE.replace('add_definitions(-DHAVE_ROCM=1', 'add_cuda()\n        add_definitions(-DHAVE_ROCM=1')
    (tmp_path / "CMakeLists.txt").write_text(both)
    assert flags.cuda_only_units(tmp_path, units) == {}


# lightseq 3.0.1's layout: two generations of ops with same-named headers; its op builders (DeepSpeed's
# pattern, lightseq/training/ops/pytorch/builder/) name each extension's sources and include folders
# from the package root, and one builder's folders are built with pathlib (left out)
LIGHTSEQ_BUILDER = '''
import pathlib
from .builder import CUDAOpBuilder


class TransformerBuilder(CUDAOpBuilder):
    def sources(self):
        return [
            "csrc/kernels/softmax_kernels.cu",
            # "csrc/ops/softmax.cpp",
            "csrc/layers/transformer_encoder_layer.cpp",
        ]

    def include_paths(self):
        paths = ["csrc/kernels/includes", "csrc/ops/includes", "csrc/layers/includes"]
        if installed_cuda_version()[0] < 11:
            paths.append(str(pathlib.Path(__file__).parents[5] / "3rdparty" / "cub"))
        return paths


class OperatorBuilder(CUDAOpBuilder):
    def sources(self):
        return ["csrc/kernels/softmax_kernels.cu", "csrc/ops_new/softmax.cpp"]

    def include_paths(self):
        return ["csrc/kernels/includes", "csrc/ops_new/includes", "csrc/lsflow/includes"]
'''


def lightseq_tree(tmp_path: Path) -> Path:
    src = tmp_path / "lightseq-3.0.1"
    for rel, text in {
        "lightseq/training/ops/pytorch/builder/transformer_builder.py": LIGHTSEQ_BUILDER,
        "lightseq/training/csrc/ops/includes/context.h": "#pragma once\n",  # a same-named folder elsewhere
        "lightseq/csrc/kernels/includes/kernels.h": "#pragma once\n",
        "lightseq/csrc/kernels/softmax_kernels.cu": '#include "kernels.h"\n__global__ void k() {}\n',
        "lightseq/csrc/ops/includes/softmax.h": "#pragma once\nstruct Softmax {};\n",
        "lightseq/csrc/ops_new/includes/softmax.h": "#pragma once\nnamespace lightseq { struct Softmax {}; }\n",
        "lightseq/csrc/ops_new/softmax.cpp": '#include "softmax.h"\n',
        "lightseq/csrc/layers/includes/transformer_encoder_layer.h": '#pragma once\n#include "softmax.h"\n',
        "lightseq/csrc/layers/transformer_encoder_layer.cpp": '#include "transformer_encoder_layer.h"\n',
        "lightseq/csrc/lsflow/includes/layer.h": "#pragma once\n",
        "lightseq/csrc/ops_new/CMakeLists.txt": "add_library(ops STATIC softmax.cpp)\ntarget_include_directories(ops PUBLIC includes)\n",
        "3rdparty/cub/README": "vendored\n",
    }.items():
        (src / rel).parent.mkdir(parents=True, exist_ok=True)
        (src / rel).write_text(text)
    return src


def test_op_builders_give_each_unit_its_include_folders_in_order(tmp_path):
    src = lightseq_tree(tmp_path)
    rels = {p.relative_to(src).as_posix() for p in src.rglob("*") if p.is_file()}
    found = flags.builder_include_dirs(src, rels)
    old = ("lightseq/csrc/kernels/includes", "lightseq/csrc/ops/includes", "lightseq/csrc/layers/includes")
    new = ("lightseq/csrc/kernels/includes", "lightseq/csrc/ops_new/includes", "lightseq/csrc/lsflow/includes")
    assert found["lightseq/csrc/layers/transformer_encoder_layer.cpp"] == old  # no 3rdparty: a path being built
    assert found["lightseq/csrc/ops_new/softmax.cpp"] == new
    # a unit two builders compile gets both lists, in the builders' order
    assert found["lightseq/csrc/kernels/softmax_kernels.cu"] == old + new[1:]
    assert "lightseq/csrc/ops/softmax.cpp" not in found  # commented out of the builder


def test_each_unit_resolves_same_named_headers_through_its_own_folders(tmp_path):
    src = lightseq_tree(tmp_path)
    rels = {p.relative_to(src).as_posix() for p in src.rglob("*") if p.is_file()}
    units = {r: (src / r).read_text() for r in rels if r.endswith((".cu", ".cpp"))}
    project = flags.project_flags(src, rels, None, (), (), units=units, texts=texts(src))
    graph = includes.IncludeGraph(texts(src) | units, include_dirs=project.all_dirs(), unit_dirs=project.unit_dirs(units))
    layer = "lightseq/csrc/layers/transformer_encoder_layer.cpp"
    assert "lightseq/csrc/ops/includes/softmax.h" in graph.reach(layer)
    assert "lightseq/csrc/ops_new/includes/softmax.h" not in graph.reach(layer)
    assert graph.reach("lightseq/csrc/ops_new/softmax.cpp") == {"lightseq/csrc/ops_new/softmax.cpp",
                                                               "lightseq/csrc/ops_new/includes/softmax.h"}
    assert project.for_unit(layer).include_dirs[:3] == ("lightseq/csrc/kernels/includes", "lightseq/csrc/ops/includes",
                                                        "lightseq/csrc/layers/includes")
    # without the builders, the CMake folder (ops_new/includes) is every unit's: the old layer takes the new header
    plain = includes.IncludeGraph(texts(src) | units, include_dirs=project.common.include_dirs)
    assert "lightseq/csrc/ops_new/includes/softmax.h" in plain.reach(layer)


def test_inferred_folders_come_nearest_first_for_each_unit(tmp_path):
    """lightseq 3.0.1's csrc/ops_new/launch_enc_emb.cpp (in no op builder) includes "embKernels.h", which both
    inference/kernels/ and csrc/kernels/includes/ hold; the build files name both folders for every unit."""
    src = tmp_path / "lightseq"
    for rel, text in {
        "inference/kernels/embKernels.h": "#pragma once\nvoid launch_enc_emb(int* pad_mask);\n",
        "csrc/kernels/includes/embKernels.h": "#pragma once\nvoid launch_enc_emb(float* out, int* pad_mask);\n",
        "csrc/ops_new/launch_enc_emb.cpp": '#include "embKernels.h"\n',
        "inference/model/encoder.cc.cu": '#include "embKernels.h"\n',
        "CMakeLists.txt": "include_directories(inference/kernels)\ninclude_directories(csrc/kernels/includes)\n",
    }.items():
        (src / rel).parent.mkdir(parents=True, exist_ok=True)
        (src / rel).write_text(text)
    rels = {p.relative_to(src).as_posix() for p in src.rglob("*") if p.is_file()}
    units = {r: (src / r).read_text() for r in rels if r.endswith((".cu", ".cpp"))}
    project = flags.project_flags(src, rels, None, (), (), units=units, texts=units)
    assert project.common.include_dirs == ("inference/kernels", "csrc/kernels/includes")
    assert project.for_unit("csrc/ops_new/launch_enc_emb.cpp").include_dirs == ("csrc/kernels/includes", "inference/kernels")
    assert project.for_unit("inference/model/encoder.cc.cu").include_dirs == ("inference/kernels", "csrc/kernels/includes")
    all_texts = units | {r: (src / r).read_text() for r in rels if r.endswith(".h")}
    graph = includes.IncludeGraph(all_texts, include_dirs=project.all_dirs(), unit_dirs=project.unit_dirs(units))
    assert "csrc/kernels/includes/embKernels.h" in graph.reach("csrc/ops_new/launch_enc_emb.cpp")
    assert "inference/kernels/embKernels.h" in graph.reach("inference/model/encoder.cc.cu")
    # a compilation database's order is the build's: kept as given
    db = tmp_path / "compile_commands.json"
    db.write_text(json.dumps([{"directory": str(src), "file": "csrc/ops_new/launch_enc_emb.cpp",
                               "command": "c++ -Iinference/kernels -Icsrc/kernels/includes -c csrc/ops_new/launch_enc_emb.cpp"}]))
    exact = flags.project_flags(src, rels, db, (), ())
    assert exact.for_unit("csrc/ops_new/launch_enc_emb.cpp").include_dirs == ("inference/kernels", "csrc/kernels/includes")


# LightGBM 4.7.0's CMakeLists.txt (shortened): configure checks that gate defines
LIGHTGBM_CHECKS = """include(CheckCXXSourceCompiles)
check_cxx_source_compiles("
#include <mm_malloc.h>
int main() {
  char *a = (char*)_mm_malloc(8, 16);
  _mm_free(a);
  return 0;
}
" MM_MALLOC)
if(${MM_MALLOC})
  message(STATUS "Using _mm_malloc")
  add_definitions(-DMM_MALLOC)
endif()
check_cxx_source_compiles("int main() { return no_such_function_anywhere(); }" HAVE_NOTHING)
if(HAVE_NOTHING)
  add_definitions(-DUSE_NOTHING)
endif()
check_include_file(malloc.h HAVE_MALLOC_H)
if(HAVE_MALLOC_H)
  add_compile_definitions(HAVE_MALLOC_H)
else()
  add_definitions(-DNO_MALLOC_H)
endif()
check_symbol_exists(inet_pton "ws2tcpip.h" WIN_INET_PTON_FOUND)
if(WIN_INET_PTON_FOUND)
  add_definitions(-DWIN_HAS_INET_PTON)
endif()
check_function_exists(${FN} HAVE_FN)
"""


@pytest.mark.skipif(configure.compiler("c++") is None, reason="no host C++ compiler to run configure checks with")
def test_defines_gated_by_configure_checks_that_pass_here_are_taken(tmp_path):
    checks = cmake.configure_checks(LIGHTGBM_CHECKS)
    assert set(checks) == {"MM_MALLOC", "HAVE_NOTHING", "HAVE_MALLOC_H", "WIN_INET_PTON_FOUND"}  # ${FN}: the build's
    assert checks["HAVE_MALLOC_H"] == ("include", ("malloc.h",), 18)
    assert checks["MM_MALLOC"][1][0].startswith("\n#include <mm_malloc.h>\nint main() {")
    assert cmake.check_gated_defines(LIGHTGBM_CHECKS, set(checks)) == [
        ("MM_MALLOC", "MM_MALLOC", 12), ("HAVE_NOTHING", "USE_NOTHING", 16), ("HAVE_MALLOC_H", "HAVE_MALLOC_H", 20),
        ("WIN_INET_PTON_FOUND", "WIN_HAS_INET_PTON", 26)]
    (tmp_path / "CMakeLists.txt").write_text(LIGHTGBM_CHECKS)
    names = ("MM_MALLOC", "USE_NOTHING", "HAVE_MALLOC_H", "NO_MALLOC_H", "WIN_HAS_INET_PTON")
    files = {"include/common.h": "".join(f"#if {n}\n#endif\n" for n in names)}
    found = flags.cmake_check_defines(tmp_path, files, ())
    # the checks that compile and link here (Linux, glibc); not the one that cannot link, not Windows' header
    assert [d for d, _why in found] == ["HAVE_MALLOC_H", "MM_MALLOC"]
    assert found[1][1] == ("the project's CMake build passes it at CMakeLists.txt:12, after its check MM_MALLOC at "
                           "CMakeLists.txt:2, which passes here, and 1 file tests it (include/common.h); "
                           "--undefine MM_MALLOC leaves it out")
    project = flags.project_flags(tmp_path, set(files), None, (), (), {}, files, ("HAVE_MALLOC_H",))
    assert "MM_MALLOC" in project.common.defines and "HAVE_MALLOC_H" not in project.common.defines


def test_configure_checks_find_a_versioned_clang(tmp_path, monkeypatch):
    """The dev image has Debian's clang++-22 and clang-22 on its PATH, no c++ / cc: those run the checks."""
    for name in ("clang++-9", "clang++-22", "clang-22"):
        (tmp_path / name).write_text("#!/bin/sh\n")
        (tmp_path / name).chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    assert configure.compiler("c++") == str(tmp_path / "clang++-22")
    assert configure.compiler("c") == str(tmp_path / "clang-22")
    monkeypatch.setenv("PATH", str(tmp_path / "none"))
    assert configure.compiler("c++") is None and not configure.passes("include", ("stdio.h",))


def test_the_cxx_standard_a_build_names_is_the_units_when_newer_than_17(tmp_path):
    """pennylane-lightning-gpu 0.45.0's CMakeLists.txt: set(CMAKE_CXX_STANDARD 20), and its headers use
    `requires`; a vendored library asking for C++11 below it changes nothing, and a folder with its own
    setup.py's -std=c++2b gets C++23."""
    (tmp_path / "CMakeLists.txt").write_text("project(p)\nset(CMAKE_CXX_STANDARD 20)\nset(CMAKE_CUDA_STANDARD 20)\n")
    (tmp_path / "third_party" / "old").mkdir(parents=True)
    (tmp_path / "third_party" / "old" / "CMakeLists.txt").write_text("target_compile_features(old PUBLIC cxx_std_11)\n")
    (tmp_path / "ext").mkdir()
    (tmp_path / "ext" / "setup.py").write_text("extra_compile_args={'cxx': ['-O3', '-std=c++2b']}\n")
    standards = flags.build_standards(tmp_path)
    assert sorted(standards) == [(11, "third_party/old/CMakeLists.txt:1"), (20, "CMakeLists.txt:2"), (23, "ext/setup.py:1")]
    assert flags.standard_for(standards, "core/utils/Util.cu") == ("c++20", "CMakeLists.txt:2")
    assert flags.standard_for(standards, "third_party/old/k.cu") == ("c++20", "CMakeLists.txt:2")
    assert flags.standard_for(standards, "ext/k.cu") == ("c++23", "ext/setup.py:1")
    assert flags.standard_for((), "k.cu") == ("c++17", "")
    assert flags.standard_for(((14, "Makefile:3"),), "k.cu") == ("c++17", "")  # an older one is not taken
