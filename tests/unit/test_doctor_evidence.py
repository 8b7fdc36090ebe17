"""Signatures, the literal pre-filter, the similarity fallback and the reader: the parts under diagnose()."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest

from buildctl.doctor import diagnose
from buildctl.doctor.literals import TextIndex, required_literals
from buildctl.doctor.matcher import FIXTURES_DIR, Log, Matcher, load_fixtures, rank_log
from buildctl.doctor.models import MatchSpec, load_catalog
from buildctl.doctor.reading import (
    CHUNK_BYTES,
    HEAD_BYTES,
    TAIL_BYTES,
    BinaryInput,
    read_stream,
    sniff_binary,
)
from buildctl.doctor.signatures import extract

ENTRIES = load_catalog()
ALL_FIXTURE_LINES = [line for p in sorted(FIXTURES_DIR.rglob("*.log")) for line in p.read_text().splitlines()]


@pytest.mark.parametrize(("line", "token"), [
    ("hipErrorNoBinaryForGpu: Unable to find code object for all current devices!", "hip:hiperrornobinaryforgpu"),
    ("Call returned HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION: The agent attempted to access memory",
     "hsa:hsa_status_error_memory_aperture_violation"),
    ("rocBLAS error: rocblas_status_invalid_size", "blas:rocblas_status_invalid_size"),
    ("ImportError: libamdhip64.so.6: cannot open shared object file: No such file or directory", "lib:libamdhip64.so"),
    ("RuntimeError: No HIP GPUs are available", "pyexc:runtimeerror:no hip gpus are available"),
    ("[ 1234.567] amdgpu 0000:c1:00.0: amdgpu: ring gfx_0.0.0 timeout, signaled seq=1, emitted seq=3",
     "kernel:amdgpu: ring gfx_# timeout signaled seq #"),
    ("/src/k.hip:12:10: fatal error: 'cuda_runtime.h' file not found", "header:cuda_runtime.h"),
    ("node1:123:456 [0] NCCL WARN Missing \"iommu=pt\" from kernel command line", "nccl:missing _ from kernel command line"),
])
def test_signature_of_a_line_is_normalised(line, token):
    assert token in {s.token for s in extract([line])}


def test_signatures_drop_machine_specific_numbers_and_paths():
    a = extract(["RuntimeError: CUDA error: out of memory at /home/alice/x.py:12 (0x7f00ab)"])
    b = extract(["RuntimeError: CUDA error: out of memory at /srv/bob/y.py:977 (0x1234)"])
    assert {s.token for s in a} == {s.token for s in b}


def test_required_literals_never_rule_out_a_line_the_pattern_hits():
    """For every catalog pattern and every fixture line: a hit implies one of its literals is on the line."""
    patterns = {p.re for e in ENTRIES for g in (e.match.any, e.match.all, e.match.also, e.match.not_) for p in g}
    for regex in patterns:
        lits = required_literals(regex)
        if lits is None:
            continue
        rx = re.compile(regex, re.IGNORECASE)
        for line in ALL_FIXTURE_LINES:
            if rx.search(line):
                assert any(lit in line.lower() for lit in lits), (regex, lits, line)


def test_text_index_finds_lines_holding_a_literal():
    index = TextIndex(["alpha", "Beta error", "gamma", "ERROR again"])
    assert index.lines_with({"error"}) == [1, 3]
    assert index.candidates(r"(?:foo|ba)+") is None


def test_similarity_alone_finds_an_entry_whose_patterns_miss_and_says_how_sure():
    """An entry whose patterns cannot hit is still found through its fixtures' signatures and words."""
    entry = next(e for e in ENTRIES if e.id == "hip-invalid-launch-configuration")
    blind = entry.model_copy(update={"match": MatchSpec.model_validate({"any": [r"(?!x)x"]})})
    entries = tuple(blind if e.id == entry.id else e for e in ENTRIES)
    matcher = Matcher.build(entries, load_fixtures())
    log = "launching kernel\nbench.hip:88: HIP error 9 (hipErrorInvalidConfiguration) in hipLaunchKernel\n"
    best = rank_log(Log.of(log), matcher)[0]
    assert best.entry.id == entry.id and best.pattern_score == 0
    assert best.signatures and best.similarity == 1.0 and best.confidence in ("medium", "low")
    assert any(e.group == "signature" and e.line == 2 for e in best.evidence)


def test_generic_symptom_ranks_below_a_specific_cause_with_evidence():
    oom = "torch.OutOfMemoryError: HIP out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 63.98 GiB"
    alone = [m.entry.id for m in diagnose(oom, limit=10)]
    assert alone[0] == "hip-out-of-memory"
    log = oom + "\nERROR: Could not find a version that satisfies the requirement torch==2.9.1+rocm6.4\n"
    ids = [m.entry.id for m in diagnose(log, limit=10)]
    assert "hip-out-of-memory" in ids and ids[-1] == "hip-out-of-memory" and len(ids) > 1


def test_reader_keeps_head_tail_and_middle_errors_with_their_line_numbers():
    filler = b"step ok\n" * ((HEAD_BYTES + TAIL_BYTES) // 8 + 50_000)
    data = filler + b"hipErrorOutOfMemory in the middle\n" + filler
    log = read_stream(io.BytesIO(data))
    middle = filler.count(b"\n") + 1
    assert log.total_lines == 2 * filler.count(b"\n") + 1
    assert log.lines[log.numbers.index(middle)] == "hipErrorOutOfMemory in the middle"
    assert len(log.lines) <= (HEAD_BYTES + TAIL_BYTES + CHUNK_BYTES) // 8 + 10 and log.note and "MiB" in log.note
    assert log.numbers == sorted(log.numbers)


def test_reader_keeps_a_small_log_whole():
    log = read_stream(io.BytesIO(b"a\nb\n\nlast without newline"))
    assert log.lines == ["a", "b", "", "last without newline"] and log.numbers == [1, 2, 3, 4] and log.note is None


def test_binary_sniffing():
    assert sniff_binary(b"\x7fELF\x02") and sniff_binary(b"abc\x00def")
    assert sniff_binary("plain UTF-8 log: größe ✓\n".encode()) is None
    assert sniff_binary(b"\x1b[31mred\x1b[0m\r\n") is None
    with pytest.raises(BinaryInput):
        read_stream(io.BytesIO(b"\x7fELF" + bytes(100)))


def test_fixtures_belong_to_catalog_entries():
    ids = {e.id for e in ENTRIES}
    assert set(load_fixtures()) <= ids
    assert Path(FIXTURES_DIR / "variants").is_dir()


@pytest.mark.parametrize(("log", "kind"), [
    ("apt-cmake-hipcc-build.log", "compile (hipcc / clang / CMake)"),
    ("docker-buildx-bake.log", "image build (apt / Docker)"),
    ("torch-training-rocm.log", "GPU runtime (HIP / PyTorch)"),
    ("rccl-tests-allreduce.log", "multi-GPU (RCCL / torch.distributed)"),
])
def test_a_log_without_a_match_is_told_apart_by_kind(log: str, kind: str) -> None:
    from buildctl.doctor.advice import kind_of

    lines = (Path(__file__).parent / "doctor_logs" / "healthy" / log).read_text().splitlines()
    found = kind_of(lines)
    assert found is not None and found.name == kind


def test_a_lowercase_e_colon_is_not_an_apt_error_line() -> None:
    from buildctl.doctor.advice import kind_of

    found = kind_of(["dlopen HIP dep /opt/rocm/lib/libhsa-runtime64.so.1 failed: cannot open shared object file: x"])
    assert found is not None and found.name == "GPU runtime (HIP / PyTorch)"
