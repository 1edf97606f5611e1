"""The framework fronts (posenc.torch, posenc.tensorflow, posenc.jax) behave alike: the same
names and arguments, the same tables as NumPy, the same dtypes, modules and bad-input messages.

Each test runs once per front through the ``front`` fixture (conftest.py), a ``Front`` adapter
(frameworks.py): how to make
a tensor, how to read one back as NumPy, how to make and run a module. What only one framework
has (torch.compile, devices, Keras saving, tf.function, Flax NNX under jit) stays in
test_torch.py, test_tensorflow.py and test_jax.py.
"""

import dataclasses
import inspect
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

import posenc  # noqa: E402
import posenc.engine.backends  # noqa: E402
import posenc.front  # noqa: E402
from frameworks import BOUND, FLOATS, FRONTS, MAKERS, ROUNDING, only  # noqa: E402
from lecture_values import SAMPLE_2x5x2, SAMPLE_PLUS_PE, TABLE_10x6_4DP  # noqa: E402
from messages import assert_raises_naming  # noqa: E402
from reference import exact_rows  # noqa: E402

SHARED = ["positional_encoding", "encode", "rotary_cos_sin", "apply_rotary", "grid_encoding", "convert_layout",
          "convert_rotary_layout", "rotary_frequencies", "rotary_permutation", "PositionalEncoding", "RotaryEmbedding",
          "axial_cos_sin", "mrope_cos_sin", "RotaryEmbeddingPerLayerType", "per_axis_cos_sin", "per_axis_cis", "pixel_cos_sin",
          "random_fourier_features", "RotaryEmbeddingMixed"]
# Not in the TensorFlow front: a per-layer-type layer (Gemma 3's configs); the Keras layer reads
# one layer type of such a config at a time (from_config(config, layer_type=...)).
NOT_IN_TENSORFLOW = {"RotaryEmbeddingPerLayerType"}


# Names and arguments.


def arguments(obj):
    # Keras layers add their own **kwargs (name, dtype, ...); the rest must match.
    target = obj.__init__ if inspect.isclass(obj) else obj
    return [p for p in inspect.signature(target).parameters if p not in ("self", "kwargs", "device", "out")]


@pytest.mark.parametrize("name", SHARED)
def test_each_front_exports_the_shared_names_with_the_same_arguments(name):
    apis = {front: MAKERS[front]().api for front in FRONTS if front != "tensorflow" or name not in NOT_IN_TENSORFLOW}
    assert len(apis) >= 2
    for module in apis.values():
        assert name in module.__all__
    signatures = {front: arguments(getattr(module, name)) for front, module in apis.items()}
    torch_args = [a for a in signatures["torch"] if a not in ("options", "params")]
    # Random draws, each framework's way: Flax modules take their streams (rngs), Keras layers a
    # seed (as keras.layers.Dropout does), torch modules draw from torch's global generator.
    jax_args = [a for a in signatures["jax"] if a not in ("options", "params", "rngs")]
    assert torch_args == jax_args
    if "tensorflow" in apis:
        tf_args = [a for a in signatures["tensorflow"] if a not in ("options", "params", "seed")]
        assert torch_args == tf_args
    else:
        assert not hasattr(MAKERS["tensorflow"]().api, name)


def test_from_config_reads_a_transformers_config_in_torch_and_jax_and_is_keras_own_in_tensorflow():
    pt, ptf, pj = (MAKERS[front]().api for front in FRONTS)
    assert arguments(pt.RotaryEmbedding.from_config) == arguments(pj.RotaryEmbedding.from_config) == ["config", "layer_type"]
    layer = ptf.RotaryEmbedding(16, rope_type="linear", factor=2.0)
    clone = ptf.RotaryEmbedding.from_config(layer.get_config())
    assert (clone.head_dim, clone.rope_type, clone.params) == (16, "linear", {"factor": 2.0})


def test_the_bound_functions_are_the_fronts_own(front):
    # posenc.front's generic functions, bound to the front: its module, name, docstring and types in
    # the signature; a keyword the framework lacks (torch's device= and out=) is refused by name.
    encode = front.api.encode
    assert (encode.__module__, encode.__name__) == (front.api.__name__, "encode") and "positions" in encode.__doc__
    tensor = {"torch": "torch.Tensor", "tensorflow": "tf.Tensor", "jax": "jax.Array"}[front.name]
    assert inspect.signature(encode).return_annotation == tensor
    assert str(inspect.signature(encode).parameters["positions"].annotation).startswith(tensor)
    if front.name != "torch":
        for name in ("device", "out"):
            assert_raises_naming(lambda: front.api.positional_encoding(4, 6, **{name: None}), TypeError, [repr(name)])



def test_bound_writes_the_fronts_signature_and_refuses_what_it_lacks(front):
    # Bound afresh (the fronts bind theirs at import): out= left out, as torch's grid_encoding and every
    # function of the other fronts are bound.
    spec = front.api.SPEC
    encode = posenc.front.bound(posenc.front.encode, spec, without=("out",))
    assert (encode.__name__, encode.__module__, encode.__doc__) == ("encode", front.api.__name__, posenc.front.encode.__doc__)
    signature = inspect.signature(encode)
    assert list(signature.parameters) == ["positions", "d_model", "convention", "base", "layout", "dtype", "options"]
    assert signature.parameters["positions"].annotation == f"{spec.tensor} | npt.ArrayLike"
    assert signature.parameters["dtype"].annotation == f"{spec.dtype} | None"
    assert signature.return_annotation == spec.tensor
    assert encode.__annotations__ == {**{n: p.annotation for n, p in signature.parameters.items()}, "return": spec.tensor}
    assert_raises_naming(lambda: encode([0, 1], 4, out=None), TypeError, ["encode()", "'out'"])
    np.testing.assert_array_equal(front.numpy(encode([0, 3, 7], 6)), front.numpy(front.api.encode([0, 3, 7], 6)))


def test_a_spec_builds_in_its_backends_four_float_dtypes(front):
    entry = posenc.engine.backends._ENTRIES[front.name]()
    spec = dataclasses.replace(front.api.SPEC, xp=entry)  # __post_init__ runs again
    assert spec.dtypes == (entry.float16, entry.bfloat16, entry.float32, entry.float64)
    assert front.api.DTYPES == front.api.SPEC.dtypes

def test_no_private_or_imported_module_leaks_through_all(front):
    module = front.api
    assert not [n for n in module.__all__ if n.startswith("_") or inspect.ismodule(getattr(module, n))]
    assert {"np", "os", "re", "math"}.isdisjoint(module.__all__)


# Tables: NumPy's numbers in every front.


@pytest.mark.parametrize("layout", posenc.LAYOUTS)
@pytest.mark.parametrize("length, d_model", [(10, 6), (257, 64), (33, 7), (5, 1)])
def test_table_agrees_with_numpy(front, length, d_model, layout):
    table = front.api.positional_encoding(length, d_model, layout=layout)
    assert table.dtype == front.dtypes["float32"] and tuple(table.shape) == (length, d_model)
    expected = posenc.positional_encoding(length, d_model, layout=layout)
    np.testing.assert_allclose(front.numpy(table), expected, rtol=0, atol=1e-6)


def test_reproduces_the_lectures_tables(front):
    # Seed 002 (PyTorch) printed the table at 4 decimals; seed 001 (TensorFlow) printed x + PE, cos|sin.
    np.testing.assert_allclose(front.numpy(front.api.positional_encoding(10, 6)), TABLE_10x6_4DP, atol=5e-5)
    pe = front.numpy(front.api.positional_encoding(5, 2, layout="cos_sin"))
    np.testing.assert_allclose(SAMPLE_2x5x2 + pe, SAMPLE_PLUS_PE, atol=2e-7)


@pytest.mark.parametrize("front, dtype", [(f, d) for f in FRONTS for d in FLOATS[f]], indirect=["front"])
def test_tables_in_each_dtype_are_numpys_rounded_once(front, dtype):
    for length, d_model in [(40, 8), (50, 12)]:
        table = front.api.positional_encoding(length, d_model, dtype=front.dtypes[dtype])
        assert table.dtype == front.dtypes[dtype] and tuple(table.shape) == (length, d_model)
        got = front.numpy(table)
        exact = posenc.positional_encoding(length, d_model, dtype=np.float64)
        np.testing.assert_allclose(got.astype(np.float64), exact, rtol=0, atol=ROUNDING[dtype])
        # float64 is NumPy's float64 table; the others its float32 table rounded once to the dtype.
        wide = np.float64 if dtype == "float64" else np.float32
        want = front.tensor(posenc.positional_encoding(length, d_model, dtype=wide), dtype)
        np.testing.assert_array_equal(got, front.numpy(want))


def test_accurate_at_large_positions(front):
    out = front.api.encode(front.tensor([65535, 100000]), 512)
    np.testing.assert_allclose(front.numpy(out), exact_rows([65535, 100000], 512), atol=1e-6)


@pytest.mark.parametrize("convention, d_model", [("paper", 8), ("paper", 7), ("fairseq", 9), ("tensor2tensor", 7),
                                                 ("diffusers", 6), ("whisper", 4)])
def test_encode_is_numpys_table(front, convention, d_model):
    positions = np.array([[0, 1, 2, 3], [2, 7, 40_000, 9_999_999]])
    for layout in posenc.LAYOUTS:
        got = front.api.encode(front.tensor(positions), d_model, convention=convention, layout=layout)
        assert got.dtype == front.dtypes["float32"] and tuple(got.shape) == (2, 4, d_model)
        # Run eagerly on the CPU every front hands over NumPy's table.
        want = posenc.encode(positions, d_model, convention=convention, layout=layout)
        np.testing.assert_array_equal(front.numpy(got), want, err_msg=f"layout={layout}")


@only("torch", "tensorflow")  # float64: JAX has none with jax_enable_x64 off
def test_encode_fractional_positions_of_any_shape_in_float64(front):
    positions = [[0.5, 3.25], [1e4 + 0.5, 7.0]]
    out = front.api.encode(positions, 9, dtype=front.dtypes["float64"])
    assert tuple(out.shape) == (2, 2, 9) and out.dtype == front.dtypes["float64"]
    np.testing.assert_allclose(front.numpy(out), posenc.encode(positions, 9, dtype=np.float64), atol=1e-15)


def test_grid_encoding_is_posencs(front):
    np.testing.assert_array_equal(front.numpy(front.api.grid_encoding((3, 4), 16)), posenc.grid_encoding((3, 4), 16))


# Rotary functions.


@pytest.mark.parametrize("rope_type, params", [("default", {}), ("linear", {"factor": 2.0}),
                                               ("yarn", {"factor": 4.0, "original_max_position_embeddings": 64}),
                                               ("default", {"partial_rotary_factor": 0.5})])
def test_rotary_cos_sin_and_apply_rotary_agree_with_numpy(front, rope_type, params):
    positions = np.array([[0, 3, 100_000, 9_999_999]])
    x = np.random.default_rng(0).standard_normal((1, 2, 4, 32)).astype(np.float32)
    for layout in posenc.ROTARY_LAYOUTS:
        want_c, want_s = posenc.rotary_cos_sin(positions, 32, rope_type=rope_type, layout=layout, **params)
        c, s = front.api.rotary_cos_sin(front.tensor(positions), 32, rope_type=rope_type, layout=layout, **params)
        assert c.dtype == front.dtypes["float32"] and tuple(c.shape) == want_c.shape
        assert np.abs(front.numpy(c).astype(np.float64) - want_c).max() <= BOUND, layout
        assert np.abs(front.numpy(s).astype(np.float64) - want_s).max() <= BOUND, layout
        cos, sin = (front.tensor(t[:, None], "float32") for t in (want_c, want_s))
        got = front.api.apply_rotary(front.tensor(x), cos, sin, layout=layout)
        want = posenc.apply_rotary(x, want_c[:, None], want_s[:, None], layout=layout)
        np.testing.assert_allclose(front.numpy(got), want, rtol=0, atol=1e-6, err_msg=f"layout={layout}")


# The PositionalEncoding module (torch nn.Module, Keras layer, Flax NNX module).


def test_module_adds_the_table(front):
    module = front.positional_encoding_module(6, max_len=32)
    x = np.random.default_rng(0).standard_normal((2, 10, 6)).astype(np.float32)
    added = front.numpy(front.run(module, front.tensor(x))) - x
    np.testing.assert_allclose(added, np.broadcast_to(posenc.positional_encoding(10, 6), (2, 10, 6)), atol=1e-6)
    np.testing.assert_allclose(added, np.broadcast_to(TABLE_10x6_4DP, (2, 10, 6)), atol=5e-5)


def test_module_past_max_len(front):
    module = front.positional_encoding_module(8, max_len=4)
    out = front.run(module, front.tensor(np.zeros((3, 11, 8)), "float32"))
    assert tuple(out.shape) == (3, 11, 8) and module.max_len == (11 if front.grows_table else 4)
    np.testing.assert_allclose(front.numpy(out)[0], posenc.positional_encoding(11, 8), atol=1e-7)


