"""Bad input anywhere gets a ValueError or TypeError (issue 27), never an obscure crash or a hang.

Every public callable of ``posenc`` (``posenc.__all__``) is called with a valid set of
arguments in which one or two are replaced by absurd values (wrong types, NaN, inf,
negatives, 10**30, strings, nested lists, empty arrays, bools, unknown keywords); the
frameworks' fronts get a smaller set. ``diagnose``'s text reader gets random text and
mangled prints of real tables (cut, duplicated, exponents blown up, brackets removed, stray
characters). Whatever is raised must be a ``ValueError`` or ``TypeError`` (not an
``OverflowError``, ``IndexError``, ``ZeroDivisionError``, ``MemoryError``, ``KeyError``,
``AttributeError`` or NumPy's own errors, which would be tracebacks from deep inside), and an
absurd size is refused before anything is allocated. The regression tests at the end pin the
messages of the escapes this test found.
"""

import inspect
import math
import re
import tracemalloc

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import posenc
import posenc.biases
from frameworks import only

ALLOWED = (ValueError, TypeError)
# NumPy's own errors (AxisError, _ArrayMemoryError...) subclass ValueError, IndexError or
# MemoryError: a ValueError from NumPy itself would pass the isinstance test, so its module
# is checked too (posenc's messages are raised from posenc).
# np.exceptions is NumPy 1.25 and later; 1.24 has AxisError at the top level.
NUMPY_ERRORS = tuple(
    error for error in (getattr(getattr(np, "exceptions", np), name, None) for name in ("AxisError", "DTypePromotionError"))
    if error is not None
)

# --- the absurd values -----------------------------------------------------------------

# Ints away from the band where a valid call would build gigabytes (2**20 .. 2**31 entries):
# small ones, and sizes far past anything that fits in memory.
HUGE = [10**12, 2**40, 10**30, 2**63, 2**64, 10**100]
INTS = st.one_of(
    st.integers(-5, 40),
    st.sampled_from(HUGE + [-n for n in HUGE] + [-(2**63)]),
    st.integers(10**11, 10**40),
    st.integers(-(10**40), -(10**11)),
)
FLOATS = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([math.nan, math.inf, -math.inf, 1e308, -1e308, 5e-324, -0.0, 0.5, 1.0, 1e30]),
)
WORDS = st.sampled_from(["3", "8", "1e3", "nan", "", " ", "interleaved", "sin_cos", "half", "paper", "mae",
                         "default", "en", "xx", "float32", "[1, 2]", "None"])
SCALARS = st.one_of(
    st.none(), st.booleans(), INTS, FLOATS, WORDS, st.text(max_size=12), st.binary(max_size=6),
    st.complex_numbers(allow_nan=True, allow_infinity=True),
    st.sampled_from([np.float64("nan"), np.int64(-1), np.float32("inf"), np.bool_(True), np.str_("3"),
                     np.int64(2**62), np.uint64(2**64 - 1), np.float16(65504)]),
)
ARRAYS = st.sampled_from([
    np.array([]), np.zeros((0, 4)), np.zeros((4, 0)), np.zeros((2, 3, 0)), np.zeros(()), np.array(["3", "4"]),
    np.array([np.nan, 1.0]), np.array([np.inf]), np.array([1 + 2j]), np.array([None, 1], dtype=object),
    np.array([True, False]), np.ones((2, 3, 4, 5)), np.array([[1.0, 2.0], [3.0, 4.0]]), np.arange(6),
    np.array([10**18], dtype=np.int64), np.array([1e308, -1e308]), np.array(["2020-01-01"], dtype="datetime64[D]"),
    np.zeros(3, dtype=[("a", "f4")]), np.array([-1, 2**62], dtype=np.int64),
])
OTHERS = st.sampled_from([
    {}, {"a": 1}, set(), frozenset({1}), (), (1,), (2, 3), (0, 0), (-1, 4), (2, 3, 4, 5, 6), (1.5, 2), ("2", 3),
    (10**12, 10**12), (None,), object(), slice(None), Ellipsis, np.float32, np.int32, "float32", type, print,
    range(3), iter([1, 2]),
])
LISTS = st.recursive(
    st.one_of(st.integers(-(10**20), 10**20), st.floats(), st.text(max_size=3), st.none()),
    lambda inner: st.lists(inner, max_size=4),
    max_leaves=12,
)
ABSURD = st.one_of(SCALARS, ARRAYS, OTHERS, LISTS, st.lists(st.floats(), min_size=1, max_size=6))


# --- every public callable, with a valid call to spoil ---------------------------------

def _calls():
    """``name -> (args, kwargs)``: a valid call of each public callable of ``posenc``."""
    table = posenc.positional_encoding(6, 8)
    grid = posenc.grid_encoding((2, 3), 8)
    cos, sin = posenc.rotary_cos_sin([0, 1, 2, 3], 8)
    return {
        "Convention": (("x",), {"rule": "paper", "base": 10000.0, "layout": "interleaved", "odd": "sine",
                                "offset": 0, "padding_idx": None, "shift": 1.0, "factor": 1.0, "clamp": False}),
        "angles": (([0, 1, 2], 8), {"base": 10000.0}),
        "apply_rotary": ((np.ones((2, 4, 8)), cos, sin), {"layout": "half"}),
        "column_order": ((8,), {"layout": "interleaved"}),
        "convention": (("paper",), {"base": 10000.0, "layout": "interleaved"}),
        "convert_layout": ((table, "interleaved", "sin_cos"), {"axis": -1, "odd": "sine"}),
        "convert_rotary_layout": ((np.zeros((16, 5)), "half", "interleaved"), {"heads": 2, "axis": 0, "rotary_dim": 8}),
        "denominators": ((8,), {"base": 10000.0}),
        "diagnose": ((table,), {"shape": None, "language": "en"}),
        "diagnose_grid": ((grid, (2, 3)), {"convention": "mae", "language": "en"}),
        "encode": (([0, 1.5, 2], 8), {"convention": "paper", "base": 10000.0, "layout": "interleaved",
                                       "dtype": np.float32, "out": None}),
        "frequencies": ((8,), {"base": 10000.0}),
        "get_language": ((), {}),
        "grid_encoding": (((2, 3), 8), {"convention": "mae", "dtype": np.float32, "positions": None}),
        "identify_grid": ((grid, (2, 3)), {"language": "en"}),
        "identify": ((table,), {"atol": 1e-6}),
        "identify_rope": ((cos, sin), {}),
        "interleave": ((np.zeros((2, 3)), np.ones((2, 3))), {}),
        "layout_permutation": ((8, "interleaved", "sin_cos"), {"odd": "sine"}),
        "list_conventions": ((), {}),
        "list_grid_conventions": ((), {}),
        "parse_printed": (("[[0.0, 1.0], [0.8415, 0.5403]]",), {"shape": None}),
        "positional_encoding": ((6, 8), {"convention": "paper", "base": 10000.0, "layout": "interleaved",
                                         "dtype": np.float32, "out": None}),
        "rotary_cos_sin": (([0, 1, 2], 8), {"base": 10000.0, "rope_type": "default", "layout": "half",
                                            "dtype": np.float32}),
        "rotary_frequencies": ((8,), {"base": 10000.0, "rope_type": "default"}),
        "rotary_permutation": ((8, "half", "interleaved"), {"heads": 2, "rotary_dim": 8}),
        "set_language": (("en",), {}),
        "shift_matrix": ((3, 8), {"base": 10000.0, "layout": "interleaved"}),
        "wavelengths": ((8,), {"base": 10000.0}),
    }


