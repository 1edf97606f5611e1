# %% [markdown]
# # 09 · Beyond a sequence: positions on an image grid
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/posenc-org/posenc/blob/main/notebooks/09_beyond_a_sequence.ipynb)
#
# A vision transformer cuts an image into patches and feeds them to the model as a
# sequence. Each patch has two coordinates, a row and a column, and the sinusoidal encoding
# follows them: half of the channels encode the row, half the column. This notebook turns
# a grid into a sequence and shows where the order can silently go wrong, draws what the
# 2-D encoding "sees", puts the tables of MAE, MoCo v3, big_vision, timm, DETR, RT-DETR and
# diffusers side by side (and tells them apart), resamples a table to a new resolution, and
# ends with a small model that is trained on one grid and tested on another.

# %%
# On Colab, install posenc from GitHub; elsewhere `make lab` has already installed it.
import sys

if "google.colab" in sys.modules:
    # %pip install --quiet "posenc @ git+https://github.com/posenc-org/posenc@main"

# %% [markdown]
# NumPy builds the tables; PyTorch resamples them and trains the small model at the end.
# One thread and deterministic algorithms make every run on a machine repeat exactly.

# %%
# %matplotlib inline
import time

import matplotlib.pyplot as plt
import numpy as np
import torch
from torch import nn

import posenc
import posenc.torch

torch.set_num_threads(1)
torch.use_deterministic_algorithms(True)
torch.manual_seed(0)
started = time.perf_counter()

# %% [markdown]
# ## 1. From a grid to a sequence
#
# An image of 3 x 4 patches (height 3, width 4) becomes 12 tokens, read row by row as text
# is: token $k$ is the patch in row $k \,//\, W$ and column $k \bmod W$. That is what
# `reshape` and `flatten` do to an `(H, W, d)` array of patch embeddings.

# %%
h, w = 3, 4
rows, cols = np.divmod(np.arange(h * w), w)
print("row:   ", rows)
print("column:", cols)

# %% [markdown]
# The position table must list the same patches in the same order. A common way to build
# the coordinates is `meshgrid`. With `indexing="ij"` and the width passed first (MoCo v3,
# RT-DETR before transformers #41380), the grid comes out as `(W, H)` and flattening it
# walks down the columns: the first four tokens, which are the top row of the image, are
# given x positions 0, 0, 0, 1 instead of 0, 1, 2, 3.

# %%
grid_x, grid_y = np.meshgrid(np.arange(w), np.arange(h), indexing="ij")
claimed_x, claimed_y = grid_x.ravel(), grid_y.ravel()
print("x claimed:", claimed_x)
wrong = int(np.sum((claimed_x != cols) | (claimed_y != rows)))
print(f"{wrong} of {h * w} tokens carry another patch's position")

# %%
assert list(claimed_x[:4]) == [0, 0, 0, 1] and list(cols[:4]) == [0, 1, 2, 3]
assert wrong == 10  # only the first and the last token keep their own position
# Every (x, y) pair still occurs once: nothing looks broken, the positions are just scrambled.
assert len(set(zip(claimed_x, claimed_y))) == h * w

# %% [markdown]
# On a square grid the same code gives a table that is *correct*: the walk down the columns
# on an $n \times n$ grid gives token $k$ the pair $(x, y) = (k \,//\, n, k \bmod n)$, which is
# the true $(y, x)$ pair with the two names exchanged. The table has its row block and column
# block in the other order, a valid encoding, identical to RT-DETR's fixed code. So the
# mistake is invisible on the square images most models are trained on, and only shows
# when the grid is not square. posenc writes MoCo v3's table as `convention="moco-v3"`:

# %%
moco = posenc.grid_encoding((6, 6), 64, convention="moco-v3", cls_token=False)
fixed = posenc.grid_encoding((6, 6), 64, convention="rt-detr")
print("square 6 x 6:     same table:", np.array_equal(moco, fixed))
moco = posenc.grid_encoding((6, 9), 64, convention="moco-v3", cls_token=False)
fixed = posenc.grid_encoding((6, 9), 64, convention="rt-detr")
print("non-square 6 x 9: same table:", np.array_equal(moco, fixed))

# %%
assert np.array_equal(posenc.grid_encoding((6, 6), 64, convention="moco-v3", cls_token=False),
                      posenc.grid_encoding((6, 6), 64, convention="rt-detr"))
