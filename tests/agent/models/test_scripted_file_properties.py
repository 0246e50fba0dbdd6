"""A scripted model file of any content is a model whose every reply can be given and journaled, or one
HarnessError saying what is wrong, never a traceback."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import given, settings

from agent.models.scripted import ScriptedCall, ScriptedModel, ScriptedReply
from core.errors import HarnessError
from core.events import ModelReplied
from core.policy import ModelParams
from core.types import Message, Usage
from tests.core.data_texts import yaml_texts

WORDS = sorted(
    {"replies", "calls", "code", *ScriptedReply.model_fields, *ScriptedCall.model_fields, *Usage.model_fields}
    | {"stop", "length", "submit", "read_file", "answer"}
)


@settings(max_examples=200, deadline=None)
@given(yaml_texts(WORDS))
def test_any_scripted_model_file_replies_or_is_a_clear_error(text):
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "script.yaml"
        path.write_text(text)
        try:
            model = ScriptedModel.from_file(path)
        except HarnessError as e:
            assert str(e) and "Traceback" not in str(e)
            return
    for _ in model.replies:
        reply = model.complete([Message(role="user", text="go")], [], ModelParams())
        ModelReplied(step=1, reply=reply, prompt_messages=1, prompt_chars=2).model_dump_json()  # as journaled
