# %% [markdown]
# # 11 · Codificação posicional em JAX
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/posenc-org/posenc/blob/main/notebooks/pt_BR/11_jax.ipynb)
#
# A mesma tabela mais uma vez, agora em `jax.numpy`. O notebook 01 explica cada passo (os
# denominadores compartilhados por um seno e o seu cosseno, a coluna de posições, a
# intercalação); aqui só os percorremos rapidamente em JAX e depois usamos o que o JAX
# acrescenta: `jax.jit` compila uma função, `jax.vmap` a mapeia sobre um lote, e os módulos
# Flax NNX colocam a codificação dentro de um modelo. Tudo é conferido com as tabelas em
# NumPy do posenc. O JAX calcula em float32, a menos que se peça outra coisa (o seu modo x64
# vem desligado por padrão), e nós o mantemos assim.
#
# **Pergunta:** O que muda quando a codificação posicional é escrita para o JAX, cujos arrays não podem ser alterados no lugar e cujas funções compiladas fixam todos os formatos?
#
# **Você será capaz de:**
# - preencher as colunas de um array JAX com `.at[...].set()`, onde o NumPy atribuía diretamente a elas;
# - compilar uma função com `jax.jit`, marcar como estáticos os argumentos que fixam um formato e prever quantas vezes ela compila;
# - transformar uma função de uma posição numa função de um lote com `jax.vmap`;
# - colocar os módulos Flax NNX do posenc dentro de um modelo.
#
# **Pré-requisitos:** notebooks 01 e 08 · **Tempo:** cerca de 40 minutos

# %%
# On Colab, install posenc from GitHub; elsewhere `make lab` has already installed it.
import sys

if "google.colab" in sys.modules:
    # %pip install --quiet "posenc @ git+https://github.com/posenc-org/posenc@main"

# %%
# %matplotlib inline
import time

import jax
import jax.numpy as jnp
import matplotlib.pyplot as plt
import numpy as np
from flax import nnx

import posenc
import posenc.jax
from posenc.exercises import nb11

np.set_printoptions(precision=6, suppress=True)
started = time.process_time()  # CPU time: what a busy machine does not stretch
print("x64 enabled:", jax.config.jax_enable_x64)

# %% [markdown]
# ## 1. Os passos da aula em `jax.numpy`
#
# Dez posições, largura 6, float32, como na aula de NumPy do notebook 01: um denominador por
# par, uma coluna de posições, os quocientes como ângulos, senos e cossenos, e os dois
# empilhados para que se intercalem.

# %%
sequence_length, d_model = 10, 6
denominators = jnp.power(10000.0, jnp.arange(0, d_model, 2, dtype=jnp.float32) / d_model)
positions = jnp.arange(sequence_length, dtype=jnp.float32)[:, None]
angles = positions / denominators
table = jnp.stack([jnp.sin(angles), jnp.cos(angles)], axis=-1).reshape(sequence_length, d_model)
print(denominators)
print(table.dtype, table.shape)
print(np.asarray(table[:3]))

# %% [markdown]
# A tabela concorda com a do posenc até o arredondamento de float32: dentro de $10^{-6}$,
# alguns passos de float32 para valores perto de 1 (números float32 logo abaixo de 1 estão a
# $6 \times 10^{-8}$ um do outro).

# %%
reference = posenc.positional_encoding(sequence_length, d_model)
difference = np.abs(np.asarray(table) - reference).max()
print(f"largest difference from posenc: {difference:.1e}")
assert difference < 1e-6

# %% [markdown]
# ### Colunas que não se podem atribuir: `.at[...].set()`
#
# A segunda aula do notebook 01 escrevia senos e cossenos diretamente em colunas alternadas,
# `pe[:, 0::2] = np.sin(...)`. Um array JAX é [imutável](https://docs.jax.dev/en/latest/_autosummary/jax.numpy.ndarray.at.html):
# a mesma linha levanta um `TypeError` cuja mensagem diz isso.

# %%
pe = jnp.zeros((sequence_length, d_model))
try:
    pe[:, 0::2] = jnp.sin(angles)
except TypeError as error:
    print(type(error).__name__, "| the message says 'immutable':", "immutable" in str(error))

# %% [markdown]
# O equivalente no JAX é `pe.at[:, 0::2].set(values)`: o mesmo índice, mas ele *devolve um
# novo array* com essas entradas substituídas e deixa `pe` como estava. Por isso, cada passo
# atribui o seu resultado a um nome. Dois passos dão a tabela da aula, igual, entrada por
# entrada, à tabela empilhada acima, e os zeros de que partimos continuam sendo zeros.

