# %% [markdown]
# # 11 · 用 JAX 实现位置编码
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/posenc-org/posenc/blob/main/notebooks/zh_CN/11_jax.ipynb)
#
# 还是这张表，这次用 `jax.numpy` 来实现。笔记本 01 详细讲解了每一步（正弦与它的余弦
# 共用的分母、位置列、交错排列）；这里我们只在 JAX 中快速走一遍，然后使用 JAX
# 新增的能力：`jax.jit` 编译函数，`jax.vmap` 把函数映射到一个批量上，Flax NNX 模块则把
# 位置编码放进模型。所有结果都会与 posenc 的 NumPy 表对照检查。除非另行指定，JAX
# 都以 float32 计算（它的 x64 模式默认关闭），我们也保持这个设置。
#
# **问题：** JAX 的数组不能原地修改，它编译出的函数会固定每一个形状；为 JAX 编写位置编码时，有哪些地方会不同？
#
# **学完本节，你将能够：**
# - 在 NumPy 直接赋值的地方，改用 `.at[...].set()` 填充 JAX 数组的列；
# - 用 `jax.jit` 编译函数，把决定形状的参数标记为静态参数，并预测它会编译多少次；
# - 用 `jax.vmap` 把处理单个位置的函数变成处理一个批量的函数；
# - 把 posenc 的 Flax NNX 模块放进模型中。
#
# **先修：** 笔记本 01 和 08 · **时间：** 约 40 分钟

# %%
# On Colab, install posenc from GitHub; elsewhere `make lab` has already installed it.
import sys

if "google.colab" in sys.modules:
    # %pip install --quiet "posenc @ git+https://github.com/posenc-org/posenc@main"

# %%
# %matplotlib inline
import time

import jax
import jax.numpy as jnp
import matplotlib.pyplot as plt
import numpy as np
from flax import nnx

import posenc
import posenc.jax
from posenc.exercises import nb11

np.set_printoptions(precision=6, suppress=True)
started = time.process_time()  # CPU time: what a busy machine does not stretch
print("x64 enabled:", jax.config.jax_enable_x64)

# %% [markdown]
# ## 1. 用 `jax.numpy` 重走讲义的步骤
#
# 10 个位置、宽度 6、float32，与笔记本 01 中的 NumPy 讲义相同：每对列一个分母、
# 一列位置、二者的商作为角度、求正弦和余弦，再把两者堆叠起来，使它们交错排列。

# %%
sequence_length, d_model = 10, 6
denominators = jnp.power(10000.0, jnp.arange(0, d_model, 2, dtype=jnp.float32) / d_model)
positions = jnp.arange(sequence_length, dtype=jnp.float32)[:, None]
angles = positions / denominators
table = jnp.stack([jnp.sin(angles), jnp.cos(angles)], axis=-1).reshape(sequence_length, d_model)
print(denominators)
print(table.dtype, table.shape)
print(np.asarray(table[:3]))

# %% [markdown]
# 这张表与 posenc 的表一致到 float32 舍入误差的程度：相差在 $10^{-6}$ 以内，
# 即接近 1 的值的几个 float32 间隔（略小于 1 的 float32 数之间相距 $6 \times 10^{-8}$）。

# %%
reference = posenc.positional_encoding(sequence_length, d_model)
difference = np.abs(np.asarray(table) - reference).max()
print(f"largest difference from posenc: {difference:.1e}")
assert difference < 1e-6

# %% [markdown]
# ### 不能赋值的列：`.at[...].set()`
#
# 笔记本 01 中的第二份讲义把正弦和余弦直接写入交替列，
# `pe[:, 0::2] = np.sin(...)`。而 JAX 数组是[不可变的](https://docs.jax.dev/en/latest/_autosummary/jax.numpy.ndarray.at.html)：
# 同样这行代码会引发 `TypeError`，错误信息里就说明了这一点。

# %%
pe = jnp.zeros((sequence_length, d_model))
try:
    pe[:, 0::2] = jnp.sin(angles)
except TypeError as error:
    print(type(error).__name__, "| the message says 'immutable':", "immutable" in str(error))

# %% [markdown]
# JAX 中与之等价的写法是 `pe.at[:, 0::2].set(values)`：索引相同，但它*返回一个新
# 数组*，其中那些元素被替换，而 `pe` 保持不变。所以每一步都要把结果
# 赋给一个变量名。两步就得到讲义的表，与上面堆叠得到的表
# 逐元素相等，而我们一开始的全零数组仍然全是零。

