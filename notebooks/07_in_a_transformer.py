# %% [markdown]
# # 07 · The sinusoidal encoding inside a tiny Transformer, trained in PyTorch and Keras
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/posenc-org/posenc/blob/main/notebooks/07_in_a_transformer.ipynb)
#
# Why add a table of sines and cosines to the embeddings at all? Because without it a
# Transformer cannot tell one order of its input from another. We show that directly on
# one encoder layer, then train a tiny Transformer on a task that is all about order, three
# ways: with no positions, with learned position embeddings, and with the sinusoidal
# encoding. Then we test the trained models on sequences longer than any they saw, and
# repeat the comparison in Keras. The models are small enough to train on a laptop CPU.
#
# **Question:** Why does a Transformer need positions at all, and what does the sinusoidal table do for a small trained model?
#
# **You will be able to:**
# - show that self-attention without positions is permutation-equivariant, and that adding the table breaks the symmetry;
# - add the table to a batch of embeddings with the $\sqrt{d_{model}}$ scale;
# - compare tiny Transformers trained with no, learned and sinusoidal positions, in PyTorch and in Keras;
# - tell what a formula defined at every position does, and does not, give beyond the training length.
#
# **Prerequisites:** notebooks 01 and 02 · **Time:** about 40 minutes

# %%
# On Colab, install posenc from GitHub; elsewhere `make lab` has already installed it.
import sys

if "google.colab" in sys.modules:
    # %pip install --quiet "posenc @ git+https://github.com/posenc-org/posenc@main"

# %% [markdown]
# One thread and deterministic algorithms make every run on a machine repeat exactly;
# the clock measures this notebook's running time, printed at the end.

# %%
# %matplotlib inline
import inspect
import time

import matplotlib.pyplot as plt
import numpy as np
import torch
from torch import nn

import posenc.torch
from posenc import lessons
from posenc.lessons import (
    BATCH, IGNORE, STEPS, TRAIN_LENGTH, VOCAB, LearnedPositions, accuracy, copy_previous_task, first_step_above,
    order_blind_ceiling, predict, train,
)

torch.set_num_threads(1)
torch.use_deterministic_algorithms(True)
torch.manual_seed(0)
started = time.perf_counter()

# %% [markdown]
# ## 1. Without positions, order is invisible
#
# A Transformer encoder layer (PyTorch's `nn.TransformerEncoderLayer`) mixes the vectors of a
# sequence by [self-attention](https://d2l.ai/chapter_attention-mechanisms-and-transformers/self-attention-and-positional-encoding.html):
# each vector's output is a weighted average of all the vectors, with weights that come from
# comparing vectors with each other. Then it transforms each vector on its own. Nothing in
# it knows where a vector sits. So if we shuffle the input, the output comes out shuffled in
# the same way: the layer is [*permutation-equivariant*](https://en.wikipedia.org/wiki/Equivariant_map),
# $f(x_{\sigma}) = f(x)_{\sigma}$ for every reordering $\sigma$. (Equivariant, not *invariant*: the
# outputs do change, they move with their tokens.) We check it on a random batch of 2
# sequences of 10 vectors, in eval mode and without dropout, so the layer is a plain function.

# %%
D_MODEL = 32
layer = nn.TransformerEncoderLayer(D_MODEL, nhead=4, dim_feedforward=64, dropout=0.0, batch_first=True).eval()
x = torch.randn(2, 10, D_MODEL)
shuffle = torch.tensor([3, 7, 0, 9, 1, 5, 8, 2, 6, 4])

with torch.no_grad():
    out, out_of_shuffled = layer(x), layer(x[:, shuffle])
torch.testing.assert_close(out_of_shuffled, out[:, shuffle])  # layer(shuffled x) == shuffled layer(x)

