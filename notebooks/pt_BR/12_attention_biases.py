# %% [markdown]
# # 12 · A posição como viés nas pontuações: ALiBi, os buckets do T5, nenhuma posição
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/posenc-org/posenc/blob/main/notebooks/pt_BR/12_attention_biases.ipynb)
#
# Os notebooks 07 e 08 deram ao modelo as suas posições como vetores: uma tabela somada aos
# embeddings dos tokens, ou rotações das queries e keys. Uma terceira família deixa todos os
# vetores como estão e soma um número a cada pontuação de atenção, escolhido pela distância entre
# a key e a query: ALiBi (BLOOM, MPT, Baichuan-13B) e os buckets relativos do T5 (T5, FLAN-T5,
# mT5, LongT5, ...). E algumas camadas de modelos recentes não somam posição nenhuma (NoPE).
# Os vieses foram feitos para uma pergunta: o que um modelo faz com uma sequência mais longa
# do que qualquer uma com que foi treinado? Desenhamos cada viés e depois reconstruímos em
# miniatura a tabela que respondeu a essa pergunta.
#
# **Pergunta:** O que muda quando a posição é um viés nas pontuações de atenção em vez de um vetor, e qual método de posição ainda funciona em sequências mais longas que as do treino?
#
# **Você será capaz de:**
# - somar um viés à atenção em PyTorch e dizer por que uma constante ao longo de uma linha não muda nada;
# - escrever as inclinações do ALiBi para qualquer número de cabeças, e dizer por que inclinações geométricas dão a cada cabeça o seu próprio alcance;
# - achar o bucket do T5 de uma posição relativa, e dizer quais distâncias dividem um bucket;
# - ler de uma config quais camadas do Llama 4, do SmolLM3 ou do Cohere 2 não usam posição nenhuma;
# - treinar curto e testar longo: comparar seis métodos de posição em entradas de até 8 vezes o comprimento de treino;
# - dizer o que o xPos acrescenta ao RoPE, e por que o posenc deixa de fora KERPLE, FIRE e CoPE.
#
# **Pré-requisitos:** notebooks 04, 07 e 08 · **Tempo:** cerca de 60 minutos

# %%
# On Colab, install posenc from GitHub; elsewhere `make lab` has already installed it.
import sys

if "google.colab" in sys.modules:
    # %pip install --quiet "posenc @ git+https://github.com/posenc-org/posenc@main"
    # configs with rope_parameters need transformers 5
    # %pip install --quiet "transformers>=5"

# %% [markdown]
# Os vieses vêm de `posenc.biases` (NumPy); `torch.as_tensor` os entrega ao PyTorch.
# Uma thread e algoritmos determinísticos fazem cada execução numa máquina se repetir exatamente.

# %%
# %matplotlib inline
import inspect
import time
import warnings

import matplotlib.pyplot as plt
import numpy as np
import torch
from torch import nn

warnings.filterwarnings("ignore", message="IProgress not found")  # tqdm's, when transformers loads it
import transformers  # noqa: E402

from posenc import biases, lessons, rope  # noqa: E402

torch.set_num_threads(1)
torch.use_deterministic_algorithms(True)
torch.manual_seed(0)
rng = np.random.default_rng(0)
started = time.perf_counter()

# %% [markdown]
# ## 1. Um viés nas pontuações
#
# A atenção dá à query $i$ os pesos $\mathrm{softmax}_j(s_{ij})$ sobre as keys $j$, com as
# pontuações $s_{ij} = q_i \cdot k_j / \sqrt{d}$. Um método de viés soma uma matriz $B$ às
# pontuações antes do softmax, uma por cabeça:
#
# $$\text{weights}_i = \mathrm{softmax}_j\big(s_{ij} + B_{ij}\big).$$
#
# $B$ não olha para os tokens, só para onde a query e a key estão; a máscara causal já é
# um viés desses ($-\infty$ nas keys depois da query, cujo peso vira $e^{-\infty} = 0$). Em
# PyTorch, `scaled_dot_product_attention` recebe $B$ como `attn_mask`. Aqui, 4 cabeças sobre
# 6 posições, com o viés do ALiBi da seção 2, contra a fórmula escrita por extenso:

# %%
heads, length, head_dim = 4, 6, 8
q, k, v = torch.randn(3, heads, length, head_dim)
bias = torch.as_tensor(biases.alibi_bias(heads, length, length))  # (heads, length, length), causal
weights = torch.softmax(q @ k.transpose(-1, -2) / head_dim**0.5 + bias, dim=-1)
attended = nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=bias)
torch.testing.assert_close(attended, weights @ v)
print("bias", tuple(bias.shape), "| weights of query 2, head 0:", weights[0, 2].numpy().round(3))

