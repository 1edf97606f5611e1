# %% [markdown]
# # 07 · A codificação senoidal dentro de um Transformer minúsculo, treinado em PyTorch e em Keras
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/posenc-org/posenc/blob/main/notebooks/pt_BR/07_in_a_transformer.ipynb)
#
# Por que somar uma tabela de senos e cossenos aos embeddings, afinal? Porque, sem ela, um
# Transformer não consegue distinguir uma ordem da sua entrada de outra. Mostramos isso
# diretamente numa camada de encoder e depois treinamos um Transformer minúsculo numa tarefa
# que depende inteiramente da ordem, de três jeitos: sem posições, com embeddings
# posicionais aprendidos e com a codificação senoidal. Em seguida, testamos os modelos
# treinados em sequências mais longas do que qualquer uma que eles viram e repetimos a
# comparação em Keras. Os modelos são pequenos o bastante para treinar na CPU de um
# laptop.
#
# **Pergunta:** Por que um Transformer precisa de posições, afinal, e o que a tabela senoidal faz por um modelo pequeno treinado?
#
# **Você será capaz de:**
# - mostrar que a autoatenção sem posições é equivariante a permutações e que somar a tabela quebra essa simetria;
# - somar a tabela a um lote de embeddings com a escala $\sqrt{d_{model}}$;
# - comparar Transformers minúsculos treinados sem posições, com posições aprendidas e com posições senoidais, em PyTorch e em Keras;
# - dizer o que uma fórmula definida em todas as posições oferece, e o que não oferece, além do comprimento de treino.
#
# **Pré-requisitos:** notebooks 01 e 02 · **Tempo:** cerca de 40 minutos

# %%
# On Colab, install posenc from GitHub; elsewhere `make lab` has already installed it.
import sys

if "google.colab" in sys.modules:
    # %pip install --quiet "posenc @ git+https://github.com/posenc-org/posenc@main"

# %% [markdown]
# Uma única thread e algoritmos determinísticos fazem cada execução numa mesma máquina se
# repetir exatamente; o relógio mede o tempo de execução deste notebook, impresso no final.

# %%
# %matplotlib inline
import inspect
import time

import matplotlib.pyplot as plt
import numpy as np
import torch
from torch import nn

import posenc.torch
from posenc import lessons
from posenc.lessons import (
    BATCH, IGNORE, STEPS, TRAIN_LENGTH, VOCAB, LearnedPositions, accuracy, copy_previous_task, first_step_above,
    order_blind_ceiling, predict, train,
)

torch.set_num_threads(1)
torch.use_deterministic_algorithms(True)
torch.manual_seed(0)
started = time.perf_counter()

# %% [markdown]
# ## 1. Sem posições, a ordem é invisível
#
# Uma camada de encoder do Transformer (o `nn.TransformerEncoderLayer` do PyTorch) mistura
# os vetores de uma sequência por [autoatenção](https://d2l.ai/chapter_attention-mechanisms-and-transformers/self-attention-and-positional-encoding.html)
# (self-attention): a saída de cada vetor é uma média ponderada de todos os vetores, com
# pesos que vêm da comparação dos vetores entre si. Depois ela transforma cada vetor
# separadamente. Nada nela sabe onde um vetor está. Então, se embaralharmos a entrada, a
# saída sai embaralhada do mesmo jeito: a camada é
# [*equivariante a permutações*](https://en.wikipedia.org/wiki/Equivariant_map),
# $f(x_{\sigma}) = f(x)_{\sigma}$ para toda reordenação $\sigma$. (Equivariante, não
# *invariante*: as saídas mudam, sim; elas se movem junto com os seus tokens.) Verificamos
# isso num lote aleatório de 2 sequências de 10 vetores, em modo de avaliação (eval) e sem
# dropout, para que a camada seja uma função comum.

