"""posenc.rope.layer_plan against the decoder layers of tiny random-weight models of transformers 5.23.

Each config (4 to 6 layers, hidden size 64) is built offline and its model run with hooks on
every decoder layer's attention, which see the position embeddings the layer receives and may
replace them:

- a layer the plan calls NoPE ignores them: NaN cos/sin there leave the logits bit for bit
  unchanged, and NaN cos/sin in a layer the plan calls RoPE make them NaN;
- each RoPE layer receives the cos/sin (Llama 4: ``cos + i sin``) of posenc's module for its
  plan entry, and of ``posenc.torch.RotaryEmbedding.from_config(config, layer_type=...)``,
  within the rounding of transformers' float32 angles (below 64 here: an ulp is 2**-18);
- with posenc's cos/sin in every RoPE layer and NaN in every NoPE layer, the logits are the
  model's own, as close to a float64 run of the model as its own float32 logits are.
"""

import math
import types

import pytest

# Every test here runs transformers' models (and their torch), hence one skip for the file.
torch = pytest.importorskip("torch", reason="the conventions extra needs torch")
transformers = pytest.importorskip(
    "transformers", minversion="5.0", reason="install the conventions extra: pip install -e '.[conventions]'"
)

import posenc.torch as pt  # noqa: E402
from posenc.rope import LayerPosition, layer_plan  # noqa: E402
from posenc.rope import configs as rope_config  # noqa: E402

VOCAB = 101
TINY = {"hidden_size": 64, "vocab_size": VOCAB, "intermediate_size": 96, "pad_token_id": 0, "bos_token_id": 1, "eos_token_id": 2}
LENGTH = 48
SLIDING, FULL, CHUNKED = "sliding_attention", "full_attention", "chunked_attention"


def llama4_interval():
    """NoPE every 2nd layer by ``no_rope_layer_interval``; temperature tuning active from position 7."""
    return transformers.Llama4TextConfig(
        num_hidden_layers=4, no_rope_layer_interval=2, num_attention_heads=4, num_key_value_heads=2, head_dim=16,
        intermediate_size_mlp=96, num_local_experts=2, attention_chunk_size=16, floor_scale=8,
        rope_parameters={"rope_type": "llama3", "rope_theta": 500000.0, "factor": 16.0, "low_freq_factor": 1.0,
                         "high_freq_factor": 1.0, "original_max_position_embeddings": 16}, **TINY)


def llama4_listed():
    return transformers.Llama4TextConfig(
        num_hidden_layers=4, no_rope_layers=[0, 1, 1, 0], num_attention_heads=4, num_key_value_heads=2, head_dim=16,
        intermediate_size_mlp=96, num_local_experts=2, attention_chunk_size=16, **TINY)


def smollm3():
    """NoPE every 2nd layer, and those attend within a window."""
    return transformers.SmolLM3Config(
        num_hidden_layers=4, no_rope_layer_interval=2, use_sliding_window=True, sliding_window=8, num_attention_heads=4,
        num_key_value_heads=2, rope_parameters={"rope_type": "default", "rope_theta": 5e6}, **TINY)


def smollm3_listed():
    return transformers.SmolLM3Config(
        num_hidden_layers=4, no_rope_layers=[1, 0, 0, 1], num_attention_heads=4, num_key_value_heads=2,
        rope_parameters={"rope_type": "linear", "rope_theta": 1e5, "factor": 2.0}, **TINY)


def cohere2():
    """The default pattern: three sliding layers, then a full one."""
    return transformers.Cohere2Config(num_hidden_layers=4, num_attention_heads=4, num_key_value_heads=2, sliding_window=8,
                                      rope_parameters={"rope_type": "default", "rope_theta": 50000.0}, **TINY)


def cohere2_typed():
    return transformers.Cohere2Config(num_hidden_layers=4, num_attention_heads=4, num_key_value_heads=2, sliding_window=8,
                                      layer_types=[FULL, SLIDING, FULL, SLIDING], **TINY)


