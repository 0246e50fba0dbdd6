"""A hostile stdio MCP server against the harness: one row per hostility, as the model and the user would see it.

The server is tests/tools/mcp/servers/hostile.py, a real process on the MCP SDK.
Each row says how many times the hostility was tried, how many of those were
contained (nothing hidden, injected or oversized reached the model; the run
went on), what data was lost on the way, and whether the observation or notice
says clearly what happened. Calls go through the dispatcher, as a model's would.

Chat-template markers are also checked where they would do harm: in a result as
each provider's request carries it (the OpenAI and Anthropic message formats the
SDK clients send, and the local engine's prompt, rendered and tokenised, when the
engine's model file is here).
`rows()` is what benchmarks/bench_faults.py imports.

    .venv/bin/python benchmarks/faults_mcp.py [--flood-mib 50] [--many 2000]
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import re
import sys
import tempfile
import time
import unicodedata
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from agent.dispatch import Dispatcher, dispatch  # noqa: E402
from agent.journal.store import Journal, RunInfo  # noqa: E402
from agent.models.convert import to_anthropic, to_openai  # noqa: E402
from core.mcp_settings import MAX_TOOLS, McpServer  # noqa: E402
from core.policy import HarnessPolicy  # noqa: E402
from core.types import Message, Observation, ToolCall  # noqa: E402
from tools.base import Registry, Tool, ToolContext, openai_schema  # noqa: E402
from tools.builtin import standard_tools  # noqa: E402
from tools.mcp import with_mcp  # noqa: E402
from tools.mcp.adapter import SCHEMA_CHARS  # noqa: E402
from tools.mcp.lines import MESSAGE_CHARS  # noqa: E402
from tools.mcp.manager import McpStartError  # noqa: E402
from tools.mcp.render import RESULT_CHARS  # noqa: E402
from tools.mcp.text import DESCRIPTION_CHARS, SCHEMA_TEXT_CHARS  # noqa: E402

SERVER = ROOT / "tests" / "tools" / "mcp" / "servers" / "hostile.py"
HANG_TIMEOUT_S = 2.0
CALL_TIMEOUT_S = 120.0  # generous: a 50 MiB answer crosses a pipe and is parsed twice
_HIDDEN = {"Cc", "Cf", "Co", "Cs", "Cn"}
_MARKER = re.compile(
    r"<\|[^|<>\n]*\|>"
    r"|<\s*/?\s*(?:tool_call|tool_response|tools|think|start_of_turn|end_of_turn|s)\s*>"
    r"|\[\s*/?\s*(?:INST|TOOL_CALLS|TOOL_RESULTS|AVAILABLE_TOOLS|SYSTEM_PROMPT)\s*\]"
    r"|^[ \t]*(?:Human|Assistant)[ \t]*:",
    re.IGNORECASE | re.MULTILINE,
)
_FENCE = re.compile(r"mcp\W*untrusted", re.IGNORECASE)
OPENING = '<mcp-untrusted server="hostile">\n'
CLOSING = "\n</mcp-untrusted>"


@dataclass(frozen=True)
class Row:
    hostility: str
    tried: int
    contained: int
    data_lost: str
    message_clear: bool | None  # None: nothing to say (hidden text is dropped silently, by design)
    seconds: float | None = None  # how long the harness took to answer a hostile call


def hostile(*args: str, **settings: Any) -> McpServer:
    return McpServer(name="hostile", command=sys.executable, args=[str(SERVER), *args], approve="never", **settings)


@contextmanager
def caller(registry: Registry) -> Iterator[Callable[..., tuple[Observation, float]]]:
    """Calls through the dispatcher, journaled into a throw-away run folder: (observation, seconds)."""
    with tempfile.TemporaryDirectory() as root:
        info = RunInfo(
            run_id="faults_mcp",
            task={"id": "faults"},
            model="none",
            sandbox="none",
            policy={"name": "default"},
            started_at="2026-01-01T00:00:00Z",
        )
        journal = Journal.create(Path(root), info)

        def call(tool: str, within_s: float = CALL_TIMEOUT_S, **arguments: Any) -> tuple[Observation, float]:
            request = ToolCall(id="c1", name=tool, arguments=json.dumps(arguments))
            start = time.perf_counter()
            on = Dispatcher(
                tools=registry,
                ctx=ToolContext(sandbox=None, timeout_s=within_s),
                policy=HarnessPolicy(),
                journal=journal,
            )
            [obs] = dispatch(on, [request], 1).observations
            return obs, round(time.perf_counter() - start, 2)

        try:
            yield call
        finally:
            journal.close()


def harmful(text: str) -> list[str]:
    """What in a string of a tool definition, or in a result, could hide, inject or break the fence."""
    found = [f"U+{ord(c):04X}" for c in text if c not in "\n\t" and unicodedata.category(c) in _HIDDEN]
    folded = unicodedata.normalize("NFKC", text)
    return found + _MARKER.findall(folded) + _FENCE.findall(folded)


def fence_holds(text: str) -> bool:
    """One fence naming the server, closed once at the very end, and nothing harmful inside it."""
    _, opening, inside = text.partition(OPENING)
    return (
        bool(opening)
        and text.count("<mcp-untrusted") == 1
        and text.endswith(CLOSING)
        and text.count("</mcp-untrusted>") == 1
        and not harmful(inside.removesuffix(CLOSING))
    )


def strings(value: Any) -> Iterator[str]:
    """Every string of a JSON value, keys included."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield str(key)
            yield from strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from strings(item)