# %%
D_MODEL = 32
layer = nn.TransformerEncoderLayer(D_MODEL, nhead=4, dim_feedforward=64, dropout=0.0, batch_first=True).eval()
x = torch.randn(2, 10, D_MODEL)
shuffle = torch.tensor([3, 7, 0, 9, 1, 5, 8, 2, 6, 4])

with torch.no_grad():
    out, out_of_shuffled = layer(x), layer(x[:, shuffle])
torch.testing.assert_close(out_of_shuffled, out[:, shuffle])  # layer(shuffled x) == shuffled layer(x)

# %% [markdown]
# Os dois lados coincidem a menos do erro de arredondamento (as somas dentro da atenção
# são feitas em outra ordem), dentro da tolerância de float32 de
# `torch.testing.assert_close`: $10^{-5}$ mais $1.3 \cdot 10^{-6}$ do valor. Somar
# `posenc.torch.PositionalEncoding` (notebook 02) antes quebra a simetria: depois do
# embaralhamento, o vetor que agora está na posição 0 recebe o código da posição 0, não o
# do lugar de onde veio. Embaralhar os tokens agora muda o que a camada calcula, e muito
# mais do que o arredondamento: em mais de 0.1, dez mil vezes aquela tolerância.

# %%
add_positions = posenc.torch.PositionalEncoding(D_MODEL)
with torch.no_grad():
    out, out_of_shuffled = layer(add_positions(x)), layer(add_positions(x[:, shuffle]))
largest_change = (out_of_shuffled - out[:, shuffle]).abs().max().item()
print(f"largest change between layer(shuffled x) and shuffled layer(x): {largest_change:.1f}")
assert largest_change > 0.1, "more than round-off"

# %% [markdown]
# ## 2. Uma tarefa que precisa de ordem: copiar o token anterior
#
# Cada entrada é uma sequência de 12 tokens aleatórios entre 16; em cada posição, o modelo
# precisa produzir o token que está uma casa à esquerda. A posição 0 não tem vizinho à
# esquerda, então não conta na pontuação (o seu alvo é `IGNORE`, que a loss ignora). O mesmo
# gerador do NumPy alimenta os modelos em PyTorch e em Keras.
#
# Essa tarefa e as suas funções auxiliares ficam em `posenc.lessons` (a estrutura de apoio
# das lições, separada da API da biblioteca), para que o notebook 08 possa rodar a mesma
# tarefa com RoPE: `copy_previous_task` gera os dados, `accuracy` pontua as previsões,
# `order_blind_ceiling` é o melhor que um modelo cego à ordem consegue fazer (abaixo),
# `train` e `predict` executam um modelo, `first_step_above` lê uma curva de aprendizado e
# `LearnedPositions` é a tabela de posições aprendida. As constantes `VOCAB`,
# `TRAIN_LENGTH` e `IGNORE` valem 16, 12 e -100. Veja como os dados são gerados (as
# primeiras linhas verificam os argumentos):

# %%
print(inspect.getsource(lessons.copy_previous_task))

# %%
assert (VOCAB, TRAIN_LENGTH, IGNORE) == (16, 12, -100)
tokens, targets = copy_previous_task(np.random.default_rng(0), 1, TRAIN_LENGTH)
print("tokens: ", tokens[0])
print("targets:", targets[0])

# %% [markdown]
# Sem posições, um modelo vê em cada posição o seu próprio token e o *saco* (bag) de todos
# os tokens, nunca a ordem deles. O seu melhor palpite para o vizinho da esquerda é o mais
# frequente dos outros tokens do saco, que acerta com probabilidade (contagem desse token) /
# (comprimento - 1). Tiramos a média disso num conjunto de teste: esse é o teto de qualquer
# modelo cego à ordem: acima do $1/16$ de um chute aleatório (o saco entrega os candidatos),
# mas abaixo de meio. `order_blind_ceiling` o calcula com uma contagem one-hot dos tokens de
# cada sequência; `accuracy` é a fração das posições pontuadas que foram previstas
# corretamente.

