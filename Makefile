# Every target creates .venv when missing and installs the project into it first.
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp

.PHONY: run test test-slow lint bench demo cluster clean

$(STAMP): pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q --disable-pip-version-check -e '.[server,test]'
	touch $(STAMP)

run: $(STAMP)
	$(VENV)/bin/sessionquery serve --sample-corpus

demo: $(STAMP)
	$(VENV)/bin/sessionquery demo

# compose.yaml's topology as local processes: 3 clustered nats-servers, 2 workers, seeder, load.
cluster: $(STAMP)
	$(PY) -m deploy.local_cluster --seconds 30 --requests 2000

test: $(STAMP)
	$(VENV)/bin/pytest -q

test-slow: $(STAMP)
	$(VENV)/bin/pytest -q -m slow

lint: $(STAMP)
	$(VENV)/bin/ruff check contracts worker tests bench deploy
	$(VENV)/bin/ruff format --check contracts worker tests bench deploy
	$(VENV)/bin/mypy
	$(VENV)/bin/mypy deploy bench tests

bench: $(STAMP)
	$(PY) -m bench.store
	$(PY) -m bench.ingest
	$(PY) -m bench.tools

clean:
	rm -rf $(VENV) .sessionquery .pytest_cache .mypy_cache
