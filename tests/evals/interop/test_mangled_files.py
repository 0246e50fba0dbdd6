"""A trajectory file mangled as text (cut short, a byte changed, JSON's odd corners spliced in: a lone surrogate's
escape, NaN, a number past float, nesting thousands deep) imports as a run whose journal reads whole, or fails as
one BadTrajectory naming the file in one line: never a traceback."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent.journal.store import scan
from agent.models.pricing import load_prices
from evals.interop.imports.detect import open_source, trajectories
from evals.interop.imports.form import BadTrajectory
from evals.interop.imports.write import import_run
from tests.evals.interop import documents as docs

PUBLISHED = Path(__file__).parents[2] / "fixtures" / "imports"
# The documents built after each format's serializer, and the published files where they are laid (the small ones:
# each example reads its file whole).
FILES = {
    **{
        name: json.dumps(doc, indent=1).encode()
        for name, doc in {
            "mini-swe-agent v1": docs.mini_v1(),
            "mini-swe-agent v2": docs.mini_v2_toolcall(),
            "swe-agent": docs.swe_agent(),
            "atif": docs.atif(),
            "inspect": docs.inspect_json(1),
        }.items()
    },
    **{
        str(p.relative_to(PUBLISHED)): p.read_bytes()
        for p in sorted(PUBLISHED.rglob("*"))
        if p.is_file() and p.suffix in (".json", ".jsonl", ".traj") and p.stat().st_size < 100_000
    },
}
TROUBLE = [b"\\ud800", b"\\udfff", b"\\ud83d", b"NaN", b"-Infinity", b"1e999", b"-0", b"[" * 5000, b'"', b",", b"{"]
PRICES = load_prices()


def mangled(data: bytes):
    at = st.integers(0, len(data))
    return st.one_of(
        at.map(lambda n: data[:n]),  # cut short
        st.tuples(at, st.binary(min_size=1, max_size=1)).map(lambda p: data[: p[0]] + p[1] + data[p[0] + 1 :]),
        st.tuples(at, st.sampled_from(TROUBLE)).map(lambda p: data[: p[0]] + p[1] + data[p[0] :]),
    )


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(name=st.sampled_from(sorted(FILES)), data=st.data())
def test_a_mangled_file_imports_whole_or_says_what_is_wrong(name, data):
    raw = data.draw(mangled(FILES[name]))
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / Path(name).name
        path.write_bytes(raw)
        runs: list[Path] = []
        try:
            source = open_source(path)
            runs += [import_run(t, source, Path(tmp) / "runs", PRICES)[0] for t in trajectories(source)]
        except BadTrajectory as e:
            assert str(path) in str(e) and "\n" not in str(e)
        for run_dir in runs:
            found = scan(run_dir)
            assert found.damage is None and not found.skipped
