"""RotaryEmbedding.from_config against tiny random-weight models of transformers 5.23 (no downloads).

Each model is built offline from a config (2 layers, hidden size 64), run once as it is and
once with its rotary module replaced by ``posenc.torch.RotaryEmbedding.from_config(config)``
(GPT-J has no module: its per-layer ``embed_positions`` table is rebuilt from posenc's). The
logits must agree: at positions below 64 transformers' float32 angles are within a few
float32 roundings of posenc's (cos and sin differ by < 1e-6), and two layers of float32
arithmetic carry that to the logits as ~1e-6 of their size. At positions near 10**6 the two
part: there posenc's logits are the ones that agree with a float64 run (measured here: 2.2e-7
against transformers' 3.4e-5).
"""

import math

import numpy as np
import pytest

# Every test here compares with transformers' models (and their torch), hence one skip for the file.
torch = pytest.importorskip("torch", reason="the conventions extra needs torch")
transformers = pytest.importorskip(
    "transformers", minversion="5.0", reason="install the conventions extra: pip install -e '.[conventions]'"
)

import posenc.torch as pt  # noqa: E402
from posenc.rope import configs as rope_config  # noqa: E402
from posenc.rope.axial import mrope_position_ids  # noqa: E402

VOCAB = 101
TINY = {"hidden_size": 64, "num_hidden_layers": 2, "vocab_size": VOCAB, "intermediate_size": 96}


def longrope(count):
    return {"short_factor": list(np.linspace(1.0, 1.6, count)), "long_factor": list(np.linspace(1.0, 6.0, count))}


def llama():
    return transformers.LlamaForCausalLM(transformers.LlamaConfig(
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256,
        rope_parameters={"rope_type": "llama3", "rope_theta": 500000.0, "factor": 8.0, "low_freq_factor": 1.0,
                         "high_freq_factor": 4.0, "original_max_position_embeddings": 32}, **TINY))


def mistral():
    return transformers.MistralForCausalLM(transformers.MistralConfig(num_attention_heads=4, num_key_value_heads=2, head_dim=16, **TINY))


def qwen2():
    return transformers.Qwen2ForCausalLM(transformers.Qwen2Config(
        num_attention_heads=4, num_key_value_heads=2, rope_parameters={"rope_type": "dynamic", "rope_theta": 1e6, "factor": 2.0},
        max_position_embeddings=32, **TINY))


def qwen3():
    return transformers.Qwen3ForCausalLM(transformers.Qwen3Config(
        num_attention_heads=4, num_key_value_heads=2, head_dim=32, rope_parameters={"rope_type": "linear", "rope_theta": 1e6,
                                                                                    "factor": 4.0}, **TINY))


def gemma3():
    return transformers.Gemma3ForCausalLM(transformers.Gemma3TextConfig(
        num_attention_heads=4, num_key_value_heads=2, head_dim=16, sliding_window=8,
        layer_types=["sliding_attention", "full_attention"],
        rope_parameters={"sliding_attention": {"rope_type": "default", "rope_theta": 10000.0},
                         "full_attention": {"rope_type": "linear", "rope_theta": 1e6, "factor": 8.0}}, **TINY))


def gemma4_text():
    return transformers.Gemma4ForCausalLM(transformers.Gemma4TextConfig(
        num_attention_heads=4, num_key_value_heads=2, head_dim=16, global_head_dim=32, sliding_window=8,
        hidden_size_per_layer_input=8, vocab_size_per_layer_input=VOCAB, layer_types=["sliding_attention", "full_attention"], **TINY))


def smollm3():
    return transformers.SmolLM3ForCausalLM(transformers.SmolLM3Config(
        num_attention_heads=4, num_key_value_heads=2, pad_token_id=0, bos_token_id=1, eos_token_id=2, **TINY))


def cohere2():
    return transformers.Cohere2ForCausalLM(transformers.Cohere2Config(
        num_attention_heads=4, num_key_value_heads=2, sliding_window=8, eos_token_id=2, **TINY))


def phi3():
    return transformers.Phi3ForCausalLM(transformers.Phi3Config(
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256, pad_token_id=0, original_max_position_embeddings=32,
        rope_parameters={"rope_type": "longrope", "rope_theta": 10000.0, "original_max_position_embeddings": 32, **longrope(8)}, **TINY))


