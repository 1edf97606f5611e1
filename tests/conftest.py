"""Shared pytest set-up."""

import sys

import pytest
from hypothesis import settings

from frameworks import FRAMEWORKS, FRONTS, adapter

# One profile for every run, a contributor's and CI's alike, so a property test gives the
# same verdict everywhere:
# - derandomize: the examples follow from each test's own source, not from a random seed;
# - database=None: no example database (.hypothesis/) carries a failure found on one machine
#   into the next run there and not elsewhere (derandomized runs need no replay anyway);
# - deadline=None: Hypothesis would fail an example that runs over 200 ms, a timed assertion
#   that a loaded two-core CI machine trips at random. Speed is `make bench`'s business.
# max_examples keeps Hypothesis' default (100); a test's own @settings may change only that
# (tests/test_hypothesis_profile.py checks none turns randomness or the database back on).
settings.register_profile("posenc", derandomize=True, database=None, deadline=None)
settings.load_profile("posenc")

# What `--without` hides: the framework and the packages that stand in for it (Keras runs on
# TensorFlow here; Flax is JAX's module library).
HIDDEN = {"torch": ("torch",), "tensorflow": ("tensorflow", "keras", "tf_keras"), "jax": ("jax", "jaxlib", "flax")}


def pytest_addoption(parser):
    parser.addoption("--without", default="", metavar="torch,tensorflow,jax",
                     help="run as if these frameworks were not installed: their tests skip, one by one")


def pytest_configure(config):
    config.addinivalue_line("markers", "framework(name): the test is that framework's own; it skips where the framework is missing")
    for name in filter(None, config.getoption("--without").split(",")):
        if name not in HIDDEN:
            raise pytest.UsageError(f"--without takes {', '.join(HIDDEN)}, got {name!r}")
        # None in sys.modules makes `import torch` raise ImportError, which pytest.importorskip skips.
        for module in HIDDEN[name]:
            if sys.modules.get(module) is not None:
                raise pytest.UsageError(f"--without {name}: {module} is already imported (by a plugin?)")
            sys.modules[module] = None


def pytest_runtest_setup(item):
    for mark in item.iter_markers("framework"):
        adapter(*mark.args)  # skips this test (not its file) where the framework is missing


@pytest.fixture(params=FRONTS)
def front(request):
    """The ``Front`` of each framework front (torch, tensorflow, jax); skips where one is missing."""
    return adapter(request.param)


@pytest.fixture(params=FRAMEWORKS)
def framework(request):
    """The ``Front`` of NumPy and of each front; skips the test where that framework is missing."""
    return adapter(request.param)


@pytest.fixture
def torch():
    """torch, for a test of NumPy code that compares with torch code; skips that test where torch is missing."""
    return pytest.importorskip("torch")
