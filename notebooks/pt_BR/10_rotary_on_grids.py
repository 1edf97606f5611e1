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
# famílias de modelos a numeram.
#
# **Pergunta:** Como o RoPE dá posições aos patches de imagem e aos quadros de vídeo, e onde o texto que vem depois deles continua?
#
# **Você será capaz de:**
# - montar o RoPE 2-D para uma grade de patches de imagem e dizer como dois encoders de visão
#   escolhem as suas frequências;
# - escrever as três linhas de posição (tempo, altura, largura) que o RoPE multimodal dá a
#   uma sequência de texto, uma imagem e um vídeo, segundo cada uma das regras em uso;
# - dizer quais canais de uma cabeça giram com o tempo, a altura ou a largura;
# - carregar uma config do transformers no módulo rotativo do posenc e obter os próprios logits do modelo.
#
# **Pré-requisitos:** notebooks 08 e 09 · **Tempo:** cerca de 50 minutos

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
# (`tests/test_rotary_grid_models.py` confere a primeira contra o `get_rope_index`
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
# `tests/test_rope_config.py` faz o mesmo para quinze famílias (Llama, Mistral, Qwen2,
# Qwen3, Gemma 3, Phi-3, GPT-NeoX, GPT-J, Cohere, DeepSeek-V3, GPT-OSS, Llama 4, Qwen2-VL,
# Qwen2.5-VL e Qwen3-VL).
#
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
# ## Verificações cruzadas
#
# As afirmações acima mais uma vez, juntas: o segundo mapa de pontuações é o primeiro
# transladado pelo deslocamento entre os seus patches de query; o RoPE 2-D do Qwen2-VL e o do
# Pixtral dependem ambos só do deslocamento; as linhas do exercício 1 são as do posenc; a
# execução leva menos de um minuto (o notebook foi feito para ser rápido de reexecutar).

# %%
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
seconds = time.perf_counter() - started
assert seconds < 60

# %%
# NBVAL_IGNORE_OUTPUT
print(f"This run took {seconds:.0f} s.")
