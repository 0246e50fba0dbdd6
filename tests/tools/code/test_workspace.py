"""The index of a sandbox's workspace: built once per commit, cached, kept fresh as files change."""

from __future__ import annotations

import os
import time

import pytest

from sandboxes.local import LocalSandbox
from tests.tools.code.repos import commit_all, git, shop, write
from tools.code import workspace


@pytest.fixture(autouse=True)
def own_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("HARNESS_CACHE", str(tmp_path / "cache"))


def current(box: LocalSandbox) -> workspace.Workspace:
    return workspace.current(box, 60)


def test_a_commit_is_indexed_once_and_the_next_sandbox_loads_it(tmp_path):
    repo = shop(tmp_path / "repo")
    with_box = LocalSandbox(repo / "shop")  # a folder inside the repository: the whole repository is indexed
    try:
        ws = current(with_box)
        assert ws.head == git(repo, "rev-parse", "HEAD") and not ws.from_cache and ws.reread == 6
        assert "shop/pricing.py" in ws.index.by_path and "tests/test_pricing.py" in ws.index.by_path
        assert current(with_box).reread == 0  # nothing changed: nothing read
    finally:
        with_box.close()
    again = LocalSandbox(repo)
    try:
        ws = current(again)
        assert ws.from_cache and ws.reread == 0 and len(ws.index.entries) == 6
    finally:
        again.close()


def test_edits_new_files_deletions_and_reverts_are_seen_at_the_next_call(tmp_path):
    repo = shop(tmp_path / "repo")
    box = LocalSandbox(repo)
    try:
        current(box)
        write(
            repo,
            {"shop/util.py": "def clamp_money(x):\n    return x\n", "shop/new.py": "def fresh_feature():\n    pass\n"},
        )
        (repo / "shop/shipping.py").unlink()
        ws = current(box)
        assert ws.reread == 2
        assert {"clamp_money", "fresh_feature"} <= ws.index.definitions.keys() and "clamp" not in ws.index.definitions
        assert "shop/shipping.py" not in ws.index.by_path
        write(repo, {"shop/util.py": "def clamp_money(x):\n    return x + 1\n"})  # the same size, later
        os.utime(repo / "shop/util.py", ns=(time.time_ns() + 10**9,) * 2)
        assert current(box).reread == 1
        git(repo, "checkout", "-q", "--", "shop/util.py", "shop/shipping.py")
        ws = current(box)
        assert "clamp" in ws.index.definitions and "clamp_money" not in ws.index.definitions
        assert "shop/shipping.py" in ws.index.by_path
        commit_all(repo, "a new commit")  # shop/new.py is committed: a new base
        ws = current(box)
        assert ws.head == git(repo, "rev-parse", "HEAD") and "fresh_feature" in ws.index.definitions
    finally:
        box.close()


def test_a_dirty_tree_is_indexed_as_it_stands_but_not_cached_as_its_commit(tmp_path):
    repo = shop(tmp_path / "repo")
    write(repo, {"shop/util.py": "def dirty_helper():\n    pass\n"})
    box = LocalSandbox(repo)
    try:
        assert "dirty_helper" in current(box).index.definitions
    finally:
        box.close()
    assert workspace.load_cached(git(repo, "rev-parse", "HEAD")) is None


def test_a_folder_outside_git_is_indexed_and_refreshed_by_size_and_time(tmp_path):
    folder = write(tmp_path / "plain", {"calc.py": "def add(a, b):\n    return a + b\n"})
    box = LocalSandbox(folder)
    try:
        ws = current(box)
        assert ws.head == "" and ws.index.paths == ["calc.py"]
        write(folder, {"more.py": "def mul(a, b):\n    return a * b\n"})
        ws = current(box)
        assert ws.reread == 1 and "mul" in ws.index.definitions
        (folder / "calc.py").unlink()
        assert current(box).index.paths == ["more.py"]
    finally:
        box.close()


def test_symbolic_links_are_never_followed_out_of_the_workspace(tmp_path):
    secret = write(tmp_path / "outside", {"secret.py": "def launch_codes():\n    pass\n"})
    repo = shop(tmp_path / "repo")
    (repo / "shop/linked.py").symlink_to(secret / "secret.py")
    (repo / "shop/linked_dir").symlink_to(secret)
    box = LocalSandbox(repo)
    try:
        ws = current(box)
        assert "launch_codes" not in ws.index.definitions
        assert not any("linked" in p for p in ws.index.paths)
    finally:
        box.close()


@pytest.mark.slow
def test_a_repository_of_twenty_thousand_files_is_indexed_whole(tmp_path):
    repo = tmp_path / "big"
    files = {f"pkg{i // 500}/mod{i}.py": f"def function_{i}(value):\n    return value + {i}\n" for i in range(20_000)}
    files["pkg7/needle.py"] = "def find_the_needle_in_haystack():\n    return 'found'\n"
    write(repo, files)
    commit_all(repo)
    box = LocalSandbox(repo)
    try:
        started = time.monotonic()
        ws = current(box)
        took = time.monotonic() - started
        assert len(ws.index.entries) == 20_001 and ws.left_out == 0
        from tools.code.rank import localize

        assert localize(ws.index, "needle in the haystack", 1).files[0][0] == "pkg7/needle.py"
        assert took < 300, f"indexing 20,001 files took {took:.0f} s"
    finally:
        box.close()