# %% [markdown]
# The two agree up to round-off (the sums inside attention run in another order), within
# the float32 tolerance of `torch.testing.assert_close`: $10^{-5}$ plus $1.3 \cdot 10^{-6}$ of
# the value. Adding `posenc.torch.PositionalEncoding` (notebook 02) first breaks the symmetry: after the
# shuffle, the vector now at position 0 gets the code of position 0, not the one of the place
# it came from. Shuffling the tokens now changes what the layer computes, by far more than
# round-off: by more than 0.1, ten thousand times that tolerance.

# %%
add_positions = posenc.torch.PositionalEncoding(D_MODEL)
with torch.no_grad():
    out, out_of_shuffled = layer(add_positions(x)), layer(add_positions(x[:, shuffle]))
largest_change = (out_of_shuffled - out[:, shuffle]).abs().max().item()
print(f"largest change between layer(shuffled x) and shuffled layer(x): {largest_change:.1f}")
assert largest_change > 0.1, "more than round-off"

# %% [markdown]
# ## 2. A task that needs order: copy the previous token
#
# Each input is a sequence of 12 random tokens out of 16; at every position the model
# must output the token one place to its left. Position 0 has no left neighbour, so it is
# not scored (its target is `IGNORE`, which the loss skips). The same NumPy generator
# feeds the PyTorch and the Keras models.
#
# This task and its helpers live in `posenc.lessons` (the lessons' scaffolding, kept apart
# from the library's API), so that notebook 08 can run the same task with RoPE:
# `copy_previous_task` makes the data, `accuracy` scores predictions,
# `order_blind_ceiling` is the best an order-blind model can do (below), `train` and
# `predict` run a model, `first_step_above` reads a learning curve, and `LearnedPositions`
# is the learned position table. The constants `VOCAB`, `TRAIN_LENGTH` and `IGNORE` are
# 16, 12 and -100. Here is how the data is made (the first lines check the arguments):

# %%
print(inspect.getsource(lessons.copy_previous_task))

# %%
assert (VOCAB, TRAIN_LENGTH, IGNORE) == (16, 12, -100)
tokens, targets = copy_previous_task(np.random.default_rng(0), 1, TRAIN_LENGTH)
print("tokens: ", tokens[0])
print("targets:", targets[0])

# %% [markdown]
# Without positions, a model sees at each position its own token and the *bag* of all
# tokens, never their order. Its best guess for the left neighbour is the most frequent
# of the other tokens in the bag, which is right with probability (count of that token) /
# (length - 1). We average that over a test set: it is the ceiling for any order-blind
# model: above the $1/16$ of a random guess (the bag gives the candidates away) but under a
# half. `order_blind_ceiling` computes it with a one-hot count of each sequence's tokens;
# `accuracy` is the share of scored positions predicted right.

# %%
test_sets = {n: copy_previous_task(np.random.default_rng(n), 1000, n) for n in [TRAIN_LENGTH, 24, 48]}
ceiling = order_blind_ceiling(test_sets[TRAIN_LENGTH][0])
print(f"order-blind ceiling at length {TRAIN_LENGTH}: {ceiling:.2f}, a random guess: {1 / VOCAB:.2f}")
assert 1 / VOCAB < ceiling < 0.5, "better than a random guess, but under a half"

# %% [markdown]
# ## A tiny Transformer, three ways
#
# Token embedding, then the positions, then one encoder layer, then a linear head over the
# 16 tokens. Only the positions step differs:
#
# - `none`: nothing is added;
# - `learned`: a trainable table with one vector per position, for positions 0..11, as
#   BERT and GPT-2 do (`lessons.LearnedPositions`);
# - `sinusoidal`: `posenc.torch.PositionalEncoding`, fixed, defined for every position.
#
# Notebook 02 showed why models usually multiply their embeddings by $\sqrt{d_{model}}$
# before adding the table: embeddings with entries of size $1/\sqrt{d_{model}}$ have rows of
# norm about 1, and the table's rows, of norm $\sqrt{d_{model}/2}$, would drown them. Our
# tiny models skip the scale, because `nn.Embedding` starts from entries of size 1: its rows
# already have a norm near $\sqrt{32} \approx 5.7$ (a little less on average), more than the
# table's $\sqrt{16} = 4$. (Exercise 2 adds the table to small embeddings, with the scale.)