def fenced_text(tool: Tool) -> str:
    return tool.description.split(OPENING, 1)[1].removesuffix(CLOSING)


def definitions(registry: Registry) -> list[Row]:
    mcp = [tool for tool in registry if registry.server_of(tool.name) == "hostile"]
    weather = registry.get("hostile__weather")
    one_fence = weather.description.count("<mcp-untrusted") == 1 and weather.description.count("</mcp-untrusted>") == 1
    texts = [s for tool in mcp for s in (tool.name, tool.summary, fenced_text(tool), *strings(tool.schema()))]
    bomb = list(strings(registry.get("hostile__schema_bomb").schema()))
    said = "\n".join(registry.mcp.problems)
    builtin_names = ("shell", "submit")
    return [
        Row(
            "huge description (100 KB)",
            1,
            int(len(weather.description) < DESCRIPTION_CHARS + 300),
            f"all but its first {DESCRIPTION_CHARS:,} characters",
            "cut from" in weather.description,
        ),
        Row(
            "injected instructions and a closing fence",
            1,
            int(one_fence and not harmful(fenced_text(weather))),
            "none (fence names renamed)",
            'MCP server "hostile" (untrusted)' in weather.description,
        ),
        Row(
            "hidden, bidi, zero-width or chat-template text, any definition string",
            len(texts),
            sum(not harmful(t) for t in texts),
            "the hidden characters",
            None,
        ),
        Row(
            "hostile strings all over a schema (32 KB each)",
            len(bomb),
            sum(len(s) <= SCHEMA_TEXT_CHARS and not harmful(s) for s in bomb),
            f"all but {SCHEMA_TEXT_CHARS} characters of each",
            any("cut from" in s for s in bomb),
        ),
        Row(
            f"input schema over {SCHEMA_CHARS:,} characters",
            1,
            int(registry.get("hostile__too_big") is None),
            "the tool (left out)",
            "'too_big' is left out" in said,
        ),
        Row(
            "input schema nested 80 levels",
            1,
            int(registry.get("hostile__too_deep") is None),
            "the tool (left out)",
            "'too_deep' is left out" in said,
        ),
        Row(
            "names of built-in tools (shell, submit)",
            len(builtin_names),
            sum(registry.server_of(n) is None and registry.get(f"hostile__{n}") is not None for n in builtin_names),
            "none (they are hostile__shell, hostile__submit)",
            registry.get("hostile__shell").summary.startswith("(MCP hostile)"),
        ),
    ]


def calls(registry: Registry, flood_mib: int) -> tuple[list[Row], str]:
    """Rows for the calls, and the text of a result full of chat-template markers."""
    with caller(registry) as call:
        hang, hang_s = call("hostile__hang", within_s=HANG_TIMEOUT_S)
        after, _ = call("hostile__shell", command="x")
        flood, flood_s = call("hostile__flood", mib=flood_mib)
        over_mib = MESSAGE_CHARS // 2**20 + 6
        over, over_s = call("hostile__flood", mib=over_mib)
        tokens, _ = call("hostile__control_tokens")
    cut = f"cut from {flood_mib * 1024 * 1024:,} characters"
    return [
        Row(
            "a tool that never answers",
            1,
            int(hang.status == "timeout" and after.status == "ok"),
            "the call's outcome (unknown)",
            "may still be running" in hang.text,
            hang_s,
        ),
        Row(
            f"a {flood_mib} MiB result",
            1,
            int(len(flood.text) <= RESULT_CHARS),
            f"all but its first {RESULT_CHARS:,} characters" if cut in flood.text else f"all of it ({flood.status})",
            cut in flood.text or "may still be running" in flood.text,
            flood_s,
        ),
        Row(
            f"a {over_mib} MiB result, over the {MESSAGE_CHARS // 2**20} MiB a message may have",
            1,
            int(over.status == "error" and len(over.text) < 1000),
            "all of it (the observation says so)",
            "so it was dropped; the call itself ran" in over.text,
            over_s,
        ),
    ], tokens.text


def engine_markers(registry: Registry, result_text: str) -> list[Row]:
    """Whether server text becomes special tokens in the local engine's prompt, in definitions and in a result.

    Each prompt is compared with the same prompt where every `<`, `|` and `>` of the server's text is an `x`.
    """
    try:
        from engine.tokenizer import Tokenizer
        from engine.weights import default_model_path, load_checkpoint

        tokenizer = Tokenizer.from_checkpoint(load_checkpoint(default_model_path()))
    except Exception as e:  # the engine or its model file is absent here
        return [Row(f"chat-template markers as engine tokens: not measured ({type(e).__name__})", 0, 0, "", None)]
    specials = set(tokenizer.tok.get_added_tokens_decoder())

    def plain(text: str) -> str:
        return re.sub(r"[<|>]", "x", text)

    def count(tools: list[Tool], result: str) -> int:
        called = {"id": "c1", "type": "function", "function": {"name": "hostile__control_tokens", "arguments": "{}"}}
        messages = [
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": "", "tool_calls": [called]},
            {"role": "tool", "tool_call_id": "c1", "content": result},
        ]
        ids = tokenizer.encode_chat(messages, [openai_schema(t) for t in tools])  # as the engine encodes a request
        return sum(i in specials for i in ids)

    defined = [registry.get("hostile__control_tokens"), registry.get("hostile__schema_bomb")]
    flat = [
        replace(t, description=plain(t.description), input_schema=json.loads(plain(json.dumps(t.schema()))))
        for t in defined
    ]
    return [
        Row(
            "chat-template markers in definitions, as local engine tokens",
            1,
            int(count(defined, plain(result_text)) == count(flat, plain(result_text))),
            "none",
            None,
        ),
        Row(
            "chat-template markers in a result, as local engine tokens",
            1,
            int(count(flat, result_text) == count(flat, plain(result_text))),
            "none",
            None,
        ),
    ]


def results(registry: Registry) -> list[Row]:
    """A result that closes the fence and carries every known template's markers: as the observation, and in
    each provider's request (the OpenAI and Anthropic message formats the SDK clients send, and the local
    engine's prompt, the embedded model's chat template, where the engine is here)."""
    with caller(registry) as call:
        injected = [call("hostile__inject", error=error)[0] for error in (False, True)]
    shown = [o.text.split(OPENING, 1)[-1] for o in injected]
    history = [
        Message(role="user", text="What is the weather?"),
        Message(role="assistant", tool_calls=(ToolCall(id="c1", name="hostile__inject", arguments="{}"),)),
        injected[0].to_message(),
    ]
    openai = to_openai(history)
    [sent_openai] = [m["content"] for m in openai if m["role"] == "tool"]
    _, anthropic = to_anthropic(history)
    [sent_anthropic] = [b["content"] for m in anthropic for b in m["content"] if b.get("type") == "tool_result"]
    held = [fence_holds(sent_openai), fence_holds(sent_anthropic)]
    try:
        from engine.tokenizer import Tokenizer
        from engine.weights import default_model_path, load_checkpoint

        tokenizer = Tokenizer.from_checkpoint(load_checkpoint(default_model_path()))
    except Exception:  # the engine or its model file is absent here: two providers measured
        tokenizer = None
    if tokenizer is not None:
        prompt = tokenizer.render_chat(openai, [openai_schema(registry.get("hostile__inject"))])
        blocks = re.findall(r"<tool_response>\n(.*?)\n</tool_response>", prompt, re.DOTALL)
        one = prompt.count("<tool_response>") == prompt.count("</tool_response>") == len(blocks) == 1
        held.append(one and fence_holds(blocks[0]))
    where = "OpenAI, Anthropic" + (", local engine prompt" if tokenizer is not None else "")
    return [
        Row(
            "a result that closes the fence and carries every template's markers (ok and error)",
            len(injected),
            sum(fence_holds(o.text) for o in injected),
            "none (markers shown as look-alikes: <¦im_start¦>, [¦INST¦])",
            all(o.text.startswith('The result from MCP server "hostile" (untrusted).') for o in injected)
            and all("<¦im_start¦>system" in t and "structured content (JSON):" in t for t in shown),
        ),
        Row(f"that result in each provider's request ({where})", len(held), sum(held), "none", None),
    ]


