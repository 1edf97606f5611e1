"""Exercises of notebook 01 (the lecture walk in NumPy)."""

import numpy as np

from ..language import N_
from . import Exercise

__all__ = ["denominators", "table"]


def denominators_solution(d_model):
    pairs = np.arange(0, d_model, 2)
    return 10000.0 ** (pairs / d_model)


denominators = Exercise(
    "denominators",
    denominators_solution,
    N_("one denominator per pair of columns: 10000 to the power 2i / d_model, for 2i = 0, 2, 4, ..."),
    cases=[(6,), (64,), (7,)],
    argument_names=["d_model"],
    mistakes=[
        (N_("one denominator per column: the sine and the cosine of a pair share one"), lambda d: 10000.0 ** (np.arange(d) / d)),
        (
            N_("these are frequencies (1 / denominator); the lecture divides by the denominator"),
            lambda d: 10000.0 ** (-np.arange(0, d, 2) / d),
        ),
        (
            N_("the exponent is 2i / d_model, not i / d_model: use the even indices 0, 2, 4, ..."),
            lambda d: 10000.0 ** (np.arange((d + 1) // 2) / d),
        ),
    ],
    praise=N_("The last one is 10000^((d - 2) / d) for even d: just below 10000."),
)


def table_solution(length, d_model):
    positions = np.arange(length)[:, None]
    columns = np.arange(d_model)
    angles = positions / 10000.0 ** (2 * (columns // 2) / d_model)
    return np.where(columns % 2 == 0, np.sin(angles), np.cos(angles))


def _table(length, d_model, *, swap=False, per_column=False, doubled=False, base=10000.0, first=0):
    positions = np.arange(first, first + length)[:, None]
    columns = np.arange(d_model)
    exponent = 2 * columns if doubled else columns if per_column else 2 * (columns // 2)
    angles = positions / base ** (exponent / d_model)
    even, odd = (np.cos, np.sin) if swap else (np.sin, np.cos)
    return np.where(columns % 2 == 0, even(angles), odd(angles))


table = Exercise(
    "table",
    table_solution,
    N_("angles = positions / 10000 ** (2 * (k // 2) / d_model) for column k; sine at even k, cosine at odd k"),
    cases=[(10, 6), (50, 33)],
    argument_names=["length", "d_model"],
    mistakes=[
        (N_("sine and cosine are swapped: the even columns hold the sines"), lambda n, d: _table(n, d, swap=True)),
        (N_("the exponent is taken per column (k / d_model); a pair shares 2i / d_model"), lambda n, d: _table(n, d, per_column=True)),
        (
            N_("the exponent 2k / d_model uses the column index k, which is already 2i in an even column: "
               "use the pair index, 2 * (k // 2) / d_model"),
            lambda n, d: _table(n, d, doubled=True),
        ),
        (N_("positions start at 1; the first row is position 0"), lambda n, d: _table(n, d, first=1)),
        (N_("another base than 10000"), lambda n, d: _table(n, d, base=1000.0)),
    ],
)
