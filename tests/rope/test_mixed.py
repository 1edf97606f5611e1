"""RoPE-Mixed (posenc.rope.mixed, ``RotaryEmbeddingMixed`` in each front) against timm's code.

timm is not installed here: its three functions are re-expressed below, line for line, from
huggingface/pytorch-image-models, timm/layers/pos_embed_sincos.py at commit
0647e283021a2a7b0c7dc989d10564aa55bbf5e7 (``init_random_2d_freqs``, ``get_mixed_grid``,
``get_mixed_freqs``, which ``RotaryEmbeddingMixed.__init__`` and ``get_embed`` call).

timm computes in float32: its initial parameter rounds ``theta + pi/2`` and each product, its
angles ``t_x fx + t_y fy`` are rounded twice; posenc computes both in float64 and rounds once,
so the bounds below allow timm's float32 error (``|angle| * 2**-23`` and a spacing).
"""

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

from frameworks import ROUNDING, only  # noqa: E402
from messages import assert_raises_naming  # noqa: E402
from posenc.rope import mixed  # noqa: E402
from posenc.sinusoidal.grid import patch_positions  # noqa: E402

torch = pytest.importorskip("torch")

SPACING = 2 * ROUNDING["float32"]  # a float32 spacing of values in [0.5, 1]


# --- timm, re-expressed (see the module docstring for the source) ------------------------

def timm_init_random_2d_freqs(head_dim, depth, num_heads, temperature=10.0, rotate=True, dtype=torch.float32):
    mag = 1.0 / (temperature ** (torch.arange(0, head_dim, 4, dtype=dtype) / head_dim))
    mag = mag.unsqueeze(0).unsqueeze(0)
    if rotate:
        angles = torch.rand(depth, num_heads, 1, dtype=dtype) * 2 * torch.pi
    else:
        angles = torch.zeros(depth, num_heads, 1, dtype=dtype)
    fx = torch.cat([mag * torch.cos(angles), mag * torch.cos(angles + torch.pi / 2)], dim=-1)
    fy = torch.cat([mag * torch.sin(angles), mag * torch.sin(angles + torch.pi / 2)], dim=-1)
    return torch.stack([fx, fy], dim=0)


def timm_get_mixed_grid(shape, grid_indexing="ij", dtype=torch.float32):
    if grid_indexing == "xy":
        shape = [shape[1], shape[0]] + list(shape[2:])  # swap_shape_xy
    x_pos, y_pos = torch.meshgrid(torch.arange(shape[0], dtype=torch.float32), torch.arange(shape[1], dtype=torch.float32),
                                  indexing=grid_indexing)
    return x_pos.to(dtype).flatten(), y_pos.to(dtype).flatten()


def timm_get_mixed_freqs(freqs, t_x, t_y):
    dtype = freqs.dtype
    freqs = freqs.float()
    freqs_x = t_x.unsqueeze(-1) @ freqs[0].unsqueeze(-2)
    freqs_y = t_y.unsqueeze(-1) @ freqs[1].unsqueeze(-2)
    combined = freqs_x + freqs_y
    sin_emb = torch.sin(combined).repeat_interleave(2, -1)
    cos_emb = torch.cos(combined).repeat_interleave(2, -1)
    return torch.cat([sin_emb, cos_emb], dim=-1).to(dtype)


# --- posenc against it ---------------------------------------------------------------------

def positions_of(shape, grid_indexing):
    """timm's (t_x, t_y) as posenc's positions: "xy" puts the column first, "ij" the row."""
    rows_columns = patch_positions(shape)
    return np.ascontiguousarray(rows_columns[::-1] if grid_indexing == "xy" else rows_columns)


def float32_angles(largest_angle):
    """timm's float32 angle is off by a few |angle| * 2**-24, its sin and cos by a rounding more."""
    return SPACING * (1 + 2 * largest_angle)


SIZES = [(16, 1, 1), (32, 3, 2), (64, 2, 6), (72, 4, 3)]  # (head_dim, depth, num_heads)


