"""The backend table: the few array operations posenc's kernels need, one entry per framework.

Every numeric kernel (``posenc.engine.kernels``) is written once against a ``Backend``, as einops
writes its operations against a small table of backends. An entry holds the framework's
dtypes and functions; ``backend(name)`` builds an entry when first asked for it, so
``import posenc`` imports no framework, and ``backend_of(array)`` picks the entry for an
array or tensor.

The arithmetic operations take ``out=``: NumPy and torch write into it (the kernels reuse
buffers block by block, so a large table needs little extra memory); TensorFlow and JAX
arrays are immutable, their entries ignore ``out`` and return a new array, and the kernels,
which always use the returned value, work the same way on both.
"""

import dataclasses
import sys
from collections.abc import Callable
from typing import Any

import numpy as np

from . import checks

__all__ = ["Backend", "backend", "backend_of"]

# 1.5 * 2**52: for |u| < 2**51, u + ROUNDER is exactly ROUNDER + rint(u), an integer whose
# parity is the lowest bit of its significand, the lowest bit of the low 32-bit word: the
# in-place backends round and find the parity with one addition and a shift.
ROUNDER = 1.5 * 2.0**52


@dataclasses.dataclass(frozen=True)
class Backend:
    """One framework's entry in the table. Shapes follow the arguments (broadcasting)."""

    name: str
    float16: Any
    bfloat16: Any  # None where the framework has none (NumPy)
    float32: Any
    float64: Any
    bits: Any  # the 32-bit integers of odd_sign and flip_sign
    # out=: see the module docstring.
    mul: Callable
    add: Callable
    sub: Callable
    scale_to_float32: Callable  # (x, factor, out): fl32(x * factor), the product in float64
    sin: Callable
    cos: Callable
    nearest: Callable  # (u, out=(k, sign)) -> (k, sign): rint(u), and 32-bit ints with bit 31 set where it is odd
    rint: Callable  # (x) -> the nearest integer, ties to even, in x's dtype (any float dtype)
    flip_sign: Callable  # (float32 x, sign) -> x with its sign bit xor-ed with sign's bit 31
    cast: Callable  # (x, dtype)
    constant: Callable  # (NumPy array, dtype, like) -> an array on like's device
    concat: Callable  # (arrays, axis)
    stack: Callable  # (arrays, axis)
    merge_last: Callable  # (..., m, n) -> (..., m * n)
    reshape: Callable  # (x, shape)
    complex_parts: Callable  # z -> (z.real, z.imag)
    expand_like: Callable  # (x, y): x broadcast to y's shape but for the last axis
    take: Callable  # (x, indices, axis): x's entries along axis in the order of indices (ints: a sequence or NumPy array)
    empty: Callable | None = None  # (shape, dtype, like): None for immutable arrays
    iadd: Callable | None = None  # (target, other): target += other in place, returned; None likewise
    imul: Callable | None = None  # (target, other): target *= other in place, returned; None likewise
    has_float64: bool = True
    complex64: Any = None  # the complex dtypes of float32 and float64 parts
    complex128: Any = None

    @property
    def wide(self) -> Any:
        """The dtype the kernels compute in before the last rounding: float64, float32 without it."""
        return self.float64 if self.has_float64 else self.float32


def _sign_bits(add, sub, shift, xor, bits, float32):
    """``nearest`` and ``flip_sign`` for arrays that write in place and view memory as another
    dtype of the same width (``x.view(dtype)``: NumPy and torch alike)."""

    def nearest(u, out=(None, None)):
        k = add(u, ROUNDER, out=out[0])
        # Bit 0 of each low word (little-endian: the even 32-bit words) moved to bit 31.
        sign = shift(k.view(bits)[..., 0::2], 31, out=out[1])
        return sub(k, ROUNDER, out=k), sign

    def flip_sign(x, sign, out=None):
        return xor(x.view(bits), sign, out=None if out is None else out.view(bits)).view(float32)

    return nearest, flip_sign


def _spelled_like_numpy(xnp):
    """The operations that NumPy and ``jax.numpy`` (``xnp``) spell alike."""
    return dict(
        constant=lambda values, dtype, like=None: xnp.asarray(values, dtype),
        concat=lambda arrays, axis: xnp.concatenate(arrays, axis=axis),
        stack=lambda arrays, axis: xnp.stack(arrays, axis=axis),
        merge_last=lambda x: x.reshape(*x.shape[:-2], -1),
        reshape=xnp.reshape,
        complex_parts=lambda z: (z.real, z.imag),
        expand_like=lambda x, y: xnp.broadcast_to(x, y.shape[:-1] + x.shape[-1:]),
        take=lambda x, indices, axis: xnp.take(xnp.asarray(x), np.asarray(indices), axis=axis),
    )


