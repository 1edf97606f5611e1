# %% [markdown]
# # 08 · 从正弦到旋转：RoPE
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/posenc-org/posenc/blob/main/notebooks/zh_CN/08_rotary.ipynb)
#
# 如今几乎所有新近的语言模型都使用旋转位置编码（RoPE），而不是加上一张位置表。RoPE 沿用正弦位置编码的频率，但用它们来*旋转*查询和键。
# 本笔记本将说明：为什么这是一种改进；通道配对的两种方式，以及检查点如何在两者之间转换；把模型扩展到更长上下文的频率规则；长位置上的精度陷阱；最后，在笔记本 07 的复制任务上，把 RoPE 与另外三种做法放在一起比较。
#
# **问题：** 为什么新近的语言模型要旋转查询和键，而不是加上一张位置表？移植 RoPE 时，哪些地方必须做对？
#
# **学完本节，你将能够：**
# - 证明旋转后的查询和键给出的注意力分数只依赖于偏移量；
# - 在 half 布局下手工旋转一个查询，并把它与 interleaved 布局区分开；
# - 通过置换 $W_q$ 和 $W_k$ 的行，在两种布局之间转换检查点；
# - 算出任一通道对在各种长上下文频率规则下的波长；
# - 识别长位置上 cos 和 sin 的精度陷阱。
#
# **先修：** 笔记本 04 和 07 · **时间：** 约 90 分钟

# %%
# On Colab, install posenc from GitHub; elsewhere `make lab` has already installed it.
import sys

if "google.colab" in sys.modules:
    # %pip install --quiet "posenc @ git+https://github.com/posenc-org/posenc@main"

# %% [markdown]
# 这里以 PyTorch 为主要框架；NumPy 和 TensorFlow 在最后与它对照检查。单线程加上确定性算法，使同一台机器上的每次运行结果完全一致。

# %%
# %matplotlib inline
import copy
import time

import matplotlib.pyplot as plt
import mpmath
import numpy as np
import torch
from torch import nn

import posenc
import posenc.torch
from posenc.lessons import (
    BATCH, STEPS, TRAIN_LENGTH, VOCAB, LearnedPositions, accuracy, copy_previous_task, first_step_above,
    order_blind_ceiling, predict, train,
)

torch.set_num_threads(1)
torch.use_deterministic_algorithms(True)
torch.manual_seed(0)
started = time.perf_counter()

# %% [markdown]
# ## 1. 加上的位置向量会把内容和位置混在一起
#
# 使用正弦位置编码时，位置 $p$ 上的词元 $x_p$ 以 $x_p + PE_p$ 的形式进入模型。注意力用点积比较两个这样的向量，而这个点积可以拆成四项：
#
# $$(x_p + PE_p)\cdot(x_s + PE_s) = \underbrace{x_p\cdot x_s}_{\text{content}}
#   + \underbrace{x_p\cdot PE_s + PE_p\cdot x_s}_{\text{content and position}}
#   + \underbrace{PE_p\cdot PE_s}_{\text{position}}.$$
#
# 我们把两个随机的词元向量（$d = 64$）放在位置 5 和 2，再把这两个词元移到 105 和 102：偏移量同样是 3。

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
# 四项相加就是分数。内容项在两处相同，位置项也相同：$PE_p \cdot PE_s = \sum_i \cos((p - s)\,w_i)$ 只依赖于偏移量（笔记本 04），这里精确到 float64 舍入误差。
# 两个混合项则不然：尽管变的只有绝对位置，它们还是让分数变了。

# %%
assert abs(near["position"] - far["position"]) < 1e-12, "PE_p · PE_s depends on p - s only"

# %% [markdown]
# 在真实的注意力层中，向量先要经过查询投影和键投影 $W_q$、$W_k$。这样一来，连位置项 $PE_p W_q^\top W_k PE_s$ 也取决于这对词元所处的位置，而不只是它们的偏移量：

# %%
W_q, W_k = rng.standard_normal((2, D, D)) / np.sqrt(D)


def projected_position_term(p, s):
    pe_p, pe_s = posenc.encode([p, s], D, dtype=np.float64)
    return (W_q @ pe_p) @ (W_k @ pe_s)


print(f"position term with projections: {projected_position_term(5, 2):.3f} at (5, 2), "
      f"{projected_position_term(105, 102):.3f} at (105, 102)")

# %% [markdown]
# ## 2. 改为旋转查询和键
#
# RoPE（rotary position embedding，旋转位置编码，出自 RoFormer 论文：Su et al., 2021，[arXiv 2104.09864](https://arxiv.org/abs/2104.09864)）不往词元向量上加任何东西。
# 它在每个注意力头的查询和键*经过投影之后*才起作用：把该头的 $d$ 个通道两两分成一对，再把位置 $p$ 处向量的第 $j$ 对旋转角度 $p\,w_j$，其中 $w_j = 10000^{-2j/d}$ 正是正弦编码的频率。
# 这里的 $d$ 是单个注意力头的大小（`head_dim`），而不是 `d_model`：每个头都以同样的 $d/2$ 个频率旋转自己的通道。
# 写成矩阵，这个旋转是分块对角的：每一对对应一个 $2 \times 2$ 旋转块，其余位置都是零：
#
# $$R(p\,w) = \begin{pmatrix} R_2(p\,w_0) & & \\ & \ddots & \\ & & R_2(p\,w_{d/2-1}) \end{pmatrix},
#   \qquad R_2(\theta) = \begin{pmatrix} \cos\theta & -\sin\theta \\ \sin\theta & \cos\theta \end{pmatrix}.$$
#
# 逐块来看，旋转 $a$ 的转置再接上旋转 $b$，等于旋转 $b - a$，因此 $R(p\,w)^\top R(s\,w) = R((s - p)\,w)$，并且
#
# $$\big(R(p\,w)\,q\big)\cdot\big(R(s\,w)\,k\big) = q \cdot R\big((s - p)\,w\big)\,k,$$
#
# 它只是偏移量 $s - p$ 的函数。下面是 $d = 64$ 的单个头的这个矩阵，以及对 $p = 5$、$s = 2$ 的恒等式检验：

# %%
def rotation_matrix(p, d=D, base=10000.0):
    """R(p w): the (d, d) block-diagonal matrix of the 2x2 rotations by p * w_j."""
    w = base ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)
    c, s = torch.cos(p * w), torch.sin(p * w)
    blocks = torch.stack([c, -s, s, c], dim=-1).view(-1, 2, 2)  # R_2(p w_j) for each pair j
    return torch.block_diag(*blocks)


torch.testing.assert_close(rotation_matrix(5).T @ rotation_matrix(2), rotation_matrix(-3), rtol=0, atol=1e-14)
print("R(5w): shape", tuple(rotation_matrix(5).shape), "with", (rotation_matrix(5) != 0).sum().item(), "nonzero entries")

# %% [markdown]
# 实际中没人去乘这个矩阵：每一对各自旋转即可。下面用 PyTorch 写出这个旋转，以通道 $2j$ 和 $2j + 1$ 作为第 $j$ 对：

# %%
def rotate(x, positions, d=D, base=10000.0):
    """Turn pair j = channels (2j, 2j+1) of x (..., seq, d) at each position by position * w_j."""
    w = base ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)
    angles = positions.to(torch.float64)[:, None] * w
    a, b = x[..., 0::2], x[..., 1::2]
    return torch.stack([a * angles.cos() - b * angles.sin(), b * angles.cos() + a * angles.sin()], dim=-1).flatten(-2)


# %% [markdown]
# `posenc.torch.rotary_cos_sin` 构建 cos 表和 sin 表，`posenc.torch.apply_rotary` 应用它们；`layout="interleaved"` 就是这种配对方式。
# 它们与 `rotate` 的结果在 float64 舍入误差内一致（也与矩阵一致；旋转还保持每个向量的长度不变：这两点都在末尾的交叉检查里）。

