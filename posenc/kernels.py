"""Numeric kernels written once against a backend table (``posenc.backends``).

Float32-only half turns (``half_turns_float32``): the sines and cosines of ``p * w`` to
within 2e-7 with no float64 anywhere, for JAX's default mode (x64 off), where the float64
steps of ``_rotation`` part 3 do not exist. The angle is counted in half turns,
``u = p * v`` with ``v = w / pi``, and everything that decides ``u`` modulo 2 is an exact
float32 product.

Pieces (host side, ``half_turn_pieces``, from ``w_hi + w_lo`` in 50-digit decimals): a
value ``x`` is cut into three pieces of 12 significant bits and a float32 rest, ``x = x0 +
x1 + x2 + x3`` with ``|x1| <= 2**-12 |x|``, ``|x2| <= 2**-24 |x|`` and ``x3`` the float32
rounding of what is left (``<= 2**-36 |x|``, rounded: ``2**-60 |x|``). Three values are cut:
``Q = 4096 v mod 2`` and ``V = v mod 2`` (symmetric remainders, ``|Q|, |V| <= 1``) and, for
the fractional part of positions, ``W = v`` itself (two pieces: ``W0`` and the float32 rest).

Positions (float32, ``|p| <= 2**24``) are cut the same way by rounding at fixed scales:
``a = rint(p / 4096)``, ``c = rint(p - 4096 a)``, ``b = rint(4096 (p - 4096 a - c)) / 4096``
and ``t = p - 4096 a - c - b``, each step exact (a float32 minus the nearest multiple of a
power of two that it is a multiple of, or that divides it). So ``p = 4096 a + c + b + t``
exactly with integers ``|a| <= 4096`` and ``|c| <= 2048`` and ``b`` a multiple of ``2**-12``
with ``|b| <= 1/2`` (all at most 12 significant bits) and ``|t| <= 2**-13``.

Modulo 2, with ``a`` and ``c`` integers, ``4096 a v = a Q`` and ``c v = c V``, so

    u = a (Q0 + Q1 + Q2 + Q3) + c (V0 + V1 + V2 + V3) + b (W0 + W1) + t W   (mod 2).

A 12-bit number times a 12-bit number is exact in float32 (24 bits), so ``a Q0``, ``a Q1``,
``a Q2``, ``c V0``, ``c V1``, ``c V2`` and ``b W0`` are exact. The three large ones are
replaced by their remainders modulo 2, ``x - 2 rint(x / 2)``, again exactly (``|x| < 2**14``).
The five terms ``R(a Q0), R(c V0), R(b W0), a Q1, c V1`` (each at most 1 in size) are added
with Knuth's TwoSum (six float32 additions, exact for any inputs, no products, so an FMA
cannot change it): ``s + e`` within ``gamma_4**2 * 5 < 1e-12`` of their sum. The rest,
``a Q2 + c V2 + a Q3 + c V3 + b W1 + t W``, is at most ``2**-11`` in size and added plainly
(six roundings of at most ``2**-35``, about ``2e-10``), and so is ``e`` to it: ``f_lo``.
Taking ``k = rint(s)``, ``f_hi = s - k`` is exact (``|s| < 8``) and

    u = k + f_hi + f_lo + (even integers) + d,   |d| < 3e-10 half turns,

``|f_hi| <= 1/2``, ``|f_lo| < 2**-10``. With ``(-1)**k`` (``k - 2 rint(k/2)`` is 0 or
``+-1``, exactly), ``sin(p w) = (-1)**k sin(pi f)`` and likewise cos, ``f = f_hi + f_lo``.

The angle ``pi f``: ``pi = P0 + P1`` (``P0`` 12 bits, ``P1`` float32, together within
``2**-37``), ``f_hi = fa + fb`` with ``fa = rint(4096 f_hi) / 4096`` (at most 12 bits) and
``|fb| <= 2**-13``, both exact. ``P0 fa`` is exact and the rest, ``P0 fb + P1 f_hi + pi f_lo``,
is below ``4e-3`` with three roundings (``< 1e-9``); their sum is rounded once to float32:
half a float32 spacing, ``2**-24`` (6.0e-8) for ``1 <= |pi f| < 2`` and ``2**-25`` below 1.

The error, with ``eps`` the float32 sin/cos error on ``[-1.58, 1.58]`` (9e-8 in the proof
of ``_rotation`` part 3; XLA's measured 3.3e-8, NumPy's 6.2e-8): ``eps + 2**-24 +
pi * 3e-10 + 1e-9 < 1.52e-7``, for every float32 position ``|p| <= 2**24`` (fractional ones
too) and frequencies ``|w| <= 1``: under 2e-7. The measured worst is in
``tests/test_jax.py``. Every step is float32 arithmetic, ``rint``, ``sin`` and ``cos``:
28 products and sums besides sin and cos, elementwise, so XLA fuses them into one loop.
"""