CALLS = _calls()
# What diagnose, identify and their grid versions return, not something to call.
RESULTS = {"Diagnosis", "Identification", "GridDiagnosis", "GridIdentification", "RopeIdentification"}
PUBLIC = sorted(name for name in posenc.__all__ if callable(getattr(posenc, name)) and name not in RESULTS)


def test_every_public_callable_has_a_valid_call_here():
    assert sorted(CALLS) == PUBLIC
    for name, (args, kwargs) in CALLS.items():
        getattr(posenc, name)(*args, **kwargs)


def check_answer(function, args, kwargs):
    """Call ``function``; whatever it raises must be a plain ValueError or TypeError of posenc's."""
    language = posenc.get_language()  # set_language may be among the calls
    try:
        function(*args, **kwargs)
    except ALLOWED as error:
        assert not isinstance(error, NUMPY_ERRORS), f"NumPy's {type(error).__name__} escaped: {error}"
        assert str(error), f"{type(error).__name__} without a message"
    finally:
        posenc.set_language(language)


@st.composite
def spoiled_calls(draw, name, calls=CALLS):
    """``(args, kwargs)``: the valid call of ``name`` in ``calls`` with one to three arguments made
    absurd (or an unknown keyword added, or an argument missing)."""
    args, kwargs = calls[name]
    args, kwargs = list(args), dict(kwargs)
    for _ in range(draw(st.integers(1, 3))):
        slots = [("arg", n) for n in range(len(args))] + [("kw", key) for key in kwargs]
        what = draw(st.sampled_from(slots + [("extra", None), ("drop", None)]) if slots else st.just(("extra", None)))
        if what[0] == "arg":
            args[what[1]] = draw(ABSURD)
        elif what[0] == "kw":
            kwargs[what[1]] = draw(ABSURD)
        elif what[0] == "extra":
            kwargs[draw(st.sampled_from(["bogus", "offset", "padding_idx", "factor", "scale", "length", "d"]))] = draw(ABSURD)
        elif args:
            args.pop()
    return args, kwargs


