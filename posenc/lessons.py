"""Lesson scaffolding, apart from the library: the copy task of notebooks 05, 07 and 08, and
the train-short/test-long experiment of notebook 12.

The copy task: at every position, output the previous token.

Each sequence holds random tokens out of ``VOCAB``; the target at position ``i`` is the
token at ``i - 1``. Position 0 has no previous token, so its target is ``IGNORE``, which
the loss and :func:`accuracy` skip. A model that cannot see order does no better than
:func:`order_blind_ceiling`.

PyTorch-based and imported on its own, like ``posenc.torch``::

    from posenc import lessons

    tokens, targets = lessons.copy_previous_task(np.random.default_rng(0), 1000, 12)

Notebook 12's task, :func:`markov_task`: predict the next token of a second-order Markov
source, which needs the two previous tokens, found by their relative position. A
:class:`TinyDecoder` takes its positions from one of ``POSITION_METHODS``;
:func:`train_short_test_long` trains one per method at one length and scores it at multiples
of that length.

Tensors made here go to the device of the model (its first parameter) or of the input, so a
lesson run on a GPU stays there.

``import posenc`` does not load this module (nor PyTorch).
"""

import math
from collections.abc import Iterable, Sequence

import numpy as np
import numpy.typing as npt
import torch
from torch import nn

from . import torch as front
from .biases import alibi_bias, relative_position_bucket
from .biases.t5 import check_bucketing
from .engine.checks import check_choice, check_int_at_least

__all__ = [
    "BATCH",
    "IGNORE",
    "MARKOV_KEEP",
    "MARKOV_RULE",
    "POSITION_METHODS",
    "STEPS",
    "TRAIN_LENGTH",
    "VOCAB",
    "LearnedPositions",
    "TinyDecoder",
    "accuracy",
    "copy_previous_task",
    "first_step_above",
    "markov_task",
    "order_blind_ceiling",
    "predict",
    "train",
    "train_short_test_long",
]

#: Tokens are ints in ``0 .. VOCAB - 1``.
VOCAB = 16
#: The sequence length of the lectures' training sets.
TRAIN_LENGTH = 12
#: The target of an unscored position (PyTorch's default ``ignore_index``).
IGNORE = -100
#: The lectures' training run: ``STEPS`` batches of ``BATCH`` sequences.
STEPS, BATCH = 300, 64
#: markov_task: the probability that a token follows ``MARKOV_RULE`` (else it is uniform).
MARKOV_KEEP = 0.85
#: markov_task's rule, ``(VOCAB, VOCAB)`` ints: the token after ``a, b`` is ``MARKOV_RULE[a, b]``.
MARKOV_RULE = np.random.default_rng(0).integers(0, VOCAB, (VOCAB, VOCAB))
MARKOV_RULE.flags.writeable = False
#: How a TinyDecoder knows positions: not at all (NoPE), a learned or the sinusoidal table added
#: to the token embeddings, RoPE on queries and keys, or ALiBi's or T5's bias on the scores.
POSITION_METHODS = ("none", "learned", "sinusoidal", "rope", "alibi", "t5")


def copy_previous_task(rng: np.random.Generator, n: int, length: int) -> tuple[np.ndarray, np.ndarray]:
    """``n`` sequences of ``length`` random tokens -> (tokens, targets), both (n, length) int64.

    targets[:, i] = tokens[:, i - 1] for i >= 1; targets[:, 0] = IGNORE.
    """
    _check_generator(rng)
    n = check_int_at_least(n, "n", 1)
    length = check_int_at_least(length, "length", 2, " (position 0 has no previous token)")
    tokens = rng.integers(0, VOCAB, size=(n, length))
    targets = np.roll(tokens, 1, axis=1)
    targets[:, 0] = IGNORE
    return tokens, targets


def markov_task(rng: np.random.Generator, n: int, length: int) -> tuple[np.ndarray, np.ndarray]:
    """``n`` sequences of a second-order Markov source -> (tokens, targets), both (n, length) int64.

    The source: two uniform tokens, then each token is ``MARKOV_RULE[previous two]`` with
    probability ``MARKOV_KEEP``, else uniform. targets[:, i] = the token after tokens[:, i]
    for i >= 1; targets[:, 0] = IGNORE (one token does not determine the next). The best
    accuracy any model can reach is ``MARKOV_KEEP + (1 - MARKOV_KEEP) / VOCAB``.
    """
    _check_generator(rng)
    n = check_int_at_least(n, "n", 1)
    length = check_int_at_least(length, "length", 2, " (the first scored target follows two tokens)")
    source = np.empty((n, length + 1), np.int64)
    source[:, :2] = rng.integers(0, VOCAB, (n, 2))
    for t in range(2, length + 1):
        follows = rng.random(n) < MARKOV_KEEP  # pragma: no mutate (<= differs only where a draw equals 0.85 exactly)
        source[:, t] = np.where(follows, MARKOV_RULE[source[:, t - 2], source[:, t - 1]], rng.integers(0, VOCAB, n))
    targets = source[:, 1:].copy()
    targets[:, 0] = IGNORE
    return source[:, :-1], targets


