"""Bad input (one line, exit 2), arch table, hipify warning tables, report summary / exit codes,
escaping and atomic writes."""

import json
import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
from tests.shared_cases import CASES_DIR

CUDA = CASES_DIR / "cuda"
sys.path.insert(0, str(ROOT / "recipes" / "migrate"))

from migrate import archs, cli, hipify, report, tree  # noqa: E402
from migrate.errors import InputError  # noqa: E402

TABLE = {"gfx942": {"family": "CDNA3", "wavefront": 64, "lds_bytes": 65536},
         "gfx90a": {"family": "CDNA2", "wavefront": 64, "lds_bytes": 65536},
         "gfx950": {"family": "CDNA4", "wavefront": 64, "lds_bytes": 163840},
         "gfx1100": {"family": "RDNA3", "wavefront": 32, "lds_bytes": 65536}}


@pytest.fixture
def table(tmp_path: Path) -> Path:
    path = tmp_path / "archs.json"
    path.write_text(json.dumps(TABLE))
    return path


def run_cli(args, capsys) -> tuple[int, str]:
    code = cli.main([str(a) for a in args])
    err = capsys.readouterr().err.strip()
    return code, err


def cuda_tree(tmp_path: Path) -> Path:
    src = tmp_path / "src"
    src.mkdir(exist_ok=True)
    (src / "k.cu").write_text("__global__ void k() {}\n")
    return src


@pytest.mark.parametrize("case", ["missing", "no_cuda", "binary", "large", "bad_ext"])
def test_bad_input_one_line_exit_2(case, tmp_path, table, capsys):
    src = cuda_tree(tmp_path)
    extra = []
    if case == "missing":
        src = tmp_path / "nope"
        expect = "no such file or directory"
    elif case == "no_cuda":
        (src / "k.cu").unlink()
        (src / "main.cpp").write_text("int main() { return 0; }\n")
        expect = "no CUDA sources found"
    elif case == "binary":  # a single input file that cannot be used
        src = src / "blob.cuh"
        src.write_bytes(b"\x7fELF\x00\x00")
        expect = "blob.cuh: binary file"
    elif case == "large":
        src = src / "big.cuh"
        src.write_text("// x\n" * 1000)
        extra = ["--max-file-bytes", "1000"]
        expect = "big.cuh: 5000 bytes, above the limit of 1000 bytes"
    else:
        src = tmp_path / "notes.txt"
        src.write_text("x")
        expect = "not a CUDA/C++ source"
    before = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file() and not p.is_symlink()}
    code, err = run_cli([src, "--arch", "gfx942", "--out", tmp_path / "out", "--arch-table", table, *extra], capsys)
    assert code == 2
    assert expect in err and len(err.splitlines()) == 1, err
    assert "Traceback" not in err
    assert {p: p.read_bytes() for p in before} == before  # input untouched