assert np.abs(moco - fixed).max() > 1.5

# %% [markdown]
# ## 2. What the 2-D encoding sees
#
# In MAE's table a patch's vector is $[\sin x\,w_j, \cos x\,w_j, \sin y\,w_j, \cos y\,w_j]$
# with $d/4$ frequencies $w_j = 10000^{-j/(d/4)}$. The dot product of two patches is then
# $\sum_j \cos(w_j\,\Delta x) + \cos(w_j\,\Delta y)$: it depends on the offset only, as in
# 1-D. Below, one patch's encoding against every patch of a 12 x 20 grid, drawn as an image,
# with the correct order and with MoCo v3's walk down the columns.

# %%
H, W, d = 12, 20, 128
patch = (4, 7)
tables = {
    "row by row (MAE)": posenc.grid_encoding((H, W), d, convention="mae"),
    "down the columns (MoCo v3 order)": posenc.grid_encoding((H, W), d, convention="moco-v3", cls_token=False),
}
similarities = {name: (t @ t[patch[0] * W + patch[1]]).reshape(H, W) / (d / 2) for name, t in tables.items()}
lowest = min(s.min() for s in similarities.values())
fig, axes = plt.subplots(1, 2, figsize=(11, 3.2))
for ax, (name, similarity) in zip(axes, similarities.items()):
    image = ax.imshow(similarity, cmap="viridis", vmin=lowest, vmax=1)
    ax.plot(patch[1], patch[0], "r+", ms=12)
    ax.set_title(name)
    ax.set_xlabel("column x")
    ax.set_ylabel("row y")
fig.colorbar(image, ax=axes, label="dot product / (d / 2)")
plt.show()

# %% [markdown]
# With the right order the picture is a bright spot at the patch (the red cross) that fades
# with distance in both directions, and it is the same spot wherever the patch is: shifting
# the patch shifts the picture. With the columns walked first, the "nearest" patches are
# scattered over the image.

# %%
mae = tables["row by row (MAE)"]
sim = (mae @ mae.T).reshape(H, W, H, W)
assert np.unravel_index(np.argmax(sim[patch]), (H, W)) == patch
# the same picture, moved: patch (4, 7) against (y, x) equals patch (5, 9) against (y + 1, x + 2)
assert np.allclose(sim[4, 7, :11, :18], sim[5, 9, 1:, 2:], atol=1e-5)
scattered = tables["down the columns (MoCo v3 order)"]
assert np.unravel_index(np.argmax(scattered @ scattered[patch[0] * W + patch[1]]), (H, W)) == patch
assert not np.allclose(scattered @ scattered[4 * W + 7], mae @ mae[4 * W + 7], atol=0.1)

# %% [markdown]
# ## 3. The conventions side by side
#
# Every source writes sines and cosines of the two coordinates, and no two of them in quite
# the same way: which axis comes first (MAE's half named `emb_h` holds the width), blocks
# `[sin, cos]` per axis, all sines then all cosines (timm) or pairs interleaved (DETR),
# frequencies over $d/4$ or $d/4 - 1$ steps (big_vision), positions from 1 and normalised
# (DETR) or scaled to a base size (diffusers). `posenc.list_grid_conventions()` names them.

# %%
names = list(posenc.list_grid_conventions())
shape = (6, 10)
fig, axes = plt.subplots(2, 4, figsize=(14, 5), sharey=True)
for ax, name in zip(axes.ravel(), names):
    table = posenc.grid_encoding(shape, 64, convention=name)[-60:]
    ax.imshow(table, cmap="RdBu_r", vmin=-1, vmax=1, aspect="auto", interpolation="nearest")
    ax.set_title(name)
for ax in axes[1]:
    ax.set_xlabel("column of the table")
for ax in axes[:, 0]:
    ax.set_ylabel("token (row-major)")
fig.tight_layout()
plt.show()

# %% [markdown]
# How far apart are they? The largest difference between each table and MAE's, on this
# 6 x 10 grid at $d = 64$. big_vision is the closest: the same layout, with frequencies
# spread over one step fewer, so it drifts away from MAE's as positions grow. Two names
# write identical numbers: big_vision and lucidrains' simple ViT are the same function.
# The others are different tables altogether.

