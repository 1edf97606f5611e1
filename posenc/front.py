"""One implementation of the framework fronts (``posenc.torch``, ``posenc.tensorflow``, ``posenc.jax``).

Each front describes its framework in a ``Spec`` (its backend entry, dtypes, how positions
come in, how memory that NumPy filled is handed over) and binds the generic functions here to
it (``bound``); its module classes mix in ``SinusoidalModule``, ``RotaryModule`` and
``RelativeBiasModule``, which hold the state and the decisions. What exists in one framework
alone stays in its file, but for FlexAttention's score_mods (torch's), written here on the
tensors they are given (no import of torch) and bound like the rest: the fronts keep their line budget.
Which kernel serves a call is ``posenc.engine.routes``' decision, made in one place
(``_sinusoid``, ``_rope``). Only the fronts import this module.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import math
import re
from collections.abc import Callable, Sequence
from typing import Any, ClassVar, Concatenate, ParamSpec, TypeVar

import numpy as np
import numpy.typing as npt

from .biases import alibi, relative, t5
from .engine import checks, kernels, rotation
# The route table's names, not the module: see posenc.engine.routes (one name per object under torch.compile).
from .engine.routes import BLOCKS, FEW, HOST, WHOLE, choose
from .engine.backends import Backend, backend
from .rope import axial, configs, mixed, pixels, rotary, xpos
from .sinusoidal import conventions, fourier, grid, tables

__all__ = [
    "BIASES",
    "LayerConfig",
    "MixedModule",
    "ROPE",
    "SCORE_MODS",
    "TABLES",
    "VISION",
    "Positions",
    "RelativeBiasModule",
    "RotaryModule",
    "SinusoidalModule",
    "Spec",
    "alibi_bias",
    "alibi_score_mod",
    "alibi_slopes",
    "apply_rotary",
    "axial_cos_sin",
    "bound",
    "encode",
    "grid_encoding",
    "mrope_cos_sin",
    "per_axis_cis",
    "per_axis_cos_sin",
    "pixel_cos_sin",
    "positional_encoding",
    "random_fourier_features",
    "relative_position_bias",
    "relative_position_bucket",
    "require",
    "rotary_cos_sin",
    "t5_score_mod",
    "xpos_cos_sin",
]

NUMPY = backend("numpy")
# The framework's tensor and dtype in the generic signatures; ``bound`` writes each front's own.
Tensor = Any
DType = Any


@dataclasses.dataclass(slots=True)  # not frozen: made in every call, where a frozen one costs a microsecond
class Positions:
    """A call's positions, checked (``Spec.intake``).

    ``tensor``: the framework's, integers or float64 (float32 in a trace without float64),
    on the device of the call; ``shape`` (None: unknown rank, in a graph); ``traced``: inside
    a compiler's trace; ``host``: when they are concrete and in host memory, NumPy float64
    positions, or the function that makes them of ``tensor`` (else None); ``place``: where an
    output built on the host goes (a device, a sharding; None: the framework's default);
    ``largest``: the function giving the largest of ``tensor`` (None where a trace cannot read
    it). Functions of ``tensor``, not closures: a decoding step makes none.
    """

    tensor: Any
    shape: tuple | None
    traced: bool = False
    host: np.ndarray | Callable[[Any], np.ndarray] | None = None
    place: Any = None
    largest: Callable[[Any], float] | None = None

    @property
    def size(self) -> int | None:
        """How many positions, when the shape is known (None: a dimension known only when run)."""
        count = 1
        for n in () if self.shape is None else self.shape:
            if type(n) is not int:  # None in a TF graph, a symbol under torch.compile
                return None
            count *= n
        return None if self.shape is None else count

    def numpy(self) -> np.ndarray:
        """The positions as NumPy float64, for positions in host memory (``host`` not None)."""
        return self.host if isinstance(self.host, np.ndarray) else self.host(self.tensor)  # type: ignore[misc]

    def top(self) -> float | None:
        """The largest position, None where a trace cannot read it."""
        if isinstance(self.host, np.ndarray):
            return float(self.host.max())
        return None if self.largest is None else self.largest(self.tensor)


@dataclasses.dataclass(frozen=True)
class Spec:
    """One framework as the generic front sees it; each front fills one in."""

    module: str  # the front's module ("posenc.torch"): the bound functions live there
    xp: Backend  # its entry in the backend table
    tensor: str  # its tensor in signatures and messages ("torch.Tensor")
    dtype: str  # its dtype in signatures ("torch.dtype")
    dtype_names: str  # the dtypes allowed, spelled for messages
    default_dtype: Callable[[], Any]
    as_dtype: Callable[[Any], Any]  # a dtype argument in the framework's spelling (left as given when it names none)
    is_tensor: Callable[[Any], bool]  # what a module takes as x
    # (positions, like: a tensor or device they go to, or None; fits: the output's size check for positions
    # not yet the framework's, made before they are copied: tables.as_positions)
    intake: Callable[..., Positions]
    adopt: Callable[[np.ndarray, Any, Any], Any]  # (NumPy array, dtype, place) -> tensor, sharing memory where it can
    complex: Callable[[Any, Any], Any]  # (real, imaginary) -> complex tensor
    as_tensor: Callable[[Any, str], Any] | None = None  # apply_rotary's (value, name) -> tensor; None: require(is_tensor)
    empty: Callable[..., np.ndarray] = np.empty  # NumPy memory the framework can adopt (shape, dtype)
    traced: Callable[[], bool] = lambda: False  # inside a compiler's trace: positional_encoding builds no NumPy table
    whole: Callable[..., Any] | None = None  # the WHOLE route compiled by the framework: (positions, w_hi, w_lo, dtype, layout, width)
    # out= checked: (out, shape, dtype, device) -> (out, its NumPy memory); None where no function takes out=
    out: Callable[..., tuple[Any, np.ndarray | None]] | None = None
    accepts: str = ""  # what a module takes as x, in messages, where more than ``tensor``
    unread_length: str | None = None  # why a trace cannot read the largest position (an error); None: the parameters as given
    float64_needs: Callable[[], str | None] = lambda: None  # what float64 needs now (JAX: x64), None: nothing
    own_keywords: Callable[[dict], dict] = lambda keywords: {}  # a module's keywords for the framework, popped (Keras' name...)
    dtypes: tuple = dataclasses.field(init=False)  # the float dtypes the front builds in

    def __post_init__(self) -> None:
        object.__setattr__(self, "dtypes", (self.xp.float16, self.xp.bfloat16, self.xp.float32, self.xp.float64))


P = ParamSpec("P")
R = TypeVar("R")


def bound(function: Callable[Concatenate[Spec, P], R], spec: Spec, *, without: Sequence[str] = ()) -> Callable[P, R]:
    """``function`` with its first argument ``spec`` given: a function of the front's module with the
    generic one's name and docstring, and its signature less ``spec`` and the parameters in
    ``without`` (which the framework lacks), in the framework's own types."""
    signature = inspect.signature(function)
    words = {"Tensor": spec.tensor, "DType": spec.dtype}

    def own(annotation):
        # This module's annotations, strings (from __future__ import annotations; every generic
        # function is fully annotated), with the framework's tensor and dtype.
        return re.sub(r"\b(Tensor|DType)\b", lambda m: words[m[1]], annotation)

    parameters = [p.replace(annotation=own(p.annotation)) for name, p in signature.parameters.items()
                  if name != "spec" and name not in without]

    @functools.wraps(function)
    def call(*args: P.args, **kwargs: P.kwargs) -> R:
        refused = sorted(set(kwargs) & set(without))
        if refused:
            raise TypeError(f"{function.__name__}() got an unexpected keyword argument {refused[0]!r}")
        return function(spec, *args, **kwargs)

    call.__signature__ = signature.replace(parameters=parameters, return_annotation=own(signature.return_annotation))  # type: ignore[attr-defined]
    # What typing.get_type_hints (and Sphinx) read: the framework's types, as strings.
    call.__annotations__ = {**{p.name: p.annotation for p in parameters}, "return": call.__signature__.return_annotation}  # type: ignore[attr-defined]
    call.__module__ = spec.module
    return call


def require(is_tensor: Callable[[Any], bool], name: str, convert: Callable[[Any], Any] = lambda v: v) -> Callable[[Any, str], Any]:
    """``as_tensor`` for ``Spec``: the value if ``is_tensor`` says so, ``convert``-ed; else, or when ``convert``
    fails (a string, an int past int32...), a TypeError naming the argument (``name``: what it must be) and showing the value."""

    def as_tensor(value, argument):
        try:
            if value is not None and is_tensor(value):  # older JAX (0.5 still) reads None as NaN
                return convert(value)
            error = None
        except (TypeError, ValueError, OverflowError) as failed:
            error = failed
        raise TypeError(f"{argument} must be {name}, got {value!r} ({type(value).__name__})") from error

    return as_tensor


def _as_dtype(spec, dtype):
    try:
        return spec.as_dtype(dtype)
    except (TypeError, ValueError, SyntaxError):  # NumPy's parser raises SyntaxError for "(2,3"
        return dtype  # left as received, so the message shows what the caller passed


def check_dtype(spec: Spec, dtype: Any) -> Any:
    """``dtype`` in the framework's spelling, one of ``spec.dtypes``; None: the framework's default."""
    if dtype is None:
        return spec.default_dtype()
    dtype = checks.check_dtype(_as_dtype(spec, dtype), spec.dtypes, spec.dtype_names)
    needs = spec.float64_needs() if dtype == spec.xp.float64 else None
    if needs is not None:
        raise ValueError(f"dtype float64 needs {needs}, got dtype={dtype!r}")
    return dtype


def check_kind(kind: str, dtype: Any) -> str:
    """``kind`` of the positions' dtype (NumPy's letters): integers or real floats only."""
    checks.check_position_kind(kind, f"dtype {dtype}")
    return kind


def _built(xp, dtype):
    # The NumPy dtype a table of ``dtype`` is built in: bfloat16 is rounded from float32.
    return np.dtype(np.float64 if dtype == xp.float64 else np.float16 if dtype == xp.float16 else np.float32)


def _blocks(xp, positions, w_hi, w_lo, dtype):
    # The BLOCKS route's sin_cos: written block by block into fresh tensors, so the float64
    # temporaries stay a few blocks (blocks big enough that a device spreads each operation thin).
    h = len(w_hi)
    sines, cosines = (xp.empty((*positions.shape, h), dtype, positions) for _ in range(2))
    w_hi, w_lo = (xp.constant(w, xp.float64, positions) for w in (w_hi, w_lo))
    flat = (-1, h)
    kernels.write_sin_cos(xp, xp.reshape(positions, (-1,)), w_hi, w_lo, xp.reshape(sines, flat), xp.reshape(cosines, flat),
                          block=4 * kernels.BLOCK)
    return sines, cosines


def _kernel(spec, route):
    """``sin_cos(positions, w_hi, w_lo, dtype)`` of ``route`` in the framework's operations (float64 ``w_hi``,
    ``w_lo``: NumPy's, or the backend's that a rotary module keeps on the device)."""
    xp = spec.xp
    if route == FEW:
        return lambda positions, w_hi, w_lo, dtype: kernels.rounded_sin_cos(
            xp, positions, xp.constant(w_hi, xp.float64, positions), dtype)
    if route == BLOCKS:
        return functools.partial(_blocks, xp)
    return spec.whole or functools.partial(kernels.sin_cos, xp)


def _sinusoid(spec, route, positions, d_model, chosen, frequencies, dtype):
    """The table of ``chosen`` (its ``frequencies``) at ``positions`` (the framework's tensor) by ``route``,
    in the framework's operations."""
    xp = spec.xp
    shifted = conventions.offset_positions(xp.cast(positions, xp.wide), chosen)
    wide = xp.float64 if dtype == xp.float64 else xp.float32
    if route == WHOLE and spec.whole is not None:
        table = spec.whole(shifted, frequencies.hi, frequencies.lo, wide, chosen.layout, frequencies.width)
    else:
        s, c = _kernel(spec, route)(shifted, frequencies.hi, frequencies.lo, wide)
        table = kernels.columns(xp, s, c, chosen.layout, frequencies.width)
    table = xp.cast(table, dtype)
    # The zero column of an odd width under the "zero" policy (not mutated: <= adds no columns, the same table).
    if frequencies.width < d_model:  # pragma: no mutate
        zero = xp.expand_like(xp.constant(np.zeros(d_model - frequencies.width), dtype, table), table)
        table = xp.concat([table, zero], -1)
    if chosen.padding_idx is not None:
        table = xp.mul(table, xp.cast(shifted != chosen.padding_idx, dtype)[..., None])
    return table


def _on_host(spec, shape, dtype, place, out, build):
    """``build(array)`` writes a table of ``shape`` into NumPy memory: ``out``'s own where NumPy can
    write it (torch on the CPU), else fresh memory the framework adopts (copied into ``out``)."""
    memory = None
    if out is not None:
        out, memory = spec.out(out, shape, dtype, place)
    table = build(spec.empty(shape, _built(spec.xp, dtype)) if memory is None else memory)
    if memory is not None:
        return out
    table = spec.adopt(table, dtype, place)
    return table if out is None else out.copy_(table)  # only torch takes out=


def _encode(spec, positions, d_model, chosen, dtype, out=None, frequencies=None):
    # encode after its checks: the positions taken in, the convention resolved. ``frequencies``: its
    # frequency record made beforehand (torch.compile cannot trace the decimal arithmetic that makes it).
    if positions.size is not None and not positions.traced:
        checks.check_entries("positions.size * d_model", (positions.size, d_model))
    route = choose(spec.xp, dtype, traced=positions.traced, host=positions.host is not None)
    if route == HOST:
        host = positions.numpy()
        return _on_host(spec, (*host.shape, d_model), dtype, positions.place, out,
                        lambda table: tables.encode(host, d_model, convention=chosen, dtype=table.dtype, out=table))
    table = _sinusoid(spec, route, positions.tensor, d_model, chosen, frequencies or chosen.frequency_record(d_model), dtype)
    return table if out is None else spec.out(out, (*positions.shape, d_model), dtype, positions.place)[0].copy_(table)


def encode(
    spec: Spec, positions: Tensor | npt.ArrayLike, d_model: int, *, convention: str | conventions.Convention = "paper",
    base: float | None = None, layout: str | None = None, dtype: DType | None = None, out: Tensor | None = None,
    **options: Any,
) -> Tensor:
    """``positions`` of any shape -> ``(*positions.shape, d_model)`` tensor, where the positions are.

    Same formula, conventions, layouts, checks and accuracy as ``posenc.encode``; ``dtype``
    defaults to the framework's default float dtype (see the module docstring). ``convention``,
    ``base``, ``layout`` and ``options`` as in ``posenc.encode``. Eagerly, positions in host
    memory give NumPy's table in memory the framework takes over (the same numbers as
    ``posenc.encode``); traced (``torch.compile``, ``tf.function``, ``jax.jit``) or on another
    device, the same kernels in the framework's operations (``posenc.engine.routes``). ``out``
    (torch): a tensor of that shape, dtype and device to write into (returned).
    """
    dtype = check_dtype(spec, dtype)
    d_model = checks.check_d_model(d_model)
    chosen = conventions.resolve(convention, base=base, layout=layout, **options)
    taken = spec.intake(positions, None, checks.entries_per_position("positions.size * d_model", d_model))
    return _encode(spec, taken, d_model, chosen, dtype, out)


def positional_encoding(
    spec: Spec, length: int, d_model: int, *, convention: str | conventions.Convention = "paper", base: float | None = None,
    layout: str | None = None, dtype: DType | None = None, device: Any = None, out: Tensor | None = None, **options: Any,
) -> Tensor:
    """The ``(length, d_model)`` table for positions ``0 .. length - 1``, as ``posenc.positional_encoding``.

    NumPy's builder (two small accurate tables and one complex multiply) writes the table into
    memory the framework takes over without a copy; inside a compiled graph (``torch.compile``,
    ``tf.function``) the framework's operations compute the same rows as ``encode`` does.
    Accuracy as in NumPy (half precision and bfloat16: one rounding of the float32 table).
    ``convention``, ``base``, ``layout`` and ``options`` as in ``posenc.positional_encoding``.
    torch: ``device`` (default: ``out``'s device, else torch's default device) and ``out``, a
    ``(length, d_model)`` tensor of ``dtype`` to write into (returned).
    """
    length = checks.check_length(length)
    dtype = check_dtype(spec, dtype)
    d_model = checks.check_d_model(d_model)
    chosen = conventions.resolve(convention, base=base, layout=layout, **options)
    if spec.traced():  # in a graph: encode's rows, in the framework's operations
        return _encode(spec, _arange(spec, length, device), d_model, chosen, dtype, out)
    checks.check_entries("length * d_model", (length, d_model))
    return _on_host(spec, (length, d_model), dtype, device, out,
                    lambda table: tables.positional_encoding(length, d_model, convention=chosen, dtype=table.dtype, out=table))


def _arange(spec, length, device=None):
    return spec.intake(spec.xp.constant(np.arange(length, dtype=np.float64), spec.xp.float64), device)


def grid_encoding(
    spec: Spec, shape: Sequence[int], d: int, *, convention: str = "mae", dtype: DType | None = None, device: Any = None,
    **options: Any,
) -> Tensor:
    """``posenc.grid_encoding`` as a tensor: ``(prefix + prod(shape), d)``.

    NumPy builds the table (same conventions, options and accuracy); the framework takes it
    over (a constant of the graph inside ``tf.function`` or ``jax.jit``: it depends on the
    shape only). bfloat16 is rounded from float32. torch: ``device`` (default: torch's).
    """
    dtype = check_dtype(spec, dtype)
    table = grid.grid_encoding(shape, d, convention=convention, dtype=_built(spec.xp, dtype), **options)
    return spec.adopt(table, dtype, device)


# RoPE.


def _rope(spec, positions, frequencies, layout, dtype, form="channels", state=None):
    """RoPE's ``(cos, sin)`` (``form`` "channels" or "pairs") or ``cos + i sin`` ("complex", complex64;
    complex128 for float64) at checked ``positions`` (``(axes, ...)`` where the frequencies have axes).

    ``state``: a rotary module's ``_RotaryState`` when ``frequencies`` are its fixed ones: the
    framework's kernels then take them from its tensors on the device, and a call of few angles
    takes the rounded route.
    """
    xp = spec.xp
    complex_ = form == "complex"
    out = (xp.float64 if dtype == xp.float64 else xp.float32) if complex_ else dtype
    form = "pairs" if complex_ else form
    if frequencies.groups is not None:
        axial.check_axis_positions((None,) if positions.shape is None else positions.shape, frequencies)
    count = positions.size
    if count is not None and frequencies.groups is not None:
        count //= max(1, positions.shape[0])
    angles = None if state is None or count is None else count * state.pairs
    route = choose(xp, out, traced=positions.traced, host=positions.host is not None, angles=angles)
    if route == HOST:
        c, s = kernels.rope_cos_sin(NUMPY, rotation.sin_cos, positions.numpy(), frequencies, layout, _built(xp, out), form)
        c, s = spec.adopt(c, out, positions.place), spec.adopt(s, out, positions.place)
    elif route == FEW and frequencies.groups is None:
        # A decoding step (fixed frequencies: state given): w kept on the device, spread over the channels already.
        w = state.on(positions.tensor, positions.traced, positions.place)[0]
        s, c = kernels.rounded_sin_cos(xp, positions.tensor, w, out, frequencies.attention)
    else:
        if state is not None and xp.has_float64:
            frequencies = state.on(positions.tensor, positions.traced, positions.place)[1]
        tensor = xp.cast(positions.tensor, xp.wide)
        c, s = kernels.rope_cos_sin(xp, _kernel(spec, route), tensor, frequencies, layout, out, form)
    return spec.complex(c, s) if complex_ else (c, s)


def _rope_positions(spec, positions, head_dim):
    """``positions`` taken in for an output of ``head_dim`` entries each, its size checked first."""
    return _rope_entries(spec.intake(positions, None, checks.entries_per_position("positions.size * head_dim", head_dim)), head_dim)


def _rope_entries(positions, head_dim):
    if positions.size is not None and not positions.traced:
        checks.check_entries("positions.size * head_dim", (positions.size, head_dim))
    return positions


def rotary_cos_sin(
    spec: Spec, positions: Tensor | npt.ArrayLike, head_dim: int, *, base: float = 10000.0, rope_type: str = "default",
    layout: str = "half", dtype: DType | None = None, **params: Any,
) -> tuple[Tensor, Tensor]:
    """``(cos, sin)`` tensors, each ``(*positions.shape, rotary_dim)``, where the positions are.

    As ``posenc.rotary_cos_sin`` (frequencies, attention factor, layouts and accuracy);
    ``dtype`` defaults to the framework's default float dtype. ``positions``: a tensor (e.g.
    ``position_ids`` of shape ``(batch, seq)``) or array-like. Routes as ``encode``'s.
    """
    layout = rotary.check_rotary_layout(layout)
    dtype = check_dtype(spec, dtype)
    frequencies = rotary.rope_frequencies(head_dim, base, rope_type, **params)
    return _rope(spec, _rope_positions(spec, positions, head_dim), frequencies, layout, dtype)


def xpos_cos_sin(
    spec: Spec, positions: Tensor | npt.ArrayLike, head_dim: int, *, keys: bool = False, scale_base: float = 512.0,
    center: float = 0.0, base: float = 10000.0, layout: str = "interleaved", dtype: DType | None = None,
) -> tuple[Tensor, Tensor]:
    """``(cos, sin)`` tensors of xPos, each ``(*positions.shape, head_dim)``, as ``posenc.rope.xpos.xpos_cos_sin``.

    ``rotary_cos_sin``'s times ``zeta_j ** (s y)``, ``y = (p - center) / scale_base`` (``s = -1`` for
    ``keys=True``), both in float64 and rounded once to ``dtype`` (None: the framework's default
    float dtype). JAX computes in float32: within ``2e-7 + (|y| + |y ln zeta_j|) 2**-22`` of the
    scale more (measured, ``tests/rope/test_xpos.py``).
    """
    keys, scale_base, center = xpos.check_xpos(keys, scale_base, center)
    layout = rotary.check_rotary_layout(layout)
    dtype = check_dtype(spec, dtype)
    xp = spec.xp
    wide = xp.wide
    frequencies = rotary.rope_frequencies(head_dim, base, "default")  # checks head_dim before its size is counted
    taken = _rope_positions(spec, positions, head_dim)
    cos, sin = _rope(spec, taken, frequencies, layout, wide)
    power = (_wide(spec, taken)[..., None] - center) / (-scale_base if keys else scale_base)
    scale = kernels.spread(xp, xp.constant(xpos.xpos_decay(head_dim), wide, cos) ** power, layout)
    return xp.cast(cos * scale, dtype), xp.cast(sin * scale, dtype)


def axial_cos_sin(
    spec: Spec, positions: Tensor | npt.ArrayLike, head_dim: int, *, base: float = 10000.0, convention: str = "qwen2_vl",
    dtype: DType | None = None,
) -> tuple[Tensor, Tensor]:
    """``(cos, sin)`` tensors of 2-D RoPE, each ``(*positions.shape[1:], head_dim)``, as
    ``posenc.rope.axial.axial_cos_sin`` (``positions`` ``(2, ...)``: rows, then columns)."""
    frequencies = axial.axial_frequencies(head_dim, base, convention=convention)
    dtype = check_dtype(spec, dtype)
    return _rope(spec, _rope_positions(spec, positions, head_dim), frequencies, "half", dtype)


def mrope_cos_sin(
    spec: Spec, position_ids: Tensor | npt.ArrayLike, head_dim: int, *, mrope_section: Sequence[int], interleaved: bool = False,
    base: float = 10000.0, rope_type: str = "default", dtype: DType | None = None, **params: Any,
) -> tuple[Tensor, Tensor]:
    """``(cos, sin)`` tensors of M-RoPE, each ``(*position_ids.shape[1:], rotary_dim)``, as
    ``posenc.rope.axial.mrope_cos_sin`` (``position_ids`` ``(3, ...)``: time, height, width)."""
    frequencies = axial.mrope_frequencies(head_dim, mrope_section, interleaved, base, rope_type, params)
    dtype = check_dtype(spec, dtype)
    return _rope(spec, _rope_entries(_taken(spec, position_ids, "position_ids"), head_dim), frequencies, "half", dtype)


def _axis_first(spec, positions, dims):
    """``ids`` ``(..., len(dims))`` taken in, as positions ``(len(dims), ...)``, axis first."""
    axial.check_ids(positions.shape, None if positions.traced else positions.size, dims)
    count = len(dims)
    tensor = None if positions.tensor is None else spec.xp.stack([positions.tensor[..., a] for a in range(count)], 0)
    host = np.moveaxis(positions.host, -1, 0) if isinstance(positions.host, np.ndarray) else positions.host
    shape = None if positions.shape is None else (count, *positions.shape[:-1])
    return dataclasses.replace(positions, tensor=tensor, shape=shape, host=host)


def per_axis_cos_sin(
    spec: Spec, ids: Tensor | npt.ArrayLike, axes_dim: Sequence[int], *, base: float = 10000.0, layout: str = "interleaved",
    dtype: DType | None = None,
) -> tuple[Tensor, Tensor]:
    """``(cos, sin)`` tensors of RoPE with a width per axis, each ``(*ids.shape[:-1], sum(axes_dim))``, as
    ``posenc.rope.axial.per_axis_cos_sin`` (``ids`` ``(..., len(axes_dim))``, axis last: Flux's ``(seq, 3)``)."""
    dims = axial.check_axes_dim(axes_dim)
    layout = rotary.check_rotary_layout(layout)
    dtype = check_dtype(spec, dtype)
    return _rope(spec, _axis_first(spec, _taken(spec, ids, "ids"), dims), axial.per_axis_frequencies(dims, base), layout, dtype)


def per_axis_cis(
    spec: Spec, ids: Tensor | npt.ArrayLike, axes_dim: Sequence[int], *, base: float = 10000.0, dtype: DType | None = None,
) -> Tensor:
    """``exp(i * ids[..., axes[j]] * w_j)``, ``(*ids.shape[:-1], sum(axes_dim) // 2)``, as ``posenc.rope.axial.per_axis_cis``.

    ``dtype``: the framework's complex64 or complex128 (None: complex64, complex128 where the
    default float dtype is float64); each part as accurate as ``per_axis_cos_sin``'s."""
    dims = axial.check_axes_dim(axes_dim)
    xp = spec.xp
    if dtype is None:
        parts = check_dtype(spec, None)
    else:
        prefix = spec.dtype_names.split("float16")[0]
        chosen = checks.check_dtype(_as_dtype(spec, dtype), (xp.complex64, xp.complex128), f"{prefix}complex64, {prefix}complex128 or None")
        parts = check_dtype(spec, xp.float64 if chosen == xp.complex128 else xp.float32)
    positions = _axis_first(spec, _taken(spec, ids, "ids"), dims)
    return _rope(spec, positions, axial.per_axis_frequencies(dims, base), "half", parts, "complex")


def pixel_cos_sin(
    spec: Spec, positions: Tensor | npt.ArrayLike, head_dim: int, *, max_freq: float | Sequence[float] = 224.0,
    spacing: str = "linear", layout: str = "interleaved", dtype: DType | None = None,
) -> tuple[Tensor, Tensor]:
    """``(cos, sin)`` tensors of RoPE at pixel frequencies, each ``(*positions.shape[1:], head_dim)``, as
    ``posenc.rope.pixels.pixel_cos_sin`` (``positions`` ``(ndim, ...)``, coordinates in [-1, 1])."""
    layout = rotary.check_rotary_layout(layout)
    dtype = check_dtype(spec, dtype)
    taken = spec.intake(positions, None)
    if taken.shape is None or (taken.shape and type(taken.shape[0]) is not int):
        raise ValueError(f"positions must have a known number of axes (their first dimension) to choose the frequencies, "
                         f"got shape {taken.shape} in a graph")
    frequencies = pixels.pixel_frequencies(head_dim, max_freq, spacing=spacing, ndim=taken.shape[0] if taken.shape else 1)
    return _rope(spec, _rope_entries(taken, head_dim), frequencies, layout, dtype)


def _taken(spec, value, name, like=None):
    """``spec.intake(value, like)``: ``value`` (argument ``name``) taken in as positions are, its errors naming it."""
    try:
        return spec.intake(value, like)
    except (TypeError, ValueError) as error:
        raise type(error)(str(error).replace("positions", name, 1)) from None


def _wide(spec, positions):
    """The tensor of ``positions`` in float64 (float32 where the backend has no float64)."""
    wide = spec.xp.wide
    return spec.xp.cast(spec.xp.constant(positions.numpy(), wide) if positions.tensor is None else positions.tensor, wide)


def random_fourier_features(
    spec: Spec, coords: Tensor | npt.ArrayLike, projection: Tensor | npt.ArrayLike, *,
    input_shape: tuple[int, int] | None = None, dtype: DType | None = None,
) -> Tensor:
    """``[sin(2 pi c G), cos(2 pi c G)]``, ``(..., 2F)``, ``c = 2 * coords - 1``: ``posenc.sinusoidal.fourier.random_fourier_features``.

    ``coords`` ``(..., k)``, ``projection`` ``G`` ``(k, F)`` (SAM's buffer, on the coordinates'
    device). Eagerly on the host NumPy's function (the same numbers); traced or on a device,
    ``c G`` in float64 (float32 in JAX: off by ``|c G| * 2**-23`` turns) and the kernels' sin and cos.
    """
    dtype = check_dtype(spec, dtype)
    c = _taken(spec, coords, "coords")
    g = _taken(spec, projection, "projection", c.tensor if c.place is None else c.place)
    if g.shape is None or None in g.shape[:1]:
        raise ValueError(f"projection must have a known shape (k, F) (k coordinates), got shape {g.shape} in a graph")
    fourier.check_shapes((None,) if c.shape is None else c.shape, g.shape, input_shape)
    xp = spec.xp
    if c.host is not None and g.host is not None and not (c.traced or g.traced):
        table = fourier.random_fourier_features(c.numpy(), g.numpy(), input_shape=input_shape, dtype=_built(xp, dtype))
        return spec.adopt(table, dtype, c.place)
    x, w = _wide(spec, c), _wide(spec, g)
    if input_shape is not None:
        x = x / xp.constant(np.array([input_shape[1], input_shape[0]], np.float64), x.dtype, x)
    x = 2 * x - 1
    turns = functools.reduce(xp.add, (x[..., k : k + 1] * w[k] for k in range(g.shape[0])))
    route = choose(xp, dtype, traced=c.traced or g.traced, host=False)
    sines, cosines = _kernel(spec, route)(turns, *fourier.TWO_PI, xp.float64 if dtype == xp.float64 else xp.float32)
    return xp.cast(xp.concat([sines[..., 0], cosines[..., 0]], -1), dtype)


def as_tensor(spec: Spec, value: Any, name: str) -> Any:
    """``value`` as the framework's tensor for ``apply_rotary``, or a TypeError naming ``name``."""
    return (spec.as_tensor or require(spec.is_tensor, f"a {spec.tensor}"))(value, name)


def apply_rotary(spec: Spec, x: Tensor, cos: Tensor, sin: Tensor, *, layout: str = "half") -> Tensor:
    """``x`` (``(..., seq, head_dim)``) with its pairs rotated by ``cos``/``sin``: ``posenc.apply_rotary``.

    ``cos``, ``sin``: ``(..., seq, rotary_dim)`` broadcasting against ``x[..., :rotary_dim]``
    (``cos[:, None]`` for ``x`` of ``(batch, heads, seq, head_dim)``). The result has ``x``'s
    dtype (``cos`` and ``sin`` are rounded to it first) and is transformers'
    ``x * cos + rotate_half(x) * sin`` bit for bit; channels beyond ``rotary_dim`` pass through.
    """
    x, cos, sin = (as_tensor(spec, value, name) for name, value in (("x", x), ("cos", cos), ("sin", sin)))
    return rotary.apply_rotary(x, cos, sin, layout=layout)


# The modules' state and decisions.


def _check_input(spec, x):
    # No default argument: each one is a guard that a compiled call checks.
    if not spec.is_tensor(x):
        raise TypeError(f"x must be a {spec.accepts or spec.tensor}, got {type(x).__name__}")
    return x


class SinusoidalModule:
    """Add the sinusoidal table to batch-first embeddings, then apply dropout.

    Called with ``x`` of shape ``(batch, seq, d_model)`` (or ``(seq, d_model)``), it returns
    ``dropout(x + PE[:seq])``, same shape; given ``positions`` (``(batch, seq)`` or ``(seq,)``:
    packed sequences, a decoding step's index, as Flax's lm1b example, keras-hub's
    ``SinePositionEncoding`` and MaxText take them), ``dropout(x + encode(positions))``.
    ``convention``, ``base``, ``layout`` and ``options`` choose the table as in
    ``positional_encoding`` (row ``k`` holds position ``offset + k``); ``self.convention`` is the
    resolved one, ``self.pe`` the table.
    """

    # Mixed into each front's module class, which sets _spec and _first_rows(x): the table's
    # first seq rows (the torch and Flax modules grow their table, Keras' layer computes the rows
    # past it in the call).

    _spec: ClassVar[Spec]
    d_model: int
    convention: conventions.Convention

    def _configure(self, d_model: int, max_len: int, dropout: float, convention: Any, base: float | None,
                   layout: str | None, options: dict) -> tuple[int, float]:
        """Check and keep ``d_model`` and the resolved convention; return ``max_len`` and ``dropout`` checked."""
        self.d_model = checks.check_d_model(d_model)
        if isinstance(convention, dict):  # as Keras' get_config wrote it
            convention = conventions.Convention(**convention)
        self.convention = conventions.resolve(convention, base=base, layout=layout, **options)
        self._frequencies = self.convention.frequency_record(self.d_model)
        return checks.check_length(max_len, "max_len"), checks.check_dropout(dropout)

    def _table(self, length: int, dtype: Any = None, device: Any = None) -> Any:
        """The first ``length`` rows: ``positional_encoding``'s, or in a compiled graph ``encode``'s
        from the frequencies made at construction."""
        spec = self._spec
        if not spec.traced():
            return positional_encoding(spec, length, self.d_model, convention=self.convention, dtype=dtype, device=device)
        return _encode(spec, _arange(spec, length, device), self.d_model, self.convention, check_dtype(spec, dtype),
                       frequencies=self._frequencies)

    @property
    def max_len(self) -> int:
        """How many rows ``self.pe`` holds."""
        return self.pe[...].shape[0]  # type: ignore[attr-defined]  # [...]: a Flax 0.8 Variable has no .shape

    def _first_rows(self, x: Any) -> Any:
        raise NotImplementedError

    def _rows(self, x: Any, positions: Any) -> Any:
        """The rows to add to ``x``: the table's first ``seq`` rows, or the encoding of ``positions``
        (``x.shape[:-1]`` or a shape broadcasting to it, e.g. ``(seq,)``), in the default float dtype."""
        x = _check_input(self._spec, x)
        checks.check_input_width(tuple(x.shape), self.d_model)
        if positions is None:
            return self._first_rows(x)
        taken = self._spec.intake(positions, x)
        shape, seq = taken.shape, tuple(x.shape[:-1])
        if shape is not None and (len(shape) > len(seq) or any(
                p not in (q, 1, None) and q not in (1, None) for p, q in zip(shape[::-1], seq[::-1]))):
            raise ValueError(f"positions must have the shape of x but for its last axis, {seq} (or one broadcasting to it), "
                             f"got positions of shape {shape}")
        return _encode(self._spec, taken, self.d_model, self.convention, check_dtype(self._spec, None),
                       frequencies=self._frequencies)

    def extra_repr(self) -> str:
        c = self.convention
        named = "" if c.name == "paper" else f", convention={c.name!r}"
        return f"d_model={self.d_model}, max_len={self.max_len}{named}, base={c.base:g}, layout={c.layout!r}"


class _RotaryState:
    """A rotary module's frequencies: fixed at construction, the last length's (dynamic, longrope),
    and the fixed ones on each device. A plain object: Flax keeps it as a static attribute and
    Keras does not track it."""

    def __init__(self, spec, fixed, layout, form, fixed_only):
        self.spec, self.fixed, self.latest, self.on_device = spec, fixed, {}, {}
        self.fixed_only = fixed_only  # every call takes the fixed frequencies (no length read from position_ids)
        self.w = np.array(fixed.hi if form != "channels" else kernels.spread(NUMPY, fixed.hi, layout))
        self.pairs = len(fixed)

    def on(self, like, traced=False, key=None):
        """``(w, frequencies)`` as float64 tensors on ``like``'s device (``key``, when the caller has it): ``w`` (spread over the channels
        for ``form="channels"``) for the rounded route, the fixed frequencies for the framework's
        kernels. Made once per device (not in a trace: TF's would belong to its graph; torch's module
        makes them at construction and on ``.to(device)``), so a call converts no NumPy array, which
        torch.compile would trace; kept out of the modules' buffers, so ``.to(bfloat16)`` cannot round them."""
        key = like.device if key is None else key
        if key in self.on_device:
            return self.on_device[key]
        xp = self.spec.xp
        hi, lo, w = (xp.constant(a, xp.float64, like) for a in (self.fixed.hi, self.fixed.lo, self.w))
        made = w, dataclasses.replace(self.fixed, hi=hi, lo=lo)
        if not traced:
            self.on_device = {**self.on_device, key: made}
        return made


class RotaryModule:
    """What a front's ``RotaryEmbedding`` holds and decides, mixed into its module class.

    ``forward``/``call``/``__call__`` ``(x, position_ids)``: ``position_ids`` of shape ``(batch,
    seq)`` (any shape) gives ``cos`` and ``sin`` of shape ``(*position_ids.shape, rotary_dim)`` in
    ``x``'s dtype, on its device, ready for ``apply_rotary(q, cos[:, None], sin[:, None])``.
    Frequencies and attention factor as ``posenc.rotary_frequencies`` (``rope_type`` and
    ``params`` with transformers' names); ``dynamic`` and ``longrope`` read the sequence length
    as ``position_ids.max() + 1`` in every call (in a trace that cannot read it, see each front).
    The frequencies are NumPy float64, never the module's buffers or parameters, so
    ``.to(bfloat16)`` cannot round them (the failure of rounding ``inv_freq`` to bf16).

    ``mrope_section`` (M-RoPE, ``posenc.rope.axial.mrope_axes``; ``mrope_interleaved`` for
    Qwen3-VL): ``position_ids`` of shape ``(3, batch, seq)`` (time, height, width; a ``(batch,
    seq)`` one stands for three equal rows, as in transformers), and pair ``j`` turns by the row
    ``axes[j]``. ``form``: ``"channels"`` (cos and sin per channel of ``layout``), ``"pairs"``
    (one per pair, ``(..., rotary_dim // 2)``, as GPT-OSS), or ``"complex"`` (``cos + i sin``
    per pair, complex64, Llama 4's ``freqs_cis``). ``axes_dim`` (a width per axis,
    ``posenc.rope.axial.per_axis_cos_sin``: Flux's ``FluxPosEmbed`` with ``(16, 56, 56)`` and
    ``layout="interleaved"``; ``head_dim`` their sum): ``position_ids`` of shape ``(..., len(axes_dim))``,
    the axis last (Flux's ``ids``, ``(seq, 3)``). ``from_config`` reads a transformers config.
    Routes (``posenc.engine.routes``): up to ``kernels.FEW_ANGLES`` angles of fixed frequencies
    (a decoding step) come from the float64 angle in a handful of operations; more as in
    ``rotary_cos_sin``.
    """

    FORMS = ("channels", "pairs", "complex")
    _spec: ClassVar[Spec]
    _per_layer_type: ClassVar[Any] = None  # the front's RotaryEmbeddingPerLayerType
    head_dim: int
    base: float
    rope_type: str
    layout: str
    form: str
    params: dict
    rotary_dim: int
    mrope_section: tuple[int, ...] | None
    mrope_interleaved: bool
    axes_dim: tuple[int, ...] | None

    def __init__(self, head_dim: int, base: float = 10000.0, *, rope_type: str = "default", layout: str = "half",
                 form: str = "channels", mrope_section: Sequence[int] | None = None, mrope_interleaved: bool = False,
                 axes_dim: Sequence[int] | None = None, **params: Any) -> None:  # pragma: no mutate block (Keras reads the signature)
        """Check and keep the arguments, and make the frequencies of a call without a sequence length
        (``params``: the rope type's, beside the framework's own keywords, ``Spec.own_keywords``)."""
        super().__init__(**self._spec.own_keywords(params))
        self.layout = rotary.check_rotary_layout(layout)
        checks.check_choice(form, self.FORMS, "form")
        self.mrope_interleaved = checks.check_bool(mrope_interleaved, "mrope_interleaved")
        self.axes_dim = None if axes_dim is None else axial.check_axes_dim(axes_dim)
        if self.axes_dim is not None:
            if mrope_section is not None or rope_type != "default" or params:
                raise ValueError(f"axes_dim (a width per axis, diffusers' per-axis RoPE) takes rope_type 'default' without "
                                 f"mrope_section or rope parameters, got rope_type={rope_type!r}, mrope_section={mrope_section!r}, "
                                 f"parameters {sorted(params)}")
            if rotary.check_head_dim(head_dim) != sum(self.axes_dim):
                raise ValueError(f"head_dim must be sum(axes_dim) = {sum(self.axes_dim)} with axes_dim={self.axes_dim}, got {head_dim}")
            frequencies = axial.per_axis_frequencies(self.axes_dim, base)
        elif mrope_section is None:
            frequencies = rotary.rope_frequencies(head_dim, base, rope_type, **params)  # also checks them
        else:
            frequencies = axial.mrope_frequencies(head_dim, mrope_section, mrope_interleaved, base, rope_type, params)
        self.form, self.head_dim, self.base, self.rope_type, self.params = form, head_dim, base, rope_type, dict(params)
        self.rotary_dim = rotary.rotary_dim(head_dim, rope_type, **params)
        self.mrope_section = None if mrope_section is None else tuple(mrope_section)
        fixed_only = rope_type not in rotary.LENGTH_DEPENDENT or params.get("seq_len") is not None
        self._state = _RotaryState(self._spec, frequencies, self.layout, self.form, fixed_only)
        xp = self._spec.xp
        if xp.has_float64 and not self._spec.traced():  # on the default device now, so that no call converts them
            self._state.on(xp.constant(np.zeros(0), xp.float64))

    @classmethod
    def from_config(cls, config: Any, *, layer_type: str | None = None) -> Any:
        """The module for a transformers ``config`` (``posenc.rope.rotary_arguments``): ``rope_parameters``
        read whole, the head size, the family's layout and output form. A config with rope parameters
        per layer type (Gemma 3) gives, without ``layer_type``, a ``RotaryEmbeddingPerLayerType``
        (called with the layer type, as the model calls it)."""
        types = configs.layer_types(config)
        if cls._per_layer_type is None and layer_type is None and types is not None:
            raise ValueError(f"layer_type must name one of {', '.join(map(repr, types))} (the config's rope parameters are per "
                             f"layer type, and this front has no per-layer-type {cls.__name__}), got None")
        return configs.module_from_config(cls, cls._per_layer_type, config, layer_type)

    @property
    def axes(self) -> np.ndarray | None:
        """The axis each pair reads (M-RoPE), None for 1-D RoPE."""
        return self._state.fixed.axes

    @property
    def attention_factor(self) -> float:
        return self._state.fixed.attention

    def _inv_freq(self) -> np.ndarray:
        return np.array(self._state.fixed.hi)

    @property
    def inv_freq(self) -> Any:
        """The float64 frequencies (``rotary_frequencies``) of a call without a sequence length: the framework's
        float64 tensor, NumPy's array in JAX (which holds no float64 with x64 off)."""
        xp = self._spec.xp
        return xp.constant(self._inv_freq(), xp.float64) if xp.has_float64 else self._inv_freq()

    def _frequencies(self, positions):
        """The frequencies of this call, and the module's state when they are the fixed ones."""
        state = self._state
        if state.fixed_only:  # one attribute read: each object a compiled call reads is a guard it checks
            return state.fixed, state
        seq_len = None
        if positions.shape is None or positions.size != 0:
            largest = positions.top()
            if largest is None:
                if self._spec.unread_length is None:
                    return state.fixed, None
                raise ValueError(f"rope_type {self.rope_type!r} reads the sequence length from position_ids, "
                                 f"{self._spec.unread_length}; give seq_len= to RotaryEmbedding")
            seq_len = int(largest) + 1
        if seq_len not in state.latest:
            frequencies = rotary.module_frequencies(self.head_dim, self.base, self.rope_type, self.params, seq_len)
            state.latest = {seq_len: dataclasses.replace(frequencies, axes=state.fixed.axes)}
        return state.latest[seq_len], None

    def _cos_sin(self, x: Any, position_ids: Any) -> Any:
        spec = self._spec
        dtype = _check_input(spec, x).dtype
        if dtype not in spec.dtypes[:3]:  # half precision and float32 at once; float64 (JAX: x64?) and the rest checked
            dtype = check_dtype(spec, dtype)
        positions = spec.intake(position_ids, x)
        if self.axes_dim is not None:
            positions = _axis_first(spec, positions, self.axes_dim)
        elif self._state.fixed.axes is not None and positions.shape is not None and len(positions.shape) == 2:
            positions = _text_rows(spec, positions)
        positions = _rope_entries(positions, self.head_dim)
        frequencies, state = self._frequencies(positions)
        return _rope(spec, positions, frequencies, self.layout, dtype, self.form, state)

    def _config(self) -> dict[str, Any]:
        """The arguments that rebuild the module."""
        return {"head_dim": self.head_dim, "base": self.base, "rope_type": self.rope_type, "layout": self.layout,
                "form": self.form, "mrope_section": self.mrope_section, "mrope_interleaved": self.mrope_interleaved,
                "axes_dim": self.axes_dim, **self.params}

    def extra_repr(self) -> str:
        params = "".join(f", {k}={v!r}" for k, v in self.params.items())
        extra = "" if self.form == "channels" else f", form={self.form!r}"
        extra += "" if self.mrope_section is None else f", mrope_section={self.mrope_section!r}"
        extra += "" if self.axes_dim is None else f", axes_dim={self.axes_dim!r}"
        return f"head_dim={self.head_dim}, base={self.base:g}, rope_type={self.rope_type!r}, layout={self.layout!r}{extra}{params}"


def _text_rows(spec, positions):
    """M-RoPE's three rows for a 2-D ``position_ids`` ``(batch, seq)`` (text tokens), as transformers reads it."""
    # The pairs pick rows 0-2 by their axes, so a fourth copy would never be read: the counts below are
    # marked (a count under 3 fails: row 2 out of range)
    return dataclasses.replace(
        positions, shape=(3, *positions.shape),
        tensor=None if positions.tensor is None else spec.xp.stack([positions.tensor] * 3, 0),  # pragma: no mutate (see above)
        host=None if positions.host is None else np.stack([positions.numpy()] * 3),  # pragma: no mutate (see above)
    )



class LayerConfig:
    """``get_config`` of a Keras layer whose logic is mixed in from here: Keras' entries, then the module's ``_config()``."""

    def get_config(self) -> dict[str, Any]:
        return {**super().get_config(), **self._config()}  # type: ignore[misc, attr-defined]


class MixedModule:
    """RoPE-Mixed (``posenc.rope.mixed``): 2-D RoPE whose frequencies are a parameter mixing the axes.

    ``freqs``, ``(2, depth, num_heads, head_dim // 2)``, the framework's trainable parameter,
    starts as timm's ``RotaryEmbeddingMixed`` starts it (``mixed_frequencies`` of an angle
    ``2 pi u`` per block and head, ``u`` uniform in [0, 1), float32 as timm): torch draws ``u``
    from torch's global generator with ``torch.rand`` as timm does, so after the same
    ``torch.manual_seed`` the parameter is timm's (within its float32 rounding); Keras from the
    layer's ``seed=`` (an int: the same draws every time; None: Keras' global seed generator, which
    ``keras.utils.set_random_seed`` resets in recent Keras only); Flax from the ``params`` stream of
    ``rngs``. Called with ``(x, positions)``: ``positions`` ``(2, ...)``, x then y (timm's
    default ``grid_indexing="xy"``: the column, then the row, ``patch_positions((H, W))[::-1]``),
    it returns ``(cos, sin)``, each ``(depth, num_heads, *positions.shape[1:], head_dim)`` in
    ``x``'s dtype (Keras: the compute dtype), as ``mixed_cos_sin`` of the parameter: the angle
    in float64 (float32 in JAX), then one rounding; gradients flow to ``freqs``. Block ``b``
    rotates with ``apply_rotary(q, cos[b], sin[b], layout=layout)`` (``q`` ``(batch, heads, seq,
    head_dim)``).
    """

    _spec: ClassVar[Spec]
    freqs: Any
    head_dim: int
    depth: int
    num_heads: int
    base: float
    layout: str

    def _configure(self, head_dim: int, depth: int, num_heads: int, base: float, layout: str, uniform: Callable[[tuple], Any]) -> Any:
        """Check and keep the arguments; return the initial ``freqs``, a float32 tensor, made from
        ``uniform((depth, num_heads))`` (draws in [0, 1)) as timm makes them: angles ``(u * 2) * pi``
        in float32, as timm's ``torch.rand(...) * 2 * torch.pi``."""
        self.head_dim = mixed.check_mixed_head_dim(head_dim)
        self.depth = checks.check_int_at_least(depth, "depth", 1)
        self.num_heads = checks.check_int_at_least(num_heads, "num_heads", 1)
        self.base = checks.check_base(base)
        self.layout = rotary.check_rotary_layout(layout)
        checks.check_entries("depth * num_heads * head_dim", (self.depth, self.num_heads, self.head_dim))
        draws = np.asarray(uniform((self.depth, self.num_heads)), np.float32)
        initial = mixed.mixed_frequencies(self.head_dim, draws * np.float32(2) * np.float32(np.pi), base=self.base)
        return self._spec.adopt(initial, self._spec.xp.float32, None)

    def _call(self, x: Any, positions: Any) -> tuple[Any, Any]:
        spec = self._spec
        dtype = _check_input(spec, x).dtype
        if dtype not in spec.dtypes[:3]:
            dtype = check_dtype(spec, dtype)
        taken = spec.intake(positions, x)
        mixed.check_mixed(taken.shape, (2, self.depth, self.num_heads, self.head_dim // 2))
        freqs = self.freqs[...]  # a torch Parameter, a Keras or Flax variable: its value
        wide = _wide(spec, taken)
        return mixed.cos_sin(spec.xp, wide, freqs, self.layout, dtype, wide.dtype)

    def _config(self) -> dict[str, Any]:
        return {"head_dim": self.head_dim, "depth": self.depth, "num_heads": self.num_heads, "base": self.base, "layout": self.layout}

    def extra_repr(self) -> str:
        return ", ".join(f"{name}={value!r}" for name, value in self._config().items())


# Position as a bias on the attention scores (``posenc.biases``), as the framework's tensors.


def alibi_slopes(spec: Spec, num_heads: int, *, alibi_bias_max: float = 8.0, dtype: DType | None = None,
                 device: Any = None) -> Tensor:
    """``posenc.biases.alibi_slopes`` as a ``(num_heads,)`` tensor of ``dtype``: the float64 slopes
    rounded once. torch: ``device`` (default: torch's)."""
    dtype = check_dtype(spec, dtype)
    return spec.adopt(alibi.alibi_slopes(num_heads, alibi_bias_max=alibi_bias_max), dtype, device)


def alibi_bias(spec: Spec, num_heads: int, query_length: int, key_length: int, *, causal: bool = True, key_offset: int = 0,
               alibi_bias_max: float = 8.0, dtype: DType | None = None, device: Any = None) -> Tensor:
    """``posenc.biases.alibi_bias`` as a ``(num_heads, query_length, key_length)`` tensor of ``dtype``
    (float64 values rounded once; ``-inf`` on future keys when ``causal``), ready for
    ``attn_mask=`` / ``bias=``. torch: ``device`` (default: torch's)."""
    dtype = check_dtype(spec, dtype)
    values = alibi.alibi_bias(num_heads, query_length, key_length, causal=causal, key_offset=key_offset,
                              alibi_bias_max=alibi_bias_max, dtype=np.float64)
    return spec.adopt(values, dtype, device)


def relative_position_bucket(spec: Spec, relative_position: Tensor | npt.ArrayLike, *, bidirectional: bool = True,
                             num_buckets: int = 32, max_distance: int = 128, device: Any = None) -> Tensor:
    """``posenc.biases.relative_position_bucket`` of concrete integer relative positions (a tensor in host
    memory or an array-like; not a traced one): an integer tensor (int64; JAX: int32 with x64 off),
    made on the host. torch: ``device`` (default: torch's)."""
    try:
        host = np.asarray(relative_position)
    except Exception as error:  # a traced or device tensor: each framework raises its own error
        raise TypeError(f"relative_position must be concrete integers in host memory, got {type(relative_position).__name__}: "
                        f"{error}") from error
    buckets = t5.relative_position_bucket(host, bidirectional=bidirectional, num_buckets=num_buckets, max_distance=max_distance)
    return spec.adopt(np.asarray(buckets), None, device)  # a 0-d array, not NumPy's scalar


def relative_position_bias(spec: Spec, table: Tensor, query_length: int, key_length: int, *, bidirectional: bool = True,
                           num_buckets: int | None = None, max_distance: int = 128, key_offset: int = 0) -> Tensor:
    """``posenc.biases.relative_position_bias`` gathered from ``table`` (``(num_buckets, heads)``, a float
    tensor) in the framework's operations: ``(heads, query_length, key_length)``, ``table``'s dtype
    and device, differentiable with respect to ``table``; T5's ``compute_bias`` bit for bit."""
    table = as_tensor(spec, table, "table")
    if table.dtype not in spec.dtypes:
        raise TypeError(f"table must hold floats ({spec.dtype_names.removesuffix(' or None')}), got dtype {table.dtype}")
    shape = t5.check_table_shape(tuple(table.shape), num_buckets)
    indices = t5.table_indices(shape, query_length, key_length, bidirectional=bidirectional, max_distance=max_distance,
                               key_offset=key_offset)
    xp = spec.xp
    return xp.reshape(xp.take(xp.reshape(table, (-1,)), indices.ravel(), 0), indices.shape)


# What each front binds, in groups bound alike (the fronts unpack them in this order).
TABLES = (encode, positional_encoding, grid_encoding)
ROPE = (rotary_cos_sin, axial_cos_sin, mrope_cos_sin, apply_rotary, xpos_cos_sin)
VISION = (per_axis_cos_sin, per_axis_cis, pixel_cos_sin, random_fourier_features)
BIASES = (alibi_slopes, alibi_bias, relative_position_bucket, relative_position_bias)


def alibi_score_mod(spec: Spec, slopes: Tensor, *, causal: bool = True, key_offset: int = 0) -> Callable[..., Tensor]:
    """FlexAttention's ``score_mod`` (torch) adding ALiBi's bias with ``slopes`` (``alibi_slopes``):
    ``score - slopes[h] * |key_offset + q - k|``, ``-inf`` where ``k > key_offset + q`` when
    ``causal``; the scores ``alibi_bias`` gives, without a ``(heads, queries, keys)`` tensor."""
    slopes = as_tensor(spec, slopes, "slopes")
    causal, key_offset = checks.check_bool(causal, "causal"), checks.check_length(key_offset, "key_offset")

    def score_mod(score, batch, head, query, key):
        distance = key_offset + query - key
        biased = score - slopes[head] * abs(distance)
        return biased.where(distance >= 0, -math.inf) if causal else biased

    return score_mod


def t5_score_mod(spec: Spec, table: Tensor, query_length: int, key_length: int, *, bidirectional: bool = True,
                 max_distance: int = 128, key_offset: int = 0) -> Callable[..., Tensor]:
    """FlexAttention's ``score_mod`` (torch) adding T5's bias from ``table`` (``(num_buckets, heads)``): the
    scores ``relative_position_bias`` gives, from one ``(heads, query_length + key_length - 1)`` tensor
    (one value per relative position) instead of ``(heads, query_length, key_length)``."""
    # The relative positions -(key_offset + query_length - 1) .. key_length - 1 - key_offset are those of
    # one query at key_offset + query_length - 1 against keys 0 .. query_length + key_length - 2.
    query_length, key_length, key_offset = relative.check_lengths(query_length, key_length, key_offset)
    rows = relative_position_bias(spec, table, 1, query_length + key_length - 1, bidirectional=bidirectional,
                                  max_distance=max_distance, key_offset=key_offset + query_length - 1)[:, 0]

    def score_mod(score, batch, head, query, key):
        return score + rows[head, key - query + query_length - 1]

    return score_mod


SCORE_MODS = (alibi_score_mod, t5_score_mod)


class RelativeBiasModule:
    """T5's relative position bias with its learned ``(num_buckets, num_heads)`` table.

    Called with ``(query_length, key_length, key_offset=0)`` it returns ``relative_position_bias``
    of the table, ``(num_heads, query_length, key_length)`` in its dtype: T5's ``compute_bias``
    (``key_offset``: its ``past_seen_tokens``, the cache length in cached decoding) without the
    batch axis. ``bidirectional``: the encoder's buckets (False: the decoder's; the causal mask is
    the caller's, as in T5). The table is ``relative_attention_bias``, named as T5 checkpoints name
    it, so their weights load unchanged: torch, an ``nn.Embedding`` (state_dict key
    ``relative_attention_bias.weight``); Keras, the layer's weight ``relative_attention_bias``
    (``.assign(weight)``); Flax NNX, an ``nnx.Embed`` (``relative_attention_bias.embedding``, as
    in transformers' Flax T5; ``rngs=`` initialises it). Keyword arguments beyond these go to the
    framework's base class (Keras' ``name``, ``dtype``...). A Keras layer takes only tensors
    positionally: call it with keywords, ``layer(query_length=7, key_length=9)``.
    """

    _spec: ClassVar[Spec]
    _new_table: ClassVar[Callable[..., Any]]  # (num_buckets, num_heads) -> the table: each front's
    num_heads: int
    num_buckets: int
    bidirectional: bool
    max_distance: int

    def __init__(self, num_heads: int, *, bidirectional: bool = True, num_buckets: int = 32, max_distance: int = 128,
                 **kwargs: Any) -> None:  # pragma: no mutate block (Keras reads the signature)
        super().__init__(**kwargs)
        self._configure(num_heads, bidirectional, num_buckets, max_distance)
        self.relative_attention_bias = self._new_table(self.num_buckets, self.num_heads)

    def _configure(self, num_heads: int, bidirectional: bool, num_buckets: int, max_distance: int) -> None:
        self.num_heads = checks.check_width(checks.check_int_at_least(num_heads, "num_heads", 1), "num_heads")
        self.bidirectional, self.num_buckets, self.max_distance = t5.check_bucketing(bidirectional, num_buckets, max_distance)

    def _bias(self, table: Any, query_length: int, key_length: int, key_offset: int) -> Any:
        return relative_position_bias(self._spec, table, query_length, key_length, bidirectional=self.bidirectional,
                                      max_distance=self.max_distance, key_offset=key_offset)

    def _config(self) -> dict[str, Any]:
        return {"num_heads": self.num_heads, "bidirectional": self.bidirectional, "num_buckets": self.num_buckets,
                "max_distance": self.max_distance}

    def extra_repr(self) -> str:
        return ", ".join(f"{name}={value!r}" for name, value in self._config().items())
