"""`buildctl migrate` from the host: a single .cu file as input, and failed units' first compiler errors
matched to the error case library in report.json, report.md and report.html."""

import json
import subprocess
import sys

import pytest

from tests.images.conftest import ROOT, slice_cells

from tests.shared_cases import CASES_DIR
CASE = CASES_DIR / "cuda" / "A03_warp32_ballot.cu"
pytestmark = [pytest.mark.docker, pytest.mark.usefixtures("docker_engine")]


@pytest.mark.skipif(not slice_cells("dev"), reason="dev is not in the slice")
def test_single_file_with_doctor_matches(tmp_path):
    if not CASE.exists():
        pytest.skip(f"{CASE} is absent (the shared cases are not in this checkout)")
    src = tmp_path / "A03.cu"
    src.write_bytes(CASE.read_bytes())
    out = tmp_path / "out"
    # gfx90a: any dev image of the release compiles for every offload arch (the slice builds gfx942's).
    result = subprocess.run([sys.executable, "-m", "buildctl", "migrate", str(src), "--arch", "gfx942",
                             "--arch", "gfx90a", "--out", str(out)], capture_output=True, text=True, cwd=ROOT,
                            timeout=600)
    assert result.returncode == 1, result.stderr  # open error findings meet the default --fail-on error
    assert f"report: {out / 'report.html'}" in result.stdout
    report = json.loads((out / "report.json").read_text())
    (entry,) = [f for f in report["files"] if f["unit"]]
    compiled = entry["compile"]["gfx942"]
    assert compiled["status"] == "failed"
    assert [m["id"] for m in compiled["doctor"]] == ["hip-warp-sync-mask-32bit"]
    assert "hip-warp-sync-mask-32bit" in (out / "report.html").read_text()
    handbook = (ROOT / "docs" / "troubleshooting.md").as_uri()
    assert f"({handbook}#hip-warp-sync-mask-32bit)" in (out / "report.md").read_text()
    assert report["source"] == str(src) and report["out"] == str(out)
    assert compiled["first_error"].startswith("/") and "/out/" not in compiled["first_error"]
    assert entry["compile"]["gfx90a"]["status"] == "failed"
    assert src.read_bytes() == CASE.read_bytes()
