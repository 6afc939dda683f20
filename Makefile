# toolnode-lab: `make lab` to learn, `make test` to check everything. See README.md.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.toolnode-lab-installed
NB     ?=
# JupyterLab refuses to run as root (containers, CI boxes) unless told to.
ROOT_FLAG := $(if $(filter 0,$(shell id -u)),--allow-root)

.DEFAULT_GOAL := help
.PHONY: help setup lab test doctor notebooks notebook bench compat handout handout-test handout-deps lint lock clean

help: ## list the commands
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-10s %s\n", $$1, $$2}'

# `make setup` (courseware/platforms.py, `setup`) compares the venv with the lock every time (a fraction
# of a second: its Python, installed versions against the pins whose marker applies here, the
# package's folder, JupyterLab's offline settings) and installs only when something differs or
# requirements.txt / pyproject.toml changed. It installs with uv $(UV_VERSION) (`uv pip sync`: exactly
# the lock, this checkout's package and uv; anything else is removed), taken from PATH or fetched into
# the venv with pip; with pip (`--no-deps`) when uv cannot be had. A venv made by a Python outside
# $(SUPPORTED), or by another interpreter than PYTHON= names, is made again. The stamp records that the
# last install finished and passed its checks (`uv pip check` or `pip check`, then venv-matches-lock).
SUPPORTED := 3.11, 3.12 or 3.13
UV_VERSION := 0.13.9
ASKED := $(if $(filter command line environment,$(origin PYTHON)),--asked)
FOUND_PYTHON = $(firstword $(foreach v,3.11 3.12 3.13,$(if $(shell command -v python$(v)),python$(v))))
SETUP = $(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info[:2] >= (3, 11) else "setup: toolnode-lab needs Python $(SUPPORTED); $(PYTHON) is " + sys.version.split()[0] + ". Run: $(if $(FOUND_PYTHON),make setup PYTHON=$(FOUND_PYTHON),install one of those then make setup PYTHON=python3.11)")' \
	&& $(PYTHON) -m courseware.platforms setup $(VENV) $(ASKED) --uv-version $(UV_VERSION) $(SETUP_ARGS)

$(STAMP): requirements.txt pyproject.toml
	@$(SETUP)

setup: ## create .venv, or repair it, so that it holds exactly the tested set and the helpers package
	@$(SETUP)

# Commands a learner needs offline (the doctor, labs, resets) never install first: on a venv that
# differs from the lock they say so in one line, with the fix, and do their job.
NO_VENV = { echo "$@: there is no $(VENV) here yet. Run: make setup"; exit 1; }
# Extra packages for one target (playwright, uv for `make lock`): with the venv's uv, else its pip.
# `make setup` removes them again when it next reinstalls (they are not in the lock).
PIP_INSTALL = if test -x $(VENV)/bin/uv; then $(VENV)/bin/uv pip install --quiet --python $(PY) $(1); \
	else $(PY) -m pip install --quiet --disable-pip-version-check $(1); fi
DRIFT = test -x $(PY) || $(NO_VENV); $(PY) -m courseware.platforms venv-matches-lock --note || true

lab: setup ## set up, then open the course in JupyterLab at lesson 00
	$(VENV)/bin/jupyter lab --ServerApp.ip=127.0.0.1 --ServerApp.root_dir="$(CURDIR)" $(ROOT_FLAG) \
	  --LabApp.default_url=/lab/tree/notebooks/00_start_here.ipynb

# Twice as many workers as this machine has CPUs (at most 8; `make test WORKERS=n` to choose), a test
# file each at a time (a notebook's cells share one kernel): the notebooks' kernels mostly wait
# (sleeps, process starts), so a second worker per CPU fills that time. Measured side by side on a
# 2-core machine from one fresh clone: 2 workers 192 s, 3 workers 148 s, 4 workers 131 s (the suite
# uses about 240 s of CPU, so 2 cores cannot go below some 120 s). Every timing claim is built to
# hold under that load (`make soak` checks it under a heavier one).
# Python caches the bytecode of what it imports (its default; some shells and CI images turn it off
# with PYTHONDONTWRITEBYTECODE): the suite starts some 50 kernels, MCP servers and client scripts,
# and without the cache each compiles langchain and langgraph from source again (`import
# langgraph.prebuilt`: 3.4 s of CPU instead of 1.3 s).
WORKERS ?= $(shell $(PY) -c 'import os; n = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count(); print(min(2 * (n or 1), 8))')
test: setup ## set up, then run the whole suite (unit, contract, strict nbval on every notebook)
	PYTHONDONTWRITEBYTECODE= $(PY) -m pytest -n $(WORKERS) --dist loadfile

