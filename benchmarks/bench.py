"""Time, memory and accuracy of posenc against the routes people use, one table per framework.

    python benchmarks/bench.py                   # 32768 x 512 float32, NumPy, torch, TF, JAX
    python benchmarks/bench.py --quick           # tiny sizes: checks that everything runs
    python benchmarks/bench.py --length 1000000 --d-model 256 --frameworks numpy

With torch among the frameworks, a RoPE section follows (benchmarks/rotary.py), then small
work where fixed costs decide (benchmarks/small.py: tiny tables, a RoPE decode step eager and
compiled), then 2-D sin-cos tables against transformers' and diffusers' own code
(benchmarks/grid_tables.py), then attention biases (ALiBi, T5's buckets) against
transformers' own functions (benchmarks/biases.py), then per-axis RoPE cos/sin at Flux's ids
against diffusers' FluxPosEmbed (benchmarks/per_axis.py).

Times are medians over repeats taken round-robin (every implementation once per round), so
the noise of a shared machine hits them alike; compare ratios within one run. Memory: NumPy
by tracemalloc (NumPy reports its buffers to it), the peak over one call; torch and
TensorFlow by the growth of the peak resident set (VmHWM, reset before the call) over
one call in a fresh subprocess per implementation. Error: max |table - exact| over the last row (the largest
position), the exact row from mpmath. Results go to OUT/results.json and OUT/bench.png.
"""

import argparse
import gc
import json
import os
import subprocess
import sys
import tracemalloc
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")
sys.path.insert(0, str(Path(__file__).resolve().parent))

import mpmath  # noqa: E402
import numpy as np  # noqa: E402

import biases  # noqa: E402
import grid_tables  # noqa: E402
import per_axis  # noqa: E402
import rotary  # noqa: E402
import routes  # noqa: E402
import small  # noqa: E402
from timing import time_all, torch_section  # noqa: E402

FRAMEWORKS = ("numpy", "torch", "tensorflow", "jax")


def implementations(framework, length, d_model):
    """name -> zero-argument callable building the float32 table; posenc first, the fill last."""
    shape = (length, d_model)
    if framework == "numpy":
        import posenc

        buffer = np.empty(shape, np.float32)
        found = {"posenc": lambda: posenc.positional_encoding(length, d_model),
                 "posenc out=": lambda: posenc.positional_encoding(length, d_model, out=buffer)}
        found |= {name: (lambda f=f: f(length, d_model)) for name, f in routes.numpy_routes().items()}
        found["np.empty + fill"] = lambda: np.empty(shape, np.float32).fill(1.0)
    elif framework == "torch":
        import torch

        import posenc.torch as pt

        buffer = torch.empty(shape)
        found = {"posenc": lambda: pt.positional_encoding(length, d_model, dtype=torch.float32),
                 "posenc out=": lambda: pt.positional_encoding(length, d_model, dtype=torch.float32, out=buffer)}
        found |= {name: (lambda f=f: f(length, d_model)) for name, f in routes.torch_routes().items()}
        found["torch.empty + fill_"] = lambda: torch.empty(shape).fill_(1.0)
    elif framework == "tensorflow":
        import tensorflow as tf

        import posenc.tensorflow as ptf

        found = {"posenc": lambda: ptf.positional_encoding(length, d_model)}
        found |= {name: (lambda f=f: f(length, d_model)) for name, f in routes.tensorflow_routes().items()}
        found["tf.fill"] = lambda: tf.fill(shape, 1.0)
    else:
        import jax.numpy as jnp

        import posenc.jax as pj

        # JAX dispatches asynchronously: each call waits for its result.
        found = {"posenc": lambda: pj.positional_encoding(length, d_model).block_until_ready()}
        found |= {name: (lambda f=f: f(length, d_model).block_until_ready()) for name, f in routes.jax_routes().items()}
        found["jnp.full"] = lambda: jnp.full(shape, 1.0).block_until_ready()
    return found