# %% [markdown]
# Um softmax não muda quando o mesmo número é somado a todas as pontuações de uma linha; por
# isso, vieses que diferem por uma constante por linha são o mesmo viés. O BLOOM escreve o
# ALiBi como $+m\,j$ (a posição da key vezes a inclinação $m$ da cabeça) em vez de
# $-m\,(i - j)$: os dois diferem por $m\,i$ na linha $i$ e dão os mesmos pesos.

# %%
slopes = torch.as_tensor(biases.alibi_slopes(heads))[:, None, None]
bloom = slopes * torch.arange(length, dtype=torch.float64)  # (heads, 1, length): slope * key position
mask = torch.full((length, length), -torch.inf).triu(1)
bloom_weights = torch.softmax(q.double() @ k.double().transpose(-1, -2) / head_dim**0.5 + bloom + mask, dim=-1)
torch.testing.assert_close(bloom_weights.float(), weights)
print("row 2, head 0:", bias[0, 2].numpy(), "(ALiBi)", (bloom + mask)[0, 2].numpy(), "(BLOOM)")

# %% [markdown]
# ## 2. ALiBi: uma penalidade que cresce com a distância
#
# O ALiBi (Press, Smith e Lewis, ICLR 2022, ["Train Short, Test Long"](https://arxiv.org/abs/2108.12409))
# dá à cabeça $h$ o viés $-m_h\,(i - j)$ para uma key $i - j$ posições atrás: uma penalidade
# linear na distância, com uma inclinação fixa $m_h$ por cabeça, nada aprendido. Para $n$
# cabeças, $n$ uma potência de dois, as inclinações são $m_h = 2^{-8h/n}$, $h = 1, \dots, n$:
# para 8 cabeças, $\frac12, \frac14, \dots, \frac{1}{256}$.

# %%
slopes8 = biases.alibi_slopes(8)
print("8 heads:", slopes8)
np.testing.assert_array_equal(slopes8, 2.0 ** -np.arange(1, 9))

# %% [markdown]
# Para outros números de cabeças, o código do artigo, o BLOOM e o MPT pegam as inclinações
# da maior potência de dois abaixo e completam com uma sim, uma não das inclinações do dobro
# de cabeças (as que ficam entre elas): para 12 cabeças, as 8 inclinações acima e depois
# $2^{-1/2}, 2^{-3/2}, 2^{-5/2}, 2^{-7/2}$. O `alibi_bias_max` do MPT substitui o 8 do expoente.

# %%
slopes12 = biases.alibi_slopes(12)
print("12 heads:", slopes12.round(4))
np.testing.assert_allclose(slopes12[8:], 2.0 ** -np.array([0.5, 1.5, 2.5, 3.5]), rtol=1e-15)

# %% [markdown]
# O viés de cada uma das 8 cabeças sobre 16 posições, numa só escala de cores (cinza:
# mascarado). A penalidade da primeira cabeça chega a 7.5 no canto mais distante; a da última
# fica abaixo de 0.06.

# %%
alibi16 = biases.alibi_bias(8, 16, 16)
colours = plt.get_cmap("viridis").with_extremes(bad="lightgray")
fig, axes = plt.subplots(1, 8, figsize=(12, 2))
for h, ax in enumerate(axes):
    image = ax.imshow(np.ma.masked_invalid(alibi16[h]), cmap=colours, vmin=-7.5, vmax=0)
    ax.set(title=f"m = 1/{2 ** (h + 1)}", xticks=[], yticks=[])
axes[0].set(xlabel="key", ylabel="query")
fig.colorbar(image, ax=axes, shrink=0.8)
plt.show()

# %% [markdown]
# Por que inclinações geométricas? Quando os conteúdos não preferem nenhuma key (todas as
# pontuações iguais), os pesos da cabeça $h$ caem como $e^{-m_h\,\text{distance}}$: cada passo
# para trás divide o peso por $e^{m_h}$ e, num passado longo o bastante, metade do peso fica
# dentro de $\ln 2 / m_h$ keys. Com as inclinações caindo pela metade de uma cabeça para a
# outra, esses alcances dobram: 1.4, 2.8, 5.5, ... até 177 keys. É de novo a ideia do
# notebook 04: a tabela senoidal dá a cada par de colunas um comprimento de onda, numa
# progressão geométrica, de modo que alguns pares distinguem vizinhos e outros separam
# posições distantes; o ALiBi dá a cada cabeça um alcance, numa progressão geométrica, de
# modo que algumas cabeças leem os últimos tokens e outras fazem a média sobre centenas. É
# uma preferência (um prior), não uma janela: uma key cuja pontuação é maior do que a penalidade
# ainda vence.

