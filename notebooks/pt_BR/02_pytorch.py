# %% [markdown]
# # 02 · Codificação posicional em PyTorch
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/posenc-org/posenc/blob/main/notebooks/pt_BR/02_pytorch.ipynb)
#
# **Pergunta:** Como construir a tabela senoidal do Transformer com tensores do PyTorch, e como um modelo a soma aos seus embeddings?
#
# **Você será capaz de:**
#
# - construir a tabela passo a passo com operações do torch e reproduzir os números impressos de uma aula;
# - escrever o módulo que um modelo usa, `x + PE[:seq]` com a tabela guardada como buffer, e explicar por que
#   os modelos antes escalam seus embeddings por $\sqrt{d_{\mathrm{model}}}$;
# - usar `posenc.torch.PositionalEncoding` num modelo e ler o que `posenc.diagnose` diz sobre uma tabela.
#
# **Pré-requisitos:** notebook 01 · **Tempo:** cerca de 50 minutos
#
# Construímos a tabela senoidal do [Transformer](https://arxiv.org/abs/1706.03762) com
# operações simples de tensores, um passo de cada vez. Seguimos uma aula: um notebook Jupyter
# em inglês, em PyTorch, que percorre os passos com `d_model = 64` para 10 posições, imprimindo
# cada tensor intermediário, e depois os reúne num [`nn.Module`](https://pytorch.org/docs/stable/generated/torch.nn.Module.html)
# (a classe base do PyTorch para camadas e modelos) cujo `forward()` não recebe entrada e
# imprime a tabela 10 × 6 com quatro casas decimais. Depois escrevemos o módulo que um modelo
# de fato usa (ele soma a tabela aos embeddings), vemos por que os modelos escalam seus
# embeddings antes e, por fim, usamos `posenc.torch.PositionalEncoding` como um modelo o faz,
# no dispositivo que estiver disponível. As verificações cruzadas do final comparam cada
# resultado intermediário com o pacote `posenc`.

# %%
# On Colab, install posenc from GitHub; elsewhere `make lab` has already installed it.
import sys

if "google.colab" in sys.modules:
    # %pip install --quiet "posenc @ git+https://github.com/posenc-org/posenc@main"

# %% [markdown]
# Os tensores ficam no float32 padrão do torch, como na aula. O `posenc` forma seus ângulos
# em float64 e arredonda uma única vez no final; por isso, nessas posições pequenas, os dois
# caminhos diferem em algumas partes em $10^7$ (medido abaixo): `ATOL` é a tolerância para
# compará-los. As figuras são desenhadas inline, seja qual for o backend do matplotlib que o
# ambiente pedir.

# %%
# %matplotlib inline
import matplotlib.pyplot as plt
import numpy as np
import torch
from torch import nn

import posenc
import posenc.torch

np.set_printoptions(precision=4, suppress=True)
ATOL = 1e-6

# %% [markdown]
# ## A fórmula
#
# A linha `pos` da tabela codifica a posição `pos`; suas colunas vêm em pares, um seno e um
# cosseno do mesmo ângulo:
#
# $$
# PE_{(pos,\,2i)} = \sin\left(\frac{pos}{10000^{2i/d_{\mathrm{model}}}}\right),
# \qquad
# PE_{(pos,\,2i+1)} = \cos\left(\frac{pos}{10000^{2i/d_{\mathrm{model}}}}\right)
# $$
#
# Indexando pela coluna $j$, um $j$ par divide por $10000^{j/d_{\mathrm{model}}}$ e um $j$
# ímpar por $10000^{(j-1)/d_{\mathrm{model}}}$. O passo a passo abaixo calcula os dois e
# descobre que são idênticos.
#
# ## Passo a passo, com d_model = 64
#
# Dez posições e 64 colunas: grande o bastante para ver os formatos, pequeno o bastante para
# imprimir alguns números. Primeiro vêm os índices das colunas pares e ímpares, 32 de cada.

# %%
d_model, length = 64, 10
even_cols = torch.arange(0, d_model, 2, dtype=torch.float32)
odd_cols = torch.arange(1, d_model, 2, dtype=torch.float32)
print(tuple(even_cols.shape), even_cols[:4].numpy(), "...")
print(tuple(odd_cols.shape), odd_cols[:4].numpy(), "...")

# %% [markdown]
# Um denominador para cada índice de cada conjunto (um número Python elevado a um tensor
# float32 continua float32). Os denominadores pares e ímpares saem idênticos, bit a bit:
# subtrair um de um índice ímpar leva ao índice par anterior.

