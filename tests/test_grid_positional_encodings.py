"""grid_encoding(convention="positional-encodings") against the installed positional-encodings package
(PyPI 6.0.3, tatp22/multidim-positional-encoding: PositionalEncoding2D and PositionalEncoding3D, torch),
and identify_grid naming its tables.

The package computes its frequencies and angles in float32 (``inv_freq`` a float32 tensor, the
einsum in float32): its values are off from the formula by about ``|angle| * 2**-24`` per rounding.
"""

import numpy as np
import pytest

import posenc

torch = pytest.importorskip("torch")
encodings = pytest.importorskip("positional_encodings.torch_encodings", reason="install the conventions extra")


def theirs(shape, d):
    """The package's table for a grid of ``shape`` (its input ``(1, *shape, d)``), flattened row-major to ``(tokens, d)``."""
    module = (encodings.PositionalEncoding2D if len(shape) == 2 else encodings.PositionalEncoding3D)(d)
    return module(torch.zeros(1, *shape, d))[0].reshape(-1, d).double().numpy()


def float32_bound(shape):
    # three float32 roundings (frequency, angle, sin or cos) of angles up to the largest position
    return 2.0**-24 * (1 + 3 * (max(shape) - 1))


@pytest.mark.parametrize("shape", [(3, 5), (5, 3), (1, 7), (6, 6)])
@pytest.mark.parametrize("d", [4, 8, 10, 32, 66, 3])
def test_2d_equals_the_package(shape, d):
    ours = posenc.grid_encoding(shape, d, convention="positional-encodings", dtype=np.float64)
    assert ours.shape == (shape[0] * shape[1], d)
    np.testing.assert_allclose(ours, theirs(shape, d), rtol=0, atol=float32_bound(shape))


@pytest.mark.parametrize("shape", [(3, 4, 5), (2, 7, 3), (1, 1, 4), (4, 2, 2)])
@pytest.mark.parametrize("d", [6, 12, 16, 30, 64, 7, 1])
def test_3d_equals_the_package(shape, d):
    # equal thirds of 2 * ceil(d / 6) columns each, cut to d: at d = 64 the width axis keeps 10 of its 11 pairs
    ours = posenc.grid_encoding(shape, d, convention="positional-encodings", dtype=np.float64)
    assert ours.shape == (np.prod(shape), d)
    np.testing.assert_allclose(ours, theirs(shape, d), rtol=0, atol=float32_bound(shape))
    assert posenc.grid_encoding(shape, d, convention="positional-encodings").dtype == np.float32


def test_thirds_and_blocks():
    # a (2, 3, 4) grid at d = 12: columns 0-3 time, 4-7 height, 8-11 width, each sin/cos interleaved
    table = posenc.grid_encoding((2, 3, 4), 12, convention="positional-encodings", dtype=np.float64).reshape(2, 3, 4, 12)
    w = 10000.0 ** -np.array([0.0, 0.5])
    for axis, k in enumerate((1, 2, 3)):
        where = [0, 0, 0]
        where[axis] = k
        row = table[tuple(where)][4 * axis: 4 * axis + 4]
        np.testing.assert_allclose(row, np.stack([np.sin(k * w), np.cos(k * w)], -1).reshape(-1), atol=1e-15)


@pytest.mark.parametrize(("shape", "d"), [((3, 5), 32), ((6, 2), 64), ((3, 4, 5), 12), ((2, 7, 3), 64), ((4, 2, 6), 48)])
def test_identify_grid_names_it(shape, d):
    found = posenc.identify_grid(theirs(shape, d).astype(np.float32), shape)
    assert found.matches == ("positional-encodings",), str(found)


def test_other_conventions_are_2d_only():
    with pytest.raises(ValueError, match="'mae' is 2-D only.*convention 'diffusers', 'positional-encodings'"):
        posenc.grid_encoding((2, 3, 5), 32)
