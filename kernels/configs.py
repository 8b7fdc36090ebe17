"""Tile configurations per target, and the small autotune space around each.

A config is plain data (frozen dataclass). ``lds_bytes`` gives an upper bound of
the LDS / shared memory one workgroup of that config allocates, used to keep every
config inside its target's limit (see ``kernels.targets``). Sizes are in elements
unless a name says bytes.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from kernels.targets import TargetSpec, get_target

# Bytes per element of the fp16 / bf16 inputs every kernel here takes.
HALF_BYTES = 2


@dataclass(frozen=True)
class GemmConfig:
    """GEMM tile: one workgroup computes a ``block_m x block_n`` tile of C.

    Attributes:
        block_m, block_n, block_k: tile extents (elements).
        num_stages: software-pipeline depth of the K loop (buffers of A and B tiles);
            0 means no pipelining.
        threads: threads per workgroup (a multiple of the target's wavefront).
        swizzle_panel: tile rasterization panel width (L2 reuse); 0 turns it off.
        epilogue_shared: stage C through LDS before the global store (wide stores).
    """

    block_m: int
    block_n: int
    block_k: int
    num_stages: int
    threads: int
    swizzle_panel: int = 0
    epilogue_shared: bool = True

    def lds_bytes(self) -> int:
        """LDS bytes per workgroup for fp16/bf16 inputs.

        The C staging tile is live only after the K loop, so TileLang's shared
        memory planner (MergeSharedMemoryAllocations) lays it over the A/B buffers:
        the need is the larger of the two, not their sum.
        """
        stages = max(self.num_stages, 1)
        ab = (self.block_m + self.block_n) * self.block_k * HALF_BYTES * stages
        c = self.block_m * self.block_n * HALF_BYTES if self.epilogue_shared else 0
        return max(ab, c)


@dataclass(frozen=True)
class FlashAttentionConfig:
    """FlashAttention forward tile: one workgroup owns ``block_m`` query rows of one head.

    Attributes:
        block_m: query rows per workgroup; block_n: key/value rows per inner step.
        num_stages: pipeline depth of the K/V loop.
        threads: threads per workgroup.
        p_via_shared: pass P (softmax probabilities) from the first GEMM's output
            layout to the second GEMM's input layout through LDS. Needed on RDNA3
            WMMA, whose D and A register layouts differ (TileLang's AMD example notes
            the same and limits blocks to 32x32 there).
    """

    block_m: int
    block_n: int
    num_stages: int
    threads: int
    p_via_shared: bool = False

    def lds_bytes(self, head_dim: int = 128) -> int:
        """Upper bound of LDS bytes per workgroup for ``head_dim`` (fp16/bf16)."""
        stages = max(self.num_stages, 1)
        q = self.block_m * head_dim * HALF_BYTES
        kv = 2 * self.block_n * head_dim * HALF_BYTES * stages
        p = self.block_m * self.block_n * HALF_BYTES if self.p_via_shared else 0
        return q + kv + p


@dataclass(frozen=True)
class RmsNormConfig:
    """RMSNorm tile: one workgroup normalizes ``block_rows`` whole rows held in registers.

    Attributes:
        block_rows: token rows per workgroup.
        threads: threads per workgroup.
    """

    block_rows: int
    threads: int

    def lds_bytes(self) -> int:
        """Upper bound of LDS bytes: rows live in registers; the cross-wave sum of
        squares uses at most one fp32 slot per thread and row."""
        return self.block_rows * self.threads * 4


Config = GemmConfig | FlashAttentionConfig | RmsNormConfig

# Default config per kernel and target. AMD entries are chosen from the LDS and
# register budget (64 KiB LDS on gfx90a/gfx942/gfx1100, 160 KiB on gfx950;
# 512 VGPRs+AGPRs per lane on CDNA) and compiled offline, not yet timed on AMD
# hardware; sm_90 entries are the autotune winners on an H200
# (kernels/bench/results/h200.json, docs/benchmarks.md).
DEFAULTS: dict[str, dict[str, Config]] = {
    "gemm": {
        "gfx90a": GemmConfig(128, 128, 32, 2, 256, 8, epilogue_shared=False),
        "gfx942": GemmConfig(256, 128, 64, 1, 256, 8, epilogue_shared=False),
        "gfx950": GemmConfig(256, 256, 64, 2, 512, 8, epilogue_shared=False),
        "gfx1100": GemmConfig(128, 128, 32, 2, 128, 8, epilogue_shared=False),
        "gfx1101": GemmConfig(128, 128, 32, 2, 128, 8, epilogue_shared=False),
        "gfx1201": GemmConfig(128, 128, 32, 2, 128, 8, epilogue_shared=False),
        "sm_90": GemmConfig(128, 256, 64, 3, 256, 10),
    },
    "flash_attention": {
        "gfx90a": FlashAttentionConfig(64, 64, 1, 256),
        "gfx942": FlashAttentionConfig(64, 64, 1, 256),
        "gfx950": FlashAttentionConfig(128, 128, 1, 256),
        "gfx1100": FlashAttentionConfig(32, 32, 1, 64, p_via_shared=True),
        "gfx1101": FlashAttentionConfig(32, 32, 1, 64, p_via_shared=True),
        "gfx1201": FlashAttentionConfig(32, 32, 1, 64, p_via_shared=True),
        "sm_90": FlashAttentionConfig(128, 128, 1, 256),
    },
    "rmsnorm": {
        "gfx90a": RmsNormConfig(1, 256),
        "gfx942": RmsNormConfig(1, 256),
        "gfx950": RmsNormConfig(1, 256),
        "gfx1100": RmsNormConfig(1, 256),
        "gfx1101": RmsNormConfig(1, 256),
        "gfx1201": RmsNormConfig(1, 256),
        "sm_90": RmsNormConfig(1, 256),
    },
}

# Variations tried around the default by the autotuner (each applied with
# dataclasses.replace); configs that break the target's LDS limit are dropped.
_SPACE: dict[str, dict[str, list[dict]]] = {
    "gemm": {
        "amd": [
            {},
            {"num_stages": 0},
            {"block_k": 32},
            {"block_m": 128, "block_n": 128},
            {"swizzle_panel": 0},
        ],
        "nvidia": [
            {},
            {"num_stages": 4},
            {"block_m": 256, "block_n": 128},
            {"block_k": 32, "num_stages": 4},
            {"swizzle_panel": 4},
            {"block_m": 128, "block_n": 128, "num_stages": 4, "threads": 256},
        ],
    },
    "flash_attention": {
        "amd": [{}, {"num_stages": 0}, {"block_n": 32}, {"threads": 128}],
        "nvidia": [{}, {"num_stages": 2}, {"block_n": 64}, {"block_m": 64, "threads": 128}],
    },
    "rmsnorm": {
        "amd": [{}, {"threads": 512}, {"threads": 128}, {"block_rows": 2}],
        "nvidia": [{}, {"threads": 512}, {"threads": 128}, {"block_rows": 2}, {"threads": 1024}],
    },
}


def _check_kernel(kernel: str) -> None:
    if kernel not in DEFAULTS:
        raise ValueError(f"kernel {kernel!r} unknown; allowed: {', '.join(DEFAULTS)}")


def fits(config: Config, target: TargetSpec) -> bool:
    """True when ``config`` stays inside ``target``'s LDS limit and wavefront multiple."""
    return config.lds_bytes() <= target.lds_bytes and config.threads % target.wavefront == 0


def default_config(kernel: str, target: str) -> Config:
    """Default tile config of ``kernel`` (``gemm``, ``flash_attention``, ``rmsnorm``) for ``target``.

    Raises:
        ValueError: unknown kernel or target.
    """
    _check_kernel(kernel)
    get_target(target)
    return DEFAULTS[kernel][target]


def autotune_space(kernel: str, target: str) -> list[Config]:
    """Distinct configs to try for ``kernel`` on ``target``, default first, all fitting the target.

    Raises:
        ValueError: unknown kernel or target.
    """
    spec = get_target(target)
    base = default_config(kernel, target)
    out: list[Config] = []
    for change in _SPACE[kernel][spec.vendor]:
        cand = replace(base, **change)
        if fits(cand, spec) and cand not in out:
            out.append(cand)
    return out
