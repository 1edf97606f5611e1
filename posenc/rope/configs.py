"""Reading a Hugging Face transformers config: RoPE's arguments, and which layers use it.

``rotary_arguments(config)`` gives the keyword arguments of ``posenc.torch.RotaryEmbedding``
for a config of a family in ``FAMILIES`` (a ``PretrainedConfig`` of transformers 5, whose
``rope_parameters`` hold ``rope_type``, ``rope_theta`` and the type's keys, or the same as a
dict, as ``to_dict`` writes it; a multimodal model's config is read through its
``text_config``). What is read:

- ``rope_parameters`` whole: ``rope_type``, ``rope_theta``, ``partial_rotary_factor``, the
  keys of the rope type (``posenc.rotary``'s table of them) and, for the Qwen VL text models,
  ``mrope_section`` (and ``mrope_interleaved``). Any other key is a ValueError naming it.
  Configs with one set per layer type (Gemma 3 and 4: ``{"sliding_attention": {...},
  "full_attention": {...}}``) need ``layer_type``.
- The head: ``head_dim``, or ``hidden_size // num_attention_heads``; DeepSeek-V3's
  ``qk_rope_head_dim``; GPT-J's ``n_embd // n_head`` with ``rotary_dim`` of it rotating (64 where a
  config.json leaves it out, as ``GPTJConfig``). Per
  layer where transformers 5.23's ``per_layer_config`` overrides it (Gemma 4's
  full-attention layers: ``global_head_dim`` in its config.json).
- ``max_position_embeddings`` (``n_positions`` for GPT-J), which ``dynamic``, ``yarn`` and
  ``longrope`` read as transformers does.
- The family (``model_type``): which channels pair up (``layout``) and what its rotary module
  returns (``form``): cos and sin per channel (``"channels"``), per pair (``"pairs"``:
  GPT-OSS, and GPT-J's ``embed_positions`` table), or ``cos + i sin`` per pair
  (``"complex"``: Llama 4's ``freqs_cis``).

``layer_plan(config)`` says, layer by layer, what the model's own attention code does with
positions (a ``LayerPosition`` per decoder layer: its layer type, and its RoPE arguments or
None for no position at all, NoPE):

- Llama 4 (``llama4_text``) and SmolLM3: layer ``i`` rotates where ``no_rope_layers[i]`` is
  1 and is NoPE where it is 0 (the attention's ``use_rope``); unset (Llama 4: also empty),
  every ``no_rope_layer_interval``-th layer (the 4th, 8th, ...) is NoPE, as their config
  classes fill it in. Llama 4's layer types follow by default: ``chunked_attention`` for the
  rotating layers, ``full_attention`` for the NoPE ones. Its NoPE layers scale their queries
  by ``1 + attn_scale * log1p(floor((p + 1) / floor_scale))`` (``attn_temperature_tuning``,
  from position ``floor_scale - 1`` on): a function of the position that the plan leaves out,
  as it rotates nothing.
- Cohere 2: RoPE on the ``sliding_attention`` layers only; the ``full_attention`` layers
  are NoPE.
- Gemma 3: every layer, with the parameters of its layer type.
- Gemma 4 (``gemma4_text``): every layer, with the parameters and the head size of its layer
  type: ``sliding_attention`` layers ``head_dim`` and ``default`` RoPE, ``full_attention``
  layers their own head size (``global_head_dim``, 512 by default) and ``proportional`` RoPE:
  exponents over the whole head, the first ``partial_rotary_factor`` (0.25) of the pairs
  turning, the others at frequency 0 (cos 1, sin 0).
- The other families: every layer, with the one set of parameters.
"""

import numbers
from collections.abc import Callable
from typing import Any, NamedTuple

from ..engine import checks
from ..engine.registry import Registry
from . import rotary

__all__ = ["FAMILIES", "Family", "LayerPosition", "layer_plan", "layer_types", "rotary_arguments"]


class Family(NamedTuple):
    """How a model family's rotary module works: which channels pair up (``layout``), what it
    returns (``form``), and its M-RoPE (None, or ``(default mrope_section, interleaved)``)."""

    layout: str
    form: str
    mrope: tuple[tuple[int, ...], bool] | None = None


