# %% [markdown]
# # 04 · Why sines and cosines of geometric wavelengths work
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/posenc-org/posenc/blob/main/notebooks/04_intuition.ipynb)
#
# **Question:** What makes a table of sines and cosines with geometrically spaced wavelengths a good code for positions, and when does it stop being one?
#
# **You will be able to:**
# - predict the wavelength of any pair of columns from `d_model` and the base;
# - write the rotation that takes the encoding of position $p$ to that of $p + k$;
# - tell when a base is too small for the positions you need, and find where rows start to look alike.
#
# **Prerequisites:** notebook 01 · **Time:** about 50 minutes
#
# Why sines *and* cosines? Why 10000? Why wavelengths spaced geometrically, and what makes
# the table "positional" at all? The lecture notes answer in prose: the wavelengths run
# from $2\pi$ to $10000 \cdot 2\pi$ in a geometric progression, short wavelengths carry local
# position and long ones global position, like the bits of a binary counter;
# [the paper](https://arxiv.org/abs/1706.03762) (section 3.5) adds that $PE(pos + k)$ is a
# linear function of $PE(pos)$. Here each idea becomes a picture and a fact that a cell
# checks, so this notebook fails if any sentence in it stops being true.

# %%
# On Colab, install posenc from GitHub; elsewhere `make lab` has already installed it.
import sys

if "google.colab" in sys.modules:
    # %pip install --quiet "posenc @ git+https://github.com/posenc-org/posenc@main"

# %% [markdown]
# `posenc.plot` holds the figures (it imports matplotlib; `import posenc` alone does not).
# We work in float64, whose round-off on these sums of a few dozen sines and cosines is
# near $10^{-15}$, so the checks below can be tight: a tolerance of $10^{-12}$ or less
# means "equal up to float64 round-off".

# %%
# %matplotlib inline
import matplotlib.pyplot as plt
import numpy as np

import posenc
import posenc.plot

np.set_printoptions(precision=4, suppress=True)


def table(length, d_model, base=10000.0, layout="interleaved"):
    return posenc.positional_encoding(length, d_model, base=base, layout=layout, dtype=np.float64)


def dot_by_offset(k, d_model, base=10000.0):
    """PE(p) · PE(p + k) for even d_model, from the formula: sum over pairs of cos(k w_i)."""
    rates = 2 * np.pi / posenc.wavelengths(d_model, base)
    return np.cos(np.multiply.outer(k, rates)).sum(axis=-1)


# %% [markdown]
# ## 1. The wavelengths form a geometric progression
#
# Pair $i$ (columns $2i$ and $2i+1$) turns at $w_i = 10000^{-2i/d}$ radians per position, so
# it repeats every $\lambda_i = 2\pi / w_i = 2\pi \cdot 10000^{2i/d}$ positions: its
# *wavelength*. `posenc.wavelengths` returns them. Each is $10000^{2/d}$ times the one
# before, a constant ratio: a
# [geometric progression](https://en.wikipedia.org/wiki/Geometric_progression) that starts
# at $2\pi$ and, with $d/2$ terms, stops one ratio short of $10000 \cdot 2\pi$.

# %%
d_model = 64
lengths = posenc.wavelengths(d_model)
ratio = 10000 ** (2 / d_model)
print("first four:", lengths[:4].round(3), " last:", lengths[-1].round(1))
print(f"ratio 10000^(2/{d_model}) = {ratio:.6f}")
np.testing.assert_allclose(lengths[1:] / lengths[:-1], ratio, rtol=1e-13)  # one constant ratio

# %% [markdown]
# One lecture note gives the ratio as $10000^{1/d}$, counting every column. It is
# $10000^{2/d}$: a sine and its cosine share one wavelength, so the wavelength only changes
# every second column. The last wavelength falls short of $10000 \cdot 2\pi$ by that one
# ratio, $10000^{-2/d}$, which tends to 1 as the model widens: at $d = 512$ the longest
# wavelength is 0.9647 of $10000 \cdot 2\pi$, "nearly" all of it.

# %%
shares = {d: posenc.wavelengths(d)[-1] / (10000 * 2 * np.pi) for d in (16, 64, 512, 4096)}
for d, share in shares.items():
    print(f"d_model={d:5d}: longest wavelength = {share:.4f} x 10000·2π")
assert all(np.isclose(share, 10000 ** (-2 / d)) for d, share in shares.items())  # one ratio short

# %% [markdown]
# On a log scale a geometric progression is a straight line. Each dot is one column of the
# $d=64$ table; a sine and the cosine beside it sit at the same height. The dashed lines
# are $2\pi$ and $10000 \cdot 2\pi$.

# %%
posenc.plot.wavelengths(d_model)
plt.show()

