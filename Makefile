# MarginLab: `make run` starts the app on the bundled demo data; `make test` installs test needs and runs the tests.
PYTHON ?= python3
PORT   ?= 8501
VENV   := .venv
BIN    := $(VENV)/bin

.PHONY: run test lint bench browser-deps postgres-deps clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

# (then the compiled inner loops and kernel routines are compiled once, into Numba's cache, not at the first label)
$(VENV)/.runtime: requirements.txt | $(BIN)/python
	$(BIN)/pip install -q -r requirements.txt
	$(BIN)/python -m core.solvers._compile
	touch $@

$(VENV)/.dev: requirements.txt requirements-dev.txt | $(BIN)/python
	$(BIN)/pip install -q -r requirements-dev.txt
	$(BIN)/python -m core.solvers._compile
	touch $@ $(VENV)/.runtime

# Bound to this machine only (app/.streamlit/config.toml says so too); to share the app on a
# network on purpose, run streamlit yourself with --server.address. `make run PORT=8600` picks the port.
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

test: $(VENV)/.dev browser-deps postgres-deps
	$(BIN)/pytest

lint: $(VENV)/.dev
	$(BIN)/ruff check core storage app tests benchmarks

bench: $(VENV)/.dev
	for f in benchmarks/bench_*.py; do echo "== $$f"; $(BIN)/python $$f || exit 1; done

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis
