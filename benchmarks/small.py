"""Small-work rows of `make bench`: where the fixed cost of a call, not the arithmetic, decides.

    python benchmarks/small.py            # this section alone
    python benchmarks/small.py --quick    # fewer repeats, no torch.compile rows

- tables: a 10 x 6 and a 50 x 512 float32 table, ``posenc.positional_encoding`` and
  ``posenc.torch.positional_encoding`` against the lecture's float32 code in the same
  framework (seed 000 in NumPy, seed 002 in torch, benchmarks/routes.py; target <= 1.5x).
- decode step: ``posenc.torch.RotaryEmbedding(128)`` against transformers'
  ``LlamaRotaryEmbedding`` (head_dim 128) for 1 and 16 new positions near 4000, eager and
  each under ``torch.compile(fullgraph=True)`` (target <= 1.0x, issue 27). Skipped without transformers.

torch runs on one thread here: ops this small gain nothing from more, and on a busy machine
the hand-off to a second thread that waits for a core made a 50 x 512 table 200 times slower.
One sample is a loop of calls lasting about a millisecond, the median over round-robin
repeats (benchmarks/timing.py): compare the ratios within one run.
"""

import importlib.util
import timeit

import routes
import timing
from timing import time_all

TABLES = ((10, 6), (50, 512))
DECODE = (1, 16)
HEAD_DIM = 128
BASE = 10000.0


def looped(found):
    """``found`` with each call repeated so one sample takes about a millisecond; the repeat counts."""
    counts, loops = {}, {}
    for name, call in found.items():
        call()
        once = min(timeit.repeat(call, number=1, repeat=5))
        counts[name] = max(1, int(1e-3 / max(once, 1e-7)))
        loops[name] = lambda call=call, n=counts[name]: [call() for _ in range(n)]
    return loops, counts


def time_per_call(found, repeats):
    loops, counts = looped(found)
    medians = time_all(loops, repeats)
    return {name: medians[name] / counts[name] for name in found}


def table_rows(repeats):
    import numpy as np
    import torch

    import posenc
    import posenc.torch as pt

    lecture = {"numpy": ("seed 000 float32 divide", routes.numpy_routes()["seed 000 float32 divide"]),
               "torch": ("seed 002 float32 divide", routes.torch_routes()["seed 002 float32 divide"])}
    ours = {"numpy": lambda length, d: posenc.positional_encoding(length, d, dtype=np.float32),
            "torch": lambda length, d: pt.positional_encoding(length, d, dtype=torch.float32)}
    rows = []
    for length, d_model in TABLES:
        found = {}
        for framework in ("numpy", "torch"):
            found[f"{framework} lecture"] = lambda f=lecture[framework][1]: f(length, d_model)
            found[f"{framework} posenc"] = lambda f=ours[framework]: f(length, d_model)
        times = time_per_call(found, repeats)
        for framework in ("numpy", "torch"):
            mine, theirs = times[f"{framework} posenc"], times[f"{framework} lecture"]
            rows.append({"what": f"{framework} table {length} x {d_model} vs {lecture[framework][0]}",
                         "theirs_us": 1e6 * theirs, "posenc_us": 1e6 * mine, "ratio": mine / theirs, "target": 1.5})
    return rows


def decode_rows(quick, repeats):
    import torch

    import posenc.torch as pt
    from rotary import llama_rotary

    modes = ("eager",) if quick else ("eager", "compiled")
    rows = []
    for count in DECODE:
        position_ids = 4000 + torch.arange(count)[None]
        x = torch.zeros(1, count, HEAD_DIM)
        found = {}
        for mode in modes:
            # A module per shape, so the compiled ones see one static shape each.
            theirs, ours = llama_rotary(HEAD_DIM), pt.RotaryEmbedding(HEAD_DIM, BASE)
            if mode == "compiled":
                theirs, ours = (torch.compile(m, fullgraph=True, dynamic=False) for m in (theirs, ours))
            found[f"{mode} transformers"] = lambda m=theirs: m(x, position_ids)
            found[f"{mode} posenc"] = lambda m=ours: m(x, position_ids)
        with torch.inference_mode():
            times = time_per_call(found, repeats)
        for mode in modes:
            mine, theirs = times[f"{mode} posenc"], times[f"{mode} transformers"]
            rows.append({"what": f"RotaryEmbedding {mode}, {count} position{'s' * (count > 1)}, d={HEAD_DIM}",
                         "theirs_us": 1e6 * theirs, "posenc_us": 1e6 * mine, "ratio": mine / theirs, "target": 1.0})
    return rows


def run(quick=False, repeats=15):
    """Print the small-work table; return its rows for results.json."""
    import torch

    repeats = 5 if quick else repeats
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        rows = table_rows(repeats)
        if importlib.util.find_spec("transformers") is not None:
            rows += decode_rows(quick, repeats)
        else:
            print("\ndecode-step rows skipped: they compare against transformers (pip install -e '.[conventions]')")
    finally:
        torch.set_num_threads(threads)
    print("\nSmall work (posenc / the other, median us per call; targets: tables <= 1.5x the lecture, decode <= 1.0x transformers)")
    print(f"{'what':<52} {'other us':>9} {'posenc us':>10} {'ratio':>6} {'target':>7}")
    for row in rows:
        print(f"{row['what']:<52} {row['theirs_us']:>9.1f} {row['posenc_us']:>10.1f} {row['ratio']:>6.2f} {row['target']:>7.1f}")
    return rows


if __name__ == "__main__":
    timing.main(run, __doc__)
