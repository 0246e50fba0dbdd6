"""`harness export`'s work: read a run or a batch and write it as ATIF trajectories or one Inspect eval log, or
send it as OpenTelemetry spans.

ATIF holds one run per file: `<run>.atif.json` for each run, read and written one at a time. An Inspect log
holds a whole eval: one file for the run or the batch, one sample per run. A batch's run that cannot be
read (a damaged journal, a broken run.json) is named and left out; the others are written. Writing the
same export again replaces its files with the same content.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from agent.journal.store import make_folder
from core.errors import HarnessError
from evals.interop.exports.atif import trajectory
from evals.interop.exports.inspect_log import eval_log, log_name
from evals.interop.exports.otel import send
from evals.interop.exports.run import Recorded, read_run, run_dirs

Format = Literal["atif", "inspect", "otel"]


@dataclass
class Exported:
    written: list[Path] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # one line per run left out: which, and why
    notes: list[str] = field(default_factory=list)  # what the integrity check found in the runs written


def export(path: Path, format: Format, out: Path | None = None, url: str | None = None) -> Exported:
    """Raises HarnessError when PATH is neither a run nor a batch, when the one run it names cannot be read,
    and when no run of a batch can. `otel` sends the runs' spans to `url` (an OTLP/HTTP traces endpoint); `written`
    then names the runs sent."""
    path = Path(path)
    dirs = run_dirs(path)
    single = dirs == [path]
    done = Exported()
    if format == "otel":
        if url is None:
            raise HarnessError("--format otel sends spans: give --otel-endpoint URL (e.g. http://localhost:6006).")
        recs = []
        for run_dir in dirs:
            try:
                recs.append(read_run(run_dir))
            except HarnessError as e:
                if single:
                    raise
                done.skipped.append(str(e))
        done.written, refused = send(recs, url)
        done.skipped += refused
        return done
    target = make_folder(Path(out) if out is not None else path, "export folder", exist_ok=True)

    def readable() -> Any:
        for run_dir in dirs:
            try:
                rec = read_run(run_dir)
            except HarnessError as e:
                if single:
                    raise
                done.skipped.append(str(e))
                continue
            done.notes.extend(f"{rec.name}: {note}" for note in rec.notes)
            yield rec

    if format == "atif":
        for rec in readable():
            done.written.append(_write(target / f"{rec.name}.atif.json", trajectory(rec)))
    else:
        runs: dict[str, Recorded] = {}
        for rec in readable():
            runs[rec.summary.task_id if single else rec.name] = rec
        if runs:
            log = eval_log(runs[next(iter(runs))].summary.task_id if single else path.name, runs)
            done.written.append(_write(target / log_name(log), log))
    if not done.written:
        raise HarnessError(
            f"None of the {len(dirs)} runs of {path} could be read, so nothing was exported; the first: {done.skipped[0]}"
        )
    return done


def _write(path: Path, data: dict[str, Any]) -> Path:
    try:
        path.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    except OSError as e:
        raise HarnessError(f"Cannot write {path}: {e.strerror or e}; pick another --out.") from None
    return path
