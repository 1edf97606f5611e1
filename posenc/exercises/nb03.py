"""Exercises of notebook 03 (the TensorFlow lectures): the paper's layout from a batch, float64 angles, an odd width."""

import math
import numpy as np
import tensorflow as tf

from ..engine import checks
from ..language import N_
from . import Exercise, _, compare_arrays, _compare_order

__all__ = ["accurate", "accurate_solution", "compare_layouts", "interleaved", "odd_width"]


# Exercise 1: the Portuguese lecture's batch-aware function, in the paper's interleaved layout.


def interleaved_solution(x):
    batch, seq, d_model = tf.unstack(tf.shape(x))
    positions = tf.cumsum(tf.ones((batch, seq)), axis=1) - 1.0
    pair = tf.range(d_model // 2, dtype=tf.float32)
    omega = tf.pow(10000.0, -2.0 * pair / tf.cast(d_model, tf.float32))
    angles = tf.matmul(positions[:, :, None], omega[None, :])  # (batch, seq, d_model / 2)
    # a new last axis (sin, cos), merged into the columns: sin, cos, sin, cos, ...
    return x + tf.reshape(tf.stack([tf.sin(angles), tf.cos(angles)], axis=-1), tf.shape(x))


def _layout(x, order):
    batch, seq, d_model = tf.unstack(tf.shape(x))
    positions = tf.cumsum(tf.ones((batch, seq)), axis=1) - 1.0
    pair = tf.range(d_model // 2, dtype=tf.float32)
    angles = tf.matmul(positions[:, :, None], tf.pow(10000.0, -2.0 * pair / tf.cast(d_model, tf.float32))[None, :])
    if order == "cos_sin":
        return x + tf.concat([tf.cos(angles), tf.sin(angles)], axis=-1)
    if order == "cos_sin_pairs":
        return x + tf.reshape(tf.stack([tf.cos(angles), tf.sin(angles)], axis=-1), tf.shape(x))
    return tf.reshape(tf.stack([tf.sin(angles), tf.cos(angles)], axis=-1), tf.shape(x))  # "table": x not added


def _rows_by_position(batch, seq, d_model):
    """x with one value per (batch, position), the same in every column: a column order stays visible in x + PE."""
    values = np.arange(batch * seq, dtype=np.float32).reshape(batch, seq, 1) / 10
    return tf.constant(np.repeat(values, d_model, axis=-1))


def compare_layouts(got, expected):
    """compare_arrays, except that columns in another order are named by the whole order."""
    # Translators: {order} is a list of column numbers, [1, 0, 3, 2, ...].
    return _compare_order(got, expected, N_(
        "the right columns in another order: your columns 0, 1, 2, ... hold the paper's columns {order}; "
        "in the paper's table column 2i is the sine of pair i and column 2i + 1 its cosine"))


interleaved = Exercise(
    "interleaved",
    interleaved_solution,
    N_("keep the lecture's angles of shape (batch, seq, d_model / 2); stack sin and cos on a new last axis, "
       "(batch, seq, d_model / 2, 2), and reshape it to x's shape: the pairs land side by side"),
    cases=[
        (_rows_by_position(2, 5, 8),),
        (_rows_by_position(1, 4, 2),),
        (tf.constant(np.random.default_rng(0).random((3, 6, 16), dtype=np.float32)),),  # any x, not only row-constant ones
    ],
    mistakes=[
        (N_("this is the lecture's layout: all cosines, then all sines; the paper alternates a sine and its cosine"),
         lambda x: _layout(x, "cos_sin")),
        (N_("each pair is (cos, sin): the paper's pair is (sin, cos), the sine in the even column"),
         lambda x: _layout(x, "cos_sin_pairs")),
        (N_("your function returns the table alone: return x plus the table"), lambda x: _layout(x, "table")),
    ],
    argument_names=["x"],
    compare=compare_layouts,
    praise=N_("The lecture's function, in the paper's layout: the same columns, permuted."),
)


# Exercise 2: the exp/log route with float64 angles, rounded to float32 once at the end.


def accurate_solution(length, d_model):
    position = tf.range(length, dtype=tf.float64)[:, None]
    div_term = tf.exp(tf.range(0, d_model, 2, dtype=tf.float64) * -(math.log(10000.0) / d_model))
    angles = position * div_term  # float64 all the way
    table = tf.reshape(tf.stack([tf.sin(angles), tf.cos(angles)], axis=-1), (length, d_model))
    return tf.cast(table, tf.float32)  # one rounding, at the end


def _exp_log(length, d_model, *, denominators=tf.float64, angles=tf.float64):
    position = tf.range(length, dtype=angles)[:, None]
    div_term = tf.exp(tf.range(0, d_model, 2, dtype=denominators) * -(math.log(10000.0) / d_model))
    theta = position * tf.cast(div_term, angles)
    table = tf.reshape(tf.stack([tf.sin(theta), tf.cos(theta)], axis=-1), (length, d_model))
    return tf.cast(table, tf.float32)


def compare_within(got, expected, atol=1e-7):
    """None when ``got`` is within ``atol`` of ``expected`` everywhere; else how far off, and where.

    A float32 table rounded once from float64 is within half a float32 step of the exact one, at most
    6e-8 for values below 1; two such tables are within 1e-7 of each other.
    """
    try:
        values, reference = np.asarray(got, dtype=np.float64), np.asarray(expected, dtype=np.float64)
    except (TypeError, ValueError):
        return compare_arrays(got, expected)
    if values.shape != reference.shape or not np.isfinite(values).all():
        return compare_arrays(values, reference)
    error = np.abs(values - reference)
    if error.max() <= checks.check_real(atol, "atol"):
        return None
    row, column = np.unravel_index(int(error.argmax()), error.shape)
    return _("your table is off by up to {error}, at row {row}, column {column}: more than one rounding happened").format(
        error=f"{error.max():.1e}", row=row, column=column)


accurate = Exercise(
    "accurate",
    accurate_solution,
    N_("every tensor before the last cast in tf.float64: the positions, the range inside exp, and so the denominators"),
    cases=[(20, 200), (5000, 64)],
    argument_names=["length", "d_model"],
    mistakes=[
        (N_("the denominators come out of a float32 exp and are cast to float64 afterwards: their float32 rounding "
            "(a few parts in 10^8) is multiplied by the position; build the range inside exp in float64"),
         lambda n, d: _exp_log(n, d, denominators=tf.float32)),
        (N_("the angles are float32 (section 3's route): position times frequency is rounded to float32 "
            "before sin and cos; compute it in float64 and cast the table at the end"),
         lambda n, d: _exp_log(n, d, denominators=tf.float32, angles=tf.float32)),
    ],
    compare=compare_within,
    praise=N_("One rounding, at the end: within 6e-8 of the exact table at any of these positions."),
)


# Exercise 3: a width-agnostic table (odd d_model included), sines at even columns.


def odd_width_solution(length, d_model):
    positions = tf.range(length, dtype=tf.float32)[:, None]
    rates = 1.0 / 10000.0 ** (tf.range(0, d_model, 2, dtype=tf.float32) / d_model)
    angles = positions * rates[None, :]  # (length, (d_model + 1) // 2)
    pairs = tf.stack([tf.sin(angles), tf.cos(angles)], axis=-1)
    return tf.reshape(pairs, (length, -1))[:, :d_model]  # an odd width: drop the last cosine


def _pairs(length, d_model, *, swap=False, cut=True):
    positions = tf.range(length, dtype=tf.float32)[:, None]
    angles = positions / 10000.0 ** (tf.range(0, d_model, 2, dtype=tf.float32) / d_model)
    first, second = (tf.cos, tf.sin) if swap else (tf.sin, tf.cos)
    table = tf.reshape(tf.stack([first(angles), second(angles)], axis=-1), (length, -1))
    return table[:, :d_model] if cut else table


odd_width = Exercise(
    "odd_width",
    odd_width_solution,
    N_("d_model = 7 has 4 pairs, so the stacked table has 8 columns: the last pair's cosine is one too many"),
    cases=[(10, 6), (100, 64), (10, 7)],
    argument_names=["length", "d_model"],
    mistakes=[
        (N_("each pair is (cos, sin): the sine goes first, in the even column"), lambda n, d: _pairs(n, d, swap=True)),
        (N_("an odd d_model needs d_model columns: the last pair's cosine is one too many"), lambda n, d: _pairs(n, d, cut=False)),
    ],
    praise=N_("Every width, the last column of an odd one a sine."),
)
