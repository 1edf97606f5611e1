"""Round-robin medians, shared by the benchmark scripts: a busy moment of the machine
slows every implementation alike, so ratios within one run are what to compare."""

import gc
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
