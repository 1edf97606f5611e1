# %% [markdown]
# # 04 · Por que senos e cossenos com comprimentos de onda geométricos funcionam
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/posenc-org/posenc/blob/main/notebooks/pt_BR/04_intuition.ipynb)
#
# **Pergunta:** O que faz de uma tabela de senos e cossenos com comprimentos de onda em progressão geométrica um bom código para posições, e quando ela deixa de ser?
#
# **Você será capaz de:**
# - prever o comprimento de onda de qualquer par de colunas a partir de `d_model` e da base;
# - escrever a rotação que leva a codificação da posição $p$ à de $p + k$;
# - dizer quando uma base é pequena demais para as posições de que você precisa e encontrar onde as linhas começam a ficar parecidas.
#
# **Pré-requisitos:** notebook 01 · **Tempo:** cerca de 50 minutos
#
# Por que senos *e* cossenos? Por que 10000? Por que comprimentos de onda em progressão
# geométrica, e o que torna a tabela "posicional", afinal? As notas de aula respondem em
# texto corrido: os comprimentos de onda vão de $2\pi$ a $10000 \cdot 2\pi$ em progressão
# geométrica; comprimentos de onda curtos carregam a posição local e os longos, a posição
# global, como os bits de um contador binário;
# [o artigo](https://arxiv.org/abs/1706.03762) (seção 3.5) acrescenta que $PE(pos + k)$ é
# uma função linear de $PE(pos)$. Aqui cada ideia vira uma figura e um fato que uma célula
# verifica; assim, este notebook falha se qualquer frase dele deixar de ser verdadeira.

# %%
# On Colab, install posenc from GitHub; elsewhere `make lab` has already installed it.
import sys

if "google.colab" in sys.modules:
    # %pip install --quiet "posenc @ git+https://github.com/posenc-org/posenc@main"

# %% [markdown]
# `posenc.plot` contém as figuras (ele importa o matplotlib; `import posenc` sozinho não).
# Trabalhamos em float64, cujo erro de arredondamento nessas somas de algumas dezenas de
# senos e cossenos fica perto de $10^{-15}$; por isso as verificações abaixo podem ser
# rigorosas: uma tolerância de $10^{-12}$ ou menos significa "iguais a menos do
# arredondamento em float64".

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
# ## 1. Os comprimentos de onda formam uma progressão geométrica
#
# O par $i$ (colunas $2i$ e $2i+1$) gira $w_i = 10000^{-2i/d}$ radianos por posição, então
# se repete a cada $\lambda_i = 2\pi / w_i = 2\pi \cdot 10000^{2i/d}$ posições: esse é o seu
# *comprimento de onda*. `posenc.wavelengths` devolve esses valores. Cada um é $10000^{2/d}$
# vezes o anterior, uma razão constante: uma
# [progressão geométrica](https://en.wikipedia.org/wiki/Geometric_progression) que começa
# em $2\pi$ e, com $d/2$ termos, para um passo (uma razão) antes de $10000 \cdot 2\pi$.

# %%
d_model = 64
lengths = posenc.wavelengths(d_model)
ratio = 10000 ** (2 / d_model)
print("first four:", lengths[:4].round(3), " last:", lengths[-1].round(1))
print(f"ratio 10000^(2/{d_model}) = {ratio:.6f}")
np.testing.assert_allclose(lengths[1:] / lengths[:-1], ratio, rtol=1e-13)  # one constant ratio

# %% [markdown]
# Uma das notas de aula dá a razão como $10000^{1/d}$, contando todas as colunas. Ela é
# $10000^{2/d}$: um seno e o seu cosseno compartilham um mesmo comprimento de onda, então o
# comprimento de onda só muda a cada duas colunas. O último comprimento de onda fica abaixo
# de $10000 \cdot 2\pi$ justamente por esse fator, $10000^{-2/d}$, que tende a 1 à medida
# que o modelo fica mais largo: com $d = 512$, o maior comprimento de onda é 0.9647 de
# $10000 \cdot 2\pi$, "quase" tudo.

