"""Reading a Hugging Face transformers config into posenc's rotary arguments (no framework).

``rotary_arguments(config)`` gives the keyword arguments of ``posenc.torch.RotaryEmbedding``
for a config of a family in ``FAMILIES`` (a ``PretrainedConfig`` of transformers 5, whose
``rope_parameters`` hold ``rope_type``, ``rope_theta`` and the type's keys, or the same as a
dict). What is read:

- ``rope_parameters`` whole: ``rope_type``, ``rope_theta``, ``partial_rotary_factor``, the
  keys of the rope type (``posenc.rotary``'s table of them) and, for the Qwen VL text models,
  ``mrope_section`` (and ``mrope_interleaved``). Any other key is a ValueError naming it.
  Configs with one set per layer type (Gemma 3: ``{"sliding_attention": {...},
  "full_attention": {...}}``) need ``layer_type``.
- The head: ``head_dim``, or ``hidden_size // num_attention_heads``; DeepSeek-V3's
  ``qk_rope_head_dim``; GPT-J's ``n_embd // n_head`` with ``rotary_dim`` of it rotating.
- ``max_position_embeddings`` (``n_positions`` for GPT-J), which ``dynamic``, ``yarn`` and
  ``longrope`` read as transformers does.
- The family (``model_type``): which channels pair up (``layout``) and what its rotary module
  returns (``form``): cos and sin per channel (``"channels"``), per pair (``"pairs"``:
  GPT-OSS, and GPT-J's ``embed_positions`` table), or ``cos + i sin`` per pair
  (``"complex"``: Llama 4's ``freqs_cis``).
"""

from typing import Any, NamedTuple

from ..engine import checks
from ..engine.registry import Registry
from . import rotary

__all__ = ["FAMILIES", "Family", "layer_types", "rotary_arguments"]


class Family(NamedTuple):
    """How a model family's rotary module works: which channels pair up (``layout``), what it
    returns (``form``), and its M-RoPE (None, or ``(default mrope_section, interleaved)``)."""

    layout: str
    form: str
    mrope: tuple[tuple[int, ...], bool] | None = None


#: ``model_type -> Family``, each entry checked against the family's rotary module in
#: tests/test_rope_config.py.
FAMILIES: Registry[Family] = Registry("model_type")
_HALF = Family("half", "channels")
FAMILIES.register("llama", _HALF)
FAMILIES.register("mistral", _HALF)
FAMILIES.register("qwen2", _HALF)
FAMILIES.register("qwen3", _HALF)
FAMILIES.register("phi3", _HALF)
FAMILIES.register("gpt_neox", _HALF)
FAMILIES.register("gemma3_text", _HALF)
FAMILIES.register("deepseek_v3", _HALF)  # rope_interleave: transformers permutes q and k, cos/sin stay half
FAMILIES.register("cohere", Family("interleaved", "channels"))
FAMILIES.register("gptj", Family("interleaved", "pairs"))
FAMILIES.register("gpt_oss", Family("half", "pairs"))
FAMILIES.register("llama4_text", Family("interleaved", "complex"))
FAMILIES.register("qwen2_vl_text", Family("half", "channels", ((16, 24, 24), False)))
FAMILIES.register("qwen2_5_vl_text", Family("half", "channels", ((16, 24, 24), False)))
FAMILIES.register("qwen3_vl_text", Family("half", "channels", ((24, 20, 20), True)))

# Keys every rope type may carry besides its own (posenc.rope.rotary's registry of rope types).
_COMMON = ("rope_type", "rope_theta", "partial_rotary_factor")
_MROPE = ("mrope_section", "mrope_interleaved")


def _get(config, name, default=None):
    if isinstance(config, dict):
        return config.get(name, default)
    return getattr(config, name, default)


def _model_type(config):
    return FAMILIES.check(_get(config, "model_type"), "config.model_type")


def layer_types(config: Any) -> list[str] | None:
    """The layer types of a config with rope parameters per layer type (Gemma 3), else None."""
    parameters = _get(config, "rope_parameters")
    if isinstance(parameters, dict) and "rope_type" not in parameters and parameters:
        if all(isinstance(v, dict) or v is None for v in parameters.values()):
            return [name for name, v in parameters.items() if v is not None]
    return None


