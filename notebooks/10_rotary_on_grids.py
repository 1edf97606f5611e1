# %% [markdown]
# # 10 · Rotary position embedding on grids and in video
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/posenc-org/posenc/blob/main/notebooks/10_rotary_on_grids.ipynb)
#
# Notebook 08 rotated queries and keys by a token's place in a sequence. The patches of an
# image have a row and a column, the frames of a video a time as well. Vision-language
# models give RoPE those coordinates in one simple way: each rotary pair of channels reads
# *one* coordinate. This notebook follows that idea from an image grid to a sequence that
# mixes text, an image and a video, as three model families number it.
#
# **Question:** How does RoPE give image patches and video frames their positions, and where does the text after them continue?
#
# **You will be able to:**
# - build 2-D RoPE for a grid of image patches and say how two vision encoders choose its
#   frequencies;
# - write down the three position rows (time, height, width) that multimodal RoPE gives a
#   sequence of text, an image and a video, by each of the rules in use;
# - say which channels of a head turn with time, height or width;
# - load a transformers config into posenc's rotary module and get the model's own logits.
#
# **Prerequisites:** notebooks 08 and 09 · **Time:** about 50 minutes

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
from posenc import rope  # noqa: E402

torch.set_num_threads(1)
torch.manual_seed(0)
rng = np.random.default_rng(0)
started = time.perf_counter()

# %% [markdown]
# ## 1. 2-D RoPE: each pair reads the row or the column
#
# A vision-language model reads an image through a *vision encoder*: a ViT (Vision
# Transformer, [Dosovitskiy et al.](https://arxiv.org/abs/2010.11929)) that cuts the
# image into patches (notebook 09) and runs attention over them. Two such encoders rotate
# queries and keys by a patch's row $r$ and column $c$: Pixtral's (Mistral AI,
# [Pixtral 12B](https://arxiv.org/abs/2410.07073)) and Qwen2-VL's
# ([Qwen2-VL](https://arxiv.org/abs/2409.12191); its successors
# [Qwen2.5-VL](https://arxiv.org/abs/2502.13923) and
# [Qwen3-VL](https://huggingface.co/docs/transformers/model_doc/qwen3_vl) keep it). A head
# of $d$ channels has $d/2$ rotary pairs (notebook 08); both encoders turn the first $d/4$
# pairs by the row and the other $d/4$ by the column. They differ in the frequencies:
#
# - Qwen2-VL gives each axis the frequencies of a $d/2$-channel RoPE, $w_i = 10000^{-4i/d}$,
#   the same list for rows and for columns;
# - Pixtral takes the $d/2$ frequencies of 1-D RoPE, $10000^{-2j/d}$, and deals them out:
#   even $j$ to the row, odd $j$ to the column.
#
# So the rows get the same frequencies in both, and only the columns differ.

# %%
d = 32
qwen = rope.axial_frequencies(d, convention="qwen2_vl")
pixtral = rope.axial_frequencies(d, convention="pixtral")
print("axis of each pair (0 row, 1 column):", qwen.axes)
print("row frequencies, both:       ", np.round(qwen.values[:4], 4), "...")
print("column frequencies, Qwen2-VL:", np.round(qwen.values[8:12], 4), "...")
print("column frequencies, Pixtral: ", np.round(pixtral.values[8:12], 4), "...")
assert np.array_equal(qwen.values[:8], pixtral.values[:8]), "rows: the same frequencies in both"

# %% [markdown]
# Each Pixtral column frequency sits half a step below Qwen2-VL's: one step of the row list
# is a factor $10000^{-4/d}$, and Pixtral's odd $j$ are a factor $10000^{-2/d}$
# ($= 0.5623$ at $d = 32$) further down. Pixtral's rows and columns together cover the
# frequencies of 1-D RoPE once; Qwen2-VL's cover half of them twice.

