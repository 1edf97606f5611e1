"""The vision and video positions of issue 29 in every front: ``per_axis_cos_sin``, ``per_axis_cis``,
``pixel_cos_sin``, ``random_fourier_features`` and ``RotaryEmbedding(axes_dim=...)`` give NumPy's
values (posenc.rope.axial, posenc.rope.pixels, posenc.sinusoidal.fourier, themselves tested against
diffusers, timm and transformers) in the framework's tensors, eagerly and traced; the torch module
gives diffusers' ``FluxPosEmbed`` on the Flux pipeline's own ids.

Eagerly on the host every front hands over NumPy's table: the same numbers. Traced (torch.compile,
tf.function, jax.jit) the kernels run in the framework's operations: within the accuracy contract
(2e-7 of the exact value) of the positions they were given. A JAX array holds float32 (x64 off): JAX's values
are compared with NumPy's at the positions (and projection) rounded to float32.
"""

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

from frameworks import BOUND, ROUNDING, only  # noqa: E402
from messages import assert_raises_naming  # noqa: E402
import posenc.front  # noqa: E402
from posenc.rope import axial, pixels  # noqa: E402
from posenc.sinusoidal import fourier, grid  # noqa: E402

ONE = ROUNDING["float32"]  # one rounding of a float32 value in [0.5, 1]
SPACING = 2 * ONE  # one float32 spacing there: the same value rounded twice, by two routes


def close(ours, reference, atol):
    np.testing.assert_allclose(np.asarray(ours, np.float64), np.asarray(reference, np.float64), rtol=0, atol=atol)


def fractional_ids(axes, count, seed):
    """``(count, axes)`` ids on odd ranges, with halves on every other axis (CogVideoX's spaced grids)."""
    rng = np.random.default_rng(seed)
    ids = rng.integers(0, 37, size=(count, axes)).astype(np.float64)
    ids[:, 1::2] += 0.5
    return ids


# (text tokens, height, width) of Flux's ids; odd, non-square grids.
FLUX_GRIDS = [(0, 3, 5), (6, 5, 3), (7, 1, 9)]
AXES_DIMS = [(16, 56, 56), (8, 12, 12), (4, 30, 2)]


def traced(front, function):
    """``function`` compiled by the front's compiler (torch.compile without fullgraph: the functions
    make their frequencies with graph breaks; the modules compile fullgraph, tested below)."""
    if front.name == "torch":
        import torch

        return torch.compile(function)
    if front.name == "tensorflow":
        import tensorflow as tf

        return tf.function(function, autograph=False)
    import jax

    return jax.jit(function)


def held(front, values):
    """``values`` as the front's tensor holds them: JAX's float32 (x64 off), float64 elsewhere."""
    if front.name == "jax":
        return np.asarray(values, np.float32).astype(np.float64)
    return np.asarray(values, np.float64)


# per_axis_cos_sin and per_axis_cis.


@pytest.mark.parametrize("text, height, width", FLUX_GRIDS)
@pytest.mark.parametrize("axes_dim", AXES_DIMS)
@pytest.mark.parametrize("layout", ["interleaved", "half"])
def test_per_axis_cos_sin_is_numpys_in_every_front(front, text, height, width, axes_dim, layout):
    ids = axial.flux_position_ids(text, height, width)
    cos, sin = front.api.per_axis_cos_sin(front.tensor(ids), axes_dim, layout=layout)
    reference = axial.per_axis_cos_sin(ids, axes_dim, layout=layout)
    for ours, theirs in zip((cos, sin), reference):
        assert ours.dtype == front.dtypes["float32"] and tuple(ours.shape) == theirs.shape
        close(front.numpy(ours), theirs, ONE)


