# %% [markdown]
# # 04 · 波长成等比数列的正弦和余弦为什么管用
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/posenc-org/posenc/blob/main/notebooks/zh_CN/04_intuition.ipynb)
#
# **问题：** 一张由正弦和余弦组成、波长按等比数列排布的表，为什么是一种好的位置编码？它又在什么时候不再好用？
#
# **学完本节，你将能够：**
# - 根据 `d_model` 和底数（base）预测任意一对列的波长；
# - 写出把位置 $p$ 的编码变成位置 $p + k$ 的编码的旋转；
# - 判断一个底数对你需要的位置范围是否太小，并找出各行从哪里开始变得相似。
#
# **先修：** 笔记本 01 · **时间：** 约 50 分钟
#
# 为什么要用正弦*和*余弦？为什么是 10000？为什么波长要按等比数列排布？
# 这张表又凭什么称得上是“位置的”？讲义用文字给出了回答：
# 波长从 $2\pi$ 到 $10000 \cdot 2\pi$ 构成等比数列，短波长承载局部位置，长波长承载全局位置，
# 就像二进制计数器的各个位；[论文](https://arxiv.org/abs/1706.03762)（第 3.5 节）还指出，
# $PE(pos + k)$ 是 $PE(pos)$ 的线性函数。在这里，每个观点都变成一张图和一个由代码单元格检验的事实，
# 所以只要其中任何一句话不再成立，这个笔记本就会运行失败。

# %%
# On Colab, install posenc from GitHub; elsewhere `make lab` has already installed it.
import sys

if "google.colab" in sys.modules:
    # %pip install --quiet "posenc @ git+https://github.com/posenc-org/posenc@main"

# %% [markdown]
# `posenc.plot` 负责画图（它会导入 matplotlib；只写 `import posenc` 则不会）。
# 我们用 float64 计算：对这些由几十个正弦和余弦求和得到的量，它的舍入误差约为 $10^{-15}$，
# 所以下面的检查可以设得很严：容差为 $10^{-12}$ 或更小，意思就是“在 float64 舍入误差范围内相等”。

# %%
# %matplotlib inline
import matplotlib.pyplot as plt
import numpy as np

import posenc
import posenc.plot

np.set_printoptions(precision=4, suppress=True)


def table(length, d_model, base=10000.0, layout="interleaved"):
    return posenc.positional_encoding(length, d_model, base=base, layout=layout, dtype=np.float64)


def dot_by_offset(k, d_model, base=10000.0):
    """PE(p) · PE(p + k) for even d_model, from the formula: sum over pairs of cos(k w_i)."""
    rates = 2 * np.pi / posenc.wavelengths(d_model, base)
    return np.cos(np.multiply.outer(k, rates)).sum(axis=-1)


# %% [markdown]
# ## 1. 波长构成等比数列
#
# 第 $i$ 对（第 $2i$ 列和第 $2i+1$ 列）每前进一个位置转过 $w_i = 10000^{-2i/d}$ 弧度，
# 所以它每隔 $\lambda_i = 2\pi / w_i = 2\pi \cdot 10000^{2i/d}$ 个位置重复一次：这就是它的*波长*。
# `posenc.wavelengths` 返回这些波长。每个波长都是前一个的 $10000^{2/d}$ 倍，公比恒定：
# 这是一个[等比数列](https://en.wikipedia.org/wiki/Geometric_progression)，它从 $2\pi$ 开始，
# 共 $d/2$ 项，最后一项比 $10000 \cdot 2\pi$ 差一个公比。

# %%
d_model = 64
lengths = posenc.wavelengths(d_model)
ratio = 10000 ** (2 / d_model)
print("first four:", lengths[:4].round(3), " last:", lengths[-1].round(1))
print(f"ratio 10000^(2/{d_model}) = {ratio:.6f}")
np.testing.assert_allclose(lengths[1:] / lengths[:-1], ratio, rtol=1e-13)  # one constant ratio

# %% [markdown]
# 有一份讲义把公比写成 $10000^{1/d}$，那是把每一列都算了进去。实际上公比是 $10000^{2/d}$：
# 一个正弦和它的余弦共用同一个波长，所以波长每隔两列才变一次。
# 最后一个波长与 $10000 \cdot 2\pi$ 正好差这一个公比，即后者乘以 $10000^{-2/d}$；
# 模型越宽，这个因子越接近 1：在 $d = 512$ 时，最长波长是 $10000 \cdot 2\pi$ 的 0.9647，“几乎”就是全部。

# %%
shares = {d: posenc.wavelengths(d)[-1] / (10000 * 2 * np.pi) for d in (16, 64, 512, 4096)}
for d, share in shares.items():
    print(f"d_model={d:5d}: longest wavelength = {share:.4f} x 10000·2π")
assert all(np.isclose(share, 10000 ** (-2 / d)) for d, share in shares.items())  # one ratio short

# %% [markdown]
# 在对数坐标下，等比数列是一条直线。每个点对应 $d=64$ 的表中的一列；
# 一个正弦和它旁边的余弦处在同一高度。两条虚线分别是 $2\pi$ 和 $10000 \cdot 2\pi$。

