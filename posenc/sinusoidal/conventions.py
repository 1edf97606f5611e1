"""Named conventions: the sinusoidal encoding as a dozen projects ship it, reproduced exactly.

Every one of them writes ``sin(p * w_j)`` and ``cos(p * w_j)`` for a geometric sequence of
frequencies ``w_j``; they differ in four things only, and a ``Convention`` holds them as data:

- the frequency rule (``rule``), with ``h`` the number of sin/cos pairs:

  - ``"paper"``: ``w_j = factor * base ** (-2j / d_model)`` (Vaswani et al., section 3.5)
  - ``"h-1"``: ``w_j = factor * base ** (-j / (h - shift))``; with ``shift = 1`` the lowest
    frequency is exactly ``factor / base`` (tensor2tensor, and everything copied from it).
    At ``d_model = 512`` the two differ by up to 3.5 %: a different function, not rounding.

- the layout: which columns hold the sines and which the cosines (``posenc.LAYOUTS``);
- the odd-width policy (``odd``): ``"sine"`` (``h = ceil(d/2)`` pairs; the last column is
  the sine of the extra pair), ``"zero"`` (``h = d // 2`` pairs, then a column of zeros) or
  ``"error"`` (the source refuses or breaks, ``odd_note`` says how);
- the positions: row ``k`` of a table is position ``offset + k``, and a position equal to
  ``padding_idx`` (if set) encodes to zeros, as fairseq's padding row does.

``list_conventions()`` names the presets; ``resolve`` turns a name and overrides (generic
``base``, ``layout``, ``offset``, ``padding_idx``, or the source's own argument names, e.g.
``max_timescale``) into the ``Convention`` that ``posenc.positional_encoding(...,
convention=...)`` and ``encode`` of every framework build.
"""

import dataclasses
import inspect
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

from ..engine import checks, rotation
from ..engine.frequencies import Frequencies
from ..engine.registry import Registry

__all__ = ["NAMES", "Convention", "Preset", "list_conventions", "option_names", "resolve"]


