"""A repository's files at a commit, from a clone or a bare mirror under `--repos DIR`.

The folder of a repository is found as `harness swe` finds it (evals.swe.sources: `DIR/<owner>__<name>`,
`DIR/<owner>/<name>`, `DIR/<name>`), and may be a bare mirror (what `fetch` lays down) as well as a clone.
Files come straight from the commit's tree (`git ls-tree`, `git cat-file --batch`): no work tree is checked out.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from core.errors import HarnessError
from evals.swe.sources import candidates
from tools.code.languages import wanted


def git_dir(repos: Path, instance_id: str, repo: str, commit: str) -> Path:
    for path in candidates(repos, instance_id, repo):
        for git in (path / ".git", path):
            if (git / "HEAD").is_file() and _has(git, commit):
                return git
    owner, _, name = repo.partition("/")
    raise HarnessError(
        f"No repository holding {repo} at {commit[:12]} under {repos}: put a clone or a bare mirror of it "
        f"there as {repos / f'{owner}__{name}'} (benchmarks/README.md, 'Localization', says how)."
    )


def files_at(git: Path, commit: str) -> list[tuple[str, bytes]]:
    """The files of `commit` that the code index reads (by name and size: images and data stay in git).
    Symbolic links and submodules are left out, as a work tree's archive leaves them (tools.code.archive)."""
    listing = _git(git, "ls-tree", "-r", "-l", "-z", commit).split(b"\0")
    wanted_blobs = []
    for row in listing:
        if not row:
            continue
        meta, _, path = row.partition(b"\t")
        mode, kind, sha, length = meta.split()
        name = path.decode("utf-8", "surrogateescape")
        # A blob the mirror lacks has no size ("BAD"); it is left out as if it were not there.
        if kind == b"blob" and mode != b"120000" and length.isdigit() and wanted(name, int(length)):
            wanted_blobs.append((name, sha))
    batch = _git(git, "cat-file", "--batch", stdin=b"".join(sha + b"\n" for _, sha in wanted_blobs))
    out: list[tuple[str, bytes]] = []
    at = 0
    for name, _ in wanted_blobs:
        header_end = batch.index(b"\n", at)
        header = batch[at:header_end].split()
        if len(header) < 3:  # "<sha> missing"
            at = header_end + 1
            continue
        size = int(header[2])
        out.append((name, batch[header_end + 1 : header_end + 1 + size]))
        at = header_end + 1 + size + 1
    return out


def worktree(folder: Path) -> tuple[list[tuple[str, bytes]], str]:
    """A folder's files as they stand, and its commit ("" outside git, or when files differ from it): in git,
    the tracked and untracked files git does not ignore; else every file. Symbolic links are left out."""
    if not folder.is_dir():
        raise HarnessError(f"{folder} is not a folder; pass the repository's top folder with --repo.")
    inside = subprocess.run(["git", "-C", str(folder), "rev-parse", "--show-toplevel"], capture_output=True)
    if inside.returncode == 0:
        top = Path(inside.stdout.decode().strip())
        listed = subprocess.run(
            ["git", "-C", str(top), "ls-files", "-z", "--cached", "--others", "--exclude-standard"], capture_output=True
        )
        paths = [p.decode("utf-8", "surrogateescape") for p in listed.stdout.split(b"\0") if p]
        head = subprocess.run(["git", "-C", str(top), "rev-parse", "-q", "--verify", "HEAD"], capture_output=True)
        status = subprocess.run(["git", "-C", str(top), "status", "--porcelain"], capture_output=True)
        commit = head.stdout.decode().strip() if head.returncode == 0 and not status.stdout.strip() else ""
    else:
        top = folder
        paths = [str(p.relative_to(top)) for p in top.rglob("*") if ".git" not in p.relative_to(top).parts]
        commit = ""
    out = []
    for path in sorted(paths):
        full = top / path
        if full.is_symlink() or not full.is_file():
            continue
        try:
            size = full.stat().st_size
            if wanted(path, size):
                out.append((path, full.read_bytes()))
        except OSError:
            continue  # gone or unreadable since it was listed
    return out, commit


def commit_times(git: Path, commits: list[str]) -> dict[str, int]:
    """Each commit's time (seconds since the epoch), so that issues can be taken in the repository's order."""
    out = _git(git, "show", "-s", "--format=%H %ct", *commits).decode().split()
    return {sha: int(t) for sha, t in zip(out[::2], out[1::2])}


def _git(git: Path, *args: str, stdin: bytes | None = None) -> bytes:
    run = subprocess.run(["git", f"--git-dir={git}", *args], input=stdin, capture_output=True)
    if run.returncode != 0:
        raise HarnessError(f"git {' '.join(args[:2])} in {git} failed: {run.stderr.decode(errors='replace')[-500:]}")
    return run.stdout


def _has(git: Path, commit: str) -> bool:
    run = subprocess.run(["git", f"--git-dir={git}", "cat-file", "-e", f"{commit}^{{commit}}"], capture_output=True)
    return run.returncode == 0
