# %% [markdown]
# # 01 · 用 NumPy 实现位置编码
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/posenc-org/posenc/blob/main/notebooks/zh_CN/01_numpy.ipynb)
#
# Transformer 把输入看作一个集合，所以每个位置的嵌入上都要加一个由正弦和余弦组成的固定向量。
# 本笔记本只用 NumPy，一小步一小步地构建这张表，并把每一步都和 `posenc` 包对照检查。
# 我们跟随两份讲义。第一份是用 NumPy 写的英文 Jupyter 笔记本：它以 float32 为 10 个位置、
# 宽度 6 构建这张表，以八位小数打印，最后把各个步骤封装成一个类。第二份是用 NumPy 写的
# 中文学习笔记（最后用 TensorFlow 做了一次类型转换）：它把正弦和余弦直接写入宽度为 16 的表的
# 交替列中，再用容差 $10^{-3}$ 做比较，打印出一个全是 `True` 的网格。最后我们会讨论：
# 波长为什么要这样分布。
#
# **问题：** Transformer 中由正弦和余弦组成的表是如何一步步构建出来的？怎样才能得到与讲义逐位一致的数字？
#
# **学完本节，你将能够：**
# - 利用 NumPy 的广播机制计算公式中的分母和角度；
# - 用两种方法构建交错排列的表（先堆叠再重塑形状；给交替列赋值），并与讲义的打印结果一致；
# - 说明为什么波长从一对列到下一对列总是按相同的倍数增长；
# - 用 `posenc.diagnose` 找出一张对不上的表错在哪里。
#
# **先修：** 无 · **时间：** 约 45 分钟

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

# Eight decimals is what the lecture printed; suppress keeps tiny values out of e-notation.
np.set_printoptions(precision=8, suppress=True)

# %% [markdown]
# ## 公式
#
# 公式来自 Transformer 的论文 [Attention Is All You Need](https://arxiv.org/abs/1706.03762)
# （第 3.5 节）。表的第 `pos` 行编码一个位置；它的列两两成对，
# 第 $i$ 对存放同一个角度的正弦和余弦：
#
# $$
# PE_{(pos,\,2i)} = \sin\!\left(\frac{pos}{10000^{2i/d_{\text{model}}}}\right),
# \qquad
# PE_{(pos,\,2i+1)} = \cos\!\left(\frac{pos}{10000^{2i/d_{\text{model}}}}\right).
# $$
#
# ## 1. 偶数列与奇数列
#
# NumPy 讲义用了 10 个位置、模型宽度 6，小到每个数都能看清。
# 不按列对、而按列索引 $k$ 来读公式：偶数列 $k = 2i$ 除以 $10000^{k/d}$，
# 奇数列 $k = 2i + 1$ 除以 $10000^{(k-1)/d}$。我们像讲义那样用 float32 列出这两类索引，
# 并分别算出两组分母。

# %%
sequence_length = 10
d_model = 6

even_columns = np.arange(0, d_model, 2, dtype=np.float32)
odd_columns = np.arange(1, d_model, 2, dtype=np.float32)
print(even_columns, odd_columns)

even_denominators = np.power(10000, even_columns / d_model)
odd_denominators = np.power(10000, (odd_columns - 1) / d_model)
print(even_denominators.dtype, even_denominators.shape, odd_denominators.shape)

# %% [markdown]
# 两组分母完全相同，而且必然相同：奇数索引减一，正好落在它前面的偶数索引上，
# 所以一个正弦和紧挨着它的余弦总是共用同一个分母。我们只需要一个向量，每对列一项，
# 它打印出的数字和讲义的一样。（它与用 float64 计算的 `posenc.denominators`
# 在 float32 精度内一致：相对差只有 $10^7$ 分之几，因为指数 $2i/d$ 本身先被舍入到了 float32；
# 结尾的交叉检查会确认这一点。）

# %%
assert np.array_equal(even_denominators, odd_denominators), "a sine and its cosine share a denominator"
denominators = even_denominators
print(denominators)

