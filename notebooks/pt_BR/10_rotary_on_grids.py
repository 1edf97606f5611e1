# %% [markdown]
# # 10 · Embedding posicional rotativo em grades e em vídeo
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/posenc-org/posenc/blob/main/notebooks/pt_BR/10_rotary_on_grids.ipynb)
#
# O notebook 08 rotacionou queries e keys pelo lugar de um token numa sequência. Os patches
# de uma imagem têm uma linha e uma coluna; os quadros de um vídeo, também um tempo. Os
# modelos de visão e linguagem dão essas coordenadas ao RoPE de um jeito simples: cada par
# rotativo de canais lê *uma* coordenada. Este notebook segue essa ideia de uma grade de
# imagem até uma sequência que mistura texto, uma imagem e um vídeo, do jeito que três
# famílias de modelos a numeram; depois, até os modelos de difusão que desenham imagens e
# vídeos, e até duas outras maneiras de situar um patch: por onde ele fica na imagem, e por
# features de Fourier aleatórias.
#
# **Pergunta:** Como o RoPE dá posições aos patches de imagem e aos quadros de vídeo, e onde o texto que vem depois deles continua?
#
# **Você será capaz de:**
# - montar o RoPE 2-D para uma grade de patches de imagem e dizer como dois encoders de visão
#   escolhem as suas frequências;
# - escrever as três linhas de posição (tempo, altura, largura) que o RoPE multimodal dá a
#   uma sequência de texto, uma imagem e um vídeo, segundo cada uma das regras em uso;
# - dizer quais canais de uma cabeça giram com o tempo, a altura ou a largura;
# - carregar uma config do transformers no módulo rotativo do posenc e obter os próprios logits do modelo;
# - escrever os ids do Flux para um prompt e uma imagem, e dizer quais canais giram com qual eixo;
# - dizer como a divisão da cabeça num modelo de vídeo molda a similaridade ao longo do tempo,
#   da altura e da largura;
# - explicar por que coordenadas de pixel em [-1, 1] mantêm os ângulos de um lugar numa imagem
#   redimensionada, e o que as posições inteiras fazem em vez disso;
# - dizer o que as features de Fourier aleatórias do SAM fazem que uma tabela seno-cosseno não faz.
#
# **Pré-requisitos:** notebooks 08 e 09 · **Tempo:** cerca de 90 minutos

# %%
# On Colab, install posenc from GitHub; elsewhere `make lab` has already installed it.
import sys

if "google.colab" in sys.modules:
    # %pip install --quiet "posenc @ git+https://github.com/posenc-org/posenc@main"
    # configs with rope_parameters need transformers 5
    # %pip install --quiet "transformers>=5"

# %%
# %matplotlib inline
import time
import warnings

import matplotlib.pyplot as plt
import numpy as np
import torch

warnings.filterwarnings("ignore", message="IProgress not found")  # tqdm's, when transformers loads it
import transformers  # noqa: E402

import posenc  # noqa: E402
import posenc.torch  # noqa: E402
from posenc import rope  # noqa: E402
from posenc.sinusoidal import grid_encoding, patch_positions, random_fourier_features  # noqa: E402

torch.set_num_threads(1)
torch.manual_seed(0)
rng = np.random.default_rng(0)
started = time.perf_counter()

# %% [markdown]
# ## 1. RoPE 2-D: cada par lê a linha ou a coluna
#
# Um modelo de visão e linguagem lê uma imagem por meio de um *encoder de visão*: um ViT
# (Vision Transformer, [Dosovitskiy et al.](https://arxiv.org/abs/2010.11929)) que corta a
# imagem em patches (notebook 09) e aplica atenção sobre eles. Dois desses encoders
# rotacionam queries e keys pela linha $r$ e pela coluna $c$ de um patch: o do Pixtral
# (Mistral AI, [Pixtral 12B](https://arxiv.org/abs/2410.07073)) e o do Qwen2-VL
# ([Qwen2-VL](https://arxiv.org/abs/2409.12191); os seus sucessores
# [Qwen2.5-VL](https://arxiv.org/abs/2502.13923) e
# [Qwen3-VL](https://huggingface.co/docs/transformers/model_doc/qwen3_vl) o mantêm). Uma
# cabeça de $d$ canais tem $d/2$ pares rotativos (notebook 08); os dois encoders giram os
# primeiros $d/4$ pares pela linha e os outros $d/4$ pela coluna. Eles diferem nas
# frequências:
#
# - o Qwen2-VL dá a cada eixo as frequências de um RoPE de $d/2$ canais, $w_i = 10000^{-4i/d}$,
#   a mesma lista para as linhas e para as colunas;
# - o Pixtral pega as $d/2$ frequências do RoPE 1-D, $10000^{-2j/d}$, e as distribui:
#   os $j$ de índice par para a linha, os $j$ ímpares para a coluna.
#
# Assim, as linhas recebem as mesmas frequências nos dois, e só as colunas diferem.

# %%
d = 32
qwen = rope.axial_frequencies(d, convention="qwen2_vl")
pixtral = rope.axial_frequencies(d, convention="pixtral")
print("axis of each pair (0 row, 1 column):", qwen.axes)
print("row frequencies, both:       ", np.round(qwen.values[:4], 4), "...")
print("column frequencies, Qwen2-VL:", np.round(qwen.values[8:12], 4), "...")
print("column frequencies, Pixtral: ", np.round(pixtral.values[8:12], 4), "...")
assert np.array_equal(qwen.values[:8], pixtral.values[:8]), "rows: the same frequencies in both"

# %% [markdown]
# Cada frequência de coluna do Pixtral fica meio passo abaixo da do Qwen2-VL: um passo da
# lista das linhas é um fator $10000^{-4/d}$, e os $j$ ímpares do Pixtral ficam um fator
# $10000^{-2/d}$ ($= 0.5623$ em $d = 32$) mais abaixo. Juntas, as linhas e as colunas do
# Pixtral cobrem uma vez as frequências do RoPE 1-D; as do Qwen2-VL cobrem metade delas duas
# vezes.

# %%
ratio = pixtral.values[8:] / qwen.values[8:]
print(f"Pixtral / Qwen2-VL, columns: {ratio.min():.4f} to {ratio.max():.4f}; 10000^(-2/d) = {10000 ** (-2 / d):.4f}")
np.testing.assert_allclose(ratio, 10000 ** (-2 / d), rtol=1e-14)  # float64 round-off

# %% [markdown]
# Uma grade de 6 x 8 patches, achatada linha por linha (a ordem do Pixtral);
# `grid_position_ids` dá a cada token a sua (linha, coluna). Com o cos e o sin desses
# ângulos (frequências do Qwen2-VL), rotacionamos um vetor de query e um vetor de key
# aleatórios em cada patch e calculamos todos os seus produtos escalares.

# %%
height, width = 6, 8
ids = rope.grid_position_ids(height, width)  # (2, 48): rows, columns
cos, sin = rope.axial_cos_sin(ids, d, dtype=np.float64)
q, k = rng.standard_normal((2, d))
queries = posenc.apply_rotary(np.broadcast_to(q, cos.shape), cos, sin)
keys = posenc.apply_rotary(np.broadcast_to(k, cos.shape), cos, sin)
scores = queries @ keys.T  # (48, 48): query patch against key patch
print("positions of tokens 0, 1, 8:", ids[:, [0, 1, 8]].T.tolist())
print("scores:", scores.shape, f"largest |score| {np.abs(scores).max():.1f}")

# %% [markdown]
# **A pontuação depende só do deslocamento 2-D.** Todos os pares de patches com o mesmo
# (deslocamento de linha, deslocamento de coluna) têm a mesma pontuação, a menos do
# arredondamento em float64: a variação dentro de um mesmo deslocamento fica abaixo de
# $10^{-12}$, enquanto as próprias pontuações chegam a 5.2 (acima).

