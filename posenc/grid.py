"""Sin-cos position tables on image grids (and video), exact to the projects that use them.

A grid of ``H x W`` patches (or ``T x H x W`` for video) is flattened into ``H * W`` tokens,
and every source writes, per token, sines and cosines of its row ``y`` and its column ``x``
(and frame ``t``): ``sin(p * w_j)``, ``cos(p * w_j)`` with ``w_j = T ** (-j / span)``. The
sources differ in five things only, and a ``GridConvention`` holds them as data:

- ``columns``: which axis each block of columns encodes, and how (a block of sines, a block
  of cosines, or DETR's interleaved sin/cos pairs), in column order;
- ``flatten``: the order of the axes from the outer to the inner loop of the flattening.
  Images are flattened row by row (``("y", "x")``); MoCo v3, the original RT-DETR code
  (lyuwenyu/RT-DETR) and transformers' RT-DETR before huggingface/transformers#41380 flatten
  a ``meshgrid(w, h, indexing="ij")``, width outer, so on a non-square grid token ``k`` gets
  the position of another patch;
- ``span``: ``"D/4"`` (``w_j = T ** (-j / (D/4))``, MAE and most) or ``"D/4-1"`` (big_vision,
  "simple ViT": the lowest frequency exactly ``1 / T``);
- ``positions``: integers ``0 .. n - 1``; DETR's ``1 .. n`` (the cumulative sum of its mask),
  optionally normalised to ``(0, scale]``; diffusers' ``k / (n / base_size) / interpolation_scale``;
- prefix rows of zeros for class (or extra) tokens, where the source writes them.

Each axis' sines and cosines come from posenc's accurate 1-D kernel
(``_rotation.sin_cos``: float32 within 2e-7 of the exact value, float64 ~2e-16) for the
``n`` values of that axis only; the table is then filled by broadcasting, so a 64 x 64
table costs 128 rows of trigonometry. ``identify_grid`` says which convention wrote a
frozen table, ``diagnose_grid`` which grid mistake did.
"""

import contextlib
import dataclasses
import inspect
import math
import numbers

from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import DTypeLike

from . import _checks, _core, _rotation, identification
from .language import N_, _, get_language, using_language

AXES_2D = ("y", "x")
AXES_3D = ("t", "y", "x")


@dataclasses.dataclass(frozen=True)
class GridConvention:
    """One way of writing a grid table; see the module docstring for each field.

    ``columns``: ``((axis, kind), ...)`` with ``kind`` one of ``"sin"``, ``"cos"`` (a block
    of ``F`` columns) or ``"interleaved"`` (``2F`` columns, sin at even offsets);
    ``widths``: columns per axis as a fraction of ``d`` (``F`` = half of it).
    """

    name: str
    columns: tuple
    flatten: tuple = AXES_2D
    span: str = "D/4"
    positions: str = "index"
    widths: tuple = (("y", 0.5), ("x", 0.5))


def _sin_cos_blocks(first, second):
    return ((first, "sin"), (first, "cos"), (second, "sin"), (second, "cos"))


# Each builder takes the source's options (with its defaults) and returns (GridConvention, prefix rows);
# temperature, normalize, scale, base_size, ... are read from the options where they act
# (_frequencies, _axis_positions).
def _mae(cls_token=False):
    return GridConvention("mae", _sin_cos_blocks("x", "y")), cls_token


def _moco(temperature=10000.0, cls_token=True):
    conv = GridConvention("moco-v3", _sin_cos_blocks("x", "y"), flatten=("x", "y"))
    return conv, cls_token


def _rt_detr(temperature=10000.0, cls_token=False):
    conv = GridConvention("rt-detr", _sin_cos_blocks("y", "x"))
    return conv, cls_token


def _big_vision(temperature=10000.0):
    return GridConvention("big_vision", _sin_cos_blocks("x", "y"), span="D/4-1"), 0


def _simple_vit(temperature=10000.0):
    conv = GridConvention("simple-vit", _sin_cos_blocks("x", "y"), span="D/4-1")
    return conv, 0


