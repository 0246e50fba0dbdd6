"""A 200 reply that is not a model reply (an HTML page, no `choices`, empty `choices`, content of
the wrong type), read through the official SDKs from a real loopback server: each is a transient
model error, retried, and after the policy's attempts the run stops `model_unavailable` with its
summary written. The policy's HTTP timeouts bound a server that accepts and never answers."""

from __future__ import annotations

import json

import pytest

from agent.models import load_model
from agent.run.task import Task
from agent.session import RunSpec, start
from core.errors import TransientModelError
from core.policy import ErrorPolicy, HarnessPolicy, ModelParams
from tests.agent.helpers import events
from tests.agent.models.provider_double import (
    anthropic_message,
    black_hole,
    openai_completion,
    provider,
    raw,
    reply,
)
from tests.agent.models.test_provider_retries import SUBMIT_AN, SUBMIT_OA, spec

HTML = raw(200, b"<html><body><h1>502 Bad Gateway</h1></body></html>", "text/html")
HTML_AS_JSON = raw(200, b"<html><body>upstream error</body></html>", "application/json")


def openai_without(field: str) -> dict:
    body = openai_completion(text="hi")
    del body[field]
    return body


def openai_with_content(content) -> dict:
    body = openai_completion(text="hi")
    body["choices"][0]["message"]["content"] = content
    return body


MALFORMED = {
    "openai": {
        "html": HTML,
        "html_labelled_json": HTML_AS_JSON,
        "empty_choices": reply(200, openai_completion(text="hi") | {"choices": []}),
        "no_choices": reply(200, openai_without("choices")),
        "content_a_number": reply(200, openai_with_content(42)),
        "content_a_list": reply(200, openai_with_content([{"type": "text", "text": "hi"}])),
    },
    "anthropic": {
        "html": HTML,
        "html_labelled_json": HTML_AS_JSON,
        "no_content": reply(200, {k: v for k, v in anthropic_message([]).items() if k != "content"}),
        "content_a_string": reply(200, anthropic_message("hi")),
        "text_a_number": reply(200, anthropic_message([{"type": "text", "text": 42}])),
        "content_null": reply(200, anthropic_message(None)),
    },
}
CASES = [(api, shape) for api, shapes in MALFORMED.items() for shape in shapes]
FAST = HarnessPolicy(errors=ErrorPolicy(model_attempts=3, backoff_multiplier_s=0.01, backoff_max_s=0.05))


@pytest.mark.parametrize(("api", "shape"), CASES)
def test_a_malformed_reply_is_a_transient_model_error(api, shape):
    with provider([MALFORMED[api][shape]]) as (_, url):
        with pytest.raises(TransientModelError, match="could not be read as a model reply"):
            load_model(spec(api, url)).complete([], [], ModelParams())


@pytest.mark.parametrize(("api", "shape"), CASES)
def test_a_malformed_reply_is_retried_and_the_run_goes_on(tmp_path, api, shape):
    good = SUBMIT_OA if api == "openai" else SUBMIT_AN
    with provider([MALFORMED[api][shape], good]) as (server, url):
        summary, run_dir = start(RunSpec(Task(prompt="finish"), spec(api, url), FAST, tmp_path))
    assert summary.stop_reason == "submitted" and summary.model_failures == 1 and len(server.requests) == 2
    failed = [e for e in events(run_dir) if e["type"] == "model_failed"]
    assert failed[0]["transient"] and "could not be read" in failed[0]["message"]


@pytest.mark.parametrize("api", ["openai", "anthropic"])
def test_malformed_replies_to_every_attempt_stop_the_run_as_model_unavailable(tmp_path, api):
    shapes = list(MALFORMED[api].values())
    with provider(shapes[:3]) as (_, url):
        summary, run_dir = start(RunSpec(Task(prompt="finish"), spec(api, url), FAST, tmp_path))
    assert summary.stop_reason == "model_unavailable" and summary.model_failures == 3
    assert (run_dir / "summary.json").is_file() and events(run_dir)[-1]["type"] == "run_stopped"


@pytest.mark.parametrize("api", ["openai", "anthropic"])
def test_a_server_that_never_answers_fails_within_the_policys_read_timeout(tmp_path, api):
    policy = FAST.model_copy(update={"model": ModelParams(read_timeout_s=0.3, connect_timeout_s=0.3)})
    with black_hole() as url:
        summary, run_dir = start(RunSpec(Task(prompt="finish"), spec(api, url), policy, tmp_path))
    assert summary.stop_reason == "model_unavailable" and summary.model_failures == 3
    failed = [e for e in events(run_dir) if e["type"] == "model_failed"]
    assert all(f["transient"] and "timed out" in f["message"] for f in failed)


@pytest.mark.parametrize("api", ["openai", "anthropic"])
def test_sdk_retries_come_from_the_policy(api):
    """With sdk_retries=2 the SDK itself tries three times inside one harness attempt."""
    with provider([reply(500, {"error": {"message": "boom"}})] * 3) as (server, url):
        with pytest.raises(TransientModelError, match="500"):
            load_model(spec(api, url)).complete([], [], ModelParams(sdk_retries=2))
    assert len(server.requests) == 3


@pytest.mark.parametrize(
    ("api", "shape", "said"),
    [
        ("openai", "empty_choices", "its `choices` list is empty or missing"),
        ("openai", "html", "it is not a JSON chat completion"),
        ("anthropic", "content_null", "its `content` is not a list of blocks"),
        ("anthropic", "html_labelled_json", "it is not JSON: Expecting value at character 0"),
    ],
)
def test_a_malformed_reply_is_said_to_be_malformed_quoting_what_was_in_it(tmp_path, api, shape, said):
    with provider([MALFORMED[api][shape]] * 3) as (_, url):
        summary, run_dir = start(RunSpec(Task(prompt="finish"), spec(api, url), FAST, tmp_path))
    stopped = events(run_dir)[-1]["message"]
    assert "the provider answered, but its reply is malformed" in stopped and f"({said})" in stopped
    sent = MALFORMED[api][shape][2]
    quoted = sent.decode() if isinstance(sent, bytes) else json.dumps(sent)
    assert f"The reply was: {quoted[:60]}" in stopped
    assert "IndexError" not in stopped and "list index out of range" not in stopped
