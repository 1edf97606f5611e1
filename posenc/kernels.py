"""posenc's numeric kernels, each written once against the backend table (``posenc.backends``).

``xp`` is a ``Backend``; the arrays are that framework's. Why each kernel is accurate is
worked out in ``posenc._rotation``'s module docstring: ``sincos`` is its part 1 (the
double-float64 angle, ~2e-16), ``half_turns`` its part 3 (float32 within 2e-7 for angles
up to 2**26), ``rotated_table`` its part 2 (a table as a product of two small ones).
"""

import math

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
    ``|positions| <= 1e7`` (``_rotation`` part 1).
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
    of the float32 sign bit with ``k``'s parity. Within 2e-7 of the exact value while
    ``|p * w| <= 2**26`` (``_rotation`` part 3). ``width``: how many cosines to return (an
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

    float64: ``sincos`` (~2e-16); float32: ``half_turns`` (within 2e-7); half precision:
    one rounding of the float32 value. Arrays of the backend, float64.
    """
    if dtype == xp.float64:
        return sincos(xp, positions, w_hi, w_lo)
    s, c = half_turns(xp, positions, w_hi / math.pi)
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


def rotated_table(xp, within, steps, length, layout, width):
    """The table ``PE(offset + k)``, ``k < length``, from ``_rotation.rotation_factors``' ``within`` and ``steps``.

    Row ``q*B + r`` is ``within[r] * steps[q]`` (complex ``sin + i cos``): one broadcast
    complex multiply of the two small NumPy tables, taken apart into the columns of ``layout``.
    """
    z = xp.mul(xp.constant(within, None)[None], xp.constant(steps, None)[:, None])
    z = xp.reshape(z, (-1, within.shape[-1]))[:length]
    s, c = xp.complex_parts(z)
    return columns(xp, s, c, layout, width)


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


def rope_cos_sin(xp, sin_cos, positions, parts, layout, dtype, form="channels"):
    """RoPE's ``(cos, sin)`` in ``dtype`` for float64 ``positions`` and ``parts = (w_hi, w_lo, attention)``.

    ``sin_cos(positions, w_hi, w_lo, dtype)`` computes the per-pair values (``sin_cos`` above,
    or a front's faster route to the same numbers). An attention factor other than 1 (yarn,
    longrope) multiplies them in float64, so the cast to ``dtype`` is the one rounding.
    ``form``: ``"channels"`` spreads them over the channels of ``layout`` (``spread``),
    ``"pairs"`` keeps one value per pair, ``(..., h)``.
    """
    w_hi, w_lo, attention = parts
    if attention == 1:
        s, c = sin_cos(positions, w_hi, w_lo, dtype)
    else:
        s, c = sin_cos(positions, w_hi, w_lo, xp.float64)
        s, c = s * attention, c * attention
    if form == "channels":
        c, s = spread(xp, c, layout), spread(xp, s, layout)
    return xp.cast(c, dtype), xp.cast(s, dtype)


def apply_rotary(xp, x, cos, sin, layout, rotated):
    """``x`` with the pairs among its first ``rotated`` channels turned by ``cos``/``sin``.

    For pairs ``(a, b)`` of ``layout``: ``a cos - b sin`` and ``b cos + a sin``, in the
    layout's order; channels beyond ``rotated`` pass through. Shapes checked by the caller.
    Backends that write in place compute ``x * cos`` and add the two sine terms into its
    halves (``add_product``): fewer passes over memory than building both halves and joining
    them, which the others do.
    """
    first, second = pair_slices(rotated, layout)
    whole = rotated == x.shape[-1]
    a, b = x[..., first], x[..., second]
    if xp.add_product is not None:
        out = (x if whole else x[..., :rotated]) * cos
        xp.add_product(out[..., first], b, sin[..., first], -1)
        xp.add_product(out[..., second], a, sin[..., second], 1)
    else:
        new_a = a * cos[..., first] - b * sin[..., first]
        new_b = b * cos[..., second] + a * sin[..., second]
        out = xp.concat([new_a, new_b], -1) if layout == "half" else xp.merge_last(xp.stack([new_a, new_b], -1))
    if whole:
        return out
    return xp.concat([out, xp.expand_like(x[..., rotated:], out)], -1)
