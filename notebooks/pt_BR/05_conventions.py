# %% [markdown]
# # 05 · Uma codificação, onze convenções: como as tabelas senoidais dos projetos diferem
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/posenc-org/posenc/blob/main/notebooks/pt_BR/05_conventions.ipynb)
#
# **Pergunta:** Por que as tabelas senoidais de dois projetos não batem, e como saber qual convenção uma tabela segue?
#
# **Você será capaz de:**
# - nomear as duas coisas que as convenções mudam, o layout das colunas e as frequências, e ler as duas numa tabela;
# - passar uma tabela, e um modelo treinado, de um layout para outro com uma permutação de colunas;
# - calcular as frequências "h-1" e dizer o quanto elas se afastam das do artigo;
# - deixar `posenc.identify` nomear a convenção de uma tabela e conferir a sua própria leitura com ele.
#
# **Pré-requisitos:** notebooks 01 e 04 · **Tempo:** cerca de 50 minutos
#
# A codificação senoidal existe em muitas variantes; o `posenc` reproduz onze delas. Algumas
# colocam todos os senos primeiro, algumas usam frequências um pouco diferentes, algumas
# completam larguras ímpares com zeros, uma zera uma linha de padding. Porte um checkpoint ou
# leia dois tutoriais, e os números não batem. Este notebook coloca as variantes lado a
# lado, mede o quanto elas se afastam, mostra que uma mudança de layout é uma permutação das
# colunas, que um modelo treinado absorve quando o seu embedding e os pesos que leem e
# escrevem as mesmas features são permutados do mesmo jeito, e deixa `posenc.identify` dizer
# qual convenção uma tabela segue.

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
import posenc.plot

np.set_printoptions(precision=4, suppress=True)

# %% [markdown]
# ## O zoológico
#
# Aqui, uma *convenção* é o jeito de um projeto escrever a tabela; o `posenc` tem um preset
# por convenção, e `list_conventions` diz de onde cada um vem.

# %%
for preset in posenc.list_conventions():
    print(f"{preset.name:20} {preset.source}")
assert len(posenc.list_conventions()) == 11

# %% [markdown]
# Lado a lado, 100 posições de uma tabela de largura 64. A tabela do artigo é
# *intercalada* (notebook 01): seno e cosseno se alternam, o que aparece como listras
# finas. As outras cinco são *concatenadas*: todos os senos, depois todos os cossenos (o
# layout "sin_cos"), o que aparece como dois blocos. (O `flip_sin_to_cos=True` do diffusers
# coloca os cossenos primeiro: "cos_sin".)

# %%
shown = ["paper", "hf-marian", "tensor2tensor", "fairseq", "whisper", "diffusers"]
fig, axes = plt.subplots(2, 3, figsize=(12, 6), sharey=True)
for name, ax in zip(shown, axes.flat):
    posenc.plot.heatmap(posenc.positional_encoding(100, 64, convention=name), ax=ax, colorbar=False, title=name)
fig.tight_layout()
plt.show()
assert [posenc.convention(name).layout for name in shown] == ["interleaved"] + ["sin_cos"] * 5

# %% [markdown]
# Muitos nomes escrevem os mesmos números. Agrupando os presets pela tabela que geram com
# largura 64:

# %%
groups = {}
for preset in posenc.list_conventions():
    table = posenc.positional_encoding(50, 64, convention=preset.name)
    key = next((k for k in groups if np.array_equal(groups[k][0], table)), preset.name)
    groups.setdefault(key, (table, []))[1].append(preset.name)
for _, names in groups.values():
    print(", ".join(names))
assert len(groups) == 4

# %% [markdown]
# Quatro tabelas. As três primeiras diferem no layout (intercalado ou senos primeiro) e
# nas frequências (as do artigo ou "h-1", abaixo):

# %%
heads = {name: posenc.convention(name) for name in groups}
for name, head in heads.items():
    print(f"{name:14} layout {head.layout:12} frequencies {head.rule}")

# %% [markdown]
# e o fairseq difere do tensor2tensor só na linha 1: o fairseq dá aos tokens de padding o
# id de posição `padding_idx` (1 por padrão) e zera essa linha:

# %%
t2t = posenc.positional_encoding(50, 64, convention="tensor2tensor")
fairseq = posenc.positional_encoding(50, 64, convention="fairseq")
print("rows that differ:", np.flatnonzero((t2t != fairseq).any(axis=1)).tolist())
assert not fairseq[1].any()  # all zeros

# %% [markdown]
# ## A diferença de frequências: artigo versus "h-1"
#
# O artigo usa $w_j = 10000^{-2j/d}$ para o par $j = 0, \dots, h - 1$, com $h = d/2$;
# o tensor2tensor (e, por padrão, fairseq, Whisper e diffusers) usa
# $w_j = 10000^{-j/(h-1)}$, de modo que a menor frequência seja exatamente $10^{-4}$.
# Chamamos essa regra de "h-1", por causa do seu denominador. É outra função, não uma
# diferença de arredondamento: com $d = 512$, a menor frequência do artigo é
# $1.0366 \cdot 10^{-4}$, e as duas diferem em até 3.5 %, na menor frequência, $j = 255$.

# %%
d_model = 512
paper_w = posenc.convention("paper").frequencies(d_model)
h1_w = posenc.convention("tensor2tensor").frequencies(d_model)
gap = h1_w / paper_w - 1
print(f"lowest frequency: paper {paper_w[-1]:.4e}, h-1 {h1_w[-1]:.4e}")
print(f"largest gap: {100 * np.abs(gap).max():.1f} % at j = {np.abs(gap).argmax()}")
assert h1_w[-1] == 1e-4  # exactly

# %%
fig, (left, right) = plt.subplots(1, 2, figsize=(11, 3.5))
left.semilogy(paper_w, label="paper: 10000^(-2j/d)")
left.semilogy(h1_w, "--", label="h-1: 10000^(-j/(h-1))")
left.set(xlabel="pair j", ylabel="frequency w_j", title="d_model = 512")
left.legend()
right.plot(100 * gap)
right.set(xlabel="pair j", ylabel="h-1 / paper - 1 (%)", title="the gap grows to the lowest frequency")
fig.tight_layout()
plt.show()

# %% [markdown]
# As duas são sequências geométricas que começam em 1; então "h-1" é a fórmula do artigo
# com outra base, $10000^{h/(h-1)}$, cerca de 10 367.8 com $d = 512$:

# %%
h = d_model // 2
same_base = 10000 ** (h / (h - 1))
print(f"10000^(h/(h-1)) = {same_base:.1f}")
np.testing.assert_allclose(posenc.convention("paper", base=same_base).frequencies(d_model), h1_w, rtol=1e-14)

# %% [markdown]
# Por menor que 3.5 % pareça, ao longo de 5000 posições os pares mais baixos das duas
# tabelas se desencontram por completo: a maior diferença entre elas é 2.00, um seno em $+1$
# numa tabela e em $-1$ na outra.

# %%
far = np.abs(
    posenc.positional_encoding(5000, d_model, layout="sin_cos") - posenc.positional_encoding(5000, d_model, convention="tensor2tensor")
).max()
print(f"largest difference over 5000 positions: {far:.2f}")
assert round(far, 2) == 2.0

# %% [markdown]
# ## Um layout é uma permutação
#
# `layout_permutation` dá o array de índices que leva um layout a outro. Para $d = 8$,
# do intercalado $(s_0, c_0, s_1, c_1, \dots)$ para todos os senos primeiro:

# %%
perm = posenc.layout_permutation(8, "interleaved", "sin_cos")
print(perm)
interleaved = posenc.positional_encoding(20, 8)
assert np.array_equal(interleaved[:, perm], posenc.positional_encoding(20, 8, layout="sin_cos"))

