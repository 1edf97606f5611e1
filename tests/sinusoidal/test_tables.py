"""posenc's NumPy core against the lectures' numbers, an independent formula and mpmath."""

import os

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import posenc
from posenc.engine import rotation as _rotation
from posenc.engine import kernels
from posenc.engine.backends import backend
from lecture_values import (
    CORNERS_20x200,
    DENOMINATORS_D6,
    DENOMINATORS_D64_HEAD,
    SAMPLE_2x5x2,
    SAMPLE_PLUS_PE,
    SINES_D64_ROW1_HEAD,
    TABLE_10x6,
    TABLE_10x6_4DP,
)
from messages import assert_raises_naming
from reference import exact_rows, paper_table

# --- the lectures' printed numbers -------------------------------------------------------


def test_reproduces_seed_000_table_to_its_8_digits():
    np.testing.assert_allclose(posenc.positional_encoding(10, 6), TABLE_10x6, rtol=0, atol=1e-7)


def test_reproduces_seed_002_table_to_its_4_decimals():
    np.testing.assert_allclose(posenc.positional_encoding(10, 6), TABLE_10x6_4DP, rtol=0, atol=5e-5)


def test_denominators_are_those_the_lectures_printed():
    # Printed from float32: 7 significant digits.
    np.testing.assert_allclose(posenc.denominators(6), DENOMINATORS_D6, rtol=5e-7)
    np.testing.assert_allclose(posenc.denominators(64)[:6], DENOMINATORS_D64_HEAD, rtol=5e-5)
    np.testing.assert_allclose(posenc.positional_encoding(2, 64)[1, 0:12:2], SINES_D64_ROW1_HEAD, atol=5e-6)


def test_reproduces_seed_001_output_in_cos_sin_order():
    pe = posenc.positional_encoding(5, 2, layout="cos_sin")
    np.testing.assert_allclose(SAMPLE_2x5x2 + pe, SAMPLE_PLUS_PE, rtol=0, atol=2e-7)


@pytest.mark.parametrize("row", sorted(CORNERS_20x200))
def test_reproduces_seed_004_corners(row):
    pe = posenc.positional_encoding(20, 200)
    first, last = CORNERS_20x200[row]
    np.testing.assert_allclose(pe[row, :3], first, atol=5e-5)
    np.testing.assert_allclose(pe[row, -3:], last, atol=5e-5)


# --- the formula ------------------------------------------------------------------------


@pytest.mark.parametrize("d_model", [1, 2, 3, 6, 7, 64, 513])
@pytest.mark.parametrize("base", [10000.0, 100.0, 1e5])
def test_matches_the_formula_column_by_column(d_model, base):
    table = posenc.positional_encoding(300, d_model, base=base, dtype=np.float64)
    np.testing.assert_allclose(table, paper_table(np.arange(300), d_model, base), rtol=0, atol=1e-12)


def test_first_pair_is_sin_and_cos_of_the_position():
    # Frequency 1 at i = 0 whatever the base: catches a swapped sin/cos directly. Rows past 16 are
    # products of two rotations (_turns), a few ulps from the sines of NumPy's libm (4.4e-16 seen
    # with NumPy 1.26).
    table = posenc.positional_encoding(50, 8, dtype=np.float64)
    np.testing.assert_allclose(table[:, 0], np.sin(np.arange(50.0)), rtol=0, atol=1e-15)
    np.testing.assert_allclose(table[:, 1], np.cos(np.arange(50.0)), rtol=0, atol=1e-15)
    np.testing.assert_array_equal(table[0], [0, 1] * 4)


def test_second_pair_uses_base_to_the_2_over_d():
    # Catches a wrong base and a missing //2 (which would give base^(1/d) or base^(3/d)).
    table = posenc.positional_encoding(50, 8, dtype=np.float64)
    np.testing.assert_allclose(table[:, 2], np.sin(np.arange(50.0) / 10000 ** 0.25), atol=1e-14)
    np.testing.assert_allclose(table[:, 3], np.cos(np.arange(50.0) / 10000 ** 0.25), atol=1e-14)


