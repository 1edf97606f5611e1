"""How the package's modules depend on each other: downward only, and frameworks at the edge."""

import ast
import graphlib
from pathlib import Path

import posenc

PACKAGE = Path(posenc.__file__).parent
# Each layer may import itself and the layers named here; nothing imports the edge (the fronts,
# plot, the lessons, the command line) but the edge itself.
MAY_IMPORT = {
    "engine": {"engine"},
    "language": {"engine"},
    "sinusoidal": {"engine", "sinusoidal"},
    "rope": {"engine", "sinusoidal", "rope"},
    "forensics": {"engine", "sinusoidal", "forensics", "language"},
}
EDGE = {"torch", "tensorflow", "jax", "front", "plot", "lessons", "exercises", "__main__"}


def module_name(path):
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports():
    """posenc module -> the posenc modules it imports (relative imports, anywhere in the file)."""
    graph = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        name = module_name(path)
        package = name if path.stem == "__init__" else name.rpartition(".")[0]
        found = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                stem = ".".join(base + ([node.module] if node.module else []))
                if node.module:
                    found.add(stem)
                else:
                    found |= {f"{stem}.{alias.name}" for alias in node.names}
        graph[name] = {m for m in found if m != name}
    return graph


def layer(module):
    """The layer of ``posenc.X.Y``: its subpackage or top-level module ``X`` ("" for ``posenc``)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def known(graph, module):
    # from .engine import checks names the module posenc.engine.checks; from .engine.checks import x, its module.
    return module if module in graph else module.rpartition(".")[0]


def test_imports_form_no_cycle():
    graph = imports()
    modules = {m: {known(graph, i) for i in imported} for m, imported in graph.items()}
    # A package's __init__ imports its own modules; the modules reaching back up to it would be the cycle.
    graphlib.TopologicalSorter(modules).static_order()  # raises CycleError on a cycle


def test_each_layer_imports_only_the_layers_below():
    for module, imported in imports().items():
        own = layer(module)
        if own in MAY_IMPORT:
            above = {layer(i) for i in imported} - MAY_IMPORT[own]
            assert not above, f"{module} imports from {sorted(above)}"


def test_the_kernels_see_only_the_backend_table():
    graph = imports()
    # The backend table imports only the argument checks (for its "backend must be one of" message).
    assert graph["posenc.engine.backends"] <= {"posenc.engine.checks"}
    assert {known(graph, m) for m in graph["posenc.engine.kernels"]} <= {"posenc.engine.backends"}


def test_nothing_below_the_edge_imports_it():
    for module, imported in imports().items():
        if layer(module) in EDGE or module == "posenc":
            continue
        assert not {layer(i) for i in imported} & EDGE, f"{module} imports the edge: {sorted(imported)}"

