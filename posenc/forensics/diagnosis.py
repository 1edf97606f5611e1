"""Why doesn't my table match the lecture? Fit the paper's formula, mistakes included, to a table.

The mistakes learners make writing

    PE(pos, 2i) = sin(pos / 10000^(2i/d)),   PE(pos, 2i+1) = cos(pos / 10000^(2i/d))

are few, and each changes one piece of the formula. An ``Explanation`` holds those pieces
as data, and ``diagnose`` fits them to a table (or to what is known of it, from a
summarised print):

- which way the table lies (``transposed``: ``(d_model, length)``);
- which columns hold sines and which cosines: the table's ``layout`` (``posenc.LAYOUTS``:
  the paper's "interleaved", or the concatenated conventions "sin_cos" and "cos_sin"), and
  whether sine and cosine trade places (``swapped``, the mistake: cosines at even columns);
- the exponent of column ``k`` (``exponent``): ``2i/d`` for pair ``i = k // 2`` (the
  paper), ``k/d`` or ``2k/d`` per column, or an integer division (``2i // d``, ``2k // d``)
  that rounds it down to 0;
- whether the position is divided by ``base ** e`` or multiplied (``multiplied``);
- the ``d`` in the exponent (``d_model``: the width, or one more or one less when a column
  is missing or extra), the ``base``, and the position of row 0 (``offset``).

Every combination is tried; the base is read off each column's frequency (three
consecutive rows give it: ``x[r-1] + x[r+1] = 2 cos(w) x[r]``; a sine and its cosine give
it too, through the slope of ``atan2(sin, cos)``), the offset off the slowest sine. A
combination explains the table when every known entry is within what the data's own
rounding allows plus what float32 arithmetic drifts by (``1e-5 + 1e-6 |angle|``; for a
float16 or bfloat16 table, its rounding ``u`` and ``4 u |angle|``). Among those, the one
with the fewest and smallest mistakes is reported.

Published code adds a few changes outside the formula, undone before fitting when nothing
fits as the table is: a zero row (a padding row, ``zero_pad`` or ``padding_idx``), a zero
column (an odd width padded), and a constant factor or shift (``x * sqrt(d_model)``, or a
table standardised to a mean and a standard deviation), read off row 0, where the paper's
sines are 0 and its cosines 1. When still nothing fits, the answer is "unknown", with the
nearest explanation and the entry where the table departs most from it.
"""

import contextlib
import dataclasses
import functools
import math
from typing import Any

import numpy as np

from ..engine import checks
from ..language import N_, _, get_language, using_language
from ..sinusoidal import conventions, layouts, tables
from . import identification
from .printed import HALF_PRECISION, Entries, half_tolerance, parse_printed

__all__ = ["CATALOG", "Diagnosis", "Explanation", "Finding", "diagnose"]

#: Every code a ``Finding`` may carry.
CATALOG = (
    "matches",
    "swapped_sin_cos",
    "exponent_per_column",
    "wrong_base",
    "exponent_scaled",
    "integer_division",
    "multiplied_not_divided",
    "position_offset",
    "transposed",
    "layout",
    "float32_precision",
    "half_precision",
    "extra_column",
    "missing_column",
    "zero_row",
    "zero_column",
    "scaled",
    "unknown",
)
# (layout, swapped) pairs tried, in this order; a swapped concatenated layout is the other one.
ARRANGEMENTS = (("interleaved", False), ("interleaved", True), ("sin_cos", False), ("cos_sin", False))
EXPONENTS = ("pair", "column", "double_column", "pair_floor", "column_floor")
PAPER_BASE = 10000.0
# One or two float32 roundings of a value in [-1, 1] (posenc's float32 table is within 2e-7: the accuracy contract).
CLEAN = 2e-6
# float32 drift smaller than this (invisible at the 4 or 5 decimals lectures print) is not reported.
VISIBLE = 1e-5
# What float32 code drifts by: its angle p * w is rounded, and w through a float32 exponent;
# exp(2i/d * ln 10000) rounds its argument (up to 9.2) to 5e-7, which a position multiplied
# by w (up to 10000) carries into the angle: 1e-6 per radian.
DRIFT, DRIFT_PER_RADIAN = 1e-5, 1e-6
# A half-precision table drifts by its own rounding u, and by about 4 u per radian of angle
# when the angles themselves were computed in that precision.
HALF_DRIFT_PER_UNIT = 4
# Entries allowed to be off by more than this say nothing (huge float32 angles).
UNINFORMATIVE = 0.1
# Rows a column's frequency is read from (least squares over consecutive rows): enough for its
# rounding to average out, few enough to stay cheap on long tables.
FREQUENCY_ROWS = 64
# How much each departure from the paper counts when several explanations fit.
_COSTS = {"transposed": 1, "swapped_sin_cos": 1, "layout": 0.5, "exponent_per_column": 1,
          "integer_division": 1, "multiplied_not_divided": 1, "extra_column": 1,
          "missing_column": 1, "wrong_base": 1.5, "position_offset": 1}
_PROBE_ROWS, _PROBE_COLUMNS = 24, 64


