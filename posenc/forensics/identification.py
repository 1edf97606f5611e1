"""Which convention wrote this table? Fit every preset to it and keep those that reproduce it.

For each preset (``conventions.list_conventions``) and each layout, the structure is fixed
(frequency rule, odd-width policy, shift, factor) and two numbers are read off the table:

- the lowest frequency ``w_low``: the slope of the unwrapped angle ``atan2(sin, cos)`` of
  the lowest-frequency pair down the rows (least squares), which gives ``base`` (or, for
  diffusers, ``shift``) through ``w_j = factor * base ** (-j / span)``;
- the offset (the position of row 0): that pair's angle in the first row divided by
  ``w_low`` (unambiguous within ``+-pi / w_low``, some 31000 positions for ``base=1e4``).

A single zero row names ``padding_idx``. Candidates are rebuilt in float64 in tiers, from
the preset in each layout (offset read off) to read-off shift or base. Among
the candidates that match, those the source can write through its own options come first
(``conventions.changes_beyond_options``: diffusers' ``flip_sin_to_cos`` gives cos_sin, no
paper-rule source does), then the lowest tier; the presets that match at that rank are
reported. ``factor`` (diffusers' ``scale``, tensor2tensor's ``min_timescale``) is not read
off.
"""

import dataclasses
import math
from typing import Any

import numpy as np

from ..engine import checks, rotation
from ..sinusoidal import conventions, tables

__all__ = ["Identification", "identify"]


@dataclasses.dataclass(frozen=True)
class Identification:
    """What ``identify`` found.

    ``name``: the first preset that reproduces the table (None if none does); ``matches``:
    every preset that does (several write the same numbers, e.g. "paper", "hf-xlm",
    "keras-hub"); ``convention``: the fitted parameters (layout, rule, base, offset, ...)
    of ``name``, or of the closest preset when none matches; ``max_deviation``: its
    largest absolute difference from the table; ``tolerance``: the bound used.
    """

    name: str | None
    matches: tuple
    convention: conventions.Convention
    max_deviation: float
    tolerance: float

    def __str__(self) -> str:
        c = self.convention
        fitted = f"layout {c.layout}, frequencies {c.rule}, base {c.base:.6g}, offset {c.offset:g}"
        if c.rule == "h-1" and c.shift != 1:
            fitted += f", shift {c.shift:g}"
        if c.padding_idx is not None:
            fitted += f", padding_idx {c.padding_idx}"
        if self.name is None:
            return f"none (closest: {c.name}, {fitted}; max deviation {self.max_deviation:.2g} > {self.tolerance:.2g})"
        also = [m for m in self.matches if m != self.name]
        same = f" (same numbers: {', '.join(also)})" if also else ""
        return f"{self.name}{same}: {fitted}; max deviation {self.max_deviation:.2g}"


def _as_table(table):
    module = type(table).__module__.split(".")[0]
    if module == "torch":
        table = table.detach().cpu()
    try:
        array = np.asarray(table, dtype=np.float64)
    except (TypeError, ValueError) as error:
        raise TypeError(f"table must be a 2-D array of real numbers, got {checks.shown(table)}") from error
    if array.ndim != 2 or 0 in array.shape:
        raise ValueError(f"table must be a non-empty 2-D array (length, d_model), got shape {array.shape}")
    if not np.isfinite(array).all():
        raise ValueError("table must be finite, got NaN or infinity")
    return array


def default_tolerance(length, offset, factor=1.0):
    """``1e-5 + 5e-7 * max |factor * position|``: what float32 sources are off by.

    They round each frequency (through ``exp`` or ``pow`` of a float32 exponent) and each
    angle ``p * w`` to float32, so their values drift from the formula by up to about
    ``1e-7 * p``; the bound leaves a margin of five.
    """
    reach = max(abs(offset), abs(offset + length - 1)) * abs(factor)
    return 1e-5 + 5e-7 * reach


def _candidates(table, preset, zero):
    """``(tier, convention)`` pairs to try for ``preset``, most specific first.

    Tier 0: the preset in each layout, its own first, offset read off the table (a layout its
    options cannot set ranks lower already: ``conventions.changes_beyond_options``). Tier 1:
    the ``shift`` read off (for presets whose options set it) or the base read off, rounded
    to three significant digits; tier 2: the base and offset exactly as read.
    Reading both the rule and the base is ambiguous (the paper's rule with base ``b`` is
    the "h-1" rule with base ``b ** ((h - 1) / h)``), so the preset's own base comes first.
    """
    d_model = table.shape[1]
    adjustable = set(conventions.adjustable_fields(preset.name))
    for layout in [preset.layout, *(x for x in checks.LAYOUTS if x != preset.layout)]:
        structure = dataclasses.replace(preset, layout=layout)
        read = _read(table, structure, ~zero)
        if read is None:
            yield 0, structure
            continue
        w_low, j, offset = read
        yield 0, dataclasses.replace(structure, offset=round(offset))
        if "shift" in adjustable and structure.rule == "h-1" and j >= 1:
            # w_j = factor * base ** (-j / (h - shift)), solved for shift.
            pairs = (structure.width(d_model) + 1) // 2
            shift = pairs - j * math.log(structure.base) / -math.log(w_low / abs(structure.factor))
            shift = round(shift, 3) + 0.0  # + 0.0: no -0 from a shift read as -0.0001
            yield 1, dataclasses.replace(structure, shift=shift, offset=round(offset))
        if j >= 1:
            # w_j = factor * base ** (-j / span), solved for base.
            base = math.exp(-math.log(w_low / abs(structure.factor)) * structure.span(d_model) / j)
            if 1 < base < 1e300:  # pragma: no mutate ("<=" differs only for a base read as 1.0 to the last bit)
                yield 1, dataclasses.replace(structure, base=float(f"{base:.3g}"), offset=round(offset))
                yield 2, dataclasses.replace(structure, base=base, offset=float(offset))


