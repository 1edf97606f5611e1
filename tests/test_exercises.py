"""The notebooks' exercises answer back: the reference solution is correct, every known mistake
gets its own message, and the generic comparison names what a wrong array shows."""

import contextlib
import dataclasses
import functools
import gettext
import importlib
import io
import math
import pkgutil
import re
import string
import types

import numpy as np
import pytest
from babel.messages import pofile

import posenc
import posenc.exercises
from posenc.exercises import Exercise, compare_arrays, nb01, nb04, nb05, nb10  # NumPy and posenc only: cheap to load
from posenc.language import LOCALE_DIR, using_language


def exercises():
    found = []
    for module in pkgutil.iter_modules(posenc.exercises.__path__):
        try:
            loaded = importlib.import_module(f"posenc.exercises.{module.name}")
        except ImportError as missing:  # a framework this stack lacks: skip its exercises only
            found.append(pytest.param(None, id=module.name, marks=pytest.mark.skip(reason=str(missing))))
            continue
        found += [pytest.param(value, id=f"{module.name}.{name}") for name, value in vars(loaded).items() if isinstance(value, Exercise)]
    return found


EXERCISES = exercises()


@pytest.mark.parametrize("exercise", EXERCISES)
def test_the_solution_is_correct(exercise):
    answer = exercise.solution_code if exercise.cases else exercise.solution_code()
    feedback = exercise.check(answer)
    assert feedback.ok and str(feedback).startswith("Correct!"), feedback


@pytest.mark.parametrize("exercise", EXERCISES)
def test_each_known_mistake_gets_its_message(exercise):
    assert exercise.mistakes, f"{exercise.name} names no typical mistake"
    for message, wrong in exercise.mistakes:
        feedback = exercise.check(wrong if exercise.cases else wrong())
        assert not feedback.ok and message in str(feedback), (message, feedback)


@pytest.mark.parametrize("exercise", EXERCISES)
def test_solution_and_hint_print(exercise, capsys):
    exercise.solution()
    exercise.hint()
    printed = capsys.readouterr().out
    assert printed.startswith("def ") and "Hint: " in printed and "pragma" not in printed


def _pragmatic_solution(n):
    # pragma: no mutate block (what mutmut reads, not the learner)
    rows = np.arange(n)  # the rows  # pragma: no mutate (a reason)
    return 2 * rows  # pragma: no mutate


def test_a_solution_prints_without_the_pragmas_for_mutmut(capsys):
    Exercise("double", _pragmatic_solution, "twice arange", cases=[(3,)], argument_names=["n"]).solution()
    assert capsys.readouterr().out == "def _pragmatic_solution(n):\n    rows = np.arange(n)  # the rows\n    return 2 * rows\n"


def test_a_function_answer_that_raises_is_reported_with_its_case():
    exercise = Exercise("double", lambda n: 2 * np.arange(n), "twice arange", cases=[(3,)], argument_names=["n"])
    assert str(exercise.check(lambda n: 1 / 0)) == "Not yet (for n=3): your function raised ZeroDivisionError: division by zero"
    assert str(exercise.check(np.arange(3))) == "Not yet: double asks for a function, got ndarray"
    assert exercise.check(lambda n: np.arange(0, 2 * n, 2))


TABLE = posenc.positional_encoding(10, 6, dtype=np.float64)


@pytest.mark.parametrize(
    "got, message",
    [
        (None, "your answer is None: does your function end with `return ...`?"),
        (..., "your answer is still `...`: replace it with your code"),
        ("table", "your answer should be an array or a number, got str"),
        (TABLE.T, "your array has shape (6, 10), the transpose of the expected (10, 6)"),
        (TABLE[:, :4], "your array has shape (10, 4), expected (10, 6)"),
        (np.where(TABLE == 1, np.nan, TABLE)[:2], "your array has shape (2, 6), expected (10, 6)"),
        (np.where(TABLE == 1, np.nan, TABLE), "your array has 3 NaN or infinite entries, the first at [0, 1]"),
        (-TABLE, "every entry has the wrong sign"),
        (TABLE[:, [1, 0, 3, 2, 5, 4]], "the two columns of every pair are swapped (sine where the cosine belongs?)"),
        (TABLE[:, [0, 2, 4, 1, 3, 5]], "the right columns in another order: your column 1 is column 2 of the expected"),
        (posenc.encode(np.arange(1, 11), 6, dtype=np.float64), "your row p holds the expected row p + 1: do your positions start at 0?"),
        (2.5 * TABLE, "your answer is 2.5 times the expected one"),
        # entries 4 and 33 (row 5, column 3) moved by 0.004 and 0.033
        (TABLE + np.where(np.arange(60).reshape(10, 6) % 29 == 4, 1e-3 * np.arange(60).reshape(10, 6), 0),
         "2 of 60 entries differ; the largest difference is at [5, 3]: yours 1.00619, expected 0.97319"),
    ],
)
def test_compare_arrays_names_what_is_wrong(got, message):
    assert compare_arrays(got, TABLE) == message


def test_a_table_of_one_pair_with_sine_and_cosine_swapped_is_named():
    pair = TABLE[:, :2]  # d_model = 2: the fewest columns a swap can be read in
    assert compare_arrays(pair[:, ::-1], pair) == "the two columns of every pair are swapped (sine where the cosine belongs?)"


def test_compare_arrays_reads_one_row_as_columns():
    # One row of the table, PE(3): its entries are the columns, so pairs and orders are named as in a table.
    row = TABLE[3]
    assert str(compare_arrays(row[[1, 0, 3, 2, 5, 4]], row)) == "the two columns of every pair are swapped (sine where the cosine belongs?)"
    assert (str(compare_arrays(row[[1, 0, 2, 3, 4, 5]], row))
            == "the right columns in another order: your column 0 is column 1 of the expected")


def test_compare_arrays_reads_a_column_of_positions_as_rows():
    message = "your row p holds the expected row p + 1: do your positions start at 0?"
    assert str(compare_arrays(np.arange(1.0, 11), np.arange(10.0))) == message


def test_compare_arrays_reads_framework_arrays_and_tolerates_float32_rounding():
    torch = pytest.importorskip("torch")
    assert compare_arrays(torch.tensor(TABLE, requires_grad=True), TABLE.astype(np.float32)) is None


def test_an_array_argument_is_named_by_its_shape():
    exercise = Exercise("add", lambda x: x + 1, "add one", cases=[(np.zeros((2, 3)),)], argument_names=["x"])
    assert str(exercise.check(lambda x: x)) == "Not yet (for x=an array of shape (2, 3)): 6 of 6 entries differ; " \
        "the largest difference is at [0, 0]: yours 0, expected 1"


# The feedback in the learner's language: gettext domain "exercises", catalogs in posenc/locale.

TRANSLATED = ("pt_BR", "zh_CN")


def read_po(path):
    """msgid -> (msgstr, flags) of a gettext catalog (the header, msgid "", left out)."""
    with path.open("rb") as f:
        return {m.id: (m.string, m.flags) for m in pofile.read_po(f) if m.id}


def placeholders(text):
    return sorted(name for _, name, _, _ in string.Formatter().parse(text) if name is not None)


TEMPLATE = read_po(LOCALE_DIR / "exercises.pot")


def test_the_template_has_the_exercises_messages():
    assert len(TEMPLATE) > 200 and "Not yet: {problem}" in TEMPLATE and "every entry has the wrong sign" in TEMPLATE


@pytest.mark.parametrize("exercise", EXERCISES)
def test_every_hint_mistake_and_praise_is_marked_for_the_catalogs(exercise):
    texts = [exercise.hint_text, exercise.praise, *(message for message, _ in exercise.mistakes)]
    unmarked = [text for text in texts if text and text not in TEMPLATE]
    assert not unmarked, f"not in posenc/locale/exercises.pot (mark with N_, then `make catalogs`): {unmarked}"


@pytest.mark.parametrize("language", TRANSLATED)
def test_every_message_is_translated_keeping_its_placeholders(language):
    path = LOCALE_DIR / language / "LC_MESSAGES" / "exercises.po"
    catalog = read_po(path)
    missing = [msgid for msgid in TEMPLATE if msgid not in catalog or not catalog[msgid][0]]
    fuzzy = [msgid for msgid in TEMPLATE if msgid in catalog and "fuzzy" in catalog[msgid][1]]
    changed = [msgid for msgid in TEMPLATE if msgid in catalog and placeholders(catalog[msgid][0]) != placeholders(msgid)]
    assert (missing, fuzzy, changed) == ([], [], [])
    # What learners see is the compiled catalog: it holds the same translations.
    with (path.with_suffix(".mo")).open("rb") as compiled:
        translations = gettext.GNUTranslations(compiled)
    stale = [msgid for msgid in TEMPLATE if translations.gettext(msgid) != catalog[msgid][0]]
    assert not stale, f"{path.with_suffix('.mo')} is older than its .po: `scripts/translations.py build`"


def test_english_by_default():
    assert posenc.language.get_language() == "en"
    assert str(nb01.table.check(lambda n, d: nb01._table(n, d, swap=True))) == \
        "Not yet (for length=10, d_model=6): sine and cosine are swapped: the even columns hold the sines"
    with using_language("pt_BR"):
        assert compare_arrays(-TABLE, TABLE) != "every entry has the wrong sign"
    assert compare_arrays(-TABLE, TABLE) == "every entry has the wrong sign"


