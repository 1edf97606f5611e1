# %% [markdown]
# # 10 · 网格与视频上的旋转位置编码
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/posenc-org/posenc/blob/main/notebooks/zh_CN/10_rotary_on_grids.ipynb)
#
# 笔记本 08 按词元在序列中的位置旋转查询和键。图像的图像块有行和列，视频的帧还多一个时间。视觉-语言模型用一种简单的方式把这些坐标交给 RoPE：每个旋转通道对只读取*一个*坐标。
# 本笔记本沿着这一思路，从图像网格一直讲到混合了文本、图像和视频的序列，看看三个模型系列各自如何为它编号。
#
# **问题：** RoPE 如何为图像块和视频帧赋予位置？它们之后的文本又从哪里接着编号？
#
# **学完本节，你将能够：**
# - 为图像块网格构建二维 RoPE，并说出两种视觉编码器如何选择它的频率；
# - 按现行的每条规则，写出多模态 RoPE 为一个包含文本、图像和视频的序列给出的三行位置编号（时间、高度、宽度）；
# - 说出一个头的哪些通道随时间、高度或宽度旋转；
# - 把 transformers 的配置加载到 posenc 的旋转编码模块中，并得到与模型本身相同的 logits。
#
# **先修：** 笔记本 08 和 09 · **时间：** 约 50 分钟

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
# ## 1. 二维 RoPE：每一对读取行或列
#
# 视觉-语言模型通过*视觉编码器*读取图像：这是一个 ViT（Vision Transformer，[Dosovitskiy et al.](https://arxiv.org/abs/2010.11929)），它把图像切成图像块（笔记本 09），并在这些图像块上计算注意力。
# 有两种这样的编码器按图像块的行 $r$ 和列 $c$ 旋转查询和键：Pixtral 的（Mistral AI，[Pixtral 12B](https://arxiv.org/abs/2410.07073)）和 Qwen2-VL 的（[Qwen2-VL](https://arxiv.org/abs/2409.12191)；它的后继者 [Qwen2.5-VL](https://arxiv.org/abs/2502.13923) 和 [Qwen3-VL](https://huggingface.co/docs/transformers/model_doc/qwen3_vl) 沿用了它）。
# 一个 $d$ 通道的头有 $d/2$ 个旋转通道对（笔记本 08）；两种编码器都按行旋转前 $d/4$ 对，按列旋转另外 $d/4$ 对。它们的区别在于频率：
#
# - Qwen2-VL 给每个轴都用 $d/2$ 通道 RoPE 的频率 $w_i = 10000^{-4i/d}$，行和列用同一个列表；
# - Pixtral 取一维 RoPE 的 $d/2$ 个频率 $10000^{-2j/d}$，轮流分发：偶数 $j$ 给行，奇数 $j$ 给列。
#
# 所以两者的行频率相同，只有列频率不同。

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
# Pixtral 的每个列频率都比 Qwen2-VL 的低半步：行频率列表的一步是因子 $10000^{-4/d}$，而 Pixtral 的奇数 $j$ 还要再低一个因子 $10000^{-2/d}$（在 $d = 32$ 时 $= 0.5623$）。
# Pixtral 的行和列合起来把一维 RoPE 的频率恰好各覆盖一次；Qwen2-VL 的行和列则把其中一半覆盖了两次。

# %%
ratio = pixtral.values[8:] / qwen.values[8:]
print(f"Pixtral / Qwen2-VL, columns: {ratio.min():.4f} to {ratio.max():.4f}; 10000^(-2/d) = {10000 ** (-2 / d):.4f}")
np.testing.assert_allclose(ratio, 10000 ** (-2 / d), rtol=1e-14)  # float64 round-off

# %% [markdown]
# 一个 6 x 8 的图像块网格，逐行展平（Pixtral 的顺序）；`grid_position_ids` 给出每个词元的（行，列）。
# 用这些角度的 cos 和 sin（Qwen2-VL 的频率），我们在每个图像块上旋转同一个随机查询向量和同一个随机键向量，并计算它们之间的全部点积。

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
# **分数只依赖于二维偏移。** 所有（行偏移，列偏移）相同的图像块对都有相同的分数，差别不超过 float64 舍入误差：同一偏移内分数的极差低于 $10^{-12}$，而分数本身可达 5.2（见上面的输出）。

