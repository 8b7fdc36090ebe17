"""Group B (runtime/build logs) and C (image build problems) cases from ../shared/cases rank their cause first.

The inputs are read from /work/shared/cases/cases.json at test time (the README there describes the
groups); the test skips only when that file is absent.
"""

from __future__ import annotations

import json

import pytest

from buildctl.doctor import diagnose

# ../shared/cases next to the checkout (the project layout), else the machine-wide copy.
from tests.shared_cases import CASES_DIR

CASES_FILE = CASES_DIR / "cases.json"

# case id -> catalog entry that names the case's `expected` root cause.
EXPECTED_ENTRY = {
    "B01": "hip-no-binary-for-gpu",  # gfx1032 not in the binary: override to 10.3.0 or rebuild
    "B03": "hsa-out-of-resources-permissions",  # /dev/kfd owned by render, user only in video
    "B04": "hip-invalid-launch-configuration",  # gridDim.x * blockDim.x > 2^32-1
    "B07": "cuda-library-in-rocm-env",  # deep_gemm wheel needs libcudart.so.13
    "B09": "miopen-missing-kdb",  # warning, not an error: no kdb for this arch
    "B10": "rccl-iommu-hang",  # Missing "iommu=pt": P2P over PCIe stalls
    "B13": "flash-attn-arch-rejected",  # CK backend is CDNA-only; Triton backend on RDNA
    "C01": "image-disk-space",  # rocm/pytorch is 30-40 GB: multi-stage, slim base
    "C02": "repo-radeon-key-expired",  # EXPKEYSIG for repo.radeon.com in an old image
    "C04": "torch-cuda-wheel-replaced-rocm",  # requirements pull PyPI's CUDA torch
    "C07": "compiler-oom-killed",  # CK translation units OOM-killed: MAX_JOBS
}


def _cases() -> dict[str, dict]:
    if not CASES_FILE.is_file():
        pytest.skip(f"{CASES_FILE} is absent: the shared case set is not checked out next to this repository")
    return {case["id"]: case for case in json.loads(CASES_FILE.read_text())}


@pytest.mark.parametrize("case_id", sorted(EXPECTED_ENTRY))
def test_case_ranks_expected_cause_first(case_id):
    cases = _cases()
    assert case_id in cases, f"{case_id} is no longer in {CASES_FILE}"
    case = cases[case_id]
    matches = diagnose(case["input"])
    assert matches, f"{case_id} ({case['title']}): nothing matched"
    assert matches[0].entry.id == EXPECTED_ENTRY[case_id], [(m.entry.id, m.score) for m in matches]


def test_every_group_b_and_c_case_is_mapped():
    unmapped = sorted(cid for cid, c in _cases().items() if c["group"] in ("B", "C") and cid not in EXPECTED_ENTRY)
    assert unmapped == [], f"map these cases to a catalog entry in EXPECTED_ENTRY: {unmapped}"
