"""kernels/tools/patch_tilelang_hip.py: the rocWMMA include workaround, idempotent, loud when lost."""

from __future__ import annotations

import pytest

from kernels.tools.patch_tilelang_hip import INCLUDE, MARKER, PatchError, main, patch_file, patch_text

# The head of TileLang 0.1.15's src/tl_templates/hip/common.h, as shipped in the wheel.
HEADER = """#pragma once

#include "atomic.h"
#include <hip/amd_detail/amd_warp_functions.h>
#include <hip/hip_bf16.h>
#include <hip/hip_fp16.h>
#include <hip/hip_runtime.h>
#include <rocwmma/rocwmma.hpp>

#define HIPRT_INF_F __int_as_float(0x7f800000)
using bfloat16_t = hip_bfloat16;
"""


def test_patch_replaces_only_the_rocwmma_include():
    new, changed = patch_text(HEADER)
    assert changed
    assert INCLUDE not in new and "#include <hip/hip_bfloat16.h>" in new and MARKER in new
    assert [line for line in new.splitlines() if "rocwmma" not in line] == [
        line for line in HEADER.splitlines() if "rocwmma" not in line
    ]


def test_second_patch_changes_nothing():
    once, _ = patch_text(HEADER)
    twice, changed = patch_text(once)
    assert not changed and twice == once


def test_missing_include_is_an_error_naming_the_line():
    with pytest.raises(PatchError, match="rocwmma/rocwmma.hpp.*not found"):
        patch_text(HEADER.replace(INCLUDE + "\n", ""))


def test_cli_patches_file_then_reports_already_patched(tmp_path, capsys):
    path = tmp_path / "common.h"
    path.write_text(HEADER)
    assert main(["--common-h", str(path)]) == 0
    assert "patched" in capsys.readouterr().out
    assert MARKER in path.read_text()
    assert main(["--common-h", str(path)]) == 0
    assert "already patched" in capsys.readouterr().out
    assert patch_file(path) is False


def test_cli_fails_clearly_on_missing_file_or_line(tmp_path, capsys):
    assert main(["--common-h", str(tmp_path / "nope.h")]) == 2
    assert "no such file" in capsys.readouterr().err
    other = tmp_path / "other.h"
    other.write_text("#pragma once\n")
    assert main(["--common-h", str(other)]) == 2
    assert f"{other}: line" in capsys.readouterr().err