def test_module_keeps_its_table_for_a_sequence_of_max_len_rows(front):
    module = front.positional_encoding_module(8, max_len=4)
    table = module.pe
    out = front.run(module, front.tensor(np.zeros((3, 4, 8)), "float32"))
    assert module.pe is table and module.max_len == 4
    np.testing.assert_allclose(front.numpy(out)[0], posenc.positional_encoding(4, 8), atol=1e-7)


def test_module_accepts_unbatched_input(front):
    module = front.positional_encoding_module(4, max_len=8)
    out = front.run(module, front.tensor(np.zeros((5, 4)), "float32"))
    np.testing.assert_allclose(front.numpy(out), posenc.positional_encoding(5, 4), atol=1e-7)


def test_module_rejects_wrong_width(front):
    module = front.positional_encoding_module(8)
    with pytest.raises(ValueError, match=r"last dimension of x must be d_model=8, got x of shape \(2, 5, 6\)"):
        front.run(module, front.tensor(np.zeros((2, 5, 6)), "float32"))
    with pytest.raises(ValueError, match="x must have shape"):
        front.run(module, front.tensor(np.zeros(8), "float32"))


@pytest.mark.parametrize("front, dtype", [("torch", "bfloat16"), ("torch", "float64"), ("jax", "bfloat16")],
                         indirect=["front"])
def test_module_adds_the_table_in_the_inputs_dtype(front, dtype):
    # Keras' layer computes in its dtype policy instead (test_tensorflow.py); JAX has no float64.
    module = front.positional_encoding_module(8, 4, convention="fairseq")
    assert module.convention.name == "fairseq"
    out = front.run(module, front.tensor(np.ones((2, 6, 8)), dtype))
    assert out.dtype == front.dtypes[dtype] and module.max_len == 6
    # Added in x's dtype: the float32 table rounded to it, then the sum rounded.
    table = front.tensor(posenc.positional_encoding(6, 8, convention="fairseq"), dtype)
    np.testing.assert_array_equal(front.numpy(out), front.numpy(front.tensor(np.ones((2, 6, 8)), dtype) + table))


def test_module_takes_a_convention_with_its_options(front):
    module = front.positional_encoding_module(9, max_len=6, convention="fairseq")
    assert module.convention.name == "fairseq"
    np.testing.assert_array_equal(front.numpy(module.pe), front.module_table(6, 9, convention="fairseq"))
    # The front's own table function gives the same numbers as the module holds.
    np.testing.assert_array_equal(front.numpy(front.api.positional_encoding(6, 9, convention="fairseq")),
                                  posenc.positional_encoding(6, 9, convention="fairseq"))
    out = front.run(module, front.tensor(np.zeros((1, 10, 9)), "float32"))  # past max_len: the same convention
    np.testing.assert_array_equal(front.numpy(out)[0], front.module_table(10, 9, convention="fairseq"))
    np.testing.assert_array_equal(front.numpy(module.pe), front.module_table(module.max_len, 9, convention="fairseq"))
    whisper = front.positional_encoding_module(6, max_len=5, convention="whisper", max_timescale=100.0)
    np.testing.assert_array_equal(front.numpy(whisper.pe),
                                  front.module_table(5, 6, convention="whisper", max_timescale=100.0))


def test_module_takes_a_sources_options_as_keywords(front):
    # whisper's max_timescale, and the generic offset: the same table as NumPy's in every front.
    module = front.positional_encoding_module(6, max_len=9, convention="whisper", max_timescale=500, offset=3)
    expected = posenc.positional_encoding(9, 6, convention="whisper", max_timescale=500, offset=3)
    assert module.convention == posenc.sinusoidal.conventions.resolve("whisper", max_timescale=500, offset=3)
    np.testing.assert_allclose(front.numpy(module.pe), expected, rtol=0, atol=2e-7)


def test_module_dropout_only_in_training(front):
    module = front.positional_encoding_module(16, dropout=0.5)
    x = front.tensor(np.ones((2, 6, 16)), "float32")
    inference = front.numpy(front.run(module, x, training=False))
    np.testing.assert_array_equal(front.numpy(front.run(module, x, training=False)), inference)
    np.testing.assert_allclose(inference, np.broadcast_to(1 + posenc.positional_encoding(6, 16), (2, 6, 16)),
                               atol=1e-6)
    training = front.numpy(front.run(module, x, training=True))
    assert (training == 0).any() and not np.allclose(training, inference)


