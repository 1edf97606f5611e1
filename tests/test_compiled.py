"""posenc inside compiled torch models: torch.compile(fullgraph=True), on the CPU (every test here
compiles torch, hence the module-level importorskip; Keras under XLA is in test_tensorflow.py).

Each compiled model must give what the same model gives eagerly: a graph break, a Python
fallback or a different kernel would show as a failed compile or a different number. Compiles
are slow (seconds each on the CPU), so the models are tiny and the tests few.
"""

import numpy as np
import pytest

import posenc

# Every test here compiles torch, hence one skip for the file.
torch = pytest.importorskip("torch")
import posenc.torch as pt  # noqa: E402


class TinyAttention(torch.nn.Module):
    """Token embedding, posenc's sinusoidal table, one attention head with posenc's RoPE on q and k."""

    def __init__(self, vocab=50, d_model=32, **rope):
        super().__init__()
        self.embed = torch.nn.Embedding(vocab, d_model)
        self.position = pt.PositionalEncoding(d_model, max_len=64)
        self.qkv = torch.nn.Linear(d_model, 3 * d_model)
        self.rotary = pt.RotaryEmbedding(d_model, **rope)
        self.out = torch.nn.Linear(d_model, vocab)

    def forward(self, tokens, position_ids):
        x = self.position(self.embed(tokens))
        q, k, v = self.qkv(x).chunk(3, -1)
        cos, sin = self.rotary(x, position_ids)
        q, k = pt.apply_rotary(q, cos, sin), pt.apply_rotary(k, cos, sin)
        return self.out(torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True))


def run_both(model, *args, fullgraph=True):
    torch._dynamo.reset()
    with torch.no_grad():
        eager = model(*args)
        compiled = torch.compile(model, fullgraph=fullgraph)(*args)
    return eager, compiled


@pytest.mark.parametrize("position", [0, 999_990], ids=["start", "near-1e6"])
def test_torch_model_compiles_fullgraph_with_eager_outputs(position):
    torch.manual_seed(0)
    model = TinyAttention().eval()
    tokens = torch.randint(0, 50, (2, 10))
    position_ids = position + torch.arange(10).expand(2, 10)
    eager, compiled = run_both(model, tokens, position_ids)
    # Same table and rotations; inductor's fused float32 kernels may round differently by an ulp or so.
    torch.testing.assert_close(compiled, eager, rtol=0, atol=1e-5)
    cos, sin = torch.compile(model.rotary, fullgraph=True)(torch.zeros(1), position_ids)
    expected_cos, expected_sin = posenc.rotary_cos_sin(position_ids.numpy(), 32)
    np.testing.assert_allclose(cos.numpy(), expected_cos, rtol=0, atol=2e-7)
    np.testing.assert_allclose(sin.numpy(), expected_sin, rtol=0, atol=2e-7)


def test_positional_encoding_grows_inside_a_compiled_graph():
    """A sequence longer than max_len rebuilds the table in the graph, by torch operations."""
    module = pt.PositionalEncoding(16, max_len=8, convention="fairseq", padding_idx=3)
    x = torch.randn(2, 12, 16, generator=torch.Generator().manual_seed(0))
    torch._dynamo.reset()
    compiled = torch.compile(module, fullgraph=True)(x)
    assert module.max_len == 12
    expected = x + pt.positional_encoding(12, 16, convention="fairseq", padding_idx=3, dtype=torch.float32)
    # Two routes, each within 2e-7 of the exact table, and the rounding of x + PE (half a float32 spacing below 8).
    torch.testing.assert_close(compiled, expected, rtol=0, atol=4e-7 + 2**-22)


def test_positional_encoding_grows_on_its_device_inside_a_compiled_graph():
    # "meta" stands for an accelerator (there is none here): the rows a graph adds are made where the table is.
    module = pt.PositionalEncoding(16, max_len=8).to("meta")
    torch._dynamo.reset()
    out = torch.compile(module, backend="eager", fullgraph=True)(torch.zeros(2, 12, 16, device="meta"))
    assert (out.device.type, tuple(out.shape), module.max_len) == ("meta", (2, 12, 16), 12)


@pytest.mark.parametrize("rope", [{"rope_type": "dynamic", "factor": 2.0, "max_position_embeddings": 8},
                                  {"rope_type": "longrope", "original_max_position_embeddings": 8, "max_position_embeddings": 32,
                                   "short_factor": [1.0] * 16, "long_factor": [4.0] * 16}],
                         ids=["dynamic", "longrope"])