# %% [markdown]
# ## 2. 位置排成一列
#
# 把位置排成形状为 `(10, 1)` 的一列，就能让
# [广播机制](https://numpy.org/doc/stable/user/basics.broadcasting.html)完成外除法：
# `(10, 1)` 的列除以 `(3,)` 的行，得到每个位置除以每个分母的结果，
# 即一个 `(10, 3)` 的角度网格。`posenc.angles` 用 float64 得到同样的网格；
# 我们的计算经过了几次 float32 舍入（指数、分母、商），所以两者的相对差只有 $10^7$ 分之几。

# %%
positions = np.arange(sequence_length, dtype=np.float32).reshape(sequence_length, 1)
angles = positions / denominators
print(positions.shape, denominators.shape, "->", angles.shape)
print(angles[:3])

np.testing.assert_allclose(angles, posenc.angles(np.arange(sequence_length), d_model), rtol=3e-7)

# %% [markdown]
# ## 3. 正弦表和余弦表
#
# 先简单说一个 float32 的细节。NumPy 的 float32 `sin` 和 `cos` 是快速近似，
# 与正确舍入的结果最多可能相差两个末位单位（ulp；一个 ulp 是到下一个 float32 数的间距，
# 在略小于 1 处约为 $6 \times 10^{-8}$），这是 NumPy 自己的测试所允许的误差范围，
# 因此以八位小数打印时，最后一位可能与讲义不同。为了处处打印出讲义的数字，
# 我们对*同样的* float32 角度用 float64 求正弦，再一次性舍入回 float32。
# 笔记本 06 会完整讲述这些末位数字的来龙去脉（以及随位置增大的误差）。

# %%
def sin32(x):
    """Sine of a float32 array: the float64 sine, rounded once to float32."""
    return np.sin(x.astype(np.float64)).astype(np.float32)


def cos32(x):
    """Cosine of a float32 array: the float64 cosine, rounded once to float32."""
    return np.cos(x.astype(np.float64)).astype(np.float32)


ulps = np.testing.assert_array_max_ulp(np.sin(angles), sin32(angles), maxulp=2)  # NumPy's own: within 2 ulp

# %% [markdown]
# 正弦将填入偶数列，余弦填入奇数列。沿着每一列往下，角度按固定步长增长：
# 第一对列增长得快，最后一对列增长得慢。

# %%
sines = sin32(angles)
cosines = cos32(angles)
print(sines)
print(cosines)

# %% [markdown]
# 两张表的形状都是 `(10, 3)`，每对列一列，其中的数字和讲义的一致。
#
# ## 4. 交错排列：先堆叠，再重塑形状
#
# 把两张表沿新的最后一个轴堆叠，得到形状 `(10, 3, 2)`：依次是位置、列对、
# 正弦或余弦。重塑为 `(10, 6)` 时按行优先的顺序读取这块内存，即逐对读取、
# 正弦在余弦之前，所以各列依次是
# $\sin_0, \cos_0, \sin_1, \cos_1, \sin_2, \cos_2$。完全不需要计算索引。

# %%
stacked = np.stack([sines, cosines], axis=-1)
table = stacked.reshape(sequence_length, d_model)
print(stacked.shape, "->", table.shape)

# %% [markdown]
# 下面是讲义打印出的原样表格，我们的表打印出的文本与它一字不差。
# 逐位比较打印文本，是八位小数所能允许的最严格的检查。（`posenc.interleave`
# 做的正是我们刚才的“堆叠再重塑”；结尾的交叉检查会确认这一点。）

# %%
LECTURE_TABLE = np.array([
    [0.0, 1.0, 0.0, 1.0, 0.0, 1.0],
    [0.84147096, 0.5403023, 0.04639922, 0.998923, 0.00215443, 0.9999977],
    [0.9092974, -0.41614684, 0.09269849, 0.9956942, 0.00430886, 0.9999907],
    [0.14112, -0.9899925, 0.13879807, 0.9903207, 0.00646326, 0.99997914],
    [-0.7568025, -0.6536436, 0.18459871, 0.98281395, 0.00861763, 0.99996287],
    [-0.9589243, 0.2836622, 0.23000169, 0.97319025, 0.01077196, 0.999942],
    [-0.2794155, 0.96017027, 0.27490923, 0.9614702, 0.01292625, 0.99991643],
    [0.6569866, 0.75390226, 0.31922463, 0.9476791, 0.01508047, 0.9998863],
    [0.98935825, -0.14550003, 0.36285236, 0.9318466, 0.01723462, 0.99985147],
    [0.4121185, -0.91113025, 0.4056985, 0.91400695, 0.01938869, 0.999812],
])


