"""Exercises of notebook 07 (in a transformer): permutation equivariance of self-attention
without positions, and adding the table to a batch of embeddings with the sqrt(d_model) scale.

Loads PyTorch. The objects the exercises work on are made here, seeded, so that the notebook
and the check see the same ones: ``layer`` (an encoder layer in eval mode, no dropout), ``x``
(a batch of 2 sequences of 10 vectors of width ``D_MODEL``) and ``embeddings`` (a batch of 4
sequences of 12 token embeddings with entries of size about 1 / sqrt(D_MODEL)).
"""

import math

import numpy as np
import torch
from torch import nn

import posenc.torch

from ..language import N_
from . import Exercise, _, compare_arrays

__all__ = ["D_MODEL", "both_sides", "embeddings", "layer", "model_input", "x"]

D_MODEL = 32

with torch.random.fork_rng(devices=[]):  # the notebook's own random stream stays untouched
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(D_MODEL, nhead=4, dim_feedforward=64, dropout=0.0, batch_first=True).eval()
    x = torch.randn(2, 10, D_MODEL)
    embeddings = torch.randn(4, 12, D_MODEL) / math.sqrt(D_MODEL)


def both_sides_solution(order):
    with torch.no_grad():
        out_of_shuffled = layer(x[:, order])  # the layer applied to the shuffled sequence
        shuffled_out = layer(x)[:, order]  # the layer's output, shuffled the same way
    return out_of_shuffled, shuffled_out


def _compare_sides(got, expected):
    if not isinstance(got, (tuple, list)) or len(got) != 2:
        return _("return two tensors: (layer of the shuffled x, layer(x) shuffled)")
    # Translators: {problem} is what is wrong with the tensor (another message of this catalog).
    sides = [N_("your first tensor (the layer of the shuffled x): {problem}"), N_("your second tensor (layer(x), shuffled): {problem}")]
    for side, mine, right in zip(sides, got, expected):
        problem = compare_arrays(mine, right)
        if problem:
            return _(side).format(problem=problem)
    return None


def _sides(order, *, second_order=None):
    with torch.no_grad():
        out = layer(x)
        return layer(x[:, order]), out if second_order is None else out[:, second_order]


both_sides = Exercise(
    "both_sides",
    both_sides_solution,
    N_("x[:, order] puts the vector at position order[k] in place k; feed that to the layer on one side, "
       "and on the other side shuffle layer(x) with the very same index"),
    cases=[([3, 7, 0, 9, 1, 5, 8, 2, 6, 4],), ([9, 8, 7, 6, 5, 4, 3, 2, 1, 0],), ([1, 0, 2, 3, 4, 5, 6, 7, 8, 9],)],
    argument_names=["order"],
    compare=_compare_sides,
    mistakes=[
        (
            N_("your second tensor is layer(x) unshuffled. Equal sides would make the layer INVARIANT (blind to the "
               "order); self-attention is EQUIVARIANT: each output moves with its token, so shuffle layer(x) too"),
            lambda order: _sides(order),
        ),
        (
            N_("you shuffled the output with the inverse order (argsort): x[:, order] puts the vector of position "
               "order[k] at place k, so shuffle the output the same way, layer(x)[:, order]"),
            lambda order: _sides(order, second_order=np.argsort(order)),
        ),
        (
            N_("neither side sees a shuffled input: feed x[:, order] to the layer on one side"),
            lambda order: (_sides(order)[1], _sides(order)[1]),
        ),
    ],
    praise=N_("For every order, layer(x[:, order]) == layer(x)[:, order]: without positions the layer is "
    "permutation-equivariant, so the order of the tokens cannot reach what it computes for each."),
)


def model_input_solution():
    positions = posenc.torch.positional_encoding(embeddings.shape[1], D_MODEL)  # (12, 32): one row per position
    return embeddings * math.sqrt(D_MODEL) + positions  # broadcast over the batch axis


def _table(rows):
    return posenc.torch.positional_encoding(rows, D_MODEL)


model_input = Exercise(
    "model_input",
    model_input_solution,
    N_("scale the embeddings by math.sqrt(D_MODEL), then add posenc.torch.positional_encoding(length, D_MODEL), "
       "a (length, D_MODEL) table that broadcasts over the batch"),
    mistakes=[
        (
            N_("the embeddings are not scaled: multiply them by sqrt(d_model) (5.66 here) before adding the table, "
               "or the table's rows (norm 4) drown the embeddings (norm about 1)"),
            lambda: embeddings + _table(12),
        ),
        (
            N_("the table was scaled as well: multiply the embeddings by sqrt(d_model) first, then add the table as it is"),
            lambda: (embeddings + _table(12)) * math.sqrt(D_MODEL),
        ),
        (N_("the scale is sqrt(d_model), not d_model"), lambda: embeddings * D_MODEL + _table(12)),
        (N_("multiply the embeddings by sqrt(d_model), do not divide"), lambda: embeddings / math.sqrt(D_MODEL) + _table(12)),
        (
            N_("every token of sequence b got the row of position b: the table's rows go along the sequence axis "
               "(axis 1), so add the (length, d_model) table itself, which broadcasts over the batch"),
            lambda: embeddings * math.sqrt(D_MODEL) + _table(4)[:, None, :],
        ),
    ],
    praise=N_("The scaled embeddings' rows (norm about 5.4 on average) and the table's (norm 4) are now of one size."),
)
