# %% [markdown]
# # 02 · Positional encoding in PyTorch
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/posenc-org/posenc/blob/main/notebooks/02_pytorch.ipynb)
#
# **Question:** How do you build the Transformer's sinusoidal table out of PyTorch tensors, and how does a model add it to its embeddings?
#
# **You will be able to:**
#
# - build the table step by step with torch operations and reproduce a lecture's printed numbers;
# - write the module a model uses, `x + PE[:seq]` with the table kept as a buffer, and say why
#   models scale their embeddings by $\sqrt{d_{\mathrm{model}}}$ first;
# - use `posenc.torch.PositionalEncoding` in a model, and read what `posenc.diagnose` says about a table.
#
# **Prerequisites:** notebook 01 · **Time:** about 50 minutes
#
# We build the sinusoidal table of the [Transformer](https://arxiv.org/abs/1706.03762) out of
# plain tensor operations, one step at a time. We follow a lecture: an English Jupyter notebook
# in PyTorch that walks the steps at `d_model = 64` for 10 positions, printing each intermediate
# tensor, then packs them into an [`nn.Module`](https://pytorch.org/docs/stable/generated/torch.nn.Module.html)
# (PyTorch's base class for layers and models) whose `forward()` takes no input and prints the
# 10 × 6 table at four decimals. After that we write the module a model actually uses (it adds
# the table to the embeddings), see why models scale their embeddings first, and finally use
# `posenc.torch.PositionalEncoding` the way a model does, on whichever device is available. The
# closing cross-checks hold every intermediate result up against the `posenc` package.

# %%
# On Colab, install posenc from GitHub; elsewhere `make lab` has already installed it.
import sys

if "google.colab" in sys.modules:
    # %pip install --quiet "posenc @ git+https://github.com/posenc-org/posenc@main"

# %% [markdown]
# Tensors stay in torch's default float32, as in the lecture. `posenc` forms its angles in
# float64 and rounds once at the end, so at these small positions the two routes differ
# by a few parts in $10^7$ (measured below): `ATOL` is the tolerance for comparing them.
# Figures are drawn inline whatever matplotlib backend the environment asks for.

# %%
# %matplotlib inline
import matplotlib.pyplot as plt
import numpy as np
import torch
from torch import nn

import posenc
import posenc.torch

np.set_printoptions(precision=4, suppress=True)
ATOL = 1e-6

# %% [markdown]
# ## The formula
#
# Row `pos` of the table encodes position `pos`; its columns come in pairs, a sine and a
# cosine of the same angle:
#
# $$
# PE_{(pos,\,2i)} = \sin\left(\frac{pos}{10000^{2i/d_{\mathrm{model}}}}\right),
# \qquad
# PE_{(pos,\,2i+1)} = \cos\left(\frac{pos}{10000^{2i/d_{\mathrm{model}}}}\right)
# $$
#
# Indexed by column $j$ instead, an even $j$ divides by $10000^{j/d_{\mathrm{model}}}$ and an
# odd $j$ by $10000^{(j-1)/d_{\mathrm{model}}}$. The walk below computes both and finds
# them identical.
#
# ## Step by step, with d_model = 64
#
# Ten positions and 64 columns: big enough to see the shapes, small enough to print a few
# numbers. The even and odd column indices come first, 32 of each.

# %%
d_model, length = 64, 10
even_cols = torch.arange(0, d_model, 2, dtype=torch.float32)
odd_cols = torch.arange(1, d_model, 2, dtype=torch.float32)
print(tuple(even_cols.shape), even_cols[:4].numpy(), "...")
print(tuple(odd_cols.shape), odd_cols[:4].numpy(), "...")

# %% [markdown]
# One denominator for each index of each set (a Python number raised to a
# float32 tensor stays float32). The even and odd denominators come out identical, bit for bit:
# subtracting one from an odd index lands on the even index before it.

# %%
den_even = 10000 ** (even_cols / d_model)
den_odd = 10000 ** ((odd_cols - 1) / d_model)
print(den_even.dtype, tuple(den_even.shape), den_even[:6].numpy().round(4))
assert torch.equal(den_even, den_odd), "an odd column shares the denominator of the even column before it"

