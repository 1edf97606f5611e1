"""Every message a learner reads after one bad argument, read whole against tests/messages.txt.

test_bad_input.py checks that each argument spoiled alone is refused with a ValueError or
TypeError that names it and shows the value. This file checks the whole message: every
public function's valid call (test_bad_input's NAMED_CALLS) is made with each argument in
turn given each of its wrong values and a few more (``more_wrong_values``), and with an unknown keyword, and
``ExceptionType: message`` (or ``returns``) is compared with the line stored for it. The
stored file is read like a notebook's outputs: a changed message shows as a diff in review.
After changing a message on purpose, rewrite the file and read its diff:

    .venv/bin/python tests/test_messages.py

The messages quote values in NumPy's repr, which changed with NumPy 2 (``np.float64(1.5)``):
they are compared on NumPy 2 (the pinned stack and Colab's), not on the lowest.
"""

import re
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

import posenc
from test_bad_input import NAMED_CALLS, RECORDS, one_by_one, wrong_values

STORED = Path(__file__).with_name("messages.txt")
NAMES = sorted(NAMED_CALLS.keys() - RECORDS.keys())


def more_wrong_values(valid):
    """``wrong_values``, and where they fit: a size past memory, an int past float64, a bool for a number, a ragged list, an empty
    array and one of four axes (most of the messages past the first check are about sizes and shapes)."""
    values = wrong_values(valid)
    if isinstance(valid, int | float) and not isinstance(valid, bool):
        values += [10**30, 10**400, True]
    if isinstance(valid, list | tuple | np.ndarray):
        values += [[[1.0], [1.0, 2.0]], np.zeros((0, 4)), np.ones((1, 1, 1, 2))]
    return values


def _answer(function, args, kwargs):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # an absurd value may overflow on its way to a refusal
            function(*args, **kwargs)
    except (ValueError, TypeError) as error:
        # Python's own refusal of a keyword names the function, which mutmut renames: the fact is kept.
        message = re.sub(r"^[\w.]+\(\) got an unexpected keyword", "got an unexpected keyword", str(error))
        return f"{type(error).__name__}: {message}".replace("\n", "\\n")
    return "returns"


def answers(name):
    """The lines of ``name``: each argument spoiled alone, then an unknown keyword, in English."""
    function, args, kwargs = NAMED_CALLS[name]
    language = posenc.get_language()
    posenc.set_language("en")
    try:
        lines = [f"{parameter}={' '.join(repr(value).split())}: {_answer(function, spoiled.args, spoiled.kwargs)}"
                 for parameter, value, spoiled in one_by_one(function, args, kwargs, values=more_wrong_values)]
        return [*lines, f"bogus=1: {_answer(function, args, {**kwargs, 'bogus': 1})}"]
    finally:
        posenc.set_language(language)


def stored():
    """``{name: lines}`` of tests/messages.txt, whose sections start ``## name``."""
    sections, name = {}, None
    for line in STORED.read_text(encoding="utf-8").splitlines():
        if line.startswith("## "):
            name = line[3:]
            sections[name] = []
        elif line:
            sections[name].append(line)
    return sections


def test_every_function_has_its_messages_stored():
    assert sorted(stored()) == NAMES


@pytest.mark.skipif(int(np.__version__.split(".")[0]) < 2, reason="the messages quote NumPy 2's reprs")
@pytest.mark.parametrize("name", NAMES)
def test_messages_read_as_stored(name):
    assert answers(name) == stored()[name]


if __name__ == "__main__":
    STORED.write_text("".join(f"## {name}\n" + "".join(f"{line}\n" for line in answers(name)) + "\n" for name in NAMES),
                      encoding="utf-8")
    print(f"wrote {STORED}", file=sys.stderr)
