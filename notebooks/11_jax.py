# %% [markdown]
# # 11 · Positional encoding in JAX
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/posenc-org/posenc/blob/main/notebooks/11_jax.ipynb)
#
# The same table once more, now in `jax.numpy`. Notebook 01 explains every step (the
# denominators shared by a sine and its cosine, the position column, the interleaving); here
# we only walk through them quickly in JAX, then use what JAX adds: `jax.jit` compiles a
# function, `jax.vmap` maps it over a batch, and Flax NNX modules put the encoding into a
# model. Everything is checked against posenc's NumPy tables. JAX computes in float32 unless
# told otherwise (its x64 mode is off by default), and we keep it that way.
#
# **Question:** What changes when the positional encoding is written for JAX, whose arrays cannot be changed in place and whose compiled functions fix every shape?
#
# **You will be able to:**
# - fill the columns of a JAX array with `.at[...].set()`, where NumPy assigned to them;
# - compile a function with `jax.jit`, mark the arguments that fix a shape as static, and predict how often it compiles;
# - turn a function of one position into a function of a batch with `jax.vmap`;
# - put posenc's Flax NNX modules into a model.
#
# **Prerequisites:** notebooks 01 and 08 · **Time:** about 40 minutes

# %%
# On Colab, install posenc from GitHub; elsewhere `make lab` has already installed it.
import sys

if "google.colab" in sys.modules:
    # %pip install --quiet "posenc @ git+https://github.com/posenc-org/posenc@main"

# %%
# %matplotlib inline
import time

import jax
import jax.numpy as jnp
import matplotlib.pyplot as plt
import numpy as np
from flax import nnx

import posenc
import posenc.jax
from posenc.exercises import nb11

np.set_printoptions(precision=6, suppress=True)
started = time.process_time()  # CPU time: what a busy machine does not stretch
print("x64 enabled:", jax.config.jax_enable_x64)

# %% [markdown]
# ## 1. The lecture's steps in `jax.numpy`
#
# Ten positions, width 6, float32, as the NumPy lecture of notebook 01: one denominator per
# pair, a column of positions, their quotients as angles, sines and cosines, and the two
# stacked so that they interleave.

# %%
sequence_length, d_model = 10, 6
denominators = jnp.power(10000.0, jnp.arange(0, d_model, 2, dtype=jnp.float32) / d_model)
positions = jnp.arange(sequence_length, dtype=jnp.float32)[:, None]
angles = positions / denominators
table = jnp.stack([jnp.sin(angles), jnp.cos(angles)], axis=-1).reshape(sequence_length, d_model)
print(denominators)
print(table.dtype, table.shape)
print(np.asarray(table[:3]))

# %% [markdown]
# The table agrees with posenc's to float32 round-off: within $10^{-6}$, a few float32 steps
# of values near 1 (float32 numbers just below 1 are $6 \times 10^{-8}$ apart).

# %%
reference = posenc.positional_encoding(sequence_length, d_model)
difference = np.abs(np.asarray(table) - reference).max()
print(f"largest difference from posenc: {difference:.1e}")
assert difference < 1e-6

# %% [markdown]
# ### Columns you cannot assign: `.at[...].set()`
#
# The second lecture of notebook 01 wrote sines and cosines straight into alternate columns,
# `pe[:, 0::2] = np.sin(...)`. A JAX array is [immutable](https://docs.jax.dev/en/latest/_autosummary/jax.numpy.ndarray.at.html):
# the same line raises a `TypeError` whose message says so.

# %%
pe = jnp.zeros((sequence_length, d_model))
try:
    pe[:, 0::2] = jnp.sin(angles)
except TypeError as error:
    print(type(error).__name__, "| the message says 'immutable':", "immutable" in str(error))

# %% [markdown]
# JAX's equivalent is `pe.at[:, 0::2].set(values)`: the same index, but it *returns a new
# array* with those entries replaced and leaves `pe` as it was. So each step assigns its
# result to a name. Two steps give the lecture's table, equal to the stacked one above
# entry for entry, and the zeros we started from are still zeros.