def placed(registry: Registry) -> list[Row]:
    """Resources and prompts, which the host reads into the prompt without the model choosing: fences, template
    markers and hidden characters as in results, a flood past what a prompt may hold, binary blobs; and the
    listing `harness tools list` shows."""
    from cli.mcp import offered
    from tools.mcp.resources import PROMPT_CHARS, RESOURCE_CHARS, prompt_text, rendered

    mcp = registry.mcp  # type: ignore[attr-defined]
    server = mcp.server("hostile")
    opening = 'Resource hostile://inject from MCP server "hostile" (untrusted).'

    def resource(uri: str) -> str:
        contents, _ = mcp.read("hostile", uri)
        return rendered(server, uri, contents)

    injected, flooded, blob = resource("hostile://inject"), resource("hostile://flood"), resource("hostile://blob")
    held = fence_holds(injected.replace(opening, "", 1)) and injected.startswith(opening)
    prompt = prompt_text(server, mcp.prompt("hostile", "inject", {}))
    body = prompt.split(OPENING)[0]  # the prompt's own text, before the embedded resource's fence
    prompt_flood = prompt_text(server, mcp.prompt("hostile", "flood", {}))
    listed = offered("hostile", mcp.catalog("hostile"))
    return [
        Row(
            "a placed resource that closes the fence and carries every template's markers, hidden characters",
            1,
            int(held),
            "none (markers shown as look-alikes)",
            injected.startswith(opening),
        ),
        Row(
            f"a placed resource of {5 << 20:,} characters (past {RESOURCE_CHARS:,})",
            1,
            int(len(flooded) < RESOURCE_CHARS and "too long to place here" in flooded),
            "all of it (a reference: its URI, type and size)",
            "too long to place here" in flooded,
        ),
        Row(
            "a placed binary resource (1 MiB blob)",
            1,
            int("binary, not shown" in blob and len(blob) < 2_000),
            "all of it (a reference: its URI, type and size)",
            "1,048,576 bytes" in blob,
        ),
        Row(
            "a prompt made the task: markers and hidden characters in its text, an embedded resource, an image",
            3,
            int(not harmful(body))
            + int(prompt.count(OPENING) == 1 and "<¦im_start¦>" in prompt)
            + int("[image: image/png, 1,048,576 bytes, not shown]" in prompt),
            "none (markers shown as look-alikes; the image as a reference)",
            None,
        ),
        Row(
            f"a prompt of about 2 MB (past {PROMPT_CHARS:,} characters)",
            1,
            int(len(prompt_flood) <= PROMPT_CHARS + 100 and not harmful(prompt_flood)),
            f"all past {PROMPT_CHARS:,} characters",
            "[cut from" in prompt_flood,
        ),
        Row(
            "resource and prompt names and descriptions in `harness tools list`",
            len(listed),
            sum(not harmful(r["name"] + r["summary"]) and len(r["summary"]) <= 120 for r in listed),
            "all past one line of 120 characters",
            None,
        ),
    ]


