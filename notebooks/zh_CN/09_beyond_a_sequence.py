# %% [markdown]
# # 09 · 超越序列：图像网格上的位置
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/posenc-org/posenc/blob/main/notebooks/zh_CN/09_beyond_a_sequence.ipynb)
#
# [视觉 Transformer](https://arxiv.org/abs/2010.11929)（ViT）把图像切成图像块（patch），当作一个序列来读。一个图像块有两个坐标：行和列；笔记本 01 的正弦编码同时记下这两者：一半通道编码行，一半通道编码列。
# 这一路上有三处可能出错，而且每一处都悄无声息：图像块按一种顺序排列，它们的位置却按另一种顺序排列；两个库用不同的方式写出“同一张”表；图像尺寸变了，位置也得跟着变。
#
# **问题：** sin-cos 表如何为图像的各个图像块赋予位置？展平顺序、约定或网格大小改变时，会出什么问题？
#
# **学完本节，你将能够：**
# - 按 [MAE](https://arxiv.org/abs/2111.06377) 的约定（第 2 节）构建二维 sin-cos 表，并用 `posenc.diagnose_grid` 找出一张表中的展平错误；
# - 分辨哪些已发表的网格表只是列的顺序不同，哪些在频率或位置上不同；
# - 在两种坐标系之一（旧的视野，或旧的图像块大小）中为新的网格大小给出一张表，并预测训练好的模型在每种情况下会怎样回答。
#
# **先修：** 笔记本 01 和 04 · **时间：** 约 50 分钟

# %%
# On Colab, install posenc from GitHub; elsewhere `make lab` has already installed it.
import sys

if "google.colab" in sys.modules:
    # %pip install --quiet "posenc @ git+https://github.com/posenc-org/posenc@main"

# %% [markdown]
# NumPy 负责构建各张表；PyTorch 负责对表重采样，并训练第 5 节的小模型。单线程、确定性算法再加上随机种子，使每次运行的结果完全一致。

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
# ## 1. 从网格到序列
#
# 一张由 3 x 4 个图像块组成的图像（高 3，宽 4）变成 12 个词元，像读文字一样逐行读取：词元 $k$ 是第 $k \,//\, W$ 行、第 $k \bmod W$ 列的图像块。
# 对一个形状为 `(H, W, d)` 的图像块嵌入数组做 `reshape` 和 `flatten`，得到的正是这个顺序。

# %%
h, w = 3, 4
token_row, token_column = np.divmod(np.arange(h * w), w)
print("row:   ", token_row)
print("column:", token_column)

# %% [markdown]
# 位置表必须以同样的顺序列出同样的图像块。构建坐标的一种常见方法是 `meshgrid`。
# 如果用 `indexing="ij"` 并且先传入宽度，网格的形状就是 `(W, H)`，展平时会沿着列往下走：前四个词元，也就是图像的第一行，得到的 x 位置是 0, 0, 0, 1，而不是 0, 1, 2, 3。
# [MoCo v3](https://arxiv.org/abs/2104.02057)（一种自监督 ViT，[代码](https://github.com/facebookresearch/moco-v3)）就是这样构建位置表的，检测器 [RT-DETR](https://arxiv.org/abs/2304.08069) 的编码器也是如此：
# 它的原始代码（[lyuwenyu/RT-DETR](https://github.com/lyuwenyu/RT-DETR)，`rtdetr_pytorch` 和 `rtdetrv2_pytorch` 中的 `build_2d_sincos_position_embedding`）至今仍是这样，而它在 Hugging Face [transformers](https://github.com/huggingface/transformers) 中的移植版已由 [PR #41380](https://github.com/huggingface/transformers/pull/41380) 修复。

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
# 在正方形网格上，同样的代码给出的表却是*正确的*：在 $n \times n$ 网格上沿列行走，词元 $k$ 得到的坐标对是 $(x, y) = (k \,//\, n, k \bmod n)$，这正是真实的 $(y, x)$ 坐标对，只是两个名字互换了。
# 于是表中编码行的那组通道和编码列的那组通道顺序对调，这仍是一种有效的编码，与 transformers 中修复后的代码完全相同。
# 所以在大多数模型训练所用的正方形图像上，这个错误是看不出来的，只有网格不是正方形时才会显现。
# posenc 把 MoCo v3 的表记作 `convention="moco-v3"`，把修复后的表记作 `convention="rt-detr"`（`cls_token=False` 去掉了一行，第 3 节会解释这一行）：

