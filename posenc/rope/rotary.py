"""Rotary position embedding (RoPE): the sinusoidal frequencies, applied as rotations.

RoPE turns each pair of query/key channels ``(a, b)`` of position ``p`` by the angle
``p * w_j``:

    a' = a * cos(p w_j) - b * sin(p w_j)
    b' = b * cos(p w_j) + a * sin(p w_j)

that is, the head's vector is multiplied by ``R(p w)``, the block-diagonal matrix of the
2x2 rotations by ``p * w_j``, so the score ``q_p . k_s`` depends on ``p - s`` only.
``w_j = base ** (-2j / rotary_dim)`` are the frequencies of the sinusoidal table over the
channels of one head (``head_dim``, not ``d_model``). ``"default"`` is that; the other rope
types are the ones of Hugging Face transformers' ``modeling_rope_utils.ROPE_INIT_FUNCTIONS``
(``linear``, ``dynamic``, ``yarn``, ``longrope``, ``llama3``, ``proportional``; the default
lives on each model's rotary class), which rescale the frequencies per channel; yarn and
longrope also scale cos and sin by an attention factor. Parameters keep transformers' names.

Layouts (``ROTARY_LAYOUTS``) say which channels pair up in a head of ``rotary_dim`` channels:

- ``"half"``: channel ``j`` with ``j + rotary_dim // 2``; cos and sin are ``concat(f, f)``
  of the per-frequency values ``f``. GPT-NeoX and most transformers models (Llama, Mistral,
  Qwen2, Gemma, Phi-3, ...: ``rotate_half(x) = cat(-x2, x1)``).
- ``"interleaved"``: channel ``2j`` with ``2j + 1``; cos and sin hold each frequency twice
  in a row. Meta's reference Llama code (complex numbers), GPT-J and CodeGen
  (``rotate_every_two``), and in transformers the ``rotate_half`` of Cohere and GLM.

Accuracy: see the accuracy contract. The frequencies are carried as ``w_hi + w_lo``
(float64 plus its remainder, from ``rotation.geometric_parts`` and exact float64 products);
with an attention factor other than 1 (yarn, longrope) cos and sin are computed in float64,
multiplied there and rounded once.
"""

import dataclasses
import math
from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt

from ..engine import checks, kernels, rotation
from ..engine.backends import backend, backend_of
from ..engine.frequencies import Frequencies
from ..engine.registry import Registry
from ..sinusoidal import layouts, tables

# The public API (autodoc documents these); the other functions serve posenc.torch and posenc.tensorflow.
__all__ = [
    "ROPE_TYPES",
    "ROTARY_LAYOUTS",
    "apply_rotary",
    "convert_rotary_layout",
    "rotary_cos_sin",
    "rotary_dim",
    "rotary_frequencies",
    "rotary_permutation",
]

NUMPY = backend("numpy")
ROTARY_LAYOUTS = ("half", "interleaved")
# Every rope type takes these (transformers reads them from the model config).
_SHARED = ("partial_rotary_factor", "max_position_embeddings")


def check_rotary_layout(layout, name="layout"):
    return checks.check_choice(layout, ROTARY_LAYOUTS, name)


def check_head_dim(head_dim):
    if not checks._is_int(head_dim):
        raise TypeError(f"head_dim must be an even int >= 2, got {head_dim!r} ({type(head_dim).__name__})")
    if head_dim < 2 or head_dim % 2:
        raise ValueError(f"head_dim must be an even int >= 2 (channels rotate in pairs), got {head_dim!r}")
    return checks.check_width(int(head_dim), "head_dim")


def _check_params(rope_type, params):
    entry = _RULES.lookup(rope_type)
    allowed = set(entry.required) | set(entry.optional) | set(_SHARED)
    unknown = sorted(set(params) - allowed)
    if unknown:
        raise TypeError(
            f"rope_type={rope_type!r} takes no parameter {unknown[0]!r}; "
            f"it takes {', '.join(sorted(allowed))}"
        )
    missing = [name for name in entry.required if params.get(name) is None]
    if missing:
        raise TypeError(f"rope_type={rope_type!r} needs the parameter {missing[0]!r}")


def _positive(params, name, rope_type, default=None):
    """``params[name]`` (or ``default`` if absent or None) checked to be a finite real > 0."""
    value = params.get(name)
    if value is None:
        return default
    return checks.check_real(value, name, 0, f" for rope_type={rope_type!r}")


