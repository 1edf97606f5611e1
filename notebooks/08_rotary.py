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
import time

import matplotlib.pyplot as plt
import mpmath
import numpy as np
import torch
from torch import nn

import posenc
import posenc.torch
from posenc.copy_task import (
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
# only (notebook 04). The two mixed terms do not, and they move the score although
# nothing but the absolute position changed.

# %%
for terms in (near, far):
    assert np.isclose(terms["content"] + terms["content·position"] + terms["position"], terms["score"], rtol=1e-12)
assert near["content"] == far["content"]
assert abs(near["position"] - far["position"]) < 1e-12
assert abs(near["content·position"] - far["content·position"]) > 1
assert abs(near["score"] - far["score"]) > 1

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
assert abs(projected_position_term(5, 2) - projected_position_term(105, 102)) > 0.5

# %% [markdown]
# ## 2. Rotate queries and keys instead
#
# RoPE (Su et al., 2021) adds nothing to the token vectors. It takes the query and the key
# *after* their projections, splits their channels into pairs, and turns pair $j$ of the
# vector at position $p$ by the angle $p\,w_j$, with the sinusoidal frequencies
# $w_j = 10000^{-2j/d}$. A rotation by $a$ followed by the transpose of a rotation by $b$ is a
# rotation by $a - b$, so
#
# $$\big(R(p\,w)\,q\big)\cdot\big(R(s\,w)\,k\big) = q \cdot R\big((s - p)\,w\big)\,k,$$
#
# a function of the offset $p - s$ alone. Here is the rotation written out in PyTorch, with
# the channels $2j$ and $2j + 1$ as pair $j$:

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
# agree with the cell above to float64 round-off, and a rotation keeps the length of every
# vector.

# %%
positions = torch.arange(64)
q, k = torch.randn(2, D, dtype=torch.float64)
cos, sin = posenc.torch.rotary_cos_sin(positions, D, layout="interleaved", dtype=torch.float64)
rotated_q = posenc.torch.apply_rotary(q.expand(64, D), cos, sin, layout="interleaved")
rotated_k = posenc.torch.apply_rotary(k.expand(64, D), cos, sin, layout="interleaved")

torch.testing.assert_close(rotated_q, rotate(q.expand(64, D), positions), rtol=0, atol=1e-13)
torch.testing.assert_close(rotated_q.norm(dim=-1), q.norm().expand(64), rtol=1e-14, atol=0)
print("cos, sin:", tuple(cos.shape), " rotated q:", tuple(rotated_q.shape))

# %% [markdown]
# The scores of the rotated query at every position $p$ against the rotated key at every
# position $s$ form a $64 \times 64$ matrix. If the score depends on $p - s$ only, every
# diagonal of that matrix is constant, and equals $q \cdot R((s - p)w)\,k$, the key turned by
# the offset alone. Both hold to within 1e-12, float64 round-off on scores of this size.

# %%
scores = rotated_q @ rotated_k.T  # scores[p, s]
offsets = positions[None, :] - positions[:, None]  # s - p
by_offset = rotate(k.expand(127, D), torch.arange(-63, 64)) @ q  # q · R(o w) k for o = -63..63
torch.testing.assert_close(scores, by_offset[offsets + 63], rtol=0, atol=1e-12)
print(f"scores from {scores.min().item():.1f} to {scores.max().item():.1f}")

# %% [markdown]
# The same two tokens as in section 1, slid along the sequence at offset 3: with the added
# table the score wanders with the absolute position; with RoPE it stays put.

# %%
slide = np.arange(200)
added = [four_terms(p + 3, p)["score"] for p in slide]
a_rot = rotate(torch.from_numpy(x_a).expand(200, D), torch.from_numpy(slide + 3))
b_rot = rotate(torch.from_numpy(x_b).expand(200, D), torch.from_numpy(slide))
rotary = (a_rot * b_rot).sum(-1).numpy()
assert np.ptp(rotary) < 1e-12 and np.ptp(added) > 10

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
# - **interleaved**: channel $2j$ with $2j + 1$. GPT-J and Meta's reference Llama code (which
#   treats each pair as one complex number).
# - **half**: channel $j$ with $j + d/2$. GPT-NeoX and Hugging Face transformers, whose
#   `rotate_half(x)` is `cat(-x2, x1)` of the two halves of the head.
#
# For a head of 8 channels, the frequency each channel turns at (read back from the sine
# at position 1, $\sin w_j$):

# %%
def frequency_of_each_channel(layout, head_dim=8):
    _, sin1 = posenc.rotary_cos_sin([1], head_dim, layout=layout, dtype=np.float64)
    w = posenc.rotary_frequencies(head_dim)[0]
    return np.abs(np.arcsin(sin1[0])[:, None] - w).argmin(axis=1)


for layout in posenc.ROTARY_LAYOUTS:
    print(f"{layout:>11}: channel -> pair {frequency_of_each_channel(layout)}")

# %% [markdown]
# The half layout is transformers' formula `x * cos + rotate_half(x) * sin`:

# %%
def rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


x = torch.randn(10, D, dtype=torch.float64)
cos, sin = posenc.torch.rotary_cos_sin(torch.arange(10), D, layout="half", dtype=torch.float64)
torch.testing.assert_close(posenc.torch.apply_rotary(x, cos, sin, layout="half"), x * cos + rotate_half(x) * sin)
print("apply_rotary(layout='half') == x * cos + rotate_half(x) * sin")

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
assert (perm == script.numpy()).all()
assert (perm[:HEAD_DIM] == posenc.layout_permutation(HEAD_DIM, "interleaved", "sin_cos")).all()
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


meta_q, meta_k = torch.randn(2, D_MODEL, D_MODEL, dtype=torch.float64)
x = torch.randn(10, D_MODEL, dtype=torch.float64)
hf_q, hf_k = (posenc.convert_rotary_layout(w, "interleaved", "half", heads=HEADS) for w in (meta_q, meta_k))

reference = rotary_scores(meta_q, meta_k, x, "interleaved")
torch.testing.assert_close(rotary_scores(hf_q, hf_k, x, "half"), reference, rtol=0, atol=1e-12)
wrong = rotary_scores(meta_q, meta_k, x, "half")
assert (wrong - reference).abs().max() > 1
print(f"same scores after the permutation; without it they differ by up to {(wrong - reference).abs().max().item():.0f}")

# %% [markdown]
# ## 4. Frequency rules for longer contexts
#
# A model trained on sequences of $L$ tokens has seen pair $j$ at angles below $L\,w_j$. The
# pairs whose wavelength $2\pi / w_j$ is longer than $L$ never made a full turn in training;
# at positions beyond $L$ they reach angles the model never saw. transformers'
# `modeling_rope_utils` has one rule per `rope_type` for changing the frequencies (and for
# some, the size of cos and sin, the *attention factor*); `posenc.rotary_frequencies` takes the
# same names and parameters. We take a head of 128 channels, base 10000, $L = 4096$ and a
# target of four times that:
#
# - `default`: $w_j = 10000^{-2j/d}$, unchanged;
# - `linear` (position interpolation): every $w_j$ divided by `factor`;
# - `dynamic` (NTK-aware): a larger base, from the length actually used (`seq_len`);
# - `yarn`: pairs turning often within $L$ kept, pairs turning less than once divided by
#   `factor`, a ramp between; cos and sin scaled up;
# - `longrope`: each $w_j$ divided by its own factor (here a made-up list rising from 1 to 8);
#   cos and sin scaled up;
# - `llama3`: short wavelengths kept, long ones divided by `factor`, a smooth blend between.

# %%
HEAD, L, FACTOR = 128, 4096, 4
long_factor = np.geomspace(1, 8, HEAD // 2)
ROPE_TYPES = {
    "default": {},
    "linear": dict(factor=FACTOR),
    "dynamic": dict(factor=FACTOR, max_position_embeddings=L, seq_len=FACTOR * L),
    "yarn": dict(factor=FACTOR, original_max_position_embeddings=L),
    "longrope": dict(factor=FACTOR, short_factor=[1.0] * (HEAD // 2), long_factor=list(long_factor),
                     original_max_position_embeddings=L, seq_len=FACTOR * L),
    "llama3": dict(factor=FACTOR, original_max_position_embeddings=L, low_freq_factor=1, high_freq_factor=4),
}
frequencies = {name: posenc.rotary_frequencies(HEAD, rope_type=name, **params) for name, params in ROPE_TYPES.items()}
wavelength = {name: 2 * np.pi / w for name, (w, _) in frequencies.items()}

# %%
fig, ax = plt.subplots(figsize=(8, 4.5))
for name, lengths in wavelength.items():
    ax.plot(lengths, label=name, linestyle="--" if name == "default" else "-")
ax.axhline(L, color="gray", linewidth=0.8)
ax.axhline(FACTOR * L, color="gray", linewidth=0.8, linestyle=":")
ax.text(0, L * 1.15, "training length L", fontsize=8)
ax.text(0, FACTOR * L * 1.15, "target 4L", fontsize=8)
ax.set(yscale="log", xlabel="pair j", ylabel="wavelength 2π / w_j (positions)",
       title="RoPE frequency rules, head of 128, base 10000, L = 4096, factor 4")
ax.legend()
plt.show()

# %% [markdown]
# What each rule does, checked against the defaults $\lambda_j = 2\pi \cdot 10000^{2j/d}$:
#
# - `linear` stretches every wavelength 4 times: position $p$ now turns each pair as far as
#   position $p/4$ did, so positions up to $4L$ land on angles of positions up to $L$.
# - `dynamic` keeps the shortest wavelength and stretches pair $j$ by
#   $c^{2j/(d-2)}$ with $c$ = `factor` · `seq_len` / $L$ − (`factor` − 1) = 13, the longest by 13.
# - `yarn` keeps every pair that turns more than 32 times within $L$ (`beta_fast`),
#   stretches every pair that turns less than once (`beta_slow`) by exactly 4, and sets the
#   attention factor to $0.1 \ln 4 + 1$.
# - `longrope` stretches pair $j$ by its long factor (the short factors, all 1 here, apply up
#   to $L$) and sets the attention factor to $\sqrt{1 + \ln 4 / \ln L}$.
# - `llama3` keeps wavelengths below $L/4$ (`high_freq_factor`), stretches those above $L$
#   (`low_freq_factor` 1) by 4, and puts the ones between strictly between.
#
# Every rule but `linear` keeps the shortest wavelength, $2\pi$, of the pair that turns most
# often within $L$ and so was seen at every angle; and every rule but `default` stretches each
# wavelength longer than $L$ at least 4 times, so up to $4L$ those pairs stay within the
# angles of training.

# %%
default = wavelength["default"]
pairs = np.arange(HEAD // 2)
turns = L / default  # full turns of each pair within the training length

assert np.allclose(wavelength["linear"], FACTOR * default, rtol=1e-15)
c = FACTOR * (FACTOR * L) / L - (FACTOR - 1)  # factor * seq_len / L - (factor - 1)
assert c == 13 and np.allclose(wavelength["dynamic"], default * c ** (2 * pairs / (HEAD - 2)), rtol=1e-13)
assert wavelength["dynamic"][0] == default[0]
assert (wavelength["yarn"][turns > 32] == default[turns > 32]).all()
assert np.allclose(wavelength["yarn"][turns < 1], FACTOR * default[turns < 1], rtol=1e-15)
assert np.isclose(frequencies["yarn"][1], 0.1 * np.log(FACTOR) + 1, rtol=1e-15)
assert np.allclose(wavelength["longrope"], long_factor * default, rtol=1e-15)
assert np.isclose(frequencies["longrope"][1], np.sqrt(1 + np.log(FACTOR) / np.log(L)), rtol=1e-15)
short = posenc.rotary_frequencies(HEAD, rope_type="longrope", **{**ROPE_TYPES["longrope"], "seq_len": L})[0]
assert (short == frequencies["default"][0]).all()
# %%
keep, stretch = default < L / 4, default > L
assert (wavelength["llama3"][keep] == default[keep]).all()
assert np.allclose(wavelength["llama3"][stretch], FACTOR * default[stretch], rtol=1e-15)
between = ~keep & ~stretch
assert between.any() and (default[between] < wavelength["llama3"][between]).all()
assert (wavelength["llama3"][between] < FACTOR * default[between]).all()
for name in ROPE_TYPES:
    if name != "linear":
        assert wavelength[name][0] == default[0], name
    if name != "default":
        assert (wavelength[name][default > L] >= FACTOR * default[default > L] * (1 - 1e-15)).all(), name
print(f"pairs with a wavelength longer than L: {(default > L).sum()} of {HEAD // 2}; "
      f"turning more than 32 times within L: {(turns > 32).sum()}")

# %% [markdown]
# ## 5. Precision at long positions
#
# The angle $p\,w_j$ grows with the position, and a floating-point number of size $p\,w_j$
# is only as exact as its last bit. Three public reports, reproduced in miniature.
#
# **Cos and sin tables in float16** (EleutherAI/gpt-neox issue 1003): with head size 32, the
# angle of pair 1 at position 1857 should be 1044.27; in float16 it comes out as 1045, and
# over the 2048 positions of the table the cosine is off by up to 0.78.

# %%
def float32_frequencies(head_dim, base=10000.0):
    """inv_freq as transformers and GPT-NeoX compute it: float32, 1 / base ** (2j / d)."""
    return 1.0 / (base ** (torch.arange(0, head_dim, 2, dtype=torch.int64).float() / head_dim))


inv_freq = float32_frequencies(32)
angles_fp32 = torch.outer(torch.arange(2048).float(), inv_freq)
angles_fp16 = torch.outer(torch.arange(2048).half(), inv_freq.half())
error_fp16 = (angles_fp16.cos().float() - angles_fp32.cos()).abs()
assert round(angles_fp32[1857, 1].item(), 2) == 1044.27 and angles_fp16[1857, 1].item() == 1045
assert round(error_fp16.max().item(), 2) == 0.78

cos16, _ = posenc.torch.rotary_cos_sin(torch.arange(2048), 32, dtype=torch.float16)
exact = np.cos(np.outer(np.arange(2048), posenc.rotary_frequencies(32)[0]))
posenc_error_fp16 = np.abs(cos16[:, :16].double().numpy() - exact).max()
assert posenc_error_fp16 <= 2.0**-12 + 2e-7  # posenc's promise: one float16 rounding of a value within 2e-7
print(f"posenc in float16, same table: largest error {posenc_error_fp16:.1e}")

# %% [markdown]
# **inv_freq rounded to bfloat16** (sgl-project/sglang-jax issue 1472): the frequencies were
# cast to the model's bfloat16 before the product with float32 positions. bfloat16 keeps 8
# significant bits, so $w_j$ is off by up to 1 part in 256, and at position 4095 the angles
# are off by radians:

# %%
inv_freq = float32_frequencies(128)
angles = 4095 * inv_freq.bfloat16().float()
exact = 4095 * posenc.rotary_frequencies(128)[0]
cos_sin_error = np.abs(np.concatenate([np.cos(angles.numpy()) - np.cos(exact), np.sin(angles.numpy()) - np.sin(exact)]))
relative = (inv_freq.bfloat16().double() / inv_freq.double() - 1).abs().max().item()
assert relative <= 2.0**-8 and np.abs(angles.numpy() - exact).max() > 1
print(f"of the 128 values of cos and sin at position 4095, {(cos_sin_error > 0.01).sum()} are off by more than 0.01,")
print(f"the worst by {cos_sin_error.max():.2f}; the largest angle error is {np.abs(angles.numpy() - exact).max():.1f} rad")

# %% [markdown]
# **Positions in a half-precision type** (as in huggingface/candle issue 3520): position ids
# cast to the model's dtype before the product. From 16 384 on, float16 holds only every
# 16th integer; bfloat16 holds every 64th between 8192 and 16 384 and every 128th above,
# and only every 16th already between 2048 and 4096.

# %%
def representable(start, stop, dtype):
    """The integers of [start, stop) that survive a round trip through dtype."""
    values = torch.arange(start, stop, dtype=torch.float64)
    return values[values.to(dtype).double() == values].long()


assert (torch.diff(representable(16384, 32768, torch.float16)) == 16).all()
assert (torch.diff(representable(8192, 16385, torch.bfloat16)) == 64).all()
assert (torch.diff(representable(16384, 32769, torch.bfloat16)) == 128).all()
assert (torch.diff(representable(2048, 4097, torch.bfloat16)) == 16).all()
print("positions near 16384:", representable(16200, 16700, torch.bfloat16).tolist(), "in bfloat16")

# %% [markdown]
# **posenc's error against position.** transformers computes the table in float32
# (`inv_freq @ position_ids`, then cos and sin), the first line below. posenc carries each
# angle in two float64 numbers (about twice float64's digits) and promises cos and sin within
# 2e-7 of the exact value in float32, and within one rounding of such a value in float16 and
# bfloat16. We compare with an exact mpmath reference at positions from 1 to $10^6$, head
# size 128, over all 64 pairs:

# %%
sample = np.unique(np.geomspace(1, 1e6, 49).round()).astype(np.int64)
w_exact = [mpmath.mpf(10000) ** (-mpmath.mpf(2 * j) / 128) for j in range(64)]
with mpmath.workdps(40):
    exact_cos = np.array([[float(mpmath.cos(int(p) * w)) for w in w_exact] for p in sample])
    exact_sin = np.array([[float(mpmath.sin(int(p) * w)) for w in w_exact] for p in sample])


def worst_error(cos, sin):
    """Largest |error| of cos and sin (positions, 64) at each sampled position."""
    cos, sin = (torch.as_tensor(t).double().numpy() for t in (cos, sin))
    return np.maximum(np.abs(cos - exact_cos), np.abs(sin - exact_sin)).max(axis=1)


def float32_route(positions_dtype=torch.float32, inv_freq_dtype=torch.float32):
    inv_freq = float32_frequencies(128).to(inv_freq_dtype).float()
    angles = torch.outer(torch.from_numpy(sample).to(positions_dtype).float(), inv_freq)
    return angles.cos(), angles.sin()


def posenc_route(dtype):
    cos, sin = posenc.torch.rotary_cos_sin(torch.from_numpy(sample), 128, dtype=dtype)
    return cos[:, :64], sin[:, :64]


# %%
errors = {
    "float32 (inv_freq @ positions)": worst_error(*float32_route()),
    "inv_freq in bfloat16": worst_error(*float32_route(inv_freq_dtype=torch.bfloat16)),
    "positions in bfloat16": worst_error(*float32_route(positions_dtype=torch.bfloat16)),
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
# at most 1) plus 2e-7. The float32 route is off by more than 1e-3 at every sampled
# position from $10^5$ on, and by more than 1e-2 at $10^6$; with the frequencies or the
# positions in bfloat16 the error reaches the size of cos and sin themselves (above 0.5)
# by position 4096.

# %%
assert errors["posenc, float32"].max() <= 2e-7
assert errors["posenc, bfloat16"].max() <= 2.0**-9 + 2e-7
assert (errors["float32 (inv_freq @ positions)"][sample >= 1e5] > 1e-3).all()
assert errors["float32 (inv_freq @ positions)"][sample == 10**6] > 1e-2
assert errors["inv_freq in bfloat16"][sample <= 4096].max() > 0.5
assert errors["positions in bfloat16"][sample <= 4096].max() > 0.5
print(f"{'position':>30}" + "".join(f"{p:>11,}" for p in [10**3, 10**4, 10**5, 10**6]))
for name, error in errors.items():
    print(f"{name:>30}" + "".join(f"{error[sample == p][0]:11.1e}" for p in [10**3, 10**4, 10**5, 10**6]))

# %% [markdown]
# ## 6. In a Transformer: copy the previous token
#
# Notebook 07's task: sequences of 12 random tokens out of 16, and at each position the
# model must output the token one place to its left (position 0 is not scored). The helpers
# are notebook 07's, imported above from `posenc.copy_task`: `copy_previous_task`,
# `accuracy`, `order_blind_ceiling`, `train`, `predict`, `first_step_above` and
# `LearnedPositions`.

# %%
assert (VOCAB, TRAIN_LENGTH) == (16, 12)
test_sets = {n: copy_previous_task(np.random.default_rng(n), 1000, n) for n in [TRAIN_LENGTH, 24, 48]}
ceilings = {n: order_blind_ceiling(tokens) for n, (tokens, _) in test_sets.items()}

# %% [markdown]
# PyTorch's `nn.TransformerEncoderLayer` gives no access to the queries and keys, so we
# write the same layer out (post-norm, 4 heads, feed-forward of 64, ReLU, no dropout) with
# one switch: rotate queries and keys with RoPE or not. All four models use it; the other
# three add their positions to the token embeddings as in notebook 07. RoPE's cos and sin
# come from `posenc.torch.RotaryEmbedding`, a module like transformers' rotary embeddings:
# `forward(x, position_ids)` returns `(cos, sin)`.

# %%
D_MODEL, HEADS = 32, 4
HEAD_DIM = D_MODEL // HEADS


class EncoderLayer(nn.Module):
    def __init__(self, rotary=False):
        super().__init__()
        self.qkv, self.out = nn.Linear(D_MODEL, 3 * D_MODEL), nn.Linear(D_MODEL, D_MODEL)
        self.norm1, self.norm2 = nn.LayerNorm(D_MODEL), nn.LayerNorm(D_MODEL)
        self.feed_forward = nn.Sequential(nn.Linear(D_MODEL, 64), nn.ReLU(), nn.Linear(64, D_MODEL))
        self.rotary = posenc.torch.RotaryEmbedding(HEAD_DIM) if rotary else None

    def forward(self, x):
        batch, length, _ = x.shape
        q, k, v = self.qkv(x).view(batch, length, 3, HEADS, HEAD_DIM).permute(2, 0, 3, 1, 4)
        if self.rotary is not None:
            cos, sin = self.rotary(q, torch.arange(length)[None])
            cos, sin = cos[:, None], sin[:, None]  # the same for every head
            q, k = posenc.torch.apply_rotary(q, cos, sin), posenc.torch.apply_rotary(k, cos, sin)
        attended = nn.functional.scaled_dot_product_attention(q, k, v).transpose(1, 2).reshape(batch, length, D_MODEL)
        x = self.norm1(x + self.out(attended))
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
    layer = EncoderLayer(rotary=positions == "rotary")
    return nn.Sequential(nn.Embedding(VOCAB, D_MODEL), ADDED[positions](), layer, nn.Linear(D_MODEL, VOCAB))


# %% [markdown]
# Training as in notebook 07: 300 steps of Adam on batches of 64 fresh sequences, the same
# sequences in the same order for every model.

# %%
assert (STEPS, BATCH) == (300, 64)
train_tokens, train_targets = copy_previous_task(np.random.default_rng(1), STEPS * BATCH, TRAIN_LENGTH)
models = {name: tiny_transformer(name) for name in ADDED}
curves = {name: train(model, train_tokens, train_targets, steps=STEPS)[1] for name, model in models.items()}

# %% [markdown]
# Accuracy on 1000 fresh sequences of the training length and of two and four times it,
# split into the positions below 12 (seen in training) and from 12 on (never seen). The
# learned table has no rows past position 11, so that model runs at length 12 only.

# %%
def accuracy_by_position(model, length):
    tokens, targets = test_sets[length]
    return (predict(model, tokens)[:, 1:] == targets[:, 1:]).mean(axis=0)  # positions 1..length-1


by_position = {(name, n): accuracy_by_position(model, n) for name, model in models.items()
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
# At the training length, all three position methods solve the task and the model without
# positions stays at the order-blind ceiling. Past it, the sinusoidal model fails at the
# positions it never saw (below 0.5), as in notebook 07. The RoPE model is above 0.95 at
# every position of sequences four times as long: it only has to attend to the offset −1,
# and with RoPE the score of that offset is the same at every position.

# %%
for name in ["learned", "sinusoidal", "rotary"]:
    assert by_position[name, 12].mean() > 0.9, name
assert abs(by_position["none", 12].mean() - ceilings[12]) < 0.05
assert by_position["sinusoidal", 24][unseen].mean() < 0.5 and by_position["sinusoidal", 48][unseen].mean() < 0.5
assert (by_position["rotary", 24] > 0.95).all() and (by_position["rotary", 48] > 0.95).all()
assert abs(by_position["rotary", 48].mean() - by_position["rotary", 12].mean()) < 0.02
print("length 12: learned, sinusoidal, rotary > 0.9; no positions within 0.05 of the ceiling")
print("lengths 24, 48: sinusoidal < 0.5 at unseen positions; rotary > 0.95 at every position")

# %%
fig, ax = plt.subplots(figsize=(9, 3.5))
for name in ["none", "sinusoidal", "rotary"]:
    ax.plot(range(1, 48), by_position[name, 48], color=COLORS[name], marker=".", label=f"{name}, length 48")
ax.axvline(TRAIN_LENGTH - 0.5, color="gray", linestyle="--", label="training length")
ax.set(xlabel="position", ylabel="accuracy", ylim=(0, 1.05), title="copy the previous token, 4 times the training length")
ax.legend()
plt.show()

# %% [markdown]
# ## Position interpolation
#
# Position interpolation (`rope_type="linear"`) divides the frequencies by a factor, the same
# as dividing the positions by it, so that a sequence twice as long is turned like one of
# the training length (positions 0 to 23 become 0 to 11.5). It changes the offsets too:
# neighbours are now half a position apart, an angle the model never saw. Applied to the
# trained RoPE model with a factor of 2 and no more training, it breaks the model, even at
# the training length. Fine-tuning with the interpolated positions on 50 batches of length
# 24 repairs it at every length, and a training batch is above 0.9 after fewer steps than
# the model needed from scratch.

# %%
interpolated = models["rotary"]
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
assert all(before[n] < 0.5 for n in test_sets)
assert all(after[n] > 0.95 for n in test_sets)
assert first_step_above(fine_tuning) < first_step_above(curves["rotary"])
print("factor 2 without fine-tuning: < 0.5 at every length; after 50 batches: > 0.95 at every length")

# %% [markdown]
# ## 7. NumPy and TensorFlow agree with PyTorch
#
# The same functions exist in `posenc` (NumPy) and `posenc.tensorflow`, and
# `posenc.tensorflow.RotaryEmbedding` is a Keras layer like the PyTorch module. TensorFlow
# reads two environment variables when it loads, so they are set first.

# %%
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")

import tensorflow as tf

import posenc.tensorflow

positions = np.array([[0, 1, 4095, 65536, 999_999]])
x = np.random.default_rng(4).standard_normal((1, 5, 64)).astype(np.float32)
yarn = dict(rope_type="yarn", **ROPE_TYPES["yarn"])
cos_sin = {
    "numpy": posenc.rotary_cos_sin(positions, 64, **yarn),
    "torch": posenc.torch.RotaryEmbedding(64, **yarn)(torch.from_numpy(x), torch.from_numpy(positions)),
    "tensorflow": posenc.tensorflow.RotaryEmbedding(64, **yarn)(tf.constant(x), tf.constant(positions)),
}
# %%
rotated = {
    "numpy": posenc.apply_rotary(x, *cos_sin["numpy"]),
    "torch": posenc.torch.apply_rotary(torch.from_numpy(x), *cos_sin["torch"]).numpy(),
    "tensorflow": posenc.tensorflow.apply_rotary(tf.constant(x), *cos_sin["tensorflow"]).numpy(),
}
for name in ["torch", "tensorflow"]:
    for ours, theirs in zip(cos_sin["numpy"], cos_sin[name]):
        np.testing.assert_array_equal(np.asarray(theirs), ours)
    np.testing.assert_allclose(rotated[name], rotated["numpy"], rtol=0, atol=1e-6)
print("cos, sin: identical in NumPy, PyTorch and TensorFlow; rotated vectors within 1e-6")

# %% [markdown]
# ## Summary
#
# - An added position vector puts content·position cross terms into every attention score,
#   so the score of two tokens depends on where they sit, not only on their distance.
# - RoPE rotates queries and keys by $p\,w_j$ instead; the score then depends on the offset
#   alone, to float64 round-off.
# - Interleaved (GPT-J, Meta) and half (GPT-NeoX, Hugging Face) pair different channels;
#   permuting the rows of $W_q$, $W_k$ per head moves a checkpoint between them exactly.
# - The rope types stretch the long wavelengths for longer contexts, each by its own rule;
#   all but `linear` keep the shortest.
# - Angles of long positions need more precision than float16 or bfloat16 give, and float32
#   is off by more than 1e-3 from position $10^5$; posenc is within 2e-7 in float32 up to
#   $10^6$.
# - On the copy task RoPE is the one position method that is as good at four times the
#   training length, and position interpolation needs a short fine-tuning.
#
# This run's time:

# %%
# NBVAL_IGNORE_OUTPUT
print(f"{time.perf_counter() - started:.0f} s")
