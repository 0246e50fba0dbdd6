"""A prompt longer than the model's window, as each provider says it: OpenAI's `context_length_exceeded`,
Anthropic's "prompt is too long", and `harness serve`'s own 400, read through the official SDKs over real
HTTP (a loopback server replaying the providers' bodies, and the real `harness serve` with a small
--max-model-len), and the in-process engine's error. Each is a ContextOverflowError carrying the tokens and
the limit, and it ends a run as `context_overflow`, not retried."""

from __future__ import annotations

import openai
import pytest

from agent.models import load_model
from agent.models.local import LocalModel
from agent.models.pricing import load_prices
from agent.run.task import Task
from agent.session import RunSpec, start
from core.errors import ContextOverflowError, PermanentModelError
from core.policy import ModelParams, OverflowPolicy
from core.presets import PRESETS
from core.types import Message
from evals.reports.load import load_run
from evals.reports.text import run_markdown
from tests.agent.helpers import events
from tests.agent.models.harness_serve import harness_serve
from tests.agent.models.provider_double import anthropic_error, openai_error, provider, reply
from tests.agent.models.test_provider_retries import FAST, spec


def openai_overflow(message: str) -> dict:
    return {
        "error": {
            "message": message,
            "type": "invalid_request_error",
            "param": "messages",
            "code": "context_length_exceeded",
        }
    }


BODIES = {
    "openai": (
        "openai",
        openai_overflow(
            "This model's maximum context length is 128000 tokens. However, your messages resulted in 130532 "
            "tokens. Please reduce the length of the messages."
        ),
        130532,
        128000,
    ),
    "openai, configured limit": (
        "openai",
        openai_overflow(
            "Input tokens exceed the configured limit of 272000 tokens. Your messages resulted in 300412 tokens. "
            "Please reduce the length of the messages."
        ),
        300412,
        272000,
    ),
    "openai, code only": ("openai", openai_overflow("Your input is too long."), None, None),
    "anthropic": (
        "anthropic",
        anthropic_error("invalid_request_error", "prompt is too long: 208310 tokens > 200000 maximum"),
        208310,
        200000,
    ),
    "anthropic, with max_tokens": (
        "anthropic",
        anthropic_error(
            "invalid_request_error",
            "input length and `max_tokens` exceed context limit: 188240 + 21333 > 200000, decrease input length "
            "or `max_tokens` and try again",
        ),
        188240,
        200000,
    ),
}


@pytest.mark.parametrize("case", BODIES)
def test_each_providers_context_length_error_is_a_context_overflow(case):
    api, body, tokens, limit = BODIES[case]
    with provider([reply(400, body)]) as (_, url):
        with pytest.raises(ContextOverflowError, match="HTTP 400, the prompt is longer than") as err:
            load_model(spec(api, url)).complete([Message(role="user", text="hi")], [], ModelParams())
    assert (err.value.tokens, err.value.limit) == (tokens, limit)


@pytest.mark.parametrize("api", ["openai", "anthropic"])
def test_another_bad_request_is_no_context_overflow(api):
    body = (
        openai_error(400, "Invalid value for 'tool_choice'")
        if api == "openai"
        else anthropic_error("invalid_request_error", "max_tokens: Field required")
    )
    with provider([reply(400, body)]) as (_, url):
        with pytest.raises(PermanentModelError) as err:
            load_model(spec(api, url)).complete([], [], ModelParams())
    assert not isinstance(err.value, ContextOverflowError)


@pytest.mark.parametrize("case", ["openai", "anthropic"])
@pytest.mark.parametrize("on_overflow", ["stop", "compact"])
def test_a_context_overflow_nothing_can_shrink_ends_the_run_without_a_retry(tmp_path, case, on_overflow):
    """The task alone is what the provider refused: no recovery can make room, and the prompt is not resent."""
    api, body, _, _ = BODIES[case]
    policy = FAST.model_copy(update={"overflow": OverflowPolicy(on_overflow=on_overflow)})
    with provider([reply(400, body), reply(400, body)]) as (server, url):
        summary, run_dir = start(RunSpec(Task(prompt="finish"), spec(api, url), policy, tmp_path))
    assert len(server.requests) == 1
    assert summary.stop_reason == ("context_overflow" if on_overflow == "stop" else "context_exhausted")
    assert "longer than its context window" in summary.message and "compact" in summary.message
    (failed,) = [e for e in events(run_dir) if e["type"] == "model_failed"]
    assert not failed["transient"] and str(BODIES[case][2]) in failed["message"]
    tried = [
        (e["action"], e["source"], e["fold"], e["cuts"]) for e in events(run_dir) if e["type"] == "context_overflow"
    ]
    assert tried == (
        [] if on_overflow == "stop" else [("compact", "provider", None, []), ("truncate", "provider", None, [])]
    )


