"""The course in other languages, from gettext catalogs: extract, update, build, check.

The English notebooks and README.md are the source. Their prose is cut into paragraphs (a
table row, a list, a heading each count as one), and each paragraph is one entry of a gettext
catalog, the format translators' tools read (Poedit, Weblate, Crowdin):

    locale/templates/NN_topic.pot, README.pot        what there is to translate (make catalogs)
    locale/LANG/LC_MESSAGES/NN_topic.po, README.po   the translations, one file per notebook
    posenc/locale/posenc.pot, exercises.pot           posenc's messages to learners (diagnose; the exercises)
    posenc/locale/LANG/LC_MESSAGES/*.po (.mo)         their translations (the .mo is compiled)

From the catalogs, `build` writes each language's notebooks, `notebooks/LANG/NN_topic.py`
(py:percent; `make translations` then executes them into the .ipynb with outputs) and
`README.LANG.md`. Code cells are copied unchanged; one code cell after the setup cell sets
the language of posenc's messages. Math, code and the Colab badge (pointed at the translated
notebook) are not translation entries.

    python scripts/translations.py extract   # templates from the English sources
    python scripts/translations.py update    # catalogs follow the templates (changed text -> fuzzy)
    python scripts/translations.py build     # compiled .mo, translated notebooks' .py, README.LANG.md
    python scripts/translations.py check     # what is untranslated, fuzzy or out of date; exit 1 if any
    python scripts/translations.py site LANG # the sources of LANG's docs site, in build/i18n/LANG (make docs)

Babel does the catalog work (reading, writing, fuzzy matching of changed paragraphs, compiling).
"""

import datetime
import io
import re
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

import jupytext
from babel.messages import mofile, pofile
from babel.messages.catalog import Catalog
from babel.messages.extract import extract_from_dir

ROOT = Path(__file__).resolve().parents[1]
LANGUAGES = ("pt_BR", "zh_CN")
LOCALE = ROOT / "locale"
TEMPLATES = LOCALE / "templates"
MESSAGES = ROOT / "posenc" / "locale"
DOMAINS = ("posenc", "exercises")  # posenc.language's gettext domains
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
README = ROOT / "README.md"
SITE_INDEX = ROOT / "docs" / "index.md"
# The header Babel writes carries dates; without it a catalog changes only when its text does.
WRITE = dict(width=100, omit_header=False, sort_output=False, include_previous=True)
BADGE = re.compile(r"(colab\.research\.google\.com/github/[^)]+?/notebooks/)([^/)]+\.ipynb)")
NOTEBOOK_LINK = re.compile(r"\]\((notebooks/)(\d\d_\w+\.ipynb)\)")


@dataclass(frozen=True)
class Piece:
    """One paragraph of a markdown text: ``translate`` says whether it is a catalog entry."""

    text: str
    translate: bool
    line: int = 0  # where it starts in the text, from 0


def pieces(markdown: str) -> list[Piece]:
    """``markdown`` cut at blank lines (never inside a code fence or a $$ block), table rows apart."""
    blocks, current, start, fence, math = [], [], 0, False, False
    for number, line in enumerate(markdown.split("\n")):
        stripped = line.strip()
        if stripped.startswith("```"):
            fence = not fence
        elif not fence and (stripped == "$$" or stripped.startswith("$$") != stripped.endswith("$$")):
            math = not math
        if not stripped and not fence and not math:
            blocks.append((start, current))
            current, start = [], number + 1
        else:
            current.append(line)
    blocks.append((start, current))
    found = []
    for start, block in blocks:
        if block and all(line.lstrip().startswith("|") for line in block):
            found += [Piece(row, _is_row_prose(row), start + k) for k, row in enumerate(block)]
        elif block:
            text = "\n".join(block)
            found.append(Piece(text, _is_prose(text), start))
        found.append(Piece("", False))  # the blank line between blocks
    return found[:-1]


def _is_row_prose(row: str) -> bool:
    return not re.fullmatch(r"[|\s:-]+", row) and _is_prose(row)


LINKS_ONLY = re.compile(r"\[[^\]]+\]\([^)]+\)( · \[[^\]]+\]\([^)]+\))*")  # e.g. the README's language links


def _is_prose(text: str) -> bool:
    stripped = text.strip()
    if stripped.startswith(("```", "$$", "[![Open In Colab]", "<!--")) or "    " == text[:4] or LINKS_ONLY.fullmatch(stripped):
        return False
    return bool(re.search(r"[A-Za-z]{2}", re.sub(r"\$[^$]+\$|`[^`]+`", "", stripped)))


def captions() -> list[tuple[int, str]]:
    """(line, caption) of the site index's toctrees: its only prose, kept in README's catalog."""
    lines = SITE_INDEX.read_text().splitlines()
    return [(k, line.removeprefix(":caption: ")) for k, line in enumerate(lines, 1) if line.startswith(":caption: ")]


