"""posenc.biases.alibi in NumPy: ALiBi's slopes against exact values, the bias against an
element-by-element formula, its structure (Toeplitz, causal mask, cached decoding), and the bad
input of every bias function. T5's buckets: test_t5.py; the relative positions: test_relative.py;
the comparisons with transformers' own code: test_biases_packages.py."""

import math

import mpmath
import numpy as np
import pytest

from posenc.biases import (
    alibi_bias,
    alibi_slopes,
    relative_position_bias,
    relative_position_bucket,
    relative_positions,
)

HEADS = [1, 2, 3, 5, 6, 7, 8, 12, 16, 20, 24, 30, 32, 40, 64, 71, 96]
LENGTHS = [(1, 1), (1, 9), (5, 5), (4, 11), (9, 4)]


def exact_slopes(num_heads, bias_max=8):
    """The paper's rule in 50-digit arithmetic: powers of two first, then every other slope of
    twice as many heads."""
    with mpmath.workdps(50):
        block = 2 ** int(math.log2(num_heads))
        first = [mpmath.power(2, -mpmath.mpf(bias_max) * k / block) for k in range(1, block + 1)]
        extra = [mpmath.power(2, -mpmath.mpf(bias_max) * k / (2 * block)) for k in range(1, 2 * block, 2)]
        return np.array([float(s) for s in (first + extra)[:num_heads]])


def reference_alibi(num_heads, query_length, key_length, causal, key_offset, bias_max=8.0):
    slopes = exact_slopes(num_heads, bias_max)
    out = np.empty((num_heads, query_length, key_length))
    for h in range(num_heads):
        for i in range(query_length):
            for j in range(key_length):
                distance = key_offset + i - j
                out[h, i, j] = -np.inf if causal and distance < 0 else -slopes[h] * abs(distance)
    return out


@pytest.mark.parametrize("bias_max", [8, 4.0, 6, 10.5, 16])
@pytest.mark.parametrize("num_heads", HEADS)
def test_slopes_are_the_exact_values_to_one_rounding(num_heads, bias_max):
    ours = alibi_slopes(num_heads, alibi_bias_max=bias_max)
    assert ours.dtype == np.float64 and ours.shape == (num_heads,)
    np.testing.assert_allclose(ours, exact_slopes(num_heads, bias_max), rtol=2.3e-16, atol=0)


@pytest.mark.parametrize("num_heads", HEADS)
def test_slopes_are_geometric_per_power_of_two_block(num_heads):
    slopes = alibi_slopes(num_heads)
    block = 2 ** int(math.log2(num_heads))
    first, extra = slopes[:block], slopes[block:]
    assert first[0] == 2.0 ** (-8 / block) and first[-1] == 2.0**-8
    np.testing.assert_allclose(first[1:] / first[:-1], 2.0 ** (-8 / block), rtol=1e-15)
    # The extra heads fall halfway (geometrically) between consecutive slopes of the first
    # block: the first between 1 and the first slope, the next between the first and second, ...
    below = np.concatenate([[1.0], first])[: len(extra)]
    above = first[: len(extra)]
    np.testing.assert_allclose(extra**2, below * above, rtol=1e-15)
    assert len(set(slopes)) == num_heads and np.all(slopes < 1)


@pytest.mark.parametrize("key_offset", [0, 3])
@pytest.mark.parametrize(("query_length", "key_length"), LENGTHS)
@pytest.mark.parametrize("causal", [True, False])
@pytest.mark.parametrize("num_heads", [1, 3, 8, 12])
def test_alibi_bias_is_the_formula(num_heads, causal, query_length, key_length, key_offset):
    expected = reference_alibi(num_heads, query_length, key_length, causal, key_offset)
    ours = alibi_bias(num_heads, query_length, key_length, causal=causal, key_offset=key_offset, dtype=np.float64)
    assert ours.shape == expected.shape and ours.dtype == np.float64
    np.testing.assert_allclose(ours, expected, rtol=2.3e-16, atol=0)
    single = alibi_bias(num_heads, query_length, key_length, causal=causal, key_offset=key_offset)
    assert single.dtype == np.float32
    np.testing.assert_array_equal(single, ours.astype(np.float32))


