"""A trajectory damaged anywhere (a value of the wrong type, a field gone) imports or fails as a BadTrajectory
that names the file: never a traceback."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent.models.pricing import load_prices
from evals.interop.imports.detect import open_source, trajectories
from evals.interop.imports.form import BadTrajectory
from evals.interop.imports.write import import_run
from tests.evals.interop import documents as docs

DOCUMENTS = {
    "mini-swe-agent v1": docs.mini_v1(),
    "mini-swe-agent v2": docs.mini_v2_toolcall(),
    "mini-swe-agent v2, Responses API": docs.mini_v2_responses(),
    "swe-agent": docs.swe_agent(),
    "atif": docs.atif(),
    "inspect": docs.inspect_json(1),
}
ODD = st.one_of(st.none(), st.integers(), st.text(max_size=5), st.lists(st.integers(), max_size=2), st.just({}))
PRICES = load_prices()


def paths(value: Any, at: tuple = ()) -> list[tuple]:
    """Every place in a JSON value: the keys and indices that lead there."""
    found = [at]
    if isinstance(value, dict):
        for k, v in value.items():
            found += paths(v, (*at, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            found += paths(v, (*at, i))
    return found


def damaged(doc: Any, at: tuple, odd: Any, drop: bool) -> Any:
    doc = json.loads(json.dumps(doc))
    if not at:
        return odd
    parent = doc
    for key in at[:-1]:
        parent = parent[key]
    if drop and isinstance(parent, dict):
        del parent[at[-1]]
    else:
        parent[at[-1]] = odd
    return doc


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(name=st.sampled_from(sorted(DOCUMENTS)), data=st.data(), odd=ODD, drop=st.booleans())
def test_a_damaged_document_imports_or_says_what_is_wrong(name, data, odd, drop):
    doc = DOCUMENTS[name]
    at = data.draw(st.sampled_from(paths(doc)))
    with tempfile.TemporaryDirectory() as tmp:
        path = docs.write(Path(tmp) / "damaged.json", damaged(doc, at, odd, drop))
        try:
            source = open_source(path)
            for t in trajectories(source):
                import_run(t, source, Path(tmp) / "runs", PRICES)
        except BadTrajectory as e:
            assert str(path) in str(e) and "\n" not in str(e)
