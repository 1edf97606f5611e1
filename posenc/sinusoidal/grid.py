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
(``rotation.sin_cos``; accuracy: see the accuracy contract) for the ``n`` values of that
axis only; the table is then filled by broadcasting, so a 64 x 64 table costs 128 rows of
trigonometry. ``identify_grid`` says which convention wrote a
frozen table, ``diagnose_grid`` which grid mistake did.
"""

import dataclasses
import inspect
import math
import numbers
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import numpy as np
from numpy.typing import DTypeLike

from ..engine import checks, rotation
from ..engine.registry import Registry
from . import tables

__all__ = ["grid_encoding", "list_grid_conventions", "patch_positions"]

AXES_2D = ("y", "x")
AXES_3D = ("t", "y", "x")


@dataclasses.dataclass(frozen=True)
class GridConvention:
    """One way of writing a grid table; see the module docstring for each field.

    ``columns``: ``((axis, kind), ...)`` with ``kind`` one of ``"sin"``, ``"cos"`` (a block
    of ``F`` columns) or ``"interleaved"`` (``2F`` columns, sin at even offsets);
    ``widths``: columns per axis as a fraction of ``d`` (``F`` = half of it); ``round_up``: 0, or
    the multiple the source rounds ``d`` up to before it cuts its table to ``d`` columns
    (positional-encodings: the last axis loses its slowest pairs when ``d`` is not a multiple).
    """

    name: str
    columns: tuple
    flatten: tuple = AXES_2D
    span: str = "D/4"
    positions: str = "index"
    widths: tuple = (("y", 0.5), ("x", 0.5))
    round_up: int = 0


def _sin_cos_blocks(first, second):
    return ((first, "sin"), (first, "cos"), (second, "sin"), (second, "cos"))


# Each builder takes the source's options (with its defaults) and returns (GridConvention, prefix rows);
# temperature, normalize, scale, base_size, ... are read from the options where they act
# (_frequencies, _axis_positions). _options reads the defaults off the signature, which mutmut's
# trampolines keep as written: a default changed by mutmut never reaches the tables, hence no mutate
# on each def line. tests/sinusoidal/test_grid.py builds each source's default table (every default
# changed by hand fails it).
def _mae(cls_token=False):  # pragma: no mutate
    return GridConvention("mae", _sin_cos_blocks("x", "y")), cls_token


def _moco(temperature=10000.0, cls_token=True):  # pragma: no mutate
    conv = GridConvention("moco-v3", _sin_cos_blocks("x", "y"), flatten=("x", "y"))
    return conv, cls_token


def _rt_detr(temperature=10000.0, cls_token=False):  # pragma: no mutate
    conv = GridConvention("rt-detr", _sin_cos_blocks("y", "x"))
    return conv, cls_token


def _big_vision(temperature=10000.0):  # pragma: no mutate
    return GridConvention("big_vision", _sin_cos_blocks("x", "y"), span="D/4-1"), 0


def _simple_vit(temperature=10000.0):  # pragma: no mutate
    conv = GridConvention("simple-vit", _sin_cos_blocks("x", "y"), span="D/4-1")
    return conv, 0


def _timm(temperature=10000.0, reverse_coord=False, interleave_sin_cos=False):  # pragma: no mutate
    first, second = ("x", "y") if reverse_coord else ("y", "x")
    if interleave_sin_cos:
        columns = _sin_cos_blocks(first, second)
    else:
        columns = ((first, "sin"), (second, "sin"), (first, "cos"), (second, "cos"))
    return GridConvention("timm", columns, flatten=(first, second)), 0


def _detr(temperature=10000.0, normalize=False, scale=None, offset=0.0):  # pragma: no mutate
    if scale is not None and not normalize:
        raise ValueError(f"convention 'detr': scale={scale!r} needs normalize=True (DETR raises the same)")
    if offset and not normalize:
        raise ValueError(f"convention 'detr': offset={offset!r} needs normalize=True (it shifts the normalised positions)")
    conv = GridConvention("detr", (("y", "interleaved"), ("x", "interleaved")), positions="detr")
    return conv, 0


def _diffusers(base_size=16, interpolation_scale=1.0, cls_token=False, extra_tokens=0, pos_embed_max_size=None):  # pragma: no mutate
    checks.check_real(base_size, "base_size", 0)
    checks.check_real(interpolation_scale, "interpolation_scale", 0)
    if pos_embed_max_size is not None:
        checks.check_int_at_least(pos_embed_max_size, "pos_embed_max_size", 1)
    conv = GridConvention("diffusers", _sin_cos_blocks("x", "y"), positions="diffusers")
    # diffusers prepends the extra rows only when both are given.
    return conv, extra_tokens if cls_token and extra_tokens > 0 else 0  # pragma: no mutate (>= for >: 0 rows either way)


def _diffusers_3d(spatial_interpolation_scale=1.0, temporal_interpolation_scale=1.0):  # pragma: no mutate
    columns = (("t", "sin"), ("t", "cos"), *_sin_cos_blocks("x", "y"))
    conv = GridConvention("diffusers", columns, flatten=AXES_3D,
                          positions="diffusers-3d", widths=(("t", 0.25), ("y", 0.375), ("x", 0.375)))
    return conv, 0


def _positional_encodings():
    # PositionalEncoding2D: channels 2 * ceil(d / 4) per axis, the first axis of the input (its rows) first.
    return GridConvention("positional-encodings", (("y", "interleaved"), ("x", "interleaved")), round_up=4), 0


def _positional_encodings_3d():
    # PositionalEncoding3D: channels 2 * ceil(d / 6) per axis, equal thirds, outermost axis first.
    columns = (("t", "interleaved"), ("y", "interleaved"), ("x", "interleaved"))
    widths = (("t", 1 / 3), ("y", 1 / 3), ("x", 1 / 3))
    return GridConvention("positional-encodings", columns, flatten=AXES_3D, widths=widths, round_up=6), 0


class _Preset(NamedTuple):
    description: str
    build: Callable[..., tuple]  # the source's options -> (GridConvention, prefix rows)
    not_divisible: str  # what the source does when d is not a multiple of 4 (all but those that round d up need it)
    build_3d: Callable[..., tuple] | None = None  # the same for (T, H, W) grids, where the source builds them


_PRESETS: Registry[_Preset] = Registry("convention")
_PRESETS.register("mae", _Preset(
    "MAE's get_2d_sincos_pos_embed (and the position_embeddings of transformers' ViTMAE models): "
    "[sin x, cos x, sin y, cos y], x the width although MAE names that half emb_h",
    _mae, "MAE asserts embed_dim % 2 == 0 for each half (AssertionError)"))
_PRESETS.register("moco-v3", _Preset(
    "MoCo v3 (and the original RT-DETR code, transformers' RT-DETR before #41380, ultralytics): "
    "[sin w, cos w, sin h, cos h] of meshgrid(w, h) flattened width-outer: wrong positions on non-square grids; "
    "a zero class row",
    _moco, "MoCo v3 asserts it (AssertionError)"))
_PRESETS.register("rt-detr", _Preset(
    "transformers 5.x build_2d_sinusoidal_position_embedding (RT-DETR after #41380; ViTMAE builds with "
    "it and then swaps the halves to MAE's order): [sin h, cos h, sin w, cos w], row-major",
    _rt_detr, "transformers raises ValueError"))
_PRESETS.register("big_vision", _Preset(
    "big_vision posemb_sincos_2d: [sin x, cos x, sin y, cos y], frequencies over D/4 - 1 steps",
    _big_vision, "big_vision asserts it"))
_PRESETS.register("simple-vit", _Preset(
    "lucidrains' simple ViT posemb_sincos_2d: the same numbers as big_vision", _simple_vit, "simple ViT asserts it"))
_PRESETS.register("timm", _Preset(
    "timm build_sincos2d_pos_embed: [sin h, sin w, cos h, cos w] (interleave_sin_cos: [sin h, cos h, sin w, "
    "cos w]; reverse_coord: w first and flattened width-outer)",
    _timm, "timm asserts it"))
_PRESETS.register("detr", _Preset(
    "DETR PositionEmbeddingSine: y block then x block, sin/cos interleaved, positions 1..n "
    "(normalize: (k + offset) / (n + 1e-6) * scale, scale 2 pi; offset -0.5: Deformable DETR, mmdet's offset)",
    _detr,
    "DETR's torch.stack of num_pos_feats // 2 sines and cosines fails for odd num_pos_feats = d / 2 "
    "(and num_pos_feats = d / 2 needs an even d)"))
_PRESETS.register("diffusers", _Preset(
    "diffusers get_2d_sincos_pos_embed (MAE's layout, positions k / (n / base_size) / "
    "interpolation_scale; pos_embed_max_size: PatchEmbed's centred crop of the max x max table, SD3) and, "
    "for (T, H, W), get_3d_sincos_pos_embed: [t | MAE's 2-D table]",
    _diffusers, "diffusers raises ValueError('embed_dim must be divisible by 2') for each half", _diffusers_3d))
_PRESETS.register("positional-encodings", _Preset(
    "the positional-encodings package (PyPI, tatp22/multidim-positional-encoding) PositionalEncoding2D: "
    "[y | x], sin/cos interleaved, positions 0..n-1, temperature 10000; for (T, H, W), PositionalEncoding3D: "
    "[t | y | x] in equal thirds; each axis 2 * ceil(d / 4) (3-D: 2 * ceil(d / 6)) columns, the table cut to d",
    _positional_encodings, "it needs none: it rounds d up and cuts the table", _positional_encodings_3d))


# The conventions whose sources build (T, H, W) tables too.
THREE_D = tuple(name for name, preset in _PRESETS.items() if preset.build_3d is not None)


def list_grid_conventions() -> dict[str, str]:
    """``{name: description}`` of every grid convention ``grid_encoding`` knows."""
    return {name: preset.description for name, preset in _PRESETS.items()}


def _check_shape(shape):
    if isinstance(shape, numbers.Integral | str) or not hasattr(shape, "__len__"):
        raise TypeError(f"shape must be a tuple (height, width) or (time, height, width), got {shape!r}")
    if len(shape) not in (2, 3):
        raise ValueError(f"shape must be (height, width) or (time, height, width), got {tuple(shape)!r}")
    return tuple(checks.check_int_at_least(n, "each size in shape", 1) for n in shape)


def _options(convention, ndim, options):
    """The preset's ``(GridConvention, prefix rows, options with defaults)`` for a grid of ``ndim`` axes."""
    build = _PRESETS[convention].build
    if ndim == 3:
        build = _PRESETS[convention].build_3d
        if build is None:
            names = ", ".join(repr(name) for name in THREE_D)
            raise ValueError(
                f"convention {convention!r} is 2-D only (its source builds (height, width) grids); got a 3-D shape. "
                f"3-D (time, height, width): convention {names}"
            )
    allowed = inspect.signature(build).parameters
    unknown = sorted(set(options) - set(allowed))
    if unknown:
        names = ", ".join(allowed) or "none"
        raise TypeError(f"convention {convention!r} takes the options {names}; got {', '.join(unknown)}")
    merged = {name: p.default for name, p in allowed.items()} | options
    conv, prefix = build(**options)
    return conv, int(prefix), merged


