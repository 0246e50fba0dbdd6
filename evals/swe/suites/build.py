"""Build the bundled suite from package sources: git bundles, patches and validated test lists.

    .venv/bin/python -m evals.swe.suites.build            # writes suites/builtin/

Each `src/<package>.yaml` lists instances of one package (`src/<package>/`, the
correct source). An instance injects one bug with exact replacements, commits
the result with a fixed author and date (so commit ids are reproducible), and
derives the gold `patch` (the bug removed) and the `test_patch` (new hidden
tests). FAIL_TO_PASS and PASS_TO_PASS are not written by hand: they come from
running the tests in the instance's own Docker image before and after the gold
patch, as SWE-bench validates its instances.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

from evals.swe.flaky import GRADING_FIELDS
from evals.swe.grader import InstanceLog, run_tests
from evals.swe.specs import load_specs, spec_for
from evals.swe.task import SweInstance
from evals.swe.testlog import passed
from sandboxes.docker_container import docker_client

HERE = Path(__file__).resolve().parent
SRC, OUT = HERE / "src", HERE / "builtin"
GIT_ENV = {
    "GIT_AUTHOR_NAME": "Acme Maintainers",
    "GIT_AUTHOR_EMAIL": "dev@acme.example",
    "GIT_COMMITTER_NAME": "Acme Maintainers",
    "GIT_COMMITTER_EMAIL": "dev@acme.example",
}


def git(repo: Path, *args: str, date: str | None = None) -> str:
    env = {**os.environ, **GIT_ENV}
    if date:
        env["GIT_AUTHOR_DATE"] = env["GIT_COMMITTER_DATE"] = date
    return subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True, text=True).stdout


def replace_once(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    if text.count(old) != 1:
        raise SystemExit(f"{path}: the text to replace occurs {text.count(old)} times, not once:\n{old}")
    path.write_text(text.replace(old, new))


def make_repo(package: Path, spec: dict, inst: dict, work: Path) -> tuple[str, str, str]:
    """Return (base_commit, gold patch, test patch) for one instance, leaving the repo at base."""
    shutil.copytree(package, work, ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache"))
    for b in inst["break"]:
        replace_once(work / b["file"], b["old"], b["new"])
    git(work, "init", "-q", "-b", "main")
    git(work, "add", "--", ":!tests")
    git(work, "commit", "-q", "-m", f"{spec['repo'].split('/')[1]}: initial import", date="2024-01-08T09:00:00Z")
    git(work, "add", "-A")
    git(work, "commit", "-q", "-m", "Add tests", date="2024-01-09T09:00:00Z")
    base = git(work, "rev-parse", "HEAD").strip()
    for b in inst["break"]:
        replace_once(work / b["file"], b["new"], b["old"])
    gold = git(work, "diff")
    git(work, "checkout", "-q", "--", ".")
    for name, content in inst["tests"].items():
        (work / name).write_text(content)
    git(work, "add", "-A")
    tests = git(work, "diff", "--cached")
    git(work, "reset", "-q", "--hard", base)
    return base, gold, tests


def validate(inst: SweInstance, client) -> tuple[list[str], list[str]]:
    """Run the hidden tests before and after the gold patch, in the instance's image, as the grader runs them."""
    runs = [run_tests(inst, patch, client, InstanceLog(None, lambda s: None)) for patch in ("", inst.patch)]
    before, after = runs
    broken = sorted(t for t, s in after.items() if not passed(s))
    if broken:
        raise SystemExit(f"{inst.instance_id}: tests fail even with the gold patch: {broken}")
    f2p = sorted(t for t in after if not passed(before.get(t)))
    p2p = sorted(t for t in after if passed(before.get(t)))
    if not f2p:
        raise SystemExit(f"{inst.instance_id}: no test fails before the gold patch; the bug is not exercised")
    return f2p, p2p


def main() -> int:
    OUT.mkdir(exist_ok=True)
    (OUT / "repos").mkdir(exist_ok=True)
    client = docker_client()
    specs = load_specs(OUT / "specs.yaml")
    records = []
    for spec_file in sorted(SRC.glob("*.yaml")):
        spec = yaml.safe_load(spec_file.read_text())
        package = SRC / spec_file.stem
        for raw in spec["instances"]:
            owner, name = spec["repo"].split("/")
            iid = f"{owner}__{name}-{raw['number']}"
            with tempfile.TemporaryDirectory() as tmp:
                work = Path(tmp, "repo")
                base, gold, tests = make_repo(package, spec, raw, work)
                bundle = OUT / "repos" / f"{iid}.bundle"
                git(work, "bundle", "create", str(bundle), "--all")
            inst = SweInstance(
                instance_id=iid,
                repo=spec["repo"],
                base_commit=base,
                patch=gold,
                test_patch=tests,
                problem_statement=raw["problem_statement"],
                hints_text=raw.get("hints", ""),
                created_at=spec["created_at"],
                version=spec["version"],
                FAIL_TO_PASS=[],
                PASS_TO_PASS=[],
                environment_setup_commit=base,
                source=str(bundle),
                spec=spec_for(specs, spec["repo"], spec["version"]),
            )
            f2p, p2p = validate(inst, client)
            record = inst.model_dump(
                mode="json",
                exclude={
                    "source",
                    "image",
                    "eval_script",
                    "log_parser",
                    "eval_type",
                    "spec",
                    "build_env",
                    *GRADING_FIELDS,
                },
            )
            record.update(
                FAIL_TO_PASS=json.dumps(f2p),
                PASS_TO_PASS=json.dumps(p2p),
                source=f"repos/{iid}.bundle",
                bug_kind=raw["kind"],
            )
            records.append(record)
            print(f"{iid}: {len(f2p)} FAIL_TO_PASS, {len(p2p)} PASS_TO_PASS ({raw['kind']})")
    (OUT / "instances.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    print(f"wrote {len(records)} instances to {OUT / 'instances.jsonl'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
