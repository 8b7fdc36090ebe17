"""RCCL/NCCL presets: validation against this host's real interfaces and NCCL's list syntax."""

import pytest

from recipes.distributed import rccl_env as re_


def test_match_list_syntax():
    names = ["lo", "eth0", "eth1", "docker0", "ib0"]
    assert re_.match_list("eth", names) == ["eth0", "eth1"]
    assert re_.match_list("=eth0", names) == ["eth0"]
    assert re_.match_list("^docker,lo", names) == ["eth0", "eth1", "ib0"]
    assert re_.match_list("mlx5_0:1,mlx5_1", ["mlx5_0", "mlx5_1", "mlx5_2"]) == ["mlx5_0", "mlx5_1"]


def test_ethernet_preset_on_this_host_sets_gloo_interface():
    ifaces = re_.host_interfaces()
    assert "lo" in ifaces
    env = re_.build_env("ethernet", {"NCCL_SOCKET_IFNAME": "lo"}, ifaces, [])
    assert env["GLOO_SOCKET_IFNAME"] == "lo" and env["NCCL_IB_DISABLE"] == "1"
    assert env["HSA_FORCE_FINE_GRAIN_PCIE"] == "1"


@pytest.mark.parametrize("preset, overrides, message", [
    ("nope", {}, "--preset 'nope' unknown"),
    ("ethernet", {}, "needs NCCL_SOCKET_IFNAME"),
    ("ethernet", {"NCCL_SOCKET_IFNAME": "nosuchif9"}, "selects no interface"),
    ("infiniband", {"NCCL_SOCKET_IFNAME": "lo", "NCCL_IB_HCA": "mlx5_0"}, "selects no InfiniBand"),
    ("single-node", {"NCCL_DEBUG": "LOUD"}, "allowed: VERSION, WARN, INFO, TRACE"),
    ("single-node", {"NCCL_MIN_NCHANNELS": "0"}, "positive integer"),
    ("single-node", {"HSA_FORCE_FINE_GRAIN_PCIE": "yes"}, "0 or 1"),
    ("single-node", {"GLOO_SOCKET_IFNAME": "nosuchif9"}, "not an interface"),
])
def test_bad_env_is_one_line_error(preset, overrides, message):
    with pytest.raises(re_.EnvError, match=message) as exc:
        re_.build_env(preset, overrides, re_.host_interfaces(), re_.host_ib_devices())
    assert "\n" not in str(exc.value)


def test_infiniband_with_present_adapter(tmp_path):
    (tmp_path / "mlx5_0").mkdir()
    devs = re_.host_ib_devices(tmp_path)
    env = re_.build_env("infiniband", {"NCCL_SOCKET_IFNAME": "lo", "NCCL_IB_HCA": "=mlx5_0:1"}, ["lo"], devs)
    assert env["NCCL_MIN_NCHANNELS"] == "16"


def test_parse_assignments():
    assert re_.parse_assignments(["NCCL_DEBUG=INFO", "A_B=x=y"]) == {"NCCL_DEBUG": "INFO", "A_B": "x=y"}
    with pytest.raises(re_.EnvError, match="--env 'NCCL_DEBUG'"):
        re_.parse_assignments(["NCCL_DEBUG"])