def gpt_neox():
    return transformers.GPTNeoXForCausalLM(transformers.GPTNeoXConfig(
        num_attention_heads=4, rope_parameters={"rope_type": "default", "rope_theta": 10000.0, "partial_rotary_factor": 0.25}, **TINY))


def gptj():
    return transformers.GPTJForCausalLM(transformers.GPTJConfig(
        n_embd=64, n_head=4, n_layer=2, n_inner=96, rotary_dim=8, vocab_size=VOCAB, n_positions=128))


def cohere():
    return transformers.CohereForCausalLM(transformers.CohereConfig(num_attention_heads=4, num_key_value_heads=2, **TINY))


def deepseek_v3():
    return transformers.DeepseekV3ForCausalLM(transformers.DeepseekV3Config(
        num_attention_heads=4, num_key_value_heads=4, q_lora_rank=None, kv_lora_rank=16, qk_rope_head_dim=8,
        qk_nope_head_dim=16, v_head_dim=16, n_routed_experts=4, num_experts_per_tok=2, n_group=1, topk_group=1,
        first_k_dense_replace=1, moe_intermediate_size=32, max_position_embeddings=128, rope_interleave=True,
        rope_parameters={"rope_type": "yarn", "rope_theta": 10000.0, "factor": 4.0, "original_max_position_embeddings": 32,
                         "beta_fast": 32.0, "beta_slow": 1.0, "mscale": 1.0, "mscale_all_dim": 1.0}, **TINY))


def gpt_oss():
    return transformers.GptOssForCausalLM(transformers.GptOssConfig(
        num_attention_heads=4, num_key_value_heads=2, head_dim=16, num_local_experts=4, num_experts_per_tok=2,
        sliding_window=8, layer_types=["sliding_attention", "full_attention"], **TINY))


def llama4_text():
    return transformers.Llama4ForCausalLM(transformers.Llama4TextConfig(
        num_attention_heads=4, num_key_value_heads=2, head_dim=16, intermediate_size_mlp=96, num_local_experts=2,
        interleave_moe_layer_step=1, attention_chunk_size=16, **TINY))


def vl_config(config_class, section, **text):
    return config_class(
        text_config={"num_attention_heads": 2, "num_key_value_heads": 1, "head_dim": 32,
                     "rope_parameters": {"rope_type": "default", "rope_theta": 1e6, "mrope_section": section}, **TINY, **text},
        vision_config={"depth": 1, "hidden_size": 64, "num_heads": 2,
                       **({"embed_dim": 32} if config_class is transformers.Qwen2VLConfig else {"out_hidden_size": 64})},
    )


def qwen2_vl():
    return transformers.Qwen2VLForConditionalGeneration(vl_config(transformers.Qwen2VLConfig, [4, 6, 6]))


def qwen2_5_vl():
    return transformers.Qwen2_5_VLForConditionalGeneration(vl_config(transformers.Qwen2_5_VLConfig, [4, 6, 6]))


def qwen3_vl():
    return transformers.Qwen3VLForConditionalGeneration(vl_config(transformers.Qwen3VLConfig, [6, 5, 5]))


FAMILIES = [llama, mistral, qwen2, qwen3, gemma3, gemma4_text, phi3, gpt_neox, gptj, smollm3, cohere, cohere2, deepseek_v3, gpt_oss,
            llama4_text, qwen2_vl, qwen2_5_vl, qwen3_vl]
MROPE = (qwen2_vl, qwen2_5_vl, qwen3_vl)


def rotary_config(model):
    return getattr(model.config, "text_config", model.config)


def swap_in_posenc(model):
    """Replace the model's rotary module (or GPT-J's tables) by posenc's; returns how many were replaced."""
    config = rotary_config(model)
    if config.model_type == "gptj":
        module = pt.RotaryEmbedding.from_config(config)
        cos, sin = module(torch.zeros(1), torch.arange(config.n_positions))
        for layer in model.transformer.h:
            layer.attn.embed_positions = torch.cat([sin, cos], -1)  # GPT-J's table: sin, then cos, per pair
        return len(model.transformer.h)
    names = [name for name, _ in model.named_modules() if name.endswith("rotary_emb")]
    for name in names:
        parent, _, attribute = name.rpartition(".")
        setattr(model.get_submodule(parent), attribute, pt.RotaryEmbedding.from_config(config))
    return len(names)


def logits(model, input_ids, position_ids):
    with torch.no_grad():
        return model(input_ids=input_ids, position_ids=position_ids).logits