# %%
test_sets = {n: copy_previous_task(np.random.default_rng(n), 1000, n) for n in [TRAIN_LENGTH, 24, 48]}
ceiling = order_blind_ceiling(test_sets[TRAIN_LENGTH][0])
print(f"order-blind ceiling at length {TRAIN_LENGTH}: {ceiling:.2f}, a random guess: {1 / VOCAB:.2f}")
assert 1 / VOCAB < ceiling < 0.5, "better than a random guess, but under a half"

# %% [markdown]
# ## Um Transformer minúsculo, de três jeitos
#
# Embedding de tokens, depois as posições, depois uma camada de encoder, depois uma cabeça
# linear sobre os 16 tokens. Só a etapa das posições muda:
#
# - `none`: nada é somado;
# - `learned`: uma tabela treinável com um vetor por posição, para as posições 0..11, como
#   fazem o BERT e o GPT-2 (`lessons.LearnedPositions`);
# - `sinusoidal`: `posenc.torch.PositionalEncoding`, fixa, definida para todas as posições.
#
# O notebook 02 mostrou por que os modelos costumam multiplicar os seus embeddings por
# $\sqrt{d_{model}}$ antes de somar a tabela: embeddings com entradas de tamanho
# $1/\sqrt{d_{model}}$ têm linhas de norma perto de 1, e as linhas da tabela, de norma
# $\sqrt{d_{model}/2}$, os afogariam. Os nossos modelos minúsculos pulam a escala, porque o
# `nn.Embedding` começa com entradas de tamanho 1: as suas linhas já têm norma perto de
# $\sqrt{32} \approx 5.7$ (um pouco menos, em média), mais que o $\sqrt{16} = 4$ da tabela.
# (O exercício 2 soma a tabela a embeddings pequenos, com a escala.)

# %%
token_rows = nn.Embedding(VOCAB, D_MODEL).weight.detach().norm(dim=1)
table_rows = posenc.torch.positional_encoding(TRAIN_LENGTH, D_MODEL).norm(dim=1)
print(f"embedding rows: norm {token_rows.mean():.1f} on average; table rows: norm {table_rows.mean():.1f}")
assert torch.allclose(table_rows, torch.tensor(4.0)), "sqrt(d_model / 2): each pair contributes sin^2 + cos^2 = 1"

# %% [markdown]
# A semente (seed) é reiniciada antes de construir cada modelo; assim os três compartilham
# o embedding de tokens, o encoder e a cabeça iniciais. Cada linha abaixo é o tamanho de um
# modelo.

# %%
COLORS = {"none": "C0", "learned": "C1", "sinusoidal": "C2"}
POSITIONS = {
    "none": nn.Identity,
    "learned": lambda: LearnedPositions(D_MODEL, TRAIN_LENGTH),
    "sinusoidal": lambda: posenc.torch.PositionalEncoding(D_MODEL),
}


def tiny_transformer(positions, seed=0):
    torch.manual_seed(seed)
    embed = nn.Embedding(VOCAB, D_MODEL)
    encoder_layer = nn.TransformerEncoderLayer(D_MODEL, 4, 64, dropout=0.0, batch_first=True)
    head = nn.Linear(D_MODEL, VOCAB)
    return nn.Sequential(embed, POSITIONS[positions](), encoder_layer, head)


models = {name: tiny_transformer(name) for name in POSITIONS}
for name, model in models.items():
    print(f"{name:>10}: {sum(p.numel() for p in model.parameters()):,} parameters")

# %% [markdown]
# Uma única função de treino, `lessons.train`, serve para os três: 300 passos (`STEPS`) de
# Adam em lotes de 64 (`BATCH`) sequências novas (as mesmas 19 200 sequências, na mesma
# ordem, para todos os modelos). Ela devolve a loss e a acurácia em cada lote, para as
# curvas de aprendizado; `lessons.predict` executa um modelo treinado em modo de avaliação.

# %%
train_tokens, train_targets = copy_previous_task(np.random.default_rng(1), STEPS * BATCH, TRAIN_LENGTH)
assert STEPS * BATCH == len(train_tokens) == 19_200

