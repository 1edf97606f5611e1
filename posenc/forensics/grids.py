"""Which grid convention wrote a table (``identify_grid``), and which grid mistake (``diagnose_grid``)."""

import contextlib
import dataclasses
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..language import N_, _, get_language, using_language
from ..sinusoidal.grid import _PRESETS, _check_shape, _options, _table, grid_encoding
from . import identification

__all__ = ["GridDiagnosis", "GridIdentification", "diagnose_grid", "identify_grid"]

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
    names = list(_PRESETS) if convention is None else [_PRESETS.check(convention)]
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