# %%
far = 512  # query 511 over keys 0..511: a long past
last_row = biases.alibi_bias(8, 1, far, key_offset=far - 1, dtype=np.float64)[:, 0]  # float64: e^-255 is not 0
uniform = torch.softmax(torch.as_tensor(last_row), dim=-1).numpy()
by_distance = uniform[:, ::-1]  # column k: the key k places back
half_weight = np.log(2) / slopes8
print("half of the weight within (keys):", half_weight.round(1))
step = by_distance[:, 1:] / by_distance[:, :-1]  # each key's weight over the next nearer one's
np.testing.assert_allclose(step, np.broadcast_to(np.exp(-slopes8)[:, None], step.shape), rtol=1e-12)

# %%
fig, ax = plt.subplots(figsize=(8, 3))
for h in range(8):
    ax.plot(np.arange(1, far + 1), by_distance[h], label=f"m = 1/{2 ** (h + 1)}")
ax.set(xscale="log", yscale="log", ylim=(1e-6, 1), xlabel="distance back (keys)", ylabel="weight",
       title="ALiBi's weights when the contents prefer no key, 8 heads")
ax.legend(fontsize=7, ncol=2)
plt.show()

# %% [markdown]
# ## 3. T5: exato perto, logarítmico longe, um bucket além
#
# O T5 ([Raffel et al., 2020](https://arxiv.org/abs/1910.10683)) aprende o seu viés: cada
# cabeça tem um número por *bucket* de posições relativas, numa tabela de formato
# (buckets, cabeças) que todas as camadas compartilham. Os buckets são a parte engenhosa.
# Com os 32 buckets do T5 e `max_distance` 128, o encoder (bidirecional) dá 16 às keys
# antes da query e 16 às keys depois dela. De cada 16, os 8 primeiros guardam as distâncias
# 0 a 7, uma cada; os outros 8 cobrem as distâncias de 8 em diante em faixas que crescem de
# forma logarítmica; a última faixa guarda todas as distâncias de 91 em diante, tanto 128
# quanto um milhão. A primeira distância de cada bucket, para as keys antes da query:

# %%
distance = np.arange(300)
back = biases.relative_position_bucket(-distance)  # relative position = key - query
starts = distance[np.r_[True, back[1:] != back[:-1]]]
print("buckets 0..15 start at distances", starts.tolist())
assert (back[91:] == 15).all() and back[90] == 14

# %% [markdown]
# Os buckets exatos distinguem as keys mais próximas; as faixas trocam essa resolução por
# alcance: 8 buckets cobrem as distâncias de 8 a 90, e a faixa mais larga (bucket 14), 27
# distâncias. Um decoder (`bidirectional=False`) só vê keys antes da query, então todos os
# 32 buckets vão para elas: 16 exatos, 16 logarítmicos, e toda key posterior no bucket 0 (a
# máscara causal as esconde).

# %%
relative = np.arange(-160, 161)
fig, ax = plt.subplots(figsize=(8, 3))
for bidirectional in (True, False):
    buckets = biases.relative_position_bucket(relative, bidirectional=bidirectional)
    ax.step(relative, buckets, where="mid", label=f"bidirectional={bidirectional}")
ax.axvline(-128, color="gray", linestyle=":", label="max_distance")
ax.set(xlabel="relative position (key - query)", ylabel="bucket", title="T5's buckets, 32 of them, max_distance 128")
ax.legend()
plt.show()

# %% [markdown]
# Com uma tabela de valores aleatórios (um T5 treinado tem a sua; `relative_position_bias`
# recebe o `relative_attention_bias.weight` de um checkpoint sem mudanças), o viés de 4
# cabeças sobre 160 posições: faixas ao longo das diagonais, uma cor por bucket, cada vez
# mais largas longe da diagonal, e uma só cor depois da distância 90.

# %%
table = rng.standard_normal((32, 4))
t5_bias = biases.relative_position_bias(table, 160, 160)
fig, axes = plt.subplots(1, 4, figsize=(12, 3))
for h, ax in enumerate(axes):
    ax.imshow(t5_bias[h], cmap="coolwarm")
    ax.set(title=f"head {h}", xticks=[], yticks=[])
axes[0].set(xlabel="key", ylabel="query")
plt.show()
assert t5_bias.shape == (4, 160, 160) and t5_bias[0, 150, 0] == table[back[150], 0]

