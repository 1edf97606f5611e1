# %% [markdown]
# # 03 · Positional encoding in TensorFlow
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/posenc-org/posenc/blob/main/notebooks/03_tensorflow.ipynb)
#
# Three lecture routes to the sinusoidal table, rebuilt with TensorFlow 2 ops (eager, no
# `tf.Session`): a batch-aware function that adds the table to its input, a table built
# column by column, and the exp/log route of the Annotated Transformer. Each one is
# checked against the numbers its lecture printed and against `posenc`. At the end
# `posenc.tensorflow.PositionalEncoding` goes into a small Keras 3 model.
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
# The first lecture writes a function that takes embeddings `x` of shape
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
# printed result are copied here as constants. NumPy printed each float32 with the
# shortest digits that identify it, so these are the lecture's exact numbers.

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
# With `d_model = 2` there is one frequency, $\omega_0 = 1$: column 0 gets $\cos(pos)$
# and column 1 gets $\sin(pos)$, so row 0 of the output is the sample plus `(1, 0)`.
# Our reproduction agrees with the printed output to one unit in the last place of a
# float32 (one sine rounded the other way on a different CPU).

# %%
ours = add_cos_sin_encoding(tf.constant(lecture_sample)).numpy()
print(ours.shape)
print(ours[0])
ulps = np.testing.assert_array_max_ulp(ours, lecture_output, maxulp=1)
print("largest difference in float32 ulps:", int(ulps.max()))

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
assert not np.allclose(cos_sin, paper, atol=1e-2)

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
assert (from_cos_sin[posenc.column_order(d_model, "interleaved")] == to_paper).all()
print(to_paper)
np.testing.assert_allclose(cos_sin[:, to_paper], paper, atol=1e-6)
cos_sin[:, to_paper]

# %% [markdown]
# Picking columns is multiplying by a permutation matrix, so the linear layer that
# follows the encoding in a model can absorb it: trained with either layout, a model
# learns the same thing. The mistake is in the docstring, not in the model.

# %%
permutation = np.eye(d_model, dtype=np.float32)[:, to_paper]
np.testing.assert_allclose(cos_sin @ permutation, paper, atol=1e-6)
print(permutation.astype(int))

# %% [markdown]
# ## 2. Column by column: a rate for `j // 2`
#
# The second lecture gives every column $j$ its own angle rate,
# $10000^{-2\lfloor j/2 \rfloor / d_{model}}$, so columns `2i` and `2i + 1` share one.
# Then it takes the sine of the even columns and the cosine of the odd ones. Its sizes:
# 10 positions, `d_model = 16`.

