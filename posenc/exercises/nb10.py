"""Exercises of notebook 10 (RoPE on grids and in video): M-RoPE's position rows, the axis each
channel of a head turns with, the 2-D offset that fixes a score, Flux's ids, the similarity along
one axis of a video, the angles of pixel frequencies, and SAM's random Fourier features."""

import numpy as np

from ..language import N_
from ..rope import mrope_axes
from . import Exercise, _, compare_arrays

__all__ = [
    "axis_similarity",
    "axis_similarity_solution",
    "channel_axes",
    "flux_ids",
    "flux_ids_solution",
    "mrope_rows",
    "mrope_rows_solution",
    "pixel_angles",
    "pixel_angles_solution",
    "sam_features",
    "sam_features_solution",
    "same_offset",
]

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
    text_after = start + max(rows.shape) + np.arange(2)  # start + the longer merged side: one past the image
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
         lambda s: np.tile(mrope_axes(s, interleaved=True), 2)),
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


# Exercise 4: Flux's ids (text_length + height * width, 3): the text at the origin, then the image row by row.
def flux_ids_solution(text_length, height, width):
    rows, columns = np.meshgrid(np.arange(height), np.arange(width), indexing="ij")  # the image row by row
    image = np.stack([np.zeros(height * width), rows.ravel(), columns.ravel()], axis=1)  # (axis 0, row, column)
    return np.concatenate([np.zeros((text_length, 3)), image]).astype(np.int64)


def _flux_ids_by_column(text_length, height, width):
    image = np.stack([np.zeros(height * width), np.tile(np.arange(height), width), np.repeat(np.arange(width), height)], axis=1)
    return np.concatenate([np.zeros((text_length, 3)), image])


def _flux_ids_text_counted(text_length, height, width):
    ids = flux_ids_solution(text_length, height, width)
    ids[:text_length, 0] = np.arange(text_length)
    return ids


flux_ids = Exercise(
    "flux_ids",
    flux_ids_solution,
    N_("ids go axis last, one row (axis 0, row, column) per token: text_length rows of (0, 0, 0), then image token k at "
       "(0, k // width, k % width)"),
    cases=[(3, 2, 3), (1, 3, 2), (4, 2, 2)],
    argument_names=["text_length", "height", "width"],
    mistakes=[
        (N_("ids in the wrong axis order: Flux's ids are (axis 0, row, column), the height second and the width last"),
         lambda t, h, w: flux_ids_solution(t, h, w)[:, [0, 2, 1]]),
        (N_("ids go axis last, (tokens, 3), as diffusers' txt_ids and img_ids; (3, tokens) is the layout of M-RoPE's rows"),
         lambda t, h, w: flux_ids_solution(t, h, w).T),
        (N_("the image's tokens go row by row (all the columns of row 0, then row 1), not column by column"),
         _flux_ids_by_column),
        (N_("Flux gives every text token the ids (0, 0, 0) (the pipeline's text_ids are zeros); counting them (k, 0, 0) "
            "is Lumina 2's numbering"),
         _flux_ids_text_counted),
        (N_("the transformer joins the text first, then the image (txt_ids before img_ids)"),
         lambda t, h, w: np.roll(flux_ids_solution(t, h, w), -t, axis=0)),
    ],
    praise=N_("The text and the image's top-left token share (0, 0, 0): to RoPE the prompt sits at the image's corner."),
)


# Exercise 5: the similarity (mean over pairs of cos of the angle difference) at offsets along one axis only.
def axis_similarity_solution(offsets, axes_dim, axis, base):
    pairs = sum(axes_dim) // 2  # every pair of the head counts in the mean
    own = axes_dim[axis] // 2  # the pairs that turn with this axis
    w = base ** (-2 * np.arange(own) / axes_dim[axis])  # 1-D RoPE of the axis' own width
    turned = np.cos(np.outer(offsets, w)).sum(axis=1)
    return (turned + pairs - own) / pairs  # the other axes' pairs do not turn: cos 0 = 1 each


def _axis_similarity(offsets, axes_dim, axis, base, *, span=None, only_own=False, per_channel=False):
    own = axes_dim[axis] if per_channel else axes_dim[axis] // 2
    step = 1 if per_channel else 2
    w = base ** (-step * np.arange(own) / (span or axes_dim[axis]))
    turned = np.cos(np.outer(offsets, w)).sum(axis=1)  # np.outer is 2-D: (offsets, pairs)
    pairs = sum(axes_dim) if per_channel else sum(axes_dim) // 2
    return turned / own if only_own else (turned + pairs - own) / pairs


axis_similarity = Exercise(
    "axis_similarity",
    axis_similarity_solution,
    N_("the axis' own axes_dim[axis] // 2 pairs add cos(offset * w_i), w_i = base ** (-2i / axes_dim[axis]); every pair of "
       "the other axes adds cos 0 = 1; divide by all sum(axes_dim) // 2 pairs"),
    cases=[(np.arange(12), (16, 56, 56), 0, 256.0), (np.arange(-5, 6), (44, 42, 42), 1, 10000.0),
           (np.arange(0, 30, 3), (16, 56, 56), 2, 10000.0)],
    argument_names=["offsets", "axes_dim", "axis", "base"],
    mistakes=[
        (N_("each axis turns at the 1-D frequencies of its own width, base ** (-2i / axes_dim[axis]), not of the whole head"),
         lambda o, a, x, b: _axis_similarity(o, a, x, b, span=sum(a))),
        (N_("the pairs of the other axes do not turn for an offset along this one, but they count: each adds cos 0 = 1 to "
            "the mean over all sum(axes_dim) // 2 pairs"),
         lambda o, a, x, b: _axis_similarity(o, a, x, b, only_own=True)),
        (N_("a frequency per pair, not per channel: an axis of axes_dim[axis] channels has axes_dim[axis] // 2 pairs"),
         lambda o, a, x, b: _axis_similarity(o, a, x, b, per_channel=True)),
    ],
    praise=N_("An axis of few channels moves the mean little: HunyuanVideo's time (16 of 128) never takes it below 0.75."),
)


