"""posenc.torch: same numbers as the NumPy core, and the nn.Module's behaviour."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import posenc  # noqa: E402
import posenc.torch as pt  # noqa: E402
from lecture_values import TABLE_10x6_4DP  # noqa: E402
from messages import assert_raises_naming  # noqa: E402
from reference import exact_rows  # noqa: E402


@pytest.mark.parametrize("layout", posenc.LAYOUTS)
@pytest.mark.parametrize("length, d_model", [(10, 6), (257, 64), (33, 7), (5, 1)])
def test_table_agrees_with_numpy(length, d_model, layout):
    table = pt.positional_encoding(length, d_model, layout=layout)
    assert table.dtype == torch.float32 and table.shape == (length, d_model)
    expected = posenc.positional_encoding(length, d_model, layout=layout)
    np.testing.assert_allclose(table.numpy(), expected, rtol=0, atol=1e-6)


def test_reproduces_seed_002_table():
    np.testing.assert_allclose(pt.positional_encoding(10, 6).numpy(), TABLE_10x6_4DP, atol=5e-5)


def test_accurate_at_large_positions():
    positions = torch.tensor([65535, 100000])
    np.testing.assert_allclose(pt.encode(positions, 512).numpy(), exact_rows([65535, 100000], 512), atol=1e-6)


def test_encode_fractional_positions_of_any_shape():
    positions = [[0.5, 3.25], [1e4 + 0.5, 7.0]]
    out = pt.encode(positions, 9, dtype=torch.float64)
    assert out.shape == (2, 2, 9) and out.dtype == torch.float64
    np.testing.assert_allclose(out.numpy(), posenc.encode(positions, 9, dtype=np.float64), atol=1e-15)


def test_default_dtype_follows_torch():
    previous = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        assert pt.positional_encoding(3, 4).dtype == torch.float64
    finally:
        torch.set_default_dtype(previous)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32, torch.float64])
def test_dtypes(dtype):
    table = pt.positional_encoding(40, 8, dtype=dtype)
    assert table.dtype == dtype
    np.testing.assert_allclose(table.double().numpy(), posenc.positional_encoding(40, 8, dtype=np.float64),
                               atol=torch.finfo(dtype).eps)


def test_device_argument():
    assert pt.positional_encoding(3, 4, device="cpu").device.type == "cpu"


@pytest.mark.parametrize("call, error, words", [
    (lambda: pt.positional_encoding(4, 6, dtype=torch.int64), TypeError, ["dtype", "torch.int64"]),
    (lambda: pt.positional_encoding(-2, 6), ValueError, ["length", "-2"]),
    (lambda: pt.positional_encoding(4, 0), ValueError, ["d_model", "0"]),
    (lambda: pt.encode(torch.tensor([True]), 4), TypeError, ["positions", "torch.bool"]),
    (lambda: pt.encode(torch.tensor([1.0, float("nan")]), 4), ValueError, ["positions", "finite"]),
    (lambda: pt.PositionalEncoding(6, max_len=-1), ValueError, ["max_len", "-1"]),
    (lambda: pt.PositionalEncoding(6, dropout=1.5), ValueError, ["dropout", "1.5"]),
    (lambda: pt.PositionalEncoding(6, layout="cat"), ValueError, ["layout", "'cat'"]),
])
def test_bad_arguments_are_named(call, error, words):
    assert_raises_naming(call, error, words)


def test_module_adds_the_table():
    module = pt.PositionalEncoding(6, max_len=50).eval()
    x = torch.randn(2, 10, 6, generator=torch.Generator().manual_seed(0))
    np.testing.assert_allclose((module(x) - x).numpy(), np.broadcast_to(TABLE_10x6_4DP, (2, 10, 6)), atol=5e-5)


def test_module_table_is_a_non_persistent_buffer():
    module = pt.PositionalEncoding(8, max_len=16)
    assert "pe" in dict(module.named_buffers())
    assert list(module.state_dict()) == []
    assert module.to(torch.float64).pe.dtype == torch.float64


def test_module_keeps_input_dtype():
    module = pt.PositionalEncoding(8, max_len=16)
    assert module(torch.zeros(1, 4, 8, dtype=torch.float64)).dtype == torch.float64


def test_module_grows_past_max_len():
    module = pt.PositionalEncoding(8, max_len=4).eval()
    out = module(torch.zeros(3, 11, 8))
    assert out.shape == (3, 11, 8) and module.max_len == 11
    np.testing.assert_allclose(out[0].numpy(), posenc.positional_encoding(11, 8), atol=1e-7)


def test_module_accepts_unbatched_input():
    module = pt.PositionalEncoding(4, max_len=8)
    np.testing.assert_allclose(module(torch.zeros(5, 4)).numpy(), posenc.positional_encoding(5, 4), atol=1e-7)


def test_module_rejects_wrong_width():
    module = pt.PositionalEncoding(8)
    with pytest.raises(ValueError, match=r"last dimension of x must be d_model=8, got x of shape \(2, 5, 6\)"):
        module(torch.zeros(2, 5, 6))
    with pytest.raises(ValueError, match="x must have shape"):
        module(torch.zeros(8))


def test_module_takes_a_convention_with_its_options():
    module = pt.PositionalEncoding(9, max_len=6, convention="fairseq")
    assert torch.equal(module.pe, pt.positional_encoding(6, 9, convention="fairseq"))
    module(torch.zeros(1, 10, 9))  # grows with the same convention
    np.testing.assert_array_equal(module.pe.numpy(), posenc.positional_encoding(10, 9, convention="fairseq"))
    assert "convention='fairseq'" in repr(module)
    whisper = pt.PositionalEncoding(6, max_len=5, convention="whisper", max_timescale=100.0)
    np.testing.assert_array_equal(whisper.pe.numpy(),
                                  posenc.positional_encoding(5, 6, convention="whisper", max_timescale=100.0))
    assert_raises_naming(lambda: pt.PositionalEncoding(6, convention="whisper", scale=2.0), TypeError,
                         ["whisper", "max_timescale", "scale"])


def test_module_dropout_only_in_training():
    torch.manual_seed(0)
    module = pt.PositionalEncoding(16, dropout=0.5)
    x = torch.ones(2, 6, 16)
    assert torch.equal(module.eval()(x), module(x))
    assert (module.train()(x) == 0).any()