# %%
posenc.plot.wavelengths(d_model)
plt.show()

# %% [markdown]
# 同一个事实也能直接在列上看到：下面是第 0、2、4 对的正弦列在 100 个位置上的图像，
# 每一条的波长都是前一条的 $10000^{4/64} \approx 1.78$ 倍。

# %%
assert round(lengths[2] / lengths[0], 2) == 1.78  # 10000^(4/64)
wide = table(100, d_model)
posenc.plot.columns(wide, [0, 4, 8], title="sine columns of pairs 0, 2, 4 (d_model = 64)")
plt.show()

# %% [markdown]
# ## 2. 像二进制计数器，又不完全像
#
# 把位置 0 … 255 写成二进制（最低位在前），放在一张 16 列的正弦位置编码表旁边。
# 两者都是最左边的列变化最快，越往右的列变化越慢。

# %%
positions = np.arange(256)
bits = (positions[:, None] >> np.arange(8)) & 1  # column j is bit j
small = table(256, 16)

fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.5), layout="constrained")
posenc.plot.heatmap(bits, left, cmap="Greys", vmin=0, vmax=1, xlabel="bit (least significant first)",
                    clabel="bit", title="binary counter, 8 bits")
posenc.plot.heatmap(small, right, title="sinusoidal table, d_model = 16")
plt.show()

# %% [markdown]
# **相似之处。** 第 $j$ 位每隔 $2^{j+1}$ 个位置重复一次，所以周期按公比 2 等比增长；
# 正弦表的各对每隔 $\lambda_i$ 个位置重复一次，公比为 $10000^{2/16} \approx 3.16$。

# %%
bit_periods = 2 ** (np.arange(8) + 1)
small_lengths = posenc.wavelengths(16)
print("bit periods: ", bit_periods)
print("wave periods:", small_lengths.round(1))
assert round(small_lengths[1] / small_lengths[0], 2) == 3.16  # 10000^(2/16)

# %% [markdown]
# 快的列区分相邻的位置，慢的列区分相距很远的位置，合在一起，每个位置就有了自己独有的一行。
# 例如，位置 0 和 44 在第一对上只相差 0.02（44 与 $7 \cdot 2\pi$ 相差不到 0.02），
# 要靠更慢的几对才能区分开；这就像 0 和 2 的第 0 位相同、第 1 位不同。

# %%
first_pair = np.linalg.norm(small[44, :2] - small[0, :2])
whole_row = np.linalg.norm(small[44] - small[0])
print(f"44 - 7·2π = {44 - 7 * 2 * np.pi:.4f}; rows 0 and 44: {first_pair:.4f} apart in the first pair, "
      f"{whole_row:.4f} in the whole row")
assert round(first_pair, 2) == 0.02

# %% [markdown]
# **不同之处。**
#
# - 计数器会回绕：走完 256 步后，位置 256 读起来和位置 0 完全一样。而波永远不会让某一行
#   精确地重现：第一对每个位置转 1 弧度，所以第 $p$ 行等于第 0 行，当且仅当 $p$ 是 $2\pi$ 的整数倍，
#   而由于 $\pi$ 是无理数，没有任何整数 $p > 0$ 满足这一点。（各行最多能接近到什么程度，见第 3 节。）
# - 在二进制中，前进一步的“大小”并不总是一样：127 → 128 翻转了全部八个位，
#   128 → 129 只翻转一个。而在正弦表的各行之间，前进一步的距离处处相同
#   （在 float64 舍入误差范围内），前进 $k$ 步也是如此（原因见第 5 节）。
# - 二进制的各行长度不同（取决于 1 的个数）；正弦表的每一行长度都相同（第 3 节）。
# - 位只能是 0 或 1，而且只在整数位置上有定义；波是光滑的，取值在 $[-1, 1]$ 之内，
#   在位置与位置之间也有定义。

# %%
flips = np.sum(bits[1:] != bits[:-1], axis=1)  # bits changed by n -> n + 1
steps = np.linalg.norm(small[1:] - small[:-1], axis=1)  # distance PE(p) -> PE(p + 1)
print(f"bits flipped by 127 -> 128: {flips[127]}, by 128 -> 129: {flips[128]}")
print(f"distance of one sinusoidal step: {steps.min():.9f} to {steps.max():.9f}")
assert np.ptp(steps) < 1e-12  # the same everywhere, to float64 round-off

# %% [markdown]
# ## 3. 每一行长度相同，且没有两行相等
#
# 每一对给一行的长度平方贡献 $\sin^2 + \cos^2 = 1$，所以当 $d$ 为偶数时，
# 每一行的范数都恰好是 $\sqrt{d/2}$，无论在哪个位置、用哪种布局。
# 下面是 $d = 64$ 的表中的 100 000 个位置，范数全都是 $\sqrt{32}$：

# %%
long = table(100_000, d_model)
norms = np.linalg.norm(long, axis=1)
print(f"norms from {norms.min():.10f} to {norms.max():.10f}; sqrt(32) = {np.sqrt(32):.10f}")
np.testing.assert_allclose(norms, np.sqrt(d_model / 2), rtol=1e-13)

