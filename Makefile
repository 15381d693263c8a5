# Two commands: `make run` starts the broker, `make test` runs the suite. Each sets itself up.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
SPARK_STAMP := $(VENV)/.spark-installed

.PHONY: run test lint setup spark clean compat bench screenshots fuzz

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip setuptools wheel
	$(BIN)/pip install -q -e '.[test]'
	touch $(STAMP)

setup: $(STAMP)

# The spark extra (PySpark) for rabbitish.spark and its tests; they skip without it or Java.
$(SPARK_STAMP): $(STAMP)
	$(BIN)/pip install -q -e '.[spark]'
	touch $(SPARK_STAMP)

spark: $(SPARK_STAMP)

run: $(STAMP)
	$(BIN)/rabbitish serve

test: $(STAMP)
	@if command -v java >/dev/null 2>&1; then \
		$(MAKE) --no-print-directory spark || echo "spark extra not installed: spark tests will be skipped"; \
	else \
		echo "no java on PATH: spark tests will be skipped"; \
	fi
	$(BIN)/ruff check .
	$(BIN)/pytest -q -rs

compat: $(STAMP)
	$(BIN)/python -m compat_matrix

# rabbitish (--fsync always) against a local RabbitMQ when installed; BENCH_ARGS e.g. --url URL
bench: $(STAMP)
	$(BIN)/python -m benchmarks $(BENCH_ARGS)

# The web UI's main pages into docs/images/ (docs/ui.md); needs chromium and chromium-driver.
screenshots: $(STAMP)
	$(BIN)/python -m tests.browser.screenshots docs/images

# The long fuzz run: 1,000,000 generated inputs over the frame reader, content assembly, field
# tables and the AMQP 1.0 codec and connection (FUZZ_ARGS e.g. --inputs 100000).
fuzz: $(STAMP)
	$(BIN)/python -m tests.fuzz $(FUZZ_ARGS)

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

clean:
	rm -rf $(VENV) build *.egg-info
