"""The course in pt_BR and zh_CN cannot drift from the English (scripts/translations.py).

Every catalog entry translated and none fuzzy, the templates current, and each translated
notebook and README exactly what its English source and catalog make; a changed English
paragraph turns its translations fuzzy, so the check fails until a translator has looked.
"""

import collections
import json
import re
import sys
from pathlib import Path

import jupytext
import pytest
from babel.messages.catalog import Catalog

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
import translations  # noqa: E402

CATALOGS = [translations.catalog_path(path, language)
            for path in sorted(translations.TEMPLATES.glob("*.pot")) for language in translations.LANGUAGES]


def test_every_entry_is_translated_and_every_generated_file_is_current():
    problems = translations.problems()
    assert not problems, "\n".join(problems[:40]) + f"\n({len(problems)} in all; see README, 'Translating the course')"


@pytest.mark.parametrize("path", [*translations.NOTEBOOKS, translations.README], ids=lambda p: p.name)
def test_cutting_into_entries_loses_nothing(path):
    texts = [c.source for c in jupytext.read(path).cells if c.cell_type == "markdown"] if path.suffix == ".ipynb" \
        else [path.read_text()]
    for text in texts:
        assert "\n".join(piece.text for piece in translations.pieces(text)) == text


def test_math_code_badges_and_link_lists_are_not_entries():
    text = "\n\n".join(["Some prose.", "$$\nx = 1\n\ny = 2\n$$", "```bash\nmake lab\n\nmake test\n```",
                        "[![Open In Colab](badge.svg)](link)", "[English](README.md) · [中文](README.zh_CN.md)",
                        "| a | b |\n|---|---|\n| one row | 2 |"])
    found = [(p.text, p.translate) for p in translations.pieces(text) if p.text]
    assert [text for text, translate in found if translate] == ["Some prose.", "| one row | 2 |"]
    assert len(found) == 8  # the two blocks with blank lines inside stay whole, the table splits into rows


def test_a_changed_english_paragraph_turns_its_translation_fuzzy():
    catalog = Catalog(locale="pt_BR")
    catalog.add("The table has ten rows and six columns.", "A tabela tem dez linhas e seis colunas.")
    changed = translations.template("01_numpy", [(3, "The table has ten rows and eight columns.")])
    catalog.update(changed)
    entry = catalog.get("The table has ten rows and eight columns.")
    assert entry.fuzzy and entry.previous_id == ["The table has ten rows and six columns."]
    # A fuzzy entry is not used: the English shows until a translator confirms.
    assert translations.translation(catalog, entry.id) == entry.id


SPANS = re.compile(r"\$\$.+?\$\$|\$[^$]+\$|`[^`]+`|\]\([^)\s]+\)", re.S)


def spans(text):
    # A span may wrap differently in a translation: compare it with its white space collapsed.
    return collections.Counter(" ".join(span.split()) for span in SPANS.findall(text))


@pytest.mark.parametrize("path", CATALOGS, ids=lambda p: f"{p.parent.parent.name}/{p.stem}")
def test_translations_keep_the_math_code_and_links(path):
    # Every piece of math, code and every link target of the English is in the translation, as
    # it is (a translation may add one, e.g. a name set in code). Numbers may change form (zh
    # writes "ten" as 10); the README's notebook links are rewritten to the translations afterwards.
    lost = []
    for message in translations.read(path):
        if message.id and message.string:
            missing = spans(message.id) - spans(message.string)
            if missing:
                lost.append((message.id[:60], dict(missing)))
    assert not lost, lost[:5]


@pytest.mark.parametrize("path", translations.NOTEBOOKS, ids=lambda p: p.stem)
@pytest.mark.parametrize("language", translations.LANGUAGES)
def test_a_translated_notebook_runs_the_english_code(path, language):
    def code(notebook):
        return [c["source"] for c in json.loads(notebook.read_text())["cells"] if c["cell_type"] == "code"]

    # The same code cell for cell: the language comes from the notebook's folder (posenc.language).
    assert code(path.parent / language / path.name) == code(path)


@pytest.mark.parametrize("language", translations.LANGUAGES)
def test_a_translated_readme_links_the_translated_notebooks(language):
    readme = (ROOT / f"README.{language}.md").read_text()
    for path in translations.NOTEBOOKS:
        assert f"](notebooks/{language}/{path.name})" in readme
    assert "](notebooks/0" not in readme