# %% [markdown]
# The same fact seen in the columns themselves: sine columns of pairs 0, 2 and 4 over 100
# positions, each $10000^{4/64} \approx 1.78$ times longer than the one before.

# %%
assert round(lengths[2] / lengths[0], 2) == 1.78  # 10000^(4/64)
wide = table(100, d_model)
posenc.plot.columns(wide, [0, 4, 8], title="sine columns of pairs 0, 2, 4 (d_model = 64)")
plt.show()

# %% [markdown]
# ## 2. Like a binary counter, and not quite
#
# Write the positions 0 … 255 in binary, least significant bit first, next to a
# sinusoidal table of 16 columns. In both, the leftmost column changes fastest and each
# column further right changes more slowly.

# %%
positions = np.arange(256)
bits = (positions[:, None] >> np.arange(8)) & 1  # column j is bit j
small = table(256, 16)

fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.5), layout="constrained")
posenc.plot.heatmap(bits, left, cmap="Greys", vmin=0, vmax=1, xlabel="bit (least significant first)",
                    clabel="bit", title="binary counter, 8 bits")
posenc.plot.heatmap(small, right, title="sinusoidal table, d_model = 16")
plt.show()

# %% [markdown]
# **What is alike.** Bit $j$ repeats every $2^{j+1}$ positions, so the periods grow
# geometrically with ratio 2; the sinusoidal pairs repeat every $\lambda_i$, ratio
# $10000^{2/16} \approx 3.16$.

# %%
bit_periods = 2 ** (np.arange(8) + 1)
small_lengths = posenc.wavelengths(16)
print("bit periods: ", bit_periods)
print("wave periods:", small_lengths.round(1))
assert round(small_lengths[1] / small_lengths[0], 2) == 3.16  # 10000^(2/16)

# %% [markdown]
# Fast columns tell neighbours apart, slow columns tell far-apart positions apart, and
# together they give every position its own row. For example, positions 0 and 44 agree in
# the first pair to 0.02 (44 is within 0.02 of $7 \cdot 2\pi$) and are told apart by the
# slower pairs, as 0 and 2 agree in bit 0 and differ in bit 1.

# %%
first_pair = np.linalg.norm(small[44, :2] - small[0, :2])
whole_row = np.linalg.norm(small[44] - small[0])
print(f"44 - 7·2π = {44 - 7 * 2 * np.pi:.4f}; rows 0 and 44: {first_pair:.4f} apart in the first pair, "
      f"{whole_row:.4f} in the whole row")
assert round(first_pair, 2) == 0.02

# %% [markdown]
# **What is not.**
#
# - The counter wraps: after 256 steps position 256 reads exactly like position 0. The
#   waves never bring a row back exactly: the first pair turns one radian per position, so
#   row $p$ equals row 0 only if $p$ is a whole multiple of $2\pi$, and no whole number
#   $p > 0$ is one, since $\pi$ is irrational. (How close rows can come is section 3.)
# - A step of one is not always the same size in binary: 127 → 128 flips all eight bits,
#   128 → 129 flips one. Between sinusoidal rows, one step is the same distance everywhere
#   (to float64 round-off), and so is every step of $k$ (section 5 says why).
# - Binary rows have different lengths (the count of ones); every sinusoidal row has the
#   same length (section 3).
# - Bits are 0 or 1 and exist for whole positions only; the waves are smooth, lie in
#   $[-1, 1]$, and are defined between positions too.

# %%
flips = np.sum(bits[1:] != bits[:-1], axis=1)  # bits changed by n -> n + 1
steps = np.linalg.norm(small[1:] - small[:-1], axis=1)  # distance PE(p) -> PE(p + 1)
print(f"bits flipped by 127 -> 128: {flips[127]}, by 128 -> 129: {flips[128]}")
print(f"distance of one sinusoidal step: {steps.min():.9f} to {steps.max():.9f}")
assert np.ptp(steps) < 1e-12  # the same everywhere, to float64 round-off

# %% [markdown]
# ## 3. Every row has the same length, and no two rows are equal
#
# Each pair contributes $\sin^2 + \cos^2 = 1$ to the squared length of a row, so for an even
# $d$ every row has norm exactly $\sqrt{d/2}$, at every position, in every layout. Here
# 100 000 positions of the $d = 64$ table, all of norm $\sqrt{32}$:

# %%
long = table(100_000, d_model)
norms = np.linalg.norm(long, axis=1)
print(f"norms from {norms.min():.10f} to {norms.max():.10f}; sqrt(32) = {np.sqrt(32):.10f}")
np.testing.assert_allclose(norms, np.sqrt(d_model / 2), rtol=1e-13)

# %% [markdown]
# With an odd $d$ the last sine has no cosine partner and the squared norm is
# $(d-1)/2 + \sin^2(p\,w_{\text{last}})$: it moves between $(d-1)/2$ and $(d+1)/2$. For
# $d = 7$ over 25 000 positions (about 1.5 turns of the lone sine), from 3 to 4:

# %%
odd = table(25_000, 7)
squared = np.sum(odd**2, axis=1)
last_rate = 2 * np.pi / posenc.wavelengths(7)[-1]
print(f"d_model=7: squared norms from {squared.min():.6f} to {squared.max():.6f}")
np.testing.assert_allclose(squared, 3 + np.sin(np.arange(25_000) * last_rate) ** 2, atol=1e-12)

# %% [markdown]
# Rows are distinct. For 2000 positions we can compare every row with every other one.
# The closest pair is as close as *neighbouring* positions, $|p - q| = 1$:

# %%
block = long[:2000]
squared_norms = np.sum(block**2, axis=1)
distances = np.sqrt(np.maximum(squared_norms[:, None] + squared_norms[None, :] - 2 * block @ block.T, 0))
np.fill_diagonal(distances, np.inf)
p, q = np.unravel_index(np.argmin(distances), distances.shape)
print(f"closest pair among 2000 positions: {distances.min():.4f} apart, offset |p - q| = {abs(p - q)}")  # every neighbouring pair ties
assert abs(p - q) == 1

# %% [markdown]
# For longer ranges we use a fact shown in section 5: the distance between rows $p$ and
# $p + k$ depends on $k$ only, $\lVert PE(p+k) - PE(p) \rVert^2 = 2\sum_i (1 - \cos k w_i)$.
# We check that formula on the 2000 rows above:

# %%
def distance_by_offset(k, d_model, base=10000.0):
    return np.sqrt(np.maximum(2 * (d_model / 2 - dot_by_offset(k, d_model, base)), 0))


offsets = np.abs(np.subtract.outer(np.arange(2000), np.arange(2000)))
np.testing.assert_allclose(distances[offsets > 0], distance_by_offset(offsets[offsets > 0], d_model), atol=1e-9)

# %% [markdown]
# then use it for offsets up to 100 000: no other position comes within the distance of a
# neighbour.

# %%
far = distance_by_offset(np.arange(1, 100_000), d_model)
print(f"offsets 1..99999: distance to the neighbour {far[0]:.4f}; smallest beyond k = 1: {far[1:].min():.4f}")
assert far[1:].min() > far[0]

# %% [markdown]
# ## 4. Shifting a position is a rotation
#
# Angle addition turns $PE(p)$ into $PE(p + k)$ pair by pair, with coefficients that
# depend on $k$ but not on $p$:
#
# $$
# \begin{pmatrix}\sin (p+k)w_i \\ \cos (p+k)w_i\end{pmatrix}
# = \begin{pmatrix}\cos k w_i & \sin k w_i \\ -\sin k w_i & \cos k w_i\end{pmatrix}
#   \begin{pmatrix}\sin p w_i \\ \cos p w_i\end{pmatrix}.
# $$
#
# `posenc.shift_matrix(k, d_model)` puts these $2 \times 2$ rotations on the diagonal: the
# matrix $M_k$ with $PE(p+k) = M_k\,PE(p)$ for column vectors, so a table of rows shifts
# as `table @ M.T`. Here is $M_5$ for $d = 16$: block diagonal; block $i$ turns by the
# angle $5 w_i$, smaller and smaller down the diagonal, so the last blocks are nearly the
# identity (the last turns by $5 \cdot 10000^{-14/16} \approx 0.0016$ radians).

# %%
m5 = posenc.shift_matrix(5, 16)
posenc.plot.heatmap(m5, xlabel="column of PE(p)", ylabel="row: column of PE(p + 5)", clabel="entry",
                    title="posenc.shift_matrix(5, 16)")
plt.show()
print(m5[:4, :4].round(4))
print(f"angle of the last block: {np.arctan2(m5[-2, -1], m5[-1, -1]):.4f} radians")
np.testing.assert_allclose(m5[:2, :2], [[np.cos(5), np.sin(5)], [-np.sin(5), np.cos(5)]], rtol=1e-15)

# %% [markdown]
# The identity holds for whole, negative and fractional offsets, at small and large
# positions, in every layout (the other layouts permute rows and columns of $M_k$ the same
# way they permute the table's columns). The largest error over all of them stays below
# $10^{-10}$: at position 123 456 the angles are near $10^5$ radians, and float64 rounds
# an angle that size to about $10^{-11}$.

# %%
starts = np.array([0.0, 1.0, 17.0, 250.5, 9999.0, 123456.0])
shifts = (1, 5, 37.5, -12, 1000)
errors = {}
for layout in posenc.LAYOUTS:
    before = posenc.encode(starts, d_model, layout=layout, dtype=np.float64)
    errors[layout] = max(
        np.abs(before @ posenc.shift_matrix(k, d_model, layout=layout).T
               - posenc.encode(starts + k, d_model, layout=layout, dtype=np.float64)).max()
        for k in shifts
    )
