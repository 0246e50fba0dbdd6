"""Forks: the world at the branch, and the paired A/B that forks make possible.

`worlds`: a 30-step SWE-style run (tests/agent/forking.py: a git repository edited, tested and diffed, then
`submit`) forked at step 15 under another policy, in the local sandbox and in Docker (from a checkpoint kept for
forks every 4 steps, and from the image and setup), and a chess game against Stockfish forked at move 15 under
another policy. Each line says whether the fork's world after step 15 equals the parent's (every file's sha256,
read independently of the harness while the parent ran; or the game's position), whether the fork's journal
begins with the parent's steps 1..15, and how the fork stopped.

`ab`: two compaction presets (compact_naive, compact_cache_aware) compared on prompt tokens, 20 runs each, two
ways in one process. Independent whole runs: 20 runs under each preset, seeds 0..19 and 100..119 (Welch's
interval on the difference of means). Paired forks: each of the 20 compact_naive runs forked at the step before
its first compaction under both presets with its own seed, compared by `harness ab`'s pairing and interval (by
parent and seed). The model is a seeded stand-in (Sampler below): `crn` samples as a seeded model does, a
distribution the prompt moves (by `--drift`) with common random numbers for noise; `prompt` and `seed` are the
two extremes (every draw follows the whole prompt, or only the seed and step). The closing line is the ratio of
the interval widths; the lines before it say on how many of the forks' own steps both forks of a pair acted
alike, how much of the whole runs' spread was there by the branch, and how closely the two forks' prompt tokens
correlate. `--first-seed` shifts every seed, for another draw of the same comparison. `--task work` runs the
same A/B on a task with a fixed amount of work in the workspace (Worker below: 18 items in `todo`, each
attempt passing or failing as the stand-in draws, a submit when none is left), where what is left after the
branch is in the world both forks inherit; its closing lines add how many items were done by the branch and
how much of the whole runs' variance that and the tokens up to the branch explain.

`refusals`: `harness fork` run as a command on a drifted world, a step beyond the run's end, a run still running
and a damaged journal: its exit code, what it said, and what it made.

    .venv/bin/python benchmarks/bench_fork.py worlds [--docker/--no-docker] [--chess/--no-chess]
    .venv/bin/python benchmarks/bench_fork.py ab [--task log|work] [--runs 20] [--sampler crn|prompt|seed] [--drift 1] [--first-seed 0]
    .venv/bin/python benchmarks/bench_fork.py refusals
    .venv/bin/python benchmarks/bench_fork.py pool AB.json... (the pairs and whole runs of several `ab` runs pooled)
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import random
import re
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from statistics import NormalDist, correlation, stdev
from typing import TypeVar

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np  # noqa: E402
from scipy import stats as scistats  # noqa: E402

from agent.fork import fork  # noqa: E402
from agent.journal.store import read_events, read_run_info  # noqa: E402
from agent.models.base import estimate_tokens  # noqa: E402
from agent.models.pricing import load_prices  # noqa: E402
from agent.recovery.branch import BEFORE_FIRST_COMPACTION  # noqa: E402
from agent.run.task import Task  # noqa: E402
from agent.session import RunSpec, SandboxSpec, start  # noqa: E402
from core.events import Compacted, ModelReplied  # noqa: E402
from core.policy import CheckpointPolicy, HarnessPolicy, StopPolicy  # noqa: E402
from core.presets import PRESETS  # noqa: E402
from core.types import Message, ModelReply, ToolCall, Usage  # noqa: E402
from evals.ab.compare import compare  # noqa: E402
from evals.ab.records import load_batch, load_record  # noqa: E402
from evals.stats import mean_interval  # noqa: E402
from tests.agent import forking  # noqa: E402

AT = 15


def same_steps(parent: Path, child: Path) -> bool:
    return forking.inherited_part(child) == forking.as_inherited(read_events(parent), AT)


def world_line(where: str, parent: Path, child, world: dict | None) -> dict:
    got = forking.branch_files(child.run_dir)
    line = {
        "sandbox": where,
        "files": len(world or {}),
        "files_equal": got == world,
        "first_15_steps_equal": same_steps(parent, child.run_dir),
        "fork_policy": read_run_info(child.run_dir).policy["name"],
        "fork_stop": child.summary.stop_reason if child.summary else None,
        "fork_steps": child.summary.steps if child.summary else None,
    }
    print(json.dumps(line), flush=True)
    return line


def local_world(root: Path) -> dict:
    world = forking.WorldAfter(AT, root / "parent" / "workspace")
    policy = HarnessPolicy(name="plain", stop=StopPolicy(max_steps=60))
    summary, parent = start(RunSpec(forking.TASK, forking.model(), policy, root, run_id="parent", listeners=[world]))
    assert summary.steps == forking.STEPS, (summary.stop_reason, summary.message)
    child = fork(parent, AT, policy=PRESETS["lean"], model=forking.model(), out=root / "forks")
    return world_line("local", parent, child, world.files)


def docker_world(root: Path, fork_every: int | None) -> dict:
    from sandboxes.docker_options import RUN_LABEL
    from sandboxes.docker_runs import CHECKPOINT_LABEL, checkpoints

    world = forking.WorldAfter(AT)
    policy = HarnessPolicy(
        name="plain", stop=StopPolicy(max_steps=60), checkpoint=CheckpointPolicy(fork_every=fork_every)
    )
    spec = RunSpec(forking.TASK, forking.model(), policy, root, SandboxSpec.parse("docker"), listeners=[world])
    try:
        summary, parent = start(spec)
        assert summary.steps == forking.STEPS, (summary.stop_reason, summary.message)
        child = fork(parent, AT, policy=PRESETS["lean"], model=forking.model(), out=root / "forks")
        how = "checkpoint" if fork_every else "image and setup"
        return world_line(f"docker ({how}; {len(checkpoints(parent))} checkpoints kept)", parent, child, world.files)
    finally:
        import docker

        client = docker.from_env()
        for image in client.images.list(filters={"label": CHECKPOINT_LABEL}):
            if (image.labels or {}).get(RUN_LABEL, "").startswith(str(root.resolve())):
                client.images.remove(image.id, force=True)
        client.close()


def chess_world(root: Path) -> dict:
    """A game of a seeded random player against Stockfish (skill 0, seeded), forked at step 15 under lean with
    another player seed (tests/evals/chess/forking.py). The parent's position after step 15 is read from its PGN
    (the moves its steps 1..15 played); the fork's is its board when its branch is journaled."""
    from tests.evals.chess import forking as chess_forking

    opponent = "stockfish:skill=0"
    parent = chess_forking.parent_game(root, opponent)
    child, fen = chess_forking.fork_game(parent.run_dir, root / "forks", opponent)
    line = {
        "sandbox": f"chess (none; random player vs {opponent})",
        "parent_steps": parent.summary.steps,
        "position_equal": fen == chess_forking.position_after(parent, AT),
        "fen_at_branch": fen,
        "first_15_steps_equal": same_steps(parent.run_dir, child.run_dir),
        "fork_policy": read_run_info(child.run_dir).policy["name"],
        "fork_stop": child.summary.stop_reason if child.summary else None,
        "fork_steps": child.summary.steps if child.summary else None,
    }
    print(json.dumps(line), flush=True)
    return line


