"""posenc: the sinusoidal positional encoding of "Attention Is All You Need", and RoPE.

``import posenc`` loads NumPy only; ``posenc.torch``, ``posenc.tensorflow``,
``posenc.plot`` (matplotlib) and ``posenc.lessons`` (PyTorch; the notebooks' copy task,
scaffolding rather than library) load their framework when imported.

``posenc.set_language("pt_BR")`` (or "zh_CN") puts the messages a learner reads (``diagnose``,
``diagnose_grid``, the exercises' feedback) in that language; English by default.
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
from .grid import diagnose_grid, grid_encoding, identify_grid, list_grid_conventions
from .identification import Identification, identify
from .language import get_language, set_language
from .layouts import convert_layout, layout_permutation
from .rotary import (
    ROPE_TYPES,
    ROTARY_LAYOUTS,
    apply_rotary,
    convert_rotary_layout,
    rotary_cos_sin,
    rotary_frequencies,
    rotary_permutation,
)

__version__ = "0.1.0"

__all__ = [
    "LAYOUTS",
    "ROPE_TYPES",
    "ROTARY_LAYOUTS",
    "Convention",
    "Diagnosis",
    "Identification",
    "angles",
    "apply_rotary",
    "column_order",
    "convert_layout",
    "convert_rotary_layout",
    "denominators",
    "diagnose",
    "diagnose_grid",
    "encode",
    "frequencies",
    "get_language",
    "grid_encoding",
    "identify_grid",
    "identify",
    "interleave",
    "layout_permutation",
    "list_conventions",
    "list_grid_conventions",
    "positional_encoding",
    "rotary_cos_sin",
    "rotary_frequencies",
    "rotary_permutation",
    "set_language",
    "shift_matrix",
    "wavelengths",
]
