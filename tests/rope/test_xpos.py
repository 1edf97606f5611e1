"""posenc.rope.xpos against the two reference implementations of xPos, re-expressed here in float64
(neither package is installed: rotary-embedding-torch needs einops, torchscale pins old packages),
at several head sizes, lengths, scale bases and decoding offsets; and its bad input. The fronts'
``xpos_cos_sin`` (torch, TensorFlow, JAX) against it, eagerly and traced.

The sources compute in float32; the re-expressions keep their steps and run in float64, so
posenc's float64 tables match them to a few float64 roundings.
"""

import math

import numpy as np
import pytest

from frameworks import BOUND, ROUNDING
from posenc.rope import apply_rotary, rotary_cos_sin, xpos_cos_sin, xpos_decay

try:
    import torch
except ImportError:  # the re-expressions run torch: those tests take the torch fixture (conftest.py) and skip one by one
    torch = None

HEAD_DIMS = [2, 8, 32, 64, 128]
LENGTHS = [1, 2, 7, 16, 33]
SCALE_BASES = [512, 64, 2048.5]


def rotate_every_two(x):
    """Both sources' rotation of adjacent pairs: (x1, x2) -> (-x2, x1)."""
    return torch.stack((-x[..., 1::2], x[..., 0::2]), dim=-1).flatten(-2)