@pytest.mark.parametrize("positions", [[0, 1, 5, 17, 99], [1000, 12345, 65535, 100000]])
def test_float32_within_1e_6_of_mpmath_up_to_100000(positions):
    table = posenc.encode(positions, 512)
    assert table.dtype == np.float32
    np.testing.assert_allclose(table, exact_rows(positions, 512), rtol=0, atol=1e-6)


def test_float64_matches_mpmath_closely():
    positions = [3, 4097, 99999]
    table = posenc.encode(positions, 64, dtype=np.float64)
    np.testing.assert_allclose(table, exact_rows(positions, 64), rtol=0, atol=1e-10)


def test_lecture_float32_route_is_what_loses_accuracy():
    # The lectures divide float32 positions by float32 denominators; at 32767 that is
    # off by about 1e-3 while posenc stays within a float32 rounding.
    position = np.float32(32767)
    lecture = np.sin(position / np.power(10000, np.arange(0, 512, 2, dtype=np.float32) / 512))
    reference = exact_rows([32767], 512)[0, 0::2]
    assert np.abs(lecture - reference).max() > 1e-4
    assert np.abs(posenc.encode([32767], 512)[0, 0::2] - reference).max() < 1e-7


# --- steps, layouts, shapes, dtypes ---------------------------------------------------------


def test_steps_compose_to_the_table():
    theta = posenc.angles(np.arange(10), 6)
    np.testing.assert_allclose(theta, np.arange(10)[:, None] / posenc.denominators(6), rtol=1e-15)
    np.testing.assert_allclose(posenc.frequencies(6), 1 / posenc.denominators(6), rtol=1e-15)
    table = posenc.interleave(np.sin(theta), np.cos(theta))
    np.testing.assert_allclose(table, posenc.positional_encoding(10, 6, dtype=np.float64), atol=0)


def test_interleave_alternates_columns():
    np.testing.assert_array_equal(posenc.interleave([[1, 2]], [[10, 20]]), [[1, 10, 2, 20]])
    with pytest.raises(ValueError, match=r"same shape, got \(2,\) and \(3,\)"):
        posenc.interleave([1, 2], [1, 2, 3])


@pytest.mark.parametrize("d_model", [1, 2, 5, 6, 9])
def test_layouts_hold_the_same_columns_reordered(d_model):
    half, n_cos = (d_model + 1) // 2, d_model // 2
    ref = paper_table(np.arange(40), d_model)
    sin_cos = posenc.positional_encoding(40, d_model, layout="sin_cos", dtype=np.float64)
    cos_sin = posenc.positional_encoding(40, d_model, layout="cos_sin", dtype=np.float64)
    np.testing.assert_allclose(sin_cos[:, :half], ref[:, 0::2], atol=1e-15)
    np.testing.assert_allclose(sin_cos[:, half:], ref[:, 1::2], atol=1e-15)
    np.testing.assert_allclose(cos_sin[:, :n_cos], ref[:, 1::2], atol=1e-15)
    np.testing.assert_allclose(cos_sin[:, n_cos:], ref[:, 0::2], atol=1e-15)
    for layout, table in [("sin_cos", sin_cos), ("cos_sin", cos_sin)]:
        order = posenc.column_order(d_model, layout)
        interleaved_order = posenc.column_order(d_model)
        # The same permutation maps the interleaved table onto this one.
        assert sorted(order) == sorted(interleaved_order)
        perm = [list(interleaved_order).index(j) for j in order]
        np.testing.assert_allclose(table, ref[:, perm], atol=1e-15)


def test_odd_width_ends_with_a_sine():
    table = posenc.positional_encoding(20, 7, dtype=np.float64)
    assert table.shape == (20, 7)
    np.testing.assert_allclose(table[:, 6], np.sin(np.arange(20) / 10000 ** (6 / 7)), atol=1e-15)


