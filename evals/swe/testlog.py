"""From a test log to per-test statuses, and from a dataset's test id to its status.

A parser is named as in swebench's PARSER_REGISTRY. With the official `swebench` package
installed (`pip install 'harness[swebench]'`), a named parser is the official one, so a log
is graded exactly as the official harness grades it; without it, this project's own
(evals/swe/logparsers.py) stand in for the Python runners. With no name, pytest's JUnit XML
is read where the grader has it, and the anchored pytest text parser covers the rest.

Dataset ids are matched in full, or cut at the first space (the official pytest parser splits
status lines at whitespace, so published datasets hold such ids cut), or, for ids cut inside
their parameters (more `[` than `]`), by prefix when every candidate agrees, as upstream does.
"""

from __future__ import annotations

import importlib.util
from collections import defaultdict
from collections.abc import Callable

from core.errors import HarnessError
from evals.swe.logparsers import parse_django, parse_junit, parse_pytest, parse_sympy
from evals.swe.task import SweInstance

Parser = Callable[[str], dict[str, str]]

# The official Python parsers this project stands in for: Django's and sympy's runners have
# their own; the rest read pytest's output.
PYTEST_FAMILY = (
    "pytest",
    "pytest_options",
    "pytest_v2",
    "seaborn",
    "matplotlib",
    "astroid",
    "flask",
    "marshmallow",
    "pvlib",
    "pyvista",
    "sqlfluff",
    "xarray",
    "pydicom",
    "requests",
    "pylint",
    "astropy",
    "scikit",
    "sphinx",
)
OWN_PARSERS: dict[str, Parser] = {
    **{f"parse_log_{name}": parse_pytest for name in PYTEST_FAMILY},
    "parse_log_django": parse_django,
    "parse_log_sympy": parse_sympy,
}


def official_available() -> bool:
    return importlib.util.find_spec("swebench") is not None


def official_parser(name: str, inst: SweInstance) -> Parser | None:
    """The official parser of that name, when the `swebench` package is installed."""
    if not official_available():
        return None
    from swebench.harness.log_parsers import PARSER_REGISTRY
    from swebench.types import TestSpec

    if name not in PARSER_REGISTRY:
        return None
    spec = TestSpec(
        instance_id=inst.instance_id,
        image=inst.image or "",
        eval_script_list=[],
        repo=inst.repo,
        version=inst.version,
        FAIL_TO_PASS=inst.FAIL_TO_PASS,
        PASS_TO_PASS=inst.PASS_TO_PASS,
        log_parser=name,
        eval_type=inst.eval_type,
    )
    return lambda log: PARSER_REGISTRY[name](log, spec)


def parser_name(inst: SweInstance) -> str | None:
    return inst.log_parser or (inst.spec.log_parser if inst.spec else None)


def check_parser(inst: SweInstance) -> None:
    """Fail early, before any image is built, for a parser neither side knows."""
    name = parser_name(inst)
    if name is None or name in OWN_PARSERS or official_parser(name, inst) is not None:
        return
    hint = "" if official_available() else " With `pip install 'harness[swebench]'` every official parser is available."
    raise HarnessError(
        f"Instance {inst.instance_id}: unknown log parser {name!r}; this project has "
        f"{', '.join(sorted(OWN_PARSERS))}.{hint}"
    )


def statuses(inst: SweInstance, output: str, whole_log: str, junit: str | None) -> dict[str, str]:
    """Per-test statuses of one run: `output` is the part between the markers."""
    name = parser_name(inst)
    official = official_parser(name, inst) if name else None
    if official is not None:  # exactly as the official harness: the slice, else the whole log
        return official(output) or official(whole_log)
    found = OWN_PARSERS[name or "parse_log_pytest"](output)
    if junit:
        found.update(parse_junit(junit))
    return found


def lookup(found: dict[str, str]) -> Callable[[str], str | None]:
    """The status of a dataset's test id in `found`, written in full or cut at the first space."""
    by_cut: dict[str, list[str]] = defaultdict(list)
    for key in found:
        if " " in key:
            by_cut[key.split()[0]].append(key)

    def agreed(keys: list[str]) -> str | None:
        return found[keys[0]] if keys and len({passed(found[k]) for k in keys}) == 1 else None

    def status(test: str) -> str | None:
        if test in found:
            return found[test]
        cut = test.split()[0] if test.strip() else test
        if cut in found:
            return found[cut]
        if test in by_cut:
            return agreed(by_cut[test])
        if test.count("[") > test.count("]"):
            return agreed([k for k in found if k.startswith(test)])
        return None

    return status


def passed(status: str | None) -> bool:
    """An expected failure counts as a pass, as upstream does; a skipped or missing test does not."""
    return status in ("PASSED", "XFAIL")


def maintained(status: str | None) -> bool:
    """PASS_TO_PASS: a skipped test is no regression (upstream's test_maintained)."""
    return passed(status) or status == "SKIPPED"