# %% [markdown]
# Então um modelo treinado com um layout pode ser passado para outro de forma exata, mas
# não consertando uma camada só. A tabela é somada aos embeddings dos tokens, e a soma
# percorre o modelo inteiro pelo
# [*fluxo residual*](https://transformer-circuits.pub/2021/framework/index.html#residual-comms)
# (*residual stream*): cada bloco o lê e soma a sua saída de volta nele. Uma permutação das
# colunas da tabela é uma permutação desse fluxo; então tudo o que toca o fluxo precisa ser
# permutado do mesmo jeito: as colunas do embedding, o eixo de entrada de cada peso que lê o
# fluxo, o eixo de saída (e o bias) de cada peso que escreve nele, e a escala e o
# deslocamento de cada layer norm (uma layer norm tira a média sobre todas as features,
# então não se importa com a ordem delas). Os pesos dentro de um bloco, como os eixos
# próprios das cabeças de atenção ou as unidades ocultas da camada feed-forward, ficam como estão.
#
# Treinamos o modelo pequeno do notebook 07 (embedding de tokens, a tabela senoidal, uma
# camada de encoder do Transformer, uma cabeça linear) na sua tarefa de `posenc.lessons`,
# copiar o token anterior, com a tabela intercalada, e depois o passamos para a tabela
# sin_cos. Ele aprende a tarefa: acerta mais de 90 % dos tokens separados para teste, onde
# chutar entre os 16 tokens acertaria um em 16.

# %%
import torch
from torch import nn

import posenc.torch
from posenc.lessons import BATCH, STEPS, TRAIN_LENGTH, VOCAB, accuracy, copy_previous_task, predict, train

torch.manual_seed(0)
WIDTH = 32


def tiny_transformer(layout):
    encoder = nn.TransformerEncoderLayer(WIDTH, 4, 64, dropout=0.0, batch_first=True)
    positions = posenc.torch.PositionalEncoding(WIDTH, layout=layout)
    return nn.Sequential(nn.Embedding(VOCAB, WIDTH), positions, encoder, nn.Linear(WIDTH, VOCAB))


# %%
model = tiny_transformer("interleaved")
train(model, *copy_previous_task(np.random.default_rng(1), STEPS * BATCH, TRAIN_LENGTH), steps=STEPS)
test_tokens, test_targets = copy_previous_task(np.random.default_rng(2), 1000, TRAIN_LENGTH)


def held_out_accuracy(model):
    return accuracy(predict(model, test_tokens), test_targets)


assert VOCAB == 16 and held_out_accuracy(model) > 0.9

# %% [markdown]
# A conversão: cada parâmetro, nomeado pelo que faz com o fluxo. Na camada de encoder do
# PyTorch, `self_attn.in_proj_weight` e `linear1.weight` leem o fluxo (eixo de entrada, o
# último), `self_attn.out_proj` e `linear2` escrevem nele (eixo de saída, o primeiro, e os
# seus biases), `norm1` e `norm2` atuam sobre ele; as linhas do embedding são vetores no
# fluxo, e a cabeça o lê. Em float64, os logits do modelo portado em 1000 sequências de teste
# são iguais aos do modelo treinado a menos de $10^{-12}$ (as somas juntam os mesmos termos
# em outra ordem).

# %%
READS = {"2.self_attn.in_proj_weight", "2.linear1.weight", "3.weight"}  # [:, perm]
IN_STREAM = {"0.weight"}  # rows are stream vectors: [:, perm]
WRITES = {"2.self_attn.out_proj.weight", "2.linear2.weight"}  # [perm, :]
VECTORS = {"2.self_attn.out_proj.bias", "2.linear2.bias", "2.norm1.weight", "2.norm1.bias",
           "2.norm2.weight", "2.norm2.bias"}  # [perm]


def port(model, source, target):
    """A copy of `model` for the `target` table, its residual stream permuted to match."""
    ported = tiny_transformer(target)
    state = {}
    for name, weight in model.state_dict().items():
        if name in READS | IN_STREAM | VECTORS:
            weight = posenc.convert_layout(weight, source, target, axis=-1)
        elif name in WRITES:
            weight = posenc.convert_layout(weight, source, target, axis=0)
        state[name] = weight
    ported.load_state_dict(state)
    return ported.eval()


# %%
ported = port(model, "interleaved", "sin_cos")
model64, ported64 = model.double(), ported.double()
with torch.no_grad():
    logits, ported_logits = (m(torch.from_numpy(test_tokens)) for m in (model64, ported64))
largest = (logits - ported_logits).abs().max().item()
print("logits agree to 1e-12:", largest < 1e-12)
assert largest < 1e-12 and torch.equal(logits.argmax(-1), ported_logits.argmax(-1))

