# %% [markdown]
# # 09 · Além de uma sequência: posições numa grade de imagem
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/posenc-org/posenc/blob/main/notebooks/pt_BR/09_beyond_a_sequence.ipynb)
#
# Um [vision transformer](https://arxiv.org/abs/2010.11929) (ViT) corta uma imagem em patches
# e os lê como uma sequência. Um patch tem duas coordenadas, uma linha e uma coluna, e a
# codificação senoidal do notebook 01 acompanha as duas: metade dos canais codifica a linha,
# metade a coluna. Três coisas podem dar errado no caminho, e nenhuma delas avisa: os patches
# são postos numa ordem e as suas posições em outra; duas bibliotecas escrevem "a mesma"
# tabela de formas diferentes; a imagem muda de tamanho e as posições precisam acompanhar.
#
# **Pergunta:** Como uma tabela sin-cos dá posições aos patches de uma imagem, e o que dá errado quando a ordem de achatamento, a convenção ou o tamanho da grade muda?
#
# **Você será capaz de:**
# - montar uma tabela sin-cos 2-D na convenção do [MAE](https://arxiv.org/abs/2111.06377) (seção 2) e achar um erro de achatamento numa delas com `posenc.diagnose_grid`;
# - dizer quais tabelas de grade publicadas diferem só na ordem das colunas e quais diferem em frequências ou posições;
# - dar uma tabela para um novo tamanho de grade em um de dois referenciais (o campo de visão antigo ou o tamanho de patch antigo) e prever o que um modelo treinado responde com cada um.
#
# **Pré-requisitos:** notebooks 01 e 04 · **Tempo:** cerca de 50 minutos

# %%
# On Colab, install posenc from GitHub; elsewhere `make lab` has already installed it.
import sys

if "google.colab" in sys.modules:
    # %pip install --quiet "posenc @ git+https://github.com/posenc-org/posenc@main"

# %% [markdown]
# O NumPy monta as tabelas; o PyTorch as reamostra e treina o modelo pequeno da seção 5.
# Uma única thread, algoritmos determinísticos e uma semente fazem cada execução se repetir
# exatamente.

# %%
# %matplotlib inline
import matplotlib.pyplot as plt
import numpy as np
import torch
from torch import nn

import posenc
import posenc.torch
from posenc.exercises import nb09

torch.manual_seed(0)
torch.set_num_threads(1)
torch.use_deterministic_algorithms(True)

# %% [markdown]
# ## 1. De uma grade para uma sequência
#
# Uma imagem de 3 x 4 patches (altura 3, largura 4) vira 12 tokens, lidos linha por linha
# como um texto: o token $k$ é o patch na linha $k \,//\, W$ e na coluna $k \bmod W$. É isso
# que `reshape` e `flatten` fazem com um array `(H, W, d)` de embeddings de patches.

# %%
h, w = 3, 4
token_row, token_column = np.divmod(np.arange(h * w), w)
print("row:   ", token_row)
print("column:", token_column)

# %% [markdown]
# A tabela de posições precisa listar os mesmos patches na mesma ordem. Uma forma comum de
# montar as coordenadas é `meshgrid`. Com `indexing="ij"` e a largura passada primeiro, a
# grade sai como `(W, H)`, e achatá-la percorre as colunas de cima para baixo: os quatro
# primeiros tokens, a linha de cima da imagem, recebem as posições x 0, 0, 0, 1 em vez de
# 0, 1, 2, 3. O [MoCo v3](https://arxiv.org/abs/2104.02057) (um ViT autossupervisionado,
# [código](https://github.com/facebookresearch/moco-v3)) monta a sua tabela assim, e o
# encoder do detector [RT-DETR](https://arxiv.org/abs/2304.08069) também: o seu código
# original ([lyuwenyu/RT-DETR](https://github.com/lyuwenyu/RT-DETR), `build_2d_sincos_position_embedding`
# em `rtdetr_pytorch` e `rtdetrv2_pytorch`) ainda faz isso, enquanto o seu port para o
# [transformers](https://github.com/huggingface/transformers) da Hugging Face foi corrigido
# pelo [PR #41380](https://github.com/huggingface/transformers/pull/41380).

# %%
grid_x, grid_y = np.meshgrid(np.arange(w), np.arange(h), indexing="ij")
claimed_x, claimed_y = grid_x.ravel(), grid_y.ravel()
print("x claimed:", claimed_x)
wrong = int(np.sum((claimed_x != token_column) | (claimed_y != token_row)))
print(f"{wrong} of {h * w} tokens carry another patch's position")

# %%
# Every (x, y) pair still occurs once: nothing looks broken, the positions are just scrambled.
assert len(set(zip(claimed_x, claimed_y))) == h * w

