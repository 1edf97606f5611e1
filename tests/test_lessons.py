"""posenc.lessons: the data, the scores and the training loop of notebooks 05, 07 and 08, on the model's device;
notebook 12's Markov task, its small decoder with six position methods and the train-short/test-long run."""

import copy
import math
from collections import Counter

import numpy as np
import pytest

# posenc.lessons is torch-based (it imports torch): every test here needs it, hence one skip for the file.
torch = pytest.importorskip("torch")
from torch import nn  # noqa: E402

from posenc import lessons  # noqa: E402
from messages import assert_raises_naming  # noqa: E402


@pytest.mark.parametrize("n, length", [(1, 2), (3, 5), (7, 12), (2, 48)])
def test_targets_are_the_previous_token(n, length):
    tokens, targets = lessons.copy_previous_task(np.random.default_rng(n), n, length)
    assert tokens.shape == targets.shape == (n, length)
    assert tokens.dtype == targets.dtype == np.int64
    assert tokens.min() >= 0 and tokens.max() < lessons.VOCAB
    for row, target_row in zip(tokens, targets):
        assert target_row[0] == lessons.IGNORE == -100
        for i in range(1, length):
            assert target_row[i] == row[i - 1]


def test_same_generator_same_data():
    first = lessons.copy_previous_task(np.random.default_rng(5), 4, 6)
    second = lessons.copy_previous_task(np.random.default_rng(5), 4, 6)
    for a, b in zip(first, second):
        np.testing.assert_array_equal(a, b)


def test_every_token_occurs():
    tokens, _ = lessons.copy_previous_task(np.random.default_rng(0), 200, 12)
    assert set(np.unique(tokens)) == set(range(lessons.VOCAB))


def brute_force_ceiling(tokens):
    """For each position i >= 1: the count of the commonest token among the others, / (length - 1)."""
    chances = []
    for row in tokens.tolist():
        for i in range(1, len(row)):
            others = row[:i] + row[i + 1:]
            chances.append(Counter(others).most_common(1)[0][1] / len(others))
    return sum(chances) / len(chances)


def test_order_blind_ceiling_of_a_hand_example():
    # position 1: others (0, 1), best guess right 1 time in 2; position 2: others (0, 0), always right.
    assert lessons.order_blind_ceiling(np.array([[0, 0, 1]])) == pytest.approx(0.75, abs=1e-15)
    assert lessons.order_blind_ceiling(np.array([[3, 3, 3, 3]])) == 1.0
    assert lessons.order_blind_ceiling(np.array([[0, 1, 2, 3, 4]])) == pytest.approx(0.25, abs=1e-15)


@pytest.mark.parametrize("seed, n, length", [(0, 1, 2), (1, 3, 4), (2, 5, 7), (3, 2, 12), (4, 4, 20)])
def test_order_blind_ceiling_equals_brute_force(seed, n, length):
    rng = np.random.default_rng(seed)
    tokens = rng.integers(0, lessons.VOCAB, size=(n, length))
    assert lessons.order_blind_ceiling(tokens) == pytest.approx(brute_force_ceiling(tokens), abs=1e-12)
    few = rng.integers(0, 3, size=(n, length))  # few distinct tokens: many ties and repeats
    assert lessons.order_blind_ceiling(few) == pytest.approx(brute_force_ceiling(few), abs=1e-12)


def test_accuracy_skips_ignored_positions():
    targets = np.array([[lessons.IGNORE, 1, 2, 3], [lessons.IGNORE, 4, 5, 6]])
    assert lessons.accuracy(np.array([[9, 1, 2, 3], [0, 4, 5, 6]]), targets) == 1.0
    assert lessons.accuracy(np.array([[5, 1, 0, 3], [lessons.IGNORE, 0, 0, 6]]), targets) == pytest.approx(3 / 6)
    assert lessons.accuracy([[7, 1]], [[lessons.IGNORE, 2]]) == 0.0
    assert isinstance(lessons.accuracy(targets, targets), float)