# %% [markdown]
# 当 $d$ 为奇数时，最后一个正弦没有配对的余弦，范数的平方是
# $(d-1)/2 + \sin^2(p\,w_{\text{last}})$：它在 $(d-1)/2$ 和 $(d+1)/2$ 之间变化。
# 对 $d = 7$，在 25 000 个位置上（那个落单的正弦大约转了 1.5 圈），它从 3 变到 4：

# %%
odd = table(25_000, 7)
squared = np.sum(odd**2, axis=1)
last_rate = 2 * np.pi / posenc.wavelengths(7)[-1]
print(f"d_model=7: squared norms from {squared.min():.6f} to {squared.max():.6f}")
np.testing.assert_allclose(squared, 3 + np.sin(np.arange(25_000) * last_rate) ** 2, atol=1e-12)

# %% [markdown]
# 各行互不相同。对 2000 个位置，我们可以把每一行和其他每一行都比较一遍。
# 距离最近的一对恰好是*相邻*的位置，即 $|p - q| = 1$：

# %%
block = long[:2000]
squared_norms = np.sum(block**2, axis=1)
distances = np.sqrt(np.maximum(squared_norms[:, None] + squared_norms[None, :] - 2 * block @ block.T, 0))
np.fill_diagonal(distances, np.inf)
p, q = np.unravel_index(np.argmin(distances), distances.shape)
print(f"closest pair among 2000 positions: {distances.min():.4f} apart, offset |p - q| = {abs(p - q)}")  # every neighbouring pair ties
assert abs(p - q) == 1

# %% [markdown]
# 对更大的范围，我们借助第 5 节给出的一个事实：第 $p$ 行与第 $p + k$ 行之间的距离只取决于 $k$，
# $\lVert PE(p+k) - PE(p) \rVert^2 = 2\sum_i (1 - \cos k w_i)$。
# 我们先在上面那 2000 行上检验这个公式：

# %%
def distance_by_offset(k, d_model, base=10000.0):
    return np.sqrt(np.maximum(2 * (d_model / 2 - dot_by_offset(k, d_model, base)), 0))


offsets = np.abs(np.subtract.outer(np.arange(2000), np.arange(2000)))
np.testing.assert_allclose(distances[offsets > 0], distance_by_offset(offsets[offsets > 0], d_model), atol=1e-9)

# %% [markdown]
# 然后用它检查直到 100 000 的偏移量：没有任何其他位置落在相邻位置的距离之内。

# %%
far = distance_by_offset(np.arange(1, 100_000), d_model)
print(f"offsets 1..99999: distance to the neighbour {far[0]:.4f}; smallest beyond k = 1: {far[1:].min():.4f}")
assert far[1:].min() > far[0]

# %% [markdown]
# ## 4. 平移位置就是旋转
#
# 利用两角和公式，可以逐对地把 $PE(p)$ 变成 $PE(p + k)$，所用的系数只取决于 $k$，与 $p$ 无关：
#
# $$
# \begin{pmatrix}\sin (p+k)w_i \\ \cos (p+k)w_i\end{pmatrix}
# = \begin{pmatrix}\cos k w_i & \sin k w_i \\ -\sin k w_i & \cos k w_i\end{pmatrix}
#   \begin{pmatrix}\sin p w_i \\ \cos p w_i\end{pmatrix}.
# $$
#
# `posenc.shift_matrix(k, d_model)` 把这些 $2 \times 2$ 旋转放在对角线上，得到矩阵 $M_k$：
# 对列向量有 $PE(p+k) = M_k\,PE(p)$，所以由行组成的表平移时写作 `table @ M.T`。
# 下面是 $d = 16$ 时的 $M_5$：它是分块对角矩阵；第 $i$ 块转过的角度为 $5 w_i$，
# 沿对角线往下越来越小，所以最后几块几乎就是单位矩阵
# （最后一块只转了 $5 \cdot 10000^{-14/16} \approx 0.0016$ 弧度）。

# %%
m5 = posenc.shift_matrix(5, 16)
posenc.plot.heatmap(m5, xlabel="column of PE(p)", ylabel="row: column of PE(p + 5)", clabel="entry",
                    title="posenc.shift_matrix(5, 16)")
plt.show()
print(m5[:4, :4].round(4))
print(f"angle of the last block: {np.arctan2(m5[-2, -1], m5[-1, -1]):.4f} radians")
np.testing.assert_allclose(m5[:2, :2], [[np.cos(5), np.sin(5)], [-np.sin(5), np.cos(5)]], rtol=1e-15)

# %% [markdown]
# 这个恒等式对整数、负数和小数的偏移量都成立，无论位置大小，也无论哪种布局
# （其他布局对 $M_k$ 的行和列所做的置换，与它们对表的列所做的置换相同）。
# 在所有这些情况中，最大误差都低于 $10^{-10}$：在位置 123 456 处，角度接近 $10^5$ 弧度，
# 而 float64 对这么大的角度的舍入误差约为 $10^{-11}$。