# %%
shares = {d: posenc.wavelengths(d)[-1] / (10000 * 2 * np.pi) for d in (16, 64, 512, 4096)}
for d, share in shares.items():
    print(f"d_model={d:5d}: longest wavelength = {share:.4f} x 10000·2π")
assert all(np.isclose(share, 10000 ** (-2 / d)) for d, share in shares.items())  # one ratio short

# %% [markdown]
# Em escala logarítmica, uma progressão geométrica é uma reta. Cada ponto é uma coluna
# da tabela com $d=64$; um seno e o cosseno ao lado dele ficam na mesma altura. As linhas
# tracejadas são $2\pi$ e $10000 \cdot 2\pi$.

# %%
posenc.plot.wavelengths(d_model)
plt.show()

# %% [markdown]
# O mesmo fato visto nas próprias colunas: as colunas de seno dos pares 0, 2 e 4 ao longo
# de 100 posições, cada uma $10000^{4/64} \approx 1.78$ vez mais longa que a anterior.

# %%
assert round(lengths[2] / lengths[0], 2) == 1.78  # 10000^(4/64)
wide = table(100, d_model)
posenc.plot.columns(wide, [0, 4, 8], title="sine columns of pairs 0, 2, 4 (d_model = 64)")
plt.show()

# %% [markdown]
# ## 2. Como um contador binário, mas não exatamente
#
# Escreva as posições 0 … 255 em binário, com o bit menos significativo primeiro, ao lado
# de uma tabela senoidal de 16 colunas. Nas duas, a coluna mais à esquerda muda mais rápido
# e cada coluna mais à direita muda mais devagar.

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
# **O que é parecido.** O bit $j$ se repete a cada $2^{j+1}$ posições, então os períodos
# crescem geometricamente com razão 2; os pares senoidais se repetem a cada $\lambda_i$, com
# razão $10000^{2/16} \approx 3.16$.

# %%
bit_periods = 2 ** (np.arange(8) + 1)
small_lengths = posenc.wavelengths(16)
print("bit periods: ", bit_periods)
print("wave periods:", small_lengths.round(1))
assert round(small_lengths[1] / small_lengths[0], 2) == 3.16  # 10000^(2/16)

# %% [markdown]
# As colunas rápidas distinguem posições vizinhas, as colunas lentas distinguem posições
# distantes, e juntas elas dão a cada posição uma linha só sua. Por exemplo, as posições 0
# e 44 diferem só 0.02 no primeiro par (44 fica a menos de 0.02 de $7 \cdot 2\pi$)
# e são distinguidas pelos pares mais lentos, assim como 0 e 2 coincidem no bit 0 e diferem
# no bit 1.

# %%
first_pair = np.linalg.norm(small[44, :2] - small[0, :2])
whole_row = np.linalg.norm(small[44] - small[0])
print(f"44 - 7·2π = {44 - 7 * 2 * np.pi:.4f}; rows 0 and 44: {first_pair:.4f} apart in the first pair, "
      f"{whole_row:.4f} in the whole row")
assert round(first_pair, 2) == 0.02

# %% [markdown]
# **O que não é.**
#
# - O contador dá a volta: depois de 256 passos, a posição 256 é lida exatamente como a
#   posição 0. As ondas nunca trazem uma linha de volta exatamente: o primeiro par gira um
#   radiano por posição, então a linha $p$ só é igual à linha 0 se $p$ for um múltiplo
#   inteiro de $2\pi$, e nenhum número inteiro $p > 0$ é, já que $\pi$ é irracional. (O
#   quanto as linhas podem se aproximar é assunto da seção 3.)
# - Em binário, um passo de um nem sempre tem o mesmo tamanho: 127 → 128 inverte os oito
#   bits, 128 → 129 inverte um só. Entre linhas senoidais, um passo é a mesma distância em
#   todo lugar (a menos do arredondamento em float64), e o mesmo vale para todo passo de $k$
#   (a seção 5 explica por quê).
# - As linhas binárias têm comprimentos diferentes (a quantidade de uns); toda linha senoidal
#   tem o mesmo comprimento (seção 3).
# - Bits valem 0 ou 1 e só existem para posições inteiras; as ondas são suaves, ficam em
#   $[-1, 1]$ e também são definidas entre as posições.