# %%
filled = pe.at[:, 0::2].set(jnp.sin(angles))
filled = filled.at[:, 1::2].set(jnp.cos(angles))
print("pe is still all zeros:", bool((pe == 0).all()))
assert bool((filled == table).all())

# %% [markdown]
# ## 2. `jit`: compile once per shape
#
# [`jax.jit`](https://docs.jax.dev/en/latest/jit-compilation.html) *traces* a function: it
# runs the Python code once with abstract arrays that carry a shape and a dtype but no
# values, records the operations, and hands that record to the [XLA](https://openxla.org/xla) compiler. Later calls
# with arguments of the same shapes and dtypes run the compiled code without touching the
# Python again. The lecture's recipe as a function of any positions; the `traces` list
# is a Python side effect, so it grows only when JAX traces (and then compiles):

# %%
traces = []


def lecture_encode(positions, d_model):
    traces.append(f"positions of shape {positions.shape}, d_model={d_model}")  # only while tracing
    denominators = jnp.power(10000.0, jnp.arange(0, d_model, 2, dtype=jnp.float32) / d_model)
    angles = positions[..., None].astype(jnp.float32) / denominators
    return jnp.stack([jnp.sin(angles), jnp.cos(angles)], axis=-1).reshape(*positions.shape, d_model)


# %% [markdown]
# Compiled as it is, the function fails. Every argument is traced, `d_model` too, so it has
# no value while tracing; but `jnp.arange(0, d_model, 2)` needs its value to know how many
# entries it makes, and a shape must be known at compile time. JAX says so with a
# `ConcretizationTypeError`:

# %%
near = jnp.arange(sequence_length)
try:
    jax.jit(lecture_encode)(near, d_model)
except jax.errors.ConcretizationTypeError as error:
    print(type(error).__name__)

# %% [markdown]
# `static_argnums=1` (or `static_argnames="d_model"`) makes the second argument *static*:
# JAX passes the plain Python value to the trace and bakes it into the compiled code, so
# each new value of a static argument means a new trace. The compiled function gives the
# table of section 1:

# %%
lecture_jit = jax.jit(lecture_encode, static_argnums=1)
traces.clear()
print(np.asarray(lecture_jit(near, d_model))[1])
np.testing.assert_allclose(np.asarray(lecture_jit(near, d_model)), reference, rtol=0, atol=1e-6)
print("two calls, traces:", traces)

# %% [markdown]
# How often does it compile? The two calls above traced once, for ten positions and width 6.
# Five more calls: the same positions again, other positions of the same shape, twelve
# positions (twice, from different starts), and a width of 8. Only a call with a shape and
# a `d_model` not seen before traces; `traces` says which:

# %%
traces.clear()
calls = [(0, 10, 6), (500, 10, 6), (0, 12, 6), (3, 12, 6), (0, 10, 8)]  # (first position, length, d_model)
for start, length, width in calls:
    lecture_jit(jnp.arange(start, start + length), width)
print(f"{len(calls)} calls, {len(traces)} traces:", *traces, sep="\n  ")
assert len(traces) == 2, "only (12, 6) and (10, 8) are new"

# %% [markdown]
# New *values* are free; a new *shape* or a new static value costs a trace and a
# compilation. A model under `jit` that meets batches of many lengths compiles once for
# each length; padding the batches to a few fixed lengths keeps that down.
#
# ### Accuracy under `jit`
#
# At ten positions the lecture's recipe and posenc agree. Far out they do not: a float32
# angle $p \cdot w$ is rounded to about $10^{-7}$ of its size, and float32 numbers near
# $10^6$ are $1/16$ apart, so at position $10^6$ the angle, and with it the sine, is off by
# hundredths (notebook 06 works this out). posenc's JAX route never forms that rounded angle:
# it counts the angle in half turns with exact float32 products
# (`posenc.engine.kernels.half_turns_float32`) and stays within $2 \times 10^{-7}$ of the exact
# value for positions up to $2^{24}$, all in float32. We compare both with posenc's NumPy
# table at float64 (within $10^{-15}$ of the exact value) for a thousand positions near
# $10^6$ and width 128.

