"""``python -m posenc diagnose FILE``: what the table in FILE is (``posenc.diagnose``).

FILE is a ``.npy`` array, a ``.pt``/``.pth`` torch tensor (loaded with ``weights_only``), a
``.csv`` of numbers, or a text file holding a printed array (NumPy, torch or TF). Exit
status 0 when the table is the paper's, 1 when it is not, 2 when FILE cannot be read.
``--language pt_BR`` (or zh_CN) writes the diagnosis in that language; the codes stay English.
"""

import argparse
import json
import pathlib
import sys

import numpy as np

from .forensics.diagnosis import diagnose
from .language import LANGUAGES

__all__ = ["main"]


def _load(path):
    suffix = path.suffix.lower()
    if suffix == ".npy":
        return np.load(path, allow_pickle=False)
    if suffix in (".pt", ".pth"):
        import torch  # only for this kind of file

        loaded = torch.load(path, map_location="cpu", weights_only=True)
        if not isinstance(loaded, torch.Tensor):
            raise ValueError(f"{path} must hold one tensor, got a {type(loaded).__name__}")
        return loaded
    if suffix == ".csv":
        text = path.read_text()
        try:
            return np.loadtxt(text.splitlines(), delimiter=",", ndmin=2)
        except ValueError:  # a header line
            return np.loadtxt(text.splitlines(), delimiter=",", ndmin=2, skiprows=1)
    return path.read_text()


def _shape(text):
    try:
        return tuple(int(n) for n in text.replace("x", ",").split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"--shape must look like 20,200; got {text!r}") from None


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m posenc", description="Tools of the posenc package.")
    commands = parser.add_subparsers(dest="command", required=True)
    command = commands.add_parser(
        "diagnose",
        help="say what a positional-encoding table is, or which mistake made it",
        description="Say whether the table in FILE is the paper's positional encoding, a known "
        "convention, or which mistakes made it. Exit status: 0 the paper's table, 1 not, 2 unreadable.",
    )
    command.add_argument("file", type=pathlib.Path, help=".npy, .pt, .csv, or a text file with a printed array")
    command.add_argument("--shape", type=_shape, help="the full shape of a summarised print, e.g. 20,200")
    command.add_argument("--json", action="store_true", help="print the diagnosis as JSON")
    command.add_argument("--language", choices=LANGUAGES, help="the language of the messages (default: English); "
                         "the codes stay English")
    args = parser.parse_args(argv)
    try:
        diagnosis = diagnose(_load(args.file), shape=args.shape, language=args.language)
    except Exception as error:  # any unreadable file: say why, exit 2 (argparse's usage status)
        print(f"python -m posenc diagnose: error: cannot diagnose {args.file}: {error}", file=sys.stderr)
        return 2
    # ensure_ascii=False: a translated message as its own letters (UTF-8), not \u escapes.
    print(json.dumps(diagnosis.to_dict(), indent=2, ensure_ascii=False) if args.json else diagnosis)
    return 0 if diagnosis.matches_paper else 1


if __name__ == "__main__":
    sys.exit(main())
