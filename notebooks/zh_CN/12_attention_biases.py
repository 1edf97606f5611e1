# %% [markdown]
# # 12 · 把位置作为注意力分数上的偏置：ALiBi、T5 的分桶，以及完全不用位置
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/posenc-org/posenc/blob/main/notebooks/zh_CN/12_attention_biases.ipynb)
#
# 笔记本 07 和 08 把位置以向量的形式交给模型：一张加到词元嵌入上的表，或者对查询和键的旋转。
# 第三类方法不动任何向量，而是给每个注意力分数加上一个数，这个数由键离查询有多远决定：
# ALiBi（BLOOM、MPT、Baichuan-13B）和 T5 的相对位置分桶（T5、FLAN-T5、mT5、LongT5 等）。
# 还有一些新近模型的部分层完全不加位置（NoPE）。这些偏置是为一个问题而设计的：
# 模型遇到比训练时任何序列都长的序列时会怎样？我们先画出每种偏置，再以缩微的形式重建回答这个问题的那张表。
#
# **问题：** 当位置是注意力分数上的偏置而不是向量时，有什么不同？哪种位置方法在比训练序列更长的序列上仍然有效？
#
# **学完本节，你将能够：**
# - 在 PyTorch 中给注意力加上偏置，并说明为什么沿一行加上同一个常数不会改变任何东西；
# - 写出任意头数下 ALiBi 的斜率，并说明为什么几何级数的斜率让每个头有各自的作用范围；
# - 求出一个相对位置在 T5 中所属的桶，并说出哪些距离共用一个桶；
# - 从配置中读出 Llama 4、SmolLM3 或 Cohere 2 的哪些层完全不用位置；
# - 短训长测：在最长为训练长度 8 倍的输入上比较六种位置方法；
# - 说明 xPos 在旋转位置编码 (RoPE) 之上加了什么，以及 posenc 为什么不收录 KERPLE、FIRE 和 CoPE。
#
# **先修：** 笔记本 04、07 和 08 · **时间：** 约 60 分钟

# %%
# On Colab, install posenc from GitHub; elsewhere `make lab` has already installed it.
import sys

if "google.colab" in sys.modules:
    # %pip install --quiet "posenc @ git+https://github.com/posenc-org/posenc@main"
    # configs with rope_parameters need transformers 5
    # %pip install --quiet "transformers>=5"

# %% [markdown]
# 偏置来自 `posenc.biases`（NumPy）；`torch.as_tensor` 把它们交给 PyTorch。
# 单线程加上确定性算法，使同一台机器上的每次运行都完全相同。

# %%
# %matplotlib inline
import inspect
import time
import warnings

import matplotlib.pyplot as plt
import numpy as np
import torch
from torch import nn

warnings.filterwarnings("ignore", message="IProgress not found")  # tqdm's, when transformers loads it
import transformers  # noqa: E402

from posenc import biases, lessons, rope  # noqa: E402

torch.set_num_threads(1)
torch.use_deterministic_algorithms(True)
torch.manual_seed(0)
rng = np.random.default_rng(0)
started = time.perf_counter()

# %% [markdown]
# ## 1. 分数上的偏置
#
# 注意力给查询 $i$ 在各个键 $j$ 上的权重 $\mathrm{softmax}_j(s_{ij})$，其中分数
# $s_{ij} = q_i \cdot k_j / \sqrt{d}$。偏置类方法在 softmax 之前给分数加上一个矩阵 $B$，每个头一个：
#
# $$\text{weights}_i = \mathrm{softmax}_j\big(s_{ij} + B_{ij}\big).$$
#
# $B$ 不看词元，只看查询和键所在的位置；因果掩码本身就是这样一种偏置
# （在查询之后的键上为 $-\infty$，其权重变为 $e^{-\infty} = 0$）。在 PyTorch 中，
# `scaled_dot_product_attention` 通过 `attn_mask` 接收 $B$。下面是 4 个头、6 个位置，
# 使用第 2 节中 ALiBi 的偏置，并与逐项写出的公式对照：

# %%
heads, length, head_dim = 4, 6, 8
q, k, v = torch.randn(3, heads, length, head_dim)
bias = torch.as_tensor(biases.alibi_bias(heads, length, length))  # (heads, length, length), causal
weights = torch.softmax(q @ k.transpose(-1, -2) / head_dim**0.5 + bias, dim=-1)
attended = nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=bias)
torch.testing.assert_close(attended, weights @ v)
print("bias", tuple(bias.shape), "| weights of query 2, head 0:", weights[0, 2].numpy().round(3))