def test_odd_files_in_a_tree_are_decoded_or_skipped_never_fatal(tmp_path):
    """latin-1 is decoded (every byte kept), binary / oversized / looping / unreadable entries are
    skipped with the reason, and the rest of the tree is migrated."""
    src = cuda_tree(tmp_path)
    (src / "old.h").write_bytes("// caf\xe9 \xa9 1998\n#define WS 32\n".encode("latin-1"))
    (src / "bom.cu").write_bytes("\ufeff// dlib\n#include <cuda_runtime.h>\n".encode("utf-8"))  # dlib's cuda_dlib.cu
    (src / "blob.cuh").write_bytes(b"\x7fELF\x00\x00")
    (src / "big.cuh").write_text("// x\n" * 1000)
    (src / "sub").mkdir()
    os.symlink("..", src / "sub" / "up")
    locked = src / "locked"
    locked.mkdir()
    (locked / "x.cu").write_text("__global__ void x() {}\n")
    locked.chmod(0)
    try:
        found = tree.discover(src, max_bytes=1000)
    finally:
        locked.chmod(0o755)
    by_rel = {f.rel: f for f in found.files}
    assert by_rel["old.h"].encoding == "latin-1" and "caf\xe9 \xa9" in by_rel["old.h"].text
    assert by_rel["k.cu"].encoding == "utf-8"
    assert by_rel["bom.cu"].encoding == "utf-8-bom" and by_rel["bom.cu"].text.startswith("// dlib\n")
    data = sample_report(files=[{**sample_report()["files"][0], "path": "bom.cu", "encoding": "utf-8-bom"}])
    data["summary"] = report.summarize(data, "error")
    assert "- bom.cu: UTF-8 with a byte-order mark, left out of the cuda/ and hip/ copies" in report.to_markdown(data)
    reasons = dict(s.split(": ", 1) for s in found.skipped)
    assert reasons["blob.cuh"].startswith("binary file")
    assert reasons["big.cuh"].startswith("5000 bytes, above the limit")
    assert reasons["sub/up"].startswith("symlink loop")
    if os.geteuid() != 0:  # root reads any folder
        assert reasons["locked/"].startswith("folder not readable")


def test_unknown_arch_lists_valid_ones(tmp_path, table, capsys):
    code, err = run_cli([cuda_tree(tmp_path), "--arch", "gfx9999", "--out", tmp_path / "o", "--arch-table", table], capsys)
    assert code == 2 and err.startswith("migrate: --arch: unknown value 'gfx9999' (allowed: gfx1100, gfx90a, gfx942, gfx950; "
                                        "or any other processor hipcc compiles for")
    code, err = run_cli([cuda_tree(tmp_path), "--arch", "gfx9420", "--out", tmp_path / "o2", "--arch-table", table], capsys)
    assert code == 2 and err.rstrip().endswith("lists them); did you mean gfx942?"), err


def test_wavefront_of_an_arch_outside_the_table_comes_from_the_toolchain():
    """hipcc's device IR for the arch carries the wavefront size as a target feature (LLVM 22 no longer
    defines __AMDGCN_WAVEFRONT_SIZE); the lines are hipcc 7.2.4's output for gfx1030 and gfx908."""
    rdna = 'attributes #0 = { "target-cpu"="gfx1030" "target-features"="+16-bit-insts,+dpp,+wavefrontsize32" }'
    cdna = 'attributes #0 = { "target-cpu"="gfx908" "target-features"="+mai-insts,+wavefrontsize64" }'
    assert archs.wavefront_of(rdna) == 32 and archs.wavefront_of(cdna) == 64 and archs.wavefront_of("") is None
    probed = archs.Arch("gfx1030", "", 32, archs.DEFAULT_LDS_BYTES)
    picked = archs.select({}, ["gfx1030", "gfx1030"], lambda name: probed if name == "gfx1030" else None)
    assert picked == [probed]


def test_bad_flags_exit_2(tmp_path, table, capsys):
    code, err = run_cli([cuda_tree(tmp_path), "--arch", "gfx942", "--out", tmp_path / "o", "--fail-on", "sometimes",
                         "--arch-table", table], capsys)
    assert code == 2 and "--fail-on" in err
    code, err = run_cli([cuda_tree(tmp_path), "--arch", "gfx942", "--out", tmp_path / "o", "--jobs", "0",
                         "--arch-table", table], capsys)
    assert code == 2 and "--jobs 0" in err


def test_out_inside_src_or_foreign_folder_refused(tmp_path):
    src = cuda_tree(tmp_path)
    from migrate import pipeline
    with pytest.raises(InputError, match="inside the input tree"):
        pipeline.prepare_out(src / "report", src)
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "keep.txt").write_text("mine")
    with pytest.raises(InputError, match="not empty"):
        pipeline.prepare_out(foreign, src)
    assert (foreign / "keep.txt").read_text() == "mine"
    # a folder that cannot be made (here under a file; in a container, one the user may not write)
    with pytest.raises(InputError, match=r"^--out .*/keep.txt/run: cannot be written \(Not a directory\)"):
        pipeline.prepare_out(foreign / "keep.txt" / "run", src)


