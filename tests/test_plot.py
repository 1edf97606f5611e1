"""posenc.plot draws what it says: the data, the labels, a colorbar where colours carry values.

(That ``import posenc`` alone leaves matplotlib unloaded is checked in test_packaging.py.)
"""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from matplotlib.axes import Axes  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

import posenc  # noqa: E402
import posenc.plot  # noqa: E402


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


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
