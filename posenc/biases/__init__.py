"""Position as a bias on the attention scores instead of a vector on the input: ALiBi's
linear penalties (BLOOM, MPT) and T5's bucketed, learned relative bias, exact to
transformers' code; the relative positions and Toeplitz matrices they share."""

from .alibi import alibi_bias, alibi_slopes
from .relative import relative_positions, toeplitz
from .t5 import relative_position_bias, relative_position_bucket

__all__ = [
    "alibi_bias",
    "alibi_slopes",
    "relative_position_bias",
    "relative_position_bucket",
    "relative_positions",
    "toeplitz",
]
