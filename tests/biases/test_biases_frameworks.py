"""posenc.biases in every front (issue 30): the same numbers as NumPy's as the framework's tensors,
T5's ``RelativePositionBias`` loading a transformers T5 checkpoint's table unchanged and giving
``compute_bias`` bit for bit, and the bias reaching attention the way each framework's users
write it (torch SDPA's ``attn_mask`` and FlexAttention's ``score_mod``, ``jax.nn.dot_product_attention``'s
and ``keras.ops.dot_product_attention``'s ``bias``) with equal outputs.

FlexAttention compiled on the CPU (torch 2.13.0+cpu here, inductor's C++ template): a fresh
compile gave wrong outputs (errors up to 1.7, or NaN) for sequence lengths that are not a
multiple of its 128 block, differing from run to run, and right ones at 128 and 256 and when
loaded from inductor's cache; so the compiled test runs at multiples of 128 and the eager
``flex_attention`` (what the score_mod computes, unfused) covers the other lengths.
"""

import inspect

import numpy as np
import pytest

import posenc.biases as pb
from frameworks import ROUNDING, adapter
from posenc.biases import t5

HEADS = (1, 3, 8, 12)
# (query_length, key_length, key_offset): a whole sequence, a prompt in chunks, a decoding step.
SHAPES = ((7, 7, 0), (5, 9, 4), (1, 40, 39), (16, 33, 17))


def _t5_table(num_buckets=32, heads=4, seed=0):
    return np.random.default_rng(seed).normal(size=(num_buckets, heads)).astype(np.float32)


# --- the functions -----------------------------------------------------------------------


@pytest.mark.parametrize("causal", [True, False])
@pytest.mark.parametrize("query_length, key_length, key_offset", SHAPES)
@pytest.mark.parametrize("num_heads", HEADS)
def test_alibi_is_numpys_in_every_front(front, num_heads, query_length, key_length, key_offset, causal):
    slopes = front.api.alibi_slopes(num_heads, alibi_bias_max=6)
    assert np.array_equal(front.numpy(slopes), pb.alibi_slopes(num_heads, alibi_bias_max=6).astype(np.float32))
    bias = front.api.alibi_bias(num_heads, query_length, key_length, causal=causal, key_offset=key_offset)
    expected = pb.alibi_bias(num_heads, query_length, key_length, causal=causal, key_offset=key_offset)
    assert bias.dtype == front.dtypes["float32"] and np.array_equal(front.numpy(bias), expected)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float64"])
def test_alibi_in_other_dtypes_is_the_float64_bias_rounded_once(front, dtype):
    if dtype not in front.dtypes:
        pytest.skip(f"{front.name} holds no {dtype} (JAX: x64 off)")
    bias = front.api.alibi_bias(5, 6, 9, key_offset=3, dtype=front.dtypes[dtype])
    exact = pb.alibi_bias(5, 6, 9, key_offset=3, dtype=np.float64)
    assert bias.dtype == front.dtypes[dtype]
    np.testing.assert_allclose(front.numpy(bias), exact, rtol=ROUNDING[dtype], atol=0)


def test_alibi_on_a_torch_device():
    torch = pytest.importorskip("torch")
    import posenc.torch as pt

    assert pt.alibi_bias(2, 3, 3, device="meta").device.type == "meta"
    assert pt.alibi_slopes(2, device=torch.device("meta")).is_meta


@pytest.mark.parametrize("bidirectional, num_buckets, max_distance", [(True, 32, 128), (False, 32, 128), (True, 8, 20), (False, 12, 9)])
def test_buckets_are_numpys_in_every_front(front, bidirectional, num_buckets, max_distance):
    positions = np.random.default_rng(1).integers(-300, 300, size=(4, 50))
    expected = pb.relative_position_bucket(positions, bidirectional=bidirectional, num_buckets=num_buckets,
                                           max_distance=max_distance)
    index = "int32" if front.name == "jax" else "int64"  # JAX without x64 holds no int64
    for given in (positions.tolist(), front.tensor(positions, index)):
        buckets = front.api.relative_position_bucket(given, bidirectional=bidirectional, num_buckets=num_buckets,
                                                     max_distance=max_distance)
        assert buckets.dtype == front.dtypes[index] and np.array_equal(front.numpy(buckets), expected)


@pytest.mark.parametrize("bidirectional", [True, False])
@pytest.mark.parametrize("query_length, key_length, key_offset", SHAPES)
def test_relative_position_bias_is_numpys_in_every_front(front, bidirectional, query_length, key_length, key_offset):
    table = _t5_table(heads=6)
    bias = front.api.relative_position_bias(front.tensor(table), query_length, key_length, bidirectional=bidirectional,
                                            key_offset=key_offset)
    expected = pb.relative_position_bias(table, query_length, key_length, bidirectional=bidirectional, key_offset=key_offset)
    assert bias.dtype == front.dtypes["float32"] and np.array_equal(front.numpy(bias), expected)


