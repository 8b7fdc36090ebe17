"""Read which GPU arch an AMD code object was built for, without ROCm tools.

Handles the two forms hipcc writes: a bare AMDGPU ELF (``--genco`` for one arch)
and a clang offload bundle (``__CLANG_OFFLOAD_BUNDLE__``, one entry per target).
Facts: ELF64 header layout (System V gABI: e_machine at byte 18, e_flags at 48);
EM_AMDGPU = 224 and EF_AMDGPU_MACH = e_flags & 0xff (LLVM "AMDGPU Backend User
Guide", ELF header table); bundle layout from clang's ClangOffloadBundler docs
(magic, u64 count, then per entry u64 offset, u64 size, u64 id length, id).
"""

from __future__ import annotations

import struct

from kernels.targets import TARGETS

EM_AMDGPU = 224
EF_AMDGPU_MACH = 0xFF
BUNDLE_MAGIC = b"__CLANG_OFFLOAD_BUNDLE__"
ELF_MAGIC = b"\x7fELF"

_MACH_TO_ARCH = {spec.elf_mach: name for name, spec in TARGETS.items() if spec.vendor == "amd"}


def elf_arch(data: bytes) -> str:
    """gfx arch of one AMDGPU ELF code object.

    Raises:
        ValueError: not a 64-bit little-endian ELF, not EM_AMDGPU, or an
            EF_AMDGPU_MACH value outside the targets this project knows.
    """
    if len(data) < 64 or data[:4] != ELF_MAGIC or data[4] != 2 or data[5] != 1:
        raise ValueError("not a 64-bit little-endian ELF file")
    machine = struct.unpack_from("<H", data, 18)[0]
    if machine != EM_AMDGPU:
        raise ValueError(f"ELF e_machine is {machine}, not EM_AMDGPU ({EM_AMDGPU})")
    mach = struct.unpack_from("<I", data, 48)[0] & EF_AMDGPU_MACH
    try:
        return _MACH_TO_ARCH[mach]
    except KeyError:
        raise ValueError(f"EF_AMDGPU_MACH 0x{mach:03x} is none of {sorted(_MACH_TO_ARCH.values())}") from None


def bundle_entries(data: bytes) -> list[tuple[str, bytes]]:
    """``(id, payload)`` of each entry of an uncompressed clang offload bundle.

    Raises:
        ValueError: no bundle magic, or an entry reaching past the end of the data.
    """
    if not data.startswith(BUNDLE_MAGIC):
        raise ValueError("no __CLANG_OFFLOAD_BUNDLE__ magic (compressed bundles are not read here)")
    pos = len(BUNDLE_MAGIC)
    (count,) = struct.unpack_from("<Q", data, pos)
    pos += 8
    entries = []
    for _ in range(count):
        offset, size, id_len = struct.unpack_from("<QQQ", data, pos)
        pos += 24
        ident = data[pos : pos + id_len].decode("ascii")
        pos += id_len
        if offset + size > len(data):
            raise ValueError(f"bundle entry {ident!r} reaches past the end of the file")
        entries.append((ident, data[offset : offset + size]))
    return entries


def code_object_archs(data: bytes) -> list[str]:
    """gfx archs of the device code in ``data`` (bare ELF or offload bundle).

    Bundle entries for the host (empty payload or ``host-`` id) are skipped; each
    device entry's arch is read from its own ELF header, not from its id.

    Raises:
        ValueError: the data is neither form, or a device entry is not AMDGPU ELF.
    """
    if data.startswith(ELF_MAGIC):
        return [elf_arch(data)]
    archs = []
    for ident, payload in bundle_entries(data):
        if ident.startswith("host-") or not payload:
            continue
        archs.append(elf_arch(payload))
    return archs