def _read(table, convention, valid):
    """``(w_low, j, offset)`` read off ``table`` for ``convention``'s structure, or None.

    ``w_low`` (None from a single row) is the frequency of the lowest pair ``j``; the offset
    is read with ``w_low``, or with the convention's own frequency when there is none.
    """
    length, d_model = table.shape
    try:
        width = convention.width(d_model)
        w = convention.frequencies(d_model)
    except ValueError:
        return None
    lowest = _lowest_pair(width, convention.layout)
    rows = np.flatnonzero(valid)
    if lowest is None or len(rows) == 0:
        return None
    s, c, j = lowest
    angle = np.arctan2(table[rows, s], table[rows, c])
    w_low = w[j]
    if len(rows) >= 2:
        unwrapped = np.unwrap(angle)
        centred = rows - rows.mean()
        slope = float(centred @ (unwrapped - unwrapped.mean()) / (centred @ centred))
        if 0 < slope < abs(convention.factor):
            w_low = slope
    return w_low, j, angle[0] / w_low - rows[0]


def _lowest_pair(width, layout):
    # (sine column, cosine column, j) of the lowest frequency that has both, or None.
    pairs = width // 2
    if pairs == 0:
        return None
    sines, cosines = rotation.column_slices(width, layout)
    columns = np.arange(width)
    return columns[sines][pairs - 1], columns[cosines][pairs - 1], pairs - 1


def _deviation(table, convention):
    length, d_model = table.shape
    rebuilt = tables.positional_encoding(length, d_model, convention=convention, dtype=np.float64)
    return float(np.abs(table - rebuilt).max())


def identify(table: Any, *, atol: float | None = None) -> Identification:
    """Name the convention that generated ``table`` (a 2-D array, ``(length, d_model)``).

    ``table``: NumPy array, torch tensor or TF tensor, e.g. a frozen position embedding from
    a checkpoint; row ``k`` is taken to be position ``offset + k``. Every preset is fitted
    (module docstring) and rebuilt in float64; it matches when its largest absolute
    deviation is within ``atol`` (default ``default_tolerance``: ``1e-5 + 5e-7 * max
    |position|``, what float32 sources are off by). Returns an ``Identification``: the first
    matching preset's name and fitted parameters, every preset that matches at the same
    rank (writable through the source's own options first, then the level of fitting), and
    the deviation; ``name`` is None (and ``convention`` the closest fit) when none matches.
    """
    table = _as_table(table)
    length, d_model = table.shape
    if atol is not None:
        atol = checks.check_real(atol, "atol", 0.0)
    zero = np.abs(table).max(axis=1) <= (1e-6 if atol is None else atol)
    tried = {}  # deviation per parameter set: presets share structures
    fits = []  # ((changes beyond the source's options, tier), deviation, tolerance, convention)
    for name in conventions.NAMES:
        preset = conventions.resolve(name)
        try:
            preset.frequency_record(d_model)
        except ValueError:
            continue  # the source has no table of this width
        for tier, candidate in _candidates(table, preset, zero):
            if candidate.padding_idx is not None and zero.sum() == 1:
                candidate = dataclasses.replace(candidate, padding_idx=int(round(candidate.offset + np.argmax(zero))))
            key = dataclasses.replace(candidate, name="")
            if key not in tried:
                try:
                    tried[key] = _deviation(table, candidate)
                except ValueError:
                    tried[key] = math.inf
            tolerance = default_tolerance(length, candidate.offset, candidate.factor) if atol is None else atol
            rank = (conventions.changes_beyond_options(name, candidate), tier)
            fits.append((rank, tried[key], tolerance, candidate))
    matching = [fit for fit in fits if fit[1] <= fit[2]]
    if not matching:
        _, deviation, tolerance, closest = min(fits, key=lambda fit: fit[1] / fit[2])
        return Identification(None, (), closest, deviation, tolerance)
    rank = min(fit[0] for fit in matching)
    first = [fit for fit in matching if fit[0] == rank]
    names = tuple(dict.fromkeys(fit[3].name for fit in first))
    # The closest fit of that rank; min keeps the first (preset order) among equals.
    _, deviation, tolerance, convention = min(first, key=lambda fit: fit[1])
    return Identification(convention.name, names, convention, deviation, tolerance)