def refusals(root: Path) -> list[dict]:
    """`harness fork` as a user runs it, on a drifted world, a step beyond the end, a damaged journal and a run
    still running: the exit code, the first line said, and whether the --out folder was made."""
    import subprocess

    from agent.journal.store import Journal
    from agent.models.scripted import ScriptedModel, ScriptedReply

    replies = [
        {"tool_calls": [{"name": "shell", "arguments": {"command": c}}]}
        for c in ("echo fixed > a.txt", "echo $RANDOM$RANDOM > r.txt && cat r.txt", "cat a.txt")
    ] + [{"tool_calls": [{"name": "submit", "arguments": {"answer": "done"}}]}]
    script = root / "script.json"
    script.write_text(json.dumps(replies))
    model = ScriptedModel([ScriptedReply.model_validate(r) for r in replies])
    policy = HarnessPolicy(name="plain")
    _, parent = start(RunSpec(forking.TASK, model, policy, root, run_id="parent"))
    harness = str(Path(sys.executable).parent / "harness")

    def fork_cli(case: str, at: str, out: Path) -> dict:
        args = [harness, "fork", str(parent), "--at-step", at, "--model", f"scripted:{script}", "--out", str(out)]
        done = subprocess.run(args, capture_output=True, text=True, timeout=300)
        said = " ".join(re.sub("[\u2500-\u257f]", " ", done.stdout + done.stderr).split())  # no table borders
        made = sorted(p.name for p in out.iterdir()) if out.exists() else []
        line = {"case": case, "exit": done.returncode, "made": made, "said": said[:600]}
        print(json.dumps(line), flush=True)
        return line

    lines = [fork_cli("drifted world (step 2 prints $RANDOM)", "3", root / "drift")]
    lines.append(fork_cli("beyond the end (4 steps)", "9", root / "beyond"))
    held = Journal(parent)  # held as a live run's process holds it
    try:
        lines.append(fork_cli("still running", "2", root / "running"))
    finally:
        held.close()
    journal = parent / "events.jsonl"
    rows = journal.read_bytes().splitlines(keepends=True)
    rows[5] = rows[5].replace(b'"step":', b'"step": ')  # one byte more in the middle: its checksum fails
    journal.write_bytes(b"".join(rows))
    lines.append(fork_cli("damaged journal", "2", root / "damaged"))
    return lines