# %%
flips = np.sum(bits[1:] != bits[:-1], axis=1)  # bits changed by n -> n + 1
steps = np.linalg.norm(small[1:] - small[:-1], axis=1)  # distance PE(p) -> PE(p + 1)
print(f"bits flipped by 127 -> 128: {flips[127]}, by 128 -> 129: {flips[128]}")
print(f"distance of one sinusoidal step: {steps.min():.9f} to {steps.max():.9f}")
assert np.ptp(steps) < 1e-12  # the same everywhere, to float64 round-off

# %% [markdown]
# ## 3. Todas as linhas têm o mesmo comprimento, e não há duas linhas iguais
#
# Cada par contribui com $\sin^2 + \cos^2 = 1$ para o comprimento ao quadrado de uma linha;
# então, para $d$ par, toda linha tem norma exatamente $\sqrt{d/2}$, em qualquer posição e
# em qualquer layout. Aqui estão 100 000 posições da tabela com $d = 64$, todas com norma
# $\sqrt{32}$:

# %%
long = table(100_000, d_model)
norms = np.linalg.norm(long, axis=1)
print(f"norms from {norms.min():.10f} to {norms.max():.10f}; sqrt(32) = {np.sqrt(32):.10f}")
np.testing.assert_allclose(norms, np.sqrt(d_model / 2), rtol=1e-13)

# %% [markdown]
# Com $d$ ímpar, o último seno não tem um cosseno como par, e a norma ao quadrado é
# $(d-1)/2 + \sin^2(p\,w_{\text{last}})$: ela varia entre $(d-1)/2$ e $(d+1)/2$. Para
# $d = 7$ ao longo de 25 000 posições (cerca de 1.5 volta do seno solitário), de 3 a 4:

# %%
odd = table(25_000, 7)
squared = np.sum(odd**2, axis=1)
last_rate = 2 * np.pi / posenc.wavelengths(7)[-1]
print(f"d_model=7: squared norms from {squared.min():.6f} to {squared.max():.6f}")
np.testing.assert_allclose(squared, 3 + np.sin(np.arange(25_000) * last_rate) ** 2, atol=1e-12)

# %% [markdown]
# As linhas são distintas. Para 2000 posições, podemos comparar cada linha com todas as
# outras. O par mais próximo está tão perto quanto posições *vizinhas*, $|p - q| = 1$:

# %%
block = long[:2000]
squared_norms = np.sum(block**2, axis=1)
distances = np.sqrt(np.maximum(squared_norms[:, None] + squared_norms[None, :] - 2 * block @ block.T, 0))
np.fill_diagonal(distances, np.inf)
p, q = np.unravel_index(np.argmin(distances), distances.shape)
print(f"closest pair among 2000 positions: {distances.min():.4f} apart, offset |p - q| = {abs(p - q)}")  # every neighbouring pair ties
assert abs(p - q) == 1

# %% [markdown]
# Para intervalos maiores, usamos um fato mostrado na seção 5: a distância entre as linhas
# $p$ e $p + k$ depende só de $k$, $\lVert PE(p+k) - PE(p) \rVert^2 = 2\sum_i (1 - \cos k w_i)$.
# Verificamos essa fórmula nas 2000 linhas acima:

# %%
def distance_by_offset(k, d_model, base=10000.0):
    return np.sqrt(np.maximum(2 * (d_model / 2 - dot_by_offset(k, d_model, base)), 0))


offsets = np.abs(np.subtract.outer(np.arange(2000), np.arange(2000)))
np.testing.assert_allclose(distances[offsets > 0], distance_by_offset(offsets[offsets > 0], d_model), atol=1e-9)

# %% [markdown]
# e depois a usamos para deslocamentos de até 100 000: nenhuma outra posição chega mais
# perto do que a distância até uma vizinha.