def _timm(temperature=10000.0, reverse_coord=False, interleave_sin_cos=False):
    first, second = ("x", "y") if reverse_coord else ("y", "x")
    if interleave_sin_cos:
        columns = _sin_cos_blocks(first, second)
    else:
        columns = ((first, "sin"), (second, "sin"), (first, "cos"), (second, "cos"))
    return GridConvention("timm", columns, flatten=(first, second)), 0


def _detr(temperature=10000.0, normalize=False, scale=None):
    if scale is not None and not normalize:
        raise ValueError(f"convention 'detr': scale={scale!r} needs normalize=True (DETR raises the same)")
    conv = GridConvention("detr", (("y", "interleaved"), ("x", "interleaved")), positions="detr")
    return conv, 0


def _diffusers(base_size=16, interpolation_scale=1.0, cls_token=False, extra_tokens=0):
    conv = GridConvention("diffusers", _sin_cos_blocks("x", "y"), positions="diffusers")
    # diffusers prepends the extra rows only when both are given.
    return conv, extra_tokens if cls_token and extra_tokens > 0 else 0


def _diffusers_3d(spatial_interpolation_scale=1.0, temporal_interpolation_scale=1.0):
    columns = (("t", "sin"), ("t", "cos"), *_sin_cos_blocks("x", "y"))
    conv = GridConvention("diffusers", columns, flatten=AXES_3D,
                          positions="diffusers-3d", widths=(("t", 0.25), ("y", 0.375), ("x", 0.375)))
    return conv, 0


_PRESETS = {
    "mae": ("MAE's get_2d_sincos_pos_embed (and the position_embeddings of transformers' ViTMAE models): "
            "[sin x, cos x, sin y, cos y], x the width although MAE names that half emb_h", _mae),
    "moco-v3": ("MoCo v3 (and the original RT-DETR code, transformers' RT-DETR before #41380, ultralytics): "
                "[sin w, cos w, sin h, cos h] of "
                "meshgrid(w, h) flattened width-outer: wrong positions on non-square grids; a zero class row", _moco),
    "rt-detr": ("transformers 5.x build_2d_sinusoidal_position_embedding (RT-DETR after #41380; ViTMAE builds with "
                "it and then swaps the halves to MAE's order): [sin h, cos h, sin w, cos w], row-major", _rt_detr),
    "big_vision": ("big_vision posemb_sincos_2d: [sin x, cos x, sin y, cos y], frequencies over D/4 - 1 steps", _big_vision),
    "simple-vit": ("lucidrains' simple ViT posemb_sincos_2d: the same numbers as big_vision", _simple_vit),
    "timm": ("timm build_sincos2d_pos_embed: [sin h, sin w, cos h, cos w] (interleave_sin_cos: [sin h, cos h, sin w, "
             "cos w]; reverse_coord: w first and flattened width-outer)", _timm),
    "detr": ("DETR PositionEmbeddingSine: y block then x block, sin/cos interleaved, positions 1..n "
             "(normalize: scaled to (0, scale], scale 2 pi)", _detr),
    "diffusers": ("diffusers get_2d_sincos_pos_embed (MAE's layout, positions k / (n / base_size) / "
                  "interpolation_scale) and, for (T, H, W), get_3d_sincos_pos_embed: [t | MAE's 2-D table]", _diffusers),
}

# What each source does when d is not a multiple of 4 (all of them need it).
_NOT_DIVISIBLE = {
    "mae": "MAE asserts embed_dim % 2 == 0 for each half (AssertionError)",
    "moco-v3": "MoCo v3 asserts it (AssertionError)",
    "rt-detr": "transformers raises ValueError",
    "big_vision": "big_vision asserts it",
    "simple-vit": "simple ViT asserts it",
    "timm": "timm asserts it",
    "detr": "DETR's torch.stack of num_pos_feats // 2 sines and cosines fails for odd num_pos_feats = d / 2 "
            "(and num_pos_feats = d / 2 needs an even d)",
    "diffusers": "diffusers raises ValueError('embed_dim must be divisible by 2') for each half",
}


def list_grid_conventions() -> dict[str, str]:
    """``{name: description}`` of every grid convention ``grid_encoding`` knows."""
    return {name: preset[0] for name, preset in _PRESETS.items()}