# The RotaryEmbedding module.


LLAMA3 = {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
          "original_max_position_embeddings": 8192}


def test_rotary_module_attributes_are_named_alike(front):
    module = front.make(front.api.RotaryEmbedding, 64, 500000.0, rope_type="yarn", factor=8.0,
                        original_max_position_embeddings=4096)
    inv_freq, attention = posenc.rotary_frequencies(64, 500000.0, rope_type="yarn", factor=8.0,
                                                    original_max_position_embeddings=4096)
    np.testing.assert_array_equal(front.numpy(module.inv_freq), inv_freq)
    assert module.attention_factor == attention and attention > 1
    assert (module.head_dim, module.rotary_dim, module.layout, module.rope_type) == (64, 64, "half", "yarn")


def test_mrope_module_attributes_are_named_alike(front):
    module = front.make(front.api.RotaryEmbedding, 32, 1e6, mrope_section=(6, 5, 5), mrope_interleaved=True)
    assert tuple(module.mrope_section) == (6, 5, 5)
    np.testing.assert_array_equal(module.axes, posenc.rope.axial.mrope_axes((6, 5, 5), interleaved=True))


def test_mrope_module_reads_text_position_ids_as_three_equal_rows(front):
    # transformers' Qwen2-VL: a (batch, seq) position_ids is text, the same position on every axis
    module = front.make(front.api.RotaryEmbedding, 32, 1e6, mrope_section=(4, 6, 6))
    text = np.array([[0, 1, 5, 9], [3, 4, 5, 6]])
    x = front.tensor(np.zeros((2, 4, 32), np.float32))
    cos, sin = front.run(module, x, front.tensor(text))
    want_c, want_s = posenc.rope.mrope_cos_sin(np.stack([text] * 3), 32, mrope_section=(4, 6, 6), base=1e6, dtype=np.float64)
    np.testing.assert_allclose(front.numpy(cos), want_c, rtol=0, atol=6e-8)  # one float32 rounding
    np.testing.assert_allclose(front.numpy(sin), want_s, rtol=0, atol=6e-8)


def test_rotary_module_matches_the_function(front):
    module = front.make(front.api.RotaryEmbedding, 64, 500000.0, compute_dtype="bfloat16", **LLAMA3)
    inv_freq, attention = posenc.rotary_frequencies(64, 500000.0, **LLAMA3)
    np.testing.assert_array_equal(front.numpy(module.inv_freq), inv_freq)
    assert module.attention_factor == attention and module.rotary_dim == 64 and module.layout == "half"
    position_ids = np.array([[0, 1, 70_000]])
    cos, sin = front.run(module, front.tensor(np.zeros((1, 3, 64)), "bfloat16"), front.tensor(position_ids))
    assert cos.dtype == sin.dtype == front.dtypes["bfloat16"] and tuple(cos.shape) == (1, 3, 64)
    want_c, _ = posenc.rotary_cos_sin(position_ids, 64, base=500000.0, **LLAMA3)
    np.testing.assert_array_equal(front.numpy(cos), front.numpy(front.tensor(want_c.astype(np.float32), "bfloat16")))


def test_rotary_module_forms(front):
    x, position_ids = front.tensor(np.zeros((1, 2, 16)), "float32"), front.tensor(np.array([[0, 5]]))
    pairs = front.run(front.make(front.api.RotaryEmbedding, 16, form="pairs"), x, position_ids)
    assert tuple(pairs[0].shape) == (1, 2, 8)
    want_c, want_s = posenc.rotary_cos_sin(np.array([[0, 5]]), 16)
    np.testing.assert_allclose(front.numpy(pairs[1]), want_s[..., :8], rtol=0, atol=BOUND)
    complex_ = front.run(front.make(front.api.RotaryEmbedding, 16, form="complex"), x, position_ids)
    assert complex_.dtype == front.dtypes["complex64"]
    np.testing.assert_array_equal(np.real(front.numpy(complex_)), front.numpy(pairs[0]))
    np.testing.assert_array_equal(np.imag(front.numpy(complex_)), front.numpy(pairs[1]))