@pytest.mark.parametrize("entry, message", [
    ({"wavefront": 48, "lds_bytes": 65536}, "gfx1.wavefront: expected 32 or 64"),
    ({"wavefront": 64}, "gfx1.lds_bytes: expected a positive integer"),
])
def test_arch_table_errors(tmp_path, entry, message):
    path = tmp_path / "a.json"
    path.write_text(json.dumps({"gfx1": entry}))
    with pytest.raises(InputError, match=message):
        archs.load_table(path)
    with pytest.raises(InputError, match="file not found"):
        archs.load_table(tmp_path / "none.json")


def test_wavefront_groups_from_table(table):
    t = archs.load_table(table)
    groups = archs.wavefront_groups(archs.select(t, ["gfx942", "gfx1100", "gfx90a"]))
    assert [[a.name for a in g] for g in groups] == [["gfx942", "gfx90a"], ["gfx1100"]]


def test_discover_units_and_symlinked_duplicate(tmp_path):
    src = cuda_tree(tmp_path)
    (src / "host.cpp").write_text('#include <cuda_runtime.h>\nint main() { cudaDeviceSynchronize(); }\n')
    (src / "cpu.cpp").write_text("int f() { return 1; }\n")
    (src / "alias").symlink_to(src / "k.cu")
    t = tree.discover(src)
    assert [u.rel for u in tree.units(t)] == ["host.cpp", "k.cu"]  # a symlinked file keeps its extension-less name
    assert [f.rel for f in t.files] == ["cpu.cpp", "host.cpp", "k.cu"]


def test_cuda_named_in_a_comment_or_string_literal_is_no_cuda_use(tmp_path):
    """mmcv 2.2.0's Cambricon MLU sources log `"Launch Kernel MLUKernelMaskedIm2colForward<<<"`; such a
    C++ file is another backend's, not a CUDA unit. A quoted CUDA include is still a use."""
    src = cuda_tree(tmp_path)
    (src / "mlu.cpp").write_text('#include "pytorch_mlu_helper.hpp"\n// calls cudaMalloc( on CUDA\n'
                                 'void f() { LOG << "Launch Kernel K<<<" << dim; }\n')
    (src / "quoted.cpp").write_text('#include "cuda_runtime.h"\nint g() { return 0; }\n')
    (src / "pytorch_mlu_helper.hpp").write_text("#pragma once\n")
    t = tree.discover(src)
    assert [u.rel for u in tree.units(t)] == ["k.cu", "quoted.cpp"]
    assert not tree.uses_cuda('/* __global__ */ const char* s = "<<<";') and tree.uses_cuda("__global__ void k();")


FAKE_HIPIFY = '''#!/usr/bin/perl
my %deprecated_funcs = (
    "cudaThreadSynchronize" => "10.0",
);

my %removed_funcs = (
    "texture" => "12.0",
    "cudnnOld" => "9.0",
);

my %experimental_funcs = (
    "cudaNewThing" => "7.2.0",
);

@UnsupportedDeviceFunctions = (
    "__nanosleep"
);

@UnsupportedDeviceDataTypes = (
    "nv_bfloat162"
);

@HipOnlyUnsupportedFunctions = (
    "cudaGraphConditionalHandle"
);

@HipDNNOnlyUnsupportedFunctions = (
    "cudnnFoo"
);
'''


