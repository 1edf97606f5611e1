# %% [markdown]
# # 08 · Do senoidal ao rotativo: RoPE
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/posenc-org/posenc/blob/main/notebooks/pt_BR/08_rotary.ipynb)
#
# Quase todo modelo de linguagem recente usa o embedding posicional rotativo (RoPE) em vez
# de somar uma tabela. O RoPE pega as frequências da codificação senoidal e as usa para
# *rotacionar* as queries e as keys (consultas e chaves). Este notebook mostra por que isso
# é uma melhoria, as duas formas de agrupar os canais em pares e como os checkpoints passam
# de uma para a outra, as regras de frequência que estendem um modelo a contextos mais
# longos, as armadilhas de precisão das posições longas e a tarefa de cópia do notebook 07
# com o RoPE ao lado das outras três opções.
#
# **Pergunta:** Por que os modelos de linguagem recentes rotacionam suas queries e keys em vez de somar uma tabela de posições, e o que é preciso acertar ao portar o RoPE?
#
# **Você será capaz de:**
# - mostrar que queries e keys rotacionadas dão pontuações de atenção que dependem só do deslocamento;
# - rotacionar uma query à mão no layout em metades e distinguir esse layout do intercalado;
# - passar um checkpoint de um layout para o outro permutando as linhas de $W_q$ e $W_k$;
# - calcular o comprimento de onda de qualquer par sob as regras de frequência para contextos longos;
# - reconhecer as armadilhas de precisão de cos e sin em posições longas.
#
# **Pré-requisitos:** notebooks 04 e 07 · **Tempo:** cerca de 90 minutos

# %%
# On Colab, install posenc from GitHub; elsewhere `make lab` has already installed it.
import sys

if "google.colab" in sys.modules:
    # %pip install --quiet "posenc @ git+https://github.com/posenc-org/posenc@main"

# %% [markdown]
# O PyTorch é o framework principal aqui; NumPy e TensorFlow são conferidos contra ele no
# final. Uma única thread e algoritmos determinísticos fazem cada execução numa mesma
# máquina se repetir exatamente.

# %%
# %matplotlib inline
import copy
import time

import matplotlib.pyplot as plt
import mpmath
import numpy as np
import torch
from torch import nn

import posenc
import posenc.torch
from posenc.lessons import (
    BATCH, STEPS, TRAIN_LENGTH, VOCAB, LearnedPositions, accuracy, copy_previous_task, first_step_above,
    order_blind_ceiling, predict, train,
)

torch.set_num_threads(1)
torch.use_deterministic_algorithms(True)
torch.manual_seed(0)
started = time.perf_counter()

# %% [markdown]
# ## 1. Um vetor de posição somado mistura conteúdo e posição
#
# Com a codificação senoidal, o token $x_p$ na posição $p$ entra no modelo como
# $x_p + PE_p$. A atenção compara dois desses vetores por um produto escalar, que se
# divide em quatro termos:
#
# $$(x_p + PE_p)\cdot(x_s + PE_s) = \underbrace{x_p\cdot x_s}_{\text{content}}
#   + \underbrace{x_p\cdot PE_s + PE_p\cdot x_s}_{\text{content and position}}
#   + \underbrace{PE_p\cdot PE_s}_{\text{position}}.$$
#
# Colocamos dois vetores de token aleatórios ($d = 64$) nas posições 5 e 2 e depois
# levamos os mesmos dois tokens para 105 e 102: o mesmo deslocamento de 3.

# %%
D = 64
rng = np.random.default_rng(0)
x_a, x_b = rng.standard_normal((2, D))


def four_terms(p, s):
    pe_p, pe_s = posenc.encode([p, s], D, dtype=np.float64)
    return {"content": x_a @ x_b, "content·position": x_a @ pe_s + pe_p @ x_b, "position": pe_p @ pe_s,
            "score": (x_a + pe_p) @ (x_b + pe_s)}


near, far = four_terms(5, 2), four_terms(105, 102)
print(f"{'':>17}  {'p, s = 5, 2':>12}  {'105, 102':>9}")
for name in near:
    print(f"{name:>17}  {near[name]:12.3f}  {far[name]:9.3f}")

# %% [markdown]
# Os quatro termos somam a pontuação. O termo de conteúdo é o mesmo nos dois lugares, e o
# termo de posição também: $PE_p \cdot PE_s = \sum_i \cos((p - s)\,w_i)$ depende só do
# deslocamento (notebook 04), aqui a menos do arredondamento em float64. Os dois termos
# mistos não, e eles mudam a pontuação embora nada além da posição absoluta tenha mudado.

# %%
assert abs(near["position"] - far["position"]) < 1e-12, "PE_p · PE_s depends on p - s only"

# %% [markdown]
# Numa camada de atenção de verdade, os vetores passam antes pelas projeções de query e de
# key, $W_q$ e $W_k$. Aí até o termo de posição, $PE_p W_q^\top W_k PE_s$, depende de onde
# o par está, e não só do seu deslocamento:

# %%
W_q, W_k = rng.standard_normal((2, D, D)) / np.sqrt(D)


def projected_position_term(p, s):
    pe_p, pe_s = posenc.encode([p, s], D, dtype=np.float64)
    return (W_q @ pe_p) @ (W_k @ pe_s)


print(f"position term with projections: {projected_position_term(5, 2):.3f} at (5, 2), "
      f"{projected_position_term(105, 102):.3f} at (105, 102)")

# %% [markdown]
# ## 2. Em vez disso, rotacione queries e keys
#
# O RoPE ("rotary position embedding", embedding posicional rotativo, do artigo do
# RoFormer: Su et al., 2021, [arXiv 2104.09864](https://arxiv.org/abs/2104.09864)) não
# soma nada aos vetores dos tokens. Ele pega a query e a key de cada cabeça de atenção
# *depois* das projeções, divide os $d$ canais da cabeça em pares e gira o par $j$ do vetor
# na posição $p$ pelo ângulo $p\,w_j$, com as frequências senoidais $w_j = 10000^{-2j/d}$.
# Aqui $d$ é o tamanho de uma cabeça (`head_dim`), não `d_model`: cada cabeça gira os
# próprios canais nas mesmas $d/2$ frequências. Como matriz, o giro é bloco-diagonal, uma
# rotação $2 \times 2$ por par e zeros no resto:
#
# $$R(p\,w) = \begin{pmatrix} R_2(p\,w_0) & & \\ & \ddots & \\ & & R_2(p\,w_{d/2-1}) \end{pmatrix},
#   \qquad R_2(\theta) = \begin{pmatrix} \cos\theta & -\sin\theta \\ \sin\theta & \cos\theta \end{pmatrix}.$$
#
# Bloco a bloco, a transposta de uma rotação por $a$ seguida de uma rotação por $b$ é uma
# rotação por $b - a$; logo $R(p\,w)^\top R(s\,w) = R((s - p)\,w)$ e
#
# $$\big(R(p\,w)\,q\big)\cdot\big(R(s\,w)\,k\big) = q \cdot R\big((s - p)\,w\big)\,k,$$
#
# uma função apenas do deslocamento $s - p$. Eis a matriz, para uma cabeça de $d = 64$,
# e a identidade conferida para $p = 5$, $s = 2$:

# %%
def rotation_matrix(p, d=D, base=10000.0):
    """R(p w): the (d, d) block-diagonal matrix of the 2x2 rotations by p * w_j."""
    w = base ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)
    c, s = torch.cos(p * w), torch.sin(p * w)
    blocks = torch.stack([c, -s, s, c], dim=-1).view(-1, 2, 2)  # R_2(p w_j) for each pair j
    return torch.block_diag(*blocks)


torch.testing.assert_close(rotation_matrix(5).T @ rotation_matrix(2), rotation_matrix(-3), rtol=0, atol=1e-14)
print("R(5w): shape", tuple(rotation_matrix(5).shape), "with", (rotation_matrix(5) != 0).sum().item(), "nonzero entries")

# %% [markdown]
# Ninguém multiplica por essa matriz: cada par é girado separadamente. Eis a rotação
# escrita em PyTorch, com os canais $2j$ e $2j + 1$ formando o par $j$:

# %%
def rotate(x, positions, d=D, base=10000.0):
    """Turn pair j = channels (2j, 2j+1) of x (..., seq, d) at each position by position * w_j."""
    w = base ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)
    angles = positions.to(torch.float64)[:, None] * w
    a, b = x[..., 0::2], x[..., 1::2]
    return torch.stack([a * angles.cos() - b * angles.sin(), b * angles.cos() + a * angles.sin()], dim=-1).flatten(-2)


