# %% [markdown]
# # 01 · Positional encoding in NumPy
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/posenc-org/posenc/blob/main/notebooks/01_numpy.ipynb)
#
# A Transformer sees its input as a set, so every position gets a fixed vector of sines and
# cosines added to its embedding. This notebook builds that table with plain NumPy, one
# small step at a time, and checks every step against the `posenc` package. We follow two
# lectures. The first is an English Jupyter notebook in NumPy: it builds the table for 10
# positions and width 6 in float32, prints it at eight decimals, and wraps the steps in a
# class. The second is a set of Chinese notes in NumPy (with a TensorFlow cast at the end):
# it writes sines and cosines straight into alternate columns of a width-16 table and
# prints a grid of `True` from a comparison with tolerance $10^{-3}$. We finish with why
# the wavelengths are spaced the way they are.
#
# **Question:** How is the Transformer's table of sines and cosines built, step by step, and how do you get the lecture's numbers digit for digit?
#
# **You will be able to:**
# - compute the denominators and the angles of the formula with NumPy broadcasting;
# - build the interleaved table two ways (stack and reshape; assign alternate columns) and match the lecture's printout;
# - say why the wavelengths grow by the same factor from one pair to the next;
# - find what is wrong with a table that does not match, with `posenc.diagnose`.
#
# **Prerequisites:** none · **Time:** about 45 minutes

# %%
# On Colab, install posenc from GitHub; elsewhere `make lab` has already installed it.
import sys

if "google.colab" in sys.modules:
    # %pip install --quiet "posenc @ git+https://github.com/posenc-org/posenc@main"

# %%
# %matplotlib inline
import matplotlib.pyplot as plt
import numpy as np

import posenc

# Eight decimals is what the lecture printed; suppress keeps tiny values out of e-notation.
np.set_printoptions(precision=8, suppress=True)

# %% [markdown]
# ## The formula
#
# The formula comes from the Transformer paper, [Attention Is All You Need](https://arxiv.org/abs/1706.03762)
# (section 3.5). Row `pos` of the table encodes one position; its columns come in pairs,
# and pair $i$ holds a sine and a cosine of the same angle:
#
# $$
# PE_{(pos,\,2i)} = \sin\!\left(\frac{pos}{10000^{2i/d_{\text{model}}}}\right),
# \qquad
# PE_{(pos,\,2i+1)} = \cos\!\left(\frac{pos}{10000^{2i/d_{\text{model}}}}\right).
# $$
#
# ## 1. Even columns, odd columns
#
# The NumPy lecture used 10 positions and a model width of 6, small enough to read every number.
# Read the formula per column index $k$ instead of per pair: an even column $k = 2i$ divides
# by $10000^{k/d}$, an odd column $k = 2i + 1$ by $10000^{(k-1)/d}$. We list both kinds of
# index, in float32 as the lecture did, and compute both sets of denominators.

# %%
sequence_length = 10
d_model = 6

even_columns = np.arange(0, d_model, 2, dtype=np.float32)
odd_columns = np.arange(1, d_model, 2, dtype=np.float32)
print(even_columns, odd_columns)

even_denominators = np.power(10000, even_columns / d_model)
odd_denominators = np.power(10000, (odd_columns - 1) / d_model)
print(even_denominators.dtype, even_denominators.shape, odd_denominators.shape)

# %% [markdown]
# The two arrays of denominators are identical, and they have to be: subtracting one from an odd index lands
# on the even index just before it, so a sine and the cosine next to it always share a
# denominator. One vector with one entry per pair is all we need, and it prints the digits
# the lecture printed. (It agrees with `posenc.denominators`, computed in float64, to
# float32 precision: a few parts in $10^7$, since the exponent $2i/d$ is itself rounded to
# float32 first; the closing cross-checks confirm it.)

# %%
assert np.array_equal(even_denominators, odd_denominators), "a sine and its cosine share a denominator"
denominators = even_denominators
print(denominators)