# %%
offsets = ids[:, :, None] - ids[:, None, :]  # (2, 48, 48): key minus query, rows and columns
spread = max(
    np.ptp(scores.T[(offsets[0] == dr) & (offsets[1] == dc)])
    for dr in range(-height + 1, height) for dc in range(-width + 1, width)
)
print("largest spread of the scores within one offset below 1e-12:", spread < 1e-12)
assert spread < 1e-12

# %% [markdown]
# 这是偏移，不是距离：向下一行、向左两列的分数，与向下两行、向左一列的分数不同，尽管两者的距离一样远。

# %%
down_left = scores.T[(offsets[0] == 1) & (offsets[1] == -2)][0]
left_down = scores.T[(offsets[0] == 2) & (offsets[1] == -1)][0]
print(f"offset (1, -2): {down_left:.3f}   offset (2, -1): {left_down:.3f}")
assert abs(down_left - left_down) > 0.1, "two offsets of one length, two scores"

# %% [markdown]
# 画成图：一个查询图像块（星号）对每个键图像块的分数。前两张图对两个不同的查询图像块使用同一对随机的 q 和 k；第二张图就是把第一张图平移了两个查询图像块之间的偏移。
# 查询图像块处并没有峰值：RoPE 让分数成为偏移的函数，但其中没有任何东西让邻近的图像块得分更高。
# 第三张图用 q = k：这时偏移为零处的分数是 $|q|^2$，没有哪个偏移的分数比它更高，因为旋转保持长度不变（$q \cdot Rq \le |q|\,|Rq| = |q|^2$）。
# 这个峰值来自选择了 q = k，而不是来自 RoPE，而且它很平缓：低频对在 8 列之间几乎不转，所以每个图像块的分数仍至少是峰值的 81%。训练好的模型可能学到让邻近图像块得分高的查询和键，也可能学不到。

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
# ## 2. M-RoPE：为文本、图像和视频给出三行位置编号
#
# 在 Qwen2-VL 中，语言模型在同一个序列里读取文本词元和视觉词元。它的多模态 RoPE，即 **M-RoPE**（[Qwen2-VL 论文](https://arxiv.org/abs/2409.12191)第 2.1 节），给每个词元三个位置：时间、高度和宽度；头的每个旋转通道对读取其中之一（具体是哪一个，见第 3 节）。
# 视觉编码器配置中的两个数决定了视觉词元的形状（[transformers 的 Qwen2-VL 页面](https://huggingface.co/docs/transformers/model_doc/qwen2_vl)）：
#
# - `spatial_merge_size`：编码器之后，一个合并器把每个 2 x 2 的相邻图像块区域合成语言模型的一个词元；4 x 6 个图像块的图像变成 2 x 3 个词元；
# - `temporal_patch_size`：一个视频图像块在时间上有 2 帧深，所以 6 帧视频构成 3 个*时间块*（temporal patch）。视觉输入的网格 `grid_thw` 记录的是时间块数，以及图像块的行数和列数。

# %%
vision = transformers.Qwen2VLConfig().vision_config
print("spatial_merge_size:", vision.spatial_merge_size, "  temporal_patch_size:", vision.temporal_patch_size)

# %% [markdown]
# 编号方式按本课程锁定的 transformers 5.23 中 `get_rope_index` 的做法：文本词元在三行上得到同一个编号，从前一个词元接着往下数，所以在文本上 M-RoPE 就是一维 RoPE。
# 从位置 $s$ 开始的视觉输入，在其合并后的网格上，时间为 $s + \text{frame}$，高度为 $s + \text{row}$，宽度为 $s + \text{column}$。
#
# 一个序列：4 个文本词元，一张 4 x 6 个图像块的图像，3 个文本词元，一段 6 帧（3 个时间块）、每帧 4 x 4 个图像块的视频，3 个文本词元。
# `mrope_position_ids` 接受以词元数表示的文本，以及以 `grid_thw` 表示的视觉输入。