@pytest.mark.parametrize("axes_dim, base", [((32, 32, 32, 32), 2000.0), ((6, 10), 10000.0), ((20, 44, 44), 256.0)])
def test_per_axis_cos_sin_any_axes_fractional_ids_and_batches(front, axes_dim, base):
    ids = fractional_ids(len(axes_dim), 2 * 13, seed=len(axes_dim)).reshape(2, 13, len(axes_dim))
    reference = axial.per_axis_cos_sin(ids, axes_dim, base=base)
    for ours, theirs in zip(front.api.per_axis_cos_sin(front.tensor(ids), axes_dim, base=base), reference):
        close(front.numpy(ours), theirs, ONE)
    if front.name != "jax":  # float64 needs x64 there
        reference = axial.per_axis_cos_sin(ids, axes_dim, base=base, dtype=np.float64)
        ours = front.api.per_axis_cos_sin(front.tensor(ids), axes_dim, base=base, dtype=front.dtypes["float64"])
        for mine, theirs in zip(ours, reference):
            assert mine.dtype == front.dtypes["float64"]
            close(front.numpy(mine), theirs, 4e-16)


@pytest.mark.parametrize("axes_dim", AXES_DIMS)
def test_per_axis_traced_within_the_contract(front, axes_dim):
    ids = fractional_ids(3, 45, seed=7)
    cos, sin = traced(front, lambda p: front.api.per_axis_cos_sin(p, axes_dim))(front.tensor(ids))
    exact = axial.per_axis_cos_sin(held(front, ids), axes_dim, dtype=np.float64)
    close(front.numpy(cos), exact[0], BOUND)
    close(front.numpy(sin), exact[1], BOUND)


def test_ids_taken_axis_first_keep_the_shape_they_hold(front):
    # (batch, tokens, axes) ids become (axes, batch, tokens) positions; the shape said is the shape held, which
    # the size checks and the route (a decoding step's few angles) are read from.
    ids = np.arange(30).reshape(2, 5, 3)
    taken = posenc.front._axis_first(front.api.SPEC, front.api.SPEC.intake(front.tensor(ids), None), (8, 8, 16))
    assert taken.shape == taken.numpy().shape == (3, 2, 5)
    np.testing.assert_array_equal(taken.numpy(), np.moveaxis(ids, -1, 0))


@pytest.mark.parametrize("text, height, width", FLUX_GRIDS)
def test_per_axis_cis_is_numpys_complex_form(front, text, height, width):
    ids = axial.flux_position_ids(text, height, width)
    ours = front.numpy(front.api.per_axis_cis(front.tensor(ids), (16, 56, 56)))
    reference = axial.per_axis_cis(ids, (16, 56, 56))
    assert ours.dtype == np.complex64 and ours.shape == reference.shape
    close(ours.real, reference.real, ONE)
    close(ours.imag, reference.imag, ONE)
    if front.name == "jax":  # no complex128 while x64 is off: refused by name
        assert_raises_naming(lambda: front.api.per_axis_cis(ids, (16, 56, 56), dtype=np.complex128), ValueError,
                             ["dtype", "jax_enable_x64"])
    else:
        double = front.numpy(front.api.per_axis_cis(front.tensor(ids), (16, 56, 56), dtype=front.api.SPEC.xp.complex128))
        assert double.dtype == np.complex128
        np.testing.assert_allclose(double, axial.per_axis_cis(ids, (16, 56, 56), dtype=np.complex128), rtol=0, atol=4e-16)


# pixel_cos_sin.


@pytest.mark.parametrize("shape", [(3, 5), (7, 4), (1, 9), (2, 3, 5)])
@pytest.mark.parametrize("head_dim", [24, 48, 120])
@pytest.mark.parametrize("spacing, max_freq", [("linear", 224.0), ("log", 224.0), ("linear", 64.0)])
def test_pixel_cos_sin_is_numpys_in_every_front(front, shape, head_dim, spacing, max_freq):
    positions = grid.patch_positions(shape, normalize="pixel")
    ours = front.api.pixel_cos_sin(front.tensor(positions), head_dim, max_freq=max_freq, spacing=spacing)
    reference = pixels.pixel_cos_sin(held(front, positions), head_dim, max_freq=max_freq, spacing=spacing)
    for mine, theirs in zip(ours, reference):
        assert mine.dtype == front.dtypes["float32"] and tuple(mine.shape) == theirs.shape
        close(front.numpy(mine), theirs, ONE)


def test_pixel_cos_sin_traced_within_the_contract(front):
    positions = grid.patch_positions((7, 9), normalize="pixel")
    run = traced(front, lambda p: front.api.pixel_cos_sin(p, 48, max_freq=(224.0, 64.0), layout="half"))
    cos, sin = run(front.tensor(positions))
    exact = pixels.pixel_cos_sin(held(front, positions), 48, max_freq=(224.0, 64.0), layout="half", dtype=np.float64)
    close(front.numpy(cos), exact[0], BOUND)
    close(front.numpy(sin), exact[1], BOUND)


