"""Ranking: every catalog entry's own log ranks it first, healthy logs match nothing, look-alikes are told apart."""

from __future__ import annotations

from pathlib import Path

import pytest

from buildctl.doctor import diagnose, format_matches
from buildctl.doctor.matcher import FIXTURES_DIR
from buildctl.doctor.models import load_catalog
from buildctl.doctor.signatures import extract, is_weak

LOGS = FIXTURES_DIR
HEALTHY_DIR = Path(__file__).parent / "doctor_logs" / "healthy"
ENTRY_IDS = [e.id for e in load_catalog()]
HEALTHY = sorted(HEALTHY_DIR.glob("*.log"))


@pytest.mark.parametrize("entry_id", ENTRY_IDS)
def test_entry_log_ranks_its_entry_first(entry_id):
    path = LOGS / f"{entry_id}.log"
    assert path.is_file(), f"every catalog entry needs a realistic log: {path} is missing"
    matches = diagnose(path.read_text())
    assert matches, f"{path.name}: nothing matched"
    assert matches[0].entry.id == entry_id, [(m.entry.id, m.score) for m in matches]
    assert matches[0].evidence, "a match must show the lines that raised it"


VARIANTS = sorted((LOGS / "variants").glob("*.log"))


@pytest.mark.parametrize("path", VARIANTS, ids=lambda p: p.stem)
def test_variant_wording_of_the_same_fault_ranks_its_entry_first(path):
    """Other reports of the same kind of fault (different tool, wording, arch): the kind is matched, not the sample."""
    entry_id = path.name.split(".")[0]
    assert entry_id in ENTRY_IDS, f"{path.name}: no catalog entry {entry_id!r}"
    matches = diagnose(path.read_text())
    assert matches and matches[0].entry.id == entry_id, [(m.entry.id, m.score) for m in matches]


def test_no_log_without_an_entry():
    orphans = sorted(p.stem for p in LOGS.glob("*.log") if p.stem not in ENTRY_IDS)
    assert orphans == []


def test_there_are_several_healthy_logs():
    names = {p.stem for p in HEALTHY}
    assert {"apt-cmake-hipcc-build", "torch-training-rocm", "docker-buildx-bake"} <= names


@pytest.mark.parametrize("path", HEALTHY, ids=lambda p: p.stem)
def test_healthy_log_matches_nothing(path):
    matches = diagnose(path.read_text(), limit=10)
    assert matches == [], [(m.entry.id, m.score, [e.text for e in m.evidence]) for m in matches]


def test_evidence_carries_1_based_line_numbers_and_text():
    log = "step 1 ok\nstep 2 ok\nhipErrorNoBinaryForGpu: Unable to find code object for all current devices!\n"
    match = diagnose(log)[0]
    assert match.entry.id == "hip-no-binary-for-gpu"
    assert {(e.line, e.text) for e in match.evidence} == {
        (3, "hipErrorNoBinaryForGpu: Unable to find code object for all current devices!")
    }
    assert match.pattern_score == 20  # two anchor patterns hit on that line, 10 each
    assert match.signatures == ("hip:hiperrornobinaryforgpu",) and match.confidence == "high"


def test_ansi_colour_codes_do_not_hide_a_match():
    log = "\x1b[31mE: Release file for http://snapshot.example/debian/dists/trixie/InRelease is expired\x1b[0m\n"
    assert diagnose(log)[0].entry.id == "apt-release-file-expired"


def test_limit_bounds_the_result_and_must_be_positive():
    text = (LOGS / "miopen-user-db-unwritable.log").read_text()
    assert len(diagnose(text, limit=3)) == 2
    assert [m.entry.id for m in diagnose(text, limit=1)] == ["miopen-user-db-unwritable"]
    with pytest.raises(ValueError, match="limit must be >= 1"):
        diagnose(text, limit=0)


# Look-alikes: the same headline token, a different cause. The negative patterns must decide.
OUT_OF_RESOURCES = "Call returned HSA_STATUS_ERROR_OUT_OF_RESOURCES: The runtime failed to allocate the necessary resources."


def test_out_of_resources_with_sudo_working_is_permissions():
    log = f"$ rocminfo\n{OUT_OF_RESOURCES}\n$ sudo rocminfo   # works as root\n"
    assert diagnose(log)[0].entry.id == "hsa-out-of-resources-permissions"


def test_out_of_resources_on_a_gpu_kfd_rejects_is_not_permissions():
    log = f"$ rocminfo\n{OUT_OF_RESOURCES}\n$ dmesg | grep kfd\nkfd kfd: amdgpu: TAHITI not supported in kfd\n"
    ids = [m.entry.id for m in diagnose(log)]
    assert ids[0] == "gpu-not-supported-by-kfd"
    assert "hsa-out-of-resources-permissions" not in ids


def test_expired_key_and_missing_key_are_told_apart():
    url = "https://repo.radeon.com/rocm/apt/6.2 jammy InRelease"
    expired = f"W: GPG error: {url}: The following signatures were invalid: EXPKEYSIG 9386B48A1A693C5C"
    missing = f"W: GPG error: {url}: The following signatures couldn't be verified: NO_PUBKEY 9386B48A1A693C5C"
    assert diagnose(expired)[0].entry.id == "repo-radeon-key-expired"
    assert diagnose(missing)[0].entry.id == "repo-radeon-no-pubkey"


def test_expired_release_file_is_not_an_expired_key():
    log = "E: Release file for http://snapshot.debian.org/x/dists/trixie/InRelease is expired (invalid since 3d)."
    assert [m.entry.id for m in diagnose(log)] == ["apt-release-file-expired"]


