"""A scripted model file of any content is a model whose every reply can be given and journaled, or one
HarnessError saying what is wrong, never a traceback."""

from __future__ import annotations

from hypothesis import given, settings

from agent.models.scripted import ScriptedCall, ScriptedModel, ScriptedReply
from core.events import ModelReplied
from core.policy import ModelParams
from core.types import Message, Usage
from tests.core.data_texts import read_or_refused, yaml_texts

WORDS = sorted(
    {"replies", "calls", "code", *ScriptedReply.model_fields, *ScriptedCall.model_fields, *Usage.model_fields}
    | {"stop", "length", "submit", "read_file", "answer"}
)


@settings(max_examples=200, deadline=None)
@given(yaml_texts(WORDS))
def test_any_scripted_model_file_replies_or_is_a_clear_error(text):
    model = read_or_refused(text, "script.yaml", ScriptedModel.from_file)
    for _ in model.replies if model is not None else []:
        reply = model.complete([Message(role="user", text="go")], [], ModelParams())
        ModelReplied(step=1, reply=reply, prompt_messages=1, prompt_chars=2).model_dump_json()  # as journaled