# %% [markdown]
# (A tabela em si não está no estado: `PositionalEncoding` a guarda como um buffer não
# persistente, construído para o seu próprio layout.) Permutar só a tabela, ou a tabela e o
# embedding, mas nada depois dele, quebra o modelo treinado; a acurácia em copiar o token
# anterior cai muito abaixo da que era:

# %%
table_only = tiny_transformer("sin_cos").double()
embedding_only = tiny_transformer("sin_cos").double()
for partial, state in [(table_only, model64.state_dict()),
                       (embedding_only, {**model64.state_dict(), "0.weight": ported64.state_dict()["0.weight"]})]:
    partial.load_state_dict(state)
    partial.eval()

# %%
# NBVAL_IGNORE_OUTPUT
accuracies = {name: held_out_accuracy(m) for name, m in
              [("trained", model64), ("ported", ported64), ("table only", table_only),
               ("table and embedding", embedding_only)]}
print("   ".join(f"{name}: {value:.2f}" for name, value in accuracies.items()))

# %% [markdown]
# Os valores exatos dependem do arredondamento da plataforma no treino; o que eles mostram
# é verificado aqui: o modelo portado tem exatamente a mesma acurácia que o treinado (seus
# logits batem a menos de $10^{-12}$, acima), e cada conversão parcial acerta menos da
# metade dos tokens que o modelo treinado acerta.

# %%
partial_ports = [accuracies["table only"], accuracies["table and embedding"]]
print("ported as accurate as trained:", accuracies["ported"] == accuracies["trained"],
      "  partial ports below half of it:", max(partial_ports) < accuracies["trained"] / 2)
assert accuracies["ported"] == accuracies["trained"] and max(partial_ports) < accuracies["trained"] / 2

# %% [markdown]
# ## Larguras ímpares
#
# A fórmula define todas as colunas de uma largura ímpar (a última é um seno), mas as
# fontes diferem: três completam com uma coluna de zeros, e duas recusam. Largura 7, última
# coluna, primeiras 4 linhas:

# %%
padded, refused = [], []
for preset in posenc.list_conventions():
    try:
        last = posenc.positional_encoding(4, 7, convention=preset.name)[:, -1]
        print(f"{preset.name:20} {last}")
        padded += [preset.name] if not last.any() else []
    except ValueError as error:
        print(f"{preset.name:20} ValueError: {str(error).split(': ')[1][:60]}...")
        refused.append(preset.name)
assert len(padded) == 3 and len(refused) == 2

# %% [markdown]
# O hf-marian (e o tutorial de TensorFlow de abril de 2019) termina numa coluna perto de 1,
# um cosseno: o seu layout coloca todos os senos primeiro, e os senos ocupam
# $\lceil 7/2 \rceil = 4$ colunas, os cossenos as 3 restantes. A última coluna é então o
# cosseno do par 2, de frequência $10000^{-4/7}$, e o seno solitário do par 3 fica na
# coluna 3.

# %%
marian = posenc.positional_encoding(4, 7, convention="hf-marian")
p = np.arange(4)
expected = np.stack([np.sin(p * 10000 ** (-6 / 7)), np.cos(p * 10000 ** (-4 / 7))], axis=1)  # columns 3 and 6
np.testing.assert_allclose(marian[:, [3, 6]], expected, atol=1e-7)  # float32 rounding

# %% [markdown]
# ## Que convenção é esta tabela?
#
# `identify` ajusta cada preset a uma tabela (a base, pela menor frequência; o offset, pela
# primeira linha) e fica com os que a reconstroem dentro do erro de float32 (a sua
# `tolerance`). Aqui ele lê tabelas feitas com opções diferentes das padrão; para cada uma,
# imprimimos o nome e os parâmetros encontrados e verificamos que o nome é o da fonte e que
# esses parâmetros reconstroem a tabela.

# %%
examples = [
    ("paper", {}),
    ("hf-marian", {}),
    ("tensor2tensor", {"start_index": 7}),
    ("fairseq", {"padding_idx": 0}),
    ("keras-hub", {"max_wavelength": 500}),
    ("diffusers", {"flip_sin_to_cos": True, "downscale_freq_shift": 0.5}),
]
for name, options in examples:
    made = posenc.positional_encoding(200, 64, convention=name, **options)
    found = posenc.identify(made)
    c = found.convention
    extra = f"  shift {c.shift:g}" if c.rule == "h-1" else ""
    extra += "" if c.padding_idx is None else f"  padding_idx {c.padding_idx}"
    print(f"{name:14} -> {found.name:14} {c.layout:12} {c.rule:6} base {c.base:<6g} offset {c.offset:g}{extra}")
    rebuilt = posenc.positional_encoding(200, 64, convention=c)
    assert found.name == name and np.abs(rebuilt - made).max() <= found.tolerance

