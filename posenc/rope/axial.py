"""RoPE on image grids and in video: each rotary pair turns by one coordinate of a position.

A 1-D rotary pair ``j`` turns by ``p * w_j``. On a grid a position has several coordinates
(height and width; time, height and width), and each pair reads one of them, its *axis*
``a_j``: the angle is ``p[a_j] * w_j``. Which pair reads which axis, and with which
frequency, is all that tells the models apart (transformers 5.23, the pinned version):

- ``axial_frequencies(head_dim, convention="pixtral")`` (``PixtralVisionRotaryEmbedding``): the
  ``head_dim // 2`` frequencies ``w_j = base ** (-2j / head_dim)`` of 1-D RoPE, the even-``j``
  ones for the height (first quarter of the head), the odd-``j`` ones for the width.
- ``axial_frequencies(head_dim, convention="qwen2_vl")`` (``Qwen2VLVisionRotaryEmbedding``, the
  vision tower of Qwen2-VL, Qwen2.5-VL and Qwen3-VL): ``w_i = base ** (-4i / head_dim)``,
  ``i < head_dim // 4``, once for the height and again for the width.
- ``mrope_axes(mrope_section)`` (M-RoPE, ``Qwen2VLRotaryEmbedding``): the 1-D frequencies
  split in consecutive sections read time, height and width; ``interleaved=True``
  (``Qwen3VLTextRotaryEmbedding``): pairs ``1, 4, 7, ...`` read the height, ``2, 5, 8, ...``
  the width (the first ``3 * mrope_section[1]`` and ``3 * mrope_section[2]`` pairs), the rest time.

- ``per_axis_frequencies(axes_dim)`` (diffusers' ``get_1d_rotary_pos_embed`` per axis, as
  Flux, HunyuanVideo, Wan, CogVideoX and Lumina use it): axis ``a`` owns ``axes_dim[a]``
  channels of its own, turning at the 1-D RoPE frequencies of that width,
  ``w_i = base ** (-2i / axes_dim[a])``; the axes' blocks follow one another.

Cos and sin then go out in the "half" layout (``concat(f, f)``), or with
``layout="interleaved"`` each value twice in a row (timm's EVA-02, GLM-4V's text M-RoPE, and
diffusers' per-axis RoPE, where it is the default). Positions come with the axis first, as transformers' M-RoPE
``position_ids`` ``(3, batch, seq)``: ``(axes, ...)``; diffusers' ``ids`` come with the axis
last, ``(seq, axes)``, and ``per_axis_cos_sin`` takes them so.
Since each pair sees one coordinate, the score of two tokens depends on the offset of their
coordinates only (a 2-D or 3-D relative position). Accuracy as ``posenc.rotary_cos_sin``.
"""

import dataclasses
from collections.abc import Callable, Iterable, Sequence
from typing import Any


import numpy as np
import numpy.typing as npt

from ..engine import checks, kernels, rotation
from ..engine.backends import backend
from ..engine.frequencies import Frequencies
from ..engine.registry import Registry
from ..sinusoidal import tables
from . import rotary

__all__ = [
    "AXIAL_CONVENTIONS",
    "axial_cos_sin",
    "axial_frequencies",
    "flux_position_ids",
    "grid_position_ids",
    "mrope_axes",
    "mrope_cos_sin",
    "mrope_position_ids",
    "per_axis_cis",
    "per_axis_cos_sin",
    "per_axis_frequencies",
]

NUMPY = backend("numpy")

# The 2-D conventions: ``(head_dim, base) -> (w_hi, w_lo)``, the frequencies in pair order.
_AXIAL: Registry[Callable[[int, float], tuple[np.ndarray, np.ndarray]]] = Registry("convention")


