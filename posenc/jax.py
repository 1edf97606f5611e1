"""posenc for JAX: the same tables as ``posenc`` as JAX arrays, and Flax NNX modules.

Importing this module imports JAX and Flax; ``import posenc`` alone does not. The functions
and the modules' logic are ``posenc.front``'s, bound to JAX; ``dtype`` defaults to float32.
Everything works under ``jax.jit`` and ``jax.vmap`` in JAX's default mode (x64 off, no float64
anywhere): traced positions go through ``kernels.half_turns_float32``, float32 within 2e-7 of
the exact value for positions up to ``2**24`` (fractional ones too). Concrete positions in host
memory are encoded by NumPy, the same values ``posenc.encode`` gives (float64 when x64 is on),
on the device they came from; arrays on another device or sharded over several keep their
placement and sharding (the half turns in JAX operations, no round trip through the host).
"""

from collections.abc import Iterator
from typing import Any

import jax
import jax.numpy as jnp
import jax.typing
import numpy as np
import numpy.typing as npt
from flax import nnx

from . import front
from .engine import checks
from .engine.backends import backend
from .rope import configs
from .rope.rotary import ROPE_TYPES, ROTARY_LAYOUTS, convert_rotary_layout, rotary_frequencies, rotary_permutation
from .sinusoidal import conventions, tables
from .sinusoidal.layouts import convert_layout

__all__ = [
    "DTYPES", "ROPE_TYPES", "ROTARY_LAYOUTS", "PositionalEncoding", "RelativePositionBias", "RotaryEmbedding",
    "RotaryEmbeddingPerLayerType", "alibi_bias", "alibi_slopes", "apply_rotary", "axial_cos_sin", "convert_layout", "convert_rotary_layout",
    "encode", "grid_encoding", "mrope_cos_sin", "positional_encoding", "relative_position_bias", "relative_position_bucket",
    "rotary_cos_sin", "rotary_frequencies", "rotary_permutation", "RotaryEmbeddingMixed", "per_axis_cis", "per_axis_cos_sin",
    "pixel_cos_sin", "random_fourier_features", "xpos_cos_sin",
]


def _kind(array):
    kind = jnp.dtype(array.dtype).kind
    return front.check_kind("f" if kind == "V" else kind, array.dtype)  # bfloat16: kind V


def _intake(positions, like=None, fits=None):
    if isinstance(positions, jax.core.Tracer):
        _kind(positions)
        return front.Positions(positions.astype(jnp.float32), positions.shape, traced=True)
    # devices() and sharding, not .device: a method before JAX 0.4.27, a property after.
    if isinstance(positions, jax.Array) and [device.platform for device in positions.devices()] != ["cpu"]:
        # On an accelerator or sharded: computed there, keeping the sharding.
        if _kind(positions) == "f":
            checks.check_finite(bool(jnp.isfinite(positions).all()), f"an array of shape {positions.shape}")
        return front.Positions(positions.astype(jnp.float32), positions.shape, False, None, positions.sharding,
                               lambda p: float(jnp.max(p)))
    place = positions.sharding if isinstance(positions, jax.Array) else None
    if isinstance(positions, jax.Array) and positions.dtype == jnp.bfloat16:
        positions = positions.astype(jnp.float32)
    host = tables.as_positions(np.asarray(positions) if isinstance(positions, jax.Array) else positions, fits=fits)
    return front.Positions(None, host.shape, False, host, place)


def _adopt(array, dtype, place=None):
    return jnp.asarray(array, dtype) if place is None else jax.device_put(array, place).astype(dtype)


_rngs = front.require(lambda value: isinstance(value, nnx.Rngs), "nnx.Rngs")


def _flax_keywords(keywords):
    keywords.pop("rngs", None)  # taken as Flax modules take it (nnx.bridge.to_linen passes it): RoPE draws nothing
    return {}


SPEC = front.Spec(
    module=__name__, xp=backend("jax"), tensor="jax.Array", accepts="jax.Array or numpy.ndarray", dtype="jax.typing.DTypeLike",
    dtype_names="jnp.float16, jnp.bfloat16, jnp.float32, jnp.float64 (with jax_enable_x64) or None",
    default_dtype=lambda: jnp.dtype(jnp.float32), as_dtype=jnp.dtype, is_tensor=lambda value: isinstance(value, (jax.Array, np.ndarray)),
    intake=_intake, adopt=_adopt, complex=jax.lax.complex, as_tensor=front.require(lambda value: True, "an array of numbers", jnp.asarray),
    unread_length="which jit traces",
    float64_needs=lambda: None if jax.config.read("jax_enable_x64") else "jax.config.update('jax_enable_x64', True)",
    own_keywords=_flax_keywords,
)
DTYPES = SPEC.dtypes
(encode, positional_encoding, grid_encoding, rotary_cos_sin, axial_cos_sin, mrope_cos_sin, apply_rotary, xpos_cos_sin, per_axis_cos_sin,
 per_axis_cis, pixel_cos_sin, random_fourier_features, alibi_slopes, alibi_bias, relative_position_bucket, relative_position_bias) = (
    front.bound(f, SPEC, without=("device", "out")) for f in front.TABLES + front.ROPE + front.VISION + front.BIASES)