@pytest.mark.parametrize("causal", [True, False])
def test_alibi_bias_is_toeplitz_and_has_no_negative_zero(causal):
    bias = alibi_bias(12, 30, 41, causal=causal, key_offset=7)
    np.testing.assert_array_equal(bias[:, 1:, 1:], bias[:, :-1, :-1])
    assert not np.signbit(bias[bias == 0]).any()
    assert (bias[:, np.arange(30), 7 + np.arange(30)] == 0).all()


def test_causal_alibi_is_the_bidirectional_one_masked():
    causal = alibi_bias(6, 9, 20, causal=True, key_offset=11)
    both = alibi_bias(6, 9, 20, causal=False, key_offset=11)
    future = np.arange(20)[None, :] > 11 + np.arange(9)[:, None]
    assert (causal[:, future] == -np.inf).all() and np.isfinite(causal[:, ~future]).all()
    np.testing.assert_array_equal(causal[:, ~future], both[:, ~future])
    assert (both <= 0).all()


@pytest.mark.parametrize("num_heads", [4, 12])
def test_cached_decoding_rows_are_the_last_rows_of_the_full_bias(num_heads):
    full = alibi_bias(num_heads, 23, 23, causal=True)
    for past in (0, 1, 15, 22):
        step = alibi_bias(num_heads, 23 - past, 23, key_offset=past)
        np.testing.assert_array_equal(step, full[:, past:])


@pytest.mark.parametrize(("query_length", "key_length", "key_offset"), [(7, 7, 0), (3, 10, 7), (1, 40, 39), (5, 12, 2)])
@pytest.mark.parametrize("num_heads", [5, 16])
def test_causal_alibi_and_blooms_slope_times_key_position_give_the_same_attention(num_heads, query_length, key_length,
                                                                                  key_offset):
    """BLOOM (and the paper's code) add ``slope * j``; on the keys a query sees, that is ours
    plus ``slope * (key_offset + i)``, a constant per row, which softmax cancels."""
    slopes = alibi_slopes(num_heads)
    ours = alibi_bias(num_heads, query_length, key_length, key_offset=key_offset, dtype=np.float64)
    theirs = slopes[:, None, None] * np.arange(key_length) + np.zeros((query_length, 1))
    seen = np.isfinite(ours[0])
    row_shift = (theirs - ours)[:, seen]
    query_positions = key_offset + np.nonzero(seen)[0]
    np.testing.assert_allclose(row_shift, slopes[:, None] * query_positions, rtol=1e-14, atol=1e-13)

    scores = np.random.default_rng(30).normal(size=(num_heads, query_length, key_length))

    def softmax(x):
        e = np.exp(x - x.max(-1, keepdims=True))
        return e / e.sum(-1, keepdims=True)

    masked = np.where(seen, theirs, -np.inf)
    np.testing.assert_allclose(softmax(scores + ours), softmax(scores + masked), rtol=1e-13, atol=1e-15)
    # Without the mask, BLOOM's form would let a query see the future: the mask is the difference.
    assert seen.all() or not np.allclose(softmax(scores + ours), softmax(scores + theirs))


def test_empty_lengths_give_empty_biases():
    assert alibi_bias(4, 0, 5).shape == (4, 0, 5)
    assert alibi_bias(4, 3, 0, causal=False).shape == (4, 3, 0)
    assert relative_position_bias(np.ones((32, 2)), 0, 0).shape == (2, 0, 0)
    assert relative_positions(0, 4, 0).shape == (0,)


# --- bad input, of every function of posenc.biases ------------------------------------------------------------------------

