"""The property tests run the same everywhere: conftest's profile, and no test that undoes it."""

import importlib.util
import pathlib
import sys

from hypothesis import given, settings
from hypothesis import strategies as st

TESTS = pathlib.Path(__file__).parent


def test_the_profile_is_loaded():
    assert settings._current_profile == "posenc"
    assert settings.default.derandomize is True
    assert settings.default.database is None
    assert settings.default.deadline is None
    assert settings.default.max_examples >= 100


def load(path):
    """The test module at ``path``, imported under its stem as pytest imports it."""
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def property_tests():
    """Every Hypothesis test of tests/, as ``(module, name, settings)``."""
    found = []
    for path in sorted(TESTS.rglob("test_*.py")):
        if "hypothesis" not in path.read_text():
            continue
        module = sys.modules.get(path.stem) or load(path)
        for name, test in vars(module).items():
            if name.startswith("test_") and getattr(test, "is_hypothesis_test", False):
                found.append((path.stem, name, test._hypothesis_internal_use_settings))
    return found


def test_no_property_test_turns_randomness_or_the_database_back_on():
    found = property_tests()
    assert len(found) >= 10 and {"test_tables", "test_geometry"} <= {module for module, _, _ in found}
    for module, name, chosen in found:
        assert chosen.derandomize is True, f"{module}.{name} draws random examples"
        assert chosen.database is None, f"{module}.{name} keeps an example database"
        assert chosen.deadline is None, f"{module}.{name} has a deadline"


def test_a_property_draws_the_same_examples_on_every_run():
    drawn = []

    @given(st.integers(-(10**9), 10**9))
    def record(value):
        drawn[-1].append(value)

    for _ in range(2):
        drawn.append([])
        record()
    assert len(drawn[0]) >= 50 and drawn[0] == drawn[1]