# %% [markdown]
# Vários presets escrevem os mesmos números (a tabela padrão "paper" também é "hf-xlm",
# "keras-hub" e "tf-tutorial-2019"), e a maioria das tabelas pode ser reconstruída por
# vários presets depois que os seus parâmetros são alterados. `identify` põe em primeiro
# lugar os presets cuja *fonte* consegue escrever a tabela com as suas próprias opções: o
# keras-hub aceita `max_wavelength`, o artigo não tem essa opção; então a tabela acima é só
# "keras-hub", não "paper com base 500".
#
# O embedding de passo de tempo do Stable Diffusion
# (`flip_sin_to_cos=True, downscale_freq_shift=0`) mostra por que isso importa. Suas
# frequências $10000^{-j/h}$ são as do artigo, na ordem cos_sin. Cada um dos sete presets
# com a regra do artigo o reconstrói com `layout="cos_sin"` (uma versão anterior de
# `identify` dava o nome "paper" e listava os sete como correspondências), mas nenhuma das
# suas fontes escreve esse layout; o diffusers o escreve com as suas próprias opções, e é
# ele o nomeado:

# %%
sd = posenc.positional_encoding(200, 64, convention="diffusers", flip_sin_to_cos=True, downscale_freq_shift=0)
found = posenc.identify(sd)
print(f"layout {found.convention.layout}, rule {found.convention.rule}, shift {found.convention.shift:g}, "
      f"base {found.convention.base:g}; matches: {found.matches}")
assert found.matches == ("diffusers",)

# %% [markdown]
# E ele diz "none" quando nada se ajusta: uma tabela aleatória, ou uma real com uma coluna
# alterada em 0.01.

# %%
rng = np.random.default_rng(0)
nudged = posenc.positional_encoding(200, 64, convention="whisper")
nudged[:, 10] += 0.01
for table in (rng.uniform(-1, 1, size=(200, 64)), nudged):
    found = posenc.identify(table)
    print(f"name {found.name}, matches {found.matches}, deviation beyond the tolerance: {found.max_deviation > found.tolerance}")
    assert found.name is None and found.matches == () and found.max_deviation > found.tolerance

# %% [markdown]
# ## Resumo
#
# - **Duas coisas variam.** As convenções diferem no *layout* das colunas (o intercalado do
#   artigo, seno, cosseno, seno, ...; ou todos os senos e depois todos os cossenos,
#   sin_cos, ou o contrário, cos_sin) e nas *frequências* (as do artigo, $10000^{-2j/d}$, ou
#   "h-1", $10000^{-j/(h-1)}$); algumas também completam larguras ímpares com zeros ou zeram
#   uma linha de padding.
# - **Onze presets, quatro tabelas.** Com largura 64, os onze presets escrevem só quatro
#   tabelas diferentes; muitos nomes são os mesmos números.
# - **"h-1" é outra função.** É a fórmula do artigo com base $10000^{h/(h-1)}$
#   (10 367.8 com $d = 512$): até 3.5 % de diferença na frequência, e depois de 5000
#   posições os seus pares lentos estão totalmente fora de fase com os do artigo.
# - **Um layout é uma permutação.** `layout_permutation` leva um layout a outro; a sua
#   inversa faz o caminho de volta. Um modelo treinado passa de forma exata para outro
#   layout quando o embedding e todos os pesos, biases e normalizações no fluxo residual
#   são permutados do mesmo jeito; permutar só a tabela o quebra.
# - **Larguras ímpares** são onde as fontes mais discordam: um seno solitário, uma coluna de
#   zeros ou um erro.
# - **`posenc.identify`** nomeia a convenção de uma tabela e os parâmetros que a
#   reconstroem, prefere a fonte que escreve a tabela com as suas próprias opções e responde
#   "none" quando nada se ajusta.

