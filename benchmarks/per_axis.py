"""RoPE with a width per axis: posenc against diffusers' ``FluxPosEmbed`` (bench.py's per-axis section).

    python benchmarks/per_axis.py            # Flux: 512 text + 64 x 64 image ids, axes_dim (16, 56, 56)
    python benchmarks/per_axis.py --quick    # 8 text + 8 x 8 image ids: checks that everything runs

One row per implementation of the same ``(cos, sin)``, ``(tokens, 128)`` float32, at Flux's ids
(``flux_position_ids``, as the pipeline's ``text_ids`` and ``_prepare_latent_image_ids`` joined):
diffusers' ``FluxPosEmbed(theta=10000, axes_dim=(16, 56, 56))`` (``get_1d_rotary_pos_embed`` per
axis, float64 on the CPU, cos and sin rounded to float32), ``posenc.per_axis_cos_sin`` (NumPy) and
``posenc.torch.per_axis_cos_sin`` where that front has it. Columns: median ms, the ratio to
diffusers, and the largest error of cos and sin against a float64 reference (NumPy's cos and sin of
``id * theta ** (-2i / axes_dim)`` in float64, ~1e-16 from exact). torch runs on one thread here,
as NumPy does. Times are medians of round-robin repeats (benchmarks/timing.py): compare the ratios
within one run.
"""

import numpy as np

import timing
from timing import time_all

SIZES = {"full": (512, 64, 64), "quick": (8, 8, 8)}
AXES_DIM = (16, 56, 56)
THETA = 10000.0


def reference(ids):
    """float64 ``(cos, sin)`` of Flux's per-axis RoPE at ``ids`` ``(tokens, axes)``, interleaved (each value twice)."""
    angles = np.concatenate([ids[:, [a]] * THETA ** (-np.arange(0, d, 2) / d) for a, d in enumerate(AXES_DIM)], axis=1)
    return np.repeat(np.cos(angles), 2, axis=1), np.repeat(np.sin(angles), 2, axis=1)


def implementations(ids):
    """``{name: zero-argument call returning (cos, sin)}``, diffusers first (the yardstick of the ratios)."""
    import torch
    from diffusers.models.transformers.transformer_flux import FluxPosEmbed

    import posenc
    import posenc.torch as pt

    tensor = torch.from_numpy(ids)
    flux = FluxPosEmbed(theta=int(THETA), axes_dim=list(AXES_DIM))
    found = {"diffusers FluxPosEmbed": lambda: flux(tensor.float()),
             "posenc.per_axis_cos_sin (NumPy)": lambda: posenc.rope.per_axis_cos_sin(ids, AXES_DIM, base=THETA)}
    if hasattr(pt, "per_axis_cos_sin"):
        found["posenc.torch.per_axis_cos_sin"] = lambda: pt.per_axis_cos_sin(tensor, AXES_DIM, base=THETA)
    return found


def run(quick=False, repeats=15):
    """Print the per-axis RoPE rows; return them as a list of dicts for results.json."""
    import torch

    from posenc.rope import flux_position_ids

    text, height, width = SIZES["quick" if quick else "full"]
    repeats = 3 if quick else repeats
    ids = flux_position_ids(text, height, width)
    exact = reference(ids.astype(np.float64))
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        found = implementations(ids)
        times = time_all(found, repeats)
        outputs = {name: call() for name, call in found.items()}
    finally:
        torch.set_num_threads(threads)
    yardstick = times["diffusers FluxPosEmbed"]
    rows = []
    for name, (cos, sin) in outputs.items():
        assert tuple(cos.shape) == exact[0].shape and str(cos.dtype).endswith("float32")
        errors = [float(np.abs(np.asarray(got, np.float64) - want).max()) for got, want in zip((cos, sin), exact)]
        rows.append({"what": name, "ms": 1e3 * times[name], "ratio": times[name] / yardstick,
                     "cos_error": errors[0], "sin_error": errors[1]})
    print(f"\nPer-axis RoPE cos/sin, Flux ids ({text} text + {height} x {width} image, axes_dim {AXES_DIM}, theta "
          f"{THETA:g}), float32, torch on 1 thread: median ms, ratio to diffusers, max error against float64")
    print(f"{'what':<34} {'ms':>9} {'ratio':>6} {'cos error':>10} {'sin error':>10}")
    for r in rows:
        print(f"{r['what']:<34} {r['ms']:>9.3f} {r['ratio']:>6.2f} {r['cos_error']:>10.2e} {r['sin_error']:>10.2e}")
    return rows


if __name__ == "__main__":
    timing.main(run, __doc__)
