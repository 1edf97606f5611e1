"""RoPE at pixel frequencies: linearly (or log-) spaced frequencies for coordinates in [-1, 1].

Language RoPE turns pair ``j`` at ``base ** (-2j / d)`` radians per position, positions being
token indices. Vision models that see an image at several sizes often place a patch by where it
lies in the image instead, from -1 (one edge) to 1 (the other: ``patch_positions(shape,
normalize="pixel")``), and give each axis ``count`` frequencies spaced evenly up to the
Nyquist frequency of a ``max_freq``-pixel image (radians per unit of coordinate):

- ``"linear"``: ``w_j = pi * (1 + j (max_freq / 2 - 1) / (count - 1))``, ``pi * linspace(1,
  max_freq / 2, count)``: timm's ``pixel_freq_bands(linear_bands=True)``,
  rotary-embedding-torch's ``freqs_for="pixel"``, Perceiver's ``generate_fourier_features``;
- ``"log"``: ``w_j = pi * 2 ** (j (log2(max_freq) - 1) / (count - 1))``: timm's default
  (``RotaryEmbedding``, ``build_rotary_pos_embed`` with ``linear_bands=False``).

An image resized to more patches keeps every coordinate in [-1, 1], so the angles of its
corners stay where training put them; with integer positions they grow with the grid.
"""

import decimal
from collections.abc import Callable, Sequence


import numpy as np
import numpy.typing as npt

from ..engine import checks, kernels
from ..engine.frequencies import Frequencies
from ..engine.registry import Registry
from . import axial, rotary

__all__ = ["PIXEL_SPACINGS", "pixel_cos_sin", "pixel_frequencies"]

_CONTEXT = decimal.Context(prec=45)
_PI = kernels._PI

# spacing -> (count, max_freq) -> the count frequencies over pi, as 45-digit decimals.
_SPACINGS: Registry[Callable[[int, decimal.Decimal], list]] = Registry("spacing")


@_SPACINGS.register("linear")
def _linear(count, max_freq):
    top = _CONTEXT.divide(max_freq, 2)
    step = _CONTEXT.divide(top - 1, count - 1) if count > 1 else decimal.Decimal(0)
    return [_CONTEXT.add(1, _CONTEXT.multiply(j, step)) for j in range(count)]


@_SPACINGS.register("log")
def _log(count, max_freq):
    ln2 = _CONTEXT.ln(decimal.Decimal(2))
    top = _CONTEXT.subtract(_CONTEXT.divide(_CONTEXT.ln(max_freq), ln2), 1)  # log2(max_freq) - 1
    step = _CONTEXT.divide(top, count - 1) if count > 1 else decimal.Decimal(0)
    return [_CONTEXT.exp(_CONTEXT.multiply(_CONTEXT.multiply(j, step), ln2)) for j in range(count)]


PIXEL_SPACINGS = _SPACINGS.names()


def _check_max_freq(max_freq, ndim):
    values = tuple(max_freq) if isinstance(max_freq, (list, tuple, np.ndarray)) else (max_freq,) * ndim
    if len(values) != ndim or not all(checks.is_positive(v) for v in values):
        raise ValueError(f"max_freq must be a positive number, or {ndim} of them (one per axis), got {max_freq!r}")
    return values


def pixel_frequencies(head_dim: int, max_freq: float | Sequence[float] = 224.0, *, spacing: str = "linear",
                      ndim: int = 2) -> Frequencies:
    """The ``head_dim // 2`` pixel frequencies of RoPE over ``ndim`` axes, with ``axes``.

    Each axis gets ``count = head_dim // (2 * ndim)`` pairs, in axis order, at the frequencies
    of ``spacing`` (module docstring) for its ``max_freq`` (one number, or one per axis as
    Perceiver's ``max_resolution``). ``hi + lo`` holds each to ~1e-30 relative.
    """
    head_dim = rotary.check_head_dim(head_dim)
    ndim = checks.check_int_at_least(ndim, "ndim", 1)
    rule = _SPACINGS.lookup(spacing)
    if head_dim % (2 * ndim):
        raise ValueError(f"head_dim must be a multiple of 2 * ndim = {2 * ndim} (a pair per frequency, the same count per "
                         f"axis), got {head_dim}")
    count = head_dim // (2 * ndim)
    hi, lo = [], []
    for top in _check_max_freq(max_freq, ndim):
        for value in rule(count, decimal.Decimal(float(top))):
            w = _CONTEXT.multiply(value, _PI)
            hi.append(float(w))
            lo.append(float(_CONTEXT.subtract(w, decimal.Decimal(hi[-1]))))
    return Frequencies(np.array(hi), np.array(lo), axes=np.repeat(np.arange(ndim), count))


def pixel_cos_sin(
    positions: npt.ArrayLike, head_dim: int, *, max_freq: float | Sequence[float] = 224.0, spacing: str = "linear",
    layout: str = "interleaved", dtype: npt.DTypeLike = np.float32,
) -> tuple[np.ndarray, np.ndarray]:
    """``(cos, sin)``, each ``(*positions.shape[1:], head_dim)``, of RoPE at pixel frequencies.

    ``positions``: ``(ndim, ...)``, one row per axis, coordinates in [-1, 1]
    (``patch_positions(shape, normalize="pixel")``). Pair ``j`` turns by ``positions[axes[j]] *
    w_j`` (``pixel_frequencies(head_dim, max_freq, spacing=..., ndim=len(positions))``).
    ``layout="interleaved"``: timm's ``build_rotary_pos_embed`` (it returns ``(sin, cos)``) and
    rotary-embedding-torch's ``get_axial_freqs``; ``"half"`` for ``rotate_half``. Perceiver's
    Fourier features are ``[positions, sin[..., ::2], cos[..., ::2]]``. Accuracy: the contract
    (the angles reach ``pi * max_freq / 2``; float32 sources are off by ``|angle| * 6e-8``).
    """
    layout = rotary.check_rotary_layout(layout)
    # at least one axis: positions without rows (a scalar, an empty array) are refused below, by name
    frequencies = pixel_frequencies(head_dim, max_freq, spacing=spacing, ndim=max(np.shape(positions)[:1] + (1,)))
    return axial._numpy_cos_sin(positions, frequencies, dtype, layout)