print({layout: bool(error < 1e-10) for layout, error in errors.items()})
assert max(errors.values()) < 1e-10

# %% [markdown]
# Shifts compose like rotations: $M_j M_k = M_{j+k}$, $M_{-k} = M_k^\top$, and every $M_k$
# is orthogonal, which is another way of saying every row has the same length.

# %%
m3, m7 = posenc.shift_matrix(3, d_model), posenc.shift_matrix(7, d_model)
gaps = {
    "M3 M7 = M10": np.abs(m3 @ m7 - posenc.shift_matrix(10, d_model)).max(),
    "M(-7) = M7ᵀ": np.abs(posenc.shift_matrix(-7, d_model) - m7.T).max(),
    "M7 M7ᵀ = I": np.abs(m7 @ m7.T - np.eye(d_model)).max(),
}
print({claim: bool(gap < 1e-14) for claim, gap in gaps.items()})
assert max(gaps.values()) < 1e-14  # float64 round-off of 2 x 2 products

# %% [markdown]
# **This is why both sines and cosines.** With sines alone, $\sin(p + k)w$ needs
# $\cos p w$, which the row would not hold. An odd width has exactly that problem in its
# last column, and `shift_matrix` refuses it:

# %%
try:
    posenc.shift_matrix(5, 7)
except ValueError as error:
    print("ValueError:", error)

# %% [markdown]
# No matrix at all does the job there. The lone sine of $d = 7$ has wavelength
# $2\pi \cdot 10000^{6/7} \approx 16\,856$ positions; we fit the best least-squares linear
# map from $PE(p)$ to $PE(p+5)$ over 25 000 positions, about 1.5 of its turns. It gets the
# six paired columns right to float64 round-off (below $10^{-9}$) and misses the lone last
# sine by 0.0019.

# %%
lone = posenc.wavelengths(7)[-1]
print(f"wavelength of the lone sine: {lone:.0f}, {25_000 / lone:.1f} turns in 25 000 positions")
grid_positions = np.arange(0, 25_000, 7.0)
now, later = posenc.encode(grid_positions, 7, dtype=np.float64), posenc.encode(grid_positions + 5, 7, dtype=np.float64)
fit, *_ = np.linalg.lstsq(now, later, rcond=None)
residual = np.abs(now @ fit - later).max(axis=0)
print("largest misfit per column:", residual.round(4))
assert residual[:6].max() < 1e-9 and round(residual[6], 4) == 0.0019

# %% [markdown]
# ## 5. The dot product of two positions depends only on their offset
#
# Multiply the rotation out: $PE(p) \cdot PE(p+k) = \sum_i \cos(k\,w_i)$. No $p$ in it, so
# the similarity of two positions is a function of their offset alone. It is symmetric,
# $f(-k) = f(k)$, because cosine is even; it is largest, $d/2$, at $k = 0$. The matrix of
# all dot products has constant bands parallel to its diagonal:

# %%
rows = table(200, d_model)
posenc.plot.similarity(rows, title="PE(p) · PE(q), d_model = 64")
plt.show()

gram = rows @ rows.T
k_of = np.abs(np.subtract.outer(np.arange(200), np.arange(200)))
np.testing.assert_allclose(gram, dot_by_offset(k_of, d_model), atol=1e-12)  # depends on |q - p| only

# %% [markdown]
# Against the offset, measured from three different positions the curves coincide. The
# dot product falls as $|k|$ grows, but not monotonically: the fast pairs add ripples.

# %%
posenc.plot.dot_by_offset(rows, positions=(0, 60, 120), title="d_model = 64")
plt.show()

# %%
f = dot_by_offset(np.arange(0, 65_536), d_model)
rises = np.flatnonzero(np.diff(f[:200]) > 0)
print(f"first offsets where f rises again: {rises[:3]}; {rises.size} rises below k = 200")
assert rises.size > 0

# %% [markdown]
# Averaged over each octave of offsets, $2^m \le k < 2^{m+1}$, it does fall, octave after
# octave up to $k = 1024$, and even the peaks of the ripples fall up to $k = 4096$; further
# out the slowest pairs turn back and the peaks rise again (section 6).

# %%
octaves = [f[2**m : 2 ** (m + 1)] for m in range(1, 16)]
means = np.array([o.mean() for o in octaves])
peaks = np.array([o.max() for o in octaves])
print("mean over k in [2^m, 2^(m+1)), m = 1..15:", means.round(1))
print("peak over k in [2^m, 2^(m+1)), m = 1..15:", peaks.round(1))
assert np.all(np.diff(means[:9]) < 0)  # falls octave after octave up to k = 1024