# %%
ratio = pixtral.values[8:] / qwen.values[8:]
print(f"Pixtral / Qwen2-VL, columns: {ratio.min():.4f} to {ratio.max():.4f}; 10000^(-2/d) = {10000 ** (-2 / d):.4f}")
np.testing.assert_allclose(ratio, 10000 ** (-2 / d), rtol=1e-14)  # float64 round-off

# %% [markdown]
# A grid of 6 x 8 patches, flattened row by row (Pixtral's order);
# `grid_position_ids` gives each token its (row, column). With the cos and sin of those
# angles (Qwen2-VL's frequencies) we rotate one random query and one random key vector at
# every patch and take all their dot products.

# %%
height, width = 6, 8
ids = rope.grid_position_ids(height, width)  # (2, 48): rows, columns
cos, sin = rope.axial_cos_sin(ids, d, dtype=np.float64)
q, k = rng.standard_normal((2, d))
queries = posenc.apply_rotary(np.broadcast_to(q, cos.shape), cos, sin)
keys = posenc.apply_rotary(np.broadcast_to(k, cos.shape), cos, sin)
scores = queries @ keys.T  # (48, 48): query patch against key patch
print("positions of tokens 0, 1, 8:", ids[:, [0, 1, 8]].T.tolist())
print("scores:", scores.shape, f"largest |score| {np.abs(scores).max():.1f}")

# %% [markdown]
# **The score depends on the 2-D offset only.** All pairs of patches with the same
# (row offset, column offset) have the same score, up to float64 round-off: the spread
# within one offset stays below $10^{-12}$, where the scores themselves reach 5.2 (above).

# %%
offsets = ids[:, :, None] - ids[:, None, :]  # (2, 48, 48): key minus query, rows and columns
spread = max(
    np.ptp(scores.T[(offsets[0] == dr) & (offsets[1] == dc)])
    for dr in range(-height + 1, height) for dc in range(-width + 1, width)
)
print("largest spread of the scores within one offset below 1e-12:", spread < 1e-12)
assert spread < 1e-12

# %% [markdown]
# It is an offset, not a distance: one row down and two columns left scores differently
# from two rows down and one column left, though both are as far apart.

# %%
down_left = scores.T[(offsets[0] == 1) & (offsets[1] == -2)][0]
left_down = scores.T[(offsets[0] == 2) & (offsets[1] == -1)][0]
print(f"offset (1, -2): {down_left:.3f}   offset (2, -1): {left_down:.3f}")
assert abs(down_left - left_down) > 0.1, "two offsets of one length, two scores"

# %% [markdown]
# As pictures: the score of one query patch (the star) against every key patch. The first
# two use the random q and k for two query patches; the second picture is the first moved
# by the offset between the two patches. There is no peak at the query patch: RoPE makes
# the score a function of the offset, and nothing in it makes near patches score higher.
# The third uses q = k: then the score at offset zero is $|q|^2$, and no offset scores more,
# because a rotation keeps lengths ($q \cdot Rq \le |q|\,|Rq| = |q|^2$). That peak comes from
# choosing q = k, not from RoPE, and it is shallow: the slow pairs hardly turn across 8
# columns, so every patch still scores at least 81% of the peak. A trained model learns
# queries and keys that make nearby patches score high, or doesn't.

# %%
first, second = 2 * width + 2, 3 * width + 5  # patches (2, 2) and (3, 5)
same = posenc.apply_rotary(np.broadcast_to(q, cos.shape), cos, sin)
self_scores = same @ same.T  # q = k
maps = [scores[first], scores[second], self_scores[second]]
peak = np.unravel_index(np.argmax(maps[2]), (height, width))
print("q = k: the highest score of query patch (3, 5) is at key patch", tuple(int(i) for i in peak))
print(f"q = k: the lowest score on the grid is {maps[2].min() / maps[2].max():.0%} of the peak")
assert maps[2].argmax() == second, "with q = k, the query's own patch scores highest"

