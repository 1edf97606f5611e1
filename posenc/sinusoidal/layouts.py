"""Moving a table, or the weights that read one, from one layout to another.

Every layout holds the same columns in a different order (``tables.column_order``), so a
conversion is one gather with a fixed index array ``perm``. A weight gathered along the
axis that meets the table's columns follows the table: a linear layer that reads it,
``y = x @ W.T`` (torch ``Linear.weight``, shape ``(out, d)``) or ``y = x @ K`` (Keras
``Dense.kernel``, shape ``(d, out)``), gives the same output on the converted table with
``W[:, perm]`` or ``K[perm, :]``.

In a Transformer that is not one layer's business. The table is added to the token
embeddings and the sum travels through every block in the residual stream, so a layout
change permutes that whole stream: a trained model is ported exactly by permuting the
embedding's columns, the input axis of every weight that reads the stream (attention's
query/key/value projections, the first feed-forward layer, the output head), the output
axis and bias of every weight that writes to it (attention's output projection, the
second feed-forward layer) and the scale and shift of every layer norm on it (a layer norm
averages over all features, so it commutes with the permutation). Notebook 05 ports a
trained PyTorch model this way and gets the same logits.
"""

from typing import Any

import numpy as np

from ..engine import checks
from ..engine.backends import backend_of
from . import tables

__all__ = ["ODD_POLICIES", "convert_layout", "layout_permutation"]

ODD_POLICIES = ("sine", "zero")


def layout_permutation(d_model: int, source: str, target: str, *, odd: str = "sine") -> np.ndarray:
    """``perm`` (int64, shape ``(d_model,)``) with ``table_target = table_source[..., perm]``.

    ``source`` and ``target`` are layouts (``posenc.LAYOUTS``). ``odd`` says how an odd
    width was filled: ``"sine"`` (the last pair has its sine only, as the paper's formula
    gives) or ``"zero"`` (tensor2tensor, fairseq, diffusers: ``d_model // 2`` pairs, then a
    zero column, which stays last). The inverse permutation is
    ``layout_permutation(d_model, target, source)``.
    """
    d_model = checks.check_d_model(d_model)
    source, target = checks.check_layout(source, "source"), checks.check_layout(target, "target")
    checks.check_choice(odd, ODD_POLICIES, "odd")
    width = d_model - d_model % 2 if odd == "zero" else d_model
    if width == 0:
        return np.arange(d_model)
    # Column k of a layout holds entry column_order[k] of concat([sin, cos]); going back
    # through the source's order and forward through the target's composes the two.
    perm = np.argsort(tables.column_order(width, source))[tables.column_order(width, target)]
    return np.concatenate([perm, np.arange(width, d_model)])


def convert_layout(array: Any, source: str, target: str, *, axis: int = -1, odd: str = "sine") -> Any:
    """``array`` with the ``d_model`` entries along ``axis`` moved from layout ``source`` to ``target``.

    A table ``(..., d_model)`` uses ``axis=-1``; the weights of a layer that reads the table
    (or the residual stream it is added to) are gathered along their input axis: ``axis=-1``
    for a torch ``Linear.weight`` ``(out, d_model)``, ``axis=0`` for a Keras ``Dense`` kernel
    ``(d_model, out)``; a layer that writes to the stream along its output axis (``axis=0``
    for torch, ``axis=-1`` for Keras), and its bias and a layer norm's scale and shift along
    their only axis. NumPy
    arrays (and anything ``numpy.asarray`` takes), torch tensors, TensorFlow tensors or
    variables and JAX arrays: the result is of the same kind (a tensor, for a variable). No
    framework is imported that the array does not already come from.
    """
    shape = shape_of(array)
    if not shape:
        raise ValueError(f"array must have at least one axis, got a scalar {array!r}")
    d_model = shape[checks.check_axis(shape, axis, "array")]
    return gather(array, layout_permutation(d_model, source, target, odd=odd), axis)


def shape_of(array):
    """The shape of a NumPy array (or array-like), torch tensor or TF tensor/variable, as a tuple."""
    # np.shape reads a tensor's own .shape (torch.Size, TensorShape) without converting it.
    return tuple(np.shape(array))


def gather(array, perm, axis):
    """``array`` with its entries along ``axis`` taken in the order ``perm``, of the same kind as ``array``.

    The ``take`` of ``array``'s entry in the backend table: torch tensors stay on their device,
    TF tensors and variables (Keras' too) become tensors, JAX arrays stay JAX arrays, anything
    else goes through NumPy. ``backend_of`` looks at the loaded frameworks only, so no framework
    is imported that the array does not already come from.
    """
    return backend_of(array).take(array, perm, axis)
