"""The notebooks' exercises, with feedback that says what is wrong.

Each notebook's exercises live in one module here (``posenc.exercises.nb04`` for notebook 04),
as :class:`Exercise` objects in the manner of Kaggle's learntools::

    from posenc.exercises import nb04
    nb04.wavelengths.check(my_answer)   # "Correct: ..." or "Not yet: <what is wrong>"
    nb04.wavelengths.hint()             # a nudge
    nb04.wavelengths.solution()         # the reference code, the very code the check runs

An answer is a value (an array, a number, an array of any framework) or, when the exercise
names ``cases``, a function that the check calls on each case. The check compares the answer
with the solution's, first against the exercise's known mistakes (each a function that
makes the wrong answer, with the message a learner needs), then by what the shapes and values
show: a transpose, a sign, a column order, rows shifted, a scale, the largest difference.

The feedback is in the language of :func:`posenc.set_language` (gettext domain "exercises"):
the messages, hints and praise are written in English, marked with ``N_`` for the catalogs, and
translated with ``_`` when a check, :meth:`Exercise.hint` or :func:`compare_arrays` shows them.
The code :meth:`Exercise.solution` prints, and errors meant for programmers, stay English.

The exercise modules load their framework, like ``posenc.torch``; this one loads NumPy only.
"""

import inspect
import re
import textwrap
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..language import translator

__all__ = ["Exercise", "Feedback", "compare_arrays"]

#: compare_arrays looks for rows shifted by 1 .. MAX_ROW_SHIFT.
MAX_ROW_SHIFT = 8

_ = translator("exercises")
# A mutation-testing pragma in a solution's source: a comment line of its own, or the tail of a line.
_PRAGMA = re.compile(r"^[ \t]*# pragma: no mutate.*\n|[ \t]*# pragma: no mutate.*$", re.MULTILINE)


def _shown(text: str) -> str:
    """``text`` (a hint, a mistake's message, a praise) in the current language; "" stays "" (gettext's
    translation of "" is the catalog's header)."""
    return _(text) if text else text


@dataclass(frozen=True)
class Feedback:
    """What a check found: ``ok`` and the message a learner reads (the notebook shows it)."""

    ok: bool
    message: str

    def __bool__(self) -> bool:
        return self.ok

    def __repr__(self) -> str:
        return self.message

    __str__ = __repr__


def _as_array(value: Any) -> np.ndarray:
    if hasattr(value, "detach"):  # a torch tensor that may require grad or live on a device
        value = value.detach().cpu()
    return np.asarray(value)


def _describe_difference(got: np.ndarray, expected: np.ndarray, rtol: float, atol: float) -> str:
    close = np.isclose(got, expected, rtol=rtol, atol=atol)
    worst = np.unravel_index(int(np.argmax(np.abs(got - expected))), got.shape)
    # Translators: {index} is a list of indices such as "5, 3"; {got} and {expected} are numbers.
    return _("{wrong} of {total} entries differ; the largest difference is at [{index}]: yours {got}, expected {expected}").format(
        wrong=close.size - int(close.sum()), total=close.size, index=", ".join(str(int(i)) for i in worst),
        got=f"{float(got[worst]):.6g}", expected=f"{float(expected[worst]):.6g}",
    )


def _column_permutation(got: np.ndarray, expected: np.ndarray, rtol: float, atol: float) -> list[int] | None:
    """perm with got[..., k] == expected[..., perm[k]] for every k, if such a permutation exists."""
    columns = got.shape[-1]
    perm: list[int] = []
    for k in range(columns):
        matches = [
            j for j in range(columns) if j not in perm and np.allclose(got[..., k], expected[..., j], rtol=rtol, atol=atol)
        ]
        if not matches:
            return None
        perm.append(matches[0])
    return perm


def compare_arrays(got: Any, expected: Any, *, rtol: float = 1e-5, atol: float = 1e-6) -> str | None:
    """What is wrong with ``got`` as an answer whose right value is ``expected``; None when nothing is.

    Reads any array (NumPy, torch, TensorFlow, JAX, nested lists) and numbers. Equal within
    ``rtol`` and ``atol`` (``numpy.isclose``) is right. Otherwise the message names the first
    thing that explains the difference: a shape (transposed or not), NaN, a flipped sign,
    columns in another order (sines and cosines swapped in each pair), rows shifted by up to
    ``MAX_ROW_SHIFT`` (positions that start elsewhere), a constant factor, or else the largest difference and where it is.
    The message is in the language of :func:`posenc.set_language`.
    """
    found = _difference(got, expected, rtol, atol)
    return None if found is None else found[0]


