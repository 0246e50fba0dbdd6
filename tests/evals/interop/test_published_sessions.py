"""`harness import` on real Claude Code sessions and OpenHands event streams (tests/fixtures/imports, sources in
its README). The figures asserted are read from the files themselves, as those tools wrote them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agent.journal.fold import fold
from agent.journal.store import read_events, read_run_info
from agent.models.pricing import load_prices
from cli.main import app
from core.events import Compacted
from evals.reports.load import load_run
from tests.evals.interop.test_published import published

runner = CliRunner()


def imported(path: Path, out: Path) -> Path:
    result = runner.invoke(app, ["import", str(path), "--out", str(out)])
    assert result.exit_code == 0, result.output
    return Path(result.output.split("run directory: ")[1].strip())


def summary(run_dir: Path) -> dict:
    return json.loads((run_dir / "summary.json").read_text())


def claude_code_figures(path: Path) -> dict:
    """What the session file says: its replies (one per API message id), their calls and Anthropic's usage, each
    message's last line holding its final count."""
    lines = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    main = [d for d in lines if not d.get("isSidechain")]
    lines = main if any(d.get("type") == "assistant" for d in main) else lines
    replies: dict[str, dict] = {}
    calls = 0
    for d in lines:
        m = d.get("message") or {}
        if d.get("type") != "assistant" or m.get("model") == "<synthetic>":
            continue
        replies[m["id"]] = m["usage"]
        calls += sum(b.get("type") == "tool_use" for b in m.get("content") or [])
    usage = replies.values()
    return {
        "replies": len(replies),
        "calls": calls,
        "prompt": sum(
            u["input_tokens"] + u["cache_read_input_tokens"] + u["cache_creation_input_tokens"] for u in usage
        ),
        "cached": sum(u["cache_read_input_tokens"] for u in usage),
        "cache_write": sum(u["cache_creation_input_tokens"] for u in usage),
        "completion": sum(u["output_tokens"] for u in usage),
        "compactions": [d["compactMetadata"] for d in lines if d.get("subtype") == "compact_boundary"],
        "first": lines[0].get("timestamp") or next(d["timestamp"] for d in lines if d.get("timestamp")),
    }


@pytest.mark.parametrize(
    "name", ["tool_heavy.jsonl", "agent-a2898e3.jsonl", "4d5611e5-241a-462a-8d15-5122611a9569.jsonl"]
)
def test_a_claude_code_session_keeps_its_replies_calls_and_anthropic_usage(name, tmp_path):
    path = published("claude-code") / name
    if not path.is_file():
        pytest.skip(f"{name} is not laid here; tests/fixtures/imports/README.md says where it comes from")
    want = claude_code_figures(path)
    run_dir = imported(path, tmp_path)
    s = summary(run_dir)
    assert s["steps"] == s["model_calls"] == want["replies"] and s["tool_calls_total"] == want["calls"]
    assert s["tokens"]["prompt"] == want["prompt"] and s["tokens"]["cached"] == want["cached"]
    assert s["tokens"]["cache_write"] == want["cache_write"] and s["tokens"]["completion"] == want["completion"]
    assert s["stop_reason"] == "not_recorded" and s["wall_s"] > 0
    info = read_run_info(run_dir)
    assert info.imported["format"] == "claude-code" and info.imported["timestamps"] is True
    assert info.model.startswith("claude-") and info.started_at
    compactions = [e for e in read_events(run_dir) if isinstance(e, Compacted)]
    assert [(c.trigger, c.tokens_before) for c in compactions] == [
        (f"claude-code: {m['trigger']}", m["preTokens"]) for m in want["compactions"]
    ]
    assert s["compactions"] == len(want["compactions"])


