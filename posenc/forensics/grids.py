"""Which grid convention wrote a table (``identify_grid``), and which grid mistake (``diagnose_grid``)."""

import contextlib
import dataclasses
import inspect
import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..engine.registry import Registry
from ..language import N_, _, get_language, using_language
from ..sinusoidal.grid import (
    _PRESETS,
    AXES_2D,
    AXES_3D,
    THREE_D,
    _check_shape,
    _options,
    _table,
    column_slices,
    frequency_span,
    grid_encoding,
    pair_counts,
)
from . import identification

__all__ = ["GridDiagnosis", "GridIdentification", "diagnose_grid", "identify_grid"]

# identify_grid and diagnose_grid: rebuild candidates in float64 and compare.

# Sources compute in float32 with naive angles (an error of about |angle| * 6e-8): a table
# written by one of them is within this of the exact one for grids up to a few hundred
# patches a side, while two different conventions differ by 0.1 and more.
TOLERANCE = 1e-4


# The variants of a convention that lay its columns out otherwise (the rest is read off the table).
_LAYOUTS = {
    "timm": [{}, {"interleave_sin_cos": True}, {"reverse_coord": True}, {"reverse_coord": True, "interleave_sin_cos": True}],
    "moco-v3": [{"cls_token": False}],
}
# What a source's tables differ by beyond their layout, in its own words, costs this much more than
# positions passed by hand (posenc reproduces those too): a name is preferred when one fits.
_BY_HAND = 3
_DEFAULT_TEMPERATURE = 10000.0


def _near(value, target, tolerance=1e-4):
    return abs(value - target) <= tolerance * max(1.0, abs(target))  # pragma: no mutate (< for <=: a float tie)


def _snap(value):
    """``value`` to 4 significant digits if that is within 1e-4 of it (a table's 20.00003 is 20), else to 6."""
    short = float(f"{value:.4g}")
    return short if _near(value, short) else float(f"{value:.6g}")


def _wrap(angle):
    return (angle + np.pi) % (2 * np.pi) - np.pi


def _climb(wrapped, ratio=None):
    """``v_j = v_0 * r ** j`` from their angles ``wrapped`` to (-pi, pi], unwrapped from the slowest (last) up.

    Each ``v_j`` is its angle plus the whole turns nearest to ``v_{j+1} / r``: right while that
    guess is within pi, which the slow end, far below a turn, starts. ``ratio``: ``r`` if known,
    else the ratio of the two values below each step (the two slowest taken as they are)."""
    out = np.array(wrapped)  # a copy, climbed in place; float64, as _candidates reads the table
    for j in range(len(out) - 2 - (ratio is None), -1, -1):
        r = ratio
        if r is None:
            # Not mutated: < for <= are float ties, and a ratio of exactly 1 that got through is refused by _fit.
            if abs(out[j + 1]) < 1e-9 or not 0 < out[j + 2] / out[j + 1] < 1:  # pragma: no mutate
                return None
            r = out[j + 2] / out[j + 1]
        guess = out[j + 1] / r
        out[j] += 2 * np.pi * np.round((guess - out[j]) / (2 * np.pi))
    return out


def _ratio(values):
    """``r`` of ``v_j = v_0 r ** j`` by least squares on ``log |v_j|``, weighted by ``v_j ** 2`` (an angle's
    error is absolute), or None when fewer than two values stand clear of zero with one sign."""
    values = np.asarray(values)
    keep = np.abs(values) > 1e-6  # pragma: no mutate (">=" differs only for a value of 1e-6 to the last bit)
    if keep.sum() < 2 or len(set(np.sign(values[keep]))) > 1:
        return None
    j, y, w = np.arange(len(values))[keep], np.log(np.abs(values[keep])), values[keep] ** 2
    jm, ym = np.average(j, weights=w), np.average(y, weights=w)
    slope = np.sum(w * (j - jm) * (y - ym)) / np.sum(w * (j - jm) ** 2)
    return math.exp(slope)