# `make doctor` alone runs the doctor while make reads this file, so that a failed check ends make
# with the doctor's status and its report, without make's own "*** Error" line (a failed recipe
# always adds one). With other goals (`make setup doctor`) it runs as an ordinary recipe.
ifeq ($(MAKECMDGOALS),doctor)
DOCTOR_OUT := $(shell mktemp)
DOCTOR_STATUS := $(shell { test -x $(PY) || { echo "doctor: there is no $(VENV) here yet. Run: make setup"; exit 1; }; \
  $(PY) -m courseware.doctor; } > $(DOCTOR_OUT) 2>&1; echo $$?)
$(info $(file < $(DOCTOR_OUT)))
$(shell rm -f $(DOCTOR_OUT))
ifneq ($(DOCTOR_STATUS),0)
MAKEFLAGS += -q
endif
endif
doctor: ## pre-flight check for a learner's or workshop laptop: reports, changes nothing
	@$(if $(DOCTOR_STATUS),:,test -x $(PY) || $(NO_VENV); $(PY) -m courseware.doctor)

# The maintainer's loop (CONTRIBUTING.md, "The loop"): `make quick` while writing, `make stale` /
# `make regen` for every derived file, `make test` before a commit lands.
LAB ?=
.PHONY: quick stale regen
quick: setup ## one lesson (NB=notebooks/NN_x.ipynb) or lab (LAB=NN) and all it can break, in seconds
	@test -n "$(NB)$(LAB)" || { echo "Name a lesson or a lab: make quick NB=notebooks/03_builtin_toolnode.ipynb, or make quick LAB=02"; exit 2; }
	$(PY) -m courseware.quick $(NB) $(if $(LAB),--lab $(LAB))

# Both work on a venv that differs from the lock (mid pin bump): they say so in one line and go on.
stale: ## list every derived file that is out of date, each with the command that fixes it
	@$(DRIFT)
	@$(PY) -m courseware.derived stale

regen: ## rewrite every derived file: prose versions and counts, times, starters, README, guide, lesson 00
	@$(DRIFT)
	$(PY) -m courseware.derived regen

notebooks: setup ## re-execute every notebook from a fresh kernel and normalise it
	$(PY) -m courseware.nbtools run $(if $(FRESH),--fresh)

notebook: setup ## re-execute one notebook (only Markdown changed: normalise it; FRESH=1 runs it anyway): make notebook NB=notebooks/01_sequential_vs_gather.ipynb
	@test -n "$(NB)" || { echo "Name the notebook: make notebook NB=notebooks/01_sequential_vs_gather.ipynb"; exit 2; }
	$(PY) -m courseware.nbtools run $(if $(FRESH),--fresh) $(NB)

bench: setup ## every way of running tools vs the limit, per-call overhead, phases (about a minute; writes docs/bench/)
	$(PY) scripts/bench_toolnode.py

compat: setup ## contract tests vs a matrix of LangGraph releases -> docs/compatibility.md (about 30 min on 2 cores)
	@test -x $(VENV)/bin/uv || $(call PIP_INSTALL,uv==$(UV_VERSION))
	PATH="$(CURDIR)/$(VENV)/bin:$$PATH" $(PY) scripts/compat.py

# The handout needs a browser to print and test it, poppler to check the PDF, a CJK font for the
# Chinese cheat sheet, and npm once to fetch mermaid (scripts/build_handout.py). Each is looked for
# by what it provides; only what is missing is installed (Debian/Ubuntu), else the fix is printed.
PLAYWRIGHT := playwright==1.65.2

handout-deps: setup
	@$(call PIP_INSTALL,$(PLAYWRIGHT))
	@missing=""; \
	command -v chromium >/dev/null || missing="$$missing chromium"; \
	command -v pdftotext >/dev/null || missing="$$missing poppler-utils"; \
	fc-list 2>/dev/null | grep -qi "Noto Sans CJK" || missing="$$missing fonts-noto-cjk"; \
	command -v npm >/dev/null || missing="$$missing npm"; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; \
	  else echo "The handout needs:$$missing (Debian/Ubuntu: sudo apt-get install$$missing)"; exit 1; fi; fi

