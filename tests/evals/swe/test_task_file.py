import json
import subprocess

import pytest

from core.errors import HarnessError
from evals.swe.evalscript import classic_script, directives, marked_output
from evals.swe.sources import local_repository, official_image
from evals.swe.specs import Spec, load_specs
from evals.swe.suite import load_instances, parse_build_env, suite_path, unknown_predictions
from evals.swe.task import SweInstance, read_records


def test_the_builtin_suite_loads_with_its_specs():
    instances = load_instances(suite_path("builtin"))
    assert len(instances) >= 4
    for inst in instances:
        assert inst.FAIL_TO_PASS and inst.patch and inst.test_patch and inst.source.endswith(".bundle")
        assert inst.spec is not None and "pytest" in inst.spec.test_cmd


def published(**changes):
    """A classic record as SWE-bench publishes it: no environment inside, JSON-encoded test lists."""
    record = {
        "repo": "psf/requests",
        "instance_id": "psf__requests-2317",
        "base_commit": "091991be0da19de9108dbe5e3752917fea3d7fdc",
        "patch": "diff --git a/requests/sessions.py b/requests/sessions.py\n",
        "problem_statement": "method = builtin_str(method) problem",
        "test_patch": "diff --git a/test_requests.py b/test_requests.py\n--- a/test_requests.py\n+++ b/test_requests.py\n"
        "diff --git a/tests/data/x.json b/tests/data/x.json\n",
        "hints_text": "",
        "created_at": "2014-11-01T02:20:16Z",
        "version": "2.4",
        "FAIL_TO_PASS": '["test_requests.py::RequestsTestCase::test_HTTP_200_OK_GET_ALTERNATIVE"]',
        "PASS_TO_PASS": '["test_requests.py::RequestsTestCase::test_basic_building"]',
        "environment_setup_commit": "091991be",
    }
    record.update(changes)
    return record


def write(tmp_path, *records, name="tasks.jsonl"):
    path = tmp_path / name
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def test_a_classic_record_loads_with_a_spec_file_in_yaml_or_json(tmp_path):
    path = write(tmp_path, published(), published(instance_id="any string at all: ü [1]"))
    (tmp_path / "specs.json").write_text(
        json.dumps({"psf/requests": {"2.4": {"python": "3.9", "test_cmd": "pytest -rA", "nano_cpus": 2}}})
    )
    (tmp_path / "specs.yml").write_text(
        "psf/requests:\n  2.4:\n    test_cmd: pytest -rA\n    env: {A: 1}\n  1.10:\n    python: 3.10\n"
    )
    for specs in ("specs.json", "specs.yml"):
        instances = load_instances(path, tmp_path / specs)
        assert [i.instance_id for i in instances] == ["psf__requests-2317", "any string at all: ü [1]"]
        assert instances[0].spec.test_cmd == "pytest -rA"
    assert load_instances(path, tmp_path / "specs.yml")[0].spec.env == {"A": "1"}
    assert load_specs(tmp_path / "specs.yml")["psf/requests"]["1.10"].python == "3.10"  # YAML numbers stay as written


def test_a_classic_record_without_a_spec_names_what_is_missing(tmp_path):
    with pytest.raises(HarnessError) as err:
        load_instances(write(tmp_path, published()))
    assert "psf/requests version '2.4'" in str(err.value) and "--specs" in str(err.value)


def test_a_self_contained_record_needs_no_spec(tmp_path):
    record = published(
        image="swebench/sweb.eval.x86_64.psf_1776_requests-2317:latest",
        eval_script="pytest -rA",
        log_parser="parse_log_pytest",
        eval_type="fail_only",
    )
    [inst] = load_instances(write(tmp_path, record))
    assert inst.spec is None and inst.eval_type == "fail_only" and inst.log_parser == "parse_log_pytest"