# %%
den_even = 10000 ** (even_cols / d_model)
den_odd = 10000 ** ((odd_cols - 1) / d_model)
print(den_even.dtype, tuple(den_even.shape), den_even[:6].numpy().round(4))
assert torch.equal(den_even, den_odd), "an odd column shares the denominator of the even column before it"

# %% [markdown]
# Os seis primeiros, ao lado do que a aula imprimiu: eles concordam nos seus cinco
# algarismos significativos, ou seja, dentro de meia unidade do último dígito impresso
# ($5 \times 10^{-5}$).

# %%
LECTURE_DEN_HEAD = np.array([1.0, 1.3335, 1.7783, 2.3714, 3.1623, 4.2170])
np.testing.assert_allclose(den_even[:6].numpy(), LECTURE_DEN_HEAD, rtol=0, atol=5e-5)

# %% [markdown]
# Então um único vetor de 32 serve tanto para os senos quanto para os cossenos. (A aula
# guardou por engano o resultado dos índices ímpares sob o nome dos pares; como os dois são
# iguais, nada mudou dali em diante.)
#
# As posições formam uma coluna, `(length, 1)`, para que a divisão pelos denominadores
# `(32,)` se expanda por broadcasting numa grade `(length, 32)` de ângulos: uma linha por
# posição, uma coluna por par seno/cosseno (o [broadcasting](https://pytorch.org/docs/stable/notes/broadcasting.html)
# estica cada eixo de tamanho 1 para casar com o outro). A linha 1 dos senos é conferida com
# a saída impressa da aula (cinco algarismos significativos).

# %%
den = den_even
pos = torch.arange(length, dtype=torch.float32).reshape(length, 1)
angle = pos / den
sin_part, cos_part = torch.sin(angle), torch.cos(angle)
print("positions", tuple(pos.shape), "/ denominators", tuple(den.shape), "-> angles", tuple(angle.shape))
print("sines", tuple(sin_part.shape), " cosines", tuple(cos_part.shape))
print("row 1, first six sines:", sin_part[1, :6].numpy().round(4))

LECTURE_SIN_ROW1_HEAD = np.array([0.84147, 0.68156, 0.53317, 0.40931, 0.31098, 0.23492])
np.testing.assert_allclose(sin_part[1, :6].numpy(), LECTURE_SIN_ROW1_HEAD, rtol=0, atol=5e-6)

# %% [markdown]
# ### Intercalando
#
# O artigo coloca cada cosseno logo depois do seu seno. Empilhar as duas grades ao longo de
# um novo último eixo produz `(length, 32, 2)`, em que o último eixo guarda um par (sin, cos);
# juntar os dois últimos eixos então dispõe os pares lado a lado em 64 colunas: os senos
# caem nas colunas pares, os cossenos nas ímpares. `posenc.interleave` faz exatamente este
# passo, e `posenc.torch.positional_encoding` constrói a tabela inteira numa só chamada,
# dentro de `ATOL`.

# %%
pairs = torch.stack([sin_part, cos_part], dim=2)
pe64 = torch.flatten(pairs, start_dim=1, end_dim=2)
print(tuple(pairs.shape), "->", tuple(pe64.shape))
print("row 1, first six columns:", pe64[1, :6].numpy().round(4))
print(f"largest difference from posenc: {(pe64 - posenc.torch.positional_encoding(length, d_model)).abs().max():.1e}")

assert torch.equal(pe64[:, 0::2], sin_part) and torch.equal(pe64[:, 1::2], cos_part), "sines even, cosines odd"

# %% [markdown]
# Concatenar em vez de empilhar poria os 32 senos primeiro e todos os cossenos depois: as
# mesmas colunas em outra ordem, um layout que algumas bibliotecas usam. O `posenc` o chama
# de `"sin_cos"`. Ordenar cada linha mostra os mesmos 64 números nas duas tabelas.

# %%
concatenated = torch.cat([sin_part, cos_part], dim=1)
print(tuple(concatenated.shape), "same table:", torch.equal(concatenated, pe64))
assert torch.equal(concatenated.sort(dim=1).values, pe64.sort(dim=1).values), "the same entries in every row"

# %% [markdown]
# Dez linhas dão uma imagem estreita; então aqui está a mesma tabela de largura 64 para 100
# posições. As colunas da esquerda oscilam rápido ao longo das posições; mais à direita, os
# comprimentos de onda crescem geometricamente, até que o último seno fica abaixo de 0.02 e o
# último cosseno acima de 0.9999.