#: ``model_type -> Family``, each entry checked against the family's rotary module in
#: tests/rope/test_configs.py.
FAMILIES: Registry[Family] = Registry("model_type")
_HALF = Family("half", "channels")
FAMILIES.register("llama", _HALF)
FAMILIES.register("mistral", _HALF)
FAMILIES.register("qwen2", _HALF)
FAMILIES.register("qwen3", _HALF)
FAMILIES.register("phi3", _HALF)
FAMILIES.register("gpt_neox", _HALF)
FAMILIES.register("smollm3", _HALF)
FAMILIES.register("gemma3_text", _HALF)
FAMILIES.register("gemma4_text", _HALF)
FAMILIES.register("deepseek_v3", _HALF)  # rope_interleave: transformers permutes q and k, cos/sin stay half
FAMILIES.register("cohere", Family("interleaved", "channels"))
FAMILIES.register("cohere2", Family("interleaved", "channels"))
FAMILIES.register("gptj", Family("interleaved", "pairs"))
FAMILIES.register("gpt_oss", Family("half", "pairs"))
FAMILIES.register("llama4_text", Family("interleaved", "complex"))
FAMILIES.register("qwen2_vl_text", Family("half", "channels", ((16, 24, 24), False)))
FAMILIES.register("qwen2_5_vl_text", Family("half", "channels", ((16, 24, 24), False)))
FAMILIES.register("qwen3_vl_text", Family("half", "channels", ((24, 20, 20), True)))

# Keys every rope type may carry besides its own (posenc.rope.rotary's registry of rope types).
_COMMON = ("rope_type", "rope_theta", "partial_rotary_factor")
_MROPE = ("mrope_section", "mrope_interleaved")


class LayerPosition(NamedTuple):
    """How one decoder layer adds position: its ``layer_type`` (``config.layer_types[i]``, None
    where the config has none) and ``rotary``, the keyword arguments of
    ``posenc.torch.RotaryEmbedding`` for its RoPE (as ``rotary_arguments`` gives them), or None
    for a layer without positions (NoPE)."""

    layer_type: str | None
    rotary: dict[str, Any] | None

    @property
    def method(self) -> str:
        """``"rope"``, or ``"nope"``: no position at all."""
        return "nope" if self.rotary is None else "rope"


def _get(config, name, default=None):
    if isinstance(config, dict):
        return config.get(name, default)
    return getattr(config, name, default)


def _decoder(config):
    """``config``, or the ``text_config`` of a multimodal model's (Llama 4, Gemma 3 and 4, Qwen-VL)."""
    if not isinstance(config, dict) and not hasattr(config, "model_type"):
        raise TypeError(f"config must be a transformers config or its dict (with a model_type), got {checks.shown(config)}")
    inner = _get(config, "text_config")
    if inner is not None and not checks.is_one_of(_get(config, "model_type"), FAMILIES.names()):
        return inner
    return config


def _family(config):
    """``(the decoder's config, its model_type)``, the model_type checked to be a family."""
    decoder = _decoder(config)
    argument = "config.model_type" if decoder is config else "config.text_config.model_type"
    return decoder, FAMILIES.check(_get(decoder, "model_type"), argument)


def _need(config, name, model_type, why):
    """``config.<name>``, or a ValueError naming it and the family."""
    value = _get(config, name)
    if value is None:
        raise ValueError(f"config.{name} is missing: model_type {model_type!r} {why}")
    return value


def layer_types(config: Any) -> list[str] | None:
    """The layer types of a config with rope parameters per layer type (Gemma 3 and 4), else None."""
    parameters = _get(_decoder(config), "rope_parameters")
    if isinstance(parameters, dict) and "rope_type" not in parameters and parameters:
        if all(isinstance(v, dict) or v is None for v in parameters.values()):
            return [name for name, v in parameters.items() if v is not None]
    return None


def check_layer_type(layer_type: str, types: Any) -> str:
    """``layer_type`` if it is one of ``types`` (a per-layer-type module's keys), else a ValueError."""
    return checks.check_choice(layer_type, tuple(types), "layer_type")


def check_modules(modules: Any, module: type) -> Any:
    """``modules`` of a per-layer-type module: a dict of layer type -> ``module`` (the front's ``RotaryEmbedding``)."""
    if not isinstance(modules, dict) or not all(isinstance(k, str) and isinstance(m, module) for k, m in modules.items()):
        raise TypeError(f"modules must be a dict of layer type -> {module.__name__}, got {checks.shown(modules)}")
    return modules