# %%
starts = np.array([0.0, 1.0, 17.0, 250.5, 9999.0, 123456.0])
shifts = (1, 5, 37.5, -12, 1000)
errors = {}
for layout in posenc.LAYOUTS:
    before = posenc.encode(starts, d_model, layout=layout, dtype=np.float64)
    errors[layout] = max(
        np.abs(before @ posenc.shift_matrix(k, d_model, layout=layout).T
               - posenc.encode(starts + k, d_model, layout=layout, dtype=np.float64)).max()
        for k in shifts
    )
print({layout: bool(error < 1e-10) for layout, error in errors.items()})
assert max(errors.values()) < 1e-10

# %% [markdown]
# 平移的复合与旋转一样：$M_j M_k = M_{j+k}$，$M_{-k} = M_k^\top$，并且每个 $M_k$
# 都是正交矩阵——这不过是“每一行长度相同”的另一种说法。

# %%
m3, m7 = posenc.shift_matrix(3, d_model), posenc.shift_matrix(7, d_model)
gaps = {
    "M3 M7 = M10": np.abs(m3 @ m7 - posenc.shift_matrix(10, d_model)).max(),
    "M(-7) = M7ᵀ": np.abs(posenc.shift_matrix(-7, d_model) - m7.T).max(),
    "M7 M7ᵀ = I": np.abs(m7 @ m7.T - np.eye(d_model)).max(),
}
print({claim: bool(gap < 1e-14) for claim, gap in gaps.items()})
assert max(gaps.values()) < 1e-14  # float64 round-off of 2 x 2 products

# %% [markdown]
# **这就是为什么既要正弦也要余弦。** 如果只有正弦，计算 $\sin(p + k)w$ 需要
# $\cos p w$，而行里并没有它。奇数宽度在最后一列恰好就有这个问题，所以 `shift_matrix` 拒绝处理它：

# %%
try:
    posenc.shift_matrix(5, 7)
except ValueError as error:
    print("ValueError:", error)

# %% [markdown]
# 在这种情况下，任何矩阵都做不到。$d = 7$ 时落单的正弦的波长为
# $2\pi \cdot 10000^{6/7} \approx 16\,856$ 个位置；我们在 25 000 个位置上（约为它的 1.5 圈）
# 用最小二乘法拟合从 $PE(p)$ 到 $PE(p+5)$ 的最佳线性映射。它对六个成对的列的拟合
# 达到了 float64 舍入误差的精度（低于 $10^{-9}$），但对最后那个落单的正弦偏差了 0.0019。

# %%
lone = posenc.wavelengths(7)[-1]
print(f"wavelength of the lone sine: {lone:.0f}, {25_000 / lone:.1f} turns in 25 000 positions")
grid_positions = np.arange(0, 25_000, 7.0)
now, later = posenc.encode(grid_positions, 7, dtype=np.float64), posenc.encode(grid_positions + 5, 7, dtype=np.float64)
fit, *_ = np.linalg.lstsq(now, later, rcond=None)
residual = np.abs(now @ fit - later).max(axis=0)
print("largest misfit per column:", residual.round(4))
assert residual[:6].max() < 1e-9 and round(residual[6], 4) == 0.0019

# %% [markdown]
# ## 5. 两个位置的点积只取决于它们的偏移量
#
# 把旋转乘开：$PE(p) \cdot PE(p+k) = \sum_i \cos(k\,w_i)$。式子里没有 $p$，
# 所以两个位置的相似度只是它们的偏移量的函数。它是对称的，$f(-k) = f(k)$，因为余弦是偶函数；
# 它在 $k = 0$ 处最大，等于 $d/2$。由所有点积组成的矩阵中，平行于对角线的每条带上数值恒定：

# %%
rows = table(200, d_model)
posenc.plot.similarity(rows, title="PE(p) · PE(q), d_model = 64")
plt.show()

gram = rows @ rows.T
k_of = np.abs(np.subtract.outer(np.arange(200), np.arange(200)))
np.testing.assert_allclose(gram, dot_by_offset(k_of, d_model), atol=1e-12)  # depends on |q - p| only

# %% [markdown]
# 以偏移量为横轴，从三个不同位置出发测得的曲线彼此重合。点积随 $|k|$ 增大而下降，
# 但并非单调下降：快的列对带来了波纹。

# %%
posenc.plot.dot_by_offset(rows, positions=(0, 60, 120), title="d_model = 64")
plt.show()

# %%
f = dot_by_offset(np.arange(0, 65_536), d_model)
rises = np.flatnonzero(np.diff(f[:200]) > 0)
print(f"first offsets where f rises again: {rises[:3]}; {rises.size} rises below k = 200")
assert rises.size > 0

# %% [markdown]
# 在每个倍频程（偏移量翻一倍的区间）$2^m \le k < 2^{m+1}$ 上取平均，它确实在下降：
# 直到 $k = 1024$ 都是一个倍频程比一个低，甚至波纹的峰值直到 $k = 4096$ 也都在下降；
# 再往外，最慢的几对转了回来，峰值又重新上升（第 6 节）。

