"""posenc.plot draws what it says: the data, the labels, a colorbar where colours carry values,
and the picture its docstrings describe.

The pictures are checked as matplotlib checks its own (``matplotlib.testing.compare``): each
function's figure is rendered next to a reference drawn here with plain matplotlib calls
following the documented design, and the two PNGs must match pixel for pixel. Both are drawn
in the same process with matplotlib's default style, so fonts cannot make them differ.

(That ``import posenc`` alone leaves matplotlib unloaded is checked in test_packaging.py.)
"""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from matplotlib.axes import Axes  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.testing.compare import compare_images  # noqa: E402

import posenc  # noqa: E402
import posenc.plot  # noqa: E402


@pytest.fixture(autouse=True)
def close_figures():
    # matplotlib's own test style ("mpl20", the defaults), whatever the user's matplotlibrc says
    with matplotlib.style.context("mpl20"):
        yield
    plt.close("all")


@pytest.fixture
def same_picture(tmp_path):
    """``same_picture(figure, reference)``: the two render to identical PNGs."""
    def check(figure, reference):
        figure.savefig(tmp_path / "drawn.png")
        reference.savefig(tmp_path / "expected.png")
        difference = compare_images(str(tmp_path / "expected.png"), str(tmp_path / "drawn.png"), tol=0)
        assert difference is None, difference
    return check


def has_colorbar(ax):
    return any(image.colorbar is not None for image in ax.images)


def test_heatmap_shows_the_table_with_a_colorbar():
    table = posenc.positional_encoding(30, 16)
    ax = posenc.plot.heatmap(table)
    assert isinstance(ax, Axes)
    np.testing.assert_array_equal(ax.images[0].get_array(), table)
    assert ax.get_xlabel() == "dimension (column)" and ax.get_ylabel() == "position"
    assert has_colorbar(ax)
    assert ax.images[0].get_clim() == (-1.0, 1.0)  # symmetric about 0 for a diverging map


def test_heatmap_draws_on_the_given_axes_and_can_skip_the_colorbar():
    fig, (left, right) = plt.subplots(1, 2)
    assert posenc.plot.heatmap(np.eye(3), right, colorbar=False, vmin=0, vmax=1, title="bits") is right
    assert not left.images and not has_colorbar(right)
    assert right.images[0].get_clim() == (0, 1) and right.get_title() == "bits"
    assert len(fig.axes) == 2


def test_heatmap_rejects_a_vector():
    with pytest.raises(ValueError, match="must be 2-D"):
        posenc.plot.heatmap(np.zeros(5))


def test_columns_plots_each_chosen_column_against_position():
    table = posenc.positional_encoding(40, 8)
    ax = posenc.plot.columns(table, [0, 3, 6])
    assert [line.get_label() for line in ax.lines] == ["column 0", "column 3", "column 6"]
    for line, col in zip(ax.lines, [0, 3, 6]):
        np.testing.assert_array_equal(line.get_xdata(), np.arange(40))
        np.testing.assert_array_equal(line.get_ydata(), table[:, col])
    assert ax.get_xlabel() == "position" and ax.get_ylabel()
    assert ax.get_legend() is not None


@pytest.mark.parametrize("layout", posenc.LAYOUTS)
@pytest.mark.parametrize("d_model", [6, 7])
def test_wavelengths_plot_one_point_per_column_on_a_log_axis(layout, d_model):
    ax = posenc.plot.wavelengths(d_model, 100.0, layout=layout)
    assert ax.get_yscale() == "log"
    sines, cosines = ax.lines[0], ax.lines[1]
    assert len(sines.get_xdata()) == (d_model + 1) // 2 and len(cosines.get_xdata()) == d_model // 2
    lengths = posenc.wavelengths(d_model, 100.0)
    # Every column's wavelength is one of the pairs', each pair's appears for its sine.
    assert sorted(sines.get_ydata()) == pytest.approx(sorted(lengths))
    assert set(np.round(cosines.get_ydata(), 9)) <= set(np.round(lengths, 9))
    columns = sorted([*sines.get_xdata(), *cosines.get_xdata()])
    assert columns == list(range(d_model))
    assert "wavelength" in ax.get_ylabel() and "column" in ax.get_xlabel()
    # The dashed lines at the two ends of the progression, 2 pi and 2 pi * base.
    assert np.array([line.get_ydata() for line in ax.lines[2:]]) == pytest.approx(np.array([[2 * np.pi] * 2, [200 * np.pi] * 2]))