# %% [markdown]
# 在一行的所有分数上加同一个数，softmax 不会改变；因此每行只差一个常数的两个偏置就是同一个偏置。
# BLOOM 把 ALiBi 写成 $+m\,j$（键的位置乘以该头的斜率 $m$），而不是 $-m\,(i - j)$：
# 两者在第 $i$ 行相差 $m\,i$，给出的权重相同。

# %%
slopes = torch.as_tensor(biases.alibi_slopes(heads))[:, None, None]
bloom = slopes * torch.arange(length, dtype=torch.float64)  # (heads, 1, length): slope * key position
mask = torch.full((length, length), -torch.inf).triu(1)
bloom_weights = torch.softmax(q.double() @ k.double().transpose(-1, -2) / head_dim**0.5 + bloom + mask, dim=-1)
torch.testing.assert_close(bloom_weights.float(), weights)
print("row 2, head 0:", bias[0, 2].numpy(), "(ALiBi)", (bloom + mask)[0, 2].numpy(), "(BLOOM)")

# %% [markdown]
# ## 2. ALiBi：随距离增长的惩罚
#
# ALiBi（Press、Smith 和 Lewis，ICLR 2022，["Train Short, Test Long"](https://arxiv.org/abs/2108.12409)）
# 给第 $h$ 个头的偏置是 $-m_h\,(i - j)$，其中键在 $i - j$ 个位置之前：这是一个随距离线性增长的惩罚，
# 每个头有一个固定的斜率 $m_h$，没有任何需要学习的参数。对 $n$ 个头（$n$ 为 2 的幂），
# 斜率为 $m_h = 2^{-8h/n}$，$h = 1, \dots, n$：8 个头时为 $\frac12, \frac14, \dots, \frac{1}{256}$。

# %%
slopes8 = biases.alibi_slopes(8)
print("8 heads:", slopes8)
np.testing.assert_array_equal(slopes8, 2.0 ** -np.arange(1, 9))

# %% [markdown]
# 对于其他头数，论文的代码、BLOOM 和 MPT 先取不超过它的最大 2 的幂对应的斜率，
# 再从两倍头数的斜率中隔一个取一个（即落在它们之间的那些）来补足：12 个头时，
# 先是上面的 8 个斜率，然后是 $2^{-1/2}, 2^{-3/2}, 2^{-5/2}, 2^{-7/2}$。
# MPT 的 `alibi_bias_max` 替换指数中的 8。

# %%
slopes12 = biases.alibi_slopes(12)
print("12 heads:", slopes12.round(4))
np.testing.assert_allclose(slopes12[8:], 2.0 ** -np.array([0.5, 1.5, 2.5, 3.5]), rtol=1e-15)

# %% [markdown]
# 8 个头各自在 16 个位置上的偏置，使用同一色标（灰色：被掩码）。
# 第一个头的惩罚在最远的角上达到 7.5；最后一个头的惩罚始终小于 0.06。

# %%
alibi16 = biases.alibi_bias(8, 16, 16)
colours = plt.get_cmap("viridis").with_extremes(bad="lightgray")
fig, axes = plt.subplots(1, 8, figsize=(12, 2))
for h, ax in enumerate(axes):
    image = ax.imshow(np.ma.masked_invalid(alibi16[h]), cmap=colours, vmin=-7.5, vmax=0)
    ax.set(title=f"m = 1/{2 ** (h + 1)}", xticks=[], yticks=[])
axes[0].set(xlabel="key", ylabel="query")
fig.colorbar(image, ax=axes, shrink=0.8)
plt.show()

# %% [markdown]
# 为什么用几何级数的斜率？当内容对各个键没有偏好时（所有分数相等），第 $h$ 个头的权重按
# $e^{-m_h\,\text{distance}}$ 衰减：每往回一步，权重除以 $e^{m_h}$；在足够长的过去中，
# 一半的权重落在最近的 $\ln 2 / m_h$ 个键之内。斜率逐头减半，这些范围就逐头加倍：
# 1.4、2.8、5.5……直到 177 个键。这又是笔记本 04 的思想：正弦表给每一对列一个波长，
# 波长成几何级数，于是有些对分辨相邻位置，另一些对区分远处的位置；ALiBi 给每个头一个范围，
# 范围成几何级数，于是有些头读最近的几个词元，另一些头在数百个词元上取平均。
# 它是一种先验，而不是窗口：一个键的分数只要高出惩罚，仍然会胜出。

