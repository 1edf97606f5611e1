"""posenc.forensics.grids: what identify_grid says of tables no convention wrote, and that it can
name every grid convention. Against the tables of real sources: test_identify_sources.py; on the
tables of each convention and with learners' mistakes: sinusoidal/test_grid.py."""

import warnings

import numpy as np
import pytest

import posenc

D = 32


@pytest.mark.parametrize("table", [np.ones((24, D)), np.random.default_rng(0).uniform(-1, 1, (24, D)), np.zeros((24, D))])
def test_nothing_matches_what_no_convention_wrote(table):
    found = posenc.identify_grid(table, (4, 6))
    assert found.matches == () and found.max_deviation > 0.1 and str(found).startswith("none (closest:")


def test_every_convention_is_read_off_a_table():
    from posenc.forensics import grids
    from posenc.sinusoidal import grid

    assert grids._EXPLAIN.names() == grid._PRESETS.names()


def test_index_position_sources_explain_only_the_patch_indices():
    """The explainers _index_positions builds (at import, for MAE, timm, ...): positions start at 0 and step by 1;
    a source that writes 10000 in its code cannot have another temperature."""
    from posenc.forensics import grids

    takes, fixed = grids._index_positions(True), grids._index_positions(False)
    sizes, indices = {"y": 4, "x": 6}, {"y": (0.0, 1.0), "x": (2e-5, None)}  # x: one column, no step
    assert takes(None, indices, sizes) == {} == fixed(10000.0, indices, sizes)
    assert takes(100.0, indices, sizes) == {"temperature": 100.0} and fixed(100.0, indices, sizes) is None
    assert takes(None, {**indices, "y": (0.5, 1.0)}, sizes) is None  # shifted by half a patch
    assert takes(None, {**indices, "y": (0.0, 1 / 3)}, sizes) is None  # scaled: 4 rows over [0, 1]


@pytest.mark.parametrize("convention", ["big_vision", "rt-detr", "timm", "detr"])
def test_the_temperature_is_read_off_three_pairs_per_axis(convention):
    # d = 12 on a 2-D grid: three sin/cos pairs per axis, the fewest from which the ratio of the frequencies is read
    found = posenc.identify_grid(posenc.grid_encoding((4, 5), 12, convention=convention, temperature=100.0), (4, 5))
    assert found.matches[0] == f"{convention}, temperature=100" and found.max_deviation < 1e-7


def test_a_temperature_is_read_off_two_pairs_when_the_slowest_is_near_zero():
    # simple-vit spreads 3 pairs over exponents 0, 1/2, 1: at temperature 1e7 the slowest angle of a
    # step is 1e-7 rad, too close to 0 to fit; the two faster ones still give the ratio.
    found = posenc.identify_grid(posenc.grid_encoding((3, 5), 12, convention="simple-vit", temperature=1e7), (3, 5))
    assert found.matches == ("big_vision, temperature=1e+07", "simple-vit, temperature=1e+07") and found.max_deviation < 1e-7


@pytest.mark.parametrize("shape", [(8, 4), (7, 4), (4, 8)])
def test_sd3s_crop_is_read_when_one_axis_is_cropped_from_its_first_patch(shape):
    # pos_embed_max_size 8: the crop starts at (8 - n) // 2, 0 on an axis of 7 or 8 patches, 2 on one of 4.
    table = posenc.grid_encoding(shape, 16, convention="diffusers", pos_embed_max_size=8, base_size=4)
    assert posenc.identify_grid(table, shape).matches == ("diffusers, pos_embed_max_size=8, base_size / interpolation_scale=4",)


def test_a_grid_whose_positions_do_not_move_is_read_without_a_warning():
    table = posenc.grid_encoding((3, 4), 16, convention="detr", positions=[np.full(3, 2.0), np.full(4, 2.0)])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # DETR's normalised reading divides by the scale: 0 here, which it must not
        found = posenc.identify_grid(table, (3, 4))
    assert found.matches == ("detr, positions (y: 2 + 0 k; x: 2 + 0 k)", "positional-encodings, positions (y: 2 + 0 k; x: 2 + 0 k)")


def test_the_temperature_is_read_off_a_step_of_many_radians():
    """DETR normalised to scale=24 on 2 x 2 patches steps by 12: the two slowest angles of a step, 2.6 and 0.56 rad,
    multiply to more than 1; their ratio, the frequency ratio, is what is checked to be below 1."""
    table = posenc.grid_encoding((2, 2), 12, convention="detr", temperature=100.0, normalize=True, scale=24.0)
    assert posenc.identify_grid(table, (2, 2)).matches[0] == "detr, temperature=100, normalize=True, scale=24"


def test_a_read_option_is_rounded_to_the_digits_a_person_wrote():
    """An offset read off float32 values comes out 4e-5 from 0.25: it is named 0.25 (four digits are within 1e-4
    of the reading), not to six digits."""
    table = posenc.grid_encoding((4, 5), 32, convention="detr", normalize=True, offset=0.25)
    assert posenc.identify_grid(table, (4, 5)).matches[0] == "detr, normalize=True, offset=0.25"


def test_a_normalised_detr_grid_that_starts_at_1_is_still_read_as_normalised():
    # (k + 1 + 1) * 2 / 4 starts at 1 like DETR's plain k + 1, but steps by 0.5
    table = posenc.grid_encoding((4, 4), 32, convention="detr", normalize=True, scale=2.0, offset=1.0)
    assert posenc.identify_grid(table, (4, 4)).matches[0] == "detr, normalize=True, scale=2, offset=1"


@pytest.mark.parametrize("d", [4, 8])
def test_a_3d_table_whose_last_axis_has_no_columns_is_identified(d):
    # positional-encodings gives each axis ceil(d / 6) pairs and cuts the table at d: at d = 4 and 8 the
    # x axis has none left (this crashed with an IndexError), and any positions on it give the same table
    table = posenc.grid_encoding((2, 2, 3), d, convention="positional-encodings")
    assert posenc.identify_grid(table, (2, 2, 3)).matches == ("positional-encodings",)
    assert posenc.identify_grid(np.random.default_rng(0).normal(size=(12, d)), (2, 2, 3)).matches == ()


def test_positions_by_hand_on_an_axis_of_one_patch():
    # one row, at y = 2.5: no step is read on that axis, and its positions are shown as 2.5 + 0 k
    positions = [np.array([2.5]), np.arange(5) + 0.5]
    found = posenc.identify_grid(posenc.grid_encoding((1, 5), 16, convention="mae", positions=positions), (1, 5))
    assert found.matches[0] == "mae, positions (y: 2.5 + 0 k; x: 0.5 + 1 k)"


def test_conventions_that_write_the_same_table_are_all_named():
    found = posenc.identify_grid(posenc.grid_encoding((3, 4), 16, convention="big_vision"), (3, 4))
    assert found.matches == ("big_vision", "simple-vit") and str(found).startswith("big_vision = simple-vit; max deviation ")