# %%
segments = [4, (1, 4, 6), 3, (3, 4, 4), 3]
rows = rope.mrope_position_ids(segments, spatial_merge_size=2)
print("shape:", rows.shape)
print(rows)

# %% [markdown]
# 图像是第 4 到 9 个词元，即 2 x 3 个合并后的词元。它们的时间都是 4；高度和宽度从 4 开始数行和列。
# 图像之后的文本并不是接着图像的 6 个词元往下数：它从图像的最大位置再加一开始，即 $4 + \max(2, 3) = 7$。

# %%
image, video = slice(4, 10), slice(13, 25)
print("image (time, height, width):", rows[:, image].tolist())
print("text after the image starts at", rows[0, 10])
assert rows[0, 10] == 4 + max(2, 3)

# %% [markdown]
# 视频是第 13 到 24 个词元：3 个时间块，每块 2 x 2 个词元，时间为 10、11、12。
# transformers 5.23 让其后的文本从 $10 + \max(2, 2) = 12$ 开始，即起点加上合并后较长的那条边，与帧数无关：所以第一个文本词元与视频的最后一个时间块共用时间 12。

# %%
print("video times:", sorted(set(rows[0, video].tolist())), "  text after the video:", rows[0, 25:].tolist())
assert rows[0, 25] == 10 + max(2, 2)

# %% [markdown]
# 这是 5.x 的规则。Qwen2-VL 发布时所用的代码（transformers 4.x，[`Qwen2VLModel.get_rope_index`](https://github.com/huggingface/transformers/blob/v4.45.0/src/transformers/models/qwen2_vl/modeling_qwen2_vl.py)）让文本从该区块在任一行上的最大编号再加一开始：$\max(12, 11, 11) + 1 = 13$。
# 它的文档字符串中的例子是一段 3 个时间块、每块 2 x 2 个词元的视频，后面跟着文本，文本的位置为 3, 4, 5, ...；5.x 的规则则给出 2, 3, 4。
# 对于图像，以及时间块数不超过合并后较长边的视频，两条规则的结果一致。
# Issue [#45381](https://github.com/huggingface/transformers/issues/45381) 表明，transformers 5.2 在 Qwen2.5-VL 的视频之后仍让文本从视频的最大编号再加一开始，并指出 5.3 及以后版本给出的编号是错的。
# posenc 默认遵循锁定的 5.23，用 `text_resumes="after_largest"` 则给出 4.x 的规则（`tests/test_rotary_grid_models.py` 把前者与已安装的 `get_rope_index` 对照检查，把后者与那个文档字符串中的例子对照检查）。

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
# 按 5.23 的编号方式，整个序列上的三行位置编号：文本沿一条线延续，图像和视频把它分成时间、高度和宽度三条。点线标出 4.x 规则把视频之后的文本放在哪里。

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
# **Qwen2.5-VL**（[技术报告](https://arxiv.org/abs/2502.13923)）把时间行与秒数挂钩：视频的第 $k$ 个时间块得到时间 $s + \lfloor k \cdot \texttt{tokens\_per\_second} \cdot \texttt{second\_per\_grid\_t} \rfloor$，其中 `second_per_grid_t` $=$ `temporal_patch_size / fps` 是一个时间块跨越的秒数，`tokens_per_second` 是视觉配置中的一个值（图像不做这种间隔）。
# 使用配置类的默认值、并以每秒 2 帧采样时，一个时间块为 1 秒，时间按 `tokens_per_second` 递增：

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
# 按 5.23 的规则，文本现在从视频时间跨度的中间开始（12，而各帧的时间一直到 18）；按 4.x 的规则，则从视频之后开始（19）。
#
# **Qwen3-VL**（[transformers 的 Qwen3-VL 页面](https://huggingface.co/docs/transformers/model_doc/qwen3_vl)）不再在时间行中数帧。
# 它的处理器把每个时间块写成一个单独的网格，前面是一个文本形式的时间戳（例如 `<1.0 seconds>`），并放在视觉开始标记和结束标记之间；`get_rope_index` 把视频的 `grid_thw` 拆成每个时间块一个网格。
# 于是对 M-RoPE 来说，每一帧都是一张图像，而时间信息在文字里。这里用 5 个文本词元代表一个时间戳和这些标记（实际数量取决于分词器）。

