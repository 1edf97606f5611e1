"""Structure of the stored notebooks; nbval (make test) re-executes them and compares outputs.

What nbval cannot see is checked here: a cell never executed (nbval skips it silently),
an .ipynb and its .py twin drifting apart, Colab links pointing somewhere else.
"""

import ast
import json
import re
import tomllib
from pathlib import Path

import jupytext
import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
# The translations (scripts/translations.py): the same structure, their prose from catalogs.
TRANSLATED = sorted((ROOT / "notebooks").glob("*/*.ipynb"))
EVERY_NOTEBOOK = NOTEBOOKS + TRANSLATED
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
REPOSITORY = PYPROJECT["project"]["urls"]["Repository"]
SLUG = REPOSITORY.removeprefix("https://github.com/")
BRANCH = PYPROJECT["tool"]["posenc"]["colab-branch"]  # `make colab` rewrites both


def cells(path, kind):
    return [c for c in json.loads(path.read_text())["cells"] if c["cell_type"] == kind]


def source(cell):
    return "".join(cell["source"])


def test_the_lecture_notebooks_exist():
    names = [p.stem for p in NOTEBOOKS]
    assert names[:3] == ["01_numpy", "02_pytorch", "03_tensorflow"]


@pytest.mark.parametrize("path", EVERY_NOTEBOOK, ids=lambda p: str(p.relative_to(ROOT / "notebooks")))
def test_py_twin_is_in_sync(path):
    twin = path.with_suffix(".py")
    assert twin.exists(), f"{path.name} has no {twin.name}"
    # The same conversion as `jupytext --to py:percent --output - NB.ipynb`.
    assert jupytext.writes(jupytext.read(path), fmt="py:percent") == twin.read_text()


@pytest.mark.parametrize("path", EVERY_NOTEBOOK, ids=lambda p: str(p.relative_to(ROOT / "notebooks")))
def test_every_code_cell_was_executed_in_order(path):
    counts = [c["execution_count"] for c in cells(path, "code")]
    assert counts == list(range(1, len(counts) + 1))


@pytest.mark.parametrize("path", EVERY_NOTEBOOK, ids=lambda p: str(p.relative_to(ROOT / "notebooks")))
def test_outputs_are_clean(path):
    for cell in cells(path, "code"):
        for output in cell["outputs"]:
            assert output.get("name") != "stderr", f"stderr stored in {path.name}: {source(cell)[:60]}"
            assert output["output_type"] != "error", f"error stored in {path.name}: {source(cell)[:60]}"
            text = json.dumps(output.get("data", {}).get("text/plain", "")) + json.dumps(output.get("text", ""))
            assert not re.search(r" at 0x[0-9a-f]+", text), f"memory address in {path.name}: {text[:80]}"


@pytest.mark.parametrize("path", EVERY_NOTEBOOK, ids=lambda p: str(p.relative_to(ROOT / "notebooks")))
def test_has_a_figure(path):
    outputs = [o for c in cells(path, "code") for o in c["outputs"]]
    assert any("image/png" in o.get("data", {}) for o in outputs)


@pytest.mark.parametrize("path", EVERY_NOTEBOOK, ids=lambda p: str(p.relative_to(ROOT / "notebooks")))
def test_title_badge_and_colab_setup_cell(path):
    title = source(cells(path, "markdown")[0])
    assert title.startswith("# ")
    badge = f"https://colab.research.google.com/github/{SLUG}/blob/{BRANCH}/{path.relative_to(ROOT).as_posix()}"
    assert f"[![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)]({badge})" in title
    setup = cells(path, "code")[0]
    assert 'if "google.colab" in sys.modules:' in source(setup)
    assert f'%pip install --quiet "posenc @ git+{REPOSITORY}@{BRANCH}"' in source(setup)
    assert setup["outputs"] == []  # prints nothing outside Colab


def test_every_colab_link_in_the_repository_uses_the_slug():
    for path in [*EVERY_NOTEBOOK, *ROOT.glob("notebooks/**/*.py"), *ROOT.glob("README*.md")]:
        for slug in re.findall(r"colab\.research\.google\.com/github/([^/]+/[^/]+)/", path.read_text()):
            assert slug == SLUG, f"{path.name} links to {slug}, pyproject says {SLUG}"
        for url in re.findall(r"git\+(https://github\.com/[^@\"]+)", path.read_text()):
            assert url == REPOSITORY, f"{path.name} installs from {url}"


# The shape of a lesson (DESIGN.md, section 3). The title cell says what the notebook answers,
# what the reader will be able to do, what to read first and how long it takes; the README's
# course map repeats the last two, so they are read from here.
QUESTION = re.compile(r"^\*\*Question:\*\* .+\?$", re.M)
ABLE = re.compile(r"^\*\*You will be able to:\*\*", re.M)
PLACE = re.compile(r"^\*\*Prerequisites:\*\* (?P<prerequisites>.+) · \*\*Time:\*\* about (?P<minutes>\d+) minutes$", re.M)
FEEDBACK_CALL = re.compile(r"\.check\(|\bdiagnose(_grid)?\(")
CHECKS_HEADING = "## Cross-checks"


def sections(path):
    """(heading, code cells under it) for every markdown heading line, in order."""
    found = []
    for cell in json.loads(path.read_text())["cells"]:
        if cell["cell_type"] == "markdown":
            found += [[line, []] for line in source(cell).splitlines() if line.startswith("#")]
        elif found:
            found[-1][1].append(cell)
    return found


def asserts(cell):
    # IPython magics and shell lines are not Python: read them as `pass`.
    code = re.sub(r"^(\s*)[%!].*$", r"\1pass", source(cell), flags=re.M)
    return sum(isinstance(node, ast.Assert) for node in ast.walk(ast.parse(code)))


def teaching_cells(path):
    cells_, closing = [], False
    for heading, code in sections(path):
        if heading.startswith("## "):
            closing = heading == CHECKS_HEADING
        if not closing:
            cells_ += code
    return cells_


def course_place(path):
    match = PLACE.search(source(cells(path, "markdown")[0]))
    return match and (match["prerequisites"], int(match["minutes"]))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_opens_with_its_question_and_place_in_the_course(path):
    title = source(cells(path, "markdown")[0])
    assert QUESTION.search(title), f"{path.name}: no '**Question:** ...?' line in the title cell"
    assert ABLE.search(title), f"{path.name}: no '**You will be able to:**' in the title cell"
    assert course_place(path), f"{path.name}: no '**Prerequisites:** ... · **Time:** about N minutes' line"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_ends_with_a_summary_and_exercises_that_answer_back(path):
    headings = [heading for heading, _ in sections(path)]
    assert "## Summary" in headings, f"{path.name} has no '## Summary'"
    exercises = [(h, code) for h, code in sections(path) if re.match(r"### Exercise \d+\b", h)]
    assert len(exercises) >= 2, f"{path.name} has {len(exercises)} '### Exercise N' sections, at least 2 wanted"
    for heading, code in exercises:
        assert any(FEEDBACK_CALL.search(source(c)) for c in code), f"{path.name}: '{heading}' has no feedback call"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_a_teaching_cell_holds_at_most_one_assert(path):
    crowded = [source(c)[:60] for c in teaching_cells(path) if asserts(c) > 1]
    assert not crowded, f"{path.name}: cells with more than one assert outside '{CHECKS_HEADING}': {crowded}"


def test_the_course_map_in_the_readme_agrees_with_the_notebooks():
    readme = (ROOT / "README.md").read_text()
    for path in NOTEBOOKS:
        prerequisites, minutes = course_place(path)
        link = rf"\[{path.stem}\]\(notebooks/{path.name}\)"
        row = re.search(rf"^\| {link} \|.*\| {re.escape(prerequisites)} \| {minutes} min \|$", readme, re.M)
        assert row, f"README's course map has no row for {path.name} with '{prerequisites}' and '{minutes} min'"


def course_order():
    """The notebooks' stems in the order of the README's course map (a stage may hold a later number)."""
    return re.findall(r"^\| \[(\w+)\]\(notebooks/\w+\.ipynb\) \|", (ROOT / "README.md").read_text(), re.M)


def test_the_site_lists_every_notebook_once_in_course_order():
    index = (ROOT / "docs" / "index.md").read_text()
    listed = re.findall(r"^\.\./notebooks/(\S+)$", index, re.M)
    assert sorted(course_order()) == [p.stem for p in NOTEBOOKS]  # the map holds each notebook once
    assert listed == course_order()