# %%
posenc_jit = jax.jit(posenc.jax.encode, static_argnums=1)
far = jnp.arange(1_000_000, 1_001_000)
exact = posenc.encode(np.asarray(far), 128, dtype=np.float64)
lecture_error = np.abs(np.asarray(lecture_jit(far, 128), np.float64) - exact).max()
posenc_error = np.abs(np.asarray(posenc_jit(far, 128), np.float64) - exact).max()
print(f"lecture's float32 route: {lecture_error:.3f}  (float32 step near 1e6: {float(np.spacing(np.float32(1e6)))})")
print(f"posenc.jax under jit:    {posenc_error:.1e}")
assert posenc_error < 2e-7, "posenc's documented bound"

# %% [markdown]
# The lecture's route is off by about one float32 step of the angle, posenc's by less than
# $2 \times 10^{-7}$. And no float64 appears anywhere in what `jit` compiles: the trace
# (`jax.make_jaxpr` prints it) holds no `f64`.

# %%
trace = str(jax.make_jaxpr(lambda p: posenc.jax.encode(p, 128))(far))
print("float64 in posenc's trace:", "f64" in trace)

# %% [markdown]
# Across positions the error of the float32 route grows with the angle, while posenc's
# stays flat:

# %%
probes = jnp.asarray(np.unique(np.geomspace(1, 1e7, 60).astype(np.int32)))
truth = posenc.encode(np.asarray(probes), 64, dtype=np.float64)
lecture_curve = np.abs(np.asarray(lecture_jit(probes, 64), np.float64) - truth).max(axis=1)
posenc_curve = np.abs(np.asarray(posenc_jit(probes, 64), np.float64) - truth).max(axis=1)

fig, ax = plt.subplots(figsize=(7, 3.5))
ax.loglog(np.asarray(probes), np.maximum(lecture_curve, 1e-9), "o-", ms=3, label="lecture's float32 route")
ax.loglog(np.asarray(probes), np.maximum(posenc_curve, 1e-9), "s-", ms=3, label="posenc.jax (float32, jit)")
ax.set_xlabel("position")
ax.set_ylabel("largest error in a row (d = 64)")
ax.legend()
plt.show()

# %% [markdown]
# ## 3. `vmap`: write it for one, run it on a batch
#
# [`jax.vmap`](https://docs.jax.dev/en/latest/automatic-vectorization.html) adds a batch
# axis to a function written for one item. The functions above already broadcast over any
# shape of positions, so mapping them would change nothing. Here is one that does not: it
# encodes a *single* position (a scalar) into its row of width 8.

# %%
denominators_8 = jnp.power(10000.0, jnp.arange(0, 8, 2, dtype=jnp.float32) / 8)


def encode_position(position):
    """One position (a scalar) -> its row of the table, shape (8,)."""
    angles = position / denominators_8  # (4,): one angle per pair
    return jnp.stack([jnp.sin(angles), jnp.cos(angles)], axis=-1).reshape(8)


print(encode_position(3.0).shape)

# %% [markdown]
# Handed four positions at once, it does not even fail: four positions over four
# denominators divide entry by entry (position $k$ by denominator $k$), and out comes one
# row of 8 numbers that is no row of the table. `jax.vmap(encode_position)` runs it once per
# position instead, and stacks the rows:

# %%
four = jnp.arange(4.0)
print("called directly:", encode_position(four).shape)
print("under vmap:     ", jax.vmap(encode_position)(four).shape)
np.testing.assert_allclose(np.asarray(jax.vmap(encode_position)(four)), posenc.encode(np.arange(4), 8), rtol=0, atol=1e-6)

# %% [markdown]
# `vmap` composes. A chunk of a long document starts at its own position: `encode_chunk`
# encodes one chunk of four positions from its start, and a second `vmap` runs it over the
# starts of a batch. The result equals the broadcasting `lecture_encode` of section 2 on
# the same positions.

# %%
def encode_chunk(start):
    return jax.vmap(encode_position)(start + jnp.arange(4.0))