# %%
stamp = 5
per_frame = [4, (1, 4, 6), 3, stamp, (1, 4, 4), stamp, (1, 4, 4), stamp, (1, 4, 4), 3]
qwen3 = rope.mrope_position_ids(per_frame)
print("Qwen3-VL time row:", qwen3[0].tolist())
assert (qwen3 == rope.mrope_position_ids(per_frame, text_resumes="after_largest")).all(), "one rule when frames come alone"

# %% [markdown]
# ## 3. 哪一对读取哪一行：`mrope_section`
#
# 文本配置的 `rope_parameters` 中有 `mrope_section`，即每个轴（时间、高度、宽度）分到的旋转通道对数。
# Qwen2-VL 按连续的分段分配这些对；transformers 的默认值是 [16, 24, 24]，对应 128 通道的头（64 对）。
# Qwen3-VL 则把它们*交错*排列（时间、高度、宽度、时间……），默认值为 [24, 20, 20]。在笔记本 08 的 half 布局中，通道 $c$ 和通道 $c + d/2$ 组成第 $c$ 对。

# %%
from transformers.models.qwen2_vl.modeling_qwen2_vl import Qwen2VLRotaryEmbedding  # noqa: E402
from transformers.models.qwen3_vl.modeling_qwen3_vl import Qwen3VLTextRotaryEmbedding  # noqa: E402

qwen2_section = Qwen2VLRotaryEmbedding(transformers.Qwen2VLConfig().text_config).mrope_section
qwen3_section = Qwen3VLTextRotaryEmbedding(transformers.Qwen3VLConfig().text_config).mrope_section
print("default mrope_section, Qwen2-VL:", qwen2_section, "  Qwen3-VL:", qwen3_section)
print("Qwen2-VL, first 20 pairs:", rope.mrope_axes(qwen2_section)[:20])
print("Qwen3-VL, first 20 pairs:", rope.mrope_axes(qwen3_section, interleaved=True)[:20])

