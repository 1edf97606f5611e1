"""posenc.tensorflow: what only TensorFlow and Keras have (graphs, tf.function, dtype policies,
saving, XLA's log lines).

The behaviour the fronts share is tested once for all of them in test_front.py.
"""

import json
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

import child  # noqa: E402
import posenc  # noqa: E402

try:
    import keras
    import tensorflow as tf

    import posenc.tensorflow as ptf
except ImportError:  # the tests skip one by one (the framework mark below)
    keras = tf = ptf = None

pytestmark = pytest.mark.framework("tensorflow")  # each test skips (not the file) where TensorFlow is missing


def test_tables_numpy_builds_are_constants_of_a_graph():
    # grid_encoding and T5's buckets depend on sizes only: inside tf.function NumPy's values become constants
    grid = tf.function(lambda: ptf.grid_encoding((2, 3), 8, dtype=tf.float64))()
    np.testing.assert_array_equal(grid.numpy(), posenc.grid_encoding((2, 3), 8, dtype=np.float64))
    buckets = tf.function(lambda: ptf.relative_position_bucket(np.arange(-3, 4)))()  # dtype None: the array's
    assert buckets.dtype == tf.int64
    np.testing.assert_array_equal(buckets.numpy(), __import__("posenc.biases").biases.relative_position_bucket(np.arange(-3, 4)))


def test_a_graph_arranges_the_columns_inside_its_xla_function(monkeypatch):
    # The WHOLE route hands TF the layout, so the sines and cosines are put in their columns within the one
    # XLA-compiled function, not by separate graph operations after it.
    seen = []

    def recording(positions, v, layout, width):
        seen.append((layout, width))
        return half_turns(positions, v, layout, width)

    half_turns = ptf._half_turns
    monkeypatch.setattr(ptf, "_half_turns", recording)
    tf.function(lambda: ptf.positional_encoding(30, 7, layout="sin_cos"))()
    assert seen == [("sin_cos", 7)]  # an odd width: its last column is a sine, inside too


@pytest.mark.parametrize("convention, layout, d_model", [
    ("paper", "interleaved", 8), ("paper", "sin_cos", 7), ("paper", "cos_sin", 1), ("fairseq", None, 9),
    ("tensor2tensor", None, 1),  # no sin/cos columns at all: one zero column
])
def test_table_in_a_graph_matches_the_eager_table(convention, layout, d_model):
    # Eagerly the table is NumPy's, handed over through DLPack; a graph computes it with TF ops.
    eager = ptf.positional_encoding(300, d_model, convention=convention, layout=layout)
    graph = tf.function(lambda: ptf.positional_encoding(300, d_model, convention=convention, layout=layout))()
    np.testing.assert_array_equal(eager.numpy(), posenc.positional_encoding(300, d_model, convention=convention,
                                                                            layout=layout))
    np.testing.assert_allclose(graph.numpy(), eager.numpy(), rtol=0, atol=2e-7)


def test_dtype_by_name():
    # TensorFlow takes dtypes by name too; the table is the tf.float64 one (test_front.py checks that).
    table = ptf.positional_encoding(40, 8, dtype="float64")
    assert table.dtype == tf.float64
    np.testing.assert_array_equal(table.numpy(), ptf.positional_encoding(40, 8, dtype=tf.float64).numpy())


def test_encode_in_tf_function_with_unknown_length():
    f = tf.function(lambda p: ptf.encode(p, 6), input_signature=[tf.TensorSpec([None], tf.float32)])
    np.testing.assert_allclose(f(tf.range(9, dtype=tf.float32)).numpy(), posenc.positional_encoding(9, 6), atol=1e-7)


def test_a_graph_of_a_table_past_the_eager_size_limit():
    # In a graph the size is TensorFlow's to plan: tracing a model's shapes allocates nothing and is not refused.
    graph = tf.function(lambda p: ptf.encode(p, 1024)).get_concrete_function(tf.TensorSpec((2**22,), tf.int32))
    assert (tuple(graph.output_shapes), graph.output_dtypes) == ((2**22, 1024), tf.float32)