def _gradient_of_sum(front, table, query_length, key_length, key_offset):
    """d sum(relative_position_bias(table)) / d table, by the framework's autodiff."""
    api = front.api
    if front.name == "torch":
        tensor = front.tensor(table).requires_grad_()
        api.relative_position_bias(tensor, query_length, key_length, key_offset=key_offset).sum().backward()
        return tensor.grad.numpy()
    if front.name == "tensorflow":
        import tensorflow as tf

        variable = tf.Variable(table)
        with tf.GradientTape() as tape:
            total = tf.reduce_sum(api.relative_position_bias(variable, query_length, key_length, key_offset=key_offset))
        return tape.gradient(total, variable).numpy()
    import jax

    return np.asarray(jax.grad(lambda t: api.relative_position_bias(t, query_length, key_length, key_offset=key_offset).sum())(table))


def test_relative_position_bias_is_differentiable_in_the_table(front):
    # Each table entry's gradient is the number of (query, key) pairs that read it.
    table = _t5_table(heads=3)
    indices = t5.table_indices(table.shape, 6, 11, bidirectional=True, max_distance=128, key_offset=5)
    counts = np.bincount(indices.ravel(), minlength=table.size).reshape(table.shape)
    assert counts.sum() == 3 * 6 * 11 and (counts == 0).any()
    np.testing.assert_array_equal(_gradient_of_sum(front, table, 6, 11, 5), counts)


def test_relative_position_bias_keeps_the_tables_dtype(front):
    dtype = "bfloat16"
    bias = front.api.relative_position_bias(front.tensor(_t5_table(), dtype), 3, 4)
    assert bias.dtype == front.dtypes[dtype]
    expected = pb.relative_position_bias(front.numpy(front.tensor(_t5_table(), dtype)), 3, 4)
    assert np.array_equal(front.numpy(bias), expected)


# --- T5's module against transformers ------------------------------------------------------


@pytest.fixture(scope="module")
def tiny_t5():
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers", reason="install the conventions extra: pip install -e '.[conventions]'")
    config = transformers.T5Config(vocab_size=50, d_model=32, d_kv=8, d_ff=64, num_layers=2, num_decoder_layers=2,
                                   num_heads=4, relative_attention_num_buckets=32, relative_attention_max_distance=128)
    torch.manual_seed(0)
    return transformers.T5Model(config).eval()


def _attention(model, part):
    return getattr(model, part).block[0].layer[0].SelfAttention


def _module(front, bidirectional, weight):
    """``front``'s RelativePositionBias holding ``weight`` (a T5 checkpoint's table), loaded its framework's way."""
    module = front.make(front.api.RelativePositionBias, 4, bidirectional=bidirectional,
                        **({"rngs": __import__("flax").nnx.Rngs(0)} if front.name == "jax" else {}))
    if front.name == "torch":
        module.load_state_dict({"relative_attention_bias.weight": weight})  # the checkpoint's key, unchanged
    elif front.name == "tensorflow":
        module.relative_attention_bias.assign(weight.numpy())
    else:
        _assign(module.relative_attention_bias.embedding, weight.numpy())
    return module


def _call(front, module, query_length, key_length, key_offset):
    if front.name == "tensorflow":  # Keras takes only tensors positionally
        return module(query_length=query_length, key_length=key_length, key_offset=key_offset)
    return module(query_length, key_length, key_offset)


@pytest.mark.parametrize("part", ["encoder", "decoder"])
def test_t5_module_is_compute_bias_bit_for_bit(front, tiny_t5, part):
    import torch

    attention = _attention(tiny_t5, part)
    bidirectional = part == "encoder"
    assert attention.is_decoder is not bidirectional
    module = _module(front, bidirectional, attention.relative_attention_bias.weight.detach())
    # A whole sequence, a cached prompt's next chunk, decoding steps far past max_distance.
    for query_length, key_length, key_offset in ((9, 9, 0), (4, 13, 9), (1, 200, 199), (3, 300, 297)):
        with torch.no_grad():
            theirs = attention.compute_bias(query_length, key_length, past_seen_tokens=key_offset)[0].numpy()
        ours = front.numpy(_call(front, module, query_length, key_length, key_offset))
        assert ours.shape == (4, query_length, key_length)
        np.testing.assert_array_equal(ours, theirs)


