"""NumPy's accurate sines and cosines of ``p * w`` and its table builder.

``geometric_parts`` gives every convention's frequencies to twice float64 precision;
``sin_cos`` writes the sines and cosines of arbitrary positions, ``fill_table`` a table of
consecutive positions as a product of two small tables, both on up to 8 cores. Accuracy: the
contract in ``posenc``'s docstring; why it holds (the double-float64 angle, the product of
rotations, the reduction in half turns): the docs page "Why the numbers are right"
(docs/accuracy.md), whose parts 1-5 the docstrings here cite.
"""

import decimal
import functools
import math
import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from . import kernels
from .backends import backend

__all__ = [
    "column_slices",
    "complex_dtype",
    "fill_encoding",
    "fill_table",
    "geometric_parts",
    "rotation_factors",
    "sin_cos",
    "write_sin_cos",
]

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
        return slice(half), slice(half, None)
    if layout == "cos_sin":
        return slice(n_cos, None), slice(n_cos)
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
    """Rows ``a * len(fine) + b`` are ``coarse[a] * fine[b]`` (both ``(rows, h)``): multiplied in complex128, rounded once
    to ``ctype``.

    Written straight into the result, so no complex128 table of the full size is made.
    """
    product = np.empty((len(coarse), len(fine), coarse.shape[1]), ctype)
    np.multiply(coarse[:, None], fine, out=product, casting="same_kind")
    return product.reshape(len(coarse) * len(fine), coarse.shape[1])


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

    ``z(q*B + r) = z(r) * exp(-i q*B*w)`` (accuracy page, part 2), in complex64 for
    float16/float32 ``out`` and complex128 for float64. An interleaved float32/float64
    ``out`` of even width is multiplied into directly through a complex view; otherwise each
    block of ``B`` rows goes through a small scratch array and is cast on the way out.
    Accuracy: see the accuracy contract (tables). Extra memory: two tables of ``B`` and ``L / B`` rows.
    """
    length, d_model = out.shape
    # pragma below: the route a table takes changes its time, not its promise: a one-block table is
    # rounded once either way (< for <= at FEW_ANGLES gives the same entries), longer ones within the contract.
    tiny = length <= block_rows(length) and length * len(w_hi) <= kernels.FEW_ANGLES  # pragma: no mutate
    # pragma below: past 2**15 the float64 sine drifts past 1e-11, and the rotation route, which keeps the same contract, takes over.
    if tiny and out.dtype != np.float64 and (abs(offset) + length) * w_hi.max() <= 2**15:  # pragma: no mutate
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
    # (tests/sinusoidal/test_tables.py), so mutants of these counts and of the pool's size are equivalent.
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
        np.multiply(within, steps[first:full, None], out=target.reshape(full - first, *within.shape))
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
    of any kind (``w_lo`` may be zeros). Accuracy: the contract (float64 by part 1 of the
    accuracy page, float32 and float16 by part 3).
    """
    positions = np.asarray(positions, np.float64)
    shape = (*positions.shape, len(w_hi))
    sines, cosines = np.empty(shape, dtype), np.empty(shape, dtype)
    flat = (-1, len(w_hi))
    write_sin_cos(positions.ravel(), w_hi, w_lo, sines.reshape(flat), cosines.reshape(flat))
    return sines, cosines


def write_sin_cos(positions, w_hi, w_lo, sines, cosines):
    """Write ``sin`` and ``cos`` of ``positions[:, None] * (w_hi + w_lo)`` into ``sines`` and ``cosines``.

    ``positions``: float64, ``(N,)``; ``sines``: ``(N, h)`` and ``cosines``: ``(N, m)``
    with ``m <= h`` (an odd width has one cosine fewer), float16, float32 or float64, and
    may be strided views of a table. ``kernels.write_sin_cos`` on each core's run of rows
    (``_over_cores``): float64 by part 1, float32 and float16 by the reduction of part 3.
    """
    size = len(positions) * (sines.shape[1] + cosines.shape[1])
    _over_cores(
        len(positions), size,
        lambda a, b: kernels.write_sin_cos(NUMPY, positions[a:b], w_hi, w_lo, sines[a:b], cosines[a:b]),
    )