# %% [markdown]
# ## 6. What goes wrong
#
# **A too-small base.** The longest wavelength is below $2\pi \cdot \text{base}$. With
# base 10 and $d = 64$ it is 58 positions, so in a sequence of a few hundred tokens every
# pair has turned many times, and no pair changes slowly enough to say "far" or "farther".
# The dot product, divided by its value at 0, falls from 1 to about 0 within 5 positions
# ($-0.01$ at $k = 5$) and then only wobbles around 0 (never beyond $\pm 0.33$ up to
# $k = 1023$; its mean over each octave of $k$ rounds to $\pm 0.00$ from $k = 64$ on). The
# position 300 away looks more similar (0.07) than the one 10 away ($-0.19$). With base
# 10000 the octave means fall steadily over the same range.

# %%
k = np.arange(1024)
fig, ax = plt.subplots(figsize=(9, 3.5), layout="constrained")
for base in (10, 100, 10000):
    ax.plot(k[1:], dot_by_offset(k, d_model, base)[1:] / (d_model / 2), lw=1, label=f"base {base:g}")
ax.set_xscale("log")
ax.set_xlabel("offset k")
ax.set_ylabel("PE(p)·PE(p+k) / PE(p)·PE(p)")
ax.legend()
plt.show()

# %%
small_base = dot_by_offset(k, d_model, 10) / (d_model / 2)
paper_base = dot_by_offset(k, d_model) / (d_model / 2)
small_means = np.array([small_base[2**m : 2 ** (m + 1)].mean() for m in range(1, 10)])
paper_means = np.array([paper_base[2**m : 2 ** (m + 1)].mean() for m in range(1, 10)])
print(f"base 10: longest wavelength {posenc.wavelengths(d_model, 10)[-1]:.0f}; at k = 5: {small_base[5]:.2f}; "
      f"largest |value| from k = 5 on: {np.abs(small_base[5:]).max():.2f}; k = 10: {small_base[10]:.2f}, "
      f"k = 300: {small_base[300]:.2f}")
print("mean per octave, base 10:   ", small_means.round(2))
print("mean per octave, base 10000:", paper_means.round(2))
assert round(small_base[300], 2) == 0.07 and round(small_base[10], 2) == -0.19

# %% [markdown]
# **Positions past the longest wavelength.** The slowest pair is a clock hand that turns
# once per longest wavelength. Its angle alone reads the position exactly up to that
# wavelength, and then it wraps around: $p$ and $p + \lambda_{\max}$ look the same in the
# slowest pair, and the same is true of every pair at its own wavelength. Beyond the
# longest wavelength, only the combination of pairs still tells positions apart, and with
# few pairs that combination can come arbitrarily close to repeating: two far-apart
# positions then look almost alike. We call that *aliasing*. Take $d = 8$ with base 100:
# $\lambda_{\max} \approx 199$.

# %%
d_few, base_few = 8, 100.0
longest = posenc.wavelengths(d_few, base_few)[-1]
ps = np.arange(0, 600.0)
slow = posenc.encode(ps, d_few, base=base_few, dtype=np.float64)[:, -2:]  # (sin, cos) of the slowest pair
readout = np.mod(np.arctan2(slow[:, 0], slow[:, 1]), 2 * np.pi) / (2 * np.pi) * longest
print(f"longest wavelength: {longest:.2f}; the slowest pair reads 150 as {readout[150]:.2f}, "
      f"350 as {readout[350]:.2f}, 550 as {readout[550]:.2f}")
np.testing.assert_allclose(readout, np.mod(ps, longest), atol=1e-9)  # position modulo the wavelength

# %% [markdown]
# Distance from position $p$ to $p + k$, against $k$: inside the longest wavelength (left of
# the dashed line) every other position is farther away than the neighbour $p + 1$ (grey
# line); past it, some positions come closer than the neighbour, and far out, at
# $k = 792\,184$, one is almost identical to $p$ (0.022 away, against 1.015 for the
# neighbour): aliasing.

# %%
few = distance_by_offset(np.arange(1_000_000), d_few, base_few)
fig, ax = plt.subplots(figsize=(9, 3.5), layout="constrained")
ax.plot(np.arange(1, 2000), few[1:2000], lw=0.8)
ax.axvline(longest, color="k", ls="--", lw=1, label="longest wavelength")
ax.axhline(few[1], color="grey", lw=1, label="distance to p + 1")
ax.set_xlabel("offset k")
ax.set_ylabel("|PE(p + k) - PE(p)|")
ax.set_title("d_model = 8, base = 100")
ax.legend(loc="lower right")
plt.show()

inside = few[2 : int(longest) + 1]
closer = np.flatnonzero(few[2:] < few[1]) + 2
print(f"neighbour: {few[1]:.3f}; nearest inside the longest wavelength: {inside.min():.3f}")
print(f"nearest of all below 10^6: {few[1:].min():.3f}, at k = {few[1:].argmin() + 1}")
assert inside.min() > few[1] and closer[0] > longest

