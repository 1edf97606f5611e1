# %% [markdown]
# # 06 · 有多准、有多快：大位置处的表，float32 与 posenc 的对比
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/posenc-org/posenc/blob/main/notebooks/zh_CN/06_precision_and_speed.ipynb)
#
# 长上下文模型会用到 $10^5$ 到 $10^7$ 的位置。讲义用 float32 构建这张表，
# 而在 float32 下，角度 $pos / 10000^{2i/d}$ 在取正弦之前就已经错了。
# 笔记本 01 发现它的 float32 表与 `posenc` 相差几个“末位数字”；在这里，我们把这个说法变得精确：
# 构建一个精确的参考值来做比较，观察误差如何随位置增长，弄清误差从何而来、`posenc` 如何避免它，
# 并测一测精确的表要付出多少时间代价。
#
# **问题：** 在大位置处，float32 的正弦位置编码表错得有多厉害？为什么？精确的表又要付出什么代价？
#
# **学完本节，你将能够：**
# - 以高精度的 `mpmath` 结果为参考，用 ulp（相邻浮点数之间的步长）来度量 float32 的误差；
# - 根据 float32 角度附近的 float32 步长，预测这个角度的误差；
# - 先在 float64 中对角度做约简，从而在任意位置算出精确的 float32 元素；
# - 公平地为构建表的各种方法计时，并判断何时精度要紧（训练与推理部署、半精度、长上下文）。
#
# **先修：** 笔记本 01 · **时间：** 约 45 分钟

# %%
# On Colab, install posenc from GitHub; elsewhere `make lab` has already installed it.
import sys

if "google.colab" in sys.modules:
    # %pip install --quiet "posenc @ git+https://github.com/posenc-org/posenc@main"

# %%
# %matplotlib inline
import time

import matplotlib.pyplot as plt
import mpmath
import numpy as np

import posenc

# %% [markdown]
# ## 1. 相邻浮点数之间的步长：ulp
#
# 一个 float32 把数表示为 24 个有效位乘以 2 的幂（即
# [IEEE 754 单精度格式](https://en.wikipedia.org/wiki/Single-precision_floating-point_format)）。
# 所以 float32 数的分布并不均匀：在 1 和 2 之间，它们相隔 $2^{-23} \approx
# 1.2 \cdot 10^{-7}$，在 2 和 4 之间，间隔是它的两倍，每经过一个 2 的幂，步长就翻一倍。
# 一个数处的步长称为它的*末位单位*（unit in the last place），简称
# [ulp](https://en.wikipedia.org/wiki/Unit_in_the_last_place)；`np.spacing(x)` 返回它
# （从 `x` 到同类型的下一个浮点数的距离，方向远离零）。float64 有 53 个有效位，
# 所以它的步长要细 $2^{29} \approx 5 \cdot 10^8$ 倍。把一个结果舍入到最近的浮点数，最多使它移动半个步长。

# %%
for value in [1, 100, 32767, 1e5, 1e7]:
    print(f"{value:>10g}: float32 step {np.spacing(np.float32(value)):.1e}, float64 step {np.spacing(value):.1e}")
assert all(np.spacing(np.float32(2.0**k)) == 2.0 ** (k - 23) for k in range(-20, 30))  # doubles at each power of 2

# %% [markdown]
# 在 32767 附近，float32 数相隔 $2^{-9} \approx 0.002$；在 $10^7$ 附近，则相隔整整 1：
# 这么大的角度存成 float32 后，无论计算得多么仔细，都可能偏差半个步长。
#
# 两个 float32 数之间的误差，最好用这种步长来计数。正的 float32 数的大小顺序，
# 与把它们的位模式当作整数读出时的顺序相同，所以两个（同号的）float32 数之间相隔的步数，
# 就是这两个整数之差：

# %%
def ulps_apart(a, b):
    """How many float32 steps lie between a and b (same signs), entry by entry."""
    as_int = lambda x: np.asarray(x, dtype=np.float32).view(np.int32).astype(np.int64)
    return np.abs(as_int(a) - as_int(b))


one = np.float32(1)
print(ulps_apart(one, one + np.spacing(one)), ulps_apart(one, np.float32(1.0000005)))
assert ulps_apart(one, np.float32(1.0000005)) == 4  # 5e-7 above 1 is 4 steps of 1.2e-7, rounded