# %%
big = posenc.torch.positional_encoding(100, d_model)
print(f"last sine at most {big[:, -2].abs().max():.4f}, last cosine at least {big[:, -1].min():.5f}")
fig, ax = plt.subplots(figsize=(9, 4))
image = ax.imshow(big.numpy(), cmap="RdBu", vmin=-1, vmax=1, aspect="auto")
ax.set_xlabel("column")
ax.set_ylabel("position")
ax.set_title("Sinusoidal positional encoding, d_model = 64")
fig.colorbar(image, ax=ax)
plt.show()

# %% [markdown]
# ## O nosso próprio módulo
#
# Os mesmos passos cabem num único `forward()`. Como a classe da aula, este módulo não tem
# entrada: ele devolve a tabela `(max_sequence_length, d_model)`.
#
# A classe da aula supõe um `d_model` par. Com um ímpar, `arange(0, d_model, 2)` ainda
# inicia um par na última coluna, e cada par traz um seno *e* um cosseno: `d_model = 7` dá
# 4 pares, 8 colunas. A fórmula quer 7: sua última coluna, $2i = 6$, é um seno, e o cosseno
# que viria depois dele não existe. O nosso módulo descarta esse cosseno extra com uma
# única fatia.

# %%
pair_starts = torch.arange(0, 7, 2)  # the lecture's pairs at d_model = 7
print(len(pair_starts), "pairs,", 2 * len(pair_starts), "columns")

# %% [markdown]
# O módulo:

# %%
class SinusoidalTable(nn.Module):
    """forward() -> (max_sequence_length, d_model) table, computed in float32 like the lecture."""

    def __init__(self, d_model, max_sequence_length):
        super().__init__()
        self.d_model = d_model
        self.max_sequence_length = max_sequence_length

    def forward(self):
        den = 10000 ** (torch.arange(0, self.d_model, 2, dtype=torch.float32) / self.d_model)
        pos = torch.arange(self.max_sequence_length, dtype=torch.float32)[:, None]
        angle = pos / den
        # (length, pairs, 2) -> (length, 2 * pairs): each cosine lands right after its sine
        table = torch.stack([angle.sin(), angle.cos()], dim=-1).flatten(start_dim=-2)
        return table[:, : self.d_model]  # an odd d_model: drop the last pair's cosine


assert torch.equal(SinusoidalTable(64, 10)(), pe64), "the d_model = 64 walk, bit for bit"

# %% [markdown]
# Ele reproduz exatamente o passo a passo com `d_model = 64` acima. Com `d_model = 7`, dá
# sete colunas, as mesmas que o `posenc` dá:

# %%
table7 = SinusoidalTable(7, 10)()
print(tuple(table7.shape), f"largest difference from posenc: {(table7 - posenc.torch.positional_encoding(10, 7)).abs().max():.1e}")

# %% [markdown]
# A tabela que a aula imprimiu usava `d_model=6` e dez posições:

# %%
table6 = SinusoidalTable(d_model=6, max_sequence_length=10)()
print(tuple(table6.shape))
print(table6.numpy().round(4))

# %% [markdown]
# Aqui estão os números impressos pela aula. Os nossos valores em float32 concordam com eles
# dentro de meia unidade da quarta casa decimal.

# %%
LECTURE_TABLE_10x6 = np.array([
    [0.0000, 1.0000, 0.0000, 1.0000, 0.0000, 1.0000],
    [0.8415, 0.5403, 0.0464, 0.9989, 0.0022, 1.0000],
    [0.9093, -0.4161, 0.0927, 0.9957, 0.0043, 1.0000],
    [0.1411, -0.9900, 0.1388, 0.9903, 0.0065, 1.0000],
    [-0.7568, -0.6536, 0.1846, 0.9828, 0.0086, 1.0000],
    [-0.9589, 0.2837, 0.2300, 0.9732, 0.0108, 0.9999],
    [-0.2794, 0.9602, 0.2749, 0.9615, 0.0129, 0.9999],
    [0.6570, 0.7539, 0.3192, 0.9477, 0.0151, 0.9999],
    [0.9894, -0.1455, 0.3629, 0.9318, 0.0172, 0.9999],
    [0.4121, -0.9111, 0.4057, 0.9140, 0.0194, 0.9998],
])
np.testing.assert_allclose(table6.numpy(), LECTURE_TABLE_10x6, rtol=0, atol=5e-5)

# %% [markdown]
# A classe da aula construía suas posições com um `arange` de inteiros. Dividir um tensor
# int64 por um float32 promove o resultado a float32, e todo inteiro abaixo de $2^{24}$ é
# convertido exatamente; por isso, as posições inteiras dão, bit a bit, a mesma tabela.