# %%
filled = pe.at[:, 0::2].set(jnp.sin(angles))
filled = filled.at[:, 1::2].set(jnp.cos(angles))
print("pe is still all zeros:", bool((pe == 0).all()))
assert bool((filled == table).all())

# %% [markdown]
# ## 2. `jit`：每种形状编译一次
#
# [`jax.jit`](https://docs.jax.dev/en/latest/jit-compilation.html) 会*追踪*（trace）一个函数：它
# 用只带形状和数据类型、不带具体值的抽象数组把 Python 代码运行一遍，
# 记录下其中的运算，再把这份记录交给 [XLA](https://openxla.org/xla) 编译器。之后
# 用形状和数据类型都相同的参数调用时，会直接运行编译好的代码，不再执行
# Python 代码。下面把讲义的做法写成一个接受任意位置的函数；列表 `traces`
# 是 Python 的副作用，所以只有在 JAX 追踪（随后编译）时它才会增长：

# %%
traces = []


def lecture_encode(positions, d_model):
    traces.append(f"positions of shape {positions.shape}, d_model={d_model}")  # only while tracing
    denominators = jnp.power(10000.0, jnp.arange(0, d_model, 2, dtype=jnp.float32) / d_model)
    angles = positions[..., None].astype(jnp.float32) / denominators
    return jnp.stack([jnp.sin(angles), jnp.cos(angles)], axis=-1).reshape(*positions.shape, d_model)


# %% [markdown]
# 直接编译这个函数会失败。每个参数都会被追踪，`d_model` 也不例外，所以在追踪时
# 它没有具体的值；但 `jnp.arange(0, d_model, 2)` 需要知道它的值才能确定生成多少个
# 元素，而形状必须在编译时就确定。JAX 会用一个
# `ConcretizationTypeError` 告诉你这一点：

# %%
near = jnp.arange(sequence_length)
try:
    jax.jit(lecture_encode)(near, d_model)
except jax.errors.ConcretizationTypeError as error:
    print(type(error).__name__)

# %% [markdown]
# `static_argnums=1`（或 `static_argnames="d_model"`）把第二个参数设为*静态*参数：
# JAX 把普通的 Python 值传给追踪过程，并把它固化到编译出的代码中，因此
# 静态参数每取一个新值，就要重新追踪一次。编译后的函数给出
# 第 1 节的表：

# %%
lecture_jit = jax.jit(lecture_encode, static_argnums=1)
traces.clear()
print(np.asarray(lecture_jit(near, d_model))[1])
np.testing.assert_allclose(np.asarray(lecture_jit(near, d_model)), reference, rtol=0, atol=1e-6)
print("two calls, traces:", traces)

# %% [markdown]
# 它会编译多少次？上面的两次调用只追踪了一次，针对 10 个位置、宽度 6。
# 再调用五次：同样的位置、形状相同的其他位置、12 个
# 位置（两次，起点不同），以及宽度 8。只有形状和
# `d_model` 之前没出现过的调用才会追踪；`traces` 会告诉你是哪几次：

# %%
traces.clear()
calls = [(0, 10, 6), (500, 10, 6), (0, 12, 6), (3, 12, 6), (0, 10, 8)]  # (first position, length, d_model)
for start, length, width in calls:
    lecture_jit(jnp.arange(start, start + length), width)
print(f"{len(calls)} calls, {len(traces)} traces:", *traces, sep="\n  ")
assert len(traces) == 2, "only (12, 6) and (10, 8) are new"

# %% [markdown]
# 新的*值*不需要额外代价；新的*形状*或新的静态参数值则要付出一次追踪和一次
# 编译。一个在 `jit` 下运行的模型如果遇到许多不同长度的批量，每种长度
# 都要编译一次；把批量填充到少数几种固定长度可以减少编译次数。
#
# ### `jit` 下的精度
#
# 在 10 个位置上，讲义的做法与 posenc 一致。但在很远的位置上就不一致了：float32
# 角度 $p \cdot w$ 会被舍入到其大小的约 $10^{-7}$，而 $10^6$ 附近的 float32 数
# 相距 $1/16$，所以在位置 $10^6$ 处，角度以及它的正弦会偏差
# 零点零几（笔记本 06 详细推算了这一点）。posenc 的 JAX 做法从不构造这个被舍入的角度：
# 它用精确的 float32 乘积以半圈为单位计算角度
# （`posenc.engine.kernels.half_turns_float32`），对于不超过 $2^{24}$ 的位置，结果与精确值
# 相差在 $2 \times 10^{-7}$ 以内，而且全程使用 float32。我们在 $10^6$ 附近取一千个位置、
# 宽度 128，把两者都与 posenc 以 float64 计算的 NumPy 表（与精确值相差在 $10^{-15}$ 以内）
# 作比较。

