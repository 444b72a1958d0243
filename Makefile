# The two set-up commands of the README: `make demo` and `make test`.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: demo test lint bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

$(VENV)/.runtime: pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q -e '.[demo]'
	touch $@

$(VENV)/.dev: pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q -e '.[dev]'
	touch $@ $(VENV)/.runtime

# Run the whole pipeline (private Redis, real Celery workers, local store) on the sample corpus.
demo: $(VENV)/.runtime
	$(BIN)/groundswell demo

# Lint, then every test: unit, conformance, differential and integration (real services).
test: $(VENV)/.dev
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/python -m pytest -q -n auto --maxprocesses 4

lint: $(VENV)/.dev
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

bench: $(VENV)/.dev
	$(BIN)/python bench/pipeline.py
	$(BIN)/python bench/verify.py
	$(BIN)/python bench/admit.py
	$(BIN)/python bench/scale.py

clean:
	rm -rf $(VENV) groundswell-data .pytest_cache .ruff_cache
