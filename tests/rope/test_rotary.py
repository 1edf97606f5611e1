"""RoPE: frequencies against mpmath, cos/sin within one rounding at a million positions,
the rotation itself, the relative-position property, layouts and bad input.

transformers itself is the reference in tests/rope/test_rotary_packages.py.
"""

import math

import mpmath
import numpy as np
import pytest
from frameworks import FLOATS, FRONTS, only
from messages import assert_raises_naming

import posenc
from posenc.engine import kernels
from posenc.rope import rotary

HEAD_DIM = 64
# One set of parameters per rope type (transformers' names), the kind real configs carry.
CASES = {
    "default": {},
    "linear": {"factor": 4.0},
    "dynamic": {"factor": 2.0, "max_position_embeddings": 2048, "seq_len": 5000},
    "yarn": {"factor": 8.0, "original_max_position_embeddings": 4096},
    "longrope": {
        "short_factor": list(np.linspace(1.0, 1.5, HEAD_DIM // 2)),
        "long_factor": list(np.linspace(1.0, 8.0, HEAD_DIM // 2)),
        "original_max_position_embeddings": 4096,
        "max_position_embeddings": 131072,
        "seq_len": 8000,
    },
    "llama3": {"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0, "original_max_position_embeddings": 8192},
    "proportional": {"factor": 2.0, "partial_rotary_factor": 0.5},
}
POSITIONS = np.array([0, 1, 7, 4095, 65535, 123457, 999_999, 1_000_000])
# Mantissa bits and smallest normal exponent of each output dtype: one rounding is half a
# unit in the last place of the exact value.
FORMATS = {"float16": (10, -14), "bfloat16": (7, -126), "float32": (23, -126), "float64": (52, -1022)}


def test_every_rope_type_has_a_case():
    assert set(CASES) == set(posenc.ROPE_TYPES)


def half_ulp(exact, dtype_name):
    bits, smallest = FORMATS[dtype_name]
    exponent = np.maximum(np.floor(np.log2(np.maximum(np.abs(exact), 1e-300))), smallest)
    return 2.0 ** (exponent - bits - 1)


def exact_frequencies(rope_type, params, head_dim=HEAD_DIM, base=10000):
    """mpmath frequencies from the formulas, for the rope types that are a geometric
    sequence divided by something (yarn and llama3 blend two such; see test_blends)."""
    mp = mpmath.mpf
    fraction = params.get("partial_rotary_factor", 1.0)
    if rope_type == "proportional":
        turning = int(fraction * head_dim // 2)
        w = [mp(base) ** (-mp(2 * j) / head_dim) if j < turning else mp(0) for j in range(head_dim // 2)]
        return [x / mp(params["factor"]) for x in w]
    dim = int(head_dim * fraction)
    if rope_type == "dynamic":
        longest, factor = params["max_position_embeddings"], mp(params["factor"])
        base = mp(base) * (factor * max(params["seq_len"], longest) / longest - (factor - 1)) ** (mp(dim) / (dim - 2))
        # transformers forms the new base in float64; so does posenc, and the frequencies follow from it.
        base = mp(float(base))
    w = [mp(base) ** (-mp(2 * j) / dim) for j in range(dim // 2)]
    if rope_type == "linear":
        return [x / mp(params["factor"]) for x in w]
    if rope_type == "longrope":
        chosen = params["long_factor"] if params["seq_len"] > params["original_max_position_embeddings"] else params["short_factor"]
        return [x / mp(f) for x, f in zip(w, chosen)]
    return w


@pytest.mark.parametrize("rope_type", ["default", "linear", "dynamic", "longrope", "proportional"])
def test_frequencies_to_twice_float64(rope_type):
    params = CASES[rope_type]
    with mpmath.workdps(40):
        exact = exact_frequencies(rope_type, params)
        frequencies = rotary.rope_frequencies(HEAD_DIM, 10000.0, rope_type, **params)
        w_hi, w_lo = frequencies.hi, frequencies.lo
        inv_freq, _ = posenc.rotary_frequencies(HEAD_DIM, rope_type=rope_type, **params)
        np.testing.assert_array_equal(inv_freq, w_hi)
        assert inv_freq.dtype == np.float64 and inv_freq.shape == (len(exact),)
        for x, hi, lo in zip(exact, w_hi, w_lo):
            assert abs(mpmath.mpf(hi) + mpmath.mpf(lo) - x) <= 1e-30 * x
            assert float(x) == hi  # correctly rounded


def test_default_is_the_sinusoidal_frequencies():
    inv_freq, attention = posenc.rotary_frequencies(HEAD_DIM, 500000.0)
    np.testing.assert_allclose(inv_freq, posenc.frequencies(HEAD_DIM, 500000.0), rtol=1e-15)
    assert attention == 1.0


def test_blends():
    # llama3: fast pairs (wavelength < 8192 / 4) untouched, slow ones (> 8192) divided by 8,
    # the rest between. yarn: pairs turning > 32 times in 4096 positions untouched, < 1 divided.
    base_freq, _ = posenc.rotary_frequencies(HEAD_DIM)
    wavelength = 2 * np.pi / base_freq
    llama3, _ = posenc.rotary_frequencies(HEAD_DIM, rope_type="llama3", **CASES["llama3"])
    fast, slow = wavelength < 2048, wavelength > 8192
    np.testing.assert_array_equal(llama3[fast], base_freq[fast])
    np.testing.assert_allclose(llama3[slow], base_freq[slow] / 8, rtol=1e-16)
    middle = ~fast & ~slow
    assert middle.any() and np.all((llama3[middle] < base_freq[middle]) & (llama3[middle] > base_freq[middle] / 8))
    yarn, attention = posenc.rotary_frequencies(HEAD_DIM, rope_type="yarn", **CASES["yarn"])
    turns = 4096 / wavelength
    np.testing.assert_array_equal(yarn[turns > 32], base_freq[turns > 32])
    np.testing.assert_allclose(yarn[turns < 1], base_freq[turns < 1] / 8, rtol=1e-16)
    assert attention == pytest.approx(0.1 * math.log(8) + 1, rel=1e-15)


def meta_llama_scaling(w, factor, low, high, original):
    """Meta's rule for Llama 3.1 and Llama 4, re-expressed here (vectorised, float64).

    Source: ``apply_scaling`` in meta-llama/llama-models, models/llama4/model.py at commit
    408c577168a187941f9359c916004fa3b21fbc3b: a frequency whose wavelength is below
    original / high is kept, above original / low divided by factor, between blended with
    weight (original / wavelength - low) / (high - low) on the kept one; it asserts low != high
    when a wavelength is in between. Llama 3.1 uses factor 8, low 1, high 4, original 8192;
    Llama-4-Scout factor 16, low 1, high 1 (models/llama4/args.py at commit
    00bb6d68619544d84e504f5323b4119258ebb60f).
    """
    wavelength = 2 * np.pi / w
    kept, divided = wavelength < original / high, wavelength > original / low
    between = ~kept & ~divided
    assert low != high or not between.any()
    weight = np.zeros_like(w)
    weight[between] = (original / wavelength[between] - low) / (high - low)
    return np.where(kept, w, np.where(divided, w / factor, weight * w + (1 - weight) * w / factor))


@pytest.mark.parametrize("base", [10000.0, 500000.0])
@pytest.mark.parametrize(("factor", "low", "high"), [(8.0, 1.0, 4.0), (16.0, 1.0, 1.0), (32.0, 1.0, 8.0), (4.0, 2.0, 2.0)])
def test_llama3_is_metas_rule(base, factor, low, high):
    params = {"factor": factor, "low_freq_factor": low, "high_freq_factor": high, "original_max_position_embeddings": 8192}
    ours, attention = posenc.rotary_frequencies(128, base, rope_type="llama3", **params)
    expected = meta_llama_scaling(posenc.rotary_frequencies(128, base)[0], factor, low, high, 8192)
    # A few float64 roundings in Meta's blend; the rounding of its weight, near 0, is
    # magnified up to `factor` times (the result is then near w / factor).
    np.testing.assert_allclose(ours, expected, rtol=factor * 2.0**-50, atol=0)
    assert attention == 1.0
    if low == high:  # a step: every frequency kept or divided by factor, exactly
        ratio = posenc.rotary_frequencies(128, base)[0] / ours
        assert set(np.unique(ratio)) <= {1.0, factor} and (ratio == 1).any() and (ratio == factor).any()


@pytest.mark.parametrize("rope_type", ["llama3", "yarn"])
def test_blends_keep_twice_float64(rope_type):
    # Each blended frequency is the exact w_j times a float64 multiplier (1 - r) + r / factor,
    # carried to ~1e-30: the ratio to mpmath's w_j is a float64 number.
    frequencies = rotary.rope_frequencies(HEAD_DIM, 10000.0, rope_type, **CASES[rope_type])
    w_hi, w_lo = frequencies.hi, frequencies.lo
    with mpmath.workdps(40):
        for exact, hi, lo in zip(exact_frequencies("default", {}), w_hi, w_lo):
            ratio = (mpmath.mpf(hi) + mpmath.mpf(lo)) / exact
            assert abs(ratio - mpmath.mpf(float(ratio))) <= 1e-28


@pytest.mark.parametrize("rope_type", ["llama3", "yarn"])
def test_blends_divide_the_slowest_pairs_exactly(rope_type):
    # Pairs fully interpolated (ramp 1) are w / factor to ~1e-30, not w times a rounded
    # 1 / factor: 3 has no float64 reciprocal, so that product is off by ~1e-17.
    frequencies = rotary.rope_frequencies(HEAD_DIM, 10000.0, rope_type, **dict(CASES[rope_type], factor=3.0))
    w_hi, w_lo = frequencies.hi, frequencies.lo
    with mpmath.workdps(40):
        exact = exact_frequencies("default", {})[-1] / 3
        assert abs(mpmath.mpf(w_hi[-1]) + mpmath.mpf(w_lo[-1]) - exact) <= 1e-30 * exact


def test_attention_factors():
    _, longrope = posenc.rotary_frequencies(HEAD_DIM, rope_type="longrope", **CASES["longrope"])
    assert longrope == pytest.approx(math.sqrt(1 + math.log(131072 / 4096) / math.log(4096)), rel=1e-15)
    _, given = posenc.rotary_frequencies(HEAD_DIM, rope_type="yarn", attention_factor=0.5, **CASES["yarn"])
    assert given == 0.5
    for rope_type in ("default", "linear", "dynamic", "llama3", "proportional"):
        assert posenc.rotary_frequencies(HEAD_DIM, rope_type=rope_type, **CASES[rope_type])[1] == 1.0


def test_dynamic_and_longrope_follow_seq_len():
    short = {k: v for k, v in CASES["dynamic"].items() if k != "seq_len"}
    np.testing.assert_array_equal(
        posenc.rotary_frequencies(HEAD_DIM, rope_type="dynamic", **short)[0], posenc.rotary_frequencies(HEAD_DIM)[0]
    )
    longer = posenc.rotary_frequencies(HEAD_DIM, rope_type="dynamic", **CASES["dynamic"])[0]
    assert longer[0] == 1.0 and np.all(longer[1:] < posenc.rotary_frequencies(HEAD_DIM)[0][1:])
    params = dict(CASES["longrope"], seq_len=100)
    np.testing.assert_allclose(
        posenc.rotary_frequencies(HEAD_DIM, rope_type="longrope", **params)[0],
        posenc.rotary_frequencies(HEAD_DIM)[0] / np.array(params["short_factor"]),
        rtol=1e-15,
    )


def test_a_modules_own_seq_len_wins_over_the_length_it_reads():
    # A module built with seq_len fixed (rotary.module_frequencies) ignores the length of each call.
    fixed = rotary.module_frequencies(HEAD_DIM, 10000.0, "dynamic", CASES["dynamic"], seq_len=10)
    np.testing.assert_array_equal(fixed.hi, rotary.rope_frequencies(HEAD_DIM, 10000.0, "dynamic", **CASES["dynamic"]).hi)
    short = {k: v for k, v in CASES["dynamic"].items() if k != "seq_len"}
    read = rotary.module_frequencies(HEAD_DIM, 10000.0, "dynamic", short, seq_len=10)
    np.testing.assert_array_equal(read.hi, rotary.rope_frequencies(HEAD_DIM, 10000.0, "dynamic", **short, seq_len=10).hi)
    assert not np.array_equal(fixed.hi, read.hi)


def exact_cos_sin(positions, rope_type, params, head_dim=HEAD_DIM):
    """mpmath ``attention * cos`` and ``* sin`` of ``p * (w_hi + w_lo)``, per pair: ``(len(positions), h)`` each."""
    frequencies = rotary.rope_frequencies(head_dim, 10000.0, rope_type, **params)
    w_hi, w_lo, attention = frequencies.hi, frequencies.lo, frequencies.attention
    with mpmath.workdps(40):
        w = [mpmath.mpf(hi) + mpmath.mpf(lo) for hi, lo in zip(w_hi, w_lo)]
        cos = [[float(attention * mpmath.cos(mpmath.mpf(int(p)) * x)) for x in w] for p in positions]
        sin = [[float(attention * mpmath.sin(mpmath.mpf(int(p)) * x)) for x in w] for p in positions]
    return np.array(cos), np.array(sin)


@pytest.fixture(scope="module")
def exact_tables():
    return {rope_type: exact_cos_sin(POSITIONS, rope_type, params) for rope_type, params in CASES.items()}


def allowed_error(exact, dtype_name):
    """The promise: float32 within 2e-7 (times the attention factor, the largest |value|),
    float16 and bfloat16 one rounding of such a value, float64 one rounding plus ~2e-16."""
    if dtype_name == "float64":
        return half_ulp(exact, dtype_name) + 4e-16
    float32 = 2e-7 * max(1.0, np.max(np.abs(exact)))
    return float32 if dtype_name == "float32" else half_ulp(exact, dtype_name) + float32


def assert_accurate(got, exact, dtype_name, layout="half"):
    """``got`` (``(n, 2h)`` in ``layout``) is within ``allowed_error`` of ``exact`` (``(n, h)``)."""
    exact = np.concatenate([exact, exact], -1) if layout == "half" else np.repeat(exact, 2, -1)
    error = np.abs(got.astype(np.float64) - exact)
    allowed = allowed_error(exact, dtype_name) + np.zeros_like(exact)
    worst = np.unravel_index(np.argmax(error - allowed), error.shape)
    assert np.all(error <= allowed), f"error {error[worst]:.3g} > {allowed[worst]:.3g} at {worst}"


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
@pytest.mark.parametrize("rope_type", list(CASES))
def test_numpy_cos_sin_accurate_at_a_million(exact_tables, rope_type, dtype):
    cos, sin = posenc.rotary_cos_sin(POSITIONS, HEAD_DIM, rope_type=rope_type, dtype=dtype, **CASES[rope_type])
    assert cos.dtype == np.dtype(dtype) and cos.shape == sin.shape == (len(POSITIONS), rotary.rotary_dim(HEAD_DIM, rope_type,
                                                                                                         **CASES[rope_type]))
    assert_accurate(cos, exact_tables[rope_type][0], dtype)
    assert_accurate(sin, exact_tables[rope_type][1], dtype)


def test_float32_error_at_a_million():
    # The claim in numbers: float32 within 2e-7 at positions up to 10**6, where the float32
    # route (float32 product of position and frequency) is off by about 2e-2.
    cos, _ = exact_cos_sin(POSITIONS, "default", {})
    ours, _ = posenc.rotary_cos_sin(POSITIONS, HEAD_DIM)
    assert np.max(np.abs(ours[:, : HEAD_DIM // 2] - cos)) <= 2e-7
    inv_freq = posenc.rotary_frequencies(HEAD_DIM)[0].astype(np.float32)
    naive = np.cos(POSITIONS.astype(np.float32)[:, None] * inv_freq)
    assert np.max(np.abs(naive - cos)) > 1e-2


@pytest.mark.parametrize("layout", ["half", "interleaved"])
def test_layouts_hold_the_same_values(layout):
    positions = np.arange(12).reshape(3, 4) * 1000
    cos, sin = posenc.rotary_cos_sin(positions, 16, layout=layout, dtype=np.float64)
    assert cos.shape == (3, 4, 16)
    w = posenc.rotary_frequencies(16)[0]
    pair = np.tile(np.arange(8), 2) if layout == "half" else np.repeat(np.arange(8), 2)
    np.testing.assert_allclose(cos, np.cos(positions[..., None] * w[pair]), rtol=0, atol=1e-12)
    np.testing.assert_allclose(sin, np.sin(positions[..., None] * w[pair]), rtol=0, atol=1e-12)


def rotate_complex(x, positions, w, layout):
    """Independent RoPE: pairs as complex numbers times ``exp(i p w)``."""
    h = len(w)
    first, second = (x[..., :h], x[..., h : 2 * h]) if layout == "half" else (x[..., 0 : 2 * h : 2], x[..., 1 : 2 * h : 2])
    z = (first + 1j * second) * np.exp(1j * positions[:, None] * w)
    out = x.copy()
    if layout == "half":
        out[..., :h], out[..., h : 2 * h] = z.real, z.imag
    else:
        out[..., 0 : 2 * h : 2], out[..., 1 : 2 * h : 2] = z.real, z.imag
    return out


@pytest.mark.parametrize("layout", ["half", "interleaved"])
@pytest.mark.parametrize("fraction", [1.0, 0.5])
def test_apply_rotary_is_a_rotation_of_each_pair(layout, fraction):
    rng = np.random.default_rng(0)
    positions = np.arange(10) * 37.0
    x = rng.standard_normal((2, 8, 10, 16))  # 8 heads: as many as the channels rotated at fraction 0.5, an axis not to confuse
    cos, sin = posenc.rotary_cos_sin(positions, 16, layout=layout, dtype=np.float64, partial_rotary_factor=fraction)
    got = posenc.apply_rotary(x, cos, sin, layout=layout)
    w = posenc.rotary_frequencies(16, partial_rotary_factor=fraction)[0]
    np.testing.assert_allclose(got, rotate_complex(x, positions, w, layout), rtol=0, atol=1e-13)
    np.testing.assert_allclose(np.linalg.norm(got, axis=-1), np.linalg.norm(x, axis=-1), rtol=1e-14)
    # Back again with the negated angle.
    np.testing.assert_allclose(posenc.apply_rotary(got, cos, -sin, layout=layout), x, rtol=0, atol=1e-13)


@pytest.mark.parametrize("layout", ["half", "interleaved"])
def test_score_depends_on_the_offset_only(layout):
    rng = np.random.default_rng(1)
    q, k = rng.standard_normal((2, 32))
    offsets = np.array([0, 1, 5, 100])

    def scores(start):
        p = start + offsets
        cos, sin = posenc.rotary_cos_sin(np.concatenate([p, [start]]), 32, layout=layout, dtype=np.float64)
        rq = posenc.apply_rotary(np.broadcast_to(q, (len(p) + 1, 32)), cos, sin, layout=layout)
        rk = posenc.apply_rotary(k[None], cos[-1:], sin[-1:], layout=layout)
        return rq[:-1] @ rk[0]

    reference = scores(0)
    for start in (3, 1000, 123456):
        np.testing.assert_allclose(scores(start), reference, rtol=0, atol=1e-12)
    assert np.ptp(reference) > 0.1  # the score does change with the offset


def test_weight_permutation_ports_interleaved_to_half():
    # A projection whose output rows are in the interleaved layout, rotated interleaved,
    # equals the same projection with its rows permuted per head, rotated by halves.
    rng = np.random.default_rng(2)
    heads, head_dim, d_model = 3, 8, 12
    weight = rng.standard_normal((heads * head_dim, d_model))
    x = rng.standard_normal((5, d_model))
    positions = np.arange(5) * 11.0
    ported = posenc.convert_rotary_layout(weight, "interleaved", "half", heads=heads)
    rows = posenc.rotary_permutation(head_dim, "interleaved", "half", heads=heads)
    np.testing.assert_array_equal(rows[:head_dim], [0, 2, 4, 6, 1, 3, 5, 7])
    np.testing.assert_array_equal(rows[head_dim:], np.concatenate([rows[:head_dim] + head_dim, rows[:head_dim] + 2 * head_dim]))
    results = {}
    for layout, w in (("interleaved", weight), ("half", ported)):
        cos, sin = posenc.rotary_cos_sin(positions, head_dim, layout=layout, dtype=np.float64)
        heads_out = (x @ w.T).reshape(5, heads, head_dim).transpose(1, 0, 2)
        results[layout] = posenc.apply_rotary(heads_out, cos, sin, layout=layout)
    perm = posenc.rotary_permutation(head_dim, "interleaved", "half")
    np.testing.assert_allclose(results["half"], results["interleaved"][..., perm], rtol=0, atol=1e-13)
    back = posenc.convert_rotary_layout(ported, "half", "interleaved", heads=heads)
    np.testing.assert_array_equal(back, weight)
    # Keras kernels hold the outputs on the last axis.
    np.testing.assert_array_equal(posenc.convert_rotary_layout(weight.T, "interleaved", "half", heads=heads, axis=-1), ported.T)
    # ... and any axis counted from either end: -2 is the first of two.
    np.testing.assert_array_equal(posenc.convert_rotary_layout(weight, "interleaved", "half", heads=heads, axis=-2), ported)


def test_partial_rotation_permutes_the_rotated_channels_only():
    perm = posenc.rotary_permutation(8, "interleaved", "half", rotary_dim=4)
    np.testing.assert_array_equal(perm, [0, 2, 1, 3, 4, 5, 6, 7])
    # The smallest rotated part is one pair, which both layouts order alike.
    np.testing.assert_array_equal(posenc.rotary_permutation(8, "interleaved", "half", rotary_dim=2), np.arange(8))


@pytest.mark.parametrize(
    ("call", "error", "words"),
    [
        (lambda: posenc.rotary_frequencies(63), ValueError, ["head_dim", "63", "even"]),
        (lambda: posenc.rotary_frequencies(64.0), TypeError, ["head_dim", "64.0"]),
        (lambda: posenc.rotary_frequencies(64, rope_type="ntk"), ValueError, ["rope_type", "'ntk'", "'yarn'"]),
        (lambda: posenc.rotary_frequencies(64, rope_type="linear"), TypeError, ["'linear'", "'factor'"]),
        (
            lambda: posenc.rotary_frequencies(64, rope_type="llama3", factor=8.0, low_freq_factor=1.0, high_freq_factor=4.0),
            TypeError,
            ["'llama3'", "'original_max_position_embeddings'"],
        ),
        (lambda: posenc.rotary_frequencies(64, rope_type="dynamic", factor=2.0), TypeError, ["'dynamic'", "'max_position_embeddings'"]),
        (lambda: posenc.rotary_frequencies(64, beta_fast=32), TypeError, ["'default'", "'beta_fast'"]),
        (lambda: posenc.rotary_frequencies(64, rope_type="linear", factor=-2.0), ValueError, ["factor", "'linear'", "-2.0"]),
        (
            lambda: posenc.rotary_frequencies(64, rope_type="llama3", **dict(CASES["llama3"], high_freq_factor=0.5)),
            ValueError,
            ["'llama3'", "high_freq_factor", "low_freq_factor"],
        ),
        (
            # low == high with a wavelength (2 pi, pair 0) exactly at original / low: neither side of the step.
            lambda: posenc.rotary_frequencies(
                64, rope_type="llama3", factor=8.0, low_freq_factor=1.0, high_freq_factor=1.0, original_max_position_embeddings=2 * math.pi
            ),
            ValueError,
            ["'llama3'", "low_freq_factor == high_freq_factor", "6.28"],
        ),
        (
            lambda: posenc.rotary_frequencies(64, rope_type="yarn", beta_fast=1, beta_slow=4, **CASES["yarn"]),
            ValueError,
            ["'yarn'", "beta_fast", "beta_slow"],
        ),
        (lambda: posenc.rotary_frequencies(64, rope_type="yarn", original_max_position_embeddings=4096), TypeError, ["'yarn'", "'factor'"]),
        (
            lambda: posenc.rotary_frequencies(64, rope_type="longrope", **dict(CASES["longrope"], short_factor=[1.0] * 8)),
            ValueError,
            ["short_factor", "'longrope'", "32"],
        ),
        (lambda: posenc.rotary_frequencies(64, partial_rotary_factor=1.5), ValueError, ["partial_rotary_factor", "1.5"]),
        (lambda: posenc.rotary_frequencies(10, partial_rotary_factor=0.5), ValueError, ["partial_rotary_factor", "5 rotary channels"]),
        (lambda: posenc.rotary_frequencies(64, base=1.0), ValueError, ["base", "1.0"]),
        (lambda: posenc.rotary_cos_sin([1, 2], 64, layout="sin_cos"), ValueError, ["layout", "'half'", "'sin_cos'"]),
        (lambda: posenc.rotary_cos_sin([1, 2], 64, dtype=np.int32), TypeError, ["dtype"]),
        (lambda: posenc.rotary_cos_sin(["a"], 64), TypeError, ["positions"]),
        (lambda: posenc.apply_rotary(np.zeros((4, 8)), np.zeros((4, 10)), np.zeros((4, 10))), ValueError, ["cos", "(4, 10)", "8"]),
        (lambda: posenc.apply_rotary(np.zeros((4, 8)), np.zeros((4, 8)), np.zeros((4, 6))), ValueError, ["cos", "sin", "(4, 6)"]),
        (lambda: posenc.apply_rotary(np.zeros(8), np.float64(1), np.float64(0)), ValueError, ["cos", "last axis", "(8,) and ()"]),
        (lambda: posenc.apply_rotary(np.zeros((2, 3, 4, 8)), np.zeros((2, 4, 8)), np.zeros((2, 4, 8))), ValueError, ["broadcast",
                                                                                                                     "cos[:, None]"]),
        (lambda: posenc.convert_rotary_layout(np.zeros((24, 4)), "interleaved", "half", heads=5), ValueError, ["heads", "24"]),
        (lambda: posenc.rotary_permutation(8, "interleaved", "half", rotary_dim=3), ValueError, ["rotary_dim", "3"]),
    ],
)
def test_bad_input(call, error, words):
    assert_raises_naming(call, error, words)


# The same checks in each front (conftest's front fixture): a framework loads only when its tests run.


@pytest.mark.parametrize("front, dtype", [(f, d) for f in FRONTS for d in FLOATS[f]], indirect=["front"])
@pytest.mark.parametrize("rope_type", list(CASES))
def test_framework_cos_sin_accurate_at_a_million(front, exact_tables, rope_type, dtype):
    params = CASES[rope_type]
    for layout in ("half", "interleaved"):
        cos, sin = front.api.rotary_cos_sin(POSITIONS, HEAD_DIM, rope_type=rope_type, layout=layout,
                                            dtype=front.dtypes[dtype], **params)
        assert cos.dtype == front.dtypes[dtype]
        assert_accurate(front.numpy(cos), exact_tables[rope_type][0], dtype, layout)
        assert_accurate(front.numpy(sin), exact_tables[rope_type][1], dtype, layout)


@only("torch", "tensorflow")  # float64: JAX has none with jax_enable_x64 off
@pytest.mark.parametrize("layout", ["half", "interleaved"])
@pytest.mark.parametrize("fraction", [1.0, 0.5])
def test_framework_apply_rotary_matches_numpy(front, layout, fraction):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 3, 10, 16))
    cos, sin = posenc.rotary_cos_sin(np.arange(20).reshape(2, 10) * 7, 16, layout=layout, dtype=np.float64, partial_rotary_factor=fraction)
    expected = posenc.apply_rotary(x, cos[:, None], sin[:, None], layout=layout)
    got = front.api.apply_rotary(*(front.tensor(a) for a in (x, cos[:, None], sin[:, None])), layout=layout)
    np.testing.assert_allclose(front.numpy(got), expected, rtol=0, atol=1e-15)


def test_framework_rotary_embedding(front):
    position_ids = np.arange(12).reshape(2, 6) * 50_000
    layer = front.make(front.api.RotaryEmbedding, HEAD_DIM, rope_type="llama3", layout="interleaved",
                       compute_dtype="bfloat16", **CASES["llama3"])
    # torch and Flax compute in x's dtype; Keras casts x to the layer's compute dtype.
    x = front.tensor(np.zeros((2, 6, HEAD_DIM)), "float32" if front.name == "tensorflow" else "bfloat16")
    cos, sin = front.run(layer, x, front.tensor(position_ids))
    assert cos.dtype == front.dtypes["bfloat16"] and tuple(cos.shape) == (2, 6, HEAD_DIM)
    expected = posenc.rotary_cos_sin(position_ids, HEAD_DIM, rope_type="llama3", layout="interleaved",
                                     dtype=np.float64, **CASES["llama3"])
    for got, want in zip((cos, sin), expected):
        assert np.all(np.abs(front.numpy(got) - want) <= allowed_error(want, "bfloat16"))


def test_torch_module_reads_the_length_for_dynamic():
    torch = pytest.importorskip("torch")
    import posenc.torch as pt

    params = {k: v for k, v in CASES["dynamic"].items() if k != "seq_len"}
    module = pt.RotaryEmbedding(HEAD_DIM, rope_type="dynamic", **params)
    x = torch.zeros(1, dtype=torch.float64)
    for longest in (100, 4999):
        cos, _ = module(x, torch.arange(longest + 1)[None])
        want, _ = posenc.rotary_cos_sin(np.arange(longest + 1), HEAD_DIM, rope_type="dynamic", dtype=np.float64, **params,
                                        seq_len=longest + 1)
        np.testing.assert_allclose(cos[0].numpy(), want, rtol=0, atol=4e-16)
    # bf16 models keep float64 frequencies: nothing of them is rounded by .to().
    assert module.to(torch.bfloat16).inv_freq.dtype == torch.float64


FIXED = [t for t in CASES if t not in rotary.LENGTH_DEPENDENT]
FAR = np.array([0, 1, 65535, 4_194_305, 9_999_991, 10_000_000])


@pytest.fixture(scope="module")
def far_tables():
    return {rope_type: exact_cos_sin(FAR, rope_type, CASES[rope_type]) for rope_type in FIXED}


# No warning either: the compiling route once warned that NumPy's read-only frequencies were shared.
@pytest.mark.filterwarnings("error::UserWarning")
@pytest.mark.parametrize("route", ["few", "many", "many compiling"])
@pytest.mark.parametrize("rope_type", FIXED)
def test_torch_module_routes_accurate_to_1e7(monkeypatch, far_tables, rope_type, route):
    """RotaryEmbedding's three routes: a few angles (a decoding step) from the float64 angle,
    many on the CPU through NumPy's kernel, and, when torch.compile traces (stood in for here),
    the kernels in torch operations; each within its bound at positions up to 10**7."""
    torch = pytest.importorskip("torch")
    import posenc.torch as pt

    if route == "many compiling":
        monkeypatch.setattr(torch.compiler, "is_compiling", lambda: True)
    module = pt.RotaryEmbedding(HEAD_DIM, rope_type=rope_type, **CASES[rope_type])
    padding = [] if route == "few" else [7] * (kernels.FEW_ANGLES // (module.rotary_dim // 2))
    position_ids = torch.tensor([*padding, *FAR])[None]
    for dtype in ("bfloat16", "float32", "float64"):
        cos, sin = module(torch.zeros(1, dtype=getattr(torch, dtype)), position_ids)
        assert cos.dtype == getattr(torch, dtype) and cos.shape == (1, len(padding) + len(FAR), module.rotary_dim)
        for got, exact in zip((cos, sin), far_tables[rope_type]):
            assert_accurate(got[0, len(padding):].to(torch.float64).numpy(), exact, dtype)


def test_keras_layer_config_round_trip():
    pytest.importorskip("tensorflow")
    import keras

    import posenc.tensorflow as ptf

    layer = ptf.RotaryEmbedding(HEAD_DIM, rope_type="longrope", layout="interleaved", name="rope", **CASES["longrope"])
    again = keras.layers.deserialize(keras.layers.serialize(layer))
    assert type(again) is ptf.RotaryEmbedding and again.get_config() == layer.get_config()
    positions = np.arange(6)[None] * 1000
    for a, b in zip(layer(np.zeros((1, 6, HEAD_DIM), np.float32), positions), again(np.zeros((1, 6, HEAD_DIM), np.float32), positions)):
        np.testing.assert_array_equal(a.numpy(), b.numpy())


@pytest.mark.parametrize("layout", ["half", "interleaved"])
@pytest.mark.parametrize("fraction", [1.0, 0.5])
def test_torch_apply_rotary_gradients(layout, fraction):
    # apply_rotary writes into its product in place: autograd must still see every path.
    torch = pytest.importorskip("torch")
    import posenc.torch as pt

    torch.manual_seed(0)
    x = torch.randn(2, 3, 5, 8, dtype=torch.float64, requires_grad=True)
    cos, sin = (t[:, None].requires_grad_() for t in pt.rotary_cos_sin(torch.arange(10).reshape(2, 5), 8, layout=layout,
                                                                       dtype=torch.float64, partial_rotary_factor=fraction))
    assert torch.autograd.gradcheck(lambda x, c, s: pt.apply_rotary(x, c, s, layout=layout), (x, cos, sin))


# --- dtypes kept, every read parameter named in its error (tests with teeth, issue 21) ------


@pytest.mark.parametrize("dtype", [np.float16, np.float32])
@pytest.mark.parametrize("layout", ["half", "interleaved"])
def test_apply_rotary_keeps_float32_and_half_inputs_in_their_dtype(dtype, layout):
    rng = np.random.default_rng(4)
    positions = np.arange(10) * 13.0
    x = rng.standard_normal((2, 10, 16)).astype(dtype)
    cos, sin = posenc.rotary_cos_sin(positions, 16, layout=layout, dtype=dtype, partial_rotary_factor=0.5)
    got = posenc.apply_rotary(x, cos, sin, layout=layout)
    assert got.dtype == dtype and got.shape == x.shape
    np.testing.assert_array_equal(got[..., 8:], x[..., 8:])  # beyond rotary_dim: untouched
    # The same rotation of the same (rounded) inputs in float64: two products and a sum, each
    # rounded once in dtype, within 2 eps (|a| + |b|) <= 4 eps max|x| of it.
    wide = posenc.apply_rotary(x.astype(np.float64), cos.astype(np.float64), sin.astype(np.float64), layout=layout)
    assert np.abs(got - wide).max() <= 4 * np.finfo(dtype).eps * np.abs(x).max()
    # And the angle is the exact one, to cos's and sin's rounding in dtype as well.
    exact_cos, exact_sin = posenc.rotary_cos_sin(positions, 16, layout=layout, dtype=np.float64, partial_rotary_factor=0.5)
    exact = posenc.apply_rotary(x.astype(np.float64), exact_cos, exact_sin, layout=layout)
    assert np.abs(got - exact).max() <= 6 * np.finfo(dtype).eps * np.abs(x).max()


# (rope_type, parameter): each parameter a rope type reads, with a valid case around it.
READ_PARAMETERS = [
    ("default", "partial_rotary_factor"),
    ("linear", "factor"),
    ("dynamic", "factor"),
    ("dynamic", "max_position_embeddings"),
    ("dynamic", "seq_len"),
    ("yarn", "factor"),
    ("yarn", "original_max_position_embeddings"),
    ("yarn", "attention_factor"),
    ("yarn", "beta_fast"),
    ("yarn", "beta_slow"),
    ("yarn", "mscale"),
    ("yarn", "mscale_all_dim"),
    ("longrope", "factor"),
    ("longrope", "attention_factor"),
    ("longrope", "seq_len"),
    ("longrope", "original_max_position_embeddings"),
    ("longrope", "max_position_embeddings"),
    ("llama3", "factor"),
    ("llama3", "low_freq_factor"),
    ("llama3", "high_freq_factor"),
    ("llama3", "original_max_position_embeddings"),
    ("proportional", "factor"),
    ("proportional", "partial_rotary_factor"),
]


@pytest.mark.parametrize("bad", [0, -2.5, float("nan"), float("inf")])
@pytest.mark.parametrize(("rope_type", "name"), READ_PARAMETERS)
def test_a_bad_rope_parameter_is_named(rope_type, name, bad):
    params = dict(CASES[rope_type], **{name: bad})
    if rope_type == "longrope" and name == "max_position_embeddings":
        params.pop("factor", None)  # read only when it gives the factor
    words = [name, repr(bad), repr(rope_type)]
    assert_raises_naming(lambda: posenc.rotary_frequencies(HEAD_DIM, rope_type=rope_type, **params), ValueError, words)
    assert_raises_naming(lambda: posenc.rotary_cos_sin([0, 1], HEAD_DIM, rope_type=rope_type, **params), ValueError, words)


@pytest.mark.parametrize("bad", ["2", True, [2.0]])
@pytest.mark.parametrize(("rope_type", "name"), READ_PARAMETERS)
def test_a_rope_parameter_that_is_no_number_is_a_type_error(rope_type, name, bad):
    params = dict(CASES[rope_type], **{name: bad})
    if rope_type == "longrope" and name == "max_position_embeddings":
        params.pop("factor", None)
    words = [name, repr(bad), type(bad).__name__, repr(rope_type), "real number"]
    assert_raises_naming(lambda: posenc.rotary_frequencies(HEAD_DIM, rope_type=rope_type, **params), TypeError, words)


# The whole message a learner reads, for the errors that list what is allowed or say what to do.
FULL_MESSAGES = [
    (lambda: posenc.rotary_cos_sin([1], 64, layout="sin_cos"), ValueError, "layout must be one of 'half', 'interleaved'; got 'sin_cos'"),
    (
        lambda: posenc.rotary_frequencies(64, rope_type="ntk"),
        ValueError,
        "rope_type must be one of 'default', 'linear', 'dynamic', 'yarn', 'longrope', 'llama3', 'proportional'; got 'ntk'",
    ),
    (
        lambda: posenc.rotary_frequencies(64, rope_type="linear", factor=2.0, beta_fast=32),
        TypeError,
        "rope_type='linear' takes no parameter 'beta_fast'; it takes factor, max_position_embeddings, partial_rotary_factor",
    ),
    (
        lambda: posenc.rotary_frequencies(64, rope_type="yarn", original_max_position_embeddings=4096),
        TypeError,
        "rope_type='yarn' needs the parameter 'factor' "
        "(or 'max_position_embeddings', which gives it as max / original_max_position_embeddings)",
    ),
    (
        lambda: posenc.apply_rotary(np.zeros((2, 3, 4, 8)), np.zeros((2, 4, 8)), np.zeros((2, 4, 8))),
        ValueError,
        "cos (shape (2, 4, 8)) must broadcast against x (shape (2, 3, 4, 8)) but for the last axis; "
        "for x of (batch, heads, seq, head_dim) pass cos[:, None]",
    ),
    (
        lambda: posenc.rotary_frequencies(2, rope_type="dynamic", factor=2.0, max_position_embeddings=10),
        ValueError,
        "rope_type='dynamic' needs at least 4 rotary channels, got 2",
    ),
]


@pytest.mark.parametrize(("call", "error", "message"), FULL_MESSAGES)
def test_rotary_error_messages_in_full(call, error, message):
    with pytest.raises(error) as caught:
        call()
    assert str(caught.value) == message


def test_rotary_dim_defaults_to_the_whole_head():
    assert rotary.rotary_dim(64) == 64
    assert rotary.rotary_dim(64, partial_rotary_factor=0.25) == 16
    assert rotary.rotary_dim(64, "proportional", partial_rotary_factor=0.25) == 64  # the rest turn at frequency 0


@pytest.mark.parametrize(("chosen", "seq_len"), [("short_factor", 100), ("long_factor", 8000)])
@pytest.mark.parametrize("bad", [0.0, -1.0])
def test_longrope_factors_in_use_must_be_positive(chosen, seq_len, bad):
    factors = list(CASES["longrope"][chosen])
    factors[3] = bad
    params = dict(CASES["longrope"], seq_len=seq_len, **{chosen: factors})
    assert_raises_naming(
        lambda: posenc.rotary_frequencies(HEAD_DIM, rope_type="longrope", **params), ValueError, [chosen, "32 positive numbers",
                                                                                                  "'longrope'"]
    )
