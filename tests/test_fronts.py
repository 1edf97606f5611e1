"""The framework fronts agree: the same names, signatures, module attributes and numbers."""

import inspect
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np
import pytest

import posenc
import posenc.jax as pj
import posenc.tensorflow as ptf
import posenc.torch as pt

FRONTS = {"torch": pt, "tensorflow": ptf, "jax": pj}
SHARED = ["positional_encoding", "encode", "rotary_cos_sin", "apply_rotary", "grid_encoding", "convert_layout",
          "convert_rotary_layout", "rotary_frequencies", "rotary_permutation", "PositionalEncoding", "RotaryEmbedding",
          "axial_cos_sin", "mrope_cos_sin", "RotaryEmbeddingPerLayerType"]
# Not in the TensorFlow front: M-RoPE in the Keras layer (mrope_section, mrope_interleaved) and
# from_config. A Keras layer's from_config is Keras' own (it rebuilds the layer from get_config's
# dict when a model is loaded), so it cannot be the reader of a transformers config; without it
# no per-layer-type layer is needed, and the M-RoPE configs it would read have no reader either.
NOT_IN_TENSORFLOW = {"RotaryEmbeddingPerLayerType"}
# The Keras layer's arguments lack M-RoPE's (above) and form: it has one output, cos and sin per channel.
NOT_IN_THE_KERAS_LAYER = {"form", "mrope_section", "mrope_interleaved"}


def as_array(t):
    if isinstance(t, pj.nnx.Variable):  # the Flax module's table
        t = t[...]
    return np.asarray(t.numpy() if hasattr(t, "numpy") else t, np.float64)


def arguments(obj):
    # Keras layers add their own **kwargs (name, dtype, ...); the rest must match.
    target = obj.__init__ if inspect.isclass(obj) else obj
    return [p for p in inspect.signature(target).parameters if p not in ("self", "kwargs", "device", "out")]


@pytest.mark.parametrize("name", SHARED)
def test_each_front_exports_the_shared_names_with_the_same_arguments(name):
    fronts = {front: module for front, module in FRONTS.items() if front != "tensorflow" or name not in NOT_IN_TENSORFLOW}
    assert len(fronts) >= 2
    for module in fronts.values():
        assert name in module.__all__
    signatures = {front: arguments(getattr(module, name)) for front, module in fronts.items()}
    torch_args = [a for a in signatures["torch"] if a not in ("options", "params")]
    # Flax modules take their random streams (rngs) where Keras layers take theirs implicitly.
    jax_args = [a for a in signatures["jax"] if a not in ("options", "params", "rngs")]
    assert torch_args == jax_args
    if "tensorflow" in fronts:
        tf_args = [a for a in signatures["tensorflow"] if a not in ("options", "params")]
        lacking = NOT_IN_THE_KERAS_LAYER if name == "RotaryEmbedding" else set()
        assert [a for a in torch_args if a not in lacking] == tf_args
    else:
        assert not hasattr(ptf, name)


def test_from_config_reads_a_transformers_config_in_torch_and_jax_and_is_keras_own_in_tensorflow():
    assert arguments(pt.RotaryEmbedding.from_config) == arguments(pj.RotaryEmbedding.from_config) == ["config", "layer_type"]
    layer = ptf.RotaryEmbedding(16, rope_type="linear", factor=2.0)
    clone = ptf.RotaryEmbedding.from_config(layer.get_config())
    assert (clone.head_dim, clone.rope_type, clone.params) == (16, "linear", {"factor": 2.0})


@pytest.mark.parametrize("front", FRONTS)
def test_no_private_or_imported_module_leaks_through_all(front):
    module = FRONTS[front]
    assert not [n for n in module.__all__ if n.startswith("_") or inspect.ismodule(getattr(module, n))]
    assert {"np", "os", "re", "math"}.isdisjoint(module.__all__)


@pytest.mark.parametrize("front", FRONTS)
def test_positional_encoding_module_takes_a_sources_options_as_keywords(front):
    # whisper's max_timescale, and the generic offset: the same table as NumPy's in both fronts.
    module = FRONTS[front].PositionalEncoding(6, max_len=9, convention="whisper", max_timescale=500, offset=3)
    expected = posenc.positional_encoding(9, 6, convention="whisper", max_timescale=500, offset=3)
    assert module.convention == posenc.conventions.resolve("whisper", max_timescale=500, offset=3)
    np.testing.assert_allclose(as_array(module.pe), expected, rtol=0, atol=2e-7)


@pytest.mark.parametrize("front", FRONTS)
def test_rotary_module_attributes_are_named_alike(front):
    module = FRONTS[front].RotaryEmbedding(64, 500000.0, rope_type="yarn", factor=8.0, original_max_position_embeddings=4096)
    inv_freq, attention = posenc.rotary_frequencies(64, 500000.0, rope_type="yarn", factor=8.0,
                                                    original_max_position_embeddings=4096)
    np.testing.assert_array_equal(as_array(module.inv_freq), inv_freq)
    assert module.attention_factor == attention and attention > 1
    assert (module.head_dim, module.rotary_dim, module.layout, module.rope_type) == (64, 64, "half", "yarn")


@pytest.mark.parametrize("front", ["torch", "jax"])
def test_mrope_module_attributes_are_named_alike(front):
    module = FRONTS[front].RotaryEmbedding(32, 1e6, mrope_section=(6, 5, 5), mrope_interleaved=True)
    assert tuple(module.mrope_section) == (6, 5, 5)
    np.testing.assert_array_equal(module.axes, posenc.rotary_grid.mrope_axes((6, 5, 5), interleaved=True))
