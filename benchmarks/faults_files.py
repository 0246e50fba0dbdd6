"""Damaged run folders and bad files against the real `harness` command: one row per input, as a user would meet it.

    rows = files_battery()          # list[Row]; for benchmarks/bench_faults.py's table
    .venv/bin/python benchmarks/faults_files.py

Each row runs this checkout's `harness` (`python -m cli`) in a subprocess on a fresh copy of a
real run (the demo task under its scripted model) or on a file with one byte that is not UTF-8:

- contained: no traceback, the exit code the case calls for (0 for a reader that warns, 2 for a
  refusal), and nothing misleading: a report of a torn journal shows the readable events, not the
  stale summary; a replay refuses instead of reporting divergences; a bad file starts nothing;
- clear: what the command said names the line and what is wrong with it (torn tail, checksum),
  or the file, the byte and its offset, or the missing image, and a report says it in the page too;
- data lost: files that were there before and were changed or removed by the command ("none"
  when every byte is as it was); a Docker run whose image is missing must leave its summary.json.

Read-only rows need root's immutable attribute (chattr); the missing-image row needs the Docker
engine. About a minute in all, mostly interpreter start-ups.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.agent.journal.damage import cut, flip, lines, tear  # noqa: E402

TASK = ROOT / "examples" / "demo_task.yaml"
SCRIPT = ROOT / "examples" / "demo_script.yaml"
LATIN_1 = "caf\xe9".encode("latin-1")  # é as one byte: not UTF-8
TIMEOUT_S = 120


@dataclass(frozen=True)
class Row:
    input: str
    command: str
    contained: bool
    clear: bool
    data_lost: str
    said: str  # what the command said, shortened


@dataclass(frozen=True)
class Done:
    code: int
    out: str
    err: str

    @property
    def both(self) -> str:
        return " ".join((self.out + " " + self.err).split())


def harness(*args: str, cwd: Path) -> Done:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "10000"}
    p = subprocess.run(
        [sys.executable, "-m", "cli", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=TIMEOUT_S
    )
    return Done(p.returncode, p.stdout, p.stderr)


def fingerprint(folder: Path) -> dict[str, str]:
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def lost(before: dict[str, str], folder: Path) -> str:
    after = fingerprint(folder)
    gone = [name for name, digest in before.items() if after.get(name) != digest]
    return "none" if not gone else ", ".join(gone[:3]) + (" …" if len(gone) > 3 else "") + " changed"


def shortened(text: str, keep: int = 220) -> str:
    text = " ".join(text.split())
    return text if len(text) <= keep else text[: keep - 1] + "…"


# ------------------------------------------------------------------ damaged journals, read by each reader

TORN = re.compile(r"torn tail at line \d+")
FLIPPED = re.compile(r"line \d+ is damaged: its checksum does not match its content")
STALE = re.compile(r"summary\.json does not match the journal \(it says stop submitted, the journal unfinished\)")


def torn(run: Path) -> None:
    tear(run, len(lines(run)) - 2)  # the process died writing the last tool observation


def flipped(run: Path) -> None:
    flip(run, 5)


def stale(run: Path) -> None:
    cut(run, len(lines(run)) - 3)  # every line whole, the end gone: only summary.json still says "submitted"


DAMAGE: list[tuple[str, Callable[[Path], None], re.Pattern[str]]] = [
    ("torn journal (cut mid-line)", torn, TORN),
    ("flipped byte in line 5", flipped, FLIPPED),
    ("stale summary.json (journal lost its end)", stale, STALE),
]


def reader_rows(base: Path, work: Path) -> list[Row]:
    rows = []
    for name, damage, pattern in DAMAGE:
        for command in ("report --format md", "report", "replay", "rerender", "ab"):
            if pattern is STALE and command in ("replay", "rerender"):
                continue  # a journal whose lines are all whole: nothing for these to find
            batch = work / f"{damage.__name__}-{command.replace(' ', '-')}"
            run = Path(shutil.copytree(base, batch / "b" / base.name))
            damage(run)
            before = fingerprint(run)
            args = {
                "report --format md": ["report", str(run), "--format", "md"],
                "report": ["report", str(run)],
                "replay": ["replay", str(run), "--out", str(batch / "replays")],
                "rerender": ["rerender", str(run), "--policy", "default"],
                "ab": ["ab", str(run.parent), str(run.parent), "--out", str(batch / "ab")],
            }[command]
            done = harness(*args, cwd=work)
            page = _page(command, run, batch)
            expected = 2 if command == "replay" else 0
            contained = "Traceback" not in done.both and done.code == expected
            if command.startswith("report") and pattern is not FLIPPED:  # the readable events end unfinished
                contained = contained and "stop: unfinished" in (page or done.out) and "stop: submitted" not in done.out
            if command == "replay":
                contained = contained and "divergence" not in done.both
            clear = bool(pattern.search(done.err if command != "replay" else done.both))
            if page is not None:
                clear = clear and bool(pattern.search(" ".join(page.split())))
            said = done.err if done.err.strip() else done.out
            rows.append(Row(name, f"harness {command}", contained, clear, lost(before, run), shortened(said)))
    return rows


def _page(command: str, run: Path, batch: Path) -> str | None:
    """The report the command wrote, where it shows the warning too; None for commands that write none."""
    if command == "report":
        path = run / "report.html"
    elif command == "ab":
        path = batch / "ab" / "ab-b-vs-b" / "ab.html"
    else:
        return None
    return path.read_text() if path.exists() else ""


# ------------------------------------------------------------------ read-only run folders


def chattr(flag: str, *paths: Path) -> bool:
    return (
        shutil.which("chattr") is not None
        and subprocess.run(["chattr", flag, *map(str, paths)], capture_output=True).returncode == 0
    )


def read_only_rows(base: Path, work: Path) -> list[Row]:
    rows = []
    for command in ("report", "report --format md", "replay", "rerender", "ab"):
        holder = work / f"ro-{command.replace(' ', '-')}"
        run = Path(shutil.copytree(base, holder / "b" / base.name))
        if not chattr("+i", run, run.parent, holder):
            return [Row("read-only run folder", "harness report", False, False, "-", "not tried: no chattr +i here")]
        try:
            before = fingerprint(run)
            args = {
                "report": ["report", str(run)],
                "report --format md": ["report", str(run), "--format", "md"],
                "replay": ["replay", str(run)],
                "rerender": ["rerender", str(run), "--policy", "default"],
                "ab": ["ab", str(run.parent), str(run.parent)],
            }[command]
            done = harness(*args, cwd=work)
            wrote = re.search(r"wrote (\S+)", done.out)
            contained = "Traceback" not in done.both and done.code == 0
            if command in ("report", "ab"):  # these write: somewhere else, and they say where
                contained = contained and wrote is not None and Path(wrote.group(1)).is_file()
                clear = "cannot be written (read-only?)" in done.err and "instead" in done.err
            else:
                clear = True  # nothing to say: they only read
            said = done.err if done.err.strip() else done.out.splitlines()[-1] if done.out.strip() else ""
            rows.append(
                Row("read-only run folder", f"harness {command}", contained, clear, lost(before, run), shortened(said))
            )
        finally:
            chattr("-i", run, run.parent, holder)
    return rows


# ------------------------------------------------------------------ files that are not UTF-8


def bad_file_rows(work: Path) -> list[Row]:
    """Each file kind the user hands in, with one Latin-1 byte: exit 2, one line naming file, byte and offset."""
    fixture = ROOT / "tests" / "fixtures" / "trajectories" / "click-bool-yes"
    cases: list[tuple[str, str, bytes, Callable[[Path], list[str]]]] = [
        ("task file (.md)", "t.md", b"Write ", lambda f: ["run", "--task", str(f), "--model", f"scripted:{SCRIPT}"]),
        (
            "task file (.yaml)",
            "t.yaml",
            b"prompt: ",
            lambda f: ["run", "--task", str(f), "--model", f"scripted:{SCRIPT}"],
        ),
        (
            "scripted-model file",
            "m.yaml",
            b"replies:\n  - text: ",
            lambda f: ["run", "--task", "x", "--model", f"scripted:{f}"],
        ),
        (
            "policy file",
            "p.toml",
            b'extends = "default"\n# ',
            lambda f: ["run", "--task", "x", "--model", f"scripted:{SCRIPT}", "--policy", str(f)],
        ),
        (
            "chess config (a policy file)",
            "c.toml",
            b'extends = "default"\n# ',
            lambda f: ["chess", "--model", "player:random", "--policy", str(f)],
        ),
        (
            "prices file",
            "prices.toml",
            b"# ",
            lambda f: ["run", "--task", "x", "--model", f"scripted:{SCRIPT}", "--prices", str(f)],
        ),
        (
            "MCP config file",
            "mcp.toml",
            b"# ",
            lambda f: ["run", "--task", "x", "--model", f"scripted:{SCRIPT}", "--config", str(f)],
        ),
        ("SWE instances file", "r.jsonl", b'{"instance_id": "', lambda f: ["swe", "validate", str(f)]),
        ("SWE specs file", "specs.yaml", b"# ", lambda f: ["swe", "validate", "builtin", "--specs", str(f)]),
        ("SWE predictions file", "preds.jsonl", b'{"model_patch": "', lambda f: ["swe-grade", str(f)]),
        (
            "run.json of a run folder",
            "run.json",
            b'{"run_id": "',
            lambda f: ["report", str(f.parent), "--format", "md"],
        ),
    ]
    rows = []
    for name, file_name, head, command in cases:
        folder = work / f"bad-{file_name}"
        if file_name == "run.json":
            shutil.copytree(fixture, folder)
        else:
            folder.mkdir()
        path = folder / file_name
        path.write_bytes(head + LATIN_1 + b"\n")
        before = fingerprint(folder)
        done = harness(*command(path), cwd=folder)
        offset = len(head) + 3
        said = done.both
        contained = "Traceback" not in said and done.code == 2 and not (folder / "runs").exists()
        clear = (
            str(path) in said
            and f"is not UTF-8: byte 0xe9 at offset {offset}" in said
            and len((done.out + done.err).strip().splitlines()) == 1
        )
        rows.append(Row(name, f"harness {command(path)[0]}", contained, clear, lost(before, folder), shortened(said)))
    return rows


# ------------------------------------------------------------------ a Docker image that is not there


def missing_image_row(work: Path) -> Row:
    image = "harness-no-such-image:1"
    out = work / "docker-runs"
    done = harness(
        "run",
        "--task",
        "x",
        "--model",
        f"scripted:{SCRIPT}",
        "--sandbox",
        f"docker:{image}",
        "--out",
        str(out),
        cwd=work,
    )
    folders = [p for p in out.iterdir() if p.is_dir()] if out.exists() else []
    summary = folders[0] / "summary.json" if folders else None
    has_summary = summary is not None and summary.exists() and '"environment_error"' in summary.read_text()
    contained = "Traceback" not in done.both and done.code == 2 and has_summary
    clear = image in done.both and "is not on this Docker engine" in done.both
    missing = [n for n in ("run.json", "events.jsonl", "summary.json") if not folders or not (folders[0] / n).exists()]
    return Row(
        "Docker image missing",
        "harness run --sandbox docker:IMAGE",
        contained,
        clear,
        "none" if not missing else f"no {', '.join(missing)}",
        shortened(done.both),
    )


def files_battery() -> list[Row]:
    with tempfile.TemporaryDirectory(prefix="faults-files-") as tmp:
        work = Path(tmp)
        made = harness(
            "run", "--task", str(TASK), "--model", f"scripted:{SCRIPT}", "--out", str(work / "runs"), cwd=work
        )
        if made.code != 0:
            raise SystemExit(f"the demo run failed:\n{made.out}\n{made.err}")
        [base] = [p for p in (work / "runs").iterdir() if p.is_dir()]
        rows = [*reader_rows(base, work), *read_only_rows(base, work), *bad_file_rows(work), missing_image_row(work)]
        # the battery's own folder, and the run's id, are the same in every row: shown once, not in each
        return [replace(r, said=r.said.replace(str(work), "…").replace(base.name, "RUN")) for r in rows]


def table(rows: list[Row]) -> str:
    head = ("input", "command", "contained", "clear", "data lost", "said")
    body = [
        (r.input, r.command, "yes" if r.contained else "NO", "yes" if r.clear else "NO", r.data_lost, r.said[:110])
        for r in rows
    ]
    widths = [max(len(line[i]) for line in [head, *body]) for i in range(len(head))]
    out = [" | ".join(cell.ljust(w) for cell, w in zip(line, widths, strict=True)).rstrip() for line in [head, *body]]
    return "\n".join([out[0], "-+-".join("-" * w for w in widths), *out[1:]])


def main() -> None:
    rows = files_battery()
    print(table(rows))
    lost_any = sum(r.data_lost != "none" for r in rows)
    print(
        f"{sum(r.contained for r in rows)}/{len(rows)} contained, {sum(r.clear for r in rows)}/{len(rows)} clear, "
        f"{lost_any} lost data"
    )


if __name__ == "__main__":
    main()
