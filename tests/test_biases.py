"""posenc.biases in NumPy: ALiBi's slopes against exact values, the biases against element-by-element
formulas, their structure (Toeplitz, causal mask, cached decoding), T5's buckets against the
rules of the bucketing, and bad input. The comparisons with transformers' own code are in
tests/test_biases_packages.py."""

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
    toeplitz,
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
    assert relative_positions(0, 4).shape == (0,)


def test_relative_positions_and_toeplitz():
    np.testing.assert_array_equal(relative_positions(3, 5, 2), np.arange(-4, 3))
    values = np.arange(7.0)
    matrix = toeplitz(values, 3, 5)
    assert matrix.flags.writeable and matrix.flags.c_contiguous
    for i in range(3):
        for j in range(5):
            assert matrix[i, j] == values[j - i + 2]
    assert toeplitz(values[None], 3, 5, np.float32).dtype == np.float32


# --- T5 -------------------------------------------------------------------------------

def reference_bucket(relative_position, bidirectional, num_buckets, max_distance):
    """The Mesh TensorFlow rule for one integer, in float64: equal to T5's float32 route for the
    settings below (see tests/test_biases_packages.py for the float32 edges)."""
    bucket = 0
    if bidirectional:
        num_buckets //= 2
        bucket += num_buckets if relative_position > 0 else 0
        distance = abs(relative_position)
    else:
        distance = max(-relative_position, 0)
    max_exact = num_buckets // 2
    if distance < max_exact:
        return bucket + distance
    steps = int(math.log(distance / max_exact) / math.log(max_distance / max_exact) * (num_buckets - max_exact))
    return bucket + min(max_exact + steps, num_buckets - 1)


SETTINGS = [(True, 32, 128), (False, 32, 128), (True, 64, 256), (False, 16, 50), (True, 8, 20), (False, 2, 5),
            (True, 4, 2), (True, 33, 100), (False, 128, 1000)]


@pytest.mark.parametrize(("bidirectional", "num_buckets", "max_distance"), SETTINGS)
def test_buckets_follow_the_rule(bidirectional, num_buckets, max_distance):
    positions = np.arange(-3 * max_distance, 3 * max_distance + 1)
    ours = relative_position_bucket(positions, bidirectional=bidirectional, num_buckets=num_buckets,
                                    max_distance=max_distance)
    assert ours.dtype == np.int64 and ours.shape == positions.shape
    expected = [reference_bucket(int(p), bidirectional, num_buckets, max_distance) for p in positions]
    np.testing.assert_array_equal(ours, expected)


@pytest.mark.parametrize(("bidirectional", "num_buckets", "max_distance"), SETTINGS)
def test_buckets_are_monotone_exact_near_and_saturate_far(bidirectional, num_buckets, max_distance):
    per_side = num_buckets // 2 if bidirectional else num_buckets
    max_exact = per_side // 2
    distance = np.arange(0, 4 * max_distance)
    back = relative_position_bucket(-distance, bidirectional=bidirectional, num_buckets=num_buckets,
                                    max_distance=max_distance)
    assert (np.diff(back) >= 0).all() and back.min() == 0 and back.max() == per_side - 1
    np.testing.assert_array_equal(back[:max_exact], np.arange(max_exact))
    assert (back[max_distance:] == per_side - 1).all() and back[max_distance - 1] <= per_side - 1
    # Every bucket of the side is used: the log bins are at least one distance wide.
    if max_distance >= 2 * per_side:
        assert set(back.tolist()) == set(range(per_side))
    ahead = relative_position_bucket(distance, bidirectional=bidirectional, num_buckets=num_buckets,
                                     max_distance=max_distance)
    if bidirectional:  # a later key: the same bin in the upper half; distance 0 stays in bucket 0
        np.testing.assert_array_equal(ahead[1:], back[1:] + per_side)
        assert ahead[0] == 0
    else:  # the decoder never sees a later key: all share bucket 0
        assert (ahead == 0).all()