# %% [markdown]
# ## 4. NoPE: nenhuma posição
#
# Um decoder sem posição nenhuma não é cego à ordem: a máscara causal deixa a posição $i$
# ver $i + 1$ keys, e isso sozinho já é um sinal. Suponha que o primeiro token carregue uma
# marca (valor 1, os outros 0) e que as queries não prefiram nenhuma key: a atenção então
# devolve $1 / (i + 1)$ na posição $i$, uma contagem dos tokens até ali. Modelos treinados
# encontram sinais assim ([Haviv et al., 2022](https://arxiv.org/abs/2203.16634)).

# %%
marker = torch.zeros(1, 1, 10, 1)
marker[..., 0, :] = 1.0
causal = torch.full((10, 10), -torch.inf).triu(1)
counted = nn.functional.scaled_dot_product_attention(torch.zeros(1, 1, 10, 4), torch.zeros(1, 1, 10, 4), marker,
                                                     attn_mask=causal)
print("attention output at positions 0..9:", counted.flatten().numpy().round(3))
torch.testing.assert_close(counted.flatten(), 1 / torch.arange(1.0, 11.0))

# %% [markdown]
# Alguns modelos recentes tiram o RoPE de algumas camadas: o Llama 4 e o SmolLM3, de uma a
# cada quatro (o `no_rope_layers` das suas configs), o Cohere 2, das camadas de atenção
# completa (ele só rotaciona nas camadas de janela deslizante). `rope.layer_plan(config)`
# lê, camada por camada, o que o próprio código de atenção do modelo faz. Configs
# minúsculas de 8 camadas, construídas com as classes de config do transformers (nada é
# baixado):

# %%
small = {"num_hidden_layers": 8, "hidden_size": 64, "num_attention_heads": 4, "num_key_value_heads": 2,
         "intermediate_size": 128}
configs = {
    "Llama 4": transformers.Llama4TextConfig(**small, head_dim=16, intermediate_size_mlp=128),
    "SmolLM3": transformers.SmolLM3Config(**small),
    "Cohere 2": transformers.Cohere2Config(**small),
}
plans = {name: [layer.method for layer in rope.layer_plan(config)] for name, config in configs.items()}
for name, methods in plans.items():
    print(f"{name:>8}: {' '.join(methods)}")
assert all(methods == ["rope"] * 3 + ["nope"] + ["rope"] * 3 + ["nope"] for methods in plans.values())

# %% [markdown]
# ## 5. Treinar curto, testar longo
#
# Press et al. treinaram modelos de linguagem num comprimento e os mediram em entradas mais
# longas: o modelo senoidal falhou poucos tokens depois do comprimento de treino, o rotativo
# e o viés do T5 duraram mais, e o ALiBi continuou funcionando em muitas vezes o comprimento.
# Aqui está esse experimento em miniatura. A tarefa, `lessons.markov_task`: cada token é uma
# função fixa (`MARKOV_RULE`) dos dois tokens anteriores com probabilidade 0.85, senão um
# token uniforme entre 16. Para prever o próximo token, um modelo precisa achar os dois
# anteriores, uma habilidade que só depende de posições relativas, a mesma em qualquer
# comprimento. Nenhum modelo pode acertar mais vezes do que $0.85 + 0.15 / 16 \approx 0.859$.

# %%
tokens, targets = lessons.markov_task(np.random.default_rng(0), 1, 12)
best = lessons.MARKOV_KEEP + (1 - lessons.MARKOV_KEEP) / lessons.VOCAB
print("tokens: ", tokens[0])
print("targets:", targets[0], f"(-100: not scored)  best accuracy {best:.3f}")
assert round(best, 3) == 0.859

# %% [markdown]
# O modelo, `lessons.TinyDecoder(method)`: um Transformer causal de 1 camada, 8 cabeças e
# $d = 64$, pre-norm, e nada que veja a ordem além da máscara causal e do `method`: `none`
# (NoPE), `learned` (uma tabela de linhas somada aos embeddings), `sinusoidal`, `rope`
# (`rotary_cos_sin` e `apply_rotary` do `posenc.torch`), `alibi` e `t5` (`posenc.biases`,
# somados às pontuações). O T5 em miniatura tem 16 buckets causais e `max_distance` 16, o
# comprimento de treino: o T5 treinou com 512 tokens e `max_distance` 128, de modo que todo
# bucket é treinado; aqui, reduzido na mesma proporção. Só dois métodos aprendem parâmetros
# próprios:

# %%
extra = {method: sum(p.numel() for p in lessons.TinyDecoder(method).parameters())
         - sum(p.numel() for p in lessons.TinyDecoder("none").parameters()) for method in lessons.POSITION_METHODS}
