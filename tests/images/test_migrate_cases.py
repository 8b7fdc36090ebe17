"""The migrate recipe in the dev image on the group A cases (real hipify-perl and hipcc, no mocks):
leftover CUDA-isms reported at their lines, exact fixes applied, compile results per wave64 (gfx90a,
gfx942) and wave32 (gfx1100) target, the right HIP of every case compiles, the input is untouched,
--baseline shows the delta, bad input gives one line and exit 2.

Image: $ROCMIG_DEV_IMAGE (default rocmig/dev:rocm7.2.4-gfx942-debian); skipped when it is not built.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from tests.unit.test_migrate_scan import CASE_EXPECTATIONS

pytestmark = pytest.mark.docker

ROOT = Path(__file__).resolve().parents[2]
from tests.shared_cases import CASES_DIR

CASES = CASES_DIR / "cuda"
IMAGE = os.environ.get("ROCMIG_DEV_IMAGE", "rocmig/dev:rocm7.2.4-gfx942-debian")
ARCHS = ("gfx90a", "gfx942", "gfx1100")


def image_or_skip() -> None:
    """Skip when the dev image is not built."""
    if shutil.which("docker") is None or subprocess.run(["docker", "image", "inspect", IMAGE],
                                                        capture_output=True).returncode != 0:
        pytest.skip(f"dev image {IMAGE} is not built (make images, or set ROCMIG_DEV_IMAGE)")


def cases_or_skip() -> None:
    """Skip when the dev image or the shared case set is absent."""
    image_or_skip()
    if not CASES.is_dir():
        pytest.skip(f"{CASES} is absent: the shared case set is not checked out next to this repository")


def run_recipe(src: Path, out: Path, *args: str, entry: tuple[str, ...] = ("python3", "-m", "migrate"),
               env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """Run `entry args` (default: the recipe of this working tree) in the dev image as the calling
    user: `src` read-only at /src, `out` at /out; `env` adds or overrides environment variables."""
    out.mkdir(parents=True, exist_ok=True)
    mounts = ["-v", f"{ROOT / 'recipes'}:/opt/rocmig/recipes:ro", "-v", f"{src}:/src:ro", "-v", f"{out}:/out"]
    cmd = ["docker", "run", "--rm", "--user", f"{os.getuid()}:{os.getgid()}", "-e", "HOME=/tmp",
           "-e", "PYTHONPATH=/opt/rocmig/recipes/migrate", *(f"-e{k}={v}" for k, v in (env or {}).items()),
           *mounts, IMAGE, *entry, *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=1800)


def migrate_tree_in_image(tmp_path: Path, tree: dict[str, str]) -> dict:
    """The recipe of this working tree on `tree` ({file name: text}, written to tmp_path/src) for gfx942 and
    gfx1100 (--fail-on never, which must exit 0): the run's report.json; the run is under tmp_path/out/run."""
    src = tmp_path / "src"
    src.mkdir()
    for name, text in tree.items():
        (src / name).write_text(text, encoding="utf-8")
    out = tmp_path / "out"
    run = run_recipe(src, out, "/src", "--out", "/out/run", "--arch", "gfx942", "--arch", "gfx1100", "--fail-on", "never")
    assert run.returncode == 0, run.stderr[-3000:]
    return json.loads((out / "run" / "report.json").read_text(encoding="utf-8"))


