"""Every sentence diagnose, identify_grid, diagnose_grid and identify_rope can write, read whole
against tests/forensics/answers.txt.

test_diagnosis.py, test_grids.py and test_identify_rope.py check that each mistake is found and
that its message holds the words that matter. This file keeps each answer's ``str()`` whole for
one table per sentence, so that a changed word shows as a diff in review: each branch of a
message (both concatenated layouts, both integer divisions, each exponent slip, a factor of
sqrt(d_model) and another, a standardised table, float32 drift with and without float32 code's
own route, a preset named alone and with the presets that write the same numbers, a print that
is no table; a grid's prefix rows, each grid mistake, both flattening orders; why a table is no
RoPE). The stored file is read like a notebook's outputs. After changing a message on purpose,
rewrite the file and read its diff:

    PYTHONPATH=tests .venv/bin/python tests/forensics/test_answers_whole.py

The tables are built as in test_diagnosis.py (the learners' code, the published sources). The
float32 ones print digits of float32 sin and cos; the file holds on the pinned, lowest and
Colab stacks alike.
"""

from pathlib import Path

import numpy as np
import pytest

import posenc
from posenc.forensics.diagnosis import _matches
from test_diagnosis import (_angles, _by_name, _interleave, _two_length_exponent, learner_base_1000, learner_column_exponent,
                            learner_concatenated, learner_double_column_exponent, learner_floor_pairs, learner_from_one,
                            learner_integer_division, learner_integer_division_per_column, learner_multiplied,
                            learner_paper, learner_stacked_pairs, learner_swapped, learner_transposed)

STORED = Path(__file__).with_name("answers.txt")


