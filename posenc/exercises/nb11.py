"""Exercises of notebook 11 (JAX: `.at[...].set()`, `jax.jit` and its compilations, `jax.vmap`)."""

import functools

import jax
import jax.numpy as jnp
import numpy as np

from ..language import N_
from . import Exercise, _, compare_arrays

__all__ = ["CALLS", "STARTS", "at_table", "chunks", "compilations"]


def _angles(length, d_model, first=0):
    positions = jnp.arange(first, first + length, dtype=jnp.float32)[:, None]
    return positions / jnp.power(10000.0, jnp.arange(0, d_model, 2, dtype=jnp.float32) / d_model)


def at_table_solution(length, d_model):
    angles = _angles(length, d_model)
    table = jnp.zeros((length, d_model))
    table = table.at[:, 0::2].set(jnp.sin(angles))
    table = table.at[:, 1::2].set(jnp.cos(angles))
    return table


def _at_table(length, d_model, *, keep_sines=True, keep_cosines=True, swap=False):
    angles = _angles(length, d_model)
    even, odd = (jnp.cos, jnp.sin) if swap else (jnp.sin, jnp.cos)
    table = jnp.zeros((length, d_model))
    if keep_sines:
        table = table.at[:, 0::2].set(even(angles))
    if keep_cosines:
        table = table.at[:, 1::2].set(odd(angles))
    return table


at_table = Exercise(
    "at_table",
    at_table_solution,
    N_("`table.at[:, 0::2].set(values)` returns a new array and leaves `table` as it was: write `table = table.at[...].set(...)`"),
    cases=[(10, 6), (20, 16)],
    argument_names=["length", "d_model"],
    mistakes=[
        (
            N_("your table is all zeros: `.at[...].set(...)` returns a new array and leaves the old one unchanged; "
               "assign the result, `table = table.at[:, 0::2].set(...)`"),
            lambda n, d: _at_table(n, d, keep_sines=False, keep_cosines=False),
        ),
        (
            N_("the even columns are zeros: start the second `.at[...]` from the table the first one returned, not from the zeros"),
            lambda n, d: _at_table(n, d, keep_sines=False),
        ),
        (
            N_("the odd columns are zeros: the result of the `.at[:, 1::2].set(...)` was not kept"),
            lambda n, d: _at_table(n, d, keep_cosines=False),
        ),
        (N_("sine and cosine are swapped: the even columns (0::2) hold the sines"), lambda n, d: _at_table(n, d, swap=True)),
    ],
    praise=N_("`.at[...].set()` is how JAX writes into an array: it returns a new one."),
)


# (first position, length, d_model) of each call in exercise 2.
CALLS = ((0, 10, 6), (0, 10, 6), (100, 10, 6), (0, 12, 6), (0, 10, 8), (50, 16, 8), (100, 12, 6))


def compilations_solution():
    traces = []

    def encode(positions, d_model):
        # pragma: no mutate block (the traces are counted: neither what each records nor the values matter)
        traces.append((positions.shape, d_model))  # a Python side effect: runs only while tracing
        denominators = jnp.power(10000.0, jnp.arange(0, d_model, 2, dtype=jnp.float32) / d_model)
        angles = positions[..., None].astype(jnp.float32) / denominators
        return jnp.stack([jnp.sin(angles), jnp.cos(angles)], axis=-1).reshape(*positions.shape, d_model)

    encode_jit = jax.jit(encode, static_argnums=1)
    for start, length, d_model in CALLS:
        encode_jit(jnp.arange(start, start + length), d_model)
    return len(traces)


def _compare_counts(got, expected):
    if got is Ellipsis:
        return _("your answer is still `...`: replace it with a number")
    if isinstance(got, bool) or not isinstance(got, (int, np.integer)):
        # Translators: {type} is a Python type name.
        return _("answer with a whole number of compilations, got {type}").format(type=type(got).__name__)
    if got == expected:
        return None
    if got > expected:  # pragma: no mutate (>= for >: got == expected returned above)
        return _("{count} is more than the number of traces: list the (shape, d_model) of each call").format(count=got)
    return _("{count} is fewer than the number of traces: list the (shape, d_model) of each call").format(count=got)


compilations = Exercise(
    "compilations",
    compilations_solution,
    N_("a call traces only when the shape of its positions or its static d_model is one the function has not seen"),
    mistakes=[
        (N_("a call whose positions have a shape seen before, and the same d_model, reuses the compiled code"), lambda: len(CALLS)),
        (
            N_("a call repeated exactly reuses the compiled code, but so does one with new values of a known shape"),
            lambda: len(set(CALLS)),
        ),
        (N_("counting the lengths alone misses that a new static d_model compiles too"), lambda: len({n for _, n, _ in CALLS})),
        (N_("counting d_model alone misses that a new length (a new shape) compiles too"), lambda: len({d for _, _, d in CALLS})),
        (N_("jit compiles more than once: for each new shape and each new static value"), lambda: 1),
    ],
    compare=_compare_counts,
    praise=N_("One trace per distinct (length, d_model); new values of a known shape run the compiled code."),
)


STARTS = jnp.asarray([0.0, 100.0, 7.0])


def chunks_solution():
    denominators = jnp.power(10000.0, jnp.arange(0, 8, 2, dtype=jnp.float32) / 8)

    def encode_position(position):
        angles = position / denominators
        return jnp.stack([jnp.sin(angles), jnp.cos(angles)], axis=1).reshape(8)

    def encode_chunk(start):
        return jax.vmap(encode_position)(start + jnp.arange(4.0))

    return jax.vmap(encode_chunk)(STARTS)


def _chunk(start):
    angles = (start + jnp.arange(4.0))[:, None] / jnp.power(10000.0, jnp.arange(0, 8, 2, dtype=jnp.float32) / 8)
    return jnp.stack([jnp.sin(angles), jnp.cos(angles)], axis=-1).reshape(4, 8)


def _chunks(*, offset=True, first=0.0):
    return jnp.stack([_chunk((start if offset else 0.0) + first) for start in STARTS])


chunks = Exercise(
    "chunks",
    chunks_solution,
    N_("inside encode_chunk, the positions of a chunk are start + jnp.arange(4.0); vmap then maps encode_position over them"),
    mistakes=[
        (N_("every chunk starts at position 0: add the chunk's start to its positions"), lambda: _chunks(offset=False)),
        (N_("your chunks start one position late: the first position of a chunk is its start"), lambda: _chunks(first=1.0)),
    ],
    # float32 angles near position 107 are rounded to a few 1e-6: allow that much
    compare=functools.partial(compare_arrays, atol=1e-5),
    praise=N_("vmap ran the function of one position over the four positions of a chunk, then over the chunks."),
)
