"""recipes.distributed.launch: the torchrun argument list and bad launcher input (no torch needed)."""

import sys

import pytest

from recipes.distributed import launch


def test_torchrun_argv_is_a_list_with_static_rendezvous_and_no_restarts():
    a = launch.parse_args(["--nnodes", "2", "--node-rank", "1", "--nproc-per-node", "8", "--master-addr", "n0",
                           "--master-port", "29400", "train", "--steps", "5", "--resume", "auto"])
    argv = launch.torchrun_argv(a)
    assert argv[:3] == [sys.executable, "-m", "torch.distributed.run"]
    assert argv[argv.index("--nnodes") + 1] == "2" and argv[argv.index("--node-rank") + 1] == "1"
    assert argv[argv.index("--max-restarts") + 1] == "0"
    assert argv[-6:] == ["-m", "recipes.distributed.train", "--steps", "5", "--resume", "auto"]


@pytest.mark.parametrize("argv, message", [
    (["--master-port", "65535", "train"], "--master-port 65535: allowed 1..65534"),
    (["--timeout-s", "0", "train"], "must be > 0"),
    (["nosuchjob"], "invalid choice: 'nosuchjob'"),
])
def test_bad_launcher_flags(argv, message, capsys):
    with pytest.raises(SystemExit) as exc:
        launch.parse_args(argv)
    assert exc.value.code == 2 and message in capsys.readouterr().err


def test_bad_preset_and_interface_exit_2_before_any_network(capsys):
    assert launch.run(["--preset", "ethernet", "--env", "NCCL_SOCKET_IFNAME=nosuchif9", "train"]) == 2
    assert capsys.readouterr().err.strip().startswith("rocmig-distributed: error: NCCL_SOCKET_IFNAME=nosuchif9 selects")
