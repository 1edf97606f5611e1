"""posenc.diagnose: every catalog code from a buggy table written here the way learners write it.

Each ``learner_*`` function below is an independent implementation of the formula with one
mistake in it (the line that differs from ``learner_paper`` says which), in NumPy, computed
in the dtype asked for, as lecture code does. Their tables are diagnosed as NumPy arrays, as
torch and TF tensors, and from the text that NumPy, torch and TF print for them (summarised
prints included); random and noisy tables must come back "unknown", never a wrong certainty.
"""

import json
from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import posenc
from lecture_values import CORNERS_20x200, TABLE_10x6, TABLE_10x6_4DP
import child
from messages import assert_raises_naming
from published_tables import SOURCES
import reference
from posenc.__main__ import main
from posenc.forensics.diagnosis import CATALOG
from posenc.forensics.printed import parse_printed


def _angles(length, d_model, dtype, *, base=10000, first=0, exponent=None, multiply=False):
    pos = np.arange(first, first + length, dtype=dtype)[:, None]
    k = np.arange(d_model)
    if exponent is None:
        exponent = 2 * (k // 2) / d_model  # the paper: pair i = k // 2 shares 2i / d
    denominator = np.power(dtype(base), np.asarray(exponent, dtype=dtype))
    return pos * denominator if multiply else pos / denominator


def _interleave(angles, swap=False):
    pe = np.empty_like(angles)
    first, second = (np.cos, np.sin) if swap else (np.sin, np.cos)
    pe[:, 0::2] = first(angles[:, 0::2])
    pe[:, 1::2] = second(angles[:, 1::2])
    return pe


def learner_paper(length, d_model, dtype=np.float64):
    return _interleave(_angles(length, d_model, dtype))


def learner_swapped(length, d_model, dtype=np.float64):
    return _interleave(_angles(length, d_model, dtype), swap=True)  # pe[:, 0::2] = np.cos(...)


def learner_column_exponent(length, d_model, dtype=np.float64):
    k = np.arange(d_model)
    return _interleave(_angles(length, d_model, dtype, exponent=k / d_model))  # k / d, not 2 * (k // 2) / d


def learner_double_column_exponent(length, d_model, dtype=np.float64):
    k = np.arange(d_model)
    return _interleave(_angles(length, d_model, dtype, exponent=2 * k / d_model))  # DeepCTR: 2 * k / d


def learner_base_1000(length, d_model, dtype=np.float64):
    return _interleave(_angles(length, d_model, dtype, base=1000))


def learner_integer_division(length, d_model, dtype=np.float64):
    k = np.arange(d_model)
    return _interleave(_angles(length, d_model, dtype, exponent=2 * (k // 2) // d_model))  # // gives 0


def learner_integer_division_per_column(length, d_model, dtype=np.float64):
    k = np.arange(d_model)
    return _interleave(_angles(length, d_model, dtype, exponent=2 * k // d_model))  # Python 2's 2*i/d


def learner_multiplied(length, d_model, dtype=np.float64):
    return _interleave(_angles(length, d_model, dtype, multiply=True))  # pos * 10000 ** (2i/d)


def learner_from_one(length, d_model, dtype=np.float64):
    return _interleave(_angles(length, d_model, dtype, first=1))  # np.arange(1, length + 1)


def learner_transposed(length, d_model, dtype=np.float64):
    return learner_paper(length, d_model, dtype).T  # (d_model, length)


def learner_concatenated(length, d_model, dtype=np.float64):
    angles = _angles(length, d_model, dtype)
    return np.concatenate([np.sin(angles[:, 0::2]), np.cos(angles[:, 1::2])], axis=1)  # sin | cos


def learner_stacked_pairs(length, d_model, dtype=np.float64):
    # The lecture's stack of sin and cos over range(0, d, 2): an odd d_model gives d + 1 columns.
    even_i = np.arange(0, d_model, 2, dtype=dtype)
    angles = np.arange(length, dtype=dtype)[:, None] / np.power(dtype(10000), even_i / dtype(d_model))
    return np.stack([np.sin(angles), np.cos(angles)], axis=2).reshape(length, -1)


def learner_floor_pairs(length, d_model, dtype=np.float64):
    # d_model // 2 pairs, stacked: an odd d_model loses its last column (a sine).
    i = np.arange(d_model // 2, dtype=dtype)
    angles = np.arange(length, dtype=dtype)[:, None] / np.power(dtype(10000), 2 * i / dtype(d_model))
    return np.stack([np.sin(angles), np.cos(angles)], axis=2).reshape(length, -1)


# (learner, expected codes, widths it applies to).
ODD, ANY = "odd", "any"
CASES = {
    "matches": (learner_paper, ["matches"], ANY),
    "swapped_sin_cos": (learner_swapped, ["swapped_sin_cos"], ANY),
    "exponent_per_column": (learner_column_exponent, ["exponent_per_column"], ANY),
    "exponent_per_column (2k/d)": (learner_double_column_exponent, ["exponent_per_column"], ANY),
    "wrong_base": (learner_base_1000, ["wrong_base"], ANY),
    "integer_division": (learner_integer_division, ["integer_division"], ANY),
    "integer_division (per column)": (learner_integer_division_per_column, ["integer_division"], ANY),
    "multiplied_not_divided": (learner_multiplied, ["multiplied_not_divided"], ANY),
    "position_offset": (learner_from_one, ["position_offset"], ANY),
    "transposed": (learner_transposed, ["transposed"], ANY),
    "layout": (learner_concatenated, ["matches", "layout"], ANY),
    "extra_column": (learner_stacked_pairs, ["extra_column"], ODD),
    "missing_column": (learner_floor_pairs, ["missing_column"], ODD),
}
SIZES = [(10, 6), (12, 9), (33, 7), (50, 64), (17, 33)]


def _cases():
    for label, (learner, codes, widths) in CASES.items():
        for length, d_model in SIZES:
            if widths == ODD and d_model % 2 == 0:
                continue
            for dtype in (np.float32, np.float64):
                yield pytest.param(learner, length, d_model, dtype, codes, id=f"{label}-{length}x{d_model}-{dtype.__name__}")


def test_every_catalog_code_has_a_case():
    # The learners here, and the published code of tests/published_tables.py.
    covered = {code for _, codes, _ in CASES.values() for code in codes}
    covered |= {code for source in SOURCES for code in source.codes}
    assert covered | {"float32_precision"} == set(CATALOG)


@pytest.mark.parametrize("learner, length, d_model, dtype, codes", list(_cases()))
def test_numpy_tables(learner, length, d_model, dtype, codes):
    table = learner(length, d_model, dtype)
    found = posenc.diagnose(table)
    assert found.codes == codes, str(found)
    assert found.matches_paper == (codes == ["matches"])
    assert not found.alternatives, str(found)


def test_details_name_what_was_found():
    assert posenc.diagnose(learner_base_1000(20, 16)).findings[0].details["base"] == 1000
    assert posenc.diagnose(learner_from_one(20, 16)).findings[0].details["first_position"] == 1
    assert posenc.diagnose(learner_stacked_pairs(20, 7)).findings[0].details["d_model"] == 7
    assert posenc.diagnose(learner_floor_pairs(20, 7)).findings[0].details["d_model"] == 7
    layout = posenc.diagnose(learner_concatenated(20, 8)).findings[1].details
    perm = layout["permutation"]
    np.testing.assert_array_equal(learner_concatenated(20, 8)[:, perm], learner_paper(20, 8))
    swapped = str(posenc.diagnose(learner_swapped(10, 6)))
    assert "columns 0, 2, 4 hold cosines and 1, 3, 5 sines" in swapped
    # past three columns the list stops at "...": a learner's 16 columns
    assert posenc.diagnose(learner_swapped(20, 16)).findings[0].message == (
        "columns 0, 2, 4, ... hold cosines and 1, 3, 5, ... sines: sin and cos are swapped; swap the two assignments "
        "(sin goes to the even columns 0::2, cos to 1::2)")


def test_named_convention_outside_the_paper_family():
    table = posenc.positional_encoding(40, 16, convention="tensor2tensor", dtype=np.float64)
    found = posenc.diagnose(table)
    assert found.codes == ["matches", "layout"] and "tensor2tensor" in found.findings[0].details["conventions"]
    assert not found.matches_paper


# Combined mistakes, and the exact first position / base read off.
@settings(max_examples=40, deadline=None)
# Found by Hypothesis on main: the slowest sine's angle crosses pi inside the table (positions
# 100-119 at base 500), and the offset read off it split in two.
@example(length=20, d_model=7, base=500, first=100, swap=True, transpose=False, dtype=np.float32)
@example(length=30, d_model=7, base=500, first=100, swap=True, transpose=False, dtype=np.float64)
@given(
    length=st.integers(8, 40),
    d_model=st.integers(6, 40),
    base=st.sampled_from([10000, 1000, 500]),
    first=st.sampled_from([0, 1, 2, 100]),
    swap=st.booleans(),
    transpose=st.booleans(),
    dtype=st.sampled_from([np.float32, np.float64]),
)
def test_combined_mistakes(length, d_model, base, first, swap, transpose, dtype):
    table = _interleave(_angles(length, d_model, dtype, base=base, first=first), swap=swap)
    if transpose:
        table = table.T
    expected = (["transposed"] if transpose else []) + (["swapped_sin_cos"] if swap else [])
    expected += (["wrong_base"] if base != 10000 else []) + (["position_offset"] if first else [])
    found = posenc.diagnose(table)
    assert found.codes == (expected or ["matches"]), str(found)
    if base != 10000:
        assert found.findings[expected.index("wrong_base")].details["base"] == base
    if first:
        assert found.findings[expected.index("position_offset")].details["first_position"] == first


def test_float32_precision_at_large_positions():
    # The lecture's float32 route over 5000 positions: off by ~1e-3 at the end, not a mistake.
    table = learner_paper(5000, 64, np.float32)
    found = posenc.diagnose(table)
    assert found.codes == ["matches", "float32_precision"] and found.matches_paper
    details = found.findings[1].details
    assert 1e-4 < details["max_deviation"] < 2e-3
    assert details["float32_route_deviation"] < details["max_deviation"] / 10
    exact = posenc.positional_encoding(5000, 64, dtype=np.float64)
    assert details["max_deviation"] == pytest.approx(np.abs(table - exact).max(), rel=1e-6)
    row = details["from_row"]
    assert found.findings[1].message == (
        f"the values drift from the exact ones by up to {details['max_deviation']:.1e}, beyond 1e-05 from row {row} "
        f"(position {row}) on: float32 angles p * w lose digits as p grows (float32 code for the formula reproduces "
        f"it to {details['float32_route_deviation']:.1e}); not a mistake, but compute the angles in float64 (or use "
        "posenc.positional_encoding) if it matters")
    first_bad = np.flatnonzero((np.abs(table - exact) > 1e-5).any(axis=1))[0]
    assert details["from_row"] == first_bad
    # posenc's own float32 table is accurate there: a plain match.
    assert posenc.diagnose(posenc.positional_encoding(5000, 64)).codes == ["matches"]


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("shape", [(2, 2), (10, 6), (6, 10), (40, 33), (3, 200)])
def test_random_tables_are_unknown(seed, shape):
    rng = np.random.default_rng(seed)
    found = posenc.diagnose(rng.uniform(-1, 1, shape))
    assert found.codes == ["unknown"] and found.findings[0].details["max_deviation"] > 1e-2


@pytest.mark.parametrize("noise", [1e-3, 1e-2])
@pytest.mark.parametrize("learner", [learner_paper, learner_base_1000, learner_swapped, learner_transposed])
def test_noisy_tables_are_unknown_with_the_nearest(learner, noise):
    table = learner(30, 16) + np.random.default_rng(1).normal(0, noise, learner(30, 16).shape)
    found = posenc.diagnose(table)
    assert found.codes == ["unknown"], str(found)
    assert found.max_deviation == pytest.approx(np.abs(table - learner(30, 16)).max(), rel=0.5)
    assert "nearest" in str(found)


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(2, 30), st.integers(2, 30), st.sampled_from([0.0, 1e-3]))
def test_no_wrong_certainty(seed, length, width, scale):
    # A random table, or a catalog table drowned in noise of scale 1e-3 and more: never a fit.
    rng = np.random.default_rng(seed)
    table = rng.uniform(-1, 1, (length, width))
    if scale:
        table = learner_paper(length, width) + rng.normal(0, 1, (length, width)) * (scale + rng.uniform(0, 0.1))
    assert posenc.diagnose(table).codes == ["unknown"]


# --- tensors and printed text -----------------------------------------------------------------

FRAMEWORK_CASES = [
    (learner, codes, size)
    for learner, codes, widths in CASES.values()
    for size in ([(10, 7), (50, 33)] if widths == ODD else [(10, 6), (50, 64)])
]
FRAMEWORK_IDS = [f"{codes[-1]}-{learner.__name__}-{size[0]}x{size[1]}" for learner, codes, size in FRAMEWORK_CASES]


@pytest.mark.parametrize("learner, codes, size", FRAMEWORK_CASES, ids=FRAMEWORK_IDS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_torch_tensors_and_their_prints(learner, codes, size, dtype):
    torch = pytest.importorskip("torch")
    tensor = torch.from_numpy(learner(*size, dtype))
    assert posenc.diagnose(tensor).codes == codes
    text = repr(tensor)  # what a notebook shows; summarised above 1000 entries
    assert ("..." in text) == (tensor.numel() > 1000)
    found = posenc.diagnose(text, shape=tuple(tensor.shape))
    assert found.codes == codes, text + "\n" + str(found)
    assert posenc.diagnose(repr(tensor[None]), shape=(1, *tensor.shape)).codes == codes  # (1, L, d)


@pytest.mark.parametrize("learner, codes, size", FRAMEWORK_CASES, ids=FRAMEWORK_IDS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_tensorflow_tensors_and_their_prints(learner, codes, size, dtype):
    tf = pytest.importorskip("tensorflow")
    tensor = tf.constant(learner(*size, dtype))[None]  # (1, L, d), as Keras code returns it
    assert posenc.diagnose(tensor).codes == codes
    for text in (repr(tensor), str(tensor)):  # the cell output and print(); both show the shape
        assert "shape=(1," in text
        found = posenc.diagnose(text)
        assert found.codes == codes, text + "\n" + str(found)


@pytest.mark.parametrize("learner, codes, size", FRAMEWORK_CASES, ids=FRAMEWORK_IDS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_numpy_prints(learner, codes, size, dtype):
    table = learner(*size, dtype)
    for text in (repr(table), str(table)):
        assert ("..." in text) == (table.size > 1000)
        found = posenc.diagnose(text, shape=table.shape if "..." in text else None)
        assert found.codes == codes, text + "\n" + str(found)
    with np.printoptions(precision=4, suppress=True):  # the lectures' rounded prints
        assert posenc.diagnose(str(table), shape=table.shape).codes == codes


@pytest.mark.parametrize("framework", ["torch", "tensorflow"])
def test_float32_precision_and_unknown_in_tensors_and_prints(framework):
    module = pytest.importorskip(framework)
    tensor = module.tensor if framework == "torch" else module.constant
    drifting = learner_paper(5000, 64, np.float32)
    random = np.random.default_rng(3).uniform(-1, 1, (40, 16)).astype(np.float32)
    for table, codes in [(drifting, ["matches", "float32_precision"]), (random, ["unknown"])]:
        assert posenc.diagnose(tensor(table)).codes == codes
        assert posenc.diagnose(repr(tensor(table)), shape=table.shape).codes == codes
        assert posenc.diagnose(str(tensor(table)), shape=table.shape).codes == codes


def test_float32_precision_from_a_summarised_print():
    table = learner_paper(5000, 64, np.float32)
    found = posenc.diagnose(repr(table), shape=table.shape)
    assert found.codes == ["matches", "float32_precision"]
    assert found.findings[1].details["from_row"] == 4997  # the first row shown after the '...'


@pytest.mark.parametrize("name", ["tensor2tensor", "fairseq"])
def test_a_summarised_float64_print_of_a_named_convention_is_compared_in_float64(name):
    """Its deviation is float64's (1e-16); a float32 rebuild would put float32's rounding (4e-8) in it."""
    table = posenc.positional_encoding(2000, 16, convention=name, dtype=np.float64)
    with np.printoptions(threshold=40, precision=17):
        found = posenc.diagnose(str(table), shape=table.shape)
    assert found.codes[0] == "matches" and found.max_deviation < 1e-15


def test_lecture_004_corners():
    # Seed 004 printed the shape, then its summarised (1, 20, 200) table on one line.
    def numbers(values):
        return " ".join(np.format_float_positional(v, precision=4, trim=".") for v in values)

    rows = [f"[ {numbers(head)} ... {numbers(tail)} ]" for head, tail in CORNERS_20x200.values()]
    text = "(1, 20, 200) [[" + " ".join(rows[:3]) + " ... " + " ".join(rows[3:]) + "]]"
    entries = parse_printed(text)
    assert entries.shape == (20, 200)
    np.testing.assert_array_equal(entries.rows, [0, 1, 2, 17, 18, 19])
    np.testing.assert_array_equal(entries.columns, [0, 1, 2, 197, 198, 199])
    found = posenc.diagnose(text)
    assert found.matches_paper and found.codes == ["matches"], str(found)


def test_lecture_002_rounded_torch_print():
    lines = ",\n        ".join("[" + ", ".join(f"{v:7.4f}" for v in row) + "]" for row in TABLE_10x6_4DP)
    text = f"tensor([{lines}])"
    assert posenc.diagnose(text).codes == ["matches"]
    assert posenc.diagnose(TABLE_10x6).codes == ["matches"]


def test_parse_printed_reads_scientific_notation_and_its_precision():
    entries = parse_printed("tensor([[ 0.0000e+00,  1.0000e+00],\n        [ 8.4147e-01,  5.4030e-01]])")
    np.testing.assert_array_equal(entries.values, [[0, 1], [0.84147, 0.5403]])
    np.testing.assert_allclose(entries.tolerance, [[5e-5, 5e-5], [5e-6, 5e-6]])


@pytest.mark.parametrize(
    "text, shape, error, words",
    [
        ("no array here", None, ValueError, ["no [...] found"]),
        ("[[1, 2, ..., 3]]", None, ValueError, ["summarised", "shape=(length, d_model)"]),
        ("[[1, 2], [3, x]]", None, ValueError, ["'x'"]),
        ("[[[1, 2], [3, 4]], [[5, 6], [7, 8]]]", None, ValueError, ["batch"]),
        ("[[1, 2], [3, 4]]", (3, 2), ValueError, ["shape says 3 rows"]),
        ("[[1, 2], [3, 4]]", "ab", TypeError, ["shape", "'ab'"]),
    ],
)
def test_bad_text(text, shape, error, words):
    assert_raises_naming(lambda: posenc.diagnose(text, shape=shape), error, words)


@pytest.mark.parametrize(
    "table, error, words",
    [
        (np.zeros((2, 3, 4)), ValueError, ["table", "(2, 3, 4)"]),
        (np.array([[np.nan, 1.0]]), ValueError, ["table", "NaN"]),
        (object(), TypeError, ["table", "object"]),
    ],
)
def test_bad_tables(table, error, words):
    assert_raises_naming(lambda: posenc.diagnose(table), error, words)


def test_shape_of_an_array_must_be_its_own():
    table = learner_paper(10, 6)
    assert posenc.diagnose(table, shape=(10, 6)).codes == ["matches"]
    assert_raises_naming(lambda: posenc.diagnose(table, shape=(6, 10)), ValueError,
                         ["shape must be the table's own shape (10, 6)", "got (6, 10)"])


def test_import_posenc_loads_no_framework():
    code = "import sys, posenc; posenc.diagnose([[0.0, 1.0]]); print('torch' in sys.modules, 'tensorflow' in sys.modules)"
    out = child.run(["-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False"]


# --- the command line ---------------------------------------------------------------------------


def _cli(capsys, *args):
    """``python -m posenc diagnose ARGS``, run in this process (test_language.py runs the command itself)."""
    code = main(["diagnose", *map(str, args)])
    printed = capsys.readouterr()
    return SimpleNamespace(returncode=code, stdout=printed.out, stderr=printed.err)


def test_cli_exit_codes_and_json(tmp_path, capsys):
    torch = pytest.importorskip("torch")
    np.save(tmp_path / "paper.npy", learner_paper(20, 16, np.float32))
    np.savetxt(tmp_path / "swapped.csv", learner_swapped(20, 16), delimiter=",")
    torch.save(torch.from_numpy(learner_base_1000(20, 16)).T.contiguous(), tmp_path / "base.pt")
    (tmp_path / "print.txt").write_text(str(learner_paper(50, 64, np.float32)))  # print(): no shape shown

    done = _cli(capsys, tmp_path / "paper.npy")
    assert done.returncode == 0 and done.stdout == f"{posenc.diagnose(learner_paper(20, 16, np.float32))}\n"  # text, not JSON
    done = _cli(capsys, tmp_path / "swapped.csv", "--json")
    assert done.returncode == 1
    report = json.loads(done.stdout)
    assert [f["code"] for f in report["findings"]] == ["swapped_sin_cos"] and report["matches_paper"] is False
    done = _cli(capsys, tmp_path / "base.pt", "--json")
    assert done.returncode == 1
    found = json.loads(done.stdout)["findings"]
    assert [f["code"] for f in found] == ["transposed", "wrong_base"] and found[1]["base"] == 1000
    assert _cli(capsys, tmp_path / "print.txt", "--shape", "50,64").returncode == 0
    assert _cli(capsys, tmp_path / "print.txt", "--shape", "50x64").returncode == 0
    assert _cli(capsys, tmp_path / "print.txt").returncode == 2  # summarised, and no shape given
    with pytest.raises(SystemExit) as exited:
        _cli(capsys, tmp_path / "print.txt", "--shape", "50,6x")
    assert exited.value.code == 2 and "--shape must look like 20,200; got '50,6x'" in capsys.readouterr().err


def test_cli_json_in_another_language_keeps_its_letters(tmp_path, capsys):
    np.save(tmp_path / "swapped.npy", learner_swapped(20, 16))
    done = _cli(capsys, tmp_path / "swapped.npy", "--json", "--language", "zh_CN")
    message = posenc.diagnose(learner_swapped(20, 16), language="zh_CN").findings[0].message
    assert done.returncode == 1 and f'"message": {json.dumps(message, ensure_ascii=False)}' in done.stdout
    assert "\\u" not in done.stdout and not message.isascii()


def test_cli_reads_a_csv_with_a_header(tmp_path, capsys):
    columns = ",".join(f"c{k}" for k in range(8))
    np.savetxt(tmp_path / "header.csv", learner_from_one(12, 8), delimiter=",", header=columns, comments="")
    done = _cli(capsys, tmp_path / "header.csv", "--json")
    assert done.returncode == 1 and json.loads(done.stdout)["findings"][0]["first_position"] == 1


def test_cli_reads_a_tensor_saved_on_a_gpu(tmp_path, capsys, monkeypatch):
    # A learner's table saved from CUDA: torch.load puts it back there unless told the CPU (none here).
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("needs a machine without CUDA, where a CUDA tensor cannot be restored as saved")
    with monkeypatch.context() as saving_from_cuda:
        saving_from_cuda.setattr(torch.serialization, "location_tag", lambda storage: "cuda:0")
        torch.save(torch.from_numpy(learner_paper(20, 16)), tmp_path / "cuda.pt")
    with pytest.raises(RuntimeError, match="CUDA"):
        torch.load(tmp_path / "cuda.pt", weights_only=True)
    done = _cli(capsys, tmp_path / "cuda.pt")
    assert done.returncode == 0 and "the paper's table" in done.stdout

class _RunsCode:
    def __reduce__(self):  # unpickling calls print: what a hostile .pt file could do instead
        return print, ("unpickling ran code",)


def test_cli_reads_a_pt_file_without_running_its_code(tmp_path, capsys):
    torch = pytest.importorskip("torch")
    torch.save(_RunsCode(), tmp_path / "hostile.pt")
    done = _cli(capsys, tmp_path / "hostile.pt")
    assert done.returncode == 2 and "unpickling ran code" not in done.stdout and "weights_only" in done.stderr.lower()


def test_cli_asks_torch_for_weights_only_whatever_its_default(tmp_path, capsys, monkeypatch):
    # torch >= 2.6 loads weights only by default; 2.3-2.5 (which pyproject allows) unpickle anything unless asked
    torch = pytest.importorskip("torch")
    torch.save(torch.from_numpy(posenc.positional_encoding(10, 6)), tmp_path / "table.pt")
    asked, load = [], torch.load
    monkeypatch.setattr(torch, "load", lambda *args, **kwargs: asked.append(kwargs) or load(*args, **kwargs))
    assert _cli(capsys, tmp_path / "table.pt").returncode == 0
    assert asked == [{"map_location": "cpu", "weights_only": True}]


def test_cli_without_a_command_names_what_is_missing(capsys):
    with pytest.raises(SystemExit) as exited:
        main([])
    assert exited.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1] == "python -m posenc: error: the following arguments are required: command"


def test_cli_help_says_what_each_argument_takes(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "500")  # argparse wraps to the terminal's width (and breaks at hyphens)
    helps = []
    for argv in (["--help"], ["diagnose", "--help"]):
        with pytest.raises(SystemExit) as exited:
            main(argv)
        assert exited.value.code == 0
        helps.append(" ".join(capsys.readouterr().out.split()))
    assert "Tools of the posenc package." in helps[0]
    assert "diagnose say what a positional-encoding table is, or which mistake made it" in helps[0]
    for said in ("Say whether the table in FILE is the paper's positional encoding, a known convention, or which mistakes "
                 "made it. Exit status: 0 the paper's table, 1 not, 2 unreadable.",
                 "file .npy, .pt, .csv, or a text file with a printed array",
                 "--shape SHAPE the full shape of a summarised print, e.g. 20,200",
                 "--json print the diagnosis as JSON",
                 "--language {en,pt_BR,zh_CN} the language of the messages (default: English); the codes stay English"):
        assert said in helps[1]

def test_cli_bad_files(tmp_path, capsys):
    torch = pytest.importorskip("torch")
    (tmp_path / "empty.txt").write_text("nothing printed here")
    (tmp_path / "broken.npy").write_bytes(b"not numpy")
    torch.save({"pe": torch.zeros(3, 4)}, tmp_path / "state.pt")
    for path in (tmp_path / "empty.txt", tmp_path / "broken.npy", tmp_path / "missing.npy", tmp_path / "state.pt"):
        done = _cli(capsys, path)
        assert done.returncode == 2 and "error" in done.stderr and str(path) in done.stderr and not done.stdout


# --- what a learner reads (issue 21): a sentence per code, the unknown's account, to_dict ------------

def _by_name(name, length, d_model):
    return next(source for source in SOURCES if source.name == name).table(length, d_model)


def _two_length_exponent(length, d_model, dtype=np.float64):
    k = np.arange(d_model)
    return _interleave(_angles(length, d_model, dtype, exponent=2 * (k // 2) / length))  # 2i/L, L = length


MESSAGES = {
    "matches": (lambda: learner_paper(10, 6), ["the paper's table: sin at even columns, cos at odd, base 10000"]),
    "swapped_sin_cos": (lambda: learner_swapped(10, 6), ["sin and cos are swapped", "sin goes to the even columns 0::2"]),
    "exponent_per_column": (lambda: learner_column_exponent(10, 6), ["exponent k/d of its own index k",
                                                                      "use 2 * (k // 2) / d_model"]),
    "wrong_base": (lambda: learner_base_1000(10, 6), ["the base is 1000, not 10000", "write 10000",
                                                       "its exponent is 0.75 times 2i/d"]),
    "exponent_scaled": (lambda: _by_name("rothman", 10, 6), ["those of the exponent 4i/d", "i already steps by 2",
                                                             "the code still writes 2 * i / d_model; write i / d_model there",
                                                             "if your code writes the base 1e+08 instead"]),
    "integer_division": (lambda: learner_integer_division(10, 6), ["every exponent 2i/d is 0", "integer division",
                                                                   "2 * i / float(d_model)"]),
    "multiplied_not_divided": (lambda: learner_multiplied(10, 6), ["multiplied by 10000^(2i/d)",
                                                                   "use pos / 10000**(2i/d)"]),
    "position_offset": (lambda: learner_from_one(10, 6), ["row 0 holds position 1, not 0", "use arange(length)"]),
    "transposed": (lambda: learner_transposed(10, 6), ["the table is transposed", "(length, d_model) = (10, 6)",
                                                       "transpose it (.T)"]),
    "layout": (lambda: learner_concatenated(10, 6), ["all sines, then all cosines", "a convention, not a mistake",
                                                     "perm = [0, 3, 1, 4, 2, 5]"]),
    "float32_precision": (lambda: learner_paper(5000, 64, np.float32), ["float32 angles p * w lose digits",
                                                                         "not a mistake"]),
    "half_precision": (lambda: learner_paper(10, 6).astype(np.float16), ["held in float16", "about 3 significant digits",
                                                                        "cast it to float16 at the end"]),
    "extra_column": (lambda: learner_stacked_pairs(10, 7), ["frequencies are those of d_model = 7", "one column too many"]),
    "missing_column": (lambda: learner_floor_pairs(10, 7), ["one column missing", "the last column of an odd width is a sine"]),
    "zero_row": (lambda: _by_name("code_test_zero_row", 10, 6), ["row 0 (position 0) is all zeros", "a padding row"]),
    "zero_column": (lambda: _by_name("guided_diffusion", 10, 7), ["column 6 is all zeros", "odd width 7 was padded",
                                                                  "after the 6 columns of d_model = 6 described here",
                                                                  "posenc.positional_encoding(length, 7)"]),
    "scaled": (lambda: _by_name("deepctr", 10, 6), ["times 2.449 = sqrt(d_model)", "apply it to the embeddings"]),
    "unknown": (lambda: _by_name("stackoverflow_power", 10, 6), [
        "departs most from the paper's table at row 5, column 0: 0.540302 where the paper's formula gives -0.958924",
        "beyond the 1.7e-05 allowed there (the data's rounding 2e-06 + float32 drift 1e-05 + 1e-06 * |angle| 5)",
        "the nearest explanation in the catalog"]),
}


def test_every_code_has_a_message_case():
    assert set(MESSAGES) == set(CATALOG)


@pytest.mark.parametrize("length, d_model, base", [(50, 7, 3333.3), (50, 64, 777.7)])
def test_a_base_read_off_float32_values_is_good_to_their_rounding(length, d_model, base):
    # One entry's float32 rounding (3e-8 at most, over |cos| >= 0.44 where it is read, at an
    # angle near 100) moves the base read off it by about 1e-9 of itself; the other branch of
    # acos (a cosine's angle in (pi, 2 pi)) by some 1e-8.
    k = np.arange(d_model)
    angles = np.arange(length)[:, None] / base ** (2 * (k // 2) / d_model)
    table = np.where(k % 2 == 0, np.sin(angles), np.cos(angles)).astype(np.float32)
    found = posenc.diagnose(table).findings[0]
    assert found.code == "wrong_base" and found.details["base"] == pytest.approx(base, rel=5e-9)


def test_a_long_float32_table_multiplied_where_it_should_divide_is_named():
    # Its fast columns turn by up to 1e7 radians, where float32 angles say nothing: about 40% of
    # the entries are uninformative, and the half that is asked of float32 tables still fits.
    assert posenc.diagnose(learner_multiplied(1000, 64, np.float32)).codes == ["multiplied_not_divided"]


def test_a_scale_other_than_sqrt_d_model_is_not_called_one():
    finding = posenc.diagnose(2 * posenc.positional_encoding(10, 6, dtype=np.float64)).findings[-1]
    assert finding.code == "scaled" and finding.details == {"factor": pytest.approx(2), "shift": pytest.approx(0, abs=1e-12)}
    assert "times 2: the table is scaled" in finding.message and "sqrt" not in finding.message.split(";")[0]


def test_half_precision_details():
    table = learner_paper(10, 6).astype(np.float16)
    found = posenc.diagnose(table)
    exact = posenc.positional_encoding(10, 6, dtype=np.float64)
    assert found.findings[-1].details == {"dtype": "float16",
                                          "max_deviation": pytest.approx(np.abs(table - exact).max(), rel=1e-6)}


@pytest.mark.parametrize("code", list(MESSAGES))
def test_messages_in_plain_words(code):
    build, words = MESSAGES[code]
    finding = next(f for f in posenc.diagnose(build()).findings if f.code == code)
    missing = [word for word in words if word not in finding.message]
    assert not missing, f"{finding.message!r} lacks {missing}"
    assert finding.to_dict() == {"code": code, "message": finding.message, **finding.details}


def test_the_zero_column_message_whole():
    # guided_diffusion pads d_model = 6 to 7 columns: the sentence names both widths and the call.
    finding = posenc.diagnose(_by_name("guided_diffusion", 10, 7)).findings[-1]
    assert finding.code == "zero_column" and finding.details == {"columns": [6]}
    assert finding.message == (
        "column 6 is all zeros: the odd width 7 was padded with a zero column after the 6 columns of d_model = 6 "
        "described here (tensor2tensor, fairseq and diffusers pad so); the paper's formula fills it with "
        "sin(pos / 10000^(6/7)): posenc.positional_encoding(length, 7)")


@pytest.mark.parametrize("padded", [_by_name("guided_diffusion", 10, 7), _by_name("code_test_zero_row", 10, 6)],
                         ids=["zero column", "zero row"])
def test_a_transposed_table_has_its_zero_lines_named_as_the_encoding_lies(padded):
    # The findings speak of the encoding's rows (positions) and columns: transposed, a padded column
    # is still a padded column, not a zero row, and a padding row still a padding row.
    def zero_lines(table):
        return [f for f in posenc.diagnose(table).findings if f.code in ("zero_column", "zero_row")]

    assert posenc.diagnose(np.ascontiguousarray(padded.T)).codes[0] == "transposed"
    assert zero_lines(np.ascontiguousarray(padded.T)) == zero_lines(padded) != []


def test_a_table_of_one_column_is_the_paper_s_first_sine():
    # d_model = 1: a single column, sin(pos); a cosine there is the swapped pair's
    assert posenc.diagnose(posenc.positional_encoding(10, 1)).codes == ["matches"]
    assert posenc.diagnose(np.cos(np.arange(10.0))[:, None]).codes == ["swapped_sin_cos"]


def test_other_exponent_slips_are_named():
    found = posenc.diagnose(learner_column_exponent(10, 6, np.float32)).findings[0]
    assert found.details == {"exponent": "k/d"} and "k/d" in found.message
    assert posenc.diagnose(learner_double_column_exponent(10, 6)).findings[0].details == {"exponent": "2k/d"}
    two_l = posenc.diagnose(_two_length_exponent(10, 6)).findings
    assert [f.code for f in two_l] == ["exponent_scaled"] and two_l[0].details["exponent"] == "2i/L"
    assert "divides by the table's length L = 10 where the paper divides by d_model = 6" in two_l[0].message
    assert two_l[0].details["exponent_scale"] == pytest.approx(0.6, rel=1e-6)
    standardised = posenc.diagnose(_by_name("pe_study", 10, 6)).findings[-1]
    assert standardised.code == "scaled" and "the table was standardised (its mean subtracted, divided by its " \
        "standard deviation, perhaps times a constant); the encoding itself lies in [-1, 1], with 0 and 1 in row 0: " \
        "undo the normalisation, or keep it knowing the values are no longer sin and cos" in standardised.message
    table = _by_name("pe_study", 10, 6)
    assert standardised.details["shift"] == pytest.approx(table[0, 0], rel=1e-6)
    assert standardised.details["factor"] == pytest.approx(table[0, 1] - table[0, 0], rel=1e-6)


@pytest.mark.parametrize("size", [(10, 6), (50, 64)])
def test_unknown_says_where_and_by_how_much(size):
    table = _by_name("stackoverflow_power", *size)
    found = posenc.diagnose(table)
    assert found.codes == ["unknown"]
    details = found.findings[0].details
    row, column = details["row"], details["column"]
    paper = reference.paper_table(np.arange(size[0]), size[1])
    assert details["value"] == table[row, column] and details["paper_value"] == pytest.approx(paper[row, column])
    assert np.abs(table - paper).max() == pytest.approx(abs(table[row, column] - paper[row, column]))
    assert details["allowed"] == pytest.approx(2e-6 + 1e-5 + 1e-6 * abs(row * 10000 ** (-2 * (column // 2) / size[1])))
    assert details["nearest"] and details["max_deviation"] > 0.1  # what the nearest explanation misses by
    assert details["tolerance"] == 2e-6  # a float64 array carries no rounding: the float32 rounding allowance only


def test_the_probe_samples_the_whole_width():
    # The fit screens candidates on a probe: the first and last 16 columns of a wide table and
    # more spread over all of it, so no stretch of columns wider than one step of the spread is unseen.
    from posenc.forensics.diagnosis import _probe, _entries

    probe = _probe(_entries(learner_paper(30, 200), None))
    columns = probe.columns
    assert set(range(16)) | set(range(184, 200)) <= set(columns)
    assert np.diff(columns).max() <= round(199 / 31) + 1 and len(columns) <= 64


def test_str_opens_with_the_verdict():
    paper = str(posenc.diagnose(learner_paper(10, 6))).splitlines()
    assert paper[0] == "This is the paper's table."
    assert paper[1].startswith("- matches: the paper's table: sin at even columns")
    swapped = str(posenc.diagnose(learner_swapped(10, 6))).splitlines()
    assert swapped[0] == "This is not the paper's table:" and swapped[1].startswith("- swapped_sin_cos: columns 0, 2, 4")
    unknown = str(posenc.diagnose(_by_name("stackoverflow_power", 10, 6))).splitlines()
    assert unknown[0] == "Nothing in the catalog explains this table." and unknown[1].startswith("- unknown: ")


def test_diagnosis_to_dict_in_process():
    found = posenc.diagnose(learner_base_1000(20, 16).T)
    report = found.to_dict()
    assert report == {
        "matches_paper": False,
        "shape": [16, 20],
        "max_deviation": found.max_deviation,
        "findings": [f.to_dict() for f in found.findings],
        "alternatives": [],
    }
    assert [f["code"] for f in report["findings"]] == ["transposed", "wrong_base"]
    assert report["findings"][0]["shape"] == [16, 20] and report["findings"][1]["base"] == 1000
    assert report["findings"][1]["exponent_scale"] == pytest.approx(0.75)
    assert found.max_deviation < 1e-12
    assert json.loads(json.dumps(report)) == report


def test_str_of_a_named_convention_and_of_alternatives_with_several_codes():
    # A Diagnosis as a caller may build one: the head for a named convention that is not the
    # paper's and has nothing else to say, and alternatives of two codes, joined in words.
    from posenc.forensics.diagnosis import Finding

    named = posenc.Diagnosis((Finding("matches", "convention 'x'", {"conventions": ["tensor2tensor"]}),), (4, 8), 0.0,
                             alternatives=(("swapped_sin_cos", "position_offset"), ()))
    assert str(named) == ("A known convention:\n- matches: convention 'x'\n"
                          "  (as well explained by: swapped_sin_cos, position_offset)\n"
                          "  (as well explained by: the paper itself)")


def test_integer_division_per_column_is_named_whole():
    # 2k // d per column k: exponent 0 in the first half of the columns, 1 in the second
    k = np.arange(6)
    angles = np.arange(10.0)[:, None] / 10000.0 ** ((2 * k) // 6)
    found = posenc.diagnose(np.where(k % 2 == 0, np.sin(angles), np.cos(angles))).findings
    assert [f.message for f in found] == [
        "the exponent 2k/d is 0 in the first half of the columns and 1 in the second: the exponent was computed with "
        "integer division (//, or integer arrays or tensors); make it a float division, e.g. 2 * i / float(d_model)"]


def test_equally_good_fits_are_alternatives():
    # Two columns: the exponent 2k/d of column 1 is 1, and so is the integer division 2k // d.
    table = learner_double_column_exponent(6, 2)
    found = posenc.diagnose(table)
    assert found.codes == ["exponent_per_column"] and found.alternatives == (("integer_division",),)
    assert "(as well explained by: integer_division)" in str(found)
    assert found.to_dict()["alternatives"] == [["integer_division"]]


def test_a_table_over_two_to_the_twenty_entries():
    table = posenc.positional_encoding(4100, 256, layout="sin_cos")  # 1 049 600 entries
    assert table.size > 2**20
    assert posenc.diagnose(table).codes == ["matches", "layout"]
    swapped = table[:, np.r_[128:256, 0:128]]  # cos | sin
    found = posenc.diagnose(swapped)  # no preset writes cos_sin with the paper's frequencies
    assert found.codes == ["layout"] and found.findings[0].details["layout"] == "cos_sin"


def test_a_long_table_wrong_in_one_entry_of_row_0_is_no_match():
    # Past 2048 rows the check runs in blocks; the fit's probe reads columns 0-15, the last 16 and
    # 32 spread ones, so only the whole-table check sees row 0, column 17.
    table = posenc.positional_encoding(3000, 256, dtype=np.float64)
    table[0, 17] = 0.5
    assert posenc.diagnose(table).codes == ["unknown"]


def test_a_big_named_convention_table_with_one_wrong_row_is_no_match():
    # Over 2**20 entries the presets are told apart on 1024 spread rows; row 21 is not one of
    # them, and a table wrong there is still not tensor2tensor's.
    table = posenc.positional_encoding(4100, 256, convention="tensor2tensor", dtype=np.float64)
    assert posenc.diagnose(table).codes == ["matches", "layout"]
    table[21] = 0.5
    found = posenc.diagnose(table)
    assert found.codes == ["unknown"], str(found)


@pytest.mark.parametrize("name", ["tensor2tensor", "whisper"])
def test_transposed_named_conventions(name):
    table = posenc.positional_encoding(30, 16, convention=name, dtype=np.float64).T
    found = posenc.diagnose(table)
    assert found.codes == ["matches", "transposed", "layout"] and name in found.findings[0].details["conventions"]
    assert found.findings[1].details["shape"] == [16, 30]  # as it lies


def test_odd_width_named_convention_keeps_its_padded_column_last():
    # tensor2tensor pads an odd width with a zero column after sin | cos: the permutation to
    # the interleaved order must move the 3 + 3 columns into pairs and leave that column last.
    table = posenc.positional_encoding(12, 7, convention="tensor2tensor", dtype=np.float64)
    found = posenc.diagnose(table)
    assert found.codes == ["matches", "layout"] and "tensor2tensor" in found.findings[0].details["conventions"]
    perm = found.findings[1].details["permutation"]
    assert perm == [0, 3, 1, 4, 2, 5, 6]
    interleaved = table[:, perm]
    np.testing.assert_allclose(interleaved[:, 0:6:2] ** 2 + interleaved[:, 1:6:2] ** 2, 1.0, atol=1e-12)
    assert not interleaved[:, 6].any()


def test_odd_width_cos_sin_table():
    table = posenc.positional_encoding(12, 7, layout="cos_sin", dtype=np.float64)
    found = posenc.diagnose(table)
    assert found.codes == ["layout"]  # a convention no named preset writes
    perm = found.findings[0].details["permutation"]
    np.testing.assert_allclose(table[:, perm], reference.paper_table(np.arange(12), 7), atol=1e-12)


@pytest.mark.parametrize("shape", [(10, 1, 6), (1, 10, 1, 6)])
def test_inner_axes_of_length_one(shape):
    table = learner_paper(10, 6).reshape(shape)  # the PyTorch tutorial's (max_len, 1, d_model)
    assert posenc.diagnose(table).codes == ["matches"]
    assert posenc.diagnose(repr(table)).codes == ["matches"]


# --- robustness --------------------------------------------------------------------------------


def test_the_table_that_overflowed_math_exp():
    # The Stack Overflow question's powers of the position at 100 x 512: reading a base off it
    # overflowed math.exp on main. Now it is an honest unknown.
    assert posenc.diagnose(_by_name("stackoverflow_power", 100, 512)).codes == ["unknown"]


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 12), st.integers(1, 24),
       st.sampled_from([1e-300, 1e-6, 1.0, 1e6, 1e300]))
def test_no_exception_on_any_finite_table(seed, length, width, scale):
    table = np.random.default_rng(seed).standard_normal((length, width)) * scale
    assert posenc.diagnose(table).codes
    assert posenc.diagnose(np.zeros((length, width))).codes
    assert posenc.diagnose(np.full((length, width), scale)).codes


@pytest.mark.parametrize("base", [10.0, 1e6, 1e8])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_10x6_table_far_from_10000_is_read_from_its_values(base, dtype):
    # At 10 x 6 the slow columns of base 1e6 turn by under 0.02 per row: read off the angle
    # of each sine and its cosine, not off second differences.
    found = posenc.diagnose(_interleave(_angles(10, 6, dtype, base=base)))
    assert found.codes == ["exponent_scaled" if base == 1e8 else "wrong_base"], str(found)
    assert found.findings[0].details["base"] == base


def test_bfloat16_tensors_and_prints():
    torch = pytest.importorskip("torch")
    for table, codes in [(learner_paper(10, 6), ["matches"]), (learner_swapped(50, 64), ["swapped_sin_cos"])]:
        tensor = torch.from_numpy(table).to(torch.bfloat16)
        expected = [*codes, "half_precision"]
        assert posenc.diagnose(tensor).codes == expected
        assert posenc.diagnose(repr(tensor), shape=table.shape).codes == expected
        assert posenc.diagnose(tensor).findings[-1].details["dtype"] == "bfloat16"


def test_float16_print_without_dtype_is_told_by_its_digits():
    half = learner_paper(10, 6).astype(np.float16)
    assert parse_printed(str(half)).dtype == "float16"  # NumPy's print names no dtype
    assert parse_printed(str(half.astype(np.float32))).dtype is None
    with np.printoptions(precision=4, suppress=True):  # a rounded float32 print is not float16
        assert parse_printed(str(learner_paper(10, 6, np.float32))).dtype is None


@pytest.mark.parametrize(("ks", "dtype"), [
    (range(600, 606), "float16"),  # subnormals, in [2**-15, 2**-14)
    (range(1030, 1036), "float16"),  # the lowest normal binade, [2**-14, 2**-13)
    (range(1030, 1035), None), (range(600, 605), None),
    ([0] * 10, None),  # a zero is every dtype's
])
def test_float16_evidence_is_each_values_spacing(ks, dtype):
    # k * 2**-24 printed to 1e-8 lands that close to a float16 by chance with odds 1e-8 / 2**-24,
    # 10**-0.775 per value: six such values are evidence (odds below 1e-4), five are not.
    text = "[" + " ".join(f"{k * 2.0**-24:.8f}" for k in ks) + "]"
    assert parse_printed(text).dtype == dtype


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_a_half_precision_table_is_allowed_its_rounding(dtype):
    # Half an ulp, relative: what rounding to the dtype moved each entry by, at most.
    from posenc.forensics import printed

    unit = np.float16 if dtype == "float16" else pytest.importorskip("ml_dtypes").bfloat16
    exact = posenc.positional_encoding(50, 16, dtype=np.float64)
    held = exact.astype(unit).astype(np.float64)
    allowed = printed.half_tolerance(held.astype(np.float64), dtype)
    assert np.all(np.abs(held - exact) <= allowed) and np.abs(held - exact).max() > 0
    np.testing.assert_array_equal(printed.half_tolerance(np.array([1.0, -0.5]), None), [0.0, 0.0])