@dataclasses.dataclass(frozen=True)
class Explanation:
    """The paper's formula with the pieces a mistake changes (module docstring).

    ``d_model`` is the ``d`` in the exponent (None: the table's width). ``table`` builds
    the values it predicts at ``rows`` (shape ``(R,)``, positions ``offset + rows``) and
    ``columns`` (``(K,)``) of a table ``width`` columns wide: ``(R, K)`` float64.
    """

    transposed: bool = False
    layout: str = "interleaved"
    exponent: str = "pair"
    multiplied: bool = False
    d_model: int | None = None
    base: float = PAPER_BASE
    offset: int = 0
    swapped: bool = False

    @functools.lru_cache(maxsize=4096)  # the fit asks each candidate several times; read-only
    def columns(self, width):
        """``(is_sine, exponent)`` of every column: bool and float64, shape ``(width,)``."""
        k = np.arange(width)
        if self.layout == "interleaved":
            pair, is_sine = k // 2, (k % 2 == 0) ^ self.swapped
        elif self.layout == "sin_cos":
            is_sine = k < (width + 1) // 2
            pair = np.where(is_sine, k, k - (width + 1) // 2)
        else:
            is_sine = k >= width // 2
            pair = np.where(is_sine, k - width // 2, k)
        d = self.d_model or width
        index = 2 * pair if self.exponent in ("pair", "pair_floor") else k
        if self.exponent == "double_column" or self.exponent == "column_floor":
            index = 2 * k
        exponent = index // d if self.exponent.endswith("floor") else index / d
        return is_sine, exponent.astype(np.float64)  # pragma: no mutate (astype(None) is float64 too)

    def frequencies(self, exponent):
        return np.power(self.base, exponent if self.multiplied else -exponent)

    def angles(self, rows, columns, width):
        exponent = self.columns(width)[1]
        return (self.offset + np.asarray(rows, np.float64))[:, None] * self.frequencies(exponent[columns])

    def table(self, rows, columns, width):
        is_sine = self.columns(width)[0][columns]
        theta = self.angles(rows, columns, width)
        return np.where(is_sine, np.sin(theta), np.cos(theta))

    def float32_table(self, rows, columns, width):
        """The same table the way float32 code computes it: float32 positions divided by
        (or multiplied by) float32 ``np.power(base, exponent)``, sin and cos in float32."""
        is_sine, exponent = self.columns(width)
        scale = np.power(np.float32(self.base), exponent[columns].astype(np.float32))
        p = (self.offset + np.asarray(rows)).astype(np.float32)[:, None]
        theta = p * scale if self.multiplied else p / scale
        values = np.where(is_sine[columns], np.sin(theta), np.cos(theta))
        return values.astype(np.float64)  # pragma: no mutate (astype(None) is float64 too)

    def codes(self, width):
        """The catalog codes of the mistakes (and conventions) this explanation holds."""
        found = []
        if self.transposed:
            found.append("transposed")
        if self.swapped:
            found.append("swapped_sin_cos")
        if self.layout != "interleaved":
            found.append("layout")
        if self.exponent in ("column", "double_column"):
            found.append("exponent_per_column")
        elif self.exponent.endswith("floor"):
            found.append("integer_division")
        if self.multiplied and self.exponent != "pair_floor":
            found.append("multiplied_not_divided")
        if self.d_model is not None and self.d_model != width:
            found.append("extra_column" if self.d_model < width else "missing_column")
        if self.base != PAPER_BASE and self.exponent != "pair_floor":
            found.append("wrong_base")
        if self.offset != 0:
            found.append("position_offset")
        return found

    def is_convention(self, width):
        """True when nothing here is a mistake: the paper's table, or a concatenated layout of it."""
        return set(self.codes(width)) <= {"layout"}

    def cost(self, width):
        # A base as read (not rounded to three digits) counts a little more: round ones first.
        rounded = self.base == float(f"{self.base:.3g}")
        return sum(_COSTS[code] for code in self.codes(width)) + (0 if rounded else 0.01)


@dataclasses.dataclass(frozen=True)
class Finding:
    """One thing ``diagnose`` found: ``code`` (from ``CATALOG``), a ``message`` a learner can
    act on, and ``details`` (the numbers behind it: base, first position, permutation...).
    The message is in the language of the ``diagnose`` call; the code and details are not translated."""

    code: str
    message: str
    details: dict = dataclasses.field(default_factory=dict, compare=False)

    def to_dict(self) -> dict[str, Any]:
        return {"code": self.code, "message": self.message, **self.details}


@dataclasses.dataclass(frozen=True)
class Diagnosis:
    """What ``diagnose`` found about a table.

    ``findings``: a tuple of ``Finding`` (several may combine, e.g. "wrong_base" and
    "transposed"); ``explanation``: the fitted ``Explanation`` (None for "unknown" and for a
    named convention outside the paper's family); ``max_deviation``: the largest absolute
    difference between the known entries and what the explanation predicts (for "unknown":
    the nearest explanation's); ``shape``: the table's 2-D shape; ``alternatives``: the code
    lists of other explanations that fit equally well. ``str()`` is the plain-words account.
    ``language``: the language of the messages (``posenc.language``; None: the locale's), the
    one current when the diagnosis was made; ``str()`` is in it too.
    """

    findings: tuple
    shape: tuple
    max_deviation: float
    explanation: Explanation | None = None
    alternatives: tuple = ()
    language: str | None = dataclasses.field(default_factory=get_language, compare=False, repr=False)

    @property
    def codes(self) -> list[str]:
        return [finding.code for finding in self.findings]

    @property
    def matches_paper(self) -> bool:
        """True when the table is the paper's (float32 rounding allowed), as it lies."""
        named = [f for f in self.findings if f.code == "matches"]
        return bool(named) and "paper" in named[0].details["conventions"] and set(self.codes) <= {
            "matches", "float32_precision"}

    def __str__(self) -> str:
        with using_language(self.language):
            if self.matches_paper:
                head = _("This is the paper's table.")
            elif "unknown" in self.codes:
                head = _("Nothing in the catalog explains this table.")
            elif self.codes != ["matches"]:
                head = _("This is not the paper's table:")
            else:
                head = _("A known convention:")
            lines = [head, *(f"- {f.code}: {f.message}" for f in self.findings)]
            for codes in self.alternatives:
                # Translators: {codes} lists the codes of another explanation that fits as well, e.g.
                # "swapped_sin_cos, position_offset", or is "the paper itself" (translated on its own).
                lines.append("  " + _("(as well explained by: {codes})").format(codes=", ".join(codes) or _("the paper itself")))
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        return {
            "matches_paper": self.matches_paper,
            "shape": list(self.shape),
            "max_deviation": self.max_deviation,
            "findings": [f.to_dict() for f in self.findings],
            "alternatives": [list(codes) for codes in self.alternatives],
        }


def diagnose(table: Any, *, shape: tuple[int, ...] | None = None, language: str | None = None) -> Diagnosis:
    """Say what ``table`` is: the paper's positional encoding, a known convention, or which mistakes.

    ``table``: a 2-D NumPy array, torch or TF tensor (``(length, d_model)``, or transposed;
    leading axes of length 1 are dropped), a nested list, or text copied from a notebook
    output (``posenc.printed.parse_printed``: NumPy, torch and TF prints, summarised ones
    too; ``shape`` gives the full shape when the text does not). Returns a ``Diagnosis``
    whose ``findings`` carry codes from ``CATALOG`` and whose ``str()`` says what to change.
    A float16 or bfloat16 table (or a print naming one) is fitted within that precision's
    rounding and gets a "half_precision" finding.

    ``language``: the language of the messages for this call ("en", "pt_BR" or "zh_CN"); None:
    the one ``posenc.set_language`` chose (English unless changed). The codes stay English.
    """
    with _speaking(language):
        return _diagnose_table(table, shape)


def _speaking(language):
    """The context of a call's ``language=`` argument: that language, or (None) the current one."""
    return contextlib.nullcontext() if language is None else using_language(language)


def _diagnose_table(table, shape):
    entries = _entries(table, shape)
    # Values near the float64 limits (a finite table may hold 1e300) overflow squares and
    # products: those readings come out inf or NaN and fit nothing, which is the answer.
    with np.errstate(all="ignore"):
        found = _diagnose(entries)
        if found.codes == ["unknown"]:
            found = _repaired(entries) or found
    if entries.dtype in HALF_PRECISION and "unknown" not in found.codes:
        found = dataclasses.replace(found, findings=(*found.findings, _half_finding(entries, found)))
    return found


def _diagnose(entries):
    """The ``Diagnosis`` of ``entries`` as they are (no zero line set aside, no rescaling)."""
    fits, nearest = _fit(entries)
    if not fits or not fits[0].is_convention(_width(fits[0], entries)):
        # A preset outside the paper's family can pass for a mistake: tensor2tensor's "h-1"
        # frequencies are the paper's with another base. The named convention wins.
        named = _named_conventions(entries)
        if named:
            return named
    if not fits:
        return _unknown(entries, nearest)
    best, width = fits[0], _width(fits[0], entries)
    oriented = entries.transposed() if best.transposed else entries
    deviation = _deviation(best, oriented)
    findings = [_finding(code, best, oriented) for code in best.codes(width)]
    if best.is_convention(width):
        names = _preset_names(oriented, 0)[0]
        if names:
            findings.insert(0, _matches(names))
        # The drift of float32 arithmetic is news only about a table without mistakes to fix
        # (and a half-precision table's drift is that precision's, named by diagnose).
        drift = _float32_finding(best, oriented, deviation) if entries.dtype is None else None
        if drift:
            findings.append(drift)
    alternatives = [tuple(best.codes(width))]  # the code lists of equally cheap fits, best's first
    for other in fits[1:]:
        codes = tuple(other.codes(_width(other, entries)))
        if other.cost(_width(other, entries)) == best.cost(width) and codes not in alternatives:
            alternatives.append(codes)
    alternatives = alternatives[1:]
    return Diagnosis(tuple(findings), tuple(entries.shape), float(np.abs(deviation).max()), best, tuple(alternatives))


# --- the input ---------------------------------------------------------------------------


def _entries(table, shape):
    if isinstance(table, str):
        return parse_printed(table, shape)
    array, dtype = _as_array(table)
    if array.ndim > 2:  # (1, L, d) from Keras code, (L, 1, d) from the PyTorch tutorial
        array = array.reshape([n for n in array.shape if n != 1] or [1])
    if array.ndim == 1:
        array = array[None, :]
    if array.ndim != 2 or 0 in array.shape:
        raise ValueError(f"table must be a non-empty 2-D table (length, d_model), got shape {array.shape}")
    if not np.isfinite(array).all():
        raise ValueError("table must be finite, got NaN or infinity")
    if shape is not None and (not isinstance(shape, tuple | list) or tuple(shape) != array.shape):
        raise ValueError(f"shape must be the table's own shape {array.shape} for an array, got {checks.shown(shape)}")
    rows, columns = np.arange(array.shape[0]), np.arange(array.shape[1])
    return Entries(array, rows, columns, array.shape, half_tolerance(array, dtype), dtype)


def _as_array(table):
    """``(float64 array, "float16" / "bfloat16" or None)``; torch and TF tensors without importing them."""
    module = type(table).__module__.split(".")[0]
    if module == "torch":
        table = table.detach().cpu()
        if str(table.dtype) == "torch.bfloat16":
            return table.double().numpy(), "bfloat16"
        table = table.numpy()
    elif module in ("tensorflow", "keras", "tf_keras") and hasattr(table, "numpy"):
        table = table.numpy()
    try:
        array = np.asarray(table)
        dtype = str(array.dtype) if str(array.dtype) in HALF_PRECISION else None  # ml_dtypes' bfloat16 too
        if array.dtype.kind != "c":  # astype would drop imaginary parts with a mere warning
            return array.astype(np.float64), dtype  # pragma: no mutate (astype(None) is float64 too)
    except (TypeError, ValueError) as error:
        raise TypeError(
            f"table must be an array, tensor, list or printed text, got {type(table).__name__}"
        ) from error
    raise TypeError(f"table must hold real numbers, got an array of {array.dtype}")


# --- the fit ---------------------------------------------------------------------------


def _drift(entries):
    """``(constant, per radian)``: what code computing in the table's precision drifts by."""
    unit = HALF_PRECISION.get(entries.dtype)
    return (DRIFT, DRIFT_PER_RADIAN) if unit is None else (unit, HALF_DRIFT_PER_UNIT * unit)


def _allowed(entries, angles):
    """How far each known entry may be from a value computed from ``angles``: the data's own
    rounding, then what float32 (or half-precision) code drifts by (module docstring)."""
    constant, per_radian = _drift(entries)
    return entries.tolerance + CLEAN + constant + per_radian * np.abs(angles)


def _excess(explanation, entries):
    """``(ratio, deviation)``: the largest ``|deviation| / allowed`` over the known entries
    (<= 1: it fits; inf when too few entries are informative) and the largest ``|deviation|``."""
    worst, largest, informative = 0.0, 0.0, 0
    for start in range(0, len(entries.rows), 2048):
        whole = len(entries.rows) <= 2048
        part = entries if whole else entries.take(np.arange(start, min(start + 2048, len(entries.rows))),
                                                  np.arange(len(entries.columns)))
        allowed = _allowed(part, explanation.angles(part.rows, part.columns, part.shape[1]))
        deviation = np.abs(part.values - explanation.table(part.rows, part.columns, part.shape[1]))
        worst = max(worst, float((deviation / allowed).max()))
        largest = max(largest, float(deviation.max()))
        informative += int((allowed < UNINFORMATIVE).sum())
    # Half of them; two thirds in half precision, whose drift let a far offset make half of a
    # float16 table uninformative and fit the rest (a float32 table multiplied where it should
    # divide needs half: its fast columns turn by 1e5 radians and say nothing).
    needed = 2 / 3 if entries.dtype in HALF_PRECISION else 1 / 2
    return (worst if informative >= needed * entries.values.size else math.inf), largest


def _deviation(explanation, entries):
    return entries.values - explanation.table(entries.rows, entries.columns, entries.shape[1])


def _probe(entries):
    """A few rows (the first ones and some spread over the rest) and columns to fit on."""
    n_rows, n_columns = len(entries.rows), len(entries.columns)
    rows = np.unique(np.concatenate([np.arange(min(n_rows, _PROBE_ROWS // 2)),
                                     np.linspace(0, n_rows - 1, _PROBE_ROWS // 2).round().astype(int)]))
    columns = np.arange(n_columns)
    if n_columns > _PROBE_COLUMNS:
        # 16 at each end and the rest spread: a sample, its size a judgement (one more column is as good).
        columns = np.unique(np.concatenate([columns[:16], columns[-16:],  # pragma: no mutate
                                            np.linspace(0, n_columns - 1, _PROBE_COLUMNS - 32).round().astype(int)]))
    return entries.take(rows, columns)


def _fit(entries):
    """``(fits, nearest)``: the explanations that fit, best first, and the nearest one (None
    when something fits). Candidates are tried cheapest first; once one fits, dearer ones are
    not tried."""
    candidates = []
    for transposed in (False, True):
        oriented = entries.transposed() if transposed else entries
        probe, frequencies = _probe(oriented), _column_frequencies(oriented)
        candidates += [(candidate.cost(oriented.shape[1]), candidate, oriented, probe)
                       for candidate in _candidates(oriented, frequencies, transposed)]
    candidates.sort(key=lambda c: c[0])  # stable: the order of _candidates among equals
    scored, fits = [], []
    for cost, candidate, oriented, probe in candidates:
        if fits and cost > fits[0][0]:
            break
        excess, largest = _excess(candidate, probe)
        scored.append((cost, excess, largest, candidate))
        if excess <= 1 and _excess(candidate, oriented)[0] <= 1:
            fits.append((cost, excess, candidate))
    fits.sort(key=lambda f: f[:2])
    nearest = min((s for s in scored if s[1] < math.inf), key=lambda s: (s[2], s[0]), default=scored[0])[3]
    return [f[2] for f in fits], nearest


def _width(explanation, entries):
    return entries.shape[0] if explanation.transposed else entries.shape[1]


def _candidates(entries, frequencies, transposed):
    """Every structure (layout, exponent, divide or multiply, ``d``), with bases and offsets read off."""
    width = entries.shape[1]
    for layout, swapped in ARRANGEMENTS:
        for exponent in EXPONENTS:
            if exponent in ("column", "double_column", "column_floor") and layout != "interleaved":
                continue
            for multiplied in (False, True):
                if exponent == "pair_floor" and multiplied:
                    continue
                for d_model in (width, width - 1, width + 1) if exponent == "pair" else (width,):
                    if d_model < 1:
                        continue
                    structure = Explanation(transposed, layout, exponent, multiplied, d_model, swapped=swapped)
                    for base in _bases(structure, entries, frequencies):
                        fitted = dataclasses.replace(structure, base=base)
                        for offset in _offsets(fitted, entries):
                            yield dataclasses.replace(fitted, offset=offset)


def _column_frequencies(entries):
    """Each known column's angular frequency in ``[0, pi]`` from consecutive known rows
    (``x[r-1] + x[r+1] = 2 cos(w) x[r]``, least squares); NaN where it cannot be read."""
    rows = entries.rows
    middle = np.flatnonzero((np.isin(rows - 1, rows)) & (np.isin(rows + 1, rows)))[:FREQUENCY_ROWS]
    if len(middle) == 0:
        return np.full(len(entries.columns), np.nan)
    where = {row: n for n, row in enumerate(rows)}
    before = [where[rows[n] - 1] for n in middle]
    after = [where[rows[n] + 1] for n in middle]
    x = entries.values
    power = (x[middle] ** 2).sum(axis=0)
    cosine = (x[middle] * (x[before] + x[after])).sum(axis=0) / np.where(power > 1e-6, 2 * power, np.nan)
    return np.arccos(np.clip(cosine, -1, 1))


def _bases(structure, entries, frequencies):
    """10000, then (for a divided exponent of the table's own width) the base read off the
    column frequencies, rounded to one, two and three significant digits, and as read."""
    bases = [PAPER_BASE]
    if structure.multiplied or structure.d_model != entries.shape[1] or structure.exponent.endswith("floor"):
        return bases
    exponent = structure.columns(entries.shape[1])[1]
    exponent = exponent[entries.columns]
    # Slower columns read worse (their second differences drown in rounding or noise): read
    # up to the first column, by exponent, whose frequency is below 0.02.
    order = np.argsort(exponent, kind="stable")
    slow = np.flatnonzero((exponent[order] > 0) & ~(frequencies[order] >= 0.02))
    usable = np.zeros(len(exponent), bool)
    usable[order[: slow[0] if len(slow) else len(order)]] = True
    usable &= (exponent > 0) & (frequencies < 2.5)
    readings = [float(np.median(-np.log(frequencies[usable]) / exponent[usable]))] if usable.any() else []
    readings.append(_pair_log_base(structure, entries))
    for log_read in readings:
        # Compared as a log: a tiny exponent over a garbled frequency overflows math.exp (a
        # published table of powers of the position did, 100 x 512). The largest base a slip
        # gives is 8i/d's, 10000 ** 4 = 1e16.
        if 0.0 < log_read < math.log(1e17):
            read = math.exp(log_read)
            # Printed digits blur the reading: round numbers near it come first.
            for base in (float(f"{read:.1g}"), float(f"{read:.2g}"), float(f"{read:.3g}"), read,
                         _refined_base(structure, entries, read)):
                if base > 1.0 and all(abs(base / known - 1) > 1e-12 for known in bases):
                    bases.append(base)
    return bases


def _refined_base(structure, entries, base):
    """``base`` made exact on the entry whose angle it sets most (largest ``angle * exponent``,
    value away from +-1), positions from 0: the angle there is the branch of asin/acos of
    the value nearest to what ``base`` predicts. A base read off second differences of float32
    values is off by 1e-5, which a slow column of a 50-row table already shows; NaN if none."""
    is_sine, exponent = (a[entries.columns] for a in structure.columns(entries.shape[1]))
    predicted = entries.rows[:, None] * np.power(base, -exponent)[None, :]
    # 0.9: away from the flat top of sin and cos, where asin/acos amplify the rounding; a value
    # of exactly 0.9 is as good as its neighbours.
    leverage = np.where((np.abs(entries.values) < 0.9) & (exponent > 0), predicted * exponent, 0.0)  # pragma: no mutate
    leverage[leverage > 100] = 0.0  # where a 1e-3 error in the base would change the branch
    a, b = np.unravel_index(np.argmax(leverage), leverage.shape)
    if leverage[a, b] == 0:
        return math.nan
    x = float(entries.values[a, b])
    first = math.asin(x) if is_sine[b] else math.acos(x)
    second = math.pi - first if is_sine[b] else -first
    turns = np.round((predicted[a, b] - np.array([first, second])) / (2 * math.pi))
    candidates = np.array([first, second]) + 2 * math.pi * turns
    angle = candidates[np.argmin(np.abs(candidates - predicted[a, b]))]
    return math.exp(-math.log(angle / entries.rows[a]) / exponent[b]) if angle > 0 else math.nan


def _pair_log_base(structure, entries):
    """``ln(base)`` read off the slowest sine whose cosine is known too: the slope of the
    unwrapped ``atan2(sin, cos)`` down the rows is its frequency ``base ** -e`` (NaN if none).
    Unlike second differences it reads slow columns (``w`` of 1e-3) from float values."""
    is_sine, exponent = (a[entries.columns] for a in structure.columns(entries.shape[1]))
    pairs = [(exponent[k], k, partner[0]) for k in np.flatnonzero(is_sine & (exponent > 0))
             for partner in [np.flatnonzero(~is_sine & (exponent == exponent[k]))] if len(partner)]
    if not pairs or len(entries.rows) < 2:
        return math.nan
    e, sine, cosine = max(pairs)
    angle = np.unwrap(np.arctan2(entries.values[:, sine], entries.values[:, cosine]))
    rows = entries.rows - entries.rows.mean()  # centred: the fit needs no intercept
    slope = float(rows @ angle / (rows @ rows))
    return -math.log(slope) / e if slope > 0 else math.nan


def _offsets(explanation, entries):
    """0 and 1, and the offset read off the slowest sine column: its angle (``atan2`` with the
    cosine of the same frequency, or ``asin``) over its frequency, less the row."""
    offsets = [0, 1]
    is_sine, exponent = (a[entries.columns] for a in explanation.columns(entries.shape[1]))
    w = explanation.frequencies(exponent)
    sines = np.flatnonzero(is_sine & (w < 0.5))
    if len(sines):
        k = sines[np.argmin(w[sines])]
        x = entries.values[:, k]
        partner = np.flatnonzero(~is_sine & (exponent == exponent[k]))
        if len(partner):
            # Unwrapped down the rows: an angle crossing pi inside the table (position 100 and
            # on at base 500) would otherwise split the reading in two.
            angle, usable = np.unwrap(np.arctan2(x, entries.values[:, partner[0]])), np.ones(len(x), bool)
        else:
            # 0.9: away from the flat top of sin, as in _refined_base; exactly 0.9 is as good as its neighbours.
            usable = np.abs(x) < 0.9  # pragma: no mutate
            angle = np.arcsin(np.clip(x, -1, 1))
        if usable.any():
            read = float(np.median(angle[usable] / w[k] - entries.rows[usable]))
            if abs(read) < 1e7:
                offsets += [round(read) + step for step in (-1, 0, 1)]
    return list(dict.fromkeys(offsets))


# --- the findings ---------------------------------------------------------------------------


def _float32_finding(explanation, entries, deviation):
    """"float32_precision" when some entries are off by more than float32 rounding (but
    within float32 drift): how large, from which row, and how close float32 code comes."""
    beyond = np.abs(deviation) > entries.tolerance + VISIBLE
    if not beyond.any():
        return None
    row = int(entries.rows[np.flatnonzero(beyond.any(axis=1))[0]])
    size = float(np.abs(deviation).max())
    route = np.abs(entries.values - explanation.float32_table(entries.rows, entries.columns, entries.shape[1])).max()
    # float32 code rounds differently from one route to another (pow or exp, divide or
    # multiply): the route rebuilt here is named only when it lands close.
    # 1:10 is a judgement (a route that lands an order of magnitude closer); no ratio is exactly it.
    values = dict(size=f"{size:.1e}", visible=f"{VISIBLE:.0e}", row=row, position=row + explanation.offset, route=f"{route:.1e}")
    if route < size / 10:  # pragma: no mutate
        # Translators: {size}: the largest difference from the exact values; {visible}: the smallest
        # one reported (1e-05); {row} and {position}: the first row beyond it and its position;
        # {route}: how close float32 code for the formula comes to the table.
        text = _("the values drift from the exact ones by up to {size}, beyond {visible} from row {row} (position "
                 "{position}) on: float32 angles p * w lose digits as p grows (float32 code for the formula reproduces "
                 "it to {route}); not a mistake, but compute the angles in float64 (or use "
                 "posenc.positional_encoding) if it matters")
    else:
        # Translators: {size}: the largest difference from the exact values; {visible}: the smallest
        # one reported (1e-05); {row} and {position}: the first row beyond it and its position.
        text = _("the values drift from the exact ones by up to {size}, beyond {visible} from row {row} (position "
                 "{position}) on: float32 angles p * w lose digits as p grows; not a mistake, but compute the angles "
                 "in float64 (or use posenc.positional_encoding) if it matters")
    message = text.format(**values)
    return Finding("float32_precision", message, {"max_deviation": size, "from_row": row,
                                                  "float32_route_deviation": float(route)})


def _list(numbers, limit=3):
    shown = [str(n) for n in numbers[:limit]]
    return ", ".join(shown + (["..."] if len(numbers) > limit else []))


def _finding(code, explanation, entries, odd="sine"):
    """The ``Finding`` for ``code`` in the fitted ``explanation`` (``entries`` as it lies;
    ``odd``: how an odd width was filled, for the layout's permutation)."""
    length, width = entries.shape
    d = explanation.d_model or width
    if code == "transposed":
        # Translators: {width}: the number of columns of the encoding (d_model); {length}: the
        # number of positions.
        text = _("the table is transposed: its {width} columns of the encoding run down the rows and its {length} "
                 "positions across; the paper's table is (length, d_model) = ({length}, {width}): transpose it (.T)")
        return Finding(code, text.format(width=width, length=length), {"shape": [width, length]})
    if code == "swapped_sin_cos":
        is_sine = explanation.columns(width)[0]
        cosines, sines = np.flatnonzero(~is_sine), np.flatnonzero(is_sine)
        # Translators: {cosines} and {sines}: lists of column numbers, e.g. "0, 2, 4, ...".
        text = _("columns {cosines} hold cosines and {sines} sines: sin and cos are swapped; swap the two "
                 "assignments (sin goes to the even columns 0::2, cos to 1::2)")
        return Finding(code, text.format(cosines=_list(cosines), sines=_list(sines)))
    if code == "layout":
        perm = layouts.layout_permutation(width, explanation.layout, "interleaved", odd=odd).tolist()
        if explanation.layout == "sin_cos":
            # Translators: {layout}: the layout's name in quotes, e.g. 'sin_cos'; {permutation}: column
            # numbers.
            text = _("the columns are concatenated (all sines, then all cosines: layout {layout}), a convention, not a "
                     "mistake; table[:, perm] puts them in the paper's interleaved order, perm = [{permutation}] "
                     "(posenc.convert_layout(table, {layout}, 'interleaved'))")
        else:
            # Translators: {layout}: the layout's name in quotes, e.g. 'cos_sin'; {permutation}: column
            # numbers.
            text = _("the columns are concatenated (all cosines, then all sines: layout {layout}), a convention, not a "
                     "mistake; table[:, perm] puts them in the paper's interleaved order, perm = [{permutation}] "
                     "(posenc.convert_layout(table, {layout}, 'interleaved'))")
        return Finding(code, text.format(layout=repr(explanation.layout), permutation=_list(perm, 6)),
                       {"layout": explanation.layout, "permutation": perm})
    if code == "exponent_per_column":
        form = "k/d" if explanation.exponent == "column" else "2k/d"
        # Translators: {exponent}: the exponent the table's columns use, "k/d" or "2k/d".
        text = _("column k uses the exponent {exponent} of its own index k, so a sine and the cosine beside it have "
                 "different frequencies; the paper gives both columns of pair i = k // 2 the exponent 2i/d: use "
                 "2 * (k // 2) / d_model")
        return Finding(code, text.format(exponent=form), {"exponent": form})
    if code == "integer_division":
        if explanation.exponent == "pair_floor":
            message = _("every exponent 2i/d is 0, so every column has frequency 1 (sin(pos) and cos(pos) repeated): "
                        "the exponent was computed with integer division (//, or integer arrays or tensors); make it a "
                        "float division, e.g. 2 * i / float(d_model)")
        else:
            message = _("the exponent 2k/d is 0 in the first half of the columns and 1 in the second: the exponent "
                        "was computed with integer division (//, or integer arrays or tensors); make it a float "
                        "division, e.g. 2 * i / float(d_model)")
        return Finding(code, message)
    if code == "multiplied_not_divided":
        # Translators: {base}: the base of the frequencies, e.g. 10000.
        text = _("the position is multiplied by {base}^(2i/d) where the formula divides, so the angles grow along "
                 "the columns instead of shrinking; use pos / {base}**(2i/d) (or pos * {base}**(-2i/d))")
        return Finding(code, text.format(base=f"{explanation.base:g}"))
    if code == "wrong_base":
        return _base_finding(explanation.base, length, width)
    if code == "extra_column":
        # Translators: {width}: the table's number of columns; {d_model}: the width its frequencies
        # belong to.
        text = _("the table has {width} columns but its frequencies are those of d_model = {d_model}: one column too "
                 "many (a sine and a cosine for each of ceil(d/2) pairs, e.g. for an odd d_model); build exactly "
                 "d_model columns")
        return Finding(code, text.format(width=width, d_model=d), {"d_model": d})
    if code == "missing_column":
        # Translators: {width}: the table's number of columns; {d_model}: the width its frequencies
        # belong to.
        text = _("the table has {width} columns but its frequencies are those of d_model = {d_model}: one column "
                 "missing (d_model // 2 sin/cos pairs for an odd d_model); the last column of an odd width is a "
                 "sine of pair (d_model - 1) / 2")
        return Finding(code, text.format(width=width, d_model=d), {"d_model": d})
    if code == "position_offset":
        # Translators: {offset}: the position of the table's row 0.
        text = _("row 0 holds position {offset}, not 0: the positions start at {offset}; use arange(length), which "
                 "starts at 0")
        return Finding(code, text.format(offset=explanation.offset), {"first_position": explanation.offset})
    raise AssertionError(code)


def _base_finding(base, length, width):
    """"wrong_base", or "exponent_scaled" when ``base = 10000 ** c`` with a ``c`` that a slip in
    the exponent explains: 2 or 4 (``4i/d``, ``8i/d``), or ``d / L`` with L the table's length
    (``2i/L``); the message names both readings either way."""
    scale = math.log(base) / math.log(PAPER_BASE)
    hints = {
        # Translators: {frequencies}: a formula, e.g. "100 ** (-2i/d) = 10000 ** (-0.5 * 2i/d)";
        # {base}: the base read off the table, e.g. 100.
        2.0: ("4i/d", N_("the frequencies are {frequencies}, those of the exponent 4i/d: the exponent is doubled: i "
                         "already steps by 2 (0, 2, 4, ...) and the code still writes 2 * i / d_model; write i / d_model "
                         "there (2i/d with i = k // 2, the pair) (if your code writes the base {base} instead, write "
                         "10000)")),
        # Translators: {frequencies}: a formula, e.g. "100 ** (-2i/d) = 10000 ** (-0.5 * 2i/d)";
        # {base}: the base read off the table, e.g. 100.
        4.0: ("8i/d", N_("the frequencies are {frequencies}, those of the exponent 8i/d: the exponent is four times the "
                         "paper's; use 2i/d_model with i = k // 2, the pair (if your code writes the base {base} instead, "
                         "write 10000)")),
    }
    # 1e-3: a base read off the table is good to about 1e-5; "<" or "<=" at exactly 1e-3 is the same test.
    form, text = next((found for c, found in hints.items() if abs(scale / c - 1) < 1e-3), (None, None))  # pragma: no mutate
    # 1e-2: a judgement (L and d are integers, so a real 2i/L slip lands far inside it or far out).
    if form is None and base != float(f"{base:.2g}") and abs(scale * length / width - 1) < 1e-2:  # pragma: no mutate
        # Translators: {frequencies}: a formula, e.g. "100 ** (-2i/d) = 10000 ** (-0.5 * 2i/d)";
        # {base}: the base read off the table; {length}: the table's number of rows; {width}: its
        # number of columns.
        form, text = "2i/L", N_("the frequencies are {frequencies}, those of the exponent 2i/L: the exponent divides by "
                                "the table's length L = {length} where the paper divides by d_model = {width}; use "
                                "2i/d_model (if your code writes the base {base} instead, write 10000)")
    values = dict(frequencies=f"{base:.4g} ** (-2i/d) = 10000 ** (-{scale:.4g} * 2i/d)", base=f"{base:.4g}",
                  scale=f"{scale:.4g}", length=length, width=width)
    details = {"base": base, "exponent_scale": scale}
    if form and text:
        return Finding("exponent_scaled", _(text).format(**values), {**details, "exponent": form})
    # Translators: {frequencies}: a formula, e.g. "1000 ** (-2i/d) = 10000 ** (-0.75 * 2i/d)";
    # {base}: the base read off the table, e.g. 1000; {scale}: the base's exponent as a power of
    # 10000, e.g. 0.75.
    text = _("the frequencies are {frequencies}: the base is {base}, not 10000; write 10000 in the denominator "
             "10000**(2i/d) (if your code already writes 10000, its exponent is {scale} times 2i/d: use 2i/d_model, "
             "with i = k // 2 the pair)")
    return Finding("wrong_base", text.format(**values), details)


def _zero_finding(code, lines, explanation, entries):
    length, width = entries.shape
    if code == "zero_row":
        offset = explanation.offset if explanation else 0
        # Translators: {rows}: the numbers of the rows that are all zeros; {positions}: their
        # positions.
        text = _("row {rows} (position {positions}) is all zeros, the rest is described here: a padding row, as "
                 "zero_pad=True or padding_idx set it; the paper's table has none (cos(0) = 1): if no token is meant "
                 "to get a zero encoding, build that row like the others")
        return Finding(code, text.format(rows=_list([int(r) for r in lines]), positions=_list([int(r) + offset for r in lines])),
                       {"rows": [int(r) for r in lines]})
    d = explanation.d_model if explanation and explanation.d_model else width
    # Translators: {column}: the number of the column that is all zeros; {width}: the table's
    # (odd) number of columns; {described}: the number of the other columns; {d_model}: the
    # width their frequencies belong to.
    text = _("column {column} is all zeros: the odd width {width} was padded with a zero column after the {described} "
             "columns of d_model = {d_model} described here (tensor2tensor, fairseq and diffusers pad so); the paper's "
             "formula fills it with sin(pos / 10000^({described}/{width})): posenc.positional_encoding(length, {width})")
    return Finding(code, text.format(column=_list([int(k) for k in lines]), width=width, described=width - 1,
                                     d_model=d - (d == width)), {"columns": [int(k) for k in lines]})


def _scaled_finding(factor, shift, width):
    # A shift within the data's rounding (CLEAN per unit of scale) is none: a judgement whose edge
    # (< or <=, the unit at 1 or 2) no table lands on.
    if abs(shift) <= CLEAN * max(1.0, abs(factor)):  # pragma: no mutate
        root = " = sqrt(d_model)" if abs(factor / math.sqrt(width) - 1) < 1e-4 else ""  # pragma: no mutate (a float tie)
        # Translators: {factor}: a number, followed by " = sqrt(d_model)" when it is that.
        message = _("every entry is the positional encoding times {factor}: the table is scaled; the encoding itself "
                    "lies in [-1, 1]; if the factor is meant (the paper multiplies the embeddings by sqrt(d_model)), "
                    "apply it to the embeddings, not to the table").format(factor=f"{factor:.4g}{root}")
    else:
        # Translators: {factor} and {shift}: numbers; PE is the positional encoding.
        message = _("every entry is {factor} * PE + {shift}: the table was standardised (its mean subtracted, divided "
                    "by its standard deviation, perhaps times a constant); the encoding itself lies in [-1, 1], with 0 "
                    "and 1 in row 0: undo the normalisation, or keep it knowing the values are no longer sin and "
                    "cos").format(factor=f"{factor:.4g}", shift=f"{shift:.4g}")
    return Finding("scaled", message, {"factor": factor, "shift": shift})


def _half_finding(entries, diagnosis):
    unit = HALF_PRECISION[entries.dtype]
    # Translators: {dtype}: float16 or bfloat16; {digits}: a number of digits; {rounding} and
    # {deviation}: numbers.
    text = _("the table is held in {dtype}, which keeps about {digits} significant digits (entries round by up to "
             "{rounding} of their size) and, when the angles p * w are computed in it too, loses more as p grows (here "
             "up to {deviation}); not a mistake in the formula: build the table in float32 or float64 and cast it to "
             "{dtype} at the end")
    message = text.format(dtype=entries.dtype, digits=int(-math.log10(unit)), rounding=f"{unit / 2:.1e}",
                          deviation=f"{diagnosis.max_deviation:.1e}")
    return Finding("half_precision", message, {"dtype": entries.dtype, "max_deviation": diagnosis.max_deviation})


def _matches(names):
    others = ", ".join(names[1:])
    if names[0] == "paper" and others:
        # Translators: {others}: the names of other conventions, e.g. "hf-xlm, keras-hub".
        message = _("the paper's table: sin at even columns, cos at odd, base 10000, positions from 0 (the same numbers "
                    "as {others})").format(others=others)
    elif names[0] == "paper":
        message = _("the paper's table: sin at even columns, cos at odd, base 10000, positions from 0")
    else:
        c = conventions.resolve(names[0])
        values = dict(name=repr(names[0]), others=others, layout=c.layout, rule=c.rule, base=f"{c.base:g}")
        if others:
            # Translators: {name}: a convention's name in quotes; {others}: the names of other
            # conventions; {layout}: its layout's name; {rule}: the name of its frequency rule; {base}:
            # a number.
            text = _("convention {name} (the same numbers as {others}): layout {layout}, frequencies {rule}, base "
                     "{base} (posenc.positional_encoding(..., convention={name}))")
        else:
            # Translators: {name}: a convention's name in quotes; {layout}: its layout's name; {rule}:
            # the name of its frequency rule; {base}: a number.
            text = _("convention {name}: layout {layout}, frequencies {rule}, base {base} "
                     "(posenc.positional_encoding(..., convention={name}))")
        message = text.format(**values)
    return Finding("matches", message, {"conventions": list(names)})


def _preset_names(entries, offset):
    """``(names, deviation)``: the presets (``conventions.NAMES``) whose table, as it is with
    rows from ``offset``, holds these entries, and the largest deviation of the one named.

    A whole table is ``identification.identify``'s question, asked with diagnose's allowance
    (the data's rounding plus float32 drift) as the tolerance; only a preset it finds as it is
    (its own layout and base, positions from ``offset``) counts. What ``identify`` cannot read,
    a print with rows or columns left out, is checked entry by entry against each preset.
    """
    if entries.complete:
        allowed = float(_allowed(entries, (entries.rows + offset)[:, None]).max())
        found = identification.identify(entries.values, atol=allowed)
        if found.name is None or found.convention != dataclasses.replace(conventions.resolve(found.name), offset=offset):
            return [], math.inf
        return list(found.matches), found.max_deviation
    names, deviations = [], []
    for name in conventions.NAMES:
        for part in (_probe(entries), entries):
            try:
                table = tables.encode(part.rows + offset, part.shape[1], convention=name, dtype=np.float64)
            except ValueError:
                break  # the source has no table of this width
            deviation = np.abs(part.values - table[:, part.columns])
            # Every preset's frequencies are at most 1: the position bounds the angle.
            if (deviation > _allowed(part, (part.rows + offset)[:, None])).any():
                break
        else:
            names.append(name)
            deviations.append(float(deviation.max()))
    return names, (deviations[0] if deviations else math.inf)


def _named_conventions(entries):
    """A diagnosis naming a preset outside the paper's family (e.g. "h-1" frequencies), or None."""
    for transposed in (False, True):
        oriented = entries.transposed() if transposed else entries
        for offset in (0, 1):
            names, deviation = _preset_names(oriented, offset)
            # The paper's frequencies are the fit's business; only other rules are named here.
            if names and conventions.resolve(names[0]).rule != "paper":
                findings = [_matches(names)]
                preset = conventions.resolve(names[0])
                shown = Explanation(transposed, preset.layout, offset=offset)
                odd = "zero" if preset.odd == "zero" else "sine"
                findings += [_finding(code, shown, oriented, odd) for code in shown.codes(oriented.shape[1])
                             if code in ("transposed", "layout", "position_offset")]
                return Diagnosis(tuple(findings), tuple(entries.shape), deviation)
    return None


def _unknown(entries, nearest):
    """"unknown": where the table departs most from the paper's (row, column, its value and the
    paper's, as the table lies), the tolerance there (the data's rounding plus the drift
    allowance, and what they are made of), and how far even the nearest explanation is."""
    paper = Explanation()
    departure = np.abs(_deviation(paper, entries))
    a, b = np.unravel_index(np.argmax(departure), departure.shape)
    where = entries.take(np.array([a]), np.array([b]))
    row, column = int(where.rows[0]), int(where.columns[0])
    angle = paper.angles(where.rows, where.columns, entries.shape[1])
    allowed = float(_allowed(where, angle)[0, 0])
    value, expected = float(where.values[0, 0]), float(paper.table(where.rows, where.columns, entries.shape[1])[0, 0])
    oriented = entries.transposed() if nearest.transposed else entries
    largest = float(np.abs(_deviation(nearest, oriented)).max())
    codes = nearest.codes(oriented.shape[1])
    rounding = float(where.tolerance[0, 0]) + CLEAN
    constant, per_radian = _drift(entries)
    # Translators: {row}, {column}: where the table departs most; {value}: its value there;
    # {expected}: the paper's; {allowed}: the tolerance there, the sum of {rounding}, {drift}
    # and {per_radian} times {angle}; {dtype}: float32, float16 or bfloat16; {nearest}: codes,
    # e.g. "wrong_base", or "the paper itself" (translated on its own); {largest}: a number.
    text = _("no explanation in the catalog reproduces it; it departs most from the paper's table at row {row}, column "
             "{column}: {value} where the paper's formula gives {expected}, beyond the {allowed} allowed there (the "
             "data's rounding {rounding} + {dtype} drift {drift} + {per_radian} * |angle| {angle}); the nearest "
             "explanation in the catalog ({nearest}) is off by up to {largest}")
    message = text.format(row=row, column=column, value=f"{value:.6g}", expected=f"{expected:.6g}", allowed=f"{allowed:.2g}",
                          rounding=f"{rounding:.1g}", dtype=entries.dtype or "float32", drift=f"{constant:.0e}",
                          per_radian=f"{per_radian:.0e}", angle=f"{abs(float(angle[0, 0])):.3g}",
                          nearest=", ".join(codes) if codes else _("the paper itself"), largest=f"{largest:.2g}")
    details = {"nearest": codes, "max_deviation": largest, "tolerance": float((entries.tolerance + CLEAN).max()),
               "row": row, "column": column, "value": value, "paper_value": expected, "allowed": allowed}
    return Diagnosis((Finding("unknown", message, details),), tuple(entries.shape), largest)


def _repaired(entries):
    """The diagnosis of ``entries`` with their zero rows and zero column set aside, or rescaled
    (module docstring), with findings saying so; None when that explains nothing either."""
    rows, columns = _zero_lines(entries)
    part = entries
    if len(rows) or len(columns):
        part = entries.take(np.setdiff1d(np.arange(len(entries.rows)), rows),
                            np.setdiff1d(np.arange(len(entries.columns)), columns))
    scaled = _rescaled(part)
    attempts = ([(part, None)] if part is not entries else []) + ([scaled] if scaled else [])
    for attempt, scale in attempts:
        found = _diagnose(attempt)
        if found.codes == ["unknown"]:
            continue
        findings = list(found.findings)
        # The findings speak of the encoding's rows (positions) and columns: a transposed table's are the other way.
        shown, zero_rows, zero_columns = entries, rows, columns
        if found.explanation is not None and found.explanation.transposed:
            shown, zero_rows, zero_columns = entries.transposed(), columns, rows
        if len(zero_columns) and not _predicts_zero(found.explanation, shown.take(np.arange(len(shown.rows)), zero_columns)):
            # A fit of d_model = width - 1 calls the padded column an extra one.
            findings = [f for f in findings if f.code != "extra_column"]
            findings.append(_zero_finding("zero_column", shown.columns[zero_columns], found.explanation, shown))
        if len(zero_rows):
            findings.append(_zero_finding("zero_row", shown.rows[zero_rows], found.explanation, shown))
        if scale:
            findings.append(_scaled_finding(*scale, entries.shape[1]))
        return dataclasses.replace(found, findings=tuple(findings))
    return None


def _predicts_zero(explanation, column):
    """True when ``explanation`` itself puts (near) zeros in ``column`` (entries of one column):
    a slow sine rounded to 0. in a print, not a padded column."""
    if explanation is None:
        return False
    angles = explanation.angles(column.rows, column.columns, column.shape[1])
    predicted = explanation.table(column.rows, column.columns, column.shape[1])
    return bool((np.abs(column.values - predicted) <= _allowed(column, angles)).all())


def _zero_lines(entries):
    """Indices (into ``values``) of the all-zero rows (at most a third of them) and of a single
    all-zero column: what padding rows and an odd width's padded column look like."""
    # Padding writes exact zeros: "<" or "<=" at the threshold itself is the same test.
    zero = np.abs(entries.values) <= entries.tolerance + CLEAN  # pragma: no mutate
    n_rows, n_columns = entries.values.shape
    rows = np.flatnonzero(zero.all(axis=1)) if n_columns >= 2 else np.array([], int)
    columns = np.flatnonzero(zero.all(axis=0)) if n_rows >= 3 else np.array([], int)
    if 3 * len(rows) > n_rows:
        rows = np.array([], int)
    if len(columns) != 1 or n_columns < 3:
        columns = np.array([], int)
    return rows, columns


def _rescaled(entries):
    """``(entries / factor - shift / factor, (factor, shift))`` when the line of position 0 (row
    0, or column 0 of a transposed table) takes two values, ``shift`` where the paper has
    sin(0) = 0 and ``factor + shift`` where it has cos(0) = 1; else None."""
    for line, tolerance, first in ((entries.values[0], entries.tolerance[0], entries.rows[0]),
                                   (entries.values[:, 0], entries.tolerance[:, 0], entries.columns[0])):
        if first != 0 or len(line) < 2:
            continue
        low, high = float(line.min()), float(line.max())
        spread = float(tolerance.max()) + CLEAN * max(1.0, abs(low), abs(high))
        factor = high - low
        two_valued = (np.minimum(np.abs(line - low), np.abs(line - high)) <= spread).all()
        if two_valued and factor > 100 * spread and not (abs(factor - 1) <= spread and abs(low) <= spread):
            values = (entries.values - low) / factor
            # The two values read off carry the data's rounding too: into every shift, and
            # into the factor in proportion to the value.
            tolerance = (entries.tolerance + spread * (1 + 2 * np.abs(values))) / factor
            return dataclasses.replace(entries, values=values, tolerance=tolerance), (factor, low)
    return None
