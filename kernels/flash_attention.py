"""FlashAttention forward (causal and not) in TileLang.

Q, K, V, O: ``[batch, heads, seq_len, head_dim]`` contiguous (BHSD), fp16 or
bf16; head_dim 64 or 128; softmax statistics and the output accumulator in fp32.
Scale is ``1/sqrt(head_dim)``; the causal mask is top-left aligned (SDPA's
``is_causal=True``). One workgroup owns ``block_m`` query rows of one (batch,
head) and walks the K/V sequence in ``block_n`` steps with an online softmax
(exp2 with the log2(e) factor folded into the scale).
"""


import math

from kernels.configs import FlashAttentionConfig
from kernels.problems import FlashAttentionProblem

LOG2E = 1.4426950408889634



def build(problem: FlashAttentionProblem, config: FlashAttentionConfig):
    """Return the TileLang ``PrimFunc`` ``main(Q, K, V, O)`` for ``problem`` tiled by ``config``.

    Needs TileLang importable (no GPU). ``seq_len`` need not divide by the blocks.

    """
    import tilelang.language as T

    batch, heads, seq, dim = problem.batch, problem.heads, problem.seq_len, problem.head_dim
    causal, dtype = problem.causal, problem.dtype
    bm, bn = config.block_m, config.block_n
    scale = LOG2E / math.sqrt(dim)
    shape = [batch, heads, seq, dim]
    acc_t = "float32"

    @T.macro
    def qk(K, q_s, k_s, acc_s, k, bx, by, bz):
        T.copy(K[bz, by, k * bn : (k + 1) * bn, :], k_s)
        if causal:
            # Rows past seq_len are never stored; for the others the causal test
            # also hides keys past seq_len.
            for i, j in T.Parallel(bm, bn):
                acc_s[i, j] = T.if_then_else(bx * bm + i >= k * bn + j, 0, -T.infinity(acc_t))
        elif seq % bn != 0:
            for i, j in T.Parallel(bm, bn):
                acc_s[i, j] = T.if_then_else(k * bn + j < seq, 0, -T.infinity(acc_t))
        else:
            T.clear(acc_s)
        T.gemm(q_s, k_s, acc_s, transpose_B=True, policy=T.GemmWarpPolicy.FullRow)

    @T.macro
    def pv(V, v_s, p, acc_o, k, by, bz):
        T.copy(V[bz, by, k * bn : (k + 1) * bn, :], v_s)
        T.gemm(p, v_s, acc_o, policy=T.GemmWarpPolicy.FullRow)

    @T.macro
    def online_softmax(acc_s, m_new, m_old, rescale, row_sum, l_sum):
        # Running max and sum over the key blocks seen so far; acc_s becomes exp2(S - max).
        T.copy(m_new, m_old)
        T.fill(m_new, -T.infinity(acc_t))
        T.reduce_max(acc_s, m_new, dim=1, clear=False)
        for i in T.Parallel(bm):
            rescale[i] = T.exp2(m_old[i] * scale - m_new[i] * scale)
        for i, j in T.Parallel(bm, bn):
            acc_s[i, j] = T.exp2(acc_s[i, j] * scale - m_new[i] * scale)
        T.reduce_sum(acc_s, row_sum, dim=1)
        for i in T.Parallel(bm):
            l_sum[i] = l_sum[i] * rescale[i] + row_sum[i]

    @T.macro
    def softmax(acc_s, p, m_new, m_old, rescale, row_sum, l_sum):
        online_softmax(acc_s, m_new, m_old, rescale, row_sum, l_sum)
        T.copy(acc_s, p)

    @T.macro
    def softmax_via_lds(acc_s, p_s, p, m_new, m_old, rescale, row_sum, l_sum):
        # RDNA3 WMMA: S (D layout) and P (A layout) differ; store P to LDS in
        # S's layout and read it back in P's.
        online_softmax(acc_s, m_new, m_old, rescale, row_sum, l_sum)
        for i, j in T.Parallel(bm, bn):
            p_s[i, j] = T.cast(acc_s[i, j], dtype)
        T.copy(p_s, p)

    @T.macro
    def rescale_o(acc_o, rescale):
        for i, j in T.Parallel(bm, dim):
            acc_o[i, j] *= rescale[i]

    @T.prim_func
    def main(
        Q: T.Tensor(shape, dtype),
        K: T.Tensor(shape, dtype),
        V: T.Tensor(shape, dtype),
        O: T.Tensor(shape, dtype),
    ):
        with T.Kernel(T.ceildiv(seq, bm), heads, batch, threads=config.threads) as (bx, by, bz):
            q_s = T.alloc_shared([bm, dim], dtype)
            k_s = T.alloc_shared([bn, dim], dtype)
            v_s = T.alloc_shared([bn, dim], dtype)
            acc_s = T.alloc_fragment([bm, bn], acc_t)
            p = T.alloc_fragment([bm, bn], dtype)
            acc_o = T.alloc_fragment([bm, dim], acc_t)
            m_new = T.alloc_fragment([bm], acc_t)
            m_old = T.alloc_fragment([bm], acc_t)
            rescale = T.alloc_fragment([bm], acc_t)
            row_sum = T.alloc_fragment([bm], acc_t)
            l_sum = T.alloc_fragment([bm], acc_t)

            T.copy(Q[bz, by, bx * bm : (bx + 1) * bm, :], q_s)
            T.fill(acc_o, 0)
            T.fill(l_sum, 0)
            T.fill(m_new, -T.infinity(acc_t))
            steps = (
                T.min(T.ceildiv(seq, bn), T.ceildiv((bx + 1) * bm, bn)) if causal else T.ceildiv(seq, bn)
            )
            if config.p_via_shared:
                p_s = T.alloc_shared([bm, bn], dtype)
                for k in T.Pipelined(steps, num_stages=config.num_stages):
                    qk(K, q_s, k_s, acc_s, k, bx, by, bz)
                    softmax_via_lds(acc_s, p_s, p, m_new, m_old, rescale, row_sum, l_sum)
                    rescale_o(acc_o, rescale)
                    pv(V, v_s, p, acc_o, k, by, bz)
            else:
                for k in T.Pipelined(steps, num_stages=config.num_stages):
                    qk(K, q_s, k_s, acc_s, k, bx, by, bz)
                    softmax(acc_s, p, m_new, m_old, rescale, row_sum, l_sum)
                    rescale_o(acc_o, rescale)
                    pv(V, v_s, p, acc_o, k, by, bz)
            for i, j in T.Parallel(bm, dim):
                acc_o[i, j] /= l_sum[i]
            T.copy(acc_o, O[bz, by, bx * bm : (bx + 1) * bm, :])

    return main