def lucidrains_xpos(q, k, scale_base):
    """``RotaryEmbedding(dim, use_xpos=True, xpos_scale_base=scale_base).rotate_queries_and_keys(q, k)``,
    q and k ``(..., seq_len, dim)``.

    Source: lucidrains/rotary-embedding-torch, src/rotary_embedding_torch/rotary_embedding_torch.py at
    commit 06b10e121ceb9f014ceae96a9693ba202ba95381: ``freqs = 1 / theta ** (arange(0, dim, 2) / dim)``
    (theta 10000), the angles ``seq * freqs`` repeated ``(n r), r=2``; ``get_scale``: ``power = (seq -
    len(seq) // 2) / scale_base``, ``scale = self.scale ** power`` with ``self.scale = (arange(0, dim, 2)
    + 0.4 dim) / (1.4 dim)``, repeated the same way; ``apply_rotary_emb``: ``t * cos * scale +
    rotate_half(t) * sin * scale`` (its ``rotate_half`` turns adjacent pairs), keys with ``scale ** -1``.
    """
    seq_len, dim = q.shape[-2:]
    freqs = 1.0 / (10000 ** (torch.arange(0, dim, 2)[: dim // 2].double() / dim))
    seq = torch.arange(seq_len, dtype=torch.float64)
    angles = torch.einsum("..., f -> ... f", seq, freqs).repeat_interleave(2, -1)
    power = (seq - seq_len // 2) / scale_base
    scale = ((torch.arange(0, dim, 2, dtype=torch.float64) + 0.4 * dim) / (1.4 * dim)) ** power[:, None]
    scale = scale.repeat_interleave(2, -1)

    def apply(t, s):
        return t * angles.cos() * s + rotate_every_two(t) * angles.sin() * s

    return apply(q, scale), apply(k, scale**-1)


def torchscale_xpos(x, scale_base, offset=0, downscale=False):
    """torchscale's ``XPOS(head_dim, scale_base)(x, offset, downscale)``, x ``(batch * heads, length, head_dim)``.

    Source: microsoft/torchscale, torchscale/component/xpos_relative_position.py at commit
    776b070d68aef2aca447dc3e1adb64682fbec126 (``MultiheadAttention`` imports it): ``min_pos = -(length +
    offset) // 2``, ``max_pos = length + offset + min_pos``, ``scale = self.scale ** (arange(min_pos,
    max_pos) / scale_base)``; ``fixed_pos_embedding(scale)``: sin and cos of ``arange(rows) *
    inv_freq``, ``inv_freq = 1 / 10000 ** (arange(0, dim) / dim)`` over ``dim = head_dim / 2``; the
    last ``length`` rows; ``1 / scale`` for ``downscale``; ``apply_rotary_pos_emb``: ``x * cos * scale +
    rotate_every_two(x) * sin * scale``, each repeated twice in a row (``duplicate_interleave``).
    Attention turns keys with offset 0, downscale=True, and the queries of a decoding step with
    offset ``src_len - 1``.
    """
    length, head_dim = x.shape[1:]
    min_pos = -(length + offset) // 2
    max_pos = length + offset + min_pos
    zeta = (torch.arange(0, head_dim, 2, dtype=torch.float64) + 0.4 * head_dim) / (1.4 * head_dim)
    scale = zeta ** (torch.arange(min_pos, max_pos, 1).double() / scale_base)[:, None]
    rows, dim = scale.shape
    inv_freq = 1.0 / (10000 ** (torch.arange(0, dim).double() / dim))
    angles = torch.einsum("i , j -> i j", torch.arange(0, rows, dtype=torch.float64), inv_freq)
    sin, cos = torch.sin(angles), torch.cos(angles)
    scale, sin, cos = scale[-length:], sin[-length:], cos[-length:]
    if downscale:
        scale = 1 / scale
    sin, cos = (t.mul(scale).repeat_interleave(2, -1) for t in (sin, cos))
    return x * cos + rotate_every_two(x) * sin


def ours(x, positions, *, keys=False, **options):
    cos, sin = xpos_cos_sin(positions, x.shape[-1], keys=keys, dtype=np.float64, **options)
    return apply_rotary(x.numpy(), cos, sin, layout="interleaved")


def close(theirs, mine):
    np.testing.assert_allclose(mine, theirs.numpy(), rtol=1e-13, atol=1e-13)


@pytest.mark.parametrize("head_dim", HEAD_DIMS)
@pytest.mark.parametrize("length", LENGTHS)
@pytest.mark.parametrize("scale_base", SCALE_BASES)
def test_rotary_embedding_torch_queries_and_keys(head_dim, length, scale_base, torch):
    q, k = torch.randn(2, 3, 2, length, head_dim, generator=torch.Generator().manual_seed(length), dtype=torch.float64)
    their_q, their_k = lucidrains_xpos(q, k, scale_base)
    positions, center = np.arange(length), length // 2
    close(their_q, ours(q, positions, scale_base=scale_base, center=center))
    close(their_k, ours(k, positions, keys=True, scale_base=scale_base, center=center))


@pytest.mark.parametrize("head_dim", HEAD_DIMS)
@pytest.mark.parametrize("length", LENGTHS)
@pytest.mark.parametrize("scale_base", SCALE_BASES)
def test_torchscale_queries_keys_and_decoding_step(head_dim, length, scale_base, torch):
    x = torch.randn(6, length, head_dim, generator=torch.Generator().manual_seed(head_dim), dtype=torch.float64)
    center = math.ceil(length / 2)  # -(-length // 2)
    close(torchscale_xpos(x, scale_base, downscale=True), ours(x, np.arange(length), keys=True, scale_base=scale_base,
                                                                center=center))
    step = x[:, -1:]  # the query of the step that reads `length` cached keys
    close(torchscale_xpos(step, scale_base, offset=length - 1),
          ours(step, [length - 1], scale_base=scale_base, center=center))


@pytest.mark.parametrize("head_dim", [8, 64])
def test_scores_decay_with_the_distance_only(head_dim, torch):
    """q_n . k_m = RoPE's pair terms times zeta_j ** ((n - m) / scale_base), whatever the centre."""
    generator = np.random.default_rng(head_dim)
    q, k = generator.standard_normal((2, 20, head_dim))
    positions = np.arange(20)
    scores = [ours(torch.from_numpy(q), positions, center=c) @ ours(torch.from_numpy(k), positions, keys=True,
                                                                    center=c).T for c in (0, 10, -7.5)]
    np.testing.assert_allclose(scores[1], scores[0], rtol=1e-12)
    np.testing.assert_allclose(scores[2], scores[0], rtol=1e-12)
    cos, sin = rotary_cos_sin(positions, head_dim, layout="interleaved", dtype=np.float64)
    rq, rk = (apply_rotary(t, cos, sin, layout="interleaved") for t in (q, k))
    pair_terms = (rq * rk[:, None]).reshape(20, 20, head_dim // 2, 2).sum(-1)  # [m, n, j]
    decay = xpos_decay(head_dim) ** ((positions[None, :, None] - positions[:, None, None]) / 512)
    np.testing.assert_allclose(scores[0], (pair_terms * decay).sum(-1).T, rtol=1e-10, atol=1e-12)


def test_decay_and_layouts():
    np.testing.assert_array_equal(xpos_decay(4), [0.4 * 4 / 5.6, (2 + 1.6) / 5.6])
    half = xpos_cos_sin(np.arange(5), 8, layout="half", dtype=np.float64)
    interleaved = xpos_cos_sin(np.arange(5), 8, dtype=np.float64)
    for a, b in zip(half, interleaved):
        np.testing.assert_array_equal(a[:, :4], b[:, ::2])
        np.testing.assert_array_equal(a[:, 4:], b[:, 1::2])
    cos32, _ = xpos_cos_sin(np.arange(5), 8)
    assert cos32.dtype == np.float32
    np.testing.assert_array_equal(cos32, half[0][:, [0, 4, 1, 5, 2, 6, 3, 7]].astype(np.float32))


@pytest.mark.parametrize(
    ("options", "error", "message"),
    [
        ({"scale_base": 0}, ValueError, "scale_base must be a finite real number > 0, got 0"),
        ({"scale_base": "512"}, TypeError, "scale_base must be a real number > 0, got '512'"),
        ({"center": math.nan}, ValueError, "center must be a finite real number, got nan"),
        ({"center": True}, TypeError, "center must be a real number, got True"),
        ({"keys": 1}, TypeError, "keys must be True or False, got 1"),
        ({"layout": "pairs"}, ValueError, "layout"),
        ({"dtype": np.int32}, TypeError, "dtype"),
    ],
)
def test_bad_input(options, error, message):
    with pytest.raises(error, match=message):
        xpos_cos_sin(np.arange(4), 8, **options)


def test_bad_head_dim():
    with pytest.raises(ValueError, match="head_dim must be an even int >= 2"):
        xpos_decay(7)
    with pytest.raises(ValueError, match="head_dim must be an even int >= 2"):
        xpos_cos_sin(np.arange(4), 7)


# The fronts' xpos_cos_sin. Its values are RoPE's times the scale, so each error is measured against
# the scale of its pair, the length of (cos, sin): torch and TensorFlow compute in float64 and round
# once (within 2**-24 of it); JAX in float32 (x64 off): RoPE's 2e-7, the roundings of the product
# and of the output, and zeta ** y (y = (p - center) / scale_base) from a float32 zeta and y, off by
# (|y| + |e|) 2**-24 and a few more (e = y ln(zeta) the exponent): 2**-22 (|y| + |e|) bounds them.
# In float64 no rounding hides the power: NumPy's (SIMD on AVX-512 CPUs) and the front's may each be
# 1 ulp (2**-52) from the true one, with a rounded product on each side: 6 * 2**-53 in all.


def front_error(front, got, exact, y, dtype="float32"):
    """``got`` (a front's ``(cos, sin)`` in ``dtype``) against float64 ``exact`` at powers ``y``: the
    largest error over the scale, in units of the bound above (at most 1 passes)."""
    scale = np.hypot(*exact)
    bound = 6 * ROUNDING[dtype] if dtype == "float64" else ROUNDING[dtype] * 1.001
    if front.name == "jax":
        bound += BOUND + 2 * ROUNDING["float32"] + 2.0**-22 * (np.abs(y)[..., None] + np.abs(np.log(scale)))
    return max(np.max(np.abs(front.numpy(g).astype(np.float64) - e) / scale / bound) for g, e in zip(got, exact))


def powers(positions, scale_base=512.0, center=0.0, **options):
    return (positions - center) / scale_base


XPOS_OPTIONS = [{}, {"scale_base": 64, "center": 16}, {"scale_base": 2048.5, "center": -7.5, "layout": "half"}]


@pytest.mark.parametrize("head_dim", [2, 8, 64, 128])
@pytest.mark.parametrize("length", [1, 7, 33, 1000])
@pytest.mark.parametrize("keys", [False, True])
@pytest.mark.parametrize("options", XPOS_OPTIONS)
def test_the_fronts_give_numpys_xpos(front, head_dim, length, keys, options):
    positions = np.arange(length)
    got = front.api.xpos_cos_sin(front.tensor(positions), head_dim, keys=keys, **options)
    exact = xpos_cos_sin(positions, head_dim, keys=keys, dtype=np.float64, **options)
    for g in got:
        assert g.dtype == front.dtypes["float32"] and tuple(g.shape) == (length, head_dim)
    assert front_error(front, got, exact, powers(positions, **options)) <= 1


def traced(front, function):
    if front.trace is not None:  # tf.function of unknown shape, jax.jit
        return lambda tensor: front.trace(function, tensor)
    import torch

    return torch.compile(function)


@pytest.mark.parametrize("head_dim", [8, 64])
@pytest.mark.parametrize("keys", [False, True])
@pytest.mark.parametrize(("length", "options"), [(7, {}), (33, {"scale_base": 64, "center": 16, "layout": "half"})])
def test_the_fronts_give_numpys_xpos_traced(front, head_dim, keys, length, options):
    positions = np.arange(length)[None] + np.array([[0], [5]])  # (batch, seq) position ids, one batch offset
    got = traced(front, lambda p: front.api.xpos_cos_sin(p, head_dim, keys=keys, **options))(front.tensor(positions))
    exact = xpos_cos_sin(positions, head_dim, keys=keys, dtype=np.float64, **options)
    assert tuple(got[0].shape) == (2, length, head_dim)
    assert front_error(front, got, exact, powers(positions, **options)) <= 1


def test_the_fronts_xpos_dtypes(front):
    positions = np.arange(20)
    exact = xpos_cos_sin(positions, 16, keys=True, center=10, dtype=np.float64)
    for name in ("float16", "bfloat16", "float32", "float64"):
        if name not in front.dtypes:  # JAX's float64 (x64 off)
            continue
        got = front.api.xpos_cos_sin(positions, 16, keys=True, center=10, dtype=front.dtypes[name])
        assert got[0].dtype == got[1].dtype == front.dtypes[name]
        assert front_error(front, got, exact, powers(positions, center=10), name) <= 1


@pytest.mark.parametrize(
    ("options", "error", "message"),
    [
        ({"scale_base": -1.0}, ValueError, "scale_base must be a finite real number > 0, got -1.0"),
        ({"center": "0"}, TypeError, "center must be a real number, got '0'"),
        ({"keys": "yes"}, TypeError, "keys must be True or False, got 'yes'"),
        ({"head_dim": 7}, ValueError, "head_dim must be an even int >= 2"),
        ({"layout": "pairs"}, ValueError, "layout"),
        ({"dtype": "int32"}, TypeError, "dtype"),
    ],
)
def test_the_fronts_bad_xpos_input_names_the_argument(front, options, error, message):
    options = {"head_dim": 8, **options}
    if options.get("dtype") == "int32":
        options["dtype"] = front.dtypes["int32"]
    with pytest.raises(error, match=message):
        front.api.xpos_cos_sin(front.tensor(np.arange(4)), **options)
