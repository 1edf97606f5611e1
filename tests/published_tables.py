"""Positional-encoding tables as published code computes them, re-expressed in our own code.

Each ``Source`` names where the computation was published (repository, path and commit, or
the thread's URL), says in a few words what it computes, builds the table the way that
code does (its dtype, its layout, its bug) for any ``(length, d_model)``, and says which
catalog codes ``posenc.diagnose`` must answer. Nothing here is copied: the numbers the
published code produces are rebuilt from the description beside each function.
"""

import dataclasses

import numpy as np


@dataclasses.dataclass(frozen=True)
class Source:
    name: str
    cite: str
    computes: str
    build: object  # (length, d_model) -> np.ndarray, in the dtype the published code produces
    codes: tuple  # what diagnose must say; ("unknown",) for an honest unknown
    # The lecture's 10x6 and a larger size; an odd width where the bug needs one or the code allows it.
    sizes: tuple = ((10, 6), (50, 64))

    def table(self, length, d_model):
        return self.build(length, d_model)


def _interleave(angles, dtype):
    # sin at even columns, cos at odd ones, of the same angle array.
    pe = np.empty(angles.shape, dtype)
    pe[:, 0::2] = np.sin(angles[:, 0::2])
    pe[:, 1::2] = np.cos(angles[:, 1::2])
    return pe


def _pair_exponent(d_model):
    k = np.arange(d_model)
    return (k - k % 2) / d_model  # 2i/d for both columns of pair i


def kyubyong_2019(length, d_model):
    # Angles pos / 10000**((k - k % 2) / E) in float64, sin/cos interleaved, then a float32 tensor.
    angles = np.arange(length)[:, None] / np.power(10000.0, _pair_exponent(d_model))
    return _interleave(angles, np.float64).astype(np.float32)


def kyubyong_2017(length, d_model):
    # The earlier version quoted in the thread: exponent 2.*k/E of the column index k itself.
    angles = np.arange(length)[:, None] / np.power(10000.0, 2.0 * np.arange(d_model) / d_model)
    return _interleave(angles, np.float64)