# random_fourier_features.


@pytest.mark.parametrize("coords_shape", [(5, 2), (3, 7, 2), (4, 3)])
@pytest.mark.parametrize("features", [7, 64])
def test_random_fourier_features_is_numpys_in_every_front(front, coords_shape, features):
    rng = np.random.default_rng(features)
    coords, projection = rng.random(coords_shape), 2.5 * rng.standard_normal((coords_shape[-1], features))
    ours = front.api.random_fourier_features(front.tensor(coords), front.tensor(projection))
    reference = fourier.random_fourier_features(held(front, coords), held(front, projection))
    assert ours.dtype == front.dtypes["float32"] and tuple(ours.shape) == reference.shape
    close(front.numpy(ours), reference, ONE)


def test_random_fourier_features_of_sam_prompt_points(front):
    # SAM's prompt points: pixel coordinates plus 0.5, divided by the input image's (width, height).
    rng = np.random.default_rng(3)
    points = rng.integers(0, 600, size=(2, 5, 2)) + 0.5
    projection = rng.standard_normal((2, 128))
    ours = front.api.random_fourier_features(front.tensor(points), front.tensor(projection), input_shape=(683, 1024))
    reference = fourier.random_fourier_features(points, held(front, projection), input_shape=(683, 1024))
    close(front.numpy(ours), reference, ONE)


def test_random_fourier_features_traced(front):
    rng = np.random.default_rng(5)
    coords, projection = rng.random((6, 11, 2)), 3 * rng.standard_normal((2, 64))
    ours = traced(front, lambda c, g: front.api.random_fourier_features(c, g))(front.tensor(coords), front.tensor(projection))
    c, g = held(front, coords), held(front, projection)
    exact = fourier.random_fourier_features(c, g, dtype=np.float64)
    # JAX's trace forms c G in float32: off by a few |c G| * 2**-24 turns (here |c G| < 9).
    turns = np.abs((2 * c - 1) @ g).max() if front.name == "jax" else 0.0
    close(front.numpy(ours), exact, BOUND + 2 * np.pi * 4 * turns * ONE)



def test_random_fourier_features_traced_checks_input_shape(front):
    # Traced, no NumPy call checks it: a zero height would divide by zero without a word.
    coords, projection = front.tensor(np.full((3, 2), 0.5)), front.tensor(np.ones((2, 4)))
    features = traced(front, lambda c, g: front.api.random_fourier_features(c, g, input_shape=(0, 5)))
    assert_raises_naming(lambda: features(coords, projection), ValueError, ["input_shape", "(0, 5)", "positive sizes"])

# RotaryEmbedding(axes_dim=...).


@pytest.mark.parametrize("form", ["channels", "pairs", "complex"])
@pytest.mark.parametrize("axes_dim", AXES_DIMS)
def test_rotary_module_with_axes_dim_is_per_axis_rope(front, form, axes_dim):
    ids = np.stack([axial.flux_position_ids(4, 3, 5), axial.flux_position_ids(4, 3, 5)[::-1]])  # (batch, seq, 3)
    module = front.make(front.api.RotaryEmbedding, sum(axes_dim), axes_dim=axes_dim, layout="interleaved", form=form)
    out = front.run(module, front.tensor(np.zeros((2, 19, sum(axes_dim)), np.float32)), front.tensor(ids))
    if form == "complex":
        reference = axial.per_axis_cis(ids, axes_dim)
        ours = front.numpy(out)
        assert ours.dtype == np.complex64
        close(ours.real, reference.real, SPACING)
        close(ours.imag, reference.imag, SPACING)
        return
    cos, sin = axial.per_axis_cos_sin(ids, axes_dim, layout="interleaved")
    if form == "pairs":
        cos, sin = cos[..., ::2], sin[..., ::2]
    for mine, theirs in zip(out, (cos, sin)):
        assert tuple(mine.shape) == theirs.shape
        close(front.numpy(mine), theirs, SPACING)


