"""posenc for TensorFlow: the same tables as ``posenc`` with TF ops, and a Keras 3 layer.

Importing this module imports TensorFlow and Keras; ``import posenc`` alone does not.
To keep TensorFlow's C++ start-up lines out of a notebook, set ``TF_CPP_MIN_LOG_LEVEL=3``
before the first import of TensorFlow.
"""

import dataclasses
import math

import keras
import numpy as np
import tensorflow as tf

from . import _checks, _core, _rotation, conventions
from .layouts import convert_layout  # noqa: F401  (re-exported: one function serves every framework)

DTYPES = (tf.float16, tf.bfloat16, tf.float32, tf.float64)


def _check_dtype(dtype):
    names = "tf.float16, tf.bfloat16, tf.float32, tf.float64 or None"
    if dtype is None:
        return tf.float32
    try:
        dtype = tf.as_dtype(dtype)
    except TypeError:
        pass  # left as received, so the message shows what the caller passed
    return _checks.check_dtype(dtype, DTYPES, names)


def _as_positions(positions):
    if not tf.is_tensor(positions):
        return tf.constant(_core.as_positions(positions))
    dtype = positions.dtype
    kind = "f" if dtype.is_floating else "i" if dtype.is_integer else "other"
    _checks.check_position_kind(kind, f"dtype {dtype.name}")
    positions = tf.cast(positions, tf.float64)
    if kind == "f":
        if tf.executing_eagerly():
            finite = bool(tf.reduce_all(tf.math.is_finite(positions)))
            _checks.check_finite(finite, f"a tensor of shape {tuple(positions.shape)}")
        else:
            positions = tf.debugging.assert_all_finite(positions, "positions must be finite")
    return positions


def encode(positions, d_model, *, convention="paper", base=None, layout=None, dtype=None, **options):
    """``positions`` of any shape -> ``(*positions.shape, d_model)`` tensor.

    Same formula, conventions, layouts, checks and accuracy as ``posenc.encode``: sines
    and cosines in float64 from an angle carried to twice float64 precision
    (``_rotation.sincos``, TF ops), rounded once to ``dtype`` (default float32).
    ``convention``, ``base``, ``layout`` and ``options`` as in ``posenc.encode``. Works
    inside ``tf.function`` with positions of unknown length.
    """
    dtype = _check_dtype(dtype)
    d_model = _checks.check_d_model(d_model)
    chosen = conventions.resolve(convention, base=base, layout=layout, **options)
    w_hi, w_lo, width = chosen.parts(d_model)
    positions = conventions.offset_positions(_as_positions(positions), chosen)
    s, c = _rotation.sincos(positions, tf.constant(w_hi), tf.constant(w_lo), tf.sin, tf.cos)
    table = tf.gather(tf.concat([s, c], axis=-1), _order(width, chosen.layout), axis=-1)
    return _finish(table, d_model, chosen, positions, dtype)


def positional_encoding(length, d_model, *, convention="paper", base=None, layout=None, dtype=None, **options):
    """The ``(length, d_model)`` table for positions ``0 .. length - 1``, as ``posenc.positional_encoding``.

    Run eagerly, NumPy's builder (``posenc.positional_encoding``: two small accurate tables
    and one complex multiply) writes the table into memory that TensorFlow then takes over
    without a copy (DLPack; a CPU tensor, which ops on a GPU copy over). Inside a
    ``tf.function`` a graph can hold only TF ops: there TF multiplies the same two small
    tables (``_graph_table``). Either way float32 is within 2e-7, float64 ~1e-15, half
    precision one rounding of the float32 value. ``convention``, ``base``, ``layout`` and
    ``options`` as in ``posenc.positional_encoding``.
    """
    length = _checks.check_length(length)
    dtype = _check_dtype(dtype)
    d_model = _checks.check_d_model(d_model)
    chosen = conventions.resolve(convention, base=base, layout=layout, **options)
    if not tf.executing_eagerly():
        return _graph_table(length, d_model, chosen, dtype)
    built = dtype if dtype in (tf.float16, tf.float32, tf.float64) else tf.float32
    table = _aligned_empty((length, d_model), built.as_numpy_dtype)
    _core.positional_encoding(length, d_model, convention=chosen, dtype=table.dtype, out=table)
    return tf.cast(tf.experimental.dlpack.from_dlpack(table.__dlpack__()), dtype)


