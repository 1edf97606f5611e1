"""Exercises of notebook 12 (position as a bias on the attention scores): ALiBi's slopes for any
number of heads, T5's bidirectional buckets built from the causal ones, and the causal ALiBi bias."""

import numpy as np

from .. import biases
from ..language import N_
from . import Exercise, _, _as_array, compare_arrays

__all__ = ["alibi_slopes", "both_ways", "causal_alibi"]


# Exercise 1: the slopes of num_heads heads, powers of two or not.
def alibi_slopes_solution(num_heads):
    n = 2 ** int(np.log2(num_heads))  # the largest power of two <= num_heads
    first = 2.0 ** (-8 * np.arange(1, n + 1) / n)  # h = 1..n
    between = 2.0 ** (-8 * np.arange(1, 2 * n, 2) / (2 * n))  # the odd-numbered slopes of 2n heads
    return np.concatenate([first, between[: num_heads - n]])


def _slopes(num_heads, *, first_h=1, extra_h=1):
    """The solution's slopes, with h = first_h .. n + first_h - 1 for the power of two, and the
    num_heads - n extra ones from h = extra_h, extra_h + 2, ... of 2n heads."""
    n = 2 ** int(np.log2(num_heads))
    first = 2.0 ** (-8 * (first_h + np.arange(n)) / n)
    between = 2.0 ** (-8 * (extra_h + 2 * np.arange(num_heads - n)) / (2 * n))
    return np.concatenate([first, between])


alibi_slopes = Exercise(
    "alibi_slopes",
    alibi_slopes_solution,
    N_("for 8 heads the slopes are 1/2, 1/4, ..., 1/256: h runs from 1 to n; for 12 heads, the 8 slopes of 8 heads, "
       "then the 4 that lie between them (odd h of 16 heads)"),
    cases=[(8,), (12,), (6,), (1,)],
    argument_names=["num_heads"],
    mistakes=[
        (N_("h runs from 1 to n, not from 0: your first slope is 2^0 = 1 and your last stops one step short of 2^-8"),
         lambda n: _slopes(n, first_h=0)),
        (N_("2^(-8h/num_heads) holds only when num_heads is a power of two; otherwise take the slopes of the largest "
            "power of two below, then the ones between them"),
         lambda n: 2.0 ** (-8 * np.arange(1, n + 1) / n)),
        (N_("the extra heads take the odd-numbered slopes of twice as many heads (the ones between); the even-numbered "
            "ones repeat slopes you already have"),
         lambda n: _slopes(n, extra_h=2)),
        (N_("the slopes go from the steepest (head 1) to the gentlest, not the other way round"),
         lambda n: alibi_slopes_solution(n)[::-1]),
    ],
    praise=N_("Slopes halving from head to head give ranges doubling from head to head."),
)


# Exercise 2: T5's bidirectional buckets from its causal ones.
def both_ways_solution(relative_position, num_buckets, max_distance):
    half = num_buckets // 2  # buckets for keys before the query; the other half for keys after it
    side = biases.relative_position_bucket(-np.abs(relative_position), bidirectional=False, num_buckets=half,
                                           max_distance=max_distance)
    return side + half * (relative_position > 0)


def _one_side(relative_position, num_buckets, max_distance):
    return biases.relative_position_bucket(-np.abs(relative_position), bidirectional=False,
                                           num_buckets=num_buckets // 2, max_distance=max_distance)


BOTH_WAYS_CASES = [(np.arange(-150, 151), 32, 128), (np.arange(-40, 41), 8, 20)]

both_ways = Exercise(
    "both_ways",
    both_ways_solution,
    N_("a key 5 places after the query and one 5 places before are at the same distance but must get different "
       "buckets: add num_buckets // 2 where the relative position is positive"),
    cases=BOTH_WAYS_CASES,
    argument_names=["relative_position", "num_buckets", "max_distance"],
    mistakes=[
        (N_("you dropped the sign: keys after the query share the buckets of keys before it, so the encoder cannot tell "
            "left from right; give relative positions > 0 the upper half of the buckets"),
         _one_side),
        (N_("the upper half starts at num_buckets // 2, not at num_buckets: your buckets go past the table's last row"),
         lambda r, b, m: _one_side(r, b, m) + b * (r > 0)),
        (N_("the upper half is for keys after the query, relative position = key - query > 0; you gave it to the keys "
            "before"),
         lambda r, b, m: _one_side(r, b, m) + b // 2 * (r < 0)),
        (N_("distance 0 (the query's own key) belongs to the lower half, bucket 0: the upper half starts at relative "
            "position 1"),
         lambda r, b, m: _one_side(r, b, m) + b // 2 * (r >= 0)),
    ],
    praise=N_("Exact buckets near the query in both directions, logarithmic bins further out, one last bucket each way."),
)


# Exercise 3: the causal ALiBi bias, -slope * (i - j) for key j <= query i, -inf after the query.
def causal_alibi_solution(num_heads, length):
    m = biases.alibi_slopes(num_heads)[:, None, None]
    i, j = np.arange(length)[:, None], np.arange(length)[None, :]  # query i, key j
    return np.where(j > i, -np.inf, -m * (i - j))


def _alibi(num_heads, length, *, masked, sign=-1):
    m = biases.alibi_slopes(num_heads)[:, None, None]
    i, j = np.arange(length)[:, None], np.arange(length)[None, :]
    return np.where(masked(i, j), -np.inf, sign * m * (i - j))


def compare_masked(got, expected):
    """compare_arrays for a bias holding -inf (masked) entries: the -inf where they belong, then the other values."""
    expected = _as_array(expected).astype(np.float64)  # pragma: no mutate (astype(None) is float64 too)
    try:
        values = _as_array(got).astype(np.float64)  # pragma: no mutate (astype(None) is float64 too)
    except (TypeError, ValueError):  # ..., a string: compare_arrays names what it is
        values = None
    # None reads as a NaN of shape (), another shape: compare_arrays names it too
    if values is not None and values.shape == expected.shape:
        if (np.isneginf(values) != np.isneginf(expected)).any():
            return _("the -inf entries are not where the mask goes: key j is hidden from query i exactly when j > i")
        got, expected = np.where(np.isneginf(values), 0.0, values), np.where(np.isneginf(expected), 0.0, expected)
    return compare_arrays(got, expected)


causal_alibi = Exercise(
    "causal_alibi",
    causal_alibi_solution,
    N_("query i may see keys j <= i; those get -slope * (i - j), the keys with j > i get -inf"),
    cases=[(4, 6), (3, 5), (8, 3)],
    argument_names=["num_heads", "length"],
    mistakes=[
        (N_("the mask is on the wrong side: your -inf hide the keys before the query and let it see the future; "
            "the keys to hide are j > i"),
         lambda n, length: _alibi(n, length, masked=lambda i, j: j < i)),
        (N_("your mask hides the diagonal too: query i must see its own key (distance 0, bias 0), or the first "
            "row is all -inf and its softmax is NaN"),
         lambda n, length: _alibi(n, length, masked=lambda i, j: j >= i)),
        (N_("the bias is a penalty: -slope * (i - j) is negative for keys in the past; yours rewards far keys"),
         lambda n, length: _alibi(n, length, masked=lambda i, j: j > i, sign=1)),
    ],
    compare=compare_masked,
    praise=N_("Add it to the scores (attn_mask in PyTorch) and the causal mask comes with it."),
)
