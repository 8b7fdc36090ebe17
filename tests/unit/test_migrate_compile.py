"""How the migrate recipe splits a unit's compile into hipcc calls: archs whose defines are equal share
one call (one host pass), archs whose wavefront define differs get one call each, and a C/C++ source
without device code is one host-only call whose result stands for every arch."""

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "recipes" / "migrate"))

from migrate import cpp  # noqa: E402
from migrate.archs import Arch  # noqa: E402
from migrate.compile import Job, call_groups, host_only  # noqa: E402

GFX942 = Arch("gfx942", "CDNA3", 64, 65536)
GFX90A = Arch("gfx90a", "CDNA2", 64, 65536)
GFX1100 = Arch("gfx1100", "RDNA3", 32, 65536)
GROUPS = [[GFX942, GFX90A], [GFX1100]]


def _names(calls):
    return [[a.name for a in call] for call in calls]


def test_archs_with_equal_defines_share_one_call():
    job = Job("k.cu", Path("k.cu"), (), {64: ("HIP_ENABLE_WARP_SYNC_BUILTINS",), 32: ("HIP_ENABLE_WARP_SYNC_BUILTINS",)})
    assert _names(call_groups(job, GROUPS)) == [["gfx942", "gfx90a", "gfx1100"]]
    assert _names(call_groups(Job("k.cu", Path("k.cu"), ()), GROUPS)) == [["gfx942", "gfx90a", "gfx1100"]]


def test_a_wavefront_define_keeps_one_call_per_value():
    job = Job("k.cu", Path("k.cu"), (), {64: ("ROCM_WAVEFRONT_SIZE=64",), 32: ("ROCM_WAVEFRONT_SIZE=32",)})
    assert _names(call_groups(job, GROUPS)) == [["gfx942", "gfx90a"], ["gfx1100"]]


@pytest.mark.parametrize("kind, text, expected", [
    ("cxx", "#include <torch/extension.h>\nPYBIND11_MODULE(m, x) { x.def(\"f\", &f); }\n", True),
    ("cxx", "#include <hip/hip_runtime.h>\nvoid f(hipStream_t s) { hipStreamSynchronize(s); }\n"
            "// a __global__ kernel lives in k.cu\nconst char* s = \"<<<\";\n", True),
    ("cxx", "__global__ void k(float* x) { x[0] = 1; }\n", False),
    ("cxx", "__device__ inline float twice(float x) { return 2 * x; }\n", False),
    ("cxx", "void f() { hipLaunchKernelGGL(k, dim3(1), dim3(64), 0, 0); }\n", False),
    ("cxx", "void f() { k<<<1, 64>>>(); }\n", False),
    ("cu", "void f() {}\n", False),
])
def test_host_only_units_are_c_cxx_sources_without_device_code(kind, text, expected):
    assert host_only(kind, cpp.blank(text)) is expected