def test_encode_shapes_and_fractional_positions():
    positions = np.array([[0.5, 2.25, 7.0], [-3.0, 1e4, 0.0]])
    out = posenc.encode(positions, 10, dtype=np.float64)
    assert out.shape == (2, 3, 10)
    np.testing.assert_allclose(out, paper_table(positions, 10), atol=1e-12)
    assert posenc.encode(3, 4).shape == (4,)
    # Two float32 routes (reduction in half turns; rotation), each within 2e-7 of the exact table.
    exact_table = paper_table(np.arange(9), 6)
    for table in [posenc.encode(np.arange(9), 6), posenc.positional_encoding(9, 6)]:
        np.testing.assert_allclose(table, exact_table, rtol=0, atol=2e-7)


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64, "float32"])
def test_dtypes(dtype):
    table = posenc.positional_encoding(30, 6, dtype=dtype)
    assert table.dtype == np.dtype(dtype)
    np.testing.assert_allclose(table, paper_table(np.arange(30), 6), atol=np.finfo(dtype).eps)


def test_empty_table():
    assert posenc.positional_encoding(0, 4).shape == (0, 4)


def test_nothing_is_printed(capsys):
    posenc.positional_encoding(5, 4)
    assert capsys.readouterr() == ("", "")


# --- bad input ----------------------------------------------------------------------------

BAD_TABLE_ARGS = [
    (dict(length=-1), ValueError, ["length", "-1", "non-negative int"]),
    (dict(length=True), TypeError, ["length", "True", "non-negative int"]),
    (dict(length=3.0), TypeError, ["length", "3.0", "non-negative int"]),
    (dict(length="8"), TypeError, ["length", "'8'"]),
    (dict(offset="x"), TypeError, ["offset must be a real number", "'x'"]),
    (dict(offset=float("nan")), ValueError, ["offset must be a finite real number", "nan"]),
    (dict(d_model=0), ValueError, ["d_model", "0", ">= 1"]),
    (dict(d_model=4.0), TypeError, ["d_model", "4.0"]),
    (dict(d_model=None), TypeError, ["d_model", "None"]),
    (dict(base=1), ValueError, ["base", "1", "> 1"]),
    (dict(base=0.5), ValueError, ["base", "0.5", "> 1"]),
    (dict(base=float("inf")), ValueError, ["base", "inf", "finite"]),
    (dict(base=float("nan")), ValueError, ["base", "nan"]),
    (dict(base="10000"), TypeError, ["base", "'10000'"]),
    (dict(base=True), TypeError, ["base", "True"]),
    (dict(layout="concat"), ValueError, ["layout", "'concat'", "'interleaved'", "'sin_cos'", "'cos_sin'"]),
    (dict(dtype=np.int32), TypeError, ["dtype", "int32", "numpy.float32"]),
    (dict(dtype="bfloat17"), TypeError, ["dtype", "'bfloat17'"]),
    (dict(dtype=np.complex64), TypeError, ["dtype", "complex64"]),
]


@pytest.mark.parametrize("kwargs, error, words", BAD_TABLE_ARGS, ids=lambda v: repr(v)[:40])
def test_bad_table_arguments_are_named(kwargs, error, words):
    args = dict(length=4, d_model=6) | kwargs
    assert_raises_naming(lambda: posenc.positional_encoding(args.pop("length"), args.pop("d_model"), **args),
                         error, words)


@pytest.mark.parametrize("positions, error, words", [
    ([1.0, float("nan")], ValueError, ["positions", "finite", "NaN", "an array of shape (2,)"]),
    ([float("inf")], ValueError, ["positions", "finite"]),
    ([True, False], TypeError, ["positions", "bool"]),
    (["a", "b"], TypeError, ["positions", "['a', 'b']"]),  # the strings themselves, not NumPy's <U1
    ([1j], TypeError, ["positions", "complex"]),
    ([[1, 2], [3]], TypeError, ["positions", "[[1, 2], [3]]"]),
])
def test_bad_positions_are_named(positions, error, words):
    assert_raises_naming(lambda: posenc.encode(positions, 4), error, words)


