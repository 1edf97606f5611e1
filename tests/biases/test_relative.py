"""posenc.biases.relative: the relative positions of a query and key block, and the Toeplitz
matrix built from them."""

import numpy as np

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