# %% [markdown]
# The first six, next to what the lecture printed: they agree to its five significant
# figures, that is within half a unit of its last printed digit ($5 \times 10^{-5}$).

# %%
LECTURE_DEN_HEAD = np.array([1.0, 1.3335, 1.7783, 2.3714, 3.1623, 4.2170])
np.testing.assert_allclose(den_even[:6].numpy(), LECTURE_DEN_HEAD, rtol=0, atol=5e-5)

# %% [markdown]
# So one vector of 32 serves both the sines and the cosines. (The lecture stored its
# odd-index result under the even name by mistake; since the two are equal, nothing
# downstream changed.)
#
# Positions form a column, `(length, 1)`, so that dividing by the `(32,)` denominators
# broadcasts into a `(length, 32)` grid of angles: one row per position, one column per
# sine/cosine pair ([broadcasting](https://pytorch.org/docs/stable/notes/broadcasting.html)
# stretches each size-1 axis to match the other). Row 1 of the sines is checked against the
# lecture's printout (five significant figures).

# %%
den = den_even
pos = torch.arange(length, dtype=torch.float32).reshape(length, 1)
angle = pos / den
sin_part, cos_part = torch.sin(angle), torch.cos(angle)
print("positions", tuple(pos.shape), "/ denominators", tuple(den.shape), "-> angles", tuple(angle.shape))
print("sines", tuple(sin_part.shape), " cosines", tuple(cos_part.shape))
print("row 1, first six sines:", sin_part[1, :6].numpy().round(4))

LECTURE_SIN_ROW1_HEAD = np.array([0.84147, 0.68156, 0.53317, 0.40931, 0.31098, 0.23492])
np.testing.assert_allclose(sin_part[1, :6].numpy(), LECTURE_SIN_ROW1_HEAD, rtol=0, atol=5e-6)

# %% [markdown]
# ### Interleaving
#
# The paper puts each cosine right after its sine. Stacking the two grids along a new last
# axis makes `(length, 32, 2)`, where the last axis holds one (sin, cos) pair; merging the
# last two axes then lays the pairs out side by side in 64 columns: the sines land in the
# even columns, the cosines in the odd ones. `posenc.interleave` performs exactly this step,
# and `posenc.torch.positional_encoding` builds the whole table in one call, within `ATOL`.

# %%
pairs = torch.stack([sin_part, cos_part], dim=2)
pe64 = torch.flatten(pairs, start_dim=1, end_dim=2)
print(tuple(pairs.shape), "->", tuple(pe64.shape))
print("row 1, first six columns:", pe64[1, :6].numpy().round(4))
print(f"largest difference from posenc: {(pe64 - posenc.torch.positional_encoding(length, d_model)).abs().max():.1e}")

assert torch.equal(pe64[:, 0::2], sin_part) and torch.equal(pe64[:, 1::2], cos_part), "sines even, cosines odd"

# %% [markdown]
# Concatenating instead of stacking would put all 32 sines first and all cosines after:
# the same columns in another order, a layout some libraries use. `posenc` calls it
# `"sin_cos"`. Sorting each row shows the same 64 numbers in both tables.

# %%
concatenated = torch.cat([sin_part, cos_part], dim=1)
print(tuple(concatenated.shape), "same table:", torch.equal(concatenated, pe64))
assert torch.equal(concatenated.sort(dim=1).values, pe64.sort(dim=1).values), "the same entries in every row"

# %% [markdown]
# Ten rows are a thin picture, so here is the same 64-wide table for 100 positions. The
# left columns oscillate fast down the positions; further right the wavelengths grow
# geometrically, until the last sine stays below 0.02 and the last cosine above 0.9999.

# %%
big = posenc.torch.positional_encoding(100, d_model)
print(f"last sine at most {big[:, -2].abs().max():.4f}, last cosine at least {big[:, -1].min():.5f}")
fig, ax = plt.subplots(figsize=(9, 4))
image = ax.imshow(big.numpy(), cmap="RdBu", vmin=-1, vmax=1, aspect="auto")
ax.set_xlabel("column")
ax.set_ylabel("position")
ax.set_title("Sinusoidal positional encoding, d_model = 64")
fig.colorbar(image, ax=ax)
plt.show()

