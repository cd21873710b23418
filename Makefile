# Every target creates .venv when missing and installs the project into it first:
# run, demo, cluster and bench install the worker and nats-server only; test and lint add
# the test extras.
VENV ?= .venv
PY := $(VENV)/bin/python
# Where the install stamps live (the quick-start test points it elsewhere to reuse a venv).
STAMPS ?= $(VENV)
RUN_STAMP := $(STAMPS)/.installed-run
TEST_STAMP := $(STAMPS)/.installed-test

.PHONY: run test test-slow lint bench demo ui cluster asyncapi ui-screenshots clean record-fixtures

$(RUN_STAMP): pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q --disable-pip-version-check -e '.[server]'
	touch $(RUN_STAMP)

$(TEST_STAMP): pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q --disable-pip-version-check -e '.[server,test]'
	touch $(TEST_STAMP) $(RUN_STAMP)

run: $(RUN_STAMP)
	$(VENV)/bin/sessionquery serve --sample-corpus

demo: $(RUN_STAMP)
	$(VENV)/bin/sessionquery demo

# sessionquery ui against the worker make run started (NATS_URL when it printed another URL).
ui: $(RUN_STAMP)
	$(VENV)/bin/sessionquery ui

# compose.yaml's topology as local processes: 3 clustered nats-servers, 2 workers, seeder, load.
cluster: $(RUN_STAMP)
	$(PY) -m deploy.local_cluster --seconds 30 --requests 2000 --workers 4 --shards '0-7;0-7;8-15;8-15'

# Two processes (pytest-xdist), one test file at a time each (--dist loadfile, so what a
# module's tests share is built once), each with its own nats-server: the suite mostly waits
# on worker and writer processes, so two overlap well on CI's two cores (bench/HISTORY.md,
# "Suite time"). With NATS_URL set both would share that server, where the tests that ask
# every worker by service name ($SRV.PING, $SRV.STATS) could hear the other's: one process.
TEST_PROCESSES ?= $(if $(NATS_URL),0,2)
test: $(TEST_STAMP)
	$(VENV)/bin/pytest -q -n $(TEST_PROCESSES) --dist loadfile

test-slow: $(TEST_STAMP)
	$(VENV)/bin/pytest -q -m slow

lint: $(TEST_STAMP)
	$(VENV)/bin/ruff check contracts worker tests bench deploy
	$(VENV)/bin/ruff format --check contracts worker tests bench deploy
	$(VENV)/bin/mypy
	$(VENV)/bin/mypy deploy bench tests

# tests/importers/recorded/: session files the real agents write on a synthetic task, against a
# scripted model server, offline (a network namespace with only the loopback: needs unshare and
# ip). Installs the agents into /tmp/sq-agents; not part of test. AGENTS="claude-code" for some.
AGENTS ?=
record-fixtures: $(TEST_STAMP)
	$(PY) -m tests.recording.record $(AGENTS)

# docs/asyncapi.yaml is generated from the contract's models (a test checks it is current).
asyncapi: $(TEST_STAMP)
	$(PY) -m worker.asyncapi > docs/asyncapi.yaml

# docs/images/ui-*.png: sessionquery ui's pages over the sample corpus (needs /usr/bin/chromium).
ui-screenshots: $(TEST_STAMP)
	$(PY) -m bench.ui_screenshots --out docs/images

bench: $(RUN_STAMP)
	$(PY) -m bench.store
	$(PY) -m bench.ingest
	$(PY) -m bench.tools

clean:
	rm -rf $(VENV) .sessionquery .pytest_cache .mypy_cache
