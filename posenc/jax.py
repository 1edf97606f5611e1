"""posenc for JAX: the same tables as ``posenc`` as JAX arrays, and Flax NNX modules.

Importing this module imports JAX and Flax; ``import posenc`` alone does not.

Everything works under ``jax.jit`` and ``jax.vmap`` in JAX's default mode (x64 off, no
float64 anywhere): positions that ``jit`` traces go through ``kernels.half_turns_float32``,
float32 within 2e-7 of the exact value for positions up to ``2**24`` (fractional ones too).
Concrete positions (an eager call) are encoded by NumPy, as in ``posenc.torch``, the same
values ``posenc.encode`` gives (and float64 when x64 is on).
"""

import dataclasses
import functools
from collections.abc import Iterator, Sequence
from typing import Any, cast

import jax
import jax.numpy as jnp
import jax.typing
import numpy as np
import numpy.typing as npt
from flax import nnx

from .engine import checks, kernels, rotation
from .engine.backends import backend, backend_of
from .engine.frequencies import Frequencies
from .rope import axial, configs, rotary
from .rope.rotary import ROPE_TYPES, ROTARY_LAYOUTS, convert_rotary_layout, rotary_frequencies, rotary_permutation
from .sinusoidal import conventions, grid, tables
from .sinusoidal.layouts import convert_layout

__all__ = [
    "DTYPES",
    "ROPE_TYPES",
    "ROTARY_LAYOUTS",
    "PositionalEncoding",
    "RotaryEmbedding",
    "RotaryEmbeddingPerLayerType",
    "apply_rotary",
    "axial_cos_sin",
    "convert_layout",
    "convert_rotary_layout",
    "encode",
    "grid_encoding",
    "mrope_cos_sin",
    "positional_encoding",
    "rotary_cos_sin",
    "rotary_frequencies",
    "rotary_permutation",
]

JAX = backend("jax")
NUMPY = backend("numpy")
# The float32-only half turns (the JAX entry has no float64): (sin, cos) of traced positions.
_SIN_COS = functools.partial(kernels.sin_cos, JAX)

DTYPES = tuple(map(jnp.dtype, (jnp.float16, jnp.bfloat16, jnp.float32, jnp.float64)))
_NAMES = "jnp.float16, jnp.bfloat16, jnp.float32, jnp.float64 (with jax_enable_x64) or None"


def _check_dtype(dtype):
    if dtype is None:
        return jnp.dtype(jnp.float32)
    try:
        dtype = jnp.dtype(dtype)
    except TypeError:
        raise TypeError(f"dtype must be one of {_NAMES}, got {dtype!r}") from None
    dtype = checks.check_dtype(dtype, DTYPES, _NAMES)
    if dtype == jnp.float64 and not jax.config.jax_enable_x64:
        raise ValueError(f"dtype float64 needs jax.config.update('jax_enable_x64', True); got dtype={dtype!r} with x64 off")
    return dtype


def _concrete(positions):
    """``positions`` as NumPy float64 (checked as ``posenc.encode`` checks them), or None when traced."""
    if isinstance(positions, jax.core.Tracer):
        kind = jnp.dtype(positions.dtype).kind
        checks.check_position_kind("f" if kind == "V" else kind, f"dtype {positions.dtype}")  # bfloat16: kind V
        return None
    if isinstance(positions, jax.Array) and positions.dtype == jnp.bfloat16:
        positions = positions.astype(jnp.float32)
    return tables.as_positions(np.asarray(positions))