# %%
den6 = 10000 ** (torch.arange(0, 6, 2, dtype=torch.float32) / 6)
int_pos = torch.arange(10).reshape(10, 1)
print(int_pos.dtype, "/", den6.dtype, "->", (int_pos / den6).dtype)
assert torch.equal(int_pos / den6, int_pos.float() / den6)

# %% [markdown]
# `posenc.torch.positional_encoding` dá a mesma tabela:

# %%
print(f"largest difference: {(table6 - posenc.torch.positional_encoding(10, 6)).abs().max():.1e}")
torch.testing.assert_close(table6, posenc.torch.positional_encoding(10, 6), rtol=0, atol=ATOL)

# %% [markdown]
# Cada coluna é uma senoide ao longo das posições. Aqui estão os senos de um a cada quatro
# pares, do nosso módulo com `d_model=64`: cada comprimento de onda é
# $10000^{8/64} \approx 3.2$ vezes o anterior, de $2\pi \approx 6.3$ posições até
# cerca de 200. A tabela só amostra posições inteiras, e é por isso que a coluna 0 parece serrilhada.

# %%
print(f"ratio {10000 ** (8 / 64):.1f}; wavelengths {2 * np.pi * 10000 ** (np.array([0, 8, 16, 24]) / 64)}")
wide = SinusoidalTable(d_model=64, max_sequence_length=100)()
fig, ax = plt.subplots(figsize=(9, 3.5))
for col in (0, 8, 16, 24):
    ax.plot(wide[:, col].numpy(), marker=".", markersize=3, label=f"column {col}")
ax.set_xlabel("position")
ax.set_ylabel("sine")
ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1))
plt.show()

# %% [markdown]
# ## Num modelo
#
# Num Transformer, a tabela é somada aos embeddings dos tokens antes da primeira camada. O
# módulo da aula devolve só a tabela; o módulo que os modelos usam (o do Annotated
# Transformer, o dos exemplos do PyTorch) recebe os embeddings `x` de formato
# `(batch, seq, d_model)` e devolve `dropout(x + PE[:seq])`
# (o [dropout](https://pytorch.org/docs/stable/generated/torch.nn.Dropout.html) zera entradas
# aleatórias durante o treino). Ele calcula a tabela uma vez, para um comprimento máximo
# `max_len`, e a guarda como um [*buffer*](https://pytorch.org/docs/stable/generated/torch.nn.Module.html#torch.nn.Module.register_buffer):
# um tensor que pertence ao módulo, se move com `.to(device)` e não é um parâmetro
# treinado. À mão:

# %%
class AddPositions(nn.Module):
    """forward(x): x of shape (batch, seq, d_model) -> dropout(x + PE[:seq]), same shape."""

    def __init__(self, d_model, max_len=5000, dropout=0.1):
        super().__init__()
        self.dropout = nn.Dropout(dropout)
        # persistent=False: the table is rebuilt from d_model, so checkpoints need not store it
        self.register_buffer("pe", SinusoidalTable(d_model, max_len)(), persistent=False)

    def forward(self, x):
        return self.dropout(x + self.pe[: x.shape[1]])


ours = AddPositions(16, max_len=50).eval()
x_check = torch.randn(2, 7, 16, generator=torch.Generator().manual_seed(0))
with torch.no_grad():
    torch.testing.assert_close(ours(x_check) - x_check, posenc.torch.positional_encoding(7, 16).expand(2, 7, 16))
print([name for name, _ in ours.named_buffers()], tuple(ours.pe.shape))

# %% [markdown]
# `posenc.torch.PositionalEncoding(d_model, max_len, dropout=...)` é este módulo, empacotado:
# para a mesma entrada ele devolve a mesma saída, a menos do arredondamento em float32 da
# nossa tabela.

# %%
packaged = posenc.torch.PositionalEncoding(16, max_len=50, dropout=0.1).eval()
with torch.no_grad():
    print(f"largest difference: {(ours(x_check) - packaged(x_check)).abs().max():.1e}")
    torch.testing.assert_close(ours(x_check), packaged(x_check), rtol=0, atol=ATOL)

