# The two commands a newcomer needs: `make run` (the local stack) and `make test` (the whole suite).
# Both build .venv themselves on a fresh machine (Python 3.11+ with pip); `make clean` starts over.
# `make run` installs only what running needs (the runtime and moto's DynamoDB server); `make test`
# adds the test, lint and CDK toolchain.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
RUN_STAMP := $(VENV)/.installed-run
STAMP := $(VENV)/.installed
# Test workers: the suite's modules spread over this many processes (`make test WORKERS=1`: one).
WORKERS ?= 2

.PHONY: run test test-thorough lint bench install clean

# Refuse an old Python before anything is created, with the fix in the message.
define CHECK_PYTHON
import sys
found = ".".join(map(str, sys.version_info[:3]))
sys.exit(0 if sys.version_info >= (3, 11) else
         f"memorybot needs Python 3.11 or newer; $(PYTHON) is {found}. "
         "Install one and name it, e.g.: make PYTHON=python3.12 run")
endef
export CHECK_PYTHON

# Each stamp is written last: with neither, the install never finished (a failed download, an old
# Python), so .venv is rebuilt from scratch rather than patched.
$(RUN_STAMP): pyproject.toml
	@$(PYTHON) -c "$$CHECK_PYTHON"
	$(if $(wildcard $(RUN_STAMP) $(STAMP)),,rm -rf $(VENV))
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip uv
	$(BIN)/uv pip install --python $(BIN)/python --quiet --compile-bytecode -e '.[local]'
	touch $(RUN_STAMP)

$(STAMP): $(RUN_STAMP)
	$(BIN)/uv pip install --python $(BIN)/python --quiet --compile-bytecode -e '.[local,dev,infra]'
	touch $(STAMP)

install: $(STAMP)

# `make run PORT=8788` for a second stack beside the first (0: any free port).
run: $(RUN_STAMP)
	$(BIN)/memorybot local$(if $(PORT), --port $(PORT))

# Each test module runs whole on one worker (--dist loadfile), so a module's fixtures (a local
# stack, a moto server) start once; the CDK synth is shared by all workers (tests/infra/conftest.py).
test: $(STAMP)
	$(BIN)/python -m pytest -q -p no:cacheprovider -n $(WORKERS) --dist loadfile

# The property tests (Hypothesis) with ten times the examples: slower, run by CI after `make test`.
test-thorough: $(STAMP)
	HYPOTHESIS_PROFILE=thorough $(BIN)/python -m pytest -q -p no:cacheprovider -n $(WORKERS) --dist loadfile -m hypothesis

# Lint, format and types (CI runs this before the tests).
lint: $(STAMP)
	$(BIN)/ruff check functions infra tests benchmarks
	$(BIN)/ruff format --check functions infra tests benchmarks
	$(BIN)/mypy

bench: $(STAMP)
	$(BIN)/python -m benchmarks

clean:
	rm -rf $(VENV) cdk.out
