"""`harness localize`: rank a repository's files and functions for an issue, without a model; or, over many
SWE-bench issues, measure how well that ranking finds what their gold patches changed."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import typer
from rich.table import Table

from cli.output import console, exits_on_error, print_json, stderr, text
from core.errors import HarnessError
from core.text_files import read_text_file

METHODS = ("code", "bm25", "grep")  # evals.localize.batch.METHODS, named here so that `harness` starts fast


@exits_on_error
def localize_command(
    repo: Path = typer.Option(None, help="The repository's folder, as it stands (git's ignored files left out)."),
    issue: str = typer.Option(None, help="A file holding the issue's text, or - to read it from stdin."),
    k: int = typer.Option(10, min=1, help="How many files and functions to list."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON: files and functions, best first."),
    issues: Path = typer.Option(
        None, help="Batch form: SWE-bench records (JSON list or JSONL) with their gold patches, instead of --issue."
    ),
    repos: Path = typer.Option(
        None, help="Batch form: the folder holding each repository (clone or bare mirror) as OWNER__NAME."
    ),
    limit: int = typer.Option(None, min=1, help="Batch form: the first N issues only."),
    methods: str = typer.Option(",".join(METHODS), help="Batch form: the rankings to compare (code, bm25, grep)."),
    out: Path = typer.Option(None, help="Batch form: write every issue's gold and rankings here (JSONL)."),
) -> None:
    """Rank files and functions for an issue from its text alone. With --issues and --repos: recall@1/5/10 and
    MRR of files, recall@5/10 of functions, per repository, beside plain BM25 and grep ranking."""
    # The code index's libraries (numpy, tree-sitter, networkx) load only for this command.
    from evals.localize.repos import worktree
    from tools.code.index import build
    from tools.code.rank import localize
    from tools.code.workspace import load_cached, save_cached

    if issues is not None or repos is not None:
        if issues is None or repos is None or repo is not None or issue is not None:
            raise HarnessError("The batch form takes --issues FILE and --repos DIR (and no --repo or --issue).")
        _batch(issues, repos, limit, [m.strip() for m in methods.split(",") if m.strip()], out, as_json)
        return
    if repo is None or issue is None:
        raise HarnessError(
            "Pass --repo DIR and --issue FILE (or - for stdin); or --issues FILE --repos DIR for a batch."
        )
    text_ = sys.stdin.read() if issue == "-" else read_text_file(Path(issue), "issue file")
    if not text_.strip():
        raise HarnessError(f"The issue {'on stdin' if issue == '-' else issue} is empty; pass the issue's text.")
    files, commit = worktree(repo)
    index = load_cached(commit) if commit else None
    if index is None:
        index = build(files)
        if commit:
            save_cached(commit, index)
    ranking = localize(index, text_, k)
    if as_json:
        print_json(
            {
                "files": [{"path": p, "score": round(s, 4)} for p, s in ranking.files],
                "functions": [
                    {"path": f.path, "name": f.qualname, "line": f.line, "score": round(s, 4)}
                    for f, s in ranking.functions
                ],
            }
        )
        return
    table = Table("rank", "file", "score", title=f"Files for the issue ({len(index.entries)} files indexed)")
    for n, (path, score) in enumerate(ranking.files, 1):
        table.add_row(str(n), text(path), f"{score:.3f}")
    console.print(table)
    table = Table("rank", "function", "file:line", "score", title="Functions")
    for n, (sym, score) in enumerate(ranking.functions, 1):
        table.add_row(str(n), text(sym.qualname), text(f"{sym.path}:{sym.line}"), f"{score:.3f}")
    console.print(table)


def _batch(
    issues_file: Path, repos: Path, limit: int | None, methods: list[str], out: Path | None, as_json: bool
) -> None:
    from evals.localize import batch as localize_batch
    from evals.localize.dataset import read_issues
    from evals.localize.metrics import by_repository, summary

    unknown = [m for m in methods if m not in METHODS]
    if unknown or not methods:
        raise HarnessError(f"Unknown method {', '.join(unknown)}; choose from {', '.join(METHODS)}.")
    if not repos.is_dir():
        raise HarnessError(f"--repos {repos} is not a folder; lay the repositories there as OWNER__NAME.")
    records = read_issues(issues_file)[:limit]
    start = time.monotonic()

    def progress(done: int, issue, _) -> None:
        stderr.print(text(f"[{done}/{len(records)}] {issue.instance_id}  {time.monotonic() - start:.0f} s"))

    result = localize_batch.run(records, repos, methods, progress=progress)
    if out is not None:
        with out.open("w") as f:
            for o in result.outcomes:
                f.write(json.dumps(o.__dict__) + "\n")
    figures = {m: summary([o for o in result.outcomes if o.method == m]) for m in methods}
    per_repo = {m: by_repository([o for o in result.outcomes if o.method == m]) for m in methods}
    builds = localize_batch.build_figures(result)
    if as_json:
        print_json({"overall": figures, "by_repository": per_repo, "builds": builds, "peak_rss_mb": result.peak_rss_mb})
        return
    for m in methods:
        console.print(_table(f"{m}: {len(records)} issues", {"all": figures[m], **per_repo[m]}))
    console.print(text(json.dumps(builds), f"\npeak memory {result.peak_rss_mb:.0f} MB"))


def _table(title: str, rows: dict[str, dict]) -> Table:
    columns = [
        "issues",
        "file_recall@1",
        "file_recall@5",
        "file_recall@10",
        "file_mrr",
        "function_recall@5",
        "function_recall@10",
    ]
    table = Table("repository", *[c.replace("_", " ") for c in columns], title=title)
    for name, row in rows.items():
        table.add_row(text(name), *(str(row[c]) if c == "issues" else f"{row[c]:.3f}" for c in columns))
    return table
