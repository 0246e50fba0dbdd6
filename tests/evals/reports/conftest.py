"""Real run directories made by the real loop (scripted model, local sandbox) for report tests."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent.journal.lines import encode
from agent.models.scripted import ScriptedCall, ScriptedModel, ScriptedReply
from agent.run.task import Task
from agent.session import RunSpec, start
from core.events import EVENT
from core.policy import DispatchPolicy, HarnessPolicy, StopPolicy
from core.types import Usage


def reply(
    text: str = "",
    *calls: tuple[str, dict],
    prompt: int,
    cached: int = 0,
    reasoning: str | None = None,
    reasoning_tokens: int = 0,
) -> ScriptedReply:
    return ScriptedReply(
        text=text,
        reasoning=reasoning,
        tool_calls=[ScriptedCall(name=n, arguments=a) for n, a in calls],
        usage=Usage(
            prompt_tokens=prompt,
            cached_tokens=cached,
            completion_tokens=60 + reasoning_tokens,
            reasoning_tokens=reasoning_tokens,
        ),
    )


RICH_SCRIPT = [
    reply("Look around first.", ("shell", {"command": "ls -la"}), prompt=1400, reasoning="Check the workspace."),
    reply(
        "Write the program.",
        ("write_file", {"path": "app.py", "content": "print('hello')\n"}),
        prompt=1700,
        cached=1350,
    ),
    reply("Read it back.", ("shell", {"command": "cat app.py"}), prompt=2000, cached=1650),
    reply("Edit it.", ("edit", {"path": "app.py"}), prompt=2300, cached=1950),
    reply("Edit it again.", ("edit", {"path": "app.py"}), prompt=2600, cached=2250),
    reply("I believe the program is fine now.", prompt=2900, cached=2550),
    reply("Make a long log.", ("shell", {"command": "seq 1 30000"}), prompt=3100, cached=2850),
    reply("That log was long.", ("shell", {"command": "cat app.py"}), prompt=8900, cached=3050),
    reply("Check the file size.", ("shell", {"command": "wc -c app.py"}), prompt=2600, cached=0),
    reply(
        "Think hard.",
        ("shell", {"command": "python3 app.py"}),
        prompt=2900,
        cached=150,
        reasoning="Let me think about every possibility. " * 400,
        reasoning_tokens=7000,
    ),
    reply("Wait for it.", ("shell", {"command": "sleep 3"}), prompt=3200, cached=2850),
    reply(
        "Two things at once.",
        ("write_file", {"path": "b.txt", "content": "b"}),
        ("shell", {"command": "cat b.txt"}),
        prompt=3500,
        cached=3150,
    ),
    reply("Done.", ("submit", {"answer": "app.py prints hello"}), prompt=3800, cached=3450),
]


def compaction_event(
    step: int,
    version: int,
    folded: tuple[int, int],
    memory: dict,
    before: int,
    after: int,
    cut_off: bool = False,
    restart: bool = True,
) -> dict:
    """A `compaction` event in the shape the loop journals (memory folded into a working memory)."""
    text = f"[Working memory v{version} (steps {folded[0]}-{folded[1]} folded)]\n{json.dumps(memory, indent=1, sort_keys=True)}"
    return {
        "type": "compaction",
        "step": step,
        "ok": True,
        "trigger": "tokens",
        "version": version,
        "tokens_before": before,
        "tokens_after": after,
        "fold": {
            "version": version,
            "upto": 2 + 3 * folded[1],
            "first_step": folded[0],
            "last_step": folded[1],
            "memory": memory,
            "text": text,
            "restart": restart,
        },
        "summariser_usage": {
            "prompt_tokens": before,
            "completion_tokens": 300,
            "cached_tokens": 0,
            "cache_write_tokens": 0,
            "reasoning_tokens": 0,
        },
        "finish_reason": "length" if cut_off else "stop",
        "cut_off": cut_off,
        "attempts": [],
        "message": "",
    }


# These scripted runs have no compaction step in their policy, so the compactions a report
# must show are appended to the real journal as the loop would have written them.
RICH_COMPACTIONS = [
    compaction_event(
        8,
        1,
        (1, 6),
        {
            "goal": "app.py prints hello",
            "plan": ["write app.py", "run it"],
            "decisions": ["plain print"],
            "open_questions": [],
        },
        8900,
        2400,
    ),
    compaction_event(
        10,
        2,
        (7, 9),
        {
            "goal": "app.py prints hello",
            "plan": ["run it", "submit"],
            "decisions": ["plain print", "no tests needed"],
            "open_questions": ["sub"],
        },
        2900,
        2300,
        cut_off=True,
        restart=False,
    ),
]
RICH_POLICY = HarnessPolicy(
    name="rich",
    dispatch=DispatchPolicy(tool_timeout_s=1.0),
    stop=StopPolicy(max_steps=40, max_no_tool_replies=3),
)


def make_run(
    out: Path,
    script: list[ScriptedReply],
    policy: HarnessPolicy,
    task_id: str = "rich",
    prompt: str = "Write app.py that prints hello, then submit.",
    files: dict[str, str] | None = None,
) -> Path:
    task = Task(id=task_id, prompt=prompt, files=files or {})
    _, run_dir = start(RunSpec(task, ScriptedModel(script, name=f"scripted:{task_id}"), policy, out))
    return run_dir


def append_raw_events(run_dir: Path, events: list[dict]) -> None:
    """Crafted events after the journal's own, numbered on from its last seq (a gap would be damage) and written
    with their checksums, as every line after a checksummed one must be."""
    last = len((run_dir / "events.jsonl").read_bytes().splitlines())
    with open(run_dir / "events.jsonl", "ab") as f:
        for i, e in enumerate(events, last + 1):
            f.write(encode(EVENT.validate_python({"seq": i, "ts": 0.0, **e})))


@pytest.fixture(scope="session")
def rich_run(tmp_path_factory) -> Path:
    run_dir = make_run(tmp_path_factory.mktemp("rich"), RICH_SCRIPT, RICH_POLICY)
    append_raw_events(run_dir, RICH_COMPACTIONS)
    return run_dir


LOG_LINES = 6000
LONG_TASK_FILES = {"log.txt": "".join(f"log line {i:05d}\n" for i in range(1, LOG_LINES + 1))}


def long_script(steps: int) -> list[ScriptedReply]:
    """A long append-only run that reads a log, one line a step and 300 lines every tenth step.

    read_file runs in-process, so the run costs journal writes rather than a shell per step.
    """
    out, prompt = [], 1500
    for i in range(1, steps):
        end = i + (300 if i % 10 == 0 else 0)
        out.append(
            reply(
                f"Step {i}.",
                ("read_file", {"path": "log.txt", "start_line": i, "end_line": end}),
                prompt=prompt,
                cached=max(0, prompt - 400),
                reasoning=f"Plan for step {i}.",
            )
        )
        prompt += 1200 if i % 10 == 0 else 40
    out.append(reply("Done.", ("submit", {"answer": "done"}), prompt=prompt, cached=prompt - 400))
    return out


@pytest.fixture(scope="session")
def long_run(tmp_path_factory) -> Path:
    steps = 1000
    policy = HarnessPolicy(name="long", stop=StopPolicy(max_steps=steps + 1))
    return make_run(
        tmp_path_factory.mktemp("long"),
        long_script(steps),
        policy,
        task_id="long",
        prompt="Read log.txt and submit.",
        files=LONG_TASK_FILES,
    )


@pytest.fixture(scope="session")
def chess_batches(tmp_path_factory) -> tuple[Path, Path]:
    """Two real chess batches of the same seeded games against a weakened Stockfish: A's player
    writes long reasoning, B's none; the moves do not depend on it, so each pair is one game."""
    from evals.chess.batch import ChessBatchSpec, play_batch
    from evals.chess.game import GameRules
    from evals.chess.players import RandomPlayer

    root = tmp_path_factory.mktemp("chess-ab")
    out = []
    for name, chars in (("reasoning", 2000), ("silent", 0)):
        _, folder = play_batch(
            ChessBatchSpec(
                3,
                lambda seed, chars=chars: RandomPlayer(seed, reasoning_chars=chars),
                "stockfish:skill=0",
                policy=HarnessPolicy(name=name),
                out=root / name,
                seed=11,
                rules=GameRules(max_plies=24),
                analysis_depth=4,
            )
        )
        out.append(folder)
    return out[0], out[1]


# Debian's Chromium, headless, with no background traffic (the machine has no network).
CHROMIUM = "/usr/bin/chromium"
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
]


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield b
        b.close()