# %% [markdown]
# The base 10000 and $d = 64$ keep this far away: their longest wavelength is 47 117
# positions, and section 3 found no offset below 100 000 closer than the neighbour.
# (Whole positions are also close enough together to follow every single column: the
# fastest turns 1 radian per position, less than half a turn, whatever the base, so from
# one position to the next no column can skip a turn unseen.)

# %%
print(f"longest wavelength, d_model = 64, base 10000: {posenc.wavelengths(d_model)[-1]:.0f}")
assert round(posenc.wavelengths(d_model)[-1]) == 47117

# %% [markdown]
# ## 7. How d_model and base change the picture
#
# Small multiples: the first 100 positions of the table, for three widths across and
# three bases down. A larger base stretches every wavelength but the first (the left
# edge is always $\sin p$, $\cos p$), so more of the table stays nearly constant; a larger
# width fills the same range of wavelengths more densely.

# %%
widths, bases = [16, 64, 256], [100.0, 10000.0, 1e6]
posenc.plot.grid(100, widths, bases)
plt.show()

# %% [markdown]
# "Nearly constant", measured: the share of columns that change by less than 0.1 over the
# 100 positions grows with the base, at every width.

# %%
still = np.array([[np.mean(np.ptp(table(100, d, b), axis=0) < 0.1) for d in widths] for b in bases])
print("share of columns that change by less than 0.1 over the 100 positions")
print("(rows: base 100, 1e4, 1e6; columns: d 16, 64, 256):")
print(still.round(2))
assert np.all(np.diff(still, axis=0) > 0)  # a larger base: more of the table nearly constant

# %% [markdown]
# The same grid for the dot product against the offset, scaled so that it starts at 1.
# Its width grows with the base: we measure it as the first offset where it falls below
# one half. For the two larger bases it grows with the width too.

# %%
posenc.plot.grid(501, widths, bases, kind="offset")
plt.show()

half_widths = np.array(
    [[np.argmax(dot_by_offset(np.arange(2000), d, b) < d / 4) for d in widths] for b in bases]
)
print("first k with PE(0)·PE(k) < PE(0)·PE(0) / 2 (rows: base 100, 1e4, 1e6; columns: d 16, 64, 256)")
print(half_widths)
assert np.all(np.diff(half_widths, axis=0) > 0)  # wider with a larger base, at every width

# %% [markdown]
# `posenc.plot.grid` takes any widths and bases; one panel for a width and base not shown
# above is one call, here $d = 32$ with base 500, the longest wavelength of which is
# $2\pi \cdot 500^{30/32} \approx 2130$ positions:

# %%
fig = posenc.plot.grid(100, [32], [500.0])
plt.show()
assert round(posenc.wavelengths(32, 500.0)[-1]) == 2130

# %% [markdown]
# ## Summary
#
# - **Geometric wavelengths.** Pair $i$ repeats every $\lambda_i = 2\pi \cdot
#   \text{base}^{2i/d}$ positions; each wavelength is $\text{base}^{2/d}$ times the one
#   before, from $2\pi$ to one ratio short of $2\pi \cdot \text{base}$.
# - **A binary counter, nearly.** Both run from fast columns to slow ones; bits repeat
#   exactly and their steps differ in size, waves never repeat and every step of $k$ has
#   the same size.
# - **Equal lengths.** $\lVert PE(p) \rVert = \sqrt{d/2}$ for even $d$; for odd $d$ the
#   squared norm is $(d-1)/2 + \sin^2(p\,w_{\text{last}})$.
# - **Distinct rows.** No two of 100 000 positions coincide at $d = 64$; the nearest row
#   is always the neighbour.
# - **Relative position is a rotation.** $PE(p+k) = M_k\,PE(p)$ with $M_k$ block-diagonal
#   rotations by $k w_i$, in every layout; no linear map exists for the lone sine of an
#   odd width, which is why the table needs cosines as well as sines.
# - **Similarity depends on the offset only.** $PE(p)\cdot PE(p+k) = \sum_i \cos k w_i$:
#   symmetric, largest at 0, falling with ripples.
# - **Failure modes.** A small base flattens the similarity into noise; past the longest
#   wavelength, far-apart positions can come closer than neighbours (aliasing).
# - **The two knobs.** A larger base widens the similarity and stills more columns; a
#   larger width fills the range of wavelengths more densely.
#
# The property tests in `tests/test_intuition.py` check the same facts for random widths
# (odd ones too), bases, layouts and positions up to a million.

