"""Small trajectories in each format `harness import` reads, shaped as their harnesses write them (the real
published files are in tests/fixtures/imports; these cover what those lack, such as mini-swe-agent v2, and
let each test say exactly what it expects). Every builder takes the instance id, so two builds pair up."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path
from typing import Any

SYSTEM = "You are a helpful assistant that can interact multiple times with a computer shell."
TASK = "<pr_description>\nFix the off-by-one in counter.py.\n</pr_description>"
PATCH = "diff --git a/counter.py b/counter.py\n--- a/counter.py\n+++ b/counter.py\n@@ -1 +1 @@\n-n = 0\n+n = 1\n"


def openrouter_response(prompt: int, cached: int, completion: int, reasoning: int, cost: float) -> dict[str, Any]:
    return {
        "provider": "Google",
        "model": "google/gemini-3-pro-preview",
        "choices": [{"finish_reason": "stop", "message": {"role": "assistant", "reasoning": "Thinking it over."}}],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "cost": cost,
            "prompt_tokens_details": {"cached_tokens": cached},
            "completion_tokens_details": {"reasoning_tokens": reasoning},
        },
    }


def mini_v1(instance_id: str = "repo__repo-1", submitted: bool = True) -> dict[str, Any]:
    """Text-based: a listing, a failing test, a reply with two blocks (a format error), the fix, the submission."""

    def said(text: str, prompt: int, cost: float) -> dict[str, Any]:
        response = openrouter_response(prompt, prompt // 2, 40, 10, cost)
        return {"role": "assistant", "content": text, "extra": {"response": response}}

    messages = [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": TASK},
        said("THOUGHT: look first.\n\n```bash\nls\n```", 1000, 0.001),
        {"role": "user", "content": "<returncode>0</returncode>\n<output>\ncounter.py\n</output>"},
        said("THOUGHT: run it.\n\n```bash\npython -m pytest\n```", 1100, 0.002),
        {"role": "user", "content": "<returncode>1</returncode>\n<output>\n1 failed\n</output>"},
        said("Two at once:\n\n```bash\nsed -i s/0/1/ counter.py\n```\n\n```bash\npytest\n```", 1200, 0.003),
        {"role": "user", "content": "Please always provide EXACTLY ONE action in triple backticks, found 2 actions."},
        said("THOUGHT: fix it.\n\n```bash\nsed -i s/0/1/ counter.py\n```", 1300, 0.004),
        {"role": "user", "content": "<returncode>0</returncode>\n<output>\n</output>"},
        said("THOUGHT: submit.\n\n```bash\necho COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && git diff\n```", 1400, 0.005),
        {"role": "user", "content": PATCH if submitted else ""},
    ]
    return {
        "info": {
            "exit_status": "Submitted" if submitted else "LimitsExceeded",
            "submission": PATCH if submitted else "",
            "model_stats": {"instance_cost": 0.015, "api_calls": 5},
            "mini_version": "1.15.0",
            "config": {"model": {"model_name": "google/gemini-3-pro-preview"}, "agent": {"step_limit": 5}},
        },
        "messages": messages,
        "trajectory_format": "mini-swe-agent-1",
        "instance_id": instance_id,
    }


def mini_v2_toolcall(instance_id: str = "repo__repo-1") -> dict[str, Any]:
    """Tool calling, as mini-swe-agent 2.x writes it: tool_calls answered by role: tool, an exit message."""

    def said(n: int, command: str, prompt: int) -> dict[str, Any]:
        return {
            "role": "assistant",
            "content": f"Step {n}.",
            "tool_calls": [
                {
                    "id": f"call_{n}",
                    "type": "function",
                    "function": {"name": "bash", "arguments": json.dumps({"command": command})},
                }
            ],
            "extra": {
                "response": {
                    "model": "claude-sonnet-4-5-20250929",
                    "choices": [{"finish_reason": "tool_calls", "message": {"reasoning_content": f"Why {n}."}}],
                    "usage": {
                        "prompt_tokens": prompt,
                        "completion_tokens": 30,
                        "cache_creation_input_tokens": 50,
                        "prompt_tokens_details": {"cached_tokens": prompt - 100},
                        "completion_tokens_details": {"reasoning_tokens": 5},
                    },
                },
                "cost": 0.01 * n,
                "timestamp": 1_760_000_000.0 + 10 * n,
            },
        }

    def output(n: int, text: str, code: int) -> dict[str, Any]:
        body = f"<returncode>{code}</returncode>\n<output>\n{text}\n</output>"
        return {
            "role": "tool",
            "tool_call_id": f"call_{n}",
            "content": body,
            "extra": {"returncode": code, "timestamp": 1_760_000_005.0 + 10 * n},
        }

    return {
        "info": {
            "exit_status": "Submitted",
            "submission": PATCH,
            "model_stats": {"instance_cost": 0.06, "api_calls": 3},
            "mini_version": "2.4.6",
            "config": {"model": {"model_name": "anthropic/claude-sonnet-4-5-20250929"}, "agent": {"cost_limit": 3.0}},
        },
        "messages": [
            {"role": "system", "content": SYSTEM, "extra": {"timestamp": 1_760_000_000.0}},
            {"role": "user", "content": TASK, "extra": {}},
            said(1, "python -m pytest", 2000),
            output(1, "1 failed", 1),
            said(2, "sed -i s/0/1/ counter.py", 2200),
            output(2, "", 0),
            said(3, "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && git diff", 2400),
            {"role": "exit", "content": "", "extra": {"exit_status": "Submitted", "submission": PATCH}},
        ],
        "trajectory_format": "mini-swe-agent-1.1",
    }


def mini_v2_responses() -> dict[str, Any]:
    """Through the Responses API (reasoning models): each turn is a response object, answered by
    function_call_output items."""
    response = {
        "object": "response",
        "model": "gpt-5.5-2026-04-23",
        "status": "completed",
        "usage": {
            "input_tokens": 100,
            "input_tokens_details": {"cached_tokens": 25},
            "output_tokens": 40,
            "output_tokens_details": {"reasoning_tokens": 30},
        },
        "output": [
            {"type": "reasoning", "summary": [{"type": "summary_text", "text": "Check the folder."}]},
            {"type": "message", "content": [{"type": "output_text", "text": "I will look."}]},
            {"type": "function_call", "call_id": "call_1", "name": "bash", "arguments": '{"command": "pwd"}'},
        ],
        "extra": {"cost": 0.03, "timestamp": 1_000.0},
    }
    result = {"type": "function_call_output", "call_id": "call_1", "output": "/app\n", "extra": {"returncode": 0}}
    return {
        "trajectory_format": "mini-swe-agent-1.1",
        "info": {"mini_version": "2.2.8", "exit_status": "LimitsExceeded", "model_stats": {"api_calls": 1}},
        "messages": [{"role": "system", "content": "system"}, {"role": "user", "content": "task"}, response, result],
    }


def swe_agent(instance_id: str = "repo__repo-1") -> dict[str, Any]:
    """SWE-agent 1.x with function calling; its history stops before the last observation, as SWE-agent's does."""

    def said(n: int, name: str, args: dict[str, Any], thought: str) -> dict[str, Any]:
        call = {"id": f"call_{n}", "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
        return {
            "role": "assistant",
            "content": thought,
            "thought": thought,
            "action": name,
            "tool_calls": [call],
            "agent": "main",
            "message_type": "action",
        }

    def seen(n: int, text: str) -> dict[str, Any]:
        return {
            "role": "tool",
            "content": text,
            "tool_call_ids": [f"call_{n}"],
            "agent": "main",
            "message_type": "observation",
        }

    steps = [
        {
            "action": "find_file counter.py",
            "observation": "Found 1 match",
            "thought": "Find it.",
            "execution_time": 0.25,
        },
        {"action": "edit 0 1", "observation": "Replaced 1 occurrence", "thought": "Fix it.", "execution_time": 0.5},
        {"action": "submit", "observation": PATCH, "thought": "Submit.", "execution_time": 0.75},
    ]
    return {
        "environment": "main",
        "trajectory": steps,
        "history": [
            {"role": "system", "content": SYSTEM, "agent": "main", "message_type": "system_prompt"},
            {"role": "user", "content": TASK, "agent": "main", "message_type": "observation"},
            said(1, "find_file", {"file_name": "counter.py"}, "Find it."),
            seen(1, "Found 1 match\n(Open file: n/a)"),
            said(2, "edit", {"search": "0", "replace": "1"}, "Fix it."),
            seen(2, "Replaced 1 occurrence\n(Open file: counter.py)"),
            said(3, "submit", {}, "Submit."),
        ],
        "info": {
            "exit_status": "submitted",
            "submission": PATCH,
            "model_stats": {"instance_cost": 0.02, "tokens_sent": 7000, "tokens_received": 240, "api_calls": 3},
        },
        "replay_config": json.dumps({"agent": {"model": {"name": "gpt-4o"}}, "problem_statement": {"id": instance_id}}),
    }


def atif(instance_id: str = "repo__repo-1") -> dict[str, Any]:
    """ATIF with tool definitions, tool calls answered by source_call_id, per-step metrics."""

    def agent(n: int, command: str, result: str, prompt: int) -> dict[str, Any]:
        return {
            "step_id": n + 2,
            "timestamp": f"2026-01-05T10:00:{10 * n:02d}Z",
            "source": "agent",
            "message": f"Step {n}.",
            "reasoning_content": f"Why {n}.",
            "tool_calls": [{"tool_call_id": f"c{n}", "function_name": "bash", "arguments": {"command": command}}],
            "observation": {"results": [{"source_call_id": f"c{n}", "content": result}]},
            "metrics": {
                "prompt_tokens": prompt,
                "completion_tokens": 20,
                "cached_tokens": prompt // 2,
                "cost_usd": 0.002 * n,
            },
        }

    bash = {
        "name": "bash",
        "description": "Run a command.",
        "parameters": {"type": "object", "properties": {"command": {"type": "string"}}},
    }
    return {
        "schema_version": "ATIF-v1.6",
        "session_id": "s-1",
        "agent": {
            "name": "terminus-2",
            "version": "2.0.0",
            "model_name": "openai/gpt-4o-mini",
            "tool_definitions": [{"type": "function", "function": bash}],
        },
        "steps": [
            {"step_id": 1, "source": "system", "message": SYSTEM, "timestamp": "2026-01-05T10:00:00Z"},
            {"step_id": 2, "source": "user", "message": TASK, "timestamp": "2026-01-05T10:00:00Z"},
            agent(1, "pytest", "<returncode>1</returncode>\n1 failed", 900),
            agent(2, "sed -i s/0/1/ counter.py", "", 1000),
        ],
        "final_metrics": {"total_prompt_tokens": 1900, "total_completion_tokens": 40, "total_cost_usd": 0.006},
        "extra": {"instance_id": instance_id},
    }


def inspect_sample(sample_id: int, epoch: int = 1) -> dict[str, Any]:
    """A tool-calling sample: its conversation and the model events (with usage) that produced its replies."""
    reply = {
        "id": f"m{sample_id}a",
        "role": "assistant",
        "content": "",
        "model": "gpt-4o-mini",
        "tool_calls": [{"id": "t1", "function": "bash", "arguments": {"cmd": "ls"}, "type": "function"}],
    }
    answer = {
        "id": f"m{sample_id}b",
        "role": "assistant",
        "content": [{"type": "reasoning", "reasoning": "Done."}, {"type": "text", "text": "42"}],
    }

    def event(message: dict[str, Any], prompt: int, cached: int, when: str) -> dict[str, Any]:
        usage = {
            "input_tokens": prompt,
            "output_tokens": 10,
            "total_tokens": prompt + 10,
            "input_tokens_cache_read": cached,
        }
        return {
            "event": "model",
            "timestamp": when,
            "completed": when,
            "tools": [{"name": "bash", "description": "Run bash.", "parameters": {"type": "object"}}],
            "output": {
                "model": "gpt-4o-mini",
                "choices": [{"message": message, "stop_reason": "stop"}],
                "usage": usage,
            },
        }

    return {
        "id": sample_id,
        "epoch": epoch,
        "messages": [
            {"role": "system", "content": SYSTEM},
            {"role": "user", "content": "attachment://task"},
            reply,
            {
                "role": "tool",
                "tool_call_id": "t1",
                "function": "bash",
                "content": "",
                "error": {"type": "timeout", "message": "timed out"},
            },
            answer,
        ],
        "events": [
            event(reply, 500, 0, "2026-01-05T10:00:01+00:00"),
            event(answer, 600, 500, "2026-01-05T10:00:03+00:00"),
        ],
        "scores": {"match": {"value": "C" if sample_id % 2 else "I"}},
        "output": {"completion": "42"},
        "model_usage": {"openai/gpt-4o-mini": {"input_tokens": 1100, "output_tokens": 20}},
        "total_time": 2.5,
        "attachments": {"task": "What is six times seven?"},
    }


def inspect_header() -> dict[str, Any]:
    return {
        "version": 2,
        "status": "success",
        "eval": {
            "task": "arith",
            "model": "openai/gpt-4o-mini",
            "config": {"epochs": 1},
            "packages": {"inspect_ai": "0.3.285"},
        },
    }


def inspect_json(samples: int = 2) -> dict[str, Any]:
    return {**inspect_header(), "samples": [inspect_sample(i + 1) for i in range(samples)]}


def write_eval(path: Path, samples: int = 2) -> Path:
    """An `.eval` log: a zip of header.json and one file per sample."""
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("header.json", json.dumps(inspect_header()))
        for i in range(samples):
            z.writestr(f"samples/{i + 1}_epoch_1.json", json.dumps(inspect_sample(i + 1)))
    return path


def write(path: Path, doc: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=1))
    return path
