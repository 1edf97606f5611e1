# %% [markdown]
# # 06 · Quão precisa e quão rápida: a tabela em posições grandes, float32 contra o posenc
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/posenc-org/posenc/blob/main/notebooks/pt_BR/06_precision_and_speed.ipynb)
#
# Modelos de contexto longo usam posições de $10^5$ a $10^7$. As aulas constroem a tabela
# em float32, e ali o ângulo $pos / 10000^{2i/d}$ já está errado antes de o seno ser
# calculado. O notebook 01 encontrou a sua tabela em float32 a alguns "últimos dígitos" de
# distância do `posenc`; aqui tornamos essa expressão precisa, construímos uma referência
# exata para medir contra ela, vemos o erro crescer com a posição, de onde ele vem e como o
# `posenc` o evita, e medimos o tempo que a tabela precisa custa.
#
# **Pergunta:** Quão errada fica uma tabela senoidal em float32 em posições grandes, por quê, e quanto custa uma tabela precisa?
#
# **Você será capaz de:**
# - medir um erro de float32 em ulps (passos entre floats vizinhos) contra uma referência de alta precisão com `mpmath`;
# - prever o erro de um ângulo em float32 a partir do passo de float32 perto dele;
# - calcular uma entrada precisa em float32 em qualquer posição, reduzindo antes o ângulo em float64;
# - medir o tempo de construtores de tabela de forma justa e dizer quando a precisão importa (treino versus produção, meia precisão, contextos longos).
#
# **Pré-requisitos:** notebook 01 · **Tempo:** cerca de 45 minutos

# %%
# On Colab, install posenc from GitHub; elsewhere `make lab` has already installed it.
import sys

if "google.colab" in sys.modules:
    # %pip install --quiet "posenc @ git+https://github.com/posenc-org/posenc@main"

# %%
# %matplotlib inline
import time

import matplotlib.pyplot as plt
import mpmath
import numpy as np

import posenc

# %% [markdown]
# ## 1. O passo entre floats vizinhos: o ulp
#
# Um float32 guarda um número como 24 bits significativos vezes uma potência de dois (o
# [formato de precisão simples do IEEE 754](https://en.wikipedia.org/wiki/Single-precision_floating-point_format)).
# Por isso os números float32 não são distribuídos de maneira uniforme: entre 1 e 2 eles
# estão a $2^{-23} \approx 1.2 \cdot 10^{-7}$ uns dos outros, entre 2 e 4 ao dobro disso, e
# o passo dobra a cada potência de dois. O passo num número é chamado de *unit in the last
# place* (unidade na última casa), ou
# [ulp](https://en.wikipedia.org/wiki/Unit_in_the_last_place); `np.spacing(x)` o devolve
# (a distância de `x` até o próximo float do seu tipo, se afastando do zero). O float64 tem
# 53 bits significativos, então os seus passos são $2^{29} \approx 5 \cdot 10^8$ vezes mais
# finos. Arredondar um resultado para o float mais próximo o move no máximo meio passo.

# %%
for value in [1, 100, 32767, 1e5, 1e7]:
    print(f"{value:>10g}: float32 step {np.spacing(np.float32(value)):.1e}, float64 step {np.spacing(value):.1e}")
assert all(np.spacing(np.float32(2.0**k)) == 2.0 ** (k - 23) for k in range(-20, 30))  # doubles at each power of 2

# %% [markdown]
# Perto de 32767, os números float32 estão a $2^{-9} \approx 0.002$ uns dos outros; perto
# de $10^7$, a 1 inteiro: um ângulo desse tamanho, guardado em float32, pode errar por
# metade desse passo, por mais cuidadoso que tenha sido o cálculo.
#
# Erros entre dois números float32 são mais bem contados nesses passos. Os números float32
# positivos estão na mesma ordem que os seus padrões de bits lidos como inteiros; então o
# número de passos entre dois deles (de mesmo sinal) é a diferença entre esses inteiros:

# %%
def ulps_apart(a, b):
    """How many float32 steps lie between a and b (same signs), entry by entry."""
    as_int = lambda x: np.asarray(x, dtype=np.float32).view(np.int32).astype(np.int64)
    return np.abs(as_int(a) - as_int(b))


one = np.float32(1)
print(ulps_apart(one, one + np.spacing(one)), ulps_apart(one, np.float32(1.0000005)))
assert ulps_apart(one, np.float32(1.0000005)) == 4  # 5e-7 above 1 is 4 steps of 1.2e-7, rounded

