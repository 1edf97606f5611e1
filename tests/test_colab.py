"""`make colab` (scripts/colab.py) retargets the Colab links and keeps every notebook pair intact."""

import json
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import jupytext

ROOT = Path(__file__).resolve().parents[1]


def copy_of_the_repository(tmp_path):
    for name in ["pyproject.toml", "README.md", "README.pt_BR.md", "README.zh_CN.md", "scripts/colab.py"]:
        (tmp_path / name).parent.mkdir(exist_ok=True)
        shutil.copy(ROOT / name, tmp_path / name)
    shutil.copytree(ROOT / "notebooks", tmp_path / "notebooks", ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
    return tmp_path


def colab(root, *args):
    return subprocess.run([sys.executable, root / "scripts" / "colab.py", *args], capture_output=True, text=True)


def test_retargets_pyproject_and_every_notebook_pair(tmp_path):
    root = copy_of_the_repository(tmp_path)
    assert colab(root, "someone/fork", "v2").returncode == 0

    config = tomllib.loads((root / "pyproject.toml").read_text())
    assert config["project"]["urls"]["Repository"] == "https://github.com/someone/fork"
    assert config["tool"]["posenc"]["colab-branch"] == "v2"
    for readme in sorted(root.glob("README*.md")):
        assert "posenc-org" not in readme.read_text()
        assert "(https://github.com/someone/fork/blob/v2/README.zh_CN.md)" in readme.read_text()
    for path in sorted((root / "notebooks").glob("**/*.ipynb")):
        text = path.read_text()
        where = path.relative_to(root).as_posix()
        assert f"colab.research.google.com/github/someone/fork/blob/v2/{where}" in text
        assert "posenc @ git+https://github.com/someone/fork@v2" in text
        assert "posenc-org" not in text + path.with_suffix(".py").read_text()
        assert jupytext.writes(jupytext.read(path), fmt="py:percent") == path.with_suffix(".py").read_text()
        before = json.loads((ROOT / where).read_text())["cells"]
        after = json.loads(text)["cells"]
        assert [c.get("outputs") for c in after] == [c.get("outputs") for c in before]


def test_refuses_a_bad_slug_and_changes_nothing(tmp_path):
    root = copy_of_the_repository(tmp_path)
    result = colab(root, "not a slug")
    assert result.returncode != 0 and "OWNER/NAME" in result.stderr
    assert (root / "pyproject.toml").read_text() == (ROOT / "pyproject.toml").read_text()