FEEDBACK = {
    "pt_BR": {
        "mistake": "Ainda não (para length=10, d_model=6): seno e cosseno estão trocados: as colunas pares guardam os senos",
        "wavelength": "Ainda não (para i=3, d_model=16, base=10000.0): isso é a frequência w_i (radianos por posição); "
                      "o comprimento de onda é o número de posições por volta, 2π / w_i",
        "raised": "Ainda não (para length=10, d_model=6): sua função levantou ZeroDivisionError: division by zero",
        "sign": "todas as entradas estão com o sinal trocado",
        "shape": "seu array tem formato (10, 4), esperado (10, 6)",
        "rows": "sua linha p contém a linha esperada p + 1: suas posições começam em 0?",
        "offset": "Ainda não (para d_model=8, base=100.0): k = 1000 é grande demais: "
                  "um deslocamento menor já chega mais perto de PE(p) do que a vizinha",
        "layout": "Ainda não: as colunas certas em outra ordem: sua coluna k é a coluna [0, 2, 4, 6, 1, 3, 5, 7][k] "
                  "do layout do artigo (s0, c0, s1, c1, ...)",
        "rows10": "Ainda não: a linha 0 (tempo) erra primeiro no token 2 (a imagem): seu valor 3, esperado 2",
        "correct": "Correto! O último é 10000^((d - 2) / d) para d par: logo abaixo de 10000.",
        "hint": "Dica: um denominador por par de colunas: 10000 elevado a 2i / d_model, para 2i = 0, 2, 4, ...",
    },
    "zh_CN": {
        "mistake": "还不对（length=10, d_model=6 时）：正弦和余弦交换了：偶数列放的是正弦",
        "wavelength": "还不对（i=3, d_model=16, base=10000.0 时）：这是频率 w_i（每个位置的弧度）；波长是转一圈所需的位置数，2π / w_i",
        "raised": "还不对（length=10, d_model=6 时）：你的函数抛出了 ZeroDivisionError: division by zero",
        "sign": "每个元素的符号都反了",
        "shape": "你的数组形状是 (10, 4)，应为 (10, 6)",
        "rows": "你的第 p 行是应有的第 p + 1 行：你的位置是从 0 开始的吗？",
        "offset": "还不对（d_model=8, base=100.0 时）：k = 1000 太大了：更小的偏移就已经比相邻的行更接近 PE(p)",
        "layout": "还不对：列是对的，但顺序不同：你的第 k 列是论文布局 (s0, c0, s1, c1, ...) 中的第 [0, 2, 4, 6, 1, 3, 5, 7][k] 列",
        "rows10": "还不对：第 0 行（时间）第一次出错是在第 2 个 token（图像）：你的是 3，应为 2",
        "correct": "正确！当 d 为偶数时，最后一个是 10000^((d - 2) / d)：略小于 10000。",
        "hint": "提示：每对列一个分母：10000 的 2i / d_model 次方，其中 2i = 0, 2, 4, ...",
    },
}


def feedback_of_each_kind():
    """One message of each kind: a known mistake, an error, compare_arrays, a module's own comparison, praise, hint."""
    wrong_rows = nb10.mrope_rows_solution()
    wrong_rows[0, 2] += 1
    return {
        "mistake": str(nb01.table.check(lambda n, d: nb01._table(n, d, swap=True))),
        "wavelength": str(nb04.wavelength.check(lambda i, d, b: b ** (-2 * i / d))),
        "raised": str(nb01.table.check(lambda n, d: 1 / 0)),
        "sign": compare_arrays(-TABLE, TABLE),
        "shape": compare_arrays(TABLE[:, :4], TABLE),
        "rows": compare_arrays(posenc.encode(np.arange(1, 11), 6, dtype=np.float64), TABLE),
        "offset": str(nb04.first_alias.check(lambda d, b: 1000)),
        "layout": str(nb05.to_paper_layout.check(nb05.theirs)),  # Whisper's sin_cos columns as they are
        "rows10": str(nb10.mrope_rows.check(wrong_rows)),
        "correct": str(nb01.denominators.check(nb01.denominators_solution)),
        "hint": _printed(nb01.denominators.hint),
    }


def _printed(function):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        function()
    return out.getvalue().rstrip("\n")


@pytest.mark.parametrize("language", TRANSLATED)
def test_feedback_in_the_language_set(language):
    with using_language(language):
        found = feedback_of_each_kind()
    assert found == FEEDBACK[language]
    # English again outside the block, and for the same answers.
    assert feedback_of_each_kind()["mistake"].startswith("Not yet (for length=10, d_model=6): sine and cosine are swapped")


@pytest.mark.parametrize("language", TRANSLATED)
def test_set_language_holds_for_later_checks(language):
    """The translated notebooks set the language in a cell of their own; the checks come cells later."""
    try:
        posenc.language.set_language(language)
        feedback = nb01.table.check(lambda n, d: nb01._table(n, d, swap=True))
    finally:
        posenc.language.set_language("en")
    assert str(feedback) == FEEDBACK[language]["mistake"] and not feedback.ok


@pytest.mark.parametrize("language", TRANSLATED)
def test_every_known_mistake_of_notebook_01_in_the_language_set(language):
    catalog = read_po(LOCALE_DIR / language / "LC_MESSAGES" / "exercises.po")
    frame = {"pt_BR": "Ainda não (para ", "zh_CN": "还不对（"}[language]
    for exercise in (nb01.denominators, nb01.table):
        for message, wrong in exercise.mistakes:
            with using_language(language):
                feedback = str(exercise.check(wrong))
            assert feedback.startswith(frame) and feedback.endswith(catalog[message][0]), feedback


# Notebooks 01-06, each exercise three ways: every message of its comparison read word for word, its
# reference solution against an independent computation (posenc's library, NumPy, the documented
# formula), and each known mistake written by another route than the exercise's mistake maker.

def _columns(angles, even=np.sin, odd=np.cos):
    """A table from per-column angles (length, d): ``even`` at the even columns, ``odd`` at the odd ones."""
    return np.where(np.arange(angles.shape[-1]) % 2 == 0, even(angles), odd(angles))


def _pair_angles(length, d_model, base=10000.0, first=0):
    """Each column's angle in the paper's table, pair i's angle in columns 2i and 2i + 1."""
    return np.repeat(posenc.angles(np.arange(first, first + length), d_model, base), 2, axis=-1)[:, :d_model]


def _gets_mistake(exercise, number, answer, cases=None):
    """Whether ``answer`` gets the message of mistake ``number`` on some case and a known mistake's on every case where
    it is wrong, each case checked alone: check() stops at the first case a mistake explains, which would hide a maker
    that is wrong on the other cases (where two makers agree, the first listed speaks)."""
    alone = [dataclasses.replace(exercise, cases=[case]) for case in cases or exercise.cases] or [exercise]
    wrong = [str(feedback) for feedback in (one.check(answer) for one in alone) if not feedback]
    said = [re.fullmatch(r"Not yet(?: \(for .*?\))?: (.*)", feedback, re.DOTALL) for feedback in wrong]
    known = [message for message, _ in exercise.mistakes]
    return all(found and found[1] in known for found in said) and exercise.mistakes[number][0] in [found[1] for found in said]


TOY = Exercise("double", lambda n, x: 2 * x, "twice x", cases=[(3, np.ones(2))], praise="Twice.",
               mistakes=[("not doubled", lambda n, x: x), ("raises", lambda n, x: 1 / 0), ("right anyway", lambda n, x: x + x)])


@pytest.mark.parametrize("answer, message", [
    (lambda n, x: 2 * x, "Correct! Twice."),
    (lambda n, x: x, "Not yet (for argument 0=3, argument 1=an array of shape (2,)): not doubled"),
    (lambda n, x: -2 * x, "Not yet (for argument 0=3, argument 1=an array of shape (2,)): every entry has the wrong sign"),
    ("x", "Not yet: double asks for a function, got str"),
])
def test_an_exercise_names_unnamed_arguments_by_number_and_skips_mistakes_that_raise_or_are_right(answer, message):
    assert str(TOY.check(answer)) == message


def test_an_exercise_without_cases_checks_a_value_and_praises_plainly(capsys):
    def solution():
        return 1.5

    exercise = Exercise("value", solution, "one and a half")
    assert (str(exercise.check(1.5)), str(exercise.check(3.0))) == ("Correct!", "Not yet: your answer is 2 times the expected one")
    exercise.hint()
    exercise.solution()
    assert capsys.readouterr().out == "Hint: one and a half\ndef solution():\n    return 1.5\n"


def test_compare_arrays_allows_1e_6_absolute_and_1e_5_relative_by_default():
    assert compare_arrays(TABLE + 9e-7, TABLE) is None  # the zeros of row 0 too
    off = int((2e-6 > 1e-6 + 1e-5 * np.abs(TABLE)).sum())  # the entries below 0.1 in size
    assert off == 14 and compare_arrays(TABLE + 2e-6, TABLE).startswith(f"{off} of 60 entries differ")
    assert compare_arrays(TABLE + 2e-6, TABLE, atol=3e-6) is None


def test_rows_that_start_earlier_are_named_with_a_minus():
    assert compare_arrays(posenc.encode(np.arange(-2, 8), 6, dtype=np.float64), TABLE) == \
        "your row p holds the expected row p - 2: do your positions start at 0?"


def test_notebook_01_solutions_are_posenc_s_denominators_and_table():
    assert nb01.denominators.check(posenc.denominators)
    assert nb01.table.check(lambda n, d: posenc.positional_encoding(n, d, dtype=np.float64))


