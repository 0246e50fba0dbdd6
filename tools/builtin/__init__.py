"""The standard tool set: shell, files, edit, search and submit."""

from tools.base import Registry
from tools.builtin.files import READ_FILE, REPLACE, WRITE_FILE
from tools.builtin.search import FIND, GREP
from tools.builtin.shell import SHELL
from tools.builtin.submit import SUBMIT

STANDARD = (SHELL, READ_FILE, WRITE_FILE, REPLACE, GREP, FIND, SUBMIT)


def standard_tools() -> Registry:
    return Registry.of(STANDARD)
