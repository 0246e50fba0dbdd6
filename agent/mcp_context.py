"""What the host puts in context from MCP servers, beside their tools: resources it places, prompts it builds
tasks from, and placed resources that change while the run goes on.

Resources are named by the policy (`mcp_resources`), the task (`resources`) or
the command line (`--mcp-resource`, which adds to the policy), read when the
run opens and placed in the opening user message before the task. One that
changes mid-run (its server notifies a subscription) is read again at the next
step and its new content appended as a `resource_updated` event: the prompt
before it stays a cached prefix, and the event records the tokens each later
prompt carries for it, which `harness report` shows as the update's cost.
A resumed run follows them again, and one whose content is no longer the last the
run journaled of it (its notice died with a stopped process) is taken as updated.
A played-back replay starts no server: it appends the recording's updates at
the steps the recording took them (`Session.updates`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from agent.run.task import Task
from core.errors import HarnessError
from core.events import Event, MessageAdded, ResourceUpdated
from core.types import Message
from tools.base import Registry

if TYPE_CHECKING:
    from agent.parts import Loop
    from tools.mcp.manager import McpTools

UPDATED = "Resource {uri} of MCP server {server}, placed at the start of this task, has changed. Its content now:\n"


def mcp_of(tools: Registry) -> McpTools | None:
    """The run's MCP connections, where its tools include MCP servers'."""
    return getattr(tools, "mcp", None)


def resources_without_servers(names: Sequence[str]) -> HarnessError:
    return HarnessError(
        f"Resources are named ({', '.join(names)}) but the run has no MCP servers; name their server with --mcp, "
        "--mcp-url or --config, or leave the resources out."
    )


def prompt_without_servers(name: str) -> HarnessError:
    return HarnessError(f"--mcp-prompt {name}: the run has no MCP servers; name one with --mcp or --mcp-url.")


def placed(tools: Registry, names: Sequence[str], task: Task) -> str:
    """The text of the resources `names` (SERVER:URI, templates filled from the task), each fenced as its
    server's words, in the order named; each followed where its server offers subscriptions."""
    return "\n\n".join(block for _, _, block in placed_blocks(tools, names, task))


def placed_blocks(tools: Registry, names: Sequence[str], task: Task) -> list[tuple[str, str, str]]:
    """placed()'s resources one by one: (server, uri, text)."""
    if not names:
        return []
    from tools.mcp.resources import filled, rendered, split_named

    mcp = mcp_of(tools)
    if mcp is None:
        raise resources_without_servers(names)
    variables = {"task_id": task.id, **task.vars}
    blocks = []
    for name in dict.fromkeys(names):
        try:
            server, template = split_named(name)
            uri = filled(template, variables)
        except ValueError as e:
            raise HarnessError(f"MCP resource {name}: {e}") from None
        contents, _ = mcp.read(server, uri, follow=True)
        blocks.append((mcp.server(server).name, uri, rendered(mcp.server(server), uri, contents)))
    return blocks


def placed_in(events: Sequence[Event], task: Task, names: Sequence[str]) -> str | None:
    """What a run placed from MCP resources before its task, as its opening user message holds it (None: it
    placed none). agent.loop.initial_messages puts it there, before the task and the repository map."""
    if not names:
        return None
    after = f"\n\n{task.prompt}" + (f"\n\n{task.repo_map}" if task.repo_map else "")
    opening = next((e.message.text for e in events if isinstance(e, MessageAdded) and e.message.role == "user"), "")
    return opening.removesuffix(after) if opening.endswith(after) else None


