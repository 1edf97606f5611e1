"""posenc.diagnose on tables computed the way published code computes them (tests/published_tables.py).

Every source is diagnosed as a NumPy array and from the prints a learner would paste (NumPy's
repr and print, summarised past 1000 entries), at the lecture's 10x6 and at a larger size, and
once more held in float16; then as torch and TF tensors and from their reprs (each test skips
where its framework is missing). The tensor and its print must get the same finding, and the
finding must be the one the source's bug calls for.
"""

import numpy as np
import pytest

import posenc
from frameworks import only
from published_tables import SOURCES

CASES = [(source, size) for source in SOURCES for size in source.sizes]
IDS = [f"{s.name}-{n}x{d}" for s, (n, d) in CASES]


def numpy_prints(table, every):
    """``(label, text, shape)`` a learner could paste from NumPy: its print (summarised past 1000
    entries, and no shape shown); with ``every``, its repr and the lectures' 4-decimal print too."""
    texts = [("numpy print", str(table), table.shape)]
    if every:
        texts.append(("numpy repr", repr(table), table.shape))
        with np.printoptions(precision=4, suppress=True):
            texts.append(("numpy rounded", str(table), table.shape))
    return texts


def tensor_prints(front, tensor, every, sci_mode=True):
    """The same from a torch or TF tensor: torch's repr at every size (summarised past 1000
    entries), and its ``sci_mode=False`` print where the source used it; TF's repr (which shows
    no shape the reader could use) with ``every``."""
    if front.name == "tensorflow":
        return [("tf repr", repr(tensor), None)] if every else []
    import torch

    texts = [("torch repr", repr(tensor), tuple(tensor.shape))]
    if not sci_mode:
        torch.set_printoptions(sci_mode=False)
        try:
            texts.append(("torch sci_mode=False", repr(tensor), tuple(tensor.shape)))
        finally:
            torch.set_printoptions(profile="default")
    return texts


@pytest.mark.parametrize("source, size", CASES, ids=IDS)
def test_published_tables(source, size):
    table = source.table(*size)
    expected = list(source.codes)
    found = posenc.diagnose(table)
    assert found.codes == expected, f"{source.cite}\n{found}"
    if expected != ["unknown"]:
        assert found.max_deviation < 0.05
    for label, text, shape in numpy_prints(table, every=size == source.sizes[0]):
        assert posenc.diagnose(text, shape=shape).codes == expected, f"{label}:\n{text}"


@only("torch", "tensorflow")
@pytest.mark.parametrize("source, size", CASES, ids=IDS)
def test_published_tables_as_tensors(front, source, size):
    table = source.table(*size)
    expected = list(source.codes)
    first = size == source.sizes[0]
    tensor = front.tensor(table)
    if first:  # tensors reach diagnose as their arrays: one size shows the way in works
        assert posenc.diagnose(tensor).codes == expected
    for label, text, shape in tensor_prints(front, tensor, every=first, sci_mode=source.name != "learn_llm"):
        assert posenc.diagnose(text, shape=shape).codes == expected, f"{label}:\n{text}"


def float16_codes(source):
    """The source's finding and half_precision: a model run in half precision."""
    if source.codes == ("unknown",):
        return ["unknown"]
    return list(dict.fromkeys([*source.codes, "half_precision"]))


@pytest.mark.parametrize("source", SOURCES, ids=[s.name for s in SOURCES])
def test_published_tables_held_in_float16(source):
    # The same table cast to float16: the same finding, and half_precision, from the array and
    # from NumPy's print (which shows float16's digits).
    table = source.table(*source.sizes[0]).astype(np.float16)
    expected = float16_codes(source)
    assert posenc.diagnose(table).codes == expected, f"{source.cite}\n{posenc.diagnose(table)}"
    assert posenc.diagnose(str(table)).codes == expected, str(table)


@only("torch", "tensorflow")
@pytest.mark.parametrize("source", SOURCES, ids=[s.name for s in SOURCES])
def test_published_tables_held_in_float16_as_tensors(front, source):
    # torch's and TF's reprs name the dtype.
    tensor = front.tensor(source.table(*source.sizes[0]).astype(np.float16))
    expected = float16_codes(source)
    assert posenc.diagnose(tensor).codes == expected
    assert posenc.diagnose(repr(tensor)).codes == expected, repr(tensor)
