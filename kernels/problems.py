"""Problem shapes of the three kernels, validated once, passed around as data."""

from __future__ import annotations

from dataclasses import dataclass

DTYPES = ("float16", "bfloat16")


def _check_dtype(dtype: str) -> None:
    if dtype not in DTYPES:
        raise ValueError(f"dtype {dtype!r} not supported; allowed: {', '.join(DTYPES)}")


def _check_positive(**dims: int) -> None:
    for name, value in dims.items():
        if not isinstance(value, int) or value <= 0:
            raise ValueError(f"{name} must be a positive int, got {value!r}")


@dataclass(frozen=True)
class GemmProblem:
    """C[M, N] = A[M, K] @ B[K, N]; A, B, C row-major, fp16 or bf16, fp32 accumulate.

    Raises:
        ValueError: a dimension is not a positive int or the dtype is not fp16/bf16.
    """

    m: int
    n: int
    k: int
    dtype: str = "float16"

    def __post_init__(self) -> None:
        _check_positive(m=self.m, n=self.n, k=self.k)
        _check_dtype(self.dtype)

    def flops(self) -> int:
        """Floating-point operations (multiply and add counted apart)."""
        return 2 * self.m * self.n * self.k


@dataclass(frozen=True)
class FlashAttentionProblem:
    """O = softmax(Q K^T / sqrt(head_dim) [+ causal mask]) V.

    Q, K, V, O are ``[batch, heads, seq_len, head_dim]`` (BHSD, the layout
    ``torch.nn.functional.scaled_dot_product_attention`` takes), contiguous,
    fp16 or bf16; softmax in fp32. The causal mask is top-left aligned
    (query i sees keys 0..i), as SDPA's ``is_causal=True``.

    Raises:
        ValueError: bad dimension, dtype, or head_dim not 64 / 128.
    """

    batch: int
    heads: int
    seq_len: int
    head_dim: int = 128
    causal: bool = False
    dtype: str = "float16"

    def __post_init__(self) -> None:
        _check_positive(batch=self.batch, heads=self.heads, seq_len=self.seq_len)
        if self.head_dim not in (64, 128):
            raise ValueError(f"head_dim must be 64 or 128, got {self.head_dim!r}")
        _check_dtype(self.dtype)

    def flops(self) -> int:
        """Operations of the two GEMMs (QK^T and PV); halved when causal."""
        full = 4 * self.batch * self.heads * self.seq_len * self.seq_len * self.head_dim
        return full // 2 if self.causal else full


@dataclass(frozen=True)
class RmsNormProblem:
    """y[t, :] = x[t, :] / sqrt(mean(x[t, :]^2) + eps) * weight.

    x and y are ``[tokens, hidden]`` row-major, weight is ``[hidden]``, all of
    ``dtype``; the sum of squares and the scaling run in fp32.

    Raises:
        ValueError: bad dimension, dtype or eps.
    """

    tokens: int
    hidden: int
    dtype: str = "bfloat16"
    eps: float = 1e-6

    def __post_init__(self) -> None:
        _check_positive(tokens=self.tokens, hidden=self.hidden)
        _check_dtype(self.dtype)
        if not 0 < self.eps < 1:
            raise ValueError(f"eps must be in (0, 1), got {self.eps!r}")

    def bytes_moved(self) -> int:
        """Fewest bytes through device memory: x read, y written, weight read once."""
        return (2 * self.tokens * self.hidden + self.hidden) * 2
