# %% [markdown]
# # 06 · How accurate and how fast: the table at large positions, float32 against posenc
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/posenc-org/posenc/blob/main/notebooks/06_precision_and_speed.ipynb)
#
# Long-context models use positions of $10^5$ to $10^7$. The lectures build the table in
# float32, and there the angle $pos / 10000^{2i/d}$ is already wrong before the sine is
# taken. Notebook 01 found its float32 table a few "last digits" away from `posenc`; here we
# make that phrase precise, build an exact reference to measure against, watch the error
# grow with the position, see where it comes from and how `posenc` avoids it, and time what
# the accurate table costs.
#
# **Question:** How wrong is a float32 sinusoidal table at large positions, why, and what does an accurate one cost?
#
# **You will be able to:**
# - measure a float32 error in ulps (steps between neighbouring floats) against a high-precision `mpmath` reference;
# - predict the error of a float32 angle from the float32 step near it;
# - compute an accurate float32 entry at any position by reducing the angle in float64 first;
# - time table builders fairly, and tell when precision matters (training against serving, half precision, long contexts).
#
# **Prerequisites:** notebook 01 · **Time:** about 45 minutes

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
# ## 1. The step between neighbouring floats: the ulp
#
# A float32 holds a number as 24 significant bits times a power of two (the
# [IEEE 754 single format](https://en.wikipedia.org/wiki/Single-precision_floating-point_format)).
# So the float32 numbers are not evenly spread: between 1 and 2 they are $2^{-23} \approx
# 1.2 \cdot 10^{-7}$ apart, between 2 and 4 twice that, and the step doubles at every power
# of two. The step at a number is called its *unit in the last place*, or
# [ulp](https://en.wikipedia.org/wiki/Unit_in_the_last_place); `np.spacing(x)` returns it
# (the distance from `x` to the next float of its type, away from zero). float64 has 53
# significant bits, so its steps are $2^{29} \approx 5 \cdot 10^8$ times finer. Rounding a
# result to the nearest float moves it by at most half a step.

# %%
for value in [1, 100, 32767, 1e5, 1e7]:
    print(f"{value:>10g}: float32 step {np.spacing(np.float32(value)):.1e}, float64 step {np.spacing(value):.1e}")
assert all(np.spacing(np.float32(2.0**k)) == 2.0 ** (k - 23) for k in range(-20, 30))  # doubles at each power of 2

# %% [markdown]
# Near 32767 float32 numbers are $2^{-9} \approx 0.002$ apart, near $10^7$ a whole 1 apart:
# an angle that large, stored in float32, can be off by half that step, however carefully it
# was computed.
#
# Errors between two float32 numbers are best counted in these steps. Positive float32
# numbers are ordered like their bit patterns read as integers, so the number of steps
# between two of them (of the same sign) is the difference of those integers:

# %%
def ulps_apart(a, b):
    """How many float32 steps lie between a and b (same signs), entry by entry."""
    as_int = lambda x: np.asarray(x, dtype=np.float32).view(np.int32).astype(np.int64)
    return np.abs(as_int(a) - as_int(b))


one = np.float32(1)
print(ulps_apart(one, one + np.spacing(one)), ulps_apart(one, np.float32(1.0000005)))
assert ulps_apart(one, np.float32(1.0000005)) == 4  # 5e-7 above 1 is 4 steps of 1.2e-7, rounded

# %% [markdown]
# ## 2. An exact reference: mpmath
#
# To measure an error we need the true value. [mpmath](https://mpmath.org) computes with as
# many digits as we ask for. With 30 significant decimal digits (`mpmath.workdps(30)`) it
# forms the angle $pos / 10000^{2i/d}$ and takes its sine. Even at position $10^7$ that
# angle is right to about $10^{-23}$ (30 digits of a number near $10^7$), and so is its sine:
# ten million times finer than float64's step just below 1, $2^{-53} \approx 1.1 \cdot
# 10^{-16}$. Rounded to float64, the result is the float64 nearest the true sine, as good
# as "exact" for everything below. Rounded to float32 it is the *correctly rounded* float32
# sine, the best a float32 can hold (we round through float64, which gives the same float32
# unless the sine lies extraordinarily close to halfway between two float32 numbers).
# Here is $\sin 1$:

