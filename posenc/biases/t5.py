"""T5's relative position bias (Raffel et al., JMLR 2020): each head learns one scalar per
*bucket* of relative positions and adds it to its attention scores.

``relative_position_bucket`` is transformers' ``T5Attention._relative_position_bucket``
(from Mesh TensorFlow), integer for integer. The relative position is ``key - query``.
With ``bidirectional`` (the encoder) half of the buckets serve keys after the query; without
(the decoder) every later key falls in bucket 0, with distance 0. Of the buckets for one
direction, ``max_exact`` (half of them) hold the distances ``0 .. max_exact - 1`` one each;
the rest cover ``max_exact .. max_distance`` in logarithmically growing bins, and every
distance from ``max_distance`` on shares the last bucket: resolution near the query, reach far
from it. The bin of a distance is ``max_exact + int(log(d / max_exact) / log(max_distance /
max_exact) * (buckets - max_exact))`` computed in float32, as T5 does: some distances sit on a
bin edge in exact arithmetic (16, 32, 64 with the defaults) or within a float32 rounding of one,
and float32 decides their side, so the same float32 steps are taken here (the log rounded once
to float32, IEEE float32 quotient and product). transformers on CPU takes its float32 log from
SLEEF, within one unit in the last place but not always rounded to nearest: in a scan of 28262
settings (both directions, ``num_buckets`` 4 to 259, ``max_distance`` 3 to 4096, every
distance) 6 put one edge distance in the other bin (e.g. ``num_buckets=130, max_distance=108``,
distance 48), none of them a released model's (32 buckets, 128: T5, mT5, UMT5, LongT5, ...).

``relative_position_bias`` looks the buckets up in a checkpoint's table (the
``relative_attention_bias.weight`` of shape ``(num_buckets, heads)``, unchanged) and returns
``(heads, query_length, key_length)``: ``T5Attention.compute_bias`` without its leading
batch axis, query ``i`` at position ``key_offset + i`` (``past_seen_tokens`` there), key ``j``
at ``j``. Unlike ``posenc.biases.alibi_bias(causal=True)`` it holds no causal mask: T5 adds
the mask separately, and so must the caller.
"""

import math

import numpy as np
import numpy.typing as npt

from ..engine import checks
from . import relative

__all__ = ["relative_position_bias", "relative_position_bucket"]


def check_bucketing(bidirectional, num_buckets, max_distance):
    """The bucket arguments, checked: the exact buckets of one direction must be at least one
    (T5 divides by their count) and ``max_distance`` beyond them (it divides by its log)."""
    bidirectional = checks.check_bool(bidirectional, "bidirectional")
    fewest = 4 if bidirectional else 2
    why = f" with bidirectional={bidirectional}"
    num_buckets = checks.check_width(checks.check_int_at_least(num_buckets, "num_buckets", fewest, why), "num_buckets")
    max_exact = num_buckets // fewest  # the exact buckets of one direction
    max_distance = checks.check_int_at_least(
        max_distance, "max_distance", max_exact + 1, f" (num_buckets={num_buckets} gives exact buckets up to {max_exact - 1})"
    )
    return bidirectional, num_buckets, relative.check_position_bound(max_distance, "max_distance")


def _as_relative_positions(relative_position, max_distance):
    """``relative_position`` as int64, clipped to ``[-max_distance, max_distance]`` (every
    distance from ``max_distance`` on lands in the last bucket, so clipping changes no bucket
    and keeps ``abs`` from overflowing)."""
    array = checks.as_array(relative_position, "relative_position", "an array of integers")
    checks.check_kind(array, relative_position, "relative_position", "integers", ("i", "u"))
    # Widened before clipping: NumPy 2.0 refuses a bound its narrow dtype cannot hold (int8 and 128).
    if array.dtype.kind == "u":
        return np.minimum(array.astype(np.uint64), max_distance).astype(np.int64)
    return np.clip(array.astype(np.int64), -max_distance, max_distance)