# %% [markdown]
# ## 2. 精确的参考值：mpmath
#
# 要度量误差，我们需要真实值。[mpmath](https://mpmath.org) 可以按我们要求的位数进行计算。
# 用 30 位有效十进制数字（`mpmath.workdps(30)`），它先算出角度 $pos / 10000^{2i/d}$，再取正弦。
# 即使在位置 $10^7$，这个角度也精确到约 $10^{-23}$（一个 $10^7$ 附近的数的 30 位数字），
# 它的正弦也是如此：这比 float64 在略小于 1 处的步长 $2^{-53} \approx 1.1 \cdot
# 10^{-16}$ 还要细一千万倍。把结果舍入到 float64，得到的就是最接近真实正弦的 float64，
# 对下面的一切而言都相当于“精确”。把它舍入到 float32，得到的就是*正确舍入*的 float32 正弦，
# 也就是 float32 所能表示的最佳值（我们经由 float64 进行舍入，这会得到同一个 float32，
# 除非这个正弦极其接近两个 float32 数的正中间）。下面是 $\sin 1$：

# %%
with mpmath.workdps(30):
    true_sine = mpmath.sin(1)
    print(mpmath.nstr(true_sine, 30))
print(f"as float64 {float(true_sine)!r}, as float32 {np.float32(float(true_sine))!s}")
print(f"float32 step there {np.spacing(np.float32(0.84)):.1e}")

# %% [markdown]
# NumPy 的 float32 `np.sin` 并不总是正确舍入的：它是一个快速的向量化近似（`np.cos` 也一样），
# NumPy 自己的测试允许它偏差至多 2 ulp，而它在哪些输入上出偏差则取决于 CPU。
# 在笔记本 01 那张 $10 \times 6$ 的表的 60 个正弦和余弦上（讲义中的 float32 角度），
# 它与 mpmath 给出的正确舍入值的差距都在这 2 ulp 之内。这就是笔记本 01 中“末位数字”的来龙去脉：
# 在小位置处，float32 表只可能在最后一次舍入上出错，相差一两个步长，约为 $10^{-7}$。

# %%
lecture_angles = np.arange(10, dtype=np.float32)[:, None] / np.power(10000, np.arange(0, 6, 2, dtype=np.float32) / 6)
for numpy_function, mpmath_function in [(np.sin, mpmath.sin), (np.cos, mpmath.cos)]:
    with mpmath.workdps(30):
        correctly_rounded = np.array([[np.float32(float(mpmath_function(mpmath.mpf(float(a))))) for a in row]
                                      for row in lecture_angles])
    assert ulps_apart(numpy_function(lecture_angles), correctly_rounded).max() <= 2, f"{numpy_function.__name__}: 2 ulp"

# %% [markdown]
# 在本笔记本的其余部分，参考值是 $d_{model} = 512$ 的表在某个位置上的一行正弦，
# 每隔 16 个列对取一个（共 16 对），每个值都是 30 位数值舍入到 float64 的结果。
# 位置 1 同样以 $\sin 1$ 开头：

