"""The sinusoidal positional encoding in NumPy, built from the lecture's steps.

    PE(pos, 2i)   = sin(pos / base^(2i / d_model))
    PE(pos, 2i+1) = cos(pos / base^(2i / d_model))

The steps are public so a notebook can check each stage it builds by hand:
``denominators`` -> ``frequencies`` -> ``angles`` -> sin and cos -> ``interleave``.
Every layout is the interleaved table with its columns permuted; ``column_order``
is that permutation, and the torch and TensorFlow front ends use it too.
"""

import reprlib
from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt

from ..engine import checks, rotation
from . import conventions

__all__ = [
    "DTYPES",
    "angles",
    "column_order",
    "denominators",
    "encode",
    "frequencies",
    "interleave",
    "positional_encoding",
]

DTYPES = (np.float16, np.float32, np.float64)
_ALLOWED = [np.dtype(t) for t in DTYPES]


def denominators(d_model: int, base: float = 10000.0) -> np.ndarray:
    """The divisors of the position, one per sin/cos pair.

    ``base ** (2i / d_model)`` for ``i = 0 .. ceil(d_model / 2) - 1``: float64,
    shape ``(ceil(d_model / 2),)``. Column ``2i`` (a sine) and column ``2i + 1`` (a cosine)
    share the i-th one; for odd ``d_model`` the last one serves the last sine alone.
    """
    d_model = checks.check_d_model(d_model)
    base = checks.check_base(base)
    return np.power(base, _exponents(d_model))