# %%
offsets = ids[:, :, None] - ids[:, None, :]  # (2, 48, 48): key minus query, rows and columns
spread = max(
    np.ptp(scores.T[(offsets[0] == dr) & (offsets[1] == dc)])
    for dr in range(-height + 1, height) for dc in range(-width + 1, width)
)
print("largest spread of the scores within one offset below 1e-12:", spread < 1e-12)
assert spread < 1e-12

# %% [markdown]
# É um deslocamento, não uma distância: uma linha para baixo e duas colunas para a esquerda
# dá uma pontuação diferente de duas linhas para baixo e uma coluna para a esquerda, embora
# os dois estejam igualmente afastados.

# %%
down_left = scores.T[(offsets[0] == 1) & (offsets[1] == -2)][0]
left_down = scores.T[(offsets[0] == 2) & (offsets[1] == -1)][0]
print(f"offset (1, -2): {down_left:.3f}   offset (2, -1): {left_down:.3f}")
assert abs(down_left - left_down) > 0.1, "two offsets of one length, two scores"

# %% [markdown]
# Em imagens: a pontuação de um patch de query (a estrela) contra cada patch de key. As duas
# primeiras usam os q e k aleatórios para dois patches de query; a segunda imagem é a
# primeira transladada pelo deslocamento entre os dois patches. Não há pico no patch de query:
# o RoPE faz da pontuação uma função do deslocamento, e nada nela faz patches próximos
# pontuarem mais. A terceira usa q = k: aí a pontuação no deslocamento zero é $|q|^2$, e
# nenhum deslocamento pontua mais, porque uma rotação preserva comprimentos
# ($q \cdot Rq \le |q|\,|Rq| = |q|^2$). Esse pico vem da escolha q = k, não do RoPE, e é
# raso: os pares lentos quase não giram ao longo de 8 colunas, então todo patch ainda
# pontua pelo menos 81% do pico. Um modelo treinado aprende queries e keys que fazem patches
# próximos pontuarem alto, ou não.

# %%
first, second = 2 * width + 2, 3 * width + 5  # patches (2, 2) and (3, 5)
same = posenc.apply_rotary(np.broadcast_to(q, cos.shape), cos, sin)
self_scores = same @ same.T  # q = k
maps = [scores[first], scores[second], self_scores[second]]
peak = np.unravel_index(np.argmax(maps[2]), (height, width))
print("q = k: the highest score of query patch (3, 5) is at key patch", tuple(int(i) for i in peak))
print(f"q = k: the lowest score on the grid is {maps[2].min() / maps[2].max():.0%} of the peak")
assert maps[2].argmax() == second, "with q = k, the query's own patch scores highest"

# %%
fig, axs = plt.subplots(1, 3, figsize=(12, 2.8), constrained_layout=True)
titles = ["random q, k: query (2, 2)", "random q, k: query (3, 5)", "q = k: query (3, 5)"]
top = np.abs(maps[0]).max()  # one colour scale for the random q, k; q = k gets its own range
scales = [(-top, top, "RdBu_r"), (-top, top, "RdBu_r"), (maps[2].min(), maps[2].max(), "Reds")]
for ax, picture, p, title, (low, high, cmap) in zip(axs, maps, (first, second, second), titles, scales):
    image = ax.imshow(picture.reshape(height, width), cmap=cmap, vmin=low, vmax=high)
    ax.plot(ids[1, p], ids[0, p], "k*", markersize=12)
    ax.set(title=title, xlabel="key column", ylabel="key row")
    fig.colorbar(image, ax=ax, shrink=0.8)
plt.show()

# %% [markdown]
# ## 2. M-RoPE: três linhas de posição para texto, imagens e vídeo
#
# No Qwen2-VL, o modelo de linguagem lê tokens de texto e tokens de visão numa só sequência.
# O seu RoPE multimodal, **M-RoPE** (seção 2.1 do [artigo do Qwen2-VL](https://arxiv.org/abs/2409.12191)),
# dá a cada token três posições, tempo, altura e largura, e cada par rotativo de uma cabeça
# lê uma delas (qual: seção 3). Dois números da config do encoder de visão determinam os
# tokens de visão ([a página do Qwen2-VL no transformers](https://huggingface.co/docs/transformers/model_doc/qwen2_vl)):
#
# - `spatial_merge_size`: depois do encoder, um módulo de fusão (merger) junta cada bloco
#   2 x 2 de patches vizinhos num só token para o modelo de linguagem; uma imagem de
#   4 x 6 patches vira 2 x 3 tokens;
# - `temporal_patch_size`: um patch de vídeo tem 2 quadros de profundidade, então 6 quadros
#   de vídeo formam 3 *patches temporais*. A grade de uma entrada visual, `grid_thw`, conta
#   patches temporais, linhas e colunas de patches.

# %%
vision = transformers.Qwen2VLConfig().vision_config
print("spatial_merge_size:", vision.spatial_merge_size, "  temporal_patch_size:", vision.temporal_patch_size)

# %% [markdown]
# A numeração, como o `get_rope_index` do transformers 5.23 fixado no projeto a faz: os
# tokens de texto recebem o mesmo número nas três linhas, continuando a contagem a partir do
# token anterior, então, no texto, o M-RoPE é o RoPE 1-D. Uma entrada visual que começa na
# posição $s$ recebe tempo $s + \text{frame}$, altura $s + \text{row}$ e largura
# $s + \text{column}$ da sua grade fundida.
#
# Uma sequência: 4 tokens de texto, uma imagem de 4 x 6 patches, 3 tokens de texto, um vídeo
# de 6 quadros (3 patches temporais) de 4 x 4 patches, 3 tokens de texto.
# `mrope_position_ids` recebe o texto como uma contagem de tokens e uma entrada visual como o
# seu `grid_thw`.

# %%
segments = [4, (1, 4, 6), 3, (3, 4, 4), 3]
rows = rope.mrope_position_ids(segments, spatial_merge_size=2)
print("shape:", rows.shape)
print(rows)

# %% [markdown]
# A imagem ocupa os tokens 4 a 9, 2 x 3 tokens fundidos. Todos têm o tempo 4; as suas alturas
# e larguras contam linhas e colunas a partir de 4. O texto depois da imagem não continua
# depois dos 6 tokens da imagem: ele começa uma posição além da maior posição da imagem,
# $4 + \max(2, 3) = 7$.

# %%
image, video = slice(4, 10), slice(13, 25)
print("image (time, height, width):", rows[:, image].tolist())
print("text after the image starts at", rows[0, 10])
assert rows[0, 10] == 4 + max(2, 3)

# %% [markdown]
# O vídeo ocupa os tokens 13 a 24: 3 patches temporais de 2 x 2 tokens, tempos 10, 11, 12.
# O transformers 5.23 começa o texto depois dele em $10 + \max(2, 2) = 12$, o início mais o
# lado fundido mais longo, qualquer que seja o número de quadros: assim, o primeiro token de
# texto tem o mesmo tempo 12 que o último patch temporal do vídeo.

# %%
print("video times:", sorted(set(rows[0, video].tolist())), "  text after the video:", rows[0, 25:].tolist())
assert rows[0, 25] == 10 + max(2, 2)

# %% [markdown]
# Essa é a regra do 5.x. O código com que o Qwen2-VL foi lançado (transformers 4.x,
# [`Qwen2VLModel.get_rope_index`](https://github.com/huggingface/transformers/blob/v4.45.0/src/transformers/models/qwen2_vl/modeling_qwen2_vl.py))
# começa o texto uma posição além do maior id do bloco em qualquer linha:
# $\max(12, 11, 11) + 1 = 13$. O exemplo da sua docstring, um vídeo de 3 patches temporais de
# 2 x 2 tokens seguido de texto, põe o texto em 3, 4, 5, ...; a regra do 5.x dá 2, 3, 4. As
# duas regras concordam para imagens e para vídeos com no máximo tantos patches temporais
# quanto o lado fundido mais longo. A issue
# [#45381](https://github.com/huggingface/transformers/issues/45381) mostra o transformers 5.2
# ainda começando o texto depois de um vídeo do Qwen2.5-VL uma posição além do maior id do
# vídeo, e relata os ids do 5.3 em diante como errados. O posenc segue por padrão o 5.23
# fixado no projeto e dá a regra do 4.x com `text_resumes="after_largest"`
# (`tests/rope/test_axial_models.py` confere a primeira contra o `get_rope_index`
# instalado, e a segunda contra aquele exemplo da docstring).