# %% [markdown]
# Numa grade quadrada, o mesmo código dá uma tabela *correta*: percorrer as colunas numa
# grade $n \times n$ dá ao token $k$ o par $(x, y) = (k \,//\, n, k \bmod n)$, que é o
# verdadeiro par $(y, x)$ com os dois nomes trocados. A tabela fica então com o bloco das
# linhas e o bloco das colunas na outra ordem, uma codificação válida, idêntica à do código
# corrigido no transformers. Por isso o erro é invisível nas imagens quadradas em que a
# maioria dos modelos é treinada, e só aparece quando a grade não é quadrada. O posenc
# escreve a tabela do MoCo v3 como `convention="moco-v3"` e a corrigida como
# `convention="rt-detr"` (`cls_token=False` tira uma linha que a seção 3 explica):

# %%
same = {}
for shape in [(6, 6), (6, 9)]:
    moco = posenc.grid_encoding(shape, 64, convention="moco-v3", cls_token=False)
    same[shape] = np.array_equal(moco, posenc.grid_encoding(shape, 64, convention="rt-detr"))
    print(f"{shape[0]} x {shape[1]}: same table: {same[shape]}")

# %%
assert same == {(6, 6): True, (6, 9): False}

# %% [markdown]
# ## 2. O que a codificação 2-D enxerga
#
# Na tabela do [MAE](https://arxiv.org/abs/2111.06377) (masked autoencoders, um método de
# pré-treino de ViT; [código](https://github.com/facebookresearch/mae), `util/pos_embed.py`),
# um patch na coluna $x$ e na linha $y$ recebe o vetor
# $[\sin x\,w_j, \cos x\,w_j, \sin y\,w_j, \cos y\,w_j]$ com $d/4$ frequências
# $w_j = 10000^{-j/(d/4)}$. O produto escalar de dois patches é então
# $\sum_j \cos(w_j\,\Delta x) + \sum_j \cos(w_j\,\Delta y)$: ele depende só do deslocamento
# 2-D $(\Delta x, \Delta y)$, como em 1-D (notebook 04), e é uma *soma* de uma parte das
# colunas com uma parte das linhas. Abaixo, a codificação de um patch contra todos os patches
# de uma grade 12 x 20, desenhada como imagem, com a ordem correta e com o percurso por
# colunas do MoCo v3.

# %%
H, W, d = 12, 20, 128
patch = (4, 7)
tables = {
    "row by row (MAE)": posenc.grid_encoding((H, W), d, convention="mae"),
    "down the columns (MoCo v3 order)": posenc.grid_encoding((H, W), d, convention="moco-v3", cls_token=False),
}
similarities = {name: (t @ t[patch[0] * W + patch[1]]).reshape(H, W) / (d / 2) for name, t in tables.items()}
lowest = min(s.min() for s in similarities.values())
fig, axes = plt.subplots(1, 2, figsize=(11, 3.2))
for ax, (name, similarity) in zip(axes, similarities.items()):
    image = ax.imshow(similarity, cmap="viridis", vmin=lowest, vmax=1)
    ax.plot(patch[1], patch[0], "r+", ms=12)
    ax.set_title(name)
    ax.set_xlabel("column x")
    ax.set_ylabel("row y")
fig.colorbar(image, ax=axes, label="dot product / (d / 2)")
plt.show()

# %% [markdown]
# Com a ordem certa, a figura é um sinal de mais: um ponto claro no patch (a cruz vermelha),
# com uma linha clara e uma coluna clara passando por ele, e cantos escuros. Ao longo da
# própria linha do patch, $\Delta y = 0$, então a parte das linhas está no seu máximo, $d/4$,
# seja qual for $\Delta x$; o mesmo vale ao longo da sua coluna. A figura inteira é a soma da
# sua linha que passa pelo patch com a sua coluna que passa pelo patch, menos o valor no
# próprio patch, que foi contado duas vezes:

# %%
similarity = similarities["row by row (MAE)"]
along_row, along_column = similarity[patch[0]], similarity[:, patch[1]]
print("lowest along the patch's row and column:", round(float(min(along_row.min(), along_column.min())), 2))
print("lowest anywhere (a corner):             ", round(float(similarity.min()), 2))

# %%
assert np.allclose(similarity, along_row[None, :] + along_column[:, None] - similarity[patch], atol=1e-5)

# %% [markdown]
# O sinal de mais é o mesmo onde quer que o patch esteja: mover o patch move a figura, já
# que só o deslocamento conta. Com as colunas percorridas primeiro, os patches "mais
# próximos" ficam espalhados pela imagem: a maioria dos tokens carrega a posição de outro
# patch.

# %%
mae = tables["row by row (MAE)"]
sim = (mae @ mae.T).reshape(H, W, H, W)
# patch (4, 7) against (y, x) equals patch (5, 9) against (y + 1, x + 2)
assert np.allclose(sim[4, 7, :11, :18], sim[5, 9, 1:, 2:], atol=1e-5)