# %%
octaves = [f[2**m : 2 ** (m + 1)] for m in range(1, 16)]
means = np.array([o.mean() for o in octaves])
peaks = np.array([o.max() for o in octaves])
print("mean over k in [2^m, 2^(m+1)), m = 1..15:", means.round(1))
print("peak over k in [2^m, 2^(m+1)), m = 1..15:", peaks.round(1))
assert np.all(np.diff(means[:9]) < 0)  # falls octave after octave up to k = 1024

# %% [markdown]
# ## 6. 哪里会出问题
#
# **底数太小。** 最长波长小于 $2\pi \cdot \text{base}$。当底数为 10、$d = 64$ 时，
# 最长波长只有 58 个位置，所以在几百个词元（token）的序列中，每一对都已经转了很多圈，
# 没有哪一对变化得足够慢，能表达“远”或“更远”。点积除以它在 0 处的值之后，
# 在 5 个位置之内就从 1 降到约 0（$k = 5$ 时为 $-0.01$），之后只在 0 附近摆动
# （直到 $k = 1023$ 都不超过 $\pm 0.33$；从 $k = 64$ 起，它在 $k$ 的每个倍频程上的平均值
# 四舍五入后为 $\pm 0.00$）。相距 300 的位置看起来（0.07）反而比相距 10 的位置（$-0.19$）更相似。
# 而底数为 10000 时，在同样的范围内，各倍频程的平均值稳步下降。

# %%
k = np.arange(1024)
fig, ax = plt.subplots(figsize=(9, 3.5), layout="constrained")
for base in (10, 100, 10000):
    ax.plot(k[1:], dot_by_offset(k, d_model, base)[1:] / (d_model / 2), lw=1, label=f"base {base:g}")
ax.set_xscale("log")
ax.set_xlabel("offset k")
ax.set_ylabel("PE(p)·PE(p+k) / PE(p)·PE(p)")
ax.legend()
plt.show()

# %%
small_base = dot_by_offset(k, d_model, 10) / (d_model / 2)
paper_base = dot_by_offset(k, d_model) / (d_model / 2)
small_means = np.array([small_base[2**m : 2 ** (m + 1)].mean() for m in range(1, 10)])
paper_means = np.array([paper_base[2**m : 2 ** (m + 1)].mean() for m in range(1, 10)])
print(f"base 10: longest wavelength {posenc.wavelengths(d_model, 10)[-1]:.0f}; at k = 5: {small_base[5]:.2f}; "
      f"largest |value| from k = 5 on: {np.abs(small_base[5:]).max():.2f}; k = 10: {small_base[10]:.2f}, "
      f"k = 300: {small_base[300]:.2f}")
print("mean per octave, base 10:   ", small_means.round(2))
print("mean per octave, base 10000:", paper_means.round(2))
assert round(small_base[300], 2) == 0.07 and round(small_base[10], 2) == -0.19

# %% [markdown]
# **超出最长波长的位置。** 最慢的一对就像一根时钟指针，每经过一个最长波长转一圈。
# 单凭它的角度，就能在这个波长之内精确读出位置，之后它就会回绕：$p$ 和 $p + \lambda_{\max}$
# 在最慢的一对上看起来一样，其他每一对在各自的波长上也是如此。超出最长波长之后，
# 只有各对的组合还能区分位置；而如果对数很少，这个组合可能任意接近于重复：
# 这时两个相距很远的位置看起来几乎一样。我们称之为*混叠*（aliasing）。
# 以 $d = 8$、底数 100 为例：$\lambda_{\max} \approx 199$。

# %%
d_few, base_few = 8, 100.0
longest = posenc.wavelengths(d_few, base_few)[-1]
ps = np.arange(0, 600.0)
slow = posenc.encode(ps, d_few, base=base_few, dtype=np.float64)[:, -2:]  # (sin, cos) of the slowest pair
readout = np.mod(np.arctan2(slow[:, 0], slow[:, 1]), 2 * np.pi) / (2 * np.pi) * longest
print(f"longest wavelength: {longest:.2f}; the slowest pair reads 150 as {readout[150]:.2f}, "
      f"350 as {readout[350]:.2f}, 550 as {readout[550]:.2f}")
np.testing.assert_allclose(readout, np.mod(ps, longest), atol=1e-9)  # position modulo the wavelength

# %% [markdown]
# 从位置 $p$ 到 $p + k$ 的距离随 $k$ 的变化：在最长波长之内（虚线左侧），
# 其他每个位置都比相邻位置 $p + 1$（灰线）更远；超过它之后，有些位置比相邻位置还近；
# 在很远的地方，$k = 792\,184$ 处，有一个位置几乎与 $p$ 完全相同
# （距离 0.022，而相邻位置的距离是 1.015）：这就是混叠。

# %%
few = distance_by_offset(np.arange(1_000_000), d_few, base_few)
fig, ax = plt.subplots(figsize=(9, 3.5), layout="constrained")
ax.plot(np.arange(1, 2000), few[1:2000], lw=0.8)
ax.axvline(longest, color="k", ls="--", lw=1, label="longest wavelength")
ax.axhline(few[1], color="grey", lw=1, label="distance to p + 1")
ax.set_xlabel("offset k")
ax.set_ylabel("|PE(p + k) - PE(p)|")
ax.set_title("d_model = 8, base = 100")
ax.legend(loc="lower right")
plt.show()