# %%
reference = rope.mrope_position_ids(segments, text_resumes="after_largest")
print("text after the video, 5.23:", rows[0, 25:].tolist(), "  4.x:", reference[0, 25:].tolist())
print("tokens whose ids differ:", np.flatnonzero((rows != reference).any(axis=0)).tolist())
example = [(3, 2, 2), 5]  # the 4.x docstring's video, already merged (spatial_merge_size 1), then 5 text tokens
for rule in ("after_largest", "longer_side"):
    example_rows = rope.mrope_position_ids(example, spatial_merge_size=1, text_resumes=rule)
    print(f"docstring example, {rule}: text at", example_rows[0, 12:].tolist())
assert (rows[:, :25] == reference[:, :25]).all(), "up to the video's end the two rules agree"

# %% [markdown]
# As três linhas da numeração do 5.23 ao longo da sequência: o texto corre numa só linha, e a
# imagem e o vídeo a dividem em tempo, altura e largura. A linha pontilhada é onde a regra do
# 4.x põe o texto depois do vídeo.

# %%
fig, ax = plt.subplots(figsize=(9, 3), constrained_layout=True)
for row, name, marker in zip(rows, ["time", "height", "width"], "os^"):
    ax.plot(row, marker, linestyle="-", label=name, alpha=0.8)
for start, stop, kind in [(4, 10, "image"), (13, 25, "video")]:
    ax.axvspan(start - 0.5, stop - 0.5, color="0.9")
    ax.text((start + stop - 1) / 2, rows.max() + 0.3, kind, ha="center")
ax.plot(range(25, 28), reference[0, 25:], "k:", marker="x", label="text, 4.x rule")
ax.set(xlabel="token", ylabel="position id", ylim=(-0.5, rows.max() + 2.5),
       title="M-RoPE position ids (transformers 5.23): text, image, text, video, text")
ax.legend(loc="lower right")
plt.show()

# %% [markdown]
# O **Qwen2.5-VL** ([relatório técnico](https://arxiv.org/abs/2502.13923)) liga a linha do
# tempo a segundos: o patch temporal $k$ de um vídeo recebe o tempo
# $s + \lfloor k \cdot \texttt{tokens\_per\_second} \cdot \texttt{second\_per\_grid\_t} \rfloor$,
# em que `second_per_grid_t` $=$ `temporal_patch_size / fps` é quantos segundos um patch
# temporal abrange e `tokens_per_second` é um valor da config de visão (as imagens não são
# espaçadas). Com o padrão da classe de config e quadros amostrados a 2 por segundo, um patch
# temporal dura 1 s e os tempos avançam em passos de `tokens_per_second`:

# %%
vision_2_5 = transformers.Qwen2_5_VLConfig().vision_config
per_second = vision_2_5.tokens_per_second
interval = per_second * vision_2_5.temporal_patch_size / 2  # second_per_grid_t at fps = 2
spaced = rope.mrope_position_ids(segments, time_interval=interval)
spaced_reference = rope.mrope_position_ids(segments, time_interval=interval, text_resumes="after_largest")
print(f"tokens_per_second {per_second}, time interval {interval:g}")
print("video times:", sorted(set(spaced[0, video].tolist())))
print("text after the video, 5.23:", spaced[0, 25:].tolist(), "  4.x:", spaced_reference[0, 25:].tolist())
assert spaced[0, 25] == 12, "5.23: the start plus the longer side, whatever the times"

# %% [markdown]
# Pela regra do 5.23, o texto agora começa no meio do intervalo de tempo do vídeo (12,
# enquanto os quadros vão até 18); pela regra do 4.x, depois dele (19).
#
# O **Qwen3-VL** ([a página do Qwen3-VL no transformers](https://huggingface.co/docs/transformers/model_doc/qwen3_vl))
# deixa de contar quadros na linha do tempo. O seu processador escreve cada patch temporal
# como uma grade própria, depois de um carimbo de tempo em texto como `<1.0 seconds>` e entre
# marcadores de início e fim de visão; o `get_rope_index` divide o `grid_thw` do vídeo em uma
# grade por patch temporal. Para o M-RoPE, cada quadro é então uma imagem, e o tempo está nas
# palavras. Aqui, 5 tokens de texto representam um carimbo de tempo e os marcadores (quantos
# são depende do tokenizador).

# %%
stamp = 5
per_frame = [4, (1, 4, 6), 3, stamp, (1, 4, 4), stamp, (1, 4, 4), stamp, (1, 4, 4), 3]
qwen3 = rope.mrope_position_ids(per_frame)
print("Qwen3-VL time row:", qwen3[0].tolist())
assert (qwen3 == rope.mrope_position_ids(per_frame, text_resumes="after_largest")).all(), "one rule when frames come alone"

# %% [markdown]
# ## 3. Qual par lê qual linha: `mrope_section`
#
# Os `rope_parameters` da config de texto contêm `mrope_section`, o número de pares
# rotativos por eixo (tempo, altura, largura). O Qwen2-VL pega os pares em seções
# consecutivas; o padrão do transformers é [16, 24, 24] para uma cabeça de 128 canais
# (64 pares). O Qwen3-VL os *intercala* (tempo, altura, largura, tempo, ...), com padrão
# [24, 20, 20]. No layout em metades do notebook 08, o canal $c$ e o canal $c + d/2$ formam
# o par $c$.

# %%
from transformers.models.qwen2_vl.modeling_qwen2_vl import Qwen2VLRotaryEmbedding  # noqa: E402
from transformers.models.qwen3_vl.modeling_qwen3_vl import Qwen3VLTextRotaryEmbedding  # noqa: E402

qwen2_section = Qwen2VLRotaryEmbedding(transformers.Qwen2VLConfig().text_config).mrope_section
qwen3_section = Qwen3VLTextRotaryEmbedding(transformers.Qwen3VLConfig().text_config).mrope_section
print("default mrope_section, Qwen2-VL:", qwen2_section, "  Qwen3-VL:", qwen3_section)
print("Qwen2-VL, first 20 pairs:", rope.mrope_axes(qwen2_section)[:20])
print("Qwen3-VL, first 20 pairs:", rope.mrope_axes(qwen3_section, interleaved=True)[:20])

# %% [markdown]
# Por que intercalar: a frequência do par $j$ cai com $j$, então seções consecutivas dão ao
# tempo só as frequências mais rápidas e à largura só as mais lentas. Com base $10^6$ (o
# `rope_theta` padrão do Qwen2-VL), o par mais rápido da largura gira menos de 0.006 rad de
# uma ponta à outra de uma imagem de 32 tokens de largura. Intercalados, todos os eixos
# cobrem quase toda a faixa.

# %%
theta = transformers.Qwen2VLConfig().text_config.rope_parameters["rope_theta"]
print(f"Qwen2-VL's rope_theta: {theta:g}")
w = posenc.rotary_frequencies(128, base=theta)[0]
for name, pair_axes in [("sections [16, 24, 24]", rope.mrope_axes(qwen2_section)),
                        ("interleaved [24, 20, 20]", rope.mrope_axes(qwen3_section, interleaved=True))]:
    spans = ", ".join(f"{axis} {w[pair_axes == a].max():.1e}..{w[pair_axes == a].min():.1e}"
                      for a, axis in enumerate(["time", "height", "width"]))
    print(f"{name:25s} {spans}")
widest_turn = 31 * w[rope.mrope_axes(qwen2_section) == 2].max()
print(f"sections: the width's fastest pair over 32 columns turns by {widest_turn:.4f} rad")
assert widest_turn < 0.006

# %% [markdown]
# No texto, as três linhas são iguais; então, não importa qual par lê qual
# linha: o M-RoPE *é* o RoPE 1-D ali, nas duas ordens (uma cabeça de 32 canais: seções
# [4, 6, 6], intercalado [6, 5, 5]).

