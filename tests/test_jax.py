"""posenc.jax: jit and vmap with x64 off (no float64 in the trace), the Flax NNX modules under
jit, Flax's idioms (per-call positions, rngs=, Linen through nnx.bridge), sharding kept, JAX's
own bad input.

The behaviour the fronts share is tested once for all of them in test_front.py; the float32
kernel that traced calls run (kernels.half_turns_float32) in engine/test_kernels.py.
"""

import os

import numpy as np
import pytest

import posenc
import child
from messages import assert_raises_naming

try:
    import jax
    import jax.numpy as jnp
    from flax import nnx

    import posenc.jax as pj
except ImportError:  # the tests skip one by one (the framework mark below)
    jax = jnp = nnx = pj = None

BOUND = 2e-7
pytestmark = pytest.mark.framework("jax")  # each test skips (not the file) where JAX or Flax is missing


def test_no_float64_in_the_traces_with_x64_off():
    assert not jax.config.jax_enable_x64
    positions = jnp.arange(6).reshape(2, 3)
    x = jnp.ones((2, 3, 16))
    traces = [
        jax.make_jaxpr(lambda p: pj.encode(p, 16))(positions),
        jax.make_jaxpr(lambda p: pj.encode(p, 15, convention="fairseq"))(positions),
        jax.make_jaxpr(lambda p: pj.rotary_cos_sin(p, 16, rope_type="yarn", factor=4.0,
                                                   original_max_position_embeddings=64))(positions),
        jax.make_jaxpr(lambda p: pj.positional_encoding(3, 16) + p[..., None])(positions),
        jax.make_jaxpr(lambda x, p: pj.apply_rotary(x, *pj.rotary_cos_sin(p, 16)))(x, positions),
    ]
    for trace in traces:
        assert "f64" not in str(trace) and "f32" in str(trace)


@pytest.mark.parametrize("layout", posenc.LAYOUTS)
@pytest.mark.parametrize("convention, d_model", [("paper", 8), ("paper", 7), ("fairseq", 9), ("tensor2tensor", 7),
                                                 ("diffusers", 6), ("whisper", 4)])
def test_encode_under_jit_and_vmap_agrees_with_numpy(convention, d_model, layout):
    # Eagerly encode is NumPy's table (test_front.py); traced, JAX's float32 kernel computes it.
    positions = np.array([[0, 1, 2, 3], [2, 7, 40_000, 9_999_999]])
    kwargs = {"convention": convention, "layout": layout}
    want = posenc.encode(positions, d_model, **kwargs)
    jitted = jax.jit(lambda p: pj.encode(p, d_model, **kwargs))(jnp.asarray(positions))
    mapped = jax.vmap(lambda p: pj.encode(p, d_model, **kwargs))(jnp.asarray(positions))
    for got in (jitted, mapped):
        assert got.dtype == jnp.float32 and got.shape == (2, 4, d_model)
        assert np.abs(np.asarray(got, np.float64) - want).max() <= 2 * BOUND


def test_traced_padding_row_is_zero_and_fractional_positions_are_accurate():
    # fairseq's padding_idx is 1: that position's row is zeros.
    positions = jnp.asarray([[1.0, -1.0, 2.5, -3.25]], jnp.float32)
    got = jax.jit(lambda p: pj.encode(p, 8, convention="fairseq"))(positions)
    want = posenc.encode(np.asarray(positions), 8, convention="fairseq")
    assert not np.asarray(got)[0, 0].any() and not want[0, 0].any() and np.asarray(got)[0, 1:].all()
    assert np.abs(np.asarray(got, np.float64) - want).max() <= 2 * BOUND


def test_bfloat16_positions_are_read_as_floats_eagerly_and_traced():
    # bfloat16's NumPy kind is "V" (void): taken as a float kind, not refused as not numbers.
    positions = jnp.asarray([0.0, 1.5, 7.0, 256.0], jnp.bfloat16)
    want = posenc.encode(np.asarray(positions, np.float64), 8)
    for got in (pj.encode(positions, 8), jax.jit(lambda p: pj.encode(p, 8))(positions)):
        assert np.abs(np.asarray(got, np.float64) - want).max() <= 2 * BOUND


@pytest.mark.parametrize("layout", posenc.ROTARY_LAYOUTS)
@pytest.mark.parametrize("rope_type, params", [("default", {}), ("linear", {"factor": 2.0}),
                                               ("yarn", {"factor": 4.0, "original_max_position_embeddings": 64}),
                                               ("default", {"partial_rotary_factor": 0.5})])
