"""Rotary position embedding (RoPE): frequencies exact to transformers' rope types, cos/sin
tables, the rotation and its layouts; xPos (RoPE with a decay); RoPE over grids (2-D axial, M-RoPE, a width per axis, pixel
frequencies, RoPE-Mixed's learned frequencies) and the position ids of vision-language models and Flux; what a transformers config
asks for, layer by layer."""

from .axial import (
    AXIAL_CONVENTIONS,
    axial_cos_sin,
    axial_frequencies,
    flux_position_ids,
    grid_position_ids,
    mrope_axes,
    mrope_cos_sin,
    mrope_position_ids,
    per_axis_cis,
    per_axis_cos_sin,
    per_axis_frequencies,
)
from .configs import LayerPosition, layer_plan, rotary_arguments
from .mixed import mixed_cos_sin, mixed_frequencies
from .pixels import PIXEL_SPACINGS, pixel_cos_sin, pixel_frequencies
from .rotary import (
    ROPE_TYPES,
    ROTARY_LAYOUTS,
    apply_rotary,
    convert_rotary_layout,
    rotary_cos_sin,
    rotary_dim,
    rotary_frequencies,
    rotary_permutation,
)
from .xpos import xpos_cos_sin, xpos_decay

__all__ = [
    "AXIAL_CONVENTIONS",
    "LayerPosition",
    "PIXEL_SPACINGS",
    "ROPE_TYPES",
    "ROTARY_LAYOUTS",
    "apply_rotary",
    "axial_cos_sin",
    "axial_frequencies",
    "convert_rotary_layout",
    "flux_position_ids",
    "grid_position_ids",
    "layer_plan",
    "mixed_cos_sin",
    "mixed_frequencies",
    "mrope_axes",
    "mrope_cos_sin",
    "mrope_position_ids",
    "per_axis_cis",
    "per_axis_cos_sin",
    "per_axis_frequencies",
    "pixel_cos_sin",
    "pixel_frequencies",
    "rotary_arguments",
    "rotary_cos_sin",
    "rotary_dim",
    "rotary_frequencies",
    "rotary_permutation",
    "xpos_cos_sin",
    "xpos_decay",
]