# %%
posenc_jit = jax.jit(posenc.jax.encode, static_argnums=1)
far = jnp.arange(1_000_000, 1_001_000)
exact = posenc.encode(np.asarray(far), 128, dtype=np.float64)
lecture_error = np.abs(np.asarray(lecture_jit(far, 128), np.float64) - exact).max()
posenc_error = np.abs(np.asarray(posenc_jit(far, 128), np.float64) - exact).max()
print(f"lecture's float32 route: {lecture_error:.3f}  (float32 step near 1e6: {float(np.spacing(np.float32(1e6)))})")
print(f"posenc.jax under jit:    {posenc_error:.1e}")
assert posenc_error < 2e-7, "posenc's documented bound"

# %% [markdown]
# 讲义做法的误差约为角度的一个 float32 间隔，posenc 的误差则小于
# $2 \times 10^{-7}$。而且 `jit` 编译的内容中完全没有出现 float64：追踪结果
# （可用 `jax.make_jaxpr` 打印）中没有 `f64`。

# %%
trace = str(jax.make_jaxpr(lambda p: posenc.jax.encode(p, 128))(far))
print("float64 in posenc's trace:", "f64" in trace)

# %% [markdown]
# 随着位置增大，float32 做法的误差随角度一起增长，而 posenc 的误差
# 始终保持平稳：

# %%
probes = jnp.asarray(np.unique(np.geomspace(1, 1e7, 60).astype(np.int32)))
truth = posenc.encode(np.asarray(probes), 64, dtype=np.float64)
lecture_curve = np.abs(np.asarray(lecture_jit(probes, 64), np.float64) - truth).max(axis=1)
posenc_curve = np.abs(np.asarray(posenc_jit(probes, 64), np.float64) - truth).max(axis=1)

fig, ax = plt.subplots(figsize=(7, 3.5))
ax.loglog(np.asarray(probes), np.maximum(lecture_curve, 1e-9), "o-", ms=3, label="lecture's float32 route")
ax.loglog(np.asarray(probes), np.maximum(posenc_curve, 1e-9), "s-", ms=3, label="posenc.jax (float32, jit)")
ax.set_xlabel("position")
ax.set_ylabel("largest error in a row (d = 64)")
ax.legend()
plt.show()

# %% [markdown]
# ## 3. `vmap`：为单个元素编写，在批量上运行
#
# [`jax.vmap`](https://docs.jax.dev/en/latest/automatic-vectorization.html) 为一个
# 针对单个元素编写的函数添加批量轴。上面的函数已经能对任意形状的位置
# 进行广播，所以对它们做映射不会有任何变化。下面这个函数则不能广播：它
# 把*单个*位置（一个标量）编码为宽度为 8 的一行。

# %%
denominators_8 = jnp.power(10000.0, jnp.arange(0, 8, 2, dtype=jnp.float32) / 8)


def encode_position(position):
    """One position (a scalar) -> its row of the table, shape (8,)."""
    angles = position / denominators_8  # (4,): one angle per pair
    return jnp.stack([jnp.sin(angles), jnp.cos(angles)], axis=-1).reshape(8)


print(encode_position(3.0).shape)

# %% [markdown]
# 一次传给它四个位置，它甚至不会报错：四个位置与四个
# 分母逐元素相除（位置 $k$ 除以分母 $k$），输出的是一行 8 个数，
# 而这不是表中的任何一行。`jax.vmap(encode_position)` 则会对每个
# 位置各运行一次，再把各行堆叠起来：

# %%
four = jnp.arange(4.0)
print("called directly:", encode_position(four).shape)
print("under vmap:     ", jax.vmap(encode_position)(four).shape)
np.testing.assert_allclose(np.asarray(jax.vmap(encode_position)(four)), posenc.encode(np.arange(4), 8), rtol=0, atol=1e-6)

# %% [markdown]
# `vmap` 可以组合使用。长文档中的每个片段都从自己的位置开始：`encode_chunk`
# 从起点开始编码一个包含四个位置的片段，再用第二个 `vmap` 对一个批量中的
# 各个起点运行它。结果与第 2 节中支持广播的 `lecture_encode` 在
# 相同位置上的结果相等。

# %%
def encode_chunk(start):
    return jax.vmap(encode_position)(start + jnp.arange(4.0))