# %%
reference = posenc.grid_encoding(shape, 64, convention="mae")
differences = {name: float(np.abs(posenc.grid_encoding(shape, 64, convention=name)[-60:] - reference).max())
               for name in names}
for name, difference in differences.items():
    print(f"{name:>11}: {difference:.2f}")

# %%
assert differences["mae"] == 0 and 0.1 < differences["big_vision"] < 0.5
assert all(v > 1.5 for k, v in differences.items() if k not in ("mae", "big_vision", "simple-vit"))
assert np.array_equal(posenc.grid_encoding(shape, 64, convention="big_vision"),
                      posenc.grid_encoding(shape, 64, convention="simple-vit"))

# %% [markdown]
# diffusers is MAE with positions $k / (n / \text{base\_size})$: on a 6 x 10 grid with the
# default `base_size=16` the rows step by 16/6 and the columns by 16/10. `identify_grid`
# takes a frozen table and its grid shape and names the conventions that wrote it (rows
# before the grid's tokens, a class token's, are reported, not compared). Here each
# convention's table goes in, MAE's and MoCo's with their class-token row:

# %%
for name in names:
    options = {"cls_token": True} if name in ("mae", "moco-v3") else {}
    found = posenc.identify_grid(posenc.grid_encoding(shape, 64, convention=name, **options), shape)
    print(f"{name:>11} -> {' = '.join(found.matches)}; prefix rows: {found.prefix_rows}")

# %%
for name in names:
    found = posenc.identify_grid(posenc.grid_encoding(shape, 64, convention=name), shape)
    assert name in found.matches
assert posenc.identify_grid(posenc.grid_encoding(shape, 64, convention="mae", cls_token=True), shape).prefix_rows == 1

# %% [markdown]
# timm with `interleave_sin_cos=True` writes RT-DETR's numbers, and with `reverse_coord`
# as well, MoCo v3's (including its column walk). `diagnose_grid` goes one step further:
# given the convention a table *should* follow, it says which grid mistake explains the
# numbers. Three MAE tables built wrong on the 6 x 10 grid:

# %%
mistakes = {
    "shape passed as (W, H)": posenc.grid_encoding((10, 6), 64, convention="mae"),
    "walked down the columns": posenc.grid_encoding(shape, 64, convention="moco-v3", cls_token=False),
    "y block first": posenc.grid_encoding(shape, 64, convention="rt-detr"),
}
for name, table in mistakes.items():
    findings = posenc.diagnose_grid(table, shape, "mae").findings
    print(f"{name}:\n  " + "\n  ".join(f.split(": ", 1)[1] for f in findings))

# %%
expected = ["height and width swapped", "wrong flattening order", "axes stacked in the wrong order"]
for (name, table), mistake in zip(mistakes.items(), expected):
    assert [f.split(": ")[1] for f in posenc.diagnose_grid(table, shape, "mae").findings] == [mistake]

# %% [markdown]
# ## 4. A new resolution
#
# Fine-tuning at a higher resolution means more patches. A learned table has to be
# interpolated, and timm's `resample_abs_pos_embed` does it with a bicubic resize of the
# table seen as a $d$-channel image (class rows kept aside). `posenc.torch.resample_abs_pos_embed`
# makes the same calls. The resized grid samples the old one at the stretched positions
# $(i + \tfrac12)\,n_\text{old}/n_\text{new} - \tfrac12$; for a sin-cos table posenc can
# compute the encoding at exactly those positions, so we can see what interpolation loses.