def sources():
    """(name, [(cell number, markdown text)]) for every notebook and the README."""
    for path in NOTEBOOKS:
        cells = jupytext.read(path).cells
        yield path.stem, [(k, cell.source) for k, cell in enumerate(cells, 1) if cell.cell_type == "markdown"]
    yield "README", [(0, README.read_text())]


HEADER = """\
# {language} translation of the posenc course.
# Translators: write each msgstr in your language; keep code, math and numbers as they are.
# A "#, fuzzy" entry's English changed: check the translation, then delete the flag.
# README.md, "Translating the course", has the commands."""


def new_catalog(language: str | None = None) -> Catalog:
    return Catalog(locale=language, project="posenc", version="course", fuzzy=False,
                   header_comment=HEADER.format(language=language or "A"), copyright_holder="the posenc authors")


def template(name, texts) -> Catalog:
    catalog = new_catalog()
    where = f"notebooks/{name}.ipynb" if name != "README" else "README.md"
    for cell, text in texts:
        for piece in pieces(text):
            if piece.translate:
                # A notebook's entries point at their cell (numbered from 1), the README's at their line.
                catalog.add(piece.text, locations=[(where, cell or piece.line + 1)])
    if name == "README":
        for line, caption in captions():
            catalog.add(caption, locations=[("docs/index.md", line)])
    return without_format_flags(catalog)


def message_template(domain: str) -> Catalog:
    """posenc's messages of one domain: "exercises" from posenc/exercises/, "posenc" from the rest."""
    catalog = new_catalog()
    folder = ROOT / "posenc" / ("exercises" if domain == "exercises" else "")
    skip = (lambda path: True) if domain == "exercises" else (lambda path: "exercises" not in Path(path).parts)
    for filename, lineno, message, comments, context in extract_from_dir(
            folder, keywords={"_": None, "N_": None}, comment_tags=("Translators:",), directory_filter=skip):
        where = f"{folder.relative_to(ROOT)}/{filename}"
        catalog.add(message, locations=[(where, lineno)], auto_comments=comments, context=context)
    return catalog


def read(path: Path, locale: str | None = None) -> Catalog:
    with path.open("rb") as f:
        return pofile.read_po(f, locale=locale)


def dumps(catalog: Catalog, path: Path) -> bytes:
    out = io.BytesIO()
    # The course's entries point at their cell (a translator reads it there); posenc's messages at
    # their file only, so editing code above a message does not change its catalog.
    pofile.write_po(out, catalog, include_lineno=LOCALE in path.parents, **WRITE)
    # The dates would change every file on every run, Babel's version with every Babel.
    return re.sub(rb'"(POT-Creation-Date|PO-Revision-Date|Generated-By): [^"]*\\n"\n', b"", out.getvalue())


def without_format_flags(catalog: Catalog) -> Catalog:
    # Babel reads "{...}" in the math as a format string; the course's prose has no placeholders.
    for message in catalog:
        message.flags -= {"python-format", "python-brace-format"}
    return catalog


def write(path: Path, catalog: Catalog) -> None:
    if LOCALE in path.parents:
        without_format_flags(catalog)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(dumps(catalog, path))


def templates() -> dict[Path, Catalog]:
    """template path -> catalog, for every notebook, the README and posenc's messages."""
    found = {TEMPLATES / f"{name}.pot": template(name, texts) for name, texts in sources()}
    for domain in DOMAINS:
        found[MESSAGES / f"{domain}.pot"] = message_template(domain)
    return found


def catalog_path(template_path: Path, language: str) -> Path:
    """Where ``language``'s catalog for a template lives (gettext's LANG/LC_MESSAGES layout)."""
    base = LOCALE if template_path.parent == TEMPLATES else template_path.parent
    return base / language / "LC_MESSAGES" / template_path.with_suffix(".po").name


def extract() -> None:
    for path, catalog in templates().items():
        write(path, catalog)


def update() -> None:
    for path, new in templates().items():
        for language in LANGUAGES:
            target = catalog_path(path, language)
            catalog = read(target, language) if target.exists() else new_catalog(language)
            catalog.update(new)
            write(target, catalog)


def translation(catalog: Catalog, text: str) -> str:
    message = catalog.get(text)
    return message.string if message and message.string and not message.fuzzy else text


def translate(markdown: str, catalog: Catalog, language: str) -> str:
    text = "\n".join(translation(catalog, p.text) if p.translate else p.text for p in pieces(markdown))
    text = BADGE.sub(rf"\g<1>{language}/\g<2>", text)
    return NOTEBOOK_LINK.sub(rf"](\g<1>{language}/\g<2>)", text)


def translated_notebook(path: Path, language: str) -> str:
    """The py:percent text of ``path`` in ``language``: prose from its catalog, code unchanged."""
    catalog = read(catalog_path(TEMPLATES / f"{path.stem}.pot", language), language)
    notebook = jupytext.read(path)
    for cell in notebook.cells:
        if cell.cell_type == "markdown":
            cell.source = translate(cell.source, catalog, language)
    return jupytext.writes(notebook, fmt="py:percent")