# %% [markdown]
# ## Our own module
#
# The same steps fit in one `forward()`. Like the lecture's class, this module has no
# input: it returns the `(max_sequence_length, d_model)` table.
#
# The lecture's class assumes an even `d_model`. With an odd one, `arange(0, d_model, 2)`
# still starts a pair at the last column, and every pair brings a sine *and* a cosine:
# `d_model = 7` gives 4 pairs, 8 columns. The formula wants 7: its last column, $2i = 6$, is a
# sine, and the cosine that would follow it does not exist. Our module drops that extra
# cosine with one slice.

# %%
pair_starts = torch.arange(0, 7, 2)  # the lecture's pairs at d_model = 7
print(len(pair_starts), "pairs,", 2 * len(pair_starts), "columns")

# %% [markdown]
# The module:

# %%
class SinusoidalTable(nn.Module):
    """forward() -> (max_sequence_length, d_model) table, computed in float32 like the lecture."""

    def __init__(self, d_model, max_sequence_length):
        super().__init__()
        self.d_model = d_model
        self.max_sequence_length = max_sequence_length

    def forward(self):
        den = 10000 ** (torch.arange(0, self.d_model, 2, dtype=torch.float32) / self.d_model)
        pos = torch.arange(self.max_sequence_length, dtype=torch.float32)[:, None]
        angle = pos / den
        # (length, pairs, 2) -> (length, 2 * pairs): each cosine lands right after its sine
        table = torch.stack([angle.sin(), angle.cos()], dim=-1).flatten(start_dim=-2)
        return table[:, : self.d_model]  # an odd d_model: drop the last pair's cosine


assert torch.equal(SinusoidalTable(64, 10)(), pe64), "the d_model = 64 walk, bit for bit"

# %% [markdown]
# It reproduces the `d_model = 64` walk above exactly. At `d_model = 7` it gives seven
# columns, the ones `posenc` gives:

# %%
table7 = SinusoidalTable(7, 10)()
print(tuple(table7.shape), f"largest difference from posenc: {(table7 - posenc.torch.positional_encoding(10, 7)).abs().max():.1e}")

# %% [markdown]
# The table the lecture printed used `d_model=6` and ten positions:

# %%
table6 = SinusoidalTable(d_model=6, max_sequence_length=10)()
print(tuple(table6.shape))
print(table6.numpy().round(4))

# %% [markdown]
# Here are the lecture's printed numbers. Our float32 values agree with them to within half
# a unit of the fourth decimal.

# %%
LECTURE_TABLE_10x6 = np.array([
    [0.0000, 1.0000, 0.0000, 1.0000, 0.0000, 1.0000],
    [0.8415, 0.5403, 0.0464, 0.9989, 0.0022, 1.0000],
    [0.9093, -0.4161, 0.0927, 0.9957, 0.0043, 1.0000],
    [0.1411, -0.9900, 0.1388, 0.9903, 0.0065, 1.0000],
    [-0.7568, -0.6536, 0.1846, 0.9828, 0.0086, 1.0000],
    [-0.9589, 0.2837, 0.2300, 0.9732, 0.0108, 0.9999],
    [-0.2794, 0.9602, 0.2749, 0.9615, 0.0129, 0.9999],
    [0.6570, 0.7539, 0.3192, 0.9477, 0.0151, 0.9999],
    [0.9894, -0.1455, 0.3629, 0.9318, 0.0172, 0.9999],
    [0.4121, -0.9111, 0.4057, 0.9140, 0.0194, 0.9998],
])
np.testing.assert_allclose(table6.numpy(), LECTURE_TABLE_10x6, rtol=0, atol=5e-5)

# %% [markdown]
# The lecture's class built its positions with an integer `arange`. Dividing an int64
# tensor by a float32 one promotes the result to float32, and every integer below
# $2^{24}$ converts exactly, so the integer positions give bit-for-bit the same table.

# %%
den6 = 10000 ** (torch.arange(0, 6, 2, dtype=torch.float32) / 6)
int_pos = torch.arange(10).reshape(10, 1)
print(int_pos.dtype, "/", den6.dtype, "->", (int_pos / den6).dtype)
assert torch.equal(int_pos / den6, int_pos.float() / den6)