# %% [markdown]
# O treino imprime uma linha a cada 100 passos. As losses exatas dependem do arredondamento
# de ponto flutuante da plataforma; por isso a saída desta célula não é comparada pelos
# testes; as conclusões são verificadas por asserts mais abaixo.

# %%
# NBVAL_IGNORE_OUTPUT
curves = {}
for name, model in models.items():
    print(name)
    curves[name] = train(model, train_tokens, train_targets, steps=STEPS, report_every=100)

# %% [markdown]
# ## Resultados no comprimento de treino
#
# Acurácia em 1000 sequências novas de comprimento 12, ao lado do teto cego à ordem, e o
# primeiro passo de treino em que um lote teve mais de 90% de acertos (`first_step_above`):

# %%
tokens, targets = test_sets[TRAIN_LENGTH]
results = {name: accuracy(predict(model, tokens), targets) for name, model in models.items()}
reached = {name: first_step_above(curves[name][1]) for name in models}

# %%
# NBVAL_IGNORE_OUTPUT
for name, value in results.items():
    print(f"{name:>10}: {value:.2f}   above 0.9 from step {reached[name]}")
print(f"{'ceiling':>10}: {ceiling:.2f}   (best possible without order)")

# %% [markdown]
# Os dois métodos de posição resolvem a tarefa (acima de 0.9 no conjunto de teste).

# %%
assert min(results["sinusoidal"], results["learned"]) > 0.9

# %% [markdown]
# Sem posições, o modelo fica abaixo de 0.5, a menos de 0.05 do teto cego à ordem (ele não
# consegue fazer melhor, e encontra mais ou menos o melhor que uma regra cega à ordem
# consegue), e nunca acerta mais de 90% de um lote de treino (verificado no final). Ele
# continua equivariante depois do treino: os seus logits para uma entrada embaralhada são os
# seus logits para a entrada, embaralhados; então a ordem não tem como chegar às suas
# previsões.

# %%
shuffle = np.random.default_rng(2).permutation(TRAIN_LENGTH)
with torch.no_grad():
    logits = models["none"](torch.from_numpy(tokens))
    torch.testing.assert_close(models["none"](torch.from_numpy(tokens[:, shuffle])), logits[:, shuffle])

# %% [markdown]
# Aqui a tabela aprendida passou de 0.9 num lote antes da senoidal. Uma execução é um
# único sorteio dos pesos iniciais; então repetimos a corrida com outras três sementes para
# os pesos iniciais (os mesmos lotes): o modelo aprendido treina até o seu primeiro lote
# acima de 0.9, e o senoidal pelo mesmo número de passos. Em todas as execuções, a tabela
# aprendida chega primeiro. Um motivo plausível: ela pode ser moldada para esta tarefa
# específica, enquanto os vetores senoidais são fixos e as camadas precisam aprender a
# lê-los.

# %%
# NBVAL_IGNORE_OUTPUT
race = {}
for seed in (1, 2, 3):
    learned = tiny_transformer("learned", seed)
    _, learned_accuracies = train(learned, train_tokens, train_targets, steps=STEPS, stop_above=0.9)
    learned_step = first_step_above(learned_accuracies)  # None if never (checked at the end)
    sinusoidal = tiny_transformer("sinusoidal", seed)
    _, sinusoidal_accuracies = train(sinusoidal, train_tokens, train_targets, steps=learned_step or STEPS)
    race[seed] = learned_step, first_step_above(sinusoidal_accuracies)
print("seed: (learned model's first step above 0.9, sinusoidal model's by then)")
print(race)
assert all(sinusoidal is None for _, sinusoidal in race.values()), "the learned table first in every run"

# %% [markdown]
# As curvas de aprendizado (a loss e a acurácia em cada lote de treino) mostram o mesmo
# quadro enquanto ele se forma.

