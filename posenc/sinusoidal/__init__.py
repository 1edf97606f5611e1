"""The sinusoidal encoding: the lecture's steps, whole tables, the conventions that projects
write, layouts, the geometry of a table, sin-cos tables on image and video grids, and random Fourier features."""

from .conventions import Convention, list_conventions, resolve
from .fourier import random_fourier_features
from .geometry import shift_matrix, wavelengths
from .grid import grid_encoding, list_grid_conventions, patch_positions
from .layouts import convert_layout, layout_permutation
from .tables import angles, column_order, denominators, encode, frequencies, interleave, positional_encoding

__all__ = [
    "Convention",
    "angles",
    "column_order",
    "convert_layout",
    "denominators",
    "encode",
    "frequencies",
    "grid_encoding",
    "interleave",
    "layout_permutation",
    "list_conventions",
    "list_grid_conventions",
    "patch_positions",
    "positional_encoding",
    "random_fourier_features",
    "resolve",
    "shift_matrix",
    "wavelengths",
]
