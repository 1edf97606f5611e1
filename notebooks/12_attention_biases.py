# %% [markdown]
# # 12 · Position as a bias on the scores: ALiBi, T5's buckets, no position at all
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/posenc-org/posenc/blob/main/notebooks/12_attention_biases.ipynb)
#
# Notebooks 07 and 08 gave a model its positions as vectors: a table added to the token
# embeddings, or rotations of the queries and keys. A third family leaves every vector
# alone and adds a number to each attention score, chosen by how far the key is from the
# query: ALiBi (BLOOM, MPT, Baichuan-13B) and T5's relative buckets (T5, FLAN-T5, mT5,
# LongT5, ...). And some layers of recent models add no position at all (NoPE). The biases
# were made for one question: what does a model do with a sequence longer than any it was
# trained on? We draw each bias, then rebuild in miniature the table that answered that
# question.
#
# **Question:** What changes when position is a bias on the attention scores instead of a vector, and which position method still works on sequences longer than the training ones?
#
# **You will be able to:**
# - add a bias to attention in PyTorch and say why a constant along a row changes nothing;
# - write ALiBi's slopes for any number of heads, and say why geometric slopes give each head its own range;
# - find the T5 bucket of a relative position, and say which distances share a bucket;
# - read from a config which layers of Llama 4, SmolLM3 or Cohere 2 use no position at all;
# - train short and test long: compare six position methods on inputs up to 8 times the training length;
# - say what xPos adds to RoPE, and why posenc leaves KERPLE, FIRE and CoPE out.
#
# **Prerequisites:** notebooks 04, 07 and 08 · **Time:** about 60 minutes

# %%
# On Colab, install posenc from GitHub; elsewhere `make lab` has already installed it.
import sys

if "google.colab" in sys.modules:
    # %pip install --quiet "posenc @ git+https://github.com/posenc-org/posenc@main"
    # configs with rope_parameters need transformers 5
    # %pip install --quiet "transformers>=5"

# %% [markdown]
# The biases come from `posenc.biases` (NumPy); `torch.as_tensor` hands them to PyTorch.
# One thread and deterministic algorithms make every run on a machine repeat exactly.

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
# ## 1. A bias on the scores
#
# Attention gives query $i$ the weights $\mathrm{softmax}_j(s_{ij})$ over the keys $j$, with
# the scores $s_{ij} = q_i \cdot k_j / \sqrt{d}$. A bias method adds a matrix $B$ to the
# scores before the softmax, one per head:
#
# $$\text{weights}_i = \mathrm{softmax}_j\big(s_{ij} + B_{ij}\big).$$
#
# $B$ does not look at the tokens, only at where query and key sit; the causal mask is
# such a bias already ($-\infty$ on the keys after the query, whose weight becomes
# $e^{-\infty} = 0$). In PyTorch, `scaled_dot_product_attention` takes $B$ as `attn_mask`.
# Here 4 heads over 6 positions, with ALiBi's bias of section 2, against the formula
# written out:

# %%
heads, length, head_dim = 4, 6, 8
q, k, v = torch.randn(3, heads, length, head_dim)
bias = torch.as_tensor(biases.alibi_bias(heads, length, length))  # (heads, length, length), causal
weights = torch.softmax(q @ k.transpose(-1, -2) / head_dim**0.5 + bias, dim=-1)
attended = nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=bias)
torch.testing.assert_close(attended, weights @ v)
print("bias", tuple(bias.shape), "| weights of query 2, head 0:", weights[0, 2].numpy().round(3))

# %% [markdown]
# A softmax does not change when the same number is added to every score of a row, so
# biases that differ by a constant per row are the same bias. BLOOM writes ALiBi as
# $+m\,j$ (the key's position times the head's slope $m$) instead of $-m\,(i - j)$: the
# two differ by $m\,i$ on row $i$, and give the same weights.

# %%
slopes = torch.as_tensor(biases.alibi_slopes(heads))[:, None, None]
bloom = slopes * torch.arange(length, dtype=torch.float64)  # (heads, 1, length): slope * key position
mask = torch.full((length, length), -torch.inf).triu(1)
bloom_weights = torch.softmax(q.double() @ k.double().transpose(-1, -2) / head_dim**0.5 + bloom + mask, dim=-1)
torch.testing.assert_close(bloom_weights.float(), weights)
print("row 2, head 0:", bias[0, 2].numpy(), "(ALiBi)", (bloom + mask)[0, 2].numpy(), "(BLOOM)")