LONG = Task(prompt="Count the words. " + "word " * 1500)  # well over 512 tokens


@pytest.fixture(scope="module")
def small_server(model_weights):
    with harness_serve("--kv-cache-mb", "64", "--max-model-len", "512") as url:
        yield url


def test_harness_serve_lists_its_window_and_the_client_reads_it(small_server):
    (card,) = openai.OpenAI(base_url=small_server + "/v1", api_key="unused").models.list()
    assert card.model_extra == {"context_window": 512, "max_model_len": 512}
    model = load_model(f"openai-compatible:{small_server}/v1#smollm2")
    assert model.context_window(ModelParams()) == 512


def test_a_run_against_harness_serve_stops_before_sending_a_prompt_over_its_window(small_server, tmp_path):
    summary, run_dir = start(RunSpec(LONG, f"openai-compatible:{small_server}/v1#smollm2", FAST, tmp_path))
    assert summary.stop_reason == "context_exhausted" and "context window of 512 tokens" in summary.message
    assert not [e for e in events(run_dir) if e["type"] == "model_failed"]


@pytest.mark.parametrize("api", ["openai", "anthropic"])
def test_harness_serves_400_for_a_prompt_over_max_model_len_ends_the_run(small_server, tmp_path, api):
    """With the window overridden too large, the prompt is sent and the server's refusal is recognised."""
    policy = FAST.model_copy(update={"model": ModelParams(context_window=100000, max_tokens=16)})
    model = (
        f"openai-compatible:{small_server}/v1#smollm2"
        if api == "openai"
        else f"anthropic-compatible:{small_server}#smollm2"
    )
    summary, run_dir = start(RunSpec(LONG, model, policy, tmp_path))
    assert summary.stop_reason == "context_exhausted", summary.message
    assert "the context window holds 512" in summary.message
    (failed,) = [e for e in events(run_dir) if e["type"] == "model_failed"]
    assert not failed["transient"]


def test_the_servers_error_carries_the_tokens_and_the_limit(small_server):
    model = load_model(f"anthropic-compatible:{small_server}#smollm2")
    with pytest.raises(ContextOverflowError) as err:
        model.complete([Message(role="user", text=LONG.prompt)], [], ModelParams(max_tokens=16))
    assert err.value.limit == 512 and err.value.tokens is not None and err.value.tokens > 512


@pytest.mark.model
def test_the_in_process_engine_says_its_window_and_refuses_a_longer_prompt():
    from engine import Engine, EngineConfig

    model = LocalModel(engine=Engine(None, EngineConfig(max_model_len=256, kv_cache_bytes=64 << 20)))
    try:
        assert model.context_window(ModelParams()) == 256
        with pytest.raises(ContextOverflowError) as err:
            model.complete([Message(role="user", text=LONG.prompt)], [], ModelParams(max_tokens=16))
        assert err.value.limit == 256 and err.value.tokens is not None and err.value.tokens > 256
    finally:
        model.engine.shutdown()


# Small, since each of the run's steps reads a prompt of nearly the whole window on the CPU: any window
# less than the 20,000-line output overflows the same way.
WINDOW = 2048


@pytest.mark.model
def test_a_tool_output_that_overflows_harness_serve_is_recovered_with_the_local_preset(tmp_path):
    """The embedded model behind `harness serve --max-model-len 2048`, the `local` preset, and one output allowed
    the whole window (overflow.observation_share = 1): the next prompt cannot fit, the harness makes room, and
    the run goes on. Prompts are counted with the embedded tokenizer; where the server's chat template counts
    more, its refusal is recovered too."""
    local = PRESETS["local"]
    policy = local.model_copy(
        update={"stop": local.stop.model_copy(update={"max_steps": 3}), "overflow": OverflowPolicy(observation_share=1)}
    )
    task = Task(
        prompt="The file numbers.txt is long. Show its contents with the shell tool (cat numbers.txt), then show "
        "them again.",
        setup=["seq 1 20000 > numbers.txt"],
    )
    with harness_serve("--max-model-len", str(WINDOW)) as url:
        summary, run_dir = start(RunSpec(task, f"openai-compatible:{url}/v1#smollm2", policy, tmp_path))
    assert summary.stop_reason not in ("model_error", "harness_error", "context_exhausted"), summary.message
    found = [e for e in events(run_dir) if e["type"] == "context_overflow"]
    assert found and any(e["cuts"] for e in found)
    sent = [e for e in events(run_dir) if e["type"] == "model_replied"]
    assert len(sent) >= 2 and all(e["counted_tokens"] + 256 <= WINDOW for e in sent)  # the room for the reply kept
    assert all(e["reply"]["usage"]["prompt_tokens"] <= WINDOW for e in sent)  # and by the server's own count
    text = run_markdown(load_run(run_dir, load_prices()))
    assert "context overflows" in text and "cut from" in text
