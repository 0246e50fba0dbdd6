"""Record the trajectory fixtures: a scripted agent debugging real Python packages in the local sandbox.

Each scenario copies a pure-Python package from the interpreter's own
site-packages into the sandbox, plants one bug, and runs a scripted agent through the real loop: it
lists and reads large files, greps, writes a failing test, runs pytest
(failures with tracebacks), tries a wrong fix, reverts it, makes the right
fix and submits. The replies are scripted; every tool output is real. Only
run.json and events.jsonl are kept, so the fixtures stay small.

The recorded commands name no path of this machine: they call `python`, which
the recorder (and every test that runs a fixture's setup again) puts first on
PATH as the running interpreter, so a fixture replays in a clone at any path.

    .venv/bin/python benchmarks/make_trajectories.py   # writes tests/fixtures/trajectories/<name>/
"""

from __future__ import annotations

import itertools
import json
import os
import shutil
import sys
import sysconfig
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from agent.models.scripted import ScriptedCall, ScriptedModel, ScriptedReply  # noqa: E402
from agent.run.task import Task  # noqa: E402
from agent.session import RunSpec, start  # noqa: E402
from core.context_policy import TruncationPolicy  # noqa: E402
from core.policy import HarnessPolicy, StopPolicy  # noqa: E402

OUT = ROOT / "tests" / "fixtures" / "trajectories"
SITE = Path(sysconfig.get_paths()["purelib"])
PY = "python"  # the running interpreter, by name: see the module docstring
STEPS = 66


@dataclass
class Scenario:
    name: str
    package: str
    bug_file: str  # relative to the package
    correct: str  # the line as the package ships it
    planted: str  # the line with the bug
    test: str  # a test that fails while the bug is there
    wrong_old: str  # a plausible but wrong fix: a snippet elsewhere in bug_file...
    wrong_new: str  # ...and what the agent changes it to
    greps: list[str]
    issue: str


