"""posenc.biases.relative: the relative positions of a query and key block, and the Toeplitz
matrix built from them."""

import numpy as np
import pytest

from posenc.biases import relative_positions, toeplitz


def test_relative_positions_and_toeplitz():
    np.testing.assert_array_equal(relative_positions(3, 5, 2), np.arange(-4, 3))
    values = np.arange(7.0)
    matrix = toeplitz(values, 3, 5)
    assert matrix.flags.writeable and matrix.flags.c_contiguous
    for i in range(3):
        for j in range(5):
            assert matrix[i, j] == values[j - i + 2]
    assert toeplitz(values[None], 3, 5, np.float32).dtype == np.float32


def test_toeplitz_spreads_any_numbers_a_mask_too():
    """Booleans (a mask), ints, unsigned, real and complex values keep their dtype."""
    for values in (np.array([True, False, False]), np.arange(3), np.arange(3, dtype=np.uint8),
                   np.arange(3.0), np.arange(3) * 1j):
        matrix = toeplitz(values, 2, 2)
        assert matrix.dtype == values.dtype
        np.testing.assert_array_equal(matrix, [[values[1], values[2]], [values[0], values[1]]])


def test_toeplitz_names_what_values_must_be():
    with pytest.raises(TypeError) as error:
        toeplitz([[1.0], [1.0, 2.0]], 1, 1)
    assert str(error.value) == "values must be an array of shape (..., query_length + key_length - 1), got [[1.0], [1.0, 2.0]]"
    with pytest.raises(TypeError) as error:
        toeplitz(np.array(["a"]), 1, 1)
    assert str(error.value) == "values must hold numbers, got array(['a'], dtype='<U1') (ndarray): an array of <U1"


def test_toeplitz_counts_the_batch_axes_before_it_allocates():
    values = np.broadcast_to(np.zeros(3), (2**31, 3))  # no memory of its own
    with pytest.raises(ValueError) as error:
        toeplitz(values, 2, 2)
    assert str(error.value) == ("values.shape[:-1] * query_length * key_length must be at most 2**31 = 2147483648 entries, "
                                "got 2147483648 * 2 * 2 = 8589934592")


def test_positions_up_to_2_to_the_53_are_taken_and_one_more_is_refused():
    # 2**53 is the last integer of a run that float64 holds exactly.
    np.testing.assert_array_equal(relative_positions(1, 1, key_offset=2**53 - 1), [-(2**53 - 1)])
    with pytest.raises(ValueError) as caught:
        relative_positions(1, 1, key_offset=2**53)
    assert str(caught.value) == ("key_offset + query_length must be at most 2**53 = 9007199254740992 (exact in float64), "
                                 "got 9007199254740993")