# %% [markdown]
# `posenc.torch.rotary_cos_sin` monta as tabelas de cos e sin e
# `posenc.torch.apply_rotary` as aplica; `layout="interleaved"` é este agrupamento. Elas
# concordam com `rotate` a menos do arredondamento em float64 (e com a matriz, e uma
# rotação preserva o comprimento de todo vetor: as duas coisas estão nas verificações
# cruzadas no final).

# %%
positions = torch.arange(64)
q, k = torch.randn(2, D, dtype=torch.float64)
cos, sin = posenc.torch.rotary_cos_sin(positions, D, layout="interleaved", dtype=torch.float64)
rotated_q = posenc.torch.apply_rotary(q.expand(64, D), cos, sin, layout="interleaved")
rotated_k = posenc.torch.apply_rotary(k.expand(64, D), cos, sin, layout="interleaved")

torch.testing.assert_close(rotated_q, rotate(q.expand(64, D), positions), rtol=0, atol=1e-13)
print("cos, sin:", tuple(cos.shape), " rotated q:", tuple(rotated_q.shape))

# %% [markdown]
# A mesma query e a mesma key nas 64 posições dão uma matriz $64 \times 64$ de pontuações,
# `scores[p, s]` para a query em $p$ e a key em $s$. As entradas com o mesmo deslocamento
# $o = s - p$ formam uma das suas diagonais (`torch.diagonal(scores, o)`). Se a pontuação
# depende só do deslocamento, cada diagonal tem um único valor, $q \cdot R(o\,w)\,k$: a
# query sem rotação contra a key girada apenas pelo deslocamento. Conferido para todas as
# 127 diagonais, com tolerância de 1e-12 (o arredondamento em float64 em pontuações
# desse tamanho):

# %%
scores = rotated_q @ rotated_k.T  # scores[p, s]
for o in range(-63, 64):
    expected = q @ rotate(k[None], torch.tensor([o]))[0]  # q · R(o w) k
    torch.testing.assert_close(torch.diagonal(scores, o), expected.expand(64 - abs(o)), rtol=0, atol=1e-12)
print(f"scores from {scores.min().item():.1f} to {scores.max().item():.1f}")

# %% [markdown]
# Os mesmos dois tokens da seção 1, deslizados ao longo da sequência com deslocamento 3:
# com a tabela somada, a pontuação varia com a posição absoluta; com o RoPE, ela fica
# parada, a menos do arredondamento em float64.

# %%
slide = np.arange(200)
added = [four_terms(p + 3, p)["score"] for p in slide]
a_rot = rotate(torch.from_numpy(x_a).expand(200, D), torch.from_numpy(slide + 3))
b_rot = rotate(torch.from_numpy(x_b).expand(200, D), torch.from_numpy(slide))
rotary = (a_rot * b_rot).sum(-1).numpy()
print(f"spread of the score over 200 positions with the added table: {np.ptp(added):.1f}")
assert np.ptp(rotary) < 1e-12, "with RoPE the score of offset 3 is the same at every position"

# %%
fig, ax = plt.subplots(figsize=(8, 3))
ax.plot(slide, added, label="added sinusoidal table: $(x_a + PE_{p+3})\\cdot(x_b + PE_p)$")
ax.plot(slide, rotary, label="RoPE: $R((p+3)w)\\,x_a \\cdot R(p\\,w)\\,x_b$")
ax.set(xlabel="position p of the second token", ylabel="score", title="one pair of tokens at offset 3")
ax.legend(fontsize=8, loc="center right")
plt.show()

# %% [markdown]
# ## 3. Dois layouts: quais canais formam um par
#
# Quais dois canais formam um par é uma questão de convenção, e há duas em uso:
#
# - **interleaved** (intercalado): canal $2j$ com $2j + 1$. O código de referência do Llama da Meta
#   ([meta-llama/llama](https://github.com/meta-llama/llama), que trata cada par como um
#   número complexo), o [GPT-J](https://github.com/kingoflolz/mesh-transformer-jax) (o modelo
#   de 6 bilhões de parâmetros da EleutherAI, de 2021) e o CodeGen (`rotate_every_two`) e, no
#   [transformers](https://huggingface.co/docs/transformers) da Hugging Face (a biblioteca em
#   que a maioria dos checkpoints é compartilhada), os modelos Cohere e GLM, cujo próprio
#   `rotate_half` agrupa vizinhos.
# - **half** (em metades): canal $j$ com $j + d/2$. O [GPT-NeoX](https://github.com/EleutherAI/gpt-neox)
#   (a biblioteca de treino da EleutherAI e seu modelo de 20 bilhões de parâmetros) e a
#   maioria dos modelos do transformers (Llama, Mistral, Qwen2, Gemma, Phi-3, Falcon, ...),
#   cujo `rotate_half(x)` é `cat(-x2, x1)` das duas metades da cabeça.
#
# `tests/test_rotary_packages.py` confere cada uma dessas funções do transformers instalado
# contra o layout indicado aqui.
#
# Para uma cabeça de 8 canais, as frequências são $w_j = 10000^{-2j/8} = 1, 0.1, 0.01, 0.001$.
# A tabela de senos na posição 1 tem $\sin w_j$ nos dois canais do par $j$, então ela mostra
# quais canais formam pares:

# %%
w8 = posenc.rotary_frequencies(8)[0]
pair_of_channel = {"half": np.arange(8) % 4, "interleaved": np.arange(8) // 2}
for layout in posenc.ROTARY_LAYOUTS:
    _, sin1 = posenc.rotary_cos_sin([1], 8, layout=layout, dtype=np.float64)
    assert np.array_equal(sin1[0], np.sin(w8)[pair_of_channel[layout]])
    print(f"{layout:>11}: sin at position 1 = {np.round(sin1[0], 4)}, channel -> pair {pair_of_channel[layout]}")

# %% [markdown]
# O layout em metades é a fórmula do transformers, `x * cos + rotate_half(x) * sin`:

# %%
def rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


x = torch.randn(10, D, dtype=torch.float64)
cos, sin = posenc.torch.rotary_cos_sin(torch.arange(10), D, layout="half", dtype=torch.float64)
torch.testing.assert_close(posenc.torch.apply_rotary(x, cos, sin, layout="half"), x * cos + rotate_half(x) * sin)

# %% [markdown]
# Os dois layouts diferem só na ordem dos canais dentro de cada cabeça. As projeções de
# query e de key produzem esses canais; então reordenar as *linhas* de $W_q$ e $W_k$,
# cabeça por cabeça, passa um checkpoint de um layout para o outro. É isso que o script de
# conversão do Llama no transformers faz com os pesos da Meta, com
# `w.view(heads, head_dim // 2, 2, d_model).transpose(1, 2)`.
# `posenc.rotary_permutation` dá essa ordem de linhas; dentro de uma cabeça, ela é a
# permutação de colunas da tabela senoidal do layout intercalado para `sin_cos` (notebook 05).

# %%
HEADS, HEAD_DIM, D_MODEL = 4, 8, 32
perm = posenc.rotary_permutation(HEAD_DIM, "interleaved", "half", heads=HEADS)
script = torch.arange(D_MODEL).view(HEADS, HEAD_DIM // 2, 2).transpose(1, 2).reshape(-1)
assert (perm == script.numpy()).all(), "posenc's row order is the conversion script's"
print("rows of one head, half layout <- interleaved:", perm[:HEAD_DIM])

# %% [markdown]
# Uma verificação numa camada de atenção aleatória de 4 cabeças: as pontuações dos pesos
# intercalados, rotacionados no layout intercalado, são iguais às dos pesos permutados,
# rotacionados em metades. Rotacionar em metades os pesos não permutados, um erro comum ao
# portar modelos, dá pontuações diferentes.

# %%
def rotary_scores(W_q, W_k, x, layout):
    """Attention scores (heads, seq, seq) of x (seq, d_model) with RoPE in `layout`."""
    q = (x @ W_q.T).view(len(x), HEADS, HEAD_DIM).transpose(0, 1)
    k = (x @ W_k.T).view(len(x), HEADS, HEAD_DIM).transpose(0, 1)
    cos, sin = posenc.torch.rotary_cos_sin(torch.arange(len(x)), HEAD_DIM, layout=layout, dtype=torch.float64)
    q, k = (posenc.torch.apply_rotary(t, cos, sin, layout=layout) for t in (q, k))
    return q @ k.transpose(1, 2)


# %%
meta_q, meta_k = torch.randn(2, D_MODEL, D_MODEL, dtype=torch.float64)
tokens_x = torch.randn(10, D_MODEL, dtype=torch.float64)
hf_q, hf_k = (posenc.convert_rotary_layout(w, "interleaved", "half", heads=HEADS) for w in (meta_q, meta_k))

reference = rotary_scores(meta_q, meta_k, tokens_x, "interleaved")
torch.testing.assert_close(rotary_scores(hf_q, hf_k, tokens_x, "half"), reference, rtol=0, atol=1e-12)
unpermuted = rotary_scores(meta_q, meta_k, tokens_x, "half")
print(f"same scores after the permutation; without it they differ by up to {(unpermuted - reference).abs().max().item():.0f}")

# %% [markdown]
# ## 4. Regras de frequência para contextos mais longos
#
# Um modelo treinado em sequências de $L$ tokens viu o par $j$ em ângulos abaixo de $L\,w_j$.
# Os pares cujo comprimento de onda $2\pi / w_j$ é maior que $L$ nunca deram uma volta
# completa no treino; em posições além de $L$, eles chegam a ângulos que o modelo nunca viu.
# As regras abaixo mudam as frequências para que um contexto mais longo fique dentro dos
# ângulos do treino; cada uma é apresentada no seu próprio parágrafo. No transformers, a
# config de um modelo dá o nome da sua regra em `rope_type`: `default`
# ($w_j = \text{base}^{-2j/d}$) é calculada pela classe rotativa de cada modelo, e as outras
# são as chaves de `modeling_rope_utils.ROPE_INIT_FUNCTIONS` (`linear`, `dynamic`, `yarn`,
# `longrope`, `llama3` e `proportional`, para cabeças que rotacionam só parte dos canais,
# deixada de fora aqui); `posenc.rotary_frequencies` aceita os mesmos nomes e parâmetros.
#
# Tomamos uma cabeça de 128 canais, base 10000, $L = 4096$ e um alvo de 4 vezes isso.

# %%
HEAD, L, FACTOR = 128, 4096, 4
pairs = np.arange(HEAD // 2)
wavelength = {"default": 2 * np.pi / posenc.rotary_frequencies(HEAD)[0]}
default = wavelength["default"]
turns = L / default  # full turns of each pair within the training length
print(f"pairs with a wavelength longer than L: {(default > L).sum()} of {HEAD // 2}; "
      f"turning more than 32 times within L: {(turns > 32).sum()}")

# %% [markdown]
# **Interpolação de posições** (`linear`; Chen et al. 2023, [arXiv 2306.15595](https://arxiv.org/abs/2306.15595))
# divide todas as frequências pelo fator $s$: a posição $p$ gira tanto quanto a posição
# $p/s$ girava, então as posições até $sL$ caem nos ângulos das posições até $L$. O preço:
# dois vizinhos agora estão a $1/s$ de posição um do outro, e os pares rápidos, que
# distinguem vizinhos, giram entre eles por ângulos que o modelo nunca viu. Ela precisa de
# algum ajuste fino (a seção 6 mostra as duas coisas num modelo pequeno).

# %%
wavelength["linear"] = 2 * np.pi / posenc.rotary_frequencies(HEAD, rope_type="linear", factor=FACTOR)[0]
assert np.allclose(wavelength["linear"], FACTOR * default, rtol=1e-15), "every wavelength times s"

# %% [markdown]
# **Escalonamento NTK-aware** (post de bloc97 no Reddit em 2023,
# ["NTK-Aware Scaled RoPE"](https://www.reddit.com/r/LocalLLaMA/comments/14lz7j5/ntkaware_scaled_rope_allows_llama_models_to_have/);
# NTK é o *neural tangent kernel*, núcleo tangente neural (Jacot et al. 2018,
# [arXiv 1806.07572](https://arxiv.org/abs/1806.07572)), uma teoria de como redes largas
# aprendem; segundo ela, uma rede aprende mal funções de alta frequência da sua entrada, a
# menos que a entrada já traga altas frequências (Tancik et al. 2020,
# [arXiv 2006.10739](https://arxiv.org/abs/2006.10739)), daí uma regra que mantém os pares
# rápidos como estão) muda, em vez disso, a base: $b' = b \cdot s^{d/(d-2)}$. Então
# $w'_j = b'^{-2j/d} = w_j \cdot s^{-2j/(d-2)}$: o par 0, o mais rápido, mantém exatamente a
# sua frequência, o par mais lento ($j = d/2 - 1$) é dividido por $s$, e entre eles o divisor
# $s^{2j/(d-2)}$ cresce geometricamente, então os pares rápidos mudam pouco (o par 1, 2.2%
# aqui). A ideia é essa: os pares rápidos dão muitas voltas dentro de $L$, então o modelo os
# viu em todos os ângulos e em todos os deslocamentos entre vizinhos, e eles mantêm esses
# ângulos; os pares lentos, que nunca deram uma volta completa, são esticados quase como na
# interpolação de posições.

# %%
ntk = posenc.rotary_frequencies(HEAD, base=10000 * FACTOR ** (HEAD / (HEAD - 2)))[0]
wavelength["NTK-aware"] = 2 * np.pi / ntk
print(f"pair 1's wavelength grows by {wavelength['NTK-aware'][1] / default[1] - 1:.1%}, "
      f"the slowest pair's {wavelength['NTK-aware'][-1] / default[-1]:.3f} times")
assert wavelength["NTK-aware"][0] == default[0], "pair 0 keeps its frequency exactly"

# %% [markdown]
# **NTK dinâmico** (`dynamic`) é essa regra com $s$ tirado do comprimento atual em vez de
# fixo, $s$ = `factor` · `seq_len` / $L$ − (`factor` − 1): 1 até $L$ (as frequências do
# treino) e 13 em $4L$ com `factor` 4.

# %%
dynamic = dict(factor=FACTOR, max_position_embeddings=L, seq_len=FACTOR * L)
wavelength["dynamic"] = 2 * np.pi / posenc.rotary_frequencies(HEAD, rope_type="dynamic", **dynamic)[0]
s = FACTOR * (FACTOR * L) / L - (FACTOR - 1)
assert s == 13 and np.allclose(wavelength["dynamic"], default * s ** (2 * pairs / (HEAD - 2)), rtol=1e-13)

# %% [markdown]
# **YaRN** ("Yet another RoPE extensioN", Peng et al. 2023,
# [arXiv 2309.00071](https://arxiv.org/abs/2309.00071)) decide par a par, pelo número de
# voltas que cada um dá dentro de $L$: os pares que dão mais de `beta_fast` = 32 voltas
# mantêm a frequência, os que dão menos de `beta_slow` = 1 volta são divididos por $s$ como
# na interpolação de posições, com uma rampa linear nos pares intermediários.

# %%
yarn = dict(factor=FACTOR, original_max_position_embeddings=L)
wavelength["yarn"] = 2 * np.pi / posenc.rotary_frequencies(HEAD, rope_type="yarn", **yarn)[0]
assert (wavelength["yarn"][turns > 32] == default[turns > 32]).all(), "the fast pairs are kept"

# %% [markdown]
# **O fator de atenção.** O YaRN (e o LongRoPE, mais abaixo) também devolve um número $a$
# que multiplica cos e sin; o do YaRN é $a = 0.1 \ln s + 1$. A query e a key rotacionadas
# ficam então ambas $a$ vezes mais longas, de modo que toda pontuação $q \cdot k$ é
# multiplicada por $a^2$: a atenção calcula softmax$(a^2 \cdot \text{scores})$, um softmax
# com temperatura $1/a^2$, mais concentrado para $a > 1$. Conferido numa query e numa key
# aleatórias, uma vez com o fator de atenção do YaRN e outra com `attention_factor=1`:

# %%
a = posenc.rotary_frequencies(HEAD, rope_type="yarn", **yarn)[1]
query, key = np.random.default_rng(5).standard_normal((2, 100, HEAD))


def yarn_scores(**extra):
    cos, sin = posenc.rotary_cos_sin(np.arange(100), HEAD, rope_type="yarn", dtype=np.float64, **yarn, **extra)
    return posenc.apply_rotary(query, cos, sin) @ posenc.apply_rotary(key, cos, sin).T


assert np.allclose(yarn_scores(), a**2 * yarn_scores(attention_factor=1.0), rtol=1e-13)
print(f"YaRN's attention factor at s = {FACTOR}: a = {a:.4f} = 0.1 ln(4) + 1, every score times a² = {a**2:.4f}")

# %% [markdown]
# **A regra do Llama 3.1** (`llama3`; `apply_scaling` no código de referência da Meta,
# [meta-llama/llama-models](https://github.com/meta-llama/llama-models); os modelos são
# descritos em Grattafiori et al. 2024, [arXiv 2407.21783](https://arxiv.org/abs/2407.21783))
# decide pelo comprimento de onda $\lambda_j = 2\pi / w_j$: abaixo de $L$ / `high_freq_factor`,
# mantido; acima de $L$ / `low_freq_factor`, dividido por $s$; e, entre os dois, uma mistura
# das duas frequências,
#
# $$w'_j = (1 - \sigma_j)\,\frac{w_j}{s} + \sigma_j\, w_j, \qquad
#   \sigma_j = \frac{L / \lambda_j - \text{low\_freq\_factor}}{\text{high\_freq\_factor} - \text{low\_freq\_factor}},$$
#
# que vai de $\sigma = 0$ (esticado) em $\lambda = L$ / `low_freq_factor` até
# $\sigma = 1$ (mantido) em $\lambda = L$ / `high_freq_factor`. O Llama 3.1 usa $s = 8$,
# fatores 1 e 4, $L = 8192$ e base 500000; aqui, fatores 1 e 4 com o nosso $L$ e a nossa
# base. O Llama 4 Scout põe os dois fatores em 1 e $s = 16$ (`models/llama4` do mesmo
# repositório): a mistura desaparece, e a regra vira um degrau em $L$.

# %%
llama3 = dict(factor=FACTOR, original_max_position_embeddings=L, low_freq_factor=1, high_freq_factor=4)
wavelength["llama3"] = 2 * np.pi / posenc.rotary_frequencies(HEAD, rope_type="llama3", **llama3)[0]
keep, stretch = default < L / 4, default > L
between = ~keep & ~stretch
sigma = (L / default[between] - 1) / (4 - 1)
blend = (1 - sigma) * (2 * np.pi / default[between]) / FACTOR + sigma * (2 * np.pi / default[between])
print(f"kept: {keep.sum()} pairs, stretched: {stretch.sum()}, blended: pairs {pairs[between]}")
assert np.allclose(wavelength["llama3"][between], 2 * np.pi / blend, rtol=1e-13), "the blend of the formula"

# %%
fig, ax = plt.subplots(figsize=(8, 4.5))
for name, lengths in wavelength.items():
    ax.plot(lengths, label=name, linestyle="--" if name == "default" else "-")
for level, text in [(L, "training length L"), (FACTOR * L, "target 4L")]:
    ax.axhline(level, color="gray", linewidth=0.8)
    ax.text(0, level * 1.15, text, fontsize=8)
ax.set(yscale="log", xlabel="pair j", ylabel="wavelength 2π / w_j (positions)",
       title="RoPE frequency rules, head of 128, base 10000, L = 4096, factor 4")
ax.legend()
plt.show()

# %% [markdown]
# Na figura: a interpolação de posições desloca todos os comprimentos de onda para cima pelo
# mesmo fator; o escalonamento NTK-aware e o `dynamic` deixam o par mais rápido onde está e
# inclinam a linha para cima; o YaRN e o `llama3` mantêm os comprimentos de onda curtos (ali
# as suas linhas escondem a linha tracejada do default), esticam os longos exatamente 4
# vezes e fazem a mistura no meio. Toda regra, exceto o escalonamento NTK-aware com $s = 4$
# fixo, estica pelo menos 4 vezes cada comprimento de onda maior que $L$ (a menos do
# arredondamento em float64, o $10^{-15}$ abaixo), então até $4L$ esses pares ficam dentro
# dos ângulos do treino; com $s$ fixo, só o par mais lento recebe o fator inteiro.

# %%
for name in ["linear", "dynamic", "yarn", "llama3"]:
    assert (wavelength[name][default > L] >= FACTOR * default[default > L] * (1 - 1e-15)).all(), name

# %% [markdown]
# **LongRoPE** (Ding et al. 2024, [arXiv 2402.13753](https://arxiv.org/abs/2402.13753))
# divide cada frequência pelo seu próprio fator, encontrado por uma busca: `short_factor`
# para sequências até $L$, `long_factor` além disso, e um fator de atenção
# $a = \sqrt{1 + \ln s / \ln L}$. As listas publicadas não precisam começar em 1, então o
# LongRoPE pode desacelerar até o par mais rápido. A config do Phi-3-vision-128k-instruct da
# Microsoft (cabeça de 96, $L = 4096$, 131072 posições, logo $s = 32$) tem 48 fatores longos,
# de 1.03 a 64.81:

# %%
PHI3_VISION_LONG_FACTOR = [  # rounded to 2 decimals (the config stores their float32 values)
    1.03, 1.05, 1.05, 1.08, 1.23, 1.23, 1.30, 1.45, 1.60, 1.65, 1.90, 2.86, 3.69, 5.42, 5.49, 5.49,
    9.09, 11.58, 15.66, 15.77, 15.79, 18.36, 21.99, 23.08, 30.01, 32.35, 32.59, 35.56, 39.95, 53.84, 56.20, 57.95,
    59.29, 59.77, 59.92, 61.19, 61.96, 62.50, 63.37, 63.48, 63.48, 63.66, 63.85, 64.08, 64.76, 64.80, 64.81, 64.81,
]
phi3 = dict(long_factor=PHI3_VISION_LONG_FACTOR, short_factor=[1.0] * 48,  # short: used up to L only, not the config's
            original_max_position_embeddings=4096, max_position_embeddings=131072, seq_len=131072)
w_phi3, a_phi3 = posenc.rotary_frequencies(96, rope_type="longrope", **phi3)
w_96 = posenc.rotary_frequencies(96)[0]
assert np.isclose(w_96[0] / w_phi3[0], 1.03, rtol=1e-15), "the fastest pair slowed by its factor 1.03"
print(f"fastest pair: wavelength {2 * np.pi / w_96[0]:.3f} -> {2 * np.pi / w_phi3[0]:.3f}; attention factor {a_phi3:.4f}")

# %% [markdown]
# ## 5. Precisão em posições longas
#
# O ângulo $p\,w_j$ cresce com a posição, e um número de ponto flutuante do tamanho de
# $p\,w_j$ só é tão exato quanto o seu último bit. Além de float32, os modelos rodam em dois
# formatos de 16 bits: float16 (meia precisão IEEE: 11 bits significativos, maior valor
# 65504) e [bfloat16](https://en.wikipedia.org/wiki/Bfloat16_floating-point_format) (o "brain
# float" do Google: o alcance do float32, mas só 8 bits significativos). A seguir, três
# relatos públicos, reproduzidos em miniatura.
#
# **Tabelas de cos e sin em float16** ([EleutherAI/gpt-neox issue 1003](https://github.com/EleutherAI/gpt-neox/issues/1003)):
# com tamanho de cabeça 32, o ângulo do par 1 na posição 1857 deveria ser 1044.27; em
# float16 ele sai como 1045, e, ao longo das 2048 posições da tabela, o cosseno erra por
# até 0.78.

# %%
def float32_frequencies(head_dim, base=10000.0):
    """inv_freq as transformers and GPT-NeoX compute it: float32, 1 / base ** (2j / d)."""
    return 1.0 / (base ** (torch.arange(0, head_dim, 2, dtype=torch.int64).float() / head_dim))


inv_freq = float32_frequencies(32)
angles_fp32 = torch.outer(torch.arange(2048).float(), inv_freq)
angles_fp16 = torch.outer(torch.arange(2048).half(), inv_freq.half())
error_fp16 = (angles_fp16.cos().float() - angles_fp32.cos()).abs()
print(f"angle of pair 1 at 1857: {angles_fp32[1857, 1].item():.2f} in float32, {angles_fp16[1857, 1].item():.0f} in float16; "
      f"largest cos error {error_fp16.max().item():.2f}")

# %% [markdown]
# O posenc calcula os ângulos com precisão maior e arredonda só cos e sin para o dtype
# pedido. A sua promessa: cada valor fica a no máximo um arredondamento de float16
# ($2^{-12}$, meia unidade na última casa para valores de tamanho no máximo 1) de um valor
# que está a menos de 2e-7 do exato.

# %%
cos16, _ = posenc.torch.rotary_cos_sin(torch.arange(2048), 32, dtype=torch.float16)
exact = np.cos(np.outer(np.arange(2048), posenc.rotary_frequencies(32)[0]))
posenc_error_fp16 = np.abs(cos16[:, :16].double().numpy() - exact).max()
print(f"posenc in float16, same table: largest error {posenc_error_fp16:.1e}")
assert posenc_error_fp16 <= 2.0**-12 + 2e-7, "one float16 rounding of a value within 2e-7"

# %% [markdown]
# **inv_freq arredondado para bfloat16** ([sgl-project/sglang-jax issue 1472](https://github.com/sgl-project/sglang-jax/issues/1472),
# um port para JAX do motor de serviço SGLang): as frequências eram convertidas para o
# bfloat16 do modelo antes do produto com as posições em float32. O bfloat16 guarda 8 bits
# significativos, então cada $w_j$ se move até 1 parte em 256. Na posição 4095, isso não
# muda nada o ângulo do par 0 ($w_0 = 1$, exato em bfloat16), mas muda outros em até 5
# radianos, quase uma volta completa:

# %%
w128 = posenc.rotary_frequencies(128)[0]  # float64
w128_bf16 = float32_frequencies(128).bfloat16().double().numpy()
angle_error = np.abs(4095 * w128_bf16 - 4095 * w128)
print(f"angle error at 4095: pair 0 {angle_error[0]:.0f}, largest {angle_error.max():.1f} rad")
assert np.abs(w128_bf16 / w128 - 1).max() <= 2.0**-8, "each frequency within 1 part in 256"

# %%
cos_sin_error = np.abs(np.concatenate([np.cos(4095 * w128_bf16) - np.cos(4095 * w128),
                                       np.sin(4095 * w128_bf16) - np.sin(4095 * w128)]))
print(f"of the 128 values of cos and sin at position 4095, {(cos_sin_error > 0.01).sum()} are off by more than 0.01,")
print(f"the worst by {cos_sin_error.max():.2f}")

# %% [markdown]
# **Tudo em bfloat16** ([huggingface/candle pull request 3520](https://github.com/huggingface/candle/pull/3520);
# o candle é o framework de machine learning da Hugging Face em Rust): o modelo Qwen2 do
# candle convertia `inv_freq` *e* as posições para o dtype do modelo (bfloat16), multiplicava
# os dois e calculava sin e cos em bfloat16; o pull request mantém tudo isso em float32 e
# converte só o resultado. Uma posição num tipo de meia precisão já está arredondada. Entre
# $2^k$ e $2^{k+1}$, o float16 (11 bits significativos) representa um a cada $2^{k-10}$
# inteiros e o bfloat16 (8 bits), um a cada $2^{k-7}$: de 16 384 a 32 768, um a cada 16 e
# um a cada 128; de 32 768 a 65 536, um a cada 32 e um a cada 256. O float16 termina em
# 65 504: posições maiores são arredondadas para 65 504 e, a partir de 65 520, para
# infinito. O bfloat16 tem o alcance do float32, então 15 962 vira 15 936, mas nada estoura.

# %%
def spacing(start, stop, dtype):
    """The gaps between the integers of [start, stop] that survive a round trip through dtype."""
    values = torch.arange(start, stop + 1, dtype=torch.float64)
    return torch.diff(values[values.to(dtype).double() == values]).unique().tolist()


for start in [2048, 8192, 16384, 32768]:
    power = int(np.log2(start))  # start = 2^power
    gaps = spacing(start, 2 * start, torch.float16), spacing(start, 2 * start, torch.bfloat16)
    print(f"{start:>6} to {2 * start:>6}: integers in steps of {gaps[0][0]:.0f} in float16, {gaps[1][0]:.0f} in bfloat16")
    assert gaps == ([2 ** (power - 10)], [2 ** (power - 7)]), "11 and 8 significant bits"

# %% [markdown]
# **O erro do posenc em função da posição.** O transformers calcula a tabela em float32: o
# módulo rotativo do Llama (e os muitos modelos que o copiam) multiplica
# `position_ids[..., None].float()` por `inv_freq` elemento a elemento e depois calcula cos e
# sin, a primeira linha abaixo (aqui com `torch.outer`: os mesmos produtos). O posenc guarda
# cada ângulo em dois números float64 (cerca do dobro dos dígitos do float64) e promete cos
# e sin a menos de 2e-7 do valor exato em float32, e a no máximo um arredondamento de tal
# valor em float16 e bfloat16. Comparamos com uma referência calculada pelo
# [mpmath](https://mpmath.org) (ponto flutuante de precisão arbitrária em Python) com 40
# dígitos significativos, em posições de 1 a $10^6$, tamanho de cabeça 128, em todos os 64
# pares:

# %%
sample = np.unique(np.geomspace(1, 1e6, 49).round()).astype(np.int64)
with mpmath.workdps(40):  # the frequencies too: at mpmath's default precision they would carry float64's rounding
    w_exact = [mpmath.mpf(10000) ** (-mpmath.mpf(2 * j) / 128) for j in range(64)]
    exact_cos = np.array([[float(mpmath.cos(int(p) * w)) for w in w_exact] for p in sample])
    exact_sin = np.array([[float(mpmath.sin(int(p) * w)) for w in w_exact] for p in sample])


def worst_error(cos, sin):
    """Largest |error| of cos and sin (positions, 64) at each sampled position."""
    cos, sin = (torch.as_tensor(t).double().numpy() for t in (cos, sin))
    return np.maximum(np.abs(cos - exact_cos), np.abs(sin - exact_sin)).max(axis=1)


# %% [markdown]
# Quatro caminhos do tipo do transformers, cada um com mais uma coisa em bfloat16, e o do posenc:

# %%
def float32_route(positions_dtype=torch.float32, inv_freq_dtype=torch.float32, dtype=torch.float32):
    """cos, sin from positions and inv_freq rounded to their dtypes, multiplied and turned in dtype."""
    inv_freq = float32_frequencies(128).to(inv_freq_dtype).to(dtype)
    angles = torch.outer(torch.from_numpy(sample).to(positions_dtype).to(dtype), inv_freq)
    return angles.cos(), angles.sin()


def posenc_route(dtype):
    cos, sin = posenc.torch.rotary_cos_sin(torch.from_numpy(sample), 128, dtype=dtype)
    return cos[:, :64], sin[:, :64]


# %%
errors = {
    "float32 (transformers)": worst_error(*float32_route()),
    "inv_freq in bfloat16": worst_error(*float32_route(inv_freq_dtype=torch.bfloat16)),
    "positions in bfloat16": worst_error(*float32_route(positions_dtype=torch.bfloat16)),
    "all in bfloat16 (candle before 3520)": worst_error(*float32_route(torch.bfloat16, torch.bfloat16, torch.bfloat16)),
    "posenc, float32": worst_error(*posenc_route(torch.float32)),
    "posenc, bfloat16": worst_error(*posenc_route(torch.bfloat16)),
}

# %%
fig, ax = plt.subplots(figsize=(8, 4.5))
for name, error in errors.items():
    ax.plot(sample, np.maximum(error, 1e-10), label=name, linestyle="-" if name.startswith("posenc") else "--")
ax.set(xscale="log", yscale="log", xlabel="position", ylabel="largest |error| of cos, sin",
       title="RoPE cos/sin error against position, head of 128", ylim=(1e-9, 10))
ax.legend(fontsize=8)
plt.show()

# %% [markdown]
# O posenc cumpre essa promessa em todas as posições amostradas até $10^6$: a menos de 2e-7
# em float32 e, em bfloat16, a menos de meia unidade na sua última casa ($2^{-9}$ para
# valores de tamanho no máximo 1) mais 2e-7. O caminho em float32 erra por cerca de 5e-3 em
# $10^5$ e 5e-2 em $10^6$ (um algarismo significativo, na tabela), e por mais de 1e-3 em
# todas as posições amostradas a partir de $10^5$; com as frequências ou as posições em
# bfloat16, ou com tudo, o erro chega ao tamanho do próprio cos e sin (acima de 0.5) até a
# posição 4096.

# %%
print(f"{'position':>36}" + "".join(f"{p:>11,}" for p in [10**3, 10**4, 10**5, 10**6]))
for name, error in errors.items():
    print(f"{name:>36}" + "".join(f"{error[sample == p][0]:11.1e}" for p in [10**3, 10**4, 10**5, 10**6]))
assert errors["posenc, float32"].max() <= 2e-7, "posenc's float32 promise"

# %% [markdown]
# ## 6. Num Transformer: copiar o token anterior
#
# A tarefa do notebook 07: sequências de 12 tokens aleatórios dentre 16 e, em cada posição,
# o modelo deve produzir o token que está uma casa à esquerda (a posição 0 não é
# avaliada). As funções auxiliares são as do notebook 07, importadas acima de `posenc.lessons`:
# `copy_previous_task`, `accuracy`, `order_blind_ceiling`, `train`, `predict`,
# `first_step_above` e `LearnedPositions`.

# %%
assert (VOCAB, TRAIN_LENGTH) == (16, 12), "notebook 07's task"
test_sets = {n: copy_previous_task(np.random.default_rng(n), 1000, n) for n in [TRAIN_LENGTH, 24, 48]}
ceilings = {n: order_blind_ceiling(tokens) for n, (tokens, _) in test_sets.items()}

# %% [markdown]
# O `nn.TransformerEncoderLayer` do PyTorch não dá acesso às queries e keys, então
# escrevemos a mesma camada por extenso (pós-normalização, 4 cabeças de 8 canais,
# feed-forward de 64, ReLU, sem dropout), em dois passos. `self_attention` projeta a entrada
# em queries, keys e values, divide cada uma nas 4 cabeças, gira as queries e as keys com o
# RoPE se receber um módulo rotativo e aplica a atenção. O cos e o sin do RoPE vêm de
# `posenc.torch.RotaryEmbedding`, um módulo como os embeddings rotativos do transformers:
# `forward(x, position_ids)` devolve `(cos, sin)`. Ele é construído para uma cabeça
# (`HEAD_DIM` = 8), então as suas frequências são $10000^{-2j/8}$ = 1, 0.1, 0.01, 0.001, e
# não as de `d_model` = 32, e todas as cabeças usam o mesmo cos e sin.

# %%
D_MODEL, HEADS = 32, 4
HEAD_DIM = D_MODEL // HEADS


def heads(t):
    """(batch, length, D_MODEL) -> (batch, HEADS, length, HEAD_DIM): the channels of each head."""
    return t.view(*t.shape[:2], HEADS, HEAD_DIM).transpose(1, 2)


assert np.allclose(posenc.torch.RotaryEmbedding(HEAD_DIM).inv_freq.numpy(), [1, 0.1, 0.01, 0.001], rtol=1e-15)


# %%
def self_attention(x, qkv, out, rotary=None):
    """Multi-head self-attention of x (batch, length, D_MODEL); `rotary` (if given) turns q and k."""
    q, k, v = (heads(t) for t in qkv(x).chunk(3, dim=-1))
    if rotary is not None:
        cos, sin = rotary(q, torch.arange(x.shape[1])[None])  # (1, length, HEAD_DIM)
        cos, sin = cos[:, None], sin[:, None]  # (1, 1, length, HEAD_DIM): the same for every head
        q, k = posenc.torch.apply_rotary(q, cos, sin), posenc.torch.apply_rotary(k, cos, sin)
    attended = nn.functional.scaled_dot_product_attention(q, k, v)  # (batch, HEADS, length, HEAD_DIM)
    return out(attended.transpose(1, 2).flatten(2))


# %% [markdown]
# A camada soma a atenção à sua entrada e normaliza, depois faz o mesmo com uma rede
# feed-forward. Os quatro modelos a usam; os outros três somam as suas posições aos
# embeddings dos tokens, como no notebook 07.

# %%
class EncoderLayer(nn.Module):
    def __init__(self, rotary=None):
        super().__init__()
        self.qkv, self.out = nn.Linear(D_MODEL, 3 * D_MODEL), nn.Linear(D_MODEL, D_MODEL)
        self.norm1, self.norm2 = nn.LayerNorm(D_MODEL), nn.LayerNorm(D_MODEL)
        self.feed_forward = nn.Sequential(nn.Linear(D_MODEL, 64), nn.ReLU(), nn.Linear(64, D_MODEL))
        self.rotary = rotary  # a posenc.torch.RotaryEmbedding, or None

    def forward(self, x):
        x = self.norm1(x + self_attention(x, self.qkv, self.out, self.rotary))
        return self.norm2(x + self.feed_forward(x))


# %%
ADDED = {
    "none": nn.Identity,
    "learned": lambda: LearnedPositions(D_MODEL, TRAIN_LENGTH),
    "sinusoidal": lambda: posenc.torch.PositionalEncoding(D_MODEL),
    "rotary": nn.Identity,
}
COLORS = {"none": "C0", "learned": "C1", "sinusoidal": "C2", "rotary": "C3"}


def tiny_transformer(positions):
    torch.manual_seed(0)
    layer = EncoderLayer(posenc.torch.RotaryEmbedding(HEAD_DIM) if positions == "rotary" else None)
    return nn.Sequential(nn.Embedding(VOCAB, D_MODEL), ADDED[positions](), layer, nn.Linear(D_MODEL, VOCAB))


# %% [markdown]
# Treino como no notebook 07: 300 passos do otimizador Adam em lotes de 64 sequências
# novas, as mesmas sequências na mesma ordem para todos os modelos.

# %%
assert (STEPS, BATCH) == (300, 64), "notebook 07's training run"
train_tokens, train_targets = copy_previous_task(np.random.default_rng(1), STEPS * BATCH, TRAIN_LENGTH)
models = {name: tiny_transformer(name) for name in ADDED}
curves = {name: train(model, train_tokens, train_targets, steps=STEPS)[1] for name, model in models.items()}

# %% [markdown]
# Acurácia em 1000 sequências novas do comprimento de treino e de duas e quatro vezes ele,
# separada entre as posições abaixo de 12 (vistas no treino) e a partir de 12 (nunca
# vistas). A tabela aprendida não tem linhas depois da posição 11, então esse modelo roda
# só no comprimento 12.

# %%
def accuracy_by_position(model, tokens, targets):
    return (predict(model, tokens)[:, 1:] == targets[:, 1:]).mean(axis=0)  # positions 1..length-1


by_position = {(name, n): accuracy_by_position(model, *test_sets[n]) for name, model in models.items()
               for n in test_sets if name != "learned" or n == TRAIN_LENGTH}
seen, unseen = slice(0, TRAIN_LENGTH - 1), slice(TRAIN_LENGTH - 1, None)

# %%
# NBVAL_IGNORE_OUTPUT
print(f"{'':>10}  {'length 12':>9}  {'24: seen | unseen':>17}  {'48: seen | unseen':>17}")
for name in models:
    row = f"{name:>10}  {by_position[name, 12].mean():9.2f}"
    for n in [24, 48]:
        split = "—" if name == "learned" else f"{by_position[name, n][seen].mean():.2f} | {by_position[name, n][unseen].mean():.2f}"
        row += f"  {split:>17}"
    print(row)
print(f"{'ceiling':>10}  {ceilings[12]:9.2f}  {ceilings[24]:17.2f}  {ceilings[48]:17.2f}")
print("above 0.9 on a training batch from step:", {name: first_step_above(curve) for name, curve in curves.items()})

# %% [markdown]
# No comprimento de treino, os três métodos de posição resolvem a tarefa (acima de 0.9), e
# o modelo sem posições fica a menos de 0.05 do teto cego à ordem. Além dele, o modelo
# senoidal falha nas posições que nunca viu (abaixo de 0.5), como no notebook 07. O modelo
# com RoPE fica acima de 0.95 em todas as posições de sequências quatro vezes mais longas:
# ele só precisa prestar atenção ao deslocamento −1, e, com o RoPE, a pontuação desse
# deslocamento é a mesma em todas as posições.

# %%
assert (by_position["rotary", 48] > 0.95).all(), "RoPE at every position of 4 times the training length"

# %%
fig, ax = plt.subplots(figsize=(9, 3.5))
for name in ["none", "sinusoidal", "rotary"]:
    ax.plot(range(1, 48), by_position[name, 48], color=COLORS[name], marker=".", label=f"{name}, length 48")
ax.axvline(TRAIN_LENGTH - 0.5, color="gray", linestyle="--", label="training length")
ax.set(xlabel="position", ylabel="accuracy", ylim=(0, 1.05), title="copy the previous token, 4 times the training length")
ax.legend()
plt.show()

# %% [markdown]
# ### Oito vezes o comprimento de treino, e duas regras de frequência
#
# Com 96 tokens, o modelo com RoPE acerta (acima de 0.99) em todas as posições de 34 a 63, e
# bem menos no resto (abaixo de 0.7 em média). A culpa é dos outros deslocamentos: o par 1
# tem comprimento de onda $2\pi \cdot 10 \approx 62.8$, então uma key 64 casas para trás, ou
# 62 para a frente, fica girada a menos de 0.17 rad do giro do vizinho nos dois pares rápidos
# (nos pares 2 e 3, os dois giros diferem por 0.63 e 0.063 rad), e o modelo confunde os dois.
# As posições de 1 a 33 têm uma key 62 casas à frente, as posições de 64 a 95, uma 64 casas
# atrás, e as posições entre elas não têm nenhuma das duas.

# %%
long_test = copy_previous_task(np.random.default_rng(96), 1000, 96)
at_96 = {"default": accuracy_by_position(models["rotary"], *long_test)}  # index i: position i + 1
aliased = np.r_[0:33, 63:95]  # positions 1..33 and 64..95
assert at_96["default"][33:63].min() > 0.99, "right at every position with no aliased key"

w_head = posenc.rotary_frequencies(HEAD_DIM)[0]
for offset in (62, -64):
    turn = np.abs(np.angle(np.exp(1j * (offset - (-1)) * w_head)))  # angle between the turns of the two offsets
    print(f"offset {offset:>3} against -1: the turns differ by {np.round(turn, 3)} rad in pairs 0..3")

# %% [markdown]
# O escalonamento NTK-aware por 4 (a base vira $10000 \cdot 4^{8/6}$) mantém o par 0 como
# era e estica o par 1 até um comprimento de onda de cerca de 99.7, maior que a sequência.
# Trocado no modelo já treinado, sem nenhum treino adicional, ele leva a acurácia no
# comprimento 96 para acima de 0.9 em todas as posições e mantém o comprimento de treino
# acima de 0.99.

# %%
ntk_model = copy.deepcopy(models["rotary"])  # a copy: models["rotary"] stays as trained
ntk_model[2].rotary = posenc.torch.RotaryEmbedding(HEAD_DIM, base=10000 * 4 ** (HEAD_DIM / (HEAD_DIM - 2)))
print(f"pair 1's wavelength: {2 * np.pi / ntk_model[2].rotary.inv_freq[1].item():.1f}")
at_96["NTK-aware, s = 4"] = accuracy_by_position(ntk_model, *long_test)
assert at_96["NTK-aware, s = 4"].min() > 0.9, "NTK-aware scaling, no training: every position of 96"

# %%
fig, ax = plt.subplots(figsize=(9, 3))
for name, accuracies in at_96.items():
    ax.plot(range(1, 96), accuracies, marker=".", label=f"RoPE, {name}")
ax.axvline(TRAIN_LENGTH - 0.5, color="gray", linestyle="--", label="training length")
ax.set(xlabel="position", ylabel="accuracy", ylim=(0, 1.05), title="copy the previous token, 8 times the training length")
ax.legend()
plt.show()

# %% [markdown]
# A interpolação de posições (`rope_type="linear"`) divide as frequências por um fator, o
# mesmo que dividir as posições por ele, para que uma sequência duas vezes mais longa seja
# girada como uma do comprimento de treino (as posições de 0 a 23 viram 0 a 11.5). Ela muda
# também os deslocamentos: os vizinhos agora estão a meia posição um do outro, um ângulo que
# o modelo nunca viu, em todos os pares. Aplicada a uma cópia do modelo com RoPE treinado,
# com fator 2 e sem mais treino, ela quebra o modelo (abaixo de 0.5), até no comprimento de
# treino. Um ajuste fino com as posições interpoladas em 50 lotes de comprimento 24 o
# conserta em todos os comprimentos (acima de 0.95), e um lote de treino passa de 0.9 em
# menos passos do que o modelo precisou treinando do zero.

# %%
interpolated = copy.deepcopy(models["rotary"])  # fine-tuned below; models["rotary"] stays as trained
interpolated[2].rotary = posenc.torch.RotaryEmbedding(HEAD_DIM, rope_type="linear", factor=2)
before = {n: accuracy(predict(interpolated, tokens), targets) for n, (tokens, targets) in test_sets.items()}
_, fine_tuning = train(interpolated, *copy_previous_task(np.random.default_rng(3), 50 * BATCH, 24), steps=50)
after = {n: accuracy(predict(interpolated, tokens), targets) for n, (tokens, targets) in test_sets.items()}

# %%
# NBVAL_IGNORE_OUTPUT
for n in test_sets:
    print(f"length {n}: {before[n]:.2f} before fine-tuning, {after[n]:.2f} after")
print(f"fine-tuning above 0.9 from step {first_step_above(fine_tuning)}; "
      f"from scratch: step {first_step_above(curves['rotary'])}")

# %%
assert first_step_above(fine_tuning) < first_step_above(curves["rotary"]), "fine-tuning is quicker than training"

# %% [markdown]
# ## Resumo
#
# - Um vetor de posição somado põe termos cruzados conteúdo·posição em toda pontuação de atenção,
#   então a pontuação de dois tokens depende de onde eles estão, e não só da distância entre eles.
# - O RoPE rotaciona as queries e keys de cada cabeça por $R(p\,w)$, rotações 2×2
#   bloco-diagonais nas frequências da cabeça; aí a pontuação depende só do deslocamento, a
#   menos do arredondamento em float64.
# - O layout intercalado (referência da Meta, GPT-J, CodeGen, Cohere, GLM) e o em metades
#   (GPT-NeoX, Llama e a maioria dos modelos do transformers) agrupam canais diferentes;
#   permutar as linhas de $W_q$ e $W_k$ por cabeça passa um checkpoint de um para o outro exatamente.
# - Para contextos mais longos, a interpolação de posições desacelera todos os pares, o
#   escalonamento NTK-aware e o `dynamic` aumentam a base, o YaRN e o `llama3` esticam só os
#   pares lentos, o LongRoPE escala cada par pelo seu próprio fator (o primeiro do
#   Phi-3-vision é 1.03); o YaRN e o LongRoPE também multiplicam toda pontuação por $a^2$.
# - Os ângulos de posições longas precisam de mais precisão do que float16 ou bfloat16 dão,
#   e o float32 erra por cerca de 5e-3 na posição $10^5$; o posenc fica a menos de 2e-7 em
#   float32 até $10^6$.
# - Na tarefa de cópia, o RoPE é o único método de posição que continua igualmente bom com
#   quatro vezes o comprimento de treino; com oito vezes, o escalonamento NTK-aware resolve
#   sem treino, e a interpolação de posições precisa de um ajuste fino curto.
#
# ## Exercícios
#
# Cada exercício tem uma verificação que diz o que está errado. Quando você travar,
# `nb08.<exercise>.hint()` dá uma dica e `nb08.<exercise>.solution()` mostra o código de
# referência.

# %%
from posenc.exercises import nb08

# %% [markdown]
# ### Exercício 1 · Rotacionar uma query à mão, layout em metades
#
# Tome uma cabeça de 8 canais, a query $q = (1, 2, \dots, 8)$, na posição 3. Rotacione-a
# do jeito que o Llama do transformers faz (seção 3): `q * cos + rotate_half(q) * sin`, com
# cos e sin dos ângulos $3\,w_j$ dispostos no layout em metades. Use só `torch` (sem o
# posenc). O rascunho abaixo tem um erro; a verificação diz qual.

# %%
q8 = torch.arange(1.0, 9.0, dtype=torch.float64)
angles8 = 3 * 10000.0 ** (-torch.arange(0, 8, 2, dtype=torch.float64) / 8)  # 3 w_j, j = 0..3
cos8, sin8 = torch.cat((angles8, angles8)).cos(), torch.cat((angles8, angles8)).sin()
first, second = q8.chunk(2)
my_rotated_q = q8 * cos8 + torch.cat((second, -first)) * sin8  # x * cos + rotate_half(x) * sin

# %%
nb08.rotated_query.check(my_rotated_q)

# %% [markdown]
# ### Exercício 2 · Dos pesos da Meta para o layout em metades
#
# Um checkpoint no layout intercalado da Meta tem `heads` cabeças de `head_dim` canais.
# Escreva `half_rows(heads, head_dim)`: a ordem de linhas `perm` tal que `W_q[perm]` e
# `W_k[perm]` deem as mesmas pontuações com `rotate_half` (seção 3). Deduza-a você mesmo em
# vez de chamar `posenc.rotary_permutation`; a verificação testa 4 cabeças de 8 e 2 cabeças
# de 16.

# %%
def half_rows(heads, head_dim):
    rows = np.arange(heads * head_dim).reshape(heads, 2, head_dim // 2)
    return rows.transpose(0, 2, 1).reshape(-1)


# %%
nb08.half_rows.check(half_rows)

# %% [markdown]
# ### Exercício 3 · O comprimento de onda de um par sob o llama3
#
# As cabeças do Llama 3.1 têm 128 canais e base 500000, e a sua regra `llama3` usa $s = 8$,
# `low_freq_factor` 1, `high_freq_factor` 4 e $L = 8192$ (seção 4). Qual comprimento de
# onda, em posições, o par $j = 32$ tem depois da regra? Calcule-o à mão com a fórmula da
# seção 4 (NumPy ou `math`, sem o posenc); o rascunho para um passo antes do fim.

# %%
w32 = 500000.0 ** (-2 * 32 / 128)
wavelength32 = 2 * np.pi / w32
my_wavelength = 2 * np.pi / (w32 / 8)

# %%
nb08.llama3_wavelength.check(my_wavelength)

# %% [markdown]
# ## Verificações cruzadas
#
# As verificações por trás das frases acima que as próprias células de ensino não
# testaram, e depois NumPy e TensorFlow contra PyTorch.

# %%
# Cross-checks of sections 1 to 3
# 1. The four terms add up; content and position terms equal, mixed terms and scores not.
for terms in (near, far):
    assert np.isclose(terms["content"] + terms["content·position"] + terms["position"], terms["score"], rtol=1e-12)
assert near["content"] == far["content"]
assert not np.isclose(near["content·position"], far["content·position"]) and not np.isclose(near["score"], far["score"])
assert not np.isclose(projected_position_term(5, 2), projected_position_term(105, 102))
# 2. posenc's rotation is the matrix and keeps lengths; the added table's score wanders.
torch.testing.assert_close(rotated_q[5], rotation_matrix(5) @ q, rtol=0, atol=1e-13)
torch.testing.assert_close(rotated_q.norm(dim=-1), q.norm().expand(64), rtol=1e-14, atol=0)
assert np.ptp(added) > 1e6 * np.ptp(rotary)
# 3. The frequencies of a head of 8; the row order is the sinusoidal column permutation; unpermuted is wrong.
assert np.allclose(w8, [1, 0.1, 0.01, 0.001], rtol=1e-15)
assert (perm[:HEAD_DIM] == posenc.layout_permutation(HEAD_DIM, "interleaved", "sin_cos")).all()
assert not torch.allclose(unpermuted, reference)

# %%
# Cross-checks of section 4, NTK-aware, dynamic and YaRN
# NTK-aware: w_j s^(-2j/(d-2)), the slowest pair divided by s, pair 1 by 2.2%; dynamic at L is the default.
assert np.allclose(wavelength["NTK-aware"], default * FACTOR ** (2 * pairs / (HEAD - 2)), rtol=1e-13)
assert np.isclose(wavelength["NTK-aware"][-1], FACTOR * default[-1], rtol=1e-13)
assert round(wavelength["NTK-aware"][1] / default[1], 3) == 1.022
at_L = posenc.rotary_frequencies(HEAD, rope_type="dynamic", **{**dynamic, "seq_len": L})[0]
assert np.array_equal(2 * np.pi / at_L, default)
#    YaRN: the slow pairs divided by s, a = 0.1 ln s + 1.
assert np.allclose(wavelength["yarn"][turns < 1], FACTOR * default[turns < 1], rtol=1e-15)
assert np.isclose(a, 0.1 * np.log(FACTOR) + 1, rtol=1e-15)

# %%
# Cross-checks of section 4, llama3, NTK-aware against s, LongRoPE
# llama3: kept below L/4, stretched above L, between the two; both factors 1 make a step at L.
assert (wavelength["llama3"][keep] == default[keep]).all()
assert np.allclose(wavelength["llama3"][stretch], FACTOR * default[stretch], rtol=1e-15)
assert between.any() and (default[between] < wavelength["llama3"][between]).all()
assert (wavelength["llama3"][between] < FACTOR * default[between]).all()
step = 2 * np.pi / posenc.rotary_frequencies(HEAD, rope_type="llama3", **{**llama3, "high_freq_factor": 1})[0]
assert (step[default < L] == default[default < L]).all()
assert np.allclose(step[default > L], FACTOR * default[default > L], rtol=1e-15)
#    NTK-aware with a fixed s stretches all but the slowest long wavelength less than s; all but linear keep pair 0.
assert (wavelength["NTK-aware"][default > L][:-1] < FACTOR * default[default > L][:-1]).all()
for name in ["NTK-aware", "dynamic", "yarn", "llama3"]:
    assert wavelength[name][0] == default[0], name
#    LongRoPE: 48 factors up to 64.81, the fastest pair slowed, a = sqrt(1 + ln s / ln L).
assert len(PHI3_VISION_LONG_FACTOR) == 48 and PHI3_VISION_LONG_FACTOR[-1] == 64.81 and w_phi3[0] < w_96[0]
assert np.isclose(a_phi3, np.sqrt(1 + np.log(32) / np.log(4096)), rtol=1e-15)

# %%
# Cross-checks of section 5: the gpt-neox report's numbers; 5 rad at 4095; float16's end and bfloat16's rounding.
assert round(angles_fp32[1857, 1].item(), 2) == 1044.27 and angles_fp16[1857, 1].item() == 1045
assert round(error_fp16.max().item(), 2) == 0.78
assert angle_error[0] == 0 and round(angle_error.max()) == 5
assert torch.tensor([65519.0, 65520.0]).half().tolist() == [65504.0, float("inf")]
assert torch.tensor(15962.0).bfloat16().item() == 15936
#    posenc's bfloat16 promise; the float32 route to one significant digit, and above 1e-3 from 1e5 on;
#    any bfloat16 in the route reaches 0.5 by position 4096.
assert errors["posenc, bfloat16"].max() <= 2.0**-9 + 2e-7
float32_error = errors["float32 (transformers)"]
assert f"{float32_error[sample == 10**5][0]:.0e}" == "5e-03" and f"{float32_error[sample == 10**6][0]:.0e}" == "5e-02"
assert (float32_error[sample >= 1e5] > 1e-3).all()
for name in ["inv_freq in bfloat16", "positions in bfloat16", "all in bfloat16 (candle before 3520)"]:
    assert errors[name][sample <= 4096].max() > 0.5, name

# %%
# Cross-checks of section 6 and of the exercises
# 6. The copy task: the claims of the prose, each bound as stated there.
for name in ["learned", "sinusoidal", "rotary"]:
    assert by_position[name, 12].mean() > 0.9, name
assert abs(by_position["none", 12].mean() - ceilings[12]) < 0.05
assert by_position["sinusoidal", 24][unseen].mean() < 0.5 and by_position["sinusoidal", 48][unseen].mean() < 0.5
assert (by_position["rotary", 24] > 0.95).all()
assert at_96["default"][aliased].mean() < 0.7
assert round(2 * np.pi / w_head[1], 1) == 62.8
for offset in (62, -64):
    turn = np.abs(np.angle(np.exp(1j * (offset - (-1)) * w_head)))
    assert (turn[:2] < 0.17).all() and np.allclose(turn[2:], [0.63, 0.063], rtol=1e-12), offset
assert ntk_model[2].rotary.inv_freq[0] == 1 and round(2 * np.pi / ntk_model[2].rotary.inv_freq[1].item(), 1) == 99.7
assert accuracy_by_position(ntk_model, *test_sets[12]).mean() > 0.99
assert all(before[n] < 0.5 for n in test_sets) and all(after[n] > 0.95 for n in test_sets)
# The exercises' reference answers agree with posenc.
assert nb08.rotated_query.check(posenc.torch.apply_rotary(q8, *posenc.torch.rotary_cos_sin(torch.tensor([3]), 8, dtype=torch.float64))[0])
assert nb08.half_rows.check(lambda heads, head_dim: posenc.rotary_permutation(head_dim, "interleaved", "half", heads=heads))
llama31 = dict(factor=8, low_freq_factor=1, high_freq_factor=4, original_max_position_embeddings=8192)
assert nb08.llama3_wavelength.check(2 * np.pi / posenc.rotary_frequencies(128, 500000.0, rope_type="llama3", **llama31)[0][32])

# %% [markdown]
# As mesmas funções existem em `posenc` (NumPy) e `posenc.tensorflow`, e
# `posenc.tensorflow.RotaryEmbedding` é uma camada Keras como o módulo do PyTorch: o mesmo
# cos e sin do YaRN bit a bit, e os mesmos vetores rotacionados a menos do arredondamento
# em float32. O TensorFlow lê duas variáveis de ambiente quando é carregado, então elas são
# definidas antes.

# %%
# Cross-checks: NumPy and TensorFlow against PyTorch, YaRN's cos and sin and the rotated vectors
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")
import tensorflow as tf
import posenc.tensorflow

positions = np.array([[0, 1, 4095, 65536, 999_999]])
x = np.random.default_rng(4).standard_normal((1, 5, 64)).astype(np.float32)
cos_sin = {
    "numpy": posenc.rotary_cos_sin(positions, 64, rope_type="yarn", **yarn),
    "torch": posenc.torch.RotaryEmbedding(64, rope_type="yarn", **yarn)(torch.from_numpy(x), torch.from_numpy(positions)),
    "tensorflow": posenc.tensorflow.RotaryEmbedding(64, rope_type="yarn", **yarn)(tf.constant(x), tf.constant(positions)),
}
rotated = {
    "numpy": posenc.apply_rotary(x, *cos_sin["numpy"]),
    "torch": posenc.torch.apply_rotary(torch.from_numpy(x), *cos_sin["torch"]).numpy(),
    "tensorflow": posenc.tensorflow.apply_rotary(tf.constant(x), *cos_sin["tensorflow"]).numpy(),
}
for name in ["torch", "tensorflow"]:
    for ours, theirs in zip(cos_sin["numpy"], cos_sin[name]):
        np.testing.assert_array_equal(np.asarray(theirs), ours)
    np.testing.assert_allclose(rotated[name], rotated["numpy"], rtol=0, atol=1e-6)

# %% [markdown]
# O tempo desta execução:

# %%
# NBVAL_IGNORE_OUTPUT
print(f"{time.perf_counter() - started:.0f} s")