# %%
text = np.r_[0:4, 10:13, 25:28]
same_as_1d = []
for section, flag in [([4, 6, 6], False), ([6, 5, 5], True)]:
    m_cos, m_sin = rope.mrope_cos_sin(rows[:, text], d, mrope_section=section, interleaved=flag)
    cos_1d, sin_1d = posenc.rotary_cos_sin(rows[0, text], d)
    same_as_1d.append(np.array_equal(m_cos, cos_1d) and np.array_equal(m_sin, sin_1d))
print("text tokens: M-RoPE equals 1-D RoPE (sections, interleaved):", same_as_1d)
assert all(same_as_1d)

# %% [markdown]
# ## 4. `from_config`: o módulo rotativo do posenc a partir de uma config da Hugging Face
#
# `posenc.torch.RotaryEmbedding.from_config(config)` lê uma config do transformers: os
# `rope_parameters` inteiros (o tipo de rope, a base e as chaves do tipo; uma chave
# desconhecida é um erro que a nomeia), o tamanho da cabeça e o agrupamento em pares da
# família. Aqui, um Qwen2-VL minúsculo com pesos aleatórios, alimentado com as linhas de
# posição da seção 2; trocamos o seu módulo rotativo pelo do posenc.

# %%
config = transformers.Qwen2VLConfig(
    text_config={"hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 2, "num_key_value_heads": 1,
                 "head_dim": d, "intermediate_size": 96, "vocab_size": 101, "bos_token_id": 0, "eos_token_id": 1,
                 "rope_parameters": {"rope_type": "default", "rope_theta": 1e6, "mrope_section": [4, 6, 6]}},
    vision_config={"depth": 1, "embed_dim": 32, "hidden_size": 64, "num_heads": 2},
    bos_token_id=0, eos_token_id=1,
)
model = transformers.Qwen2VLForConditionalGeneration(config).eval()
ours = posenc.torch.RotaryEmbedding.from_config(config.text_config)
print(ours)

# %% [markdown]
# Os logits do modelo com o seu próprio módulo rotativo e com o do posenc concordam a menos
# do arredondamento em float32: admitimos $2 \cdot 10^{-6}$ do maior logit, cerca de 16
# épsilons de float32 ($2^{-23} \approx 1.2 \cdot 10^{-7}$), para duas camadas de somas em
# float32. Nessas posições pequenas, os ângulos em float32 do transformers são tão bons
# quanto os do posenc.

# %%
input_ids = torch.randint(1, 101, (1, rows.shape[1]))
position_ids = torch.from_numpy(rows)[:, None]  # (3, batch 1, 28)
with torch.no_grad():
    theirs_logits = model(input_ids=input_ids, position_ids=position_ids).logits
    model.model.language_model.rotary_emb = ours
    ours_logits = model(input_ids=input_ids, position_ids=position_ids).logits
difference = (ours_logits - theirs_logits).abs().max().item()
size = theirs_logits.abs().max().item()
print(f"largest logit {size:.2f}; the logits differ by less than 2e-6 of it: {difference < 2e-6 * size}")
assert difference < 2e-6 * size

# %% [markdown]
# `tests/rope/test_configs.py` faz o mesmo para quinze famílias (Llama, Mistral, Qwen2,
# Qwen3, Gemma 3, Phi-3, GPT-NeoX, GPT-J, Cohere, DeepSeek-V3, GPT-OSS, Llama 4, Qwen2-VL,
# Qwen2.5-VL e Qwen3-VL).

# %% [markdown]
# ## 5. Flux: um só conjunto de ids para um prompt e uma imagem
#
# Os transformers de difusão que desenham uma imagem a partir de um prompt põem os tokens de
# texto do prompt e os tokens da imagem numa só atenção, e dão ao RoPE a posição de cada
# token como *ids*, uma coordenada por eixo, com um bloco da cabeça para cada eixo. O Flux
# (Black Forest Labs; o `FluxTransformer2DModel` do diffusers) dá a cada token três ids e
# divide as suas cabeças de 128 canais como `axes_dim = (16, 56, 56)`: 16 canais para o
# eixo 0, 56 para a altura, 56 para a largura. Cada bloco gira nas frequências de um RoPE
# 1-D da sua própria largura, $w_i = 10000^{-2i/\text{axes\_dim}[a]}$ (o
# `get_1d_rotary_pos_embed` do diffusers, uma vez por eixo); `per_axis_frequencies` as
# lista, com o eixo de cada par.

# %%
flux_dims = (16, 56, 56)
flux = rope.per_axis_frequencies(flux_dims)
print("pairs per axis:", np.bincount(flux.axes).tolist())
print("height's first frequencies:", np.round(flux.values[8:11], 4), "  10000^(-2i/56):", np.round(10000.0 ** (-2 * np.arange(3) / 56), 4))
np.testing.assert_allclose(flux.values[8:36], 10000.0 ** (-2 * np.arange(28) / 56), rtol=1e-15)

# %% [markdown]
# O pipeline numera os tokens: cada token de texto recebe os ids (0, 0, 0) (os seus
# `text_ids` são zeros), e o token da imagem na linha $r$ e coluna $c$ da grade de latentes
# empacotados (um token a cada 16 x 16 pixels) recebe (0, r, c). Os ids vêm com o eixo por
# último, `(tokens, 3)`, o texto primeiro, como o transformer os junta; `flux_position_ids`
# os escreve. Um prompt de 4 tokens e uma imagem de 6 x 8 tokens:

# %%
prompt, image_rows, image_columns = 4, 6, 8
token_ids = rope.flux_position_ids(prompt, image_rows, image_columns)
print("ids:", token_ids.shape, "  tokens 0 and 3 (text), 4, 5 and 12 (image):", token_ids[[0, 3, 4, 5, 12]].tolist())

# %% [markdown]
# No layout intercalado, o par $j$ são os canais $2j$ e $2j + 1$, então os canais 0-15
# giram com o eixo 0, os 16-71 com a altura e os 72-127 com a largura. No texto-para-imagem
# do Flux, o eixo 0 de todo token é 0: esses 16 canais nunca giram, e um oitavo de cada
# cabeça não carrega posição nenhuma. (O Flux.1 Kontext dá 1 ali aos tokens da sua imagem
# de referência, para distingui-los da imagem que ele desenha.)

# %%
flux_cos, flux_sin = rope.per_axis_cos_sin(token_ids, flux_dims, dtype=np.float64)
channel_axis = np.repeat(flux.axes, 2)  # interleaved: pair j is channels 2j and 2j + 1
turns = (flux_cos != 1).any(axis=0)  # a channel that turns at some token
for axis, name in enumerate(["axis 0", "height", "width"]):
    block = np.flatnonzero(channel_axis == axis)
    print(f"{name:6s}: channels {block[0]:3d} to {block[-1]:3d}, {turns[block].sum():2d} of them turn")
assert not turns[channel_axis == 0].any()

# %% [markdown]
# **Os tokens de texto ficam no canto superior esquerdo da imagem.** Todos os seus ids são
# zero, então o RoPE não os gira (cos 1, sin 0), nem o token de imagem (0, 0, 0). Assim, uma
# query de texto pontua cada key da imagem como pontuaria uma query com o mesmo vetor no
# patch do canto superior esquerdo, e os tokens de texto pontuam uns aos outros $q \cdot k$,
# qualquer que seja a sua ordem no prompt (a ordem está no que o encoder de texto T5
# escreveu neles).

# %%
fq, fk = rng.standard_normal((2, 128))
flux_q = posenc.apply_rotary(np.broadcast_to(fq, flux_cos.shape), flux_cos, flux_sin, layout="interleaved")
flux_k = posenc.apply_rotary(np.broadcast_to(fk, flux_cos.shape), flux_cos, flux_sin, layout="interleaved")
flux_scores = flux_q @ flux_k.T  # (52, 52): query token against key token
corner = np.abs(flux_scores[:prompt, prompt:] - flux_scores[prompt, prompt:]).max()
print("text queries score the image as the top-left patch's query (to 1e-12):", corner < 1e-12)
print(f"text against text: q . k = {fq @ fk:.3f}, spread {np.ptp(flux_scores[:prompt, :prompt]):.0e}")
assert corner < 1e-12

