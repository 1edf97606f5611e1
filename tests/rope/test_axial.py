"""2-D vision RoPE and M-RoPE (posenc.rope.axial): the formulas, invariants, accuracy, every
front eagerly and traced, a width per axis, and bad input. Against transformers itself: test_axial_packages.py.
"""

import math

import mpmath
import numpy as np
import pytest

import posenc
from frameworks import adapter
from posenc.rope import axial as rg

BOUND = 2e-7  # posenc's float32 cos/sin against the exact values, every front and route

# The shape error of axial and M-RoPE positions, as every front raises it.
COORDINATES_FIRST = r"positions \(position_ids in M-RoPE\) must have their 3 coordinates first.*got shape \(2, 5\)"


@pytest.fixture(scope="module")
def pj():
    return adapter("jax").api


@pytest.fixture(scope="module")
def ptf():
    return adapter("tensorflow").api


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


def test_mrope_axes():
    np.testing.assert_array_equal(rg.mrope_axes([2, 1, 3]), [0, 0, 1, 2, 2, 2])
    # Qwen3-VL: T H W T H W ... for 3 * 2 pairs, then the rest time.
    np.testing.assert_array_equal(rg.mrope_axes([4, 2, 2], interleaved=True), [0, 1, 2, 0, 1, 2, 0, 0])
    # A section may be empty: that axis reads no pair.
    np.testing.assert_array_equal(rg.mrope_axes([2, 0, 1]), [0, 0, 2])
    np.testing.assert_array_equal(rg.mrope_axes([4, 0, 1], interleaved=True), [0, 0, 2, 0, 0])


def test_per_axis_ids_of_one_token_are_one_point():
    # ids (3,): one token's coordinates, no token axis, the row of a (1, 3) batch.
    ids = np.array([[4, 1, 7]])
    for alone, batched in zip(rg.per_axis_cos_sin(ids[0], (2, 2, 4)), rg.per_axis_cos_sin(ids, (2, 2, 4))):
        assert alone.shape == (8,)
        np.testing.assert_array_equal(alone, batched[0])


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
        cos, sin = adapter("jax").eager_and_traced(pj.mrope_cos_sin, ids, 32, mrope_section=[4, 6, 6])[run == "jax jit"]
    elif run.startswith("t"):
        ptf = request.getfixturevalue("ptf")
        cos, sin = adapter("tensorflow").eager_and_traced(ptf.mrope_cos_sin, ids, 32, mrope_section=[4, 6, 6])[run == "tf.function"]
    else:
        cos, sin = (rg if run == "numpy" else adapter("torch").api).mrope_cos_sin(ids, 32, mrope_section=[4, 6, 6])
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
    with pytest.raises(ValueError, match="spatial_merge_size must be an int >= 1, got 0"):
        rg.grid_position_ids(4, 4, spatial_merge_size=0)
    with pytest.raises(ValueError, match="spatial_merge_size must be an int >= 1, got 0"):
        rg.mrope_position_ids([2, (1, 4, 4)], spatial_merge_size=0)
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
    pt = adapter("torch")
    torch32 = getattr(pt.api, name)(pt.tensor(ids), 32, dtype=pt.dtypes["float32"], **arguments)
    eager, traced = adapter("jax").eager_and_traced(getattr(pj, name), ids, 32, **arguments)
    for got in (eager, traced):
        assert all(g.dtype == np.float32 and g.shape == w.shape == (2, 9, 32) for g, w in zip(got, want))
    for a, b in zip(eager, numpy32):  # eagerly posenc.jax hands NumPy's values over
        np.testing.assert_array_equal(np.asarray(a), b)
    attention = 1 if name == "axial_cos_sin" else posenc.rotary_frequencies(32, **{k: v for k, v in arguments.items()
                                                                                   if k not in ("mrope_section", "interleaved")})[1]
    # An attention factor adds one float32 rounding of values up to it (6e-8 * attention covers it).
    tolerance = BOUND if attention == 1 else (BOUND + 6e-8) * attention
    for got in (traced, torch32, *adapter("tensorflow").eager_and_traced(getattr(ptf, name), ids, 32, **arguments)):
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


def test_tf_grid_rope_bad_input_names_the_argument(ptf):
    with pytest.raises(ValueError, match=COORDINATES_FIRST):
        ptf.mrope_cos_sin(np.zeros((2, 5)), 32, mrope_section=(4, 6, 6))
    with pytest.raises(ValueError, match="convention must be one of 'pixtral', 'qwen2_vl'; got 'vit'"):
        ptf.axial_cos_sin(np.zeros((2, 3)), 32, convention="vit")
    with pytest.raises(TypeError, match="positions.*bool"):
        ptf.axial_cos_sin(np.zeros((2, 3), bool), 32)


