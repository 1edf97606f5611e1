"""posenc for TensorFlow: the same tables as ``posenc`` with TF ops, and Keras 3 layers.

Importing this module imports TensorFlow and Keras; ``import posenc`` alone does not. To keep
TensorFlow's C++ start-up lines out of a notebook, set ``TF_CPP_MIN_LOG_LEVEL=3`` before the
first import of TensorFlow. The functions and the layers' logic are ``posenc.front``'s, bound
to TensorFlow; ``dtype`` defaults to float32. Run eagerly on CPU positions, NumPy's kernels
write into memory TensorFlow takes over without a copy (DLPack); inside ``tf.function``
(positions of unknown length allowed) or on another device, the kernels run in TF ops,
compiled by XLA into one loop over the output for float32 and half precision (``_half_turns``:
as fast as plain float32 ``sin(p * w)`` there, peak memory near the output's), once per shape.
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
from typing import Any

import keras
import numpy as np
import numpy.typing as npt
import tensorflow as tf

from . import front
from .engine import checks, kernels
from .engine.backends import backend
from .forensics.grids import diagnose_grid, identify_grid
from .rope.rotary import ROPE_TYPES, ROTARY_LAYOUTS, convert_rotary_layout, rotary_frequencies, rotary_permutation
from .sinusoidal import conventions, tables
from .sinusoidal.grid import list_grid_conventions
from .sinusoidal.layouts import convert_layout

__all__ = [
    "DTYPES", "ROPE_TYPES", "ROTARY_LAYOUTS", "PositionalEncoding", "RelativePositionBias", "RotaryEmbedding", "alibi_bias", "alibi_slopes",
    "apply_rotary", "axial_cos_sin", "convert_layout", "convert_rotary_layout", "diagnose_grid", "encode", "grid_encoding", "identify_grid",
    "list_grid_conventions", "mrope_cos_sin", "positional_encoding", "relative_position_bias", "relative_position_bucket", "rotary_cos_sin",
    "rotary_frequencies", "rotary_permutation", "RotaryEmbeddingMixed", "per_axis_cis", "per_axis_cos_sin", "pixel_cos_sin",
    "random_fourier_features", "xpos_cos_sin",
]

TF = backend("tensorflow")
# What keras.layers.Layer takes (its named arguments, and the two it still pops from **kwargs):
# every other keyword of the layers is the convention's or the rope type's, checked by posenc.
_KERAS_KEYWORDS = frozenset(inspect.signature(keras.layers.Layer.__init__).parameters) - {"self", "kwargs"} | {
    "input_dim", "input_shape"}
_keras_keywords = lambda kwargs: {name: kwargs.pop(name) for name in list(kwargs) if name in _KERAS_KEYWORDS}


def _intake(positions, like=None, fits=None):
    if not tf.is_tensor(positions):
        positions = tf.constant(tables.as_positions(positions, fits=fits))
    dtype = positions.dtype
    kind = "f" if dtype.is_floating else "i" if dtype.is_integer else "other"  # pragma: no mutate (i, u, f pass; any other is refused)
    kind = front.check_kind(kind, dtype.name)
    positions, eager = tf.cast(positions, tf.float64), tf.executing_eagerly()
    if kind == "f" and eager:
        checks.check_finite(bool(tf.reduce_all(tf.math.is_finite(positions))), f"a tensor of shape {tuple(positions.shape)}")
    elif kind == "f":
        positions = tf.debugging.assert_all_finite(positions, "positions must be finite")
    shape = None if positions.shape.rank is None else tuple(positions.shape)
    host = (lambda p: p.numpy()) if eager and "CPU" in positions.device else None
    return front.Positions(positions, shape, not eager, host, None, (lambda p: float(tf.reduce_max(p))) if eager else None)


def _aligned_empty(shape, dtype):
    # TensorFlow requires 64-byte aligned memory from DLPack (it aborts the process
    # otherwise), and NumPy guarantees only 16 bytes: over-allocate and start at a multiple of 64.
    size = math.prod(shape) * np.dtype(dtype).itemsize
    raw = np.empty(size + 64, np.uint8)
    start = -raw.ctypes.data % 64
    return raw[start : start + size].view(dtype).reshape(shape)


def _adopt(array, dtype, place=None):
    if not tf.executing_eagerly():
        return tf.cast(tf.constant(array), dtype or array.dtype)  # a constant of the graph
    if array.ctypes.data % 64 or not array.flags.c_contiguous:
        array, given = _aligned_empty(array.shape, array.dtype), array
        array[...] = given
    return tf.cast(tf.experimental.dlpack.from_dlpack(array.__dlpack__()), dtype or array.dtype)  # None: the array's


def _whole(positions, w_hi, w_lo, dtype, layout=None, width=None):
    """The WHOLE route: float64 in TF ops (``kernels.sincos``); float32 and half precision by
    ``kernels.half_turns`` compiled by XLA (``_half_turns``); the ``width`` columns of ``layout``
    (None: ``(sin, cos)``)."""
    if dtype == tf.float64:
        s, c = kernels.sin_cos(TF, positions, w_hi, w_lo, dtype)
        return (s, c) if layout is None else kernels.columns(TF, s, c, layout, width)
    _start_xla_quietly()
    return tf.nest.map_structure(lambda t: tf.cast(t, dtype), _half_turns(positions, tf.cast(w_hi, tf.float64) / math.pi, layout, width))


@tf.function(jit_compile=True, autograph=False, reduce_retracing=True)
def _half_turns(positions, v, layout, width):
    # XLA fuses the steps into one loop over the output: the float64 angles never exist as
    # full-size tensors (TF's executor would write five of them, 3x the output's memory), and
    # its float32 sin and cos are within 3.3e-8 on [-pi/2, pi/2], inside the premise of the proof.
    s, c = kernels.half_turns(TF, positions, v)
    return (s, c) if layout is None else kernels.columns(TF, s, c, layout, width)


# An absl log line: severity, date, time, thread, file:line]. Before absl is initialised the
# date reads 0000 and the time counts seconds since 1970.
_ABSL_LINE = re.compile(r"([IWEF])\d{4} \d\d:\d\d:\d+\.\d+ +\d+ \S+:\d+\] ")
_ABSL_NOTICE = "WARNING: All log messages before absl::InitializeLog() is called are written to STDERR"
# TF_CPP_MIN_LOG_LEVEL hides the severities below it.
_ABSL_SEVERITY = {"I": 0, "W": 1, "E": 2, "F": 3}
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
        level = int(os.environ["TF_CPP_MIN_LOG_LEVEL"])
    except (KeyError, ValueError):  # unset, or not a number: TF shows every line
        level = 0
    kept = []
    for line in text.splitlines(keepends=True):
        absl = _ABSL_LINE.match(line)
        hidden = _ABSL_SEVERITY[absl[1]] < level if absl else level >= 1 and line.rstrip() == _ABSL_NOTICE
        if not hidden:
            kept.append(line)
    return "".join(kept)


_is_tensor = lambda value: tf.is_tensor(value) or isinstance(value, np.ndarray)
SPEC = front.Spec(
    module=__name__, xp=TF, tensor="tf.Tensor", dtype="tf.DType", dtype_names="tf.float16, tf.bfloat16, tf.float32, tf.float64 or None",
    default_dtype=lambda: tf.float32, as_dtype=tf.as_dtype, is_tensor=_is_tensor, intake=_intake, adopt=_adopt, complex=tf.complex,
    as_tensor=front.require(_is_tensor, "a tf.Tensor", tf.convert_to_tensor), empty=_aligned_empty,
    traced=lambda: not tf.executing_eagerly(), whole=_whole, own_keywords=_keras_keywords,
)
DTYPES = SPEC.dtypes
(encode, positional_encoding, grid_encoding, rotary_cos_sin, axial_cos_sin, mrope_cos_sin, apply_rotary, xpos_cos_sin, per_axis_cos_sin,
 per_axis_cis, pixel_cos_sin, random_fourier_features, alibi_slopes, alibi_bias, relative_position_bucket, relative_position_bias) = (
    front.bound(f, SPEC, without=("device", "out")) for f in front.TABLES + front.ROPE + front.VISION + front.BIASES)


@keras.saving.register_keras_serializable(package="posenc")
class PositionalEncoding(front.SinusoidalModule, keras.layers.Layer):
    __doc__ = f"""{front.SinusoidalModule.__doc__}
    Keras: ``call(x, positions=None)``, in the layer's compute dtype (Keras casts float inputs to
    it: pass ``dtype=`` or a mixed-precision policy). ``self.pe`` holds the first ``max_len`` rows;
    the call computes the rows past them (the length may be unknown until run time). The
    convention's options are keywords beside Keras' own (``name``, ``dtype``, ...);
    ``get_config`` saves the resolved convention whole.
    """

    _spec = SPEC

    def __init__(self, d_model: int, max_len: int = 5000, *, dropout: float = 0.0,
                 convention: str | conventions.Convention | dict[str, Any] = "paper", base: float | None = None,
                 layout: str | None = None, **kwargs: Any) -> None:  # pragma: no mutate block (Keras reads the signature)
        super().__init__(**_keras_keywords(kwargs))
        max_len, self.dropout = self._configure(d_model, max_len, dropout, convention, base, layout, kwargs)
        self.drop = keras.layers.Dropout(self.dropout, dtype=self.dtype_policy)
        self.pe = self._range(0, max_len)

    def _range(self, start, stop):
        positions = SPEC.intake(tf.range(start, stop, dtype=tf.float64), None)
        return front._encode(SPEC, positions, self.d_model, self.convention, tf.float32, frequencies=self._frequencies)

    def _first_rows(self, x):
        # The stored rows, then the rows past max_len computed here: none for a sequence that
        # fits (the range is empty), so no branch is needed. A tf.cond here would become
        # Switch/Merge nodes in Keras' graphs, which Grappler's loop optimizer warns about
        # on stderr (TF 2.19, whatever TF_CPP_MIN_LOG_LEVEL says).
        seq = tf.shape(x)[-2]
        return tf.concat([self.pe[:seq], self._range(self.max_len, tf.maximum(seq, self.max_len))], axis=0)

    def call(self, x: tf.Tensor, positions: tf.Tensor | npt.ArrayLike | None = None, training: bool | None = None) -> tf.Tensor:
        return self.drop(x + tf.cast(self._rows(x, positions), x.dtype), training=training)

    def compute_output_shape(self, x_shape: tuple[int | None, ...], positions_shape: Any = None) -> tuple[int | None, ...]:
        return x_shape

    def get_config(self) -> dict[str, Any]:
        return {**super().get_config(), "d_model": self.d_model, "max_len": self.max_len, "dropout": self.dropout,
                "convention": dataclasses.asdict(self.convention)}


@keras.saving.register_keras_serializable(package="posenc")
class RotaryEmbedding(front.LayerConfig, front.RotaryModule, keras.layers.Layer):
    __doc__ = f"""{front.RotaryModule.__doc__}
    Keras: ``call(x, position_ids)``, in the layer's compute dtype (Keras casts a float ``x`` to
    it); the rope type's parameters are keywords beside Keras' own (``name``, ``dtype``, ...).
    Inside a graph (``tf.function``, ``fit``) ``dynamic`` and ``longrope`` use the frequencies of
    their parameters as given (give ``seq_len=``). ``get_config`` holds everything needed to
    rebuild the layer.
    """

    _spec = SPEC

    @classmethod
    def from_config(cls, config: Any, *, layer_type: str | None = None) -> Any:
        """Keras' own (the dict ``get_config`` wrote), or a transformers ``config`` read as
        ``posenc.torch.RotaryEmbedding.from_config`` reads it (one layer type at a time)."""
        if isinstance(config, dict) and "model_type" not in config:
            return super(front.RotaryModule, cls).from_config(config)
        return front.RotaryModule.from_config.__func__(cls, config, layer_type=layer_type)  # type: ignore[attr-defined]

    def call(self, x: tf.Tensor, position_ids: tf.Tensor | npt.ArrayLike) -> tuple[tf.Tensor, tf.Tensor] | tf.Tensor:
        return self._cos_sin(x, position_ids)


@keras.saving.register_keras_serializable(package="posenc")
class RotaryEmbeddingMixed(front.LayerConfig, front.MixedModule, keras.layers.Layer):
    _spec, call = SPEC, front.MixedModule._call

    def __init__(self, head_dim: int, depth: int, num_heads: int, *, base: float = 10.0, layout: str = "interleaved",
                 seed: int | None = None, **kwargs: Any) -> None:  # pragma: no mutate block (Keras reads the signature)
        super().__init__(**kwargs)
        uniform = lambda shape: keras.random.uniform(shape, seed=seed)
        self.freqs = keras.Variable(self._configure(head_dim, depth, num_heads, base, layout, uniform), name="freqs")


@keras.saving.register_keras_serializable(package="posenc")
class RelativePositionBias(front.RelativeBiasModule, keras.layers.Layer):
    _spec = SPEC
    _new_table = lambda self, *shape: self.add_weight(shape=shape, name="relative_attention_bias")

    def call(self, query_length: int, key_length: int, key_offset: int = 0) -> tf.Tensor:
        return self._bias(tf.convert_to_tensor(self.relative_attention_bias), query_length, key_length, key_offset)