def gemma3():
    return transformers.Gemma3TextConfig(
        num_hidden_layers=4, num_attention_heads=4, num_key_value_heads=2, head_dim=16, sliding_window=8,
        layer_types=[SLIDING, FULL, SLIDING, FULL],
        rope_parameters={SLIDING: {"rope_type": "default", "rope_theta": 10000.0},
                         FULL: {"rope_type": "linear", "rope_theta": 1e6, "factor": 8.0}}, **TINY)


def gemma4():
    """Its defaults per layer type (full attention: proportional RoPE on a quarter of the pairs) and
    a wider head on the full layers; per-layer inputs, keys shared from layer 4 on, k = v on the full layers."""
    return transformers.Gemma4TextConfig(
        num_hidden_layers=6, num_attention_heads=4, num_key_value_heads=2, head_dim=16, global_head_dim=32,
        num_global_key_value_heads=1, attention_k_eq_v=True, hidden_size_per_layer_input=8, vocab_size_per_layer_input=VOCAB,
        num_kv_shared_layers=2, sliding_window=8, layer_types=[SLIDING, FULL] * 3, **TINY)


CONFIGS = [llama4_interval, llama4_listed, smollm3, smollm3_listed, cohere2, cohere2_typed, gemma3, gemma4]
# What each plan must say: the layer types, and the layers that apply RoPE.
EXPECTED = {
    llama4_interval: ([CHUNKED, FULL, CHUNKED, FULL], [0, 2]),
    llama4_listed: ([FULL, CHUNKED, CHUNKED, FULL], [1, 2]),
    smollm3: ([FULL, SLIDING, FULL, SLIDING], [0, 2]),
    smollm3_listed: ([FULL] * 4, [0, 3]),
    cohere2: ([SLIDING, SLIDING, SLIDING, FULL], [0, 1, 2]),
    cohere2_typed: ([FULL, SLIDING, FULL, SLIDING], [1, 3]),
    gemma3: ([SLIDING, FULL] * 2, [0, 1, 2, 3]),
    gemma4: ([SLIDING, FULL] * 3, [0, 1, 2, 3, 4, 5]),
}


def model_of(config):
    torch.manual_seed(0)
    return transformers.AutoModelForCausalLM.from_config(config).eval()


def inputs():
    generator = torch.Generator().manual_seed(1)
    input_ids = torch.randint(1, VOCAB, (2, LENGTH), generator=generator)
    position_ids = torch.stack([torch.arange(LENGTH), torch.arange(LENGTH) + 7])  # the second row as after 7 cached tokens
    return input_ids, position_ids


def run(model, replace=None):
    """``(logits, {layer index: the position embeddings its attention received})``;
    ``replace(index, received)`` gives what layer ``index`` gets instead."""
    received = {}

    def hook(index):
        def pre(module, args, kwargs):
            received[index] = kwargs["position_embeddings"]
            if replace is not None:
                return args, {**kwargs, "position_embeddings": replace(index, received[index])}
            return None
        return pre

    handles = [layer.self_attn.register_forward_pre_hook(hook(i), with_kwargs=True) for i, layer in enumerate(model.model.layers)]
    input_ids, position_ids = inputs()
    try:
        with torch.no_grad():
            logits = model(input_ids=input_ids, position_ids=position_ids).logits
    finally:
        for handle in handles:
            handle.remove()
    return logits, received


def nan_like(embeddings):
    if isinstance(embeddings, torch.Tensor):  # Llama 4's freqs_cis
        return torch.full_like(embeddings, complex(math.nan, math.nan))
    return tuple(torch.full_like(part, math.nan) for part in embeddings)


def posenc_embeddings(module, dtype=torch.float32):
    _, position_ids = inputs()
    return module(torch.zeros(1, dtype=dtype), position_ids)


def without(config, *names):
    return {k: v for k, v in config.to_dict().items() if k not in names}


def largest_difference(ours, theirs):
    if isinstance(theirs, torch.Tensor):
        return (ours - theirs).abs().max().item()
    return max((a - b).abs().max().item() for a, b in zip(ours, theirs, strict=True))


