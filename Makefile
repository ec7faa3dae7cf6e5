# Every target creates or updates the local virtual environment first.
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
TORCH_VERSION ?= 2.13.0

.PHONY: install test sb3-tests demo lint format bench docs

# The virtual environment with the CPU build of torch first: a bare torch requirement would pull a multi-GB CUDA
# build. "+cpu" matches only the CPU build (a local wheel, or PyTorch's CPU index as the fallback).
define venv_with_cpu_torch
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -c "import torch" 2>/dev/null || $(PY) -m pip install -q --no-compile "torch==$(TORCH_VERSION)+cpu" \
		|| $(PY) -m pip install -q --no-compile "torch==$(TORCH_VERSION)" --index-url https://download.pytorch.org/whl/cpu
endef

# pip compiles the installed modules' bytecode one file at a time (--no-compile above); compileall uses every core. Its
# status is ignored, as pip ignores it: torch ships one file that only Python 3.12 compiles.
define compile_bytecode
	$(PY) -m compileall -q -j 0 "$$($(PY) -c 'import sysconfig; print(sysconfig.get_path("purelib"))')" >/dev/null 2>&1 || true
endef

$(STAMP): pyproject.toml constraints.txt
	$(venv_with_cpu_torch)
	$(PY) -m pip install -q --no-compile -c constraints.txt -e ".[test]"
	$(compile_bytecode)
	touch $(STAMP)

install: $(STAMP)

# Includes the clean-install check (tests/integration/test_clean_install.py: the built wheel in a fresh venv, about two minutes
# of one worker), the bad-input table and the notebook run; `pytest -m "not clean_install"` leaves the first out.
# --no-loadscope-reorder: the files go to the two workers in collection order, which tests/conftest.py sets: the longest
# files first (LONGEST_FIRST), the many short ones filling in at the end (xdist's default, most tests first, would send
# long files of few tests, such as the compiled engine's, the tuning and the clean install, late).
test: $(STAMP)
	OMP_NUM_THREADS=1 $(PY) -m pytest -n 2 --dist loadfile --no-loadscope-reorder -q --durations=25

# SB3's own tests of TD3 and DDPG (from SB3's source distribution) with AblatableTD3 and DDPG substituted
sb3-tests: $(STAMP)
	OMP_NUM_THREADS=1 $(PY) tests/sb3_suite/run.py

demo: $(STAMP)
	OMP_NUM_THREADS=1 $(PY) -m sb3_ablation demo

# ruff (format and lint) and mypy on the package (settings in pyproject.toml)
lint: $(STAMP)
	$(VENV)/bin/ruff format --check . && $(VENV)/bin/ruff check . && $(PY) -m mypy

format: $(STAMP)
	$(VENV)/bin/ruff format . && $(VENV)/bin/ruff check --fix .

bench: $(STAMP)
	OMP_NUM_THREADS=1 $(PY) benchmarks/throughput.py

# The documentation (Sphinx, MyST, sphinx-rtd-theme) into docs/_build/html, strict: a warning fails the build (-E:
# every page is read again, so no warning hides in a cached page). First the generated pages: docs/results/, README's
# answer and its figures, the answer key and the algorithm pages' results must be what the committed reports give
# (otherwise run `python -m docs.generate`, which writes them all; docs/generate/ holds the generators).
# Only what the docs need: the package (autodoc imports it; no Ray, MuJoCo or test tools) and the `docs` extra.
DOCS_STAMP := $(VENV)/.docs-installed
$(DOCS_STAMP): pyproject.toml constraints.txt
	$(venv_with_cpu_torch)
	$(PY) -m pip install -q --no-compile -c constraints.txt -e ".[docs]"
	$(compile_bytecode)
	touch $(DOCS_STAMP)

docs: $(DOCS_STAMP)
	$(PY) -m docs.generate --check
	OMP_NUM_THREADS=1 $(PY) -m sphinx -E -W --keep-going -q -b html docs docs/_build/html
