"""Which kernel serves a call of a front: the one route table.

Every front (``posenc.front``) asks ``choose`` once per call, with what it knows of the call,
and runs the kernel the answer names:

========  ==================================================================  ==========================================
route     kernel                                                              when
========  ==================================================================  ==========================================
FEW       ``kernels.rounded_sin_cos``: the float64 angle, sin and cos, one    a rotary module's call of at most
          rounding, in a handful of the framework's operations                ``kernels.FEW_ANGLES`` angles (a decoding
                                                                              step), output not float64, a backend
                                                                              with float64
HOST      NumPy's blocked kernel on every core (``posenc.engine.rotation``    eager, positions in host memory, a dtype
          and the table builders), writing into memory the framework          NumPy builds (bfloat16 too where the
          adopts without a copy                                               framework cannot write in place)
BLOCKS    ``kernels.write_sin_cos`` in the framework's operations, block by   eager elsewhere (another device,
          block (extra memory: a few blocks)                                  bfloat16) on a backend that writes in
                                                                              place (torch)
WHOLE     ``kernels.sin_cos`` on whole arrays in the framework's operations,  traced (``torch.compile``,
          what a compiler fuses; TensorFlow compiles it with XLA, JAX with    ``tf.function``, ``jax.jit``), or eager
          x64 off takes ``kernels.half_turns_float32``                        off the host with immutable arrays
========  ==================================================================  ==========================================

Each route meets the accuracy contract of ``posenc``; they differ in speed and memory, and
(FEW against the others) in the last rounding.
"""

from typing import Any

from .backends import Backend
# The threshold by name, not kernels.FEW_ANGLES at call time: under torch.compile a module reached
# through two names (here and in the front) costs a Python guard on every call.
from .kernels import FEW_ANGLES

__all__ = ["BLOCKS", "FEW", "HOST", "WHOLE", "choose"]

FEW, HOST, BLOCKS, WHOLE = "few", "host", "blocks", "whole"


def choose(xp: Backend, dtype: Any, *, traced: bool, host: bool, angles: int | None = None) -> str:
    """The route for output ``dtype`` on backend ``xp``: ``traced`` (inside a compiler's trace),
    ``host`` (the positions are concrete and in host memory), ``angles`` (how many, when the
    caller takes the rounded route; None otherwise)."""
    if angles is not None and angles <= FEW_ANGLES and xp.has_float64 and dtype != xp.float64:
        return FEW
    if traced:
        return WHOLE
    if host and (xp.empty is None or dtype in (xp.float16, xp.float32, xp.float64)):
        return HOST
    return WHOLE if xp.empty is None else BLOCKS