def test_rotary_cos_sin_and_apply_rotary_under_jit_agree_with_numpy(layout, rope_type, params):
    # Eagerly: test_front.py. Traced, JAX's float32 kernel computes them.
    positions = np.array([[0, 3, 100_000, 9_999_999]])
    want_c, want_s = posenc.rotary_cos_sin(positions, 32, rope_type=rope_type, layout=layout, **params)
    call = jax.jit(lambda p: pj.rotary_cos_sin(p, 32, rope_type=rope_type, layout=layout, **params))
    c, s = call(jnp.asarray(positions))
    assert c.dtype == jnp.float32 and c.shape == want_c.shape
    # yarn's attention factor adds one float32 rounding of values up to it in a trace.
    assert np.abs(np.asarray(c, np.float64) - want_c).max() <= 2 * BOUND
    assert np.abs(np.asarray(s, np.float64) - want_s).max() <= 2 * BOUND
    x = np.random.default_rng(0).standard_normal((1, 2, 4, 32)).astype(np.float32)
    got = jax.jit(lambda x, c, s: pj.apply_rotary(x, c, s, layout=layout))(x, want_c[:, None], want_s[:, None])
    want = posenc.apply_rotary(x, want_c[:, None], want_s[:, None], layout=layout)
    np.testing.assert_allclose(np.asarray(got), want, rtol=0, atol=1e-6)


def tiny_model(rngs):
    """Embedding, the positional encoding, one linear layer: what a model would wrap."""

    class TinyModel(nnx.Module):
        def __init__(self, rngs):
            self.embed = nnx.Embed(11, 16, rngs=rngs)
            self.position = pj.PositionalEncoding(16, 32, dropout=0.1, rngs=rngs)
            self.out = nnx.Linear(16, 11, rngs=rngs)

        def __call__(self, tokens):
            return self.out(self.position(self.embed(tokens)))

    return TinyModel(rngs)


def test_positional_encoding_module_in_a_tiny_model_under_jit():
    model = tiny_model(nnx.Rngs(0, dropout=1))
    tokens = jnp.asarray([[1, 2, 3, 4, 5]])
    assert model.position.max_len == 32 and model.position.pe[...].shape == (32, 16)
    model.eval()  # dropout off: the model is embedding + table, then the linear layer
    logits = nnx.jit(lambda m, t: m(t))(model, tokens)
    embedded = model.embed(tokens) + posenc.positional_encoding(5, 16)
    np.testing.assert_allclose(np.asarray(logits), np.asarray(model.out(embedded)), rtol=1e-6, atol=1e-6)
    # The table is a Variable but no Param: the parameters an optimizer sees leave it out.
    assert "position" not in nnx.state(model, nnx.Param) and "embed" in nnx.state(model, nnx.Param)
    model.train()
    assert not np.allclose(np.asarray(model(tokens)), np.asarray(logits))  # dropout on


def test_rotary_embedding_module_under_jit_is_the_eager_module():
    # The eager module against NumPy and torch's names: test_front.py.
    module = pj.RotaryEmbedding(64, 500000.0, rope_type="llama3", factor=8.0, low_freq_factor=1.0,
                                high_freq_factor=4.0, original_max_position_embeddings=8192)
    position_ids = jnp.asarray([[0, 1, 70_000]])
    x = jnp.zeros((1, 3, 64), jnp.bfloat16)
    cos, sin = nnx.jit(lambda m, x, p: m(x, p))(module, x, position_ids)
    assert cos.dtype == sin.dtype == jnp.bfloat16 and cos.shape == (1, 3, 64)
    eager_cos, eager_sin = module(x, position_ids)
    np.testing.assert_array_equal(np.asarray(cos, np.float32), np.asarray(eager_cos, np.float32))
    np.testing.assert_array_equal(np.asarray(sin, np.float32), np.asarray(eager_sin, np.float32))


def test_length_dependent_rotary_module_under_jit_needs_seq_len():
    dynamic = pj.RotaryEmbedding(16, rope_type="dynamic", factor=2.0, max_position_embeddings=8)
    assert_raises_naming(lambda: jax.jit(lambda p: dynamic(jnp.zeros((1, 20, 16)), p))(jnp.arange(20)[None]),
                         ValueError, ["rope_type 'dynamic'", "seq_len="])


def test_bad_input_errors_name_the_argument():
    # What the fronts share: test_front.py. Here JAX's own: float64 with x64 off, a traced complex.
    assert_raises_naming(lambda: pj.encode([1, 2], 8, dtype=jnp.float64), ValueError, ["dtype float64", "x64"])
    assert_raises_naming(lambda: jax.jit(lambda p: pj.encode(p, 8))(jnp.asarray([1 + 2j])), TypeError,
                         ["positions", "complex"])


# Flax's idioms: per-call positions as lm1b takes them, rngs=, Linen through nnx.bridge, sharding kept.