def test_first_step_above_counts_from_one():
    assert lessons.first_step_above([0.1, 0.95, 0.5, 0.99]) == 2
    assert lessons.first_step_above([0.95]) == 1
    assert lessons.first_step_above([0.2, 0.9, 0.85]) is None  # above, not equal
    assert lessons.first_step_above([]) is None
    assert lessons.first_step_above([0.2, 0.6, 0.7], level=0.5) == 2


class Shift(nn.Module):
    """Each position gets the vector of the position to its left: enough to copy."""

    def forward(self, x):
        return torch.roll(x, 1, dims=1)


def shift_model(seed=0):
    torch.manual_seed(seed)
    return nn.Sequential(nn.Embedding(lessons.VOCAB, 16), Shift(), nn.Linear(16, lessons.VOCAB))


def attention_model(seed=0):
    torch.manual_seed(seed)
    return nn.Sequential(nn.Embedding(lessons.VOCAB, 8), lessons.LearnedPositions(8, 6),
                         nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True), nn.Linear(8, lessons.VOCAB))


@pytest.fixture
def data():
    return lessons.copy_previous_task(np.random.default_rng(1), 40 * 16, 6)


def test_train_lowers_the_loss_and_learns_the_task(data):
    model = shift_model()
    tokens, targets = lessons.copy_previous_task(np.random.default_rng(2), 100, 6)
    before = lessons.accuracy(lessons.predict(model, tokens), targets)
    losses, accuracies = lessons.train(model, *data, steps=40, batch_size=16, lr=3e-2)
    assert len(losses) == len(accuracies) == 40
    assert losses[0] > 2.5 and losses[-1] < 0.5 * losses[0]
    assert accuracies[0] < 0.3 and min(accuracies[-5:]) > 0.9
    assert before < 0.5 and lessons.accuracy(lessons.predict(model, tokens), targets) > 0.9


def test_train_is_deterministic(data):
    first = lessons.train(attention_model(), *data, steps=8, batch_size=16)
    second = lessons.train(attention_model(), *data, steps=8, batch_size=16)
    assert first == second
    assert first != lessons.train(attention_model(seed=1), *data, steps=8, batch_size=16)


def test_train_is_the_notebooks_loop(data):
    """The loop notebooks 07 and 08 wrote out, step for step: the same losses to the last bit."""
    tokens, targets = data
    model = attention_model()
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    expected_losses, expected_accuracies = [], []
    for step in range(8):
        batch = slice(step * 16, (step + 1) * 16)
        batch_tokens, batch_targets = torch.from_numpy(tokens[batch]), torch.from_numpy(targets[batch])
        logits = model(batch_tokens)
        loss = nn.functional.cross_entropy(logits.transpose(1, 2), batch_targets, ignore_index=-100)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        expected_losses.append(loss.item())
        scored = batch_targets.numpy() != -100
        expected_accuracies.append((logits.argmax(-1).numpy() == batch_targets.numpy())[scored].mean())
    assert lessons.train(attention_model(), tokens, targets, steps=8, batch_size=16) == (
        expected_losses, expected_accuracies)


def test_train_stops_above_and_reports(data, capsys):
    losses, full = lessons.train(shift_model(), *data, steps=40, batch_size=16, lr=3e-2, report_every=10)
    printed = capsys.readouterr().out.splitlines()
    assert printed == [f"  step {s}: loss {losses[s - 1]:.3f}, accuracy {full[s - 1]:.2f}" for s in (10, 20, 30, 40)]
    first = lessons.first_step_above(full, 0.8)
    assert first is not None and first < 40
    losses, stopped = lessons.train(shift_model(), *data, steps=40, batch_size=16, lr=3e-2, stop_above=0.8)
    assert len(losses) == len(stopped) == first and stopped == full[:first]


def test_train_puts_the_model_in_training_mode_and_predict_in_eval(data):
    model = shift_model()
    predictions = lessons.predict(model, data[0][:3])
    assert not model.training and predictions.shape == (3, 6) and predictions.dtype == np.int64
    lessons.train(model, *data, steps=1)
    assert model.training


def test_learned_positions_adds_its_rows_and_has_none_past_max_len():
    module = lessons.LearnedPositions(4, max_len=5)
    x = torch.randn(2, 3, 4)
    torch.testing.assert_close(module(x), x + module.table.weight[:3])
    assert module(torch.zeros(1, 5, 4)).shape == (1, 5, 4)
    with pytest.raises(IndexError, match=r"positions 0\.\.4 only, got x of shape \(1, 6, 4\)"):
        module(torch.zeros(1, 6, 4))