# Arbitrary positions (issue 13): (shape of positions, their range, d_model).
ENCODE_CASES = {"full": [((64, 512), 32768, 512), ((1, 1_000_000), 1_000_000, 128)],
                "quick": [((4, 64), 32768, 64), ((1, 4096), 1_000_000, 32)]}


def encode_positions(shape, span):
    return np.random.default_rng(13).integers(0, span, shape).astype(np.float64)


def encode_implementations(framework, shape, span, d_model):
    """name -> zero-argument callable encoding float64 positions of ``shape`` to float32, the
    naive float32 route first (the yardstick of the ratios)."""
    positions = encode_positions(shape, span)
    if framework == "numpy":
        import posenc

        found = {name: (lambda f=f: f(positions, d_model)) for name, f in routes.numpy_encode_routes().items()}
        found["posenc.encode"] = lambda: posenc.encode(positions, d_model)
    elif framework == "torch":
        import torch

        import posenc.torch as pt

        tensor = torch.from_numpy(positions)
        found = {name: (lambda f=f: f(tensor, d_model)) for name, f in routes.torch_encode_routes().items()}
        found["posenc.torch.encode"] = lambda: pt.encode(tensor, d_model, dtype=torch.float32)
    elif framework == "jax":
        import jax
        import jax.numpy as jnp

        import posenc.jax as pj

        # float32 positions (x64 off); integers below 2**24, so exactly the float64 ones.
        array = jnp.asarray(positions, jnp.float32)
        found = {name: (lambda f=f: f(array, d_model).block_until_ready()) for name, f in routes.jax_encode_routes().items()}
        found["posenc.jax.encode"] = lambda: pj.encode(array, d_model).block_until_ready()
        compiled = jax.jit(pj.encode, static_argnums=1)
        found["posenc.jax.encode (jit)"] = lambda: compiled(array, d_model).block_until_ready()
    else:
        import tensorflow as tf

        import posenc.tensorflow as ptf

        tensor = tf.constant(positions)
        found = {}
        for name, f in routes.tensorflow_encode_routes().items():
            found[name] = lambda f=f: f(tensor, d_model)
            graph = tf.function(lambda p, f=f: f(p, d_model), autograph=False)
            found[name + " (tf.function)"] = lambda g=graph: g(tensor)
        found["posenc.tensorflow.encode"] = lambda: ptf.encode(tensor, d_model)
        graph = tf.function(lambda p: ptf.encode(p, d_model), autograph=False)
        found["posenc.tensorflow.encode (tf.function)"] = lambda: graph(tensor)
    return found


def bench_encode(framework, shape, span, d_model, repeats, memory):
    """Rows for ``encode``: time as a ratio to the naive float32 route (eager to eager, graph to
    graph), peak memory as a multiple of the output, max error over the row of the largest position."""
    found = encode_implementations(framework, shape, span, d_model)
    medians = time_all(found, repeats)
    positions = encode_positions(shape, span).reshape(-1)
    last = int(np.argmax(positions))
    reference = exact_row(positions[last], d_model)
    out_bytes = positions.size * d_model * 4
    rows = []
    for name, build in found.items():
        # Eager to eager, compiled to compiled (tf.function, jax.jit).
        compiled = next((s for s in (" (tf.function)", " (jit)") if name.endswith(s)), "")
        yardstick = "naive float32" + compiled
        table = as_numpy(build()).reshape(-1, d_model)
        error = float(np.abs(table[last].astype(np.float64) - reference).max())
        del table
        if not memory:
            peak = None
        elif framework == "numpy":
            peak = numpy_peak(build)
        else:
            peak = subprocess_peak(framework, name, f"encode:{shape[0]}x{shape[1]}:{span}", d_model)
        rows.append({"implementation": name, "median_ms": 1e3 * medians[name],
                     "x_naive_float32": medians[name] / medians[yardstick],
                     "peak_MiB": None if peak is None else peak / 2**20,
                     "peak_x_output": None if peak is None else peak / out_bytes, "max_error": error})
    return rows