def source_width(conv, d):
    """The width of the table the source builds for ``d`` columns: ``d`` rounded up to ``conv.round_up``."""
    return -(-d // conv.round_up) * conv.round_up if conv.round_up else d


def pair_counts(conv, d):
    """``{axis: F}``: the sine (and cosine) columns of each axis, half of its share of the source's width."""
    return {axis: round(source_width(conv, d) * fraction) // 2 for axis, fraction in conv.widths}


def frequency_span(conv, count):
    """The ``span`` of ``w_j = T ** (-j / span)`` for an axis of ``count`` frequencies."""
    return count - 1 if conv.span == "D/4-1" else count


def _frequencies(conv, d, temperature):
    """``{axis: (w_hi, w_lo)}``: ``F`` frequencies ``T ** (-j / span)`` per axis."""
    parts = {}
    for axis, count in pair_counts(conv, d).items():
        span = frequency_span(conv, count)
        if span <= 0:
            raise ValueError(
                f"convention {conv.name!r} needs d >= 8: its frequencies run over D/4 - 1 steps, "
                f"and at d={d} that is {span} (the source divides 0 by 0: NaN)"
            )
        parts[axis] = rotation.geometric_parts(count, float(temperature), float(span))
    return parts


def column_slices(conv, d):
    """``{axis: (sines, cosines)}``: the slices of the columns holding each axis' sines and cosines
    (a block each, or DETR's interleaved pairs), as ``conv.columns`` lays them out in the source's
    width (``source_width``; slices past ``d`` are the columns the source cuts off)."""
    counts = pair_counts(conv, d)
    found = {axis: [None, None] for axis in counts}
    start = 0
    for axis, kind in conv.columns:
        count = counts[axis]
        if kind == "interleaved":
            found[axis] = [slice(start, start + 2 * count, 2), slice(start + 1, start + 2 * count, 2)]
            start += 2 * count
        else:
            found[axis][kind == "cos"] = slice(start, start + count)
            start += count
    return {axis: tuple(pair) for axis, pair in found.items()}


def _axis_positions(conv, sizes, options):
    """``{axis: float64 positions}`` along each axis, as the source computes them (exactly)."""
    out = {}
    for axis, n in sizes.items():
        k = np.arange(n, dtype=np.float64)
        if conv.positions == "detr":
            k = k + 1  # the cumulative sum of an all-valid mask
            if options["normalize"]:
                scale = 2 * math.pi if options["scale"] is None else options["scale"]
                k = (k + options["offset"]) / (n + 1e-6) * scale
        elif conv.positions == "diffusers":
            largest = options["pos_embed_max_size"]
            if largest is not None:
                # PatchEmbed.cropped_pos_embed: the centre of the largest x largest table, which spans base_size
                if largest < n:
                    raise ValueError(f"convention 'diffusers': pos_embed_max_size must be at least each size of shape, "
                                     f"got {largest} for a size {n} (diffusers' PatchEmbed raises ValueError)")
                k = k + (largest - n) // 2
                n = largest
            k = k / (n / options["base_size"]) / options["interpolation_scale"]
        elif conv.positions == "diffusers-3d":
            name = "temporal" if axis == "t" else "spatial"
            k = k / options[f"{name}_interpolation_scale"]
        out[axis] = k
    return out


def _check_positions(positions, sizes):
    if not isinstance(positions, tuple | list) or len(positions) != len(sizes):
        raise ValueError(f"positions must be a list of one array per axis {tuple(sizes)}, got {checks.shown(positions)}")
    out = {}
    for (axis, n), p in zip(sizes.items(), positions):
        p = tables.as_positions(p, f"positions for axis {axis!r}")
        if p.shape != (n,):
            raise ValueError(f"positions for axis {axis!r} must have shape ({n},), got {p.shape}")
        out[axis] = p
    return out


def grid_encoding(
    shape: Sequence[int], d: int, *, convention: str = "mae", dtype: DTypeLike = np.float32, positions: Any = None,
    **options: Any,
) -> np.ndarray:
    """The sin-cos table of a grid, exact to ``convention``'s source: ``(prefix + prod(shape), d)``.

    ``shape``: ``(H, W)``, or ``(T, H, W)`` for video (conventions "diffusers" and "positional-encodings").
    Token ``k`` is patch ``(k // W, k % W)`` (row-major, as images are flattened), except
    where the source flattens otherwise (moco-v3; timm's ``reverse_coord``). Row ``k`` holds
    ``sin(p * w_j)`` and ``cos(p * w_j)`` of the patch's positions ``p`` along each axis,
    ``w_j = temperature ** (-j / span)`` with ``j < F`` (``F = d / 4`` per axis in 2-D;
    ``span = F``, or ``F - 1`` for big_vision), in the blocks ``list_grid_conventions()``
    describes. Options under the source's names (``cls_token``, ``temperature``,
    ``normalize``, ``scale``, ``offset``, ``base_size``, ``interpolation_scale``, ``extra_tokens``,
    ``pos_embed_max_size``, ``reverse_coord``, ``interleave_sin_cos``, ...); the prefix rows a source writes for
    class tokens are zeros. ``positions``: one float array per axis (``(H,)``, ``(W,)``)
    to encode instead of the source's own (e.g. fractional ones). Accuracy: see the accuracy
    contract; fractional positions (e.g. DETR's normalised ones) carry their own float64
    rounding, ~1e-16 times the angle. DETR's own output ``(batch, d, H, W)`` is
    ``table.T.reshape(d, H, W)``.
    """
    convention = _PRESETS.check(convention)
    shape = _check_shape(shape)
    d = checks.check_width(checks.check_int_at_least(d, "d", 1), "d")
    checks.check_entries(" * ".join(f"shape[{n}]" for n in range(len(shape))) + " * d", (*shape, d))
    dtype = tables.check_dtype(dtype)
    conv, prefix, opts = _options(convention, len(shape), options)
    multiple = 1 if conv.round_up else 16 if len(shape) == 3 else 4
    if d % multiple:
        why = ("diffusers' get_3d_sincos_pos_embed splits d into D/4 (time) and 3D/4 (space), each half of "
               "which must be even (ValueError otherwise)") if multiple == 16 else _PRESETS[convention].not_divisible
        raise ValueError(f"d must be a multiple of {multiple} for convention {convention!r} ({why}); got d={d}")
    return _table(conv, opts, shape, d, dtype, prefix, positions)


def _table(conv, opts, shape, d, dtype, prefix=0, positions=None):
    """The table ``conv`` and its options ``opts`` describe, with ``prefix`` zero rows first."""
    sizes = dict(zip(AXES_3D if len(shape) == 3 else AXES_2D, shape))
    values = _axis_positions(conv, sizes, opts) if positions is None else _check_positions(positions, sizes)
    width = source_width(conv, d)
    parts = _frequencies(conv, width, opts.get("temperature", 10000.0))
    trig = {axis: rotation.sin_cos(values[axis], *parts[axis], dtype) for axis in sizes}
    out = np.zeros((prefix + math.prod(shape), width), dtype)
    _fill(out[prefix:].reshape(*(sizes[a] for a in conv.flatten), width), conv, trig)
    return out if width == d else np.ascontiguousarray(out[:, :d])


def _fill(body, conv, trig):
    """Write each axis' sines and cosines into ``body`` (the grid in flattening order, ``(..., d)``)."""
    for axis, slices in column_slices(conv, body.shape[-1]).items():
        where = [1] * (body.ndim - 1)
        where[conv.flatten.index(axis)] = len(trig[axis][0])
        for columns, values in zip(slices, trig[axis]):
            body[..., columns] = values.reshape(*where, values.shape[1])  # values: (positions, columns)


# How patch_positions places an axis of n patches: float64 positions of k = 0 .. n - 1.
_NORMALIZE: Registry[Callable[[int], np.ndarray]] = Registry("normalize")
# Evenly from -1 to 1, the ends on the first and last patch: timm's in_pixels, rotary-embedding-torch's
# freqs_for="pixel" and Perceiver's build_linear_positions (torch.linspace(-1, 1, n)).
_NORMALIZE.register("pixel", lambda n: np.linspace(-1.0, 1.0, n))
# The centres of the patches of [-1, 1], (k + 0.5) / n * 2 - 1: DINOv3's get_patches_center_coordinates,
# SAM's PositionEmbeddingRandom (cumsum - 0.5 over n, then 2 x - 1).
_NORMALIZE.register("center", lambda n: (np.arange(n) + 0.5) / n * 2.0 - 1.0)


def patch_positions(
    shape: Sequence[int], *, grid_offset: float = 0.0, normalize: str | None = None, ref_feat_shape: Sequence[int] | None = None,
    num_prefix_tokens: int = 0,
) -> np.ndarray:
    """float64 ``(len(shape), num_prefix_tokens + prod(shape))``: the coordinates of each token of a grid, axis first.

    Along an axis of ``n`` patches, patch ``k`` is at ``k + grid_offset`` (``normalize=None``;
    ``grid_offset=0.5``: its centre, 1: one-based, as Meta's Perception Encoder in timm), at
    ``-1 + 2k / (n - 1)`` (``"pixel"``: ``linspace(-1, 1, n)``) or at ``2 (k + 0.5) / n - 1``
    (``"center"``: DINOv3, SAM). ``ref_feat_shape`` then rescales axis ``a`` by
    ``ref_feat_shape[a] / shape[a]``, so a grid of another size spans the reference one's range
    (timm's ``build_fourier_pos_embed``, EVA-02). Token ``k`` of an ``H x W`` grid is patch
    ``(k // W, k % W)``, as ``grid_position_ids``; pass the result to ``axial_cos_sin``,
    ``pixel_cos_sin`` (rows in its axes' order) or, per axis, to ``grid_encoding(positions=...)``.
    ``num_prefix_tokens`` tokens (class, registers) come first at the origin, where RoPE does not
    turn them: as DINOv3 and EVA rotate the patches only.
    """
    if isinstance(shape, numbers.Integral | str) or not hasattr(shape, "__len__") or len(shape) < 1:
        raise TypeError(f"shape must be a tuple of sizes, one per axis (height, width), got {shape!r}")
    sizes = tuple(checks.check_int_at_least(n, "each size in shape", 1) for n in shape)
    prefix = checks.check_length(num_prefix_tokens, "num_prefix_tokens")
    checks.check_entries("len(shape) * (num_prefix_tokens + prod(shape))", (len(sizes), prefix + math.prod(sizes)))
    checks.check_real(grid_offset, "grid_offset")
    if normalize is None:
        axes = [np.arange(n) + float(grid_offset) for n in sizes]
    elif grid_offset:
        raise ValueError(f"grid_offset applies to integer positions (normalize=None), got grid_offset={grid_offset!r} "
                         f"with normalize={normalize!r}")
    else:
        axes = [_NORMALIZE.lookup(normalize)(n) for n in sizes]
    if ref_feat_shape is not None:
        reference = tuple(ref_feat_shape) if hasattr(ref_feat_shape, "__len__") else ()
        if len(reference) != len(sizes) or not all(checks._is_int(r) and r >= 1 for r in reference):
            raise ValueError(f"ref_feat_shape must hold {len(sizes)} positive ints, one per axis of shape, got {ref_feat_shape!r}")
        axes = [a / n * r for a, n, r in zip(axes, sizes, reference)]
    grids = np.meshgrid(*axes, indexing="ij")
    return np.stack([np.concatenate([np.zeros(prefix), g.ravel()]) for g in grids])