# %%
fig, axs = plt.subplots(1, 3, figsize=(12, 2.8), constrained_layout=True)
titles = ["random q, k: query (2, 2)", "random q, k: query (3, 5)", "q = k: query (3, 5)"]
top = np.abs(maps[0]).max()  # one colour scale for the random q, k; q = k gets its own range
scales = [(-top, top, "RdBu_r"), (-top, top, "RdBu_r"), (maps[2].min(), maps[2].max(), "Reds")]
for ax, picture, p, title, (low, high, cmap) in zip(axs, maps, (first, second, second), titles, scales):
    image = ax.imshow(picture.reshape(height, width), cmap=cmap, vmin=low, vmax=high)
    ax.plot(ids[1, p], ids[0, p], "k*", markersize=12)
    ax.set(title=title, xlabel="key column", ylabel="key row")
    fig.colorbar(image, ax=ax, shrink=0.8)
plt.show()

# %% [markdown]
# ## 2. M-RoPE: three position rows for text, images and video
#
# In Qwen2-VL the language model reads text tokens and vision tokens in one sequence. Its
# multimodal RoPE, **M-RoPE** (section 2.1 of the [Qwen2-VL paper](https://arxiv.org/abs/2409.12191)),
# gives every token three positions, time, height and width, and each rotary pair of a head
# reads one of them (which one: section 3). Two numbers of the vision encoder's config
# shape the vision tokens ([transformers' Qwen2-VL page](https://huggingface.co/docs/transformers/model_doc/qwen2_vl)):
#
# - `spatial_merge_size`: after the encoder, a merger joins each 2 x 2 block of neighbouring
#   patches into one token for the language model; an image of 4 x 6 patches becomes
#   2 x 3 tokens;
# - `temporal_patch_size`: a video patch is 2 frames deep, so 6 frames of video make
#   3 *temporal patches*. A vision input's grid, `grid_thw`, counts temporal patches,
#   rows and columns of patches.

# %%
vision = transformers.Qwen2VLConfig().vision_config
print("spatial_merge_size:", vision.spatial_merge_size, "  temporal_patch_size:", vision.temporal_patch_size)

# %% [markdown]
# The numbering, as the pinned transformers 5.23 `get_rope_index` does it: text tokens get
# the same number on all three rows, counting on from the token before, so on text M-RoPE
# is 1-D RoPE. A vision input that starts at position $s$ gets time $s + \text{frame}$,
# height $s + \text{row}$ and width $s + \text{column}$ of its merged grid.
#
# A sequence: 4 text tokens, an image of 4 x 6 patches, 3 text tokens, a video of 6 frames
# (3 temporal patches) of 4 x 4 patches, 3 text tokens. `mrope_position_ids` takes text as a
# token count and a vision input as its `grid_thw`.

# %%
segments = [4, (1, 4, 6), 3, (3, 4, 4), 3]
rows = rope.mrope_position_ids(segments, spatial_merge_size=2)
print("shape:", rows.shape)
print(rows)

# %% [markdown]
# The image is tokens 4 to 9, 2 x 3 merged tokens. All share time 4; their heights and
# widths count rows and columns from 4. The text after the image does not continue after
# the image's 6 tokens: it starts one past the image's largest position,
# $4 + \max(2, 3) = 7$.

# %%
image, video = slice(4, 10), slice(13, 25)
print("image (time, height, width):", rows[:, image].tolist())
print("text after the image starts at", rows[0, 10])
assert rows[0, 10] == 4 + max(2, 3)

# %% [markdown]
# The video is tokens 13 to 24: 3 temporal patches of 2 x 2 tokens, times 10, 11, 12.
# transformers 5.23 starts the text after it at $10 + \max(2, 2) = 12$, the start plus the
# longer merged side, whatever the number of frames: so the first text token shares time 12
# with the video's last temporal patch.

# %%
print("video times:", sorted(set(rows[0, video].tolist())), "  text after the video:", rows[0, 25:].tolist())
assert rows[0, 25] == 10 + max(2, 2)