@pytest.mark.parametrize("family", CONFIGS, ids=lambda f: f.__name__)
def test_the_plan_is_what_each_layer_does(family):
    config = family()
    plan = layer_plan(config)
    types, rotating = EXPECTED[family]
    assert [p.layer_type for p in plan] == types
    assert [i for i, p in enumerate(plan) if p.method == "rope"] == rotating
    assert all((p.method == "rope") == (p.rotary is not None) for p in plan)
    model = model_of(config)
    reference, _ = run(model)
    for index, entry in enumerate(plan):
        logits, _ = run(model, lambda i, received: nan_like(received) if i == index else received)
        if entry.method == "nope":
            assert torch.equal(logits, reference), f"layer {index}: the plan says NoPE, the layer reads its cos/sin"
        else:
            assert logits.isnan().all(), f"layer {index}: the plan says RoPE, the layer ignores its cos/sin"


@pytest.mark.parametrize("family", CONFIGS, ids=lambda f: f.__name__)
def test_each_rope_layer_receives_posenc_cos_sin(family):
    config = family()
    plan = layer_plan(config)
    _, received = run(model_of(config))
    for index, entry in enumerate(plan):
        if entry.method == "nope":
            continue
        assert entry.rotary == rope_config.rotary_arguments(config, layer_type=entry.layer_type)
        for module in (pt.RotaryEmbedding(**entry.rotary), pt.RotaryEmbedding.from_config(config, layer_type=entry.layer_type)):
            difference = largest_difference(posenc_embeddings(module), received[index])
            assert difference <= 2**-18, (index, difference)  # measured: up to 1.3e-6 (Gemma 4)


@pytest.mark.parametrize("family", CONFIGS, ids=lambda f: f.__name__)
def test_logits_equal_with_posenc_in_every_layer(family):
    """posenc's cos/sin in the RoPE layers, NaN in the NoPE layers: the model's own logits, as
    close to the model run in float64 (with posenc's float64 cos/sin) as its own float32 logits."""
    config = family()
    plan = layer_plan(config)
    model = model_of(config)
    reference, _ = run(model)
    rotating = [i for i, p in enumerate(plan) if p.method == "rope"]
    ours = {i: posenc_embeddings(pt.RotaryEmbedding(**plan[i].rotary)) for i in rotating}
    logits, _ = run(model, lambda i, received: ours[i] if i in ours else nan_like(received))
    exact = {i: posenc_embeddings(pt.RotaryEmbedding(**plan[i].rotary), torch.float64) for i in rotating}
    exact_logits, _ = run(model.double(), lambda i, received: exact[i] if i in exact else nan_like(received))
    scale = reference.abs().max().item()
    ours_error, theirs_error = ((x.double() - exact_logits).abs().max().item() for x in (logits, reference))
    # Measured here: posenc's error 0.86 to 1.2 times the model's own (2e-8 to 4e-6 of logits
    # below 1.3; Gemma 4's attention, unscaled after its q/k norms, is the noisiest).
    assert ours_error <= 2 * theirs_error, (ours_error, theirs_error)
    assert (logits - reference).abs().max().item() <= 1e-5 * scale  # a wrong pairing of channels gives > 1e-4
    assert scale > 0.01  # the logits are not all near zero (a vacuous comparison)


def test_gemma4_full_layers_have_their_own_head_and_proportional_rope():
    config = gemma4()
    sliding, full = layer_plan(config)[:2]
    assert (sliding.rotary["head_dim"], sliding.rotary["rope_type"], sliding.rotary["base"]) == (16, "default", 10000.0)
    assert (full.rotary["head_dim"], full.rotary["rope_type"], full.rotary["base"]) == (32, "proportional", 1e6)
    assert full.rotary["partial_rotary_factor"] == 0.25 and "partial_rotary_factor" not in sliding.rotary
    module = pt.RotaryEmbedding(**full.rotary)
    # Proportional RoPE: the whole head passes, 4 of its 16 pairs turn (exponents over the head), 12 stand still.
    assert module.rotary_dim == 32
    assert module.inv_freq.tolist() == pytest.approx([1e6 ** (-2 * j / 32) for j in range(4)] + [0.0] * 12, rel=1e-15)
    per_type = pt.RotaryEmbedding.from_config(config)
    assert {t: per_type[t].head_dim for t in per_type} == {SLIDING: 16, FULL: 32}


@pytest.mark.parametrize("family", CONFIGS, ids=lambda f: f.__name__)
def test_a_config_read_as_a_dict_or_through_its_multimodal_config(family):
    config = family()
    plan = layer_plan(config)
    assert layer_plan(config.to_dict()) == plan
    if config.model_type != "gemma4_text":  # an object with the fields only: no per_layer_config objects to read
        assert layer_plan(types.SimpleNamespace(**config.to_dict())) == plan
    composite = {"llama4_text": transformers.Llama4Config, "gemma3_text": transformers.Gemma3Config,
                 "gemma4_text": transformers.Gemma4Config}.get(config.model_type)
    if composite is not None:
        assert layer_plan(composite(text_config=config.to_dict())) == plan


def test_without_no_rope_layers_the_interval_decides():
    """As the config classes fill the list in: Llama 4 also for an empty list, SmolLM3 only for none."""
    for family in (llama4_interval, smollm3):
        assert layer_plan(without(family(), "no_rope_layers")) == layer_plan(family())
    assert layer_plan({**llama4_interval().to_dict(), "no_rope_layers": []}) == layer_plan(llama4_interval())
    assert [p.method for p in layer_plan(without(transformers.Llama4TextConfig(num_hidden_layers=8), "no_rope_layers"))] == (
        ["rope"] * 3 + ["nope"]) * 2


def test_a_gemma4_config_json_gives_the_full_layers_global_head_dim():
    """A config.json names the full layers' head size global_head_dim; to_dict writes per_layer_config."""
    written = gemma4().to_dict()
    assert {index: fields["head_dim"] for index, fields in written["per_layer_config"].items()} == {"1": 32, "3": 32, "5": 32}
    published = {k: v for k, v in written.items() if k != "per_layer_config"}
    assert layer_plan({**published, "global_head_dim": 32}) == layer_plan(gemma4())
    with pytest.raises(ValueError) as caught:
        layer_plan(published)
    assert str(caught.value) == ("config.global_head_dim is missing: model_type 'gemma4_text' gives its full_attention layers "
                                 "that head size (or per_layer_config, as to_dict writes it)")


# The plans of published configs (their fields as transformers 5.23's config classes hold them; no download).

def scout():
    """Llama-4-Scout-17B-16E: no_rope_layers empty in its config.json, so every 4th layer is NoPE."""
    return transformers.Llama4TextConfig(
        num_hidden_layers=48, hidden_size=5120, num_attention_heads=40, num_key_value_heads=8, head_dim=128, no_rope_layers=[],
        attention_chunk_size=8192, max_position_embeddings=10485760,
        rope_parameters={"rope_type": "llama3", "rope_theta": 500000.0, "factor": 16.0, "low_freq_factor": 1.0,
                         "high_freq_factor": 1.0, "original_max_position_embeddings": 8192})


def smollm3_3b():
    return transformers.SmolLM3Config(
        num_hidden_layers=36, hidden_size=2048, num_attention_heads=16, num_key_value_heads=4, no_rope_layers=[1, 1, 1, 0] * 9,
        max_position_embeddings=65536, rope_parameters={"rope_type": "default", "rope_theta": 5e6}, pad_token_id=128004)


def command_a():
    """Command A (c4ai-command-a-03-2025): sliding_window_pattern 4 in its config.json."""
    return transformers.Cohere2Config(
        num_hidden_layers=64, hidden_size=12288, num_attention_heads=96, num_key_value_heads=8, sliding_window=4096,
        sliding_window_pattern=4, rope_parameters={"rope_type": "default", "rope_theta": 50000.0})


def gemma3_4b():
    return transformers.Gemma3TextConfig(
        num_hidden_layers=34, hidden_size=2560, num_attention_heads=8, num_key_value_heads=4, head_dim=256, sliding_window=1024,
        rope_parameters={SLIDING: {"rope_type": "default", "rope_theta": 10000.0},
                         FULL: {"rope_type": "linear", "rope_theta": 1e6, "factor": 8.0}})


def summary(plan):
    """``{(layer type, method, head_dim, rope_type, base, partial_rotary_factor): [layer indices]}``."""
    groups: dict = {}
    for index, p in enumerate(plan):
        r = p.rotary or {}
        key = (p.layer_type, p.method, r.get("head_dim"), r.get("rope_type"), r.get("base"), r.get("partial_rotary_factor"))
        groups.setdefault(key, []).append(index)
    return groups