# %% [markdown]
# ## 2. A column of positions
#
# Shaping the positions as a column, `(10, 1)`, lets
# [broadcasting](https://numpy.org/doc/stable/user/basics.broadcasting.html) do the outer division:
# a `(10, 1)` column over a `(3,)` row gives every position divided by every denominator,
# a `(10, 3)` grid of angles. `posenc.angles` forms the same grid in float64; ours went
# through float32 roundings (exponent, denominator, quotient), so they agree to a few parts
# in $10^7$.

# %%
positions = np.arange(sequence_length, dtype=np.float32).reshape(sequence_length, 1)
angles = positions / denominators
print(positions.shape, denominators.shape, "->", angles.shape)
print(angles[:3])

np.testing.assert_allclose(angles, posenc.angles(np.arange(sequence_length), d_model), rtol=3e-7)

# %% [markdown]
# ## 3. The sine table and the cosine table
#
# One float32 detail first, in short. NumPy's float32 `sin` and `cos` are fast
# approximations that may miss the correctly rounded result by up to two units in the last
# place (ulp; one ulp is the gap to the next float32 number, about $6 \times 10^{-8}$ just
# below 1), the margin NumPy's own tests allow, so a printout at eight decimals could differ
# from the lecture's in its last digit. To print the lecture's digits everywhere we take the
# sine of the *same* float32 angles in float64 and round once back to float32. Notebook 06
# tells the whole story of these last digits (and of the error that grows with the position).

# %%
def sin32(x):
    """Sine of a float32 array: the float64 sine, rounded once to float32."""
    return np.sin(x.astype(np.float64)).astype(np.float32)


def cos32(x):
    """Cosine of a float32 array: the float64 cosine, rounded once to float32."""
    return np.cos(x.astype(np.float64)).astype(np.float32)


ulps = np.testing.assert_array_max_ulp(np.sin(angles), sin32(angles), maxulp=2)  # NumPy's own: within 2 ulp

# %% [markdown]
# The sines will fill the even columns, the cosines the odd ones. Down each column the
# angle grows by a fixed step, fast in the first pair and slowly in the last.

# %%
sines = sin32(angles)
cosines = cos32(angles)
print(sines)
print(cosines)

# %% [markdown]
# Both tables are `(10, 3)`, one column per pair, and their digits are the lecture's.
#
# ## 4. Interleave: stack, then reshape
#
# Stacking the two tables on a new last axis gives shape `(10, 3, 2)`: position, pair,
# then sine-or-cosine. Reshaping to `(10, 6)` reads that memory in row-major order, pair by
# pair and sine before cosine, so the columns come out as
# $\sin_0, \cos_0, \sin_1, \cos_1, \sin_2, \cos_2$. No index arithmetic needed.

# %%
stacked = np.stack([sines, cosines], axis=-1)
table = stacked.reshape(sequence_length, d_model)
print(stacked.shape, "->", table.shape)

# %% [markdown]
# Here is the table exactly as the lecture printed it, and ours prints the very same text.
# Comparing the printed text, digit for digit, is the strictest check its eight decimals
# allow. (`posenc.interleave` is exactly the stack-and-reshape we just did; the
# cross-checks at the end confirm it.)

# %%
LECTURE_TABLE = np.array([
    [0.0, 1.0, 0.0, 1.0, 0.0, 1.0],
    [0.84147096, 0.5403023, 0.04639922, 0.998923, 0.00215443, 0.9999977],
    [0.9092974, -0.41614684, 0.09269849, 0.9956942, 0.00430886, 0.9999907],
    [0.14112, -0.9899925, 0.13879807, 0.9903207, 0.00646326, 0.99997914],
    [-0.7568025, -0.6536436, 0.18459871, 0.98281395, 0.00861763, 0.99996287],
    [-0.9589243, 0.2836622, 0.23000169, 0.97319025, 0.01077196, 0.999942],
    [-0.2794155, 0.96017027, 0.27490923, 0.9614702, 0.01292625, 0.99991643],
    [0.6569866, 0.75390226, 0.31922463, 0.9476791, 0.01508047, 0.9998863],
    [0.98935825, -0.14550003, 0.36285236, 0.9318466, 0.01723462, 0.99985147],
    [0.4121185, -0.91113025, 0.4056985, 0.91400695, 0.01938869, 0.999812],
])