starts = jnp.asarray([0.0, 100.0, 7.0])
chunks = jax.jit(jax.vmap(encode_chunk))(starts)
print(chunks.shape)
np.testing.assert_allclose(np.asarray(chunks), np.asarray(lecture_encode(starts[:, None] + jnp.arange(4.0), 8)), rtol=0, atol=1e-6)

# %% [markdown]
# ## 4. 在小模型中使用 Flax 模块
#
# `posenc.jax.PositionalEncoding` 是一个 [Flax NNX](https://flax.readthedocs.io/en/latest/nnx_basics.html) 模块，参数与 torch
# 版模块相同（`d_model`、`max_len`、`dropout`、`convention`……），另有供 dropout 使用的 `rngs`。
# 表保存在 `module.pe` 中，它是一个变量而不是参数，所以针对 `nnx.Param` 的优化器
# 不会改动它。一个小模型：嵌入、位置编码、一个线性层。

# %%
class TinyModel(nnx.Module):
    def __init__(self, rngs):
        self.embed = nnx.Embed(num_embeddings=20, features=16, rngs=rngs)
        self.position = posenc.jax.PositionalEncoding(16, max_len=64, dropout=0.1, rngs=rngs)
        self.out = nnx.Linear(16, 20, rngs=rngs)

    def __call__(self, tokens):
        return self.out(self.position(self.embed(tokens)))


model = TinyModel(nnx.Rngs(0, dropout=1))
model.eval()  # dropout off
tokens = jnp.asarray([[3, 1, 4, 1, 5, 9, 2, 6]])
logits = nnx.jit(lambda m, t: m(t))(model, tokens)
by_hand = model.out(model.embed(tokens) + posenc.positional_encoding(8, 16))
print(logits.shape, model.position.pe[...].shape)
np.testing.assert_allclose(np.asarray(logits), np.asarray(by_hand), rtol=1e-6, atol=1e-6)

# %% [markdown]
# 编译后的模型给出的结果与嵌入加上 posenc 的 NumPy 表（如上）相同，
# 而它的参数只有嵌入层和线性层的参数：

# %%
print(sorted(nnx.state(model, nnx.Param).keys()))
assert "position" not in nnx.state(model, nnx.Param)

# %% [markdown]
# 旋转位置编码（RoPE，笔记本 08）的用法也一样：`posenc.jax.RotaryEmbedding` 为一个批量中的
# 位置返回 `(cos, sin)`，`posenc.jax.apply_rotary` 用它们旋转查询和键。
# 在 `jit` 下，一个查询和一个键的注意力分数只取决于它们相距多远，
# 这里比较位置 3 和 1 与位置 1,000,003 和 1,000,001。

# %%
rope = posenc.jax.RotaryEmbedding(64)
# NumPy's generator: its numbers are the same in every JAX version (jax.random's changed in 0.5).
q, k = jnp.asarray(np.random.default_rng(0).standard_normal((2, 64)), jnp.float32)


@nnx.jit
def score(rope, query_position, key_position):
    positions = jnp.stack([query_position, key_position])[None]
    cos, sin = rope(q[None, None], positions)
    q_turned = posenc.jax.apply_rotary(q[None], cos[:, :1], sin[:, :1])
    k_turned = posenc.jax.apply_rotary(k[None], cos[:, 1:], sin[:, 1:])
    return (q_turned * k_turned).sum()


near_score, far_score = score(rope, 3, 1), score(rope, 1_000_003, 1_000_001)
print(f"scores: {float(near_score):.4f} and {float(far_score):.4f}")

# %% [markdown]
# “相同”到什么程度？在这两组距离下，每个余弦和正弦都与其精确值相差在 $2 \times 10^{-7}$
# 以内，所以分数中的每个乘积 $q_i k_i$ 最多变化约
# $4 \times 10^{-7} \, |q_i| |k_i|$：下面的误差界 $4 \times 10^{-7} \sum_i |q_i||k_i|$
# 约为 $1.4 \times 10^{-5}$。

# %%
bound = 4e-7 * float(jnp.abs(q * k).sum())
print(f"the scores differ by less than {bound:.1e}:", abs(float(near_score) - float(far_score)) <= bound)