SCENARIOS = [
    Scenario(
        name="tenacity-stop-off-by-one",
        package="tenacity",
        bug_file="stop.py",
        correct="return retry_state.attempt_number >= self.max_attempt_number",
        planted="return retry_state.attempt_number > self.max_attempt_number",
        test=(
            "import pytest\nimport tenacity\n\n\n"
            "def test_stop_after_attempt_calls_exactly_n_times():\n"
            "    calls = []\n\n"
            "    @tenacity.retry(stop=tenacity.stop_after_attempt(3), reraise=True)\n"
            "    def flaky():\n        calls.append(1)\n        raise ValueError('boom')\n\n"
            "    with pytest.raises(ValueError):\n        flaky()\n"
            "    assert len(calls) == 3\n\n\n"
            "def test_stop_after_delay_still_works():\n"
            "    assert tenacity.stop_after_delay(0)(type('S', (), {'seconds_since_start': 1.0})())\n"
        ),
        wrong_old="return retry_state.seconds_since_start >= self.max_delay",
        wrong_new="return retry_state.seconds_since_start > self.max_delay",
        greps=[
            "stop_after_attempt",
            "attempt_number",
            "class stop_",
            "def __call__",
            "max_attempt_number",
            "RetryError",
            "reraise",
            "def iter",
            "statistics",
            "retry_state",
        ],
        issue="tenacity.stop_after_attempt(3) lets a function run 4 times instead of 3. Find the cause in the "
        "tenacity package in ./tenacity, fix it, and show that a test passes.",
    ),
    Scenario(
        name="packaging-prerelease",
        package="packaging",
        bug_file="version.py",
        correct="return self._dev is not None or self._pre is not None",
        planted="return self._dev is not None and self._pre is not None",
        test=(
            "from packaging.version import Version\nfrom packaging.specifiers import SpecifierSet\n\n\n"
            "def test_alpha_is_prerelease():\n    assert Version('1.2.3a1').is_prerelease\n\n\n"
            "def test_dev_is_prerelease():\n    assert Version('1.2.3.dev1').is_prerelease\n\n\n"
            "def test_final_is_not_prerelease():\n    assert not Version('1.2.3').is_prerelease\n\n\n"
            "def test_filter_skips_prereleases():\n    assert list(SpecifierSet('>=1.0').filter(['1.5', '2.0a1'])) == ['1.5']\n"
        ),
        wrong_old="return self.post is not None",
        wrong_new="return self.post is not None or self.pre is not None",
        greps=[
            "is_prerelease",
            "_pre",
            "_dev",
            "def pre",
            "prereleases",
            "class Version",
            "def __init__",
            "_parse",
            "InvalidVersion",
            "def contains",
        ],
        issue="packaging says Version('1.2.3a1').is_prerelease is False, and specifiers accept alpha releases "
        "they should skip. Find the cause in ./packaging, fix it, and show that a test passes.",
    ),
    Scenario(
        name="click-bool-yes",
        package="click",
        bug_file="types.py",
        correct='"yes": True,',
        planted='"yes": False,',
        test=(
            "import click\nfrom click.testing import CliRunner\n\n\n"
            "def test_yes_is_true():\n    assert click.BOOL.convert('yes', None, None) is True\n\n\n"
            "def test_no_is_false():\n    assert click.BOOL.convert('no', None, None) is False\n\n\n"
            "def test_flag_option_yes():\n"
            "    @click.command()\n    @click.option('--force', type=bool)\n"
            "    def cli(force):\n        click.echo(f'force={force}')\n\n"
            "    result = CliRunner().invoke(cli, ['--force', 'yes'])\n    assert result.output == 'force=True\\n'\n"
        ),
        wrong_old='"y": True,',
        wrong_new='"y": True,\n        "ye": True,',
        greps=[
            "bool_states",
            "class BoolParamType",
            "def convert",
            "str_to_bool",
            "BOOL =",
            "def fail",
            "ParamType",
            "lower()",
            "def get_metavar",
            "is_flag",
        ],
        issue="click treats `--force yes` as False for a bool option. Find the cause in ./click, fix it, and "
        "show that a test passes.",
    ),
]


def reply(text: str, tool: str, **arguments) -> ScriptedReply:
    return ScriptedReply(text=text, tool_calls=[ScriptedCall(name=tool, arguments=arguments)])


def script(s: Scenario, files: list[tuple[str, int]]) -> list[ScriptedReply]:
    """The scripted agent: orient, reproduce, explore, a wrong fix, the right fix, verify, submit."""
    pkg, bug = s.package, f"{s.package}/{s.bug_file}"
    pytest = f"{PY} -m pytest -q test_issue.py"
    start: list[ScriptedReply] = [
        reply("Let me look at the working directory.", "shell", command="ls -la"),
        reply("Which modules does the package have?", "find", name="*.py", path=pkg),
        reply("And how large are they?", "shell", command=f"wc -l {pkg}/*.py | sort -n"),
        reply("The package entry point first.", "read_file", path=f"{pkg}/__init__.py"),
        reply("I'll reproduce the issue with a test.", "write_file", path="test_issue.py", content=s.test),
        reply("Run it.", "shell", command=pytest),
    ]
    explore: list[ScriptedReply] = []
    reads = itertools.cycle(files)
    greps = itertools.cycle(s.greps)
    for i in itertools.count():
        if len(start) + len(explore) >= STEPS - 14:
            break
        kind = i % 4
        if kind == 0:
            pattern = next(greps)
            explore.append(reply(f"Where is `{pattern}` used?", "grep", pattern=pattern, path=pkg, glob="*.py"))
        elif kind == 1:
            path, lines = next(reads)
            explore.append(reply(f"Reading {path}.", "read_file", path=path))
        elif kind == 2:
            path, lines = next(reads)
            first = 1 + (i * 37) % max(1, lines - 120)
            explore.append(
                reply(
                    f"A closer look at part of {path}.", "read_file", path=path, start_line=first, end_line=first + 120
                )
            )
        else:
            explore.append(
                reply(
                    "Re-running the failing test with full tracebacks.",
                    "shell",
                    command=f"{pytest} -x --tb=long 2>&1 | tail -60",
                )
            )
    finish = [
        reply(f"The bug may be here; I'll read {bug} in full.", "read_file", path=bug),
        reply("I think this comparison is the culprit.", "replace", path=bug, old=s.wrong_old, new=s.wrong_new),
        reply("Check whether that fixed it.", "shell", command=pytest),
        reply("That did not help. Let me look at the diff.", "shell", command="git diff"),
        reply("Revert the wrong fix.", "shell", command=f"git checkout -- {bug} && git status --short"),
        reply("Try replacing a broader snippet.", "replace", path=bug, old="return", new="return"),
        reply(
            "Search for the exact line that decides the behaviour.",
            "grep",
            pattern=s.planted.split("(")[0].strip()[:40],
            path=pkg,
        ),
        reply("This is the planted comparison; fix it.", "replace", path=bug, old=s.planted, new=s.correct),
        reply("Run the test again.", "shell", command=pytest),
        reply(
            "Run the package's doctests for the module too.",
            "shell",
            command=f"{PY} -m pytest -q --doctest-modules {bug} 2>&1 | tail -40",
        ),
        reply("Review the final change.", "shell", command="git diff"),
        reply("Check nothing else imports the changed name differently.", "grep", pattern=s.greps[0], path="."),
        reply("One last full run.", "shell", command=f"{pytest} -v"),
        reply("Done.", "submit", answer=f"Fixed {bug}: `{s.planted}` -> `{s.correct}`; test_issue.py passes."),
    ]
    return start + explore + finish


