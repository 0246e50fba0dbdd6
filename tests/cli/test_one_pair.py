"""One pair has no spread, so no interval: `harness ab` over batches with one task in common says so in its table
and holds null in ab.json, and `harness swe passk` over one instance says so too, rather than a zero-width
interval; nothing either writes holds NaN or Infinity."""

from __future__ import annotations

import json
import re
from pathlib import Path

from typer.testing import CliRunner

from cli.main import app

runner = CliRunner()
NOT_A_NUMBER = re.compile(r"\b(nan|inf|infinity)\b", re.IGNORECASE)
SCRIPT = Path(__file__).resolve().parents[2] / "examples" / "demo_script.yaml"


def strict_json(text: str) -> object:
    """JSON as the standard has it: a NaN or Infinity, which Python's json module writes and reads, is refused."""

    def refuse(constant: str) -> None:
        raise ValueError(f"{constant} is not JSON")

    return json.loads(text, parse_constant=refuse)


def batch(folder: Path, policy: str = "default") -> None:
    """A batch of one run of the same task."""
    made = runner.invoke(
        app, ["run", "--task", "x", "--model", f"scripted:{SCRIPT}", "--policy", policy, "--out", str(folder)]
    )
    assert made.exit_code == 0, made.output


def test_one_pair_says_it_has_no_interval_and_writes_null(tmp_path):
    batch(tmp_path / "a")
    batch(tmp_path / "b", "lean")
    result = runner.invoke(app, ["ab", str(tmp_path / "a"), str(tmp_path / "b"), "--out", str(tmp_path / "ab")])
    assert result.exit_code == 0, result.output
    rows = {line.split("│")[1].strip(): line for line in result.stdout.splitlines() if line.count("│") > 2}
    assert "n/a (one pair)" in rows["steps"] and "n/a (one pair)" in rows["prompt tokens"]
    assert not NOT_A_NUMBER.search(result.stdout)
    folder = tmp_path / "ab" / "ab-a-vs-b"
    data = strict_json((folder / "ab.json").read_text())
    assert isinstance(data, dict) and data["pairs"] == 1
    steps = next(m for m in data["metrics"] if m["name"] == "steps")
    assert steps["test"] == "none (one pair)" and steps["ci_low"] is None and steps["ratio_high"] is None
    html = (folder / "ab.html").read_text()
    assert "n/a (one pair)" in html and not NOT_A_NUMBER.search(html)


def test_pass_k_over_one_instance_says_it_has_no_interval(tmp_path):
    batch(tmp_path / "a")
    table = runner.invoke(app, ["swe", "passk", str(tmp_path / "a")])
    assert table.exit_code == 0, table.output
    rows = [line for line in table.stdout.splitlines() if line.startswith("│ pass")]
    assert len(rows) == 2 and all("n/a (one instance)" in row for row in rows)
    assert not NOT_A_NUMBER.search(table.stdout)
    as_json = runner.invoke(app, ["swe", "passk", str(tmp_path / "a"), "--json"])
    assert as_json.exit_code == 0, as_json.output
    data = strict_json(as_json.stdout)
    assert isinstance(data, dict)
    assert [(e["tasks"], e["value"], e["low"], e["high"]) for e in data["estimates"]] == [(1, 1.0, None, None)] * 2
