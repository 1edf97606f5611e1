"""posenc for TensorFlow: the same tables as ``posenc`` with TF ops, and a Keras 3 layer.

Importing this module imports TensorFlow and Keras; ``import posenc`` alone does not.
To keep TensorFlow's C++ start-up lines out of a notebook, set ``TF_CPP_MIN_LOG_LEVEL=3``
before the first import of TensorFlow.
"""

import dataclasses
import functools
import inspect
import math
import os
import re
import sys
import tempfile
import threading
from collections.abc import Sequence
from typing import Any

import keras
import numpy as np
import numpy.typing as npt
import tensorflow as tf

from .engine import checks, kernels, rotation
from .engine.backends import backend
from .forensics.grids import diagnose_grid, identify_grid
from .rope import axial, rotary
from .rope.rotary import ROPE_TYPES, ROTARY_LAYOUTS, convert_rotary_layout, rotary_frequencies, rotary_permutation
from .sinusoidal import conventions, grid, tables
from .sinusoidal.grid import list_grid_conventions
from .sinusoidal.layouts import convert_layout

__all__ = [
    "DTYPES",
    "ROPE_TYPES",
    "ROTARY_LAYOUTS",
    "PositionalEncoding",
    "RotaryEmbedding",
    "apply_rotary",
    "axial_cos_sin",
    "convert_layout",
    "convert_rotary_layout",
    "diagnose_grid",
    "encode",
    "grid_encoding",
    "identify_grid",
    "list_grid_conventions",
    "mrope_cos_sin",
    "positional_encoding",
    "rotary_cos_sin",
    "rotary_frequencies",
    "rotary_permutation",
]

TF = backend("tensorflow")
DTYPES = (tf.float16, tf.bfloat16, tf.float32, tf.float64)
# What keras.layers.Layer takes (its named arguments, and the two it still pops from **kwargs):
# every other keyword of the PositionalEncoding layer is the convention's, checked by posenc.
_KERAS_KEYWORDS = frozenset(inspect.signature(keras.layers.Layer.__init__).parameters) - {"self", "kwargs"} | {
    "input_dim", "input_shape"}


def _check_dtype(dtype):
    names = "tf.float16, tf.bfloat16, tf.float32, tf.float64 or None"
    if dtype is None:
        return tf.float32
    try:
        dtype = tf.as_dtype(dtype)
    except TypeError:
        pass  # left as received, so the message shows what the caller passed
    return checks.check_dtype(dtype, DTYPES, names)


def _as_positions(positions):
    if not tf.is_tensor(positions):
        return tf.constant(tables.as_positions(positions))
    dtype = positions.dtype
    kind = "f" if dtype.is_floating else "i" if dtype.is_integer else "other"
    checks.check_position_kind(kind, f"dtype {dtype.name}")
    positions = tf.cast(positions, tf.float64)
    if kind == "f":
        if tf.executing_eagerly():
            finite = bool(tf.reduce_all(tf.math.is_finite(positions)))
            checks.check_finite(finite, f"a tensor of shape {tuple(positions.shape)}")
        else:
            positions = tf.debugging.assert_all_finite(positions, "positions must be finite")
    return positions


