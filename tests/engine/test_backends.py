"""posenc.engine.backends: one entry per framework, found from the array alone."""

import numpy as np

from posenc.engine.backends import backend, backend_of


def test_backend_of_finds_the_entry_of_each_frameworks_arrays(framework):
    entry = backend(framework.name)
    assert backend_of(framework.tensor([1.0, 2.0])) is entry and entry.name == framework.name
    assert entry.float32 == framework.dtypes["float32"]
    # JAX's entry has no float64 even with x64 on: the kernels take its float32-only route.
    assert entry.has_float64 is (framework.name != "jax")


def test_nearest_rounds_ties_to_even_and_flip_sign_follows_the_parity(framework):
    entry = backend(framework.name)
    u = framework.tensor([-2.5, -1.25, 0.5, 3.0, 4.75], "float64" if entry.has_float64 else "float32")
    k, sign = entry.nearest(u)
    np.testing.assert_array_equal(framework.numpy(k), [-2.0, -1.0, 0.0, 3.0, 5.0])
    flipped = entry.flip_sign(framework.tensor(np.ones(5), "float32"), sign)
    np.testing.assert_array_equal(framework.numpy(flipped), [1.0, -1.0, 1.0, -1.0, -1.0])  # k odd: -1, 3, 5
