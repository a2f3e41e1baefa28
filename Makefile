# MarginLab: `make run` starts the app on the bundled demo data; `make test` installs test needs and runs the tests.
# `make test-fast` runs the tests without the slow lanes; `make lint` runs ruff (format and check) and mypy (docs/deployment.md, docs/design.md).
PYTHON ?= python3
PORT   ?= 8501
VENV   := .venv
BIN    := $(VENV)/bin

.PHONY: run test test-fast lint bench browser-deps postgres-deps clean

$(BIN)/python:
	@echo "MarginLab: creating the virtual environment $(VENV) and updating its pip (once)"
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --progress-bar on --upgrade pip

# pip says what it collects, downloads and installs as it goes (about a minute on a first start).
# --no-compile: Python byte-compiles a module when it is first imported, so the install does not
# byte-compile the thousands that the app never imports (that took most of the install's time).
# The lock files (requirements*.txt, exact versions) first, then MarginLab itself, editable, from this
# checkout: no dependency resolved again, no build environment downloaded (setuptools is in the lock).
INSTALL_SELF := $(BIN)/pip install --no-compile --no-deps --no-build-isolation -e .

$(VENV)/.runtime: requirements.txt pyproject.toml | $(BIN)/python
	@echo "MarginLab: installing the Python packages of requirements.txt into $(VENV) (once, and again after an upgrade or an interrupted install)"
	$(BIN)/pip install --progress-bar on --no-compile -r requirements.txt
	$(INSTALL_SELF)
	touch $@

$(VENV)/.dev: requirements.txt requirements-dev.txt pyproject.toml | $(BIN)/python
	@echo "MarginLab: installing the Python packages of requirements-dev.txt into $(VENV) (once, and again after an upgrade or an interrupted install)"
	$(BIN)/pip install --progress-bar on -r requirements-dev.txt
	$(INSTALL_SELF)
	touch $@ $(VENV)/.runtime

# The compiled inner loops and kernel routines, all compiled into Numba's cache (in two processes, with
# progress) before the tests and benchmarks, and again whenever their sources change (an upgrade).
# `make run` does not wait for them: the app compiles them in the background at its first start, what
# the demo's first labels need first (core/solvers/_compile.py), and loads them from the cache later.
# (every module of core/solvers: the solvers' registry there names the module that compiles each one's loops)
JIT_SOURCES := core/kernels.py core/_kernels_jit.py $(wildcard core/solvers/*.py)
$(VENV)/.compiled: $(VENV)/.runtime $(JIT_SOURCES)
	$(BIN)/python -m core.solvers._compile
	touch $@

# Bound to this machine only (app/.streamlit/config.toml says so too); to share the app on a network on
# purpose, run .venv/bin/python -m app.serve --server.address ADDRESS (docs/deployment.md).
# `make run PORT=8600` picks the port.
run: $(VENV)/.runtime
	$(BIN)/python -m app.serve --server.address 127.0.0.1 --server.port $(PORT)

# Debian's Chromium drives the browser tests (never a downloaded browser build).
browser-deps:
	@command -v chromium >/dev/null 2>&1 || { \
	  echo "installing Debian's chromium for the browser tests"; \
	  apt-get update -q >/dev/null && apt-get install -y -q chromium chromium-driver >/dev/null; }

# Debian's PostgreSQL server: the storage tests start a throwaway cluster of their own with its initdb/pg_ctl.
postgres-deps:
	@ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || { \
	  echo "installing Debian's postgresql for the storage tests"; \
	  apt-get update -q >/dev/null && apt-get install -y -q postgresql >/dev/null; }

test: $(VENV)/.dev $(VENV)/.compiled browser-deps postgres-deps
	$(BIN)/pytest

# Every test but the slow lanes (markers in pyproject.toml): no browser, PostgreSQL server, Dask cluster,
# other Python process, AppTest page or property test. Neither Chromium nor PostgreSQL is needed.
FAST_LANE := not (browser or postgresql or dask or processes or app or hypothesis or slow)
# On FAST_WORKERS worker processes (pytest-xdist; the lane's tests share no state, each has its own temporary
# folders), a test file to a worker, so that a module's fixtures are made once (docs/benchmarks.md#the-test-suite):
# `make test-fast FAST_WORKERS=0` runs them in this one. `make test` runs every test in one process.
FAST_WORKERS ?= 2
test-fast: $(VENV)/.dev $(VENV)/.compiled
	$(BIN)/pytest -n $(FAST_WORKERS) --dist loadfile -m "$(FAST_LANE)"

lint: $(VENV)/.dev
	$(BIN)/ruff format --check core storage app tests benchmarks
	$(BIN)/ruff check core storage app tests benchmarks
	$(BIN)/mypy

bench: $(VENV)/.dev $(VENV)/.compiled
	for f in benchmarks/bench_*.py; do echo "== $$f"; $(BIN)/python $$f || exit 1; done

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis
