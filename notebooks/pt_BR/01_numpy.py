# %% [markdown]
# # 01 · Codificação posicional em NumPy
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/posenc-org/posenc/blob/main/notebooks/pt_BR/01_numpy.ipynb)
#
# Um Transformer enxerga sua entrada como um conjunto; por isso, cada posição recebe um vetor
# fixo de senos e cossenos somado ao seu embedding. Este notebook constrói essa tabela com
# NumPy puro, um pequeno passo de cada vez, e confere cada passo com o pacote `posenc`.
# Seguimos duas aulas. A primeira é um notebook Jupyter em inglês, em NumPy: ela constrói a
# tabela para 10 posições e largura 6 em float32, imprime com oito casas decimais e empacota
# os passos numa classe. A segunda é um conjunto de notas em chinês, em NumPy (com uma
# conversão para TensorFlow no final): ela escreve senos e cossenos diretamente em colunas
# alternadas de uma tabela de largura 16 e imprime uma grade de `True` a partir de uma
# comparação com tolerância $10^{-3}$. Terminamos explicando por que os comprimentos de onda
# são espaçados do jeito que são.
#
# **Pergunta:** Como a tabela de senos e cossenos do Transformer é construída, passo a passo, e como obter os números da aula dígito por dígito?
#
# **Você será capaz de:**
# - calcular os denominadores e os ângulos da fórmula com o broadcasting do NumPy;
# - construir a tabela intercalada de dois jeitos (empilhar e remodelar; atribuir colunas alternadas) e reproduzir a saída impressa da aula;
# - explicar por que os comprimentos de onda crescem pelo mesmo fator de um par para o seguinte;
# - descobrir, com `posenc.diagnose`, o que está errado numa tabela que não bate.
#
# **Pré-requisitos:** nenhum · **Tempo:** cerca de 45 minutos

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
# ## A fórmula
#
# A fórmula vem do artigo do Transformer, [Attention Is All You Need](https://arxiv.org/abs/1706.03762)
# (seção 3.5). A linha `pos` da tabela codifica uma posição; suas colunas vêm em pares,
# e o par $i$ guarda um seno e um cosseno do mesmo ângulo:
#
# $$
# PE_{(pos,\,2i)} = \sin\!\left(\frac{pos}{10000^{2i/d_{\text{model}}}}\right),
# \qquad
# PE_{(pos,\,2i+1)} = \cos\!\left(\frac{pos}{10000^{2i/d_{\text{model}}}}\right).
# $$
#
# ## 1. Colunas pares, colunas ímpares
#
# A aula de NumPy usou 10 posições e uma largura de modelo 6, pequena o bastante para lermos
# cada número. Leia a fórmula por índice de coluna $k$ em vez de por par: uma coluna par
# $k = 2i$ divide por $10000^{k/d}$, uma coluna ímpar $k = 2i + 1$ por $10000^{(k-1)/d}$.
# Listamos os dois tipos de índice, em float32 como a aula fez, e calculamos os dois
# conjuntos de denominadores.

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
# Os dois arrays de denominadores são idênticos, e têm de ser: subtrair um de um índice
# ímpar leva ao índice par logo antes dele, então um seno e o cosseno ao lado dele sempre
# compartilham o denominador. Basta um vetor com uma entrada por par, e ele imprime os
# dígitos que a aula imprimiu. (Ele concorda com `posenc.denominators`, calculado em float64,
# dentro da precisão de float32: algumas partes em $10^7$, já que o próprio expoente $2i/d$
# é arredondado para float32 antes; as verificações cruzadas do final confirmam isso.)

# %%
assert np.array_equal(even_denominators, odd_denominators), "a sine and its cosine share a denominator"
denominators = even_denominators
print(denominators)

# %% [markdown]
# ## 2. Uma coluna de posições
#
# Dar às posições o formato de coluna, `(10, 1)`, deixa o
# [broadcasting](https://numpy.org/doc/stable/user/basics.broadcasting.html) fazer a divisão externa:
# uma coluna `(10, 1)` sobre uma linha `(3,)` divide cada posição por cada denominador,
# formando uma grade `(10, 3)` de ângulos. `posenc.angles` forma a mesma grade em float64; a
# nossa passou por arredondamentos em float32 (expoente, denominador, quociente), então as
# duas concordam até algumas partes em $10^7$.

# %%
positions = np.arange(sequence_length, dtype=np.float32).reshape(sequence_length, 1)
angles = positions / denominators
print(positions.shape, denominators.shape, "->", angles.shape)
print(angles[:3])

np.testing.assert_allclose(angles, posenc.angles(np.arange(sequence_length), d_model), rtol=3e-7)

# %% [markdown]
# ## 3. A tabela de senos e a tabela de cossenos
#
# Antes, um detalhe de float32, em resumo. As funções `sin` e `cos` do NumPy em float32 são
# aproximações rápidas que podem errar o resultado corretamente arredondado em até duas
# unidades na última casa (ulp; um ulp é a distância até o próximo número float32, cerca de
# $6 \times 10^{-8}$ logo abaixo de 1), a margem que os próprios testes do NumPy aceitam;
# assim, uma saída com oito casas decimais poderia diferir da aula no último dígito. Para
# imprimir os dígitos da aula em todas as posições, tomamos o seno dos *mesmos* ângulos
# float32 em float64 e arredondamos uma única vez de volta para float32. O notebook 06 conta a
# história completa desses últimos dígitos (e do erro que cresce com a posição).

# %%
def sin32(x):
    """Sine of a float32 array: the float64 sine, rounded once to float32."""
    return np.sin(x.astype(np.float64)).astype(np.float32)


def cos32(x):
    """Cosine of a float32 array: the float64 cosine, rounded once to float32."""
    return np.cos(x.astype(np.float64)).astype(np.float32)


ulps = np.testing.assert_array_max_ulp(np.sin(angles), sin32(angles), maxulp=2)  # NumPy's own: within 2 ulp

# %% [markdown]
# Os senos vão preencher as colunas pares; os cossenos, as ímpares. Descendo cada coluna, o
# ângulo cresce em passos fixos: rápido no primeiro par, devagar no último.

# %%
sines = sin32(angles)
cosines = cos32(angles)
print(sines)
print(cosines)

# %% [markdown]
# As duas tabelas são `(10, 3)`, uma coluna por par, e seus dígitos são os da aula.
#
# ## 4. Intercalar: empilhar e depois remodelar
#
# Empilhar as duas tabelas num novo último eixo dá o formato `(10, 3, 2)`: posição, par e
# depois seno-ou-cosseno. Remodelar (reshape) para `(10, 6)` lê essa memória em ordem por
# linhas (row-major), par a par e seno antes de cosseno; assim as colunas saem como
# $\sin_0, \cos_0, \sin_1, \cos_1, \sin_2, \cos_2$. Nenhuma conta com índices é necessária.

# %%
stacked = np.stack([sines, cosines], axis=-1)
table = stacked.reshape(sequence_length, d_model)
print(stacked.shape, "->", table.shape)

# %% [markdown]
# Aqui está a tabela exatamente como a aula a imprimiu, e a nossa imprime o mesmíssimo texto.
# Comparar o texto impresso, dígito por dígito, é a verificação mais rigorosa que as suas
# oito casas decimais permitem. (`posenc.interleave` é exatamente o empilhar-e-remodelar
# que acabamos de fazer; as verificações cruzadas do final confirmam isso.)

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
# Agora o pacote. O `posenc` calcula seus ângulos em float64 e arredonda só os valores
# finais; o nosso caminho arredondou os ângulos para float32 no meio do percurso. Por isso
# os dois podem diferir no último dígito de float32, por no máximo
# $2^{-24} \approx 6.0 \times 10^{-8}$, que é um passo de float32 para valores entre 0.5 e 1.

# %%
reference = posenc.positional_encoding(sequence_length, d_model)
largest = np.abs(table - reference).max()
print(f"largest absolute difference: {largest:.1e}")
assert largest <= 2.0**-24 == np.spacing(np.float32(0.5))

# %% [markdown]
# ## 5. Os mesmos passos numa classe
#
# A aula termina empacotando seus passos numa classe que guarda `sequence_length` e
# `d_model` no `__init__`. Mas o seu `forward` nunca os lê de volta: ele usa as variáveis
# globais `d_model` e `sequence_length` do notebook. A aula só criou o objeto com esses
# mesmos dois valores, então a saída parecia certa. Eis o padrão em poucas linhas; pedindo
# 4 posições de largura 8, ele ainda devolve a tabela global 10 × 6.

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
# A nossa classe lê apenas os próprios atributos. Os denominadores dependem só da largura,
# então são calculados quando o objeto é criado, e cada chamada constrói uma tabela do
# comprimento pedido. Uma largura ímpar tem um seno a mais que cossenos, então a última
# coluna de cosseno é simplesmente descartada, como a fórmula pede.

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
# Ela reproduz a tabela da aula (verificado acima, dígito por dígito) e concorda com o
# `posenc` em outros tamanhos também, incluindo larguras ímpares. Um ângulo em float32 carrega
# um arredondamento relativo de cerca de $10^{-7}$, então a diferença absoluta cresce com a
# posição; a tolerância cresce com o comprimento na mesma medida.

