# %% [markdown]
# # 05 · 同一种编码，十一种约定：各个项目的正弦位置编码表有何不同
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/posenc-org/posenc/blob/main/notebooks/zh_CN/05_conventions.ipynb)
#
# **问题：** 为什么两个项目的正弦位置编码表对不上？怎样判断一张表遵循的是哪种约定？
#
# **学完本节，你将能够：**
# - 说出各种约定改变的两样东西——列的布局和频率，并从一张表中把两者读出来；
# - 用一个列置换把一张表以及一个训练好的模型从一种布局迁移到另一种布局；
# - 计算“h-1”频率，并说出它们与论文中的频率相差多少；
# - 让 `posenc.identify` 说出一张表的约定，并用它来核对你自己的判断。
#
# **先修：** 笔记本 01 和 04 · **时间：** 约 50 分钟
#
# 正弦位置编码有许多变体；`posenc` 复现了其中的十一种。有的把所有正弦放在前面，
# 有的用的频率略有不同，有的在宽度为奇数时补零，还有一种把填充（padding）位置那一行置零。
# 移植一个检查点（checkpoint），或者对照两篇教程读一读，就会发现数字对不上。
# 本笔记本把这些变体摆在一起，度量它们相差多远；说明改变布局就是对列做一次置换，
# 只要把训练好的模型的嵌入，以及读写同一组特征的那些权重一起做同样的置换，模型就能完全吸收这个变化；
# 最后让 `posenc.identify` 告诉我们一张表遵循的是哪种约定。

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
# ## 各家约定一览
#
# 这里说的*约定*，是指某个项目写出这张表的方式；`posenc` 为每种约定提供一个预设（preset），
# `list_conventions` 会说明每个预设的出处。

# %%
for preset in posenc.list_conventions():
    print(f"{preset.name:20} {preset.source}")
assert len(posenc.list_conventions()) == 11

# %% [markdown]
# 下面并排显示一张宽 64 的表的 100 个位置。论文中的表是*交错*的（笔记本 01）：
# 正弦和余弦交替出现，看起来是细细的条纹。另外五张是*拼接*的：先是所有正弦，再是所有余弦
# （布局“sin_cos”），看起来是两大块。（diffusers 的 `flip_sin_to_cos=True` 把余弦放在前面：
# 即“cos_sin”。）

# %%
shown = ["paper", "hf-marian", "tensor2tensor", "fairseq", "whisper", "diffusers"]
fig, axes = plt.subplots(2, 3, figsize=(12, 6), sharey=True)
for name, ax in zip(shown, axes.flat):
    posenc.plot.heatmap(posenc.positional_encoding(100, 64, convention=name), ax=ax, colorbar=False, title=name)
fig.tight_layout()
plt.show()
assert [posenc.convention(name).layout for name in shown] == ["interleaved"] + ["sin_cos"] * 5

# %% [markdown]
# 许多名字写出的是相同的数字。把宽度为 64 时表相同的预设归为一组：

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
# 一共四张表。前三张在布局（交错，或正弦在前）和频率（论文的频率，或下文的“h-1”）上有所不同：

# %%
heads = {name: posenc.convention(name) for name in groups}
for name, head in heads.items():
    print(f"{name:14} layout {head.layout:12} frequencies {head.rule}")

# %% [markdown]
# 而 fairseq 与 tensor2tensor 只在第 1 行不同：fairseq 给填充词元分配位置编号 `padding_idx`
# （默认为 1），并把那一行置零：

# %%
t2t = posenc.positional_encoding(50, 64, convention="tensor2tensor")
fairseq = posenc.positional_encoding(50, 64, convention="fairseq")
print("rows that differ:", np.flatnonzero((t2t != fairseq).any(axis=1)).tolist())
assert not fairseq[1].any()  # all zeros

# %% [markdown]
# ## 频率差异：论文与“h-1”
#
# 论文对第 $j = 0, \dots, h - 1$ 对使用 $w_j = 10000^{-2j/d}$，其中 $h = d/2$；
# tensor2tensor（以及默认设置下的 fairseq、Whisper、diffusers）使用
# $w_j = 10000^{-j/(h-1)}$，使最低频率恰好为 $10^{-4}$。我们按它的分母把这条规则称为“h-1”。
# 这是一个不同的函数，而不是舍入上的差别：在 $d = 512$ 时，论文的最低频率是 $1.0366 \cdot 10^{-4}$，
# 两者最多相差 3.5 %，出现在最低频率处，即 $j = 255$。