print("parameters beyond the NoPE model's:", extra)
assert extra == {"none": 0, "learned": 128 * 64, "sinusoidal": 0, "rope": 0, "alibi": 0, "t5": 16 * 8}

# %% [markdown]
# Cada modelo treina no comprimento 16 por 100 passos de Adam (taxa de aprendizado 0.02) em
# lotes de 32 sequências, as mesmas sequências na mesma ordem, a partir da mesma semente, e é
# avaliado em 64 sequências novas de 16, 32, 64 e 128 tokens (as mesmas para todos os
# modelos). A tabela aprendida tem 128 linhas; as que passam de 15 nunca são treinadas e
# guardam o seu início aleatório. `lessons.train_short_test_long` faz tudo, numa thread de
# CPU, em menos de 20 segundos de tempo de CPU num laptop:

# %%
experiment_started = time.process_time()  # CPU time: what a busy machine does not stretch
results = lessons.train_short_test_long(seed=0)
experiment_seconds = time.process_time() - experiment_started
lengths = [16 * m for m in (1, 2, 4, 8)]

# %%
# NBVAL_IGNORE_OUTPUT
# Another CPU rounds the float32 sums in another order, which can move an accuracy across a rounding edge.
print(f"{'accuracy at':<12}" + "".join(f"{n:>6}" for n in lengths))
for method, scores in results.items():
    print(f"{method:<12}" + "".join(f"{s:6.2f}" for s in scores))

# %%
fig, ax = plt.subplots(figsize=(7, 3.5))
for method, scores in results.items():
    ax.plot(lengths, scores, marker="o", label=method)
ax.axhline(best, color="gray", linestyle="--", label="best possible")
ax.axvline(16, color="gray", linestyle=":", label="training length")
ax.set_xscale("log", base=2)
ax.minorticks_off()
ax.set(xticks=lengths, xticklabels=lengths, ylim=(0, 1), xlabel="sequence length", ylabel="accuracy",
       title="trained at 16 tokens, tested up to 128")
ax.legend(fontsize=8, ncol=3, loc="lower left")
plt.show()

# %% [markdown]
# No comprimento de treino, todo modelo com posições fica a menos de 0.15 do melhor
# possível; o modelo NoPE fica 0.25 ou mais abaixo. Com 8 vezes o comprimento, a ordem é a
# que Press et al. encontraram para os métodos que compararam: ALiBi (a menos de 0.05 da sua
# acurácia em 16), depois o viés do T5, depois o RoPE, depois a tabela senoidal, aqui com a
# tabela aprendida ao lado dela e o NoPE entre o RoPE e as duas. O RoPE perde pouco com o
# dobro do comprimento, e depois cai.

# %%
at_train = {method: scores[0] for method, scores in results.items()}
at_8x = {method: scores[-1] for method, scores in results.items()}
assert min(v for m, v in at_train.items() if m != "none") > best - 0.15 and at_train["none"] < best - 0.25

# %%
assert at_8x["alibi"] > at_8x["t5"] > at_8x["rope"] > at_8x["none"] > max(at_8x["sinusoidal"], at_8x["learned"])

# %% [markdown]
# Por que cada um cai, ou não:
#
# - **learned, sinusoidal**: depois de 16, o modelo lê linhas da tabela com que nunca
#   treinou (aleatórias, ou valores de seno e cosseno em combinações que nunca viu); os dois
#   terminam abaixo do modelo sem posição nenhuma.
# - **RoPE**: os pares lentos (comprimentos de onda acima de 16 posições) giram até ângulos
#   nunca alcançados no treino, e uma key distante pode ser girada quase como uma próxima
#   (notebook 08, seção 6).
# - **T5**: toda distância de 15 em diante divide o último dos 16 buckets, então uma key 100
#   posições atrás recebe o viés de uma 15 posições atrás; quanto mais longa a entrada, mais
#   keys o dividem e podem puxar peso das duas que importam.
# - **ALiBi**: as keys distantes recebem penalidades cada vez maiores, então as keys que uma
#   cabeça lê em 128 tokens são as que ela lia em 16.
#
# Onde a miniatura difere do artigo: Press et al. treinaram modelos de linguagem de 247M
# parâmetros no WikiText-103 e mediram a perplexidade; aqui é um modelo de 1 camada treinado
# por 100 passos numa tarefa sintética, uma semente, 64 sequências de teste por comprimento,
# então diferenças de alguns centésimos pouco significam. Os modelos ALiBi deles ficaram
# *melhores* em entradas mais longas, já que mais contexto ajuda um modelo de linguagem; aqui
# os dois tokens anteriores são tudo o que há para usar, então ficar estável é o melhor que o
# ALiBi pode fazer. No comprimento de treino, o ALiBi deles igualou ou superou o modelo
# senoidal; aqui ele fica abaixo do melhor dos outros. A tabela deles não tinha modelo
# aprendido nem NoPE; uma tabela aprendida de verdade não tem linha nenhuma depois do seu
# comprimento (as 1024 do GPT-2).