def _fit(body, conv, sizes, d):
    """``(temperature, {axis: (start, step)})`` reading ``body`` as laid out by ``conv``: each axis'
    angles ``(start + step k) * T ** (-j / span)`` recovered from its sines and cosines along the
    axis (``step`` None for an axis of one patch; ``temperature`` None when nothing shows it)."""
    grid = body.reshape(*(sizes[a] for a in conv.flatten), d)
    counts = pair_counts(conv, d)
    lines, best = {}, (0.0, None)
    for axis, (sines, cosines) in column_slices(conv, d).items():
        where = [0] * len(conv.flatten)
        where[conv.flatten.index(axis)] = slice(None)
        line = grid[tuple(where)]
        sines, cosines = line[:, sines], line[:, cosines]  # fewer than counts[axis] where the source cuts its table
        pairs = min(sines.shape[1], cosines.shape[1])
        angles = np.arctan2(sines[:, :pairs], cosines[:, :pairs])
        lines[axis] = angles
        span = frequency_span(conv, counts[axis])
        for wrapped in (_wrap(angles[1] - angles[0]) if len(angles) > 1 else None, angles[0]):
            climbed = None if wrapped is None or len(wrapped) < 3 else _climb(wrapped)
            r = None if climbed is None else _ratio(climbed)
            # Not mutated: r = exp(slope) is never 0, and a slope of exactly 0 is no table's.
            weight = 0.0 if r is None or not 0 < r < 1 else float(np.sum(climbed**2))  # pragma: no mutate
            if weight > best[0]:
                best = (weight, r ** -span)
    temperature = best[1]
    fits = {}
    for axis, angles in lines.items():
        if not angles.shape[1]:  # the source cut off this axis's columns: nothing to read, nothing to object to
            fits[axis] = (0.0, None)
            continue
        r = (_DEFAULT_TEMPERATURE if temperature is None else temperature) ** (-1 / frequency_span(conv, counts[axis]))
        start = _climb(angles[0], r)[0]
        step = _climb(_wrap(angles[1] - angles[0]), r)[0] if len(angles) > 1 else None
        fits[axis] = (start, step)
    return temperature, fits


def _temperature(temperature):
    return {} if temperature is None or _near(temperature, _DEFAULT_TEMPERATURE) else {"temperature": _snap(temperature)}


def _index_positions(takes_temperature):
    """The sources whose positions are the patch indices: only the temperature may differ, where the source takes it."""
    def explain(temperature, fits, sizes):
        if not all(_near(start, 0) and (step is None or _near(step, 1)) for start, step in fits.values()):
            return None
        options = _temperature(temperature)
        return options if takes_temperature or not options else None
    return explain


def _detr(temperature, fits, sizes):
    """DETR: ``k + 1``, or normalised ``(k + 1 + offset) * scale / (n + 1e-6)`` (one scale and offset for both axes)."""
    options = _temperature(temperature)
    if all(_near(start, 1) and (step is None or _near(step, 1)) for start, step in fits.values()):
        return options
    scales = [step * (sizes[a] + 1e-6) for a, (_start, step) in fits.items() if step is not None]
    if not scales:
        return None
    scale = _snap(float(np.mean(scales)))
    if not scale > 0:
        return None
    offsets = [start * (sizes[a] + 1e-6) / scale - 1 for a, (start, _step) in fits.items()]
    offset = _snap(float(np.mean(offsets))) if not _near(float(np.mean(offsets)), 0.0) else 0.0
    if not all(_near(s, scale) for s in scales) or not all(_near(o, offset) for o in offsets):
        return None
    options |= {"normalize": True}
    if not _near(scale, 2 * math.pi):
        options["scale"] = scale
    if offset:
        options["offset"] = offset
    return options


