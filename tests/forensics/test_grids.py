"""posenc.forensics.grids: what identify_grid says of tables no convention wrote, and that it can
name every grid convention. Against the tables of real sources: test_identify_sources.py; on the
tables of each convention and with learners' mistakes: sinusoidal/test_grid.py."""

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