def follow_again(tools: Registry, names: Sequence[str], task: Task, events: Sequence[Event]) -> None:
    """Follow a resumed run's placed resources again (its opening is journaled), and take as updated, at its next
    step, each whose content is not the last the run journaled of it: it changed while no process followed it (a
    write's notice lost with the process that made it), and the uninterrupted run was told so."""
    blocks = placed_blocks(tools, names, task)
    mcp = mcp_of(tools)
    if mcp is None or not blocks:
        return
    last = dict(
        zip(((s, u) for s, u, _ in blocks), opening_blocks(placed_in(events, task, names), blocks), strict=True)
    )
    for e in events:
        if isinstance(e, ResourceUpdated):
            last[(e.server, e.uri)] = e.message.text.removeprefix(UPDATED.format(uri=e.uri, server=e.server))
    for server, uri, text in blocks:
        seen = last.get((server, uri))
        if seen is not None and seen != text:
            mcp.updated(server, uri)


def opening_blocks(opening: str | None, blocks: Sequence[tuple[str, str, str]]) -> list[str | None]:
    """Each resource's text as the opening placed it, found by where each begins (in the order placed); None where
    it cannot be told."""
    from tools.mcp.resources import heading

    if opening is None:
        return [None] * len(blocks)
    starts: list[int] = []
    for server, uri, _ in blocks:
        found = opening.find(heading(server, uri), starts[-1] + 1 if starts else 0)
        if found < 0:
            return [None] * len(blocks)
        starts.append(found)
    ends = [s - 2 for s in starts[1:]] + [len(opening)]  # the blocks are joined by a blank line
    return [opening[s:e] for s, e in zip(starts, ends, strict=False)]


def follow_resources(loop: Loop) -> None:
    """Append the new content of every placed resource that changed since the last step: from its server, or in a
    replay the recording's updates due by this step (each taken once, whichever of the replay's lives reaches it)."""
    recorded = loop.session.updates
    if recorded is not None:
        while recorded and recorded[0].step <= loop.state.step:
            update = recorded.popleft()
            append_update(loop, update.server, update.uri, update.message.text)
        return
    mcp = mcp_of(loop.dispatcher.tools)
    if mcp is None:
        return
    from tools.mcp.resources import rendered

    for server, uri in mcp.take_updates():
        try:
            contents, _ = mcp.read(server, uri)
            text = UPDATED.format(uri=uri, server=server) + rendered(mcp.server(server), uri, contents)
        except HarnessError as e:
            text = UPDATED.format(uri=uri, server=server) + f"(it could not be read again: {e})"
        append_update(loop, server, uri, text)


def append_update(loop: Loop, server: str, uri: str, text: str) -> None:
    """Journal a resource's new content as this step's update, then add it to the history."""
    message = Message(role="user", text=text)
    loop.session.journal.append(
        ResourceUpdated(
            step=loop.state.step,
            server=server,
            uri=uri,
            sha256=hashlib.sha256(text.encode()).hexdigest(),
            message=message,
            tokens=loop.renderer.tokens([message]),
        )
    )
    loop.state.history.append(message)


def prompt_task(tools: Registry, name: str, arguments: Mapping[str, str], task: Task) -> Task:
    """`task` with its prompt built from a server's prompt (SERVER:NAME filled with `arguments`)."""
    from tools.mcp.resources import prompt_text, split_named

    mcp = mcp_of(tools)
    if mcp is None:
        raise prompt_without_servers(name)
    try:
        server, prompt = split_named(name, "prompt")
    except ValueError as e:
        raise HarnessError(f"--mcp-prompt: {e}") from None
    text = prompt_text(mcp.server(server), mcp.prompt(server, prompt, arguments))
    if not text:
        raise HarnessError(f"Prompt {prompt!r} of MCP server {server} has no text to make a task of.")
    return task.model_copy(update={"prompt": text, "id": task.id if task.id != "task" else _plain(prompt)})


def _plain(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_" else "_" for c in name)[:40] or "task"


def task_vars(args: Sequence[str]) -> dict[str, Any]:
    """KEY=VALUE pairs as typed after --arg."""
    pairs = {}
    for arg in args:
        key, sep, value = arg.partition("=")
        if not sep or not key:
            raise HarnessError(f"--arg {arg!r}: write KEY=VALUE.")
        pairs[key] = value
    return pairs
