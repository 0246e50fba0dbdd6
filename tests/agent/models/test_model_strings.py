"""Model strings choose and configure a client; mistakes are HarnessErrors that say what to write."""

from __future__ import annotations

from contextlib import closing
from pathlib import Path

import pytest

from agent.models import load_model
from agent.models.anthropic import AnthropicModel
from agent.models.openai import OpenAIModel
from agent.models.spec import model_name
from core.errors import HarnessError


def test_provider_strings(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "ant-test")
    gpt = load_model("openai:gpt-5")
    assert isinstance(gpt, OpenAIModel) and gpt.model == "gpt-5" and gpt.name == "openai:gpt-5"
    assert gpt.client.max_retries == 0 and gpt.client.api_key == "sk-test"
    claude = load_model("anthropic:claude-sonnet-4-5")
    assert isinstance(claude, AnthropicModel) and claude.model == "claude-sonnet-4-5" and claude.client.max_retries == 0
    local = load_model("openai-compatible:http://127.0.0.1:8000/v1#smollm2")
    assert local.model == "smollm2" and str(local.client.base_url).rstrip("/") == "http://127.0.0.1:8000/v1"


def test_reasoning_models_get_no_temperature_and_use_max_completion_tokens(monkeypatch):
    from core.policy import ModelParams

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    kwargs = load_model("openai:gpt-5").request([], [], ModelParams())
    assert "temperature" not in kwargs and kwargs["max_completion_tokens"] == 1024
    kwargs = load_model("openai:gpt-4.1").request([], [], ModelParams())
    assert kwargs["temperature"] == 0 and "max_tokens" not in kwargs


@pytest.mark.parametrize(
    "spec, env", [("openai:gpt-5", "OPENAI_API_KEY"), ("anthropic:claude-sonnet-4-5", "ANTHROPIC_API_KEY")]
)
def test_a_missing_key_is_a_clear_error(monkeypatch, spec, env):
    monkeypatch.delenv(env, raising=False)
    with pytest.raises(HarnessError, match=f"set {env}"):
        load_model(spec)


def test_compatible_servers_need_no_key(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    assert load_model("openai-compatible:http://h:1/v1#m").model == "m"
    assert load_model("anthropic-compatible:http://h:1#m").model == "m"


@pytest.mark.parametrize(
    "spec", ["openai-compatible:http://h:1/v1", "openai-compatible:h:1/v1#m", "openai:", "gemini:pro"]
)
def test_malformed_strings_say_what_to_write(spec):
    with pytest.raises(HarnessError, match="look like"):
        load_model(spec)


@pytest.mark.model
def test_local_int4_loads_the_engine_with_4_bit_weights():
    model = load_model("local-int4")
    try:
        assert model.name == "local-int4" and model.engine.config.weights == "int4"
    finally:
        model.close()


@pytest.mark.parametrize(
    "spec",
    [
        "openai:gpt-5",
        "anthropic:claude-sonnet-4-5",
        "openai-compatible:http://127.0.0.1:8000/v1#smollm2",
        "anthropic-compatible:http://127.0.0.1:8000#smollm2",
        "scripted:./examples/demo_script.yaml",
    ],
)
def test_a_models_name_is_known_without_making_its_client(monkeypatch, spec):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "ant-test")
    monkeypatch.chdir(Path(__file__).resolve().parents[3])
    with closing(load_model(spec)) as client:
        assert model_name(spec) == client.name


def test_closing_a_provider_client_closes_its_http_connections(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "ant-test")
    for spec in ("openai:gpt-5", "anthropic:claude-sonnet-4-5"):
        client = load_model(spec)
        assert not client.client.is_closed()  # type: ignore[attr-defined]
        client.close()
        assert client.client.is_closed()  # type: ignore[attr-defined]