# %%
far = 512  # query 511 over keys 0..511: a long past
last_row = biases.alibi_bias(8, 1, far, key_offset=far - 1, dtype=np.float64)[:, 0]  # float64: e^-255 is not 0
uniform = torch.softmax(torch.as_tensor(last_row), dim=-1).numpy()
by_distance = uniform[:, ::-1]  # column k: the key k places back
half_weight = np.log(2) / slopes8
print("half of the weight within (keys):", half_weight.round(1))
step = by_distance[:, 1:] / by_distance[:, :-1]  # each key's weight over the next nearer one's
np.testing.assert_allclose(step, np.broadcast_to(np.exp(-slopes8)[:, None], step.shape), rtol=1e-12)

# %%
fig, ax = plt.subplots(figsize=(8, 3))
for h in range(8):
    ax.plot(np.arange(1, far + 1), by_distance[h], label=f"m = 1/{2 ** (h + 1)}")
ax.set(xscale="log", yscale="log", ylim=(1e-6, 1), xlabel="distance back (keys)", ylabel="weight",
       title="ALiBi's weights when the contents prefer no key, 8 heads")
ax.legend(fontsize=7, ncol=2)
plt.show()

# %% [markdown]
# ## 3. T5：近处精确，远处取对数，更远共用一个桶
#
# T5（[Raffel et al., 2020](https://arxiv.org/abs/1910.10683)）学习它的偏置：
# 每个头对相对位置的每个*桶*有一个数，放在一张形状为 (buckets, heads) 的表里，所有层共用。
# 巧妙之处在于分桶。使用 T5 的 32 个桶和 `max_distance` 128 时，编码器（双向）把 16 个桶给查询之前的键，
# 16 个给查询之后的键。每 16 个桶中，前 8 个各放一个距离（0 到 7）；
# 其余 8 个以对数增长的区间覆盖从 8 开始的距离；最后一个区间容纳从 91 开始的所有距离，
# 128 和一百万都一样。查询之前的键，每个桶的第一个距离：

# %%
distance = np.arange(300)
back = biases.relative_position_bucket(-distance)  # relative position = key - query
starts = distance[np.r_[True, back[1:] != back[:-1]]]
print("buckets 0..15 start at distances", starts.tolist())
assert (back[91:] == 15).all() and back[90] == 14

# %% [markdown]
# 精确的桶分辨最近的键；区间用这种分辨率换取覆盖范围：8 个桶覆盖距离 8 到 90，
# 最宽的区间（第 14 号桶）含 27 个距离。解码器（`bidirectional=False`）只看到查询之前的键，
# 所以 32 个桶全都给它们：16 个精确，16 个对数，而所有之后的键都在第 0 号桶（因果掩码把它们遮住）。

# %%
relative = np.arange(-160, 161)
fig, ax = plt.subplots(figsize=(8, 3))
for bidirectional in (True, False):
    buckets = biases.relative_position_bucket(relative, bidirectional=bidirectional)
    ax.step(relative, buckets, where="mid", label=f"bidirectional={bidirectional}")
ax.axvline(-128, color="gray", linestyle=":", label="max_distance")
ax.set(xlabel="relative position (key - query)", ylabel="bucket", title="T5's buckets, 32 of them, max_distance 128")
ax.legend()
plt.show()

# %% [markdown]
# 使用一张随机数值的表（训练好的 T5 有它自己的表；`relative_position_bias` 原样接收检查点中的
# `relative_attention_bias.weight`），4 个头在 160 个位置上的偏置：沿对角线的条带，每个桶一种颜色，
# 离对角线越远越宽，距离超过 90 之后是一片单一的颜色。

# %%
table = rng.standard_normal((32, 4))
t5_bias = biases.relative_position_bias(table, 160, 160)
fig, axes = plt.subplots(1, 4, figsize=(12, 3))
for h, ax in enumerate(axes):
    ax.imshow(t5_bias[h], cmap="coolwarm")
    ax.set(title=f"head {h}", xticks=[], yticks=[])
axes[0].set(xlabel="key", ylabel="query")
plt.show()
assert t5_bias.shape == (4, 160, 160) and t5_bias[0, 150, 0] == table[back[150], 0]

