"""posenc's messages to learners in the notebook's language: gettext catalogs of the "posenc" domain.

English by default; ``language=`` for one call of ``diagnose`` / ``diagnose_grid``, or
``posenc.set_language`` for the session (None: the locale). Every message of the template is
translated in every language, keeps its ``{placeholders}``, and the compiled ``.mo`` is the one
its ``.po`` compiles to.
"""

import importlib.util
import json
import string
import sys
from pathlib import Path

import numpy as np
import pytest

import posenc
import posenc.language
import child
from messages import assert_raises_naming

ROOT = Path(__file__).resolve().parents[1]
LOCALE = ROOT / "posenc" / "locale"
TRANSLATED = ("pt_BR", "zh_CN")


def _scripts_translations():
    spec = importlib.util.spec_from_file_location("translations", ROOT / "scripts" / "translations.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


translations = _scripts_translations()


@pytest.fixture(autouse=True)
def restore_language():
    """Each test starts and ends in the session's language, with no cached locale lookup."""
    before = posenc.get_language()
    posenc.language._translations.cache_clear()
    yield
    posenc.set_language(before)
    posenc.language._translations.cache_clear()


def swapped_table(length=10, d_model=6):
    """The paper's table with sin and cos traded: cosines at the even columns."""
    angles = np.arange(length)[:, None] / 10000.0 ** (2 * (np.arange(d_model) // 2) / d_model)
    table = np.empty((length, d_model))
    table[:, 0::2], table[:, 1::2] = np.cos(angles[:, 0::2]), np.sin(angles[:, 1::2])
    return table


ENGLISH = "This is not the paper's table:"
PORTUGUESE = ("Esta não é a tabela do artigo:", "sin e cos estão trocados")
CHINESE = ("这不是论文中的表：", "sin 和 cos 弄反了")


def test_english_by_default():
    assert posenc.get_language() == "en"
    found = posenc.diagnose(swapped_table())
    assert str(found).splitlines()[0] == ENGLISH
    assert "sin and cos are swapped" in found.findings[0].message


@pytest.mark.parametrize("language, words", [("pt_BR", PORTUGUESE), ("zh_CN", CHINESE)])
def test_language_argument_translates_the_diagnosis(language, words):
    found = posenc.diagnose(swapped_table(), language=language)
    head, line = str(found).splitlines()[:2]
    assert head == words[0] and words[1] in line
    # The codes are the machine-readable part: English in every language.
    assert found.codes == ["swapped_sin_cos"] and line.startswith("- swapped_sin_cos: ")
    assert found.to_dict()["findings"][0]["code"] == "swapped_sin_cos"
    assert words[1] in found.to_dict()["findings"][0]["message"]


def test_language_argument_does_not_leak():
    posenc.diagnose(swapped_table(), language="pt_BR")
    assert posenc.get_language() == "en"
    assert str(posenc.diagnose(swapped_table())).splitlines()[0] == ENGLISH


def test_a_diagnosis_keeps_its_language():
    # Messages are translated when the diagnosis is made; str() later says the rest in the same language.
    found = posenc.diagnose(swapped_table(), language="zh_CN")
    posenc.set_language("pt_BR")
    assert str(found).splitlines()[0] == CHINESE[0]
    assert found.language == "zh_CN"


def test_set_language_holds_until_reset():
    posenc.set_language("pt_BR")
    for _ in range(2):
        assert str(posenc.diagnose(swapped_table())).splitlines()[0] == PORTUGUESE[0]
    # A call's own language wins for that call, then the session's is back.
    assert str(posenc.diagnose(swapped_table(), language="en")).splitlines()[0] == ENGLISH
    assert str(posenc.diagnose(swapped_table())).splitlines()[0] == PORTUGUESE[0]
    posenc.set_language("en")
    assert str(posenc.diagnose(swapped_table())).splitlines()[0] == ENGLISH


def test_set_language_none_follows_the_locale(monkeypatch):
    for name in ("LC_ALL", "LC_MESSAGES", "LANG"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("LANGUAGE", "pt_BR")
    posenc.set_language(None)
    assert posenc.get_language() is None
    assert str(posenc.diagnose(swapped_table())).splitlines()[0] == PORTUGUESE[0]
    monkeypatch.setenv("LANGUAGE", "de_DE")  # no catalog: English
    posenc.language._translations.cache_clear()
    assert str(posenc.diagnose(swapped_table())).splitlines()[0] == ENGLISH


@pytest.mark.parametrize("call", [
    lambda: posenc.set_language("fr"),
    lambda: posenc.diagnose(swapped_table(), language="pt"),
    lambda: posenc.diagnose_grid(posenc.grid_encoding((2, 3), 8), (2, 3), language="Portuguese"),
    lambda: posenc.identify_grid(posenc.grid_encoding((2, 3), 8), (2, 3), language="zh"),
])
def test_a_bad_language_names_the_argument_and_the_languages(call):
    assert_raises_naming(call, ValueError, ["language", "'en'", "'pt_BR'", "'zh_CN'"])
    assert posenc.get_language() == "en"


def test_diagnose_grid_in_each_language():
    table = posenc.grid_encoding((5, 3), 16, convention="mae")  # built for (width, height)
    english = posenc.diagnose_grid(table, (3, 5), "mae")
    assert english.findings == ("mae: height and width swapped: the table was built for a 5 x 3 grid: (width, height) "
                                "passed where (height, width) was meant",)
    assert str(english).startswith("identified: none (closest: ")
    portuguese = posenc.diagnose_grid(table, (3, 5), "mae", language="pt_BR")
    assert portuguese.findings[0].startswith("mae: altura e largura trocadas: ")
    assert str(portuguese).startswith("identificação: nenhuma (a mais próxima: ")
    chinese = posenc.diagnose_grid(table, (3, 5), "mae", language="zh_CN")
    assert chinese.findings[0].startswith("mae：高和宽弄反了：")
    assert str(chinese).startswith("识别结果：无匹配（最接近的：")
    assert str(posenc.diagnose_grid(table, (3, 5), "mae")) == str(english)  # no leak


def test_identify_grid_in_each_language():
    table = np.vstack([np.zeros((1, 16)), posenc.grid_encoding((3, 5), 16, convention="mae")])
    assert str(posenc.identify_grid(table, (3, 5))).startswith("mae after 1 prefix row (zeros); max deviation ")
    assert str(posenc.identify_grid(table, (3, 5), language="pt_BR")).startswith("mae após 1 linha de prefixo (nula); desvio máximo ")
    assert str(posenc.identify_grid(table, (3, 5), language="zh_CN")).startswith("mae，前有 1 个前缀行（全为零）；最大偏差 ")


def test_command_line_language(tmp_path):
    path = tmp_path / "swapped.npy"
    np.save(path, swapped_table())
    run = lambda *args: child.run(["-m", "posenc", "diagnose", str(path), *args],  # noqa: E731
                                  capture_output=True, text=True, encoding="utf-8", cwd=ROOT)
    done = run("--language", "zh_CN")
    assert done.returncode == 1 and done.stdout.splitlines()[0] == CHINESE[0]
    done = run("--language", "pt_BR", "--json")
    finding = json.loads(done.stdout)["findings"][0]
    assert finding["code"] == "swapped_sin_cos" and PORTUGUESE[1] in finding["message"]
    assert PORTUGUESE[1] in done.stdout  # the letters themselves, not \u escapes
    assert run().stdout.splitlines()[0] == ENGLISH
    done = run("--language", "fr")
    assert done.returncode == 2 and "--language" in done.stderr and "pt_BR" in done.stderr


def test_translating_imports_no_framework():
    heavy = "('torch', 'tensorflow', 'keras', 'jax', 'flax', 'matplotlib', 'babel', 'posenc.torch', 'posenc.lessons')"
    use = "posenc.set_language('zh_CN'); str(posenc.diagnose(posenc.positional_encoding(4, 6)))"
    code = f"import sys, posenc; {use}; print(sorted(m for m in {heavy} if m in sys.modules))"
    out = child.run(["-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]" and out.stderr == ""


# --- the catalogs -----------------------------------------------------------------------------


def placeholders(text):
    """The ``{fields}`` of a format string, with their format specs, in order."""
    return sorted((name, spec) for _, name, spec, _ in string.Formatter().parse(text) if name is not None)


def template():
    return [m for m in translations.read(LOCALE / "posenc.pot") if m.id]


def test_the_template_holds_every_marked_message():
    # What `scripts/translations.py extract` finds in the code (diagnosis.py, grid.py, ...) is in posenc.pot.
    marked = {(m.id, m.context) for m in translations.message_template("posenc") if m.id}
    assert marked == {(m.id, m.context) for m in template()}, "run `scripts/translations.py extract` and `update`"
    assert len(marked) >= 40


@pytest.mark.parametrize("language", TRANSLATED)
def test_every_message_is_translated_with_its_placeholders(language):
    catalog = translations.read(LOCALE / language / "LC_MESSAGES" / "posenc.po", language)
    for message in template():
        entry = catalog.get(message.id)
        assert entry is not None and entry.string, f"{language}: untranslated: {message.id!r}"
        assert not entry.fuzzy, f"{language}: fuzzy: {message.id!r}"
        assert placeholders(entry.string) == placeholders(message.id), f"{language}: placeholders of {message.id!r}"
        assert entry.string != message.id, f"{language}: left in English: {message.id!r}"


@pytest.mark.parametrize("language", TRANSLATED)
def test_the_compiled_catalog_is_the_po_compiled(language):
    mo = LOCALE / language / "LC_MESSAGES" / "posenc.mo"
    assert translations.same_content(mo, translations.outputs(language)[mo]), "run `scripts/translations.py build`"


@pytest.mark.parametrize("language", TRANSLATED)
def test_every_translation_formats(language):
    # Each translation takes the same named values as its English message (what the code passes).
    catalog = translations.read(LOCALE / language / "LC_MESSAGES" / "posenc.po", language)
    for message in template():
        values = {name: "x" for name, _ in placeholders(message.id)}
        assert catalog.get(message.id).string.format(**values)


COURSE_FOLDERS = pytest.mark.parametrize("folder, imports, expected", [
    ("notebooks/pt_BR", "ipykernel", "pt_BR"),   # a translated course notebook's kernel
    ("notebooks/zh_CN", "ipykernel", "zh_CN"),
    ("notebooks", "ipykernel", "en"),             # the English course
    ("elsewhere/pt_BR", "ipykernel", "en"),       # only the course's own folders
    ("notebooks/pt_BR", "json", "en"),            # a script, not a notebook kernel
])


@COURSE_FOLDERS
def test_a_translated_notebook_speaks_its_folders_language(tmp_path, folder, imports, expected):
    here = tmp_path / folder
    here.mkdir(parents=True)
    code = f"import {imports}, posenc; print(posenc.get_language())"
    run = child.run(["-c", code], cwd=here, capture_output=True, text=True, check=True)
    assert run.stdout.strip() == expected


@COURSE_FOLDERS
def test_the_course_language_is_read_from_the_folder_in_process(tmp_path, monkeypatch, folder, imports, expected):
    # What `import posenc` decides (the test above, in a new interpreter), asked again in this one.
    (tmp_path / folder).mkdir(parents=True)
    monkeypatch.chdir(tmp_path / folder)
    if imports == "ipykernel":
        monkeypatch.setitem(sys.modules, "ipykernel", sys)  # any module: only its presence counts
    else:
        monkeypatch.delitem(sys.modules, "ipykernel", raising=False)
    assert posenc.language._course_language() == expected


@pytest.mark.parametrize("domain", ["posenc", "exercises"])
@pytest.mark.parametrize("language", TRANSLATED)
def test_a_translator_made_afresh_reads_its_domains_catalog(domain, language):
    catalog = translations.read(LOCALE / language / "LC_MESSAGES" / f"{domain}.po", language)
    entries = [m for m in catalog if m.id and m.string and not m.context and not m.fuzzy][:5]
    translate = posenc.language.translator(domain)
    with posenc.language.using_language(language):
        assert [translate(m.id) for m in entries] == [m.string for m in entries]
    with posenc.language.using_language("en"):
        assert [translate(m.id) for m in entries] == [m.id for m in entries]
