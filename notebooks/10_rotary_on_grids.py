# %% [markdown]
# # 10 · Rotary position embedding on grids and in video
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/posenc-org/posenc/blob/main/notebooks/10_rotary_on_grids.ipynb)
#
# Notebook 08 rotated queries and keys by the position of a token in a sequence. The
# patches of an image have a row and a column, and the frames of a video a time as well.
# Vision-language models give RoPE those extra coordinates in a simple way: every rotary
# pair of channels reads *one* coordinate. This notebook shows 2-D RoPE on an image grid
# (Pixtral, the Qwen2-VL vision tower), M-RoPE's three position rows for a sequence of text,
# an image and a video (Qwen2-VL, Qwen3-VL), and `RotaryEmbedding.from_config`, which builds
# posenc's rotary module from a Hugging Face config.

# %%
# On Colab, install posenc from GitHub; elsewhere `make lab` has already installed it.
import sys

if "google.colab" in sys.modules:
    # %pip install --quiet "posenc @ git+https://github.com/posenc-org/posenc@main"
    # configs with rope_parameters need transformers 5
    # %pip install --quiet "transformers>=5"

# %%
# %matplotlib inline
import time
import warnings

import matplotlib.pyplot as plt
import numpy as np
import torch

warnings.filterwarnings("ignore", message="IProgress not found")  # tqdm's, when transformers loads it
import transformers  # noqa: E402

import posenc  # noqa: E402
import posenc.torch  # noqa: E402
from posenc import rotary_grid  # noqa: E402

torch.set_num_threads(1)
torch.manual_seed(0)
rng = np.random.default_rng(0)
started = time.perf_counter()

# %% [markdown]
# ## 1. 2-D RoPE: each pair reads the row or the column
#
# A head of $d$ channels has $d/2$ rotary pairs. In the Qwen2-VL vision tower the first
# $d/4$ pairs turn by the patch's **row** $r$, the other $d/4$ by its **column** $c$, each
# quarter with the frequencies $w_i = 10000^{-4i/d}$. Pixtral splits the $d/2$ frequencies of
# 1-D RoPE instead: the even ones for the row, the odd ones for the column.

# %%
d = 32
hi, _, axes = rotary_grid.axial_parts(d, convention="qwen2_vl")
pixtral, _, _ = rotary_grid.axial_parts(d, convention="pixtral")
one_d = posenc.rotary_frequencies(d)[0]
print("axis of each pair:", axes)
print("Qwen2-VL row frequencies:", np.round(hi[:4], 4))
print("Pixtral  row frequencies:", np.round(pixtral[:4], 4))
np.testing.assert_array_equal(hi[:8], hi[8:])  # same frequencies for rows and columns
np.testing.assert_allclose(pixtral, np.concatenate([one_d[0::2], one_d[1::2]]), rtol=1e-15)

# %% [markdown]
# A grid of 6 x 8 patches, flattened row by row (Pixtral's order); `grid_position_ids` gives
# each token's (row, column). With cos and sin of those angles we rotate one query and one
# key vector at every patch.

# %%
height, width = 6, 8
ids = rotary_grid.grid_position_ids(height, width)  # (2, 48): rows, columns
cos, sin = rotary_grid.axial_cos_sin(ids, d, dtype=np.float64)
q, k = rng.standard_normal((2, d))
queries = posenc.apply_rotary(np.broadcast_to(q, cos.shape), cos, sin)
keys = posenc.apply_rotary(np.broadcast_to(k, cos.shape), cos, sin)
scores = queries @ keys.T  # (48, 48): query patch against key patch
print("positions of tokens 0, 1, 8:", ids[:, [0, 1, 8]].T.tolist())
print("scores:", scores.shape)

# %% [markdown]
# **The score depends on the 2-D offset only.** Every pair of patches with the same
# (row offset, column offset) has the same score, to float64 round-off. It is a 2-D offset,
# not a distance: one row down and two columns left is another score than two rows down and
# one column left.

