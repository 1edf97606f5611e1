"""`make mutants`: mutmut over posenc on the unit tests, every mutant or a seeded sample.

    python scripts/mutants.py                           every mutant (about three days on two cores)
    python scripts/mutants.py --changed                 quick mode before pushing: 30 mutants from
                                                        the modules changed since main (about 6 minutes
                                                        on two cores, after the first run's stats)
    python scripts/mutants.py --sample                  150 mutants drawn with seed 21 (about 30 minutes,
                                                        after the first run's stats)
    python scripts/mutants.py --sample 400 --seed 7     another size, another draw
    python scripts/mutants.py --sample 100 --seed 3 4   two draws in one run (the tests' coverage is
                                                        collected once), each scored on its own
    python scripts/mutants.py --sample --modules sinusoidal.tables rope.rotary   draw from these modules only

What is mutated and which tests run is [tool.mutmut] in pyproject.toml. mutmut copies the
project into mutants/ and keeps its results there: `mutmut show NAME` prints a mutant's diff,
`mutmut browse` lists them all. A sample is stratified: every module drawn from gives at
least two mutants and the rest is shared in proportion to each module's mutants, drawn
from the sorted names, so the same seed picks the same mutants while the source stays the
same. The summary gives the score per module: killed (a test failed, or the mutant timed
out) over those sampled.
"""

import argparse
import json
import os
import random
import subprocess
import sys
from collections import Counter
from pathlib import Path, PurePosixPath

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_SAMPLE = 150
QUICK_SAMPLE = 30
FLOOR = 2  # mutants per module at least, so that no module goes unsampled
DEFAULT_SEED = 21


def generate_mutants(max_children):
    """Write mutants/ (the first step of `mutmut run`) and return every mutant's name."""
    from mutmut.__main__ import copy_also_copy_files, copy_src_dir, create_mutants
    from mutmut.mutation.trampoline import set_mutant_under_test

    set_mutant_under_test("mutant_generation")
    (ROOT / "mutants").mkdir(exist_ok=True)
    copy_src_dir()
    copy_also_copy_files()
    create_mutants(max_children)
    os.environ.pop("MUTANT_UNDER_TEST", None)
    return sorted(results())


def results():
    """``{mutant name: mutmut's exit code or None}`` from the .meta files mutmut keeps in mutants/."""
    found = {}
    for meta in sorted((ROOT / "mutants").rglob("*.py.meta")):
        found.update(json.loads(meta.read_text())["exit_code_by_key"])
    return found


def module_of(name):
    # posenc.sinusoidal.tables.x_angles__mutmut_3 -> sinusoidal.tables; posenc.x_f__mutmut_1 -> __init__
    return ".".join(name.split(".")[1:-1]) or "__init__"


def module_of_path(path):
    # posenc/rope/__init__.py -> rope; posenc/front.py -> front
    parts = list(PurePosixPath(path).with_suffix("").parts[1:])
    return ".".join(parts[:-1] if parts[-1] == "__init__" and len(parts) > 1 else parts)


def changed_modules(base="main"):
    """The posenc modules that differ from ``base``: its commits, staged and unstaged edits."""
    out = subprocess.run(["git", "diff", "--name-only", base, "--", "posenc/"], capture_output=True, text=True, check=True)
    return sorted({module_of_path(path) for path in out.stdout.split() if path.endswith(".py")})


def stratified(names, size, seed):
    """``size`` of ``names`` (at least FLOOR per module), the rest in proportion to each module's count."""
    rng = random.Random(seed)
    by_module = {}
    for name in names:
        by_module.setdefault(module_of(name), []).append(name)
    take = {module: min(FLOOR, len(found)) for module, found in by_module.items()}
    spare = max(0, size - sum(take.values()))
    shares = {module: spare * len(found) / len(names) for module, found in by_module.items()}
    for module in take:
        take[module] = min(len(by_module[module]), take[module] + int(shares[module]))
    # The places left by rounding down go to the largest remainders.
    for module in sorted(shares, key=lambda m: shares[m] - int(shares[m]), reverse=True):
        if sum(take.values()) >= size:
            break
        if take[module] < len(by_module[module]):
            take[module] += 1
    return sorted(chosen for module, found in sorted(by_module.items()) for chosen in rng.sample(found, take[module]))


