"""posenc.torch: what only torch has (its default dtype, devices, buffers, the module's repr).

The behaviour the fronts share is tested once for all of them in test_frameworks.py.
"""

import pytest

torch = pytest.importorskip("torch")
import posenc.torch as pt  # noqa: E402


def test_default_dtype_follows_torch():
    previous = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        assert pt.positional_encoding(3, 4).dtype == torch.float64
    finally:
        torch.set_default_dtype(previous)


def test_device_argument():
    assert pt.positional_encoding(3, 4, device="cpu").device.type == "cpu"


def test_module_table_is_a_non_persistent_buffer():
    module = pt.PositionalEncoding(8, max_len=16)
    assert "pe" in dict(module.named_buffers())
    assert list(module.state_dict()) == []
    assert module.to(torch.float64).pe.dtype == torch.float64


def test_module_repr_names_its_convention():
    assert "convention='fairseq'" in repr(pt.PositionalEncoding(9, max_len=6, convention="fairseq"))
