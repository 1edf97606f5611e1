# %% [markdown]
# # 02 · 用 PyTorch 实现位置编码
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/posenc-org/posenc/blob/main/notebooks/zh_CN/02_pytorch.ipynb)
#
# **问题：** 怎样用 PyTorch 张量构建 Transformer 的正弦位置编码表？模型又是怎样把它加到嵌入上的？
#
# **学完本节，你将能够：**
#
# - 用 torch 运算一步步构建这张表，并重现一份讲义打印出的数字；
# - 写出模型实际使用的模块：`x + PE[:seq]`，表作为缓冲区（buffer）保存；并说明为什么
#   模型要先把嵌入乘以 $\sqrt{d_{\mathrm{model}}}$；
# - 在模型中使用 `posenc.torch.PositionalEncoding`，并看懂 `posenc.diagnose` 对一张表的诊断。
#
# **先修：** 笔记本 01 · **时间：** 约 50 分钟
#
# 我们只用最基本的张量运算，一步一步构建 [Transformer](https://arxiv.org/abs/1706.03762)
# 的正弦位置编码表。我们跟随一份讲义：一个用 PyTorch 写的英文 Jupyter 笔记本。
# 它在 `d_model = 64`、10 个位置下逐步演示，打印每个中间张量，然后把这些步骤封装进一个
# [`nn.Module`](https://pytorch.org/docs/stable/generated/torch.nn.Module.html)
# （PyTorch 中层和模型的基类），其 `forward()` 不接受输入，以四位小数打印出
# 10 × 6 的表。之后我们会写出模型真正使用的模块（它把表加到嵌入上），
# 看看模型为什么要先缩放嵌入，最后像模型那样使用 `posenc.torch.PositionalEncoding`，
# 无论当前可用的是哪种设备。结尾的交叉检查会把每个中间结果都与 `posenc` 包对照。

# %%
# On Colab, install posenc from GitHub; elsewhere `make lab` has already installed it.
import sys

if "google.colab" in sys.modules:
    # %pip install --quiet "posenc @ git+https://github.com/posenc-org/posenc@main"

# %% [markdown]
# 和讲义一样，张量保持 torch 默认的 float32。`posenc` 用 float64 计算角度，
# 只在最后舍入一次，所以在这些较小的位置上，两种做法的相对差只有 $10^7$ 分之几
# （下面会实际测量）：`ATOL` 就是比较两者时使用的容差。
# 无论环境要求使用哪种 matplotlib 后端，图都直接显示在笔记本中。

# %%
# %matplotlib inline
import matplotlib.pyplot as plt
import numpy as np
import torch
from torch import nn

import posenc
import posenc.torch

np.set_printoptions(precision=4, suppress=True)
ATOL = 1e-6

# %% [markdown]
# ## 公式
#
# 表的第 `pos` 行编码位置 `pos`；它的列两两成对，是同一个角度的正弦和余弦：
#
# $$
# PE_{(pos,\,2i)} = \sin\left(\frac{pos}{10000^{2i/d_{\mathrm{model}}}}\right),
# \qquad
# PE_{(pos,\,2i+1)} = \cos\left(\frac{pos}{10000^{2i/d_{\mathrm{model}}}}\right)
# $$
#
# 如果改按列 $j$ 来索引，偶数 $j$ 除以 $10000^{j/d_{\mathrm{model}}}$，
# 奇数 $j$ 除以 $10000^{(j-1)/d_{\mathrm{model}}}$。下面的演示会把两者都算出来，
# 并发现它们完全相同。
#
# ## 一步一步来，d_model = 64
#
# 10 个位置、64 列：大到足以看清形状，又小到能打印出一些数字。
# 先列出偶数列和奇数列的索引，各 32 个。

# %%
d_model, length = 64, 10
even_cols = torch.arange(0, d_model, 2, dtype=torch.float32)
odd_cols = torch.arange(1, d_model, 2, dtype=torch.float32)
print(tuple(even_cols.shape), even_cols[:4].numpy(), "...")
print(tuple(odd_cols.shape), odd_cols[:4].numpy(), "...")

# %% [markdown]
# 每组中的每个索引对应一个分母（Python 数字以 float32 张量为指数，结果仍是 float32）。
# 偶数列和奇数列的分母逐位完全相同：奇数索引减一，正好落在它前面的偶数索引上。

