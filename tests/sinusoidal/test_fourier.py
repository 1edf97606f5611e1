"""Random Fourier features (posenc.sinusoidal.random_fourier_features): the formula in high
precision and bad input. Against transformers' SAM modules: test_fourier_packages.py."""

import mpmath
import numpy as np
import pytest

from posenc.sinusoidal import random_fourier_features


def test_the_formula_in_high_precision():
    projection = np.array([[0.3, -1.7, 2.5], [1.1, 0.2, -0.4]])
    coords = np.array([0.25, 0.9])
    ours = random_fourier_features(coords, projection, dtype=np.float64)
    with mpmath.workdps(40):
        c = [2 * mpmath.mpf(v) - 1 for v in coords]
        for j in range(3):
            angle = 2 * mpmath.pi * sum(c[i] * mpmath.mpf(projection[i, j]) for i in range(2))
            assert abs(ours[j] - mpmath.sin(angle)) < 1e-15 and abs(ours[3 + j] - mpmath.cos(angle)) < 1e-15


def test_bad_input_names_the_argument():
    with pytest.raises(ValueError, match=r"coords \(\.\.\., k\) and projection \(k, F\) must agree on k.*\(4, 3\).*\(2, 8\)"):
        random_fourier_features(np.zeros((4, 3)), np.zeros((2, 8)))
    with pytest.raises(ValueError, match=r"input_shape must be \(height, width\).*got \(0, 4\)"):
        random_fourier_features(np.zeros((4, 2)), np.zeros((2, 8)), input_shape=(0, 4))
    with pytest.raises(ValueError, match="projection must be finite"):
        random_fourier_features(np.zeros((4, 2)), np.full((2, 8), np.nan))
    with pytest.raises(TypeError) as ragged:
        random_fourier_features(np.zeros((4, 2)), [[1.0], [1.0, 2.0]])
    assert str(ragged.value) == "projection must be an array of real numbers, got [[1.0], [1.0, 2.0]]"


def test_an_input_shape_of_large_ints_divides_in_float64():
    # SAM divides pixel coordinates by the image size; ints past int64 must not turn the division into
    # Python objects (NumPy would make an object array of them)
    coords, projection = np.array([[3.0, 5.0], [7.0, 1.0]]) * 2.0**68, np.array([[0.3, -1.7], [1.1, 0.2]])
    by_ints = random_fourier_features(coords, projection, input_shape=(2**70, 2**69), dtype=np.float64)
    by_floats = random_fourier_features(coords, projection, input_shape=(2.0**70, 2.0**69), dtype=np.float64)
    assert by_ints.dtype == np.float64
    np.testing.assert_array_equal(by_ints, by_floats)
    np.testing.assert_allclose(by_ints, random_fourier_features(np.array([[3 / 2, 5 / 4], [7 / 2, 1 / 4]]), projection,
                                                                dtype=np.float64), atol=1e-15)
