# %% [markdown]
# # 05 · Conventions in the wild
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/posenc-org/posenc/blob/main/notebooks/05_conventions.ipynb)
#
# The sinusoidal encoding ships in a dozen variants. Some put all the sines first, some
# use slightly different frequencies, some pad odd widths with zeros, one zeroes a padding
# row. Port a checkpoint or read two tutorials and the numbers disagree. This notebook lines
# the variants up, measures how far apart they are, shows that a layout change is only a
# permutation that a linear layer absorbs, and lets `posenc.identify` say which convention
# a table follows.

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
import posenc.plot

np.set_printoptions(precision=4, suppress=True)

# %% [markdown]
# ## The zoo
#
# Each preset reproduces one project's numbers; `list_conventions` says where each comes from.

# %%
for preset in posenc.list_conventions():
    print(f"{preset.name:20} {preset.source}")

# %% [markdown]
# Side by side, 100 positions of a 64-wide table. The interleaved tables show fine stripes
# (sine and cosine alternate); the others show two blocks, sines then cosines, or the reverse.

# %%
shown = ["paper", "hf-marian", "tensor2tensor", "fairseq", "whisper", "diffusers"]
fig, axes = plt.subplots(2, 3, figsize=(12, 6), sharey=True)
for name, ax in zip(shown, axes.flat):
    posenc.plot.heatmap(posenc.positional_encoding(100, 64, convention=name), ax=ax, colorbar=False, title=name)
fig.tight_layout()
plt.show()

# %% [markdown]
# Many names write the same numbers. Grouping the presets by their table at width 64:

# %%
groups = {}
for preset in posenc.list_conventions():
    table = posenc.positional_encoding(50, 64, convention=preset.name)
    key = next((k for k in groups if np.array_equal(groups[k][0], table)), preset.name)
    groups.setdefault(key, (table, []))[1].append(preset.name)
for _, names in groups.values():
    print(", ".join(names))

# %% [markdown]
# Four tables, two axes of difference: the layout, and the frequencies. fairseq differs
# from tensor2tensor only in row 1, its padding position:

# %%
t2t = posenc.positional_encoding(50, 64, convention="tensor2tensor")
fairseq = posenc.positional_encoding(50, 64, convention="fairseq")
print(np.flatnonzero((t2t != fairseq).any(axis=1)), np.abs(fairseq[1]).max())

# %% [markdown]
# ## The frequency gap: paper versus "h-1"
#
# The paper uses $w_j = 10000^{-2j/d}$; tensor2tensor (and fairseq, Whisper, diffusers by
# default) uses $w_j = 10000^{-j/(h-1)}$ with $h = d/2$, so that the lowest frequency is
# exactly $10^{-4}$. That is a different function, not a rounding difference:

# %%
d_model = 512
paper_w = posenc.conventions.resolve("paper").frequencies(d_model)
h1_w = posenc.conventions.resolve("tensor2tensor").frequencies(d_model)
gap = h1_w / paper_w - 1
print(f"lowest frequencies: {paper_w[-1]:.4e} (paper), {h1_w[-1]:.4e} (h-1)")
print(f"largest relative gap: {np.abs(gap).max():.4f} at j = {np.abs(gap).argmax()}")

# %%
fig, (left, right) = plt.subplots(1, 2, figsize=(11, 3.5))
left.semilogy(paper_w, label="paper: 10000^(-2j/d)")
left.semilogy(h1_w, "--", label="h-1: 10000^(-j/(h-1))")
left.set(xlabel="pair j", ylabel="frequency w_j", title="d_model = 512")
left.legend()
right.plot(100 * gap)
right.set(xlabel="pair j", ylabel="h-1 / paper - 1 (%)", title="the gap grows to the lowest frequency")
fig.tight_layout()
plt.show()

# %% [markdown]
# Both are geometric sequences starting at 1, so "h-1" is the paper's formula with another
# base, $10000^{h/(h-1)}$. Over 5000 positions the lowest pairs of
# the two tables drifts far apart:

# %%
h = d_model // 2
same_base = 10000 ** (h / (h - 1))
print(round(same_base, 1), np.allclose(posenc.conventions.resolve("paper", base=same_base).frequencies(d_model), h1_w, rtol=1e-14))
far = np.abs(
    posenc.positional_encoding(5000, d_model, layout="sin_cos") - posenc.positional_encoding(5000, d_model, convention="tensor2tensor")
).max()
print(f"largest difference between the two tables: {far:.2f}")

# %% [markdown]
# ## A layout is a permutation
#
# `layout_permutation` gives the index array that takes one layout to another. For $d = 8$,
# interleaved $(s_0, c_0, s_1, c_1, \dots)$ to all-sines-first:

# %%
perm = posenc.layout_permutation(8, "interleaved", "sin_cos")
print(perm)
interleaved = posenc.positional_encoding(20, 8)
print(np.array_equal(interleaved[:, perm], posenc.positional_encoding(20, 8, layout="sin_cos")))

# %% [markdown]
# So it cannot matter to a model, as long as the layer that reads the table has its weights
# permuted to match. A tiny linear layer, trained on the interleaved table, ported to the
# sin_cos one with `convert_layout` on its input axis, gives the same outputs:

# %%
import torch

torch.manual_seed(0)
layer = torch.nn.Linear(8, 3, dtype=torch.float64)
ported = torch.nn.Linear(8, 3, dtype=torch.float64)
with torch.no_grad():
    ported.weight.copy_(posenc.convert_layout(layer.weight, "interleaved", "sin_cos"))
    ported.bias.copy_(layer.bias)
pe = torch.from_numpy(posenc.positional_encoding(20, 8, dtype=np.float64))
before = layer(pe)
after = ported(posenc.convert_layout(pe, "interleaved", "sin_cos"))
print(before.shape, bool(torch.allclose(before, after, rtol=0, atol=1e-14)))

# %% [markdown]
# ## Odd widths
#
# The formula defines every column of an odd width (the last one is a sine), but sources
# differ: some pad with a zero column, and two refuse. Width 7, last column, first 4 rows:

# %%
for preset in posenc.list_conventions():
    try:
        last = posenc.positional_encoding(4, 7, convention=preset.name)[:, -1]
        print(f"{preset.name:20} {last}")
    except ValueError as error:
        print(f"{preset.name:20} ValueError: {str(error).split(': ')[1][:60]}...")

# %% [markdown]
# ## Which convention is this table?
#
# `identify` fits every preset to a table (its base from the lowest frequency, its offset
# from the first row) and keeps those that rebuild it within float32 error. Here it reads
# tables made with non-default options; for each we print the name and the parameters found.

# %%
examples = [
    ("paper", {}),
    ("hf-marian", {}),
    ("tensor2tensor", {"start_index": 7}),
    ("fairseq", {"padding_idx": 0}),
    ("keras-hub", {"max_wavelength": 500}),
    ("diffusers", {"flip_sin_to_cos": True, "downscale_freq_shift": 0.5}),
]
for name, options in examples:
    found = posenc.identify(posenc.positional_encoding(200, 64, convention=name, **options))
    c = found.convention
    extra = f"  shift {c.shift:g}" if c.rule == "h-1" else ""
    extra += "" if c.padding_idx is None else f"  padding_idx {c.padding_idx}"
    print(f"{name:14} -> {found.name:14} {c.layout:12} {c.rule:6} base {c.base:<6g} offset {c.offset:g}{extra}")

# %% [markdown]
# keras-hub with `max_wavelength=500` comes back as "paper" with base 500: the same numbers,
# and `found.matches` lists keras-hub among the presets that write them.

# %% [markdown]
# Stable Diffusion's timestep embedding (`flip_sin_to_cos=True, downscale_freq_shift=0`)
# turns out to be the paper's table in cos_sin order:

# %%
sd = posenc.positional_encoding(200, 64, convention="diffusers", flip_sin_to_cos=True, downscale_freq_shift=0)
found = posenc.identify(sd)
print(found.name, found.convention.layout, found.convention.base, len(found.matches))

# %% [markdown]
# And it says "none" when nothing fits: a random table, or a real one with one column nudged
# by 0.01.

# %%
rng = np.random.default_rng(0)
nudged = posenc.positional_encoding(200, 64, convention="whisper")
nudged[:, 10] += 0.01
for table in (rng.uniform(-1, 1, size=(200, 64)), nudged):
    found = posenc.identify(table)
    print(found.name, found.matches, found.max_deviation > found.tolerance)