def module_from_config(module: Any, per_layer_type: Any, config: Any, layer_type: str | None = None) -> Any:
    """A front's ``RotaryEmbedding.from_config``: ``module(**rotary_arguments(config))``; a config with
    rope parameters per layer type and no ``layer_type`` gives ``per_layer_type({type: module})``."""
    types = layer_types(config)
    if types is not None and layer_type is None:
        return per_layer_type({t: module(**rotary_arguments(config, layer_type=t)) for t in types})
    return module(**rotary_arguments(config, layer_type=layer_type))


# Which layers rotate, for the families where some do not (in the others every layer does):
# ``model_type -> rule(config, layer types) -> [layer i applies RoPE]``.
_ROPE_LAYERS: Registry[Callable[[Any, list], list[bool]]] = Registry("model_type")


def _no_rope_layers(config, model_type, count, *, empty_is_unset):
    """``no_rope_layers`` (1: the layer rotates, 0: NoPE) or, unset, every
    ``no_rope_layer_interval``-th layer NoPE, as the family's config class fills it in."""
    flags = _get(config, "no_rope_layers")
    if flags is None or (empty_is_unset and isinstance(flags, list | tuple) and not flags):
        why = "reads which layers skip RoPE from it (no_rope_layers is unset)"
        interval = checks.check_int_at_least(
            _need(config, "no_rope_layer_interval", model_type, why), "config.no_rope_layer_interval", 1
        )
        return [(i + 1) % interval != 0 for i in range(count)]
    if not isinstance(flags, list | tuple) or not all(isinstance(f, numbers.Integral) and f in (0, 1) for f in flags):
        raise ValueError(f"config.no_rope_layers must be a list of 1 (RoPE) or 0 (NoPE) per layer, got {checks.shown(flags)}")
    if len(flags) < count:
        raise ValueError(
            f"config.no_rope_layers has {len(flags)} entries; model_type {model_type!r} needs one per layer "
            f"(num_hidden_layers={count})"
        )
    return [bool(f) for f in flags[:count]]


@_ROPE_LAYERS.register("llama4_text")
def _llama4(config, types):
    # Llama4TextConfig fills an empty list in too (``if self.no_rope_layers``).
    return _no_rope_layers(config, "llama4_text", len(types), empty_is_unset=True)


@_ROPE_LAYERS.register("smollm3")
def _smollm3(config, types):
    return _no_rope_layers(config, "smollm3", len(types), empty_is_unset=False)


@_ROPE_LAYERS.register("cohere2")
def _cohere2(config, types):
    # Cohere2Attention rotates where its sliding_window is set: on the sliding layers (transformers
    # cannot run a Cohere 2 config without a window: its masks and caches need one).
    if None in types:
        raise ValueError("config.layer_types is missing: model_type 'cohere2' applies RoPE on its sliding_attention layers only")
    _need(config, "sliding_window", "cohere2", "applies RoPE on its sliding_attention layers, which attend within it")
    return [kind == "sliding_attention" for kind in types]


def _layers(config, model_type):
    """``(layer types, [layer i applies RoPE])``, one entry per decoder layer; the types are
    None where the config has none."""
    count = checks.check_int_at_least(
        _need(config, "num_hidden_layers", model_type, "has one plan entry per decoder layer"), "config.num_hidden_layers", 1
    )
    count = checks.check_width(count, "config.num_hidden_layers")
    types = _get(config, "layer_types")
    if types is None:
        if layer_types(config) is not None:
            raise ValueError(f"config.layer_types is missing: model_type {model_type!r} has rope parameters per layer type")
        types = [None] * count
    elif not isinstance(types, list | tuple) or not all(isinstance(t, str) for t in types) or len(types) != count:
        raise ValueError(
            f"config.layer_types must be a list of num_hidden_layers={count} layer type names for model_type "
            f"{model_type!r}, got {checks.shown(types)}"
        )
    rule = _ROPE_LAYERS.get(model_type)
    return list(types), ([True] * count if rule is None else rule(config, list(types)))


def layer_plan(config: Any) -> list[LayerPosition]:
    """What each decoder layer of a transformers ``config`` does with positions: a
    ``LayerPosition(layer_type, rotary)`` per layer (``num_hidden_layers`` of them), ``rotary``
    the RoPE arguments of that layer (``rotary_arguments``, with the layer's own head size) or
    None where the layer adds no position (NoPE). The rules per family are in the module
    docstring; a field the family's rule needs and the config lacks is a ValueError naming it.
    """
    config, model_type = _family(config)
    types, rotates = _layers(config, model_type)
    per_type = layer_types(config) is not None
    plan = []
    for index, (kind, rotating) in enumerate(zip(types, rotates)):
        arguments = None
        if rotating:
            arguments = _arguments(config, model_type, _rope_parameters(config, model_type, kind if per_type else None), index)
        plan.append(LayerPosition(kind, arguments))
    return plan


def _rope_parameters(config, model_type, layer_type):
    if model_type == "gptj":
        # GPT-J keeps no rope_parameters: base 10000 and rotary_dim are fixed in its attention.
        parameters = {"rope_type": "default", "rope_theta": 10000.0}
    else:
        parameters = _get(config, "rope_parameters")
    if not isinstance(parameters, dict):
        raise ValueError(
            f"config.rope_parameters must be a dict (transformers 5) for model_type {model_type!r}, got {checks.shown(parameters)}"
        )
    if layer_types(config) is not None:
        if layer_type not in layer_types(config):
            raise ValueError(
                f"config.rope_parameters holds one set per layer type ({', '.join(map(repr, parameters))}): "
                f"layer_type must name one of them, got {layer_type!r}"
            )
        return dict(parameters[layer_type])
    if layer_type is not None:
        if not _get(config, "layer_types"):
            raise ValueError(
                f"layer_type must be None: config.rope_parameters is one set for every layer, got {layer_type!r}"
            )
        types, rotates = _layers(config, model_type)
        checks.check_choice(layer_type, tuple(dict.fromkeys(types)), "layer_type")
        if not any(rotating for kind, rotating in zip(types, rotates) if kind == layer_type):
            raise ValueError(
                f"layer_type={layer_type!r}: no layer of that type applies RoPE in this {model_type!r} config "
                "(they are NoPE; see layer_plan)"
            )
    return dict(parameters)


def _overrides(config, model_type):
    """A dict config's per-layer fields, by layer index: its ``per_layer_config`` (transformers
    5.23's heterogeneous configs, as ``to_dict`` writes them), or a Gemma 4 config.json's
    ``global_head_dim``, which Gemma4TextConfig makes the head size of its full-attention layers."""
    table = config.get("per_layer_config")
    if table is None and model_type == "gemma4_text":
        why = "gives its full_attention layers that head size (or per_layer_config, as to_dict writes it)"
        size = _need(config, "global_head_dim", model_type, why)
        kinds = config.get("layer_types") or ()
        return {i: {"head_dim": size} for i, kind in enumerate(kinds) if kind == "full_attention"}
    table = table or {}
    if not isinstance(table, dict) or not all(
        str(index).isdigit() and isinstance(fields, dict) for index, fields in table.items()
    ):
        raise ValueError(f"config.per_layer_config must map layer indices to dicts of fields, got {checks.shown(table)}")
    return {int(index): fields for index, fields in table.items()}


def _field(config, name, model_type, layer):
    """``config.<name>`` as layer ``layer`` (an index, a layer type, or None: the config's own)
    reads it, where transformers 5.23's ``per_layer_config`` overrides it."""
    if layer is None:
        return _get(config, name)
    if not isinstance(config, dict):
        if getattr(config, "is_heterogeneous", False):
            return getattr(config.per_layer_config[layer], name, None)
        return _get(config, name)
    overrides = _overrides(config, model_type)
    kinds = config.get("layer_types") or ()
    indices = [layer] if isinstance(layer, int) else [i for i, kind in enumerate(kinds) if kind == layer]
    values = []
    for index in indices:
        value = overrides.get(index, {}).get(name, config.get(name))
        if value not in values:
            values.append(value)
    if len(values) > 1:
        raise ValueError(
            f"config.per_layer_config gives the {layer!r} layers different {name} values ({values}): "
            "read them layer by layer (layer_plan)"
        )
    return values[0] if values else config.get(name)


