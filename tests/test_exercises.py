"""The notebooks' exercises answer back: the reference solution is correct, every known mistake
gets its own message, and the generic comparison names what a wrong array shows."""

import importlib
import pkgutil

import numpy as np
import pytest

import posenc.exercises
from posenc.exercises import Exercise, compare_arrays


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
    assert printed.startswith("def ") and "Hint: " in printed


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


def test_compare_arrays_reads_framework_arrays_and_tolerates_float32_rounding():
    torch = pytest.importorskip("torch")
    assert compare_arrays(torch.tensor(TABLE, requires_grad=True), TABLE.astype(np.float32)) is None


def test_an_array_argument_is_named_by_its_shape():
    exercise = Exercise("add", lambda x: x + 1, "add one", cases=[(np.zeros((2, 3)),)], argument_names=["x"])
    assert str(exercise.check(lambda x: x)) == "Not yet (for x=an array of shape (2, 3)): 6 of 6 entries differ; " \
        "the largest difference is at [0, 0]: yours 0, expected 1"