def test_t5_module_names_its_table_as_t5_does(tiny_t5):
    torch = pytest.importorskip("torch")
    import posenc.torch as pt

    module = pt.RelativePositionBias(4)
    assert list(module.state_dict()) == ["relative_attention_bias.weight"]
    # The first encoder layer's attention state, read with strict=False: the table's key is T5's own.
    missing, unexpected = module.load_state_dict(_attention(tiny_t5, "encoder").state_dict(), strict=False)
    assert missing == [] and sorted(unexpected) == ["k.weight", "o.weight", "q.weight", "v.weight"]
    assert torch.equal(module.relative_attention_bias.weight, _attention(tiny_t5, "encoder").relative_attention_bias.weight)
    assert "num_heads=4, bidirectional=True, num_buckets=32, max_distance=128" in repr(module)


def test_keras_and_flax_modules_hold_the_table_under_t5s_name():
    pytest.importorskip("flax")
    pytest.importorskip("tensorflow")
    import jax
    from flax import nnx

    import posenc.jax as pj
    import posenc.tensorflow as ptf

    layer = ptf.RelativePositionBias(4, bidirectional=False, num_buckets=16, max_distance=40, name="bias")
    assert [w.path for w in layer.weights] == ["bias/relative_attention_bias"] and tuple(layer.weights[0].shape) == (16, 4)
    rebuilt = ptf.RelativePositionBias.from_config(layer.get_config())
    assert (rebuilt.num_heads, rebuilt.bidirectional, rebuilt.num_buckets, rebuilt.max_distance) == (4, False, 16, 40)
    module = pj.RelativePositionBias(4, num_buckets=16, max_distance=40, rngs=nnx.Rngs(0))
    # One parameter, at transformers' Flax T5 path (read by attribute: Flax's flat-state API moved across versions).
    leaves = jax.tree_util.tree_leaves(nnx.state(module, nnx.Param))
    assert isinstance(module.relative_attention_bias.embedding, nnx.Param) and [leaf.shape for leaf in leaves] == [(16, 4)]
    table = _t5_table(16)
    _assign(module.relative_attention_bias.embedding, table)
    jitted = nnx.jit(lambda m: m(5, 8, 3))(module)
    assert np.array_equal(np.asarray(jitted), pb.relative_position_bias(table, 5, 8, max_distance=40, key_offset=3))


def _assign(variable, value):
    """A Flax variable's new value: ``set_value`` from Flax 0.11 (where ``.value =`` is deprecated),
    ``.value =`` before it (the lowest and Colab stacks' Flax)."""
    if hasattr(variable, "set_value"):
        variable.set_value(value)
    else:
        variable.value = value


# --- the bias in attention, each framework's way -----------------------------------------


def _qkv(num_heads, query_length, key_length, head_dim=16, seed=0):
    """Queries, keys and values, ``(batch, heads, sequence, head_dim)`` (torch's layout)."""
    rng = np.random.default_rng(seed)
    return [rng.normal(size=(2, num_heads, n, head_dim)).astype(np.float32) for n in (query_length, key_length, key_length)]


def _sdpa(q, k, v, bias):
    import torch
    import torch.nn.functional as F

    return F.scaled_dot_product_attention(*map(torch.from_numpy, (q, k, v)), attn_mask=bias).numpy()


def _flex(q, k, v, score_mod, compiled=False):
    import torch
    from torch.nn.attention.flex_attention import flex_attention

    attend = torch.compile(flex_attention, dynamic=False) if compiled else flex_attention
    return attend(*map(torch.from_numpy, (q, k, v)), score_mod=score_mod).numpy()


def _jax(q, k, v, bias):
    import jax

    # JAX's and Keras' layout: (batch, sequence, heads, head_dim); the bias (batch, heads, queries, keys).
    swap = [np.swapaxes(a, 1, 2) for a in (q, k, v)]
    return np.swapaxes(np.asarray(jax.nn.dot_product_attention(*swap, bias=bias[None])), 1, 2)


def _keras(q, k, v, bias):
    import keras

    swap = [np.swapaxes(a, 1, 2) for a in (q, k, v)]
    return np.swapaxes(np.asarray(keras.ops.dot_product_attention(*swap, bias=bias[None])), 1, 2)


# Softmax-weighted sums of values near 1 in float32: a few roundings of the largest terms.
ATTENTION_ATOL = 2e-6
ATTENTION_CASES = [(1, 6, 6, 0), (3, 5, 9, 4), (8, 1, 40, 39), (12, 17, 17, 0), (4, 16, 48, 32)]


def _bias(name, kind, num_heads, query_length, key_length, key_offset):
    """ALiBi's causal bias (as its decoders use it) or T5's bidirectional one (its encoder's), in ``name``'s tensors."""
    front = adapter(name)
    if kind == "alibi":
        return front.api.alibi_bias(num_heads, query_length, key_length, key_offset=key_offset)
    return front.api.relative_position_bias(front.tensor(_t5_table(heads=num_heads)), query_length, key_length, key_offset=key_offset)