# %% [markdown]
# ## Exercises
#
# Each exercise gives you a draft and a check that says what is wrong with it. The drafts
# stored here each hold one typical mistake; fix it and run the check again until it says
# "Correct!". When stuck, `nb04.<exercise>.hint()` gives a nudge and
# `nb04.<exercise>.solution()` prints the reference code.
#
# ### Exercise 1 · Predict a wavelength
#
# Before you write code, predict: for $d = 16$ and base 10000, how many positions does
# pair 3 (columns 6 and 7) take for one full turn? Then complete `wavelength(i, d_model,
# base)`; the check tries several pairs, widths and bases.

# %%
from posenc.exercises import nb04


def wavelength(i, d_model, base):
    return 2 * np.pi * base ** (i / d_model)


nb04.wavelength.check(wavelength)

# %% [markdown]
# ### Exercise 2 · The rotation that shifts a pair
#
# Build the $2 \times 2$ matrix that takes pair $i$ of $PE(p)$, the vector
# $(\sin p w_i, \cos p w_i)$, to the same pair of $PE(p + k)$, for base 10000. The draft
# below uses the rotation matrix from a textbook. (`posenc.shift_matrix` has the answer on
# its diagonal; work it out from angle addition instead.)

# %%
def rotation(k, i, d_model):
    angle = k * 10000.0 ** (-2 * i / d_model)
    return np.array([[np.cos(angle), -np.sin(angle)],
                     [np.sin(angle), np.cos(angle)]])


nb04.rotation.check(rotation)

# %% [markdown]
# ### Exercise 3 · Where a too-small base starts to alias
#
# Section 6 found, for $d = 8$ and base 100, offsets $k$ where $PE(p + k)$ is closer to
# $PE(p)$ than the neighbour $PE(p + 1)$ is. Write `first_alias(d_model, base)`: the
# smallest such $k \ge 2$ (search $k$ below $10^6$ with `distance_by_offset` from section
# 3). Is it before or after the longest wavelength? The check tries a few widths and small
# bases.

# %%
def first_alias(d_model, base):
    far = distance_by_offset(np.arange(1_000_000), d_model, base)  # far[k]: from PE(p) to PE(p + k)
    return np.argmax(far[2:] < far[1])


nb04.first_alias.check(first_alias)

# %% [markdown]
# ## Cross-checks
#
# The batch of checks behind the sentences above, in one place (each comment names the
# claim; tolerances of $10^{-12}$ and below are float64 round-off).

