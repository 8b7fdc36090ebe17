"""pip's resolver on every amd cell's Python requirements against PyPI (buildctl.resolve), before a build.

The amd lane cannot be built here; its pip steps can be resolved: the cell's Python and manylinux tags,
the torch family as constraints. Cells with the same resolution (same Python, pins and requirements) are
resolved once; pip runs in parallel, each run bounded by buildctl.resolve.TIMEOUT_S. By default the newest
amd release is resolved; ROCMIG_RESOLVE_ALL=1 resolves every release (the nightly run). The negative controls
show that each kind of fault the review found is caught: Requires-Python, conflicting pins, a package
pulling PyPI's (CUDA) triton.
"""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from buildctl.load import load_project
from buildctl.model import version_tuple
from buildctl.plan import Selection, make_plan
from buildctl.resolve import Resolution, check_plan, plan_resolutions, platform_tags, resolve

ROOT = Path(__file__).resolve().parents[2]
TORCH_211 = ("torch==2.11.0", "torchvision==0.26.0", "torchaudio==2.11.0")

pytestmark = pytest.mark.pypi


@pytest.fixture(scope="module")
def sdists(tmp_path_factory):
    return tmp_path_factory.mktemp("sdists")


def _releases(project) -> tuple[str, ...]:
    """The newest amd release (about a minute of pip); every release with ROCMIG_RESOLVE_ALL=1 (Python
    3.10 and 3.12, both Triton namings: about 12 resolutions, several minutes)."""
    lines = sorted((r.version for r in project.matrix.rocm if r.source == "amd"), key=version_tuple)
    return tuple(lines) if os.environ.get("ROCMIG_RESOLVE_ALL") == "1" else (lines[-1],)


def test_amd_cells_pip_steps_resolve(sdists):
    """gfx942 cells hold every component (sgl-kernel, aiter and flash-attention gate other archs out)."""
    project = load_project(ROOT)
    plan = make_plan(project, Selection(sources=("amd",), rocm=_releases(project), archs=("gfx942",)))
    labels = {r.label.split(":")[0] for r in plan_resolutions(project, plan, sdists)}
    assert labels >= {"rocmig/torch", "rocmig/serve", "rocmig/train", "rocmig/kernels"}
    outcomes = check_plan(project, plan)
    problems = [p for o in outcomes for p in o.problems]
    assert not problems, "\n".join(problems)
    serve = [o for o in outcomes if "rocmig/serve:rocm7.2.4" in o.resolution.label]
    assert serve and serve[0].chosen["transformers"] == "5.3.0" and "xgrammar" not in serve[0].chosen
    # SGLang's server closure was checked against the resolution's wheels (buildctl.import_closure).
    assert {"dill", "gguf", "zmq", "sgl_kernel"} <= {m for m, _ in serve[0].resolution.imports}


def test_requires_python_is_caught():
    """llamafactory 0.9.5 requires Python >= 3.11: Ubuntu 22.04's 3.10 cannot install it."""
    outcome = resolve(Resolution("llamafactory on 3.10", "3.10", "2.35", ("llamafactory==0.9.5",)))
    assert outcome.problems and "Python" in outcome.problems[0]


def test_a_pin_conflicting_with_the_torch_family_is_caught():
    """compressed-tensors 0.15.0 requires torch < 2.11; a torch 2.11 cell cannot take it."""
    outcome = resolve(Resolution("compressed-tensors 0.15.0", "3.12", "2.39", ("compressed-tensors==0.15.0",),
                                 TORCH_211))
    assert outcome.problems and "cannot resolve" in outcome.problems[0]
    assert "torch" in outcome.problems[0]


def test_a_package_pulling_pypis_triton_is_caught():
    """xgrammar declares `triton`: resolved with its dependencies it would replace ROCm's Triton."""
    outcome = resolve(Resolution("xgrammar with deps", "3.12", "2.39", ("xgrammar==0.1.32",), TORCH_211))
    assert any("xgrammar 0.1.32 requires triton" in p for p in outcome.problems), outcome.problems


def test_platform_tags_follow_glibc():
    tags = platform_tags("2.35")
    assert tags[0] == "manylinux_2_35_x86_64" and "manylinux_2_36_x86_64" not in tags
    assert "manylinux2014_x86_64" in tags and tags[-1] == "linux_x86_64"


def test_plan_check_resolve_exits_2_naming_the_fault(project_copy):
    """`buildctl plan --check-resolve` on a matrix whose LLaMA-Factory lost its requires_python: the jammy
    train cell would install it on Python 3.10; the resolver refuses before any build (exit 2)."""
    matrix = project_copy / "matrix.yaml"
    matrix.write_text(matrix.read_text().replace('    requires_python: "3.11"\n', "", 1))
    done = subprocess.run([sys.executable, "-m", "buildctl", "--root", str(project_copy), "plan", "--check-resolve",
                           "--source", "amd", "--rocm", "6.2", "--arch", "gfx942", "--image", "train",
                           "--out", str(project_copy / "build")],
                          capture_output=True, text=True, timeout=900, check=False)
    assert done.returncode == 2, done.stderr[-2000:]
    assert "rocmig/train:rocm6.2.4-gfx942 (Python 3.10)" in done.stderr and "Python" in done.stderr
