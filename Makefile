# The two commands a newcomer needs: `make run` (the local stack) and `make test` (the whole suite).
# Both build .venv themselves on a fresh machine (Python 3.11+ with pip); `make clean` starts over.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test lint bench install clean

# Refuse an old Python before anything is created, with the fix in the message.
define CHECK_PYTHON
import sys
found = ".".join(map(str, sys.version_info[:3]))
sys.exit(0 if sys.version_info >= (3, 11) else
         f"memorybot needs Python 3.11 or newer; $(PYTHON) is {found}. "
         "Install one and name it, e.g.: make PYTHON=python3.12 run")
endef
export CHECK_PYTHON

# The stamp is written last: without it the install never finished (a failed download, an old
# Python), so .venv is rebuilt from scratch rather than patched.
$(STAMP): pyproject.toml
	@$(PYTHON) -c "$$CHECK_PYTHON"
	$(if $(wildcard $(STAMP)),,rm -rf $(VENV))
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip uv
	$(BIN)/uv pip install --python $(BIN)/python --quiet --compile-bytecode -e '.[dev,infra]'
	touch $(STAMP)

install: $(STAMP)

run: $(STAMP)
	$(BIN)/memorybot local

test: $(STAMP)
	$(BIN)/python -m pytest -q -p no:cacheprovider

# Lint, format and types (CI runs this before the tests).
lint: $(STAMP)
	$(BIN)/ruff check functions infra tests benchmarks
	$(BIN)/ruff format --check functions infra tests benchmarks
	$(BIN)/mypy

bench: $(STAMP)
	$(BIN)/python -m benchmarks

clean:
	rm -rf $(VENV) cdk.out