def test_a_compacted_session_resends_only_the_summary_after_its_compaction(tmp_path):
    """The session's compaction is where its prompts shrink: the harness's count of the rebuilt prompt falls with
    the provider's, instead of going on resending the conversation Claude Code dropped."""
    path = published("claude-code") / "4d5611e5-241a-462a-8d15-5122611a9569.jsonl"
    if not path.is_file():
        pytest.skip("the compacted session is not laid here; tests/fixtures/imports/README.md says where it comes from")
    steps = fold(read_events(imported(path, tmp_path))).steps
    [at] = [s.n for s in steps if s.compactions]
    before, after = steps[at - 1], steps[at]
    assert after.usage.prompt_tokens < before.usage.prompt_tokens / 2
    assert after.counted_tokens < before.counted_tokens / 2


def openhands_outputs(path: Path) -> dict[str, dict]:
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return {r["instance_id"]: r for r in rows}


def test_openhands_evaluation_output_gives_one_run_per_instance_with_its_usage_and_end(tmp_path):
    path = published("openhands") / "output.jsonl"
    if not path.is_file():
        pytest.skip("output.jsonl is not laid here; tests/fixtures/imports/README.md says where it comes from")
    result = runner.invoke(app, ["import", str(path), "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    batch = tmp_path / "import-output"
    runs = {read_run_info(d).task["id"]: d for d in batch.iterdir() if (d / "run.json").is_file()}
    outputs = openhands_outputs(path)
    assert set(runs) == set(outputs)
    for instance, row in outputs.items():
        s = summary(runs[instance])
        usages = row["metrics"]["token_usages"]
        # every response the metrics list is a reply, with the usage the provider reported for it
        assert s["model_calls"] == len(usages)
        assert s["tokens"]["prompt"] == row["metrics"]["accumulated_token_usage"]["prompt_tokens"]
        assert s["tokens"]["completion"] == row["metrics"]["accumulated_token_usage"]["completion_tokens"]
        actions = [e for e in row["history"] if e.get("source") == "agent" and e.get("tool_call_metadata")]
        assert s["tool_calls_total"] == len([e for e in actions if "action" in e])
        finished = any(e.get("action") == "finish" for e in row["history"])
        assert s["stop_reason"] == ("step_budget" if row["error"] else "submitted" if finished else "not_recorded")
        patch = (runs[instance] / "artifacts" / "model.patch").read_text()
        assert patch == row["test_result"]["git_patch"]
    assert "ponylang__ponyc-4595" in (batch / "predictions.jsonl").read_text()


def test_an_openhands_trajectory_list_reads_its_calls_and_their_results(tmp_path):
    path = published("openhands") / "basic.json"
    if not path.is_file():
        pytest.skip("basic.json is not laid here; tests/fixtures/imports/README.md says where it comes from")
    events = json.loads(path.read_text())
    run_dir = imported(path, tmp_path)
    steps = fold(read_events(run_dir)).steps
    calls = [c.name for s in steps for c in s.calls]
    assert calls == [
        e["tool_call_metadata"]["function_name"] for e in events if "action" in e and e.get("tool_call_metadata")
    ]
    observed = {o.call_id: o.text for s in steps for o in s.observations}
    for e in events:
        if "observation" in e and e.get("tool_call_metadata"):
            assert observed[e["tool_call_metadata"]["tool_call_id"]] == e["content"]
    assert summary(run_dir)["stop_reason"] == "submitted"


def test_drift_in_a_real_session_names_the_re_reads_that_followed_claude_codes_compaction(tmp_path):
    path = published("claude-code") / "4d5611e5-241a-462a-8d15-5122611a9569.jsonl"
    if not path.is_file():
        pytest.skip("the compacted session is not laid here; tests/fixtures/imports/README.md says where it comes from")
    run_dir = imported(path, tmp_path)
    [at] = [s.n for s in fold(read_events(run_dir)).steps if s.compactions]
    findings = [f for f in load_run(run_dir, load_prices()).findings if f.detector == "re_read"]
    after = [f for f in findings if f.after_compaction]
    assert after and all(f.step > at and f"compaction after step {at}" in f.detail for f in after)
    assert all(f.tokens > 0 for f in findings)
    md = runner.invoke(app, ["report", str(run_dir), "--format", "md"]).output
    assert f"{len(after)} re-reads followed a compaction" in md