# --- the paired A/B -------------------------------------------------------------------------------------------

MEMORY = '{"goal": "write the log", "failed_approaches": []}'
TASK = Task(id="log", prompt="Append to steps.txt, one line a step, and look at the output; submit when done.")
A, B = PRESETS["compact_naive"], PRESETS["compact_cache_aware"]


SEQS = tuple(range(100, 901, 100))  # the lengths of `seq` the stand-in chooses among
SUBMIT_LOGIT = math.log(0.15 / 0.85 * len(SEQS))  # P(submit) = 0.15 a step where the prompt does not move it


def uniform(*key: object) -> float:
    """A number in (0, 1) that is a function of key alone."""
    digest = hashlib.sha256("\n".join(map(str, key)).encode()).digest()
    return (int.from_bytes(digest[:8], "big") + 0.5) / 2**64


NORMAL = NormalDist()
C = TypeVar("C")


def crn_choice(choices: Sequence[C], digest: str, drift: float, noise: tuple, bias=lambda c: 0.0) -> C:
    """A seeded sampling model's pick among `choices`: each one's logit (`bias`) moved by `drift` times a standard
    normal number drawn from the prompt's `digest`, against common random numbers, a Gumbel number per choice
    keyed by `noise`; the argmax of logit + noise (Gumbel-max: an exact sample of the softmax)."""

    def score(c: C) -> float:
        logit = bias(c) + drift * NORMAL.inv_cdf(uniform(digest, c))
        return logit - math.log(-math.log(uniform(*noise, c)))

    return max(choices, key=score)