starts = jnp.asarray([0.0, 100.0, 7.0])
chunks = jax.jit(jax.vmap(encode_chunk))(starts)
print(chunks.shape)
np.testing.assert_allclose(np.asarray(chunks), np.asarray(lecture_encode(starts[:, None] + jnp.arange(4.0), 8)), rtol=0, atol=1e-6)

# %% [markdown]
# ## 4. The Flax modules in a tiny model
#
# `posenc.jax.PositionalEncoding` is a [Flax NNX](https://flax.readthedocs.io/en/latest/nnx_basics.html) module with the arguments of the torch
# module (`d_model`, `max_len`, `dropout`, `convention`, ...) and `rngs` for its dropout. The
# table is `module.pe`, a variable but not a parameter, so an optimizer of the `nnx.Param`
# leaves it alone. A tiny model: embedding, positional encoding, one linear layer.

# %%
class TinyModel(nnx.Module):
    def __init__(self, rngs):
        self.embed = nnx.Embed(num_embeddings=20, features=16, rngs=rngs)
        self.position = posenc.jax.PositionalEncoding(16, max_len=64, dropout=0.1, rngs=rngs)
        self.out = nnx.Linear(16, 20, rngs=rngs)

    def __call__(self, tokens):
        return self.out(self.position(self.embed(tokens)))


model = TinyModel(nnx.Rngs(0, dropout=1))
model.eval()  # dropout off
tokens = jnp.asarray([[3, 1, 4, 1, 5, 9, 2, 6]])
logits = nnx.jit(lambda m, t: m(t))(model, tokens)
by_hand = model.out(model.embed(tokens) + posenc.positional_encoding(8, 16))
print(logits.shape, model.position.pe[...].shape)
np.testing.assert_allclose(np.asarray(logits), np.asarray(by_hand), rtol=1e-6, atol=1e-6)

# %% [markdown]
# The compiled model gives what the embedding plus posenc's NumPy table gives (above), and
# its parameters are the embedding's and the linear layer's only:

# %%
print(sorted(nnx.state(model, nnx.Param).keys()))
assert "position" not in nnx.state(model, nnx.Param)

# %% [markdown]
# RoPE (notebook 08) works the same way: `posenc.jax.RotaryEmbedding` returns `(cos, sin)`
# for the positions of a batch, and `posenc.jax.apply_rotary` turns the queries and keys
# with them. Under `jit` the score of a query and a key depends only on how far apart they
# are, here positions 3 and 1 against 1,000,003 and 1,000,001.

# %%
rope = posenc.jax.RotaryEmbedding(64)
# NumPy's generator: its numbers are the same in every JAX version (jax.random's changed in 0.5).
q, k = jnp.asarray(np.random.default_rng(0).standard_normal((2, 64)), jnp.float32)


@nnx.jit
def score(rope, query_position, key_position):
    positions = jnp.stack([query_position, key_position])[None]
    cos, sin = rope(q[None, None], positions)
    q_turned = posenc.jax.apply_rotary(q[None], cos[:, :1], sin[:, :1])
    k_turned = posenc.jax.apply_rotary(k[None], cos[:, 1:], sin[:, 1:])
    return (q_turned * k_turned).sum()


near_score, far_score = score(rope, 3, 1), score(rope, 1_000_003, 1_000_001)
print(f"scores: {float(near_score):.4f} and {float(far_score):.4f}")

# %% [markdown]
# How close is "the same"? Each cosine and sine is within $2 \times 10^{-7}$ of its exact
# value at both distances, so each product $q_i k_i$ of the score moves by at most about
# $4 \times 10^{-7} \, |q_i| |k_i|$: the bound below, $4 \times 10^{-7} \sum_i |q_i||k_i|$,
# is about $1.4 \times 10^{-5}$.

# %%
bound = 4e-7 * float(jnp.abs(q * k).sum())
print(f"the scores differ by less than {bound:.1e}:", abs(float(near_score) - float(far_score)) <= bound)