@dataclasses.dataclass(frozen=True)
class Convention:
    """One way of writing the table; see the module docstring for each field's meaning.

    ``shift`` and ``clamp`` only matter for the ``"h-1"`` rule: ``clamp`` divides by at
    least 1 (tensor2tensor's ``max(h - 1, 1)``) where the others divide by zero when
    ``h == shift``; ``span_note`` then says what the source does. ``factor`` multiplies
    every frequency (tensor2tensor's ``min_timescale``, diffusers' ``scale``).
    """

    name: str
    rule: str = "paper"
    base: float = 10000.0
    layout: str = "interleaved"
    odd: str = "sine"
    offset: float = 0
    padding_idx: int | None = None
    shift: float = 1.0
    factor: float = 1.0
    clamp: bool = False
    odd_note: str = ""
    span_note: str = ""

    def width(self, d_model: int) -> int:
        """How many of the ``d_model`` columns hold sines and cosines: ``d_model``, or one fewer
        for an odd width under the ``"zero"`` policy (the last column is zeros)."""
        if d_model % 2 and self.odd == "error":
            raise ValueError(
                f"convention {self.name!r} needs an even d_model: {self.odd_note}; got d_model={d_model}"
            )
        return d_model - d_model % 2 if self.odd == "zero" else d_model

    def span(self, d_model: int) -> float:
        """The divisor in ``w_j = factor * base ** (-j / span)``: ``d_model / 2`` for the paper's
        rule, ``h - shift`` for "h-1" (``h`` pairs; at least 1 with ``clamp``)."""
        width = self.width(d_model)
        pairs = (width + 1) // 2
        if self.rule == "paper":
            return d_model / 2
        span = max(pairs - self.shift, 1.0) if self.clamp else pairs - self.shift
        if pairs and span == 0:
            raise ValueError(
                f"convention {self.name!r} divides by h - shift = {pairs} - {self.shift:g} = 0 at "
                f"d_model={d_model}: {self.span_note}; use a d_model with d_model // 2 != {self.shift:g}"
            )
        return float(span)

    def frequency_record(self, d_model: int) -> Frequencies:
        """The ``ceil(width / 2)`` frequencies of a ``d_model``-wide table, with its ``width``
        (``rotation.geometric_parts``, cached)."""
        width = self.width(d_model)
        w_hi, w_lo = rotation.geometric_parts((width + 1) // 2, self.base, self.span(d_model), self.factor)
        return Frequencies(w_hi, w_lo, width=width)

    def frequencies(self, d_model: int) -> np.ndarray:
        """The angular frequencies ``w_j`` (float64, shape ``(ceil(width / 2),)``)."""
        return self.frequency_record(d_model).values

    def padding_row(self, length: int) -> int | None:
        """The row of a ``length``-row table that holds position ``padding_idx``, or None."""
        if self.padding_idx is None:
            return None
        row = self.padding_idx - self.offset
        return int(row) if row == int(row) and 0 <= row < length else None


class Preset(NamedTuple):
    name: str
    description: str
    source: str


def _base(name, value):
    return checks.check_real(value, name, 1.0)


def _offset(name, value):
    return int(value) if checks._is_int(value) else checks.check_real(value, name)


def _padding_idx(value):
    if value is None or checks._is_int(value):
        return value if value is None else int(value)
    raise TypeError(f"padding_idx must be an int or None, got {value!r} ({type(value).__name__})")


# The source's own argument names, per preset: each returns the Convention fields it sets.


def _keras_hub(max_wavelength=10000, start_index=0):
    return {"base": _base("max_wavelength", max_wavelength), "offset": _offset("start_index", start_index)}


def _tensor2tensor(min_timescale=1.0, max_timescale=1.0e4, start_index=0):
    low = checks.check_real(min_timescale, "min_timescale", 0.0)
    high = checks.check_real(max_timescale, "max_timescale", low)
    # The source multiplies its "inverse timescales" by min_timescale (not 1 / min_timescale):
    # reproduced as it is, since checkpoints were trained with it.
    return {"base": high / low, "factor": low, "offset": _offset("start_index", start_index)}


def _whisper(max_timescale=10000):
    return {"base": _base("max_timescale", max_timescale)}


def _diffusers(flip_sin_to_cos=False, downscale_freq_shift=1, scale=1, max_period=10000):
    if not isinstance(flip_sin_to_cos, bool):
        raise TypeError(f"flip_sin_to_cos must be a bool, got {flip_sin_to_cos!r}")
    return {
        "layout": "cos_sin" if flip_sin_to_cos else "sin_cos",
        "shift": checks.check_real(downscale_freq_shift, "downscale_freq_shift"),
        "factor": checks.check_real(scale, "scale"),
        "base": _base("max_period", max_period),
    }


def _no_options():
    return {}


class _Entry(NamedTuple):
    preset: Preset
    convention: Convention
    options: Callable[..., dict]  # the source's own options -> the fields they set
    layouts: tuple[str, ...]  # the layouts the source's own options can give


_FLOAT32_NAN = "the source's float division by zero gives NaN"
_PRESETS: Registry[_Entry] = Registry("convention")


# Runs only while the module is imported: mutmut switches a mutant on when a test calls its
# function, after that import, so it could never run a mutant of this one; every preset it
# registers is checked against its source in tests/sinusoidal/test_conventions.py instead.
def _preset(description, source, options=_no_options, layouts=None, **fields):  # pragma: no mutate block
    name = fields["name"]
    layouts = layouts or (fields.get("layout", "interleaved"),)
    _PRESETS.register(name, _Entry(Preset(name, description, source), Convention(**fields), options, layouts))


_preset(
    "Vaswani et al.: sin at even columns, cos at odd, w_i = 10000^(-2i/d); the Annotated "
    "Transformer, PyTorch examples, d2l and labml compute the same numbers",
    "arXiv:1706.03762, section 3.5",
    name="paper",
)
_preset(
    "Hugging Face XLM and DistilBERT frozen embedding: the paper's table computed in float64 "
    "and cast; an odd width ends on a sine",
    "huggingface/transformers: models/xlm/modeling_xlm.py, create_sinusoidal_embeddings",
    name="hf-xlm",
)
_preset(
    "Hugging Face Marian: the paper's frequencies, all sines then all cosines; an odd width "
    "gives the sines ceil(d/2) columns",
    "huggingface/transformers: models/marian/modeling_marian.py, MarianSinusoidalPositionalEmbedding",
    name="hf-marian",
    layout="sin_cos",
)
_preset(
    "keras-hub SinePositionEncoding: the paper's table (options max_wavelength, start_index)",
    "keras-team/keras-hub: keras_hub/src/layers/modeling/sine_position_encoding.py",
    _keras_hub,
    name="keras-hub",
)
_preset(
    "tensor2tensor get_timing_signal_1d: sines then cosines, h-1 frequencies min_timescale * "
    "(max/min)^(-j/max(h-1, 1)), zero column for odd d (options min_timescale, max_timescale, start_index)",
    "tensorflow/tensor2tensor: tensor2tensor/layers/common_attention.py, get_timing_signal_1d",
    _tensor2tensor,
    name="tensor2tensor",
    rule="h-1",
    layout="sin_cos",
    odd="zero",
    clamp=True,
)
_preset(
    "fairseq SinusoidalPositionalEmbedding.get_embedding: tensor2tensor's table with position "
    "padding_idx (default 1) zeroed; tokens read positions padding_idx + 1 onwards (option padding_idx)",
    "facebookresearch/fairseq: fairseq/modules/sinusoidal_positional_embedding.py",
    name="fairseq",
    rule="h-1",
    layout="sin_cos",
    odd="zero",
    padding_idx=1,
    span_note="fairseq's get_embedding raises ZeroDivisionError (it divides by half_dim - 1)",
)
_preset(
    "OpenAI Whisper sinusoids: sines then cosines, h-1 frequencies, even widths only (option max_timescale)",
    "openai/whisper: whisper/model.py, sinusoids",
    _whisper,
    name="whisper",
    rule="h-1",
    layout="sin_cos",
    odd="error",
    odd_note="whisper's sinusoids asserts channels % 2 == 0",
    span_note=_FLOAT32_NAN,
)
_preset(
    "TensorFlow transformer tutorial, July 2019 to September 2022 (the widely copied version): "
    "the paper's interleaved table, float64 cast to float32",
    "tensorflow/docs, site/en/tutorials/text/transformer.ipynb (2019-07 .. 2022-09), positional_encoding",
    name="tf-tutorial-2019",
)
_preset(
    "TensorFlow transformer tutorial, April to July 2019: the paper's frequencies, all sines "
    "then all cosines (the sines get ceil(d/2) columns)",
    "tensorflow/docs, site/en/tutorials/text/transformer.ipynb (2019-04 .. 2019-07), positional_encoding",
    name="tf-tutorial-2019-04",
    layout="sin_cos",
)
_preset(
    "TensorFlow text transformer tutorial since September 2022: the paper's frequencies via "
    "depth/2, all sines then all cosines; even widths only",
    "tensorflow/text, docs/tutorials/transformer.ipynb (since 2022-09), positional_encoding",
    name="tf-tutorial",
    layout="sin_cos",
    odd="error",
    odd_note=(
        "the tutorial's positional_encoding returns d_model + 1 columns for an odd depth "
        "(np.arange(depth / 2) has ceil(depth / 2) entries, used for sines and for cosines)"
    ),
)
_preset(
    "diffusers get_timestep_embedding: sin then cos (cos then sin with flip_sin_to_cos), "
    "w_j = scale * max_period^(-j/(h - downscale_freq_shift)), zero column for odd d; "
    "Stable Diffusion's UNet uses flip_sin_to_cos=True, downscale_freq_shift=0",
    "huggingface/diffusers: src/diffusers/models/embeddings.py, get_timestep_embedding",
    _diffusers,
    layouts=("sin_cos", "cos_sin"),
    name="diffusers",
    rule="h-1",
    layout="sin_cos",
    odd="zero",
    span_note=_FLOAT32_NAN,
)

NAMES = _PRESETS.names()


def list_conventions() -> list[Preset]:
    """Every preset as ``Preset(name, description, source)``, in a fixed order ("paper" first)."""
    return [entry.preset for entry in _PRESETS.values()]


def adjustable_fields(name: str) -> set[str]:
    """The ``Convention`` fields that preset ``name``'s options or the generic overrides can set."""
    return {"base", "layout", "offset", "padding_idx", *_PRESETS.lookup(name).options()}


def changes_beyond_options(name: str, convention: Convention) -> int:
    """How many of ``convention``'s layout, rule, base, shift, factor and odd policy preset
    ``name``'s source cannot write through its own options (0: the source can make this table).

    The positions (``offset``, ``padding_idx``) are not counted: every source takes them.
    E.g. "paper" in cos_sin order is 1 (no paper-rule source writes cos_sin), "diffusers" with
    ``flip_sin_to_cos=True, downscale_freq_shift=0`` is 0, "paper" with base 500 is 1 and
    "keras-hub" with ``max_wavelength=500`` is 0.
    """
    entry = _PRESETS.lookup(name)
    own = set(entry.options())
    changes = int(convention.layout not in entry.layouts)
    for field in ("rule", "base", "shift", "factor", "odd"):
        changes += field not in own and getattr(convention, field) != getattr(entry.convention, field)
    return changes


def option_names(convention: str | Convention) -> list[str]:
    """The source's own option names that ``resolve`` takes for ``convention`` (none for a
    ``Convention``); every convention also takes ``base``, ``layout``, ``offset`` and ``padding_idx``."""
    options = _no_options if isinstance(convention, Convention) else _PRESETS.lookup(convention).options
    return list(inspect.signature(options).parameters)


def resolve(convention: str | Convention = "paper", *, base: float | None = None, layout: str | None = None,
            **overrides: Any) -> Convention:
    """The ``Convention`` that ``convention`` (a preset name or a ``Convention``) and overrides give.

    Overrides: the source's own option names (``list_conventions`` says which a preset
    takes, e.g. ``max_timescale`` for "whisper"), then the generic ``base``, ``layout``,
    ``offset`` and ``padding_idx``, which win. ``None`` for ``base`` or ``layout`` keeps
    the convention's.
    """
    if not overrides and base is None and layout is None and not isinstance(convention, Convention):
        return _PRESETS.lookup(convention).convention  # the common call, at a small table's cost
    allowed = [*option_names(convention), "base", "layout", "offset", "padding_idx"] if overrides else []
    generic = {key: overrides.pop(key) for key in ("offset", "padding_idx") if key in overrides}
    if isinstance(convention, Convention):
        options = _no_options
    else:
        entry = _PRESETS.lookup(convention)
        convention, options = entry.convention, entry.options
    unknown = sorted(set(overrides) - set(allowed))
    if unknown:
        raise TypeError(
            f"convention {convention.name!r} takes the options {', '.join(allowed)}; got {', '.join(unknown)}"
        )
    fields = options(**overrides)
    if base is not None:
        fields["base"] = checks.check_base(base)
    if layout is not None:
        fields["layout"] = checks.check_layout(layout)
    if "offset" in generic:
        fields["offset"] = _offset("offset", generic["offset"])
    if "padding_idx" in generic:
        fields["padding_idx"] = _padding_idx(generic["padding_idx"])
    return dataclasses.replace(convention, **fields) if fields else convention


def offset_positions(positions: Any, convention: Convention) -> Any:
    """``positions + convention.offset`` (NumPy, torch or TF float64), untouched for offset 0."""
    return positions + convention.offset if convention.offset else positions
