"""Knowledge-update probes: scripted runs whose world changes under the agent, with compaction in the middle.

Each probe is a task's files, the edits the world makes to them after given steps (a background process, as
far as the agent can tell: it did not make them), the agent's scripted replies (it reads, notes what it read
in its memory, reads again later and updates the note), and the history of one value as the agent noted it:
each value is read at one step and noted at the next. After each fold the prompt must show the value the
agent noted last as current, and every older one as superseded or not at all (evals.probes.check). A fold
between a read and its note judges the note before: the memory holds what the agent wrote into it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from agent.models.scripted import ScriptedCall, ScriptedReply


@dataclass(frozen=True)
class Probe:
    name: str
    what: str  # one line: how the world changes
    files: dict[str, str]
    changes: dict[int, dict[str, str]]  # after step k: these files hold this content (the world changed)
    replies: list[ScriptedReply]
    noted: list[tuple[int, str]]  # (the step the agent noted it at, the value as it reads) in order
    prompt: str = "Keep track of the project's state while you work; note what you observe in your memory."
    setup: list[str] = field(default_factory=list)

    def latest(self, step: int) -> tuple[str | None, list[str]]:
        """The value the agent had noted last by the end of `step`, and the older values."""
        seen = [value for at, value in self.noted if at <= step]
        return (seen[-1], seen[:-1]) if seen else (None, [])


def call(name: str, **arguments) -> ScriptedReply:
    return ScriptedReply(tool_calls=[ScriptedCall(name=name, arguments=arguments)])


def note(path: str, text: str, source: str) -> ScriptedReply:
    return call("memory", command="create", path=path, file_text=text, source=source)


def update(path: str, old: str, new: str, source: str) -> ScriptedReply:
    return call("memory", command="str_replace", path=path, old_str=old, new_str=new, source=source)


def busy(what: str) -> ScriptedReply:
    return call("shell", command=f"echo {what}")


CONFIG = "[server]\nhost = db.internal\nport = 5432\ntimeout = {}\nretries = 3\n"
CONFIG_EDITED = Probe(
    name="config_edited",
    what="a background process edits config.ini's timeout twice (30, then 75, then 120)",
    files={"config.ini": CONFIG.format(30)},
    changes={3: {"config.ini": CONFIG.format(75)}, 7: {"config.ini": CONFIG.format(120)}},
    replies=[
        call("shell", command="cat config.ini"),
        note("/memories/config.md", "config.ini: timeout = 30\n", "call_1_0"),
        busy("checking the client"),
        call("shell", command="cat config.ini"),
        update("/memories/config.md", "timeout = 30", "timeout = 75", "call_4_0"),
        busy("reading the client code"),
        busy("running the client"),
        call("shell", command="cat config.ini"),
        update("/memories/config.md", "timeout = 75", "timeout = 120", "call_8_0"),
        busy("comparing timeouts"),
        busy("writing the report"),
        busy("checking the report"),
        call("submit", answer="done"),
    ],
    noted=[(2, "timeout = 30"), (5, "timeout = 75"), (9, "timeout = 120")],
)

TEST_SCRIPT = """from calc import add

results = [add(2, 2) == 4, add(0, 0) == 0, add(-1, 1) == 0]
failed = results.count(False)
print(f"tests: {failed} failed" if failed else f"tests: {len(results)} passed")
raise SystemExit(1 if failed else 0)
"""
TEST_FLIPS = Probe(
    name="test_flips",
    what="a test fails, the agent fixes the code, the test passes",
    files={"calc.py": "def add(a, b):\n    return a - b\n", "test_calc.py": TEST_SCRIPT},
    changes={},
    replies=[
        call("shell", command="python3 test_calc.py"),
        note("/memories/tests.md", "test_calc.py: tests: 2 failed\n", "call_1_0"),
        call("read_file", path="calc.py"),
        call("replace", path="calc.py", old="return a - b", new="return a + b"),
        call("shell", command="python3 test_calc.py"),
        update("/memories/tests.md", "tests: 2 failed", "tests: 3 passed", "call_5_0"),
        busy("reviewing the diff"),
        busy("cleaning up"),
        busy("checking the style"),
        busy("writing the summary"),
        call("submit", answer="fixed"),
    ],
    noted=[(2, "tests: 2 failed"), (6, "tests: 3 passed")],
)

RELEASE = "version: {}\nchannel: {}\n"
FILE_REPLACED = Probe(
    name="file_replaced",
    what="a background process replaces release.txt, which the agent read, with a new release's",
    files={"release.txt": RELEASE.format("1.4.2", "stable")},
    changes={4: {"release.txt": RELEASE.format("2.0.0-rc1", "beta")}},
    replies=[
        call("read_file", path="release.txt"),
        note("/memories/release.md", "release.txt: version: 1.4.2 (stable)\n", "call_1_0"),
        busy("planning the upgrade"),
        busy("listing the changes"),
        call("read_file", path="release.txt"),
        update("/memories/release.md", "version: 1.4.2 (stable)", "version: 2.0.0-rc1 (beta)", "call_5_0"),
        busy("drafting the notes"),
        busy("checking the links"),
        busy("reading the notes again"),
        busy("finishing"),
        call("submit", answer="done"),
    ],
    noted=[(2, "version: 1.4.2"), (6, "version: 2.0.0-rc1")],
)

PROBES = (CONFIG_EDITED, TEST_FLIPS, FILE_REPLACED)
