"""A pytest plugin for nbval runs on another stack (scripts/check_stack.py loads it with -p).

nbval compares text only, and not at all in a cell marked NBVAL_IGNORE_OUTPUT, so two
problems would pass it: a figure that arrives as `<Figure size ...>` text with no image
(a matplotlib without an inline backend) and stderr in a cell whose output is ignored.
This fails such a cell, reading the outputs nbval has just executed, so each notebook runs once.
"""

import re

import pytest


def problems(outputs):
    """Each output of one executed cell that went to stderr or shows a figure as its text repr
    (no image/png beside it). Errors are nbval's: it fails them, unless a cell is tagged to raise."""
    found = []
    for output in outputs:
        if output["output_type"] == "stream" and output["name"] == "stderr":
            found.append(f"stderr: {output['text'].strip()[:500]}")
        elif output["output_type"] in ("display_data", "execute_result"):
            text = output["data"].get("text/plain", "")
            if re.match(r"<.*Figure.*>", text) and "image/png" not in output["data"]:
                found.append(f"a figure shown as text, not an image: {text.strip()}")
    return found


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    result = yield
    # nbval keeps the outputs it executed on the cell's item; other items have none.
    found = problems(getattr(item, "test_outputs", []))
    if found:
        pytest.fail("\n".join(found), pytrace=False)
    return result
