"""Exercises of notebook 10 (RoPE on grids and in video): M-RoPE's position rows, the axis each
channel of a head turns with, and the 2-D offset that fixes a score."""

import numpy as np

from ..language import N_
from . import Exercise, _, compare_arrays

__all__ = ["channel_axes", "mrope_rows", "mrope_rows_solution", "same_offset"]

# The names of M-RoPE's three position rows.
AXES = (
    # Translators: the name of M-RoPE's first position row (axis), shown in parentheses after "row 0".
    N_("time"),
    # Translators: the name of M-RoPE's second position row (axis), shown in parentheses after "row 1".
    N_("height"),
    # Translators: the name of M-RoPE's third position row (axis), shown in parentheses after "row 2".
    N_("width"),
)


# Exercise 1: the three rows of 2 text tokens, an image of 4 x 6 patches (merged 2 x 2 into 2 x 3 tokens), 2 text tokens.
def mrope_rows_solution():
    text_before = np.arange(2)  # positions 0, 1 on all three rows
    start = 2  # the image starts where the text stopped
    rows, columns = np.meshgrid(np.arange(4 // 2), np.arange(6 // 2), indexing="ij")  # merged grid, row by row
    image = np.stack([np.full(rows.size, start), start + rows.ravel(), start + columns.ravel()])
    text_after = start + max(4, 6) // 2 + np.arange(2)  # one past the image's largest position
    return np.concatenate([np.stack([text_before] * 3), image, np.stack([text_after] * 3)], axis=1)


def _with_image(time, height, width, after):
    text = np.stack([np.arange(2)] * 3)
    return np.concatenate([text, np.stack([time, height, width]), np.stack([after + np.arange(2)] * 3)], axis=1)


MERGED_ROWS, MERGED_COLUMNS = np.repeat([0, 1], 3), np.tile([0, 1, 2], 2)
ROWS_MISTAKES = [
    (N_("the text after the image resumes one past the image's largest position (its start plus the longer merged side, "
        "max(2, 3)), not after its number of tokens"),
     lambda: _with_image(np.full(6, 2), 2 + MERGED_ROWS, 2 + MERGED_COLUMNS, 8)),
    (N_("the height and width rows are swapped: the image is 4 patches high and 6 wide, 2 x 3 tokens, so the height "
        "row holds the 2 token rows and the width row the 3 token columns"),
     lambda: _with_image(np.full(6, 2), 2 + MERGED_COLUMNS, 2 + MERGED_ROWS, 5)),
    (N_("the image's tokens go row by row (a whole row of 3 tokens, then the next row), not column by column"),
     lambda: _with_image(np.full(6, 2), 2 + np.tile([0, 1], 3), 2 + np.repeat([0, 1, 2], 2), 5)),
    (N_("the image's rows and columns count from where the image starts (position 2), not from 0"),
     lambda: _with_image(np.full(6, 2), MERGED_ROWS, MERGED_COLUMNS, 5)),
    (N_("the time row of an image is its start (2) for every token, not a count over its tokens"),
     lambda: _with_image(2 + np.arange(6), 2 + MERGED_ROWS, 2 + MERGED_COLUMNS, 5)),
]


WRONG_AT = (
    # Translators: {row} is 0, 1 or 2, {axis} its name (time, height, width); {token} a token's number; {got} and {expected} numbers.
    N_("row {row} ({axis}) is wrong first at token {token} (text before the image): yours {got}, expected {expected}"),
    N_("row {row} ({axis}) is wrong first at token {token} (the image): yours {got}, expected {expected}"),
    N_("row {row} ({axis}) is wrong first at token {token} (text after the image): yours {got}, expected {expected}"),
)


def _wrong_at(t):
    """The message for a wrong position at token ``t``: in the text before the image, the image, the text after it."""
    return WRONG_AT[0 if t < 2 else 1 if t < 8 else 2]


def compare_rows(got, expected):
    """Which row (time, height, width) and which token of the answer is first wrong."""
    try:
        got = np.asarray(got, dtype=np.float64)
    except (TypeError, ValueError):
        return _("your answer should be a (3, {tokens}) array of ints").format(tokens=expected.shape[1])
    if got.shape != expected.shape:
        if got.shape == (3, 2 + 24 + 2):
            return _("your image has 24 tokens: the merger joins each 2 x 2 block of patches (spatial_merge_size=2), 2 x 3 tokens")
        return _("your array has shape {got}, expected {expected}: three rows (time, height, width), one column per token").format(
            got=got.shape, expected=expected.shape)
    wrong = np.argwhere(got != expected)
    if not len(wrong):
        return None
    row, token = (int(i) for i in wrong[0])
    return _(_wrong_at(token)).format(row=row, axis=_(AXES[row]), token=token, got=f"{got[row, token]:g}",
                                      expected=f"{expected[row, token]:g}")


mrope_rows = Exercise(
    "mrope_rows",
    mrope_rows_solution,
    N_("text counts on from the previous token on all three rows; the image (2 x 3 tokens after merging) has time = its "
       "start, height = start + row, width = start + column; the text after it starts at start + max(2, 3)"),
    mistakes=ROWS_MISTAKES,
    compare=compare_rows,
    praise=N_("Text 0 1, image at 2 over a 2 x 3 grid, text again at 2 + 3 = 5: 10 tokens but positions only up to 6."),
)


# Exercise 2: for Qwen2-VL's consecutive sections, the axis of every channel of a head (half layout).
def channel_axes_solution(mrope_section):
    pair_axes = np.repeat(np.arange(3), mrope_section)  # mrope_section[i] consecutive pairs read axis i
    return np.tile(pair_axes, 2)  # channel c and channel c + head_dim / 2 form pair c


def _interleaved(mrope_section):
    j = np.arange(sum(mrope_section))
    axes = np.zeros(len(j), dtype=np.int64)
    for axis in (1, 2):
        axes[(j % 3 == axis) & (j < 3 * mrope_section[axis])] = axis
    return np.tile(axes, 2)


channel_axes = Exercise(
    "channel_axes",
    channel_axes_solution,
    N_("first the axis of each pair: mrope_section[0] pairs of time, then mrope_section[1] of height, then width; "
       "a head has two channels per pair, channel c and channel c + head_dim / 2"),
    cases=[([2, 3, 3],), ([4, 6, 6],), ([16, 24, 24],)],
    argument_names=["mrope_section"],
    mistakes=[
        (N_("these are the axes of the sum(mrope_section) pairs; the head has twice as many channels: channel c and "
            "channel c + head_dim / 2 form pair c, so the second half repeats the first"),
         lambda s: np.repeat(np.arange(3), s)),
        (N_("mrope_section counts pairs, not channels: sections of channels read straight through the head put the "
            "second half on the wrong axes"),
         lambda s: np.repeat(np.arange(3), 2 * np.asarray(s))),
        (N_("that is Qwen3-VL's interleaved order (time, height, width, time, ...); Qwen2-VL's sections are consecutive"),
         _interleaved),
    ],
    compare=compare_arrays,
    praise=N_("With [16, 24, 24]: channels 0-15 and 64-79 turn with time, the width gets the slowest frequencies."),
)


# Exercise 3: 2-D RoPE, the key patch whose score with query_b equals score(query_a, key_a), for any q and k.
def same_offset_solution(query_a, key_a, query_b):
    offset = (key_a[0] - query_a[0], key_a[1] - query_a[1])  # (rows, columns) from query to key
    return (query_b[0] + offset[0], query_b[1] + offset[1])


same_offset = Exercise(
    "same_offset",
    same_offset_solution,
    N_("the score depends on the offset (key row - query row, key column - query column) only: move from query_b by the "
       "same offset"),
    cases=[((2, 2), (3, 0), (4, 5)), ((0, 0), (1, 2), (2, 1)), ((5, 1), (2, 3), (3, 3))],
    argument_names=["query_a", "key_a", "query_b"],
    mistakes=[
        (N_("your offset points the other way: key_b - query_b must equal key_a - query_a (a 2-D offset has a sign)"),
         lambda qa, ka, qb: (qb[0] - (ka[0] - qa[0]), qb[1] - (ka[1] - qa[1]))),
        (N_("rows and columns are swapped in your offset: one row down and two columns left is not two rows down "
            "and one column left"),
         lambda qa, ka, qb: (qb[0] + (ka[1] - qa[1]), qb[1] + (ka[0] - qa[0]))),
        (N_("RoPE's score depends on the offset from the query, not on the key's own place: key_b moves with query_b"),
         lambda qa, ka, qb: tuple(ka)),
    ],
    praise=N_("One offset, one score: that is all the position a 2-D RoPE score carries."),
)