# %%
filled = pe.at[:, 0::2].set(jnp.sin(angles))
filled = filled.at[:, 1::2].set(jnp.cos(angles))
print("pe is still all zeros:", bool((pe == 0).all()))
assert bool((filled == table).all())

# %% [markdown]
# ## 2. `jit`: compilar uma vez por formato
#
# O [`jax.jit`](https://docs.jax.dev/en/latest/jit-compilation.html) *rastreia* (trace) uma
# função: ele roda o código Python uma vez com arrays abstratos, que têm formato e dtype mas
# nenhum valor, registra as operações e entrega esse registro ao compilador [XLA](https://openxla.org/xla). As chamadas
# seguintes com argumentos dos mesmos formatos e dtypes rodam o código compilado sem tocar
# no Python de novo. A receita da aula como função de posições quaisquer; a lista `traces`
# é um efeito colateral em Python, então ela só cresce quando o JAX rastreia (e, em
# seguida, compila):

# %%
traces = []


def lecture_encode(positions, d_model):
    traces.append(f"positions of shape {positions.shape}, d_model={d_model}")  # only while tracing
    denominators = jnp.power(10000.0, jnp.arange(0, d_model, 2, dtype=jnp.float32) / d_model)
    angles = positions[..., None].astype(jnp.float32) / denominators
    return jnp.stack([jnp.sin(angles), jnp.cos(angles)], axis=-1).reshape(*positions.shape, d_model)


# %% [markdown]
# Compilada como está, a função falha. Todos os argumentos são rastreados, `d_model` também,
# então ele não tem valor durante o rastreamento; mas `jnp.arange(0, d_model, 2)` precisa
# do valor dele para saber quantas entradas produz, e um formato tem de ser conhecido em
# tempo de compilação. O JAX avisa com um `ConcretizationTypeError`:

# %%
near = jnp.arange(sequence_length)
try:
    jax.jit(lecture_encode)(near, d_model)
except jax.errors.ConcretizationTypeError as error:
    print(type(error).__name__)

# %% [markdown]
# `static_argnums=1` (ou `static_argnames="d_model"`) torna o segundo argumento *estático*:
# o JAX passa o valor Python simples para o rastreamento e o embute no código compilado;
# assim, cada novo valor de um argumento estático significa um novo rastreamento. A função
# compilada dá a tabela da seção 1:

# %%
lecture_jit = jax.jit(lecture_encode, static_argnums=1)
traces.clear()
print(np.asarray(lecture_jit(near, d_model))[1])
np.testing.assert_allclose(np.asarray(lecture_jit(near, d_model)), reference, rtol=0, atol=1e-6)
print("two calls, traces:", traces)

# %% [markdown]
# Quantas vezes ela compila? As duas chamadas acima rastrearam uma vez, para dez posições e
# largura 6. Mais cinco chamadas: as mesmas posições de novo, outras posições do mesmo
# formato, doze posições (duas vezes, a partir de inícios diferentes) e uma largura de 8. Só
# uma chamada com um formato e um `d_model` ainda não vistos rastreia; `traces` diz quais:

# %%
traces.clear()
calls = [(0, 10, 6), (500, 10, 6), (0, 12, 6), (3, 12, 6), (0, 10, 8)]  # (first position, length, d_model)
for start, length, width in calls:
    lecture_jit(jnp.arange(start, start + length), width)
print(f"{len(calls)} calls, {len(traces)} traces:", *traces, sep="\n  ")
assert len(traces) == 2, "only (12, 6) and (10, 8) are new"

# %% [markdown]
# Novos *valores* saem de graça; um novo *formato* ou um novo valor estático custa um
# rastreamento e uma compilação. Um modelo sob `jit` que recebe lotes de muitos comprimentos
# compila uma vez para cada comprimento; preencher (padding) os lotes até alguns
# comprimentos fixos mantém isso sob controle.
#
# ### Precisão sob `jit`
#
# Em dez posições, a receita da aula e o posenc concordam. Bem mais adiante, não: um ângulo
# $p \cdot w$ em float32 é arredondado a cerca de $10^{-7}$ do seu tamanho, e números float32
# perto de $10^6$ estão a $1/16$ um do outro; assim, na posição $10^6$, o ângulo, e com ele o
# seno, erra por centésimos (o notebook 06 faz essa conta). O caminho do posenc em JAX nunca
# forma esse ângulo arredondado: ele conta o ângulo em meias voltas com produtos exatos em
# float32 (`posenc.engine.kernels.half_turns_float32`) e fica a menos de $2 \times 10^{-7}$ do valor
# exato para posições até $2^{24}$, tudo em float32. Comparamos os dois com a tabela em NumPy
# do posenc em float64 (a menos de $10^{-15}$ do valor exato) para mil posições perto de
# $10^6$ e largura 128.

# %%
posenc_jit = jax.jit(posenc.jax.encode, static_argnums=1)
far = jnp.arange(1_000_000, 1_001_000)
exact = posenc.encode(np.asarray(far), 128, dtype=np.float64)
lecture_error = np.abs(np.asarray(lecture_jit(far, 128), np.float64) - exact).max()
posenc_error = np.abs(np.asarray(posenc_jit(far, 128), np.float64) - exact).max()
print(f"lecture's float32 route: {lecture_error:.3f}  (float32 step near 1e6: {float(np.spacing(np.float32(1e6)))})")
print(f"posenc.jax under jit:    {posenc_error:.1e}")
assert posenc_error < 2e-7, "posenc's documented bound"

# %% [markdown]
# O caminho da aula erra por cerca de um passo de float32 do ângulo; o do posenc, por menos
# de $2 \times 10^{-7}$. E nenhum float64 aparece em lugar algum do que o `jit` compila: o
# rastreamento (o `jax.make_jaxpr` o imprime) não contém nenhum `f64`.

# %%
trace = str(jax.make_jaxpr(lambda p: posenc.jax.encode(p, 128))(far))
print("float64 in posenc's trace:", "f64" in trace)

# %% [markdown]
# Ao longo das posições, o erro do caminho em float32 cresce com o ângulo, enquanto o do
# posenc fica estável:

# %%
probes = jnp.asarray(np.unique(np.geomspace(1, 1e7, 60).astype(np.int32)))
truth = posenc.encode(np.asarray(probes), 64, dtype=np.float64)
lecture_curve = np.abs(np.asarray(lecture_jit(probes, 64), np.float64) - truth).max(axis=1)
posenc_curve = np.abs(np.asarray(posenc_jit(probes, 64), np.float64) - truth).max(axis=1)

fig, ax = plt.subplots(figsize=(7, 3.5))
ax.loglog(np.asarray(probes), np.maximum(lecture_curve, 1e-9), "o-", ms=3, label="lecture's float32 route")
ax.loglog(np.asarray(probes), np.maximum(posenc_curve, 1e-9), "s-", ms=3, label="posenc.jax (float32, jit)")
ax.set_xlabel("position")
ax.set_ylabel("largest error in a row (d = 64)")
ax.legend()
plt.show()

# %% [markdown]
# ## 3. `vmap`: escreva para um, rode num lote
#
# O [`jax.vmap`](https://docs.jax.dev/en/latest/automatic-vectorization.html) acrescenta um
# eixo de lote a uma função escrita para um único item. As funções acima já fazem
# broadcasting sobre qualquer formato de posições, então mapeá-las não mudaria nada. Eis uma
# que não faz: ela codifica uma *única* posição (um escalar) na sua linha de largura 8.

# %%
denominators_8 = jnp.power(10000.0, jnp.arange(0, 8, 2, dtype=jnp.float32) / 8)


def encode_position(position):
    """One position (a scalar) -> its row of the table, shape (8,)."""
    angles = position / denominators_8  # (4,): one angle per pair
    return jnp.stack([jnp.sin(angles), jnp.cos(angles)], axis=-1).reshape(8)


print(encode_position(3.0).shape)

# %% [markdown]
# Recebendo quatro posições de uma vez, ela nem sequer falha: quatro posições sobre quatro
# denominadores se dividem entrada por entrada (a posição $k$ pelo denominador $k$), e sai
# uma linha de 8 números que não é nenhuma linha da tabela. Já `jax.vmap(encode_position)` a
# roda uma vez por posição e empilha as linhas:

# %%
four = jnp.arange(4.0)
print("called directly:", encode_position(four).shape)
print("under vmap:     ", jax.vmap(encode_position)(four).shape)
np.testing.assert_allclose(np.asarray(jax.vmap(encode_position)(four)), posenc.encode(np.arange(4), 8), rtol=0, atol=1e-6)

# %% [markdown]
# O `vmap` se compõe. Um trecho (chunk) de um documento longo começa na sua própria posição:
# `encode_chunk` codifica um trecho de quatro posições a partir do seu início, e um segundo
# `vmap` o roda sobre os inícios de um lote. O resultado é igual ao do `lecture_encode` com
# broadcasting da seção 2 sobre as mesmas posições.

# %%
def encode_chunk(start):
    return jax.vmap(encode_position)(start + jnp.arange(4.0))


