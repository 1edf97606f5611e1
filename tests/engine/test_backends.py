"""posenc.engine.backends: one entry per framework, found from the array alone."""

import warnings

import numpy as np

from posenc.engine import backends
from posenc.engine.backends import backend, backend_of


def fresh(name):
    """The entry of framework ``name`` built afresh: the table keeps the entries it has built."""
    return backends._ENTRIES[name]()


def test_backend_of_finds_the_entry_of_each_frameworks_arrays(framework):
    entry = backend(framework.name)
    assert backend_of(framework.tensor([1.0, 2.0])) is entry and entry.name == framework.name
    assert entry.float32 == framework.dtypes["float32"]


def test_nearest_rounds_ties_to_even_and_flip_sign_follows_the_parity(framework):
    entry = fresh(framework.name)
    wide = entry.wide
    u = framework.convert(np.array([-2.5, -1.25, 0.5, 3.0, 4.75]), wide)
    k, sign = entry.nearest(u)
    np.testing.assert_array_equal(framework.numpy(k), [-2.0, -1.0, 0.0, 3.0, 5.0])
    flipped = entry.flip_sign(framework.tensor(np.ones(5), "float32"), sign)
    np.testing.assert_array_equal(framework.numpy(flipped), [1.0, -1.0, 1.0, -1.0, -1.0])  # k odd: -1, 3, 5
    if entry.empty is not None:  # the in-place entries write into the buffers they are given
        buffers = entry.empty((5,), wide), entry.empty((5,), entry.bits)
        assert all(a is b for a, b in zip(entry.nearest(u, out=buffers), buffers))
        np.testing.assert_array_equal(framework.numpy(buffers[0]), [-2.0, -1.0, 0.0, 3.0, 5.0])
        out = entry.empty((5,), entry.float32)
        entry.flip_sign(framework.tensor(np.full(5, 2.0), "float32"), buffers[1], out=out)
        np.testing.assert_array_equal(framework.numpy(out), [2.0, -2.0, 2.0, -2.0, -2.0])


def _name(dtype):
    return dtype.name if hasattr(dtype, "name") else str(dtype).removeprefix("torch.")  # torch's have no .name


def test_a_fresh_entry_does_what_numpy_does(framework):
    entry = fresh(framework.name)

    def tensor(values, dtype=entry.float32):
        return framework.convert(np.asarray(values), dtype)

    def equal(result, expected):
        got = framework.numpy(result)
        np.testing.assert_array_equal(got, expected)
        assert got.dtype == np.asarray(expected).dtype

    assert entry.name == framework.name
    # JAX's entry has no float64 even with x64 on: the kernels take its float32-only route.
    assert entry.has_float64 is (framework.name != "jax")
    assert entry.wide == (entry.float32 if framework.name == "jax" else entry.float64)
    names = ("float16", "float32", "float64", "complex64", "complex128")
    assert [_name(getattr(entry, n)) for n in names] == list(names)
    assert _name(entry.bits) == ("uint32" if framework.name == "numpy" else "int32")
    assert entry.bfloat16 is None if framework.name == "numpy" else _name(entry.bfloat16) == "bfloat16"

    a, b = np.array([1.5, -2.25, 3.0], np.float32), np.array([0.5, 4.0, -1.75], np.float32)
    x = np.array([0.0, 0.5, 1.0, 2.0], np.float32)
    for op, expected, inputs in ((entry.mul, a * b, (a, b)), (entry.add, a + b, (a, b)),
                                 (entry.sub, a - b, (a, b)), (entry.sin, np.sin(x), (x,)), (entry.cos, np.cos(x), (x,))):
        results = [op(*map(tensor, inputs))]
        if entry.empty is not None:  # NumPy and torch write into out= and return it
            out = entry.empty(expected.shape, entry.float32)
            assert op(*map(tensor, inputs), out=out) is out
            results.append(out)
        for result in results:
            np.testing.assert_allclose(framework.numpy(result), expected, rtol=2e-7, atol=1e-7)
            assert framework.numpy(result).dtype == np.float32

    # fl32(x * factor) with the product rounded once in float64 (JAX's, in float32, rounds twice).
    x, factor = np.random.default_rng(0).uniform(0, 1000, 64), 0.1234567
    once, twice = (x * factor).astype(np.float32), x.astype(np.float32) * np.float32(factor)
    assert np.any(once != twice)
    if entry.has_float64:
        equal(entry.scale_to_float32(tensor(x, entry.float64), factor), once)
        if entry.empty is not None:
            out = entry.empty((64,), entry.float32)
            assert entry.scale_to_float32(tensor(x, entry.float64), factor, out=out) is out
            equal(out, once)
    else:
        equal(entry.scale_to_float32(tensor(x.astype(np.float32)), factor), twice)

    ties = np.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 3.7])
    for dtype in (np.float16, np.float32) + ((np.float64,) if entry.has_float64 else ()):
        equal(entry.rint(tensor(ties, getattr(entry, np.dtype(dtype).name))), np.rint(ties).astype(dtype))
    third = np.array([1.5, -2.75, 1 / 3], np.float32)
    equal(entry.cast(tensor(third), entry.float16), third.astype(np.float16))

    values = np.array([[1.0, 2.0], [3.0, 4.0]])
    values.setflags(write=False)  # as the cached frequencies are: torch must copy them, not warn
    like = tensor([0.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        equal(entry.constant(values, entry.float32), values.astype(np.float32))
        made = entry.constant(values, entry.float32, like=like)
    equal(made, values.astype(np.float32))
    if framework.name == "torch":  # the one entry that places arrays: on like's device
        assert made.device == like.device

    equal(entry.concat([tensor(a), tensor(b)], 0), np.concatenate([a, b]))
    equal(entry.stack([tensor(a), tensor(b)], 1), np.stack([a, b], 1))
    cube = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    equal(entry.merge_last(tensor(cube)), cube.reshape(2, 12))
    if framework.name == "tensorflow":  # in a graph whose shapes are unknown until it runs
        import tensorflow as tf
        traced = tf.function(entry.merge_last, input_signature=[tf.TensorSpec([None, None, None], tf.float32)])
        equal(traced(tensor(cube)), cube.reshape(2, 12))
    equal(entry.reshape(tensor(cube), (4, 6)), cube.reshape(4, 6))
    z = np.array([1 + 2j, -3.5 - 0.25j], np.complex64)
    real, imag = entry.complex_parts(tensor(z, entry.complex64))
    equal(real, z.real), equal(imag, z.imag)
    rows = np.array([[[1.0, 2.0, 3.0]], [[4.0, 5.0, 6.0]]], np.float32)  # (2, 1, 3): the middle axis grows
    equal(entry.expand_like(tensor(rows), tensor(np.zeros((2, 4, 5)))), np.broadcast_to(rows, (2, 4, 3)))
    for indices in ([2, 0, 2], np.array([1, 3])):
        equal(entry.take(tensor(cube), indices, 2), np.take(cube, indices, axis=2))

    if entry.empty is None:  # immutable arrays: no in-place operations at all
        assert entry.iadd is None and entry.imul is None
        return
    for made in (entry.empty((2, 3), entry.float32), entry.empty((2, 3), entry.float64, like)):
        assert framework.numpy(made).shape == (2, 3) and (framework.name != "torch" or made.device == like.device)
    assert framework.numpy(made).dtype == np.float64
    for op, expected in ((entry.iadd, a + b), (entry.imul, a * b)):
        target = tensor(a.copy())  # torch shares memory with a NumPy array of its dtype
        assert op(target, tensor(b)) is target
        equal(target, expected)
