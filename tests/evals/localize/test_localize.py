"""Localization measured: gold files and definitions from a patch, the metrics, and `harness localize` in both
forms, on small git repositories the tests build (a clone and a bare mirror)."""

from __future__ import annotations

import json
import subprocess

import pytest
from typer.testing import CliRunner

from cli.main import app
from evals.localize.batch import definitions
from evals.localize.dataset import changed_lines
from evals.localize.metrics import Outcome, recall, reciprocal_rank, summary
from tests.tools.code.repos import SHOP, as_files, commit_all, write
from tools.code.index import build

runner = CliRunner()
PATCH = """diff --git a/shop/pricing.py b/shop/pricing.py
--- a/shop/pricing.py
+++ b/shop/pricing.py
@@ -10,3 +10,4 @@ class Cart:
     def apply_discount(self, total, rate):
         \"\"\"Apply a discount rate to a total.\"\"\"
-        return clamp(total * (1 - rate), 0, total)
+        rate = min(rate, 1)
+        return clamp(total * (1 - rate), 0, total)
diff --git a/shop/util.py b/shop/util.py
--- a/shop/util.py
+++ b/shop/util.py
@@ -1,2 +1,3 @@
+import math
 def clamp(x, lo, hi):
     return max(lo, min(x, hi))
diff --git a/shop/new.py b/shop/new.py
new file mode 100644
--- /dev/null
+++ b/shop/new.py
@@ -0,0 +1 @@
+X = 1
"""


@pytest.fixture(autouse=True)
def own_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("HARNESS_CACHE", str(tmp_path / "cache"))


def test_a_patch_names_its_files_the_old_lines_it_touches_and_their_definitions():
    changed = changed_lines(PATCH)
    assert changed == {"shop/pricing.py": [12], "shop/util.py": [1], "shop/new.py": []}
    # The removed line is in the method; the import added before line 1 follows no definition's line.
    assert definitions(build(as_files(SHOP)), changed) == [
        "shop/pricing.py::Cart.apply_discount",
        "shop/util.py::clamp",
    ]


def test_recall_counts_the_share_of_gold_found_and_mrr_the_first_hit():
    assert recall(["a", "b"], ["x", "a", "y", "b"], 1) == 0.0
    assert recall(["a", "b"], ["x", "a", "y", "b"], 2) == 0.5 and recall(["a", "b"], ["x", "a", "y", "b"], 5) == 1.0
    assert reciprocal_rank(["a", "b"], ["x", "b", "a"]) == 0.5 and reciprocal_rank(["a"], ["x"]) == 0.0
    figures = summary(
        [
            Outcome("1", "r", "code", ["a"], ["a"], ["a::f"], ["a::g", "a::f"], query_s=0.01),
            Outcome("2", "r", "code", ["b"], ["a", "b"], [], [], query_s=0.03),
        ]
    )
    assert figures["file_recall@1"] == 0.5 and figures["file_mrr"] == 0.75
    assert figures["issues_with_functions"] == 1 and figures["function_recall@5"] == 1.0
    assert figures["query_ms_p95"] == 30.0


def test_localize_json_ranks_a_working_tree(tmp_path):
    repo = write(tmp_path / "repo", SHOP)
    commit_all(repo)
    issue = tmp_path / "issue.md"
    issue.write_text("Cart.apply_discount lets the total go negative when the rate is above one.")
    result = runner.invoke(app, ["localize", "--repo", str(repo), "--issue", str(issue), "--k", "3", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["files"][0] == {"path": "shop/pricing.py", "score": data["files"][0]["score"]}
    assert data["functions"][0] == {
        "path": "shop/pricing.py",
        "name": "Cart.apply_discount",
        "line": 10,
        "score": data["functions"][0]["score"],
    }
    assert len(data["files"]) <= 3 and [f["score"] for f in data["files"]] == sorted(
        (f["score"] for f in data["files"]), reverse=True
    )
    piped = runner.invoke(app, ["localize", "--repo", str(repo), "--issue", "-", "--json"], input="shipping by weight")
    assert json.loads(piped.output)["files"][0]["path"] == "shop/shipping.py"


@pytest.mark.parametrize(
    "args, says",
    [
        (["--repo", "/nowhere", "--issue", "-"], "/nowhere is not a folder"),
        (["--issue", "-"], "Pass --repo DIR and --issue FILE"),
        (["--repo", ".", "--issue", "/no/issue.md"], "Cannot read issue file /no/issue.md"),
        (["--issues", "x.json"], "The batch form takes --issues FILE and --repos DIR"),
    ],
)
def test_bad_input_is_one_clear_error_and_exit_2(args, says):
    result = runner.invoke(app, ["localize", *args], input="some issue")
    assert result.exit_code == 2 and says in result.output and "Traceback" not in result.output


def test_the_batch_form_measures_every_method_per_repository_from_a_bare_mirror(tmp_path):
    repo = write(tmp_path / "work", SHOP)
    base = commit_all(repo)
    write(repo, {"shop/util.py": SHOP["shop/util.py"] + "\n\ndef round_money(x):\n    return round(x, 2)\n"})
    second = commit_all(repo, "more")
    repos = tmp_path / "repos"
    repos.mkdir()
    subprocess.run(["git", "clone", "-q", "--mirror", str(repo), str(repos / "acme__shop")], check=True)
    records = [
        {
            "instance_id": "acme__shop-1",
            "repo": "acme/shop",
            "base_commit": base,
            "problem_statement": "Cart.apply_discount goes negative",
            "patch": PATCH,
        },
        {
            "instance_id": "acme__shop-2",
            "repo": "acme/shop",
            "base_commit": second,
            "problem_statement": "round_money rounds half away from zero",
            "golden_patch": PATCH.replace("shop/pricing.py", "shop/shipping.py"),
        },
    ]
    issues = tmp_path / "issues.jsonl"
    issues.write_text("".join(json.dumps(r) + "\n" for r in records))
    out = tmp_path / "outcomes.jsonl"
    result = runner.invoke(
        app, ["localize", "--issues", str(issues), "--repos", str(repos), "--json", "--out", str(out)]
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert set(data["overall"]) == {"code", "bm25", "grep"} and data["overall"]["code"]["issues"] == 2
    assert data["by_repository"]["code"]["acme/shop"]["file_recall@10"] > 0
    assert data["builds"]["cold"]["acme/shop"]["files"] == 6 and data["builds"]["from_previous_commit"]["builds"] == 1
    assert data["builds"]["from_previous_commit"]["files_reread_p50"] == 1  # only shop/util.py changed
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert {(o["instance_id"], o["method"]) for o in lines} == {
        (f"acme__shop-{n}", m) for n in (1, 2) for m in ("code", "bm25", "grep")
    }