def _check_convention(convention):
    if not _checks.is_one_of(convention, _PRESETS):
        raise ValueError(f"convention must be one of {', '.join(map(repr, _PRESETS))}; got {convention!r}")
    return convention


def _check_shape(shape):
    if isinstance(shape, numbers.Integral) or not hasattr(shape, "__len__"):
        raise TypeError(f"shape must be a tuple (height, width) or (time, height, width), got {shape!r}")
    if len(shape) not in (2, 3):
        raise ValueError(f"shape must be (height, width) or (time, height, width), got {tuple(shape)!r}")
    return tuple(_checks.check_int_at_least(n, "each size in shape", 1) for n in shape)


def _options(convention, ndim, options):
    """The preset's ``(GridConvention, prefix rows, options with defaults)`` for a grid of ``ndim`` axes."""
    build = _PRESETS[convention][1]
    if ndim == 3:
        if convention != "diffusers":
            raise ValueError(
                f"convention {convention!r} is 2-D only (its source builds (height, width) grids); got a 3-D shape. "
                "3-D (time, height, width): convention='diffusers' (get_3d_sincos_pos_embed)"
            )
        build = _diffusers_3d
    allowed = inspect.signature(build).parameters
    unknown = sorted(set(options) - set(allowed))
    if unknown:
        names = ", ".join(allowed) or "none"
        raise TypeError(f"convention {convention!r} takes the options {names}; got {', '.join(unknown)}")
    merged = {name: p.default for name, p in allowed.items()} | options
    conv, prefix = build(**options)
    return conv, int(prefix), merged


def _frequencies(conv, d, temperature):
    """``{axis: (w_hi, w_lo)}``: ``F`` frequencies ``T ** (-j / span)`` per axis."""
    parts = {}
    for axis, fraction in conv.widths:
        count = round(d * fraction) // 2
        span = count - 1 if conv.span == "D/4-1" else count
        if span <= 0:
            raise ValueError(
                f"convention {conv.name!r} needs d >= 8: its frequencies run over D/4 - 1 steps, "
                f"and at d={d} that is {span} (the source divides 0 by 0: NaN)"
            )
        parts[axis] = _rotation.geometric_parts(count, float(temperature), float(span))
    return parts


def _axis_positions(conv, sizes, options):
    """``{axis: float64 positions}`` along each axis, as the source computes them (exactly)."""
    out = {}
    for axis, n in sizes.items():
        k = np.arange(n, dtype=np.float64)
        if conv.positions == "detr":
            k = k + 1  # the cumulative sum of an all-valid mask
            if options["normalize"]:
                scale = 2 * math.pi if options["scale"] is None else options["scale"]
                k = k / (n + 1e-6) * scale
        elif conv.positions == "diffusers":
            k = k / (n / options["base_size"]) / options["interpolation_scale"]
        elif conv.positions == "diffusers-3d":
            name = "temporal" if axis == "t" else "spatial"
            k = k / options[f"{name}_interpolation_scale"]
        out[axis] = k
    return out


def _check_positions(positions, sizes):
    if len(positions) != len(sizes):
        raise ValueError(f"positions must hold one array per axis {tuple(sizes)}, got {len(positions)} arrays")
    out = {}
    for (axis, n), p in zip(sizes.items(), positions):
        p = _core.as_positions(p)
        if p.shape != (n,):
            raise ValueError(f"positions for axis {axis!r} must have shape ({n},), got {p.shape}")
        out[axis] = p
    return out