# %%
assert abs(at_8x["alibi"] - at_train["alibi"]) < 0.05 and at_train["alibi"] < max(at_train.values())

# %% [markdown]
# ## 6. xPos, e mais três da literatura
#
# xPos ([Sun et al., 2022](https://arxiv.org/abs/2212.10554), "A Length-Extrapolatable
# Transformer") mantém as rotações do RoPE e acrescenta um decaimento. Cada par $j$ de uma
# cabeça de $d$ canais recebe um número $\zeta_j = (2j + 0.4d) / (1.4d)$ abaixo de 1; a query
# na posição $n$ é escalada por $\zeta_j^{\,n/512}$, a key em $m$ por $\zeta_j^{-m/512}$,
# então a parte do par $j$ na pontuação $q_n \cdot k_m$ é a do RoPE vezes
# $\zeta_j^{\,(n - m)/512}$: um decaimento com a distância, como o do ALiBi, mas por par e
# multiplicando em vez de somar. O par mais rápido decai mais: para $d = 64$,

# %%
zeta = rope.xpos_decay(64)
distances = np.array([1, 512, 2048])
print("zeta, fastest and slowest pair:", zeta[[0, -1]].round(3))
print("their factors at distances", distances.tolist(), ":", (zeta[[0, -1], None] ** (distances / 512)).round(3).tolist())
np.testing.assert_allclose(zeta[[0, -1]], [0.4 / 1.4, (62 + 0.4 * 64) / (1.4 * 64)], rtol=1e-15)

# %%
fig, ax = plt.subplots(figsize=(7, 3))
reach = np.arange(0, 4097, 16)
for j in (0, 8, 16, 24, 31):
    ax.plot(reach, zeta[j] ** (reach / 512), label=f"pair {j}")
ax.set(xlabel="distance n - m", ylabel="factor on the pair's share", ylim=(0, 1.05), title="xPos's decay, head of 64 channels")
ax.legend(fontsize=8)
plt.show()

# %% [markdown]
# `rope.xpos_cos_sin(positions, head_dim)` dá o cos e o sin com que `rope.apply_rotary`
# gira e escala as queries (`keys=True` para as keys), no layout intercalado dos dois
# códigos de referência, o rotary-embedding-torch de lucidrains (`use_xpos=True`) e o `XPOS`
# do torchscale; os testes comparam com os dois. As pontuações de uma query na posição 2047
# sobre as keys de 0 a 2047 são as do RoPE, par a par, vezes o decaimento:

# %%
q_vec, k_vec = rng.standard_normal((2, 2048, 64))
positions = np.arange(2048)
q_x = rope.apply_rotary(q_vec, *rope.xpos_cos_sin(positions, 64, dtype=np.float64), layout="interleaved")
k_x = rope.apply_rotary(k_vec, *rope.xpos_cos_sin(positions, 64, keys=True, dtype=np.float64), layout="interleaved")
cos, sin = rope.rotary_cos_sin(positions, 64, layout="interleaved", dtype=np.float64)
q_r, k_r = (rope.apply_rotary(t, cos, sin, layout="interleaved") for t in (q_vec, k_vec))
pair_terms = (q_r[-1] * k_r).reshape(2048, 32, 2).sum(-1)  # (keys, pairs): RoPE's score, pair by pair
decayed = (pair_terms * zeta ** ((2047 - positions)[:, None] / 512)).sum(-1)
np.testing.assert_allclose(k_x @ q_x[-1], decayed, rtol=1e-9, atol=1e-9)

