"""The error catalog as data: it loads, covers the issue's list, and a bad catalog fails in one line."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from buildctl.doctor.models import CATALOG_DIR, CatalogError, Category, load_catalog

ENTRIES = load_catalog()


def test_catalog_has_at_least_40_entries_in_all_six_categories():
    assert len(ENTRIES) >= 40
    assert {e.category for e in ENTRIES} == set(Category)


def test_catalog_ids_are_unique():
    ids = [e.id for e in ENTRIES]
    assert len(ids) == len(set(ids))


# Each item of issue 6's coverage list, and the catalog entry that covers it.
COVERAGE = {
    "hipErrorNoBinaryForGpu / code object missing": "hip-no-binary-for-gpu",
    "HSA_OVERRIDE_GFX_VERSION not exported": "hsa-override-not-applied",
    "/dev/kfd and /dev/dri permissions": "kfd-permission-denied",
    "HSA_STATUS_ERROR_OUT_OF_RESOURCES as permissions": "hsa-out-of-resources-permissions",
    "hipErrorInvalidConfiguration": "hip-invalid-launch-configuration",
    "CUDA wheel / libcudart in ROCm env": "cuda-library-in-rocm-env",
    "no NVIDIA driver in ROCm env": "torch-cuda-wheel-replaced-rocm",
    "torch from another ROCm index": "torch-rocm-index-mismatch",
    "amdgpu.ids missing (harmless)": "amdgpu-ids-missing",
    "MIOpen missing database": "miopen-missing-kdb",
    "MIOpen find-db": "miopen-find-tuning-slow",
    "RCCL hang / iommu": "rccl-iommu-hang",
    "RCCL timeout": "rccl-collective-timeout",
    "flash-attention arch / GPU_ARCHS": "flash-attn-arch-rejected",
    "DeepSpeed wavefront probing": "deepspeed-wavefront-probe",
    "repo.radeon.com key expiry": "repo-radeon-key-expired",
    "repo.radeon.com moved paths": "repo-radeon-path-moved",
    "compiler jobs OOM-killed (MAX_JOBS)": "compiler-oom-killed",
    "code object version mismatch": "code-object-version-mismatch",
    "shared memory above LDS": "lds-static-over-limit",
    "warp-size assumptions": "warp-size-32-assumption",
    "AMP loss-scale divergence": "amp-loss-scale-divergence",
}


@pytest.mark.parametrize("item", sorted(COVERAGE))
def test_issue_coverage_item_has_an_entry(item):
    by_id = {e.id: e for e in ENTRIES}
    assert COVERAGE[item] in by_id, f"{item}: no catalog entry {COVERAGE[item]!r}"


def test_harmless_entries_are_only_warnings():
    harmless = {e.id for e in ENTRIES if e.harmless}
    assert harmless == {"amdgpu-ids-missing", "miopen-missing-kdb", "hipblaslt-unsupported-arch", "rocm-cuda-loss-curves-differ", "amdsmi-init-failed-warning", "amdgpu-ta-firmware-missing-harmless", "amd-smi-throttled-at-idle-misreport"}


def test_no_plain_yaml_scalar_is_cut_by_a_comment():
    """In YAML an unquoted ' #' starts a comment: a fix step like '(e.g. #if ...' would be cut silently."""
    offenders = []
    for path in sorted(CATALOG_DIR.glob("*.yaml")):
        for n, line in enumerate(path.read_text().splitlines(), 1):
            m = re.match(r"^\s*(?:- |[a-z_]+: )(?P<value>.*)$", line)
            if m and m["value"][:1] not in ("'", '"', "") and " #" in m["value"]:
                offenders.append(f"{path.name}:{n}")
    assert offenders == []


GOOD_ENTRY = """
  - id: demo-entry
    title: A demo entry for the loader
    category: runtime crash
    symptom: demo symptom line
    trigger: running the demo
    match:
      any: ['demo failure']
    root_cause: This is a root cause long enough to pass validation.
    fix: [do the fix]
    check: "true"
    links: [https://example.org/report/1]
"""


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_a_valid_minimal_catalog_loads(tmp_path):
    _write(tmp_path, "a.yaml", "entries:" + GOOD_ENTRY)
    (entry,) = load_catalog(tmp_path)
    assert entry.id == "demo-entry" and entry.match.min_score == 10


@pytest.mark.parametrize(
    ("mutation", "expected"),
    [
        (("    check:", "    chek: x\n    check:"), r"a\.yaml: entries\[0\]\.chek: unknown key"),
        (("runtime crash", "runtime crashes"), r"a\.yaml: entries\[0\]\.category: Input should be 'compile-time'"),
        (("['demo failure']", "['demo (failure']"), r"a\.yaml: entries\[0\]\.match\.any\[0\]\.re: invalid regular expression"),
        (("    links: [https://example.org/report/1]\n", ""), r"a\.yaml: entries\[0\]\.links: Field required"),
        (("      any: ['demo failure']", "      any: ['demo failure']\n      nott: ['x']"), r"entries\[0\]\.match\.nott: unknown key"),
        (("https://example.org", "http://example.org"), r"entries\[0\]\.links: link 'http://example.org/report/1' is not an https:// URL"),
    ],
)
def test_bad_catalog_gives_one_line_error_with_file_and_key_path(tmp_path, mutation, expected):
    old, new = mutation
    assert old in GOOD_ENTRY
    _write(tmp_path, "a.yaml", "entries:" + GOOD_ENTRY.replace(old, new))
    with pytest.raises(CatalogError) as info:
        load_catalog(tmp_path)
    message = str(info.value)
    assert "\n" not in message
    assert re.search(expected, message), message
    assert message.startswith(str(tmp_path / "a.yaml"))


def test_duplicate_id_across_files_names_both_files(tmp_path):
    _write(tmp_path, "a.yaml", "entries:" + GOOD_ENTRY)
    _write(tmp_path, "b.yaml", "entries:" + GOOD_ENTRY)
    with pytest.raises(CatalogError, match=r"b\.yaml: entries\[0\]\.id: 'demo-entry' already defined in a\.yaml"):
        load_catalog(tmp_path)


def test_invalid_yaml_names_file_and_line(tmp_path):
    _write(tmp_path, "a.yaml", "entries:\n  - id: [unclosed\n")
    with pytest.raises(CatalogError, match=r"a\.yaml:\d+:\d+: YAML syntax error"):
        load_catalog(tmp_path)


def test_empty_catalog_directory_is_an_error(tmp_path):
    with pytest.raises(CatalogError, match="no \\*.yaml catalog files"):
        load_catalog(tmp_path)