def _log_bins(distance, max_exact, max_distance, count):
    """``int(log(distance / max_exact) / log(max_distance / max_exact) * count)`` in T5's float32
    steps, for ``distance >= max_exact``."""
    ratio = distance.astype(np.float32) / np.float32(max_exact)
    # float64 log rounded to float32: the float32 log a correctly rounded library returns.
    log = np.log(ratio.astype(np.float64)).astype(np.float32)  # pragma: no mutate (astype(None) is float64 too)
    return (log / np.float32(math.log(max_distance / max_exact)) * np.float32(count)).astype(np.int64)


def _side_buckets(distance, num_buckets, max_distance):
    """The bucket of each ``distance >= 0`` among the ``num_buckets`` of one direction."""
    max_exact = num_buckets // 2
    # Bins for the small distances too (unused there), from max_exact: log(0) would warn.
    bins = _log_bins(np.maximum(distance, max_exact), max_exact, max_distance, num_buckets - max_exact)
    # Not mutated: <= for < is the same bucket, as the bins of max_exact are 0.
    return np.where(distance < max_exact, distance, np.minimum(max_exact + bins, num_buckets - 1))  # pragma: no mutate


def relative_position_bucket(relative_position: npt.ArrayLike, *, bidirectional: bool = True, num_buckets: int = 32,
                             max_distance: int = 128) -> np.ndarray:
    """T5's bucket (int64, in ``[0, num_buckets)``) of each relative position ``key - query``
    (integers, any shape); see the module."""
    bidirectional, num_buckets, max_distance = check_bucketing(bidirectional, num_buckets, max_distance)
    position = _as_relative_positions(relative_position, max_distance)
    if bidirectional:
        num_buckets //= 2
        distance = np.abs(position)
    else:
        distance = -np.minimum(position, 0)
    if distance.size > max_distance:
        # The clipped distances take max_distance + 1 values: bucket those, then look up.
        side = _side_buckets(np.arange(max_distance + 1), num_buckets, max_distance)[distance]
    else:
        side = _side_buckets(distance, num_buckets, max_distance)
    return side + (position > 0) * np.int64(num_buckets) if bidirectional else side


def check_table_shape(shape, num_buckets):
    """A table's shape ``(num_buckets, heads)``, checked against ``num_buckets`` (None: its rows)."""
    if len(shape) != 2:
        raise ValueError(f"table must have shape (num_buckets, heads), got shape {tuple(shape)}")
    if num_buckets is not None and checks.check_int_at_least(num_buckets, "num_buckets", 1) != shape[0]:
        raise ValueError(f"num_buckets={num_buckets!r} must be the table's number of rows, got a table of shape {tuple(shape)}")
    return tuple(shape)


def table_indices(shape, query_length, key_length, *, bidirectional, max_distance, key_offset):
    """Where each entry of the bias sits in the flattened ``(num_buckets, heads)`` table of ``shape``:
    int64 ``(heads, query_length, key_length)``, ``bucket * heads + head``. Checks the arguments."""
    bidirectional, num_buckets, max_distance = check_bucketing(bidirectional, shape[0], max_distance)
    query_length, key_length, key_offset = relative.check_lengths(query_length, key_length, key_offset)
    checks.check_entries("heads * query_length * key_length", (shape[1], query_length, key_length))
    positions = relative.relative_positions(query_length, key_length, key_offset)
    buckets = relative_position_bucket(positions, bidirectional=bidirectional, num_buckets=num_buckets,
                                       max_distance=max_distance)
    return relative.toeplitz(buckets * shape[1] + np.arange(shape[1])[:, None], query_length, key_length)


def relative_position_bias(table: npt.ArrayLike, query_length: int, key_length: int, *, bidirectional: bool = True,
                           num_buckets: int | None = None, max_distance: int = 128, key_offset: int = 0) -> np.ndarray:
    """T5's bias, ``(heads, query_length, key_length)`` of ``table``'s dtype: ``table[bucket(j -
    (key_offset + i)), h]``. ``table`` has shape ``(num_buckets, heads)``; ``num_buckets``
    (default: its rows) must match it. No causal mask (see the module)."""
    array = checks.as_array(table, "table", "an array of shape (num_buckets, heads)")
    checks.check_kind(array, table, "table", "real floats (a checkpoint's weights)", ("f",))
    indices = table_indices(check_table_shape(array.shape, num_buckets), query_length, key_length,
                            bidirectional=bidirectional, max_distance=max_distance, key_offset=key_offset)
    return array.ravel()[indices]