def test_module_takes_positions_per_call(front):
    # Packed sequences (two documents in the first row) and a decoding step past max_len: the
    # encoding of those positions is added, as Flax's lm1b, keras-hub and MaxText take them.
    module = front.positional_encoding_module(8, max_len=4)
    x = np.random.default_rng(3).standard_normal((2, 5, 8)).astype(np.float32)
    positions = np.array([[0, 1, 2, 0, 1], [7, 8, 9, 10, 11]])
    got = front.numpy(front.run(module, front.tensor(x), front.tensor(positions)))
    np.testing.assert_array_equal(got, x + posenc.encode(positions, 8))  # eagerly: NumPy's rows, added in float32
    one_row = front.numpy(front.run(module, front.tensor(x), front.tensor(np.arange(3, 8))))  # (seq,): every row alike
    np.testing.assert_array_equal(one_row, x + posenc.encode(np.arange(3, 8), 8))
    with pytest.raises(ValueError, match=r"positions must have the shape of x but for its last axis, \(2, 5\)"):
        front.run(module, front.tensor(x), front.tensor(np.arange(4)))


@pytest.mark.parametrize("dtype", ["bfloat16", "float16", "float32"])
def test_apply_rotary_returns_xs_dtype(front, dtype):
    # float32 cos and sin rotate a bfloat16 (float16) x into bfloat16 (float16): rounded to x's dtype
    # first, then the rotation of that dtype. posenc.apply_rotary, given the front's tensors, is the same.
    x = np.random.default_rng(4).standard_normal((1, 2, 4, 16)).astype(np.float32)
    cos, sin = (t[:, None] for t in posenc.rotary_cos_sin(np.array([[0, 3, 1000, 10**6]]), 16, partial_rotary_factor=0.5))
    got = front.api.apply_rotary(front.tensor(x, dtype), front.tensor(cos, "float32"), front.tensor(sin, "float32"))
    assert got.dtype == front.dtypes[dtype] and tuple(got.shape) == x.shape
    same = front.api.apply_rotary(front.tensor(x, dtype), front.tensor(cos, dtype), front.tensor(sin, dtype))
    np.testing.assert_array_equal(front.numpy(got), front.numpy(same))
    generic = posenc.apply_rotary(front.tensor(x, dtype), front.tensor(cos, "float32"), front.tensor(sin, "float32"))
    assert type(generic) is type(got)
    np.testing.assert_array_equal(front.numpy(generic), front.numpy(got))
    # Each product and the sum rounded once in dtype: within 2 eps (|a| + |b|) of the exact rotation of the rounded inputs.
    rounded = [front.numpy(front.tensor(t, dtype)).astype(np.float64) for t in (x, cos, sin)]
    eps = {"bfloat16": 2.0**-7, "float16": 2.0**-10, "float32": 2.0**-23}[dtype]
    assert np.abs(front.numpy(got) - posenc.apply_rotary(*rounded)).max() <= 4 * eps * np.abs(rounded[0]).max()
    np.testing.assert_array_equal(front.numpy(got)[..., 8:], rounded[0][..., 8:])


def test_posenc_apply_rotary_wants_one_kind_of_array(front):
    x = front.tensor(np.ones((2, 8)), "float32")
    assert_raises_naming(lambda: posenc.apply_rotary(x, np.ones((2, 8)), np.zeros((2, 8))), TypeError, ["cos", "ndarray"])


def test_rotary_module_reads_the_length_for_dynamic(front):
    dynamic = front.make(front.api.RotaryEmbedding, 16, rope_type="dynamic", factor=2.0, max_position_embeddings=8)
    cos, _ = front.run(dynamic, front.tensor(np.zeros((1, 20, 16)), "float32"), front.tensor(np.arange(20)[None]))
    want, _ = posenc.rotary_cos_sin(np.arange(20)[None], 16, rope_type="dynamic", factor=2.0,
                                    max_position_embeddings=8, seq_len=20)
    np.testing.assert_allclose(front.numpy(cos), want, rtol=0, atol=front.rotary_atol)


