"""Which rule wrote a 2-D or 3-D RoPE cos/sin table (``identify_rope``), and at which positions.

A RoPE table on a grid holds, per token and pair ``j``, ``cos`` and ``sin`` of ``p[a_j] * w_j``:
the rules (``posenc.rope.axial``) differ in which axis ``a_j`` each pair reads and in the
frequencies ``w_j = base ** (-e_j)``. The table is read without knowing the positions:

- the layout: each value twice in a row ("interleaved") or the two halves equal ("half");
- the slow pairs, whose angles stay within ``(-3, 3)`` radians, unwrapped as they are
  (``atan2(sin, cos)``; ``arccos`` from cos alone, positions then taken >= 0); two slow pairs read the
  same axis when their angles over the tokens are proportional, so they fall into groups, one per
  axis whose positions differ from the others' (an axis at zero everywhere leaves its pairs at angle 0);
- per rule, the exponents ``e_j`` it gives each pair (``axes_dim``: each block of an axis restarts
  at ``e = 0`` and ends in that axis' slow pairs; M-RoPE and Pixtral: ``j / pairs`` and its
  interleaved variant), ``base`` from the ratios of a group's slow angles, and each axis'
  positions from its slowest pair, refined pair by pair up to the fastest (``w = 1``);
- the other pairs go to the axis whose positions predict their cos and sin, and the axes must
  fall into the rule's pattern (consecutive sections, every third pair, two halves).

Pixel-frequency tables (``posenc.rope.pixels``: coordinates in [-1, 1], most pairs wrapped) are read
apart, given cos and sin: per axis a block of pairs whose first turns by pi, so its angle is the
coordinate (+-1 told apart by the other pairs), and ``max_freq`` tried over the integers 2..1024 in
both spacings; a coarse grid aliases several (the same angles modulo 2 pi): posenc's default 224
where it fits, else the smallest, one for all axes where one fits them all.

Each rule that gives a full structure is rebuilt in float64 by posenc's own function at the read
positions and kept when within ``1e-5 + 5e-7 * max |position|`` (times the fastest frequency for pixel
tables; at most 1e-3) everywhere (float32 sources' angles are off by about ``|angle| * 1e-7``).
"""

import dataclasses
import functools
import math
from collections.abc import Callable
from typing import Any

import numpy as np

from ..engine import checks
from ..rope import axial, pixels
from . import identification

__all__ = ["RopeIdentification", "identify_rope"]

# A pair whose angles stay within this (radians) has not wrapped: its angle is p * w as it is.
_SLOW = 3.0
# Labels of pairs that are in no group: at zero at every token (an axis at zero; from cos alone, also
# angles too small to read), fast (wrapped), too small to tell the axes apart, either of two axes.
ZERO, FAST, TINY, EITHER = -1, -2, -3, -4
# Angles below this at every token are too small to group (from cos alone, arccos is unsure there).
_TINY = 1e-5
_TINY_FROM_COS = 1e-2
# A layout repeats each value within this; a pair reads a group's positions when its cos and sin
# are within _FITS of theirs.
_REPEAT = 1e-5
_FITS = 1e-3
# A float32 cos or sin is off by about this from its angle's (a rounding and a bit).
_ROUNDING = 1e-7

SOURCES = {
    "per-axis": "diffusers' get_1d_rotary_pos_embed per axis (Flux's FluxPosEmbed, HunyuanVideo, Wan, CogVideoX, Lumina)",
    "qwen2_vl": "the vision rotary of Qwen2-VL, Qwen2.5-VL and Qwen3-VL (transformers); timm's EVA-02 in the interleaved layout",
    "pixtral": "Pixtral's PixtralVisionRotaryEmbedding (transformers)",
    "mrope": "Qwen2-VL's M-RoPE (Qwen2VLRotaryEmbedding; GLM-4V's Glm4vTextRotaryEmbedding in the interleaved layout)",
    "mrope-interleaved": "Qwen3-VL's interleaved M-RoPE (Qwen3VLTextRotaryEmbedding; timm's GenLIP)",
    "pixel": "timm's RotaryEmbedding and build_rotary_pos_embed (in_pixels; linear_bands for the linear spacing), "
             "rotary-embedding-torch's freqs_for='pixel', Perceiver's Fourier features",
}
# max_freq tried for pixel tables (integers; images and Fourier features are sized in whole pixels)
_MAX_FREQS = np.arange(2.0, 1025.0)
_DEFAULT_MAX_FREQ = int(np.searchsorted(_MAX_FREQS, 224.0))


@dataclasses.dataclass(frozen=True, eq=False)
class RopeIdentification:
    """What ``identify_rope`` found.

    ``matches``: labels of the rules that reproduce the table (rule, its split, ``base``,
    ``layout``), empty when none does; ``sources``: the code that writes each match's numbers
    (``SOURCES``); ``call``: the posenc call that rebuilds the first match (``positions`` as its
    positions argument); ``positions``: float64 ``(axes, tokens)``, each token's coordinate per axis
    as read off the table (integers where they are), or None; ``max_deviation`` of that rebuild (or
    of the closest rule's) from the table, ``tolerance`` the bound; ``reason``: why nothing matched.
    """

    matches: tuple
    sources: tuple
    call: str | None
    positions: np.ndarray | None
    max_deviation: float
    tolerance: float
    reason: str = ""

    def __str__(self) -> str:
        if not self.matches:
            return f"not a RoPE table I can reproduce: {self.reason}"
        named = "; ".join(f"{label} ({source})" for label, source in zip(self.matches, self.sources))
        return f"{named}; max deviation {self.max_deviation:.2g}; rebuilt by {self.call}"


@dataclasses.dataclass(frozen=True)
class _Table:
    """The per-pair values of a table in one layout: ``cos``, ``sin`` ``(tokens, pairs)`` (either may be None)."""

    cos: np.ndarray | None
    sin: np.ndarray | None
    layout: str

    @property
    def shape(self) -> tuple:
        """``(tokens, pairs)``."""
        given = self.cos if self.cos is not None else self.sin
        return () if given is None else given.shape

    def angle_near(self, j, phi):
        """Pair ``j``'s angle at each token nearest ``phi``, and where it is well-conditioned."""
        c = None if self.cos is None else self.cos[:, j]
        s = None if self.sin is None else self.sin[:, j]
        if c is not None and s is not None:
            choices = [np.arctan2(s, c)]
        elif c is not None:
            a = np.arccos(np.clip(c, -1.0, 1.0))
            choices = [a, -a]
        else:
            a = np.arcsin(np.clip(s, -1.0, 1.0))
            choices = [a, np.pi - a]
        best = None
        for choice in choices:
            turned = choice + 2 * np.pi * np.round((phi - choice) / (2 * np.pi))
            best = turned if best is None else np.where(np.abs(turned - phi) < np.abs(best - phi), turned, best)
        # arccos near 0 and pi, arcsin near +-pi/2 barely move with the angle
        clear = np.ones(best.shape, bool) if c is not None and s is not None else np.abs(
            np.sin(best) if c is not None else np.cos(best)) > 0.1  # pragma: no mutate (a float tie)
        return best, clear

    def noise(self, angles):
        """How far ``angles`` (read from float32 values, off by ~6e-8) may be from the truth: more from cos
        alone near 0 and pi (``arccos``), from sin alone near +-pi/2."""
        if self.cos is not None and self.sin is not None:
            return np.full(angles.shape, _ROUNDING)
        slope = np.abs(np.sin(angles) if self.cos is not None else np.cos(angles))
        return np.minimum(_ROUNDING / np.maximum(slope, 1e-30), math.sqrt(2 * _ROUNDING))

    def misfit(self, j, phi):
        """Largest difference of pair ``j``'s cos and sin from those of ``phi``."""
        out = 0.0
        for given, f in ((self.cos, np.cos), (self.sin, np.sin)):
            if given is not None:
                out = max(out, float(np.max(np.abs(given[:, j] - f(phi)), initial=0.0)))
        return out


