"""posenc for PyTorch: the same tables as ``posenc`` as tensors, and modules.

Importing this module imports torch; ``import posenc`` alone does not. The functions and the
modules' logic are ``posenc.front``'s, bound to torch: ``dtype`` defaults to torch's default
dtype; outputs go to the positions' device (``device=`` for the tables, default torch's).
Eagerly on the CPU NumPy's kernels write into memory torch takes over (``torch.from_numpy``);
on another device, for bfloat16, and under ``torch.compile`` (``fullgraph=True`` works for
the modules, M-RoPE and ``RotaryEmbeddingPerLayerType`` included; ``dynamic`` and ``longrope``,
which read the largest position, compile with a graph break) the same kernels run in torch
operations (``posenc.engine.routes``).
"""

import math
from collections.abc import Sequence
from typing import Any

import numpy.typing as npt
import torch
from torch import nn

from . import front
from .front import Positions, check_kind  # by name: the front's module is reached through one name in a torch.compile trace
from .engine import checks
from .engine.backends import backend
from .forensics.grids import diagnose_grid, identify_grid
from .rope import configs
from .rope.rotary import ROPE_TYPES, ROTARY_LAYOUTS, convert_rotary_layout, rotary_frequencies, rotary_permutation
from .sinusoidal import conventions, tables
from .sinusoidal.grid import list_grid_conventions
from .sinusoidal.layouts import convert_layout

__all__ = [
    "DTYPES", "ROPE_TYPES", "ROTARY_LAYOUTS", "PositionalEncoding", "RelativePositionBias", "RotaryEmbedding",
    "RotaryEmbeddingPerLayerType", "alibi_bias", "alibi_score_mod", "alibi_slopes", "apply_rotary", "axial_cos_sin", "convert_layout",
    "convert_rotary_layout", "diagnose_grid", "encode", "grid_encoding", "identify_grid", "list_grid_conventions", "mrope_cos_sin",
    "positional_encoding", "relative_position_bias", "relative_position_bucket", "resample_abs_pos_embed", "rotary_cos_sin",
    "rotary_frequencies", "rotary_permutation", "t5_score_mod", "RotaryEmbeddingMixed", "per_axis_cis", "per_axis_cos_sin", "pixel_cos_sin",
    "random_fourier_features", "xpos_cos_sin",
]

# The dtypes NumPy builds a table in (bfloat16 is rounded from float32), and those of position ids.
_NUMPY = (torch.float16, torch.float32, torch.float64)
_INTEGERS = (torch.int64, torch.int32)
_host = lambda positions: positions.detach().to(torch.float64).numpy()
_largest = lambda positions: float(positions.max())  # a value: a graph break under torch.compile


def _intake(positions, like=None, fits=None):
    compiling = torch.compiler.is_compiling()
    if not isinstance(positions, torch.Tensor):
        # Lists go through NumPy so Python floats keep float64 (torch would make float32).
        positions = torch.from_numpy(tables.as_positions(positions, fits=fits))
    elif positions.dtype not in _INTEGERS:  # position ids, the common case, need no check
        if positions.is_floating_point():
            # A compiled graph cannot branch on values (the check would be a graph break); a meta tensor has none.
            if not compiling and positions.device.type != "meta":
                checks.check_finite(bool(torch.isfinite(positions).all()), f"a tensor of shape {tuple(positions.shape)}")
        elif positions.dtype == torch.bool or positions.is_complex():
            check_kind("b" if positions.dtype == torch.bool else "c", positions.dtype)  # pragma: no mutate (any kind but i, u, f: refused)
    if like is not None:
        positions = positions.to(like.device if isinstance(like, torch.Tensor) else _device(like))
    host = None if compiling or not positions.is_cpu else _host
    return Positions(positions, positions.shape, compiling, host, positions.device, _largest)


def _device(device):
    """``device`` as a ``torch.device`` (None: torch's default)."""
    try:
        return torch.get_default_device() if device is None else torch.device(device)
    except (RuntimeError, TypeError):
        raise TypeError(f"device must be a torch.device or its name ('cpu', 'cuda:0'), got {checks.shown(device)}") from None


def _adopt(array, dtype, device=None):
    return torch.from_numpy(array).to(device=_device(device), dtype=dtype)


def _out(out, shape, dtype, device):
    if not isinstance(out, torch.Tensor):
        raise TypeError(f"out must be a torch.Tensor, got {checks.shown(out)}")
    checks.check_out(out.shape, out.dtype, shape, dtype)
    if device is not None and out.device != torch.device(device):
        raise ValueError(f"out must be on device {device}, got out on {out.device}")
    # NumPy writes straight into out's memory when it can: on the CPU, in a NumPy dtype, without autograd.
    shared = out.device.type == "cpu" and dtype in _NUMPY and not out.requires_grad and not torch.compiler.is_compiling()
    return out, out.numpy() if shared else None


