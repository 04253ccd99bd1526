# The two commands a new user types: `make run` and `make test`.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
DEVSTAMP := $(VENV)/.installed-dev
JSSTAMP  := tests/js/node_modules/.installed

.PHONY: run cluster test test-slow lint typecheck check bench clean venv dev

$(PY):
	@$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 11), "ksteward needs Python 3.11 or later"'
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip

$(STAMP): $(PY) pyproject.toml
	$(PY) -m pip install -q -e .
	@touch $@

$(DEVSTAMP): $(PY) pyproject.toml
	$(PY) -m pip install -q -e '.[dev]'
	@touch $@ $(STAMP)

$(JSSTAMP): tests/js/package.json
	cd tests/js && npm install --no-audit --no-fund --no-package-lock --loglevel=error
	@touch $@

venv: $(STAMP)
dev: $(DEVSTAMP) $(JSSTAMP)

run: $(STAMP)
	@mkdir -p data
	$(VENV)/bin/ksteward serve --config config/server.properties

# Optional: one controller and three brokers on loopback, data in ./cluster-data (`ksteward cluster --help`).
cluster: $(STAMP)
	$(VENV)/bin/ksteward cluster up

# Two pytest-xdist workers: one runs the Spark pipeline tests on one JVM, the other the unit and integration
# tests, which mostly wait on their servers (tests/conftest.py). TEST_WORKERS=0 runs the suite in this
# process, one test at a time.
# --durations: the 25 slowest tests at the end of the log, to keep the suite's time in view (README).
TEST_WORKERS ?= 2
test: dev
	$(PY) -m pytest -q -n $(TEST_WORKERS) --dist loadgroup --durations=25

# The long fault runs: every kill-and-restart test 20 times at seeded random points, and the Raft
# simulation over 100 seeds per scenario, and the drawn-input tests with more examples (docs/testing.md).
test-slow: dev
	KSTEWARD_FAULT_CYCLES=20 $(PY) -m pytest -q -s tests/integration/test_crash_safety.py \
		tests/integration/test_cluster_faults.py tests/integration/test_quorum_failover.py \
		tests/integration/test_combined_quorum.py \
		tests/pipeline/test_spark_standalone.py::test_an_audit_survives_the_loss_of_its_executor
	KSTEWARD_RAFT_SIM_SEEDS=100 $(PY) -m pytest -q tests/unit/raft/test_raft_simulation.py
	KSTEWARD_FUZZ_EXAMPLES=6000 $(PY) -m pytest -q tests/integration/test_fuzz_frames.py \
		tests/integration/test_fuzz_quorum.py
	KSTEWARD_DECIDE_EXAMPLES=200 $(PY) -m pytest -q tests/pipeline/test_decide.py

LINT_DIRS := $(wildcard src tests bench)

lint: dev
	$(VENV)/bin/ruff check $(LINT_DIRS)
	$(VENV)/bin/ruff format --check $(LINT_DIRS)

typecheck: dev
	$(VENV)/bin/mypy

check: lint typecheck test

bench: dev
	$(PY) -m bench.server
	$(PY) -m bench.authorizer
	$(PY) -m bench.acls
	$(PY) -m bench.topics
	$(PY) -m bench.configs
	$(PY) -m bench.pipeline
	$(PY) -m bench.forwarding
	$(PY) -m bench.catchup
	$(PY) -m bench.replication_lag
	$(PY) -m bench.metrics
	$(PY) -m bench.load
	$(PY) -m bench.stalls

clean:
	rm -rf $(VENV) tests/js/node_modules