def accuracy(predictions: npt.ArrayLike, targets: npt.ArrayLike) -> float:
    """Share of scored positions (targets != IGNORE) where the prediction is the target.

    predictions and targets: arrays of the same shape, e.g. (n, length); returns a float.
    """
    predictions, targets = np.asarray(predictions), np.asarray(targets)
    if predictions.shape != targets.shape:
        raise ValueError(
            f"predictions and targets must have the same shape, got {predictions.shape} and {targets.shape}"
        )
    scored = targets != IGNORE
    if not scored.any():
        raise ValueError(f"targets must have at least one scored position (not IGNORE={IGNORE}), got none")
    return float((predictions == targets)[scored].mean())


def order_blind_ceiling(tokens: np.ndarray) -> float:
    """Expected accuracy of the best guess from a token and the bag of tokens: (n, length) -> float.

    Without order, the best guess for the token before position i is the most frequent of
    the other tokens of its sequence, right with probability (its count) / (length - 1).
    The mean of that over positions 1 .. length - 1 and the n sequences.
    """
    tokens = _check_tokens(tokens, min_length=2)
    one_hot = np.eye(VOCAB)[tokens]
    others = one_hot.sum(axis=1, keepdims=True) - one_hot
    return float((others.max(axis=-1)[:, 1:] / (tokens.shape[1] - 1)).mean())


def first_step_above(accuracies: Iterable[float], level: float = 0.9) -> int | None:
    """The first step (counted from 1) whose accuracy is above ``level``, or None if none is."""
    return next((step for step, value in enumerate(accuracies, 1) if value > level), None)


