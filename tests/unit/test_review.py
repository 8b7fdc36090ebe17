"""`buildctl review BASE` on a real git repository: the migrate scanner's findings and the review rules on
the changed lines of real CUDA code from the shared case set (cases.json, each from a public bug report),
build files with nvcc flags and CUDA libraries, requirements with CUDA wheels and hard-coded paths; a HIP
change, docstrings and unchanged lines give nothing."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from buildctl.errors import ConfigError
from buildctl.load import load_project
from buildctl.review import changed_lines, load_review_rules, python_prose_lines, review
from tests.shared_cases import CASES_DIR

ROOT = Path(__file__).resolve().parents[2]


def git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
                   check=True, capture_output=True)


def case(case_id: str) -> dict:
    path = CASES_DIR / "cases.json"
    if not path.exists():
        pytest.skip(f"{path} is absent: the shared case set is not checked out next to this repository")
    return next(c for c in json.loads(path.read_text()) if c["id"] == case_id)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / "CMakeLists.txt").write_text("cmake_minimum_required(VERSION 3.21)\nproject(demo LANGUAGES CXX)\n"
                                         "set(LEGACY_FLAGS \"-arch=sm_70\")\n")
    (repo / "README.md").write_text("Built with -lcudart and /usr/local/cuda before.\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "base")
    git(repo, "switch", "-q", "-c", "feature")
    return repo


def rules_hit(findings) -> set[tuple[str, int, str]]:
    return {(f.file, f.line, f.rule) for f in findings}


def test_real_cuda_case_and_build_files(repo):
    a02 = case("A02")
    (repo / "src").mkdir()
    (repo / "src" / "row_sums.cu").write_text(a02["input"])
    with (repo / "CMakeLists.txt").open("a") as f:
        f.write('target_compile_options(demo PRIVATE -gencode arch=compute_80,code=sm_80 --use_fast_math)\n'
                'target_link_libraries(demo PRIVATE CUDA::cudart -lcublas)\n')
    (repo / "requirements.txt").write_text("# GPU stack\ntorch==2.3.0+cu121\nnvidia-cublas-cu12==12.1.3.1\n"
                                           "--extra-index-url https://download.pytorch.org/whl/cu121\nnumpy\n")
    (repo / "build.sh").write_text("#!/bin/sh\nexport CUDA_HOME=/usr/local/cuda\n"
                                   "export LD_LIBRARY_PATH=/opt/rocm-6.2.0/lib\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "change")
    findings = review(load_project(ROOT), repo, "main")
    hits = rules_hit(findings)
    text = a02["input"].split("\n")
    shfl = next(i for i, line in enumerate(text, 1) if "__shfl_xor_sync" in line)
    malloc = next(i for i, line in enumerate(text, 1) if "cudaMalloc" in line)
    include = next(i for i, line in enumerate(text, 1) if "cuda_runtime.h" in line)
    assert ("src/row_sums.cu", shfl, "warp-mask-32bit") in hits, "the migrate scanner runs on the change"
    assert ("src/row_sums.cu", malloc, "cuda-runtime-api") in hits
    assert ("src/row_sums.cu", include, "cuda-header") in hits
    assert ("CMakeLists.txt", 4, "nvcc-only-flag") in hits and ("CMakeLists.txt", 5, "cuda-library-link") in hits
    assert ("CMakeLists.txt", 3, "nvcc-only-flag") not in hits, "line 3 is unchanged"
    assert {("requirements.txt", n, "cuda-wheel") for n in (2, 3, 4)} <= hits
    assert ("requirements.txt", 1, "cuda-wheel") not in hits and ("requirements.txt", 5, "cuda-wheel") not in hits
    assert ("build.sh", 2, "hardcoded-cuda-path") in hits and ("build.sh", 3, "hardcoded-rocm-version-path") in hits
    assert not any(f.file == "README.md" for f in findings), "prose files are not reviewed"
    by_source = {f.source for f in findings}
    assert by_source == {"review", "migrate"}


def test_right_hip_and_uncommitted_files(repo):
    """The case's right HIP has no leftover CUDA API; an untracked file counts as changed."""
    a02 = case("A02")
    (repo / "row_sums.hip").write_text(a02["expected"]["right_hip"])
    assert "row_sums.hip" in changed_lines(repo, "main")
    findings = review(load_project(ROOT), repo, "main")
    assert not [f for f in findings if f.rule in ("cuda-runtime-api", "cuda-header", "warp-mask-32bit")], findings


def test_dead_on_amd_branches_and_python_prose(repo):
    (repo / "guarded.cu").write_text(
        "#include <hip/hip_runtime.h>\n#ifndef __HIP_PLATFORM_AMD__\n#include <cuda_runtime.h>\n"
        "static void f() { cudaDeviceSynchronize(); }\n#endif\n")
    (repo / "setup_env.py").write_text(
        '"""Finds the toolkit; NVIDIA hosts keep it in /usr/local/cuda."""\nimport os\n'
        '# was /usr/local/cuda\nROOT = os.environ.get("ROCM_PATH", "/opt/rocm")\nLEGACY = "/usr/local/cuda"\n')
    findings = review(load_project(ROOT), repo, "main")
    assert rules_hit(findings) == {("setup_env.py", 5, "hardcoded-cuda-path")}


