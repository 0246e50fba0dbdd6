"""A task file of any content is a task or one HarnessError saying what is wrong, never a traceback."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from agent.run.task import Task, load_task
from tests.core.data_texts import read_or_refused, yaml_texts

WORDS = sorted({*Task.model_fields, "a.txt", "echo hi", "server:file:///x"})


@settings(max_examples=200, deadline=None)
@given(yaml_texts(WORDS), st.sampled_from([".yaml", ".yml", ".json"]))
def test_any_task_file_is_a_task_or_a_clear_error(text, suffix):
    task = read_or_refused(text, f"task{suffix}", lambda path: load_task(str(path)))
    if task is not None:
        task.model_dump_json()  # as run.json and the journal's first message hold it