# %%
far = distance_by_offset(np.arange(1, 100_000), d_model)
print(f"offsets 1..99999: distance to the neighbour {far[0]:.4f}; smallest beyond k = 1: {far[1:].min():.4f}")
assert far[1:].min() > far[0]

# %% [markdown]
# ## 4. Deslocar uma posição é uma rotação
#
# A fórmula da soma de ângulos transforma $PE(p)$ em $PE(p + k)$ par a par, com
# coeficientes que dependem de $k$, mas não de $p$:
#
# $$
# \begin{pmatrix}\sin (p+k)w_i \\ \cos (p+k)w_i\end{pmatrix}
# = \begin{pmatrix}\cos k w_i & \sin k w_i \\ -\sin k w_i & \cos k w_i\end{pmatrix}
#   \begin{pmatrix}\sin p w_i \\ \cos p w_i\end{pmatrix}.
# $$
#
# `posenc.shift_matrix(k, d_model)` coloca essas rotações $2 \times 2$ na diagonal: é a
# matriz $M_k$ com $PE(p+k) = M_k\,PE(p)$ para vetores coluna; assim, uma tabela de linhas se
# desloca como `table @ M.T`. Aqui está $M_5$ para $d = 16$: diagonal em blocos; o bloco $i$
# gira pelo ângulo $5 w_i$, cada vez menor descendo a diagonal, então os últimos blocos são
# quase a identidade (o último gira $5 \cdot 10000^{-14/16} \approx 0.0016$ radiano).

# %%
m5 = posenc.shift_matrix(5, 16)
posenc.plot.heatmap(m5, xlabel="column of PE(p)", ylabel="row: column of PE(p + 5)", clabel="entry",
                    title="posenc.shift_matrix(5, 16)")
plt.show()
print(m5[:4, :4].round(4))
print(f"angle of the last block: {np.arctan2(m5[-2, -1], m5[-1, -1]):.4f} radians")
np.testing.assert_allclose(m5[:2, :2], [[np.cos(5), np.sin(5)], [-np.sin(5), np.cos(5)]], rtol=1e-15)

# %% [markdown]
# A identidade vale para deslocamentos inteiros, negativos e fracionários, em posições
# pequenas e grandes, em qualquer layout (os outros layouts permutam linhas e colunas de
# $M_k$ do mesmo jeito que permutam as colunas da tabela). O maior erro entre todos eles fica
# abaixo de $10^{-10}$: na posição 123 456 os ângulos estão perto de $10^5$ radianos, e o
# float64 arredonda um ângulo desse tamanho com erro de cerca de $10^{-11}$.

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
# Deslocamentos se compõem como rotações: $M_j M_k = M_{j+k}$, $M_{-k} = M_k^\top$, e toda
# $M_k$ é ortogonal, o que é outra forma de dizer que todas as linhas têm o mesmo
# comprimento.

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
# **É por isso que há senos e cossenos.** Só com senos, $\sin(p + k)w$ precisaria de
# $\cos p w$, que a linha não teria. Uma largura ímpar tem exatamente esse problema na sua
# última coluna, e `shift_matrix` a recusa:

# %%
try:
    posenc.shift_matrix(5, 7)
except ValueError as error:
    print("ValueError:", error)

# %% [markdown]
# Ali, nenhuma matriz resolve. O seno solitário de $d = 7$ tem comprimento de onda
# $2\pi \cdot 10000^{6/7} \approx 16\,856$ posições; ajustamos o melhor mapa linear por
# mínimos quadrados de $PE(p)$ para $PE(p+5)$ ao longo de 25 000 posições, cerca de 1.5 das
# suas voltas. Ele acerta as seis colunas em pares a menos do arredondamento em float64
# (abaixo de $10^{-9}$) e erra o último seno, o solitário, por 0.0019.

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
# ## 5. O produto escalar de duas posições depende só do deslocamento entre elas
#
# Multiplique a rotação: $PE(p) \cdot PE(p+k) = \sum_i \cos(k\,w_i)$. Não há $p$ aí; então
# a similaridade de duas posições é função apenas do deslocamento entre elas. Ela é
# simétrica, $f(-k) = f(k)$, porque o cosseno é uma função par; e é máxima, $d/2$, em
# $k = 0$. A matriz de todos os produtos escalares tem faixas constantes paralelas à
# diagonal:

# %%
rows = table(200, d_model)
posenc.plot.similarity(rows, title="PE(p) · PE(q), d_model = 64")
plt.show()

gram = rows @ rows.T
k_of = np.abs(np.subtract.outer(np.arange(200), np.arange(200)))
np.testing.assert_allclose(gram, dot_by_offset(k_of, d_model), atol=1e-12)  # depends on |q - p| only

# %% [markdown]
# Em função do deslocamento, medidas a partir de três posições diferentes, as curvas
# coincidem. O produto escalar cai à medida que $|k|$ cresce, mas não de forma monotônica:
# os pares rápidos acrescentam ondulações.

# %%
posenc.plot.dot_by_offset(rows, positions=(0, 60, 120), title="d_model = 64")
plt.show()

# %%
f = dot_by_offset(np.arange(0, 65_536), d_model)
rises = np.flatnonzero(np.diff(f[:200]) > 0)
print(f"first offsets where f rises again: {rises[:3]}; {rises.size} rises below k = 200")
assert rises.size > 0

# %% [markdown]
# Na média sobre cada oitava de deslocamentos, $2^m \le k < 2^{m+1}$, ele de fato cai,
# oitava após oitava, até $k = 1024$, e até os picos das ondulações caem até $k = 4096$; mais
# adiante, os pares mais lentos completam a volta e os picos sobem de novo (seção 6).

# %%
octaves = [f[2**m : 2 ** (m + 1)] for m in range(1, 16)]
means = np.array([o.mean() for o in octaves])
peaks = np.array([o.max() for o in octaves])
print("mean over k in [2^m, 2^(m+1)), m = 1..15:", means.round(1))
print("peak over k in [2^m, 2^(m+1)), m = 1..15:", peaks.round(1))
assert np.all(np.diff(means[:9]) < 0)  # falls octave after octave up to k = 1024

# %% [markdown]
# ## 6. O que dá errado
#
# **Uma base pequena demais.** O maior comprimento de onda fica abaixo de
# $2\pi \cdot \text{base}$. Com base 10 e $d = 64$, ele é de 58 posições; então, numa
# sequência de algumas centenas de tokens, todo par já deu muitas voltas, e nenhum par muda
# devagar o bastante para dizer "longe" ou "mais longe". O produto escalar, dividido pelo seu
# valor em 0, cai de 1 para cerca de 0 em 5 posições ($-0.01$ em $k = 5$) e depois só oscila
# em torno de 0 (nunca além de $\pm 0.33$ até $k = 1023$; sua média sobre cada oitava de $k$
# arredonda para $\pm 0.00$ a partir de $k = 64$). A posição a 300 de distância parece mais
# similar (0.07) do que a que está a 10 ($-0.19$). Com base 10000, as médias por oitava caem
# de forma constante no mesmo intervalo.

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
# **Posições além do maior comprimento de onda.** O par mais lento é um ponteiro de relógio
# que dá uma volta a cada intervalo igual ao maior comprimento de onda. Só com o seu ângulo
# já dá para ler a posição exatamente até esse comprimento de onda; depois, ele dá a volta: $p$ e $p + \lambda_{\max}$
# parecem iguais no par mais lento, e o mesmo vale para cada par no seu próprio comprimento
# de onda. Além do maior comprimento de onda, só a combinação dos pares ainda distingue as
# posições, e com poucos pares essa combinação pode chegar arbitrariamente perto de se
# repetir: duas posições distantes passam então a parecer quase iguais. Chamamos isso de
# *aliasing*. Tome $d = 8$ com base 100: $\lambda_{\max} \approx 199$.

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
# A distância da posição $p$ até $p + k$, em função de $k$: dentro do maior comprimento de
# onda (à esquerda da linha tracejada), qualquer outra posição está mais longe que a
# vizinha $p + 1$ (linha cinza); além dele, algumas posições chegam mais perto que a
# vizinha e, bem mais adiante, em $k = 792\,184$, uma é quase idêntica a $p$ (a 0.022 de
# distância, contra 1.015 da vizinha): aliasing.

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
# A base 10000 com $d = 64$ mantém isso bem longe: o maior comprimento de onda é de 47 117
# posições, e a seção 3 não encontrou nenhum deslocamento abaixo de 100 000 mais próximo que
# a vizinha. (As posições inteiras também ficam próximas o bastante umas das outras para
# acompanhar cada coluna: a mais rápida gira 1 radiano por posição, menos de meia volta,
# qualquer que seja a base; assim, de uma posição para a seguinte, nenhuma coluna pode pular
# uma volta sem que se perceba.)