# %%
d_model = 512
pairs = np.arange(0, d_model // 2, 16)


def exact_sines(position):
    with mpmath.workdps(30):
        return np.array([float(mpmath.sin(mpmath.mpf(int(position)) / mpmath.power(10000, mpmath.mpf(2 * int(i)) / d_model)))
                         for i in pairs])


print(len(pairs), exact_sines(1)[:3].round(8))

# %% [markdown]
# ## 3. float32 路线与 posenc 的对比
#
# 讲义的路线是用 float32 的位置除以 float32 的分母，再在 float32 中取正弦。
# 我们在从 10 到 $10^7$ 的 25 个位置上度量它和 `posenc.encode`，取所抽样的正弦中的最大误差。

# %%
def float32_route(position):
    denominators = np.power(10000, np.arange(0, d_model, 2, dtype=np.float32) / d_model)
    return np.sin(np.float32(position) / denominators)[pairs]


positions = np.unique(np.logspace(1, 7, 25).astype(np.int64))
exact = {p: exact_sines(p) for p in positions}
route_error = np.array([np.abs(float32_route(p) - exact[p]).max() for p in positions])
posenc_error = np.array([np.abs(posenc.encode([p], d_model)[0, 2 * pairs] - exact[p]).max() for p in positions])
print(f"{len(positions)} positions; float32 route: {route_error.max():.1e} at worst; posenc: {posenc_error.max():.1e} at worst")

# %%
fig, ax = plt.subplots(figsize=(6, 3.5))
ax.loglog(positions, route_error, "o-", label="float32 route (lectures)")
ax.loglog(positions, np.maximum(posenc_error, 1e-10), "s-", label="posenc, float32 output")
ax.axhline(2e-7, color="gray", ls=":", label="2e-7")
ax.set_xlabel("position")
ax.set_ylabel("max |error| of the sines")
ax.legend()
plt.show()

# %% [markdown]
# 从位置 1000 起，这条路线的误差与位置成正比地增长：在双对数坐标图上，它是一条斜率为 1 的直线
# （最小二乘拟合得到的斜率与 1 相差不到 0.1）。从 $10^5$ 起误差超过 $10^{-3}$，从 $10^6$ 起超过 $10^{-2}$。
# posenc 处处都保持在 $2 \cdot 10^{-7}$ 之内，这是 `posenc.encode` 对 float32 输出所保证的误差界
# （它把角度约简到半圈以内的做法，在 `posenc/_rotation.py` 的文档字符串中有证明）；
# 在这个界之内，它的误差只来自最后一次舍入到 float32。

# %%
grown = positions >= 1000
slope = np.polyfit(np.log(positions[grown]), np.log(route_error[grown]), 1)[0]
print(f"slope of log(error) against log(position), from 1000 on: {slope:.1f}")
assert abs(slope - 1) < 0.1, "error proportional to the position"

# %% [markdown]
# ## 4. 原因：角度在粗糙的网格上被舍入
#
# 以位置 32767 为例。第一个列对的角度 $32767 / 1$ 是一个小于 $2^{24}$ 的整数，在 float32 中是精确的。
# 其他的则不然：它们的分母 $10000^{2i/d}$ 先被舍入到 float32，商 $32767 / 10000^{2i/d}$
# 又被舍入到 float32 网格上，而对 16384 到 32768 之间的商，网格的步长是 $2^{-9}$（第 1 节）。
# 舍入到最近的网格点，会使角度移动至多半个步长，即 $2^{-10} \approx
# 0.001$。被舍入的分母又会使它再移动至多 0.0012，即便这个分母已经是最接近精确值的 float32
# （float32 所能表示的最佳值）。而一个偏差为 $\delta$ 的角度，其正弦的偏差至多为 $\delta$
# （$\sin$ 的斜率至多为 1）。所以在 `np.sin` 做任何事情之前，位置 32767 处的正弦就可能偏差约 $2 \cdot 10^{-3}$，
# 是第 2 节中最后一次舍入的一万倍。

# %%
exact_denominators = 10000.0 ** (np.arange(0, d_model, 2) / d_model)
rounded_denominators = exact_denominators.astype(np.float32)


def denominator_shift(denominators):
    """How far float32 denominators move each angle 32767 / denominator."""
    return np.abs(32767 / denominators.astype(np.float64) - 32767 / exact_denominators)


angles32 = np.float32(32767) / rounded_denominators
quotient_rounding = np.abs(angles32 - 32767 / rounded_denominators.astype(np.float64))
denominator_rounding = denominator_shift(rounded_denominators)
print(f"largest move of an angle at position 32767: by the quotient's rounding {quotient_rounding.max():.4f}, "
      f"by the denominator's {denominator_rounding.max():.4f}")
assert quotient_rounding.max() <= 2**-10, "at most half a float32 step near 32767"

# %% [markdown]
# 讲义中 float32 的 `np.power` 得到的值与这些分母相差不超过一个 float32 步长，
# 但它返回的是哪一个相邻值，则取决于 CPU：在支持 AVX-512 的 CPU 上，NumPy 会走一条更快、
# 但精确度稍差的路径。一个偏离了一个步长的分母会让角度移动得更多，总共可达 0.003。
# 所以下文中 float32 路线的误差会因 CPU 而略有不同；凡是这种地方，我们都给出对两种情况都成立的范围。
# 相比之下，float64 在 $10^7$ 附近的步长是 $2^{-29} \approx 2 \cdot 10^{-9}$（第 1 节）：
# 在 float64 中算出的角度，对这里的每个位置来说，都足以得到精确的 float32 输出。

# %%
denominators32 = np.power(10000, np.arange(0, d_model, 2, dtype=np.float32) / d_model)  # the lectures'
steps_apart = ulps_apart(denominators32, rounded_denominators)
assert steps_apart.max() <= 1 and denominator_shift(denominators32).max() < 0.003, "one step off at most, 0.003 at most"

# %% [markdown]
# ## 5. posenc 如何避免它
#
# 最简单的修正（练习 2 会让你写出来）是：在 float64 中算出角度，趁还在 float64 中时对它做*约简*
# （取它对 $2\pi$ 的余数，正弦保持不变），然后才把这个小角度舍入到 float32。
# posenc 更进一步，用了两个想法（见 `posenc/_rotation.py`）：
#
# 1. **比 float64 更精确的角度。** 频率 $w$ 被存为两个 float64 数，
#    $p \cdot w$ 则表示为 $\theta_{hi} + \theta_{lo}$，后一项是乘积的精确舍入误差，
#    用 [Dekker 方法](https://en.wikipedia.org/wiki/2Sum) 恢复出来；然后
#    $\sin\theta \approx \sin\theta_{hi} + \theta_{lo}\cos\theta_{hi}$。
#    在上面的每个位置上（包括 $10^7$），float64 输出与精确正弦的差距都在 $10^{-15}$ 之内（下面会检查）。
# 2. **表是旋转的乘积。** $PE(p + k)$ 就是把 $PE(p)$ 的每一对都转过固定的角度 $k\,w$：
#    $\sin(a + b) = \sin a \cos b + \cos a \sin b$，$\cos(a + b) = \cos a \cos b - \sin a \sin b$。
#    令 $p = qB + r$，全部 $L$ 行就可以由 $B$ 个精确的行和 $L / B$ 个精确的步长得到，
#    每一对只需一次复数乘法。
#
# 旋转的实际效果，用 `posenc.encode` 给出的 float64 行来演示：PE(p + k) 就是 PE(p) 转过 k。

# %%
p, k = 1_000_000, 37
rows = posenc.encode([p, k, p + k], d_model, dtype=np.float64)
sin_a, cos_a, sin_b, cos_b = rows[0, 0::2], rows[0, 1::2], rows[1, 0::2], rows[1, 1::2]
turned = np.stack([sin_a * cos_b + cos_a * sin_b, cos_a * cos_b - sin_a * sin_b], axis=-1).reshape(-1)
# The difference is a few float64 roundings, which vary with the NumPy build: print the bound.
print(f"PE(p) turned by k equals PE(p + k) to within 1e-14: {np.abs(turned - rows[2]).max() < 1e-14}")

# %% [markdown]
# 想法 1，在从 10 到 $10^7$ 的每个位置上：

# %%
float64_error = max(np.abs(posenc.encode([p], d_model, dtype=np.float64)[0, 2 * pairs] - exact[p]).max() for p in positions)
assert float64_error < 1e-15, f"float64 output off by {float64_error:.1e}"

# %% [markdown]
# 在 float32 中，四个因子、两个乘积和一个和各被舍入一次，因此误差的上界是
# $(2\sqrt{2} + 3) \cdot 2^{-25} < 1.74 \cdot 10^{-7}$（如果某个紧挨着 1 的值向上舍入越过了 1，
# 会稍大一些，但仍低于 $2 \cdot 10^{-7}$）。下面是一整张
# $32768 \times 512$ 的表，抽样与精确参考值对比：

# %%
table = posenc.positional_encoding(32768, d_model)
sampled = [0, 255, 256, 12345, 32767]
table_error = max(np.abs(table[p, 2 * pairs] - exact_sines(p)).max() for p in sampled)
print(f"largest error in the sampled rows: {table_error:.0e}")
assert (2 * np.sqrt(2) + 3) * 2**-25 < 1.74e-7 and table_error <= 2e-7

# %% [markdown]
# ## 6. 速度
#
# 构建表就意味着把它写入内存，所以衡量标准是分配并填充一个同样形状的数组。
# `make bench` 比较了 NumPy、PyTorch 和 TensorFlow 中的所有路线；这里只比较 NumPy 的路线，
# 规模同样是 $32768 \times 512$，取 9 次运行的中位数（计时因机器而异，每次运行也不同；
# 一个新分配的 64 MiB 数组还要为它的内存页付出代价）。
# `posenc.torch` 和 `posenc.tensorflow` 用同样的 NumPy 代码构建表，并且不经复制就接管其内存
# （`torch.from_numpy`、DLPack）。
# 对任意位置（`posenc.encode`，一批 $64 \times 512$ 个小于 32768 的位置），
# 我们将它与朴素路线比较计时，朴素路线直接对 float32 或 float64 的角度取 sin 和 cos。

# %%
length = 32768
buffer = np.empty((length, d_model), np.float32)


def float32_table(length):
    denominators = np.power(10000, np.arange(0, d_model, 2, dtype=np.float32) / d_model)
    angles = np.arange(length, dtype=np.float32)[:, None] / denominators
    return np.stack([np.sin(angles), np.cos(angles)], axis=2).reshape(length, d_model)


routes = {
    "posenc": lambda: posenc.positional_encoding(length, d_model),
    "posenc, out=": lambda: posenc.positional_encoding(length, d_model, out=buffer),
    "float32 route": lambda: float32_table(length),
    "np.empty + fill": lambda: np.empty((length, d_model), np.float32).fill(1.0),
}
# %%
batch = np.random.default_rng(0).integers(0, length, (64, 512)).astype(np.float64)


def naive_encode(dtype):
    angles = batch.astype(dtype)[..., None] * posenc.frequencies(d_model).astype(dtype)
    pairs = np.stack([np.sin(angles), np.cos(angles)], axis=-1)
    return pairs.reshape(*batch.shape, d_model).astype(np.float32)


encode_routes = {
    "naive float32": lambda: naive_encode(np.float32),
    "naive float64": lambda: naive_encode(np.float64),
    "posenc.encode": lambda: posenc.encode(batch, d_model),
}


# %% [markdown]
# 各条路线轮流执行（轮询，round robin），这样机器某一时刻的繁忙会同等地拖慢每条路线；第一轮只用于预热。

# %%
def median_ms(routes, repeats=9):
    times = {name: [] for name in routes}
    for _ in range(repeats + 1):
        for name, build in routes.items():
            start = time.perf_counter()
            build()
            times[name].append(time.perf_counter() - start)
    return {name: 1e3 * np.median(spans[1:]) for name, spans in times.items()}


# %%
# NBVAL_IGNORE_OUTPUT
medians = median_ms(routes)
for name, ms in medians.items():
    print(f"{name:<16} {ms:7.2f} ms  {ms / medians['posenc']:5.2f} x posenc")
encode_medians = median_ms(encode_routes, repeats=5)
for name, ms in encode_medians.items():
    print(f"encode, {name:<14} {ms:7.2f} ms  {ms / encode_medians['naive float32']:5.2f} x naive float32")

# %% [markdown]
# 精确的表并不是用时间换来的。在这里保存的那次运行中，posenc 构建表比讲义的 float32 路线更快，
# 所用时间大约与分配并填充数组相当；你得到的数字会有所不同。下面的检查只断言
# posenc 所用的时间少于 float32 路线的两倍：这是一个宽松的界，这样换一个 CPU，
# 或者碰上机器繁忙的时刻，检查也不会失败。

# %%
assert medians["posenc"] < 2 * medians["float32 route"], medians

# %% [markdown]
# 同一批位置，在 PyTorch（eager 模式）中，以及在 TensorFlow 的 `tf.function` 内部
# （训练步骤就在那里运行）。每个框架的 `encode` 都与该框架自己的朴素 float32 路线比较计时。

# %%
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")
import tensorflow as tf
import torch

import posenc.tensorflow
import posenc.torch

batch_torch, batch_tf = torch.from_numpy(batch), tf.constant(batch)
rates = posenc.frequencies(d_model).astype(np.float32)


def naive_torch(positions):
    angles = positions.float()[..., None] * torch.from_numpy(rates)
    return torch.stack([torch.sin(angles), torch.cos(angles)], dim=-1).flatten(-2)


@tf.function
def naive_tf(positions):
    angles = tf.cast(positions, tf.float32)[..., None] * rates
    return tf.reshape(tf.stack([tf.sin(angles), tf.cos(angles)], axis=-1), (*positions.shape, d_model))


# %%
encode_tf = tf.function(lambda positions: posenc.tensorflow.encode(positions, d_model))
framework_routes = {
    "torch, naive float32": lambda: naive_torch(batch_torch),
    "torch, posenc": lambda: posenc.torch.encode(batch_torch, d_model),
    "tf.function, naive float32": lambda: naive_tf(batch_tf).numpy(),
    "tf.function, posenc": lambda: encode_tf(batch_tf).numpy(),
}

# %%
# NBVAL_IGNORE_OUTPUT
framework_medians = median_ms(framework_routes, repeats=5)
for name, ms in framework_medians.items():
    naive = framework_medians[name.split(",")[0] + ", naive float32"]
    print(f"encode, {name:<26} {ms:7.2f} ms  {ms / naive:5.2f} x naive float32")

# %% [markdown]
# 计时没有显示出来的是：在表的最后一行，只有 posenc 是精确的；

# %%
last = length - 1
errors = {name: np.abs(routes[name]()[last, 2 * pairs] - exact_sines(last)).max() for name in ["posenc", "float32 route"]}
for name, error in errors.items():
    print(f"{name:<14} error at row {last}: {error:.0e}")
assert errors["posenc"] < 2e-7 < 1e-4 < errors["float32 route"]

# %% [markdown]
# 而在这批位置中最大的那个位置上，朴素的 float32 路线在每个框架中都有偏差，
# 而 posenc 与 float64 正弦一样精确。

# %%
largest = np.unravel_index(np.argmax(batch), batch.shape)
exact_row = exact_sines(batch[largest])
batch_errors = {name: np.abs(np.asarray(build())[largest][2 * pairs] - exact_row).max()
                for name, build in {**encode_routes, **framework_routes}.items()}
print(f"at position {batch[largest]:.0f} of the batch:",
      ", ".join(f"{name}: {f'{error:.1e}' if error > 2e-7 else 'below 2e-7'}" for name, error in batch_errors.items()))
assert all((error < 2e-7) == ("float32" not in name) for name, error in batch_errors.items())

# %% [markdown]
# ## 7. 实践中何时精度要紧
#
# 与大小为 1 的值相比，几个 $10^{-3}$ 听起来很小。但如果有什么东西要把这张表与另一种精度下的它自己比较，
# 或者与相邻位置比较，这就很要紧了。$d = 512$ 的表中最慢的一对，每个位置只转
# $w_{255} \approx 1.04 \cdot 10^{-4}$ 弧度，所以从一个位置到下一个位置，它的值最多只变化这么多。
#
# 下面有些数字取决于 CPU 上 float32 的幂运算（第 4 节）；对这些数字，我们打印出对两种情况都成立的范围，
# 并用 `within` 检查数值落在这个范围之内。

# %%
def within(value, low, high):
    """Checks low < value < high and says so: the float32 route's digits differ by CPU."""
    assert low < value < high, f"{value} is outside ({low:g}, {high:g})"
    return f"below {high:g}" if low == 0 else f"{low:g} to {high:g}"


# %% [markdown]
# **训练和推理时用不同方法构建的表。** 模型学到的是训练时所用的那张表。
# 如果推理部署时用另一种方法构建的表（训练时用讲义的 float32 代码，部署时用精确的表或另一个框架的表，
# 或者反过来），那么每一行都会偏差两张表之间的差距。在前 512 个位置上，这个差距低于
# $10^{-4}$，小于最慢的一对在一个位置上的步长；在 5000 个位置上，它是 3 到 $7 \cdot 10^{-4}$，
# 在 32 768 个位置上则是 $1.5$ 到 $4 \cdot 10^{-3}$，超过慢的几对在十个位置上的变化量。

# %%
slowest = 10000.0 ** (-(d_model - 2) / d_model)


def build_gap(length):
    return np.abs(float32_table(length) - posenc.positional_encoding(length, d_model, dtype=np.float64)).max()


gaps = {n: build_gap(n) for n in (512, 5000, 32768)}
gap_ranges = {512: (0, 1e-4), 5000: (3e-4, 7e-4), 32768: (1.5e-3, 4e-3)}
print(f"slowest pair: {slowest:.2e} radians per position")
print("largest gap, float32 route vs accurate table, over",
      ", ".join(f"{n} rows: {within(gaps[n], *gap_ranges[n])}" for n in gaps))
assert gaps[512] < slowest and gaps[32768] > 10 * slowest

# %% [markdown]
# **半精度的表。** float16 只能精确表示到 2048 为止的整数，bfloat16 只能到 256（8 个有效位）。
# 在 bfloat16 中*计算*的表，在取任何正弦之前就已经把位置合并了：位置 0 到 999 中，
# 只有 507 个仍互不相同，所以大约一半的行是相邻行的复制品。

# %%
bf16_positions = torch.arange(1000).to(torch.bfloat16)
print(f"distinct bfloat16 positions among 0..999: {len(torch.unique(bf16_positions))}; 257 becomes {bf16_positions[257].item():.0f}")
assert len(torch.unique(bf16_positions)) == 507

# %% [markdown]
# 先在 float32 或 float64 中计算，最后再转换类型，就像 `posenc.torch` 对
# `dtype=torch.bfloat16` 所做的那样：这样唯一的损失就是类型转换，至多为 1 附近的半个步长，
# 即每个元素对 float16 是 $2^{-12} \approx 2.4 \cdot 10^{-4}$，对 bfloat16 是 $2^{-9} \approx 2.0 \cdot
# 10^{-3}$，而且全部 1000 行都保持互不相同。

# %%
bf16_table = posenc.torch.positional_encoding(1000, d_model, dtype=torch.bfloat16)
print(f"distinct rows of the bfloat16 table: {len(torch.unique(bf16_table, dim=0))}")
assert len(torch.unique(bf16_table, dim=0)) == 1000

# %% [markdown]
# **长上下文。** float32 路线得到的角度 $p \cdot w$ 的相对误差约为 $10^{-7}$
# （视 CPU 而定，从 $5 \cdot 10^{-8}$ 到 $1.5 \cdot 10^{-7}$）；除以频率之后，它就是这一行所描述的*位置*的误差，
# 并且随 $p$ 增长：在 5000 处不到 0.001 个位置，在 $10^6$ 处为 0.05 到 0.15，
# 在 $10^7$ 处为 0.8 到 1.5，大约整整一个位置，此时相邻的行已经模糊难辨。

# %%
frequencies = 1 / exact_denominators
position_error = {p: np.abs((np.float32(p) / denominators32) / frequencies - p).max() for p in (5000, 10**6, 10**7)}
position_ranges = {5000: (0, 1e-3), 10**6: (0.05, 0.15), 10**7: (0.8, 1.5)}
print("largest position error of the float32 route:",
      ", ".join(f"at {p:g}: {within(e, *position_ranges[p])}" for p, e in position_error.items()))
assert all(5e-8 < e / p < 1.5e-7 for p, e in position_error.items()), "relative error of the angle, by CPU"

# %% [markdown]
# 超过 $2^{24} = 16\,777\,216$ 之后，float32 甚至无法表示这些位置（那里 float32 的步长是 2）：
# $2^{24} + 1$ 会被舍入为 $2^{24}$，两行就变得完全相同。posenc 以整数（或 float64）接收位置，使它们保持不同。

# %%
beyond = posenc.encode(np.array([2**24, 2**24 + 1]), d_model, dtype=np.float64)
print(f"float32(2**24 + 1) == 2**24: {np.float32(2**24 + 1) == np.float32(2**24)}; "
      f"posenc's rows for 2**24 and 2**24 + 1 differ by up to {np.abs(beyond[0] - beyond[1]).max():.2f}")
assert np.abs(beyond[0] - beyond[1]).max() > 0.5

# %% [markdown]
# ## 小结
#
# - **ulp** 是相邻浮点数之间的步长（`np.spacing`）。float32 的 ulp 在 1 附近是 $2^{-23}$，
#   每经过一个 2 的幂就翻一倍：在 32767 附近是 $2^{-9} \approx 0.002$，在 $10^7$ 附近是 1。
#   舍入到最近的浮点数，最多损失半个步长。
# - 30 位精度的 **mpmath** 给出精确的参考值。与之相比，NumPy 的 float32 正弦与正确舍入值的差距
#   在 2 ulp 之内：在小位置处，float32 表只在末位数字上有偏差。
# - 讲义的 **float32 路线**在取任何正弦之前就把*角度*舍入到 float32 网格上，所以它的误差与位置成正比地增长：
#   从 $10^5$ 起超过 $10^{-3}$，从 $10^6$ 起超过 $10^{-2}$。在 float64 中算出角度（posenc 则超越 float64），
#   先约简，然后才舍入：这样 posenc 在直到 $10^7$ 的每个位置上，float32 误差都在 $2 \cdot 10^{-7}$ 之内，
#   float64 误差在 $10^{-15}$ 之内。
# - $PE(p + k)$ 就是把 $PE(p)$ 的每一对都转过 $k\,w$；posenc 用这样的旋转来构建表，
#   所用时间少于 float32 路线的两倍（在这里保存的那次运行中甚至更快）。
# - 以下情况精度很要紧：训练和推理部署用不同的方法构建表（在 32 768 个位置上差距可达
#   $4 \cdot 10^{-3}$，超过最慢的一对步长的十倍）；半精度（先用 float32 计算，最后再转换类型：
#   bfloat16 的位置在 1000 个中只剩 507 个互不相同）；长上下文（在 $10^7$ 处位置误差约为 1；
#   float32 无法区分 $2^{24}$ 和 $2^{24} + 1$）。
#
# ## 练习
#
# 每个检查要么回答“正确！”，要么说明哪里不对。卡住时，`nb06.angle_step.hint()`
# 会给你一点提示，`nb06.angle_step.solution()` 会打印参考答案的代码（`accurate_sine` 也一样）。
#
# ### 练习 1 · 一个角度附近的 float32 步长
#
# 宽度为 `d_model` 的表中的第 `pair` 对，把位置 `position` 变成角度
# `position / 10000 ** (2 * pair / d_model)`。写出 `angle_step(position, pair, d_model)`，
# 让它返回两个数：这个角度处的 float32 步长（ulp），以及把角度存为 float32 给它的正弦带来的最大误差。
# 下面的草稿有一处错误；检查会在四个位置上运行它，并告诉你哪里不对。

# %%
from posenc.exercises import nb06


def angle_step(position, pair, d_model):
    angle = position / 10000 ** (2 * pair / d_model)
    step = np.spacing(angle)  # the distance to the next number after the angle
    return step, step / 2


# %%
nb06.angle_step.check(angle_step)

# %% [markdown]
# ### 练习 2 · 大位置处精确的 float32 正弦
#
# 写出 `accurate_sine(position, pair, d_model)`：该位置上第 `2 * pair` 列的 float32 值，
# 即使在位置 $10^7$ 也精确到约 $10^{-7}$。做法是：在 float64 中算出角度并对它做约简（第 5 节），
# 然后才把任何东西舍入到 float32。检查会把它与参考答案比较，参考答案与 `posenc.encode` 的差距在
# $3 \cdot 10^{-7}$ 之内（见交叉检查）。下面的草稿漏掉了一步。

# %%
def accurate_sine(position, pair, d_model):
    angle = position * 10000.0 ** (-2 * pair / d_model)  # float64
    return np.sin(np.float32(angle))  # the float32 sine of the angle


# %%
nb06.accurate_sine.check(accurate_sine)

# %% [markdown]
# ## 交叉检查
#
# 正文中其余的论断，集中在这里检查。

# %%
# Cross-checks of sections 1 to 5
# Section 1: float64's steps are 2**29 times finer than float32's; 2**-9 near 32767, 2**-29 near 1e7.
assert np.spacing(np.float32(32767)) == 2**-9 and np.spacing(1e7) == 2**-29
assert all(np.spacing(np.float32(v)) / np.spacing(float(v)) == 2**29 for v in [1.5, 100.0, 32767.0])
# Section 2: 30 digits of an angle near 1e7 resolve 1e-23, far below float64's step next to 1 (1.1e-16 below 1).
assert np.spacing(np.nextafter(1.0, 0)) == 2**-53 and 1e7 * 1e-30 < 1e-16
# Section 3: the float32 route passes 1e-3 from 1e5 on and 1e-2 from 1e6 on; posenc within 2e-7.
assert (route_error[positions >= 10**5] > 1e-3).all() and (route_error[positions >= 10**6] > 1e-2).all()
assert posenc_error.max() <= 2e-7
# Section 4: position 32767, pair 0 exact; the float32 grid's step 2**-9 above 16384; the
# rounded denominators move an angle by up to 0.0012, the quotient's rounding by up to 0.001.
assert angles32[0] == 32767 and quotient_rounding[0] == 0 and denominator_rounding[0] == 0
assert np.spacing(np.float32(16384)) == 2**-9 and 0.0008 < quotient_rounding.max()
assert 0.001 < denominator_rounding.max() < 0.0013
# Section 5: the float32 bound of a rotation, under 1.74e-7.
assert (2 * np.sqrt(2) + 3) * 2**-25 < 1.74e-7

# %%
# Cross-checks of sections 6 and 7. Section 6: every route builds the same shape.
assert all(routes[name]().shape == (length, d_model) for name in ["posenc", "posenc, out=", "float32 route"])
# Section 7: the slowest pair turns by 1.04e-4 per position; float16 and bfloat16 casts.
assert round(slowest, 6) == 0.000104
assert np.float16(2048) + np.float16(1) == 2048 and np.float16(2047) + np.float16(1) == 2048
assert bf16_positions[257].item() == 256
accurate = posenc.positional_encoding(1000, d_model, dtype=np.float64)
cast16 = np.abs(accurate.astype(np.float16) - accurate).max()
cast_bf16 = (torch.from_numpy(accurate).to(torch.bfloat16).double() - torch.from_numpy(accurate)).abs().max().item()
assert cast16 <= 2**-12 and cast_bf16 < 2**-9 + 2**-24  # (torch casts through float32)
assert np.float32(2**24 + 1) == np.float32(2**24) and np.spacing(np.float32(2**24)) == 2

# %%
# Cross-checks of exercise 2: the reference solution agrees with posenc.encode within 3e-7 at the checked positions.
for case in nb06.accurate_sine.cases:
    position, pair, width = case
    assert abs(nb06.accurate_sine_solution(*case) - posenc.encode([position], width)[0, 2 * pair]) < 3e-7, case
# ... while the float32 route, even with the nearest float32 denominator, is off by more than 0.1 at 1e7.
assert abs(np.sin(np.float32(10**7) / np.float32(10000.0 ** (2 / 512))) - posenc.encode([10**7], 512)[0, 2]) > 0.1
