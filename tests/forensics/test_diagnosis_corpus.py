"""posenc.diagnose on tables computed the way published code computes them (tests/published_tables.py).

Every source is diagnosed as NumPy, torch and TF tensors and from the prints a learner would
paste (NumPy's repr and print, torch's and TF's reprs, summarised past 1000 entries), at the
lecture's 10x6 and at a larger size, and once more held in float16. The tensor and its print
must get the same finding, and the finding must be the one the source's bug calls for.
"""

import numpy as np
import pytest

import posenc
from published_tables import SOURCES

torch = pytest.importorskip("torch")
tf = pytest.importorskip("tensorflow")


def _prints(table, every, sci_mode=True):
    """``(label, text, shape)`` a learner could paste: NumPy's print (summarised past 1000
    entries, and no shape shown) and torch's repr; with ``every``, TF's repr, NumPy's repr and
    the lectures' 4-decimal print too; torch's ``sci_mode=False`` print where the source used it."""
    shape = table.shape
    texts = [("numpy print", str(table), shape), ("torch repr", repr(torch.from_numpy(table)), shape)]
    if every:
        texts += [("tf repr", repr(tf.constant(table)), None), ("numpy repr", repr(table), shape)]
        with np.printoptions(precision=4, suppress=True):
            texts.append(("numpy rounded", str(table), shape))
    if not sci_mode:
        torch.set_printoptions(sci_mode=False)
        try:
            texts.append(("torch sci_mode=False", repr(torch.from_numpy(table)), shape))
        finally:
            torch.set_printoptions(profile="default")
    return texts


CASES = [(source, size) for source in SOURCES for size in source.sizes]


@pytest.mark.parametrize("source, size", CASES, ids=[f"{s.name}-{n}x{d}" for s, (n, d) in CASES])
def test_published_tables(source, size):
    table = source.table(*size)
    expected = list(source.codes)
    found = posenc.diagnose(table)
    assert found.codes == expected, f"{source.cite}\n{found}"
    if expected != ["unknown"]:
        assert found.max_deviation < 0.05
    first = size == source.sizes[0]
    if first:  # tensors reach diagnose as their arrays: one size shows the way in works
        assert posenc.diagnose(torch.from_numpy(table)).codes == expected
        assert posenc.diagnose(tf.constant(table)).codes == expected
    for label, text, shape in _prints(table, every=first, sci_mode=source.name != "learn_llm"):
        assert posenc.diagnose(text, shape=shape).codes == expected, f"{label}:\n{text}"


@pytest.mark.parametrize("source", SOURCES, ids=[s.name for s in SOURCES])
def test_published_tables_held_in_float16(source):
    # The same table cast to float16 (a model run in half precision): the same finding, and
    # half_precision, from the array, the torch tensor and the prints (torch's and TF's name the
    # dtype; NumPy's print shows float16's digits).
    table = source.table(*source.sizes[0]).astype(np.float16)
    expected = [*source.codes, "half_precision"] if source.codes != ("unknown",) else ["unknown"]
    expected = list(dict.fromkeys(expected))
    assert posenc.diagnose(table).codes == expected, f"{source.cite}\n{posenc.diagnose(table)}"
    assert posenc.diagnose(torch.from_numpy(table)).codes == expected
    for text in (str(table), repr(torch.from_numpy(table)), repr(tf.constant(table))):
        assert posenc.diagnose(text).codes == expected, text