# %% [markdown]
# 为什么要交错：第 $j$ 对的频率随 $j$ 降低，所以连续分段只给时间分到最高的频率，只给宽度分到最低的频率。
# 底数为 $10^6$（Qwen2-VL 默认的 `rope_theta`）时，宽度中频率最高的一对，从 32 个词元宽的图像一端到另一端转过的角度不到 0.006 rad。交错排列时，每个轴都几乎覆盖整个频率范围。

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
# 在文本上三行相等，所以无论哪一对读取哪一行，M-RoPE 在那里*就是*一维 RoPE，两种顺序都是如此（32 通道的头：分段 [4, 6, 6]，交错 [6, 5, 5]）。

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
# ## 4. `from_config`：由 Hugging Face 配置得到 posenc 的旋转编码模块
#
# `posenc.torch.RotaryEmbedding.from_config(config)` 读取 transformers 的配置：完整的 `rope_parameters`（RoPE 类型、底数以及该类型的各个键；遇到未知的键会报错并指出它的名字）、头大小以及该模型系列的配对方式。
# 这里用一个权重随机的微型 Qwen2-VL，输入第 2 节的位置编号；我们把它的旋转编码模块换成 posenc 的。

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
# 模型用它自己的旋转编码模块和用 posenc 的模块得到的 logits 在 float32 舍入误差内一致：考虑到两层 float32 求和，我们允许的误差为最大 logit 的 $2 \cdot 10^{-6}$，约为 16 个 float32 机器精度（$2^{-23} \approx 1.2 \cdot 10^{-7}$）。
# 在这么小的位置上，transformers 的 float32 角度与 posenc 的一样好。

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
# `tests/test_rope_config.py` 对十五个模型系列做了同样的检查（Llama、Mistral、Qwen2、Qwen3、Gemma 3、Phi-3、GPT-NeoX、GPT-J、Cohere、DeepSeek-V3、GPT-OSS、Llama 4、Qwen2-VL、Qwen2.5-VL 和 Qwen3-VL）。
#
# ## 小结
#
# - 在网格上，每个旋转通道对读取一个坐标，所以两个图像块的分数只依赖于它们的二维偏移：这是带符号的偏移，不是距离，也没有内在地偏好邻近的图像块。
# - Pixtral 和 Qwen2-VL 的视觉编码器给行的频率相同；Pixtral 的列频率低半步。
# - M-RoPE 给文本三行相等的编号（就是普通的一维 RoPE），给视觉输入的（时间，行，列）则从它的起点开始、在 2 x 2 合并后的网格上计数。
# - 视觉输入之后，文本从起点加上合并后较长的边处接续（transformers 5.x），或从该区块的最大编号再加一处接续（transformers 4.x，即 Qwen2-VL 发布时的版本）；当视频的时间块数多于那条边时，两者不同。
# - Qwen2.5-VL 让视频的时间按 `tokens_per_second * second_per_grid_t` 间隔；Qwen3-VL 把每个时间块当作单独的图像来编号，前面加一个文本时间戳。
# - `mrope_section` 记录每个轴分到的通道对数：Qwen2-VL 的连续分段只给宽度分到低频，Qwen3-VL 的交错排列让每个轴都覆盖整个频率范围。
# - `RotaryEmbedding.from_config` 把 transformers 的配置变成 posenc 的模块，得到相同的 logits。
#
# ## 练习
#
# 每个检查都会说明答案哪里错了；卡住时，`nb10.<exercise>.hint()` 给出提示，`nb10.<exercise>.solution()` 打印参考答案的代码。
#
# ### 练习 1 · 文本 + 图像序列的三行位置编号
#
# 两个文本词元，一张 4 x 6 个图像块的图像（`spatial_merge_size` 为 2），两个文本词元：按 transformers 5.23 的规则，手工写出 M-RoPE 的三行（时间、高度、宽度）。
# 下面的草稿有一处错误；修改它，直到检查告诉你答案正确为止。

# %%
from posenc.exercises import nb10  # noqa: E402

my_rows = np.array([
    [0, 1, 2, 2, 2, 2, 2, 2, 8, 9],  # time
    [0, 1, 2, 2, 2, 3, 3, 3, 8, 9],  # height
    [0, 1, 2, 3, 4, 2, 3, 4, 8, 9],  # width
])
print(nb10.mrope_rows.check(my_rows))

# %% [markdown]
# ### 练习 2 · 每个通道由哪个轴旋转
#
# 补全 `channel_axes(mrope_section)`：对 half 布局下一个头的 $2 \sum$ `mrope_section` 个通道，给出在 Qwen2-VL 的连续分段下旋转每个通道的轴（0 为时间，1 为高度，2 为宽度）。
# 草稿只给出了各通道对的答案。

# %%
def channel_axes(mrope_section):
    return np.repeat([0, 1, 2], mrope_section)


print(nb10.channel_axes.check(channel_axes))

# %% [markdown]
# ### 练习 3 · 偏移相同，分数相同
#
# 在二维 RoPE 中，查询图像块 `query_a` 对键图像块 `key_a` 打分（两者都是（行，列））。
# 补全 `same_offset(query_a, key_a, query_b)`：返回这样一个键图像块，无论 q 和 k 是什么，查询图像块 `query_b` 对它的分数都与前者完全相同。

# %%
def same_offset(query_a, key_a, query_b):
    offset = (query_a[0] - key_a[0], query_a[1] - key_a[1])
    return (query_b[0] + offset[0], query_b[1] + offset[1])


print(nb10.same_offset.check(same_offset))

# %% [markdown]
# ## 交叉检查
#
# 把上文的各项说法一起再检验一遍：第二张分数图是第一张按其两个查询图像块之间的偏移平移得到的；Qwen2-VL 和 Pixtral 的二维 RoPE 都只依赖于偏移；练习 1 的三行与 posenc 给出的相同；整个运行不到一分钟（这个笔记本本来就应该能快速重跑）。

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
