"""Where an instance's repository comes from, in this order:

1. the image a self-contained record names (it must be in the local Docker engine: its eval
   script was written for it), else an official prebuilt instance image in the local engine
   (repository at /testbed, conda environment `testbed`);
2. a local clone or git bundle under `--repos DIR`: `DIR/<instance_id>` (a folder per
   instance), or `DIR/<owner>__<name>`, `DIR/<owner>/<name>`, `DIR/<name>` (a folder per
   repository, holding the base commit), each also as `<that>.bundle`;
3. otherwise a clone of https://github.com/<repo> made while the image is built (needs the
   network).
"""

from __future__ import annotations

import subprocess
from pathlib import Path


def official_image(instance_id: str) -> str:
    """The name SWE-bench gives an instance's image (swebench.task.checks.expected_image)."""
    return f"swebench/sweb.eval.x86_64.{instance_id}:latest".lower().replace("__", "_1776_")


def candidates(repos: Path, instance_id: str, repo: str) -> list[Path]:
    owner, _, name = repo.partition("/")
    folders = [repos / instance_id, repos / f"{owner}__{name}", repos / owner / name, repos / name]
    return [p for f in folders for p in (f, f.with_name(f.name + ".bundle"))]


def local_repository(repos: Path, instance_id: str, repo: str, commit: str) -> Path | None:
    """The first clone or bundle under `repos` for this instance; a per-repository clone must hold `commit`."""
    for path in candidates(repos, instance_id, repo):
        if path.is_file() and path.suffix == ".bundle":
            return path
        if path.is_dir() and (path / ".git").exists():
            if path.name == instance_id or _has_commit(path, commit):
                return path
    return None


def _has_commit(clone: Path, commit: str) -> bool:
    return (
        subprocess.run(
            ["git", "-C", str(clone), "cat-file", "-e", f"{commit}^{{commit}}"], capture_output=True
        ).returncode
        == 0
    )


def how_to_provide(instance_id: str, repo: str) -> str:
    """The sentence an error ends with when a repository cannot be found."""
    owner, _, name = repo.partition("/")
    return (
        f"load the image {official_image(instance_id)} into the local Docker engine (`docker load -i FILE`), "
        f"or put a clone of {repo} holding the base commit under --repos DIR as DIR/{instance_id}/, "
        f"DIR/{owner}__{name}/ or DIR/{instance_id}.bundle"
    )