# %%
same = {}
for shape in [(6, 6), (6, 9)]:
    moco = posenc.grid_encoding(shape, 64, convention="moco-v3", cls_token=False)
    same[shape] = np.array_equal(moco, posenc.grid_encoding(shape, 64, convention="rt-detr"))
    print(f"{shape[0]} x {shape[1]}: same table: {same[shape]}")

# %%
assert same == {(6, 6): True, (6, 9): False}

# %% [markdown]
# ## 2. 二维编码看到了什么
#
# 在 [MAE](https://arxiv.org/abs/2111.06377)（掩码自编码器，一种 ViT 预训练方法；[代码](https://github.com/facebookresearch/mae)，`util/pos_embed.py`）的表中，位于第 $x$ 列、第 $y$ 行的图像块得到向量 $[\sin x\,w_j, \cos x\,w_j, \sin y\,w_j, \cos y\,w_j]$，其中 $d/4$ 个频率为 $w_j = 10000^{-j/(d/4)}$。
# 于是两个图像块的点积为 $\sum_j \cos(w_j\,\Delta x) + \sum_j \cos(w_j\,\Delta y)$：与一维情形（笔记本 04）一样，它只依赖于二维偏移 $(\Delta x, \Delta y)$，而且是列部分与行部分之*和*。
# 下面把一个图像块的编码与 12 x 20 网格中每个图像块的点积画成一张图，分别采用正确的顺序和 MoCo v3 沿列行走的顺序。

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
# 顺序正确时，图像是一个加号：图像块所在处（红色十字）是一个亮点，穿过它有一条亮的行和一条亮的列，四个角则是暗的。
# 沿着该图像块自己所在的行，$\Delta y = 0$，所以无论 $\Delta x$ 是多少，行部分都取最大值 $d/4$；沿着它所在的列也是如此。
# 整张图等于穿过该图像块的那一行加上穿过它的那一列，再减去图像块本身的值（它被算了两次）：

# %%
similarity = similarities["row by row (MAE)"]
along_row, along_column = similarity[patch[0]], similarity[:, patch[1]]
print("lowest along the patch's row and column:", round(float(min(along_row.min(), along_column.min())), 2))
print("lowest anywhere (a corner):             ", round(float(similarity.min()), 2))

# %%
assert np.allclose(similarity, along_row[None, :] + along_column[:, None] - similarity[patch], atol=1e-5)

# %% [markdown]
# 无论图像块在哪里，加号的形状都一样：移动图像块，图像也随之平移，因为只有偏移量起作用。
# 如果先沿列行走，“最近”的图像块就散落在整张图像上：大多数词元带着的是另一个图像块的位置。

# %%
mae = tables["row by row (MAE)"]
sim = (mae @ mae.T).reshape(H, W, H, W)
# patch (4, 7) against (y, x) equals patch (5, 9) against (y + 1, x + 2)
assert np.allclose(sim[4, 7, :11, :18], sim[5, 9, 1:, 2:], atol=1e-5)

# %% [markdown]
# ## 3. 各种约定的对比
#
# 每个来源都写出两个坐标的正弦和余弦，但没有哪两个的写法完全相同。除了 MAE 和 MoCo v3 之外：
# [big_vision](https://github.com/google-research/big_vision)（Google 的 ViT 代码，`posemb_sincos_2d`）和 lucidrains 的 [simple ViT](https://github.com/lucidrains/vit-pytorch) 把频率分布在 $d/4 - 1$ 步上；
# [timm](https://github.com/huggingface/pytorch-image-models)（PyTorch Image Models，`build_sincos2d_pos_embed`）先写所有正弦，再写所有余弦；
# [DETR](https://arxiv.org/abs/2005.12872)（一种用于目标检测的 Transformer，[代码](https://github.com/facebookresearch/detr)）把正弦/余弦成对交错排列，并且位置从 1 开始计数；
# [diffusers](https://github.com/huggingface/diffusers)（Hugging Face 的扩散模型库，`get_2d_sincos_pos_embed`）把位置缩放到一个基准尺寸；`rt-detr` 是 transformers 中的 RT-DETR。
# `posenc.list_grid_conventions()` 列出这些约定的名称，`posenc.grid_encoding(shape, d, convention=...)` 按各自的约定写出表中的数值。
#
# ViT 在图像块之前多放一个词元，即*类别词元*（class token），它的输出概括整张图像。MAE 和 MoCo v3 在表中给它一行零（*类别行*，`cls_token=True`；这是 MoCo v3 的默认值）。
# 所以图中取每张表的最后 60 行 `[-60:]`：即 6 x 10 网格的 60 个图像块，不含类别行。

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
# 它们相差多远？每张表与 MAE 的表之间的最大差值说明不了什么：一张只是列顺序不同的表，与 MAE 的表的差距，和一张数值完全不同的表一样大。
# 更好的问题有两个：它的列是不是 MAE 的列，只是换了顺序？它是否给每一对词元相同的点积，也就是相同的*格拉姆矩阵*（Gram matrix）$T\,T^\top$？
# 固定的列顺序不会让模型付出任何代价：用另一种顺序训练，模型可以学到同样的权重，只是相应地做了置换（笔记本 05 在一维布局上展示了这一点），不过训练好的模型只认它自己的顺序。
# 而词元之间的点积不同，就是另一种编码了。

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
# 于是分成三组。**只是顺序不同：** `rt-detr` 和 `timm` 包含 MAE 的列，只是顺序不同。
# DETR 的位置编码类在默认设置下（位置取 $1..n$ 而不是 $0..n-1$）数值不同，但点积相同，因为只有偏移量起作用，而整体平移一位不会改变任何偏移量。
# **词元的顺序不同：** MoCo v3 的列就是 MAE 的列，但在这个非正方形网格上，它们被分给了别的词元，因此词元之间的点积变了。
# **频率或位置不同：** big_vision 和 simple ViT（同一个函数，同样的数值）把频率分布在少一步的范围上，$w_j = 10000^{-j/(d/4 - 1)}$；
# diffusers 把行坐标乘以 $16/6$，把列坐标乘以 $16/10$，相当于每个轴用不同的频率。
# DETR 自己的模型用 `normalize=True` 构建位置表，每个轴上的位置都缩放到 $(0, 2\pi]$：这又是一种这样的坐标系。

