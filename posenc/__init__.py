"""posenc: the sinusoidal positional encoding of "Attention Is All You Need", and RoPE.

``import posenc`` loads NumPy only; ``posenc.torch``, ``posenc.tensorflow``, ``posenc.jax``,
``posenc.plot`` (matplotlib) and ``posenc.lessons`` (PyTorch; the notebooks' copy task,
scaffolding rather than library) load their framework when imported.

The package, bottom up: ``posenc.engine`` (checks, the backend table, kernels, the accurate
builder), ``posenc.sinusoidal`` (tables, conventions, layouts, geometry, grids),
``posenc.rope`` (rotary embeddings, on sequences and grids), ``posenc.forensics`` (identify,
diagnose, printed tables), then one module per framework and the lessons. The names below are
the ones a learner meets first, then the rest of each group.

``posenc.set_language("pt_BR")`` (or "zh_CN") puts the messages a learner reads (``diagnose``,
``diagnose_grid``, the exercises' feedback) in that language; English by default.

The accuracy contract, for every sine and cosine posenc returns (tables, ``encode``, grids,
RoPE, in every framework), against the exact value of ``sin(p * w)``:

- float32: within 2e-7, for arbitrary positions while ``|p * w| <= 2**26`` (``|p| <= 1e7``
  with room to spare) and for every row of a table (one corner of the table product aside,
  at most 2.03e-7);
- float64: within ~2e-16 for ``|p| <= 1e7`` (tables ~1e-15);
- float16 and bfloat16: the float32 value rounded once more;
- float32 without float64 (JAX with x64 off, under ``jax.jit``): within 2e-7 for float32
  positions ``|p| <= 2**24`` and frequencies ``|w| <= 1``.

Why it holds: the docs page "Why the numbers are right" (docs/accuracy.md).
"""

from .engine.checks import LAYOUTS
from .forensics import (
    Diagnosis,
    GridDiagnosis,
    GridIdentification,
    Identification,
    RopeIdentification,
    diagnose,
    diagnose_grid,
    identify,
    identify_grid,
    identify_rope,
    parse_printed,
)
from .language import get_language, set_language
from .rope import (
    ROPE_TYPES,
    ROTARY_LAYOUTS,
    apply_rotary,
    convert_rotary_layout,
    rotary_cos_sin,
    rotary_frequencies,
    rotary_permutation,
)
from .sinusoidal import (
    Convention,
    angles,
    column_order,
    convert_layout,
    denominators,
    encode,
    frequencies,
    grid_encoding,
    interleave,
    layout_permutation,
    list_conventions,
    list_grid_conventions,
    positional_encoding,
    shift_matrix,
    wavelengths,
)
from .sinusoidal.conventions import NAMES as CONVENTIONS
from .sinusoidal.conventions import resolve as convention

__version__ = "0.1.0"

__all__ = [
    # The core: the table, its steps, RoPE, and the check on a table of your own.
    "positional_encoding",
    "encode",
    "denominators",
    "frequencies",
    "angles",
    "interleave",
    "rotary_cos_sin",
    "apply_rotary",
    "diagnose",
    "set_language",
    # Sinusoidal: conventions, layouts, geometry, grids.
    "CONVENTIONS",
    "Convention",
    "LAYOUTS",
    "column_order",
    "convention",
    "convert_layout",
    "grid_encoding",
    "layout_permutation",
    "list_conventions",
    "list_grid_conventions",
    "shift_matrix",
    "wavelengths",
    # Rotary (posenc.rope has the grids and configs too).
    "ROPE_TYPES",
    "ROTARY_LAYOUTS",
    "convert_rotary_layout",
    "rotary_frequencies",
    "rotary_permutation",
    # Forensics.
    "Diagnosis",
    "GridDiagnosis",
    "GridIdentification",
    "Identification",
    "RopeIdentification",
    "diagnose_grid",
    "identify",
    "identify_grid",
    "identify_rope",
    "parse_printed",
    # Messages.
    "get_language",
]