# %% [markdown]
# ## 2. ALiBi: a penalty that grows with the distance
#
# ALiBi (Press, Smith and Lewis, ICLR 2022, ["Train Short, Test Long"](https://arxiv.org/abs/2108.12409))
# gives head $h$ the bias $-m_h\,(i - j)$ for a key $i - j$ places back: a penalty linear in
# the distance, with a fixed slope $m_h$ per head, nothing learned. For $n$ heads, $n$ a
# power of two, the slopes are $m_h = 2^{-8h/n}$, $h = 1, \dots, n$: for 8 heads
# $\frac12, \frac14, \dots, \frac{1}{256}$.

# %%
slopes8 = biases.alibi_slopes(8)
print("8 heads:", slopes8)
np.testing.assert_array_equal(slopes8, 2.0 ** -np.arange(1, 9))

# %% [markdown]
# For other head counts the paper's code, BLOOM and MPT take the slopes of the largest
# power of two below, then fill up with every other slope of twice that many heads (the
# ones between): for 12 heads, the 8 slopes above and then $2^{-1/2}, 2^{-3/2}, 2^{-5/2},
# 2^{-7/2}$. MPT's `alibi_bias_max` replaces the 8 in the exponent.

# %%
slopes12 = biases.alibi_slopes(12)
print("12 heads:", slopes12.round(4))
np.testing.assert_allclose(slopes12[8:], 2.0 ** -np.array([0.5, 1.5, 2.5, 3.5]), rtol=1e-15)

# %% [markdown]
# The bias of each of the 8 heads over 16 positions, on one colour scale (grey: masked).
# The first head's penalty reaches 7.5 at the far corner; the last head's stays below 0.06.

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
# Why geometric slopes? When the contents do not prefer any key (all scores equal), head
# $h$'s weights fall off as $e^{-m_h\,\text{distance}}$: every step back divides the weight
# by $e^{m_h}$, and in a long enough past half of the weight lies within $\ln 2 / m_h$ keys.
# With slopes halving from head to head, those ranges double: 1.4, 2.8, 5.5, ... up to 177
# keys. It is notebook 04's idea again: the sinusoidal table gives each pair of columns one
# wavelength, in a geometric progression, so some pairs resolve neighbours and others tell
# far positions apart; ALiBi gives each head one range, in a geometric progression, so some
# heads read the last few tokens and others average over hundreds. It is a prior, not a
# window: a key whose score is higher by more than the penalty still wins.

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
# ## 3. T5: exact near, logarithmic far, one bucket beyond
#
# T5 ([Raffel et al., 2020](https://arxiv.org/abs/1910.10683)) learns its bias: each head
# has one number per *bucket* of relative positions, in a table of shape (buckets, heads)
# that every layer shares. The buckets are the clever part. With T5's 32 buckets and
# `max_distance` 128, the encoder (bidirectional) gives 16 to the keys before the query
# and 16 to the keys after it. Of each 16, the first 8 hold the distances 0 to 7 one each;
# the other 8 cover the distances from 8 on in bins that grow logarithmically; the last
# bin holds every distance from 91 on, 128 and a million alike. The first distance of each
# bucket, keys before the query:

# %%
distance = np.arange(300)
back = biases.relative_position_bucket(-distance)  # relative position = key - query
starts = distance[np.r_[True, back[1:] != back[:-1]]]
print("buckets 0..15 start at distances", starts.tolist())
assert (back[91:] == 15).all() and back[90] == 14

# %% [markdown]
# The exact buckets resolve the nearest keys; the bins trade that resolution for reach: 8
# buckets span the distances 8 to 90, the widest bin (bucket 14) 27 distances. A decoder
# (`bidirectional=False`) sees only keys before the query, so all 32 buckets go to them: 16
# exact, 16 logarithmic, and every later key in bucket 0 (the causal mask hides them).

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
# With a table of random values (a trained T5 has its own; `relative_position_bias` takes a
# checkpoint's `relative_attention_bias.weight` unchanged), the bias of 4 heads over 160
# positions: bands along the diagonals, one colour per bucket, wider and wider away from
# the diagonal, and one flat colour past distance 90.

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
# ## 4. NoPE: no position at all
#
# A decoder with no positions anywhere is not blind to order: the causal mask lets
# position $i$ see $i + 1$ keys, and that alone is a signal. Let the first token carry a
# marker (value 1, the others 0) and the queries prefer no key: attention then returns
# $1 / (i + 1)$ at position $i$, a count of the tokens so far. Trained models find such
# signals ([Haviv et al., 2022](https://arxiv.org/abs/2203.16634)).