def _exponents(d_model):
    # 2i / d_model for each pair i, in float64: the denominators and the frequencies are powers of the same exponents
    return 2.0 * np.arange((d_model + 1) // 2) / d_model


def frequencies(d_model: int, base: float = 10000.0) -> np.ndarray:
    """Angle per unit of position: ``1 / denominators``, shape ``(ceil(d_model / 2),)``.

    Wavelengths ``2*pi / frequencies`` grow geometrically from ``2*pi`` towards
    ``base * 2*pi`` by the factor ``base ** (2 / d_model)``.
    """
    d_model = checks.check_d_model(d_model)
    base = checks.check_base(base)
    return np.power(base, -_exponents(d_model))


def angles(positions: npt.ArrayLike, d_model: int, base: float = 10000.0) -> np.ndarray:
    """The arguments of sin and cos: ``positions[..., None] * frequencies``.

    ``positions`` of any shape (ints or real floats, finite) gives float64 angles of shape
    ``(*positions.shape, ceil(d_model / 2))``. The product is formed in float64 so the
    angle of position 10**7 is still right to about 2e-9 radians.
    """
    d_model = checks.check_d_model(d_model)
    positions = as_positions(positions, fits=checks.entries_per_position("positions.size * ceil(d_model / 2)", (d_model + 1) // 2))
    return positions[..., None] * frequencies(d_model, base)


def interleave(sines: npt.ArrayLike, cosines: npt.ArrayLike) -> np.ndarray:
    """Alternate the columns of two same-shape arrays: ``(..., n), (..., n) -> (..., 2n)``.

    Output column ``2i`` is ``sines[..., i]`` and column ``2i + 1`` is ``cosines[..., i]``:
    stack on a new last axis, then merge the last two axes.
    """
    sines, cosines = np.asarray(sines), np.asarray(cosines)
    if sines.ndim == 0 or cosines.ndim == 0:
        raise ValueError(f"sines and cosines must have at least one axis, got {sines!r} and {cosines!r}")
    if sines.shape != cosines.shape:
        raise ValueError(
            f"sines and cosines must have the same shape, got {sines.shape} and {cosines.shape}"
        )
    stacked = np.stack([sines, cosines], axis=-1)
    return stacked.reshape(*sines.shape[:-1], 2 * sines.shape[-1])


def column_order(d_model: int, layout: str = "interleaved") -> np.ndarray:
    """Where each output column comes from in ``concatenate([sin, cos], -1)``.

    ``sin`` and ``cos`` are each ``h = ceil(d_model / 2)`` wide, so index ``j`` means the
    sine of pair ``j`` and ``h + j`` its cosine. Returns an int array of length ``d_model``:

    - ``"interleaved"``: ``0, h, 1, h+1, ...`` (the paper; an odd width ends on a sine)
    - ``"sin_cos"``: the ``h`` sines, then the ``d_model // 2`` cosines
    - ``"cos_sin"``: the ``d_model // 2`` cosines, then the ``h`` sines

    All three hold the same columns in different orders.
    """
    d_model = checks.check_d_model(d_model)
    layout = checks.check_layout(layout)
    half = (d_model + 1) // 2
    sines = np.arange(half)
    cosines = half + np.arange(d_model // 2)
    if layout == "sin_cos":
        return np.concatenate([sines, cosines])
    if layout == "cos_sin":
        return np.concatenate([cosines, sines])
    return interleave(sines, half + sines)[:d_model]


def as_positions(
    positions: npt.ArrayLike, name: str = "positions", fits: Callable[[np.ndarray], object] | None = None
) -> np.ndarray:
    """Check ``positions`` (array-like of ints or real floats, all finite); return float64.
    ``name``: the argument's, for the messages. ``fits``: the caller's check of the output's
    size, given ``positions`` as an array before they are scanned and copied: a broadcast view
    costs no memory, its float64 copy does, so an absurd size is refused at once."""
    array = checks.as_array(positions, name, "an array of numbers")
    if array.dtype.kind in "USO" and not isinstance(positions, np.ndarray):
        # A string or a list of them: the value says more than the dtype NumPy gave it (<U1).
        raise TypeError(f"{name} must be numbers (integers or real floats), got {reprlib.repr(positions)}")
    checks.check_position_kind(array.dtype.kind, f"dtype {array.dtype}", name)
    # Every output holds an entry per position at least (the fronts, which take positions before
    # they know the output, rely on it).
    checks.check_entries(f"{name}.size", (array.size,))
    if fits is not None:
        fits(array)
    if array.dtype.kind == "f":
        checks.check_finite(bool(np.isfinite(array).all()), f"an array of shape {array.shape}", name)
    return array.astype(np.float64)  # pragma: no mutate (astype(None) is float64 too)


def check_dtype(dtype):
    return checks.check_numpy_dtype(dtype, _ALLOWED, "numpy.float16, numpy.float32, numpy.float64")


def _output(out, shape, dtype):
    """``out`` checked against the table it will hold, or a fresh array of ``shape``."""
    if out is None:
        return np.empty(shape, dtype)
    if not isinstance(out, np.ndarray):
        raise TypeError(f"out must be a numpy.ndarray, got {checks.shown(out)}")
    checks.check_out(out.shape, out.dtype, shape, dtype)
    if not out.flags.writeable:
        raise ValueError("out must be writeable, got a read-only array")
    return out


def encode(
    positions: npt.ArrayLike, d_model: int, *, convention: str | conventions.Convention = "paper", base: float | None = None,
    layout: str | None = None, dtype: npt.DTypeLike = np.float32, out: np.ndarray | None = None, **options: Any,
) -> np.ndarray:
    """Encode arbitrary positions: ``(*positions.shape,) -> (*positions.shape, d_model)``.

    ``PE[..., 2i] = sin(p * w_i)`` and ``PE[..., 2i+1] = cos(p * w_i)`` with
    ``w_i = base ** (-2i / d_model)``, columns arranged by ``layout`` (see
    ``column_order``). Positions may be fractional or negative. ``convention`` names
    another way of writing the table (``posenc.list_conventions()``); ``base``, ``layout``
    (None: the convention's) and ``options`` (``offset``, ``padding_idx`` or the source's
    own option names) override its parameters (``conventions.resolve``). float32: float32
    sines and cosines of the angle reduced in half turns, at about the speed of the naive
    float32 route; float64: the angle carried to twice float64 precision. Accuracy: see the
    accuracy contract. Written block by block into the output, so the extra memory is small.
    ``out``: an array of that shape and dtype to write into (returned).
    """
    dtype = check_dtype(dtype)
    d_model = checks.check_d_model(d_model)
    chosen = conventions.resolve(convention, base=base, layout=layout, **options)
    positions = as_positions(positions, fits=checks.entries_per_position("positions.size * d_model", d_model))
    frequencies = chosen.frequency_record(d_model)
    w_hi, w_lo, width = frequencies.hi, frequencies.lo, frequencies.width
    shifted = conventions.offset_positions(positions, chosen)
    out = _output(out, (*shifted.shape, d_model), dtype)
    rows = out.reshape(shifted.size, d_model)
    flat = shifted.ravel()
    rotation.fill_encoding(rows[:, :width], flat, w_hi, w_lo, chosen.layout)
    rows[:, width:] = 0
    if chosen.padding_idx is not None:
        rows[flat == chosen.padding_idx] = 0
    if rows.size and not np.may_share_memory(rows, out):  # pragma: no mutate (copying a view onto itself changes no value)
        out[...] = rows.reshape(out.shape)  # out's strides allowed no flat view
    return out


def positional_encoding(
    length: int, d_model: int, *, convention: str | conventions.Convention = "paper", base: float | None = None,
    layout: str | None = None, dtype: npt.DTypeLike = np.float32, out: np.ndarray | None = None, **options: Any,
) -> np.ndarray:
    """The table for positions ``0 .. length - 1``: shape ``(length, d_model)``.

    Row ``pos``, column ``2i`` holds ``sin(pos / base^(2i / d_model))`` and column ``2i + 1``
    holds ``cos`` of the same angle (``layout="interleaved"``, the paper's order). Odd
    ``d_model`` is allowed: the last column is a sine. ``convention``, ``base``, ``layout``
    and ``options`` choose another convention and its parameters, as in ``encode``; row
    ``k`` then holds position ``offset + k``. Built by rotation from two small accurate
    tables (``rotation.fill_table``). Accuracy: see the accuracy contract (the lectures'
    float32 division is off by about 1e-3 near position 10**5). ``out``: a
    ``(length, d_model)`` array of ``dtype`` to write into (returned), which saves
    allocating a fresh table.
    """
    length = checks.check_length(length)
    dtype = check_dtype(dtype)
    d_model = checks.check_d_model(d_model)
    checks.check_entries("length * d_model", (length, d_model))
    chosen = conventions.resolve(convention, base=base, layout=layout, **options)
    frequencies = chosen.frequency_record(d_model)
    w_hi, w_lo, width = frequencies.hi, frequencies.lo, frequencies.width
    out = _output(out, (length, d_model), dtype)
    if width:
        rotation.fill_table(out[:, :width], w_hi, w_lo, chosen.layout, chosen.offset)
    if width < d_model:
        out[:, width:] = 0
    row = chosen.padding_row(length)
    if row is not None:
        out[row] = 0
    return out