def test_length_dependent_rope_types_compile_with_graph_breaks(rope):
    """dynamic and longrope read the largest position id to choose their frequencies: a value,
    not a shape, so they run compiled with a graph break there, not under fullgraph."""
    torch.manual_seed(0)
    model = TinyAttention(**rope).eval()
    tokens = torch.randint(0, 50, (1, 12))
    eager, compiled = run_both(model, tokens, torch.arange(12)[None], fullgraph=False)
    torch.testing.assert_close(compiled, eager, rtol=0, atol=1e-5)


@pytest.mark.parametrize(("section", "interleaved"), [((4, 6, 6), False), ((6, 5, 5), True)], ids=["qwen2-vl", "qwen3-vl"])
def test_mrope_module_compiles_fullgraph_within_float32_round_off(section, interleaved):
    """M-RoPE with position_ids (3, batch, seq) in one graph. Not bit for bit: eagerly NumPy's
    blocked kernel computes these 2 x 17 x 16 angles, compiled the same kernel in torch operations;
    each is within 2e-7 of the exact values, and they differ by at most one float32 spacing at 1
    (2**-23; measured 6e-8)."""
    from posenc.rope import axial as rotary_grid

    module = pt.RotaryEmbedding(32, 1e6, mrope_section=section, mrope_interleaved=interleaved)
    rows = rotary_grid.mrope_position_ids([3, (1, 4, 6), 2, (2, 2, 4), 2])
    position_ids = torch.from_numpy(np.stack([rows, rows + 999_000], axis=1))  # (3, 2, 17): the second near 10**6
    eager, compiled = run_both(module, torch.zeros(1), position_ids)
    exact = rotary_grid.mrope_cos_sin(position_ids.numpy(), 32, mrope_section=section, interleaved=interleaved, base=1e6,
                                      dtype=np.float64)
    for a, b, want in zip(eager, compiled, exact):
        assert b.dtype == torch.float32 and b.shape == (2, 17, 32)
        torch.testing.assert_close(b, a, rtol=0, atol=2**-23)
        np.testing.assert_allclose(b.double().numpy(), want, rtol=0, atol=2e-7)


def test_per_layer_type_module_compiles_fullgraph_with_the_eager_values():
    """Gemma 3's two rotary modules behind one, the layer type a constant of each graph: the same
    route as eagerly (a decoding-sized call), so the same values bit for bit."""
    module = pt.RotaryEmbeddingPerLayerType({
        "sliding_attention": pt.RotaryEmbedding(16, 1e4),
        "full_attention": pt.RotaryEmbedding(16, 1e6, rope_type="linear", factor=8.0),
    })
    position_ids = 999_990 + torch.arange(10).expand(2, 10)
    for layer_type in module:
        eager, compiled = run_both(module, torch.zeros(1), position_ids, layer_type)
        expected = posenc.rotary_cos_sin(position_ids.numpy(), 16, base=module[layer_type].base, rope_type=module[layer_type].rope_type,
                                         **module[layer_type].params)
        for a, b, want in zip(eager, compiled, expected):
            assert torch.equal(b, a)
            np.testing.assert_allclose(b.numpy(), want, rtol=0, atol=2e-7)


def test_tiny_llama_compiled_fullgraph_generates_the_eager_tokens():
    transformers = pytest.importorskip("transformers", minversion="5.0")
    torch.manual_seed(0)
    config = transformers.LlamaConfig(hidden_size=64, num_hidden_layers=2, vocab_size=101, intermediate_size=96,
                                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64)
    model = transformers.LlamaForCausalLM(config).eval()
    model.model.rotary_emb = pt.RotaryEmbedding.from_config(config)
    prompt = torch.randint(1, 101, (1, 8))
    # A static cache keeps the decode steps one shape; transformers' own compile is off, ours is the one.
    settings = {"max_new_tokens": 16, "do_sample": False, "cache_implementation": "static", "disable_compile": True,
                "pad_token_id": 0}
    torch._dynamo.reset()
    with torch.no_grad():
        eager = model.generate(prompt, **settings)
        model.forward = torch.compile(model.forward, fullgraph=True)
        compiled = model.generate(prompt, **settings)
    assert eager.shape == (1, 24)
    assert torch.equal(compiled, eager)