# %%
order_only = [name for name, (_, columns, gram) in comparison.items() if columns and name != "mae"]
assert order_only == ["rt-detr", "timm"]

# %% [markdown]
# `identify_grid` 接收一张现成的表及其网格形状，说出写出这张表的是哪些约定（网格词元之前的行，即类别词元的行，只报告、不参与比较）。
# 下面把每种约定的表都放进去，其中 MAE 和 MoCo v3 的表带上了它们的类别行：

# %%
identified = {}
for name in names:
    options = {"cls_token": True} if name in ("mae", "moco-v3") else {}
    identified[name] = posenc.identify_grid(posenc.grid_encoding(shape, 64, convention=name, **options), shape)
    print(f"{name:>11} -> {' = '.join(identified[name].matches)}; prefix rows: {identified[name].prefix_rows}")

# %%
assert all(name in found.matches for name, found in identified.items())

# %% [markdown]
# timm 加上 `interleave_sin_cos=True` 写出的是 transformers 中 RT-DETR 的数值，再加上 `reverse_coord`，写出的就是 MoCo v3 的数值（包括它沿列行走的顺序）。
# `diagnose_grid` 更进一步：给定一张表*应该*遵循的约定，它会说出是哪种网格错误导致了这些数值。下面是在 6 x 10 网格上构建错了的三张 MAE 表：

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
# ## 4. 新的分辨率：两种坐标系
#
# 在更高的分辨率上微调，或在另一种形状的图像上运行，都意味着图像块的数量变了。新网格的表可以把新的图像块放在以下两种坐标系之一中：
#
# - **重新缩放（rescaled）：沿用旧的视野。** 新网格与旧网格覆盖同一张图像，所以它的图像块落在旧位置*之间*：$n_\text{new}$ 个图像块中的第 $i$ 个，位于以旧单位表示的*拉伸后*位置 $(i + \tfrac12)\,n_\text{old}/n_\text{new} - \tfrac12$（图像块的中心对齐）。
#   把旧表当作图像来缩放（resize）做的就是这件事：MAE 的 `interpolate_pos_embed`（双三次插值）和 timm 的 `resample_abs_pos_embed`（默认带抗锯齿的双三次插值）会缩放检查点中的任何表，无论是学习得到的还是 sin-cos 的。
#   diffusers 一开始就在这样的坐标系中计算它的 sin-cos 表：无论图像块数 $n$ 是多少，位置 $k \cdot \text{base\_size} / (n \cdot \text{interpolation\_scale})$ 都覆盖同样的范围（对齐的是角而不是中心）。
# - **延伸（extended）：沿用旧的图像块大小。** 第 $i$ 个图像块保持位置 $i$；较小的网格是旧网格的一个裁剪，较大的网格会到达以前从未出现过的位置。
#   RT-DETR 就是这样构建它的表的：无论一张图像给出多大的特征网格，都使用整数位置。
#
# 对于 sin-cos 表，两种坐标系都可以精确计算：`grid_encoding` 接受 `positions` 参数。
# 首先看看插值缩放离精确的重新缩放表有多远：把 timm 的缩放用在 6 x 8 的 MAE 表上（类别行单独放在一边），得到 12 x 16 的表，再与 MAE 公式在拉伸后位置上的结果比较。
# `posenc.torch.resample_abs_pos_embed` 的调用与 timm 完全相同。

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
# 低频的列几乎原样保留下来；高频的列则不然，它们从一个图像块到下一个最多要转一弧度：一条三次曲线穿过相距这么远的采样点，跟不上正弦的变化。
# 误差在边缘图像块上最大：新网格的第一行、第一列和最后一行、最后一列分别位于 $-0.25$ 和旧的最后一个位置之外，也就是在旧网格之外，缩放时那里有一侧没有采样点，只能外推。
# 其次是往里一步的图像块（三次插值在每一侧各读取两个旧采样点，而在那里其中一个落在边缘之外）；再往里，高频的列仍有零点零几的误差。类别行则原封不动地保留下来。

