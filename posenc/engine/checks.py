"""Argument checks shared by the NumPy, torch and TensorFlow front ends.

Every check raises ``TypeError`` (wrong kind of value) or ``ValueError`` (right kind,
wrong value) with a message that names the argument, shows what was received and says
what is allowed, so a mistake never surfaces as a shape error deep inside a framework.
"""

import math
import numbers
import reprlib
from collections.abc import Hashable
from typing import TypeGuard

import numpy as np

__all__ = [
    "LAYOUTS",
    "MAX_WIDTH",
    "MAX_ENTRIES",
    "as_array",
    "as_numbers",
    "check_base",
    "check_bool",
    "check_choice",
    "check_d_model",
    "check_dropout",
    "check_dtype",
    "check_numpy_dtype",
    "as_dtype",
    "check_real",
    "check_entries",
    "entries_per_position",
    "check_finite",
    "check_input_width",
    "check_axis",
    "check_kind",
    "check_int_at_least",
    "check_layout",
    "check_length",
    "check_out",
    "check_position_kind",
    "check_width",
    "is_finite",
    "is_one_of",
]

LAYOUTS = ("interleaved", "sin_cos", "cos_sin")
#: The widest table (``d_model``, ``head_dim``, a grid's ``d``): its frequencies are built one
#: by one in 45-digit decimals (about 2.5 s at this width), far wider than any model's.
MAX_WIDTH = 2**20
#: The most entries one output may hold (8 GiB of float32). A larger size is refused at once,
#: before anything is allocated: it cannot be what was meant, and would not fit in memory.
MAX_ENTRIES = 2**31


def _is_int(value: object) -> TypeGuard[int]:
    # bool is an int subclass, but length=True is always a mistake. NumPy integers pass too
    # (hence the TypeGuard's int is loose): they serve wherever an int does here.
    return type(value) is int or (isinstance(value, numbers.Integral) and not isinstance(value, bool))


def check_length(length, name="length"):
    if not _is_int(length):
        raise TypeError(f"{name} must be a non-negative int, got {length!r} ({type(length).__name__})")
    if length < 0:
        raise ValueError(f"{name} must be a non-negative int, got {length!r}")
    return int(length)


def check_int_at_least(value, name, minimum, why=""):
    """``value`` must be an int >= ``minimum``; ``why`` (e.g. " (...)") follows the rule in the message."""
    if not _is_int(value):
        raise TypeError(f"{name} must be an int >= {minimum}{why}, got {value!r} ({type(value).__name__})")
    if value < minimum:
        raise ValueError(f"{name} must be an int >= {minimum}{why}, got {value!r}")
    return int(value)


def check_width(value, name):
    """``value`` (an int already checked) at most ``MAX_WIDTH``."""
    if value > MAX_WIDTH:
        raise ValueError(f"{name} must be at most 2**20 = {MAX_WIDTH}, got {value!r}")
    return value


def check_entries(names, sizes):
    """An output of ``prod(sizes)`` entries (ints already checked), ``names`` spelling the
    product ("length * d_model"): at most ``MAX_ENTRIES``, checked before allocating."""
    count = math.prod(int(n) for n in sizes)
    if count > MAX_ENTRIES:
        product = " * ".join(str(int(n)) for n in sizes) + f" = {count}" if len(sizes) > 1 else str(count)
        raise ValueError(f"{names} must be at most 2**31 = {MAX_ENTRIES} entries, got {product}")
    return count


def entries_per_position(names, width):
    """A ``fits`` check for ``tables.as_positions``: an output of ``width`` entries per position,
    ``names`` spelling the product ("positions.size * d_model")."""
    return lambda positions: check_entries(names, (positions.size, width))


def check_d_model(d_model):
    return check_width(check_int_at_least(d_model, "d_model", 1), "d_model")


def is_finite(value):
    """``math.isfinite(value)``, and False for an int past float64's range (it has no float64)."""
    try:
        return math.isfinite(value)
    except OverflowError:
        return False


def is_real(value):
    """A real number, not a bool (``True`` is an int to Python, but never a size or an offset)."""
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def is_positive(value):
    """A finite real number > 0 (a size, a frequency), not a bool."""
    return is_real(value) and is_finite(value) and value > 0


def check_real(value, name, above=None, where=""):
    """``value`` as a float, checked finite and, when ``above`` is given, ``> above``.

    ``where`` ends the requirement in the message (" for rope_type='yarn'")."""
    bound = "" if above is None else f" > {above:g}"
    if not is_real(value):
        raise TypeError(f"{name} must be a real number{bound}{where}, got {value!r} ({type(value).__name__})")
    if not is_finite(value) or (above is not None and value <= above):
        raise ValueError(f"{name} must be a finite real number{bound}{where}, got {value!r}")
    return float(value)


def check_base(base):
    return check_real(base, "base", 1.0)


def check_layout(layout, name="layout"):
    return check_choice(layout, LAYOUTS, name)


def is_one_of(value, choices):
    """``value`` is one of ``choices`` (a name, a dtype): an array or a list never is, and is
    not compared element by element (NumPy warns, or raises its own error, for an empty one)."""
    return isinstance(value, Hashable) and value in choices


class _Shown(reprlib.Repr):
    """A value in a message: on one line (an array's repr spans several), a long string, list
    or array cut in its middle."""

    def __init__(self):
        super().__init__()
        self.maxstring = self.maxother = 80

    def repr_instance(self, x, level):
        text = " ".join(repr(x).split())
        if len(text) <= self.maxother:
            return text
        half = (self.maxother - 3) // 2
        return f"{text[:half]}...{text[-half:]}"