def test_hipify_warning_tables(tmp_path):
    script = tmp_path / "hipify-perl"
    script.write_text(FAKE_HIPIFY)
    tables = hipify.read_tables(script)
    cuda = "texture<float> t;\ncudaThreadSynchronize(); cudnnOld();\n__nanosleep(10); ns::__nanosleep(1);\ncudaNewThing();\n"
    hip = "texture<float> t;\nhipDeviceSynchronize(); cudnnOld();\n__nanosleep(10);\ncudaNewThing();\n"
    got = [(w.line, w.message) for w in hipify.warnings_for(tables, "f.cu", cuda, hip)]
    assert (1, "removed CUDA identifier: texture since CUDA 12.0") in got
    assert (2, "deprecated CUDA identifier: cudaThreadSynchronize since CUDA 10.0") in got
    assert (2, "removed CUDA identifier: cudnnOld since CUDNN 9.0") in got
    assert (3, 'unsupported device function "__nanosleep": __nanosleep(10); ns::__nanosleep(1);') not in got
    assert (4, "experimental ROCm HIP identifier: cudaNewThing 7.2.0") in got
    assert any(line == 4 and "cudaNewThing" in m and "untranslated" in m for line, m in got)
    script.write_text("#!/usr/bin/perl\n")
    assert hipify.read_tables(script) is None


def sample_report(**over) -> dict:
    f = {"path": "a<b>.cu", "kind": "cu", "unit": True, "hipify_warnings": [{"line": 1, "message": "<x>"}],
         "findings": [{"rule": "inline-ptx-asm", "severity": "error", "file": "a<b>.cu", "line": 3, "col": 1,
                       "text": 'asm("<script>alert(1)</script>");', "message": "m", "hint": "h", "suggestion": "",
                       "status": "open"},
                      {"rule": "warp-sync-intrinsic", "severity": "warning", "file": "a<b>.cu", "line": 4, "col": 1,
                       "text": "t", "message": "m", "hint": "h", "suggestion": "", "status": "open"}],
         "fixes": [{"id": "hip-header-layout", "title": "t", "lines": [1], "diff": "-#include <hipblas.h>\n+x"}],
         "compile": {"gfx942": {"status": "ok", "first_error": "", "log": "l", "seconds": 1.0},
                     "gfx1100": {"status": "failed", "first_error": "e.cu:1:2: error: <bad>", "log": "l", "seconds": 1.0}},
         "baseline": {"gfx942": {"status": "failed", "first_error": "x", "log": "l", "seconds": 1.0},
                      "gfx1100": {"status": "failed", "first_error": "x", "log": "l", "seconds": 1.0}}}
    data = {"schema": 1, "complete": True, "source": "/src", "out": "/out",
            "archs": [{"name": "gfx942", "family": "CDNA3", "wavefront": 64, "lds_bytes": 65536},
                      {"name": "gfx1100", "family": "RDNA3", "wavefront": 32, "lds_bytes": 65536}],
            "tools": {"hipcc": "HIP version: 7.2", "hipify_perl": "7.2"}, "options": {"baseline": True},
            "defines": [], "timings": {"wall_s": 1.0}, "skipped": [], "files": [f]}
    data.update(over)
    return data


def test_summary_and_fail_on():
    data = sample_report()
    s = report.summarize(data, "error")
    assert s["compile"]["gfx942"]["ok"] == 1 and s["compile"]["gfx1100"]["failed"] == 1
    assert s["baseline"]["gfx942"]["failed"] == 1
    assert s["findings"]["error"]["open"] == 1 and s["exit_code"] == 1
    assert report.summarize(data, "never")["exit_code"] == 0
    data["files"][0]["compile"]["gfx1100"]["status"] = "ok"
    data["files"][0]["findings"][0]["status"] = "fixed"
    assert report.summarize(data, "error")["exit_code"] == 0
    assert report.summarize(data, "warning")["exit_code"] == 1