def encode(
    positions: jax.Array | npt.ArrayLike, d_model: int, *, convention: str | conventions.Convention = "paper",
    base: float | None = None, layout: str | None = None, dtype: jax.typing.DTypeLike | None = None, **options: Any,
) -> jax.Array:
    """``positions`` of any shape -> ``(*positions.shape, d_model)`` array, as ``posenc.encode``.

    Same formula, conventions, layouts and checks. ``dtype`` defaults to float32. Concrete
    positions: NumPy's ``posenc.encode`` (float32 within 2e-7, float64 ~2e-16). Traced
    positions (inside ``jit``/``vmap``): the float32-only half turns, within 2e-7 for
    ``|positions| <= 2**24``; an offset is added in float32 (exact for integers).
    """
    dtype = _check_dtype(dtype)
    d_model = checks.check_d_model(d_model)
    chosen = conventions.resolve(convention, base=base, layout=layout, **options)
    concrete = _concrete(positions)
    if concrete is not None:
        wide = np.float64 if dtype == jnp.float64 else np.float32
        return jnp.asarray(tables.encode(concrete, d_model, convention=chosen, dtype=wide), dtype)
    frequencies = chosen.frequency_record(d_model)
    w_hi, w_lo, width = frequencies.hi, frequencies.lo, frequencies.width
    traced = cast(jax.Array, positions)  # _concrete returns None for a tracer only
    shifted = conventions.offset_positions(traced.astype(jnp.float32), chosen)
    sines, cosines = _SIN_COS(shifted, w_hi, w_lo, jnp.float32)
    rows = kernels.columns(JAX, sines, cosines, chosen.layout, width)
    if width < d_model:
        rows = jnp.concatenate([rows, jnp.zeros((*rows.shape[:-1], d_model - width), rows.dtype)], -1)
    if chosen.padding_idx is not None:
        rows = jnp.where((shifted == chosen.padding_idx)[..., None], 0, rows)
    return rows.astype(dtype)


def positional_encoding(
    length: int, d_model: int, *, convention: str | conventions.Convention = "paper", base: float | None = None,
    layout: str | None = None, dtype: jax.typing.DTypeLike | None = None, **options: Any,
) -> jax.Array:
    """The ``(length, d_model)`` table for positions ``0 .. length - 1``, as ``posenc.positional_encoding``.

    ``length`` is a Python int (a shape, static under ``jit``), so NumPy's builder makes the
    table (float32 within 2e-7, float64 ~1e-15; bfloat16 and float16 one rounding of float32)
    and it enters a trace as a constant. ``dtype`` defaults to float32.
    """
    dtype = _check_dtype(dtype)
    wide = np.float64 if dtype == jnp.float64 else np.float32
    table = tables.positional_encoding(length, d_model, convention=convention, base=base, layout=layout, dtype=wide, **options)
    return jnp.asarray(table, dtype)


def grid_encoding(
    shape: Sequence[int], d: int, *, convention: str = "mae", dtype: jax.typing.DTypeLike | None = None, **options: Any
) -> jax.Array:
    """``posenc.grid_encoding`` as a JAX array: ``(prefix + prod(shape), d)`` (NumPy builds it)."""
    dtype = _check_dtype(dtype)
    wide = np.float64 if dtype == jnp.float64 else np.float32
    return jnp.asarray(grid.grid_encoding(shape, d, convention=convention, dtype=wide, **options), dtype)


def _rope_cos_sin(positions, frequencies, layout, dtype, form="channels"):
    # (cos, sin): NumPy's for concrete positions, else traced (positions (axes, ...) where the
    # frequencies have axes).
    groups = frequencies.groups
    if form == "complex":
        c, s = _rope_cos_sin(positions, frequencies, layout, jnp.dtype(jnp.float32), "pairs")
        return c + 1j * s
    concrete = _concrete(positions)
    if concrete is not None:
        wide = np.float64 if dtype == jnp.float64 else np.float32
        sin_cos = axial.pair_sin_cos(NUMPY, rotation.sin_cos, groups)
        c, s = kernels.rope_cos_sin(NUMPY, sin_cos, concrete, frequencies, layout, wide, form)
        return jnp.asarray(c, dtype), jnp.asarray(s, dtype)
    sin_cos = axial.pair_sin_cos(JAX, _SIN_COS, groups)
    return kernels.rope_cos_sin(JAX, sin_cos, positions.astype(jnp.float32), frequencies, layout, dtype, form)


