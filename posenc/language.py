"""The language of posenc's messages to learners: diagnose, diagnose_grid and the exercises' feedback.

English by default, but for the course's translated notebooks: a notebook in ``notebooks/pt_BR/`` or
``notebooks/zh_CN/`` speaks its folder's language (its kernel starts there: JupyterLab, nbval and
``jupytext --execute`` all start a notebook's kernel in the notebook's folder), so a translation
changes prose only, never code. ``set_language("pt_BR")`` or ``set_language("zh_CN")`` switches for the rest of
the session; ``set_language(None)`` follows the locale (the environment variables ``LANGUAGE``,
``LC_ALL``, ``LC_MESSAGES`` and ``LANG``, as Python's :mod:`gettext` reads them). A message with no
translation in the chosen catalog stays English. The catalogs are gettext files in
``posenc/locale/<language>/LC_MESSAGES/posenc.po`` (``make catalogs`` compiles the ``.mo`` beside each).

Inside posenc, ``_("...")`` marks a message and translates it when it is built; ``N_("...")``
marks a message built elsewhere (a table of messages), translated later with ``_``. Two gettext
domains: "posenc" for the library's messages, "exercises" for the notebooks' exercises
(``posenc.exercises`` translates with ``translator("exercises")``).
"""

import contextvars
import functools
import gettext
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from .engine import checks

__all__ = ["LANGUAGES", "get_language", "set_language", "translator", "using_language"]

#: The languages posenc's messages come in.
LANGUAGES = ("en", "pt_BR", "zh_CN")
LOCALE_DIR = Path(__file__).parent / "locale"

_UNSET = "unset"


def _course_language() -> str:
    """The language of the translated course notebook this kernel runs (``notebooks/LANG/``), else English."""
    here = Path.cwd()
    if "ipykernel" in sys.modules and here.parent.name == "notebooks" and here.name in LANGUAGES:
        return here.name
    return "en"


# A plain global: IPython runs each cell in a copy of the context, so a context variable set in
# one cell is gone in the next. None: the locale decides.
_chosen: str | None = _course_language()
# A language= argument holds for one call only, also across threads: a context variable.
_override: contextvars.ContextVar[str | None] = contextvars.ContextVar("posenc_language", default=_UNSET)


def _check(language: str | None) -> str | None:
    spelled = f"{', '.join(map(repr, LANGUAGES))} or None (the locale)"
    return checks.check_choice(language, (*LANGUAGES, None), "language", spelled=spelled)


def set_language(language: str | None) -> None:
    """Messages in ``language`` ("en", "pt_BR" or "zh_CN") from now on; None follows the locale."""
    global _chosen
    _chosen = _check(language)


def get_language() -> str | None:
    """The language messages are in now (None: the locale's)."""
    override = _override.get()
    return _chosen if override == _UNSET else override


@contextmanager
def using_language(language: str | None) -> Iterator[None]:
    """Messages in ``language`` inside the ``with`` block; the language set before, after it."""
    token = _override.set(_check(language))
    try:
        yield
    finally:
        _override.reset(token)


@functools.cache
def _translations(domain: str, language: str | None) -> gettext.NullTranslations:
    languages = None if language is None else [language]
    return gettext.translation(domain, LOCALE_DIR, languages=languages, fallback=True)


def translator(domain: str) -> Callable[[str], str]:
    """The ``_`` of a gettext ``domain``: a message in the current language (English when untranslated)."""

    def translate(message: str) -> str:
        return _translations(domain, get_language()).gettext(message)

    return translate


_ = translator("posenc")


def N_(message: str) -> str:
    """Marks ``message`` for the catalogs without translating it (it is translated where it is shown)."""
    return message