def grid_encoding(
    shape: Sequence[int], d: int, *, convention: str = "mae", dtype: DTypeLike = np.float32, positions: Any = None,
    **options: Any,
) -> np.ndarray:
    """The sin-cos table of a grid, exact to ``convention``'s source: ``(prefix + prod(shape), d)``.

    ``shape``: ``(H, W)``, or ``(T, H, W)`` for video (convention "diffusers" only).
    Token ``k`` is patch ``(k // W, k % W)`` (row-major, as images are flattened), except
    where the source flattens otherwise (moco-v3; timm's ``reverse_coord``). Row ``k`` holds
    ``sin(p * w_j)`` and ``cos(p * w_j)`` of the patch's positions ``p`` along each axis,
    ``w_j = temperature ** (-j / span)`` with ``j < F`` (``F = d / 4`` per axis in 2-D;
    ``span = F``, or ``F - 1`` for big_vision), in the blocks ``list_grid_conventions()``
    describes. Options under the source's names (``cls_token``, ``temperature``,
    ``normalize``, ``scale``, ``base_size``, ``interpolation_scale``, ``extra_tokens``,
    ``reverse_coord``, ``interleave_sin_cos``, ...); the prefix rows a source writes for
    class tokens are zeros. ``positions``: one float array per axis (``(H,)``, ``(W,)``)
    to encode instead of the source's own (e.g. fractional ones). float32 within 2e-7 of
    the exact value; float64 ~2e-16 for integer positions (fractional ones, e.g. DETR's
    normalised, carry their own float64 rounding: ~1e-16 times the angle); float16 one
    rounding of float32. DETR's own output
    ``(batch, d, H, W)`` is ``table.T.reshape(d, H, W)``.
    """
    convention = _check_convention(convention)
    shape = _check_shape(shape)
    d = _checks.check_width(_checks.check_int_at_least(d, "d", 1), "d")
    _checks.check_entries(" * ".join(f"shape[{n}]" for n in range(len(shape))) + " * d", (*shape, d))
    dtype = _core.check_dtype(dtype)
    conv, prefix, opts = _options(convention, len(shape), options)
    multiple = 16 if len(shape) == 3 else 4
    if d % multiple:
        why = ("diffusers' get_3d_sincos_pos_embed splits d into D/4 (time) and 3D/4 (space), each half of "
               "which must be even (ValueError otherwise)") if multiple == 16 else _NOT_DIVISIBLE[convention]
        raise ValueError(f"d must be a multiple of {multiple} for convention {convention!r} ({why}); got d={d}")
    return _table(conv, opts, shape, d, dtype, prefix, positions)


def _table(conv, opts, shape, d, dtype, prefix=0, positions=None):
    """The table ``conv`` and its options ``opts`` describe, with ``prefix`` zero rows first."""
    sizes = dict(zip(AXES_3D if len(shape) == 3 else AXES_2D, shape))
    values = _axis_positions(conv, sizes, opts) if positions is None else _check_positions(positions, sizes)
    parts = _frequencies(conv, d, opts.get("temperature", 10000.0))
    trig = {axis: _rotation.sin_cos(values[axis], *parts[axis], dtype) for axis in sizes}
    out = np.zeros((prefix + math.prod(shape), d), dtype)
    _fill(out[prefix:].reshape(*(sizes[a] for a in conv.flatten), d), conv, trig)
    return out


def _fill(body, conv, trig):
    """Write each block of ``conv.columns`` into ``body`` (the grid in flattening order, ``(..., d)``)."""
    start = 0
    for axis, kind in conv.columns:
        s, c = trig[axis]
        where = [1] * (body.ndim - 1)
        where[conv.flatten.index(axis)] = len(s)
        s, c = (v.reshape(*where, v.shape[-1]) for v in (s, c))
        width = s.shape[-1]
        if kind == "interleaved":
            body[..., start : start + 2 * width : 2] = s
            body[..., start + 1 : start + 2 * width : 2] = c
            width *= 2
        else:
            body[..., start : start + width] = s if kind == "sin" else c
        start += width


# identify_grid and diagnose_grid: rebuild candidates in float64 and compare.

# Sources compute in float32 with naive angles (an error of about |angle| * 6e-8): a table
# written by one of them is within this of the exact one for grids up to a few hundred
# patches a side, while two different conventions differ by 0.1 and more.
TOLERANCE = 1e-4


def _candidates(shape, d):
    """``(label, options, table)`` for every convention and the options that change its numbers."""
    variants = {
        "timm": [{}, {"interleave_sin_cos": True}, {"reverse_coord": True},
                 {"reverse_coord": True, "interleave_sin_cos": True}],
        "detr": [{}, {"normalize": True}],
        "moco-v3": [{"cls_token": False}],
    }
    out = []
    for name in _PRESETS:
        if len(shape) == 3 and name != "diffusers":
            continue
        for options in variants.get(name, [{}]):
            try:
                table = grid_encoding(shape, d, convention=name, dtype=np.float64, **options)
            except ValueError:
                continue  # d this source cannot build (e.g. big_vision at d=4)
            label = name + "".join(f", {k}={v!r}" for k, v in options.items() if k != "cls_token")
            out.append((label, options, table))
    return out