def _factor_from_lengths(params, rope_type):
    """``factor``, or ``max_position_embeddings / original_max_position_embeddings`` (as transformers)."""
    factor = _positive(params, "factor", rope_type)
    if factor is not None:
        return factor
    longest = _positive(params, "max_position_embeddings", rope_type)
    if longest is None:
        raise TypeError(
            f"rope_type={rope_type!r} needs the parameter 'factor' "
            "(or 'max_position_embeddings', which gives it as max / original_max_position_embeddings)"
        )
    return longest / _positive(params, "original_max_position_embeddings", rope_type)


def rotary_dim(head_dim: int, rope_type: str = "default", **params: Any) -> int:
    """Channels that rotate: ``int(head_dim * partial_rotary_factor)`` (``head_dim`` for ``proportional``)."""
    head_dim = check_head_dim(head_dim)
    _check_params(rope_type, params)
    fraction = _positive(params, "partial_rotary_factor", rope_type, 1.0)
    if fraction > 1:
        raise ValueError(f"partial_rotary_factor must be in (0, 1] for rope_type={rope_type!r}, got {fraction!r}")
    if rope_type == "proportional":
        return head_dim  # the channels beyond the fraction turn at frequency 0
    dim = int(head_dim * fraction)
    if dim < 2 or dim % 2:
        raise ValueError(
            f"partial_rotary_factor={fraction!r} of head_dim={head_dim} gives {dim} rotary channels "
            f"for rope_type={rope_type!r}; they must be an even number >= 2"
        )
    return dim


# Double-float64 arithmetic on (hi, lo) pairs: the exact product of two float64 numbers
# (Dekker, with the kernels' Veltkamp split), then a renormalisation so hi is the rounded sum.
def _two_product(a, b):
    p = a * b
    a_big, a_small = kernels.veltkamp_split(a)
    b_big, b_small = kernels.veltkamp_split(b)
    return p, ((a_big * b_big - p) + a_big * b_small + a_small * b_big) + a_small * b_small


def _normalized(hi, lo):
    total = hi + lo
    return total, lo - (total - hi)


def _times(hi, lo, m):
    """``(hi + lo) * m`` for float64 ``m``, as a double-float64 pair."""
    p, error = _two_product(hi, m)
    return _normalized(p, error + lo * m)


def _over(hi, lo, d):
    """``(hi + lo) / d`` for float64 ``d``, as a double-float64 pair."""
    q = hi / d
    p, error = _two_product(q, d)
    return _normalized(q, (((hi - p) - error) + lo) / d)


def _blend(hi, lo, ramp, factor):
    """``w * (1 - ramp) + (w / factor) * ramp`` per channel: ``ramp`` 0 keeps ``w``, 1 divides it by ``factor``.

    The ends are exact (no rounded ``1 / factor``); in between, the float64 multiplier.
    """
    mixed = _times(hi, lo, (1.0 - ramp) + ramp / factor)
    divided = _over(hi, lo, factor)
    pick = [np.where(ramp == 1, d, np.where(ramp == 0, w, m)) for w, d, m in zip((hi, lo), divided, mixed)]
    return pick[0], pick[1]


@dataclasses.dataclass(frozen=True)
class _RopeType:
    """A rope type: its ``rule`` ``(rotary_dim, base, params) -> (w_hi, w_lo, attention_factor)``,
    called through the record, and its required and optional parameters (transformers' names),
    which ``rope_frequencies`` checks before it calls the rule."""

    rule: Callable[..., tuple]
    required: tuple[str, ...] = ()
    optional: tuple[str, ...] = ()

    def __call__(self, dim, base, params):
        return self.rule(dim, base, params)


_RULES: Registry[_RopeType] = Registry("rope_type")


# Runs only while the module is imported (see conventions._preset): what it registers is
# checked per rope type in tests/rope/test_rotary.py.
def _rope_type(name, required=(), optional=()):  # pragma: no mutate block
    """Register the decorated rule as rope type ``name``."""
    def register(rule):
        _RULES.register(name, _RopeType(rule, required, optional))
        return rule
    return register


