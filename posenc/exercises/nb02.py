"""Exercises of notebook 02 (the lecture walk in PyTorch): the table, the module's forward, its buffer, the scale."""

import math

import torch
from torch import nn

import posenc.torch

from ..language import N_
from . import Exercise, _, compare_arrays, _one_number

__all__ = ["buffer", "compare_modules", "forward", "scale", "table"]


# Exercise 1: the table, the Annotated Transformer's way (exp and log), in float32.


def table_solution(length, d_model):
    position = torch.arange(length, dtype=torch.float32)[:, None]
    div_term = torch.exp(torch.arange(0, d_model, 2, dtype=torch.float32) * (-math.log(10000.0) / d_model))
    angles = position * div_term  # (length, (d_model + 1) // 2)
    table = torch.stack([torch.sin(angles), torch.cos(angles)], dim=-1).flatten(start_dim=-2)
    return table[:, :d_model]  # an odd d_model: the last pair has no cosine


def _table(length, d_model, *, first=0, sign=-1.0, integer=False, swap=False):
    position = torch.arange(first, first + length)[:, None]  # integer positions: their product with the frequencies is float
    two_i = torch.arange(0, d_model, 2)
    exponent = two_i // d_model if integer else two_i / d_model
    angles = position * torch.exp(sign * exponent * math.log(10000.0))
    even, odd = (torch.cos, torch.sin) if swap else (torch.sin, torch.cos)
    return torch.stack([even(angles), odd(angles)], dim=-1).flatten(start_dim=-2)[:, :d_model]


table = Exercise(
    "table",
    table_solution,
    N_("row p is position p, from 0; each pair (sin, cos) shares exp(-2i ln(10000) / d_model); "
       "for an odd d_model the last column is a sine with no cosine after it"),
    cases=[(10, 6), (100, 64), (10, 7)],
    argument_names=["length", "d_model"],
    mistakes=[
        (
            N_("positions start at 1; the first row is position 0 (arange(length), not arange(1, length + 1))"),
            lambda n, d: _table(n, d, first=1),
        ),
        (
            N_("the minus sign of exp(-2i ln(10000) / d_model) is missing: the angles grow with the column"),
            lambda n, d: _table(n, d, sign=1.0),
        ),
        (N_("the exponent 2i / d_model was rounded down to 0 (integer division)"), lambda n, d: _table(n, d, integer=True)),
        (N_("sine and cosine are swapped: the even columns hold the sines"), lambda n, d: _table(n, d, swap=True)),
    ],
    praise=N_("The float32 exp/log route, odd widths included."),
)


# Exercises 2 and 3: the module a model uses, x -> x + PE[:seq], its table a non-persistent buffer.


def module_solution(d_model, max_len):
    class PositionalEncoding(nn.Module):
        def __init__(self):
            super().__init__()
            table = posenc.torch.positional_encoding(max_len, d_model)
            # a buffer moves with .to(device); persistent=False keeps it out of state_dict
            self.register_buffer("pe", table, persistent=False)

        def forward(self, x):  # x: (batch, seq, d_model)
            return x + self.pe[: x.shape[1]]

    return PositionalEncoding()


def _module(d_model, max_len, *, store="buffer", forward="add"):
    class Variant(nn.Module):
        def __init__(self):
            super().__init__()
            table = posenc.torch.positional_encoding(max_len, d_model)
            if store == "attribute":
                self.pe = table
            elif store == "parameter":
                self.pe = nn.Parameter(table)
            else:
                self.register_buffer("pe", table, persistent=store != "buffer")

        def forward(self, x):
            seq = x.shape[1]
            if forward == "table":
                return self.pe
            if forward == "rows":
                return self.pe[:seq]
            if forward == "shifted":
                return x + self.pe[1 : seq + 1]
            return x + self.pe[:seq]

    return Variant()


def _where_the_table_lives(module):
    if any(True for _ in module.parameters()):
        return "parameter"
    if not any(True for _ in module.buffers()):
        return "attribute"
    return "saved buffer" if module.state_dict() else "buffer"


# English, marked for the catalogs: compare_modules and the check translate them when they show them.
TABLE_PLACES = {
    "parameter": N_("the table is an nn.Parameter: the optimizer would train it and state_dict saves it; "
                    "register it with self.register_buffer(name, table, persistent=False)"),
    "attribute": N_("the table is a plain attribute: module.to(device) moves parameters and buffers, not it, so "
                    "forward would mix devices on a GPU (module.to('meta') shows it on a CPU); register it with self.register_buffer"),
    "saved buffer": N_("the table is a buffer that state_dict saves: every checkpoint stores max_len x d_model numbers "
                       "that d_model alone defines, and loads only into a model with the same max_len; pass persistent=False"),
    "buffer": N_("the table is a non-persistent buffer"),
}