def shown(value):
    """``value``'s repr for a message, cut if long; an array's or an unhashable value's type follows."""
    text = _Shown().repr(value)
    if not isinstance(value, Hashable) or hasattr(value, "__array__"):
        text += f" ({type(value).__name__})"
    return text


def check_choice(value, choices, name, *, spelled=None, error=ValueError):
    """Return ``value`` if it is one of ``choices`` (compared as :func:`is_one_of` does), else
    raise ``error``: "NAME must be one of 'a', 'b'; got X". ``spelled`` replaces the list of
    reprs in the message (say "numpy.float32, numpy.float64" or "... or None (the locale)")."""
    if not is_one_of(value, choices):
        allowed = ", ".join(map(repr, choices)) if spelled is None else spelled
        raise error(f"{name} must be one of {allowed}; got {shown(value)}")
    return value


def check_dtype(dtype, allowed, names):
    """Return ``dtype`` if it is in ``allowed``; ``names`` spells them for the message."""
    return check_choice(dtype, allowed, "dtype", spelled=names, error=TypeError)


def as_dtype(dtype):
    """``numpy.dtype(dtype)``; what NumPy cannot read as one is a TypeError naming ``dtype``."""
    try:
        return np.dtype(dtype)
    except TypeError:
        raise TypeError(f"dtype must be a NumPy dtype, got {shown(dtype)}") from None


def check_numpy_dtype(dtype, allowed, names):
    """``check_dtype`` for NumPy: ``dtype`` as ``numpy.dtype`` first (what cannot be one is left as
    received, so the message shows what the caller passed)."""
    if dtype is None:  # NumPy reads None as float64 (and a dtype equals None); posenc's default is float32
        return check_dtype(dtype, (), names)
    try:
        dtype = np.dtype(dtype)
    except TypeError:
        pass
    return check_dtype(dtype, allowed, names)


def as_array(value, name, what):
    """``numpy.asarray(value)``; what NumPy cannot hold is a TypeError: "NAME must be WHAT, got ..."."""
    try:
        return np.asarray(value)
    except (ValueError, TypeError) as error:
        raise TypeError(f"{name} must be {what}, got {value!r}") from error


def check_kind(array, value, name, what="real numbers", kinds=("i", "u", "f")):
    """``array`` (``value`` as NumPy holds it) if its dtype kind is one of ``kinds`` (letters, one
    per kind), else a TypeError: "NAME must hold WHAT, got VALUE: an array of DTYPE"."""
    if array.dtype.kind not in kinds:
        raise TypeError(f"{name} must hold {what}, got {shown(value)}: an array of {array.dtype}")
    return array


def as_numbers(value, name):
    """``value`` as a NumPy array of ints or real floats (``as_array``, then ``check_kind``)."""
    return check_kind(as_array(value, name, "an array of real numbers"), value, name)


def check_axis(shape, axis, name):
    """``axis`` as an int that indexes one of the axes of ``shape`` (the shape of argument ``name``)."""
    error = TypeError if not _is_int(axis) else ValueError
    if error is TypeError or not -len(shape) <= axis < len(shape):
        raise error(f"axis must index one of the {len(shape)} axes of {name} (shape {shape}), got {axis!r}")
    return int(axis)


def check_bool(value, name):
    """``value`` as a bool: True or False only (NumPy's too), not a number or a string."""
    if not isinstance(value, bool | np.bool_):
        raise TypeError(f"{name} must be True or False, got {value!r} ({type(value).__name__})")
    return bool(value)


def check_position_kind(kind, received, name="positions"):
    """``kind`` is a NumPy dtype kind: only signed/unsigned ints and floats are positions."""
    if kind not in "iuf":
        raise TypeError(
            f"{name} must hold integers or real floats, got an array of {received}"
        )


def check_finite(all_finite, received, name="positions"):
    if not all_finite:
        raise ValueError(f"{name} must be finite, got NaN or infinity in {received}")


def check_dropout(dropout):
    if not is_real(dropout):
        raise TypeError(f"dropout must be a real number in [0, 1), got {dropout!r} ({type(dropout).__name__})")
    if not 0.0 <= dropout < 1.0:
        raise ValueError(f"dropout must be a real number in [0, 1), got {dropout!r}")
    return float(dropout)


def check_input_width(shape, d_model):
    """``shape`` of the input to a PositionalEncoding layer: (..., seq, d_model)."""
    if len(shape) < 2:
        raise ValueError(f"x must have shape (batch, seq, d_model) or (seq, d_model), got shape {tuple(shape)}")
    if shape[-1] is not None and shape[-1] != d_model:
        raise ValueError(
            f"the last dimension of x must be d_model={d_model}, got x of shape {tuple(shape)}"
        )


def check_out(shape, dtype, wanted_shape, wanted_dtype):
    """``out=`` must match the table it will hold: same shape, same dtype (the ``dtype`` argument)."""
    if tuple(shape) != tuple(wanted_shape):
        raise ValueError(f"out must have shape {tuple(wanted_shape)}, got out of shape {tuple(shape)}")
    if dtype != wanted_dtype:
        raise TypeError(f"out must have dtype {wanted_dtype} (the dtype argument), got out of dtype {dtype}")