# %%
fig, (left, right) = plt.subplots(1, 2, figsize=(11, 3.5))
for name, (losses, accuracies) in curves.items():
    left.plot(losses, color=COLORS[name], label=name)
    right.plot(accuracies, color=COLORS[name], label=name)
right.axhline(ceiling, color="gray", linestyle="--", label="order-blind ceiling")
left.set(xlabel="step", ylabel="loss", title="training loss")
right.set(xlabel="step", ylabel="accuracy", title="accuracy on the training batch", ylim=(0, 1.05))
right.legend(loc="center right")
plt.show()

# %% [markdown]
# O que o modelo senoidal aprendeu a olhar? A sua única camada de atenção, com média sobre
# as suas 4 cabeças e sobre as 1000 sequências de teste: a linha $p$ mostra como a posição
# $p$ distribui a sua atenção pelas posições da sequência. A linha clara logo abaixo da
# diagonal é $p \to p - 1$, o token a copiar.

# %%
sinusoidal_model = models["sinusoidal"].eval()
with torch.no_grad():
    stream = sinusoidal_model[1](sinusoidal_model[0](torch.from_numpy(test_sets[TRAIN_LENGTH][0])))
    _, weights = sinusoidal_model[2].self_attn(stream, stream, stream, need_weights=True)
attention = weights.mean(0).numpy()  # (query position, key position), averaged over heads and sequences

fig, ax = plt.subplots(figsize=(4.8, 4))
image = ax.imshow(attention, cmap="viridis", vmin=0)
ax.set(xlabel="key position (attended to)", ylabel="query position", title="attention of the sinusoidal model")
fig.colorbar(image, ax=ax, label="weight")
plt.show()

# %% [markdown]
# Toda posição $p \ge 1$ dá o seu maior peso a $p - 1$, e pelo menos 0.3 da sua atenção,
# mais de três vezes o $1/12 \approx 0.08$ de uma distribuição uniforme (verificado no
# final).

# %%
previous = np.diagonal(attention, offset=-1)  # attention[p, p - 1] for p = 1 .. 11
assert np.array_equal(attention[1:].argmax(axis=1), np.arange(TRAIN_LENGTH - 1)), "largest weight on p - 1"

# %% [markdown]
# ## 3. Sequências mais longas que no treino
#
# Agora, sequências de 24 e 48 tokens, duas e quatro vezes o comprimento de treino. A
# tabela aprendida não tem linha para a posição 12 nem para as seguintes; então o modelo
# `learned` nem consegue rodar nelas: a consulta à tabela falha. Registramos isso em vez de
# inventar vetores para ele. A tabela senoidal é definida em todas as posições; então esse
# modelo roda; se ele acerta é o que medimos.

# %%
try:
    predict(models["learned"], test_sets[24][0])
except IndexError:
    print(f"learned: IndexError, the table has rows for positions 0..{TRAIN_LENGTH - 1} only")
else:
    raise AssertionError("the learned table should not cover position 12")

# %% [markdown]
# Para os outros dois modelos, separamos a acurácia por posição: as posições abaixo de 12,
# que o modelo viu no treino, e as posições 12 em diante, que ele nunca viu; e, para o
# comprimento 48, as posições 24 em diante à parte. O teto cego à ordem também é calculado
# em cada comprimento.

# %%
def accuracy_by_position(model, length):
    """(accuracy at each position 1..length-1, accuracy over positions < TRAIN_LENGTH, over the rest)."""
    tokens, targets = test_sets[length]
    correct = predict(model, tokens)[:, 1:] == targets[:, 1:]
    seen = TRAIN_LENGTH - 1
    return correct.mean(axis=0), correct[:, :seen].mean(), correct[:, seen:].mean()


longer = {(name, n): accuracy_by_position(models[name], n) for name in ["none", "sinusoidal"] for n in [24, 48]}
ceilings = {n: order_blind_ceiling(test_sets[n][0]) for n in [24, 48]}
far_48 = longer["sinusoidal", 48][0][2 * TRAIN_LENGTH - 1 :].mean()  # positions 24..47

