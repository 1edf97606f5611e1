"""Property tests of the facts notebook 04 shows: wavelengths, norms, shifts, dot products.

Every expected value is written from the formula here (the base 10000 is a literal, the
layouts are spelled out column by column), never taken from posenc, so a swapped sin/cos,
a wrong base or a wrong column order in posenc makes these tests fail.
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import posenc

TWO_PI = 2 * np.pi

widths = st.integers(1, 160)
even_widths = st.integers(1, 80).map(lambda n: 2 * n)
odd_widths = st.integers(0, 80).map(lambda n: 2 * n + 1)
layouts = st.sampled_from(posenc.LAYOUTS)
# None means "leave base at its default", which must be 10000.
bases = st.one_of(st.none(), st.sampled_from([2.0, 10.0, 100.0, 1e4, 1e6]),
                  st.floats(1.01, 1e8, allow_nan=False))
positions = st.one_of(st.integers(0, 1000), st.integers(-10**6, 10**6),
                      st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False))
offsets = st.one_of(st.integers(-1000, 1000), st.integers(-10**6, 10**6),
                    st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False))


def kw(base, layout="interleaved"):
    """Keyword arguments for posenc, leaving base out when it is None."""
    return {"layout": layout} | ({} if base is None else {"base": base})


def rates(d_model, base):
    """w_i = base^(-2i/d) for i = 0 .. ceil(d/2) - 1, from the formula."""
    base = 10000.0 if base is None else base
    return base ** (-2.0 * np.arange((d_model + 1) // 2) / d_model)


def pair_columns(d_model, layout):
    """For each pair i, the column of its sine and of its cosine (None if it has none)."""
    h, n_cos = (d_model + 1) // 2, d_model // 2
    sines, cosines = [], []
    for i in range(h):
        if layout == "interleaved":
            s, c = 2 * i, 2 * i + 1
        elif layout == "sin_cos":
            s, c = i, h + i
        else:  # cos_sin
            s, c = n_cos + i, i
        sines.append(s)
        cosines.append(c if i < n_cos else None)
    return sines, cosines


def reference(pos, d_model, base, layout):
    """PE(pos) from the formula, columns placed by ``pair_columns``: (len(pos), d_model)."""
    pos = np.asarray(pos, dtype=np.float64)
    out = np.full((pos.size, d_model), np.nan)
    sines, cosines = pair_columns(d_model, layout)
    for i, w in enumerate(rates(d_model, base)):
        out[:, sines[i]] = np.sin(pos * w)
        if cosines[i] is not None:
            out[:, cosines[i]] = np.cos(pos * w)
    assert not np.isnan(out).any()
    return out


def pe(pos, d_model, base, layout="interleaved"):
    return posenc.encode(np.asarray(pos, dtype=np.float64), d_model, dtype=np.float64, **kw(base, layout))


# --- 1. wavelengths ---------------------------------------------------------------------


@given(widths, bases)
def test_wavelengths_are_a_geometric_progression_from_2pi_to_nearly_base_times_2pi(d_model, base):
    lengths = posenc.wavelengths(d_model, **({} if base is None else {"base": base}))
    b = 10000.0 if base is None else base
    h = (d_model + 1) // 2
    assert lengths.shape == (h,) and lengths.dtype == np.float64
    np.testing.assert_allclose(lengths, TWO_PI / rates(d_model, base), rtol=1e-12)
    assert lengths[0] == pytest.approx(TWO_PI, rel=1e-15)
    np.testing.assert_allclose(lengths[1:] / lengths[:-1], b ** (2 / d_model), rtol=1e-12)
    assert lengths[-1] == pytest.approx(TWO_PI * b ** (2 * (h - 1) / d_model), rel=1e-12)
    assert lengths[-1] < TWO_PI * b


@given(widths, bases, layouts, positions)
def test_every_column_has_its_pairs_wavelength_and_phase(d_model, base, layout, p):
    # The table matches the formula column by column: catches a swapped sin/cos, a wrong
    # base and a wrong column order, at large and fractional positions too.
    tol = 1e-12 * (1 + abs(p))
    np.testing.assert_allclose(pe([p], d_model, base, layout), reference([p], d_model, base, layout), atol=tol)
    # Shifting by the wavelength of pair i brings pair i's columns back to the same values.
    lengths = TWO_PI / rates(d_model, base)
    sines, cosines = pair_columns(d_model, layout)
    rows = pe(p + lengths, d_model, base, layout)
    here = pe([p], d_model, base, layout)[0]
    for i, row in enumerate(rows):
        cols = [c for c in (sines[i], cosines[i]) if c is not None]
        np.testing.assert_allclose(row[cols], here[cols], atol=1e-13 * (1 + abs(p) + lengths[i]))


@given(widths, layouts)
def test_row_zero_is_0_at_sines_1_at_cosines_and_a_quarter_turn_swaps_them(d_model, layout):
    sines, cosines = pair_columns(d_model, layout)
    row = pe([0], d_model, None, layout)[0]
    assert all(row[s] == 0 for s in sines) and all(row[c] == 1 for c in cosines if c is not None)
    lengths = TWO_PI / rates(d_model, None)
    i = len(lengths) - 1
    quarter = pe([lengths[i] / 4], d_model, None, layout)[0]
    assert quarter[sines[i]] == pytest.approx(1, abs=1e-12)
    if cosines[i] is not None:
        assert quarter[cosines[i]] == pytest.approx(0, abs=1e-12)


# --- 3. norms and distinct rows ---------------------------------------------------------


@given(even_widths, bases, layouts, st.lists(positions, min_size=1, max_size=20))
def test_even_width_rows_have_norm_sqrt_half_d(d_model, base, layout, ps):
    norms = np.linalg.norm(pe(ps, d_model, base, layout), axis=1)
    np.testing.assert_allclose(norms, np.sqrt(d_model / 2), rtol=1e-13)


@given(odd_widths, bases, layouts, st.lists(positions, min_size=1, max_size=20))
def test_odd_width_norm_squared_is_pairs_plus_the_lone_sine_squared(d_model, base, layout, ps):
    # The last sine has no cosine: |PE(p)|^2 = (d - 1)/2 + sin^2(p w_last), in [(d-1)/2, (d+1)/2].
    squared = np.sum(pe(ps, d_model, base, layout) ** 2, axis=1)
    lone = np.sin(np.asarray(ps, dtype=np.float64) * rates(d_model, base)[-1])
    np.testing.assert_allclose(squared, (d_model - 1) / 2 + lone**2, atol=1e-11 * d_model)


@settings(deadline=None, max_examples=40)
@given(st.integers(2, 160), bases, st.integers(2, 1500), st.sampled_from([0, 997, 10**5, 10**6]))
def test_rows_are_distinct_over_long_ranges(d_model, base, length, start):
    table = pe(np.arange(start, start + length), d_model, base)
    squared = np.sum(table**2, axis=1)
    gram = table @ table.T
    distances = squared[:, None] + squared[None, :] - 2 * gram
    np.fill_diagonal(distances, np.inf)
    # Pair 0 turns one radian per position, so rows p != q differ in it by 2|sin((q - p)/2)|,
    # never 0 for integers; below 1500 apart the smallest squared distance is 3.6e-9 (at 710).
    assert distances.min() > 1e-9


@given(even_widths, bases, layouts, positions, positions, offsets)
def test_distance_between_positions_depends_only_on_their_offset(d_model, base, layout, p, q, k):
    rows = pe([p, p + k, q, q + k], d_model, base, layout)
    d_p, d_q = np.linalg.norm(rows[1] - rows[0]), np.linalg.norm(rows[3] - rows[2])
    # |PE(p + k) - PE(p)|^2 = sum_i 2 - 2 cos(k w_i) = sum_i (2 sin(k w_i / 2))^2, no cancellation.
    expected = np.sqrt(np.sum((2 * np.sin(k * rates(d_model, base) / 2)) ** 2))
    tol = 1e-13 * d_model * (1 + abs(p) + abs(q) + abs(k))
    assert d_p == pytest.approx(expected, abs=tol) and d_q == pytest.approx(expected, abs=tol)


# --- 4. the shift matrix ----------------------------------------------------------------


@given(even_widths, bases, layouts, st.lists(positions, min_size=1, max_size=10), offsets)
def test_shift_matrix_moves_every_position_by_k(d_model, base, layout, ps, k):
    m = posenc.shift_matrix(k, d_model, **kw(base, layout))
    assert m.shape == (d_model, d_model) and m.dtype == np.float64
    before = pe(ps, d_model, base, layout)
    after = reference(np.asarray(ps, dtype=np.float64) + k, d_model, base, layout)
    tol = 1e-13 * (1 + max(abs(p) for p in ps) + abs(k))
    np.testing.assert_allclose(before @ m.T, after, atol=tol)  # rows
    np.testing.assert_allclose((m @ before.T).T, after, atol=tol)  # column vectors, M from the left


@settings(deadline=None)
@given(even_widths, bases, layouts, st.integers(2, 3000), st.data(),
       st.sampled_from([np.float64, np.float32]))
def test_shift_matrix_moves_the_rows_of_a_table(d_model, base, layout, length, data, dtype):
    # positional_encoding builds tables its own way (rotating blocks of rows): the same fact.
    k = data.draw(st.integers(1, length - 1), label="k")
    rows = posenc.positional_encoding(length, d_model, dtype=dtype, **kw(base, layout)).astype(np.float64)
    m = posenc.shift_matrix(k, d_model, **kw(base, layout))
    tol = 1e-12 if dtype == np.float64 else 1e-6
    np.testing.assert_allclose(rows[:-k] @ m.T, rows[k:], atol=tol * d_model)
    np.testing.assert_allclose(rows[[0, k]], reference([0, k], d_model, base, layout), atol=tol)


@given(even_widths, bases, offsets)
def test_interleaved_shift_matrix_is_block_diagonal_rotations(d_model, base, k):
    expected = np.zeros((d_model, d_model))
    for i, w in enumerate(rates(d_model, base)):
        c, s = np.cos(k * w), np.sin(k * w)
        expected[2 * i : 2 * i + 2, 2 * i : 2 * i + 2] = [[c, s], [-s, c]]
    np.testing.assert_allclose(posenc.shift_matrix(k, d_model, **kw(base)), expected, atol=1e-15)


@given(even_widths, bases, layouts, offsets, offsets)
def test_shift_matrices_compose_invert_and_are_orthogonal(d_model, base, layout, j, k):
    def m(offset):
        return posenc.shift_matrix(offset, d_model, **kw(base, layout))

    eye = np.eye(d_model)
    np.testing.assert_array_equal(m(0), eye)
    np.testing.assert_allclose(m(k) @ m(k).T, eye, atol=1e-13)
    np.testing.assert_allclose(m(-k), m(k).T, atol=1e-15)
    np.testing.assert_allclose(m(j) @ m(k), m(j + k), atol=1e-13 * d_model * (1 + abs(j) + abs(k)))


@given(odd_widths, layouts, offsets)
def test_odd_width_has_no_shift_matrix(d_model, layout, k):
    with pytest.raises(ValueError) as caught:
        posenc.shift_matrix(k, d_model, layout=layout)
    assert str(caught.value) == (f"d_model must be even for a shift matrix, got {d_model}: the last column of an odd width is "
                                 "a sine with no cosine partner, so PE(p + k) is not a linear function of PE(p)")


@given(odd_widths.filter(lambda d: d > 1), bases, positions, offsets)
def test_odd_width_complete_pairs_still_rotate(d_model, base, p, k):
    # The first d-1 interleaved columns are complete pairs: they rotate like an even table.
    before, after = pe([p], d_model, base)[0, :-1], pe([p + k], d_model, base)[0, :-1]
    for i, w in enumerate(rates(d_model, base)[:-1]):
        c, s = np.cos(k * w), np.sin(k * w)
        rotated = np.array([[c, s], [-s, c]]) @ before[2 * i : 2 * i + 2]
        np.testing.assert_allclose(rotated, after[2 * i : 2 * i + 2], atol=1e-13 * (1 + abs(p) + abs(k)))


@pytest.mark.parametrize(
    ("args", "error", "message"),
    [
        (("1", 4), TypeError, "k must be a real number"),
        ((True, 4), TypeError, "k must be a real number"),
        ((float("nan"), 4), ValueError, "k must be a finite real number"),
        ((float("inf"), 4), ValueError, "k must be a finite real number"),
        ((1, 0), ValueError, "d_model must be an int >= 1"),
        ((1, 4.0), TypeError, "d_model must be an int >= 1"),
        ((1, 5), ValueError, "no cosine partner"),
    ],
)
def test_shift_matrix_rejects_bad_arguments(args, error, message):
    with pytest.raises(error, match=message):
        posenc.shift_matrix(*args)


def test_shift_matrix_rejects_bad_base_and_layout():
    with pytest.raises(ValueError, match="base must be"):
        posenc.shift_matrix(1, 4, base=1.0)
    with pytest.raises(ValueError, match="layout must be one of"):
        posenc.shift_matrix(1, 4, layout="sincos")
    with pytest.raises(TypeError):
        posenc.shift_matrix(1, 4, 10000.0)  # base and layout are keyword-only


def test_shift_matrix_accepts_numpy_scalars():
    np.testing.assert_array_equal(posenc.shift_matrix(np.int64(3), 6), posenc.shift_matrix(3, 6))
    np.testing.assert_array_equal(posenc.shift_matrix(np.float32(0.5), 6), posenc.shift_matrix(0.5, 6))


# --- 5. the dot product of two positions ------------------------------------------------


@given(even_widths, bases, layouts, positions, offsets)
def test_dot_product_is_the_sum_of_cos_k_w_whatever_p(d_model, base, layout, p, k):
    rows = pe([p, p + k, p - k], d_model, base, layout)
    expected = np.sum(np.cos(k * rates(d_model, base)))
    tol = 1e-13 * d_model * (1 + abs(p) + abs(k))
    assert rows[0] @ rows[1] == pytest.approx(expected, abs=tol)  # depends on k only
    assert rows[0] @ rows[2] == pytest.approx(expected, abs=tol)  # symmetric: f(-k) = f(k)
    assert rows[0] @ rows[1] <= d_model / 2 + tol  # never above f(0) = |PE|^2


@given(odd_widths, bases, positions, offsets)
def test_odd_width_dot_product_adds_the_lone_sines_which_depend_on_p(d_model, base, p, k):
    rows = pe([p, p + k], d_model, base)
    w = rates(d_model, base)
    expected = np.sum(np.cos(k * w[:-1])) + np.sin(p * w[-1]) * np.sin((p + k) * w[-1])
    assert rows[0] @ rows[1] == pytest.approx(expected, abs=1e-13 * d_model * (1 + abs(p) + abs(k)))


@settings(deadline=None, max_examples=30)
@given(even_widths, bases, layouts, st.integers(2, 300), st.integers(0, 10**6))
def test_similarity_matrix_is_constant_along_diagonals(d_model, base, layout, length, start):
    table = pe(np.arange(start, start + length), d_model, base, layout)
    gram = table @ table.T
    f = np.cos(np.arange(length)[:, None] * rates(d_model, base)).sum(axis=1)
    k = np.abs(np.subtract.outer(np.arange(length), np.arange(length)))
    np.testing.assert_allclose(gram, f[k], atol=1e-13 * d_model * (1 + start + length))