def _head(config, model_type, layer):
    """``(head_dim, rotating fraction or None)`` of ``layer`` (an index, a layer type or None)."""
    if model_type == "gptj":
        head_dim = _quotient(config, ("n_embd", "n_head"), model_type, None)
        # GPTJConfig's default where a config.json leaves it out; transformers 5 refuses None.
        rotated = checks.check_int_at_least(_get(config, "rotary_dim", 64), "config.rotary_dim", 1)
        return head_dim, rotated / head_dim
    if model_type == "deepseek_v3":
        return _need(config, "qk_rope_head_dim", model_type, "rotates that many channels of each head"), None
    head_dim = _field(config, "head_dim", model_type, layer)
    return head_dim or _quotient(config, ("hidden_size", "num_attention_heads"), model_type, layer), None


def _quotient(config, names, model_type, layer):
    """The head size ``width // heads`` for the fields ``names = (width, heads)``."""
    width, heads = (_field(config, name, model_type, layer) for name in names)
    if width is None or heads is None:
        spelled = "" if model_type == "gptj" else "head_dim, or "
        raise ValueError(
            f"config.{names[width is not None]} is missing: model_type {model_type!r} reads the head size "
            f"from {spelled}{names[0]} // {names[1]}"
        )
    return checks.check_int_at_least(width, f"config.{names[0]}", 1) // checks.check_int_at_least(heads, f"config.{names[1]}", 1)


def rotary_arguments(config: Any, *, layer_type: str | None = None) -> dict[str, Any]:
    """Keyword arguments of ``posenc.torch.RotaryEmbedding`` for a transformers ``config``.

    ``{"head_dim", "base", "rope_type", "layout", "form", "mrope_section", "mrope_interleaved",
    **params}`` with ``params`` the rope type's keys under transformers' names (and
    ``max_position_embeddings`` where the type reads it). See the module docstring for what
    is read. Unknown keys in ``rope_parameters`` raise a ValueError naming them.
    ``layer_type``: the layers of that type (a config with one set of rope parameters accepts
    a type some of whose layers rotate: Cohere 2's ``"sliding_attention"``).
    """
    config, model_type = _family(config)
    return _arguments(config, model_type, _rope_parameters(config, model_type, layer_type), layer_type)


def _arguments(config, model_type, parameters, layer):
    """``rotary_arguments`` for ``parameters`` (one set) and the head of ``layer``."""
    layout, form, mrope = FAMILIES[model_type]
    rope_type = parameters.get("rope_type", "default")
    entry = rotary._RULES.lookup(rope_type, "config.rope_parameters['rope_type']")
    known = set(_COMMON) | set(entry.required) | set(entry.optional) | (set(_MROPE) if mrope else set())
    unknown = sorted(set(parameters) - known)
    if unknown:
        raise ValueError(
            f"config.rope_parameters has keys posenc does not know for rope_type={rope_type!r}: "
            f"{', '.join(map(repr, unknown))}; it reads {', '.join(sorted(known))}"
        )
    head_dim, fraction = _head(config, model_type, layer)
    params = {k: v for k, v in parameters.items() if k not in _COMMON + _MROPE and v is not None}
    fraction = parameters.get("partial_rotary_factor", fraction)
    if fraction is not None and fraction != 1:
        params["partial_rotary_factor"] = fraction
    longest = _get(config, "n_positions" if model_type == "gptj" else "max_position_embeddings")
    if rope_type in ("dynamic", "yarn", "longrope") and longest is not None:
        params.setdefault("max_position_embeddings", longest)
    try:
        # The checks RotaryEmbedding makes, so that a plan holds only arguments it accepts.
        base = checks.check_base(parameters.get("rope_theta", 10000.0))
        rotary.rotary_dim(head_dim, rope_type, **params)
    except (TypeError, ValueError) as error:
        raise type(error)(f"config of model_type {model_type!r}: {error}") from None
    arguments = {
        "head_dim": head_dim,
        "base": base,
        "rope_type": rope_type,
        "layout": layout,
        "form": form,
        "mrope_section": None,
        "mrope_interleaved": False,
    }
    if mrope:
        section, interleaved = mrope
        arguments["mrope_section"] = tuple(parameters.get("mrope_section") or section)
        arguments["mrope_interleaved"] = interleaved
    return {**arguments, **params}