def test_html_escapes_everything_and_is_self_contained(tmp_path):
    data = sample_report()
    data["summary"] = report.summarize(data, "error")
    report.write_all(tmp_path, data)
    page = (tmp_path / "report.html").read_text()
    assert "<script>" not in page and "&lt;script&gt;" in page
    assert "a&lt;b&gt;.cu" in page and "&lt;bad&gt;" in page
    assert "src=" not in page and "http" not in page
    md = (tmp_path / "report.md").read_text()
    assert "| gfx942 | 1 | 0 | 0 | 0 | 0 | 0 (delta +1) |" in md  # the fifth count: failed without a finding
    assert json.loads((tmp_path / "report.json").read_text())["complete"] is True
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.html", "report.json", "report.md"]


def test_a_host_only_unit_and_a_baseline_failure_say_so_in_markdown_and_html(tmp_path):
    data = sample_report()
    data["files"][0]["host_only"] = "C/C++ source without device code"
    data["files"][0]["baseline"]["gfx942"]["first_error"] = "/out/run/baseline/a.cu:3:1: error: <no cuda_cmake_macros.h>"
    data["summary"] = report.summarize(data, "error")
    report.write_all(tmp_path, data)
    md, page = (tmp_path / "report.md").read_text(), (tmp_path / "report.html").read_text()
    assert "- gfx942: **ok** (host code only: compiled once as C++, no device pass) (baseline: failed: " in md
    assert "error: <no cuda_cmake_macros.h>`)" in md
    assert "host code only: compiled once as C++, no device pass" in page
    assert "error: &lt;no cuda_cmake_macros.h&gt;</code>)" in page
    assert "Archs: gfx942 (wave64, LDS 65536 B), gfx1100 (wave32, LDS 65536 B)." in page


def test_html_lists_the_project_flags_as_markdown_does(tmp_path):
    data = sample_report(options={"baseline": False, "project_flags": {
        "source": "inferred", "include_dirs": ["csrc"], "defines": ["USE_CUDA"], "units": 0, "outside_tree": [],
        "inferred_defines": [{"define": "USE_CUDA", "reason": "the project's setup.py passes it in its GPU build"}]}})
    data["summary"] = report.summarize(data, "error")
    report.write_all(tmp_path, data)
    page = (tmp_path / "report.html").read_text()
    assert "<h2>Project flags</h2><ul><li>source: inferred from the build files" in page
    assert "<li>-DUSE_CUDA inferred: the project&#x27;s setup.py passes it in its GPU build</li>" in page


def test_interrupted_write_leaves_no_complete_report(tmp_path, monkeypatch):
    data = sample_report()
    data["summary"] = report.summarize(data, "error")

    def boom(*_a, **_k):
        raise KeyboardInterrupt

    monkeypatch.setattr(report, "to_html", boom)
    with pytest.raises(KeyboardInterrupt):
        report.write_all(tmp_path, data)
    assert not (tmp_path / "report.json").exists()


def test_a_crash_of_the_recipe_exits_5_not_the_fail_on_code(tmp_path, table, capsys, monkeypatch):
    """Python exits 1 on an uncaught exception, the code that means `--fail-on` met: a bug in a step
    must read as a crashed run (5, traceback and one line on stderr, no report), never as a result."""
    def broken(*_args, **_kwargs):
        raise TypeError("can only concatenate str (not \"int\") to str")

    monkeypatch.setattr(cli.pipeline, "run", broken)
    code, err = run_cli([cuda_tree(tmp_path), "--arch", "gfx942", "--out", tmp_path / "out", "--arch-table", table], capsys)
    assert code == 5
    assert "Traceback" in err
    assert err.splitlines()[-1] == ('migrate: internal error, no report written: TypeError: can only concatenate str '
                                    '(not "int") to str')
    assert not (tmp_path / "out" / "report.json").exists()


