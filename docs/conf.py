"""Sphinx configuration: the README, the notebooks with their stored outputs, and the API.

The source folder is the repository root (see `make docs`), so the notebooks and the README
stay where they are; only the files matched by ``include_patterns`` become pages.
"""

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]

project = PROJECT["name"]
release = PROJECT["version"]
copyright = "the posenc authors"

# sphinx-mathjax-offline ships MathJax 3 into _static: the math renders without a CDN
# (a lecture hall without network, and `make e2e` on a closed network).
extensions = ["myst_nb", "sphinx.ext.autodoc", "sphinx-mathjax-offline"]
root_doc = "docs/index"
include_patterns = ["docs/*.md", "notebooks/*.ipynb"]
# Pruned before the walk: .venv alone holds thousands of files.
exclude_patterns = [".*", "build", "*.egg-info"]

# Render the outputs stored in each .ipynb; `make test` is what re-executes them.
nb_execution_mode = "off"
myst_enable_extensions = ["dollarmath", "amsmath"]

autodoc_member_order = "bysource"
autodoc_default_options = {"members": True}

html_theme = "furo"
# The language switcher on every page (docs/_templates/sidebar/languages.html), between the
# brand and the search box. `make docs` builds the English site and one per language
# (sphinx-build -D language=..., sources from scripts/translations.py site LANG).
templates_path = ["_templates"]
html_sidebars = {"**": ["sidebar/brand.html", "sidebar/languages.html", "sidebar/search.html",
                        "sidebar/scroll-start.html", "sidebar/navigation.html", "sidebar/scroll-end.html"]}
html_context = {"posenc_languages": [("en", "English"), ("pt_BR", "Português (Brasil)"), ("zh_CN", "中文（简体）")]}
html_css_files = ["languages.css"]
html_static_path = ["_static"]
html_title = f"{project} {release}"
# Copied to the site's root, so the site's address opens the landing page.
html_extra_path = ["_extra"]  # relative to this folder