def test_build_scripts_in_python(repo):
    """nvcc flags and CUDA libraries handed over by Python build scripts; lines as DeepSpeed 0.19.8 writes
    them (deepspeed/ops/op_builder/fused_adam.py and async_io.py, PyPI sdist): the NVIDIA-only branch of a
    ROCm check is not flagged, an unguarded one is."""
    (repo / "op_builder").mkdir()
    (repo / "op_builder" / "fused_adam.py").write_text(
        "import sys\n\n\nclass FusedAdamBuilder:\n    def nvcc_args(self):\n"
        "        nvcc_flags = ['-O3'] + self.version_dependent_macros()\n"
        "        if not self.is_rocm_pytorch():\n            nvcc_flags.extend(\n"
        "                ['-allow-unsupported-compiler' if sys.platform == \"win32\" else '', '-lineinfo', '--use_fast_math'] +\n"
        "                self.compute_capability_args())\n        return nvcc_flags\n")
    (repo / "op_builder" / "async_io.py").write_text(
        "import os\n\n\ndef extra_ldflags(CUDA_HOME):\n    if CUDA_HOME is None:\n"
        "        ldflags = ['-laio']  # the ROCM case\n    else:\n"
        "        CUDA_LIB64 = os.path.join(CUDA_HOME, \"lib64\")\n"
        "        ldflags = [f'-L{CUDA_HOME}', f'-L{CUDA_LIB64}', '-laio', '-lcuda', '-lcudart']\n    return ldflags\n")
    hits = rules_hit(review(load_project(ROOT), repo, "main"))
    assert ("op_builder/async_io.py", 9, "cuda-library-link") in hits
    assert not any(f == "op_builder/fused_adam.py" for f, _, _ in hits), hits


def test_torch_pins_without_rocm(repo):
    """Plain torch / torchvision / torchaudio pins resolve to PyPI's CUDA wheels: flagged unless the pin
    carries +rocm or the file names a ROCm index; ranges and other torch-* packages are left alone."""
    (repo / "requirements.txt").write_text(
        "torch==2.5.1\ntorchvision==0.20.1\ntorchaudio == 2.5.1\ntorch[opt-einsum]==2.5.1\n"
        "torch>=2.0\ntorch-scatter==2.1.2\npytorch-lightning==2.4.0\ntorch==2.5.1+rocm6.2\n"
        "# torch==2.5.1\ntorch~=2.5.0\n")
    (repo / "requirements-rocm.txt").write_text("--index-url https://download.pytorch.org/whl/rocm6.2\n"
                                                "torch==2.5.1\ntorchvision==0.20.1\n")
    (repo / "Dockerfile").write_text("FROM python:3.12\nRUN pip install torch==2.5.1 numpy\n")
    (repo / "rocm.Dockerfile").write_text(
        "FROM python:3.12\nRUN pip install --index-url https://download.pytorch.org/whl/rocm6.2 torch==2.5.1\n")
    (repo / "pyproject.toml").write_text('[project]\nname = "x"\ndependencies = ["torch==2.5.1", "numpy"]\n')
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "pins")
    hits = {(f, n) for f, n, r in rules_hit(review(load_project(ROOT), repo, "main")) if r == "torch-pin-without-rocm"}
    assert hits == {("requirements.txt", n) for n in (1, 2, 3, 4, 10)} | {("Dockerfile", 2), ("pyproject.toml", 3)}


def test_python_prose_lines():
    text = 'x = 1\n"""doc\n/usr/local/cuda\n"""\ny = "/usr/local/cuda"  # c\n# only a comment\n'
    assert python_prose_lines(text) == {2, 3, 4, 6}


def test_rules_file_and_its_errors(tmp_path):
    rules = load_review_rules()
    assert {r.id for r in rules} >= {"cuda-runtime-api", "nvcc-only-flag", "cuda-library-link", "cuda-wheel",
                                     "hardcoded-cuda-path", "hardcoded-rocm-version-path", "torch-pin-without-rocm"}
    bad = tmp_path / "rules.yaml"
    bad.write_text("rules:\n  - {id: x, severity: fatal, message: m, hint: h, files: ['*'], patterns: [a]}\n")
    with pytest.raises(ConfigError, match=r"rules\[x\]\.severity: 'fatal'"):
        load_review_rules(bad)
    bad.write_text("rules:\n  - {id: y, severity: error, message: m, hint: h, files: ['*'], patterns: ['(']}\n")
    with pytest.raises(ConfigError, match=r"rules\[y\]\.patterns/unless_file: does not compile"):
        load_review_rules(bad)


def _buildctl(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "buildctl", "--root", str(ROOT), *args],
                          capture_output=True, text=True, check=False)


def test_command_exit_codes_and_formats(repo):
    assert _buildctl("review", "main", "--repo", str(repo)).returncode == 0
    (repo / "run.sh").write_text("nvcc -arch=sm_90 k.cu -lcudart\n")
    proc = _buildctl("review", "main", "--repo", str(repo), "--format", "github")
    assert proc.returncode == 1
    assert "::error file=run.sh,line=1," in proc.stdout and "title=nvcc-only-flag" in proc.stdout
    data = json.loads(_buildctl("review", "main", "--repo", str(repo), "--format", "json").stdout)
    assert {f["rule"] for f in data["findings"]} == {"nvcc-only-flag", "cuda-library-link"}
    bad = _buildctl("review", "no-such-branch", "--repo", str(repo))
    assert bad.returncode == 2 and "BASE: 'no-such-branch'" in bad.stderr
