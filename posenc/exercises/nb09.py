"""Exercises of notebook 09 (positions on an image grid)."""

import numpy as np

from .. import grid_encoding
from ..language import N_
from . import Exercise

__all__ = ["mae_table", "mae_table_solution", "rescaled_table", "rescaled_table_solution"]


def mae_table_solution(height, width, d):
    quarter = d // 4
    frequencies = 10000.0 ** (-np.arange(quarter) / quarter)
    y, x = np.meshgrid(np.arange(height), np.arange(width), indexing="ij")  # (H, W): row by row
    x = np.outer(x, frequencies)  # (H * W, d / 4): np.outer flattens the grid row by row
    y = np.outer(y, frequencies)
    return np.concatenate([np.sin(x), np.cos(x), np.sin(y), np.cos(y)], axis=1)


def _mae_table(height, width, d, *, width_outer=False, y_first=False, interleaved=False, span=None):
    quarter = d // 4
    frequencies = 10000.0 ** (-np.arange(quarter) / (span or quarter))
    if width_outer:
        x, y = np.meshgrid(np.arange(width), np.arange(height), indexing="ij")
    else:
        y, x = np.meshgrid(np.arange(height), np.arange(width), indexing="ij")
    x, y = np.outer(x, frequencies), np.outer(y, frequencies)
    if interleaved:
        blocks = [np.stack([np.sin(a), np.cos(a)], axis=-1).reshape(len(a), 2 * quarter) for a in (x, y)]
    else:
        blocks = [np.sin(x), np.cos(x), np.sin(y), np.cos(y)]
        if y_first:
            blocks = blocks[2:] + blocks[:2]
    return np.concatenate(blocks, axis=1)


mae_table = Exercise(
    "mae_table",
    mae_table_solution,
    N_("token k is the patch in row k // W and column k % W, so the flattened grid must walk the width fastest: "
       "build the (H, W) grids with meshgrid(rows, columns, indexing='ij') (or indexing='xy' with the columns first); "
       "the columns are [sin x, cos x, sin y, cos y], x the column, frequencies 10000 ** (-j / (d / 4))"),
    cases=[(3, 4, 16), (6, 10, 64), (5, 5, 8)],
    argument_names=["height", "width", "d"],
    mistakes=[
        (
            N_("the tokens are flattened width outer (a meshgrid of (W, H) flattened walks down the columns), so most "
               "tokens carry another patch's position; token k is the patch in row k // W and column k % W"),
            lambda h, w, d: _mae_table(h, w, d, width_outer=True),
        ),
        (
            N_("the table was built for a W x H grid: height and width swapped"),
            lambda h, w, d: _mae_table(w, h, d),
        ),
        (
            N_("the y block comes first (transformers' RT-DETR order); MAE's table starts with the x (column) block"),
            lambda h, w, d: _mae_table(h, w, d, y_first=True),
        ),
        (
            N_("sines and cosines interleaved in pairs (DETR's way); MAE writes all the sines of an axis, then all its cosines"),
            lambda h, w, d: _mae_table(h, w, d, interleaved=True),
        ),
        (
            N_("the frequencies run over d/4 - 1 steps (big_vision's); MAE's are 10000 ** (-j / (d / 4))"),
            lambda h, w, d: _mae_table(h, w, d, span=d // 4 - 1),
        ),
    ],
    praise=N_("diagnose_grid(your_table, (H, W), 'mae') now finds nothing wrong, on square and non-square grids alike."),
)


def rescaled_table_solution(old, new, d):
    # Patch i of the new grid, in the old grid's units: the centres of the patches line up, as in a resize.
    positions = [(np.arange(n) + 0.5) * o / n - 0.5 for o, n in zip(old, new)]
    # pragma: no mutate (mae is the default convention, and float32 is within the check's tolerance)
    return grid_encoding(new, d, convention="mae", dtype=np.float64, positions=positions)


def _at(new, d, positions):  # a mistake's table: float32 is finer than the check's tolerance
    return grid_encoding(new, d, positions=positions)  # mae, the default convention


rescaled_table = Exercise(
    "rescaled_table",
    rescaled_table_solution,
    N_("the new grid covers the same image as the old one: patch i of n new patches has its centre at "
       "(i + 1/2) / n of the image, and the old grid's patch p at (p + 1/2) / n_old; solve for p, per axis, "
       "and pass those positions to grid_encoding(new, d, convention='mae', positions=[rows, columns])"),
    cases=[((8, 12), (16, 24), 32), ((8, 12), (6, 9), 32), ((6, 8), (12, 10), 64)],
    argument_names=["old", "new", "d"],
    mistakes=[
        (
            N_("your table encodes the new grid's integer positions 0, 1, 2, ...: the grid extended at the old patch size, "
               "not rescaled; rescaling puts the new grid into the old one's frame, patch i at (i + 1/2) * old / new - 1/2"),
            lambda old, new, d: _at(new, d, [np.arange(n, dtype=float) for n in new]),
        ),
        (
            N_("your positions are i * old / new: the corner of the first patch on the old grid's corner and the same "
               "steps (diffusers' rescaling with base_size = old); a resize lines up the patch centres: "
               "(i + 1/2) * old / new - 1/2"),
            lambda old, new, d: _at(new, d, [np.arange(n) * o / n for o, n in zip(old, new)]),
        ),
        (
            N_("your first and last patches sit on the old grid's first and last ones (i * (old - 1) / (new - 1), "
               "align_corners=True); a resize with align_corners=False, as timm and MAE use, lines up the patch "
               "centres: (i + 1/2) * old / new - 1/2"),
            lambda old, new, d: _at(new, d, [np.arange(n) * (o - 1) / max(n - 1, 1) for o, n in zip(old, new)]),
        ),
        (
            N_("the ratio is upside down: the new grid's patches are new / old times smaller, so a step of one new "
               "patch is old / new old patches"),
            lambda old, new, d: _at(new, d, [(np.arange(n) + 0.5) * n / o - 0.5 for o, n in zip(old, new)]),
        ),
        (
            N_("the rows are scaled by the width's ratio and the columns by the height's: each axis has its own old / new"),
            lambda old, new, d: _at(new, d, [(np.arange(n) + 0.5) * o / m - 0.5 for o, n, m in zip(old[::-1], new, new[::-1])]),
        ),
    ],
    praise=N_("A model trained on the old grid reads these positions in the frame it learned, at the old grid's resolution."),
)
