"""Shared pytest set-up."""

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


@pytest.fixture(params=FRONTS)
def front(request):
    """The ``Front`` of each framework front (torch, tensorflow, jax); skips where one is missing."""
    return adapter(request.param)


@pytest.fixture(params=FRAMEWORKS)
def framework(request):
    """The ``Front`` of NumPy and of each front; skips the test where that framework is missing."""
    return adapter(request.param)
