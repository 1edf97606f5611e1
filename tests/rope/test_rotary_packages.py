"""RoPE against Hugging Face transformers itself (the `conventions` extra, pinned in constraints.txt).

Skips, saying what is missing, when the extra is not installed (`pip install -e ".[conventions]"`).
transformers computes its frequencies in float32, hence tolerances of a few float32 roundings.
"""

import math

import numpy as np
import pytest

import posenc

# Every test here but one compares with transformers, hence one skip for the file (the other
# reads the corner cases listed for those comparisons).
torch = pytest.importorskip("torch", reason="the conventions extra needs torch")
transformers = pytest.importorskip("transformers", reason="install the conventions extra: pip install -e '.[conventions]'")
from transformers import LlamaConfig, LlamaForCausalLM  # noqa: E402
from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS  # noqa: E402
from transformers.models.cohere import modeling_cohere  # noqa: E402
from transformers.models.codegen import modeling_codegen  # noqa: E402
from transformers.models.glm import modeling_glm  # noqa: E402
from transformers.models.gpt_neox import modeling_gpt_neox  # noqa: E402
from transformers.models.gpt_neox.modeling_gpt_neox import GPTNeoXRotaryEmbedding  # noqa: E402
from transformers.models.gptj import modeling_gptj  # noqa: E402
from transformers.models.llama import modeling_llama  # noqa: E402

import posenc.torch as pt  # noqa: E402


def longrope_factors(count):
    return {"short_factor": list(np.linspace(1.0, 1.5, count)), "long_factor": list(np.linspace(1.0, 8.0, count))}


