"""TileLang kernels on a real GPU: correct against a float64 reference on fresh random inputs.

Run with `pytest -m amdgpu tests/hardware`. Skipped without /dev/kfd (no AMD GPU). The target is read
from the GPU (gcnArchName, e.g. gfx942); its arch needs a tile table in kernels.targets.
ROCMIG_KERNELS_ANY_GPU=1 runs the same tests on whatever GPU torch sees (used to check this file on
an NVIDIA H200, target sm_90).
"""

from __future__ import annotations

import os
import random

import pytest

from kernels import api
from kernels.bench.gpu import ERROR_BOUND, _check, _reference, _torch_call, detect_target, rel_error
from kernels.problems import FlashAttentionProblem, GemmProblem, RmsNormProblem

ANY_GPU = os.environ.get("ROCMIG_KERNELS_ANY_GPU") == "1"
pytestmark = [
    pytest.mark.amdgpu,
    pytest.mark.skipif(not (os.path.exists("/dev/kfd") or ANY_GPU), reason="no AMD GPU (/dev/kfd missing)"),
]

CASES = [
    ("gemm", GemmProblem(2048, 1024, 512, "float16")),
    ("gemm", GemmProblem(1024, 2048, 1024, "bfloat16")),
    ("flash_attention", FlashAttentionProblem(2, 4, 1024, 128, False, "float16")),
    ("flash_attention", FlashAttentionProblem(2, 4, 1024, 128, True, "float16")),
    ("flash_attention", FlashAttentionProblem(2, 4, 2048, 64, True, "bfloat16")),
    ("rmsnorm", RmsNormProblem(4096, 4096, "bfloat16")),
    ("rmsnorm", RmsNormProblem(1000, 8192, "float16")),
]


@pytest.fixture(scope="module")
def target():
    return detect_target()


@pytest.mark.parametrize(("kernel", "problem"), CASES, ids=lambda v: v if isinstance(v, str) else None)
def test_kernel_matches_reference_on_fresh_inputs(target, kernel, problem):
    fn = api.compile(kernel, target, problem)
    bound = ERROR_BOUND[problem.dtype]
    for _ in range(2):  # two independent draws: a kernel must be right on any valid input
        error, tensors = _check(kernel, problem, fn, random.randrange(1 << 30))
        assert error <= bound, f"{kernel} {problem} on {target}: rel. error {error:.2e} > {bound:.0e}"
    ref, view = _reference(kernel, problem, tensors)
    torch_error = rel_error(view(_torch_call(kernel, problem, tensors)()), ref)
    # Not far worse than torch's own operator on the same inputs.
    assert error <= max(4 * torch_error, bound / 4), (error, torch_error)