# %%
den_even = 10000 ** (even_cols / d_model)
den_odd = 10000 ** ((odd_cols - 1) / d_model)
print(den_even.dtype, tuple(den_even.shape), den_even[:6].numpy().round(4))
assert torch.equal(den_even, den_odd), "an odd column shares the denominator of the even column before it"

# %% [markdown]
# 前六个分母与讲义打印的值并列：它们在讲义给出的五位有效数字上一致，
# 即与讲义最后一位打印数字相差不到半个单位（$5 \times 10^{-5}$）。

# %%
LECTURE_DEN_HEAD = np.array([1.0, 1.3335, 1.7783, 2.3714, 3.1623, 4.2170])
np.testing.assert_allclose(den_even[:6].numpy(), LECTURE_DEN_HEAD, rtol=0, atol=5e-5)

# %% [markdown]
# 所以一个长度为 32 的向量就能同时供正弦和余弦使用。（讲义误把奇数索引的结果
# 存到了偶数索引的变量名下；由于两者相等，后面的结果并没有受到影响。）
#
# 位置排成形状为 `(length, 1)` 的一列，这样除以形状为 `(32,)` 的分母时，
# 就会广播成一个 `(length, 32)` 的角度网格：每个位置一行，每个正弦/余弦对一列
# （[广播机制](https://pytorch.org/docs/stable/notes/broadcasting.html)
# 会把每个大小为 1 的轴拉伸到与另一方相同）。正弦的第 1 行会与讲义的打印结果对照检查
# （五位有效数字）。

# %%
den = den_even
pos = torch.arange(length, dtype=torch.float32).reshape(length, 1)
angle = pos / den
sin_part, cos_part = torch.sin(angle), torch.cos(angle)
print("positions", tuple(pos.shape), "/ denominators", tuple(den.shape), "-> angles", tuple(angle.shape))
print("sines", tuple(sin_part.shape), " cosines", tuple(cos_part.shape))
print("row 1, first six sines:", sin_part[1, :6].numpy().round(4))

LECTURE_SIN_ROW1_HEAD = np.array([0.84147, 0.68156, 0.53317, 0.40931, 0.31098, 0.23492])
np.testing.assert_allclose(sin_part[1, :6].numpy(), LECTURE_SIN_ROW1_HEAD, rtol=0, atol=5e-6)

# %% [markdown]
# ### 交错排列
#
# 论文把每个余弦紧接着放在它的正弦后面。把两个网格沿新的最后一个轴堆叠，
# 得到 `(length, 32, 2)`，最后一个轴存放一对（sin, cos）；再把最后两个轴合并，
# 这些对就并排放进 64 列中：正弦落在偶数列，余弦落在奇数列。
# `posenc.interleave` 执行的正是这一步，而 `posenc.torch.positional_encoding`
# 一次调用就能构建整张表，误差在 `ATOL` 以内。

# %%
pairs = torch.stack([sin_part, cos_part], dim=2)
pe64 = torch.flatten(pairs, start_dim=1, end_dim=2)
print(tuple(pairs.shape), "->", tuple(pe64.shape))
print("row 1, first six columns:", pe64[1, :6].numpy().round(4))
print(f"largest difference from posenc: {(pe64 - posenc.torch.positional_encoding(length, d_model)).abs().max():.1e}")

assert torch.equal(pe64[:, 0::2], sin_part) and torch.equal(pe64[:, 1::2], cos_part), "sines even, cosines odd"

# %% [markdown]
# 如果用拼接代替堆叠，就会先放全部 32 个正弦，再放全部余弦：
# 列还是那些列，只是顺序不同，这是一些库采用的布局（列的顺序）。`posenc` 把它叫作
# `"sin_cos"`。对每一行排序后可以看到，两张表中是同样的 64 个数。

# %%
concatenated = torch.cat([sin_part, cos_part], dim=1)
print(tuple(concatenated.shape), "same table:", torch.equal(concatenated, pe64))
assert torch.equal(concatenated.sort(dim=1).values, pe64.sort(dim=1).values), "the same entries in every row"

# %% [markdown]
# 10 行的图太单薄，所以下面画出同样宽度为 64 的表在 100 个位置上的样子。
# 左边的列沿着位置快速振荡；越往右，波长按几何级数增长，
# 直到最后一个正弦始终小于 0.02，最后一个余弦始终大于 0.9999。

