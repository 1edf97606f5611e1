"""scripts/check_stack.py: the lowest stack follows pyproject's bounds; the notebook check
catches errors, stderr and figures that arrive as text."""

import importlib.util
import re
import tomllib
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parent.parent
spec = importlib.util.spec_from_file_location("check_stack", ROOT / "scripts" / "check_stack.py")
check_stack = importlib.util.module_from_spec(spec)
spec.loader.exec_module(check_stack)


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


def test_notebook_problems_are_found_by_cell():
    out = nbformat.v4.new_output
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell("text"),
        nbformat.v4.new_code_cell("print(1)", outputs=[out("stream", name="stdout", text="1\n")]),
        nbformat.v4.new_code_cell("plt.plot()\nplt.show()", outputs=[
            out("display_data", data={"text/plain": "<Figure size 640x480 with 1 Axes>", "image/png": "iVBOR"})]),
        nbformat.v4.new_code_cell("import tensorflow", outputs=[out("stream", name="stderr", text="W0000 loop\n")]),
        nbformat.v4.new_code_cell("fig", outputs=[
            out("display_data", data={"text/plain": "<Figure size 1100x350 with 2 Axes>"})]),
        nbformat.v4.new_code_cell("1 / 0", outputs=[
            out("error", ename="ZeroDivisionError", evalue="division by zero", traceback=[])]),
    ])
    assert check_stack.problems(nb, "nb.ipynb") == [
        "nb.ipynb code cell 3 ('import tensorflow'): stderr: W0000 loop",
        "nb.ipynb code cell 4 ('fig'): a figure shown as text, not an image: <Figure size 1100x350 with 2 Axes>",
        "nb.ipynb code cell 5 ('1 / 0'): ZeroDivisionError: division by zero",
    ]


def test_an_unknown_stack_is_refused():
    with pytest.raises(SystemExit, match="stack must be 'lowest' or 'colab', got 'newest'"):
        check_stack.pins("newest")