# %% [markdown]
# ## 4. NoPE：完全不用位置
#
# 完全没有位置信息的解码器并非看不到顺序：因果掩码让位置 $i$ 看到 $i + 1$ 个键，
# 这本身就是一个信号。让第一个词元带一个标记（值为 1，其余为 0），并让查询对各个键没有偏好：
# 注意力在位置 $i$ 上返回 $1 / (i + 1)$，也就是到目前为止词元个数的计数。
# 训练后的模型会找到这类信号（[Haviv et al., 2022](https://arxiv.org/abs/2203.16634)）。

# %%
marker = torch.zeros(1, 1, 10, 1)
marker[..., 0, :] = 1.0
causal = torch.full((10, 10), -torch.inf).triu(1)
counted = nn.functional.scaled_dot_product_attention(torch.zeros(1, 1, 10, 4), torch.zeros(1, 1, 10, 4), marker,
                                                     attn_mask=causal)
print("attention output at positions 0..9:", counted.flatten().numpy().round(3))
torch.testing.assert_close(counted.flatten(), 1 / torch.arange(1.0, 11.0))

# %% [markdown]
# 一些新近的模型在部分层上去掉了 RoPE：Llama 4 和 SmolLM3 每四层去掉一层
# （见其配置中的 `no_rope_layers`），Cohere 2 在其全注意力层上去掉（它只在滑动窗口层上旋转）。
# `rope.layer_plan(config)` 逐层读出模型自己的注意力代码做了什么。
# 下面是用 transformers 的配置类构建的 8 层微型配置（不下载任何东西）：

# %%
small = {"num_hidden_layers": 8, "hidden_size": 64, "num_attention_heads": 4, "num_key_value_heads": 2,
         "intermediate_size": 128}
configs = {
    "Llama 4": transformers.Llama4TextConfig(**small, head_dim=16, intermediate_size_mlp=128),
    "SmolLM3": transformers.SmolLM3Config(**small),
    "Cohere 2": transformers.Cohere2Config(**small),
}
plans = {name: [layer.method for layer in rope.layer_plan(config)] for name, config in configs.items()}
for name, methods in plans.items():
    print(f"{name:>8}: {' '.join(methods)}")
assert all(methods == ["rope"] * 3 + ["nope"] + ["rope"] * 3 + ["nope"] for methods in plans.values())

# %% [markdown]
# ## 5. 短训长测
#
# Press 等人在一个长度上训练语言模型，再在更长的输入上测量：正弦模型在超过训练长度几个词元后就失效了，
# 旋转位置编码和 T5 的偏置坚持得更久，而 ALiBi 在许多倍的长度上仍然有效。
# 下面是这个实验的缩微版。任务是 `lessons.markov_task`：每个词元以 0.85 的概率是它前两个词元的一个固定函数
# （`MARKOV_RULE`），否则是 16 个词元中均匀随机的一个。要预测下一个词元，模型必须找到前两个词元，
# 这种能力只取决于相对位置，在任何长度下都一样。任何模型的正确率都不可能超过
# $0.85 + 0.15 / 16 \approx 0.859$。

# %%
tokens, targets = lessons.markov_task(np.random.default_rng(0), 1, 12)
best = lessons.MARKOV_KEEP + (1 - lessons.MARKOV_KEEP) / lessons.VOCAB
print("tokens: ", tokens[0])
print("targets:", targets[0], f"(-100: not scored)  best accuracy {best:.3f}")
assert round(best, 3) == 0.859

# %% [markdown]
# 模型是 `lessons.TinyDecoder(method)`：一个 1 层、8 个头、$d = 64$ 的因果 Transformer，采用 pre-norm，
# 除了因果掩码和 `method` 之外没有任何能看到顺序的东西：`none`（NoPE）、`learned`（加到嵌入上的一张逐行的表）、
# `sinusoidal`、`rope`（`posenc.torch` 的 `rotary_cos_sin` 和 `apply_rotary`）、`alibi` 和 `t5`
# （`posenc.biases`，加到分数上）。缩微版的 T5 有 16 个因果桶，`max_distance` 为 16，即训练长度：
# T5 在 512 个词元上训练，`max_distance` 为 128，所以每个桶都得到训练；这里按同样比例缩小。
# 只有两种方法有自己需要学习的参数：

# %%
extra = {method: sum(p.numel() for p in lessons.TinyDecoder(method).parameters())
         - sum(p.numel() for p in lessons.TinyDecoder("none").parameters()) for method in lessons.POSITION_METHODS}
print("parameters beyond the NoPE model's:", extra)
assert extra == {"none": 0, "learned": 128 * 64, "sinusoidal": 0, "rope": 0, "alibi": 0, "t5": 16 * 8}