# %%
big = posenc.torch.positional_encoding(100, d_model)
print(f"last sine at most {big[:, -2].abs().max():.4f}, last cosine at least {big[:, -1].min():.5f}")
fig, ax = plt.subplots(figsize=(9, 4))
image = ax.imshow(big.numpy(), cmap="RdBu", vmin=-1, vmax=1, aspect="auto")
ax.set_xlabel("column")
ax.set_ylabel("position")
ax.set_title("Sinusoidal positional encoding, d_model = 64")
fig.colorbar(image, ax=ax)
plt.show()

# %% [markdown]
# ## 我们自己的模块
#
# 同样的步骤可以放进一个 `forward()` 中。和讲义的类一样，这个模块没有输入：
# 它返回形状为 `(max_sequence_length, d_model)` 的表。
#
# 讲义的类假定 `d_model` 是偶数。若是奇数，`arange(0, d_model, 2)`
# 仍会在最后一列开始一对，而每一对都带来一个正弦*和*一个余弦：
# `d_model = 7` 得到 4 对、8 列。而公式要求 7 列：最后一列 $2i = 6$ 是正弦，
# 它后面本该跟着的余弦并不存在。我们的模块用一次切片去掉这个多出来的余弦。

# %%
pair_starts = torch.arange(0, 7, 2)  # the lecture's pairs at d_model = 7
print(len(pair_starts), "pairs,", 2 * len(pair_starts), "columns")

# %% [markdown]
# 模块如下：

# %%
class SinusoidalTable(nn.Module):
    """forward() -> (max_sequence_length, d_model) table, computed in float32 like the lecture."""

    def __init__(self, d_model, max_sequence_length):
        super().__init__()
        self.d_model = d_model
        self.max_sequence_length = max_sequence_length

    def forward(self):
        den = 10000 ** (torch.arange(0, self.d_model, 2, dtype=torch.float32) / self.d_model)
        pos = torch.arange(self.max_sequence_length, dtype=torch.float32)[:, None]
        angle = pos / den
        # (length, pairs, 2) -> (length, 2 * pairs): each cosine lands right after its sine
        table = torch.stack([angle.sin(), angle.cos()], dim=-1).flatten(start_dim=-2)
        return table[:, : self.d_model]  # an odd d_model: drop the last pair's cosine


assert torch.equal(SinusoidalTable(64, 10)(), pe64), "the d_model = 64 walk, bit for bit"

# %% [markdown]
# 它精确地重现了上面 `d_model = 64` 的演示。在 `d_model = 7` 时它给出七列，
# 与 `posenc` 给出的相同：

# %%
table7 = SinusoidalTable(7, 10)()
print(tuple(table7.shape), f"largest difference from posenc: {(table7 - posenc.torch.positional_encoding(10, 7)).abs().max():.1e}")

# %% [markdown]
# 讲义打印的那张表用的是 `d_model=6` 和 10 个位置：

# %%
table6 = SinusoidalTable(d_model=6, max_sequence_length=10)()
print(tuple(table6.shape))
print(table6.numpy().round(4))

# %% [markdown]
# 下面是讲义打印的数字。我们的 float32 值与它们的差距在第四位小数的半个单位以内。

# %%
LECTURE_TABLE_10x6 = np.array([
    [0.0000, 1.0000, 0.0000, 1.0000, 0.0000, 1.0000],
    [0.8415, 0.5403, 0.0464, 0.9989, 0.0022, 1.0000],
    [0.9093, -0.4161, 0.0927, 0.9957, 0.0043, 1.0000],
    [0.1411, -0.9900, 0.1388, 0.9903, 0.0065, 1.0000],
    [-0.7568, -0.6536, 0.1846, 0.9828, 0.0086, 1.0000],
    [-0.9589, 0.2837, 0.2300, 0.9732, 0.0108, 0.9999],
    [-0.2794, 0.9602, 0.2749, 0.9615, 0.0129, 0.9999],
    [0.6570, 0.7539, 0.3192, 0.9477, 0.0151, 0.9999],
    [0.9894, -0.1455, 0.3629, 0.9318, 0.0172, 0.9999],
    [0.4121, -0.9111, 0.4057, 0.9140, 0.0194, 0.9998],
])
np.testing.assert_allclose(table6.numpy(), LECTURE_TABLE_10x6, rtol=0, atol=5e-5)

# %% [markdown]
# 讲义的类用整数 `arange` 生成位置。int64 张量除以 float32 张量，结果会被提升为
# float32，而小于 $2^{24}$ 的整数都能精确转换，所以用整数位置得到的表逐位相同。

