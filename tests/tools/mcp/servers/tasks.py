"""An MCP server that runs its slow tool as a task (the Tasks extension, io.modelcontextprotocol/tasks, 2026-07-28):
`python tasks.py [http PORT] --log FILE [--seconds S] [--ttl-ms N]`.

Built on the Python SDK's extension hooks: `tools/call` of `slow` is intercepted and, for a client that declared
the extension on the request, answered at once with a task handle (`resultType: "task"`) while the work goes on in
the background; `tasks/get`, `tasks/update` and `tasks/cancel` are the extension's own request handlers. A client
that did not declare it gets the work done synchronously. Each of these requests is appended to FILE (one JSON
line each: the tests count the calls the server saw). Tasks live in this process's memory: a stdio server that
its client's death ends takes them with it, an HTTP server keeps them for a client that comes back.
`wait_for_input` asks the person a question through the task (`input_required`, answered by `tasks/update`).
"""

import argparse
import asyncio
import json
import secrets
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from mcp import MCPError
from mcp.server import MCPServer
from mcp.server.extension import Extension, MethodBinding
from mcp_types import INVALID_PARAMS, CallToolRequestParams, RequestParams

TASKS = "io.modelcontextprotocol/tasks"

parser = argparse.ArgumentParser()
parser.add_argument("transport", nargs="?", default="stdio")
parser.add_argument("port", nargs="?", type=int, default=0)
parser.add_argument("--log", type=Path, required=True)
parser.add_argument("--ttl-ms", type=int, default=600_000)
opts = parser.parse_args()


def log(event: str, **fields: Any) -> None:
    with opts.log.open("a") as f:
        f.write(json.dumps({"event": event, **fields}) + "\n")


def now() -> str:
    return datetime.now(UTC).isoformat()


class TaskParams(RequestParams):
    task_id: str


class UpdateParams(TaskParams):
    input_responses: dict[str, Any] = {}


class Tasks(Extension):
    identifier = TASKS

    def __init__(self) -> None:
        self.tasks: dict[str, dict[str, Any]] = {}
        self.running: dict[str, asyncio.Task] = {}
        self.answers: dict[str, asyncio.Future] = {}

    def methods(self):
        return [
            MethodBinding("tasks/get", TaskParams, self.get),
            MethodBinding("tasks/update", UpdateParams, self.update),
            MethodBinding("tasks/cancel", TaskParams, self.cancel),
        ]

    async def intercept_tool_call(self, params: CallToolRequestParams, ctx, call_next):
        log("call", tool=params.name, arguments=params.arguments)
        declared = ctx.session.client_capabilities
        if params.name not in WORK or not (declared and declared.extensions and TASKS in declared.extensions):
            return await call_next(ctx)
        task_id = secrets.token_hex(8)
        task = {
            "taskId": task_id,
            "status": "working",
            "statusMessage": "started",
            "createdAt": now(),
            "lastUpdatedAt": now(),
            "ttlMs": opts.ttl_ms,
            "pollIntervalMs": 100,
        }
        self.tasks[task_id] = task
        self.running[task_id] = asyncio.get_running_loop().create_task(
            self.work(task, WORK[params.name], params.arguments or {})
        )
        log("task", tool=params.name, task_id=task_id)
        return {"resultType": "task", **task}

    async def work(self, task: dict[str, Any], fn, arguments: dict[str, Any]) -> None:
        def status(message: str, **fields: Any) -> None:
            task.update(statusMessage=message, lastUpdatedAt=now(), **fields)

        try:
            text = await fn(status, self.asker(task), **arguments)
            task.pop("inputRequests", None)
            result = {
                "content": [{"type": "text", "text": text}],
                "structuredContent": {"result": text},
                "isError": False,
            }
            status("done", status="completed", result=result)
        except asyncio.CancelledError:
            status("cancelled by the client", status="cancelled")

    def asker(self, task: dict[str, Any]):
        async def ask(key: str, message: str) -> dict[str, Any]:
            future = asyncio.get_running_loop().create_future()
            self.answers[f"{task['taskId']}/{key}"] = future
            schema = {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}
            request = {
                "method": "elicitation/create",
                "params": {"mode": "form", "message": message, "requestedSchema": schema},
            }
            task.update(status="input_required", inputRequests={key: request}, lastUpdatedAt=now())
            answer = await future
            task.pop("inputRequests", None)
            task.update(status="working", lastUpdatedAt=now())
            return answer

        return ask

    def find(self, task_id: str) -> dict[str, Any]:
        if task_id not in self.tasks:
            raise MCPError(code=INVALID_PARAMS, message=f"Failed to retrieve task: Task not found ({task_id})")
        return self.tasks[task_id]

    async def get(self, ctx, params: TaskParams):
        log("get", task_id=params.task_id)
        return dict(self.find(params.task_id))

    async def update(self, ctx, params: UpdateParams):
        log("update", task_id=params.task_id, responses=params.input_responses)
        self.find(params.task_id)
        for key, response in params.input_responses.items():
            future = self.answers.pop(f"{params.task_id}/{key}", None)
            if future is not None and not future.done():
                future.set_result(response)
        return {}

    async def cancel(self, ctx, params: TaskParams):
        log("cancel", task_id=params.task_id)
        self.find(params.task_id)
        running = self.running.get(params.task_id)
        if running is not None:
            running.cancel()
        return {}


async def slow(status, ask, seconds: float = 30.0, label: str = "job") -> str:
    """Counts the seconds of a long job, saying how far it is."""
    steps = max(1, int(seconds * 4))
    for n in range(steps):
        status(f"{label}: {n * 100 // steps}% done")
        await asyncio.sleep(seconds / steps)
    return f"{label} finished after {seconds:g} s"


async def wait_for_input(status, ask) -> str:
    """Asks the person for a word halfway through."""
    await asyncio.sleep(0.2)
    answer = await ask("word", "Which word should the job use?")
    if answer.get("action") != "accept":
        return f"no word given ({answer.get('action')})"
    return f"the job used {answer['content']['answer']!r}"


WORK = {"slow": slow, "wait_for_input": wait_for_input}
server = MCPServer("tasks", log_level="WARNING", extensions=[Tasks()])


@server.tool(name="slow")
def slow_sync(seconds: float = 30.0, label: str = "job") -> str:
    """A long job, counted in seconds; run as a task for a client that takes tasks."""
    return f"{label} ran without a task"


@server.tool(name="wait_for_input")
def wait_for_input_sync() -> str:
    """A job that asks for a word halfway through; run as a task for a client that takes tasks."""
    return "ran without a task, so it could not ask"


if __name__ == "__main__":
    if opts.transport == "http":
        server.run("streamable-http", host="127.0.0.1", port=opts.port, streamable_http_path="/mcp")
    else:
        server.run()