# %% [markdown]
# 每个模型在长度 16 上用 Adam（学习率 0.02）训练 100 步，每批 32 条序列，序列相同、顺序相同、随机种子相同，
# 然后在 16、32、64 和 128 个词元的 64 条新序列上评分（所有模型用同一批）。
# 可学习的表有 128 行；15 之后的行从不参与训练，保持随机初始值。
# `lessons.train_short_test_long` 完成这一切，在笔记本电脑的一个 CPU 线程上用时不到 20 秒 CPU 时间：

# %%
experiment_started = time.process_time()  # CPU time: what a busy machine does not stretch
results = lessons.train_short_test_long(seed=0)
experiment_seconds = time.process_time() - experiment_started
lengths = [16 * m for m in (1, 2, 4, 8)]

# %%
# NBVAL_IGNORE_OUTPUT
# Another CPU rounds the float32 sums in another order, which can move an accuracy across a rounding edge.
print(f"{'accuracy at':<12}" + "".join(f"{n:>6}" for n in lengths))
for method, scores in results.items():
    print(f"{method:<12}" + "".join(f"{s:6.2f}" for s in scores))

# %%
fig, ax = plt.subplots(figsize=(7, 3.5))
for method, scores in results.items():
    ax.plot(lengths, scores, marker="o", label=method)
ax.axhline(best, color="gray", linestyle="--", label="best possible")
ax.axvline(16, color="gray", linestyle=":", label="training length")
ax.set_xscale("log", base=2)
ax.minorticks_off()
ax.set(xticks=lengths, xticklabels=lengths, ylim=(0, 1), xlabel="sequence length", ylabel="accuracy",
       title="trained at 16 tokens, tested up to 128")
ax.legend(fontsize=8, ncol=3, loc="lower left")
plt.show()

# %% [markdown]
# 在训练长度上，每个带位置的模型都离最好可能的正确率不到 0.15；NoPE 模型低 0.25 或更多。
# 在 8 倍长度上，顺序与 Press 等人对他们所比较的方法得出的一致：ALiBi（与它在 16 上的正确率相差不到 0.05），
# 然后是 T5 的偏置，然后是 RoPE，然后是正弦表；这里可学习的表和正弦表相近，NoPE 位于 RoPE 和这两者之间。
# RoPE 在两倍长度上损失不大，之后才下降。

# %%
at_train = {method: scores[0] for method, scores in results.items()}
at_8x = {method: scores[-1] for method, scores in results.items()}
assert min(v for m, v in at_train.items() if m != "none") > best - 0.15 and at_train["none"] < best - 0.25

# %%
assert at_8x["alibi"] > at_8x["t5"] > at_8x["rope"] > at_8x["none"] > max(at_8x["sinusoidal"], at_8x["learned"])

# %% [markdown]
# 为什么各自下降，或者不下降：
#
# - **learned、sinusoidal**：超过 16 之后，模型读到的是从未训练过的表行（随机的行，
#   或从未见过的组合中的正弦和余弦值）；两者最后都不如完全没有位置的模型。
# - **RoPE**：慢的那些对（波长超过 16 个位置）转到训练中从未达到的角度，
#   而且一个远处的键可能被转得几乎和一个近处的键一样（笔记本 08 第 6 节）。
# - **T5**：从 15 开始的所有距离都共用 16 个桶中的最后一个，所以 100 个位置之前的键
#   和 15 个位置之前的键得到相同的偏置；输入越长，共用它的键越多，
#   它们就可能把权重从真正重要的那两个键那里拉走。
# - **ALiBi**：远处的键受到越来越大的惩罚，所以一个头在 128 个词元上读的键，
#   就是它在 16 个词元上读的那些键。
#
# 这个缩微版与论文的不同之处：Press 等人在 WikiText-103 上训练了 2.47 亿参数的语言模型，
# 测量的是困惑度；这里是一个只训练 100 步的 1 层模型、一个合成任务、一个随机种子、每个长度 64 条测试序列，
# 所以几个百分点的差别说明不了什么。他们的 ALiBi 模型在更长的输入上*更好*，
# 因为更多的上下文对语言模型有帮助；这里前两个词元就是全部可用的信息，所以保持不变已经是 ALiBi 能做到的最好结果。
# 在训练长度上，他们的 ALiBi 与正弦模型持平或更好；这里它低于其他方法中最好的那个。
# 他们的表里没有可学习位置和 NoPE 模型；真正的可学习位置表在其长度之外根本没有行（GPT-2 是 1024 行）。

