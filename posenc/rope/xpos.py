"""xPos (Sun et al., 2022, "A Length-Extrapolatable Transformer"): RoPE with a decay.

xPos turns queries and keys as RoPE does and also scales them, per pair ``j`` of a head of
``head_dim = d`` channels, by ``zeta_j = (2j + 0.4 d) / (1.4 d)`` (between 0.29 and 1):
the query at position ``n`` by ``zeta_j ** (n / scale_base)``, the key at ``m`` by
``zeta_j ** (-m / scale_base)``. Pair ``j`` of the score ``q_n . k_m`` is then RoPE's times
``zeta_j ** ((n - m) / scale_base)``: a decay with the distance, fastest for the fast pairs
(small ``j``), like ALiBi's penalty but multiplying each pair's share of the score.

``center`` shifts the exponent to ``(p - center) / scale_base`` for queries and keys alike,
so it cancels in the scores; lucidrains' ``rotary-embedding-torch`` (``use_xpos=True``)
takes ``seq_len // 2`` to keep the scales of long sequences near 1. Its layout is
``"interleaved"``, as in torchscale's ``XPOS``.
"""

from typing import Any

import numpy as np
import numpy.typing as npt

from ..engine import checks
from ..engine.kernels import spread
from ..sinusoidal import tables
from .rotary import NUMPY, check_head_dim, check_rotary_layout, rotary_cos_sin

__all__ = ["check_xpos", "xpos_cos_sin", "xpos_decay"]


def xpos_decay(head_dim: int) -> np.ndarray:
    """``zeta``, float64 ``(head_dim // 2,)``: ``(2j + 0.4 head_dim) / (1.4 head_dim)`` for pair ``j``."""
    head_dim = check_head_dim(head_dim)
    return (np.arange(0, head_dim, 2) + 0.4 * head_dim) / (1.4 * head_dim)


def xpos_cos_sin(
    positions: npt.ArrayLike, head_dim: int, *, keys: bool = False, scale_base: float = 512.0, center: float = 0.0,
    base: float = 10000.0, layout: str = "interleaved", dtype: npt.DTypeLike = np.float32,
) -> tuple[np.ndarray, np.ndarray]:
    """``(cos, sin)``, each ``(*positions.shape, head_dim)``, for ``apply_rotary(x, cos, sin, layout=layout)``.

    RoPE's ``rotary_cos_sin(positions, head_dim, base=base, layout=layout)`` times
    ``zeta_j ** (s (p - center) / scale_base)`` on the channels of pair ``j``, with ``s = 1``
    for queries and ``s = -1`` for ``keys=True``; ``zeta`` as ``xpos_decay``. Computed in
    float64 and rounded once to ``dtype`` (float16, float32 or float64).
    """
    keys, scale_base, center = check_xpos(keys, scale_base, center)
    layout = check_rotary_layout(layout)
    dtype = tables.check_dtype(dtype)
    # rotary_cos_sin first: it refuses an absurd size before positions are copied
    cos, sin = rotary_cos_sin(positions, head_dim, base=base, layout=layout, dtype=np.float64)
    positions = tables.as_positions(positions)
    power = (positions - center)[..., None] / scale_base
    scale = spread(NUMPY, xpos_decay(head_dim) ** (-power if keys else power), layout)
    return (cos * scale).astype(dtype), (sin * scale).astype(dtype)


def check_xpos(keys: Any, scale_base: Any, center: Any) -> tuple[bool, float, float]:
    """``(keys, scale_base, center)`` checked: a bool, a finite real > 0 and a finite real (floats)."""
    return checks.check_bool(keys, "keys"), checks.check_real(scale_base, "scale_base", 0.0), checks.check_real(center, "center")

