"""Lesson scaffolding, apart from the library: the copy task of notebooks 05, 07 and 08.

The task: at every position, output the previous token.

Each sequence holds random tokens out of ``VOCAB``; the target at position ``i`` is the
token at ``i - 1``. Position 0 has no previous token, so its target is ``IGNORE``, which
the loss and :func:`accuracy` skip. A model that cannot see order does no better than
:func:`order_blind_ceiling`.

PyTorch-based and imported on its own, like ``posenc.torch``::

    from posenc import lessons

    tokens, targets = lessons.copy_previous_task(np.random.default_rng(0), 1000, 12)

Tensors made here go to the device of the model (its first parameter) or of the input, so a
lesson run on a GPU stays there.

``import posenc`` does not load this module (nor PyTorch).
"""

from collections.abc import Iterable

import numpy as np
import numpy.typing as npt
import torch
from torch import nn

from .engine.checks import check_int_at_least

__all__ = [
    "BATCH",
    "IGNORE",
    "STEPS",
    "TRAIN_LENGTH",
    "VOCAB",
    "LearnedPositions",
    "accuracy",
    "copy_previous_task",
    "first_step_above",
    "order_blind_ceiling",
    "predict",
    "train",
]

#: Tokens are ints in ``0 .. VOCAB - 1``.
VOCAB = 16
#: The sequence length of the lectures' training sets.
TRAIN_LENGTH = 12
#: The target of an unscored position (PyTorch's default ``ignore_index``).
IGNORE = -100
#: The lectures' training run: ``STEPS`` batches of ``BATCH`` sequences.
STEPS, BATCH = 300, 64


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
