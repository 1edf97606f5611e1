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

np.set_printoptions(precision=6, suppress=True)
started = time.perf_counter()
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
# JAX arrays are immutable, so where notebook 01 wrote sines and cosines into alternate
# columns we stack them on a new last axis and reshape: pair $i$ lands in columns $2i$ and
# $2i+1$. The table agrees with posenc's to float32 round-off (within $10^{-6}$):

# %%
reference = posenc.positional_encoding(sequence_length, d_model)
difference = np.abs(np.asarray(table) - reference).max()
assert difference < 1e-6
print(f"largest difference from posenc: {difference:.1e}")

# %% [markdown]
# ## 2. `jit`: compile the function once, call it often
#
# `jax.jit` traces a function with abstract arrays (shapes and dtypes, no values) and hands
# the trace to the XLA compiler. The lecture's recipe as a function of any positions:

# %%
def lecture_encode(positions, d_model):
    denominators = jnp.power(10000.0, jnp.arange(0, d_model, 2, dtype=jnp.float32) / d_model)
    angles = positions[..., None].astype(jnp.float32) / denominators
    return jnp.stack([jnp.sin(angles), jnp.cos(angles)], axis=-1).reshape(*positions.shape, d_model)


lecture_jit = jax.jit(lecture_encode, static_argnums=1)
posenc_jit = jax.jit(posenc.jax.encode, static_argnums=1)
near = jnp.arange(sequence_length)
np.testing.assert_allclose(np.asarray(lecture_jit(near, d_model)), reference, rtol=0, atol=1e-6)
np.testing.assert_allclose(np.asarray(posenc_jit(near, d_model)), reference, rtol=0, atol=2e-7)

# %% [markdown]
# At ten positions the two agree. Far out they do not: a float32 angle $p \cdot w$ is
# rounded to about $10^{-7}$ of its size, so at position $10^6$ the angle, and with it the
# sine, is off by a few hundredths (notebook 06 works this out). posenc's JAX route never
# forms that rounded angle: it counts the angle in half turns with exact float32 products
# (`posenc.kernels.half_turns_float32`) and stays within $2 \times 10^{-7}$ of the exact
# value for positions up to $2^{24}$, all in float32: no float64 appears anywhere in the
# compiled function. We compare both with posenc's NumPy table at float64 (within
# $10^{-15}$ of the exact value) for a thousand positions near $10^6$ and width 128.

# %%
far = jnp.arange(1_000_000, 1_001_000)
exact = posenc.encode(np.asarray(far), 128, dtype=np.float64)
lecture_error = np.abs(np.asarray(lecture_jit(far, 128), np.float64) - exact).max()
posenc_error = np.abs(np.asarray(posenc_jit(far, 128), np.float64) - exact).max()
trace = str(jax.make_jaxpr(lambda p: posenc.jax.encode(p, 128))(far))
print(f"lecture's float32 route: {lecture_error:.2f}")
print(f"posenc.jax under jit:    {posenc_error:.1e}")
print("float64 in posenc's trace:", "f64" in trace)
assert 0.01 < lecture_error < 0.1 and posenc_error < 2e-7 and "f64" not in trace

# %% [markdown]
# The lecture's route is off by a few hundredths at these positions, posenc's by less than
# $2 \times 10^{-7}$. Across positions the error of the float32 route grows with the angle,
# while posenc's stays flat:

# %%
probes = jnp.asarray(np.unique(np.geomspace(1, 1e7, 60).astype(np.int32)))
truth = posenc.encode(np.asarray(probes), 64, dtype=np.float64)
lecture_curve = np.abs(np.asarray(lecture_jit(probes, 64), np.float64) - truth).max(axis=1)
posenc_curve = np.abs(np.asarray(posenc_jit(probes, 64), np.float64) - truth).max(axis=1)
assert posenc_curve.max() < 2e-7 and lecture_curve.max() > 0.1

fig, ax = plt.subplots(figsize=(7, 3.5))
ax.loglog(np.asarray(probes), np.maximum(lecture_curve, 1e-9), "o-", ms=3, label="lecture's float32 route")
ax.loglog(np.asarray(probes), np.maximum(posenc_curve, 1e-9), "s-", ms=3, label="posenc.jax (float32, jit)")
ax.set_xlabel("position")
ax.set_ylabel("largest error in a row (d = 64)")
ax.legend()
plt.show()

# %% [markdown]
# ## 3. `vmap`: one function, a batch of sequences
#
# `jax.vmap` turns a function of one sequence into a function of a batch. Two sequences
# with their own positions (the second one starts later, as a chunk of a long document would):

# %%
batch = jnp.asarray([[0, 1, 2, 3], [500, 501, 502, 503]])
encoded = jax.vmap(lambda p: posenc.jax.encode(p, 8))(batch)
print(encoded.shape)
np.testing.assert_allclose(np.asarray(encoded), posenc.encode(np.asarray(batch), 8), rtol=0, atol=2e-7)

# %% [markdown]
# ## 4. The Flax modules in a tiny model
#
# `posenc.jax.PositionalEncoding` is a Flax NNX module with the arguments of the torch
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
assert "position" not in nnx.state(model, nnx.Param)

# %% [markdown]
# The compiled model gives what the embedding plus posenc's NumPy table gives, and its
# parameters are the embedding's and the linear layer's only.
#
# RoPE works the same way: `posenc.jax.RotaryEmbedding` returns `(cos, sin)` for the
# positions of a batch, and `posenc.jax.apply_rotary` turns the queries and keys with them.
# Under `jit` the score of a query and a key depends only on how far apart they are, here
# positions 3 and 1 against 1,000,003 and 1,000,001, to float32 round-off (the two scores
# differ by less than $10^{-4}$):

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
assert abs(float(near_score) - float(far_score)) < 1e-4 and 1 < abs(float(near_score)) < 100

# %% [markdown]
# ## Summary
#
# - The lecture's table is five lines of `jax.numpy`; JAX arrays are immutable, so sines and
#   cosines are stacked and reshaped rather than written into columns.
# - `jax.jit` compiles posenc's JAX functions; they stay within $2 \times 10^{-7}$ in float32
#   with no float64 in the trace, where the lecture's float32 route is off by hundredths at
#   position $10^6$.
# - `jax.vmap` maps them over a batch; the Flax NNX modules `PositionalEncoding` and
#   `RotaryEmbedding` go into models and compile with `nnx.jit`.
#
# This run's time:

# %%
# NBVAL_IGNORE_OUTPUT
seconds = time.perf_counter() - started
print(f"{seconds:.0f} s")

# %%
assert seconds < 60