def _numpy():
    def scale_to_float32(x, factor, out=None):
        if out is None:
            return (x * factor).astype(np.float32)
        return np.multiply(x, factor, out=out, casting="same_kind")

    nearest, flip_sign = _sign_bits(np.add, np.subtract, np.left_shift, np.bitwise_xor, np.uint32, np.float32)

    return Backend(
        name="numpy", float16=np.dtype("float16"), bfloat16=None, float32=np.dtype("float32"),
        float64=np.dtype("float64"), bits=np.dtype("uint32"), mul=np.multiply, add=np.add, sub=np.subtract,
        scale_to_float32=scale_to_float32, sin=np.sin, cos=np.cos, nearest=nearest, rint=np.rint, flip_sign=flip_sign,
        cast=lambda x, dtype: np.asarray(x).astype(dtype, copy=False),
        **_spelled_like_numpy(np),
        empty=lambda shape, dtype, like=None: np.empty(shape, dtype),
        iadd=lambda target, other: np.add(target, other, out=target),
        imul=lambda target, other: np.multiply(target, other, out=target),
        complex64=np.dtype("complex64"), complex128=np.dtype("complex128"),
    )


def _torch():
    import torch

    nearest, flip_sign = _sign_bits(
        torch.add, torch.sub, torch.bitwise_left_shift, torch.bitwise_xor, torch.int32, torch.float32
    )

    def scale_to_float32(x, factor, out=None):
        # torch.mul into a float32 out computes in float64 and rounds once.
        return (x * factor).to(torch.float32) if out is None else torch.mul(x, factor, out=out)

    return Backend(
        name="torch", float16=torch.float16, bfloat16=torch.bfloat16, float32=torch.float32,
        float64=torch.float64, bits=torch.int32, mul=torch.mul, add=torch.add, sub=torch.sub,
        scale_to_float32=scale_to_float32, sin=torch.sin, cos=torch.cos, nearest=nearest, rint=torch.round,
        flip_sign=flip_sign, cast=lambda x, dtype: x.to(dtype),
        # A copy of a NumPy array: torch warns when it shares a read-only one (the cached frequencies).
        constant=lambda values, dtype, like=None: torch.as_tensor(
            np.array(values) if isinstance(values, np.ndarray) else values, dtype=dtype,
            device=None if like is None else like.device,
        ),
        concat=lambda arrays, axis: torch.cat(arrays, axis),
        stack=lambda arrays, axis: torch.stack(arrays, axis),
        merge_last=lambda x: x.flatten(-2),
        reshape=torch.reshape,
        complex_parts=lambda z: (z.real, z.imag),
        expand_like=lambda x, y: x.expand(*y.shape[:-1], x.shape[-1]),
        take=lambda x, indices, axis: x.index_select(axis, torch.as_tensor(indices, device=x.device)),
        empty=lambda shape, dtype, like=None: torch.empty(shape, dtype=dtype, device=None if like is None else like.device),
        iadd=lambda target, other: target.add_(other), imul=lambda target, other: target.mul_(other),
        complex64=torch.complex64, complex128=torch.complex128,
    )


def ignoring_out(op):
    """``op`` for immutable arrays: the ``out=`` of the in-place backends is ignored."""

    def call(*args, out=None):
        return op(*args)

    return call