def task(s: Scenario) -> Task:
    inject = (
        "import pathlib\n"
        f"p = pathlib.Path({s.package + '/' + s.bug_file!r})\n"
        "text = p.read_text()\n"
        f"assert {s.correct!r} in text\n"
        f"p.write_text(text.replace({s.correct!r}, {s.planted!r}, 1))\n"
    )
    return Task(
        id=s.name,
        prompt=s.issue,
        files={"plant_bug.py": inject},
        setup=[
            f"cp -r \"$({PY} -c 'import {s.package}, os; print(os.path.dirname({s.package}.__file__))')\" {s.package}"
            f" && find {s.package} -name __pycache__ -prune -exec rm -rf {{}} +",
            f"{PY} plant_bug.py && rm plant_bug.py",
            "git init -q && git add -A && git -c user.email=agent@example.com -c user.name=agent commit -qm base",
        ],
    )


def package_files(package: str) -> list[tuple[str, int]]:
    files = [(p, len(p.read_text().splitlines())) for p in (SITE / package).rglob("*.py")]
    files.sort(key=lambda f: -f[1])
    return [(f"{package}/{p.relative_to(SITE / package)}", n) for p, n in files[:8]]


def record(s: Scenario, out: Path) -> Path:
    policy = HarnessPolicy(
        name="append_only",
        stop=StopPolicy(max_steps=STEPS + 5),
        truncation=TruncationPolicy(head_chars=3000, tail_chars=2000),
    )
    with tempfile.TemporaryDirectory() as tmp:
        model = ScriptedModel(script(s, package_files(s.package)), name=f"scripted:{s.name}")
        summary, run_dir = start(RunSpec(task(s), model, policy, Path(tmp)))
        target = out / s.name
        shutil.rmtree(target, ignore_errors=True)
        target.mkdir(parents=True)
        for name in ("run.json", "events.jsonl"):
            shutil.copy(run_dir / name, target / name)
    print(
        f"{s.name}: {summary.steps} steps, stop {summary.stop_reason}, errors {summary.errors}, "
        f"{(target / 'events.jsonl').stat().st_size // 1024} KB"
    )
    return target


if __name__ == "__main__":
    os.environ["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"
    for scenario in SCENARIOS:
        record(scenario, OUT)
    print(json.dumps({"written": str(OUT)}))