# %% [markdown]
# That is the 5.x rule. The code Qwen2-VL was released with (transformers 4.x,
# [`Qwen2VLModel.get_rope_index`](https://github.com/huggingface/transformers/blob/v4.45.0/src/transformers/models/qwen2_vl/modeling_qwen2_vl.py))
# starts the text one past the block's largest id on any row: $\max(12, 11, 11) + 1 = 13$.
# Its docstring's example, a video of 3 temporal patches of 2 x 2 tokens followed by text,
# puts the text at 3, 4, 5, ...; the 5.x rule gives 2, 3, 4. The two rules agree on images
# and on videos with no more temporal patches than the longer merged side. Issue
# [#45381](https://github.com/huggingface/transformers/issues/45381) shows transformers 5.2
# still starting the text after a Qwen2.5-VL video one past the video's largest id, and
# reports the ids of 5.3 and later as wrong. posenc follows the pinned 5.23 by default and
# gives the 4.x rule with `text_resumes="after_largest"` (`tests/test_rotary_grid_models.py`
# checks the first against the installed `get_rope_index`, the second against that
# docstring example).

# %%
reference = rope.mrope_position_ids(segments, text_resumes="after_largest")
print("text after the video, 5.23:", rows[0, 25:].tolist(), "  4.x:", reference[0, 25:].tolist())
print("tokens whose ids differ:", np.flatnonzero((rows != reference).any(axis=0)).tolist())
example = [(3, 2, 2), 5]  # the 4.x docstring's video, already merged (spatial_merge_size 1), then 5 text tokens
for rule in ("after_largest", "longer_side"):
    example_rows = rope.mrope_position_ids(example, spatial_merge_size=1, text_resumes=rule)
    print(f"docstring example, {rule}: text at", example_rows[0, 12:].tolist())
assert (rows[:, :25] == reference[:, :25]).all(), "up to the video's end the two rules agree"

# %% [markdown]
# The three rows of the 5.23 numbering over the sequence: the text runs on one line, the
# image and video split it into time, height and width. The dotted line is where the 4.x
# rule puts the text after the video.

# %%
fig, ax = plt.subplots(figsize=(9, 3), constrained_layout=True)
for row, name, marker in zip(rows, ["time", "height", "width"], "os^"):
    ax.plot(row, marker, linestyle="-", label=name, alpha=0.8)
for start, stop, kind in [(4, 10, "image"), (13, 25, "video")]:
    ax.axvspan(start - 0.5, stop - 0.5, color="0.9")
    ax.text((start + stop - 1) / 2, rows.max() + 0.3, kind, ha="center")
ax.plot(range(25, 28), reference[0, 25:], "k:", marker="x", label="text, 4.x rule")
ax.set(xlabel="token", ylabel="position id", ylim=(-0.5, rows.max() + 2.5),
       title="M-RoPE position ids (transformers 5.23): text, image, text, video, text")
ax.legend(loc="lower right")
plt.show()

# %% [markdown]
# **Qwen2.5-VL** ([technical report](https://arxiv.org/abs/2502.13923)) ties the time row
# to seconds: temporal patch $k$ of a video gets time
# $s + \lfloor k \cdot \texttt{tokens\_per\_second} \cdot \texttt{second\_per\_grid\_t} \rfloor$,
# where `second_per_grid_t` $=$ `temporal_patch_size / fps` is how many seconds one
# temporal patch spans and `tokens_per_second` is a vision config value (images are not
# spaced). With the config class's default and frames sampled at 2 per second, one temporal
# patch is 1 s and the times step by `tokens_per_second`:

# %%
vision_2_5 = transformers.Qwen2_5_VLConfig().vision_config
per_second = vision_2_5.tokens_per_second
interval = per_second * vision_2_5.temporal_patch_size / 2  # second_per_grid_t at fps = 2
spaced = rope.mrope_position_ids(segments, time_interval=interval)
spaced_reference = rope.mrope_position_ids(segments, time_interval=interval, text_resumes="after_largest")
print(f"tokens_per_second {per_second}, time interval {interval:g}")
print("video times:", sorted(set(spaced[0, video].tolist())))
print("text after the video, 5.23:", spaced[0, 25:].tolist(), "  4.x:", spaced_reference[0, 25:].tolist())
assert spaced[0, 25] == 12, "5.23: the start plus the longer side, whatever the times"

