"""End the run with an answer (text, or a pointer to an artifact such as a patch)."""

from __future__ import annotations

from pydantic import BaseModel, Field

from tools.base import Effect, Tool, ToolContext, ToolResult


class SubmitArgs(BaseModel):
    answer: str = Field(description="Your final answer or a short description of what you did.")


def submit(args: SubmitArgs, ctx: ToolContext) -> ToolResult:
    return ToolResult("Submitted. The run ends here.", submission=args.answer)


def not_done(args: SubmitArgs, ctx: ToolContext) -> None:
    """A submission's only effect is the one the journal records with its result: a call cut short before that
    took none, so a resume runs it again (and the run ends) rather than telling the model its outcome is unknown."""
    return None


SUBMIT = Tool(
    name="submit",
    summary="Finish the task and hand in your answer.",
    description="Call this once the task is done. The run ends after this call; give the answer or a summary of the work.",
    args=SubmitArgs,
    effect=Effect.WRITE,
    run=submit,
    already_done=not_done,
)
