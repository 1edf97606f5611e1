"""The one framework adapter every cross-framework test drives: ``Front`` (a tensor from NumPy and
back, dtype names, the posenc module of that framework, how to make and run its modules).

``adapter(name)`` builds it once per framework and skips the calling test (not its file) when the
framework is not installed; conftest.py's ``front`` fixture runs a test once per front
(torch, tensorflow, jax) and its ``framework`` fixture once per framework (numpy first).
"""

import dataclasses
import functools
import types
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import posenc

FRAMEWORKS = ("numpy", "torch", "tensorflow", "jax")
FRONTS = ("torch", "tensorflow", "jax")
# float32 within 2e-7 of the exact value (the fronts' docstrings).
BOUND = 2e-7
# The float dtypes each front builds tables in: JAX has no float64 while jax_enable_x64 is off.
# (Names, not dtypes: the parameters are made before any framework is imported.)
FLOATS = {"torch": ("float16", "bfloat16", "float32", "float64"),
          "tensorflow": ("float16", "bfloat16", "float32", "float64"),
          "jax": ("float16", "bfloat16", "float32")}
# Dtypes the bad-input and rotary tests need.
OTHER_DTYPES = ("int32", "int64", "complex64")
# One rounding of each dtype near 1 (half its eps).
ROUNDING = {"float16": 2 ** -11, "bfloat16": 2 ** -8, "float32": 2 ** -24, "float64": 2 ** -53}


@dataclasses.dataclass(frozen=True)
class Front:
    """One framework front and how a test drives it."""

    name: str
    api: types.ModuleType  # posenc.torch, posenc.tensorflow or posenc.jax
    dtypes: dict[str, Any]  # "float32", "int32", ... -> the framework's dtype
    dtype_prefix: str  # how its messages spell a dtype: "torch.int64", "int64"
    convert: Callable[[np.ndarray, Any], Any]  # (array, framework dtype or None) -> tensor
    numpy: Callable[[Any], np.ndarray]  # tensor -> array (bfloat16 widened to float32)
    make: Callable[..., Any]  # (cls, *args, **kwargs) -> module, seeded for dropout
    run: Callable[..., Any]  # (module, *inputs, training) -> output
    # Keras' layer keeps its first max_len rows and computes the rows past them in the call
    # (no state to change inside a graph); torch's and Flax's modules grow their table.
    grows_table: bool
    # The tables a PositionalEncoding holds: torch and Flax hold positional_encoding's table,
    # the Keras layer encode's of 0 .. max_len - 1 (the call computes more rows the same way).
    table_from_encode: bool
    # Eager float32 RoPE against NumPy's: torch and JAX run NumPy's kernel (to the bit), TensorFlow
    # its own ops (within the fronts' float32 bound).
    rotary_atol: float
    # (function, tensor) -> function(tensor) traced: under jax.jit, in a tf.function of unknown
    # shape; None for torch (torch.compile is test_compiled.py's, it takes seconds per graph).
    trace: Callable[[Callable, Any], Any] | None = None

    def __repr__(self):  # the test ids and failure reports name the front, not its callables
        return f"Front({self.name!r})"

    def tensor(self, values, dtype=None):
        """``values`` as a tensor of ``dtype`` (a name; None: NumPy's dtype for them)."""
        return self.convert(np.asarray(values), None if dtype is None else self.dtypes[dtype])

    def eager_and_traced(self, function, positions, *args, **kwargs):
        """``[function(positions, ...) eagerly on NumPy positions, the same traced on this framework's tensor]``."""
        traced = self.trace(lambda p: function(p, *args, **kwargs), self.tensor(positions))
        return [function(np.asarray(positions), *args, **kwargs), traced]

    def positional_encoding_module(self, *args, **kwargs):
        return self.make(self.api.PositionalEncoding, *args, **kwargs)

    def module_table(self, length, d_model, **kwargs):
        """NumPy's table that a PositionalEncoding of ``max_len=length`` holds, to the bit."""
        if self.table_from_encode:
            return posenc.encode(np.arange(length), d_model, **kwargs)
        return posenc.positional_encoding(length, d_model, **kwargs)


