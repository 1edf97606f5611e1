"""Tables read back from what NumPy, torch and TensorFlow print, summarised or not.

A learner's table often survives only as a notebook output: ``print(pe)``, ``pe`` (NumPy's
``array([...], dtype=float32)``), torch's ``tensor([...])`` (fixed or scientific notation),
TensorFlow's ``<tf.Tensor: shape=(1, 20, 200), dtype=float32, numpy=array(...)>`` or
``tf.Tensor([...], shape=..., dtype=...)``. Long arrays are summarised: only a few rows and
columns at each end are shown, ``...`` standing for the rest. ``parse_printed`` turns any of
these into ``Entries``: the shown values, the row and column indices they hold in the full
table, and how far each may be from the value printed (half a unit of its last digit, or
the rounding of float16 / bfloat16 when the table was held in half precision: a float16
print shows about four significant digits, all of them rounded).
"""

import dataclasses
import re

import numpy as np

from ..engine import checks

__all__ = ["Entries", "parse_printed"]

# An ellipsis, a bracket, or a number ("0.", "-1.2e-03", "nan"); commas and spaces separate.
_TOKEN = re.compile(r"\.\.\.|\[|\]|[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|[-+]?(?:nan|inf)\b", re.IGNORECASE)
_SEPARATORS = re.compile(r"[\s,]*")
_SHAPE_PATTERNS = (
    re.compile(r"shape=\(([\d,\s]*)\)"),  # TensorFlow
    re.compile(r"torch\.Size\(\[([\d,\s]*)\]\)"),
    re.compile(r"\((\d+(?:\s*,\s*\d+)+)\s*,?\s*\)"),  # a printed .shape, e.g. "(1, 20, 200)"
)
_HALF_DTYPE = re.compile(r"dtype=(?:torch\.|tf\.)?(float16|half|bfloat16)\b")
#: Relative rounding of the half-precision dtypes: half a unit in the last place is at most
#: this times ``|x|`` (float16 keeps 11 significant bits, bfloat16 8).
HALF_PRECISION: dict[str | None, float] = {"float16": 2.0**-11, "bfloat16": 2.0**-8}


def half_tolerance(values: np.ndarray, dtype: str | None) -> np.ndarray:
    """How far each of ``values`` may be from what it rounds in ``dtype`` (0 for other dtypes)."""
    return HALF_PRECISION.get(dtype, 0.0) * np.abs(values)


@dataclasses.dataclass(frozen=True)
class Entries:
    """What is known of a 2-D table of shape ``shape = (rows, columns)``.

    ``values[a, b]`` is entry ``(rows[a], columns[b])`` of the full table (a summarised print
    shows a grid: the same columns in every shown row); ``tolerance`` (same shape as
    ``values``) is how far each may be from the value it stands for; ``dtype`` is
    "float16" or "bfloat16" when the table was held in half precision, else None.
    """

    values: np.ndarray
    rows: np.ndarray
    columns: np.ndarray
    shape: tuple
    tolerance: np.ndarray
    dtype: str | None = None

    def transposed(self):
        return Entries(self.values.T, self.columns, self.rows, self.shape[::-1], self.tolerance.T, self.dtype)

    def take(self, rows, columns):
        """The sub-grid at positions ``rows`` and ``columns`` of ``values`` (index arrays)."""
        grid = np.ix_(rows, columns)
        return Entries(self.values[grid], self.rows[rows], self.columns[columns], self.shape,
                       self.tolerance[grid], self.dtype)

    @property
    def complete(self):
        return self.values.shape == tuple(self.shape)