def translated_readme(language: str) -> str:
    catalog = read(catalog_path(TEMPLATES / "README.pot", language), language)
    return translate(README.read_text(), catalog, language)


def outputs(language: str) -> dict[Path, str | bytes]:
    """Every file `build` writes for ``language``, with its content."""
    files: dict[Path, str | bytes] = {ROOT / "notebooks" / language / f"{p.stem}.py": translated_notebook(p, language) for p in NOTEBOOKS}
    files[ROOT / f"README.{language}.md"] = translated_readme(language)
    for domain in DOMAINS:
        compiled = io.BytesIO()
        messages = read(catalog_path(MESSAGES / f"{domain}.pot", language), language)
        # The catalog's dates go into the .mo header: fixed, so a build changes it only with its text.
        messages.creation_date = messages.revision_date = datetime.datetime(2000, 1, 1, tzinfo=datetime.timezone.utc)
        mofile.write_mo(compiled, messages)
        files[catalog_path(MESSAGES / f"{domain}.pot", language).with_suffix(".mo")] = compiled.getvalue()
    return files


def site(language: str) -> None:
    """The sources of ``language``'s site in build/i18n/LANG, laid out as the repository is (same page
    names in every language): the translated README and notebooks, the index with translated captions."""
    catalog = read(catalog_path(TEMPLATES / "README.pot", language), language)
    target = ROOT / "build" / "i18n" / language
    shutil.rmtree(target, ignore_errors=True)
    (target / "docs").mkdir(parents=True)
    (target / "notebooks").mkdir()
    index = SITE_INDEX.read_text()
    for _, caption in captions():
        index = index.replace(f":caption: {caption}\n", f":caption: {translation(catalog, caption)}\n")
    (target / "docs" / "index.md").write_text(index)
    for page in (ROOT / "docs").glob("*.md"):  # the reference pages, in English
        if page != SITE_INDEX:
            shutil.copy(page, target / "docs" / page.name)
    # The site lays its notebooks out as the English one does: notebooks/NN_topic.
    readme = (ROOT / f"README.{language}.md").read_text()
    (target / "README.md").write_text(readme.replace(f"](notebooks/{language}/", "](notebooks/"))
    for path in (ROOT / "notebooks" / language).glob("*.ipynb"):
        shutil.copy(path, target / "notebooks" / path.name)


def compiled_messages(data: bytes) -> dict[str, str]:
    """msgid -> translation of a compiled catalog (its header left out: it names Babel's version)."""
    return {message.id: message.string for message in mofile.read_mo(io.BytesIO(data)) if message.id}


def same_content(path: Path, content: str | bytes) -> bool:
    if not path.exists():
        return False
    if path.suffix == ".mo":
        return compiled_messages(path.read_bytes()) == compiled_messages(content)  # type: ignore[arg-type]
    return path.read_bytes() == (content if isinstance(content, bytes) else content.encode())


def build() -> None:
    for language in LANGUAGES:
        for path, content in outputs(language).items():
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(content) if isinstance(content, bytes) else path.write_text(content)


def problems() -> list[str]:
    """Everything that keeps the translations from being complete and current, one line each."""
    found = []
    for path, new in templates().items():
        if not path.exists() or path.read_bytes() != dumps(new, path):
            found.append(f"{path.relative_to(ROOT)} is out of date: run `make catalogs`")
        for language in LANGUAGES:
            target = catalog_path(path, language)
            if not target.exists():
                found.append(f"{target.relative_to(ROOT)} is missing: run `make catalogs`")
                continue
            catalog = read(target, language)
            for message in new:
                if not message.id:
                    continue
                entry = catalog.get(message.id, message.context)
                state = "missing" if entry is None else "fuzzy" if entry.fuzzy else "untranslated" if not entry.string else None
                if state:
                    where = ", ".join(f"{file} cell {line}" if file.endswith(".ipynb") else f"{file}:{line}"
                                      for file, line in message.locations)
                    found.append(f"{language}: {state}: {where}: {message.id[:100]!r}")
    for language in LANGUAGES:
        for path, content in outputs(language).items():
            if not same_content(path, content):
                found.append(f"{path.relative_to(ROOT)} differs from what the English source and its catalog make: run `make translations`")
    return found


def check() -> int:
    found = problems()
    print("\n".join(found) or "translations: complete and current")
    return 1 if found else 0


if __name__ == "__main__":
    commands = {"extract": extract, "update": update, "build": build, "check": check}
    if len(sys.argv) == 3 and sys.argv[1] == "site" and sys.argv[2] in LANGUAGES:
        sys.exit(site(sys.argv[2]))
    if len(sys.argv) != 2 or sys.argv[1] not in commands:
        sys.exit(f"usage: python scripts/translations.py {{{'|'.join(commands)}}} | site {{{'|'.join(LANGUAGES)}}}")
    sys.exit(commands[sys.argv[1]]())
