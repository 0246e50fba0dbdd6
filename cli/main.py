"""The `harness` command line."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

import typer
from rich.table import Table
from rich.text import Text

from agent.mcp_context import task_vars
from agent.memory_store import MemorySource
from agent.run.stopping import FAILED
from agent.run.task import Task, load_task
from agent.session import SANDBOXES, RunSpec, SandboxSpec, policy_for, start
from cli import mcp as mcp_cli
from cli.ab import ab_command
from cli.checkpoint import approve_command, replay_command, resume_command, say_how_to_approve
from cli.chess import app as chess_app
from cli.export_cmd import export_command
from cli.fork import fork_command
from cli.import_cmd import import_command
from cli.localize import localize_command
from cli.memory_options import MEMORY, MEMORY_KEY, memory_dir
from cli.otel_options import OTEL_ENDPOINT, use_otel
from cli.output import console, exits_on_error, print_json, stops_on_signal, text
from cli.policy_options import POLICY
from cli.progress import following_run, summary_table
from cli.report import report_command
from cli.rerender import rerender_command
from cli.sandbox import app as sandbox_app
from cli.study import study_command
from cli.swe import swe_app
from cli.swe_grade import swe_grade_command
from cli.tasks import tasks_app
from cli.view import view_command
from core.errors import HarnessError
from core.knobs import knobs
from core.presets import PRESET_SUMMARIES, PRESETS, load_policy

app = typer.Typer(
    help="Run LLM agents against real work, and measure the harness itself.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


@app.command("run")
@exits_on_error
@stops_on_signal
def run_command(
    task: str = typer.Option(
        None, help="The task: its text, or a .yaml/.json/.txt/.md task file (or build it with --mcp-prompt)."
    ),
    model: str = typer.Option(..., help="Model string, e.g. scripted:FILE."),
    sandbox: str = typer.Option("local", help=f"Where tools run: {', '.join(SANDBOXES)}."),
    policy: str = POLICY,
    out: Path = typer.Option(
        Path("runs"), help="Parent folder: the new run directory is created inside it, and its path printed."
    ),
    mcp: mcp_cli.McpCommands = None,
    mcp_url: mcp_cli.McpUrls = None,
    config: mcp_cli.McpConfigs = None,
    mcp_resource: mcp_cli.McpResources = None,
    mcp_prompt: str = typer.Option(
        None, help="SERVER:NAME: build the task from this MCP server's prompt (its arguments: --arg)."
    ),
    arg: list[str] = typer.Option(None, "--arg", help="KEY=VALUE: an argument of --mcp-prompt; repeat for more."),
    prices: Path = typer.Option(
        None,
        help="A price table (TOML) instead of the one shipped with the harness: each call is priced from it "
        "(and stop.max_cost_usd counts in it).",
    ),
    memory: str = MEMORY,
    memory_key: str = MEMORY_KEY,
    otel_endpoint: str = OTEL_ENDPOINT,
) -> None:
    """Run one task with one model and print a summary. The run directory holds the full record."""
    use_otel(otel_endpoint)
    if task is None and mcp_prompt is None:
        raise HarnessError("Give the task: --task TEXT_OR_FILE, or --mcp-prompt SERVER:NAME to build it from a prompt.")
    if arg and mcp_prompt is None:
        raise HarnessError("--arg fills the arguments of --mcp-prompt; give --mcp-prompt SERVER:NAME as well.")
    the_task = load_task(task) if task is not None else Task(prompt="(built from an MCP prompt)")
    the_policy = mcp_cli.with_servers(policy_for(policy, model), mcp, mcp_url, config, mcp_resource)
    prompt = (mcp_prompt, task_vars(arg or [])) if mcp_prompt is not None else None
    kept = memory_dir(memory, memory_key)
    with following_run(console) as state:
        summary, run_dir = start(
            RunSpec(
                the_task,
                model,
                the_policy,
                out,
                SandboxSpec.parse(sandbox),
                listeners=(state,),
                prices=prices,
                prompt=prompt,
                memory=MemorySource(kept=kept) if kept is not None else None,
            )
        )
    console.print(summary_table(summary))
    console.print(text(f"run directory: {run_dir}"), soft_wrap=True)
    say_how_to_approve(run_dir)
    if summary.stop_reason in FAILED:
        raise typer.Exit(1)


@app.command("policies")
@exits_on_error
def policies_command(
    name: str = typer.Argument(None, help="Show every knob of this preset (or policy file)."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON instead of a table."),
) -> None:
    """List the policy presets, or show every knob of one policy: its value and what it does."""
    if not name:
        if as_json:
            print_json([{"preset": p, "summary": PRESET_SUMMARIES[p]} for p in PRESETS])
            return
        table = Table("preset", "what it does")
        for preset in PRESETS:
            table.add_row(preset, PRESET_SUMMARIES[preset])
        console.print(table)
        return
    rows = knobs(load_policy(name))
    if as_json:
        print_json([asdict(k) for k in rows])
        return
    table = Table("knob", "value", "what it does", title=f"policy {name}")
    for k in rows:
        table.add_row(Text(k.name), Text(json.dumps(k.value)), Text(k.description))
    console.print(table)


@app.command("demo")
def demo_command(
    out: Path = typer.Option(
        Path("runs"), help="Parent folder: the new batch folder is created inside it, and its path printed."
    ),
    max_plies: int = typer.Option(30, min=1, help="The game is drawn after this many plies, to keep the demo short."),
    otel_endpoint: str = OTEL_ENDPOINT,
) -> None:
    """The main job: the embedded local model plays one game against the weakest Stockfish, through tools.

    Replies are grammar-constrained, so each is a valid tool call; the summary table and the
    run directory (events.jsonl, summary.json, artifacts/game.pgn) show what happened.
    """
    args = [
        "chess",
        "--games",
        "1",
        "--model",
        "local",
        "--opponent",
        "stockfish:skill=0",
        "--color",
        "white",
        "--policy",
        str(EXAMPLES / "chess_demo.toml"),
        "--max-plies",
        str(max_plies),
        "--no-resign",
        "--out",
        str(out),
        *(["--otel-endpoint", otel_endpoint] if otel_endpoint else []),
    ]
    code = typer.main.get_command(app).main(args, prog_name="harness", standalone_mode=False)
    if code:  # not standalone, click hands the chess command's exit code back instead of exiting with it
        raise typer.Exit(code)


@app.command("serve")
@exits_on_error
def serve_command(
    model: str = typer.Option(None, help="A GGUF file or model folder; default: the embedded SmolLM2-135M-Instruct."),
    host: str = typer.Option("127.0.0.1", help="Address to listen on."),
    port: int = typer.Option(8000, help="Port to listen on."),
    kv_cache_mb: int = typer.Option(1024, min=16, help="Memory for the KV cache (and prefix cache), in MiB."),
    max_model_len: int = typer.Option(None, help="Context length cap; default: the model's own."),
    name: str = typer.Option(None, help="Model name clients ask for; default: smollm2 (embedded) or the file's stem."),
    threads: int = typer.Option(None, help="Torch CPU threads; default: torch's choice."),
    weights: str = typer.Option(
        "float32",
        help="CPU weights: float32 (matches transformers) or int4 (4-bit, bfloat16 activations, faster decode).",
    ),
    device: str = typer.Option("cpu", help="cpu, or cuda / cuda:N: bf16 weights, Triton kernels, CUDA graphs."),
    max_num_seqs: int = typer.Option(32, min=1, help="Requests decoded at once; more wait in the queue."),
    max_batched_tokens: int = typer.Option(
        512, min=16, help="Tokens per engine step (prompts are prefilled in chunks of this); raise it on a GPU."
    ),
    replicas: int = typer.Option(
        1, min=1, help="Engines behind one URL, on Ray Serve (one GPU each with --device cuda); needs ray[serve]."
    ),
    router: str = typer.Option(
        None,
        help="With --replicas: round_robin, least_loaded, prefix (cached prompt blocks; the default) or session "
        "(X-Harness-Session).",
    ),
    imbalance: int = typer.Option(
        None,
        min=0,
        help="With --router prefix or session: requests in flight the preferred replica may have beyond the least "
        "busy one before a request goes to the least busy one instead; default 4.",
    ),
    request_timeout: float = typer.Option(
        15.0,
        min=0.1,
        help="Seconds a request's headers, and then its body, may take to arrive: a stalled connection is closed "
        "(headers) or answered 408 (body).",
    ),
) -> None:
    """Serve a local model over the OpenAI (/v1/chat/completions) and Anthropic (/v1/messages) APIs."""
    from engine import EngineConfig, EngineError
    from engine.server import serve
    from engine.server.forward import ROUTER_NAMES

    if replicas == 1 and (router is not None or imbalance is not None):
        raise HarnessError("--router and --imbalance choose between replicas: give --replicas 2 or more with them.")
    if router is not None and router not in ROUTER_NAMES:
        raise HarnessError(f"Unknown router {router!r}: choose from {', '.join(ROUTER_NAMES)}.")
    try:
        if weights not in ("float32", "int4"):
            raise HarnessError(f"--weights must be float32 or int4, got {weights!r}")
        config = EngineConfig(
            kv_cache_bytes=kv_cache_mb << 20,
            max_model_len=max_model_len,
            num_threads=threads,
            weights=weights,
            device=device,
            max_num_seqs=max_num_seqs,
            max_num_batched_tokens=max_batched_tokens,
        )
        if replicas > 1:
            _replicas_server()(replicas, router or "prefix", model, host, port, config, name, imbalance)
        else:
            serve(model, host, port, config, name, request_timeout_s=request_timeout)
    except (EngineError, HarnessError, ValueError) as e:
        raise HarnessError(f"Cannot serve {model or 'the embedded model'}: {e}") from None


def _replicas_server():
    try:
        from engine.server.replicas import serve_replicas
    except ImportError as e:
        raise HarnessError(
            f"--replicas runs on Ray Serve, which is not installed ({e}): "
            "pip install 'harness[serve-replicas]', or serve one engine without --replicas."
        ) from None
    return serve_replicas


app.add_typer(chess_app, name="chess")
app.add_typer(mcp_cli.app, name="tools")


app.add_typer(sandbox_app, name="sandbox")
app.command("rerender")(rerender_command)
app.command("import")(import_command)
app.add_typer(swe_app, name="swe")
app.command("swe-grade")(swe_grade_command)
app.add_typer(tasks_app, name="tasks")
app.command("report")(report_command)
app.command("localize")(localize_command)
app.command("ab")(ab_command)
app.command("study")(study_command)
app.command("resume")(resume_command)
app.command("replay")(replay_command)
app.command("fork")(fork_command)
app.command("approve")(approve_command)
app.command("export")(export_command)
app.command("view")(view_command)


def main() -> None:
    app()