def show_encode(framework, shape, span, d_model, rows):
    print(f"\n{framework}: encode positions {shape} in [0, {span}), d_model {d_model}, float32,"
          f" output {np.prod(shape) * d_model * 4 / 2**20:.0f} MiB")
    print(f"{'implementation':<40} {'median ms':>10} {'x naive f32':>11} {'peak MiB':>9} {'x out':>6} {'max error':>10}")
    for row in rows:
        peak = "-" if row["peak_MiB"] is None else f"{row['peak_MiB']:.0f}"
        ratio = "-" if row["peak_x_output"] is None else f"{row['peak_x_output']:.2f}"
        print(f"{row['implementation']:<40} {row['median_ms']:>10.2f} {row['x_naive_float32']:>11.2f} {peak:>9}"
              f" {ratio:>6} {row['max_error']:>10.2e}")


# RoPE cos/sin for a batch of position ids, head_dim 128: a decoding step (1 and 16 positions) and a prompt.
JAX_ROPE_POSITIONS = {"full": (1, 16, 4096), "quick": (1, 16)}


def xla_flops(jitted, *args):
    """The flops of XLA's cost analysis of ``jitted`` at ``args`` (None where this JAX gives none)."""
    analysis = jitted.lower(*args).compile().cost_analysis()
    analysis = analysis[0] if isinstance(analysis, list) else analysis
    return (analysis or {}).get("flops")


def jax_rope_rows(quick, repeats):
    """posenc.jax.rotary_cos_sin under jit against the lecture's float32 RoPE route in
    jax.numpy under jit (float32 inv_freq times the positions, then cos and sin), as ratios.

    The flops columns are XLA's cost analysis of each program: XLA's CPU client runs a program
    of fewer than 1000 flops on the calling thread and hands larger ones to its thread pool, a
    hand-off that costs 5 us on an idle machine and 100 us or more on a busy one. A few
    positions cost posenc that hand-off, not arithmetic."""
    import jax
    import jax.numpy as jnp

    import posenc
    import posenc.jax as pj

    inv_freq = jnp.asarray(posenc.rotary_frequencies(128)[0], jnp.float32)

    @jax.jit
    def lecture(position_ids):
        angles = position_ids.astype(jnp.float32)[..., None] * inv_freq
        angles = jnp.concatenate([angles, angles], -1)
        return jnp.cos(angles), jnp.sin(angles)

    ours = jax.jit(lambda p: pj.rotary_cos_sin(p, 128))
    rows = []
    print("\njax: RoPE cos/sin, head_dim 128, float32, both under jax.jit (target: one position <= 1.5x the lecture)")
    print(f"{'positions':>9} {'lecture ms':>11} {'posenc ms':>10} {'x lecture':>10} {'lecture error':>14} {'posenc error':>13}"
          f" {'lecture flops':>14} {'posenc flops':>13}")
    for count in JAX_ROPE_POSITIONS["quick" if quick else "full"]:
        position_ids = jnp.arange(1_000_000 - count, 1_000_000)[None]
        found = {"lecture": lambda: lecture(position_ids)[0].block_until_ready(),
                 "posenc": lambda: ours(position_ids)[0].block_until_ready()}
        medians = time_all(found, repeats)
        exact = posenc.rotary_cos_sin(np.asarray(position_ids), 128, dtype=np.float64)[0]
        errors = [float(np.abs(np.asarray(f(position_ids)[0], np.float64) - exact).max()) for f in (lecture, ours)]
        flops = [xla_flops(f, position_ids) for f in (lecture, ours)]
        rows.append({"positions": count, "lecture_ms": 1e3 * medians["lecture"], "posenc_ms": 1e3 * medians["posenc"],
                     "x_lecture": medians["posenc"] / medians["lecture"], "lecture_error": errors[0],
                     "posenc_error": errors[1], "lecture_flops": flops[0], "posenc_flops": flops[1]})
        print(f"{count:>9} {rows[-1]['lecture_ms']:>11.3f} {rows[-1]['posenc_ms']:>10.3f} {rows[-1]['x_lecture']:>10.2f}"
              f" {errors[0]:>14.2e} {errors[1]:>13.2e} {flops[0] or 0:>14.0f} {flops[1] or 0:>13.0f}")
    return rows


