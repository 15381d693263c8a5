# Two commands: `make run` starts the broker, `make test` runs the suite. Each sets itself up.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
SPARK_STAMP := $(VENV)/.spark-installed

.PHONY: run test lint typecheck setup spark clean compat bench screenshots fuzz crash-prepared netfaults powerloss native test-native

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
	$(MAKE) --no-print-directory typecheck
	$(BIN)/pytest -q -rs
	@if command -v cc >/dev/null 2>&1; then \
		$(MAKE) --no-print-directory test-native; \
	else \
		echo "no C compiler: the compiled build (make test-native) is not tested"; \
	fi

# The package with its hot modules compiled (RABBITISH_COMPILE=1's build, rabbitish/native.py)
# under build/native, rebuilt when the sources changed.
native: $(STAMP)
	$(BIN)/python -m tests.support.native_build

# The unit tests (the 1.0 connection's among them) and the 0-9-1 suites with real clients,
# against build/native: every `python -m rabbitish` they start runs it too (PYTHONSAFEPATH keeps
# the checkout off sys.path). About two minutes: the whole suite again would pass 20 minutes.
NATIVE_SUITES := tests/unit $(addprefix tests/integration/test_,\
	ack.py confirms.py consume.py content.py get.py kombu.py ordering.py publish.py \
	qos.py tx.py tx_more.py tx_ack_only.py dead_letter.py wire_errors.py wire_handshake.py)

test-native: native
	PYTHONSAFEPATH=1 PYTHONPATH=$(CURDIR)/build/native RABBITISH_EXPECT_COMPILED=1 \
		$(BIN)/pytest -q -rs --import-mode=append -p no:cacheprovider $(NATIVE_SUITES)

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

# The long kill -9 run of prepared transactions with acks (the suite runs 5 rounds;
# PREPARED_KILLS rounds here, default 100; RABBITISH_CRASH_SEED picks another sequence).
crash-prepared: $(STAMP)
	RABBITISH_PREPARED_KILLS=$${PREPARED_KILLS:-100} $(BIN)/pytest -q tests/e2e/test_prepared_crash.py -k kill

# The long power-loss run: every crash ledger (tx publishes over 0-9-1 and 1.0 discharges with tx
# acks, publisher confirms, half and prepared transactions) across POWERLOSS_CUTS power cuts per
# mode (default 50) on the FUSE file system of tests/support/powerloss (docs/reliability.md);
# what each cut threw away is written to build/powerloss-report.txt.
POWERLOSS_LEDGERS := tests/e2e/test_crash.py tests/e2e/test_half_crash.py \
	tests/e2e/test_prepared_crash.py tests/integration/test_group_commit.py

powerloss: $(STAMP)
	@mkdir -p build && rm -f build/powerloss-report.txt
	POWERLOSS_CUTS=$${POWERLOSS_CUTS:-50} POWERLOSS_REPORT=$(CURDIR)/build/powerloss-report.txt \
		$(BIN)/pytest -q -rs -m powerloss $(POWERLOSS_LEDGERS)

# Every broken-network case: each fault of the proxy (stall, cut, trickle, vanish) at each point of
# 0-9-1 transactions, confirms and half decisions and 1.0 transfers and discharges (the suite runs
# a few of them; docs/reliability.md#broken-networks).
netfaults: $(STAMP)
	RABBITISH_NETFAULTS=full $(BIN)/pytest -q tests/integration/test_network_faults.py tests/bridge/test_amqp10_network_faults.py

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(MAKE) --no-print-directory typecheck

# mypy over the installed package names (rabbitish, rabbitish.bridge, rabbitish.cli). bridge/ and
# cli/ are installed as rabbitish.bridge and rabbitish.cli through the editable install's import
# hook, which mypy cannot follow (and mypy_path or explicit_package_bases would name them bridge.*
# and cli.*); so this lays the package out as installed, in symlinks under build/typecheck, and
# pyproject's [tool.mypy] checks `rabbitish` from there (mypy_path). An error in
# build/typecheck/rabbitish/bridge/x.py is one in bridge/x.py.
TYPECHECK_TREE := build/typecheck/rabbitish

typecheck: $(STAMP)
	@rm -rf $(TYPECHECK_TREE) && mkdir -p $(TYPECHECK_TREE)
	@for path in $(CURDIR)/rabbitish/*; do ln -s "$$path" $(TYPECHECK_TREE)/; done
	@ln -s $(CURDIR)/bridge $(TYPECHECK_TREE)/bridge && ln -s $(CURDIR)/cli $(TYPECHECK_TREE)/cli
	$(BIN)/mypy

clean:
	rm -rf $(VENV) build *.egg-info .mypy_cache