# %% [markdown]
# Under the 5.23 rule the text now starts in the middle of the video's time span (12, while
# the frames run to 18); under the 4.x rule after it (19).
#
# **Qwen3-VL** ([transformers' Qwen3-VL page](https://huggingface.co/docs/transformers/model_doc/qwen3_vl))
# stops counting frames in the time row. Its processor writes each temporal patch as a grid
# of its own, after a timestamp in text such as `<1.0 seconds>` and between vision start
# and end markers; `get_rope_index` splits the video's `grid_thw` into one grid per temporal
# patch. To M-RoPE each frame is then an image, and the time is in the words. Here 5 text
# tokens stand for a timestamp and the markers (their number depends on the tokenizer).

# %%
stamp = 5
per_frame = [4, (1, 4, 6), 3, stamp, (1, 4, 4), stamp, (1, 4, 4), stamp, (1, 4, 4), 3]
qwen3 = rope.mrope_position_ids(per_frame)
print("Qwen3-VL time row:", qwen3[0].tolist())
assert (qwen3 == rope.mrope_position_ids(per_frame, text_resumes="after_largest")).all(), "one rule when frames come alone"

# %% [markdown]
# ## 3. Which pair reads which row: `mrope_section`
#
# The text config's `rope_parameters` hold `mrope_section`, the number of rotary pairs per
# axis (time, height, width). Qwen2-VL takes the pairs in consecutive sections; transformers'
# default is [16, 24, 24] of a 128-channel head (64 pairs). Qwen3-VL *interleaves* them
# (time, height, width, time, ...), with default [24, 20, 20]. In the half layout of
# notebook 08, channel $c$ and channel $c + d/2$ form pair $c$.

# %%
from transformers.models.qwen2_vl.modeling_qwen2_vl import Qwen2VLRotaryEmbedding  # noqa: E402
from transformers.models.qwen3_vl.modeling_qwen3_vl import Qwen3VLTextRotaryEmbedding  # noqa: E402

qwen2_section = Qwen2VLRotaryEmbedding(transformers.Qwen2VLConfig().text_config).mrope_section
qwen3_section = Qwen3VLTextRotaryEmbedding(transformers.Qwen3VLConfig().text_config).mrope_section
print("default mrope_section, Qwen2-VL:", qwen2_section, "  Qwen3-VL:", qwen3_section)
print("Qwen2-VL, first 20 pairs:", rope.mrope_axes(qwen2_section)[:20])
print("Qwen3-VL, first 20 pairs:", rope.mrope_axes(qwen3_section, interleaved=True)[:20])

# %% [markdown]
# Why interleave: pair $j$'s frequency falls with $j$, so consecutive sections give time only
# the fastest frequencies and width only the slowest. With base $10^6$ (Qwen2-VL's default
# `rope_theta`) the width's fastest pair turns by less than 0.006 rad from one end of a
# 32-token-wide image to the other. Interleaved, every axis spans nearly the whole range.

# %%
theta = transformers.Qwen2VLConfig().text_config.rope_parameters["rope_theta"]
print(f"Qwen2-VL's rope_theta: {theta:g}")
w = posenc.rotary_frequencies(128, base=theta)[0]
for name, pair_axes in [("sections [16, 24, 24]", rope.mrope_axes(qwen2_section)),
                        ("interleaved [24, 20, 20]", rope.mrope_axes(qwen3_section, interleaved=True))]:
    spans = ", ".join(f"{axis} {w[pair_axes == a].max():.1e}..{w[pair_axes == a].min():.1e}"
                      for a, axis in enumerate(["time", "height", "width"]))
    print(f"{name:25s} {spans}")
widest_turn = 31 * w[rope.mrope_axes(qwen2_section) == 2].max()
print(f"sections: the width's fastest pair over 32 columns turns by {widest_turn:.4f} rad")
assert widest_turn < 0.006

