"""Check posenc on another stack than the pinned one: `make lowest`, `make colab-stack`.

    python3 scripts/check_stack.py lowest     # the oldest versions pyproject.toml allows
    python3 scripts/check_stack.py colab      # the versions Google Colab runs (see COLAB)
    python3 scripts/check_stack.py pins NAME  # only print the stack's requirements

Builds the virtual environment build/NAME with the stack's versions of NumPy, TensorFlow,
Keras, matplotlib and torch (the tooling, pytest, JupyterLab and the rest, as pip resolves
them beside those). Then what `make test` runs: nbval on the notebooks (the stored outputs,
compared) and the unit tests. The notebooks run in a reader's environment, and two problems
nbval cannot see fail them too (scripts/notebook_problems.py): stderr in a cell whose output
is ignored, and a figure that arrives as `<Figure size ...>` text instead of an image.

The lowest stack follows pyproject.toml: each framework bound `name>=X` becomes `name==X`,
so a bound must name a release that exists, and raising a bound moves the check with it.
torch is the exception: only torch==2.13.0 installs without GBs of CUDA packages here, so
its bound is kept true by reading (see the README).
"""

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


def main(argv):
    if argv[:1] == ["pins"] and len(argv) == 2:
        print("\n".join(pins(argv[1])))
    elif len(argv) == 1:
        stack = argv[0]
        python = build(stack, pins(stack))
        run(python, "-c", "import numpy, tensorflow, keras, matplotlib, torch, jax, jaxlib, flax\n"
            "for m in (numpy, tensorflow, keras, matplotlib, torch, jax, jaxlib, flax): print(m.__name__, m.__version__)",
            env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})
        # A reader's environment has none of the Makefile's TensorFlow settings: the notebooks
        # that import TensorFlow set what they need themselves. The translated notebooks run the
        # English code (tests/test_translations.py): once, on the pinned stack.
        reader = {k: v for k, v in os.environ.items() if k not in ("TF_CPP_MIN_LOG_LEVEL", "TF_ENABLE_ONEDNN_OPTS")}
        pytest = (python, "-m", "pytest", "-q", "-n", "2", "--dist", "loadscope")
        # Both checks run, so one CI run reports every problem.
        failed = [name for name, ok in [
            ("notebooks", run(*pytest, "--nbval", "--nbval-current-env", "-p", "scripts.notebook_problems",
                              *sorted(Path("notebooks").glob("*.ipynb")), env=reader)),
            ("unit tests", run(*pytest, "tests")),
        ] if not ok]
        if failed:
            raise SystemExit(f"stack {stack}: {' and '.join(failed)} failed")
    else:
        raise SystemExit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