# %% [markdown]
# ### Por que os modelos escalam os embeddings por $\sqrt{d_{\mathrm{model}}}$
#
# O artigo, e depois dele o Annotated Transformer, multiplicam os embeddings dos tokens por
# $\sqrt{d_{\mathrm{model}}}$ antes de somar a tabela. O motivo é o tamanho. Cada linha da
# tabela tem $d_{\mathrm{model}}/2$ pares com $\sin^2 + \cos^2 = 1$, então toda linha tem
# norma $\sqrt{d_{\mathrm{model}}/2}$: 16 com $d_{\mathrm{model}} = 512$. As entradas de um
# embedding costumam ter tamanho em torno de $1/\sqrt{d_{\mathrm{model}}}$ (o fairseq as
# inicializa assim; o artigo compartilha o embedding com a camada de saída, cujos scores
# devem ficar da ordem de um), então uma linha de embedding tem norma em torno de 1. Somadas
# como estão, as posições pesariam dezesseis vezes mais que o token. Multiplicada por
# $\sqrt{d_{\mathrm{model}}}$, uma linha de embedding tem norma em torno de
# $\sqrt{512} \approx 22.6$, da mesma ordem que os 16 da tabela. (Um
# [`nn.Embedding`](https://pytorch.org/docs/stable/generated/torch.nn.Embedding.html) é uma
# tabela com uma linha aprendida por id de token.)

# %%
d_big = 512
torch.manual_seed(0)
token_table = nn.Embedding(1000, d_big)
nn.init.normal_(token_table.weight, std=d_big**-0.5)
with torch.no_grad():
    embedding_norms = token_table.weight.norm(dim=1)
    scaled_norms = (token_table.weight * d_big**0.5).norm(dim=1)
table_norms = posenc.torch.positional_encoding(1000, d_big).norm(dim=1)
print(f"embedding rows: norm {embedding_norms.mean():.2f} on average, times sqrt(512): {scaled_norms.mean():.1f}")
print(f"table rows against unscaled embeddings: {(table_norms / embedding_norms).mean():.0f} to 1")
torch.testing.assert_close(table_norms, torch.full((1000,), (d_big / 2) ** 0.5), rtol=1e-6, atol=0)

# %% [markdown]
# ### Um modelo de brinquedo
#
# O código roda sem mudanças numa GPU: escolha o dispositivo uma vez e mova o modelo e os
# dados para ele. Nada do que é impresso abaixo depende do dispositivo escolhido.
#
# Um embedding sobre um vocabulário de 20 tokens, com largura 16, seguido da codificação
# posicional (este brinquedo pula a escala: o PyTorch sorteia as entradas do embedding com
# desvio padrão 1, linhas de norma em torno de 4, 3.6 em média para estas 20, contra
# $\sqrt{8} \approx 2.8$ da tabela). Fixar a semente antes de construí-lo fixa os pesos do
# embedding; eles são criados na CPU e depois movidos, então são os mesmos em qualquer
# dispositivo.

# %%
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

vocab_size, width, max_len = 20, 16, 50
torch.manual_seed(0)
model = nn.Sequential(
    nn.Embedding(vocab_size, width),
    posenc.torch.PositionalEncoding(width, max_len=max_len, dropout=0.1),
).to(device)
embed, add_positions = model[0], model[1]
model.eval()
print(f"embedding rows: norm {embed.weight.norm(dim=1).mean():.1f} on average; table rows: {8**0.5:.1f}")

# %% [markdown]
# Um lote (batch) de duas sequências de sete ids de token, sorteadas de um gerador na CPU
# com semente fixa, pelo mesmo motivo:

# %%
gen = torch.Generator().manual_seed(1)
tokens = torch.randint(0, vocab_size, (2, 7), generator=gen).to(device)
print(tokens.cpu().numpy())

with torch.no_grad():
    x = embed(tokens)
    y = model(tokens)
print("tokens", tuple(tokens.shape), "-> embeddings", tuple(x.shape), "-> output", tuple(y.shape))

# %% [markdown]
# No modo de avaliação (eval), o dropout não faz nada; assim, a saída menos os embeddings é
# a própria tabela, com as mesmas linhas para cada sequência do lote:

# %%
table = posenc.torch.positional_encoding(tokens.shape[1], width, device=device)
torch.testing.assert_close(y - x, table.expand_as(x), rtol=0, atol=ATOL)
print((y - x)[0, :4, :6].cpu().numpy().round(4))

# %% [markdown]
# No modo de treino, o dropout zera cada entrada com probabilidade 0.1 (aqui, 18 das 224) e
# escala as demais por $1/0.9$, para que o valor esperado continue o mesmo. O modo de
# avaliação devolve a soma simples.

# %%
model.train()
torch.manual_seed(2)
with torch.no_grad():
    y_train = model(tokens)
model.eval()
kept = y_train != 0
print(f"zeroed: {int((~kept).sum())} of {kept.numel()}")
torch.testing.assert_close(y_train[kept], y[kept] / 0.9, rtol=1e-6, atol=1e-6)

