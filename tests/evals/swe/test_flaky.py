"""A deterministic test environment and flaky tests, through `harness swe`, `swe-grade` and `swe validate`
on real Docker: pinned variables in every eval script, reruns that find flaky tests, and a flaky-test
list that grading leaves out.

The coin tests fail at random half of the time, each run in a fresh container, so no state can make
them alternate. With 5 runs one coin is missed (the same status every time) with probability 2/32;
with COINS = 16 of them, all are missed with probability (1/16)^16 = 2^-64. So the tests assert that
the flaky tests found are a non-empty subset of the coins and never include a stable test: a false
result is negligible, not merely rare.
"""

from __future__ import annotations

import json
import subprocess

import pytest
import yaml
from typer.testing import CliRunner

from cli.main import app
from evals.swe.evalscript import PINNED_ENV
from evals.swe.image import swe_base_image
from tests.evals.swe import coin_repo as coin

runner = CliRunner()


@pytest.fixture(scope="module")
def suite(tmp_path_factory, docker_ready):
    """Two records over one repository, and the set's order under seeds 0 and 1 in the images' Python."""
    root = tmp_path_factory.mktemp("coins")
    base_image = swe_base_image(docker_ready, log=lambda s: None)
    orders = {
        seed: docker_ready.containers.run(
            base_image, ["python3", "-c", coin.SET_ORDER], environment={"PYTHONHASHSEED": seed}, remove=True
        )
        .decode()
        .strip()
        for seed in ("0", "1")
    }
    assert orders["0"] != orders["1"]  # else the words do not tell the seeds apart
    base, gold, tests = coin.make_repo(root / "repo", orders["0"])
    records = coin.records(base, gold, tests, "repo")
    (root / "records.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    (root / "specs.yaml").write_text(yaml.safe_dump({coin.REPO: {coin.VERSION: coin.SPEC}}))
    preds = root / "gold.jsonl"
    preds.write_text(
        "".join(json.dumps({"instance_id": r["instance_id"], "model_patch": gold}) + "\n" for r in records)
    )
    return root


def cli(*args: str, code: int = 0) -> str:
    result = runner.invoke(app, list(args), catch_exceptions=False)
    assert result.exit_code == code, result.output
    return result.output


def grade(suite, out: str, *options: str, only: str | None = None) -> tuple[dict, object]:
    preds = suite / "gold.jsonl"
    if only is not None:
        preds = suite / f"gold-{only}.jsonl"
        preds.write_text(next(line for line in (suite / "gold.jsonl").read_text().splitlines() if only in line))
    where = suite / out
    output = cli(
        "swe-grade",
        str(preds),
        "--suite",
        str(suite / "records.jsonl"),
        "--specs",
        str(suite / "specs.yaml"),
        "--out",
        str(where),
        "--run-id",
        "gold",
        *options,
    )
    [graded] = where.iterdir()
    return json.loads((graded / "report.json").read_text()) | {"output": output}, graded


def instance_report(graded, iid: str) -> dict:
    return json.loads((graded / "logs" / "gold" / iid / "report.json").read_text())[iid]


def test_reruns_mark_a_test_that_fails_half_of_the_time_as_flaky(suite):
    report, graded = grade(suite, "reruns", "--reruns", "5", only="coin-flaky")
    found = report["flaky_tests"]["coin-flaky"]
    assert found and set(found) <= set(coin.COIN_IDS), found
    graded_one = instance_report(graded, "coin-flaky")
    assert graded_one["flaky_tests"] == found and graded_one["excluded_flaky_tests"] == []
    assert graded_one["tests_status"]["FAIL_TO_PASS"]["success"] == [coin.FIXED]  # official fields as before
    assert f"flaky in coin-flaky: {found[0]}" in report["output"]
    assert f"({len(found)} flaky tests)" in report["output"]  # on the instance's progress line
    logs = graded / "logs" / "gold" / "coin-flaky"
    assert all((logs / "reruns" / str(n) / "test_output.txt").is_file() for n in range(2, 6))


def test_one_run_reports_no_flaky_field(suite):
    report, graded = grade(suite, "once", only="hash-order")
    assert report["flaky_tests"] == {} and report["flaky_list"] is None
    assert instance_report(graded, "hash-order")["flaky_tests"] is None


def test_validate_writes_the_flaky_list_that_grading_leaves_out(suite):
    where = suite / "validated"
    result = runner.invoke(
        app,
        [
            "swe",
            "validate",
            str(suite / "records.jsonl"),
            "--specs",
            str(suite / "specs.yaml"),
            "--reruns",
            "5",
            "--out",
            str(where),
        ],
    )
    # an exit of 1 is possible: a coin the 5 gold runs saw alike may still fail in the empty run
    assert result.exit_code in (0, 1), result.output
    [folder] = where.iterdir()
    listed = json.loads((folder / "flaky.json").read_text())
    assert listed["reruns"] == 5 and set(listed["flaky"]) == {"coin-flaky"}  # the set's order is not flaky
    assert listed["flaky"]["coin-flaky"] and set(listed["flaky"]["coin-flaky"]) <= set(coin.COIN_IDS)
    assert f"--exclude-flaky {folder / 'flaky.json'}" in result.output
    assert (folder / "logs" / "validate" / "coin-flaky" / "gold" / "reruns" / "5" / "test_output.txt").is_file()

    report, graded = grade(suite, "excluded-found", "--exclude-flaky", str(folder / "flaky.json"), only="coin-flaky")
    assert report["flaky_list"] == str(folder / "flaky.json")
    assert instance_report(graded, "coin-flaky")["excluded_flaky_tests"] == listed["flaky"]["coin-flaky"]

    # a list that names every coin: what is left is stable, so the gold patch resolves for certain
    every = suite / "every-coin.json"
    every.write_text(json.dumps({"reruns": 5, "flaky": {"coin-flaky": coin.COIN_IDS}}))
    report, graded = grade(suite, "excluded-all", "--exclude-flaky", str(every), only="coin-flaky")
    assert report["resolved_ids"] == ["coin-flaky"] and f"left out of grading: {every}" in report["output"]
    status = instance_report(graded, "coin-flaky")["tests_status"]
    assert status["PASS_TO_PASS"]["success"] == [coin.STABLE] and status["PASS_TO_PASS"]["failure"] == []


def test_the_pinned_variables_are_in_the_eval_script_and_a_hash_seeded_test_grades_alike(suite):
    first, graded = grade(suite, "pinned-a", only="hash-order")
    second, _ = grade(suite, "pinned-b", only="hash-order")
    assert first["resolved_ids"] == second["resolved_ids"] == ["hash-order"]
    script = (graded / "logs" / "gold" / "hash-order" / "eval.sh").read_text()
    for key, value in PINNED_ENV.items():
        assert f"export {key}={value}" in script
    # the pin is what passes it: another seed gives another order, and the same verdict every time
    other, graded = grade(suite, "seed-1", "--test-env", "PYTHONHASHSEED=1", "--reruns", "2", only="hash-order")
    assert other["unresolved_ids"] == ["hash-order"] and other["flaky_tests"] == {}
    assert "export PYTHONHASHSEED=1" in (graded / "logs" / "gold" / "hash-order" / "eval.sh").read_text()


def test_a_run_of_the_suite_takes_the_same_options(suite, tmp_path):
    out = cli(
        "swe",
        "--suite",
        str(suite / "records.jsonl"),
        "--specs",
        str(suite / "specs.yaml"),
        "--only",
        "hash-order",
        "--model",
        "oracle",
        "--reruns",
        "2",
        "--test-env",
        "TZ=Europe/Paris",
        "--out",
        str(tmp_path),
    )
    [batch] = tmp_path.iterdir()
    report = json.loads((batch / "report.json").read_text())
    assert report["resolved_ids"] == ["hash-order"] and report["flaky_tests"] == {}, out
    logs = batch / "logs" / "oracle" / "hash-order"
    assert "export TZ=Europe/Paris" in (logs / "eval.sh").read_text()
    assert (logs / "reruns" / "2" / "test_output.txt").is_file()


def test_a_bad_flaky_list_says_what_is_wrong(suite, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"coin-flaky": []}))
    result = runner.invoke(
        app,
        [
            "swe-grade",
            str(suite / "gold.jsonl"),
            "--suite",
            str(suite / "records.jsonl"),
            "--specs",
            str(suite / "specs.yaml"),
            "--exclude-flaky",
            str(bad),
        ],
    )
    assert result.exit_code == 2 and "harness swe validate --reruns" in result.output


def test_the_eval_script_of_a_self_contained_record_is_pinned_too():
    from evals.swe.evalscript import eval_script
    from evals.swe.task import SweInstance

    inst = SweInstance(
        instance_id="x",
        repo="a/b",
        base_commit="0123456789",
        test_patch="diff",
        problem_statement="p",
        FAIL_TO_PASS=["t"],
        eval_script="#!/bin/bash\nexport TZ=Asia/Tokyo\npytest",
        test_env={"LANG": "", "EXTRA": "a b"},
    )
    lines = eval_script(inst).splitlines()
    assert lines[0] == "#!/bin/bash" and "export TZ=UTC" in lines and "export EXTRA='a b'" in lines
    assert lines.index("export TZ=UTC") < lines.index("export TZ=Asia/Tokyo")  # the record's own wins
    assert not any(line.startswith("export LANG=") for line in lines)
    assert subprocess.run(["bash", "-n"], input=eval_script(inst), text=True).returncode == 0
