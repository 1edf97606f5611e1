"""posenc's numeric kernels, each written once against the backend table (``posenc.engine.backends``).

``xp`` is a ``Backend``; the arrays are that framework's. Accuracy: the contract in
``posenc``'s docstring. Why each kernel keeps it is the docs page "Why the numbers are
right" (docs/accuracy.md): ``sincos`` is its part 1 (the double-float64 angle), ``half_turns``
part 3 (float32 sines of the angle reduced in half turns), ``half_turns_float32`` part 4 (the
same without float64, for JAX's default mode), ``rounded_sin_cos`` part 5 (a few angles).
Part 2, a table as a product of two small ones, is NumPy's builder (``posenc.engine.rotation``).
"""

import decimal
import functools
import math

import numpy as np

__all__ = [
    "BLOCK",
    "FEW_ANGLES",
    "apply_rotary",
    "columns",
    "half_turn_pieces",
    "half_turns",
    "half_turns_float32",
    "rope_cos_sin",
    "rounded_sin_cos",
    "sin_cos",
    "sincos",
    "spread",
    "veltkamp_split",
    "write_sin_cos",
]

# 2**27 + 1 splits a float64 into two halves of 26 bits whose products are exact.
_VELTKAMP = 134217729.0


def veltkamp_split(x):
    # Veltkamp: hi holds the top 26 bits of x, lo the rest, both exactly.
    scaled = x * _VELTKAMP
    hi = scaled - (scaled - x)
    return hi, x - hi


def sincos(xp, positions, w_hi, w_lo):
    """float64 ``(sin, cos)`` of ``positions[..., None] * (w_hi + w_lo)``, each ``(*positions.shape, h)``.

    ``positions``, ``w_hi``, ``w_lo``: float64. Accurate to ~2e-16 absolute for
    ``|positions| <= 1e7`` (accuracy page, part 1).
    """
    p = positions[..., None]
    theta = p * w_hi
    p_big, p_small = veltkamp_split(p)
    w_big, w_small = veltkamp_split(w_hi)
    # Dekker: the exact rounding error of p * w_hi, plus the part of the angle w_lo adds.
    rounding = ((p_big * w_big - theta) + p_big * w_small + p_small * w_big) + p_small * w_small
    tail = rounding + p * w_lo
    s, c = xp.sin(theta), xp.cos(theta)
    return s + tail * c, c - tail * s


def half_turns(xp, positions, v, width=None, out=(None, None), scratch=(None, None, None, None)):
    """float32 ``(sin, cos)`` of ``pi * positions[..., None] * v`` (``v = w / pi``, float64, ``(h,)``).

    The angle counted in half turns, ``u = p * v``, is split as ``k + f`` with ``k`` the
    nearest integer (``Backend.nearest``) and ``|f| <= 1/2``; then
    ``sin = (-1)**k sin(pi f)`` and ``cos = (-1)**k cos(pi f)``, the sign flipped by an xor
    of the float32 sign bit with ``k``'s parity. Accuracy: the float32 contract, for
    ``|p * w| <= 2**26`` (accuracy page, part 3). ``width``: how many cosines to return (an
    odd table width has one fewer). ``out``: float32 ``(sines, cosines)`` to write into;
    ``scratch``: buffers ``(u, k, reduced, sign)`` of the block's shape (float64, float64,
    float32, the backend's 32-bit ints); both only for backends that write in place.
    """
    u_buf, k_buf, reduced_buf, sign_buf = scratch
    u = xp.mul(positions[..., None], v, out=u_buf)
    k, sign = xp.nearest(u, out=(k_buf, sign_buf))
    f = xp.sub(u, k, out=u)  # exact, |f| <= 1/2
    reduced = xp.scale_to_float32(f, math.pi, out=reduced_buf)  # pi * f in float64, rounded once
    if width is not None:
        sign_c, reduced_c = sign[..., :width], reduced[..., :width]
    else:
        sign_c, reduced_c = sign, reduced
    sines, cosines = out
    s = xp.flip_sign(xp.sin(reduced, out=sines), sign, out=sines)
    c = xp.flip_sign(xp.cos(reduced_c, out=cosines), sign_c, out=cosines)
    return s, c


# Up to this many angles a call pays more for its operations than for its arithmetic: the fronts
# use rounded_sin_cos there (a RoPE decoding step, a tiny table).
FEW_ANGLES = 4096