def lm1b_add_position_embs(inputs, inputs_positions, max_len=32):
    """Flax's lm1b example (examples/lm1b/models.py): ``sinusoidal_init`` (tensor2tensor's table)
    and ``AddPositionEmbs``, which gathers the rows of packed ``inputs_positions``."""
    d_feature = inputs.shape[-1]
    position = np.arange(0, max_len)[:, np.newaxis]
    scale_factor = -np.log(10000.0 / 1.0) / (d_feature // 2 - 1)
    div_term = 1.0 * np.exp(np.arange(0, d_feature // 2) * scale_factor)
    pe = np.zeros((max_len, d_feature), dtype=np.float32)
    pe[:, : d_feature // 2] = np.sin(position * div_term)
    pe[:, d_feature // 2 : 2 * (d_feature // 2)] = np.cos(position * div_term)
    return inputs + jnp.take(jnp.asarray(pe), inputs_positions, axis=0)


def test_positional_encoding_takes_packed_positions_as_lm1b_does():
    module = pj.PositionalEncoding(16, 32, convention="tensor2tensor")
    x = jnp.asarray(np.random.default_rng(0).standard_normal((2, 8, 16)), jnp.float32)
    packed = jnp.asarray([[0, 1, 2, 3, 0, 1, 2, 0], [0, 1, 2, 3, 4, 5, 6, 7]])  # three documents in the first row
    got = nnx.jit(lambda m, x, p: m(x, p))(module, x, packed)
    # lm1b's float32 arithmetic is off by up to ~1e-6 at these positions; posenc is within 2e-7 of the exact table.
    np.testing.assert_allclose(np.asarray(got), np.asarray(lm1b_add_position_embs(x, packed)), rtol=0, atol=2e-6)
    exact = np.asarray(x, np.float64) + posenc.encode(np.asarray(packed), 16, convention="tensor2tensor", dtype=np.float64)
    assert np.abs(np.asarray(got, np.float64) - exact).max() <= BOUND + 2.0**-22


def test_a_module_cast_to_bfloat16_grows_its_table_in_bfloat16():
    # Flax casts a model through its state (as torch's module.to(dtype), test_torch.py): the grown table keeps that dtype.
    module = pj.PositionalEncoding(8, 4)
    nnx.update(module, jax.tree_util.tree_map(lambda a: a.astype(jnp.bfloat16), nnx.state(module)))
    out = module(jnp.zeros((1, 11, 8)))  # past max_len: the table grows
    assert module.pe[...].dtype == jnp.bfloat16 and module.max_len == 11
    want = posenc.positional_encoding(11, 8).astype(jnp.bfloat16).astype(np.float32)
    np.testing.assert_array_equal(np.asarray(out[0]), want)


def test_modules_take_rngs_and_need_no_dropout_stream_at_rate_0():
    rngs = nnx.Rngs(0)  # a default stream only, as nnx.bridge.to_linen hands over at init
    table, rotary = pj.PositionalEncoding(8, 16, rngs=rngs), pj.RotaryEmbedding(8, rngs=rngs)
    table.train()
    np.testing.assert_array_equal(np.asarray(table(jnp.zeros((1, 4, 8)))), posenc.positional_encoding(4, 8)[None])
    np.testing.assert_array_equal(np.asarray(rotary(jnp.zeros((1, 4, 8)), jnp.arange(4)[None])[0]),
                                  posenc.rotary_cos_sin(np.arange(4)[None], 8)[0])
    dropping = pj.PositionalEncoding(8, 16, dropout=0.5, rngs=nnx.Rngs(0, dropout=1))
    assert (np.asarray(dropping(jnp.ones((1, 4, 8)))) == 0).any()


def test_modules_work_from_linen_through_to_linen_under_jit():
    bridge = pytest.importorskip("flax.nnx.bridge")
    x = jnp.asarray(np.random.default_rng(1).standard_normal((2, 5, 16)), jnp.float32)
    model = bridge.to_linen(pj.PositionalEncoding, 16, 32)
    variables = jax.jit(model.init)(jax.random.key(0), x)
    np.testing.assert_array_equal(np.asarray(jax.jit(model.apply)(variables, x)), np.asarray(pj.PositionalEncoding(16, 32)(x)))
    positions = jnp.arange(3, 8)
    got = jax.jit(lambda v, x, p: model.apply(v, x, positions=p))(variables, x, positions)
    assert np.abs(np.asarray(got, np.float64) - (np.asarray(x) + posenc.encode(np.arange(3, 8), 16))).max() <= BOUND + 2.0**-21
    rotary = bridge.to_linen(pj.RotaryEmbedding, 16, rope_type="linear", factor=2.0)
    position_ids = jnp.arange(5)[None]
    variables = jax.jit(rotary.init)(jax.random.key(0), x, position_ids)
    cos, _ = jax.jit(rotary.apply)(variables, x, position_ids)
    want, _ = posenc.rotary_cos_sin(np.arange(5)[None], 16, rope_type="linear", factor=2.0)
    assert np.abs(np.asarray(cos, np.float64) - want).max() <= BOUND


SHARDED = """
import sys
import jax, jax.numpy as jnp, numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
import posenc.jax as pj
from posenc.sinusoidal import tables
from posenc.engine import rotation

def no_host(*args, **kwargs):
    raise AssertionError("a sharded array went through host NumPy")

mesh = Mesh(np.array(jax.devices()), ("x",))  # jax.make_mesh is newer than the lowest JAX
positions = jax.device_put(jnp.asarray(np.load(sys.argv[1])), NamedSharding(mesh, P("x")))
x = jax.device_put(jnp.zeros((4, 2, 16)), NamedSharding(mesh, P("x")))
real_encode = tables.encode
tables.encode = rotation.sin_cos = no_host
outputs = {
    "encode": pj.encode(positions, 16),
    "rotary_cos_sin": pj.rotary_cos_sin(positions, 16)[0],
    "RotaryEmbedding": pj.RotaryEmbedding(16)(x, positions.astype(jnp.int32))[0],
    "PositionalEncoding": pj.PositionalEncoding(16, 8)(x, positions),
    "dynamic": pj.RotaryEmbedding(16, rope_type="dynamic", factor=2.0, max_position_embeddings=8)(x, positions.astype(jnp.int32))[0],
}
for name, out in outputs.items():
    assert out.sharding.is_equivalent_to(NamedSharding(mesh, P("x")), out.ndim), (name, out.sharding)
np.savez(sys.argv[2], **{name: np.asarray(out) for name, out in outputs.items()})
try:  # sharded float positions are checked where they are
    pj.encode(jax.device_put(jnp.asarray([0.0, jnp.nan]), NamedSharding(mesh, P("x"))), 8)
except ValueError as error:
    assert str(error) == "positions must be finite, got NaN or infinity in an array of shape (2,)", error
else:
    raise AssertionError("a NaN position was taken")
second = jax.devices()[1]
tables.encode = real_encode
on_second = pj.encode(jax.device_put(jnp.arange(3), second), 8)  # host memory: NumPy's table, back on that device
assert on_second.devices() == {second}
print("kept")
"""


def test_eager_calls_keep_sharding_and_device_without_a_host_round_trip(tmp_path):
    # Two CPU devices need XLA_FLAGS before JAX starts: a child process computes on them. What it
    # computes is compared here with the same calls on one device.
    positions = np.array([[0.0, 1.0], [2.5, 7.0], [1e5, 3.0], [9e6, 4.0]])
    np.save(tmp_path / "positions.npy", positions)
    env = {**os.environ, "XLA_FLAGS": "--xla_force_host_platform_device_count=2", "JAX_PLATFORMS": "cpu"}
    out = child.run(["-c", SHARDED, str(tmp_path / "positions.npy"), str(tmp_path / "sharded.npz")],
                    env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.strip() == "kept"
    x, ids = np.zeros((4, 2, 16), np.float32), positions.astype(np.int32)
    dynamic = pj.RotaryEmbedding(16, rope_type="dynamic", factor=2.0, max_position_embeddings=8)
    one_device = {"encode": pj.encode(positions, 16), "rotary_cos_sin": pj.rotary_cos_sin(positions, 16)[0],
                  "RotaryEmbedding": pj.RotaryEmbedding(16)(x, ids)[0], "PositionalEncoding": pj.PositionalEncoding(16, 8)(x, positions),
                  "dynamic": dynamic(x, ids)[0]}
    want = {"encode": posenc.encode(positions, 16), "PositionalEncoding": posenc.encode(positions, 16),
            "rotary_cos_sin": posenc.rotary_cos_sin(positions, 16)[0], "RotaryEmbedding": posenc.rotary_cos_sin(ids, 16)[0],
            # dynamic reads the sequence length off the ids: 9e6 + 1, sharded or not
            "dynamic": posenc.rotary_cos_sin(ids, 16, rope_type="dynamic", factor=2.0, max_position_embeddings=8, seq_len=9e6 + 1)[0]}
    sharded = np.load(tmp_path / "sharded.npz")
    assert sorted(sharded.files) == sorted(want)
    for name, exact in want.items():  # sharded or on one device, the same values
        for got in (sharded[name], one_device[name]):
            assert np.abs(np.asarray(got, np.float64) - exact).max() <= 2e-7, name


def test_eval_shape_of_a_table_past_the_eager_size_limit():
    # Traced, the size is XLA's to plan: jax.eval_shape (a model's shapes, nothing allocated) is not refused.
    got = jax.eval_shape(lambda p: pj.encode(p, 1024), jax.ShapeDtypeStruct((2**22,), jnp.int32))
    assert (got.shape, got.dtype) == ((2**22, 1024), jnp.float32)