# %% [markdown]
# `posenc.torch.positional_encoding` gives the same table:

# %%
print(f"largest difference: {(table6 - posenc.torch.positional_encoding(10, 6)).abs().max():.1e}")
torch.testing.assert_close(table6, posenc.torch.positional_encoding(10, 6), rtol=0, atol=ATOL)

# %% [markdown]
# Each column is one sinusoid along the positions. Here are the sines of every fourth
# pair, from our module at `d_model=64`: each wavelength is
# $10000^{8/64} \approx 3.2$ times the one before, from $2\pi \approx 6.3$ positions up
# to about 200. The table only samples whole positions, which is why column 0 looks jagged.

# %%
print(f"ratio {10000 ** (8 / 64):.1f}; wavelengths {2 * np.pi * 10000 ** (np.array([0, 8, 16, 24]) / 64)}")
wide = SinusoidalTable(d_model=64, max_sequence_length=100)()
fig, ax = plt.subplots(figsize=(9, 3.5))
for col in (0, 8, 16, 24):
    ax.plot(wide[:, col].numpy(), marker=".", markersize=3, label=f"column {col}")
ax.set_xlabel("position")
ax.set_ylabel("sine")
ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1))
plt.show()

# %% [markdown]
# ## In a model
#
# In a Transformer the table is added to the token embeddings before the first layer. The
# lecture's module returns only the table; the module models use (the Annotated
# Transformer's, PyTorch's examples') takes the embeddings `x` of shape
# `(batch, seq, d_model)` and returns `dropout(x + PE[:seq])`
# ([dropout](https://pytorch.org/docs/stable/generated/torch.nn.Dropout.html) zeroes random
# entries while training). It computes the table once, for a longest length `max_len`, and
# keeps it as a [*buffer*](https://pytorch.org/docs/stable/generated/torch.nn.Module.html#torch.nn.Module.register_buffer):
# a tensor that belongs to the module, moves with `.to(device)`, and is not a trained
# parameter. By hand:

# %%
class AddPositions(nn.Module):
    """forward(x): x of shape (batch, seq, d_model) -> dropout(x + PE[:seq]), same shape."""

    def __init__(self, d_model, max_len=5000, dropout=0.1):
        super().__init__()
        self.dropout = nn.Dropout(dropout)
        # persistent=False: the table is rebuilt from d_model, so checkpoints need not store it
        self.register_buffer("pe", SinusoidalTable(d_model, max_len)(), persistent=False)

    def forward(self, x):
        return self.dropout(x + self.pe[: x.shape[1]])


ours = AddPositions(16, max_len=50).eval()
x_check = torch.randn(2, 7, 16, generator=torch.Generator().manual_seed(0))
with torch.no_grad():
    torch.testing.assert_close(ours(x_check) - x_check, posenc.torch.positional_encoding(7, 16).expand(2, 7, 16))
print([name for name, _ in ours.named_buffers()], tuple(ours.pe.shape))

# %% [markdown]
# `posenc.torch.PositionalEncoding(d_model, max_len, dropout=...)` is this module, packaged:
# for the same input it returns the same output, up to the float32 rounding of our table.

# %%
packaged = posenc.torch.PositionalEncoding(16, max_len=50, dropout=0.1).eval()
with torch.no_grad():
    print(f"largest difference: {(ours(x_check) - packaged(x_check)).abs().max():.1e}")
    torch.testing.assert_close(ours(x_check), packaged(x_check), rtol=0, atol=ATOL)

