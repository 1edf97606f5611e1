"""posenc.biases.t5 in NumPy: T5's buckets against the rules of the bucketing, and the bias as a
lookup of its table. Against transformers' T5: test_biases_packages.py; bad input: test_alibi.py."""

import math

import numpy as np
import pytest

from posenc.biases import relative_position_bias, relative_position_bucket


def reference_bucket(relative_position, bidirectional, num_buckets, max_distance):
    """The Mesh TensorFlow rule for one integer, in float64: equal to T5's float32 route for the
    settings below (see test_biases_packages.py for the float32 edges)."""
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
