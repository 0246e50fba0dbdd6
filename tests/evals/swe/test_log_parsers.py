"""Test log parsing: whole ids from pytest, Django and sympy logs, and agreement with the official parsers."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from evals.swe.logparsers import parse_django, parse_junit, parse_pytest, parse_sympy
from evals.swe.testlog import lookup, maintained, passed

LOGS = Path(__file__).parent / "logs"
FILESIZE = "tests/test_filesize.py::test_naturalsize"

# The ids a dataset would hold for each recorded log, in full and, where the official pytest
# parser cuts them at the first space, cut as published datasets hold them.
DATASET_IDS = {
    "parse_log_pytest": (
        "pytest_rA.log",
        [
            f"{FILESIZE}[test_args62-1 Bytes]",
            f"{FILESIZE}[test_args62-1",
            f"{FILESIZE}[test_args0-300 B]",
            f"{FILESIZE}[test_args63-2 Bytes - raw]",
            f"{FILESIZE}[test_args63-2",
            "tests/test_filesize.py::test_gnu[1]",
            "tests/test_time.py::TestDelta::test_seconds",
            "tests/test_time.py::test_fmt[%H:%M]",
            "tests/test_time.py::test_leap",
            "tests/test_time.py::test_dst",
            "tests/test_time.py::test_tz",
            "tests/test_time.py::test_missing",
        ],
    ),
    "parse_log_django": (
        "django.log",
        [
            "test_add_field (migrations.test_operations.OperationTests)",
            "test_alter_field (migrations.test_operations.OperationTests)",
            "test_rename_model (migrations.test_operations.OperationTests)",
            "test_create_model_m2m (migrations.test_operations.OperationTests)",
            "test_unexpected (migrations.test_operations.OperationTests)",
            "AlterField keeps the db_column of a renamed field.",
            "test_noisy (migrations.test_operations.OperationTests)",
            "test_references_model (migrations.test_operations.FieldOperationTests)",
        ],
    ),
    "parse_log_sympy": (
        "sympy.log",
        [
            "test_structure",
            "test_equality",
            "test_matches_basic",
            "test_basic",
            "test_ibasic",
            "test_leading_term",
        ],
    ),
}
OURS = {"parse_log_pytest": parse_pytest, "parse_log_django": parse_django, "parse_log_sympy": parse_sympy}


def test_pytest_summary_ids_stay_whole():
    found = parse_pytest((LOGS / "pytest_rA.log").read_text())
    assert found[f"{FILESIZE}[test_args62-1 Bytes]"] == "PASSED"
    assert found[f"{FILESIZE}[test_args63-2 Bytes - raw]"] == "FAILED"
    assert found["tests/test_time.py::test_fmt[%H:%M]"] == "PASSED"
    assert found["tests/test_time.py::test_leap"] == "XFAIL"
    assert found["tests/test_time.py::test_tz"] == "ERROR"
    assert not any(k.startswith("[1]") for k in found)  # `SKIPPED [1] file:line` names no test


def test_django_and_sympy_statuses():
    django = parse_django((LOGS / "django.log").read_text())
    assert django["test_alter_field (migrations.test_operations.OperationTests)"] == "FAILED"
    assert django["test_noisy (migrations.test_operations.OperationTests)"] == "PASSED"  # outcome after printed output
    assert django["AlterField keeps the db_column of a renamed field."] == "PASSED"
    assert django["test_create_model_m2m (migrations.test_operations.OperationTests)"] == "SKIPPED"
    sympy = parse_sympy((LOGS / "sympy.log").read_text())
    assert sympy == {
        "test_structure": "PASSED",
        "test_equality": "FAILED",
        "test_matches_basic": "ERROR",
        "test_basic": "PASSED",
        "test_ibasic": "PASSED",
    }


@pytest.mark.parametrize("parser", sorted(DATASET_IDS))
def test_our_parsers_grade_recorded_logs_as_the_official_ones_do(parser):
    pytest.importorskip("swebench", reason="needs the swebench extra: pip install 'harness[swebench]'")
    from swebench.harness.log_parsers import PARSER_REGISTRY

    name, ids = DATASET_IDS[parser]
    log = (LOGS / name).read_text()
    ours, official = lookup(OURS[parser](log)), lookup(PARSER_REGISTRY[parser](log, None))
    for test in ids:
        assert (passed(ours(test)), maintained(ours(test))) == (passed(official(test)), maintained(official(test))), (
            test
        )
    assert any(passed(ours(t)) for t in ids) and any(not passed(ours(t)) for t in ids)  # the fixtures hold both


def test_lookup_matches_ids_in_full_cut_at_the_first_space_or_cut_inside_brackets():
    found = {"t.py::f[a b]": "PASSED", "t.py::g[x": "FAILED", "t.py::h[long(param]": "PASSED"}
    status = lookup(found)
    assert status("t.py::f[a b]") == "PASSED"
    assert status("t.py::f[a") == "PASSED"  # a dataset built by the official parser holds the cut id
    assert status("t.py::g[x y]") == "FAILED"  # the log was parsed by the official parser, the dataset is whole
    assert status("t.py::h[long(") == "PASSED"  # cut inside the parameters, as 676 Verified ids are
    assert status("t.py::nope") is None


JUNIT = """<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest">
<testcase classname="tests.test_a" name="test_x[a b: ü]" file="tests/test_a.py" line="1"/>
<testcase classname="tests.test_a.TestK" name="test_y" file="tests/test_a.py" line="5"><failure message="boom"/></testcase>
<testcase classname="tests.test_a" name="test_z" file="tests/test_a.py" line="9"><skipped type="pytest.xfail" message=""/></testcase>
<testcase classname="tests.test_a" name="test_z" file="tests/test_a.py" line="9"><error message="teardown"/></testcase>
<testcase classname="" name="tests.test_b" file="tests/test_b.py"><error message="collection failure"/></testcase>
</testsuite></testsuites>"""


def test_junit_xml_gives_node_ids():
    assert parse_junit(JUNIT) == {
        "tests/test_a.py::test_x[a b: ü]": "PASSED",
        "tests/test_a.py::TestK::test_y": "FAILED",
        "tests/test_a.py::test_z": "ERROR",  # the worst status of its phases
        "tests/test_b.py": "ERROR",
    }


# Parameter text: anything printable but brackets and line breaks, with balanced bracket groups inside.
PARAM_TEXT = st.text(
    st.characters(blacklist_categories=("Cc", "Cs", "Zl", "Zp"), blacklist_characters="[]\n\r"), max_size=40
)
PARAMS = st.lists(st.one_of(PARAM_TEXT, PARAM_TEXT.map(lambda s: f"[{s}]")), min_size=1, max_size=4).map("".join)


@given(params=PARAMS.filter(lambda p: p.strip() == p and p), message=PARAM_TEXT.filter(str.strip))
@example(params="a - b", message="x")  # an ERROR line with no message, every ` - ` inside the brackets
def test_any_parametrised_id_survives_summary_and_verbose_lines(params, message):
    test = f"tests/test_p.py::TestC::test_p[{params}]"
    for line, status in (
        (f"PASSED {test}", "PASSED"),
        (f"FAILED {test} - {message}", "FAILED"),
        (f"ERROR {test}", "ERROR"),
        (f"{test} PASSED                  [ 50%]", "PASSED"),
        (f"{test} XFAIL (reason)", "XFAIL"),
    ):
        assert parse_pytest(line) == {test: status}, line