class LearnedPositions(nn.Module):
    """x (batch, seq, d_model) -> x + table[:seq], with one trainable row per position below max_len.

    A sequence longer than ``max_len`` raises IndexError: the table has no row for it.
    """

    def __init__(self, d_model: int, max_len: int) -> None:
        super().__init__()
        self.table = nn.Embedding(check_int_at_least(max_len, "max_len", 1), check_int_at_least(d_model, "d_model", 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.shape[1] > self.table.num_embeddings:
            raise IndexError(
                f"LearnedPositions has rows for positions 0..{self.table.num_embeddings - 1} only, "
                f"got x of shape {tuple(x.shape)} (seq = {x.shape[1]})"
            )
        return x + self.table(torch.arange(x.shape[1], device=x.device))


def train(
    model: nn.Module, tokens: np.ndarray, targets: np.ndarray, *, steps: int, batch_size: int = BATCH, lr: float = 3e-3,
    report_every: int | None = None, stop_above: float | None = None,
) -> tuple[list[float], list[float]]:
    """Train ``model`` in place with Adam; returns the per-step (losses, accuracies), two lists of floats.

    model: (batch, length) int64 tokens -> (batch, length, VOCAB) logits; put in training mode.
    tokens, targets: (n, length) int arrays, as from :func:`copy_previous_task`. Step ``s``
    (from 0) trains on rows ``s * batch_size`` to ``(s + 1) * batch_size``, in order, with the
    cross-entropy over the positions whose target is not IGNORE; its accuracy is that of the
    batch's logits before the update. ``report_every=k`` prints the loss and the accuracy
    every k steps; training stops after the first step whose accuracy is above ``stop_above``.
    """
    tokens, targets = _check_training_set(tokens, targets)
    steps = check_int_at_least(steps, "steps", 1)
    batch_size = check_int_at_least(batch_size, "batch_size", 1)
    if steps * batch_size > len(tokens):
        raise ValueError(
            f"steps * batch_size must be at most the number of sequences, {len(tokens)}; "
            f"got steps={steps}, batch_size={batch_size} ({steps * batch_size} sequences)"
        )
    if report_every is not None:
        report_every = check_int_at_least(report_every, "report_every", 1)
    model.train()
    device = _device(model)
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    losses, accuracies = [], []
    for step in range(steps):
        batch = slice(step * batch_size, (step + 1) * batch_size)
        batch_tokens = torch.from_numpy(tokens[batch]).to(device)
        batch_targets = torch.from_numpy(targets[batch]).to(device)
        logits = model(batch_tokens)
        loss = nn.functional.cross_entropy(logits.transpose(1, 2), batch_targets, ignore_index=IGNORE)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
        accuracies.append(accuracy(logits.argmax(-1).cpu().numpy(), targets[batch]))
        if report_every and (step + 1) % report_every == 0:
            print(f"  step {step + 1}: loss {losses[-1]:.3f}, accuracy {accuracies[-1]:.2f}")
        if stop_above is not None and accuracies[-1] > stop_above:
            break
    return losses, accuracies


def predict(model: nn.Module, tokens: np.ndarray) -> np.ndarray:
    """Predicted tokens, (n, length) -> (n, length) int64, with the model put in eval mode."""
    tokens = _check_tokens(tokens)
    model.eval()
    with torch.no_grad():
        return model(torch.from_numpy(tokens).to(_device(model))).argmax(-1).cpu().numpy()


class _DecoderLayer(nn.Module):
    """Pre-norm: x + attention(norm(x)), then x + feed_forward(norm(x)); ``bias`` is added to the
    scores, ``rotary`` (cos, sin) turns the queries and keys."""

    def __init__(self, d_model, heads):
        super().__init__()
        self.heads = heads
        self.norm1, self.norm2 = nn.LayerNorm(d_model), nn.LayerNorm(d_model)
        self.qkv, self.out = nn.Linear(d_model, 3 * d_model), nn.Linear(d_model, d_model)
        self.feed_forward = nn.Sequential(nn.Linear(d_model, 4 * d_model), nn.GELU(), nn.Linear(4 * d_model, d_model))

    def forward(self, x, bias, rotary):
        batch, length, d_model = x.shape
        # (3, batch, heads, length, head_dim)
        q, k, v = self.qkv(self.norm1(x)).view(batch, length, 3, self.heads, -1).permute(2, 0, 3, 1, 4)
        if rotary is not None:
            q, k = (front.apply_rotary(t, *rotary) for t in (q, k))
        attended = nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=bias)
        x = x + self.out(attended.transpose(1, 2).reshape(batch, length, d_model))
        return x + self.feed_forward(self.norm2(x))


class TinyDecoder(nn.Module):
    """A causal Transformer: (batch, length) tokens -> (batch, length, VOCAB) logits, with the
    positions of ``method`` (one of ``POSITION_METHODS``) and nothing else that sees order.

    ``layers`` pre-norm layers of ``heads``-head attention and a GELU feed-forward of
    ``4 * d_model``. "learned" adds :class:`LearnedPositions` with ``max_len`` rows,
    "sinusoidal" ``posenc.torch.positional_encoding``; "rope" turns queries and keys by
    ``posenc.torch.rotary_cos_sin`` (half layout, base 10000); "alibi" and "t5" add
    :meth:`attention_bias` to the scores: ALiBi's causal bias, or one table of
    ``(num_buckets, heads)`` learned values looked up by T5's causal buckets
    (``max_distance``), shared by every layer as in T5.
    """

    def __init__(self, method: str, *, d_model: int = 64, heads: int = 8, layers: int = 1, max_len: int = 128,
                 num_buckets: int = 16, max_distance: int = 16) -> None:
        super().__init__()
        self.method = check_choice(method, POSITION_METHODS, "method")
        self.heads = check_int_at_least(heads, "heads", 1)
        d_model = check_int_at_least(d_model, "d_model", 1)
        if d_model % (2 * heads):
            raise ValueError(f"d_model must be a multiple of 2 * heads = {2 * heads} (RoPE turns pairs), got {d_model}")
        self.d_model, self.num_buckets, self.max_distance = d_model, num_buckets, max_distance
        self.embed = nn.Embedding(VOCAB, d_model)
        self.positions = LearnedPositions(d_model, max_len) if method == "learned" else nn.Identity()
        if method == "t5":
            check_bucketing(False, num_buckets, max_distance)
            self.t5_table = nn.Parameter(torch.zeros(num_buckets, heads))
        layers = check_int_at_least(layers, "layers", 1)
        self.layers = nn.ModuleList(_DecoderLayer(d_model, heads) for _ in range(layers))
        self.norm, self.head = nn.LayerNorm(d_model), nn.Linear(d_model, VOCAB)

    def attention_bias(self, length: int) -> torch.Tensor:
        """What the layers add to the scores, ``(heads, length, length)`` float32 on the model's
        device: the causal mask (``-inf`` where key > query, else 0), plus ALiBi's bias (``-slope
        * (query - key)``) or T5's (``t5_table[bucket(key - query), head]``)."""
        device = _device(self)
        if self.method == "alibi":
            return torch.from_numpy(alibi_bias(self.heads, length, length)).to(device)  # causal, its default
        mask = torch.full((length, length), -math.inf, device=device).triu(1)
        if self.method != "t5":
            return mask.expand(self.heads, length, length)
        offsets = np.arange(length)[None, :] - np.arange(length)[:, None]  # key - query
        buckets = relative_position_bucket(offsets, bidirectional=False, num_buckets=self.num_buckets,
                                           max_distance=self.max_distance)
        return self.t5_table[torch.from_numpy(buckets).to(device)].permute(2, 0, 1) + mask

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        length = tokens.shape[1]
        x = self.positions(self.embed(tokens))
        if self.method == "sinusoidal":
            x = x + front.positional_encoding(length, self.d_model, device=x.device)
        rotary = None
        if self.method == "rope":
            rotary = front.rotary_cos_sin(torch.arange(length, device=x.device), self.d_model // self.heads)
        bias = self.attention_bias(length)
        for layer in self.layers:
            x = layer(x, bias, rotary)
        return self.head(self.norm(x))


def train_short_test_long(
    methods: Sequence[str] = POSITION_METHODS, *, train_length: int = 16, multiples: Sequence[int] = (1, 2, 4, 8),
    steps: int = 100, batch_size: int = 32, lr: float = 0.02, test_size: int = 64, seed: int = 0,
) -> dict[str, list[float]]:
    """Train a :class:`TinyDecoder` per method on :func:`markov_task` at ``train_length`` and
    score it at each multiple of it: ``{method: [accuracy at train_length * m for m in multiples]}``.

    Every model, a :class:`TinyDecoder` with its defaults, starts from ``torch.manual_seed(seed)``
    and trains with :func:`train` (Adam, learning rate ``lr``) on the same ``steps * batch_size``
    sequences in the same order; each length has its
    own ``test_size`` fresh sequences, the same for every model. The learned table has rows up
    to the longest test; those past ``train_length`` are never trained. Runs on one CPU thread
    (the thread count changes the sums' rounding), restored afterwards.
    """
    methods = [check_choice(method, POSITION_METHODS, "methods[...]") for method in methods]
    train_length = check_int_at_least(train_length, "train_length", 2)
    multiples = [check_int_at_least(m, "multiples[...]", 1) for m in multiples]
    if not multiples:
        raise ValueError("multiples must name at least one multiple of train_length, got none")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        training_set = markov_task(np.random.default_rng(seed), steps * batch_size, train_length)
        test_sets = [markov_task(np.random.default_rng([seed, m]), test_size, m * train_length) for m in multiples]
        results = {}
        for method in methods:
            torch.manual_seed(seed)
            model = TinyDecoder(method, max_len=train_length * max(multiples))
            train(model, *training_set, steps=steps, batch_size=batch_size, lr=lr)
            results[method] = [accuracy(predict(model, tokens), targets) for tokens, targets in test_sets]
        return results
    finally:
        torch.set_num_threads(threads)


def _device(model):
    """Where ``model`` keeps its weights (its first parameter or buffer; the CPU if it has none)."""
    return next((t.device for t in (*model.parameters(), *model.buffers())), torch.device("cpu"))


def _check_generator(rng):
    if not isinstance(rng, np.random.Generator):
        raise TypeError(
            f"rng must be a numpy.random.Generator (e.g. np.random.default_rng(0)), got {rng!r} ({type(rng).__name__})"
        )


def _check_tokens(tokens, min_length=1):
    """An (n, length) int array with n >= 1, length >= ``min_length``, every token in 0 .. VOCAB - 1; as int64."""
    _check_int_array(tokens, "tokens")
    if tokens.ndim != 2 or tokens.shape[0] < 1 or tokens.shape[1] < min_length:
        raise ValueError(
            f"tokens must have shape (n, length) with n >= 1 and length >= {min_length}, got shape {tokens.shape}"
        )
    if tokens.min() < 0 or tokens.max() >= VOCAB:
        raise ValueError(
            f"tokens must be in 0..{VOCAB - 1} (VOCAB={VOCAB}), got values from {tokens.min()} to {tokens.max()}"
        )
    return tokens.astype(np.int64, copy=False)


def _check_training_set(tokens, targets):
    tokens = _check_tokens(tokens)
    _check_int_array(targets, "targets")
    if targets.shape != tokens.shape:
        raise ValueError(f"targets must have the shape of tokens, {tokens.shape}, got {targets.shape}")
    allowed = (targets == IGNORE) | ((0 <= targets) & (targets < VOCAB))
    if not allowed.all():
        raise ValueError(f"targets must be in 0..{VOCAB - 1} or IGNORE={IGNORE}, got {targets[~allowed].flat[0]}")
    return tokens, targets.astype(np.int64, copy=False)


def _check_int_array(array, name):
    if not isinstance(array, np.ndarray) or array.dtype.kind not in "iu":
        kind = f"an array of {array.dtype}" if isinstance(array, np.ndarray) else repr(type(array).__name__)
        raise TypeError(f"{name} must be a NumPy array of ints, shape (n, length), got {kind}")
