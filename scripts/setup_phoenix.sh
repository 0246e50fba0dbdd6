#!/usr/bin/env bash
# Arize Phoenix, the OTLP backend tests/agent/test_telemetry_backend.py sends runs' spans to and reads them back
# from, in a venv of its own (VENV, default .venv-phoenix): its dependencies (SQLAlchemy, gRPC, pandas,
# strawberry...) stay out of the project's venv. Pinned, so a new release cannot change what passes.
# Idempotent: a venv whose `phoenix` runs is left alone. The first install resolves a large dependency tree, with
# the project venv's uv (scripts/uv.py; half a minute from an empty cache, where pip took minutes).
set -euo pipefail
cd "$(dirname "$0")/.."

VENV=${1:-.venv-phoenix}
PHOENIX=arize-phoenix==20.26.1

if [ -x "$VENV/bin/phoenix" ] && "$VENV/bin/python" -c 'import phoenix' 2>/dev/null; then
  touch "$VENV/.installed"
  exit 0
fi
python3 -m venv "$VENV"
.venv/bin/python scripts/uv.py pip install -q --python "$VENV/bin/python" "$PHOENIX"  # the project venv's uv
touch "$VENV/.installed"
