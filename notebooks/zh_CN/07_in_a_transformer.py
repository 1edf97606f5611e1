# %% [markdown]
# # 07 · 小型 Transformer 中的正弦位置编码：在 PyTorch 和 Keras 中训练
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/posenc-org/posenc/blob/main/notebooks/zh_CN/07_in_a_transformer.ipynb)
#
# 究竟为什么要把一张正弦和余弦的表加到嵌入上？因为没有它，Transformer 就无法区分输入的一种顺序和另一种顺序。
# 我们先在单个编码器层上直接展示这一点，然后在一个完全取决于顺序的任务上，用三种方式训练一个小型 Transformer：
# 不用位置信息、用可学习的位置嵌入、用正弦位置编码。接着，我们在比训练时见过的任何序列都长的序列上测试训练好的模型，
# 并在 Keras 中重复这一比较。这些模型足够小，在笔记本电脑的 CPU 上就能训练。
#
# **问题：** Transformer 到底为什么需要位置信息？正弦位置编码表能为一个训练好的小模型做些什么？
#
# **学完本节，你将能够：**
# - 说明没有位置信息的自注意力是置换等变的，而加上这张表就打破了这种对称性；
# - 以 $\sqrt{d_{model}}$ 的缩放把表加到一批嵌入上；
# - 比较分别用无位置、可学习位置和正弦位置训练的小型 Transformer，在 PyTorch 和 Keras 中都做一遍；
# - 说清楚一个在每个位置上都有定义的公式，在训练长度之外能带来什么、不能带来什么。
#
# **先修：** 笔记本 01 和 02 · **时间：** 约 40 分钟

# %%
# On Colab, install posenc from GitHub; elsewhere `make lab` has already installed it.
import sys

if "google.colab" in sys.modules:
    # %pip install --quiet "posenc @ git+https://github.com/posenc-org/posenc@main"

# %% [markdown]
# 单线程加上确定性算法，使同一台机器上的每次运行都能精确重现；
# 计时器测量本笔记本的运行时间，在最后打印出来。

# %%
# %matplotlib inline
import inspect
import time

import matplotlib.pyplot as plt
import numpy as np
import torch
from torch import nn

import posenc.torch
from posenc import lessons
from posenc.lessons import (
    BATCH, IGNORE, STEPS, TRAIN_LENGTH, VOCAB, LearnedPositions, accuracy, copy_previous_task, first_step_above,
    order_blind_ceiling, predict, train,
)

torch.set_num_threads(1)
torch.use_deterministic_algorithms(True)
torch.manual_seed(0)
started = time.perf_counter()

# %% [markdown]
# ## 1. 没有位置信息，顺序就不可见
#
# Transformer 编码器层（PyTorch 的 `nn.TransformerEncoderLayer`）通过
# [自注意力](https://d2l.ai/chapter_attention-mechanisms-and-transformers/self-attention-and-positional-encoding.html)
# 来混合一个序列中的向量：每个向量的输出是所有向量的加权平均，权重来自向量之间的相互比较。
# 然后它再对每个向量单独做变换。其中没有任何部分知道一个向量位于哪里。所以如果我们打乱输入，
# 输出也会以同样的方式被打乱：这个层是[*置换等变*](https://en.wikipedia.org/wiki/Equivariant_map)的，
# 即对每一种重排 $\sigma$ 都有 $f(x_{\sigma}) = f(x)_{\sigma}$。（是等变，而不是*不变*：
# 输出确实会改变，它们跟着各自的词元一起移动。）我们在一个随机的批量上检验这一点：2 个序列，每个序列 10 个向量，
# 使用评估模式且不用 dropout，这样这个层就是一个普通的函数。

# %%
D_MODEL = 32
layer = nn.TransformerEncoderLayer(D_MODEL, nhead=4, dim_feedforward=64, dropout=0.0, batch_first=True).eval()
x = torch.randn(2, 10, D_MODEL)
shuffle = torch.tensor([3, 7, 0, 9, 1, 5, 8, 2, 6, 4])

with torch.no_grad():
    out, out_of_shuffled = layer(x), layer(x[:, shuffle])
torch.testing.assert_close(out_of_shuffled, out[:, shuffle])  # layer(shuffled x) == shuffled layer(x)