# %%
marker = torch.zeros(1, 1, 10, 1)
marker[..., 0, :] = 1.0
causal = torch.full((10, 10), -torch.inf).triu(1)
counted = nn.functional.scaled_dot_product_attention(torch.zeros(1, 1, 10, 4), torch.zeros(1, 1, 10, 4), marker,
                                                     attn_mask=causal)
print("attention output at positions 0..9:", counted.flatten().numpy().round(3))
torch.testing.assert_close(counted.flatten(), 1 / torch.arange(1.0, 11.0))

# %% [markdown]
# Some recent models drop RoPE from some layers: Llama 4 and SmolLM3 from every fourth
# (their configs' `no_rope_layers`), Cohere 2 from its full-attention layers (it rotates on
# its sliding-window layers only). `rope.layer_plan(config)` reads, layer by layer, what
# the model's own attention code does. Tiny configs of 8 layers, built from transformers'
# config classes (nothing is downloaded):

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
# ## 5. Train short, test long
#
# Press et al. trained language models at one length and measured them on longer inputs:
# the sinusoidal model failed a few tokens past its training length, rotary and T5's bias
# lasted longer, and ALiBi kept working at many times the length. Here is that experiment
# in miniature. The task, `lessons.markov_task`: each token is a fixed function
# (`MARKOV_RULE`) of the two tokens before it with probability 0.85, else a uniform one of
# 16. To predict the next token a model must find the previous two, a skill that depends on
# relative positions only, the same at every length. No model can be right more often than
# $0.85 + 0.15 / 16 \approx 0.859$.

# %%
tokens, targets = lessons.markov_task(np.random.default_rng(0), 1, 12)
best = lessons.MARKOV_KEEP + (1 - lessons.MARKOV_KEEP) / lessons.VOCAB
print("tokens: ", tokens[0])
print("targets:", targets[0], f"(-100: not scored)  best accuracy {best:.3f}")
assert round(best, 3) == 0.859

# %% [markdown]
# The model, `lessons.TinyDecoder(method)`: a causal Transformer of 1 layer, 8 heads and
# $d = 64$, pre-norm, and nothing that sees order besides the causal mask and the `method`:
# `none` (NoPE), `learned` (a table of rows added to the embeddings), `sinusoidal`, `rope`
# (`posenc.torch`'s `rotary_cos_sin` and `apply_rotary`), `alibi` and `t5`
# (`posenc.biases`, added to the scores). The miniature T5 has 16 causal buckets and
# `max_distance` 16, the training length: T5 trained at 512 tokens with `max_distance`
# 128, so every bucket is trained; scaled down alike. Only two methods learn parameters of
# their own:

# %%
extra = {method: sum(p.numel() for p in lessons.TinyDecoder(method).parameters())
         - sum(p.numel() for p in lessons.TinyDecoder("none").parameters()) for method in lessons.POSITION_METHODS}
print("parameters beyond the NoPE model's:", extra)
assert extra == {"none": 0, "learned": 128 * 64, "sinusoidal": 0, "rope": 0, "alibi": 0, "t5": 16 * 8}

# %% [markdown]
# Each model trains at length 16 for 100 steps of Adam (learning rate 0.02) on batches of 32
# sequences, the same sequences in the same order, from the same seed, and is scored on 64
# fresh sequences of 16, 32, 64 and 128 tokens (the same for every model). The learned table
# has 128 rows; those past 15 are never trained and keep their random start.
# `lessons.train_short_test_long` does it all, on one CPU thread, in under 20 seconds of CPU
# time on a laptop:

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
# At the training length every model with positions is within 0.15 of the best possible;
# the NoPE model is 0.25 or more below it. At 8 times the length the order is the one Press
# et al. found for the methods they compared: ALiBi (within 0.05 of its accuracy at 16),
# then T5's bias, then RoPE, then the sinusoidal table, here with the learned table beside
# it and NoPE between RoPE and them. RoPE loses little at twice the length, then falls.

