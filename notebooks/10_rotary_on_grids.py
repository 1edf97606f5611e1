# %% [markdown]
# # 10 · Rotary position embedding on grids and in video
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/posenc-org/posenc/blob/main/notebooks/10_rotary_on_grids.ipynb)
#
# Notebook 08 rotated queries and keys by a token's place in a sequence. The patches of an
# image have a row and a column, the frames of a video a time as well. Vision-language
# models give RoPE those coordinates in one simple way: each rotary pair of channels reads
# *one* coordinate. This notebook follows that idea from an image grid to a sequence that
# mixes text, an image and a video, as three model families number it, then to the
# diffusion models that draw images and videos, and to two other ways of placing a patch: by
# where it lies in the image, and by random Fourier features.
#
# **Question:** How does RoPE give image patches and video frames their positions, and where does the text after them continue?
#
# **You will be able to:**
# - build 2-D RoPE for a grid of image patches and say how two vision encoders choose its
#   frequencies;
# - write down the three position rows (time, height, width) that multimodal RoPE gives a
#   sequence of text, an image and a video, by each of the rules in use;
# - say which channels of a head turn with time, height or width;
# - load a transformers config into posenc's rotary module and get the model's own logits;
# - write Flux's ids for a prompt and an image, and say which channels turn with which axis;
# - say how a video model's split of the head shapes the similarity along time, height and
#   width;
# - explain why pixel coordinates in [-1, 1] keep the angles of a place in a resized image,
#   and what integer positions do instead;
# - say what SAM's random Fourier features do that a sin-cos table does not.
#
# **Prerequisites:** notebooks 08 and 09 · **Time:** about 90 minutes

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
from posenc.sinusoidal import grid_encoding, patch_positions, random_fourier_features  # noqa: E402

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
# gives the 4.x rule with `text_resumes="after_largest"` (`tests/rope/test_axial_models.py`
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
# `tests/rope/test_configs.py` does the same for fifteen families (Llama, Mistral, Qwen2,
# Qwen3, Gemma 3, Phi-3, GPT-NeoX, GPT-J, Cohere, DeepSeek-V3, GPT-OSS, Llama 4, Qwen2-VL,
# Qwen2.5-VL and Qwen3-VL).

# %% [markdown]
# ## 5. Flux: one set of ids for a prompt and an image
#
# The diffusion transformers that draw an image from a prompt put the prompt's text tokens
# and the image's tokens in one attention, and give RoPE each token's position as *ids*, one
# coordinate per axis, with a block of the head for each axis. Flux (Black Forest Labs;
# diffusers' `FluxTransformer2DModel`) gives each token three ids and splits its 128-channel
# heads as `axes_dim = (16, 56, 56)`: 16 channels for axis 0, 56 for the height, 56 for the
# width. Each block turns at the frequencies of a 1-D RoPE of its own width,
# $w_i = 10000^{-2i/\text{axes\_dim}[a]}$ (diffusers' `get_1d_rotary_pos_embed`, once per
# axis); `per_axis_frequencies` lists them, with the axis of each pair.

# %%
flux_dims = (16, 56, 56)
flux = rope.per_axis_frequencies(flux_dims)
print("pairs per axis:", np.bincount(flux.axes).tolist())
print("height's first frequencies:", np.round(flux.values[8:11], 4), "  10000^(-2i/56):", np.round(10000.0 ** (-2 * np.arange(3) / 56), 4))
np.testing.assert_allclose(flux.values[8:36], 10000.0 ** (-2 * np.arange(28) / 56), rtol=1e-15)

# %% [markdown]
# The pipeline numbers the tokens: every text token gets the ids (0, 0, 0) (its `text_ids`
# are zeros), and the image token in row $r$ and column $c$ of the grid of packed latents
# (one token per 16 x 16 pixels) gets (0, r, c). The ids go axis last, `(tokens, 3)`, text
# first, as the transformer joins them; `flux_position_ids` writes them. A prompt of 4
# tokens and an image of 6 x 8 tokens:

# %%
prompt, image_rows, image_columns = 4, 6, 8
token_ids = rope.flux_position_ids(prompt, image_rows, image_columns)
print("ids:", token_ids.shape, "  tokens 0 and 3 (text), 4, 5 and 12 (image):", token_ids[[0, 3, 4, 5, 12]].tolist())

# %% [markdown]
# In the interleaved layout pair $j$ is channels $2j$ and $2j + 1$, so channels 0-15 turn
# with axis 0, 16-71 with the height and 72-127 with the width. In Flux's text-to-image
# every token's axis 0 is 0: those 16 channels never turn, and an eighth of every head
# carries no position. (Flux.1 Kontext gives the tokens of its reference image a 1 there,
# to tell them from the image it draws.)

# %%
flux_cos, flux_sin = rope.per_axis_cos_sin(token_ids, flux_dims, dtype=np.float64)
channel_axis = np.repeat(flux.axes, 2)  # interleaved: pair j is channels 2j and 2j + 1
turns = (flux_cos != 1).any(axis=0)  # a channel that turns at some token
for axis, name in enumerate(["axis 0", "height", "width"]):
    block = np.flatnonzero(channel_axis == axis)
    print(f"{name:6s}: channels {block[0]:3d} to {block[-1]:3d}, {turns[block].sum():2d} of them turn")
assert not turns[channel_axis == 0].any()

# %% [markdown]
# **Text tokens sit at the image's top-left corner.** All their ids are zero, so RoPE does
# not turn them (cos 1, sin 0), nor the image token (0, 0, 0). A text query therefore
# scores every image key as a query with the same vector at the top-left patch would, and
# text tokens score each other $q \cdot k$ whatever their order in the prompt (the order is
# in what the T5 text encoder wrote into them).

# %%
fq, fk = rng.standard_normal((2, 128))
flux_q = posenc.apply_rotary(np.broadcast_to(fq, flux_cos.shape), flux_cos, flux_sin, layout="interleaved")
flux_k = posenc.apply_rotary(np.broadcast_to(fk, flux_cos.shape), flux_cos, flux_sin, layout="interleaved")
flux_scores = flux_q @ flux_k.T  # (52, 52): query token against key token
corner = np.abs(flux_scores[:prompt, prompt:] - flux_scores[prompt, prompt:]).max()
print("text queries score the image as the top-left patch's query (to 1e-12):", corner < 1e-12)
print(f"text against text: q . k = {fq @ fk:.3f}, spread {np.ptp(flux_scores[:prompt, :prompt]):.0e}")
assert corner < 1e-12

# %% [markdown]
# To see how near two tokens are to RoPE without choosing q and k, take their
# **similarity**: the mean over pairs of $\cos(\theta_j^{\text{key}} - \theta_j^{\text{query}})$,
# 1 where every pair agrees. It is the score of $q = k = (1, 1, \dots, 1)$ divided by $d$
# (a pair (1, 1) scores twice the cosine of its angle difference), and, from the tables,
# `(cos @ cos[i] + sin @ sin[i]) / d`.

# %%
def similarity(cos, sin, query):
    """Mean over pairs of cos(angle of each token - angle of token `query`), from RoPE's cos and sin tables."""
    return (cos @ cos[query] + sin @ sin[query]) / cos.shape[-1]


ones = posenc.apply_rotary(np.ones(flux_cos.shape), flux_cos, flux_sin, layout="interleaved")
text_similarity = similarity(flux_cos, flux_sin, 0)  # of text token 0 to every token
print("text token 0 to image tokens (0, 0), (0, 1), (1, 0), (5, 7):", np.round(text_similarity[[4, 5, 12, 51]], 3))
np.testing.assert_allclose(text_similarity, ones @ ones[0] / 128, atol=1e-12)

