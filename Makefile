# Two commands do all set-up on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin

.PHONY: demo test lint bench peer peer-pg plain chromium inspector

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	# torch first, pinned: a CPU build (on this project's machines it comes from local disk);
	# an unpinned torch would pull a multi-GB CUDA build.
	$(BIN)/pip install -q "torch==2.13.0"
	$(BIN)/pip install -q -e ".[dev,local]"
	touch $@

demo: $(VENV)/.installed
	$(BIN)/sgam replay

# The browser tests (tests/test_ui_browser.py) drive the system's Chromium through Playwright's
# Python package; Playwright's own browser download needs the network, Debian's package does not.
chromium:
	command -v chromium >/dev/null || (apt-get update -qq && apt-get install -y -qq chromium)

# The MCP project's inspector, a client we did not write, driven in its CLI mode by
# tests/test_mcp_inspector.py (which looks for it under the venv). Pinned; it declares
# node >= 22 but its CLI mode runs on the node 20 these machines have.
INSPECTOR := $(VENV)/mcp-inspector/node_modules/.bin/mcp-inspector

$(INSPECTOR):
	npm install --prefix $(VENV)/mcp-inspector --no-audit --no-fund --silent \
		@modelcontextprotocol/inspector@2.12.0

inspector: $(VENV)/.installed $(INSPECTOR)

test: $(VENV)/.installed chromium inspector
	$(BIN)/ruff check .
	$(BIN)/lint-imports
	$(BIN)/python -m pytest -q

bench: $(VENV)/.installed
	$(BIN)/python benchmarks/bench_store.py --quick

peer: $(VENV)/.installed
	$(BIN)/python ../shared/tools/peer_suite.py $(CURDIR)/$(BIN)/python 'from sgam_store import SGAMStore as SqliteStore'

# The same suite on the PostgreSQL engine (embedded server, a fresh database per store).
peer-pg: $(VENV)/.installed
	$(BIN)/python ../shared/tools/peer_suite.py $(CURDIR)/$(BIN)/python 'import sys; sys.path.insert(0, "$(CURDIR)/tests"); from peer_postgres import PostgresSGAMStore as SqliteStore' \
		--deselect tests/test_store.py::test_vector_store_initialization  # reads sqlite_master

# `pip install .` without extras, in a fresh venv: `import sgam_store` and README's first
# example must work with the core dependencies alone (CI runs this before `make test`).
plain:
	rm -rf .venv-plain
	$(PYTHON) -m venv .venv-plain
	.venv-plain/bin/pip install -q .
	cd "$$(mktemp -d)" && $(CURDIR)/.venv-plain/bin/python $(CURDIR)/.ci/first_example.py
	# ...and `sgam` without the cli extra names it instead of failing with a traceback
	! .venv-plain/bin/sgam stats --db none.db 2> .venv-plain/sgam.err
	grep -q "pip install 'sgam-store\[cli\]'" .venv-plain/sgam.err