starts = jnp.asarray([0.0, 100.0, 7.0])
chunks = jax.jit(jax.vmap(encode_chunk))(starts)
print(chunks.shape)
np.testing.assert_allclose(np.asarray(chunks), np.asarray(lecture_encode(starts[:, None] + jnp.arange(4.0), 8)), rtol=0, atol=1e-6)

# %% [markdown]
# ## 4. Os módulos Flax num modelo minúsculo
#
# `posenc.jax.PositionalEncoding` é um módulo [Flax NNX](https://flax.readthedocs.io/en/latest/nnx_basics.html) com os argumentos do módulo do torch
# (`d_model`, `max_len`, `dropout`, `convention`, ...) e `rngs` para o seu dropout. A
# tabela é `module.pe`, uma variável, mas não um parâmetro; então um otimizador dos
# `nnx.Param` não mexe nela. Um modelo minúsculo: embedding, codificação posicional, uma
# camada linear.

# %%
class TinyModel(nnx.Module):
    def __init__(self, rngs):
        self.embed = nnx.Embed(num_embeddings=20, features=16, rngs=rngs)
        self.position = posenc.jax.PositionalEncoding(16, max_len=64, dropout=0.1, rngs=rngs)
        self.out = nnx.Linear(16, 20, rngs=rngs)

    def __call__(self, tokens):
        return self.out(self.position(self.embed(tokens)))


model = TinyModel(nnx.Rngs(0, dropout=1))
model.eval()  # dropout off
tokens = jnp.asarray([[3, 1, 4, 1, 5, 9, 2, 6]])
logits = nnx.jit(lambda m, t: m(t))(model, tokens)
by_hand = model.out(model.embed(tokens) + posenc.positional_encoding(8, 16))
print(logits.shape, model.position.pe[...].shape)
np.testing.assert_allclose(np.asarray(logits), np.asarray(by_hand), rtol=1e-6, atol=1e-6)

# %% [markdown]
# O modelo compilado dá o mesmo que o embedding mais a tabela em NumPy do posenc (acima), e
# os seus parâmetros são apenas os do embedding e os da camada linear:

# %%
print(sorted(nnx.state(model, nnx.Param).keys()))
assert "position" not in nnx.state(model, nnx.Param)

# %% [markdown]
# O RoPE (notebook 08) funciona do mesmo jeito: `posenc.jax.RotaryEmbedding` devolve
# `(cos, sin)` para as posições de um lote, e `posenc.jax.apply_rotary` gira as queries e
# keys (consultas e chaves) com eles. Sob `jit`, o score de uma query e de uma key depende
# apenas da distância entre elas, aqui as posições 3 e 1 contra 1 000 003 e 1 000 001.

# %%
rope = posenc.jax.RotaryEmbedding(64)
# NumPy's generator: its numbers are the same in every JAX version (jax.random's changed in 0.5).
q, k = jnp.asarray(np.random.default_rng(0).standard_normal((2, 64)), jnp.float32)


@nnx.jit
def score(rope, query_position, key_position):
    positions = jnp.stack([query_position, key_position])[None]
    cos, sin = rope(q[None, None], positions)
    q_turned = posenc.jax.apply_rotary(q[None], cos[:, :1], sin[:, :1])
    k_turned = posenc.jax.apply_rotary(k[None], cos[:, 1:], sin[:, 1:])
    return (q_turned * k_turned).sum()


near_score, far_score = score(rope, 3, 1), score(rope, 1_000_003, 1_000_001)
print(f"scores: {float(near_score):.4f} and {float(far_score):.4f}")

# %% [markdown]
# Quão perto é "o mesmo"? Cada cosseno e seno fica a menos de $2 \times 10^{-7}$ do seu valor
# exato nas duas distâncias; então cada produto $q_i k_i$ do score se move no máximo cerca de
# $4 \times 10^{-7} \, |q_i| |k_i|$: o limite abaixo, $4 \times 10^{-7} \sum_i |q_i||k_i|$,
# é de cerca de $1.4 \times 10^{-5}$.

# %%
bound = 4e-7 * float(jnp.abs(q * k).sum())
print(f"the scores differ by less than {bound:.1e}:", abs(float(near_score) - float(far_score)) <= bound)

