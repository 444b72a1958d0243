# The two set-up commands of the README: `make demo` and `make test`.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: demo test lint bench clean

# pip's own output (and the machine's, and setuptools' notices on an editable install) goes to
# one log, shown only when the install fails: the demo's output starts with the demo.
INSTALL_LOG := $(VENV)/install.log
QUIET_PIP = $(BIN)/pip install -q $(1) >> $(INSTALL_LOG) 2>&1 || { cat $(INSTALL_LOG); exit 1; }

$(BIN)/python:
	@echo "setting up $(VENV) (a minute or two the first time; pip's log: $(INSTALL_LOG))"
	@$(PYTHON) -m venv $(VENV)
	@$(call QUIET_PIP,--upgrade pip)

$(VENV)/.runtime: pyproject.toml | $(BIN)/python
	@$(call QUIET_PIP,-e '.[demo]')
	@touch $@

$(VENV)/.dev: pyproject.toml | $(BIN)/python
	@$(call QUIET_PIP,-e '.[dev]')
	@touch $@ $(VENV)/.runtime

# Run the whole pipeline (private Redis, real Celery workers, local store) on the sample corpus.
demo: $(VENV)/.runtime
	@$(BIN)/groundswell demo

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