# %% [markdown]
# ## 2. Uma referência exata: mpmath
#
# Para medir um erro, precisamos do valor verdadeiro. O [mpmath](https://mpmath.org) calcula
# com quantos dígitos pedirmos. Com 30 dígitos decimais significativos
# (`mpmath.workdps(30)`), ele forma o ângulo $pos / 10000^{2i/d}$ e calcula o seu seno.
# Mesmo na posição $10^7$, esse ângulo está certo até cerca de $10^{-23}$ (30 dígitos de um
# número perto de $10^7$), e o seu seno também: dez milhões de vezes mais fino que o passo
# do float64 logo abaixo de 1, $2^{-53} \approx 1.1 \cdot 10^{-16}$. Arredondado para
# float64, o resultado é o float64 mais próximo do seno verdadeiro, tão bom quanto "exato"
# para tudo o que vem abaixo. Arredondado para float32, é o seno float32 *corretamente
# arredondado*, o melhor que um float32 consegue guardar (arredondamos passando pelo
# float64, o que dá o mesmo float32, a não ser que o seno fique extraordinariamente perto do
# ponto médio entre dois números float32). Aqui está $\sin 1$:

# %%
with mpmath.workdps(30):
    true_sine = mpmath.sin(1)
    print(mpmath.nstr(true_sine, 30))
print(f"as float64 {float(true_sine)!r}, as float32 {np.float32(float(true_sine))!s}")
print(f"float32 step there {np.spacing(np.float32(0.84)):.1e}")

# %% [markdown]
# O `np.sin` do NumPy em float32 nem sempre é corretamente arredondado: é uma aproximação
# vetorizada rápida (assim como `np.cos`), que os próprios testes do NumPy permitem errar
# até 2 ulp, e as entradas em que ela erra dependem da CPU. Nos 60 senos e cossenos da
# tabela $10 \times 6$ do notebook 01 (os ângulos em float32 da aula), ela fica dentro
# desses 2 ulp dos valores corretamente arredondados vindos do mpmath. Essa é a história do
# "último dígito" do notebook 01: em posições pequenas, uma tabela em float32 só pode errar
# pelo seu arredondamento final, um ou dois passos, cerca de $10^{-7}$.

# %%
lecture_angles = np.arange(10, dtype=np.float32)[:, None] / np.power(10000, np.arange(0, 6, 2, dtype=np.float32) / 6)
for numpy_function, mpmath_function in [(np.sin, mpmath.sin), (np.cos, mpmath.cos)]:
    with mpmath.workdps(30):
        correctly_rounded = np.array([[np.float32(float(mpmath_function(mpmath.mpf(float(a))))) for a in row]
                                      for row in lecture_angles])
    assert ulps_apart(numpy_function(lecture_angles), correctly_rounded).max() <= 2, f"{numpy_function.__name__}: 2 ulp"

# %% [markdown]
# No resto do notebook, a referência é uma linha de senos numa posição de uma tabela com
# $d_{model} = 512$, amostrada a cada 16 pares de colunas (16 pares), cada um sendo o
# arredondamento em float64 do valor com 30 dígitos. A posição 1 começa de novo com
# $\sin 1$:

# %%
d_model = 512
pairs = np.arange(0, d_model // 2, 16)


def exact_sines(position):
    with mpmath.workdps(30):
        return np.array([float(mpmath.sin(mpmath.mpf(int(position)) / mpmath.power(10000, mpmath.mpf(2 * int(i)) / d_model)))
                         for i in pairs])


print(len(pairs), exact_sines(1)[:3].round(8))

# %% [markdown]
# ## 3. O caminho em float32 contra o posenc
#
# O caminho das aulas divide posições em float32 por denominadores em float32 e calcula o
# seno em float32. Medimos tanto esse caminho quanto `posenc.encode` em 25 posições de 10 a
# $10^7$, pelo maior erro entre os senos amostrados.

# %%
def float32_route(position):
    denominators = np.power(10000, np.arange(0, d_model, 2, dtype=np.float32) / d_model)
    return np.sin(np.float32(position) / denominators)[pairs]


positions = np.unique(np.logspace(1, 7, 25).astype(np.int64))
exact = {p: exact_sines(p) for p in positions}
route_error = np.array([np.abs(float32_route(p) - exact[p]).max() for p in positions])
posenc_error = np.array([np.abs(posenc.encode([p], d_model)[0, 2 * pairs] - exact[p]).max() for p in positions])
print(f"{len(positions)} positions; float32 route: {route_error.max():.1e} at worst; posenc: {posenc_error.max():.1e} at worst")

# %%
fig, ax = plt.subplots(figsize=(6, 3.5))
ax.loglog(positions, route_error, "o-", label="float32 route (lectures)")
ax.loglog(positions, np.maximum(posenc_error, 1e-10), "s-", label="posenc, float32 output")
ax.axhline(2e-7, color="gray", ls=":", label="2e-7")
ax.set_xlabel("position")
ax.set_ylabel("max |error| of the sines")
ax.legend()
plt.show()

# %% [markdown]
# A partir da posição 1000, o erro do caminho cresce proporcionalmente à posição: no
# gráfico log-log, ele é uma reta de inclinação 1 (um ajuste por mínimos quadrados dá uma
# inclinação a menos de 0.1 de 1). Ele passa de $10^{-3}$ a partir de $10^5$ e de $10^{-2}$
# a partir de $10^6$. O posenc fica dentro de $2 \cdot 10^{-7}$ em todo lugar, o limite que
# `posenc.encode` garante para saída em float32 (a sua redução do ângulo a meia volta é
# demonstrada na docstring de `posenc/_rotation.py`); abaixo desse limite, o seu erro é só
# o arredondamento final para float32.

# %%
grown = positions >= 1000
slope = np.polyfit(np.log(positions[grown]), np.log(route_error[grown]), 1)[0]
print(f"slope of log(error) against log(position), from 1000 on: {slope:.1f}")
assert abs(slope - 1) < 0.1, "error proportional to the position"

# %% [markdown]
# ## 4. Por quê: o ângulo é arredondado numa grade grossa
#
# Pegue a posição 32767. O ângulo $32767 / 1$ do primeiro par de colunas é um número
# inteiro abaixo de $2^{24}$, exato em float32. Os outros não: os seus denominadores
# $10000^{2i/d}$ são arredondados para float32 primeiro, e o quociente $32767 / 10000^{2i/d}$
# é arredondado de novo, para a grade do float32, cujo passo para quocientes entre 16384 e
# 32768 é $2^{-9}$ (seção 1). Arredondar para o ponto da grade mais próximo move um ângulo
# em até meio passo, $2^{-10} \approx 0.001$. O denominador arredondado o move em até mais
# 0.0012, mesmo quando é o float32 mais próximo do exato (o melhor que o float32 consegue
# guardar). E o seno de um ângulo errado por $\delta$ erra em até $\delta$ (a inclinação de
# $\sin$ é no máximo 1). Então os senos na posição 32767 podem errar por cerca de
# $2 \cdot 10^{-3}$ antes de o `np.sin` fazer qualquer coisa, dez mil vezes o
# arredondamento final da seção 2.

# %%
exact_denominators = 10000.0 ** (np.arange(0, d_model, 2) / d_model)
rounded_denominators = exact_denominators.astype(np.float32)


def denominator_shift(denominators):
    """How far float32 denominators move each angle 32767 / denominator."""
    return np.abs(32767 / denominators.astype(np.float64) - 32767 / exact_denominators)


angles32 = np.float32(32767) / rounded_denominators
quotient_rounding = np.abs(angles32 - 32767 / rounded_denominators.astype(np.float64))
denominator_rounding = denominator_shift(rounded_denominators)
print(f"largest move of an angle at position 32767: by the quotient's rounding {quotient_rounding.max():.4f}, "
      f"by the denominator's {denominator_rounding.max():.4f}")
assert quotient_rounding.max() <= 2**-10, "at most half a float32 step near 32767"

# %% [markdown]
# O `np.power` em float32 das aulas cai a um passo de float32 desses denominadores, mas
# qual vizinho ele devolve depende da CPU: onde a CPU tem AVX-512, o NumPy segue um caminho
# mais rápido e um pouco menos exato. Um denominador errado por um passo move o ângulo
# ainda mais, em até 0.003 no total. Por isso os erros do caminho em float32 mais adiante
# dependem um pouco da CPU, e onde isso acontece informamos o intervalo que vale nos dois
# casos. O float64, por sua vez, tem um passo de $2^{-29} \approx 2 \cdot 10^{-9}$ perto de
# $10^7$ (seção 1): um ângulo formado em float64 é bom o bastante para saída em float32 em
# todas as posições aqui.

# %%
denominators32 = np.power(10000, np.arange(0, d_model, 2, dtype=np.float32) / d_model)  # the lectures'
steps_apart = ulps_apart(denominators32, rounded_denominators)
assert steps_apart.max() <= 1 and denominator_shift(denominators32).max() < 0.003, "one step off at most, 0.003 at most"

# %% [markdown]
# ## 5. Como o posenc evita isso
#
# A correção mais simples, que o exercício 2 pede para você escrever: formar o ângulo em
# float64, *reduzi-lo* (tomar o resto da divisão por $2\pi$, o que não muda o seno) ainda
# em float64, e só então arredondar o ângulo pequeno para float32. O posenc vai além, com
# duas ideias (veja `posenc/_rotation.py`):
#
# 1. **O ângulo em mais do que float64.** A frequência $w$ é guardada como dois números
#    float64, e $p \cdot w$ como $\theta_{hi} + \theta_{lo}$, com o erro exato de
#    arredondamento do produto recuperado pelo [método de Dekker](https://en.wikipedia.org/wiki/2Sum);
#    então $\sin\theta \approx \sin\theta_{hi} + \theta_{lo}\cos\theta_{hi}$.
#    A saída em float64 fica a menos de $10^{-15}$ dos senos exatos em todas as posições
#    acima, $10^7$ inclusive (verificado abaixo).
# 2. **Uma tabela é um produto de rotações.** $PE(p + k)$ é $PE(p)$ girado pelo ângulo fixo
#    $k\,w$ em cada par:
#    $\sin(a + b) = \sin a \cos b + \cos a \sin b$, $\cos(a + b) = \cos a \cos b - \sin a \sin b$.
#    Com $p = qB + r$, todas as $L$ linhas vêm de $B$ linhas precisas e $L / B$ passos
#    precisos, uma multiplicação complexa por par.
#
# A rotação em ação, em linhas float64 vindas de `posenc.encode`: PE(p + k) é PE(p) girado por k.

# %%
p, k = 1_000_000, 37
rows = posenc.encode([p, k, p + k], d_model, dtype=np.float64)
sin_a, cos_a, sin_b, cos_b = rows[0, 0::2], rows[0, 1::2], rows[1, 0::2], rows[1, 1::2]
turned = np.stack([sin_a * cos_b + cos_a * sin_b, cos_a * cos_b - sin_a * sin_b], axis=-1).reshape(-1)
# The difference is a few float64 roundings, which vary with the NumPy build: print the bound.
print(f"PE(p) turned by k equals PE(p + k) to within 1e-14: {np.abs(turned - rows[2]).max() < 1e-14}")

# %% [markdown]
# A ideia 1, em todas as posições de 10 a $10^7$:

# %%
float64_error = max(np.abs(posenc.encode([p], d_model, dtype=np.float64)[0, 2 * pairs] - exact[p]).max() for p in positions)
assert float64_error < 1e-15, f"float64 output off by {float64_error:.1e}"

# %% [markdown]
# Em float32, cada um dos quatro fatores, dos dois produtos e da soma é arredondado uma
# vez, o que limita o erro a $(2\sqrt{2} + 3) \cdot 2^{-25} < 1.74 \cdot 10^{-7}$ (um pouco
# mais, abaixo de $2 \cdot 10^{-7}$, se um valor vizinho de 1 for arredondado para cima,
# ultrapassando-o). Uma tabela $32768 \times 512$ inteira, amostrada contra a referência
# exata:

# %%
table = posenc.positional_encoding(32768, d_model)
sampled = [0, 255, 256, 12345, 32767]
table_error = max(np.abs(table[p, 2 * pairs] - exact_sines(p)).max() for p in sampled)
print(f"largest error in the sampled rows: {table_error:.0e}")
assert (2 * np.sqrt(2) + 3) * 2**-25 < 1.74e-7 and table_error <= 2e-7

# %% [markdown]
# ## 6. Velocidade
#
# Construir a tabela significa escrevê-la na memória; então a régua de comparação é alocar
# e preencher um array do mesmo formato. `make bench` compara todos os caminhos em NumPy,
# PyTorch e TensorFlow; aqui estão os caminhos em NumPy com o mesmo $32768 \times 512$,
# mediana de 9 execuções (os tempos variam de máquina para máquina e de execução para
# execução; um array novo de 64 MiB também paga pelas suas páginas de memória).
# `posenc.torch` e `posenc.tensorflow` constroem as suas tabelas com o mesmo código NumPy e
# assumem a memória dele sem cópia (`torch.from_numpy`, DLPack).
# Posições arbitrárias (`posenc.encode`, um lote $64 \times 512$ de posições abaixo de
# 32768) são cronometradas contra os caminhos ingênuos que calculam sin e cos de um ângulo
# em float32 ou float64.

# %%
length = 32768
buffer = np.empty((length, d_model), np.float32)


def float32_table(length):
    denominators = np.power(10000, np.arange(0, d_model, 2, dtype=np.float32) / d_model)
    angles = np.arange(length, dtype=np.float32)[:, None] / denominators
    return np.stack([np.sin(angles), np.cos(angles)], axis=2).reshape(length, d_model)


routes = {
    "posenc": lambda: posenc.positional_encoding(length, d_model),
    "posenc, out=": lambda: posenc.positional_encoding(length, d_model, out=buffer),
    "float32 route": lambda: float32_table(length),
    "np.empty + fill": lambda: np.empty((length, d_model), np.float32).fill(1.0),
}
# %%
batch = np.random.default_rng(0).integers(0, length, (64, 512)).astype(np.float64)


def naive_encode(dtype):
    angles = batch.astype(dtype)[..., None] * posenc.frequencies(d_model).astype(dtype)
    pairs = np.stack([np.sin(angles), np.cos(angles)], axis=-1)
    return pairs.reshape(*batch.shape, d_model).astype(np.float32)


encode_routes = {
    "naive float32": lambda: naive_encode(np.float32),
    "naive float64": lambda: naive_encode(np.float64),
    "posenc.encode": lambda: posenc.encode(batch, d_model),
}


# %% [markdown]
# Os caminhos se revezam (round robin), então um momento de carga da máquina deixa todos os
# caminhos igualmente mais lentos; a primeira rodada serve só de aquecimento.

# %%
def median_ms(routes, repeats=9):
    times = {name: [] for name in routes}
    for _ in range(repeats + 1):
        for name, build in routes.items():
            start = time.perf_counter()
            build()
            times[name].append(time.perf_counter() - start)
    return {name: 1e3 * np.median(spans[1:]) for name, spans in times.items()}


# %%
# NBVAL_IGNORE_OUTPUT
medians = median_ms(routes)
for name, ms in medians.items():
    print(f"{name:<16} {ms:7.2f} ms  {ms / medians['posenc']:5.2f} x posenc")
encode_medians = median_ms(encode_routes, repeats=5)
for name, ms in encode_medians.items():
    print(f"encode, {name:<14} {ms:7.2f} ms  {ms / encode_medians['naive float32']:5.2f} x naive float32")

# %% [markdown]
# A tabela precisa não é paga com tempo. Na execução guardada aqui, o posenc a construiu
# mais rápido que o caminho em float32 das aulas, em mais ou menos o tempo de alocar e
# preencher o array; os seus números vão ser outros. A verificação abaixo afirma só que o
# posenc leva menos que o dobro do tempo do caminho em float32: um limite generoso, para
# que outra CPU, ou um momento de carga, não a faça falhar.

# %%
assert medians["posenc"] < 2 * medians["float32 route"], medians

# %% [markdown]
# O mesmo lote em PyTorch (modo eager) e em TensorFlow dentro de `tf.function`, onde roda
# um passo de treino. O `encode` de cada framework é cronometrado contra o caminho ingênuo em
# float32 do mesmo framework.

# %%
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")
import tensorflow as tf
import torch

import posenc.tensorflow
import posenc.torch

batch_torch, batch_tf = torch.from_numpy(batch), tf.constant(batch)
rates = posenc.frequencies(d_model).astype(np.float32)


def naive_torch(positions):
    angles = positions.float()[..., None] * torch.from_numpy(rates)
    return torch.stack([torch.sin(angles), torch.cos(angles)], dim=-1).flatten(-2)


@tf.function
def naive_tf(positions):
    angles = tf.cast(positions, tf.float32)[..., None] * rates
    return tf.reshape(tf.stack([tf.sin(angles), tf.cos(angles)], axis=-1), (*positions.shape, d_model))


# %%
encode_tf = tf.function(lambda positions: posenc.tensorflow.encode(positions, d_model))
framework_routes = {
    "torch, naive float32": lambda: naive_torch(batch_torch),
    "torch, posenc": lambda: posenc.torch.encode(batch_torch, d_model),
    "tf.function, naive float32": lambda: naive_tf(batch_tf).numpy(),
    "tf.function, posenc": lambda: encode_tf(batch_tf).numpy(),
}

# %%
# NBVAL_IGNORE_OUTPUT
framework_medians = median_ms(framework_routes, repeats=5)
for name, ms in framework_medians.items():
    naive = framework_medians[name.split(",")[0] + ", naive float32"]
    print(f"encode, {name:<26} {ms:7.2f} ms  {ms / naive:5.2f} x naive float32")

# %% [markdown]
# O que os tempos não mostram: na última linha da tabela, só o posenc é preciso;

# %%
last = length - 1
errors = {name: np.abs(routes[name]()[last, 2 * pairs] - exact_sines(last)).max() for name in ["posenc", "float32 route"]}
for name, error in errors.items():
    print(f"{name:<14} error at row {last}: {error:.0e}")
assert errors["posenc"] < 2e-7 < 1e-4 < errors["float32 route"]

# %% [markdown]
# e na maior posição do lote, os caminhos ingênuos em float32 erram em todos os frameworks,
# enquanto o posenc é tão preciso quanto senos em float64.

# %%
largest = np.unravel_index(np.argmax(batch), batch.shape)
exact_row = exact_sines(batch[largest])
batch_errors = {name: np.abs(np.asarray(build())[largest][2 * pairs] - exact_row).max()
                for name, build in {**encode_routes, **framework_routes}.items()}
print(f"at position {batch[largest]:.0f} of the batch:",
      ", ".join(f"{name}: {f'{error:.1e}' if error > 2e-7 else 'below 2e-7'}" for name, error in batch_errors.items()))
assert all((error < 2e-7) == ("float32" not in name) for name, error in batch_errors.items())

# %% [markdown]
# ## 7. Quando a precisão importa na prática
#
# Alguns $10^{-3}$ parecem pouco perto de valores de tamanho 1. Isso importa quando algo
# compara a tabela com ela mesma em outra precisão, ou com posições próximas. O par mais
# lento de uma tabela com $d = 512$ gira $w_{255} \approx 1.04 \cdot 10^{-4}$ radianos por
# posição; então os seus valores mudam no máximo isso de uma posição para a seguinte.
#
# Alguns dos números abaixo dependem da potência em float32 da CPU (seção 4); para esses,
# imprimimos o intervalo que vale nos dois casos, e `within` verifica que o valor está
# dentro dele.

# %%
def within(value, low, high):
    """Checks low < value < high and says so: the float32 route's digits differ by CPU."""
    assert low < value < high, f"{value} is outside ({low:g}, {high:g})"
    return f"below {high:g}" if low == 0 else f"{low:g} to {high:g}"


# %% [markdown]
# **Uma tabela construída de formas diferentes no treino e na inferência.** Um modelo
# aprende a tabela com que foi treinado. Coloque-o em produção com uma tabela construída de outro jeito (o
# código em float32 das aulas no treino, uma tabela precisa ou a de outro framework em
# produção, ou o contrário) e cada linha erra pela diferença entre as duas. Nas
# primeiras 512 posições, essa diferença fica abaixo de $10^{-4}$, menor que o passo de uma
# posição no par mais lento; em 5000 posições, ela é de 3 a $7 \cdot 10^{-4}$, e em 32 768,
# de $1.5$ a $4 \cdot 10^{-3}$: mais do que o movimento dos pares lentos ao longo de dez
# posições.

# %%
slowest = 10000.0 ** (-(d_model - 2) / d_model)


def build_gap(length):
    return np.abs(float32_table(length) - posenc.positional_encoding(length, d_model, dtype=np.float64)).max()


gaps = {n: build_gap(n) for n in (512, 5000, 32768)}
gap_ranges = {512: (0, 1e-4), 5000: (3e-4, 7e-4), 32768: (1.5e-3, 4e-3)}
print(f"slowest pair: {slowest:.2e} radians per position")
print("largest gap, float32 route vs accurate table, over",
      ", ".join(f"{n} rows: {within(gaps[n], *gap_ranges[n])}" for n in gaps))
assert gaps[512] < slowest and gaps[32768] > 10 * slowest

# %% [markdown]
# **Tabelas em meia precisão.** O float16 guarda números inteiros exatamente só até 2048;
# o bfloat16, só até 256 (8 bits significativos). Uma tabela *calculada* em bfloat16 funde
# posições antes de qualquer seno ser calculado: das posições 0 a 999, só 507 continuam
# distintas; então cerca de metade das linhas são cópias de uma vizinha.

# %%
bf16_positions = torch.arange(1000).to(torch.bfloat16)
print(f"distinct bfloat16 positions among 0..999: {len(torch.unique(bf16_positions))}; 257 becomes {bf16_positions[257].item():.0f}")
assert len(torch.unique(bf16_positions)) == 507

# %% [markdown]
# Calcule em float32 ou float64 e converta o tipo no final, como `posenc.torch` faz para
# `dtype=torch.bfloat16`: então a única perda é a conversão, até meio passo perto de 1,
# $2^{-12} \approx 2.4 \cdot 10^{-4}$ por entrada para float16 e
# $2^{-9} \approx 2.0 \cdot 10^{-3}$ para bfloat16, e todas as 1000 linhas continuam
# distintas.

# %%
bf16_table = posenc.torch.positional_encoding(1000, d_model, dtype=torch.bfloat16)
print(f"distinct rows of the bfloat16 table: {len(torch.unique(bf16_table, dim=0))}")
assert len(torch.unique(bf16_table, dim=0)) == 1000

# %% [markdown]
# **Contextos longos.** O caminho em float32 obtém o ângulo $p \cdot w$ com um erro relativo
# de cerca de $10^{-7}$ (de $5 \cdot 10^{-8}$ a $1.5 \cdot 10^{-7}$, conforme a CPU);
# dividido pela frequência, isso é um erro na *posição* que a linha descreve, e ele cresce
# com $p$: menos de 0.001 de posição em 5000, de 0.05 a 0.15 em $10^6$ e de 0.8 a 1.5, cerca
# de uma posição inteira, em $10^7$, onde linhas vizinhas se confundem.

# %%
frequencies = 1 / exact_denominators
position_error = {p: np.abs((np.float32(p) / denominators32) / frequencies - p).max() for p in (5000, 10**6, 10**7)}
position_ranges = {5000: (0, 1e-3), 10**6: (0.05, 0.15), 10**7: (0.8, 1.5)}
print("largest position error of the float32 route:",
      ", ".join(f"at {p:g}: {within(e, *position_ranges[p])}" for p, e in position_error.items()))
assert all(5e-8 < e / p < 1.5e-7 for p, e in position_error.items()), "relative error of the angle, by CPU"

# %% [markdown]
# Acima de $2^{24} = 16\,777\,216$, o float32 não consegue nem guardar as posições (o passo
# do float32 ali é 2): $2^{24} + 1$ é arredondado para $2^{24}$, e duas linhas saem
# idênticas. O posenc recebe as posições como inteiros (ou float64) e as mantém
# separadas.

# %%
beyond = posenc.encode(np.array([2**24, 2**24 + 1]), d_model, dtype=np.float64)
print(f"float32(2**24 + 1) == 2**24: {np.float32(2**24 + 1) == np.float32(2**24)}; "
      f"posenc's rows for 2**24 and 2**24 + 1 differ by up to {np.abs(beyond[0] - beyond[1]).max():.2f}")
assert np.abs(beyond[0] - beyond[1]).max() > 0.5

# %% [markdown]
# ## Resumo
#
# - Um **ulp** é o passo entre floats vizinhos (`np.spacing`). O do float32 é $2^{-23}$
#   perto de 1 e dobra a cada potência de dois: $2^{-9} \approx 0.002$ perto de 32767, 1
#   perto de $10^7$. Arredondar para o float mais próximo custa no máximo meio passo.
# - O **mpmath** com 30 dígitos dá uma referência exata. Comparado a ela, o seno em float32
#   do NumPy fica a até 2 ulp do valor corretamente arredondado: em posições pequenas, uma
#   tabela em float32 erra só no último dígito.
# - O **caminho em float32** das aulas arredonda o *ângulo* para a grade do float32 antes de
#   qualquer seno ser calculado; por isso, o seu erro cresce proporcionalmente à posição:
#   acima de $10^{-3}$ a partir de $10^5$ e acima de $10^{-2}$ a partir de $10^6$. Forme o
#   ângulo em float64 (o posenc: além do float64), reduza-o e só então arredonde: o posenc
#   fica dentro de $2 \cdot 10^{-7}$ em float32 e de $10^{-15}$ em float64, em todas as
#   posições até $10^7$.
# - $PE(p + k)$ é $PE(p)$ girado por $k\,w$ em cada par; o posenc constrói tabelas a partir
#   dessas rotações, em menos que o dobro do tempo do caminho em float32 (mais rápido, na
#   execução guardada aqui).
# - A precisão importa quando treino e produção constroem a tabela de formas diferentes
#   (uma diferença de até $4 \cdot 10^{-3}$ em 32 768 posições, mais de dez vezes o passo do
#   par mais lento), em meia precisão (calcule em float32 e converta por último: em bfloat16,
#   só 507 de 1000 posições continuam distintas) e em contextos longos (um erro de posição
#   de cerca de 1 em $10^7$; o float32 não distingue $2^{24}$ de $2^{24} + 1$).
#
# ## Exercícios
#
# Cada verificação responde "Correct!" ou diz o que está errado. Se empacar,
# `nb06.angle_step.hint()` dá uma dica e `nb06.angle_step.solution()` mostra o código de
# referência (o mesmo vale para `accurate_sine`).
#
# ### Exercício 1 · O passo de float32 perto de um ângulo
#
# O par `pair` de uma tabela de largura `d_model` transforma a posição `position` no ângulo
# `position / 10000 ** (2 * pair / d_model)`. Escreva `angle_step(position, pair, d_model)`,
# que devolve dois números: o passo de float32 (ulp) nesse ângulo e o maior erro que guardar
# o ângulo em float32 introduz no seu seno. O rascunho abaixo tem um erro; a verificação o
# executa em quatro posições e diz o que está errado.

# %%
from posenc.exercises import nb06


def angle_step(position, pair, d_model):
    angle = position / 10000 ** (2 * pair / d_model)
    step = np.spacing(angle)  # the distance to the next number after the angle
    return step, step / 2


# %%
nb06.angle_step.check(angle_step)

# %% [markdown]
# ### Exercício 2 · Um seno preciso em float32 numa posição grande
#
# Escreva `accurate_sine(position, pair, d_model)`: o valor em float32 da coluna
# `2 * pair` nessa posição, preciso até cerca de $10^{-7}$ mesmo na posição $10^7$, formando
# o ângulo em float64 e reduzindo-o (seção 5) antes de qualquer arredondamento para float32.
# A verificação o compara com a solução de referência, que concorda com `posenc.encode` a
# menos de $3 \cdot 10^{-7}$ (veja as verificações cruzadas). O rascunho abaixo esquece um
# passo.

# %%
def accurate_sine(position, pair, d_model):
    angle = position * 10000.0 ** (-2 * pair / d_model)  # float64
    return np.sin(np.float32(angle))  # the float32 sine of the angle


# %%
nb06.accurate_sine.check(accurate_sine)

# %% [markdown]
# ## Verificações cruzadas
#
# As afirmações restantes do texto, verificadas num só lugar.

# %%
# Cross-checks of sections 1 to 5
# Section 1: float64's steps are 2**29 times finer than float32's; 2**-9 near 32767, 2**-29 near 1e7.
assert np.spacing(np.float32(32767)) == 2**-9 and np.spacing(1e7) == 2**-29
assert all(np.spacing(np.float32(v)) / np.spacing(float(v)) == 2**29 for v in [1.5, 100.0, 32767.0])
# Section 2: 30 digits of an angle near 1e7 resolve 1e-23, far below float64's step next to 1 (1.1e-16 below 1).
assert np.spacing(np.nextafter(1.0, 0)) == 2**-53 and 1e7 * 1e-30 < 1e-16
# Section 3: the float32 route passes 1e-3 from 1e5 on and 1e-2 from 1e6 on; posenc within 2e-7.
assert (route_error[positions >= 10**5] > 1e-3).all() and (route_error[positions >= 10**6] > 1e-2).all()
assert posenc_error.max() <= 2e-7
# Section 4: position 32767, pair 0 exact; the float32 grid's step 2**-9 above 16384; the
# rounded denominators move an angle by up to 0.0012, the quotient's rounding by up to 0.001.
assert angles32[0] == 32767 and quotient_rounding[0] == 0 and denominator_rounding[0] == 0
assert np.spacing(np.float32(16384)) == 2**-9 and 0.0008 < quotient_rounding.max()
assert 0.001 < denominator_rounding.max() < 0.0013
# Section 5: the float32 bound of a rotation, under 1.74e-7.
assert (2 * np.sqrt(2) + 3) * 2**-25 < 1.74e-7

# %%
# Cross-checks of sections 6 and 7. Section 6: every route builds the same shape.
assert all(routes[name]().shape == (length, d_model) for name in ["posenc", "posenc, out=", "float32 route"])
# Section 7: the slowest pair turns by 1.04e-4 per position; float16 and bfloat16 casts.
assert round(slowest, 6) == 0.000104
assert np.float16(2048) + np.float16(1) == 2048 and np.float16(2047) + np.float16(1) == 2048
assert bf16_positions[257].item() == 256
accurate = posenc.positional_encoding(1000, d_model, dtype=np.float64)
cast16 = np.abs(accurate.astype(np.float16) - accurate).max()
cast_bf16 = (torch.from_numpy(accurate).to(torch.bfloat16).double() - torch.from_numpy(accurate)).abs().max().item()
assert cast16 <= 2**-12 and cast_bf16 < 2**-9 + 2**-24  # (torch casts through float32)
assert np.float32(2**24 + 1) == np.float32(2**24) and np.spacing(np.float32(2**24)) == 2

# %%
# Cross-checks of exercise 2: the reference solution agrees with posenc.encode within 3e-7 at the checked positions.
for case in nb06.accurate_sine.cases:
    position, pair, width = case
    assert abs(nb06.accurate_sine_solution(*case) - posenc.encode([position], width)[0, 2 * pair]) < 3e-7, case
# ... while the float32 route, even with the nearest float32 denominator, is off by more than 0.1 at 1e7.
assert abs(np.sin(np.float32(10**7) / np.float32(10000.0 ** (2 / 512))) - posenc.encode([10**7], 512)[0, 2]) > 0.1
