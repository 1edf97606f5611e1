"""Round-robin medians, shared by the benchmark scripts: a busy moment of the machine
slows every implementation alike, so ratios within one run are what to compare."""

import argparse
import gc
import importlib.util
import statistics
import time


def time_all(found, repeats):
    for build in found.values():
        build()  # warm-up: first-call set-up and caches are not what we compare
    samples = {name: [] for name in found}
    for _ in range(repeats):
        for name, build in found.items():
            gc.collect()
            start = time.perf_counter()
            build()
            samples[name].append(time.perf_counter() - start)
    return {name: statistics.median(times) for name, times in samples.items()}


def torch_section(frameworks, packages, what, run, quick, repeats):
    """``run(quick, repeats)`` when torch is among ``frameworks`` and ``packages`` are installed."""
    if "torch" not in frameworks:
        return None
    if any(importlib.util.find_spec(name) is None for name in packages):
        print(f"\n{what} rows skipped: they compare against {' and '.join(packages)} (pip install -e '.[conventions]')")
        return None
    return run(quick, repeats)


def main(run, doc):
    """The command line of a section run on its own: ``--quick`` and ``--repeats``."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--repeats", type=int, default=15)
    args = parser.parse_args()
    run(args.quick, args.repeats)