def _as_rows(value, name):
    if value is None:
        return None
    if type(value).__module__.split(".")[0] == "torch":
        value = value.detach().cpu().double()
    try:
        array = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError) as error:
        raise TypeError(f"{name} must be an array of real numbers (..., head_dim), got {checks.shown(value)}") from error
    if array.ndim < 1 or 0 in array.shape:
        raise ValueError(f"{name} must be a non-empty array (..., head_dim), got shape {array.shape}")
    if not np.isfinite(array).all():
        raise ValueError(f"{name} must be finite, got NaN or infinity")
    return array.reshape(array.size // array.shape[-1], array.shape[-1])


def _layouts(cos, sin):
    """A ``_Table`` for each layout the given arrays repeat their values in."""
    given = [x for x in (cos, sin) if x is not None]
    width = given[0].shape[1]
    out = []
    if width % 2:
        return out
    half = width // 2
    for layout, first, second in (("half", slice(0, half), slice(half, width)), ("interleaved", slice(0, None, 2),
                                                                                  slice(1, None, 2))):
        if all(np.max(np.abs(x[:, first] - x[:, second])) <= _REPEAT for x in given):  # pragma: no mutate (a float tie)
            out.append(_Table(None if cos is None else cos[:, first], None if sin is None else sin[:, first], layout))
    return out


def _groups(table):
    """``(labels, angles)``: per pair a group (an int, one per axis the slow pairs tell apart) or ZERO,
    FAST, TINY; ``angles`` ``(tokens, pairs)``, the pairs' angles as read (the slow ones unwrapped)."""
    tokens, pairs = table.shape
    angles = np.stack([table.angle_near(j, np.zeros(tokens))[0] for j in range(pairs)], axis=1)
    reach = np.max(np.abs(angles), axis=0)
    noise = table.noise(angles)
    labels = np.full(pairs, FAST)
    if table.sin is None:
        labels[reach < _TINY_FROM_COS] = ZERO  # pragma: no mutate (a float tie)
    else:  # float32 sin and cos are exactly 0 and 1 at angle 0 only (below 1e-38 in sin)
        labels[reach < _TINY] = TINY  # pragma: no mutate (a float tie)
        labels[reach == 0] = ZERO
    # from sin alone, an angle past pi/2 reads as pi minus it
    # The widest first, so the most precise direction leads its group. The test below is symmetric in j
    # and its leader (divide it by ratio), so the order only moves borderline pairs: mutating it changed
    # none of 1,900 fuzzed identifications (2-D, 3-D, M-RoPE; cos, sin, both)
    widest_first = np.argsort(-reach)  # pragma: no mutate (see above)
    # Not mutated: < for <= differs only in a float tie.
    slow = [j for j in widest_first if labels[j] == FAST and reach[j] < (_SLOW if table.cos is not None else 1.4)]  # pragma: no mutate
    leaders: list[int] = []
    for j in slow:
        for g, lead in enumerate(leaders):
            ratio = float(angles[:, j] @ angles[:, lead] / (angles[:, lead] @ angles[:, lead]))
            # float32 sources' angles are off by about |angle| * 1e-7 beyond the rounding of cos and sin
            limit = 4 * (noise[:, j] + ratio * noise[:, lead]) + 1e-6 * np.abs(angles[:, j])
            if ratio > 0 and np.all(np.abs(angles[:, j] - ratio * angles[:, lead]) <= limit):  # pragma: no mutate (a float tie)
                labels[j] = g
                break
        else:
            labels[j] = len(leaders)
            leaders.append(j)
    return labels, angles


def _alone(labels):
    """The groups of one pair: an axis with one slow pair, or a fast pair that happened to stay within
    _SLOW (or, from sin alone, one past pi/2 read as pi minus it)."""
    groups, counts = np.unique(labels[labels >= 0], return_counts=True)
    return set(groups[counts == 1].tolist())


def _base(exponents, labels, angles):
    """``base`` read off the slow pairs of each group: ``angle_j / angle_k = base ** (e_k - e_j)`` (least
    squares on the logarithms, weighted by the angles' size), or None when no group has two pairs."""
    num = den = 0.0
    for g in set(labels[labels >= 0].tolist()):
        members = np.flatnonzero(labels == g)
        if len(members) < 2:
            continue
        lead = members[np.argmin(exponents[members])]
        for j in members:
            gap = exponents[j] - exponents[lead]
            if gap <= 0:
                continue
            ratio = float(angles[:, j] @ angles[:, lead] / (angles[:, lead] @ angles[:, lead]))
            weight = float(angles[:, j] @ angles[:, j]) * gap**2
            if ratio > 0:
                num += weight * -math.log(ratio) / gap
                den += weight
    if den == 0:
        return None
    base = math.exp(num / den)
    short = float(f"{base:.4g}")
    return short if abs(base - short) <= 1e-4 * short else base  # pragma: no mutate (a float tie)


def _climb(table, members, frequencies, start):
    """Positions ``(tokens,)`` of an axis read by ``members`` (slowest first): ``start`` refined by each pair's angle."""
    q = start
    for j in members:
        angle, clear = table.angle_near(j, q * frequencies[j])
        q = np.where(clear, angle / frequencies[j], q)
    return q


def _integers(q):
    rounded = np.round(q)
    return rounded if np.max(np.abs(q - rounded), initial=0.0) <= 1e-3 else q  # pragma: no mutate (< for <=: a float tie)


@dataclasses.dataclass(frozen=True)
class _Found:
    label: str
    source: str
    call: str
    positions: np.ndarray
    build: Callable[[np.ndarray], tuple]
    # the largest |angle| over max |position|, the factor of the float32 error (1 for integer frequencies)
    scale: float = 1.0


def _axis_positions(table, labels, angles, exponents, base):
    """``{group: positions}`` from each group's slow pairs, climbed through them (slowest first); not the
    groups of one pair, which ``_assign`` tries first as any other pair."""
    frequencies = base ** -exponents
    out = {}
    for g in set(labels[labels >= 0].tolist()) - _alone(labels):
        members = np.flatnonzero(labels == g)
        members = members[np.argsort(-exponents[members])]
        out[g] = _climb(table, members, frequencies, angles[:, members[0]] / frequencies[members[0]])
    return out


def _assign(table, labels, angles, exponents, base, positions):
    """Each pair's group: its slow group, else the group whose positions predict its cos and sin, refining
    that group's positions through it (slowest first); EITHER where two groups predict it within what
    identify_rope allows, ZERO for a pair at zero that fits none; a group of one pair that fits none
    reads a new axis; None when another pair fits none."""
    frequencies = base ** -exponents
    found = labels.copy()
    alone = _alone(labels)
    found[np.isin(found, list(alone))] = FAST
    reach = max((float(np.max(np.abs(q))) for q in positions.values()), default=0.0)
    # float32 sources' angles are off by about |angle| * 1e-7
    limit, same = _FITS + 5e-7 * reach, identification.default_tolerance(1, reach)
    for j in np.argsort(-exponents):
        if found[j] >= 0:
            continue
        fits = sorted((table.misfit(j, q * frequencies[j]), g) for g, q in positions.items())
        if len(fits) > 1 and fits[1][0] <= same:  # pragma: no mutate (a float tie)
            found[j] = EITHER
        elif fits and fits[0][0] <= limit:  # pragma: no mutate (a misfit equal to the limit to the last bit: "<" is the same)
            g = fits[0][1]
            found[j] = g
            positions[g] = _climb(table, [j], frequencies, positions[g])
        elif labels[j] in alone:
            found[j] = labels[j]
            positions[labels[j]] = angles[:, j] / frequencies[j]
        elif labels[j] != ZERO:
            return None
    return found


def _settle(found, step):
    """``found`` with each EITHER pair given the group of the pair ``step`` before it.

    An EITHER among the first ``step`` stays: those are the fastest pairs, and for the rule that wrote
    the table two axes predict one of them only where they agree on every token."""
    out = found.copy()
    for j in range(step, len(out)):
        if out[j] == EITHER:
            out[j] = out[j - step]
    return out


def _per_axis(table, labels, angles):
    """diffusers' per-axis RoPE: blocks, each ending in one group's slow pairs (or all at zero)."""
    pairs = table.shape[1]
    labels = labels.copy()
    # a block ends in two slow pairs of its axis, or in the table's last pair alone
    labels[np.isin(labels, list(_alone(labels))) & (np.arange(pairs) != pairs - 1)] = FAST
    blocks, start, j = [], 0, 0
    # from cos alone the slowest angles of an axis may read as zero, else they are TINY
    tail = (TINY, ZERO) if table.sin is None else (TINY,)
    while j < pairs:
        if labels[j] == ZERO and j == start:  # an axis at zero: its pairs up to the next block's first
            while j < pairs and labels[j] == ZERO:
                j += 1
            blocks.append((start, j, ZERO))
            start = j
            continue
        if labels[j] >= 0:
            g = labels[j]
            while j < pairs and labels[j] == g:
                j += 1
            while j < pairs and labels[j] in tail:
                j += 1
            blocks.append((start, j, g))
            start = j
            continue
        j += 1
    if start != pairs or len(blocks) < 2:
        return None
    dims = tuple(2 * (end - begin) for begin, end, _g in blocks)
    exponents = np.concatenate([2 * np.arange(end - begin) / d for (begin, end, _g), d in zip(blocks, dims)])
    base = _base(exponents, labels, angles)
    if base is None:
        return None
    frequencies = base ** -exponents
    rows = []
    for begin, end, g in blocks:
        if g < 0:
            rows.append(np.zeros(len(angles)))
            continue
        members = [k for k in range(end - 1, begin - 1, -1) if labels[k] == g]
        q = _climb(table, members, frequencies, angles[:, members[0]] / frequencies[members[0]])
        rows.append(_integers(_climb(table, range(members[-1] - 1, begin - 1, -1), frequencies, q)))
    positions = np.stack(rows)
    layout = table.layout

    def build(p):  # diffusers' ids: the axis last
        return axial.per_axis_cos_sin(p.T, dims, base=base, layout=layout, dtype=np.float64)

    label = f"per-axis, axes_dim={dims}, base={base:g}, layout={layout!r}"
    call = f"posenc.rope.per_axis_cos_sin(positions.T, {dims}, base={base!r}, layout={layout!r})"
    found = [_Found(label, SOURCES["per-axis"], call, positions, build)]
    if len(dims) == 2:  # Qwen2-VL's 2-D rope when the halves are equal; compared like any candidate
        head = 2 * pairs
        found.append(_Found(f"qwen2_vl, head_dim={head}, base={base:g}, layout={layout!r}", SOURCES["qwen2_vl"],
                            f"posenc.rope.axial_cos_sin(positions, {head}, base={base!r}, layout={layout!r})", positions,
                            lambda p: axial.axial_cos_sin(p, head, base=base, layout=layout, dtype=np.float64)))
    return found


def _fixed(table, labels, angles, exponents):
    """The rules whose exponents do not depend on the split: ``(base, each pair's group)`` or None."""
    base = _base(exponents, labels, angles)
    if base is None:
        return None
    positions = _axis_positions(table, labels, angles, exponents, base)
    found = _assign(table, labels, angles, exponents, base, positions)
    if found is None:
        return None
    return base, found, {g: _integers(q) for g, q in positions.items()}


def _rows(order, positions, tokens):
    return np.stack([positions[g] if g >= 0 else np.zeros(tokens) for g in order])


def _runs(found):
    """The groups of ``found`` in order of their runs, or None when a group comes back after another."""
    order: list[int] = []
    for g in found.tolist():
        if not order or order[-1] != g:
            if g in order:
                return None
            order.append(g)
    return order


def _mrope(table, labels, angles):
    pairs = table.shape[1]
    head = 2 * pairs
    exponents = np.arange(pairs) / pairs
    fixed = _fixed(table, labels, angles, exponents)
    if fixed is None:
        return []
    base, found, positions = fixed
    tokens, layout, out = len(angles), table.layout, []
    order = _runs(_settle(found, 1))
    if order is not None and 2 <= len(order) <= 3:
        sections = tuple(int(np.sum(_settle(found, 1) == g)) for g in order) + (0,) * (3 - len(order))
        # Two groups: the third section is 0 wide, so its row is never read (any row serves).
        rows = _rows((order + order)[:3], positions, tokens)
        build = functools.partial(axial.mrope_cos_sin, head_dim=head, mrope_section=sections, base=base, layout=layout,
                                  dtype=np.float64)
        out.append(_Found(f"mrope, mrope_section={sections}, base={base:g}, layout={layout!r}", SOURCES["mrope"],
                          f"posenc.rope.mrope_cos_sin(positions, {head}, mrope_section={sections}, base={base!r}, "
                          f"layout={layout!r})", rows, build))
    # interleaved: T H W T H W ..., the height up to pair 3 * s1, the width up to 3 * s2, the rest time
    if pairs >= 3:
        found = _settle(found, 3)
        t, h, w = found[0], found[1], found[2]
        j = np.arange(pairs)
        s1 = int(np.sum((j % 3 == 1) & (found == h) & (h != t)))
        s2 = int(np.sum((j % 3 == 2) & (found == w) & (w != t)))
        thirds = (pairs - s1 - s2, s1, s2)
        if len({t, h, w}) == 3 and np.array_equal(axial.mrope_axes(thirds, interleaved=True, pairs=pairs),
                                                  np.select([found == h, found == w], [1, 2])):
            build = functools.partial(axial.mrope_cos_sin, head_dim=head, mrope_section=thirds, interleaved=True,
                                      base=base, layout=layout, dtype=np.float64)
            out.append(_Found(f"mrope interleaved, mrope_section={thirds}, base={base:g}, layout={layout!r}",
                              SOURCES["mrope-interleaved"],
                              f"posenc.rope.mrope_cos_sin(positions, {head}, mrope_section={thirds}, interleaved=True, "
                              f"base={base!r}, layout={layout!r})", _rows([t, h, w], positions, tokens), build))
    return out


def _pixtral(table, labels, angles):
    pairs = table.shape[1]
    head = 2 * pairs
    if pairs % 2:
        return []
    quarter = pairs // 2
    exponents = np.concatenate([2 * np.arange(quarter), 2 * np.arange(quarter) + 1]) / pairs
    fixed = _fixed(table, labels, angles, exponents)
    if fixed is None:
        return []
    base, found, positions = fixed
    found = _settle(found, 1)
    order = _runs(found)
    if order is None or len(order) != 2 or int(np.sum(found == order[0])) != quarter:
        return []
    layout = table.layout

    def build(p):
        return axial.axial_cos_sin(p, head, base=base, convention="pixtral", layout=layout, dtype=np.float64)

    return [_Found(f"pixtral, head_dim={head}, base={base:g}, layout={layout!r}", SOURCES["pixtral"],
                   f"posenc.rope.axial_cos_sin(positions, {head}, base={base!r}, convention='pixtral', layout={layout!r})",
                   _rows(order, positions, len(angles)), build)]


def _pixel_fit(cos, sin, frequencies, p, ends):
    """Largest misfit ``(candidates,)`` of ``cos``, ``sin`` ``(rows, count)`` at ``frequencies`` ``(candidates, count)``
    and positions ``p`` ``(rows,)``; the rows in ``ends`` may be at -p instead. Also the sign per row."""
    signs = []
    for sign in (1.0, -1.0):
        angles = sign * p[None, :, None] * frequencies[:, None, :]
        misfit = np.maximum(np.abs(cos - np.cos(angles)), np.abs(sin - np.sin(angles))).max(axis=2)
        signs.append(misfit)
    return np.where(ends, np.minimum(*signs), signs[0]).max(axis=1), signs


def _pixel(table):
    """Pixel frequencies (``posenc.rope.pixels``): per axis a block of ``count`` pairs whose first turns by pi
    (its angle reads the coordinate; +-1 are told apart by the others), ``max_freq`` tried over the integers."""
    if table.cos is None or table.sin is None:
        return []
    tokens, pairs = table.shape
    out = []
    for ndim in (2, 3):
        if pairs % ndim:
            continue
        count = pairs // ndim
        j = np.arange(count)
        step = j / max(count - 1, 1)
        spacings = {"linear": np.pi * (1 + step[None] * (_MAX_FREQS[:, None] / 2 - 1)),
                    "log": np.pi * 2 ** (step[None] * (np.log2(_MAX_FREQS[:, None]) - 1))}
        for spacing, frequencies in spacings.items():
            axes = []
            for a in range(ndim):
                block = slice(a * count, (a + 1) * count)
                cos, sin = table.cos[:, block], table.sin[:, block]
                # tokens at one coordinate share their values: fit each distinct row once
                _, first, inverse = np.unique(np.round(np.concatenate([cos, sin], 1), 4), axis=0, return_index=True,
                                              return_inverse=True)
                p = np.arctan2(sin[first, 0], cos[first, 0]) / np.pi
                ends = np.abs(p) > 1 - 1e-4  # pragma: no mutate (a float tie)
                p = np.where(ends, 1.0, p)
                misfit, signs = _pixel_fit(cos[first], sin[first], frequencies, p, ends)
                axes.append((set(np.flatnonzero(misfit <= _FITS).tolist()), p, ends, signs, inverse.ravel()))
            if not all(fits for fits, *_ in axes):
                continue
            # a coarse grid aliases max_freq (several give the same table): one for all axes where one fits all,
            # posenc's default where it fits, else the smallest
            common = set.intersection(*(fits for fits, *_ in axes))
            rows, tops = [], []
            for fits, p, ends, signs, inverse in axes:
                fits = common or fits
                k = _DEFAULT_MAX_FREQ if _DEFAULT_MAX_FREQ in fits else min(fits)
                rows.append(np.where(ends & (signs[1][k] < signs[0][k]), -p, p)[inverse])
                tops.append(float(_MAX_FREQS[k]))
            top = tops[0] if len(set(tops)) == 1 else tuple(tops)
            head, layout = 2 * pairs, table.layout
            build = functools.partial(pixels.pixel_cos_sin, head_dim=head, max_freq=top, spacing=spacing,
                                      layout=layout, dtype=np.float64)
            out.append(_Found(f"pixel, max_freq={top!r}, spacing={spacing!r}, layout={layout!r}", SOURCES["pixel"],
                              f"posenc.rope.pixel_cos_sin(positions, {head}, max_freq={top!r}, spacing={spacing!r}, "
                              f"layout={layout!r})", np.stack(rows), build, np.pi * max(tops) / 2))
    return out


def _deviation(found, cos, sin):
    try:
        rebuilt = found.build(found.positions)
    except ValueError:
        return math.inf
    return max(float(np.max(np.abs(theirs - ours))) for theirs, ours in zip((cos, sin), rebuilt) if theirs is not None)


def identify_rope(cos: Any = None, sin: Any = None) -> RopeIdentification:
    """Which 2-D or 3-D RoPE rule wrote ``cos`` and/or ``sin`` (``(..., head_dim)``, tokens in any order)?

    The rules: diffusers' per-axis RoPE (``per_axis_cos_sin``, Flux's ``axes_dim``), the Qwen2-VL
    vision rotary (``axial_cos_sin``, the same numbers as two equal axes), Pixtral's
    (``convention="pixtral"``), M-RoPE in sections (Qwen2-VL) and interleaved (Qwen3-VL), pixel
    frequencies (``pixel_cos_sin``: timm's RotaryEmbedding, rotary-embedding-torch's "pixel"; from cos
    and sin together, 2-D or 3-D, the tolerance times the fastest frequency), each in the
    "half" or "interleaved" layout. The layout, ``base``, the split (``axes_dim`` or
    ``mrope_section``) and each token's positions are read off the table (module docstring), then the
    rule is rebuilt in float64 at those positions and kept when within ``1e-5 + 5e-7 * max |position|``
    (at most 1e-3).
    Given cos alone, positions are taken >= 0. It needs, per axis, two pairs whose angles stay within
    3 radians (the slow end of the frequencies) and the axes' positions to differ somewhere. Returns a
    ``RopeIdentification``; what no rule reproduces is answered, not raised.
    """
    if cos is None and sin is None:
        raise TypeError("identify_rope needs cos or sin (or both), got neither")
    cos, sin = _as_rows(cos, "cos"), _as_rows(sin, "sin")
    if cos is not None and sin is not None and cos.shape != sin.shape:
        raise ValueError(f"cos and sin must have the same shape, got {cos.shape} and {sin.shape}")
    given = [x for x in (cos, sin) if x is not None]
    if max(float(np.max(np.abs(x))) for x in given) > 1 + _REPEAT:  # pragma: no mutate (a float tie)
        return _none("values beyond [-1, 1] (an attention factor, or not cos and sin)")
    if cos is not None and sin is not None and np.max(np.abs(cos**2 + sin**2 - 1)) > 1e-4:  # pragma: no mutate (a float tie)
        return _none("cos**2 + sin**2 is not 1")
    tables = _layouts(cos, sin)
    if not tables:
        return _none("its values do not repeat as a RoPE layout does (halves equal, or each value twice in a row)")
    candidates: list[_Found] = []
    reasons = []
    for table in tables:
        candidates += _pixel(table)
        labels, angles = _groups(table)
        if len(set(labels[labels >= 0].tolist())) + (labels == ZERO).any() < 2:
            reasons.append(f"{table.layout} layout: fewer than two axes read off its slow pairs (1-D RoPE, a grid "
                           "whose axes agree everywhere, or no RoPE)")
            continue
        for rule in (_per_axis, _mrope, _pixtral):
            candidates += rule(table, labels, angles) or []
    if not candidates:
        return _none("; ".join(reasons) or "no rule's frequencies and axes fit its pairs")
    scored = []
    for found in candidates:
        reach = float(np.max(np.abs(found.positions), initial=0.0))
        # at most _FITS: the float32 rounding of angles read as ~1e4 radians or more hides any rule
        tolerance = min(identification.default_tolerance(1, reach, found.scale), _FITS)
        scored.append((_deviation(found, cos, sin), tolerance, found))
    matching = [(dev, tol, f) for dev, tol, f in scored if dev <= tol]  # pragma: no mutate (a float tie)
    # Positions read off a table are free up to a factor per axis (Pixtral's width at k is Qwen2-VL's at
    # k * base ** (-1 / pairs)): the rules that read integers, where some do, are the ones that wrote it,
    # and of those the ones that read the smallest (a frequency 10000 times lower reads positions 10000
    # times larger)
    whole = [m for m in matching if np.array_equal(m[2].positions, np.round(m[2].positions))]
    if whole:
        largest = [float(np.max(np.abs(m[2].positions))) for m in whole]
        matching = [m for m, size in zip(whole, largest) if size <= min(largest) * (1 + 1e-9)]
    if not matching:
        dev, tol, closest = min(scored, key=lambda s: s[0] / s[1])
        return _none(f"the closest, {closest.label}, is off by {dev:.2g} > {tol:.2g}", dev, tol)
    dev, tol, first = min(matching, key=lambda s: s[0])
    return RopeIdentification(tuple(f.label for _d, _t, f in matching), tuple(f.source for _d, _t, f in matching),
                              first.call, first.positions, dev, tol)


def _none(reason, deviation=math.inf, tolerance=math.nan):
    return RopeIdentification((), (), None, None, deviation, tolerance, reason)
