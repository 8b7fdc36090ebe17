"""recipes.serve preflight on real files: KFD topology text, device folders, /dev/shm, model folders, sockets."""

import os
import socket
from pathlib import Path

import pytest

from recipes.serve import errors, flags, kfd, preflight
from recipes.serve.cell import Cell

ARCHS = {"gfx942": {"family": "CDNA3", "wavefront": 64}, "gfx1100": {"family": "RDNA3", "wavefront": 32},
         "gfx90a": {"family": "CDNA2", "wavefront": 64}}
CELL = Cell(arch="gfx942", family="CDNA3", wavefront=64, source="amd", rocm_full="7.2.4",
            ref="rocmig/serve:rocm7.2.4-gfx942", components=("sglang", "sgl-kernel", "aiter"), archs=ARCHS)
RDNA = Cell(arch="gfx1100", family="RDNA3", wavefront=32, source="amd", rocm_full="7.2.4",
            ref="rocmig/serve:rocm7.2.4-gfx1100", components=("sglang", "sgl-kernel"), archs=ARCHS)


def _node(root: Path, index: int, gfx_target_version: int) -> None:
    """One KFD topology node as amdgpu writes it (a subset of its keys, same format)."""
    node = root / str(index)
    node.mkdir(parents=True)
    simd = 0 if gfx_target_version == 0 else 304
    (node / "properties").write_text(
        f"cpu_cores_count {96 if simd == 0 else 0}\nsimd_count {simd}\nmem_banks_count 1\n"
        f"gfx_target_version {gfx_target_version}\nvendor_id {0 if simd == 0 else 4098}\n"
        f"wave_front_size {64 if gfx_target_version < 100000 else 32}\n")


@pytest.mark.parametrize("version,name", [(90402, "gfx942"), (90010, "gfx90a"), (110000, "gfx1100"),
                                          (110001, "gfx1101"), (120001, "gfx1201"), (90500, "gfx950")])
def test_target_version_to_gfx_and_back(version, name):
    assert kfd.gfx_from_target_version(version) == name
    major, rest = divmod(version, 10000)
    assert kfd.override_value(name) == f"{major}.{rest // 100}.{rest % 100}"
    assert kfd.arch_from_override(kfd.override_value(name)) == name


def test_bad_override_and_cpu_node_are_refused():
    with pytest.raises(ValueError):
        kfd.gfx_from_target_version(0)
    with pytest.raises(ValueError, match="major.minor.stepping"):
        kfd.arch_from_override("gfx1100")


def test_topology_lists_gpu_nodes_in_order(tmp_path):
    for i, v in enumerate([0, 90402, 90402]):
        _node(tmp_path, i, v)
    _node(tmp_path, 10, 90402)
    assert kfd.gpu_archs(tmp_path) == ["gfx942"] * 3
    assert kfd.gpu_archs(tmp_path / "absent") == []


def test_arch_matches(tmp_path):
    _node(tmp_path, 0, 0)
    _node(tmp_path, 1, 90402)
    assert preflight.check_arch(CELL, {}, tmp_path) == ["gfx942"]


def test_arch_mismatch_names_the_image_to_pull(tmp_path):
    _node(tmp_path, 1, 110000)
    with pytest.raises(errors.ServeError) as exc:
        preflight.check_arch(CELL, {}, tmp_path)
    assert exc.value.code == errors.ARCH_MISMATCH
    assert "the GPU is gfx1100" in str(exc.value) and "pull rocmig/serve:rocm7.2.4-gfx1100" in str(exc.value)


def test_rx7800_on_a_gfx1100_image_is_told_the_override(tmp_path):
    _node(tmp_path, 1, 110001)
    with pytest.raises(errors.ServeError) as exc:
        preflight.check_arch(RDNA, {}, tmp_path)
    line = str(exc.value)
    assert "no image of this matrix is built for gfx1101" in line
    assert "HSA_OVERRIDE_GFX_VERSION=11.0.0" in line
    assert preflight.check_arch(RDNA, {"HSA_OVERRIDE_GFX_VERSION": "11.0.0"}, tmp_path) == ["gfx1101"]


def test_no_override_across_isa_generations(tmp_path):
    _node(tmp_path, 1, 90010)
    with pytest.raises(errors.ServeError) as exc:
        preflight.check_arch(CELL, {}, tmp_path)
    assert "HSA_OVERRIDE" not in str(exc.value) and "pull rocmig/serve:rocm7.2.4-gfx90a" in str(exc.value)
    with pytest.raises(errors.ServeError, match="use 9.4.2 or unset it"):
        preflight.check_arch(CELL, {"HSA_OVERRIDE_GFX_VERSION": "11.0.0"}, tmp_path)


