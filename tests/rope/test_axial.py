"""2-D vision RoPE and M-RoPE (posenc.rope.axial) against transformers 5.23 itself and invariants.

transformers' modules compute ``position * inv_freq`` and cos/sin in float32; at the small
grid positions used here that is within a few float32 roundings (atol 5e-7) of posenc's.
"""

import math

import mpmath
import numpy as np
import pytest

import posenc
from frameworks import adapter
from posenc.rope import axial as rg

torch = pytest.importorskip("torch", reason="the conventions extra needs torch")
transformers = pytest.importorskip(
    "transformers", minversion="5.0", reason="install the conventions extra: pip install -e '.[conventions]'"
)
from transformers import PixtralVisionConfig, Qwen2VLConfig, Qwen2VLModel  # noqa: E402
from transformers.models.pixtral.modeling_pixtral import PixtralVisionRotaryEmbedding  # noqa: E402
from transformers.models.qwen2_vl.configuration_qwen2_vl import Qwen2VLTextConfig, Qwen2VLVisionConfig  # noqa: E402
from transformers.models.qwen2_vl.modeling_qwen2_vl import Qwen2VLRotaryEmbedding, Qwen2VLVisionRotaryEmbedding  # noqa: E402
from transformers.models.qwen2_5_vl.configuration_qwen2_5_vl import Qwen2_5_VLVisionConfig  # noqa: E402
from transformers.models.qwen2_5_vl.modeling_qwen2_5_vl import Qwen2_5_VLVisionRotaryEmbedding  # noqa: E402
from transformers.models.qwen3_vl.configuration_qwen3_vl import Qwen3VLTextConfig, Qwen3VLVisionConfig  # noqa: E402
from transformers.models.qwen3_vl.modeling_qwen3_vl import Qwen3VLTextRotaryEmbedding, Qwen3VLVisionRotaryEmbedding  # noqa: E402
from transformers.vision_utils import get_vision_position_ids  # noqa: E402

import posenc.torch as pt  # noqa: E402

FLOAT32 = 5e-7  # a few float32 roundings of values <= 1
BOUND = 2e-7  # posenc's float32 cos/sin against the exact values, every front and route

# The shape error of axial and M-RoPE positions, as every front raises it.
COORDINATES_FIRST = r"positions \(position_ids in M-RoPE\) must have their 3 coordinates first.*got shape \(2, 5\)"


def close(theirs, ours, atol=FLOAT32):
    np.testing.assert_allclose(np.asarray(ours, np.float64), np.asarray(theirs.double()), rtol=0, atol=atol)


@pytest.fixture(scope="module")
def pj():
    return adapter("jax").api


@pytest.fixture(scope="module")
def ptf():
    return adapter("tensorflow").api


def tf_runs(ptf, function, positions, *args, **kwargs):
    """``function`` (a posenc.tensorflow one) called eagerly, and in a ``tf.function`` traced for
    positions of unknown shape."""
    import tensorflow as tf

    @tf.function(input_signature=[tf.TensorSpec([None] * np.ndim(positions), tf.int64)])
    def graph(p):
        return function(p, *args, **kwargs)

    return [function(np.asarray(positions), *args, **kwargs), graph(tf.constant(positions, tf.int64))]


def jax_runs(pj, function, positions, *args, **kwargs):
    """``function`` (a posenc.jax one) called eagerly on NumPy positions, and under ``jax.jit`` on a JAX array."""
    import jax

    traced = jax.jit(lambda p: function(p, *args, **kwargs))(jax.numpy.asarray(positions))
    return [function(np.asarray(positions), *args, **kwargs), traced]


@pytest.mark.parametrize(("height", "width"), [(3, 5), (5, 3), (4, 4)])
def test_pixtral_rotary_equals_transformers(height, width, pj):
    config = PixtralVisionConfig(hidden_size=128, num_attention_heads=2, head_dim=64)
    theirs = PixtralVisionRotaryEmbedding(config)
    base = config.rope_parameters["rope_theta"]
    ids = rg.grid_position_ids(height, width)
    # Pixtral's forward builds (row, column) by meshgrid "ij", flattened row by row.
    rows, columns = torch.meshgrid(torch.arange(height), torch.arange(width), indexing="ij")
    np.testing.assert_array_equal(ids, np.stack([rows.flatten(), columns.flatten()]))
    references = theirs(torch.zeros(1), torch.from_numpy(ids).T)
    for ours, reference in zip(rg.axial_cos_sin(ids, 64, base=base, convention="pixtral"), references):
        close(reference, ours)
    for cos_sin in jax_runs(pj, pj.axial_cos_sin, ids, 64, base=base, convention="pixtral"):
        for ours, reference in zip(cos_sin, references):
            assert ours.dtype == np.float32 and ours.shape == reference.shape
            close(reference, ours)


# The vision towers of Qwen2-VL, Qwen2.5-VL and Qwen3-VL (the same rotary formulas in three modules).
VISION = [
    (Qwen2VLVisionConfig, Qwen2VLVisionRotaryEmbedding, {"embed_dim": 64, "num_heads": 2, "hidden_size": 64}),
    (Qwen2_5_VLVisionConfig, Qwen2_5_VLVisionRotaryEmbedding, {"hidden_size": 64, "num_heads": 2, "out_hidden_size": 64}),
    (Qwen3VLVisionConfig, Qwen3VLVisionRotaryEmbedding, {"hidden_size": 64, "num_heads": 2, "out_hidden_size": 64}),
]


@pytest.mark.parametrize(("config_class", "module_class", "sizes"), VISION, ids=lambda v: getattr(v, "__name__", ""))
@pytest.mark.parametrize("grids", [[(1, 4, 6)], [(1, 6, 4), (2, 2, 4)]])
def test_qwen_vl_vision_rotary_and_positions_equal_transformers(grids, config_class, module_class, sizes, pj):
    config = config_class(depth=1, **sizes)
    merge = config.spatial_merge_size
    theirs_ids = get_vision_position_ids(torch.tensor(grids), merge)
    ours_ids = np.concatenate([rg.grid_position_ids(h, w, spatial_merge_size=merge, frames=t) for t, h, w in grids], 1)
    np.testing.assert_array_equal(ours_ids, theirs_ids.T.numpy())
    module = module_class(config)
    head_dim = 4 * len(module.inv_freq)  # a quarter of the head per axis, then cos/sin doubled
    base = config.rope_parameters["rope_theta"]
    references = module(torch.zeros(1), theirs_ids)
    for cos_sin in [pt.axial_cos_sin(torch.from_numpy(ours_ids), head_dim, base=base),
                    *jax_runs(pj, pj.axial_cos_sin, ours_ids, head_dim, base=base)]:
        for ours, reference in zip(cos_sin, references):
            assert str(ours.dtype).endswith("float32") and tuple(ours.shape) == tuple(reference.shape)
            close(reference, ours)


def test_axial_frequencies_are_the_formulas():
    # Pixtral: w_j = 10000^(-2j/16), even j for rows, odd j for columns; Qwen2-VL: 10000^(-4i/16) twice.
    pixtral = rg.axial_frequencies(16, convention="pixtral")
    hi, lo, axes = pixtral.hi, pixtral.lo, pixtral.axes
    exact = [mpmath.mpf(10000) ** (-mpmath.mpf(2 * j) / 16) for j in (0, 2, 4, 6, 1, 3, 5, 7)]
    assert all(abs(mpmath.mpf(h) + mpmath.mpf(low) - e) < 1e-28 for h, low, e in zip(hi, lo, exact))
    np.testing.assert_array_equal(axes, [0, 0, 0, 0, 1, 1, 1, 1])
    qwen = rg.axial_frequencies(16, convention="qwen2_vl")
    hi, axes = qwen.hi, qwen.axes
    np.testing.assert_allclose(hi, [10000.0 ** (-4 * i / 16) for i in (0, 1, 2, 3, 0, 1, 2, 3)], rtol=1e-15)


@pytest.mark.parametrize("convention", rg.AXIAL_CONVENTIONS)
def test_2d_score_depends_on_the_2d_offset_only(convention):
    rng = np.random.default_rng(0)
    q, k = rng.standard_normal((2, 32))
    ids = rg.grid_position_ids(6, 7)
    cos, sin = rg.axial_cos_sin(ids, 32, convention=convention, dtype=np.float64)
    qs, ks = posenc.apply_rotary(np.broadcast_to(q, cos.shape), cos, sin), posenc.apply_rotary(np.broadcast_to(k, cos.shape), cos, sin)
    scores = qs @ ks.T
    offsets = ids[:, :, None] - ids[:, None, :]  # (2, n, n)
    # Equal 2-D offset -> equal score; the same 1-D distance along another axis -> different.
    same = (offsets[0] == 1) & (offsets[1] == -2)
    assert same.sum() == 5 * 5 and np.ptp(scores[same]) < 1e-12
    swapped = (offsets[0] == -2) & (offsets[1] == 1)
    assert abs(scores[same][0] - scores[swapped][0]) > 1e-3


def test_mrope_position_ids_equal_get_rope_index():
    config = Qwen2VLConfig(
        text_config={"hidden_size": 32, "num_attention_heads": 2, "num_key_value_heads": 1, "num_hidden_layers": 1,
                     "intermediate_size": 32, "vocab_size": 16},
        vision_config={"embed_dim": 16, "num_heads": 2, "depth": 1, "hidden_size": 32},
    )
    model = Qwen2VLModel(config)
    # text, an image of 4 x 6 patches, text, a video of 3 frames of 2 x 4 patches, text.
    segments = [3, (1, 4, 6), 2, (3, 2, 4), 2]
    merge = config.vision_config.spatial_merge_size
    kinds = []
    for s in segments:
        kinds += [0] * s if isinstance(s, int) else [1 if s[0] == 1 else 2] * (s[0] * s[1] * s[2] // merge**2)
    kinds = torch.tensor([kinds])
    theirs, _ = model.get_rope_index(
        torch.zeros_like(kinds), kinds, image_grid_thw=torch.tensor([segments[1]]), video_grid_thw=torch.tensor([segments[3]]),
    )
    ours = rg.mrope_position_ids(segments, spatial_merge_size=merge)
    np.testing.assert_array_equal(ours, theirs[:, 0].numpy())
    # The printed facts: the image's 2 x 3 merged tokens share time 3; text resumes at 3 + max(2, 3) = 6;
    # the video's third frame (time 8 + 2 = 10) shares its time with the text after it.
    np.testing.assert_array_equal(ours[:, 3:9], [[3] * 6, [3, 3, 3, 4, 4, 4], [3, 4, 5, 3, 4, 5]])
    assert ours[0, 9] == 6 and ours[0, -3] == 10 and ours[0, -2] == 10


@pytest.mark.parametrize(("section", "interleaved"), [((4, 6, 6), False), ((6, 5, 5), True)])
def test_mrope_equals_transformers(section, interleaved, pj):
    shape = {"hidden_size": 64, "num_attention_heads": 2, "head_dim": 32}
    parameters = {"rope_type": "default", "rope_theta": 1e6, "mrope_section": list(section)}
    config_class, module_class = (Qwen3VLTextConfig, Qwen3VLTextRotaryEmbedding) if interleaved else (Qwen2VLTextConfig,
                                                                                                      Qwen2VLRotaryEmbedding)
    module = module_class(config_class(rope_parameters=parameters, **shape))
    ids = torch.from_numpy(np.stack([rg.mrope_position_ids([3, (1, 4, 6), 2, (3, 2, 4), 2])] * 2, axis=1))
    theirs = module(torch.zeros(1), ids)
    arguments = {"mrope_section": section, "interleaved": interleaved, "base": 1e6}
    for ours in (rg.mrope_cos_sin(ids.numpy(), 32, **arguments), pt.mrope_cos_sin(ids, 32, **arguments),
                 *jax_runs(pj, pj.mrope_cos_sin, ids.numpy(), 32, **arguments)):
        for a, b in zip(theirs, ours):
            assert tuple(a.shape) == tuple(b.shape) == (2, ids.shape[-1], 32)
            close(a, b)


def test_mrope_axes():
    np.testing.assert_array_equal(rg.mrope_axes([2, 1, 3]), [0, 0, 1, 2, 2, 2])
    # Qwen3-VL: T H W T H W ... for 3 * 2 pairs, then the rest time.
    np.testing.assert_array_equal(rg.mrope_axes([4, 2, 2], interleaved=True), [0, 1, 2, 0, 1, 2, 0, 0])


def test_mrope_on_text_is_1d_rope():
    positions = np.arange(40)
    one_d = posenc.rotary_cos_sin(positions, 32, base=1e6)
    for interleaved, section in ((False, [4, 6, 6]), (True, [6, 5, 5])):
        three = rg.mrope_cos_sin(np.stack([positions] * 3), 32, mrope_section=section, interleaved=interleaved, base=1e6)
        for a, b in zip(one_d, three):
            np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("run", ["numpy", "torch", "jax", "jax jit", "tensorflow", "tf.function"])
def test_mrope_accurate_at_long_positions(run, request):
    position = 10**6 + 7
    ids = np.array([[position], [3], [5]])
    if run.startswith("jax"):
        pj = request.getfixturevalue("pj")
        cos, sin = jax_runs(pj, pj.mrope_cos_sin, ids, 32, mrope_section=[4, 6, 6])[run == "jax jit"]
    elif run.startswith("t"):
        ptf = request.getfixturevalue("ptf")
        cos, sin = tf_runs(ptf, ptf.mrope_cos_sin, ids, 32, mrope_section=[4, 6, 6])[run == "tf.function"]
    else:
        cos, sin = (rg if run == "numpy" else pt).mrope_cos_sin(ids, 32, mrope_section=[4, 6, 6])
    cos, sin = np.asarray(cos, np.float64), np.asarray(sin, np.float64)
    w = mpmath.mpf(10000) ** (-mpmath.mpf(2 * 3) / 32)  # pair 3 is in the time section
    assert abs(float(mpmath.cos(position * w)) - cos[0, 3]) < 2e-7
    assert abs(float(mpmath.sin(5 * mpmath.mpf(10000) ** (-mpmath.mpf(2 * 12) / 32))) - sin[0, 12]) < 2e-7


def test_bad_input_names_the_argument():
    with pytest.raises(ValueError, match="convention must be one of 'pixtral', 'qwen2_vl'; got 'vit'"):
        rg.axial_frequencies(32, convention="vit")
    with pytest.raises(ValueError, match="head_dim must be a multiple of 4.*got 30"):
        rg.axial_frequencies(30)
    with pytest.raises(ValueError, match=r"mrope_section must add up to the 16 rotary pairs.*\(4, 6, 4\) \(sum 14\)"):
        rg.mrope_cos_sin(np.zeros((3, 2)), 32, mrope_section=(4, 6, 4))
    with pytest.raises(ValueError, match=COORDINATES_FIRST):
        rg.mrope_cos_sin(np.zeros((2, 5)), 32, mrope_section=(4, 6, 6))
    with pytest.raises(ValueError, match="w must be a positive int divisible by spatial_merge_size=2, got 5"):
        rg.mrope_position_ids([2, (1, 4, 5)])
    with pytest.raises(ValueError, match=r"segments must hold ints.*got \(1, 4\)"):
        rg.mrope_position_ids([(1, 4)])
    with pytest.raises(ValueError, match="mrope_section must be a list of non-negative ints"):
        rg.mrope_axes("16,24,24")
    assert math.isfinite(rg.mrope_position_ids([]).sum())


GRID_CASES = [
    ("axial_cos_sin", {"convention": "pixtral", "base": 100.0}),
    ("axial_cos_sin", {"convention": "qwen2_vl"}),
    ("mrope_cos_sin", {"mrope_section": (4, 6, 6), "base": 1e6}),
    # yarn's attention factor (> 1) multiplies the values: one float32 rounding more when traced.
    ("mrope_cos_sin", {"mrope_section": (6, 5, 5), "interleaved": True, "rope_type": "yarn", "factor": 4.0,
                       "original_max_position_embeddings": 64}),
]


@pytest.mark.parametrize(("name", "arguments"), GRID_CASES, ids=lambda v: v if isinstance(v, str) else "")
def test_jax_and_tf_grid_rope_equal_numpy_and_torch(name, arguments, pj, ptf):
    rows = 3 if name == "mrope_cos_sin" else 2
    # Coordinates far apart per axis (up to 2 * 10**6), so a pair reading the wrong row shows.
    ids = np.random.default_rng(3).integers(0, 2 * 10**6, (rows, 2, 9)) // (10 ** np.arange(rows))[:, None, None]
    want = getattr(rg, name)(ids, 32, dtype=np.float64, **arguments)
    numpy32 = getattr(rg, name)(ids, 32, **arguments)
    torch32 = getattr(pt, name)(torch.from_numpy(ids), 32, dtype=torch.float32, **arguments)
    eager, traced = jax_runs(pj, getattr(pj, name), ids, 32, **arguments)
    for got in (eager, traced):
        assert all(g.dtype == np.float32 and g.shape == w.shape == (2, 9, 32) for g, w in zip(got, want))
    for a, b in zip(eager, numpy32):  # eagerly posenc.jax hands NumPy's values over
        np.testing.assert_array_equal(np.asarray(a), b)
    attention = 1 if name == "axial_cos_sin" else posenc.rotary_frequencies(32, **{k: v for k, v in arguments.items()
                                                                                   if k not in ("mrope_section", "interleaved")})[1]
    # An attention factor adds one float32 rounding of values up to it (6e-8 * attention covers it).
    tolerance = BOUND if attention == 1 else (BOUND + 6e-8) * attention
    for got in (traced, torch32, *tf_runs(ptf, getattr(ptf, name), ids, 32, **arguments)):
        for g, w in zip(got, want):
            assert "float32" in str(g.dtype) and tuple(g.shape) == w.shape
            np.testing.assert_allclose(np.asarray(g, np.float64), w, rtol=0, atol=tolerance)


def test_no_float64_in_the_grid_traces_with_x64_off(pj):
    import jax

    assert not jax.config.jax_enable_x64
    ids = jax.numpy.arange(12).reshape(3, 2, 2)
    qwen = pj.RotaryEmbedding(32, 1e6, mrope_section=(4, 6, 6))
    traces = [
        jax.make_jaxpr(lambda p: pj.axial_cos_sin(p[:2], 32, convention="pixtral"))(ids),
        jax.make_jaxpr(lambda p: pj.mrope_cos_sin(p, 32, mrope_section=(6, 5, 5), interleaved=True, rope_type="yarn",
                                                  factor=4.0, original_max_position_embeddings=64))(ids),
        jax.make_jaxpr(lambda p: qwen(jax.numpy.zeros(1), p))(ids),
        jax.make_jaxpr(lambda p: qwen(jax.numpy.zeros(1), p[0]))(ids),  # (batch, seq): text, three equal rows
    ]
    for trace in traces:
        assert "f64" not in str(trace) and "f32" in str(trace)


def test_jax_grid_rope_bad_input_names_the_argument(pj):
    import jax

    with pytest.raises(ValueError, match="convention must be one of 'pixtral', 'qwen2_vl'; got 'vit'"):
        pj.axial_cos_sin(np.zeros((2, 3)), 32, convention="vit")
    for call in (lambda p: pj.mrope_cos_sin(p, 32, mrope_section=(4, 6, 6)),
                 jax.jit(lambda p: pj.mrope_cos_sin(p, 32, mrope_section=(4, 6, 6)))):
        with pytest.raises(ValueError, match=COORDINATES_FIRST):
            call(jax.numpy.zeros((2, 5)))
    with pytest.raises(TypeError, match="positions.*bool"):
        pj.axial_cos_sin(np.zeros((2, 3), bool), 32)
    with pytest.raises(TypeError, match="dtype must be.*int32"):
        pj.axial_cos_sin(np.zeros((2, 3)), 32, dtype=np.int32)
    with pytest.raises(ValueError, match=r"mrope_section must add up to the 16 rotary pairs.*\(4, 6, 4\) \(sum 14\)"):
        pj.RotaryEmbedding(32, mrope_section=(4, 6, 4))
    with pytest.raises(ValueError, match="mrope_section must be a list of non-negative ints"):
        pj.RotaryEmbedding(32, mrope_section="16,24,24")


def tiny_text(config_class, **extra):
    return config_class(hidden_size=64, num_attention_heads=2, num_key_value_heads=1, num_hidden_layers=2,
                        intermediate_size=32, vocab_size=16, **extra)


def from_config_cases():
    vl_text = {"num_attention_heads": 2, "num_key_value_heads": 1, "num_hidden_layers": 1, "intermediate_size": 32,
               "vocab_size": 16}
    return {
        "llama-yarn": tiny_text(transformers.LlamaConfig, max_position_embeddings=256, rope_parameters={
            "rope_type": "yarn", "rope_theta": 1e4, "factor": 4.0, "original_max_position_embeddings": 64}),
        "qwen2-vl": Qwen2VLConfig(text_config={"hidden_size": 64, "head_dim": 32, "rope_parameters": {
            "rope_type": "default", "rope_theta": 1e6, "mrope_section": [4, 6, 6]}, **vl_text}).text_config,
        # No mrope_section in the config: the family's (16, 24, 24), for heads of 128.
        "qwen2.5-vl": transformers.Qwen2_5_VLConfig(text_config={"hidden_size": 256, **vl_text}).text_config,
        "gemma3": tiny_text(transformers.Gemma3TextConfig, head_dim=32, layer_types=["sliding_attention", "full_attention"],
                            rope_parameters={"sliding_attention": {"rope_type": "default", "rope_theta": 1e4},
                                             "full_attention": {"rope_type": "linear", "rope_theta": 1e6, "factor": 8.0}}),
        # Its full-attention layers: a head of their own, proportional RoPE on a quarter of its pairs.
        "gemma4": tiny_text(transformers.Gemma4TextConfig, head_dim=16, global_head_dim=64,
                            layer_types=["sliding_attention", "full_attention"]),
    }


@pytest.mark.parametrize("name", ["llama-yarn", "qwen2-vl", "qwen2.5-vl", "gemma3", "gemma4"])
def test_jax_from_config_equals_the_torch_module(name, pj):
    from flax import nnx

    config = from_config_cases()[name]
    ours, theirs = pj.RotaryEmbedding.from_config(config), pt.RotaryEmbedding.from_config(config)
    if name.startswith("gemma"):
        assert isinstance(ours, pj.RotaryEmbeddingPerLayerType) and list(ours) == list(theirs) == ["sliding_attention",
                                                                                                  "full_attention"]
        pairs = [(ours[t], theirs[t], t) for t in theirs]
        full = {"gemma3": (32, {"factor": 8.0}), "gemma4": (64, {"partial_rotary_factor": 0.25})}[name]
        assert (ours["full_attention"].rotary_dim, ours["full_attention"].params, ours["full_attention"].base) == (*full, 1e6)
    else:
        pairs = [(ours, theirs, None)]
    positions = 40_000 + np.arange(2 * 7).reshape(2, 7)
    if name.startswith("qwen"):
        assert ours.mrope_section == tuple(theirs.mrope_section) == ((4, 6, 6) if name == "qwen2-vl" else (16, 24, 24))
        np.testing.assert_array_equal(ours.axes, theirs.axes)
        positions = np.stack([positions, positions // 7, positions % 7])  # (3, batch, seq): three different rows
    for jax_module, torch_module, layer_type in pairs:
        for attribute in ("head_dim", "base", "rope_type", "layout", "form", "rotary_dim", "params", "attention_factor"):
            assert getattr(jax_module, attribute) == getattr(torch_module, attribute), attribute
        want = torch_module(torch.zeros(1), torch.from_numpy(positions))
        x = np.zeros(1, np.float32)
        eager = jax_module(x, positions)
        # Under jit through the module from_config gave (Gemma: the per-layer-type one, given the type).
        jitted = nnx.jit(lambda m, x, p: m(x, p) if layer_type is None else m(x, p, layer_type))(ours, x, positions)
        for got in (eager, jitted):
            for g, w in zip(got, want):
                assert g.dtype == np.float32 and g.shape == tuple(w.shape)
                # Two float32 routes, each within 2e-7 (yarn's attention factor: one rounding more).
                close(w, g, atol=(2 * BOUND + 6e-8) * jax_module.attention_factor)


def test_tf_grid_rope_bad_input_names_the_argument(ptf):
    with pytest.raises(ValueError, match=COORDINATES_FIRST):
        ptf.mrope_cos_sin(np.zeros((2, 5)), 32, mrope_section=(4, 6, 6))
    with pytest.raises(ValueError, match="convention must be one of 'pixtral', 'qwen2_vl'; got 'vit'"):
        ptf.axial_cos_sin(np.zeros((2, 3)), 32, convention="vit")
    with pytest.raises(TypeError, match="positions.*bool"):
        ptf.axial_cos_sin(np.zeros((2, 3), bool), 32)