def _diffusers(temperature, fits, sizes):
    """diffusers 2-D: ``(top + k) * ratio / M``, ``ratio = base_size / interpolation_scale``, ``M`` the size
    (no crop, ``top = 0``) or ``pos_embed_max_size`` (SD3's crop, ``top = (M - n) // 2``); 3-D: ``k / scale``."""
    if _temperature(temperature):
        return None
    steps = {a: step for a, (_start, step) in fits.items() if step is not None}
    moving = all(step > 1e-9 for step in steps.values())  # pragma: no mutate (>= for >: a float tie)
    if "t" in fits:
        spatial = [steps[a] for a in ("y", "x") if a in steps]  # an axis one patch long has no step
        if (not all(_near(start, 0) for start, _step in fits.values()) or not moving
                or not all(_near(step, spatial[0]) for step in spatial)):
            return None
        scales = {"spatial_interpolation_scale": 1 / spatial[0] if spatial else 1.0,
                  "temporal_interpolation_scale": 1 / steps.get("t", 1.0)}
        return {name: _snap(value) for name, value in scales.items() if not _near(value, 1.0)}
    if not steps or not moving:
        return None
    ratios = [step * sizes[a] for a, step in steps.items()]
    if all(_near(start, 0) for start, _step in fits.values()) and all(_near(r, ratios[0]) for r in ratios):
        ratio = _snap(ratios[0])
        return {} if _near(ratio, 16.0) else {"base_size": ratio}
    step = next(iter(steps.values()))
    tops = {a: start / step for a, (start, _step) in fits.items()}
    if not all(_near(s, step) for s in steps.values()) or not all(_near(t, round(t)) and round(t) >= 0 for t in tops.values()):
        return None
    largest = set.intersection(*({sizes[a] + 2 * round(t), sizes[a] + 2 * round(t) + 1} for a, t in tops.items()))
    if not largest:
        return None
    size = min(largest)
    return {"pos_embed_max_size": size, "base_size": _snap(step * size)}


# Each convention's reading of a fit: (temperature, {axis: (start, step)}, sizes) -> the options, under its
# source's names, that give those numbers ({}: its defaults), or None when none do.
_EXPLAIN: Registry[Callable[..., dict | None]] = Registry("convention")
_EXPLAIN.register("mae", _index_positions(False))  # MAE writes 10000 in its code
for _name in ("moco-v3", "rt-detr", "big_vision", "simple-vit", "timm"):
    _EXPLAIN.register(_name, _index_positions(True))
_EXPLAIN.register("detr", _detr)
_EXPLAIN.register("diffusers", _diffusers)
_EXPLAIN.register("positional-encodings", _index_positions(False))  # 10000 written in its code


def _label(name, layout, options):
    """A convention's label: its name, then the options that change its numbers, under the source's names."""
    shown = {k: v for k, v in (layout | options).items() if k != "cls_token"}
    if name == "diffusers" and "base_size" in shown:
        # base_size and interpolation_scale enter as their ratio only
        shown["base_size / interpolation_scale"] = shown.pop("base_size")
    parts = [f", {k}={v:.6g}" if isinstance(v, float) else f", {k}={v!r}" for k, v in shown.items()]
    return name + "".join(parts)