# %% [markdown]
# ### Why models scale the embeddings by $\sqrt{d_{\mathrm{model}}}$
#
# The paper, and the Annotated Transformer after it, multiply the token embeddings by
# $\sqrt{d_{\mathrm{model}}}$ before adding the table. The reason is size. Each row of the
# table is $d_{\mathrm{model}}/2$ pairs with $\sin^2 + \cos^2 = 1$, so every row has norm
# $\sqrt{d_{\mathrm{model}}/2}$: 16 at $d_{\mathrm{model}} = 512$. Embedding entries are
# usually of size about $1/\sqrt{d_{\mathrm{model}}}$ (fairseq initialises them so; the paper
# shares the embedding with the output layer, whose scores should stay of order one), so an
# embedding row has norm about 1. Added as they are, the positions would outweigh the token
# sixteen to one. Times $\sqrt{d_{\mathrm{model}}}$, an embedding row has norm about
# $\sqrt{512} \approx 22.6$, the same order as the table's 16. (An
# [`nn.Embedding`](https://pytorch.org/docs/stable/generated/torch.nn.Embedding.html) is a
# table of one learned row per token id.)

# %%
d_big = 512
torch.manual_seed(0)
token_table = nn.Embedding(1000, d_big)
nn.init.normal_(token_table.weight, std=d_big**-0.5)
with torch.no_grad():
    embedding_norms = token_table.weight.norm(dim=1)
    scaled_norms = (token_table.weight * d_big**0.5).norm(dim=1)
table_norms = posenc.torch.positional_encoding(1000, d_big).norm(dim=1)
print(f"embedding rows: norm {embedding_norms.mean():.2f} on average, times sqrt(512): {scaled_norms.mean():.1f}")
print(f"table rows against unscaled embeddings: {(table_norms / embedding_norms).mean():.0f} to 1")
torch.testing.assert_close(table_norms, torch.full((1000,), (d_big / 2) ** 0.5), rtol=1e-6, atol=0)

# %% [markdown]
# ### A toy model
#
# The code runs unchanged on a GPU: pick the device once and move the model and the data
# to it. Nothing printed below depends on which device was chosen.
#
# An embedding over a 20-token vocabulary, 16 wide, followed by the positional encoding
# (this toy skips the scaling: PyTorch draws embedding entries with standard deviation 1,
# rows of norm about 4, 3.6 on average for these 20, against the table's
# $\sqrt{8} \approx 2.8$). Seeding before building it fixes the embedding weights; they are
# created on the CPU and then moved, so they are the same on every device.

# %%
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

vocab_size, width, max_len = 20, 16, 50
torch.manual_seed(0)
model = nn.Sequential(
    nn.Embedding(vocab_size, width),
    posenc.torch.PositionalEncoding(width, max_len=max_len, dropout=0.1),
).to(device)
embed, add_positions = model[0], model[1]
model.eval()
print(f"embedding rows: norm {embed.weight.norm(dim=1).mean():.1f} on average; table rows: {8**0.5:.1f}")

# %% [markdown]
# A batch of two sequences of seven token ids, drawn from a seeded CPU generator for the
# same reason:

# %%
gen = torch.Generator().manual_seed(1)
tokens = torch.randint(0, vocab_size, (2, 7), generator=gen).to(device)
print(tokens.cpu().numpy())

with torch.no_grad():
    x = embed(tokens)
    y = model(tokens)
print("tokens", tuple(tokens.shape), "-> embeddings", tuple(x.shape), "-> output", tuple(y.shape))

# %% [markdown]
# In eval mode dropout does nothing, so the output minus the embeddings is the table
# itself, the same rows for every sequence in the batch:

# %%
table = posenc.torch.positional_encoding(tokens.shape[1], width, device=device)
torch.testing.assert_close(y - x, table.expand_as(x), rtol=0, atol=ATOL)
print((y - x)[0, :4, :6].cpu().numpy().round(4))

# %% [markdown]
# In training mode dropout zeroes each entry with probability 0.1 (here 18 of the 224) and
# scales the rest by $1/0.9$, so that the expected value stays the same. Eval mode gives
# the plain sum back.

# %%
model.train()
torch.manual_seed(2)
with torch.no_grad():
    y_train = model(tokens)
model.eval()
kept = y_train != 0
print(f"zeroed: {int((~kept).sum())} of {kept.numel()}")
torch.testing.assert_close(y_train[kept], y[kept] / 0.9, rtol=1e-6, atol=1e-6)

