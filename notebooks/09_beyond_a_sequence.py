# %% [markdown]
# # 09 · Beyond a sequence: positions on an image grid
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/posenc-org/posenc/blob/main/notebooks/09_beyond_a_sequence.ipynb)
#
# A [vision transformer](https://arxiv.org/abs/2010.11929) (ViT) cuts an image into patches
# and reads them as a sequence. A patch has two coordinates, a row and a column, and the
# sinusoidal encoding of notebook 01 follows both: half of the channels encode the row, half
# the column. Three things can go wrong on the way, and each one is silent: the patches are
# put in one order and their positions in another; two libraries write "the same" table in
# different ways; the image changes size and the positions have to follow.
#
# **Question:** How does a sin-cos table give the patches of an image their positions, and what goes wrong when the flattening order, the convention or the grid size changes?
#
# **You will be able to:**
# - build a 2-D sin-cos table in the convention of [MAE](https://arxiv.org/abs/2111.06377) (section 2) and find a flattening mistake in one with `posenc.diagnose_grid`;
# - tell which published grid tables differ only in the order of their columns and which in frequencies or positions;
# - give a table for a new grid size in one of two frames (the old field of view, or the old patch size) and predict what a trained model answers with each.
#
# **Prerequisites:** notebooks 01 and 04 · **Time:** about 50 minutes

# %%
# On Colab, install posenc from GitHub; elsewhere `make lab` has already installed it.
import sys

if "google.colab" in sys.modules:
    # %pip install --quiet "posenc @ git+https://github.com/posenc-org/posenc@main"

# %% [markdown]
# NumPy builds the tables; PyTorch resamples them and trains the small model of section 5.
# One thread, deterministic algorithms and a seed make every run repeat exactly.

# %%
# %matplotlib inline
import matplotlib.pyplot as plt
import numpy as np
import torch
from torch import nn

import posenc
import posenc.torch
from posenc.exercises import nb09

torch.manual_seed(0)
torch.set_num_threads(1)
torch.use_deterministic_algorithms(True)

# %% [markdown]
# ## 1. From a grid to a sequence
#
# An image of 3 x 4 patches (height 3, width 4) becomes 12 tokens, read row by row as text
# is: token $k$ is the patch in row $k \,//\, W$ and column $k \bmod W$. That is what
# `reshape` and `flatten` do to an `(H, W, d)` array of patch embeddings.

# %%
h, w = 3, 4
token_row, token_column = np.divmod(np.arange(h * w), w)
print("row:   ", token_row)
print("column:", token_column)

# %% [markdown]
# The position table must list the same patches in the same order. A common way to build
# the coordinates is `meshgrid`. With `indexing="ij"` and the width passed first, the grid
# comes out as `(W, H)` and flattening it walks down the columns: the first four tokens,
# the top row of the image, are given x positions 0, 0, 0, 1 instead of 0, 1, 2, 3.
# [MoCo v3](https://arxiv.org/abs/2104.02057) (a self-supervised ViT,
# [code](https://github.com/facebookresearch/moco-v3)) builds its table this way, and so does
# the encoder of the detector [RT-DETR](https://arxiv.org/abs/2304.08069): its original code
# ([lyuwenyu/RT-DETR](https://github.com/lyuwenyu/RT-DETR), `build_2d_sincos_position_embedding`
# in `rtdetr_pytorch` and `rtdetrv2_pytorch`) still does, while its port to Hugging Face
# [transformers](https://github.com/huggingface/transformers) was fixed by
# [PR #41380](https://github.com/huggingface/transformers/pull/41380).

# %%
grid_x, grid_y = np.meshgrid(np.arange(w), np.arange(h), indexing="ij")
claimed_x, claimed_y = grid_x.ravel(), grid_y.ravel()
print("x claimed:", claimed_x)
wrong = int(np.sum((claimed_x != token_column) | (claimed_y != token_row)))
print(f"{wrong} of {h * w} tokens carry another patch's position")

# %%
# Every (x, y) pair still occurs once: nothing looks broken, the positions are just scrambled.
assert len(set(zip(claimed_x, claimed_y))) == h * w