def test_import_by_name_matches_the_lectures():
    assert (lessons.VOCAB, lessons.TRAIN_LENGTH, lessons.IGNORE, lessons.STEPS, lessons.BATCH) == (16, 12, -100, 300, 64)
    assert lessons.POSITION_METHODS == ("none", "learned", "sinusoidal", "rope", "alibi", "t5")
    assert set(lessons.__all__) <= set(dir(lessons))


RNG = np.random.default_rng(0)
TOKENS, TARGETS = lessons.copy_previous_task(np.random.default_rng(0), 4, 5)


@pytest.mark.parametrize("call, error, words", [
    (lambda: lessons.copy_previous_task(RNG, 0, 5), ValueError, ["n must be an int >= 1", "got 0"]),
    (lambda: lessons.copy_previous_task(RNG, 3, 1), ValueError,
     ["length must be an int >= 2 (position 0 has no previous token), got 1"]),
    (lambda: lessons.copy_previous_task(RNG, 2.5, 5), TypeError, ["n must be an int", "2.5", "float"]),
    (lambda: lessons.copy_previous_task(RNG, 3, True), TypeError, ["length must be an int", "True", "bool"]),
    (lambda: lessons.copy_previous_task(0, 3, 5), TypeError, ["rng must be a numpy.random.Generator", "default_rng", "int"]),
    (lambda: lessons.accuracy(np.zeros((2, 3)), np.zeros((3, 2))), ValueError,
     ["predictions and targets", "(2, 3)", "(3, 2)"]),
    (lambda: lessons.accuracy([[1, 2]], [[lessons.IGNORE, lessons.IGNORE]]), ValueError, ["targets", "scored", "IGNORE=-100"]),
    (lambda: lessons.order_blind_ceiling(np.zeros((3, 1), dtype=int)), ValueError, ["tokens", "length >= 2", "(3, 1)"]),
    (lambda: lessons.order_blind_ceiling(np.zeros(5, dtype=int)), ValueError, ["tokens", "(n, length)", "(5,)"]),
    # no sequence at all: refused here, not as NumPy's "zero-size array to reduction operation"
    (lambda: lessons.order_blind_ceiling(np.zeros((0, 5), dtype=int)), ValueError,
     ["tokens must have shape (n, length) with n >= 1 and length >= 2, got shape (0, 5)"]),
    (lambda: lessons.order_blind_ceiling(np.full((2, 3), 16)), ValueError, ["tokens", "0..15", "16"]),
    (lambda: lessons.order_blind_ceiling(np.full((2, 3), -1)), ValueError, ["tokens", "0..15", "-1"]),
    (lambda: lessons.order_blind_ceiling([[1, 2]]), TypeError, ["tokens", "NumPy array of ints", "'list'"]),
    (lambda: lessons.predict(nn.Identity(), np.zeros((2, 3))), TypeError, ["tokens", "float64"]),
    (lambda: lessons.train(nn.Linear(1, 1), TOKENS, TARGETS, steps=0), ValueError, ["steps must be an int >= 1", "got 0"]),
    (lambda: lessons.train(nn.Linear(1, 1), TOKENS, TARGETS, steps=3, batch_size=2), ValueError,
     ["steps * batch_size", "4", "steps=3", "batch_size=2"]),
    (lambda: lessons.train(nn.Linear(1, 1), TOKENS, TARGETS[:2], steps=1), ValueError, ["targets", "(4, 5)", "(2, 5)"]),
    (lambda: lessons.train(nn.Linear(1, 1), TOKENS, np.where(TARGETS == 8, 16, TARGETS), steps=1), ValueError,
     ["targets must be in 0..15 or IGNORE=-100, got 16"]),
    (lambda: lessons.train(nn.Linear(1, 1), TOKENS, TARGETS.astype(float), steps=1), TypeError, ["targets", "float64"]),
    (lambda: lessons.train(nn.Linear(1, 1), TOKENS, TARGETS, steps=1, batch_size=1, report_every=0), ValueError,
     ["report_every", "got 0"]),
    (lambda: lessons.LearnedPositions(8, 0), ValueError, ["max_len must be an int >= 1", "got 0"]),
])
def test_bad_arguments_are_named(call, error, words):
    assert_raises_naming(call, error, words)


# No GPU here: the "meta" device stands for one. A model whose weights live there must get
# its input there too, and the positions LearnedPositions makes must follow the input, not
# the default device (set to meta below, so a tensor made without a device lands on it).
class _Elsewhere(nn.Module):
    """First weight on the meta device; records where its input is, answers on the CPU."""

    def __init__(self, stop=False):
        super().__init__()
        self.marker = nn.Parameter(torch.zeros(1, device="meta"))
        self.bias = nn.Parameter(torch.zeros(lessons.VOCAB))
        self.seen, self.stop = [], stop

    def forward(self, tokens):
        self.seen.append(tokens.device.type)
        if self.stop:
            raise StopIteration  # the CPU logits below cannot meet meta targets in the loss
        return self.bias.expand(*tokens.shape, lessons.VOCAB)


def test_sequences_of_one_token_are_predicted_and_trained_on():
    # every token is its own sequence: only order_blind_ceiling needs two tokens
    one = np.array([[5], [7]])
    torch.manual_seed(0)
    model = nn.Embedding(lessons.VOCAB, lessons.VOCAB)  # logits (n, 1, VOCAB) for tokens (n, 1)
    lessons.train(model, one, one, steps=1, batch_size=2)
    assert lessons.predict(model, one).shape == (2, 1)
    with pytest.raises(ValueError, match="length >= 2"):
        lessons.order_blind_ceiling(one)


def test_predict_and_train_feed_the_model_on_its_device():
    model = _Elsewhere()
    np.testing.assert_array_equal(lessons.predict(model, TOKENS), np.zeros(TOKENS.shape, np.int64))
    assert model.seen == ["meta"]
    model = _Elsewhere(stop=True)
    with pytest.raises(StopIteration):
        lessons.train(model, TOKENS, TARGETS, steps=1, batch_size=4)
    assert model.seen == ["meta"]


def test_learned_positions_index_on_the_input_device():
    module = lessons.LearnedPositions(4, 5)
    seen = []
    module.table.register_forward_pre_hook(lambda _, args: seen.append(args[0].device.type))
    x = torch.randn(2, 3, 4)
    with torch.device("meta"):
        out = module(x)
    assert seen == ["cpu"]
    torch.testing.assert_close(out, x + module.table.weight[:3])


# Notebook 12: the second-order Markov task, the decoder and the train-short/test-long run.


def test_markov_targets_are_the_next_tokens_and_follow_the_rule():
    tokens, targets = lessons.markov_task(np.random.default_rng(0), 2000, 50)
    assert tokens.shape == targets.shape == (2000, 50) and tokens.dtype == targets.dtype == np.int64
    assert (targets[:, 0] == lessons.IGNORE).all()
    np.testing.assert_array_equal(targets[:, 1:-1], tokens[:, 2:])
    # A token follows the rule with probability KEEP, and matches it by chance otherwise: 0.859...
    follows = targets[:, 1:] == lessons.MARKOV_RULE[tokens[:, :-1], tokens[:, 1:]]
    expected = lessons.MARKOV_KEEP + (1 - lessons.MARKOV_KEEP) / lessons.VOCAB
    assert abs(follows.mean() - expected) < 0.005  # 98000 draws: 4.5 standard deviations
    # The first two tokens follow nothing: uniform (every token about 1/16 of the time).
    assert np.abs(np.bincount(tokens[:, :2].ravel(), minlength=16) / 4000 - 1 / 16).max() < 0.02
    assert not lessons.MARKOV_RULE.flags.writeable


def test_markov_same_generator_same_data():
    first = lessons.markov_task(np.random.default_rng(3), 5, 9)
    second = lessons.markov_task(np.random.default_rng(3), 5, 9)
    for a, b in zip(first, second):
        np.testing.assert_array_equal(a, b)


def causal_mask(n):
    return np.where(np.arange(n)[None, :] > np.arange(n)[:, None], -np.inf, 0.0)


def test_attention_bias_of_each_method():
    n = 40
    for method in ("none", "learned", "sinusoidal", "rope"):
        bias = lessons.TinyDecoder(method, heads=4).attention_bias(n)
        assert bias.shape == (4, n, n)
        np.testing.assert_array_equal(bias.numpy(), np.broadcast_to(causal_mask(n), (4, n, n)))
    # ALiBi, 4 heads: slopes 2^-2, 2^-4, 2^-6, 2^-8 times the distance back.
    slopes = 2.0 ** -np.array([2, 4, 6, 8])
    distance = np.arange(n)[:, None] - np.arange(n)[None, :]
    expected = -slopes[:, None, None] * distance + causal_mask(n)
    np.testing.assert_array_equal(lessons.TinyDecoder("alibi", heads=4).attention_bias(n).numpy(), expected.astype(np.float32))


def test_t5_bias_is_t5s_causal_buckets_in_one_learned_table():
    pytest.importorskip("transformers")
    from transformers.models.t5.modeling_t5 import T5Attention

    model = lessons.TinyDecoder("t5", heads=4, num_buckets=16, max_distance=32)
    assert model.t5_table.shape == (16, 4) and not model.t5_table.any()  # starts at 0: no position preference
    with torch.no_grad():
        model.t5_table.copy_(torch.randn(16, 4))
    n = 100
    offsets = torch.arange(n)[None, :] - torch.arange(n)[:, None]
    buckets = T5Attention._relative_position_bucket(offsets, bidirectional=False, num_buckets=16, max_distance=32)
    expected = model.t5_table.detach()[buckets].permute(2, 0, 1) + torch.from_numpy(causal_mask(n)).float()
    assert torch.equal(model.attention_bias(n).detach(), expected)
    assert [name for name, _ in model.named_parameters() if "t5" in name] == ["t5_table"]  # one table for every layer
    model.attention_bias(5).sum().backward()
    assert model.t5_table.grad[:5].all() and not model.t5_table.grad[5:].any()  # distances 0..4: buckets 0..4


def rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


