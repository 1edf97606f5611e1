"""posenc.biases against Hugging Face transformers itself (the `conventions` extra, pinned in
constraints.txt): BLOOM's and MPT's ALiBi, T5's buckets and compute_bias, and tiny random
models whose outputs stay the same with posenc's bias in place of theirs.

transformers computes ALiBi's slopes in float32 (BLOOM raises a rounded base to the head's
power), hence tolerances of a few float32 roundings there; T5's buckets and biases are equal.
"""

import math

import numpy as np
import pytest

from posenc.biases import alibi_bias, alibi_slopes, relative_position_bias, relative_position_bucket

# Every test here compares with transformers (and its torch), hence one skip for the file.
torch = pytest.importorskip("torch", reason="the conventions extra needs torch")
transformers = pytest.importorskip("transformers", reason="install the conventions extra: pip install -e '.[conventions]'")
from transformers import BloomConfig, BloomForCausalLM, T5Config, T5ForConditionalGeneration  # noqa: E402
from transformers.models.bloom.modeling_bloom import build_alibi_tensor  # noqa: E402
from transformers.models.mpt.modeling_mpt import build_mpt_alibi_tensor  # noqa: E402
from transformers.models.t5.modeling_t5 import T5Attention  # noqa: E402

F32 = 2.0**-24  # a float32 rounding, relative


@pytest.mark.parametrize("num_heads", range(1, 65))
def test_bloom_alibi_tensor(num_heads):
    length = 37
    mask = torch.ones(2, length, dtype=torch.long)
    theirs = build_alibi_tensor(mask, num_heads, torch.float32).double().numpy().reshape(2, num_heads, length)
    slopes = alibi_slopes(num_heads)
    # BLOOM's slope k is the float32 base to the power k: up to k + 1 roundings, then the product.
    powers = np.concatenate([np.arange(1, 2 ** int(math.log2(num_heads)) + 1), np.arange(1, 64, 2)])[:num_heads]
    expected = slopes[:, None] * np.arange(length)
    for batch in theirs:
        assert np.all(np.abs(batch - expected) <= (powers[:, None] + 2) * F32 * expected)
    # Our causal bias differs from BLOOM's on the keys a query sees by slope * query position,
    # a constant per row (test_alibi.py checks that softmax then agrees).
    ours = alibi_bias(num_heads, length, length, dtype=np.float64)
    seen = np.isfinite(ours[0])
    shift = (theirs[0][:, None, :] - ours)[:, seen]
    row_constant = np.broadcast_to(slopes[:, None, None] * np.arange(length)[:, None], ours.shape)[:, seen]
    np.testing.assert_allclose(shift, row_constant, rtol=0, atol=(powers.max() + 2) * F32 * 2 * expected.max())


@pytest.mark.parametrize("alibi_bias_max", [8, 4, 6, 10, 16, 5.5])
@pytest.mark.parametrize("num_heads", [1, 2, 3, 5, 8, 12, 16, 24, 32, 40, 48, 64])
def test_mpt_alibi_tensor(num_heads, alibi_bias_max):
    length = 29
    theirs = build_mpt_alibi_tensor(num_heads, length, alibi_bias_max).double().numpy()
    assert theirs.shape == (num_heads, 1, length)
    # MPT adds slope * (j - (L - 1)): our bias of the last query (position L - 1) over all keys.
    ours = alibi_bias(num_heads, 1, length, key_offset=length - 1, alibi_bias_max=alibi_bias_max, dtype=np.float64)
    # MPT rounds the exponent, 2 ** exponent and its reciprocal in float32, then the product.
    np.testing.assert_allclose(theirs, ours, rtol=4 * F32 * (1 + math.log(2) * alibi_bias_max), atol=0)
    np.testing.assert_allclose(alibi_slopes(num_heads, alibi_bias_max=alibi_bias_max), -theirs[:, 0, -2],
                               rtol=4 * F32 * (1 + math.log(2) * alibi_bias_max))


def _bloom(num_heads):
    config = BloomConfig(vocab_size=97, hidden_size=8 * num_heads, n_layer=2, n_head=num_heads)
    torch.manual_seed(0)
    return BloomForCausalLM(config).eval()