# %%
assert error[~inside].max() > error[inside].max()

# %% [markdown]
# timm 默认的 `antialias=True` 可不是细枝末节：即使是放大，它也会改变数值。
# PyTorch 的抗锯齿双三次插值用另一条三次曲线给采样点加权（$a = -0.5$ 的 [Keys 核](https://en.wikipedia.org/wiki/Bicubic_interpolation#Bicubic_convolution_algorithm)；普通的双三次插值用 $a = -0.75$），而 MAE 的 `interpolate_pos_embed` 调用的是普通的双三次插值：

# %%
plain = posenc.torch.resample_abs_pos_embed(old_table, new, old, antialias=False).numpy()
print(f"largest difference, antialias on vs off: {np.abs(resized - plain).max():.2f}")

# %% [markdown]
# 对于 sin-cos 表，根本不需要插值：在你选定的坐标系中直接计算就好。
# 上面的精确重新缩放表来自 `grid_encoding(..., positions=stretched)`；它在 float32 中与 float64 的结果相差不超过 2e-7，这正是 `grid_encoding` 的文档字符串对 float32 承诺的误差界：

# %%
in_float32 = posenc.grid_encoding(new, d, convention="mae", positions=stretched)
assert np.abs(in_float32 - exact).max() < 2e-7

# %% [markdown]
# ## 5. 在一个网格上训练，在其他网格上测试
#
# 哪种坐标系才对，取决于模型学到了什么。一个小模型要找出被标记的图像块：每个样本是一个词元网格，其中一个词元带有标记，模型要回答标记所在的行和列。
# 它看到的每个词元只是“标记加上位置编码”，它用一个注意力头把这些词元汇聚起来，再从汇聚后的向量中读出行和列，输出最多可以表示 16 行和 24 列。
# 我们在 8 x 12 网格上用 MAE 的表训练它；训练中它从来没见过大于 7 的行或大于 11 的列。

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
# `answers` 把网格中的每个图像块各标记一次，返回模型对每个图像块给出的行和列，形式为 `(H, W)` 数组。
# `found` 把它们与表所编码的位置对照打分：如果答案在两个轴上都与图像块的位置相差不超过半个图像块，就算找到了。
# 对于整数位置，这就是精确的答案；对于重新缩放的位置，则是最近的训练位置（位置恰在正中间时，两个都算对）。

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
# 现在取一个较小的网格 6 x 9 和一个较大的网格 16 x 24，各配四张表：整数位置上的 MAE 表（延伸）；同一张表改为沿列行走（MoCo v3 的顺序）；
# 用 timm 的函数缩放的训练表（重新缩放，就像缩放一张学习得到的表那样）；以及 MAE 公式在拉伸后位置上的结果（重新缩放，精确）。
# 每张表都与新网格的整数坐标对照打分，这是人们会想当然地使用的标签；重新缩放的表还要与它们所编码的拉伸后位置对照打分。

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
# 在较小的网格上，整数位置是模型训练时所见范围的一个裁剪：它能找到图像块。沿列行走时，大多数词元声称自己在另一个图像块的位置上，模型就回答那个图像块。
# 重新缩放的表对照整数标签时失败了，但这不是因为缩放不精确：拉伸后位置上的精确表也以同样的方式失败。与它们所编码的位置对照打分时，两者都能找到图像块。
# 模型在它学过的坐标系中读取重新缩放的表，并用旧单位回答。下面逐行列出 6 x 9 网格上（缩放后的表）最常给出的答案，并与拉伸后的位置对照：

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
# 较大的网格显示了每种坐标系的代价。重新缩放时，每个答案都是离拉伸后位置最近的训练位置，因此两个相邻的新图像块会得到同一个答案：模型以旧网格的分辨率看待新网格。
# 延伸时，旧的 8 x 12 区块内的图像块都能找到，其余的一个也找不到：它们的位置在训练中从未出现过；即使输出中有表示第 15 行和第 23 列以内的各行各列，模型给出的也都是训练中见过的行和列。

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
# 两种坐标系都谈不上“正确”：它们回答的是不同的问题。重新缩放让位置留在模型熟悉的范围内，用在图像中所占的比例来指称位置，分辨率仍是旧网格的：它适用于以另一种分辨率看同一张图。
# 延伸保持图像块大小不变，以图像块为单位指称位置：它适用于显示了*更多*内容的更大图像，但训练范围之外的位置对模型来说是全新的，而这个模型从来不会说出它们。
# 无论用什么来解读模型的答案（这里是标签），都必须使用表的坐标系。
#
# ## 小结
#
# - 网格逐行变成序列；用 `meshgrid(w, h, indexing="ij")` 构建的表会沿列行走（MoCo v3、RT-DETR 的原始代码），这在正方形网格上看不出来，在其他网格上则让大多数词元带上另一个图像块的位置。
# - 在 MAE 的表中，两个图像块的点积只依赖于二维偏移，并且是列部分与行部分之和：画出来是加号形状。
# - 已发表的网格表之间的差别：有的只是列顺序不同（transformers 中的 RT-DETR、timm：点积与 MAE 相同），有的是位置整体平移（DETR 的默认设置：点积相同），有的是词元顺序不同（非正方形网格上的 MoCo v3），有的是频率和位置尺度不同（big_vision、simple ViT、diffusers、归一化的 DETR）。
#   `identify_grid` 说出一张现成的表所用的约定，`diagnose_grid` 说出一张错误的表背后的错误。
# - 新的网格大小需要选定一个坐标系：重新缩放到旧的视野（插值缩放；MAE 的 `interpolate_pos_embed`、timm、diffusers 的 `interpolation_scale`），或以旧的图像块大小延伸（整数位置，就像 RT-DETR 重建它的表那样）。
#   对 sin-cos 表做插值缩放并不精确，在需要外推的边缘图像块上最差；带 `positions` 参数的 `grid_encoding` 可以精确计算任一坐标系。
# - 在一个网格上训练的模型，会在它自己的坐标系中读取重新缩放的表，并以旧单位、按旧分辨率回答；在延伸的网格上，它能找到训练过的图像块，超出范围的一个也找不到。
#
# ## 练习
#
# ### 练习 1 · 找出展平错误并修正
#
# 下面的函数本应为 `height x width` 个图像块的网格写出 MAE 的表（词元逐行排列，列为 `[sin x, cos x, sin y, cos y]`）。它有一处错误。
# 用它构建一张非正方形的表，问问 `diagnose_grid` 哪里错了，然后修正函数，并用 `nb09.mae_table.check(mae_table)` 检查。卡住时可以求助 `nb09.mae_table.hint()` 和 `nb09.mae_table.solution()`。

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
# ### 练习 2 · 在旧网格的坐标系中使用更大的网格
#
# 一个模型在 `old` 网格（行数，列数）上训练。写出 `rescaled_table(old, new, d)`：为 `new` 网格生成 MAE 的表，使用重新缩放坐标系中的位置，让模型读到的新图像块正位于它所熟悉的图像中的实际位置（也就是插值缩放所用的坐标系，但精确计算）。
# 检查会尝试几种或大或小的网格；如果你的表编码的不是这个坐标系，它会说出你的表编码的是哪一个。`nb09.rescaled_table.hint()` 和 `nb09.rescaled_table.solution()` 可以帮你。

# %%
def rescaled_table(old, new, d):
    positions = [np.arange(n) * o / n for o, n in zip(old, new)]
    return posenc.grid_encoding(new, d, convention="mae", positions=positions)


nb09.rescaled_table.check(rescaled_table)

# %% [markdown]
# 通过检查后，在第 5 节的模型上试试：
# `found(answers(torch.tensor(rescaled_table(train_shape, (16, 24), d), dtype=torch.float32), (16, 24)), stretch((16, 24)))`
# 会给出精确的重新缩放表在那里的得分。
#
# ## 交叉检查
#
# 把上文的各项说法再检验一遍，用的是正文中给出的数值。

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