# %% [markdown]
# 两者在舍入误差范围内一致（注意力内部的求和以另一种顺序进行），误差在
# `torch.testing.assert_close` 的 float32 容差之内：$10^{-5}$ 加上数值本身的 $1.3 \cdot 10^{-6}$ 倍。
# 先加上 `posenc.torch.PositionalEncoding`（笔记本 02）就打破了这种对称性：打乱之后，
# 现在位于位置 0 的向量得到的是位置 0 的编码，而不是它原来所在位置的编码。
# 这时打乱词元会改变这个层的计算结果，而且变化远远大于舍入误差：超过 0.1，是那个容差的一万倍。

# %%
add_positions = posenc.torch.PositionalEncoding(D_MODEL)
with torch.no_grad():
    out, out_of_shuffled = layer(add_positions(x)), layer(add_positions(x[:, shuffle]))
largest_change = (out_of_shuffled - out[:, shuffle]).abs().max().item()
print(f"largest change between layer(shuffled x) and shuffled layer(x): {largest_change:.1f}")
assert largest_change > 0.1, "more than round-off"

# %% [markdown]
# ## 2. 一个需要顺序的任务：复制前一个词元
#
# 每个输入是从 16 个词元中随机抽取的 12 个词元组成的序列；在每个位置上，模型必须输出它左边相邻的那个词元。
# 位置 0 没有左邻居，所以不计分（它的目标是 `IGNORE`，损失函数会跳过它）。
# 同一个 NumPy 随机数生成器为 PyTorch 模型和 Keras 模型提供数据。
#
# 这个任务和它的辅助函数放在 `posenc.lessons` 中（课程的脚手架代码，与库的 API 分开），
# 这样笔记本 08 就能用 RoPE 运行同一个任务：
# `copy_previous_task` 生成数据，`accuracy` 为预测打分，
# `order_blind_ceiling` 是对顺序无感知的模型所能达到的最好成绩（见下文），`train` 和
# `predict` 运行模型，`first_step_above` 读取学习曲线，`LearnedPositions`
# 是可学习的位置表。常量 `VOCAB`、`TRAIN_LENGTH` 和 `IGNORE` 分别是
# 16、12 和 -100。下面是数据的生成方式（开头几行检查参数）：

# %%
print(inspect.getsource(lessons.copy_previous_task))

# %%
assert (VOCAB, TRAIN_LENGTH, IGNORE) == (16, 12, -100)
tokens, targets = copy_previous_task(np.random.default_rng(0), 1, TRAIN_LENGTH)
print("tokens: ", tokens[0])
print("targets:", targets[0])

# %% [markdown]
# 没有位置信息时，模型在每个位置上看到的是它自己的词元和所有词元组成的*袋*（bag），
# 却看不到它们的顺序。它对左邻居的最好猜测，是袋中其他词元里出现次数最多的那个，
# 猜对的概率是（该词元的出现次数）/（长度 - 1）。我们在一个测试集上对它取平均：
# 这就是任何对顺序无感知的模型的上限：高于随机猜测的 $1/16$（袋子泄露了候选词元），但低于一半。
# `order_blind_ceiling` 通过对每个序列的词元做独热（one-hot）计数来计算它；
# `accuracy` 是被计分的位置中预测正确的比例。

# %%
test_sets = {n: copy_previous_task(np.random.default_rng(n), 1000, n) for n in [TRAIN_LENGTH, 24, 48]}
ceiling = order_blind_ceiling(test_sets[TRAIN_LENGTH][0])
print(f"order-blind ceiling at length {TRAIN_LENGTH}: {ceiling:.2f}, a random guess: {1 / VOCAB:.2f}")
assert 1 / VOCAB < ceiling < 0.5, "better than a random guess, but under a half"

# %% [markdown]
# ## 一个小型 Transformer，三种做法
#
# 先是词元嵌入，然后是位置，然后是一个编码器层，最后是一个在 16 个词元上输出的线性输出头。
# 只有位置这一步不同：
#
# - `none`：什么也不加；
# - `learned`：一张可训练的表，每个位置一个向量，覆盖位置 0..11，
#   就像 BERT 和 GPT-2 那样（`lessons.LearnedPositions`）；
# - `sinusoidal`：`posenc.torch.PositionalEncoding`，固定不变，对每个位置都有定义。
#
# 笔记本 02 说明了为什么模型通常先把嵌入乘以 $\sqrt{d_{model}}$ 再加上这张表：
# 元素大小为 $1/\sqrt{d_{model}}$ 的嵌入，其行的范数约为 1，而表的行范数为 $\sqrt{d_{model}/2}$，
# 会把嵌入淹没。我们的小模型省去了这个缩放，因为 `nn.Embedding` 的初始元素大小为 1：
# 它的行范数本来就接近 $\sqrt{32} \approx 5.7$（平均略小一些），大于表的 $\sqrt{16} = 4$。
# （练习 2 会带着缩放把表加到较小的嵌入上。）