def test_wavelengths_of_the_interleaved_layout_rise_pair_by_pair():
    ax = posenc.plot.wavelengths(8)
    sines = ax.lines[0]
    np.testing.assert_array_equal(sines.get_xdata(), [0, 2, 4, 6])
    np.testing.assert_allclose(sines.get_ydata(), 2 * np.pi * 10000 ** (np.arange(4) / 4))


def test_similarity_is_the_matrix_of_dot_products():
    table = posenc.positional_encoding(25, 12, dtype=np.float64)
    ax = posenc.plot.similarity(table)
    np.testing.assert_allclose(ax.images[0].get_array(), table @ table.T)
    assert has_colorbar(ax)
    assert ax.get_xlabel() == "position q" and ax.get_ylabel() == "position p"


def test_dot_by_offset_plots_pe_p_dot_pe_p_plus_k():
    table = posenc.positional_encoding(50, 16, dtype=np.float64)
    ax = posenc.plot.dot_by_offset(table, positions=(0, 10))
    first, second = ax.lines[0], ax.lines[1]
    np.testing.assert_array_equal(first.get_xdata(), np.arange(50))
    np.testing.assert_allclose(first.get_ydata(), table @ table[0])
    np.testing.assert_array_equal(second.get_xdata(), np.arange(50) - 10)
    np.testing.assert_allclose(second.get_ydata(), table @ table[10])
    assert ax.get_xlabel() == "offset k" and ax.get_ylabel() == "PE(p) · PE(p + k)"
    with pytest.raises(ValueError, match="positions must be rows"):
        posenc.plot.dot_by_offset(table, positions=(50,))


def test_grid_of_tables_has_a_panel_per_width_and_base_and_one_colorbar():
    fig = posenc.plot.grid(20, [8, 16, 32], [100, 10000])
    assert isinstance(fig, Figure)
    panels, colorbar = fig.axes[:6], fig.axes[6:]
    assert len(colorbar) == 1
    np.testing.assert_array_equal(panels[4].images[0].get_array(),
                                  posenc.positional_encoding(20, 16, base=10000))
    assert panels[4].get_title() == "d=16, base=10000"
    assert panels[0].get_ylabel() == "position" and panels[3].get_xlabel()


def test_grid_of_offsets_plots_the_normalised_dot_product():
    fig = posenc.plot.grid(30, [8, 9], [100], kind="offset", max_offset=20)
    assert len(fig.axes) == 2
    line = fig.axes[0].lines[0]
    k = np.arange(21)
    expected = np.cos(np.outer(k, 100 ** (-np.arange(4) / 4))).sum(axis=1) / 4
    np.testing.assert_allclose(line.get_ydata(), expected, atol=1e-12)
    with pytest.raises(ValueError, match="kind must be"):
        posenc.plot.grid(10, [8], [100], kind="heat")


# --- The pictures: each function against a reference drawn from its docstring's design ---

GREY = "0.5"  # the thin zero line and the dashed wavelength bounds


def new_axes(figsize):
    return plt.subplots(figsize=figsize, layout="constrained")[1]


def expected_heatmap(table, ax=None, *, cmap="RdBu_r", vmin=None, vmax=None, colorbar=True,
                     xlabel="dimension (column)", ylabel="position", clabel="value", title=None):
    ax = ax or new_axes((8, 4))
    largest = np.abs(table).max()
    image = ax.imshow(table, cmap=cmap, vmin=-largest if vmin is None else vmin,
                      vmax=largest if vmax is None else vmax, aspect="auto", interpolation="nearest")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if title is not None:
        ax.set_title(title)
    if colorbar:
        ax.figure.colorbar(image, ax=ax, label=clabel)
    return ax


