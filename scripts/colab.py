"""Point the Colab badges and install cells at another repository and branch (or tag).

    python3 scripts/colab.py OWNER/NAME [BRANCH]      (or: make colab REPO=OWNER/NAME BRANCH=...)

The slug lives in pyproject.toml ([project.urls] Repository) and the branch next to it
([tool.posenc] colab-branch). This rewrites both, then the badge and install lines of every
notebook pair (translations included) and the READMEs' links, by plain text replacement: outputs and everything else stay
byte for byte, and an .ipynb and its .py twin get the same edit, so they stay paired.
"""

import re
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = ROOT / "pyproject.toml"
GITHUB = "https://github.com/"
NAME = r"[A-Za-z0-9_.-]+"


def configured():
    config = tomllib.loads(PYPROJECT.read_text())
    slug = config["project"]["urls"]["Repository"].removeprefix(GITHUB)
    return slug, config["tool"]["posenc"]["colab-branch"]


def links(slug, branch):
    """The strings that name the slug and branch: a notebook's badge and install line, the READMEs' language links."""
    return [f"colab.research.google.com/github/{slug}/blob/{branch}/", f"git+{GITHUB}{slug}@{branch}",
            f"{GITHUB}{slug}/blob/{branch}/"]


def replace_once(text, old, new, where):
    if text.count(old) != 1:
        sys.exit(f"{where}: expected {old!r} once, found it {text.count(old)} times")
    return text.replace(old, new)


def main(slug, branch=None):
    old_slug, old_branch = configured()
    branch = branch or old_branch
    if not re.fullmatch(f"{NAME}/{NAME}", slug):
        sys.exit(f"the repository must look like OWNER/NAME, got {slug!r}")
    # A ref may hold slashes (release/1.0), but no space, quote or @ (the install cell's separator).
    if not re.fullmatch(r"[A-Za-z0-9_./-]+", branch):
        sys.exit(f"not a branch or tag name: {branch!r}")

    text = PYPROJECT.read_text()
    text = replace_once(text, f'Repository = "{GITHUB}{old_slug}"', f'Repository = "{GITHUB}{slug}"', PYPROJECT.name)
    text = replace_once(text, f'colab-branch = "{old_branch}"', f'colab-branch = "{branch}"', PYPROJECT.name)
    files = {PYPROJECT: text}
    # The translations too (notebooks/LANG/, README.LANG.md), as `make translations` would rewrite them.
    for path in [*sorted(ROOT.glob("README*.md")), *sorted(ROOT.glob("notebooks/**/*.ipynb")), *sorted(ROOT.glob("notebooks/**/*.py"))]:
        text = path.read_text()
        for old, new in zip(links(old_slug, old_branch), links(slug, branch)):
            text = text.replace(old, new)
        files[path] = text
    # Written only once every file has been checked, so a refusal changes nothing.
    for path, text in files.items():
        if path.read_text() != text:
            path.write_text(text)
            print(f"rewrote {path.relative_to(ROOT)}")
    print(f"Colab links now point at {slug}, branch {branch}")


if __name__ == "__main__":
    if not 2 <= len(sys.argv) <= 3:
        sys.exit(__doc__)
    main(*sys.argv[1:])
