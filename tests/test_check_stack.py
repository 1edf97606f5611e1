"""scripts/check_stack.py: the lowest stack follows pyproject's bounds; its nbval plugin
(scripts/notebook_problems.py) catches stderr and figures that arrive as text."""

import importlib.util
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parent.parent


def load(name):
    spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


check_stack = load("check_stack")
notebook_problems = load("notebook_problems")


def test_lowest_stack_installs_exactly_the_bounds():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    bounds = [*project["dependencies"], *extras["torch"], *extras["tensorflow"], *extras["jax"], *extras["plot"]]
    pins = check_stack.pins("lowest")
    for name in check_stack.FRAMEWORKS:
        (bound,) = [b for b in bounds if re.match(rf"{name}>=", b)]
        assert f"{name}=={bound.split('>=')[1]}" in pins
    assert "torch==2.13.0" in pins  # the CPU wheel on disk, whatever the bound


def test_lowest_stack_follows_a_raised_bound(tmp_path):
    text = (ROOT / "pyproject.toml").read_text().replace('"numpy>=1.24.1"', '"numpy>=1.26.4"')
    (tmp_path / "pyproject.toml").write_text(text)
    assert check_stack.lowest_pins(tmp_path / "pyproject.toml")[0] == "numpy==1.26.4"


def test_a_bound_that_is_not_a_plain_lower_bound_is_refused(tmp_path):
    text = (ROOT / "pyproject.toml").read_text().replace('"matplotlib>=3.7"', '"matplotlib>=3.7,<4"')
    (tmp_path / "pyproject.toml").write_text(text)
    with pytest.raises(SystemExit, match=r"expected 'name>=version', got 'matplotlib>=3.7,<4'"):
        check_stack.lowest_pins(tmp_path / "pyproject.toml")


def test_colab_stack_is_tensorflow_2_19_and_numpy_2_0():
    pins = check_stack.pins("colab")
    assert "tensorflow-cpu==2.19.0" in pins and "numpy==2.0.2" in pins


def test_notebook_problems_are_found_in_a_cells_outputs():
    out = nbformat.v4.new_output
    assert notebook_problems.problems([
        out("stream", name="stdout", text="1\n"),
        out("display_data", data={"text/plain": "<Figure size 640x480 with 1 Axes>", "image/png": "iVBOR"}),
        out("stream", name="stderr", text="W0000 loop\n"),
        out("display_data", data={"text/plain": "<Figure size 1100x350 with 2 Axes>"}),
        out("error", ename="ZeroDivisionError", evalue="division by zero", traceback=[]),
    ]) == [
        "stderr: W0000 loop",
        "a figure shown as text, not an image: <Figure size 1100x350 with 2 Axes>",
    ]  # the error is nbval's to judge (a cell may be tagged to raise)


def test_the_plugin_fails_what_nbval_lets_through(tmp_path):
    """Run as check_stack runs it: stderr in an ignored cell and a figure without its image
    fail, though their stored outputs say the same; a clean cell passes."""
    code = nbformat.v4.new_code_cell
    out = nbformat.v4.new_output
    figure = "<Figure size 640x480 with 1 Axes>"
    nb = nbformat.v4.new_notebook(cells=[
        code("print(1)", execution_count=1, outputs=[out("stream", name="stdout", text="1\n")]),
        code("# NBVAL_IGNORE_OUTPUT\nimport sys\nprint('late', file=sys.stderr)", execution_count=2),
        code(f"class Fig:\n    def __repr__(self): return {figure!r}\nFig()", execution_count=3,
             outputs=[out("execute_result", execution_count=3, data={"text/plain": figure})]),
    ])
    nbformat.write(nb, tmp_path / "nb.ipynb")
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:xdist", "--nbval", "--nbval-current-env",
         "-p", "scripts.notebook_problems", "--rootdir", str(tmp_path), str(tmp_path / "nb.ipynb")],
        cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert "1 passed" in result.stdout and "2 failed" in result.stdout, result.stdout[-3000:]
    assert "stderr: late" in result.stdout
    assert f"a figure shown as text, not an image: {figure}" in result.stdout


def test_an_unknown_stack_is_refused():
    with pytest.raises(SystemExit, match="stack must be 'lowest' or 'colab', got 'newest'"):
        check_stack.pins("newest")