def rounded_sin_cos(xp, positions, w, dtype, attention=1.0):
    """``(sin, cos)`` of the float64 angle ``positions[..., None] * w``, times ``attention``, each rounded once to ``dtype``.

    Few operations, for a few angles at a time (a decoding step), where each operation's fixed
    cost outweighs float64 ``sin``'s price per angle. For float32 or half precision output
    only: the float64 angle is off by at most ``|theta| * 2**-52`` (``w``'s rounding and the
    product's), 2.3e-9 at ``|theta| = 1e7``, and float64 ``sin``/``cos`` by an ulp, so the
    value is within half a float32 spacing (``2**-25``, 3e-8) plus 2.3e-9 of the exact one.
    ``positions``: integers or float64; ``w``: float64, ``(n,)`` (``spread`` ones give channels).
    """
    theta = xp.mul(positions[..., None], w)
    s, c = xp.sin(theta), xp.cos(theta)
    if attention != 1:
        s, c = xp.mul(s, attention), xp.mul(c, attention)
    return xp.cast(s, dtype), xp.cast(c, dtype)


def sin_cos(xp, positions, w_hi, w_lo, dtype):
    """``(sin, cos)`` of ``positions[..., None] * (w_hi + w_lo)`` in ``dtype``, each ``(*positions.shape, h)``.

    float64: ``sincos``; float32: ``half_turns``; half precision: one rounding of the float32
    value. ``positions``: float64 of the backend; ``w_hi``, ``w_lo``: float64, NumPy's or the
    backend's (a rotary module keeps them on its device). A backend without float64 (JAX, x64
    off): ``half_turns_float32`` of float32 ``positions`` and NumPy ``w_hi``, ``w_lo``.
    Accuracy: see the accuracy contract.
    """
    if not xp.has_float64:
        s, c = half_turns_float32(xp, positions, half_turn_pieces(w_hi, w_lo))
    elif dtype == xp.float64:
        return sincos(xp, positions, *(xp.constant(w, xp.float64, positions) for w in (w_hi, w_lo)))
    else:
        s, c = half_turns(xp, positions, xp.constant(w_hi / math.pi, xp.float64, positions))
    return xp.cast(s, dtype), xp.cast(c, dtype)


# Angles per block of write_sin_cos: the float64 temporaries of a block (about 1 MiB) stay in the L2 cache.
BLOCK = 32768