# %% [markdown]
# Para ver quão perto dois tokens estão para o RoPE sem escolher q e k, tome a sua
# **similaridade**: a média, sobre os pares, de $\cos(\theta_j^{\text{key}} - \theta_j^{\text{query}})$,
# que vale 1 onde todos os pares concordam. É a pontuação de $q = k = (1, 1, \dots, 1)$
# dividida por $d$ (um par (1, 1) pontua o dobro do cosseno da sua diferença de ângulo) e,
# a partir das tabelas, `(cos @ cos[i] + sin @ sin[i]) / d`.

# %%
def similarity(cos, sin, query):
    """Mean over pairs of cos(angle of each token - angle of token `query`), from RoPE's cos and sin tables."""
    return (cos @ cos[query] + sin @ sin[query]) / cos.shape[-1]


ones = posenc.apply_rotary(np.ones(flux_cos.shape), flux_cos, flux_sin, layout="interleaved")
text_similarity = similarity(flux_cos, flux_sin, 0)  # of text token 0 to every token
print("text token 0 to image tokens (0, 0), (0, 1), (1, 0), (5, 7):", np.round(text_similarity[[4, 5, 12, 51]], 3))
np.testing.assert_allclose(text_similarity, ones @ ones[0] / 128, atol=1e-12)

# %% [markdown]
# Numa imagem: à esquerda, os cossenos de cada token (linhas) em cada canal (colunas). As
# linhas do texto e o bloco do eixo 0 são todos 1; o bloco da altura muda de uma linha da
# imagem para a seguinte (a cada 8 tokens), o da largura ao longo de cada linha. À direita,
# a similaridade de um token de texto com cada token da imagem, na grade da imagem: a vista
# a partir do patch do canto superior esquerdo.

# %%
fig, (left, right) = plt.subplots(1, 2, figsize=(12, 3.6), width_ratios=[1.6, 1], constrained_layout=True)
left.imshow(flux_cos, cmap="RdBu_r", vmin=-1, vmax=1, aspect="auto", interpolation="nearest")
for edge in (16, 72):
    left.axvline(edge - 0.5, color="k")
left.axhline(prompt - 0.5, color="k", linestyle="--")
left.set(title="Flux: cos of each token's angles (axis 0 | height | width)", xlabel="channel",
         ylabel="token: 4 text, then 6 x 8 image")
seen = right.imshow(text_similarity[prompt:].reshape(image_rows, image_columns), cmap="Reds")
right.plot(0, 0, "k*", markersize=12)
right.set(title="similarity of a text token to the image", xlabel="image column", ylabel="image row")
fig.colorbar(seen, ax=right, shrink=0.8)
plt.show()

# %% [markdown]
# ## 6. Vídeo: tempo, altura e largura, cada um com a sua parte da cabeça
#
# Os transformers de difusão de vídeo numeram um token pelo seu (quadro, linha, coluna) no
# vídeo latente e dividem a cabeça entre os três eixos como o Flux faz. O HunyuanVideo (o
# `HunyuanVideoRotaryPosEmbed` do diffusers) usa a divisão do Flux (16, 56, 56) com base
# 256; o Wan (`WanRotaryPosEmbed`) dá à altura e à largura $2\lfloor d/6 \rfloor$ canais
# cada e o resto ao tempo, com base 10000. Um vídeo do Wan de 81 quadros a 480 x 832 pixels
# tem 21 x 30 x 52 tokens: o seu VAE transforma 4 quadros (depois do primeiro) num quadro
# latente e 8 x 8 pixels num pixel latente, e os patches do transformer são de 2 x 2 pixels
# latentes.