def _tensorflow():
    import tensorflow as tf

    def nearest(u, out=None):
        # tf.round, not ROUNDER: XLA simplifies (u + ROUNDER) - ROUNDER to u.
        k = tf.round(u)
        return k, tf.cast(tf.bitwise.left_shift(tf.cast(k, tf.int64), 31), tf.int32)

    def flip_sign(x, sign, out=None):
        return tf.bitcast(tf.bitwise.bitwise_xor(tf.bitcast(x, tf.int32), sign), tf.float32)

    def merge_last(x):
        # The static width where it is known, so later shape checks see it.
        m, n = x.shape[-2:]
        return tf.reshape(x, tf.concat([tf.shape(x)[:-2], [-1 if None in (m, n) else m * n]], 0))

    def expand_like(x, y):
        return tf.broadcast_to(x, tf.concat([tf.shape(y)[:-1], tf.shape(x)[-1:]], 0))

    def scale_to_float32(x, factor, out=None):
        return tf.cast(x * factor, tf.float32)

    def constant(values, dtype, like=None):
        return tf.cast(values, dtype)  # a NumPy array or a tensor, in a graph too

    def complex_parts(z):
        return tf.math.real(z), tf.math.imag(z)

    operations = dict(
        mul=ignoring_out(tf.multiply), add=ignoring_out(tf.add), sub=ignoring_out(tf.subtract),
        scale_to_float32=scale_to_float32, sin=ignoring_out(tf.sin), cos=ignoring_out(tf.cos), nearest=nearest,
        rint=tf.round, flip_sign=flip_sign, cast=tf.cast, constant=constant, concat=tf.concat, stack=tf.stack,
        merge_last=merge_last, expand_like=expand_like, reshape=tf.reshape, complex_parts=complex_parts,
        take=lambda x, indices, axis: tf.gather(x, indices, axis=axis),
    )
    # Inside tf.function, AutoGraph would rewrite these as it traces; they hold no Python
    # control flow over tensors, so they run as written.
    operations = {name: tf.autograph.experimental.do_not_convert(op) for name, op in operations.items()}
    return Backend(
        name="tensorflow", float16=tf.float16, bfloat16=tf.bfloat16, float32=tf.float32, float64=tf.float64,
        bits=tf.int32, **operations, complex64=tf.complex64, complex128=tf.complex128,
    )


def _jax():
    import jax
    import jax.numpy as jnp

    def nearest(u, out=None):
        k = jnp.rint(u)
        return k, jnp.left_shift(k.astype(jnp.int32), 31)

    def flip_sign(x, sign, out=None):
        bits = jax.lax.bitcast_convert_type(x, jnp.int32)
        return jax.lax.bitcast_convert_type(jnp.bitwise_xor(bits, sign), jnp.float32)

    # has_float64 False even when x64 is on: the kernels take the float32-only route in a
    # trace either way, so one entry serves both modes (float64 tables come from NumPy).
    return Backend(
        name="jax", float16=jnp.dtype("float16"), bfloat16=jnp.dtype("bfloat16"), float32=jnp.dtype("float32"),
        float64=jnp.dtype("float64"), bits=jnp.dtype("int32"), mul=ignoring_out(jnp.multiply),
        add=ignoring_out(jnp.add), sub=ignoring_out(jnp.subtract),
        scale_to_float32=lambda x, factor, out=None: (x * factor).astype(jnp.float32),
        sin=ignoring_out(jnp.sin), cos=ignoring_out(jnp.cos), nearest=nearest, rint=jnp.rint, flip_sign=flip_sign,
        cast=lambda x, dtype: jnp.asarray(x).astype(dtype),
        **_spelled_like_numpy(jnp),
        has_float64=False, complex64=jnp.dtype("complex64"), complex128=jnp.dtype("complex128"),
    )


_ENTRIES: dict[str, Callable[[], Backend]] = {
    "numpy": _numpy, "torch": _torch, "tensorflow": _tensorflow, "jax": _jax,
}


# The entries built so far. A plain dict, not functools.cache: torch.compile reads a dict as it
# is, where it would trace through a cache wrapper and build the entry again.
_BUILT: dict[str, Backend] = {}


def backend(name: str) -> Backend:
    """The entry for framework ``name`` (``"numpy"``, ``"torch"``, ``"tensorflow"``, ``"jax"``), built on first use."""
    entry = _BUILT.get(name) if isinstance(name, str) else None
    if entry is None:
        entry = _BUILT[name] = _ENTRIES[checks.check_choice(name, tuple(_ENTRIES), "backend")]()
    return entry


def backend_of(array: Any) -> Backend:
    """The entry for ``array``'s framework: a torch or TensorFlow tensor, a JAX array, else NumPy.

    Looks at the loaded modules only, so it never imports a framework.
    """
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(array, torch.Tensor):
        return backend("torch")
    tf = sys.modules.get("tensorflow")
    if tf is not None and tf.is_tensor(array):
        return backend("tensorflow")
    jax = sys.modules.get("jax")
    if jax is not None and isinstance(array, jax.Array):
        return backend("jax")
    return backend("numpy")
