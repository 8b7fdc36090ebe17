"""matrix.yaml loading: the real file validates; each kind of bad input gives one line naming file, key path, allowed values."""

from pathlib import Path

import pytest
import yaml

from buildctl.errors import ConfigError
from buildctl.load import load_project

ROOT = Path(__file__).resolve().parents[2]


def test_real_matrix_loads_with_the_facts_of_design_md():
    project = load_project(ROOT)
    m = project.matrix
    amd = {r.version: r for r in m.rocm if r.source == "amd"}
    debian = {r.version: r for r in m.rocm if r.source == "debian"}
    assert sorted(amd) == ["6.1", "6.2", "6.3", "6.4", "7.0", "7.1", "7.2"]
    assert sorted(debian) == ["5.7", "7.2"]
    assert debian["7.2"].apt_suite == "experimental" and debian["5.7"].apt_suite == "trixie"
    assert amd["6.3"].torch.torch == "2.7.1" and amd["6.3"].torch.triton == "3.3.1"
    assert amd["7.1"].torch.index == "rocm7.1" and amd["7.1"].torch.torchvision == "0.25.0"
    assert amd["7.0"].torch.index == "rocm7.0" and amd["7.0"].torch.torch == "2.10.0"
    assert amd["7.2"].torch.triton_dist == "triton-rocm" and amd["6.4"].torch.triton_dist == "pytorch-triton-rocm"
    assert m.archs["gfx950"].lds_bytes == 160 * 1024
    assert m.archs["gfx1100"].wavefront == 32 and m.archs["gfx942"].wavefront == 64
    assert list(project.images)[:2] == ["base", "dev"]


def _mutate(root: Path, edit) -> None:
    data = yaml.safe_load((root / "matrix.yaml").read_text())
    edit(data)
    (root / "matrix.yaml").write_text(yaml.safe_dump(data, sort_keys=False))


def _error(root: Path) -> str:
    with pytest.raises(ConfigError) as info:
        load_project(root)
    message = str(info.value)
    assert "\n" not in message
    return message


def test_yaml_syntax_error_names_file_and_line(project_copy):
    (project_copy / "matrix.yaml").write_text("default:\n  source: debian\n  rocm: [7.2\n")
    msg = _error(project_copy)
    assert "matrix.yaml:" in msg and "YAML syntax error" in msg


def test_unknown_key_names_path_and_allowed_keys(project_copy):
    _mutate(project_copy, lambda d: d["archs"]["gfx942"].update(wavefronts=64))
    msg = _error(project_copy)
    assert "archs.gfx942" in msg and "'wavefronts'" in msg and "allowed: family, products, wavefront" in msg


def test_wrong_type_names_path(project_copy):
    _mutate(project_copy, lambda d: d["archs"]["gfx90a"].update(lds_bytes="lots"))
    msg = _error(project_copy)
    assert "archs.gfx90a.lds_bytes" in msg


def test_wavefront_must_be_32_or_64(project_copy):
    _mutate(project_copy, lambda d: d["archs"]["gfx90a"].update(wavefront=48))
    msg = _error(project_copy)
    assert "archs.gfx90a.wavefront" in msg and "32" in msg and "64" in msg


def test_rule_naming_unknown_arch(project_copy):
    _mutate(project_copy, lambda d: d["rules"].append(
        {"id": "bad", "when": {"arch": ["gfx999"]}, "reason": "x"}))
    msg = _error(project_copy)
    assert "rules[bad].when.arch" in msg and "gfx999" in msg and "gfx942" in msg


def test_rocm_version_without_source(project_copy):
    _mutate(project_copy, lambda d: d["rocm"][0].pop("source"))
    msg = _error(project_copy)
    assert "rocm[" in msg and "source" in msg and "required" in msg


def test_rocm_version_with_unknown_source(project_copy):
    _mutate(project_copy, lambda d: d["rocm"][0].update(source="nvidia"))
    msg = _error(project_copy)
    assert "source" in msg and "'nvidia'" in msg and "amd" in msg and "debian" in msg


def test_full_release_must_belong_to_its_line(project_copy):
    _mutate(project_copy, lambda d: d["rocm"][1].update(full="6.3.1"))
    assert "6.3.1 is not a release of the 6.2 line" in _error(project_copy)



def test_console_script_exit_code_2_one_line(project_copy):
    import subprocess
    import sys

    _mutate(project_copy, lambda d: d.update(colour="blue"))
    proc = subprocess.run([sys.executable, "-m", "buildctl", "--root", str(project_copy), "matrix"],
                          capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert proc.stderr.strip().count("\n") == 0
    assert "matrix.yaml" in proc.stderr and "'colour'" in proc.stderr and "allowed:" in proc.stderr


def test_unquoted_version_gets_a_hint(project_copy):
    _mutate(project_copy, lambda d: d["rocm"][0].update(ubuntu=22.04))
    msg = _error(project_copy)
    assert "ubuntu" in msg and "quote it" in msg


def test_root_without_matrix(tmp_path):
    with pytest.raises(ConfigError, match="matrix.yaml: not found"):
        load_project(tmp_path)
