# %% [markdown]
# # 10 · 网格与视频上的旋转位置编码
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/posenc-org/posenc/blob/main/notebooks/zh_CN/10_rotary_on_grids.ipynb)
#
# 笔记本 08 按词元在序列中的位置旋转查询和键。图像的图像块有行和列，视频的帧还多一个时间。视觉-语言模型用一种简单的方式把这些坐标交给 RoPE：每个旋转通道对只读取*一个*坐标。
# 本笔记本沿着这一思路，从图像网格一直讲到混合了文本、图像和视频的序列，看看三个模型系列各自如何为它编号；再讲到绘制图像和视频的扩散模型，以及另外两种给图像块定位的方式：按它在图像中所处的地方，以及用随机傅里叶特征。
#
# **问题：** RoPE 如何为图像块和视频帧赋予位置？它们之后的文本又从哪里接着编号？
#
# **学完本节，你将能够：**
# - 为图像块网格构建二维 RoPE，并说出两种视觉编码器如何选择它的频率；
# - 按现行的每条规则，写出多模态 RoPE 为一个包含文本、图像和视频的序列给出的三行位置编号（时间、高度、宽度）；
# - 说出一个头的哪些通道随时间、高度或宽度旋转；
# - 把 transformers 的配置加载到 posenc 的旋转编码模块中，并得到与模型本身相同的 logits；
# - 为一个提示词和一张图像写出 Flux 的 id，并说出哪些通道随哪个轴旋转；
# - 说出视频模型对头的划分如何决定沿时间、高度和宽度方向的相似度；
# - 解释为什么 [-1, 1] 中的像素坐标能让缩放后图像中同一处的角度保持不变，以及整数位置会怎样；
# - 说出 SAM 的随机傅里叶特征做到了哪些正弦/余弦表做不到的事。
#
# **先修：** 笔记本 08 和 09 · **时间：** 约 90 分钟

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
# posenc 默认遵循锁定的 5.23，用 `text_resumes="after_largest"` 则给出 4.x 的规则（`tests/rope/test_axial_models.py` 把前者与已安装的 `get_rope_index` 对照检查，把后者与那个文档字符串中的例子对照检查）。

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
# `tests/rope/test_configs.py` 对十五个模型系列做了同样的检查（Llama、Mistral、Qwen2、Qwen3、Gemma 3、Phi-3、GPT-NeoX、GPT-J、Cohere、DeepSeek-V3、GPT-OSS、Llama 4、Qwen2-VL、Qwen2.5-VL 和 Qwen3-VL）。

# %% [markdown]
# ## 5. Flux：为提示词和图像给出同一套 id
#
# 根据提示词绘制图像的扩散 Transformer 把提示词的文本词元和图像的词元放进同一个注意力中，并以 *id* 的形式把每个词元的位置交给 RoPE：每个轴一个坐标，头的每个轴各占一块。
# Flux（Black Forest Labs；diffusers 的 `FluxTransformer2DModel`）给每个词元三个 id，并把它 128 通道的头划分为 `axes_dim = (16, 56, 56)`：轴 0 占 16 个通道，高度占 56 个，宽度占 56 个。
# 每一块按其自身宽度的一维 RoPE 频率旋转，$w_i = 10000^{-2i/\text{axes\_dim}[a]}$（diffusers 的 `get_1d_rotary_pos_embed`，每个轴调用一次）；`per_axis_frequencies` 列出这些频率，以及每一对所属的轴。

# %%
flux_dims = (16, 56, 56)
flux = rope.per_axis_frequencies(flux_dims)
print("pairs per axis:", np.bincount(flux.axes).tolist())
print("height's first frequencies:", np.round(flux.values[8:11], 4), "  10000^(-2i/56):", np.round(10000.0 ** (-2 * np.arange(3) / 56), 4))
np.testing.assert_allclose(flux.values[8:36], 10000.0 ** (-2 * np.arange(28) / 56), rtol=1e-15)

# %% [markdown]
# 流水线（pipeline）这样给词元编号：每个文本词元的 id 都是 (0, 0, 0)（它的 `text_ids` 全为零），打包后的潜变量网格（每 16 x 16 像素一个词元）中第 $r$ 行、第 $c$ 列的图像词元得到 (0, r, c)。
# id 的轴放在最后，形状为 `(tokens, 3)`，文本在前，与 Transformer 拼接它们的顺序一致；`flux_position_ids` 负责写出它们。一个 4 个词元的提示词和一张 6 x 8 个词元的图像：