def as_printed(array):
    """The text NumPy prints for a float32 array at the lecture's settings."""
    return np.array2string(np.asarray(array, dtype=np.float32), precision=8, suppress_small=True)


print(table)
assert as_printed(table) == as_printed(LECTURE_TABLE), "the lecture's printout, digit for digit"

# %% [markdown]
# 再来对照 `posenc` 包。`posenc` 用 float64 计算角度，只对最终结果舍入；
# 而我们的步骤在中途就把角度舍入到了 float32。所以两者可能在 float32 的最后一位上不同，
# 最多相差 $2^{-24} \approx 6.0 \times 10^{-8}$，这正是 0.5 到 1 之间 float32 的一个间隔。

# %%
reference = posenc.positional_encoding(sequence_length, d_model)
largest = np.abs(table - reference).max()
print(f"largest absolute difference: {largest:.1e}")
assert largest <= 2.0**-24 == np.spacing(np.float32(0.5))

# %% [markdown]
# ## 5. 把同样的步骤写成一个类
#
# 讲义最后把这些步骤封装成一个类，在 `__init__` 中保存 `sequence_length` 和
# `d_model`。但它的 `forward` 从来不读取这两个属性，而是使用笔记本里的全局变量
# `d_model` 和 `sequence_length`。讲义创建对象时用的恰好就是这两个值，
# 所以打印结果看起来没问题。下面用几行代码重现这种写法：请求宽度为 8 的 4 个位置，
# 它返回的仍然是全局的 10 × 6 的表。

# %%
class ReadsGlobals:
    """The lecture's pattern: the sizes are stored, then the globals are used."""

    def __init__(self, sequence_length, d_model):
        self.sequence_length = sequence_length
        self.d_model = d_model

    def forward(self):
        pair_starts = np.arange(0, d_model, 2, dtype=np.float32)  # global d_model, not self.d_model
        positions = np.arange(sequence_length, dtype=np.float32)[:, None]  # global length too
        angles = positions / np.power(10000, pair_starts / d_model)
        return np.stack([sin32(angles), cos32(angles)], axis=-1).reshape(sequence_length, -1)


wrong_size = ReadsGlobals(sequence_length=4, d_model=8).forward()
print("asked for (4, 8), got", wrong_size.shape)
assert np.array_equal(wrong_size, table)  # the global 10 x 6 table

# %% [markdown]
# 我们的类只读取自己的属性。分母只取决于宽度，所以在创建对象时就算好，
# 每次调用再构建所需长度的表。宽度为奇数时，正弦列比余弦列多一列，
# 于是按照公式的要求，直接去掉最后一个余弦列即可。

# %%
class SinusoidalEncoding:
    """The (length, d_model) sinusoidal table, built with the lecture's float32 steps."""

    def __init__(self, d_model, base=10000.0):
        self.d_model = d_model
        pair_starts = np.arange(0, d_model, 2, dtype=np.float32)  # 2i, one per pair
        self.denominators = np.power(np.float32(base), pair_starts / d_model)

    def __call__(self, length):
        positions = np.arange(length, dtype=np.float32)[:, None]
        angles = positions / self.denominators
        pairs = np.stack([sin32(angles), cos32(angles)], axis=-1)
        return pairs.reshape(length, -1)[:, : self.d_model]


encoding = SinusoidalEncoding(d_model)
assert as_printed(encoding(sequence_length)) == as_printed(LECTURE_TABLE)

# %% [markdown]
# 它重现了讲义的表（上面已逐位检查），在其他尺寸下（包括奇数宽度）也与 `posenc` 一致。
# float32 角度带有约 $10^{-7}$ 的相对舍入误差，所以绝对误差随位置增大；
# 容差也相应地随长度增大。

# %%
for length, n_columns in [(10, 6), (10, 7), (10, 16), (50, 16), (128, 64)]:
    ours = SinusoidalEncoding(n_columns)(length)
    expected = posenc.positional_encoding(length, n_columns)
    np.testing.assert_allclose(ours, expected, rtol=0, atol=2e-7 * length)  # shapes too
    print(f"{length:4d} x {n_columns:2d}: largest difference {np.abs(ours - expected).max():.1e}")

