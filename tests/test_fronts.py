"""The framework fronts agree: the same names, signatures, module attributes and numbers."""

import inspect
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np
import pytest

import posenc
import posenc.tensorflow as ptf
import posenc.torch as pt

FRONTS = {"torch": pt, "tensorflow": ptf}
SHARED = ["positional_encoding", "encode", "rotary_cos_sin", "apply_rotary", "grid_encoding", "convert_layout",
          "convert_rotary_layout", "rotary_frequencies", "rotary_permutation", "PositionalEncoding", "RotaryEmbedding"]


def as_array(t):
    return np.asarray(t.numpy() if hasattr(t, "numpy") else t, np.float64)


@pytest.mark.parametrize("name", SHARED)
def test_each_front_exports_the_shared_names_with_the_same_arguments(name):
    # Keras layers add their own **kwargs (name, dtype, ...); the rest must match.
    def arguments(obj):
        target = obj.__init__ if inspect.isclass(obj) else obj
        return [p for p in inspect.signature(target).parameters if p not in ("self", "kwargs", "device", "out")]

    signatures = {front: arguments(getattr(module, name)) for front, module in FRONTS.items()}
    for module in FRONTS.values():
        assert name in module.__all__
    torch_args = [a for a in signatures["torch"] if a not in ("options", "params", "mrope_section",
                                                               "mrope_interleaved", "form")]
    tf_args = [a for a in signatures["tensorflow"] if a not in ("options", "params")]
    assert torch_args == tf_args


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
