"""`harness ab` over batches with one task in common: one pair has no spread, so its amounts get no interval,
which the table says in words and ab.json holds as null; nothing it writes holds NaN or Infinity."""

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


def test_one_pair_says_it_has_no_interval_and_writes_null(tmp_path):
    for batch, policy in (("a", "default"), ("b", "lean")):
        made = runner.invoke(
            app,
            ["run", "--task", "x", "--model", f"scripted:{SCRIPT}", "--policy", policy, "--out", str(tmp_path / batch)],
        )
        assert made.exit_code == 0, made.output
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