def test_published_plans():
    every_4th = list(range(3, 48, 4))
    assert summary(layer_plan(scout())) == {
        (CHUNKED, "rope", 128, "llama3", 500000.0, None): [i for i in range(48) if i not in every_4th],
        (FULL, "nope", None, None, None, None): every_4th,
    }
    assert summary(layer_plan(smollm3_3b())) == {
        (FULL, "rope", 128, "default", 5e6, None): [i for i in range(36) if i % 4 != 3],
        (FULL, "nope", None, None, None, None): list(range(3, 36, 4)),
    }
    assert summary(layer_plan(command_a())) == {
        (SLIDING, "rope", 128, "default", 50000.0, None): [i for i in range(64) if i % 4 != 3],
        (FULL, "nope", None, None, None, None): list(range(3, 64, 4)),
    }
    assert summary(layer_plan(gemma3_4b())) == {
        (SLIDING, "rope", 256, "default", 10000.0, None): [i for i in range(34) if i % 6 != 5],
        (FULL, "rope", 256, "linear", 1e6, None): [5, 11, 17, 23, 29],
    }
    # Gemma4TextConfig's defaults: 30 layers, 5 sliding to 1 full, head 256 (sliding) and 512 (full).
    assert summary(layer_plan(transformers.Gemma4TextConfig())) == {
        (SLIDING, "rope", 256, "default", 10000.0, None): [i for i in range(30) if i % 6 != 5],
        (FULL, "rope", 512, "proportional", 1e6, 0.25): [5, 11, 17, 23, 29],
    }


def test_families_without_nope_rotate_everywhere():
    config = transformers.Qwen2Config(num_hidden_layers=3, num_attention_heads=4, num_key_value_heads=2, **TINY)
    plan = layer_plan(config)
    assert plan == [LayerPosition(FULL, rope_config.rotary_arguments(config))] * 3
    gptj = transformers.GPTJConfig(n_embd=64, n_head=4, n_layer=2, rotary_dim=8)
    assert [p.rotary["partial_rotary_factor"] for p in layer_plan(gptj)] == [0.5, 0.5]
    assert [p.layer_type for p in layer_plan(gptj)] == [None, None]


# Bad input: a ValueError (or TypeError) naming the field and the family, read whole.

FAMILIES = ("'llama', 'mistral', 'qwen2', 'qwen3', 'phi3', 'gpt_neox', 'smollm3', 'gemma3_text', 'gemma4_text', 'deepseek_v3', "
            "'cohere', 'cohere2', 'gptj', 'gpt_oss', 'llama4_text', 'qwen2_vl_text', 'qwen2_5_vl_text', 'qwen3_vl_text'")