# %%
d_model = 512
paper_w = posenc.convention("paper").frequencies(d_model)
h1_w = posenc.convention("tensor2tensor").frequencies(d_model)
gap = h1_w / paper_w - 1
print(f"lowest frequency: paper {paper_w[-1]:.4e}, h-1 {h1_w[-1]:.4e}")
print(f"largest gap: {100 * np.abs(gap).max():.1f} % at j = {np.abs(gap).argmax()}")
assert h1_w[-1] == 1e-4  # exactly

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
# 两者都是从 1 开始的等比数列，所以“h-1”就是换了一个底数的论文公式，底数为
# $10000^{h/(h-1)}$，在 $d = 512$ 时约为 10 367.8：

# %%
h = d_model // 2
same_base = 10000 ** (h / (h - 1))
print(f"10000^(h/(h-1)) = {same_base:.1f}")
np.testing.assert_allclose(posenc.convention("paper", base=same_base).frequencies(d_model), h1_w, rtol=1e-14)

# %% [markdown]
# 3.5 % 看起来很小，但在 5000 个位置上，两张表的最低频的几对会完全错开：
# 它们之间的最大差值是 2.00，即同一个正弦在一张表里是 $+1$，在另一张表里是 $-1$。

# %%
far = np.abs(
    posenc.positional_encoding(5000, d_model, layout="sin_cos") - posenc.positional_encoding(5000, d_model, convention="tensor2tensor")
).max()
print(f"largest difference over 5000 positions: {far:.2f}")
assert round(far, 2) == 2.0

# %% [markdown]
# ## 布局就是置换
#
# `layout_permutation` 给出把一种布局变成另一种布局的索引数组。对 $d = 8$，
# 从交错布局 $(s_0, c_0, s_1, c_1, \dots)$ 变成所有正弦在前：

# %%
perm = posenc.layout_permutation(8, "interleaved", "sin_cos")
print(perm)
interleaved = posenc.positional_encoding(20, 8)
assert np.array_equal(interleaved[:, perm], posenc.positional_encoding(20, 8, layout="sin_cos"))

# %% [markdown]
# 所以，用一种布局训练的模型可以被精确地迁移到另一种布局，但只改一层是做不到的。
# 位置编码表被加到词元嵌入上，这个和在
# [*残差流*（residual stream）](https://transformer-circuits.pub/2021/framework/index.html#residual-comms)
# 中流经整个模型：每个块都读取它，再把自己的输出加回去。对表的列做置换，就是对这条残差流做置换，
# 所以凡是接触残差流的东西都必须以同样的方式置换：嵌入的列、每个读取残差流的权重的输入轴、
# 每个写入残差流的权重的输出轴（以及偏置），还有每个层归一化（layer norm）的缩放和平移参数
# （层归一化在所有特征上求平均，所以不在乎它们的顺序）。块内部的权重，
# 例如各注意力头自己的轴或前馈网络的隐藏单元，则保持不变。
#
# 我们用交错的表训练笔记本 07 中的小模型（词元嵌入、正弦位置编码表、一个 Transformer 编码器层、
# 一个线性输出头），任务来自 `posenc.lessons`：复制前一个词元；然后把它迁移到 sin_cos 的表上。
# 它学会了这个任务：在留出的测试词元上，正确率超过 90 %，而在 16 个词元中随机猜测只能猜对 16 个中的 1 个。

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


assert VOCAB == 16 and held_out_accuracy(model) > 0.9

# %% [markdown]
# 迁移的做法：每个参数都按它对残差流做了什么来归类。在 PyTorch 的编码器层中，
# `self_attn.in_proj_weight` 和 `linear1.weight` 读取残差流（输入轴，即最后一个轴），
# `self_attn.out_proj` 和 `linear2` 写入残差流（输出轴，即第一个轴，以及它们的偏置），
# `norm1` 和 `norm2` 作用于残差流；嵌入的行是残差流中的向量，输出头读取残差流。
# 在 float64 下，迁移后的模型在 1000 个测试序列上的 logits 与训练好的模型一致，误差在 $10^{-12}$ 以内
# （求和时加的是相同的项，只是顺序不同）。

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
print("logits agree to 1e-12:", largest < 1e-12)
assert largest < 1e-12 and torch.equal(logits.argmax(-1), ported_logits.argmax(-1))

# %% [markdown]
# （表本身不在模型的状态里：`PositionalEncoding` 把它保存为非持久化的缓冲区，按自己的布局构建。）
# 只置换表，或者只置换表和嵌入而不动后面的部分，都会破坏训练好的模型；
# 复制前一个词元的正确率会远远低于原来的水平：

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
# 确切的数值取决于训练时所在平台的舍入误差；这些数值所说明的事情在这里检查：
# 迁移后的模型与训练好的模型正确率完全相同（如上所示，它们的 logits 一致到 $10^{-12}$），
# 而每种只迁移一部分的做法，答对的词元数都不到训练好的模型的一半。

# %%
partial_ports = [accuracies["table only"], accuracies["table and embedding"]]
print("ported as accurate as trained:", accuracies["ported"] == accuracies["trained"],
      "  partial ports below half of it:", max(partial_ports) < accuracies["trained"] / 2)
