"""The kernels' accuracy at any position, in NumPy and every front, against mpmath.

Bounds (issue "accurate at any position"): float32 within 2e-7 absolute, float64 within
1e-9, half precision within one half-precision rounding (of a value already within 2e-7),
for integer and fractional positions up to 10**7 and d_model up to 4096. Rows and columns
are sampled so that mpmath stays cheap.
"""

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import mpmath  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

import posenc  # noqa: E402
from posenc.engine import rotation as _rotation
from posenc import front  # noqa: E402
from posenc.engine import kernels, routes  # noqa: E402
from posenc.engine.backends import backend  # noqa: E402
from frameworks import adapter  # noqa: E402
from reference import exact, exact_sin_cos, paper_table  # noqa: E402

BOUND = {"float32": 2e-7, "float64": 1e-9}


def as_float64(framework, values):
    """A tensor of ``framework`` (its name) as a float64 array (bfloat16 widened exactly)."""
    return adapter(framework).numpy(values).astype(np.float64)


def encode(framework, positions, d_model, dtype, **kwargs):
    front = adapter(framework)
    out = front.api.encode(front.tensor(positions, "float64"), d_model, dtype=front.dtypes[dtype], **kwargs)
    return as_float64(framework, out)


def table(framework, length, d_model, dtype, **kwargs):
    front = adapter(framework)
    return as_float64(framework, front.api.positional_encoding(length, d_model, dtype=front.dtypes[dtype], **kwargs))


def sin_and_cos(framework):
    """The framework's own float sin and cos; TensorFlow's under XLA, as ptf._half_turns runs them
    (they differ from TF's own)."""
    adapter(framework)  # skips without it
    if framework == "torch":
        import torch

        return torch.sin, torch.cos
    if framework == "tensorflow":
        import tensorflow as tf

        return tuple(tf.function(f, jit_compile=True) for f in (tf.sin, tf.cos))
    return np.sin, np.cos


def exact_at(positions, columns, d_model):
    return np.array([[exact(p, int(k), d_model) for k in columns] for p in positions])


rng = np.random.default_rng(20240607)
INTEGERS = [0, 1, 32767, 99_999, 1_000_003, 4_194_304, 9_999_991, 10_000_000]
FRACTIONAL = list(rng.uniform(0, 1e7, 8)) + [0.5, 12345.678, 9_999_999.875]
COLUMNS = np.unique(np.concatenate([[0, 1, 2, 3, 4094, 4095], rng.integers(0, 4096, 40)]))
FRAMEWORKS = ["numpy", "torch", "tensorflow"]


@pytest.mark.parametrize("framework", FRAMEWORKS)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("positions", [INTEGERS, FRACTIONAL], ids=["integer", "fractional"])
def test_encode_within_bound_up_to_1e7(framework, dtype, positions):
    out = encode(framework, positions, 4096, dtype)[:, COLUMNS]
    assert np.abs(out - exact_at(positions, COLUMNS, 4096)).max() <= BOUND[dtype]


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_float64_angle_is_carried_beyond_float64(framework):
    # Plain sin(p * w) in float64 is off by up to ~1.5e-9 at 1e7 (rounding of w and of the
    # product), just inside 1e-9 at most points; the split angle keeps posenc near 1e-15.
    positions = INTEGERS + FRACTIONAL
    out = encode(framework, positions, 4096, "float64")[:, COLUMNS]
    assert np.abs(out - exact_at(positions, COLUMNS, 4096)).max() <= 1e-14


@pytest.mark.parametrize("framework", FRAMEWORKS)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_wide_table_within_bound(framework, dtype):
    # 3000 rows: several rotation blocks of 64 rows, every column of d_model = 4096 sampled.
    pe = table(framework, 3000, 4096, dtype)
    rows = [0, 63, 64, 65, 1000, 2047, 2999]
    assert np.abs(pe[np.ix_(rows, COLUMNS)] - exact_at(rows, COLUMNS, 4096)).max() <= BOUND[dtype]


@pytest.mark.parametrize("framework", FRAMEWORKS)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_long_table_within_bound_up_to_1e7(framework, dtype):
    # 10**7 rows of d_model = 2 (160 MB in float64): the rotation steps reach the last row.
    length = 10_000_000
    pe = table(framework, length, 2, dtype)
    rows = [length - 1, length - 2, length // 2 + 1, length - 4097, 123_456]
    assert np.abs(pe[rows] - exact_at(rows, [0, 1], 2)).max() <= BOUND[dtype]


@pytest.mark.parametrize("offset", [0, 30_000.25, 9_999_488.5, 1e9], ids=["start", "fractional", "near-1e7", "far"])
@pytest.mark.parametrize("length", [10, 64, 65])
def test_short_tables_within_bound_at_any_offset(length, offset):
    # Up to one rotation block (64 rows) with angles up to 2**15: the float64 angle rounded once;
    # farther, the rotation's block of just these rows; longer, the rotation. All within the bound.
    pe = as_float64("numpy", posenc.positional_encoding(length, 64, offset=offset))
    rows = [0, 1, length // 2, length - 1]
    columns = [0, 1, 2, 3, 31, 62, 63]
    assert np.abs(pe[np.ix_(rows, columns)] - exact_at([offset + r for r in rows], columns, 64)).max() <= BOUND["float32"]


def half_rounding(exact_values, dtype):
    # Half a unit in the last place of the exact value, in that format (bfloat16: 8 bits).
    bits = {"float16": 11, "bfloat16": 8}[dtype]
    exponent = np.floor(np.log2(np.maximum(np.abs(exact_values), 2.0**-14)))
    return 2.0 ** (exponent - bits)


@pytest.mark.parametrize("framework, dtype", [("numpy", "float16"), ("torch", "float16"), ("torch", "bfloat16"),
                                              ("tensorflow", "float16"), ("tensorflow", "bfloat16")])
def test_half_precision_is_one_rounding_of_an_accurate_value(framework, dtype):
    columns = COLUMNS[COLUMNS < 512]
    reference = exact_at(INTEGERS, columns, 512)
    slack = half_rounding(reference, dtype) + BOUND["float32"]
    assert (np.abs(encode(framework, INTEGERS, 512, dtype)[:, columns] - reference) <= slack).all()
    rows = [0, 100, 4095]
    reference = exact_at(rows, columns, 512)
    slack = half_rounding(reference, dtype) + BOUND["float32"]
    assert (np.abs(table(framework, 4096, 512, dtype)[np.ix_(rows, columns)] - reference) <= slack).all()


@pytest.mark.parametrize("framework", FRAMEWORKS)
@pytest.mark.parametrize("layout", posenc.LAYOUTS)
@pytest.mark.parametrize("d_model", [1, 7, 10, 33])
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
def test_layouts_and_odd_widths_past_one_block(framework, layout, d_model, dtype):
    # 1000 rows: 32 blocks of 32 rows go through the rotation, whatever the layout.
    pe = table(framework, 1000, d_model, dtype, layout=layout)
    interleaved = paper_table(np.arange(1000), d_model)
    order = posenc.column_order(d_model, layout)
    half = (d_model + 1) // 2
    expected = interleaved[:, np.where(order < half, 2 * order, 2 * (order - half) + 1)]
    assert pe.shape == (1000, d_model)
    np.testing.assert_allclose(pe, expected, rtol=0, atol={"float16": 2**-11, "float32": 2e-7, "float64": 1e-12}[dtype])


def test_numpy_out_is_written_and_returned():
    buffer = np.full((300, 10), np.nan, np.float32)
    assert posenc.positional_encoding(300, 10, out=buffer) is buffer
    np.testing.assert_array_equal(buffer, posenc.positional_encoding(300, 10))
    strided = np.full((300, 20), np.nan)[:, ::2]  # a view whose rows are not contiguous
    posenc.positional_encoding(300, 10, dtype=np.float64, out=strided)
    np.testing.assert_allclose(strided, paper_table(np.arange(300), 10), atol=1e-14)
    positions = np.array([[3.5, 1e6], [7.0, 0.0]])
    into = np.zeros((2, 2, 6), np.float16)
    assert posenc.encode(positions, 6, dtype=np.float16, out=into) is into
    np.testing.assert_array_equal(into, posenc.encode(positions, 6, dtype=np.float16))
    transposed = np.zeros((6, 2, 2)).T  # no flat view: written through a copy
    posenc.encode(positions.T, 6, dtype=np.float64, out=transposed)
    np.testing.assert_allclose(transposed, paper_table(positions.T, 6), atol=1e-9)


def test_torch_out_is_written_and_returned():
    torch = pytest.importorskip("torch")
    import posenc.torch as pt

    buffer = torch.full((300, 10), float("nan"))
    assert pt.positional_encoding(300, 10, dtype=torch.float32, out=buffer) is buffer
    assert torch.equal(buffer, pt.positional_encoding(300, 10, dtype=torch.float32))
    columns = torch.full((10, 300), float("nan")).T  # not contiguous: written through its NumPy view
    assert pt.positional_encoding(300, 10, dtype=torch.float32, out=columns) is columns
    assert torch.equal(columns, buffer)
    halves = torch.zeros(300, 10, dtype=torch.bfloat16)  # NumPy has no bfloat16: a copy, rounded once
    assert pt.positional_encoding(300, 10, dtype=torch.bfloat16, out=halves) is halves
    assert torch.equal(halves, buffer.to(torch.bfloat16))
    into = torch.zeros(4, 5, dtype=torch.float64)
    assert pt.encode(torch.tensor([0.0, 2.5, 1e5, 7.0]), 5, dtype=torch.float64, out=into) is into
    np.testing.assert_allclose(into.numpy(), paper_table([0.0, 2.5, 1e5, 7.0], 5), atol=1e-10)


def torch_table(out, dtype):
    """torch's 4 x 6 table into ``out`` (as a torch tensor of ``dtype``); skips without torch."""
    fw = adapter("torch")
    return fw.api.positional_encoding(4, 6, out=fw.tensor(out, dtype))


@pytest.mark.parametrize("call, error, message", [
    (lambda: posenc.positional_encoding(4, 6, out=np.zeros((4, 5), np.float32)), ValueError,
     "out must have shape (4, 6), got out of shape (4, 5)"),
    (lambda: posenc.positional_encoding(4, 6, out=np.zeros((4, 6))), TypeError,
     "out must have dtype float32 (the dtype argument), got out of dtype float64"),
    (lambda: posenc.positional_encoding(4, 6, out=[[0.0] * 2] * 1), TypeError, "out must be a numpy.ndarray, got [[0.0, 0.0]] (list)"),
    (lambda: posenc.encode([1, 2], 6, out=np.zeros((3, 6), np.float32)), ValueError,
     "out must have shape (2, 6), got out of shape (3, 6)"),
    (lambda: torch_table(out=np.zeros((4, 6)), dtype="float64"), TypeError,
     "out must have dtype torch.float32 (the dtype argument), got out of dtype torch.float64"),
    (lambda: torch_table(out=np.zeros((5, 6)), dtype="float32"), ValueError, "out must have shape (4, 6), got out of shape (5, 6)"),
])
def test_bad_out_is_named(call, error, message):
    with pytest.raises(error) as caught:
        call()
    assert str(caught.value) == message


def test_geometric_parts_hold_the_frequency_to_twice_float64():
    # The paper's w_i = 10000 ** (-2i / 4096): span d_model / 2 = 2048.
    w_hi, w_lo = _rotation.geometric_parts(2048, 10000.0, 2048)
    with mpmath.workdps(50):
        for i in [1, 7, 1000, 2047]:
            w = mpmath.power(10000, -mpmath.mpf(2 * i) / 4096)
            assert w_hi[i] == float(w)
            assert abs((mpmath.mpf(w_hi[i]) + mpmath.mpf(w_lo[i]) - w) / w) < 1e-30


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_framework_float64_sin_reduces_large_angles_exactly(framework):
    # sincos relies on it: sin and cos of a float64 angle near 1e7 within one ulp.
    angles = np.array([9_999_999.123456789, 6_283_185.307179586, 3.0e6 + 0.1])
    sin, cos = sin_and_cos(framework)
    with mpmath.workdps(40):
        for f, g in [(sin, mpmath.sin), (cos, mpmath.cos)]:
            got = as_float64(framework, f(adapter(framework).tensor(angles)))
            want = np.array([float(g(mpmath.mpf(a))) for a in angles])
            assert (np.abs(got - want) <= np.spacing(np.abs(want))).all()


def test_the_float32_route_is_what_the_bound_rules_out():
    # The lectures' float32 division at 10**5 and beyond is far outside 2e-7.
    position = np.float32(1e6)
    denominators = np.power(10000, np.arange(0, 64, 2, dtype=np.float32) / 64)
    reference = exact_at([1e6], range(0, 64, 2), 64)[0]
    assert np.abs(np.sin(position / denominators) - reference).max() > 1e-2


# The fast kernels (``_rotation`` part 3): float32 sin/cos of an angle reduced in half turns.

# Each route's kernel as the fronts run it (posenc.engine.routes): NumPy's (HOST), torch's BLOCKS
# (other devices, bfloat16) and WHOLE (torch.compile's), TensorFlow's WHOLE (XLA), eager and in a graph.
KERNELS = ["numpy", "numpy functional", "torch blocks", "torch whole", "tensorflow", "tensorflow graph"]
NUMPY = backend("numpy")


def sin_cos(kernel, positions, w_hi, w_lo, dtype):
    """``(sin, cos)`` as float64 arrays from one framework's kernel."""
    name = kernel.split()[0]
    fw = adapter(name)
    positions, dtype = np.asarray(positions, np.float64), fw.dtypes[dtype]
    if kernel == "numpy":
        pair = _rotation.sin_cos(positions, w_hi, w_lo, dtype.type)
    elif kernel == "numpy functional":  # one kernel for every backend, without out= buffers
        pair = kernels.sin_cos(NUMPY, positions, w_hi, w_lo, dtype.type)
    elif name == "torch":
        pair = front._kernel(fw.api.SPEC, routes.BLOCKS if kernel == "torch blocks" else routes.WHOLE)(
            fw.tensor(positions), w_hi, w_lo, dtype)
    else:
        import tensorflow as tf

        def run(p):
            return front._kernel(fw.api.SPEC, routes.WHOLE)(p, w_hi, w_lo, dtype)

        pair = (tf.function(run) if kernel == "tensorflow graph" else run)(fw.tensor(positions))
    assert [t.dtype for t in pair] == [dtype, dtype], f"{kernel}: sin and cos in {[t.dtype for t in pair]}, asked {dtype}"
    return tuple(as_float64(name, t) for t in pair)


def test_torch_blocks_kernel_allocates_on_the_positions_device():
    # The route of other devices, on torch's "meta" device (shapes, no data): a scratch buffer
    # made on the CPU would stop it with a cross-device copy.
    torch = pytest.importorskip("torch")
    import posenc.torch as pt

    w_hi, w_lo = _rotation.geometric_parts(8, 10000.0, 8)
    for dtype in (torch.float32, torch.float16):
        s, c = front._kernel(pt.SPEC, routes.BLOCKS)(torch.zeros(5, dtype=torch.float64, device="meta"), w_hi, w_lo, dtype)
        assert s.device.type == c.device.type == "meta" and s.shape == c.shape == (5, len(w_hi)) and s.dtype == dtype


def hard_angles():
    """Frequencies of no pattern (w_lo zero, as a rotary model's float64 inverse frequencies), and
    positions up to 1e7 (integer, fractional, negative) whose angles sit where part 3 is weakest:
    next to an odd multiple of pi/2 (|pi f| next to pi/2, the float32 rounding of the reduced
    angle largest), next to multiples of pi, and at random."""
    generator = np.random.default_rng(7)
    w_hi = np.concatenate([[1.0, 0.999, 0.5, 1e-4], generator.uniform(1e-5, 1.0, 12)])
    w_lo = np.zeros_like(w_hi)
    half = (np.arange(1, 4) * 3_000_001 + 0.5) * np.pi  # odd multiples of pi/2 near 1e7
    positions = np.concatenate([
        [0.0, 1.0, -1.0, 0.5, -12345.678, 32767.0, 9_999_999.875, -10_000_000.0, 10_000_000.0],
        np.round(half), half, -half * 0.5, generator.uniform(-1e7, 1e7, 6), generator.integers(0, 10**7, 6),
    ])
    return positions, w_hi, w_lo


@pytest.mark.parametrize("kernel", KERNELS)
@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_sin_cos_kernels_against_mpmath(kernel, dtype):
    positions, w_hi, w_lo = hard_angles()
    want_s, want_c = exact_sin_cos(positions, w_hi, w_lo)
    got_s, got_c = sin_cos(kernel, positions, w_hi, w_lo, dtype)
    assert got_s.shape == got_c.shape == (len(positions), len(w_hi))
    for got, want in [(got_s, want_s), (got_c, want_c)]:
        if dtype == "float64":
            assert np.abs(got - want).max() <= 1e-14
        elif dtype == "float32":
            assert np.abs(got - want).max() <= BOUND["float32"]
        else:
            assert (np.abs(got - want) <= half_rounding(want, "float16") + BOUND["float32"]).all()


@pytest.mark.parametrize("kernel", KERNELS)
def test_sin_cos_kernels_take_any_shape_and_two_part_frequencies(kernel):
    # The paper's frequencies as two parts (w_lo not zero), positions of shape (2, 3).
    w_hi, w_lo = _rotation.geometric_parts(8, 10000.0, 8)
    positions = np.array([[0.0, 2.5, -7.0], [1e6 + 0.25, 4_194_304.0, 9_999_999.0]])
    got_s, got_c = (a.reshape(6, 8) for a in sin_cos(kernel, positions.reshape(-1), w_hi, w_lo, "float32"))
    want_s, want_c = exact_sin_cos(positions.reshape(-1), w_hi, w_lo)
    assert max(np.abs(got_s - want_s).max(), np.abs(got_c - want_c).max()) <= BOUND["float32"]
    if kernel == "numpy":
        s, c = _rotation.sin_cos(positions, w_hi, w_lo, np.float32)
        assert s.shape == c.shape == (2, 3, 8) and s.dtype == c.dtype == np.float32


# Part 3 of the _rotation docstring: each framework's float32 sin and cos on [-pi/2, pi/2] are
# within EPSILON absolute (its premise; all below the 9e-8 the proof allows), and the kernel is
# then within EPSILON + 2**-24 (the float32 rounding of the reduced angle) + 1e-8 (the angle's
# float64 roundings at |p w| <= 1e7, and slack).
EPSILON = {"numpy": 6.5e-8, "torch": 3.7e-8, "tensorflow": 3.5e-8}


@pytest.mark.parametrize("framework", ["numpy", "torch", "tensorflow"])
def test_float32_sin_and_cos_within_the_premise_of_the_proof(framework):
    generator = np.random.default_rng(3)
    x = np.concatenate([generator.uniform(-np.pi / 2, np.pi / 2, 1_000_000),
                        np.linspace(0.7, np.pi / 2, 200_000)]).astype(np.float32)
    x = np.clip(x, -np.float32(np.pi / 2), np.float32(np.pi / 2))
    sin, cos = sin_and_cos(framework)
    for f, g in [(sin, np.sin), (cos, np.cos)]:
        assert np.abs(as_float64(framework, f(adapter(framework).tensor(x))) - g(x.astype(np.float64))).max() <= EPSILON[framework]


@pytest.mark.parametrize("kernel", KERNELS)
def test_float32_kernels_within_their_proven_bound_on_a_million_angles(kernel):
    # The float64 kernel (part 1, ~2e-16; checked against mpmath above) is the reference.
    generator = np.random.default_rng(5)
    w_hi = generator.uniform(1e-5, 1.0, 256)
    positions = generator.uniform(-1e7, 1e7, 4000)
    got = sin_cos(kernel, positions, w_hi, np.zeros_like(w_hi), "float32")
    want = _rotation.sin_cos(positions, w_hi, np.zeros_like(w_hi), np.float64)
    bound = EPSILON[kernel.split()[0]] + 2.0**-24 + 1e-8
    assert max(np.abs(g - w).max() for g, w in zip(got, want)) <= bound


def half_turns_float32(run, positions, pieces):
    """``kernels.half_turns_float32`` on NumPy, or under ``jax.jit`` as the JAX front runs it
    with x64 off (skips without JAX)."""
    if run == "numpy":
        return kernels.half_turns_float32(NUMPY, positions, pieces)
    jax_front = adapter("jax")
    import jax

    return jax.jit(lambda p: kernels.half_turns_float32(backend("jax"), p, pieces))(jax_front.tensor(positions))


def hard_positions():
    """float32 positions up to 2**24 where the reduction is weakest: next to odd multiples of
    pi/2 of the fastest frequency (the reduced angle next to pi/2), the largest integers,
    fractional and negative ones, and random ones."""
    generator = np.random.default_rng(11)
    half = (np.arange(1, 6) * 1_000_003 + 0.5) * np.pi
    positions = np.concatenate([
        [0.0, 1.0, -1.0, 0.5, -0.375, 2048.0, 4095.5, 12345.678, 9_999_999.0, 10_000_000.0, -10_000_000.0,
         2.0**24 - 1, 2.0**24, -(2.0**24), 2.0**23 + 0.5],
        np.round(half), half, -half, generator.uniform(-2.0**24, 2.0**24, 8), generator.integers(0, 10**7, 8),
    ])
    return positions.astype(np.float32)


def half_turn_frequencies():
    # The paper's (w_lo not zero), one of no pattern, and the extremes 1 and 1e-4.
    w_hi, w_lo = _rotation.geometric_parts(12, 10000.0, 12)
    generator = np.random.default_rng(2)
    extra = np.concatenate([[1.0, 0.999, 1e-4], generator.uniform(1e-5, 1.0, 5)])
    return np.concatenate([w_hi, extra]), np.concatenate([w_lo, np.zeros_like(extra)])


@pytest.mark.parametrize("run", ["numpy", "jax jit"])
def test_float32_half_turns_against_mpmath_up_to_2_to_the_24(run):
    positions = hard_positions()
    w_hi, w_lo = half_turn_frequencies()
    s, c = half_turns_float32(run, positions, kernels.half_turn_pieces(w_hi, w_lo))
    assert s.dtype == c.dtype == np.float32
    want_s, want_c = exact_sin_cos(positions, w_hi, w_lo)
    assert np.abs(np.asarray(s, np.float64) - want_s).max() <= BOUND["float32"]
    assert np.abs(np.asarray(c, np.float64) - want_c).max() <= BOUND["float32"]


@pytest.mark.parametrize("run", ["numpy", "jax jit"])
def test_float32_half_turns_within_the_same_bound_on_a_million_angles(run):
    # The float32-only kernel (JAX with x64 off) ends as the rotation kernels do: a reduced angle
    # within ~1e-9 of the exact one, rounded to float32, then float32 sin and cos.
    generator = np.random.default_rng(5)
    w_hi = generator.uniform(1e-5, 1.0, 256)
    positions = np.concatenate([generator.uniform(-1e7, 1e7, 2000), generator.integers(-(2**24), 2**24, 2000)])
    positions = positions.astype(np.float32)
    got = half_turns_float32(run, positions, kernels.half_turn_pieces(w_hi, np.zeros_like(w_hi)))
    want = _rotation.sin_cos(positions.astype(np.float64), w_hi, np.zeros_like(w_hi), np.float64)
    # XLA's float32 sin and cos are not NumPy's: under jit, the fronts' float32 bound.
    bound = EPSILON["numpy"] + 2.0**-24 + 1e-8 if run == "numpy" else BOUND["float32"]
    assert max(np.abs(np.asarray(g, np.float64) - w).max() for g, w in zip(got, want)) <= bound


def test_half_turn_pieces_add_up_to_the_frequency_in_half_turns():
    w_hi, w_lo = half_turn_frequencies()
    q0, q1, q2, q3, v0, v1, v2, v3, w0, w1, w = kernels.half_turn_pieces(w_hi, w_lo).astype(np.float64)
    with mpmath.workdps(40):
        for j in range(len(w_hi)):
            v = (mpmath.mpf(w_hi[j]) + mpmath.mpf(w_lo[j])) / mpmath.pi
            # Each sum is the value to the float32 rounding of its last, tiny piece.
            assert abs(mpmath.mpf(q0[j]) + q1[j] + q2[j] + q3[j] - (4096 * v - 2 * mpmath.nint(2048 * v))) < 1e-17
            assert abs(mpmath.mpf(v0[j]) + v1[j] + v2[j] + v3[j] - (v - 2 * mpmath.nint(v / 2))) < 1e-20
            assert abs(mpmath.mpf(w0[j]) + w1[j] - v) <= 2.0**-36 * v and w[j] == np.float32(float(v))
            for piece in (q0[j], q1[j], q2[j], v0[j], v1[j], v2[j], w0[j]):  # at most 12 significant bits
                mantissa, _ = np.frexp(piece)
                assert mantissa * 4096 == np.round(mantissa * 4096)


ENCODERS = ["numpy", "torch", "tensorflow", "tensorflow graph"]


def encode_any(encoder, positions, d_model, dtype, **kwargs):
    if encoder == "tensorflow graph":
        fw = adapter("tensorflow")  # skips without TensorFlow
        import tensorflow as tf

        run = tf.function(lambda p: fw.api.encode(p, d_model, dtype=fw.dtypes[dtype], **kwargs))
        return as_float64("tensorflow", run(fw.tensor(positions, "float64")))
    return encode(encoder, positions, d_model, dtype, **kwargs)


@pytest.mark.parametrize("encoder", ENCODERS)
@pytest.mark.parametrize("layout", posenc.LAYOUTS)
@pytest.mark.parametrize("d_model", [1, 7, 33, 64])
def test_encode_float32_layouts_odd_widths_negative_and_fractional(encoder, layout, d_model):
    positions = [[-9_999_999.5, -3.25, 0.0], [0.125, 32767.0, 9_999_999.875]]
    got = encode_any(encoder, positions, d_model, "float32", layout=layout)
    order = posenc.column_order(d_model, layout)
    half = (d_model + 1) // 2
    flat = np.ravel(positions)
    want = exact_at(flat, np.where(order < half, 2 * order, 2 * (order - half) + 1), d_model)
    assert got.shape == (2, 3, d_model)
    assert np.abs(got.reshape(6, d_model) - want).max() <= BOUND["float32"]


@pytest.mark.parametrize("encoder", ENCODERS)
@pytest.mark.parametrize("convention", ["fairseq", "tensor2tensor", "diffusers", "whisper"])
def test_encode_float32_conventions_match_their_float64_tables(encoder, convention):
    # Offsets, padding rows, "h-1" frequencies, zero columns: the float64 route (part 1, ~1e-15)
    # is the reference for each convention's float32 output.
    positions = [[0.0, 1.0, 2.0, 5e5 + 0.5], [7.0, 1e6, 3.0, 123.0]]
    got = encode_any(encoder, positions, 33 if convention != "whisper" else 32, "float32", convention=convention)
    want = encode_any(encoder, positions, 33 if convention != "whisper" else 32, "float64", convention=convention)
    assert np.abs(got - want).max() <= BOUND["float32"]
    assert (got[want == 0] == 0).all()
