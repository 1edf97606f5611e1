# %% [markdown]
# # 06 · Precision and speed
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
# The route's error grows in proportion to the position; posenc stays within about one
# float32 rounding (a few $10^{-8}$) everywhere. The claims, checked:

# %%
assert posenc_error.max() <= 2e-7
assert (route_error[positions >= 10**5] > 1e-3).all() and (route_error[positions >= 10**6] > 1e-2).all()
print("float32 route off by > 1e-3 from 1e5 and > 1e-2 from 1e6; posenc within 2e-7 everywhere: True")

# %% [markdown]
# ## Why: float32 numbers are far apart near a large angle
#
# A float32 has 24 significant bits. Near 32767 consecutive float32 numbers are
# $2^{-9} \approx 0.002$ apart, so the angle $32767 / 1$ (first column) or any quotient of that
# size can only land on that grid: the sine of a rounded angle is off by up to half the
# spacing. float64 spacing near $10^7$ is $2 \cdot 10^{-9}$: good enough for float32 output.

# %%
for value in [100, 32767, 1e5, 1e7]:
    print(f"{value:>10g}: float32 spacing {np.spacing(np.float32(value)):.1e}, float64 spacing {np.spacing(value):.1e}")

# %% [markdown]
# ## How posenc avoids it
#
# Two ideas (see `posenc/_rotation.py`):
#
# 1. **The angle in more than float64.** The frequency $w$ is kept as two float64 numbers
#    and $p \cdot w$ as $\theta_{hi} + \theta_{lo}$, the exact rounding error of the product
#    recovered by Dekker's method; then $\sin\theta \approx \sin\theta_{hi} + \theta_{lo}\cos\theta_{hi}$.
#    float64 output is within about $10^{-15}$ even at $10^7$.
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
print("PE(p + k) == PE(p) turned by k:", np.allclose(turned, rows[2], rtol=0, atol=1e-14))

# %% [markdown]
# In float32 each of the four factors, two products and the sum is rounded once, which
# bounds the error by $(2\sqrt{2} + 3) \cdot 2^{-25} < 1.74 \cdot 10^{-7}$ (a little more, under
# $2 \cdot 10^{-7}$, if a value next to 1 rounds up past it). A whole
# $32768 \times 512$ table, sampled against the exact reference:

# %%
table = posenc.positional_encoding(32768, d_model)
sampled = [0, 255, 256, 12345, 32767]
table_error = max(np.abs(table[p, 2 * pairs] - exact_sines(p)).max() for p in sampled)
print(f"largest error in the sampled rows: {table_error:.0e}, within 2e-7: {table_error <= 2e-7}")

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
# What the table does not show, checked: every route builds the same shape, and only
# posenc is accurate at its last row.

# %%
last = length - 1
for name in ["posenc", "float32 route"]:
    built = routes[name]()
    error = np.abs(built[last, 2 * pairs] - exact_sines(last)).max()
    print(f"{name:<14} shape {built.shape}, error at row {last}: below 2e-7 {error < 2e-7}")
