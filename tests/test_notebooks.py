"""Structure of the stored notebooks; nbval (make test) re-executes them and compares outputs.

What nbval cannot see is checked here: a cell never executed (nbval skips it silently),
an .ipynb and its .py twin drifting apart, Colab links pointing somewhere else.
"""

import json
import re
import tomllib
from pathlib import Path

import jupytext
import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
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


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_py_twin_is_in_sync(path):
    twin = path.with_suffix(".py")
    assert twin.exists(), f"{path.name} has no {twin.name}"
    # The same conversion as `jupytext --to py:percent --output - NB.ipynb`.
    assert jupytext.writes(jupytext.read(path), fmt="py:percent") == twin.read_text()


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_every_code_cell_was_executed_in_order(path):
    counts = [c["execution_count"] for c in cells(path, "code")]
    assert counts == list(range(1, len(counts) + 1))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_outputs_are_clean(path):
    for cell in cells(path, "code"):
        for output in cell["outputs"]:
            assert output.get("name") != "stderr", f"stderr stored in {path.name}: {source(cell)[:60]}"
            assert output["output_type"] != "error", f"error stored in {path.name}: {source(cell)[:60]}"
            text = json.dumps(output.get("data", {}).get("text/plain", "")) + json.dumps(output.get("text", ""))
            assert not re.search(r" at 0x[0-9a-f]+", text), f"memory address in {path.name}: {text[:80]}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_has_a_figure(path):
    outputs = [o for c in cells(path, "code") for o in c["outputs"]]
    assert any("image/png" in o.get("data", {}) for o in outputs)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_title_badge_and_colab_setup_cell(path):
    title = source(cells(path, "markdown")[0])
    assert title.startswith("# ")
    badge = f"https://colab.research.google.com/github/{SLUG}/blob/{BRANCH}/notebooks/{path.name}"
    assert f"[![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)]({badge})" in title
    setup = cells(path, "code")[0]
    assert 'if "google.colab" in sys.modules:' in source(setup)
    assert f'%pip install --quiet "posenc @ git+{REPOSITORY}@{BRANCH}"' in source(setup)
    assert setup["outputs"] == []  # prints nothing outside Colab


def test_every_colab_link_in_the_repository_uses_the_slug():
    for path in [*NOTEBOOKS, *ROOT.glob("notebooks/*.py"), ROOT / "README.md"]:
        for slug in re.findall(r"colab\.research\.google\.com/github/([^/]+/[^/]+)/", path.read_text()):
            assert slug == SLUG, f"{path.name} links to {slug}, pyproject says {SLUG}"
        for url in re.findall(r"git\+(https://github\.com/[^@\"]+)", path.read_text()):
            assert url == REPOSITORY, f"{path.name} installs from {url}"