# %% [markdown]
# ## Exercícios
#
# Cada exercício traz um rascunho e uma verificação que diz o que está errado nele. Cada
# rascunho guardado aqui contém um erro típico; corrija-o e rode a verificação de novo até
# ela dizer "Correct!". Se empacar, `nb05.<exercise>.hint()` dá uma dica e
# `nb05.<exercise>.solution()` mostra o código de referência.
#
# ### Exercício 1 · Traga a tabela de um projeto para o layout do artigo
#
# `nb05.theirs` é a tabela do Whisper para 6 posições e largura 8 (`sinusoids(6, 8)`).
# Reorganize as suas colunas no layout intercalado do artigo $(s_0, c_0, s_1, c_1, \dots)$
# com `posenc.layout_permutation`. (As frequências continuam as do Whisper: aqui só o
# layout importa.)

# %%
from posenc.exercises import nb05

theirs = nb05.theirs
print(theirs.round(3))

# %%
mine = theirs[:, posenc.layout_permutation(8, "interleaved", "sin_cos")]
nb05.to_paper_layout.check(mine)

# %% [markdown]
# ### Exercício 2 · Nomeie a convenção de uma tabela
#
# `nb05.mystery` é uma tabela de algum projeto, 20 posições por 16 colunas. As primeiras
# linhas estão abaixo. Leia o layout na linha 0, olhe as outras linhas e dê o nome do
# preset que a escreve (um nome de `posenc.CONVENTIONS`). A verificação compara a
# tabela que o seu preset escreve com a tabela misteriosa e diz o que difere;
# `posenc.identify` é o juiz, depois que você tiver se decidido.

# %%
print(nb05.mystery[:3].round(2))

# %%
my_answer = "tensor2tensor"
nb05.convention.check(my_answer)

# %% [markdown]
# ### Exercício 3 · As frequências "h-1"
#
# Escreva `h1_frequencies(d_model)`: as $h = d/2$ frequências da regra "h-1",
# $w_j = \exp(-j \ln 10000 / (h - 1))$. O rascunho abaixo divide pela coisa errada. Quando
# a verificação disser "Correct!", compare as suas frequências com $d = 512$ com as do artigo
# (`paper_w` acima) e reencontre a diferença de 3.5 %.

# %%
def h1_frequencies(d_model):
    h = d_model // 2
    return np.exp(-np.arange(h) * np.log(10000.0) / h)


nb05.h1_frequencies.check(h1_frequencies)

# %% [markdown]
# ## Verificações cruzadas
#
# O conjunto de verificações por trás das frases acima, num só lugar.

# %%
# Cross-checks of the claims above.
# The zoo: diffusers' flip puts the cosines first; the three tables that differ in layout and rule.
assert posenc.convention("diffusers", flip_sin_to_cos=True).layout == "cos_sin"
assert [(c.layout, c.rule) for c in heads.values()][:3] == [("interleaved", "paper"), ("sin_cos", "paper"), ("sin_cos", "h-1")]
assert np.flatnonzero((t2t != fairseq).any(axis=1)).tolist() == [1]

# The frequency gap at d = 512: the paper's lowest 1.0366e-4, the largest gap 3.5 % at j = 255; the same base.
assert f"{paper_w[-1]:.4e}" == "1.0366e-04"
assert round(100 * np.abs(gap).max(), 1) == 3.5 and np.abs(gap).argmax() == 255
assert round(same_base, 1) == 10367.8

# The Stable Diffusion table: seven paper-rule presets rebuild it in cos_sin, to float32 rounding.
sd_rebuilt = posenc.identify(sd)
paper_rule = [name for name in posenc.CONVENTIONS if posenc.convention(name).rule == "paper"]
assert len(paper_rule) == 7
for name in paper_rule:
    assert np.abs(sd - posenc.positional_encoding(200, 64, convention=name, layout="cos_sin")).max() <= sd_rebuilt.tolerance

# The exercises' tables: Whisper's is sin_cos with "h-1" frequencies; the mystery table is fairseq's.
assert posenc.identify(nb05.theirs).name in ("tensor2tensor", "whisper", "diffusers")
assert posenc.identify(nb05.mystery).matches == ("fairseq",)
print("all cross-checks hold")
