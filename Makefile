# The README's two commands: `make run` and `make test`. Both work on a fresh clone
# with only Python 3.11+ installed: they create .venv and install what each needs.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# Two stamps: serving needs only the runtime dependencies (a quick `make run` on a fresh
# clone); lint, types, tests and benches need the [test] extra (mypy, Playwright, LangChain).
RUNTIME_STAMP := $(VENV)/.installed-runtime
STAMP := $(VENV)/.installed
PACKAGES := proxy ticketing auth embedded_github
# agent-protocol-client 1.1.0 (the Agent Protocol's generated client, which agbenchmark
# drives) pins pydantic<2, which the openai client cannot share: the tests run it as a
# process from a venv of its own.
AP_CLIENT_VENV := .venv-apclient
AP_CLIENT_STAMP := $(AP_CLIENT_VENV)/.installed

.PHONY: run test lint typecheck pytest vscode install clean bench

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(RUNTIME_STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e .
	touch $(RUNTIME_STAMP)

# The [test] extra includes the runtime, so it stamps both.
$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $(RUNTIME_STAMP) $(STAMP)

$(AP_CLIENT_STAMP): Makefile
	$(PYTHON) -m venv $(AP_CLIENT_VENV)
	$(AP_CLIENT_VENV)/bin/python -m pip install --quiet 'agent-protocol-client==1.1.0'
	touch $(AP_CLIENT_STAMP)

# newman, for the Agent Protocol's Postman suite (tests/samples/agent_protocol/), from npm.
NEWMAN := node_modules/.bin/newman
$(NEWMAN): package.json
	npm install --no-audit --no-fund --silent
	touch $(NEWMAN)

install: $(STAMP) $(AP_CLIENT_STAMP) $(NEWMAN)

run: $(RUNTIME_STAMP)
	$(BIN)/ticketproxy serve

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(STAMP)
	$(BIN)/mypy $(PACKAGES)

# Some tests drive Debian programs for real: redis-server, PostgreSQL, Chromium, nginx and
# docker-compose. Missing, they are skipped with the apt-get command that installs them
# (under CI=true they fail instead: .ci/run installs them first).
pytest: $(STAMP) $(AP_CLIENT_STAMP) $(NEWMAN)
	$(BIN)/pytest -q

# The VS Code extension (editors/vscode): tsc, its handler tests against the `ticketproxy` of
# this .venv (started as `ticketproxy serve` on the embedded GitHub), and the .vsix.
VSCODE_DIR := editors/vscode

vscode: $(RUNTIME_STAMP)
	@if [ ! -d $(VSCODE_DIR)/node_modules ]; then \
		cd $(VSCODE_DIR) && npm ci --no-audit --no-fund --silent; \
	fi
	cd $(VSCODE_DIR) && PATH="$(CURDIR)/$(BIN):$$PATH" npm test

test: lint typecheck pytest vscode

# Every benchmark runs, even after one misses its target; the target fails at the end.
BENCHES := poll_cost concurrent_waits answer_latency retry_throughput creation_budget desk_cost write_cost tree_body replica_retry shared_write_budget replica_waits

bench: $(STAMP)
	@failed=""; for name in $(BENCHES); do \
		echo "== python -m bench.$$name"; \
		$(BIN)/python -m bench.$$name || failed="$$failed $$name"; \
		echo; \
	done; \
	echo "== python -m bench.shared_write_budget --redis"; \
	$(BIN)/python -m bench.shared_write_budget --redis || failed="$$failed shared_write_budget-redis"; \
	if [ -n "$$failed" ]; then echo "bench: targets missed by:$$failed"; exit 1; fi

clean:
	rm -rf $(VENV) $(AP_CLIENT_VENV) node_modules .mypy_cache .ruff_cache .pytest_cache \
		$(VSCODE_DIR)/node_modules $(VSCODE_DIR)/out $(VSCODE_DIR)/*.vsix