def _torch():
    torch = pytest.importorskip("torch")
    import posenc.torch as pt

    def run(module, *inputs, training=False):
        return module.train(training)(*inputs)

    def to_numpy(t):
        t = t.detach().cpu()
        return (t.float() if t.dtype == torch.bfloat16 else t).numpy()

    def make(cls, *args, compute_dtype=None, **kwargs):
        # torch modules compute in x's dtype: compute_dtype is Keras' business.
        torch.manual_seed(0)
        return cls(*args, **kwargs)

    names = (*FLOATS["torch"], *OTHER_DTYPES)
    return Front("torch", pt, {n: getattr(torch, n) for n in names}, "torch.",
                 lambda a, dtype: torch.from_numpy(a).to(dtype) if dtype else torch.from_numpy(a),
                 to_numpy, make, run, grows_table=True, table_from_encode=False, rotary_atol=0.0)


def _tensorflow():
    tf = pytest.importorskip("tensorflow")
    import keras

    import posenc.tensorflow as ptf

    def run(module, *inputs, training=False):
        return module(*inputs, training=training)

    def to_numpy(t):
        return (tf.cast(t, tf.float32) if t.dtype == tf.bfloat16 else t).numpy()

    def make(cls, *args, compute_dtype=None, **kwargs):
        # Keras layers compute in their dtype policy (a float x is cast to it), not in x's dtype.
        keras.utils.set_random_seed(0)
        return cls(*args, **kwargs) if compute_dtype is None else cls(*args, dtype=compute_dtype, **kwargs)

    def trace(function, tensor):
        return tf.function(function, input_signature=[tf.TensorSpec([None] * tensor.ndim, tensor.dtype)])(tensor)

    names = (*FLOATS["tensorflow"], *OTHER_DTYPES)
    return Front("tensorflow", ptf, {n: getattr(tf, n) for n in names}, "",
                 lambda a, dtype: tf.cast(tf.constant(a), dtype) if dtype else tf.constant(a),
                 to_numpy, make, run, grows_table=False, table_from_encode=True, rotary_atol=BOUND, trace=trace)


def _jax():
    jnp = pytest.importorskip("jax.numpy")
    nnx = pytest.importorskip("flax.nnx")  # posenc.jax's modules are Flax NNX modules

    import posenc.jax as pj

    def run(module, *inputs, training=False):
        module.train() if training else module.eval()
        return module(*inputs)

    def to_numpy(t):
        if isinstance(t, nnx.Variable):  # the Flax module's table
            t = t[...]
        return np.asarray(t.astype(jnp.float32) if t.dtype == jnp.bfloat16 else t)

    def make(cls, *args, compute_dtype=None, **kwargs):
        # Flax modules take their dropout stream explicitly (the rotary module has none) and compute in x's dtype.
        rngs = {"rngs": nnx.Rngs(0, dropout=1)} if cls is pj.PositionalEncoding else {}
        return cls(*args, **rngs, **kwargs)

    import jax

    names = (*FLOATS["jax"], *OTHER_DTYPES)
    return Front("jax", pj, {n: getattr(jnp, n) for n in names}, "",
                 lambda a, dtype: jnp.asarray(a, dtype), to_numpy, make, run, grows_table=True,
                 table_from_encode=False, rotary_atol=0.0, trace=lambda function, tensor: jax.jit(function)(tensor))


def _numpy():
    # NumPy is posenc itself: no modules, so make and run are not set (the fronts' module tests skip it).
    names = ("float16", "float32", "float64", *OTHER_DTYPES)
    return Front("numpy", posenc, {n: np.dtype(n) for n in names}, "",
                 lambda a, dtype: a if dtype is None else a.astype(dtype), np.asarray, None, None,
                 grows_table=False, table_from_encode=False, rotary_atol=0.0)


MAKERS = {name: functools.cache(make) for name, make in
          (("numpy", _numpy), ("torch", _torch), ("tensorflow", _tensorflow), ("jax", _jax))}


def adapter(name):
    """The ``Front`` of framework ``name``; skips the calling test when that framework is missing."""
    return MAKERS[name]()


def only(*names):
    """Run a test on these fronts only (the others lack what it checks; the test says why)."""
    return pytest.mark.parametrize("front", names, indirect=True)