# %%
max_seq_len, d_model = 10, 16
column = tf.range(d_model)
rates = tf.pow(10000.0, -tf.cast(2 * (column // 2), tf.float32) / d_model)
assert (rates[0::2].numpy() == rates[1::2].numpy()).all()
np.testing.assert_allclose(rates[0::2], posenc.frequencies(d_model), rtol=1e-6)
rates.numpy()

# %% [markdown]
# The lecture fills the even and the odd columns of a NumPy array by strided assignment.
# TensorFlow tensors cannot be assigned to, so we take both functions of the whole
# `(10, 16)` grid of angles and let `tf.where` pick by column parity.

# %%
angle_grid = tf.range(max_seq_len, dtype=tf.float32)[:, None] * rates[None, :]
table_003 = tf.where(column % 2 == 0, tf.sin(angle_grid), tf.cos(angle_grid))
print(tuple(table_003.shape), table_003.dtype.name)
table_003.numpy()[:4]

# %% [markdown]
# The lecture checked its table with a tolerance of `1e-3`. Against `posenc` (angles in
# float64, one rounding at the end) this float32 route is much closer than that:

# %%
diff_003 = np.abs(table_003.numpy() - posenc.positional_encoding(max_seq_len, d_model)).max()
print(f"max abs diff: {diff_003:.1e}")
assert diff_003 < 1e-6

# %% [markdown]
# ## 3. The exp/log route, in TensorFlow 2
#
# The third lecture follows the Annotated Transformer and writes the frequencies
# through `exp` and `log`, the same numbers as the power:
#
# $$
# \omega_i = \exp\!\left(-2i \cdot \frac{\ln 10000}{d_{model}}\right).
# $$
#
# It built the table in NumPy and printed it through a TF 1 `tf.Session`. In TF 2 the
# ops run eagerly and `.numpy()` reads the result. Its sizes: 20 positions,
# `d_model = 200`, and a leading batch axis of 1.

# %%
def exp_log_table(max_len, d_model):
    """(1, max_len, d_model) float32 table, sines at even columns, cosines at odd."""
    position = tf.range(max_len, dtype=tf.float32)[:, None]
    div_term = tf.exp(tf.range(0, d_model, 2, dtype=tf.float32) * -(math.log(10000.0) / d_model))
    angles = position * div_term  # (max_len, d_model / 2)
    # a new last axis of (sin, cos), merged away, alternates sin, cos, sin, cos, ...
    table = tf.reshape(tf.stack([tf.sin(angles), tf.cos(angles)], axis=-1), (max_len, d_model))
    return table[tf.newaxis]


# %% [markdown]
# NumPy printed the lecture's table at 4 decimals in summarized form: rows 0, 1, 2 and
# the last three, and of each the first three and the last three columns. Ours, cut the
# same way:

# %%
table_004 = exp_log_table(20, 200).numpy()
print(table_004.shape)
rows = cols = [0, 1, 2, -3, -2, -1]
corners = table_004[0][np.ix_(rows, cols)]
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
print(f"max abs diff: {np.abs(corners - lecture_corners).max():.1e}")
assert np.abs(corners - lecture_corners).max() <= 0.5e-4

# %% [markdown]
# And the whole table matches `posenc`. The float32 `exp` carries a rounding of its own
# into the frequencies, hence a slightly larger difference than in section 2:

# %%
diff_004 = np.abs(table_004[0] - posenc.positional_encoding(20, 200)).max()
print(f"max abs diff: {diff_004:.1e}")
assert diff_004 < 1e-5

# %% [markdown]
# The picture. Left: four sine columns over 100 positions; column $2i$ has wavelength
# $2\pi \cdot 10000^{2i/d_{model}}$, here about 16, 40, 100 and 250 positions. Right: the lecture's
# $20 \times 200$ table. The first columns change from row to row, the last ones hardly
# at all (sines near 0, cosines near 1).

# %%
long_table = exp_log_table(100, 200)[0].numpy()
fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4))
for j in [20, 40, 60, 80]:
    left.plot(long_table[:, j], label=f"column {j}")
left.set(xlabel="position", ylabel="value", title="sine columns, d_model = 200")
left.legend(loc="lower left", fontsize="small", framealpha=1)
image = right.imshow(table_004[0], aspect="auto", cmap="RdBu", vmin=-1, vmax=1)
right.set(xlabel="column", ylabel="position", title="the (20, 200) table")
fig.colorbar(image, ax=right)
plt.show()

# %% [markdown]
# ## 4. `posenc.tensorflow.PositionalEncoding` in a Keras model
#
# The package does the job as a Keras 3 layer: `call(x)` adds the first `seq` rows of
# the table to `x` of shape `(batch, seq, d_model)`, then applies dropout. Here it sits
# between an embedding and a dense head. The sequence axis is `None`, so one model takes
# any length. Seeding Keras fixes the initial weights.

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

# %% [markdown]
# The layer adds exactly the table: its output minus its input is
# `posenc.tensorflow.positional_encoding(10, 16)`, which is NumPy `posenc`'s table too.

# %%
x = model.get_layer("embedding")(tokens)
added = (model.get_layer("posenc")(x) - x).numpy()
np.testing.assert_allclose(added[0], ptf.positional_encoding(10, d_model).numpy(), atol=1e-6)
np.testing.assert_allclose(added[1], posenc.positional_encoding(10, d_model), atol=1e-6)
added[0, :3]

# %% [markdown]
# Other lengths need no new model: 7 tokens, and 80, more than `max_len = 64` (the
# layer computes the rows it lacks in the call). Inside a `tf.function` traced once for
# any length, the model gives the same numbers as eagerly.

# %%
@tf.function(input_signature=[tf.TensorSpec((None, None), tf.int32)])
def predict(batch):
    return model(batch)


for n in [7, 10, 80]:
    batch = np.random.default_rng(n).integers(0, vocab, size=(3, n)).astype("int32")
    eager, traced = model(batch).numpy(), predict(batch).numpy()
    np.testing.assert_allclose(traced, eager, atol=1e-6)
    print(n, eager.shape)
print("traces:", predict.experimental_get_tracing_count())

# %% [markdown]
# The layer is registered as a Keras serializable: its config holds its arguments (the
# convention whole, base and layout included), and `from_config` rebuilds a layer that
# gives the same output. So does the whole model, rebuilt from its config with the
# weights copied over.

# %%
layer = model.get_layer("posenc")
config = layer.get_config()
print({key: config[key] for key in ["d_model", "max_len", "dropout"]})
print({key: config["convention"][key] for key in ["name", "base", "layout"]})
rebuilt = ptf.PositionalEncoding.from_config(config)
np.testing.assert_array_equal(rebuilt(x).numpy(), layer(x).numpy())

clone = keras.Model.from_config(model.get_config())
clone.set_weights(model.get_weights())
np.testing.assert_array_equal(clone(tokens).numpy(), out)
print(type(clone.get_layer("posenc")).__name__, clone(tokens).shape)

# %% [markdown]
# ## Exercises: why doesn't my table match?
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


cases = {
    "concatenated, depth 8": (draft_table(10, 8), ["matches", "layout"]),
    "concatenated, depth 7": (draft_table(10, 7), ["layout", "extra_column"]),
    "interleaved, depth 7, 7 // 2 pairs": (draft_table(10, 7, pairs=7 // 2, interleave=True), ["missing_column"]),
}
for name, (table, codes) in cases.items():
    found = posenc.diagnose(table)
    assert found.codes == codes
    print(f"{name}, shape {tuple(table.shape)}:\n{found}", end="\n\n")
assert posenc.diagnose(draft_table(10, 8, interleave=True)).matches_paper

# %% [markdown]
# The concatenated layout is a convention, not a mistake: the permutation the diagnosis
# gives turns it into the paper's table. An odd depth is where it goes wrong: `tf.range(3.5)`
# has four entries, so four sines and four cosines make eight columns for a depth of 7.

# %%
perm = posenc.diagnose(draft_table(10, 8)).findings[1].details["permutation"]
print("perm:", perm)
np.testing.assert_allclose(tf.gather(draft_table(10, 8), perm, axis=1), draft_table(10, 8, interleave=True))
assert tf.range(3.5).shape == (4,)

# %% [markdown]
# At long lengths the float32 angles of this route drift from the exact values. That is
# the paper's table all the same, and `diagnose` says how far and from which row: here
# over 5000 positions.

# %%
long_table = draft_table(5000, 64, interleave=True)
found = posenc.diagnose(long_table)
assert found.codes == ["matches", "float32_precision"] and found.matches_paper
drift = found.findings[1].details
assert 1e-4 < drift["max_deviation"] < 1e-2
print(found.findings[1].message)

# %% [markdown]
# TensorFlow prints the shape with the tensor, so a copied output is enough even when it
# is summarised to its corners: here a `(1, 20, 200)` table, the shape the exp/log lecture
# printed, as a cell shows it.

# %%
printed = repr(draft_table(20, 200, interleave=True)[None])
print(printed[:120], "...")
assert "..." in printed and posenc.diagnose(printed).matches_paper

# %% [markdown]
# ### Your turn
#
# Complete `my_positional_encoding` so that it returns the paper's `(length, d_model)`
# table, starting from the first draft stored here, then run the check below it: it says
# what your table is. When it says "This is the paper's table." for both sizes, you are
# done.

# %%
def my_positional_encoding(length, d_model):
    positions = tf.range(length, dtype=tf.float32)[:, None]
    rates = 1.0 / 10000.0 ** (tf.range(0, d_model, 2, dtype=tf.float32) / d_model)
    angles = positions * rates[None, :]
    pairs = tf.stack([tf.cos(angles), tf.sin(angles)], axis=-1)
    return tf.reshape(pairs, (length, -1))


# %%
for length, d_model in [(10, 6), (100, 64)]:
    print(f"{length} x {d_model}:", posenc.diagnose(my_positional_encoding(length, d_model)))
