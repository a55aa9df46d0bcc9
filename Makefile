# ADE Platform. The README's quick start is `make demo` then `make test`.
SHELL := /bin/bash
UV := $(shell command -v uv 2>/dev/null || echo "python3 -m uv")
VENV := .venv
PY := $(VENV)/bin/python
TOOLS := .tools
# The snow CLI lives in its own virtualenv (its pins conflict with ours); only its entry point is on PATH.
export PATH := $(CURDIR)/$(TOOLS)/bin:$(PATH)

.PHONY: setup demo demo-full test test-slow bench lint format snapshot clean orchestrators oidc-provider ts-client

# Bytecode is compiled once here: where PYTHONDONTWRITEBYTECODE is set, every `ade mcp` start would otherwise
# compile its imports from source (seconds of the gateway's cold start).
$(VENV)/.synced: pyproject.toml uv.lock
	@command -v uv >/dev/null 2>&1 || python3 -m uv --version >/dev/null 2>&1 || python3 -m pip install --quiet uv
	$(UV) sync --frozen --extra test --compile-bytecode
	@touch $@

$(TOOLS)/bin/snow:
	@command -v uv >/dev/null 2>&1 || python3 -m uv --version >/dev/null 2>&1 || python3 -m pip install --quiet uv
	$(UV) venv --quiet --allow-existing --python 3.11 $(TOOLS)/snowcli
	$(UV) pip install --quiet --python $(TOOLS)/snowcli/bin/python "snowflake-cli>=3.10"
	@mkdir -p $(TOOLS)/bin && ln -sf ../snowcli/bin/snow $(TOOLS)/bin/snow

# The peer the warehouse benchmark compares against, in its own virtualenv (benchmarks/warehouse/peer.py).
$(TOOLS)/motherduck/bin/mcp-server-motherduck:
	@command -v uv >/dev/null 2>&1 || python3 -m uv --version >/dev/null 2>&1 || python3 -m pip install --quiet uv
	$(UV) venv --quiet --allow-existing --python 3.11 $(TOOLS)/motherduck
	$(UV) pip install --quiet --python $(TOOLS)/motherduck/bin/python "mcp-server-motherduck>=1.1"

# The peer the snowfakery benchmark compares against (benchmarks/snowfakery/peer.py), in its own virtualenv. It
# needs Python 3.12+ (SNOWFAKERY_MCP_PYTHON: a version uv finds or downloads, or an interpreter's path) and a
# fastmcp 2: under fastmcp 3+ its SIGALRM timeout fails every call, which fastmcp runs off the main thread.
SNOWFAKERY_MCP_PYTHON ?= 3.12
$(TOOLS)/snowfakery-mcp/bin/snowfakery-mcp:
	@command -v uv >/dev/null 2>&1 || python3 -m uv --version >/dev/null 2>&1 || python3 -m pip install --quiet uv
	$(UV) venv --quiet --allow-existing --python $(SNOWFAKERY_MCP_PYTHON) $(TOOLS)/snowfakery-mcp
	$(UV) pip install --quiet --python $(TOOLS)/snowfakery-mcp/bin/python "snowfakery-mcp==0.0.6" "fastmcp>=2.14.3,<3"

# Orchestrator servers for the slow tests (issue 12), each in its own virtualenv: their pins conflict with ours.
# Prefect 3.4 fails to start with fastapi 0.116+.
$(TOOLS)/airflow/bin/airflow:
	@command -v uv >/dev/null 2>&1 || python3 -m uv --version >/dev/null 2>&1 || python3 -m pip install --quiet uv
	$(UV) venv --quiet --allow-existing --python 3.11 $(TOOLS)/airflow
	$(UV) pip install --quiet --python $(TOOLS)/airflow/bin/python "apache-airflow>=3.0,<3.2" "apache-airflow-providers-openlineage>=2.6,<3"

$(TOOLS)/prefect/bin/prefect:
	@command -v uv >/dev/null 2>&1 || python3 -m uv --version >/dev/null 2>&1 || python3 -m pip install --quiet uv
	$(UV) venv --quiet --allow-existing --python 3.11 $(TOOLS)/prefect
	$(UV) pip install --quiet --python $(TOOLS)/prefect/bin/python "prefect>=3.4,<3.5" "fastapi<0.116" "importlib-metadata"

orchestrators: $(TOOLS)/airflow/bin/airflow $(TOOLS)/prefect/bin/prefect  ## Airflow 3 + Prefect 3 for the slow tests (idempotent)

# The OpenID provider of the sign-in tests (tests/auth): Node's oidc-provider, pinned by its package-lock.json, in a
# folder the tests own. Without npm the tests that need it skip and say why.
OIDC_DIR := tests/auth/oidc_provider
$(OIDC_DIR)/node_modules/.installed: $(OIDC_DIR)/package.json $(OIDC_DIR)/package-lock.json
	@if command -v npm >/dev/null 2>&1; then \
		npm ci --prefix $(OIDC_DIR) --no-audit --no-fund --loglevel=error && touch $@; \
	else echo "npm not found: the sign-in tests against a real OpenID provider will skip"; fi

oidc-provider: $(OIDC_DIR)/node_modules/.installed  ## the OpenID provider for the sign-in tests (idempotent)

# The second MCP client of the protocol tests (tests/clients): the TypeScript SDK's, v2 and v1, pinned by its
# package-lock.json. Without npm those tests skip and say why.
TS_CLIENT_DIR := tests/clients/ts
$(TS_CLIENT_DIR)/node_modules/.installed: $(TS_CLIENT_DIR)/package.json $(TS_CLIENT_DIR)/package-lock.json
	@if command -v npm >/dev/null 2>&1; then \
		npm ci --prefix $(TS_CLIENT_DIR) --no-audit --no-fund --loglevel=error && touch $@; \
	else echo "npm not found: the tests with the TypeScript MCP client will skip"; fi

ts-client: $(TS_CLIENT_DIR)/node_modules/.installed  ## the TypeScript MCP client for the protocol tests (idempotent)

setup: $(VENV)/.synced $(TOOLS)/bin/snow  ## create the environment (idempotent)

demo: setup  ## build the demo and serve the Dagster UI + MCP gateway
	$(PY) -m ade_platform.emulators.demo -- $(VENV)/bin/ade dev --materialize

demo-full: setup orchestrators  ## the demo, plus Airflow 3 and Prefect 3 on loopback running DAGs/flows that build dbt_demo
	$(PY) -m ade_platform.emulators.demo --full -- $(VENV)/bin/ade dev --materialize

test: setup ts-client  ## the default test suite (everything but the few tests marked slow)
	$(PY) -m pytest -q --durations=15

test-slow: setup orchestrators oidc-provider ts-client  ## the tests marked slow: `ade dev` end to end, the canary corpus through the real snow CLI, sign-in against a real OpenID provider
	$(PY) -m pytest -q -m slow --durations=15

bench: setup $(TOOLS)/prefect/bin/prefect $(TOOLS)/motherduck/bin/mcp-server-motherduck $(TOOLS)/snowfakery-mcp/bin/snowfakery-mcp  ## performance figures (benchmarks/README.md)
	@# The project is installed editable: uv compiles only site-packages, so compile our own modules too, or
	@# under PYTHONDONTWRITEBYTECODE every spawned `ade mcp` recompiles them from source.
	$(PY) -m compileall -q ade_platform mcp_bridge
	$(PY) -m benchmarks.run

lint: setup
	$(VENV)/bin/ruff check . && $(VENV)/bin/ruff format --check .

format: setup
	$(VENV)/bin/ruff check --fix . && $(VENV)/bin/ruff format .

snapshot: setup  ## regenerate the published tool-surface snapshot after changing tools
	$(PY) -m tests.contract.update_snapshot

clean:
	rm -rf .ade dbt_demo/target dbt_demo/logs
