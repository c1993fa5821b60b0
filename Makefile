# The two set-up commands of the README: `make demo` and `make test`. Both create .venv.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-$(shell cat pyproject.toml | cksum | cut -d' ' -f1)

.PHONY: demo test lint install clean

install: $(STAMP)

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; assert sys.version_info[:2] == (3, 11), "denpex needs Python 3.11"'
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	rm -f $(VENV)/.installed-*
	touch $@

demo: $(STAMP)
	$(BIN)/denpex diagnose examples/torchrun-bad-sample

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/denpex rules lint

# pytest exits 5 when it collects nothing; make treats any non-zero exit as failure.
# The corpus and held-out evaluations fail under the thresholds set from measured figures
# (evals/thresholds.json, evals/thresholds-heldout.json, evals/thresholds-silent.json).
test: $(STAMP) lint
	$(BIN)/python -m pytest
	$(BIN)/denpex eval evals/corpus --unseen --check evals/thresholds.json
	$(BIN)/denpex eval evals/heldout --check evals/thresholds-heldout.json
	$(BIN)/denpex eval evals/silent/cases --check evals/thresholds-silent.json

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .ruff_cache
