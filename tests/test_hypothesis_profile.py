"""The property tests run the same everywhere: conftest's profile, and no test that undoes it."""

import importlib
import pathlib

from hypothesis import given, settings
from hypothesis import strategies as st

TESTS = pathlib.Path(__file__).parent


def test_the_profile_is_loaded():
    assert settings._current_profile == "posenc"
    assert settings.default.derandomize is True
    assert settings.default.database is None
    assert settings.default.deadline is None
    assert settings.default.max_examples >= 100


def property_tests():
    """Every Hypothesis test of tests/, as ``(module, name, settings)``."""
    found = []
    for path in sorted(TESTS.glob("test_*.py")):
        if "hypothesis" not in path.read_text():
            continue
        module = importlib.import_module(path.stem)  # pytest put tests/ on sys.path
        for name, test in vars(module).items():
            if name.startswith("test_") and getattr(test, "is_hypothesis_test", False):
                found.append((path.stem, name, test._hypothesis_internal_use_settings))
    return found


def test_no_property_test_turns_randomness_or_the_database_back_on():
    found = property_tests()
    assert len(found) >= 10 and {"test_core", "test_intuition"} <= {module for module, _, _ in found}
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