def tf_tutorial_copy(length, d_model):
    # TF tutorial's get_angles: 1 / 10000**(2 (k // 2) / float32(d)), float64 angles, (1, L, d).
    k = np.arange(d_model)
    rates = 1 / np.power(10000, (2 * (k // 2)) / np.float32(d_model))
    return _interleave(np.arange(length)[:, None] * rates, np.float64)[None]


def dvgt(length, d_model):
    # Python floats pos / 10000**(2 (j // 2) / d) per entry, torch.tensor (float32), unsqueeze(0).
    angles = np.array([[p / 10000 ** (2 * (j // 2) / d_model) for j in range(d_model)] for p in range(length)])
    return _interleave(angles.astype(np.float32), np.float32)[None]


def knowledge_base(length, d_model):
    # float32: alpha = 1 / base**(j / (d/2)), angles = positions @ alpha (a matmul), sin/cos interleaved.
    alpha = np.float32(1) / np.float32(10000) ** (np.arange(d_model // 2, dtype=np.float32) / np.float32(d_model / 2))
    angles = np.arange(length, dtype=np.float32)[:, None] @ alpha[None, :]
    pe = np.zeros((length, d_model), np.float32)
    pe[:, 0::2], pe[:, 1::2] = np.sin(angles), np.cos(angles)
    return pe


def transformer_study(length, d_model):
    # float32: pos / 10000**(_2i / d) with _2i = 0, 2, 4, ...
    two_i = np.arange(0, d_model, 2, dtype=np.float32)
    angles = np.arange(length, dtype=np.float32)[:, None] / np.float32(10000) ** (two_i / np.float32(d_model))
    pe = np.zeros((length, d_model), np.float32)
    pe[:, 0::2], pe[:, 1::2] = np.sin(angles), np.cos(angles)
    return pe


def _exp_route(length, d_model):
    # The PyTorch-tutorial route in float32: exp(2i * -ln(10000) / d), position * div_term.
    div = np.exp(np.arange(0, d_model, 2, dtype=np.float32) * np.float32(-np.log(10000.0) / d_model))
    angles = np.arange(length, dtype=np.float32)[:, None] * div
    pe = np.zeros((length, d_model), np.float32)
    pe[:, 0::2], pe[:, 1::2] = np.sin(angles), np.cos(angles)
    return pe


def owaranai(length, d_model):
    # The exp route stored as (max_len, 1, d_model), the PyTorch tutorial's shape.
    return _exp_route(length, d_model)[:, None, :]


def learn_llm(length, d_model):
    # The exp route, printed with torch.set_printoptions(sci_mode=False).
    return _exp_route(length, d_model)


def code_test_zero_row(length, d_model):
    # Row 0 (position 0) set to zeros, the others pos / 10000**(2 (j // 2) / d), float64.
    angles = np.arange(length)[:, None] / np.power(10000.0, _pair_exponent(d_model))
    pe = _interleave(angles, np.float64)
    pe[0] = 0.0
    return pe


def nituchao(length, d_model):
    # Row 0 zeros; exponent 2 * i / d with i the column index; float64, then FloatTensor (float32).
    angles = np.arange(length)[:, None] / np.power(10000.0, 2 * np.arange(d_model) / d_model)
    pe = _interleave(angles, np.float64)
    pe[0] = 0.0
    return pe.astype(np.float32)


def lynn_evans(length, d_model):
    # Loop over i = 0, 2, 4...: sin(pos / 10000**(2i/d)) at i, cos(pos / 10000**(2(i+1)/d)) at
    # i + 1 (Python floats into a float32 tensor), then unsqueeze(0).
    pe = np.zeros((length, d_model), np.float32)
    for k in range(d_model):
        pe[:, k] = (np.sin if k % 2 == 0 else np.cos)(np.arange(length) / 10000 ** (2 * k / d_model))
    return pe[None]


def deepctr(length, d_model):
    # pos / 10000**(2. * i / num_units) per column i, float64 -> float32 variable, times num_units ** 0.5.
    angles = np.arange(length)[:, None] / np.power(10000, 2.0 * np.arange(d_model) / d_model)
    return (_interleave(angles, np.float64).astype(np.float32) * np.float32(d_model**0.5))[None]


def rothman(length, d_model):
    # for i in range(0, d, 2): sin(pos / 10000**((2 * i) / d)) at i and cos of the same at i + 1:
    # the exponent is 4j/d for pair j. Written into a float32 array.
    pe = np.zeros((length, d_model), np.float32)
    for i in range(0, d_model, 2):
        angle = np.arange(length) / 10000 ** ((2 * i) / d_model)
        pe[:, i] = np.sin(angle)
        if i + 1 < d_model:
            pe[:, i + 1] = np.cos(angle)
    return pe


def utae(length, d_model):
    # torch.pow(T=1000, 2 * (k // 2) / d) in float32; positions / denom; sin/cos interleaved.
    k = np.arange(d_model, dtype=np.float32)
    denom = np.float32(1000) ** (2 * (k // 2) / np.float32(d_model))
    return _interleave(np.arange(length, dtype=np.float32)[:, None] / denom, np.float32)[None]


def pe_study(length, d_model):
    # The exp route, then standardised over the whole table and scaled: (pe - mean) / std * 0.02.
    pe = _exp_route(length, d_model)
    return ((pe - pe.mean()) / pe.std(ddof=1) * np.float32(0.02)).astype(np.float32)


def _funasr_angles(length, d_model, dtype):
    # positions 1..T, log increment ln(10000) / (d/2 - 1), inv = exp(-j * increment), in dtype.
    increment = (np.log(np.array(10000.0, dtype)) / dtype(d_model / 2 - 1)).astype(dtype)
    inverse = np.exp(np.arange(d_model // 2, dtype=dtype) * -increment).astype(dtype)
    return (np.arange(1, length + 1, dtype=dtype)[:, None] * inverse[None, :]).astype(dtype)


def funasr_fp16(length, d_model):
    # FunASR's encoder as served with --dtype float16 before the fix: every step in float16, [sin, cos].
    angles = _funasr_angles(length, d_model, np.float16)
    return np.concatenate([np.sin(angles), np.cos(angles)], axis=1).astype(np.float16)


def funasr_fixed(length, d_model):
    # The fix: the same computation in float32, cast to float16 at the end.
    angles = _funasr_angles(length, d_model, np.float32)
    return np.concatenate([np.sin(angles), np.cos(angles)], axis=1).astype(np.float16)


def fsmt(length, d_model, padding_idx=1):
    # fairseq's rule: exp(-j ln(10000) / (h - 1)), [sin, cos], a zero column for odd d,
    # row padding_idx zeroed; float32.
    half = d_model // 2
    rate = np.exp(np.arange(half, dtype=np.float32) * np.float32(-np.log(10000) / (half - 1)))
    angles = np.arange(length, dtype=np.float32)[:, None] * rate[None, :]
    pe = np.concatenate([np.sin(angles), np.cos(angles)], axis=1)
    if d_model % 2:
        pe = np.concatenate([pe, np.zeros((length, 1), np.float32)], axis=1)
    pe[padding_idx] = 0
    return pe


def tfold(length, d_model, max_len=1024):
    # freq = max_len ** (j / (n_freqs - 1)); [sin(i / freq) | cos(i / freq)]; float32.
    n = d_model // 2
    freq = np.float32(max_len) ** (np.arange(n, dtype=np.float32) / np.float32(n - 1))
    angles = np.arange(length, dtype=np.float32)[:, None] / freq[None, :]
    return np.concatenate([np.sin(angles), np.cos(angles)], axis=1)


def guided_diffusion(length, d_model, max_period=10000):
    # freqs = exp(-ln(max_period) j / half), [cos, sin], a zero column when dim is odd; float32.
    half = d_model // 2
    freqs = np.exp(-np.log(max_period) * np.arange(half, dtype=np.float32) / half).astype(np.float32)
    args = np.arange(length, dtype=np.float32)[:, None] * freqs[None]
    pe = np.concatenate([np.cos(args), np.sin(args)], axis=1)
    if d_model % 2:
        pe = np.concatenate([pe, np.zeros_like(pe[:, :1])], axis=1)
    return pe


def stackoverflow_power(length, d_model):
    # The question's numpy: (pos / 10000) ** (2 k / d) (a power of the position, not a
    # product), cos at even columns and sin at odd ones.
    pos = np.tile(np.arange(length)[:, None], (1, d_model)) / 10000.0
    k = np.tile(np.arange(d_model)[None, :], (length, 1)) * (2.0 / d_model)
    matrix = np.power(pos, k)
    matrix[:, 1::2] = np.sin(matrix[:, 1::2])
    matrix[:, ::2] = np.cos(matrix[:, ::2])
    return matrix


SOURCES = (
    Source("kyubyong_2019", "Kyubyong/transformer modules.py @03e4c7ca6b0bcc49d6914723c94f158f74d6c389",
           "paper, exponent (i - i%2)/E, float64 then float32", kyubyong_2019, ("matches",)),
    Source("kyubyong_2017", "https://github.com/Kyubyong/transformer/issues/19 (positional_encoding quoted there)",
           "exponent 2.*i/E of the column index i", kyubyong_2017, ("exponent_per_column",)),
    Source("zegclip", "ZiqinZhou66/ZegCLIP models/decode_heads/utils.py @eab9ceff9ed6ea12f0615aab19d37518b0076f9c",
           "TF tutorial's get_angles, float64, (1, L, d)", tf_tutorial_copy, ("matches",)),
    Source("dvgt", "wzzheng/DVGT dvgt/layers/sinusoid_pose_encoding.py @7a5ea1037c05a08735413d3d7990eaf53b22df7f",
           "paper from Python floats, torch.tensor float32, (1, L, d)", dvgt, ("matches",)),
    Source("knowledge_base", "yuxiao2057/knowledge_base ML/positional_encoding.py @c0a22efb26a1563868ec0fd5d7aefbb341b804b0",
           "paper in float32, angles by matmul", knowledge_base, ("matches",)),
    Source("transformer_study",
           "AdamLin2022/transformer_study models/embedding/positional_encoding.py @5104219951b8488534a404070d714d94fc0093f7",
           "paper in float32, pos / 10000**(_2i/d)", transformer_study, ("matches",)),
    Source("owaranai", "takahashiuhiro/OwaranaiEngine test.py @17705c1ecfaf2137f4a399814c7bd08915d6b102",
           "PyTorch-tutorial exp route, shape (max_len, 1, d_model)", owaranai, ("matches",)),
    Source("learn_llm", "Urie96/learn-llm position_embedding.py @13786589413c045680584de17ae25b5c784ae53b",
           "PyTorch-tutorial exp route, printed with sci_mode=False", learn_llm, ("matches",)),
    Source("code_test_zero_row", "seasa2016/code_test pytorch/encode_test.py @8ac8c3aec96c69c98a4ce2789fbfede28491a6fc",
           "paper with row 0 (position 0) zeroed, float64", code_test_zero_row, ("matches", "zero_row")),
    Source("nituchao", "nituchao/nituchao-deeplearning pytorch/transformer_explain/positional_embedding.py "
           "@5498952e056721aad35851c4447ed4927651c17d",
           "row 0 zeroed and exponent 2*i/d per column, float32", nituchao, ("exponent_per_column", "zero_row")),
    Source("lynn_evans", "SamLynnEvans/Transformer Embed.py @8f9de975e57f00c08b675d0fddb12d228b837aeb",
           "sin with 2i/d, cos with 2(i+1)/d (i = column), float32, (1, L, d)", lynn_evans, ("exponent_per_column",)),
    Source("deepctr", "shenweichen/DeepCTR deepctr/layers/sequence.py @02efb1074ba453fde4d70494537aa20012acc3e6",
           "exponent 2.*i/d per column, times sqrt(d) (scale=True)", deepctr, ("exponent_per_column", "scaled")),
    Source("rothman", "Denis2054/Transformers-for-NLP-2nd-Edition Chapter02/positional_encoding.ipynb "
           "@0a67de4e72f65ec3d50a338c09be2870b4edcae1",
           "i steps by 2 and the exponent is still 2*i/d: 4j/d for pair j", rothman, ("exponent_scaled",)),
    Source("utae", "VSainteuf/utae-paps src/backbones/positional_encoding.py @5e75f0322d1deff7e42a207944bc91d0df266010",
           "paper layout with T = 1000, float32, (B, T, C)", utae, ("wrong_base",)),
    Source("pe_study", "MiuLab/PE-Study lm/embeddings.py @2adaf3a534bb9409e6b23582fd4077abb8895610",
           "exp route, then (pe - mean) / std * 0.02", pe_study, ("matches", "scaled")),
    Source("funasr_fp16", "https://github.com/vllm-project/vllm/pull/54620 (FunASR SinusoidalPositionEncoder)",
           "h-1 rule, [sin, cos], positions from 1, every step in float16", funasr_fp16,
           ("matches", "layout", "position_offset", "half_precision")),
    Source("funasr_fixed", "https://github.com/vllm-project/vllm/pull/54620 (the fix)",
           "the same in float32, cast to float16", funasr_fixed,
           ("matches", "layout", "position_offset", "half_precision")),
    Source("fsmt", "huggingface/transformers src/transformers/models/fsmt/modeling_fsmt.py "
           "@70a406ab7dfb491be5a907f363f8a41dd6c0d6aa",
           "fairseq's h-1 [sin, cos], zero column for odd d, padding row 1 zeroed", fsmt, ("matches", "layout")),
    Source("tfold", "TencentAI4S/tfold tfold/model/layer/embedding/position_embedding.py "
           "@a6b2d9b991b80d9cb2233221442bdd86b78e46a3",
           "[sin, cos] of i / 1024**(j / (n - 1))", tfold, ("layout", "wrong_base")),
    Source("guided_diffusion", "openai/guided-diffusion guided_diffusion/nn.py @aca3097a89fab9c9962b22224d5f48950eb57e29",
           "timestep_embedding: [cos, sin], exp(-ln(10000) j / half), zero column for odd dim",
           guided_diffusion, ("layout", "zero_column"), ((10, 7), (50, 33))),
    Source("stackoverflow_power", "https://stackoverflow.com/questions/46452020/sinusoidal-embedding-attention-is-all-you-need",
           "(pos / 10000) ** (2k/d): a power of the position; cos at even columns", stackoverflow_power, ("unknown",)),
)