# --- a width per axis (Flux, HunyuanVideo, Wan...; against diffusers in test_axial_per_axis.py) ---


def test_two_axes_per_axis_half_is_qwen2_vl_vision_rope():
    # per axis widths (d/2, d/2) turn at base ** (-4i / d) each: the Qwen2-VL vision tower's 2-D RoPE.
    positions = rg.grid_position_ids(4, 6)
    for mine, theirs in zip(rg.per_axis_cos_sin(positions.T, (16, 16), layout="half"), rg.axial_cos_sin(positions, 32)):
        np.testing.assert_array_equal(mine, theirs)


def test_one_axis_per_axis_is_1d_rope():
    positions = np.arange(0, 500, 7)
    ours = rg.per_axis_cos_sin(positions[:, None], (64,), dtype=np.float64)
    theirs = posenc.rotary_cos_sin(positions, 64, layout="interleaved", dtype=np.float64)
    for mine, reference in zip(ours, theirs):
        np.testing.assert_array_equal(mine, reference)


def test_per_axis_frequencies_and_accuracy():
    frequencies = rg.per_axis_frequencies((4, 6), base=100.0)
    np.testing.assert_array_equal(frequencies.axes, [0, 0, 1, 1, 1])
    with mpmath.workdps(40):
        expected = [mpmath.power(100, mpmath.mpf(-2 * i) / d) for d in (4, 6) for i in range(d // 2)]
        error = max(abs(mpmath.mpf(float(h)) + mpmath.mpf(float(lo)) - e) / e
                    for h, lo, e in zip(frequencies.hi, frequencies.lo, expected))
    assert error < 1e-30
    ids = np.array([[123457.0, 3.0, 99991.0]])
    cos, sin = rg.per_axis_cos_sin(ids, (16, 8, 8), dtype=np.float64)
    w = rg.per_axis_frequencies((16, 8, 8))
    with mpmath.workdps(40):
        for j in range(len(w)):
            angle = mpmath.mpf(ids[0, w.axes[j]]) * (mpmath.mpf(float(w.hi[j])) + mpmath.mpf(float(w.lo[j])))
            assert abs(cos[0, 2 * j] - mpmath.cos(angle)) < 4e-16 and abs(sin[0, 2 * j + 1] - mpmath.sin(angle)) < 4e-16


def test_per_axis_bad_input_names_the_argument():
    with pytest.raises(ValueError, match=r"axes_dim must be a list of even ints >= 2.*got \(16, 55\)"):
        rg.per_axis_frequencies((16, 55))
    with pytest.raises(ValueError, match="axes_dim must be"):
        rg.per_axis_cos_sin(np.zeros((3, 2)), 16)
    with pytest.raises(ValueError, match=r"ids must have one coordinate per axis of axes_dim last.*got shape \(3, 4\)"):
        rg.per_axis_cos_sin(np.zeros((3, 4)), (16, 56, 56))
    with pytest.raises(ValueError, match="layout must be one of"):
        rg.per_axis_cos_sin(np.zeros((3, 3)), (16, 56, 56), layout="sin_cos")
    with pytest.raises(TypeError, match="dtype must be one of numpy.complex64, numpy.complex128; got <class 'numpy.float32'>"):
        rg.per_axis_cis(np.zeros((3, 3)), (16, 56, 56), dtype=np.float32)
    with pytest.raises(ValueError, match="height must be an int >= 1, got 0"):
        rg.flux_position_ids(4, 0, 3)
    with pytest.raises(ValueError, match="width must be an int >= 1, got 0"):
        rg.flux_position_ids(4, 3, 0)


def test_one_position_of_two_coordinates_gives_one_row_of_cos_and_sin():
    # positions (2,): one token, its (row, column); the same numbers as the (2, 1) column of it.
    cos, sin = rg.axial_cos_sin(np.array([3, 5]), 16, dtype=np.float64)
    column_cos, column_sin = rg.axial_cos_sin(np.array([[3], [5]]), 16, dtype=np.float64)
    assert cos.shape == sin.shape == (16,)
    np.testing.assert_array_equal(cos, column_cos[0])
    np.testing.assert_array_equal(sin, column_sin[0])