@pytest.mark.parametrize(
    "changes, expected",
    [
        ({"instance_id": "a/b"}, ["line 2", "instance_id", "folder name"]),
        ({"FAIL_TO_PASS": "[not json"}, ["line 2", "FAIL_TO_PASS", "JSON-encoded list"]),
        ({"test_patch": ""}, ["line 2", "test_patch"]),
        ({"source": "repos/missing.bundle"}, ["line 2", "does not exist"]),
        ({"instance_id": "psf__requests-1"}, ["line 2", "appears twice"]),
    ],
)
def test_a_bad_record_is_named_by_line_and_field(tmp_path, changes, expected):
    path = write(tmp_path, published(instance_id="psf__requests-1"), published(**changes))
    with pytest.raises(HarnessError) as err:
        read_records(path)
    for fragment in expected:
        assert fragment in str(err.value)


def test_bad_specs_parsers_and_build_variables_are_named(tmp_path):
    path = write(tmp_path, published(log_parser="parse_log_nothing", eval_script="x"))
    with pytest.raises(HarnessError, match="unknown log parser 'parse_log_nothing'"):
        load_instances(path)
    (tmp_path / "bad.yaml").write_text("psf/requests: [1, 2]\n")
    with pytest.raises(HarnessError, match="must map each repository"):
        load_instances(write(tmp_path, published()), tmp_path / "bad.yaml")
    (tmp_path / "bad2.yaml").write_text('psf/requests:\n  "2.4": {pip_packages: 3}\n')
    with pytest.raises(HarnessError, match="pip_packages"):
        load_instances(write(tmp_path, published()), tmp_path / "bad2.yaml")
    assert parse_build_env(["A=1", "B=x=y"]) == {"A": "1", "B": "x=y"}
    with pytest.raises(HarnessError, match="KEY=VALUE"):
        parse_build_env(["novalue"])


def test_an_unknown_suite_and_unknown_predictions():
    with pytest.raises(HarnessError, match="No suite 'nope'"):
        suite_path("nope")
    instances = [SweInstance.model_validate(published())]
    assert unknown_predictions(instances, ["psf__requests-2317", "renamed-1"]) == ["renamed-1"]


def test_the_official_image_name():
    assert official_image("django__django-11099") == "swebench/sweb.eval.x86_64.django_1776_django-11099:latest"


def test_local_repositories_by_instance_or_by_repository_holding_the_commit(tmp_path):
    clone = tmp_path / "psf__requests"
    clone.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=clone, check=True)
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@e", "commit", "-q", "--allow-empty", "-m", "x"],
        cwd=clone,
        check=True,
    )
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=clone, capture_output=True, text=True).stdout.strip()
    assert local_repository(tmp_path, "psf__requests-1", "psf/requests", head) == clone
    assert local_repository(tmp_path, "psf__requests-1", "psf/requests", "0" * 40) is None  # lacks the commit
    (tmp_path / "psf__requests-2.bundle").write_text("")
    assert (
        local_repository(tmp_path, "psf__requests-2", "psf/requests", "0" * 40) == tmp_path / "psf__requests-2.bundle"
    )


def test_the_classic_eval_script_appends_the_test_patch_files():
    inst = SweInstance.model_validate(published()).model_copy(
        update={"spec": Spec(test_cmd="pytest -rA", env={"X": "a b"})}
    )
    assert directives(inst) == ["test_requests.py"]  # the .json data file is no test
    script = classic_script(inst)
    assert "pytest -rA --junitxml=/tmp/harness-junit.xml -o junit_family=xunit1 test_requests.py" in script
    assert "export X='a b'" in script
    django = inst.model_copy(
        update={
            "repo": "django/django",
            "test_patch": "diff --git a/tests/admin_views/tests.py b/tests/admin_views/tests.py\n",
        }
    )
    assert directives(django) == ["admin_views.tests"]
    assert marked_output("+ echo x\n>>>>> Start Test Output\nPASSED a\n>>>>> End Test Output\n") == "\nPASSED a\n"
    assert marked_output(">>>>> Reset Failed") is None