# %% [markdown]
# ### The table is a buffer, not a weight
#
# `pe` is registered as a non-persistent buffer: `.to(device)` moves it along with the
# model, the optimizer never sees it (it is not a parameter), and `state_dict` leaves it
# out ([`state_dict`](https://pytorch.org/tutorials/beginner/saving_loading_models.html) is
# what a checkpoint saves). A checkpoint holds only the embedding weights, so it loads into a
# model built with any `max_len`.

# %%
print("buffers:", [name for name, _ in model.named_buffers()])
print("parameters:", [name for name, _ in model.named_parameters()])
print("state_dict:", list(model.state_dict()))
print("table shape:", tuple(add_positions.pe.shape), " on the embedding's device:", add_positions.pe.device == embed.weight.device)

fresh = nn.Sequential(nn.Embedding(vocab_size, width), posenc.torch.PositionalEncoding(width, max_len=5000))
loaded = fresh.load_state_dict(model.state_dict())
assert loaded.missing_keys == loaded.unexpected_keys == [], "nothing missing, nothing unexpected"

# %% [markdown]
# Without a GPU you can still watch a buffer move: the
# [meta device](https://pytorch.org/docs/stable/meta.html) holds shapes and no data, and
# `.to("meta")` moves a module there like any device. A tensor kept as a plain attribute
# (`self.pe = table`) would stay behind.

# %%
class TableAsAttribute(nn.Module):
    def __init__(self):
        super().__init__()
        self.pe = posenc.torch.positional_encoding(10, 4)  # not registered


print("buffer:", posenc.torch.PositionalEncoding(4, max_len=10).to("meta").pe.device)
print("plain attribute:", TableAsAttribute().to("meta").pe.device)

# %% [markdown]
# ### Longer than max_len
#
# The formula is defined for any position, so a sequence longer than `max_len` need not
# fail: the module recomputes its table at the new length, on the same device.

# %%
long_tokens = torch.randint(0, vocab_size, (2, 80), generator=gen).to(device)
with torch.no_grad():
    x_long = embed(long_tokens)
    y_long = model(long_tokens)
print("output", tuple(y_long.shape), " max_len was", max_len, "now", add_positions.max_len)
long_table = posenc.torch.positional_encoding(80, width, device=device)
torch.testing.assert_close(y_long - x_long, long_table.expand_as(x_long), rtol=0, atol=ATOL)
print("on the embedding's device:", add_positions.pe.device == embed.weight.device)
print("still out of state_dict:", list(model.state_dict()))

# %% [markdown]
# ## Why doesn't my table match? `posenc.diagnose`
#
# `posenc.diagnose` takes a table (a torch tensor here) and says what it is: the paper's
# table, or which of the common mistakes reproduce it. Below, the exp/log route of the
# [Annotated Transformer](https://nlp.seas.harvard.edu/annotated-transformer/) with three
# switches, each putting one mistake in (the comment on a line says which switch changes it),
# diagnosed once per mistake. Each diagnosis names the mistake it was given.

# %%
import math

import torch

import posenc


def draft_table(length, d_model, *, integer=False, multiply=False, transpose=False):
    position = torch.arange(length, dtype=torch.float32)[:, None]
    two_i = torch.arange(0, d_model, 2)
    exponent = two_i // d_model if integer else two_i / d_model  # integer: // (old torch's int "/")
    sign = 1.0 if multiply else -1.0  # multiply: the minus sign of exp(-...) forgotten
    angles = position * torch.exp(sign * exponent * math.log(10000.0))
    table = torch.zeros(length, d_model)
    table[:, 0::2] = torch.sin(angles)
    table[:, 1::2] = torch.cos(angles)
    return table.T if transpose else table  # transpose: (d_model, length)


# %%
mistakes = {
    "integer_division": dict(integer=True),
    "multiplied_not_divided": dict(multiply=True),
    "transposed": dict(transpose=True),
}
for code, mistake in mistakes.items():
    found = posenc.diagnose(draft_table(10, 6, **mistake))
    assert found.codes == [code], f"diagnose names the one mistake put in: {code}"
    print(found, end="\n\n")

# %% [markdown]
# Mistakes combine, and `diagnose` names each one: a transposed table with the exponent
# rounded down to zero.

# %%
found = posenc.diagnose(draft_table(10, 6, integer=True, transpose=True))
assert found.codes == ["transposed", "integer_division"]
print(found)