def test_layer_past_max_len_and_dynamic_length_in_a_model():
    model = keras.Sequential([keras.Input((None, 8)), ptf.PositionalEncoding(8, max_len=4)])
    for seq in (3, 4, 12):
        out = model(tf.zeros((2, seq, 8)))
        np.testing.assert_allclose(out[1].numpy(), posenc.positional_encoding(seq, 8), atol=1e-7)
    f = tf.function(model, input_signature=[tf.TensorSpec((None, None, 8))])
    np.testing.assert_allclose(f(tf.zeros((1, 7, 8)))[0].numpy(), posenc.positional_encoding(7, 8), atol=1e-7)


@pytest.mark.parametrize("policy, dtype", [("float64", "float64"), ("mixed_float16", "float16")])
def test_layer_computes_in_its_dtype_policy(policy, dtype):
    dtype = getattr(tf, dtype)
    layer = ptf.PositionalEncoding(4, dropout=0.1, dtype=policy)
    out = layer(tf.zeros((1, 3, 4), tf.float64))
    assert out.dtype == dtype
    np.testing.assert_allclose(tf.cast(out, tf.float64).numpy()[0], posenc.positional_encoding(3, 4), atol=1e-3)


def test_layer_config_round_trip(tmp_path):
    layer = ptf.PositionalEncoding(6, max_len=20, dropout=0.25, base=500.0, layout="sin_cos", name="pe")
    clone = ptf.PositionalEncoding.from_config(layer.get_config())
    for key in ("d_model", "max_len", "dropout", "convention", "name"):
        assert getattr(clone, key) == getattr(layer, key)
    assert (clone.convention.base, clone.convention.layout) == (500.0, "sin_cos")
    model = keras.Sequential([keras.Input((None, 6)), layer, keras.layers.Dense(3)])
    x = tf.random.stateless_normal((2, 5, 6), seed=(3, 4))
    model.save(tmp_path / "model.keras")
    loaded = keras.models.load_model(tmp_path / "model.keras")
    assert isinstance(loaded.layers[0], ptf.PositionalEncoding)
    np.testing.assert_allclose(loaded(x).numpy(), model(x).numpy(), atol=1e-6)


def test_layer_takes_a_convention_and_keeps_it_through_a_save(tmp_path):
    whisper = posenc.sinusoidal.conventions.resolve("whisper", max_timescale=100.0)
    model = keras.Sequential([keras.Input((None, 6)), ptf.PositionalEncoding(6, max_len=8, convention=whisper)])
    x = tf.zeros((1, 10, 6))  # past max_len too: the table computed in the call
    expected = posenc.positional_encoding(10, 6, convention="whisper", max_timescale=100.0)
    np.testing.assert_allclose(model(x)[0].numpy(), expected, rtol=0, atol=2e-7)
    model.save(tmp_path / "model.keras")
    loaded = keras.models.load_model(tmp_path / "model.keras")
    assert loaded.layers[0].convention == whisper
    np.testing.assert_array_equal(loaded(x).numpy(), model(x).numpy())


def test_layer_loads_a_config_written_before_conventions():
    layer = ptf.PositionalEncoding.from_config({"d_model": 6, "max_len": 4, "dropout": 0.0, "base": 500.0,
                                                "layout": "sin_cos", "name": "pe"})
    np.testing.assert_allclose(layer.pe.numpy(), posenc.positional_encoding(4, 6, base=500.0, layout="sin_cos"),
                               rtol=0, atol=2e-7)


def test_layer_called_without_training_is_in_inference():
    # Keras' default; dropout in training is test_front.py's test_module_dropout_only_in_training.
    keras.utils.set_random_seed(0)
    layer = ptf.PositionalEncoding(16, dropout=0.5)
    x = tf.ones((2, 6, 16))
    np.testing.assert_array_equal(layer(x, training=False).numpy(), layer(x).numpy())