def encode(
    positions: tf.Tensor | npt.ArrayLike, d_model: int, *, convention: str | conventions.Convention = "paper",
    base: float | None = None, layout: str | None = None, dtype: tf.DType | None = None, **options: Any,
) -> tf.Tensor:
    """``positions`` of any shape -> ``(*positions.shape, d_model)`` tensor.

    Same formula, conventions, layouts, checks and accuracy as ``posenc.encode``: float32
    (half precision rounded from it) within 2e-7 by the reduction in half turns of
    ``_rotation`` part 3, float64 ~2e-16 by part 1; ``dtype`` defaults to float32.
    ``convention``, ``base``, ``layout`` and ``options`` as in ``posenc.encode``. Run
    eagerly on CPU positions, NumPy's kernel writes the table into memory that TensorFlow
    takes over (as ``positional_encoding`` does); inside ``tf.function`` (positions of
    unknown length allowed) or on another device, TF ops compiled by XLA into one loop
    compute it (``_half_turns``): as fast as plain float32 ``sin(p * w)`` there, with peak
    memory near the output's (``make bench`` measures both). XLA compiles it once per
    shape of ``positions``.
    """
    dtype = _check_dtype(dtype)
    d_model = checks.check_d_model(d_model)
    chosen = conventions.resolve(convention, base=base, layout=layout, **options)
    positions = _as_positions(positions)
    if positions.shape.num_elements() is not None:  # None: a graph's unknown shape
        checks.check_entries("positions.size * d_model", (positions.shape.num_elements(), d_model))
    frequencies = chosen.frequency_record(d_model)
    w_hi, w_lo, width = frequencies.hi, frequencies.lo, frequencies.width
    built = dtype if dtype in (tf.float16, tf.float32, tf.float64) else tf.float32
    if tf.executing_eagerly() and "CPU" in positions.device:
        table = _aligned_empty((*positions.shape, d_model), built.as_numpy_dtype)
        tables.encode(positions.numpy(), d_model, convention=chosen, dtype=table.dtype, out=table)
        return tf.cast(tf.experimental.dlpack.from_dlpack(table.__dlpack__()), dtype)
    positions = conventions.offset_positions(positions, chosen)
    if dtype == tf.float64:
        sines, cosines = _sin_cos(positions, w_hi, w_lo, tf.float64)
        table = kernels.columns(TF, sines, cosines, chosen.layout, width)
    else:
        table = _half_turns(positions, tf.constant(w_hi / math.pi), chosen.layout, width)
    return _finish(table, d_model, chosen, positions, dtype)


def _sin_cos(positions, w_hi, w_lo, dtype):
    """``(sin, cos)`` of ``positions[..., None] * (w_hi + w_lo)``, each ``dtype``, ``(*positions.shape, h)``.

    ``positions``: a float64 tensor of any shape; ``w_hi + w_lo``: ``h`` float64
    frequencies of any kind (``w_lo`` may be zeros). TF ops only, so it runs in graphs and
    on any device. float64: ``kernels.sincos`` (~2e-16); float32 and half precision:
    ``kernels.half_turns`` compiled by XLA (within 2e-7; half precision one more rounding).
    """
    w_hi, w_lo = (tf.constant(w, tf.float64) if not tf.is_tensor(w) else tf.cast(w, tf.float64) for w in (w_hi, w_lo))
    if dtype == tf.float64:
        return kernels.sincos(TF, positions, w_hi, w_lo)
    s, c = _half_turns(positions, w_hi / math.pi)
    return tf.cast(s, dtype), tf.cast(c, dtype)


def _half_turns(positions, v, layout=None, width=None):
    """``kernels.half_turns`` (part 3 of ``_rotation``'s docstring) in TF ops: float32 ``(sin, cos)`` of
    ``positions[..., None] * v * pi`` (``v``: the frequencies in half turns, float64), each
    ``(*positions.shape, len(v))``; with ``layout``, the ``width`` table columns instead.

    Compiled by XLA (``_half_turns_xla``), which fuses the steps into one loop over the
    output: the float64 angles never exist as full-size tensors (TF's executor would write
    five of them, 3x the output's memory), and its float32 sin and cos are within 3.3e-8 on
    [-pi/2, pi/2], inside the premise of part 3.
    """
    _start_xla_quietly()
    return _half_turns_xla(positions, v, layout, width)


@tf.function(jit_compile=True, autograph=False, reduce_retracing=True)
def _half_turns_xla(positions, v, layout, width):
    s, c = kernels.half_turns(TF, positions, v)
    return (s, c) if layout is None else kernels.columns(TF, s, c, layout, width)


# An absl log line: severity, date, time, thread, file:line]. Before absl is initialised the
# date reads 0000 and the time counts seconds since 1970.
_ABSL_LINE = re.compile(r"([IWEF])\d{4} \d\d:\d\d:\d+\.\d+ +\d+ \S+:\d+\] ")
_ABSL_NOTICE = "WARNING: All log messages before absl::InitializeLog() is called are written to STDERR"
_STDERR = threading.Lock()