@pytest.mark.parametrize("num_heads", [4, 6])
def test_tiny_bloom_logits_with_our_bias_and_cached_decoding(monkeypatch, num_heads):
    """A random tiny BLOOM gives the same logits when our causal bias (mask included) replaces
    its alibi tensor, over a prompt and then one token at a time from the cache (key_offset)."""
    model = _bloom(num_heads)
    ids = torch.randint(0, 97, (2, 12), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        reference = model(ids).logits
        steps = [model(ids[:, :8], use_cache=True)]
        for t in range(8, 12):
            steps.append(model(ids[:, t:t + 1], past_key_values=steps[-1].past_key_values, use_cache=True))
    reference_steps = torch.cat([steps[0].logits] + [s.logits for s in steps[1:]], 1)

    def ours(attention_mask, heads, dtype):
        batch, key_length = attention_mask.shape
        query_length = calls.pop(0)
        bias = alibi_bias(heads, query_length, key_length, key_offset=key_length - query_length)
        return torch.from_numpy(bias).to(dtype).repeat(batch, 1, 1)

    monkeypatch.setattr(model.transformer, "build_alibi_tensor", ours)
    with torch.no_grad():
        calls = [12]
        full = model(ids, attention_mask=torch.ones_like(ids)).logits
        calls = [8, 1, 1, 1, 1]
        cached = [model(ids[:, :8], attention_mask=torch.ones(2, 8, dtype=torch.long), use_cache=True)]
        for t in range(8, 12):
            cached.append(model(ids[:, t:t + 1], attention_mask=torch.ones(2, t + 1, dtype=torch.long),
                                past_key_values=cached[-1].past_key_values, use_cache=True))
    assert not calls
    np.testing.assert_allclose(full.numpy(), reference.numpy(), rtol=0, atol=2e-6)
    np.testing.assert_allclose(torch.cat([c.logits for c in cached], 1).numpy(), reference_steps.numpy(), rtol=0, atol=2e-6)


# --- T5 -------------------------------------------------------------------------------

BUCKETINGS = [(bidirectional, num_buckets, max_distance)
              for bidirectional in (True, False)
              for num_buckets in (4, 6, 8, 12, 16, 20, 32, 48, 64, 100, 128)
              for max_distance in (10, 20, 50, 64, 100, 128, 200, 256, 1000, 4096)
              if max_distance > num_buckets // (4 if bidirectional else 2)]


@pytest.mark.parametrize(("bidirectional", "num_buckets", "max_distance"), BUCKETINGS)
def test_t5_buckets(bidirectional, num_buckets, max_distance):
    positions = np.arange(-20000, 20001)
    theirs = T5Attention._relative_position_bucket(torch.from_numpy(positions), bidirectional=bidirectional,
                                                   num_buckets=num_buckets, max_distance=max_distance)
    ours = relative_position_bucket(positions, bidirectional=bidirectional, num_buckets=num_buckets,
                                    max_distance=max_distance)
    np.testing.assert_array_equal(ours, theirs.numpy())


def test_t5_buckets_need_float32_steps():
    # The distance 796 is 2e-6 short of a bin edge in exact arithmetic (bin 38.999998); T5's
    # float32 steps round it over the edge, and so do ours. A float64 route would not.
    settings = {"bidirectional": True, "num_buckets": 166, "max_distance": 1000}
    theirs = T5Attention._relative_position_bucket(torch.tensor([796, -796]), **settings).numpy()
    np.testing.assert_array_equal(relative_position_bucket([796, -796], **settings), theirs)
    per_side, max_exact = 83, 41
    bins = math.log(796 / max_exact) / math.log(1000 / max_exact) * (per_side - max_exact)
    assert 39 - 3e-6 < bins < 39
    np.testing.assert_array_equal(theirs, [per_side + max_exact + 39, max_exact + 39])


def _t5(num_buckets, max_distance, heads=3):
    config = T5Config(vocab_size=50, d_model=16, d_kv=4, d_ff=32, num_layers=2, num_decoder_layers=2, num_heads=heads,
                      relative_attention_num_buckets=num_buckets, relative_attention_max_distance=max_distance)
    torch.manual_seed(0)
    model = T5ForConditionalGeneration(config).eval()
    with torch.no_grad():  # T5 starts the table at 1 * std; any values will do, as long as they differ
        for stack in (model.encoder, model.decoder):
            stack.block[0].layer[0].SelfAttention.relative_attention_bias.weight.normal_()
    return model


@pytest.mark.parametrize(("num_buckets", "max_distance"), [(32, 128), (16, 20), (64, 256)])
@pytest.mark.parametrize(("query_length", "key_length", "past"), [(1, 1, 0), (7, 7, 0), (5, 140, 135), (1, 300, 299),
                                                                  (40, 40, 0), (3, 9, 2)])
def test_t5_compute_bias(num_buckets, max_distance, query_length, key_length, past):
    model = _t5(num_buckets, max_distance)
    for stack, bidirectional in ((model.encoder, True), (model.decoder, False)):
        attention = stack.block[0].layer[0].SelfAttention
        assert attention.is_decoder == (not bidirectional)
        with torch.no_grad():
            theirs = attention.compute_bias(query_length, key_length, past_seen_tokens=past)[0].numpy()
        table = attention.relative_attention_bias.weight.detach().numpy()
        ours = relative_position_bias(table, query_length, key_length, bidirectional=bidirectional,
                                      max_distance=max_distance, key_offset=past)
        assert ours.dtype == np.float32
        np.testing.assert_array_equal(ours, theirs)


def test_t5_decoder_with_cached_keys_uses_key_offset():
    """A tiny T5 generating step by step: the position bias its decoder builds at each step
    (captured from the first self-attention) is ours with key_offset = the tokens in the cache."""
    model = _t5(32, 128)
    attention = model.decoder.block[0].layer[0].SelfAttention
    table = attention.relative_attention_bias.weight.detach().numpy()
    captured = []
    hook = attention.register_forward_hook(lambda module, args, output: captured.append(output[1][0].numpy().copy()))
    encoder_ids = torch.randint(0, 50, (1, 9), generator=torch.Generator().manual_seed(2))
    decoder_ids = torch.randint(0, 50, (1, 7), generator=torch.Generator().manual_seed(3))
    try:
        with torch.no_grad():
            out = model(input_ids=encoder_ids, decoder_input_ids=decoder_ids[:, :4], use_cache=True)
            for t in range(4, 7):
                out = model(input_ids=encoder_ids, decoder_input_ids=decoder_ids[:, t:t + 1],
                            past_key_values=out.past_key_values, use_cache=True)
    finally:
        hook.remove()
    assert [c.shape for c in captured] == [(3, 4, 4), (3, 1, 5), (3, 1, 6), (3, 1, 7)]
    for bias, (query_length, past) in zip(captured, [(4, 0), (1, 4), (1, 5), (1, 6)]):
        ours = relative_position_bias(table, query_length, past + query_length, bidirectional=False, key_offset=past)
        np.testing.assert_array_equal(ours, bias)