def test_layer_call_has_no_branch_in_its_graph():
    # A tf.cond in call() became Switch/Merge nodes in every Keras graph, and TF 2.19's
    # loop optimizer logged a warning for each to stderr (in the cells of a notebook).
    layer = ptf.PositionalEncoding(8, max_len=4)
    graph = tf.function(layer).get_concrete_function(tf.TensorSpec((None, None, 8))).graph
    assert not {op.type for op in graph.get_operations()} & {"If", "StatelessIf", "Switch", "Merge", "Case"}


@pytest.mark.parametrize("seq", [0, 1, 3, 4, 5, 9])
def test_layer_in_a_graph_around_max_len(seq):
    layer = ptf.PositionalEncoding(6, max_len=4, base=500.0, layout="cos_sin")
    f = tf.function(layer, input_signature=[tf.TensorSpec((None, None, 6))])
    out = f(tf.zeros((2, seq, 6))).numpy()
    assert out.shape == (2, seq, 6)
    expected = posenc.positional_encoding(seq, 6, base=500.0, layout="cos_sin")
    np.testing.assert_allclose(out, np.broadcast_to(expected, out.shape), rtol=0, atol=2e-7)


# XLA's start-up lines on TF 2.16-2.19 (see ptf._start_xla_quietly); quiet on every TF.
ABSL_INFO = "I0000 00:00:1795443339.365425   30646 service.cc:145] XLA service 0x55c4c27f6380 initialized\n"
ABSL_WARNING = "W1123 14:15:47.498750   30646 gpu.cc:12] a warning\n"
ABSL_ERROR = "E1123 14:15:47.498751   30646 gpu.cc:13] an error\n"
ABSL_FATAL = "F1123 14:15:47.498752   30646 gpu.cc:14] a fatal error\n"
NOTICE = "WARNING: All log messages before absl::InitializeLog() is called are written to STDERR\n"
EVERY = NOTICE + ABSL_INFO + ABSL_WARNING + ABSL_ERROR + ABSL_FATAL + "other\n"


@pytest.mark.parametrize("level, kept", [
    (None, EVERY), ("0", EVERY), ("", EVERY), ("loud", EVERY), ("1", ABSL_WARNING + ABSL_ERROR + ABSL_FATAL + "other\n"),
    ("2", ABSL_ERROR + ABSL_FATAL + "other\n"), ("3", ABSL_FATAL + "other\n"),  # a fatal line always shows
])
def test_visible_log_applies_tf_cpp_min_log_level_to_absl_lines(monkeypatch, level, kept):
    if level is None:  # unset
        monkeypatch.delenv("TF_CPP_MIN_LOG_LEVEL")
    else:
        monkeypatch.setenv("TF_CPP_MIN_LOG_LEVEL", level)
    assert ptf._visible_log(EVERY) == kept


def test_xla_start_passes_on_what_it_does_not_hide_and_gives_descriptor_2_back(monkeypatch, capfd):
    def noisy_compile(function, jit_compile):
        os.write(2, (ABSL_INFO + "a real error\n").encode())
        raise RuntimeError("no XLA here")

    monkeypatch.setenv("TF_CPP_MIN_LOG_LEVEL", "3")
    monkeypatch.setattr(ptf.tf, "function", noisy_compile)
    ptf._start_xla_quietly.cache_clear()
    with pytest.raises(RuntimeError, match="no XLA here"):
        ptf._start_xla_quietly()
    monkeypatch.undo()
    ptf._start_xla_quietly.cache_clear()
    os.write(2, b"after\n")
    assert capfd.readouterr().err == "a real error\nafter\n"


def test_encode_in_a_graph_writes_nothing_to_stderr_in_a_fresh_process():
    # The first XLA compile of the process happens here, where TF 2.16-2.19 would log it.
    code = ("import numpy as np, tensorflow as tf, posenc.tensorflow as ptf\n"
            "table = tf.function(lambda p: ptf.encode(p, 16))(tf.constant(np.arange(6.0)))\n"
            "print(np.abs(table.numpy() - __import__('posenc').encode(np.arange(6.0), 16)).max())")
    out = child.run(["-c", code], env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}, capture_output=True, text=True, check=True)
    assert out.stderr == "" and float(out.stdout) < 2e-7


