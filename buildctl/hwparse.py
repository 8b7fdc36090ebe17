"""Parsers of the AMD GPU tools' outputs for the hardware report: rocminfo, `amd-smi static`, KFD sysfs.

Pure functions over text; `buildctl.report_hw` runs the tools and reads the files. Formats, as printed by
the tools (fixtures copied from public reports in tests/unit/hardware_reports/):
- rocminfo: an optional `ROCk module version X is loaded` line, `HSA System Attributes` (`Runtime Version:`),
  then one block per agent between `*******` / `Agent N` / `*******` lines, keys at two spaces of indent,
  `Pool Info` / `ISA Info` sections below. Values look like `304`, `64(0x40)`, `201310208(0xbffc000) KB`.
- `amd-smi static`: `GPU: N` blocks, sections (`ASIC:`, `DRIVER:`, ...) indented by four spaces and their
  `KEY: value` lines by eight.
- `/sys/class/kfd/kfd/topology/nodes/<n>/properties`: one `name integer` pair per line;
  `mem_banks/<b>/properties` holds `size_in_bytes`. `gfx_target_version` encodes the ISA as decimal
  major*10000 + minor*100 + stepping (90402 = gfx942, 90010 = gfx90a, 110000 = gfx1100; Linux
  drivers/gpu/drm/amd/amdkfd/kfd_topology.c).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_NUMBER = re.compile(r"^(\d+)")
_AGENT = re.compile(r"^\s*Agent\s+(\d+)\s*$")
_ISA = re.compile(r"amdgcn-amd-amdhsa--(gfx[0-9a-f]+)((?::[a-z]+[+-])*)")
_KFD_LINE = re.compile(r"ROCk module(?: version (\S+))? is loaded")


@dataclass(frozen=True)
class Gpu:
    """One AMD GPU as a tool saw it. Sizes in bytes; None where the output did not say.

    gfx: the gfx arch (offload arch), e.g. gfx942; features: its target features (`sramecc+:xnack-`).
    firmware: firmware names to versions as the tool printed them. source: the tool (rocminfo, amd-smi, kfd).
    """

    name: str | None
    gfx: str | None
    source: str
    node: int | None = None
    compute_units: int | None = None
    wavefront: int | None = None
    vram_bytes: int | None = None
    lds_bytes: int | None = None
    uuid: str | None = None
    bdf: str | None = None
    features: str = ""
    driver: str | None = None
    firmware: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class RocminfoSystem:
    """rocminfo's header: the KFD (ROCk) module version, None when it printed only `is loaded`, and the
    HSA runtime version; kfd_loaded is False when the line is absent (e.g. a partial paste)."""

    kfd_loaded: bool
    kfd_version: str | None
    runtime_version: str | None


def leading_int(value: str) -> int | None:
    """'64(0x40)' -> 64, '201310208(0xbffc000) KB' -> 201310208, 'N/A' -> None."""
    m = _NUMBER.match(value.strip())
    return int(m.group(1)) if m else None


def _split_agents(text: str) -> list[list[str]]:
    lines = text.splitlines()
    starts = [i for i, line in enumerate(lines) if _AGENT.match(line)]
    blocks = []
    for n, start in enumerate(starts):
        end = starts[n + 1] if n + 1 < len(starts) else len(lines)
        blocks.append([line for line in lines[start + 1:end] if line.strip("* \t")])
    return blocks


def _key_value(line: str) -> tuple[int, str, str] | None:
    """(indent, key, value) of a `  Key:   value` line; rocminfo writes some keys with `::`."""
    stripped = line.rstrip()
    body = stripped.lstrip(" \t")
    if ":" not in body:
        return None
    key, _, value = body.partition(":")
    return len(stripped) - len(body), key.strip(), value.lstrip(":").strip()


def parse_rocminfo_system(text: str) -> RocminfoSystem:
    """The header of a rocminfo output (see RocminfoSystem)."""
    kfd = _KFD_LINE.search(text)
    runtime = re.search(r"^Runtime Version:\s*(\S+)", text, re.MULTILINE)
    return RocminfoSystem(kfd is not None, kfd.group(1) if kfd else None, runtime.group(1) if runtime else None)


def parse_rocminfo(text: str) -> list[Gpu]:
    """The GPU agents (`Device Type: GPU`) of a rocminfo output, in agent order.

    VRAM is the size of the agent's first `GLOBAL; FLAGS: COARSE GRAINED` pool, LDS that of its `GROUP`
    pool; the gfx arch comes from `Name:` or, when that is not a gfx name, from the ISA name. Missing keys
    (truncated output) give None, never an error.
    """
    gpus = []
    for block in _split_agents(text):
        top: dict[str, str] = {}
        pools: list[dict[str, str]] = []
        firmware: dict[str, str] = {}
        isa = None
        for line in block:
            kv = _key_value(line)
            if kv is None:
                continue
            indent, key, value = kv
            if indent <= 2:
                top.setdefault(key, value)
                if key.endswith("uCode"):
                    firmware[key] = value
            elif key == "Segment":
                pools.append({"Segment": value})
            elif pools and key == "Size" and "Size" not in pools[-1]:
                pools[-1]["Size"] = value
            if isa is None and key == "Name":
                isa = _ISA.search(value)
        if top.get("Device Type") != "GPU":
            continue
        gfx = top.get("Name") if re.fullmatch(r"gfx[0-9a-f]+", top.get("Name", "")) else None
        if gfx is None and isa:
            gfx = isa.group(1)
        vram = next((leading_int(p.get("Size", "")) for p in pools
                     if p["Segment"].startswith("GLOBAL") and "COARSE GRAINED" in p["Segment"]), None)
        lds = next((leading_int(p.get("Size", "")) for p in pools if p["Segment"] == "GROUP"), None)
        gpus.append(Gpu(
            name=top.get("Marketing Name") or None, gfx=gfx, source="rocminfo",
            node=leading_int(top.get("Node", "")), compute_units=leading_int(top.get("Compute Unit", "")),
            wavefront=leading_int(top.get("Wavefront Size", "")),
            vram_bytes=vram * 1024 if vram is not None else None, lds_bytes=lds * 1024 if lds is not None else None,
            uuid=top.get("Uuid") or None, features=isa.group(2).lstrip(":") if isa else "", firmware=firmware))
    return gpus


def parse_amdsmi_static(text: str) -> list[Gpu]:
    """The GPUs of `amd-smi static` (text output), one per `GPU: N` block.

    Reads ASIC (MARKET_NAME, TARGET_GRAPHICS_VERSION, NUM_COMPUTE_UNITS), BUS.BDF, DRIVER.VERSION,
    VRAM.SIZE (`N MB`) and the firmware-like sections IFWI.VERSION and VBIOS.VERSION.
    """
    blocks: list[dict[str, dict[str, str]]] = []
    section = ""
    for line in text.splitlines():
        kv = _key_value(line)
        if kv is None:
            continue
        indent, key, value = kv
        if indent == 0 and key == "GPU":
            blocks.append({})
        elif blocks and value == "" and indent > 0:
            section = key
            blocks[-1].setdefault(section, {})
        elif blocks and section:
            blocks[-1][section][key] = value
    gpus = []
    for b in blocks:
        asic = b.get("ASIC", {})
        vram = b.get("VRAM", {}).get("SIZE", "")
        vram_mb = leading_int(vram)
        firmware = {f"{s} {k}": b[s][k] for s in ("IFWI", "VBIOS") for k in ("VERSION",) if b.get(s, {}).get(k)}
        gfx = asic.get("TARGET_GRAPHICS_VERSION")
        gpus.append(Gpu(
            name=asic.get("MARKET_NAME"), gfx=gfx if gfx and gfx != "N/A" else None, source="amd-smi",
            compute_units=leading_int(asic.get("NUM_COMPUTE_UNITS", "")),
            vram_bytes=vram_mb * 1024 * 1024 if vram_mb is not None and "MB" in vram else None,
            bdf=b.get("BUS", {}).get("BDF"), driver=b.get("DRIVER", {}).get("VERSION"), firmware=firmware))
    return gpus


def parse_kfd_properties(text: str) -> dict[str, int]:
    """`name value` lines of a KFD sysfs properties file -> {name: int}; other lines are skipped."""
    props = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[1].isdigit():
            props[parts[0]] = int(parts[1])
    return props


def gfx_from_target_version(version: int) -> str | None:
    """KFD's gfx_target_version -> gfx arch: 90402 -> gfx942, 90010 -> gfx90a, 110000 -> gfx1100; 0 -> None."""
    if version <= 0:
        return None
    major, minor, stepping = version // 10000, (version // 100) % 100, version % 100
    return f"gfx{major}{minor}{stepping:x}"


def kfd_gpu(node: int, props: dict[str, int], bank_sizes: list[int]) -> Gpu | None:
    """The GPU of one KFD topology node, or None for a CPU-only node (simd_count 0).

    Compute units: simd_count / simd_per_cu (active CUs, what rocminfo prints); VRAM: the sum of the node's
    memory banks; firmware: fw_version (MEC) and sdma_fw_version.
    """
    simds = props.get("simd_count", 0)
    if simds == 0:
        return None
    per_cu = props.get("simd_per_cu")
    firmware: dict[str, str] = {k: str(props[k]) for k in ("fw_version", "sdma_fw_version") if k in props}
    lds = props.get("lds_size_in_kb")
    return Gpu(name=None, gfx=gfx_from_target_version(props.get("gfx_target_version", 0)), source="kfd",
               node=node, compute_units=simds // per_cu if per_cu else None,
               wavefront=props.get("wave_front_size"), vram_bytes=sum(bank_sizes) if bank_sizes else None,
               lds_bytes=lds * 1024 if lds is not None else None, firmware=firmware)
