"""posenc.torch: what only torch has (its default dtype, devices, buffers, the module's repr).

The behaviour the fronts share is tested once for all of them in test_front.py.
"""

import numpy as np
import pytest

import posenc

try:
    import torch

    import posenc.torch as pt
except ImportError:  # the tests skip one by one (the framework mark below)
    torch = pt = None

pytestmark = pytest.mark.framework("torch")  # each test skips (not the file) where torch is missing


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


def test_a_module_moved_to_float64_grows_its_table_in_float64():
    module = pt.PositionalEncoding(8, max_len=4).double()
    out = module(torch.zeros(1, 11, 8, dtype=torch.float64))  # past max_len: the table grows
    assert module.pe.dtype == torch.float64 and module.max_len == 11
    np.testing.assert_allclose(out[0].numpy(), posenc.positional_encoding(11, 8, dtype=np.float64), rtol=0, atol=1e-15)


def test_module_repr_names_its_convention_unless_it_is_the_papers():
    assert pt.PositionalEncoding(9, max_len=6, convention="fairseq").extra_repr() == (
        "d_model=9, max_len=6, convention='fairseq', base=10000, layout='sin_cos'")
    assert pt.PositionalEncoding(8, max_len=6, base=100.0, layout="sin_cos").extra_repr() == (
        "d_model=8, max_len=6, base=100, layout='sin_cos'")


def test_positional_encoding_takes_position_ids_as_marian_does():
    # transformers' MarianSinusoidalPositionalEmbedding.forward(..., position_ids=...): the same rows
    # at the same (packed, offset) positions, added to x.
    marian = pytest.importorskip("transformers.models.marian.modeling_marian", reason="transformers (the conventions extra)")
    embedding = marian.MarianSinusoidalPositionalEmbedding(64, 16)
    embedding.weight.data.copy_(embedding.create_weight())
    position_ids = torch.tensor([[0, 1, 2, 0, 1, 2, 3], [40, 41, 42, 43, 44, 45, 46]])
    x = torch.randn(2, 7, 16, generator=torch.Generator().manual_seed(0))
    got = pt.PositionalEncoding(16, max_len=8, convention="hf-marian")(x, position_ids)
    # Marian rounds float64 values once to float32; posenc is within 2e-7; then the sum's rounding.
    torch.testing.assert_close(got, x + embedding(x.shape, position_ids=position_ids), rtol=0, atol=2e-7 + 2**-22)


def test_eager_calls_keep_the_positions_device():
    # On torch's "meta" device (shapes, no data) every route that is not NumPy's must stay there.
    positions = torch.arange(6, device="meta").reshape(2, 3)
    assert pt.encode(positions, 8).device.type == "meta"
    assert all(t.device.type == "meta" for t in pt.rotary_cos_sin(positions, 8, dtype=torch.bfloat16))
    module = pt.RotaryEmbedding(8).to("meta")
    assert all(t.device.type == "meta" for t in module(torch.zeros(1, device="meta"), positions))
    table = pt.PositionalEncoding(8, max_len=4).to("meta")
    assert table(torch.zeros(2, 3, 8, device="meta"), positions).device.type == "meta"
    into = torch.empty(2, 3, 8, device="meta")
    assert pt.encode(positions, 8, out=into) is into  # off the host route too, out= is what comes back
    # Float positions too: a meta tensor has no values whose finiteness could be checked.
    assert pt.encode(positions.to(torch.float32), 8).device.type == "meta"
    features = pt.random_fourier_features(torch.zeros(5, 2, device="meta"), torch.zeros(2, 3, device="meta"))
    assert features.device.type == "meta" and features.shape == (5, 6)
    # A projection given as an array (SAM's buffer read from a file) joins the coordinates' device.
    features = pt.random_fourier_features(torch.zeros(5, 2, device="meta"), np.ones((2, 3)))
    assert features.device.type == "meta" and features.shape == (5, 6)


def test_out_on_another_device_than_asked_is_refused():
    out = torch.zeros(4, 6, device="meta")
    with pytest.raises(ValueError, match="out must be on device cpu, got out on meta"):
        pt.positional_encoding(4, 6, device="cpu", out=out)


