"""Independent references for the tests: written from the formula, not from posenc."""

import mpmath
import numpy as np


def paper_table(positions, d_model, base=10000.0):
    """Column k of the paper's table, column by column, in float64.

    PE(p, k) = sin(p / base^(k / d)) for even k, cos(p / base^((k - 1) / d)) for odd k.
    """
    p = np.asarray(positions, dtype=np.float64)[..., None]
    k = np.arange(d_model)
    even = k % 2 == 0
    exponent = np.where(even, k, k - 1) / d_model
    theta = p / np.float64(base) ** exponent
    return np.where(even, np.sin(theta), np.cos(theta))


def exact(position, column, d_model, base=10000, digits=40):
    """PE(position, column) to ``digits`` significant digits with mpmath."""
    with mpmath.workdps(digits):
        pair = column // 2
        theta = mpmath.mpf(position) / mpmath.power(base, mpmath.mpf(2 * pair) / d_model)
        return float(mpmath.sin(theta) if column % 2 == 0 else mpmath.cos(theta))


def exact_rows(positions, d_model, base=10000):
    return np.array([[exact(p, k, d_model, base) for k in range(d_model)] for p in positions])


def exact_sin_cos(positions, w_hi, w_lo):
    """mpmath's ``(sin, cos)`` of ``positions[:, None] * (w_hi + w_lo)`` at 40 digits, as float64 arrays."""
    with mpmath.workdps(40):
        theta = [[mpmath.mpf(float(p)) * (mpmath.mpf(float(a)) + mpmath.mpf(float(b))) for a, b in zip(w_hi, w_lo)]
                 for p in positions]
        return (np.array([[float(mpmath.sin(t)) for t in row] for row in theta]),
                np.array([[float(mpmath.cos(t)) for t in row] for row in theta]))
