import json

import pytest

from core.errors import HarnessError
from evals.swe.task import load_instances, suite_path
from evals.swe.testlog import parse_pytest


def test_the_builtin_suite_loads_with_valid_records():
    instances = load_instances(suite_path("builtin"))
    assert len(instances) >= 4
    for inst in instances:
        assert inst.FAIL_TO_PASS and inst.patch and inst.test_patch and inst.source.endswith(".bundle")


def good_record(**changes):
    record = json.loads(suite_path("builtin").read_text().splitlines()[0])
    record["source"] = str(suite_path("builtin").parent / record["source"])
    record.update(changes)
    return record


@pytest.mark.parametrize(
    "changes, expected",
    [
        ({"instance_id": "inventory-12"}, ["line 2", "instance_id", "owner__repo-N"]),
        ({"FAIL_TO_PASS": "[not json"}, ["line 2", "FAIL_TO_PASS", "JSON-encoded list"]),
        ({"test_patch": ""}, ["line 2", "test_patch"]),
        ({"source": None}, ["line 2", "set `source`"]),
        ({"source": "repos/missing.bundle"}, ["line 2", "does not exist"]),
    ],
)
def test_a_bad_record_is_named_by_line_and_field(tmp_path, changes, expected):
    path = tmp_path / "tasks.jsonl"
    path.write_text(json.dumps(good_record(instance_id="acme__other-1")) + "\n" + json.dumps(good_record(**changes)) + "\n")
    with pytest.raises(HarnessError) as err:
        load_instances(path)
    for fragment in expected:
        assert fragment in str(err.value)


def test_an_unparseable_line_and_an_unknown_suite():
    with pytest.raises(HarnessError, match="No suite 'nope'"):
        suite_path("nope")


def test_pytest_log_parsing_takes_the_worst_status():
    log = "\n".join([
        "tests/test_a.py::test_x PASSED                                  [ 25%]",
        "tests/test_a.py::test_y[1-2] FAILED                             [ 50%]",
        "tests/test_a.py::test_z SKIPPED (no reason)                     [ 75%]",
        "tests/test_a.py::test_x ERROR                                   [100%]",
        "FAILED tests/test_a.py::test_y[1-2] - AssertionError: boom",
        "ERROR tests/test_b.py::test_w - fixture 'nope' not found",
    ])
    assert parse_pytest(log) == {
        "tests/test_a.py::test_x": "ERROR",
        "tests/test_a.py::test_y[1-2]": "FAILED",
        "tests/test_a.py::test_z": "SKIPPED",
        "tests/test_b.py::test_w": "ERROR",
    }