@pytest.mark.parametrize("name", PUBLIC)
@settings(max_examples=100, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_a_spoiled_call_raises_a_value_or_type_error(name, data):
    args, kwargs = data.draw(spoiled_calls(name))
    check_answer(getattr(posenc, name), args, kwargs)


# Public functions of the subpackages that posenc's namespace does not hold (issue 29's grids and RoPE-Mixed).
SUBPACKAGE_CALLS = {
    "rope.mixed_frequencies": ((16, np.zeros((2, 3))), {"base": 10.0, "dtype": np.float32}),
    "rope.mixed_cos_sin": ((np.zeros((2, 4)), np.ones((2, 1, 3, 4))), {"layout": "interleaved", "dtype": np.float32}),
    "rope.per_axis_cos_sin": ((np.zeros((5, 3)), (8, 12, 12)), {"base": 10000.0, "layout": "interleaved", "dtype": np.float32}),
    "rope.per_axis_cis": ((np.zeros((5, 3)), (8, 12, 12)), {"base": 10000.0, "dtype": np.complex64}),
    "rope.pixel_cos_sin": ((np.zeros((2, 6)), 8), {"max_freq": 224.0, "spacing": "linear", "layout": "interleaved",
                                                   "dtype": np.float32}),
    "rope.xpos_cos_sin": ((np.arange(4), 8), {"keys": True, "scale_base": 512.0, "center": 2.0, "base": 10000.0,
                                              "layout": "interleaved", "dtype": np.float32}),
    "sinusoidal.random_fourier_features": ((np.zeros((5, 2)), np.ones((2, 4))), {"input_shape": None, "dtype": np.float32}),
}


def _subpackage_function(name):
    package, function = name.split(".")
    return getattr(getattr(posenc, package), function)


@pytest.mark.parametrize("name", sorted(SUBPACKAGE_CALLS))
@settings(max_examples=100, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_a_spoiled_call_of_a_subpackage_function_raises_a_value_or_type_error(name, data):
    function = _subpackage_function(name)
    function(*SUBPACKAGE_CALLS[name][0], **SUBPACKAGE_CALLS[name][1])  # the call before spoiling is valid
    check_answer(function, *data.draw(spoiled_calls(name, SUBPACKAGE_CALLS)))


# --- diagnose's text reader ------------------------------------------------------------

PRINTABLE = "[]()0123456789.,-+eE \n...naninf" + "tensor array dtype=float32 shape=(1, 4, 6) torch.Size"
TEXTS = st.one_of(
    st.text(max_size=200),
    st.text(alphabet=PRINTABLE, max_size=300),
    st.lists(st.sampled_from(["[", "]", "[[", "]]", "...", ",", " ", "\n", "0.", "1.", "-0.5", "1e5", "1e-3", "e432647",
                              "1e432647", "0.0e999", "nan", "inf", "shape=(2, 3)", "torch.Size([2, 3])", "(2, 3)",
                              "dtype=float16", "dtype=torch.bfloat16", "array(", ")", "tensor("]), max_size=60).map("".join),
)
SHAPES = st.one_of(st.none(), st.sampled_from([(6, 4), (1, 6, 4), (4, 6), (10**12, 4), (0, 4), (6,), (2, 3, 4), ()]), ABSURD)


def _print_of(table, form):
    """A print of ``table`` a learner could paste: NumPy's str or repr, plain or rounded, or a
    torch-like / TensorFlow-like wrapper around NumPy's print (no framework needed)."""
    body = np.array2string(table, separator=", " if form in ("repr", "tf") else " ",
                           precision=4 if form == "rounded" else 8, threshold=40 if form == "summary" else 1000)
    if form == "repr":
        return f"array({body}, dtype=float32)"
    if form == "tf":
        return f"<tf.Tensor: shape={table.shape}, dtype=float32, numpy=\narray({body}, dtype=float32)>"
    if form == "sci":
        return np.array2string(table, separator=", ", formatter={"float": lambda x: f"{x:.4e}"})
    return body


@st.composite
def mangled_prints(draw):
    """``(text, shape)``: a print of a real table (a convention's, a few rows and columns),
    then cut, duplicated, exponents blown up, brackets removed, stray characters put in."""
    length, d_model = draw(st.integers(1, 12)), draw(st.integers(1, 10))
    convention = draw(st.sampled_from(["paper", "tensor2tensor", "fairseq"]))
    try:
        table = posenc.positional_encoding(length, d_model, convention=convention)
    except ValueError:  # a width the source cannot build
        table = posenc.positional_encoding(length, d_model)
    form = draw(st.sampled_from(["str", "repr", "rounded", "summary", "tf", "sci"]))
    text = _print_of(table, form)
    for _ in range(draw(st.integers(1, 4))):
        where = draw(st.integers(0, len(text)))
        how = draw(st.sampled_from(["cut", "cut_front", "duplicate", "exponent", "exponent_everywhere", "no_open",
                                    "no_close", "stray", "delete", "swap_digits"]))
        if how == "cut":
            text = text[:where]
        elif how == "cut_front":
            text = text[where:]
        elif how == "duplicate":
            end = draw(st.integers(where, len(text)))
            text = text[:end] + text[where:end] + text[end:]
        elif how == "exponent":
            digits = draw(st.sampled_from(["432647", "-432647", "308", "309", "-400", "9" * 30, "1" * 5000]))
            text = text[:where] + "e" + digits + text[where:]
        elif how == "exponent_everywhere":
            text = text.replace("e-0", "e-4326").replace("e+0", "e+4326").replace(". ", ".e4326 ")
        elif how == "no_open":
            text = text.replace("[", "", draw(st.integers(1, 3)))
        elif how == "no_close":
            text = text[::-1].replace("]", "", draw(st.integers(1, 3)))[::-1]
        elif how == "stray":
            text = text[:where] + draw(st.text(alphabet="[](),.-+e xj*#\t\u00a0\u2212", min_size=1, max_size=3)) + text[where:]
        elif how == "delete":
            text = text[:where] + text[where + draw(st.integers(1, 8)):]
        else:
            text = text.translate(str.maketrans("0123456789", draw(st.permutations("0123456789")).__str__()[2::5]))
    shape = draw(st.one_of(st.none(), st.just(table.shape), st.just((1, *table.shape)), SHAPES))
    return text, shape


def check_reading(text, shape):
    """``diagnose(text, shape=shape)``: a Diagnosis, or a ValueError/TypeError that says what it could not read."""
    try:
        found = posenc.diagnose(text, shape=shape)
    except ALLOWED as error:
        assert str(error) and not isinstance(error, NUMPY_ERRORS), repr(error)
        return
    assert isinstance(found, posenc.Diagnosis)
    str(found)


@settings(max_examples=400)
@given(TEXTS, SHAPES)
def test_random_text_is_read_or_refused(text, shape):
    check_reading(text, shape)


@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow])
@given(mangled_prints())
def test_a_mangled_print_is_read_or_refused(case):
    check_reading(*case)


# --- the frameworks' fronts ------------------------------------------------------------

FRONT_VALUES = st.one_of(
    st.sampled_from([None, True, -1, 0, 2.5, math.nan, math.inf, 10**12, 10**30, "3", "", [], [[1], [2, 3]], (),
                     np.array([]), np.array(["3"]), np.array([np.nan]), np.array([1 + 2j]), {}, object()]),
    st.integers(-3, 12),
)


# posenc.biases (not in the top-level namespace): a valid call of each public callable.
BIAS_CALLS = {
    "alibi_slopes": ((6,), {"alibi_bias_max": 8.0}),
    "alibi_bias": ((4, 3, 5), {"causal": True, "key_offset": 2, "alibi_bias_max": 8.0, "dtype": np.float32}),
    "relative_position_bucket": (([[-3, 0, 5]],), {"bidirectional": True, "num_buckets": 32, "max_distance": 128}),
    "relative_position_bias": ((np.ones((32, 4), np.float32), 3, 5), {"bidirectional": True, "num_buckets": 32,
                                                                       "max_distance": 128, "key_offset": 2}),
    "relative_positions": ((3, 5), {"key_offset": 2}),
    "toeplitz": ((np.arange(7.0), 3, 5), {"dtype": np.float32}),
}


def test_every_bias_callable_has_a_valid_call_here():
    assert sorted(BIAS_CALLS) == sorted(posenc.biases.__all__)
    for name, (args, kwargs) in BIAS_CALLS.items():
        getattr(posenc.biases, name)(*args, **kwargs)