# A tall table whose largest magnitude is a negative entry (min -1, max 0.6): a one-sided
# vmin/vmax must still take the other end from the largest magnitude, not from the data.
SKEWED = 0.8 * posenc.positional_encoding(100, 512, dtype=np.float64) - 0.2


@pytest.mark.parametrize(("table", "options"), [
    (SKEWED, {}),
    (SKEWED, {"cmap": "viridis"}),
    (SKEWED, {"vmin": -0.25}),
    (-SKEWED, {"vmax": 0.5}),
    (SKEWED, {"vmin": 0, "vmax": 1}),
    (SKEWED, {"colorbar": False}),
    (SKEWED, {"title": "PE", "xlabel": "i", "ylabel": "pos", "clabel": "PE(pos, i)"}),
], ids=["defaults", "cmap", "vmin", "vmax", "both", "no colorbar", "labels"])
def test_heatmap_draws_the_documented_picture(same_picture, table, options):
    drawn = posenc.plot.heatmap(table, **options)
    same_picture(drawn.figure, expected_heatmap(table, **options).figure)


def test_heatmap_on_given_axes_leaves_the_others_alone(same_picture):
    figure, (_, right) = plt.subplots(1, 2, layout="constrained")
    reference, (_, expected) = plt.subplots(1, 2, layout="constrained")
    posenc.plot.heatmap(SKEWED, right, title="right")
    expected_heatmap(SKEWED, expected, title="right")
    same_picture(figure, reference)


def test_heatmap_image_fills_the_axes_and_its_colours_are_symmetric_about_zero():
    ax = posenc.plot.heatmap(SKEWED)
    ax.figure.canvas.draw()
    image = ax.images[0]
    # aspect="auto": a (100, 512) table is not squeezed into a thin strip
    np.testing.assert_allclose(image.get_window_extent().bounds, ax.get_window_extent().bounds)
    largest = -SKEWED.min()  # 1.0, beyond the largest entry 0.6
    assert image.get_clim() == (-largest, largest)
    assert image.colorbar.vmin == -image.colorbar.vmax


@pytest.mark.filterwarnings("ignore:Attempting to set identical low and high ylims")  # the empty image
@pytest.mark.parametrize(("table", "clim"), [(np.zeros((3, 4)), (-1e-12, 1e-12)), (np.zeros((0, 4)), (-1, 1))],
                         ids=["zeros", "empty"])
def test_heatmap_of_a_table_without_magnitude_still_has_a_colour_range(table, clim):
    assert posenc.plot.heatmap(table).images[0].get_clim() == clim


def expected_columns(table, cols, *, positions=None, title=None):
    ax = new_axes((8, 3.5))
    x = np.arange(len(table)) if positions is None else positions
    for col in cols:
        ax.plot(x, table[:, col], label=f"column {col}")
    ax.set_xlabel("position")
    ax.set_ylabel("PE(position, column)")
    ax.legend(loc="upper right", fontsize="small")
    if title is not None:
        ax.set_title(title)
    return ax


# Lines rising to the upper right: a legend placed "best" would not go there.
RISING = np.outer(np.arange(1.0, 31.0), [1.0, 2.0, 3.0])


@pytest.mark.parametrize(("table", "cols", "options"), [
    (posenc.positional_encoding(60, 16), [0, 3, 14], {}),
    (RISING, [2, 0], {}),
    (RISING, [1], {"positions": 0.5 * np.arange(30) - 4, "title": "rising"}),
], ids=["sinusoidal", "rising", "positions and title"])
def test_columns_draws_the_documented_picture(same_picture, table, cols, options):
    drawn = posenc.plot.columns(table, cols, **options)
    same_picture(drawn.figure, expected_columns(table, cols, **options).figure)


