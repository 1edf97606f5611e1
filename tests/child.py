"""A child Python that imports the same posenc as the tests do.

That is the checkout's, an installed copy, or mutmut's mutated copy in mutants/: ``-P`` keeps the
working directory off the child's path, and PYTHONPATH starts with the folder holding this
posenc. Without it, a child started elsewhere imports the checkout, and a mutant that only a
child process reaches (sharded JAX arrays, the command line) is never tested.
"""

import os
import pathlib
import subprocess
import sys

import posenc

HOME = str(pathlib.Path(posenc.__file__).resolve().parents[1])


def run(args, env=None, **options):
    """subprocess.run of ``python -P *args``, with ``env`` (default os.environ) given this posenc first."""
    env = dict(os.environ if env is None else env)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [HOME, env.get("PYTHONPATH")]))
    return subprocess.run([sys.executable, "-P", *args], env=env, **options)
