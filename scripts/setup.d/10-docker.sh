#!/usr/bin/env bash
# Make sure a Docker daemon answers, then build the sandbox base image if it is missing.
# Idempotent: a running daemon and an existing image are left alone.
set -euo pipefail
cd "$(dirname "$0")/../.."

LOG=${HARNESS_DOCKERD_LOG:-/var/log/harness-dockerd.log}
WAIT_S=${HARNESS_DOCKERD_WAIT_S:-60}

if ! docker info >/dev/null 2>&1; then
  if [ "$(id -u)" != 0 ]; then
    echo "no Docker daemon answers and only root can start one here (sudo dockerd, or add yourself to the docker group)" >&2
    exit 1
  fi
  echo "starting dockerd (log: $LOG)"
  # setsid + nohup: the daemon must outlive this script and the shell that ran it. It must not keep
  # the caller's TMPDIR or HOME either (.ci/run removes its own when it ends): runc writes each exec's
  # files under TMPDIR, and with that folder gone every later `docker exec` fails.
  env -u TMPDIR HOME=/root setsid nohup dockerd >>"$LOG" 2>&1 </dev/null &
  pid=$!
  for _ in $(seq 1 "$WAIT_S"); do
    docker info >/dev/null 2>&1 && break
    kill -0 "$pid" 2>/dev/null || break  # it exited: no point in waiting
    sleep 1
  done
  if ! docker info >/dev/null 2>&1; then
    echo "dockerd did not come up (waited up to ${WAIT_S}s); last lines of $LOG:" >&2
    tail -n 20 "$LOG" >&2 || true
    exit 1
  fi
fi

PY=.venv/bin/python
[ -x "$PY" ] || PY=python3
"$PY" -m sandboxes.image