# %% [markdown]
# ## 6. 第二种做法：每列一个角速率
#
# 中文 NumPy 笔记没有分别构建正弦表和余弦表。它给每一列 $k$ 一个
# 角速率 $1 / 10000^{2\lfloor k/2 \rfloor / d}$：整除 2 把一对列中的两列都映射到
# 这一对的偶数索引上，所以角速率两两相等，其中互不相同的那些就是 `posenc.frequencies`。
# 我们沿用笔记中的例子：10 个位置、宽度 16。注意数据类型：整数数组除以 float32 标量
# 会被提升为 float64，所以无论本意如何，这种做法都是以双精度计算的。

# %%
width = 16
column = np.arange(width)
print(2 * (column // 2))

angle_rates = 1 / np.power(10000, 2 * (column // 2) / np.float32(width))
print(angle_rates)

assert angle_rates.dtype == np.float64, "integers over a float32 scalar: float64"

# %% [markdown]
# 以步长 2 切片，可以直接写入交替列：`[:, 0::2]` 是偶数列，`[:, 1::2]` 是奇数列。
# 表一开始全为零，最后转换为 float32。
#
# 笔记接着用 $10^{-3}$ 的容差，把这张表和由完全相同的代码构建的第二张表作比较。
# 我们改为比较两种真正不同的计算：第 5 节的 float32 类和这里的 float64 做法。
# 我们不打印全是 `True` 的网格，而是打印最大差值。

# %%
position_column = np.arange(sequence_length)[:, None]
strided = np.zeros((sequence_length, width))
strided[:, 0::2] = np.sin(position_column * angle_rates[0::2])
strided[:, 1::2] = np.cos(position_column * angle_rates[1::2])
strided = strided.astype(np.float32)
print(strided.shape, strided.dtype)
with np.printoptions(precision=4):
    print(strided[:3, :8])

# %%
tolerance = 1e-3
float32_class = SinusoidalEncoding(width)(sequence_length)
difference = np.abs(float32_class - strided).max()
print(f"largest difference {difference:.1e}, {tolerance / difference:,.0f} times inside the tolerance")
assert difference < tolerance / 8000

# %% [markdown]
# 约为 $1.2 \times 10^{-7}$：几个 float32 间隔。这是因为类把角度舍入到了 float32，
# 而这种做法只对结果舍入（笔记本 06 会追溯这类末位数字的来源）。
# 这比笔记中的容差还小 8,000 多倍。这张按步长切片写成的表也与 `posenc` 及其
# `interleave` 一致（见交叉检查）。
#
# ## 7. 为什么是这些波长：等比数列
#
# 第 $i$ 对列是一个波长为 $\lambda_i = 2\pi / \omega_i = 2\pi \cdot 10000^{2i/d}$
# 个位置的波，在整数位置上取样。每前进到下一对列，波长都乘以同一个因子
# $10000^{2/d}$（一对中的两列共用同一个波长，所以逐列看是阶梯状的，
# 而不是每列乘以 $10000^{1/d}$）。最短的波长是 $2\pi$，约六个位置；
# 最长的是 $2\pi \cdot 10000^{(d-2)/d}$，比 $10000 \cdot 2\pi$ 差一个因子 $10000^{2/d}$。

# %%
wavelengths = 2 * np.pi / posenc.frequencies(width)
print(wavelengths.round(2))
ratios = wavelengths[1:] / wavelengths[:-1]
print(ratios.round(6), round(10000 ** (2 / width), 6))

np.testing.assert_allclose(ratios, 10000 ** (2 / width), rtol=1e-12)

# %% [markdown]
# 最后一个波长永远达不到 $10000 \cdot 2\pi$，但模型越宽就越接近，
# 因为缺少的因子 $10000^{-2/d}$ 趋于 1：

# %%
previous = 0.0
for d in (16, 64, 512, 4096):
    share = (2 * np.pi / posenc.frequencies(d)[-1]) / (10000 * 2 * np.pi)
    assert previous < share < 1
    previous = share
    print(f"d_model={d:5d}  longest wavelength = {share:.4f} x 10000·2π")

# %% [markdown]
# 二进制计数器是同一思想的离散形式。位置的第 $k$ 位每 $2^k$ 步翻转一次、
# 每 $2^{k+1}$ 步重复一次：最低位变化最快，每高一位慢一半，相邻两位之比为 2。
# 正弦位置编码表把开/关的二进制位换成了平滑的波，把公比 2 换成了 $10000^{2/d}$。
# 快的列对用来区分相邻的位置，慢的列对用来区分相距较远的位置。

# %%
counter = np.arange(16)
bits = (counter[:, None] >> np.arange(4)) & 1  # column k is bit k
print(bits.T)
for k in range(4):
    period = 2 ** (k + 1)
    assert np.array_equal(bits[: 16 - period, k], bits[period:, k]), f"bit {k} repeats every {period} steps"

# %% [markdown]
# 4 位计数器在 16 步之后重复。而这张表的行永远不会重复。位置是整数，
# 第 $i$ 对列的正弦和余弦要在位置 $p$ 和 $q$ 处取回相同的值，
# 必须 $(p - q)\,\omega_i$ 恰好是整数圈 $2\pi k$，也就是说 $\omega_i / 2\pi$ 必须是分数。
# 这永远不会发生：$\omega_i = 10000^{-2i/d}$ 是 10000 的有理数次幂，是代数数，
# 而 $\pi$ 不是（Lindemann，1882），所以两者之比永远不是分数。因此没有哪一列会精确重复，
# 仅第一对列（波长 $2\pi$）就已经让每个位置都有一行独属于自己的值。不过它可以非常接近：
# 位置 710 等于 $226\pi + 6.0 \times 10^{-5}$，即 113 圈再多一点，
# 这是前 100,000 个位置中第一对列最接近回到第 0 行的一次。
# （若位置取连续值，这些波是可以对齐的：当 $d = 8$ 时，每个波长恰好是前一个的 10 倍，
# 所以四个波在 $2\pi \cdot 1000$ 个位置之后一起重复，而这个数及其任何倍数都不是整数。）
# 在论文所用的宽度 512 下，仅最慢的那个波就横跨约 60,600 个位置。

# %%
first_pair_turn = np.arange(1, 100_001) % (2 * np.pi)
distance_to_row_0 = np.minimum(first_pair_turn, 2 * np.pi - first_pair_turn)
closest = int(np.argmin(distance_to_row_0)) + 1
print(f"closest return to row 0: position {closest}, {distance_to_row_0.min():.1e} radians away")
print(np.round(posenc.encode([0, closest], 4), 4))

assert closest == 710

# %% [markdown]
# 把前四对列的正弦列对位置作图，看到的是同一幅图景：
# 每个波都比前一个长 $10000^{2/16} \approx 3.16$ 倍。`posenc.encode`
# 接受小数位置，因此可以把这些波画成平滑曲线。

# %%
assert round(10000 ** (2 / width), 2) == 3.16
fine_positions = np.linspace(0, 100, 1001)
curves = posenc.encode(fine_positions, width)
fig, ax = plt.subplots(figsize=(10, 3.5))
for pair in range(4):
    ax.plot(fine_positions, curves[:, 2 * pair], label=f"column {2 * pair}, λ ≈ {wavelengths[pair]:.0f}")
ax.set_xlabel("position")
ax.set_ylabel("sine value")
ax.set_title(f"Sine columns of the first four pairs (d_model = {width})")
ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1), fontsize="small")
fig.tight_layout()
plt.show()

# %% [markdown]
# 用热力图展示一张更大的表：128 个位置 × 64 列。左边是变化很快的条纹；
# 越往右，各列变化越慢，直到最后几列在这 128 个位置上几乎不变：
# 最后一个正弦列始终小于 0.02，最后一个余弦列始终大于 0.9998。

# %%
big = posenc.positional_encoding(128, 64)
assert np.abs(big[:, -2]).max() < 0.02 and big[:, -1].min() > 0.9998
fig, ax = plt.subplots(figsize=(9, 5))
image = ax.imshow(big, cmap="RdBu", aspect="auto", vmin=-1, vmax=1)
ax.set_xlabel("column (2i: sine, 2i + 1: cosine)")
ax.set_ylabel("position")
ax.set_title("posenc.positional_encoding(128, 64)")
fig.colorbar(image, ax=ax)
plt.show()

# %% [markdown]
# ## 8. 我的表为什么对不上？`posenc.diagnose`
#
# 当你的数字和讲义不一致时，错误几乎总是以下几种之一：
# 正弦和余弦互换了、指数按列而不是按列对计算、用了别的底数、位置从 1 开始。
# `posenc.diagnose` 会用公式（连同上述每一种错误）去拟合一张表，并用文字说明
# 哪些能重现它。下面是讲义中那张表的一份草稿，它的每个选项都会引入一种错误
# （行末的注释说明哪个选项改变了这一行），我们诊断四次，每次一种错误。

# %%
def draft_table(length, d_model, *, swap=False, per_column=False, base=10000, first=0):
    positions = np.arange(first, first + length)[:, None]  # first=1: np.arange(1, length + 1)
    k = np.arange(d_model)
    exponent = k / d_model if per_column else 2 * (k // 2) / d_model  # per column: k / d
    angles = positions / base ** exponent  # base=1000: 1000 ** exponent
    table = np.zeros((length, d_model))
    sin, cos = (np.cos, np.sin) if swap else (np.sin, np.cos)  # swap: cos into the even columns
    table[:, 0::2] = sin(angles[:, 0::2])
    table[:, 1::2] = cos(angles[:, 1::2])
    return table


# %%
mistakes = {
    "swapped_sin_cos": dict(swap=True),
    "exponent_per_column": dict(per_column=True),
    "wrong_base": dict(base=1000),
    "position_offset": dict(first=1),
}
for code, mistake in mistakes.items():
    found = posenc.diagnose(draft_table(10, 6, **mistake))
    assert found.codes == [code], "each mistake is named, and nothing else"
    print(found, end="\n\n")

# %% [markdown]
# 如果诊断目录中的任何解释都无法说明一张表，得到的结果是 "unknown"，绝不瞎猜：
# 它会指出这张表在哪里偏离论文中的表最多、在那里超出容差多少，
# 以及即使最接近的解释也差多远。下面是草稿的表加上一点噪声。

# %%
noisy = draft_table(10, 6) + np.random.default_rng(0).normal(0, 1e-3, (10, 6))
unexplained = posenc.diagnose(noisy)
print(unexplained)
assert unexplained.codes == ["unknown"]

# %% [markdown]
# 它也能读取从笔记本中复制的打印输出：讲义中 `print` 显示的文本
# （float32，八位小数）会被识别为论文中的表。

# %%
with np.printoptions(precision=8, suppress=True):
    printed = str(draft_table(10, 6).astype(np.float32))
print(printed[:60], "...")
assert posenc.diagnose(printed).matches_paper

# %% [markdown]
# ## 小结
#
# - 一个正弦和它旁边的余弦共用一个分母 $10000^{2i/d}$：每对列一个，
#   宽度为 6、float32 时为 `[1, 21.54435, 464.15897]`。
# - 形状为 `(length, 1)` 的位置列除以 `(d/2,)` 的分母，广播得到
#   `(length, d/2)` 的角度；对它们取正弦和余弦，沿最后一个轴堆叠再重塑形状，
#   就交错排列成了这张表，打印出的八位小数与讲义逐位一致。
# - 写入交替列（`table[:, 0::2] = ...`、`table[:, 1::2] = ...`）能构建出同样的表；
#   两种做法和 `posenc` 一致到 float32 的最后几位（笔记本 06
#   会说明这些末位数字从何而来）。
# - 一个类保存了自己的尺寸，就也要使用它们：讲义中的类读取的却是全局变量。
# - 波长 $2\pi \cdot 10000^{2i/d}$ 从一对列到下一对列按因子 $10000^{2/d}$ 增长，
#   从 $2\pi$ 一直到略小于 $10000 \cdot 2\pi$，就像计数器的各个二进制位，而且没有哪一行
#   会重复。
# - `posenc.diagnose(table)` 能说出常见的错误：正弦和余弦互换、指数按列计算、
#   用了别的底数、位置从 1 开始。
#
# ## 练习
#
# 每个练习最后都有一个检查，告诉你哪里不对。`nb01.<name>.hint()` 给出一点提示，
# 卡住时 `nb01.<name>.solution()` 会打印参考答案。
#
# ### 练习 1 · 分母
#
# 编写 `my_denominators(d_model)`：返回公式中的分母，每对列一个，
# 使用 float64。下面的草稿每列一个分母；检查会分别以偶数宽度和奇数宽度运行它，
# 并告诉你哪里不对。

# %%
from posenc.exercises import nb01


def my_denominators(d_model):
    return 10000.0 ** (np.arange(d_model) / d_model)


nb01.denominators.check(my_denominators)

# %% [markdown]
# ### 练习 2 · 整张表
#
# 补全 `my_positional_encoding`，使它返回论文中形状为 `(length, d_model)` 的表；
# 下面的草稿中有一处错误。有两个检查会给你反馈：`nb01.table.check` 以两种尺寸
# （其中包括一个奇数宽度）运行你的函数，`posenc.diagnose` 则像第 8 节那样说明你的表是什么。
# 当第一个检查判定正确、第二个确认这就是论文中的表时，你就完成了。

# %%
def my_positional_encoding(length, d_model):
    positions = np.arange(length)[:, None]
    k = np.arange(d_model)
    angles = positions / 10000 ** (2 * k / d_model)
    table = np.zeros((length, d_model))
    table[:, 0::2] = np.sin(angles[:, 0::2])
    table[:, 1::2] = np.cos(angles[:, 1::2])
    return table


print(nb01.table.check(my_positional_encoding))
print(posenc.diagnose(my_positional_encoding(10, 6)))

# %% [markdown]
# ## 交叉检查
#
# 把上面的结论放在一起检查：分母和角度与 `posenc` 一致（float32 精度，
# 相对差只有 $10^7$ 分之几）；正弦表和余弦表与精确角度的结果一致
# （误差在 $10^{-7}$ 以内）；`posenc.interleave` 就是“堆叠再重塑”；类在另一种尺寸下也正确；
# 第二种做法的角速率两两相等，且等于 `posenc.frequencies`；按步长切片写成的表与 `posenc`
# 一致；最短和最长的波长，以及当 $d = 8$ 时相邻波长之比恰好为 10；
# 一个二进制位在半个周期后不会重复；位置 710 等于 $226\pi + 6.0 \times 10^{-5}$；
# 宽度 512 时最慢的波横跨约 60,600 个位置；不带选项的草稿就是论文中的表；
# 带噪声的表最接近的解释就是论文本身。

# %%
# Cross-checks of the claims above.
np.testing.assert_allclose(denominators, posenc.denominators(d_model), rtol=3e-7)
assert str(denominators) == "[  1.       21.54435 464.15897]"
exact_angles = posenc.angles(np.arange(sequence_length), d_model)
np.testing.assert_allclose(sines, np.sin(exact_angles), rtol=0, atol=1e-7)
np.testing.assert_allclose(cosines, np.cos(exact_angles), rtol=0, atol=1e-7)
np.testing.assert_array_max_ulp(np.cos(angles), cosines, maxulp=2)
assert np.array_equal(table, posenc.interleave(sines, cosines))
np.testing.assert_allclose(SinusoidalEncoding(8)(4), posenc.positional_encoding(4, 8), rtol=0, atol=1e-7)
assert np.array_equal(angle_rates[0::2], angle_rates[1::2])
np.testing.assert_allclose(angle_rates[0::2], posenc.frequencies(width), rtol=1e-15)
exact = posenc.angles(np.arange(sequence_length), width)
np.testing.assert_allclose(strided, posenc.positional_encoding(sequence_length, width), rtol=0, atol=1e-7)
np.testing.assert_allclose(strided, posenc.interleave(np.sin(exact), np.cos(exact)), rtol=0, atol=1e-7)
np.testing.assert_allclose(wavelengths[0], 2 * np.pi, rtol=1e-15)
np.testing.assert_allclose(wavelengths[-1], 2 * np.pi * 10000 ** ((width - 2) / width), rtol=1e-12)
wavelengths_8 = 2 * np.pi / posenc.frequencies(8)
np.testing.assert_allclose(wavelengths_8[1:] / wavelengths_8[:-1], 10)
for k in range(4):
    assert not np.array_equal(bits[: 16 - 2**k, k], bits[2**k :, k])
assert abs(710 - 226 * np.pi - 6.0e-5) < 1e-6
assert round(2 * np.pi / posenc.frequencies(512)[-1], -2) == 60_600
assert posenc.diagnose(draft_table(10, 6)).matches_paper
assert unexplained.findings[0].details["nearest"] == []  # the paper