# %%
prompt, image_rows, image_columns = 4, 6, 8
token_ids = rope.flux_position_ids(prompt, image_rows, image_columns)
print("ids:", token_ids.shape, "  tokens 0 and 3 (text), 4, 5 and 12 (image):", token_ids[[0, 3, 4, 5, 12]].tolist())

# %% [markdown]
# 在交错（interleaved）布局中，第 $j$ 对是通道 $2j$ 和 $2j + 1$，所以通道 0-15 随轴 0 旋转，16-71 随高度旋转，72-127 随宽度旋转。
# 在 Flux 的文生图中，每个词元的轴 0 都是 0：这 16 个通道从不旋转，每个头有八分之一不携带任何位置。（Flux.1 Kontext 让其参考图像的词元在这里取 1，以便把它们和正在绘制的图像区分开。）

# %%
flux_cos, flux_sin = rope.per_axis_cos_sin(token_ids, flux_dims, dtype=np.float64)
channel_axis = np.repeat(flux.axes, 2)  # interleaved: pair j is channels 2j and 2j + 1
turns = (flux_cos != 1).any(axis=0)  # a channel that turns at some token
for axis, name in enumerate(["axis 0", "height", "width"]):
    block = np.flatnonzero(channel_axis == axis)
    print(f"{name:6s}: channels {block[0]:3d} to {block[-1]:3d}, {turns[block].sum():2d} of them turn")
assert not turns[channel_axis == 0].any()

# %% [markdown]
# **文本词元位于图像的左上角。** 它们的 id 全为零，所以 RoPE 不旋转它们（cos 为 1，sin 为 0），也不旋转 id 为 (0, 0, 0) 的图像词元。
# 因此，一个文本查询对每个图像键的打分，与左上角图像块上同一向量的查询打出的分数相同；文本词元之间互相打分为 $q \cdot k$，与它们在提示词中的顺序无关（顺序信息在 T5 文本编码器写进它们的内容里）。

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
# 为了不选定 q 和 k 也能看出两个词元在 RoPE 看来有多近，取它们的**相似度**：各对上 $\cos(\theta_j^{\text{key}} - \theta_j^{\text{query}})$ 的平均值，在各对都一致时为 1。
# 它等于 $q = k = (1, 1, \dots, 1)$ 的分数除以 $d$（一对 (1, 1) 的分数是其角度差余弦的两倍），用表来算就是 `(cos @ cos[i] + sin @ sin[i]) / d`。

# %%
def similarity(cos, sin, query):
    """Mean over pairs of cos(angle of each token - angle of token `query`), from RoPE's cos and sin tables."""
    return (cos @ cos[query] + sin @ sin[query]) / cos.shape[-1]


ones = posenc.apply_rotary(np.ones(flux_cos.shape), flux_cos, flux_sin, layout="interleaved")
text_similarity = similarity(flux_cos, flux_sin, 0)  # of text token 0 to every token
print("text token 0 to image tokens (0, 0), (0, 1), (1, 0), (5, 7):", np.round(text_similarity[[4, 5, 12, 51]], 3))
np.testing.assert_allclose(text_similarity, ones @ ones[0] / 128, atol=1e-12)

# %% [markdown]
# 画成图：左边是每个词元（行）在每个通道（列）上的余弦。文本所在的行和轴 0 的那一块全为 1；高度那一块从图像的一行到下一行（每 8 个词元）变化一次，宽度那一块则沿每一行变化。
# 右边是一个文本词元与每个图像词元的相似度，画在图像网格上：这就是从左上角图像块看过去的样子。

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
# ## 6. 视频：时间、高度和宽度，各占头的一部分
#
# 视频扩散 Transformer 按词元在潜视频中的（帧，行，列）给它编号，并像 Flux 一样把头分给三个轴。
# HunyuanVideo（diffusers 的 `HunyuanVideoRotaryPosEmbed`）沿用 Flux 的划分 (16, 56, 56)，底数为 256；Wan（`WanRotaryPosEmbed`）给高度和宽度各 $2\lfloor d/6 \rfloor$ 个通道，其余给时间，底数为 10000。
# 一段 81 帧、480 x 832 像素的 Wan 视频是 21 x 30 x 52 个词元：它的 VAE 把（第一帧之后的）每 4 帧变成一个潜帧、每 8 x 8 像素变成一个潜像素，而 Transformer 的图像块是 2 x 2 个潜像素。

