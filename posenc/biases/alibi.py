"""ALiBi (Press, Smith and Lewis, "Train Short, Test Long", ICLR 2022): no position vector at
all; each head adds ``-slope * distance`` to its attention scores, a linear penalty on how far
back the key is.

Slopes (``alibi_slopes``): for ``n`` heads, ``n`` a power of two, ``2 ** (-m * k / n)``,
``k = 1..n``, with ``m = alibi_bias_max`` (8 in the paper and BLOOM): a geometric sequence from
``2 ** (-m / n)`` down to ``2 ** -m``. Otherwise, with ``n`` the largest power of two below the
head count, those ``n`` slopes followed by the first ``num_heads - n`` of the odd-numbered
slopes of ``2n`` heads, ``2 ** (-m * k / (2n))`` for ``k = 1, 3, 5, ...``. This is the ordering
of the paper's code, of BLOOM (transformers' ``modeling_bloom._get_alibi_slopes``) and of MPT
(``modeling_mpt.build_mpt_alibi_tensor``, which lists the ``2n`` slopes and takes the
even-numbered ones, then the odd-numbered ones: the same list), so no option is needed to
choose between them. They differ only in float32 rounding: BLOOM raises the float32-rounded
``2 ** (-8 / n)`` to the powers ``k``, which multiplies its rounding error by ``k`` (measured
for 1 to 64 heads: up to ``8 * 2**-24`` relative), MPT's are within ``1.3 * 2**-24``. The
slopes here are float64, within one rounding of the exact values.

Bias (``alibi_bias``, shape ``(num_heads, query_length, key_length)``), query ``i`` at position
``key_offset + i``, key ``j`` at ``j`` (see ``posenc.biases.relative``):

- ``causal=False``: ``-slope * |key_offset + i - j|``, the bidirectional form (encoders).
- ``causal=True``: ``-slope * (key_offset + i - j)`` where ``j <= key_offset + i`` and
  ``-inf`` above that diagonal: the causal mask comes with it, so ``scores + bias`` is all a
  causal attention adds (torch's ``scaled_dot_product_attention(attn_mask=bias)``).

BLOOM and MPT add ``slope * j`` (BLOOM) or ``slope * (j - (L - 1))`` (MPT) instead, with the
causal mask applied separately. On the keys a query may see, those differ from the causal form
here by ``slope * (key_offset + i)`` or ``slope * (key_offset + i - L + 1)``, a constant along each
row, and softmax ignores a constant added to a whole row: the attention weights are the same.
"""


import numpy as np
import numpy.typing as npt

from ..engine import checks
from . import relative

__all__ = ["alibi_bias", "alibi_slopes"]

_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


def check_num_heads(num_heads):
    return checks.check_width(checks.check_int_at_least(num_heads, "num_heads", 1), "num_heads")


def check_dtype(dtype):
    return checks.check_numpy_dtype(dtype, _DTYPES, "numpy.float32, numpy.float64")


def alibi_slopes(num_heads: int, *, alibi_bias_max: float = 8.0) -> np.ndarray:
    """The ``num_heads`` ALiBi slopes, float64, in head order (BLOOM's and MPT's; see the module)."""
    num_heads = check_num_heads(num_heads)
    bias_max = checks.check_real(alibi_bias_max, "alibi_bias_max", 0)
    block = 1 << (num_heads.bit_length() - 1)  # the largest power of two <= num_heads
    steps = np.concatenate([np.arange(1, block + 1) * 2, np.arange(1, 2 * (num_heads - block), 2)])
    # 2 ** (-m * k / n) as 2 ** (-m * (2k) / (2n)): one exponent formula for both groups; the
    # division by a power of two is exact, so only the product m * k and exp2 round.
    return np.exp2(-bias_max * steps / (2 * block))


def alibi_bias(num_heads: int, query_length: int, key_length: int, *, causal: bool = True, key_offset: int = 0,
               alibi_bias_max: float = 8.0, dtype: npt.DTypeLike = np.float32) -> np.ndarray:
    """The ALiBi bias, ``(num_heads, query_length, key_length)`` of ``dtype`` (float32 or
    float64): ``-slope * |distance|``, ``-inf`` on future keys when ``causal`` (see the module).
    Computed in float64 and rounded once."""
    slopes = alibi_slopes(num_heads, alibi_bias_max=alibi_bias_max)
    causal = checks.check_bool(causal, "causal")
    dtype = check_dtype(dtype)
    query_length, key_length, key_offset = relative.check_lengths(query_length, key_length, key_offset)
    checks.check_entries("num_heads * query_length * key_length", (num_heads, query_length, key_length))
    positions = relative.relative_positions(query_length, key_length, key_offset)
    # -|r| before the product, so distance 0 gives +0.0, not -0.0.
    values = slopes[:, None] * -np.abs(positions)
    if causal:
        values[:, positions > 0] = -np.inf
    return relative.toeplitz(values, query_length, key_length, dtype)