def _paper(dim, base):
    """``w_j = base ** (-2j / dim)`` for the ``dim // 2`` pairs, as ``(w_hi, w_lo)``."""
    return rotation.geometric_parts(dim // 2, base, dim / 2)


@_rope_type("default")
def _default(dim, base, params):
    return (*_paper(dim, base), 1.0)


@_rope_type("linear", required=("factor",))
def _linear(dim, base, params):
    """Position interpolation: every frequency divided by ``factor``."""
    factor = _positive(params, "factor", "linear")
    return (*_over(*_paper(dim, base), factor), 1.0)


@_rope_type("dynamic", required=("factor", "max_position_embeddings"), optional=("seq_len",))
def _dynamic(dim, base, params):
    """NTK-aware: a larger base once the sequence outgrows the trained length."""
    factor = _positive(params, "factor", "dynamic")
    if dim < 4:
        raise ValueError(f"rope_type='dynamic' needs at least 4 rotary channels, got {dim}")
    longest = _positive(params, "max_position_embeddings", "dynamic")
    seq_len = max(_positive(params, "seq_len", "dynamic", longest), longest)
    base = base * ((factor * seq_len / longest) - (factor - 1)) ** (dim / (dim - 2))
    return (*_paper(dim, base), 1.0)


@_rope_type(
    "yarn",
    required=("original_max_position_embeddings",),
    optional=("factor", "attention_factor", "beta_fast", "beta_slow", "mscale", "mscale_all_dim", "truncate"),
)
def _yarn(dim, base, params):
    """YaRN: extrapolate the fast pairs, interpolate the slow ones, a linear ramp between."""
    rope_type = "yarn"
    factor = _factor_from_lengths(params, rope_type)
    original = _positive(params, "original_max_position_embeddings", rope_type)
    fast = _positive(params, "beta_fast", rope_type, 32.0)
    slow = _positive(params, "beta_slow", rope_type, 1.0)
    if fast < slow:
        raise ValueError(f"rope_type='yarn' needs beta_fast >= beta_slow, got {fast!r} and {slow!r}")

    def pair_of(rotations):
        # The pair that turns `rotations` times over the original length.
        return dim * math.log(original / (rotations * 2 * math.pi)) / (2 * math.log(base))

    low, high = pair_of(fast), pair_of(slow)
    if params.get("truncate", True):
        low, high = math.floor(low), math.ceil(high)
    low, high = max(low, 0), min(high, dim - 1)
    if low == high:
        high += 0.001  # as transformers: no division by zero
    ramp = np.clip((np.arange(dim // 2) - low) / (high - low), 0.0, 1.0)
    hi, lo = _blend(*_paper(dim, base), ramp, factor)

    attention = _positive(params, "attention_factor", rope_type)
    if attention is None:
        def mscale(scale):
            return 1.0 if factor <= 1 else 0.1 * scale * math.log(factor) + 1.0

        top = _positive(params, "mscale", rope_type)
        bottom = _positive(params, "mscale_all_dim", rope_type)
        attention = mscale(top) / mscale(bottom) if top and bottom else mscale(1.0)
    return hi, lo, attention


@_rope_type(
    "longrope",
    required=("short_factor", "long_factor", "original_max_position_embeddings"),
    optional=("factor", "attention_factor", "seq_len"),
)
def _longrope(dim, base, params):
    """LongRoPE: ``w / short_factor`` per pair, ``w / long_factor`` beyond the original length."""
    rope_type = "longrope"
    factor = _factor_from_lengths(params, rope_type)
    original = _positive(params, "original_max_position_embeddings", rope_type)
    seq_len = _positive(params, "seq_len", rope_type, 0.0)
    chosen = "long_factor" if seq_len > original else "short_factor"
    scales = np.asarray(params[chosen], dtype=np.float64)
    if scales.shape != (dim // 2,) or not np.all(scales > 0):
        raise ValueError(
            f"{chosen} must hold {dim // 2} positive numbers (one per rotary pair) for rope_type='longrope', "
            f"got shape {scales.shape}"
        )
    other = "short_factor" if chosen == "long_factor" else "long_factor"
    if np.shape(params[other]) != (dim // 2,):
        raise ValueError(
            f"{other} must hold {dim // 2} numbers (one per rotary pair) for rope_type='longrope', "
            f"got shape {np.shape(params[other])}"
        )
    hi, lo = _over(*_paper(dim, base), scales)
    attention = _positive(params, "attention_factor", rope_type)
    if attention is None:
        attention = 1.0 if factor <= 1 else math.sqrt(1 + math.log(factor) / math.log(original))
    return hi, lo, attention


@_rope_type("llama3", required=("factor", "original_max_position_embeddings", "low_freq_factor", "high_freq_factor"))
def _llama3(dim, base, params):
    """Llama 3.1: wavelengths above ``original / low_freq_factor`` divided by ``factor``, below
    ``original / high_freq_factor`` kept, a blend between; equal factors make it a step at
    ``original / low_freq_factor`` (Llama-4-Scout: factor 16, both factors 1)."""
    rope_type = "llama3"
    factor = _positive(params, "factor", rope_type)
    original = _positive(params, "original_max_position_embeddings", rope_type)
    low, high = _positive(params, "low_freq_factor", rope_type), _positive(params, "high_freq_factor", rope_type)
    if high < low:
        raise ValueError(f"rope_type='llama3' needs high_freq_factor >= low_freq_factor, got {high!r} and {low!r}")
    hi, lo = _paper(dim, base)
    wavelength = 2 * math.pi / hi
    stretched, kept = wavelength > original / low, wavelength < original / high
    between = ~stretched & ~kept
    if high == low and between.any():
        # Meta's reference asserts here and transformers divides 0 by 0.
        raise ValueError(
            f"rope_type='llama3' with low_freq_factor == high_freq_factor == {low!r} leaves the wavelength "
            f"{wavelength[between][0]!r}, equal to original_max_position_embeddings / low_freq_factor, undefined"
        )
    ramp = stretched.astype(np.float64)  # pragma: no mutate (astype(None) is float64 too)
    ramp[between] = 1.0 - (original / wavelength[between] - low) / (high - low)
    return (*_blend(hi, lo, ramp, factor), 1.0)


@_rope_type("proportional", optional=("factor",))
def _proportional(dim, base, params):
    """Exponents over the whole head; the pairs beyond ``partial_rotary_factor`` do not turn."""
    factor = _positive(params, "factor", "proportional", 1.0)
    fraction = _positive(params, "partial_rotary_factor", "proportional", 1.0)
    turning = int(fraction * dim // 2)
    hi, lo = (np.concatenate([w, np.zeros(dim // 2 - turning)]) for w in rotation.geometric_parts(turning, base, dim / 2))
    return (*_over(hi, lo, factor), 1.0)


ROPE_TYPES = _RULES.names()


def rope_frequencies(head_dim, base, rope_type, **params) -> Frequencies:
    """The ``rotary_dim // 2`` frequencies and the attention factor of RoPE.

    The formulas of transformers 5's ``modeling_rope_utils`` (see ``rotary_frequencies``),
    in float64 with the remainder ``w_lo`` carried where the frequency is a geometric
    sequence, a quotient or a blend of the two.
    """
    base = checks.check_base(base)
    dim = rotary_dim(head_dim, rope_type, **params)  # also checks rope_type and its parameters
    hi, lo, attention = _RULES[rope_type](dim, base, params)
    return Frequencies(hi, lo, attention)


def rotary_frequencies(head_dim: int, base: float = 10000.0, *, rope_type: str = "default", **params: Any) -> tuple[np.ndarray, float]:
    """``(inv_freq, attention_factor)``: float64 array ``(rotary_dim // 2,)`` and a float.

    ``w_j = base ** (-2j / rotary_dim)`` (``"default"``), with ``rotary_dim =
    int(head_dim * partial_rotary_factor)``, rescaled per ``rope_type`` as transformers'
    ``modeling_rope_utils`` does, with its parameter names:

    - ``linear``: ``w / factor`` (position interpolation).
    - ``dynamic``: base ``* (factor * seq_len / max_position_embeddings - (factor - 1)) **
      (d / (d - 2))`` once ``seq_len`` exceeds ``max_position_embeddings`` (NTK-aware).
    - ``yarn``: pairs turning more than ``beta_fast`` (32) times over
      ``original_max_position_embeddings`` keep ``w``, fewer than ``beta_slow`` (1) get
      ``w / factor``, a linear ramp between; attention factor ``0.1 ln(factor) + 1``
      (or ``attention_factor``, or the ``mscale``/``mscale_all_dim`` ratio).
    - ``longrope``: ``w / short_factor`` (``w / long_factor`` once ``seq_len`` >
      ``original_max_position_embeddings``); attention factor
      ``sqrt(1 + ln(factor) / ln(original_max_position_embeddings))``.
    - ``llama3``: wavelengths beyond ``original / low_freq_factor`` get ``w / factor``,
      below ``original / high_freq_factor`` keep ``w``, smoothly blended between
      (``high_freq_factor >= low_freq_factor``; equal factors: a step, as Llama-4-Scout's).
    - ``proportional``: exponents over all of ``head_dim``, the pairs beyond
      ``partial_rotary_factor`` at frequency 0, all divided by ``factor``.

    ``factor`` of yarn and longrope defaults to ``max_position_embeddings /
    original_max_position_embeddings``. Odd ``head_dim``, an unknown ``rope_type``, and
    missing, unknown or contradictory parameters raise errors naming the parameter.
    """
    frequencies = rope_frequencies(head_dim, base, rope_type, **params)
    return np.array(frequencies.hi), float(frequencies.attention)


def rotary_cos_sin(
    positions: npt.ArrayLike, head_dim: int, *, base: float = 10000.0, rope_type: str = "default", layout: str = "half",
    dtype: npt.DTypeLike = np.float32, **params: Any,
) -> tuple[np.ndarray, np.ndarray]:
    """``(cos, sin)``, each ``(*positions.shape, rotary_dim)``, for RoPE at ``positions``.

    ``cos[..., k] = attention_factor * cos(p * w_j)`` for the pair ``j`` that channel ``k``
    belongs to in ``layout``: ``"half"`` repeats the frequencies as two halves (what
    transformers' rotary modules return), ``"interleaved"`` holds each twice in a row.
    Frequencies and attention factor as ``rotary_frequencies``. ``dtype`` float16, float32
    or float64; accuracy: see the accuracy contract.
    """
    layout = check_rotary_layout(layout)
    dtype = tables.check_dtype(dtype)
    frequencies = rope_frequencies(head_dim, base, rope_type, **params)
    positions = tables.as_positions(positions, fits=checks.entries_per_position("positions.size * head_dim", head_dim))
    return kernels.rope_cos_sin(NUMPY, rotation.sin_cos, positions, frequencies, layout, dtype)


def apply_rotary(x: Any, cos: Any, sin: Any, *, layout: str = "half") -> Any:
    """Rotate the pairs of the last axis of ``x`` (``(..., seq, head_dim)``) by ``cos``/``sin``.

    ``cos``, ``sin``: ``(..., seq, rotary_dim)`` as ``rotary_cos_sin`` returns them,
    broadcasting against ``x[..., :rotary_dim]`` (for ``x`` of shape ``(batch, heads, seq,
    head_dim)`` and cos of ``(batch, seq, rotary_dim)``, pass ``cos[:, None]``). For pairs
    ``(a, b)`` = channels ``(first, second)`` of ``layout``:

        a' = a cos - b sin,    b' = b cos + a sin

    which is transformers' ``x * cos + rotate_half(x) * sin`` for ``"half"``, bit for bit when
    ``cos`` and ``sin`` have ``x``'s dtype. The channels beyond ``rotary_dim`` pass through
    unchanged. NumPy arrays (and array-likes), torch tensors, TF tensors or JAX arrays, all
    three of one kind; the result is of that kind and in ``x``'s float dtype (``cos`` and
    ``sin`` are rounded to it first: bfloat16 stays bfloat16).
    """
    xp = backend_of(x)
    if xp is NUMPY:
        x = checks.as_numbers(x, "x")
    for name, value in (("cos", cos), ("sin", sin)):
        if backend_of(value) is not xp:
            raise TypeError(f"{name} must be an array of x's kind ({type(x).__name__}), got {type(value).__name__}")
    if xp is NUMPY:
        cos, sin = checks.as_numbers(cos, "cos"), checks.as_numbers(sin, "sin")
    rotated = check_rotary_shapes(x.shape, cos.shape, sin.shape)
    layout = check_rotary_layout(layout)
    if checks.is_one_of(x.dtype, (xp.float16, xp.bfloat16, xp.float32, xp.float64)):
        cos, sin = xp.cast(cos, x.dtype), xp.cast(sin, x.dtype)
    return kernels.apply_rotary(xp, x, cos, sin, layout, rotated)


def check_rotary_shapes(x_shape, cos_shape, sin_shape):
    """``rotary_dim``, after checking ``cos`` and ``sin`` fit ``x``; shapes as tuples."""
    x_shape, cos_shape, sin_shape = tuple(x_shape), tuple(cos_shape), tuple(sin_shape)
    if cos_shape != sin_shape:
        raise ValueError(f"cos and sin must have the same shape, got {cos_shape} and {sin_shape}")
    if not x_shape or not cos_shape:
        raise ValueError(f"x and cos must have a last axis, got shapes {x_shape} and {cos_shape}")
    rotated = cos_shape[-1]
    if rotated is not None and x_shape[-1] is not None and (rotated % 2 or rotated > x_shape[-1]):
        raise ValueError(
            f"cos must have an even last axis (rotary_dim) no wider than x's {x_shape[-1]}, got cos of shape {cos_shape}"
        )
    # Broadcasting by hand: np.broadcast_shapes costs more than rotating a decoding step.
    # None (a TF dimension unknown until run time) fits anything.
    for a, c in zip(reversed(x_shape[:-1]), reversed(cos_shape[:-1])):
        if a != c and a not in (1, None) and c not in (1, None):
            raise ValueError(
                f"cos (shape {cos_shape}) must broadcast against x (shape {x_shape}) but for the last axis; "
                "for x of (batch, heads, seq, head_dim) pass cos[:, None]"
            )
    return rotated


def rotary_permutation(head_dim: int, source: str, target: str, *, heads: int = 1, rotary_dim: int | None = None) -> np.ndarray:
    """``perm`` (int64, ``(heads * head_dim,)``): ``W_target = W_source[perm]`` for a q/k projection.

    The output rows of a query or key projection (torch ``Linear.weight`` ``(heads *
    head_dim, d_model)``: rows, axis 0; Keras ``Dense`` kernel: axis -1) come in ``heads``
    blocks of ``head_dim``; within each, the first ``rotary_dim`` (default all) are permuted
    so that pairs of ``source`` become pairs of ``target``. interleaved -> half is what
    transformers' Llama conversion script does to Meta's checkpoints: row ``k * r/2 + i``
    of the half layout is row ``2i + k`` of the interleaved one. It is the sinusoidal
    interleaved <-> sin_cos column permutation (``layouts.layout_permutation``) with the
    first member of each pair as the sine.
    """
    head_dim = check_head_dim(head_dim)
    heads = checks.check_int_at_least(heads, "heads", 1)
    checks.check_entries("heads * head_dim", (heads, head_dim))
    rotated = head_dim if rotary_dim is None else rotary_dim
    if not checks._is_int(rotated) or rotated < 2 or rotated % 2 or rotated > head_dim:
        raise ValueError(f"rotary_dim must be an even int in [2, head_dim={head_dim}], got {rotary_dim!r}")
    as_table = {"half": "sin_cos", "interleaved": "interleaved"}
    per_head = np.concatenate([
        layouts.layout_permutation(rotated, as_table[check_rotary_layout(source, "source")],
                                   as_table[check_rotary_layout(target, "target")]),
        np.arange(rotated, head_dim),
    ])
    return (np.arange(heads)[:, None] * head_dim + per_head).ravel()


def convert_rotary_layout(
    weight: Any, source: str, target: str, *, heads: int, axis: int = 0, rotary_dim: int | None = None
) -> Any:
    """``weight`` of a q/k projection with its ``heads * head_dim`` outputs along ``axis`` moved
    from layout ``source`` to ``target`` (see ``rotary_permutation``).

    ``axis=0`` for a torch ``Linear.weight`` ``(out, in)`` or a bias; ``axis=-1`` for a Keras
    ``Dense`` kernel ``(in, out)``. NumPy arrays, torch tensors and TF tensors alike (the
    result is of the same kind), as ``layouts.convert_layout``.
    """
    shape = layouts.shape_of(weight)
    if not shape:
        raise ValueError(f"weight must have at least one axis, got a scalar {weight!r}")
    outputs = shape[checks.check_axis(shape, axis, "weight")]
    heads = checks.check_int_at_least(heads, "heads", 1)
    if outputs % heads:
        raise ValueError(f"heads must divide the {outputs} outputs along axis {axis}, got heads={heads}")
    perm = rotary_permutation(outputs // heads, source, target, heads=heads, rotary_dim=rotary_dim)
    return layouts.gather(weight, perm, axis)


# The rope types whose frequencies depend on the sequence length (transformers recomputes them
# in the forward pass from the largest position id).
LENGTH_DEPENDENT = ("dynamic", "longrope")


def module_frequencies(head_dim, base, rope_type, params, seq_len) -> Frequencies:
    """``rope_frequencies`` for a rotary module's forward: ``seq_len`` (largest position + 1) is
    supplied to the rope types that read it, unless ``params`` fix ``seq_len`` themselves."""
    if rope_type in LENGTH_DEPENDENT and params.get("seq_len") is None and seq_len is not None:
        params = {**params, "seq_len": seq_len}
    return rope_frequencies(head_dim, base, rope_type, **params)