def rotary_cos_sin(
    positions: jax.Array | npt.ArrayLike, head_dim: int, *, base: float = 10000.0, rope_type: str = "default",
    layout: str = "half", dtype: jax.typing.DTypeLike | None = None, **params: Any,
) -> tuple[jax.Array, jax.Array]:
    """``(cos, sin)`` arrays, each ``(*positions.shape, rotary_dim)``, as ``posenc.rotary_cos_sin``.

    Frequencies, attention factor and layouts as there; ``dtype`` defaults to float32.
    float32 within 2e-7 of the exact value at positions up to 10**7, eager or traced (an
    attention factor other than 1 adds one float32 rounding when traced).
    """
    layout = rotary.check_rotary_layout(layout)
    dtype = _check_dtype(dtype)
    return _rope_cos_sin(positions, rotary.rope_frequencies(head_dim, base, rope_type, **params), layout, dtype)


def axial_cos_sin(
    positions: jax.Array | npt.ArrayLike, head_dim: int, *, base: float = 10000.0, convention: str = "qwen2_vl",
    dtype: jax.typing.DTypeLike | None = None,
) -> tuple[jax.Array, jax.Array]:
    """``(cos, sin)`` arrays of 2-D RoPE, each ``(*positions.shape[1:], head_dim)``, as
    ``posenc.rope.axial.axial_cos_sin`` (``positions`` ``(2, ...)``: rows, then columns).

    ``dtype`` defaults to float32; accuracy as ``rotary_cos_sin``, eager or traced.
    """
    frequencies = axial.axial_frequencies(head_dim, base, convention=convention)
    return _rope_cos_sin(positions, frequencies, "half", _check_dtype(dtype))


def mrope_cos_sin(position_ids: jax.Array | npt.ArrayLike, head_dim: int, *, mrope_section: Sequence[int],
                  interleaved: bool = False, base: float = 10000.0, rope_type: str = "default",
                  dtype: jax.typing.DTypeLike | None = None, **params: Any) -> tuple[jax.Array, jax.Array]:
    """``(cos, sin)`` arrays of M-RoPE, each ``(*position_ids.shape[1:], rotary_dim)``, as
    ``posenc.rope.axial.mrope_cos_sin`` (``position_ids`` ``(3, ...)``: time, height, width).

    ``dtype`` defaults to float32; accuracy as ``rotary_cos_sin``, eager or traced.
    """
    frequencies = axial.mrope_frequencies(head_dim, mrope_section, interleaved, base, rope_type, params)
    return _rope_cos_sin(position_ids, frequencies, "half", _check_dtype(dtype))


def _as_array(value: object, name: str) -> jax.Array:
    """``jnp.asarray(value)``; what JAX cannot hold (a string, an int past int32...) is a TypeError naming ``name``."""
    try:
        return jnp.asarray(value)
    except (TypeError, ValueError, OverflowError) as error:
        raise TypeError(f"{name} must be an array of numbers, got {value!r} ({type(value).__name__})") from error


def apply_rotary(x: jax.Array | npt.ArrayLike, cos: jax.Array | npt.ArrayLike, sin: jax.Array | npt.ArrayLike, *,
                 layout: str = "half") -> jax.Array:
    """``x`` (``(..., seq, head_dim)``) with its pairs rotated by ``cos``/``sin``, as ``posenc.apply_rotary``.

    ``cos``, ``sin``: ``(..., seq, rotary_dim)`` broadcasting against ``x[..., :rotary_dim]``
    (``cos[:, None]`` for ``x`` of ``(batch, heads, seq, head_dim)``). Channels beyond
    ``rotary_dim`` pass through. Elementwise, so ``jit`` fuses it.
    """
    x, cos, sin = _as_array(x, "x"), _as_array(cos, "cos"), _as_array(sin, "sin")
    rotated = rotary.check_rotary_shapes(x.shape, cos.shape, sin.shape)
    return kernels.apply_rotary(JAX, x, cos, sin, rotary.check_rotary_layout(layout), rotated)


class _Table(nnx.Variable):
    """A table the module computes (not trained): like torch's non-persistent buffer."""