# %%
token_rows = nn.Embedding(VOCAB, D_MODEL).weight.detach().norm(dim=1)
table_rows = posenc.torch.positional_encoding(TRAIN_LENGTH, D_MODEL).norm(dim=1)
print(f"embedding rows: norm {token_rows.mean():.1f} on average; table rows: norm {table_rows.mean():.1f}")
assert torch.allclose(table_rows, torch.tensor(4.0)), "sqrt(d_model / 2): each pair contributes sin^2 + cos^2 = 1"

# %% [markdown]
# 在构建每个模型之前都会重置随机种子，所以这三个模型的初始词元嵌入、编码器和输出头都相同。
# 下面每一行是一个模型的大小（参数个数）。

# %%
COLORS = {"none": "C0", "learned": "C1", "sinusoidal": "C2"}
POSITIONS = {
    "none": nn.Identity,
    "learned": lambda: LearnedPositions(D_MODEL, TRAIN_LENGTH),
    "sinusoidal": lambda: posenc.torch.PositionalEncoding(D_MODEL),
}


def tiny_transformer(positions, seed=0):
    torch.manual_seed(seed)
    embed = nn.Embedding(VOCAB, D_MODEL)
    encoder_layer = nn.TransformerEncoderLayer(D_MODEL, 4, 64, dropout=0.0, batch_first=True)
    head = nn.Linear(D_MODEL, VOCAB)
    return nn.Sequential(embed, POSITIONS[positions](), encoder_layer, head)


models = {name: tiny_transformer(name) for name in POSITIONS}
for name, model in models.items():
    print(f"{name:>10}: {sum(p.numel() for p in model.parameters()):,} parameters")

# %% [markdown]
# 同一个训练函数 `lessons.train` 供三个模型共用：用 Adam 训练 300 步（`STEPS`），
# 每步一批 64 个（`BATCH`）新生成的序列（每个模型都使用同样的 19 200 个序列，顺序也相同）。
# 它返回每个批量上的损失和正确率，用于绘制学习曲线；`lessons.predict` 在评估模式下运行训练好的模型。

# %%
train_tokens, train_targets = copy_previous_task(np.random.default_rng(1), STEPS * BATCH, TRAIN_LENGTH)
assert STEPS * BATCH == len(train_tokens) == 19_200

# %% [markdown]
# 训练时每 100 步打印一行。确切的损失值取决于平台的浮点舍入误差，所以测试不会比较这个单元格的输出；
# 结论在下面用断言检查。

# %%
# NBVAL_IGNORE_OUTPUT
curves = {}
for name, model in models.items():
    print(name)
    curves[name] = train(model, train_tokens, train_targets, steps=STEPS, report_every=100)

# %% [markdown]
# ## 训练长度上的结果
#
# 在 1000 个新生成的长度为 12 的序列上的正确率，与对顺序无感知的上限并列显示，
# 另外还有第一次有某个批量的正确率超过 90% 的训练步数（`first_step_above`）：

# %%
tokens, targets = test_sets[TRAIN_LENGTH]
results = {name: accuracy(predict(model, tokens), targets) for name, model in models.items()}
reached = {name: first_step_above(curves[name][1]) for name in models}

# %%
# NBVAL_IGNORE_OUTPUT
for name, value in results.items():
    print(f"{name:>10}: {value:.2f}   above 0.9 from step {reached[name]}")
print(f"{'ceiling':>10}: {ceiling:.2f}   (best possible without order)")

# %% [markdown]
# 两种位置方法都解决了这个任务（在测试集上高于 0.9）。

# %%
assert min(results["sinusoidal"], results["learned"]) > 0.9