def _candidates(body, shape, d):
    """``(cost, label, table)`` for every convention: each laid out in each of its layouts, its options
    read off ``body`` (``_fit``) and named as its source names them, or else its positions passed by hand
    (cost ``_BY_HAND``); the default options too (cost 0), so the closest is always reported."""
    sizes = dict(zip(AXES_3D if len(shape) == 3 else AXES_2D, shape))
    out = []
    for name in _PRESETS:
        if len(shape) == 3 and name not in THREE_D:
            continue
        for layout in _LAYOUTS.get(name, [{}]):
            try:
                out.append((0, _label(name, layout, {}), grid_encoding(shape, d, convention=name, dtype=np.float64, **layout)))
            except ValueError:
                continue  # d this source cannot build (e.g. big_vision at d=4)
            conv, _prefix, _opts = _options(name, len(shape), dict(layout))
            temperature, fits = _fit(body, conv, sizes, d)
            options = _EXPLAIN[name](temperature, fits, sizes)
            if options:
                build = dict(layout, **options)
                cost = len(options)
            elif options is None:
                build = dict(layout, **_temperature(temperature))
                if "temperature" in build and "temperature" not in inspect.signature(_PRESETS[name].build).parameters:
                    continue  # pragma: no mutate (break is the same: the conventions without a temperature have one layout each)
                build["positions"] = [start + (step or 0.0) * np.arange(sizes[a]) for a, (start, step) in fits.items()]
                cost = _BY_HAND + len(build) - len(layout) - 1
            else:
                continue  # the defaults, built above
            # A net: the readers above return only options grid_encoding takes (no fuzzed table reached it).
            with contextlib.suppress(ValueError, TypeError):  # pragma: no mutate
                table = grid_encoding(shape, d, convention=name, dtype=np.float64, **build)
                if "positions" in build:
                    by_hand = "; ".join(f"{a}: {s:.6g} + {t or 0.0:.6g} k" for a, (s, t) in fits.items())
                    label = _label(name, layout, _temperature(temperature)) + f", positions ({by_hand})"
                else:
                    label = _label(name, layout, options)
                out.append((cost, label, table))
    return out


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
    reported, not compared. Every convention, in each layout its options give (timm's
    ``reverse_coord`` and ``interleave_sin_cos``), is fitted to the table: the temperature and each
    axis' positions ``start + step * k`` are read off its angles, then named as the source names
    them (``temperature``; DETR's ``normalize``, ``scale``, ``offset``; diffusers' ``base_size /
    interpolation_scale``, ``pos_embed_max_size``, its 3-D scales) or else given as positions
    passed by hand. Each is rebuilt in float64 and kept if within ``TOLERANCE`` everywhere; of
    those, the ones with fewest options changed from the source's defaults (a name before
    positions by hand) are the matches. Returns a ``GridIdentification``, whose ``str()`` is in
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
    candidates = _candidates(np.asarray(body, np.float64), shape, d) if d % 4 == 0 else []
    if not candidates:
        return GridIdentification((), prefix, zeros, _("none (d is not a multiple of 4)"), math.inf)
    deviations = [(_deviation(t, body), cost, label) for cost, label, t in candidates]
    best, _cost, closest = min(deviations)
    fitting = [(cost, label) for dev, cost, label in deviations if dev <= TOLERANCE]  # pragma: no mutate (< for <=: a float tie)
    cheapest = min((cost for cost, _label in fitting), default=0)
    matches = tuple(dict.fromkeys(label for cost, label in fitting if cost == cheapest))
    return GridIdentification(matches, prefix, zeros, closest, best)


# The grid mistakes diagnose_grid looks for: each rebuilds a convention's table the wrong way.
def _variant(name, shape, d, options, change):
    # The convention's table with one of its fields changed by ``change`` (no prefix rows).
    conv, _prefix, opts = _options(name, len(shape), dict(options))
    return _table(change(conv), opts, shape, d, np.float64)


def _shape_swapped(name, shape, d, options):
    return _variant(name, shape[::-1], d, options, lambda c: c)


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
    names = list(_PRESETS) if convention is None else [_PRESETS.check(convention)]
    h, w = shape
    findings, mistakes = [], []
    for name in names:
        opts = {k: v for k, v in options.items() if k != "cls_token"}
        try:
            right = grid_encoding(shape, d, convention=name, dtype=np.float64, **opts)[-h * w :]
        except (ValueError, TypeError):
            if convention is not None:  # the learner's own convention and options: say what is wrong with them
                raise
            continue  # of every convention, those that take these options at this width
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
            # Not mutated: < for <= (or back) differs only at a deviation of exactly TOLERANCE.
            if _deviation(wrong, body) <= TOLERANCE < _deviation(wrong, right):  # pragma: no mutate
                found.append(_(text).format(convention=name, width=w, height=h, order=order))
                mistakes.append((name, mistake))
        if h == w and len(found) == 2:  # on a square grid the two order mistakes come together, or not at all
            # Translators: {convention}: a grid convention's name, e.g. mae.
            found.append(_("{convention}: on a square grid these mistakes write the same table; a non-square grid tells "
                           "them apart").format(convention=name))
        findings += found
    return GridDiagnosis(identification, tuple(findings), tuple(mistakes))