# Exercise 6: the angles (n, count) of one axis under pixel frequencies: coordinates in [-1, 1] times the frequencies.
def pixel_angles_solution(n, count, max_freq):
    coordinates = np.linspace(-1, 1, n)  # the first patch at -1, the last at 1
    w = np.pi * np.linspace(1, max_freq / 2, count)  # up to the Nyquist frequency of a max_freq-pixel image
    return np.outer(coordinates, w)


pixel_angles = Exercise(
    "pixel_angles",
    pixel_angles_solution,
    N_("coordinates np.linspace(-1, 1, n), frequencies np.pi * np.linspace(1, max_freq / 2, count), and the angles their "
       "outer product"),
    cases=[(8, 4, 224), (15, 8, 224), (5, 3, 64)],
    argument_names=["n", "count", "max_freq"],
    mistakes=[
        (N_("the coordinates are not normalised to [-1, 1]: patch k sits at -1 + 2k / (n - 1), not at k"),
         lambda n, c, m: np.outer(np.arange(n), np.pi * np.linspace(1, m / 2, c))),
        (N_("the coordinates run from -1 to 1, not from 0 to 1"),
         lambda n, c, m: np.outer(np.linspace(0, 1, n), np.pi * np.linspace(1, m / 2, c))),
        (N_("those are the centres of the patches (DINOv3's and SAM's normalisation); pixel coordinates put the first patch "
            "at -1 and the last at 1, np.linspace(-1, 1, n)"),
         lambda n, c, m: np.outer((np.arange(n) + 0.5) / n * 2 - 1, np.pi * np.linspace(1, m / 2, c))),
        (N_("the frequencies are pi times np.linspace(1, max_freq / 2, count): the pi is missing"),
         lambda n, c, m: np.outer(np.linspace(-1, 1, n), np.linspace(1, m / 2, c))),
        (N_("the fastest frequency is pi * max_freq / 2 (one turn per two pixels of a max_freq-pixel image), not pi * max_freq"),
         lambda n, c, m: np.outer(np.linspace(-1, 1, n), np.pi * np.linspace(1, m, c))),
    ],
    praise=N_("Patch 2k of 15 and patch k of 8 get the same angles: a pixel coordinate names a place, not an index."),
)


# Exercise 7: SAM's random Fourier features of points (x, y) in pixels of a height x width image.
def sam_features_solution(points, projection, height, width):
    c = points / np.array([width, height])  # to [0, 1]: x is a column, so x by the width
    c = 2 * c - 1  # then to [-1, 1]
    angles = 2 * np.pi * c @ projection
    return np.concatenate([np.sin(angles), np.cos(angles)], axis=-1)


def _sam_features(points, projection, scale, *, turn=2 * np.pi, centred=True, cos_first=False):
    c = points / np.asarray(scale, dtype=np.float64)
    angles = turn * (2 * c - 1 if centred else c) @ projection
    parts = [np.cos(angles), np.sin(angles)] if cos_first else [np.sin(angles), np.cos(angles)]
    return np.concatenate(parts, axis=-1)


_POINTS = np.random.default_rng(7)
SAM_CASES = [
    (_POINTS.uniform(0, [800, 600], (5, 2)), _POINTS.standard_normal((2, 6)), 600, 800),
    (_POINTS.uniform(0, [640, 480], (4, 2)), _POINTS.standard_normal((2, 4)), 480, 640),
    (_POINTS.uniform(0, [320, 240], (2, 3, 2)), _POINTS.standard_normal((2, 4)), 240, 320),  # a batch: 3 points per image
]

sam_features = Exercise(
    "sam_features",
    sam_features_solution,
    N_("c = points / (width, height), then 2 c - 1; the angles 2 pi c @ projection; their sines, then their cosines, "
       "concatenated on the last axis"),
    cases=SAM_CASES,
    argument_names=["points", "projection", "height", "width"],
    mistakes=[
        (N_("the projection applied without the 2 pi: the features are sin and cos of 2 pi c G"),
         lambda p, g, h, w: _sam_features(p, g, (w, h), turn=1.0)),
        (N_("the coordinates are not normalised to [-1, 1]: after dividing by the image size, c = 2 c - 1"),
         lambda p, g, h, w: _sam_features(p, g, (w, h), centred=False)),
        (N_("x is a column: divide x by the width and y by the height"),
         lambda p, g, h, w: _sam_features(p, g, (h, w))),
        (N_("SAM writes the sines first, then the cosines: [sin, cos]"),
         lambda p, g, h, w: _sam_features(p, g, (w, h), cos_first=True)),
    ],
    praise=N_("That is random_fourier_features(points, projection, input_shape=(height, width)), SAM's PositionEmbeddingRandom."),
)