import decimal
import functools
import math

import numpy as np

# Significant bits of a piece: a product of two pieces fits float32's 24.
_BITS = 12
_SCALE = float(2**_BITS)
_PI = decimal.Decimal("3.14159265358979323846264338327950288419716939937510582097494459")


def _cut(x, count):
    """``count`` pieces of at most ``_BITS`` significant bits of the Decimal ``x``, then its float32 rest."""
    pieces = []
    for _ in range(count):
        # 2**(exponent - 1) <= |x| (float(x) never rounds below a power of two that |x| reaches),
        # so x * 2**(_BITS - exponent) rounds to an integer of at most _BITS bits.
        scale = decimal.Decimal(2) ** (_BITS - math.frexp(float(x))[1])
        piece = (x * scale).to_integral_value(decimal.ROUND_HALF_EVEN) / scale
        pieces.append(float(piece))
        x -= piece
    pieces.append(float(np.float32(float(x))))
    return pieces


def _remainder_two(x):
    # x - 2 * (nearest integer to x / 2): in [-1, 1].
    return x - 2 * (x / 2).to_integral_value(decimal.ROUND_HALF_EVEN)


@functools.lru_cache(maxsize=64)
def _pieces(w_hi_bytes, w_lo_bytes):
    w_hi, w_lo = np.frombuffer(w_hi_bytes), np.frombuffer(w_lo_bytes)
    rows = []
    with decimal.localcontext(decimal.Context(prec=60)):
        for hi, lo in zip(w_hi.tolist(), w_lo.tolist()):
            v = (decimal.Decimal(hi) + decimal.Decimal(lo)) / _PI
            rows.append(
                _cut(_remainder_two(v * 4096), 3) + _cut(_remainder_two(v), 3) + _cut(v, 1) + [float(np.float32(float(v)))]
            )
    pieces = np.array(rows, np.float32).reshape(len(w_hi), 11).T.copy()
    pieces.flags.writeable = False
    return pieces


def half_turn_pieces(w_hi, w_lo):
    """The ``(11, h)`` float32 pieces of ``half_turns_float32`` for frequencies ``w_hi + w_lo``.

    Rows: ``Q0..Q3`` of ``4096 v mod 2``, ``V0..V3`` of ``v mod 2``, ``W0, W1`` of ``v`` and
    ``v`` rounded to float32, for ``v = w / pi`` (module docstring). Cached, read-only.
    """
    w_hi, w_lo = (np.ascontiguousarray(w, np.float64) for w in (w_hi, w_lo))
    return _pieces(w_hi.tobytes(), w_lo.tobytes())


def _two_sum(a, b):
    # Knuth: s + e == a + b exactly, s = fl(a + b).
    s = a + b
    bb = s - a
    return s, (a - (s - bb)) + (b - bb)


def _remainder(xp, x):
    # x minus the nearest even integer: exact for |x| < 2**24.
    return x - 2 * xp.rint(x * 0.5)


def half_turns_float32(xp, positions, pieces):
    """float32 ``(sin, cos)`` of ``positions[..., None] * w``, each ``(*positions.shape, h)``.

    ``positions``: float32 array of ``xp`` (exact for ``|p| <= 2**24``); ``pieces``:
    ``half_turn_pieces(w_hi, w_lo)`` (NumPy). Only float32 operations: within 2e-7 of the
    exact value for ``|w| <= 1`` (module docstring), with JAX's x64 off as well.
    """
    q0, q1, q2, q3, v0, v1, v2, v3, w0, w1, w = (xp.constant(row, xp.float32, like=positions) for row in pieces)
    p = positions[..., None]
    a = xp.rint(p * (1 / _SCALE))
    rest = p - a * _SCALE
    c = xp.rint(rest)
    rest = rest - c
    b = xp.rint(rest * _SCALE) * (1 / _SCALE)
    t = rest - b
    s, e = _two_sum(_remainder(xp, a * q0), _remainder(xp, c * v0))
    errors = e
    for term in (_remainder(xp, b * w0), a * q1, c * v1):
        s, e = _two_sum(s, term)
        errors = errors + e
    small = a * q2 + c * v2 + (a * q3 + c * v3) + b * w1 + t * w
    k = xp.rint(s)
    f_hi, f_lo = s - k, errors + small
    fa = xp.rint(f_hi * _SCALE) * (1 / _SCALE)
    angle = _PI_HI * fa + ((_PI_HI * (f_hi - fa) + _PI_LO * f_hi) + _PI_F32 * f_lo)
    odd = k - 2 * xp.rint(k * 0.5)
    sign = 1 - 2 * odd * odd
    return sign * xp.sin(angle), sign * xp.cos(angle)


_PI_HI, _PI_LO = _cut(_PI, 1)
_PI_F32 = float(np.float32(float(_PI)))
