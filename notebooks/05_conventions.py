# %% [markdown]
# # 05 · One encoding, eleven conventions: how projects' sinusoidal tables differ
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/posenc-org/posenc/blob/main/notebooks/05_conventions.ipynb)
#
# The sinusoidal encoding ships in many variants; `posenc` reproduces eleven of them. Some
# put all the sines first, some use slightly different frequencies, some pad odd widths with
# zeros, one zeroes a padding row. Port a checkpoint or read two tutorials and the numbers
# disagree. This notebook lines the variants up, measures how far apart they are, shows
# that a layout change is a permutation of the columns, which a trained model absorbs when
# its embedding and every weight and norm on its residual stream are permuted the same way,
# and lets `posenc.identify` say which convention a table follows.

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
assert len(posenc.list_conventions()) == 11

# %% [markdown]
# Side by side, 100 positions of a 64-wide table. The interleaved tables show fine stripes
# (sine and cosine alternate); the other five show two blocks, sines then cosines
# (diffusers' `flip_sin_to_cos=True` puts the cosines first).

# %%
shown = ["paper", "hf-marian", "tensor2tensor", "fairseq", "whisper", "diffusers"]
fig, axes = plt.subplots(2, 3, figsize=(12, 6), sharey=True)
for name, ax in zip(shown, axes.flat):
    posenc.plot.heatmap(posenc.positional_encoding(100, 64, convention=name), ax=ax, colorbar=False, title=name)
fig.tight_layout()
plt.show()
assert [posenc.conventions.resolve(name).layout for name in shown] == ["interleaved"] + ["sin_cos"] * 5
assert posenc.conventions.resolve("diffusers", flip_sin_to_cos=True).layout == "cos_sin"

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
assert len(groups) == 4

# %% [markdown]
# Four tables. The first three differ in the layout (interleaved or sines first) and in the
# frequencies (the paper's or "h-1", below); fairseq differs from tensor2tensor only in
# row 1, its padding position, which it sets to zeros:

# %%
t2t = posenc.positional_encoding(50, 64, convention="tensor2tensor")
fairseq = posenc.positional_encoding(50, 64, convention="fairseq")
assert np.flatnonzero((t2t != fairseq).any(axis=1)).tolist() == [1] and not fairseq[1].any()
heads = {name: posenc.conventions.resolve(name) for name in groups}
assert [(c.layout, c.rule) for c in heads.values()][:3] == [("interleaved", "paper"), ("sin_cos", "paper"), ("sin_cos", "h-1")]

# %% [markdown]
# ## The frequency gap: paper versus "h-1"
#
# The paper uses $w_j = 10000^{-2j/d}$; tensor2tensor (and fairseq, Whisper, diffusers by
# default) uses $w_j = 10000^{-j/(h-1)}$ with $h = d/2$, so that the lowest frequency is
# exactly $10^{-4}$. That is a different function, not a rounding difference: at
# $d = 512$ the paper's lowest frequency is $1.0366 \cdot 10^{-4}$, and the two differ by
# up to 3.5 %, at the lowest frequency, $j = 255$.

# %%
d_model = 512
paper_w = posenc.conventions.resolve("paper").frequencies(d_model)
h1_w = posenc.conventions.resolve("tensor2tensor").frequencies(d_model)
gap = h1_w / paper_w - 1
assert f"{paper_w[-1]:.4e}" == "1.0366e-04" and h1_w[-1] == 1e-4
assert round(100 * np.abs(gap).max(), 1) == 3.5 and np.abs(gap).argmax() == 255

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
# base, $10000^{h/(h-1)}$, about 10 367.8 at $d = 512$. Over 5000 positions the lowest
# pairs of the two tables drift completely apart: the largest difference between them is
# 2.00, a sine at $+1$ in one table and $-1$ in the other.

# %%
h = d_model // 2
same_base = 10000 ** (h / (h - 1))
np.testing.assert_allclose(posenc.conventions.resolve("paper", base=same_base).frequencies(d_model), h1_w, rtol=1e-14)
far = np.abs(
    posenc.positional_encoding(5000, d_model, layout="sin_cos") - posenc.positional_encoding(5000, d_model, convention="tensor2tensor")
).max()
assert round(same_base, 1) == 10367.8 and round(far, 2) == 2.0

# %% [markdown]
# ## A layout is a permutation
#
# `layout_permutation` gives the index array that takes one layout to another. For $d = 8$,
# interleaved $(s_0, c_0, s_1, c_1, \dots)$ to all-sines-first:

# %%
perm = posenc.layout_permutation(8, "interleaved", "sin_cos")
print(perm)
interleaved = posenc.positional_encoding(20, 8)
assert np.array_equal(interleaved[:, perm], posenc.positional_encoding(20, 8, layout="sin_cos"))