# %% [markdown]
# On a square grid the same code gives a table that is *correct*: the walk down the columns
# on an $n \times n$ grid gives token $k$ the pair $(x, y) = (k \,//\, n, k \bmod n)$, which is
# the true $(y, x)$ pair with the two names exchanged. The table then has its row block and
# column block in the other order, a valid encoding, identical to the fixed code in
# transformers. So the mistake is invisible on the square images most models are trained on,
# and only shows when the grid is not square. posenc writes MoCo v3's table as
# `convention="moco-v3"` and the fixed one as `convention="rt-detr"` (`cls_token=False` drops
# a row that section 3 explains):

# %%
same = {}
for shape in [(6, 6), (6, 9)]:
    moco = posenc.grid_encoding(shape, 64, convention="moco-v3", cls_token=False)
    same[shape] = np.array_equal(moco, posenc.grid_encoding(shape, 64, convention="rt-detr"))
    print(f"{shape[0]} x {shape[1]}: same table: {same[shape]}")

# %%
assert same == {(6, 6): True, (6, 9): False}

# %% [markdown]
# ## 2. What the 2-D encoding sees
#
# In the table of [MAE](https://arxiv.org/abs/2111.06377) (masked autoencoders, a ViT
# pre-training method; [code](https://github.com/facebookresearch/mae), `util/pos_embed.py`)
# a patch at column $x$ and row $y$ gets the vector
# $[\sin x\,w_j, \cos x\,w_j, \sin y\,w_j, \cos y\,w_j]$ with $d/4$ frequencies
# $w_j = 10000^{-j/(d/4)}$. The dot product of two patches is then
# $\sum_j \cos(w_j\,\Delta x) + \sum_j \cos(w_j\,\Delta y)$: it depends on the 2-D offset
# $(\Delta x, \Delta y)$ only, as in 1-D (notebook 04), and it is a *sum* of a part for the
# columns and a part for the rows. Below, one patch's encoding against every patch of a
# 12 x 20 grid, drawn as an image, with the correct order and with MoCo v3's walk down the columns.

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
# With the right order the picture is a plus: a bright spot at the patch (the red cross)
# with a bright row and a bright column through it, and dark corners. Along the patch's own
# row $\Delta y = 0$, so the row part is at its largest, $d/4$, whatever $\Delta x$ is; the
# same holds along its column. The whole picture is the sum of its row through the patch and
# its column through the patch, less the value at the patch, which was counted twice:

# %%
similarity = similarities["row by row (MAE)"]
along_row, along_column = similarity[patch[0]], similarity[:, patch[1]]
print("lowest along the patch's row and column:", round(float(min(along_row.min(), along_column.min())), 2))
print("lowest anywhere (a corner):             ", round(float(similarity.min()), 2))

# %%
assert np.allclose(similarity, along_row[None, :] + along_column[:, None] - similarity[patch], atol=1e-5)

# %% [markdown]
# The plus is the same wherever the patch is: shifting the patch shifts the picture, since
# only the offset counts. With the columns walked first, the "nearest" patches are scattered
# over the image: most tokens carry another patch's position.

# %%
mae = tables["row by row (MAE)"]
sim = (mae @ mae.T).reshape(H, W, H, W)
# patch (4, 7) against (y, x) equals patch (5, 9) against (y + 1, x + 2)
assert np.allclose(sim[4, 7, :11, :18], sim[5, 9, 1:, 2:], atol=1e-5)

# %% [markdown]
# ## 3. The conventions side by side
#
# Every source writes sines and cosines of the two coordinates, and no two of them in quite
# the same way. Besides MAE and MoCo v3:
# [big_vision](https://github.com/google-research/big_vision) (Google's ViT code,
# `posemb_sincos_2d`) and lucidrains' [simple ViT](https://github.com/lucidrains/vit-pytorch)
# spread the frequencies over $d/4 - 1$ steps; [timm](https://github.com/huggingface/pytorch-image-models)
# (PyTorch Image Models, `build_sincos2d_pos_embed`) writes all sines, then all cosines;
# [DETR](https://arxiv.org/abs/2005.12872) (a detection transformer,
# [code](https://github.com/facebookresearch/detr)) interleaves sine/cosine pairs and counts
# positions from 1; [diffusers](https://github.com/huggingface/diffusers) (Hugging Face's
# diffusion-model library, `get_2d_sincos_pos_embed`) scales the positions to a base size;
# `rt-detr` is transformers' RT-DETR. `posenc.list_grid_conventions()` names them, and
# `posenc.grid_encoding(shape, d, convention=...)` writes each one's numbers.
#
# ViT puts one extra token before the patches, a *class token* whose output summarises the
# image. MAE and MoCo v3 give it a row of zeros in the table (a *class row*, `cls_token=True`;
# MoCo v3's default). So the figure takes the last 60 rows of each table, `[-60:]`: the 60
# patches of a 6 x 10 grid, without the class row.

# %%
# the eight conventions above (posenc.list_grid_conventions() also names positional-encodings)
names = ["mae", "moco-v3", "rt-detr", "big_vision", "simple-vit", "timm", "detr", "diffusers"]
shape = (6, 10)
tables = {name: posenc.grid_encoding(shape, 64, convention=name)[-60:] for name in names}
fig, axes = plt.subplots(2, 4, figsize=(14, 5), sharey=True)
for ax, (name, table) in zip(axes.ravel(), tables.items()):
    ax.imshow(table, cmap="RdBu_r", vmin=-1, vmax=1, aspect="auto", interpolation="nearest")
    ax.set_title(name)
for ax in axes[1]:
    ax.set_xlabel("column of the table")
for ax in axes[:, 0]:
    ax.set_ylabel("token (row-major)")
fig.tight_layout()
plt.show()

# %% [markdown]
# How far apart are they? The largest difference between each table and MAE's says little:
# a table with its columns in another order is as far from MAE's as a table of other
# numbers. Two better questions: are its columns MAE's columns in another order? And does it
# give every pair of tokens the same dot product, that is, the same *Gram matrix*
# $T\,T^\top$? A fixed order of columns costs a model nothing: trained with another order,
# it can learn the same weights, permuted to match (notebook 05 shows this for 1-D
# layouts), though a trained model expects its own order. Other dot products between
# tokens are another encoding.

# %%
def same_columns(a, b):
    """Are the columns of a those of b, in some order?"""
    return sorted(map(tuple, a.T.round(6))) == sorted(map(tuple, b.T.round(6)))


reference = tables["mae"]
comparison = {}
print(f"{'':>11}  largest difference  same columns  same dot products")
for name, table in tables.items():
    gram = float(np.abs(table @ table.T - reference @ reference.T).max())
    comparison[name] = (float(np.abs(table - reference).max()), same_columns(table, reference), gram < 1e-4)
    print(f"{name:>11}  {comparison[name][0]:18.2f}  {comparison[name][1]!s:>12}  {comparison[name][2]!s:>17}")

# %% [markdown]
# Three groups, then. **Order only:** `rt-detr` and `timm` hold MAE's columns in another
# order. DETR's class with its defaults (positions $1..n$ instead of $0..n-1$) holds other
# numbers but the same dot products, because only offsets count and a shift by one changes
# none. **Order of the tokens:** MoCo v3's columns are MAE's, but on this non-square grid
# they are given to other tokens, so the dot products between tokens change.
# **Frequencies or positions:** big_vision and simple ViT (the same function, the same
# numbers) spread their frequencies over one step fewer, $w_j = 10000^{-j/(d/4 - 1)}$;
# diffusers multiplies the positions by $16/6$ down the rows and $16/10$ across the columns,
# which is the same as other frequencies per axis. DETR's own model builds its table with
# `normalize=True`, positions scaled to $(0, 2\pi]$ per axis: another such frame.

# %%
order_only = [name for name, (_, columns, gram) in comparison.items() if columns and name != "mae"]
assert order_only == ["rt-detr", "timm"]

# %% [markdown]
# `identify_grid` takes a frozen table and its grid shape and names the conventions that
# wrote it (rows before the grid's tokens, a class token's, are reported, not compared). Here
# each convention's table goes in, MAE's and MoCo v3's with their class row:

# %%
identified = {}
for name in names:
    options = {"cls_token": True} if name in ("mae", "moco-v3") else {}
    identified[name] = posenc.identify_grid(posenc.grid_encoding(shape, 64, convention=name, **options), shape)
    print(f"{name:>11} -> {' = '.join(identified[name].matches)}; prefix rows: {identified[name].prefix_rows}")

# %%
assert all(name in found.matches for name, found in identified.items())

# %% [markdown]
# timm with `interleave_sin_cos=True` writes transformers' RT-DETR numbers, and with
# `reverse_coord` as well, MoCo v3's (including its column walk). `diagnose_grid` goes one
# step further: given the convention a table *should* follow, it says which grid mistake
# explains the numbers. Three MAE tables built wrong on the 6 x 10 grid:

# %%
mistakes = {
    "shape passed as (W, H)": posenc.grid_encoding((10, 6), 64, convention="mae"),
    "walked down the columns": posenc.grid_encoding(shape, 64, convention="moco-v3", cls_token=False),
    "y block first": posenc.grid_encoding(shape, 64, convention="rt-detr"),
}
diagnosed = {}
for name, table in mistakes.items():
    found = posenc.diagnose_grid(table, shape, "mae")
    diagnosed[name] = [mistake for _, mistake in found.mistakes]
    print(f"{name}:\n  " + "\n  ".join(found.findings))

# %%
assert list(diagnosed.values()) == [["height and width swapped"], ["wrong flattening order"], ["axes stacked in the wrong order"]]

# %% [markdown]
# ## 4. A new resolution: two frames
#
# Fine-tuning at a higher resolution, or running on an image of another shape, means another
# number of patches. The table for the new grid can put the new patches in one of two frames:
#
# - **Rescaled: the old field of view.** The new grid covers the same image as the old one, so
#   its patches land *between* the old positions: patch $i$ of $n_\text{new}$ sits at the
#   *stretched* position $(i + \tfrac12)\,n_\text{old}/n_\text{new} - \tfrac12$ in old units (the
#   patch centres line up). Resizing the old table as an image does this: MAE's
#   `interpolate_pos_embed` (bicubic) and timm's `resample_abs_pos_embed` (bicubic with
#   antialiasing by default) resize whatever table a checkpoint holds, learned or sin-cos.
#   diffusers computes its sin-cos table in such a frame from the start: positions
#   $k \cdot \text{base\_size} / (n \cdot \text{interpolation\_scale})$ cover the same span
#   whatever the number of patches $n$ (the corners line up rather than the centres).
# - **Extended: the old patch size.** Patch $i$ keeps position $i$; a smaller grid is a crop of the
#   old one, a larger grid reaches positions that were never there before. RT-DETR builds its
#   table this way, at integer positions for whatever grid of features an image gives.
#
# For a sin-cos table both frames can be computed exactly: `grid_encoding` takes `positions`.
# First, how far is the resize from the exact rescaled table? timm's resize applied to a
# 6 x 8 MAE table (its class row kept aside) to make 12 x 16, against MAE's formula at the
# stretched positions. `posenc.torch.resample_abs_pos_embed` makes the same calls as timm.

# %%
old, new, d = (6, 8), (12, 16), 64
old_table = posenc.torch.grid_encoding(old, d, convention="mae", cls_token=True, dtype=torch.float64)
resized = posenc.torch.resample_abs_pos_embed(old_table, new, old).numpy()
stretched = [(np.arange(n) + 0.5) * o / n - 0.5 for o, n in zip(old, new)]
exact = posenc.grid_encoding(new, d, convention="mae", dtype=np.float64, positions=stretched)
error = np.abs(resized[1:] - exact).reshape(*new, d)
inside = np.logical_and.outer((stretched[0] >= 0) & (stretched[0] <= old[0] - 1),
                              (stretched[1] >= 0) & (stretched[1] <= old[1] - 1))
