"""The memory tool against Anthropic's own reference implementation (the SDK's local-filesystem memory tool):
the same commands give the same replies and leave the same files. And what Anthropic's tool has no answer
for: paths outside the store, files over the limit, text that is not UTF-8, a full quota."""

from __future__ import annotations

import json

import pytest
from anthropic.lib.tools._beta_builtin_memory_tool import BetaLocalFilesystemMemoryTool
from anthropic.lib.tools._beta_functions import ToolError
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent.journal.store import read_events
from agent.memory_store import MemoryStore
from core.events import MemoryWritten
from core.memory_entries import files_of
from core.policy import MemoryPolicy
from sandboxes.local import LocalSandbox
from tests.agent.helpers import new_journal
from tools.base import ToolContext
from tools.builtin.memory import MemoryArgs, memory_tool


class Harness:
    """Our tool on a real run store, called as the dispatcher calls it."""

    def __init__(self, root, limits: MemoryPolicy = MemoryPolicy()):
        self.journal = new_journal(root, "r")
        self.store = MemoryStore([], "r", "task-1", self.journal)
        self.tool = memory_tool(self.store, limits)
        self.sandbox = LocalSandbox(root / "box")
        self.n = 0

    def __call__(self, **args) -> tuple[bool, str]:
        self.n += 1
        ctx = ToolContext(sandbox=self.sandbox, timeout_s=5, call_id=f"c{self.n}", step=self.n)
        result = self.tool.run(MemoryArgs.model_validate(args), ctx)
        return result.ok, result.text


def reference(tool: BetaLocalFilesystemMemoryTool, **args) -> tuple[bool, str]:
    try:
        return True, str(tool.call(args))
    except ToolError as e:
        return False, str(e)


def reference_files(tool: BetaLocalFilesystemMemoryTool) -> dict[str, str]:
    root = tool.memory_root
    return {f"/memories/{p.relative_to(root).as_posix()}": p.read_text() for p in root.rglob("*") if p.is_file()}


SCRIPT = [
    {"command": "create", "path": "/memories/notes.md", "file_text": "timeout = 30\nretries = 2\n"},
    {"command": "create", "path": "/memories/notes.md", "file_text": "again"},
    {"command": "view", "path": "/memories/notes.md"},
    {"command": "view", "path": "/memories/notes.md", "view_range": [2, -1]},
    {"command": "str_replace", "path": "/memories/notes.md", "old_str": "timeout = 30", "new_str": "timeout = 60"},
    {"command": "str_replace", "path": "/memories/notes.md", "old_str": "absent", "new_str": "x"},
    {"command": "create", "path": "/memories/twice.md", "file_text": "a\nb\na\n"},
    {"command": "str_replace", "path": "/memories/twice.md", "old_str": "a", "new_str": "c"},
    {"command": "insert", "path": "/memories/notes.md", "insert_line": 1, "insert_text": "host = db\n"},
    {"command": "insert", "path": "/memories/notes.md", "insert_line": 9, "insert_text": "x"},
    {"command": "rename", "old_path": "/memories/twice.md", "new_path": "/memories/dir/twice.md"},
    {"command": "rename", "old_path": "/memories/notes.md", "new_path": "/memories/dir/twice.md"},
    {"command": "rename", "old_path": "/memories/gone.md", "new_path": "/memories/x.md"},
    {"command": "view", "path": "/memories/gone.md"},
    {"command": "delete", "path": "/memories/dir/twice.md"},
    {"command": "delete", "path": "/memories/gone.md"},
    {"command": "delete", "path": "/memories"},
    {"command": "view", "path": "/etc/passwd"},
    {"command": "create", "path": "/memories/../escape.md", "file_text": "x"},
]


def test_replies_and_files_match_anthropics_reference_implementation(tmp_path):
    ours, theirs = Harness(tmp_path / "ours"), BetaLocalFilesystemMemoryTool(str(tmp_path / "theirs"))
    for command in SCRIPT:
        assert ours(**command) == reference(theirs, **command), command
        assert ours.store.files() == reference_files(theirs)


def test_a_directory_view_lists_two_levels_without_hidden_items(tmp_path):
    ours, theirs = Harness(tmp_path / "ours"), BetaLocalFilesystemMemoryTool(str(tmp_path / "theirs"))
    for path in ("/memories/a.md", "/memories/d/b.md", "/memories/d/e/c.md", "/memories/d/e/f/deep.md", "/memories/.h"):
        for tool in (ours, lambda **a: reference(theirs, **a)):
            tool(command="create", path=path, file_text="x" * 3)
    ok, text = ours(command="view", path="/memories")
    _, expected = reference(theirs, command="view", path="/memories")
    assert ok
    # Sizes of directories are the bytes of their files here, the file system's block size there.
    assert [line.split("\t")[1] for line in text.splitlines()[1:]] == [
        line.split("\t")[1] for line in expected.splitlines()[1:]
    ]
    assert "excluding hidden items" in text.splitlines()[0]
    assert "3B\t/memories/a.md" in text and "/memories/d/e/f/" not in text


