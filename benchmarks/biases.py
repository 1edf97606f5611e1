"""Attention biases: posenc.biases (NumPy) against transformers' own functions (torch), bench.py's biases section.

    python benchmarks/biases.py            # 16 heads, 1024 x 1024 (ALiBi), 12 heads (T5)
    python benchmarks/biases.py --quick    # 12 heads, 128 x 128: checks that everything runs

Rows, each the median time of theirs and of ours and the ratio (posenc / transformers):

- ALiBi, causal, the whole ``(heads, L, L)`` float32 mask an attention adds: BLOOM's
  ``build_alibi_tensor`` (``(heads, 1, L)``, ``slope * j``) plus the ``-inf`` causal triangle,
  against ``alibi_bias(heads, L, L)``; and MPT's ``build_mpt_alibi_tensor`` (one row per head,
  ``(heads, 1, L)``) against ``alibi_bias(heads, 1, L, key_offset=L - 1)``. Error: the largest
  relative error of each against the exact values of its own form (BLOOM's ``slope * j``
  differs from ours by a constant per row, which softmax ignores), in units of 2**-24.
- T5: ``T5Attention._relative_position_bucket`` on the ``(L, L)`` relative positions against
  ``relative_position_bucket`` on the same integers, and ``T5Attention.compute_bias`` (buckets,
  then the embedding lookup; its result is a permuted view) against ``relative_position_bias``
  with the same table. The outputs are equal (checked, column ``equal``).

torch runs on one thread here, as NumPy does. Times are medians of round-robin repeats
(benchmarks/timing.py): compare the ratios within one run.
"""

import numpy as np

import timing
from timing import time_all

SIZES = {"full": {"heads": 16, "length": 1024, "t5_heads": 12}, "quick": {"heads": 12, "length": 128, "t5_heads": 4}}


def alibi_rows(heads, length, repeats):
    import torch
    from transformers.models.bloom.modeling_bloom import build_alibi_tensor
    from transformers.models.mpt.modeling_mpt import build_mpt_alibi_tensor

    from posenc.biases import alibi_bias, alibi_slopes

    mask = torch.ones(1, length, dtype=torch.long)
    future = torch.full((length, length), -torch.inf).triu(1)
    keys = np.arange(length)
    slopes = alibi_slopes(heads)[:, None, None]

    def bloom():
        return build_alibi_tensor(mask, heads, torch.float32).view(heads, 1, length) + future

    # what: (transformers, posenc, the exact values of transformers' form, of posenc's)
    cases = {
        f"ALiBi causal (heads, L, L): BLOOM + mask, {heads} x {length} x {length}":
            (bloom, lambda: alibi_bias(heads, length, length),
             slopes * keys + future.double().numpy(), alibi_bias(heads, length, length, dtype=np.float64)),
        f"ALiBi one row (heads, 1, L): MPT, {heads} x 1 x {length}":
            (lambda: build_mpt_alibi_tensor(heads, length), lambda: alibi_bias(heads, 1, length, key_offset=length - 1),
             slopes * (keys - length + 1), alibi_bias(heads, 1, length, key_offset=length - 1, dtype=np.float64)),
    }
    rows = []
    for what, (theirs, ours, their_form, our_form) in cases.items():
        times = time_all({"theirs": theirs, "ours": ours}, repeats)
        errors = [relative_error(theirs().double().numpy(), their_form), relative_error(ours().astype(np.float64), our_form)]
        rows.append({"what": what, "theirs_ms": 1e3 * times["theirs"], "posenc_ms": 1e3 * times["ours"],
                     "ratio": times["ours"] / times["theirs"], "theirs_error": errors[0], "posenc_error": errors[1]})
    return rows


def relative_error(bias, exact):
    """max |bias - exact| / |exact| over the finite, nonzero entries of ``exact``."""
    assert np.array_equal(np.isinf(bias), np.isinf(exact)) and not (bias[exact == 0]).any()
    finite = np.isfinite(exact) & (exact != 0)
    return float(np.max(np.abs(bias[finite] / exact[finite] - 1)))


def t5_rows(heads, length, repeats):
    import torch
    from transformers import T5Config
    from transformers.models.t5.modeling_t5 import T5Attention

    from posenc.biases import relative_position_bias, relative_position_bucket

    positions = np.arange(length)[None, :] - np.arange(length)[:, None]
    tensor = torch.from_numpy(positions)
    config = T5Config(d_model=8 * heads, d_kv=8, num_heads=heads, is_decoder=False)
    torch.manual_seed(0)
    attention = T5Attention(config, has_relative_attention_bias=True).eval()
    table = attention.relative_attention_bias.weight.detach().numpy()

    def their_bias():
        with torch.no_grad():
            return attention.compute_bias(length, length)[0]

    cases = {
        f"T5 buckets, {length} x {length} relative positions":
            (lambda: T5Attention._relative_position_bucket(tensor), lambda: relative_position_bucket(positions)),
        f"T5 compute_bias, {heads} heads, {length} x {length}":
            (their_bias, lambda: relative_position_bias(table, length, length)),
    }
    rows = []
    for what, (theirs, ours) in cases.items():
        times = time_all({"theirs": theirs, "ours": ours}, repeats)
        rows.append({"what": what, "theirs_ms": 1e3 * times["theirs"], "posenc_ms": 1e3 * times["ours"],
                     "ratio": times["ours"] / times["theirs"], "equal": bool(np.array_equal(theirs().numpy(), ours()))})
    return rows


def run(quick=False, repeats=15):
    """Print the biases rows; return them as a list of dicts for results.json."""
    import torch

    size = SIZES["quick" if quick else "full"]
    repeats = 3 if quick else repeats
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        rows = alibi_rows(size["heads"], size["length"], repeats) + t5_rows(size["t5_heads"], size["length"], repeats)
    finally:
        torch.set_num_threads(threads)
    print("\nAttention biases: posenc (NumPy) / transformers (torch, 1 thread), median ms; error = max relative"
          " error of each against its exact form, in float32 roundings (2**-24)")
    print(f"{'what':<58} {'theirs ms':>10} {'posenc ms':>10} {'ratio':>6} {'theirs error':>13} {'posenc error':>13}")
    for r in rows:
        errors = (f"{r['theirs_error'] / 2**-24:>13.2f} {r['posenc_error'] / 2**-24:>13.2f}" if "equal" not in r
                  else f"{'equal' if r['equal'] else 'DIFFERENT':>27}")
        print(f"{r['what']:<58} {r['theirs_ms']:>10.3f} {r['posenc_ms']:>10.3f} {r['ratio']:>6.2f} {errors}")
    return rows


if __name__ == "__main__":
    timing.main(run, __doc__)
