"""RMSNorm in TileLang: y = x / sqrt(mean(x^2) + eps) * weight, one pass over x.

x, y: ``[tokens, hidden]`` row-major; weight: ``[hidden]``; all fp16 or bf16.
The sum of squares, the scale and the product with weight run in fp32, with one
rounding to the output dtype. Each workgroup keeps ``block_rows`` whole rows in
registers, so x is read from device memory once and y written once: the kernel
is bound by memory bandwidth (``RmsNormProblem.bytes_moved``).
"""


from kernels.configs import RmsNormConfig
from kernels.problems import RmsNormProblem


def build(problem: RmsNormProblem, config: RmsNormConfig):
    """Return the TileLang ``PrimFunc`` ``main(X, W, Y)`` for ``problem`` tiled by ``config``.

    Needs TileLang importable (no GPU).
    """
    import tilelang.language as T

    tokens, hidden, dtype, eps = problem.tokens, problem.hidden, problem.dtype, problem.eps
    rows = config.block_rows

    @T.prim_func
    def main(
        X: T.Tensor((tokens, hidden), dtype),
        W: T.Tensor((hidden,), dtype),
        Y: T.Tensor((tokens, hidden), dtype),
    ):
        with T.Kernel(T.ceildiv(tokens, rows), threads=config.threads) as bx:
            x_f = T.alloc_fragment((rows, hidden), dtype)
            sq = T.alloc_fragment((rows, hidden), "float32")
            inv = T.alloc_fragment((rows,), "float32")
            y_f = T.alloc_fragment((rows, hidden), dtype)
            T.copy(X[bx * rows, 0], x_f)
            for i, j in T.Parallel(rows, hidden):
                sq[i, j] = T.cast(x_f[i, j], "float32") * T.cast(x_f[i, j], "float32")
            T.reduce_sum(sq, inv, dim=1)
            for i in T.Parallel(rows):
                inv[i] = T.rsqrt(inv[i] / hidden + eps)
            for i, j in T.Parallel(rows, hidden):
                y_f[i, j] = T.cast(
                    T.cast(x_f[i, j], "float32") * inv[i] * T.cast(W[j], "float32"), dtype
                )
            T.copy(y_f, Y[bx * rows, 0])

    return main


def reference(x, weight, eps: float):
    """float64 RMSNorm of ``x [T, H]`` with ``weight [H]``, returned as float64."""
    import torch

    xd = x.double()
    return xd * torch.rsqrt(xd.pow(2).mean(-1, keepdim=True) + eps) * weight.double()


def torch_baseline(x, weight, eps: float):
    """Eager RMSNorm as model code writes it (Hugging Face ``LlamaRMSNorm.forward``)."""
    import torch

    h = x.to(torch.float32)
    h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + eps)
    return weight * h.to(x.dtype)


def make_inputs(problem: RmsNormProblem, device: str, seed: int):
    """Fresh x (standard normal), weight (1 + 0.1 * normal) and a NaN-poisoned y."""
    import torch

    dt = getattr(torch, problem.dtype)
    gen = torch.Generator(device=device).manual_seed(seed)
    x = torch.randn(problem.tokens, problem.hidden, device=device, generator=gen, dtype=dt)
    w = (1 + 0.1 * torch.randn(problem.hidden, device=device, generator=gen)).to(dt)
    y = torch.full((problem.tokens, problem.hidden), float("nan"), device=device, dtype=dt)
    return x, w, y