# %%
den6 = 10000 ** (torch.arange(0, 6, 2, dtype=torch.float32) / 6)
int_pos = torch.arange(10).reshape(10, 1)
print(int_pos.dtype, "/", den6.dtype, "->", (int_pos / den6).dtype)
assert torch.equal(int_pos / den6, int_pos.float() / den6)

# %% [markdown]
# `posenc.torch.positional_encoding` 给出同样的表：

# %%
print(f"largest difference: {(table6 - posenc.torch.positional_encoding(10, 6)).abs().max():.1e}")
torch.testing.assert_close(table6, posenc.torch.positional_encoding(10, 6), rtol=0, atol=ATOL)

# %% [markdown]
# 每一列都是沿位置方向的一条正弦曲线。下面画出我们的模块在 `d_model=64` 时
# 每隔四对取一对的正弦列：每个波长都是前一个的 $10000^{8/64} \approx 3.2$ 倍，
# 从 $2\pi \approx 6.3$ 个位置一直增长到约 200 个位置。这张表只在整数位置上取样，
# 所以第 0 列看起来呈锯齿状。

# %%
print(f"ratio {10000 ** (8 / 64):.1f}; wavelengths {2 * np.pi * 10000 ** (np.array([0, 8, 16, 24]) / 64)}")
wide = SinusoidalTable(d_model=64, max_sequence_length=100)()
fig, ax = plt.subplots(figsize=(9, 3.5))
for col in (0, 8, 16, 24):
    ax.plot(wide[:, col].numpy(), marker=".", markersize=3, label=f"column {col}")
ax.set_xlabel("position")
ax.set_ylabel("sine")
ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1))
plt.show()

# %% [markdown]
# ## 在模型中使用
#
# 在 Transformer 中，这张表在第一层之前被加到词元嵌入上。讲义的模块只返回这张表；
# 而模型实际使用的模块（The Annotated Transformer 中的、PyTorch 示例中的）接受形状为
# `(batch, seq, d_model)` 的嵌入 `x`，返回 `dropout(x + PE[:seq])`
# （[dropout](https://pytorch.org/docs/stable/generated/torch.nn.Dropout.html)，即暂退法，
# 在训练时随机把一些元素置零）。它只计算一次表，长度为最大长度 `max_len`，
# 并把它保存为[*缓冲区*](https://pytorch.org/docs/stable/generated/torch.nn.Module.html#torch.nn.Module.register_buffer)：
# 一个属于该模块的张量，会随 `.to(device)` 一起移动，但不是需要训练的参数。
# 手写如下：

# %%
class AddPositions(nn.Module):
    """forward(x): x of shape (batch, seq, d_model) -> dropout(x + PE[:seq]), same shape."""

    def __init__(self, d_model, max_len=5000, dropout=0.1):
        super().__init__()
        self.dropout = nn.Dropout(dropout)
        # persistent=False: the table is rebuilt from d_model, so checkpoints need not store it
        self.register_buffer("pe", SinusoidalTable(d_model, max_len)(), persistent=False)

    def forward(self, x):
        return self.dropout(x + self.pe[: x.shape[1]])


ours = AddPositions(16, max_len=50).eval()
x_check = torch.randn(2, 7, 16, generator=torch.Generator().manual_seed(0))
with torch.no_grad():
    torch.testing.assert_close(ours(x_check) - x_check, posenc.torch.positional_encoding(7, 16).expand(2, 7, 16))
print([name for name, _ in ours.named_buffers()], tuple(ours.pe.shape))

# %% [markdown]
# `posenc.torch.PositionalEncoding(d_model, max_len, dropout=...)` 就是封装好的这个模块：
# 对同样的输入，它返回同样的输出，差别只在于我们的表的 float32 舍入。

# %%
packaged = posenc.torch.PositionalEncoding(16, max_len=50, dropout=0.1).eval()
with torch.no_grad():
    print(f"largest difference: {(ours(x_check) - packaged(x_check)).abs().max():.1e}")
    torch.testing.assert_close(ours(x_check), packaged(x_check), rtol=0, atol=ATOL)

# %% [markdown]
# ### 为什么模型要把嵌入乘以 $\sqrt{d_{\mathrm{model}}}$
#
# 论文以及沿用它的 The Annotated Transformer 都在加上位置编码表之前，
# 把词元嵌入乘以 $\sqrt{d_{\mathrm{model}}}$。原因在于大小。表的每一行由
# $d_{\mathrm{model}}/2$ 对组成，每对满足 $\sin^2 + \cos^2 = 1$，所以每一行的范数都是
# $\sqrt{d_{\mathrm{model}}/2}$：在 $d_{\mathrm{model}} = 512$ 时为 16。嵌入的元素通常
# 大小约为 $1/\sqrt{d_{\mathrm{model}}}$（fairseq 就是这样初始化的；论文让嵌入与输出层
# 共享权重，而输出层的得分应保持在 1 的量级），所以一个嵌入行的范数约为 1。
# 如果直接相加，位置信息就会以十六比一的比例压过词元本身。乘以
# $\sqrt{d_{\mathrm{model}}}$ 之后，嵌入行的范数约为 $\sqrt{512} \approx 22.6$，
# 与表的 16 处于同一量级。（[`nn.Embedding`](https://pytorch.org/docs/stable/generated/torch.nn.Embedding.html)
# 是一张表，每个词元 id 对应一行可学习的参数。）

# %%
d_big = 512
torch.manual_seed(0)
token_table = nn.Embedding(1000, d_big)
nn.init.normal_(token_table.weight, std=d_big**-0.5)
with torch.no_grad():
    embedding_norms = token_table.weight.norm(dim=1)
    scaled_norms = (token_table.weight * d_big**0.5).norm(dim=1)
table_norms = posenc.torch.positional_encoding(1000, d_big).norm(dim=1)
print(f"embedding rows: norm {embedding_norms.mean():.2f} on average, times sqrt(512): {scaled_norms.mean():.1f}")
print(f"table rows against unscaled embeddings: {(table_norms / embedding_norms).mean():.0f} to 1")
torch.testing.assert_close(table_norms, torch.full((1000,), (d_big / 2) ** 0.5), rtol=1e-6, atol=0)

# %% [markdown]
# ### 一个玩具模型
#
# 这段代码无需修改就能在 GPU 上运行：只要选定一次设备，再把模型和数据移过去。
# 下面打印的内容都与选择了哪种设备无关。
#
# 一个词表大小为 20、宽度为 16 的嵌入层，后接位置编码
# （这个玩具模型省略了缩放：PyTorch 以标准差 1 抽取嵌入元素，
# 每行范数约为 4，这 20 行平均为 3.6，而表的每行范数为
# $\sqrt{8} \approx 2.8$）。在构建模型之前设置随机种子，可以固定嵌入权重；
# 它们先在 CPU 上创建，再移动过去，所以在每种设备上都相同。

# %%
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

vocab_size, width, max_len = 20, 16, 50
torch.manual_seed(0)
model = nn.Sequential(
    nn.Embedding(vocab_size, width),
    posenc.torch.PositionalEncoding(width, max_len=max_len, dropout=0.1),
).to(device)
embed, add_positions = model[0], model[1]
model.eval()
print(f"embedding rows: norm {embed.weight.norm(dim=1).mean():.1f} on average; table rows: {8**0.5:.1f}")

# %% [markdown]
# 一个批量，包含两个各由七个词元 id 组成的序列，出于同样的原因，
# 它们由一个设置了种子的 CPU 生成器抽取：

# %%
gen = torch.Generator().manual_seed(1)
tokens = torch.randint(0, vocab_size, (2, 7), generator=gen).to(device)
print(tokens.cpu().numpy())

with torch.no_grad():
    x = embed(tokens)
    y = model(tokens)
print("tokens", tuple(tokens.shape), "-> embeddings", tuple(x.shape), "-> output", tuple(y.shape))

# %% [markdown]
# 在评估模式下 dropout 不起作用，所以输出减去嵌入就是这张表本身，
# 批量中的每个序列得到的都是相同的行：

# %%
table = posenc.torch.positional_encoding(tokens.shape[1], width, device=device)
torch.testing.assert_close(y - x, table.expand_as(x), rtol=0, atol=ATOL)
print((y - x)[0, :4, :6].cpu().numpy().round(4))

# %% [markdown]
# 在训练模式下，dropout 以 0.1 的概率把每个元素置零（这里是 224 个中的 18 个），
# 并把其余元素乘以 $1/0.9$，使期望值保持不变。评估模式下又得到普通的和。

# %%
model.train()
torch.manual_seed(2)
with torch.no_grad():
    y_train = model(tokens)
model.eval()
kept = y_train != 0
print(f"zeroed: {int((~kept).sum())} of {kept.numel()}")
torch.testing.assert_close(y_train[kept], y[kept] / 0.9, rtol=1e-6, atol=1e-6)

# %% [markdown]
# ### 这张表是缓冲区，不是权重
#
# `pe` 被注册为非持久（non-persistent）缓冲区：`.to(device)` 会把它和模型一起移动，
# 优化器看不到它（它不是参数），`state_dict` 也不包含它
# （[`state_dict`](https://pytorch.org/tutorials/beginner/saving_loading_models.html)
# 就是检查点所保存的内容）。检查点只保存嵌入权重，所以它可以加载到用任意 `max_len`
# 构建的模型中。

# %%
print("buffers:", [name for name, _ in model.named_buffers()])
print("parameters:", [name for name, _ in model.named_parameters()])
print("state_dict:", list(model.state_dict()))
print("table shape:", tuple(add_positions.pe.shape), " on the embedding's device:", add_positions.pe.device == embed.weight.device)

fresh = nn.Sequential(nn.Embedding(vocab_size, width), posenc.torch.PositionalEncoding(width, max_len=5000))
loaded = fresh.load_state_dict(model.state_dict())
assert loaded.missing_keys == loaded.unexpected_keys == [], "nothing missing, nothing unexpected"

# %% [markdown]
# 没有 GPU 也能观察缓冲区的移动：
# [meta 设备](https://pytorch.org/docs/stable/meta.html)只保存形状、不保存数据，
# `.to("meta")` 会像移到其他设备一样把模块移过去。而作为普通属性保存的张量
# （`self.pe = table`）则会留在原地。

# %%
class TableAsAttribute(nn.Module):
    def __init__(self):
        super().__init__()
        self.pe = posenc.torch.positional_encoding(10, 4)  # not registered


print("buffer:", posenc.torch.PositionalEncoding(4, max_len=10).to("meta").pe.device)
print("plain attribute:", TableAsAttribute().to("meta").pe.device)

# %% [markdown]
# ### 比 max_len 更长时
#
# 公式对任意位置都有定义，所以比 `max_len` 更长的序列不必报错：
# 模块会在同一设备上按新的长度重新计算它的表。

# %%
long_tokens = torch.randint(0, vocab_size, (2, 80), generator=gen).to(device)
with torch.no_grad():
    x_long = embed(long_tokens)
    y_long = model(long_tokens)
print("output", tuple(y_long.shape), " max_len was", max_len, "now", add_positions.max_len)
long_table = posenc.torch.positional_encoding(80, width, device=device)
torch.testing.assert_close(y_long - x_long, long_table.expand_as(x_long), rtol=0, atol=ATOL)
print("on the embedding's device:", add_positions.pe.device == embed.weight.device)
print("still out of state_dict:", list(model.state_dict()))

# %% [markdown]
# ## 我的表为什么对不上？`posenc.diagnose`
#
# `posenc.diagnose` 接受一张表（这里是 torch 张量），并说明它是什么：
# 是论文中的表，还是由哪些常见错误造成的。下面是
# [The Annotated Transformer](https://nlp.seas.harvard.edu/annotated-transformer/)
# 中的 exp/log 做法，带三个开关，每个开关引入一种错误（行末的注释说明哪个开关改变了这一行），
# 每种错误诊断一次。每次诊断都说出了所引入的那种错误。

# %%
import math

import torch

import posenc


def draft_table(length, d_model, *, integer=False, multiply=False, transpose=False):
    position = torch.arange(length, dtype=torch.float32)[:, None]
    two_i = torch.arange(0, d_model, 2)
    exponent = two_i // d_model if integer else two_i / d_model  # integer: // (old torch's int "/")
    sign = 1.0 if multiply else -1.0  # multiply: the minus sign of exp(-...) forgotten
    angles = position * torch.exp(sign * exponent * math.log(10000.0))
    table = torch.zeros(length, d_model)
    table[:, 0::2] = torch.sin(angles)
    table[:, 1::2] = torch.cos(angles)
    return table.T if transpose else table  # transpose: (d_model, length)


# %%
mistakes = {
    "integer_division": dict(integer=True),
    "multiplied_not_divided": dict(multiply=True),
    "transposed": dict(transpose=True),
}
for code, mistake in mistakes.items():
    found = posenc.diagnose(draft_table(10, 6, **mistake))
    assert found.codes == [code], f"diagnose names the one mistake put in: {code}"
    print(found, end="\n\n")

# %% [markdown]
# 错误可以叠加，`diagnose` 会逐一指出：下面是一张转置了的表，
# 同时指数被向下取整成了零。

# %%
found = posenc.diagnose(draft_table(10, 6, integer=True, transpose=True))
assert found.codes == ["transposed", "integer_division"]
print(found)

# %% [markdown]
# 打印出来的张量也可以诊断，就像笔记本中显示的那样：长张量只会显示四个角的部分，
# 所以要同时传入它的形状。这个 `(50, 64)` 打印结果中前三行、后三行以及前三列、后三列
# 就足以看出漏掉了负号，与诊断张量本身得到的答案相同。

# %%
tensor = draft_table(50, 64, multiply=True)
printed = repr(tensor)
shown = posenc.parse_printed(printed, shape=(50, 64))
print("rows shown:", shown.rows.tolist(), " columns shown:", shown.columns.tolist())
found = posenc.diagnose(printed, shape=(50, 64))
assert found.codes == posenc.diagnose(tensor).codes == ["multiplied_not_divided"], "the print says what the tensor says"
print(found)

# %% [markdown]
# ## 小结
#
# - 讲义中 d_model=64 的演示：分母 `(32,)`，偶数列与奇数列相同；
#   位置 `(10, 1)`；正弦和余弦 `(10, 32)`；堆叠后 `(10, 32, 2)`；展平后
#   `(10, 64)`。每一步都与 `posenc` 一致到 1e-6（见下面的交叉检查）。
# - 我们的 `SinusoidalTable` 在四位小数上重现了讲义打印的 `(10, 6)` 表，
#   并与 `posenc.torch.positional_encoding(10, 6)` 一致到 1e-6。与讲义的类不同，
#   它对奇数的 `d_model` 给出正确的宽度（7 列，而不是 8 列）。
# - `AddPositions` 是手写的常用模块，它从缓冲区中取表，返回 `dropout(x + PE[:seq])`；
#   模型会先把嵌入乘以 $\sqrt{d_{\mathrm{model}}}$，以免被表中范数为
#   $\sqrt{d_{\mathrm{model}}/2}$ 的行淹没。
# - `posenc.torch.PositionalEncoding` 的作用与 `AddPositions` 相同。它的
#   表是一个非持久缓冲区，会随 `.to(device)` 移动，不会存入
#   检查点；当序列比 `max_len` 更长时，表会自动变长。
# - `posenc.diagnose` 能说明一张表（张量或其打印形式）是什么：是论文中的表，还是
#   由哪些错误（整数除法、丢掉的负号、转置）造成的。

# %% [markdown]
# ## 练习
#
# 每个练习先给出一份有错误的草稿，再给出一个检查：运行检查，读它的反馈，
# 修改草稿，再把两个单元格重新运行，直到它判定你的答案正确为止。这里保存的反馈
# 针对的是原样的草稿。卡住了？`nb02.NAME.hint()` 会给一点提示，
# `nb02.NAME.solution()` 会打印检查所对照的参考代码（NAME 是 `.check`
# 前面的那个词）。

# %%
from posenc.exercises import nb02

# %% [markdown]
# ### 练习 1 · 修正 The Annotated Transformer 的表
#
# 补全 `my_positional_encoding(length, d_model)`，使它用 exp/log 做法返回论文中形状为
# `(length, d_model)` 的 float32 表，包括 `d_model` 为奇数的情况（最后一列
# 是正弦）。下面的草稿有两个问题；检查每次找出一个。
# （`posenc.diagnose(my_positional_encoding(10, 6))` 可以提供第二种意见。）

# %%
def my_positional_encoding(length, d_model):
    position = torch.arange(1, length + 1, dtype=torch.float32)[:, None]
    div_term = torch.exp(torch.arange(0, d_model, 2) * (-math.log(10000.0) / d_model))
    table = torch.zeros(length, d_model)
    table[:, 0::2] = torch.sin(position * div_term)
    table[:, 1::2] = torch.cos(position * div_term)
    return table


# %%
nb02.table.check(my_positional_encoding)

# %% [markdown]
# ### 练习 2 · 模型所调用的 forward
#
# 讲义的 `forward()` 不接受参数，直接返回这张表。而模型调用位置编码时会传入
# 形状为 `(batch, seq, d_model)` 的嵌入 `x`，并期望得到 `x` 加上表的前 `seq` 行。
# 修正下面的 `forward`；检查会以两种尺寸构建你的模块，并在一个批量上调用它。

# %%
class MyPositionalEncoding(nn.Module):
    def __init__(self, d_model, max_len=5000):
        super().__init__()
        self.register_buffer("pe", posenc.torch.positional_encoding(max_len, d_model), persistent=False)

    def forward(self, x):
        return self.pe  # the lecture's forward: the whole table