# --- properties over many sizes -------------------------------------------------------------

widths = st.integers(1, 300)
bases = st.floats(1.5, 1e6)


@settings(max_examples=60, deadline=None)
@given(length=st.integers(0, 200), d_model=widths, base=bases)
def test_property_matches_formula(length, d_model, base):
    table = posenc.positional_encoding(length, d_model, base=base, dtype=np.float64)
    assert table.shape == (length, d_model)
    np.testing.assert_allclose(table, paper_table(np.arange(length), d_model, base), atol=1e-11)


@settings(max_examples=60, deadline=None)
@given(d_model=widths, positions=st.lists(st.floats(-1e5, 1e5), min_size=1, max_size=20))
def test_property_each_pair_lies_on_the_unit_circle(d_model, positions):
    out = posenc.encode(positions, d_model, dtype=np.float64)
    full = out[..., : 2 * (d_model // 2)]
    np.testing.assert_allclose(full[..., 0::2] ** 2 + full[..., 1::2] ** 2, 1.0, atol=1e-12)


@pytest.mark.parametrize("cores", [2, 3])
@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_encode_split_over_cores_writes_what_one_thread_writes(monkeypatch, cores, dtype):
    # 2**20 elements and more are split in one run of rows per core (_rotation._over_cores).
    positions = np.random.default_rng(3).uniform(-1e6, 1e6, (3, 1001))
    one_thread = posenc.encode(positions[:, :7], 512, dtype=dtype)  # below the split
    monkeypatch.setattr(os, "cpu_count", lambda: cores)
    runs = []
    real_write = kernels.write_sin_cos
    monkeypatch.setattr(kernels, "write_sin_cos", lambda xp, p, *rest: runs.append(len(p)) or real_write(xp, p, *rest))
    split = posenc.encode(positions, 512, dtype=dtype)
    assert sorted(runs) == sorted(3003 * k // cores - 3003 * (k - 1) // cores for k in range(1, cores + 1))
    np.testing.assert_array_equal(split[:, :7], one_thread)
    for row in [0, 1500, 3002]:
        np.testing.assert_array_equal(split.reshape(-1, 512)[row], posenc.encode(positions.reshape(-1)[row], 512, dtype=dtype))


# --- branches no table of ordinary size reaches ----------------------------------------------


def test_turns_beyond_16_steps_are_the_product_of_two_tables():
    # _turns builds more than _DIRECT_TURNS steps as coarse * fine (_turn_pair), recursively:
    # 5000 steps of stride 3 go two levels deep. Against sincos of each angle directly.
    assert _rotation._DIRECT_TURNS == 16
    w_hi, w_lo = _rotation.geometric_parts(32, 10000.0, 32)
    turns = _rotation._turns(5000, 3, w_hi, w_lo)
    s, c = kernels.sincos(backend("numpy"), np.arange(5000) * 3.0, w_hi, w_lo)
    assert turns.shape == (5000, 32) and turns.dtype == np.complex128
    np.testing.assert_allclose(turns.real, c, rtol=0, atol=2e-15)
    np.testing.assert_allclose(turns.imag, s, rtol=0, atol=2e-15)
    coarse, fine = _rotation._turn_pair(5000, 3, w_hi, w_lo)
    assert (len(coarse), len(fine)) == (71, 71)  # ceil(5000 / 71) rows of 71 steps


def test_a_small_table_built_as_a_product_is_still_the_direct_sines_rounded_once():
    # 50 rows are 7 coarse x 8 fine turns; the product's few 1e-16 move no float32 entry.
    w_hi, w_lo = _rotation.geometric_parts(256, 10000.0, 256)
    s, c = kernels.sincos(backend("numpy"), np.arange(50.0), w_hi, w_lo)
    direct = np.stack([s, c], axis=-1).reshape(50, 512).astype(np.float32)
    np.testing.assert_array_equal(posenc.positional_encoding(50, 512), direct)


@pytest.mark.parametrize("offset", [0.5, -2.25, 1e6 + 0.125])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_fractional_offset_shifts_every_row(offset, dtype):
    # Row k of the table is position offset + k, whatever the offset; 300 rows: several blocks.
    table = posenc.positional_encoding(300, 10, offset=offset, dtype=dtype)
    positions = offset + np.arange(300)
    exact_table = exact_rows(positions[[0, 1, 64, 299]], 10)
    np.testing.assert_allclose(table[[0, 1, 64, 299]], exact_table, rtol=0, atol=2e-7 if dtype == np.float32 else 1e-14)
    np.testing.assert_allclose(table, posenc.encode(positions, 10, dtype=dtype), rtol=0, atol=4e-7 if dtype == np.float32 else 1e-14)
    assert posenc.sinusoidal.conventions.resolve("paper", offset=offset).offset == offset


def test_fractional_offset_meets_no_padding_row():
    # fairseq zeroes the row of position padding_idx; with positions offset + k for a
    # fractional offset there is none, while encode zeroes a position that lands on it.
    table = posenc.positional_encoding(6, 8, convention="fairseq", offset=0.5)
    assert np.all(np.abs(table).sum(axis=1) > 0)
    encoded = posenc.encode([0.5, 0.0], 8, convention="fairseq", offset=0.5)  # positions 1 and 0.5
    assert not encoded[0].any() and encoded[1].all()
    np.testing.assert_allclose(encoded[1], table[0], rtol=0, atol=4e-7)


def test_blocks_of_a_table_are_about_the_square_root_of_its_length():
    # B rows per block and L / B blocks: both near sqrt(L), so B + L / B rows of trig are
    # computed. B is a power of two with L < B**2 <= 4 L, and 64 below 4096 rows.
    for length in [0, 1, 64, 65, 4095]:
        assert _rotation.block_rows(length) == 64
    for length in [4096, 5000, 65535, 65536, 10**6, 10**7, 2**26]:
        rows = _rotation.block_rows(length)
        assert rows & (rows - 1) == 0 and length < rows**2 <= 4 * length, (length, rows)


def test_dtype_and_out_errors_in_full():
    with pytest.raises(TypeError) as caught:
        posenc.positional_encoding(4, 6, dtype=np.int32)
    assert str(caught.value) == "dtype must be one of numpy.float16, numpy.float32, numpy.float64; got dtype('int32')"
    with pytest.raises(TypeError) as caught:  # NumPy would read None as float64; the default is float32
        posenc.positional_encoding(4, 6, dtype=None)
    assert str(caught.value) == "dtype must be one of numpy.float16, numpy.float32, numpy.float64; got None"
    with pytest.raises(TypeError) as caught:
        posenc.positional_encoding(4, 6, base="10000")
    assert str(caught.value) == "base must be a real number > 1, got '10000' (str)"
    out = np.zeros((4, 6), np.float32)
    out.flags.writeable = False
    with pytest.raises(ValueError) as caught:
        posenc.positional_encoding(4, 6, out=out)
    assert str(caught.value) == "out must be writeable, got a read-only array"


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_column_major_out_is_written_like_any_other(dtype):
    # out may be any writeable array of the table's shape and dtype: a Fortran-ordered one
    # has its rows strided, so the table goes through the scratch rows, not a complex view.
    out = np.asfortranarray(np.full((300, 10), np.nan, dtype))
    assert posenc.positional_encoding(300, 10, dtype=dtype, out=out) is out
    np.testing.assert_array_equal(out, posenc.positional_encoding(300, 10, dtype=dtype))
