"""Check posenc on another stack than the pinned one: `make lowest`, `make colab-stack`.

    python3 scripts/check_stack.py lowest     # the oldest versions pyproject.toml allows
    python3 scripts/check_stack.py colab      # the versions Google Colab runs (see COLAB)
    python3 scripts/check_stack.py pins NAME  # only print the stack's requirements

Builds the virtual environment build/NAME with the stack's versions of NumPy, TensorFlow,
Keras, matplotlib and torch (the tooling, pytest, JupyterLab and the rest, as pip resolves
them beside those), then executes every notebook afresh there: no cell may raise or write
to stderr, and every figure must arrive as an image (a matplotlib without an inline backend
shows `<Figure size ...>` text instead, which nbval cannot see: it compares text only).
Then what `make test` runs: the unit tests and nbval (the stored outputs, compared).

The lowest stack follows pyproject.toml: each framework bound `name>=X` becomes `name==X`,
so a bound must name a release that exists, and raising a bound moves the check with it.
torch is the exception: only torch==2.13.0 installs without GBs of CUDA packages here, so
its bound is kept true by reading (see the README).
"""

import concurrent.futures
import hashlib
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TORCH = "torch==2.13.0"
# The packages whose versions make a stack; the rest is tooling.
FRAMEWORKS = ("numpy", "tensorflow-cpu", "keras", "matplotlib", "jax", "jaxlib", "flax")
# Colab's stack (Python 3.12 there): numpy 2.0.2, tensorflow 2.19.0, keras 3.10.0, matplotlib
# 3.10.0. tensorflow-cpu is the same code as Colab's tensorflow wheel, without CUDA. JAX 0.5.2
# is the one Colab's runtime notes name (googlecolab/backend-info, runtime 2025.07; jax 0.5.2
# came with no jaxlib of its own, so jaxlib 0.5.1); flax 0.10.4 is the release of that time.
COLAB = ("numpy==2.0.2", "tensorflow-cpu==2.19.0", "keras==3.10.0", "matplotlib==3.10.0",
         "jax==0.5.2", "jaxlib==0.5.1", "flax==0.10.4")
EXTRAS = "test"


def lowest_pins(pyproject=ROOT / "pyproject.toml"):
    """``name==X`` for each framework's bound ``name>=X`` in pyproject.toml."""
    project = tomllib.loads(pyproject.read_text())["project"]
    requirements = list(project["dependencies"])
    for extra in ("torch", "tensorflow", "jax", "plot"):
        requirements += project["optional-dependencies"][extra]
    bounds = {}
    for requirement in requirements:
        match = re.fullmatch(r"([A-Za-z0-9_.-]+)\s*>=\s*([0-9][0-9.]*)", requirement)
        if not match:
            raise SystemExit(f"pyproject.toml: expected 'name>=version', got {requirement!r}")
        bounds[match[1].lower()] = match[2]
    missing = [name for name in FRAMEWORKS if name not in bounds]
    if missing:
        raise SystemExit(f"pyproject.toml: no lower bound for {', '.join(missing)}")
    return tuple(f"{name}=={bounds[name]}" for name in FRAMEWORKS)


def pins(stack):
    if stack == "lowest":
        return (*lowest_pins(), TORCH)
    if stack == "colab":
        return (*COLAB, TORCH)
    raise SystemExit(f"stack must be 'lowest' or 'colab', got {stack!r}")


def run(*command, **kwargs):
    """Run ``command`` in the repository; True when it succeeded."""
    print("+", " ".join(map(str, command)), flush=True)
    return subprocess.run(command, cwd=ROOT, **kwargs).returncode == 0


def build(stack, requirements):
    """build/STACK with the stack's versions; rebuilt when they or pyproject's [project] change."""
    venv = ROOT / "build" / stack
    python = venv / "bin" / "python"
    stamp = venv / ".stack"
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    wanted = "\n".join(requirements) + "\n" + hashlib.sha256(repr(project).encode()).hexdigest()
    if python.exists() and stamp.exists() and stamp.read_text() == wanted:
        return python
    # --prefer-binary: beside old pins pip would otherwise walk back to a source-only release
    # (flax's tensorstore and orbax-checkpoint) that does not build; an older wheel does.
    if not (run(sys.executable, "-m", "venv", "--clear", venv)
            and run(python, "-m", "pip", "install", "--quiet", "--progress-bar", "off", "--prefer-binary", *requirements,
                    f"-e.[{EXTRAS}]")):
        raise SystemExit(f"build/{stack}: the install failed")
    stamp.write_text(wanted)
    return python