# %% [markdown]
# 没有位置信息时，模型的正确率低于 0.5，与对顺序无感知的上限相差不到 0.05（它不可能做得更好，
# 而它找到的规则差不多就是对顺序无感知的规则中最好的），而且没有任何一个训练批量的正确率超过 90%
# （在最后检查）。训练之后它仍然是等变的：它对打乱后输入的 logits，就是它对原输入的 logits 以同样方式打乱的结果，
# 所以顺序无法影响它的预测。

# %%
shuffle = np.random.default_rng(2).permutation(TRAIN_LENGTH)
with torch.no_grad():
    logits = models["none"](torch.from_numpy(tokens))
    torch.testing.assert_close(models["none"](torch.from_numpy(tokens[:, shuffle])), logits[:, shuffle])

# %% [markdown]
# 在这里，可学习的表比正弦表更早在某个批量上超过 0.9。一次运行只是初始权重的一次抽样，
# 所以我们换三个初始权重的随机种子（使用相同的批量）重复这场比赛：可学习模型一直训练到第一次有批量超过 0.9 为止，
# 正弦模型则训练同样的步数。在每一次运行中，都是可学习的表领先。一个合理的解释是：
# 可学习的表可以专门针对这个任务来塑造，而正弦向量是固定的，各层必须学会如何读取它们。

# %%
# NBVAL_IGNORE_OUTPUT
race = {}
for seed in (1, 2, 3):
    learned = tiny_transformer("learned", seed)
    _, learned_accuracies = train(learned, train_tokens, train_targets, steps=STEPS, stop_above=0.9)
    learned_step = first_step_above(learned_accuracies)  # None if never (checked at the end)
    sinusoidal = tiny_transformer("sinusoidal", seed)
    _, sinusoidal_accuracies = train(sinusoidal, train_tokens, train_targets, steps=learned_step or STEPS)
    race[seed] = learned_step, first_step_above(sinusoidal_accuracies)
print("seed: (learned model's first step above 0.9, sinusoidal model's by then)")
print(race)
assert all(sinusoidal is None for _, sinusoidal in race.values()), "the learned table first in every run"

# %% [markdown]
# 学习曲线（损失，以及每个训练批量上的正确率）展示了这幅图景的形成过程，结论相同。

# %%
fig, (left, right) = plt.subplots(1, 2, figsize=(11, 3.5))
for name, (losses, accuracies) in curves.items():
    left.plot(losses, color=COLORS[name], label=name)
    right.plot(accuracies, color=COLORS[name], label=name)
right.axhline(ceiling, color="gray", linestyle="--", label="order-blind ceiling")
left.set(xlabel="step", ylabel="loss", title="training loss")
right.set(xlabel="step", ylabel="accuracy", title="accuracy on the training batch", ylim=(0, 1.05))
right.legend(loc="center right")
plt.show()

# %% [markdown]
# 正弦模型学会了关注什么？下面是它唯一的注意力层，对 4 个注意力头和 1000 个测试序列取平均：
# 第 $p$ 行显示位置 $p$ 如何把注意力分配到序列的各个位置上。对角线正下方那条明亮的线是
# $p \to p - 1$，也就是要复制的那个词元。

# %%
sinusoidal_model = models["sinusoidal"].eval()
with torch.no_grad():
    stream = sinusoidal_model[1](sinusoidal_model[0](torch.from_numpy(test_sets[TRAIN_LENGTH][0])))
    _, weights = sinusoidal_model[2].self_attn(stream, stream, stream, need_weights=True)
attention = weights.mean(0).numpy()  # (query position, key position), averaged over heads and sequences

fig, ax = plt.subplots(figsize=(4.8, 4))
image = ax.imshow(attention, cmap="viridis", vmin=0)
ax.set(xlabel="key position (attended to)", ylabel="query position", title="attention of the sinusoidal model")
fig.colorbar(image, ax=ax, label="weight")
plt.show()

# %% [markdown]
# 每个位置 $p \ge 1$ 都把最大的权重给了 $p - 1$，而且至少分配了 0.3 的注意力，
# 是均匀分配时 $1/12 \approx 0.08$ 的三倍以上（在最后检查）。

# %%
previous = np.diagonal(attention, offset=-1)  # attention[p, p - 1] for p = 1 .. 11
assert np.array_equal(attention[1:].argmax(axis=1), np.arange(TRAIN_LENGTH - 1)), "largest weight on p - 1"

