# Two commands for a fresh machine: `make run` and `make test`.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: run test lint format bench fuzz package docs clean

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e ".[test]"
	touch $(STAMP)

run: $(STAMP)
	$(VENV)/bin/swimlanes gui

test: $(STAMP)
	$(VENV)/bin/ruff check app tests benchmarks
	$(VENV)/bin/mypy
	QT_QPA_PLATFORM=offscreen $(PY) -m pytest -q -p no:cacheprovider

lint: $(STAMP)
	$(VENV)/bin/ruff check app tests benchmarks
	$(VENV)/bin/ruff format --check app tests benchmarks
	$(VENV)/bin/mypy

format: $(STAMP)
	$(VENV)/bin/ruff format app tests benchmarks
	$(VENV)/bin/ruff check --fix app tests benchmarks

bench: $(STAMP)
	$(PY) benchmarks/bench_engine.py --repeat 5
	QT_QPA_PLATFORM=offscreen $(PY) benchmarks/bench_render.py
	$(PY) benchmarks/bench_import.py

# The fuzz suite at length (make test runs each fuzzer briefly).
fuzz: $(STAMP)
	QT_QPA_PLATFORM=offscreen $(PY) benchmarks/fuzz_long.py

# Regenerate the user guide's screenshots from the real app (offscreen).
docs: $(STAMP)
	$(PY) docs/scripts/make_screenshots.py

# A one-folder desktop bundle (dist/swimlanes/) plus an sdist and a wheel (dist/).
package: $(STAMP)
	$(PY) -m pip install -q build
	$(PY) -m build --outdir dist .
	bash packaging/build_bundle.sh

clean:
	rm -rf $(VENV) build dist *.egg-info
