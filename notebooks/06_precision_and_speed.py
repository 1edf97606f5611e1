# %% [markdown]
# # 06 · How accurate and how fast: the table at large positions, float32 against posenc
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/posenc-org/posenc/blob/main/notebooks/06_precision_and_speed.ipynb)
#
# Long-context models use positions of $10^5$ to $10^7$. The lectures build the table in
# float32, and there the angle $pos / 10000^{2i/d}$ is already wrong before the sine is
# taken. This notebook measures that error against an exact reference, shows where it comes
# from, how `posenc` avoids it, and what the accurate table costs in time.

# %%
# On Colab, install posenc from GitHub; elsewhere `make lab` has already installed it.
import sys

if "google.colab" in sys.modules:
    # %pip install --quiet "posenc @ git+https://github.com/posenc-org/posenc@main"

# %%
# %matplotlib inline
import time

import matplotlib.pyplot as plt
import mpmath
import numpy as np

import posenc

# %% [markdown]
# ## An exact reference
#
# mpmath computes $\sin$ and $\cos$ of $pos / 10000^{2i/d}$ with 30 significant digits, so
# its value rounded to float64 is the exact answer for our purposes. We sample every 16th
# column pair of a $d_{model} = 512$ table.

# %%
d_model = 512
pairs = np.arange(0, d_model // 2, 16)


def exact_sines(position):
    with mpmath.workdps(30):
        return np.array([float(mpmath.sin(mpmath.mpf(int(position)) / mpmath.power(10000, mpmath.mpf(2 * int(i)) / d_model)))
                         for i in pairs])


print(exact_sines(1)[:3].round(8))

# %% [markdown]
# ## The float32 route against posenc
#
# The lectures' route divides float32 positions by float32 denominators and takes the
# sine in float32. We measure both it and `posenc.encode` at positions from 10 to $10^7$.

# %%
def float32_route(position):
    denominators = np.power(10000, np.arange(0, d_model, 2, dtype=np.float32) / d_model)
    return np.sin(np.float32(position) / denominators)[pairs]


positions = np.unique(np.logspace(1, 7, 25).astype(np.int64))
exact = {p: exact_sines(p) for p in positions}
route_error = np.array([np.abs(float32_route(p) - exact[p]).max() for p in positions])
posenc_error = np.array([np.abs(posenc.encode([p], d_model)[0, 2 * pairs] - exact[p]).max() for p in positions])
print(f"float32 route: {route_error.max():.1e} at worst; posenc: {posenc_error.max():.1e} at worst")

# %%
fig, ax = plt.subplots(figsize=(6, 3.5))
ax.loglog(positions, route_error, "o-", label="float32 route (lectures)")
ax.loglog(positions, np.maximum(posenc_error, 1e-10), "s-", label="posenc, float32 output")
ax.axhline(2e-7, color="gray", ls=":", label="2e-7")
ax.set_xlabel("position")
ax.set_ylabel("max |error| of the sines")
ax.legend()
plt.show()

# %% [markdown]
# From position 1000 on, the route's error grows in proportion to the position: on the
# log-log plot its slope is within 0.1 of 1, and error / position stays between $7 \cdot
# 10^{-9}$ and $3 \cdot 10^{-8}$. It passes $10^{-3}$ from $10^5$ on and $10^{-2}$ from
# $10^6$ on. posenc stays within $2 \cdot 10^{-7}$ everywhere, the bound that
# `posenc.encode` guarantees for float32 output (its reduction of the angle to a half turn
# is proved in the docstring of `posenc/_rotation.py`). The claims, checked:

# %%
grown = positions >= 1000
slope = np.polyfit(np.log(positions[grown]), np.log(route_error[grown]), 1)[0]
per_position = route_error[grown] / positions[grown]
assert abs(slope - 1) < 0.1 and 7e-9 < per_position.min() and per_position.max() < 3e-8
assert (route_error[positions >= 10**5] > 1e-3).all() and (route_error[positions >= 10**6] > 1e-2).all()
assert posenc_error.max() <= 2e-7

# %% [markdown]
# ## Why: float32 numbers are far apart near a large angle
#
# A float32 has 24 significant bits. Near 32767 consecutive float32 numbers are
# $2^{-9} \approx 0.002$ apart. The angle $32767 / 1$ of the first column is a whole number
# below $2^{24}$ and exact in float32. The other columns are not: their denominators
# $10000^{2i/d}$ are rounded to float32 first, and the quotient $32767 / 10000^{2i/d}$ is
# rounded again, to a grid as coarse as $2^{-9}$ for quotients above 16384. With each exact
# denominator rounded once to the nearest float32 (the best float32 can hold), the
# quotient's own rounding moves an angle by up to half a step (0.0009 here), the rounded
# denominator by up to 0.0012 more, and the sine of an angle off by $\delta$ is off by up to
# $\delta$. The lectures' float32 `np.power` lands within one float32 step of those
# denominators, but which neighbour it returns depends on the CPU: where the CPU has
# AVX-512, NumPy takes a faster, slightly less exact path. A denominator one step off
# moves the angle further, by up to 0.003 in all. So the float32 route's errors further
# down depend a little on the CPU, and where they do we state the range that holds either
# way. float64 spacing near $10^7$ is $2^{-29} \approx 2 \cdot 10^{-9}$: good enough for
# float32 output.

# %%
for value in [100, 32767, 1e5, 1e7]:
    print(f"{value:>10g}: float32 spacing {np.spacing(np.float32(value)):.1e}, float64 spacing {np.spacing(value):.1e}")

exact_denominators = 10000.0 ** (np.arange(0, d_model, 2) / d_model)
rounded_denominators = exact_denominators.astype(np.float32)


def denominator_shift(denominators):
    """How far float32 denominators move each angle 32767 / denominator."""
    return np.abs(32767 / denominators.astype(np.float64) - 32767 / exact_denominators)


angles32 = np.float32(32767) / rounded_denominators
quotient_rounding = np.abs(angles32 - 32767 / rounded_denominators.astype(np.float64))
denominator_rounding = denominator_shift(rounded_denominators)
assert np.spacing(np.float32(32767)) == 2**-9 and np.spacing(1e7) == 2**-29
assert angles32[0] == 32767 and quotient_rounding[0] == 0 and denominator_rounding[0] == 0
assert 0.0008 < quotient_rounding.max() <= 2**-10 and 0.001 < denominator_rounding.max() < 0.0013

denominators32 = np.power(10000, np.arange(0, d_model, 2, dtype=np.float32) / d_model)  # the lectures'
steps_apart = np.abs(denominators32.view(np.int32) - rounded_denominators.view(np.int32))
assert steps_apart.max() <= 1 and denominator_shift(denominators32).max() < 0.003

# %% [markdown]
# ## How posenc avoids it
#
# Two ideas (see `posenc/_rotation.py`):
#
# 1. **The angle in more than float64.** The frequency $w$ is kept as two float64 numbers
#    and $p \cdot w$ as $\theta_{hi} + \theta_{lo}$, the exact rounding error of the product
#    recovered by Dekker's method; then $\sin\theta \approx \sin\theta_{hi} + \theta_{lo}\cos\theta_{hi}$.
#    float64 output is within $10^{-15}$ of the exact sines at every position above, $10^7$
#    included (checked below).
# 2. **A table is a product of rotations.** $PE(p + k)$ is $PE(p)$ turned by the fixed angle
#    $k\,w$ in every pair:
#    $\sin(a + b) = \sin a \cos b + \cos a \sin b$, $\cos(a + b) = \cos a \cos b - \sin a \sin b$.
#    With $p = qB + r$, all $L$ rows come from $B$ accurate rows and $L / B$ accurate steps,
#    one complex multiply per pair.
#
# The rotation at work, on float64 rows from `posenc.encode`:

# %%
p, k = 1_000_000, 37
rows = posenc.encode([p, k, p + k], d_model, dtype=np.float64)
sin_a, cos_a, sin_b, cos_b = rows[0, 0::2], rows[0, 1::2], rows[1, 0::2], rows[1, 1::2]
turned = np.stack([sin_a * cos_b + cos_a * sin_b, cos_a * cos_b - sin_a * sin_b], axis=-1).reshape(-1)
np.testing.assert_allclose(turned, rows[2], rtol=0, atol=1e-14)  # PE(p + k) is PE(p) turned by k

float64_error = max(np.abs(posenc.encode([p], d_model, dtype=np.float64)[0, 2 * pairs] - exact[p]).max() for p in positions)
assert float64_error < 1e-15  # idea 1, at every position from 10 to 10^7

# %% [markdown]
# In float32 each of the four factors, two products and the sum is rounded once, which
# bounds the error by $(2\sqrt{2} + 3) \cdot 2^{-25} < 1.74 \cdot 10^{-7}$ (a little more, under
# $2 \cdot 10^{-7}$, if a value next to 1 rounds up past it). A whole
# $32768 \times 512$ table, sampled against the exact reference:

# %%
table = posenc.positional_encoding(32768, d_model)
sampled = [0, 255, 256, 12345, 32767]
table_error = max(np.abs(table[p, 2 * pairs] - exact_sines(p)).max() for p in sampled)
print(f"largest error in the sampled rows: {table_error:.0e}")
assert (2 * np.sqrt(2) + 3) * 2**-25 < 1.74e-7 and table_error <= 2e-7

# %% [markdown]
# ## Speed
#
# Building the table means writing it to memory, so the yardstick is allocating and filling
# an array of the same shape. `make bench` compares all routes in NumPy, PyTorch and
# TensorFlow; here the NumPy routes at the same $32768 \times 512$, median of 9 runs (timings
# vary from machine to machine and run to run; a fresh 64 MiB array also pays for its pages).
# `posenc.torch` and `posenc.tensorflow` build their tables with the same NumPy code and
# take its memory over without a copy (`torch.from_numpy`, DLPack), so they cost the same.
# Arbitrary positions (`posenc.encode`, a $64 \times 512$ batch of positions below 32768)
# are timed against the naive routes that take sin and cos of a float32 or float64 angle.

# %%
length = 32768
buffer = np.empty((length, d_model), np.float32)


def float32_table(length):
    denominators = np.power(10000, np.arange(0, d_model, 2, dtype=np.float32) / d_model)
    angles = np.arange(length, dtype=np.float32)[:, None] / denominators
    return np.stack([np.sin(angles), np.cos(angles)], axis=2).reshape(length, d_model)


routes = {
    "posenc": lambda: posenc.positional_encoding(length, d_model),
    "posenc, out=": lambda: posenc.positional_encoding(length, d_model, out=buffer),
    "float32 route": lambda: float32_table(length),
    "np.empty + fill": lambda: np.empty((length, d_model), np.float32).fill(1.0),
}
# %%
batch = np.random.default_rng(0).integers(0, length, (64, 512)).astype(np.float64)


def naive_encode(dtype):
    angles = batch.astype(dtype)[..., None] * posenc.frequencies(d_model).astype(dtype)
    pairs = np.stack([np.sin(angles), np.cos(angles)], axis=-1)
    return pairs.reshape(*batch.shape, d_model).astype(np.float32)


encode_routes = {
    "naive float32": lambda: naive_encode(np.float32),
    "naive float64": lambda: naive_encode(np.float64),
    "posenc.encode": lambda: posenc.encode(batch, d_model),
}


# %%
def median_ms(routes, repeats=9):
    # Round robin, so a busy moment of the machine slows every route alike.
    times = {name: [] for name in routes}
    for _ in range(repeats + 1):
        for name, build in routes.items():
            start = time.perf_counter()
            build()
            times[name].append(time.perf_counter() - start)
    return {name: 1e3 * np.median(spans[1:]) for name, spans in times.items()}  # round 1 warms up


# %%
# NBVAL_IGNORE_OUTPUT
medians = median_ms(routes)
for name, ms in medians.items():
    print(f"{name:<16} {ms:7.2f} ms  {ms / medians['posenc']:5.2f} x posenc")
encode_medians = median_ms(encode_routes, repeats=5)
for name, ms in encode_medians.items():
    print(f"encode, {name:<14} {ms:7.2f} ms  {ms / encode_medians['naive float32']:5.2f} x naive float32")

# %% [markdown]
# The same batch in PyTorch (eager) and in TensorFlow inside `tf.function`, where a training
# step runs. Each framework's `encode` is timed against that framework's naive float32 route.

# %%
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")
import tensorflow as tf
import torch

import posenc.tensorflow
import posenc.torch

batch_torch, batch_tf = torch.from_numpy(batch), tf.constant(batch)
rates = posenc.frequencies(d_model).astype(np.float32)


def naive_torch(positions):
    angles = positions.float()[..., None] * torch.from_numpy(rates)
    return torch.stack([torch.sin(angles), torch.cos(angles)], dim=-1).flatten(-2)


@tf.function
def naive_tf(positions):
    angles = tf.cast(positions, tf.float32)[..., None] * rates
    return tf.reshape(tf.stack([tf.sin(angles), tf.cos(angles)], axis=-1), (*positions.shape, d_model))


# %%
encode_tf = tf.function(lambda positions: posenc.tensorflow.encode(positions, d_model))
framework_routes = {
    "torch, naive float32": lambda: naive_torch(batch_torch),
    "torch, posenc": lambda: posenc.torch.encode(batch_torch, d_model),
    "tf.function, naive float32": lambda: naive_tf(batch_tf).numpy(),
    "tf.function, posenc": lambda: encode_tf(batch_tf).numpy(),
}

# %%
# NBVAL_IGNORE_OUTPUT
framework_medians = median_ms(framework_routes, repeats=5)
for name, ms in framework_medians.items():
    naive = framework_medians[name.split(",")[0] + ", naive float32"]
    print(f"encode, {name:<26} {ms:7.2f} ms  {ms / naive:5.2f} x naive float32")

# %% [markdown]
# What the timings do not show, checked: every route builds the same shape; at the table's
# last row only posenc is accurate; at the batch's largest position the naive float32 routes
# are off in every framework, and posenc is as accurate as float64 sines.

# %%
last = length - 1
errors = {}
for name in ["posenc", "float32 route"]:
    built = routes[name]()
    assert built.shape == (length, d_model)
    errors[name] = np.abs(built[last, 2 * pairs] - exact_sines(last)).max()
    print(f"{name:<14} error at row {last}: {errors[name]:.0e}")
assert errors["posenc"] < 2e-7 < 1e-4 < errors["float32 route"]

largest = np.unravel_index(np.argmax(batch), batch.shape)
exact_row = exact_sines(batch[largest])
batch_errors = {name: np.abs(np.asarray(build())[largest][2 * pairs] - exact_row).max()
                for name, build in {**encode_routes, **framework_routes}.items()}
print(f"at position {batch[largest]:.0f} of the batch:",
      ", ".join(f"{name}: {f'{error:.1e}' if error > 2e-7 else 'below 2e-7'}" for name, error in batch_errors.items()))
assert all((error < 2e-7) == ("float32" not in name) for name, error in batch_errors.items())

# %% [markdown]
# ## When precision matters in practice
#
# A few $10^{-3}$ sounds small next to values of size 1. It matters when something
# compares the table against itself at another precision, or against nearby positions. The
# slowest pair of a $d = 512$ table turns by $w_{255} \approx 1.04 \cdot 10^{-4}$ radians per
# position, so its values change by at most that much from one position to the next.
#
# **A table built differently at training and at inference.** A model learns the table it
# was trained with. Serve it with a table built another way (the lectures' float32 code in
# training, an accurate table or another framework's in serving, or the reverse) and every
# row is off by the gap between the two. Over the first 512 positions that gap is below
# $10^{-4}$, smaller than one position's step in the slowest pair; over 5000 positions it
# is 3 to $7 \cdot 10^{-4}$ and over 32 768 from $1.5$ to $4 \cdot 10^{-3}$ (where in
# each range depends on the CPU's float32 power, see above), many positions' worth of the
# slow pairs' movement.

# %%
slowest = 10000.0 ** (-(d_model - 2) / d_model)


def build_gap(length):
    return np.abs(float32_table(length) - posenc.positional_encoding(length, d_model, dtype=np.float64)).max()


def within(value, low, high):
    """Checks low < value < high and says so: the float32 route's digits differ by CPU."""
    assert low < value < high, f"{value} is outside ({low:g}, {high:g})"
    return f"below {high:g}" if low == 0 else f"{low:g} to {high:g}"


gaps = {n: build_gap(n) for n in (512, 5000, 32768)}
gap_ranges = {512: (0, 1e-4), 5000: (3e-4, 7e-4), 32768: (1.5e-3, 4e-3)}
print("largest gap, float32 route vs accurate table, over",
      ", ".join(f"{n} rows: {within(gaps[n], *gap_ranges[n])}" for n in gaps))
assert round(slowest, 6) == 0.000104 and gaps[512] < slowest and gaps[32768] > 10 * slowest

# %% [markdown]
# **Half-precision tables.** float16 holds whole numbers exactly only up to 2048, bfloat16
# only up to 256 (8 significant bits). A table *computed* in bfloat16 merges positions
# before any sine is taken: of positions 0 to 999, only 507 remain distinct, so about half
# the rows are copies of a neighbour. Compute in float32 or float64 and cast at the end, as
# `posenc.torch` does for `dtype=torch.bfloat16`: then the only loss is the cast, up to
# $2^{-12} \approx 2.4 \cdot 10^{-4}$ per entry for float16 and $2^{-9} \approx 2.0 \cdot
# 10^{-3}$ for bfloat16, and all 1000 rows stay distinct.

# %%
assert np.float16(2048) + np.float16(1) == 2048 and np.float16(2047) + np.float16(1) == 2048
bf16_positions = torch.arange(1000).to(torch.bfloat16)
assert bf16_positions[257].item() == 256 and len(torch.unique(bf16_positions)) == 507

accurate = posenc.positional_encoding(1000, d_model, dtype=np.float64)
cast16 = np.abs(accurate.astype(np.float16) - accurate).max()
cast_bf16 = (torch.from_numpy(accurate).to(torch.bfloat16).double() - torch.from_numpy(accurate)).abs().max().item()
assert cast16 <= 2**-12 and cast_bf16 < 2**-9 + 2**-24  # (torch casts through float32)
assert len(torch.unique(posenc.torch.positional_encoding(1000, d_model, dtype=torch.bfloat16), dim=0)) == 1000

# %% [markdown]
# **Long contexts.** The float32 route gets the angle $p \cdot w$ with a relative error of
# about $10^{-7}$ (from $5 \cdot 10^{-8}$ to $1.5 \cdot 10^{-7}$, by CPU); divided by the
# frequency, that is an error in the *position* the row describes, and it grows with $p$:
# under 0.001 of a position at 5000, 0.05 to 0.15 at $10^6$ and 0.8 to 1.5, about a whole
# position, at $10^7$, where neighbouring rows blur.
# Past $2^{24} = 16\,777\,216$ float32 cannot even hold the positions: $2^{24} + 1$ rounds
# to $2^{24}$, and two rows come out identical. posenc takes the positions as integers (or
# float64) and keeps them apart.

# %%
frequencies = 1 / exact_denominators
position_error = {p: np.abs((np.float32(p) / denominators32) / frequencies - p).max() for p in (5000, 10**6, 10**7)}
position_ranges = {5000: (0, 1e-3), 10**6: (0.05, 0.15), 10**7: (0.8, 1.5)}
print("largest position error of the float32 route:",
      ", ".join(f"at {p:g}: {within(e, *position_ranges[p])}" for p, e in position_error.items()))
assert all(5e-8 < e / p < 1.5e-7 for p, e in position_error.items())

assert np.float32(2**24 + 1) == np.float32(2**24)
beyond = posenc.encode(np.array([2**24, 2**24 + 1]), d_model, dtype=np.float64)
assert np.abs(beyond[0] - beyond[1]).max() > 0.5