def keras_hub_sine_position_encoding(inputs, start_index=0, max_wavelength=10000):
    """keras-hub's SinePositionEncoding.call (keras_hub/src/layers/modeling/sine_position_encoding.py),
    in its own float32 Keras ops: a cached decoding step passes the cache index as start_index."""
    ops = keras.ops
    seq_length, hidden_size = ops.shape(inputs)[-2], ops.shape(inputs)[-1]
    positions = ops.cast(ops.arange(seq_length) + start_index, "float32")
    timescales = ops.power(1.0 / max_wavelength, ops.cast(2 * (ops.arange(hidden_size) // 2), "float32") / hidden_size)
    angles = ops.expand_dims(positions, 1) * ops.expand_dims(timescales, 0)
    cos_mask = ops.cast(ops.arange(hidden_size) % 2, "float32")
    return ops.broadcast_to(ops.sin(angles) * (1 - cos_mask) + ops.cos(angles) * cos_mask, ops.shape(inputs))


def test_layer_takes_positions_as_keras_hub_takes_start_index():
    layer = ptf.PositionalEncoding(16, max_len=8)
    x = tf.random.stateless_normal((2, 1, 16), seed=(5, 6))
    for start in (0, 7, 20):  # decoding steps, the last past max_len
        got = layer(x, tf.constant([start]))
        np.testing.assert_allclose(got.numpy(), (x + keras_hub_sine_position_encoding(x, start)).numpy(), rtol=0, atol=1e-6)
        np.testing.assert_array_equal(got.numpy(), x.numpy() + posenc.encode([start], 16))
    step = tf.function(lambda x, p: layer(x, p), input_signature=[tf.TensorSpec((None, None, 16)), tf.TensorSpec([None], tf.int32)])
    np.testing.assert_allclose(step(x, tf.constant([300])).numpy(), x.numpy() + posenc.encode([300], 16), rtol=0, atol=2e-7 + 2**-22)


ROTARY_OPTIONS = [{"form": "pairs", "rope_type": "linear", "factor": 2.0}, {"form": "complex", "layout": "interleaved"},
                  {"mrope_section": (2, 3, 3), "mrope_interleaved": True, "base": 1e6}]


@pytest.mark.parametrize("options", ROTARY_OPTIONS, ids=["pairs", "complex", "mrope"])
def test_rotary_layer_takes_torchs_options_and_keeps_them_through_its_config(options):
    import torch

    import posenc.torch as pt

    layer = ptf.RotaryEmbedding(16, **options, name="rope")
    position_ids = np.stack([np.arange(5), np.arange(5) * 2, np.arange(5) + 100])[:, None]  # (3, 1, 5)
    if "mrope_section" not in options:
        position_ids = position_ids[0]
    x = np.zeros((1, 5, 16), np.float32)
    got, want = layer(x, position_ids), pt.RotaryEmbedding(16, **options)(torch.zeros(1), torch.from_numpy(position_ids))
    for g, w in zip(tf.nest.flatten(got), tf.nest.flatten(tuple(want) if isinstance(want, tuple) else want)):
        np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=0, atol=2e-7)
    clone = keras.layers.deserialize(keras.layers.serialize(layer))
    assert clone.get_config() == layer.get_config() and clone.form == layer.form and clone.mrope_section == layer.mrope_section
    again = ptf.RotaryEmbedding.from_config(json.loads(json.dumps(layer.get_config())))  # as a saved model holds it
    for a, b in zip(tf.nest.flatten(again(x, position_ids)), tf.nest.flatten(got)):
        np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_rotary_layer_reads_a_transformers_config():
    transformers = pytest.importorskip("transformers", reason="install the conventions extra")
    import torch

    import posenc.torch as pt

    config = transformers.Qwen2VLTextConfig(hidden_size=64, num_attention_heads=4,
                                            rope_parameters={"rope_type": "default", "rope_theta": 1e6, "mrope_section": [2, 3, 3]})
    layer, module = ptf.RotaryEmbedding.from_config(config), pt.RotaryEmbedding.from_config(config)
    names = ("head_dim", "base", "rope_type", "layout", "form", "mrope_section", "mrope_interleaved", "params")
    assert [getattr(layer, n) for n in names] == [getattr(module, n) for n in names] and layer.mrope_section == (2, 3, 3)
    position_ids = np.arange(12).reshape(3, 1, 4)
    for a, b in zip(layer(np.zeros((1, 4, 16), np.float32), position_ids), module(torch.zeros(1), torch.from_numpy(position_ids))):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=0, atol=2e-7)
    gemma = transformers.Gemma3TextConfig(head_dim=16, rope_parameters={
        "sliding_attention": {"rope_type": "default", "rope_theta": 1e4}, "full_attention": {"rope_type": "default", "rope_theta": 1e6}})
    with pytest.raises(ValueError, match="layer_type must name one of 'sliding_attention', 'full_attention'"):
        ptf.RotaryEmbedding.from_config(gemma)
    assert ptf.RotaryEmbedding.from_config(gemma, layer_type="full_attention").base == 1e6


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_rotary_layer_in_a_graph_past_a_decoding_step(dtype):
    # More angles than a decoding step: the layer's kernels in the graph, from its frequencies kept as
    # tensors (made eagerly by the first call), within the bound of the exact values.
    layer = ptf.RotaryEmbedding(64, rope_type="yarn", factor=4.0, original_max_position_embeddings=64, dtype=dtype)
    position_ids = tf.constant(np.arange(0, 4096 * 250, 250)[None])
    x = tf.zeros((1, 4096, 64))
    eager = layer(x, position_ids)
    graph = tf.function(layer)(x, position_ids)
    want = posenc.rotary_cos_sin(position_ids.numpy(), 64, rope_type="yarn", factor=4.0, original_max_position_embeddings=64,
                                 dtype=np.float64)
    for e, g, w in zip(eager, graph, want):
        assert g.dtype == dtype
        assert np.abs(g.numpy() - w).max() <= (2e-7 if dtype == "float32" else 1e-15)
        assert np.abs(e.numpy() - w).max() <= (2e-7 if dtype == "float32" else 1e-15)


def test_keras_layers_under_xla_give_the_eager_outputs():
    table = ptf.PositionalEncoding(16, max_len=32)
    rotary = ptf.RotaryEmbedding(16)
    x = tf.random.stateless_normal((2, 12, 16), seed=(1, 2))
    position_ids = tf.constant(999_990 + np.arange(12)[None].repeat(2, 0))

    def both(x, position_ids):
        cos, sin = rotary(x, position_ids)
        return table(x), cos, sin

    eager = both(x, position_ids)
    compiled = tf.function(both, jit_compile=True)(x, position_ids)
    for a, b in zip(eager, compiled):
        np.testing.assert_allclose(b.numpy(), a.numpy(), rtol=0, atol=2e-7)
    expected_cos, _ = posenc.rotary_cos_sin(position_ids.numpy(), 16)
    np.testing.assert_allclose(compiled[1].numpy(), expected_cos, rtol=0, atol=2e-7)


def test_adopt_takes_aligned_memory_without_a_copy():
    # The point of the aligned buffer: TF reads NumPy's result where it lies.
    aligned = ptf._aligned_empty((4, 6), np.float64)
    aligned[...] = np.arange(24).reshape(4, 6)
    adopted = ptf._adopt(aligned, tf.float64)
    aligned[0, 0] = -1.0
    assert adopted.numpy()[0, 0] == -1.0


@pytest.mark.parametrize("view", [lambda a: a, lambda a: a[:, ::2], lambda a: a[1:]], ids=["whole", "strided", "offset"])
def test_adopt_copies_what_dlpack_cannot_take(view):
    # TF's DLPack takes 64-byte aligned, C-contiguous memory only ("Invalid strides array" for a
    # strided view, an abort for a misaligned one): such arrays are copied first.
    aligned = ptf._aligned_empty((4, 6), np.float64)
    aligned[...] = np.arange(24).reshape(4, 6)
    given = view(aligned)
    np.testing.assert_array_equal(ptf._adopt(given, tf.float32).numpy(), given.astype(np.float32))