def digests(path: Path) -> dict[str, str]:
    return {str(p.relative_to(path)): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(path.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def cases_run(tmp_path_factory):
    """One recipe run over a copy of the case inputs for gfx90a, gfx942, gfx1100 (fail-on default: error)."""
    cases_or_skip()
    src = tmp_path_factory.mktemp("cases") / "cuda"
    shutil.copytree(CASES, src, ignore=shutil.ignore_patterns("*.expected.hip"))
    before = digests(src)
    out = tmp_path_factory.mktemp("out")
    proc = run_recipe(src, out, "/src", "--out", "/out/run", *sum((["--arch", a] for a in ARCHS), []), "--jobs", "2")
    report = json.loads((out / "run" / "report.json").read_text())
    return {"proc": proc, "report": report, "files": {f["path"]: f for f in report["files"]},
            "before": before, "after": digests(src), "out": out / "run"}


def test_input_tree_unchanged(cases_run):
    assert cases_run["before"] == cases_run["after"]


def test_exit_code_and_reports(cases_run):
    assert cases_run["proc"].returncode == 1, cases_run["proc"].stderr  # open errors (A03, A06) with --fail-on error
    r = cases_run["report"]
    assert r["complete"] is True and r["summary"]["exit_code"] == 1
    assert [a["name"] for a in r["archs"]] == list(ARCHS)
    assert r["options"]["arch_groups"] == [["gfx90a", "gfx942"], ["gfx1100"]]
    for name in ("report.md", "report.html"):
        assert (cases_run["out"] / name).stat().st_size > 1000
    # without --baseline no baseline is reported, not even an empty one
    assert "baseline" not in r["summary"] and not any("baseline" in f for f in r["files"])
    # the tools line names the semantic translator too
    assert r["tools"]["hipify_clang"] and f"hipify-clang {r['tools']['hipify_clang']}" in (cases_run["out"] / "report.md").read_text()


@pytest.mark.parametrize("name", sorted(CASE_EXPECTATIONS))
def test_leftovers_reported_at_their_line(cases_run, name):
    got = {(x["line"], x["rule"]) for x in cases_run["files"][name]["findings"]}
    assert CASE_EXPECTATIONS[name] <= got


# case -> (fixups that must be applied, {arch: compile status})
EXPECTED = {
    "A02_shfl_xor_sync_mask.cu": ({"warp-sync-full-mask"}, dict.fromkeys(ARCHS, "ok")),
    "A03_warp32_ballot.cu": ({"warp-sync-full-mask"}, dict.fromkeys(ARCHS, "ok")),  # the 32-lane group's ballot
    "A06_max_dynamic_smem.cu": (set(), dict.fromkeys(ARCHS, "ok")),  # compiles; fails at launch: flagged
    "A08_bf16_header.cu": (set(), dict.fromkeys(ARCHS, "ok")),  # hipify-perl 7.2 maps bf16 itself
    "A10_thrust_cuda_par.cu": ({"thrust-hip-policy"}, dict.fromkeys(ARCHS, "ok")),
    # gfx942 has no image instructions: the reference is read through cuda_texture_soft.h on every arch
    "A11_texture_reference.cu": ({"texture-soft"}, dict.fromkeys(ARCHS, "ok")),
    "A14_float2_operators.cu": ({"vector-operator-guard"}, dict.fromkeys(ARCHS, "ok")),
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_fixes_and_compile_status_per_arch(cases_run, name):
    entry = cases_run["files"][name]
    fixes, statuses = EXPECTED[name]
    # hip-runtime-include-once only drops hipify-perl's repeated hip_runtime.h include (no semantic change)
    assert {f["id"] for f in entry["fixes"]} - {"hip-runtime-include-once"} == fixes
    assert {a: r["status"] for a, r in entry["compile"].items()} == statuses
    for result in entry["compile"].values():
        assert bool(result["first_error"]) == (result["status"] == "failed")
        assert (cases_run["out"] / result["log"]).is_file()
    if any(s == "failed" for s in statuses.values()):  # every failure is explained by an open error finding
        assert any(x["severity"] == "error" and x["status"] == "open" for x in entry["findings"])


CUBEMAP_CU = """\
#include <cuda_runtime.h>

// a cube map fetch: HIP's texCubemap needs image instructions, which gfx942 lacks (cuda_texture_soft.h has
// no cube maps, so the tree keeps HIP's textures)
__global__ void sky(cudaTextureObject_t cube, float4* out) {
  float3 d = make_float3(threadIdx.x - 16.0f, 1.0f, 0.5f);
  out[threadIdx.x] = texCubemap<float4>(cube, d.x, d.y, d.z);
}
"""


def test_failures_are_attributed_per_arch(tmp_path):
    image_or_skip()
    src, out = tmp_path / "src", tmp_path / "out"
    src.mkdir()
    (src / "sky.cu").write_text(CUBEMAP_CU, encoding="utf-8")
    run = run_recipe(src, out, "/src", "--out", "/out/run", *sum((["--arch", a] for a in ARCHS), []), "--fail-on", "never")
    assert run.returncode == 0, run.stderr[-3000:]
    (unit,) = json.loads((out / "run" / "report.json").read_text(encoding="utf-8"))["files"]
    results = unit["compile"]
    assert {arch: r["status"] for arch, r in results.items()} == {"gfx90a": "ok", "gfx942": "failed", "gfx1100": "ok"}
    assert "texture" in results["gfx942"]["first_error"]
    assert results["gfx942"]["log"] != results["gfx90a"]["log"]  # the wave64 group was split to find the failing arch


def test_migrated_thrust_case_equals_expected_hip(cases_run):
    migrated = (cases_run["out"] / "hip" / "A10_thrust_cuda_par.cu").read_text()
    assert migrated == (CASES / "A10_thrust_cuda_par.expected.hip").read_text()


def test_fixed_findings_marked(cases_run):
    a02 = {(x["line"], x["rule"]): x["status"] for x in cases_run["files"]["A02_shfl_xor_sync_mask.cu"]["findings"]}
    assert a02[(6, "warp-mask-32bit")] == "fixed" and a02[(11, "warp-lane-arith-32")] == "fixed"  # width-32 shuffles
    a08 = cases_run["files"]["A08_bf16_header.cu"]["findings"]
    assert a08 and all(x["status"] == "fixed" for x in a08)
    a14 = cases_run["files"]["A14_float2_operators.cu"]["findings"]
    assert all(x["status"] == "fixed" for x in a14 if x["rule"] == "vector-operator-guard")


def test_right_hip_of_every_case_compiles_for_wave64_and_wave32(tmp_path):
    """The *.expected.hip of each case produces code objects for gfx90a, gfx942 and gfx1100, except the
    texture-object rewrite of A11 on gfx942: HIP 7.2 marks the image/texture API unavailable on targets
    without image support (__HIP_NO_IMAGE_SUPPORT, amd_detail/host_defines.h); it builds for the others."""
    cases_or_skip()
    files = sorted(p.name for p in CASES.glob("*.expected.hip"))
    assert len(files) == 7
    archs = " ".join(f"--offload-arch={a}" for a in ARCHS)
    script = "; ".join(f"hipcc -c -x hip {archs} /src/{n} -o /out/{n}.o > /out/{n}.log 2>&1; echo {n} $?" for n in files)
    script += "; hipcc -c -x hip --offload-arch=gfx90a --offload-arch=gfx1100 /src/A11_texture_reference.expected.hip -o /out/a11.o; echo a11-no-gfx942 $?"
    proc = run_recipe(CASES, tmp_path, "-c", script, entry=("bash",))
    status = dict(line.split() for line in proc.stdout.splitlines())
    assert status == {**{n: "0" for n in files}, "A11_texture_reference.expected.hip": "1", "a11-no-gfx942": "0"}, proc.stdout
    assert "image/texture API not supported on the device" in (tmp_path / "A11_texture_reference.expected.hip.log").read_text()


def test_baseline_delta(tmp_path):
    cases_or_skip()
    src = tmp_path / "src"
    src.mkdir()
    for name in ("A02_shfl_xor_sync_mask.cu", "A10_thrust_cuda_par.cu"):
        shutil.copy(CASES / name, src / name)
    proc = run_recipe(src, tmp_path / "out", "/src", "--out", "/out/run", "--arch", "gfx942", "--baseline", "--fail-on", "never")
    assert proc.returncode == 0, proc.stderr
    summary = json.loads((tmp_path / "out" / "run" / "report.json").read_text())["summary"]
    assert summary["compile"]["gfx942"]["ok"] == 2 and summary["baseline"]["gfx942"]["ok"] == 0
    assert "delta +2" in (tmp_path / "out" / "run" / "report.md").read_text()


@pytest.mark.parametrize("setup, expect", [
    ("missing", "no such file or directory"),
    ("empty", "no CUDA sources found"),
    ("unknown-arch", "--arch: unknown value 'gfx000' (allowed:"),
])
def test_bad_input_in_image(tmp_path, setup, expect):
    image_or_skip()
    src = tmp_path / "src"
    src.mkdir()
    (src / "readme.cpp").write_text("int main() { return 0; }\n")
    target = "/src/none" if setup == "missing" else "/src"
    arch = "gfx000" if setup == "unknown-arch" else "gfx942"
    proc = run_recipe(src, tmp_path / "out", target, "--arch", arch, "--out", "/out/run")
    assert proc.returncode == 2
    assert expect in proc.stderr and len(proc.stderr.strip().splitlines()) == 1, proc.stderr


def test_hipify_warnings_equal_hipify_perls_own(tmp_path):
    """The warnings computed from hipify-perl's tables equal those of hipify-perl's own (slow) pass."""
    cases_or_skip()
    script = (
        "from pathlib import Path\n"
        "from migrate import hipify\n"
        "tool = hipify.find_hipify(); tables = hipify.read_tables(tool)\n"
        "assert tables is not None\n"
        "kinds = ('removed', 'deprecated', 'experimental', 'unsupported')\n"
        "norm = lambda ws: sorted((w.line, w.message) for w in ws if w.message.startswith(kinds))\n"
        "for name in ('A11_texture_reference.cu', 'A08_bf16_header.cu', 'A06_max_dynamic_smem.cu'):\n"
        "    src = Path('/src') / name\n"
        "    fast = hipify.translate(tool, src, Path('/tmp/fast.hip'), tables)\n"
        "    slow = hipify.translate(tool, src, Path('/tmp/slow.hip'), None)\n"
        "    assert Path('/tmp/fast.hip').read_text() == Path('/tmp/slow.hip').read_text()\n"
        "    assert norm(fast) == norm(slow), (name, norm(fast), norm(slow))\n"
        "    print(name, len(norm(fast)))\n")
    proc = run_recipe(CASES, tmp_path, "-c", script, entry=("python3",))
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    assert "A11_texture_reference.cu 4" in proc.stdout


def test_interrupted_run_leaves_no_report(tmp_path):
    """A run killed mid-way (here: during hipcc) leaves no report.json, and none of an earlier run."""
    cases_or_skip()
    out = tmp_path / "out"
    first = run_recipe(CASES, out, "/src/A10_thrust_cuda_par.cu", "--out", "/out/run", "--arch", "gfx942")
    assert first.returncode == 0, first.stderr
    assert (out / "run" / "report.json").is_file()
    # the first run's compile logs would read as the second run's compile stage
    shutil.rmtree(out / "run" / "build")
    name = f"rocmig-migrate-kill-{os.getpid()}"
    cmd = ["docker", "run", "-d", "--name", name, "--user", f"{os.getuid()}:{os.getgid()}", "-e", "HOME=/tmp",
           "-e", "PYTHONPATH=/opt/rocmig/recipes/migrate", "-v", f"{ROOT / 'recipes'}:/opt/rocmig/recipes:ro",
           "-v", f"{CASES}:/src:ro", "-v", f"{out}:/out", IMAGE,
           "python3", "-m", "migrate", "/src", "--out", "/out/run", "--arch", "gfx942", "--arch", "gfx1100"]
    assert subprocess.run(cmd, capture_output=True, text=True).returncode == 0
    try:
        deadline = time.monotonic() + 120
        while (out / "run" / "report.json").exists() and time.monotonic() < deadline:
            time.sleep(0.2)  # the new run removes the earlier run's reports first
        while not list((out / "run" / "build").rglob("*.log")) and time.monotonic() < deadline:
            time.sleep(0.2)
        subprocess.run(["docker", "kill", name], capture_output=True)
    finally:
        subprocess.run(["docker", "rm", "-f", name], capture_output=True)
    assert list((out / "run" / "build").rglob("*.log")), "the run never reached the compile stage"
    assert not (out / "run" / "report.json").exists()
    assert not (out / "run" / "report.html").exists()


def test_offload_archs_beyond_the_table_are_probed_with_the_images_hipcc(tmp_path):
    """An arch the arch table lacks is taken with the wavefront size hipcc's target features give it;
    one hipcc does not know is refused (None). The unit tests feed IR lines; this runs the probe."""
    image_or_skip()
    script = ("from migrate import archs, compile\n"
              "hipcc = compile.find_hipcc()\n"
              "for name in ('gfx908', 'gfx1030', 'gfx11-generic', 'gfx9999'):\n"
              "    arch = archs.toolchain_arch(name, hipcc)\n"
              "    print(name, arch.wavefront if arch else None)\n")
    proc = run_recipe(tmp_path, tmp_path / "out", "-c", script, entry=("python3",))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split("\n") == ["gfx908 64", "gfx1030 32", "gfx11-generic 32", "gfx9999 None", ""]


def test_a_byte_identical_extension_unit_carries_its_twins_translator(tmp_path):
    """AutoGPTQ 0.7.1 ships autogptq_cuda_64.cpp and autogptq_cuda_256.cpp byte for byte equal: the
    second is compiled once, as its twin (`same_as`), and its translator entry is its twin's (a
    PyTorch extension unit), not that of a file another unit includes."""
    image_or_skip()
    src = tmp_path / "src"
    src.mkdir()
    for name in ("ext_64.cpp", "ext_256.cpp"):
        (src / name).write_text("#include <torch/extension.h>\n#include <c10/cuda/CUDAGuard.h>\n"
                                "torch::Tensor twice(torch::Tensor x) { return x * 2; }\n")
    proc = run_recipe(src, tmp_path / "out", "/src", "--out", "/out/run", "--arch", "gfx942", "--fail-on", "never")
    assert proc.returncode == 0, proc.stderr[-3000:]
    files = {f["path"]: f for f in json.loads((tmp_path / "out" / "run" / "report.json").read_text())["files"]}
    first, second = sorted(files, key=lambda rel: "same_as" in files[rel]["compile"]["gfx942"])
    assert files[second]["compile"]["gfx942"]["same_as"] == first
    assert files[first]["compile"]["gfx942"]["status"] == files[second]["compile"]["gfx942"]["status"] == "ok"
    mine, twins = files[second]["translator"], files[first]["translator"]
    assert mine["name"] == "torch.utils.hipify" and mine["reason"] == twins["reason"]
    assert mine["reason"].startswith("includes <") and mine["hipified_path"] != twins["hipified_path"]
