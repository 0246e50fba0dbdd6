"""The script the grader runs in an instance's container, and the markers in its log.

A self-contained record brings its own script. For a classic record it is written as the
classic harness writes it: the spec's variables and `eval_commands`, the test files reset to
the base commit and the test patch applied, then `test_cmd` with the files the test patch
touches appended (Django's as test modules), between the official output markers. A pytest
command also writes a JUnit XML report, which the grader prefers to the text log.

Every script, a record's own included, first pins what makes test runs differ between machines
and between runs (`PINNED_ENV`: time zone, hash seed, locale); a spec's `env` and `--test-env`
override a value, and an empty value leaves that variable as the image has it.
"""

from __future__ import annotations

import shlex

from core.errors import HarnessError
from evals.swe.task import SweInstance

START = ">>>>> Start Test Output"
END = ">>>>> End Test Output"
APPLY_FAILED = ">>>>> Patch Apply Failed"
APPLIED = ">>>>> Applied Patch"
RESET_FAILED = ">>>>> Reset Failed"
TIMED_OUT = ">>>>> Tests Timed Out"
JUNIT_PATH = "/tmp/harness-junit.xml"
NON_TEST_EXTS = (".json", ".png", "csv", ".txt", ".md", ".jpg", ".jpeg", ".pkl", ".yml", ".yaml", ".toml")
HEREDOC = "EOF_HARNESS_TEST_PATCH"
# Upstream's results change with the machine and the worker count where these are left free
# (SWE-bench #602): set orders follow the hash seed, dates the time zone, sorting and messages the
# locale. C.UTF-8 is what Python itself turns an unset locale into (PEP 538), and every image has it.
PINNED_ENV = {
    "TZ": "UTC",
    "PYTHONHASHSEED": "0",
    "LANG": "C.UTF-8",
    "LC_ALL": "C.UTF-8",
    "PYTHONIOENCODING": "utf-8",
}


def directives(inst: SweInstance) -> list[str]:
    """What the classic harness appends to test_cmd: the test patch's files, Django's as modules."""
    files = [f for f in inst.test_files() if not f.endswith(NON_TEST_EXTS)]
    if inst.repo == "django/django":
        files = [f.removesuffix(".py").removeprefix("tests/").replace("/", ".") for f in files]
    return files


def with_junit(command: str) -> str:
    """A pytest command also writes JUnit XML (ids with spaces and brackets survive it whole)."""
    words = command.split()
    runs_pytest = bool(words) and (words[0] in ("pytest", "py.test") or "-m pytest" in command)
    return f"{command} --junitxml={JUNIT_PATH} -o junit_family=xunit1" if runs_pytest else command


def pinned(inst: SweInstance) -> list[str]:
    """The `export` lines that pin the test environment: the defaults with the instance's overrides."""
    values = {**PINNED_ENV, **inst.test_env}
    return [f"export {k}={shlex.quote(v)}" for k, v in values.items() if v != ""]


def classic_script(inst: SweInstance) -> str:
    spec = inst.spec
    if spec is None:
        raise HarnessError(
            f"Instance {inst.instance_id}: it has no eval_script and no spec for {inst.repo} version "
            f"{inst.version!r} to write one from; pass --specs FILE."
        )
    base = shlex.quote(inst.base_commit)
    files = [shlex.quote(f) for f in inst.test_files()]
    reset = [f"git checkout -q {base} -- {f} 2>/dev/null || rm -f {f}" for f in files]
    commands = [spec.test_cmd] if isinstance(spec.test_cmd, str) else list(spec.test_cmd)
    commands[-1] = with_junit(commands[-1]) + "".join(" " + shlex.quote(d) for d in directives(inst))
    lines = [
        "#!/bin/bash",
        "set -uxo pipefail",
        "cd /testbed",
        *pinned(inst),
        *(f"export {k}={shlex.quote(v)}" for k, v in spec.env.items()),
        *spec.eval_commands,
        *reset,
        f"git apply -v - <<'{HEREDOC}' || {{ echo '{RESET_FAILED}'; exit 1; }}",
        inst.test_patch.rstrip("\n"),
        HEREDOC,
        f"echo '{START}'",
        *commands,
        f"echo '{END}'",
        *reset,
    ]
    return "\n".join(lines) + "\n"


def eval_script(inst: SweInstance) -> str:
    if inst.eval_script is None:
        return classic_script(inst)
    script = inst.eval_script
    if not script.startswith("#!"):
        script = "#!/bin/bash\nset -uxo pipefail\n" + script
    shebang, _, rest = script.partition("\n")
    script = "\n".join([shebang, *pinned(inst), rest])  # the record's own exports still win: they come later
    return script if script.endswith("\n") else script + "\n"


def marked_output(log: str) -> str | None:
    """The part of a log between the markers; None when the tests never started or the log says they broke."""
    if RESET_FAILED in log or START not in log or END not in log:
        return None
    return log.split(START, 1)[1].split(END, 1)[0]  # as the official harness slices it
