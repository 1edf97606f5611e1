"""Every public function and class of posenc is annotated, so mypy checks the code that calls it.

mypy skips the body of an unannotated function and types its calls as ``Any``: a new public
function without annotations would pass ``make test`` unchecked. This test names it instead.
"""

import importlib
import inspect

import pytest

# The modules with an ``__all__``: the package and the parts users import on their own.
MODULES = ["posenc", "posenc.torch", "posenc.tensorflow", "posenc.jax", "posenc.lessons", "posenc.rope.rotary", "posenc.rope.axial",
           "posenc.rope.configs", "posenc.biases"]
FRAMEWORK_OF = {"posenc.torch": "torch", "posenc.tensorflow": "tensorflow", "posenc.jax": "flax", "posenc.lessons": "torch"}
# Methods a user calls though their names begin with an underscore.
DUNDERS_CALLED = ("__init__", "__call__")


def unannotated(function):
    """The parameters (and "return") of ``function`` without an annotation; ``self`` and ``cls`` need none."""
    signature = inspect.signature(function)
    missing = [
        name for name, parameter in signature.parameters.items()
        if name not in ("self", "cls") and parameter.annotation is inspect.Parameter.empty
    ]
    if signature.return_annotation is inspect.Signature.empty:
        missing.append("return")
    return missing


def public_callables(obj):
    """``(name, function)``: ``obj`` itself, or for a class the ``__init__``, ``__call__``, public
    methods and property getters it defines (those it inherits from a framework are not ours)."""
    if not inspect.isclass(obj):
        return [(obj.__qualname__, obj)]
    found = []
    for name, member in vars(obj).items():
        if name.startswith("_") and name not in DUNDERS_CALLED:
            continue
        if isinstance(member, property):
            member = member.fget
        elif isinstance(member, (classmethod, staticmethod)):
            member = member.__func__
        if inspect.isfunction(member):
            found.append((f"{obj.__qualname__}.{name}", member))
    return found


def test_unannotated_names_what_is_missing():
    def half(x, y: int = 0):
        return x

    class Layer:
        def __init__(self, width: int) -> None:
            self.width = width

        @property
        def size(self):
            return self.width

        def call(self, x: float) -> float:
            return x

    assert unannotated(half) == ["x", "return"]
    assert [(name, unannotated(f)) for name, f in public_callables(Layer)] == [
        ("test_unannotated_names_what_is_missing.<locals>.Layer.__init__", []),
        ("test_unannotated_names_what_is_missing.<locals>.Layer.size", ["return"]),
        ("test_unannotated_names_what_is_missing.<locals>.Layer.call", []),
    ]


@pytest.mark.parametrize("module_name", MODULES)
def test_public_api_is_annotated(module_name):
    if module_name in FRAMEWORK_OF:  # the fronts and the lessons import their framework: skip where it is missing
        pytest.importorskip(FRAMEWORK_OF[module_name])
    module = importlib.import_module(module_name)
    checked, missing = 0, {}
    for name in module.__all__:
        obj = getattr(module, name)
        if not callable(obj):
            continue  # a constant (LAYOUTS, DTYPES, ...)
        for qualname, function in public_callables(obj):
            checked += 1
            if unannotated(function):
                missing[f"{function.__module__}.{qualname}"] = unannotated(function)
    assert checked > 0
    assert missing == {}