# %% [markdown]
# ## Summary
#
# - The lecture's table is five lines of `jax.numpy`. JAX arrays are immutable: where NumPy
#   assigned `pe[:, 0::2] = ...`, JAX writes `pe = pe.at[:, 0::2].set(...)`, which returns a
#   new array (or stacks and reshapes, as notebook 01 did).
# - `jax.jit` traces a function with shapes and dtypes only. An argument that decides a shape
#   (`d_model`) must be static (`static_argnums`); every new shape and every new static value
#   traces and compiles again, new values of a known shape do not.
# - posenc's JAX functions stay within $2 \times 10^{-7}$ under `jit`, in float32 with no
#   float64 in the trace, where the lecture's float32 route is off by hundredths at
#   position $10^6$.
# - `jax.vmap` turns a function of one position into a function of a batch, and nests; the
#   Flax NNX modules `PositionalEncoding` and `RotaryEmbedding` go into models and compile
#   with `nnx.jit`.
#
# ## Exercises
#
# Each exercise ends with a check that says what is wrong. `nb11.<name>.hint()` gives a
# nudge, and `nb11.<name>.solution()` prints the reference solution when you are stuck.
#
# ### Exercise 1 · Fill the columns with `.at`
#
# Write `at_table(length, d_model)` (an even `d_model`) that starts from
# `jnp.zeros((length, d_model))` and fills the even columns with sines and the odd ones with
# cosines using `.at[...].set()`. The draft below runs without an error, yet the check
# finds something wrong: what does `.at[...].set()` return?

# %%
def at_table(length, d_model):
    positions = jnp.arange(length, dtype=jnp.float32)[:, None]
    angles = positions / jnp.power(10000.0, jnp.arange(0, d_model, 2, dtype=jnp.float32) / d_model)
    table = jnp.zeros((length, d_model))
    table.at[:, 0::2].set(jnp.sin(angles))
    table.at[:, 1::2].set(jnp.cos(angles))
    return table


nb11.at_table.check(at_table)

# %% [markdown]
# ### Exercise 2 · How many compilations?
#
# `lecture_jit` is the function of section 2, compiled with `static_argnums=1`. A fresh copy
# of it is called on `jnp.arange(start, start + length)` with `d_model` for each of these
# seven calls. Predict how many times it traces (and compiles), then check; the solution
# runs the calls and counts, as section 2 did.

# %%
print("(start, length, d_model):", *nb11.CALLS)
compilations = 7  # one per call?
nb11.compilations.check(compilations)

# %% [markdown]
# ### Exercise 3 · A batch of chunks with `vmap`
#
# A batch of three chunks of four positions each, starting at positions 0, 100 and 7, as
# in section 3, width 8. Write `encode_chunk(start)` from `encode_position` and
# `jax.vmap`, map it over `nb11.STARTS`, and check the `(3, 4, 8)` result. The draft
# forgets something.

# %%
def encode_chunk(start):
    return jax.vmap(encode_position)(jnp.arange(4.0))


nb11.chunks.check(jax.vmap(encode_chunk)(nb11.STARTS))

# %% [markdown]
# ## Cross-checks
#
# The claims above, checked together: the lecture's error at $10^6$ is about one float32
# step of the angle there (between half a step and one step); posenc's trace holds no
# float64; the float32 route's error passes 0.1 before position $10^7$ (where float32
# numbers are 1 apart) while posenc's stays within its bound; the RoPE scores agree within
# the bound derived above; mapping a function that already broadcasts (section 3) gives
# what a direct call gives; and the whole notebook runs in under a minute of CPU time.

# %%
# Cross-checks of the claims above; the run's time
step = float(np.spacing(np.float32(1e6)))
assert step / 2 < lecture_error <= step
assert "f64" not in trace
assert posenc_curve.max() < 2e-7 and lecture_curve.max() > 0.1
assert abs(float(near_score) - float(far_score)) <= bound
batch = jnp.asarray([[0, 1, 2, 3], [500, 501, 502, 503]])
mapped = jax.vmap(lambda p: lecture_encode(p, 8))(batch)
np.testing.assert_allclose(np.asarray(mapped), np.asarray(lecture_encode(batch, 8)), rtol=0, atol=1e-6)
seconds = time.process_time() - started
assert seconds < 60

# %%
# NBVAL_IGNORE_OUTPUT
print(f"{seconds:.0f} s")