def test_buckets_of_extreme_and_unsigned_integers():
    extremes = np.array([np.iinfo(np.int64).min, -(10**15), -1, 0, 1, 10**15, np.iinfo(np.int64).max])
    np.testing.assert_array_equal(relative_position_bucket(extremes), [15, 15, 1, 0, 17, 31, 31])
    unsigned = np.array([0, 5, 2**64 - 1], dtype=np.uint64)
    np.testing.assert_array_equal(relative_position_bucket(unsigned), [0, 21, 31])
    np.testing.assert_array_equal(relative_position_bucket(np.array([-9, 9], np.int8)), [8, 24])
    # a max_distance wider than the dtype (NumPy 2.0 refuses such a bound unless widened first)
    for narrow in (np.array([-128, -9, 9, 127], np.int8), np.array([0, 9, 200, 255], np.uint8)):
        np.testing.assert_array_equal(relative_position_bucket(narrow, max_distance=300),
                                      relative_position_bucket(narrow.astype(np.int64), max_distance=300))
    grid = np.arange(-50, 50).reshape(4, 5, 5)
    np.testing.assert_array_equal(relative_position_bucket(grid), relative_position_bucket(grid.ravel()).reshape(grid.shape))
    assert relative_position_bucket(-200) == 15 and relative_position_bucket(-200).shape == ()


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
@pytest.mark.parametrize(("bidirectional", "key_offset"), [(True, 0), (False, 0), (False, 37)])
def test_relative_position_bias_looks_up_the_table(bidirectional, key_offset, dtype):
    table = np.random.default_rng(5).normal(size=(32, 6)).astype(dtype)
    query_length, key_length = 9, key_offset + 9
    ours = relative_position_bias(table, query_length, key_length, bidirectional=bidirectional, key_offset=key_offset)
    assert ours.shape == (6, query_length, key_length) and ours.dtype == dtype
    for i in range(query_length):
        for j in range(key_length):
            bucket = reference_bucket(j - key_offset - i, bidirectional, 32, 128)
            np.testing.assert_array_equal(ours[:, i, j], table[bucket])
    np.testing.assert_array_equal(ours[:, 1:, 1:], ours[:, :-1, :-1])


# --- bad input ------------------------------------------------------------------------

@pytest.mark.parametrize(("call", "error", "message"), [
    (lambda: alibi_slopes(0), ValueError, "num_heads must be an int >= 1, got 0"),
    (lambda: alibi_slopes(2.0), TypeError, "num_heads must be an int >= 1, got 2.0"),
    (lambda: alibi_slopes(True), TypeError, "num_heads"),
    (lambda: alibi_slopes(2**21), ValueError, "num_heads must be at most"),
    (lambda: alibi_slopes(8, alibi_bias_max=0), ValueError, "alibi_bias_max must be a finite real number > 0, got 0"),
    (lambda: alibi_slopes(8, alibi_bias_max=math.nan), ValueError, "alibi_bias_max"),
    (lambda: alibi_slopes(8, alibi_bias_max="8"), TypeError, "alibi_bias_max must be a finite real number > 0, got '8'"),
    (lambda: alibi_bias(8, -1, 4), ValueError, "query_length must be a non-negative int, got -1"),
    (lambda: alibi_bias(8, 4, 4.0), TypeError, "key_length must be a non-negative int, got 4.0"),
    (lambda: alibi_bias(8, 4, 4, key_offset=-2), ValueError, "key_offset must be a non-negative int, got -2"),
    (lambda: alibi_bias(8, 4, 4, key_offset=2**60), ValueError, "key_offset \\+ query_length must be at most 2\\*\\*53"),
    (lambda: alibi_bias(8, 4, 2**60), ValueError, "key_length must be at most 2\\*\\*53"),
    (lambda: alibi_bias(8, 10**6, 10**6), ValueError, "num_heads \\* query_length \\* key_length must be at most"),
    (lambda: alibi_bias(8, 4, 4, causal="yes"), TypeError, "causal must be True or False, got 'yes'"),
    (lambda: alibi_bias(8, 4, 4, dtype=np.float16), TypeError, "dtype must be one of numpy.float32, numpy.float64"),
    (lambda: alibi_bias(8, 4, 4, dtype="nope"), TypeError, "dtype must be one of .* got 'nope'"),
    (lambda: relative_position_bucket([1.5, 2]), TypeError, "relative_position must hold integers, got an array of dtype float64"),
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
