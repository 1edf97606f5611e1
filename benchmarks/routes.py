"""The routes people use today to build a (length, d_model) float32 table, in our own words.

Each repeats the arithmetic of one lecture (the seeds in ../shared/seeds) or of the
Annotated Transformer, so the benchmark compares posenc with what those lines compute,
precision choices included. Frameworks are imported lazily by the bench script.
"""

import math


def numpy_routes():
    import numpy as np

    def float32_divide(length, d_model):
        # Seed 000: float32 positions divided by float32 denominators, sin and cos, stacked.
        denominators = np.power(10000, np.arange(0, d_model, 2, dtype=np.float32) / d_model)
        positions = np.arange(length, dtype=np.float32).reshape(length, 1)
        pairs = np.stack([np.sin(positions / denominators), np.cos(positions / denominators)], axis=2)
        return pairs.reshape(length, d_model)

    def angle_rates(length, d_model):
        # Seed 003: rates 1 / 10000^(2*(i//2)/d) per column, float64 angles, strided writes, cast.
        table = np.zeros((length, d_model))
        columns = np.arange(d_model)[np.newaxis, :]
        rates = 1 / np.power(10000, 2 * (columns // 2) / np.float32(d_model))
        positions = np.arange(length)[:, np.newaxis]
        table[:, 0::2] = np.sin(positions * rates[:, 0::2])
        table[:, 1::2] = np.cos(positions * rates[:, 1::2])
        return table.astype(np.float32)

    def exp_route(length, d_model):
        # Seed 004 = the Annotated Transformer: exp(-2i ln(10000)/d) in float32.
        table = np.zeros((length, d_model), dtype=np.float32)
        positions = np.arange(length, dtype=np.float32)[:, None]
        rates = np.exp(np.arange(0, d_model, 2, dtype=np.float32) * -(np.log(10000.0) / d_model))
        table[:, 0::2] = np.sin(positions * rates)
        table[:, 1::2] = np.cos(positions * rates)
        return table

    return {"seed 000 float32 divide": float32_divide, "seed 003 angle rates": angle_rates,
            "seed 004 / Annotated exp": exp_route}


def torch_routes():
    import torch

    def float32_divide(length, d_model):
        # Seed 002: torch.pow denominators and positions in float32, stack and flatten.
        denominators = torch.pow(10000, torch.arange(0, d_model, 2).float() / d_model)
        positions = torch.arange(length, dtype=torch.float).reshape(length, 1)
        pairs = torch.stack([torch.sin(positions / denominators), torch.cos(positions / denominators)], dim=2)
        return torch.flatten(pairs, start_dim=1, end_dim=2)

    def exp_route(length, d_model):
        # The Annotated Transformer (seed 004): float32 exp rates, strided writes into zeros.
        table = torch.zeros(length, d_model)
        positions = torch.arange(0, length).unsqueeze(1)
        rates = torch.exp(torch.arange(0, d_model, 2) * -(math.log(10000.0) / d_model))
        table[:, 0::2] = torch.sin(positions * rates)
        table[:, 1::2] = torch.cos(positions * rates)
        return table

    return {"seed 002 float32 divide": float32_divide, "seed 004 / Annotated exp": exp_route}


def tensorflow_routes():
    import tensorflow as tf

    def interleave(sines, cosines):
        return tf.reshape(tf.stack([sines, cosines], axis=-1), (tf.shape(sines)[0], -1))

    def angle_rates(length, d_model):
        # Seed 003 in TF ops: float64 angles with rates 1 / 10000^(2*(i//2)/d), cast at the end.
        columns = tf.range(d_model, dtype=tf.float64)[tf.newaxis, :]
        rates = 1 / tf.pow(tf.constant(10000, tf.float64), 2 * (columns // 2) / d_model)
        angles = tf.range(length, dtype=tf.float64)[:, tf.newaxis] * rates
        return tf.cast(interleave(tf.sin(angles[:, 0::2]), tf.cos(angles[:, 1::2])), tf.float32)

    def exp_route(length, d_model):
        # Seed 004 (the Annotated Transformer's arithmetic) in TF ops: float32 exp rates.
        rates = tf.exp(tf.range(0, d_model, 2, dtype=tf.float32) * -(math.log(10000.0) / d_model))
        angles = tf.range(length, dtype=tf.float32)[:, tf.newaxis] * rates
        return interleave(tf.sin(angles), tf.cos(angles))

    return {"seed 003 angle rates": angle_rates, "seed 004 / Annotated exp": exp_route}


def jax_routes():
    import functools
    import math

    import jax
    import jax.numpy as jnp

    @functools.partial(jax.jit, static_argnums=(0, 1))
    def exp_route(length, d_model):
        # Seed 004 (the Annotated Transformer's arithmetic) in jax.numpy, compiled: float32 exp rates.
        rates = jnp.exp(jnp.arange(0, d_model, 2, dtype=jnp.float32) * -(math.log(10000.0) / d_model))
        angles = jnp.arange(length, dtype=jnp.float32)[:, None] * rates
        return jnp.stack([jnp.sin(angles), jnp.cos(angles)], axis=-1).reshape(length, d_model)

    return {"seed 004 / Annotated exp (jit)": exp_route}


# Encoding arbitrary positions (a float64 array or tensor of any shape) to float32: the naive
# routes, the angle in float32 or in float64, sines at even and cosines at odd columns.


def numpy_encode_routes():
    import numpy as np

    def naive(positions, d_model, dtype):
        rates = np.power(10000.0, -np.arange(0, d_model, 2) / d_model).astype(dtype)
        angles = positions.astype(dtype)[..., None] * rates
        table = np.empty((*positions.shape, d_model), np.float32)
        table[..., 0::2] = np.sin(angles)
        table[..., 1::2] = np.cos(angles)
        return table

    return {"naive float32": lambda p, d: naive(p, d, np.float32), "naive float64": lambda p, d: naive(p, d, np.float64)}


def torch_encode_routes():
    import torch

    def naive(positions, d_model, dtype):
        rates = torch.pow(10000.0, -torch.arange(0, d_model, 2, dtype=torch.float64) / d_model).to(dtype)
        angles = positions.to(dtype)[..., None] * rates
        table = torch.empty((*positions.shape, d_model))
        table[..., 0::2] = torch.sin(angles)
        table[..., 1::2] = torch.cos(angles)
        return table

    return {"naive float32": lambda p, d: naive(p, d, torch.float32),
            "naive float64": lambda p, d: naive(p, d, torch.float64)}


def tensorflow_encode_routes():
    import tensorflow as tf

    def naive(positions, d_model, dtype):
        rates = tf.cast(tf.pow(tf.constant(10000.0, tf.float64), -tf.range(0, d_model, 2, dtype=tf.float64) / d_model), dtype)
        angles = tf.cast(positions, dtype)[..., None] * rates
        pairs = tf.cast(tf.stack([tf.sin(angles), tf.cos(angles)], axis=-1), tf.float32)
        return tf.reshape(pairs, tf.concat([tf.shape(positions), [d_model]], 0))

    return {"naive float32": lambda p, d: naive(p, d, tf.float32), "naive float64": lambda p, d: naive(p, d, tf.float64)}


def jax_encode_routes():
    import jax
    import jax.numpy as jnp

    def naive(positions, d_model):
        # JAX's default float32: the angle is a float32 product, as in notebook 11's lecture route.
        rates = jnp.power(10000.0, -jnp.arange(0, d_model, 2, dtype=jnp.float32) / d_model)
        angles = positions.astype(jnp.float32)[..., None] * rates
        return jnp.stack([jnp.sin(angles), jnp.cos(angles)], axis=-1).reshape(*positions.shape, d_model)

    return {"naive float32": naive, "naive float32 (jit)": jax.jit(naive, static_argnums=1)}