# %%
# Cross-checks of section 1: the progression starts at 2π and stops one ratio short of 10000·2π; 10000^(1/d) is not its ratio.
np.testing.assert_allclose(lengths[0], 2 * np.pi, rtol=1e-15)
np.testing.assert_allclose(lengths[-1], 10000 * 2 * np.pi / ratio, rtol=1e-13)
assert lengths.shape == (d_model // 2,) and np.all(np.diff(lengths) > 0)
assert not np.isclose(lengths[1] / lengths[0], 10000 ** (1 / d_model))
assert list(shares.values()) == sorted(shares.values()) and round(shares[512], 4) == 0.9647

# %%
# Cross-checks of section 2: bits repeat every 2^(j+1) and no sooner; the wave periods have one ratio; every row is its own.
for j, period in enumerate(bit_periods):
    assert np.array_equal(bits[period:, j], bits[:-period, j])
    assert not np.array_equal(bits[period // 2 :, j], bits[: -(period // 2), j])
np.testing.assert_allclose(small_lengths[1:] / small_lengths[:-1], 10000 ** (2 / 16), rtol=1e-13)
assert len({tuple(row) for row in bits}) == 256 and len({tuple(row) for row in small.round(6)}) == 256
pair_steps = np.hypot(small[1:, 0::2] - small[:-1, 0::2], small[1:, 1::2] - small[:-1, 1::2])
assert np.all(np.diff(pair_steps[0]) < 0)  # one step moves the fast pairs most
assert bits[:, 0].tolist() == [0, 1] * 128 and np.sum(bits[1:, 7] != bits[:-1, 7]) == 1
assert round(abs(44 - 7 * 2 * np.pi), 2) == 0.02 and whole_row > 1  # told apart by the slower pairs
assert bits[0, 0] == bits[2, 0] and bits[0, 1] != bits[2, 1]
assert np.array_equal((256 >> np.arange(8)) & 1, bits[0])  # the counter wraps
assert flips.min() == 1 and flips.max() == 8 and flips[127] == 8 and flips[128] == 1
ones = bits.sum(axis=1)
assert ones.min() == 0 and ones.max() == 8  # binary rows have different lengths
np.testing.assert_allclose(np.linalg.norm(small, axis=1), np.sqrt(8), rtol=1e-14)
between = posenc.encode(np.linspace(0, 3, 31), 16, dtype=np.float64)  # fractional positions
assert np.all(np.abs(between) <= 1)  # defined between positions, within [-1, 1]

# %%
# Cross-checks of sections 3 and 4
# 3. Norms in every layout; the odd width moves between (d-1)/2 and (d+1)/2; distinct rows.
for layout in posenc.LAYOUTS:
    np.testing.assert_allclose(np.linalg.norm(table(1000, 10, layout=layout), axis=1), np.sqrt(5), rtol=1e-14)
assert 3 <= squared.min() and squared.max() <= 4 and round(squared.min(), 6) == 3 and round(squared.max(), 6) == 4
assert round(25_000 / posenc.wavelengths(7)[-1], 1) == 1.5
np.testing.assert_allclose(distances.min(), np.linalg.norm(long[1] - long[0]), rtol=1e-9)
assert far.argmin() == 0

# 4. M_5: the last block turns by 5 w_last (so it is within that of the identity); two entries per row.
last_angle = 5 * 10000 ** (-14 / 16)
assert np.abs(m5[-2:, -2:] - np.eye(2)).max() <= last_angle and round(last_angle, 4) == 0.0016
assert np.count_nonzero(m5) == 2 * 16
for layout in posenc.LAYOUTS:  # M from the left; the layouts permute rows and columns of M alike
    perm = posenc.layout_permutation(d_model, "interleaved", layout)
    for shift in shifts:
        m = posenc.shift_matrix(shift, d_model, layout=layout)
        before = posenc.encode(starts, d_model, layout=layout, dtype=np.float64)
        after = posenc.encode(starts + shift, d_model, layout=layout, dtype=np.float64)
        np.testing.assert_allclose((m @ before.T).T, after, atol=1e-10)
        np.testing.assert_allclose(m, posenc.shift_matrix(shift, d_model)[np.ix_(perm, perm)], atol=1e-15)
np.testing.assert_allclose(lone, 2 * np.pi * 10000 ** (6 / 7), rtol=1e-14)
assert round(lone) == 16856 and round(25_000 / lone, 1) == 1.5

# %%
# Cross-checks of sections 5 and 6
# 5. The Gram matrix is symmetric, constant along its diagonals, f(-k) = f(k); f is largest at 0.
np.testing.assert_allclose(gram, gram.T, atol=0)
for shift in (1, 10, 77):
    diagonal = np.diagonal(gram, offset=shift)
    assert np.ptp(diagonal) < 1e-12
    np.testing.assert_allclose(np.diagonal(gram, offset=-shift), diagonal, atol=1e-12)
for p in (0, 60, 120):
    np.testing.assert_allclose(rows @ rows[p], f[np.abs(np.arange(200) - p)], atol=1e-12)
assert f[0] == d_model / 2 and np.all(f[1:] < f[0])
assert np.all(np.diff(peaks[:11]) < 0)  # the ripples' peaks fall up to k = 4096
assert peaks[13] > peaks[11]  # and rise again further out

# 6. A small base: about 0 at k = 5, never beyond ±0.33, octave means ±0.00 from k = 64 on; base 10000 falls.
assert round(posenc.wavelengths(d_model, 10)[-1]) == 58
assert round(small_base[5], 2) == -0.01 and np.abs(small_base[5:]).max() < 0.33
assert np.all(np.abs(small_means[5:]).round(2) == 0)  # from k = 64 on
assert np.all(np.diff(paper_means) < 0)
assert round(longest) == 199
assert round(few[1], 3) == 1.015 and round(few[1:].min(), 3) == 0.022 and few[1:].argmin() + 1 == 792_184
assert all(np.max(2 * np.pi / posenc.wavelengths(d, b)) <= 1 < np.pi for d in (2, 7, 64) for b in (1.5, 10, 1e4))

# %%
# Cross-checks of section 7: every wavelength but the first grows with the base; the longest grows
# with base and width; a wider table has a smaller step between wavelengths; the half widths grow
# with d for the larger bases.
for d in widths:
    grown = np.array([posenc.wavelengths(d, b) for b in bases])
    assert np.all(grown[:, 0] == 2 * np.pi) and np.all(np.diff(grown[:, 1:], axis=0) > 0)
longest_table = np.array([[posenc.wavelengths(d, b)[-1] for d in widths] for b in bases])
ratio_table = np.array([[b ** (2 / d) for d in widths] for b in bases])
assert np.all(np.diff(longest_table, axis=0) > 0) and np.all(np.diff(longest_table, axis=1) > 0)
assert np.all(np.diff(ratio_table, axis=1) < 0)
np.testing.assert_allclose(
    longest_table, 2 * np.pi * np.array(bases)[:, None] ** ((np.array(widths) - 2) / np.array(widths)), rtol=1e-12
)
assert np.all(np.diff(half_widths[1:], axis=1) > 0)
assert len(fig.axes) >= 1
print("all cross-checks hold")
