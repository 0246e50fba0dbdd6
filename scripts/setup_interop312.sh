#!/usr/bin/env bash
# Harbor's ATIF models, the reader that tests/evals/interop validates `harness export --format atif` with,
# and its task loader, which tests/evals/tasks reads the test tasks with, need Python >= 3.12, newer than the
# project's own: they get a venv of their own (VENV, default .venv-interop312). Only the models are needed,
# and they need only pydantic (and toml and pathspec, for the task models), so harbor is installed without
# its framework's dependencies (litellm, supabase, fastmcp...: about 470 MB and a minute); if a release ever
# needs more, the full install follows. Idempotent: a venv whose models import is left alone. Without a
# Python >= 3.12 it says so and exits 0: the ATIF validation tests then skip, saying why.
set -euo pipefail
cd "$(dirname "$0")/.."

VENV=${1:-.venv-interop312}
HARBOR=harbor==0.26.0
PROBE='from harbor.models.trajectories import Trajectory; from harbor.utils.trajectory_validator import TrajectoryValidator; from harbor.models.task.task import Task'

if [ -x "$VENV/bin/python" ] && "$VENV/bin/python" -c "$PROBE" 2>/dev/null; then
  touch "$VENV/.installed"
  exit 0
fi

# A pyenv shim answers `command -v` for versions it does not activate, so every candidate is run once.
new_enough() { "$1" -c 'import sys; sys.exit(sys.version_info < (3, 12))' 2>/dev/null; }
find_python() {
  local candidate version
  for candidate in python3.12 python3.13 python3.14; do
    if command -v "$candidate" >/dev/null && new_enough "$candidate"; then command -v "$candidate"; return; fi
  done
  if command -v pyenv >/dev/null; then
    for version in $(pyenv versions --bare 2>/dev/null | grep -E '^3\.[0-9]+\.[0-9]+$' | sort -V); do
      candidate="$(pyenv root)/versions/$version/bin/python3"
      if [ -x "$candidate" ] && new_enough "$candidate"; then echo "$candidate"; return; fi
    done
  fi
  return 1
}

if ! PY=$(find_python); then
  echo "no Python >= 3.12 here (python3.12 on PATH, or a pyenv version): the ATIF export tests will skip" >&2
  exit 0
fi
echo "installing $HARBOR's ATIF and task models into $VENV (Python: $PY)"
rm -rf "$VENV"
"$PY" -m venv "$VENV"
install=(.venv/bin/python scripts/uv.py pip install -q --python "$VENV/bin/python")  # the project venv's uv
"${install[@]}" --no-deps "$HARBOR"
"${install[@]}" 'pydantic>=2.14' 'toml>=0.10' 'pathspec>=1.0.3'
"$VENV/bin/python" -c "$PROBE" 2>/dev/null || "${install[@]}" "$HARBOR"
"$VENV/bin/python" -c "$PROBE"
touch "$VENV/.installed"