# %%
token_rows = nn.Embedding(VOCAB, D_MODEL).weight.detach().norm(dim=1)
table_rows = posenc.torch.positional_encoding(TRAIN_LENGTH, D_MODEL).norm(dim=1)
print(f"embedding rows: norm {token_rows.mean():.1f} on average; table rows: norm {table_rows.mean():.1f}")
assert torch.allclose(table_rows, torch.tensor(4.0)), "sqrt(d_model / 2): each pair contributes sin^2 + cos^2 = 1"

# %% [markdown]
# The seed is reset before each model is built, so the three share their initial token
# embedding, encoder and head. Each line below is one model's size.

# %%
COLORS = {"none": "C0", "learned": "C1", "sinusoidal": "C2"}
POSITIONS = {
    "none": nn.Identity,
    "learned": lambda: LearnedPositions(D_MODEL, TRAIN_LENGTH),
    "sinusoidal": lambda: posenc.torch.PositionalEncoding(D_MODEL),
}


def tiny_transformer(positions, seed=0):
    torch.manual_seed(seed)
    embed = nn.Embedding(VOCAB, D_MODEL)
    encoder_layer = nn.TransformerEncoderLayer(D_MODEL, 4, 64, dropout=0.0, batch_first=True)
    head = nn.Linear(D_MODEL, VOCAB)
    return nn.Sequential(embed, POSITIONS[positions](), encoder_layer, head)


models = {name: tiny_transformer(name) for name in POSITIONS}
for name, model in models.items():
    print(f"{name:>10}: {sum(p.numel() for p in model.parameters()):,} parameters")

# %% [markdown]
# One training function, `lessons.train`, serves all three: 300 steps (`STEPS`) of Adam
# on batches of 64 (`BATCH`) fresh sequences (the same 19 200 sequences, in the same order,
# for every model). It returns the loss and the accuracy on each batch, for the learning
# curves; `lessons.predict` runs a trained model in eval mode.

# %%
train_tokens, train_targets = copy_previous_task(np.random.default_rng(1), STEPS * BATCH, TRAIN_LENGTH)
assert STEPS * BATCH == len(train_tokens) == 19_200

# %% [markdown]
# Training prints a line every 100 steps. The exact losses depend on the platform's
# floating-point round-off, so this cell's output is not compared by the tests; the
# conclusions are asserted below.

# %%
# NBVAL_IGNORE_OUTPUT
curves = {}
for name, model in models.items():
    print(name)
    curves[name] = train(model, train_tokens, train_targets, steps=STEPS, report_every=100)

# %% [markdown]
# ## Results at the training length
#
# Accuracy on 1000 fresh sequences of length 12, next to the order-blind ceiling, and the
# first training step at which a batch was more than 90% right (`first_step_above`):

# %%
tokens, targets = test_sets[TRAIN_LENGTH]
results = {name: accuracy(predict(model, tokens), targets) for name, model in models.items()}
reached = {name: first_step_above(curves[name][1]) for name in models}

# %%
# NBVAL_IGNORE_OUTPUT
for name, value in results.items():
    print(f"{name:>10}: {value:.2f}   above 0.9 from step {reached[name]}")
print(f"{'ceiling':>10}: {ceiling:.2f}   (best possible without order)")

# %% [markdown]
# Both position methods solve the task (above 0.9 on the test set).

# %%
assert min(results["sinusoidal"], results["learned"]) > 0.9

# %% [markdown]
# Without positions the model stays below 0.5, within 0.05 of the order-blind ceiling (it
# can do no better, and it finds about the best an order-blind rule can do), and never gets
# a training batch more than 90% right (checked at the end). It is still equivariant after
# training: its logits for a shuffled input are its logits for the input, shuffled, so order
# cannot reach its predictions.