@pytest.mark.parametrize("name", sorted(BIAS_CALLS))
@settings(max_examples=100, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_a_spoiled_bias_call_raises_a_value_or_type_error(name, data):
    args, kwargs = BIAS_CALLS[name]
    args, kwargs = list(args), dict(kwargs)
    slot = data.draw(st.sampled_from(list(range(len(args))) + list(kwargs)))
    if isinstance(slot, int):
        args[slot] = data.draw(ABSURD)
    else:
        kwargs[slot] = data.draw(ABSURD)
    check_answer(getattr(posenc.biases, name), args, kwargs)


# The fronts' grid and vision functions (issue 29), and their modules with axes_dim and RoPE-Mixed.
FRONT_VISION_CALLS = {
    **{key.split(".")[1]: call for key, call in SUBPACKAGE_CALLS.items()
       if key.split(".")[1] in ("per_axis_cos_sin", "per_axis_cis", "pixel_cos_sin", "random_fourier_features", "xpos_cos_sin")},
    "RotaryEmbedding": ((24,), {"base": 10000.0, "axes_dim": (8, 8, 8), "layout": "interleaved"}),
    "RotaryEmbeddingMixed": ((16, 2, 3), {"base": 10.0, "layout": "interleaved"}),
}
# What the fronts bind of posenc.biases, and their T5 module (torch alone has FlexAttention's score_mods).
FRONT_BIASES = ["alibi_slopes", "alibi_bias", "relative_position_bucket", "relative_position_bias", "RelativePositionBias",
                "alibi_score_mod", "t5_score_mod"]


def _front_call(front, framework, name):
    """A valid call of ``name`` in ``front`` (a posenc front module), its tensors the framework's."""
    if name == "apply_rotary":
        cos, sin = front.rotary_cos_sin([0, 1, 2, 3], 8)
        x = front.positional_encoding(8, 8)[None, :4]
        return [x, cos, sin], {"layout": "half"}
    bucketing = {"bidirectional": True, "max_distance": 128}
    table = front.positional_encoding(32, 4)  # a (num_buckets, heads) float tensor
    if name == "RelativePositionBias":
        rngs = {"rngs": __import__("flax").nnx.Rngs(0)} if framework == "jax" else {}
        return [4], {"num_buckets": 32, **bucketing, **rngs}
    if name in ("relative_position_bias", "t5_score_mod"):
        return [table, 3, 5], {**bucketing, "key_offset": 2}
    if name == "alibi_score_mod":
        return [front.alibi_slopes(4)], {"causal": True, "key_offset": 2}
    args, kwargs = BIAS_CALLS.get(name) or FRONT_VISION_CALLS.get(name) or CALLS[name]
    return list(args), {key: value for key, value in kwargs.items() if key not in ("dtype", "out")}


@pytest.mark.parametrize("name", ["positional_encoding", "encode", "rotary_cos_sin", "apply_rotary", *FRONT_BIASES, *FRONT_VISION_CALLS])
# The front fixture hands every example the same cached adapter: nothing to reset between them.
@settings(max_examples=40, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_the_fronts_raise_value_or_type_errors(front, name, data):
    if not hasattr(front.api, name):
        pytest.skip(f"posenc.{front.name} has no {name} (FlexAttention is torch's)")
    args, kwargs = _front_call(front.api, front.name, name)
    slot = data.draw(st.sampled_from(list(range(len(args))) + list(kwargs)))
    if isinstance(slot, int):
        args[slot] = data.draw(FRONT_VALUES)
    else:
        kwargs[slot] = data.draw(FRONT_VALUES)
    if front.name == "jax" and name == "RotaryEmbeddingMixed":  # its random stream, not an argument to spoil
        kwargs["rngs"] = __import__("flax").nnx.Rngs(0)
    check_answer(getattr(front.api, name), args, kwargs)


# --- every argument, spoiled alone, is named in the message ------------------------------

# Public functions of the subpackages beyond SUBPACKAGE_CALLS: what posenc.rope and
# posenc.sinusoidal hold that posenc's namespace does not (posenc.forensics' are all there).
SUBPACKAGE_CALLS.update({
    "rope.axial_cos_sin": ((np.zeros((2, 5)), 16), {"base": 10000.0, "convention": "qwen2_vl", "layout": "half",
                                                   "dtype": np.float32}),
    "rope.axial_frequencies": ((16,), {"base": 10000.0, "convention": "qwen2_vl"}),
    "rope.flux_position_ids": ((2, 3, 4), {}),
    "rope.grid_position_ids": ((4, 6), {"spatial_merge_size": 2, "frames": 1}),
    "rope.layer_plan": (({"model_type": "llama", "head_dim": 8, "num_hidden_layers": 2,
                          "rope_parameters": {"rope_type": "default", "rope_theta": 10000.0}},), {}),
    "rope.mrope_axes": (((1, 1, 2),), {"interleaved": False, "pairs": 4}),
    "rope.mrope_cos_sin": ((np.zeros((3, 5)), 8), {"mrope_section": (1, 1, 2), "interleaved": False, "base": 10000.0,
                                                  "rope_type": "default", "layout": "half", "dtype": np.float32}),
    "rope.mrope_position_ids": (([2, (1, 4, 6), 2],), {"spatial_merge_size": 2, "time_interval": 1.0,
                                                       "text_resumes": "longer_side"}),
    "rope.per_axis_frequencies": (((8, 12, 12),), {"base": 10000.0}),
    "rope.pixel_frequencies": ((8,), {"max_freq": 224.0, "spacing": "linear", "ndim": 2}),
    "rope.rotary_arguments": (({"model_type": "llama", "head_dim": 8,
                                "rope_parameters": {"rope_type": "default", "rope_theta": 10000.0}},), {"layer_type": None}),
    "rope.rotary_dim": ((8,), {"rope_type": "default"}),
    "rope.xpos_decay": ((8,), {}),
    "sinusoidal.patch_positions": (((2, 3),), {"grid_offset": 0.0, "normalize": None, "ref_feat_shape": None,
                                               "num_prefix_tokens": 0}),
    "sinusoidal.resolve": (("paper",), {"base": None, "layout": None}),
})
# What a function returns, not something to call.
SUBPACKAGE_RESULTS = {"rope.LayerPosition"}


def test_every_public_function_of_the_subpackages_has_a_valid_call():
    public = {f"{package}.{name}" for package in ("rope", "sinusoidal", "forensics", "biases")
              for name in getattr(posenc, package).__all__ if callable(getattr(getattr(posenc, package), name))}
    covered = {name for name in public if name.split(".")[1] in (CALLS.keys() | RESULTS | BIAS_CALLS.keys())}
    assert public - covered - SUBPACKAGE_RESULTS == set(SUBPACKAGE_CALLS)


class Anything:
    """A value of no type any argument takes; its messages show ``Anything`` (its type name)."""

    def __repr__(self):
        return "<Anything>"


def wrong_values(valid):
    """Values to put in place of ``valid``: one of no type at all, a string (the wrong type, or
    a choice that does not exist), for an int 0 and -1, for a float NaN."""
    values = [Anything(), "nope" if not isinstance(valid, str) else "nope-nope"]
    if isinstance(valid, int) and not isinstance(valid, bool):
        values += [0, -1]
    if isinstance(valid, float):
        values.append(math.nan)
    return values


_EMPTY = "an empty output is valid"
# (function, parameter) -> (the wrong values not held to the standard: valid there, or refused by
# another library's check; why). Every other wrong value is refused with a ValueError or
# TypeError naming the parameter and showing the value received.
EXEMPT = {
    **{(name, parameter): ([0], _EMPTY) for name, parameter in [
        ("positional_encoding", "length"), ("rope.flux_position_ids", "text_length"),
        ("sinusoidal.patch_positions", "num_prefix_tokens"),
        *((f"biases.{name}", length) for name in ("alibi_bias", "relative_position_bias", "relative_positions")
          for length in ("query_length", "key_length"))]},
    **{(f"biases.{name}", "key_offset"): ([0, -1], "any shift of the keys against the queries")
       for name in ("alibi_bias", "relative_position_bias", "relative_positions")},
    ("shift_matrix", "k"): ([0, -1], "a shift by any number of positions, back or forth"),
    ("convert_layout", "axis"): ([0, -1], "the call's table has two axes"),
    ("convert_rotary_layout", "axis"): ([0], "the call's weight has two axes"),
}
# Functions that take any value in every parameter, and why.
RECORDS = {"Convention": "a record of a convention's fields; resolve() and the tables check them where they are used"}
# (function, parameter) -> (the name the message uses, why).
SPELLED = {("diagnose", "table"): ("text", "a string is a print of a table: parse_printed(text) reads it")}


def named_in_error(function, args, kwargs, parameter, value):
    """``None`` when ``function`` refuses ``value`` for ``parameter`` as the standard says, else what went wrong."""
    try:
        function(*args, **kwargs)
    except ALLOWED as error:
        message = str(error)
        shown = "Anything" if isinstance(value, Anything) else repr(value)
        if re.search(rf"(?<![\w.]){re.escape(parameter)}\b", message) and shown in message:
            return None
        return f"{type(error).__name__}: {message}"
    except Exception as error:  # noqa: BLE001 (reported, not raised: the test lists every miss)
        return f"{type(error).__name__}: {error}"
    return "accepted"


def one_by_one(function, args, kwargs, signature=None, values=wrong_values):
    """``(parameter, value, spoiled)``: the call with each parameter of ``signature`` in turn given
    each of ``values(valid)``, ``spoiled`` its ``inspect.BoundArguments``."""
    bound = (signature or inspect.signature(function)).bind(*args, **kwargs)
    bound.apply_defaults()
    for parameter, valid in bound.arguments.items():
        if bound.signature.parameters[parameter].kind in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD):
            continue
        for value in values(valid):
            yield parameter, value, inspect.BoundArguments(bound.signature, {**bound.arguments, parameter: value})


def spoiled_one_by_one(name, function, args, kwargs, signature=None, exempt_table=EXEMPT):
    """The misses of ``function`` over each parameter of its ``signature`` spoiled alone."""
    misses = []
    for parameter, value, spoiled in one_by_one(function, args, kwargs, signature):
        exempt = exempt_table.get((name, parameter), ((), ""))[0]
        if any(type(value) is type(a) and value == a for a in exempt):
            continue
        language = posenc.get_language()
        try:
            miss = named_in_error(function, spoiled.args, spoiled.kwargs, SPELLED.get((name, parameter), (parameter,))[0], value)
        finally:
            posenc.set_language(language)
        if miss:
            misses.append(f"{name}({parameter}={value!r}): {miss}")
    return misses


NAMED_CALLS = {**{name: (getattr(posenc, name), *CALLS[name]) for name in CALLS},
               **{f"biases.{name}": (getattr(posenc.biases, name), *BIAS_CALLS[name]) for name in BIAS_CALLS},
               **{name: (_subpackage_function(name), *SUBPACKAGE_CALLS[name]) for name in SUBPACKAGE_CALLS}}


@pytest.mark.parametrize("name", sorted(NAMED_CALLS.keys() - RECORDS.keys()))
def test_each_argument_spoiled_alone_is_named_with_the_value_received(name):
    function, args, kwargs = NAMED_CALLS[name]
    function(*args, **kwargs)  # the call before spoiling is valid
    assert spoiled_one_by_one(name, function, args, kwargs) == []


# --- absurd sizes answer at once --------------------------------------------------------

def _view(*shape, dtype=np.float64):
    """Zeros of ``shape`` that take no memory (a broadcast view of one)."""
    return np.broadcast_to(np.zeros(1, dtype), shape)


ABSURD_SIZES = [
    (posenc.positional_encoding, (10**12, 512), {}, "length * d_model must be at most 2**31 = 2147483648 entries, "
                                                    "got 1000000000000 * 512 = 512000000000000"),
    (posenc.positional_encoding, (6, 10**12), {}, "d_model must be at most 2**20 = 1048576, got 1000000000000"),
    (posenc.encode, (np.zeros(10**4), 2**20), {}, "positions.size * d_model must be at most 2**31 = 2147483648 "
                                                  "entries, got 10000 * 1048576 = 10485760000"),
    (posenc.angles, (np.zeros(10**4), 2**20), {}, "positions.size * ceil(d_model / 2) must be at most 2**31 = "
                                                  "2147483648 entries, got 10000 * 524288 = 5242880000"),
    (posenc.frequencies, (10**11,), {}, "d_model must be at most 2**20 = 1048576, got 100000000000"),
    (posenc.column_order, (10**11,), {}, "d_model must be at most 2**20 = 1048576, got 100000000000"),
    (posenc.wavelengths, (10**11,), {}, "d_model must be at most 2**20 = 1048576, got 100000000000"),
    (posenc.shift_matrix, (1, 2**20), {}, "d_model * d_model must be at most 2**31 = 2147483648 entries, "
                                          "got 1048576 * 1048576 = 1099511627776"),
    (posenc.grid_encoding, ((2, 3), 10**11), {}, "d must be at most 2**20 = 1048576, got 100000000000"),
    (posenc.grid_encoding, ((10**6, 10**6), 8), {}, "shape[0] * shape[1] * d must be at most 2**31 = 2147483648 "
                                                    "entries, got 1000000 * 1000000 * 8 = 8000000000000"),
    (posenc.rotary_frequencies, (10**12,), {}, "head_dim must be at most 2**20 = 1048576, got 1000000000000"),
    (posenc.rotary_cos_sin, ([0, 1], 10**12), {}, "head_dim must be at most 2**20 = 1048576, got 1000000000000"),
    (posenc.rotary_permutation, (8, "half", "interleaved"), {"heads": 10**12},
     "heads * head_dim must be at most 2**31 = 2147483648 entries, got 1000000000000 * 8 = 8000000000000"),
    (posenc.diagnose, ("[[0., 1., ...], [0., 1., ...]]",), {"shape": (10**12, 10**12)},
     "shape must be at most 2**31 = 2147483648 entries, got 1000000000000 * 1000000000000 = 1000000000000000000000000"),
    (posenc.biases.alibi_bias, (2**10, 2**12, 2**12), {}, "num_heads * query_length * key_length must be at most 2**31 = "
                                                          "2147483648 entries, got 1024 * 4096 * 4096 = 17179869184"),
    (posenc.biases.relative_positions, (2**30, 2**30 + 2), {"key_offset": 0},
     "query_length + key_length - 1 must be at most 2**31 = 2147483648 entries, got 2147483649"),
    (posenc.biases.relative_position_bias, (np.zeros((32, 2**10)), 2**12, 2**12), {},
     "heads * query_length * key_length must be at most 2**31 = 2147483648 entries, got 1024 * 4096 * 4096 = 17179869184"),
    # Positions that hold no memory (broadcast views): their size is read before their float64 copy is made, which was
    # a MemoryError after seconds (16 GiB and more).
    (posenc.encode, (_view(2**31), 64), {}, "positions.size * d_model must be at most 2**31 = 2147483648 entries, "
                                            "got 2147483648 * 64 = 137438953472"),
    (posenc.encode, (_view(2**31, dtype=np.int64), 64), {}, "positions.size * d_model must be at most 2**31 = 2147483648 "
                                                            "entries, got 2147483648 * 64 = 137438953472"),
    (posenc.angles, (_view(2**31), 64), {}, "positions.size * ceil(d_model / 2) must be at most 2**31 = 2147483648 entries, "
                                            "got 2147483648 * 32 = 68719476736"),
    (posenc.rotary_cos_sin, (_view(2**31), 64), {}, "positions.size * head_dim must be at most 2**31 = 2147483648 entries, "
                                                    "got 2147483648 * 64 = 137438953472"),
    (posenc.rope.xpos_cos_sin, (_view(2**31), 64), {}, "positions.size * head_dim must be at most 2**31 = 2147483648 "
                                                       "entries, got 2147483648 * 64 = 137438953472"),
    (posenc.rope.per_axis_cos_sin, (_view(2**29, 3), (16, 24, 24)), {},
     "ids.size / len(axes_dim) * sum(axes_dim) must be at most 2**31 = 2147483648 entries, got 536870912 * 64 = 34359738368"),
    # more positions than any output holds: refused before what they give is counted
    (posenc.rope.per_axis_cos_sin, (_view(2**30, 3), (16, 24, 24)), {},
     "ids.size must be at most 2**31 = 2147483648 entries, got 3221225472"),
    (posenc.rope.axial_cos_sin, (_view(2, 2**30), 64), {},
     "positions.size / positions.shape[0] * head_dim must be at most 2**31 = 2147483648 entries, "
     "got 1073741824 * 64 = 68719476736"),
    (posenc.rope.mrope_cos_sin, (_view(3, 2**29), 32), {"mrope_section": (4, 6, 6)},
     "position_ids.size / position_ids.shape[0] * head_dim must be at most 2**31 = 2147483648 entries, "
     "got 536870912 * 32 = 17179869184"),
    (posenc.rope.mixed_cos_sin, (_view(2, 2**30), np.ones((2, 4, 16))), {},
     "prod(frequencies.shape[1:]) * positions.size must be at most 2**31 = 2147483648 entries, "
     "got 64 * 2147483648 = 137438953472"),
    (posenc.sinusoidal.random_fourier_features, (_view(2**30, 2), np.ones((2, 64))), {},
     "prod(coords.shape[:-1]) * 2 * projection.shape[1] must be at most 2**31 = 2147483648 entries, "
     "got 1073741824 * 128 = 137438953472"),
    (posenc.biases.toeplitz, (_view(2**11, 2**11, 2047), 1024, 1024), {},  # values for a batch of heads
     "values.shape[:-1] * query_length * key_length must be at most 2**31 = 2147483648 entries, "
     "got 2048 * 2048 * 1024 * 1024 = 4398046511104"),
    (posenc.sinusoidal.random_fourier_features, (_view(2**12, 2**12, 2), np.ones((2, 256))), {},  # a batch of point sets
     "prod(coords.shape[:-1]) * 2 * projection.shape[1] must be at most 2**31 = 2147483648 entries, "
     "got 16777216 * 512 = 8589934592"),
]


@pytest.mark.parametrize("function, args, kwargs, message", ABSURD_SIZES,
                         ids=[f"{case[0].__name__}-{n}" for n, case in enumerate(ABSURD_SIZES)])
def test_an_absurd_size_is_refused_before_anything_is_allocated(function, args, kwargs, message):
    # Before: a MemoryError from NumPy, or minutes of work on a width of 10**12. Now the size
    # is checked first: nothing is allocated (NumPy's arrays are traced by tracemalloc too). Measured on a
    # second call: a first may import NumPy's own modules (np.unique loads numpy.ma, a megabyte).
    with pytest.raises(ValueError):
        function(*args, **kwargs)
    tracemalloc.start()
    try:
        with pytest.raises(ValueError) as caught:
            function(*args, **kwargs)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert str(caught.value) == message
    assert peak < 2**20, f"{peak} bytes allocated before refusing"


# --- refusals past the first check of each argument, read whole ------------------------------

@pytest.mark.parametrize("call, message", [
    (lambda: posenc.rope.mrope_axes([1, 2], interleaved=True),
     "mrope_section must be a list of non-negative ints (pairs per axis: time, height, width; exactly three when interleaved), "
     "got [1, 2]"),
    (lambda: posenc.rope.mixed_cos_sin(np.zeros((2, 3)), np.full((2, 1, 4), np.nan)), "frequencies must be finite, got NaN or infinity"),
    (lambda: posenc.sinusoidal.random_fourier_features(np.zeros((3, 2)), np.full((2, 4), np.nan)),
     "projection must be finite, got NaN or infinity"),
    (lambda: posenc.grid_encoding((2, 3, 4), 12, convention="diffusers"),
     "d must be a multiple of 16 for convention 'diffusers' (diffusers' get_3d_sincos_pos_embed splits d into D/4 (time) and "
     "3D/4 (space), each half of which must be even (ValueError otherwise)); got d=12"),
])
def test_a_refusal_past_the_first_check_reads_whole(call, message):
    with pytest.raises(ValueError) as caught:
        call()
    assert str(caught.value) == message


# --- the escapes this test found, pinned ------------------------------------------------

@pytest.mark.parametrize("text, message", [
    # OverflowError: 10.0 ** 43260 (the unit of the last digit of a 0 with a blown-up exponent).
    ("[[0.0000e+43260, 1.]]", "text must print numbers a float64 holds (exponents up to 330), got '0.0000e+43260'"),
    ("[[0., 1e432647]]", "text must print numbers a float64 holds (exponents up to 330), got '1e432647'"),
    # ValueError from int() past 4300 digits, with Python's message.
    ("[[1e" + "1" * 5000 + "]]", "text must print numbers a float64 holds (exponents up to 330), got '1e"
     + "1" * 38 + "'"),
    # IndexError: an empty print.
    ("[[]]", "text must print an array of numbers; found none in '[[]]'"),
    ("tensor([])", "text must print an array of numbers; found none in '[]'"),
])
def test_unreadable_prints_name_what_they_could_not_read(text, message):
    with pytest.raises(ValueError) as caught:
        posenc.diagnose(text)
    assert str(caught.value) == message


def test_exponents_up_to_330_are_read():
    # the edge of the refusal above: three-digit exponents a float64 prints are numbers like any other
    read = posenc.parse_printed("[[1.5e-300, 2.5e+100], [1e300, 4.9e-324]]")
    np.testing.assert_array_equal(read.values, [[1.5e-300, 2.5e100], [1e300, 5e-324]])


@pytest.mark.parametrize("shape", [(math.inf, 2), (2.5, 2), "12", np.array([2.0, 2.0])])
def test_a_shape_of_non_ints_is_a_type_error(shape):
    # (inf, 2): OverflowError from int(inf); (2.5, 2) was read as (2, 2), "12" as (1, 2).
    with pytest.raises(TypeError) as caught:
        posenc.diagnose("[[0., 1.], [0.84, 0.54]]", shape=shape)
    assert str(caught.value) == f"shape must be a tuple of ints (length, d_model), got {shape!r}"


def test_a_complex_table_is_a_type_error():
    # astype(float64) dropped the imaginary parts with a ComplexWarning and diagnosed the rest.
    with pytest.raises(TypeError) as caught:
        posenc.diagnose(np.array([[0, 1 + 2j]]))
    assert str(caught.value) == "table must hold real numbers, got an array of complex128"


def test_interleave_of_scalars_is_a_value_error():
    # IndexError: tuple index out of range (sines.shape[-1] of a 0-d array).
    with pytest.raises(ValueError) as caught:
        posenc.interleave(1, 2)
    assert str(caught.value) == "sines and cosines must have at least one axis, got array(1) and array(2)"


@pytest.mark.parametrize("positions, shown", [("3", "'3'"), (["3", "4"], "['3', '4']"), ([0, None], "[0, None]"), (b"3", "b'3'"),
                                              (list(map(str, range(9))), "['0', '1', '2', '3', '4', '5', ...]")])
def test_a_string_position_shows_the_string(positions, shown):
    # Was: "positions must hold integers or real floats, got an array of dtype <U1".
    with pytest.raises(TypeError) as caught:
        posenc.encode(positions, 8)
    assert str(caught.value) == f"positions must be numbers (integers or real floats), got {shown}"


@only("torch", "tensorflow")
def test_apply_rotary_of_a_non_tensor_is_a_type_error(front):
    # AttributeError: 'NoneType' object has no attribute 'shape'.
    cos, sin = front.api.rotary_cos_sin([0, 1, 2, 3], 8)
    with pytest.raises(TypeError) as caught:
        front.api.apply_rotary(front.api.positional_encoding(4, 8), None, sin)
    kind = {"torch": "torch.Tensor", "tensorflow": "tf.Tensor"}[front.name]
    assert str(caught.value) == f"cos must be a {kind}, got None (NoneType)"


@only("jax")
def test_jax_apply_rotary_of_an_int_past_int32_is_a_type_error(front):
    # OverflowError: Python int 1000000000000 too large to convert to int32 (from inside JAX).
    pj = front.api
    cos, sin = pj.rotary_cos_sin([0, 1, 2, 3], 8)
    with pytest.raises(TypeError) as caught:
        pj.apply_rotary(pj.positional_encoding(4, 8), 10**12, sin)
    assert str(caught.value) == "cos must be an array of numbers, got 1000000000000 (int)"


def test_a_dtype_numpy_cannot_parse_is_a_type_error_in_every_front(front):
    # JAX: SyntaxError from NumPy's dtype parser ("(2,3" reads as a sub-array shape).
    with pytest.raises(TypeError) as caught:
        front.api.encode([0, 1], 4, dtype="(2,3")
    assert str(caught.value).startswith("dtype must be one of ") and str(caught.value).endswith("got '(2,3'")


@only("jax")
def test_jax_float64_with_x64_off_says_what_it_needs(front):
    with pytest.raises(ValueError) as caught:
        front.api.encode([0, 1], 4, dtype="float64")
    assert str(caught.value) == "dtype float64 needs jax.config.update('jax_enable_x64', True), got dtype=dtype('float64')"


@pytest.mark.filterwarnings("error")
@pytest.mark.parametrize("call, message", [
    # An empty array was compared element by element: NumPy 2.0 warned (an error here).
    (lambda: posenc.positional_encoding(4, 8, layout=np.array([])),
     "layout must be one of 'interleaved', 'sin_cos', 'cos_sin'; got array([], dtype=float64) (ndarray)"),
    (lambda: posenc.set_language(["en"]), "language must be one of 'en', 'pt_BR', 'zh_CN' or None (the locale); got ['en'] (list)"),
    (lambda: posenc.rotary_cos_sin([1], 8, rope_type="x" * 100),
     f"rope_type must be one of {', '.join(map(repr, posenc.ROPE_TYPES))}; got '{'x' * 37}...{'x' * 38}'"),
])
def test_a_choice_shows_the_value_received_and_an_array_its_type(call, message):
    with pytest.raises(ValueError) as caught:
        call()
    assert str(caught.value) == message


def test_a_large_array_as_a_choice_is_shown_on_one_short_line():
    with pytest.raises(ValueError) as caught:
        posenc.positional_encoding(4, 8, layout=np.ones((50, 50)))
    message = str(caught.value)
    shown = message.removeprefix("layout must be one of 'interleaved', 'sin_cos', 'cos_sin'; got ")
    # NumPy 2 ends a summarised repr with its shape, NumPy 1 does not: the cut keeps the end either way.
    assert "\n" not in message and shown.startswith("array([[1., 1.,") and shown.endswith(("1.]]) (ndarray)", "shape=(50, 50)) (ndarray)"))
    assert len(shown) <= 80 + len(" (ndarray)")


# --- the same in the frameworks' fronts ---------------------------------------------------

def _signature(function):
    """``function``'s signature, a class's that of its ``__init__`` without ``self`` (Flax's
    metaclass hides it behind ``*args, **kwargs``)."""
    if not isinstance(function, type):
        return inspect.signature(function)
    parameters = list(inspect.signature(function.__init__).parameters.values())
    return inspect.Signature(parameters[1:])


def _front_named_calls(front):
    """``name -> (callable, args, kwargs)``: a valid call of each public callable of ``front``
    that is not NumPy's own (those are checked above); keyword arguments the front's version
    does not take are left out."""
    api, nnx = front.api, (__import__("flax").nnx if front.name == "jax" else None)
    rngs = {"rngs": nnx.Rngs(0)} if nnx else {}
    extra = {
        "PositionalEncoding": ((8,), {"max_len": 16, "dropout": 0.0, "convention": "paper", "base": None, "layout": None,
                                      **rngs}),
        "RotaryEmbeddingMixed": ((16, 2, 3), {"base": 10.0, "layout": "interleaved", **rngs}),
        "RotaryEmbeddingPerLayerType": ((), {"modules": {"full_attention": api.RotaryEmbedding(8)}}),
        "resample_abs_pos_embed": ((api.positional_encoding(5, 8)[None], (3, 3)), {"old_size": (2, 2), "num_prefix_tokens": 1,
                                   "interpolation": "bicubic", "antialias": True, "align_corners": None}),
        **{name: SUBPACKAGE_CALLS[f"rope.{name}"] for name in ("axial_cos_sin", "mrope_cos_sin")},
    }
    numpy_own = {id(getattr(package, name)) for package in (posenc, posenc.rope, posenc.sinusoidal, posenc.forensics,
                                                           posenc.biases) for name in package.__all__}
    calls = {}
    for name in api.__all__:
        function = getattr(api, name)
        if not callable(function) or id(function) in numpy_own:
            continue
        args, kwargs = extra[name] if name in extra else _front_call(api, front.name, name)
        parameters = _signature(function).parameters
        calls[name] = (function, list(args), {k: v for k, v in kwargs.items() if k in parameters and k != "dtype"})
    return calls


# NumPy's exemptions (the fronts' functions have NumPy's names) and the fronts' own.
FRONT_EXEMPT = {
    **{(name.split(".")[-1], parameter): exempt for (name, parameter), exempt in EXEMPT.items()},
    ("RotaryEmbeddingMixed", "seed"): (["nope"], "Keras' own check names seed and shows the value (its str, not its repr)"),
    ("PositionalEncoding", "max_len"): ([0], "no rows at first: a longer input grows the table (torch, Flax) or computes "
                                              "its rows (Keras)"),
    ("t5_score_mod", "query_length"): ([0], _EMPTY), ("t5_score_mod", "key_length"): ([0], _EMPTY),
    **{(name, "key_offset"): ([0, -1], "any shift of the keys against the queries") for name in ("alibi_score_mod", "t5_score_mod")},
}


def test_each_argument_of_a_front_spoiled_alone_is_named_with_the_value_received(front):
    misses = []
    for name, (function, args, kwargs) in sorted(_front_named_calls(front).items()):
        function(*args, **kwargs)  # the call before spoiling is valid
        misses += spoiled_one_by_one(name, function, args, kwargs, _signature(function), FRONT_EXEMPT)
    assert misses == []


@only("tensorflow", "jax")
@pytest.mark.parametrize("input_shape", [Anything(), "nope", (0, 4)])
def test_a_traced_random_fourier_features_names_a_bad_input_shape(front, input_shape):
    # Traced, the front computes the features itself: NumPy's function (whose check the eager
    # calls above meet) is not called, so the front's own check is the one that answers.
    projection = front.tensor(np.ones((2, 4)))
    with pytest.raises(ValueError) as caught:
        front.trace(lambda c: front.api.random_fourier_features(c, projection, input_shape=input_shape), front.tensor(np.zeros((5, 2))))
    assert re.search(r"input_shape must be \(height, width\) of positive sizes", str(caught.value))
    assert ("Anything" if isinstance(input_shape, Anything) else repr(input_shape)) in str(caught.value)


@pytest.mark.parametrize(("call", "message"), [
    (lambda v: posenc.rope.mrope_position_ids([2], time_interval=v), "time_interval must be a finite number >= 0, got "),
    (lambda v: posenc.rope.pixel_cos_sin(np.zeros((2, 3)), 8, max_freq=v), "max_freq must be a positive number, or 2 of "),
    (lambda v: posenc.sinusoidal.random_fourier_features(np.zeros((4, 2)), np.ones((2, 8)), input_shape=(v, 4)),
     "input_shape must be (height, width) of positive sizes"),
])
def test_a_complex_numpy_scalar_is_not_a_real_size(call, message):
    # np.complex128 is a np.number but not a real number: float() would drop its imaginary part with a warning
    with pytest.raises(ValueError) as caught:
        call(np.complex128(4))
    assert str(caught.value).startswith(message)