@pytest.mark.parametrize(("config", "message"), [
    (lambda: transformers.BertConfig(), f"config.model_type must be one of {FAMILIES}; got 'bert'"),
    (lambda: {"model_type": "mamba", "text_config": {"model_type": "t5"}},
     f"config.text_config.model_type must be one of {FAMILIES}; got 't5'"),
    (lambda: without(llama4_listed(), "num_hidden_layers"),
     "config.num_hidden_layers is missing: model_type 'llama4_text' has one plan entry per decoder layer"),
    (lambda: without(llama4_listed(), "no_rope_layers", "no_rope_layer_interval"),
     "config.no_rope_layer_interval is missing: model_type 'llama4_text' reads which layers skip RoPE from it "
     "(no_rope_layers is unset)"),
    # transformers' SmolLM3Config and Llama4TextConfig divide by it: ZeroDivisionError (test below)
    (lambda: {**without(smollm3(), "no_rope_layers"), "no_rope_layer_interval": 0},
     "config.no_rope_layer_interval must be an int >= 1, got 0"),
    (lambda: {**llama4_listed().to_dict(), "no_rope_layers": [1, 0, 1]},
     "config.no_rope_layers has 3 entries; model_type 'llama4_text' needs one per layer (num_hidden_layers=4)"),
    (lambda: {**smollm3().to_dict(), "no_rope_layers": []},
     "config.no_rope_layers has 0 entries; model_type 'smollm3' needs one per layer (num_hidden_layers=4)"),
    (lambda: {**smollm3().to_dict(), "no_rope_layers": [1, 2, 1, 1]},
     "config.no_rope_layers must be a list of 1 (RoPE) or 0 (NoPE) per layer, got [1, 2, 1, 1] (list)"),
    (lambda: without(smollm3(), "rope_parameters"),
     "config.rope_parameters must be a dict (transformers 5) for model_type 'smollm3', got None"),
    (lambda: {**smollm3().to_dict(), "rope_parameters": 1e6},  # rope_theta's value where the dict goes
     "config.rope_parameters must be a dict (transformers 5) for model_type 'smollm3', got 1000000.0"),
    (lambda: without(smollm3(), "head_dim", "hidden_size"),
     "config.hidden_size is missing: model_type 'smollm3' reads the head size from head_dim, or hidden_size // num_attention_heads"),
    (lambda: without(cohere2(), "layer_types"),
     "config.layer_types is missing: model_type 'cohere2' applies RoPE on its sliding_attention layers only"),
    (lambda: without(cohere2(), "sliding_window"),
     "config.sliding_window is missing: model_type 'cohere2' applies RoPE on its sliding_attention layers, which attend within it"),
    (lambda: without(gemma3(), "layer_types"),
     "config.layer_types is missing: model_type 'gemma3_text' has rope parameters per layer type"),
    (lambda: {**gemma3().to_dict(), "layer_types": [SLIDING, FULL]},
     "config.layer_types must be a list of num_hidden_layers=4 layer type names for model_type 'gemma3_text', "
     "got ['sliding_attention', 'full_attention'] (list)"),
    (lambda: {**gemma4().to_dict(), "per_layer_config": {"one": {"head_dim": 32}}},
     "config.per_layer_config must map layer indices to dicts of fields, got {'one': {'head_dim': 32}} (dict)"),
    (lambda: {**gemma4().to_dict(), "per_layer_config": {"1": {"head_dim": 31}}},
     "config of model_type 'gemma4_text': head_dim must be an even int >= 2 (channels rotate in pairs), got 31"),
])
def test_bad_configs_name_the_field_and_the_family(config, message):
    with pytest.raises(ValueError) as caught:
        layer_plan(config())
    assert str(caught.value) == message


def test_transformers_divides_by_the_no_rope_layer_interval():
    for family in (transformers.SmolLM3Config, transformers.Llama4TextConfig):
        with pytest.raises(ZeroDivisionError):
            family(num_hidden_layers=4, no_rope_layer_interval=0)


def test_layer_type_of_nope_layers_is_an_error():
    with pytest.raises(ValueError, match=r"layer_type='full_attention': no layer of that type applies RoPE in this 'cohere2' config"):
        pt.RotaryEmbedding.from_config(cohere2(), layer_type="full_attention")
    with pytest.raises(ValueError, match=r"layer_type must be one of 'sliding_attention', 'full_attention'; got 'global'"):
        pt.RotaryEmbedding.from_config(cohere2(), layer_type="global")
    with pytest.raises(ValueError, match=r"layer_type must be None: config.rope_parameters is one set for every layer"):
        pt.RotaryEmbedding.from_config(transformers.GPTJConfig(n_embd=64, n_head=4, n_layer=2), layer_type=FULL)


ABSURD = [None, "x", -1, 0, 10**30, [], [[1]], {"a": 1}, 1.5, True, math.nan]


@pytest.mark.parametrize("family", CONFIGS, ids=lambda f: f.__name__)
def test_absurd_fields_are_value_or_type_errors(family):
    """Every field the plan reads, replaced by absurd values: a plan or a ValueError/TypeError, never another error."""
    written = family().to_dict()
    fields = ["model_type", "num_hidden_layers", "layer_types", "no_rope_layers", "no_rope_layer_interval", "sliding_window",
              "rope_parameters", "head_dim", "hidden_size", "num_attention_heads", "per_layer_config", "max_position_embeddings"]
    for field in fields:
        for value in ABSURD:
            try:
                layer_plan({**written, field: value})
            except (ValueError, TypeError):
                pass