# %% [markdown]
# ## 3. As convenções lado a lado
#
# Toda fonte escreve senos e cossenos das duas coordenadas, e não há duas que façam isso
# exatamente do mesmo jeito. Além do MAE e do MoCo v3:
# o [big_vision](https://github.com/google-research/big_vision) (o código de ViT do Google,
# `posemb_sincos_2d`) e o [simple ViT](https://github.com/lucidrains/vit-pytorch) do lucidrains
# espalham as frequências em $d/4 - 1$ passos; o [timm](https://github.com/huggingface/pytorch-image-models)
# (PyTorch Image Models, `build_sincos2d_pos_embed`) escreve todos os senos e depois todos os
# cossenos; o [DETR](https://arxiv.org/abs/2005.12872) (um transformer de detecção,
# [código](https://github.com/facebookresearch/detr)) intercala pares seno/cosseno e conta as
# posições a partir de 1; o [diffusers](https://github.com/huggingface/diffusers) (a
# biblioteca de modelos de difusão da Hugging Face, `get_2d_sincos_pos_embed`) escala as
# posições para um tamanho base; `rt-detr` é o RT-DETR do transformers.
# `posenc.list_grid_conventions()` lista os nomes, e
# `posenc.grid_encoding(shape, d, convention=...)` escreve os números de cada uma.
#
# O ViT põe um token extra antes dos patches, um *token de classe* cuja saída resume a
# imagem. O MAE e o MoCo v3 lhe dão uma linha de zeros na tabela (uma *linha de classe*,
# `cls_token=True`; o padrão do MoCo v3). Por isso a figura pega as últimas 60 linhas de cada
# tabela, `[-60:]`: os 60 patches de uma grade 6 x 10, sem a linha de classe.

# %%
# the eight conventions above (posenc.list_grid_conventions() also names positional-encodings)
names = ["mae", "moco-v3", "rt-detr", "big_vision", "simple-vit", "timm", "detr", "diffusers"]
shape = (6, 10)
tables = {name: posenc.grid_encoding(shape, 64, convention=name)[-60:] for name in names}
fig, axes = plt.subplots(2, 4, figsize=(14, 5), sharey=True)
for ax, (name, table) in zip(axes.ravel(), tables.items()):
    ax.imshow(table, cmap="RdBu_r", vmin=-1, vmax=1, aspect="auto", interpolation="nearest")
    ax.set_title(name)
for ax in axes[1]:
    ax.set_xlabel("column of the table")
for ax in axes[:, 0]:
    ax.set_ylabel("token (row-major)")
fig.tight_layout()
plt.show()

# %% [markdown]
# Quão distantes elas estão? A maior diferença entre cada tabela e a do MAE diz pouco: uma
# tabela com as colunas em outra ordem está tão longe da do MAE quanto uma tabela com outros
# números. Duas perguntas melhores: as suas colunas são as colunas do MAE em outra ordem? E
# ela dá a cada par de tokens o mesmo produto escalar, isto é, a mesma *matriz de Gram*
# $T\,T^\top$? Uma ordem fixa de colunas não custa nada a um modelo: treinado com outra
# ordem, ele pode aprender os mesmos pesos, permutados para combinar (o notebook 05 mostra
# isso para layouts 1-D), embora um modelo treinado espere a sua própria ordem. Outros
# produtos escalares entre tokens são outra codificação.

# %%
def same_columns(a, b):
    """Are the columns of a those of b, in some order?"""
    return sorted(map(tuple, a.T.round(6))) == sorted(map(tuple, b.T.round(6)))


reference = tables["mae"]
comparison = {}
print(f"{'':>11}  largest difference  same columns  same dot products")
for name, table in tables.items():
    gram = float(np.abs(table @ table.T - reference @ reference.T).max())
    comparison[name] = (float(np.abs(table - reference).max()), same_columns(table, reference), gram < 1e-4)
    print(f"{name:>11}  {comparison[name][0]:18.2f}  {comparison[name][1]!s:>12}  {comparison[name][2]!s:>17}")

# %% [markdown]
# São três grupos, então. **Só a ordem:** `rt-detr` e `timm` têm as colunas do MAE em outra
# ordem. A classe do DETR com os seus padrões (posições $1..n$ em vez de $0..n-1$) tem outros
# números, mas os mesmos produtos escalares, porque só os deslocamentos contam e um
# deslocamento de um não muda nenhum deles. **A ordem dos tokens:** as colunas do MoCo v3 são
# as do MAE, mas, nesta grade não quadrada, elas vão para outros tokens, então os produtos
# escalares entre tokens mudam.
# **Frequências ou posições:** o big_vision e o simple ViT (a mesma função, os mesmos
# números) espalham as frequências em um passo a menos, $w_j = 10000^{-j/(d/4 - 1)}$; o
# diffusers multiplica as posições por $16/6$ ao longo das linhas e por $16/10$ ao longo das
# colunas, o que equivale a outras frequências por eixo. O próprio modelo do DETR monta a sua
# tabela com `normalize=True`, posições escaladas para $(0, 2\pi]$ por eixo: outro
# referencial desse tipo.

# %%
order_only = [name for name, (_, columns, gram) in comparison.items() if columns and name != "mae"]
assert order_only == ["rt-detr", "timm"]

# %% [markdown]
# `identify_grid` recebe uma tabela congelada e o formato da sua grade e diz quais convenções
# a escreveram (linhas antes dos tokens da grade, como a de um token de classe, são
# informadas, não comparadas). Aqui entra a tabela de cada convenção, as do MAE e do MoCo v3
# com a sua linha de classe:

# %%
identified = {}
for name in names:
    options = {"cls_token": True} if name in ("mae", "moco-v3") else {}
    identified[name] = posenc.identify_grid(posenc.grid_encoding(shape, 64, convention=name, **options), shape)
    print(f"{name:>11} -> {' = '.join(identified[name].matches)}; prefix rows: {identified[name].prefix_rows}")

# %%
assert all(name in found.matches for name, found in identified.items())

# %% [markdown]
# O timm com `interleave_sin_cos=True` escreve os números do RT-DETR do transformers e, com
# `reverse_coord` também, os do MoCo v3 (incluindo o percurso por colunas). `diagnose_grid`
# vai um passo além: dada a convenção que uma tabela *deveria* seguir, ele diz qual erro de
# grade explica os números. Três tabelas do MAE montadas errado na grade 6 x 10:

# %%
mistakes = {
    "shape passed as (W, H)": posenc.grid_encoding((10, 6), 64, convention="mae"),
    "walked down the columns": posenc.grid_encoding(shape, 64, convention="moco-v3", cls_token=False),
    "y block first": posenc.grid_encoding(shape, 64, convention="rt-detr"),
}
diagnosed = {}
for name, table in mistakes.items():
    found = posenc.diagnose_grid(table, shape, "mae")
    diagnosed[name] = [mistake for _, mistake in found.mistakes]
    print(f"{name}:\n  " + "\n  ".join(found.findings))

# %%
assert list(diagnosed.values()) == [["height and width swapped"], ["wrong flattening order"], ["axes stacked in the wrong order"]]

# %% [markdown]
# ## 4. Uma nova resolução: dois referenciais
#
# Fazer ajuste fino numa resolução maior, ou rodar numa imagem de outro formato, significa
# outro número de patches. A tabela da nova grade pode pôr os novos patches em um de dois
# referenciais:
#
# - **Reescalado: o campo de visão antigo.** A nova grade cobre a mesma imagem que a antiga,
#   então os seus patches caem *entre* as posições antigas: o patch $i$ de $n_\text{new}$ fica
#   na posição *esticada* $(i + \tfrac12)\,n_\text{old}/n_\text{new} - \tfrac12$ em unidades
#   antigas (os centros dos patches se alinham). Redimensionar a tabela antiga como uma imagem
#   faz isso: o `interpolate_pos_embed` do MAE (bicúbico) e o `resample_abs_pos_embed` do timm
#   (bicúbico com antialiasing por padrão) redimensionam qualquer tabela que um checkpoint
#   tenha, aprendida ou sin-cos. O diffusers já calcula a sua tabela sin-cos num referencial
#   assim desde o início: as posições
#   $k \cdot \text{base\_size} / (n \cdot \text{interpolation\_scale})$ cobrem o mesmo trecho
#   qualquer que seja o número de patches $n$ (os cantos se alinham, e não os centros).
# - **Estendido: o tamanho de patch antigo.** O patch $i$ mantém a posição $i$; uma grade
#   menor é um recorte da antiga, e uma grade maior chega a posições que nunca existiram
#   antes. O RT-DETR monta a sua tabela assim, em posições inteiras, para qualquer grade de
#   features que uma imagem produza.
#
# Para uma tabela sin-cos, os dois referenciais podem ser calculados exatamente:
# `grid_encoding` aceita `positions`. Primeiro, quão longe o redimensionamento fica da tabela
# reescalada exata? O redimensionamento do timm aplicado a uma tabela do MAE de 6 x 8 (com a
# linha de classe posta de lado) para fazer 12 x 16, contra a fórmula do MAE nas posições
# esticadas. `posenc.torch.resample_abs_pos_embed` faz as mesmas chamadas que o timm.

# %%
old, new, d = (6, 8), (12, 16), 64
old_table = posenc.torch.grid_encoding(old, d, convention="mae", cls_token=True, dtype=torch.float64)
resized = posenc.torch.resample_abs_pos_embed(old_table, new, old).numpy()
stretched = [(np.arange(n) + 0.5) * o / n - 0.5 for o, n in zip(old, new)]
exact = posenc.grid_encoding(new, d, convention="mae", dtype=np.float64, positions=stretched)
error = np.abs(resized[1:] - exact).reshape(*new, d)
inside = np.logical_and.outer((stretched[0] >= 0) & (stretched[0] <= old[0] - 1),
                              (stretched[1] >= 0) & (stretched[1] <= old[1] - 1))
frequency = 10000.0 ** -(np.arange(d) % (d // 4) / (d // 4))
fig, ax = plt.subplots(figsize=(7, 3))
ax.loglog(frequency, error[~inside].max(axis=0), "o", ms=4, label="border patches (outside the old grid)")
ax.loglog(frequency, error[inside].max(axis=0), "x", ms=5, label="the other patches")
ax.set_xlabel("frequency of the column (radians per patch)")
ax.set_ylabel("largest error of the resize")
ax.set_title("6 x 8 table resized to 12 x 16")
ax.legend()
plt.show()
print("stretched rows:", stretched[0].round(2))
worst = np.unravel_index(error.max(axis=-1).argmax(), new)
print(f"largest error {error.max():.2f} at patch {tuple(map(int, worst))}; "
      f"largest inside the old grid {error[inside].max():.2f}")

# %% [markdown]
# As colunas lentas passam quase sem mudança; as rápidas, que giram até um radiano de um
# patch para o seguinte, não: uma cúbica por amostras tão afastadas não consegue acompanhar
# um seno. O erro é maior nos patches da borda: a primeira e a última linha e coluna da nova
# grade ficam em $-0.25$ e além da última posição antiga, fora da grade antiga, onde o
# redimensionamento não tem amostras de um dos lados e extrapola. Os patches um passo para
# dentro vêm em seguida (uma cúbica lê duas amostras antigas de cada lado, e ali uma delas
# fica além da borda); mais para dentro, as colunas rápidas ainda erram por alguns
# centésimos. A linha de classe é levada sem alteração.

# %%
assert error[~inside].max() > error[inside].max()

# %% [markdown]
# O `antialias=True` padrão do timm não é um detalhe: mesmo ao ampliar, ele muda os números.
# O bicúbico com antialiasing do PyTorch pondera as amostras com outra cúbica (o
# [núcleo de Keys](https://en.wikipedia.org/wiki/Bicubic_interpolation#Bicubic_convolution_algorithm)
# com $a = -0.5$; o bicúbico simples usa $a = -0.75$), e o `interpolate_pos_embed` do MAE
# chama o bicúbico simples:

# %%
plain = posenc.torch.resample_abs_pos_embed(old_table, new, old, antialias=False).numpy()
print(f"largest difference, antialias on vs off: {np.abs(resized - plain).max():.2f}")

# %% [markdown]
# Para uma tabela sin-cos, não há nada a interpolar: calcule-a, no referencial que você
# escolher. A tabela reescalada exata acima vem de `grid_encoding(..., positions=stretched)`;
# em float32 ela fica a menos de 2e-7 da de float64, o limite que a docstring de
# `grid_encoding` promete para float32:

# %%
in_float32 = posenc.grid_encoding(new, d, convention="mae", positions=stretched)
assert np.abs(in_float32 - exact).max() < 2e-7

# %% [markdown]
# ## 5. Treinado numa grade, testado em outras
#
# Qual referencial está certo depende do que o modelo aprendeu. Um modelo pequeno encontra um
# patch marcado: cada exemplo é uma grade de tokens, um deles com um marcador, e o modelo
# responde com a linha e a coluna do marcador. Ele vê os tokens só como marcador mais
# codificação posicional, agrega-os com uma cabeça de atenção e lê a linha e a coluna no
# vetor agregado, com saídas para até 16 linhas e 24 colunas. Nós o treinamos numa grade
# 8 x 12 com a tabela do MAE; o treino nunca lhe mostra uma linha além de 7 nem uma coluna
# além de 11.

# %%
class FindTheMarker(nn.Module):
    def __init__(self, d, rows, cols):
        super().__init__()
        self.marker = nn.Parameter(torch.randn(d))
        self.attention = nn.MultiheadAttention(d, 1, batch_first=True)
        self.query = nn.Parameter(torch.randn(1, 1, d))
        self.row, self.col = nn.Linear(d, rows), nn.Linear(d, cols)

    def forward(self, marked, table):  # marked: (batch,) token index; table: (tokens, d)
        tokens = table + (torch.arange(len(table)) == marked[:, None])[..., None] * self.marker
        pooled, _ = self.attention(self.query.expand(len(marked), -1, -1), tokens, tokens)
        return self.row(pooled[:, 0]), self.col(pooled[:, 0])

# %%
d, train_shape = 32, (8, 12)
train_table = posenc.torch.grid_encoding(train_shape, d, convention="mae")
model = FindTheMarker(d, 16, 24)
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
for step in range(400):
    marked = torch.randint(0, 96, (64,))
    rows, cols = model(marked, train_table)
    loss = nn.functional.cross_entropy(rows, marked // 12) + nn.functional.cross_entropy(cols, marked % 12)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()

# %% [markdown]
# `answers` marca cada patch de uma grade uma vez e devolve a linha e a coluna que o modelo
# indica para cada um, como arrays `(H, W)`. `found` avalia essas respostas contra as
# posições que uma tabela codifica: uma resposta conta quando fica a menos de meio patch da
# posição do patch nos dois eixos. Para posições inteiras, isso é a resposta exata; para as
# reescaladas, a posição de treino mais próxima (qualquer uma das duas quando a posição fica
# bem no meio).

# %%
def answers(table, shape):
    with torch.no_grad():
        rows, cols = model(torch.arange(shape[0] * shape[1]), table)
    return rows.argmax(-1).numpy().reshape(shape), cols.argmax(-1).numpy().reshape(shape)


def found(answered, positions):
    y, x = np.meshgrid(*positions, indexing="ij")
    return float(np.mean((np.abs(answered[0] - y) <= 0.5) & (np.abs(answered[1] - x) <= 0.5)))


integers = [np.arange(n) for n in train_shape]
print(f"training grid 8 x 12: {found(answers(train_table, train_shape), integers):.2f} of the patches found")

# %% [markdown]
# Agora uma grade menor, 6 x 9, e uma maior, 16 x 24, cada uma com quatro tabelas: a do MAE
# em posições inteiras (estendida); a mesma percorrida por colunas (a ordem do MoCo v3); a
# tabela de treino redimensionada pela função do timm (reescalada, como se redimensionaria
# uma tabela aprendida); e a fórmula do MAE nas posições esticadas (reescalada, exata). Cada
# uma é avaliada contra as coordenadas inteiras da nova grade, os rótulos que se usariam
# ingenuamente, e as reescaladas também contra as posições esticadas que codificam.

# %%
def stretch(shape):
    return [(np.arange(n) + 0.5) * o / n - 0.5 for o, n in zip(train_shape, shape)]


test_shapes = [(6, 9), (16, 24)]
test_tables = {
    "integer positions": lambda s: posenc.torch.grid_encoding(s, d, convention="mae"),
    "integer, down the columns": lambda s: posenc.torch.grid_encoding(s, d, convention="moco-v3", cls_token=False),
    "resized (timm)": lambda s: posenc.torch.resample_abs_pos_embed(train_table, s, train_shape, num_prefix_tokens=0),
    "exact at stretched positions": lambda s: posenc.torch.grid_encoding(s, d, convention="mae", positions=stretch(s)),
}
answered = {(name, s): answers(build(s), s) for name, build in test_tables.items() for s in test_shapes}
scores = {}
for name in test_tables:
    frames = ["integers", "stretched"] if "stretched" in name or "resized" in name else ["integers"]
    for frame in frames:
        scores[name, frame] = [
            found(answered[name, s], [np.arange(n) for n in s] if frame == "integers" else stretch(s))
            for s in test_shapes
        ]

# %%
# NBVAL_IGNORE_OUTPUT
print(f"{'table':>28}  {'scored against':>14}  {'6 x 9':>6}  {'16 x 24':>7}")
for (name, frame), (small, large) in scores.items():
    print(f"{name:>28}  {frame:>14}  {small:6.2f}  {large:7.2f}")

# %% [markdown]
# Na grade menor, as posições inteiras são um recorte daquilo em que o modelo foi treinado:
# ele encontra os patches. Percorrida por colunas, a maioria dos tokens alega a posição de
# outro patch, e o modelo responde com esse patch. As tabelas reescaladas falham contra os
# rótulos inteiros, mas não porque o redimensionamento é inexato: a tabela exata nas posições
# esticadas falha do mesmo jeito. Avaliadas contra as posições que codificam, as duas
# encontram os patches. O modelo lê uma tabela reescalada no referencial que aprendeu e
# responde em unidades antigas. Linha por linha na grade 6 x 9 (a tabela redimensionada), a
# resposta dada com mais frequência contra a posição esticada:

# %%
# NBVAL_IGNORE_OUTPUT
resized_rows = answered["resized (timm)", (6, 9)][0]
typical = [int(np.bincount(r).argmax()) for r in resized_rows]
print("new row:        ", list(range(6)))
print("stretched row:  ", stretch((6, 9))[0].round(2).tolist())
print("model's answer: ", typical)

# %%
assert np.all(np.abs(np.array(typical) - stretch((6, 9))[0]) <= 0.5)

# %% [markdown]
# A grade maior mostra o que cada referencial custa. Reescalada, toda resposta é a posição de
# treino mais próxima da esticada, então dois patches novos vizinhos recebem a mesma
# resposta: o modelo vê a nova grade na resolução da grade antiga.
# Estendida, os patches dentro do antigo bloco 8 x 12 são encontrados, e nenhum dos outros:
# as suas posições nunca apareceram no treino, e o modelo responde com uma linha e uma coluna
# de treino, mesmo havendo saídas para linhas até 15 e colunas até 23.

# %%
rows_16, cols_16 = answered["integer positions", (16, 24)]
y, x = np.mgrid[:16, :24]
within = (y < 8) & (x < 12)
hit = (rows_16 == y) & (cols_16 == x)
print(f"extended, inside the old block: {hit[within].mean():.2f} found; outside: {hit[~within].mean():.2f}")
print("largest row answered:", int(rows_16.max()), "· largest column answered:", int(cols_16.max()))
distinct = len(set(zip(*(a.ravel() for a in answered["exact at stretched positions", (16, 24)]))))
print(f"rescaled: {distinct} different answers for {16 * 24} patches")

# %%
assert distinct <= train_shape[0] * train_shape[1]  # at most one answer per trained position

# %% [markdown]
# Nenhum dos referenciais é "o correto": eles respondem a perguntas diferentes. Reescalar
# mantém as posições dentro do que o modelo conhece e nomeia lugares como frações da imagem,
# na resolução da grade antiga: o referencial para a mesma cena vista em outra resolução.
# Estender mantém o tamanho do patch e nomeia lugares em patches: o referencial para uma
# imagem maior que mostra *mais*, mas as posições fora da faixa de treino são novas para o
# modelo, e este modelo nunca as nomeia. O que quer que leia as respostas do modelo (aqui, os
# rótulos) precisa usar o referencial da tabela.
#
# ## Resumo
#
# - Uma grade vira uma sequência linha por linha; uma tabela montada a partir de `meshgrid(w, h, indexing="ij")`
#   percorre as colunas (MoCo v3, o código original do RT-DETR), o que é invisível em grades
#   quadradas e, nas outras, dá à maioria dos tokens a posição de outro patch.
# - Na tabela do MAE, o produto escalar de dois patches depende só do deslocamento 2-D e é a
#   soma de uma parte das colunas com uma parte das linhas: uma figura em forma de sinal de mais.
# - As tabelas de grade publicadas diferem só na ordem das colunas (o RT-DETR do transformers,
#   o timm: os mesmos produtos escalares do MAE), nas posições por um deslocamento (os padrões
#   do DETR: os mesmos produtos escalares), na ordem dos tokens (MoCo v3 em grades não
#   quadradas) ou nas frequências e escalas de posição (big_vision, simple ViT, diffusers,
#   DETR normalizado). `identify_grid` diz a convenção de uma tabela congelada, e
#   `diagnose_grid`, o erro por trás de uma tabela errada.
# - Um novo tamanho de grade precisa de um referencial: reescalado para o campo de visão
#   antigo (um redimensionamento; o `interpolate_pos_embed` do MAE, o timm, o
#   `interpolation_scale` do diffusers) ou estendido no tamanho de patch antigo (posições
#   inteiras, como o RT-DETR remonta a sua tabela). Redimensionar uma tabela sin-cos é
#   inexato, pior nos patches da borda, onde há extrapolação; `grid_encoding` com
#   `positions` calcula qualquer um dos dois referenciais exatamente.
# - Um modelo treinado numa grade lê uma tabela reescalada no seu próprio referencial e
#   responde em unidades antigas, na resolução antiga; numa grade estendida, ele encontra os
#   patches em que foi treinado e nenhum além deles.
#
# ## Exercícios
#
# ### Exercício 1 · Encontre o erro de achatamento e corrija-o
#
# A função abaixo deveria escrever a tabela do MAE para uma grade de `height x width`
# patches (tokens linha por linha, colunas `[sin x, cos x, sin y, cos y]`). Ela tem um erro.
# Monte com ela uma tabela não quadrada e pergunte a `diagnose_grid` o que está errado;
# depois corrija a função e confira com `nb09.mae_table.check(mae_table)`.
# `nb09.mae_table.hint()` e `nb09.mae_table.solution()` estão lá para quando você travar.

# %%
def mae_table(height, width, d):
    quarter = d // 4
    frequencies = 10000.0 ** (-np.arange(quarter) / quarter)
    x, y = np.meshgrid(np.arange(width), np.arange(height), indexing="ij")
    x = x.reshape(-1, 1) * frequencies
    y = y.reshape(-1, 1) * frequencies
    return np.concatenate([np.sin(x), np.cos(x), np.sin(y), np.cos(y)], axis=1)


print(posenc.diagnose_grid(mae_table(6, 10, 64), (6, 10), "mae"))

# %%
nb09.mae_table.check(mae_table)

# %% [markdown]
# ### Exercício 2 · Uma grade maior no referencial da grade antiga
#
# Um modelo foi treinado numa grade `old` (linhas, colunas). Escreva
# `rescaled_table(old, new, d)`: a tabela do MAE para a grade `new`, com as posições do
# referencial reescalado, para que o modelo leia os novos patches onde eles ficam na imagem
# que conhece (o referencial que um redimensionamento usa, calculado exatamente). A
# verificação testa várias grades, maiores e menores, e diz qual referencial a sua tabela
# codifica quando não é este. `nb09.rescaled_table.hint()` e
# `nb09.rescaled_table.solution()` ajudam.

# %%
def rescaled_table(old, new, d):
    positions = [np.arange(n) * o / n for o, n in zip(old, new)]
    return posenc.grid_encoding(new, d, convention="mae", positions=positions)


nb09.rescaled_table.check(rescaled_table)

# %% [markdown]
# Quando passar, teste-a no modelo da seção 5:
# `found(answers(torch.tensor(rescaled_table(train_shape, (16, 24), d), dtype=torch.float32), (16, 24)), stretch((16, 24)))`
# dá a taxa de acerto da tabela reescalada exata ali.
#
# ## Verificações cruzadas
#
# As afirmações acima mais uma vez, com os números que o texto informa.

# %%
# Cross-checks of sections 1 and 2
# Section 1: the first four tokens (the top row) claim x = 0, 0, 0, 1; only the first and the last keep their own position.
assert list(claimed_x[:4]) == [0, 0, 0, 1] and list(token_column[:4]) == [0, 1, 2, 3]
assert wrong == 10
# A wrong flattening order on a non-square grid moves entries by up to 2 (a sine against another sine).
moco = posenc.grid_encoding((6, 9), 64, convention="moco-v3", cls_token=False)
assert np.abs(moco - posenc.grid_encoding((6, 9), 64, convention="rt-detr")).max() > 1.5
# Section 2: the patch is its own nearest patch in both orders, and the two orders give other pictures.
assert np.unravel_index(np.argmax(sim[patch]), (H, W)) == patch
scattered = posenc.grid_encoding((H, W), 128, convention="moco-v3", cls_token=False)
assert np.unravel_index(np.argmax(scattered @ scattered[patch[0] * W + patch[1]]), (H, W)) == patch
assert not np.allclose(scattered @ scattered[4 * W + 7], mae @ mae[4 * W + 7], atol=0.1)

# %%
# Cross-checks of section 3: the groups. MAE identical; rt-detr and timm: MAE's columns reordered, same dot products;
# detr (defaults): other numbers, same dot products; moco-v3, big_vision, simple-vit, diffusers: other dot products.
assert comparison["mae"] == (0.0, True, True)
assert [n for n, c in comparison.items() if c[2]] == ["mae", "rt-detr", "timm", "detr"]
assert not comparison["detr"][1]
assert all(comparison[n][0] > 1.5 for n in ("moco-v3", "rt-detr", "timm", "detr", "diffusers"))
assert 0.1 < comparison["big_vision"][0] < 0.5  # one frequency step fewer: a drift, not a reordering
assert np.array_equal(tables["big_vision"], tables["simple-vit"])
# DETR as its model builds it (normalize=True) and MoCo v3's tokens: other dot products than MAE's.
detr = posenc.grid_encoding(shape, 64, convention="detr", normalize=True)
assert np.abs(detr @ detr.T - reference @ reference.T).max() > 1
assert identified["mae"].prefix_rows == 1 and identified["moco-v3"].prefix_rows == 1
assert "timm, interleave_sin_cos=True" in identified["rt-detr"].matches
assert "timm, reverse_coord=True, interleave_sin_cos=True" in identified["moco-v3"].matches

# %%
# Cross-checks of section 4: the resize loses the fast columns (more than 0.05), keeps the slowest (below 1e-3),
# is worst (0.17) on the border, keeps the class row; antialiasing changes the result by 0.05.
assert error.max() > 0.05 and error[..., 64 // 4 - 1].max() < 1e-3  # column 15: the slowest x sine at d = 64
assert round(float(error.max()), 2) == 0.17 and not inside[worst]
assert np.array_equal(resized[0], old_table[0].numpy())
assert stretched[0][0] == -0.25 and stretched[0][-1] > old[0] - 1
assert round(float(np.abs(resized - plain).max()), 2) == 0.05
# The two kernels: enlarging a single 1 twice, the weights are Keys' cubic at a = -0.75 (plain) and a = -0.5 (antialiased).
def keys(t, a):
    t = np.abs(t)
    return np.where(t <= 1, (a + 2) * t**3 - (a + 3) * t**2 + 1, np.where(t < 2, a * (t**3 - 5 * t**2 + 8 * t - 4), 0))
impulse = torch.zeros(1, 1, 1, 12)
impulse[..., 6] = 1
offsets = (np.arange(24) + 0.5) / 2 - 0.5 - 6
for antialias, a in [(False, -0.75), (True, -0.5)]:
    weights = nn.functional.interpolate(impulse, size=(1, 24), mode="bicubic", antialias=antialias)[0, 0, 0].numpy()
    assert np.allclose(weights, keys(offsets, a), atol=1e-6)

# %%
# Cross-checks of section 5 and of the exercises
# Section 5: the bounds are "nearly all" (at least 95 %) and "hardly any" (at most 10 %) of the patches.
assert scores["integer positions", "integers"][0] >= 0.95
assert found(answers(train_table, train_shape), integers) >= 0.95
assert scores["integer, down the columns", "integers"][0] <= 0.1
for name in ("resized (timm)", "exact at stretched positions"):
    assert max(scores[name, "integers"]) <= 0.1 and min(scores[name, "stretched"]) >= 0.95
# 16 x 24 at integer positions: the old block found, nothing beyond, no untrained row or column named.
assert hit[within].mean() >= 0.95 and hit[~within].mean() == 0
assert rows_16.max() < 8 and cols_16.max() < 12
assert distinct == 96  # each trained position names four new patches
# Walked down the columns, token k claims patch (k % 6, k // 6) of the 6 x 9 grid, and the model names that patch.
claimed = np.arange(54).reshape(6, 9)
walked_rows, walked_cols = answered["integer, down the columns", (6, 9)]
assert np.mean((walked_rows == claimed % 6) & (walked_cols == claimed // 6)) >= 0.95
# The exercises' reference solutions are MAE's table and the exact rescaled one of section 5.
assert np.allclose(nb09.mae_table_solution(6, 10, 64), posenc.grid_encoding((6, 10), 64, convention="mae"), atol=1e-6)
rescaled = nb09.rescaled_table_solution(train_shape, (16, 24), d)
assert np.allclose(rescaled, test_tables["exact at stretched positions"]((16, 24)).numpy(), atol=1e-6)
rescaled = torch.tensor(rescaled, dtype=torch.float32)
assert found(answers(rescaled, (16, 24)), stretch((16, 24))) == scores["exact at stretched positions", "stretched"][1]