def test_every_change_is_journaled_with_its_provenance_and_the_journal_rebuilds_the_store(tmp_path):
    h = Harness(tmp_path)
    h(command="create", path="/memories/config.md", file_text="timeout = 30\n", source="call_7")
    h(command="str_replace", path="/memories/config.md", old_str="30", new_str="60", source="call_9")
    h(command="rename", old_path="/memories/config.md", new_path="/memories/settings.md")
    h(command="view", path="/memories")
    written = [e for e in read_events(h.journal.dir) if isinstance(e, MemoryWritten)]
    assert [w.call_id for w in written] == ["c1", "c2", "c3"]  # a view writes nothing
    first, second = written[0].entries[0], written[1].entries[0]
    assert (first.kind, first.source, first.step, first.supersedes) == ("observation", "call_7", 1, None)
    assert second.supersedes == first.id and second.text == "timeout = 60\n"
    gone, moved = written[2].entries
    assert (gone.text, gone.moved_to, moved.supersedes) == (None, "/memories/settings.md", second.id)
    assert moved.kind == "conclusion"  # no source named: what the agent concluded, not what it saw
    rebuilt = MemoryStore([], "r", "task-1", h.journal, written=written)
    assert rebuilt.ledger == h.store.ledger and rebuilt.files() == {"/memories/settings.md": "timeout = 60\n"}
    assert (tmp_path / "r" / "memories" / "settings.md").read_text() == "timeout = 60\n"
    assert not (tmp_path / "r" / "memories" / "config.md").exists()


@pytest.mark.parametrize(
    ("args", "says"),
    [
        ({"command": "view", "path": "/etc"}, "Path must start with /memories, got: /etc"),
        ({"command": "view", "path": "memories/x"}, "Path must start with /memories"),
        ({"command": "create", "path": "/memories/../../x", "file_text": "x"}, "would escape /memories"),
        ({"command": "create", "path": "/memories/a\x00b", "file_text": "x"}, "NUL character"),
        ({"command": "create", "path": "/memories/big.md", "file_text": "x" * 101}, "over the limit of 100 bytes"),
        ({"command": "create", "path": "/memories/bad.md", "file_text": "a\ud800b"}, "not valid UTF-8"),
        ({"command": "create", "path": "/memories"}, "create needs file_text"),
        ({"command": "view", "path": "/memories/a.md", "view_range": [5, 9]}, "it has 2 lines"),
    ],
)
def test_bad_input_is_one_clear_observation_and_changes_nothing(tmp_path, args, says):
    h = Harness(tmp_path, MemoryPolicy(max_file_bytes=100, max_total_bytes=150))
    h(command="create", path="/memories/a.md", file_text="hello\n")
    before = h.store.files()
    try:
        ok, text = h(**args)
    except ValueError as e:  # arguments the schema refuses: the dispatcher turns these into an observation
        ok, text = False, str(e)
    assert not ok and says in text
    assert h.store.files() == before


def test_a_full_quota_refuses_the_write_that_would_pass_it(tmp_path):
    h = Harness(tmp_path, MemoryPolicy(max_file_bytes=100, max_total_bytes=150))
    assert h(command="create", path="/memories/a.md", file_text="x" * 100)[0]
    ok, text = h(command="create", path="/memories/b.md", file_text="y" * 60)
    assert not ok and text.startswith("The memory is full: this change would bring it to 160 bytes")
    assert (
        h(command="delete", path="/memories/a.md")[0] and h(command="create", path="/memories/b.md", file_text="y")[0]
    )


def test_the_schema_has_one_object_per_command_with_what_it_needs():
    schema = memory_tool(None, MemoryPolicy()).schema()  # type: ignore[arg-type]
    assert schema["type"] == "object"
    branches = {b["properties"]["command"]["const"]: b for b in schema["anyOf"]}
    assert list(branches) == ["view", "create", "str_replace", "insert", "delete", "rename"]
    assert branches["create"]["required"] == ["command", "path", "file_text"]
    assert branches["rename"]["required"] == ["command", "old_path", "new_path"]
    assert set(branches["view"]["properties"]) == {"command", "path", "view_range"}
    assert branches["insert"]["properties"]["path"]["pattern"] == "^/memories(/.*)?$"
    json.dumps(schema)


PATHS = st.sampled_from(["/memories/a.md", "/memories/b.md", "/memories/d/c.md"])
TEXT = st.text(alphabet="ab\n", max_size=8)
COMMANDS = st.one_of(
    st.builds(lambda p, t: {"command": "create", "path": p, "file_text": t}, PATHS, TEXT),
    st.builds(lambda p, o, n: {"command": "str_replace", "path": p, "old_str": o, "new_str": n}, PATHS, TEXT, TEXT),
    st.builds(
        lambda p, i, t: {"command": "insert", "path": p, "insert_line": i, "insert_text": t},
        PATHS,
        st.integers(0, 3),
        TEXT,
    ),
    st.builds(lambda p: {"command": "delete", "path": p}, PATHS),
    st.builds(lambda a, b: {"command": "rename", "old_path": a, "new_path": b}, PATHS, PATHS),
    st.builds(lambda p: {"command": "view", "path": p}, PATHS),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(script=st.lists(COMMANDS, max_size=12))
def test_any_script_matches_the_reference_and_the_ledger_keeps_every_version(tmp_path_factory, script):
    root = tmp_path_factory.mktemp("m")
    ours, theirs = Harness(root / "ours"), BetaLocalFilesystemMemoryTool(str(root / "theirs"))
    seen = []
    for command in script:
        if command["command"] == "str_replace" and not command["old_str"]:
            continue  # the reference replaces an empty string everywhere; ours says it does not occur
        assert ours(**command) == reference(theirs, **command), command
        assert ours.store.files() == reference_files(theirs)
        seen.append((len(ours.store.ledger), ours.store.files()))
    # Every version is kept: each prefix of the ledger still gives the files as they were then.
    assert all(files_of(ours.store.ledger[:n]) == files for n, files in seen)
