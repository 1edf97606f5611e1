"""How the package's modules depend on each other: downward only, and frameworks at the edge."""

import ast
import graphlib
from pathlib import Path

import posenc

PACKAGE = Path(posenc.__file__).parent
# Modules that import a framework (or matplotlib) or are lesson scaffolding: nothing else imports them.
EDGE = {"torch", "tensorflow", "jax", "plot", "lessons", "exercises", "copy_task", "__main__"}


def imports():
    """module -> the posenc modules it imports (relative imports, anywhere in the file)."""
    graph = {}
    for path in sorted(PACKAGE.glob("*.py")):
        found = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level == 1:
                found |= {node.module.split(".")[0]} if node.module else {alias.name for alias in node.names}
        graph[path.stem] = found
    return graph


def test_imports_form_layers_without_cycles():
    # graphlib raises CycleError on a cycle: some module would import one above it.
    order = list(graphlib.TopologicalSorter(imports()).static_order())
    # kernels imports nothing of posenc (backends neither), so only their place below _rotation is fixed.
    assert max(order.index("backends"), order.index("kernels")) < order.index("_rotation") < order.index("_core")


def test_kernels_see_only_the_backend_table():
    graph = imports()
    assert graph["backends"] == set() and graph["kernels"] <= {"backends"}


def test_no_module_imports_a_front_or_a_lesson():
    for module, imported in imports().items():
        assert not (imported & EDGE), f"posenc.{module} imports {sorted(imported & EDGE)}"