@pytest.mark.parametrize("exercise, number, answer", [
    (nb01.denominators, 0, lambda d: posenc.denominators(2 * d)[:d]),  # 10000^(k/d) for each column k
    (nb01.denominators, 1, posenc.frequencies),
    (nb01.denominators, 2, lambda d: posenc.denominators(2 * d)[: (d + 1) // 2]),
    (nb01.table, 0, lambda n, d: _columns(_pair_angles(n, d), np.cos, np.sin)),
    (nb01.table, 1, lambda n, d: _columns(posenc.angles(np.arange(n), 2 * d)[:, :d])),  # column k turns at 10000^(-k/d)
    (nb01.table, 2, lambda n, d: _columns(np.arange(n)[:, None] * 10000.0 ** (-2 * np.arange(d) / d))),
    (nb01.table, 3, lambda n, d: posenc.encode(np.arange(1, n + 1), d, dtype=np.float64)),
    (nb01.table, 4, lambda n, d: posenc.positional_encoding(n, d, base=1000.0, dtype=np.float64)),
])
def test_notebook_01_mistakes_written_another_way_get_their_message(exercise, number, answer):
    assert _gets_mistake(exercise, number, answer)


def test_notebook_04_solutions_are_posenc_s_wavelengths_and_shift_matrix():
    assert nb04.wavelength.check(lambda i, d, b: posenc.wavelengths(d, b)[i])
    assert nb04.rotation.check(lambda k, i, d: posenc.shift_matrix(k, d)[2 * i : 2 * i + 2, 2 * i : 2 * i + 2])


def _first_alias(d_model, base):
    """The first offset k >= 2 whose row of posenc's table is closer to row 0 than row 1 is."""
    table = posenc.positional_encoding(2000, d_model, base=base, dtype=np.float64)
    far = np.linalg.norm(table - table[0], axis=1)
    return 2 + int(np.argmax(far[2:] < far[1]))


def test_notebook_04_first_alias_is_the_offset_measured_on_posenc_s_table():
    assert [_first_alias(*case) for case in nb04.first_alias.cases] == [377, 101, 50, 19]
    assert nb04.first_alias.check(_first_alias)


@pytest.mark.parametrize("k", [0, 3, 377, [1, 377, 2000]])
def test_notebook_04_distance_by_offset_is_the_distance_between_rows(k):
    # The helper the hint offers, for one offset or several, against the rows of posenc's table.
    table = posenc.positional_encoding(2001, 16, base=100.0, dtype=np.float64)
    far = np.linalg.norm(table[k] - table[0], axis=-1)
    np.testing.assert_allclose(nb04.distance_by_offset(k, 16, 100.0), far, rtol=0, atol=1e-12)
    assert np.shape(nb04.distance_by_offset(k, 16, 100.0)) == np.shape(k)


def _block(k, i, d_model):
    return posenc.shift_matrix(k, d_model)[2 * i : 2 * i + 2, 2 * i : 2 * i + 2]


@pytest.mark.parametrize("exercise, number, answer", [
    (nb04.wavelength, 0, lambda i, d, b: posenc.wavelengths(2 * d, b)[i]),  # 2π b^(i/d)
    (nb04.wavelength, 1, lambda i, d, b: posenc.frequencies(d, b)[i]),
    (nb04.wavelength, 2, lambda i, d, b: posenc.denominators(d, b)[i]),
    (nb04.rotation, 0, lambda k, i, d: _block(-k, i, d)),
    (nb04.rotation, 1, lambda k, i, d: _block(k, i, d) * [[1, 1], [-1, 1]]),
    (nb04.rotation, 2, lambda k, i, d: _block(k, 0, 2)),  # pair 0 of d_model = 2 turns by 1 radian per position
    (nb04.first_alias, 0, lambda d, b: _first_alias(d, b) - 2),
    (nb04.first_alias, 1, lambda d, b: _first_alias(d, b) - 1),
    (nb04.first_alias, 2, lambda d, b: round(posenc.wavelengths(d, b)[-1])),
])
def test_notebook_04_mistakes_written_another_way_get_their_message(exercise, number, answer):
    assert _gets_mistake(exercise, number, answer)


@pytest.mark.parametrize("got, message", [
    (377, None),
    (377.0, None),
    (None, "your answer is still `...` or None: return a whole number, the offset k"),
    (..., "your answer is still `...` or None: return a whole number, the offset k"),
    ("k", "your answer should be a whole number (an offset k), got str"),
    ([377], "your answer should be a whole number (an offset k), got list"),
    (376, "k = 376 is too small: at that offset the row is still farther from PE(p) than the neighbour PE(p + 1)"),
    (378, "k = 378 is too large: a smaller offset already comes closer to PE(p) than the neighbour does"),
])
def test_the_offset_comparison_of_notebook_04(got, message):
    assert nb04._compare_offset(got, 377) == message


def _whisper(length, channels):
    """Whisper's ``sinusoids``: h = channels // 2 timescales from 1 to 10000, sines then cosines."""
    angles = np.arange(length)[:, None] * np.geomspace(1, 1e-4, channels // 2)
    return np.sin(angles), np.cos(angles)


def test_notebook_05_solutions_against_whisper_s_formula_geomspace_and_the_named_preset():
    sines, cosines = _whisper(6, 8)
    np.testing.assert_allclose(nb05.theirs, np.hstack([sines, cosines]), atol=1e-12)
    assert nb05.to_paper_layout.check(posenc.interleave(sines, cosines))
    assert nb05.convention.check("fairseq")
    assert nb05.h1_frequencies.check(lambda d: np.geomspace(1, 1e-4, d // 2))


@pytest.mark.parametrize("exercise, number, answer", [
    (nb05.to_paper_layout, 0, nb05.theirs[:, [0, 2, 4, 6, 1, 3, 5, 7]]),  # interleaved -> sin_cos, applied to sin_cos
    (nb05.to_paper_layout, 1, nb05.theirs[:, [4, 0, 5, 1, 6, 2, 7, 3]]),  # cos_sin -> interleaved
    (nb05.convention, 0, "tensor2tensor"),
    (nb05.convention, 1, "paper"),
    (nb05.h1_frequencies, 0, lambda d: posenc.frequencies(d)),
    (nb05.h1_frequencies, 1, lambda d: np.geomspace(1, np.exp(-4), d // 2)),  # exp(-j log10(10000) / (h - 1))
    (nb05.h1_frequencies, 2, lambda d: np.geomspace(1, 1e-4, d)),
])
def test_notebook_05_mistakes_written_another_way_get_their_message(exercise, number, answer):
    assert _gets_mistake(exercise, number, answer)


PAPER_ORDER = "(s0, c0, s1, c1, ...)"


@pytest.mark.parametrize("got, message", [
    (nb05.to_paper_layout_solution(), None),
    (nb05.theirs[:, [0, 4, 1, 5, 2, 6, 7, 3]],
     f"the right columns in another order: your column k is column [0, 1, 2, 3, 4, 5, 7, 6][k] of the paper's layout {PAPER_ORDER}"),
    (nb05.theirs[:, [4, 0, 5, 1, 6, 2, 7, 3]],
     f"the right columns in another order: your column k is column [1, 0, 3, 2, 5, 4, 7, 6][k] of the paper's layout {PAPER_ORDER}"),
    (nb05.theirs,
     f"the right columns in another order: your column k is column [0, 2, 4, 6, 1, 3, 5, 7][k] of the paper's layout {PAPER_ORDER}"),
    (nb05.theirs[:, :4], "your array has shape (6, 4), expected (6, 8)"),
])
def test_the_layout_comparison_of_notebook_05(got, message):
    assert nb05._compare_layout(got, nb05.to_paper_layout_solution()) == message


ROW_0 = "read row 0 of the table: the sines are 0 there and the cosines 1, so their order gives the layout"


@pytest.mark.parametrize("got, message", [
    ("fairseq", None),
    (1, "answer with a preset's name, a string such as 'paper' (posenc.CONVENTIONS lists them)"),
    ("Fairseq", "'Fairseq' is not a preset; posenc.CONVENTIONS lists them: " + ", ".join(posenc.CONVENTIONS)),
    ("keras-hub", f"'keras-hub' writes the interleaved layout; {ROW_0}"),
    ("hf-marian", "'hf-marian' has the layout right but other frequencies ('paper'); compare the table's slowest sine "
                  "with the paper's 10000^(-2j/d) and the 'h-1' rule"),
    ("whisper", "'whisper' has the layout and the frequencies right, but its table differs in rows [1]: look at them"),
])
def test_the_convention_comparison_of_notebook_05(got, message):
    assert nb05._compare_convention(got, "fairseq") == message


def _float32_step(x):
    return 2.0 ** (np.floor(np.log2(abs(x))) - 23)  # float32 has 23 bits after the leading one


def _steps(step):
    return step, step / 2


def _angle(position, pair, d_model):
    return posenc.angles([position], d_model)[0, pair]


def test_notebook_06_solutions_against_the_float32_format_and_posenc_s_accurate_table():
    from posenc.exercises import nb06

    assert nb06.angle_step.check(lambda p, i, d: _steps(_float32_step(_angle(p, i, d))))
    assert nb06.accurate_sine.check(lambda p, i, d: posenc.encode([p], d)[0, 2 * i])


def test_notebook_06_mistakes_take_the_lecture_s_angle():
    """Only np.spacing of it reaches the checks, which hides a small change of the angle: read it directly."""
    from posenc.exercises import nb06

    for position, pair, d_model in nb06.angle_step.cases:
        assert nb06._angle(position, pair, d_model) == pytest.approx(_angle(position, pair, d_model), rel=1e-15)
        assert nb06._angle(position, pair, d_model, per_column=True) == pytest.approx(_angle(position, pair, 2 * d_model), rel=1e-15)


def _nb06(name):
    from posenc.exercises import nb06

    return getattr(nb06, name)


@pytest.mark.parametrize("name, number, answer", [
    ("angle_step", 0, lambda p, i, d: _steps(2.0 ** (np.floor(np.log2(_angle(p, i, d))) - 52))),  # float64: 52 bits
    ("angle_step", 1, lambda p, i, d: (_float32_step(_angle(p, i, d)),) * 2),
    ("angle_step", 2, lambda p, i, d: (2.0**-23, 2.0**-24)),
    ("angle_step", 3, lambda p, i, d: _steps(_float32_step(np.sin(_angle(p, i, d))))),
    ("angle_step", 4, lambda p, i, d: _steps(_float32_step(_angle(p, i, 2 * d)))),  # pair i of twice the width: 10000^(-i/d)
    ("accurate_sine", 0, lambda p, i, d: np.sin(np.float32(_angle(p, i, d)))),
    ("accurate_sine", 1, lambda p, i, d: np.sin(np.float32(p) / np.float32(posenc.denominators(d)[i]))),
    ("accurate_sine", 2, lambda p, i, d: np.sin(np.float32(math.fmod(_angle(p, i, d), float(np.float32(math.tau)))))),
    ("accurate_sine", 3, lambda p, i, d: posenc.encode([p], d)[0, 2 * i + 1]),
    ("accurate_sine", 4, lambda p, i, d: posenc.encode([p], 2 * d)[0, 2 * i]),  # pair i of twice the width: 10000^(-i/d)
])
def test_notebook_06_mistakes_written_another_way_get_their_message(name, number, answer):
    exercise = _nb06(name)
    assert _gets_mistake(exercise, number, answer)


def test_notebook_02_solutions_against_posenc_s_table_and_the_measured_ratio():
    torch = pytest.importorskip("torch")
    from posenc.exercises import nb02

    for length, d_model in nb02.table.cases:  # float32 angles up to 99: off by at most their float32 step, 7.6e-6
        np.testing.assert_allclose(nb02.table_solution(length, d_model), posenc.positional_encoding(length, d_model, dtype=np.float64),
                                   atol=1e-5)
    assert nb02.forward.check(lambda d, n: _torch_module(torch, d, n, lambda pe, x: x + pe[: x.shape[1]]))
    assert nb02.buffer.check(lambda d, n: _torch_module(torch, d, n, lambda pe, x: x + pe[: x.shape[1]]))
    assert nb02.scale.check(_norms(768)[0] / np.mean(_norms(768)[1]))


def test_notebook_02_buffer_mistakes_are_one_mistake_each():
    """Each wrong place for the table forwards exactly what the solution does, so the place
    alone is what the check names (a learner with two mistakes hears of the forward first)."""
    pytest.importorskip("torch")
    from posenc.exercises import nb02

    expected = nb02.module_solution(16, 50)
    for message, wrong in nb02.buffer.mistakes:
        assert nb02.compare_modules(wrong(16, 50), expected) == message


def _norms(d_model):
    """Row norms of posenc's table and of embeddings of variance 1 / d_model scaled by sqrt(d_model), 300 rows each."""
    table = posenc.positional_encoding(300, d_model, dtype=np.float64)
    embeddings = np.random.default_rng(0).normal(0, d_model**-0.5, (300, d_model)) * d_model**0.5
    return np.linalg.norm(table, axis=1)[0], np.linalg.norm(embeddings, axis=1)


def _torch_module(torch, d_model, max_len, forward, store="buffer"):
    """A module holding posenc's table as ``store`` says, its forward ``forward(table, x)``."""

    class Answer(torch.nn.Module):
        def __init__(self):
            super().__init__()
            table = torch.from_numpy(posenc.positional_encoding(max_len, d_model))
            if store == "parameter":
                self.pe = torch.nn.Parameter(table)
            elif store == "attribute":
                self.pe = table
            else:
                self.register_buffer("pe", table, persistent=store == "saved buffer")

        def forward(self, x):
            return forward(self.pe, x)

    return Answer()


def _grow(length, d_model):
    """The table whose pair i turns at 10000^(+2i / d_model): the exponent's minus sign lost."""
    angles = np.arange(length)[:, None] * posenc.denominators(d_model)
    return posenc.interleave(np.sin(angles), np.cos(angles))[:, :d_model]


@pytest.mark.parametrize("name, number, answer", [
    ("table", 0, lambda n, d: posenc.encode(np.arange(1, n + 1), d)),
    ("table", 2, lambda n, d: _columns(np.repeat(np.arange(n)[:, None], d, axis=1))),  # every pair turns at 1 radian per position
    ("table", 3, lambda n, d: _columns(_pair_angles(n, d), np.cos, np.sin)),
    ("forward", 0, "table"),
    ("forward", 1, "rows"),
    ("forward", 2, "shifted"),
    ("buffer", 0, "attribute"),
    ("buffer", 1, "parameter"),
    ("buffer", 2, "saved buffer"),
    ("scale", 0, lambda: _norms(768)[0] / np.mean(_norms(768)[1] / 768**0.5)),  # the embedding's norm before the scale
    ("scale", 1, lambda: np.mean(_norms(768)[1]) / _norms(768)[0]),
    ("scale", 2, lambda: 768**0.5 / np.mean(_norms(768)[1])),  # sqrt(d_model) for the table's row norm
])
def test_notebook_02_mistakes_written_another_way_get_their_message(name, number, answer):
    torch = pytest.importorskip("torch")
    from posenc.exercises import nb02

    forwards = {
        "table": lambda pe, x: pe,
        "rows": lambda pe, x: pe[: x.shape[1]],
        "shifted": lambda pe, x: x + torch.from_numpy(posenc.encode(np.arange(1, x.shape[1] + 1), x.shape[2])),
    }
    if name == "forward":
        answer = functools.partial(_torch_module, torch, forward=forwards[answer])
    elif name == "buffer":
        answer = functools.partial(_torch_module, torch, forward=lambda pe, x: x + pe[: x.shape[1]], store=answer)
    exercise = getattr(nb02, name)
    small = [(10, 6), (10, 7)] if name == "table" else None  # float32 angles up to 9: within 1e-6 of float64 ones
    assert _gets_mistake(exercise, number, answer if exercise.cases else answer(), small)


def test_notebook_02_sign_mistake_is_the_growing_table():
    """The lost minus sign makes float32 angles up to 4177 (step 4.9e-4 there) at length 10, d_model 6 or 7, and 740000
    at d_model 64: no float64 answer matches them to 1e-5, so compare the maker itself on the small cases."""
    pytest.importorskip("torch")
    from posenc.exercises import nb02

    for length, d_model in [(10, 6), (10, 7)]:
        np.testing.assert_allclose(nb02._table(length, d_model, sign=1.0), _grow(length, d_model), atol=3e-3)


RATIO = math.sqrt(0.5)
SQUARES = "write each norm as a square root of a sum of squares"


@pytest.mark.parametrize("got, message", [
    (RATIO, None),
    (np.float32(0.6935), None),  # 1.9% below
    (0.6920, f"0.692 is less than the ratio: {SQUARES}"),  # 2.1% below
    (0.7212, None),
    (0.7228, f"0.723 is more than the ratio: {SQUARES}"),
    (1.0, f"1 is more than the ratio: {SQUARES}"),
    ([RATIO], "your answer should be one number, got list"),
    (None, "your answer should be one number, got NoneType"),
    (0.0, "a ratio of two norms is a positive number, got 0.0"),
    (-0.5, "a ratio of two norms is a positive number, got -0.5"),
    (math.inf, "a ratio of two norms is a positive number, got inf"),
])
def test_the_ratio_comparison_of_notebook_02(got, message):
    pytest.importorskip("torch")
    from posenc.exercises import nb02

    assert nb02.compare_ratio(got, RATIO) == message


PLACES = {
    "parameter": "the table is an nn.Parameter: the optimizer would train it and state_dict saves it; "
                 "register it with self.register_buffer(name, table, persistent=False)",
    "attribute": "the table is a plain attribute: module.to(device) moves parameters and buffers, not it, so forward would mix "
                 "devices on a GPU (module.to('meta') shows it on a CPU); register it with self.register_buffer",
    "saved buffer": "the table is a buffer that state_dict saves: every checkpoint stores max_len x d_model numbers that d_model "
                    "alone defines, and loads only into a model with the same max_len; pass persistent=False",
}


def _raise(pe, x):
    raise ValueError("no table")


@pytest.mark.parametrize("forward, store, message", [
    (lambda pe, x: x + pe[: x.shape[1]], "buffer", None),
    (lambda pe, x: x + pe[: x.shape[1]], "parameter", PLACES["parameter"]),
    (lambda pe, x: x + pe[: x.shape[1]], "attribute", PLACES["attribute"]),
    (lambda pe, x: x + pe[: x.shape[1]], "saved buffer", PLACES["saved buffer"]),
    (lambda pe, x: -x - pe[: x.shape[1]], "buffer", "forward(x) for x of shape (2, 7, 16): every entry has the wrong sign"),
    (lambda pe, x: pe, "parameter", "forward(x) for x of shape (2, 7, 16): your array has shape (50, 16), expected (2, 7, 16)"),
    (_raise, "buffer", "forward(x) for x of shape (2, 7, 16) raised ValueError: no table"),
    (None, "", "your class should build an nn.Module, got int"),
])
def test_the_module_comparison_of_notebook_02(forward, store, message):
    torch = pytest.importorskip("torch")
    from posenc.exercises import nb02

    got = 16 if forward is None else _torch_module(torch, 16, 50, forward, store)
    assert nb02.compare_modules(got, nb02.module_solution(16, 50)) == message


def test_the_module_comparison_runs_forward_in_eval_mode():
    torch = pytest.importorskip("torch")
    from posenc.exercises import nb02

    module = _torch_module(torch, 16, 50, lambda pe, x: module.dropout(x + pe[: x.shape[1]]))
    module.dropout = torch.nn.Dropout(0.5)  # a model's dropout after the sum: the identity in eval mode
    assert nb02.compare_modules(module, nb02.module_solution(16, 50)) is None


def _float32_exp(d_model):
    """The denominators' reciprocals of a float32 exp, as a learner writes them with tf.range in float32."""
    tf = pytest.importorskip("tensorflow")
    return tf.exp(np.arange(0, d_model, 2, dtype=np.float32) * np.float32(-math.log(10000.0) / d_model)).numpy()


def _tables(angles):
    return posenc.interleave(np.sin(angles), np.cos(angles)).astype(np.float32)


def test_notebook_03_solutions_against_posenc_s_table():
    pytest.importorskip("tensorflow")
    from posenc.exercises import nb03

    assert nb03.interleaved.check(lambda x: x + posenc.positional_encoding(x.shape[1], x.shape[2]))
    assert nb03.accurate.check(lambda n, d: posenc.positional_encoding(n, d, dtype=np.float64).astype(np.float32))
    for length, d_model in nb03.odd_width.cases:  # float32 angles up to 99: off by at most their float32 step, 7.6e-6
        np.testing.assert_allclose(nb03.odd_width_solution(length, d_model), posenc.positional_encoding(length, d_model, dtype=np.float64),
                                   atol=1e-5)


def _uncut(length, d_model):
    angles = posenc.angles(np.arange(length), d_model)
    return posenc.interleave(np.sin(angles), np.cos(angles))  # ceil(d_model / 2) pairs: one column too many for an odd d_model


@pytest.mark.parametrize("name, number, answer", [
    ("interleaved", 0, lambda x: x + posenc.positional_encoding(x.shape[1], x.shape[2], layout="cos_sin")),
    ("interleaved", 1, lambda x: x + _columns(_pair_angles(x.shape[1], x.shape[2]), np.cos, np.sin)),
    ("interleaved", 2, lambda x: np.broadcast_to(posenc.positional_encoding(x.shape[1], x.shape[2]), x.shape)),
    ("accurate", 0, lambda n, d: _tables(np.arange(n)[:, None] * _float32_exp(d).astype(np.float64))),
    ("accurate", 1, lambda n, d: _tables(np.arange(n, dtype=np.float32)[:, None] * _float32_exp(d))),
    ("odd_width", 0, lambda n, d: _columns(_pair_angles(n, d), np.cos, np.sin)),
])
def test_notebook_03_mistakes_written_another_way_get_their_message(name, number, answer):
    pytest.importorskip("tensorflow")
    from posenc.exercises import nb03

    exercise = getattr(nb03, name)
    # the float32 routes a NumPy answer follows within the tolerance only at the small cases
    small = {"accurate": [(20, 200)], "odd_width": [(10, 6), (10, 7)]}.get(name)
    assert _gets_mistake(exercise, number, answer, small)


def test_notebook_03_uncut_odd_width_is_one_cosine_too_many():
    """The float32 table of a width-64 case differs from a float64 one by 5e-6: compare the maker itself."""
    pytest.importorskip("tensorflow")
    from posenc.exercises import nb03

    for length, d_model in nb03.odd_width.cases:
        np.testing.assert_allclose(nb03._pairs(length, d_model, cut=False), _uncut(length, d_model), atol=1e-5)


PAPER_COLUMNS = "in the paper's table column 2i is the sine of pair i and column 2i + 1 its cosine"
TABLE_3D = np.stack([TABLE, TABLE + 1])  # a batch of two: the comparison reads columns across batch and positions


@pytest.mark.parametrize("got, message", [
    (TABLE_3D, None),
    (TABLE_3D[..., [0, 2, 4, 1, 3, 5]],
     f"the right columns in another order: your columns 0, 1, 2, ... hold the paper's columns [0, 2, 4, 1, 3, 5]; {PAPER_COLUMNS}"),
    (TABLE_3D[..., [1, 0, 3, 2, 5, 4]],
     f"the right columns in another order: your columns 0, 1, 2, ... hold the paper's columns [1, 0, 3, 2, 5, 4]; {PAPER_COLUMNS}"),
    (-TABLE_3D, "every entry has the wrong sign"),
    (TABLE_3D[0], "your array has shape (10, 6), expected (2, 10, 6)"),
])
def test_the_layout_comparison_of_notebook_03(got, message):
    pytest.importorskip("tensorflow")
    from posenc.exercises import nb03

    assert nb03.compare_layouts(got, TABLE_3D) == message


@pytest.mark.parametrize("got, message", [
    (np.float32(TABLE), None),  # rounded once: within 6e-8
    (TABLE + 0.9e-7, None),
    (TABLE + np.where(np.arange(60).reshape(10, 6) == 19, 1.5e-7, 0),
     "your table is off by up to 1.5e-07, at row 3, column 1: more than one rounding happened"),
    ({"table": TABLE}, "your answer should be an array or a number, got dict"),
    (TABLE[:, :5], "your array has shape (10, 5), expected (10, 6)"),
    (np.where(TABLE == 0, np.inf, TABLE), "your array has 3 NaN or infinite entries, the first at [0, 0]"),
])
def test_the_within_comparison_of_notebook_03(got, message):
    pytest.importorskip("tensorflow")
    from posenc.exercises import nb03

    assert nb03.compare_within(got, TABLE) == message


# Answers written independently of the exercises' own mistake makers (which also build some case
# tables at import): each must get its message, and a right answer written another way must pass.

def test_a_column_order_of_the_paper_table_is_named_in_full():
    pytest.importorskip("tensorflow")
    from posenc.exercises import nb03

    halves = [0, 2, 4, 6, 1, 3, 5, 7]  # all the sines, then all the cosines: not one of the known mistakes
    feedback = nb03.interleaved.check(lambda x: x + posenc.positional_encoding(x.shape[1], x.shape[2])[:, halves])
    assert "your columns 0, 1, 2, ... hold the paper's columns [0, 2, 4, 6, 1, 3, 5, 7]" in str(feedback)
    assert nb03.interleaved.check(lambda x: x + posenc.positional_encoding(x.shape[1], x.shape[2]))


def test_the_layout_cases_hold_one_value_per_batch_and_position():
    pytest.importorskip("tensorflow")
    from posenc.exercises import nb03

    x = nb03._rows_by_position(2, 3, 4).numpy()
    assert x.shape == (2, 3, 4) and (x == x[..., :1]).all()  # every column the same: a column order stays visible
    np.testing.assert_allclose(x[..., 0], [[0, 0.1, 0.2], [0.3, 0.4, 0.5]], rtol=1e-7)


def test_a_cosine_gets_the_cosine_message():
    from posenc.exercises import nb06

    def cosine(position, pair, d_model):  # column 2 * pair + 1 of posenc's table: an accurate float32 cosine
        return posenc.encode([position], d_model)[0, 2 * pair + 1]

    assert str(nb06.accurate_sine.check(cosine)).endswith("that is the cosine; column 2 * pair holds the sine")
    assert nb06.accurate_sine.check(lambda position, pair, d_model: posenc.encode([position], d_model)[0, 2 * pair])


def test_one_permutation_of_all_heads_gets_its_message():
    pytest.importorskip("torch")
    from posenc.exercises import nb08

    feedback = nb08.half_rows.check(lambda heads, head_dim: np.r_[0 : heads * head_dim : 2, 1 : heads * head_dim : 2])
    assert "you permuted all heads * head_dim rows at once" in str(feedback)


def test_qwen3_vl_channel_axes_get_the_interleaved_message():
    torch = pytest.importorskip("torch")
    qwen3_vl = pytest.importorskip("transformers.models.qwen3_vl.modeling_qwen3_vl")

    def qwen3_vl_axes(mrope_section):  # the axis transformers' Qwen3-VL reads at each channel: axis a holds a
        axes = torch.arange(3.0)[:, None].repeat(1, sum(mrope_section))
        rope = types.SimpleNamespace(mrope_section=mrope_section)
        return qwen3_vl.Qwen3VLTextRotaryEmbedding.recomposition_frequencies(rope, axes).long()

    assert "that is Qwen3-VL's interleaved order (time, height, width, time, ...)" in str(nb10.channel_axes.check(qwen3_vl_axes))


def test_alibi_slopes_of_any_head_count_are_bloom_s():
    torch = pytest.importorskip("torch")
    bloom = pytest.importorskip("transformers.models.bloom.modeling_bloom")
    from posenc.exercises import nb12

    def bloom_slopes(num_heads):  # BLOOM's bias at key position 1 is the head's slope (float32 powers of 2)
        return bloom.build_alibi_tensor(torch.ones(1, 2), num_heads, torch.float64)[:, 0, 1]

    assert nb12.alibi_slopes.check(bloom_slopes)  # 8, 12, 6 and 1 heads


def test_the_causal_bias_comparison_names_the_mask_then_the_values():
    from posenc.exercises import nb12

    i, j = np.arange(3)[:, None], np.arange(3)[None, :]
    bias = np.where(j > i, -np.inf, -0.5 * (i - j))[None]  # one head of slope 1/2
    assert nb12.compare_masked(bias.tolist(), bias) is None
    assert nb12.compare_masked(None, bias) == "your answer is None: does your function end with `return ...`?"
    assert nb12.compare_masked(..., bias) == "your answer is still `...`: replace it with your code"
    assert nb12.compare_masked("bias", bias) == "your answer should be an array or a number, got str"
    assert nb12.compare_masked(bias[0], bias) == "your array has shape (3, 3), expected (1, 3, 3)"
    assert nb12.compare_masked(np.where(j >= i, -np.inf, 0.0)[None], bias).startswith("the -inf entries are not where")
    assert nb12.compare_masked(2 * bias, bias) == "your answer is 2 times the expected one"


# Notebooks 07 to 12: each reference solution against an independent computation (posenc's library,
# a direct NumPy formula, the reference package), each module's comparison message by message, and
# each known mistake written the learner's way, not with the exercise's own mistake maker.

def _exercise_module(name):
    framework = {"nb07": "torch", "nb08": "torch", "nb11": "jax"}.get(name)
    if framework:
        pytest.importorskip(framework)
    return importlib.import_module(f"posenc.exercises.{name}")


def _solution_answer(exercise):
    return exercise.solution_code if exercise.cases else exercise.solution_code()


def _paper_table(length, d_model):
    """The paper's table in float64, straight from the formula: sin at even columns, cos at odd."""
    angles = np.arange(length)[:, None] / 10000.0 ** (np.arange(0, d_model, 2) / d_model)
    return np.stack([np.sin(angles), np.cos(angles)], axis=-1).reshape(length, d_model)


def _torch_layer_sides(m, order, second=None):
    """layer(x[:, order]) and layer(x) indexed by ``second`` (unshuffled when None), with index_select."""
    torch = pytest.importorskip("torch")
    with torch.no_grad():
        out = m.layer(m.x)
        shuffled = m.layer(m.x.index_select(1, torch.as_tensor(order)))
    return shuffled, out if second is None else out.index_select(1, torch.as_tensor(second))


def _rotated_by_posenc(position, *, base=10000.0, tables="half", pairs="half", swap=False):
    """Query 1..8 rotated at ``position`` by posenc's rotary tables and apply_rotary."""
    cos, sin = posenc.rotary_cos_sin([position], 8, base=base, layout=tables, dtype=np.float64)
    if swap:
        cos, sin = sin, cos
    return posenc.apply_rotary(np.arange(1.0, 9.0)[None], cos, sin, layout=pairs)[0]


def _llama3_frequency(base=500000.0):
    """Pair 32's frequency as transformers' llama3 rope computes it (float32)."""
    pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    from transformers.modeling_rope_utils import _compute_llama3_parameters

    config = transformers.LlamaConfig(
        head_dim=128, hidden_size=4096, num_attention_heads=32, max_position_embeddings=131072, rope_theta=base,
        rope_scaling=dict(rope_type="llama3", factor=8.0, low_freq_factor=1.0, high_freq_factor=4.0,
                          original_max_position_embeddings=8192))
    return float(_compute_llama3_parameters(config)[0][32])


def _mae(shape, d, *, positions=None, convention="mae"):
    return posenc.grid_encoding(shape, d, convention=convention, dtype=np.float64, positions=positions)


def _centres(old, new):
    """Patch i of n new patches has its centre at (2i + 1) / 2n of the image, old patch p at (2p + 1) / 2 old."""
    return [(2 * np.arange(n) + 1) * o / (2 * n) - 0.5 for o, n in zip(old, new)]


def _rope_2d_score(query, key, q, k):
    """The 2-D RoPE score of query vector q at patch ``query`` with key vector k at patch ``key`` (notebook 10)."""
    cos, sin = posenc.rope.axial_cos_sin(np.array([query, key]).T, len(q), dtype=np.float64)
    turned_q, turned_k = (posenc.apply_rotary(np.broadcast_to(v, cos.shape), cos, sin) for v in (q, k))
    return turned_q[0] @ turned_k[1]


def _per_axis_similarity(offsets, axes_dim, axis, base):
    """Mean over a head's channels of cos(angle) for ids moved by ``offsets`` along ``axis`` (posenc's per-axis RoPE)."""
    ids = np.zeros((len(offsets), len(axes_dim)))
    ids[:, axis] = offsets
    return posenc.rope.per_axis_cos_sin(ids, axes_dim, base=base, dtype=np.float64)[0].mean(axis=-1)


def _pixel_w(count, max_freq):
    return posenc.rope.pixel_frequencies(2 * count, max_freq, ndim=1).hi


def _sam(points, projection, height, width, **options):
    return posenc.sinusoidal.random_fourier_features(points, projection, input_shape=(height, width), dtype=np.float64, **options)


def _t5_buckets(relative_position, bidirectional, num_buckets, max_distance):
    torch = pytest.importorskip("torch")
    t5 = pytest.importorskip("transformers.models.t5.modeling_t5")
    return t5.T5Attention._relative_position_bucket(
        torch.as_tensor(relative_position), bidirectional=bidirectional, num_buckets=num_buckets, max_distance=max_distance,
    ).numpy()


def _alibi_by_hand(num_heads, length, *, hidden, sign=-1):
    """sign * slope * (i - j) for query i and key j, -inf where ``hidden(i, j)``."""
    i, j = np.indices((length, length))
    return np.where(hidden(i, j), -np.inf, sign * posenc.biases.alibi_slopes(num_heads)[:, None, None] * (i - j))


def _mrope_rows(time=None, height=None, width=None, after=5):
    """The ids of the exercise (text 2, image 4 x 6 patches merged 2 x 2, text 2) from posenc, image rows replaced."""
    ids = posenc.rope.mrope_position_ids([2, (1, 4, 6), 2]).copy()
    for row, values in enumerate((time, height, width)):
        if values is not None:
            ids[row, 2:8] = values
    ids[:, 8:] = after + np.arange(2)
    return ids


REFERENCES = {
    "nb07.both_sides": lambda m: lambda order: _torch_layer_sides(m, order, second=order),
    "nb07.model_input": lambda m: m.embeddings.numpy() * np.sqrt(32) + _paper_table(12, 32),
    "nb08.rotated_query": lambda m: _rotated_by_posenc(3),
    "nb08.half_rows": lambda m: lambda heads, head_dim: posenc.rotary_permutation(head_dim, "interleaved", "half", heads=heads),
    "nb08.llama3_wavelength": lambda m: 2 * np.pi / _llama3_frequency(),
    "nb09.mae_table": lambda m: lambda h, w, d: _mae((h, w), d),
    "nb09.rescaled_table": lambda m: lambda old, new, d: _mae(new, d, positions=_centres(old, new)),
    "nb10.mrope_rows": lambda m: _mrope_rows(),
    "nb10.channel_axes": lambda m: lambda section: np.tile(posenc.rope.mrope_axes(section), 2),
    "nb10.flux_ids": lambda m: posenc.rope.flux_position_ids,
    "nb10.axis_similarity": lambda m: _per_axis_similarity,
    "nb10.pixel_angles": lambda m: lambda n, count, max_freq: np.outer(-1 + 2 * np.arange(n) / (n - 1), _pixel_w(count, max_freq)),
    "nb10.sam_features": lambda m: _sam,
    "nb11.at_table": lambda m: posenc.positional_encoding,
    "nb11.compilations": lambda m: 4,  # distinct (length, d_model) among CALLS: (10, 6), (12, 6), (10, 8), (16, 8)
    "nb11.chunks": lambda m: np.stack([posenc.encode(start + np.arange(4), 8) for start in (0, 100, 7)]),
    "nb12.alibi_slopes": lambda m: posenc.biases.alibi_slopes,
    "nb12.both_ways": lambda m: lambda r, b, d: _t5_buckets(r, True, b, d),
    "nb12.causal_alibi": lambda m: lambda n, length: posenc.biases.alibi_bias(n, length, length, dtype=np.float64),
}


@pytest.mark.parametrize("name", sorted(REFERENCES))
def test_the_solution_matches_an_independent_computation(name):
    module, exercise = name.split(".")
    m = _exercise_module(module)
    feedback = getattr(m, exercise).check(REFERENCES[name](m))
    assert feedback.ok, feedback


def test_the_same_offset_solution_keeps_the_2d_rope_score():
    q, k = np.random.default_rng(10).standard_normal((2, 16))
    for query_a, key_a, query_b in nb10.same_offset.cases:
        key_b = nb10.same_offset_solution(query_a, key_a, query_b)
        assert _rope_2d_score(query_b, key_b, q, k) == pytest.approx(_rope_2d_score(query_a, key_a, q, k), rel=1e-12)


def _axis_turned(offsets, axes_dim, axis, base, w):
    """Mean over all pairs: cos(offset * w) for the axis' pairs ``w``, cos 0 = 1 for the other pairs."""
    pairs = sum(axes_dim) // 2
    return (np.cos(np.outer(offsets, w)).sum(axis=-1) + pairs - len(w)) / pairs


def _interleave_halves(d):
    """Column order [sin 0, cos 0, sin 1, cos 1, ...] of each half of MAE's [sin x, cos x, sin y, cos y]."""
    quarter = np.arange(d // 4)
    half = np.stack([quarter, quarter + d // 4], axis=-1).ravel()
    return np.concatenate([half, half + d // 2])


# (exercise, index of the mistake, the learner's wrong answer made from the exercise's module)
WRONG_ANSWERS = [
    ("nb07.both_sides", 0, lambda m: lambda order: _torch_layer_sides(m, order)),
    ("nb07.both_sides", 1, lambda m: lambda order: _torch_layer_sides(m, order, second=_inverse_permutation(order))),
    ("nb07.both_sides", 2, lambda m: lambda order: (_torch_layer_sides(m, order)[1],) * 2),
    ("nb07.model_input", 0, lambda m: m.embeddings.numpy() + _paper_table(12, 32)),
    ("nb07.model_input", 1, lambda m: np.sqrt(32) * (m.embeddings.numpy() + _paper_table(12, 32))),
    ("nb07.model_input", 2, lambda m: 32 * m.embeddings.numpy() + _paper_table(12, 32)),
    ("nb07.model_input", 3, lambda m: m.embeddings.numpy() / np.sqrt(32) + _paper_table(12, 32)),
    ("nb07.model_input", 4, lambda m: np.sqrt(32) * m.embeddings.numpy() + _paper_table(4, 32)[:, None]),
    ("nb08.rotated_query", 0, lambda m: _rotated_by_posenc(-3)),
    ("nb08.rotated_query", 1, lambda m: _rotated_by_posenc(3, tables="interleaved", pairs="interleaved")),
    ("nb08.rotated_query", 2, lambda m: _rotated_by_posenc(3, tables="interleaved")),
    ("nb08.rotated_query", 3, lambda m: _rotated_by_posenc(3, pairs="interleaved")),
    ("nb08.rotated_query", 4, lambda m: _rotated_by_posenc(3, base=100.0)),  # 10000^(-j/8) = 100^(-2j/8)
    ("nb08.rotated_query", 5, lambda m: _rotated_by_posenc(3, swap=True)),
    ("nb08.half_rows", 0, lambda m: lambda heads, head_dim: posenc.rotary_permutation(head_dim, "half", "interleaved", heads=heads)),
    ("nb08.half_rows", 1, lambda m: lambda heads, head_dim: posenc.rotary_permutation(heads * head_dim, "interleaved", "half")),
    ("nb08.half_rows", 2, lambda m: lambda heads, head_dim: list(range(heads * head_dim))),
    ("nb08.llama3_wavelength", 0, lambda m: 2 * np.pi * 500000.0 ** 0.5),
    ("nb08.llama3_wavelength", 1, lambda m: 8 * 2 * np.pi * 500000.0 ** 0.5),
    ("nb08.llama3_wavelength", 2, lambda m: _llama3_blended_wavelengths()),
    ("nb08.llama3_wavelength", 3, lambda m: 2 * np.pi / (500000.0 ** -0.5 * (1 + 1 / 8) - _llama3_frequency())),
    ("nb08.llama3_wavelength", 4, lambda m: _llama3_frequency()),
    ("nb08.llama3_wavelength", 5, lambda m: 2 * np.pi / _llama3_frequency(base=10000.0)),
    ("nb09.mae_table", 0, lambda m: lambda h, w, d: _mae((h, w), d).reshape(h, w, d).transpose(1, 0, 2).reshape(h * w, d)),
    ("nb09.mae_table", 1, lambda m: lambda h, w, d: _mae((w, h), d)),
    ("nb09.mae_table", 2, lambda m: lambda h, w, d: np.roll(_mae((h, w), d), d // 2, axis=1)),
    ("nb09.mae_table", 3, lambda m: lambda h, w, d: _mae((h, w), d)[:, _interleave_halves(d)]),
    ("nb09.mae_table", 4, lambda m: lambda h, w, d: _mae((h, w), d, convention="big_vision")),
    ("nb09.rescaled_table", 0, lambda m: lambda old, new, d: _mae(new, d)),
    ("nb09.rescaled_table", 1, lambda m: lambda old, new, d: _mae(new, d, positions=[np.arange(n) * (o / n) for o, n in zip(old, new)])),
    ("nb09.rescaled_table", 2, lambda m: lambda old, new, d: _mae(new, d, positions=[np.linspace(0, o - 1, n) for o, n in zip(old, new)])),
    ("nb09.rescaled_table", 3, lambda m: lambda old, new, d: _mae(new, d, positions=_centres([n * n / o for o, n in zip(old, new)], new))),
    ("nb09.rescaled_table", 4, lambda m: lambda old, new, d: _mae(  # each axis stepped by the other's ratio
        new, d, positions=[_centres([o * n / other], [n])[0] for o, n, other in zip(old[::-1], new, new[::-1])])),
    ("nb10.mrope_rows", 0, lambda m: _mrope_rows(after=8)),
    ("nb10.mrope_rows", 1, lambda m: _mrope_rows()[[0, 2, 1]]),
    # a 3 x 2 grid row by row, read as the 2 x 3 grid column by column
    ("nb10.mrope_rows", 2, lambda m: posenc.rope.mrope_position_ids([2, (1, 6, 4), 2])[[0, 2, 1]]),
    ("nb10.mrope_rows", 3, lambda m: _mrope_rows() - np.r_[0, 0, 2, 2, 2, 2, 2, 2, 0, 0] * [[0], [1], [1]]),
    ("nb10.mrope_rows", 4, lambda m: _mrope_rows(time=range(2, 8))),
    ("nb10.channel_axes", 0, lambda m: posenc.rope.mrope_axes),
    ("nb10.channel_axes", 1, lambda m: lambda section: np.concatenate([np.full(2 * n, axis) for axis, n in enumerate(section)])),
    ("nb10.channel_axes", 2, lambda m: lambda section: np.tile(posenc.rope.mrope_axes(section, interleaved=True), 2)),
    ("nb10.same_offset", 0, lambda m: lambda qa, ka, qb: tuple(np.subtract(qb, np.subtract(ka, qa)))),
    ("nb10.same_offset", 1, lambda m: lambda qa, ka, qb: tuple(np.add(qb, np.subtract(ka, qa)[::-1]))),
    ("nb10.same_offset", 2, lambda m: lambda qa, ka, qb: ka),
    ("nb10.flux_ids", 0, lambda m: lambda t, h, w: posenc.rope.flux_position_ids(t, h, w)[:, ::-1][:, [2, 0, 1]]),
    ("nb10.flux_ids", 1, lambda m: lambda t, h, w: np.transpose(posenc.rope.flux_position_ids(t, h, w))),
    ("nb10.flux_ids", 2, lambda m: lambda t, h, w: posenc.rope.flux_position_ids(t, w, h)[:, [0, 2, 1]]),
    ("nb10.flux_ids", 3, lambda m: lambda t, h, w: (  # text token k at (k, 0, 0)
        posenc.rope.flux_position_ids(t, h, w) + np.pad(np.arange(t)[:, None], ((0, h * w), (0, 2))))),
    ("nb10.flux_ids", 4, lambda m: lambda t, h, w: np.r_[posenc.rope.flux_position_ids(0, h, w), np.zeros((t, 3))]),
    ("nb10.axis_similarity", 0, lambda m: lambda o, a, x, b: _axis_turned(o, a, x, b, b ** -(np.arange(0, a[x], 2) / sum(a)))),
    ("nb10.axis_similarity", 1, lambda m: lambda o, a, x, b: np.cos(np.outer(o, b ** -(np.arange(0, a[x], 2) / a[x]))).mean(axis=-1)),
    ("nb10.axis_similarity", 2, lambda m: lambda o, a, x, b: _axis_turned(o, 2 * np.asarray(a), x, b, b ** -(np.arange(a[x]) / a[x]))),
    ("nb10.pixel_angles", 0, lambda m: lambda n, c, f: np.outer(np.arange(n), _pixel_w(c, f))),
    ("nb10.pixel_angles", 1, lambda m: lambda n, c, f: np.outer(np.arange(n) / (n - 1), _pixel_w(c, f))),
    ("nb10.pixel_angles", 2, lambda m: lambda n, c, f: np.outer((2 * np.arange(n) + 1 - n) / n, _pixel_w(c, f))),
    ("nb10.pixel_angles", 3, lambda m: lambda n, c, f: np.outer(-1 + 2 * np.arange(n) / (n - 1), _pixel_w(c, f) / np.pi)),
    ("nb10.pixel_angles", 4, lambda m: lambda n, c, f: np.outer(-1 + 2 * np.arange(n) / (n - 1), _pixel_w(c, 2 * f))),
    ("nb10.sam_features", 0, lambda m: lambda p, g, h, w: _sam(p, g / (2 * np.pi), h, w)),
    ("nb10.sam_features", 1, lambda m: lambda p, g, h, w: _sam((p + [w, h]) / 2, g, h, w)),  # 2 c' - 1 = c: the [0, 1] coordinates
    ("nb10.sam_features", 2, lambda m: lambda p, g, h, w: _sam(p, g, w, h)),
    ("nb10.sam_features", 3, lambda m: lambda p, g, h, w: np.roll(_sam(p, g, h, w), g.shape[1], axis=-1)),
    ("nb11.at_table", 0, lambda m: lambda n, d: np.zeros((n, d))),
    ("nb11.at_table", 1, lambda m: lambda n, d: posenc.positional_encoding(n, d) * (np.arange(d) % 2)),
    ("nb11.at_table", 2, lambda m: lambda n, d: posenc.positional_encoding(n, d) * (1 - np.arange(d) % 2)),
    ("nb11.at_table", 3, lambda m: lambda n, d: posenc.positional_encoding(n, d)[:, np.arange(d) ^ 1]),
    ("nb11.compilations", 0, lambda m: 7),  # every call
    ("nb11.compilations", 1, lambda m: 6),  # every distinct call: (0, 10, 6) comes twice
    ("nb11.compilations", 2, lambda m: 3),  # lengths 10, 12, 16
    ("nb11.compilations", 3, lambda m: 2),  # d_model 6, 8
    ("nb11.compilations", 4, lambda m: 1),
    ("nb11.chunks", 0, lambda m: np.stack([posenc.encode(np.arange(4), 8)] * 3)),
    ("nb11.chunks", 1, lambda m: np.stack([posenc.encode(start + np.arange(1, 5), 8) for start in (0, 100, 7)])),
    ("nb12.alibi_slopes", 0, lambda m: _slopes_from_h_0),
    ("nb12.alibi_slopes", 1, lambda m: lambda n: 0.5 ** (8 * np.arange(1, n + 1) / n)),
    # the even h of 2n heads give the first n slopes again
    ("nb12.alibi_slopes", 2, lambda m: lambda n: np.resize(posenc.biases.alibi_slopes(_power_below(n)), n)),
    ("nb12.alibi_slopes", 3, lambda m: lambda n: np.flip(posenc.biases.alibi_slopes(n))),
    ("nb12.both_ways", 0, lambda m: lambda r, b, d: _t5_buckets(-np.abs(r), False, b // 2, d)),
    ("nb12.both_ways", 1, lambda m: lambda r, b, d: _t5_buckets(r, True, b, d) + b // 2 * (r > 0)),
    ("nb12.both_ways", 2, lambda m: lambda r, b, d: _t5_buckets(-r, True, b, d)),
    ("nb12.both_ways", 3, lambda m: lambda r, b, d: _t5_buckets(r, True, b, d) + b // 2 * (r == 0)),
    ("nb12.causal_alibi", 0, lambda m: lambda n, length: _alibi_by_hand(n, length, hidden=lambda i, j: j < i)),
    ("nb12.causal_alibi", 1, lambda m: lambda n, length: _alibi_by_hand(n, length, hidden=lambda i, j: j >= i)),
    ("nb12.causal_alibi", 2, lambda m: lambda n, length: _alibi_by_hand(n, length, hidden=lambda i, j: j > i, sign=1)),
]


def _inverse_permutation(order):
    inverse = np.empty(len(order), dtype=np.int64)
    inverse[order] = np.arange(len(order))
    return inverse


def _power_below(n):
    return 1 << (n.bit_length() - 1)


def _slopes_from_h_0(num_heads):
    """ALiBi's slopes with h = 0 .. n - 1 for the n = 2^k first heads: each 2^(8/n) times the right one."""
    n = _power_below(num_heads)
    return posenc.biases.alibi_slopes(num_heads) * np.where(np.arange(num_heads) < n, 2 ** (8 / n), 1)


def _llama3_blended_wavelengths():
    wavelength = 2 * np.pi * 500000.0 ** 0.5
    smooth = (8192 / wavelength - 1) / 3
    return (1 - smooth) * 8 * wavelength + smooth * wavelength


@pytest.mark.parametrize("name, index, wrong", WRONG_ANSWERS, ids=[f"{name}-{index}" for name, index, _ in WRONG_ANSWERS])
def test_a_mistake_written_independently_gets_its_message(name, index, wrong):
    module, exercise_name = name.split(".")
    m = _exercise_module(module)
    exercise = getattr(m, exercise_name)
    feedback = exercise.check(wrong(m))
    assert not feedback.ok and str(feedback).endswith(exercise.mistakes[index][0]), feedback


def test_every_mistake_of_notebooks_07_to_12_is_written_independently():
    names = {name for name, _, _ in WRONG_ANSWERS}
    assert {(name, index) for name, index, _ in WRONG_ANSWERS} == {
        (name, k) for name in names for k in range(len(getattr(_exercise_module(name[:4]), name[5:]).mistakes))
    }


HALF_8 = np.array([0, 2, 4, 6, 1, 3, 5, 7])  # one head of 8 rows: Meta's pair members, firsts then seconds
MROPE_ROWS = np.array([[0, 1, 2, 2, 2, 2, 2, 2, 5, 6], [0, 1, 2, 2, 2, 3, 3, 3, 5, 6], [0, 1, 2, 3, 4, 2, 3, 4, 5, 6]])
SIDES = (np.ones((2, 3)), np.arange(6.0).reshape(2, 3))
CAUSAL = np.where(np.triu(np.ones((3, 3)), 1) == 1, -np.inf, -0.5 * np.subtract.outer(np.arange(3), np.arange(3)))[None]


def _changed(array, index, value):
    changed = np.array(array, dtype=np.float64)
    changed[index] = value
    return changed


# (module, comparison, answer, right answer, message: None when the answer is right)
COMPARISONS = [
    ("nb07", "_compare_sides", SIDES, SIDES, None),
    ("nb07", "_compare_sides", list(SIDES), SIDES, None),
    ("nb07", "_compare_sides", SIDES[0], SIDES, "return two tensors: (layer of the shuffled x, layer(x) shuffled)"),
    ("nb07", "_compare_sides", SIDES * 2, SIDES, "return two tensors: (layer of the shuffled x, layer(x) shuffled)"),
    ("nb07", "_compare_sides", (-SIDES[0], SIDES[1]), SIDES,
     "your first tensor (the layer of the shuffled x): every entry has the wrong sign"),
    ("nb07", "_compare_sides", (SIDES[0], 2 * SIDES[1]), SIDES,
     "your second tensor (layer(x), shuffled): your answer is 2 times the expected one"),
    ("nb08", "compare_rows", HALF_8, HALF_8, None),
    ("nb08", "compare_rows", list(HALF_8), HALF_8, None),
    ("nb08", "compare_rows", None, HALF_8, "your answer is None: does your function end with `return ...`?"),
    ("nb08", "compare_rows", ..., HALF_8, "your answer is still `...`: replace it with your code"),
    ("nb08", "compare_rows", HALF_8[:7], HALF_8, "your order has shape (7,), expected (8,): one index per row of W_q (heads * head_dim)"),
    ("nb08", "compare_rows", HALF_8 + 0.0, HALF_8,
     "your order is not a permutation of the rows 0..7: each row must be taken exactly once"),
    ("nb08", "compare_rows", np.r_[HALF_8[:7], 0], HALF_8,
     "your order is not a permutation of the rows 0..7: each row must be taken exactly once"),
    ("nb08", "compare_rows", HALF_8 + 1, HALF_8,
     "your order is not a permutation of the rows 0..7: each row must be taken exactly once"),
    ("nb08", "compare_rows", HALF_8[[0, 4, 2, 3, 1, 5, 6, 7]], HALF_8,
     "row 1 of the half layout should be Meta's row 2; yours takes row 1"),
    ("nb08", "compare_rows", HALF_8[[0, 1, 2, 3, 4, 5, 7, 6]], HALF_8,
     "row 6 of the half layout should be Meta's row 5; yours takes row 7"),
    ("nb08", "compare_number", 100.00005, 100.0, None),
    ("nb08", "compare_number", np.float32(100.0), 100.0, None),
    ("nb08", "compare_number", None, 100.0, "your answer is None: does your function end with `return ...`?"),
    ("nb08", "compare_number", ..., 100.0, "your answer is still `...`: replace it with your code"),
    ("nb08", "compare_number", "100", 100.0, None),  # float("100") reads it
    ("nb08", "compare_number", "a hundred", 100.0, "your answer should be one number, got str"),
    ("nb08", "compare_number", [100.0, 1.0], 100.0, "your answer should be one number, got list"),
    ("nb08", "compare_number", {}, 100.0, "your answer should be one number, got dict"),
    ("nb08", "compare_number", 100.0002, 100.0,
     "100 is not it (the check allows a relative difference of 1e-06); the hint gives the rule"),
    ("nb08", "compare_number", 1234.5678, 100.0,
     "1234.57 is not it (the check allows a relative difference of 1e-06); the hint gives the rule"),
    ("nb10", "compare_rows", MROPE_ROWS, MROPE_ROWS, None),
    ("nb10", "compare_rows", MROPE_ROWS.tolist(), MROPE_ROWS, None),
    ("nb10", "compare_rows", "rows", MROPE_ROWS, "your answer should be a (3, 10) array of ints"),
    ("nb10", "compare_rows", [[0, 1], [2]], MROPE_ROWS, "your answer should be a (3, 10) array of ints"),
    ("nb10", "compare_rows", np.zeros((3, 28)), MROPE_ROWS,
     "your image has 24 tokens: the merger joins each 2 x 2 block of patches (spatial_merge_size=2), 2 x 3 tokens"),
    ("nb10", "compare_rows", MROPE_ROWS.T, MROPE_ROWS,
     "your array has shape (10, 3), expected (3, 10): three rows (time, height, width), one column per token"),
    ("nb10", "compare_rows", None, MROPE_ROWS,
     "your array has shape (), expected (3, 10): three rows (time, height, width), one column per token"),
    ("nb10", "compare_rows", _changed(MROPE_ROWS, (0, 1), 7), MROPE_ROWS,
     "row 0 (time) is wrong first at token 1 (text before the image): yours 7, expected 1"),
    ("nb10", "compare_rows", _changed(MROPE_ROWS, (1, 2), 2.5), MROPE_ROWS,
     "row 1 (height) is wrong first at token 2 (the image): yours 2.5, expected 2"),
    ("nb10", "compare_rows", _changed(MROPE_ROWS, (2, 7), 0), MROPE_ROWS,
     "row 2 (width) is wrong first at token 7 (the image): yours 0, expected 4"),
    ("nb10", "compare_rows", _changed(_changed(MROPE_ROWS, (2, 3), 0), (1, 9), 0), MROPE_ROWS,  # the first row first
     "row 1 (height) is wrong first at token 9 (text after the image): yours 0, expected 6"),
    ("nb10", "compare_rows", _changed(MROPE_ROWS, (2, 8), -5), MROPE_ROWS,
     "row 2 (width) is wrong first at token 8 (text after the image): yours -5, expected 5"),
    ("nb11", "_compare_counts", 4, 4, None),
    ("nb11", "_compare_counts", np.int64(4), 4, None),
    ("nb11", "_compare_counts", ..., 4, "your answer is still `...`: replace it with a number"),
    ("nb11", "_compare_counts", True, 1, "answer with a whole number of compilations, got bool"),
    ("nb11", "_compare_counts", 4.0, 4, "answer with a whole number of compilations, got float"),
    ("nb11", "_compare_counts", "4", 4, "answer with a whole number of compilations, got str"),
    ("nb11", "_compare_counts", None, 4, "answer with a whole number of compilations, got NoneType"),
    ("nb11", "_compare_counts", 5, 4, "5 is more than the number of traces: list the (shape, d_model) of each call"),
    ("nb11", "_compare_counts", 3, 4, "3 is fewer than the number of traces: list the (shape, d_model) of each call"),
    ("nb12", "compare_masked", CAUSAL, CAUSAL, None),
    ("nb12", "compare_masked", np.where(np.isinf(CAUSAL), -1e30, CAUSAL), CAUSAL,
     "the -inf entries are not where the mask goes: key j is hidden from query i exactly when j > i"),
    ("nb12", "compare_masked", _changed(CAUSAL, (0, 2, 0), -0.75), CAUSAL,
     "1 of 9 entries differ; the largest difference is at [0, 2, 0]: yours -0.75, expected -1"),
    ("nb12", "compare_masked", np.where(np.isinf(CAUSAL), -np.inf, -CAUSAL), CAUSAL, "every entry has the wrong sign"),
]


@pytest.mark.parametrize("module, comparison, got, expected, message", COMPARISONS)
def test_each_comparison_of_notebooks_07_to_12_says_what_is_wrong(module, comparison, got, expected, message):
    assert getattr(_exercise_module(module), comparison)(got, expected) == message


def test_the_row_and_number_comparisons_read_a_tensor_that_requires_grad():
    torch = pytest.importorskip("torch")
    nb08 = _exercise_module("nb08")
    assert nb08.compare_rows(torch.tensor(HALF_8 + 0.0, requires_grad=True), HALF_8) == \
        "your order is not a permutation of the rows 0..7: each row must be taken exactly once"
    assert nb08.compare_number(torch.tensor(100.0, requires_grad=True), 100.0) is None


@pytest.mark.parametrize("d_model, base", [(8, 10000.0), (64, 10000.0), (16, 100.0)])
def test_nb04_distance_by_offset_is_the_distance_between_table_rows(d_model, base):
    """The closed form sqrt(2 sum (1 - cos k w)) against rows of posenc's table, from two starting positions."""
    table = posenc.positional_encoding(60, d_model, base=base, dtype=np.float64)
    k = np.arange(20)
    for p in (0, 37):
        np.testing.assert_allclose(nb04.distance_by_offset(k, d_model, base),
                                   np.linalg.norm(table[p + k] - table[p], axis=-1), rtol=1e-9, atol=1e-12)


def test_nb03_within_atol_includes_atol_itself():
    from posenc.exercises import nb03

    assert nb03.compare_within(np.array([[0.5, 1.0]]), np.array([[0.25, 1.0]]), atol=0.25) is None  # exactly 0.25 off
    message = nb03.compare_within(np.array([[0.5, 1.0]]), np.array([[0.25, 1.0]]), atol=0.125)
    assert message.startswith("your table is off by up to 2.5e-01, at row 0, column 0")


def test_notebook_06_step_at_a_power_of_two():
    # 102400 / 10000 ** (2 * 64 / 256) is 1024 exactly: the step above it is 2**-13 (below it, 2**-14)
    from posenc.exercises import nb06

    assert nb06.angle_step_solution(102400, 64, 256) == (2.0**-13, 2.0**-14)