# %% [markdown]
# ## 3. 比训练时更长的序列
#
# 现在用 24 和 48 个词元的序列，即训练长度的两倍和四倍。可学习的表没有位置 12 及以后的行，
# 所以 `learned` 模型根本无法在这些序列上运行：查表会失败。我们把这一点记录下来，而不是为它编造向量。
# 正弦表在每个位置上都有定义，所以那个模型能运行；它对不对，正是我们要度量的。

# %%
try:
    predict(models["learned"], test_sets[24][0])
except IndexError:
    print(f"learned: IndexError, the table has rows for positions 0..{TRAIN_LENGTH - 1} only")
else:
    raise AssertionError("the learned table should not cover position 12")

# %% [markdown]
# 对另外两个模型，我们按位置拆分正确率：小于 12 的位置（模型在训练中见过），
# 以及 12 及以后的位置（从未见过）；对长度 48，还单独统计位置 24 及以后。
# 对顺序无感知的上限也在每种长度上分别计算。

# %%
def accuracy_by_position(model, length):
    """(accuracy at each position 1..length-1, accuracy over positions < TRAIN_LENGTH, over the rest)."""
    tokens, targets = test_sets[length]
    correct = predict(model, tokens)[:, 1:] == targets[:, 1:]
    seen = TRAIN_LENGTH - 1
    return correct.mean(axis=0), correct[:, :seen].mean(), correct[:, seen:].mean()


longer = {(name, n): accuracy_by_position(models[name], n) for name in ["none", "sinusoidal"] for n in [24, 48]}
ceilings = {n: order_blind_ceiling(test_sets[n][0]) for n in [24, 48]}
far_48 = longer["sinusoidal", 48][0][2 * TRAIN_LENGTH - 1 :].mean()  # positions 24..47

# %%
# NBVAL_IGNORE_OUTPUT
def seen_unseen(name, n):
    return "—" if name == "learned" else f"{longer[name, n][1]:.2f} | {longer[name, n][2]:.2f}"


print(f"{'':>10}  {'length 12':>9}  {'24: seen | unseen':>17}  {'48: seen | unseen':>17}")
for name in POSITIONS:
    print(f"{name:>10}  {results[name]:9.2f}  {seen_unseen(name, 24):>17}  {seen_unseen(name, 48):>17}")
print(f"{'ceiling':>10}  {ceiling:9.2f}  {ceilings[24]:17.2f}  {ceilings[48]:17.2f}")
print(f"sinusoidal at positions 24..47 of length 48: {far_48:.2f}")

# %% [markdown]
# 正弦模型在训练长度之外的表现：在见过的位置上，对两倍长的序列它仍然很准确（高于 0.9）；
# 在从未见过的位置上，它降到 0.5 以下，比见过的位置至少低 0.4。在四倍长度时，见过的位置
# 也变得不那么准确了（它们现在要和模型在训练中从未遇到过的 36 个位置分享注意力）。
# 从位置 24（训练长度的两倍）起，正弦模型并不比对顺序无感知的猜测更好（与之相差不到 0.05）。
# 公式可以延伸到任何位置；但训练好的权重会怎样处理这些新向量，则是另一回事。
# 没有位置信息的模型，与更长的袋子对应的（更低的）上限相差不到 0.05。
# 最后的交叉检查对其中每一条都做了断言。

# %%
seen_24, unseen_24 = longer["sinusoidal", 24][1:]
seen_48, unseen_48 = longer["sinusoidal", 48][1:]
assert seen_24 > 0.9 > 0.5 > unseen_24 and unseen_24 < seen_24 - 0.4, "seen positions right, unseen ones not"

# %% [markdown]
# 更长序列中每个位置上的正确率；虚线标出训练长度的终点。

# %%
fig, ax = plt.subplots(figsize=(9, 3.5))
for (name, n), (by_position, _, _) in longer.items():
    style = "-" if n == 48 else ":"
    ax.plot(range(1, n), by_position, style, color=COLORS[name], marker=".", label=f"{name}, length {n}")
ax.axvline(TRAIN_LENGTH - 0.5, color="gray", linestyle="--", label="training length")
ax.set(xlabel="position", ylabel="accuracy", title="copy the previous token, longer sequences", ylim=(0, 1.05))
ax.legend()
plt.show()

# %% [markdown]
# ## 4. 在 Keras 中做同样的比较
#
# 一个简短的版本：同样的任务和训练集，一个结构相同的 Keras 3 模型，
# 一次不加位置信息构建，一次加上 `posenc.tensorflow.PositionalEncoding` 构建。
# TensorFlow 在加载时会读取两个环境变量，所以要在第一次 `import tensorflow` 之前设置它们。

