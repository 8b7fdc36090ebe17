"""Per-component arch gates are read from the component's own setup file (templates/files/arch_gate.py),
the way the builder stages read them before building; the PyPI-marked tests read the real sdists.
"""

import importlib.util
import io
import subprocess
import sys
import tarfile
import urllib.request
from pathlib import Path

import pytest

from buildctl.load import load_project
from buildctl.resolve import pypi_files

ROOT = Path(__file__).resolve().parents[2]
GATE = ROOT / "templates" / "files" / "arch_gate.py"
spec = importlib.util.spec_from_file_location("arch_gate", GATE)
arch_gate = importlib.util.module_from_spec(spec)
spec.loader.exec_module(arch_gate)  # type: ignore[union-attr]

REFUSING = '''
import os, sys
target = os.environ.get("AMDGPU_TARGET", "gfx942")
if target not in ["gfx942", "gfx950"]:
    print(f"unsupported {target}")
    sys.exit(1)
fp8 = "-DFNUZ" if target == "gfx942" else "-DE4M3"
smem = 48 if target in ("gfx942", "gfx1201") else 128
'''
NAMED_SUM = '''
CDNA = ["gfx942", "gfx950"]
RDNA3 = ["gfx1100", "gfx1101"]
SUPPORTED = CDNA + RDNA3
if arch not in SUPPORTED:
    raise SystemExit(1)
'''
ASSERTED = '''
def validate(archs):
    allowed_archs = ["native", "gfx90a", "gfx950", "gfx942"]
    assert all(a in allowed_archs for a in archs), "unsupported"
'''


def test_a_refusing_test_decides_over_other_membership_tests():
    assert arch_gate.read_gate(REFUSING) == ["gfx942", "gfx950"]


def test_names_and_sums_of_lists_are_resolved():
    assert arch_gate.read_gate(NAMED_SUM) == ["gfx942", "gfx950", "gfx1100", "gfx1101"]


def test_an_asserted_membership_is_a_gate_and_non_gfx_names_are_dropped():
    assert arch_gate.read_gate(ASSERTED) == ["gfx90a", "gfx950", "gfx942"]
    assert arch_gate.read_gate("import os\nprint(os.name)\n") == []


@pytest.mark.parametrize("arch,code", [("gfx950", 0), ("gfx1100", 1)])
def test_the_script_exits_by_the_gate_and_names_what_it_accepts(tmp_path, arch, code):
    setup = tmp_path / "setup_rocm.py"
    setup.write_text(REFUSING)
    done = subprocess.run([sys.executable, str(GATE), str(setup), arch], capture_output=True, text=True, check=False)
    assert done.returncode == code
    if code:
        assert done.stderr.strip().endswith(f"refuses {arch}; it accepts gfx942, gfx950")
    empty = tmp_path / "setup.py"
    empty.write_text("print('no gate')\n")
    assert subprocess.run([sys.executable, str(GATE), str(empty), arch], capture_output=True, check=False).returncode == 2


def _sdist(name: str, version: str) -> tarfile.TarFile:
    """name==version's sdist from PyPI, opened."""
    sdist = next(f for f in pypi_files(name, version) if f["filename"].endswith(".tar.gz"))
    with urllib.request.urlopen(sdist["url"], timeout=300) as response:
        return tarfile.open(fileobj=io.BytesIO(response.read()))


@pytest.mark.pypi
def test_flash_attention_archs_in_the_matrix_are_its_sdists_gate():
    """matrix.yaml's flash-attention archs equal the gate of that release's own setup.py (PyPI sdist)."""
    fw = load_project(ROOT).matrix.frameworks["flash-attention"]
    with _sdist(fw.pypi, fw.version) as tar:
        top = tar.getmembers()[0].name.split("/")[0]
        gate = arch_gate.read_gate(tar.extractfile(f"{top}/setup.py").read().decode())  # type: ignore[union-attr]
    assert sorted(gate) == sorted(fw.archs)


@pytest.mark.pypi
def test_deepspeed_ops_allowlist_names_real_ops_none_built_for_the_build_host_cpu():
    """Each allowlisted op has a builder with that BUILD_VAR in the sdist; none of them compiles with
    cpu_arch() (-march=native of the build host), which would break the image on another CPU."""
    fw = load_project(ROOT).matrix.frameworks["deepspeed-ops"]
    assert fw.ops
    with _sdist(fw.pypi, fw.version) as tar:
        builders = {m.name: tar.extractfile(m).read().decode()  # type: ignore[union-attr]
                    for m in tar.getmembers() if m.name.count("/") == 2 and "/op_builder/" in m.name
                    and m.name.endswith(".py")}
    for op in fw.ops:
        owner = [text for text in builders.values() if f'BUILD_VAR = "DS_BUILD_{op}"' in text
                 or f"BUILD_VAR = 'DS_BUILD_{op}'" in text]
        assert owner, f"DS_BUILD_{op} is no op builder of deepspeed {fw.version}"
        assert all("cpu_arch()" not in text for text in owner), f"{op} compiles with -march=native"
