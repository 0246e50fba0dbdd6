"""Published SWE-bench records, taken as they are, through `harness swe`, `harness swe-grade` and
`harness swe validate`: real Docker, the real loop, the real grader."""

from __future__ import annotations

import json
import shutil

import pytest
import yaml
from typer.testing import CliRunner

from cli.main import app
from core.errors import HarnessError
from evals.swe.image import BASELINE_REF, instance_image
from evals.swe.sources import official_image
from evals.swe.suite import load_instances
from tests.evals.swe import sizes_repo as sizes

runner = CliRunner()


@pytest.fixture(scope="module")
def suite(tmp_path_factory, docker_ready):
    """A records file, a spec file and a --repos folder holding the clone, as a user would have them."""
    root = tmp_path_factory.mktemp("published")
    clone = root / "repos" / sizes.INSTANCE_ID
    clone.mkdir(parents=True)
    base, gold, tests = sizes.make_repo(clone)
    (root / "records.jsonl").write_text(json.dumps(sizes.classic_record(base, gold, tests)) + "\n")
    (root / "specs.yaml").write_text(yaml.safe_dump({sizes.REPO: {sizes.VERSION: sizes.SPEC}}))
    return {"root": root, "base": base, "gold": gold, "tests": tests}


def cli(*args: str) -> str:
    result = runner.invoke(app, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


def run_suite(suite, model: str, records: str = "records.jsonl") -> dict:
    root = suite["root"]
    out = root / f"batch-{model}-{records}"
    shutil.rmtree(out, ignore_errors=True)
    cli(
        "swe",
        "--suite",
        str(root / records),
        "--specs",
        str(root / "specs.yaml"),
        "--repos",
        str(root / "repos"),
        "--model",
        model,
        "--out",
        str(out),
    )
    [batch] = out.iterdir()  # --out is the parent of the new batch folder
    return json.loads((batch / "report.json").read_text()) | {"out": batch}


@pytest.mark.parametrize("model", ["oracle", "null", "test-deleter"])
def test_a_classic_record_runs_and_grades_without_edits(suite, model):
    report = run_suite(suite, model)
    iid = sizes.INSTANCE_ID
    expected = {"oracle": "resolved_ids", "null": "empty_patch_ids", "test-deleter": "unresolved_ids"}[model]
    assert report[expected] == [iid] and report["error_ids"] == []
    patch = (report["out"] / iid / "artifacts" / "model.patch").read_text()
    if model == "null":  # the installation's egg-info and regenerated _version.py are the baseline, not a change
        assert patch == ""
    else:
        assert "egg-info" not in patch and "_version.py" not in patch
        logs = report["out"] / "logs" / model / iid
        assert {"run_instance.log", "test_output.txt", "patch.diff", "report.json"} <= {p.name for p in logs.iterdir()}
        graded = json.loads((logs / "report.json").read_text())[iid]
        assert graded["patch_successfully_applied"]
    if model == "oracle":  # every id came through whole: spaces, brackets, colons, unicode, the long one
        status = graded["tests_status"]
        assert status["FAIL_TO_PASS"]["success"] == sizes.FAIL_TO_PASS
        assert sorted(status["PASS_TO_PASS"]["success"]) == sorted(sizes.PASS_TO_PASS)


def test_swe_grade_takes_official_predictions_and_warns_for_unknown_ids(suite, tmp_path):
    preds = tmp_path / "preds.jsonl"
    rows = [
        {"instance_id": sizes.INSTANCE_ID, "model_name_or_path": "gold", "model_patch": suite["gold"]},
        {"instance_id": "sizes-1", "model_name_or_path": "gold", "model_patch": suite["gold"]},
    ]
    preds.write_text("".join(json.dumps(r) + "\n" for r in rows))
    root = suite["root"]
    output = cli(
        "swe-grade",
        str(preds),
        "--suite",
        str(root / "records.jsonl"),
        "--specs",
        str(root / "specs.yaml"),
        "--repos",
        str(root / "repos"),
        "--out",
        str(tmp_path / "graded"),
        "--run-id",
        "gold",
    )
    assert "sizes-1" in output and "not graded" in output
    [graded] = (tmp_path / "graded").iterdir()
    assert f"grading folder: {graded}" in output
    report = json.loads((graded / "report.json").read_text())
    assert report["resolved_ids"] == [sizes.INSTANCE_ID] and report["incomplete_ids"] == []
    log = (graded / "logs" / "gold" / sizes.INSTANCE_ID / "run_instance.log").read_text()
    for step in ("building image of", "applying the patch of", "running the tests of"):
        assert step in log


def test_the_environment_is_the_baseline_of_the_task_image(suite, docker_ready):
    root = suite["root"]
    [inst] = load_instances(root / "records.jsonl", root / "specs.yaml", root / "repos")
    image = instance_image(inst, docker_ready, log=lambda s: None)
    out = docker_ready.containers.run(
        image,
        ["bash", "-c", f"git status --porcelain; git diff --stat {suite['base']} {BASELINE_REF}"],
        remove=True,
        working_dir="/testbed",
    ).decode()
    assert "_version.py" in out  # the installation changed a tracked file, and the baseline holds it
    assert "??" not in out and " M " not in out  # nothing is left outside the baseline


def test_build_variables_reach_the_build_and_not_the_container(suite, docker_ready, tmp_path):
    root = suite["root"]
    specs = yaml.safe_load((root / "specs.yaml").read_text())
    specs[sizes.REPO][sizes.VERSION]["install"] = (
        'test "$PIP_INDEX_URL" = http://mirror.invalid/simple && test "$SPEC_PRETEND" = 1.0'
    )
    specs[sizes.REPO][sizes.VERSION]["build_env"] = {"SPEC_PRETEND": "1.0"}
    (tmp_path / "specs.yaml").write_text(yaml.safe_dump(specs))
    [inst] = load_instances(
        root / "records.jsonl",
        tmp_path / "specs.yaml",
        root / "repos",
        {"PIP_INDEX_URL": "http://mirror.invalid/simple"},
    )
    image = instance_image(inst, docker_ready, log=lambda s: None)  # the install step fails without them
    env = docker_ready.images.get(image).attrs["Config"]["Env"]
    assert not any(e.startswith(("PIP_INDEX_URL=", "SPEC_PRETEND=")) for e in env)
    assert "SIZES_TESTING=1" in env  # the spec's `env` is for installing and testing


def test_a_self_contained_record_runs_through_both_commands(suite, docker_ready, tmp_path):
    root = suite["root"]
    [classic] = load_instances(root / "records.jsonl", root / "specs.yaml", root / "repos")
    prebuilt = docker_ready.images.get(instance_image(classic, docker_ready, log=lambda s: None))
    prebuilt.tag("harness-test/sizes-selfcontained", "latest")
    record = sizes.self_contained_record(
        suite["base"], suite["gold"], suite["tests"], "harness-test/sizes-selfcontained:latest"
    )
    (root / "selfcontained.jsonl").write_text(json.dumps(record) + "\n")
    report = run_suite(suite, "oracle", "selfcontained.jsonl")
    assert report["resolved_ids"] == ["sizes-selfcontained"], report
    preds = tmp_path / "preds.json"
    preds.write_text(
        json.dumps([{"instance_id": "sizes-selfcontained", "model_name_or_path": "x", "model_patch": suite["gold"]}])
    )
    cli("swe-grade", str(preds), "--suite", str(root / "selfcontained.jsonl"), "--out", str(tmp_path / "graded"))
    [graded] = (tmp_path / "graded").iterdir()
    assert json.loads((graded / "report.json").read_text())["resolved_ids"] == ["sizes-selfcontained"]


def test_validate_lists_instances_whose_tests_do_not_flip(suite, tmp_path):
    root = suite["root"]
    record = json.loads((root / "records.jsonl").read_text())
    wrong = dict(
        record,
        instance_id="sizes-wrong",
        FAIL_TO_PASS=json.dumps(sizes.FAIL_TO_PASS + [f"{sizes.HIDDEN}::TestUnits::test_megabytes"]),
    )
    shutil.copytree(root / "repos" / sizes.INSTANCE_ID, tmp_path / "repos" / "sizes-wrong")
    shutil.copytree(root / "repos" / sizes.INSTANCE_ID, tmp_path / "repos" / sizes.INSTANCE_ID)
    (tmp_path / "records.jsonl").write_text(json.dumps(record) + "\n" + json.dumps(wrong) + "\n")
    result = runner.invoke(
        app,
        [
            "swe",
            "validate",
            str(tmp_path / "records.jsonl"),
            "--specs",
            str(root / "specs.yaml"),
            "--repos",
            str(tmp_path / "repos"),
            "--out",
            str(tmp_path / "v"),
        ],
    )
    assert result.exit_code == 1, result.output
    assert "sizes-wrong" in result.output and "test_megabytes" in result.output
    assert "1 of 2 instances flip as declared" in result.output
    [v] = (tmp_path / "v").iterdir()
    assert (v / "logs" / "validate" / sizes.INSTANCE_ID / "gold" / "test_output.txt").exists()


def test_a_missing_image_is_an_error_that_says_how_to_provide_the_repository(suite, docker_ready, tmp_path):
    record = sizes.self_contained_record(suite["base"], suite["gold"], suite["tests"], "harness-test/not-here:latest")
    [inst] = load_instances(write_records(tmp_path, record))
    with pytest.raises(HarnessError) as err:
        instance_image(inst, docker_ready, log=lambda s: None)
    message = str(err.value)
    assert "harness-test/not-here:latest" in message and "docker load" in message and "--repos" in message


def write_records(folder, *records):
    path = folder / "records.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def test_an_official_instance_image_in_the_local_engine_comes_first(suite, docker_ready, tmp_path):
    """A classic record with no local repository: its official image (here one made by the tests) is used."""
    root = suite["root"]
    [classic] = load_instances(root / "records.jsonl", root / "specs.yaml", root / "repos")
    docker_ready.images.get(instance_image(classic, docker_ready, log=lambda s: None)).tag(
        official_image("example__sizes-1")
    )
    record = dict(json.loads((root / "records.jsonl").read_text()), instance_id="example__sizes-1")
    records = write_records(tmp_path, record)
    preds = tmp_path / "preds.jsonl"
    preds.write_text(
        json.dumps({"instance_id": "example__sizes-1", "model_name_or_path": "gold", "model_patch": suite["gold"]})
    )
    try:
        cli(
            "swe-grade",
            str(preds),
            "--suite",
            str(records),
            "--specs",
            str(root / "specs.yaml"),
            "--out",
            str(tmp_path / "g"),
        )
    finally:  # no stand-in for an official image outlives the test
        docker_ready.images.remove(official_image("example__sizes-1"))
    [g] = (tmp_path / "g").iterdir()
    assert json.loads((g / "report.json").read_text())["resolved_ids"] == ["example__sizes-1"]
    log = (g / "logs" / "preds" / "example__sizes-1" / "run_instance.log").read_text()
    assert official_image("example__sizes-1") in log