# %% [markdown]
# So a model trained with one layout can be moved to another exactly, but not by fixing one
# layer. The table is added to the token embeddings, and the sum travels through the whole
# model in the *residual stream*: every block reads it and adds its output back to it. A
# permutation of the table's columns is a permutation of that stream, so everything that
# touches the stream must be permuted the same way: the embedding's columns, the input
# axis of every weight that reads the stream, the output axis (and bias) of every weight
# that writes to it, and the scale and shift of every layer norm (a layer norm averages
# over all features, so it does not care about their order). Weights inside a block, such
# as the attention heads' own axes or the feed-forward's hidden units, stay as they are.
#
# We train the small model of notebook 07 (token embedding, the sinusoidal table, one
# Transformer encoder layer, a linear head) on its task from `posenc.lessons`, copying
# the previous token, with the interleaved table, then move it to the sin_cos table.

# %%
import torch
from torch import nn

import posenc.torch
from posenc.lessons import BATCH, STEPS, TRAIN_LENGTH, VOCAB, accuracy, copy_previous_task, predict, train

torch.manual_seed(0)
WIDTH = 32


def tiny_transformer(layout):
    encoder = nn.TransformerEncoderLayer(WIDTH, 4, 64, dropout=0.0, batch_first=True)
    positions = posenc.torch.PositionalEncoding(WIDTH, layout=layout)
    return nn.Sequential(nn.Embedding(VOCAB, WIDTH), positions, encoder, nn.Linear(WIDTH, VOCAB))


# %%
model = tiny_transformer("interleaved")
train(model, *copy_previous_task(np.random.default_rng(1), STEPS * BATCH, TRAIN_LENGTH), steps=STEPS)
test_tokens, test_targets = copy_previous_task(np.random.default_rng(2), 1000, TRAIN_LENGTH)


def held_out_accuracy(model):
    return accuracy(predict(model, test_tokens), test_targets)


assert held_out_accuracy(model) > 0.9

# %% [markdown]
# The port: every parameter named after what it does to the stream. In PyTorch's encoder
# layer `self_attn.in_proj_weight` and `linear1.weight` read the stream (input axis, the
# last), `self_attn.out_proj` and `linear2` write to it (output axis, the first, and their
# biases), `norm1` and `norm2` act on it; the embedding's rows are vectors in the stream
# and the head reads it. In float64 the ported model's logits on 1000 test sequences equal
# the trained model's to $10^{-12}$ (the sums add the same terms in another order).

# %%
READS = {"2.self_attn.in_proj_weight", "2.linear1.weight", "3.weight"}  # [:, perm]
IN_STREAM = {"0.weight"}  # rows are stream vectors: [:, perm]
WRITES = {"2.self_attn.out_proj.weight", "2.linear2.weight"}  # [perm, :]
VECTORS = {"2.self_attn.out_proj.bias", "2.linear2.bias", "2.norm1.weight", "2.norm1.bias",
           "2.norm2.weight", "2.norm2.bias"}  # [perm]


def port(model, source, target):
    """A copy of `model` for the `target` table, its residual stream permuted to match."""
    ported = tiny_transformer(target)
    state = {}
    for name, weight in model.state_dict().items():
        if name in READS | IN_STREAM | VECTORS:
            weight = posenc.convert_layout(weight, source, target, axis=-1)
        elif name in WRITES:
            weight = posenc.convert_layout(weight, source, target, axis=0)
        state[name] = weight
    ported.load_state_dict(state)
    return ported.eval()


# %%
ported = port(model, "interleaved", "sin_cos")
model64, ported64 = model.double(), ported.double()
with torch.no_grad():
    logits, ported_logits = (m(torch.from_numpy(test_tokens)) for m in (model64, ported64))
largest = (logits - ported_logits).abs().max().item()
assert largest < 1e-12 and torch.equal(logits.argmax(-1), ported_logits.argmax(-1))

# %% [markdown]
# (The table itself is not in the state: `PositionalEncoding` keeps it as a non-persistent
# buffer, built for its own layout.) Permuting the table alone, or the table and the
# embedding but nothing after it, breaks the trained model; the accuracy on copying the
# previous token falls far below what it was:

# %%
table_only = tiny_transformer("sin_cos").double()
embedding_only = tiny_transformer("sin_cos").double()
for partial, state in [(table_only, model64.state_dict()),
                       (embedding_only, {**model64.state_dict(), "0.weight": ported64.state_dict()["0.weight"]})]:
    partial.load_state_dict(state)
    partial.eval()

# %%
# NBVAL_IGNORE_OUTPUT
accuracies = {name: held_out_accuracy(m) for name, m in
              [("trained", model64), ("ported", ported64), ("table only", table_only),
               ("table and embedding", embedding_only)]}
print("   ".join(f"{name}: {value:.2f}" for name, value in accuracies.items()))

