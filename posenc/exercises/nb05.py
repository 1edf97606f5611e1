"""Exercises of notebook 05 (the conventions of published sinusoidal tables)."""

import numpy as np

import posenc

from ..language import N_
from . import Exercise, _, _compare_order

__all__ = ["convention", "h1_frequencies", "to_paper_layout", "theirs", "mystery"]

#: Whisper's table, ``sinusoids(6, 8)``: sin_cos layout, "h-1" frequencies.
theirs = posenc.positional_encoding(6, 8, convention="whisper", dtype=np.float64)
#: A table from some project, to be named.
mystery = posenc.positional_encoding(20, 16, convention="fairseq", dtype=np.float64)


def to_paper_layout_solution():
    # Whisper writes sin_cos; read its columns into the interleaved order.
    return theirs[:, posenc.layout_permutation(8, "sin_cos", "interleaved")]


def _compare_layout(got, expected):
    # Translators: {order} is a list of column numbers; "{order}[k]" is its entry k.
    return _compare_order(got, expected, N_("the right columns in another order: your column k is column {order}[k] of the "
                                           "paper's layout (s0, c0, s1, c1, ...)"))


to_paper_layout = Exercise(
    "to_paper_layout",
    to_paper_layout_solution,
    N_("posenc.layout_permutation(d_model, source, target) gives perm with table_target = "
       "table_source[:, perm]; which layout is the source here?"),
    mistakes=[
        (
            N_("that permutation goes the other way: layout_permutation(8, 'interleaved', 'sin_cos') "
               "takes an interleaved table to sin_cos. Whisper's table is the sin_cos one: swap source "
               "and target (or take np.argsort of your permutation, its inverse)"),
            lambda: theirs[:, posenc.layout_permutation(8, "interleaved", "sin_cos")],
        ),
        (
            N_("you read the table as cos_sin; its row 0 is 0, 0, 0, 0, 1, 1, 1, 1: sines (0 at "
               "position 0) first, so it is sin_cos"),
            lambda: theirs[:, posenc.layout_permutation(8, "cos_sin", "interleaved")],
        ),
    ],
    compare=_compare_layout,
    praise=N_("A layout is a column permutation, and its inverse undoes it."),
)


def convention_solution():
    # identify fits every preset; any name in `matches` writes this very table.
    return posenc.identify(mystery).name


def _compare_convention(got, expected):
    """None when the preset named ``got`` writes the table of ``expected`` (at the mystery's shape)."""
    if not isinstance(got, str):
        return _("answer with a preset's name, a string such as 'paper' (posenc.CONVENTIONS lists them)")
    if got not in posenc.CONVENTIONS:
        # Translators: {preset} is the learner's answer in quotes, {names} the presets' names.
        return _("{preset} is not a preset; posenc.CONVENTIONS lists them: {names}").format(
            preset=repr(got), names=", ".join(posenc.CONVENTIONS))
    made, wanted = (posenc.positional_encoding(*mystery.shape, convention=name, dtype=np.float64) for name in (got, expected))
    if np.allclose(made, wanted, atol=1e-6):
        return None
    named, right = posenc.convention(got), posenc.convention(expected)
    if named.layout != right.layout:
        # Translators: {preset} is a preset's name in quotes, {layout} a layout's name in the code (sin_cos, interleaved, ...).
        return _("{preset} writes the {layout} layout; read row 0 of the table: the sines are 0 "
                 "there and the cosines 1, so their order gives the layout").format(preset=repr(got), layout=named.layout)
    if named.rule != right.rule:
        # Translators: {rule} is a frequency rule's name in the code, in quotes ('h-1', 'paper', ...).
        return _("{preset} has the layout right but other frequencies ({rule}); compare the "
                 "table's slowest sine with the paper's 10000^(-2j/d) and the 'h-1' rule").format(preset=repr(got), rule=repr(named.rule))
    rows = np.flatnonzero(~np.isclose(made, wanted, atol=1e-6).all(axis=1)).tolist()
    # Translators: {rows} is a list of row numbers, [0, 1].
    return _("{preset} has the layout and the frequencies right, but its table differs in rows {rows}: look at them").format(
        preset=repr(got), rows=rows[:3])


convention = Exercise(
    "convention",
    convention_solution,
    N_("row 0 gives the layout (sines 0, cosines 1); the slowest sine gives the frequencies; a row "
       "of zeros is a padding row. posenc.list_conventions() says what each preset does"),
    mistakes=[
        (
            N_("that preset writes the same layout and frequencies, but row 1 of this table is all "
               "zeros: which project zeroes its padding position?"),
            lambda: "tensor2tensor",
        ),
        (
            N_("that preset writes the interleaved layout; read row 0 of the table: the sines are 0 "
               "there and the cosines 1, so their order gives the layout"),
            lambda: "paper",
        ),
    ],
    compare=_compare_convention,
    praise=N_("fairseq: sines first, 'h-1' frequencies, and row padding_idx = 1 zeroed."),
)


def h1_frequencies_solution(d_model):
    h = d_model // 2
    return np.exp(-np.arange(h) * np.log(10000.0) / (h - 1))


h1_frequencies = Exercise(
    "h1_frequencies",
    h1_frequencies_solution,
    N_("h = d_model // 2 frequencies, w_j = exp(-j ln(10000) / (h - 1)) for j = 0 .. h - 1: the "
       "last is exactly 1e-4"),
    cases=[(8,), (512,), (6,)],
    argument_names=["d_model"],
    mistakes=[
        (
            N_("these are the paper's frequencies, 10000^(-2j/d) = 10000^(-j/h); the 'h-1' rule divides "
               "by h - 1, so that the lowest frequency is exactly 1e-4"),
            lambda d: 10000.0 ** (-2 * np.arange(d // 2) / d),
        ),
        (
            N_("ln, not log10: exp(-j ln(10000) / (h - 1)) is 10000^(-j/(h - 1))"),
            lambda d: np.exp(-np.arange(d // 2) * np.log10(10000.0) / (d // 2 - 1)),
        ),
        (
            N_("one frequency per pair, not per column: j runs over 0 .. h - 1 with h = d_model // 2"),
            lambda d: np.exp(-np.arange(d) * np.log(10000.0) / (d - 1)),
        ),
    ],
    praise=N_("Both rules start at 1; 'h-1' ends on exactly 1e-4, the paper's just above it."),
)