# %% [markdown]
# On text the three rows are equal, so whatever pair reads whatever row, M-RoPE *is* 1-D
# RoPE there, in both orders (a 32-channel head: sections [4, 6, 6], interleaved [6, 5, 5]).

# %%
text = np.r_[0:4, 10:13, 25:28]
same_as_1d = []
for section, flag in [([4, 6, 6], False), ([6, 5, 5], True)]:
    m_cos, m_sin = rope.mrope_cos_sin(rows[:, text], d, mrope_section=section, interleaved=flag)
    cos_1d, sin_1d = posenc.rotary_cos_sin(rows[0, text], d)
    same_as_1d.append(np.array_equal(m_cos, cos_1d) and np.array_equal(m_sin, sin_1d))
print("text tokens: M-RoPE equals 1-D RoPE (sections, interleaved):", same_as_1d)
assert all(same_as_1d)

# %% [markdown]
# ## 4. `from_config`: posenc's rotary module from a Hugging Face config
#
# `posenc.torch.RotaryEmbedding.from_config(config)` reads a transformers config: the
# `rope_parameters` whole (rope type, base and the type's keys; an unknown key is an error
# naming it), the head size and the family's pairing. Here a tiny Qwen2-VL with random
# weights, fed the position rows of section 2; we swap its rotary module for posenc's.

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

# %% [markdown]
# The logits of the model with its own rotary module and with posenc's agree to float32
# round-off: we allow $2 \cdot 10^{-6}$ of the largest logit, about 16 float32 epsilons
# ($2^{-23} \approx 1.2 \cdot 10^{-7}$), for two layers of float32 sums. At these small
# positions transformers' float32 angles are as good as posenc's.

# %%
input_ids = torch.randint(1, 101, (1, rows.shape[1]))
position_ids = torch.from_numpy(rows)[:, None]  # (3, batch 1, 28)
with torch.no_grad():
    theirs_logits = model(input_ids=input_ids, position_ids=position_ids).logits
    model.model.language_model.rotary_emb = ours
    ours_logits = model(input_ids=input_ids, position_ids=position_ids).logits
difference = (ours_logits - theirs_logits).abs().max().item()
size = theirs_logits.abs().max().item()
print(f"largest logit {size:.2f}; the logits differ by less than 2e-6 of it: {difference < 2e-6 * size}")
assert difference < 2e-6 * size

# %% [markdown]
# `tests/test_rope_config.py` does the same for fifteen families (Llama, Mistral, Qwen2,
# Qwen3, Gemma 3, Phi-3, GPT-NeoX, GPT-J, Cohere, DeepSeek-V3, GPT-OSS, Llama 4, Qwen2-VL,
# Qwen2.5-VL and Qwen3-VL).
#
# ## Summary
#
# - On a grid each rotary pair reads one coordinate, so the score of two patches depends on
#   their 2-D offset only: an offset with a sign, not a distance, and no built-in preference
#   for near patches.
# - Pixtral and the Qwen2-VL vision encoder give rows the same frequencies; Pixtral's column
#   frequencies sit half a step lower.
# - M-RoPE gives text three equal rows (plain 1-D RoPE) and a vision input (time, row,
#   column) counted from where it starts, over its grid merged 2 x 2.
# - After a vision input the text resumes at the start plus the longer merged side
#   (transformers 5.x) or one past the block's largest id (transformers 4.x, as Qwen2-VL was
#   released); they differ after a video with more temporal patches than that side.
# - Qwen2.5-VL spaces a video's times by `tokens_per_second * second_per_grid_t`; Qwen3-VL
#   numbers each temporal patch as its own image, after a timestamp in text.
# - `mrope_section` counts pairs per axis: Qwen2-VL's consecutive sections give width only
#   slow frequencies, Qwen3-VL's interleaving gives every axis the whole range.
# - `RotaryEmbedding.from_config` turns a transformers config into posenc's module, with the
#   same logits.
#
# ## Exercises
#
# Each check says what is wrong with an answer; `nb10.<exercise>.hint()` gives a nudge and
# `nb10.<exercise>.solution()` prints the reference code when you are stuck.
#
# ### Exercise 1 · The three rows of a text + image sequence
#
# Two text tokens, an image of 4 x 6 patches (`spatial_merge_size` 2), two text tokens:
# write M-RoPE's three rows (time, height, width) by hand, by transformers 5.23's rule. The
# draft below has one mistake; fix it until the check says "Correct!".