# %% [markdown]
# ## Resumo
#
# - A tabela da aula cabe em cinco linhas de `jax.numpy`. Arrays JAX são imutáveis: onde o NumPy
#   atribuía `pe[:, 0::2] = ...`, o JAX escreve `pe = pe.at[:, 0::2].set(...)`, que devolve um
#   novo array (ou empilha e remodela, como fez o notebook 01).
# - `jax.jit` rastreia uma função apenas com formatos e dtypes. Um argumento que decide um formato
#   (`d_model`) tem de ser estático (`static_argnums`); cada novo formato e cada novo valor estático
#   rastreia e compila de novo; novos valores de um formato conhecido, não.
# - As funções JAX do posenc ficam a menos de $2 \times 10^{-7}$ sob `jit`, em float32 e sem
#   float64 no rastreamento, enquanto o caminho em float32 da aula erra por centésimos na
#   posição $10^6$.
# - `jax.vmap` transforma uma função de uma posição numa função de um lote, e pode ser aninhado; os
#   módulos Flax NNX `PositionalEncoding` e `RotaryEmbedding` entram em modelos e compilam
#   com `nnx.jit`.
#
# ## Exercícios
#
# Cada exercício termina com uma verificação que diz o que está errado. `nb11.<name>.hint()`
# dá uma dica, e `nb11.<name>.solution()` imprime a solução de referência quando você empacar.
#
# ### Exercício 1 · Preencha as colunas com `.at`
#
# Escreva `at_table(length, d_model)` (com `d_model` par), que parte de
# `jnp.zeros((length, d_model))` e preenche as colunas pares com senos e as ímpares com
# cossenos usando `.at[...].set()`. O rascunho abaixo roda sem erro, mas a verificação
# encontra algo errado: o que `.at[...].set()` devolve?

# %%
def at_table(length, d_model):
    positions = jnp.arange(length, dtype=jnp.float32)[:, None]
    angles = positions / jnp.power(10000.0, jnp.arange(0, d_model, 2, dtype=jnp.float32) / d_model)
    table = jnp.zeros((length, d_model))
    table.at[:, 0::2].set(jnp.sin(angles))
    table.at[:, 1::2].set(jnp.cos(angles))
    return table


nb11.at_table.check(at_table)

# %% [markdown]
# ### Exercício 2 · Quantas compilações?
#
# `lecture_jit` é a função da seção 2, compilada com `static_argnums=1`. Uma cópia nova dela
# é chamada sobre `jnp.arange(start, start + length)` com `d_model` para cada uma destas sete
# chamadas. Preveja quantas vezes ela rastreia (e compila) e depois verifique; a solução roda
# as chamadas e conta, como fez a seção 2.

# %%
print("(start, length, d_model):", *nb11.CALLS)
compilations = 7  # one per call?
nb11.compilations.check(compilations)

# %% [markdown]
# ### Exercício 3 · Um lote de trechos com `vmap`
#
# Um lote de três trechos de quatro posições cada, começando nas posições 0, 100 e 7, como
# na seção 3, largura 8. Escreva `encode_chunk(start)` a partir de `encode_position` e
# `jax.vmap`, mapeie-a sobre `nb11.STARTS` e verifique o resultado `(3, 4, 8)`. O rascunho
# esquece alguma coisa.

# %%
def encode_chunk(start):
    return jax.vmap(encode_position)(jnp.arange(4.0))


nb11.chunks.check(jax.vmap(encode_chunk)(nb11.STARTS))

# %% [markdown]
# ## Verificações cruzadas
#
# As afirmações acima, verificadas juntas: o erro da aula em $10^6$ é de cerca de um passo de
# float32 do ângulo ali (entre meio passo e um passo); o rastreamento do posenc não contém
# float64; o erro do caminho em float32 passa de 0.1 antes da posição $10^7$ (onde números
# float32 estão a 1 um do outro), enquanto o do posenc fica dentro do seu limite; os scores do
# RoPE concordam dentro do limite deduzido acima; mapear uma função que já faz broadcasting
# (seção 3) dá o mesmo que uma chamada direta; e o notebook inteiro roda em menos de um minuto de tempo de CPU.

# %%
# Cross-checks of the claims above; the run's time
step = float(np.spacing(np.float32(1e6)))
assert step / 2 < lecture_error <= step
assert "f64" not in trace
assert posenc_curve.max() < 2e-7 and lecture_curve.max() > 0.1
assert abs(float(near_score) - float(far_score)) <= bound
batch = jnp.asarray([[0, 1, 2, 3], [500, 501, 502, 503]])
mapped = jax.vmap(lambda p: lecture_encode(p, 8))(batch)
np.testing.assert_allclose(np.asarray(mapped), np.asarray(lecture_encode(batch, 8)), rtol=0, atol=1e-6)
seconds = time.process_time() - started
assert seconds < 60

# %%
# NBVAL_IGNORE_OUTPUT
print(f"{seconds:.0f} s")