# %% [markdown]
# ## 小结
#
# - 讲义的表只需五行 `jax.numpy` 代码。JAX 数组是不可变的：NumPy 中的赋值
#   `pe[:, 0::2] = ...`，在 JAX 中写作 `pe = pe.at[:, 0::2].set(...)`，它返回一个
#   新数组（也可以像笔记本 01 那样先堆叠再重塑形状）。
# - `jax.jit` 只用形状和数据类型来追踪函数。决定形状的参数
#   （`d_model`）必须是静态参数（`static_argnums`）；每个新形状和每个新的静态参数值
#   都会重新追踪和编译，而已知形状上的新值则不会。
# - posenc 的 JAX 函数在 `jit` 下误差保持在 $2 \times 10^{-7}$ 以内，全程使用 float32，
#   追踪结果中没有 float64；而讲义的 float32 做法在位置 $10^6$ 处
#   会偏差零点零几。
# - `jax.vmap` 把处理单个位置的函数变成处理一个批量的函数，而且可以嵌套；
#   Flax NNX 模块 `PositionalEncoding` 和 `RotaryEmbedding` 可以放进模型，并用
#   `nnx.jit` 编译。
#
# ## 练习
#
# 每个练习最后都有一个检查，告诉你哪里不对。`nb11.<name>.hint()` 给出一点提示，
# 卡住时 `nb11.<name>.solution()` 会打印参考答案。
#
# ### 练习 1 · 用 `.at` 填充列
#
# 编写 `at_table(length, d_model)`（`d_model` 为偶数），它从
# `jnp.zeros((length, d_model))` 开始，用 `.at[...].set()` 把正弦填入偶数列、
# 把余弦填入奇数列。下面的草稿运行时不报错，但检查
# 发现了问题：`.at[...].set()` 返回的是什么？

# %%
def at_table(length, d_model):
    positions = jnp.arange(length, dtype=jnp.float32)[:, None]
    angles = positions / jnp.power(10000.0, jnp.arange(0, d_model, 2, dtype=jnp.float32) / d_model)
    table = jnp.zeros((length, d_model))
    table.at[:, 0::2].set(jnp.sin(angles))
    table.at[:, 1::2].set(jnp.cos(angles))
    return table


nb11.at_table.check(at_table)

# %% [markdown]
# ### 练习 2 · 编译了多少次？
#
# `lecture_jit` 是第 2 节中用 `static_argnums=1` 编译的函数。用它的一个全新副本
# 依次进行下面七次调用，每次传入 `jnp.arange(start, start + length)` 和 `d_model`。
# 预测它会追踪（并编译）多少次，然后检查；参考答案会像第 2 节那样
# 实际运行这些调用并计数。

# %%
print("(start, length, d_model):", *nb11.CALLS)
compilations = 7  # one per call?
nb11.compilations.check(compilations)

# %% [markdown]
# ### 练习 3 · 用 `vmap` 处理一批片段
#
# 一个批量包含三个片段，每个片段有四个位置，分别从位置 0、100 和 7 开始，与
# 第 3 节相同，宽度为 8。用 `encode_position` 和 `jax.vmap` 编写
# `encode_chunk(start)`，把它映射到 `nb11.STARTS` 上，再检查形状为 `(3, 4, 8)` 的结果。
# 草稿漏掉了一样东西。

# %%
def encode_chunk(start):
    return jax.vmap(encode_position)(jnp.arange(4.0))


nb11.chunks.check(jax.vmap(encode_chunk)(nb11.STARTS))

# %% [markdown]
# ## 交叉检查
#
# 把上面的结论放在一起检查：讲义在 $10^6$ 处的误差约为那里角度的一个 float32
# 间隔（在半个间隔到一个间隔之间）；posenc 的追踪结果中没有
# float64；float32 做法的误差在位置 $10^7$（那里的 float32
# 数相距为 1）之前就超过 0.1，而 posenc 的误差始终在其误差界以内；RoPE 分数在
# 上面推出的误差界内一致；对已经支持广播的函数做映射（第 3 节），
# 结果与直接调用相同；整个笔记本耗用的 CPU 时间不到一分钟。

# %%
# Cross-checks of the claims above; the run's time
step = float(np.spacing(np.float32(1e6)))
assert step / 2 < lecture_error <= step
assert "f64" not in trace
assert posenc_curve.max() < 2e-7 and lecture_curve.max() > 0.1
assert abs(float(near_score) - float(far_score)) <= bound
batch = jnp.asarray([[0, 1, 2, 3], [500, 501, 502, 503]])
mapped = jax.vmap(lambda p: lecture_encode(p, 8))(batch)
np.testing.assert_allclose(np.asarray(mapped), np.asarray(lecture_encode(batch, 8)), rtol=0, atol=1e-6)
seconds = time.process_time() - started
assert seconds < 60

# %%
# NBVAL_IGNORE_OUTPUT
print(f"{seconds:.0f} s")
