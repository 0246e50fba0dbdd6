"""The fault suite of benchmarks/bench_faults.py at CI size: a few hundred schema-driven,
mutated and hand-written hostile requests to both chat APIs beside an innocent client,
on a tiny random-weights engine with SmolLM2's real tokenizer and chat template."""

import logging

import pytest

from benchmarks.bench_faults import (
    BODY_TIMEOUT_S,
    MAX_BODY,
    hostile_requests,
    make_engine,
    read_log,
    run_suite,
    table,
)
from tests.engine.serving import running_server


@pytest.fixture(scope="module")
def url(checkpoint):
    engine = make_engine(checkpoint, tiny=True)
    with running_server(engine, max_body_bytes=MAX_BODY, request_timeout_s=BODY_TIMEOUT_S) as base:
        yield base
    engine.shutdown()


def test_a_few_hundred_hostile_and_fuzzed_requests_are_contained(url, caplog):
    with caplog.at_level(logging.INFO):
        tally, after = run_suite(url, requests=450, seconds=400, workers=4, corpus_size=12, hostile_rounds=1)
    after["log"] = read_log(caplog.text + "".join(r.exc_text or "" for r in caplog.records))
    report = table(tally, after)
    assert sum(v for (api, kind), v in tally.tried.items() if kind in ("schema", "mutated")) >= 300, report
    assert sum(tally.server_errors.values()) == 0, report
    assert sum(tally.stream_errors.values()) == sum(tally.no_answer.values()) == 0, report
    assert sum(v for (api, kind), v in tally.tried.items() if kind == "innocent") > 0, report
    assert sum(tally.innocent_failures.values()) == 0, report
    assert sum(v for (api, kind), v in tally.tried.items() if kind == "hostile") == len(hostile_requests()), report
    assert after["valid request"] == {"/v1/chat/completions": 200, "/v1/messages": 200}, report
    assert after["metrics status"] == 200 and after["server_error counted"] == 0, report
    assert sum(tally.leaks.values()) == 0 and not [r for r in caplog.records if r.exc_info], report
    assert after["log"] == {"tracebacks": 0, "hang-ups said": tally.hang_ups} and tally.hang_ups == 6, report
