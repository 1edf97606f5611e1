"""posenc for PyTorch: the same tables as ``posenc`` as tensors, and a module.

Importing this module imports torch; ``import posenc`` alone does not.
"""

import dataclasses
import functools
import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import torch
from torch import nn

from .engine import checks, kernels, rotation
from .engine.backends import backend
from .engine.frequencies import Frequencies
from .forensics.grids import diagnose_grid, identify_grid
from .rope import axial, configs, rotary
from .rope.rotary import ROPE_TYPES, ROTARY_LAYOUTS, convert_rotary_layout, rotary_frequencies, rotary_permutation
from .sinusoidal import conventions, grid, tables
from .sinusoidal.grid import list_grid_conventions
from .sinusoidal.layouts import convert_layout

__all__ = [
    "DTYPES",
    "ROPE_TYPES",
    "ROTARY_LAYOUTS",
    "PositionalEncoding",
    "RotaryEmbedding",
    "RotaryEmbeddingPerLayerType",
    "apply_rotary",
    "axial_cos_sin",
    "convert_layout",
    "convert_rotary_layout",
    "diagnose_grid",
    "encode",
    "grid_encoding",
    "identify_grid",
    "list_grid_conventions",
    "mrope_cos_sin",
    "positional_encoding",
    "resample_abs_pos_embed",
    "rotary_cos_sin",
    "rotary_frequencies",
    "rotary_permutation",
]

TORCH = backend("torch")
NUMPY = backend("numpy")

DTYPES = (torch.float16, torch.bfloat16, torch.float32, torch.float64)
# The dtypes NumPy can build a table in directly (bfloat16 is rounded from float32).
_NUMPY = {torch.float16: np.float16, torch.float32: np.float32, torch.float64: np.float64}


def _check_dtype(dtype):
    if dtype is None:
        dtype = torch.get_default_dtype()
    names = "torch.float16, torch.bfloat16, torch.float32, torch.float64 or None"
    return checks.check_dtype(dtype, DTYPES, names)


def _as_positions(positions):
    if not isinstance(positions, torch.Tensor):
        # Lists go through NumPy so Python floats keep float64 (torch would make float32).
        return torch.from_numpy(tables.as_positions(positions))
    dtype = positions.dtype
    kind = "b" if dtype == torch.bool else "c" if dtype.is_complex else "f" if dtype.is_floating_point else "i"
    checks.check_position_kind(kind, f"dtype {dtype}")
    if kind == "f" and not torch.compiler.is_compiling():
        # A compiled graph cannot branch on values: there the check would be a graph break.
        checks.check_finite(bool(torch.isfinite(positions).all()), f"a tensor of shape {tuple(positions.shape)}")
    return positions.to(torch.float64)


def _output(out, shape, dtype, device):
    if out is None and torch.device(device).type == "cpu" and dtype in _NUMPY and not torch.compiler.is_compiling():
        # On Linux NumPy asks the kernel for huge pages (2 MiB) for large arrays, so a fresh
        # output takes 512 times fewer page faults than in torch.empty's memory (about a
        # third of encode's time at 64 MiB, measured).
        return torch.from_numpy(np.empty(shape, _NUMPY[dtype]))
    if out is None:
        return torch.empty(shape, dtype=dtype, device=device)
    if not isinstance(out, torch.Tensor):
        raise TypeError(f"out must be a torch.Tensor, got {type(out).__name__}")
    checks.check_out(out.shape, out.dtype, shape, dtype)
    if device is not None and out.device != torch.device(device):
        raise ValueError(f"out must be on device {device}, got out on {out.device}")
    return out