# %%
# NBVAL_IGNORE_OUTPUT
def seen_unseen(name, n):
    return "—" if name == "learned" else f"{longer[name, n][1]:.2f} | {longer[name, n][2]:.2f}"


print(f"{'':>10}  {'length 12':>9}  {'24: seen | unseen':>17}  {'48: seen | unseen':>17}")
for name in POSITIONS:
    print(f"{name:>10}  {results[name]:9.2f}  {seen_unseen(name, 24):>17}  {seen_unseen(name, 48):>17}")
print(f"{'ceiling':>10}  {ceiling:9.2f}  {ceilings[24]:17.2f}  {ceilings[48]:17.2f}")
print(f"sinusoidal at positions 24..47 of length 48: {far_48:.2f}")

# %% [markdown]
# O que o modelo senoidal faz além do comprimento de treino: nas posições que viu, ele
# continua preciso em sequências duas vezes mais longas (acima de 0.9); nas posições que
# nunca viu, cai abaixo de 0.5, pelo menos 0.4 abaixo do que faz nas já vistas. Com quatro
# vezes o comprimento, as posições vistas também ficam menos precisas (agora elas dividem a
# sua atenção com 36 posições que o modelo nunca encontrou no treino). A partir da posição
# 24, duas vezes o comprimento de treino, o modelo senoidal não faz melhor que o palpite
# cego à ordem (fica a menos de 0.05 dele). A fórmula se estende a qualquer posição; o que
# os pesos treinados fazem com os vetores novos é outra história. Sem posições, o modelo
# fica a menos de 0.05 do teto (mais baixo) dos sacos mais longos. As verificações cruzadas
# no final confirmam cada uma dessas afirmações.

# %%
seen_24, unseen_24 = longer["sinusoidal", 24][1:]
seen_48, unseen_48 = longer["sinusoidal", 48][1:]
assert seen_24 > 0.9 > 0.5 > unseen_24 and unseen_24 < seen_24 - 0.4, "seen positions right, unseen ones not"

# %% [markdown]
# Acurácia em cada posição das sequências mais longas; a linha tracejada marca o fim do
# comprimento de treino.

# %%
fig, ax = plt.subplots(figsize=(9, 3.5))
for (name, n), (by_position, _, _) in longer.items():
    style = "-" if n == 48 else ":"
    ax.plot(range(1, n), by_position, style, color=COLORS[name], marker=".", label=f"{name}, length {n}")
ax.axvline(TRAIN_LENGTH - 0.5, color="gray", linestyle="--", label="training length")
ax.set(xlabel="position", ylabel="accuracy", title="copy the previous token, longer sequences", ylim=(0, 1.05))
ax.legend()
plt.show()

# %% [markdown]
# ## 4. A mesma comparação em Keras
#
# Uma versão mais curta: a mesma tarefa e o mesmo conjunto de treino, um modelo em Keras 3
# com a mesma forma, construído uma vez sem posições e uma vez com
# `posenc.tensorflow.PositionalEncoding`. O TensorFlow lê duas variáveis de ambiente ao ser
# carregado; por isso elas são definidas antes do primeiro `import tensorflow`.

# %%
import os

# TensorFlow's C++ start-up log lines go to stderr and would land in the cell output;
# oneDNN off keeps the round-off of sums and matmuls the same from run to run.
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")

import keras
import tensorflow as tf

import posenc.tensorflow

tf.config.threading.set_intra_op_parallelism_threads(1)
tf.config.threading.set_inter_op_parallelism_threads(1)
tf.config.experimental.enable_op_determinism()

# %% [markdown]
# O bloco do encoder é escrito por extenso: atenção, soma e normalização, uma rede
# feed-forward de duas camadas, soma e normalização. A loss ignora os alvos `IGNORE`, como no PyTorch.