# %%
for length, n_columns in [(10, 6), (10, 7), (10, 16), (50, 16), (128, 64)]:
    ours = SinusoidalEncoding(n_columns)(length)
    expected = posenc.positional_encoding(length, n_columns)
    np.testing.assert_allclose(ours, expected, rtol=0, atol=2e-7 * length)  # shapes too
    print(f"{length:4d} x {n_columns:2d}: largest difference {np.abs(ours - expected).max():.1e}")

# %% [markdown]
# ## 6. Um segundo caminho: uma taxa por coluna
#
# As notas chinesas em NumPy dispensam as tabelas separadas de senos e cossenos. Elas dão a
# cada coluna $k$ uma taxa angular $1 / 10000^{2\lfloor k/2 \rfloor / d}$: a divisão inteira
# por dois leva as duas colunas de um par ao índice par do par, então as taxas vêm em
# duplas iguais, e as distintas são `posenc.frequencies`. Usamos o exemplo delas, 10 posições
# e largura 16. Repare no dtype: um array de inteiros dividido por um escalar float32 é
# promovido a float64, então este caminho calcula em precisão dupla, quer tenha sido essa a
# intenção ou não.

# %%
width = 16
column = np.arange(width)
print(2 * (column // 2))

angle_rates = 1 / np.power(10000, 2 * (column // 2) / np.float32(width))
print(angle_rates)

assert angle_rates.dtype == np.float64, "integers over a float32 scalar: float64"

# %% [markdown]
# Fatiar com passo dois escreve diretamente em colunas alternadas: `[:, 0::2]` são as
# colunas pares, `[:, 1::2]` as ímpares. A tabela começa com zeros e é convertida para
# float32 no final.
#
# Em seguida, as notas compararam sua tabela, com tolerância $10^{-3}$, com uma segunda
# tabela construída pelo mesmíssimo código. Nós comparamos, em vez disso, dois cálculos
# realmente diferentes: a classe em float32 da seção 5 e este caminho em float64. Em vez de
# uma grade de `True`, imprimimos a maior diferença.

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
# Cerca de $1.2 \times 10^{-7}$: alguns passos de float32, porque a classe arredonda seus
# ângulos para float32, enquanto este caminho arredonda só o resultado (o notebook 06 rastreia
# esses últimos dígitos até a origem). Isso fica mais de 8 000 vezes dentro da tolerância das
# notas. A tabela fatiada com passo também bate com o `posenc` e com o seu `interleave` (veja
# as verificações cruzadas).
#
# ## 7. Por que esses comprimentos de onda: uma progressão geométrica
#
# O par de colunas $i$ é uma onda com comprimento de onda $\lambda_i = 2\pi / \omega_i = 2\pi \cdot 10000^{2i/d}$
# posições, amostrada em posições inteiras. Cada passo para o par seguinte multiplica o
# comprimento de onda pelo mesmo fator, $10000^{2/d}$ (as duas colunas de um par compartilham
# o seu, então, por coluna, é uma escada, e não um fator de $10000^{1/d}$). O menor
# comprimento de onda é $2\pi$, cerca de seis posições; o maior é $2\pi \cdot 10000^{(d-2)/d}$,
# a um fator $10000^{2/d}$ de chegar a $10000 \cdot 2\pi$.

# %%
wavelengths = 2 * np.pi / posenc.frequencies(width)
print(wavelengths.round(2))
ratios = wavelengths[1:] / wavelengths[:-1]
print(ratios.round(6), round(10000 ** (2 / width), 6))

np.testing.assert_allclose(ratios, 10000 ** (2 / width), rtol=1e-12)

# %% [markdown]
# O último comprimento de onda nunca chega a $10000 \cdot 2\pi$, mas se aproxima à medida que
# o modelo fica mais largo, porque o fator que falta, $10000^{-2/d}$, tende a um:

# %%
previous = 0.0
for d in (16, 64, 512, 4096):
    share = (2 * np.pi / posenc.frequencies(d)[-1]) / (10000 * 2 * np.pi)
    assert previous < share < 1
    previous = share
    print(f"d_model={d:5d}  longest wavelength = {share:.4f} x 10000·2π")

# %% [markdown]
# Um contador binário é a mesma ideia na forma discreta. O bit $k$ de uma posição troca de
# valor a cada $2^k$ passos e se repete a cada $2^{k+1}$: o bit mais baixo muda mais rápido,
# cada bit acima com a metade da velocidade, uma razão de 2 entre vizinhos. A tabela senoidal
# troca os bits liga/desliga por ondas suaves e a razão 2 por $10000^{2/d}$. Os pares rápidos
# distinguem posições vizinhas; os pares lentos distinguem posições distantes.

# %%
counter = np.arange(16)
bits = (counter[:, None] >> np.arange(4)) & 1  # column k is bit k
print(bits.T)
for k in range(4):
    period = 2 ** (k + 1)
    assert np.array_equal(bits[: 16 - period, k], bits[period:, k]), f"bit {k} repeats every {period} steps"

# %% [markdown]
# Um contador de 4 bits se repete depois de 16 passos. A tabela nunca repete uma linha. As
# posições são números inteiros, e o seno e o cosseno do par $i$ voltam aos mesmos valores
# nas posições $p$ e $q$ somente se $(p - q)\,\omega_i$ for um número inteiro de voltas
# $2\pi k$, ou seja, somente se $\omega_i / 2\pi$ for uma fração. Nunca é: $\omega_i = 10000^{-2i/d}$,
# uma potência de 10000 com expoente racional, é um número algébrico, e $\pi$ não é
# (Lindemann, 1882), então a razão entre eles nunca é uma fração. Logo, nenhuma coluna se
# repete exatamente, e só o primeiro par (comprimento de onda $2\pi$) já dá a cada posição
# uma linha só sua. Mas pode chegar perto: a posição 710 é $226\pi + 6.0 \times 10^{-5}$,
# 113 voltas e um pouquinho, o mais perto que o primeiro par volta da linha 0 nas primeiras
# 100 000 posições. (Em posições contínuas, as ondas podem se alinhar: com $d = 8$, cada
# comprimento de onda é exatamente 10 vezes o anterior, então as quatro se repetem juntas
# depois de $2\pi \cdot 1000$ posições, e nem esse número nem nenhum múltiplo dele é
# inteiro.) Na largura de 512 do artigo, só a onda mais lenta já abrange cerca de 60 600
# posições.

# %%
first_pair_turn = np.arange(1, 100_001) % (2 * np.pi)
distance_to_row_0 = np.minimum(first_pair_turn, 2 * np.pi - first_pair_turn)
closest = int(np.argmin(distance_to_row_0)) + 1
print(f"closest return to row 0: position {closest}, {distance_to_row_0.min():.1e} radians away")
print(np.round(posenc.encode([0, closest], 4), 4))

assert closest == 710

# %% [markdown]
# Plotar a coluna de seno dos quatro primeiros pares em função da posição mostra a mesma
# coisa: cada onda é $10000^{2/16} \approx 3.16$ vezes mais longa que a anterior. O
# `posenc.encode` aceita posições fracionárias, o que nos permite desenhar as ondas como
# curvas suaves.

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
# Uma tabela maior como mapa de calor: 128 posições por 64 colunas. À esquerda, listras
# rápidas; para a direita, as colunas mudam cada vez mais devagar, até que as últimas ficam
# quase constantes ao longo dessas 128 posições: o último seno fica abaixo de 0.02, o último
# cosseno acima de 0.9998.

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
# ## 8. Por que a minha tabela não bate? `posenc.diagnose`
#
# Quando os seus números diferem dos da aula, o erro quase sempre é um de poucos: seno e
# cosseno trocados, o expoente tomado por coluna em vez de por par, outra base, posições que
# começam em 1. O `posenc.diagnose` ajusta a fórmula a uma tabela, incluindo cada um desses
# erros, e diz em palavras quais deles a reproduzem. Abaixo, um rascunho da tabela da aula
# em que cada opção introduz um erro (o comentário numa linha diz qual opção a altera),
# diagnosticado quatro vezes, uma por erro.

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
# Uma tabela que nada no catálogo explica recebe "unknown", nunca um palpite: o diagnóstico
# diz onde a tabela mais se afasta da do artigo, quanto passa da tolerância ali e quão longe
# está até mesmo a explicação mais próxima. Aqui, a tabela do rascunho mais um pouco de ruído.

# %%
noisy = draft_table(10, 6) + np.random.default_rng(0).normal(0, 1e-3, (10, 6))
unexplained = posenc.diagnose(noisy)
print(unexplained)
assert unexplained.codes == ["unknown"]

# %% [markdown]
# Ele também lê saída impressa, copiada de um notebook: o texto que o `print` da aula mostrou
# (float32, oito casas decimais) é reconhecido como a tabela do artigo.

# %%
with np.printoptions(precision=8, suppress=True):
    printed = str(draft_table(10, 6).astype(np.float32))
print(printed[:60], "...")
assert posenc.diagnose(printed).matches_paper

# %% [markdown]
# ## Resumo
#
# - Um seno e o cosseno ao lado dele compartilham um denominador, $10000^{2i/d}$: um por par,
#   `[1, 21.54435, 464.15897]` na largura 6 em float32.
# - Uma coluna de posições `(length, 1)` sobre os denominadores `(d/2,)` faz broadcasting para
#   os ângulos `(length, d/2)`; os senos e cossenos deles, empilhados num último eixo e
#   remodelados, se intercalam na tabela, que imprime as oito casas decimais da aula dígito por dígito.
# - Escrever em colunas alternadas (`table[:, 0::2] = ...`, `table[:, 1::2] = ...`) constrói
#   a mesma tabela; os dois caminhos e o `posenc` concordam até os últimos dígitos de float32
#   (o notebook 06 explica de onde eles vêm).
# - Uma classe que guarda seus tamanhos também precisa usá-los: a da aula lia as globais.
# - Os comprimentos de onda $2\pi \cdot 10000^{2i/d}$ crescem pelo fator $10000^{2/d}$ de par
#   em par, de $2\pi$ até pouco menos de $10000 \cdot 2\pi$, como os bits de um contador, e
#   nenhuma linha jamais se repete.
# - `posenc.diagnose(table)` aponta os erros comuns: seno e cosseno trocados, o expoente por
#   coluna, outra base, posições a partir de 1.
#
# ## Exercícios
#
# Cada exercício termina com uma verificação que diz o que está errado. `nb01.<name>.hint()`
# dá uma dica, e `nb01.<name>.solution()` imprime a solução de referência quando você empacar.
#
# ### Exercício 1 · Os denominadores
#
# Escreva `my_denominators(d_model)`: os denominadores da fórmula, um por par de colunas, em
# float64. O rascunho abaixo tem um denominador por coluna; a verificação o executa para uma
# largura par e uma ímpar e diz o que está errado.

# %%
from posenc.exercises import nb01


def my_denominators(d_model):
    return 10000.0 ** (np.arange(d_model) / d_model)


nb01.denominators.check(my_denominators)

# %% [markdown]
# ### Exercício 2 · A tabela inteira
#
# Complete `my_positional_encoding` para que ela devolva a tabela `(length, d_model)` do
# artigo; o rascunho abaixo tem um erro. Duas verificações respondem: `nb01.table.check`
# executa a sua função em dois tamanhos, incluindo uma largura ímpar, e `posenc.diagnose` diz
# o que a sua tabela é, como na seção 8. Você termina quando a primeira disser que está correto e a
# segunda, que esta é a tabela do artigo.

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
# ## Verificações cruzadas
#
# As afirmações acima, verificadas juntas: os denominadores e os ângulos contra o `posenc`
# (precisão de float32, algumas partes em $10^7$); as tabelas de senos e cossenos contra os
# ângulos exatos (dentro de $10^{-7}$); `posenc.interleave` é o empilhar-e-remodelar; a
# classe em outro tamanho; as taxas do segundo caminho vêm em pares iguais e são
# `posenc.frequencies`; a tabela fatiada com passo contra o `posenc`; o menor e o maior
# comprimento de onda e, com $d = 8$, um fator de exatamente 10 entre vizinhos; um bit não se
# repete depois de metade do seu período; a posição 710 é $226\pi + 6.0 \times 10^{-5}$; a
# onda mais lenta na largura 512 abrange cerca de 60 600 posições; o rascunho sem opções é a
# tabela do artigo; a explicação mais próxima da tabela com ruído é o próprio artigo.

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
