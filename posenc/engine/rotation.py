"""Accurate sines and cosines of ``p * w``, and big tables built from two small ones.

Three ideas, shared by every front end; ``posenc.engine.kernels`` holds the arithmetic that
frameworks run, this module the proofs and NumPy's table builder.

1. The angle ``theta = p * w`` is carried as two float64 numbers, ``theta_hi + theta_lo``.
   ``w = base ** (-2i / d_model)`` is known to about 1e-30 relative as ``w_hi + w_lo``
   (``geometric_parts``, computed with the standard library's ``decimal``), and
   ``p * w_hi`` is split exactly into ``theta_hi`` (the rounded product) and its rounding
   error by Dekker's product (Veltkamp splitting). Then
   ``sin(theta) = sin(theta_hi) + theta_lo * cos(theta_hi)`` up to ``theta_lo**2 / 2``
   (< 1e-17 for ``|p| <= 1e7``), where sin and cos of the float64 ``theta_hi`` come from
   the framework, whose own range reduction is exact (1 ulp, checked by the tests). This
   gives sin and cos to about 2e-16, where plain ``sin(p * w)`` in float64 is off by up to
   ~1.5e-9 at ``p = 1e7`` (the rounding of ``w`` and of the product).

2. A table of positions ``0 .. L - 1`` is a product of rotations. Write ``p = q*B + r``
   with ``0 <= r < B``. In the complex number ``z(p) = sin(p w) + i cos(p w)`` (the
   interleaved ``(sin, cos)`` pair read as real and imaginary part),

       z(q*B + r) = z(r) * exp(-i q*B*w)

   so the whole table is one broadcast complex multiply of ``B`` small rows by ``L / B``
   steps, both from (1). For float32 output the multiply is in complex64: four factors
   rounded to float32 (together at most ``2*sqrt(2) * 2**-25`` absolute), two products and
   a sum each rounded (``3 * 2**-25``) give at most ``(2*sqrt(2) + 3) * 2**-25 < 1.74e-7``
   (< 2.03e-7 in the corner where a value next to 1 rounds up to ``1 + 2**-23``, where the
   spacing doubles; 1.4e-7 is the largest error seen over 10**8 entries). float64 output
   is multiplied in complex128 (error ~1e-15).

3. Arbitrary positions in float32 need far less than (1): float32 sines of an angle reduced
   exactly enough (``kernels.half_turns``, one kernel for every framework). Count the angle
   in half turns, ``u = fl(p * v)`` with ``v = fl(w_hi / pi)`` (``w_lo`` is dropped),
   ``k = rint(u)`` (adding ``1.5 * 2**52``; TF: ``tf.round``), ``f = u - k``, and write

       sin(p w) = (-1)**k sin(pi f),   cos(p w) = (-1)**k cos(pi f),   |f| <= 1/2.

   Each rounding, with ``theta = p * w`` exact and ``e = 2**-53``:

   - ``u``: ``w_hi`` (``e`` relative), ``fl(pi)`` (0.4 ``e``), the division and the product
     (``e`` each) put ``u`` within ``3.4 e |u|`` of ``theta / pi``: ``pi f`` is off by at most
     ``3.4 e |theta|`` radians, 3.8e-9 at ``|theta| = 1e7``, 2.5e-8 at ``2**26``.
   - ``k`` is an integer next to ``u`` (``|u| < 2**51``) and ``f = u - k`` is exact (Sterbenz:
     ``k/2 <= u <= 2k``). The sign ``(-1)**k`` is exact: the parity of ``k`` is a bit of
     ``u + 1.5 * 2**52``, moved to the float32 sign bit and xor-ed in.
   - ``pi * f`` in float64 (1.4 ``e`` relative, < 3e-16) is rounded once to float32: at
     most half a float32 spacing, ``2**-24`` (6.0e-8) for ``1 <= |pi f| <= pi/2`` and ``2**-25``
     below 1.
   - float32 ``sin`` and ``cos`` on ``[-pi/2, pi/2]``: within ``eps`` absolute, the premise,
     tested in ``tests/test_accuracy.py`` over 1.2 million arguments: NumPy 6.4e-8, torch
     3.6e-8, TensorFlow (under XLA, as its kernel runs) 3.3e-8 measured; the proof takes
     ``eps = 9e-8``.

   An argument error ``a`` moves sin and cos by at most ``a`` (their slopes are at most 1),
   so both results are within ``eps + 2**-24 + 3.4 e |theta| + 3e-16``: 1.54e-7 at
   ``|theta| <= 1e7`` (``|p| <= 1e7`` for ``w <= 1``), 1.75e-7 at ``2**26``, under 2e-7 either
   way (9.5e-8 is the largest seen in NumPy over 10**6 random angles up to 1e7). The float32
   value is the result; half precision rounds it once more. float64 output needs (1).
   Cost: five float64 operations on the angles besides the float32 sin and cos, in blocks
   of ``kernels.BLOCK`` angles that stay in cache, so the extra memory is a few blocks.
"""