def reference_layer(layer, x, bias, rope):
    """The decoder layer written out in float64: pre-norm, heads, scores / sqrt(head_dim) + bias, softmax."""
    layer = copy.deepcopy(layer).double()
    batch, n, d = x.shape
    q, k, v = layer.qkv(layer.norm1(x)).chunk(3, dim=-1)
    q, k, v = (t.view(batch, n, 4, d // 4).transpose(1, 2) for t in (q, k, v))
    if rope:
        w = 10000.0 ** (-torch.arange(0, d // 4, 2, dtype=torch.float64) / (d // 4))
        angles = torch.cat([torch.arange(n, dtype=torch.float64)[:, None] * w] * 2, dim=-1)
        q, k = (t * angles.cos() + rotate_half(t) * angles.sin() for t in (q, k))
    weights = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(d // 4) + bias, dim=-1)
    x = x + layer.out((weights @ v).transpose(1, 2).reshape(batch, n, d))
    return x + layer.feed_forward(layer.norm2(x))


@pytest.mark.parametrize("method", lessons.POSITION_METHODS)
def test_decoder_is_the_written_out_model(method):
    torch.manual_seed(0)
    model = lessons.TinyDecoder(method, heads=4, layers=2, max_len=20)
    if method == "t5":
        with torch.no_grad():
            model.t5_table.copy_(torch.randn(16, 4))
    tokens = torch.randint(0, lessons.VOCAB, (3, 20))
    x = model.embed(tokens).double()
    n = torch.arange(20, dtype=torch.float64)[:, None]
    if method == "learned":
        x = x + model.positions.table.weight[:20].double()
    if method == "sinusoidal":
        w = 10000.0 ** (-torch.arange(0, 64, 2, dtype=torch.float64) / 64)
        x = x + torch.stack([(n * w).sin(), (n * w).cos()], dim=-1).flatten(1)  # sin, cos interleaved
    bias = model.attention_bias(20).detach().double()
    for layer in model.layers:
        x = reference_layer(layer, x, bias, method == "rope")
    expected = copy.deepcopy(model.head).double()(copy.deepcopy(model.norm).double()(x))
    with torch.no_grad():
        torch.testing.assert_close(model(tokens).double(), expected, rtol=0, atol=5e-5)


@pytest.mark.parametrize("method", lessons.POSITION_METHODS)
def test_decoder_is_causal(method):
    torch.manual_seed(1)
    model = lessons.TinyDecoder(method, max_len=16).eval()
    tokens = torch.randint(0, lessons.VOCAB, (2, 16))
    changed = tokens.clone()
    changed[:, 10:] = (changed[:, 10:] + 1) % lessons.VOCAB
    with torch.no_grad():
        before, after = model(tokens), model(changed)
    torch.testing.assert_close(before[:, :10], after[:, :10], rtol=0, atol=0)
    assert (before[:, 10:] != after[:, 10:]).any()


def test_learned_decoder_reads_up_to_max_len_only():
    model = lessons.TinyDecoder("learned", max_len=24)
    assert model(torch.zeros(1, 24, dtype=torch.int64)).shape == (1, 24, lessons.VOCAB)
    with pytest.raises(IndexError, match="positions 0..23 only"):
        model(torch.zeros(1, 25, dtype=torch.int64))


SMALL_RUN = {"train_length": 8, "multiples": (1, 3), "steps": 4, "batch_size": 8, "lr": 0.01, "test_size": 5, "seed": 2}


def test_train_short_test_long_is_train_and_predict_per_method():
    torch.set_num_threads(2)
    results = lessons.train_short_test_long(("alibi", "learned"), **SMALL_RUN)
    assert torch.get_num_threads() == 2  # restored
    assert list(results) == ["alibi", "learned"]
    training_set = lessons.markov_task(np.random.default_rng(2), 32, 8)
    for method, scores in results.items():
        torch.manual_seed(2)
        model = lessons.TinyDecoder(method, max_len=24)
        lessons.train(model, *training_set, steps=4, batch_size=8, lr=0.01)
        expected = [lessons.accuracy(lessons.predict(model, tokens), targets)
                    for tokens, targets in (lessons.markov_task(np.random.default_rng([2, m]), 5, 8 * m) for m in (1, 3))]
        assert scores == expected
    assert results == lessons.train_short_test_long(("alibi", "learned"), **SMALL_RUN)


@pytest.mark.parametrize("call, error, words", [
    (lambda: lessons.markov_task(RNG, 0, 5), ValueError, ["n must be an int >= 1", "got 0"]),
    (lambda: lessons.markov_task(RNG, 3, 1), ValueError,
     ["length must be an int >= 2 (the first scored target follows two tokens), got 1"]),
    (lambda: lessons.markov_task(7, 3, 5), TypeError, ["rng must be a numpy.random.Generator", "int"]),
    (lambda: lessons.TinyDecoder("xpos"), ValueError, ["method must be one of", "'alibi'", "'xpos'"]),
    (lambda: lessons.TinyDecoder("rope", d_model=36), ValueError, ["d_model", "multiple of 2 * heads = 16", "36"]),
    (lambda: lessons.TinyDecoder("none", heads=0), ValueError, ["heads must be an int >= 1", "got 0"]),
    (lambda: lessons.TinyDecoder("none", layers=0), ValueError, ["layers must be an int >= 1", "got 0"]),
    (lambda: lessons.TinyDecoder("t5", num_buckets=1), ValueError, ["num_buckets", "got 1"]),
    (lambda: lessons.TinyDecoder("t5", max_distance=4), ValueError, ["max_distance", "got 4"]),
    (lambda: lessons.train_short_test_long(["sinusoid"]), ValueError, ["methods[...] must be one of", "'sinusoid'"]),
    (lambda: lessons.train_short_test_long(multiples=()), ValueError,
     ["multiples must name at least one multiple of train_length, got none"]),
    (lambda: lessons.train_short_test_long(multiples=(1, 0)), ValueError, ["multiples[...] must be an int >= 1", "got 0"]),
    (lambda: lessons.train_short_test_long(train_length=1), ValueError, ["train_length must be an int >= 2", "got 1"]),
])
def test_bad_arguments_of_notebook_12_are_named(call, error, words):
    assert_raises_naming(call, error, words)