# %%
nb02.forward.check(MyPositionalEncoding)

# %% [markdown]
# ### 练习 3 · 被落下的表
#
# 这个模块在 CPU 上给出正确的数字。但在 GPU 上执行 `model.to("cuda")` 之后，
# 它的 forward 会失败：嵌入在 GPU 上，它的表却不在。不用 GPU 也能找出原因
# （把它移到 meta 设备，再看 `.pe.device`），然后修正 `__init__` 并检查。

# %%
class TableOnTheSide(nn.Module):
    def __init__(self, d_model, max_len=5000):
        super().__init__()
        self.pe = posenc.torch.positional_encoding(max_len, d_model)

    def forward(self, x):
        return x + self.pe[: x.shape[1]]


# %%
nb02.buffer.check(TableOnTheSide)

# %% [markdown]
# ### 练习 4 · 这张表有多“响”？
#
# 一个宽度为 `d_model = 768` 的模型以标准差 $1/\sqrt{768}$ 抽取嵌入元素，
# 并在加上表之前把嵌入乘以 $\sqrt{768}$。请用纸笔或 Python 预测：表中一行的范数
# 与缩放后嵌入行的（典型）范数之比是多少。草稿按每列一个单位的平方范数来计算。

# %%
table_row = math.sqrt(768)  # one sin^2 or cos^2 per column?
scaled_embedding_row = math.sqrt(768 * (1 / 768)) * math.sqrt(768)
ratio = table_row / scaled_embedding_row

# %%
nb02.scale.check(ratio)

# %% [markdown]
# ## 交叉检查
#
# 上文各句话背后的检查都集中在这里：演示的每一步都与 `posenc` 对照
# （以 float64 为参照；`ATOL` 涵盖了这些较小位置上的 float32 舍入误差），
# 以及正文引用的各个数字。

# %%
# Cross-checks: each step of the walk against posenc (float64 references)
assert den_even.dtype == torch.float32
torch.testing.assert_close(den_even.double(), torch.from_numpy(posenc.denominators(64)), rtol=1e-6, atol=0)
ref_angle = torch.from_numpy(posenc.angles(np.arange(10), 64))
torch.testing.assert_close(sin_part.double(), ref_angle.sin(), rtol=0, atol=ATOL)
torch.testing.assert_close(cos_part.double(), ref_angle.cos(), rtol=0, atol=ATOL)
np.testing.assert_array_equal(posenc.interleave(sin_part.numpy(), cos_part.numpy()), pe64.numpy())
torch.testing.assert_close(pe64, posenc.torch.positional_encoding(10, 64), rtol=0, atol=ATOL)
assert not torch.equal(concatenated, pe64)
torch.testing.assert_close(concatenated, posenc.torch.positional_encoding(10, 64, layout="sin_cos"), rtol=0, atol=ATOL)
assert big[:, -2].abs().max() < 0.02 and big[:, -1].min() > 0.9999
assert len(pair_starts) == 4 and table7.shape == (10, 7)
torch.testing.assert_close(table7, posenc.torch.positional_encoding(10, 7), rtol=0, atol=ATOL)

# %%
# Cross-checks: the numbers the prose quotes, the wavelengths and the sqrt(d_model) scale at the digits printed
assert round(10000 ** (8 / 64), 1) == 3.2 and round(2 * np.pi, 1) == 6.3
assert round(2 * np.pi * 10000 ** (24 / 64), -1) == 200
assert round(embedding_norms.mean().item(), 2) == 1.0 and round(scaled_norms.mean().item(), 1) == 22.6
assert round((table_norms / embedding_norms).mean().item()) == 16

# %%
# Cross-checks of the toy model (norms, dropout, eval mode, the device, the grown table) and of diagnose
assert round(embed.weight.norm(dim=1).mean().item(), 1) == 3.6 and round(8**0.5, 1) == 2.8
assert int((~kept).sum()) == 18 and kept.numel() == 224
with torch.no_grad():
    assert torch.equal(model(tokens), y)
assert add_positions.max_len == 80 and add_positions.pe.device == embed.weight.device

# diagnose: the draft without a mistake is the paper's table; the corners a long print shows
assert posenc.diagnose(draft_table(10, 6)).matches_paper
assert shown.rows.tolist() == [0, 1, 2, 47, 48, 49] and shown.columns.tolist() == [0, 1, 2, 61, 62, 63]
