"""posenc: the sinusoidal positional encoding of "Attention Is All You Need".

``import posenc`` loads NumPy only; ``posenc.torch``, ``posenc.tensorflow`` and
``posenc.plot`` (matplotlib) load their framework when imported.
"""

from ._checks import LAYOUTS
from ._core import (
    angles,
    column_order,
    denominators,
    encode,
    frequencies,
    interleave,
    positional_encoding,
)
from .geometry import shift_matrix, wavelengths

__version__ = "0.1.0"

__all__ = [
    "LAYOUTS",
    "angles",
    "column_order",
    "denominators",
    "encode",
    "frequencies",
    "interleave",
    "positional_encoding",
    "shift_matrix",
    "wavelengths",
]
