"""Shared pytest set-up."""

from hypothesis import settings

# Hypothesis fails an example that runs over 200 ms by default: a timed assertion, which a
# loaded two-core CI machine trips at random. Speed is measured by `make bench`, not here.
settings.register_profile("posenc", deadline=None)
settings.load_profile("posenc")
