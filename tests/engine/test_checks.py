"""posenc.engine.checks: the intake every public function shares, read as its learner reads it."""

import numpy as np
import pytest

from posenc.engine import checks


@pytest.mark.parametrize("dtype", [np.int8, np.int64, np.uint8, np.uint32, np.float16, np.float64])
def test_as_numbers_takes_ints_unsigned_and_real_floats_as_they_are(dtype):
    array = np.arange(3, dtype=dtype)
    assert checks.as_numbers(array, "x") is array


@pytest.mark.parametrize(("value", "held"), [
    ([True, False], "bool"), ([1j], "complex128"), (["a"], "<U1"), ([None], "object"),
])
def test_as_numbers_refuses_other_kinds_naming_the_argument(value, held):
    with pytest.raises(TypeError) as error:
        checks.as_numbers(value, "x")
    assert str(error.value) == f"x must hold real numbers, got {checks.shown(value)}: an array of {held}"


class _Repr:
    def __init__(self, text):
        self.text = text

    def __repr__(self):
        return self.text


@pytest.mark.parametrize(("text", "expected"), [
    ("a\n  b", "a b"),  # on one line
    ("x" * 80, "x" * 80),  # the longest shown whole
    ("y" + "x" * 79 + "z", "y" + "x" * 37 + "..." + "x" * 37 + "z"),  # one more: cut in its middle
])
def test_shown_keeps_a_value_on_one_line_of_at_most_80_characters(text, expected):
    assert checks.shown(_Repr(text)) == expected


@pytest.mark.parametrize("shape", [(2, 5, 6), (5, 6), (None, None, 6), (None, 6)])
def test_input_width_is_the_last_axis_known_or_not_the_others(shape):
    with pytest.raises(ValueError) as caught:
        checks.check_input_width(shape, 8)
    assert str(caught.value) == f"the last dimension of x must be d_model=8, got x of shape {shape}"
    checks.check_input_width((*shape[:-1], 8), 8)
    checks.check_input_width((*shape[:-1], None), 8)  # unknown until the graph runs: not refused


def test_the_size_limits_take_their_limit_and_refuse_one_more():
    # The limits are inclusive: 2**20 columns and 2**31 entries are allowed, one more is not.
    assert checks.check_width(2**20, "d_model") == 2**20
    with pytest.raises(ValueError) as caught:
        checks.check_width(2**20 + 1, "d_model")
    assert str(caught.value) == "d_model must be at most 2**20 = 1048576, got 1048577"
    assert checks.check_entries("length * d_model", (2**21, 2**10)) == 2**31
    with pytest.raises(ValueError) as caught:
        checks.check_entries("length * d_model", (2**31 + 1, 1))
    assert str(caught.value) == "length * d_model must be at most 2**31 = 2147483648 entries, got 2147483649 * 1 = 2147483649"
    with pytest.raises(ValueError) as caught:
        checks.check_entries("positions.size", (2**31 + 1,))  # one size: no product to spell
    assert str(caught.value) == "positions.size must be at most 2**31 = 2147483648 entries, got 2147483649"