def summarise(names):
    """Print killed / sampled per module, then every mutant not killed outright; return the survivors.

    A timeout counts as killed (the mutant made the tests run far longer than they do) but is
    listed too, so that a machine too loaded to finish in time can be told from a real hang.
    """
    from mutmut.stats import status_by_exit_code

    codes = results()
    statuses = {name: status_by_exit_code[codes[name]] for name in names}
    print(f"\n{'module':<14}{'sampled':>8}{'killed':>8}{'score':>8}  other")
    for module in sorted({module_of(name) for name in names}):
        counts = Counter(statuses[name] for name in names if module_of(name) == module)
        sampled, killed = sum(counts.values()), counts["killed"] + counts["timeout"]
        other = ", ".join(f"{count} {status}" for status, count in sorted(counts.items()) if status != "killed")
        print(f"{module:<14}{sampled:>8}{killed:>8}{killed / sampled:>8.1%}  {other}")
    survivors = [name for name in names if statuses[name] not in ("killed", "timeout")]
    killed = len(names) - len(survivors)
    print(f"{'all':<14}{len(names):>8}{killed:>8}{killed / len(names):>8.1%}")
    for name in names:
        if statuses[name] != "killed":
            print(f"  {statuses[name]:<10} {name}    (mutmut show {name})")
    return survivors


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sample", type=int, nargs="?", const=DEFAULT_SAMPLE, metavar="N",
                        help=f"run N mutants drawn at random (default N: {DEFAULT_SAMPLE})")
    parser.add_argument("--seed", type=int, nargs="+", default=[DEFAULT_SEED],
                        help=f"seed of the draw, or several seeds for as many draws (default {DEFAULT_SEED})")
    parser.add_argument("--modules", nargs="+", metavar="MODULE", help="draw from these modules only, e.g. sinusoidal.tables rope.rotary")
    parser.add_argument("--changed", nargs="?", const="main", metavar="BASE",
                        help=f"draw {QUICK_SAMPLE} mutants (or --sample N) from the modules that differ from BASE (default main)")
    parser.add_argument("--max-children", type=int, default=os.cpu_count() or 1, help="mutants tested at once")
    args = parser.parse_args(argv)
    os.chdir(ROOT)
    mutmut = [str(Path(sys.executable).with_name("mutmut")), "run", "--max-children", str(args.max_children)]
    if args.changed:
        args.modules = changed_modules(args.changed)
        if not args.modules:
            print(f"No module of posenc differs from {args.changed}: nothing to mutate.")
            return 0
        args.sample = QUICK_SAMPLE if args.sample is None else args.sample
        print(f"Modules changed since {args.changed}: {', '.join(args.modules)}")
    if args.sample is None and args.modules is None:
        return subprocess.call(mutmut)
    names = generate_mutants(args.max_children)
    if args.modules:
        known = {module_of(name) for name in names}
        unknown = set(args.modules) - known
        if unknown:
            parser.error(f"--modules: no mutants in {', '.join(sorted(unknown))}; the modules are {', '.join(sorted(known))}")
        names = [name for name in names if module_of(name) in args.modules]
    if args.sample is None:
        draws = {None: names}
    elif args.sample < 1:
        parser.error(f"--sample must be at least 1, got {args.sample}")
    else:
        draws = {seed: stratified(names, args.sample, seed) for seed in args.seed}
    union = sorted({name for drawn in draws.values() for name in drawn})
    drawn_with = f" (seed {', '.join(map(str, args.seed))})" if args.sample is not None else ""
    print(f"Testing {len(union)} mutants{drawn_with}.")
    code = subprocess.call(mutmut + union)
    for seed, drawn in draws.items():
        if len(draws) > 1:
            print(f"\nSample of seed {seed}:")
        summarise(drawn)
    return code


if __name__ == "__main__":
    sys.exit(main())