assert accuracies["ported"] == accuracies["trained"] and max(partial_ports) < accuracies["trained"] / 2

# %% [markdown]
# ## 奇数宽度
#
# 公式对奇数宽度的每一列都有定义（最后一列是正弦），但各个来源的做法不同：
# 三个补一列零，两个直接拒绝。下面是宽度 7 时最后一列的前 4 行：

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
# hf-marian（以及 2019 年 4 月的 TensorFlow 教程）最后一列接近 1，是一个余弦：
# 它们的布局把所有正弦放在前面，正弦占 $\lceil 7/2 \rceil = 4$ 列，余弦占剩下的 3 列。
# 于是最后一列是第 2 对的余弦，频率为 $10000^{-4/7}$，而第 3 对那个落单的正弦位于第 3 列。

# %%
marian = posenc.positional_encoding(4, 7, convention="hf-marian")
p = np.arange(4)
expected = np.stack([np.sin(p * 10000 ** (-6 / 7)), np.cos(p * 10000 ** (-4 / 7))], axis=1)  # columns 3 and 6
np.testing.assert_allclose(marian[:, [3, 6]], expected, atol=1e-7)  # float32 rounding

# %% [markdown]
# ## 这张表是哪种约定？
#
# `identify` 用每个预设去拟合一张表（由最低频率得到底数，由第一行得到偏移），
# 保留那些能在 float32 误差（即它的 `tolerance`）之内重建这张表的预设。
# 这里它读取的是用非默认选项生成的表；对每张表，我们打印出识别出的名字和参数，
# 并检查名字是否就是表的出处，以及这些参数能否重建这张表。

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
    rebuilt = posenc.positional_encoding(200, 64, convention=c)
    assert found.name == name and np.abs(rebuilt - made).max() <= found.tolerance

# %% [markdown]
# 有几个预设写出的数字相同（默认的“paper”表同时也是“hf-xlm”、“keras-hub”和“tf-tutorial-2019”），
# 而且只要修改参数，大多数表都能由好几个预设重建。`identify` 会把这样的预设排在前面：
# 它们的*出处*能通过自己的选项写出这张表。keras-hub 接受 `max_wavelength`，而论文没有这样的选项，
# 所以上面那张表只是“keras-hub”，而不是“底数为 500 的 paper”。
#
# Stable Diffusion 的时间步嵌入（`flip_sin_to_cos=True, downscale_freq_shift=0`）说明了这一点为什么重要。
# 它的频率 $10000^{-j/h}$ 就是论文的频率，只是按 cos_sin 的顺序排列。
# 七个采用论文规则的预设，每一个都能用 `layout="cos_sin"` 重建它（早先版本的 `identify`
# 给出的名字是“paper”，并把这七个都列为匹配），但它们的出处都不会写出这种布局；
# diffusers 用自己的选项就能写出它，所以被选中的是 diffusers：

# %%
sd = posenc.positional_encoding(200, 64, convention="diffusers", flip_sin_to_cos=True, downscale_freq_shift=0)
found = posenc.identify(sd)
print(f"layout {found.convention.layout}, rule {found.convention.rule}, shift {found.convention.shift:g}, "
      f"base {found.convention.base:g}; matches: {found.matches}")
assert found.matches == ("diffusers",)

# %% [markdown]
# 如果什么都不匹配，它就回答“none”：比如一张随机的表，或者一张真实的表，但其中一列被挪动了 0.01。

# %%
rng = np.random.default_rng(0)
nudged = posenc.positional_encoding(200, 64, convention="whisper")
nudged[:, 10] += 0.01
for table in (rng.uniform(-1, 1, size=(200, 64)), nudged):
    found = posenc.identify(table)
    print(f"name {found.name}, matches {found.matches}, deviation beyond the tolerance: {found.max_deviation > found.tolerance}")
    assert found.name is None and found.matches == () and found.max_deviation > found.tolerance

# %% [markdown]
# ## 小结
#
# - **有两样东西会变。** 各种约定的区别在于列的*布局*（论文的交错排列：正弦、余弦、正弦……；
#   或者先放所有正弦再放所有余弦，即 sin_cos；或者反过来，即 cos_sin）和*频率*
#   （论文的 $10000^{-2j/d}$，或者“h-1”的 $10000^{-j/(h-1)}$）；少数约定还会在宽度为奇数时补零，或把填充行置零。
# - **十一个预设，四张表。** 在宽度 64 下，十一个预设只写出四张不同的表；许多名字对应的是相同的数字。
# - **“h-1”是另一个函数。** 它就是底数为 $10000^{h/(h-1)}$ 的论文公式
#   （在 $d = 512$ 时为 10 367.8）：频率最多相差 3.5 %，5000 个位置之后，它的慢的几对与论文的完全错开。
# - **布局就是置换。** `layout_permutation` 把一种布局映射到另一种；它的逆置换再映射回来。
#   只有把嵌入以及残差流上的每个权重、偏置和归一化参数都做同样的置换，
#   训练好的模型才能被精确地迁移到另一种布局；只置换表会把模型破坏掉。
# - **奇数宽度**是各来源分歧最大的地方：一个落单的正弦、一列零，或者直接报错。
# - **`posenc.identify`** 能说出一张表的约定以及重建它的参数；它优先选择能用自己的选项写出这张表的出处，
#   什么都不匹配时回答“none”。