def write_sin_cos(xp, positions, w_hi, w_lo, sines, cosines, block=BLOCK):
    """``sin_cos`` written into ``sines`` (``(N, h)``) and ``cosines`` (``(N, m <= h)``), block by block.

    For backends that write in place (NumPy, torch). ``positions``: float64 ``(N,)``;
    ``sines``/``cosines`` may be strided views of a table, float16, float32 or float64. The
    float32 work reuses buffers of ``block`` angles, so the extra memory is a few blocks.
    """
    count, width = positions.shape[0], cosines.shape[-1]
    step = max(1, block // max(1, w_hi.shape[0]))
    if sines.dtype == xp.float64:
        for start in range(0, count, step):
            s, c = sincos(xp, positions[start : start + step], w_hi, w_lo)
            sines[start : start + step] = s
            cosines[start : start + step] = c[:, :width]
        return
    v = w_hi / math.pi
    shape = (min(step, count), w_hi.shape[0])
    scratch = tuple(xp.empty(shape, t, positions) for t in (xp.float64, xp.float64, xp.float32, xp.bits))
    direct = sines.dtype == xp.float32
    if not direct:
        wide = xp.empty(shape, xp.float32, positions), xp.empty(shape, xp.float32, positions)
    for start in range(0, count, step):
        n = min(step, count - start)
        rows = slice(start, start + n)
        out = (sines[rows], cosines[rows]) if direct else (wide[0][:n], wide[1][:n, :width])
        s, c = half_turns(xp, positions[rows], v, width, out, tuple(b[:n] for b in scratch))
        if not direct:
            sines[rows] = s
            cosines[rows] = c


def columns(xp, s, c, layout, width):
    """The first ``width`` columns of a table in ``layout`` from its sines ``s`` and cosines ``c`` (``(..., h)``)."""
    half = width // 2  # cosine columns; an odd width has one sine more
    if layout == "sin_cos":
        return xp.concat([s, c[..., :half]], -1)
    if layout == "cos_sin":
        return xp.concat([c[..., :half], s], -1)
    return xp.merge_last(xp.stack([s, c], -1))[..., :width]


def pair_slices(rotary_dim, layout):
    """``(first, second)``: the slices of the RoPE channels that pair up, first member with second."""
    if layout == "half":
        return slice(rotary_dim // 2), slice(rotary_dim // 2, rotary_dim)
    return slice(None, rotary_dim, 2), slice(1, rotary_dim, 2)


def spread(xp, values, layout):
    """``(..., h) -> (..., 2h)``: each RoPE pair's value on both of its channels in ``layout``."""
    if layout == "half":
        return xp.concat([values, values], -1)
    return xp.merge_last(xp.stack([values, values], -1))


def axis_sin_cos(xp, sin_cos, groups, positions, w_hi, w_lo, dtype):
    """``sin_cos`` for pairs that read different axes: ``(sin, cos)`` of ``positions[axes[j], ...] *
    (w_hi + w_lo)[j]``, each ``(*positions.shape[1:], h)``; ``groups``: ``Frequencies.groups``.

    The pairs of each axis are computed together, then put back in their order. ``positions``
    ``(axes, ...)``, checked by the caller to hold every axis the pairs read.
    """
    groups, back = groups

    def pick(w, pairs):  # NumPy frequencies stay NumPy (JAX's kernel reads them on the host); a backend's are gathered
        return w[list(pairs)] if isinstance(w, np.ndarray) else xp.take(w, pairs, 0)

    parts = [sin_cos(positions[axis], pick(w_hi, pairs), pick(w_lo, pairs), dtype) for axis, pairs in groups]
    return tuple(xp.take(xp.concat([part[k] for part in parts], -1), back, -1) for k in (0, 1))


def rope_cos_sin(xp, sin_cos, positions, frequencies, layout, dtype, form="channels"):
    """RoPE's ``(cos, sin)`` in ``dtype`` for ``positions`` and a ``Frequencies`` record.

    ``sin_cos(positions, w_hi, w_lo, dtype)`` computes the per-pair values from NumPy ``w_hi``,
    ``w_lo`` (``sin_cos`` above, or a front's route to them); pairs that read different axes of
    ``positions`` ``(axes, ...)`` go through ``axis_sin_cos``. An attention factor other than 1
    (yarn, longrope) multiplies them in float64, so the cast to ``dtype`` is the one rounding
    (in float32 on a backend without float64: one rounding more).
    ``form``: ``"channels"`` spreads them over the channels of ``layout`` (``spread``),
    ``"pairs"`` keeps one value per pair, ``(..., h)``.
    """
    w_hi, w_lo, attention = frequencies.hi, frequencies.lo, frequencies.attention
    if frequencies.groups is not None:
        sin_cos = functools.partial(axis_sin_cos, xp, sin_cos, frequencies.groups)
    if attention == 1:
        s, c = sin_cos(positions, w_hi, w_lo, dtype)
    else:
        s, c = sin_cos(positions, w_hi, w_lo, xp.wide)
        s, c = s * attention, c * attention
    if form == "channels":
        c, s = spread(xp, c, layout), spread(xp, s, layout)
    return xp.cast(c, dtype), xp.cast(s, dtype)


def apply_rotary(xp, x, cos, sin, layout, rotated):
    """``x`` with the pairs among its first ``rotated`` channels turned by ``cos``/``sin``.

    For pairs ``(a, b)`` of ``layout``: ``a cos - b sin`` and ``b cos + a sin``, in the
    layout's order; channels beyond ``rotated`` pass through. Shapes and dtypes checked by the
    caller. Computed as transformers computes it, ``x * cos + turned(x) * sin`` with ``turned``
    the pairs ``(-b, a)`` (``rotate_half``), each product rounded in ``x``'s dtype, then the
    sum: the same bits. Backends that write in place multiply ``turned`` by ``sin`` and add it
    to ``x * cos`` in place, two full-size temporaries fewer.
    """
    part = x if rotated == x.shape[-1] else x[..., :rotated]
    first, second = pair_slices(rotated, layout)
    a, b = part[..., first], part[..., second]
    turned = xp.concat([-b, a], -1) if layout == "half" else xp.merge_last(xp.stack([-b, a], -1))
    if xp.imul is not None and _grows_not(sin.shape, turned.shape):
        out = xp.iadd(part * cos, xp.imul(turned, sin))
    else:
        out = part * cos + turned * sin
    return out if part is x else xp.concat([out, xp.expand_like(x[..., rotated:], out)], -1)


def _grows_not(shape, target):
    # An array of ``shape`` broadcasts against one of ``target`` without making it larger.
    # Not mutated: < for <= changes only whether equal ranks are written in place, not the values.
    return len(shape) <= len(target) and all(n in (1, m) for n, m in zip(reversed(shape), reversed(target)))  # pragma: no mutate


# Float32-only half turns (accuracy page, part 4): part 3 without a float64 step, for JAX's default mode.

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


# pi as 12 bits and a float32 rest, and pi in float32.
_PI_HI, _PI_LO = _cut(_PI, 1)
_PI_F32 = float(np.float32(float(_PI)))


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
    ``v`` rounded to float32, for ``v = w / pi`` (``half_turns_float32``). Cached, read-only.
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
    ``half_turn_pieces(w_hi, w_lo)`` (NumPy). Only float32 operations, so no float64 enters
    a JAX trace with x64 off: the angle in half turns, ``u = p * v`` with ``v = w / pi``, with
    everything that decides ``u`` modulo 2 an exact float32 product of 12-bit pieces.
    Accuracy: the contract's float32-only row (``|p| <= 2**24``, ``|w| <= 1``); the proof is
    part 4 of the accuracy page.
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