# %%
def keras_transformer(sinusoidal):
    keras.utils.set_random_seed(0)
    tokens = keras.Input((None,), dtype="int32")
    x = keras.layers.Embedding(VOCAB, D_MODEL)(tokens)
    if sinusoidal:
        x = posenc.tensorflow.PositionalEncoding(D_MODEL)(x)
    x = keras.layers.LayerNormalization()(x + keras.layers.MultiHeadAttention(4, D_MODEL // 4)(x, x))
    hidden = keras.layers.Dense(64, activation="relu")(x)
    x = keras.layers.LayerNormalization()(x + keras.layers.Dense(D_MODEL)(hidden))
    model = keras.Model(tokens, keras.layers.Dense(VOCAB)(x))
    loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True, ignore_class=IGNORE)
    model.compile(keras.optimizers.Adam(3e-3), loss)
    return model


keras_models = {"none": keras_transformer(False), "sinusoidal": keras_transformer(True)}
for model in keras_models.values():
    model.fit(train_tokens, train_targets, batch_size=BATCH, epochs=1, shuffle=False, verbose=0)
print("trained:", list(keras_models))

# %%
# NBVAL_IGNORE_OUTPUT
keras_results = {}
for name, model in keras_models.items():
    for n in [TRAIN_LENGTH, 24]:
        tokens, targets = test_sets[n]
        keras_results[name, n] = accuracy(model.predict(tokens, batch_size=1000, verbose=0).argmax(-1), targets)
    print(f"{name:>10}: length 12 {keras_results[name, 12]:.2f}, length 24 {keras_results[name, 24]:.2f}")

# %% [markdown]
# O Keras concorda com o PyTorch: a codificação senoidal resolve a tarefa no comprimento de
# treino (acima de 0.9), sem posições o modelo fica a menos de 0.05 do teto cego à ordem
# (verificado no final), e o modelo senoidal fica mais de 0.2 menos preciso em sequências
# duas vezes mais longas.

# %%
assert keras_results["sinusoidal", 24] < keras_results["sinusoidal", 12] - 0.2, "worse past the training length"

# %% [markdown]
# O tempo desta execução, dos imports até aqui (depende da máquina):

# %%
# NBVAL_IGNORE_OUTPUT
print(f"{time.perf_counter() - started:.0f} s")

# %% [markdown]
# ## Resumo
#
# - Uma camada de encoder do Transformer sem posições é equivariante a permutações:
#   entrada embaralhada, saída embaralhada do mesmo jeito. Somar
#   `posenc.torch.PositionalEncoding` quebra isso, e é exatamente para isso que ela serve.
# - Em "copiar o token anterior", um Transformer minúsculo sem posições não consegue superar
#   o melhor palpite cego à ordem (o teto calculado acima); embeddings posicionais
#   aprendidos e a codificação senoidal passam de 0.9 em 300 passos, os aprendidos mais
#   cedo em cada uma das quatro sementes que testamos. A atenção do modelo senoidal segue
#   $p \to p - 1$.
# - Além do comprimento de treino, os embeddings aprendidos simplesmente não têm vetor. O
#   modelo senoidal roda, continua preciso nas posições em que treinou (com o dobro do
#   comprimento) e vai mal nas posições que nunca viu: uma codificação definida não é uma
#   generalização aprendida.
# - O Keras com `posenc.tensorflow.PositionalEncoding` mostra o mesmo contraste.
# - A tabela é somada aos embeddings dos tokens; com embeddings de tamanho
#   $1/\sqrt{d_{model}}$, multiplique-os antes por $\sqrt{d_{model}}$, para que a tabela não
#   os afogue.
#
# ## Exercícios
#
# Cada verificação responde "Correct!" ou diz o que está errado. Se empacar,
# `nb07.both_sides.hint()` dá uma dica e `nb07.both_sides.solution()` mostra o código de
# referência (o mesmo vale para `model_input`). Nada aqui treina: cada verificação roda num
# instante.
#
# ### Exercício 1 · Equivariante, não invariante
#
# `nb07.layer` e `nb07.x` são a camada de encoder e o lote da seção 1, feitos com a mesma
# semente. Escreva `both_sides(order)`: para uma reordenação `order` das 10 posições,
# devolva os dois lados da afirmação de equivariância, a camada aplicada ao lote embaralhado
# e a saída da camada embaralhada do mesmo jeito. A verificação roda a função para três
# ordens; quando os dois lados estiverem certos, eles são iguais. O rascunho abaixo enuncia
# outra propriedade que não a equivariância: a verificação diz qual.

# %%
from posenc.exercises import nb07

layer, x = nb07.layer, nb07.x  # an encoder layer in eval mode, a batch (2, 10, 32)


def both_sides(order):
    with torch.no_grad():
        out_of_shuffled = layer(x[:, order])  # the layer of the shuffled batch
        shuffled_out = layer(x)  # the layer's output, shuffled the same way
    return out_of_shuffled, shuffled_out


# %%
nb07.both_sides.check(both_sides)

# %% [markdown]
# ### Exercício 2 · A entrada do modelo: embeddings escalados mais a tabela
#
# `nb07.embeddings` é um lote de 4 sequências de 12 embeddings de tokens de largura 32,
# com entradas de tamanho perto de $1/\sqrt{32}$ (como o fairseq os inicializa). Construa o
# que a primeira camada recebe: os embeddings vezes $\sqrt{d_{model}}$, mais a tabela
# senoidal, com a linha da posição $p$ somada ao token na posição $p$ de cada sequência. O
# rascunho tem um erro, um que roda sem dar erro.

# %%
import math

embeddings = nb07.embeddings  # (batch, length, d_model) = (4, 12, 32)
model_input = embeddings * math.sqrt(D_MODEL) + posenc.torch.positional_encoding(len(embeddings), D_MODEL)[:, None, :]

# %%
nb07.model_input.check(model_input)

# %% [markdown]
# ## Verificações cruzadas
#
# As afirmações restantes do texto, verificadas num só lugar.

# %%
# Cross-checks of the claims above.
# Section 2: the no-positions model stays below 0.5, within 0.05 of the order-blind ceiling,
# and no training batch is ever above 0.9; the learned model reached 0.9 before the sinusoidal one.
assert results["none"] < 0.5 and abs(results["none"] - ceiling) < 0.05
assert reached["none"] is None and reached["learned"] < reached["sinusoidal"]
assert all(learned is not None for learned, _ in race.values()), "the learned model passed 0.9 in each race"
# The attention of p to p - 1 is at least 0.3, more than three times an even spread (1/12).
assert previous.min() > 0.3 > 3 / TRAIN_LENGTH
# Section 3: unseen positions below 0.5 at length 48 too; the seen ones less accurate at 48 than at 24;
# positions 24..47 of length 48 at the order-blind ceiling; no positions at the ceiling of each length.
assert unseen_48 < 0.5 and seen_48 < seen_24
assert abs(far_48 - ceilings[48]) < 0.05
for n in [24, 48]:
    assert abs(longer["none", n][1] - ceilings[n]) < 0.05 and abs(longer["none", n][2] - ceilings[n]) < 0.05
# Section 4: Keras, at the training length.
assert keras_results["sinusoidal", 12] > 0.9
assert keras_results["none", 12] < 0.5 and abs(keras_results["none", 12] - ceiling) < 0.05
# The tiny models' embeddings have rows of a norm above the table's 4.
assert token_rows.mean() > table_rows.max()
# Exercise 1 works on the layer and batch of section 1: the same seed, the same recipe, the same numbers.
torch.manual_seed(0)
layer_1 = nn.TransformerEncoderLayer(D_MODEL, nhead=4, dim_feedforward=64, dropout=0.0, batch_first=True)
x_1 = torch.randn(2, 10, D_MODEL)
assert torch.equal(x_1, nb07.x) and all(torch.equal(a, b) for a, b in zip(layer_1.state_dict().values(), nb07.layer.state_dict().values()))
