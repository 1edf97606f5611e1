"""Random Fourier features: sines and cosines of coordinates projected on random directions.

A sin-cos table turns each coordinate on its own at fixed frequencies along the axes. SAM's
``PositionEmbeddingRandom`` (SAM, SAM 2, SAM 3, EdgeTAM; transformers' ``SamPositionalEmbedding``)
instead projects the coordinate vector ``c`` (x, y in [-1, 1]) on ``F`` random directions, the
columns of a Gaussian matrix ``G`` (``scale * randn(2, F)``), and writes ``[sin(2 pi c G),
cos(2 pi c G)]``: every feature mixes x and y, at frequencies spread in every direction, so
no axis is favoured (Tancik et al., 2020, "Fourier features let networks learn high frequency
functions"). The features depend on ``G``, which the model stores: pass it.
"""

import math

import numpy as np
import numpy.typing as npt

from ..engine import checks, rotation
from . import tables

__all__ = ["random_fourier_features"]

# 2 pi as float64 plus its remainder, for rotation.sin_cos: the angle 2 pi (c G) without rounding 2 pi.
TWO_PI = (np.array([2 * math.pi]), np.array([2.4492935982947064e-16]))


def check_shapes(coords_shape, projection_shape, input_shape):
    """``coords`` ``(..., k)`` and ``projection`` ``(k, F)`` agree; ``input_shape`` is ``(height, width)`` for ``k = 2``
    (a dimension None, unknown in a graph, agrees with any)."""
    if len(projection_shape) != 2 or len(coords_shape) < 1 or coords_shape[-1] not in (projection_shape[0], None):
        raise ValueError(
            f"coords (..., k) and projection (k, F) must agree on k, got coords of shape {tuple(coords_shape)} and projection "
            f"of shape {tuple(projection_shape)}"
        )
    if input_shape is not None and (
            projection_shape[0] != 2 or not isinstance(input_shape, (tuple, list)) or len(input_shape) != 2
            or not all(checks.is_positive(n) for n in input_shape)):
        raise ValueError(
            f"input_shape must be (height, width) of positive sizes for (x, y) coords, got {input_shape!r} "
            f"with coords of shape {tuple(coords_shape)}"
        )


def random_fourier_features(
    coords: npt.ArrayLike, projection: npt.ArrayLike, *, input_shape: tuple[int, int] | None = None,
    dtype: npt.DTypeLike = np.float32,
) -> np.ndarray:
    """``[sin(2 pi c G), cos(2 pi c G)]``, ``(..., 2F)``, for ``c = 2 * coords - 1``, as SAM.

    ``coords``: ``(..., k)`` in [0, 1] (SAM: ``(x, y)``, x the column); with ``input_shape =
    (height, width)``, pixel coordinates, divided by ``(width, height)`` first (SAM's prompt
    points, shifted by 0.5 to the centre of their pixel before). ``projection``: ``G``,
    ``(k, F)`` (SAM's ``positional_encoding_gaussian_matrix``, transformers'
    ``positional_embedding``). ``c G`` is rounded once to float64, then ``2 pi`` times it is
    exact to the contract. An ``H x W`` grid of patch centres, SAM's
    ``get_dense_pe``: ``coords = patch_positions((H, W), grid_offset=0.5)[::-1].T`` with
    ``input_shape=(H, W)``.
    """
    dtype = tables.check_dtype(dtype)
    g = checks.as_numbers(projection, "projection")
    g = g.astype(np.float64)  # pragma: no mutate (astype(None) is float64 too)

    def fits(p):
        check_shapes(p.shape, g.shape, input_shape)
        checks.check_entries("prod(coords.shape[:-1]) * 2 * projection.shape[1]", (math.prod(p.shape[:-1]), 2 * g.shape[1]))

    c = tables.as_positions(coords, "coords", fits=fits)
    if not np.isfinite(g).all():
        raise ValueError("projection must be finite, got NaN or infinity")
    if input_shape is not None:
        c = c / np.array([input_shape[1], input_shape[0]], dtype=np.float64)
    turns = (2 * c - 1) @ g
    s, cos = rotation.sin_cos(turns, *TWO_PI, dtype)
    return np.concatenate([s[..., 0], cos[..., 0]], axis=-1)