def compare_modules(got, expected):
    """What is wrong with the module ``got`` against ``expected``: its forward on a fixed x, then its table's place."""
    if not isinstance(got, nn.Module):
        # Translators: {type} is a Python type name.
        return _("your class should build an nn.Module, got {type}").format(type=type(got).__name__)
    d_model = expected.pe.shape[1]  # pe is (max_len, d_model)
    x = torch.randn(2, 7, d_model, generator=torch.Generator().manual_seed(0))
    outputs = []
    for module in (got, expected):
        try:
            with torch.no_grad():
                outputs.append(module.eval()(x))
        except Exception as error:  # the learner's forward: report whatever it raised, in one line
            # Translators: {error} is Python's, in English: "RuntimeError: ...".
            return _("forward(x) for x of shape {shape} raised {error}").format(
                shape=tuple(x.shape), error=f"{type(error).__name__}: {error}")
    problem = compare_arrays(*outputs)
    if problem:
        # Translators: {problem} is what is wrong with the output (another message of this catalog).
        return _("forward(x) for x of shape {shape}: {problem}").format(shape=tuple(x.shape), problem=problem)
    place = _where_the_table_lives(got)
    if place != _where_the_table_lives(expected):
        return _(TABLE_PLACES[place])
    return None


forward = Exercise(
    "forward",
    module_solution,
    N_("forward gets x of shape (batch, seq, d_model); seq is x.shape[1]; "
       "return x plus the first seq rows of the table (they broadcast over the batch)"),
    cases=[(16, 50), (6, 10)],
    argument_names=["d_model", "max_len"],
    mistakes=[
        (N_("forward returns the whole table, as the lecture's forward() did; a model's module returns x + PE[:seq]"),
         lambda d, n: _module(d, n, forward="table")),
        (N_("forward returns the table's first seq rows without x: add them to x"), lambda d, n: _module(d, n, forward="rows")),
        (N_("forward adds rows 1 to seq: the first token is position 0, row 0"), lambda d, n: _module(d, n, forward="shifted")),
    ],
    compare=compare_modules,
    praise=N_("x + PE[:seq], broadcast over the batch."),
)

buffer = Exercise(
    "buffer",
    module_solution,
    N_("a tensor a module owns but does not train is a buffer: self.register_buffer(name, tensor, persistent=...)"),
    cases=[(16, 50)],
    argument_names=["d_model", "max_len"],
    mistakes=[
        (TABLE_PLACES["attribute"], lambda d, n: _module(d, n, store="attribute")),
        (TABLE_PLACES["parameter"], lambda d, n: _module(d, n, store="parameter")),
        (TABLE_PLACES["saved buffer"], lambda d, n: _module(d, n, store="saved buffer")),
    ],
    compare=compare_modules,
    praise=N_("The table moves with the model and stays out of its checkpoints."),
)


# Exercise 4: how the scaled embeddings compare with the table.


def scale_solution(d_model=768):
    table_row = math.sqrt(d_model / 2)  # d_model / 2 pairs with sin^2 + cos^2 = 1
    embedding_row = math.sqrt(d_model * (1 / d_model))  # d_model entries of variance 1 / d_model: about 1
    return table_row / (embedding_row * math.sqrt(d_model))


def compare_ratio(got, expected):
    """A ratio within 2% (a measured one, from a few hundred random rows, is that close)."""
    value, problem = _one_number(got)
    if value is None:
        return problem
    if not math.isfinite(value) or value <= 0:
        return _("a ratio of two norms is a positive number, got {value}").format(value=value)
    if abs(value / expected - 1) <= 0.02:  # pragma: no mutate (< for <=: a ratio 2% off to the last bit is not a case)
        return None
    if value > expected:  # pragma: no mutate (>= for >: value == expected returned above)
        return _("{value} is more than the ratio: write each norm as a square root of a sum of squares").format(value=f"{value:.3g}")
    return _("{value} is less than the ratio: write each norm as a square root of a sum of squares").format(value=f"{value:.3g}")


scale = Exercise(
    "scale",
    scale_solution,
    N_("a table row has d_model / 2 pairs with sin^2 + cos^2 = 1; an embedding row has d_model entries of variance "
       "1 / d_model, so a squared norm of about 1, before the scale"),
    mistakes=[
        (N_("that is the table's row against an unscaled embedding row (norm about 1): the model scales the embedding first"),
         lambda: math.sqrt(768 / 2)),
        (N_("upside down: the table's row norm goes on top"), lambda: math.sqrt(2)),
        (N_("a table row's squared entries sum to d_model / 2 (one per pair), not d_model"), lambda: 1.0),
    ],
    compare=compare_ratio,
    praise=N_("1 / sqrt(2), whatever d_model: after the scale, the table and the tokens are of the same size."),
)