@functools.cache
def _start_xla_quietly():
    """Compile one tiny XLA function, holding back the start-up lines TF should have hidden.

    TensorFlow 2.16 to 2.19 (Colab's 2.19 among them) do not initialise absl logging, so the
    first XLA compile of a process writes INFO lines ("XLA service ... initialized", "Compiled
    cluster using XLA!") straight to file descriptor 2 whatever ``TF_CPP_MIN_LOG_LEVEL`` says
    (fixed by tensorflow/tensorflow#102212). They come once per process: compiling once here,
    with descriptor 2 caught and what ``_visible_log`` keeps passed on to ``sys.stderr``,
    leaves every later compile quiet. Runs eagerly even while a graph is being traced.
    """
    sys.stderr.flush()
    with _STDERR, tempfile.TemporaryFile() as caught:
        saved = os.dup(2)
        os.dup2(caught.fileno(), 2)
        try:
            with tf.init_scope():
                tf.function(tf.sin, jit_compile=True)(tf.zeros(1))
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            caught.seek(0)
            sys.stderr.write(_visible_log(caught.read().decode(errors="replace")))


def _visible_log(text):
    """The lines of ``text`` that ``TF_CPP_MIN_LOG_LEVEL`` lets through.

    absl lines below the level (0 or unset: all, 1: no INFO, 2: no WARNING, 3: no ERROR)
    are dropped, and from level 1 absl's notice about its own start; other lines are kept.
    """
    try:
        level = int(os.environ.get("TF_CPP_MIN_LOG_LEVEL", "0"))
    except ValueError:
        level = 0
    kept = []
    for line in text.splitlines(keepends=True):
        absl = _ABSL_LINE.match(line)
        hidden = "IWEF".index(absl[1]) < level if absl else level >= 1 and line.rstrip() == _ABSL_NOTICE
        if not hidden:
            kept.append(line)
    return "".join(kept)


def positional_encoding(
    length: int, d_model: int, *, convention: str | conventions.Convention = "paper", base: float | None = None,
    layout: str | None = None, dtype: tf.DType | None = None, **options: Any,
) -> tf.Tensor:
    """The ``(length, d_model)`` table for positions ``0 .. length - 1``, as ``posenc.positional_encoding``.

    Run eagerly, NumPy's builder (``posenc.positional_encoding``: two small accurate tables
    and one complex multiply) writes the table into memory that TensorFlow then takes over
    without a copy (DLPack; a CPU tensor, which ops on a GPU copy over). Inside a
    ``tf.function`` a graph can hold only TF ops: there TF multiplies the same two small
    tables (``_graph_table``). Either way float32 is within 2e-7, float64 ~1e-15, half
    precision one rounding of the float32 value. ``convention``, ``base``, ``layout`` and
    ``options`` as in ``posenc.positional_encoding``.
    """
    length = checks.check_length(length)
    dtype = _check_dtype(dtype)
    d_model = checks.check_d_model(d_model)
    checks.check_entries("length * d_model", (length, d_model))
    chosen = conventions.resolve(convention, base=base, layout=layout, **options)
    if not tf.executing_eagerly():
        return _graph_table(length, d_model, chosen, dtype)
    built = dtype if dtype in (tf.float16, tf.float32, tf.float64) else tf.float32
    table = _aligned_empty((length, d_model), built.as_numpy_dtype)
    tables.positional_encoding(length, d_model, convention=chosen, dtype=table.dtype, out=table)
    return tf.cast(tf.experimental.dlpack.from_dlpack(table.__dlpack__()), dtype)