inside = few[2 : int(longest) + 1]
closer = np.flatnonzero(few[2:] < few[1]) + 2
print(f"neighbour: {few[1]:.3f}; nearest inside the longest wavelength: {inside.min():.3f}")
print(f"nearest of all below 10^6: {few[1:].min():.3f}, at k = {few[1:].argmin() + 1}")
assert inside.min() > few[1] and closer[0] > longest

# %% [markdown]
# 底数 10000 加上 $d = 64$，能让这种情况离得很远：它们的最长波长是 47 117 个位置，
# 而第 3 节在 100 000 以内没有找到任何比相邻位置更近的偏移量。
# （整数位置之间也足够密，能跟上每一列：无论底数是多少，最快的一列每个位置只转 1 弧度，
# 不到半圈，所以从一个位置到下一个位置，没有哪一列能悄悄多转一圈而不被察觉。）

# %%
print(f"longest wavelength, d_model = 64, base 10000: {posenc.wavelengths(d_model)[-1]:.0f}")
assert round(posenc.wavelengths(d_model)[-1]) == 47117

# %% [markdown]
# ## 7. d_model 和底数如何改变图像
#
# 小多图（small multiples）：表的前 100 个位置，横向是三种宽度，纵向是三种底数。
# 更大的底数会拉长除第一个以外的所有波长（最左边总是 $\sin p$、$\cos p$），
# 所以表中更多的部分几乎保持不变；更大的宽度则把同一个波长范围填得更密。

# %%
widths, bases = [16, 64, 256], [100.0, 10000.0, 1e6]
posenc.plot.grid(100, widths, bases)
plt.show()

# %% [markdown]
# 把“几乎不变”量化：在 100 个位置上变化小于 0.1 的列所占的比例，在每种宽度下都随底数增大而增大。

# %%
still = np.array([[np.mean(np.ptp(table(100, d, b), axis=0) < 0.1) for d in widths] for b in bases])
print("share of columns that change by less than 0.1 over the 100 positions")
print("(rows: base 100, 1e4, 1e6; columns: d 16, 64, 256):")
print(still.round(2))
assert np.all(np.diff(still, axis=0) > 0)  # a larger base: more of the table nearly constant

# %% [markdown]
# 同样的网格，这次画的是点积随偏移量的变化，并缩放到从 1 开始。
# 它的宽度随底数增大：我们用它第一次降到一半以下时的偏移量来衡量宽度。
# 对两个较大的底数，它也随宽度增大。

# %%
posenc.plot.grid(501, widths, bases, kind="offset")
plt.show()

half_widths = np.array(
    [[np.argmax(dot_by_offset(np.arange(2000), d, b) < d / 4) for d in widths] for b in bases]
)
print("first k with PE(0)·PE(k) < PE(0)·PE(0) / 2 (rows: base 100, 1e4, 1e6; columns: d 16, 64, 256)")
print(half_widths)
assert np.all(np.diff(half_widths, axis=0) > 0)  # wider with a larger base, at every width

# %% [markdown]
# `posenc.plot.grid` 接受任意的宽度和底数；上面没有画出的宽度和底数，只要一次调用就能画出一个面板，
# 这里是 $d = 32$、底数 500，它的最长波长为 $2\pi \cdot 500^{30/32} \approx 2130$ 个位置：

# %%
fig = posenc.plot.grid(100, [32], [500.0])
plt.show()
assert round(posenc.wavelengths(32, 500.0)[-1]) == 2130

# %% [markdown]
# ## 小结
#
# - **等比的波长。** 第 $i$ 对每隔 $\lambda_i = 2\pi \cdot
#   \text{base}^{2i/d}$ 个位置重复一次；每个波长是前一个的 $\text{base}^{2/d}$ 倍，
#   从 $2\pi$ 开始，到比 $2\pi \cdot \text{base}$ 差一个公比为止。
# - **差不多是二进制计数器。** 两者都从快的列排到慢的列；位会精确地重复，每一步的大小不同；
#   波永远不会重复，每个 $k$ 步的大小都相同。
# - **长度相等。** 对偶数 $d$，$\lVert PE(p) \rVert = \sqrt{d/2}$；对奇数 $d$，
#   范数的平方为 $(d-1)/2 + \sin^2(p\,w_{\text{last}})$。
# - **各行互异。** 在 $d = 64$ 时，100 000 个位置中没有任何两个重合；
#   离某一行最近的，总是相邻位置的那一行。
# - **相对位置就是旋转。** $PE(p+k) = M_k\,PE(p)$，其中 $M_k$ 是按 $k w_i$ 旋转的分块对角矩阵，
#   对每种布局都成立；对奇数宽度中落单的正弦，不存在这样的线性映射，
#   这就是表中既需要正弦也需要余弦的原因。
# - **相似度只取决于偏移量。** $PE(p)\cdot PE(p+k) = \sum_i \cos k w_i$：
#   对称，在 0 处最大，带着波纹下降。
# - **失效模式。** 底数太小会把相似度压平成噪声；超过最长波长后，
#   相距很远的位置可能比相邻位置还近（混叠）。
# - **两个旋钮。** 更大的底数让相似度曲线更宽，并让更多的列几乎不动；
#   更大的宽度把波长范围填得更密。
#
# `tests/test_intuition.py` 中的性质测试（property tests）对随机的宽度（包括奇数宽度）、底数、
# 布局以及直到一百万的位置，检验了同样的事实。

