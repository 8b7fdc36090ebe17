"""GEMM: C = A @ B for fp16 / bf16 with fp32 accumulation, written in TileLang.

Layouts: A ``[M, K]``, B ``[K, N]``, C ``[M, N]``, all row-major (what
``torch.matmul(a, b)`` takes for contiguous tensors). Each workgroup computes one
``block_m x block_n`` tile of C; the K loop is software-pipelined through LDS and
the tile product runs on the matrix cores (MFMA on CDNA, WMMA on RDNA3, WGMMA on
Hopper), as TileLang's ``T.gemm`` lowers it for the target.
"""


from kernels.configs import GemmConfig
from kernels.problems import GemmProblem


def build(problem: GemmProblem, config: GemmConfig):
    """Return the TileLang ``PrimFunc`` ``main(A, B, C)`` for ``problem`` tiled by ``config``.

    Needs TileLang importable (no GPU). M, N, K need not be multiples of the tile.
    """
    import tilelang.language as T

    m, n, k, dtype = problem.m, problem.n, problem.k, problem.dtype
    bm, bn, bk = config.block_m, config.block_n, config.block_k

    @T.prim_func
    def main(
        A: T.Tensor((m, k), dtype),
        B: T.Tensor((k, n), dtype),
        C: T.Tensor((m, n), dtype),
    ):
        with T.Kernel(T.ceildiv(n, bn), T.ceildiv(m, bm), threads=config.threads) as (bx, by):
            a_tile = T.alloc_shared((bm, bk), dtype)
            b_tile = T.alloc_shared((bk, bn), dtype)
            acc = T.alloc_fragment((bm, bn), "float32")
            if config.swizzle_panel > 0:
                T.use_swizzle(panel_size=config.swizzle_panel)
            T.clear(acc)
            for kk in T.Pipelined(T.ceildiv(k, bk), num_stages=config.num_stages):
                T.copy(A[by * bm, kk * bk], a_tile)
                T.copy(B[kk * bk, bx * bn], b_tile)
                T.gemm(a_tile, b_tile, acc)
            if config.epilogue_shared:
                c_tile = T.alloc_shared((bm, bn), dtype)
                T.copy(acc, c_tile)
                T.copy(c_tile, C[by * bm, bx * bn])
            else:
                T.copy(acc, C[by * bm, bx * bn])

    return main


def reference(a, b):
    """fp32-accumulated reference C = A @ B computed in float64, returned as float64.

    Args:
        a: torch tensor ``[M, K]``; b: torch tensor ``[K, N]``.
    """
    return a.double() @ b.double()


def torch_baseline(a, b):
    """What the kernel is measured against: ``torch.matmul`` (cuBLAS / hipBLASLt)."""
    import torch

    return torch.matmul(a, b)


def make_inputs(problem: GemmProblem, device: str, seed: int):
    """Fresh random A, B (standard normal, scaled 1/sqrt(K) on A) and a NaN-poisoned C.

    Returns:
        ``(a, b, c)`` torch tensors on ``device``; C is the output buffer.
    """
    import torch

    dt = getattr(torch, problem.dtype)
    gen = torch.Generator(device=device).manual_seed(seed)
    a = torch.randn(problem.m, problem.k, device=device, generator=gen) / problem.k**0.5
    b = torch.randn(problem.k, problem.n, device=device, generator=gen)
    c = torch.full((problem.m, problem.n), float("nan"), device=device, dtype=dt)
    return a.to(dt), b.to(dt), c