# %% [markdown]
# The exact values depend on the platform's round-off in training; what they show is
# checked here: the ported model is exactly as accurate as the trained one (its logits
# agree to $10^{-12}$, above), the two partial ports fall below 0.5.

# %%
assert accuracies["ported"] == accuracies["trained"]
assert accuracies["table only"] < 0.5 and accuracies["table and embedding"] < 0.5

# %% [markdown]
# ## Odd widths
#
# The formula defines every column of an odd width (the last one is a sine), but sources
# differ: three pad with a zero column, and two refuse. Width 7, last column, first 4 rows:

# %%
padded, refused = [], []
for preset in posenc.list_conventions():
    try:
        last = posenc.positional_encoding(4, 7, convention=preset.name)[:, -1]
        print(f"{preset.name:20} {last}")
        padded += [preset.name] if not last.any() else []
    except ValueError as error:
        print(f"{preset.name:20} ValueError: {str(error).split(': ')[1][:60]}...")
        refused.append(preset.name)
assert len(padded) == 3 and len(refused) == 2

# %% [markdown]
# hf-marian (and the April 2019 TensorFlow tutorial) end on a column near 1, a cosine:
# their layout puts all sines first, and the sines take $\lceil 7/2 \rceil = 4$ columns,
# the cosines the remaining 3. The last column is then the cosine of pair 2, of frequency
# $10000^{-4/7}$, and the lone sine of pair 3 sits in column 3.

# %%
marian = posenc.positional_encoding(4, 7, convention="hf-marian")
p = np.arange(4)[:, None]
np.testing.assert_allclose(marian[:, -1], np.cos(p[:, 0] * 10000 ** (-4 / 7)), atol=1e-7)
np.testing.assert_allclose(marian[:, 3], np.sin(p[:, 0] * 10000 ** (-6 / 7)), atol=1e-7)

# %% [markdown]
# ## Which convention is this table?
#
# `identify` fits every preset to a table (its base from the lowest frequency, its offset
# from the first row) and keeps those that rebuild it within float32 error. Here it reads
# tables made with non-default options; for each we print the name and the parameters
# found, and check that the name is the source's and that those parameters rebuild the
# table.

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
    made = posenc.positional_encoding(200, 64, convention=name, **options)
    found = posenc.identify(made)
    c = found.convention
    extra = f"  shift {c.shift:g}" if c.rule == "h-1" else ""
    extra += "" if c.padding_idx is None else f"  padding_idx {c.padding_idx}"
    print(f"{name:14} -> {found.name:14} {c.layout:12} {c.rule:6} base {c.base:<6g} offset {c.offset:g}{extra}")
    assert found.name == name
    np.testing.assert_allclose(posenc.positional_encoding(200, 64, convention=c), made, atol=found.tolerance)

# %% [markdown]
# Several presets write the same numbers (the default "paper" table is also "hf-xlm",
# "keras-hub" and "tf-tutorial-2019"), and most tables can be rebuilt by several presets
# once their parameters are changed. `identify` ranks first the presets whose *source* can
# write the table through its own options: keras-hub takes `max_wavelength`, the paper has
# no such option, so the table above is "keras-hub" alone, not "paper with base 500".
#
# Stable Diffusion's timestep embedding (`flip_sin_to_cos=True, downscale_freq_shift=0`)
# shows why that matters. Its frequencies $10000^{-j/h}$ are the paper's, in cos_sin order.
# Each of the seven paper-rule presets rebuilds it with `layout="cos_sin"` (an earlier
# `identify` named "paper" and listed all seven as matches), but none of their sources
# writes that layout; diffusers writes it with its own options, and is the one named:

# %%
sd = posenc.positional_encoding(200, 64, convention="diffusers", flip_sin_to_cos=True, downscale_freq_shift=0)
found = posenc.identify(sd)
print(f"layout {found.convention.layout}, rule {found.convention.rule}, shift {found.convention.shift:g}, base {found.convention.base:g}")
paper_rule = [name for name in posenc.conventions.NAMES if posenc.conventions.resolve(name).rule == "paper"]
assert len(paper_rule) == 7 and found.matches == ("diffusers",)
for name in paper_rule:
    assert np.abs(sd - posenc.positional_encoding(200, 64, convention=name, layout="cos_sin")).max() < 1e-6

# %% [markdown]
# And it says "none" when nothing fits: a random table, or a real one with one column nudged
# by 0.01.

# %%
rng = np.random.default_rng(0)
nudged = posenc.positional_encoding(200, 64, convention="whisper")
nudged[:, 10] += 0.01
for table in (rng.uniform(-1, 1, size=(200, 64)), nudged):
    found = posenc.identify(table)
    assert found.name is None and found.matches == () and found.max_deviation > found.tolerance