def test_rotary_module_axes_dim_checks_and_config(front):
    module = front.make(front.api.RotaryEmbedding, 128, axes_dim=(16, 56, 56), layout="interleaved")
    assert module.axes_dim == (16, 56, 56) and module.rotary_dim == 128
    assert module._config()["axes_dim"] == (16, 56, 56) and "axes_dim=(16, 56, 56)" in module.extra_repr()
    assert_raises_naming(lambda: front.api.RotaryEmbedding(120, axes_dim=(16, 56, 56)), ValueError,
                         ["head_dim must be sum(axes_dim) = 128", "got 120"])
    assert_raises_naming(lambda: front.api.RotaryEmbedding(128, axes_dim=(16, 56, 56), rope_type="linear", factor=2.0),
                         ValueError, ["axes_dim", "rope_type='linear'", "['factor']"])
    assert_raises_naming(lambda: front.api.RotaryEmbedding(128, axes_dim=(16, 55)), ValueError, ["axes_dim must be", "(16, 55)"])
    x = front.tensor(np.zeros((2, 128), np.float32))
    assert_raises_naming(lambda: front.run(module, x, front.tensor(np.zeros((2, 5, 2)))), ValueError,
                         ["ids must have one coordinate per axis of axes_dim last", "(..., 3)", "(2, 5, 2)"])


@only("torch")
@pytest.mark.parametrize("height, width", [(3, 5), (5, 3), (1, 7), (4, 4)])
@pytest.mark.parametrize("text", [0, 6])
def test_torch_module_is_diffusers_flux_pos_embed(front, height, width, text):
    import torch

    pytest.importorskip("diffusers", reason="install the conventions extra")
    from diffusers.models.transformers.transformer_flux import FluxPosEmbed
    from diffusers.pipelines.flux.pipeline_flux import FluxPipeline

    # The transformer's ids: the pipeline's text_ids (zeros) and image ids, text first.
    ids = torch.cat([torch.zeros(text, 3), FluxPipeline._prepare_latent_image_ids(1, height, width, "cpu", torch.float32)])
    references = FluxPosEmbed(theta=10000, axes_dim=[16, 56, 56])(ids)
    module = front.api.RotaryEmbedding(128, axes_dim=(16, 56, 56), layout="interleaved")
    x = torch.zeros(1, 128)
    for ours in (module(x, ids), torch.compile(module, fullgraph=True)(x, ids)):
        for mine, theirs in zip(ours, references):
            assert mine.dtype == theirs.dtype == torch.float32 and mine.shape == theirs.shape
            close(mine, theirs, SPACING)


@only("tensorflow")
def test_tensorflow_graphs_of_unknown_lengths(front):
    import tensorflow as tf

    api = front.api
    ids = fractional_ids(3, 17, seed=2)
    per_axis = tf.function(lambda p: api.per_axis_cos_sin(p, (8, 12, 12)), input_signature=[tf.TensorSpec([None, None], tf.float64)])
    close(per_axis(tf.constant(ids))[0].numpy(), axial.per_axis_cos_sin(ids, (8, 12, 12))[0], BOUND)
    positions = grid.patch_positions((5, 6), normalize="pixel")
    pixel = tf.function(lambda p: api.pixel_cos_sin(p, 16), input_signature=[tf.TensorSpec([2, None], tf.float64)])
    close(pixel(tf.constant(positions))[1].numpy(), pixels.pixel_cos_sin(positions, 16)[1], BOUND)
    # the frequencies depend on how many axes: a graph must know it
    unknown = tf.function(lambda p: api.pixel_cos_sin(p, 16), input_signature=[tf.TensorSpec([None, None], tf.float64)])
    assert_raises_naming(lambda: unknown.get_concrete_function(), ValueError, ["positions must have a known number of axes"])
    rng = np.random.default_rng(0)
    coords, projection = rng.random((3, 4, 2)), rng.standard_normal((2, 9))
    features = tf.function(lambda c: api.random_fourier_features(c, projection, input_shape=(7, 5)),
                           input_signature=[tf.TensorSpec([None, None, None], tf.float64)])
    close(features(tf.constant(coords)).numpy(), fourier.random_fourier_features(coords, projection, input_shape=(7, 5)), BOUND)
