"""The check every bad-input test makes: the right exception, naming what went wrong."""

import pytest


def assert_raises_naming(call, error, words):
    """``call()`` raises ``error`` and its message contains every string in ``words``."""
    with pytest.raises(error) as caught:
        call()
    missing = [word for word in words if word not in str(caught.value)]
    assert not missing, f"{str(caught.value)!r} does not mention {missing}"