# %% [markdown]
# ### A tabela é um buffer, não um peso
#
# `pe` é registrado como um buffer não persistente: `.to(device)` o move junto com o modelo,
# o otimizador nunca o vê (ele não é um parâmetro), e o `state_dict` o deixa de fora (o
# [`state_dict`](https://pytorch.org/tutorials/beginner/saving_loading_models.html) é o que um
# checkpoint salva). Um checkpoint guarda só os pesos do embedding, então ele pode ser
# carregado num modelo construído com qualquer `max_len`.

# %%
print("buffers:", [name for name, _ in model.named_buffers()])
print("parameters:", [name for name, _ in model.named_parameters()])
print("state_dict:", list(model.state_dict()))
print("table shape:", tuple(add_positions.pe.shape), " on the embedding's device:", add_positions.pe.device == embed.weight.device)

fresh = nn.Sequential(nn.Embedding(vocab_size, width), posenc.torch.PositionalEncoding(width, max_len=5000))
loaded = fresh.load_state_dict(model.state_dict())
assert loaded.missing_keys == loaded.unexpected_keys == [], "nothing missing, nothing unexpected"

# %% [markdown]
# Mesmo sem GPU, dá para ver um buffer se mover: o
# [dispositivo meta](https://pytorch.org/docs/stable/meta.html) guarda formatos e nenhum dado,
# e `.to("meta")` move um módulo para lá como para qualquer dispositivo. Um tensor guardado
# como atributo comum (`self.pe = table`) ficaria para trás.

# %%
class TableAsAttribute(nn.Module):
    def __init__(self):
        super().__init__()
        self.pe = posenc.torch.positional_encoding(10, 4)  # not registered


print("buffer:", posenc.torch.PositionalEncoding(4, max_len=10).to("meta").pe.device)
print("plain attribute:", TableAsAttribute().to("meta").pe.device)

# %% [markdown]
# ### Mais longo que max_len
#
# A fórmula está definida para qualquer posição, então uma sequência mais longa que
# `max_len` não precisa falhar: o módulo recalcula sua tabela no novo comprimento, no mesmo
# dispositivo.

# %%
long_tokens = torch.randint(0, vocab_size, (2, 80), generator=gen).to(device)
with torch.no_grad():
    x_long = embed(long_tokens)
    y_long = model(long_tokens)
print("output", tuple(y_long.shape), " max_len was", max_len, "now", add_positions.max_len)
long_table = posenc.torch.positional_encoding(80, width, device=device)
torch.testing.assert_close(y_long - x_long, long_table.expand_as(x_long), rtol=0, atol=ATOL)
print("on the embedding's device:", add_positions.pe.device == embed.weight.device)
print("still out of state_dict:", list(model.state_dict()))

# %% [markdown]
# ## Por que a minha tabela não bate? `posenc.diagnose`
#
# `posenc.diagnose` recebe uma tabela (aqui, um tensor do torch) e diz o que ela é: a tabela
# do artigo, ou quais dos erros comuns a reproduzem. Abaixo, o caminho exp/log do
# [Annotated Transformer](https://nlp.seas.harvard.edu/annotated-transformer/) com três
# chaves, cada uma introduzindo um erro (o comentário numa linha diz qual chave a altera),
# diagnosticado uma vez por erro. Cada diagnóstico nomeia o erro que recebeu.

# %%
import math

import torch

import posenc


def draft_table(length, d_model, *, integer=False, multiply=False, transpose=False):
    position = torch.arange(length, dtype=torch.float32)[:, None]
    two_i = torch.arange(0, d_model, 2)
    exponent = two_i // d_model if integer else two_i / d_model  # integer: // (old torch's int "/")
    sign = 1.0 if multiply else -1.0  # multiply: the minus sign of exp(-...) forgotten
    angles = position * torch.exp(sign * exponent * math.log(10000.0))
    table = torch.zeros(length, d_model)
    table[:, 0::2] = torch.sin(angles)
    table[:, 1::2] = torch.cos(angles)
    return table.T if transpose else table  # transpose: (d_model, length)


# %%
mistakes = {
    "integer_division": dict(integer=True),
    "multiplied_not_divided": dict(multiply=True),
    "transposed": dict(transpose=True),
}
for code, mistake in mistakes.items():
    found = posenc.diagnose(draft_table(10, 6, **mistake))
    assert found.codes == [code], f"diagnose names the one mistake put in: {code}"
    print(found, end="\n\n")

# %% [markdown]
# Os erros se combinam, e o `diagnose` nomeia cada um: uma tabela transposta com o expoente
# arredondado para baixo até zero.

