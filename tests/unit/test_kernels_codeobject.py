"""Reading the gfx arch out of AMD code objects (bare ELF and clang offload bundles).

The byte layouts built here follow the ELF64 header and clang's offload-bundle format; the
real hipcc output is checked by tests/images/test_kernels_offline.py.
"""

from __future__ import annotations

import struct

import pytest

from kernels.codeobject import BUNDLE_MAGIC, EM_AMDGPU, bundle_entries, code_object_archs, elf_arch


def amdgpu_elf(mach: int, machine: int = EM_AMDGPU, flags_high: int = 0x300) -> bytes:
    """An ELF64 little-endian header (64 bytes) with e_machine and e_flags set."""
    ident = b"\x7fELF" + bytes([2, 1, 1, 64]) + bytes(8)  # class 64, LSB, version, ABI HSA
    header = ident + struct.pack("<HHIQQQIHHHHHH", 3, machine, 1, 0, 0, 0, flags_high | mach, 64, 0, 0, 64, 0, 0)
    assert len(header) == 64
    return header + b"\0" * 64


def bundle(entries: list[tuple[str, bytes]]) -> bytes:
    head = BUNDLE_MAGIC + struct.pack("<Q", len(entries))
    table_len = sum(24 + len(ident) for ident, _ in entries)
    offset = len(head) + table_len
    table, blobs = b"", b""
    for ident, payload in entries:
        table += struct.pack("<QQQ", offset + len(blobs), len(payload), len(ident)) + ident.encode()
        blobs += payload
    return head + table + blobs


@pytest.mark.parametrize(("mach", "arch"), [(0x03F, "gfx90a"), (0x04C, "gfx942"), (0x04F, "gfx950"), (0x041, "gfx1100")])
def test_elf_mach_maps_to_arch(mach, arch):
    assert elf_arch(amdgpu_elf(mach)) == arch
    assert code_object_archs(amdgpu_elf(mach)) == [arch]


def test_bundle_skips_host_and_reads_each_device_elf():
    data = bundle([("host-x86_64-unknown-linux-gnu-", b""), ("hipv4-amdgcn-amd-amdhsa--gfx950", amdgpu_elf(0x04F))])
    assert [ident for ident, _ in bundle_entries(data)] == ["host-x86_64-unknown-linux-gnu-", "hipv4-amdgcn-amd-amdhsa--gfx950"]
    assert code_object_archs(data) == ["gfx950"]


def test_bundle_arch_comes_from_the_elf_not_the_entry_name():
    data = bundle([("hipv4-amdgcn-amd-amdhsa--gfx942", amdgpu_elf(0x03F))])
    assert code_object_archs(data) == ["gfx90a"]


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"\x7fELF" + bytes(60), "not a 64-bit little-endian ELF"),
        (amdgpu_elf(0x04C, machine=62), "e_machine is 62, not EM_AMDGPU"),
        (amdgpu_elf(0x02C), "EF_AMDGPU_MACH 0x02c is none of"),
        (b"CCOB" + bytes(60), "no __CLANG_OFFLOAD_BUNDLE__ magic"),
        (bundle([("hipv4-amdgcn-amd-amdhsa--gfx942", amdgpu_elf(0x04C))])[:-10], "reaches past the end"),
    ],
)
def test_bad_code_objects_are_refused(data, message):
    with pytest.raises(ValueError, match=message):
        code_object_archs(data)