# Bad input: each front names the argument, what it got and what is allowed. "{prefix}" is
# how the front spells a dtype in its messages ("torch.int64" in torch, "int64" elsewhere).
BAD_INPUT = [
    ("dtype int32", lambda f: f.api.positional_encoding(4, 6, dtype=f.dtypes["int32"]), TypeError,
     ["dtype must be", "{prefix}int32"]),
    ("dtype int64", lambda f: f.api.positional_encoding(4, 6, dtype=f.dtypes["int64"]), TypeError,
     ["dtype must be", "{prefix}int64"]),
    ("encode dtype", lambda f: f.api.encode([1, 2], 8, dtype=f.dtypes["int32"]), TypeError,
     ["dtype must be", "{prefix}int32"]),
    ("dtype name", lambda f: f.api.positional_encoding(4, 6, dtype="nope"), TypeError, ["dtype", "'nope'"]),
    ("length -2", lambda f: f.api.positional_encoding(-2, 6), ValueError, ["length", "-2"]),
    ("length -1", lambda f: f.api.positional_encoding(-1, 8), ValueError, ["length", "-1"]),
    ("length 4.5", lambda f: f.api.positional_encoding(4.5, 6), TypeError, ["length", "4.5"]),
    ("d_model", lambda f: f.api.positional_encoding(4, 0), ValueError, ["d_model", "0"]),
    ("encode d_model", lambda f: f.api.encode([1, 2], 0), ValueError, ["d_model", "0"]),
    ("absurd size", lambda f: f.api.encode(f.tensor(np.zeros(10**4)), 2**19), ValueError,
     ["positions.size * d_model must be at most 2**31", "10000 * 524288"]),
    ("absurd rotary size", lambda f: f.api.rotary_cos_sin(f.tensor(np.zeros(2**22)), 1024), ValueError,
     ["positions.size * head_dim must be at most 2**31", "4194304 * 1024"]),
    # NumPy positions that take no memory (broadcast views) are counted before their float64 copy is made
    ("absurd view", lambda f: f.api.encode(np.broadcast_to(np.zeros(1), (2**31,)), 64), ValueError,
     ["positions.size * d_model must be at most 2**31 = 2147483648 entries, got 2147483648 * 64 = 137438953472"]),
    ("absurd rotary view", lambda f: f.api.rotary_cos_sin(np.broadcast_to(np.zeros(1), (2**31,)), 64), ValueError,
     ["positions.size * head_dim must be at most 2**31 = 2147483648 entries, got 2147483648 * 64 = 137438953472"]),
    ("absurd axial view", lambda f: f.api.axial_cos_sin(np.broadcast_to(np.zeros(1), (2, 2**30)), 64), ValueError,
     ["positions.size * head_dim must be at most 2**31 = 2147483648 entries, got 2147483648 * 64 = 137438953472"]),
    ("absurd M-RoPE view", lambda f: f.api.mrope_cos_sin(np.broadcast_to(np.zeros(1), (3, 2**30)), 32, mrope_section=(4, 6, 6)),
     ValueError, ["position_ids.size must be at most 2**31 = 2147483648 entries, got 3221225472"]),
    ("bool positions", lambda f: f.api.encode(f.tensor([True]), 4), TypeError, ["positions", "{prefix}bool"]),
    ("complex positions", lambda f: f.api.encode(f.tensor([1 + 2j]), 4), TypeError, ["positions", "complex"]),
    ("nan positions", lambda f: f.api.encode(f.tensor([1.0, np.nan]), 4), ValueError, ["positions", "finite"]),
    ("inf positions", lambda f: f.api.encode(f.tensor([np.inf]), 4), ValueError, ["positions", "finite"]),
    ("nan list", lambda f: f.api.encode([np.nan], 8), ValueError, ["positions", "finite"]),
    ("rotary layout", lambda f: f.api.rotary_cos_sin([1], 8, layout="pairs"), ValueError, ["layout", "'pairs'"]),
    ("apply_rotary sin", lambda f: f.api.apply_rotary(f.tensor(np.zeros((2, 8))), f.tensor(np.ones((2, 8))), None), TypeError,
     ["sin must be", "got None"]),
    ("module d_model", lambda f: f.positional_encoding_module(0), ValueError, ["d_model", "0"]),
    ("module max_len", lambda f: f.positional_encoding_module(6, max_len=-1), ValueError, ["max_len", "-1"]),
    ("dropout 1.5", lambda f: f.positional_encoding_module(6, dropout=1.5), ValueError, ["dropout", "1.5"]),
    ("dropout 1.0", lambda f: f.positional_encoding_module(6, dropout=1.0), ValueError, ["dropout must be a real number in [0, 1)", "1.0"]),
    ("dropout -0.1", lambda f: f.positional_encoding_module(6, dropout=-0.1), ValueError, ["dropout", "-0.1"]),
    ("module layout", lambda f: f.positional_encoding_module(6, layout="cat"), ValueError, ["layout", "'cat'"]),
    ("module width", lambda f: f.run(f.positional_encoding_module(8), f.tensor(np.ones((2, 3, 6)), "float32")),
     ValueError, ["d_model", "6"]),
    ("rotary x dtype", lambda f: f.run(f.make(f.api.RotaryEmbedding, 16), f.tensor(np.zeros((1, 2, 16)), "int32"),
                                       f.tensor(np.array([[0, 1]]))), TypeError, ["dtype must be", "{prefix}int32"]),
    ("whisper option", lambda f: f.positional_encoding_module(6, convention="whisper", scale=2.0), TypeError,
     ["whisper", "max_timescale", "scale"]),
]
# Keras answers the first itself, before the layer sees it, in its own words (a ValueError not
# naming the list); its rotary layer has no form argument.
BAD_INPUT_TORCH_AND_JAX = [
    ("x a list", lambda f: f.run(f.positional_encoding_module(8), [1.0] * 8), TypeError, ["x must be", "list"]),
    ("rotary form", lambda f: f.make(f.api.RotaryEmbedding, 16, form="polar"), ValueError, ["form", "'polar'"]),
]


