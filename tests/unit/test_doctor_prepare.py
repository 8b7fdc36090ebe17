"""Log preparation before matching: wrapped compiler diagnostics joined, numeric HSA statuses named."""

from __future__ import annotations

from pathlib import Path

from buildctl.doctor import diagnose
from buildctl.doctor.prepare import name_hsa_status, prepare

HELDOUT = Path(__file__).parent / "doctor_heldout" / "batch1"


def test_wrapped_clang_diagnostic_is_joined_and_keeps_the_head_line_number():
    lines = (HELDOUT / "buun-llama-70-shfl-mask-32bit.log").read_text().splitlines()
    out, numbers = prepare(lines, range(1, len(lines) + 1))
    joined = [(n, line) for n, line in zip(numbers, out) if "The mask must be a 64-bit integer" in line]
    assert len(joined) == 1
    number, line = joined[0]
    assert number == 2 and line.startswith("/opt/rocm-7.2.3/") and "error: static assertion failed" in line
    # the code gutter after the message is its own line, not part of the message
    assert any(line.lstrip().startswith("307 |") for line in out)
    assert len(out) < len(lines)


def test_unwrapped_lines_pass_through_one_for_one():
    lines = ["[ 10%] Building HIP object a.o", "      indented but no diagnostic head", "done"]
    assert prepare(lines, [7, 8, 9]) == (lines, [7, 8, 9])


def test_numeric_hsa_status_is_named_from_hsa_h():
    line = "hsa api call failure at line 900, file: rocminfo.cc. Call returned 4104"
    assert name_hsa_status(line) == line + " (HSA_STATUS_ERROR_OUT_OF_RESOURCES)"
    assert name_hsa_status("hsa_status 0x1017").endswith("(HSA_STATUS_ERROR_INVALID_ISA_NAME)")
    assert name_hsa_status("Call returned 4999") == "Call returned 4999"  # not an hsa_status_t value
    named = "Call returned HSA_STATUS_ERROR_OUT_OF_RESOURCES: 4104"
    assert name_hsa_status(named) == named


def test_rocminfo_numeric_status_reaches_the_entry_written_for_its_name():
    log = (HELDOUT / "legacy-415-rocminfo-4104-docker.log").read_text()
    assert diagnose(log)[0].entry.id == "hsa-out-of-resources-permissions"


def test_terminal_wrap_inside_a_quoted_name_is_joined_without_a_space():
    lines = (Path(__file__).parent / "doctor_heldout" / "batch2" / "embeddedllm-22-hip-bf16-rocm561.log"
             ).read_text().splitlines()
    out, _ = prepare(lines, range(1, len(lines) + 1))
    assert any("fatal error: 'hip/amd_detail/amd_hip_bf16.h' file not found" in line for line in out)
    # a diagnostic whose quotes are balanced is left alone
    assert prepare(["a.cpp:1:2: error: unknown type name 'foo'", "next 'line'"], [1, 2])[0][0].endswith("'foo'")