# %% [markdown]
# ## 练习
#
# 每个练习都给你一份草稿和一个检查，检查会告诉你草稿哪里不对。这里给出的每份草稿都含有一个典型错误；
# 改正它，再运行检查，直到它显示“正确！”。卡住时，`nb04.<exercise>.hint()` 会给你一点提示，
# `nb04.<exercise>.solution()` 会打印参考答案的代码。
#
# ### 练习 1 · 预测波长
#
# 写代码之前先预测一下：当 $d = 16$、底数为 10000 时，第 3 对（第 6 列和第 7 列）
# 转完整整一圈需要多少个位置？然后补全 `wavelength(i, d_model,
# base)`；检查会尝试多种列对、宽度和底数。

# %%
from posenc.exercises import nb04


def wavelength(i, d_model, base):
    return 2 * np.pi * base ** (i / d_model)


nb04.wavelength.check(wavelength)

# %% [markdown]
# ### 练习 2 · 平移一对列的旋转
#
# 构造一个 $2 \times 2$ 矩阵，把 $PE(p)$ 的第 $i$ 对，即向量
# $(\sin p w_i, \cos p w_i)$，变成 $PE(p + k)$ 的同一对，底数取 10000。
# 下面的草稿用的是教科书里的旋转矩阵。（`posenc.shift_matrix` 的对角线上就有答案；
# 但请你改用两角和公式自己推出来。）

# %%
def rotation(k, i, d_model):
    angle = k * 10000.0 ** (-2 * i / d_model)
    return np.array([[np.cos(angle), -np.sin(angle)],
                     [np.sin(angle), np.cos(angle)]])


nb04.rotation.check(rotation)

# %% [markdown]
# ### 练习 3 · 太小的底数从哪里开始混叠
#
# 第 6 节对 $d = 8$、底数 100 找到了一些偏移量 $k$，使 $PE(p + k)$ 比相邻的 $PE(p + 1)$
# 离 $PE(p)$ 更近。写出 `first_alias(d_model, base)`：返回满足条件的最小的 $k \ge 2$
# （用第 3 节的 `distance_by_offset` 在 $10^6$ 以下搜索 $k$）。它在最长波长之前还是之后？
# 检查会尝试几种宽度和较小的底数。

# %%
def first_alias(d_model, base):
    far = distance_by_offset(np.arange(1_000_000), d_model, base)  # far[k]: from PE(p) to PE(p + k)
    return np.argmax(far[2:] < far[1])


nb04.first_alias.check(first_alias)

# %% [markdown]
# ## 交叉检查
#
# 上面各句话背后的检查，都集中在这里（每条注释都写明了它对应的论断；
# $10^{-12}$ 及以下的容差对应 float64 舍入误差）。