# Timed on this 2-core machine, 2026-12-05: while other jobs ran (load 10-18) the first build took 13
# minutes; with little else running (load 3-6) a first build from a fresh clone took 3 min 17 s and
# the next one 3 min 38 s. Fetching Playwright (PyPI) and mermaid (npm) took seconds of it (Chromium,
# poppler and the CJK fonts were installed already: apt-get adds its own minutes, and needs a
# network); nearly all of it is Chromium printing the full handout on A4 and Letter (some 400 pages
# each), so a later build takes about as long. handout-day leaves those two out: 4-6 minutes under
# the same load.
handout: handout-deps ## build the offline handout: build/handout/ site and every PDF (3-4 min on a quiet machine, 10-15 busy)
	$(PY) scripts/build_handout.py

.PHONY: handout-day
handout-day: handout-deps ## the site and the day's PDFs only: its sections and lab, cheat sheets, run sheet, feedback (~5 min)
	$(PY) scripts/build_handout.py --only day --only sheets --only kit

handout-test: handout-deps ## build the handout and check it in headless Chromium with the network blocked
	TOOLNODE_LAB_HANDOUT_TEST=1 $(PY) -m pytest tests/handout -q

lint: setup ## ruff over the package, tests and scripts
	$(VENV)/bin/ruff check helpers courseware tests scripts

# One universal lock: every platform (Linux, macOS, Windows) and Python 3.11-3.13, each pin with the
# marker that says where it applies, one version per package, existing pins kept unless the input moves
# them; scripts/lock-overrides.txt leaves out what the course never uses and costs every process
# time. Then every pinned file is checked to exist for each platform and Python (scripts/check_lock.py).
# It needs the venv only for uv and for check_lock.py, not the venv to match the lock: a lock that does
# not fit together (which `make setup` refuses) is exactly what it repairs.
lock: ## re-resolve requirements.txt for every platform, then check every file exists (needs the index)
	@test -x $(PY) || $(NO_VENV)
	@test -x $(VENV)/bin/uv || $(call PIP_INSTALL,uv==$(UV_VERSION))
	$(VENV)/bin/uv pip compile scripts/requirements.in --universal --python-version 3.11 --fork-strategy fewest \
	  --override scripts/lock-overrides.txt --no-header --no-annotate --no-emit-package toolnode-lab -q \
	  -o requirements.txt
	{ echo "# The exact tested set for Linux, macOS and Windows, Python 3.11-3.13 (markers say where a pin applies)."; \
	  echo "# Regenerate with 'make lock' (from scripts/requirements.in); no index URLs."; \
	  echo "# Install: pip install -r requirements.txt -e ."; grep -v '^#' requirements.txt; } > requirements.txt.new
	mv requirements.txt.new requirements.txt
	@$(PY) -c "import pip" 2>/dev/null || $(call PIP_INSTALL,pip)
	$(PY) scripts/check_lock.py requirements.txt

clean: ## remove the venv and caches (notebooks keep their outputs)
	rm -rf $(VENV) .pytest_cache .ruff_cache
	find . -name __pycache__ -type d -prune -exec rm -rf {} +

# -- labs (labs/README.md): starters are generated from labs/solutions/ ------------------------------
# `labs`, `reset-lab(s)` and `restore-lab` work offline: they report drift (DRIFT) instead of reinstalling.
DIR  ?= labs
N    ?=
FROM ?=
JSON ?=
CSV  ?=
.PHONY: labs labs-build reset-lab reset-labs restore-lab

labs: ## run your labs headless, one line per exercise (a collected folder: make labs DIR=... [JSON=f] [CSV=f])
	@$(DRIFT)
	$(PY) -m helpers.labs report "$(DIR)" $(if $(JSON),--json "$(JSON)") $(if $(CSV),--csv "$(CSV)")

labs-build: setup ## regenerate the lab starters labs/NN_*.ipynb from labs/solutions/
	$(PY) -m helpers.labs build

reset-lab: ## restore one lab's starter, your version kept in labs/backups/: make reset-lab N=01
	@test -n "$(N)" || { echo "Name the lab: make reset-lab N=01 (labs: $$($(PY) -m helpers.labs list --numbers 2>/dev/null || echo 'see python -m helpers.labs list'))"; exit 2; }
	@$(DRIFT)
	$(PY) -m helpers.labs reset $(N)

reset-labs: ## restore every lab's starter, your versions kept in labs/backups/
	@$(DRIFT)
	$(PY) -m helpers.labs reset all

