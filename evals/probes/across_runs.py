"""Runs that share a kept memory: run k of a chain in one repository reads the note run k-1 wrote.

Run k views /memories, views run k-1's note, bumps a progress counter (`runs done: k`) and writes its own
note, then submits: a chain of such runs over one store shows what each read and wrote, and whether any
write was lost (the counter ends at the chain's length)."""

from __future__ import annotations

REPO = {"README.md": "# demo\n", "src/app.py": "def main():\n    return 1\n"}


def call(**arguments: str) -> dict:
    return {"tool_calls": [{"name": "memory", "arguments": arguments}]}


SUBMIT = {"tool_calls": [{"name": "submit", "arguments": {"answer": "done"}}]}


def script(k: int) -> list[dict]:
    """Run k's scripted replies (k from 1), as a `scripted:FILE` model's YAML holds them."""
    progress = (
        call(command="create", path="/memories/progress.md", file_text="runs done: 1\n")
        if k == 1
        else call(
            command="str_replace",
            path="/memories/progress.md",
            old_str=f"runs done: {k - 1}",
            new_str=f"runs done: {k}",
        )
    )
    return [
        call(command="view", path="/memories"),
        call(command="view", path=f"/memories/runs/run-{k - 1}.md" if k > 1 else "/memories"),
        progress,
        call(command="create", path=f"/memories/runs/run-{k}.md", file_text=f"run {k} looked at src/app.py\n"),
        SUBMIT,
    ]
