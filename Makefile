# toolnode-lab: `make lab` to learn, `make test` to check everything. See README.md.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.toolnode-lab-installed
NB     ?=
# JupyterLab refuses to run as root (containers, CI boxes) unless told to.
ROOT_FLAG := $(if $(filter 0,$(shell id -u)),--allow-root)

.DEFAULT_GOAL := help
.PHONY: help setup lab test doctor notebooks notebook bench lint lock clean

help: ## list the commands
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-10s %s\n", $$1, $$2}'

# The venv is (re)installed only when it is missing or requirements.txt / pyproject.toml changed.
$(STAMP): requirements.txt pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "toolnode-lab needs Python >= 3.11; this is " + sys.version.split()[0] + ". Run: make PYTHON=python3.11 ...")'
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements.txt -e . --no-deps
	@$(PY) -m pip check --disable-pip-version-check >/dev/null || { $(PY) -m pip check; exit 1; }
	@mkdir -p $(VENV)/share/jupyter/lab/settings && cp scripts/jupyterlab-overrides.json $(VENV)/share/jupyter/lab/settings/overrides.json
	@touch $(STAMP)

setup: $(STAMP) ## create .venv with the pinned set and the helpers package

lab: setup ## set up, then open the course in JupyterLab at lesson 00
	$(VENV)/bin/jupyter lab --ServerApp.ip=127.0.0.1 --ServerApp.root_dir="$(CURDIR)" $(ROOT_FLAG) \
	  --LabApp.default_url=/lab/tree/notebooks/00_start_here.ipynb

test: setup ## set up, then run the whole suite (unit, contract, strict nbval on every notebook)
	$(PY) -m pytest

doctor: setup ## pre-flight check for a learner's or workshop laptop
	$(PY) -m helpers.doctor

notebooks: setup ## re-execute every notebook from a fresh kernel and normalise it
	$(PY) -m helpers.nbtools run

notebook: setup ## re-execute one notebook: make notebook NB=notebooks/01_sequential_vs_gather.ipynb
	@test -n "$(NB)" || { echo "Name the notebook: make notebook NB=notebooks/01_sequential_vs_gather.ipynb"; exit 2; }
	$(PY) -m helpers.nbtools run $(NB)

bench: setup ## ToolNode vs the physical limit, and per-call overhead, side by side (about a minute)
	$(PY) scripts/bench_toolnode.py

lint: setup ## ruff over the package, tests and scripts
	$(VENV)/bin/ruff check helpers tests scripts

lock: setup ## re-resolve requirements.txt from scripts/requirements.in (needs the package index)
	$(PY) -m pip install --quiet uv
	$(VENV)/bin/uv pip compile scripts/requirements.in -p 3.11 --no-header --no-annotate \
	  --no-emit-package toolnode-lab -q -o requirements.txt.new
	{ echo "# The exact tested set. Regenerate with 'make lock' (from scripts/requirements.in); no index URLs."; \
	  echo "# Install: pip install -r requirements.txt -e ."; cat requirements.txt.new; } > requirements.txt
	rm requirements.txt.new

clean: ## remove the venv and caches (notebooks keep their outputs)
	rm -rf $(VENV) .pytest_cache .ruff_cache
	find . -name __pycache__ -type d -prune -exec rm -rf {} +

.PHONY: soak
soak: setup ## timing tests (50 rounds) and timing notebooks under 2 CPU hogs and 0.3 s stalls; counts failures
	$(PY) scripts/soak.py $(SOAK_ARGS)

.PHONY: rerun reset-lessons
rerun: setup ## no cell may break a cell above it: run, then re-run the first half (NB=... for one)
	$(PY) -m helpers.nbtools rerun $(NB)

reset-lessons: ## back up the lessons you ran and saved (saved-lessons/), restore the committed ones
	$(PY) -m helpers.nbtools reset