# %% [markdown]
# A printed tensor works too, the way a notebook shows it: a long one is summarised to its
# corners, so pass its shape. The first three and last three rows and columns of this
# `(50, 64)` print are enough to see that the minus sign is missing, the same answer as
# for the tensor itself.

# %%
tensor = draft_table(50, 64, multiply=True)
printed = repr(tensor)
shown = posenc.parse_printed(printed, shape=(50, 64))
print("rows shown:", shown.rows.tolist(), " columns shown:", shown.columns.tolist())
found = posenc.diagnose(printed, shape=(50, 64))
assert found.codes == posenc.diagnose(tensor).codes == ["multiplied_not_divided"], "the print says what the tensor says"
print(found)

# %% [markdown]
# ## Summary
#
# - The lecture's d_model=64 walk: denominators `(32,)`, equal for even and odd columns;
#   positions `(10, 1)`; sines and cosines `(10, 32)`; stacked `(10, 32, 2)`; flattened
#   `(10, 64)`. Each stage matches `posenc` to 1e-6 (the cross-checks below).
# - Our `SinusoidalTable` reproduces the lecture's printed `(10, 6)` table at its four
#   decimals and equals `posenc.torch.positional_encoding(10, 6)` to 1e-6. Unlike the
#   lecture's class it gives an odd `d_model` its width (7 columns, not 8).
# - `AddPositions`, the usual module written by hand, returns `dropout(x + PE[:seq])` from a
#   buffer; models scale the embeddings by $\sqrt{d_{\mathrm{model}}}$ first, so that they
#   are not drowned by the table's rows of norm $\sqrt{d_{\mathrm{model}}/2}$.
# - `posenc.torch.PositionalEncoding` does the same as `AddPositions`. Its
#   table is a non-persistent buffer that moves with `.to(device)` and stays out of
#   checkpoints, and it grows when a sequence is longer than `max_len`.
# - `posenc.diagnose` says what a table is, a tensor or its printed form: the paper's, or
#   which mistakes (integer division, a lost minus sign, a transpose) reproduce it.

# %% [markdown]
# ## Exercises
#
# Each exercise gives a draft with a mistake in it, then a check: run the check, read what it
# says, fix the draft and run both cells again until it says "Correct!". The feedback stored
# here is the one for the draft as given. Stuck? `nb02.NAME.hint()` gives a nudge and
# `nb02.NAME.solution()` prints the reference code the check compares against (NAME is the
# word before `.check`).

# %%
from posenc.exercises import nb02

# %% [markdown]
# ### Exercise 1 · The Annotated Transformer's table, fixed
#
# Complete `my_positional_encoding(length, d_model)` so that it returns the paper's
# `(length, d_model)` float32 table by the exp/log route, an odd `d_model` included (its last
# column is a sine). The draft below has two problems; the check finds one at a time.
# (`posenc.diagnose(my_positional_encoding(10, 6))` gives a second opinion.)

# %%
def my_positional_encoding(length, d_model):
    position = torch.arange(1, length + 1, dtype=torch.float32)[:, None]
    div_term = torch.exp(torch.arange(0, d_model, 2) * (-math.log(10000.0) / d_model))
    table = torch.zeros(length, d_model)
    table[:, 0::2] = torch.sin(position * div_term)
    table[:, 1::2] = torch.cos(position * div_term)
    return table


# %%
nb02.table.check(my_positional_encoding)

# %% [markdown]
# ### Exercise 2 · The forward a model calls
#
# The lecture's `forward()` takes nothing and returns the table. A model calls its
# positional encoding with the embeddings `x`, of shape `(batch, seq, d_model)`, and expects
# `x` plus the table's first `seq` rows back. Fix `forward` below; the check builds your module
# for two sizes and calls it on a batch.

# %%
class MyPositionalEncoding(nn.Module):
    def __init__(self, d_model, max_len=5000):
        super().__init__()
        self.register_buffer("pe", posenc.torch.positional_encoding(max_len, d_model), persistent=False)

    def forward(self, x):
        return self.pe  # the lecture's forward: the whole table


# %%
nb02.forward.check(MyPositionalEncoding)