# %%
at_train = {method: scores[0] for method, scores in results.items()}
at_8x = {method: scores[-1] for method, scores in results.items()}
assert min(v for m, v in at_train.items() if m != "none") > best - 0.15 and at_train["none"] < best - 0.25

# %%
assert at_8x["alibi"] > at_8x["t5"] > at_8x["rope"] > at_8x["none"] > max(at_8x["sinusoidal"], at_8x["learned"])

# %% [markdown]
# Why each falls, or not:
#
# - **learned, sinusoidal**: past 16 the model reads table rows it never trained on (random
#   ones, or sine and cosine values in combinations it never saw); both end below the model
#   with no positions at all.
# - **RoPE**: the slow pairs (wavelengths above 16 positions) turn to angles never reached
#   in training, and a far key can be turned almost like a near one (notebook 08, section 6).
# - **T5**: every distance from 15 on shares the last of the 16 buckets, so a key 100 places
#   back gets the bias of one 15 places back; the longer the input, the more keys share it
#   and can draw weight away from the two that matter.
# - **ALiBi**: far keys get ever larger penalties, so the keys a head reads at 128 tokens
#   are the ones it read at 16.
#
# Where the miniature differs from the paper: Press et al. trained 247M-parameter language
# models on WikiText-103 and measured perplexity; this is a 1-layer model trained for 100
# steps on a synthetic task, one seed, 64 test sequences per length, so differences of a
# few hundredths mean little. Their ALiBi models got *better* on longer inputs, since more
# context helps a language model; here the two previous tokens are all there is to use, so
# flat is the best ALiBi can do. At the training length their ALiBi matched or beat the
# sinusoidal model; here it is below the best of the others. Their table had no learned and
# no NoPE model; a real learned table has no rows at all past its length (GPT-2's 1024).

# %%
assert abs(at_8x["alibi"] - at_train["alibi"]) < 0.05 and at_train["alibi"] < max(at_train.values())

# %% [markdown]
# ## 6. xPos, and three more from the literature
#
# xPos ([Sun et al., 2022](https://arxiv.org/abs/2212.10554), "A Length-Extrapolatable
# Transformer") keeps RoPE's rotations and adds a decay. Each pair $j$ of a head of $d$
# channels gets a number $\zeta_j = (2j + 0.4d) / (1.4d)$ below 1; the query at position $n$
# is scaled by $\zeta_j^{\,n/512}$, the key at $m$ by $\zeta_j^{-m/512}$, so pair $j$'s share
# of the score $q_n \cdot k_m$ is RoPE's times $\zeta_j^{\,(n - m)/512}$: a decay with the
# distance, as ALiBi's, but per pair and multiplying instead of adding. The fastest pair
# decays most: for $d = 64$,

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
# `rope.xpos_cos_sin(positions, head_dim)` gives the cos and sin that `rope.apply_rotary`
# turns and scales the queries with (`keys=True` for the keys), in the interleaved layout of
# the two reference codes, lucidrains' rotary-embedding-torch (`use_xpos=True`) and
# torchscale's `XPOS`; the tests compare with both. The scores of a query at position 2047
# over keys 0 to 2047 are RoPE's pair by pair, times the decay:

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
# Far keys lose the fast pairs' share first: those are the pairs that turn many times between
# near and far keys, with which RoPE lets a far key look like a near one (notebook 08,
# section 6). posenc has xPos in NumPy only, for reading and testing. Three more methods made
# for long inputs, each with reference code, and why posenc leaves them out:
#
# | method | what it adds | reference code | why not in posenc |
# |---|---|---|---|
# | KERPLE ([Chi et al., 2022](https://arxiv.org/abs/2205.09921)) | a bias $-r_1 \log(1 + r_2\,\lvert i - j\rvert)$ (or $-r_1 \lvert i - j\rvert^{r_2}$), two learned numbers per head | [chijames/KERPLE](https://github.com/chijames/KERPLE) (`ParallelKerpleLog`, in a GPT-NeoX fork) | the two numbers are each model's own; once trained it is a bias of the distance, handed to attention as in section 1 |
# | FIRE ([Li et al., 2024](https://arxiv.org/abs/2310.04418)) | a bias from a small learned MLP of the log distance, divided by the log of the query's position | the paper's appendix | the MLP is each model's own: no fixed formula to be exact to |
# | CoPE ([Golovneva et al., 2024](https://arxiv.org/abs/2405.18719)) | positions counted by gates $\sigma(q_i \cdot k_j)$, read from learned position embeddings | [facebookresearch/RAM](https://github.com/facebookresearch/RAM), `projects/cope` | the positions depend on the tokens, so there is no table or bias to compute ahead |