@pytest.mark.parametrize("front, call, error, words", [
    pytest.param(front, call, error, words, id=f"{front}-{case}")
    for case, call, error, words in BAD_INPUT for front in FRONTS
] + [
    pytest.param(front, call, error, words, id=f"{front}-{case}")
    for case, call, error, words in BAD_INPUT_TORCH_AND_JAX for front in ("torch", "jax")
], indirect=["front"])
def test_bad_input_errors_name_the_argument(front, call, error, words):
    assert_raises_naming(lambda: call(front), error, [word.format(prefix=front.dtype_prefix) for word in words])


def test_positions_that_are_not_finite_or_not_numbers_are_refused_in_whole_sentences(front):
    # Checked where they are, without a copy to NumPy: the message names the framework's array as given.
    kind = "an array" if front.name == "jax" else "a tensor"
    for positions in ([1.0, np.nan], [[np.inf], [0.0]]):
        with pytest.raises(ValueError) as caught:
            front.api.encode(front.tensor(np.array(positions)), 4)
        assert str(caught.value) == f"positions must be finite, got NaN or infinity in {kind} of shape {np.shape(positions)}"
    with pytest.raises(TypeError) as caught:
        front.api.encode(front.tensor([True, False]), 4)
    assert str(caught.value) == f"positions must hold integers or real floats, got an array of dtype {front.dtype_prefix}bool"


@pytest.mark.parametrize(("mrope_section", "counted"), [(None, 2**16), ((8192, 12288, 12288), 3 * 2**16)])
def test_a_rotary_module_refuses_absurd_position_ids_at_once(front, mrope_section, counted):
    # 2**16 positions at head_dim 2**16: cos and sin would take 32 GB. M-RoPE counts its three rows, as mrope_cos_sin.
    module = front.make(front.api.RotaryEmbedding, 2**16, mrope_section=mrope_section)
    with pytest.raises(ValueError) as caught:
        front.run(module, front.tensor(np.zeros(1, np.float32)), front.tensor(np.zeros((1, 2**16), np.int64)))
    # (Keras wraps a layer's error in its own lines: the message is read whole inside them.)
    assert (f"positions.size * head_dim must be at most 2**31 = 2147483648 entries, got {counted} * 65536 = {counted * 65536}"
            in str(caught.value))


def test_an_absurd_rope_mixed_module_is_refused_before_its_frequencies_are_drawn(front):
    rngs = {"rngs": __import__("flax").nnx.Rngs(0)} if front.name == "jax" else {}
    with pytest.raises(ValueError) as caught:
        front.make(front.api.RotaryEmbeddingMixed, 256, 2**12, 2**12, **rngs)
    assert str(caught.value) == ("depth * num_heads * head_dim must be at most 2**31 = 2147483648 entries, "
                                 "got 4096 * 4096 * 256 = 4294967296")


def test_a_module_holds_5000_rows_by_default(front):
    # max_len=5000 as "The Annotated Transformer" and torch's tutorial (and each front's signature) say.
    assert front.positional_encoding_module(8).max_len == 5000