def test_markdown_names_where_each_units_flags_came_from():
    data = sample_report(options={"baseline": True, "project_flags": {
        "source": "/home/dev/lgbm/build/compile_commands.json", "include_dirs": ["extra"], "defines": ["X=1"], "units": 2,
        "outside_tree": ["/usr/local/cuda/include"],
        "unread_options": ["/b/CMakeFiles/lightgbm_objs.dir/includes_CUDA.rsp"],
        "inferred_defines": [{"define": "USE_CUDA", "reason": "guards all the code of 2 units"}],
        "extension_flags": [{"flag": "-U__HIP_NO_HALF_OPERATORS__", "reason": "the build script's nvcc argument at op_builder/builder.py:879"}]}})
    data["files"][0].update(include_dirs=["include"], defines=["USE_CUDA"], undefines=["OLD"])
    data["summary"] = report.summarize(data, "error")
    md = report.to_markdown(data)
    assert "- source: `/home/dev/lgbm/build/compile_commands.json`: its entries give 2 sources of the tree their own folders" in md
    assert "- every unit: `-I extra`, `-DX=1`" in md
    assert "`/usr/local/cuda/include`" in md
    assert "response file `/b/CMakeFiles/lightgbm_objs.dir/includes_CUDA.rsp` not found" in md
    assert "- flags: `-I include` `-DUSE_CUDA` `-UOLD`" in md
    assert "- `-DUSE_CUDA` inferred: guards all the code of 2 units" in md
    assert "- `-U__HIP_NO_HALF_OPERATORS__` for the PyTorch extension units: the build script's nvcc argument at" in md


def test_opencl_kernels_included_as_strings_are_skipped_not_scanned(tmp_path):
    """LightGBM 4.7.0's gpu_tree_learner.h includes its OpenCL kernels (ocl/*.cl, with NVIDIA OpenCL
    PTX asm) into a string literal: they are named as skipped, never scanned as CUDA."""
    src = cuda_tree(tmp_path)
    (src / "ocl").mkdir()
    (src / "ocl" / "histogram16.cl").write_text('R""()\n__kernel void h() { asm volatile("membar.gl;"); }\n)""\n')
    (src / "learner.h").write_text('const char* kernel16 = {\n#include "ocl/histogram16.cl"\n};\n')
    (src / "k.cu").write_text('#include "learner.h"\n__global__ void k() {}\n')
    found = tree.discover(src)
    assert [f.rel for f in found.files] == ["k.cu", "learner.h"]
    assert found.skipped == ("ocl/histogram16.cl: OpenCL C kernel that a C++ source includes as a string literal (an "
                             "OpenCL compiler builds it at run time): not CUDA, not migrated",)


def test_tools_line_names_all_three_translators_and_compiler():
    tools = {"hipcc": "HIP version: 7.2.4", "hipify_perl": "7.2.4", "hipify_clang": "LLVM version 22.1.7"}
    assert report.tools_text(tools) == "HIP version: 7.2.4; hipify-perl 7.2.4; hipify-clang LLVM version 22.1.7"
    tools["hipify_clang"] = "not used: no CUDA headers at /opt/rocmig/cuda"
    assert report.tools_text(tools).endswith("; hipify-clang not used: no CUDA headers at /opt/rocmig/cuda")
    data = sample_report()
    data["tools"] = tools
    data["summary"] = report.summarize(data, "error")
    assert "hipify-clang not used: no CUDA headers" in report.to_markdown(data)
    assert "hipify-clang not used: no CUDA headers" in report.to_html(data)


def test_project_flags_say_none_for_a_tree_without_build_files(tmp_path):
    from migrate import flags
    src = cuda_tree(tmp_path)
    assert flags.project_flags(src, {"k.cu"}, None, (), ()).source == "none"
    (src / "Makefile").write_text("k: k.cu\n\tnvcc -Iinc k.cu\n")
    assert flags.project_flags(src, {"k.cu"}, None, (), ()).source == "inferred"
    data = sample_report(options={"baseline": False, "project_flags": {
        "source": "none", "include_dirs": [], "defines": [], "units": 0}})
    data["summary"] = report.summarize(data, "error")
    assert "- source: none: the tree has none of the build files migrate reads" in report.to_markdown(data)



