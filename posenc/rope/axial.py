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

Cos and sin then go out in the "half" layout (``concat(f, f)``). Positions come with the
axis first, as transformers' M-RoPE ``position_ids`` ``(3, batch, seq)``: ``(axes, ...)``.
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
    "grid_position_ids",
    "mrope_axes",
    "mrope_cos_sin",
    "mrope_position_ids",
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


def mrope_axes(mrope_section: Sequence[int], *, interleaved: bool = False) -> np.ndarray:
    """The axis (0 time, 1 height, 2 width) of each of the ``sum(mrope_section)`` pairs of M-RoPE.

    Sections (Qwen2-VL): ``mrope_section[i]`` consecutive pairs read axis ``i % 3``.
    ``interleaved`` (Qwen3-VL): pair ``j`` reads axis 1 if ``j % 3 == 1`` and ``j < 3 *
    mrope_section[1]``, axis 2 if ``j % 3 == 2`` and ``j < 3 * mrope_section[2]``, else axis 0.
    """
    sections = list(mrope_section) if isinstance(mrope_section, (list, tuple, np.ndarray)) else None
    if not sections or not all(checks._is_int(s) and s >= 0 for s in sections) or (interleaved and len(sections) != 3):
        raise ValueError(
            "mrope_section must be a list of non-negative ints (pairs per axis: time, height, width"
            f"{'; exactly three when interleaved' if interleaved else ''}), got {mrope_section!r}"
        )
    if not interleaved:
        return np.repeat(np.arange(len(sections)) % 3, sections)
    j = np.arange(sum(sections))
    axes = np.zeros(len(j), dtype=np.int64)
    for axis in (1, 2):
        axes[(j % 3 == axis) & (j < 3 * sections[axis])] = axis
    return axes


def check_axis_positions(shape, frequencies):
    """The positions' leading axis must hold a row for each axis the pairs of ``frequencies`` read
    (a length unknown until run, in a TF graph, is left to the indexing)."""
    needed = frequencies.groups[0][-1][0] + 1
    if len(shape) < 1 or (shape[0] is not None and shape[0] < needed):
        raise ValueError(
            f"positions (position_ids in M-RoPE) must have their {needed} coordinates first, shape ({needed}, ...) "
            f"(M-RoPE's position_ids: (3, batch, seq)), got shape {tuple(shape)}"
        )


def _numpy_cos_sin(positions, frequencies, dtype):
    dtype = tables.check_dtype(dtype)
    positions = tables.as_positions(positions)
    check_axis_positions(positions.shape, frequencies)
    return kernels.rope_cos_sin(NUMPY, rotation.sin_cos, positions, frequencies, "half", dtype)


def axial_cos_sin(
    positions: npt.ArrayLike, head_dim: int, *, base: float = 10000.0, convention: str = "qwen2_vl", dtype: npt.DTypeLike = np.float32
) -> tuple[np.ndarray, np.ndarray]:
    """``(cos, sin)``, each ``(*positions.shape[1:], head_dim)``, of 2-D RoPE at ``positions``.

    ``positions``: ``(2, ...)``, row 0 the height (row index of a patch), row 1 the width
    (column index), e.g. ``grid_position_ids``. Pair ``j`` turns by ``positions[axes[j]] *
    w_j`` (``axial_frequencies``); cos and sin in the half layout, as transformers' Pixtral and
    Qwen2-VL vision rotary modules return them for ``apply_rotary`` (``rotate_half``).
    """
    return _numpy_cos_sin(positions, axial_frequencies(head_dim, base, convention=convention), dtype)


def mrope_frequencies(head_dim, mrope_section, interleaved, base, rope_type, params) -> Frequencies:
    """M-RoPE's frequencies: ``rotary.rope_frequencies`` with the ``axes`` of ``mrope_axes``, checked to fit."""
    frequencies = rotary.rope_frequencies(head_dim, base, rope_type, **params)
    axes = mrope_axes(mrope_section, interleaved=interleaved)
    if len(axes) != len(frequencies):
        raise ValueError(
            f"mrope_section must add up to the {len(frequencies)} rotary pairs (rotary_dim // 2), got {mrope_section!r} "
            f"(sum {len(axes)})"
        )
    return dataclasses.replace(frequencies, axes=axes)


def mrope_cos_sin(position_ids: npt.ArrayLike, head_dim: int, *, mrope_section: Sequence[int], interleaved: bool = False,
                  base: float = 10000.0, rope_type: str = "default", dtype: npt.DTypeLike = np.float32,
                  **params: Any) -> tuple[np.ndarray, np.ndarray]:
    """``(cos, sin)``, each ``(*position_ids.shape[1:], rotary_dim)``, of M-RoPE.

    ``position_ids``: ``(3, ...)`` time, height and width rows (``mrope_position_ids``;
    text tokens have three equal rows, and there M-RoPE is 1-D RoPE). Frequencies and
    attention factor as ``posenc.rotary_frequencies`` (``rope_type``, ``params``); pair
    ``j`` turns by ``position_ids[axes[j]] * w_j`` with ``axes = mrope_axes(mrope_section,
    interleaved=...)``. Half layout, as ``Qwen2VLRotaryEmbedding`` / ``Qwen3VLTextRotaryEmbedding``.
    """
    return _numpy_cos_sin(position_ids, mrope_frequencies(head_dim, mrope_section, interleaved, base, rope_type, params), dtype)


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
    merge = checks.check_length(spatial_merge_size, "spatial_merge_size")
    if merge < 1:
        raise ValueError(f"spatial_merge_size must be an int >= 1, got {spatial_merge_size!r}")
    _check_merge("height", height, merge)
    _check_merge("width", width, merge)
    if not checks._is_int(frames) or frames < 1:
        raise ValueError(f"frames must be an int >= 1, got {frames!r}")
    rows, columns = np.meshgrid(np.arange(height), np.arange(width), indexing="ij")
    blocks = (height // merge, merge, width // merge, merge)
    ids = [g.reshape(blocks).transpose(0, 2, 1, 3).reshape(-1) for g in (rows, columns)]
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
    merge = checks.check_length(spatial_merge_size, "spatial_merge_size")
    if merge < 1:
        raise ValueError(f"spatial_merge_size must be an int >= 1, got {spatial_merge_size!r}")
    checks.check_choice(text_resumes, RESUME_RULES, "text_resumes")
    interval = float(time_interval) if isinstance(time_interval, (int, float, np.number)) and not isinstance(time_interval, bool) else None
    if interval is None or not np.isfinite(interval) or interval < 0:
        raise ValueError(f"time_interval must be a finite number >= 0, got {time_interval!r}")
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
        block = start + np.stack([g.reshape(-1) for g in grid])
        rows.append(block)
        start = int(block.max()) + 1 if text_resumes == "after_largest" else start + max(h, w) // merge
    if not rows:
        return np.zeros((3, 0), dtype=np.int64)
    return np.concatenate(rows, axis=1).astype(np.int64)
