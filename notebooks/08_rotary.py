# %% [markdown]
# # 08 · From sinusoidal to rotary: RoPE
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/posenc-org/posenc/blob/main/notebooks/08_rotary.ipynb)
#
# Nearly every recent language model uses rotary position embedding (RoPE) instead of an
# added table. RoPE takes the frequencies of the sinusoidal encoding and uses them to
# *rotate* queries and keys. This notebook shows why that is an improvement, the two ways
# the channels are paired and how checkpoints move between them, the frequency rules that
# stretch a model to longer contexts, the precision traps of long positions, and the
# copy task of notebook 07 with RoPE beside the other three choices.
#
# **Question:** Why do recent language models rotate their queries and keys instead of adding a position table, and what must a port of RoPE get right?
#
# **You will be able to:**
# - show that rotated queries and keys give attention scores that depend on the offset only;
# - rotate a query by hand in the half layout and tell it from the interleaved one;
# - move a checkpoint between the two layouts by permuting the rows of $W_q$ and $W_k$;
# - work out the wavelength of any pair under the frequency rules for long contexts;
# - recognise the precision traps of cos and sin at long positions.
#
# **Prerequisites:** notebooks 04 and 07 · **Time:** about 90 minutes

# %%
# On Colab, install posenc from GitHub; elsewhere `make lab` has already installed it.
import sys

if "google.colab" in sys.modules:
    # %pip install --quiet "posenc @ git+https://github.com/posenc-org/posenc@main"

# %% [markdown]
# PyTorch is the main framework here; NumPy and TensorFlow are checked against it at the
# end. One thread and deterministic algorithms make every run on a machine repeat exactly.

# %%
# %matplotlib inline
import copy
import time

import matplotlib.pyplot as plt
import mpmath
import numpy as np
import torch
from torch import nn

import posenc
import posenc.torch
from posenc.lessons import (
    BATCH, STEPS, TRAIN_LENGTH, VOCAB, LearnedPositions, accuracy, copy_previous_task, first_step_above,
    order_blind_ceiling, predict, train,
)

torch.set_num_threads(1)
torch.use_deterministic_algorithms(True)
torch.manual_seed(0)
started = time.perf_counter()

# %% [markdown]
# ## 1. An added position vector mixes content and position
#
# With the sinusoidal encoding, token $x_p$ at position $p$ enters the model as
# $x_p + PE_p$. Attention compares two such vectors by a dot product, which splits into four
# terms:
#
# $$(x_p + PE_p)\cdot(x_s + PE_s) = \underbrace{x_p\cdot x_s}_{\text{content}}
#   + \underbrace{x_p\cdot PE_s + PE_p\cdot x_s}_{\text{content and position}}
#   + \underbrace{PE_p\cdot PE_s}_{\text{position}}.$$
#
# We put two random token vectors ($d = 64$) at positions 5 and 2, then move the same two
# tokens to 105 and 102: the same offset of 3.

# %%
D = 64
rng = np.random.default_rng(0)
x_a, x_b = rng.standard_normal((2, D))


def four_terms(p, s):
    pe_p, pe_s = posenc.encode([p, s], D, dtype=np.float64)
    return {"content": x_a @ x_b, "content·position": x_a @ pe_s + pe_p @ x_b, "position": pe_p @ pe_s,
            "score": (x_a + pe_p) @ (x_b + pe_s)}


near, far = four_terms(5, 2), four_terms(105, 102)
print(f"{'':>17}  {'p, s = 5, 2':>12}  {'105, 102':>9}")
for name in near:
    print(f"{name:>17}  {near[name]:12.3f}  {far[name]:9.3f}")

# %% [markdown]
# The four terms add up to the score. The content term is the same at both places, and so
# is the position term: $PE_p \cdot PE_s = \sum_i \cos((p - s)\,w_i)$ depends on the offset
# only (notebook 04), here to float64 round-off. The two mixed terms do not, and they move
# the score although nothing but the absolute position changed.

# %%
assert abs(near["position"] - far["position"]) < 1e-12, "PE_p · PE_s depends on p - s only"

# %% [markdown]
# In a real attention layer the vectors first pass through the query and key projections
# $W_q$, $W_k$. Then even the position term, $PE_p W_q^\top W_k PE_s$, depends on where the
# pair sits, not only on its offset:

# %%
W_q, W_k = rng.standard_normal((2, D, D)) / np.sqrt(D)


def projected_position_term(p, s):
    pe_p, pe_s = posenc.encode([p, s], D, dtype=np.float64)
    return (W_q @ pe_p) @ (W_k @ pe_s)


print(f"position term with projections: {projected_position_term(5, 2):.3f} at (5, 2), "
      f"{projected_position_term(105, 102):.3f} at (105, 102)")

# %% [markdown]
# ## 2. Rotate queries and keys instead
#
# RoPE ("rotary position embedding", from the RoFormer paper: Su et al., 2021,
# [arXiv 2104.09864](https://arxiv.org/abs/2104.09864)) adds nothing to the token vectors.
# It takes the query and the key of each attention head *after* their projections, splits
# the head's $d$ channels into pairs, and turns pair $j$ of the vector at position $p$ by the
# angle $p\,w_j$, with the sinusoidal frequencies $w_j = 10000^{-2j/d}$. Here $d$ is the
# size of one head (`head_dim`), not `d_model`: every head turns its own channels at the
# same $d/2$ frequencies. As a matrix, the turn is block-diagonal, one $2 \times 2$
# rotation per pair and zeros elsewhere:
#
# $$R(p\,w) = \begin{pmatrix} R_2(p\,w_0) & & \\ & \ddots & \\ & & R_2(p\,w_{d/2-1}) \end{pmatrix},
#   \qquad R_2(\theta) = \begin{pmatrix} \cos\theta & -\sin\theta \\ \sin\theta & \cos\theta \end{pmatrix}.$$
#
# Block by block, the transpose of a rotation by $a$ followed by a rotation by $b$ is a
# rotation by $b - a$, so $R(p\,w)^\top R(s\,w) = R((s - p)\,w)$ and
#
# $$\big(R(p\,w)\,q\big)\cdot\big(R(s\,w)\,k\big) = q \cdot R\big((s - p)\,w\big)\,k,$$
#
# a function of the offset $s - p$ alone. Here is the matrix, for one head of $d = 64$,
# and the identity checked for $p = 5$, $s = 2$:

# %%
def rotation_matrix(p, d=D, base=10000.0):
    """R(p w): the (d, d) block-diagonal matrix of the 2x2 rotations by p * w_j."""
    w = base ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)
    c, s = torch.cos(p * w), torch.sin(p * w)
    blocks = torch.stack([c, -s, s, c], dim=-1).view(-1, 2, 2)  # R_2(p w_j) for each pair j
    return torch.block_diag(*blocks)


torch.testing.assert_close(rotation_matrix(5).T @ rotation_matrix(2), rotation_matrix(-3), rtol=0, atol=1e-14)
print("R(5w): shape", tuple(rotation_matrix(5).shape), "with", (rotation_matrix(5) != 0).sum().item(), "nonzero entries")

# %% [markdown]
# Nobody multiplies by that matrix: each pair is turned on its own. Here is the rotation
# written out in PyTorch, with the channels $2j$ and $2j + 1$ as pair $j$:

# %%
def rotate(x, positions, d=D, base=10000.0):
    """Turn pair j = channels (2j, 2j+1) of x (..., seq, d) at each position by position * w_j."""
    w = base ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)
    angles = positions.to(torch.float64)[:, None] * w
    a, b = x[..., 0::2], x[..., 1::2]
    return torch.stack([a * angles.cos() - b * angles.sin(), b * angles.cos() + a * angles.sin()], dim=-1).flatten(-2)


# %% [markdown]
# `posenc.torch.rotary_cos_sin` builds the cos and sin tables and
# `posenc.torch.apply_rotary` applies them; `layout="interleaved"` is this pairing. They
# agree with `rotate` to float64 round-off (and with the matrix, and a rotation keeps the
# length of every vector: both are in the cross-checks at the end).