def as_printed(array):
    """The text NumPy prints for a float32 array at the lecture's settings."""
    return np.array2string(np.asarray(array, dtype=np.float32), precision=8, suppress_small=True)


print(table)
assert as_printed(table) == as_printed(LECTURE_TABLE), "the lecture's printout, digit for digit"

# %% [markdown]
# Then the package. `posenc` computes its angles in float64 and rounds only the final
# values; our walk rounded its angles to float32 on the way. So the two can differ in the
# last float32 digit, by at most $2^{-24} \approx 6.0 \times 10^{-8}$, which is one float32
# step for values between 0.5 and 1.

# %%
reference = posenc.positional_encoding(sequence_length, d_model)
largest = np.abs(table - reference).max()
print(f"largest absolute difference: {largest:.1e}")
assert largest <= 2.0**-24 == np.spacing(np.float32(0.5))

# %% [markdown]
# ## 5. The same steps as a class
#
# The lecture ends by packaging its steps in a class that stores `sequence_length` and
# `d_model` in `__init__`. But its `forward` never reads them back: it uses the notebook's
# global `d_model` and `sequence_length`. The lecture only ever made the object with those
# same two values, so its printout looked right. Here is the pattern in a few lines; asked
# for 4 positions of width 8, it still returns the global 10 × 6 table.

# %%
class ReadsGlobals:
    """The lecture's pattern: the sizes are stored, then the globals are used."""

    def __init__(self, sequence_length, d_model):
        self.sequence_length = sequence_length
        self.d_model = d_model

    def forward(self):
        pair_starts = np.arange(0, d_model, 2, dtype=np.float32)  # global d_model, not self.d_model
        positions = np.arange(sequence_length, dtype=np.float32)[:, None]  # global length too
        angles = positions / np.power(10000, pair_starts / d_model)
        return np.stack([sin32(angles), cos32(angles)], axis=-1).reshape(sequence_length, -1)


wrong_size = ReadsGlobals(sequence_length=4, d_model=8).forward()
print("asked for (4, 8), got", wrong_size.shape)
assert np.array_equal(wrong_size, table)  # the global 10 x 6 table

# %% [markdown]
# Our class reads only its own attributes. The denominators depend only on the width, so
# they are computed when the object is made, and each call builds a table of the requested
# length. An odd width has one more sine than cosines, so the last cosine column is simply
# dropped, as the formula asks.

# %%
class SinusoidalEncoding:
    """The (length, d_model) sinusoidal table, built with the lecture's float32 steps."""

    def __init__(self, d_model, base=10000.0):
        self.d_model = d_model
        pair_starts = np.arange(0, d_model, 2, dtype=np.float32)  # 2i, one per pair
        self.denominators = np.power(np.float32(base), pair_starts / d_model)

    def __call__(self, length):
        positions = np.arange(length, dtype=np.float32)[:, None]
        angles = positions / self.denominators
        pairs = np.stack([sin32(angles), cos32(angles)], axis=-1)
        return pairs.reshape(length, -1)[:, : self.d_model]


encoding = SinusoidalEncoding(d_model)
assert as_printed(encoding(sequence_length)) == as_printed(LECTURE_TABLE)

# %% [markdown]
# It reproduces the lecture's table (checked above, digit for digit) and agrees with
# `posenc` at other sizes too, odd widths included. A float32 angle carries a relative
# rounding of about $10^{-7}$, so the absolute difference grows with the position; the
# tolerance grows with the length to match.

# %%
for length, n_columns in [(10, 6), (10, 7), (10, 16), (50, 16), (128, 64)]:
    ours = SinusoidalEncoding(n_columns)(length)
    expected = posenc.positional_encoding(length, n_columns)
    np.testing.assert_allclose(ours, expected, rtol=0, atol=2e-7 * length)  # shapes too
    print(f"{length:4d} x {n_columns:2d}: largest difference {np.abs(ours - expected).max():.1e}")