# %%
positions = torch.arange(64)
q, k = torch.randn(2, D, dtype=torch.float64)
cos, sin = posenc.torch.rotary_cos_sin(positions, D, layout="interleaved", dtype=torch.float64)
rotated_q = posenc.torch.apply_rotary(q.expand(64, D), cos, sin, layout="interleaved")
rotated_k = posenc.torch.apply_rotary(k.expand(64, D), cos, sin, layout="interleaved")

torch.testing.assert_close(rotated_q, rotate(q.expand(64, D), positions), rtol=0, atol=1e-13)
print("cos, sin:", tuple(cos.shape), " rotated q:", tuple(rotated_q.shape))

# %% [markdown]
# 同一个查询和键放在全部 64 个位置上，得到一个 $64 \times 64$ 的分数矩阵，`scores[p, s]` 对应位置 $p$ 的查询和位置 $s$ 的键。
# 偏移量 $o = s - p$ 相同的元素构成矩阵的一条对角线（`torch.diagonal(scores, o)`）。
# 如果分数只依赖于偏移量，每条对角线上就只有一个值 $q \cdot R(o\,w)\,k$：未旋转的查询，与只按偏移量旋转过的键做点积。
# 下面对全部 127 条对角线进行检验，误差在 1e-12 以内（这样大小的分数的 float64 舍入误差）：

# %%
scores = rotated_q @ rotated_k.T  # scores[p, s]
for o in range(-63, 64):
    expected = q @ rotate(k[None], torch.tensor([o]))[0]  # q · R(o w) k
    torch.testing.assert_close(torch.diagonal(scores, o), expected.expand(64 - abs(o)), rtol=0, atol=1e-12)
print(f"scores from {scores.min().item():.1f} to {scores.max().item():.1f}")

# %% [markdown]
# 与第 1 节同样的两个词元，保持偏移量 3 沿序列滑动：用加法位置表时，分数随绝对位置漂移；用 RoPE 时，分数保持不变（在 float64 舍入误差内）。

# %%
slide = np.arange(200)
added = [four_terms(p + 3, p)["score"] for p in slide]
a_rot = rotate(torch.from_numpy(x_a).expand(200, D), torch.from_numpy(slide + 3))
b_rot = rotate(torch.from_numpy(x_b).expand(200, D), torch.from_numpy(slide))
rotary = (a_rot * b_rot).sum(-1).numpy()
print(f"spread of the score over 200 positions with the added table: {np.ptp(added):.1f}")
assert np.ptp(rotary) < 1e-12, "with RoPE the score of offset 3 is the same at every position"

# %%
fig, ax = plt.subplots(figsize=(8, 3))
ax.plot(slide, added, label="added sinusoidal table: $(x_a + PE_{p+3})\\cdot(x_b + PE_p)$")
ax.plot(slide, rotary, label="RoPE: $R((p+3)w)\\,x_a \\cdot R(p\\,w)\\,x_b$")
ax.set(xlabel="position p of the second token", ylabel="score", title="one pair of tokens at offset 3")
ax.legend(fontsize=8, loc="center right")
plt.show()

# %% [markdown]
# ## 3. 两种布局：哪些通道组成一对
#
# 哪两个通道组成一对只是一种约定，而两种约定都有人在用：
#
# - **interleaved**（交错）：通道 $2j$ 与 $2j + 1$ 配对。
#   使用它的有 Meta 的 Llama 参考代码（[meta-llama/llama](https://github.com/meta-llama/llama)，它把每一对当作一个复数）、[GPT-J](https://github.com/kingoflolz/mesh-transformer-jax)（EleutherAI 于 2021 年发布的 6B 参数模型）和 CodeGen（`rotate_every_two`），以及 Hugging Face [transformers](https://huggingface.co/docs/transformers)（大多数检查点都通过这个库共享）中的 Cohere 和 GLM 模型：它们自己的 `rotate_half` 把相邻通道配对。
# - **half**（对半）：通道 $j$ 与 $j + d/2$ 配对。
#   使用它的有 [GPT-NeoX](https://github.com/EleutherAI/gpt-neox)（EleutherAI 的训练库及其 20B 参数模型）和 transformers 中的大多数模型（Llama、Mistral、Qwen2、Gemma、Phi-3、Falcon 等），它们的 `rotate_half(x)` 是对头的前后两半做 `cat(-x2, x1)`。
#
# `tests/test_rotary_packages.py` 会在已安装的 transformers 上逐一检查上述函数，确认它们符合这里标明的布局。
#
# 对于 8 个通道的头，频率为 $w_j = 10000^{-2j/8} = 1, 0.1, 0.01, 0.001$。
# 位置 1 处的正弦表在第 $j$ 对的两个通道上都是 $\sin w_j$，因此从中可以看出哪些通道配成一对：