def _compare_order(got: Any, expected: Any, named: str) -> str | None:
    """:func:`compare_arrays`, except that the right columns in another order get ``named`` (English, marked
    ``N_``, translated here) with ``{order}`` the whole order: ``got[..., k]`` is ``expected[..., order[k]]``."""
    found = _difference(got, expected)
    if found is None:
        return None
    problem, order = found
    return problem if order is None else _(named).format(order=order)


def _difference(got: Any, expected: Any, rtol: float = 1e-5, atol: float = 1e-6) -> tuple[str, list[int] | None] | None:
    """compare_arrays's finding as (message, order): ``order`` is the column permutation when the right columns
    in another order explain the difference, else None."""
    if got is None:
        return _("your answer is None: does your function end with `return ...`?"), None
    if got is Ellipsis:
        return _("your answer is still `...`: replace it with your code"), None
    try:
        got = _as_array(got).astype(np.float64)  # pragma: no mutate (astype(None) is float64 too)
    except (TypeError, ValueError):
        # Translators: {type} is a Python type name (str, dict, ...).
        return _("your answer should be an array or a number, got {type}").format(type=type(got).__name__), None
    expected = _as_array(expected).astype(np.float64)  # pragma: no mutate (astype(None) is float64 too)
    if got.shape != expected.shape:
        if got.ndim == 2 and got.shape == expected.shape[::-1]:
            return _("your array has shape {got}, the transpose of the expected {expected}").format(
                got=got.shape, expected=expected.shape), None
        return _("your array has shape {got}, expected {expected}").format(got=got.shape, expected=expected.shape), None
    if not np.isfinite(got).all():
        bad = np.argwhere(~np.isfinite(got))[0]
        # Translators: {index} is a list of indices such as [0, 1].
        return _("your array has {count} NaN or infinite entries, the first at {index}").format(
            count=int((~np.isfinite(got)).sum()), index=list(map(int, bad))), None
    if np.allclose(got, expected, rtol=rtol, atol=atol):
        return None
    if np.allclose(-got, expected, rtol=rtol, atol=atol):
        return _("every entry has the wrong sign"), None
    if got.ndim >= 1:
        perm = _column_permutation(got, expected, rtol, atol)
        if perm is not None:
            pairs = len(perm) // 2
            if pairs and perm[: 2 * pairs] == [k ^ 1 for k in range(2 * pairs)]:
                return _("the two columns of every pair are swapped (sine where the cosine belongs?)"), perm
            moved = [k for k, j in enumerate(perm) if j != k]
            return _("the right columns in another order: your column {yours} is column {theirs} of the expected").format(
                yours=moved[0], theirs=perm[moved[0]]), perm
        # Positions that start a few rows off are the mistake; a search over every shift costs rows^2.
        for shift in range(1, min(got.shape[0], MAX_ROW_SHIFT + 1)):
            for sign in ("+", "-"):
                ours, theirs = (got[:-shift], expected[shift:]) if sign == "+" else (got[shift:], expected[:-shift])
                if np.allclose(ours, theirs, rtol=rtol, atol=atol):
                    # Translators: "row p" is a formula: {sign} is + or -, {shift} a number ("row p + 1").
                    return _("your row p holds the expected row p {sign} {shift}: do your positions start at 0?").format(
                        sign=sign, shift=shift), None
    scale = float(np.vdot(got, expected) / np.vdot(expected, expected)) if np.any(expected) else 0.0
    if scale and not np.isclose(scale, 1.0) and np.allclose(got, scale * expected, rtol=rtol, atol=atol):
        return _("your answer is {factor} times the expected one").format(factor=f"{scale:.6g}"), None
    return _describe_difference(got, expected, rtol, atol), None