# (rope_type, rope parameters, config-level max_position_embeddings): as a config carries them.
CONFIGS = [
    ("default", {}, 2048),
    ("default", {"partial_rotary_factor": 0.5}, 2048),
    ("linear", {"factor": 4.0}, 2048),
    ("dynamic", {"factor": 2.0}, 2048),
    ("yarn", {"factor": 8.0, "original_max_position_embeddings": 4096}, 32768),
    ("yarn", {"factor": 16.0, "original_max_position_embeddings": 4096, "beta_fast": 16, "beta_slow": 2, "mscale": 0.707,
              "mscale_all_dim": 1.0}, 65536),
    ("yarn", {"factor": 4.0, "original_max_position_embeddings": 2048, "truncate": False, "attention_factor": 1.25}, 8192),
    ("longrope", {"original_max_position_embeddings": 4096}, 131072),
    ("longrope", {"original_max_position_embeddings": 4096, "factor": 8.0, "attention_factor": 1.1}, 131072),
    ("llama3", {"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0, "original_max_position_embeddings": 8192}, 131072),
    ("llama3", {"factor": 32.0, "low_freq_factor": 1.0, "high_freq_factor": 8.0, "original_max_position_embeddings": 8192}, 131072),
    # Llama-4-Scout's values: equal factors, a step at the original wavelength (transformers
    # logs a warning for high <= low but computes it).
    ("llama3", {"factor": 16.0, "low_freq_factor": 1.0, "high_freq_factor": 1.0, "original_max_position_embeddings": 8192}, 131072),
    ("proportional", {"partial_rotary_factor": 0.25}, 2048),
]


def llama_config(rope_type, params, max_positions, head_dim, base, **sizes):
    params = dict(params)
    if rope_type == "longrope":
        params.update(longrope_factors(int(head_dim * params.get("partial_rotary_factor", 1.0)) // 2))
    shape = {"hidden_size": 4 * head_dim, "num_attention_heads": 4, **sizes}
    config = LlamaConfig(max_position_embeddings=max_positions, rope_parameters={"rope_type": rope_type, "rope_theta": base,
                                                                                 **params}, **shape)
    return config, params


def transformers_frequencies(config, rope_type, seq_len=None):
    if rope_type == "default":
        # GPT-NeoX's default reads partial_rotary_factor (Llama's rotates whole heads only).
        return GPTNeoXRotaryEmbedding.compute_default_rope_parameters(config)
    return ROPE_INIT_FUNCTIONS[rope_type](config, None, seq_len=seq_len)


@pytest.mark.parametrize("head_dim", [64, 96, 128])
@pytest.mark.parametrize("base", [10000.0, 500000.0])
@pytest.mark.parametrize(("rope_type", "params", "max_positions"), CONFIGS)
def test_frequencies_and_attention_factor_equal_transformers(rope_type, params, max_positions, head_dim, base):
    config, params = llama_config(rope_type, params, max_positions, head_dim, base)
    for seq_len in (None, 3 * max_positions):
        inv_freq, attention = transformers_frequencies(config, rope_type, seq_len)
        ours, our_attention = posenc.rotary_frequencies(
            head_dim, base, rope_type=rope_type, max_position_embeddings=max_positions,
            **params, **({"seq_len": seq_len} if rope_type in ("dynamic", "longrope") and seq_len else {}),
        )
        assert ours.dtype == np.float64 and ours.shape == tuple(inv_freq.shape)
        # float32 rounds the exponent (error ln(base) * 2**-24 relative), the power, the
        # quotient and up to two blend steps. llama3's blend w * (s + (1 - s) / factor) then
        # magnifies the float32 error of s up to `factor` times where s is near 0.
        magnified = params["factor"] if rope_type == "llama3" else 1
        rtol = (math.log(base) + 5) * 2.0**-24 * magnified
        np.testing.assert_allclose(ours, inv_freq.double().numpy(), rtol=rtol, atol=0)
        assert our_attention == pytest.approx(attention, rel=1e-15)


def forward_with(model, input_ids, position_ids):
    with torch.no_grad():
        return model(input_ids=input_ids, position_ids=position_ids).logits


@pytest.mark.parametrize(("rope_type", "params", "max_positions"), [c for c in CONFIGS if "partial_rotary_factor" not in c[1]])
def test_tiny_llama_logits(monkeypatch, rope_type, params, max_positions):
    """A random tiny Llama gives the same logits with posenc's rotary embedding, and again
    with its q/k weights permuted to the interleaved layout and posenc rotating interleaved."""
    head_dim, heads, kv_heads, base = 16, 4, 2, 10000.0
    config, params = llama_config(
        rope_type, params, max_positions, head_dim, base,
        vocab_size=97, intermediate_size=96, num_hidden_layers=2, num_key_value_heads=kv_heads,
    )
    torch.manual_seed(0)
    model = LlamaForCausalLM(config).eval()
    input_ids = torch.randint(0, 97, (2, 24))
    position_ids = torch.arange(24).expand(2, 24)
    reference = forward_with(model, input_ids, position_ids)

    ours = dict(params, max_position_embeddings=max_positions)
    model.model.rotary_emb = pt.RotaryEmbedding(head_dim, base, rope_type=rope_type, **ours)
    half = forward_with(model, input_ids, position_ids)
    # Positions < 24: transformers' float32 angles are off by < 1e-5.
    np.testing.assert_allclose(half.numpy(), reference.numpy(), rtol=0, atol=2e-5)

    for layer in model.model.layers:
        attention = layer.self_attn
        for projection, count in ((attention.q_proj, heads), (attention.k_proj, kv_heads)):
            projection.weight.data = posenc.convert_rotary_layout(projection.weight.data, "half", "interleaved", heads=count)
    model.model.rotary_emb = pt.RotaryEmbedding(head_dim, base, rope_type=rope_type, layout="interleaved", **ours)

    def interleaved(q, k, cos, sin, unsqueeze_dim=1):
        cos, sin = cos.unsqueeze(unsqueeze_dim), sin.unsqueeze(unsqueeze_dim)
        return pt.apply_rotary(q, cos, sin, layout="interleaved"), pt.apply_rotary(k, cos, sin, layout="interleaved")

    monkeypatch.setattr(modeling_llama, "apply_rotary_pos_emb", interleaved)
    np.testing.assert_allclose(forward_with(model, input_ids, position_ids).numpy(), half.numpy(), rtol=0, atol=2e-6)


def test_rotary_module_matches_transformers_forward():
    config, _ = llama_config(*CONFIGS[9], 64, 500000.0)
    theirs = modeling_llama.LlamaRotaryEmbedding(config)
    ours = pt.RotaryEmbedding(64, 500000.0, rope_type="llama3", **CONFIGS[9][1])
    x = torch.zeros(1, dtype=torch.bfloat16)
    position_ids = torch.arange(64).expand(3, 64)
    for a, b in zip(theirs(x, position_ids), ours(x, position_ids)):
        assert a.dtype == b.dtype == torch.bfloat16 and a.shape == b.shape
        # Small positions: both within about one bf16 rounding of each other.
        np.testing.assert_allclose(a.double().numpy(), b.double().numpy(), rtol=0, atol=2.0**-8)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
@pytest.mark.parametrize("fraction", [1.0, 0.25])
def test_apply_rotary_is_apply_rotary_pos_emb_bit_for_bit(dtype, fraction):
    # Llama's (whole heads) and GPT-NeoX's (partial rotary): the same products and sums, each rounded
    # in q's dtype, so the same bits; cos and sin as the models' rotary modules hand them over (in q's dtype).
    torch.manual_seed(1)
    q, k = torch.randn(2, 2, 4, 8, 32).to(dtype)
    cos, sin = pt.rotary_cos_sin(torch.arange(16).reshape(2, 8) * 1000, 32, dtype=dtype, partial_rotary_factor=fraction)
    theirs = (modeling_llama if fraction == 1 else modeling_gpt_neox).apply_rotary_pos_emb(q, k, cos, sin)
    for ours, hf in zip((pt.apply_rotary(q, cos[:, None], sin[:, None]), pt.apply_rotary(k, cos[:, None], sin[:, None])), theirs):
        assert ours.dtype == dtype
        assert torch.equal(ours, hf)
    # Cohere pairs neighbours (the interleaved layout) and rotates in float32, as posenc does for float32 q.
    cos, sin = pt.rotary_cos_sin(torch.arange(16).reshape(2, 8) * 1000, 32, layout="interleaved")
    ours = pt.apply_rotary(q.float(), cos[:, None], sin[:, None], layout="interleaved")
    assert torch.equal(ours, modeling_cohere.apply_rotary_pos_emb(q.float(), k.float(), cos, sin)[0])


def test_permutation_is_the_llama_conversion_script():
    # convert_llama_weights_to_hf.permute: view(heads, dim // heads // 2, 2, in).transpose(1, 2).
    heads, head_dim, d_model = 4, 16, 24
    weight = torch.randn(heads * head_dim, d_model)
    script = weight.view(heads, head_dim // 2, 2, d_model).transpose(1, 2).reshape(heads * head_dim, d_model)
    torch.testing.assert_close(posenc.convert_rotary_layout(weight, "interleaved", "half", heads=heads), script, rtol=0, atol=0)


def test_rope_types_are_transformers_rope_init_functions_and_default():
    # default lives on each model's rotary class, not in modeling_rope_utils; proportional does.
    assert set(ROPE_INIT_FUNCTIONS) == set(posenc.ROPE_TYPES) - {"default"}


# Which channels each family's rotate function pairs, as notebook 08 and posenc.rope.rotary's
# docstring say: rotating every pair by 90 degrees (cos 0, sin 1) is that function.
PAIRINGS = [
    (modeling_llama.rotate_half, "half"),
    (modeling_gpt_neox.rotate_half, "half"),
    (modeling_gptj.rotate_every_two, "interleaved"),
    (modeling_codegen.rotate_every_two, "interleaved"),
    (modeling_cohere.rotate_half, "interleaved"),
    (modeling_glm.rotate_half, "interleaved"),
]


@pytest.mark.parametrize(("rotate", "layout"), PAIRINGS, ids=[f"{f.__module__.split('.')[-1]}-{layout}" for f, layout in PAIRINGS])
def test_each_family_pairs_channels_as_documented(rotate, layout):
    x = torch.randn(2, 3, 5, 16)
    quarter_turn = pt.apply_rotary(x, torch.zeros(5, 16), torch.ones(5, 16), layout=layout)
    torch.testing.assert_close(rotate(x), quarter_turn, rtol=0, atol=0)
    other = "interleaved" if layout == "half" else "half"
    assert not torch.equal(rotate(x), pt.apply_rotary(x, torch.zeros(5, 16), torch.ones(5, 16), layout=other))


def test_float32_route_is_llamas_forward():
    # Notebook 08's float32 route (torch.outer of float32 positions and inv_freq, then cos)
    # gives the numbers of LlamaRotaryEmbedding's element-wise product, and is off by about
    # 5e-3 at position 10**5 and 5e-2 at 10**6 (head_dim 128), as posenc.rope.rotary's docstring says.
    config, _ = llama_config("default", {}, 2048, 128, 10000.0)
    positions = torch.tensor([[10**3, 10**4, 10**5, 10**6]])
    cos, sin = modeling_llama.LlamaRotaryEmbedding(config)(torch.zeros(1), positions)
    inv_freq = 1.0 / (10000.0 ** (torch.arange(0, 128, 2, dtype=torch.int64).float() / 128))
    angles = torch.outer(positions[0].float(), inv_freq)
    torch.testing.assert_close(cos[0, :, :64], angles.cos(), rtol=0, atol=0)
    torch.testing.assert_close(sin[0, :, :64], angles.sin(), rtol=0, atol=0)
    exact = pt.rotary_cos_sin(positions[0], 128, dtype=torch.float64)
    error = torch.maximum(*[(theirs[0].double() - ours).abs().amax(-1) for theirs, ours in zip((cos, sin), exact)])
    assert 4e-3 < error[2] < 6e-3 and 4e-2 < error[3] < 6e-2


# --- yarn's and longrope's corners against transformers ---------------------------------------
# (rope parameters, base): each row takes a branch the configurations above leave out.
YARN_CORNERS = [
    # Only one of mscale / mscale_all_dim: transformers then ignores both (0.1 ln(factor) + 1).
    ({"factor": 8.0, "original_max_position_embeddings": 4096, "mscale": 0.707}, 10000.0),
    ({"factor": 8.0, "original_max_position_embeddings": 4096, "mscale_all_dim": 1.0}, 10000.0),
    # A factor below 1 scales nothing: attention factor 1 (transformers warns; it computes all the same).
    ({"factor": 0.5, "original_max_position_embeddings": 4096, "mscale": 2.0, "mscale_all_dim": 1.0}, 10000.0),
    ({"factor": 0.5, "original_max_position_embeddings": 4096}, 10000.0),
    # beta_fast and beta_slow moved, untruncated: the ramp starts and ends between pairs.
    ({"factor": 4.0, "original_max_position_embeddings": 2048, "beta_fast": 8.0, "beta_slow": 0.5, "truncate": False}, 10000.0),
    # beta_fast so large its pair is negative (clamped to 0); beta_slow so small that its pair
    # passes dim - 1 (clamped) at base 100.
    ({"factor": 4.0, "original_max_position_embeddings": 4096, "beta_fast": 1000.0, "beta_slow": 0.01}, 100.0),
    # beta_fast == beta_slow, untruncated: the ramp's ends coincide and 0.001 keeps them apart.
    ({"factor": 4.0, "original_max_position_embeddings": 4096, "beta_fast": 4.0, "beta_slow": 4.0, "truncate": False}, 10000.0),
    # Both pairs at or below 0: clamped and truncated to the same 0, the same 0.001.
    ({"factor": 4.0, "original_max_position_embeddings": 4096, "beta_fast": 1000.0, "beta_slow": 700.0}, 10000.0),
]


def assert_equal_to_transformers(rope_type, params, head_dim, base, max_positions, seq_len=None):
    """posenc's frequencies and attention factor are transformers' to float32 rounding; returns posenc's."""
    config, params = llama_config(rope_type, params, max_positions, head_dim, base)
    inv_freq, attention = transformers_frequencies(config, rope_type, seq_len)
    extra = {"seq_len": seq_len} if seq_len is not None else {}
    ours, our_attention = posenc.rotary_frequencies(head_dim, base, rope_type=rope_type, max_position_embeddings=max_positions,
                                                    **params, **extra)
    np.testing.assert_allclose(ours, inv_freq.double().numpy(), rtol=(math.log(base) + 5) * 2.0**-24, atol=0)
    assert our_attention == pytest.approx(attention, rel=1e-15)
    return ours, our_attention


@pytest.mark.parametrize(("params", "base"), YARN_CORNERS, ids=lambda v: str(v))
@pytest.mark.parametrize("head_dim", [64, 128])
def test_yarn_corners_equal_transformers(params, base, head_dim):
    assert_equal_to_transformers("yarn", params, head_dim, base, 32768)


def test_yarn_corners_do_what_they_say():
    w = posenc.rotary_frequencies(64)[0]
    factor_8 = {"factor": 8.0, "original_max_position_embeddings": 4096}
    for one in ({"mscale": 0.707}, {"mscale_all_dim": 1.0}):
        assert posenc.rotary_frequencies(64, rope_type="yarn", **factor_8, **one)[1] == 0.1 * math.log(8.0) + 1
    assert posenc.rotary_frequencies(64, rope_type="yarn", **factor_8, mscale=2.0, mscale_all_dim=1.0)[1] == pytest.approx(
        (0.2 * math.log(8.0) + 1) / (0.1 * math.log(8.0) + 1), rel=1e-15
    )
    for corner in YARN_CORNERS[2:4]:
        assert posenc.rotary_frequencies(64, rope_type="yarn", **corner[0])[1] == 1.0
    # Both ends at pair 0: pair 0 keeps w, every other pair is divided by the factor.
    ours, _ = posenc.rotary_frequencies(64, rope_type="yarn", **YARN_CORNERS[-1][0])
    assert ours[0] == w[0]
    np.testing.assert_allclose(ours[1:], w[1:] / 4, rtol=1e-16)
    # Clamped at both ends at base 100: pair 0 keeps w, the ramp runs to dim - 1 = 63 (past the 32 pairs).
    ours, _ = posenc.rotary_frequencies(64, 100.0, rope_type="yarn", **YARN_CORNERS[5][0])
    w100 = posenc.rotary_frequencies(64, 100.0)[0]
    ramp = np.arange(32) / 63
    assert ours[0] == w100[0]
    np.testing.assert_allclose(ours, w100 * (1 - ramp) + w100 / 4 * ramp, rtol=1e-15)


@pytest.mark.parametrize("head_dim", [64, 96])
def test_longrope_uses_the_short_factors_up_to_the_original_length(head_dim):
    params = {"original_max_position_embeddings": 4096}
    short, long = (np.array(longrope_factors(head_dim // 2)[key]) for key in ("short_factor", "long_factor"))
    w = posenc.rotary_frequencies(head_dim)[0]
    at, _ = assert_equal_to_transformers("longrope", params, head_dim, 10000.0, 131072, seq_len=4096)
    np.testing.assert_allclose(at, w / short, rtol=1e-15)
    past, _ = assert_equal_to_transformers("longrope", params, head_dim, 10000.0, 131072, seq_len=4097)
    np.testing.assert_allclose(past, w / long, rtol=1e-15)


@pytest.mark.parametrize("factor", [0.5, 1.0, 1.5, 2.0])
def test_longrope_attention_factor_around_one_equals_transformers(factor):
    # Up to a factor of 1 nothing is scaled (1.0); above it sqrt(1 + ln(factor) / ln(original)).
    _, attention = assert_equal_to_transformers("longrope", {"original_max_position_embeddings": 4096, "factor": factor}, 64,
                                                10000.0, 131072)
    assert attention == (1.0 if factor <= 1 else pytest.approx(math.sqrt(1 + math.log(factor) / math.log(4096)), rel=1e-15))