# %%
import os

# TensorFlow's C++ start-up log lines go to stderr and would land in the cell output;
# oneDNN off keeps the round-off of sums and matmuls the same from run to run.
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")

import keras
import tensorflow as tf

import posenc.tensorflow

tf.config.threading.set_intra_op_parallelism_threads(1)
tf.config.threading.set_inter_op_parallelism_threads(1)
tf.config.experimental.enable_op_determinism()

# %% [markdown]
# 编码器块是逐步写出来的：注意力、相加并归一化、两层的前馈网络、相加并归一化。
# 与 PyTorch 中一样，损失函数会跳过目标为 `IGNORE` 的位置。

# %%
def keras_transformer(sinusoidal):
    keras.utils.set_random_seed(0)
    tokens = keras.Input((None,), dtype="int32")
    x = keras.layers.Embedding(VOCAB, D_MODEL)(tokens)
    if sinusoidal:
        x = posenc.tensorflow.PositionalEncoding(D_MODEL)(x)
    x = keras.layers.LayerNormalization()(x + keras.layers.MultiHeadAttention(4, D_MODEL // 4)(x, x))
    hidden = keras.layers.Dense(64, activation="relu")(x)
    x = keras.layers.LayerNormalization()(x + keras.layers.Dense(D_MODEL)(hidden))
    model = keras.Model(tokens, keras.layers.Dense(VOCAB)(x))
    loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True, ignore_class=IGNORE)
    model.compile(keras.optimizers.Adam(3e-3), loss)
    return model


keras_models = {"none": keras_transformer(False), "sinusoidal": keras_transformer(True)}
for model in keras_models.values():
    model.fit(train_tokens, train_targets, batch_size=BATCH, epochs=1, shuffle=False, verbose=0)
print("trained:", list(keras_models))

# %%
# NBVAL_IGNORE_OUTPUT
keras_results = {}
for name, model in keras_models.items():
    for n in [TRAIN_LENGTH, 24]:
        tokens, targets = test_sets[n]
        keras_results[name, n] = accuracy(model.predict(tokens, batch_size=1000, verbose=0).argmax(-1), targets)
    print(f"{name:>10}: length 12 {keras_results[name, 12]:.2f}, length 24 {keras_results[name, 24]:.2f}")

# %% [markdown]
# Keras 与 PyTorch 的结论一致：正弦位置编码在训练长度上解决了这个任务（高于 0.9），
# 无位置的模型与对顺序无感知的上限相差不到 0.05（在最后检查），
# 而正弦模型在两倍长的序列上，正确率下降超过 0.2。

# %%
assert keras_results["sinusoidal", 24] < keras_results["sinusoidal", 12] - 0.2, "worse past the training length"

# %% [markdown]
# 本次运行自身的耗时，从导入到这里（取决于机器）：

# %%
# NBVAL_IGNORE_OUTPUT
print(f"{time.perf_counter() - started:.0f} s")

# %% [markdown]
# ## 小结
#
# - 没有位置信息的单个 Transformer 编码器层是置换等变的：输入被打乱，输出也以完全相同的方式被打乱。
#   加上 `posenc.torch.PositionalEncoding` 就打破了这一点，这正是它的全部意义所在。
# - 在“复制前一个词元”任务上，没有位置信息的小型 Transformer 无法超过对顺序无感知的最佳猜测
#   （上面计算的上限）；可学习的位置嵌入和正弦位置编码都在 300 步内达到 0.9 以上，
#   在我们尝试的四个随机种子中，每次都是可学习的嵌入更快。正弦模型的注意力沿着
#   $p \to p - 1$ 分布。
# - 超出训练长度后，可学习的嵌入根本没有对应的向量。正弦模型能运行，在训练过的位置上仍然准确
#   （在两倍长度时），而在从未见过的位置上表现很差：一个有定义的编码并不等于学到的泛化能力。
# - 使用 `posenc.tensorflow.PositionalEncoding` 的 Keras 模型表现出同样的对比。
# - 表被加到词元嵌入上；如果嵌入的大小是 $1/\sqrt{d_{model}}$，
#   先把它们乘以 $\sqrt{d_{model}}$，这样表就不会把它们淹没。
#
# ## 练习
#
# 每个检查要么回答“正确！”，要么说明哪里不对。卡住时，`nb07.both_sides.hint()`
# 会给你一点提示，`nb07.both_sides.solution()` 会打印参考答案的代码（`model_input` 也一样）。
# 这里不需要训练：每个检查都能瞬间运行完。
#
# ### 练习 1 · 是等变，而不是不变
#
# `nb07.layer` 和 `nb07.x` 就是第 1 节中的编码器层和批量，由同一个随机种子生成。
# 写出 `both_sides(order)`：对 10 个位置的一种重排 `order`，返回等变性论断的两边，
# 即把这个层作用于打乱后的批量的结果，以及以同样方式打乱后的层输出。检查会用三种顺序运行它；
# 两边都写对时，它们相等。下面的草稿表述的是等变性以外的另一种性质：检查会告诉你是哪一种。

# %%
from posenc.exercises import nb07

layer, x = nb07.layer, nb07.x  # an encoder layer in eval mode, a batch (2, 10, 32)


def both_sides(order):
    with torch.no_grad():
        out_of_shuffled = layer(x[:, order])  # the layer of the shuffled batch
        shuffled_out = layer(x)  # the layer's output, shuffled the same way
    return out_of_shuffled, shuffled_out


# %%
nb07.both_sides.check(both_sides)

# %% [markdown]
# ### 练习 2 · 模型的输入：缩放后的嵌入加上表
#
# `nb07.embeddings` 是一个批量，包含 4 个序列，每个序列有 12 个宽度为 32 的词元嵌入，
# 元素大小约为 $1/\sqrt{32}$（就像 fairseq 的初始化方式）。构造第一层接收到的输入：
# 嵌入乘以 $\sqrt{d_{model}}$，再加上正弦位置编码表，其中位置 $p$ 的行要加到每个序列中位置 $p$ 的词元上。
# 草稿中有一处错误，而且这个错误运行时不会报错。

# %%
import math

embeddings = nb07.embeddings  # (batch, length, d_model) = (4, 12, 32)
model_input = embeddings * math.sqrt(D_MODEL) + posenc.torch.positional_encoding(len(embeddings), D_MODEL)[:, None, :]

# %%
nb07.model_input.check(model_input)

# %% [markdown]
# ## 交叉检查
#
# 正文中其余的论断，集中在这里检查。

# %%
# Cross-checks of the claims above.
# Section 2: the no-positions model stays below 0.5, within 0.05 of the order-blind ceiling,
# and no training batch is ever above 0.9; the learned model reached 0.9 before the sinusoidal one.
assert results["none"] < 0.5 and abs(results["none"] - ceiling) < 0.05
assert reached["none"] is None and reached["learned"] < reached["sinusoidal"]
assert all(learned is not None for learned, _ in race.values()), "the learned model passed 0.9 in each race"
# The attention of p to p - 1 is at least 0.3, more than three times an even spread (1/12).
assert previous.min() > 0.3 > 3 / TRAIN_LENGTH
# Section 3: unseen positions below 0.5 at length 48 too; the seen ones less accurate at 48 than at 24;
# positions 24..47 of length 48 at the order-blind ceiling; no positions at the ceiling of each length.
assert unseen_48 < 0.5 and seen_48 < seen_24
assert abs(far_48 - ceilings[48]) < 0.05
for n in [24, 48]:
    assert abs(longer["none", n][1] - ceilings[n]) < 0.05 and abs(longer["none", n][2] - ceilings[n]) < 0.05
# Section 4: Keras, at the training length.
assert keras_results["sinusoidal", 12] > 0.9
assert keras_results["none", 12] < 0.5 and abs(keras_results["none", 12] - ceiling) < 0.05
# The tiny models' embeddings have rows of a norm above the table's 4.
assert token_rows.mean() > table_rows.max()
# Exercise 1 works on the layer and batch of section 1: the same seed, the same recipe, the same numbers.
torch.manual_seed(0)
layer_1 = nn.TransformerEncoderLayer(D_MODEL, nhead=4, dim_feedforward=64, dropout=0.0, batch_first=True)
x_1 = torch.randn(2, 10, D_MODEL)
assert torch.equal(x_1, nb07.x) and all(torch.equal(a, b) for a, b in zip(layer_1.state_dict().values(), nb07.layer.state_dict().values()))
