"""RoPE-Mixed: 2-D RoPE whose frequencies are learned and mix the two axes.

Axial 2-D RoPE turns each pair by one coordinate, ``p_x w_j`` or ``p_y w_j``. RoPE-Mixed (Heo
et al., 2024, "Rotary Position Embedding for Vision Transformer"; timm's
``RotaryEmbeddingMixed``, naver-ai/rope-vit) turns pair ``j`` of head ``h`` in block ``b`` by
``p_x fx[b, h, j] + p_y fy[b, h, j]``: a frequency vector ``(fx, fy)`` pointing anywhere in the
plane, so one pair can follow a diagonal. The vectors are a parameter, ``freqs`` of shape
``(2, depth, heads, head_dim // 2)`` (``freqs[0]`` the x parts, ``freqs[1]`` the y parts),
trained with the model. timm starts them at magnitudes ``m_i = base ** (-4i / head_dim)``
(``i < head_dim // 4``, ``base`` 10), the first half of the pairs turned by an angle ``theta``
drawn per block and head, the second half by ``theta + pi / 2``.
"""

import numpy as np
import numpy.typing as npt

from ..engine import checks, kernels, rotation
from ..engine.backends import backend
from ..sinusoidal import tables
from . import rotary

__all__ = ["mixed_cos_sin", "mixed_frequencies"]

NUMPY = backend("numpy")


def check_mixed_head_dim(head_dim):
    head_dim = rotary.check_head_dim(head_dim)
    if head_dim % 4:
        raise ValueError(f"head_dim must be a multiple of 4 for RoPE-Mixed (two rotations of head_dim // 4 pairs), got {head_dim}")
    return head_dim


def mixed_frequencies(head_dim: int, rotations: npt.ArrayLike, *, base: float = 10.0,
                      dtype: npt.DTypeLike = np.float32) -> np.ndarray:
    """RoPE-Mixed's initial ``freqs``, ``(2, *rotations.shape, head_dim // 2)``, as timm's ``init_random_2d_freqs``.

    ``rotations``: the angle ``theta`` (radians) of each block and head, e.g. ``(depth, heads)``
    (timm: ``torch.rand(depth, heads, 1) * 2 * pi``). With ``m_i = base ** (-4i / head_dim)``,
    ``freqs[0] = [m cos(theta), m cos(theta + pi/2)]`` and ``freqs[1] = [m sin(theta), m sin(theta
    + pi/2)]``, computed in float64 and rounded once to ``dtype`` (timm computes in float32 and
    rounds ``theta + pi/2`` first: within ``|theta| * 2**-24 * m`` of these).
    """
    head_dim = check_mixed_head_dim(head_dim)
    base = checks.check_base(base)
    dtype = tables.check_dtype(dtype)
    theta = tables.as_positions(rotations, "rotations")[..., None]
    quarter = head_dim // 4
    m = rotation.geometric_parts(quarter, base, head_dim / 4)[0]
    c, s = np.cos(theta), np.sin(theta)
    return np.stack([np.concatenate([m * c, -m * s], -1), np.concatenate([m * s, m * c], -1)]).astype(dtype)


def cos_sin(xp, positions, freqs, layout, dtype, wide):
    """``(cos, sin)`` of RoPE-Mixed in ``xp``'s operations (autograd follows them to ``freqs``).

    ``positions``: ``(2, ...)`` (x, then y); ``freqs``: ``(2, *lead, h)``. The angle
    ``p_x fx + p_y fy`` is computed in ``wide`` (float64 where the backend has it), its cos and
    sin rounded once to ``dtype``; the result ``(*lead, *positions.shape[1:], 2h)`` in ``layout``.
    """
    extra = len(positions.shape) - 1
    shape = tuple(freqs.shape)
    f = xp.reshape(xp.cast(freqs, wide), (*shape[:-1], *(1,) * extra, shape[-1]))
    p = xp.cast(positions, wide)[..., None]
    angle = p[0] * f[0] + p[1] * f[1]
    c, s = (kernels.spread(xp, v, layout) for v in (xp.cos(angle), xp.sin(angle)))
    return xp.cast(c, dtype), xp.cast(s, dtype)


def check_mixed(positions_shape, freqs_shape):
    """``positions`` ``(2, ...)`` and ``freqs`` ``(2, ..., h)`` (shapes; None: unknown in a graph)."""
    if len(freqs_shape) < 2 or freqs_shape[0] != 2:
        raise ValueError(f"frequencies must have shape (2, ..., head_dim // 2) (x parts, then y parts), got {tuple(freqs_shape)}")
    if positions_shape is not None and (len(positions_shape) < 1 or positions_shape[0] not in (2, None)):
        raise ValueError(f"positions must have their 2 coordinates first, shape (2, ...) (x, then y), got shape "
                         f"{tuple(positions_shape)}")


def mixed_cos_sin(positions: npt.ArrayLike, frequencies: npt.ArrayLike, *, layout: str = "interleaved",
                  dtype: npt.DTypeLike = np.float32) -> tuple[np.ndarray, np.ndarray]:
    """``(cos, sin)`` of RoPE-Mixed, each ``(*frequencies.shape[1:-1], *positions.shape[1:], head_dim)``.

    ``positions``: ``(2, ...)``, the x coordinates, then the y ones (timm's ``t_x``, ``t_y``:
    with its default ``grid_indexing="xy"`` the column and the row, ``patch_positions((H, W))[::-1]``;
    with ``"ij"`` the row and the column, ``patch_positions((H, W))``). ``frequencies``: the
    parameter, ``(2, ..., head_dim // 2)`` (e.g. ``(2, depth, heads, h)``). Pair ``j`` turns by
    ``p_x * frequencies[0, ..., j] + p_y * frequencies[1, ..., j]``, taken in float64 and
    rounded once (timm computes in float32: within ``|angle| * 2**-23`` of these).
    ``layout="interleaved"``: as timm's ``get_mixed_freqs`` (which returns ``cat([sin, cos])``).
    """
    layout = rotary.check_rotary_layout(layout)
    dtype = tables.check_dtype(dtype)
    freqs = checks.as_array(frequencies, "frequencies", "an array of numbers")
    checks.check_kind(freqs, frequencies, "frequencies")
    if not np.isfinite(freqs).all():
        raise ValueError("frequencies must be finite, got NaN or infinity")

    def fits(p):
        check_mixed(p.shape, freqs.shape)
        checks.check_entries("prod(frequencies.shape[1:]) * positions.size", (freqs[0].size, p.size))

    positions = tables.as_positions(positions, fits=fits)
    return cos_sin(NUMPY, positions, freqs, layout, dtype, np.float64)