# %%
assert abs(at_8x["alibi"] - at_train["alibi"]) < 0.05 and at_train["alibi"] < max(at_train.values())

# %% [markdown]
# ## 6. xPos，以及文献中的另外三种方法
#
# xPos（[Sun et al., 2022](https://arxiv.org/abs/2212.10554)，"A Length-Extrapolatable
# Transformer"）保留旋转位置编码 (RoPE) 的旋转，再加上一个衰减。$d$ 个通道的头中，每一对 $j$ 得到一个小于 1 的数
# $\zeta_j = (2j + 0.4d) / (1.4d)$；位置 $n$ 上的查询乘以 $\zeta_j^{\,n/512}$，位置 $m$ 上的键乘以
# $\zeta_j^{-m/512}$，于是分数 $q_n \cdot k_m$ 中第 $j$ 对的那一份是 RoPE 的那一份乘以
# $\zeta_j^{\,(n - m)/512}$：和 ALiBi 一样随距离衰减，但按对进行，而且是相乘而不是相加。
# 最快的那一对衰减得最多：对 $d = 64$，

# %%
zeta = rope.xpos_decay(64)
distances = np.array([1, 512, 2048])
print("zeta, fastest and slowest pair:", zeta[[0, -1]].round(3))
print("their factors at distances", distances.tolist(), ":", (zeta[[0, -1], None] ** (distances / 512)).round(3).tolist())
np.testing.assert_allclose(zeta[[0, -1]], [0.4 / 1.4, (62 + 0.4 * 64) / (1.4 * 64)], rtol=1e-15)

# %%
fig, ax = plt.subplots(figsize=(7, 3))
reach = np.arange(0, 4097, 16)
for j in (0, 8, 16, 24, 31):
    ax.plot(reach, zeta[j] ** (reach / 512), label=f"pair {j}")
ax.set(xlabel="distance n - m", ylabel="factor on the pair's share", ylim=(0, 1.05), title="xPos's decay, head of 64 channels")
ax.legend(fontsize=8)
plt.show()

# %% [markdown]
# `rope.xpos_cos_sin(positions, head_dim)` 给出 `rope.apply_rotary` 用来旋转并缩放查询的 cos 和 sin
# （键用 `keys=True`），采用两份参考代码的交错布局：lucidrains 的 rotary-embedding-torch（`use_xpos=True`）
# 和 torchscale 的 `XPOS`；测试与这两者都做了比较。位置 2047 上的查询对键 0 到 2047 的分数，
# 逐对地等于 RoPE 的分数乘以衰减：

# %%
q_vec, k_vec = rng.standard_normal((2, 2048, 64))
positions = np.arange(2048)
q_x = rope.apply_rotary(q_vec, *rope.xpos_cos_sin(positions, 64, dtype=np.float64), layout="interleaved")
k_x = rope.apply_rotary(k_vec, *rope.xpos_cos_sin(positions, 64, keys=True, dtype=np.float64), layout="interleaved")
cos, sin = rope.rotary_cos_sin(positions, 64, layout="interleaved", dtype=np.float64)
q_r, k_r = (rope.apply_rotary(t, cos, sin, layout="interleaved") for t in (q_vec, k_vec))
pair_terms = (q_r[-1] * k_r).reshape(2048, 32, 2).sum(-1)  # (keys, pairs): RoPE's score, pair by pair
decayed = (pair_terms * zeta ** ((2047 - positions)[:, None] / 512)).sum(-1)
np.testing.assert_allclose(k_x @ q_x[-1], decayed, rtol=1e-9, atol=1e-9)

# %% [markdown]
# 远处的键首先失去快速对的那一份：正是这些对在近处和远处的键之间转了很多圈，
# RoPE 借助它们会让远处的键看起来像近处的键（笔记本 08 第 6 节）。posenc 只在 NumPy 中提供 xPos，
# 用于阅读和测试。另外三种为长输入设计的方法，各有参考代码，以及 posenc 不收录它们的原因：
#
# | 方法 | 增加了什么 | 参考代码 | 为什么 posenc 不收录 |
# |---|---|---|---|
# | KERPLE ([Chi et al., 2022](https://arxiv.org/abs/2205.09921)) | 偏置 $-r_1 \log(1 + r_2\,\lvert i - j\rvert)$（或 $-r_1 \lvert i - j\rvert^{r_2}$），每个头两个学习到的数 | [chijames/KERPLE](https://github.com/chijames/KERPLE)（`ParallelKerpleLog`，在一个 GPT-NeoX 分支中） | 这两个数是每个模型自己的；训练好之后它就是一个距离的偏置，像第 1 节那样交给注意力 |
# | FIRE ([Li et al., 2024](https://arxiv.org/abs/2310.04418)) | 一个小型可学习 MLP 给出的偏置，输入是距离的对数除以查询位置的对数 | 论文的附录 | MLP 是每个模型自己的：没有固定的公式可以去精确对齐 |
# | CoPE ([Golovneva et al., 2024](https://arxiv.org/abs/2405.18719)) | 由门 $\sigma(q_i \cdot k_j)$ 计数得到的位置，从学习到的位置嵌入中读取 | [facebookresearch/RAM](https://github.com/facebookresearch/RAM)，`projects/cope` | 位置取决于词元，所以没有可以预先算好的表或偏置 |