def encode(
    positions: torch.Tensor | npt.ArrayLike, d_model: int, *, convention: str | conventions.Convention = "paper",
    base: float | None = None, layout: str | None = None, dtype: torch.dtype | None = None, out: torch.Tensor | None = None,
    **options: Any,
) -> torch.Tensor:
    """``positions`` of any shape -> ``(*positions.shape, d_model)`` tensor on their device.

    Same formula, conventions, layouts, checks and accuracy as ``posenc.encode``: float32
    (and half precision, rounded from it) by the reduction in half turns of
    ``_rotation`` part 3, float64 from the double-float64 angle of part 1, both written
    block by block straight into the output's columns (``_write_sin_cos``). ``dtype``
    defaults to torch's default dtype. ``convention``, ``base``, ``layout`` and ``options``
    as in ``posenc.encode``. ``out``: a tensor of that shape, dtype and device to write
    into (returned).
    """
    dtype = _check_dtype(dtype)
    d_model = checks.check_d_model(d_model)
    chosen = conventions.resolve(convention, base=base, layout=layout, **options)
    checked = _as_positions(positions)
    if not torch.compiler.is_compiling():  # a compiled graph's sizes may be symbols
        checks.check_entries("positions.size * d_model", (checked.numel(), d_model))
    return _encode(checked, d_model, chosen, chosen.frequency_record(d_model), dtype, out)


def _encode(positions, d_model, chosen, frequencies, dtype, out=None):
    # encode after its checks: float64 positions, the resolved convention and its frequency_record(d_model).
    w_hi, w_lo, width = frequencies.hi, frequencies.lo, frequencies.width
    positions = conventions.offset_positions(positions, chosen)
    out = _output(out, (*positions.shape, d_model), dtype, positions.device)
    flat = out.is_contiguous()
    rows = (out if flat else torch.empty(out.shape, dtype=dtype, device=out.device)).view(-1, d_model)
    sines, cosines = rotation.column_slices(width, chosen.layout)
    w_hi, w_lo = (_float64(w, positions.device) for w in (w_hi, w_lo))
    # The slices count the sin/cos columns only: an odd width's zero column lies past them.
    columns = rows[:, :width]
    _write_sin_cos(positions.reshape(-1), w_hi, w_lo, columns[:, sines], columns[:, cosines])
    rows[:, width:] = 0
    if chosen.padding_idx is not None:
        rows[positions.reshape(-1) == chosen.padding_idx] = 0
    if not flat:
        out.copy_(rows.view(out.shape))  # out's strides allowed no flat view
    return out


def _float64(values, device):
    # One route eager and compiled (torch.compile traces NumPy arrays as tensors, and torch.tensor
    # warns when given a tensor): as_tensor, on a writable copy of a NumPy array, since the cached
    # frequencies are read-only and as_tensor warns about sharing them.
    if isinstance(values, np.ndarray):
        values = np.array(values, np.float64)
    return torch.as_tensor(values, dtype=torch.float64, device=device)


def _sin_cos(positions, w_hi, w_lo, dtype):
    """``(sin, cos)`` of ``positions[..., None] * (w_hi + w_lo)``, each ``dtype``, ``(*positions.shape, h)``.

    ``positions``: a float64 tensor of any shape; ``w_hi + w_lo``: ``h`` float64
    frequencies of any kind (tensors or arrays; ``w_lo`` may be zeros). On the positions'
    device. Accuracy as ``posenc.engine.rotation.sin_cos``: float64 ~2e-16, float32 within
    2e-7, half precision one rounding of the float32 value.
    """
    w_hi, w_lo = (_float64(w, positions.device) for w in (w_hi, w_lo))
    shape = (*positions.shape, len(w_hi))
    sines = torch.empty(shape, dtype=dtype, device=positions.device)
    cosines = torch.empty_like(sines)
    flat = (-1, len(w_hi))
    _write_sin_cos(positions.reshape(-1), w_hi, w_lo, sines.view(flat), cosines.view(flat))
    return sines, cosines


