"""2-D sin-cos tables: posenc.grid_encoding against the sources' own installed code (bench.py's grid section).

    python benchmarks/grid_tables.py            # 64 x 64 grid, d 768
    python benchmarks/grid_tables.py --quick    # 16 x 16, d 64: checks that everything runs

For each convention with an installed source (transformers' 5.x builder, which RT-DETR and
ViTMAE use; diffusers' get_2d_sincos_pos_embed; transformers' DETR sine embedding, called
past its lru_cache so every call builds), the median time of the source's call and of
posenc's (NumPy, and posenc.torch), their ratio (posenc / source), and each one's largest
error against the exact table (posenc in float64, itself ~1e-16 from exact). torch runs on
one thread here: for tables this small its thread pool only adds hand-offs (on a loaded
two-core machine a 16 x 16 table took 55 ms on two threads and 1 ms on one, measured), and
posenc's grid builder is single-threaded NumPy.
"""

import math

import numpy as np

import timing
from timing import time_all

SIZES = {"full": ((64, 64), 768), "quick": ((16, 16), 64)}


def sources(shape, d):
    """``{convention: (zero-argument call of the source returning a float32 (tokens, d) array, posenc options)}``."""
    import torch
    from diffusers.models.embeddings import get_2d_sincos_pos_embed
    from transformers.models.detr.modeling_detr import DetrSinePositionEmbedding
    from transformers.models.rt_detr.modeling_rt_detr import build_2d_sinusoidal_position_embedding

    h, w = shape
    detr = DetrSinePositionEmbedding.build_sine_position_embedding.__wrapped__  # no cache: build every call
    return {
        "rt-detr": (lambda: build_2d_sinusoidal_position_embedding(h, w, d), {}),
        "diffusers": (lambda: get_2d_sincos_pos_embed(d, shape, base_size=h).float(), {"base_size": h}),
        "detr": (lambda: detr(torch.Size((1, 3, h, w)), torch.device("cpu"), torch.float32, d // 2,
                              normalize=True, scale=2 * math.pi)[0].reshape(d, -1).T, {"normalize": True}),
    }


def run(quick=False, repeats=15):
    """Print the grid rows; return them as a list of dicts for results.json."""
    import torch

    import posenc
    import posenc.torch as pt

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        return _rows(quick, repeats, posenc, pt)
    finally:
        torch.set_num_threads(threads)


def _rows(quick, repeats, posenc, pt):
    shape, d = SIZES["quick" if quick else "full"]
    repeats = 3 if quick else repeats
    rows = []
    for name, (theirs, options) in sources(shape, d).items():
        times = time_all({
            "source": theirs,
            "posenc": lambda: posenc.grid_encoding(shape, d, convention=name, **options),
            "posenc.torch": lambda: pt.grid_encoding(shape, d, convention=name, **options),
        }, repeats)
        exact = posenc.grid_encoding(shape, d, convention=name, dtype=np.float64, **options)
        source_error = float(np.abs(theirs().double().numpy() - exact).max())
        posenc_error = float(np.abs(posenc.grid_encoding(shape, d, convention=name, **options) - exact).max())
        for who in ("posenc", "posenc.torch"):
            rows.append({"convention": name, "who": who, "source_ms": 1e3 * times["source"], "posenc_ms": 1e3 * times[who],
                         "ratio": times[who] / times["source"], "source_error": source_error, "posenc_error": posenc_error})
    print(f"\n2-D sin-cos tables, {shape[0]} x {shape[1]} grid, d {d}, float32 "
          "(median ms; ratio = posenc / source; error = max |table - exact|)")
    print(f"{'convention':<10} {'posenc front':<13} {'source ms':>10} {'posenc ms':>10} {'ratio':>6} "
          f"{'source error':>13} {'posenc error':>13}")
    for r in rows:
        print(f"{r['convention']:<10} {r['who']:<13} {r['source_ms']:>10.3f} {r['posenc_ms']:>10.3f} {r['ratio']:>6.2f} "
              f"{r['source_error']:>13.1e} {r['posenc_error']:>13.1e}")
    return rows


if __name__ == "__main__":
    timing.main(run, __doc__)