def exact_row(position, d_model):
    with mpmath.workdps(30):
        theta = [mpmath.mpf(position) / mpmath.power(10000, mpmath.mpf(2 * (k // 2)) / d_model)
                 for k in range(d_model)]
        return np.array([float(mpmath.sin(t) if k % 2 == 0 else mpmath.cos(t)) for k, t in enumerate(theta)])


def as_numpy(table):
    return table.numpy() if hasattr(table, "numpy") else np.asarray(table)


def numpy_peak(build):
    gc.collect()
    tracemalloc.start()
    tracemalloc.reset_peak()
    build()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak


def subprocess_peak(framework, name, length, d_model):
    command = [sys.executable, __file__, "--measure-rss", framework, name, str(length), str(d_model)]
    result = subprocess.run(command, capture_output=True, text=True, check=True)
    return int(result.stdout.split()[-1])


def _status_kib(field):
    line = next(row for row in Path("/proc/self/status").read_text().splitlines() if row.startswith(field + ":"))
    return int(line.split()[1])


def measure_rss(framework, name, size, d_model):
    # In a fresh process: warm the implementation up on a tiny table, reset the kernel's
    # peak-RSS mark (VmHWM; "5" > clear_refs), then one full call: peak minus RSS before.
    # size: a table's length, or "encode:AxB:SPAN" for positions of shape (A, B).
    if size.startswith("encode:"):
        _, dims, span = size.split(":")
        shape = tuple(int(n) for n in dims.split("x"))
        encode_implementations(framework, (1, 8), int(span), d_model)[name]()
        build = encode_implementations(framework, shape, int(span), d_model)[name]
    else:
        implementations(framework, 8, d_model)[name]()
        build = implementations(framework, int(size), d_model)[name]
    gc.collect()
    Path("/proc/self/clear_refs").write_text("5")
    before = _status_kib("VmRSS")
    build()
    print((_status_kib("VmHWM") - before) * 1024)


def bench(framework, length, d_model, repeats, memory):
    found = implementations(framework, length, d_model)
    medians = time_all(found, repeats)
    reference = exact_row(length - 1, d_model)
    out_bytes = length * d_model * 4
    rows = []
    for name, build in found.items():
        fill = name == list(found)[-1]
        error = None if fill else float(np.abs(as_numpy(build())[-1].astype(np.float64) - reference).max())
        if not memory or name.endswith("out="):
            peak = None
        elif framework == "numpy":
            peak = numpy_peak(build)
        else:
            peak = subprocess_peak(framework, name, length, d_model)
        rows.append({"implementation": name, "median_ms": 1e3 * medians[name],
                     "x_posenc": medians[name] / medians["posenc"], "GB_per_s": out_bytes / medians[name] / 1e9,
                     "peak_MiB": None if peak is None else peak / 2**20,
                     "peak_x_output": None if peak is None else peak / out_bytes, "max_error": error})
    return rows


def show(framework, length, d_model, rows):
    print(f"\n{framework}: {length} x {d_model} float32, output {length * d_model * 4 / 2**20:.0f} MiB")
    print(f"{'implementation':<26} {'median ms':>10} {'x posenc':>9} {'GB/s':>6} {'peak MiB':>9} {'x out':>6}"
          f" {'max error @ ' + str(length - 1):>18}")
    for row in rows:
        peak = "-" if row["peak_MiB"] is None else f"{row['peak_MiB']:.0f}"
        ratio = "-" if row["peak_x_output"] is None else f"{row['peak_x_output']:.2f}"
        error = "-" if row["max_error"] is None else f"{row['max_error']:.2e}"
        print(f"{row['implementation']:<26} {row['median_ms']:>10.2f} {row['x_posenc']:>9.2f} {row['GB_per_s']:>6.2f}"
              f" {peak:>9} {ratio:>6} {error:>18}")


def plot(results, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import NullFormatter

    fig, axes = plt.subplots(1, len(results), figsize=(6 * len(results), 3.5), squeeze=False)
    for ax, (framework, rows) in zip(axes[0], results.items()):
        names = [r["implementation"] for r in rows]
        times = [r["median_ms"] for r in rows]
        ax.barh(names, times, color=["C0" if n.startswith("posenc") else "C7" for n in names])
        for y, row in enumerate(rows):
            label = f"{row['median_ms']:.1f} ms, {row['x_posenc']:.2f} x posenc"
            ax.text(row["median_ms"] * 1.08, y, label, va="center", fontsize=8)
        ax.invert_yaxis()
        ax.set_xscale("log")
        ax.set_xlim(min(times) / 2, max(times) * 6)  # room for the labels
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.set_xlabel("median time (ms), log scale")
        ax.set_title(framework)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--length", type=int, default=32768)
    parser.add_argument("--d-model", type=int, default=512)
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--frameworks", default=",".join(FRAMEWORKS))
    parser.add_argument("--no-encode", action="store_true", help="skip the arbitrary-positions (encode) rows")
    parser.add_argument("--no-memory", action="store_true", help="skip the peak-memory measurements")
    parser.add_argument("--quick", action="store_true", help="256 x 64, 3 repeats, no subprocess memory runs")
    parser.add_argument("--out", default="build/bench")
    parser.add_argument("--measure-rss", nargs=4, metavar=("FRAMEWORK", "NAME", "LENGTH", "D_MODEL"),
                        help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure_rss:
        framework, name, length, d_model = args.measure_rss
        measure_rss(framework, name, length, int(d_model))
        return
    if args.quick:
        args.length, args.d_model, args.repeats = 256, 64, 3
    results = {}
    for framework in args.frameworks.split(","):
        memory = not args.no_memory and not (args.quick and framework != "numpy")
        results[framework] = bench(framework, args.length, args.d_model, args.repeats, memory)
        show(framework, args.length, args.d_model, results[framework])
    encoded = {}
    for framework in [] if args.no_encode else args.frameworks.split(","):
        memory = not args.no_memory and not (args.quick and framework != "numpy")
        for shape, span, d_model in ENCODE_CASES["quick" if args.quick else "full"]:
            rows = bench_encode(framework, shape, span, d_model, max(3, args.repeats // 3), memory)
            encoded[f"{framework} {shape} d_model {d_model}"] = rows
            show_encode(framework, shape, span, d_model, rows)
    rope = torch_section(args.frameworks.split(","), ("transformers",), "RoPE", rotary.run, args.quick, args.repeats)
    smalls = torch_section(args.frameworks.split(","), (), "Small work", small.run, args.quick, args.repeats)
    grids = torch_section(args.frameworks.split(","), ("transformers", "diffusers"), "2-D grid", grid_tables.run, args.quick, args.repeats)
    bias_rows = torch_section(args.frameworks.split(","), ("transformers",), "Attention bias", biases.run, args.quick, args.repeats)
    per_axis_rows = torch_section(args.frameworks.split(","), ("diffusers",), "Per-axis RoPE", per_axis.run, args.quick, args.repeats)
    jax_rope = jax_rope_rows(args.quick, args.repeats) if "jax" in args.frameworks.split(",") else None
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    settings = {"length": args.length, "d_model": args.d_model, "repeats": args.repeats, "cpus": os.cpu_count()}
    summary = {"settings": settings, "results": results, "encode": encoded, "rope": rope, "small": smalls, "grid": grids,
               "biases": bias_rows, "per_axis_rope": per_axis_rows, "jax_rope": jax_rope}
    (out / "results.json").write_text(json.dumps(summary, indent=1))
    plot(results, out / "bench.png")
    print(f"\nsaved {out / 'results.json'} and {out / 'bench.png'}")


if __name__ == "__main__":
    main()