def _write_sin_cos(positions, w_hi, w_lo, sines, cosines):
    """``rotation.write_sin_cos`` for tensors: into ``sines`` ``(N, h)`` and ``cosines`` ``(N, m <= h)``.

    On the CPU, NumPy's kernel writes straight into the tensors' memory (``Tensor.numpy``
    shares it, strides and all): each core its own run of rows, block by block, where
    torch's parallel ops would pay a thread hand-off for every op of every block.
    Elsewhere (and for bfloat16, which NumPy lacks) the same kernel in torch ops. Under
    torch.compile, which can trace neither NumPy's kernel nor ops writing into strided columns,
    ``kernels.sin_cos`` whole, then copies into the columns (the compiler fuses them).
    """
    if torch.compiler.is_compiling():
        s, c = kernels.sin_cos(TORCH, positions, w_hi, w_lo, sines.dtype)
        sines.copy_(s)
        cosines.copy_(c[:, : cosines.shape[-1]])
    elif sines.device.type == "cpu" and sines.dtype in _NUMPY and not sines.requires_grad:
        parts = (w.detach().cpu().numpy() for w in (positions, w_hi, w_lo))
        rotation.write_sin_cos(*parts, sines.numpy(), cosines.numpy())
    else:
        # Blocks big enough that a device's threads split each op and its launch cost is spread thin.
        kernels.write_sin_cos(TORCH, positions, w_hi, w_lo, sines, cosines, block=4 * kernels.BLOCK)


def positional_encoding(
    length: int, d_model: int, *, convention: str | conventions.Convention = "paper", base: float | None = None,
    layout: str | None = None, dtype: torch.dtype | None = None, device: torch.device | str | None = None,
    out: torch.Tensor | None = None, **options: Any,
) -> torch.Tensor:
    """The ``(length, d_model)`` table for positions ``0 .. length - 1``, as ``posenc.positional_encoding``.

    NumPy's builder (``posenc.positional_encoding``: two small accurate tables and one
    complex multiply) writes the table, straight into the tensor's memory on the CPU
    (``torch.from_numpy`` and ``Tensor.numpy`` share it); another device or bfloat16 gets
    a copy of the float32/float64 table. Accuracy as in NumPy: float32 within 2e-7,
    float64 ~1e-15, half precision one rounding of the float32 value. ``convention``,
    ``base``, ``layout`` and ``options`` as in ``posenc.positional_encoding``. ``out``: a
    ``(length, d_model)`` tensor of ``dtype`` to write into (returned); ``device``
    defaults to its device, else torch's default device.
    """
    length = checks.check_length(length)
    dtype = _check_dtype(dtype)
    d_model = checks.check_d_model(d_model)
    checks.check_entries("length * d_model", (length, d_model))
    out = None if out is None else _output(out, (length, d_model), dtype, device)
    # NumPy writes the table straight into out's memory when it can: on the CPU, in a NumPy dtype, without autograd.
    shared = out if out is not None and out.device.type == "cpu" and dtype in _NUMPY and not out.requires_grad else None
    table = tables.positional_encoding(
        length, d_model, convention=convention, base=base, layout=layout,
        dtype=_NUMPY.get(dtype, np.float32), out=None if shared is None else shared.numpy(), **options,
    )
    if shared is not None:
        return shared
    tensor = torch.from_numpy(table)
    if out is not None:
        return out.copy_(tensor)
    return tensor.to(device=torch.get_default_device() if device is None else device, dtype=dtype)


