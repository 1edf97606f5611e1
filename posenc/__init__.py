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
from .conventions import Convention, list_conventions
from .diagnosis import Diagnosis, diagnose
from .geometry import shift_matrix, wavelengths
from .identification import Identification, identify
from .layouts import convert_layout, layout_permutation

__version__ = "0.1.0"

__all__ = [
    "LAYOUTS",
    "Convention",
    "Diagnosis",
    "Identification",
    "angles",
    "column_order",
    "convert_layout",
    "denominators",
    "diagnose",
    "encode",
    "frequencies",
    "identify",
    "interleave",
    "layout_permutation",
    "list_conventions",
    "positional_encoding",
    "shift_matrix",
    "wavelengths",
]
