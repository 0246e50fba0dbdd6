"""GET /v1/models and /v1/models/{id}, in the shape of the client's API: the Anthropic SDK (which
sends `anthropic-version` on every request) reads Anthropic's model objects, everyone else OpenAI's."""

from datetime import UTC, datetime

from engine.engine import Engine
from engine.server import anthropic_schemas as an
from engine.server import openai_schemas as oa

ANTHROPIC_VERSION = "anthropic-version"


def openai_card(engine: Engine, name: str, started: int) -> oa.ModelCard:
    return oa.ModelCard(
        id=name, created=started, context_window=engine.context_window, max_model_len=engine.max_model_len
    )


def anthropic_card(engine: Engine, name: str, started: int) -> an.ModelInfo:
    return an.ModelInfo(
        id=name,
        display_name=name,
        created_at=datetime.fromtimestamp(started, UTC).isoformat().replace("+00:00", "Z"),
        # the prompt must leave room for one token of reply
        max_input_tokens=engine.context_window - 1,
    )


def model_list(engine: Engine, names: list[str], started: int, anthropic: bool) -> dict:
    if anthropic:
        cards = [anthropic_card(engine, name, started) for name in names]
        return an.ModelPage(
            data=cards, first_id=names[0] if names else None, last_id=names[-1] if names else None
        ).model_dump()
    return oa.ModelList(data=[openai_card(engine, name, started) for name in names]).model_dump()


def model_card(engine: Engine, name: str, started: int, anthropic: bool) -> dict:
    return (anthropic_card if anthropic else openai_card)(engine, name, started).model_dump()