class _Table(nnx.Variable):
    """A table the module computes (not trained): like torch's non-persistent buffer."""


class PositionalEncoding(front.SinusoidalModule, nnx.Module):
    __doc__ = f"""{front.SinusoidalModule.__doc__}
    Flax NNX: ``module(x, positions=None)``, in ``x``'s dtype, under ``jit`` too; ``self.pe`` is a
    ``Variable``, not a ``nnx.Param`` (optimizers leave it alone), grown for a longer sequence.
    ``rngs``: ``nnx.Rngs`` with a ``dropout`` stream, needed only for ``dropout > 0`` in training
    mode. From Linen: ``flax.nnx.bridge.to_linen``.
    """

    _spec = SPEC

    def __init__(self, d_model: int, max_len: int = 5000, *, dropout: float = 0.0, convention: str | conventions.Convention = "paper",
                 base: float | None = None, layout: str | None = None, rngs: nnx.Rngs | None = None, **options: Any) -> None:
        max_len, dropout = self._configure(d_model, max_len, dropout, convention, base, layout, options)
        rngs = None if rngs is None else _rngs(rngs, "rngs")
        self.dropout = nnx.Dropout(dropout, rngs=rngs if dropout else None)
        self.pe = _Table(self._table(max_len))

    def __call__(self, x: jax.Array | np.ndarray, positions: jax.Array | npt.ArrayLike | None = None) -> jax.Array:
        return self.dropout(x + self._rows(x, positions).astype(x.dtype))

    def _first_rows(self, x):
        if x.shape[-2] > self.max_len:
            self.pe = _Table(self._table(x.shape[-2], self.pe[...].dtype))
        return self.pe[...][: x.shape[-2]]


class RotaryEmbeddingPerLayerType(nnx.Module):
    """One ``RotaryEmbedding`` per layer type, as ``posenc.torch.RotaryEmbeddingPerLayerType``:
    ``module(x, position_ids, layer_type)`` calls that type's module (Gemma 3's sliding and full
    attention turn at different bases); ``module[layer_type]`` is that module."""

    def __init__(self, modules: dict[str, "RotaryEmbedding"]) -> None:
        self.modules = nnx.Dict(configs.check_modules(modules, RotaryEmbedding))

    def __getitem__(self, layer_type: str) -> "RotaryEmbedding":
        return self.modules[configs.check_layer_type(layer_type, self)]

    def __iter__(self) -> Iterator[str]:
        return iter(self.modules.keys())

    def __len__(self) -> int:
        return len(self.modules)

    def __call__(
        self, x: jax.Array | np.ndarray, position_ids: jax.Array | npt.ArrayLike, layer_type: str
    ) -> tuple[jax.Array, jax.Array] | jax.Array:
        return self[layer_type](x, position_ids)


class RotaryEmbedding(front.RotaryModule, nnx.Module):
    __doc__ = f"""{front.RotaryModule.__doc__}
    Flax NNX: ``module(x, position_ids)``. Under ``jit``, ``dynamic`` and ``longrope`` need ``seq_len=``
    in ``params``. ``rngs`` is taken as Flax modules take it (``nnx.bridge.to_linen`` passes it) and unused.
    """

    _spec = SPEC
    _per_layer_type = RotaryEmbeddingPerLayerType

    def __call__(self, x: jax.Array | np.ndarray, position_ids: jax.Array | npt.ArrayLike) -> tuple[jax.Array, jax.Array] | jax.Array:
        return self._cos_sin(x, position_ids)


class RotaryEmbeddingMixed(front.MixedModule, nnx.Module):
    _spec, __call__ = SPEC, front.MixedModule._call

    def __init__(self, head_dim: int, depth: int, num_heads: int, *, base: float = 10.0, layout: str = "interleaved",
                 rngs: nnx.Rngs) -> None:
        key = _rngs(rngs, "rngs").params()
        self.freqs = nnx.Param(self._configure(head_dim, depth, num_heads, base, layout, lambda shape: jax.random.uniform(key, shape)))


class RelativePositionBias(front.RelativeBiasModule, nnx.Module):
    _spec = SPEC

    def __init__(self, num_heads: int, *, bidirectional: bool = True, num_buckets: int = 32, max_distance: int = 128,
                 rngs: nnx.Rngs) -> None:
        rngs = _rngs(rngs, "rngs")  # it initialises the table
        self._configure(num_heads, bidirectional, num_buckets, max_distance)
        self.relative_attention_bias = nnx.Embed(self.num_buckets, self.num_heads, rngs=rngs)

    def __call__(self, query_length: int, key_length: int, key_offset: int = 0) -> jax.Array:
        return self._bias(self.relative_attention_bias.embedding[...], query_length, key_length, key_offset)