def test_killed_compiler_is_oom_and_crashing_compiler_is_a_compiler_bug():
    killed = "clang++: error: unable to execute command: Killed\nclang++: error: clang frontend command failed due to signal"
    crashed = ("PLEASE submit a bug report to https://github.com/llvm/llvm-project/issues/\nStack dump:\n"
               "clang++: error: clang frontend command failed with exit code 70 (use -v to see invocation)")
    assert diagnose(killed)[0].entry.id == "compiler-oom-killed"
    assert diagnose(crashed)[0].entry.id == "compiler-internal-crash"
    assert "compiler-oom-killed" not in [m.entry.id for m in diagnose(crashed)]


def test_ptx_asm_and_wrong_arch_amd_asm_are_told_apart():
    ptx = "<inline asm>:1:2: error: invalid instruction\n        shfl.sync.bfly.b32 %0, %1, 1, 31, -1;"
    gcn = "<inline asm>:1:2: error: instruction not supported on this GPU\n        v_dot2_f32_f16 v7, v5, v4, v7"
    assert diagnose(ptx)[0].entry.id == "ptx-inline-asm"
    assert diagnose(gcn)[0].entry.id == "amdgcn-asm-wrong-arch"
    assert "ptx-inline-asm" not in [m.entry.id for m in diagnose(gcn)]


def test_timeout_with_iommu_warning_is_the_iommu_entry():
    log = ('NCCL WARN Missing "iommu=pt" from kernel command line which can lead to system instablity or hang!\n'
           "[Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1, OpType=ALLREDUCE) ran for 600000 ms")
    ids = [m.entry.id for m in diagnose(log)]
    assert ids[0] == "rccl-iommu-hang"
    assert "rccl-collective-timeout" not in ids


def test_no_binary_with_exported_override_of_wrong_family_is_the_override_entry():
    log = ("$ export HSA_OVERRIDE_GFX_VERSION=11.0.0\n$ rocminfo | grep -m1 gfx\n  Name: gfx1030\n"
           "hipErrorNoBinaryForGpu: Unable to find code object for all current devices!")
    ids = [m.entry.id for m in diagnose(log)]
    assert ids[0] == "hsa-override-not-applied"


def test_deepspeed_wave32_on_rdna_is_correct_and_not_reported():
    log = ("DS_BUILD_FUSED_ADAM=1 pip install deepspeed\n"
           "hipcc -DROCM_WAVEFRONT_SIZE=32 --offload-arch=gfx1100 -c csrc/adam/multi_tensor_adam.hip")
    assert "deepspeed-wavefront-probe" not in [m.entry.id for m in diagnose(log)]


def test_harmless_warning_ranks_below_the_real_failure():
    log = ("/opt/amdgpu/share/libdrm/amdgpu.ids: No such file or directory\n"
           "torch.OutOfMemoryError: HIP out of memory. Tried to allocate 2.00 GiB.")
    ids = [m.entry.id for m in diagnose(log)]
    assert ids == ["hip-out-of-memory", "amdgpu-ids-missing"]


def test_format_matches_shows_id_score_lines_fix_check_and_doc_anchor():
    match = diagnose("x\nhipErrorInvalidConfiguration: invalid configuration argument\n")[0]
    text = format_matches([match])
    assert text.startswith("1. [hip-invalid-launch-configuration] ")
    assert f"score {match.score}, high confidence" in text
    assert "how:   patterns (any) 20 points; signatures hip:hiperrorinvalidconfiguration" in text
    assert "line 2: hipErrorInvalidConfiguration" in text
    assert "fix:" in text and "check: rocminfo" in text
    assert "docs/troubleshooting.md#hip-invalid-launch-configuration" in text
    assert format_matches([]) == "no known cause matched this log"


@pytest.mark.parametrize("header", ["cuda/pipeline", "cuda/barrier", "cuda/atomic", "cuda/std/atomic",
                                    "cuda/std/type_traits", "nv/target"])
def test_libcudacxx_header_is_not_a_plain_cuda_header(header):
    # clang's and gcc's wordings of the same missing include, bare (no build command around it).
    for line in (f"k.hip:2:10: fatal error: '{header}' file not found",
                 f"k.cu:2:10: fatal error: {header}: No such file or directory"):
        assert diagnose(line)[0].entry.id == "libcudacxx-header-not-found", line
    plain = "k.hip:2:10: fatal error: 'cuda_fp16.h' file not found"
    assert "libcudacxx-header-not-found" not in [m.entry.id for m in diagnose(plain)]


def test_generic_compiler_diagnostic_alone_names_no_entry():
    # "use of undeclared identifier" / "no matching function" say a name is missing, not which fault:
    # similarity may not report an entry on such a weak signature alone.
    assert is_weak("compiler:use of undeclared identifier _")
    assert is_weak("pyexc:error:command _ failed with exit code")
    assert not is_weak("hip:hiperrornobinaryforgpu")
    log = "foo.cpp:3:5: error: use of undeclared identifier 'frobnicate'\n1 error generated.\n"
    assert diagnose(log) == []


def test_hip_error_message_and_name_are_one_signature():
    by_message = {s.token for s in extract(["RuntimeError: HIP error: invalid device function"])}
    by_name = {s.token for s in extract(["hipLaunchKernel: Returned hipErrorInvalidDeviceFunction :"])}
    assert "hip:hiperrorinvaliddevicefunction" in by_message & by_name
    # a message HIP does not define keeps its normalised text
    assert {s.token for s in extract(["HIP error: something odd happened"])} >= {"hip:something odd happened"}
