"""How fast `harness import` reads a folder of real trajectories, and whether its memory stays bounded.

By default the folder is the 500 mini-swe-agent trajectories of Gemini 3 Pro on SWE-bench Verified
(mini-swe-agent 1.15.0, 2025-11-18; 98 MB), written to a temporary folder from a bare git mirror of
gruckion/mini-swe-agent (`--mirror`, where `fetch github:gruckion/mini-swe-agent` puts it), laid out as
mini-swe-agent writes them (trajs/<id>/<id>.traj.json). `--folder` imports a folder of your own instead.

The files are imported in process, as `harness import` does, into a temporary batch folder; the script
prints files per second and the process's resident memory (VmRSS) as the import goes, and its peak
(VmHWM), then imports the same folder again (every run already there: the idempotent pass). Last, it runs
`harness import` on the folder as a user does, a process of its own, and gives that process's peak resident
memory beside the peak of `harness --help` (what the CLI holds before it reads a file).

    .venv/bin/python benchmarks/bench_import.py [--files 500] [--mirror DIR | --folder DIR]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from agent.models.pricing import load_prices  # noqa: E402
from evals.interop.imports.batch import files_in, import_batch  # noqa: E402

MIRROR = Path("/work/.mirror/gruckion+mini-swe-agent/repo")
TRAJS = "swebench_results/20251118_gemini-3-pro-74pct/trajs"


def memory_mb(field: str) -> float:
    """VmRSS (now) or VmHWM (the peak) of this process, in MB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    return float("nan")


def extract(mirror: Path, into: Path, limit: int) -> list[Path]:
    """The mirror's Gemini trajectories written out, one folder each, streamed through `git cat-file --batch`
    (so the extraction does not raise the peak memory the import is measured by)."""
    listing = subprocess.run(
        ["git", "-C", str(mirror), "ls-tree", "-r", "HEAD", TRAJS], capture_output=True, text=True, check=True
    ).stdout
    entries = [line.split(None, 3) for line in listing.splitlines() if line.endswith(".traj.json")][:limit]
    git = subprocess.Popen(
        ["git", "-C", str(mirror), "cat-file", "--batch"], stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    assert git.stdin is not None and git.stdout is not None
    paths = []
    for _, _, blob, name in entries:
        git.stdin.write(f"{blob}\n".encode())
        git.stdin.flush()
        size = int(git.stdout.readline().split()[2])
        path = into / Path(name).parent.name / Path(name).name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(git.stdout.read(size))
        git.stdout.read(1)  # the newline after each object
        paths.append(path)
    git.stdin.close()
    git.wait()
    return paths


def timed_import(files: list[Path], batch: Path, label: str) -> None:
    prices = load_prices()
    marks = {n for n in (1, len(files) // 10, len(files) // 4, len(files) // 2, len(files)) if n}
    done = 0
    began = time.perf_counter()

    def progress(path: Path, error: str | None, failed: bool) -> None:
        nonlocal done
        done += 1
        if error is not None:
            print(f"  skipped: {error}")
        if done in marks:
            rate = done / (time.perf_counter() - began)
            print(f"  {label}: {done:4d} files  {rate:6.1f} files/s  RSS {memory_mb('VmRSS'):6.1f} MB")

    outcome = import_batch(files, batch, "auto", prices, progress)
    seconds = time.perf_counter() - began
    print(
        f"{label}: {len(files)} files, {outcome.runs} runs ({outcome.written} written) in {seconds:.1f} s = "
        f"{len(files) / seconds:.1f} files/s ({100 * seconds / len(files):.1f} s per 100 files); "
        f"peak RSS {memory_mb('VmHWM'):.1f} MB"
    )


def peak_mb(*args: str) -> tuple[float, float]:
    """(peak resident MB, seconds) of `harness ARGS` run as a process of its own."""
    began = time.perf_counter()
    child = subprocess.Popen(
        [str(Path(sys.executable).with_name("harness")), *args], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    _, status, usage = os.wait4(child.pid, 0)
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode not in (0, 1):
        sys.exit(f"harness {args[0]} failed ({child.returncode})")
    return usage.ru_maxrss / 1024, time.perf_counter() - began


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", type=int, default=500, help="how many trajectories to import")
    ap.add_argument("--mirror", type=Path, default=MIRROR, help="a bare git mirror of gruckion/mini-swe-agent")
    ap.add_argument("--folder", type=Path, help="import this folder's trajectories instead of the mirror's")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = args.folder if args.folder is not None else Path(tmp) / "trajs"
        if args.folder is not None:
            files = files_in([args.folder])[: args.files]
        else:
            files = extract(args.mirror, folder, args.files)
        total = sum(f.stat().st_size for f in files)
        largest = max(files, key=lambda f: f.stat().st_size)
        print(
            f"{len(files)} files, {total / 1e6:.1f} MB (largest {largest.name}, {largest.stat().st_size / 1e6:.1f} MB); "
            f"RSS before importing {memory_mb('VmRSS'):.1f} MB"
        )
        batch = Path(tmp) / "runs" / "import-trajs"
        timed_import(files, batch, "import")
        timed_import(files, batch, "again (all kept)")
        start, _ = peak_mb("--help")
        peak, seconds = peak_mb("import", str(folder), "--out", f"{tmp}/cli")
        print(
            f"harness import (the command, a process of its own): {seconds:.1f} s, peak RSS {peak:.1f} MB, of which "
            f"the CLI before reading a file (harness --help) {start:.1f} MB"
        )


if __name__ == "__main__":
    main()