def test_a_per_layer_type_module_starts_empty_like_a_module_dict():
    per_type = pt.RotaryEmbeddingPerLayerType()
    assert len(per_type) == 0
    per_type["full_attention"] = pt.RotaryEmbedding(8)
    cos, sin = per_type(torch.zeros(1, 3, 8), torch.arange(3)[None], "full_attention")
    torch.testing.assert_close(cos, pt.RotaryEmbedding(8)(torch.zeros(1, 3, 8), torch.arange(3)[None])[0], rtol=0, atol=0)


def test_while_compiling_positions_stay_in_the_graph(monkeypatch):
    # A compiled graph cannot branch on a tensor's values: there float positions are not checked
    # finite and no NumPy route is offered. tests/test_compiled.py compiles for real; mutmut's
    # trampolines cannot be compiled, so this reads the same decision eagerly.
    nan = torch.tensor([0.0, float("nan")])
    with pytest.raises(ValueError, match="positions must be finite"):
        pt._intake(nan)
    assert pt._intake(torch.arange(3)).host is not None
    monkeypatch.setattr(torch.compiler, "is_compiling", lambda: True)
    taken = pt._intake(nan)
    assert taken.traced is True and taken.host is None
    assert pt._intake(torch.arange(3)).host is None


def test_out_lends_its_memory_to_numpy_only_where_numpy_may_write(monkeypatch):
    # Eagerly on the CPU, in a NumPy dtype, without autograd, NumPy writes the table straight into
    # out= (no second table); elsewhere out gets a copy. Both give the same values, so the choice is
    # read where it is made.
    def lent(out, dtype=torch.float32):
        return pt._out(out, tuple(out.shape), dtype, None)[1]

    out = torch.zeros(4, 6)
    assert np.shares_memory(lent(out), out.numpy())
    assert lent(torch.zeros(4, 6, dtype=torch.bfloat16), torch.bfloat16) is None
    assert lent(torch.zeros(4, 6, requires_grad=True)) is None
    assert lent(torch.zeros(4, 6, device="meta")) is None
    monkeypatch.setattr(torch.compiler, "is_compiling", lambda: True)
    assert lent(torch.zeros(4, 6)) is None


def test_while_compiling_the_table_is_built_in_torch_operations(monkeypatch):
    # In a graph positional_encoding builds encode's rows with torch's operations (NumPy's table
    # would be a constant torch.compile cannot trace). tests/test_compiled.py compiles for real.
    eager = pt.positional_encoding(12, 8)
    assert pt.SPEC.traced() is False
    monkeypatch.setattr(torch.compiler, "is_compiling", lambda: True)
    assert pt.SPEC.traced() is True
    monkeypatch.setattr(posenc.sinusoidal.tables, "positional_encoding", lambda *args, **kwargs: pytest.fail("NumPy's table in a graph"))
    torch.testing.assert_close(pt.positional_encoding(12, 8), eager, rtol=0, atol=2e-7)
    assert pt.positional_encoding(12, 8, device="meta").device.type == "meta"  # its positions made there
    module = pt.PositionalEncoding(8, max_len=4)  # grown in the graph from the frequencies made at construction:
    monkeypatch.setattr(posenc.sinusoidal.conventions.Convention, "frequency_record", lambda *args: pytest.fail("decimals in a graph"))
    torch.testing.assert_close(module(torch.zeros(12, 8)), eager, rtol=0, atol=2e-7)


def test_while_compiling_rotary_frequencies_are_not_kept(monkeypatch):
    # Tensors made in a trace belong to its graph: the rotary module keeps per-device frequencies
    # only when made eagerly (at construction on torch's default device, and in eager calls).
    ids, x = torch.arange(5)[None], torch.zeros(1, 5, 8)
    eager = pt.RotaryEmbedding(8)
    assert list(eager._state.on_device) == [torch.device("cpu")]
    monkeypatch.setattr(torch.compiler, "is_compiling", lambda: True)
    traced = pt.RotaryEmbedding(8)
    for got, want in zip(traced(x, ids), eager(x, ids), strict=True):
        torch.testing.assert_close(got, want, rtol=0, atol=0)
    assert traced._state.on_device == {}