def _score_mod(kind, num_heads, query_length, key_length, key_offset):
    pt = adapter("torch").api
    if kind == "alibi":
        return pt.alibi_score_mod(pt.alibi_slopes(num_heads), key_offset=key_offset)
    return pt.t5_score_mod(adapter("torch").tensor(_t5_table(heads=num_heads)), query_length, key_length, key_offset=key_offset)


def _outputs(kind, num_heads, query_length, key_length, key_offset):
    """The attention outputs of every way to add the bias, by name (SDPA's is the reference), and q, k, v.
    JAX's ``dot_product_attention`` is new in 0.4.31 and Keras' in 3.5: older ones (the lowest stack) sit out."""
    import jax
    import keras

    q, k, v = _qkv(num_heads, query_length, key_length)
    case = (kind, num_heads, query_length, key_length, key_offset)
    outputs = {"torch sdpa": _sdpa(q, k, v, _bias("torch", *case)), "torch flex (eager)": _flex(q, k, v, _score_mod(*case))}
    if hasattr(jax.nn, "dot_product_attention"):
        outputs["jax dot_product_attention"] = _jax(q, k, v, _bias("jax", *case))
    if hasattr(keras.ops, "dot_product_attention"):
        outputs["keras dot_product_attention"] = _keras(q, k, v, _bias("tensorflow", *case))
    return (q, k, v), outputs


@pytest.mark.filterwarnings("ignore:flex_attention called without torch.compile")
@pytest.mark.parametrize("kind", ["alibi", "t5"])
@pytest.mark.parametrize("num_heads, query_length, key_length, key_offset", ATTENTION_CASES)
def test_the_bias_gives_the_same_attention_in_every_framework(kind, num_heads, query_length, key_length, key_offset):
    for name in ("torch", "jax", "tensorflow"):
        adapter(name)
    _, outputs = _outputs(kind, num_heads, query_length, key_length, key_offset)
    reference = outputs.pop("torch sdpa")
    assert np.isfinite(reference).all()
    for name, output in outputs.items():
        np.testing.assert_allclose(output, reference, rtol=0, atol=ATTENTION_ATOL, err_msg=name)


@pytest.mark.filterwarnings("ignore:flex_attention called without torch.compile")
def test_compiled_flex_attention_on_the_cpu():
    # Lengths a multiple of FlexAttention's 128 block: see the module docstring for the others.
    # Both score_mods in one compiled function: one compile (a minute or more on a CPU), not two.
    adapter("torch")  # skips without torch
    import torch
    from torch.nn.attention.flex_attention import flex_attention

    cases = [(kind, 4, 128, 256, 128) for kind in ("alibi", "t5")]
    mods = [_score_mod(*case) for case in cases]
    q, k, v = map(torch.from_numpy, _qkv(*cases[0][1:4]))
    both = torch.compile(lambda q, k, v: [flex_attention(q, k, v, score_mod=mod) for mod in mods], dynamic=False)
    for case, compiled in zip(cases, both(q, k, v), strict=True):
        reference = _sdpa(q.numpy(), k.numpy(), v.numpy(), _bias("torch", *case))
        np.testing.assert_allclose(compiled.numpy(), reference, rtol=0, atol=ATTENTION_ATOL, err_msg=case[0])


@pytest.mark.parametrize("query_length, key_length, key_offset", [(5, 9, 4), (1, 40, 39), (6, 6, 0)])
def test_the_t5_score_mod_keeps_one_value_per_relative_position(query_length, key_length, key_offset):
    # Its point against relative_position_bias: (heads, q + k - 1) values, not (heads, q, k).
    score_mod = _score_mod("t5", 3, query_length, key_length, key_offset)
    assert tuple(inspect.getclosurevars(score_mod).nonlocals["rows"].shape) == (3, query_length + key_length - 1)


def test_the_score_mods_default_to_keys_starting_with_the_queries():
    # Called without key_offset, each score_mod gives its bias's defaults (key_offset=0), entry by entry.
    import torch

    pt, heads, queries, keys = adapter("torch").api, 3, 4, 6
    table = adapter("torch").tensor(_t5_table(heads=heads))
    for score_mod, bias in [(pt.t5_score_mod(table, queries, keys), pt.relative_position_bias(table, queries, keys)),
                            (pt.alibi_score_mod(pt.alibi_slopes(heads)), pt.alibi_bias(heads, queries, keys))]:
        zero = torch.zeros((), dtype=bias.dtype)
        got = torch.stack([torch.stack([torch.stack([score_mod(zero, 0, h, torch.tensor(q), torch.tensor(k)) for k in range(keys)])
                                        for q in range(queries)]) for h in range(heads)])
        torch.testing.assert_close(got, bias, rtol=0, atol=0)
