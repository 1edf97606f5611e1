"""posenc.engine.routes: the one table that decides which kernel serves a front's call."""

import dataclasses

import numpy as np
import pytest

from posenc.engine import kernels, routes
from posenc.engine.backends import backend

IN_PLACE = backend("numpy")  # writes in place and has float64, as torch's entry
IMMUTABLE = dataclasses.replace(IN_PLACE, empty=None, iadd=None, imul=None)  # TensorFlow's kind
NO_FLOAT64 = dataclasses.replace(IMMUTABLE, has_float64=False)  # JAX's, x64 off
F32, F64, BF16 = np.dtype(np.float32), np.dtype(np.float64), "bfloat16"  # NumPy has no bfloat16: any other dtype
FEW = kernels.FEW_ANGLES

CASES = [
    # A rotary module's decoding step: the rounded float64 angle, eager or compiled, on any device.
    (IN_PLACE, F32, False, True, FEW, routes.FEW),
    (IN_PLACE, BF16, True, False, 1, routes.FEW),
    (IMMUTABLE, F32, True, False, 16, routes.FEW),
    # ... but not one angle more, not for float64 output, not without float64, not for a function (angles None).
    (IN_PLACE, F32, False, True, FEW + 1, routes.HOST),
    (IN_PLACE, F64, False, True, 1, routes.HOST),
    (NO_FLOAT64, F32, False, True, 1, routes.HOST),
    (NO_FLOAT64, F32, True, False, 1, routes.WHOLE),
    (IN_PLACE, F32, False, True, None, routes.HOST),
    # Eager on the host: NumPy's kernel, for the dtypes NumPy builds, and bfloat16 where no in-place writes exist.
    (IMMUTABLE, F64, False, True, None, routes.HOST),
    (IMMUTABLE, BF16, False, True, None, routes.HOST),
    (IN_PLACE, BF16, False, True, None, routes.BLOCKS),
    # Off the host: the framework's kernels, block by block where it writes in place.
    (IN_PLACE, F32, False, False, None, routes.BLOCKS),
    (IMMUTABLE, F32, False, False, None, routes.WHOLE),
    (NO_FLOAT64, F32, False, False, None, routes.WHOLE),
    # Traced: whole arrays, what the compiler fuses, whatever the positions' memory.
    (IN_PLACE, F32, True, True, None, routes.WHOLE),
    (IN_PLACE, F32, True, False, FEW + 1, routes.WHOLE),
    (IMMUTABLE, F64, True, False, None, routes.WHOLE),
]


@pytest.mark.parametrize("xp, dtype, traced, host, angles, route", CASES)
def test_the_route_table(xp, dtype, traced, host, angles, route):
    assert routes.choose(xp, dtype, traced=traced, host=host, angles=angles) == route
