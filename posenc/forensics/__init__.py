"""Forensics on a frozen table: which convention wrote it (``identify``, ``identify_grid``, ``identify_rope``),
what went wrong (``diagnose``, ``diagnose_grid``), and reading a table from its printed text."""

from .diagnosis import Diagnosis, diagnose
from .grids import GridDiagnosis, GridIdentification, diagnose_grid, identify_grid
from .identification import Identification, identify
from .printed import parse_printed
from .rotary import RopeIdentification, identify_rope

__all__ = [
    "Diagnosis",
    "GridDiagnosis",
    "GridIdentification",
    "Identification",
    "RopeIdentification",
    "diagnose",
    "diagnose_grid",
    "identify",
    "identify_grid",
    "identify_rope",
    "parse_printed",
]