def execute(notebook):
    """``notebook`` (a path) run afresh in this Python, its stored outputs replaced."""
    import nbclient
    import nbformat

    nb = nbformat.read(notebook, as_version=4)
    nbclient.NotebookClient(nb, timeout=1200, kernel_name="python3", allow_errors=True,
                            resources={"metadata": {"path": str(notebook.parent)}}).execute()
    return nb


def problems(nb, name):
    """Each output of an executed notebook that is an error, went to stderr, or shows a
    figure as its text repr (no image/png beside it), named by code cell and first line."""
    found = []
    for number, cell in enumerate((c for c in nb.cells if c.cell_type == "code"), start=1):
        where = f"{name} code cell {number} ({cell.source.splitlines()[0] if cell.source else ''!r})"
        for output in cell.get("outputs", []):
            if output.output_type == "error":
                found.append(f"{where}: {output.ename}: {output.evalue}")
            elif output.output_type == "stream" and output.name == "stderr":
                found.append(f"{where}: stderr: {output.text.strip()[:500]}")
            elif output.output_type in ("display_data", "execute_result"):
                text = output.data.get("text/plain", "")
                if re.match(r"<.*Figure.*>", text) and "image/png" not in output.data:
                    found.append(f"{where}: a figure shown as text, not an image: {text.strip()}")
    return found


def notebook_problems(notebook):
    return problems(execute(notebook), notebook.name)


def check_notebooks():
    """Inside the stack's Python: every notebook, as a reader would run it."""
    # A reader's environment has none of the Makefile's TensorFlow settings: the notebooks
    # that import TensorFlow set what they need themselves.
    for name in ("TF_CPP_MIN_LOG_LEVEL", "TF_ENABLE_ONEDNN_OPTS"):
        os.environ.pop(name, None)
    notebooks = sorted((ROOT / "notebooks").glob("*.ipynb"))
    if not notebooks:
        raise SystemExit("no notebooks found in notebooks/")
    failed = []
    # Two at a time: a notebook's kernel spends much of its time starting and importing, with a core to spare.
    with concurrent.futures.ProcessPoolExecutor(max_workers=2) as pool:
        for notebook, found in zip(notebooks, pool.map(notebook_problems, notebooks)):
            print(f"{notebook.name}: {'ok' if not found else f'{len(found)} problem(s)'}", flush=True)
            failed += found
    for problem in failed:
        print("  " + problem)
    if failed:
        raise SystemExit(f"{len(failed)} problem(s) in {len(notebooks)} notebooks")
    print(f"{len(notebooks)} notebooks ran with no error, no stderr, every figure an image")


def main(argv):
    if argv[:1] == ["pins"] and len(argv) == 2:
        print("\n".join(pins(argv[1])))
    elif argv == ["--notebooks"]:
        check_notebooks()
    elif len(argv) == 1:
        stack = argv[0]
        python = build(stack, pins(stack))
        run(python, "-c", "import numpy, tensorflow, keras, matplotlib, torch, jax, jaxlib, flax\n"
            "for m in (numpy, tensorflow, keras, matplotlib, torch, jax, jaxlib, flax): print(m.__name__, m.__version__)",
            env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})
        # Both checks run, so one CI run reports every problem.
        failed = [name for name, ok in [
            ("notebooks", run(python, Path(__file__).resolve(), "--notebooks")),
            # The translated notebooks run the English code (tests/test_translations.py): once, on the pinned stack.
            ("pytest", run(python, "-m", "pytest", "-q", "-n", "2", "--dist", "loadscope", "--nbval", "--nbval-current-env",
                           "--ignore=notebooks/pt_BR", "--ignore=notebooks/zh_CN")),
        ] if not ok]
        if failed:
            raise SystemExit(f"stack {stack}: {' and '.join(failed)} failed")
    else:
        raise SystemExit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