# %%
print(f"longest wavelength, d_model = 64, base 10000: {posenc.wavelengths(d_model)[-1]:.0f}")
assert round(posenc.wavelengths(d_model)[-1]) == 47117

# %% [markdown]
# ## 7. Como d_model e a base mudam a figura
#
# Pequenos múltiplos: as primeiras 100 posições da tabela, para três larguras na
# horizontal e três bases na vertical. Uma base maior estica todos os comprimentos de onda,
# exceto o primeiro (a borda esquerda é sempre $\sin p$, $\cos p$); assim, uma parte maior
# da tabela fica quase constante. Uma largura maior preenche a mesma faixa de comprimentos de
# onda de forma mais densa.

# %%
widths, bases = [16, 64, 256], [100.0, 10000.0, 1e6]
posenc.plot.grid(100, widths, bases)
plt.show()

# %% [markdown]
# "Quase constante", medido: a fração de colunas que mudam menos de 0.1 ao longo das 100
# posições cresce com a base, em todas as larguras.

# %%
still = np.array([[np.mean(np.ptp(table(100, d, b), axis=0) < 0.1) for d in widths] for b in bases])
print("share of columns that change by less than 0.1 over the 100 positions")
print("(rows: base 100, 1e4, 1e6; columns: d 16, 64, 256):")
print(still.round(2))
assert np.all(np.diff(still, axis=0) > 0)  # a larger base: more of the table nearly constant

# %% [markdown]
# A mesma grade para o produto escalar em função do deslocamento, escalado para começar
# em 1. Sua largura cresce com a base: medimos essa largura como o primeiro deslocamento em que
# ele fica abaixo de meio. Para as duas bases maiores, ela também cresce com a largura da
# tabela.

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
# `posenc.plot.grid` aceita quaisquer larguras e bases; um painel para uma largura e uma
# base que não aparecem acima é uma única chamada; aqui, $d = 32$ com base 500, cujo maior
# comprimento de onda é de $2\pi \cdot 500^{30/32} \approx 2130$ posições:

# %%
fig = posenc.plot.grid(100, [32], [500.0])
plt.show()
assert round(posenc.wavelengths(32, 500.0)[-1]) == 2130