# %%
positions = torch.arange(64)
q, k = torch.randn(2, D, dtype=torch.float64)
cos, sin = posenc.torch.rotary_cos_sin(positions, D, layout="interleaved", dtype=torch.float64)
rotated_q = posenc.torch.apply_rotary(q.expand(64, D), cos, sin, layout="interleaved")
rotated_k = posenc.torch.apply_rotary(k.expand(64, D), cos, sin, layout="interleaved")

torch.testing.assert_close(rotated_q, rotate(q.expand(64, D), positions), rtol=0, atol=1e-13)
print("cos, sin:", tuple(cos.shape), " rotated q:", tuple(rotated_q.shape))

# %% [markdown]
# The same query and key at all 64 positions give a $64 \times 64$ matrix of scores,
# `scores[p, s]` for the query at $p$ and the key at $s$. The entries with the same offset
# $o = s - p$ form one diagonal of it (`torch.diagonal(scores, o)`). If the score depends on
# the offset only, each diagonal holds one value, $q \cdot R(o\,w)\,k$: the unrotated query
# against the key turned by the offset alone. Checked for all 127 diagonals, to within
# 1e-12 (float64 round-off on scores of this size):

# %%
scores = rotated_q @ rotated_k.T  # scores[p, s]
for o in range(-63, 64):
    expected = q @ rotate(k[None], torch.tensor([o]))[0]  # q · R(o w) k
    torch.testing.assert_close(torch.diagonal(scores, o), expected.expand(64 - abs(o)), rtol=0, atol=1e-12)
print(f"scores from {scores.min().item():.1f} to {scores.max().item():.1f}")

# %% [markdown]
# The same two tokens as in section 1, slid along the sequence at offset 3: with the added
# table the score wanders with the absolute position; with RoPE it stays put, to float64
# round-off.

# %%
slide = np.arange(200)
added = [four_terms(p + 3, p)["score"] for p in slide]
a_rot = rotate(torch.from_numpy(x_a).expand(200, D), torch.from_numpy(slide + 3))
b_rot = rotate(torch.from_numpy(x_b).expand(200, D), torch.from_numpy(slide))
rotary = (a_rot * b_rot).sum(-1).numpy()
print(f"spread of the score over 200 positions with the added table: {np.ptp(added):.1f}")
assert np.ptp(rotary) < 1e-12, "with RoPE the score of offset 3 is the same at every position"

# %%
fig, ax = plt.subplots(figsize=(8, 3))
ax.plot(slide, added, label="added sinusoidal table: $(x_a + PE_{p+3})\\cdot(x_b + PE_p)$")
ax.plot(slide, rotary, label="RoPE: $R((p+3)w)\\,x_a \\cdot R(p\\,w)\\,x_b$")
ax.set(xlabel="position p of the second token", ylabel="score", title="one pair of tokens at offset 3")
ax.legend(fontsize=8, loc="center right")
plt.show()

# %% [markdown]
# ## 3. Two layouts: which channels form a pair
#
# Which two channels make a pair is a convention, and both are in use:
#
# - **interleaved**: channel $2j$ with $2j + 1$. Meta's reference Llama code
#   ([meta-llama/llama](https://github.com/meta-llama/llama), which treats each pair as one
#   complex number), [GPT-J](https://github.com/kingoflolz/mesh-transformer-jax) (EleutherAI's
#   6-billion-parameter model of 2021) and CodeGen (`rotate_every_two`), and in Hugging Face
#   [transformers](https://huggingface.co/docs/transformers) (the library most checkpoints
#   are shared in) the Cohere and GLM models, whose own `rotate_half` pairs neighbours.
# - **half**: channel $j$ with $j + d/2$. [GPT-NeoX](https://github.com/EleutherAI/gpt-neox)
#   (EleutherAI's training library and its 20-billion-parameter model) and most transformers
#   models (Llama, Mistral, Qwen2, Gemma, Phi-3, Falcon, ...), whose `rotate_half(x)` is
#   `cat(-x2, x1)` of the two halves of the head.
#
# `tests/test_rotary_packages.py` checks each of these functions of the installed
# transformers against the layout named here.
#
# For a head of 8 channels the frequencies are $w_j = 10000^{-2j/8} = 1, 0.1, 0.01, 0.001$.
# The sine table at position 1 holds $\sin w_j$ on both channels of pair $j$, so it shows
# which channels pair up:

# %%
w8 = posenc.rotary_frequencies(8)[0]
pair_of_channel = {"half": np.arange(8) % 4, "interleaved": np.arange(8) // 2}
for layout in posenc.ROTARY_LAYOUTS:
    _, sin1 = posenc.rotary_cos_sin([1], 8, layout=layout, dtype=np.float64)
    assert np.array_equal(sin1[0], np.sin(w8)[pair_of_channel[layout]])
    print(f"{layout:>11}: sin at position 1 = {np.round(sin1[0], 4)}, channel -> pair {pair_of_channel[layout]}")

# %% [markdown]
# The half layout is transformers' formula `x * cos + rotate_half(x) * sin`:

# %%
def rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


x = torch.randn(10, D, dtype=torch.float64)
cos, sin = posenc.torch.rotary_cos_sin(torch.arange(10), D, layout="half", dtype=torch.float64)
torch.testing.assert_close(posenc.torch.apply_rotary(x, cos, sin, layout="half"), x * cos + rotate_half(x) * sin)

# %% [markdown]
# The two layouts differ only in the order of the channels within each head. The query and
# key projections produce those channels, so reordering the *rows* of $W_q$ and $W_k$,
# head by head, moves a checkpoint from one layout to the other; this is what transformers'
# Llama conversion script does to Meta's weights, with
# `w.view(heads, head_dim // 2, 2, d_model).transpose(1, 2)`.
# `posenc.rotary_permutation` gives that row order; within a head it is the interleaved to
# `sin_cos` column permutation of the sinusoidal table (notebook 05).

# %%
HEADS, HEAD_DIM, D_MODEL = 4, 8, 32
perm = posenc.rotary_permutation(HEAD_DIM, "interleaved", "half", heads=HEADS)
script = torch.arange(D_MODEL).view(HEADS, HEAD_DIM // 2, 2).transpose(1, 2).reshape(-1)
assert (perm == script.numpy()).all(), "posenc's row order is the conversion script's"
print("rows of one head, half layout <- interleaved:", perm[:HEAD_DIM])

# %% [markdown]
# A check on a random attention layer of 4 heads: scores from the interleaved weights
# rotated interleaved equal the scores from the permuted weights rotated in halves. Rotating
# the unpermuted weights in halves, a common porting bug, gives different scores.

# %%
def rotary_scores(W_q, W_k, x, layout):
    """Attention scores (heads, seq, seq) of x (seq, d_model) with RoPE in `layout`."""
    q = (x @ W_q.T).view(len(x), HEADS, HEAD_DIM).transpose(0, 1)
    k = (x @ W_k.T).view(len(x), HEADS, HEAD_DIM).transpose(0, 1)
    cos, sin = posenc.torch.rotary_cos_sin(torch.arange(len(x)), HEAD_DIM, layout=layout, dtype=torch.float64)
    q, k = (posenc.torch.apply_rotary(t, cos, sin, layout=layout) for t in (q, k))
    return q @ k.transpose(1, 2)


# %%
meta_q, meta_k = torch.randn(2, D_MODEL, D_MODEL, dtype=torch.float64)
tokens_x = torch.randn(10, D_MODEL, dtype=torch.float64)
hf_q, hf_k = (posenc.convert_rotary_layout(w, "interleaved", "half", heads=HEADS) for w in (meta_q, meta_k))

reference = rotary_scores(meta_q, meta_k, tokens_x, "interleaved")
torch.testing.assert_close(rotary_scores(hf_q, hf_k, tokens_x, "half"), reference, rtol=0, atol=1e-12)
unpermuted = rotary_scores(meta_q, meta_k, tokens_x, "half")
print(f"same scores after the permutation; without it they differ by up to {(unpermuted - reference).abs().max().item():.0f}")

# %% [markdown]
# ## 4. Frequency rules for longer contexts
#
# A model trained on sequences of $L$ tokens has seen pair $j$ at angles below $L\,w_j$.
# The pairs whose wavelength $2\pi / w_j$ is longer than $L$ never made a full turn in
# training; at positions beyond $L$ they reach angles the model never saw. The rules below
# change the frequencies so that a longer context stays within the angles of training;
# each is introduced in its own paragraph. In transformers, a model's config names its
# rule as `rope_type`: `default` ($w_j = \text{base}^{-2j/d}$) is computed by each model's
# rotary class, and the others are the keys of `modeling_rope_utils.ROPE_INIT_FUNCTIONS`
# (`linear`, `dynamic`, `yarn`, `longrope`, `llama3`, and `proportional`, for heads that
# rotate only part of their channels, left out here); `posenc.rotary_frequencies` takes the
# same names and parameters.
#
# We take one head of 128 channels, base 10000, $L = 4096$, and a target of 4 times that.

# %%
HEAD, L, FACTOR = 128, 4096, 4
pairs = np.arange(HEAD // 2)
wavelength = {"default": 2 * np.pi / posenc.rotary_frequencies(HEAD)[0]}
default = wavelength["default"]
turns = L / default  # full turns of each pair within the training length
print(f"pairs with a wavelength longer than L: {(default > L).sum()} of {HEAD // 2}; "
      f"turning more than 32 times within L: {(turns > 32).sum()}")

# %% [markdown]
# **Position interpolation** (`linear`; Chen et al. 2023, [arXiv 2306.15595](https://arxiv.org/abs/2306.15595))
# divides every frequency by the factor $s$: position $p$ turns as far as position $p/s$
# did, so positions up to $sL$ land on the angles of positions up to $L$. The price: two
# neighbours are now $1/s$ of a position apart, and the fast pairs, which tell neighbours
# apart, turn between them by angles the model never saw. It needs some fine-tuning
# (section 6 shows both on a small model).

# %%
wavelength["linear"] = 2 * np.pi / posenc.rotary_frequencies(HEAD, rope_type="linear", factor=FACTOR)[0]
assert np.allclose(wavelength["linear"], FACTOR * default, rtol=1e-15), "every wavelength times s"

# %% [markdown]
# **NTK-aware scaling** (bloc97's 2023 post on Reddit,
# ["NTK-Aware Scaled RoPE"](https://www.reddit.com/r/LocalLLaMA/comments/14lz7j5/ntkaware_scaled_rope_allows_llama_models_to_have/);
# NTK is the *neural tangent kernel* (Jacot et al. 2018,
# [arXiv 1806.07572](https://arxiv.org/abs/1806.07572)), a theory of how wide networks
# learn; by its account a network learns high-frequency functions of its input poorly unless
# the input already carries high frequencies (Tancik et al. 2020,
# [arXiv 2006.10739](https://arxiv.org/abs/2006.10739)), hence a rule that keeps the fast
# pairs as they are) changes the base instead: $b' = b \cdot s^{d/(d-2)}$. Then
# $w'_j = b'^{-2j/d} = w_j \cdot s^{-2j/(d-2)}$: pair 0, the fastest, keeps its frequency
# exactly, the slowest pair ($j = d/2 - 1$) is divided by $s$, and in between the divisor
# $s^{2j/(d-2)}$ grows geometrically, so the fast pairs change little (pair 1 by 2.2% here).
# That is the point: the fast pairs turn many times within $L$, so the model has seen them
# at every angle and at every offset between neighbours, and they keep those angles; the
# slow pairs, which never made a full turn, are stretched almost like position
# interpolation.

# %%
ntk = posenc.rotary_frequencies(HEAD, base=10000 * FACTOR ** (HEAD / (HEAD - 2)))[0]
wavelength["NTK-aware"] = 2 * np.pi / ntk
print(f"pair 1's wavelength grows by {wavelength['NTK-aware'][1] / default[1] - 1:.1%}, "
      f"the slowest pair's {wavelength['NTK-aware'][-1] / default[-1]:.3f} times")
assert wavelength["NTK-aware"][0] == default[0], "pair 0 keeps its frequency exactly"

# %% [markdown]
# **Dynamic NTK** (`dynamic`) is this rule with $s$ taken from the current length instead
# of fixed, $s$ = `factor` · `seq_len` / $L$ − (`factor` − 1): 1 up to $L$ (the frequencies
# of training), and 13 at $4L$ with `factor` 4.

# %%
dynamic = dict(factor=FACTOR, max_position_embeddings=L, seq_len=FACTOR * L)
wavelength["dynamic"] = 2 * np.pi / posenc.rotary_frequencies(HEAD, rope_type="dynamic", **dynamic)[0]
s = FACTOR * (FACTOR * L) / L - (FACTOR - 1)
assert s == 13 and np.allclose(wavelength["dynamic"], default * s ** (2 * pairs / (HEAD - 2)), rtol=1e-13)

# %% [markdown]
# **YaRN** ("Yet another RoPE extensioN", Peng et al. 2023,
# [arXiv 2309.00071](https://arxiv.org/abs/2309.00071)) decides per pair by how often it
# turns within $L$: pairs turning more than `beta_fast` = 32 times keep their frequency,
# pairs turning less than `beta_slow` = 1 time are divided by $s$ as in position
# interpolation, with a linear ramp over the pairs between.

# %%
yarn = dict(factor=FACTOR, original_max_position_embeddings=L)
wavelength["yarn"] = 2 * np.pi / posenc.rotary_frequencies(HEAD, rope_type="yarn", **yarn)[0]
assert (wavelength["yarn"][turns > 32] == default[turns > 32]).all(), "the fast pairs are kept"

# %% [markdown]
# **The attention factor.** YaRN (and LongRoPE, below) also returns a number $a$ that
# multiplies cos and sin; YaRN's is $a = 0.1 \ln s + 1$. The rotated query and key are then
# both $a$ times longer, so every score $q \cdot k$ is multiplied by $a^2$: attention
# computes softmax$(a^2 \cdot \text{scores})$, a softmax at temperature $1/a^2$, sharper
# for $a > 1$. Checked on a random query and key, once with YaRN's attention factor and
# once with `attention_factor=1`:

# %%
a = posenc.rotary_frequencies(HEAD, rope_type="yarn", **yarn)[1]
query, key = np.random.default_rng(5).standard_normal((2, 100, HEAD))


def yarn_scores(**extra):
    cos, sin = posenc.rotary_cos_sin(np.arange(100), HEAD, rope_type="yarn", dtype=np.float64, **yarn, **extra)
    return posenc.apply_rotary(query, cos, sin) @ posenc.apply_rotary(key, cos, sin).T


assert np.allclose(yarn_scores(), a**2 * yarn_scores(attention_factor=1.0), rtol=1e-13)
print(f"YaRN's attention factor at s = {FACTOR}: a = {a:.4f} = 0.1 ln(4) + 1, every score times a² = {a**2:.4f}")

# %% [markdown]
# **Llama 3.1's rule** (`llama3`; `apply_scaling` in Meta's reference code,
# [meta-llama/llama-models](https://github.com/meta-llama/llama-models); the models are
# described in Grattafiori et al. 2024, [arXiv 2407.21783](https://arxiv.org/abs/2407.21783))
# decides by wavelength $\lambda_j = 2\pi / w_j$: below $L$ / `high_freq_factor` kept, above
# $L$ / `low_freq_factor` divided by $s$, and between, a blend of the two frequencies,
#
# $$w'_j = (1 - \sigma_j)\,\frac{w_j}{s} + \sigma_j\, w_j, \qquad
#   \sigma_j = \frac{L / \lambda_j - \text{low\_freq\_factor}}{\text{high\_freq\_factor} - \text{low\_freq\_factor}},$$
#
# which runs from $\sigma = 0$ (stretched) at $\lambda = L$ / `low_freq_factor` to
# $\sigma = 1$ (kept) at $\lambda = L$ / `high_freq_factor`. Llama 3.1 uses $s = 8$,
# factors 1 and 4, $L = 8192$ and base 500000; here factors 1 and 4 with our $L$ and base.
# Llama 4 Scout sets both factors to 1 and $s = 16$ (`models/llama4` of the same
# repository): the blend is gone, and the rule is a step at $L$.

# %%
llama3 = dict(factor=FACTOR, original_max_position_embeddings=L, low_freq_factor=1, high_freq_factor=4)
wavelength["llama3"] = 2 * np.pi / posenc.rotary_frequencies(HEAD, rope_type="llama3", **llama3)[0]
keep, stretch = default < L / 4, default > L
between = ~keep & ~stretch
sigma = (L / default[between] - 1) / (4 - 1)
blend = (1 - sigma) * (2 * np.pi / default[between]) / FACTOR + sigma * (2 * np.pi / default[between])
print(f"kept: {keep.sum()} pairs, stretched: {stretch.sum()}, blended: pairs {pairs[between]}")
assert np.allclose(wavelength["llama3"][between], 2 * np.pi / blend, rtol=1e-13), "the blend of the formula"

# %%
fig, ax = plt.subplots(figsize=(8, 4.5))
for name, lengths in wavelength.items():
    ax.plot(lengths, label=name, linestyle="--" if name == "default" else "-")
for level, text in [(L, "training length L"), (FACTOR * L, "target 4L")]:
    ax.axhline(level, color="gray", linewidth=0.8)
    ax.text(0, level * 1.15, text, fontsize=8)
ax.set(yscale="log", xlabel="pair j", ylabel="wavelength 2π / w_j (positions)",
       title="RoPE frequency rules, head of 128, base 10000, L = 4096, factor 4")
ax.legend()
plt.show()

# %% [markdown]
# In the figure: position interpolation shifts every wavelength up by the same factor;
# NTK-aware scaling and `dynamic` leave the fastest pair where it is and tilt the line
# upwards; YaRN and `llama3` keep the short wavelengths (their lines hide the dashed
# default there), stretch the long ones by exactly 4, and blend between. Every rule but
# NTK-aware scaling with a fixed $s = 4$ stretches each wavelength longer than $L$ at least
# 4 times (to float64 round-off, the $10^{-15}$ below), so up to $4L$ those pairs stay
# within the angles of training; with a fixed $s$ only the slowest pair gets the full factor.

# %%
for name in ["linear", "dynamic", "yarn", "llama3"]:
    assert (wavelength[name][default > L] >= FACTOR * default[default > L] * (1 - 1e-15)).all(), name

# %% [markdown]
# **LongRoPE** (Ding et al. 2024, [arXiv 2402.13753](https://arxiv.org/abs/2402.13753))
# divides each frequency by its own factor, found by a search: `short_factor` for sequences
# up to $L$, `long_factor` beyond, and an attention factor
# $a = \sqrt{1 + \ln s / \ln L}$. Published lists need not start at 1, so LongRoPE may slow
# even the fastest pair. The config of Microsoft's Phi-3-vision-128k-instruct (head of 96,
# $L = 4096$, 131072 positions, so $s = 32$) has 48 long factors from 1.03 to 64.81:

# %%
PHI3_VISION_LONG_FACTOR = [  # rounded to 2 decimals (the config stores their float32 values)
    1.03, 1.05, 1.05, 1.08, 1.23, 1.23, 1.30, 1.45, 1.60, 1.65, 1.90, 2.86, 3.69, 5.42, 5.49, 5.49,
    9.09, 11.58, 15.66, 15.77, 15.79, 18.36, 21.99, 23.08, 30.01, 32.35, 32.59, 35.56, 39.95, 53.84, 56.20, 57.95,
    59.29, 59.77, 59.92, 61.19, 61.96, 62.50, 63.37, 63.48, 63.48, 63.66, 63.85, 64.08, 64.76, 64.80, 64.81, 64.81,
]
phi3 = dict(long_factor=PHI3_VISION_LONG_FACTOR, short_factor=[1.0] * 48,  # short: used up to L only, not the config's
            original_max_position_embeddings=4096, max_position_embeddings=131072, seq_len=131072)
w_phi3, a_phi3 = posenc.rotary_frequencies(96, rope_type="longrope", **phi3)
w_96 = posenc.rotary_frequencies(96)[0]
assert np.isclose(w_96[0] / w_phi3[0], 1.03, rtol=1e-15), "the fastest pair slowed by its factor 1.03"
print(f"fastest pair: wavelength {2 * np.pi / w_96[0]:.3f} -> {2 * np.pi / w_phi3[0]:.3f}; attention factor {a_phi3:.4f}")

# %% [markdown]
# ## 5. Precision at long positions
#
# The angle $p\,w_j$ grows with the position, and a floating-point number of size $p\,w_j$
# is only as exact as its last bit. Besides float32, models run in two 16-bit formats:
# float16 (IEEE half precision: 11 significant bits, largest value 65504) and
# [bfloat16](https://en.wikipedia.org/wiki/Bfloat16_floating-point_format) (Google's "brain
# float": float32's range, but only 8 significant bits). Three public reports, reproduced
# in miniature.
#
# **Cos and sin tables in float16** ([EleutherAI/gpt-neox issue 1003](https://github.com/EleutherAI/gpt-neox/issues/1003)):
# with head size 32, the angle of pair 1 at position 1857 should be 1044.27; in float16 it
# comes out as 1045, and over the 2048 positions of the table the cosine is off by up to 0.78.

# %%
def float32_frequencies(head_dim, base=10000.0):
    """inv_freq as transformers and GPT-NeoX compute it: float32, 1 / base ** (2j / d)."""
    return 1.0 / (base ** (torch.arange(0, head_dim, 2, dtype=torch.int64).float() / head_dim))


inv_freq = float32_frequencies(32)
angles_fp32 = torch.outer(torch.arange(2048).float(), inv_freq)
angles_fp16 = torch.outer(torch.arange(2048).half(), inv_freq.half())
error_fp16 = (angles_fp16.cos().float() - angles_fp32.cos()).abs()
print(f"angle of pair 1 at 1857: {angles_fp32[1857, 1].item():.2f} in float32, {angles_fp16[1857, 1].item():.0f} in float16; "
      f"largest cos error {error_fp16.max().item():.2f}")

# %% [markdown]
# posenc computes the angles in higher precision and rounds only cos and sin to the
# requested dtype. Its promise: each value within one float16 rounding ($2^{-12}$, half a
# unit in the last place on values of size at most 1) of a value within 2e-7 of the exact one.

# %%
cos16, _ = posenc.torch.rotary_cos_sin(torch.arange(2048), 32, dtype=torch.float16)
exact = np.cos(np.outer(np.arange(2048), posenc.rotary_frequencies(32)[0]))
posenc_error_fp16 = np.abs(cos16[:, :16].double().numpy() - exact).max()
print(f"posenc in float16, same table: largest error {posenc_error_fp16:.1e}")
assert posenc_error_fp16 <= 2.0**-12 + 2e-7, "one float16 rounding of a value within 2e-7"

# %% [markdown]
# **inv_freq rounded to bfloat16** ([sgl-project/sglang-jax issue 1472](https://github.com/sgl-project/sglang-jax/issues/1472),
# a JAX port of the SGLang serving engine): the frequencies were cast to the model's
# bfloat16 before the product with float32 positions. bfloat16 keeps 8 significant bits, so
# each $w_j$ moves by up to 1 part in 256. At position 4095 that moves the angle of pair 0
# ($w_0 = 1$, exact in bfloat16) not at all, but others by up to 5 radians, almost a full turn:

# %%
w128 = posenc.rotary_frequencies(128)[0]  # float64
w128_bf16 = float32_frequencies(128).bfloat16().double().numpy()
angle_error = np.abs(4095 * w128_bf16 - 4095 * w128)
print(f"angle error at 4095: pair 0 {angle_error[0]:.0f}, largest {angle_error.max():.1f} rad")
assert np.abs(w128_bf16 / w128 - 1).max() <= 2.0**-8, "each frequency within 1 part in 256"

# %%
cos_sin_error = np.abs(np.concatenate([np.cos(4095 * w128_bf16) - np.cos(4095 * w128),
                                       np.sin(4095 * w128_bf16) - np.sin(4095 * w128)]))
print(f"of the 128 values of cos and sin at position 4095, {(cos_sin_error > 0.01).sum()} are off by more than 0.01,")
print(f"the worst by {cos_sin_error.max():.2f}")

# %% [markdown]
# **Everything in bfloat16** ([huggingface/candle pull request 3520](https://github.com/huggingface/candle/pull/3520);
# candle is Hugging Face's machine-learning framework in Rust): candle's Qwen2 model cast
# `inv_freq` *and* the positions to the model's dtype (bfloat16), multiplied them and took
# sin and cos in bfloat16; the pull request keeps all of that in float32 and casts only the
# result. A position in a half-precision type is already rounded. Between $2^k$ and
# $2^{k+1}$ float16 (11 significant bits) holds every $2^{k-10}$-th integer and bfloat16
# (8 bits) every $2^{k-7}$-th: from 16 384 to 32 768 every 16th and every 128th, from
# 32 768 to 65 536 every 32nd and every 256th. float16 ends at 65 504: larger positions
# round to 65 504 and, from 65 520 on, to infinity. bfloat16 has float32's range, so
# 15 962 becomes 15 936 but nothing overflows.

# %%
def spacing(start, stop, dtype):
    """The gaps between the integers of [start, stop] that survive a round trip through dtype."""
    values = torch.arange(start, stop + 1, dtype=torch.float64)
    return torch.diff(values[values.to(dtype).double() == values]).unique().tolist()


for start in [2048, 8192, 16384, 32768]:
    power = int(np.log2(start))  # start = 2^power
    gaps = spacing(start, 2 * start, torch.float16), spacing(start, 2 * start, torch.bfloat16)
    print(f"{start:>6} to {2 * start:>6}: integers in steps of {gaps[0][0]:.0f} in float16, {gaps[1][0]:.0f} in bfloat16")
    assert gaps == ([2 ** (power - 10)], [2 ** (power - 7)]), "11 and 8 significant bits"

# %% [markdown]
# **posenc's error against position.** transformers computes the table in float32: Llama's
# rotary module (and the many models that copy it) multiplies `position_ids[..., None].float()`
# by `inv_freq` element-wise, then takes cos and sin, the first line below (`torch.outer`
# here: the same products). posenc carries each angle in two float64 numbers (about twice
# float64's digits) and promises cos and sin within 2e-7 of the exact value in float32, and
# within one rounding of such a value in float16 and bfloat16. We compare with a reference
# computed by [mpmath](https://mpmath.org) (arbitrary-precision floating point in Python)
# with 40 significant digits, at positions from 1 to $10^6$, head size 128, over all 64 pairs:

# %%
sample = np.unique(np.geomspace(1, 1e6, 49).round()).astype(np.int64)
with mpmath.workdps(40):  # the frequencies too: at mpmath's default precision they would carry float64's rounding
    w_exact = [mpmath.mpf(10000) ** (-mpmath.mpf(2 * j) / 128) for j in range(64)]
    exact_cos = np.array([[float(mpmath.cos(int(p) * w)) for w in w_exact] for p in sample])
    exact_sin = np.array([[float(mpmath.sin(int(p) * w)) for w in w_exact] for p in sample])


def worst_error(cos, sin):
    """Largest |error| of cos and sin (positions, 64) at each sampled position."""
    cos, sin = (torch.as_tensor(t).double().numpy() for t in (cos, sin))
    return np.maximum(np.abs(cos - exact_cos), np.abs(sin - exact_sin)).max(axis=1)


# %% [markdown]
# Four routes of the transformers kind, each with one more thing in bfloat16, and posenc's:

# %%
def float32_route(positions_dtype=torch.float32, inv_freq_dtype=torch.float32, dtype=torch.float32):
    """cos, sin from positions and inv_freq rounded to their dtypes, multiplied and turned in dtype."""
    inv_freq = float32_frequencies(128).to(inv_freq_dtype).to(dtype)
    angles = torch.outer(torch.from_numpy(sample).to(positions_dtype).to(dtype), inv_freq)
    return angles.cos(), angles.sin()


def posenc_route(dtype):
    cos, sin = posenc.torch.rotary_cos_sin(torch.from_numpy(sample), 128, dtype=dtype)
    return cos[:, :64], sin[:, :64]


# %%
errors = {
    "float32 (transformers)": worst_error(*float32_route()),
    "inv_freq in bfloat16": worst_error(*float32_route(inv_freq_dtype=torch.bfloat16)),
    "positions in bfloat16": worst_error(*float32_route(positions_dtype=torch.bfloat16)),
    "all in bfloat16 (candle before 3520)": worst_error(*float32_route(torch.bfloat16, torch.bfloat16, torch.bfloat16)),
    "posenc, float32": worst_error(*posenc_route(torch.float32)),
    "posenc, bfloat16": worst_error(*posenc_route(torch.bfloat16)),
}

# %%
fig, ax = plt.subplots(figsize=(8, 4.5))
for name, error in errors.items():
    ax.plot(sample, np.maximum(error, 1e-10), label=name, linestyle="-" if name.startswith("posenc") else "--")
ax.set(xscale="log", yscale="log", xlabel="position", ylabel="largest |error| of cos, sin",
       title="RoPE cos/sin error against position, head of 128", ylim=(1e-9, 10))
ax.legend(fontsize=8)
plt.show()

# %% [markdown]
# posenc keeps that promise at every sampled position up to $10^6$: within 2e-7 in
# float32, and in bfloat16 within half a unit in its last place ($2^{-9}$ on values of size
# at most 1) plus 2e-7. The float32 route is off by about 5e-3 at $10^5$ and 5e-2 at
# $10^6$ (one significant digit, in the table), and by more than 1e-3 at every sampled
# position from $10^5$ on; with the frequencies or the positions in bfloat16, or everything,
# the error reaches the size of cos and sin themselves (above 0.5) by position 4096.

# %%
print(f"{'position':>36}" + "".join(f"{p:>11,}" for p in [10**3, 10**4, 10**5, 10**6]))
for name, error in errors.items():
    print(f"{name:>36}" + "".join(f"{error[sample == p][0]:11.1e}" for p in [10**3, 10**4, 10**5, 10**6]))
assert errors["posenc, float32"].max() <= 2e-7, "posenc's float32 promise"

# %% [markdown]
# ## 6. In a Transformer: copy the previous token
#
# Notebook 07's task: sequences of 12 random tokens out of 16, and at each position the
# model must output the token one place to its left (position 0 is not scored). The helpers
# are notebook 07's, imported above from `posenc.lessons`: `copy_previous_task`,
# `accuracy`, `order_blind_ceiling`, `train`, `predict`, `first_step_above` and
# `LearnedPositions`.

# %%
assert (VOCAB, TRAIN_LENGTH) == (16, 12), "notebook 07's task"
test_sets = {n: copy_previous_task(np.random.default_rng(n), 1000, n) for n in [TRAIN_LENGTH, 24, 48]}
ceilings = {n: order_blind_ceiling(tokens) for n, (tokens, _) in test_sets.items()}

# %% [markdown]
# PyTorch's `nn.TransformerEncoderLayer` gives no access to the queries and keys, so we
# write the same layer out (post-norm, 4 heads of 8 channels, feed-forward of 64, ReLU, no
# dropout), in two steps. `self_attention` projects the input to queries, keys and values,
# splits each into the 4 heads, turns the queries and keys with RoPE if it is given a rotary
# module, and attends. RoPE's cos and sin come from `posenc.torch.RotaryEmbedding`, a module
# like transformers' rotary embeddings: `forward(x, position_ids)` returns `(cos, sin)`. It
# is built for one head (`HEAD_DIM` = 8), so its frequencies are $10000^{-2j/8}$ = 1, 0.1,
# 0.01, 0.001, not those of `d_model` = 32, and every head uses the same cos and sin.

# %%
D_MODEL, HEADS = 32, 4
HEAD_DIM = D_MODEL // HEADS


def heads(t):
    """(batch, length, D_MODEL) -> (batch, HEADS, length, HEAD_DIM): the channels of each head."""
    return t.view(*t.shape[:2], HEADS, HEAD_DIM).transpose(1, 2)


assert np.allclose(posenc.torch.RotaryEmbedding(HEAD_DIM).inv_freq.numpy(), [1, 0.1, 0.01, 0.001], rtol=1e-15)


# %%
def self_attention(x, qkv, out, rotary=None):
    """Multi-head self-attention of x (batch, length, D_MODEL); `rotary` (if given) turns q and k."""
    q, k, v = (heads(t) for t in qkv(x).chunk(3, dim=-1))
    if rotary is not None:
        cos, sin = rotary(q, torch.arange(x.shape[1])[None])  # (1, length, HEAD_DIM)
        cos, sin = cos[:, None], sin[:, None]  # (1, 1, length, HEAD_DIM): the same for every head
        q, k = posenc.torch.apply_rotary(q, cos, sin), posenc.torch.apply_rotary(k, cos, sin)
    attended = nn.functional.scaled_dot_product_attention(q, k, v)  # (batch, HEADS, length, HEAD_DIM)
    return out(attended.transpose(1, 2).flatten(2))


# %% [markdown]
# The layer adds the attention to its input and normalises, then does the same with a
# feed-forward network. All four models use it; the other three add their positions to the
# token embeddings as in notebook 07.

# %%
class EncoderLayer(nn.Module):
    def __init__(self, rotary=None):
        super().__init__()
        self.qkv, self.out = nn.Linear(D_MODEL, 3 * D_MODEL), nn.Linear(D_MODEL, D_MODEL)
        self.norm1, self.norm2 = nn.LayerNorm(D_MODEL), nn.LayerNorm(D_MODEL)
        self.feed_forward = nn.Sequential(nn.Linear(D_MODEL, 64), nn.ReLU(), nn.Linear(64, D_MODEL))
        self.rotary = rotary  # a posenc.torch.RotaryEmbedding, or None

    def forward(self, x):
        x = self.norm1(x + self_attention(x, self.qkv, self.out, self.rotary))
        return self.norm2(x + self.feed_forward(x))


# %%
ADDED = {
    "none": nn.Identity,
    "learned": lambda: LearnedPositions(D_MODEL, TRAIN_LENGTH),
    "sinusoidal": lambda: posenc.torch.PositionalEncoding(D_MODEL),
    "rotary": nn.Identity,
}
COLORS = {"none": "C0", "learned": "C1", "sinusoidal": "C2", "rotary": "C3"}


def tiny_transformer(positions):
    torch.manual_seed(0)
    layer = EncoderLayer(posenc.torch.RotaryEmbedding(HEAD_DIM) if positions == "rotary" else None)
    return nn.Sequential(nn.Embedding(VOCAB, D_MODEL), ADDED[positions](), layer, nn.Linear(D_MODEL, VOCAB))


# %% [markdown]
# Training as in notebook 07: 300 steps of the Adam optimiser on batches of 64 fresh
# sequences, the same sequences in the same order for every model.

# %%
assert (STEPS, BATCH) == (300, 64), "notebook 07's training run"
train_tokens, train_targets = copy_previous_task(np.random.default_rng(1), STEPS * BATCH, TRAIN_LENGTH)
models = {name: tiny_transformer(name) for name in ADDED}
curves = {name: train(model, train_tokens, train_targets, steps=STEPS)[1] for name, model in models.items()}

# %% [markdown]
# Accuracy on 1000 fresh sequences of the training length and of two and four times it,
# split into the positions below 12 (seen in training) and from 12 on (never seen). The
# learned table has no rows past position 11, so that model runs at length 12 only.

# %%
def accuracy_by_position(model, tokens, targets):
    return (predict(model, tokens)[:, 1:] == targets[:, 1:]).mean(axis=0)  # positions 1..length-1


by_position = {(name, n): accuracy_by_position(model, *test_sets[n]) for name, model in models.items()
               for n in test_sets if name != "learned" or n == TRAIN_LENGTH}
seen, unseen = slice(0, TRAIN_LENGTH - 1), slice(TRAIN_LENGTH - 1, None)

# %%
# NBVAL_IGNORE_OUTPUT
print(f"{'':>10}  {'length 12':>9}  {'24: seen | unseen':>17}  {'48: seen | unseen':>17}")
for name in models:
    row = f"{name:>10}  {by_position[name, 12].mean():9.2f}"
    for n in [24, 48]:
        split = "—" if name == "learned" else f"{by_position[name, n][seen].mean():.2f} | {by_position[name, n][unseen].mean():.2f}"
        row += f"  {split:>17}"
    print(row)
print(f"{'ceiling':>10}  {ceilings[12]:9.2f}  {ceilings[24]:17.2f}  {ceilings[48]:17.2f}")
print("above 0.9 on a training batch from step:", {name: first_step_above(curve) for name, curve in curves.items()})

# %% [markdown]
# At the training length, all three position methods solve the task (above 0.9) and the
# model without positions stays within 0.05 of the order-blind ceiling. Past it, the
# sinusoidal model fails at the positions it never saw (below 0.5), as in notebook 07. The
# RoPE model is above 0.95 at every position of sequences four times as long: it only has
# to attend to the offset −1, and with RoPE the score of that offset is the same at every
# position.

# %%
assert (by_position["rotary", 48] > 0.95).all(), "RoPE at every position of 4 times the training length"

# %%
fig, ax = plt.subplots(figsize=(9, 3.5))
for name in ["none", "sinusoidal", "rotary"]:
    ax.plot(range(1, 48), by_position[name, 48], color=COLORS[name], marker=".", label=f"{name}, length 48")
ax.axvline(TRAIN_LENGTH - 0.5, color="gray", linestyle="--", label="training length")
ax.set(xlabel="position", ylabel="accuracy", ylim=(0, 1.05), title="copy the previous token, 4 times the training length")
ax.legend()
plt.show()

# %% [markdown]
# ### Eight times the training length, and two frequency rules
#
# At 96 tokens the RoPE model is right (above 0.99) at every position from 34 to 63, and
# much less often elsewhere (below 0.7 on average). The other offsets are to blame: pair 1
# has a wavelength of $2\pi \cdot 10 \approx 62.8$, so a key 64 places back, or 62 ahead, is
# turned within 0.17 rad of the neighbour's turn in both fast pairs (in pairs 2 and 3 the
# two turns differ by 0.63 and 0.063 rad), and the model mixes the two up. Positions 1 to 33
# have a key 62 places ahead, positions 64 to 95 one 64 places back, and the positions
# between have neither.

# %%
long_test = copy_previous_task(np.random.default_rng(96), 1000, 96)
at_96 = {"default": accuracy_by_position(models["rotary"], *long_test)}  # index i: position i + 1
aliased = np.r_[0:33, 63:95]  # positions 1..33 and 64..95
assert at_96["default"][33:63].min() > 0.99, "right at every position with no aliased key"

w_head = posenc.rotary_frequencies(HEAD_DIM)[0]
for offset in (62, -64):
    turn = np.abs(np.angle(np.exp(1j * (offset - (-1)) * w_head)))  # angle between the turns of the two offsets
    print(f"offset {offset:>3} against -1: the turns differ by {np.round(turn, 3)} rad in pairs 0..3")

# %% [markdown]
# NTK-aware scaling by 4 (the base becomes $10000 \cdot 4^{8/6}$) keeps pair 0 as it was and
# stretches pair 1 to a wavelength of about 99.7, longer than the sequence. Swapped into the
# trained model, without any training, it lifts the accuracy at length 96 above 0.9 at every
# position, and keeps the training length above 0.99.

# %%
ntk_model = copy.deepcopy(models["rotary"])  # a copy: models["rotary"] stays as trained
ntk_model[2].rotary = posenc.torch.RotaryEmbedding(HEAD_DIM, base=10000 * 4 ** (HEAD_DIM / (HEAD_DIM - 2)))
print(f"pair 1's wavelength: {2 * np.pi / ntk_model[2].rotary.inv_freq[1].item():.1f}")
at_96["NTK-aware, s = 4"] = accuracy_by_position(ntk_model, *long_test)
assert at_96["NTK-aware, s = 4"].min() > 0.9, "NTK-aware scaling, no training: every position of 96"

# %%
fig, ax = plt.subplots(figsize=(9, 3))
for name, accuracies in at_96.items():
    ax.plot(range(1, 96), accuracies, marker=".", label=f"RoPE, {name}")
ax.axvline(TRAIN_LENGTH - 0.5, color="gray", linestyle="--", label="training length")
ax.set(xlabel="position", ylabel="accuracy", ylim=(0, 1.05), title="copy the previous token, 8 times the training length")
ax.legend()
plt.show()

# %% [markdown]
# Position interpolation (`rope_type="linear"`) divides the frequencies by a factor, the same
# as dividing the positions by it, so that a sequence twice as long is turned like one of
# the training length (positions 0 to 23 become 0 to 11.5). It changes the offsets too:
# neighbours are now half a position apart, an angle the model never saw, in every pair.
# Applied to a copy of the trained RoPE model with a factor of 2 and no more training, it
# breaks the model (below 0.5), even at the training length. Fine-tuning with the
# interpolated positions on 50 batches of length 24 repairs it at every length (above
# 0.95), and a training batch is above 0.9 after fewer steps than the model needed from
# scratch.

# %%
interpolated = copy.deepcopy(models["rotary"])  # fine-tuned below; models["rotary"] stays as trained
interpolated[2].rotary = posenc.torch.RotaryEmbedding(HEAD_DIM, rope_type="linear", factor=2)
before = {n: accuracy(predict(interpolated, tokens), targets) for n, (tokens, targets) in test_sets.items()}
_, fine_tuning = train(interpolated, *copy_previous_task(np.random.default_rng(3), 50 * BATCH, 24), steps=50)
after = {n: accuracy(predict(interpolated, tokens), targets) for n, (tokens, targets) in test_sets.items()}

# %%
# NBVAL_IGNORE_OUTPUT
for n in test_sets:
    print(f"length {n}: {before[n]:.2f} before fine-tuning, {after[n]:.2f} after")
print(f"fine-tuning above 0.9 from step {first_step_above(fine_tuning)}; "
      f"from scratch: step {first_step_above(curves['rotary'])}")

# %%
assert first_step_above(fine_tuning) < first_step_above(curves["rotary"]), "fine-tuning is quicker than training"

# %% [markdown]
# ## Summary
#
# - An added position vector puts content·position cross terms into every attention score,
#   so the score of two tokens depends on where they sit, not only on their distance.
# - RoPE rotates the queries and keys of each head by $R(p\,w)$, block-diagonal 2×2
#   rotations at the head's frequencies; the score then depends on the offset alone, to
#   float64 round-off.
# - Interleaved (Meta's reference, GPT-J, CodeGen, Cohere, GLM) and half (GPT-NeoX, Llama
#   and most transformers models) pair different channels; permuting the rows of $W_q$,
#   $W_k$ per head moves a checkpoint between them exactly.
# - For longer contexts, position interpolation slows every pair, NTK-aware scaling and
#   `dynamic` raise the base, YaRN and `llama3` stretch only the slow pairs, LongRoPE scales
#   each pair by its own factor (Phi-3-vision's first is 1.03); YaRN and LongRoPE also
#   multiply every score by $a^2$.
# - Angles of long positions need more precision than float16 or bfloat16 give, and float32
#   is off by about 5e-3 at position $10^5$; posenc is within 2e-7 in float32 up to $10^6$.
# - On the copy task RoPE is the one position method that is as good at four times the
#   training length; at eight times, NTK-aware scaling fixes it without training, and
#   position interpolation needs a short fine-tuning.
#
# ## Exercises
#
# Each exercise has a check that says what is wrong. When you are stuck,
# `nb08.<exercise>.hint()` gives a nudge and `nb08.<exercise>.solution()` prints the
# reference code.

# %%
from posenc.exercises import nb08

# %% [markdown]
# ### Exercise 1 · Rotate a query by hand, half layout
#
# Take one head of 8 channels, the query $q = (1, 2, \dots, 8)$, at position 3. Rotate it
# the way transformers' Llama does (section 3): `q * cos + rotate_half(q) * sin`, with cos
# and sin of the angles $3\,w_j$ laid out in the half layout. Use only `torch` (no posenc).
# The draft below has one mistake; the check names it.

# %%
q8 = torch.arange(1.0, 9.0, dtype=torch.float64)
angles8 = 3 * 10000.0 ** (-torch.arange(0, 8, 2, dtype=torch.float64) / 8)  # 3 w_j, j = 0..3
cos8, sin8 = torch.cat((angles8, angles8)).cos(), torch.cat((angles8, angles8)).sin()
first, second = q8.chunk(2)
my_rotated_q = q8 * cos8 + torch.cat((second, -first)) * sin8  # x * cos + rotate_half(x) * sin

# %%
nb08.rotated_query.check(my_rotated_q)

# %% [markdown]
# ### Exercise 2 · Meta's weights to the half layout
#
# A checkpoint in Meta's interleaved layout has `heads` heads of `head_dim` channels. Write
# `half_rows(heads, head_dim)`: the row order `perm` such that `W_q[perm]` and `W_k[perm]`
# give the same scores with `rotate_half` (section 3). Derive it yourself instead of
# calling `posenc.rotary_permutation`; the check tries 4 heads of 8 and 2 heads of 16.

# %%
def half_rows(heads, head_dim):
    rows = np.arange(heads * head_dim).reshape(heads, 2, head_dim // 2)
    return rows.transpose(0, 2, 1).reshape(-1)


# %%
nb08.half_rows.check(half_rows)

# %% [markdown]
# ### Exercise 3 · The wavelength of one pair under llama3
#
# Llama 3.1's heads have 128 channels and base 500000, and its `llama3` rule uses $s = 8$,
# `low_freq_factor` 1, `high_freq_factor` 4 and $L = 8192$ (section 4). What wavelength, in
# positions, does pair $j = 32$ have after the rule? Compute it by hand with the formula of
# section 4 (NumPy or `math`, no posenc); the draft stops one step short.

# %%
w32 = 500000.0 ** (-2 * 32 / 128)
wavelength32 = 2 * np.pi / w32
my_wavelength = 2 * np.pi / (w32 / 8)

# %%
nb08.llama3_wavelength.check(my_wavelength)

# %% [markdown]
# ## Cross-checks
#
# The batch of checks behind the sentences above that the teaching cells did not assert
# themselves, then NumPy and TensorFlow against PyTorch.

# %%
# Cross-checks of sections 1 to 3
# 1. The four terms add up; content and position terms equal, mixed terms and scores not.
for terms in (near, far):
    assert np.isclose(terms["content"] + terms["content·position"] + terms["position"], terms["score"], rtol=1e-12)
assert near["content"] == far["content"]
assert not np.isclose(near["content·position"], far["content·position"]) and not np.isclose(near["score"], far["score"])
assert not np.isclose(projected_position_term(5, 2), projected_position_term(105, 102))
# 2. posenc's rotation is the matrix and keeps lengths; the added table's score wanders.
torch.testing.assert_close(rotated_q[5], rotation_matrix(5) @ q, rtol=0, atol=1e-13)
torch.testing.assert_close(rotated_q.norm(dim=-1), q.norm().expand(64), rtol=1e-14, atol=0)
assert np.ptp(added) > 1e6 * np.ptp(rotary)
# 3. The frequencies of a head of 8; the row order is the sinusoidal column permutation; unpermuted is wrong.
assert np.allclose(w8, [1, 0.1, 0.01, 0.001], rtol=1e-15)
assert (perm[:HEAD_DIM] == posenc.layout_permutation(HEAD_DIM, "interleaved", "sin_cos")).all()
assert not torch.allclose(unpermuted, reference)

# %%
# Cross-checks of section 4, NTK-aware, dynamic and YaRN
# NTK-aware: w_j s^(-2j/(d-2)), the slowest pair divided by s, pair 1 by 2.2%; dynamic at L is the default.
assert np.allclose(wavelength["NTK-aware"], default * FACTOR ** (2 * pairs / (HEAD - 2)), rtol=1e-13)
assert np.isclose(wavelength["NTK-aware"][-1], FACTOR * default[-1], rtol=1e-13)
assert round(wavelength["NTK-aware"][1] / default[1], 3) == 1.022
at_L = posenc.rotary_frequencies(HEAD, rope_type="dynamic", **{**dynamic, "seq_len": L})[0]
assert np.array_equal(2 * np.pi / at_L, default)
#    YaRN: the slow pairs divided by s, a = 0.1 ln s + 1.
assert np.allclose(wavelength["yarn"][turns < 1], FACTOR * default[turns < 1], rtol=1e-15)
assert np.isclose(a, 0.1 * np.log(FACTOR) + 1, rtol=1e-15)

# %%
# Cross-checks of section 4, llama3, NTK-aware against s, LongRoPE
# llama3: kept below L/4, stretched above L, between the two; both factors 1 make a step at L.
assert (wavelength["llama3"][keep] == default[keep]).all()
assert np.allclose(wavelength["llama3"][stretch], FACTOR * default[stretch], rtol=1e-15)
assert between.any() and (default[between] < wavelength["llama3"][between]).all()
assert (wavelength["llama3"][between] < FACTOR * default[between]).all()
step = 2 * np.pi / posenc.rotary_frequencies(HEAD, rope_type="llama3", **{**llama3, "high_freq_factor": 1})[0]
assert (step[default < L] == default[default < L]).all()
assert np.allclose(step[default > L], FACTOR * default[default > L], rtol=1e-15)
#    NTK-aware with a fixed s stretches all but the slowest long wavelength less than s; all but linear keep pair 0.
assert (wavelength["NTK-aware"][default > L][:-1] < FACTOR * default[default > L][:-1]).all()
for name in ["NTK-aware", "dynamic", "yarn", "llama3"]:
    assert wavelength[name][0] == default[0], name
#    LongRoPE: 48 factors up to 64.81, the fastest pair slowed, a = sqrt(1 + ln s / ln L).
assert len(PHI3_VISION_LONG_FACTOR) == 48 and PHI3_VISION_LONG_FACTOR[-1] == 64.81 and w_phi3[0] < w_96[0]
assert np.isclose(a_phi3, np.sqrt(1 + np.log(32) / np.log(4096)), rtol=1e-15)

# %%
# Cross-checks of section 5: the gpt-neox report's numbers; 5 rad at 4095; float16's end and bfloat16's rounding.
assert round(angles_fp32[1857, 1].item(), 2) == 1044.27 and angles_fp16[1857, 1].item() == 1045
assert round(error_fp16.max().item(), 2) == 0.78
assert angle_error[0] == 0 and round(angle_error.max()) == 5
assert torch.tensor([65519.0, 65520.0]).half().tolist() == [65504.0, float("inf")]
assert torch.tensor(15962.0).bfloat16().item() == 15936
#    posenc's bfloat16 promise; the float32 route to one significant digit, and above 1e-3 from 1e5 on;
#    any bfloat16 in the route reaches 0.5 by position 4096.
assert errors["posenc, bfloat16"].max() <= 2.0**-9 + 2e-7
float32_error = errors["float32 (transformers)"]
assert f"{float32_error[sample == 10**5][0]:.0e}" == "5e-03" and f"{float32_error[sample == 10**6][0]:.0e}" == "5e-02"
assert (float32_error[sample >= 1e5] > 1e-3).all()
for name in ["inv_freq in bfloat16", "positions in bfloat16", "all in bfloat16 (candle before 3520)"]:
    assert errors[name][sample <= 4096].max() > 0.5, name

# %%
# Cross-checks of section 6 and of the exercises
# 6. The copy task: the claims of the prose, each bound as stated there.
for name in ["learned", "sinusoidal", "rotary"]:
    assert by_position[name, 12].mean() > 0.9, name
assert abs(by_position["none", 12].mean() - ceilings[12]) < 0.05
assert by_position["sinusoidal", 24][unseen].mean() < 0.5 and by_position["sinusoidal", 48][unseen].mean() < 0.5
assert (by_position["rotary", 24] > 0.95).all()
assert at_96["default"][aliased].mean() < 0.7
assert round(2 * np.pi / w_head[1], 1) == 62.8
for offset in (62, -64):
    turn = np.abs(np.angle(np.exp(1j * (offset - (-1)) * w_head)))
    assert (turn[:2] < 0.17).all() and np.allclose(turn[2:], [0.63, 0.063], rtol=1e-12), offset
assert ntk_model[2].rotary.inv_freq[0] == 1 and round(2 * np.pi / ntk_model[2].rotary.inv_freq[1].item(), 1) == 99.7
assert accuracy_by_position(ntk_model, *test_sets[12]).mean() > 0.99
assert all(before[n] < 0.5 for n in test_sets) and all(after[n] > 0.95 for n in test_sets)
# The exercises' reference answers agree with posenc.
assert nb08.rotated_query.check(posenc.torch.apply_rotary(q8, *posenc.torch.rotary_cos_sin(torch.tensor([3]), 8, dtype=torch.float64))[0])
assert nb08.half_rows.check(lambda heads, head_dim: posenc.rotary_permutation(head_dim, "interleaved", "half", heads=heads))
llama31 = dict(factor=8, low_freq_factor=1, high_freq_factor=4, original_max_position_embeddings=8192)
assert nb08.llama3_wavelength.check(2 * np.pi / posenc.rotary_frequencies(128, 500000.0, rope_type="llama3", **llama31)[0][32])

# %% [markdown]
# The same functions exist in `posenc` (NumPy) and `posenc.tensorflow`, and
# `posenc.tensorflow.RotaryEmbedding` is a Keras layer like the PyTorch module: the same
# YaRN cos and sin bit for bit, and the same rotated vectors to float32 round-off.
# TensorFlow reads two environment variables when it loads, so they are set first.

# %%
# Cross-checks: NumPy and TensorFlow against PyTorch, YaRN's cos and sin and the rotated vectors
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")
import tensorflow as tf
import posenc.tensorflow

positions = np.array([[0, 1, 4095, 65536, 999_999]])
x = np.random.default_rng(4).standard_normal((1, 5, 64)).astype(np.float32)
cos_sin = {
    "numpy": posenc.rotary_cos_sin(positions, 64, rope_type="yarn", **yarn),
    "torch": posenc.torch.RotaryEmbedding(64, rope_type="yarn", **yarn)(torch.from_numpy(x), torch.from_numpy(positions)),
    "tensorflow": posenc.tensorflow.RotaryEmbedding(64, rope_type="yarn", **yarn)(tf.constant(x), tf.constant(positions)),
}
rotated = {
    "numpy": posenc.apply_rotary(x, *cos_sin["numpy"]),
    "torch": posenc.torch.apply_rotary(torch.from_numpy(x), *cos_sin["torch"]).numpy(),
    "tensorflow": posenc.tensorflow.apply_rotary(tf.constant(x), *cos_sin["tensorflow"]).numpy(),
}
for name in ["torch", "tensorflow"]:
    for ours, theirs in zip(cos_sin["numpy"], cos_sin[name]):
        np.testing.assert_array_equal(np.asarray(theirs), ours)
    np.testing.assert_allclose(rotated[name], rotated["numpy"], rtol=0, atol=1e-6)

# %% [markdown]
# This run's time:

# %%
# NBVAL_IGNORE_OUTPUT
print(f"{time.perf_counter() - started:.0f} s")