@pytest.mark.parametrize("family", FAMILIES, ids=lambda f: f.__name__)
def test_logits_equal_with_posenc_rotary(family):
    torch.manual_seed(0)
    model = family().eval()
    torch.manual_seed(1)
    length = 48  # beyond 32: Phi-3 longrope switches to its long factors, Qwen2's dynamic grows its base
    input_ids = torch.randint(1, VOCAB, (2, length))
    position_ids = torch.arange(length).expand(2, length)
    if family in MROPE:
        # Text, an image of 4 x 6 patches (merged 2 x 2), text: three different position rows.
        rows = mrope_position_ids([10, (1, 4, 6), length - 16])
        position_ids = torch.from_numpy(rows)[:, None].expand(3, 2, length)
    reference = logits(model, input_ids, position_ids)
    assert swap_in_posenc(model) >= 1
    ours = logits(model, input_ids, position_ids)
    difference = (ours - reference).abs().max().item()
    scale = reference.abs().max().item()
    # Measured here: 1.7e-7 (Cohere) to 4.7e-7 (Gemma 3) of the largest logit, float32 roundings
    # of cos/sin carried through two layers, and 1.3e-6 for Gemma 4, whose attention scores are not
    # scaled down after its q/k norms; 2e-6 leaves room for another BLAS's summation order.
    assert difference <= 2e-6 * scale, (difference, scale)
    assert scale > 0.01  # the logits are not all near zero (a vacuous comparison)


def test_logits_change_with_a_wrong_layout():
    """The comparison is sharp: the right frequencies paired the wrong way change the logits by
    more than 1e-4, a hundred times the tolerance of a match (2e-6 of logits below 1)."""
    torch.manual_seed(0)
    model = llama().eval()
    input_ids = torch.randint(1, VOCAB, (1, 24))
    position_ids = torch.arange(24)[None]
    reference = logits(model, input_ids, position_ids)
    arguments = rope_config.rotary_arguments(model.config)
    model.model.rotary_emb = pt.RotaryEmbedding(**{**arguments, "layout": "interleaved"})
    assert (logits(model, input_ids, position_ids) - reference).abs().max() > 1e-4
    # M-RoPE: Qwen2-VL's sections read as Qwen3-VL's interleaving change the logits too.
    model = qwen2_vl().eval()
    position_ids = torch.from_numpy(mrope_position_ids([4, (1, 4, 6), 4]))[:, None]
    input_ids = torch.randint(1, VOCAB, (1, position_ids.shape[-1]))
    reference = logits(model, input_ids, position_ids)
    arguments = rope_config.rotary_arguments(model.config.text_config)
    model.model.language_model.rotary_emb = pt.RotaryEmbedding(**{**arguments, "mrope_interleaved": True})
    assert (logits(model, input_ids, position_ids) - reference).abs().max() > 1e-4