# %%
offsets = ids[:, :, None] - ids[:, None, :]  # (2, 48, 48)
spread = max(
    np.ptp(scores[(offsets[0] == dr) & (offsets[1] == dc)])
    for dr in range(-height + 1, height) for dc in range(-width + 1, width)
)
down_left = scores[(offsets[0] == 1) & (offsets[1] == -2)][0]
left_down = scores[(offsets[0] == 2) & (offsets[1] == -1)][0]
assert spread < 1e-12
assert abs(down_left - left_down) > 0.1
print(f"offset (1, -2): {down_left:.3f}   offset (2, -1): {left_down:.3f}")

# %% [markdown]
# As a picture: the score of one query patch against every key patch, for two query patches.
# The second picture is the first moved by the offset between the two patches (asserted on
# the part both show).

# %%
first, second = 2 * width + 2, 3 * width + 5  # patches (2, 2) and (3, 5)
maps = [scores[p].reshape(height, width) for p in (first, second)]
np.testing.assert_allclose(maps[1][1:, 3:], maps[0][:-1, :-3], rtol=0, atol=1e-12)
fig, axs = plt.subplots(1, 2, figsize=(8, 2.8), constrained_layout=True)
for ax, picture, p in zip(axs, maps, (first, second)):
    image = ax.imshow(picture, cmap="RdBu_r", vmin=-np.abs(scores).max(), vmax=np.abs(scores).max())
    ax.plot(ids[1, p], ids[0, p], "k*", markersize=12)
    ax.set(title=f"query patch (row {ids[0, p]}, column {ids[1, p]})", xlabel="column", ylabel="row")
fig.colorbar(image, ax=axs, label="score q · k")
plt.show()

# %% [markdown]
# ## 2. M-RoPE: three position rows for text, images and video
#
# Qwen2-VL gives every token three positions: time, height, width. Text tokens get the same
# number on all three rows, so on text M-RoPE *is* 1-D RoPE. An image's patches (merged 2 x 2
# into tokens) all get the time where the image starts, and rows and columns from there; a
# video's frames count up the time row. After a vision block the text resumes at its start
# plus the larger merged side, $\max(h, w)/2$, not after its number of tokens.
#
# A sequence: 4 text tokens, an image of 4 x 6 patches, 3 text tokens, a video of 3 frames of
# 4 x 4 patches, 3 text tokens.

# %%
segments = [4, (1, 4, 6), 3, (3, 4, 4), 3]
rows = rotary_grid.mrope_position_ids(segments, spatial_merge_size=2)
print("shape:", rows.shape)
print(rows)

# %% [markdown]
# What the rows say, asserted: the image (tokens 4-9, 2 x 3 merged) shares time 4; the text
# after it starts at $4 + \max(2, 3) = 7$; the video (tokens 13-24) has times 10, 11, 12 and
# the text after it starts at $10 + \max(2, 2) = 12$, **the time of the video's last frame**:
# transformers 5.23's `get_rope_index` does this when a video has more frames than its longer
# merged side. (`tests/test_rotary_grid.py` checks these rows against `get_rope_index` itself.)

# %%
image, video = slice(4, 10), slice(13, 25)
assert (rows[0, image] == 4).all()
np.testing.assert_array_equal(rows[1:, image], [[4, 4, 4, 5, 5, 5], [4, 5, 6, 4, 5, 6]])
assert rows[0, 10] == 7 and sorted(set(rows[0, video])) == [10, 11, 12] and rows[0, 25] == 12
text = np.r_[0:4, 10:13, 25:28]
assert (rows[:, text] == rows[0, text]).all()  # text: three equal rows

# %%
fig, ax = plt.subplots(figsize=(9, 3), constrained_layout=True)
for row, name, marker in zip(rows, ["time", "height", "width"], "os^"):
    ax.plot(row, marker, linestyle="-", label=name, alpha=0.8)
for start, stop, kind in [(4, 10, "image"), (13, 25, "video")]:
    ax.axvspan(start - 0.5, stop - 0.5, color="0.9")
    ax.text((start + stop - 1) / 2, rows.max() + 0.3, kind, ha="center")