class PositionalEncoding(nn.Module):
    """Add the sinusoidal table to batch-first embeddings, then apply dropout.

    ``forward(x)``: ``x`` of shape ``(batch, seq, d_model)`` (or ``(seq, d_model)``) returns
    ``dropout(x + PE[:seq])``, same shape and dtype as ``x``. The table is a
    non-persistent buffer: it follows ``.to(device)`` and stays out of ``state_dict``.
    A sequence longer than ``max_len`` grows the table to that length. ``convention``,
    ``base``, ``layout`` and ``options`` choose the table as in ``positional_encoding``
    (row ``k`` holds position ``offset + k``); ``self.convention`` is the resolved one.
    """

    pe: torch.Tensor

    def __init__(self, d_model: int, max_len: int = 5000, *, dropout: float = 0.0, convention: str | conventions.Convention = "paper",
                 base: float | None = None, layout: str | None = None, **options: Any) -> None:
        super().__init__()
        self.d_model = checks.check_d_model(d_model)
        self.convention = conventions.resolve(convention, base=base, layout=layout, **options)
        max_len = checks.check_length(max_len, "max_len")
        self.dropout = nn.Dropout(checks.check_dropout(dropout))
        self._frequencies = self.convention.frequency_record(self.d_model)
        self.register_buffer("pe", self._table(max_len), persistent=False)

    def _table(self, length, device=None, dtype=None):
        if torch.compiler.is_compiling():
            # A longer sequence inside a compiled graph: the same rows by encode's torch operations,
            # from frequencies made in __init__ (torch.compile can trace neither NumPy's table
            # builder nor the decimal arithmetic of the frequencies).
            positions = torch.arange(length, dtype=torch.float64, device=device)
            return _encode(positions, self.d_model, self.convention, self._frequencies, dtype)
        return positional_encoding(length, self.d_model, convention=self.convention, dtype=dtype, device=device)

    @property
    def max_len(self) -> int:
        return self.pe.shape[0]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not isinstance(x, torch.Tensor):
            raise TypeError(f"x must be a torch.Tensor, got {type(x).__name__}")
        checks.check_input_width(x.shape, self.d_model)
        seq = x.shape[-2]
        if seq > self.max_len:
            self.pe = self._table(seq, device=self.pe.device, dtype=self.pe.dtype)
        return self.dropout(x + self.pe[:seq].to(x.dtype))

    def extra_repr(self) -> str:
        c = self.convention
        named = "" if c.name == "paper" else f", convention={c.name!r}"
        return f"d_model={self.d_model}, max_len={self.max_len}{named}, base={c.base:g}, layout={c.layout!r}"


# Rotary position embedding (RoPE): posenc.rope.rotary's functions on tensors, and a module.


def _rope_cos_sin(positions, frequencies, layout, dtype, form="channels"):
    # kernels.rope_cos_sin on tensors (positions (axes, ...) where the frequencies have axes);
    # form: see RotaryEmbedding ("complex": the "pairs" values as cos + i sin).
    sin_cos = axial.pair_sin_cos(TORCH, _sin_cos, frequencies.groups)
    if form != "complex":
        return kernels.rope_cos_sin(TORCH, sin_cos, positions, frequencies, layout, dtype, form)
    wide = torch.float64 if dtype == torch.float64 else torch.float32
    c, s = kernels.rope_cos_sin(TORCH, sin_cos, positions, frequencies, layout, wide, "pairs")
    return torch.complex(c, s)


def rotary_cos_sin(
    positions: torch.Tensor | npt.ArrayLike, head_dim: int, *, base: float = 10000.0, rope_type: str = "default",
    layout: str = "half", dtype: torch.dtype | None = None, **params: Any,
) -> tuple[torch.Tensor, torch.Tensor]:
    """``(cos, sin)`` tensors, each ``(*positions.shape, rotary_dim)``, on the positions' device.

    As ``posenc.rotary_cos_sin`` (frequencies, attention factor, layouts; float32 within 2e-7
    of the exact value at positions up to 10**7, half precision one rounding of that); ``dtype`` defaults to torch's default dtype.
    ``positions``: a tensor (e.g. ``position_ids`` of shape ``(batch, seq)``) or array-like.
    """
    layout = rotary.check_rotary_layout(layout)
    dtype = _check_dtype(dtype)
    frequencies = rotary.rope_frequencies(head_dim, base, rope_type, **params)
    return _rope_cos_sin(_as_positions(positions), frequencies, layout, dtype)