frequency = 10000.0 ** -(np.arange(d) % (d // 4) / (d // 4))
fig, ax = plt.subplots(figsize=(7, 3))
ax.loglog(frequency, error[~inside].max(axis=0), "o", ms=4, label="border patches (outside the old grid)")
ax.loglog(frequency, error[inside].max(axis=0), "x", ms=5, label="the other patches")
ax.set_xlabel("frequency of the column (radians per patch)")
ax.set_ylabel("largest error of the resize")
ax.set_title("6 x 8 table resized to 12 x 16")
ax.legend()
plt.show()
print("stretched rows:", stretched[0].round(2))
worst = np.unravel_index(error.max(axis=-1).argmax(), new)
print(f"largest error {error.max():.2f} at patch {tuple(map(int, worst))}; "
      f"largest inside the old grid {error[inside].max():.2f}")

# %% [markdown]
# The slow columns come through almost unchanged; the fast ones, which turn by up to a radian
# from one patch to the next, do not: a cubic through samples that far apart cannot follow a
# sine. The error is largest on the border patches: the first and last rows and columns of
# the new grid sit at $-0.25$ and beyond the old last position, outside the old grid, where
# the resize has no samples on one side and extrapolates. The patches one step in come next
# (a cubic reads two old samples on each side, and there one of them lies past the edge);
# further inside, the fast columns are still off by a few hundredths. The class row is
# carried over untouched.

# %%
assert error[~inside].max() > error[inside].max()

# %% [markdown]
# timm's default `antialias=True` is not a detail: even when enlarging, it changes the
# numbers. PyTorch's antialiased bicubic weighs the samples with another cubic (the
# [Keys kernel](https://en.wikipedia.org/wiki/Bicubic_interpolation#Bicubic_convolution_algorithm)
# with $a = -0.5$; plain bicubic uses $a = -0.75$), and MAE's `interpolate_pos_embed` calls
# plain bicubic:

# %%
plain = posenc.torch.resample_abs_pos_embed(old_table, new, old, antialias=False).numpy()
print(f"largest difference, antialias on vs off: {np.abs(resized - plain).max():.2f}")

# %% [markdown]
# For a sin-cos table there is nothing to interpolate: compute it, in the frame you choose.
# The exact rescaled table above comes from `grid_encoding(..., positions=stretched)`; in
# float32 it stays within 2e-7 of the float64 one, the bound `grid_encoding`'s docstring
# promises for float32:

# %%
in_float32 = posenc.grid_encoding(new, d, convention="mae", positions=stretched)
assert np.abs(in_float32 - exact).max() < 2e-7

# %% [markdown]
# ## 5. Trained on one grid, tested on others
#
# Which frame is right depends on what the model learned. A small model finds a marked
# patch: each example is a grid of tokens, one of them carrying a marker, and the model
# answers with the marker's row and column. It sees the tokens only as marker plus position
# encoding, pools them with one attention head, and reads the row and the column off the
# pooled vector, with outputs for up to 16 rows and 24 columns. We train it on an 8 x 12 grid
# with MAE's table; training never shows it a row beyond 7 or a column beyond 11.

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
d, train_shape = 32, (8, 12)
train_table = posenc.torch.grid_encoding(train_shape, d, convention="mae")
model = FindTheMarker(d, 16, 24)
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
for step in range(400):
    marked = torch.randint(0, 96, (64,))
    rows, cols = model(marked, train_table)
    loss = nn.functional.cross_entropy(rows, marked // 12) + nn.functional.cross_entropy(cols, marked % 12)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()

# %% [markdown]
# `answers` marks every patch of a grid once and returns the row and the column the model
# names for each, as `(H, W)` arrays. `found` scores them against the positions a table
# encodes: an answer counts when it is within half a patch of the patch's position on both
# axes. For integer positions that is the exact answer; for rescaled ones, the nearest
# trained position (either one when the position lies halfway).

# %%
def answers(table, shape):
    with torch.no_grad():
        rows, cols = model(torch.arange(shape[0] * shape[1]), table)
    return rows.argmax(-1).numpy().reshape(shape), cols.argmax(-1).numpy().reshape(shape)


def found(answered, positions):
    y, x = np.meshgrid(*positions, indexing="ij")
    return float(np.mean((np.abs(answered[0] - y) <= 0.5) & (np.abs(answered[1] - x) <= 0.5)))


integers = [np.arange(n) for n in train_shape]
print(f"training grid 8 x 12: {found(answers(train_table, train_shape), integers):.2f} of the patches found")

# %% [markdown]
# Now a smaller grid, 6 x 9, and a larger one, 16 x 24, each with four tables: MAE's at
# integer positions (extended); the same walked down the columns (MoCo v3's order); the
# training table resized by timm's function (rescaled, as one would resize a learned
# table); and MAE's formula at the stretched positions (rescaled, exact). Each is scored
# against the new grid's integer coordinates, the labels one would naively use, and the
# rescaled ones also against the stretched positions they encode.

# %%
def stretch(shape):
    return [(np.arange(n) + 0.5) * o / n - 0.5 for o, n in zip(train_shape, shape)]


test_shapes = [(6, 9), (16, 24)]
test_tables = {
    "integer positions": lambda s: posenc.torch.grid_encoding(s, d, convention="mae"),
    "integer, down the columns": lambda s: posenc.torch.grid_encoding(s, d, convention="moco-v3", cls_token=False),
    "resized (timm)": lambda s: posenc.torch.resample_abs_pos_embed(train_table, s, train_shape, num_prefix_tokens=0),
    "exact at stretched positions": lambda s: posenc.torch.grid_encoding(s, d, convention="mae", positions=stretch(s)),
}
answered = {(name, s): answers(build(s), s) for name, build in test_tables.items() for s in test_shapes}
scores = {}
for name in test_tables:
    frames = ["integers", "stretched"] if "stretched" in name or "resized" in name else ["integers"]
    for frame in frames:
        scores[name, frame] = [
            found(answered[name, s], [np.arange(n) for n in s] if frame == "integers" else stretch(s))
            for s in test_shapes
        ]

# %%
# NBVAL_IGNORE_OUTPUT
print(f"{'table':>28}  {'scored against':>14}  {'6 x 9':>6}  {'16 x 24':>7}")
for (name, frame), (small, large) in scores.items():
    print(f"{name:>28}  {frame:>14}  {small:6.2f}  {large:7.2f}")

# %% [markdown]
# On the smaller grid, integer positions are a crop of what the model was trained on: it
# finds the patches. Walked down the columns, most tokens claim another patch's position, and
# the model answers with that patch. The rescaled tables fail against the integer labels,
# but not because the resize is inexact: the exact table at the stretched positions fails
# the same way. Scored against the positions they encode, both find the patches. The
# model reads a rescaled table in the frame it learned and answers in old units. Row by row
# on the 6 x 9 grid (the resized table), the answer most often given against the
# stretched position:

# %%
# NBVAL_IGNORE_OUTPUT
resized_rows = answered["resized (timm)", (6, 9)][0]
typical = [int(np.bincount(r).argmax()) for r in resized_rows]
print("new row:        ", list(range(6)))
print("stretched row:  ", stretch((6, 9))[0].round(2).tolist())
print("model's answer: ", typical)

# %%
assert np.all(np.abs(np.array(typical) - stretch((6, 9))[0]) <= 0.5)

# %% [markdown]
# The larger grid shows what each frame costs. Rescaled, every answer is the trained
# position nearest to the stretched one, so two neighbouring new patches get the same
# answer: the model sees the new grid at the old grid's resolution.
# Extended, the patches within the old 8 x 12 block are found, and none of the others: their
# positions never occurred in training, and the model answers with a trained row and column
# even where outputs for rows up to 15 and columns up to 23 exist.

# %%
rows_16, cols_16 = answered["integer positions", (16, 24)]
y, x = np.mgrid[:16, :24]
within = (y < 8) & (x < 12)
hit = (rows_16 == y) & (cols_16 == x)
print(f"extended, inside the old block: {hit[within].mean():.2f} found; outside: {hit[~within].mean():.2f}")
print("largest row answered:", int(rows_16.max()), "· largest column answered:", int(cols_16.max()))
distinct = len(set(zip(*(a.ravel() for a in answered["exact at stretched positions", (16, 24)]))))
print(f"rescaled: {distinct} different answers for {16 * 24} patches")

# %%
assert distinct <= train_shape[0] * train_shape[1]  # at most one answer per trained position

# %% [markdown]
# Neither frame is "correct": they answer different questions. Rescaling keeps positions
# inside what the model knows and names places as fractions of the image, at the old grid's
# resolution: the frame for the same picture seen at another resolution. Extending keeps the
# patch size and names places in patches: the frame for a larger image that shows *more*,
# but positions outside the trained range are new to the model, and this one never names
# them. Whatever reads the model's answers (here, the labels) must use the table's frame.
#
# ## Summary
#
# - A grid becomes a sequence row by row; a table built from `meshgrid(w, h, indexing="ij")`
#   walks down the columns (MoCo v3, the original RT-DETR code), which is invisible on square
#   grids and gives most tokens another patch's position on the others.
# - In MAE's table the dot product of two patches depends on the 2-D offset only and is a sum
#   of a column part and a row part: a plus-shaped picture.
# - Published grid tables differ in column order only (transformers' RT-DETR, timm: the same
#   dot products as MAE), in positions by a shift (DETR's defaults: the same dot products),
#   in token order (MoCo v3 on non-square grids), or in frequencies and position scales
#   (big_vision, simple ViT, diffusers, DETR normalised). `identify_grid` names the
#   convention of a frozen table, `diagnose_grid` the mistake behind a wrong one.
# - A new grid size needs a frame: rescaled to the old field of view (a resize; MAE's
#   `interpolate_pos_embed`, timm, diffusers' `interpolation_scale`) or extended at the old
#   patch size (integer positions, as RT-DETR rebuilds its table). A resize of a sin-cos
#   table is inexact, worst at the border patches where it extrapolates; `grid_encoding` with
#   `positions` computes either frame exactly.
# - A model trained on one grid reads a rescaled table in its own frame and answers in old
#   units, at the old resolution; on an extended grid it finds the patches it was trained on
#   and none beyond.
#
# ## Exercises
#
# ### Exercise 1 · Find the flattening mistake and fix it
#
# The function below is meant to write MAE's table for a grid of `height x width` patches
# (tokens row by row, columns `[sin x, cos x, sin y, cos y]`). It has one mistake. Build a
# non-square table with it and ask `diagnose_grid` what is wrong, then fix the function and
# check it with `nb09.mae_table.check(mae_table)`. `nb09.mae_table.hint()` and
# `nb09.mae_table.solution()` are there when you are stuck.

# %%
def mae_table(height, width, d):
    quarter = d // 4
    frequencies = 10000.0 ** (-np.arange(quarter) / quarter)
    x, y = np.meshgrid(np.arange(width), np.arange(height), indexing="ij")
    x = x.reshape(-1, 1) * frequencies
    y = y.reshape(-1, 1) * frequencies
    return np.concatenate([np.sin(x), np.cos(x), np.sin(y), np.cos(y)], axis=1)


print(posenc.diagnose_grid(mae_table(6, 10, 64), (6, 10), "mae"))

# %%
nb09.mae_table.check(mae_table)

# %% [markdown]
# ### Exercise 2 · A larger grid in the old grid's frame
#
# A model was trained on an `old` grid (rows, columns). Write `rescaled_table(old, new, d)`:
# MAE's table for the `new` grid, with the positions of the rescaled frame, so that the
# model reads the new patches where they lie in the image it knows (the frame a resize uses,
# computed exactly). The check tries several grids, larger and smaller, and says which frame
# your table encodes when it is not this one. `nb09.rescaled_table.hint()` and
# `nb09.rescaled_table.solution()` help.

# %%
def rescaled_table(old, new, d):
    positions = [np.arange(n) * o / n for o, n in zip(old, new)]
    return posenc.grid_encoding(new, d, convention="mae", positions=positions)


nb09.rescaled_table.check(rescaled_table)

# %% [markdown]
# When it passes, try it on the model of section 5:
# `found(answers(torch.tensor(rescaled_table(train_shape, (16, 24), d), dtype=torch.float32), (16, 24)), stretch((16, 24)))`
# gives the score of the exact rescaled table there.
#
# ## Cross-checks
#
# The claims above once more, with the numbers the prose states.

# %%
# Cross-checks of sections 1 and 2
# Section 1: the first four tokens (the top row) claim x = 0, 0, 0, 1; only the first and the last keep their own position.
assert list(claimed_x[:4]) == [0, 0, 0, 1] and list(token_column[:4]) == [0, 1, 2, 3]
assert wrong == 10
# A wrong flattening order on a non-square grid moves entries by up to 2 (a sine against another sine).
moco = posenc.grid_encoding((6, 9), 64, convention="moco-v3", cls_token=False)
assert np.abs(moco - posenc.grid_encoding((6, 9), 64, convention="rt-detr")).max() > 1.5
# Section 2: the patch is its own nearest patch in both orders, and the two orders give other pictures.
assert np.unravel_index(np.argmax(sim[patch]), (H, W)) == patch
scattered = posenc.grid_encoding((H, W), 128, convention="moco-v3", cls_token=False)
assert np.unravel_index(np.argmax(scattered @ scattered[patch[0] * W + patch[1]]), (H, W)) == patch
assert not np.allclose(scattered @ scattered[4 * W + 7], mae @ mae[4 * W + 7], atol=0.1)

# %%
# Cross-checks of section 3: the groups. MAE identical; rt-detr and timm: MAE's columns reordered, same dot products;
# detr (defaults): other numbers, same dot products; moco-v3, big_vision, simple-vit, diffusers: other dot products.
assert comparison["mae"] == (0.0, True, True)
assert [n for n, c in comparison.items() if c[2]] == ["mae", "rt-detr", "timm", "detr"]
assert not comparison["detr"][1]
assert all(comparison[n][0] > 1.5 for n in ("moco-v3", "rt-detr", "timm", "detr", "diffusers"))
assert 0.1 < comparison["big_vision"][0] < 0.5  # one frequency step fewer: a drift, not a reordering
assert np.array_equal(tables["big_vision"], tables["simple-vit"])
# DETR as its model builds it (normalize=True) and MoCo v3's tokens: other dot products than MAE's.
detr = posenc.grid_encoding(shape, 64, convention="detr", normalize=True)
assert np.abs(detr @ detr.T - reference @ reference.T).max() > 1
assert identified["mae"].prefix_rows == 1 and identified["moco-v3"].prefix_rows == 1
assert "timm, interleave_sin_cos=True" in identified["rt-detr"].matches
assert "timm, reverse_coord=True, interleave_sin_cos=True" in identified["moco-v3"].matches

# %%
# Cross-checks of section 4: the resize loses the fast columns (more than 0.05), keeps the slowest (below 1e-3),
# is worst (0.17) on the border, keeps the class row; antialiasing changes the result by 0.05.
assert error.max() > 0.05 and error[..., 64 // 4 - 1].max() < 1e-3  # column 15: the slowest x sine at d = 64
assert round(float(error.max()), 2) == 0.17 and not inside[worst]
assert np.array_equal(resized[0], old_table[0].numpy())
assert stretched[0][0] == -0.25 and stretched[0][-1] > old[0] - 1
assert round(float(np.abs(resized - plain).max()), 2) == 0.05
# The two kernels: enlarging a single 1 twice, the weights are Keys' cubic at a = -0.75 (plain) and a = -0.5 (antialiased).
def keys(t, a):
    t = np.abs(t)
    return np.where(t <= 1, (a + 2) * t**3 - (a + 3) * t**2 + 1, np.where(t < 2, a * (t**3 - 5 * t**2 + 8 * t - 4), 0))
impulse = torch.zeros(1, 1, 1, 12)
impulse[..., 6] = 1
offsets = (np.arange(24) + 0.5) / 2 - 0.5 - 6
for antialias, a in [(False, -0.75), (True, -0.5)]:
    weights = nn.functional.interpolate(impulse, size=(1, 24), mode="bicubic", antialias=antialias)[0, 0, 0].numpy()
    assert np.allclose(weights, keys(offsets, a), atol=1e-6)

# %%
# Cross-checks of section 5 and of the exercises
# Section 5: the bounds are "nearly all" (at least 95 %) and "hardly any" (at most 10 %) of the patches.
assert scores["integer positions", "integers"][0] >= 0.95
assert found(answers(train_table, train_shape), integers) >= 0.95
assert scores["integer, down the columns", "integers"][0] <= 0.1
for name in ("resized (timm)", "exact at stretched positions"):
    assert max(scores[name, "integers"]) <= 0.1 and min(scores[name, "stretched"]) >= 0.95
# 16 x 24 at integer positions: the old block found, nothing beyond, no untrained row or column named.
assert hit[within].mean() >= 0.95 and hit[~within].mean() == 0
assert rows_16.max() < 8 and cols_16.max() < 12
assert distinct == 96  # each trained position names four new patches
# Walked down the columns, token k claims patch (k % 6, k // 6) of the 6 x 9 grid, and the model names that patch.
claimed = np.arange(54).reshape(6, 9)
walked_rows, walked_cols = answered["integer, down the columns", (6, 9)]
assert np.mean((walked_rows == claimed % 6) & (walked_cols == claimed // 6)) >= 0.95
# The exercises' reference solutions are MAE's table and the exact rescaled one of section 5.
assert np.allclose(nb09.mae_table_solution(6, 10, 64), posenc.grid_encoding((6, 10), 64, convention="mae"), atol=1e-6)
rescaled = nb09.rescaled_table_solution(train_shape, (16, 24), d)
assert np.allclose(rescaled, test_tables["exact at stretched positions"]((16, 24)).numpy(), atol=1e-6)
rescaled = torch.tensor(rescaled, dtype=torch.float32)
assert found(answers(rescaled, (16, 24)), stretch((16, 24))) == scores["exact at stretched positions", "stretched"][1]