restore-lab: ## restore a backed-up lab: make restore-lab N=01 [FROM=backup]
	@test -n "$(N)" || { echo "Name the lab: make restore-lab N=01 [FROM=backup] (backups: labs/backups/)"; exit 2; }
	@$(DRIFT)
	$(PY) -m helpers.labs restore $(N) $(FROM)

# Offline install for a venue with bad Wi-Fi (docs/workshop/README.md): gather the wheels (uv's too) once
# where the network is good, copy the folder to every laptop, install from it with the network off
# (uv: --offline --no-index --find-links; pip, if uv cannot be had: --no-index --find-links).
WHEELHOUSE ?= wheelhouse
.PHONY: offline-bundle offline-install
offline-bundle: setup ## gather every wheel into wheelhouse/ (PLATFORMS=linux-x86_64,macos-arm64 PYTHONS=3.12; default all)
	@$(PY) -c "import pip" 2>/dev/null || $(call PIP_INSTALL,pip)
	$(PY) scripts/offline_bundle.py --platforms "$(PLATFORMS)" --pythons "$(PYTHONS)" --dest "$(WHEELHOUSE)"

offline-install: ## make setup from wheelhouse/ with no network (after make offline-bundle)
	@test -f "$(WHEELHOUSE)/CONTENTS.txt" || { echo "offline-install: no $(WHEELHOUSE)/ here. On a machine with a network run make offline-bundle, then copy $(WHEELHOUSE)/ into this checkout and run make offline-install."; exit 1; }
	@PIP_NO_INDEX=1 PIP_FIND_LINKS="$(abspath $(WHEELHOUSE))" UV_OFFLINE=1 \
	  $(MAKE) --no-print-directory setup SETUP_ARGS='--wheelhouse "$(abspath $(WHEELHOUSE))"'

.PHONY: soak
soak: setup ## timing tests (50 rounds) and timing notebooks under 2 CPU hogs and 0.3 s stalls; counts failures
	$(PY) scripts/soak.py $(SOAK_ARGS)

.PHONY: rerun reset-lessons
rerun: setup ## no cell may break a cell above it: run, then re-run the first half (NB=... for one)
	$(PY) -m courseware.nbtools rerun $(NB)

reset-lessons: ## restore the lessons you ran and saved, your versions kept in saved-lessons/
	@$(DRIFT)
	$(PY) -m courseware.nbtools reset

# Between two groups on a shared laptop (docs/workshop/usb.md): the course exactly as it was cloned
# and nothing of the group's left. Every tracked file back to the clone's commit; every file the group
# added deleted, ignored ones included (lab backups, saved lessons, notebook checkpoints, exports,
# new notebooks), keeping only the installed $(VENV), a wheelhouse/, build/, .cache/ and bytecode;
# then this user's IPython history and JupyterLab workspaces (what was typed, the tabs left open).
# Nothing is backed up. It refuses while JupyterLab runs here (an open tab would save a group's
# notebook back), in a copy that is not a git clone (an unzipped one: unzip it again instead), and,
# without YES=1, in a checkout that has labs/solutions/ (an instructor's or maintainer's, whose
# uncommitted work it would delete).
RESET_KEEP := -e /$(VENV) -e /wheelhouse -e /build -e /.cache -e '*.egg-info' -e __pycache__
.PHONY: reset-laptop
reset-laptop: ## between two groups on a shared laptop: the course as cloned, the group's files deleted (no backup)
	@test -x $(PY) || $(NO_VENV)
	@git rev-parse --is-inside-work-tree >/dev/null 2>&1 || { echo "reset-laptop: this copy is not a git clone (unzipped?): delete this folder and unzip repository/toolnode-lab.zip from the stick again, then make offline-install WHEELHOUSE=<stick>/wheelhouse"; exit 1; }
	@test ! -d labs/solutions -o "$(YES)" = 1 || { echo "reset-laptop: this checkout has labs/solutions/ (not a learner's copy from the stick): it would delete every change not committed here. If you mean it: make reset-laptop YES=1"; exit 2; }
	@$(PY) -c 'import sys; from pathlib import Path; from jupyter_server.serverapp import list_running_servers; 	  here = Path.cwd().resolve(); busy = [s["url"] for s in list_running_servers() if Path(s.get("root_dir", "/")).resolve() == here]; 	  sys.exit(f"reset-laptop: JupyterLab is running here ({busy[0]}): stop it first with File > Shut Down in JupyterLab (Ctrl-C does not stop a make lab left running in the background), then run it again") if busy else None'
	@upstream=$$(git rev-parse -q --verify '@{upstream}' 2>/dev/null); 	  if [ -n "$$upstream" ] && [ "$$upstream" != "$$(git rev-parse HEAD)" ]; then git reset -q --hard "$$upstream"; fi
	@git checkout -q HEAD -- .
	git clean -fdx $(RESET_KEEP)
	@$(PY) -c 'from pathlib import Path; import os; from IPython.paths import get_ipython_dir; from jupyter_core.paths import jupyter_config_dir; 	  spaces = Path(os.environ.get("JUPYTERLAB_WORKSPACES_DIR") or Path(jupyter_config_dir(), "lab", "workspaces")); 	  gone = [p for p in [*Path(get_ipython_dir()).glob("profile_*/history.sqlite*"), *spaces.glob("*.jupyterlab-workspace")] if p.is_file()]; 	  [p.unlink() for p in gone]; print(f"reset-laptop: deleted {len(gone)} IPython history and JupyterLab workspace file(s)")'
	@echo "reset-laptop: every lesson and lab as cloned, nothing of the last group left; make doctor, then make lab"