def axial_cos_sin(
    positions: torch.Tensor | npt.ArrayLike, head_dim: int, *, base: float = 10000.0, convention: str = "qwen2_vl",
    dtype: torch.dtype | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """``(cos, sin)`` tensors of 2-D RoPE, each ``(*positions.shape[1:], head_dim)``, as
    ``posenc.rope.axial.axial_cos_sin`` (``positions`` ``(2, ...)``: rows, then columns)."""
    frequencies = axial.axial_frequencies(head_dim, base, convention=convention)
    return _rope_cos_sin(_as_positions(positions), frequencies, "half", _check_dtype(dtype))


def mrope_cos_sin(position_ids: torch.Tensor | npt.ArrayLike, head_dim: int, *, mrope_section: Sequence[int],
                  interleaved: bool = False, base: float = 10000.0, rope_type: str = "default",
                  dtype: torch.dtype | None = None, **params: Any) -> tuple[torch.Tensor, torch.Tensor]:
    """``(cos, sin)`` tensors of M-RoPE, each ``(*position_ids.shape[1:], rotary_dim)``, as
    ``posenc.rope.axial.mrope_cos_sin`` (``position_ids`` ``(3, ...)``: time, height, width)."""
    frequencies = axial.mrope_frequencies(head_dim, mrope_section, interleaved, base, rope_type, params)
    return _rope_cos_sin(_as_positions(position_ids), frequencies, "half", _check_dtype(dtype))


def apply_rotary(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, *, layout: str = "half") -> torch.Tensor:
    """``x`` (``(..., seq, head_dim)``) with its pairs rotated by ``cos``/``sin``, as ``posenc.apply_rotary``.

    ``cos``, ``sin``: ``(..., seq, rotary_dim)`` broadcasting against ``x[..., :rotary_dim]``
    (``cos[:, None]`` for ``x`` of ``(batch, heads, seq, head_dim)``): ``kernels.apply_rotary``.
    Channels beyond ``rotary_dim`` pass through.
    """
    for name, value in (("x", x), ("cos", cos), ("sin", sin)):
        if not isinstance(value, torch.Tensor):
            raise TypeError(f"{name} must be a torch.Tensor, got {value!r} ({type(value).__name__})")
    rotated = rotary.check_rotary_shapes(x.shape, cos.shape, sin.shape)
    return kernels.apply_rotary(TORCH, x, cos, sin, rotary.check_rotary_layout(layout), rotated)


class RotaryEmbedding(nn.Module):
    """The ``(cos, sin)`` of RoPE for the positions of a batch, like transformers' rotary modules.

    ``forward(x, position_ids)``: ``position_ids`` of shape ``(batch, seq)`` (any shape)
    gives ``cos`` and ``sin`` of shape ``(*position_ids.shape, rotary_dim)`` in ``x``'s dtype
    on ``x``'s device, ready for ``apply_rotary(q, cos[:, None], sin[:, None])``. Frequencies
    and attention factor as ``posenc.rotary_frequencies`` (``rope_type`` and ``params``
    with transformers' names); ``dynamic`` and ``longrope`` read the sequence length as
    ``position_ids.max() + 1`` in every call (transformers keeps the grown ``dynamic``
    frequencies until the length falls back under ``max_position_embeddings``; posenc does
    not keep state). The frequencies are NumPy float64, not buffers, so ``.to(bfloat16)``
    cannot round them (the failure of rounding ``inv_freq`` to bf16).

    ``mrope_section`` (M-RoPE, ``posenc.rope.axial.mrope_axes``; ``mrope_interleaved`` for
    Qwen3-VL): ``position_ids`` of shape ``(3, batch, seq)`` (time, height, width; a
    ``(batch, seq)`` one stands for three equal rows, as in transformers), and pair ``j`` turns
    by the row ``mrope_axes[j]``. ``form``: ``"channels"`` (cos and sin per channel of
    ``layout``), ``"pairs"`` (one per pair, ``(..., rotary_dim // 2)``, as GPT-OSS), or
    ``"complex"`` (``cos + i sin`` per pair, complex64, Llama 4's ``freqs_cis``).
    ``from_config`` builds one from a transformers config.

    Speed and compilers: the frequencies are kept as float64 tensors per device, so a call
    converts no NumPy array. Up to ``kernels.FEW_ANGLES`` angles (a decoding step) come from the
    float64 angle in a handful of operations (``kernels.rounded_sin_cos``); more go through
    NumPy's blocked kernel on the CPU and the kernels in torch operations elsewhere and under
    ``torch.compile``, which compiles the module (M-RoPE too, and ``RotaryEmbeddingPerLayerType``)
    with ``fullgraph=True``. ``dynamic`` and ``longrope`` (which read a value, the largest
    position) compile without ``fullgraph``: with a graph break.
    """

    FORMS = ("channels", "pairs", "complex")

    def __init__(self, head_dim: int, base: float = 10000.0, *, rope_type: str = "default", layout: str = "half",
                 form: str = "channels", mrope_section: Sequence[int] | None = None, mrope_interleaved: bool = False,
                 **params: Any) -> None:
        super().__init__()
        self.layout = rotary.check_rotary_layout(layout)
        if not checks.is_one_of(form, self.FORMS):
            raise ValueError(f"form must be one of {', '.join(map(repr, self.FORMS))}; got {form!r}")
        self.form = form
        self.head_dim, self.base, self.rope_type, self.params = head_dim, base, rope_type, params
        # The frequencies of a call without a sequence length (this also checks the parameters),
        # and of the last length a dynamic/longrope call saw.
        if mrope_section is None:
            frequencies = rotary.rope_frequencies(head_dim, base, rope_type, **params)
        else:
            frequencies = axial.mrope_frequencies(head_dim, mrope_section, mrope_interleaved, base, rope_type, params)
        self._parts: dict[int | None, Frequencies] = {None: frequencies}
        self.rotary_dim = rotary.rotary_dim(head_dim, rope_type, **params)
        self.mrope_section, self.axes = mrope_section, frequencies.axes
        self._tensors: dict[torch.device, tuple[torch.Tensor, torch.Tensor, torch.Tensor]] = {}
        self._frequencies(torch.get_default_device())

    def _frequencies(self, device):
        """``(w, w_hi, w_lo)``: float64 tensors on ``device`` of the frequencies of a call without a
        sequence length, ``w`` spread over the channels for ``form="channels"``. Made once per
        device (and on ``.to(device)``), so a decoding step converts no NumPy array, and kept out
        of the buffers, so ``.to(bfloat16)`` cannot round them."""
        tensors = self._tensors.get(device)
        if tensors is None:
            w_hi, w_lo = self._parts[None].hi, self._parts[None].lo
            w = kernels.spread(NUMPY, w_hi, self.layout) if self.form == "channels" else w_hi
            tensors = tuple(_float64(a, device) for a in (w, w_hi, w_lo))
            self._tensors = {**self._tensors, device: tensors}
        return tensors

    def _apply(self, fn, recurse=True):
        # .to(device), .cuda(), ...: the frequencies follow to the new device, as float64.
        module = super()._apply(fn, recurse)
        self._frequencies(fn(torch.empty(0)).device)
        return module

    @classmethod
    def from_config(cls, config: Any, *, layer_type: str | None = None) -> "RotaryEmbedding | RotaryEmbeddingPerLayerType":
        """The module for a transformers ``config`` (``posenc.rope_config.rotary_arguments``):
        ``rope_parameters`` read whole, the head size, the family's layout and output form.

        A config with rope parameters per layer type (Gemma 3) gives, without ``layer_type``, a
        ``RotaryEmbeddingPerLayerType`` (``forward(x, position_ids, layer_type)``, as the model calls it).
        """
        return configs.module_from_config(cls, RotaryEmbeddingPerLayerType, config, layer_type)

    @property
    def inv_freq(self) -> torch.Tensor:
        """The float64 frequencies (``rotary_frequencies``) of a call without a sequence length."""
        return torch.from_numpy(np.array(self._parts[None].hi))

    @property
    def attention_factor(self) -> float:
        return self._parts[None].attention

    def forward(self, x: torch.Tensor, position_ids: torch.Tensor | npt.ArrayLike) -> tuple[torch.Tensor, torch.Tensor] | torch.Tensor:
        if not isinstance(x, torch.Tensor):
            raise TypeError(f"x must be a torch.Tensor, got {type(x).__name__}")
        dtype = _check_dtype(x.dtype)
        if self.rope_type not in rotary.LENGTH_DEPENDENT and self.axes is None:
            return self._cos_sin(position_ids, dtype, x.device)
        # M-RoPE (its axis groups fixed at construction), and the rope types that read the largest
        # position (a value: a graph break under torch.compile).
        positions = _as_positions(position_ids).to(x.device)
        if self.axes is not None:
            positions = axial.text_rows(TORCH, positions)
        seq_len = None
        if self.rope_type in rotary.LENGTH_DEPENDENT and positions.numel():
            seq_len = int(positions.max()) + 1
        if seq_len not in self._parts:
            frequencies = rotary.module_frequencies(self.head_dim, self.base, self.rope_type, self.params, seq_len)
            self._parts = {None: self._parts[None], seq_len: dataclasses.replace(frequencies, axes=self.axes)}
        return _rope_cos_sin(positions, self._parts[seq_len], self.layout, dtype, self.form)

    def _cos_sin(self, position_ids, dtype, device):
        """forward for the frequencies fixed at construction, in torch operations on ``device`` but for
        large eager calls on the CPU, which NumPy's blocked kernel serves faster (``_sin_cos``)."""
        if isinstance(position_ids, torch.Tensor) and not (position_ids.is_floating_point() or position_ids.is_complex()
                                                           or position_ids.dtype == torch.bool):
            positions = position_ids.to(device)  # integers: the product with float64 frequencies is float64
        else:
            positions = _as_positions(position_ids).to(device)
        w, w_hi, w_lo = self._frequencies(positions.device)
        attention, form = self._parts[None].attention, self.form
        few = positions.numel() * w_hi.shape[0] <= kernels.FEW_ANGLES
        wide = torch.float64 if dtype == torch.float64 else torch.float32
        if few and dtype != torch.float64:
            c_dtype = wide if form == "complex" else dtype
            s, c = kernels.rounded_sin_cos(TORCH, positions, w, c_dtype, attention)
            return torch.complex(c, s) if form == "complex" else (c, s)
        if not (few or torch.compiler.is_compiling() or positions.device.type != "cpu"):
            return _rope_cos_sin(positions.to(torch.float64), self._parts[None], self.layout, dtype, form)
        parts = Frequencies(w_hi, w_lo, attention)
        sin_cos = functools.partial(kernels.sin_cos, TORCH)
        positions = positions.to(torch.float64)
        if form != "complex":
            return kernels.rope_cos_sin(TORCH, sin_cos, positions, parts, self.layout, dtype, form)
        c, s = kernels.rope_cos_sin(TORCH, sin_cos, positions, parts, self.layout, wide, "pairs")
        return torch.complex(c, s)

    def extra_repr(self) -> str:
        params = "".join(f", {k}={v!r}" for k, v in self.params.items())
        extra = "" if self.form == "channels" else f", form={self.form!r}"
        extra += "" if self.mrope_section is None else f", mrope_section={self.mrope_section!r}"
        return f"head_dim={self.head_dim}, base={self.base:g}, rope_type={self.rope_type!r}, layout={self.layout!r}{extra}{params}"


class RotaryEmbeddingPerLayerType(nn.ModuleDict):
    """One ``RotaryEmbedding`` per layer type: ``forward(x, position_ids, layer_type)`` calls
    that type's module, as Gemma 3's rotary module is called (sliding and full attention
    turn at different bases)."""

    def forward(
        self, x: torch.Tensor, position_ids: torch.Tensor | npt.ArrayLike, layer_type: str
    ) -> tuple[torch.Tensor, torch.Tensor] | torch.Tensor:
        return self[configs.check_layer_type(layer_type, self)](x, position_ids)


# Sin-cos tables on image grids (posenc.sinusoidal.grid), as tensors, and resampling a grid's table.

def grid_encoding(
    shape: Sequence[int], d: int, *, convention: str = "mae", dtype: torch.dtype | None = None,
    device: torch.device | str | None = None, **options: Any,
) -> torch.Tensor:
    """``posenc.grid_encoding`` as a tensor: ``(prefix + prod(shape), d)``, on ``device``.

    NumPy builds the table (same conventions, options and accuracy: float32 within 2e-7);
    on the CPU the tensor shares its memory. ``dtype`` defaults to torch's default dtype
    (bfloat16 is rounded from float32); ``device`` to torch's default device.
    """
    dtype = _check_dtype(dtype)
    table = grid.grid_encoding(shape, d, convention=convention, dtype=_NUMPY.get(dtype, np.float32), **options)
    device = torch.get_default_device() if device is None else device
    return torch.from_numpy(table).to(device=device, dtype=dtype)


def resample_abs_pos_embed(
    posemb: torch.Tensor, new_size: Sequence[int], old_size: Sequence[int] | None = None, *, num_prefix_tokens: int = 1,
    interpolation: str = "bicubic", antialias: bool = True,
) -> torch.Tensor:
    """A grid's position table resampled to ``new_size`` as timm's ``resample_abs_pos_embed`` does.

    ``posemb``: ``(1, prefix + H*W, d)`` or ``(prefix + H*W, d)`` tensor, its grid rows
    row-major; ``old_size``: ``(H, W)`` (None: a square grid, as timm assumes). The first
    ``num_prefix_tokens`` rows (class tokens) are kept as they are; the grid, as a
    ``(1, d, H, W)`` image in float32, goes through ``torch.nn.functional.interpolate(...,
    size=new_size, mode=interpolation, antialias=antialias)`` (bicubic with antialiasing by
    default, ``align_corners=False``) and back, in the input's dtype and rank. Same calls as
    timm (huggingface/pytorch-image-models, timm/layers/pos_embed.py); one difference:
    timm returns the table unchanged whenever the token count is unchanged and ``new_size``
    is square (a 4 x 9 table asked for 6 x 6), here only when the sizes are equal.
    Interpolating a sin-cos table only approximates the encoding at the stretched
    positions; ``grid_encoding`` at the new grid (or at those positions) is exact.
    """
    if not isinstance(posemb, torch.Tensor):
        raise TypeError(f"posemb must be a torch.Tensor, got {type(posemb).__name__}")
    if posemb.ndim not in (2, 3) or (posemb.ndim == 3 and posemb.shape[0] != 1):
        raise ValueError(f"posemb must have shape (1, tokens, d) or (tokens, d), got {tuple(posemb.shape)}")
    new_size = tuple(checks.check_int_at_least(n, "each size in new_size", 1) for n in new_size)
    num_prefix_tokens = checks.check_int_at_least(num_prefix_tokens, "num_prefix_tokens", 0)
    table = posemb if posemb.ndim == 2 else posemb[0]
    tokens = table.shape[0] - num_prefix_tokens
    if old_size is None:
        side = math.isqrt(max(tokens, 0))
        if side * side != tokens:
            raise ValueError(
                f"old_size is needed: {tokens} grid tokens (after {num_prefix_tokens} prefix) are not a square grid"
            )
        old_size = (side, side)
    old_size = tuple(checks.check_int_at_least(n, "each size in old_size", 1) for n in old_size)
    if old_size[0] * old_size[1] != tokens:
        raise ValueError(f"old_size {old_size} holds {old_size[0] * old_size[1]} tokens, posemb has {tokens} after the prefix")
    if old_size == new_size:
        return posemb
    prefix, body = table[:num_prefix_tokens], table[num_prefix_tokens:]
    image = body.float().reshape(1, *old_size, -1).permute(0, 3, 1, 2)
    image = torch.nn.functional.interpolate(image, size=new_size, mode=interpolation, antialias=antialias)
    body = image.permute(0, 2, 3, 1).reshape(-1, table.shape[-1]).to(table.dtype)
    out = torch.cat([prefix, body], dim=0)
    return out if posemb.ndim == 2 else out[None]