@pytest.mark.parametrize("head_dim, depth, num_heads", SIZES)
@pytest.mark.parametrize("seed", [0, 7])
def test_initial_frequencies_are_timms(head_dim, depth, num_heads, seed):
    torch.manual_seed(seed)
    theirs = timm_init_random_2d_freqs(head_dim, depth, num_heads).numpy()
    torch.manual_seed(seed)
    angles = (torch.rand(depth, num_heads, 1) * 2 * torch.pi).numpy()[..., 0]
    ours = mixed.mixed_frequencies(head_dim, angles)
    assert ours.dtype == np.float32 and ours.shape == theirs.shape == (2, depth, num_heads, head_dim // 2)
    # timm rounds theta + pi/2 (up to 2pi + pi/2) to float32 first: |theta| * 2**-24 in the angle.
    np.testing.assert_allclose(ours, theirs, rtol=0, atol=SPACING * (1 + 8))
    # cos(theta + pi/2) = -sin(theta): the second half is the first turned by a quarter.
    np.testing.assert_array_equal(ours[0, ..., head_dim // 4:], -ours[1, ..., : head_dim // 4])
    np.testing.assert_array_equal(ours[1, ..., head_dim // 4:], ours[0, ..., : head_dim // 4])


@pytest.mark.parametrize("head_dim, depth, num_heads", SIZES)
@pytest.mark.parametrize("shape", [(3, 5), (7, 4), (1, 6), (14, 14)])
@pytest.mark.parametrize("grid_indexing", ["xy", "ij"])
def test_cos_sin_are_timms_for_the_same_parameter(head_dim, depth, num_heads, shape, grid_indexing):
    torch.manual_seed(head_dim + depth)
    # a trained parameter: timm's start moved at random
    freqs = timm_init_random_2d_freqs(head_dim, depth, num_heads) * (1 + 0.3 * torch.randn(2, depth, num_heads, head_dim // 2))
    rope = timm_get_mixed_freqs(freqs, *timm_get_mixed_grid(list(shape), grid_indexing)).numpy()
    sin_theirs, cos_theirs = rope[..., :head_dim], rope[..., head_dim:]
    cos, sin = mixed.mixed_cos_sin(positions_of(shape, grid_indexing), freqs.numpy())
    assert cos.shape == cos_theirs.shape == (depth, num_heads, shape[0] * shape[1], head_dim) and cos.dtype == np.float32
    largest = (np.abs(freqs.numpy()).sum(0) * max(shape)).max()
    np.testing.assert_allclose(cos, cos_theirs, rtol=0, atol=float32_angles(largest))
    np.testing.assert_allclose(sin, sin_theirs, rtol=0, atol=float32_angles(largest))


def test_cos_sin_are_exact_for_the_parameter_given():
    # Against the float64 formula, written out: posenc rounds the float64 cos and sin of the angle once.
    rng = np.random.default_rng(0)
    freqs = rng.standard_normal((2, 2, 3, 8)).astype(np.float32)
    positions = rng.integers(-50, 50, size=(2, 5, 7))
    cos, sin = mixed.mixed_cos_sin(positions, freqs, layout="half", dtype=np.float64)
    f = freqs.astype(np.float64)
    angle = positions[0, ..., None] * f[0][:, :, None, None] + positions[1, ..., None] * f[1][:, :, None, None]
    np.testing.assert_allclose(cos, np.concatenate([np.cos(angle)] * 2, -1), rtol=0, atol=1e-15)
    np.testing.assert_allclose(sin, np.concatenate([np.sin(angle)] * 2, -1), rtol=0, atol=1e-15)


def test_frequencies_of_one_head_may_have_no_head_axis():
    # freqs (2, head_dim // 2): the "..." of (2, ..., head_dim // 2) is empty, and so is the output's head axis.
    freqs = np.random.default_rng(2).standard_normal((2, 1, 4))
    positions = np.array([[0, 1, 5], [2, -1, 3]])
    alone, one_head = mixed.mixed_cos_sin(positions, freqs[:, 0]), mixed.mixed_cos_sin(positions, freqs)
    assert alone[0].shape == (3, 8)
    np.testing.assert_array_equal(alone[0], one_head[0][0])
    np.testing.assert_array_equal(alone[1], one_head[1][0])


def test_one_point_is_a_position_without_a_token_axis():
    freqs = np.random.default_rng(1).standard_normal((2, 3, 8)).astype(np.float32)
    one, column = mixed.mixed_cos_sin([4, -3], freqs), mixed.mixed_cos_sin([[4], [-3]], freqs)
    assert one[0].shape == (3, 16)
    for point, token in zip(one, column):
        np.testing.assert_array_equal(point, token[:, 0])
    assert_raises_naming(lambda: mixed.mixed_cos_sin(4.0, freqs), ValueError, ["positions", "(2, ...)", "got shape ()"])


def test_bad_input_names_the_argument():
    assert_raises_naming(lambda: mixed.mixed_frequencies(18, np.zeros((2, 2))), ValueError, ["head_dim", "multiple of 4", "18"])
    assert_raises_naming(lambda: mixed.mixed_frequencies(16, np.zeros(2), base=1.0), ValueError, ["base", "1.0"])
    assert_raises_naming(lambda: mixed.mixed_cos_sin(np.zeros((3, 4)), np.zeros((2, 1, 4))), ValueError,
                         ["positions", "(2, ...)", "(3, 4)"])
    assert_raises_naming(lambda: mixed.mixed_cos_sin(np.zeros((2, 4)), np.zeros((3, 1, 4))), ValueError,
                         ["frequencies", "(2, ..., head_dim // 2)", "(3, 1, 4)"])
    assert_raises_naming(lambda: mixed.mixed_cos_sin(np.zeros((2, 4)), np.full((2, 1, 4), np.nan)), ValueError,
                         ["frequencies must be finite"])
    assert_raises_naming(lambda: mixed.mixed_cos_sin(np.zeros((2, 4)), np.array(["a", "b"])), TypeError,
                         ["frequencies must hold real numbers"])
    # broadcast views: 2**37 entries asked for, none allocated before the refusal
    huge = np.broadcast_to(np.zeros(1), (2, 2**20)), np.broadcast_to(np.ones(1), (2, 2**8, 2**8))
    assert_raises_naming(lambda: mixed.mixed_cos_sin(*huge), ValueError,
                         ["prod(frequencies.shape[1:]) * positions.size", "2**31", "65536 * 2097152"])


# --- the modules -------------------------------------------------------------------------------

def parameter(front, module):
    return front.numpy(module.freqs[...])


@only("torch")
@pytest.mark.parametrize("head_dim, depth, num_heads", SIZES)
def test_torch_module_starts_as_timms_after_the_same_seed(front, head_dim, depth, num_heads):
    torch.manual_seed(3)
    theirs = timm_init_random_2d_freqs(head_dim, depth, num_heads)
    torch.manual_seed(3)
    module = front.api.RotaryEmbeddingMixed(head_dim, depth, num_heads)
    assert isinstance(module.freqs, torch.nn.Parameter) and module.freqs.requires_grad
    assert [name for name, _ in module.named_parameters()] == ["freqs"]
    np.testing.assert_allclose(parameter(front, module), theirs.numpy(), rtol=0, atol=SPACING * (1 + 8))


@pytest.mark.parametrize("head_dim, depth, num_heads", SIZES)
@pytest.mark.parametrize("shape", [(3, 5), (7, 4)])
def test_module_cos_sin_are_numpys_of_its_parameter(front, head_dim, depth, num_heads, shape):
    kwargs = {"rngs": __import__("flax").nnx.Rngs(params=5)} if front.name == "jax" else {}
    module = front.make(front.api.RotaryEmbeddingMixed, head_dim, depth, num_heads, **kwargs)
    positions = positions_of(shape, "xy")
    cos, sin = front.run(module, front.tensor(np.zeros((1, head_dim), np.float32)), front.tensor(positions))
    freqs = parameter(front, module)
    reference = mixed.mixed_cos_sin(positions, freqs, dtype=np.float64)
    # float64 angles in torch and TensorFlow: one rounding; JAX's float32 angles: timm's error.
    largest = (np.abs(freqs).sum(0) * max(shape)).max()
    bound = float32_angles(largest) if front.name == "jax" else ROUNDING["float32"]
    for ours, theirs in zip((cos, sin), reference):
        assert tuple(ours.shape) == (depth, num_heads, shape[0] * shape[1], head_dim)
        assert ours.dtype == front.dtypes["float32"]
        np.testing.assert_allclose(front.numpy(ours), theirs, rtol=0, atol=bound)


def test_module_takes_a_bfloat16_x_and_refuses_an_integer_one(front):
    kwargs = {"rngs": __import__("flax").nnx.Rngs(params=5)} if front.name == "jax" else {}
    # (a Keras layer computes in its dtype policy: it is made bfloat16)
    module = front.make(front.api.RotaryEmbeddingMixed, 16, 2, 3, compute_dtype="bfloat16", **kwargs)
    positions = front.tensor(positions_of((3, 5), "xy"))
    cos, sin = front.run(module, front.tensor(np.zeros((1, 16)), "bfloat16"), positions)
    assert cos.dtype == sin.dtype == front.dtypes["bfloat16"]
    with pytest.raises(TypeError, match="dtype must be"):
        front.run(module, front.tensor(np.zeros((1, 16)), "int32"), positions)


def test_modules_draw_from_their_framework_seed(front):
    # Two modules made after the same seed hold the same parameter; a third after another seed differs.
    def made(seed):
        if front.name == "jax":
            from flax import nnx

            return front.api.RotaryEmbeddingMixed(16, 2, 3, rngs=nnx.Rngs(params=seed))
        if front.name == "tensorflow":
            return front.api.RotaryEmbeddingMixed(16, 2, 3, seed=seed)
        torch.manual_seed(seed)
        return front.api.RotaryEmbeddingMixed(16, 2, 3)

    first, again, other = (parameter(front, made(seed)) for seed in (1, 1, 2))
    np.testing.assert_array_equal(first, again)
    assert not np.array_equal(first, other)
    # each is an initial parameter: magnitudes 10 ** (-4i / 16) in both halves of the pairs
    magnitudes = np.hypot(first[0], first[1])
    np.testing.assert_allclose(magnitudes, np.tile(10.0 ** (-np.arange(4) / 4), 2) * np.ones((2, 3, 1)), rtol=3e-7)


@only("torch")
@pytest.mark.parametrize("head_dim, depth, num_heads", SIZES)
def test_torch_gradient_reaches_the_parameter_as_in_timm(front, head_dim, depth, num_heads):
    torch.manual_seed(11)
    module = front.api.RotaryEmbeddingMixed(head_dim, depth, num_heads)
    theirs = torch.nn.Parameter(module.freqs.detach().clone())
    shape = (5, 3)
    weights = torch.randn(2, depth, num_heads, shape[0] * shape[1], head_dim)
    cos, sin = module(torch.zeros(1), torch.from_numpy(positions_of(shape, "xy")))
    (weights[0] * cos + weights[1] * sin).sum().backward()
    rope = timm_get_mixed_freqs(theirs, *timm_get_mixed_grid(list(shape), "xy"))
    (weights[0] * rope[..., head_dim:] + weights[1] * rope[..., :head_dim]).sum().backward()
    assert module.freqs.grad is not None and module.freqs.grad.abs().sum() > 0
    scale = theirs.grad.abs().max().item()
    np.testing.assert_allclose(module.freqs.grad.numpy(), theirs.grad.numpy(), rtol=0, atol=1e-5 * scale)
    # and an optimiser step changes the cos and sin
    before = cos.detach().clone()
    torch.optim.SGD(module.parameters(), lr=0.1).step()
    assert not torch.equal(module(torch.zeros(1), torch.from_numpy(positions_of(shape, "xy")))[0], before)


@only("torch")
def test_torch_module_compiles_fullgraph(front):
    torch.manual_seed(0)
    module = front.api.RotaryEmbeddingMixed(32, 2, 4)
    positions = torch.from_numpy(positions_of((6, 5), "xy"))
    for eager, compiled in zip(module(torch.zeros(1), positions), torch.compile(module, fullgraph=True)(torch.zeros(1), positions)):
        torch.testing.assert_close(compiled, eager, rtol=0, atol=SPACING)


@only("tensorflow")
def test_keras_layer_trains_its_weight_and_saves_its_config(front):
    import keras
    import tensorflow as tf

    keras.utils.set_random_seed(0)
    layer = front.api.RotaryEmbeddingMixed(16, 2, 3, name="rope_mixed")
    assert [w.name for w in layer.trainable_weights] == ["freqs"]
    positions = tf.constant(positions_of((3, 4), "xy"))
    with tf.GradientTape() as tape:
        cos, sin = layer(tf.zeros((1, 16)), positions)
        loss = tf.reduce_sum(cos) + tf.reduce_sum(sin)
    gradient = tape.gradient(loss, layer.trainable_weights)[0]
    assert gradient is not None and float(tf.reduce_sum(tf.abs(gradient))) > 0
    clone = front.api.RotaryEmbeddingMixed.from_config(layer.get_config())
    assert clone._config() == layer._config() == {"head_dim": 16, "depth": 2, "num_heads": 3, "base": 10.0, "layout": "interleaved"}


@only("jax")
def test_flax_parameter_is_a_param_with_a_gradient(front):
    import jax
    from flax import nnx

    module = front.api.RotaryEmbeddingMixed(16, 2, 3, rngs=nnx.Rngs(params=0))
    assert isinstance(module.freqs, nnx.Param)
    positions = jax.numpy.asarray(positions_of((3, 4), "xy"))

    def loss(m):
        cos, sin = m(jax.numpy.zeros((1, 16)), positions)
        return (cos + sin).sum()

    gradient = nnx.grad(loss)(module)
    assert sum(float(abs(leaf).sum()) for leaf in jax.tree_util.tree_leaves(gradient)) > 0  # Flax 0.8's State too
    jitted = nnx.jit(lambda m, p: m(jax.numpy.zeros((1, 16)), p))(module, positions)
    # XLA fuses the float32 angle p_x fx + p_y fy differently under jit: timm's float32 error
    largest = (np.abs(parameter(front, module)).sum(0) * 4).max()
    eager = module(jax.numpy.zeros((1, 16)), positions)[0]
    np.testing.assert_allclose(np.asarray(jitted[0]), np.asarray(eager), rtol=0, atol=float32_angles(largest))


def test_module_bad_input_names_the_argument(front):
    kwargs = {"rngs": __import__("flax").nnx.Rngs(0)} if front.name == "jax" else {}
    assert_raises_naming(lambda: front.api.RotaryEmbeddingMixed(18, 2, 3, **kwargs), ValueError, ["head_dim", "multiple of 4"])
    assert_raises_naming(lambda: front.api.RotaryEmbeddingMixed(16, 0, 3, **kwargs), ValueError, ["depth must be an int >= 1"])
    assert_raises_naming(lambda: front.api.RotaryEmbeddingMixed(16, 2, 2.5, **kwargs), TypeError, ["num_heads must be an int"])
    assert_raises_naming(lambda: front.api.RotaryEmbeddingMixed(16, 2, 3, layout="sin_cos", **kwargs), ValueError, ["layout"])
    module = front.make(front.api.RotaryEmbeddingMixed, 16, 2, 3, **kwargs)
    x = front.tensor(np.zeros((1, 16), np.float32))
    assert_raises_naming(lambda: front.run(module, x, front.tensor(np.zeros((3, 4)))), ValueError, ["positions", "(2, ...)"])
    # Keras refuses a string x itself, with a ValueError naming x
    error = ValueError if front.name == "tensorflow" else TypeError
    assert_raises_naming(lambda: front.run(module, "x", front.tensor(np.zeros((2, 4)))), error, ["x"])


@only("torch")
def test_torch_repr_names_the_arguments(front):
    assert "RotaryEmbeddingMixed(head_dim=16, depth=2, num_heads=3, base=10.0, layout='interleaved')" in repr(
        front.api.RotaryEmbeddingMixed(16, 2, 3))