import decimal
import functools
import math
import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from . import kernels
from .backends import backend

NUMPY = backend("numpy")


@functools.lru_cache(maxsize=64)
def geometric_parts(count, base, span, factor=1.0):
    """``w_j = factor * base ** (-j / span)`` for ``j < count`` as ``(w_hi, w_lo)``, two float64 arrays.

    Every sinusoidal convention's frequencies are such a geometric sequence: the paper's
    has ``span = d_model / 2``, the "h-1" family ``span = d_model // 2 - 1`` (see
    ``conventions``). ``w_hi`` is ``w_j`` correctly rounded and ``w_lo`` the remainder, so
    ``w_hi + w_lo`` is right to ~1e-30 relative. Each ``w_j`` is ``factor * ratio ** j`` in
    45-digit decimals (``ratio = exp(-ln(base) / span)``), where the error of the repeated
    product (< j * 1e-45) is far below what is kept. Cached: read-only arrays.
    """
    context = decimal.Context(prec=45)
    hi, lo = [], []
    if count:
        # Every operation through the 45-digit context (a bare unary minus would round to 28).
        ratio = context.exp(context.divide(context.ln(decimal.Decimal(base)), decimal.Decimal(-span)))
        power = decimal.Decimal(factor)
        for _ in range(count):
            hi.append(float(power))
            lo.append(float(context.subtract(power, decimal.Decimal(hi[-1]))))
            power = context.multiply(power, ratio)
    parts = np.array(hi, dtype=np.float64), np.array(lo, dtype=np.float64)
    for part in parts:
        part.flags.writeable = False
    return parts