def test_empty_topology_is_no_device(tmp_path):
    _node(tmp_path, 0, 0)
    with pytest.raises(errors.ServeError) as exc:
        preflight.check_arch(CELL, {}, tmp_path)
    assert exc.value.code == errors.NO_DEVICE


def test_missing_device_nodes_print_the_docker_flags(tmp_path):
    with pytest.raises(errors.ServeError) as exc:
        preflight.device_nodes(tmp_path)
    assert exc.value.code == errors.NO_DEVICE and "--device=/dev/kfd --device=/dev/dri" in str(exc.value)
    (tmp_path / "kfd").write_text("")
    (tmp_path / "dri").mkdir()
    (tmp_path / "dri" / "card0").write_text("")
    with pytest.raises(errors.ServeError, match=r"dri/renderD\* is missing"):
        preflight.device_nodes(tmp_path)
    (tmp_path / "dri" / "renderD128").write_text("")
    nodes = preflight.device_nodes(tmp_path)
    assert nodes == [tmp_path / "kfd", tmp_path / "dri" / "renderD128"]
    preflight.check_open(nodes)


@pytest.mark.skipif(os.getuid() == 0, reason="root opens any file: the image tests check this as uid 1000")
def test_unopenable_node_names_its_gid(tmp_path):
    node = tmp_path / "kfd"
    node.write_text("")
    node.chmod(0o060)
    with pytest.raises(errors.ServeError) as exc:
        preflight.check_open([node])
    assert exc.value.code == errors.DEVICE_DENIED and f"--group-add {node.stat().st_gid}" in str(exc.value)


def test_shm_is_only_checked_for_tensor_parallelism():
    size = preflight.check_shm(1, Path("/dev/shm"))
    assert size > 0
    if size < preflight.MIN_SHM_BYTES_TP:
        with pytest.raises(errors.ServeError) as exc:
            preflight.check_shm(2, Path("/dev/shm"))
        assert exc.value.code == errors.SHM_TOO_SMALL and "--shm-size 16g" in str(exc.value)
    else:
        assert preflight.check_shm(8, Path("/dev/shm")) == size


def test_model_checks(tmp_path):
    with pytest.raises(errors.ServeError) as exc:
        preflight.check_model(str(tmp_path / "nope"), {})
    assert exc.value.code == errors.MODEL_UNUSABLE and "no such file or folder" in str(exc.value)
    with pytest.raises(errors.ServeError, match="no config.json"):
        preflight.check_model(str(tmp_path), {})
    (tmp_path / "config.json").write_text("{}")
    preflight.check_model(str(tmp_path), {})
    hub = tmp_path / "hub"
    offline = {"HF_HUB_OFFLINE": "1", "HF_HUB_CACHE": str(hub)}
    with pytest.raises(errors.ServeError, match="not in the hub cache"):
        preflight.check_model("meta-llama/Llama-3.1-8B-Instruct", offline)
    preflight.check_model("meta-llama/Llama-3.1-8B-Instruct", {})
    (hub / "models--meta-llama--Llama-3.1-8B-Instruct").mkdir(parents=True)
    preflight.check_model("meta-llama/Llama-3.1-8B-Instruct", offline)


def test_port_taken_by_a_real_listener():
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        with pytest.raises(errors.ServeError) as exc:
            preflight.check_port("127.0.0.1", port)
        assert exc.value.code == errors.PORT_TAKEN and f"port {port}" in str(exc.value)
    preflight.check_port("127.0.0.1", port)


@pytest.mark.parametrize("argv,expected", [
    (["--tp", "8"], 8), (["--tp-size=4"], 4), (["--tensor-parallel-size", "2", "--tp", "8"], 8), ([], 1)])
def test_flag_spellings(argv, expected):
    assert flags.int_value(argv, "tp", 1) == expected


def test_flag_errors_name_the_flag():
    with pytest.raises(ValueError, match="--port needs a value"):
        flags.value(["--port"], "port")
    with pytest.raises(ValueError, match="--tensor-parallel-size 'x'"):
        flags.int_value(["--tp", "x"], "tp", 1)
    assert flags.present(["--trust-remote-code"], "trust_remote_code")
    assert flags.value(["--model=/m"], "model") == "/m"
