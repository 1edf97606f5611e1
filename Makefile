# Two commands do everything on a fresh clone: `make lab` and `make test`.
# Both create .venv on first use and install the pinned dependencies and posenc itself.

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
READY := $(VENV)/.ready
NOTEBOOKS := $(sort $(wildcard notebooks/*.ipynb))
# Everything `make` installs and `make constraints` pins: one set for lab, test, docs and e2e.
EXTRAS := test,docs,e2e,conventions,mutants
# Refresh one notebook with `make outputs NB=notebooks/01_numpy.py`.
NB ?= $(NOTEBOOKS:.ipynb=.py)

# TensorFlow's C++ start-up lines would land in notebook outputs and in test logs;
# oneDNN off keeps its round-off the same from run to run.
export TF_CPP_MIN_LOG_LEVEL := 3
export TF_ENABLE_ONEDNN_OPTS := 0

.PHONY: help setup lab test docs e2e colab outputs sync constraints clean bench lowest colab-stack mutants catalogs translations

help:
	@echo "make lab          set up .venv, then open JupyterLab on notebooks/ (LAB_ARGS passed through)"
	@echo "make test         set up .venv, then run everything CI checks"
	@echo "make docs         build the site (README, notebooks, API) into build/docs"
	@echo "make e2e          run every notebook in JupyterLab in headless Chromium, then check the site"
	@echo "make colab        point the Colab badges and install cells at REPO=owner/name (BRANCH=...)"
	@echo "make outputs      re-execute notebooks from their .py twins and store the outputs (NB=...)"
	@echo "make sync         bring each .ipynb/.py pair in line (jupytext --sync)"
	@echo "make catalogs     after editing English text: refresh the translation catalogs (changed text -> fuzzy)"
	@echo "make translations after editing a catalog: rebuild and re-run the translated notebooks and READMEs"
	@echo "make bench        time, memory and accuracy of posenc vs the lectures' routes (BENCH_ARGS, e.g. --quick)"
	@echo "make mutants      mutation testing with mutmut (MUTANTS_ARGS=--changed before pushing, --sample: a seeded sample)"
	@echo "make lowest       run the notebooks and unit tests on the oldest NumPy/TF/Keras/matplotlib pyproject allows"
	@echo "make colab-stack  the same on Colab's versions (TF 2.19, NumPy 2.0, Keras 3.10, matplotlib 3.10)"
	@echo "make constraints  re-pin constraints.txt from a fresh install of the newest allowed versions"
	@echo "make clean        remove .venv and build/cache folders"

$(READY): pyproject.toml constraints.txt
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11))' || \
		{ echo "posenc needs Python 3.11 or newer; '$(PYTHON)' is older (set PYTHON=python3.12)"; exit 1; }
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@echo "Installing the pinned dependencies into $(VENV) (about 2 minutes the first time)..."
	$(BIN)/python -m pip install --quiet --progress-bar off -c constraints.txt -e ".[$(EXTRAS)]"
	touch $@

setup: $(READY)

# Jupyter refuses to run as root (containers, CI machines) unless told it may.
ALLOW_ROOT := $(if $(filter 0,$(shell id -u)),--allow-root)

lab: $(READY)
	$(BIN)/jupyter lab --ServerApp.root_dir=notebooks $(ALLOW_ROOT) $(LAB_ARGS)

test: $(READY)
	$(BIN)/ruff check --quiet .
	$(BIN)/mypy
	$(BIN)/python -m pytest -n 2 --dist loadscope --nbval --nbval-current-env -q

# The .py twins carry no header, so name their format: a guess reads the escaped
# `# %pip` of the setup cell as a comment. The .ipynb is written afresh (an --update keeps
# the old outputs of cells that now print nothing). The filters go into each notebook's
# metadata too: `jupytext --output -` (the read-only pairing check) reads no config file.
JUPYTEXT_FILTERS := {"jupytext": {"notebook_metadata_filter": "-all", "cell_metadata_filter": "-all"}}

outputs: $(READY)
	for py in $(NB); do \
		$(BIN)/jupytext --from py:percent --to ipynb --set-kernel python3 --execute "$$py" && \
		$(BIN)/jupytext --update-metadata '$(JUPYTEXT_FILTERS)' "$${py%.py}.ipynb" || exit 1; \
	done

# Sphinx reads the repository root with docs/conf.py, so README.md and notebooks/ stay
# where they are. Pages show the stored outputs (nothing is re-run); -W: a warning fails.
# Each translation is a site of its own, build/docs/LANG, from the same configuration; every
# page links to itself in the other languages.
docs: $(READY)
	$(BIN)/sphinx-build -c docs -W --keep-going -q . build/docs
	for lang in $(LANGS); do \
		$(BIN)/python scripts/translations.py site $$lang && \
		$(BIN)/sphinx-build -c docs -W --keep-going -q -D language=$$lang build/i18n/$$lang build/docs/$$lang || exit 1; \
	done
	@echo "The site: build/docs/index.html (and build/docs/pt_BR, build/docs/zh_CN)"

# Debian's browser, driven by Playwright (which must never download one of its own), and a
# CJK font (1.6 MB), without which Chromium draws the zh_CN pages' characters as boxes.
E2E_PACKAGES := chromium fonts-wqy-microhei
E2E_FILES := /usr/bin/chromium /usr/share/fonts/truetype/wqy/wqy-microhei.ttc

e2e: docs $(E2E_FILES)
	$(BIN)/python tests/e2e/browser.py

$(E2E_FILES):
	@if [ "$$(id -u)" = 0 ]; then \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(E2E_PACKAGES); \
	else \
		echo "make e2e needs $@ from Debian's packages: run 'sudo apt-get install $(E2E_PACKAGES)'"; exit 1; \
	fi

# After forking: make colab REPO=you/posenc (BRANCH= defaults to the one configured).
colab:
	$(PYTHON) scripts/colab.py $(REPO) $(BRANCH)

# Not a test: prints one table per framework, saves build/bench/results.json and bench.png.
bench: $(READY)
	$(BIN)/python benchmarks/bench.py $(BENCH_ARGS)

# Not in CI (all mutants take days): mutmut over every module of posenc, on the unit tests
# ([tool.mutmut]), in a copy of the project under mutants/. MUTANTS_ARGS=--changed samples the
# modules changed since main, --sample every module (see scripts/mutants.py --help).
mutants: $(READY)
	$(BIN)/python scripts/mutants.py $(MUTANTS_ARGS)

# Other stacks than the pinned one, each in its own venv (build/lowest, build/colab):
# every notebook executed afresh (no error, no stderr, every figure an image), then the
# unit tests. See scripts/check_stack.py.
lowest:
	$(PYTHON) scripts/check_stack.py lowest

colab-stack:
	$(PYTHON) scripts/check_stack.py colab

# The course in pt_BR and zh_CN (scripts/translations.py). `make catalogs` brings every catalog
# in line with the English text; `make translations` writes the translated notebooks and READMEs
# from the catalogs and the English .ipynb (run `make outputs` first after changing English code),
# then executes the notebooks (LANGS=pt_BR for one language).
LANGS ?= pt_BR zh_CN

catalogs: $(READY)
	$(BIN)/python scripts/translations.py extract
	$(BIN)/python scripts/translations.py update

translations: $(READY)
	$(BIN)/python scripts/translations.py build
	$(MAKE) outputs NB="$$(ls $(foreach lang,$(LANGS),notebooks/$(lang)/*.py))"
	$(BIN)/python scripts/translations.py check

sync: $(READY)
	$(BIN)/jupytext --sync $(NOTEBOOKS)

constraints:
	rm -rf build/pin && $(PYTHON) -m venv build/pin
	build/pin/bin/python -m pip install --quiet torch==2.13.0 -e ".[$(EXTRAS)]"
	{ sed -n '1,2p' constraints.txt; build/pin/bin/python -m pip freeze --exclude-editable | sed 's/+cpu$$//'; } > constraints.new
	mv constraints.new constraints.txt && rm -rf build/pin

clean:
	rm -rf $(VENV) build .pytest_cache .hypothesis mutants
	find . -name __pycache__ -type d -prune -exec rm -rf {} +