SPEC = front.Spec(
    module=__name__, xp=backend("torch"), tensor="torch.Tensor", dtype="torch.dtype",
    dtype_names="torch.float16, torch.bfloat16, torch.float32, torch.float64 or None",
    default_dtype=torch.get_default_dtype, as_dtype=lambda dtype: dtype, is_tensor=lambda value: isinstance(value, torch.Tensor),
    intake=_intake, adopt=_adopt, complex=torch.complex, traced=lambda: torch.compiler.is_compiling(), out=_out,
)
DTYPES = SPEC.dtypes
(encode, positional_encoding, grid_encoding, rotary_cos_sin, axial_cos_sin, mrope_cos_sin, apply_rotary, xpos_cos_sin, per_axis_cos_sin,
 per_axis_cis, pixel_cos_sin, random_fourier_features, alibi_slopes, alibi_bias, relative_position_bucket, relative_position_bias,
 alibi_score_mod, t5_score_mod) = (front.bound(f, SPEC, without=("out",) if f is front.grid_encoding else ())
                                   for f in front.TABLES + front.ROPE + front.VISION + front.BIASES + front.SCORE_MODS)


class PositionalEncoding(front.SinusoidalModule, nn.Module):
    __doc__ = f"""{front.SinusoidalModule.__doc__}
    torch: ``forward(x, positions=None)``, in ``x``'s dtype. The table is a non-persistent buffer:
    it follows ``.to(device)`` and stays out of ``state_dict``; a longer sequence grows it.
    """

    _spec = SPEC
    pe: torch.Tensor

    def __init__(self, d_model: int, max_len: int = 5000, *, dropout: float = 0.0, convention: str | conventions.Convention = "paper",
                 base: float | None = None, layout: str | None = None, **options: Any) -> None:
        super().__init__()
        max_len, dropout = self._configure(d_model, max_len, dropout, convention, base, layout, options)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("pe", self._table(max_len), persistent=False)

    def forward(self, x: torch.Tensor, positions: torch.Tensor | npt.ArrayLike | None = None) -> torch.Tensor:
        return self.dropout(x + self._rows(x, positions).to(x.dtype))

    def _first_rows(self, x):
        if x.shape[-2] > self.max_len:
            self.pe = self._table(x.shape[-2], self.pe.dtype, self.pe.device)
        return self.pe[: x.shape[-2]]


class RotaryEmbeddingPerLayerType(nn.ModuleDict):
    """One ``RotaryEmbedding`` per layer type: ``forward(x, position_ids, layer_type)`` calls
    that type's module, as Gemma 3's rotary module is called (sliding and full attention
    turn at different bases)."""

    def __init__(self, modules: dict[str, "RotaryEmbedding"] | None = None) -> None:
        super().__init__(None if modules is None else configs.check_modules(modules, RotaryEmbedding))

    def forward(
        self, x: torch.Tensor, position_ids: torch.Tensor | npt.ArrayLike, layer_type: str
    ) -> tuple[torch.Tensor, torch.Tensor] | torch.Tensor:
        return self[configs.check_layer_type(layer_type, self)](x, position_ids)


class RotaryEmbedding(front.RotaryModule, nn.Module):
    __doc__ = f"""{front.RotaryModule.__doc__}
    torch: ``forward(x, position_ids)``, like transformers' rotary modules.
    """

    _spec = SPEC
    _per_layer_type = RotaryEmbeddingPerLayerType

    def forward(self, x: torch.Tensor, position_ids: torch.Tensor | npt.ArrayLike) -> tuple[torch.Tensor, torch.Tensor] | torch.Tensor:
        return self._cos_sin(x, position_ids)

    def _apply(self, fn, recurse=True):
        # .to(device), .cuda(), ...: the frequencies follow to the new device, as float64.
        module = super()._apply(fn, recurse)  # pragma: no mutate (no child modules: recurse changes nothing)
        self._state.on(fn(torch.empty(0)))
        return module


class RotaryEmbeddingMixed(front.MixedModule, nn.Module):
    _spec, forward = SPEC, front.MixedModule._call

    def __init__(self, head_dim: int, depth: int, num_heads: int, *, base: float = 10.0, layout: str = "interleaved") -> None:
        super().__init__()
        self.freqs = nn.Parameter(self._configure(head_dim, depth, num_heads, base, layout, torch.rand))  # timm's draws, seed for seed