# %% [markdown]
# As a picture: left, the cosines of every token (rows) in every channel (columns). The
# text rows and axis 0's block are all 1; the height's block changes from one image row to
# the next (every 8 tokens), the width's along each row. Right, the similarity of a text
# token to each image token, on the image grid: the view from the top-left patch.

# %%
fig, (left, right) = plt.subplots(1, 2, figsize=(12, 3.6), width_ratios=[1.6, 1], constrained_layout=True)
left.imshow(flux_cos, cmap="RdBu_r", vmin=-1, vmax=1, aspect="auto", interpolation="nearest")
for edge in (16, 72):
    left.axvline(edge - 0.5, color="k")
left.axhline(prompt - 0.5, color="k", linestyle="--")
left.set(title="Flux: cos of each token's angles (axis 0 | height | width)", xlabel="channel",
         ylabel="token: 4 text, then 6 x 8 image")
seen = right.imshow(text_similarity[prompt:].reshape(image_rows, image_columns), cmap="Reds")
right.plot(0, 0, "k*", markersize=12)
right.set(title="similarity of a text token to the image", xlabel="image column", ylabel="image row")
fig.colorbar(seen, ax=right, shrink=0.8)
plt.show()

# %% [markdown]
# ## 6. Video: time, height and width, each with its share of the head
#
# Video diffusion transformers number a token by its (frame, row, column) in the latent
# video and split the head among the three axes as Flux does. HunyuanVideo (diffusers'
# `HunyuanVideoRotaryPosEmbed`) takes Flux's split (16, 56, 56) with base 256; Wan
# (`WanRotaryPosEmbed`) gives the height and the width $2\lfloor d/6 \rfloor$ channels each
# and time the rest, with base 10000. A Wan video of 81 frames at 480 x 832 pixels is
# 21 x 30 x 52 tokens: its VAE turns 4 frames (after the first) into one latent frame and
# 8 x 8 pixels into one latent pixel, and the transformer's patches are 2 x 2 latent pixels.