# %%
found = posenc.diagnose(draft_table(10, 6, integer=True, transpose=True))
assert found.codes == ["transposed", "integer_division"]
print(found)

# %% [markdown]
# Um tensor impresso também serve, do jeito que um notebook o mostra: um tensor longo é
# resumido aos seus cantos, então passe o seu formato. As três primeiras e as três últimas
# linhas e colunas desta impressão `(50, 64)` bastam para ver que falta o sinal de menos, a
# mesma resposta que para o próprio tensor.

# %%
tensor = draft_table(50, 64, multiply=True)
printed = repr(tensor)
shown = posenc.parse_printed(printed, shape=(50, 64))
print("rows shown:", shown.rows.tolist(), " columns shown:", shown.columns.tolist())
found = posenc.diagnose(printed, shape=(50, 64))
assert found.codes == posenc.diagnose(tensor).codes == ["multiplied_not_divided"], "the print says what the tensor says"
print(found)

# %% [markdown]
# ## Resumo
#
# - O passo a passo da aula com d_model=64: denominadores `(32,)`, iguais para colunas pares e ímpares;
#   posições `(10, 1)`; senos e cossenos `(10, 32)`; empilhados `(10, 32, 2)`; achatados
#   `(10, 64)`. Cada etapa bate com o `posenc` até 1e-6 (as verificações cruzadas abaixo).
# - A nossa `SinusoidalTable` reproduz a tabela `(10, 6)` impressa pela aula nas suas quatro
#   casas decimais e é igual a `posenc.torch.positional_encoding(10, 6)` até 1e-6. Ao
#   contrário da classe da aula, ela dá a um `d_model` ímpar a sua largura (7 colunas, não 8).
# - `AddPositions`, o módulo usual escrito à mão, devolve `dropout(x + PE[:seq])` a partir de
#   um buffer; os modelos antes escalam os embeddings por $\sqrt{d_{\mathrm{model}}}$, para
#   que não sejam abafados pelas linhas da tabela, de norma $\sqrt{d_{\mathrm{model}}/2}$.
# - `posenc.torch.PositionalEncoding` faz o mesmo que `AddPositions`. Sua
#   tabela é um buffer não persistente que se move com `.to(device)` e fica fora dos
#   checkpoints, e ela cresce quando uma sequência é mais longa que `max_len`.
# - `posenc.diagnose` diz o que uma tabela é, seja um tensor ou sua forma impressa: a do
#   artigo, ou quais erros (divisão inteira, um sinal de menos perdido, uma transposição) a reproduzem.

# %% [markdown]
# ## Exercícios
#
# Cada exercício traz um rascunho com um erro e, em seguida, uma verificação: rode a
# verificação, leia o que ela diz, corrija o rascunho e rode as duas células de novo até ela
# dizer que está correto. O feedback guardado aqui é o do rascunho como foi dado. Empacou?
# `nb02.NAME.hint()` dá uma dica e `nb02.NAME.solution()` imprime o código de referência com
# que a verificação compara (NAME é a palavra antes de `.check`).

# %%
from posenc.exercises import nb02

# %% [markdown]
# ### Exercício 1 · A tabela do Annotated Transformer, corrigida
#
# Complete `my_positional_encoding(length, d_model)` para que ela devolva a tabela float32
# `(length, d_model)` do artigo pelo caminho exp/log, incluindo um `d_model` ímpar (sua última
# coluna é um seno). O rascunho abaixo tem dois problemas; a verificação encontra um de cada
# vez. (`posenc.diagnose(my_positional_encoding(10, 6))` dá uma segunda opinião.)

# %%
def my_positional_encoding(length, d_model):
    position = torch.arange(1, length + 1, dtype=torch.float32)[:, None]
    div_term = torch.exp(torch.arange(0, d_model, 2) * (-math.log(10000.0) / d_model))
    table = torch.zeros(length, d_model)
    table[:, 0::2] = torch.sin(position * div_term)
    table[:, 1::2] = torch.cos(position * div_term)
    return table


# %%
nb02.table.check(my_positional_encoding)

# %% [markdown]
# ### Exercício 2 · O forward que um modelo chama
#
# O `forward()` da aula não recebe nada e devolve a tabela. Um modelo chama sua codificação
# posicional com os embeddings `x`, de formato `(batch, seq, d_model)`, e espera receber de
# volta `x` mais as primeiras `seq` linhas da tabela. Corrija o `forward` abaixo; a
# verificação constrói o seu módulo em dois tamanhos e o chama sobre um lote.

