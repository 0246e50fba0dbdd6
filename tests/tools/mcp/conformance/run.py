"""Every client scenario of @modelcontextprotocol/conformance against the harness (client.py), one at a time.

The suite's own `--suite` runs every scenario at once; on a 2-core machine the
client processes then miss the suite's 30 s timeout. Here each scenario runs
alone, on each wire it is defined for: the 2025-11-25 handshake leg, the
2026-07-28 stateless leg, and the extension scenarios at the suite's default.
Writes one JSON line per (leg, scenario) with its checks, and prints a table.

    .venv/bin/python tests/tools/mcp/conformance/run.py [--out FILE] [--leg 2025-11-25] [SCENARIO...]
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[4]
BIN = ROOT / "scripts" / "npm" / "node_modules" / ".bin"
CLIENT = Path(__file__).resolve().parent / "client.py"
LEGS = ("2025-11-25", "2026-07-28", "extension")
_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def suite(*args: str, timeout_s: float = 180) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(BIN / "node"), str(BIN / "conformance"), *args], capture_output=True, text=True, timeout=timeout_s
    )


def scenarios(leg: str) -> list[str]:
    """The client scenarios defined for a leg: a spec version's, or the extension ones."""
    listed = _ANSI.sub("", suite("list", "--client").stdout)
    found = []
    for line in listed.splitlines():
        match = re.match(r"\s+- (\S+) \[([^\]]*)\]", line)
        if match and (leg in match.group(2).split(",")):
            found.append(match.group(1))
    return found


def run_one(scenario: str, leg: str, timeout_ms: int = 60_000) -> dict:
    """One scenario on one leg: the suite's verdict and each of its checks."""
    with tempfile.TemporaryDirectory() as out:
        version = [] if leg == "extension" else ["--spec-version", leg]
        started = time.monotonic()
        command = ["client", "--command", f"{sys.executable} {CLIENT}", "--scenario", scenario, *version]
        try:
            done = suite(*command, "--timeout", str(timeout_ms), "-o", out, timeout_s=timeout_ms / 1000 + 60)
        except subprocess.TimeoutExpired as e:  # the suite itself hung past its own timeout: a failed run, said so
            said = "".join(
                o.decode(errors="replace") if isinstance(o, bytes) else o or "" for o in (e.stdout, e.stderr)
            )
            done = subprocess.CompletedProcess(
                e.cmd, 124, f"the suite did not finish within {e.timeout:g} s\n{said}", ""
            )
        checks = []
        for path in Path(out).rglob("checks.json"):
            checks += [
                {"id": c["id"], "status": c["status"], "error": c.get("errorMessage")}
                for c in json.loads(path.read_text())
                if c.get("status") in ("SUCCESS", "FAILURE", "WARNING")
            ]
        failed = [c for c in checks if c["status"] == "FAILURE"]
        return {
            "leg": leg,
            "scenario": scenario,
            "passed": done.returncode == 0 and not failed,
            "exit": done.returncode,
            "checks": checks,
            "seconds": round(time.monotonic() - started, 1),
            "tail": _ANSI.sub("", done.stdout + done.stderr)[-1500:] if done.returncode else "",
        }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("names", nargs="*", help="scenarios to run; default: every one of each leg")
    parser.add_argument("--leg", action="append", choices=LEGS, help="default: every leg")
    parser.add_argument("--out", type=Path, help="JSON lines, one per scenario and leg")
    args = parser.parse_args()
    rows = []
    for leg in args.leg or LEGS:
        for scenario in args.names or scenarios(leg):
            row = run_one(scenario, leg)
            rows.append(row)
            bad = [c["id"] for c in row["checks"] if c["status"] != "SUCCESS"]
            print(
                f"{leg:11} {scenario:42} {'PASS' if row['passed'] else 'FAIL'} {row['seconds']:5.1f}s {' '.join(bad)}"
            )
            if args.out:
                with args.out.open("a") as f:
                    f.write(json.dumps(row) + "\n")
    passed = sum(r["passed"] for r in rows)
    print(f"{passed} of {len(rows)} scenario runs passed")
    return 0 if passed == len(rows) else 1


if __name__ == "__main__":
    sys.exit(main())