# %%
w8 = posenc.rotary_frequencies(8)[0]
pair_of_channel = {"half": np.arange(8) % 4, "interleaved": np.arange(8) // 2}
for layout in posenc.ROTARY_LAYOUTS:
    _, sin1 = posenc.rotary_cos_sin([1], 8, layout=layout, dtype=np.float64)
    assert np.array_equal(sin1[0], np.sin(w8)[pair_of_channel[layout]])
    print(f"{layout:>11}: sin at position 1 = {np.round(sin1[0], 4)}, channel -> pair {pair_of_channel[layout]}")

# %% [markdown]
# half 布局就是 transformers 的公式 `x * cos + rotate_half(x) * sin`：

# %%
def rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


x = torch.randn(10, D, dtype=torch.float64)
cos, sin = posenc.torch.rotary_cos_sin(torch.arange(10), D, layout="half", dtype=torch.float64)
torch.testing.assert_close(posenc.torch.apply_rotary(x, cos, sin, layout="half"), x * cos + rotate_half(x) * sin)

# %% [markdown]
# 两种布局的区别只在于每个头内部通道的顺序。这些通道由查询投影和键投影产生，所以逐个头重排 $W_q$ 和 $W_k$ 的*行*，就能把检查点从一种布局转换到另一种；
# transformers 的 Llama 转换脚本对 Meta 的权重做的正是这件事，用的是 `w.view(heads, head_dim // 2, 2, d_model).transpose(1, 2)`。
# `posenc.rotary_permutation` 给出这个行顺序；在单个头内，它就是正弦表从 interleaved 到 `sin_cos` 的列置换（笔记本 05）。

# %%
HEADS, HEAD_DIM, D_MODEL = 4, 8, 32
perm = posenc.rotary_permutation(HEAD_DIM, "interleaved", "half", heads=HEADS)
script = torch.arange(D_MODEL).view(HEADS, HEAD_DIM // 2, 2).transpose(1, 2).reshape(-1)
assert (perm == script.numpy()).all(), "posenc's row order is the conversion script's"
print("rows of one head, half layout <- interleaved:", perm[:HEAD_DIM])

# %% [markdown]
# 在一个有 4 个头的随机注意力层上检验：interleaved 权重按 interleaved 方式旋转得到的分数，等于置换后的权重按 half 方式旋转得到的分数。
# 而把未置换的权重按 half 方式旋转（这是移植时的常见错误），得到的分数就不同了。

# %%
def rotary_scores(W_q, W_k, x, layout):
    """Attention scores (heads, seq, seq) of x (seq, d_model) with RoPE in `layout`."""
    q = (x @ W_q.T).view(len(x), HEADS, HEAD_DIM).transpose(0, 1)
    k = (x @ W_k.T).view(len(x), HEADS, HEAD_DIM).transpose(0, 1)
    cos, sin = posenc.torch.rotary_cos_sin(torch.arange(len(x)), HEAD_DIM, layout=layout, dtype=torch.float64)
    q, k = (posenc.torch.apply_rotary(t, cos, sin, layout=layout) for t in (q, k))
    return q @ k.transpose(1, 2)


# %%
meta_q, meta_k = torch.randn(2, D_MODEL, D_MODEL, dtype=torch.float64)
tokens_x = torch.randn(10, D_MODEL, dtype=torch.float64)
hf_q, hf_k = (posenc.convert_rotary_layout(w, "interleaved", "half", heads=HEADS) for w in (meta_q, meta_k))

reference = rotary_scores(meta_q, meta_k, tokens_x, "interleaved")
torch.testing.assert_close(rotary_scores(hf_q, hf_k, tokens_x, "half"), reference, rtol=0, atol=1e-12)
unpermuted = rotary_scores(meta_q, meta_k, tokens_x, "half")
print(f"same scores after the permutation; without it they differ by up to {(unpermuted - reference).abs().max().item():.0f}")

# %% [markdown]
# ## 4. 更长上下文的频率规则
#
# 在长度为 $L$ 的序列上训练的模型，见过的第 $j$ 对的角度都小于 $L\,w_j$。
# 波长 $2\pi / w_j$ 大于 $L$ 的那些对，在训练中从未转满一整圈；在超过 $L$ 的位置上，它们会转到模型从未见过的角度。
# 下面这些规则通过改变频率，让更长的上下文仍落在训练时的角度范围内；每条规则各用一段来介绍。
# 在 transformers 中，模型的配置（config）用 `rope_type` 指明所用的规则：`default`（$w_j = \text{base}^{-2j/d}$）由各模型自己的旋转编码类计算，其他规则则是 `modeling_rope_utils.ROPE_INIT_FUNCTIONS` 的键名（`linear`、`dynamic`、`yarn`、`longrope`、`llama3`，以及 `proportional`：它用于只旋转部分通道的头，这里不讨论）；`posenc.rotary_frequencies` 接受同样的名称和参数。
#
# 我们取一个 128 通道的头，底数（base）为 10000，$L = 4096$，目标长度是它的 4 倍。

# %%
HEAD, L, FACTOR = 128, 4096, 4
pairs = np.arange(HEAD // 2)
wavelength = {"default": 2 * np.pi / posenc.rotary_frequencies(HEAD)[0]}
default = wavelength["default"]
turns = L / default  # full turns of each pair within the training length
print(f"pairs with a wavelength longer than L: {(default > L).sum()} of {HEAD // 2}; "
      f"turning more than 32 times within L: {(turns > 32).sum()}")

# %% [markdown]
# **位置插值**（`linear`；Chen et al. 2023，[arXiv 2306.15595](https://arxiv.org/abs/2306.15595)）把每个频率都除以因子 $s$：位置 $p$ 转过的角度与原先位置 $p/s$ 的相同，因此直到 $sL$ 的位置，都落在原先直到 $L$ 的位置的角度上。
# 代价是：相邻两个位置现在只相隔 $1/s$ 个位置，而负责区分相邻位置的高频对，在它们之间转过的角度是模型从未见过的。
# 因此它需要一些微调（第 6 节在一个小模型上展示了这两点）。

# %%
wavelength["linear"] = 2 * np.pi / posenc.rotary_frequencies(HEAD, rope_type="linear", factor=FACTOR)[0]
assert np.allclose(wavelength["linear"], FACTOR * default, rtol=1e-15), "every wavelength times s"

# %% [markdown]
# **NTK-aware 缩放**（bloc97 于 2023 年在 Reddit 上的帖子 ["NTK-Aware Scaled RoPE"](https://www.reddit.com/r/LocalLLaMA/comments/14lz7j5/ntkaware_scaled_rope_allows_llama_models_to_have/)；
# NTK 即*神经正切核*（neural tangent kernel，Jacot et al. 2018，[arXiv 1806.07572](https://arxiv.org/abs/1806.07572)），一种描述宽网络如何学习的理论；
# 按照这一理论，除非输入本身已带有高频成分，否则网络很难学会输入的高频函数（Tancik et al. 2020，[arXiv 2006.10739](https://arxiv.org/abs/2006.10739)），于是有了这条保持高频对不变的规则）改的是底数：$b' = b \cdot s^{d/(d-2)}$。于是 $w'_j = b'^{-2j/d} = w_j \cdot s^{-2j/(d-2)}$：频率最高的第 0 对完全保持原频率，最慢的一对（$j = d/2 - 1$）除以 $s$，中间各对的除数 $s^{2j/(d-2)}$ 按几何级数增长，所以高频对变化很小（这里第 1 对变化 2.2%）。
# 要点正在于此：高频对在 $L$ 之内转了很多圈，模型已经在每个角度、以及相邻位置间的每种偏移上见过它们，它们也就保持这些角度不变；
# 而从未转满一圈的低频对，则几乎像位置插值那样被拉伸。

# %%
ntk = posenc.rotary_frequencies(HEAD, base=10000 * FACTOR ** (HEAD / (HEAD - 2)))[0]
wavelength["NTK-aware"] = 2 * np.pi / ntk
print(f"pair 1's wavelength grows by {wavelength['NTK-aware'][1] / default[1] - 1:.1%}, "
      f"the slowest pair's {wavelength['NTK-aware'][-1] / default[-1]:.3f} times")
assert wavelength["NTK-aware"][0] == default[0], "pair 0 keeps its frequency exactly"

# %% [markdown]
# **动态 NTK**（`dynamic`）就是这条规则，只是 $s$ 不再固定，而是取自当前长度：$s$ = `factor` · `seq_len` / $L$ − (`factor` − 1)。
# 长度不超过 $L$ 时它为 1（即训练时的频率）；在 $4L$ 处、`factor` 为 4 时，它为 13。

# %%
dynamic = dict(factor=FACTOR, max_position_embeddings=L, seq_len=FACTOR * L)
wavelength["dynamic"] = 2 * np.pi / posenc.rotary_frequencies(HEAD, rope_type="dynamic", **dynamic)[0]
s = FACTOR * (FACTOR * L) / L - (FACTOR - 1)
assert s == 13 and np.allclose(wavelength["dynamic"], default * s ** (2 * pairs / (HEAD - 2)), rtol=1e-13)

# %% [markdown]
# **YaRN**（"Yet another RoPE extensioN"，Peng et al. 2023，[arXiv 2309.00071](https://arxiv.org/abs/2309.00071)）根据每一对在 $L$ 之内转了多少圈来逐对决定：
# 转超过 `beta_fast` = 32 圈的对保持频率不变，转不到 `beta_slow` = 1 圈的对像位置插值那样除以 $s$，介于两者之间的对则按一条线性斜坡过渡。

# %%
yarn = dict(factor=FACTOR, original_max_position_embeddings=L)
wavelength["yarn"] = 2 * np.pi / posenc.rotary_frequencies(HEAD, rope_type="yarn", **yarn)[0]
assert (wavelength["yarn"][turns > 32] == default[turns > 32]).all(), "the fast pairs are kept"

# %% [markdown]
# **注意力因子。** YaRN（以及下文的 LongRoPE）还会返回一个数 $a$，用来乘 cos 和 sin；YaRN 的是 $a = 0.1 \ln s + 1$。
# 于是旋转后的查询和键都变为原来的 $a$ 倍长，每个分数 $q \cdot k$ 都乘上了 $a^2$：注意力计算的是 softmax$(a^2 \cdot \text{scores})$，即温度为 $1/a^2$ 的 softmax，$a > 1$ 时分布更尖锐。
# 下面在随机的查询和键上检验，一次用 YaRN 的注意力因子，一次用 `attention_factor=1`：

# %%
a = posenc.rotary_frequencies(HEAD, rope_type="yarn", **yarn)[1]
query, key = np.random.default_rng(5).standard_normal((2, 100, HEAD))


def yarn_scores(**extra):
    cos, sin = posenc.rotary_cos_sin(np.arange(100), HEAD, rope_type="yarn", dtype=np.float64, **yarn, **extra)
    return posenc.apply_rotary(query, cos, sin) @ posenc.apply_rotary(key, cos, sin).T


assert np.allclose(yarn_scores(), a**2 * yarn_scores(attention_factor=1.0), rtol=1e-13)
print(f"YaRN's attention factor at s = {FACTOR}: a = {a:.4f} = 0.1 ln(4) + 1, every score times a² = {a**2:.4f}")

# %% [markdown]
# **Llama 3.1 的规则**（`llama3`；即 Meta 参考代码 [meta-llama/llama-models](https://github.com/meta-llama/llama-models) 中的 `apply_scaling`；这些模型的介绍见 Grattafiori et al. 2024，[arXiv 2407.21783](https://arxiv.org/abs/2407.21783)）按波长 $\lambda_j = 2\pi / w_j$ 来决定：低于 $L$ / `high_freq_factor` 的保持不变，高于 $L$ / `low_freq_factor` 的除以 $s$，介于两者之间的取两个频率的混合：
#
# $$w'_j = (1 - \sigma_j)\,\frac{w_j}{s} + \sigma_j\, w_j, \qquad
#   \sigma_j = \frac{L / \lambda_j - \text{low\_freq\_factor}}{\text{high\_freq\_factor} - \text{low\_freq\_factor}},$$
#
# 这个混合从 $\lambda = L$ / `low_freq_factor` 处的 $\sigma = 0$（拉伸）过渡到 $\lambda = L$ / `high_freq_factor` 处的 $\sigma = 1$（保持）。
# Llama 3.1 使用 $s = 8$、因子 1 和 4、$L = 8192$、底数 500000；这里用因子 1 和 4，配上我们自己的 $L$ 和底数。
# Llama 4 Scout 把两个因子都设为 1，并取 $s = 16$（同一仓库中的 `models/llama4`）：混合段消失了，规则变成在 $L$ 处的一个阶跃。

# %%
llama3 = dict(factor=FACTOR, original_max_position_embeddings=L, low_freq_factor=1, high_freq_factor=4)
wavelength["llama3"] = 2 * np.pi / posenc.rotary_frequencies(HEAD, rope_type="llama3", **llama3)[0]
keep, stretch = default < L / 4, default > L
between = ~keep & ~stretch
sigma = (L / default[between] - 1) / (4 - 1)
blend = (1 - sigma) * (2 * np.pi / default[between]) / FACTOR + sigma * (2 * np.pi / default[between])
print(f"kept: {keep.sum()} pairs, stretched: {stretch.sum()}, blended: pairs {pairs[between]}")
assert np.allclose(wavelength["llama3"][between], 2 * np.pi / blend, rtol=1e-13), "the blend of the formula"

# %%
fig, ax = plt.subplots(figsize=(8, 4.5))
for name, lengths in wavelength.items():
    ax.plot(lengths, label=name, linestyle="--" if name == "default" else "-")
for level, text in [(L, "training length L"), (FACTOR * L, "target 4L")]:
    ax.axhline(level, color="gray", linewidth=0.8)
    ax.text(0, level * 1.15, text, fontsize=8)
ax.set(yscale="log", xlabel="pair j", ylabel="wavelength 2π / w_j (positions)",
       title="RoPE frequency rules, head of 128, base 10000, L = 4096, factor 4")
ax.legend()
plt.show()

# %% [markdown]
# 图中：位置插值把每个波长都按同一因子上移；NTK-aware 缩放和 `dynamic` 让频率最高的一对保持原位，并把曲线向上倾斜；
# YaRN 和 `llama3` 保持短波长不变（在那里它们的线盖住了 default 的虚线），把长波长恰好拉伸 4 倍，中间则是混合。
# 除了固定 $s = 4$ 的 NTK-aware 缩放之外，每条规则都把每个长于 $L$ 的波长拉伸至少 4 倍（在 float64 舍入误差内，即下面代码里的 $10^{-15}$），所以在 $4L$ 之内，这些对仍停留在训练时的角度范围内；而 $s$ 固定时，只有频率最低的一对得到完整的因子。

# %%
for name in ["linear", "dynamic", "yarn", "llama3"]:
    assert (wavelength[name][default > L] >= FACTOR * default[default > L] * (1 - 1e-15)).all(), name

# %% [markdown]
# **LongRoPE**（Ding et al. 2024，[arXiv 2402.13753](https://arxiv.org/abs/2402.13753)）把每个频率除以它自己的因子，这些因子通过搜索得到：
# 序列长度不超过 $L$ 时用 `short_factor`，超过时用 `long_factor`，另有注意力因子 $a = \sqrt{1 + \ln s / \ln L}$。
# 公开发布的因子列表不一定从 1 开始，所以 LongRoPE 可能连频率最高的一对也会放慢。
# 微软 Phi-3-vision-128k-instruct 的配置（头大小 96，$L = 4096$，131072 个位置，所以 $s = 32$）有 48 个 long 因子，从 1.03 到 64.81：

# %%
PHI3_VISION_LONG_FACTOR = [  # rounded to 2 decimals (the config stores their float32 values)
    1.03, 1.05, 1.05, 1.08, 1.23, 1.23, 1.30, 1.45, 1.60, 1.65, 1.90, 2.86, 3.69, 5.42, 5.49, 5.49,
    9.09, 11.58, 15.66, 15.77, 15.79, 18.36, 21.99, 23.08, 30.01, 32.35, 32.59, 35.56, 39.95, 53.84, 56.20, 57.95,
    59.29, 59.77, 59.92, 61.19, 61.96, 62.50, 63.37, 63.48, 63.48, 63.66, 63.85, 64.08, 64.76, 64.80, 64.81, 64.81,
]
phi3 = dict(long_factor=PHI3_VISION_LONG_FACTOR, short_factor=[1.0] * 48,  # short: used up to L only, not the config's
            original_max_position_embeddings=4096, max_position_embeddings=131072, seq_len=131072)
w_phi3, a_phi3 = posenc.rotary_frequencies(96, rope_type="longrope", **phi3)
w_96 = posenc.rotary_frequencies(96)[0]
assert np.isclose(w_96[0] / w_phi3[0], 1.03, rtol=1e-15), "the fastest pair slowed by its factor 1.03"
print(f"fastest pair: wavelength {2 * np.pi / w_96[0]:.3f} -> {2 * np.pi / w_phi3[0]:.3f}; attention factor {a_phi3:.4f}")

# %% [markdown]
# ## 5. 长位置上的精度
#
# 角度 $p\,w_j$ 随位置增长，而大小为 $p\,w_j$ 的浮点数，精确程度受限于它最后一位的大小。
# 除了 float32，模型还会用两种 16 位格式运行：float16（IEEE 半精度：11 个有效位，最大值 65504）和 [bfloat16](https://en.wikipedia.org/wiki/Bfloat16_floating-point_format)（Google 的“brain float”：范围与 float32 相同，但只有 8 个有效位）。
# 下面把三份公开的问题报告缩小规模复现出来。
#
# **float16 的 cos 表和 sin 表**（[EleutherAI/gpt-neox issue 1003](https://github.com/EleutherAI/gpt-neox/issues/1003)）：头大小为 32 时，第 1 对在位置 1857 的角度应为 1044.27；
# 在 float16 中却得到 1045，而在整张表的 2048 个位置上，余弦的误差最大可达 0.78。

# %%
def float32_frequencies(head_dim, base=10000.0):
    """inv_freq as transformers and GPT-NeoX compute it: float32, 1 / base ** (2j / d)."""
    return 1.0 / (base ** (torch.arange(0, head_dim, 2, dtype=torch.int64).float() / head_dim))


inv_freq = float32_frequencies(32)
angles_fp32 = torch.outer(torch.arange(2048).float(), inv_freq)
angles_fp16 = torch.outer(torch.arange(2048).half(), inv_freq.half())
error_fp16 = (angles_fp16.cos().float() - angles_fp32.cos()).abs()
print(f"angle of pair 1 at 1857: {angles_fp32[1857, 1].item():.2f} in float32, {angles_fp16[1857, 1].item():.0f} in float16; "
      f"largest cos error {error_fp16.max().item():.2f}")

# %% [markdown]
# posenc 以更高的精度计算角度，只把 cos 和 sin 舍入到所要求的 dtype。
# 它的承诺是：每个值与某个“距精确值不超过 2e-7 的值”之间，相差不超过一次 float16 舍入（$2^{-12}$，即对大小不超过 1 的值而言，最后一位单位的一半）。

# %%
cos16, _ = posenc.torch.rotary_cos_sin(torch.arange(2048), 32, dtype=torch.float16)
exact = np.cos(np.outer(np.arange(2048), posenc.rotary_frequencies(32)[0]))
posenc_error_fp16 = np.abs(cos16[:, :16].double().numpy() - exact).max()
print(f"posenc in float16, same table: largest error {posenc_error_fp16:.1e}")
assert posenc_error_fp16 <= 2.0**-12 + 2e-7, "one float16 rounding of a value within 2e-7"

# %% [markdown]
# **inv_freq 被舍入为 bfloat16**（[sgl-project/sglang-jax issue 1472](https://github.com/sgl-project/sglang-jax/issues/1472)，SGLang 推理服务引擎的 JAX 移植版）：频率在与 float32 的位置相乘之前，就被转换成了模型的 bfloat16。
# bfloat16 只保留 8 个有效位，所以每个 $w_j$ 的相对变化最多为 1/256。
# 在位置 4095，这对第 0 对的角度（$w_0 = 1$，在 bfloat16 中是精确的）毫无影响，却让其他对的角度偏离多达 5 弧度，几乎是一整圈：

# %%
w128 = posenc.rotary_frequencies(128)[0]  # float64
w128_bf16 = float32_frequencies(128).bfloat16().double().numpy()
angle_error = np.abs(4095 * w128_bf16 - 4095 * w128)
print(f"angle error at 4095: pair 0 {angle_error[0]:.0f}, largest {angle_error.max():.1f} rad")
assert np.abs(w128_bf16 / w128 - 1).max() <= 2.0**-8, "each frequency within 1 part in 256"

# %%
cos_sin_error = np.abs(np.concatenate([np.cos(4095 * w128_bf16) - np.cos(4095 * w128),
                                       np.sin(4095 * w128_bf16) - np.sin(4095 * w128)]))
print(f"of the 128 values of cos and sin at position 4095, {(cos_sin_error > 0.01).sum()} are off by more than 0.01,")
print(f"the worst by {cos_sin_error.max():.2f}")

# %% [markdown]
# **全部用 bfloat16**（[huggingface/candle pull request 3520](https://github.com/huggingface/candle/pull/3520)；candle 是 Hugging Face 用 Rust 编写的机器学习框架）：
# candle 的 Qwen2 模型把 `inv_freq` *和*位置都转换为模型的 dtype（bfloat16），相乘后在 bfloat16 下求 sin 和 cos；该 pull request 把这些计算全部放在 float32 中完成，只对结果做类型转换。
# 位置一旦用半精度类型表示，就已经被舍入了。在 $2^k$ 与 $2^{k+1}$ 之间，float16（11 个有效位）只能表示每隔 $2^{k-10}$ 的整数，bfloat16（8 位）只能表示每隔 $2^{k-7}$ 的整数：
# 从 16 384 到 32 768，分别是每 16 个和每 128 个取一个；从 32 768 到 65 536，分别是每 32 个和每 256 个取一个。
# float16 的上限是 65 504：更大的位置会舍入为 65 504，从 65 520 起则变为无穷大。bfloat16 的范围与 float32 相同，所以 15 962 会变成 15 936，但不会溢出。

# %%
def spacing(start, stop, dtype):
    """The gaps between the integers of [start, stop] that survive a round trip through dtype."""
    values = torch.arange(start, stop + 1, dtype=torch.float64)
    return torch.diff(values[values.to(dtype).double() == values]).unique().tolist()


for start in [2048, 8192, 16384, 32768]:
    power = int(np.log2(start))  # start = 2^power
    gaps = spacing(start, 2 * start, torch.float16), spacing(start, 2 * start, torch.bfloat16)
    print(f"{start:>6} to {2 * start:>6}: integers in steps of {gaps[0][0]:.0f} in float16, {gaps[1][0]:.0f} in bfloat16")
    assert gaps == ([2 ** (power - 10)], [2 ** (power - 7)]), "11 and 8 significant bits"

# %% [markdown]
# **posenc 的误差随位置的变化。** transformers 在 float32 中计算这张表：Llama 的旋转编码模块（以及照搬它的许多模型）把 `position_ids[..., None].float()` 与 `inv_freq` 逐元素相乘，再求 cos 和 sin，即下面的第一条路线（这里用 `torch.outer`：乘积相同）。
# posenc 用两个 float64 数来表示每个角度（有效数字大约是 float64 的两倍），并承诺：在 float32 中，cos 和 sin 与精确值相差不超过 2e-7；在 float16 和 bfloat16 中，与这样一个值相差不超过一次舍入。
# 我们与用 [mpmath](https://mpmath.org)（Python 的任意精度浮点运算库）以 40 位有效数字算出的参考值比较，位置从 1 到 $10^6$，头大小 128，覆盖全部 64 对：

# %%
sample = np.unique(np.geomspace(1, 1e6, 49).round()).astype(np.int64)
with mpmath.workdps(40):  # the frequencies too: at mpmath's default precision they would carry float64's rounding
    w_exact = [mpmath.mpf(10000) ** (-mpmath.mpf(2 * j) / 128) for j in range(64)]
    exact_cos = np.array([[float(mpmath.cos(int(p) * w)) for w in w_exact] for p in sample])
    exact_sin = np.array([[float(mpmath.sin(int(p) * w)) for w in w_exact] for p in sample])


def worst_error(cos, sin):
    """Largest |error| of cos and sin (positions, 64) at each sampled position."""
    cos, sin = (torch.as_tensor(t).double().numpy() for t in (cos, sin))
    return np.maximum(np.abs(cos - exact_cos), np.abs(sin - exact_sin)).max(axis=1)


# %% [markdown]
# 四条 transformers 式的计算路线（float32，以及把一部分或全部计算换成 bfloat16 的三种变体），再加上 posenc 的路线：

# %%
def float32_route(positions_dtype=torch.float32, inv_freq_dtype=torch.float32, dtype=torch.float32):
    """cos, sin from positions and inv_freq rounded to their dtypes, multiplied and turned in dtype."""
    inv_freq = float32_frequencies(128).to(inv_freq_dtype).to(dtype)
    angles = torch.outer(torch.from_numpy(sample).to(positions_dtype).to(dtype), inv_freq)
    return angles.cos(), angles.sin()


def posenc_route(dtype):
    cos, sin = posenc.torch.rotary_cos_sin(torch.from_numpy(sample), 128, dtype=dtype)
    return cos[:, :64], sin[:, :64]


# %%
errors = {
    "float32 (transformers)": worst_error(*float32_route()),
    "inv_freq in bfloat16": worst_error(*float32_route(inv_freq_dtype=torch.bfloat16)),
    "positions in bfloat16": worst_error(*float32_route(positions_dtype=torch.bfloat16)),
    "all in bfloat16 (candle before 3520)": worst_error(*float32_route(torch.bfloat16, torch.bfloat16, torch.bfloat16)),
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
# posenc 在直到 $10^6$ 的每个采样位置上都兑现了承诺：float32 下误差在 2e-7 以内；bfloat16 下在其最后一位单位的一半（对大小不超过 1 的值为 $2^{-9}$）加 2e-7 以内。
# float32 路线在 $10^5$ 处误差约为 5e-3，在 $10^6$ 处约为 5e-2（表中保留一位有效数字），并且从 $10^5$ 起的每个采样位置上误差都超过 1e-3；
# 如果频率或位置用 bfloat16，或者全部用 bfloat16，到位置 4096 时误差就已达到 cos 和 sin 本身的大小（超过 0.5）。

# %%
print(f"{'position':>36}" + "".join(f"{p:>11,}" for p in [10**3, 10**4, 10**5, 10**6]))
for name, error in errors.items():
    print(f"{name:>36}" + "".join(f"{error[sample == p][0]:11.1e}" for p in [10**3, 10**4, 10**5, 10**6]))
assert errors["posenc, float32"].max() <= 2e-7, "posenc's float32 promise"

# %% [markdown]
# ## 6. 放进 Transformer：复制前一个词元
#
# 笔记本 07 的任务：每条序列有 12 个词元，每个都从 16 个词元中随机抽取；模型要在每个位置输出它左边一位的词元（位置 0 不计分）。
# 辅助函数都来自笔记本 07，已在上面从 `posenc.lessons` 导入：`copy_previous_task`、`accuracy`、`order_blind_ceiling`、`train`、`predict`、`first_step_above` 和 `LearnedPositions`。

# %%
assert (VOCAB, TRAIN_LENGTH) == (16, 12), "notebook 07's task"
test_sets = {n: copy_previous_task(np.random.default_rng(n), 1000, n) for n in [TRAIN_LENGTH, 24, 48]}
ceilings = {n: order_blind_ceiling(tokens) for n, (tokens, _) in test_sets.items()}

# %% [markdown]
# PyTorch 的 `nn.TransformerEncoderLayer` 不让我们接触查询和键，所以我们自己分两步写出同样的层（post-norm 结构，4 个 8 通道的头，前馈层宽 64，ReLU，不用 dropout）。
# `self_attention` 把输入投影为查询、键和值，把每一个拆成 4 个头；如果传入了旋转编码模块，就用 RoPE 旋转查询和键；然后计算注意力。
# RoPE 的 cos 和 sin 来自 `posenc.torch.RotaryEmbedding`，这个模块与 transformers 的旋转编码模块类似：`forward(x, position_ids)` 返回 `(cos, sin)`。
# 它是为单个头构建的（`HEAD_DIM` = 8），所以频率是 $10000^{-2j/8}$ = 1, 0.1, 0.01, 0.001，而不是按 `d_model` = 32 算出的频率；每个头都使用相同的 cos 和 sin。

# %%
D_MODEL, HEADS = 32, 4
HEAD_DIM = D_MODEL // HEADS


def heads(t):
    """(batch, length, D_MODEL) -> (batch, HEADS, length, HEAD_DIM): the channels of each head."""
    return t.view(*t.shape[:2], HEADS, HEAD_DIM).transpose(1, 2)


assert np.allclose(posenc.torch.RotaryEmbedding(HEAD_DIM).inv_freq.numpy(), [1, 0.1, 0.01, 0.001], rtol=1e-15)


# %%
def self_attention(x, qkv, out, rotary=None):
    """Multi-head self-attention of x (batch, length, D_MODEL); `rotary` (if given) turns q and k."""
    q, k, v = (heads(t) for t in qkv(x).chunk(3, dim=-1))
    if rotary is not None:
        cos, sin = rotary(q, torch.arange(x.shape[1])[None])  # (1, length, HEAD_DIM)
        cos, sin = cos[:, None], sin[:, None]  # (1, 1, length, HEAD_DIM): the same for every head
        q, k = posenc.torch.apply_rotary(q, cos, sin), posenc.torch.apply_rotary(k, cos, sin)
    attended = nn.functional.scaled_dot_product_attention(q, k, v)  # (batch, HEADS, length, HEAD_DIM)
    return out(attended.transpose(1, 2).flatten(2))


# %% [markdown]
# 这个层先把注意力的输出加到输入上再做归一化，然后对前馈网络做同样的事。四个模型都用这个层；另外三个模型像笔记本 07 那样，把各自的位置编码加到词元嵌入上。

# %%
class EncoderLayer(nn.Module):
    def __init__(self, rotary=None):
        super().__init__()
        self.qkv, self.out = nn.Linear(D_MODEL, 3 * D_MODEL), nn.Linear(D_MODEL, D_MODEL)
        self.norm1, self.norm2 = nn.LayerNorm(D_MODEL), nn.LayerNorm(D_MODEL)
        self.feed_forward = nn.Sequential(nn.Linear(D_MODEL, 64), nn.ReLU(), nn.Linear(64, D_MODEL))
        self.rotary = rotary  # a posenc.torch.RotaryEmbedding, or None

    def forward(self, x):
        x = self.norm1(x + self_attention(x, self.qkv, self.out, self.rotary))
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
    layer = EncoderLayer(posenc.torch.RotaryEmbedding(HEAD_DIM) if positions == "rotary" else None)
    return nn.Sequential(nn.Embedding(VOCAB, D_MODEL), ADDED[positions](), layer, nn.Linear(D_MODEL, VOCAB))


# %% [markdown]
# 训练方式同笔记本 07：用 Adam 优化器训练 300 步，每批 64 条新生成的序列；所有模型使用相同的序列，顺序也相同。

# %%
assert (STEPS, BATCH) == (300, 64), "notebook 07's training run"
train_tokens, train_targets = copy_previous_task(np.random.default_rng(1), STEPS * BATCH, TRAIN_LENGTH)
models = {name: tiny_transformer(name) for name in ADDED}
curves = {name: train(model, train_tokens, train_targets, steps=STEPS)[1] for name, model in models.items()}

# %% [markdown]
# 在 1000 条新序列上测准确率，序列长度分别为训练长度及其两倍和四倍，并按位置分开统计：小于 12 的位置（训练中见过）和从 12 起的位置（从未见过）。
# 可学习的位置表在位置 11 之后没有行，所以这个模型只在长度 12 上运行。

# %%
def accuracy_by_position(model, tokens, targets):
    return (predict(model, tokens)[:, 1:] == targets[:, 1:]).mean(axis=0)  # positions 1..length-1


by_position = {(name, n): accuracy_by_position(model, *test_sets[n]) for name, model in models.items()
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
# 在训练长度上，三种位置方法都解决了任务（准确率高于 0.9），而没有位置信息的模型与不看顺序所能达到的上限相差不到 0.05。
# 超出训练长度后，正弦模型在从未见过的位置上失败了（低于 0.5），与笔记本 07 一样。
# RoPE 模型在四倍长的序列的每个位置上都高于 0.95：它只需关注偏移量 −1，而用了 RoPE，这个偏移量的分数在每个位置上都相同。

# %%
assert (by_position["rotary", 48] > 0.95).all(), "RoPE at every position of 4 times the training length"

# %%
fig, ax = plt.subplots(figsize=(9, 3.5))
for name in ["none", "sinusoidal", "rotary"]:
    ax.plot(range(1, 48), by_position[name, 48], color=COLORS[name], marker=".", label=f"{name}, length 48")
ax.axvline(TRAIN_LENGTH - 0.5, color="gray", linestyle="--", label="training length")
ax.set(xlabel="position", ylabel="accuracy", ylim=(0, 1.05), title="copy the previous token, 4 times the training length")
ax.legend()
plt.show()

# %% [markdown]
# ### 八倍训练长度，以及两条频率规则
#
# 在 96 个词元时，RoPE 模型在 34 到 63 的每个位置上都答对了（高于 0.99），在其他位置则差得多（平均低于 0.7）。
# 问题出在其他偏移量上：第 1 对的波长是 $2\pi \cdot 10 \approx 62.8$，因此往回 64 位或往前 62 位的键，在两个高频对上转过的角度，与相邻词元的转角相差都不到 0.17 rad（在第 2、3 对上，两者分别相差 0.63 和 0.063 rad），模型就把两者搞混了。
# 位置 1 到 33 都有一个往前 62 位的键，位置 64 到 95 都有一个往回 64 位的键，而介于两者之间的位置都没有。

# %%
long_test = copy_previous_task(np.random.default_rng(96), 1000, 96)
at_96 = {"default": accuracy_by_position(models["rotary"], *long_test)}  # index i: position i + 1
aliased = np.r_[0:33, 63:95]  # positions 1..33 and 64..95
assert at_96["default"][33:63].min() > 0.99, "right at every position with no aliased key"

w_head = posenc.rotary_frequencies(HEAD_DIM)[0]
for offset in (62, -64):
    turn = np.abs(np.angle(np.exp(1j * (offset - (-1)) * w_head)))  # angle between the turns of the two offsets
    print(f"offset {offset:>3} against -1: the turns differ by {np.round(turn, 3)} rad in pairs 0..3")

# %% [markdown]
# 以 4 为因子的 NTK-aware 缩放（底数变为 $10000 \cdot 4^{8/6}$）让第 0 对保持原样，把第 1 对的波长拉伸到约 99.7，比序列还长。
# 把它换进训练好的模型，无需任何训练，就能让长度 96 上每个位置的准确率都超过 0.9，同时训练长度上的准确率仍高于 0.99。

# %%
ntk_model = copy.deepcopy(models["rotary"])  # a copy: models["rotary"] stays as trained
ntk_model[2].rotary = posenc.torch.RotaryEmbedding(HEAD_DIM, base=10000 * 4 ** (HEAD_DIM / (HEAD_DIM - 2)))
print(f"pair 1's wavelength: {2 * np.pi / ntk_model[2].rotary.inv_freq[1].item():.1f}")
at_96["NTK-aware, s = 4"] = accuracy_by_position(ntk_model, *long_test)
assert at_96["NTK-aware, s = 4"].min() > 0.9, "NTK-aware scaling, no training: every position of 96"

# %%
fig, ax = plt.subplots(figsize=(9, 3))
for name, accuracies in at_96.items():
    ax.plot(range(1, 96), accuracies, marker=".", label=f"RoPE, {name}")
ax.axvline(TRAIN_LENGTH - 0.5, color="gray", linestyle="--", label="training length")
ax.set(xlabel="position", ylabel="accuracy", ylim=(0, 1.05), title="copy the previous token, 8 times the training length")
ax.legend()
plt.show()

# %% [markdown]
# 位置插值（`rope_type="linear"`）把频率除以一个因子，相当于把位置除以这个因子，于是两倍长的序列转过的角度就和训练长度的序列一样（位置 0 到 23 变成 0 到 11.5）。
# 它也改变了偏移量：相邻位置现在只相隔半个位置，这在每一对上都是模型从未见过的角度。
# 以因子 2 把它用到训练好的 RoPE 模型的副本上，不再训练，模型就坏了（低于 0.5），连在训练长度上也是如此。
# 用插值后的位置在 50 批长度为 24 的序列上微调，就能在每个长度上修好它（高于 0.95），而且训练批量上的准确率超过 0.9 所需的步数，比模型从头训练时更少。

# %%
interpolated = copy.deepcopy(models["rotary"])  # fine-tuned below; models["rotary"] stays as trained
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
assert first_step_above(fine_tuning) < first_step_above(curves["rotary"]), "fine-tuning is quicker than training"

# %% [markdown]
# ## 小结
#
# - 加上的位置向量会在每个注意力分数中引入“内容·位置”交叉项，因此两个词元的分数取决于它们所处的位置，而不只是它们之间的距离。
# - RoPE 用 $R(p\,w)$ 旋转每个头的查询和键，它是按该头的频率做 2×2 旋转的分块对角矩阵；于是分数只依赖于偏移量，精确到 float64 舍入误差。
# - interleaved 布局（Meta 参考代码、GPT-J、CodeGen、Cohere、GLM）和 half 布局（GPT-NeoX、Llama 及大多数 transformers 模型）配对的通道不同；逐个头置换 $W_q$、$W_k$ 的行，就能在两者之间精确地转换检查点。
# - 为了更长的上下文：位置插值放慢每一对；NTK-aware 缩放和 `dynamic` 增大底数；YaRN 和 `llama3` 只拉伸低频对；LongRoPE 按每一对各自的因子缩放（Phi-3-vision 的第一个因子是 1.03）；YaRN 和 LongRoPE 还会把每个分数乘以 $a^2$。
# - 长位置的角度需要比 float16 或 bfloat16 更高的精度，而 float32 在位置 $10^5$ 处误差约为 5e-3；posenc 在 float32 下直到 $10^6$ 误差都在 2e-7 以内。
# - 在复制任务上，RoPE 是唯一在四倍训练长度上依然表现良好的位置方法；到了八倍长度，NTK-aware 缩放无需训练就能修好它，位置插值则需要一次简短的微调。
#
# ## 练习
#
# 每道练习都有一个检查，会告诉你哪里错了。卡住时，`nb08.<exercise>.hint()` 给出提示，`nb08.<exercise>.solution()` 打印参考答案的代码。

# %%
from posenc.exercises import nb08

# %% [markdown]
# ### 练习 1 · 手工旋转一个查询（half 布局）
#
# 取一个 8 通道的头，查询 $q = (1, 2, \dots, 8)$，位于位置 3。按 transformers 中 Llama 的方式旋转它（第 3 节）：`q * cos + rotate_half(q) * sin`，其中角度 $3\,w_j$ 的 cos 和 sin 按 half 布局排列。
# 只用 `torch`（不用 posenc）。下面的草稿有一处错误，检查会指出它。

# %%
q8 = torch.arange(1.0, 9.0, dtype=torch.float64)
angles8 = 3 * 10000.0 ** (-torch.arange(0, 8, 2, dtype=torch.float64) / 8)  # 3 w_j, j = 0..3
cos8, sin8 = torch.cat((angles8, angles8)).cos(), torch.cat((angles8, angles8)).sin()
first, second = q8.chunk(2)
my_rotated_q = q8 * cos8 + torch.cat((second, -first)) * sin8  # x * cos + rotate_half(x) * sin

# %%
nb08.rotated_query.check(my_rotated_q)

# %% [markdown]
# ### 练习 2 · 把 Meta 的权重转换到 half 布局
#
# Meta 的 interleaved 布局的检查点有 `heads` 个头，每个头有 `head_dim` 个通道。写出 `half_rows(heads, head_dim)`：它返回行顺序 `perm`，使得 `W_q[perm]` 和 `W_k[perm]` 配合 `rotate_half` 给出相同的分数（第 3 节）。
# 请自己推导，不要调用 `posenc.rotary_permutation`；检查会尝试 4 个 8 通道的头和 2 个 16 通道的头。

# %%
def half_rows(heads, head_dim):
    rows = np.arange(heads * head_dim).reshape(heads, 2, head_dim // 2)
    return rows.transpose(0, 2, 1).reshape(-1)


# %%
nb08.half_rows.check(half_rows)

# %% [markdown]
# ### 练习 3 · llama3 规则下某一对的波长
#
# Llama 3.1 的头有 128 个通道，底数为 500000，它的 `llama3` 规则使用 $s = 8$、`low_freq_factor` 1、`high_freq_factor` 4 和 $L = 8192$（第 4 节）。
# 经过这条规则之后，第 $j = 32$ 对的波长是多少个位置？用第 4 节的公式手工计算（用 NumPy 或 `math`，不用 posenc）；草稿还差一步。

# %%
w32 = 500000.0 ** (-2 * 32 / 128)
wavelength32 = 2 * np.pi / w32
my_wavelength = 2 * np.pi / (w32 / 8)

# %%
nb08.llama3_wavelength.check(my_wavelength)

# %% [markdown]
# ## 交叉检查
#
# 先是一批检查，验证上文中那些教学单元格没有自行断言的说法；然后把 NumPy 和 TensorFlow 与 PyTorch 对照。

# %%
# Cross-checks of sections 1 to 3
# 1. The four terms add up; content and position terms equal, mixed terms and scores not.
for terms in (near, far):
    assert np.isclose(terms["content"] + terms["content·position"] + terms["position"], terms["score"], rtol=1e-12)
assert near["content"] == far["content"]
assert not np.isclose(near["content·position"], far["content·position"]) and not np.isclose(near["score"], far["score"])
assert not np.isclose(projected_position_term(5, 2), projected_position_term(105, 102))
# 2. posenc's rotation is the matrix and keeps lengths; the added table's score wanders.
torch.testing.assert_close(rotated_q[5], rotation_matrix(5) @ q, rtol=0, atol=1e-13)
torch.testing.assert_close(rotated_q.norm(dim=-1), q.norm().expand(64), rtol=1e-14, atol=0)
assert np.ptp(added) > 1e6 * np.ptp(rotary)
# 3. The frequencies of a head of 8; the row order is the sinusoidal column permutation; unpermuted is wrong.
assert np.allclose(w8, [1, 0.1, 0.01, 0.001], rtol=1e-15)
assert (perm[:HEAD_DIM] == posenc.layout_permutation(HEAD_DIM, "interleaved", "sin_cos")).all()
assert not torch.allclose(unpermuted, reference)

# %%
# Cross-checks of section 4, NTK-aware, dynamic and YaRN
# NTK-aware: w_j s^(-2j/(d-2)), the slowest pair divided by s, pair 1 by 2.2%; dynamic at L is the default.
assert np.allclose(wavelength["NTK-aware"], default * FACTOR ** (2 * pairs / (HEAD - 2)), rtol=1e-13)
assert np.isclose(wavelength["NTK-aware"][-1], FACTOR * default[-1], rtol=1e-13)
assert round(wavelength["NTK-aware"][1] / default[1], 3) == 1.022
at_L = posenc.rotary_frequencies(HEAD, rope_type="dynamic", **{**dynamic, "seq_len": L})[0]
assert np.array_equal(2 * np.pi / at_L, default)
#    YaRN: the slow pairs divided by s, a = 0.1 ln s + 1.
assert np.allclose(wavelength["yarn"][turns < 1], FACTOR * default[turns < 1], rtol=1e-15)
assert np.isclose(a, 0.1 * np.log(FACTOR) + 1, rtol=1e-15)

# %%
# Cross-checks of section 4, llama3, NTK-aware against s, LongRoPE
# llama3: kept below L/4, stretched above L, between the two; both factors 1 make a step at L.
assert (wavelength["llama3"][keep] == default[keep]).all()
assert np.allclose(wavelength["llama3"][stretch], FACTOR * default[stretch], rtol=1e-15)
assert between.any() and (default[between] < wavelength["llama3"][between]).all()
assert (wavelength["llama3"][between] < FACTOR * default[between]).all()
step = 2 * np.pi / posenc.rotary_frequencies(HEAD, rope_type="llama3", **{**llama3, "high_freq_factor": 1})[0]
assert (step[default < L] == default[default < L]).all()
assert np.allclose(step[default > L], FACTOR * default[default > L], rtol=1e-15)
#    NTK-aware with a fixed s stretches all but the slowest long wavelength less than s; all but linear keep pair 0.
assert (wavelength["NTK-aware"][default > L][:-1] < FACTOR * default[default > L][:-1]).all()
for name in ["NTK-aware", "dynamic", "yarn", "llama3"]:
    assert wavelength[name][0] == default[0], name
#    LongRoPE: 48 factors up to 64.81, the fastest pair slowed, a = sqrt(1 + ln s / ln L).
assert len(PHI3_VISION_LONG_FACTOR) == 48 and PHI3_VISION_LONG_FACTOR[-1] == 64.81 and w_phi3[0] < w_96[0]
assert np.isclose(a_phi3, np.sqrt(1 + np.log(32) / np.log(4096)), rtol=1e-15)

# %%
# Cross-checks of section 5: the gpt-neox report's numbers; 5 rad at 4095; float16's end and bfloat16's rounding.
assert round(angles_fp32[1857, 1].item(), 2) == 1044.27 and angles_fp16[1857, 1].item() == 1045
assert round(error_fp16.max().item(), 2) == 0.78
assert angle_error[0] == 0 and round(angle_error.max()) == 5
assert torch.tensor([65519.0, 65520.0]).half().tolist() == [65504.0, float("inf")]
assert torch.tensor(15962.0).bfloat16().item() == 15936
#    posenc's bfloat16 promise; the float32 route to one significant digit, and above 1e-3 from 1e5 on;
#    any bfloat16 in the route reaches 0.5 by position 4096.
assert errors["posenc, bfloat16"].max() <= 2.0**-9 + 2e-7
float32_error = errors["float32 (transformers)"]
assert f"{float32_error[sample == 10**5][0]:.0e}" == "5e-03" and f"{float32_error[sample == 10**6][0]:.0e}" == "5e-02"
assert (float32_error[sample >= 1e5] > 1e-3).all()
for name in ["inv_freq in bfloat16", "positions in bfloat16", "all in bfloat16 (candle before 3520)"]:
    assert errors[name][sample <= 4096].max() > 0.5, name

# %%
# Cross-checks of section 6 and of the exercises
# 6. The copy task: the claims of the prose, each bound as stated there.
for name in ["learned", "sinusoidal", "rotary"]:
    assert by_position[name, 12].mean() > 0.9, name
assert abs(by_position["none", 12].mean() - ceilings[12]) < 0.05
assert by_position["sinusoidal", 24][unseen].mean() < 0.5 and by_position["sinusoidal", 48][unseen].mean() < 0.5
assert (by_position["rotary", 24] > 0.95).all()
assert at_96["default"][aliased].mean() < 0.7
assert round(2 * np.pi / w_head[1], 1) == 62.8
for offset in (62, -64):
    turn = np.abs(np.angle(np.exp(1j * (offset - (-1)) * w_head)))
    assert (turn[:2] < 0.17).all() and np.allclose(turn[2:], [0.63, 0.063], rtol=1e-12), offset
assert ntk_model[2].rotary.inv_freq[0] == 1 and round(2 * np.pi / ntk_model[2].rotary.inv_freq[1].item(), 1) == 99.7
assert accuracy_by_position(ntk_model, *test_sets[12]).mean() > 0.99
assert all(before[n] < 0.5 for n in test_sets) and all(after[n] > 0.95 for n in test_sets)
# The exercises' reference answers agree with posenc.
assert nb08.rotated_query.check(posenc.torch.apply_rotary(q8, *posenc.torch.rotary_cos_sin(torch.tensor([3]), 8, dtype=torch.float64))[0])
assert nb08.half_rows.check(lambda heads, head_dim: posenc.rotary_permutation(head_dim, "interleaved", "half", heads=heads))
llama31 = dict(factor=8, low_freq_factor=1, high_freq_factor=4, original_max_position_embeddings=8192)
assert nb08.llama3_wavelength.check(2 * np.pi / posenc.rotary_frequencies(128, 500000.0, rope_type="llama3", **llama31)[0][32])

# %% [markdown]
# `posenc`（NumPy）和 `posenc.tensorflow` 中也有同样的函数，`posenc.tensorflow.RotaryEmbedding` 是与 PyTorch 模块相当的 Keras 层：YaRN 的 cos 和 sin 逐位相同，旋转后的向量在 float32 舍入误差内一致。
# TensorFlow 在加载时会读取两个环境变量，所以要先设置它们。

# %%
# Cross-checks: NumPy and TensorFlow against PyTorch, YaRN's cos and sin and the rotated vectors
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")
import tensorflow as tf
import posenc.tensorflow

positions = np.array([[0, 1, 4095, 65536, 999_999]])
x = np.random.default_rng(4).standard_normal((1, 5, 64)).astype(np.float32)
cos_sin = {
    "numpy": posenc.rotary_cos_sin(positions, 64, rope_type="yarn", **yarn),
    "torch": posenc.torch.RotaryEmbedding(64, rope_type="yarn", **yarn)(torch.from_numpy(x), torch.from_numpy(positions)),
    "tensorflow": posenc.tensorflow.RotaryEmbedding(64, rope_type="yarn", **yarn)(tf.constant(x), tf.constant(positions)),
}
rotated = {
    "numpy": posenc.apply_rotary(x, *cos_sin["numpy"]),
    "torch": posenc.torch.apply_rotary(torch.from_numpy(x), *cos_sin["torch"]).numpy(),
    "tensorflow": posenc.tensorflow.apply_rotary(tf.constant(x), *cos_sin["tensorflow"]).numpy(),
}
for name in ["torch", "tensorflow"]:
    for ours, theirs in zip(cos_sin["numpy"], cos_sin[name]):
        np.testing.assert_array_equal(np.asarray(theirs), ours)
    np.testing.assert_allclose(rotated[name], rotated["numpy"], rtol=0, atol=1e-6)

# %% [markdown]
# 本次运行耗时：

# %%
# NBVAL_IGNORE_OUTPUT
print(f"{time.perf_counter() - started:.0f} s")
