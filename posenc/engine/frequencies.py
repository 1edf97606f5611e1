"""The frequencies a table turns at, with what a table built from them needs: one record.

Every table posenc builds, sinusoidal or rotary, on a sequence or a grid, is made of
``sin(p * w_j)`` and ``cos(p * w_j)`` for some frequencies ``w_j``; a ``Frequencies`` carries
them from the function that knows a convention's formula to the kernels that compute.
"""

import dataclasses

import numpy as np
import numpy.typing as npt

__all__ = ["Frequencies", "axis_groups"]


@dataclasses.dataclass(frozen=True, eq=False)
class Frequencies:
    """Angular frequencies ``w_j = hi[j] + lo[j]`` (radians per position), ``h`` of them.

    ``hi``: float64 ``(h,)``, each ``w_j`` rounded to float64; ``lo``: float64 ``(h,)``, what
    that rounding left (zeros where ``w_j`` is known no better), so ``hi + lo`` holds ``w_j``
    to about 1e-30 relative. ``attention``: RoPE's attention factor, multiplying every cos
    and sin (1 elsewhere). ``axes``: for RoPE on a grid, the position axis each pair reads
    (``(h,)`` ints; None: one axis). ``width``: for a sinusoidal table, how many of its
    columns hold sines and cosines (an odd table's zero column lies past them); RoPE leaves it 0.
    """

    hi: np.ndarray
    lo: np.ndarray
    attention: float = 1.0
    axes: np.ndarray | None = None
    width: int = 0
    # axis_groups(axes), made with the record (None for one axis): torch.compile cannot trace a
    # cached_property's first computation (its lock).
    groups: tuple | None = dataclasses.field(init=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "groups", None if self.axes is None else axis_groups(self.axes))

    @property
    def values(self) -> np.ndarray:
        """``w_j`` as float64 (``hi + lo`` rounds to ``hi``)."""
        return self.hi + self.lo

    def __len__(self) -> int:
        return len(self.hi)


def axis_groups(axes: npt.ArrayLike) -> tuple[tuple[tuple[int, tuple[int, ...]], ...], tuple[int, ...]]:
    """``(groups, back)`` for pairs reading ``axes``: ``groups`` holds ``(axis, pairs)`` for each
    axis read, in increasing order, and ``back`` the order that puts the pairs, grouped so, back
    in place. Python ints and tuples: torch.compile takes them as constants, where it would trace
    NumPy's ``argsort`` and ``unique`` of the axes as tensor operations whose results depend on
    values (no ``fullgraph``)."""
    axes = np.asarray(axes)
    groups = tuple((int(axis), tuple(np.flatnonzero(axes == axis).tolist())) for axis in np.unique(axes))
    order = [pair for _axis, pairs in groups for pair in pairs]
    return groups, tuple(np.argsort(order).tolist())