def check_layer_type(layer_type: str, types: Any) -> str:
    """``layer_type`` if it is one of ``types`` (a per-layer-type module's keys), else a ValueError."""
    return checks.check_choice(layer_type, tuple(types), "layer_type")


def module_from_config(module: Any, per_layer_type: Any, config: Any, layer_type: str | None = None) -> Any:
    """A front's ``RotaryEmbedding.from_config``: ``module(**rotary_arguments(config))``; a config with
    rope parameters per layer type and no ``layer_type`` gives ``per_layer_type({type: module})``."""
    types = layer_types(config)
    if types is not None and layer_type is None:
        return per_layer_type({t: module(**rotary_arguments(config, layer_type=t)) for t in types})
    return module(**rotary_arguments(config, layer_type=layer_type))


def _rope_parameters(config, model_type, layer_type):
    if model_type == "gptj":
        # GPT-J keeps no rope_parameters: base 10000 and rotary_dim are fixed in its attention.
        return {"rope_type": "default", "rope_theta": 10000.0}
    parameters = _get(config, "rope_parameters")
    if not isinstance(parameters, dict):
        raise ValueError(f"config.rope_parameters must be a dict (transformers 5), got {parameters!r}")
    if layer_types(config) is not None:
        if layer_type not in layer_types(config):
            raise ValueError(
                f"config.rope_parameters holds one set per layer type ({', '.join(map(repr, parameters))}): "
                f"layer_type must name one of them, got {layer_type!r}"
            )
        return dict(parameters[layer_type])
    if layer_type is not None:
        raise ValueError(f"layer_type must be None: config.rope_parameters is one set for every layer, got {layer_type!r}")
    return dict(parameters)


def _head(config, model_type):
    """``(head_dim, rotating fraction or None)``."""
    if model_type == "gptj":
        head_dim = _get(config, "n_embd") // _get(config, "n_head")
        rotated = _get(config, "rotary_dim")
        return head_dim, (None if rotated is None else rotated / head_dim)
    if model_type == "deepseek_v3":
        return _get(config, "qk_rope_head_dim"), None
    head_dim = _get(config, "head_dim") or _get(config, "hidden_size") // _get(config, "num_attention_heads")
    return head_dim, None


def rotary_arguments(config: Any, *, layer_type: str | None = None) -> dict[str, Any]:
    """Keyword arguments of ``posenc.torch.RotaryEmbedding`` for a transformers ``config``.

    ``{"head_dim", "base", "rope_type", "layout", "form", "mrope_section", "mrope_interleaved",
    **params}`` with ``params`` the rope type's keys under transformers' names (and
    ``max_position_embeddings`` where the type reads it). See the module docstring for what
    is read. Unknown keys in ``rope_parameters`` raise a ValueError naming them.
    """
    model_type = _model_type(config)
    layout, form, mrope = FAMILIES[model_type]
    parameters = _rope_parameters(config, model_type, layer_type)
    rope_type = parameters.get("rope_type", "default")
    entry = rotary._RULES.lookup(rope_type, "config.rope_parameters['rope_type']")
    known = set(_COMMON) | set(entry.required) | set(entry.optional) | (set(_MROPE) if mrope else set())
    unknown = sorted(set(parameters) - known)
    if unknown:
        raise ValueError(
            f"config.rope_parameters has keys posenc does not know for rope_type={rope_type!r}: "
            f"{', '.join(map(repr, unknown))}; it reads {', '.join(sorted(known))}"
        )
    head_dim, fraction = _head(config, model_type)
    params = {k: v for k, v in parameters.items() if k not in _COMMON + _MROPE and v is not None}
    fraction = parameters.get("partial_rotary_factor", fraction)
    if fraction is not None and fraction != 1:
        params["partial_rotary_factor"] = fraction
    longest = _get(config, "n_positions" if model_type == "gptj" else "max_position_embeddings")
    if rope_type in ("dynamic", "yarn", "longrope") and longest is not None:
        params.setdefault("max_position_embeddings", longest)
    arguments = {
        "head_dim": head_dim,
        "base": float(parameters.get("rope_theta", 10000.0)),
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