def _diffusers_scale(body, shape, d):
    """diffusers' ``base_size / interpolation_scale`` read off a table in MAE's layout, or None.

    Column 0 is ``sin(p_x)`` at frequency 1 and column ``d / 4`` its cosine: the angle at
    ``x = 1`` is one step ``base_size / (W * interpolation_scale)``.
    """
    if len(shape) != 2 or shape[1] < 2:
        return None
    step = math.atan2(body[1, 0], body[1, d // 4])
    return step * shape[1] if step > 0 else None


@dataclasses.dataclass(frozen=True)
class GridIdentification:
    """What ``identify_grid`` found: ``matches`` (labels of the conventions, with options,
    that reproduce the table within ``tolerance``), ``prefix_rows`` (rows before the grid's
    tokens, e.g. a class token's), ``prefix_zeros`` (whether those rows are zeros) and
    ``max_deviation`` of the closest candidate, ``closest`` its label. ``language``: the language
    of ``str()`` (``posenc.language``; None: the locale's), the one current when it was made."""

    matches: tuple
    prefix_rows: int
    prefix_zeros: bool
    closest: str
    max_deviation: float
    tolerance: float = TOLERANCE
    language: str | None = dataclasses.field(default_factory=get_language, compare=False, repr=False)

    def __str__(self) -> str:
        with using_language(self.language):
            # A clause after the conventions' names (with its leading space): the rows before the grid's tokens
            # (a class token's), all zeros or not.
            prefix = ""
            if self.prefix_rows == 1 and self.prefix_zeros:
                # Translators: follows the names of conventions, e.g. "mae after 1 prefix row (zeros)"; a
                # prefix row comes before the grid's tokens (a class token's row). Keep the leading space if
                # your language separates words with spaces.
                prefix = _(" after 1 prefix row (zeros)")
            elif self.prefix_rows == 1:
                # Translators: as " after 1 prefix row (zeros)", the row not all zeros.
                prefix = _(" after 1 prefix row (not zeros)")
            elif self.prefix_rows and self.prefix_zeros:
                # Translators: as " after 1 prefix row (zeros)"; {rows}: a number of rows, 2 or more.
                prefix = _(" after {rows} prefix rows (zeros)").format(rows=self.prefix_rows)
            elif self.prefix_rows:
                # Translators: as " after 1 prefix row (zeros)", the rows not all zeros; {rows}: 2 or more.
                prefix = _(" after {rows} prefix rows (not zeros)").format(rows=self.prefix_rows)
            values = dict(prefix=prefix, closest=self.closest, deviation=f"{self.max_deviation:.2g}",
                          tolerance=f"{self.tolerance:.2g}", matches=" = ".join(self.matches))
            if not self.matches:
                # Translators: {prefix}: nothing, or " after 1 prefix row (zeros)" and the like (translated
                # on its own); {closest}: the label of the closest convention; {deviation}, {tolerance}:
                # numbers.
                return _("none{prefix} (closest: {closest}; max deviation {deviation} > {tolerance})").format(**values)
            # Translators: {matches}: the labels of the conventions that match, e.g. "big_vision =
            # simple-vit"; {prefix}: nothing, or " after 1 prefix row (zeros)" and the like (translated
            # on its own).
            return _("{matches}{prefix}; max deviation {deviation}").format(**values)


def _deviation(a, b):
    return float(np.max(np.abs(a - b), initial=0.0))


def _as_table(table):
    """``identification``'s reading of a table, with the ``(1, tokens, d)`` most models store."""
    if len(getattr(table, "shape", ())) == 3 and table.shape[0] == 1:
        table = table[0]
    return identification._as_table(table)


def _split_prefix(table, shape):
    tokens = math.prod(shape)
    prefix = table.shape[0] - tokens
    if prefix < 0:
        raise ValueError(
            f"table has {table.shape[0]} rows, fewer than the {tokens} tokens of a {' x '.join(map(str, shape))} grid"
        )
    return table[prefix:], prefix, bool(np.all(table[:prefix] == 0))


def identify_grid(table: Any, shape: Sequence[int], *, language: str | None = None) -> "GridIdentification":
    """Which grid convention wrote ``table`` (``(tokens, d)`` or ``(1, tokens, d)``) for a grid of ``shape``?

    Rows beyond ``prod(shape)`` are taken as prefix rows (class or extra tokens) and
    reported, not compared. Every convention (with the options that change its numbers:
    timm's ``reverse_coord`` and ``interleave_sin_cos``, DETR's ``normalize``; diffusers'
    ``base_size / interpolation_scale`` read off the table) is rebuilt in float64 and kept if
    it is within ``TOLERANCE`` everywhere. Returns a ``GridIdentification``, whose ``str()`` is in
    ``language`` ("en", "pt_BR" or "zh_CN"; None: the one ``posenc.set_language`` chose).
    """
    with _speaking(language):
        return _identify_grid(table, shape)


def _speaking(language):
    """The context of a call's ``language=`` argument: that language, or (None) the current one."""
    return contextlib.nullcontext() if language is None else using_language(language)


def _identify_grid(table, shape):
    shape = _check_shape(shape)
    body, prefix, zeros = _split_prefix(_as_table(table), shape)
    d = body.shape[1]
    candidates = _candidates(shape, d) if d % 4 == 0 else []
    ratio = _diffusers_scale(body, shape, d) if d % 4 == 0 else None
    if ratio is not None and not math.isclose(ratio, 16.0, rel_tol=1e-5):  # 16: diffusers' default, tried already
        table_d = grid_encoding(shape, d, convention="diffusers", base_size=ratio, dtype=np.float64)
        candidates.append((f"diffusers, base_size / interpolation_scale={ratio:.6g}", {}, table_d))
    if not candidates:
        return GridIdentification((), prefix, zeros, _("none (d is not a multiple of 4)"), math.inf)
    deviations = [(_deviation(t, body), label) for label, _opts, t in candidates]
    best, closest = min(deviations)
    matches = tuple(label for dev, label in deviations if dev <= TOLERANCE)
    return GridIdentification(matches, prefix, zeros, closest, best)


# The grid mistakes diagnose_grid looks for: each rebuilds a convention's table the wrong way.
def _shape_swapped(name, shape, d, options):
    return grid_encoding(shape[::-1], d, convention=name, dtype=np.float64, **options)


def _variant(name, shape, d, options, change):
    # The convention's table with one of its fields changed by ``change`` (no prefix rows).
    conv, _prefix, opts = _options(name, len(shape), dict(options))
    return _table(change(conv), opts, shape, d, np.float64)


def _swap_axes(axes):
    return tuple({"y": "x", "x": "y"}.get(a, a) for a in axes)


def _flattening(name, shape, d, options):
    return _variant(name, shape, d, options, lambda c: dataclasses.replace(c, flatten=c.flatten[::-1]))


def _blocks_swapped(name, shape, d, options):
    columns = lambda c: tuple((_swap_axes(a)[0], kind) for a, kind in c.columns)  # noqa: E731
    return _variant(name, shape, d, options, lambda c: dataclasses.replace(c, columns=columns(c)))


# Each mistake's finding, a whole sentence: {convention} is the convention's name.
MISTAKES = {
    "height and width swapped": (
        _shape_swapped,
        # Translators: {convention}: a grid convention's name, e.g. mae; {width} x {height}: the
        # grid's size.
        N_("{convention}: height and width swapped: the table was built for a {width} x {height} grid: (width, height) "
           "passed where (height, width) was meant"),
    ),
    "wrong flattening order": (
        _flattening,
        # Translators: {convention}: a grid convention's name, e.g. mae; {order}: "height outer" or
        # "width outer" (translated on their own), the loop order in which the tokens were
        # flattened.
        N_("{convention}: wrong flattening order: the tokens are flattened {order}, so on a non-square grid most tokens "
           "carry another patch's position (MoCo v3, the original RT-DETR code, transformers' RT-DETR before #41380)"),
    ),
    "axes stacked in the wrong order": (
        _blocks_swapped,
        # Translators: {convention}: a grid convention's name, e.g. mae.
        N_("{convention}: axes stacked in the wrong order: the columns that should encode y encode x and the other way "
           "round (NVIDIA/physicsnemo #1096)"),
    ),
}


@dataclasses.dataclass(frozen=True)
class GridDiagnosis:
    """What ``diagnose_grid`` found: ``identification`` (``identify_grid``'s answer) and
    ``findings``, one sentence per mistake that reproduces the table (empty when the table
    is a convention's own, or nothing explains it); ``mistakes``, the same as codes. ``language``: the language of the findings
    and of ``str()`` (``posenc.language``; None: the locale's), the one current when it was made."""

    identification: GridIdentification
    findings: tuple
    #: (convention, mistake) for each finding of a mistake: the keys of ``MISTAKES``, English in every language.
    mistakes: tuple = ()
    language: str | None = dataclasses.field(default_factory=get_language, compare=False, repr=False)

    def __str__(self) -> str:
        with using_language(self.language):
            # Translators: {identification}: what identify_grid found, e.g. "mae; max deviation 1e-08".
            lines = [_("identified: {identification}").format(identification=self.identification)]
        lines += [f"- {finding}" for finding in self.findings]
        return "\n".join(lines)


def diagnose_grid(
    table: Any, shape: Sequence[int], convention: str | None = None, *, language: str | None = None, **options: Any
) -> "GridDiagnosis":
    """Which grid mistake made ``table``? ``(tokens, d)`` or ``(1, tokens, d)`` for a grid of ``shape`` (2-D).

    For ``convention`` (every one if None, with ``options`` as in ``grid_encoding``) the
    table is compared with the convention's own and with the mistakes of ``MISTAKES``:
    height and width swapped in the shape, the tokens flattened in the other order, the x and
    y blocks stacked in the wrong order. A mistake whose table equals the right one (a
    square grid hides a wrong flattening order) is reported as invisible here. Returns a
    ``GridDiagnosis``, its findings in ``language`` ("en", "pt_BR" or "zh_CN"; None: the one
    ``posenc.set_language`` chose).
    """
    with _speaking(language):
        return _diagnose_grid(table, shape, convention, options)


def _diagnose_grid(table, shape, convention, options):
    shape = _check_shape(shape)
    if len(shape) != 2:
        raise ValueError(f"diagnose_grid takes a 2-D shape (height, width), got {shape!r}")
    identification = identify_grid(table, shape)
    body = _split_prefix(_as_table(table), shape)[0]
    d = body.shape[1]
    names = list(_PRESETS) if convention is None else [_check_convention(convention)]
    h, w = shape
    findings, mistakes = [], []
    for name in names:
        opts = {k: v for k, v in options.items() if k != "cls_token"}
        try:
            right = grid_encoding(shape, d, convention=name, dtype=np.float64, **opts)[-h * w :]
        except (ValueError, TypeError):
            continue
        # The wrong order: the other one than the convention's.
        if _options(name, 2, opts)[0].flatten[0] == "x":
            # Translators: how tokens were flattened: the loop over the height (rows) outside, the width
            # inside.
            order = _("height outer")
        else:
            # Translators: how tokens were flattened: the loop over the width (columns) outside, the
            # height inside.
            order = _("width outer")
        found = []
        for mistake, (build, text) in MISTAKES.items():
            wrong = build(name, shape, d, opts)[-h * w :]
            if _deviation(wrong, body) <= TOLERANCE < _deviation(wrong, right):
                found.append(_(text).format(convention=name, width=w, height=h, order=order))
                mistakes.append((name, mistake))
        if len(found) > 1 and h == w:
            # Translators: {convention}: a grid convention's name, e.g. mae.
            found.append(_("{convention}: on a square grid these mistakes write the same table; a non-square grid tells "
                           "them apart").format(convention=name))
        findings += found
    return GridDiagnosis(identification, tuple(findings), tuple(mistakes))