def parse_printed(text: str, shape: tuple[int, ...] | None = None) -> "Entries":
    """``Entries`` of the table printed in ``text``.

    The largest bracketed array in ``text`` is read; leading axes of length 1 are dropped
    (``(1, 20, 200)`` is a table of 20 rows), and so are inner ones (``(20, 1, 200)``, the
    PyTorch tutorial's buffer); a 1-D print is one row. ``shape``: the full
    ``(length, d_model)`` (leading 1s allowed), needed when the print is summarised and
    does not show it; otherwise read from ``shape=(...)``, ``torch.Size([...])`` or a tuple
    printed before the array. ``tolerance`` is half a unit of the last printed digit: per
    entry in scientific notation, the finest over the table in fixed notation (NumPy drops
    trailing zeros, so ``1.`` was printed at the table's precision), and at least the
    rounding of float16 or bfloat16 when the text names that dtype or, as NumPy's ``print``
    of a float16 array does, prints every value as the shortest float16 repr.
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    start, end = _largest_array(text)
    tokens = _TOKEN.findall(text[start:end])
    leftover = _TOKEN.sub("", text[start:end])
    if not _SEPARATORS.fullmatch(leftover):
        bad = _SEPARATORS.sub(" ", leftover).strip()
        raise ValueError(f"text must print an array of numbers; found {bad[:40]!r} inside the brackets")
    numbers = [token for token in tokens if token not in ("[", "]", "...")]
    if not numbers:
        raise ValueError(f"text must print an array of numbers; found none in {text[start:end][:40]!r}")
    for token in numbers:
        _check_exponent(token)
    nested = _nest(tokens)
    while _depth(nested) > 2 and len(nested) == 1:
        nested = nested[0]
    if _depth(nested) == 3 and all(len(item) == 1 for item in nested if isinstance(item, list)):
        nested = [item[0] if isinstance(item, list) else item for item in nested]  # (L, 1, d)
    if _depth(nested) > 2:
        raise ValueError("text must print one table (length, d_model); got a batch of several tables")
    if _depth(nested) == 1:
        nested = [nested]
    if shape is None:
        shape = _printed_shape(text[:start], text[end:])
    wanted = _two_axes(shape) if shape is not None else None

    row_items, row_index = _axis(nested, None if wanted is None else wanted[0], "rows")
    patterns = {tuple(item is Ellipsis for item in row) for row in row_items}
    if len(patterns) != 1:
        raise ValueError("text must print a table whose rows all show the same columns")
    column_items, column_index = _axis(row_items[0], None if wanted is None else wanted[1], "columns")
    shown = [[item for item in row if item is not Ellipsis] for row in row_items]
    full = wanted or (len(row_index), len(column_index))
    values = np.array([[float(token) for token in row] for row in shown], dtype=np.float64)
    if not np.isfinite(values).all():
        raise ValueError("text must print finite numbers, got nan or inf")
    dtype = _half_dtype(text, shown)
    tolerance = np.maximum(_printed_tolerance(shown), half_tolerance(values, dtype))
    return Entries(values, row_index, column_index, tuple(full), tolerance, dtype)


def _half_dtype(text, shown):
    """"float16" or "bfloat16" when the text says so; "float16" when every value printed is a
    float16 value to the digits shown (NumPy's ``print`` of a float16 array names no dtype) and
    that is no accident: a value printed to ``u`` (its last digit) lands within ``u / 2`` of a
    float16 by chance with odds ``u / spacing``; together the odds must fall below 1e-4."""
    named = _HALF_DTYPE.search(text)
    if named:
        return "float16" if named.group(1) in ("float16", "half") else "bfloat16"
    log_odds = 0.0
    for token in (token for row in shown for token in row):
        value, digit = float(token), _last_digit(token)
        if abs(value) > 65504 or abs(float(np.float16(value)) - value) > digit / 2:
            return None
        if value:  # a zero is every dtype's: no evidence
            # float16's spacing: 2**(e - 10) in [2**e, 2**(e+1)), and 2**-24 below 2**-14 (subnormals)
            spacing = 2.0 ** (max(np.floor(np.log2(abs(value))), -14) - 10)
            log_odds += min(0.0, np.log10(digit / spacing))
    return "float16" if log_odds < -4 else None


def _check_exponent(token):
    """A number's exponent must be one a float64 prints (|e| <= 330), not a pasted "1e432647"."""
    exponent = token.lower().partition("e")[2].lstrip("+-")
    if len(exponent) > 3 or (exponent and int(exponent) > 330):
        raise ValueError(f"text must print numbers a float64 holds (exponents up to 330), got {token[:40]!r}")


def _last_digit(token):
    """The unit of the last digit printed in ``token`` ("0.8413": 1e-4; "8.4131e-01": 1e-5)."""
    mantissa, _, exponent = token.lower().partition("e")
    return 10.0 ** (int(exponent or 0) - len(mantissa.partition(".")[2]))


def _largest_array(text):
    # (start, end) of the top-level [...] group holding the most numbers.
    best, depth = None, 0  # start: set by each top-level "[" before its "]" reads it
    for match in re.finditer(r"[\[\]]", text):
        if match.group() == "[":
            if depth == 0:
                start = match.start()
            depth += 1
        elif depth:
            depth -= 1
            if depth == 0:
                count = len(_TOKEN.findall(text[start : match.end()]))
                if best is None or count > best[0]:
                    best = (count, start, match.end())
    if best is None:
        raise ValueError(f"text must hold a printed array: no [...] found in {checks.shown(text)}")
    return best[1], best[2]


def _nest(tokens):
    """The nested lists of ``tokens``: one balanced [...] group, as ``_largest_array`` cuts it."""
    stack = [[]]
    for token in tokens:
        if token == "[":
            stack.append([])
        elif token == "]":
            done = stack.pop()
            stack[-1].append(done)
        elif token == "...":
            stack[-1].append(Ellipsis)
        else:
            stack[-1].append(token)
    return stack[0][0]


def _depth(node):
    return 1 + max((_depth(item) for item in node if isinstance(item, list)), default=0)


def _printed_shape(before, after):
    for pattern in _SHAPE_PATTERNS[:2]:
        found = pattern.search(before + " " + after)
        if found:
            return tuple(int(n) for n in found.group(1).replace(",", " ").split())
    found = _SHAPE_PATTERNS[2].findall(before)
    return tuple(int(n) for n in found[-1].replace(",", " ").split()) if found else None


def _two_axes(shape):
    try:
        dims = None if isinstance(shape, (str, bytes)) else list(shape)
    except TypeError:
        dims = None
    if dims is None or not all(checks._is_int(n) for n in dims):  # not int(): 2.5 and inf are no sizes
        raise TypeError(f"shape must be a tuple of ints (length, d_model), got {shape!r}")
    dims = [int(n) for n in dims]
    if len(dims) > 2:  # (1, L, d) and (L, 1, d)
        dims = [n for n in dims if n != 1] or [1]
    if len(dims) == 1:
        dims = [1, *dims]
    if len(dims) != 2 or min(dims) < 1:
        raise ValueError(f"shape must be (length, d_model), axes of length 1 allowed, got {tuple(shape)!r}")
    checks.check_entries("shape", dims)
    return tuple(dims)


def _axis(items, size, what):
    """The shown items along one axis and their indices; ``size`` is the full length (or None)."""
    gaps = [n for n, item in enumerate(items) if item is Ellipsis]
    shown = [item for item in items if item is not Ellipsis]
    if not gaps:
        if size is not None and size != len(shown):
            raise ValueError(f"shape says {size} {what}, but the text prints {len(shown)}")
        return shown, np.arange(len(shown))
    if len(gaps) > 1:
        raise ValueError(f"text must summarise its {what} with one '...', got {len(gaps)}")
    if size is None:
        raise ValueError(
            f"the print is summarised ('...' among its {what}) and does not show its shape: "
            "pass shape=(length, d_model)"
        )
    head, tail = gaps[0], len(items) - gaps[0] - 1
    if head + tail >= size:
        raise ValueError(f"shape says {size} {what}, but the text shows {head + tail} around its '...'")
    return shown, np.concatenate([np.arange(head), np.arange(size - tail, size)])


def _printed_tolerance(rows):
    """Half a unit of the last printed digit of each entry (see ``parse_printed``)."""
    fixed_decimals, tolerance = 0, []
    for row in rows:
        line = []
        for token in row:
            if "e" in token.lower():
                line.append(0.5 * _last_digit(token))
            else:
                fixed_decimals = max(fixed_decimals, len(token.partition(".")[2]))
                line.append(np.nan)
        tolerance.append(line)
    tolerance = np.array(tolerance, dtype=np.float64)
    return np.where(np.isnan(tolerance), 0.5 * 10.0**-fixed_decimals, tolerance)