# -- workshop kit (docs/workshop/): slides, the live-coding copy, collecting labs, the doctor tally, the USB folder
USB      ?= build/usb/toolnode-lab-usb
DOCTORS  ?=
.PHONY: slides slides-test live-copy collect doctor-tally usb workshop-guide

slides: setup ## the workshop decks (reveal.js, offline; code, outputs, figures) and the live-coding copy -> build/slides/
	$(PY) scripts/build_slides.py

live-copy: setup ## only the live-coding copy (the typed cell collapsed, an empty cell below it) -> build/slides/live/
	$(PY) scripts/build_slides.py --live-only

slides-test: handout-deps ## build the slides; check every deck in headless Chromium, network blocked: font sizes, overflow, colons, the CJK font
	TOOLNODE_LAB_HANDOUT_TEST=1 $(PY) -m pytest -q -p no:cacheprovider tests/handout/test_slides.py tests/slides

workshop-guide: setup ## rewrite the kit printed from courseware.workshop: agenda, script, run sheet, forms, highlights
	$(PY) -m courseware.workshop write-guide

# Offline, like the resets: on the day it restores the highlights notebooks a group saved.
.PHONY: highlights
highlights: ## write the highlights notebooks (docs/workshop/highlights/) from the lessons; also resets them
	@$(DRIFT)
	$(PY) -m courseware.workshop highlights

collect: setup ## who is stuck where, from a folder of learners' labs: make collect DIR=/media/usb/collected
	@test -n "$(DIR)" -a "$(DIR)" != labs || { echo "Name the collected folder: make collect DIR=/media/usb/collected"; exit 2; }
	$(PY) scripts/collect_labs.py "$(DIR)"

doctor-tally: setup ## count attendees' doctor outputs, and the make usb line for them: make doctor-tally DOCTORS=folder
	@test -n "$(DOCTORS)" || { echo "Name the folder of doctor outputs: make doctor-tally DOCTORS=folder"; exit 2; }
	$(PY) scripts/doctor_tally.py "$(DOCTORS)"

# The stick's folder (docs/workshop/usb.md): the last commit without labs/solutions/ (bundle and zip),
# the wheelhouse (gathered with pip download: scripts/build_usb.py puts pip into a uv-made venv first),
# the handout and slides. NODOCS=1 leaves those two out (and does not build them: minutes faster);
# REPO= is the address the stick's README.txt gives for the solutions after the session.
# `make usb-test` builds a stick for this machine and installs from it with no network (.ci/run).
.PHONY: usb-test
usb: $(if $(NODOCS),setup,handout slides) ## the USB folder: repository (no solutions), wheelhouse, handout, slides (DOCTORS= or PLATFORMS=/PYTHONS=; NODOCS=1)
	$(PY) scripts/build_usb.py --out "$(abspath $(USB))" $(if $(DOCTORS),--doctor-dir "$(DOCTORS)") \
	  $(if $(WHEELS),--wheelhouse "$(WHEELS)") --platforms "$(PLATFORMS)" --pythons "$(PYTHONS)" \
	  $(if $(NODOCS),--no-docs) $(if $(REPO),--repository-url "$(REPO)")

usb-test: setup ## build a stick for this machine (NODOCS), install from it with the network cut, doctor, resets
	TOOLNODE_LAB_USB_TEST=1 $(PY) -m pytest -q -p no:cacheprovider tests/test_usb.py