class Sampler:
    """A seeded stand-in for a sampling model. Each reply is a shell command that appends a line to steps.txt,
    prints its line count (the step, whatever the context holds) and a seq of a chosen length (100 to 900 lines);
    from step 18 on it may submit instead, at step 45 always. What its choice follows:

    - `prompt`: a generator seeded by the seed and the whole prompt, so any difference in what it is shown
      changes every draw: two forks of a run draw apart from their first differing prompt (independent noise).
    - `seed`: a generator seeded by the seed and the step, and a choice the prompt does not move: the forks'
      actions stay the same and only the policy's rendering differs.
    - `crn`: what a seeded sampling model does. Its distribution over the ten choices follows the prompt: each
      choice's logit is moved by `drift` times a standard normal number drawn from the whole prompt (any
      difference in the prompt moves the whole distribution, however small the difference); the noise is
      common random numbers, a Gumbel number per choice keyed by (seed, step), and the choice is the argmax of
      logit + noise (Gumbel-max: an exact sample of the softmax). Two forks with one seed then take the same
      action wherever their distributions agree closely enough for the same choice to win, and differ where
      the prompt moved them apart; with drift 0 this is `seed`, as drift grows it nears `prompt`."""

    def __init__(self, follows: str = "prompt", drift: float = 1.0):
        self.follows, self.drift = follows, drift
        self.name = f"scripted:sampler-{follows}" + (f"-drift{drift:g}" if follows == "crn" else "")

    def complete(self, messages, tools, params) -> ModelReply:
        usage = Usage(prompt_tokens=sum(estimate_tokens(m.text) + 4 for m in messages), completion_tokens=20)
        if params.reply_schema is not None:
            return ModelReply(message=Message(role="assistant", text=MEMORY), usage=usage, finish_reason="stop")
        last = next((m.text for m in reversed(messages) if m.role == "tool"), "")
        message = Message(role="assistant", text="", tool_calls=(self.call(last, messages, params.seed),))
        return ModelReply(message=message, usage=usage, finish_reason="tool_calls", model=self.name)

    def call(self, last: str, messages, seed: int | None) -> ToolCall:
        """The reply's one call, given the last observation shown."""
        step = int(last.split()[0]) + 1 if last[:1].isdigit() else 1
        choice = self.choose(seed, step, "\n".join(m.text for m in messages))
        if choice == "submit":
            return ToolCall(id=f"c{step}", name="submit", arguments=json.dumps({"answer": "done"}))
        command = f"echo {step} >> steps.txt && wc -l < steps.txt && seq 1 {choice}"
        return ToolCall(id=f"c{step}", name="shell", arguments=json.dumps({"command": command}))

    def choose(self, seed: int | None, step: int, prompt: str) -> int | str:
        if step >= 45:
            return "submit"
        if self.follows != "crn":
            rng = random.Random(
                hashlib.sha256(f"{seed}\n{prompt if self.follows == 'prompt' else step}".encode()).digest()
            )
            return "submit" if step >= 18 and rng.random() < 0.15 else rng.randint(100, 900)
        choices: list[int | str] = [*SEQS, "submit"] if step >= 18 else list(SEQS)
        digest = hashlib.sha256(prompt.encode()).hexdigest()
        return crn_choice(choices, digest, self.drift, (seed, step), lambda c: SUBMIT_LOGIT if c == "submit" else 0.0)

    def close(self) -> None:
        """Nothing to free."""


# The work task: a fixed amount of work in the workspace, done when it is done. W and P are set so that a run
# is 20-40 steps, as a coding agent's on a small issue: W/P = 30 steps expected, SD sqrt(W(1-P))/P = 4.5, so
# 95% of runs end within 21-39 steps, and the cap (45, as the log task's) is reached almost never. Output
# sizes are the log task's (100-900 lines a step), which puts the first fold after step 9-14, well inside.
W, P = 18, 0.6
WORK = Task(
    id="work",
    prompt="Work through the items in `todo`, one a step; an attempt that passes moves its item to done.txt, one "
    "that fails stays at the top. Submit when nothing is left.",
    files={"todo": "".join(f"item {i}: make check {i} pass\n" for i in range(1, W + 1))},
)
ATTEMPT = (
    'echo . >> steps.txt; if [ ! -s todo ]; then echo nothing left; elif {fix}; then echo "passed: $(head -n 1 todo)"; '
    'head -n 1 todo >> done.txt; sed -i 1d todo; else echo "failed: $(head -n 1 todo)"; head -n 1 todo >> failed.txt; '
    'fi; echo "step $(wc -l < steps.txt) left $(grep -c . todo)"; seq 1 {size}'
)
STATE = re.compile(r"^step (\d+) left (\d+)$", re.M)