# %% [markdown]
# ## 小结
#
# - 偏置类方法在 softmax 之前把 $B_{ij}$（查询和键所在位置的函数）加到分数上
#   （PyTorch 中的 `attn_mask`）；沿一行加同一个常数不会改变任何东西。
# - ALiBi：$-m_h \cdot$ 距离，固定斜率 $2^{-8h/n}$（其他头数时再加上位于它们之间的斜率）；
#   几何级数的斜率给各个头几何级数的范围，就像几何级数的波长给正弦表的各个对不同的尺度。
# - T5：每个头、每个桶一个学习到的数；最近的距离用精确的桶，更远处用对数区间，
#   再远的一切共用一个桶（32 个桶、`max_distance` 128 时从 91 开始）。
# - NoPE：完全不用位置；因果掩码仍然让解码器能够计数。Llama 4 和 SmolLM3 每四层用一次，
#   Cohere 2 在其全注意力层上使用（`rope.layer_plan`）。
# - 在 16 个词元上训练、在 128 个词元上测试：ALiBi 保持了正确率，T5 的偏置损失了一部分，
#   RoPE 损失更多，而可学习的表和正弦表跌到了完全不用位置的模型之下。
# - xPos 是按对带衰减的 RoPE，$\zeta_j^{\,(n - m)/512}$（`rope.xpos_cos_sin`）；
#   KERPLE、FIRE 和 CoPE 要学习它们的偏置或位置，所以 posenc 没有它们的固定公式可以对齐。
#
# ## 练习
#
# 每个检查都会指出哪里错了。卡住时，`nb12.<exercise>.hint()` 给出提示，
# `nb12.<exercise>.solution()` 打印参考代码。

# %%
from posenc.exercises import nb12  # noqa: E402

# %% [markdown]
# ### 练习 1 · 任意头数下 ALiBi 的斜率
#
# 用 NumPy（不用 `biases.alibi_slopes`）写出 `slopes(num_heads)`：先是最大的 2 的幂
# $n \le$ `num_heads` 对应的斜率 $2^{-8h/n}$（$h = 1..n$），再是 $2^{-8h/(2n)}$（$h = 1, 3, 5, \dots$）中的前
# `num_heads - n` 个。草稿里有一个错误。

# %%
def slopes(num_heads):
    n = 2 ** int(np.log2(num_heads))
    first = 2.0 ** (-8 * np.arange(n) / n)
    between = 2.0 ** (-8 * np.arange(1, 2 * n, 2) / (2 * n))
    return np.concatenate([first, between[: num_heads - n]])


print(nb12.alibi_slopes.check(slopes))

# %% [markdown]
# ### 练习 2 · 双向的 T5 分桶
#
# 用解码器的分桶构造编码器的分桶：`relative_position_bucket(-abs(r),
# bidirectional=False, num_buckets=num_buckets // 2, ...)` 把距离 $|r|$ 放进一半的桶里，
# 查询之后的键（$r > 0$）用另一半。补全 `both_ways(relative_position, num_buckets, max_distance)`；
# 检查会与 `bidirectional=True` 的结果比较。

# %%
def both_ways(relative_position, num_buckets, max_distance):
    distance = np.abs(relative_position)
    return biases.relative_position_bucket(-distance, bidirectional=False, num_buckets=num_buckets // 2,
                                           max_distance=max_distance)


print(nb12.both_ways.check(both_ways))