# %%
wan_dims = (128 - 4 * (128 // 6), 2 * (128 // 6), 2 * (128 // 6))
video_splits = {"Wan": (wan_dims, 10000.0), "HunyuanVideo": ((16, 56, 56), 256.0)}
video_shape = (1 + (81 - 1) // 4, 480 // 8 // 2, 832 // 8 // 2)  # (frames, rows, columns) of tokens
video_ids = patch_positions(video_shape).T  # (tokens, 3): (t, y, x), frame outermost, then row by row
print("Wan's axes_dim at d = 128:", wan_dims, "  video tokens:", video_shape, "->", video_ids.shape)
assert (wan_dims, video_shape) == ((44, 42, 42), (21, 30, 52))

# %% [markdown]
# 视频中间位于 (t, y, x) = (10, 15, 26) 的一个查询与每个键的相似度，分别按两种划分计算；再取它在穿过该查询的三条直线上的值（固定另外两个坐标）。
# 相似度只依赖于偏移，所以任何查询看到的都一样。

# %%
query = (10, 15, 26)
along = {}  # model -> the similarity along time, height and width through the query
for name, (dims, base) in video_splits.items():
    video_cos, video_sin = rope.per_axis_cos_sin(video_ids, dims, base=base)
    volume = similarity(video_cos, video_sin, np.ravel_multi_index(query, video_shape)).reshape(video_shape)
    along[name] = [volume[:, 15, 26], volume[10, :, 26], volume[10, 15, :]]
    print(f"{name:12s} one step away in time, height, width:", [round(float(line[i + 1]), 3) for line, i in zip(along[name], query)])

# %% [markdown]
# Wan 的划分几乎均等，沿每个轴走一步损失的相似度差不多。HunyuanVideo 的时间只占 64 对中的 8 对：相隔一帧比相隔一行更相似；而且无论在时间上走多远，其余 56 对（每对 $\cos 0 = 1$）都把相似度保持在 $1 - 2 \cdot 16/128 = 0.75$ 或以上。
# 在这 21 帧上，它始终高于 0.9，而沿宽度方向则降到 0.7 以下。

# %%
hunyuan_time, _, hunyuan_width = along["HunyuanVideo"]
floor = 1 - 2 * 16 / 128
print(f"HunyuanVideo: lowest along time {hunyuan_time.min():.3f} (floor {floor}), along the width {hunyuan_width.min():.3f}")
assert floor <= 0.9 < hunyuan_time.min() and hunyuan_width.min() < 0.7

# %% [markdown]
# 两种划分下穿过该查询的三条直线（高度和宽度分到的头的份额相同，所以它们的曲线重合）：

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
# ## 7. 缩放后的图像上：像素频率与整数频率
#
# 到目前为止，图像块的位置就是它的索引：第 5 个图像块在 5。许多视觉模型则按图像块*在图像中所处的地方*给它定位。
# 沿一个有 $n$ 个图像块的轴，第 $k$ 个图像块位于 $-1 + 2k/(n-1)$：第一个在 -1，最后一个在 1，中间等距分布（`patch_positions(shape, normalize="pixel")`；即 timm 的 `RotaryEmbedding`、rotary-embedding-torch 的 `freqs_for="pixel"` 以及 Perceiver 的傅里叶特征中的 `linspace(-1, 1, n)`）。
# 它们的频率线性分布，直到 `max_freq` 像素图像的奈奎斯特频率（每两个像素转一圈）：$w_j = \pi \cdot \text{linspace}(1, \text{max\_freq}/2, \text{count})$，单位是每单位坐标的弧度，每个轴 `count` 对（`pixel_frequencies`；timm 的默认设置在同一范围内按对数分布）。

# %%
pixel = rope.pixel_frequencies(32, max_freq=224)
print("pairs per axis:", np.bincount(pixel.axes).tolist(), "  frequencies / pi:", np.round(pixel.values[:8] / np.pi, 2))
np.testing.assert_allclose(pixel.values[:8], np.pi * np.linspace(1, 224 / 2, 8), rtol=1e-15)

# %% [markdown]
# 一张图像在训练时被看作 8 x 8 个图像块，放大后被看作 15 x 15 个。用像素坐标时，较大网格的第 $2k$ 个图像块正好位于较小网格第 $k$ 个图像块所在的地方，两者都在 $-1 + 2k/7$，角度也相同。
# 用整数位置（第 1 节的 `qwen2_vl` 二维 RoPE）时，这个图像块位于 $2k$ 而不是 $k$，它的角度翻倍。

# %%
pixel_cs = {n: rope.pixel_cos_sin(patch_positions((n, n), normalize="pixel"), 32, dtype=np.float64) for n in (8, 15)}
integer_cs = {n: rope.axial_cos_sin(patch_positions((n, n)), 32, dtype=np.float64) for n in (8, 15)}
same_place = (2 * np.arange(8)[:, None] * 15 + 2 * np.arange(8)).ravel()  # patch (2r, 2c) of the 15 x 15 grid
kept = [np.array_equal(tables[15][0][same_place], tables[8][0]) for tables in (pixel_cs, integer_cs)]
print("same place, same cos and sin: pixel coordinates", kept[0], "  integer positions", kept[1])
assert all(np.array_equal(big, small) for big, small in zip((t[same_place] for t in pixel_cs[15]), pixel_cs[8]))

# %% [markdown]
# 画成图：第一列各图像块上第 0 对（随行旋转）的余弦，横轴是图像块在图像中的位置，从第一个图像块（0）到最后一个（1）。
# 用像素坐标时，15 x 15 网格的点落在 8 x 8 网格的波形上，并把它填满；用整数位置时，它的波形快了一倍。

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
# 两者各自保持了什么：像素坐标保持位置不变，让相邻图像块靠得更近，间隔从 $2/7$ 个单位变为 $2/14$ 个单位，所以每一对从一个图像块到下一个只转一半的角度，高频对看到的细节比训练时更细。
# 整数位置保持这一步长（第 0 对从一个图像块到下一个转 1 rad，和训练时一样），但位置变了：第 8 到 14 个图像块得到模型在 8 x 8 上从未见过的位置。

# %%
def step(cos, sin, n):
    """The turn of pair 0 from patch (0, 0) to patch (1, 0) of an n x n grid, in radians."""
    return np.angle((cos[n, 0] + 1j * sin[n, 0]) * (cos[0, 0] - 1j * sin[0, 0]))


steps = {name: [step(*tables[n], n) for n in (8, 15)] for name, tables in (("pixel", pixel_cs), ("integer", integer_cs))}
print({name: np.round(s, 4).tolist() for name, s in steps.items()}, "  2 pi / 7 =", round(2 * np.pi / 7, 4))
assert np.isclose(steps["pixel"][0], 2 * steps["pixel"][1]) and np.isclose(*steps["integer"])

# %% [markdown]
# ## 8. 随机傅里叶特征：SAM 的位置
#
# SAM（Segment Anything，[Kirillov et al.](https://arxiv.org/abs/2304.02643)）及其后继者 SAM 2、SAM 3 和 EdgeTAM 用同一种方式给图像的图像块以及提示中的点击点和框角定位：*随机傅里叶特征*（[Tancik et al.](https://arxiv.org/abs/2006.10739)），即它们的 `PositionEmbeddingRandom`。
# 一个点的坐标先缩放到 $c = (x, y) \in [-1, 1]^2$，再投影到 $F$ 个随机方向上，即高斯矩阵 $G$ 的各列（`scale * randn(2, F)`；SAM：scale 为 1，$F = 128$），特征为 $[\sin(2\pi\, cG), \cos(2\pi\, cG)]$，共 $2F$ 个通道。
# $G$ 只抽取一次，并与权重一起保存，所以特征依赖于它：`random_fourier_features(coords, projection)` 要把它作为参数传入。SAM 的 64 x 64 个图像词元位于各图像块的中心，即图像的 $(k + 0.5)/64$ 处，并以同样方式缩放。

# %%
sam_grid = (64, 64)
G = np.random.default_rng(0).standard_normal((2, 128))  # SAM: scale * randn(2, 128), scale 1
centres = patch_positions(sam_grid, grid_offset=0.5)[::-1].T  # (x, y) of each patch's centre, in patches
rff = random_fourier_features(centres, G, input_shape=sam_grid, dtype=np.float64)
turns_2pi = 2 * np.pi * (2 * centres / 64 - 1) @ G  # 2 pi c G, c in [-1, 1]
print("features:", rff.shape)
np.testing.assert_allclose(rff, np.concatenate([np.sin(turns_2pi), np.cos(turns_2pi)], axis=-1), atol=1e-12)

# %% [markdown]
# **与正弦/余弦表的取舍。** 二维正弦/余弦表（MAE 的，笔记本 09）把一半通道分给每个轴，只沿该轴以几何级数的频率旋转：两个图像块的相似度（它们在 128 个正弦/余弦对上的点积，即它们角度差余弦的平均值，与 RoPE 相同）是行偏移的一个核函数加上列偏移的一个核函数。
# 随机特征则是沿其自身方向 $g_j$ 的一列波，平均值 $\frac1F \sum_j \cos(2\pi\,\Delta c \cdot g_j)$ 估计的是 $g$ 服从高斯分布（scale 为 1）时的 $E[\cos(2\pi\,\Delta c \cdot g)] = e^{-2\pi^2 |\Delta c|^2}$：它只是*距离*的函数，在各个方向上都相同，宽度由 scale 决定。
# 下面是中心图像块与三个相距 15 的图像块的相似度，分别用 SAM 的特征和同样宽度的 MAE 表计算：

# %%
mae = grid_encoding(sam_grid, 256, convention="mae", dtype=np.float64)
centre = 32 * 64 + 32
kernel = {"random Fourier features (SAM)": similarity(rff[:, 128:], rff[:, :128], centre).reshape(sam_grid),
          "sin-cos table (MAE)": (mae @ mae[centre] / 128).reshape(sam_grid)}
for name, values in kernel.items():
    print(f"{name:30s} offset (0, 15): {values[32, 47]:.2f}  (15, 0): {values[47, 32]:.2f}  (9, 12): {values[41, 44]:.2f}")
assert kernel["sin-cos table (MAE)"][32, 47] - kernel["sin-cos table (MAE)"][41, 44] > 0.1

# %% [markdown]
# SAM 的 128 个方向只是一个样本：它的相似度在网格上与高斯函数的偏差约为 0.2，方向数增加到 16 倍时偏差小于 0.05（$F$ 个随机余弦的平均值的误差按 $1/\sqrt{F}$ 缩小）。
# 无论宽度如何，MAE 的表在相同距离上沿坐标轴都比沿对角线高：对沿一个轴的偏移，它有一半的对不旋转。

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
# 把两种相似度画成图（虚线圆：离中心 15 个图像块）。SAM 的是一个圆形的斑块，周围是它的采样噪声；MAE 的是一个十字，沿中心图像块所在的行和列都很高。

# %%
fig, axs = plt.subplots(1, 2, figsize=(10, 4), constrained_layout=True)
for ax, (name, values) in zip(axs, kernel.items()):
    shown = ax.imshow(values, cmap="RdBu_r", vmin=-1, vmax=1)
    ax.add_patch(plt.Circle((32, 32), 15, fill=False, linestyle="--", color="k"))
    ax.set(title=name, xlabel="key patch column", ylabel="key patch row")
fig.colorbar(shown, ax=axs, shrink=0.8, label="similarity to the centre patch")
plt.show()

# %% [markdown]
# SAM 为什么选择它们：它的提示编码器可以把点击点和框角放在图像中的任何地方，精确到像素，并与图像块处在同一个空间中，再按任意方向上的距离比较它们。
# 随机特征对各个方向一视同仁，只有一个旋钮，即 $G$ 的 scale，它决定相似度的宽度（太小会把相邻的点模糊成一团，太大会让特征变成噪声：Tancik et al.）。
# 正弦/余弦表同时覆盖许多宽度（高频对给出尖锐的峰，低频对给出长长的尾巴），但偏向坐标轴。

# %% [markdown]
# ## 小结
#
# - 在网格上，每个旋转通道对读取一个坐标，所以两个图像块的分数只依赖于它们的二维偏移：这是带符号的偏移，不是距离，也没有内在地偏好邻近的图像块。
# - Pixtral 和 Qwen2-VL 的视觉编码器给行的频率相同；Pixtral 的列频率低半步。
# - M-RoPE 给文本三行相等的编号（就是普通的一维 RoPE），给视觉输入的（时间，行，列）则从它的起点开始、在 2 x 2 合并后的网格上计数。
# - 视觉输入之后，文本从起点加上合并后较长的边处接续（transformers 5.x），或从该区块的最大编号再加一处接续（transformers 4.x，即 Qwen2-VL 发布时的版本）；当视频的时间块多于这条边时，两者不同。
# - Qwen2.5-VL 按 `tokens_per_second * second_per_grid_t` 为视频的时间留出间隔；Qwen3-VL 把每个时间块当作一张单独的图像编号，前面是文本形式的时间戳。
# - `mrope_section` 计的是每个轴的通道对数：Qwen2-VL 的连续分段只给宽度低频，Qwen3-VL 的交错排列让每个轴都覆盖整个频率范围。
# - `RotaryEmbedding.from_config` 把 transformers 的配置变成 posenc 的模块，得到相同的 logits。
# - Flux 给每个词元 id（轴 0，行，列），并给每个轴头中的一块，按其自身宽度的频率旋转，(16, 56, 56)；它的文本词元全都位于 (0, 0, 0)，即图像左上角图像块所在之处，彼此之间不携带位置。
# - 视频模型把头分给时间、高度和宽度（Wan 为 (44, 42, 42)，HunyuanVideo 为 (16, 56, 56)）；通道少的轴对相似度影响很小。
# - 基于 [-1, 1] 中坐标的像素频率在网格缩放时保持同一处的角度不变，并让相邻图像块之间的步长更细；整数位置保持步长，但位置变了。
# - SAM 的随机傅里叶特征把坐标投影到随机的高斯方向上：相似度只取决于距离，在各个方向上都相同，只有一个宽度；二维正弦/余弦表的相似度则是每个轴一个核函数之和，沿坐标轴更高。
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
# ### 练习 4 · Flux 的 id
#
# 补全 `flux_ids(text_length, height, width)`：不用 `flux_position_ids`，给出一个 `text_length` 个词元的提示词和一张 `height x width` 个词元的图像的 Flux id，形状为 `(tokens, 3)`。
# 草稿有一处错误。

# %%
def flux_ids(text_length, height, width):
    rows, columns = np.meshgrid(np.arange(height), np.arange(width), indexing="ij")
    image_ids = np.stack([np.zeros(height * width), columns.ravel(), rows.ravel()], axis=-1)
    return np.concatenate([np.zeros((text_length, 3)), image_ids])


print(nb10.flux_ids.check(flux_ids))

# %% [markdown]
# ### 练习 5 · 沿一个轴的相似度
#
# 补全 `axis_similarity(offsets, axes_dim, axis, base)`：在每个轴有各自宽度 `axes_dim` 的 RoPE 下，对只沿轴 `axis` 的每个偏移，给出第 6 节的相似度（头中所有对的角度差余弦的平均值）。
# 草稿漏掉了一样东西。

# %%
def axis_similarity(offsets, axes_dim, axis, base):
    w = base ** (-2 * np.arange(axes_dim[axis] // 2) / axes_dim[axis])
    return np.cos(np.outer(offsets, w)).mean(axis=-1)


print(nb10.axis_similarity.check(axis_similarity))

# %% [markdown]
# ### 练习 6 · 像素频率下的角度
#
# 补全 `pixel_angles(n, count, max_freq)`：只用 NumPy，给出在像素频率下（第 7 节），一个有 `n` 个图像块的轴上 `count` 对的角度，形状为 `(n, count)`。

# %%
def pixel_angles(n, count, max_freq):
    coordinates = np.arange(n)
    w = np.pi * np.linspace(1, max_freq / 2, count)
    return np.outer(coordinates, w)


print(nb10.pixel_angles.check(pixel_angles))

# %% [markdown]
# ### 练习 7 · SAM 对一次点击的特征
#
# 补全 `sam_features(points, projection, height, width)`：只用 NumPy，给出 `height x width` 图像中以像素表示的点 `(x, y)`（已位于其像素的中心）的 SAM 随机傅里叶特征，`projection` 是形状为 `(2, F)` 的矩阵 $G$。

# %%
def sam_features(points, projection, height, width):
    c = 2 * points / np.array([width, height]) - 1
    angles = c @ projection
    return np.concatenate([np.sin(angles), np.cos(angles)], axis=-1)


print(nb10.sam_features.check(sam_features))

# %% [markdown]
# ## 交叉检查
#
# 把上文的各项说法一起再检验一遍：第二张分数图是第一张按其两个查询图像块之间的偏移平移得到的；Qwen2-VL 和 Pixtral 的二维 RoPE 都只依赖于偏移；练习 1 的三行与 posenc 给出的相同；Flux 的每一块都是其自身宽度的一维 RoPE 作用在对应的 id 上；沿一个轴的相似度从任何查询看都相同；练习 4 到 7 的答案与 posenc 的 id、相似度、像素表和 SAM 特征相同；正弦/余弦表的相似度是每个轴一个核函数之和；整个运行不到一分钟（这个笔记本本来就应该能快速重跑）。

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