@pytest.mark.parametrize(("call", "error", "message"), [
    (lambda: alibi_slopes(0), ValueError, "num_heads must be an int >= 1, got 0"),
    (lambda: alibi_slopes(2.0), TypeError, "num_heads must be an int >= 1, got 2.0"),
    (lambda: alibi_slopes(True), TypeError, "num_heads"),
    (lambda: alibi_slopes(2**21), ValueError, "num_heads must be at most"),
    (lambda: alibi_slopes(8, alibi_bias_max=0), ValueError, "alibi_bias_max must be a finite real number > 0, got 0"),
    (lambda: alibi_slopes(8, alibi_bias_max=math.nan), ValueError, "alibi_bias_max"),
    (lambda: alibi_slopes(8, alibi_bias_max="8"), TypeError, "alibi_bias_max must be a real number > 0, got '8'"),
    (lambda: alibi_bias(8, -1, 4), ValueError, "query_length must be a non-negative int, got -1"),
    (lambda: alibi_bias(8, 4, 4.0), TypeError, "key_length must be a non-negative int, got 4.0"),
    (lambda: alibi_bias(8, 4, 4, key_offset=-2), ValueError, "key_offset must be a non-negative int, got -2"),
    (lambda: alibi_bias(8, 4, 4, key_offset=2**60), ValueError, "key_offset \\+ query_length must be at most 2\\*\\*53"),
    (lambda: alibi_bias(8, 4, 2**60), ValueError, "key_length must be at most 2\\*\\*53"),
    (lambda: alibi_bias(8, 10**6, 10**6), ValueError, "num_heads \\* query_length \\* key_length must be at most"),
    (lambda: alibi_bias(8, 4, 4, causal="yes"), TypeError, "causal must be True or False, got 'yes'"),
    (lambda: alibi_bias(8, 4, 4, dtype=np.float16), TypeError, "dtype must be one of numpy.float32, numpy.float64"),
    (lambda: alibi_bias(8, 4, 4, dtype="nope"), TypeError, "dtype must be one of .* got 'nope'"),
    (lambda: relative_position_bucket([1.5, 2]), TypeError,
     "relative_position must hold integers, got \\[1.5, 2\\] \\(list\\): an array of float64"),
    (lambda: relative_position_bucket([True]), TypeError, "relative_position must hold integers"),
    (lambda: relative_position_bucket(["3"]), TypeError, "relative_position must hold integers"),
    (lambda: relative_position_bucket([[1], [1, 2]]), TypeError, "relative_position must be an array of integers"),
    (lambda: relative_position_bucket([1], num_buckets=3), ValueError,
     "num_buckets must be an int >= 4 with bidirectional=True, got 3"),
    (lambda: relative_position_bucket([1], bidirectional=False, num_buckets=1), ValueError,
     "num_buckets must be an int >= 2 with bidirectional=False"),
    (lambda: relative_position_bucket([1], num_buckets=32.0), TypeError, "num_buckets"),
    (lambda: relative_position_bucket([1], max_distance=8), ValueError,
     "max_distance must be an int >= 9 \\(num_buckets=32 gives exact buckets up to 7\\), got 8"),
    (lambda: relative_position_bucket([1], bidirectional=False, max_distance=16), ValueError,
     "max_distance must be an int >= 17 \\(num_buckets=32 gives exact buckets up to 15\\), got 16"),
    (lambda: relative_position_bucket([1], bidirectional=1), TypeError, "bidirectional must be True or False, got 1"),
    (lambda: relative_position_bias(np.ones(32), 2, 2), ValueError, "table must have shape \\(num_buckets, heads\\), got shape \\(32,\\)"),
    (lambda: relative_position_bias(np.ones((32, 2), int), 2, 2), TypeError, "table must hold real floats"),
    (lambda: relative_position_bias(np.ones((32, 2)), 2, 2, num_buckets=16), ValueError,
     "num_buckets=16 must be the table's number of rows, got a table of shape \\(32, 2\\)"),
    (lambda: relative_position_bias(np.ones((3, 2)), 2, 2), ValueError, "num_buckets must be an int >= 4"),
    (lambda: relative_position_bias(np.ones((32, 2)), 2, -2), ValueError, "key_length must be a non-negative int"),
    (lambda: relative_position_bias(np.ones((32, 2)), 2, 2, key_offset=1.0), TypeError, "key_offset"),
    (lambda: relative_position_bias(np.ones((32, 2**11)), 2**11, 2**11), ValueError, "heads \\* query_length \\* key_length"),
])
def test_bad_input_names_the_argument(call, error, message):
    with pytest.raises(error, match=message):
        call()