def test_failed_compiles_come_first_with_their_explanation_and_paths_in_out():
    """A new user looks for what failed: report.md and report.html list each failed unit once per
    first error (archs that share it together), its explanation or "without a finding", and the
    error's path relative to OUT rather than the container's mount."""
    data = sample_report(out="/out/run")
    unit = data["files"][0]
    unit["compile"] = {
        "gfx942": {"status": "failed", "first_error": "/out/run/hip/a.cu:9:1: error: no type", "log": "l", "seconds": 1.0,
                   "explained_by": {"rule": "texture-fetch-no-image", "file": "a.cu", "line": 9, "how": "at the line"}},
        "gfx1100": {"status": "failed", "first_error": "/out/run/hip/a.cu:12:3: error: expected ';'", "log": "l",
                    "seconds": 1.0}}
    fixed = {"rule": "cooperative-groups-unsupported", "severity": "error", "file": "a.cu", "col": 1, "text": "t",
             "message": "m", "hint": "h", "suggestion": "", "status": "fixed", "note": "the migrated line no longer has it"}
    unit["findings"] = [{**fixed, "line": 30}, {**fixed, "line": 320}]
    data["summary"] = report.summarize(data, "error")
    md = report.to_markdown(data)
    section = md[md.index("## Failed compiles"):md.index("## Findings")]
    assert ("- a<b>.cu (gfx942, failed): `hip/a.cu:9:1: error: no type` (explained by `texture-fetch-no-image` at a.cu:9)"
            in section)
    assert "- a<b>.cu (gfx1100, failed): `hip/a.cu:12:3: error: expected ';'` (**without a finding**)" in section
    assert "/out/run" not in md
    # fixed findings of one rule and reason share one line
    assert "- a<b>.cu:30, 320 [fixed] `cooperative-groups-unsupported`: the migrated line no longer has it" in md
    page = report.to_html(data)
    assert "<h2>Failed compiles</h2>" in page and "no finding" in page and "/out/run" not in page
    data["files"][0]["compile"]["gfx1100"] = {**unit["compile"]["gfx942"]}
    assert "(gfx942, gfx1100, failed)" in report.to_markdown(data)


def test_work_tree_copies_get_the_inputs_bytes_back(tmp_path):
    """The cuda/ and hip/ copies of a latin-1 or BOM file are UTF-8 while the translators and fixups run,
    then hold the input's bytes again for the compile (a latin-1 "\\xb5s" literal stays 3 bytes)."""
    src = tmp_path / "src"
    src.mkdir()
    latin = b'#include <cuda_runtime.h>\nconst char unit[] = "\xb5s";\nstatic_assert(sizeof(unit) == 3, "");\n'
    bom = "\ufeff// dlib\n#include <cuda_runtime.h>\n".encode("utf-8")
    (src / "lit.cu").write_bytes(latin)
    (src / "bom.cu").write_bytes(bom)
    found = tree.discover(src)
    work = tmp_path / "hip"
    tree.write_tree(work, {f.rel: f.text.replace("cuda_runtime.h", "hip/hip_runtime.h") for f in found.files})
    assert (work / "lit.cu").read_bytes() != latin.replace(b"cuda_runtime.h", b"hip/hip_runtime.h")  # UTF-8 meanwhile
    tree.restore_encodings([work, tmp_path / "absent"], list(found.files))
    assert (work / "lit.cu").read_bytes() == latin.replace(b"cuda_runtime.h", b"hip/hip_runtime.h")
    assert (work / "bom.cu").read_bytes() == bom.replace(b"cuda_runtime.h", b"hip/hip_runtime.h")
    assert tree.read_work_text(work / "lit.cu") == (latin.decode("latin-1").replace("cuda_runtime.h", "hip/hip_runtime.h"),
                                                    "latin-1")