def test_what_from_config_reads():
    config = phi3().config
    arguments = rope_config.rotary_arguments(config)
    assert arguments["head_dim"] == 16 and arguments["rope_type"] == "longrope" and arguments["base"] == 10000.0
    assert arguments["original_max_position_embeddings"] == 32 and arguments["max_position_embeddings"] == 256
    assert arguments["layout"] == "half" and arguments["form"] == "channels" and len(arguments["short_factor"]) == 8
    assert rope_config.rotary_arguments(config.to_dict()) == arguments  # a config.json read as a dict
    module = pt.RotaryEmbedding.from_config(config)
    assert module.attention_factor == pytest.approx(math.sqrt(1 + math.log(256 / 32) / math.log(32)), rel=1e-15)
    neox = rope_config.rotary_arguments(gpt_neox().config)
    assert neox["head_dim"] == 16 and neox["partial_rotary_factor"] == 0.25
    j = rope_config.rotary_arguments(gptj().config)
    assert (j["head_dim"], j["partial_rotary_factor"], j["layout"], j["form"]) == (16, 0.5, "interleaved", "pairs")
    # A config.json without rotary_dim: GPTJConfig fills in its default, 64 (here of 128 channels).
    bare = {"model_type": "gptj", "n_embd": 256, "n_head": 2}
    assert rope_config.rotary_arguments(bare) == rope_config.rotary_arguments(transformers.GPTJConfig(**bare))
    assert rope_config.rotary_arguments(bare)["partial_rotary_factor"] == 0.5
    with pytest.raises(TypeError) as caught:  # transformers 5's GPTJConfig refuses it too
        rope_config.rotary_arguments({**bare, "rotary_dim": None})
    assert str(caught.value) == "config.rotary_dim must be an int >= 1, got None (NoneType)"
    deepseek = rope_config.rotary_arguments(deepseek_v3().config)
    assert deepseek["head_dim"] == 8 and deepseek["mscale_all_dim"] == 1.0
    # DeepSeek-V3's config.json on the Hub has no head_dim (transformers' config object sets it): the
    # rotated width is qk_rope_head_dim, not hidden_size // num_attention_heads (here 16)
    published = {k: v for k, v in deepseek_v3().config.to_dict().items() if k != "head_dim"}
    assert rope_config.rotary_arguments(published)["head_dim"] == 8
    with pytest.raises(ValueError) as caught:
        rope_config.rotary_arguments({k: v for k, v in published.items() if k != "qk_rope_head_dim"})
    assert str(caught.value) == "config.qk_rope_head_dim is missing: model_type 'deepseek_v3' rotates that many channels of each head"
    qwen = rope_config.rotary_arguments(qwen3_vl().config.text_config)
    assert qwen["mrope_section"] == (6, 5, 5) and qwen["mrope_interleaved"] is True
    gemma = pt.RotaryEmbedding.from_config(gemma3().config)
    assert set(gemma) == {"sliding_attention", "full_attention"} and gemma["full_attention"].params == {"factor": 8.0}
    # rope_parameters without a rope_type (the default's) hold values, not one dict per layer type
    plain = {"model_type": "llama", "hidden_size": 64, "num_attention_heads": 4, "rope_parameters": {"rope_theta": 1e6}}
    assert rope_config.layer_types(plain) is None
    assert pt.RotaryEmbedding.from_config(plain).base == 1e6
    with pytest.raises(ValueError, match=r"^config.rope_parameters\['rope_type'\] must be one of 'default', .*; got 'bogus'$"):
        rope_config.rotary_arguments({**plain, "rope_parameters": {"rope_type": "bogus"}})


def test_unknown_keys_and_families_are_errors_naming_them():
    config = transformers.LlamaConfig(num_attention_heads=4, **TINY)
    config.rope_parameters = {"rope_type": "yarn", "rope_theta": 1e4, "factor": 4.0, "original_max_position_embeddings": 32,
                              "beta_fsat": 16.0, "alpha": 1}
    with pytest.raises(ValueError, match=r"rope_parameters has keys posenc does not know for rope_type='yarn': 'alpha', 'beta_fsat'"):
        pt.RotaryEmbedding.from_config(config)
    config.rope_parameters = {"rope_type": "default", "rope_theta": 1e4, "mrope_section": [4, 6, 6]}
    with pytest.raises(ValueError, match="'mrope_section'"):
        pt.RotaryEmbedding.from_config(config)
    with pytest.raises(ValueError, match=r"config.model_type must be one of 'llama'.*; got 'bert'"):
        pt.RotaryEmbedding.from_config(transformers.BertConfig())
    gemma = gemma3().config
    with pytest.raises(ValueError, match=r"layer_type must name one of them, got 'global'"):
        pt.RotaryEmbedding.from_config(gemma, layer_type="global")
    with pytest.raises(ValueError, match=r"form must be one of 'channels', 'pairs', 'complex'; got 'polar'"):
        pt.RotaryEmbedding(16, form="polar")


def test_long_positions_posenc_closer_to_exact_angles():
    """At positions near 10**6 transformers' float32 angles (inv_freq @ position_ids) are off by
    ~1e-2 radians; posenc's are right to float32. With the model in float64 and posenc's float64
    cos/sin as the reference, posenc's float32 logits are the closer ones."""
    torch.manual_seed(0)
    config = transformers.LlamaConfig(num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=1 << 21, **TINY)
    model = transformers.LlamaForCausalLM(config).eval()
    input_ids = torch.randint(1, VOCAB, (1, 24))
    position_ids = 10**6 + torch.arange(24)[None]
    theirs = logits(model, input_ids, position_ids).double()
    model.model.rotary_emb = pt.RotaryEmbedding.from_config(config)
    ours = logits(model, input_ids, position_ids).double()
    exact = logits(model.double(), input_ids, position_ids)
    ours_error, theirs_error = (ours - exact).abs().max().item(), (theirs - exact).abs().max().item()
    assert ours_error < 1e-6 and theirs_error > 10 * ours_error, (ours_error, theirs_error)