class Worker(Sampler):
    """A seeded stand-in for an agent that stops when its work is done. Each reply attempts the next item of
    `todo` with a shell command whose fix is right or wrong as the stand-in draws (`true` or `false` in the
    command: the world then records the item as done or failed) and prints a `seq` of a chosen length; the
    command prints the step and how many items are left, and the stand-in submits when the last observation it
    sees says none are (a fold that hid the newest observation costs it one more look), at step 45 always.
    What is left is read from the world, so two forks of a run start from the work done by the branch.

    Success is drawn as a seeded sampling model draws: against P, whose logit the prompt moves (`crn`: by
    `drift` times a standard normal number drawn from the whole prompt), with a common random number keyed by
    the call's seed (the run's seed mixed with the step, core.policy.step_params): two forks with one seed
    succeed on the same steps wherever their prompts leave the probability on the same side of that number.
    The output size is drawn as Sampler draws it. `prompt`: both drawn from the seed and the whole prompt
    (independent after the branch); `seed`: both from the seed alone (drift 0)."""

    def __init__(self, follows: str = "prompt", drift: float = 1.0):
        super().__init__(follows, 0.0 if follows == "seed" else drift)
        self.name = self.name.replace("sampler", "worker")

    def call(self, last: str, messages, seed: int | None) -> ToolCall:
        seen = STATE.search(last)
        step, left = (int(seen[1]), int(seen[2])) if seen else (0, W)
        if left == 0 or step + 1 >= 45:
            return ToolCall(id=f"c{step + 1}", name="submit", arguments=json.dumps({"answer": "done"}))
        fix, size = self.attempt(seed, "\n".join(m.text for m in messages))
        command = ATTEMPT.format(fix="true" if fix else "false", size=size)
        return ToolCall(id=f"c{step + 1}", name="shell", arguments=json.dumps({"command": command}))

    def attempt(self, seed: int | None, prompt: str) -> tuple[bool, int]:
        if self.follows == "prompt":
            rng = random.Random(hashlib.sha256(f"{seed}\n{prompt}".encode()).digest())
            return rng.random() < P, rng.randint(100, 900)
        digest = hashlib.sha256(prompt.encode()).hexdigest()
        logit = math.log(P / (1 - P)) + self.drift * NORMAL.inv_cdf(uniform(digest, "fix"))
        passes = uniform(seed, "fix") < 1 / (1 + math.exp(-logit))
        return passes, crn_choice(SEQS, digest, self.drift, (seed,))


def done_by(run_dir: Path, step: int) -> int:
    """Items the run's steps up to `step` did (their fix was right and an item was left)."""
    return sum(
        1
        for e in read_events(run_dir)
        if isinstance(e, ModelReplied)
        and e.step <= step
        and any("elif true;" in c.arguments for c in e.reply.message.tool_calls)
    )


def actions_after(run_dir: Path, branch: int) -> dict[int, tuple]:
    """The tool calls of each step after `branch` (names and arguments, not ids)."""
    return {
        e.step: tuple((c.name, c.arguments) for c in e.reply.message.tool_calls)
        for e in read_events(run_dir)
        if isinstance(e, ModelReplied) and e.step > branch and e.reply.message.tool_calls
    }


def agreement(a: Path, b: Path, branch: int) -> tuple[int, int]:
    """(steps after the branch where both forks made the same calls, steps both forks took)."""
    ca, cb = actions_after(a, branch), actions_after(b, branch)
    both = ca.keys() & cb.keys()
    return sum(ca[s] == cb[s] for s in both), len(both)


def whole(root: Path, policy: HarnessPolicy, seed: int, model: Sampler) -> Path:
    seeded = policy.model_copy(update={"model": policy.model.model_copy(update={"seed": seed})})
    spec = RunSpec(
        WORK if isinstance(model, Worker) else TASK, model, seeded, root, seed=seed, run_id=f"{policy.name}-{seed}"
    )
    summary, run_dir = start(spec)
    assert summary.stop_reason == "submitted", (run_dir, summary.stop_reason)
    return run_dir


def folds(run_dir: Path) -> bool:
    return any(isinstance(e, Compacted) and e.fold is not None for e in read_events(run_dir))


def branch_tokens(run_dir: Path, branch: int) -> int:
    """The prompt tokens of a run's steps up to `branch`, which its forks inherit."""
    return sum(
        e.reply.usage.prompt_tokens for e in read_events(run_dir) if isinstance(e, ModelReplied) and e.step <= branch
    )


def fixed_share(total: list[int], before: list[int], done: list[int]) -> float:
    """R^2 of the whole runs' prompt tokens on what their forks inherit: the tokens up to the branch and the
    items done by it (least squares with an intercept)."""
    x = np.column_stack([np.ones(len(total)), before, done])
    y = np.asarray(total, dtype=float)
    fit = np.linalg.lstsq(x, y, rcond=None)[0]
    return float(1 - np.sum((y - x @ fit) ** 2) / np.sum((y - y.mean()) ** 2))


