"""RCCL / NCCL environment presets and their validation (torch-free).

RCCL reads NCCL's variables (ROCm docs, "RCCL environment variables"; NCCL docs, "Environment
Variables"): NCCL_SOCKET_IFNAME (interfaces for bootstrap and socket transport: comma list of name
prefixes, '^' excludes, '=' asks exact names), NCCL_IB_HCA (InfiniBand/RoCE adapters, same syntax,
optional ':port'), NCCL_DEBUG (VERSION, WARN, INFO, TRACE), NCCL_MIN_NCHANNELS (lower bound on
channels). HSA_FORCE_FINE_GRAIN_PCIE=1 is ROCr's switch for fine-grained PCIe memory, needed for
peer-to-peer over PCIe. gloo (the CPU backend) takes one exact interface in GLOO_SOCKET_IFNAME.
"""

from __future__ import annotations

import os
import socket
from pathlib import Path

PRESETS: dict[str, dict[str, str]] = {
    # one node, GPUs linked by xGMI/Infinity Fabric or PCIe
    "single-node": {"NCCL_DEBUG": "WARN", "HSA_FORCE_FINE_GRAIN_PCIE": "1"},
    # several nodes over TCP sockets (also the CPU/gloo case); NCCL_SOCKET_IFNAME required
    "ethernet": {"NCCL_DEBUG": "WARN", "NCCL_IB_DISABLE": "1", "HSA_FORCE_FINE_GRAIN_PCIE": "1"},
    # several nodes over InfiniBand / RoCE; NCCL_IB_HCA and NCCL_SOCKET_IFNAME (bootstrap) required
    "infiniband": {"NCCL_DEBUG": "WARN", "NCCL_MIN_NCHANNELS": "16", "HSA_FORCE_FINE_GRAIN_PCIE": "1"},
    # anything, plus RCCL's and torch's diagnostics
    "debug": {"NCCL_DEBUG": "INFO", "NCCL_DEBUG_SUBSYS": "INIT,NET", "TORCH_DISTRIBUTED_DEBUG": "DETAIL",
              "HSA_FORCE_FINE_GRAIN_PCIE": "1"},
}
REQUIRED = {"ethernet": ("NCCL_SOCKET_IFNAME",), "infiniband": ("NCCL_IB_HCA", "NCCL_SOCKET_IFNAME")}
DEBUG_LEVELS = ("VERSION", "WARN", "INFO", "TRACE")


class EnvError(Exception):
    """An RCCL/NCCL variable or preset is invalid for this host; the message is one line."""


def host_interfaces() -> list[str]:
    """Names of this host's network interfaces (socket.if_nameindex), e.g. ['lo', 'eth0']."""
    return [name for _, name in socket.if_nameindex()]


def host_ib_devices(sysfs: Path = Path("/sys/class/infiniband")) -> list[str]:
    """Names of this host's InfiniBand/RoCE adapters from sysfs (e.g. ['mlx5_0']); [] when none."""
    return sorted(p.name for p in sysfs.iterdir()) if sysfs.is_dir() else []


def match_list(spec: str, names: list[str]) -> list[str]:
    """Names selected by an NCCL interface/HCA list `spec` ('eth', '=eth0', '^docker,lo', 'mlx5_0:1').

    Prefix match by default, exact with a leading '=', exclusion with a leading '^'; a ':port' suffix
    is ignored for matching. Returns the selected names in `names` order.
    """
    exclude = spec.startswith("^")
    body = spec[1:] if exclude else spec
    exact = body.startswith("=")
    body = body[1:] if exact else body
    items = [i.split(":")[0] for i in body.split(",") if i]

    def hit(name: str) -> bool:
        return any(name == i if exact else name.startswith(i) for i in items)

    return [n for n in names if hit(n) != exclude]


def build_env(preset: str, overrides: dict[str, str], interfaces: list[str], ib_devices: list[str]) -> dict[str, str]:
    """Environment for a distributed run: PRESETS[preset] updated by `overrides`, validated.

    `interfaces` and `ib_devices` are what the host has (host_interfaces(), host_ib_devices()).
    Adds GLOO_SOCKET_IFNAME (first interface NCCL_SOCKET_IFNAME selects) unless given. Raises EnvError
    naming the variable and the allowed values for an unknown preset, a missing required variable,
    an interface/HCA list that selects nothing here, a bad NCCL_DEBUG, NCCL_MIN_NCHANNELS or
    HSA_FORCE_FINE_GRAIN_PCIE.
    """
    if preset not in PRESETS:
        raise EnvError(f"--preset {preset!r} unknown (allowed: {', '.join(PRESETS)})")
    env = dict(PRESETS[preset])
    env.update(overrides)
    for var in REQUIRED.get(preset, ()):
        if not env.get(var):
            raise EnvError(f"--preset {preset} needs {var} (pass --env {var}=...)")
    ifname = env.get("NCCL_SOCKET_IFNAME")
    if ifname:
        chosen = match_list(ifname, interfaces)
        if not chosen:
            raise EnvError(f"NCCL_SOCKET_IFNAME={ifname} selects no interface of this host "
                           f"(has: {', '.join(interfaces) or 'none'})")
        env.setdefault("GLOO_SOCKET_IFNAME", chosen[0])
    if env.get("GLOO_SOCKET_IFNAME") and env["GLOO_SOCKET_IFNAME"] not in interfaces:
        raise EnvError(f"GLOO_SOCKET_IFNAME={env['GLOO_SOCKET_IFNAME']} is not an interface of this host "
                       f"(has: {', '.join(interfaces) or 'none'})")
    hca = env.get("NCCL_IB_HCA")
    if hca and not hca.startswith("^") and not match_list(hca, ib_devices):
        raise EnvError(f"NCCL_IB_HCA={hca} selects no InfiniBand/RoCE adapter of this host "
                       f"(has: {', '.join(ib_devices) or 'none in /sys/class/infiniband'})")
    if env.get("NCCL_DEBUG", "WARN") not in DEBUG_LEVELS:
        raise EnvError(f"NCCL_DEBUG={env['NCCL_DEBUG']} not allowed (allowed: {', '.join(DEBUG_LEVELS)})")
    nch = env.get("NCCL_MIN_NCHANNELS")
    if nch is not None and (not nch.isdigit() or int(nch) < 1):
        raise EnvError(f"NCCL_MIN_NCHANNELS={nch} not allowed (a positive integer)")
    fg = env.get("HSA_FORCE_FINE_GRAIN_PCIE")
    if fg is not None and fg not in ("0", "1"):
        raise EnvError(f"HSA_FORCE_FINE_GRAIN_PCIE={fg} not allowed (0 or 1)")
    return env


def parse_assignments(items: list[str], flag: str = "--env") -> dict[str, str]:
    """Parse ['KEY=VALUE', ...] into a dict. Raises EnvError naming `flag` for an item without '='."""
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key or not key.replace("_", "").isalnum():
            raise EnvError(f"{flag} {item!r}: expected KEY=VALUE with KEY of letters, digits and _")
        out[key] = value
    return out


def merged_environ(env: dict[str, str]) -> dict[str, str]:
    """os.environ overlaid with `env` (a new dict; os.environ is not changed)."""
    return {**os.environ, **env}