# %%
wan_dims = (128 - 4 * (128 // 6), 2 * (128 // 6), 2 * (128 // 6))
video_splits = {"Wan": (wan_dims, 10000.0), "HunyuanVideo": ((16, 56, 56), 256.0)}
video_shape = (1 + (81 - 1) // 4, 480 // 8 // 2, 832 // 8 // 2)  # (frames, rows, columns) of tokens
video_ids = patch_positions(video_shape).T  # (tokens, 3): (t, y, x), frame outermost, then row by row
print("Wan's axes_dim at d = 128:", wan_dims, "  video tokens:", video_shape, "->", video_ids.shape)
assert (wan_dims, video_shape) == ((44, 42, 42), (21, 30, 52))

# %% [markdown]
# A similaridade de uma query no meio do vídeo, em (t, y, x) = (10, 15, 26), com cada key,
# sob cada divisão; depois os seus valores nas três retas que passam pela query (duas
# coordenadas fixas). Ela depende só do deslocamento, então qualquer query mostra o mesmo.

# %%
query = (10, 15, 26)
along = {}  # model -> the similarity along time, height and width through the query
for name, (dims, base) in video_splits.items():
    video_cos, video_sin = rope.per_axis_cos_sin(video_ids, dims, base=base)
    volume = similarity(video_cos, video_sin, np.ravel_multi_index(query, video_shape)).reshape(video_shape)
    along[name] = [volume[:, 15, 26], volume[10, :, 26], volume[10, 15, :]]
    print(f"{name:12s} one step away in time, height, width:", [round(float(line[i + 1]), 3) for line, i in zip(along[name], query)])

# %% [markdown]
# A divisão do Wan é quase igual, e um passo custa mais ou menos a mesma similaridade ao
# longo de cada eixo. O tempo do HunyuanVideo tem só 8 dos 64 pares: um quadro de distância
# é mais similar do que uma linha de distância e, por mais longe que se vá no tempo, os
# outros 56 pares (cada um com $\cos 0 = 1$) mantêm a similaridade em
# $1 - 2 \cdot 16/128 = 0.75$ ou acima. Nestes 21 quadros ela fica acima de 0.9, enquanto
# ao longo da largura cai abaixo de 0.7.

# %%
hunyuan_time, _, hunyuan_width = along["HunyuanVideo"]
floor = 1 - 2 * 16 / 128
print(f"HunyuanVideo: lowest along time {hunyuan_time.min():.3f} (floor {floor}), along the width {hunyuan_width.min():.3f}")
assert floor <= 0.9 < hunyuan_time.min() and hunyuan_width.min() < 0.7

# %% [markdown]
# As três retas que passam pela query, para cada divisão (a altura e a largura têm a mesma
# parte da cabeça, então as suas curvas ficam uma sobre a outra):

# %%
fig, axs = plt.subplots(1, 2, figsize=(11, 3.2), sharey=True, constrained_layout=True)
for ax, (name, lines) in zip(axs, along.items()):
    for line, at, axis, channels, style in zip(lines, query, ["time", "height", "width"], video_splits[name][0], "-:-"):
        on_top = 3 if axis == "height" else 2  # the dotted height over the width it equals
        ax.plot(np.arange(len(line)) - at, line, style, marker=".", zorder=on_top, label=f"{axis} ({channels} channels)")
    ax.set(title=f"{name}: similarity to a query at (10, 15, 26)", xlabel="offset from the query (tokens)")
    ax.legend()
axs[0].set_ylabel("similarity")
plt.show()

# %% [markdown]
# ## 7. Frequências de pixel contra frequências inteiras numa imagem redimensionada
#
# Até aqui, a posição de um patch era o seu índice: o patch 5 está em 5. Muitos modelos de
# visão situam um patch por *onde* ele fica na imagem. Ao longo de um eixo de $n$ patches, o
# patch $k$ fica em $-1 + 2k/(n-1)$: o primeiro em -1, o último em 1, igualmente espaçados
# entre eles (`patch_positions(shape, normalize="pixel")`; `linspace(-1, 1, n)` no
# `RotaryEmbedding` do timm, no `freqs_for="pixel"` do rotary-embedding-torch e nas features
# de Fourier do Perceiver). As suas frequências são espaçadas linearmente até a frequência de
# Nyquist de uma imagem de `max_freq` pixels (uma volta a cada dois pixels),
# $w_j = \pi \cdot \text{linspace}(1, \text{max\_freq}/2, \text{count})$ radianos por
# unidade de coordenada, `count` pares por eixo (`pixel_frequencies`; o padrão do timm
# espaça a mesma faixa de forma logarítmica).

# %%
pixel = rope.pixel_frequencies(32, max_freq=224)
print("pairs per axis:", np.bincount(pixel.axes).tolist(), "  frequencies / pi:", np.round(pixel.values[:8] / np.pi, 2))
np.testing.assert_allclose(pixel.values[:8], np.pi * np.linspace(1, 224 / 2, 8), rtol=1e-15)

# %% [markdown]
# Uma imagem vista como 8 x 8 patches no treino, e como 15 x 15 num tamanho maior. Com
# coordenadas de pixel, o patch $2k$ da grade maior fica onde ficava o patch $k$ da menor,
# ambos em $-1 + 2k/7$, e tem os mesmos ângulos. Com posições inteiras (o RoPE 2-D
# `qwen2_vl` da seção 1), esse patch está em $2k$ em vez de $k$, e os seus ângulos dobram.

# %%
pixel_cs = {n: rope.pixel_cos_sin(patch_positions((n, n), normalize="pixel"), 32, dtype=np.float64) for n in (8, 15)}
integer_cs = {n: rope.axial_cos_sin(patch_positions((n, n)), 32, dtype=np.float64) for n in (8, 15)}
same_place = (2 * np.arange(8)[:, None] * 15 + 2 * np.arange(8)).ravel()  # patch (2r, 2c) of the 15 x 15 grid
kept = [np.array_equal(tables[15][0][same_place], tables[8][0]) for tables in (pixel_cs, integer_cs)]
print("same place, same cos and sin: pixel coordinates", kept[0], "  integer positions", kept[1])
assert all(np.array_equal(big, small) for big, small in zip((t[same_place] for t in pixel_cs[15]), pixel_cs[8]))

# %% [markdown]
# A imagem: o cosseno do par 0 (ele gira com a linha) em cada patch da primeira coluna, em
# função do lugar do patch na imagem, do primeiro patch (0) ao último (1). Com coordenadas
# de pixel, os pontos da grade 15 x 15 caem sobre a onda da grade 8 x 8 e a preenchem; com
# posições inteiras, a sua onda corre duas vezes mais rápido.

# %%
fig, axs = plt.subplots(1, 2, figsize=(11, 3), sharey=True, constrained_layout=True)
for ax, tables, title in zip(axs, (pixel_cs, integer_cs), ("pixel coordinates in [-1, 1]", "integer positions")):
    for n, marker in ((8, "o"), (15, ".")):
        ax.plot(np.arange(n) / (n - 1), tables[n][0][::n, 0], marker=marker, label=f"{n} x {n} patches")
    ax.set(title=title, xlabel="place along the image (first patch 0, last 1)")
    ax.legend()
axs[0].set_ylabel("cos of pair 0 (rows)")
plt.show()

# %% [markdown]
# O que cada um mantém: as coordenadas de pixel mantêm os lugares e aproximam os vizinhos,
# a $2/14$ de unidade em vez de $2/7$, então cada par gira metade do ângulo de um patch para
# o seguinte, e os pares rápidos veem detalhes mais finos do que no treino. As posições
# inteiras mantêm esse passo (o par 0 gira 1 rad de um patch para o seguinte, como no
# treino) e mudam os lugares: os patches 8 a 14 recebem posições que o modelo nunca viu em
# 8 x 8.

# %%
def step(cos, sin, n):
    """The turn of pair 0 from patch (0, 0) to patch (1, 0) of an n x n grid, in radians."""
    return np.angle((cos[n, 0] + 1j * sin[n, 0]) * (cos[0, 0] - 1j * sin[0, 0]))


steps = {name: [step(*tables[n], n) for n in (8, 15)] for name, tables in (("pixel", pixel_cs), ("integer", integer_cs))}
print({name: np.round(s, 4).tolist() for name, s in steps.items()}, "  2 pi / 7 =", round(2 * np.pi / 7, 4))
assert np.isclose(steps["pixel"][0], 2 * steps["pixel"][1]) and np.isclose(*steps["integer"])

# %% [markdown]
# ## 8. Features de Fourier aleatórias: as posições do SAM
#
# O SAM (Segment Anything, [Kirillov et al.](https://arxiv.org/abs/2304.02643)) e os seus
# sucessores SAM 2, SAM 3 e EdgeTAM situam os patches da imagem e os cliques e cantos de
# caixa do prompt do mesmo modo, com *features de Fourier aleatórias*
# ([Tancik et al.](https://arxiv.org/abs/2006.10739)), o seu `PositionEmbeddingRandom`. As
# coordenadas de um ponto, escaladas para $c = (x, y) \in [-1, 1]^2$, são projetadas em $F$
# direções aleatórias, as colunas de uma matriz gaussiana $G$ (`scale * randn(2, F)`; SAM:
# scale 1, $F = 128$), e as features são $[\sin(2\pi\, cG), \cos(2\pi\, cG)]$, $2F$ canais.
# $G$ é sorteada uma vez e salva junto com os pesos, então as features dependem dela:
# `random_fourier_features(coords, projection)` a recebe. Os 64 x 64 tokens de imagem do SAM
# ficam nos centros dos patches, a $(k + 0.5)/64$ da imagem, escalados do mesmo jeito.

# %%
sam_grid = (64, 64)
G = np.random.default_rng(0).standard_normal((2, 128))  # SAM: scale * randn(2, 128), scale 1
centres = patch_positions(sam_grid, grid_offset=0.5)[::-1].T  # (x, y) of each patch's centre, in patches
rff = random_fourier_features(centres, G, input_shape=sam_grid, dtype=np.float64)
turns_2pi = 2 * np.pi * (2 * centres / 64 - 1) @ G  # 2 pi c G, c in [-1, 1]
print("features:", rff.shape)
np.testing.assert_allclose(rff, np.concatenate([np.sin(turns_2pi), np.cos(turns_2pi)], axis=-1), atol=1e-12)

# %% [markdown]
# **A escolha frente a uma tabela seno-cosseno.** Uma tabela seno-cosseno 2-D (a do MAE,
# notebook 09) dá a cada eixo metade dos seus canais, girando em frequências geométricas ao
# longo só desse eixo: a similaridade de dois patches (o seu produto escalar sobre os 128
# pares seno-cosseno, o cosseno médio das suas diferenças de ângulo, como no RoPE) é um
# kernel do deslocamento de linha mais um do deslocamento de coluna. Uma feature aleatória é
# uma onda ao longo da sua própria direção $g_j$, e a média
# $\frac1F \sum_j \cos(2\pi\,\Delta c \cdot g_j)$ estima
# $E[\cos(2\pi\,\Delta c \cdot g)] = e^{-2\pi^2 |\Delta c|^2}$ para $g$ gaussiano (scale 1):
# uma função só da *distância*, a mesma em todas as direções, cuja largura a escala define.
# A similaridade do patch central com três patches a 15 de distância, para as features do
# SAM e para a tabela do MAE de mesma largura:

# %%
mae = grid_encoding(sam_grid, 256, convention="mae", dtype=np.float64)
centre = 32 * 64 + 32
kernel = {"random Fourier features (SAM)": similarity(rff[:, 128:], rff[:, :128], centre).reshape(sam_grid),
          "sin-cos table (MAE)": (mae @ mae[centre] / 128).reshape(sam_grid)}
for name, values in kernel.items():
    print(f"{name:30s} offset (0, 15): {values[32, 47]:.2f}  (15, 0): {values[47, 32]:.2f}  (9, 12): {values[41, 44]:.2f}")
assert kernel["sin-cos table (MAE)"][32, 47] - kernel["sin-cos table (MAE)"][41, 44] > 0.1

# %% [markdown]
# As 128 direções do SAM são uma amostra: a sua similaridade segue a gaussiana com erro de
# cerca de 0.2 na grade, e 16 vezes mais direções a seguem com erro abaixo de 0.05 (o erro
# de uma média de $F$ cossenos aleatórios encolhe como $1/\sqrt{F}$). A tabela do MAE fica
# mais alta ao longo dos eixos do que ao longo das diagonais à mesma distância, qualquer que
# seja a sua largura: metade dos seus pares não gira para um deslocamento ao longo de um
# eixo.

# %%
u = (np.arange(64) - 32) / 32  # offsets from the centre patch, in units of c
gauss = np.exp(-2 * np.pi**2 * (u[:, None] ** 2 + u**2))
errors = {}
for features in (128, 2048):
    f = random_fourier_features(centres, np.random.default_rng(0).standard_normal((2, features)), input_shape=sam_grid)
    errors[features] = np.abs(similarity(f[:, features:], f[:, :features], centre).reshape(sam_grid) - gauss).max()
print("largest distance from the Gaussian, F = 128 and 2048:", [round(float(e), 3) for e in errors.values()])
assert 0.15 < errors[128] < 0.25 and errors[2048] < 0.05

# %% [markdown]
# As duas similaridades em imagens (o círculo tracejado: a 15 patches do centro). A do SAM é
# uma mancha redonda com o seu ruído de amostragem em volta; a do MAE é uma cruz, alta ao
# longo da linha e da coluna do patch central.

# %%
fig, axs = plt.subplots(1, 2, figsize=(10, 4), constrained_layout=True)
for ax, (name, values) in zip(axs, kernel.items()):
    shown = ax.imshow(values, cmap="RdBu_r", vmin=-1, vmax=1)
    ax.add_patch(plt.Circle((32, 32), 15, fill=False, linestyle="--", color="k"))
    ax.set(title=name, xlabel="key patch column", ylabel="key patch row")
fig.colorbar(shown, ax=axs, shrink=0.8, label="similarity to the centre patch")
plt.show()

# %% [markdown]
# Por que o SAM as escolheu: o seu encoder de prompt situa cliques e cantos de caixa em
# qualquer lugar da imagem, com precisão de pixel, no mesmo espaço dos patches da imagem, e
# os compara pela distância em qualquer direção. As features aleatórias tratam todas as
# direções igualmente e têm um só botão, a escala de $G$, que define a largura da
# similaridade (pequena demais, borra pontos vizinhos juntos; grande demais, transforma as
# features em ruído: Tancik et al.). Uma tabela seno-cosseno cobre muitas larguras de uma
# vez (os seus pares rápidos dão um pico estreito, os lentos uma cauda longa), mas favorece
# os eixos.

# %% [markdown]
# ## Resumo
#
# - Numa grade, cada par rotativo lê uma coordenada, então a pontuação de dois patches
#   depende só do seu deslocamento 2-D: um deslocamento com sinal, não uma distância, e sem
#   preferência embutida por patches próximos.
# - O Pixtral e o encoder de visão do Qwen2-VL dão às linhas as mesmas frequências; as
#   frequências de coluna do Pixtral ficam meio passo abaixo.
# - O M-RoPE dá ao texto três linhas iguais (o RoPE 1-D simples) e a uma entrada visual
#   (tempo, linha, coluna) contados a partir de onde ela começa, na sua grade fundida 2 x 2.
# - Depois de uma entrada visual, o texto recomeça no início mais o lado fundido mais longo
#   (transformers 5.x) ou uma posição além do maior id do bloco (transformers 4.x, como o
#   Qwen2-VL foi lançado); as duas regras diferem depois de um vídeo com mais patches
#   temporais do que esse lado.
# - O Qwen2.5-VL espaça os tempos de um vídeo por `tokens_per_second * second_per_grid_t`; o
#   Qwen3-VL numera cada patch temporal como uma imagem própria, depois de um carimbo de
#   tempo em texto.
# - `mrope_section` conta pares por eixo: as seções consecutivas do Qwen2-VL dão à largura
#   só frequências lentas, e a intercalação do Qwen3-VL dá a todos os eixos a faixa inteira.
# - `RotaryEmbedding.from_config` transforma uma config do transformers no módulo do posenc,
#   com os mesmos logits.
# - O Flux dá a cada token os ids (eixo 0, linha, coluna) e a cada eixo um bloco da cabeça
#   que gira nas frequências da sua própria largura, (16, 56, 56); os seus tokens de texto
#   ficam todos em (0, 0, 0), onde está o patch do canto superior esquerdo da imagem, e não
#   carregam posição entre si.
# - Os modelos de vídeo dividem a cabeça entre tempo, altura e largura (Wan (44, 42, 42),
#   HunyuanVideo (16, 56, 56)); um eixo com poucos canais muda pouco a similaridade.
# - Frequências de pixel sobre coordenadas em [-1, 1] mantêm os ângulos de um lugar quando a
#   grade é redimensionada e tornam mais finos os passos entre vizinhos; as posições
#   inteiras mantêm os passos e mudam os lugares.
# - As features de Fourier aleatórias do SAM projetam as coordenadas em direções gaussianas
#   aleatórias: uma similaridade só da distância, a mesma em todas as direções, com uma só
#   largura; a de uma tabela seno-cosseno 2-D é uma soma de um kernel por eixo, mais alta ao
#   longo dos eixos.
#
# ## Exercícios
#
# Cada verificação diz o que está errado numa resposta; `nb10.<exercise>.hint()` dá uma dica
# e `nb10.<exercise>.solution()` mostra o código de referência quando você travar.
#
# ### Exercício 1 · As três linhas de uma sequência texto + imagem
#
# Dois tokens de texto, uma imagem de 4 x 6 patches (`spatial_merge_size` 2), dois tokens de
# texto: escreva à mão as três linhas do M-RoPE (tempo, altura, largura), pela regra do
# transformers 5.23. O rascunho abaixo tem um erro; corrija-o até a verificação dizer que
# está correto.

# %%
from posenc.exercises import nb10  # noqa: E402

my_rows = np.array([
    [0, 1, 2, 2, 2, 2, 2, 2, 8, 9],  # time
    [0, 1, 2, 2, 2, 3, 3, 3, 8, 9],  # height
    [0, 1, 2, 3, 4, 2, 3, 4, 8, 9],  # width
])
print(nb10.mrope_rows.check(my_rows))

# %% [markdown]
# ### Exercício 2 · Qual eixo gira cada canal
#
# Complete `channel_axes(mrope_section)`: para cada um dos $2 \sum$ `mrope_section` canais
# de uma cabeça no layout em metades, o eixo (0 tempo, 1 altura, 2 largura) que o gira sob
# as seções consecutivas do Qwen2-VL. O rascunho responde só para os pares.

# %%
def channel_axes(mrope_section):
    return np.repeat([0, 1, 2], mrope_section)


print(nb10.channel_axes.check(channel_axes))

# %% [markdown]
# ### Exercício 3 · Mesmo deslocamento, mesma pontuação
#
# No RoPE 2-D, o patch de query `query_a` dá uma certa pontuação ao patch de key `key_a`
# (ambos como (linha, coluna)). Complete `same_offset(query_a, key_a, query_b)`: o patch de
# key ao qual o patch de query `query_b` dá exatamente a mesma pontuação, quaisquer que
# sejam q e k.

# %%
def same_offset(query_a, key_a, query_b):
    offset = (query_a[0] - key_a[0], query_a[1] - key_a[1])
    return (query_b[0] + offset[0], query_b[1] + offset[1])


print(nb10.same_offset.check(same_offset))

# %% [markdown]
# ### Exercício 4 · Os ids do Flux
#
# Complete `flux_ids(text_length, height, width)`: os ids do Flux para um prompt de
# `text_length` tokens e uma imagem de `height x width` tokens, `(tokens, 3)`, sem
# `flux_position_ids`. O rascunho tem um erro.

# %%
def flux_ids(text_length, height, width):
    rows, columns = np.meshgrid(np.arange(height), np.arange(width), indexing="ij")
    image_ids = np.stack([np.zeros(height * width), columns.ravel(), rows.ravel()], axis=-1)
    return np.concatenate([np.zeros((text_length, 3)), image_ids])


print(nb10.flux_ids.check(flux_ids))

# %% [markdown]
# ### Exercício 5 · A similaridade ao longo de um eixo
#
# Complete `axis_similarity(offsets, axes_dim, axis, base)`: a similaridade da seção 6 (a
# média, sobre todos os pares da cabeça, do cosseno da sua diferença de ângulo) para cada
# deslocamento só ao longo do eixo `axis`, sob o RoPE com uma largura por eixo `axes_dim`. O
# rascunho esquece algo.

# %%
def axis_similarity(offsets, axes_dim, axis, base):
    w = base ** (-2 * np.arange(axes_dim[axis] // 2) / axes_dim[axis])
    return np.cos(np.outer(offsets, w)).mean(axis=-1)


print(nb10.axis_similarity.check(axis_similarity))

# %% [markdown]
# ### Exercício 6 · Ângulos em frequências de pixel
#
# Complete `pixel_angles(n, count, max_freq)`: só com NumPy, os ângulos `(n, count)` dos
# `count` pares de um eixo de `n` patches em frequências de pixel (seção 7).

# %%
def pixel_angles(n, count, max_freq):
    coordinates = np.arange(n)
    w = np.pi * np.linspace(1, max_freq / 2, count)
    return np.outer(coordinates, w)


print(nb10.pixel_angles.check(pixel_angles))

# %% [markdown]
# ### Exercício 7 · As features do SAM para um clique
#
# Complete `sam_features(points, projection, height, width)`: só com NumPy, as features de
# Fourier aleatórias do SAM para pontos `(x, y)` em pixels de uma imagem `height x width`
# (já no centro do seu pixel), sendo `projection` a matriz $G$ de forma `(2, F)`.

# %%
def sam_features(points, projection, height, width):
    c = 2 * points / np.array([width, height]) - 1
    angles = c @ projection
    return np.concatenate([np.sin(angles), np.cos(angles)], axis=-1)


print(nb10.sam_features.check(sam_features))

# %% [markdown]
# ## Verificações cruzadas
#
# As afirmações acima mais uma vez, juntas: o segundo mapa de pontuações é o primeiro
# transladado pelo deslocamento entre os seus patches de query; o RoPE 2-D do Qwen2-VL e o do
# Pixtral dependem ambos só do deslocamento; as linhas do exercício 1 são as do posenc; cada
# bloco do Flux é o RoPE 1-D da sua própria largura sobre o seu id; a similaridade ao longo
# de um eixo é a mesma a partir de qualquer query; as respostas dos exercícios 4 a 7 são os
# ids, as similaridades, as tabelas de pixel e as features do SAM do posenc; a similaridade
# da tabela seno-cosseno é uma soma de um kernel por eixo; a execução leva menos de um minuto
# (o notebook foi feito para ser rápido de reexecutar).

# %%
# Cross-checks of sections 1 to 3 and exercise 1
np.testing.assert_allclose(maps[1].reshape(height, width)[1:, 3:], maps[0].reshape(height, width)[:-1, :-3], atol=1e-12)
for convention in ("pixtral", "qwen2_vl"):
    c, s = rope.axial_cos_sin(ids, d, convention=convention, dtype=np.float64)
    qs = posenc.apply_rotary(np.broadcast_to(q, c.shape), c, s)
    ks = posenc.apply_rotary(np.broadcast_to(k, c.shape), c, s)
    grid_scores = (qs @ ks.T).T
    for dr, dc in [(0, 0), (1, -2), (2, -1), (-3, 4)]:
        assert np.ptp(grid_scores[(offsets[0] == dr) & (offsets[1] == dc)]) < 1e-12
np.testing.assert_array_equal(nb10.mrope_rows_solution(), rope.mrope_position_ids([2, (1, 4, 6), 2]))
assert (rows[1:, image] == [[4, 4, 4, 5, 5, 5], [4, 5, 6, 4, 5, 6]]).all() and (rows[0, image] == 4).all()
assert (rows[:, text] == rows[0, text]).all()
assert np.flatnonzero((rows != reference).any(axis=0)).tolist() == [25, 26, 27]
assert sorted(set(spaced[0, video].tolist())) == [10, 10 + interval, 10 + 2 * interval]
assert rope.mrope_position_ids(example, spatial_merge_size=1, text_resumes="after_largest")[0, 12:].tolist() == [3, 4, 5, 6, 7]

# %%
# Cross-checks of sections 5 and 6 and exercises 4 and 5
for axis, size in enumerate(flux_dims):  # each of Flux's blocks is 1-D RoPE of its own width on its id
    one_d = posenc.rotary_cos_sin(token_ids[:, axis], size, layout="interleaved", dtype=np.float64)
    for mine, theirs in zip((flux_cos, flux_sin), one_d):
        np.testing.assert_allclose(mine[:, channel_axis == axis], theirs, rtol=0, atol=1e-15)
half_cos, half_sin = rope.per_axis_cos_sin(token_ids, flux_dims, layout="half", dtype=np.float64)
np.testing.assert_array_equal(half_cos[:, :64], flux_cos[:, ::2])
np.testing.assert_array_equal(nb10.flux_ids_solution(prompt, image_rows, image_columns), token_ids)
assert (token_ids[prompt:] == [[0, r, c] for r in range(image_rows) for c in range(image_columns)]).all()
np.testing.assert_allclose(similarity(flux_cos, flux_sin, prompt), text_similarity, atol=1e-15)  # the top-left patch's view
corner_view = similarity(video_cos, video_sin, 0).reshape(video_shape)  # HunyuanVideo's, from a query at (0, 0, 0)
np.testing.assert_allclose(corner_view[:11, 0, 0], hunyuan_time[10:], atol=1e-6)
np.testing.assert_allclose(corner_view[0, 0, :26], hunyuan_width[26:], atol=1e-6)
for (dims, base), lines in zip(video_splits.values(), along.values()):  # exercise 5's formula, along each axis
    for axis, (line, at) in enumerate(zip(lines, query)):
        np.testing.assert_allclose(nb10.axis_similarity_solution(np.arange(len(line)) - at, dims, axis, base), line, atol=1e-6)
wan_steps = [line[at + 1] for line, at in zip(along["Wan"], query)]
assert np.ptp(wan_steps) < 0.005 and along["HunyuanVideo"][0][11] > along["HunyuanVideo"][1][16]

# %%
# Cross-checks of sections 7 and 8 and exercises 6 and 7; the run's time
np.testing.assert_array_equal(patch_positions((15, 15), normalize="pixel")[1, :15], np.linspace(-1, 1, 15))
for n in (8, 15):  # exercise 6's angles: the row pairs of the pixel table, down the first column
    angles = nb10.pixel_angles_solution(n, 8, 224)
    np.testing.assert_allclose(pixel_cs[n][0][::n, :16:2], np.cos(angles), atol=1e-12)
    np.testing.assert_allclose(pixel_cs[n][1][::n, :16:2], np.sin(angles), atol=1e-12)
assert not np.allclose(integer_cs[15][0][same_place], integer_cs[8][0])
assert np.isclose(steps["pixel"][0], 2 * np.pi / 7) and np.isclose(steps["integer"][0], 1.0)
points = 16 * centres  # SAM's 1024 x 1024 image, 16 pixels per patch
np.testing.assert_allclose(nb10.sam_features_solution(points, G, 1024, 1024), rff, atol=1e-12)
np.testing.assert_allclose(random_fourier_features(points, G, input_shape=(1024, 1024), dtype=np.float64), rff, atol=1e-12)
sincos = kernel["sin-cos table (MAE)"]
np.testing.assert_allclose(sincos, sincos[:, [32]] + sincos[[32], :] - 1, atol=1e-12)  # a kernel per axis, added
np.testing.assert_allclose(kernel["random Fourier features (SAM)"][32, 32], 1.0)
seconds = time.perf_counter() - started
assert seconds < 60

# %%
# NBVAL_IGNORE_OUTPUT
print(f"This run took {seconds:.0f} s.")