# %%
with mpmath.workdps(30):
    true_sine = mpmath.sin(1)
    print(mpmath.nstr(true_sine, 30))
print(f"as float64 {float(true_sine)!r}, as float32 {np.float32(float(true_sine))!s}")
print(f"float32 step there {np.spacing(np.float32(0.84)):.1e}")

# %% [markdown]
# NumPy's float32 `np.sin` is not always correctly rounded: it is a fast vectorised
# approximation (and so is `np.cos`), allowed by NumPy's own tests to be up to 2 ulp off,
# and which inputs it misses depends on the CPU. Over the 60 sines and cosines of notebook 01's
# $10 \times 6$ table (the float32 angles of the lecture), it stays within those 2 ulp of the
# correctly rounded values from mpmath. That is the "last digit" story of notebook 01: at
# small positions a float32 table can be wrong only by its final rounding, a step or two,
# about $10^{-7}$.

# %%
lecture_angles = np.arange(10, dtype=np.float32)[:, None] / np.power(10000, np.arange(0, 6, 2, dtype=np.float32) / 6)
for numpy_function, mpmath_function in [(np.sin, mpmath.sin), (np.cos, mpmath.cos)]:
    with mpmath.workdps(30):
        correctly_rounded = np.array([[np.float32(float(mpmath_function(mpmath.mpf(float(a))))) for a in row]
                                      for row in lecture_angles])
    assert ulps_apart(numpy_function(lecture_angles), correctly_rounded).max() <= 2, f"{numpy_function.__name__}: 2 ulp"

# %% [markdown]
# For the rest of the notebook, the reference is a row of sines at a $d_{model} = 512$ table's
# position, sampled every 16th column pair (16 pairs), each the float64 rounding of the
# 30-digit value. Position 1 starts with $\sin 1$ again:

# %%
d_model = 512
pairs = np.arange(0, d_model // 2, 16)


def exact_sines(position):
    with mpmath.workdps(30):
        return np.array([float(mpmath.sin(mpmath.mpf(int(position)) / mpmath.power(10000, mpmath.mpf(2 * int(i)) / d_model)))
                         for i in pairs])


print(len(pairs), exact_sines(1)[:3].round(8))

# %% [markdown]
# ## 3. The float32 route against posenc
#
# The lectures' route divides float32 positions by float32 denominators and takes the
# sine in float32. We measure both it and `posenc.encode` at 25 positions from 10 to
# $10^7$, as the largest error over the sampled sines.

# %%
def float32_route(position):
    denominators = np.power(10000, np.arange(0, d_model, 2, dtype=np.float32) / d_model)
    return np.sin(np.float32(position) / denominators)[pairs]


positions = np.unique(np.logspace(1, 7, 25).astype(np.int64))
exact = {p: exact_sines(p) for p in positions}
route_error = np.array([np.abs(float32_route(p) - exact[p]).max() for p in positions])
posenc_error = np.array([np.abs(posenc.encode([p], d_model)[0, 2 * pairs] - exact[p]).max() for p in positions])
print(f"{len(positions)} positions; float32 route: {route_error.max():.1e} at worst; posenc: {posenc_error.max():.1e} at worst")

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
# log-log plot it is a straight line of slope 1 (a least-squares fit gives a slope within
# 0.1 of 1). It passes $10^{-3}$ from $10^5$ on and $10^{-2}$ from $10^6$ on. posenc stays
# within $2 \cdot 10^{-7}$ everywhere, the bound that `posenc.encode` guarantees for float32
# output (its reduction of the angle to a half turn is proved in the docstring of
# `posenc/_rotation.py`); below that bound its error is only the final rounding to float32.

# %%
grown = positions >= 1000
slope = np.polyfit(np.log(positions[grown]), np.log(route_error[grown]), 1)[0]
print(f"slope of log(error) against log(position), from 1000 on: {slope:.1f}")
assert abs(slope - 1) < 0.1, "error proportional to the position"

# %% [markdown]
# ## 4. Why: the angle is rounded on a coarse grid
#
# Take position 32767. The angle $32767 / 1$ of the first column pair is a whole number
# below $2^{24}$, exact in float32. The others are not: their denominators $10000^{2i/d}$
# are rounded to float32 first, and the quotient $32767 / 10000^{2i/d}$ is rounded again, to
# the float32 grid, whose step for quotients between 16384 and 32768 is $2^{-9}$ (section 1).
# Rounding to the nearest grid point moves an angle by up to half a step, $2^{-10} \approx
# 0.001$. The rounded denominator moves it by up to 0.0012 more, even when it is the float32
# nearest the exact one (the best float32 can hold). And the sine of an angle off by $\delta$
# is off by up to $\delta$ (the slope of $\sin$ is at most 1). So the sines at position 32767
# can be off by about $2 \cdot 10^{-3}$ before `np.sin` does anything, ten thousand times the
# final rounding of section 2.

# %%
exact_denominators = 10000.0 ** (np.arange(0, d_model, 2) / d_model)
rounded_denominators = exact_denominators.astype(np.float32)


def denominator_shift(denominators):
    """How far float32 denominators move each angle 32767 / denominator."""
    return np.abs(32767 / denominators.astype(np.float64) - 32767 / exact_denominators)


angles32 = np.float32(32767) / rounded_denominators
quotient_rounding = np.abs(angles32 - 32767 / rounded_denominators.astype(np.float64))
denominator_rounding = denominator_shift(rounded_denominators)
print(f"largest move of an angle at position 32767: by the quotient's rounding {quotient_rounding.max():.4f}, "
      f"by the denominator's {denominator_rounding.max():.4f}")
assert quotient_rounding.max() <= 2**-10, "at most half a float32 step near 32767"

# %% [markdown]
# The lectures' float32 `np.power` lands within one float32 step of those denominators, but
# which neighbour it returns depends on the CPU: where the CPU has AVX-512, NumPy takes a
# faster, slightly less exact path. A denominator one step off moves the angle further, by
# up to 0.003 in all. So the float32 route's errors further down depend a little on the CPU,
# and where they do we state the range that holds either way. float64, in contrast, has a
# step of $2^{-29} \approx 2 \cdot 10^{-9}$ near $10^7$ (section 1): an angle formed in
# float64 is good enough for float32 output at every position here.

# %%
denominators32 = np.power(10000, np.arange(0, d_model, 2, dtype=np.float32) / d_model)  # the lectures'
steps_apart = ulps_apart(denominators32, rounded_denominators)
assert steps_apart.max() <= 1 and denominator_shift(denominators32).max() < 0.003, "one step off at most, 0.003 at most"

# %% [markdown]
# ## 5. How posenc avoids it
#
# The simplest fix, which exercise 2 asks you to write: form the angle in float64, *reduce*
# it (take its remainder modulo $2\pi$, which leaves the sine unchanged) while still in
# float64, and only then round the small angle to float32. posenc goes further, with two
# ideas (see `posenc/_rotation.py`):
#
# 1. **The angle in more than float64.** The frequency $w$ is kept as two float64 numbers
#    and $p \cdot w$ as $\theta_{hi} + \theta_{lo}$, the exact rounding error of the product
#    recovered by [Dekker's method](https://en.wikipedia.org/wiki/2Sum); then
#    $\sin\theta \approx \sin\theta_{hi} + \theta_{lo}\cos\theta_{hi}$.
#    float64 output is within $10^{-15}$ of the exact sines at every position above, $10^7$
#    included (checked below).
# 2. **A table is a product of rotations.** $PE(p + k)$ is $PE(p)$ turned by the fixed angle
#    $k\,w$ in every pair:
#    $\sin(a + b) = \sin a \cos b + \cos a \sin b$, $\cos(a + b) = \cos a \cos b - \sin a \sin b$.
#    With $p = qB + r$, all $L$ rows come from $B$ accurate rows and $L / B$ accurate steps,
#    one complex multiply per pair.
#
# The rotation at work, on float64 rows from `posenc.encode`: PE(p + k) is PE(p) turned by k.

# %%
p, k = 1_000_000, 37
rows = posenc.encode([p, k, p + k], d_model, dtype=np.float64)
sin_a, cos_a, sin_b, cos_b = rows[0, 0::2], rows[0, 1::2], rows[1, 0::2], rows[1, 1::2]
turned = np.stack([sin_a * cos_b + cos_a * sin_b, cos_a * cos_b - sin_a * sin_b], axis=-1).reshape(-1)
# The difference is a few float64 roundings, which vary with the NumPy build: print the bound.
print(f"PE(p) turned by k equals PE(p + k) to within 1e-14: {np.abs(turned - rows[2]).max() < 1e-14}")

# %% [markdown]
# Idea 1, at every position from 10 to $10^7$:

# %%
float64_error = max(np.abs(posenc.encode([p], d_model, dtype=np.float64)[0, 2 * pairs] - exact[p]).max() for p in positions)
assert float64_error < 1e-15, f"float64 output off by {float64_error:.1e}"

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
# ## 6. Speed
#
# Building the table means writing it to memory, so the yardstick is allocating and filling
# an array of the same shape. `make bench` compares all routes in NumPy, PyTorch and
# TensorFlow; here the NumPy routes at the same $32768 \times 512$, median of 9 runs (timings
# vary from machine to machine and run to run; a fresh 64 MiB array also pays for its pages).
# `posenc.torch` and `posenc.tensorflow` build their tables with the same NumPy code and
# take its memory over without a copy (`torch.from_numpy`, DLPack).
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


# %% [markdown]
# The routes take turns (round robin), so a busy moment of the machine slows every route
# alike; the first round only warms up.

# %%
def median_ms(routes, repeats=9):
    times = {name: [] for name in routes}
    for _ in range(repeats + 1):
        for name, build in routes.items():
            start = time.perf_counter()
            build()
            times[name].append(time.perf_counter() - start)
    return {name: 1e3 * np.median(spans[1:]) for name, spans in times.items()}


# %%
# NBVAL_IGNORE_OUTPUT
medians = median_ms(routes)
for name, ms in medians.items():
    print(f"{name:<16} {ms:7.2f} ms  {ms / medians['posenc']:5.2f} x posenc")
encode_medians = median_ms(encode_routes, repeats=5)
for name, ms in encode_medians.items():
    print(f"encode, {name:<14} {ms:7.2f} ms  {ms / encode_medians['naive float32']:5.2f} x naive float32")

# %% [markdown]
# The accurate table is not bought with time. In the run stored here posenc built it faster
# than the lectures' float32 route, in about the time of allocating and filling the array;
# your numbers will differ. The check below claims only that posenc takes less than twice
# the float32 route's time: a generous bound, so that another CPU, or a busy moment, does
# not fail it.

# %%
assert medians["posenc"] < 2 * medians["float32 route"], medians

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
# What the timings do not show: at the table's last row only posenc is accurate;

# %%
last = length - 1
errors = {name: np.abs(routes[name]()[last, 2 * pairs] - exact_sines(last)).max() for name in ["posenc", "float32 route"]}
for name, error in errors.items():
    print(f"{name:<14} error at row {last}: {error:.0e}")
assert errors["posenc"] < 2e-7 < 1e-4 < errors["float32 route"]

# %% [markdown]
# and at the batch's largest position the naive float32 routes are off in every framework,
# while posenc is as accurate as float64 sines.

# %%
largest = np.unravel_index(np.argmax(batch), batch.shape)
exact_row = exact_sines(batch[largest])
batch_errors = {name: np.abs(np.asarray(build())[largest][2 * pairs] - exact_row).max()
                for name, build in {**encode_routes, **framework_routes}.items()}
print(f"at position {batch[largest]:.0f} of the batch:",
      ", ".join(f"{name}: {f'{error:.1e}' if error > 2e-7 else 'below 2e-7'}" for name, error in batch_errors.items()))
assert all((error < 2e-7) == ("float32" not in name) for name, error in batch_errors.items())

# %% [markdown]
# ## 7. When precision matters in practice
#
# A few $10^{-3}$ sounds small next to values of size 1. It matters when something
# compares the table against itself at another precision, or against nearby positions. The
# slowest pair of a $d = 512$ table turns by $w_{255} \approx 1.04 \cdot 10^{-4}$ radians per
# position, so its values change by at most that much from one position to the next.
#
# Some of the numbers below depend on the CPU's float32 power (section 4); for those we
# print the range that holds either way, and `within` checks that the value is inside it.

# %%
def within(value, low, high):
    """Checks low < value < high and says so: the float32 route's digits differ by CPU."""
    assert low < value < high, f"{value} is outside ({low:g}, {high:g})"
    return f"below {high:g}" if low == 0 else f"{low:g} to {high:g}"


# %% [markdown]
# **A table built differently at training and at inference.** A model learns the table it
# was trained with. Serve it with a table built another way (the lectures' float32 code in
# training, an accurate table or another framework's in serving, or the reverse) and every
# row is off by the gap between the two. Over the first 512 positions that gap is below
# $10^{-4}$, smaller than one position's step in the slowest pair; over 5000 positions it
# is 3 to $7 \cdot 10^{-4}$ and over 32 768 from $1.5$ to $4 \cdot 10^{-3}$, more than ten
# positions' worth of the slow pairs' movement.

# %%
slowest = 10000.0 ** (-(d_model - 2) / d_model)


def build_gap(length):
    return np.abs(float32_table(length) - posenc.positional_encoding(length, d_model, dtype=np.float64)).max()


gaps = {n: build_gap(n) for n in (512, 5000, 32768)}
gap_ranges = {512: (0, 1e-4), 5000: (3e-4, 7e-4), 32768: (1.5e-3, 4e-3)}
print(f"slowest pair: {slowest:.2e} radians per position")
print("largest gap, float32 route vs accurate table, over",
      ", ".join(f"{n} rows: {within(gaps[n], *gap_ranges[n])}" for n in gaps))
assert gaps[512] < slowest and gaps[32768] > 10 * slowest

# %% [markdown]
# **Half-precision tables.** float16 holds whole numbers exactly only up to 2048, bfloat16
# only up to 256 (8 significant bits). A table *computed* in bfloat16 merges positions
# before any sine is taken: of positions 0 to 999, only 507 remain distinct, so about half
# the rows are copies of a neighbour.

# %%
bf16_positions = torch.arange(1000).to(torch.bfloat16)
print(f"distinct bfloat16 positions among 0..999: {len(torch.unique(bf16_positions))}; 257 becomes {bf16_positions[257].item():.0f}")
assert len(torch.unique(bf16_positions)) == 507

# %% [markdown]
# Compute in float32 or float64 and cast at the end, as `posenc.torch` does for
# `dtype=torch.bfloat16`: then the only loss is the cast, up to half a step next to 1,
# $2^{-12} \approx 2.4 \cdot 10^{-4}$ per entry for float16 and $2^{-9} \approx 2.0 \cdot
# 10^{-3}$ for bfloat16, and all 1000 rows stay distinct.

# %%
bf16_table = posenc.torch.positional_encoding(1000, d_model, dtype=torch.bfloat16)
print(f"distinct rows of the bfloat16 table: {len(torch.unique(bf16_table, dim=0))}")
assert len(torch.unique(bf16_table, dim=0)) == 1000

# %% [markdown]
# **Long contexts.** The float32 route gets the angle $p \cdot w$ with a relative error of
# about $10^{-7}$ (from $5 \cdot 10^{-8}$ to $1.5 \cdot 10^{-7}$, by CPU); divided by the
# frequency, that is an error in the *position* the row describes, and it grows with $p$:
# under 0.001 of a position at 5000, 0.05 to 0.15 at $10^6$ and 0.8 to 1.5, about a whole
# position, at $10^7$, where neighbouring rows blur.

# %%
frequencies = 1 / exact_denominators
position_error = {p: np.abs((np.float32(p) / denominators32) / frequencies - p).max() for p in (5000, 10**6, 10**7)}
position_ranges = {5000: (0, 1e-3), 10**6: (0.05, 0.15), 10**7: (0.8, 1.5)}
print("largest position error of the float32 route:",
      ", ".join(f"at {p:g}: {within(e, *position_ranges[p])}" for p, e in position_error.items()))
assert all(5e-8 < e / p < 1.5e-7 for p, e in position_error.items()), "relative error of the angle, by CPU"

# %% [markdown]
# Past $2^{24} = 16\,777\,216$ float32 cannot even hold the positions (the float32 step there
# is 2): $2^{24} + 1$ rounds to $2^{24}$, and two rows come out identical. posenc takes the
# positions as integers (or float64) and keeps them apart.

# %%
beyond = posenc.encode(np.array([2**24, 2**24 + 1]), d_model, dtype=np.float64)
print(f"float32(2**24 + 1) == 2**24: {np.float32(2**24 + 1) == np.float32(2**24)}; "
      f"posenc's rows for 2**24 and 2**24 + 1 differ by up to {np.abs(beyond[0] - beyond[1]).max():.2f}")
assert np.abs(beyond[0] - beyond[1]).max() > 0.5

# %% [markdown]
# ## Summary
#
# - An **ulp** is the step between neighbouring floats (`np.spacing`). float32's is $2^{-23}$
#   next to 1 and doubles at every power of two: $2^{-9} \approx 0.002$ near 32767, 1 near
#   $10^7$. Rounding to the nearest float costs at most half a step.
# - **mpmath** at 30 digits gives an exact reference. Against it, NumPy's float32 sine is
#   within 2 ulp of the correctly rounded value: at small positions a float32 table is off
#   only in its last digit.
# - The lectures' **float32 route** rounds the *angle* to the float32 grid before any sine is
#   taken, so its error grows in proportion to the position: above $10^{-3}$ from $10^5$ and
#   above $10^{-2}$ from $10^6$. Form the angle in float64 (posenc: beyond float64), reduce it,
#   and only then round: posenc stays within $2 \cdot 10^{-7}$ in float32 and $10^{-15}$ in
#   float64, at every position up to $10^7$.
# - $PE(p + k)$ is $PE(p)$ turned by $k\,w$ in every pair; posenc builds tables from such
#   rotations, in less than twice the float32 route's time (faster, in the run stored here).
# - Precision matters when training and serving build the table differently (a gap of up to
#   $4 \cdot 10^{-3}$ over 32 768 positions, over ten times the slowest pair's step), in half
#   precision (compute in float32 and cast last: bfloat16 positions leave only 507 of 1000
#   distinct), and in long contexts (a position error of about 1 at $10^7$; float32 cannot
#   tell $2^{24}$ from $2^{24} + 1$).
#
# ## Exercises
#
# Each check answers "Correct!" or says what is wrong. When stuck, `nb06.angle_step.hint()`
# gives a nudge and `nb06.angle_step.solution()` prints the reference code (the same for
# `accurate_sine`).
#
# ### Exercise 1 · The float32 step near an angle
#
# Pair `pair` of a `d_model`-wide table turns position `position` into the angle
# `position / 10000 ** (2 * pair / d_model)`. Write `angle_step(position, pair, d_model)`
# that returns two numbers: the float32 step (ulp) at that angle, and the largest error that
# storing the angle in float32 puts into its sine. The draft below has one mistake; the check
# runs it at four positions and says what is wrong.

# %%
from posenc.exercises import nb06


def angle_step(position, pair, d_model):
    angle = position / 10000 ** (2 * pair / d_model)
    step = np.spacing(angle)  # the distance to the next number after the angle
    return step, step / 2


# %%
nb06.angle_step.check(angle_step)

# %% [markdown]
# ### Exercise 2 · An accurate float32 sine at a large position
#
# Write `accurate_sine(position, pair, d_model)`: the float32 value of column `2 * pair` at
# that position, accurate to about $10^{-7}$ even at position $10^7$, by forming the angle in
# float64 and reducing it (section 5) before anything is rounded to float32. The check
# compares it with the reference solution, which agrees with `posenc.encode` to within
# $3 \cdot 10^{-7}$ (see the cross-checks). The draft below forgets one step.

# %%
def accurate_sine(position, pair, d_model):
    angle = position * 10000.0 ** (-2 * pair / d_model)  # float64
    return np.sin(np.float32(angle))  # the float32 sine of the angle


# %%
nb06.accurate_sine.check(accurate_sine)

# %% [markdown]
# ## Cross-checks
#
# The remaining claims of the text, checked in one place.

# %%
# Cross-checks of sections 1 to 5
# Section 1: float64's steps are 2**29 times finer than float32's; 2**-9 near 32767, 2**-29 near 1e7.
assert np.spacing(np.float32(32767)) == 2**-9 and np.spacing(1e7) == 2**-29
assert all(np.spacing(np.float32(v)) / np.spacing(float(v)) == 2**29 for v in [1.5, 100.0, 32767.0])
# Section 2: 30 digits of an angle near 1e7 resolve 1e-23, far below float64's step next to 1 (1.1e-16 below 1).
assert np.spacing(np.nextafter(1.0, 0)) == 2**-53 and 1e7 * 1e-30 < 1e-16
# Section 3: the float32 route passes 1e-3 from 1e5 on and 1e-2 from 1e6 on; posenc within 2e-7.
assert (route_error[positions >= 10**5] > 1e-3).all() and (route_error[positions >= 10**6] > 1e-2).all()
assert posenc_error.max() <= 2e-7
# Section 4: position 32767, pair 0 exact; the float32 grid's step 2**-9 above 16384; the
# rounded denominators move an angle by up to 0.0012, the quotient's rounding by up to 0.001.
assert angles32[0] == 32767 and quotient_rounding[0] == 0 and denominator_rounding[0] == 0
assert np.spacing(np.float32(16384)) == 2**-9 and 0.0008 < quotient_rounding.max()
assert 0.001 < denominator_rounding.max() < 0.0013
# Section 5: the float32 bound of a rotation, under 1.74e-7.
assert (2 * np.sqrt(2) + 3) * 2**-25 < 1.74e-7

# %%
# Cross-checks of sections 6 and 7. Section 6: every route builds the same shape.
assert all(routes[name]().shape == (length, d_model) for name in ["posenc", "posenc, out=", "float32 route"])
# Section 7: the slowest pair turns by 1.04e-4 per position; float16 and bfloat16 casts.
assert round(slowest, 6) == 0.000104
assert np.float16(2048) + np.float16(1) == 2048 and np.float16(2047) + np.float16(1) == 2048
assert bf16_positions[257].item() == 256
accurate = posenc.positional_encoding(1000, d_model, dtype=np.float64)
cast16 = np.abs(accurate.astype(np.float16) - accurate).max()
cast_bf16 = (torch.from_numpy(accurate).to(torch.bfloat16).double() - torch.from_numpy(accurate)).abs().max().item()
assert cast16 <= 2**-12 and cast_bf16 < 2**-9 + 2**-24  # (torch casts through float32)
assert np.float32(2**24 + 1) == np.float32(2**24) and np.spacing(np.float32(2**24)) == 2

# %%
# Cross-checks of exercise 2: the reference solution agrees with posenc.encode within 3e-7 at the checked positions.
for case in nb06.accurate_sine.cases:
    position, pair, width = case
    assert abs(nb06.accurate_sine_solution(*case) - posenc.encode([position], width)[0, 2 * pair]) < 3e-7, case
# ... while the float32 route, even with the nearest float32 denominator, is off by more than 0.1 at 1e7.
assert abs(np.sin(np.float32(10**7) / np.float32(10000.0 ** (2 / 512))) - posenc.encode([10**7], 512)[0, 2]) > 0.1
