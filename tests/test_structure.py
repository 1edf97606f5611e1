"""How the package's modules depend on each other: downward only, and frameworks at the edge."""

import ast
import graphlib
import re
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
    "biases": {"engine", "biases"},
    "forensics": {"engine", "sinusoidal", "rope", "forensics", "language"},
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



# --- the public surface ----------------------------------------------------------------

FRONTS = {"posenc.torch", "posenc.tensorflow", "posenc.jax"}
ROOT = PACKAGE.parent


def module_path(module):
    """The file of ``posenc.X.Y``, or None when it is no module of the package."""
    base = ROOT.joinpath(*module.split("."))
    for path in (base.with_suffix(".py"), base / "__init__.py"):
        if path.is_file():
            return path
    return None


def declared(path):
    """``(__all__ or None, the names the module binds at its top level)``, read without importing it
    (the frameworks stay unloaded)."""
    names, found = set(), None
    statements = list(ast.parse(path.read_text()).body)
    for node in statements:
        if isinstance(node, (ast.With, ast.If, ast.Try)):  # their bodies bind module names too
            statements += [*node.body, *getattr(node, "orelse", []), *getattr(node, "finalbody", [])]
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names |= {(alias.asname or alias.name).split(".")[0] for alias in node.names}
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                names |= {n.id for n in ast.walk(target) if isinstance(n, ast.Name)}
                if isinstance(target, ast.Name) and target.id == "__all__":
                    found = ast.literal_eval(node.value)
    return found, names


def public(module):
    found, _ = declared(module_path(module))
    return found


def test_every_module_but_the_fronts_declares_its_public_names():
    for path in sorted(PACKAGE.rglob("*.py")):
        module = module_name(path)
        if module in FRONTS:
            continue
        found, names = declared(path)
        assert found is not None, f"{module} has no __all__"
        assert len(set(found)) == len(found), f"{module}.__all__ names a name twice"
        # A package's __all__ may name its submodules (``from posenc.engine import *`` imports them).
        missing = [n for n in found if n not in names and module_path(f"{module}.{n}") is None]
        assert not missing, f"{module}.__all__ names what it does not define: {missing}"


def code(path):
    """The code a notebook (py:percent) or the README (```python blocks) runs, as one source: a
    name imported in one cell serves the next."""
    text = path.read_text()
    if path.suffix == ".md":
        return "\n".join(re.findall(r"```python\n(.*?)```", text, re.S))
    cells = re.split(r"^# %%(.*)$", text, flags=re.M)
    source = "\n".join(source for header, source in zip(cells[1::2], cells[2::2]) if "[markdown]" not in header)
    # Magics (jupytext writes %pip as a comment, "# %pip") are no Python: each becomes a pass.
    return re.sub(r"^(\s*)# [%!].*$", r"\1pass", source, flags=re.M)


def reached(source):
    """``(module, name)`` for each ``posenc`` name the code reaches: ``posenc.X``, ``alias.X`` of an
    imported posenc module, ``from posenc.M import X``; a submodule on the way is followed."""
    tree = ast.parse(source)
    aliases = {}
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "posenc":
                    aliases[alias.asname or "posenc"] = alias.name if alias.asname else "posenc"
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "posenc":
            for alias in node.names:
                if module_path(f"{node.module}.{alias.name}"):
                    aliases[alias.asname or alias.name] = f"{node.module}.{alias.name}"
                else:
                    out.add((node.module, alias.name))
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            chain = []
            while isinstance(node, ast.Attribute):
                chain.append(node.attr)
                node = node.value
            if isinstance(node, ast.Name) and node.id in aliases:
                module = aliases[node.id]
                for name in reversed(chain):
                    if module_path(f"{module}.{name}") is None:
                        out.add((module, name))
                        break
                    module = f"{module}.{name}"
    return out


def test_what_the_notebooks_and_the_readme_reach_is_public():
    sources = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.py")) + [ROOT / "README.md"]
    found = set().union(*(reached(code(path)) for path in sources))
    assert ("posenc", "positional_encoding") in found and ("posenc.rope", "mrope_position_ids") in found
    assert ("posenc.lessons", "copy_previous_task") in found and ("posenc.torch", "RotaryEmbedding") in found
    hidden = sorted((module, name) for module, name in found if name not in public(module))
    assert not hidden, f"the notebooks or the README use names outside their module's __all__: {hidden}"