def _graph_table(length, d_model, chosen, dtype):
    # Row q*B + r is within[r] * steps[q]: one broadcast complex multiply (kernels.rotated_table).
    frequencies = chosen.frequency_record(d_model)
    w_hi, w_lo, width = frequencies.hi, frequencies.lo, frequencies.width
    real = tf.float64 if dtype == tf.float64 else tf.float32
    ctype = rotation.complex_dtype(real.as_numpy_dtype)
    within, steps = rotation.rotation_factors(length, w_hi, w_lo, ctype, chosen.offset)
    table = kernels.rotated_table(TF, within, steps, length, chosen.layout, width)
    positions = np.arange(length) + chosen.offset if chosen.padding_idx is not None else None
    return _finish(table, d_model, chosen, positions, dtype)


def _aligned_empty(shape, dtype):
    # TensorFlow requires 64-byte aligned memory from DLPack (it aborts the process
    # otherwise), and NumPy guarantees only 16 bytes: over-allocate and start at a multiple of 64.
    size = math.prod(shape) * np.dtype(dtype).itemsize
    raw = np.empty(size + 64, np.uint8)
    start = -raw.ctypes.data % 64
    return raw[start : start + size].view(dtype).reshape(shape)


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
    ``convention`` (a preset name or a ``posenc.conventions.Convention``), ``base``,
    ``layout`` and the source's own options (``max_timescale=...``, ``offset``,
    ``padding_idx``: keywords beside Keras' own ``name``, ``dtype``, ...) choose the table as
    in ``positional_encoding``, as ``posenc.torch.PositionalEncoding`` takes them;
    ``self.convention`` is the resolved one, saved whole by ``get_config``. ``self.pe``: the
    first ``max_len`` rows.
    """

    def __init__(self, d_model: int, max_len: int = 5000, *, dropout: float = 0.0,
                 convention: str | conventions.Convention | dict[str, Any] = "paper", base: float | None = None,
                 layout: str | None = None, **kwargs: Any) -> None:
        options = {name: kwargs.pop(name) for name in list(kwargs) if name not in _KERAS_KEYWORDS}
        super().__init__(**kwargs)
        self.d_model = checks.check_d_model(d_model)
        self.max_len = checks.check_length(max_len, "max_len")
        self.dropout = checks.check_dropout(dropout)
        if isinstance(convention, dict):  # as get_config wrote it
            convention = conventions.Convention(**convention)
        self.convention = conventions.resolve(convention, base=base, layout=layout, **options)
        self.drop = keras.layers.Dropout(self.dropout, dtype=self.dtype_policy)
        self.pe = self._table(tf.range(self.max_len, dtype=tf.float64))

    def _table(self, positions):
        return encode(positions, self.d_model, convention=self.convention)

    def call(self, x: tf.Tensor, training: bool | None = None) -> tf.Tensor:
        checks.check_input_width(x.shape, self.d_model)
        seq = tf.shape(x)[-2]
        # The stored rows, then the rows past max_len computed here: none for a sequence that
        # fits (the range is empty), so no branch is needed. A tf.cond here would become
        # Switch/Merge nodes in Keras' graphs, which Grappler's loop optimizer warns about
        # on stderr (TF 2.19, whatever TF_CPP_MIN_LOG_LEVEL says).
        beyond = self._table(tf.range(self.max_len, tf.maximum(seq, self.max_len), dtype=tf.float64))
        pe = tf.concat([self.pe[:seq], beyond], axis=0)
        return self.drop(x + tf.cast(pe, x.dtype), training=training)

    def compute_output_shape(self, input_shape: tuple[int | None, ...]) -> tuple[int | None, ...]:
        return input_shape

    def get_config(self) -> dict[str, Any]:
        return {
            **super().get_config(),
            "d_model": self.d_model,
            "max_len": self.max_len,
            "dropout": self.dropout,
            "convention": dataclasses.asdict(self.convention),
        }


# Rotary position embedding (RoPE): posenc.rope.rotary's functions with TF ops, and a Keras layer.


def _rope_cos_sin(positions, frequencies, layout, dtype):
    # positions (axes, ...) where the frequencies have axes.
    sin_cos = axial.pair_sin_cos(TF, _sin_cos, frequencies.groups)
    return kernels.rope_cos_sin(TF, sin_cos, positions, frequencies, layout, dtype)


def rotary_cos_sin(
    positions: tf.Tensor | npt.ArrayLike, head_dim: int, *, base: float = 10000.0, rope_type: str = "default",
    layout: str = "half", dtype: tf.DType | None = None, **params: Any,
) -> tuple[tf.Tensor, tf.Tensor]:
    """``(cos, sin)`` tensors, each ``(*positions.shape, rotary_dim)``.

    As ``posenc.rotary_cos_sin`` (frequencies, attention factor, layouts; float32 within 2e-7
    of the exact value at positions up to 10**7, half precision one rounding of that); ``dtype`` defaults to float32. Works inside
    ``tf.function`` with positions of unknown shape.
    """
    layout = rotary.check_rotary_layout(layout)
    dtype = _check_dtype(dtype)
    frequencies = rotary.rope_frequencies(head_dim, base, rope_type, **params)
    return _rope_cos_sin(_as_positions(positions), frequencies, layout, dtype)


def axial_cos_sin(
    positions: tf.Tensor | npt.ArrayLike, head_dim: int, *, base: float = 10000.0, convention: str = "qwen2_vl",
    dtype: tf.DType | None = None,
) -> tuple[tf.Tensor, tf.Tensor]:
    """``(cos, sin)`` tensors of 2-D RoPE, each ``(*positions.shape[1:], head_dim)``, as
    ``posenc.rope.axial.axial_cos_sin`` (``positions`` ``(2, ...)``: rows, then columns).
    ``dtype`` defaults to float32; accuracy as ``rotary_cos_sin``, eagerly and in graphs."""
    frequencies = axial.axial_frequencies(head_dim, base, convention=convention)
    return _rope_cos_sin(_as_positions(positions), frequencies, "half", _check_dtype(dtype))


def mrope_cos_sin(position_ids: tf.Tensor | npt.ArrayLike, head_dim: int, *, mrope_section: Sequence[int],
                  interleaved: bool = False, base: float = 10000.0, rope_type: str = "default",
                  dtype: tf.DType | None = None, **params: Any) -> tuple[tf.Tensor, tf.Tensor]:
    """``(cos, sin)`` tensors of M-RoPE, each ``(*position_ids.shape[1:], rotary_dim)``, as
    ``posenc.rope.axial.mrope_cos_sin`` (``position_ids`` ``(3, ...)``: time, height, width).
    ``dtype`` defaults to float32; accuracy as ``rotary_cos_sin``, eagerly and in graphs."""
    frequencies = axial.mrope_frequencies(head_dim, mrope_section, interleaved, base, rope_type, params)
    return _rope_cos_sin(_as_positions(position_ids), frequencies, "half", _check_dtype(dtype))


def apply_rotary(x: tf.Tensor, cos: tf.Tensor, sin: tf.Tensor, *, layout: str = "half") -> tf.Tensor:
    """``x`` (``(..., seq, head_dim)``) with its pairs rotated by ``cos``/``sin``, as ``posenc.apply_rotary``.

    ``cos``, ``sin``: ``(..., seq, rotary_dim)`` broadcasting against ``x[..., :rotary_dim]``
    (``cos[:, None]`` for ``x`` of ``(batch, heads, seq, head_dim)``). For pairs ``(a, b)``:
    ``a cos - b sin`` and ``b cos + a sin``, put back in the layout's order; channels beyond
    ``rotary_dim`` pass through.
    """
    for name, value in (("x", x), ("cos", cos), ("sin", sin)):
        if not tf.is_tensor(value) and not isinstance(value, np.ndarray):
            raise TypeError(f"{name} must be a tf.Tensor, got {value!r} ({type(value).__name__})")
    rotated = rotary.check_rotary_shapes(x.shape, cos.shape, sin.shape)
    return kernels.apply_rotary(TF, x, cos, sin, rotary.check_rotary_layout(layout), rotated)


_ROPE_PARAMETERS = {name for required, optional in rotary._PARAMETERS.values() for name in required + optional}
_ROPE_PARAMETERS |= set(rotary._SHARED)


@keras.saving.register_keras_serializable(package="posenc")
class RotaryEmbedding(keras.layers.Layer):
    """The ``(cos, sin)`` of RoPE for the positions of a batch, as ``posenc.torch.RotaryEmbedding``.

    ``call(x, position_ids)`` returns ``cos`` and ``sin`` of shape ``(*position_ids.shape,
    rotary_dim)`` in the layer's compute dtype (Keras casts a float ``x`` to it: pass
    ``dtype=`` or a mixed-precision policy), ready for ``apply_rotary(q, cos[:, None], sin[:, None])``.
    ``rope_type`` and its parameters (transformers' names, as keywords beside Keras' own
    ``name``, ``dtype``, ...) as ``posenc.rotary_frequencies``. ``dynamic`` and ``longrope``
    read the sequence length (``max(position_ids) + 1``) when run eagerly; inside a graph
    (``tf.function``, ``fit``) they use the frequencies of their parameters as given.
    ``get_config`` holds everything needed to rebuild the layer.
    """

    def __init__(self, head_dim: int, base: float = 10000.0, *, rope_type: str = "default", layout: str = "half",
                 **kwargs: Any) -> None:
        params = {name: kwargs.pop(name) for name in list(kwargs) if name in _ROPE_PARAMETERS}
        super().__init__(**kwargs)
        self.layout = rotary.check_rotary_layout(layout)
        self.head_dim, self.base, self.rope_type, self.params = head_dim, base, rope_type, params
        self._frequencies = rotary.rope_frequencies(head_dim, base, rope_type, **params)  # also checks them
        self.rotary_dim = rotary.rotary_dim(head_dim, rope_type, **params)

    @property
    def inv_freq(self) -> tf.Tensor:
        """The float64 frequencies (``rotary_frequencies``) of a call without a sequence length."""
        return tf.constant(self._frequencies.hi, tf.float64)

    @property
    def attention_factor(self) -> float:
        return self._frequencies.attention

    def call(self, x: tf.Tensor, position_ids: tf.Tensor | npt.ArrayLike) -> tuple[tf.Tensor, tf.Tensor]:
        dtype = _check_dtype(x.dtype)
        positions = _as_positions(position_ids)
        frequencies = self._frequencies
        if self.rope_type in rotary.LENGTH_DEPENDENT and tf.executing_eagerly() and tf.size(positions) > 0:
            seq_len = int(tf.reduce_max(positions)) + 1
            frequencies = rotary.module_frequencies(self.head_dim, self.base, self.rope_type, self.params, seq_len)
        return _rope_cos_sin(positions, frequencies, self.layout, dtype)

    def compute_output_shape(
        self, x_shape: tuple[int | None, ...], position_ids_shape: tuple[int | None, ...]
    ) -> tuple[tuple[int | None, ...], tuple[int | None, ...]]:
        shape = (*position_ids_shape, self.rotary_dim)
        return shape, shape

    def get_config(self) -> dict[str, Any]:
        return {
            **super().get_config(),
            "head_dim": self.head_dim,
            "base": self.base,
            "rope_type": self.rope_type,
            "layout": self.layout,
            **self.params,
        }


# Sin-cos tables on image grids (posenc.sinusoidal.grid), as tensors.


def grid_encoding(
    shape: Sequence[int], d: int, *, convention: str = "mae", dtype: tf.DType | None = None, **options: Any
) -> tf.Tensor:
    """``posenc.grid_encoding`` as a tensor: ``(prefix + prod(shape), d)``, float32 by default.

    NumPy builds the table (same conventions, options and accuracy: float32 within 2e-7):
    it depends on the shape only, so inside ``tf.function`` it is a constant of the graph.
    bfloat16 is rounded from float32.
    """
    dtype = _check_dtype(dtype)
    built = dtype if dtype in (tf.float16, tf.float32, tf.float64) else tf.float32
    table = grid.grid_encoding(shape, d, convention=convention, dtype=built.as_numpy_dtype, **options)
    return tf.cast(tf.constant(table), dtype)