# %% [markdown]
# ### Exercise 3 · The table that stays behind
#
# This module gives the right numbers on a CPU. On a GPU, after `model.to("cuda")`, its
# forward fails: the embeddings are on the GPU, its table is not. Find why without a GPU
# (move it to the meta device and look at `.pe.device`), fix `__init__` and check.

# %%
class TableOnTheSide(nn.Module):
    def __init__(self, d_model, max_len=5000):
        super().__init__()
        self.pe = posenc.torch.positional_encoding(max_len, d_model)

    def forward(self, x):
        return x + self.pe[: x.shape[1]]


# %%
nb02.buffer.check(TableOnTheSide)

# %% [markdown]
# ### Exercise 4 · How loud is the table?
#
# A model of width `d_model = 768` draws its embedding entries with standard deviation
# $1/\sqrt{768}$ and multiplies the embeddings by $\sqrt{768}$ before adding the table.
# Predict, with pencil or Python, the ratio of a table row's norm to a scaled embedding row's
# (typical) norm. The draft counts one unit of squared norm per column.

# %%
table_row = math.sqrt(768)  # one sin^2 or cos^2 per column?
scaled_embedding_row = math.sqrt(768 * (1 / 768)) * math.sqrt(768)
ratio = table_row / scaled_embedding_row

# %%
nb02.scale.check(ratio)

# %% [markdown]
# ## Cross-checks
#
# The batch of checks behind the sentences above, in one place: every step of the walk
# against `posenc` (float64 references; `ATOL` covers float32 round-off at these small
# positions), and the numbers the prose quotes.

# %%
# Cross-checks: each step of the walk against posenc (float64 references)
assert den_even.dtype == torch.float32
torch.testing.assert_close(den_even.double(), torch.from_numpy(posenc.denominators(64)), rtol=1e-6, atol=0)
ref_angle = torch.from_numpy(posenc.angles(np.arange(10), 64))
torch.testing.assert_close(sin_part.double(), ref_angle.sin(), rtol=0, atol=ATOL)
torch.testing.assert_close(cos_part.double(), ref_angle.cos(), rtol=0, atol=ATOL)
np.testing.assert_array_equal(posenc.interleave(sin_part.numpy(), cos_part.numpy()), pe64.numpy())
torch.testing.assert_close(pe64, posenc.torch.positional_encoding(10, 64), rtol=0, atol=ATOL)
assert not torch.equal(concatenated, pe64)
torch.testing.assert_close(concatenated, posenc.torch.positional_encoding(10, 64, layout="sin_cos"), rtol=0, atol=ATOL)
assert big[:, -2].abs().max() < 0.02 and big[:, -1].min() > 0.9999
assert len(pair_starts) == 4 and table7.shape == (10, 7)
torch.testing.assert_close(table7, posenc.torch.positional_encoding(10, 7), rtol=0, atol=ATOL)

# %%
# Cross-checks: the numbers the prose quotes, the wavelengths and the sqrt(d_model) scale at the digits printed
assert round(10000 ** (8 / 64), 1) == 3.2 and round(2 * np.pi, 1) == 6.3
assert round(2 * np.pi * 10000 ** (24 / 64), -1) == 200
assert round(embedding_norms.mean().item(), 2) == 1.0 and round(scaled_norms.mean().item(), 1) == 22.6
assert round((table_norms / embedding_norms).mean().item()) == 16

# %%
# Cross-checks of the toy model (norms, dropout, eval mode, the device, the grown table) and of diagnose
assert round(embed.weight.norm(dim=1).mean().item(), 1) == 3.6 and round(8**0.5, 1) == 2.8
assert int((~kept).sum()) == 18 and kept.numel() == 224
with torch.no_grad():
    assert torch.equal(model(tokens), y)
assert add_positions.max_len == 80 and add_positions.pe.device == embed.weight.device

# diagnose: the draft without a mistake is the paper's table; the corners a long print shows
assert posenc.diagnose(draft_table(10, 6)).matches_paper
assert shown.rows.tolist() == [0, 1, 2, 47, 48, 49] and shown.columns.tolist() == [0, 1, 2, 61, 62, 63]