def picked(registry: Registry) -> Row:
    """The read_resource tool (the policy's mcp_read_resource): the model lists the server's resources and reads
    the injected, flooding and binary ones itself, through the dispatcher as any call."""
    from tools.mcp.resource_tool import read_resource_tool

    registry.add(read_resource_tool(registry.mcp))  # type: ignore[attr-defined]
    with caller(registry) as call:
        listed, injected, flooded, blob = (
            call("read_resource", server="hostile", **({"uri": uri} if uri else {}))[0]
            for uri in (None, "hostile://inject", "hostile://flood", "hostile://blob")
        )
    return Row(
        "read_resource, the model's pick: the listing, a resource that closes the fence with every template's "
        "markers, one of 5 MiB, a 1 MiB blob",
        4,
        int(listed.status == "ok" and fence_holds(listed.text))
        + int(injected.status == "ok" and fence_holds(injected.text))
        + int("too long to place here" in flooded.text and len(flooded.text) < 2_000)
        + int("binary, not shown" in blob.text and len(blob.text) < 2_000),
        "all of the flood and the blob (references: URI, type and size)",
        "1,048,576 bytes" in blob.text and "too long to place here" in flooded.text,
    )


def crash() -> Row:
    with with_mcp([hostile()], Registry()) as registry, caller(registry) as call:
        crashed, seconds = call("hostile__crash")
        after, _ = call("hostile__shell", command="x")
    clear = "crashed" in crashed.text and "may or may not have taken effect" in crashed.text
    return Row(
        "a tool that kills its server mid-call",
        1,
        int(crashed.status == "error" and after.status == "ok"),
        "the call's outcome (unknown)",
        clear,
        seconds,
    )


def unparseable() -> Row:
    start = time.perf_counter()
    try:
        # 10 s: on a loaded machine the server takes over 3 s to build and send its 900 KB message
        with with_mcp([hostile("--nest", "100", connect_timeout_s=10)], Registry()):
            said = ""
    except McpStartError as e:
        said = str(e)
    return Row(
        "a tool list nested deeper than the JSON parser goes",
        1,
        int(bool(said)),
        "the server (it does not start)",
        "it sent a message that cannot be read" in said,
        round(time.perf_counter() - start, 2),
    )


def many_tools(many: int) -> Row:
    with with_mcp([hostile("--many", str(many))], standard_tools()) as registry:
        offered = [n for n in registry.names() if registry.server_of(n)]
        said = any(f"more than the policy's mcp_max_tools of {MAX_TOOLS}" in p for p in registry.mcp.problems)
        chars = sum(len(json.dumps(openai_schema(registry.get(n)))) for n in offered)
    return Row(
        f"{many:,} tools",
        1,
        int(len(offered) <= MAX_TOOLS),
        f"all tools past the first {len(offered)} (left out); those cost {chars:,} characters a request",
        said,
    )


def rows(flood_mib: int = 50, many: int = 2000) -> list[Row]:
    """Every hostility, each against a real hostile server process; bounded by the timeouts above."""
    with with_mcp([hostile()], standard_tools()) as registry:
        out = definitions(registry)
        called, result_text = calls(registry, flood_mib)
        out += called + results(registry) + engine_markers(registry, result_text) + placed(registry)
        out.append(picked(registry))
    return [*out, crash(), unparseable(), many_tools(many)]


def table(rows: list[Row]) -> str:
    head = ("hostility", "tried", "contained", "data lost", "message clear", "s")
    body = [
        (
            r.hostility,
            f"{r.tried:,}",
            f"{r.contained:,}",
            r.data_lost,
            {True: "yes", False: "NO", None: "-"}[r.message_clear],
            "-" if r.seconds is None else f"{r.seconds:g}",
        )
        for r in rows
    ]
    widths = [max(len(line[i]) for line in [head, *body]) for i in range(len(head))]
    lines = [" | ".join(cell.ljust(w) for cell, w in zip(line, widths, strict=True)) for line in [head, *body]]
    return "\n".join([lines[0], "-+-".join("-" * w for w in widths), *lines[1:]])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--flood-mib", type=int, default=50)
    ap.add_argument("--many", type=int, default=2000)
    args = ap.parse_args()
    logging.getLogger("harness.mcp").setLevel(logging.ERROR)  # the notices are checked in the table instead
    logging.getLogger("mcp.client.stdio").setLevel(logging.CRITICAL)  # its traceback of the unparseable message
    start = time.perf_counter()
    print(table(rows(args.flood_mib, args.many)))
    print(f"{time.perf_counter() - start:.0f} s in all, load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")


if __name__ == "__main__":
    main()