ax.set(xlabel="token", ylabel="position id", ylim=(-0.5, rows.max() + 1.5),
       title="M-RoPE position ids: text, image, text, video, text")
ax.legend(loc="lower right")
plt.show()

# %% [markdown]
# Which pair reads which row: Qwen2-VL splits the pairs into consecutive sections
# (`mrope_section`, e.g. [4, 6, 6] of a 32-channel head), Qwen3-VL interleaves them
# (time, height, width, time, ...). On text tokens both are 1-D RoPE exactly.

# %%
sections = rotary_grid.mrope_axes([4, 6, 6])
interleaved = rotary_grid.mrope_axes([6, 5, 5], interleaved=True)
print("Qwen2-VL:", sections)
print("Qwen3-VL:", interleaved)
for section, flag in [([4, 6, 6], False), ([6, 5, 5], True)]:
    m_cos, m_sin = rotary_grid.mrope_cos_sin(rows[:, text], d, mrope_section=section, interleaved=flag)
    cos_1d, sin_1d = posenc.rotary_cos_sin(rows[0, text], d)
    np.testing.assert_array_equal(m_cos, cos_1d)
    np.testing.assert_array_equal(m_sin, sin_1d)

# %% [markdown]
# ## 3. `from_config`: posenc's rotary module from a Hugging Face config
#
# `posenc.torch.RotaryEmbedding.from_config(config)` reads a transformers config: the
# `rope_parameters` whole (rope type, base and the type's keys; an unknown key is an error
# naming it), the head size and the family's pairing. Here a tiny Qwen2-VL with random
# weights, fed the position rows above; we swap its rotary module for posenc's.

# %%
config = transformers.Qwen2VLConfig(
    text_config={"hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 2, "num_key_value_heads": 1,
                 "head_dim": d, "intermediate_size": 96, "vocab_size": 101, "bos_token_id": 0, "eos_token_id": 1,
                 "rope_parameters": {"rope_type": "default", "rope_theta": 1e6, "mrope_section": [4, 6, 6]}},
    vision_config={"depth": 1, "embed_dim": 32, "hidden_size": 64, "num_heads": 2},
    bos_token_id=0, eos_token_id=1,
)
model = transformers.Qwen2VLForConditionalGeneration(config).eval()
ours = posenc.torch.RotaryEmbedding.from_config(config.text_config)
print(ours)

# %%
input_ids = torch.randint(1, 101, (1, rows.shape[1]))
position_ids = torch.from_numpy(rows)[:, None]  # (3, batch 1, 28)
with torch.no_grad():
    theirs_logits = model(input_ids=input_ids, position_ids=position_ids).logits
    model.model.language_model.rotary_emb = ours
    ours_logits = model(input_ids=input_ids, position_ids=position_ids).logits
difference = (ours_logits - theirs_logits).abs().max().item()
size = theirs_logits.abs().max().item()
assert difference < 2e-6 * size
print(f"largest logit {size:.2f}; logits differ by < 2e-6 of it")

# %% [markdown]
# The two agree to float32 round-off: at these small positions transformers' float32 angles
# are as good as posenc's. `tests/test_rope_config.py` does the same for fourteen families
# (Llama, Mistral, Qwen2, Qwen3, Gemma 3, Phi-3, GPT-NeoX, GPT-J, Cohere, DeepSeek-V3,
# GPT-OSS, Llama 4, Qwen2-VL and Qwen3-VL).
#
# ## Summary
#
# - On a grid each rotary pair reads one coordinate: the score of two patches then depends on
#   their 2-D offset only.
# - Pixtral and the Qwen2-VL vision tower differ only in which frequencies go to rows and to
#   columns.
# - M-RoPE gives text three equal rows (plain RoPE), images and videos (time, row, column)
#   from where they start; Qwen2-VL sections the pairs, Qwen3-VL interleaves them.
# - `RotaryEmbedding.from_config` turns a transformers config into posenc's module, with the
#   same logits.
#
# This run's time:

# %%
# NBVAL_IGNORE_OUTPUT
seconds = time.perf_counter() - started
print(f"{seconds:.0f} s")

# %%
assert seconds < 60