# %%
# Cross-checks of section 1: the progression starts at 2π and stops one ratio short of 10000·2π; 10000^(1/d) is not its ratio.
np.testing.assert_allclose(lengths[0], 2 * np.pi, rtol=1e-15)
np.testing.assert_allclose(lengths[-1], 10000 * 2 * np.pi / ratio, rtol=1e-13)
assert lengths.shape == (d_model // 2,) and np.all(np.diff(lengths) > 0)
assert not np.isclose(lengths[1] / lengths[0], 10000 ** (1 / d_model))
assert list(shares.values()) == sorted(shares.values()) and round(shares[512], 4) == 0.9647

# %%
# Cross-checks of section 2: bits repeat every 2^(j+1) and no sooner; the wave periods have one ratio; every row is its own.
for j, period in enumerate(bit_periods):
    assert np.array_equal(bits[period:, j], bits[:-period, j])
    assert not np.array_equal(bits[period // 2 :, j], bits[: -(period // 2), j])
np.testing.assert_allclose(small_lengths[1:] / small_lengths[:-1], 10000 ** (2 / 16), rtol=1e-13)
assert len({tuple(row) for row in bits}) == 256 and len({tuple(row) for row in small.round(6)}) == 256
pair_steps = np.hypot(small[1:, 0::2] - small[:-1, 0::2], small[1:, 1::2] - small[:-1, 1::2])
assert np.all(np.diff(pair_steps[0]) < 0)  # one step moves the fast pairs most
assert bits[:, 0].tolist() == [0, 1] * 128 and np.sum(bits[1:, 7] != bits[:-1, 7]) == 1
assert round(abs(44 - 7 * 2 * np.pi), 2) == 0.02 and whole_row > 1  # told apart by the slower pairs
assert bits[0, 0] == bits[2, 0] and bits[0, 1] != bits[2, 1]
assert np.array_equal((256 >> np.arange(8)) & 1, bits[0])  # the counter wraps
assert flips.min() == 1 and flips.max() == 8 and flips[127] == 8 and flips[128] == 1
ones = bits.sum(axis=1)
assert ones.min() == 0 and ones.max() == 8  # binary rows have different lengths
np.testing.assert_allclose(np.linalg.norm(small, axis=1), np.sqrt(8), rtol=1e-14)
between = posenc.encode(np.linspace(0, 3, 31), 16, dtype=np.float64)  # fractional positions
assert np.all(np.abs(between) <= 1)  # defined between positions, within [-1, 1]

# %%
# Cross-checks of sections 3 and 4
# 3. Norms in every layout; the odd width moves between (d-1)/2 and (d+1)/2; distinct rows.
for layout in posenc.LAYOUTS:
    np.testing.assert_allclose(np.linalg.norm(table(1000, 10, layout=layout), axis=1), np.sqrt(5), rtol=1e-14)
assert 3 <= squared.min() and squared.max() <= 4 and round(squared.min(), 6) == 3 and round(squared.max(), 6) == 4
assert round(25_000 / posenc.wavelengths(7)[-1], 1) == 1.5
np.testing.assert_allclose(distances.min(), np.linalg.norm(long[1] - long[0]), rtol=1e-9)
assert far.argmin() == 0

# 4. M_5: the last block turns by 5 w_last (so it is within that of the identity); two entries per row.
last_angle = 5 * 10000 ** (-14 / 16)
assert np.abs(m5[-2:, -2:] - np.eye(2)).max() <= last_angle and round(last_angle, 4) == 0.0016
assert np.count_nonzero(m5) == 2 * 16
for layout in posenc.LAYOUTS:  # M from the left; the layouts permute rows and columns of M alike
    perm = posenc.layout_permutation(d_model, "interleaved", layout)
    for shift in shifts:
        m = posenc.shift_matrix(shift, d_model, layout=layout)
        before = posenc.encode(starts, d_model, layout=layout, dtype=np.float64)
        after = posenc.encode(starts + shift, d_model, layout=layout, dtype=np.float64)
        np.testing.assert_allclose((m @ before.T).T, after, atol=1e-10)
        np.testing.assert_allclose(m, posenc.shift_matrix(shift, d_model)[np.ix_(perm, perm)], atol=1e-15)
np.testing.assert_allclose(lone, 2 * np.pi * 10000 ** (6 / 7), rtol=1e-14)
assert round(lone) == 16856 and round(25_000 / lone, 1) == 1.5

# %%
# Cross-checks of sections 5 and 6
# 5. The Gram matrix is symmetric, constant along its diagonals, f(-k) = f(k); f is largest at 0.
np.testing.assert_allclose(gram, gram.T, atol=0)
for shift in (1, 10, 77):
    diagonal = np.diagonal(gram, offset=shift)
    assert np.ptp(diagonal) < 1e-12
    np.testing.assert_allclose(np.diagonal(gram, offset=-shift), diagonal, atol=1e-12)
for p in (0, 60, 120):
    np.testing.assert_allclose(rows @ rows[p], f[np.abs(np.arange(200) - p)], atol=1e-12)
assert f[0] == d_model / 2 and np.all(f[1:] < f[0])
assert np.all(np.diff(peaks[:11]) < 0)  # the ripples' peaks fall up to k = 4096
assert peaks[13] > peaks[11]  # and rise again further out

# 6. A small base: about 0 at k = 5, never beyond ±0.33, octave means ±0.00 from k = 64 on; base 10000 falls.
assert round(posenc.wavelengths(d_model, 10)[-1]) == 58
assert round(small_base[5], 2) == -0.01 and np.abs(small_base[5:]).max() < 0.33
assert np.all(np.abs(small_means[5:]).round(2) == 0)  # from k = 64 on
assert np.all(np.diff(paper_means) < 0)
assert round(longest) == 199
assert round(few[1], 3) == 1.015 and round(few[1:].min(), 3) == 0.022 and few[1:].argmin() + 1 == 792_184
assert all(np.max(2 * np.pi / posenc.wavelengths(d, b)) <= 1 < np.pi for d in (2, 7, 64) for b in (1.5, 10, 1e4))

# %%
# Cross-checks of section 7: every wavelength but the first grows with the base; the longest grows
# with base and width; a wider table has a smaller step between wavelengths; the half widths grow
# with d for the larger bases.
for d in widths:
    grown = np.array([posenc.wavelengths(d, b) for b in bases])
    assert np.all(grown[:, 0] == 2 * np.pi) and np.all(np.diff(grown[:, 1:], axis=0) > 0)
longest_table = np.array([[posenc.wavelengths(d, b)[-1] for d in widths] for b in bases])
ratio_table = np.array([[b ** (2 / d) for d in widths] for b in bases])
assert np.all(np.diff(longest_table, axis=0) > 0) and np.all(np.diff(longest_table, axis=1) > 0)
assert np.all(np.diff(ratio_table, axis=1) < 0)
np.testing.assert_allclose(
    longest_table, 2 * np.pi * np.array(bases)[:, None] ** ((np.array(widths) - 2) / np.array(widths)), rtol=1e-12
)
assert np.all(np.diff(half_widths[1:], axis=1) > 0)
assert len(fig.axes) >= 1
print("all cross-checks hold")