def _one_number(got: Any) -> tuple[float | None, str | None]:
    """``(value, None)`` when ``got`` is one number (any framework's scalar too), else ``(None, message)``."""
    try:
        array = _as_array(got)
        # Older NumPy's float() takes a one-element array too; a list of one number is still a list.
        if array.ndim == 0:
            return float(array), None
    except (TypeError, ValueError):
        pass
    # Translators: {type} is a Python type name.
    return None, _("your answer should be one number, got {type}").format(type=type(got).__name__)


def _describe(value: Any) -> str:
    # An array argument is named by its shape: its values would flood the message.
    shape = getattr(value, "shape", ())
    return _("an array of shape {shape}").format(shape=tuple(shape)) if len(shape) else repr(value)


def _call(function: Callable, args: tuple) -> tuple[Any, str | None]:
    try:
        return function(*args), None
    except Exception as error:  # the learner's code: report whatever it raised, in one line
        return None, f"{type(error).__name__}: {error}"


@dataclass(frozen=True)
class Exercise:
    """One exercise: the reference solution, how to compare, the known mistakes and a hint.

    - ``solution_code``: the reference code, ``solution_code(*case)`` for each of ``cases`` (or
      ``solution_code()`` when there are none); :meth:`solution` prints it.
    - ``hint_text``: what :meth:`hint` prints.
    - ``cases``: argument tuples; when given, the answer is a function called on each.
    - ``mistakes``: ``(message, wrong)`` pairs; ``wrong`` makes the answer of one typical mistake
      (same arguments as the solution), ``message`` says what that mistake is.
    - ``compare``: ``(got, expected) -> message or None``; :func:`compare_arrays` by default.
    - ``argument_names``: the names of a case's arguments, for the message ("for length=10, d_model=6").
    - ``praise``: what a correct answer shows, after "Correct!".

    The hint, the mistakes' messages and the praise are English, marked ``N_("...")`` for the
    catalogs; they are translated when shown.
    """

    name: str
    solution_code: Callable[..., Any]
    hint_text: str
    cases: Sequence[tuple] = ()
    mistakes: Sequence[tuple[str, Callable[..., Any]]] = ()
    compare: Callable[[Any, Any], str | None] = compare_arrays
    argument_names: Sequence[str] = ()
    praise: str = ""

    def _where(self, case: tuple) -> str:
        if not case:
            return ""
        names = self.argument_names or [_("argument {number}").format(number=k) for k in range(len(case))]
        return ", ".join(f"{name}={_describe(value)}" for name, value in zip(names, case))

    def _not_yet(self, problem: str, where: str = "") -> Feedback:
        if where:
            # Translators: {case} lists the arguments of the failing case, "length=10, d_model=6".
            return Feedback(False, _("Not yet (for {case}): {problem}").format(case=where, problem=problem))
        return Feedback(False, _("Not yet: {problem}").format(problem=problem))

    def check(self, answer: Any) -> Feedback:
        """Correct, or what is wrong with ``answer`` (a value, or a function when the exercise has cases)."""
        if self.cases and not callable(answer):
            # Translators: {exercise} is the exercise's name in the code, {type} a Python type name.
            asks = _("{exercise} asks for a function, got {type}").format(exercise=self.name, type=type(answer).__name__)
            return self._not_yet(asks)
        for case in self.cases or [()]:
            where = self._where(case)
            got, error = _call(answer, case) if self.cases else (answer, None)
            if error:
                # Translators: {error} is Python's, in English: "ZeroDivisionError: division by zero".
                return self._not_yet(_("your function raised {error}").format(error=error), where)
            expected = self.solution_code(*case)
            for message, wrong in self.mistakes:
                wrong_value, failed = _call(wrong, case)
                if failed is None and self.compare(got, wrong_value) is None and self.compare(wrong_value, expected):
                    return self._not_yet(_shown(message), where)
            problem = self.compare(got, expected)
            if problem:
                return self._not_yet(problem, where)
        if self.praise:
            return Feedback(True, _("Correct! {praise}").format(praise=_shown(self.praise)))
        return Feedback(True, _("Correct!"))

    def hint(self) -> None:
        """Print a nudge."""
        print(_("Hint: {hint}").format(hint=_shown(self.hint_text)))

    def solution(self) -> None:
        """Print the reference code (the function the check compares against), without the pragmas for mutmut."""
        print(_PRAGMA.sub("", textwrap.dedent(inspect.getsource(self.solution_code))).rstrip())