# %% [markdown]
# ## Summary
#
# - A bias method adds $B_{ij}$, a function of where query and key sit, to the scores
#   before the softmax (`attn_mask` in PyTorch); a constant along a row changes nothing.
# - ALiBi: $-m_h \cdot$ distance, fixed slopes $2^{-8h/n}$ (and the in-between ones for other
#   head counts); geometric slopes give the heads geometric ranges, as geometric wavelengths
#   give the pairs of the sinusoidal table their scales.
# - T5: one learned number per head and bucket; exact buckets for the nearest distances,
#   logarithmic bins further out, and one bucket for everything beyond (from 91 with 32
#   buckets and `max_distance` 128).
# - NoPE: no position at all; the causal mask still lets a decoder count. Llama 4 and
#   SmolLM3 use it in every fourth layer, Cohere 2 in its full-attention layers
#   (`rope.layer_plan`).
# - Trained at 16 tokens and tested at 128, ALiBi kept its accuracy, T5's bias lost part of
#   it, RoPE more, and the learned and sinusoidal tables fell below no positions at all.
# - xPos is RoPE with a decay per pair, $\zeta_j^{\,(n - m)/512}$ (`rope.xpos_cos_sin`);
#   KERPLE, FIRE and CoPE learn their biases or positions, so posenc has no fixed formula of
#   theirs to match.
#
# ## Exercises
#
# Each check says what is wrong. When you are stuck, `nb12.<exercise>.hint()` gives a
# nudge and `nb12.<exercise>.solution()` prints the reference code.

# %%
from posenc.exercises import nb12  # noqa: E402

# %% [markdown]
# ### Exercise 1 · ALiBi's slopes for any number of heads
#
# Write `slopes(num_heads)` with NumPy (not `biases.alibi_slopes`): the slopes of the
# largest power of two $n \le$ `num_heads`, $2^{-8h/n}$ for $h = 1..n$, then the first
# `num_heads - n` of $2^{-8h/(2n)}$ for $h = 1, 3, 5, \dots$ The draft has one mistake.

# %%
def slopes(num_heads):
    n = 2 ** int(np.log2(num_heads))
    first = 2.0 ** (-8 * np.arange(n) / n)
    between = 2.0 ** (-8 * np.arange(1, 2 * n, 2) / (2 * n))
    return np.concatenate([first, between[: num_heads - n]])


print(nb12.alibi_slopes.check(slopes))

# %% [markdown]
# ### Exercise 2 · T5's buckets in both directions
#
# Build the encoder's buckets from the decoder's: `relative_position_bucket(-abs(r),
# bidirectional=False, num_buckets=num_buckets // 2, ...)` buckets the distance $|r|$ among
# half the buckets, and keys after the query ($r > 0$) get the other half. Complete
# `both_ways(relative_position, num_buckets, max_distance)`; the check compares with
# `bidirectional=True`.

# %%
def both_ways(relative_position, num_buckets, max_distance):
    distance = np.abs(relative_position)
    return biases.relative_position_bucket(-distance, bidirectional=False, num_buckets=num_buckets // 2,
                                           max_distance=max_distance)


print(nb12.both_ways.check(both_ways))

# %% [markdown]
# ### Exercise 3 · The causal ALiBi bias by hand
#
# Write `causal_alibi(num_heads, length)`: the `(num_heads, length, length)` bias
# $-m_h\,(i - j)$ for query $i$ and key $j \le i$, and $-\infty$ where the key comes after
# the query. Use `biases.alibi_slopes` for the slopes, and compare with the picture of section 2.

# %%
def causal_alibi(num_heads, length):
    m = biases.alibi_slopes(num_heads)[:, None, None]
    i, j = np.arange(length)[:, None], np.arange(length)[None, :]
    return np.where(j < i, -np.inf, -m * (i - j))


print(nb12.causal_alibi.check(causal_alibi))

# %% [markdown]
# ## Cross-checks
#
# The claims above once more, against the models' own code in transformers: BLOOM's ALiBi
# tensor and T5's bucket function; the numbers the prose gives; the experiment's settings;
# and its running time, under 20 seconds of CPU time.

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