# %% [markdown]
# ## 6. A second route: one rate per column
#
# The Chinese NumPy notes skip the separate sine and cosine tables. They give every column $k$ an
# angle rate $1 / 10000^{2\lfloor k/2 \rfloor / d}$: integer division by two maps both
# columns of a pair to the pair's even index, so rates come in equal twos, and the distinct
# ones are `posenc.frequencies`. We use their example, 10 positions and width 16. Note the
# dtype: an integer array divided by a float32 scalar is promoted to float64, so this route
# computes in double precision whether it meant to or not.

# %%
width = 16
column = np.arange(width)
print(2 * (column // 2))

angle_rates = 1 / np.power(10000, 2 * (column // 2) / np.float32(width))
print(angle_rates)

assert angle_rates.dtype == np.float64, "integers over a float32 scalar: float64"

# %% [markdown]
# Slicing with a step of two writes straight into alternate columns: `[:, 0::2]` are the
# even columns, `[:, 1::2]` the odd ones. The table starts as zeros and is cast to float32
# at the end.
#
# The notes then compared their table with a tolerance of $10^{-3}$ against a second table
# built by the very same code. We compare two genuinely different computations instead: the
# float32 class from section 5 and this float64 route. Rather than a grid of `True`, we
# print the largest difference.

# %%
position_column = np.arange(sequence_length)[:, None]
strided = np.zeros((sequence_length, width))
strided[:, 0::2] = np.sin(position_column * angle_rates[0::2])
strided[:, 1::2] = np.cos(position_column * angle_rates[1::2])
strided = strided.astype(np.float32)
print(strided.shape, strided.dtype)
with np.printoptions(precision=4):
    print(strided[:3, :8])

# %%
tolerance = 1e-3
float32_class = SinusoidalEncoding(width)(sequence_length)
difference = np.abs(float32_class - strided).max()
print(f"largest difference {difference:.1e}, {tolerance / difference:,.0f} times inside the tolerance")
assert difference < tolerance / 8000

# %% [markdown]
# About $1.2 \times 10^{-7}$: a few float32 steps, because the class rounds its angles to
# float32 while this route rounds only its result (notebook 06 traces such last digits to
# their source). That is more than 8,000 times inside the notes' tolerance. The strided
# table also matches `posenc` and its `interleave` (see the cross-checks).
#
# ## 7. Why these wavelengths: a geometric progression
#
# Column pair $i$ is a wave of wavelength $\lambda_i = 2\pi / \omega_i = 2\pi \cdot 10000^{2i/d}$
# positions, sampled at whole positions. Each step to the next pair multiplies the
# wavelength by the same factor, $10000^{2/d}$ (the two columns of a pair share theirs, so per column it is a staircase,
# not a factor of $10000^{1/d}$). The shortest wavelength is $2\pi$, about six positions;
# the longest is $2\pi \cdot 10000^{(d-2)/d}$, one factor $10000^{2/d}$ short of
# $10000 \cdot 2\pi$.

# %%
wavelengths = 2 * np.pi / posenc.frequencies(width)
print(wavelengths.round(2))
ratios = wavelengths[1:] / wavelengths[:-1]
print(ratios.round(6), round(10000 ** (2 / width), 6))

np.testing.assert_allclose(ratios, 10000 ** (2 / width), rtol=1e-12)

# %% [markdown]
# The last wavelength never reaches $10000 \cdot 2\pi$, but it gets closer as the model
# widens, because the missing factor $10000^{-2/d}$ tends to one:

# %%
previous = 0.0
for d in (16, 64, 512, 4096):
    share = (2 * np.pi / posenc.frequencies(d)[-1]) / (10000 * 2 * np.pi)
    assert previous < share < 1
    previous = share
    print(f"d_model={d:5d}  longest wavelength = {share:.4f} x 10000·2π")

# %% [markdown]
# A binary counter is the same idea in discrete form. Bit $k$ of a position flips every
# $2^k$ steps and repeats every $2^{k+1}$: the low bit changes fastest, each higher bit half
# as fast, a ratio of 2 between neighbours. The sinusoidal table swaps the on/off bits for
# smooth waves and the ratio 2 for $10000^{2/d}$. Fast pairs tell neighbouring positions
# apart, slow pairs tell far-apart ones apart.

# %%
counter = np.arange(16)
bits = (counter[:, None] >> np.arange(4)) & 1  # column k is bit k
print(bits.T)
for k in range(4):
    period = 2 ** (k + 1)
    assert np.array_equal(bits[: 16 - period, k], bits[period:, k]), f"bit {k} repeats every {period} steps"

# %% [markdown]
# A 4-bit counter repeats after 16 steps. The table never repeats a row. Positions are
# whole numbers, and the sine and cosine of pair $i$ come back to the same values at
# positions $p$ and $q$ only if $(p - q)\,\omega_i$ is a whole number of turns $2\pi k$,
# that is, only if $\omega_i / 2\pi$ is a fraction. It never is: $\omega_i = 10000^{-2i/d}$, a
# power of 10000 with a rational exponent, is an algebraic number, and $\pi$ is not
# (Lindemann, 1882), so their ratio is never a fraction. So no column repeats
# exactly, and the first pair alone (wavelength $2\pi$) already gives every position a
# row of its own. It can come close: position 710 is $226\pi + 6.0 \times 10^{-5}$, 113
# turns and a little, the nearest the first pair comes back to row 0 in the first 100,000
# positions. (Over continuous positions the waves can line up: at $d = 8$ each wavelength
# is exactly 10 times the one before, so all four repeat together after
# $2\pi \cdot 1000$ positions, and neither that nor any multiple of it is a whole
# number.) At the paper's width of 512 the slowest wave alone spans about 60,600 positions.

# %%
first_pair_turn = np.arange(1, 100_001) % (2 * np.pi)
distance_to_row_0 = np.minimum(first_pair_turn, 2 * np.pi - first_pair_turn)
closest = int(np.argmin(distance_to_row_0)) + 1
print(f"closest return to row 0: position {closest}, {distance_to_row_0.min():.1e} radians away")
print(np.round(posenc.encode([0, closest], 4), 4))

assert closest == 710

# %% [markdown]
# Plotting the sine column of the first four pairs against position shows the same picture:
# each wave is $10000^{2/16} \approx 3.16$ times longer than the one before. `posenc.encode`
# accepts fractional positions, which lets us draw the waves as smooth curves.

# %%
assert round(10000 ** (2 / width), 2) == 3.16
fine_positions = np.linspace(0, 100, 1001)
curves = posenc.encode(fine_positions, width)
fig, ax = plt.subplots(figsize=(10, 3.5))
for pair in range(4):
    ax.plot(fine_positions, curves[:, 2 * pair], label=f"column {2 * pair}, λ ≈ {wavelengths[pair]:.0f}")
ax.set_xlabel("position")
ax.set_ylabel("sine value")
ax.set_title(f"Sine columns of the first four pairs (d_model = {width})")
ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1), fontsize="small")
fig.tight_layout()
plt.show()

# %% [markdown]
# A larger table as a heatmap: 128 positions by 64 columns. On the left, fast stripes; to
# the right the columns change ever more slowly, until the last ones are almost constant
# over these 128 positions: the last sine stays below 0.02, the last cosine above 0.9998.

# %%
big = posenc.positional_encoding(128, 64)
assert np.abs(big[:, -2]).max() < 0.02 and big[:, -1].min() > 0.9998
fig, ax = plt.subplots(figsize=(9, 5))
image = ax.imshow(big, cmap="RdBu", aspect="auto", vmin=-1, vmax=1)
ax.set_xlabel("column (2i: sine, 2i + 1: cosine)")
ax.set_ylabel("position")
ax.set_title("posenc.positional_encoding(128, 64)")
fig.colorbar(image, ax=ax)
plt.show()

# %% [markdown]
# ## 8. Why doesn't my table match? `posenc.diagnose`
#
# When your numbers differ from the lecture's, the mistake is almost always one of a few:
# sine and cosine swapped, the exponent taken per column instead of per pair, another base,
# positions that start at 1. `posenc.diagnose` fits the formula to a table, each of those
# mistakes included, and says in words which ones reproduce it. Below, one draft of the
# lecture's table whose options each put one mistake in (the comment on a line says which
# option changes it), diagnosed four times, once per mistake.

# %%
def draft_table(length, d_model, *, swap=False, per_column=False, base=10000, first=0):
    positions = np.arange(first, first + length)[:, None]  # first=1: np.arange(1, length + 1)
    k = np.arange(d_model)
    exponent = k / d_model if per_column else 2 * (k // 2) / d_model  # per column: k / d
    angles = positions / base ** exponent  # base=1000: 1000 ** exponent
    table = np.zeros((length, d_model))
    sin, cos = (np.cos, np.sin) if swap else (np.sin, np.cos)  # swap: cos into the even columns
    table[:, 0::2] = sin(angles[:, 0::2])
    table[:, 1::2] = cos(angles[:, 1::2])
    return table


# %%
mistakes = {
    "swapped_sin_cos": dict(swap=True),
    "exponent_per_column": dict(per_column=True),
    "wrong_base": dict(base=1000),
    "position_offset": dict(first=1),
}
for code, mistake in mistakes.items():
    found = posenc.diagnose(draft_table(10, 6, **mistake))
    assert found.codes == [code], "each mistake is named, and nothing else"
    print(found, end="\n\n")

# %% [markdown]
# A table that nothing in the catalog explains gets "unknown", never a guess: it says where
# the table departs most from the paper's, by how much beyond the tolerance there, and how
# far even the nearest explanation is. Here the draft's table plus a little noise.

# %%
noisy = draft_table(10, 6) + np.random.default_rng(0).normal(0, 1e-3, (10, 6))
unexplained = posenc.diagnose(noisy)
print(unexplained)
assert unexplained.codes == ["unknown"]

# %% [markdown]
# It reads printed output too, as copied from a notebook: the text the lecture's `print`
# showed (float32, eight decimals) is recognised as the paper's table.

# %%
with np.printoptions(precision=8, suppress=True):
    printed = str(draft_table(10, 6).astype(np.float32))
print(printed[:60], "...")
assert posenc.diagnose(printed).matches_paper

# %% [markdown]
# ## Summary
#
# - A sine and the cosine beside it share one denominator, $10000^{2i/d}$: one per pair,
#   `[1, 21.54435, 464.15897]` at width 6 in float32.
# - A `(length, 1)` column of positions over the `(d/2,)` denominators broadcasts to the
#   `(length, d/2)` angles; sines and cosines of those, stacked on a last axis and reshaped,
#   interleave into the table, which prints the lecture's eight decimals digit for digit.
# - Writing into alternate columns (`table[:, 0::2] = ...`, `table[:, 1::2] = ...`) builds
#   the same table; both routes and `posenc` agree to the last float32 digits (notebook 06
#   says where those come from).
# - A class that stores its sizes must also use them: the lecture's read the globals.
# - The wavelengths $2\pi \cdot 10000^{2i/d}$ grow by the factor $10000^{2/d}$ from pair to
#   pair, from $2\pi$ to just short of $10000 \cdot 2\pi$, like the bits of a counter, and no
#   row ever repeats.
# - `posenc.diagnose(table)` names the usual mistakes: sine and cosine swapped, the exponent
#   per column, another base, positions from 1.
#
# ## Exercises
#
# Each exercise ends with a check that says what is wrong. `nb01.<name>.hint()` gives a
# nudge, and `nb01.<name>.solution()` prints the reference solution when you are stuck.
#
# ### Exercise 1 · The denominators
#
# Write `my_denominators(d_model)`: the denominators of the formula, one per pair of
# columns, in float64. The draft below has one denominator per column; the check runs it
# for an even and an odd width and says what is wrong.

# %%
from posenc.exercises import nb01


def my_denominators(d_model):
    return 10000.0 ** (np.arange(d_model) / d_model)


nb01.denominators.check(my_denominators)

# %% [markdown]
# ### Exercise 2 · The whole table
#
# Complete `my_positional_encoding` so that it returns the paper's `(length, d_model)`
# table; the draft below has one mistake. Two checks answer back: `nb01.table.check` runs
# your function at two sizes, an odd width included, and `posenc.diagnose` says what your
# table is, as in section 8. You are done when the first says "Correct!" and the second
# "This is the paper's table."

# %%
def my_positional_encoding(length, d_model):
    positions = np.arange(length)[:, None]
    k = np.arange(d_model)
    angles = positions / 10000 ** (2 * k / d_model)
    table = np.zeros((length, d_model))
    table[:, 0::2] = np.sin(angles[:, 0::2])
    table[:, 1::2] = np.cos(angles[:, 1::2])
    return table


print(nb01.table.check(my_positional_encoding))
print(posenc.diagnose(my_positional_encoding(10, 6)))

# %% [markdown]
# ## Cross-checks
#
# The claims above, checked together: the denominators and angles against `posenc` (float32
# precision, a few parts in $10^7$); the sine and cosine tables against the exact angles
# (within $10^{-7}$); `posenc.interleave` is the stack-and-reshape; the class at another
# size; the rates of the second route come in equal pairs and are `posenc.frequencies`;
# the strided table against `posenc`; the shortest and longest wavelengths and, at
# $d = 8$, a factor of exactly 10 between neighbours; a bit does not repeat after half its
# period; position 710 is $226\pi + 6.0 \times 10^{-5}$; the slowest wave at width 512
# spans about 60,600 positions; the draft without options is the paper's table; the noisy
# table's nearest explanation is the paper itself.

# %%
# Cross-checks of the claims above.
np.testing.assert_allclose(denominators, posenc.denominators(d_model), rtol=3e-7)
assert str(denominators) == "[  1.       21.54435 464.15897]"
exact_angles = posenc.angles(np.arange(sequence_length), d_model)
np.testing.assert_allclose(sines, np.sin(exact_angles), rtol=0, atol=1e-7)
np.testing.assert_allclose(cosines, np.cos(exact_angles), rtol=0, atol=1e-7)
np.testing.assert_array_max_ulp(np.cos(angles), cosines, maxulp=2)
assert np.array_equal(table, posenc.interleave(sines, cosines))
np.testing.assert_allclose(SinusoidalEncoding(8)(4), posenc.positional_encoding(4, 8), rtol=0, atol=1e-7)
assert np.array_equal(angle_rates[0::2], angle_rates[1::2])
np.testing.assert_allclose(angle_rates[0::2], posenc.frequencies(width), rtol=1e-15)
exact = posenc.angles(np.arange(sequence_length), width)
np.testing.assert_allclose(strided, posenc.positional_encoding(sequence_length, width), rtol=0, atol=1e-7)
np.testing.assert_allclose(strided, posenc.interleave(np.sin(exact), np.cos(exact)), rtol=0, atol=1e-7)
np.testing.assert_allclose(wavelengths[0], 2 * np.pi, rtol=1e-15)
np.testing.assert_allclose(wavelengths[-1], 2 * np.pi * 10000 ** ((width - 2) / width), rtol=1e-12)
wavelengths_8 = 2 * np.pi / posenc.frequencies(8)
np.testing.assert_allclose(wavelengths_8[1:] / wavelengths_8[:-1], 10)
for k in range(4):
    assert not np.array_equal(bits[: 16 - 2**k, k], bits[2**k :, k])
assert abs(710 - 226 * np.pi - 6.0e-5) < 1e-6
assert round(2 * np.pi / posenc.frequencies(512)[-1], -2) == 60_600
assert posenc.diagnose(draft_table(10, 6)).matches_paper
assert unexplained.findings[0].details["nearest"] == []  # the paper
