"""Relative positions of queries and keys, and the Toeplitz matrices built on them.

Query ``i`` (``0 <= i < query_length``) sits at position ``key_offset + i``, key ``j`` at
position ``j``: ``key_offset`` is the number of keys before the first query (the cache length
in cached decoding, where ``key_length = key_offset + query_length`` and the queries are the
last positions; 0 when queries and keys are the same sequence). A bias that depends on the
relative position ``j - (key_offset + i)`` only is constant along each diagonal of the
``(query_length, key_length)`` matrix, so it is computed once per diagonal and spread.
"""

import numpy as np
import numpy.typing as npt

from ..engine import checks

__all__ = ["MAX_POSITION", "relative_positions", "toeplitz"]

#: The largest position (``key_offset + query_length``, ``key_length``, ``max_distance``):
#: integers up to 2**53 are exact in float64, where ALiBi multiplies them by its slopes.
MAX_POSITION = 2**53


def check_position_bound(value, name):
    if value > MAX_POSITION:
        raise ValueError(f"{name} must be at most 2**53 = {MAX_POSITION} (exact in float64), got {value!r}")
    return value


def check_lengths(query_length, key_length, key_offset):
    """The three ints of a bias, checked; positions up to ``MAX_POSITION``."""
    query_length = checks.check_length(query_length, "query_length")
    key_length = check_position_bound(checks.check_length(key_length, "key_length"), "key_length")
    key_offset = checks.check_length(key_offset, "key_offset")
    check_position_bound(key_offset + query_length, "key_offset + query_length")
    return query_length, key_length, key_offset


def relative_positions(query_length: int, key_length: int, key_offset: int) -> np.ndarray:
    """The ``query_length + key_length - 1`` relative positions ``j - (key_offset + i)``, int64,
    increasing: from the last query's first key to the first query's last key (empty if either
    length is 0)."""
    query_length, key_length, key_offset = check_lengths(query_length, key_length, key_offset)
    if not query_length or not key_length:
        return np.empty(0, np.int64)
    checks.check_entries("query_length + key_length - 1", (query_length + key_length - 1,))
    first, stop = -(key_offset + query_length - 1), key_length - key_offset
    # dtype: NumPy's default int is int64 on every platform tested, but int32 on Windows before NumPy 2.
    return np.arange(first, stop, dtype=np.int64)  # pragma: no mutate (dtype=None: the same here)


def toeplitz(values: np.ndarray, query_length: int, key_length: int, dtype: npt.DTypeLike | None = None) -> np.ndarray:
    """``values`` of shape ``(..., query_length + key_length - 1)``, one per relative position
    as ``relative_positions`` orders them, spread to ``(..., query_length, key_length)``:
    ``out[..., i, j] = values[..., j - i + query_length - 1]``, a new array of ``dtype``
    (``values.dtype`` if None)."""
    query_length, key_length, _ = check_lengths(query_length, key_length, 0)
    values = checks.check_kind(checks.as_array(values, "values", "an array of shape (..., query_length + key_length - 1)"),
                               values, "values", "numbers", ("b", "i", "u", "f", "c"))
    diagonals = query_length + key_length - 1 if query_length and key_length else 0
    if values.ndim == 0 or values.shape[-1] != diagonals:
        raise ValueError(f"values must have shape (..., query_length + key_length - 1) = (..., {diagonals}), got shape {values.shape}")
    checks.check_entries("values.shape[:-1] * query_length * key_length", (*values.shape[:-1], query_length, key_length))
    dtype = values.dtype if dtype is None else checks.as_dtype(dtype)
    out = np.empty(values.shape[:-1] + (query_length, key_length), dtype)
    if query_length and key_length:
        # Window s holds values[s : s + key_length], the row of query query_length - 1 - s.
        windows = np.lib.stride_tricks.sliding_window_view(values, key_length, axis=-1)
        out[...] = windows[..., ::-1, :]
    return out