def welch(a: list[float], b: list[float]) -> tuple[float, float, float]:
    """(mean of B - mean of A, low, high): Welch's 95% interval for two independent samples."""
    ci = scistats.ttest_ind(b, a, equal_var=False).confidence_interval(0.95)
    return sum(b) / len(b) - sum(a) / len(a), float(ci.low), float(ci.high)


def ab(root: Path, runs: int, model: Sampler, first_seed: int = 0) -> dict:
    began = time.monotonic()
    seeds = range(first_seed, first_seed + runs)
    parents = [whole(root / "whole" / A.name, A, s, model) for s in seeds]
    for s in seeds:
        whole(root / "whole" / B.name, B, 100 + s, model)
    prices = load_prices()
    tokens = {p: [r.prompt_tokens for r in load_batch(root / "whole" / p, prices)] for p in (A.name, B.name)}
    folding = {p: sum(map(folds, (root / "whole" / p).iterdir())) for p in (A.name, B.name)}
    steps = {p: [r.steps for r in load_batch(root / "whole" / p, prices)] for p in (A.name, B.name)}
    print(f"whole runs that folded: {folding}; steps {min(min(steps.values()))}-{max(max(steps.values()))}", flush=True)
    mean, low, high = welch(tokens[A.name], tokens[B.name])
    print(f"whole runs: {runs} + {runs}, B - A = {mean:.0f} [{low:.0f}, {high:.0f}] prompt tokens", flush=True)
    branch_steps, same, taken, pairs = [], 0, 0, []
    for s, parent in zip(seeds, parents):
        first = min(e.step for e in read_events(parent) if isinstance(e, Compacted) and e.fold is not None)
        branch_steps.append(first)
        pair = []
        for policy in (A, B):
            made = fork(parent, BEFORE_FIRST_COMPACTION, policy, model, s, root / "forks" / policy.name)
            assert made.summary is not None and made.summary.stop_reason == "submitted", made.run_dir
            pair.append(made.run_dir)
        agreed, both = agreement(*pair, first - 1)
        same, taken = same + agreed, taken + both
        pairs.append([load_record(d, prices).prompt_tokens for d in pair])
    print(f"forks' own steps with the same action in both forks: {same} of {taken}", flush=True)
    before = [branch_tokens(p, b - 1) for p, b in zip(parents, branch_steps)]
    spread = {
        "sd_whole_a": stdev(tokens[A.name]),
        "sd_before_branch": stdev(before),
        "paired_correlation": correlation(*zip(*pairs)),
    }
    if isinstance(model, Worker):
        done = [min(W, done_by(p, b - 1)) for p, b in zip(parents, branch_steps)]
        spread["items_done_at_branch"] = done
        spread["r2_world_at_branch"] = fixed_share(tokens[A.name], before, done)
        print(
            f"items done by the branch: {min(done)}-{max(done)} of {W}; share of the variance of "
            f"{A.name}'s whole runs' prompt tokens that the world at the branch fixes (R^2 on the tokens up to "
            f"it and the items done): {spread['r2_world_at_branch']:.2f}",
            flush=True,
        )
    print(
        f"prompt tokens of {A.name}'s whole runs: SD {spread['sd_whole_a']:.0f}, of which up to the branch SD "
        f"{spread['sd_before_branch']:.0f}; correlation between the two forks of a pair: "
        f"{spread['paired_correlation']:.2f}",
        flush=True,
    )
    fa, fb = (load_batch(root / "forks" / p.name, prices) for p in (A, B))
    result = next(
        m for m in compare(fa, fb, A.name, B.name, primary="prompt_tokens").metrics if m.name == "prompt_tokens"
    )
    print(
        f"paired forks: {result.n} pairs, B - A = {result.diff:.0f} [{result.ci_low:.0f}, {result.ci_high:.0f}] prompt tokens",
        flush=True,
    )
    ratio = (result.ci_high - result.ci_low) / (high - low)
    figures = {
        "runs_each": runs,
        "seeds": [first_seed, first_seed + runs - 1],
        "model": model.name,
        "sandbox": "local",
        "presets": [A.name, B.name],
        "first_compaction_after_step": branch_steps,
        "whole": {
            "mean": mean,
            "low": low,
            "high": high,
            "width": high - low,
            "prompt_tokens": tokens,
            "steps": steps,
            "runs_that_folded": folding,
        },
        "forks": {"pairs": result.n, "mean": result.diff, "low": result.ci_low, "high": result.ci_high},
        "width_ratio": ratio,
        "same_action_steps": {"same": same, "of": taken},
        "spread": spread,
        "fork_pairs_prompt_tokens": pairs,
        "wall_s": round(time.monotonic() - began, 1),
    }
    figures["forks"]["width"] = result.ci_high - result.ci_low
    print(
        f"interval width on prompt tokens, paired forks / independent whole runs: {ratio:.3f} "
        f"({result.ci_high - result.ci_low:.0f} / {high - low:.0f}; {runs} each)",
        flush=True,
    )
    assert math.isfinite(ratio)
    return figures


