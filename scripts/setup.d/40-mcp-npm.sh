#!/usr/bin/env bash
# The MCP parts from npm that tests and benchmarks use: @modelcontextprotocol/conformance (the official
# conformance suite, which needs Node.js 22: npm's `node` package brings it), and
# @modelcontextprotocol/server-everything. Pinned by scripts/npm/package-lock.json; installed into
# scripts/npm/node_modules. Idempotent: reinstalls only when the lock file changed.
set -euo pipefail
cd "$(dirname "$0")/../npm"

if ! command -v npm >/dev/null; then
  echo "npm is missing (apt-get install nodejs npm); the MCP conformance tests will be skipped" >&2
  exit 0
fi
stamp=node_modules/.harness-installed
if [ -f "$stamp" ] && [ "$stamp" -nt package-lock.json ] && [ -x node_modules/.bin/node ]; then
  exit 0
fi
echo "installing the MCP conformance suite and servers from npm (scripts/npm)"
npm ci --no-audit --no-fund --loglevel=error
node_modules/.bin/node --version >/dev/null  # the `node` package's install step fetched the binary
touch "$stamp"