def _float32_exp_route(length, d_model):
    # exp(-2i ln(10000) / d) in float32: the drift is float32's, but not the route diagnose rebuilds
    k = np.arange(d_model)
    frequencies = np.exp((2 * (k // 2)).astype(np.float32) * np.float32(-np.log(10000.0) / d_model))
    angles = np.arange(length, dtype=np.float32)[:, None] * frequencies
    return np.where(k % 2 == 0, np.sin(angles), np.cos(angles)).astype(np.float32)


def _eight_i_over_d(length, d_model):
    k = np.arange(d_model)
    return _interleave(_angles(length, d_model, np.float64, exponent=8 * (k // 2) / d_model))  # 2 * (2i) twice over


def _prefixed(rows):
    return np.vstack([rows, MAE])


def _reflattened(table, height, width):
    # (height * width, d) row by row -> the same patches taken column by column
    return table.reshape(height, width, -1).transpose(1, 0, 2).reshape(height * width, -1)


def _moco_height_outer(height, width):
    # MoCo v3 flattens width outer after a zero class row: its patches taken row by row
    moco = posenc.grid_encoding((height, width), 16, convention="moco-v3")
    return np.vstack([moco[:1], _reflattened(moco[1:], width, height)])


def _axes_swapped(table):
    half = table.shape[1] // 2
    return np.concatenate([table[:, half:], table[:, :half]], axis=1)


PAPER = learner_paper(10, 6)
MAE = posenc.grid_encoding((3, 4), 16, convention="mae")
ROPE_COS, ROPE_SIN = posenc.rotary_cos_sin(np.arange(6), 8)

ANSWERS = {
    # diagnose
    "the paper's table": lambda: posenc.diagnose(PAPER),
    "float32 angles, the formula's own route": lambda: posenc.diagnose(learner_paper(5000, 64, np.float32)),
    "float32 angles, another route": lambda: posenc.diagnose(_float32_exp_route(5000, 64)),
    "half precision": lambda: posenc.diagnose(PAPER.astype(np.float16)),
    "sin and cos swapped": lambda: posenc.diagnose(learner_swapped(10, 6)),
    "all sines, then all cosines": lambda: posenc.diagnose(learner_concatenated(10, 6)),
    "all cosines, then all sines": lambda: posenc.diagnose(posenc.convert_layout(PAPER, "interleaved", "cos_sin")),
    "exponent k/d": lambda: posenc.diagnose(learner_column_exponent(10, 6)),
    "exponent 2k/d": lambda: posenc.diagnose(learner_double_column_exponent(10, 6)),
    "base 1000": lambda: posenc.diagnose(learner_base_1000(10, 6)),
    "exponent 4i/d": lambda: posenc.diagnose(_by_name("rothman", 10, 6)),
    "exponent 8i/d": lambda: posenc.diagnose(_eight_i_over_d(10, 6)),
    "exponent 2i/L": lambda: posenc.diagnose(_two_length_exponent(10, 6)),
    "integer division per pair": lambda: posenc.diagnose(learner_integer_division(10, 6)),
    "integer division per column": lambda: posenc.diagnose(learner_integer_division_per_column(10, 6)),
    "multiplied where it should divide": lambda: posenc.diagnose(learner_multiplied(10, 6)),
    "positions from 1": lambda: posenc.diagnose(learner_from_one(10, 6)),
    "transposed": lambda: posenc.diagnose(learner_transposed(10, 6)),
    "one column too many": lambda: posenc.diagnose(learner_stacked_pairs(10, 7)),
    "one column missing": lambda: posenc.diagnose(learner_floor_pairs(10, 7)),
    "a zero row": lambda: posenc.diagnose(_by_name("code_test_zero_row", 10, 6)),
    "a zero column": lambda: posenc.diagnose(_by_name("guided_diffusion", 10, 7)),
    "scaled by sqrt(d_model)": lambda: posenc.diagnose(_by_name("deepctr", 10, 6)),
    "scaled by 2": lambda: posenc.diagnose(2 * PAPER),
    "standardised": lambda: posenc.diagnose(_by_name("pe_study", 10, 6)),
    "a preset and the presets that write its numbers": lambda: posenc.diagnose(
        posenc.positional_encoding(10, 6, convention="tensor2tensor")),
    "a preset alone": lambda: posenc.diagnose(posenc.positional_encoding(10, 6, convention="fairseq")),
    "nothing in the catalog": lambda: posenc.diagnose(_by_name("stackoverflow_power", 10, 6)),
    "NaN": lambda: posenc.diagnose(np.full((3, 4), np.nan)),
    "a print of several tables": lambda: posenc.diagnose(str(np.zeros((2, 3, 4)))),
    "a print whose rows differ in length": lambda: posenc.diagnose("[[0. 1.]\n [0. 1. 2.]]"),
    "a print of nan": lambda: posenc.diagnose("[[nan 1.]\n [0. 1.]]"),
    # identify_grid and diagnose_grid
    "a grid table of width 6": lambda: posenc.identify_grid(np.ones((12, 6)), (3, 4)),
    "a grid after 1 prefix row of zeros": lambda: posenc.identify_grid(_prefixed(np.zeros((1, 16))), (3, 4)),
    "a grid after 1 prefix row, not zeros": lambda: posenc.identify_grid(_prefixed(np.ones((1, 16))), (3, 4)),
    "a grid after 2 prefix rows of zeros": lambda: posenc.identify_grid(_prefixed(np.zeros((2, 16))), (3, 4)),
    "a grid after 2 prefix rows, not zeros": lambda: posenc.identify_grid(_prefixed(np.ones((2, 16))), (3, 4)),
    "mae as it is": lambda: posenc.diagnose_grid(MAE, (3, 4), "mae"),
    "mae, height and width swapped": lambda: posenc.diagnose_grid(posenc.grid_encoding((4, 3), 16), (3, 4), "mae"),
    "mae flattened width outer": lambda: posenc.diagnose_grid(_reflattened(MAE, 3, 4), (3, 4), "mae"),
    "moco-v3 flattened height outer": lambda: posenc.diagnose_grid(_moco_height_outer(3, 4), (3, 4), "moco-v3"),
    "mae, axes stacked in the wrong order": lambda: posenc.diagnose_grid(_axes_swapped(MAE), (3, 4), "mae"),
    "mae on a square grid, two mistakes alike": lambda: posenc.diagnose_grid(
        _axes_swapped(posenc.grid_encoding((4, 4), 16)), (4, 4), "mae"),
    "any convention, flattened width outer": lambda: posenc.diagnose_grid(_reflattened(MAE, 3, 4), (3, 4)),
    # identify_rope
    "identify_rope given nothing": lambda: posenc.identify_rope(),
    "cos and sin beyond [-1, 1]": lambda: posenc.identify_rope(2 * ROPE_COS, 2 * ROPE_SIN),
    "cos and sin off the unit circle": lambda: posenc.identify_rope(0.9 * ROPE_COS, ROPE_SIN),
    "values that repeat in no RoPE layout": lambda: posenc.identify_rope(np.random.default_rng(0).uniform(-1, 1, (10, 8))),
    "1-D RoPE": lambda: posenc.identify_rope(ROPE_COS, ROPE_SIN),
    "1-D RoPE of one pair, read in both layouts": lambda: posenc.identify_rope(*posenc.rotary_cos_sin(np.arange(6), 2)),
}


def answer(name):
    try:
        return str(ANSWERS[name]())
    except (ValueError, TypeError) as error:
        return f"{type(error).__name__}: {error}"


def stored():
    """``{case: text}`` from answers.txt: a ``## case`` line, then the text up to the next one."""
    blocks = STORED.read_text(encoding="utf-8").split("## ")[1:]
    return dict(block.rstrip("\n").split("\n", 1) for block in blocks)


@pytest.mark.parametrize("name", list(ANSWERS))
def test_the_diagnosis_reads_as_stored(name):
    assert answer(name) == stored()[name]


def test_every_case_is_stored():
    assert list(stored()) == list(ANSWERS)


def test_the_paper_named_alone():
    # hf-xlm, keras-hub and tf-tutorial-2019 write the paper's numbers at every size, so diagnose always lists
    # them; the sentence for the paper alone is what a preset list without them would print.
    assert _matches(["paper"]).message == "the paper's table: sin at even columns, cos at odd, base 10000, positions from 0"


if __name__ == "__main__":
    STORED.write_text("".join(f"## {name}\n{answer(name)}\n" for name in ANSWERS), encoding="utf-8")
    print(f"wrote {STORED}: {len(ANSWERS)} answers")