# %% [markdown]
# As keys distantes perdem primeiro a parte dos pares rápidos: são os pares que dão muitas
# voltas entre keys próximas e distantes, com os quais o RoPE deixa uma key distante parecer
# uma próxima (notebook 08, seção 6). O posenc tem o xPos só em NumPy, para ler e testar.
# Mais três métodos feitos para entradas longas, cada um com código de referência, e por que
# o posenc os deixa de fora:
#
# | método | o que acrescenta | código de referência | por que não está no posenc |
# |---|---|---|---|
# | KERPLE ([Chi et al., 2022](https://arxiv.org/abs/2205.09921)) | um viés $-r_1 \log(1 + r_2\,\lvert i - j\rvert)$ (ou $-r_1 \lvert i - j\rvert^{r_2}$), dois números aprendidos por cabeça | [chijames/KERPLE](https://github.com/chijames/KERPLE) (`ParallelKerpleLog`, num fork do GPT-NeoX) | os dois números são de cada modelo; depois de treinado, é um viés da distância, passado à atenção como na seção 1 |
# | FIRE ([Li et al., 2024](https://arxiv.org/abs/2310.04418)) | um viés dado por um pequeno MLP aprendido do log da distância, dividido pelo log da posição da query | o apêndice do artigo | o MLP é de cada modelo: não há fórmula fixa a que ser exato |
# | CoPE ([Golovneva et al., 2024](https://arxiv.org/abs/2405.18719)) | posições contadas por portas $\sigma(q_i \cdot k_j)$, lidas de embeddings de posição aprendidos | [facebookresearch/RAM](https://github.com/facebookresearch/RAM), `projects/cope` | as posições dependem dos tokens, então não há tabela nem viés para calcular de antemão |

# %% [markdown]
# ## Resumo
#
# - Um método de viés soma $B_{ij}$, uma função de onde a query e a key estão, às pontuações
#   antes do softmax (`attn_mask` em PyTorch); uma constante ao longo de uma linha não muda nada.
# - ALiBi: $-m_h \cdot$ distância, inclinações fixas $2^{-8h/n}$ (e as intermediárias para
#   outros números de cabeças); inclinações geométricas dão às cabeças alcances geométricos,
#   como comprimentos de onda geométricos dão aos pares da tabela senoidal as suas escalas.
# - T5: um número aprendido por cabeça e bucket; buckets exatos para as distâncias mais
#   próximas, faixas logarítmicas mais longe e um só bucket para tudo além (a partir de 91
#   com 32 buckets e `max_distance` 128).
# - NoPE: nenhuma posição; a máscara causal ainda deixa um decoder contar. O Llama 4 e o
#   SmolLM3 o usam em uma a cada quatro camadas, o Cohere 2 nas suas camadas de atenção
#   completa (`rope.layer_plan`).
# - Treinado com 16 tokens e testado com 128, o ALiBi manteve a sua acurácia, o viés do T5
#   perdeu parte dela, o RoPE mais, e as tabelas aprendida e senoidal caíram abaixo de
#   nenhuma posição.
# - O xPos é o RoPE com um decaimento por par, $\zeta_j^{\,(n - m)/512}$ (`rope.xpos_cos_sin`);
#   KERPLE, FIRE e CoPE aprendem os seus vieses ou posições, então o posenc não tem uma
#   fórmula fixa deles a que corresponder.
#
# ## Exercícios
#
# Cada verificação diz o que está errado. Quando você travar, `nb12.<exercise>.hint()` dá
# uma dica e `nb12.<exercise>.solution()` imprime o código de referência.

# %%
from posenc.exercises import nb12  # noqa: E402

# %% [markdown]
# ### Exercício 1 · As inclinações do ALiBi para qualquer número de cabeças
#
# Escreva `slopes(num_heads)` com NumPy (sem `biases.alibi_slopes`): as inclinações da
# maior potência de dois $n \le$ `num_heads`, $2^{-8h/n}$ para $h = 1..n$, e depois as
# primeiras `num_heads - n` de $2^{-8h/(2n)}$ para $h = 1, 3, 5, \dots$ O rascunho tem um erro.

# %%
def slopes(num_heads):
    n = 2 ** int(np.log2(num_heads))
    first = 2.0 ** (-8 * np.arange(n) / n)
    between = 2.0 ** (-8 * np.arange(1, 2 * n, 2) / (2 * n))
    return np.concatenate([first, between[: num_heads - n]])


print(nb12.alibi_slopes.check(slopes))

# %% [markdown]
# ### Exercício 2 · Os buckets do T5 nas duas direções
#
# Construa os buckets do encoder a partir dos do decoder: `relative_position_bucket(-abs(r),
# bidirectional=False, num_buckets=num_buckets // 2, ...)` põe a distância $|r|$ num bucket
# entre metade dos buckets, e as keys depois da query ($r > 0$) ficam com a outra metade.
# Complete `both_ways(relative_position, num_buckets, max_distance)`; a verificação compara
# com `bidirectional=True`.

# %%
def both_ways(relative_position, num_buckets, max_distance):
    distance = np.abs(relative_position)
    return biases.relative_position_bucket(-distance, bidirectional=False, num_buckets=num_buckets // 2,
                                           max_distance=max_distance)


print(nb12.both_ways.check(both_ways))

