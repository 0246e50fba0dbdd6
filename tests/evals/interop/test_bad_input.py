"""A file `harness import` cannot read gets one line naming it and what is wrong, exit 2, and nothing written."""

from __future__ import annotations

import json
import shutil
import zipfile
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cli.main import app
from tests.evals.interop import documents as docs

runner = CliRunner()
OUR_RUN = Path(__file__).resolve().parents[2] / "fixtures" / "trajectories" / "click-bool-yes"


def truncated(tmp: Path) -> Path:
    text = json.dumps(docs.mini_v1())
    return _bytes(tmp / "cut.traj.json", text[: len(text) // 2].encode())


def _bytes(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


def cut_eval(tmp: Path) -> Path:
    whole = docs.write_eval(tmp / "whole.eval").read_bytes()
    return _bytes(tmp / "cut.eval", whole[: len(whole) // 2])


def other_zip(tmp: Path) -> Path:
    with zipfile.ZipFile(tmp / "photos.zip", "w") as z:
        z.writestr("a.txt", "hello")
    return tmp / "photos.zip"


CASES = {
    "truncated": (truncated, "ends before the JSON does (truncated?)"),
    "not UTF-8": (lambda tmp: _bytes(tmp / "latin.json", '{"a": "caf\xe9"}'.encode("latin-1")), "not UTF-8 text"),
    "empty": (lambda tmp: _bytes(tmp / "empty.json", b""), "the file is empty"),
    "our own run.json": (lambda tmp: shutil.copy(OUR_RUN / "run.json", tmp / "run.json"), "in no format"),
    "JSON lines of no trajectory": (
        lambda tmp: shutil.copy(OUR_RUN / "events.jsonl", tmp / "events.json"),
        "JSON objects with keys seq, ts",
    ),
    "a JSON list": (lambda tmp: docs.write(tmp / "list.json", [1, 2]), "a JSON list, in no format"),
    "a truncated .eval": (cut_eval, "a damaged zip archive (truncated?)"),
    "a zip of another tool": (other_zip, "not an Inspect eval log"),
    "an Inspect log without samples": (lambda tmp: docs.write(tmp / "h.json", docs.inspect_header()), "no samples"),
    "an Inspect log gone wrong inside": (
        lambda tmp: docs.write(tmp / "bad.json", {**docs.inspect_header(), "samples": 5}),
        "not a readable inspect file (TypeError",
    ),
    "mini-swe-agent without messages": (
        lambda tmp: docs.write(tmp / "m.traj.json", {"trajectory_format": "mini-swe-agent-1", "info": {}}),
        "no `info` object and `messages` list",
    ),
}


@pytest.mark.parametrize("case", CASES, ids=list(CASES))
def test_a_bad_file_is_one_line_naming_it_and_exit_2(tmp_path, case):
    make, said = CASES[case]
    path = Path(make(tmp_path))
    out = tmp_path / "runs"
    result = runner.invoke(app, ["import", str(path), "--out", str(out)])
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and str(path) in lines[0], result.output
    assert said in lines[0]
    assert not out.exists() or not any(p.name != ".importing" for p in out.iterdir())


def test_a_file_that_is_not_the_format_named_says_so(tmp_path):
    path = docs.write(tmp_path / "t.json", docs.atif())
    result = runner.invoke(app, ["import", str(path), "--format", "mini-swe-agent", "--out", str(tmp_path / "runs")])
    assert result.exit_code == 2 and "does not read as mini-swe-agent" in result.output


def test_a_path_that_does_not_exist_says_so(tmp_path):
    result = runner.invoke(app, ["import", str(tmp_path / "nowhere.json"), "--out", str(tmp_path / "runs")])
    assert result.exit_code == 2 and "does not exist" in result.output


def test_an_empty_folder_holds_nothing_to_import(tmp_path):
    (tmp_path / "empty").mkdir()
    result = runner.invoke(app, ["import", str(tmp_path / "empty"), "--out", str(tmp_path / "runs")])
    assert result.exit_code == 2 and "holds no trajectory files" in result.output
