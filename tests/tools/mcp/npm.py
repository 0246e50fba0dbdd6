"""The MCP parts from npm that setup installs (scripts/setup.d/40-mcp-npm.sh): tests that need them skip,
saying why, where they are absent."""

from __future__ import annotations

from pathlib import Path

import pytest

NPM = Path(__file__).resolve().parents[3] / "scripts" / "npm" / "node_modules"
NODE = NPM / ".bin" / "node"
CONFORMANCE = NPM / ".bin" / "conformance"
EVERYTHING = NPM / "@modelcontextprotocol" / "server-everything" / "dist" / "index.js"

needs_npm = pytest.mark.skipif(
    not (NODE.exists() and EVERYTHING.exists() and CONFORMANCE.exists()),
    reason="the MCP npm packages are not installed: run scripts/setup.d/40-mcp-npm.sh (make system does)",
)