def expected_wavelengths(d_model, base=10000.0, *, layout="interleaved", title=None):
    ax = new_axes((8, 3.5))
    half = (d_model + 1) // 2
    pair_length = 2 * np.pi * base ** (2 * np.arange(half) / d_model)  # 2 pi / omega_j
    # (column, pair, is a sine) of every column, as the layouts are documented
    if layout == "interleaved":
        spots = [(c, c // 2, c % 2 == 0) for c in range(d_model)]
    else:
        sines = [(j, True) for j in range(half)]
        cosines = [(j, False) for j in range(d_model // 2)]
        order = sines + cosines if layout == "sin_cos" else cosines + sines
        spots = [(c, j, sine) for c, (j, sine) in enumerate(order)]
    sine_spots = np.array([(c, pair_length[j]) for c, j, sine in spots if sine])
    cosine_spots = np.array([(c, pair_length[j]) for c, j, sine in spots if not sine]).reshape(-1, 2)
    ax.plot(*sine_spots.T, "o", ms=4, label="sine columns")
    ax.plot(*cosine_spots.T, "s", ms=4, mfc="none", label="cosine columns")
    ax.axhline(2 * np.pi, color=GREY, ls="--", lw=1)
    ax.axhline(2 * np.pi * base, color=GREY, ls="--", lw=1)
    ax.set_yscale("log")
    ax.set_xlabel("dimension (column)")
    ax.set_ylabel("wavelength (positions)")
    ax.legend(loc="upper left", fontsize="small")
    ax.set_title(f"d_model={d_model}, base={base:g}, {layout}" if title is None else title)
    return ax


@pytest.mark.parametrize(("args", "options"), [
    ((64,), {}),
    ((7, 100.0), {"layout": "sin_cos"}),
    ((7, 100.0), {"layout": "cos_sin"}),
    ((6, 500.0), {"layout": "interleaved", "title": "six"}),
    ((1,), {}),
], ids=["defaults", "sin_cos", "cos_sin", "title", "one column"])
def test_wavelengths_draws_the_documented_picture(same_picture, args, options):
    drawn = posenc.plot.wavelengths(*args, **options)
    same_picture(drawn.figure, expected_wavelengths(*args, **options).figure)


def expected_similarity(table, *, cmap="viridis", colorbar=True, title=None):
    ax = new_axes((5, 4.2))
    dots = np.einsum("pi,qi->pq", table, table)
    image = ax.imshow(dots, cmap=cmap, aspect="equal", interpolation="nearest")
    ax.set_xlabel("position q")
    ax.set_ylabel("position p")
    if colorbar:
        ax.figure.colorbar(image, ax=ax, label="PE(p) · PE(q)")
    if title is not None:
        ax.set_title(title)
    return ax


@pytest.mark.parametrize("options", [{}, {"cmap": "magma"}, {"colorbar": False}, {"title": "bands"}],
                         ids=["defaults", "cmap", "no colorbar", "title"])
def test_similarity_draws_the_documented_picture(same_picture, options):
    table = posenc.positional_encoding(40, 16, dtype=np.float64)
    drawn = posenc.plot.similarity(table, **options)
    same_picture(drawn.figure, expected_similarity(table, **options).figure)


def expected_dot_by_offset(table, *, positions=(0,), title=None):
    ax = new_axes((8, 3.5))
    for p in positions:
        ax.plot(np.arange(len(table)) - p, [row @ table[p] for row in table], lw=1, label=f"p = {p}")
    ax.axhline(0, color=GREY, lw=0.5)
    ax.set_xlabel("offset k")
    ax.set_ylabel("PE(p) · PE(p + k)")
    if len(positions) > 1:
        ax.legend(loc="upper right", fontsize="small")
    if title is not None:
        ax.set_title(title)
    return ax


@pytest.mark.parametrize(("table", "options"), [
    (posenc.positional_encoding(50, 16, dtype=np.float64), {}),
    (posenc.positional_encoding(50, 16, dtype=np.float64), {"positions": (7,), "title": "one row"}),
    (RISING, {"positions": (0, 1)}),  # both lines end high at the right: "best" would move the legend
    (RISING, {"positions": (3, 12, 29)}),
], ids=["defaults", "one position", "two", "three"])
def test_dot_by_offset_draws_the_documented_picture(same_picture, table, options):
    drawn = posenc.plot.dot_by_offset(table, **options)
    same_picture(drawn.figure, expected_dot_by_offset(table, **options).figure)


def test_dot_by_offset_zero_line_is_thinner_than_the_curves():
    ax = posenc.plot.dot_by_offset(RISING, positions=(0, 5))
    *curves, zero = ax.lines
    assert list(zero.get_ydata()) == [0, 0] and zero.get_linestyle() == "-"
    assert zero.get_linewidth() < min(curve.get_linewidth() for curve in curves)


def normalised_offset_curve(k, d_model, base):
    """PE(0) . PE(k) / PE(0) . PE(0): PE(0) is 1 on the d_model // 2 cosines, 0 on the sines."""
    omega = base ** (-2 * np.arange(d_model // 2) / d_model)
    return np.cos(np.outer(k, omega)).mean(axis=1)


def expected_grid(length, d_models, bases, *, kind="table", max_offset=None, figsize=None):
    rows, cols = len(bases), len(d_models)
    figure, axes = plt.subplots(rows, cols, figsize=figsize or (2.6 * cols + 1, 2.1 * rows + 0.4),
                                squeeze=False, layout="constrained", sharex=True, sharey=True)
    for r, base in enumerate(bases):
        for c, d_model in enumerate(d_models):
            ax = axes[r, c]
            if kind == "table":
                image = ax.imshow(posenc.positional_encoding(length, d_model, base=base), cmap="RdBu_r",
                                  vmin=-1, vmax=1, aspect="auto", interpolation="nearest",
                                  extent=(0, 1, length, 0))
                ax.set_xticks([0, 1], ["0", "d"])
            else:
                k = np.arange(length if max_offset is None else max_offset + 1)
                ax.plot(k, normalised_offset_curve(k, d_model, base), lw=1)
                ax.axhline(0, color=GREY, lw=0.5)
            ax.set_title(f"d={d_model}, base={base:g}", fontsize="small")
            if c == 0:
                ax.set_ylabel("position" if kind == "table" else "PE(0)·PE(k) / PE(0)·PE(0)",
                              fontsize="small")
            if r == rows - 1:
                ax.set_xlabel("dimension (fraction of d)" if kind == "table" else "offset k",
                              fontsize="small")
    if kind == "table":
        figure.colorbar(image, ax=axes, label="value", shrink=0.8)
    return figure


@pytest.mark.parametrize(("args", "options"), [
    ((30, [8, 16], [100, 10000]), {}),
    ((20, [12], [50]), {}),
    ((20, [8, 16, 32], [100]), {"figsize": (9, 3)}),
    ((40, [8, 9], [100, 10000]), {"kind": "offset"}),
    ((40, [16], [100, 1000, 10000]), {"kind": "offset", "max_offset": 25}),
], ids=["tables", "one panel", "figsize", "offsets", "max_offset"])
def test_grid_draws_the_documented_picture(same_picture, args, options):
    same_picture(posenc.plot.grid(*args, **options), expected_grid(*args, **options))


def test_grid_of_tables_shares_one_colorbar_from_minus_one_to_one():
    figure = posenc.plot.grid(10, [8, 16], [100, 10000])
    *panels, colorbar = figure.axes
    assert {panel.images[0].get_clim() for panel in panels} == {(-1, 1)}
    assert colorbar.get_ylim() == (-1, 1)
    figure.canvas.draw()
    # beside the whole grid, not only the last panel: taller than a row of panels
    assert colorbar.get_window_extent().height > 1.2 * panels[-1].get_window_extent().height


def test_grid_of_offsets_zero_lines_are_thinner_than_the_curves():
    for panel in posenc.plot.grid(30, [8, 16], [100], kind="offset").axes:
        curve, zero = panel.lines
        assert list(zero.get_ydata()) == [0, 0] and zero.get_linewidth() < curve.get_linewidth()


# --- Bad input: an error naming the argument, never matplotlib's or NumPy's own ---

TABLE = posenc.positional_encoding(10, 8)


@pytest.mark.parametrize(("call", "error", "message"), [
    (lambda: posenc.plot.heatmap([[1, "a"]]), TypeError, "table must hold real numbers"),
    (lambda: posenc.plot.similarity(TABLE + 1j), TypeError, "table must hold real numbers"),
    (lambda: posenc.plot.heatmap(TABLE, ax="left"), TypeError, "ax must be a matplotlib Axes or None"),
    (lambda: posenc.plot.heatmap(TABLE, colorbar="no"), TypeError, "colorbar must be True or False"),
    (lambda: posenc.plot.similarity(TABLE, colorbar=0), TypeError, "colorbar must be True or False"),
    (lambda: posenc.plot.columns(TABLE, [8]), ValueError, r"cols must be columns of the table \(0 .. 7\), got 8"),
    (lambda: posenc.plot.columns(TABLE, [-1]), ValueError, "cols must be an int >= 0, got -1"),
    (lambda: posenc.plot.columns(TABLE, [1.5]), TypeError, "cols must be an int >= 0, got 1.5"),
    (lambda: posenc.plot.columns(TABLE, 3), TypeError, "cols must be a sequence of columns"),
    (lambda: posenc.plot.columns(TABLE, [1], positions=range(5)), ValueError,
     r"positions must be one value per row of the table, shape \(10,\); got shape \(5,\)"),
    (lambda: posenc.plot.dot_by_offset(TABLE, positions=(10,)), ValueError,
     r"positions must be rows of the table \(0 .. 9\), got 10"),
    (lambda: posenc.plot.dot_by_offset(TABLE, positions=(True,)), TypeError, "positions must be an int >= 0"),
    (lambda: posenc.plot.dot_by_offset(TABLE, positions=2), TypeError, "positions must be a sequence of rows"),
    (lambda: posenc.plot.heatmap([[0.5, 1.0], [2.0]]), TypeError,
     r"table must be a 2-D array of real numbers, got \[\[0.5, 1.0\], \[2.0\]\]"),
    (lambda: posenc.plot.wavelengths(8, layout="paper"), ValueError, "layout must be one of"),
    (lambda: posenc.plot.grid(10, [8], [100], kind="heat"), ValueError, "kind must be one of 'table', 'offset'"),
    (lambda: posenc.plot.grid(10, [8], [100], kind="offset", max_offset=-1), ValueError,
     "max_offset must be a non-negative int, got -1"),
    (lambda: posenc.plot.grid(10, [8], [100], kind="offset", max_offset=2.5), TypeError,
     "max_offset must be a non-negative int"),
    (lambda: posenc.plot.grid(10, [8], [100], max_offset=5), ValueError, "max_offset is for kind='offset' only"),
    (lambda: posenc.plot.grid(10, 8, [100]), TypeError, "d_models must be a sequence, got 8"),
    (lambda: posenc.plot.grid(10, [8], []), ValueError, "bases must name at least one panel"),
    (lambda: posenc.plot.grid(10, [0], [100]), ValueError, "d_model must be an int >= 1"),
    (lambda: posenc.plot.grid(10, [8], [1.0], kind="offset"), ValueError, "base must be a finite real number > 1"),
], ids=lambda value: "" if callable(value) or isinstance(value, type) else value[:40])
def test_bad_arguments_are_named(call, error, message):
    with pytest.raises(error, match=message):
        call()


def test_similarity_pixels_are_square_whatever_the_style_says():
    with matplotlib.rc_context({"image.aspect": "auto"}):
        assert posenc.plot.similarity(TABLE).get_aspect() == 1.0
