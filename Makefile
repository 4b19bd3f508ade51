# The two commands a newcomer needs: `make run` (the local stack) and `make test` (the whole suite).
# Both build .venv themselves on a fresh machine (Python 3.11+ with pip).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test bench install clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip uv
	$(BIN)/uv pip install --python $(BIN)/python --quiet --compile-bytecode -e '.[dev,infra]'
	touch $(STAMP)

install: $(STAMP)

run: $(STAMP)
	$(BIN)/memorybot local

test: $(STAMP)
	$(BIN)/python -m pytest -q -p no:cacheprovider

bench: $(STAMP)
	$(BIN)/python -m benchmarks

clean:
	rm -rf $(VENV) cdk.out