class PositionalEncoding(nnx.Module):
    """Add the sinusoidal table to batch-first embeddings, then apply dropout (Flax NNX).

    ``module(x)``: ``x`` of shape ``(batch, seq, d_model)`` (or ``(seq, d_model)``) returns
    ``dropout(x + PE[:seq])`` in ``x``'s dtype. The table is ``self.pe`` (a ``Variable``,
    not a ``nnx.Param``: optimizers that update ``nnx.Param`` leave it alone). A sequence
    longer than ``max_len`` grows the table. ``convention``, ``base``, ``layout`` and
    ``options`` as in ``positional_encoding``; ``self.convention`` is the resolved one.
    ``rngs``: ``nnx.Rngs`` for dropout (needed when ``dropout > 0`` in training mode).
    """

    def __init__(self, d_model: int, max_len: int = 5000, *, dropout: float = 0.0, convention: str | conventions.Convention = "paper",
                 base: float | None = None, layout: str | None = None, rngs: nnx.Rngs | None = None, **options: Any) -> None:
        self.d_model = checks.check_d_model(d_model)
        self.convention = conventions.resolve(convention, base=base, layout=layout, **options)
        max_len = checks.check_length(max_len, "max_len")
        self.dropout = nnx.Dropout(checks.check_dropout(dropout), rngs=rngs)
        self.pe = _Table(positional_encoding(max_len, self.d_model, convention=self.convention))

    @property
    def max_len(self) -> int:
        return self.pe[...].shape[0]

    def __call__(self, x: jax.Array | np.ndarray) -> jax.Array:
        if not isinstance(x, (jax.Array, np.ndarray)):
            raise TypeError(f"x must be a JAX or NumPy array, got {type(x).__name__}")
        checks.check_input_width(x.shape, self.d_model)
        seq = x.shape[-2]
        if seq > self.max_len:
            self.pe = _Table(positional_encoding(seq, self.d_model, convention=self.convention, dtype=self.pe[...].dtype))
        return self.dropout(x + self.pe[...][:seq].astype(x.dtype))


class RotaryEmbedding(nnx.Module):
    """The ``(cos, sin)`` of RoPE for the positions of a batch (Flax NNX), as ``posenc.torch.RotaryEmbedding``.

    ``module(x, position_ids)``: ``position_ids`` of shape ``(batch, seq)`` (any shape)
    gives ``cos`` and ``sin`` of shape ``(*position_ids.shape, rotary_dim)`` in ``x``'s
    dtype, ready for ``apply_rotary(q, cos[:, None], sin[:, None])``. Frequencies and
    attention factor as ``posenc.rotary_frequencies`` (``rope_type`` and ``params`` with
    transformers' names). ``inv_freq`` is NumPy float64 (JAX holds no float64 with x64 off);
    ``dynamic`` and ``longrope`` read the sequence length from concrete ``position_ids``
    (under ``jit``, give ``seq_len=`` in ``params``). ``form``: ``"channels"``, ``"pairs"``
    (one value per pair) or ``"complex"`` (``cos + i sin``, complex64).

    ``mrope_section`` (M-RoPE; ``mrope_interleaved`` for Qwen3-VL): ``position_ids`` of shape
    ``(3, batch, seq)`` (time, height, width; a ``(batch, seq)`` one stands for three equal
    rows), pair ``j`` turning by the row ``axes[j]``, as in torch's module. ``from_config``
    builds one from a transformers config.
    """

    FORMS = ("channels", "pairs", "complex")

    def __init__(self, head_dim: int, base: float = 10000.0, *, rope_type: str = "default", layout: str = "half",
                 form: str = "channels", mrope_section: Sequence[int] | None = None, mrope_interleaved: bool = False,
                 **params: Any) -> None:
        self.layout = rotary.check_rotary_layout(layout)
        if not checks.is_one_of(form, self.FORMS):
            raise ValueError(f"form must be one of {', '.join(map(repr, self.FORMS))}; got {form!r}")
        self.form = form
        self.head_dim, self.base, self.rope_type, self.params = head_dim, base, rope_type, params
        # Python floats and ints, not arrays: Flax keeps them as static (hashable) attributes.
        if mrope_section is None:
            frequencies = rotary.rope_frequencies(head_dim, base, rope_type, **params)
        else:
            frequencies = axial.mrope_frequencies(head_dim, mrope_section, mrope_interleaved, base, rope_type, params)
        self._parts = (tuple(frequencies.hi.tolist()), tuple(frequencies.lo.tolist()), float(frequencies.attention))
        self.rotary_dim = rotary.rotary_dim(head_dim, rope_type, **params)
        self.mrope_section = None if mrope_section is None else tuple(mrope_section)
        self.axes = None if frequencies.axes is None else tuple(frequencies.axes.tolist())

    @classmethod
    def from_config(cls, config: Any, *, layer_type: str | None = None) -> "RotaryEmbedding | RotaryEmbeddingPerLayerType":
        """The module for a transformers ``config``, as ``posenc.torch.RotaryEmbedding.from_config``
        (``posenc.rope_config.rotary_arguments``); a config with rope parameters per layer type
        (Gemma 3) gives, without ``layer_type``, a ``RotaryEmbeddingPerLayerType``."""
        return configs.module_from_config(cls, RotaryEmbeddingPerLayerType, config, layer_type)

    @property
    def inv_freq(self) -> np.ndarray:
        """The float64 frequencies (``rotary_frequencies``) of a call without a sequence length, NumPy."""
        return np.array(self._parts[0])

    @property
    def attention_factor(self) -> float:
        return self._parts[2]

    def __call__(self, x: jax.Array | np.ndarray, position_ids: jax.Array | npt.ArrayLike) -> tuple[jax.Array, jax.Array] | jax.Array:
        if not isinstance(x, (jax.Array, np.ndarray)):
            raise TypeError(f"x must be a JAX or NumPy array, got {type(x).__name__}")
        dtype = _check_dtype(x.dtype)
        concrete = _concrete(position_ids)
        positions = position_ids if concrete is None else concrete
        if self.axes is not None:
            positions = axial.text_rows(backend_of(positions), positions)
        w_hi, w_lo, attention = self._parts
        frequencies = Frequencies(np.array(w_hi), np.array(w_lo), attention)
        if self.rope_type in rotary.LENGTH_DEPENDENT and self.params.get("seq_len") is None:
            if concrete is None:
                raise ValueError(
                    f"rope_type {self.rope_type!r} reads the sequence length from position_ids, which jit traces; "
                    "give seq_len= to RotaryEmbedding"
                )
            seq_len = int(concrete.max()) + 1 if concrete.size else None
            frequencies = rotary.module_frequencies(self.head_dim, self.base, self.rope_type, self.params, seq_len)
        axes = None if self.axes is None else np.array(self.axes)
        return _rope_cos_sin(positions, dataclasses.replace(frequencies, axes=axes), self.layout, dtype, self.form)


class RotaryEmbeddingPerLayerType(nnx.Module):
    """One ``RotaryEmbedding`` per layer type, as ``posenc.torch.RotaryEmbeddingPerLayerType``:
    ``module(x, position_ids, layer_type)`` calls that type's module (Gemma 3's sliding and full
    attention turn at different bases); ``module[layer_type]`` is that module."""

    def __init__(self, modules: dict[str, RotaryEmbedding]) -> None:
        self.modules = nnx.Dict(modules)

    def __getitem__(self, layer_type: str) -> RotaryEmbedding:
        return self.modules[configs.check_layer_type(layer_type, self)]

    def __iter__(self) -> Iterator[str]:
        return iter(self.modules.keys())

    def __len__(self) -> int:
        return len(self.modules)

    def __call__(
        self, x: jax.Array | np.ndarray, position_ids: jax.Array | npt.ArrayLike, layer_type: str
    ) -> tuple[jax.Array, jax.Array] | jax.Array:
        return self[layer_type](x, position_ids)
