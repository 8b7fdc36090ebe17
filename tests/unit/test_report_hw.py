"""`buildctl report hardware`: parsers on real rocminfo / amd-smi / KFD sysfs outputs copied from public
reports (tests/unit/hardware_reports/SOURCES.md names each one), the merge, the Markdown, JUnit summaries
of a real pytest run, and the command on this host (no AMD GPU: a report that says so, exit 0)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from buildctl.hwparse import (
    gfx_from_target_version,
    parse_amdsmi_static,
    parse_rocminfo,
    parse_rocminfo_system,
)
from buildctl.load import load_project
from buildctl.report_hw import (
    Host,
    Report,
    kfd_gpus,
    markdown,
    merge_gpus,
    summarize_junit,
)

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = Path(__file__).parent / "hardware_reports"


def fixture(name: str) -> str:
    return (FIXTURES / name).read_text()


def test_rocminfo_mi300x_gpu_agent():
    gpus = parse_rocminfo(fixture("rocminfo-mi300x-rocm6.2.3.txt"))
    assert len(gpus) == 1, "the CPU agent is not a GPU"
    g = gpus[0]
    assert (g.name, g.gfx, g.features, g.node) == ("AMD Instinct MI300X", "gfx942", "sramecc+:xnack-", 2)
    assert (g.compute_units, g.wavefront) == (304, 64)
    assert g.vram_bytes == 201310208 * 1024  # the COARSE GRAINED pool, 192 GiB
    assert g.lds_bytes == 64 * 1024
    assert g.uuid == "GPU-07386a321fa45d1e"
    assert g.firmware == {"Packet Processor uCode": "150", "SDMA engine uCode": "21"}


def test_rocminfo_agrees_with_the_matrix_arch_table():
    """What the hardware says about gfx942 is what matrix.yaml says (wavefront, LDS per workgroup)."""
    g = parse_rocminfo(fixture("rocminfo-mi300x-rocm6.2.3.txt"))[0]
    arch = load_project(ROOT).matrix.archs[g.gfx]
    assert (g.wavefront, g.lds_bytes) == (arch.wavefront, arch.lds_bytes)
    assert "MI300X" in arch.products


def test_rocminfo_header():
    system = parse_rocminfo_system(fixture("rocminfo-mi300x-rocm6.2.3.txt"))
    assert (system.kfd_loaded, system.kfd_version, system.runtime_version) == (True, "6.8.5", "1.14")


def test_rocminfo_partial_paste_of_an_rdna3_card():
    """A paste cut before the wavefront line and without the header: what is there is read, the rest is None."""
    text = fixture("rocminfo-7900xtx-partial.txt")
    (g,) = parse_rocminfo(text)
    assert (g.name, g.gfx, g.compute_units, g.node) == ("Radeon RX 7900 XTX", "gfx1100", 96, 2)
    assert (g.wavefront, g.vram_bytes, g.lds_bytes) == (None, None, None)
    assert parse_rocminfo_system(text).kfd_loaded is False


def test_rocminfo_of_a_cpu_only_host_has_no_gpu():
    cpu_only = fixture("rocminfo-mi300x-rocm6.2.3.txt").split("*******\nAgent 3")[0]
    assert parse_rocminfo(cpu_only) == []
    assert parse_rocminfo("") == []


def test_amdsmi_static_mi350x():
    (g,) = parse_amdsmi_static(fixture("amd-smi-static-mi350x.txt"))
    assert (g.name, g.gfx, g.compute_units) == ("AMD Instinct MI350X", "gfx950", 128)
    assert (g.driver, g.bdf) == ("6.18.3", "0000:05:00.0")
    assert g.firmware == {"IFWI VERSION": "00154951"}


@pytest.mark.parametrize("encoded, gfx", [(90402, "gfx942"), (90010, "gfx90a"), (90500, "gfx950"),
                                          (110000, "gfx1100"), (110001, "gfx1101"), (120001, "gfx1201"),
                                          (0, None)])
def test_gfx_target_version(encoded, gfx):
    assert gfx_from_target_version(encoded) == gfx


def _sysfs(tmp_path: Path, name: str) -> Path:
    root = tmp_path / "root"
    shutil.copytree(FIXTURES / name / "nodes", root / "sys/class/kfd/kfd/topology/nodes")
    return root


def test_kfd_topology_apu_and_dgpu(tmp_path):
    gpus = kfd_gpus(_sysfs(tmp_path, "kfd-raven-fiji"))
    assert [(g.node, g.compute_units, g.wavefront) for g in gpus] == [(0, 11, 64), (1, 64, 64)]
    assert gpus[0].firmware == {"fw_version": "363"} and gpus[0].lds_bytes == 64 * 1024
    assert gpus[1].lds_bytes is None, "the report's node 1 spells the key lds_Wsize_in_kb"
    assert all(g.gfx is None for g in gpus), "a 2019 kernel had no gfx_target_version"


def test_kfd_topology_memory_banks(tmp_path):
    (g,) = kfd_gpus(_sysfs(tmp_path, "kfd-mi350x"))
    assert (g.node, g.compute_units, g.vram_bytes) == (5, 256, 309220868096)


def test_kfd_topology_absent(tmp_path):
    assert kfd_gpus(tmp_path) == []


def test_merge_completes_rocminfo_with_amdsmi():
    rocminfo = parse_rocminfo(fixture("rocminfo-mi300x-rocm6.2.3.txt"))
    amdsmi = parse_amdsmi_static(fixture("amd-smi-static-mi350x.txt"))
    (g,) = merge_gpus(rocminfo, amdsmi, [])
    assert (g.gfx, g.compute_units, g.driver, g.source) == ("gfx942", 304, "6.18.3", "rocminfo+amd-smi")
    assert g.firmware["SDMA engine uCode"] == "21" and g.firmware["IFWI VERSION"] == "00154951"
    assert merge_gpus([], amdsmi, []) == amdsmi


def test_markdown_of_a_gpu_report():
    rocminfo_text = fixture("rocminfo-mi300x-rocm6.2.3.txt")
    host = Host("Ubuntu 22.04.5 LTS", "6.8.0", "x86_64", "docker", "rocmig/serve:rocm7.2.4-gfx942", "sha256:ab",
                "6.2.3", "6.8.5", parse_rocminfo_system(rocminfo_text))
    text = markdown(Report(host, parse_rocminfo(rocminfo_text), []))
    assert "| 0 | AMD Instinct MI300X | gfx942 (sramecc+:xnack-) | 304 | 64 | 192.0 GiB | 64 KiB |" in text
    assert "| KFD | 6.8.5 (HSA runtime 1.14) |" in text
    assert "No AMD GPU" not in text


def test_junit_summary_of_a_real_pytest_run(tmp_path):
    (tmp_path / "test_sample.py").write_text(
        "import pytest\n"
        "def test_ok():\n    assert True\n"
        "def test_bad():\n    assert 1 == 2\n"
        "@pytest.mark.skip(reason='no gpu')\ndef test_skip():\n    pass\n")
    junit = tmp_path / "junit.xml"
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--junitxml={junit}",
                           str(tmp_path / "test_sample.py")], cwd=tmp_path, capture_output=True, text=True, check=False)
    summary = summarize_junit(junit, proc.returncode)
    assert (summary.tests, summary.failures, summary.errors, summary.skipped) == (3, 1, 0, 1)
    assert summary.failed == ["test_sample::test_bad"] and summary.exit_code == 1
    text = markdown(Report(Host("x", "k", "m", None, None, None, None, None, None), [], [], summary))
    assert "3 tests: 1 passed, 1 failed, 0 errors, 1 skipped" in text and "`test_sample::test_bad`" in text


def test_kernels_bench_section_from_a_real_result():
    """The kernels bench table of a real run (kernels/bench/results/h200.json, the H200 run of the kernels
    benchmark) goes into the report with how many cases meet their goal."""
    result = ROOT / "kernels" / "bench" / "results" / "h200.json"
    data = json.loads(result.read_text())
    text = markdown(Report(Host("x", "k", "m", None, None, None, None, None, None), [], [],
                           kernels_bench=str(result)))
    assert f"### `buildctl kernels bench` on {data['device']} ({data['target']})" in text
    assert f"of {len(data['cases'])} cases meet their goal" in text
    assert text.count("| gemm |") == sum(c["kernel"] == "gemm" for c in data["cases"])


def _buildctl(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "buildctl", *args], cwd=cwd, capture_output=True, text=True, check=False)


@pytest.mark.skipif(os.path.exists("/dev/kfd"), reason="this host has an AMD GPU")
def test_command_on_a_host_without_an_amd_gpu(tmp_path):
    out = tmp_path / "hw.md"
    proc = _buildctl("report", "hardware", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    text = out.read_text()
    assert "No AMD GPU is present on this host" in text and "| kernel |" in text
    data = json.loads(_buildctl("report", "hardware", "--json").stdout)
    assert data["gpus"] == [] and data["host"]["os"]
    assert any("/dev/kfd" in n for n in data["notes"])


def test_command_refuses_an_out_folder_that_does_not_exist(tmp_path):
    proc = _buildctl("report", "hardware", "--out", str(tmp_path / "no" / "hw.md"))
    assert proc.returncode == 2 and "--out" in proc.stderr


@pytest.mark.skipif(os.path.exists("/dev/kfd"), reason="this host has an AMD GPU: the kernels bench would run")
def test_run_tests_keeps_stdout_to_the_json_report(tmp_path):
    """--run-tests --json: the child pytest's output goes to stderr; stdout parses as the report."""
    (tmp_path / "tests").mkdir()
    (tmp_path / "pytest.ini").write_text("[pytest]\nmarkers =\n    amdgpu: needs an AMD GPU\n")
    (tmp_path / "tests" / "test_gpu.py").write_text(
        "import pytest\n\n@pytest.mark.amdgpu\ndef test_on_gpu():\n    print('from the test')\n    assert True\n\n"
        "def test_not_selected():\n    assert True\n")
    proc = _buildctl("--root", str(tmp_path), "report", "hardware", "--run-tests", "--json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["tests"]["tests"] == 1 and data["tests"]["failures"] == 0 and data["tests"]["exit_code"] == 0
    assert "1 passed, 1 deselected" in proc.stderr