# %%
wan_dims = (128 - 4 * (128 // 6), 2 * (128 // 6), 2 * (128 // 6))
video_splits = {"Wan": (wan_dims, 10000.0), "HunyuanVideo": ((16, 56, 56), 256.0)}
video_shape = (1 + (81 - 1) // 4, 480 // 8 // 2, 832 // 8 // 2)  # (frames, rows, columns) of tokens
video_ids = patch_positions(video_shape).T  # (tokens, 3): (t, y, x), frame outermost, then row by row
print("Wan's axes_dim at d = 128:", wan_dims, "  video tokens:", video_shape, "->", video_ids.shape)
assert (wan_dims, video_shape) == ((44, 42, 42), (21, 30, 52))

# %% [markdown]
# The similarity of a query in the middle of the video, at (t, y, x) = (10, 15, 26), to
# every key, under each split; then its values on the three lines through the query (two
# coordinates fixed). It depends on the offset only, so any query shows the same.

# %%
query = (10, 15, 26)
along = {}  # model -> the similarity along time, height and width through the query
for name, (dims, base) in video_splits.items():
    video_cos, video_sin = rope.per_axis_cos_sin(video_ids, dims, base=base)
    volume = similarity(video_cos, video_sin, np.ravel_multi_index(query, video_shape)).reshape(video_shape)
    along[name] = [volume[:, 15, 26], volume[10, :, 26], volume[10, 15, :]]
    print(f"{name:12s} one step away in time, height, width:", [round(float(line[i + 1]), 3) for line, i in zip(along[name], query)])

# %% [markdown]
# Wan's split is nearly even, and one step costs about as much similarity along each axis.
# HunyuanVideo's time holds only 8 of the 64 pairs: one frame away is more similar than one
# row away, and however far in time, its other 56 pairs (each $\cos 0 = 1$) hold the
# similarity at or above $1 - 2 \cdot 16/128 = 0.75$. Over these 21 frames it stays above
# 0.9, while along the width it falls below 0.7.

# %%
hunyuan_time, _, hunyuan_width = along["HunyuanVideo"]
floor = 1 - 2 * 16 / 128
print(f"HunyuanVideo: lowest along time {hunyuan_time.min():.3f} (floor {floor}), along the width {hunyuan_width.min():.3f}")
assert floor <= 0.9 < hunyuan_time.min() and hunyuan_width.min() < 0.7

# %% [markdown]
# The three lines through the query, for each split (the height and the width have the same
# share of the head, so their curves lie on each other):

# %%
fig, axs = plt.subplots(1, 2, figsize=(11, 3.2), sharey=True, constrained_layout=True)
for ax, (name, lines) in zip(axs, along.items()):
    for line, at, axis, channels, style in zip(lines, query, ["time", "height", "width"], video_splits[name][0], "-:-"):
        on_top = 3 if axis == "height" else 2  # the dotted height over the width it equals
        ax.plot(np.arange(len(line)) - at, line, style, marker=".", zorder=on_top, label=f"{axis} ({channels} channels)")
    ax.set(title=f"{name}: similarity to a query at (10, 15, 26)", xlabel="offset from the query (tokens)")
    ax.legend()
axs[0].set_ylabel("similarity")
plt.show()

# %% [markdown]
# ## 7. Pixel against integer frequencies on a resized image
#
# So far a patch's position was its index: patch 5 is at 5. Many vision models place a
# patch by *where* it lies in the image instead. Along an axis of $n$ patches, patch $k$
# sits at $-1 + 2k/(n-1)$: the first at -1, the last at 1, evenly between
# (`patch_positions(shape, normalize="pixel")`; `linspace(-1, 1, n)` in timm's
# `RotaryEmbedding`, rotary-embedding-torch's `freqs_for="pixel"` and Perceiver's Fourier
# features). Their frequencies are spread linearly up to the Nyquist frequency of a
# `max_freq`-pixel image (one turn per two pixels), $w_j = \pi \cdot
# \text{linspace}(1, \text{max\_freq}/2, \text{count})$ radians per unit of coordinate,
# `count` pairs per axis (`pixel_frequencies`; timm's default spaces the same range
# logarithmically).

# %%
pixel = rope.pixel_frequencies(32, max_freq=224)
print("pairs per axis:", np.bincount(pixel.axes).tolist(), "  frequencies / pi:", np.round(pixel.values[:8] / np.pi, 2))
np.testing.assert_allclose(pixel.values[:8], np.pi * np.linspace(1, 224 / 2, 8), rtol=1e-15)

# %% [markdown]
# An image seen as 8 x 8 patches in training, and as 15 x 15 at a larger size. With pixel
# coordinates, patch $2k$ of the larger grid lies where patch $k$ of the smaller lay, both
# at $-1 + 2k/7$, and has the same angles. With integer positions (section 1's `qwen2_vl`
# 2-D RoPE) that patch is at $2k$ instead of $k$, and its angles double.

# %%
pixel_cs = {n: rope.pixel_cos_sin(patch_positions((n, n), normalize="pixel"), 32, dtype=np.float64) for n in (8, 15)}
integer_cs = {n: rope.axial_cos_sin(patch_positions((n, n)), 32, dtype=np.float64) for n in (8, 15)}
same_place = (2 * np.arange(8)[:, None] * 15 + 2 * np.arange(8)).ravel()  # patch (2r, 2c) of the 15 x 15 grid
kept = [np.array_equal(tables[15][0][same_place], tables[8][0]) for tables in (pixel_cs, integer_cs)]
print("same place, same cos and sin: pixel coordinates", kept[0], "  integer positions", kept[1])
assert all(np.array_equal(big, small) for big, small in zip((t[same_place] for t in pixel_cs[15]), pixel_cs[8]))

# %% [markdown]
# The picture: the cosine of pair 0 (it turns with the row) at each patch of the first
# column, over the patch's place in the image, from the first patch (0) to the last (1).
# With pixel coordinates the 15 x 15 grid's points fall on the 8 x 8 grid's wave and fill
# it in; with integer positions its wave runs twice as fast.

# %%
fig, axs = plt.subplots(1, 2, figsize=(11, 3), sharey=True, constrained_layout=True)
for ax, tables, title in zip(axs, (pixel_cs, integer_cs), ("pixel coordinates in [-1, 1]", "integer positions")):
    for n, marker in ((8, "o"), (15, ".")):
        ax.plot(np.arange(n) / (n - 1), tables[n][0][::n, 0], marker=marker, label=f"{n} x {n} patches")
    ax.set(title=title, xlabel="place along the image (first patch 0, last 1)")
    ax.legend()
axs[0].set_ylabel("cos of pair 0 (rows)")
plt.show()

# %% [markdown]
# What each keeps: pixel coordinates keep the places and bring the neighbours closer,
# $2/14$ of a unit apart instead of $2/7$, so each pair turns half as far from one patch to
# the next, and the fast pairs see finer detail than in training. Integer positions keep
# that step (pair 0 turns by 1 rad from one patch to the next, as in training) and move the
# places: patches 8 to 14 get positions the model never saw at 8 x 8.

# %%
def step(cos, sin, n):
    """The turn of pair 0 from patch (0, 0) to patch (1, 0) of an n x n grid, in radians."""
    return np.angle((cos[n, 0] + 1j * sin[n, 0]) * (cos[0, 0] - 1j * sin[0, 0]))


steps = {name: [step(*tables[n], n) for n in (8, 15)] for name, tables in (("pixel", pixel_cs), ("integer", integer_cs))}
print({name: np.round(s, 4).tolist() for name, s in steps.items()}, "  2 pi / 7 =", round(2 * np.pi / 7, 4))
assert np.isclose(steps["pixel"][0], 2 * steps["pixel"][1]) and np.isclose(*steps["integer"])

# %% [markdown]
# ## 8. Random Fourier features: SAM's positions
#
# SAM (Segment Anything, [Kirillov et al.](https://arxiv.org/abs/2304.02643)) and its
# successors SAM 2, SAM 3 and EdgeTAM place the image's patches and the prompt's clicks
# and box corners alike with *random Fourier features*
# ([Tancik et al.](https://arxiv.org/abs/2006.10739)), their `PositionEmbeddingRandom`. A
# point's coordinates, scaled to $c = (x, y) \in [-1, 1]^2$, are projected on $F$ random
# directions, the columns of a Gaussian matrix $G$ (`scale * randn(2, F)`; SAM: scale 1,
# $F = 128$), and the features are $[\sin(2\pi\, cG), \cos(2\pi\, cG)]$, $2F$ channels.
# $G$ is drawn once and saved with the weights, so the features depend on it:
# `random_fourier_features(coords, projection)` takes it. SAM's 64 x 64 image tokens sit at
# the centres of the patches, $(k + 0.5)/64$ of the image, scaled the same way.

# %%
sam_grid = (64, 64)
G = np.random.default_rng(0).standard_normal((2, 128))  # SAM: scale * randn(2, 128), scale 1
centres = patch_positions(sam_grid, grid_offset=0.5)[::-1].T  # (x, y) of each patch's centre, in patches
rff = random_fourier_features(centres, G, input_shape=sam_grid, dtype=np.float64)
turns_2pi = 2 * np.pi * (2 * centres / 64 - 1) @ G  # 2 pi c G, c in [-1, 1]
print("features:", rff.shape)
np.testing.assert_allclose(rff, np.concatenate([np.sin(turns_2pi), np.cos(turns_2pi)], axis=-1), atol=1e-12)

# %% [markdown]
# **The choice against a sin-cos table.** A 2-D sin-cos table (MAE's, notebook 09) gives
# each axis half its channels, turning at geometric frequencies along that axis alone: the
# similarity of two patches (their dot product over the 128 sin-cos pairs, the mean
# cosine of their angle differences as for RoPE) is a kernel of the row offset plus one of
# the column offset. A random feature is a wave along its own direction $g_j$, and the mean
# $\frac1F \sum_j \cos(2\pi\,\Delta c \cdot g_j)$ estimates
# $E[\cos(2\pi\,\Delta c \cdot g)] = e^{-2\pi^2 |\Delta c|^2}$ for Gaussian $g$ (scale 1):
# a function of the *distance* only, the same in every direction, whose width the scale
# sets. The similarity of the centre patch to three patches 15 away, for SAM's features and
# for MAE's table of the same width:

# %%
mae = grid_encoding(sam_grid, 256, convention="mae", dtype=np.float64)
centre = 32 * 64 + 32
kernel = {"random Fourier features (SAM)": similarity(rff[:, 128:], rff[:, :128], centre).reshape(sam_grid),
          "sin-cos table (MAE)": (mae @ mae[centre] / 128).reshape(sam_grid)}
for name, values in kernel.items():
    print(f"{name:30s} offset (0, 15): {values[32, 47]:.2f}  (15, 0): {values[47, 32]:.2f}  (9, 12): {values[41, 44]:.2f}")
assert kernel["sin-cos table (MAE)"][32, 47] - kernel["sin-cos table (MAE)"][41, 44] > 0.1

# %% [markdown]
# SAM's 128 directions are a sample: its similarity follows the Gaussian to about 0.2 over
# the grid, and 16 times as many directions follow it to within 0.05 (the error of a mean
# of $F$ random cosines shrinks like $1/\sqrt{F}$). MAE's table stays higher along the axes
# than along the diagonals at the same distance, whatever its width: half its pairs do not
# turn for an offset along one axis.

# %%
u = (np.arange(64) - 32) / 32  # offsets from the centre patch, in units of c
gauss = np.exp(-2 * np.pi**2 * (u[:, None] ** 2 + u**2))
errors = {}
for features in (128, 2048):
    f = random_fourier_features(centres, np.random.default_rng(0).standard_normal((2, features)), input_shape=sam_grid)
    errors[features] = np.abs(similarity(f[:, features:], f[:, :features], centre).reshape(sam_grid) - gauss).max()
print("largest distance from the Gaussian, F = 128 and 2048:", [round(float(e), 3) for e in errors.values()])
assert 0.15 < errors[128] < 0.25 and errors[2048] < 0.05

# %% [markdown]
# The two similarities as pictures (the dashed circle: 15 patches from the centre). SAM's
# is a round blob with its sampling noise around it; MAE's is a cross, high along the row
# and the column of the centre patch.

# %%
fig, axs = plt.subplots(1, 2, figsize=(10, 4), constrained_layout=True)
for ax, (name, values) in zip(axs, kernel.items()):
    shown = ax.imshow(values, cmap="RdBu_r", vmin=-1, vmax=1)
    ax.add_patch(plt.Circle((32, 32), 15, fill=False, linestyle="--", color="k"))
    ax.set(title=name, xlabel="key patch column", ylabel="key patch row")
fig.colorbar(shown, ax=axs, shrink=0.8, label="similarity to the centre patch")
plt.show()

# %% [markdown]
# Why SAM chose them: its prompt encoder places clicks and box corners anywhere in the
# image, at pixel precision, in the same space as the image's patches, and compares them by
# distance in any direction. Random features treat every direction alike and have one knob,
# the scale of $G$, which sets the width of the similarity (too small blurs neighbouring
# points together, too large turns the features into noise: Tancik et al.). A sin-cos
# table covers many widths at once (its fast pairs give a sharp peak, its slow ones a long
# tail) but favours the axes.

# %% [markdown]
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
# - Flux gives each token the ids (axis 0, row, column) and each axis a block of the head
#   turning at the frequencies of its own width, (16, 56, 56); its text tokens all sit at
#   (0, 0, 0), where the image's top-left patch is, and carry no position among themselves.
# - Video models split the head among time, height and width (Wan (44, 42, 42),
#   HunyuanVideo (16, 56, 56)); an axis with few channels moves the similarity little.
# - Pixel frequencies over coordinates in [-1, 1] keep a place's angles when the grid is
#   resized and make the steps between neighbours finer; integer positions keep the steps
#   and move the places.
# - SAM's random Fourier features project the coordinates on random Gaussian directions: a
#   similarity of the distance alone, the same in every direction, with one width; a 2-D
#   sin-cos table's is a sum of one kernel per axis, higher along the axes.
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
# ### Exercise 4 · Flux's ids
#
# Complete `flux_ids(text_length, height, width)`: Flux's ids for a prompt of `text_length`
# tokens and an image of `height x width` tokens, `(tokens, 3)`, without
# `flux_position_ids`. The draft has one mistake.

# %%
def flux_ids(text_length, height, width):
    rows, columns = np.meshgrid(np.arange(height), np.arange(width), indexing="ij")
    image_ids = np.stack([np.zeros(height * width), columns.ravel(), rows.ravel()], axis=-1)
    return np.concatenate([np.zeros((text_length, 3)), image_ids])


print(nb10.flux_ids.check(flux_ids))

# %% [markdown]
# ### Exercise 5 · The similarity along one axis
#
# Complete `axis_similarity(offsets, axes_dim, axis, base)`: section 6's similarity (the
# mean over all the pairs of the head of the cosine of their angle difference) for each
# offset along axis `axis` alone, under RoPE with a width per axis `axes_dim`. The draft
# forgets something.

# %%
def axis_similarity(offsets, axes_dim, axis, base):
    w = base ** (-2 * np.arange(axes_dim[axis] // 2) / axes_dim[axis])
    return np.cos(np.outer(offsets, w)).mean(axis=-1)


print(nb10.axis_similarity.check(axis_similarity))

# %% [markdown]
# ### Exercise 6 · Angles at pixel frequencies
#
# Complete `pixel_angles(n, count, max_freq)`: with NumPy alone, the angles `(n, count)` of
# the `count` pairs of one axis of `n` patches at pixel frequencies (section 7).

# %%
def pixel_angles(n, count, max_freq):
    coordinates = np.arange(n)
    w = np.pi * np.linspace(1, max_freq / 2, count)
    return np.outer(coordinates, w)


print(nb10.pixel_angles.check(pixel_angles))

# %% [markdown]
# ### Exercise 7 · SAM's features of a click
#
# Complete `sam_features(points, projection, height, width)`: with NumPy alone, SAM's random
# Fourier features of points `(x, y)` in pixels of a `height x width` image (already at
# their pixel's centre), `projection` being the `(2, F)` matrix $G$.

# %%
def sam_features(points, projection, height, width):
    c = 2 * points / np.array([width, height]) - 1
    angles = c @ projection
    return np.concatenate([np.sin(angles), np.cos(angles)], axis=-1)


print(nb10.sam_features.check(sam_features))

# %% [markdown]
# ## Cross-checks
#
# The claims above once more, together: the second score map is the first moved by the
# offset between its query patches; Qwen2-VL's and Pixtral's 2-D RoPE both depend on the
# offset only; the rows of exercise 1 are posenc's; each of Flux's blocks is 1-D RoPE of its
# own width on its id; the similarity along an axis is the same from any query; the answers
# of exercises 4 to 7 are posenc's ids, similarities, pixel tables and SAM's features; the
# sin-cos table's similarity is a sum of one kernel per axis; the run takes under a minute
# (the notebook is meant to be quick to re-run).

# %%
# Cross-checks of sections 1 to 3 and exercise 1
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

# %%
# Cross-checks of sections 5 and 6 and exercises 4 and 5
for axis, size in enumerate(flux_dims):  # each of Flux's blocks is 1-D RoPE of its own width on its id
    one_d = posenc.rotary_cos_sin(token_ids[:, axis], size, layout="interleaved", dtype=np.float64)
    for mine, theirs in zip((flux_cos, flux_sin), one_d):
        np.testing.assert_allclose(mine[:, channel_axis == axis], theirs, rtol=0, atol=1e-15)
half_cos, half_sin = rope.per_axis_cos_sin(token_ids, flux_dims, layout="half", dtype=np.float64)
np.testing.assert_array_equal(half_cos[:, :64], flux_cos[:, ::2])
np.testing.assert_array_equal(nb10.flux_ids_solution(prompt, image_rows, image_columns), token_ids)
assert (token_ids[prompt:] == [[0, r, c] for r in range(image_rows) for c in range(image_columns)]).all()
np.testing.assert_allclose(similarity(flux_cos, flux_sin, prompt), text_similarity, atol=1e-15)  # the top-left patch's view
corner_view = similarity(video_cos, video_sin, 0).reshape(video_shape)  # HunyuanVideo's, from a query at (0, 0, 0)
np.testing.assert_allclose(corner_view[:11, 0, 0], hunyuan_time[10:], atol=1e-6)
np.testing.assert_allclose(corner_view[0, 0, :26], hunyuan_width[26:], atol=1e-6)
for (dims, base), lines in zip(video_splits.values(), along.values()):  # exercise 5's formula, along each axis
    for axis, (line, at) in enumerate(zip(lines, query)):
        np.testing.assert_allclose(nb10.axis_similarity_solution(np.arange(len(line)) - at, dims, axis, base), line, atol=1e-6)
wan_steps = [line[at + 1] for line, at in zip(along["Wan"], query)]
assert np.ptp(wan_steps) < 0.005 and along["HunyuanVideo"][0][11] > along["HunyuanVideo"][1][16]

# %%
# Cross-checks of sections 7 and 8 and exercises 6 and 7; the run's time
np.testing.assert_array_equal(patch_positions((15, 15), normalize="pixel")[1, :15], np.linspace(-1, 1, 15))
for n in (8, 15):  # exercise 6's angles: the row pairs of the pixel table, down the first column
    angles = nb10.pixel_angles_solution(n, 8, 224)
    np.testing.assert_allclose(pixel_cs[n][0][::n, :16:2], np.cos(angles), atol=1e-12)
    np.testing.assert_allclose(pixel_cs[n][1][::n, :16:2], np.sin(angles), atol=1e-12)
assert not np.allclose(integer_cs[15][0][same_place], integer_cs[8][0])
assert np.isclose(steps["pixel"][0], 2 * np.pi / 7) and np.isclose(steps["integer"][0], 1.0)
points = 16 * centres  # SAM's 1024 x 1024 image, 16 pixels per patch
np.testing.assert_allclose(nb10.sam_features_solution(points, G, 1024, 1024), rff, atol=1e-12)
np.testing.assert_allclose(random_fourier_features(points, G, input_shape=(1024, 1024), dtype=np.float64), rff, atol=1e-12)
sincos = kernel["sin-cos table (MAE)"]
np.testing.assert_allclose(sincos, sincos[:, [32]] + sincos[[32], :] - 1, atol=1e-12)  # a kernel per axis, added
np.testing.assert_allclose(kernel["random Fourier features (SAM)"][32, 32], 1.0)
seconds = time.perf_counter() - started
assert seconds < 60

# %%
# NBVAL_IGNORE_OUTPUT
print(f"This run took {seconds:.0f} s.")