# %%
old, new, d = (6, 8), (12, 16), 64
table = posenc.torch.grid_encoding(old, d, convention="mae", cls_token=True, dtype=torch.float64)
resized = posenc.torch.resample_abs_pos_embed(table, new, old).numpy()
stretched = [(np.arange(n) + 0.5) * o / n - 0.5 for o, n in zip(old, new)]
exact = posenc.grid_encoding(new, d, convention="mae", dtype=np.float64, positions=stretched)
error = np.abs(resized[1:] - exact).max(axis=0)
frequency = 10000.0 ** -(np.arange(d) % (d // 4) / (d // 4))
fig, ax = plt.subplots(figsize=(7, 3))
ax.loglog(frequency, error, "o", ms=4)
ax.set_xlabel("frequency of the column (radians per patch)")
ax.set_ylabel("largest error of bicubic")
ax.set_title("6 x 8 table resized to 12 x 16")
plt.show()

# %% [markdown]
# The slow columns come through almost unchanged, but the fast ones, which turn by a
# radian from one patch to the next, are off by more than 0.05: a cubic through samples
# that far apart cannot follow a sine. The recomputed table has no such error, and the class
# row is carried over untouched. For a sin-cos table there is nothing to interpolate: compute
# it at the new grid.

# %%
assert error.max() > 0.05 and error[d // 4 - 1] < 1e-3
assert np.array_equal(resized[0], table[0].numpy())
assert np.abs(posenc.grid_encoding(new, d, convention="mae", positions=stretched) - exact).max() < 2e-7
print(f"bicubic: largest error {error.max():.2f}; recomputed in float32: below 2e-7")

# %% [markdown]
# ## 5. Trained on one grid, tested on another
#
# A small model finds a marked patch: each example is a grid of tokens, one of them carrying
# a marker, and the model answers with the marker's row and column. It sees the tokens
# only as marker plus position encoding, pools them with one attention head, and reads the
# row and the column off the pooled vector. We train it on a non-square 8 x 12 grid with
# MAE's table.

# %%
class FindTheMarker(nn.Module):
    def __init__(self, d, rows, cols):
        super().__init__()
        self.marker = nn.Parameter(torch.randn(d))
        self.attention = nn.MultiheadAttention(d, 1, batch_first=True)
        self.query = nn.Parameter(torch.randn(1, 1, d))
        self.row, self.col = nn.Linear(d, rows), nn.Linear(d, cols)

    def forward(self, marked, table):  # marked: (batch,) token index; table: (tokens, d)
        tokens = table + (torch.arange(len(table)) == marked[:, None])[..., None] * self.marker
        pooled, _ = self.attention(self.query.expand(len(marked), -1, -1), tokens, tokens)
        return self.row(pooled[:, 0]), self.col(pooled[:, 0])

# %%
def accuracy(model, table, shape):
    marked = torch.arange(shape[0] * shape[1])  # every patch once
    with torch.no_grad():
        rows, cols = model(marked, table)
    right = (rows.argmax(-1) == marked // shape[1]) & (cols.argmax(-1) == marked % shape[1])
    return right.float().mean().item()


d, train_shape = 32, (8, 12)
train_table = posenc.torch.grid_encoding(train_shape, d, convention="mae")
model = FindTheMarker(d, *train_shape)
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
for step in range(400):
    marked = torch.randint(0, 96, (64,))
    rows, cols = model(marked, train_table)
    loss = nn.functional.cross_entropy(rows, marked // 12) + nn.functional.cross_entropy(cols, marked % 12)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()

# %% [markdown]
# Now a smaller 6 x 9 grid, with three tables: MAE's recomputed for 6 x 9; the same
# frequencies walked down the columns (MoCo v3's order); and the 8 x 12 training table
# resized to 6 x 9 by `resample_abs_pos_embed`, as one would do with a learned table.

# %%
test_shape = (6, 9)
tables = {
    "recomputed, row by row": posenc.torch.grid_encoding(test_shape, d, convention="mae"),
    "recomputed, down the columns": posenc.torch.grid_encoding(test_shape, d, convention="moco-v3", cls_token=False),
    "training table resized": posenc.torch.resample_abs_pos_embed(train_table, test_shape, train_shape, num_prefix_tokens=0),
}
scores = {"training grid 8 x 12": accuracy(model, train_table, train_shape)}
scores |= {name: accuracy(model, table, test_shape) for name, table in tables.items()}

# %%
# NBVAL_IGNORE_OUTPUT
for name, score in scores.items():
    print(f"{name:>30}: {score:.2f} of the patches found")

# %% [markdown]
# The model finds the marked patch on the grid it was trained on, and
# just as well on the new grid when the table is recomputed in the same order. Walked down the columns, most tokens claim another
# patch's position, and the model answers with that patch. The resized table does no
# better: the stretched positions of section 4 point between the trained ones.

# %%
assert scores["training grid 8 x 12"] >= 0.95 and scores["recomputed, row by row"] >= 0.95
assert scores["recomputed, down the columns"] < 0.2
assert scores["training table resized"] < 0.5

# %% [markdown]
# The whole notebook runs in well under a minute:

# %%
# NBVAL_IGNORE_OUTPUT
print(f"{time.perf_counter() - started:.0f} s")
