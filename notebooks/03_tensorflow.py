# %% [markdown]
# # 03 · Positional encoding in TensorFlow
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/posenc-org/posenc/blob/main/notebooks/03_tensorflow.ipynb)
#
# **Question:** How do three TensorFlow lectures build the sinusoidal table, and where does each one's table differ from the paper's?
#
# **You will be able to:**
#
# - write a batch-aware TensorFlow function that adds the table to its input, and turn the
#   lecture's cos|sin column order into the paper's with one column permutation;
# - tell where the float32 exp/log route loses digits, and build the table with float64 angles;
# - use `posenc.tensorflow.PositionalEncoding` in a Keras 3 model, and read `posenc.diagnose`'s verdict on a table.
#
# **Prerequisites:** notebook 01 · **Time:** about 60 minutes
#
# Three lectures' routes to the sinusoidal table, rebuilt with TensorFlow 2 ops (eager, no
# `tf.Session`):
#
# 1. a Portuguese Colab notebook (from a product-classification project) with a TensorFlow
#    function that adds the table to its input; it prints a random `(2, 5, 2)` sample and
#    the sum;
# 2. Chinese notes in NumPy, with a TensorFlow cast at the end, that build a width-16 table
#    column by column and print a grid of `True` from a tolerance check;
# 3. an English blog tutorial whose TensorFlow 1 class builds the
#    [Annotated Transformer](https://nlp.seas.harvard.edu/annotated-transformer/)'s
#    exp/log table in NumPy and prints its `(1, 20, 200)` summary through a `tf.Session`.
#
# Each one is checked against the numbers its lecture printed and against `posenc`. At the
# end we write the [Keras layer](https://keras.io/api/layers/base_layer/) of TensorFlow's own
# [Transformer tutorial](https://www.tensorflow.org/text/tutorials/transformer) by hand, then
# use `posenc.tensorflow.PositionalEncoding` in a small Keras 3 model.
#
# The formula from the paper: at position $pos$, column $2i$ holds a sine and column
# $2i + 1$ a cosine of the same angle,
#
# $$
# PE_{(pos,\,2i)} = \sin\!\left(\frac{pos}{10000^{2i/d_{model}}}\right), \qquad
# PE_{(pos,\,2i+1)} = \cos\!\left(\frac{pos}{10000^{2i/d_{model}}}\right).
# $$
#
# Every route computes the angles $pos \cdot \omega_i$ with
# $\omega_i = 10000^{-2i/d_{model}}$; they differ in how they get there and in where
# they put the sines and the cosines.

# %%
# On Colab, install posenc from GitHub; elsewhere `make lab` has already installed it.
import sys

if "google.colab" in sys.modules:
    # %pip install --quiet "posenc @ git+https://github.com/posenc-org/posenc@main"

# %%
import os

# Set before TensorFlow loads. Its C++ start-up log lines go to stderr and would land in
# the cell output; oneDNN off keeps the round-off of sums and matmuls the same every run.
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")

import math

import keras
import matplotlib.pyplot as plt
import numpy as np
import tensorflow as tf

import posenc
import posenc.tensorflow as ptf

np.set_printoptions(precision=4, suppress=True)
# Figures go into the notebook even where MPLBACKEND names a non-interactive backend.
# %matplotlib inline

# %% [markdown]
# ## 1. A batch-aware function: positions by a running sum
#
# The Portuguese notebook writes a function that takes embeddings `x` of shape
# `(batch, seq, d_model)` and returns `x` plus the table. It needs no length argument:
# a running sum of ones along the sequence axis, minus one, numbers the positions from 0
# in every row of the batch.

# %%
positions = tf.cumsum(tf.ones((2, 5)), axis=1) - 1.0
positions.numpy()

# %% [markdown]
# The angles are an outer product, positions of shape `(batch, seq, 1)` times
# frequencies of shape `(1, d_model / 2)`; `tf.matmul` broadcasts over the batch axis.
# Then the lecture concatenates the cosines and the sines. Our version:

# %%
def add_cos_sin_encoding(x, base=10000.0):
    """x: (batch, seq, d_model), d_model even -> x + [cos | sin] table, same shape."""
    batch, seq, d_model = tf.unstack(tf.shape(x))
    positions = tf.cumsum(tf.ones((batch, seq)), axis=1) - 1.0
    pair = tf.range(d_model // 2, dtype=tf.float32)
    omega = tf.pow(base, -2.0 * pair / tf.cast(d_model, tf.float32))
    angles = tf.matmul(positions[:, :, None], omega[None, :])  # (batch, seq, d_model / 2)
    return x + tf.concat([tf.cos(angles), tf.sin(angles)], axis=-1)


# %% [markdown]
# The lecture ran its function on a random sample of shape `(2, 5, 2)`. An unseeded
# `tf.random.uniform` will not give those numbers again, so the printed sample and the
# printed result are copied here as constants.

# %%
lecture_sample = np.array([
    [[0.26484156, 0.8003231], [0.8221879, 0.5932431], [0.5634736, 0.8112178],
     [0.90830576, 0.74487853], [0.4941579, 0.58787477]],
    [[0.99294484, 0.21522999], [0.11550105, 0.40101182], [0.40586925, 0.91038096],
     [0.18660271, 0.83135617], [0.90797865, 0.7912141]],
], dtype=np.float32)

lecture_output = np.array([
    [[1.2648416, 0.8003231], [1.3624902, 1.4347141], [0.14732677, 1.7205153],
     [-0.08168674, 0.88599855], [-0.1594857, -0.16892773]],
    [[1.9929448, 0.21522999], [0.6558033, 1.2424829], [-0.01027757, 1.8196783],
     [-0.8033898, 0.9724762], [0.25433505, 0.03441161]],
], dtype=np.float32)

# %% [markdown]
# How exact are those constants? NumPy printed at most 8 decimals. From 0.125 up,
# neighbouring float32 values are more than $10^{-8}$ apart, so 8 decimals name exactly one
# float32. Below 0.125 they need not: several float32 values can print the same digits,
# and a constant is then only the one nearest to the print. Four of the 40 printed numbers
# are that small:

# %%
def printed(value):
    """A float32 at the lecture's print settings: 8 decimals."""
    return f"{float(value):.8f}"


def same_print_count(value):
    """How many float32 values print the same 8 decimals as `value`."""
    steps = np.arange(-50, 51, dtype=np.int32)
    neighbours = (np.float32(value).view(np.int32) + steps).view(np.float32)
    return sum(printed(n) == printed(value) for n in neighbours)


print(f"float32 spacing: {np.spacing(np.float32(0.125)):.2e} at 0.125, {np.spacing(np.float32(0.1249)):.2e} just below")
every_value = np.concatenate([lecture_sample.ravel(), lecture_output.ravel()])
for value in every_value:
    if same_print_count(value) > 1:
        print(f"{printed(value):>12} is printed by {same_print_count(value):2d} float32 values")
assert sum(same_print_count(v) > 1 for v in every_value) == sum(abs(every_value) < 0.125) == 4, "the ambiguous four are the small four"

# %% [markdown]
# With `d_model = 2` there is one frequency, $\omega_0 = 1$: column 0 gets $\cos(pos)$
# and column 1 gets $\sin(pos)$, so row 0 of the output is the sample plus `(1, 0)`.
# Our reproduction, printed the lecture's way, differs from its print in one entry:
# batch 1, position 1, column 1, the sine. There $0.40101182 + \sin 1$ comes out
# 1.2424828 here and 1.2424829 in the lecture.

# %%
ours = add_cos_sin_encoding(tf.constant(lecture_sample)).numpy()
print("batch 1, position 1, column 1:", printed(ours[1, 1, 1]), "here,",
      printed(lecture_output[1, 1, 1]), "in the lecture")
printed_differently = [i for i in np.ndindex(ours.shape) if printed(ours[i]) != printed(lecture_output[i])]
assert printed_differently == [(1, 1, 1)], "one of the 20 output entries prints differently"

# %% [markdown]
# A float32 sine of 1 one step higher in the lecture's run (0.841471 instead of
# 0.84147096) gives its number, and leaves the other sum with $\sin 1$, 1.4347141, as both
# print it.

# %%
sine_of_1 = np.float32(np.sin(1.0))
one_step_up = np.nextafter(sine_of_1, np.float32(2))
# str() of a float32 gives the shortest digits that name it, as the lecture's tensor print did
print("sin 1:", str(sine_of_1), " one step up:", str(one_step_up))
print("0.40101182 + one step up:", str(lecture_sample[1, 1, 1] + one_step_up))
print("0.5932431 + either:", str(lecture_sample[0, 1, 1] + sine_of_1), str(lecture_sample[0, 1, 1] + one_step_up))
assert lecture_sample[1, 1, 1] + one_step_up == lecture_output[1, 1, 1], "the lecture's sum, to the last bit"

# %% [markdown]
# Compared as float32 numbers, two more entries are one unit in the last place (ulp: the
# distance to the next float32) apart: cosines, in column 0, at batch 0 position 3 and batch
# 1 position 2. Both are below 0.125, so the print cannot tell them apart, and ours prints
# the same digits.

# %%
def ulps_apart(a, b):
    """How many float32 values lie between a and b (same signs), entry by entry."""
    as_int = lambda x: np.asarray(x, dtype=np.float32).view(np.int32).astype(np.int64)
    return np.abs(as_int(a) - as_int(b))


differs = ulps_apart(ours, lecture_output)
print("entries apart:", [tuple(map(int, i)) for i in np.argwhere(differs)], " by at most", differs.max(), "ulp")

# %% [markdown]
# Which entries are rounded the other way depends even on the shape of the tensor. TensorFlow's
# float32 cosine of 2 is correctly rounded when the five positions form a tensor of their
# own, and one ulp off inside the `(2, 5, 1)` tensor of angles the function builds: the
# same number, a different result, only because of the tensor's shape. The lecture's run
# was off in the same place: at batch 0, position 2, its print matches ours, not the sum
# with the correctly rounded cosine.

# %%
five = tf.range(5, dtype=tf.float32)
in_the_batch = tf.tile(five[None, :, None], (2, 1, 1))
correctly_rounded = np.cos(np.arange(5.0)).astype(np.float32)
print("ulps from the correctly rounded cosines, five alone:", ulps_apart(tf.cos(five).numpy(), correctly_rounded))
print("in the (2, 5, 1) tensor:", ulps_apart(tf.cos(in_the_batch).numpy()[:, :, 0], correctly_rounded))
with_correct_cosine = lecture_sample[0, 2, 0] + correctly_rounded[2]
print("batch 0, position 2: lecture", printed(lecture_output[0, 2, 0]), " ours", printed(ours[0, 2, 0]),
      " with the correct cosine", printed(with_correct_cosine))

# %% [markdown]
# ### The docstring and the table disagree
#
# The lecture's docstring quotes the paper (a sine at column `2i`), but the code puts
# all the cosines first. Feeding zeros reads the table itself; `d_model = 8` makes the
# order visible.

# %%
length, d_model = 6, 8
cos_sin = add_cos_sin_encoding(tf.zeros((1, length, d_model)))[0].numpy()
cos_sin

# %% [markdown]
# That is `posenc`'s `layout="cos_sin"`, and it is not the paper's interleaved table:

# %%
paper = posenc.positional_encoding(length, d_model)
lecture_layout = posenc.positional_encoding(length, d_model, layout="cos_sin")
print(f"vs layout='cos_sin':     {np.abs(cos_sin - lecture_layout).max():.1e}")
print(f"vs layout='interleaved': {np.abs(cos_sin - paper).max():.1e}")
np.testing.assert_allclose(cos_sin, lecture_layout, atol=1e-6)

# %% [markdown]
# Yet it holds the same columns. The paper's column `2i` (the sine of pair `i`) is column
# `d_model / 2 + i` of the cos|sin table, and its column `2i + 1` (the cosine) is column
# `i`, so one fixed list of column indices turns one table into the other.
# `posenc.column_order` describes each layout as an index into `concat([sin, cos])`;
# undoing one and applying the other gives the same list. Picking the columns in that
# order gives the paper's table:

# %%
half = d_model // 2
to_paper = np.ravel(np.column_stack([half + np.arange(half), np.arange(half)]))
from_cos_sin = np.argsort(posenc.column_order(d_model, "cos_sin"))
print("to_paper:", to_paper, " from posenc.column_order:", from_cos_sin[posenc.column_order(d_model, "interleaved")])
np.testing.assert_allclose(cos_sin[:, to_paper], paper, atol=1e-6)
cos_sin[:, to_paper]

# %% [markdown]
# Picking columns is multiplying by a permutation matrix:

# %%
permutation = np.eye(d_model, dtype=np.float32)[:, to_paper]
np.testing.assert_allclose(cos_sin @ permutation, paper, atol=1e-6)
print(permutation.astype(int))

# %% [markdown]
# Does that make the layout a matter of taste for a model? Not through one layer. The
# table is added to the embeddings, and the sum travels through the whole network in the
# *residual stream*: each block reads the stream (through a norm and a linear layer) and
# adds its output back into it. A model built for one layout becomes the very same model
# for the other when the permutation is applied to everything that touches the stream:
# the embedding's columns, each norm's gain and bias, the rows of every matrix that reads
# the stream and the columns of every matrix that writes to it. Permuting only the first
# linear layer is not enough. A tiny model in NumPy (one residual block, then a norm and a
# head) shows both.

# %%
def layer_norm(x, gain, bias):
    centred = x - x.mean(axis=-1, keepdims=True)
    return centred / np.sqrt((centred**2).mean(axis=-1, keepdims=True) + 1e-5) * gain + bias


def tiny_model(token_ids, table, w):
    """Logits (seq, 3): embedding + table, one residual block, a final norm and a head."""
    stream = w["embedding"][token_ids] + table[: len(token_ids)]
    stream = stream + np.maximum(layer_norm(stream, w["gain1"], w["bias1"]) @ w["read"], 0) @ w["write"]
    return layer_norm(stream, w["gain2"], w["bias2"]) @ w["head"]


# %%
rng = np.random.default_rng(0)
shapes = {"embedding": (11, d_model), "gain1": (d_model,), "bias1": (d_model,), "read": (d_model, 32),
          "write": (32, d_model), "gain2": (d_model,), "bias2": (d_model,), "head": (d_model, 3)}
weights = {name: rng.normal(size=shape) for name, shape in shapes.items()}
token_ids = rng.integers(0, 11, size=length)

# %%
# The cos|sin stream s' holds the paper's stream s as s'[:, to_paper] = s.
moved = np.argsort(to_paper)
ported = {"embedding": weights["embedding"][:, moved], "read": weights["read"][moved],
          "write": weights["write"][:, moved], "head": weights["head"][moved],
          **{name: weights[name][moved] for name in ["gain1", "bias1", "gain2", "bias2"]}}
only_read = {**weights, "read": weights["read"][moved]}

paper_logits = tiny_model(token_ids, paper, weights)
ported_gap = np.abs(tiny_model(token_ids, lecture_layout, ported) - paper_logits).max()
one_layer_gap = np.abs(tiny_model(token_ids, lecture_layout, only_read) - paper_logits).max()
assert ported_gap < 1e-12, "equal up to float64 round-off"
# The first gap is float64 round-off, whose digits depend on the CPU's matmul kernels:
# printed as the bound it was checked against.
print("every stream weight permuted: logits differ by less than 1e-12")
print(f"only the first linear layer:  logits differ by {one_layer_gap:.1e}")

# %% [markdown]
# So the lecture's cos|sin function is a fine encoding in its own right: a model trained
# with it is a permuted copy of one trained with the paper's table. The mistake is in the
# docstring.

# %% [markdown]
# ## 2. Column by column: a rate for `j // 2`
#
# The Chinese notes give every column $j$ its own angle rate,
# $10000^{-2\lfloor j/2 \rfloor / d_{model}}$, so columns `2i` and `2i + 1` share one.
# Then they take the sine of the even columns and the cosine of the odd ones. Their
# sizes: 10 positions, `d_model = 16`.

# %%
max_seq_len, d_model = 10, 16
column = tf.range(d_model)
rates = tf.pow(10000.0, -tf.cast(2 * (column // 2), tf.float32) / d_model)
assert (rates[0::2].numpy() == rates[1::2].numpy()).all(), "columns 2i and 2i + 1 share a rate"
rates.numpy()

# %% [markdown]
# The notes fill the even and the odd columns of a NumPy array by strided assignment.
# TensorFlow tensors cannot be assigned to, so we take both functions of the whole
# `(10, 16)` grid of angles and let `tf.where` pick by column parity. As a function, so
# that section 3 can run it at another size:

# %%
def column_parity_table(max_seq_len, d_model):
    """(max_seq_len, d_model) float32: sin where the column is even, cos where it is odd."""
    column = tf.range(d_model)
    rates = tf.pow(10000.0, -tf.cast(2 * (column // 2), tf.float32) / d_model)
    angle_grid = tf.range(max_seq_len, dtype=tf.float32)[:, None] * rates[None, :]
    return tf.where(column % 2 == 0, tf.sin(angle_grid), tf.cos(angle_grid))


parity_table = column_parity_table(max_seq_len, d_model)
print(tuple(parity_table.shape), parity_table.dtype.name)
parity_table.numpy()[:4]

# %% [markdown]
# The notes checked their table with a tolerance of `1e-3`. Against `posenc` (angles in
# float64, one rounding at the end) this float32 route is much closer than that:

# %%
parity_error = np.abs(parity_table.numpy() - posenc.positional_encoding(max_seq_len, d_model)).max()
print(f"largest difference: {parity_error:.1e}")
assert parity_error < 1e-6

# %% [markdown]
# ## 3. The exp/log route, in TensorFlow 2
#
# The English blog tutorial follows the Annotated Transformer and writes the frequencies
# through `exp` and `log`, the same numbers as the power:
#
# $$
# \omega_i = \exp\!\left(-2i \cdot \frac{\ln 10000}{d_{model}}\right).
# $$
#
# It built the table in NumPy and printed it through a TF 1 `tf.Session`. In TF 2 the
# ops run eagerly and `.numpy()` reads the result. Its sizes: 20 positions,
# `d_model = 200`, and a leading batch axis of 1.
#
# One thing not to copy: the tutorial calls its class a layer, and its `call` receives
# the inputs, but `call` never adds the table to them. It builds the table and returns it
# alone, whatever the inputs hold. A layer that encodes positions returns `x + PE`, as the
# function of section 1 does (and section 4's layers).

# %%
def exp_log_angles(max_len, d_model):
    """(max_len, d_model / 2) float32 angles pos * exp(-2i ln(10000) / d_model)."""
    position = tf.range(max_len, dtype=tf.float32)[:, None]
    div_term = tf.exp(tf.range(0, d_model, 2, dtype=tf.float32) * -(math.log(10000.0) / d_model))
    return position * div_term


def exp_log_table(max_len, d_model):
    """(1, max_len, d_model) float32 table, sines at even columns, cosines at odd."""
    angles = exp_log_angles(max_len, d_model)
    # a new last axis of (sin, cos), merged away, alternates sin, cos, sin, cos, ...
    table = tf.reshape(tf.stack([tf.sin(angles), tf.cos(angles)], axis=-1), (max_len, d_model))
    return table[tf.newaxis]


# %% [markdown]
# NumPy printed the lecture's table at 4 decimals in summarized form: rows 0, 1, 2 and
# the last three, and of each the first three and the last three columns. Ours, cut the
# same way:

# %%
exp_log_20x200 = exp_log_table(20, 200).numpy()
print(exp_log_20x200.shape)
rows = cols = [0, 1, 2, -3, -2, -1]
corners = exp_log_20x200[0][np.ix_(rows, cols)]
corners

# %% [markdown]
# The lecture's printed corners, in the same arrangement. Each printed number is within
# half a unit of the 4th decimal of ours:

# %%
lecture_corners = np.array([
    [0.0, 1.0, 0.0, 1.0, 0.0, 1.0],
    [0.8415, 0.5403, 0.7907, 1.0, 0.0001, 1.0],
    [0.9093, -0.4161, 0.9681, 1.0, 0.0002, 1.0],
    [-0.9614, -0.2752, 0.2024, 1.0, 0.0019, 1.0],
    [-0.751, 0.6603, -0.6505, 1.0, 0.002, 1.0],
    [0.1499, 0.9887, -0.9988, 1.0, 0.0021, 1.0],
])
print(f"largest difference: {np.abs(corners - lecture_corners).max():.1e}")
assert np.abs(corners - lecture_corners).max() <= 0.5e-4

# %% [markdown]
# And the whole table matches `posenc`, though about ten times less closely than
# section 2's table. Is the float32 `exp` to blame? No: section 2's power route, run at
# this size, is off by about as much (within a factor of two).

# %%
reference = posenc.positional_encoding(20, 200)
exp_log_error = np.abs(exp_log_20x200[0] - reference).max()
power_error = np.abs(column_parity_table(20, 200).numpy() - reference).max()
print(f"exp/log route: {exp_log_error:.1e}   power route: {power_error:.1e}   (section 2: {parity_error:.1e})")
assert 0.5 < exp_log_error / power_error < 2, "the two routes' errors within a factor of two"

# %% [markdown]
# The cause is the size of the angles. At `d_model = 200` the second frequency is
# $10000^{-2/200} \approx 0.912$, so by position 19 the angle has grown to 17.3, and float32
# values near 17 are $1.9 \times 10^{-6}$ apart. Rounding $pos \cdot \omega_i$ (and
# $\omega_i$ itself) to float32 moves such an angle by up to about $10^{-6}$, and its sine and
# cosine move with it. In section 2, with 10 positions and $\omega_1 \approx 0.316$ at
# `d_model = 16`, every angle that is not a whole number stays below 2.9. The evidence:
# the float32 angles are off by about $10^{-6}$; taking sine and cosine of those same angles
# exactly (in float64) leaves the whole error; TensorFlow's float32 `sin` and `cos` add
# less than $10^{-7}$; and the largest error sits in the last row.

# %%
float32_angles = exp_log_angles(20, 200).numpy()
angle_error = np.abs(float32_angles - posenc.angles(np.arange(20), 200)).max()
float64_angles = float32_angles.astype(np.float64)  # the same numbers, no rounding
exact_functions = posenc.interleave(np.sin(float64_angles), np.cos(float64_angles))
exact_functions_error = np.abs(exact_functions - reference).max()
tf_functions_error = np.abs(exp_log_20x200[0] - exact_functions.astype(np.float32)).max()
worst_row = np.unravel_index(np.abs(exp_log_20x200[0] - reference).argmax(), reference.shape)[0]
print(f"second frequency {10000 ** (-2 / 200):.3f}, its angle at position 19: {19 * 10000 ** (-2 / 200):.1f}, "
      f"float32 spacing there: {np.spacing(np.float32(17.3)):.1e}; section 2's largest: {9 * 10000 ** (-2 / 16):.2f}")
print(f"angles: {angle_error:.1e}   sin/cos exact on them: {exact_functions_error:.1e}   "
      f"TF's own sin/cos: {tf_functions_error:.1e}   worst row: {worst_row}")
assert angle_error < np.spacing(np.float32(17.3)), "each angle within one float32 step of the exact one"

# %% [markdown]
# The picture. Left: four sine columns over 100 positions; column $2i$ has wavelength
# $2\pi \cdot 10000^{2i/d_{model}}$, here about 16, 40, 100 and 250 positions. Right: the lecture's
# $20 \times 200$ table. The first columns change from row to row, the last ones hardly
# at all (the last sine stays below 0.003, the last cosine above 0.99999).

# %%
wavelengths = 2 * np.pi * 10000 ** (np.array([20, 40, 60, 80]) / 200)
print("wavelengths:", wavelengths.round(1), f" last sine at most {np.abs(exp_log_20x200[0, :, -2]).max():.4f},",
      f"last cosine at least {exp_log_20x200[0, :, -1].min():.6f}")
long_table = exp_log_table(100, 200)[0].numpy()
fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4))
for j in [20, 40, 60, 80]:
    left.plot(long_table[:, j], label=f"column {j}")
left.set(xlabel="position", ylabel="value", title="sine columns, d_model = 200")
left.legend(loc="lower left", fontsize="small", framealpha=1)
image = right.imshow(exp_log_20x200[0], aspect="auto", cmap="RdBu", vmin=-1, vmax=1)
right.set(xlabel="column", ylabel="position", title="the (20, 200) table")
fig.colorbar(image, ax=right)
plt.show()

# %% [markdown]
# ## 4. In a Keras model
#
# TensorFlow's own Transformer tutorial (on tensorflow.org) puts the encoding into a Keras
# layer that does three things: it looks up the token embeddings, multiplies them by
# $\sqrt{d_{model}}$ (so that they are not drowned by the table, whose rows have norm
# $\sqrt{d_{model}/2}$; notebook 02 measures this), and adds the first `seq` rows of the
# table. Its table puts all the sines first, then all the cosines (`posenc`'s
# `layout="sin_cos"`), computed in float64 and cast to float32. Written by hand:

# %%
class EmbedAndAddPositions(keras.layers.Layer):
    """tokens (batch, seq) -> embedding * sqrt(d_model) + PE[:seq], shape (batch, seq, d_model)."""

    def __init__(self, vocab, d_model, max_len=2048, **kwargs):
        super().__init__(**kwargs)
        self.d_model = d_model
        self.embedding = keras.layers.Embedding(vocab, d_model)
        half = d_model // 2
        angles = np.arange(max_len)[:, None] * 10000.0 ** (-np.arange(half) / half)  # float64
        self.table = tf.constant(np.concatenate([np.sin(angles), np.cos(angles)], axis=-1), tf.float32)

    def call(self, tokens):
        seq = tf.shape(tokens)[1]
        return self.embedding(tokens) * math.sqrt(self.d_model) + self.table[tf.newaxis, :seq]


keras.utils.set_random_seed(0)
by_hand = EmbedAndAddPositions(vocab=50, d_model=16)
sample_tokens = np.random.default_rng(0).integers(0, 50, size=(2, 10)).astype("int32")
embedded_by_hand = by_hand(sample_tokens).numpy()
print(embedded_by_hand.shape)
scaled = by_hand.embedding(sample_tokens).numpy() * 4.0  # sqrt(16)
np.testing.assert_allclose(embedded_by_hand - scaled, np.broadcast_to(
    posenc.positional_encoding(10, 16, layout="sin_cos"), (2, 10, 16)), rtol=0, atol=1e-6)

# %% [markdown]
# The package splits that layer in two, so that the encoding can follow any embedding:
# Keras's `Rescaling` layer multiplies by $\sqrt{d_{model}}$, and
# `posenc.tensorflow.PositionalEncoding` adds the table, here in the tutorial's layout.
# With the same embedding weights the two give the same output.

# %%
packaged_in = keras.Input((None,), dtype="int32")
packaged_out = ptf.PositionalEncoding(16, layout="sin_cos")(
    keras.layers.Rescaling(math.sqrt(16))(keras.layers.Embedding(50, 16, name="tokens")(packaged_in)))
packaged = keras.Model(packaged_in, packaged_out)
packaged.get_layer("tokens").set_weights(by_hand.embedding.get_weights())
gap = np.abs(packaged(sample_tokens).numpy() - embedded_by_hand).max()
print(f"largest difference: {gap:.1e}")
assert gap < 1e-6

# %% [markdown]
# ### A small model
#
# `posenc.tensorflow.PositionalEncoding` is a Keras 3 layer: `call(x)` adds the first
# `seq` rows of the table to `x` of shape `(batch, seq, d_model)`, then applies dropout.
# Here it sits between an embedding and a dense head (this toy skips the scaling). The
# sequence axis is `None`, so one model takes any length. Seeding Keras fixes the initial
# weights.

# %%
keras.utils.set_random_seed(0)
vocab, d_model = 50, 16

tokens_in = keras.Input((None,), dtype="int32")
embedded = keras.layers.Embedding(vocab, d_model, name="embedding")(tokens_in)
encoded = ptf.PositionalEncoding(d_model, max_len=64, dropout=0.1, name="posenc")(embedded)
logits = keras.layers.Dense(4, name="head")(encoded)
model = keras.Model(tokens_in, logits)
[layer.name for layer in model.layers[1:]]

# %% [markdown]
# A batch of 2 sequences of 10 tokens. Outside training, dropout passes its input
# through, so the output is deterministic.

# %%
tokens = np.random.default_rng(0).integers(0, vocab, size=(2, 10)).astype("int32")
out = model(tokens).numpy()
print(out.shape)
print(out[0, :3])
np.testing.assert_array_equal(model(tokens).numpy(), out)

# %% [markdown]
# The layer adds exactly the table: its output minus its input is
# `posenc.tensorflow.positional_encoding(10, 16)`, which is NumPy `posenc`'s table too.

# %%
x = model.get_layer("embedding")(tokens)
added = (model.get_layer("posenc")(x) - x).numpy()
np.testing.assert_allclose(added[0], ptf.positional_encoding(10, d_model).numpy(), atol=1e-6)
added[0, :3]

# %% [markdown]
# Other lengths need no new model: 7 tokens, and 80, more than `max_len = 64` (the
# layer computes the rows it lacks in the call). Inside a [`tf.function`](https://www.tensorflow.org/guide/function)
# (a graph traced from the Python code) traced once for any length, the model gives the same numbers as eagerly.

# %%
@tf.function(input_signature=[tf.TensorSpec((None, None), tf.int32)])
def predict(batch):
    return model(batch)


for n in [7, 10, 80]:
    batch = np.random.default_rng(n).integers(0, vocab, size=(3, n)).astype("int32")
    eager, traced = model(batch).numpy(), predict(batch).numpy()
    print(n, eager.shape, "same as eager (to 1e-6):", np.allclose(traced, eager, rtol=0, atol=1e-6))
assert predict.experimental_get_tracing_count() == 1, "one trace serves every length"

# %% [markdown]
# The layer is registered as a Keras serializable: its config holds its arguments (the
# convention whole, base and layout included), and `from_config` rebuilds a layer that
# gives the same output. So does the whole model: `keras.models.clone_model` rebuilds every
# layer from its config, and we copy the weights over.

# %%
layer = model.get_layer("posenc")
config = layer.get_config()
print({key: config[key] for key in ["d_model", "max_len", "dropout"]})
print({key: config["convention"][key] for key in ["name", "base", "layout"]})
rebuilt = ptf.PositionalEncoding.from_config(config)
print("rebuilt layer, same output:", np.array_equal(rebuilt(x).numpy(), layer(x).numpy()))

clone = keras.models.clone_model(model)
clone.set_weights(model.get_weights())
np.testing.assert_array_equal(clone(tokens).numpy(), out)
print(type(clone.get_layer("posenc")).__name__, clone(tokens).shape)

# %% [markdown]
# ## Why doesn't my table match? `posenc.diagnose`
#
# `posenc.diagnose` takes a table (a TF tensor here) and says what it is: the paper's table,
# a known convention, or which of the common mistakes reproduce it. Below, the TF text
# tutorial's route (all sines, then all cosines) with switches for the other ways it
# reached learners, diagnosed once per switch.

# %%
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")
import numpy as np
import tensorflow as tf

import posenc


def draft_table(length, depth, *, pairs=None, interleave=False):
    pairs = depth / 2 if pairs is None else pairs  # depth // 2 pairs: a column short for odd depth
    positions = tf.range(length, dtype=tf.float32)[:, None]
    exponents = tf.range(pairs, dtype=tf.float32)[None, :] / (depth / 2)
    angles = positions / 10000.0**exponents
    if interleave:  # sin and cos of each pair side by side: the paper's layout
        return tf.reshape(tf.stack([tf.sin(angles), tf.cos(angles)], axis=-1), (length, -1))
    return tf.concat([tf.sin(angles), tf.cos(angles)], axis=-1)  # all sines, then all cosines


# %%
cases = {
    "concatenated, depth 8": (draft_table(10, 8), ["matches", "layout"]),
    "concatenated, depth 7": (draft_table(10, 7), ["layout", "extra_column"]),
    "interleaved, depth 7, 7 // 2 pairs": (draft_table(10, 7, pairs=7 // 2, interleave=True), ["missing_column"]),
}
for name, (table, codes) in cases.items():
    found = posenc.diagnose(table)
    assert found.codes == codes, f"{name}: diagnose names {codes}"
    print(f"{name}, shape {tuple(table.shape)}:\n{found}", end="\n\n")

# %% [markdown]
# The concatenated layout is a convention, not a mistake: the permutation the diagnosis
# gives turns it into the paper's table. An odd depth is where it goes wrong: `tf.range(3.5)`
# has four entries, so four sines and four cosines make eight columns for a depth of 7.

# %%
perm = posenc.diagnose(draft_table(10, 8)).findings[1].details["permutation"]
print("perm:", perm)
np.testing.assert_allclose(tf.gather(draft_table(10, 8), perm, axis=1), draft_table(10, 8, interleave=True))

# %% [markdown]
# At long lengths the float32 angles of this route drift from the exact values. That is
# the paper's table all the same, and `diagnose` says how far and from which row: here
# over 5000 positions.

# %%
# NBVAL_IGNORE_OUTPUT
# (the digits of the drift depend on the TensorFlow release's float32 pow)
long_draft = draft_table(5000, 64, interleave=True)
found = posenc.diagnose(long_draft)
assert found.codes == ["matches", "float32_precision"] and found.matches_paper
drift = found.findings[1].details
print(found.findings[1].message)

# %% [markdown]
# TensorFlow prints the shape with the tensor, so a copied output is enough even when it
# is summarised to its corners: here a `(1, 20, 200)` table, the shape the exp/log lecture
# printed, as a cell shows it.

# %%
printed_table = repr(draft_table(20, 200, interleave=True)[None])
print(printed_table[:120], "...")
assert "..." in printed_table and posenc.diagnose(printed_table).matches_paper

# %% [markdown]
# ## Summary
#
# - The Portuguese lecture's function numbers the positions with a running sum, so it needs
#   no length argument. Its output reproduces the lecture's print in 19 of 20 entries; the
#   20th is a last-digit difference that a float32 sine of 1 one step higher explains.
# - Its table is `posenc`'s `layout="cos_sin"`, not the paper's, despite its docstring. The
#   two hold the same columns: `cos_sin[:, to_paper]` is the paper's table. A model ports
#   between the two layouts when every weight on the residual stream is permuted, not one layer.
# - The Chinese notes' rate per column, $10000^{-2\lfloor j/2 \rfloor / d}$, with `tf.where`
#   by parity, gives the paper's table within $10^{-6}$, far inside their $10^{-3}$ check.
# - The exp/log route reproduces the blog's `(1, 20, 200)` corners to 4 decimals. Its error
#   of about $10^{-6}$ comes from rounding the angles to float32, not from `exp`.
# - TensorFlow's tutorial layer is `embedding * sqrt(d_model) + PE[:seq]`, sin|cos;
#   `Rescaling` followed by `posenc.tensorflow.PositionalEncoding` gives the same output, for
#   any length, inside a `tf.function` too, and the layer rebuilds from its config.
# - `posenc.diagnose` calls the concatenated layout a convention (and gives the permutation),
#   and names an odd depth's extra or missing column and the float32 drift of long tables.

# %% [markdown]
# ## Exercises
#
# Each exercise gives a draft with a mistake in it, then a check: run the check, read what it
# says, fix the draft and run both cells again until it says "Correct!". The feedback stored
# here is the one for the draft as given. Stuck? `nb03.NAME.hint()` gives a nudge and
# `nb03.NAME.solution()` prints the reference code the check compares against (NAME is the
# word before `.check`).

# %%
from posenc.exercises import nb03

# %% [markdown]
# ### Exercise 1 · The lecture's function, in the paper's layout
#
# Write `add_paper_encoding(x)`: like section 1's `add_cos_sin_encoding`, it takes `x` of
# shape `(batch, seq, d_model)` and numbers the positions with a running sum, but it adds the
# paper's interleaved table. The draft swaps the two halves, sines first: is that enough?
# When the columns are only out of order, the check says which of the paper's columns each of
# yours holds.

# %%
def add_paper_encoding(x, base=10000.0):
    batch, seq, d_model = tf.unstack(tf.shape(x))
    positions = tf.cumsum(tf.ones((batch, seq)), axis=1) - 1.0
    pair = tf.range(d_model // 2, dtype=tf.float32)
    omega = tf.pow(base, -2.0 * pair / tf.cast(d_model, tf.float32))
    angles = tf.matmul(positions[:, :, None], omega[None, :])
    return x + tf.concat([tf.sin(angles), tf.cos(angles)], axis=-1)


# %%
nb03.interleaved.check(add_paper_encoding)

# %% [markdown]
# ### Exercise 2 · The exp/log route, in float64
#
# Section 3 found that the float32 angles carry the exp/log route's error. Make
# `accurate_table(length, d_model)` compute everything in float64 and round to float32 once,
# at the end: then every entry is within half a float32 step of the exact value. The draft
# takes the positions in float64, yet the check finds it off at the lecture's size, and
# more at 5000 positions. Why?

# %%
def accurate_table(length, d_model):
    position = tf.range(length, dtype=tf.float64)[:, None]
    div_term = tf.exp(tf.range(0, d_model, 2, dtype=tf.float32) * -(math.log(10000.0) / d_model))
    angles = position * tf.cast(div_term, tf.float64)
    table = tf.reshape(tf.stack([tf.sin(angles), tf.cos(angles)], axis=-1), (length, d_model))
    return tf.cast(table, tf.float32)


# %%
nb03.accurate.check(accurate_table)

# %% [markdown]
# ### Exercise 3 · Any width
#
# Complete `my_positional_encoding(length, d_model)` so that it returns the paper's
# `(length, d_model)` table for every width, an odd one included (its last column is a
# sine). The check tries `(10, 6)`, `(100, 64)` and `(10, 7)`; `posenc.diagnose` says what
# the table of one size is.

# %%
def my_positional_encoding(length, d_model):
    positions = tf.range(length, dtype=tf.float32)[:, None]
    rates = 1.0 / 10000.0 ** (tf.range(0, d_model, 2, dtype=tf.float32) / d_model)
    angles = positions * rates[None, :]
    pairs = tf.stack([tf.cos(angles), tf.sin(angles)], axis=-1)
    return tf.reshape(pairs, (length, -1))


# %%
print(nb03.odd_width.check(my_positional_encoding))
print(posenc.diagnose(my_positional_encoding(10, 7)))

# %% [markdown]
# ## Cross-checks
#
# The batch of checks behind the sentences above, in one place.

# %%
# Cross-checks of section 1: what the prints show, as exact claims
assert np.spacing(np.float32(0.125)) > 1e-8 > np.spacing(np.float32(0.1249))
assert all(same_print_count(v) == 1 for v in every_value if abs(v) >= 0.125)
assert np.array_equal(ours[:, 0], lecture_sample[:, 0] + [1, 0])
assert [tuple(i) for i in np.argwhere(differs)] == [(0, 3, 0), (1, 1, 1), (1, 2, 0)] and differs.max() == 1
assert lecture_sample[0, 1, 1] + one_step_up == lecture_output[0, 1, 1] == lecture_sample[0, 1, 1] + sine_of_1
assert ulps_apart(tf.cos(five).numpy(), correctly_rounded).max() == 0
assert ulps_apart(tf.cos(in_the_batch).numpy()[:, :, 0], correctly_rounded)[:, 2].tolist() == [1, 1]
assert printed(ours[0, 2, 0]) == printed(lecture_output[0, 2, 0]) != printed(with_correct_cosine)
assert not np.allclose(cos_sin, paper, atol=1e-2)
assert (from_cos_sin[posenc.column_order(8, "interleaved")] == to_paper).all()
assert np.array_equal(lecture_layout[:, to_paper], paper)
assert one_layer_gap > 0.1  # far beyond round-off: permuting one layer changes the model

# %%
# Cross-checks of sections 2 and 3. Section 2: the rates are posenc's frequencies (float32 round-off)
np.testing.assert_allclose(rates[0::2], posenc.frequencies(16), rtol=1e-6)

# Section 3: the numbers the prose quotes, at the digits it quotes them
assert exp_log_error < 2e-6 and exp_log_error > 5 * parity_error  # "about ten times less closely"
assert round(10000 ** (-2 / 200), 3) == 0.912 and round(19 * 10000 ** (-2 / 200), 1) == 17.3
assert round(float(np.spacing(np.float32(17.3))), 7) == 1.9e-6 and 9 * 10000 ** (-2 / 16) < 2.9
assert angle_error > 0.5e-6  # "about 1e-6"
assert exact_functions_error > 0.9 * exp_log_error and tf_functions_error < 1e-7  # the angles carry the error
assert worst_row == 19
np.testing.assert_allclose(wavelengths, [16, 40, 100, 250], rtol=0.02)
assert np.abs(exp_log_20x200[0, :, -2]).max() < 0.003 and exp_log_20x200[0, :, -1].min() > 0.99999

# %%
# Cross-checks of section 4: the layer's table is NumPy posenc's too; a rebuilt layer gives the same output
np.testing.assert_allclose(added[1], posenc.positional_encoding(10, 16), atol=1e-6)
np.testing.assert_array_equal(rebuilt(x).numpy(), layer(x).numpy())
for n in [7, 10, 80]:
    batch = np.random.default_rng(n).integers(0, vocab, size=(3, n)).astype("int32")
    np.testing.assert_allclose(predict(batch).numpy(), model(batch).numpy(), atol=1e-6)

# diagnose: the interleaved draft is the paper's table; an odd depth's tf.range(depth / 2) has one
# entry too many; the drift of float32 angles over 5000 positions is of the order of
# position x float32 epsilon (5000 x 6e-8 = 3e-4)
assert posenc.diagnose(draft_table(10, 8, interleave=True)).matches_paper
assert tf.range(3.5).shape == (4,)
assert 1e-4 < drift["max_deviation"] < 1e-2 and 100 < drift["from_row"] < 1000

# %%
# Cross-checks of exercise 2: the draft is off at the lecture's size and more at 5000 positions;
# the solution's one rounding keeps every entry within half a float32 step (at most half the spacing below 1)
draft_errors = [np.abs(accurate_table(n, d).numpy() - posenc.positional_encoding(n, d, dtype=np.float64)).max()
                for n, d in [(20, 200), (5000, 64)]]
assert 1e-7 < draft_errors[0] < draft_errors[1]
solution_error = np.abs(nb03.accurate_solution(20, 200).numpy() - posenc.positional_encoding(20, 200, dtype=np.float64)).max()
assert solution_error <= np.spacing(np.float32(0.5)) / 2 + 1e-12