class RelativePositionBias(front.RelativeBiasModule, nn.Module):
    _spec = SPEC
    _new_table = staticmethod(nn.Embedding)

    def forward(self, query_length: int, key_length: int, key_offset: int = 0) -> torch.Tensor:
        return self._bias(self.relative_attention_bias.weight, query_length, key_length, key_offset)


# torch.nn.functional.interpolate's modes for an image.
_INTERPOLATIONS = ("nearest", "nearest-exact", "bilinear", "bicubic", "area")


def _grid_size(size, name):
    if isinstance(size, str) or not isinstance(size, Sequence) or len(size) != 2:
        raise TypeError(f"{name} must be a (height, width) pair, got {checks.shown(size)}")
    return tuple(checks.check_int_at_least(n, f"each size in {name}", 1) for n in size)


def resample_abs_pos_embed(
    posemb: torch.Tensor, new_size: Sequence[int], old_size: Sequence[int] | None = None, *, num_prefix_tokens: int = 1,
    interpolation: str = "bicubic", antialias: bool = True, align_corners: bool | None = None,
) -> torch.Tensor:
    """A grid's position table resampled to ``new_size`` as timm's ``resample_abs_pos_embed`` does.

    ``posemb``: ``(1, prefix + H*W, d)`` or ``(prefix + H*W, d)`` tensor, its grid rows
    row-major; ``old_size``: ``(H, W)`` (None: a square grid, as timm assumes). The first
    ``num_prefix_tokens`` rows (class tokens) are kept as they are; the grid, as a
    ``(1, d, H, W)`` image in float32, goes through ``torch.nn.functional.interpolate(...,
    size=new_size, mode=interpolation, align_corners=align_corners, antialias=antialias)``
    (bicubic with antialiasing by default; ``align_corners`` as interpolate's: None is False for
    bilinear and bicubic, and must stay None for "nearest" and "area") and back, in the input's
    dtype and rank. The table comes back unchanged when ``old_size`` equals ``new_size``. Same
    calls and the same early return as timm 1.0.31 (timm/layers/pos_embed.py; before
    huggingface/pytorch-image-models#2737 timm also returned a table unchanged whenever the
    token count was unchanged and ``new_size`` square, a 4 x 9 table asked for 6 x 6).
    Interpolating a sin-cos table only approximates the encoding at the stretched positions;
    ``grid_encoding`` at the new grid (or at those positions) is exact.
    """
    if not isinstance(posemb, torch.Tensor):
        raise TypeError(f"posemb must be a torch.Tensor, got {checks.shown(posemb)}")
    if posemb.ndim not in (2, 3) or (posemb.ndim == 3 and posemb.shape[0] != 1):
        raise ValueError(f"posemb must have shape (1, tokens, d) or (tokens, d), got {tuple(posemb.shape)}")
    new_size = _grid_size(new_size, "new_size")
    num_prefix_tokens = checks.check_int_at_least(num_prefix_tokens, "num_prefix_tokens", 0)
    checks.check_choice(interpolation, _INTERPOLATIONS, "interpolation")
    checks.check_bool(antialias, "antialias")
    if align_corners is not None:
        align_corners = checks.check_bool(align_corners, "align_corners")
    table = posemb if posemb.ndim == 2 else posemb[0]
    tokens = table.shape[0] - num_prefix_tokens
    if old_size is None:
        side = math.isqrt(max(tokens, 0))
        if side * side != tokens:
            raise ValueError(
                f"old_size is needed: {tokens} grid tokens (after {num_prefix_tokens} prefix) are not a square grid"
            )
        old_size = (side, side)
    old_size = _grid_size(old_size, "old_size")
    if old_size[0] * old_size[1] != tokens:
        raise ValueError(f"old_size {old_size} holds {old_size[0] * old_size[1]} tokens, posemb has {tokens} after the prefix "
                         f"of num_prefix_tokens={num_prefix_tokens}")
    if old_size == new_size:
        return posemb
    prefix, body = table[:num_prefix_tokens], table[num_prefix_tokens:]
    image = body.float().reshape(1, *old_size, -1).permute(0, 3, 1, 2)
    image = torch.nn.functional.interpolate(image, size=new_size, mode=interpolation, align_corners=align_corners, antialias=antialias)
    body = image.permute(0, 2, 3, 1).reshape(-1, table.shape[1]).to(table.dtype)
    out = torch.cat([prefix, body], dim=0)
    return out if posemb.ndim == 2 else out[None]
