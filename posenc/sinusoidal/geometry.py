"""The geometry of the table: wavelengths, and the rotation that shifts a position.

Pair ``i`` of the table is the point ``(sin(p * w_i), cos(p * w_i))`` on the unit circle,
turning at ``w_i = base ** (-2i / d_model)`` radians per position; its wavelength is
``2*pi / w_i``. Moving from position ``p`` to ``p + k`` turns every pair by its own angle
``k * w_i``, whatever ``p`` is. That is a fixed linear map, ``shift_matrix(k, ...)``:

    PE(p + k) = M_k @ PE(p)          (PE as a column vector)
    table[p + k] = table[p] @ M_k.T  (rows, as ``positional_encoding`` returns them)
"""


import numpy as np

from ..engine import checks
from .tables import column_order, denominators, frequencies

__all__ = ["shift_matrix", "wavelengths"]


def wavelengths(d_model: int, base: float = 10000.0) -> np.ndarray:
    """Positions per full turn of each sin/cos pair: ``2*pi * base ** (2i / d_model)``.

    float64, shape ``(ceil(d_model / 2),)``, the same for every layout (column ``c`` of a
    table has wavelength ``wavelengths(d_model, base)[column_order(d_model, layout)[c] % h]``
    with ``h = ceil(d_model / 2)``). A geometric progression: it starts at ``2*pi`` and each
    entry is ``base ** (2 / d_model)`` times the one before, so the last is
    ``2*pi * base ** (2 * (h - 1) / d_model)``, just short of ``2*pi * base``.
    """
    return 2.0 * np.pi * denominators(d_model, base)


def shift_matrix(k: float, d_model: int, *, base: float = 10000.0, layout: str = "interleaved") -> np.ndarray:
    """The ``(d_model, d_model)`` float64 matrix ``M`` with ``PE(p + k) = M @ PE(p)`` for every ``p``.

    ``M`` multiplies a column vector from the left; for the rows of a table that is
    ``table[p + k] == table[p] @ M.T`` (for a whole table: ``table @ M.T``). ``k`` is any
    finite real offset (negative and fractional too); ``M`` does not depend on ``p``.

    Pair ``i`` turns by ``b = k * w_i`` (angle addition):

        sin(a + b) =  cos(b) sin(a) + sin(b) cos(a)
        cos(a + b) = -sin(b) sin(a) + cos(b) cos(a)

    so in the interleaved layout ``M`` is block diagonal with blocks
    ``[[cos b, sin b], [-sin b, cos b]]``; other layouts permute its rows and columns by
    ``column_order``. ``M`` is orthogonal, ``M_0`` is the identity, ``M_j @ M_k = M_{j+k}``
    and ``M_{-k} = M_k.T``.

    Odd ``d_model`` raises ``ValueError``: the last column, ``sin(p * w)``, has no cosine
    partner, and ``sin((p + k) * w)`` needs ``cos(p * w)``, which no column holds. The
    functions of ``p`` in the other columns have different frequencies, so no matrix at all
    maps ``PE(p)`` to ``PE(p + k)`` for every ``p``; only the complete pairs shift linearly.
    """
    k = checks.check_real(k, "k", where=" (an offset in positions)")
    d_model = checks.check_d_model(d_model)
    checks.check_entries("d_model * d_model", (d_model, d_model))
    base = checks.check_base(base)
    layout = checks.check_layout(layout)
    if d_model % 2:
        raise ValueError(
            f"d_model must be even for a shift matrix, got {d_model}: the last column of an odd "
            "width is a sine with no cosine partner, so PE(p + k) is not a linear function of PE(p)"
        )
    half = d_model // 2
    b = k * frequencies(d_model, base)
    cos, sin = np.cos(b), np.sin(b)
    # Index space of concatenate([sin, cos]): j is the sine of pair j, half + j its cosine.
    concat = np.zeros((d_model, d_model))
    pairs = np.arange(half)
    concat[pairs, pairs] = cos
    concat[pairs, half + pairs] = sin
    concat[half + pairs, pairs] = -sin
    concat[half + pairs, half + pairs] = cos
    order = column_order(d_model, layout)
    return concat[np.ix_(order, order)]