def _graph_table(length, d_model, chosen, dtype):
    # Row q*B + r is within[r] * steps[q]: one broadcast complex multiply whose result,
    # bitcast to float pairs, already is the interleaved table; other layouts and odd
    # widths gather its columns.
    w_hi, w_lo, width = chosen.parts(d_model)
    real = tf.float64 if dtype == tf.float64 else tf.float32
    ctype = _rotation.complex_dtype(real.as_numpy_dtype)
    within, steps = _rotation.rotation_factors(length, w_hi, w_lo, ctype, chosen.offset)
    z = tf.constant(within) * tf.constant(steps)[:, None]
    table = tf.reshape(tf.bitcast(z, real), (-1, 2 * within.shape[-1]))[:length]
    if chosen.layout != "interleaved" or width % 2:
        order = _order(width, chosen.layout)
        half = (width + 1) // 2
        table = tf.gather(table, np.where(order < half, 2 * order, 2 * (order - half) + 1), axis=-1)
    positions = np.arange(length) + chosen.offset if chosen.padding_idx is not None else None
    return _finish(table, d_model, chosen, positions, dtype)


def _aligned_empty(shape, dtype):
    # TensorFlow requires 64-byte aligned memory from DLPack (it aborts the process
    # otherwise), and NumPy guarantees only 16 bytes: over-allocate and start at a multiple of 64.
    size = math.prod(shape) * np.dtype(dtype).itemsize
    raw = np.empty(size + 64, np.uint8)
    start = -raw.ctypes.data % 64
    return raw[start : start + size].view(dtype).reshape(shape)


def _order(width, layout):
    # column_order for the sin/cos columns; none at all for width 0 (d_model=1, "zero" policy).
    return _core.column_order(width, layout) if width else np.zeros(0, np.int64)


def _finish(table, d_model, chosen, positions, dtype):
    """Cast the sin/cos columns to ``dtype``, append the zero column of an odd width under the
    "zero" policy, and zero the rows whose position is ``padding_idx``."""
    table = tf.cast(table, dtype)
    if table.shape[-1] != d_model:
        table = tf.concat([table, tf.zeros(tf.concat([tf.shape(table)[:-1], [1]], 0), dtype)], axis=-1)
    if chosen.padding_idx is not None:
        keep = tf.cast(tf.not_equal(tf.cast(positions, tf.float64), chosen.padding_idx), dtype)
        table = table * keep[..., None]
    return table


@keras.saving.register_keras_serializable(package="posenc")
class PositionalEncoding(keras.layers.Layer):
    """Add the sinusoidal table to batch-first embeddings, then apply dropout.

    ``call(x)``: ``x`` of shape ``(batch, seq, d_model)`` returns ``dropout(x + PE[:seq])``
    in the layer's compute dtype (Keras casts float inputs to it: pass ``dtype=`` or a
    mixed-precision policy). The first ``max_len`` rows are computed once; a longer sequence
    (the length may be unknown until run time) gets its remaining rows computed in the call.
    ``convention`` (a preset name or a ``posenc.conventions.Convention``, e.g. from
    ``posenc.conventions.resolve(name, **options)`` for a source's own options), ``base``
    and ``layout`` choose the table as in ``positional_encoding``; ``self.convention`` is
    the resolved one, saved whole by ``get_config``.
    """

    def __init__(self, d_model, max_len=5000, *, dropout=0.0, convention="paper", base=None, layout=None, **kwargs):
        super().__init__(**kwargs)
        self.d_model = _checks.check_d_model(d_model)
        self.max_len = _checks.check_length(max_len, "max_len")
        self.dropout = _checks.check_dropout(dropout)
        if isinstance(convention, dict):  # as get_config wrote it
            convention = conventions.Convention(**convention)
        self.convention = conventions.resolve(convention, base=base, layout=layout)
        self.drop = keras.layers.Dropout(self.dropout, dtype=self.dtype_policy)
        self.table = self._table(tf.range(self.max_len, dtype=tf.float64))

    def _table(self, positions):
        return encode(positions, self.d_model, convention=self.convention)

    def call(self, x, training=None):
        _checks.check_input_width(x.shape, self.d_model)
        seq = tf.shape(x)[-2]
        # The stored rows, then the rows past max_len computed here: none for a sequence that
        # fits (the range is empty), so no branch is needed. A tf.cond here would become
        # Switch/Merge nodes in Keras' graphs, which Grappler's loop optimizer warns about
        # on stderr (TF 2.19, whatever TF_CPP_MIN_LOG_LEVEL says).
        beyond = self._table(tf.range(self.max_len, tf.maximum(seq, self.max_len), dtype=tf.float64))
        pe = tf.concat([self.table[:seq], beyond], axis=0)
        return self.drop(x + tf.cast(pe, x.dtype), training=training)

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        return {
            **super().get_config(),
            "d_model": self.d_model,
            "max_len": self.max_len,
            "dropout": self.dropout,
            "convention": dataclasses.asdict(self.convention),
        }