@_AXIAL.register("pixtral")
def _pixtral(head_dim, base):
    hi, lo = rotation.geometric_parts(head_dim // 2, base, head_dim / 2)
    return np.concatenate([hi[0::2], hi[1::2]]), np.concatenate([lo[0::2], lo[1::2]])


@_AXIAL.register("qwen2_vl")
def _qwen2_vl(head_dim, base):
    quarter = head_dim // 4
    hi, lo = rotation.geometric_parts(quarter, base, quarter)
    return np.tile(hi, 2), np.tile(lo, 2)


AXIAL_CONVENTIONS = _AXIAL.names()


def axial_frequencies(head_dim: int, base: float = 10000.0, *, convention: str = "qwen2_vl") -> Frequencies:
    """The ``head_dim // 2`` frequencies of 2-D RoPE, with ``axes``: the axis each pair reads
    (0 height, 1 width; the first ``head_dim // 4`` pairs the height).

    ``"pixtral"``: ``w = base ** (-2j / head_dim)``, even ``j`` for the height, odd for the
    width. ``"qwen2_vl"``: ``w_i = base ** (-4i / head_dim)`` for each axis. ``head_dim`` a
    multiple of 4.
    """
    head_dim = rotary.check_head_dim(head_dim)
    base = checks.check_base(base)
    rule = _AXIAL.lookup(convention)
    if head_dim % 4:
        raise ValueError(f"head_dim must be a multiple of 4 for 2-D RoPE (a quarter per axis and cos/sin half), got {head_dim}")
    hi, lo = rule(head_dim, base)
    return Frequencies(hi, lo, axes=np.repeat([0, 1], head_dim // 4))


def mrope_axes(mrope_section: Sequence[int], *, interleaved: bool = False, pairs: int | None = None) -> np.ndarray:
    """The axis (0 time, 1 height, 2 width) of each of the ``pairs`` pairs of M-RoPE.

    Sections (Qwen2-VL): ``mrope_section[i]`` consecutive pairs read axis ``i % 3``, so
    ``pairs``, if given, must be ``sum(mrope_section)``. ``interleaved`` (Qwen3-VL, timm's
    GenLIP): pair ``j`` reads axis 1 if ``j % 3 == 1`` and ``j // 3 < mrope_section[1]``, axis 2
    if ``j % 3 == 2`` and ``j // 3 < mrope_section[2]``, else axis 0 (time): the sections need not
    add up to ``pairs`` (default ``sum(mrope_section)``), the remainder reads time (GenLIP: head
    72, sections (8, 12, 12)) and an extent past the last pair is cut, as both sources do.
    """
    interleaved = checks.check_bool(interleaved, "interleaved")
    sections = list(mrope_section) if isinstance(mrope_section, (list, tuple, np.ndarray)) else None
    if not sections or not all(checks._is_int(s) and s >= 0 for s in sections) or (interleaved and len(sections) != 3):
        raise ValueError(
            "mrope_section must be a list of non-negative ints (pairs per axis: time, height, width"
            f"{'; exactly three when interleaved' if interleaved else ''}), got {mrope_section!r}"
        )
    count = sum(sections) if pairs is None else checks.check_length(pairs, "pairs")
    if not interleaved:
        if count != sum(sections):
            raise ValueError(
                f"mrope_section must add up to the {count} rotary pairs (rotary_dim // 2), got {mrope_section!r} "
                f"(sum {sum(sections)}); interleaved M-RoPE (Qwen3-VL, GenLIP) gives the remainder to time"
            )
        return np.repeat(np.arange(len(sections)) % 3, sections)
    j = np.arange(count)
    axes = np.zeros(count, dtype=np.int64)
    for axis in (1, 2):
        axes[(j % 3 == axis) & (j // 3 < sections[axis])] = axis  # the first sections[axis] rounds of (t, h, w)
    return axes


def check_axis_positions(shape, frequencies, size=None, name="positions"):
    """The positions' leading axis must hold a row for each axis the pairs of ``frequencies`` read
    (a length unknown until run, in a TF graph, is left to the indexing); given their ``size``,
    the output, a channel per frequency for each of ``size / shape[0]`` tokens, must fit."""
    needed = frequencies.groups[0][-1][0] + 1
    if len(shape) < 1 or (shape[0] is not None and shape[0] < needed):
        raise ValueError(
            f"positions (position_ids in M-RoPE) must have their {needed} coordinates first, shape ({needed}, ...) "
            f"(M-RoPE's position_ids: (3, batch, seq)), got shape {tuple(shape)}"
        )
    if size is not None:
        checks.check_entries(f"{name}.size / {name}.shape[0] * head_dim", (size // shape[0], 2 * len(frequencies.hi)))


def _numpy_cos_sin(positions, frequencies, dtype, layout="half", form="channels", name="positions"):
    dtype = tables.check_dtype(dtype)
    positions = tables.as_positions(positions, name, fits=lambda p: check_axis_positions(p.shape, frequencies, p.size, name))
    return kernels.rope_cos_sin(NUMPY, rotation.sin_cos, positions, frequencies, layout, dtype, form)


def axial_cos_sin(
    positions: npt.ArrayLike, head_dim: int, *, base: float = 10000.0, convention: str = "qwen2_vl", layout: str = "half",
    dtype: npt.DTypeLike = np.float32,
) -> tuple[np.ndarray, np.ndarray]:
    """``(cos, sin)``, each ``(*positions.shape[1:], head_dim)``, of 2-D RoPE at ``positions``.

    ``positions``: ``(2, ...)``, row 0 the height (row index of a patch), row 1 the width
    (column index), e.g. ``grid_position_ids`` or ``patch_positions``. Pair ``j`` turns by
    ``positions[axes[j]] * w_j`` (``axial_frequencies``). ``layout="half"``: as transformers'
    Pixtral and Qwen2-VL vision rotary modules return them for ``rotate_half``;
    ``"interleaved"``: each value twice in a row, as timm's ``RotaryEmbeddingCat`` (EVA-02,
    ``apply_rot_embed_cat``) writes the ``qwen2_vl`` frequencies.
    """
    layout = rotary.check_rotary_layout(layout)
    return _numpy_cos_sin(positions, axial_frequencies(head_dim, base, convention=convention), dtype, layout)


def mrope_frequencies(head_dim, mrope_section, interleaved, base, rope_type, params) -> Frequencies:
    """M-RoPE's frequencies: ``rotary.rope_frequencies`` with the ``axes`` of ``mrope_axes`` for its pairs."""
    frequencies = rotary.rope_frequencies(head_dim, base, rope_type, **params)
    axes = mrope_axes(mrope_section, interleaved=interleaved, pairs=len(frequencies))
    return dataclasses.replace(frequencies, axes=axes)


def mrope_cos_sin(position_ids: npt.ArrayLike, head_dim: int, *, mrope_section: Sequence[int], interleaved: bool = False,
                  base: float = 10000.0, rope_type: str = "default", layout: str = "half",
                  dtype: npt.DTypeLike = np.float32, **params: Any) -> tuple[np.ndarray, np.ndarray]:
    """``(cos, sin)``, each ``(*position_ids.shape[1:], rotary_dim)``, of M-RoPE.

    ``position_ids``: ``(3, ...)`` time, height and width rows (``mrope_position_ids``;
    text tokens have three equal rows, and there M-RoPE is 1-D RoPE). Frequencies and
    attention factor as ``posenc.rotary_frequencies`` (``rope_type``, ``params``); pair
    ``j`` turns by ``position_ids[axes[j]] * w_j`` with ``axes = mrope_axes(mrope_section,
    interleaved=..., pairs=rotary_dim // 2)`` (interleaved: sections adding up to fewer pairs leave
    the rest to time, as timm's GenLIP). ``layout="half"``: as ``Qwen2VLRotaryEmbedding`` /
    ``Qwen3VLTextRotaryEmbedding`` / timm's ``RotaryEmbeddingMRope``; ``"interleaved"``: as
    ``Glm4vTextRotaryEmbedding`` (GLM-4V's sections, each value twice by ``repeat_interleave``).
    """
    layout = rotary.check_rotary_layout(layout)
    frequencies = mrope_frequencies(head_dim, mrope_section, interleaved, base, rope_type, params)
    return _numpy_cos_sin(position_ids, frequencies, dtype, layout, name="position_ids")


def _check_merge(name, size, merge):
    if not checks._is_int(size) or size < 1 or size % merge:
        raise ValueError(f"{name} must be a positive int divisible by spatial_merge_size={merge}, got {size!r}")


def grid_position_ids(height: int, width: int, *, spatial_merge_size: int = 1, frames: int = 1) -> np.ndarray:
    """int64 ``(2, frames * height * width)``: the (row, column) of each patch, in token order.

    ``spatial_merge_size`` 1 (Pixtral): row by row. ``m`` > 1 (the Qwen2-VL vision tower, whose
    merger later joins each ``m x m`` block into one token): block by block, row by row within
    a block, so a block's patches are neighbours in the sequence. The grid repeats for each of
    ``frames`` (a video's temporal patches).
    """
    merge = checks.check_int_at_least(spatial_merge_size, "spatial_merge_size", 1)
    _check_merge("height", height, merge)
    _check_merge("width", width, merge)
    if not checks._is_int(frames) or frames < 1:
        raise ValueError(f"frames must be an int >= 1, got {frames!r}")
    checks.check_entries("2 * frames * height * width", (2, frames, height, width))
    rows, columns = np.meshgrid(np.arange(height), np.arange(width), indexing="ij")
    blocks = (height // merge, merge, width // merge, merge)
    ids = [g.reshape(blocks).transpose(0, 2, 1, 3).ravel() for g in (rows, columns)]
    return np.tile(np.stack(ids), (1, frames))


RESUME_RULES = ("longer_side", "after_largest")


def mrope_position_ids(segments: Iterable[int | tuple[int, int, int]], *, spatial_merge_size: int = 2,
                       time_interval: float = 1.0, text_resumes: str = "longer_side") -> np.ndarray:
    """int64 ``(3, length)``: M-RoPE's (time, height, width) position of each token, as Qwen2-VL.

    ``segments``: in sequence order, an int ``n`` for ``n`` text tokens, or ``(t, h, w)`` for
    an image (``t = 1``) or video of ``t`` temporal patches of ``h x w`` patches, which the
    model merges into ``t * (h / m) * (w / m)`` tokens (``m = spatial_merge_size``). Text
    token ``k`` after position ``s`` gets ``s + k`` on all three rows. A vision block starting
    at ``s`` gets ``(s + floor(frame * time_interval), s + row, s + column)`` over its merged
    grid (frame outermost, then rows). ``time_interval`` is 1 in Qwen2-VL and Qwen3-VL;
    Qwen2.5-VL spaces the frames by ``tokens_per_second * second_per_grid_t``.

    Where the text after a vision block starts, ``text_resumes``:

    - ``"longer_side"`` (transformers 5.x ``get_rope_index``, the pinned 5.23): at ``s + max(h, w) / m``,
      whatever the frames; the text after a video of more frames than ``max(h, w) / m``
      (or of spaced frames) shares time positions with it.
    - ``"after_largest"`` (transformers 4.x, the code the Qwen team released with Qwen2-VL and
      Qwen2.5-VL): one past the block's largest id on any row, so after the last frame too.

    The two agree for images and for Qwen3-VL's videos, whose frames come one by one
    (``(1, h, w)`` segments between timestamp text).
    """
    merge = checks.check_int_at_least(spatial_merge_size, "spatial_merge_size", 1)
    checks.check_choice(text_resumes, RESUME_RULES, "text_resumes")
    if not checks.is_real(time_interval) or not checks.is_finite(time_interval) or time_interval < 0:
        raise ValueError(f"time_interval must be a finite number >= 0, got {time_interval!r}")
    interval = float(time_interval)
    if isinstance(segments, str) or not isinstance(segments, Iterable):
        raise TypeError(f"segments must be a sequence of ints and (t, h, w) tuples, got {checks.shown(segments)}")
    start, rows = 0, []
    for segment in segments:
        if checks._is_int(segment) and segment >= 0:
            rows.append(np.broadcast_to(start + np.arange(segment), (3, segment)))
            start += segment
            continue
        if not (isinstance(segment, (tuple, list)) and len(segment) == 3 and all(checks._is_int(s) and s >= 1 for s in segment)):
            raise ValueError(
                f"segments must hold ints (text lengths) or (t, h, w) tuples of positive ints (vision grids), got {segment!r}"
            )
        t, h, w = segment
        _check_merge("h", h, merge)
        _check_merge("w", w, merge)
        frames = np.floor(np.arange(t) * interval).astype(np.int64)
        grid = np.meshgrid(frames, np.arange(h // merge), np.arange(w // merge), indexing="ij")
        block = start + np.stack([g.ravel() for g in grid])
        rows.append(block)
        start = int(block.max()) + 1 if text_resumes == "after_largest" else start + max(h, w) // merge
    if not rows:
        return np.zeros((3, 0), dtype=np.int64)
    return np.concatenate(rows, axis=1).astype(np.int64)


def check_axes_dim(axes_dim):
    """``axes_dim`` as a tuple of even ints >= 2, one per axis (an axis' channels rotate in pairs)."""
    dims = tuple(axes_dim) if isinstance(axes_dim, (list, tuple, np.ndarray)) else ()
    if not dims or not all(checks._is_int(d) and d >= 2 and d % 2 == 0 for d in dims):
        raise ValueError(
            f"axes_dim must be a list of even ints >= 2 (the channels of each axis, e.g. Flux's (16, 56, 56)), got {axes_dim!r}"
        )
    checks.check_width(sum(dims), "sum(axes_dim)")
    return tuple(int(d) for d in dims)


def per_axis_frequencies(axes_dim: Sequence[int], base: float = 10000.0) -> Frequencies:
    """The ``sum(axes_dim) // 2`` frequencies of RoPE with a width per axis, with ``axes``.

    Axis ``a``'s block of ``axes_dim[a]`` channels turns at the 1-D frequencies of that width,
    ``w_i = base ** (-2i / axes_dim[a])``, ``i < axes_dim[a] / 2``; the blocks follow in axis
    order (diffusers' ``get_1d_rotary_pos_embed`` per axis, concatenated: Flux's ``FluxPosEmbed``
    with ``axes_dim`` (16, 56, 56), HunyuanVideo, Wan, Lumina). ``axes``: the axis of each pair.
    """
    dims = check_axes_dim(axes_dim)
    base = checks.check_base(base)
    parts = [rotation.geometric_parts(d // 2, base, d / 2) for d in dims]
    axes = np.repeat(np.arange(len(dims)), [d // 2 for d in dims])
    hi, lo = (np.concatenate(p) for p in zip(*parts))
    return Frequencies(hi, lo, axes=axes)


def check_ids(shape, size, dims):
    """``ids`` of ``shape`` (None: unknown rank; a dimension None: unknown until run) and ``size``
    (None: unknown) hold one coordinate per axis of ``dims`` last, and the output fits."""
    if shape is not None and (len(shape) < 1 or shape[-1] not in (len(dims), None)):
        raise ValueError(
            f"ids must have one coordinate per axis of axes_dim last, shape (..., {len(dims)}) (Flux's (seq, 3)), "
            f"got shape {tuple(shape)}"
        )
    if size is not None:
        checks.check_entries("ids.size / len(axes_dim) * sum(axes_dim)", (size // len(dims), sum(dims)))


def _per_axis_rows(ids, dims):
    """``ids`` ``(..., len(dims))`` checked, as float64 rows ``(len(dims), ...)``."""
    ids = tables.as_positions(ids, "ids", fits=lambda p: check_ids(p.shape, p.size, dims))
    return np.moveaxis(ids, -1, 0)


def per_axis_cos_sin(
    ids: npt.ArrayLike, axes_dim: Sequence[int], *, base: float = 10000.0, layout: str = "interleaved",
    dtype: npt.DTypeLike = np.float32,
) -> tuple[np.ndarray, np.ndarray]:
    """``(cos, sin)``, each ``(*ids.shape[:-1], sum(axes_dim))``, of RoPE with a width per axis.

    ``ids``: ``(..., len(axes_dim))``, the coordinates of each token, axis last (Flux's
    ``txt_ids`` and ``img_ids``, ``(seq, 3)``; ``flux_position_ids``). Pair ``j`` turns by
    ``ids[..., axes[j]] * w_j`` (``per_axis_frequencies``). ``layout="interleaved"``: each value
    twice in a row, as ``get_1d_rotary_pos_embed(use_real=True, repeat_interleave_real=True)``
    writes it for Flux, HunyuanVideo, Wan and CogVideoX; ``"half"``: ``concat(f, f)`` over the
    whole head, for ``rotate_half``. Accuracy: the contract, as ``posenc.rotary_cos_sin``.
    """
    dims = check_axes_dim(axes_dim)
    layout = rotary.check_rotary_layout(layout)
    rows = _per_axis_rows(ids, dims)
    return _numpy_cos_sin(rows, per_axis_frequencies(dims, base), dtype, layout)


_COMPLEX = {np.dtype(np.complex64): np.float32, np.dtype(np.complex128): np.float64}


def per_axis_cis(
    ids: npt.ArrayLike, axes_dim: Sequence[int], *, base: float = 10000.0, dtype: npt.DTypeLike = np.complex64
) -> np.ndarray:
    """``exp(i * ids[..., axes[j]] * w_j)``, ``(*ids.shape[:-1], sum(axes_dim) // 2)``: the complex form.

    What ``get_1d_rotary_pos_embed(use_real=False)`` returns per axis, concatenated (Lumina's
    ``freqs_cis``): ``per_axis_cos_sin``'s cos and sin of each pair as one complex number.
    ``dtype``: complex64 (float32 parts) or complex128 (float64), each part as accurate as theirs.
    """
    dims = check_axes_dim(axes_dim)
    try:
        parts = _COMPLEX.get(np.dtype(dtype))
    except TypeError:
        parts = None
    if parts is None:
        raise TypeError(f"dtype must be one of numpy.complex64, numpy.complex128; got {dtype!r}")
    rows = _per_axis_rows(ids, dims)
    c, s = _numpy_cos_sin(rows, per_axis_frequencies(dims, base), parts, form="pairs")
    out = np.empty(c.shape, np.dtype(dtype))
    out.real, out.imag = c, s
    return out


def flux_position_ids(text_length: int, height: int, width: int) -> np.ndarray:
    """int64 ``(text_length + height * width, 3)``: Flux's ``ids``, text tokens first.

    Text tokens ``(0, 0, 0)`` (the pipeline's ``text_ids``); image token ``k`` of a ``height x
    width`` grid of packed latents (an image of ``16 * height x 16 * width`` pixels) ``(0, k //
    width, k % width)`` (``_prepare_latent_image_ids``), as ``FluxTransformer2DModel`` joins them.
    """
    text_length = checks.check_length(text_length, "text_length")
    height = checks.check_int_at_least(height, "height", 1)
    width = checks.check_int_at_least(width, "width", 1)
    checks.check_entries("(text_length + height * width) * 3", (text_length + height * width, 3))
    ids = np.zeros((text_length + height * width, 3), np.int64)
    rows, columns = np.meshgrid(np.arange(height), np.arange(width), indexing="ij")
    ids[text_length:, 1], ids[text_length:, 2] = rows.ravel(), columns.ravel()
    return ids
