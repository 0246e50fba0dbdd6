"""The built-in tool sets, by name: a run records the name, so resume and replay offer the same tools."""

from dataclasses import replace

from tools.base import Registry
from tools.builtin.files import READ_FILE, REPLACE, WRITE_FILE
from tools.builtin.search import FIND, GREP
from tools.builtin.shell import SHELL
from tools.builtin.submit import SUBMIT

STANDARD = (SHELL, READ_FILE, WRITE_FILE, REPLACE, GREP, FIND, SUBMIT)

# For work on a repository (SWE tasks): the answer is the work tree, not the submitted text.
REPOSITORY_SUBMIT = replace(
    SUBMIT,
    summary="Finish: your changes to the repository become the patch.",
    description="Call once the fix is done. The run ends; every change in the repository (new files included) "
    "is collected as a git diff.",
)

TOOLSETS = {
    "standard": STANDARD,
    "repository": (*STANDARD[:-1], REPOSITORY_SUBMIT),
}


def standard_tools() -> Registry:
    return Registry.of(STANDARD)


def toolset(name: str) -> Registry:
    if name not in TOOLSETS:
        raise ValueError(f"unknown tool set {name!r}; known: {', '.join(TOOLSETS)}")
    return Registry.of(TOOLSETS[name])
