# Two commands: `make run` starts the broker, `make test` runs the suite. Each sets itself up.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test lint setup clean compat bench

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip setuptools wheel
	$(BIN)/pip install -q -e '.[test]'
	touch $(STAMP)

setup: $(STAMP)

run: $(STAMP)
	$(BIN)/rabbitish serve

test: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/pytest -q

compat: $(STAMP)
	$(BIN)/python -m compat_matrix

# rabbitish (--fsync always) against a local RabbitMQ when installed; BENCH_ARGS e.g. --url URL
bench: $(STAMP)
	$(BIN)/python -m benchmarks $(BENCH_ARGS)

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

clean:
	rm -rf $(VENV) build *.egg-info