# %%
shuffle = np.random.default_rng(2).permutation(TRAIN_LENGTH)
with torch.no_grad():
    logits = models["none"](torch.from_numpy(tokens))
    torch.testing.assert_close(models["none"](torch.from_numpy(tokens[:, shuffle])), logits[:, shuffle])

# %% [markdown]
# Here the learned table passed 0.9 on a batch before the sinusoidal one did. One run is
# one draw of the initial weights, so we repeat the race with three other seeds for the
# initial weights (the same batches): the learned model trains until its first batch above
# 0.9, the sinusoidal one for the same number of steps. In every run the learned table is
# first. A plausible reason: it can be shaped for this very task, while the sinusoidal
# vectors are fixed and the layers must learn to read them.

# %%
# NBVAL_IGNORE_OUTPUT
race = {}
for seed in (1, 2, 3):
    learned = tiny_transformer("learned", seed)
    _, learned_accuracies = train(learned, train_tokens, train_targets, steps=STEPS, stop_above=0.9)
    learned_step = first_step_above(learned_accuracies)  # None if never (checked at the end)
    sinusoidal = tiny_transformer("sinusoidal", seed)
    _, sinusoidal_accuracies = train(sinusoidal, train_tokens, train_targets, steps=learned_step or STEPS)
    race[seed] = learned_step, first_step_above(sinusoidal_accuracies)
print("seed: (learned model's first step above 0.9, sinusoidal model's by then)")
print(race)
assert all(sinusoidal is None for _, sinusoidal in race.values()), "the learned table first in every run"

# %% [markdown]
# The learning curves (loss, and accuracy on each training batch) show the same picture
# while it forms.

# %%
fig, (left, right) = plt.subplots(1, 2, figsize=(11, 3.5))
for name, (losses, accuracies) in curves.items():
    left.plot(losses, color=COLORS[name], label=name)
    right.plot(accuracies, color=COLORS[name], label=name)
right.axhline(ceiling, color="gray", linestyle="--", label="order-blind ceiling")
left.set(xlabel="step", ylabel="loss", title="training loss")
right.set(xlabel="step", ylabel="accuracy", title="accuracy on the training batch", ylim=(0, 1.05))
right.legend(loc="center right")
plt.show()

# %% [markdown]
# What did the sinusoidal model learn to look at? Its one attention layer, averaged over
# its 4 heads and over the 1000 test sequences: row $p$ shows how position $p$ spreads its
# attention over the positions of the sequence. The bright line just below the diagonal is
# $p \to p - 1$, the token to copy.

# %%
sinusoidal_model = models["sinusoidal"].eval()
with torch.no_grad():
    stream = sinusoidal_model[1](sinusoidal_model[0](torch.from_numpy(test_sets[TRAIN_LENGTH][0])))
    _, weights = sinusoidal_model[2].self_attn(stream, stream, stream, need_weights=True)
attention = weights.mean(0).numpy()  # (query position, key position), averaged over heads and sequences

fig, ax = plt.subplots(figsize=(4.8, 4))
image = ax.imshow(attention, cmap="viridis", vmin=0)
ax.set(xlabel="key position (attended to)", ylabel="query position", title="attention of the sinusoidal model")
fig.colorbar(image, ax=ax, label="weight")
plt.show()

# %% [markdown]
# Every position $p \ge 1$ gives its largest weight to $p - 1$, and at least 0.3 of its
# attention, more than three times the $1/12 \approx 0.08$ of an even spread (checked at
# the end).

# %%
previous = np.diagonal(attention, offset=-1)  # attention[p, p - 1] for p = 1 .. 11
assert np.array_equal(attention[1:].argmax(axis=1), np.arange(TRAIN_LENGTH - 1)), "largest weight on p - 1"

# %% [markdown]
# ## 3. Longer sequences than in training
#
# Now sequences of 24 and 48 tokens, two and four times the training length. The learned
# table has no row for position 12 or beyond, so the `learned` model cannot even run on
# them: the lookup fails. We record that instead of inventing vectors for it. The
# sinusoidal table is defined at every position, so that model runs; whether it is right
# is what we measure.

# %%
try:
    predict(models["learned"], test_sets[24][0])
except IndexError:
    print(f"learned: IndexError, the table has rows for positions 0..{TRAIN_LENGTH - 1} only")
else:
    raise AssertionError("the learned table should not cover position 12")

# %% [markdown]
# For the other two models we split the accuracy by position: positions below 12, which
# the model saw in training, and positions 12 and beyond, which it never saw; and for
# length 48, positions 24 and beyond on their own. The order-blind ceiling is computed at
# each length too.

# %%
def accuracy_by_position(model, length):
    """(accuracy at each position 1..length-1, accuracy over positions < TRAIN_LENGTH, over the rest)."""
    tokens, targets = test_sets[length]
    correct = predict(model, tokens)[:, 1:] == targets[:, 1:]
    seen = TRAIN_LENGTH - 1
    return correct.mean(axis=0), correct[:, :seen].mean(), correct[:, seen:].mean()


longer = {(name, n): accuracy_by_position(models[name], n) for name in ["none", "sinusoidal"] for n in [24, 48]}
ceilings = {n: order_blind_ceiling(test_sets[n][0]) for n in [24, 48]}
far_48 = longer["sinusoidal", 48][0][2 * TRAIN_LENGTH - 1 :].mean()  # positions 24..47

# %%
# NBVAL_IGNORE_OUTPUT
def seen_unseen(name, n):
    return "—" if name == "learned" else f"{longer[name, n][1]:.2f} | {longer[name, n][2]:.2f}"


print(f"{'':>10}  {'length 12':>9}  {'24: seen | unseen':>17}  {'48: seen | unseen':>17}")
for name in POSITIONS:
    print(f"{name:>10}  {results[name]:9.2f}  {seen_unseen(name, 24):>17}  {seen_unseen(name, 48):>17}")
print(f"{'ceiling':>10}  {ceiling:9.2f}  {ceilings[24]:17.2f}  {ceilings[48]:17.2f}")
print(f"sinusoidal at positions 24..47 of length 48: {far_48:.2f}")

# %% [markdown]
# What the sinusoidal model does past the training length: at positions it saw, it stays
# accurate on sequences twice as long (above 0.9); at the positions it never saw, it falls
# below 0.5, at least 0.4 below what it does on the seen ones. At four times the length the seen positions are
# less accurate as well (they now share their attention with 36 positions the model never
# met in training). From position 24 on, twice the training length, the sinusoidal model
# does no better than the order-blind guess (within 0.05 of it). The formula extends to any
# position; what the trained weights do with the new vectors is another matter. Without
# positions, the model stays within 0.05 of the (lower) ceiling of the longer bags. The
# cross-checks at the end assert each of these.

# %%
seen_24, unseen_24 = longer["sinusoidal", 24][1:]
seen_48, unseen_48 = longer["sinusoidal", 48][1:]
assert seen_24 > 0.9 > 0.5 > unseen_24 and unseen_24 < seen_24 - 0.4, "seen positions right, unseen ones not"

# %% [markdown]
# Accuracy at each position of the longer sequences; the dashed line marks the end of the
# training length.

# %%
fig, ax = plt.subplots(figsize=(9, 3.5))
for (name, n), (by_position, _, _) in longer.items():
    style = "-" if n == 48 else ":"
    ax.plot(range(1, n), by_position, style, color=COLORS[name], marker=".", label=f"{name}, length {n}")
ax.axvline(TRAIN_LENGTH - 0.5, color="gray", linestyle="--", label="training length")
ax.set(xlabel="position", ylabel="accuracy", title="copy the previous token, longer sequences", ylim=(0, 1.05))
ax.legend()
plt.show()

# %% [markdown]
# ## 4. The same comparison in Keras
#
# A shorter version: the same task and training set, a Keras 3 model of the same shape,
# built once without positions and once with `posenc.tensorflow.PositionalEncoding`.
# TensorFlow reads two environment variables when it loads, so they are set before the
# first `import tensorflow`.

# %%
import os

# TensorFlow's C++ start-up log lines go to stderr and would land in the cell output;
# oneDNN off keeps the round-off of sums and matmuls the same from run to run.
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")

import keras
import tensorflow as tf

import posenc.tensorflow

tf.config.threading.set_intra_op_parallelism_threads(1)
tf.config.threading.set_inter_op_parallelism_threads(1)
tf.config.experimental.enable_op_determinism()

# %% [markdown]
# The encoder block is written out: attention, add and normalise, a two-layer
# feed-forward, add and normalise. The loss skips the `IGNORE` targets, as in PyTorch.

# %%
def keras_transformer(sinusoidal):
    keras.utils.set_random_seed(0)
    tokens = keras.Input((None,), dtype="int32")
    x = keras.layers.Embedding(VOCAB, D_MODEL)(tokens)
    if sinusoidal:
        x = posenc.tensorflow.PositionalEncoding(D_MODEL)(x)
    x = keras.layers.LayerNormalization()(x + keras.layers.MultiHeadAttention(4, D_MODEL // 4)(x, x))
    hidden = keras.layers.Dense(64, activation="relu")(x)
    x = keras.layers.LayerNormalization()(x + keras.layers.Dense(D_MODEL)(hidden))
    model = keras.Model(tokens, keras.layers.Dense(VOCAB)(x))
    loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True, ignore_class=IGNORE)
    model.compile(keras.optimizers.Adam(3e-3), loss)
    return model


keras_models = {"none": keras_transformer(False), "sinusoidal": keras_transformer(True)}
for model in keras_models.values():
    model.fit(train_tokens, train_targets, batch_size=BATCH, epochs=1, shuffle=False, verbose=0)
print("trained:", list(keras_models))

# %%
# NBVAL_IGNORE_OUTPUT
keras_results = {}
for name, model in keras_models.items():
    for n in [TRAIN_LENGTH, 24]:
        tokens, targets = test_sets[n]
        keras_results[name, n] = accuracy(model.predict(tokens, batch_size=1000, verbose=0).argmax(-1), targets)
    print(f"{name:>10}: length 12 {keras_results[name, 12]:.2f}, length 24 {keras_results[name, 24]:.2f}")

# %% [markdown]
# Keras agrees with PyTorch: the sinusoidal encoding solves the task at the training
# length (above 0.9), no positions stays within 0.05 of the order-blind ceiling (checked at
# the end), and the sinusoidal model is more than 0.2 less accurate on sequences twice as
# long.

# %%
assert keras_results["sinusoidal", 24] < keras_results["sinusoidal", 12] - 0.2, "worse past the training length"

# %% [markdown]
# This run's own time, from the imports to here (it depends on the machine):

# %%
# NBVAL_IGNORE_OUTPUT
print(f"{time.perf_counter() - started:.0f} s")

# %% [markdown]
# ## Summary
#
# - One Transformer encoder layer without positions is permutation-equivariant: shuffled
#   input, identically shuffled output. Adding `posenc.torch.PositionalEncoding` breaks
#   that, which is the whole point of it.
# - On "copy the previous token", a tiny Transformer with no positions cannot beat the
#   best order-blind guess (the ceiling computed above); learned position embeddings and
#   the sinusoidal encoding both reach above 0.9 in 300 steps, the learned ones sooner in
#   each of the four seeds we tried. The sinusoidal model's attention runs along
#   $p \to p - 1$.
# - Past the training length, learned embeddings have no vector at all. The sinusoidal
#   model runs, stays accurate at positions it trained on (at twice the length), and is
#   poor at positions it never saw: a defined encoding is not a learned generalisation.
# - Keras with `posenc.tensorflow.PositionalEncoding` shows the same contrast.
# - The table is added to the token embeddings; with embeddings of size $1/\sqrt{d_{model}}$,
#   multiply them by $\sqrt{d_{model}}$ first, so that the table does not drown them.
#
# ## Exercises
#
# Each check answers "Correct!" or says what is wrong. When stuck, `nb07.both_sides.hint()`
# gives a nudge and `nb07.both_sides.solution()` prints the reference code (the same for
# `model_input`). Nothing here trains: each check runs in a moment.
#
# ### Exercise 1 · Equivariant, not invariant
#
# `nb07.layer` and `nb07.x` are the encoder layer and the batch of section 1, made from the
# same seed. Write `both_sides(order)`: for a reordering `order` of the 10 positions, return
# the two sides of the equivariance claim, the layer applied to the shuffled batch and the
# layer's output shuffled the same way. The check runs it for three orders; when the two
# sides are right, they are equal. The draft below states another property than
# equivariance: the check says which.

# %%
from posenc.exercises import nb07

layer, x = nb07.layer, nb07.x  # an encoder layer in eval mode, a batch (2, 10, 32)


def both_sides(order):
    with torch.no_grad():
        out_of_shuffled = layer(x[:, order])  # the layer of the shuffled batch
        shuffled_out = layer(x)  # the layer's output, shuffled the same way
    return out_of_shuffled, shuffled_out


# %%
nb07.both_sides.check(both_sides)

# %% [markdown]
# ### Exercise 2 · The model's input: scaled embeddings plus the table
#
# `nb07.embeddings` is a batch of 4 sequences of 12 token embeddings of width 32, with
# entries of size about $1/\sqrt{32}$ (as fairseq initialises them). Build what the first
# layer receives: the embeddings times $\sqrt{d_{model}}$, plus the sinusoidal table, the
# row of position $p$ added to the token at position $p$ of every sequence. The draft has one
# mistake, one that runs without an error.

# %%
import math

embeddings = nb07.embeddings  # (batch, length, d_model) = (4, 12, 32)
model_input = embeddings * math.sqrt(D_MODEL) + posenc.torch.positional_encoding(len(embeddings), D_MODEL)[:, None, :]

# %%
nb07.model_input.check(model_input)

# %% [markdown]
# ## Cross-checks
#
# The remaining claims of the text, checked in one place.

# %%
# Cross-checks of the claims above.
# Section 2: the no-positions model stays below 0.5, within 0.05 of the order-blind ceiling,
# and no training batch is ever above 0.9; the learned model reached 0.9 before the sinusoidal one.
assert results["none"] < 0.5 and abs(results["none"] - ceiling) < 0.05
assert reached["none"] is None and reached["learned"] < reached["sinusoidal"]
assert all(learned is not None for learned, _ in race.values()), "the learned model passed 0.9 in each race"
# The attention of p to p - 1 is at least 0.3, more than three times an even spread (1/12).
assert previous.min() > 0.3 > 3 / TRAIN_LENGTH
# Section 3: unseen positions below 0.5 at length 48 too; the seen ones less accurate at 48 than at 24;
# positions 24..47 of length 48 at the order-blind ceiling; no positions at the ceiling of each length.
assert unseen_48 < 0.5 and seen_48 < seen_24
assert abs(far_48 - ceilings[48]) < 0.05
for n in [24, 48]:
    assert abs(longer["none", n][1] - ceilings[n]) < 0.05 and abs(longer["none", n][2] - ceilings[n]) < 0.05
# Section 4: Keras, at the training length.
assert keras_results["sinusoidal", 12] > 0.9
assert keras_results["none", 12] < 0.5 and abs(keras_results["none", 12] - ceiling) < 0.05
# The tiny models' embeddings have rows of a norm above the table's 4.
assert token_rows.mean() > table_rows.max()
# Exercise 1 works on the layer and batch of section 1: the same seed, the same recipe, the same numbers.
torch.manual_seed(0)
layer_1 = nn.TransformerEncoderLayer(D_MODEL, nhead=4, dim_feedforward=64, dropout=0.0, batch_first=True)
x_1 = torch.randn(2, 10, D_MODEL)
assert torch.equal(x_1, nb07.x) and all(torch.equal(a, b) for a, b in zip(layer_1.state_dict().values(), nb07.layer.state_dict().values()))