def pool(files: list[Path]) -> dict:
    """The A/B of several benchmark runs pooled: all their pairs against all their whole runs, as `ab` compares
    one run's (a t interval on the pairs' differences, Welch's on the whole runs)."""
    runs = [json.loads(f.read_text()) for f in files]
    diffs = [b - a for r in runs for a, b in r["fork_pairs_prompt_tokens"]]
    mean, low, high = mean_interval(diffs)
    wa, wb = ([t for r in runs for t in r["whole"]["prompt_tokens"][p]] for p in (A.name, B.name))
    wmean, wlow, whigh = welch(wa, wb)
    figures = {
        "files": [f.name for f in files],
        "forks": {"pairs": len(diffs), "mean": mean, "low": low, "high": high},
        "whole": {"runs_each": len(wa), "mean": wmean, "low": wlow, "high": whigh},
        "width_ratio": (high - low) / (whigh - wlow),
    }
    print(
        f"pooled: {len(diffs)} pairs, B - A = {mean:.0f} [{low:.0f}, {high:.0f}]; whole runs {len(wa)} + {len(wb)}, "
        f"{wmean:.0f} [{wlow:.0f}, {whigh:.0f}]; width ratio {figures['width_ratio']:.3f}",
        flush=True,
    )
    return figures


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("part", choices=("worlds", "ab", "refusals", "pool"))
    ap.add_argument("files", nargs="*", type=Path, help="pool: the JSON files of `ab` runs to pool")
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument(
        "--sampler", choices=("crn", "prompt", "seed"), default="crn", help="what the ab model's draws follow"
    )
    ap.add_argument(
        "--first-seed", type=int, default=0, help="ab: seeds FIRST.. under one preset, FIRST+100.. under the other"
    )
    ap.add_argument(
        "--task", choices=("log", "work"), default="log", help="ab: the log task (Sampler) or the work task (Worker)"
    )
    ap.add_argument("--drift", type=float, default=1.0, help="crn: how far the prompt moves each choice's logit")
    ap.add_argument("--docker", action=argparse.BooleanOptionalAction, default=True)
    ap.add_argument("--chess", action=argparse.BooleanOptionalAction, default=True)
    ap.add_argument("--json", type=Path, help="also write the figures here")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-fork-") as tmp:
        root = Path(tmp)
        if args.part == "pool":
            figures: object = pool(args.files)
        elif args.part == "ab":
            stand_in = Worker if args.task == "work" else Sampler
            figures = ab(root, args.runs, stand_in(args.sampler, args.drift), args.first_seed)
        elif args.part == "refusals":
            figures = refusals(root)
        else:
            figures = [local_world(root / "local")]
            if args.docker:
                figures += [docker_world(root / "docker-cp", 4), docker_world(root / "docker-setup", None)]
            if args.chess:
                figures.append(chess_world(root / "chess"))
    if args.json:
        args.json.write_text(json.dumps(figures, indent=1) + "\n")


if __name__ == "__main__":
    main()