# %% [markdown]
# ### Exercício 3 · O viés causal do ALiBi à mão
#
# Escreva `causal_alibi(num_heads, length)`: o viés `(num_heads, length, length)`
# $-m_h\,(i - j)$ para a query $i$ e a key $j \le i$, e $-\infty$ onde a key vem depois da
# query. Use `biases.alibi_slopes` para as inclinações, e compare com a figura da seção 2.

# %%
def causal_alibi(num_heads, length):
    m = biases.alibi_slopes(num_heads)[:, None, None]
    i, j = np.arange(length)[:, None], np.arange(length)[None, :]
    return np.where(j < i, -np.inf, -m * (i - j))


print(nb12.causal_alibi.check(causal_alibi))

# %% [markdown]
# ## Verificações cruzadas
#
# As afirmações acima mais uma vez, contra o próprio código dos modelos no transformers: o
# tensor ALiBi do BLOOM e a função de buckets do T5; os números que o texto dá; as
# configurações do experimento; e o seu tempo de execução, abaixo de 20 segundos de tempo de CPU.

# %%
# Cross-checks 1: BLOOM's alibi (slope * key position) gives posenc's attention weights; T5's buckets are T5's.
from transformers.models.bloom.modeling_bloom import build_alibi_tensor  # noqa: E402
from transformers.models.t5.modeling_t5 import T5Attention  # noqa: E402

theirs = build_alibi_tensor(torch.ones(1, length), heads, torch.float32)  # (heads, 1, length)
np.testing.assert_allclose(theirs[:, 0].numpy(), bloom[:, 0].numpy(), rtol=1e-6)
for bidirectional in (True, False):
    t5_buckets = T5Attention._relative_position_bucket(torch.as_tensor(relative), bidirectional=bidirectional)
    np.testing.assert_array_equal(t5_buckets.numpy(), biases.relative_position_bucket(relative, bidirectional=bidirectional))
# 2. Section 2's numbers: the far corners, the ranges, the slopes halving.
assert alibi16[0, 15, 0] == -7.5 and -0.06 < alibi16[7, 15, 0] < 0
assert half_weight[:3].round(1).tolist() == [1.4, 2.8, 5.5] and round(half_weight[7]) == 177
assert np.all(slopes8[1:] / slopes8[:-1] == 0.5)
cumulative = by_distance.cumsum(axis=1)  # the weight of the nearest k + 1 keys; 512 are a long past for heads 0..5
assert all(cumulative[h, int(half_weight[h]) - 1] < 0.5 <= cumulative[h, int(half_weight[h])] for h in range(6))

# %%
# Cross-checks 3: section 3's buckets: 8 span 8..90, the widest is bucket 14 with 27 distances.
widths = np.diff(np.r_[starts, 91])
assert starts[8] == 8 and widths.max() == 27 and np.argmax(widths) == 14
assert biases.relative_position_bucket(-10**6) == 15  # a million alike
causal_back = biases.relative_position_bucket(-distance, bidirectional=False)
assert (causal_back[:16] == distance[:16]).all() and (biases.relative_position_bucket(distance[1:], bidirectional=False) == 0).all()
# 4. The miniature T5: every distance from 15 on in the last of 16 buckets, 14 in the one before.
mini = biases.relative_position_bucket(-np.arange(300), bidirectional=False, num_buckets=16, max_distance=16)
assert (mini[15:] == 15).all() and mini[14] == 14
# 5. Section 5's settings and run: NoPE 0.25 below the best, learned and sinusoidal below NoPE at 8x, RoPE at 2x.
decoder = lessons.TinyDecoder("t5")
assert (len(decoder.layers), decoder.heads, decoder.d_model, decoder.num_buckets, decoder.max_distance) == (1, 8, 64, 16, 16)
run = inspect.signature(lessons.train_short_test_long).parameters
assert [run[name].default for name in ("train_length", "steps", "batch_size", "lr", "test_size")] == [16, 100, 32, 0.02, 64]
assert run["multiples"].default == (1, 2, 4, 8) and lessons.MARKOV_KEEP == 0.85
assert at_train["none"] < best - 0.25 and max(at_8x["learned"], at_8x["sinusoidal"]) < at_8x["none"]
assert results["rope"][1] > results["rope"][0] - 0.1 and results["rope"][2] < results["rope"][0] - 0.2
assert experiment_seconds < 20
# 6. xPos: every zeta below 1, the fastest pair's the smallest.
assert np.all(zeta < 1) and np.all(np.diff(zeta) > 0)

# %%
# NBVAL_IGNORE_OUTPUT
print(f"The experiment took {experiment_seconds:.0f} s, the whole notebook {time.perf_counter() - started:.0f} s.")