# %% [markdown]
# ## 练习
#
# 每个练习都给你一份草稿和一个检查，检查会告诉你草稿哪里不对。这里给出的每份草稿都含有一个典型错误；
# 改正它，再运行检查，直到它显示“正确！”。卡住时，`nb05.<exercise>.hint()` 会给你一点提示，
# `nb05.<exercise>.solution()` 会打印参考答案的代码。
#
# ### 练习 1 · 把某个项目的表转换成论文的布局
#
# `nb05.theirs` 是 Whisper 的表，6 个位置、宽度 8（`sinusoids(6, 8)`）。
# 用 `posenc.layout_permutation` 把它的列重新排成论文的交错布局 $(s_0, c_0, s_1, c_1, \dots)$。
# （频率仍然是 Whisper 的：这里只关心布局。）

# %%
from posenc.exercises import nb05

theirs = nb05.theirs
print(theirs.round(3))

# %%
mine = theirs[:, posenc.layout_permutation(8, "interleaved", "sin_cos")]
nb05.to_paper_layout.check(mine)

# %% [markdown]
# ### 练习 2 · 说出一张表的约定
#
# `nb05.mystery` 是来自某个项目的一张表，20 个位置、16 列。下面是它的前几行。
# 从第 0 行读出布局，再看看其他行，然后说出写出这张表的预设（取自 `posenc.CONVENTIONS` 的一个名字）。
# 检查会把你的预设写出的表与这张神秘的表相比较，并告诉你哪里不同；
# 等你拿定主意之后，可以用 `posenc.identify` 当裁判。

# %%
print(nb05.mystery[:3].round(2))

# %%
my_answer = "tensor2tensor"
nb05.convention.check(my_answer)

# %% [markdown]
# ### 练习 3 · “h-1”频率
#
# 写出 `h1_frequencies(d_model)`：按“h-1”规则得到的 $h = d/2$ 个频率，
# $w_j = \exp(-j \ln 10000 / (h - 1))$。下面的草稿除错了数。
# 等检查显示“正确！”之后，把你在 $d = 512$ 时的频率与论文的频率（上面的 `paper_w`）比较一下，
# 再次找到那 3.5 % 的差异。

# %%
def h1_frequencies(d_model):
    h = d_model // 2
    return np.exp(-np.arange(h) * np.log(10000.0) / h)


nb05.h1_frequencies.check(h1_frequencies)

# %% [markdown]
# ## 交叉检查
#
# 上面各句话背后的检查，都集中在这里。

# %%
# Cross-checks of the claims above.
# The zoo: diffusers' flip puts the cosines first; the three tables that differ in layout and rule.
assert posenc.convention("diffusers", flip_sin_to_cos=True).layout == "cos_sin"
assert [(c.layout, c.rule) for c in heads.values()][:3] == [("interleaved", "paper"), ("sin_cos", "paper"), ("sin_cos", "h-1")]
assert np.flatnonzero((t2t != fairseq).any(axis=1)).tolist() == [1]

# The frequency gap at d = 512: the paper's lowest 1.0366e-4, the largest gap 3.5 % at j = 255; the same base.
assert f"{paper_w[-1]:.4e}" == "1.0366e-04"
assert round(100 * np.abs(gap).max(), 1) == 3.5 and np.abs(gap).argmax() == 255
assert round(same_base, 1) == 10367.8

# The Stable Diffusion table: seven paper-rule presets rebuild it in cos_sin, to float32 rounding.
sd_rebuilt = posenc.identify(sd)
paper_rule = [name for name in posenc.CONVENTIONS if posenc.convention(name).rule == "paper"]
assert len(paper_rule) == 7
for name in paper_rule:
    assert np.abs(sd - posenc.positional_encoding(200, 64, convention=name, layout="cos_sin")).max() <= sd_rebuilt.tolerance

# The exercises' tables: Whisper's is sin_cos with "h-1" frequencies; the mystery table is fairseq's.
assert posenc.identify(nb05.theirs).name in ("tensor2tensor", "whisper", "diffusers")
assert posenc.identify(nb05.mystery).matches == ("fairseq",)
print("all cross-checks hold")
