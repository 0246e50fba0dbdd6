"""`harness study`: live runs of tasks × policies × seeds against one engine, compared in pairs."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from agent.models import check_model
from cli.otel_options import OTEL_ENDPOINT, use_otel
from cli.output import console, exits_on_error, stops_on_signal, text
from cli.price_options import PRICE_TABLE
from core.errors import HarnessError
from evals.study import StudySpec, run_study
from evals.study.grid import bundled_policies, expand_tasks
from evals.study.report import cached_share_pair, num, seconds, share, task_interval

Tasks = Annotated[
    list[str],
    typer.Option(
        help="A task, repeated: `chess` (a game against --opponent), a bundled coding "
        "task (ledger, inventory; the loop-shaped rename, todos, slowest), `captures` (score the captures, play "
        "the best), `loops` (the loop-shaped suite: rename, todos, slowest, captures) or a task file."
    ),
]
Policies = Annotated[
    list[str],
    typer.Option(
        help="A policy, repeated (one sweeps the load alone; two or more are compared in pairs; for long runs "
        "local_long against local_compact or local_lean): a preset, "
        f"a bundled study policy ({', '.join(bundled_policies())}) or a policy file; NAME+memory: the same with the "
        "agent's memory tool on."
    ),
]


def _ints(raw: str, what: str) -> list[int]:
    try:
        return [int(x) for x in raw.split(",") if x.strip()]
    except ValueError:
        raise HarnessError(f"{what} must be whole numbers separated by commas, e.g. 1,4,16; got {raw!r}.") from None


@exits_on_error
@stops_on_signal
def study_command(
    task: Tasks,
    policy: Policies,
    model: str = typer.Option(
        "local",
        help="The engine: `local` (in-process, embedded model), local:PATH, or a server, "
        "e.g. openai-compatible:http://127.0.0.1:8000/v1#smollm2 (`harness serve`); any model string, where "
        "`{task}` stands for each run's task (scripted:evals/loops/solutions/{task}.yaml).",
    ),
    seeds: str = typer.Option("0,1", help="Seeds, comma-separated: each task runs once per seed under every policy."),
    concurrency: str = typer.Option("4", help="Runs in flight at once; several (1,4,16) sweep it."),
    kv_cache_mb: str = typer.Option(
        None,
        help="KV cache of the in-process engine (of each replica) in MiB; several (64,16) sweep it. It also bounds "
        "the model's context window. Default: the engine's own (1 GiB).",
    ),
    max_steps: int = typer.Option(None, min=1, help="Steps per run, over every policy's own cap."),
    max_tokens: int = typer.Option(
        None, min=1, help="Tokens per model reply, over every policy's own cap: shorter runs of a small model."
    ),
    sandbox: str = typer.Option("docker", help="Where the coding tasks' tools run: docker or local."),
    opponent: str = typer.Option("stockfish:skill=0", help="The chess opponent."),
    max_plies: int = typer.Option(8, min=1, help="Chess games are drawn after this many plies."),
    max_replies: int = typer.Option(10, min=1, help="Model replies per chess turn before the game is forfeited."),
    replicas: str = typer.Option(
        "1",
        help="Engines of the in-process model behind one URL, on Ray Serve (needs harness[serve-replicas]); "
        "several (1,2) sweep it. 1: the one engine in-process.",
    ),
    router: str = typer.Option(
        "prefix",
        help="With --replicas above 1, the request routers, comma-separated, one point each: "
        "round_robin, least_loaded, prefix, session.",
    ),
    router_imbalance: int = typer.Option(
        None,
        min=0,
        help="The prefix and session routers' fallback: requests in flight the preferred replica may have beyond "
        "the least busy one (default 4).",
    ),
    device: str = typer.Option("cpu", help="The in-process engines' device: cpu, or cuda (one GPU per replica)."),
    max_batched_tokens: int = typer.Option(
        None, min=16, help="The in-process engines' tokens per step (default 512); raise it on a GPU."
    ),
    prices: Path = PRICE_TABLE,
    out: Path = typer.Option(Path("runs"), help="Folder that receives the study folder."),
    otel_endpoint: str = OTEL_ENDPOINT,
) -> None:
    """Run a grid of live agent runs, one batch folder per policy, and write study.json and study.html."""
    tasks = expand_tasks(task)
    for name in tasks if "{task}" in model else [""]:  # before the study folder; each task's own model
        check_model(model.replace("{task}", name))
    use_otel(otel_endpoint)
    spec = StudySpec(
        model=model,
        tasks=tasks,
        policies=policy,
        seeds=_ints(seeds, "--seeds"),
        concurrency=_ints(concurrency, "--concurrency"),
        kv_cache_mb=[*_ints(kv_cache_mb, "--kv-cache-mb")] if kv_cache_mb else [None],
        max_steps=max_steps,
        max_tokens=max_tokens,
        sandbox=sandbox,
        opponent=opponent,
        max_plies=max_plies,
        max_replies=max_replies,
        replicas=_ints(replicas, "--replicas"),
        routers=[r.strip() for r in router.split(",") if r.strip()],
        router_imbalance=router_imbalance,
        device=device,
        max_batched_tokens=max_batched_tokens,
        prices=str(prices) if prices is not None else None,
    )
    study, folder = run_study(spec, out, on_run=lambda line: console.print(text(f"  {line}")))
    for point in study.points:
        cache = Table(f"policy ({point.label})", "runs", "prompt tok", "cached", "ideal", "evicted", "peak ctx")
        speed = Table(f"policy ({point.label})", "steps/s", "tok/s", "TTFT p50", "TTFT p95", "outcome")
        for f in point.policies:
            cache.add_row(
                text(f.policy),
                str(f.runs),
                num(f.prompt_tokens),
                share(f.cached_share),
                share(f.ideal_reuse),
                num(f.engine.evicted_blocks),
                num(f.peak_context),
            )
            speed.add_row(
                text(f.policy),
                num(f.steps_per_s, 3),
                num(f.tokens_per_s, 1),
                seconds(f.ttft_p50_s),
                seconds(f.ttft_p95_s),
                f"{f.finished}/{f.runs}",
            )
        console.print(cache, speed)
        for pair in point.pairs:
            console.print(text(f"{pair.b} vs {pair.a}: {pair.comparison['verdict']['text']}"))
            print_tasks(pair)
    if any(point.router for point in study.points):
        print_routers(study)
    for failure in study.failures:
        console.print(text(("not finished:", "yellow"), f" {failure}"))
    console.print(text(f"study folder: {folder} (study.json, study.html)"), soft_wrap=True)
    if study.failures:
        raise typer.Exit(1)


def print_tasks(pair) -> None:
    """A pair task by task: each metric's means, and B − A with its 95% interval over the task's seeds."""
    if not pair.tasks:
        return
    rows = Table("task", "metric", "pairs", f"A ({pair.a})", f"B ({pair.b})", "B − A", "95% interval")
    for t in pair.tasks:
        if t["mean_a"] is None:
            rows.add_row(text(t["task"]), t["label"], str(t["pairs"]), "unknown", "unknown", "—", "—")
            continue
        digits = 4 if max(abs(t["mean_a"]), abs(t["mean_b"])) < 1 else 0
        rows.add_row(
            text(t["task"]),
            t["label"],
            str(t["pairs"]),
            num(t["mean_a"], digits),
            num(t["mean_b"], digits),
            num(t["diff"], digits),
            task_interval(t),
        )
    console.print(rows)


def print_routers(study) -> None:
    """One row per replicas count and router for each policy; then each router pair's cached-share difference."""
    rows = Table(
        "replicas", "router", "in flight", "KV MiB", "policy", "cached", "TTFT p50", "TTFT p95", "tok/s", "imbalance"
    )
    for point in study.points:
        for f in point.policies:
            rows.add_row(
                str(point.replicas),
                point.router or "-",
                str(point.concurrency),
                str(point.kv_cache_mb or "default"),
                text(f.policy),
                share(f.cached_share),
                seconds(f.ttft_p50_s),
                seconds(f.ttft_p95_s),
                num(f.tokens_per_s, 1),
                num(f.load_imbalance, 2),
            )
    console.print(rows)
    for group in study.router_pairs:
        for pair in group.pairs:
            console.print(
                text(
                    f"{group.policy}, {group.replicas} replicas, {group.concurrency} in flight: {pair.b} vs {pair.a}: "
                    f"cached share {cached_share_pair(pair)}; {pair.comparison['verdict']['text']}"
                )
            )