def block_rows(length):
    """``B``, rows per block of a table of ``length`` rows: about ``sqrt(length)``, at least 64.

    ``B + length / B`` rows of sines and cosines are computed directly, fewest near the
    square root; a table of up to 64 rows is a single block (whose rows ``_turns`` may still
    build as a product).
    """
    return max(64, 1 << (length.bit_length() + 1) // 2)


def column_slices(d_model, layout):
    """``(sines, cosines)``: the slices of output columns that hold each, for ``layout``.

    The same columns as ``tables.column_order``, as basic slices so writing through them
    needs no gather: interleaved is ``0::2, 1::2``; the others are two contiguous runs.
    """
    half, n_cos = (d_model + 1) // 2, d_model // 2
    if layout == "sin_cos":
        return slice(half), slice(half, d_model)
    if layout == "cos_sin":
        return slice(n_cos, d_model), slice(n_cos)
    return slice(None, None, 2), slice(1, None, 2)


def complex_dtype(dtype):
    """complex128 for a float64 table; complex64 for float32 and, rounded at the end, half precision."""
    return np.complex128 if dtype == np.float64 else np.complex64


def store(rows, s, c, layout):
    """Write sines ``s`` and cosines ``c`` (each ``(..., ceil(d/2))``) into ``rows`` (``(..., d)``).

    Each value is rounded once to the dtype of ``rows``; an odd width drops the last cosine.
    Plain slice assignment, so NumPy arrays and torch tensors alike.
    """
    sines, cosines = column_slices(rows.shape[-1], layout)
    rows[..., sines] = s
    rows[..., cosines] = c[..., : rows.shape[-1] // 2]


# Up to this many rows of turns come straight from kernels.sincos. NumPy's float64 sin and cos
# are scalar loops (~13 ns an angle) and the product costs a fraction of that, so more rows are
# cheaper as coarse * fine: a 50 x 512 table takes 15 rows of sines instead of 50, 2x faster.
# Either way the rows are within a few 1e-16, so which side of the threshold a count falls on
# changes nothing a float32 table shows.
_DIRECT_TURNS = 16  # pragma: no mutate


def _turns(count, stride, w_hi, w_lo):
    """``exp(i * k * stride * w)`` for ``k = 0 .. count - 1``: complex128, ``(count, h)``.

    Up to ``_DIRECT_TURNS`` rows come straight from ``kernels.sincos``; more are the product of
    the two tables of ``_turn_pair``, in complex128 (error a few 1e-16), so the trig work for a
    table of ``L`` rows is some ``4 * L**0.25`` rows rather than ``2 * sqrt(L)``.
    """
    if count <= _DIRECT_TURNS:  # pragma: no mutate (either side within a few 1e-16, see above)
        s, c = kernels.sincos(NUMPY, np.arange(count) * float(stride), w_hi, w_lo)
        turns = np.empty(s.shape, np.complex128)
        turns.real, turns.imag = c, s
        return turns
    return _outer(*_turn_pair(count, stride, w_hi, w_lo), np.complex128)[:count]


def _turn_pair(count, stride, w_hi, w_lo):
    """``(coarse, fine)``, complex128, with ``_outer(coarse, fine)[k] = exp(i * k * stride * w)`` for ``k < count``.

    ``fine`` has about ``sqrt(count)`` rows, ``k = a * len(fine) + b``; a table of at most
    ``_DIRECT_TURNS`` rows is all ``fine``, with a single row of ones as ``coarse``.
    """
    if count <= _DIRECT_TURNS:  # pragma: no mutate (as in _turns)
        return np.ones((1, len(w_hi)), np.complex128), _turns(count, stride, w_hi, w_lo)
    fine = math.isqrt(count - 1) + 1
    return _turns(-(-count // fine), stride * fine, w_hi, w_lo), _turns(fine, stride, w_hi, w_lo)


def _outer(coarse, fine, ctype):
    """Rows ``a * len(fine) + b`` are ``coarse[a] * fine[b]``: multiplied in complex128, rounded once to ``ctype``.

    Written straight into the result, so no complex128 table of the full size is made.
    """
    product = np.empty((len(coarse), len(fine), coarse.shape[-1]), ctype)
    np.multiply(coarse[:, None], fine, out=product, casting="same_kind")
    return product.reshape(len(coarse) * len(fine), coarse.shape[-1])


def rotation_factors(length, w_hi, w_lo, ctype, offset=0.0):
    """``(within, steps)`` for a table of ``length`` rows, NumPy arrays of complex dtype ``ctype``.

    ``w_hi + w_lo``: the ``h`` frequencies (``geometric_parts``). Row ``k`` of the table
    is position ``offset + k``. ``within[r] = z(offset + r) = sin((offset + r) w) + i cos(...)``
    for ``r < B`` (shape ``(B, h)``) and ``steps[q] = exp(-i q*B*w)`` for
    ``q < ceil(length / B)``, so that row ``q*B + r`` of the table is ``within[r] * steps[q]``.
    Each is one product of two complex128 tables within a few 1e-16, rounded once to ``ctype``.
    """
    # A table shorter than a block is that block's first rows: only those are computed.
    rows = min(block_rows(length), max(length, 1))
    blocks = -(-length // rows)
    coarse, fine = _turn_pair(rows, 1, w_hi, w_lo)
    if offset:
        # One more rotation, by the offset's angle: z(offset + r) = exp(i offset w) * z(r).
        s, c = kernels.sincos(NUMPY, np.array(float(offset)), w_hi, w_lo)
        fine = fine * (c + 1j * s)
    # z = sin + i cos = i * conj(exp(i theta)); conj and the factor i are exact.
    within = _outer(coarse.conj(), 1j * fine.conj(), ctype)[:rows]
    steps = _outer(*(t.conj() for t in _turn_pair(blocks, rows, w_hi, w_lo)), ctype)
    return within, steps[:blocks]


def fill_table(out, w_hi, w_lo, layout, offset=0.0):
    """Write ``PE(offset + k, :)`` for ``k = 0 .. len(out) - 1`` into ``out`` (shape ``(L, d)``); return it.

    ``w_hi + w_lo``: the ``ceil(d / 2)`` frequencies (``geometric_parts``).

    ``z(q*B + r) = z(r) * exp(-i q*B*w)`` (module docstring, part 2), in complex64 for
    float16/float32 ``out`` and complex128 for float64. An interleaved float32/float64
    ``out`` of even width is multiplied into directly through a complex view; otherwise each
    block of ``B`` rows goes through a small scratch array and is cast on the way out.
    Error (module docstring): < 2e-7 absolute for float32 (plus the final rounding for float16), ~1e-15
    for float64. Extra memory: two tables of ``B`` and ``L / B`` rows.
    """
    length, d_model = out.shape
    # pragma below: the route a table takes changes its time, not its promise: a one-block table is
    # rounded once either way (< for <= at FEW_ANGLES gives the same entries), longer ones within 2e-7.
    tiny = length <= block_rows(length) and length * len(w_hi) <= kernels.FEW_ANGLES  # pragma: no mutate
    if tiny and out.dtype != np.float64 and (abs(offset) + length) * w_hi.max() <= 2**15:
        # A tiny table, one block: float32 values rounded once from float64 sines of the float64 angle
        # (off by < 1e-11 here), as the rotation's first block rounds its double-float ones, in a few
        # operations instead of two dozen.
        s, c = kernels.rounded_sin_cos(NUMPY, offset + np.arange(length, dtype=np.float64), w_hi, np.float32)
        store(out, s, c, layout)
        return out
    within, steps = rotation_factors(length, w_hi, w_lo, complex_dtype(out.dtype), offset)
    rows, blocks = len(within), len(steps)
    direct = (
        layout == "interleaved"
        and d_model % 2 == 0
        and out.dtype == np.finfo(within.dtype).dtype
        and out.strides[-1] == out.itemsize
    )
    _over_cores(blocks, out.size, lambda a, b: _fill_blocks(out, within, steps, rows, layout, direct, a, b))
    return out


def _over_cores(count, size, work):
    """``work(a, b)`` over runs ``a .. b - 1`` that split ``range(count)``, on up to 8 cores.

    NumPy's ufuncs release the GIL, and a fresh output's page faults are taken by whichever
    thread writes first, so outputs of ``size >= 2**20`` elements are split in one run per
    core. The calling thread does the first run itself; a thread that only waited would
    cost switches (a third of the time on two cores, measured).
    """
    # pragma below: how many threads changes the time only; any split writes what one thread writes
    # (tests/test_core.py), so mutants of these counts and of the pool's size are equivalent.
    workers = min(os.cpu_count() or 1, 8, count) if size >= 1 << 20 else 1  # pragma: no mutate
    if workers == 1:
        work(0, count)  # no pool: its set-up is most of a small table's time
        return
    bounds = [count * k // workers for k in range(workers + 1)]
    with ThreadPoolExecutor(max(1, workers - 1)) as pool:  # pragma: no mutate (threads start only on submit)
        others = [pool.submit(work, a, b) for a, b in zip(bounds[1:-1], bounds[2:])]
        work(bounds[0], bounds[1])
        for other in others:
            other.result()


def _fill_blocks(out, within, steps, rows, layout, direct, first, stop):
    # Blocks first .. stop - 1 of fill_table: rows q*B .. q*B + B - 1 are within * steps[q].
    length = len(out)
    full = min(stop, length // rows)
    if direct and full > first:
        target = out[first * rows : full * rows].view(within.dtype)
        np.multiply(within, steps[first:full, None], out=target.reshape(full - first, rows, -1))
        first = full
    scratch = np.empty_like(within)  # one block; unused when every block went direct
    for q in range(first, stop):
        start = q * rows
        n = min(rows, length - start)
        np.multiply(within[:n], steps[q], out=scratch[:n])
        store(out[start : start + n], scratch[:n].real, scratch[:n].imag, layout)


def fill_encoding(out, positions, w_hi, w_lo, layout):
    """Write ``PE(positions)`` into ``out`` of shape ``(N, d)`` (``positions``: float64, ``(N,)``).

    ``w_hi + w_lo``: the ``ceil(d / 2)`` frequencies (``geometric_parts``). The sines and
    cosines come from ``write_sin_cos`` straight into the columns ``layout`` gives them.
    """
    _, d_model = out.shape
    sines, cosines = column_slices(d_model, layout)
    write_sin_cos(positions, w_hi, w_lo, out[:, sines], out[:, cosines])
    return out


def sin_cos(positions, w_hi, w_lo, dtype):
    """``(sin, cos)`` of ``positions[..., None] * (w_hi + w_lo)``, each ``dtype``, ``(*positions.shape, h)``.

    ``positions``: float64 array of any shape; ``w_hi + w_lo``: ``h`` float64 frequencies
    of any kind (``w_lo`` may be zeros). float64 is within ~2e-16 (part 1 of the module
    docstring), float32 within 2e-7 (part 3), float16 one rounding of the float32 value.
    """
    positions = np.asarray(positions, np.float64)
    shape = (*positions.shape, len(w_hi))
    sines, cosines = np.empty(shape, dtype), np.empty(shape, dtype)
    flat = (-1, len(w_hi))
    write_sin_cos(positions.reshape(-1), w_hi, w_lo, sines.reshape(flat), cosines.reshape(flat))
    return sines, cosines


def write_sin_cos(positions, w_hi, w_lo, sines, cosines):
    """Write ``sin`` and ``cos`` of ``positions[:, None] * (w_hi + w_lo)`` into ``sines`` and ``cosines``.

    ``positions``: float64, ``(N,)``; ``sines``: ``(N, h)`` and ``cosines``: ``(N, m)``
    with ``m <= h`` (an odd width has one cosine fewer), float16, float32 or float64, and
    may be strided views of a table. ``kernels.write_sin_cos`` on each core's run of rows
    (``_over_cores``): float64 by part 1, float32 and float16 by the reduction of part 3.
    """
    size = len(positions) * (sines.shape[-1] + cosines.shape[-1])
    _over_cores(
        len(positions), size,
        lambda a, b: kernels.write_sin_cos(NUMPY, positions[a:b], w_hi, w_lo, sines[a:b], cosines[a:b]),
    )
