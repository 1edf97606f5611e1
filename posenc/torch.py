"""posenc for PyTorch: the same tables as ``posenc`` computed with torch ops, and a module.

Importing this module imports torch; ``import posenc`` alone does not.
"""

import torch
from torch import nn

from . import _checks, _core

DTYPES = (torch.float16, torch.bfloat16, torch.float32, torch.float64)


def _check_dtype(dtype):
    if dtype is None:
        dtype = torch.get_default_dtype()
    names = "torch.float16, torch.bfloat16, torch.float32, torch.float64 or None"
    return _checks.check_dtype(dtype, DTYPES, names)


def _as_positions(positions):
    if not isinstance(positions, torch.Tensor):
        # Lists go through NumPy so Python floats keep float64 (torch would make float32).
        return torch.from_numpy(_core.as_positions(positions))
    dtype = positions.dtype
    kind = "b" if dtype == torch.bool else "c" if dtype.is_complex else "f" if dtype.is_floating_point else "i"
    _checks.check_position_kind(kind, f"dtype {dtype}")
    if kind == "f":
        _checks.check_finite(bool(torch.isfinite(positions).all()), f"a tensor of shape {tuple(positions.shape)}")
    return positions.to(torch.float64)


def encode(positions, d_model, *, base=10000.0, layout="interleaved", dtype=None):
    """``positions`` of any shape -> ``(*positions.shape, d_model)`` tensor on their device.

    Same formula, layouts and checks as ``posenc.encode``; angles, sines and cosines in
    float64, the result cast to ``dtype`` (default: torch's default dtype).
    """
    dtype = _check_dtype(dtype)
    order = _core.column_order(d_model, layout)
    positions = _as_positions(positions)
    device = positions.device
    freqs = torch.as_tensor(_core.frequencies(d_model, base), device=device)
    theta = positions[..., None] * freqs
    both = torch.cat([theta.sin(), theta.cos()], dim=-1)
    return both.index_select(-1, torch.as_tensor(order, device=device)).to(dtype)


def positional_encoding(length, d_model, *, base=10000.0, layout="interleaved", dtype=None, device=None):
    """The ``(length, d_model)`` table for positions ``0 .. length - 1``, as ``posenc.positional_encoding``."""
    length = _checks.check_length(length)
    positions = torch.arange(length, dtype=torch.float64, device=device)
    return encode(positions, d_model, base=base, layout=layout, dtype=dtype)


class PositionalEncoding(nn.Module):
    """Add the sinusoidal table to batch-first embeddings, then apply dropout.

    ``forward(x)``: ``x`` of shape ``(batch, seq, d_model)`` (or ``(seq, d_model)``) returns
    ``dropout(x + PE[:seq])``, same shape and dtype as ``x``. The table is a
    non-persistent buffer: it follows ``.to(device)`` and stays out of ``state_dict``.
    A sequence longer than ``max_len`` grows the table to that length.
    """

    def __init__(self, d_model, max_len=5000, *, dropout=0.0, base=10000.0, layout="interleaved"):
        super().__init__()
        self.d_model = _checks.check_d_model(d_model)
        self.base = _checks.check_base(base)
        self.layout = _checks.check_layout(layout)
        max_len = _checks.check_length(max_len, "max_len")
        self.dropout = nn.Dropout(_checks.check_dropout(dropout))
        self.register_buffer("pe", self._table(max_len), persistent=False)

    def _table(self, length, device=None, dtype=None):
        return positional_encoding(length, self.d_model, base=self.base, layout=self.layout, dtype=dtype, device=device)

    @property
    def max_len(self):
        return self.pe.shape[0]

    def forward(self, x):
        if not isinstance(x, torch.Tensor):
            raise TypeError(f"x must be a torch.Tensor, got {type(x).__name__}")
        _checks.check_input_width(x.shape, self.d_model)
        seq = x.shape[-2]
        if seq > self.max_len:
            self.pe = self._table(seq, device=self.pe.device, dtype=self.pe.dtype)
        return self.dropout(x + self.pe[:seq].to(x.dtype))

    def extra_repr(self):
        return f"d_model={self.d_model}, max_len={self.max_len}, base={self.base:g}, layout={self.layout!r}"