# %%
from posenc.exercises import nb10  # noqa: E402

my_rows = np.array([
    [0, 1, 2, 2, 2, 2, 2, 2, 8, 9],  # time
    [0, 1, 2, 2, 2, 3, 3, 3, 8, 9],  # height
    [0, 1, 2, 3, 4, 2, 3, 4, 8, 9],  # width
])
print(nb10.mrope_rows.check(my_rows))

# %% [markdown]
# ### Exercise 2 · Which axis turns each channel
#
# Complete `channel_axes(mrope_section)`: for each of the $2 \sum$ `mrope_section` channels
# of a head in the half layout, the axis (0 time, 1 height, 2 width) that turns it under
# Qwen2-VL's consecutive sections. The draft answers for the pairs only.

# %%
def channel_axes(mrope_section):
    return np.repeat([0, 1, 2], mrope_section)


print(nb10.channel_axes.check(channel_axes))

# %% [markdown]
# ### Exercise 3 · Same offset, same score
#
# In 2-D RoPE, query patch `query_a` scores key patch `key_a` (both (row, column)). Complete
# `same_offset(query_a, key_a, query_b)`: the key patch that query patch `query_b` scores
# exactly as much, whatever q and k are.

# %%
def same_offset(query_a, key_a, query_b):
    offset = (query_a[0] - key_a[0], query_a[1] - key_a[1])
    return (query_b[0] + offset[0], query_b[1] + offset[1])


print(nb10.same_offset.check(same_offset))

# %% [markdown]
# ## Cross-checks
#
# The claims above once more, together: the second score map is the first moved by the
# offset between its query patches; Qwen2-VL's and Pixtral's 2-D RoPE both depend on the
# offset only; the rows of exercise 1 are posenc's; the run takes under a minute (the
# notebook is meant to be quick to re-run).

# %%
np.testing.assert_allclose(maps[1].reshape(height, width)[1:, 3:], maps[0].reshape(height, width)[:-1, :-3], atol=1e-12)
for convention in ("pixtral", "qwen2_vl"):
    c, s = rope.axial_cos_sin(ids, d, convention=convention, dtype=np.float64)
    qs = posenc.apply_rotary(np.broadcast_to(q, c.shape), c, s)
    ks = posenc.apply_rotary(np.broadcast_to(k, c.shape), c, s)
    grid_scores = (qs @ ks.T).T
    for dr, dc in [(0, 0), (1, -2), (2, -1), (-3, 4)]:
        assert np.ptp(grid_scores[(offsets[0] == dr) & (offsets[1] == dc)]) < 1e-12
np.testing.assert_array_equal(nb10.mrope_rows_solution(), rope.mrope_position_ids([2, (1, 4, 6), 2]))
assert (rows[1:, image] == [[4, 4, 4, 5, 5, 5], [4, 5, 6, 4, 5, 6]]).all() and (rows[0, image] == 4).all()
assert (rows[:, text] == rows[0, text]).all()
assert np.flatnonzero((rows != reference).any(axis=0)).tolist() == [25, 26, 27]
assert sorted(set(spaced[0, video].tolist())) == [10, 10 + interval, 10 + 2 * interval]
assert rope.mrope_position_ids(example, spatial_merge_size=1, text_resumes="after_largest")[0, 12:].tolist() == [3, 4, 5, 6, 7]
seconds = time.perf_counter() - started
assert seconds < 60

# %%
# NBVAL_IGNORE_OUTPUT
print(f"This run took {seconds:.0f} s.")