def reference(q, k, v, causal: bool):
    """Attention in float64 (explicit softmax), returned as float64 ``[B, H, S, D]``.

    Memory: builds the ``[B, H, S, S]`` score matrix; callers check on a slice of
    heads for long sequences.
    """
    import torch

    qd, kd, vd = q.double(), k.double(), v.double()
    scores = qd @ kd.transpose(-1, -2) / math.sqrt(q.shape[-1])
    if causal:
        s = q.shape[-2]
        mask = torch.ones(s, s, dtype=torch.bool, device=q.device).tril()
        scores = scores.masked_fill(~mask, float("-inf"))
    return torch.softmax(scores, dim=-1) @ vd


def torch_baseline(q, k, v, causal: bool):
    """SDPA restricted to its flash backend (what the kernel is measured against)."""
    import torch
    from torch.nn.attention import SDPBackend, sdpa_kernel

    with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
        return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)


def make_inputs(problem: FlashAttentionProblem, device: str, seed: int):
    """Fresh standard-normal Q, K, V and a NaN-poisoned O, all ``[B, H, S, D]`` of the dtype."""
    import torch

    dt = getattr(torch, problem.dtype)
    gen = torch.Generator(device=device).manual_seed(seed)
    shape = (problem.batch, problem.heads, problem.seq_len, problem.head_dim)
    q, k, v = (torch.randn(shape, device=device, generator=gen, dtype=dt) for _ in range(3))
    o = torch.full(shape, float("nan"), device=device, dtype=dt)
    return q, k, v, o