# %%
class MyPositionalEncoding(nn.Module):
    def __init__(self, d_model, max_len=5000):
        super().__init__()
        self.register_buffer("pe", posenc.torch.positional_encoding(max_len, d_model), persistent=False)

    def forward(self, x):
        return self.pe  # the lecture's forward: the whole table


# %%
nb02.forward.check(MyPositionalEncoding)

# %% [markdown]
# ### Exercício 3 · A tabela que fica para trás
#
# Este módulo dá os números certos numa CPU. Numa GPU, depois de `model.to("cuda")`, o seu
# forward falha: os embeddings estão na GPU, a tabela dele não. Descubra por que sem uma GPU
# (mova-o para o dispositivo meta e olhe `.pe.device`), corrija o `__init__` e verifique.

# %%
class TableOnTheSide(nn.Module):
    def __init__(self, d_model, max_len=5000):
        super().__init__()
        self.pe = posenc.torch.positional_encoding(max_len, d_model)

    def forward(self, x):
        return x + self.pe[: x.shape[1]]


# %%
nb02.buffer.check(TableOnTheSide)

# %% [markdown]
# ### Exercício 4 · Quão forte é a tabela?
#
# Um modelo de largura `d_model = 768` sorteia as entradas do seu embedding com desvio padrão
# $1/\sqrt{768}$ e multiplica os embeddings por $\sqrt{768}$ antes de somar a tabela. Preveja,
# com lápis ou com Python, a razão entre a norma de uma linha da tabela e a norma (típica) de
# uma linha de embedding escalada. O rascunho conta uma unidade de norma ao quadrado por coluna.

# %%
table_row = math.sqrt(768)  # one sin^2 or cos^2 per column?
scaled_embedding_row = math.sqrt(768 * (1 / 768)) * math.sqrt(768)
ratio = table_row / scaled_embedding_row

# %%
nb02.scale.check(ratio)

# %% [markdown]
# ## Verificações cruzadas
#
# O lote de verificações por trás das frases acima, num só lugar: cada passo do passo a passo
# contra o `posenc` (referências em float64; `ATOL` cobre o arredondamento em float32 nessas
# posições pequenas), e os números que o texto cita.

# %%
# Cross-checks: each step of the walk against posenc (float64 references)
assert den_even.dtype == torch.float32
torch.testing.assert_close(den_even.double(), torch.from_numpy(posenc.denominators(64)), rtol=1e-6, atol=0)
ref_angle = torch.from_numpy(posenc.angles(np.arange(10), 64))
torch.testing.assert_close(sin_part.double(), ref_angle.sin(), rtol=0, atol=ATOL)
torch.testing.assert_close(cos_part.double(), ref_angle.cos(), rtol=0, atol=ATOL)
np.testing.assert_array_equal(posenc.interleave(sin_part.numpy(), cos_part.numpy()), pe64.numpy())
torch.testing.assert_close(pe64, posenc.torch.positional_encoding(10, 64), rtol=0, atol=ATOL)
assert not torch.equal(concatenated, pe64)
torch.testing.assert_close(concatenated, posenc.torch.positional_encoding(10, 64, layout="sin_cos"), rtol=0, atol=ATOL)
assert big[:, -2].abs().max() < 0.02 and big[:, -1].min() > 0.9999
assert len(pair_starts) == 4 and table7.shape == (10, 7)
torch.testing.assert_close(table7, posenc.torch.positional_encoding(10, 7), rtol=0, atol=ATOL)

# %%
# Cross-checks: the numbers the prose quotes, the wavelengths and the sqrt(d_model) scale at the digits printed
assert round(10000 ** (8 / 64), 1) == 3.2 and round(2 * np.pi, 1) == 6.3
assert round(2 * np.pi * 10000 ** (24 / 64), -1) == 200
assert round(embedding_norms.mean().item(), 2) == 1.0 and round(scaled_norms.mean().item(), 1) == 22.6
assert round((table_norms / embedding_norms).mean().item()) == 16

# %%
# Cross-checks of the toy model (norms, dropout, eval mode, the device, the grown table) and of diagnose
assert round(embed.weight.norm(dim=1).mean().item(), 1) == 3.6 and round(8**0.5, 1) == 2.8
assert int((~kept).sum()) == 18 and kept.numel() == 224
with torch.no_grad():
    assert torch.equal(model(tokens), y)
assert add_positions.max_len == 80 and add_positions.pe.device == embed.weight.device

# diagnose: the draft without a mistake is the paper's table; the corners a long print shows
assert posenc.diagnose(draft_table(10, 6)).matches_paper
assert shown.rows.tolist() == [0, 1, 2, 47, 48, 49] and shown.columns.tolist() == [0, 1, 2, 61, 62, 63]