# %% [markdown]
# ## Resumo
#
# - **Comprimentos de onda geométricos.** O par $i$ se repete a cada $\lambda_i = 2\pi \cdot
#   \text{base}^{2i/d}$ posições; cada comprimento de onda é $\text{base}^{2/d}$ vezes o
#   anterior, de $2\pi$ até um passo (uma razão) antes de $2\pi \cdot \text{base}$.
# - **Quase um contador binário.** Os dois vão de colunas rápidas a colunas lentas; os bits
#   se repetem exatamente e seus passos têm tamanhos diferentes, as ondas nunca se repetem e
#   todo passo de $k$ tem o mesmo tamanho.
# - **Comprimentos iguais.** $\lVert PE(p) \rVert = \sqrt{d/2}$ para $d$ par; para $d$
#   ímpar, a norma ao quadrado é $(d-1)/2 + \sin^2(p\,w_{\text{last}})$.
# - **Linhas distintas.** Entre 100 000 posições, não há duas que coincidam com $d = 64$; a
#   linha mais próxima é sempre a vizinha.
# - **Posição relativa é uma rotação.** $PE(p+k) = M_k\,PE(p)$, com $M_k$ formada por
#   rotações diagonais em blocos por $k w_i$, em qualquer layout; não existe mapa linear
#   para o seno solitário de uma largura ímpar, e é por isso que a tabela precisa de
#   cossenos além de senos.
# - **A similaridade depende só do deslocamento.** $PE(p)\cdot PE(p+k) = \sum_i \cos k w_i$:
#   simétrica, máxima em 0, caindo com ondulações.
# - **Modos de falha.** Uma base pequena achata a similaridade em ruído; além do maior
#   comprimento de onda, posições distantes podem ficar mais próximas que as vizinhas
#   (aliasing).
# - **Os dois botões de ajuste.** Uma base maior alarga a similaridade e deixa mais colunas
#   quase paradas; uma largura maior preenche a faixa de comprimentos de onda de forma mais
#   densa.
#
# Os testes de propriedades em `tests/test_intuition.py` verificam os mesmos fatos para
# larguras aleatórias (inclusive ímpares), bases, layouts e posições de até um milhão.

# %% [markdown]
# ## Exercícios
#
# Cada exercício traz um rascunho e uma verificação que diz o que está errado nele. Cada
# rascunho guardado aqui contém um erro típico; corrija-o e rode a verificação de novo até
# ela dizer "Correct!". Se empacar, `nb04.<exercise>.hint()` dá uma dica e
# `nb04.<exercise>.solution()` mostra o código de referência.
#
# ### Exercício 1 · Preveja um comprimento de onda
#
# Antes de escrever código, faça uma previsão: para $d = 16$ e base 10000, quantas posições
# o par 3 (colunas 6 e 7) leva para dar uma volta completa? Depois complete
# `wavelength(i, d_model, base)`; a verificação testa vários pares, larguras e bases.

# %%
from posenc.exercises import nb04


def wavelength(i, d_model, base):
    return 2 * np.pi * base ** (i / d_model)


nb04.wavelength.check(wavelength)

# %% [markdown]
# ### Exercício 2 · A rotação que desloca um par
#
# Construa a matriz $2 \times 2$ que leva o par $i$ de $PE(p)$, o vetor
# $(\sin p w_i, \cos p w_i)$, ao mesmo par de $PE(p + k)$, para base 10000. O rascunho
# abaixo usa a matriz de rotação de um livro-texto. (`posenc.shift_matrix` tem a resposta na
# sua diagonal; em vez de copiá-la, deduza-a a partir da soma de ângulos.)

# %%
def rotation(k, i, d_model):
    angle = k * 10000.0 ** (-2 * i / d_model)
    return np.array([[np.cos(angle), -np.sin(angle)],
                     [np.sin(angle), np.cos(angle)]])


nb04.rotation.check(rotation)

# %% [markdown]
# ### Exercício 3 · Onde uma base pequena demais começa a causar aliasing
#
# A seção 6 encontrou, para $d = 8$ e base 100, deslocamentos $k$ em que $PE(p + k)$ está
# mais perto de $PE(p)$ do que a vizinha $PE(p + 1)$. Escreva `first_alias(d_model, base)`:
# o menor $k \ge 2$ desse tipo (procure $k$ abaixo de $10^6$ com `distance_by_offset`, da
# seção 3). Ele vem antes ou depois do maior comprimento de onda? A verificação testa
# algumas larguras e bases pequenas.

# %%
def first_alias(d_model, base):
    far = distance_by_offset(np.arange(1_000_000), d_model, base)  # far[k]: from PE(p) to PE(p + k)
    return np.argmax(far[2:] < far[1])


nb04.first_alias.check(first_alias)

# %% [markdown]
# ## Verificações cruzadas
#
# O conjunto de verificações por trás das frases acima, num só lugar (cada comentário
# nomeia a afirmação; tolerâncias de $10^{-12}$ ou menos correspondem ao arredondamento em
# float64).

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