# %% [markdown]
# ### 练习 3 · 手写因果 ALiBi 偏置
#
# 写出 `causal_alibi(num_heads, length)`：形状为 `(num_heads, length, length)` 的偏置，
# 对查询 $i$ 和键 $j \le i$ 为 $-m_h\,(i - j)$，键在查询之后的地方为 $-\infty$。
# 斜率用 `biases.alibi_slopes`，并与第 2 节的图对照。

# %%
def causal_alibi(num_heads, length):
    m = biases.alibi_slopes(num_heads)[:, None, None]
    i, j = np.arange(length)[:, None], np.arange(length)[None, :]
    return np.where(j < i, -np.inf, -m * (i - j))


print(nb12.causal_alibi.check(causal_alibi))

# %% [markdown]
# ## 交叉检查
#
# 把上面的论断再对照一遍，依据是 transformers 中模型自己的代码：BLOOM 的 ALiBi 张量和 T5 的分桶函数；
# 正文给出的数字；实验的设置；以及它的运行时间（不到 20 秒 CPU 时间）。

# %%
# Cross-checks 1: BLOOM's alibi (slope * key position) gives posenc's attention weights; T5's buckets are T5's.
from transformers.models.bloom.modeling_bloom import build_alibi_tensor  # noqa: E402
from transformers.models.t5.modeling_t5 import T5Attention  # noqa: E402

theirs = build_alibi_tensor(torch.ones(1, length), heads, torch.float32)  # (heads, 1, length)
np.testing.assert_allclose(theirs[:, 0].numpy(), bloom[:, 0].numpy(), rtol=1e-6)
for bidirectional in (True, False):
    t5_buckets = T5Attention._relative_position_bucket(torch.as_tensor(relative), bidirectional=bidirectional)
    np.testing.assert_array_equal(t5_buckets.numpy(), biases.relative_position_bucket(relative, bidirectional=bidirectional))
# 2. Section 2's numbers: the far corners, the ranges, the slopes halving.
assert alibi16[0, 15, 0] == -7.5 and -0.06 < alibi16[7, 15, 0] < 0
assert half_weight[:3].round(1).tolist() == [1.4, 2.8, 5.5] and round(half_weight[7]) == 177
assert np.all(slopes8[1:] / slopes8[:-1] == 0.5)
cumulative = by_distance.cumsum(axis=1)  # the weight of the nearest k + 1 keys; 512 are a long past for heads 0..5
assert all(cumulative[h, int(half_weight[h]) - 1] < 0.5 <= cumulative[h, int(half_weight[h])] for h in range(6))

# %%
# Cross-checks 3: section 3's buckets: 8 span 8..90, the widest is bucket 14 with 27 distances.
widths = np.diff(np.r_[starts, 91])
assert starts[8] == 8 and widths.max() == 27 and np.argmax(widths) == 14
assert biases.relative_position_bucket(-10**6) == 15  # a million alike
causal_back = biases.relative_position_bucket(-distance, bidirectional=False)
assert (causal_back[:16] == distance[:16]).all() and (biases.relative_position_bucket(distance[1:], bidirectional=False) == 0).all()
# 4. The miniature T5: every distance from 15 on in the last of 16 buckets, 14 in the one before.
mini = biases.relative_position_bucket(-np.arange(300), bidirectional=False, num_buckets=16, max_distance=16)
assert (mini[15:] == 15).all() and mini[14] == 14
# 5. Section 5's settings and run: NoPE 0.25 below the best, learned and sinusoidal below NoPE at 8x, RoPE at 2x.
decoder = lessons.TinyDecoder("t5")
assert (len(decoder.layers), decoder.heads, decoder.d_model, decoder.num_buckets, decoder.max_distance) == (1, 8, 64, 16, 16)
run = inspect.signature(lessons.train_short_test_long).parameters
assert [run[name].default for name in ("train_length", "steps", "batch_size", "lr", "test_size")] == [16, 100, 32, 0.02, 64]
assert run["multiples"].default == (1, 2, 4, 8) and lessons.MARKOV_KEEP == 0.85
assert at_train["none"] < best - 0.25 and max(at_8x["learned"], at_8x["sinusoidal"]) < at_8x["none"]
assert results["rope"][1] > results["rope"][0] - 0.1 and results["rope"][2] < results["rope"][0] - 0.2
assert experiment_seconds < 20
# 6. xPos: every zeta below 1, the fastest pair's the smallest.
assert np.all(zeta < 1) and np.all(np.diff(zeta) > 0)

# %%
# NBVAL_IGNORE_OUTPUT
print(f"The experiment took {experiment_seconds:.0f} s, the whole notebook {time.perf_counter() - started:.0f} s.")
