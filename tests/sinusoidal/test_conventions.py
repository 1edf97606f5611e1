"""Every named convention against its source's formula, re-written here from the source's text.

Each ``source_*`` function below follows what its project computes, step by step, in
float64 NumPy (the sources compute in float32 or float64; float64 is the formula itself).
posenc's float32 tables must agree to float32 rounding, in NumPy and in every front (the ``framework`` fixture).
"""

import dataclasses
import math

import numpy as np
import pytest

import posenc
from messages import assert_raises_naming
from posenc.sinusoidal.conventions import option_names

# float32 rounding of values in [-1, 1] (2**-24 each) plus posenc's own bound (2e-7).
FLOAT32 = 3e-7
SHAPES = [(1, 4), (10, 6), (50, 7), (129, 64), (300, 33), (2000, 512)]


def pairs_angles(positions, d_model, base=10000.0):
    # XLM / Marian / the 2019 TF tutorials: angle of column j is pos / base^(2 * (j // 2) / d).
    j = np.arange(d_model)
    return np.asarray(positions, np.float64)[:, None] / np.power(base, 2 * (j // 2) / d_model)


def source_paper(positions, d_model, base=10000.0):
    # Vaswani et al. 3.5, and XLM's create_sinusoidal_embeddings: sin at even j, cos at odd j.
    angles = pairs_angles(positions, d_model, base)
    table = np.empty_like(angles)
    table[:, 0::2] = np.sin(angles[:, 0::2])
    table[:, 1::2] = np.cos(angles[:, 1::2])
    return table


def source_marian(positions, d_model):
    # Marian (and the April 2019 TF tutorial): the sines of the even-j angles, then the cosines of the odd-j ones.
    angles = pairs_angles(positions, d_model)
    return np.concatenate([np.sin(angles[:, 0::2]), np.cos(angles[:, 1::2])], axis=1)


def source_keras_hub(positions, d_model, max_wavelength=10000, start_index=0):
    # keras-hub: timescales (1 / max_wavelength) ** (2 * (j // 2) / d), sin and cos masks.
    j = np.arange(d_model)
    timescales = (1.0 / max_wavelength) ** (2 * (j // 2) / d_model)
    angles = (np.asarray(positions, np.float64) + start_index)[:, None] * timescales
    cos_mask = j % 2
    return np.sin(angles) * (1 - cos_mask) + np.cos(angles) * cos_mask


def source_tensor2tensor(positions, d_model, min_timescale=1.0, max_timescale=1.0e4, start_index=0):
    # get_timing_signal_1d: h = d // 2 timescales, increment log(max / min) / max(h - 1, 1).
    h = d_model // 2
    increment = math.log(max_timescale / min_timescale) / max(h - 1, 1)
    inv_timescales = min_timescale * np.exp(np.arange(h) * -increment)
    scaled = (np.asarray(positions, np.float64) + start_index)[:, None] * inv_timescales
    signal = np.concatenate([np.sin(scaled), np.cos(scaled)], axis=1)
    return np.pad(signal, [(0, 0), (0, d_model % 2)])


def source_fairseq(positions, d_model, padding_idx=1):
    # SinusoidalPositionalEmbedding.get_embedding: rows are positions; row padding_idx zeroed.
    half = d_model // 2
    emb = np.exp(np.arange(half) * -(math.log(10000) / (half - 1)))
    emb = np.asarray(positions, np.float64)[:, None] * emb
    emb = np.concatenate([np.sin(emb), np.cos(emb)], axis=1)
    emb = np.pad(emb, [(0, 0), (0, d_model % 2)])
    emb[np.asarray(positions) == padding_idx] = 0
    return emb


def source_whisper(positions, d_model, max_timescale=10000):
    # sinusoids: asserts an even width; increment log(max_timescale) / (d // 2 - 1).
    assert d_model % 2 == 0
    increment = np.log(max_timescale) / (d_model // 2 - 1)
    scaled = np.asarray(positions, np.float64)[:, None] * np.exp(-increment * np.arange(d_model // 2))
    return np.concatenate([np.sin(scaled), np.cos(scaled)], axis=1)


def source_tf_tutorial(positions, d_model):
    # Since 2022: depth = d / 2, angle_rates = 1 / 10000 ** (arange(depth) / depth), [sin, cos].
    depth = d_model / 2
    rates = 1 / 10000 ** (np.arange(depth) / depth)
    angles = np.asarray(positions, np.float64)[:, None] * rates
    return np.concatenate([np.sin(angles), np.cos(angles)], axis=-1)


def source_diffusers(timesteps, d_model, flip_sin_to_cos=False, downscale_freq_shift=1, scale=1, max_period=10000):
    # get_timestep_embedding: exp(-ln(max_period) * j / (h - shift)), scaled angles, [sin, cos].
    half = d_model // 2
    exponent = -math.log(max_period) * np.arange(half) / (half - downscale_freq_shift)
    emb = scale * (np.asarray(timesteps, np.float64)[:, None] * np.exp(exponent))
    emb = np.concatenate([np.sin(emb), np.cos(emb)], axis=-1)
    if flip_sin_to_cos:
        emb = np.concatenate([emb[:, half:], emb[:, :half]], axis=-1)
    return np.pad(emb, [(0, 0), (0, d_model % 2)])


SOURCES = {
    "paper": source_paper,
    "hf-xlm": source_paper,
    "hf-marian": source_marian,
    "keras-hub": source_keras_hub,
    "tensor2tensor": source_tensor2tensor,
    "fairseq": source_fairseq,
    "whisper": source_whisper,
    "tf-tutorial-2019": source_paper,
    "tf-tutorial-2019-04": source_marian,
    "tf-tutorial": source_tf_tutorial,
    "diffusers": source_diffusers,
}
# Sources that refuse odd widths, or divide by zero at d // 2 == 1, and the error posenc names.
REFUSED = {
    ("whisper", "odd"): "asserts channels % 2 == 0",
    ("tf-tutorial", "odd"): "d_model + 1 columns",
    ("fairseq", "h=1"): "ZeroDivisionError",
    ("whisper", "h=1"): "NaN",
    ("diffusers", "h=1"): "NaN",
}
OPTIONS = [
    ("keras-hub", {"max_wavelength": 500, "start_index": 5}),
    ("tensor2tensor", {"min_timescale": 2.0, "max_timescale": 1e5, "start_index": 3}),
    ("fairseq", {"padding_idx": 0}),
    ("whisper", {"max_timescale": 500}),
    ("diffusers", {"flip_sin_to_cos": True, "downscale_freq_shift": 0}),
    ("diffusers", {"flip_sin_to_cos": False, "downscale_freq_shift": 0.5, "scale": 3.0, "max_period": 1000}),
]


def refused(name, d_model):
    if d_model % 2 and (name, "odd") in REFUSED:
        return REFUSED[name, "odd"]
    return REFUSED.get((name, "h=1")) if d_model // 2 == 1 else None


def tables(framework):
    """``(positional_encoding, encode)`` of ``framework`` (a ``Front``), returning NumPy arrays."""
    return tuple(lambda *a, f=f, **k: framework.numpy(f(*a, **k))
                 for f in (framework.api.positional_encoding, framework.api.encode))


def test_the_list_names_every_preset_with_a_description_and_a_source():
    listed = posenc.list_conventions()
    assert [preset.name for preset in listed] == list(SOURCES)
    assert listed[0].name == "paper"
    for preset in listed:
        assert len(preset.description) > 40 and preset.source
    assert "2019-07" in dict((p.name, p.source) for p in listed)["tf-tutorial-2019"]


@pytest.mark.parametrize("name", list(SOURCES))
def test_every_preset_matches_its_source_to_float32_rounding(name, framework):
    table_of, encode = tables(framework)
    checked = 0
    for length, d_model in SHAPES:
        if refused(name, d_model):
            continue
        expected = SOURCES[name](np.arange(length), d_model)
        table = table_of(length, d_model, convention=name)
        assert table.shape == (length, d_model) and table.dtype == np.float32
        np.testing.assert_allclose(table, expected, rtol=0, atol=FLOAT32, err_msg=f"{name} {length}x{d_model}")
        positions = np.array([0, 3, 1, 700, 12345])
        np.testing.assert_allclose(
            encode(positions, d_model, convention=name), SOURCES[name](positions, d_model), rtol=0, atol=FLOAT32
        )
        checked += 1
    assert checked >= 4


@pytest.mark.parametrize(("name", "options"), OPTIONS, ids=lambda v: str(v))
def test_the_sources_own_options(name, options, framework):
    table_of, encode = tables(framework)
    for length, d_model in [(40, 16), (33, 9)]:
        if refused(name, d_model):
            continue
        expected = SOURCES[name](np.arange(length), d_model, **options)
        np.testing.assert_allclose(table_of(length, d_model, convention=name, **options), expected, rtol=0, atol=FLOAT32)
        positions = np.array([2.5, 0, 1, 99])  # fractional: diffusers' timesteps may be
        expected = SOURCES[name](positions, d_model, **options)
        np.testing.assert_allclose(encode(positions, d_model, convention=name, **options), expected, rtol=0, atol=FLOAT32)


def test_fairseq_reads_zeros_at_the_padding_position(framework):
    # fairseq's make_positions gives padding tokens position padding_idx, real tokens padding_idx + 1 onwards.
    _, encode = tables(framework)
    positions = np.array([[2, 3, 4, 1, 1], [2, 3, 4, 5, 6]])
    pe = encode(positions, 8, convention="fairseq")
    assert not pe[0, 3:].any() and pe[1].all(axis=-1).any()
    np.testing.assert_allclose(pe[1], source_fairseq(positions[1], 8), atol=FLOAT32)


def test_tensor2tensor_divides_by_at_least_one():
    # get_timing_signal_1d takes max(h - 1, 1): a width of 2 or 3 is defined (frequency 1).
    for d_model in (2, 3):
        np.testing.assert_allclose(
            posenc.positional_encoding(20, d_model, convention="tensor2tensor"),
            source_tensor2tensor(np.arange(20), d_model), atol=FLOAT32,
        )


@pytest.mark.parametrize(("name", "d_model"), [("whisper", 7), ("tf-tutorial", 33), ("fairseq", 2), ("whisper", 3), ("diffusers", 2)])
def test_broken_source_widths_raise_and_say_why(name, d_model, framework):
    table_of, encode = tables(framework)
    for build in (lambda: table_of(5, d_model, convention=name), lambda: encode([1, 2], d_model, convention=name)):
        with pytest.raises(ValueError, match=rf"convention '{name}'.*d_model={d_model}") as error:
            build()
        assert refused(name, d_model) in str(error.value)


def test_paper_is_the_default_and_odd_widths_end_on_a_sine():
    np.testing.assert_array_equal(posenc.positional_encoding(30, 7), posenc.positional_encoding(30, 7, convention="paper"))
    np.testing.assert_allclose(posenc.positional_encoding(30, 7)[:, -1], np.sin(np.arange(30) / 10000 ** (6 / 7)), atol=FLOAT32)


def test_generic_overrides_change_one_parameter():
    table = posenc.positional_encoding(20, 8, convention="whisper", layout="interleaved", offset=4)
    expected = source_whisper(np.arange(4, 24), 8)[:, [0, 4, 1, 5, 2, 6, 3, 7]]
    np.testing.assert_allclose(table, expected, atol=FLOAT32)
    np.testing.assert_allclose(
        posenc.positional_encoding(10, 6, convention="hf-marian", base=100.0),
        np.concatenate([np.sin(pairs_angles(range(10), 6, 100.0)[:, 0::2]), np.cos(pairs_angles(range(10), 6, 100.0)[:, 1::2])], 1),
        atol=FLOAT32,
    )


def test_a_convention_object_is_accepted_back():
    chosen = posenc.identify(posenc.positional_encoding(30, 16, convention="tensor2tensor", start_index=9)).convention
    assert isinstance(chosen, posenc.Convention) and chosen.offset == 9
    np.testing.assert_array_equal(
        posenc.positional_encoding(30, 16, convention=chosen),
        posenc.positional_encoding(30, 16, convention="tensor2tensor", start_index=9),
    )


@pytest.mark.parametrize(("name", "options", "offset"), [
    ("paper", {"offset": np.int64(3)}, 3), ("keras-hub", {"start_index": 3}, 3), ("tensor2tensor", {"start_index": 2.5}, 2.5),
])
def test_an_offset_keeps_its_kind_as_the_user_wrote_it(name, options, offset):
    # A whole offset stays an int (Python's, whatever NumPy int came in): the repr reads as it was given.
    chosen = posenc.sinusoidal.conventions.resolve(name, **options)
    assert type(chosen.offset) is type(offset) and f", offset={offset}, " in repr(chosen)



SOURCE_OPTION_REFUSALS = {
    ("keras-hub", "max_wavelength"): "max_wavelength must be a real number > 1, got 'one' (str)",
    ("keras-hub", "start_index"): "start_index must be a real number, got 'one' (str)",
    ("tensor2tensor", "min_timescale"): "min_timescale must be a real number > 0, got 'one' (str)",
    ("tensor2tensor", "max_timescale"): "max_timescale must be a real number > 1, got 'one' (str)",  # > min_timescale
    ("tensor2tensor", "start_index"): "start_index must be a real number, got 'one' (str)",
    ("whisper", "max_timescale"): "max_timescale must be a real number > 1, got 'one' (str)",
    ("diffusers", "flip_sin_to_cos"): "flip_sin_to_cos must be a bool, got 'one'",
    ("diffusers", "downscale_freq_shift"): "downscale_freq_shift must be a real number, got 'one' (str)",
    ("diffusers", "scale"): "scale must be a real number, got 'one' (str)",
    ("diffusers", "max_period"): "max_period must be a real number > 1, got 'one' (str)",
}


def test_each_source_option_refuses_a_word_by_its_own_name():
    names = [preset.name for preset in posenc.list_conventions()]
    named = {(name, option) for name in names for option in option_names(name)}
    assert named == set(SOURCE_OPTION_REFUSALS)
    for (name, option), message in SOURCE_OPTION_REFUSALS.items():
        with pytest.raises(TypeError) as caught:
            posenc.positional_encoding(4, 8, convention=name, **{option: "one"})
        assert str(caught.value) == message


def test_bad_conventions_and_options_are_named():
    with pytest.raises(ValueError, match=r"convention must be one of 'paper', 'hf-xlm'.*'diffusers'; got 'bert'"):
        posenc.positional_encoding(4, 8, convention="bert")
    with pytest.raises(TypeError, match=r"'whisper' takes the options max_timescale, base, layout, offset, padding_idx; got start_index"):
        posenc.encode([1], 8, convention="whisper", start_index=2)
    with pytest.raises(ValueError, match=r"max_timescale must be a finite real number > 2, got 1.0"):
        posenc.positional_encoding(4, 8, convention="tensor2tensor", min_timescale=2, max_timescale=1.0)
    with pytest.raises(ValueError, match=r"max_wavelength must be a finite real number > 1, got 1$"):
        posenc.positional_encoding(4, 8, convention="keras-hub", max_wavelength=1)
    with pytest.raises(ValueError, match=r"max_timescale must be a finite real number > 1, got 0.5"):
        posenc.positional_encoding(4, 8, convention="whisper", max_timescale=0.5)
    with pytest.raises(TypeError, match=r"flip_sin_to_cos must be a bool, got 'yes'"):
        posenc.positional_encoding(4, 8, convention="diffusers", flip_sin_to_cos="yes")
    with pytest.raises(TypeError, match=r"padding_idx must be an int or None, got 1.5"):
        posenc.positional_encoding(4, 8, convention="fairseq", padding_idx=1.5)
    with pytest.raises(ValueError, match=r"layout must be one of"):
        posenc.positional_encoding(4, 8, convention="fairseq", layout="sincos")


# --- layouts ------------------------------------------------------------------------------


@pytest.mark.parametrize("d_model", [1, 2, 7, 8, 33])
def test_layout_permutation_maps_one_layout_onto_another(d_model):
    tables = {layout: posenc.positional_encoding(9, d_model, layout=layout) for layout in posenc.LAYOUTS}
    for source in posenc.LAYOUTS:
        for target in posenc.LAYOUTS:
            perm = posenc.layout_permutation(d_model, source, target)
            assert sorted(perm) == list(range(d_model))
            np.testing.assert_array_equal(tables[source][:, perm], tables[target])
            np.testing.assert_array_equal(posenc.convert_layout(tables[source], source, target), tables[target])


def test_zero_column_of_an_odd_width_stays_last():
    sin_cos = posenc.positional_encoding(12, 9, convention="diffusers")
    cos_sin = posenc.positional_encoding(12, 9, convention="diffusers", flip_sin_to_cos=True)
    assert list(posenc.layout_permutation(9, "sin_cos", "cos_sin", odd="zero")) == [4, 5, 6, 7, 0, 1, 2, 3, 8]
    np.testing.assert_array_equal(posenc.convert_layout(sin_cos, "sin_cos", "cos_sin", odd="zero"), cos_sin)


def test_hand_written_permutation_for_d_6():
    # interleaved s0 c0 s1 c1 s2 c2 -> sin_cos s0 s1 s2 c0 c1 c2 takes columns 0, 2, 4, 1, 3, 5.
    assert list(posenc.layout_permutation(6, "interleaved", "sin_cos")) == [0, 2, 4, 1, 3, 5]
    assert list(posenc.layout_permutation(6, "sin_cos", "interleaved")) == [0, 3, 1, 4, 2, 5]


def test_converted_torch_linear_weights_give_the_same_output():
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    layer = torch.nn.Linear(10, 3, dtype=torch.float64)
    table = torch.from_numpy(posenc.positional_encoding(20, 10, convention="whisper", dtype=np.float64))
    moved = posenc.convert_layout(table, "sin_cos", "interleaved")
    ported = torch.nn.Linear(10, 3, dtype=torch.float64)
    with torch.no_grad():
        ported.weight.copy_(posenc.convert_layout(layer.weight, "sin_cos", "interleaved"))
        ported.bias.copy_(layer.bias)
    assert isinstance(moved, torch.Tensor)
    torch.testing.assert_close(ported(moved), layer(table), rtol=0, atol=1e-14)


def test_converted_keras_kernel_gives_the_same_output():
    tf = pytest.importorskip("tensorflow")
    table = tf.constant(posenc.positional_encoding(20, 7, layout="cos_sin", dtype=np.float64))
    kernel = tf.constant(np.random.default_rng(0).normal(size=(7, 4)))
    moved_table = posenc.convert_layout(table, "cos_sin", "interleaved")
    moved_kernel = posenc.convert_layout(tf.Variable(kernel), "cos_sin", "interleaved", axis=0)
    assert tf.is_tensor(moved_table)
    np.testing.assert_allclose((moved_table @ moved_kernel).numpy(), (table @ kernel).numpy(), rtol=0, atol=1e-14)


def test_convert_layout_keeps_jax_arrays_and_works_under_jit():
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp

    table = posenc.positional_encoding(20, 7, layout="cos_sin")
    kernel = np.random.default_rng(2).normal(size=(7, 4)).astype(np.float32)
    expected_table = posenc.positional_encoding(20, 7, layout="interleaved")
    moved_table = posenc.convert_layout(jnp.asarray(table), "cos_sin", "interleaved")
    # A Flax Dense/Linear kernel (d_model, out) reads the table along axis 0, as Keras' does.
    moved_kernel = jax.jit(lambda k: posenc.convert_layout(k, "cos_sin", "interleaved", axis=0))(jnp.asarray(kernel))
    assert isinstance(moved_table, jax.Array) and isinstance(moved_kernel, jax.Array)
    np.testing.assert_array_equal(np.asarray(moved_table), expected_table)
    np.testing.assert_allclose(np.asarray(moved_table @ moved_kernel), table @ kernel, rtol=0, atol=1e-5)
    assert not np.allclose(np.asarray(moved_table @ jnp.asarray(kernel)), table @ kernel, atol=1e-2)  # unmoved: it shows


def test_convert_layout_names_a_bad_axis():
    with pytest.raises(ValueError, match=r"axis must index one of the 2 axes of array \(shape \(3, 4\)\), got 2"):
        posenc.convert_layout(np.zeros((3, 4)), "sin_cos", "interleaved", axis=2)
    with pytest.raises(ValueError, match=r"odd must be one of 'sine', 'zero'; got 'pad'"):
        posenc.layout_permutation(5, "sin_cos", "interleaved", odd="pad")


# --- identify -----------------------------------------------------------------------------


def expected_fields(convention):
    return convention.layout, convention.rule, convention.base, convention.offset, convention.padding_idx


@pytest.mark.parametrize("name", list(SOURCES))
def test_identify_names_every_preset_and_its_parameters(name):
    # One row is position 0 alone, where every sin_cos table reads 0 ... 0, 1 ... 1: only
    # membership can be asked of it.
    assert name in posenc.identify(posenc.positional_encoding(1, 16, convention=name)).matches
    for length, d_model in [(60, 6), (50, 7), (300, 64), (1000, 512)]:
        if refused(name, d_model):
            continue
        result = posenc.identify(posenc.positional_encoding(length, d_model, convention=name))
        assert name in result.matches, (length, d_model, str(result))
        preset = posenc.sinusoidal.conventions.resolve(name)
        assert expected_fields(result.convention) == expected_fields(preset), (length, d_model, str(result))
        assert result.max_deviation < 1e-6


def test_identify_rebuilds_each_table_once(monkeypatch):
    # Presets that differ in their name only (paper, hf-xlm, keras-hub, tf-tutorial-2019 fitted to
    # the paper's table) write the same table: identify rebuilds it once for all of them.
    identification = posenc.forensics.identification
    rebuilt, deviation = [], identification._deviation
    monkeypatch.setattr(identification, "_deviation",
                        lambda table, convention: rebuilt.append(convention) or deviation(table, convention))
    found = posenc.identify(posenc.positional_encoding(50, 16))
    assert len(found.matches) == 4
    tables = [dataclasses.replace(convention, name="") for convention in rebuilt]
    assert len(set(tables)) == len(tables)


@pytest.mark.parametrize("name", list(SOURCES))
def test_identify_reads_tables_computed_by_the_source_formula_in_float32(name):
    table = SOURCES[name](np.arange(400), 128).astype(np.float32)
    assert name in posenc.identify(table).matches


@pytest.mark.parametrize(
    ("name", "options", "fields"),
    [
        ("tensor2tensor", {"start_index": 7}, ("sin_cos", "h-1", 10000.0, 7, None)),
        ("fairseq", {"padding_idx": 0}, ("sin_cos", "h-1", 10000.0, 0, 0)),
        ("keras-hub", {"max_wavelength": 500}, ("interleaved", "paper", 500.0, 0, None)),
        # a base read off (rounded) with the offset read off, both as the source's options said
        ("keras-hub", {"max_wavelength": 500, "offset": 7}, ("interleaved", "paper", 500.0, 7, None)),
        ("diffusers", {"flip_sin_to_cos": True, "downscale_freq_shift": 0.5}, ("cos_sin", "h-1", 10000.0, 0, None)),
    ],
)
def test_identify_reads_offset_base_layout_and_padding(name, options, fields):
    result = posenc.identify(posenc.positional_encoding(80, 32, convention=name, **options))
    assert name in result.matches and expected_fields(result.convention) == fields


@pytest.mark.parametrize(
    ("name", "options", "said"),
    [
        ("paper", {}, "paper (same numbers: hf-xlm, keras-hub, tf-tutorial-2019): layout interleaved, frequencies paper, "
                      "base 10000, offset 0; max deviation 0"),
        ("fairseq", {}, "fairseq: layout sin_cos, frequencies h-1, base 10000, offset 0, padding_idx 1; max deviation 0"),
        ("diffusers", {"flip_sin_to_cos": True, "downscale_freq_shift": 0.5},
         "diffusers: layout cos_sin, frequencies h-1, base 10000, offset 0, shift 0.5; max deviation 0"),
        ("diffusers", {"scale": 2.0}, "none (closest: tensor2tensor, layout cos_sin, frequencies h-1, base 10000, "
                                      "offset 15708; max deviation 2 > 0.0079)"),
    ],
)
def test_identify_says_the_name_the_fit_and_the_same_numbers(name, options, said):
    # float64 tables: a preset rebuilds them to the last bit, so the deviation prints as 0
    assert str(posenc.identify(posenc.positional_encoding(80, 32, convention=name, dtype=np.float64, **options))) == said


def test_a_stable_diffusion_timestep_table_is_named_diffusers():
    # flip_sin_to_cos=True, downscale_freq_shift=0: w_j = 10000^(-j / h), the paper's
    # frequencies in cos_sin order. The paper-rule presets rebuild it with layout="cos_sin",
    # which none of their sources writes; diffusers writes it through its own options.
    table = source_diffusers(np.arange(100), 32, flip_sin_to_cos=True, downscale_freq_shift=0)
    result = posenc.identify(table)
    assert result.name == "diffusers" and result.matches == ("diffusers",)
    c = result.convention
    assert (c.layout, c.rule, c.shift, c.base) == ("cos_sin", "h-1", 0, 10000) and not np.signbit(c.shift)
    paper_cos_sin = posenc.sinusoidal.conventions.resolve("paper", layout="cos_sin")
    assert posenc.sinusoidal.conventions.changes_beyond_options("paper", paper_cos_sin) == 1
    assert posenc.sinusoidal.conventions.changes_beyond_options("diffusers", c) == 0


def test_a_base_set_by_the_sources_option_names_that_source_alone():
    # keras-hub's max_wavelength sets the base; "paper" (or Marian in another order) has no
    # such option, so their rebuilds of the same numbers rank after it.
    result = posenc.identify(posenc.positional_encoding(200, 64, convention="keras-hub", max_wavelength=500))
    assert result.name == "keras-hub" and result.matches == ("keras-hub",) and result.convention.base == 500
    resolve, changes = posenc.sinusoidal.conventions.resolve, posenc.sinusoidal.conventions.changes_beyond_options
    assert changes("keras-hub", resolve("keras-hub", max_wavelength=500)) == 0
    assert changes("paper", resolve("paper", base=500)) == 1
    assert changes("hf-marian", resolve("hf-marian", base=500, layout="interleaved")) == 2
    assert changes("fairseq", resolve("fairseq", padding_idx=0, offset=3)) == 0  # positions are free


def test_identify_answers_none_for_a_random_table_and_a_perturbed_column():
    rng = np.random.default_rng(0)
    assert posenc.identify(rng.uniform(-1, 1, size=(100, 64))).name is None
    for name in SOURCES:
        table = posenc.positional_encoding(100, 64, convention=name)
        table[:, 37] += 0.01
        result = posenc.identify(table)
        assert result.name is None and result.matches == () and result.max_deviation > result.tolerance
        assert str(result).startswith("none (closest:")


def test_identify_takes_tensors_and_checks_its_input():
    torch = pytest.importorskip("torch")
    table = torch.from_numpy(posenc.positional_encoding(30, 16, convention="whisper")).requires_grad_()
    assert posenc.identify(table).name == "tensor2tensor"  # the same numbers; listed first
    assert "whisper" in posenc.identify(table).matches
    with pytest.raises(ValueError, match=r"table must be a non-empty 2-D array \(length, d_model\), got shape \(16,\)"):
        posenc.identify(np.zeros(16))
    with pytest.raises(ValueError, match="table must be finite"):
        posenc.identify(np.full((3, 4), np.nan))
    with pytest.raises(ValueError, match="atol must be a finite real number > 0"):
        posenc.identify(np.zeros((3, 4)), atol=0)


# --- corners of the layouts, and every option named in its errors ----------------------------


def test_width_one_with_a_zero_column_is_left_as_it_is():
    # odd="zero" at d_model = 1: no sin/cos pair at all, only the zero column (diffusers' table).
    for source in posenc.LAYOUTS:
        for target in posenc.LAYOUTS:
            perm = posenc.layout_permutation(1, source, target, odd="zero")
            assert perm.tolist() == [0] and perm.dtype.kind == "i"
    table = posenc.positional_encoding(5, 1, convention="diffusers")
    assert not table.any()
    np.testing.assert_array_equal(posenc.convert_layout(table, "sin_cos", "cos_sin", odd="zero"), table)
    # Under odd="sine" the single column is a sine, and stays where it is too.
    assert posenc.layout_permutation(1, "cos_sin", "interleaved").tolist() == [0]


def test_convert_layout_takes_a_keras_variable():
    pytest.importorskip("tensorflow")
    import keras
    import tensorflow as tf

    kernel = np.random.default_rng(1).normal(size=(6, 3))
    perm = posenc.layout_permutation(6, "interleaved", "sin_cos")
    assert perm.tolist() == [0, 2, 4, 1, 3, 5]
    # A Dense kernel reads the table along axis 0; the transposed weight along its last axis.
    for array, axis, expected in ((kernel, 0, kernel[perm]), (kernel.T, -1, kernel.T[:, perm])):
        variable = keras.Variable(array, dtype="float64")  # Keras 3.0 would cast to float32
        assert type(variable).__module__.startswith("keras")
        moved = posenc.convert_layout(variable, "interleaved", "sin_cos", axis=axis)
        assert tf.is_tensor(moved) and tuple(moved.shape) == expected.shape
        np.testing.assert_array_equal(moved.numpy(), expected)


# Each preset option and generic override with a value it refuses: the message names the
# option as the caller spelled it and shows the value.
BAD_OPTIONS = [
    ("keras-hub", {"max_wavelength": 1}, ValueError, ["max_wavelength", "> 1", "got 1"]),
    ("keras-hub", {"max_wavelength": "big"}, TypeError, ["max_wavelength", "'big'"]),
    ("keras-hub", {"start_index": float("nan")}, ValueError, ["start_index", "finite", "nan"]),
    ("keras-hub", {"start_index": "3"}, TypeError, ["start_index", "'3'"]),
    ("tensor2tensor", {"min_timescale": 0}, ValueError, ["min_timescale", "> 0", "got 0"]),
    ("tensor2tensor", {"min_timescale": True}, TypeError, ["min_timescale", "True", "bool"]),
    ("tensor2tensor", {"max_timescale": 1.0}, ValueError, ["max_timescale", "> 1", "1.0"]),
    ("tensor2tensor", {"max_timescale": float("inf")}, ValueError, ["max_timescale", "finite", "inf"]),
    ("tensor2tensor", {"start_index": None}, TypeError, ["start_index", "None"]),
    ("whisper", {"max_timescale": 0.5}, ValueError, ["max_timescale", "> 1", "0.5"]),
    ("whisper", {"max_timescale": [10000]}, TypeError, ["max_timescale", "[10000]", "list"]),
    ("diffusers", {"flip_sin_to_cos": 1}, TypeError, ["flip_sin_to_cos", "bool", "1"]),
    ("diffusers", {"downscale_freq_shift": float("nan")}, ValueError, ["downscale_freq_shift", "nan"]),
    ("diffusers", {"downscale_freq_shift": "1"}, TypeError, ["downscale_freq_shift", "'1'"]),
    ("diffusers", {"scale": float("-inf")}, ValueError, ["scale", "finite", "-inf"]),
    ("diffusers", {"scale": None}, TypeError, ["scale", "None"]),
    ("diffusers", {"max_period": 1}, ValueError, ["max_period", "> 1", "got 1"]),
    ("diffusers", {"max_period": "1e4"}, TypeError, ["max_period", "'1e4'"]),
    ("paper", {"offset": float("inf")}, ValueError, ["offset", "finite", "inf"]),
    ("paper", {"offset": "1"}, TypeError, ["offset", "'1'"]),
    ("fairseq", {"padding_idx": 1.0}, TypeError, ["padding_idx", "1.0", "int or None"]),
    ("paper", {"base": 0.5}, ValueError, ["base", "> 1", "0.5"]),
    ("paper", {"layout": "half"}, ValueError, ["layout", "'half'", "'sin_cos'"]),
]


@pytest.mark.parametrize(("name", "options", "error", "words"), BAD_OPTIONS, ids=lambda v: str(v))
def test_a_bad_option_is_named_as_the_caller_spelled_it(name, options, error, words):
    for build in (lambda: posenc.positional_encoding(4, 8, convention=name, **options),
                  lambda: posenc.encode([1, 2], 8, convention=name, **options)):
        assert_raises_naming(build, error, words)


def test_every_option_of_every_preset_has_a_bad_value_above():
    tried = {(name, option) for name, options, _, _ in BAD_OPTIONS for option in options}
    for name in SOURCES:
        for option in posenc.sinusoidal.conventions.option_names(name):
            assert (name, option) in tried, (name, option)
    assert {option for _, option in tried} >= {"base", "layout", "offset", "padding_idx"}


def test_adjustable_fields_are_the_overrides_and_what_the_sources_options_set():
    generic = {"base", "layout", "offset", "padding_idx"}
    assert posenc.sinusoidal.conventions.adjustable_fields("paper") == generic
    assert posenc.sinusoidal.conventions.adjustable_fields("whisper") == generic  # max_timescale sets the base
    assert posenc.sinusoidal.conventions.adjustable_fields("tensor2tensor") == generic | {"factor"}
    assert posenc.sinusoidal.conventions.adjustable_fields("diffusers") == generic | {"shift", "factor"}


def test_identify_reads_a_shift_off_a_table_printed_to_three_decimals():
    # The shift read off a rounded print is near 1.5, not on it: rounded to 3 digits it is the one written.
    table = np.round(posenc.positional_encoding(2000, 8, convention="diffusers", downscale_freq_shift=1.5), 3)
    found = posenc.identify(table, atol=6e-4)
    assert (found.name, found.convention.shift) == ("diffusers", 1.5)
