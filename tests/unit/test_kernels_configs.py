"""Tile tables, targets and problem shapes of kernels/ (pure Python: no TileLang, no torch)."""

from __future__ import annotations

import pytest

from kernels.configs import (
    DEFAULTS,
    FlashAttentionConfig,
    GemmConfig,
    RmsNormConfig,
    autotune_space,
    default_config,
    fits,
)
from kernels.problems import FlashAttentionProblem, GemmProblem, RmsNormProblem
from kernels.targets import AMD_TARGETS, TARGETS, get_target

KIB = 1024


@pytest.mark.parametrize("kernel", sorted(DEFAULTS))
@pytest.mark.parametrize("target", sorted(TARGETS))
def test_every_default_fits_its_target(kernel, target):
    cfg = default_config(kernel, target)
    spec = get_target(target)
    assert cfg.lds_bytes() <= spec.lds_bytes
    assert cfg.threads % spec.wavefront == 0


@pytest.mark.parametrize("kernel", sorted(DEFAULTS))
@pytest.mark.parametrize("target", sorted(TARGETS))
def test_autotune_space_starts_with_default_and_holds_only_distinct_fitting_configs(kernel, target):
    space = autotune_space(kernel, target)
    assert space[0] == default_config(kernel, target)
    assert len(space) == len(set(space)) >= 2
    assert all(fits(c, get_target(target)) for c in space)


def test_gfx950_tiles_use_its_160_kib_lds_and_would_not_fit_gfx942():
    gfx942, gfx950 = get_target("gfx942"), get_target("gfx950")
    assert gfx950.lds_bytes == 160 * KIB and gfx942.lds_bytes == 64 * KIB
    for kernel in ("gemm", "flash_attention"):
        cfg = default_config(kernel, "gfx950")
        assert cfg.lds_bytes() > 64 * KIB
        assert fits(cfg, gfx950) and not fits(cfg, gfx942)


def test_rdna3_is_wave32_and_its_attention_passes_p_through_lds():
    spec = get_target("gfx1100")
    assert (spec.family, spec.wavefront) == ("RDNA3", 32)
    cfg = default_config("flash_attention", "gfx1100")
    assert cfg.p_via_shared and cfg.block_m <= 32 and cfg.block_n <= 32
    assert not any(default_config("flash_attention", t).p_via_shared for t in ("gfx90a", "gfx942", "gfx950"))


def test_cdna_targets_are_wave64():
    assert [get_target(t).wavefront for t in ("gfx90a", "gfx942", "gfx950")] == [64, 64, 64]
    assert not fits(RmsNormConfig(1, 96), get_target("gfx942"))  # 96 threads: 1.5 wavefronts
    assert fits(RmsNormConfig(1, 96), get_target("gfx1100"))


def test_lds_accounting():
    # A and B stages, C overlaid on them after the K loop (the larger of the two counts).
    assert GemmConfig(128, 256, 64, 3, 256).lds_bytes() == (128 + 256) * 64 * 2 * 3
    assert GemmConfig(256, 256, 16, 1, 256).lds_bytes() == 256 * 256 * 2
    assert GemmConfig(256, 256, 16, 1, 256, epilogue_shared=False).lds_bytes() == 512 * 16 * 2
    assert FlashAttentionConfig(128, 64, 2, 256).lds_bytes(128) == 128 * 128 * 2 + 2 * 64 * 128 * 2 * 2
    assert FlashAttentionConfig(32, 32, 1, 64, p_via_shared=True).lds_bytes(64) == (32 * 64 + 2 * 32 * 64 + 32 * 32) * 2
    assert not fits(GemmConfig(256, 256, 64, 2, 512), get_target("gfx942"))


def test_tilelang_target_forms():
    assert get_target("gfx942").tilelang_target() == {"kind": "hip", "mcpu": "gfx942"}
    assert get_target("gfx1100").tilelang_target() == {"kind": "hip", "mcpu": "gfx1100"}
    # Hopper builds for the arch-specific target that has WGMMA.
    assert get_target("sm_90").tilelang_target() == {"kind": "cuda", "arch": "sm_90a"}
    assert set(AMD_TARGETS) == {"gfx90a", "gfx942", "gfx950", "gfx1100", "gfx1101", "gfx1201"}


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: get_target("gfx908"), "target 'gfx908' unknown; allowed: gfx90a, gfx942, gfx950, gfx1100, gfx1101, gfx1201, sm_90"),
        (lambda: default_config("softmax", "gfx942"), "kernel 'softmax' unknown; allowed: gemm, flash_attention, rmsnorm"),
        (lambda: autotune_space("gemm", "sm_80"), "target 'sm_80' unknown"),
        (lambda: GemmProblem(4096, 0, 4096), "n must be a positive int, got 0"),
        (lambda: GemmProblem(64, 64, 64, "float32"), "dtype 'float32' not supported; allowed: float16, bfloat16"),
        (lambda: FlashAttentionProblem(1, 1, 128, head_dim=96), "head_dim must be 64 or 128, got 96"),
        (lambda: RmsNormProblem(16, 16, eps=0.0), "eps must be in (0, 1), got 0.0"),
    ],
)
def test_bad_input_gets_one_line_naming_what_is_allowed(call, message):
    with pytest.raises(ValueError) as info:
        call()
    assert message in str(info.value)
    assert "\n" not in str(info.value)


def test_problem_counts():
    assert GemmProblem(4096, 4096, 4096).flops() == 2 * 4096**3
    full = FlashAttentionProblem(8, 32, 4096, 128, causal=False)
    causal = FlashAttentionProblem(8, 32, 4096, 128, causal=True)
    assert full.flops() == 4 * 8 * 32 * 4096 * 4096 * 128 == 2 * causal.flops()
    assert RmsNormProblem(65536, 8192).bytes_moved() == (2 * 65536 * 8192 + 8192) * 2
