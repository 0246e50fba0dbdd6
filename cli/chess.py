"""`harness chess`: play a batch of games against an engine and print the aggregate table;
`harness chess calibrate`: place the opponent ladder on one Elo scale."""

from __future__ import annotations

import shlex
import sys
import time
from dataclasses import replace
from pathlib import Path

import typer
from rich.console import Console
from rich.progress import Progress
from rich.table import Table

from agent.models import check_model
from agent.models.spec import is_local
from agent.session import SandboxSpec, policy_for
from cli.executor_options import (
    EXECUTOR,
    MAX_COST_USD,
    PRICES,
    RAY_ADDRESS,
    RETRIES,
    TASK_CPUS,
    TASK_MEMORY_MB,
    executor_options,
)
from cli.otel_options import OTEL_ENDPOINT, use_otel
from cli.output import console, exits_on_error, print_json, stderr, stops_on_signal, text
from cli.policy_options import POLICY
from cli.progress import RunState, heartbeat, progress_bar
from core.errors import HarnessError
from core.events import Event
from evals.chess import calibrate as calibration
from evals.chess.batch import COLORS, Batch, ChessBatchSpec, Estimate, play_batch
from evals.chess.elo import Rating
from evals.chess.game import GameRules
from evals.chess.players import ModelMaker, load_player
from evals.chess.rate import RateSpec, play_rated
from evals.chess.runner import GameRun
from evals.executors import Tally

app = typer.Typer(no_args_is_help=False)


def check_player(model: str, seed: int) -> None:
    """A model string or a scripted player, checked; a player's name without its `player:` says how to write it."""
    if model.startswith("player:"):
        load_player(model, seed)
        return
    try:
        check_model(model)
    except HarnessError as e:
        if model.partition(":")[0] in ("random", "reasoning", "silent", "stockfish"):
            raise HarnessError(f"{e} A scripted player is named with player:, e.g. --model player:{model}.") from None
        raise


@app.callback(invoke_without_command=True)
@exits_on_error
@stops_on_signal
def chess_command(
    ctx: typer.Context,
    games: int = typer.Option(1, min=1, help="How many games to play."),
    model: str = typer.Option(
        None,
        help="Required to play. Model string (e.g. scripted:FILE), or a scripted player: player:random, "
        "player:reasoning[=CHARS], player:silent, player:stockfish[:elo=1800,...].",
    ),
    opponent: str = typer.Option(
        "stockfish:skill=0", help="random, or stockfish[:skill=0..20,elo=1350..2850,depth=N,nodes=N,time=S]."
    ),
    color: str = typer.Option("alternate", help=f"The agent's colour: {', '.join(COLORS)}."),
    policy: str = POLICY,
    out: Path = typer.Option(
        Path("runs"),
        help="Parent folder: the new batch folder is created inside it, and its path "
        "printed (not used with --resume, which names the batch folder itself).",
    ),
    seed: int = typer.Option(0, help="Game i uses seed + i (model sampling, random opponent, scripted players)."),
    max_plies: int = typer.Option(200, min=1, help="A game is drawn after this many plies."),
    max_failed_moves: int = typer.Option(3, min=1, help="Failed moves per turn before the game is forfeited."),
    max_replies: int = typer.Option(10, min=1, help="Model replies per turn before the game is forfeited."),
    resign: bool | None = typer.Option(
        None,
        "--resign/--no-resign",
        help="Offer the agent the resign tool; default: yes, but no for the embedded model "
        "(a small model resigns at once).",
    ),
    analysis_depth: int = typer.Option(8, min=0, help="Stockfish depth for move-quality analysis; 0 skips it."),
    sandbox: str = typer.Option(
        "none",
        help="Where the model's run_code programs run under a policy in code mode: none, local, docker or "
        "docker:IMAGE (the game's own tools need none).",
    ),
    workers: int = typer.Option(
        1,
        min=1,
        help="Games played at once (with --executor ray and no --ray-address: the "
        "CPUs of the Ray instance started here).",
    ),
    resume: Path = typer.Option(
        None, help="Continue the batch in this folder (same settings): its finished games are kept and the rest played."
    ),
    executor: str = EXECUTOR,
    ray_address: str = RAY_ADDRESS,
    task_cpus: float = TASK_CPUS,
    task_memory_mb: int = TASK_MEMORY_MB,
    retries: int = RETRIES,
    max_cost_usd: float = MAX_COST_USD,
    prices: Path = PRICES,
    as_json: bool = typer.Option(
        False, "--json", help="Print the final table as JSON on stdout (progress lines go to stderr)."
    ),
    rate: bool = typer.Option(
        False,
        "--rate",
        help="Rate the model on the Elo scale: each game against the calibrated ladder's opponent nearest its "
        "current estimate, colours alternating (--games, --opponent and --color do not apply).",
    ),
    max_games: int = typer.Option(40, min=1, help="With --rate: the most games to play."),
    target_width: float = typer.Option(
        200.0, min=0, help="With --rate: stop once the 95% interval is this many Elo points wide."
    ),
    calibration_table: Path = typer.Option(
        calibration.TABLE, "--calibration", help="With --rate: the ladder's calibration table."
    ),
    otel_endpoint: str = OTEL_ENDPOINT,
) -> None:
    """Play games against an engine; each game is a run directory, and batch.json holds every game and the totals."""
    if ctx.invoked_subcommand is not None:
        return
    use_otel(otel_endpoint)
    if model is None:
        raise HarnessError("harness chess needs --model (e.g. --model player:random); see harness chess --help.")
    check_player(model, seed)  # before the batch folder
    spec = ChessBatchSpec(
        games=games,
        make_model=ModelMaker(model),
        opponent=opponent,
        color=color,
        policy=policy_for(policy, model),
        out=out,
        seed=seed,
        rules=GameRules(
            max_plies=max_plies,
            max_failed_moves=max_failed_moves,
            max_replies=max_replies,
            allow_resign=resign if resign is not None else not is_local(model),
        ),
        analysis_depth=analysis_depth or None,
        executor=executor_options(executor, workers, ray_address, task_cpus, task_memory_mb, retries),
        resume=resume,
        max_cost_usd=max_cost_usd,
        prices=prices,
        sandbox=SandboxSpec.parse(sandbox),
    )
    if rate:
        if spec.executor.kind != "local" or spec.executor.workers != 1 or resume or max_cost_usd is not None:
            raise HarnessError(
                "--rate chooses each game from the ones before, so it plays one game at a time here: "
                "leave out --workers, --executor, --resume and --max-cost-usd."
            )
        rated = RateSpec(replace(spec, opponent="random"), max_games, target_width, calibration_table)
        batch, folder = rate_following(rated, stderr if as_json else console)
    else:
        batch, folder = play_following(spec, stderr if as_json else console)  # the JSON alone on stdout
    print_batch(batch, folder, as_json)


def rate_following(spec: RateSpec, said: Console) -> tuple[Batch, Path]:
    """Play a rated schedule with a line per game: the opponent, the result and the rating so far."""

    def finished(i: int, played: GameRun, rating: Rating) -> None:
        r = played.record
        said.print(
            text(
                f"game {i + 1}: {r.color} vs {r.opponent}: {r.player_result} ({r.termination}, {r.plies} plies); "
                f"rating {rating.line()}"
            ),
            soft_wrap=True,
        )

    return play_rated(spec, on_game=finished)


def play_following(spec: ChessBatchSpec, said: Console) -> tuple[Batch, Path]:
    """Play the batch under a progress bar, with a line per finished game and a heartbeat."""
    games = spec.games
    started = time.monotonic()
    with progress_bar(said) as progress:
        bar = progress.add_task("game 1", total=games, note="")
        tally = Tally(total=games, on_change=lambda t: progress.update(bar, completed=t.ended, note=t.line()))
        # The step line follows one game at a time: only when games run one by one in this process.
        watch = GameWatcher(progress, bar)
        one_by_one = spec.executor.kind == "local" and spec.executor.workers == 1

        def finished(i: int, played: GameRun) -> None:
            said.print(text(game_line(i, games, played)))
            watch.next_game(i + 2)

        def beat() -> str:
            if one_by_one:
                return f"game {watch.game}/{games}, {watch.state.line()}"
            return f"games: {tally.line()}, {time.monotonic() - started:.0f} s"

        if not one_by_one:
            progress.update(bar, description="games")
        with heartbeat(said, beat):
            played = play_batch(spec, listeners=(watch,) if one_by_one else (), on_game=finished, tally=tally)
        if not said.is_terminal:  # the bar's last state, which a pipe never sees
            said.print(text(f"games: {tally.line()}"))
    return played


def print_batch(batch: Batch, folder: Path, as_json: bool) -> None:
    cost = batch.cost.line(folder, "game")
    if as_json:
        stderr.print(text(cost), soft_wrap=True)
        print_json(
            {
                "batch_folder": str(folder),
                "model": batch.model,
                "opponent": batch.opponent,
                "policy": batch.policy,
                **batch.aggregate.model_dump(mode="json"),
                **({"rating": batch.rating.model_dump(mode="json")} if batch.rating is not None else {}),
                "cost": batch.cost.model_dump(mode="json"),
            }
        )
        return
    # The heading is a line of its own, not the table's title, which rich would wrap to the table's width.
    console.print(
        text(f"{batch.model} vs {batch.opponent} · {batch.aggregate.games} games · policy {batch.policy}"),
        soft_wrap=True,
    )
    console.print(batch_table(batch))
    console.print(text(cost), soft_wrap=True)
    console.print(text(f"batch folder: {folder}  (batch.json, one run directory per game)"), soft_wrap=True)


def game_line(i: int, games: int, played: GameRun) -> str:
    """One plain line per finished game, e.g. `game 2/6 done: white 1-0 win (checkmate), 34 plies, 12.3 s`."""
    r = played.record
    return (
        f"game {i + 1}/{games} done: {r.color} {r.result} {r.player_result} ({r.termination}), "
        f"{r.plies} plies, {r.game_time_s:.1f} s"
    )


class GameWatcher:
    """A journal listener that follows the current game: its step on the progress line, its figures for the heartbeat."""

    def __init__(self, progress: Progress, bar):
        self.progress, self.bar, self.game = progress, bar, 1
        self.state = RunState()

    def next_game(self, game: int) -> None:
        self.game, self.state = game, RunState()

    def __call__(self, event: Event) -> None:
        self.state(event)
        self.progress.update(self.bar, description=f"game {self.game} · step {event.step}")


def batch_table(batch: Batch) -> Table:
    a = batch.aggregate
    table = Table(show_header=False)
    table.add_column(style="bold")
    table.add_column()
    rows = [
        (
            "W / D / L",
            f"{a.wins} / {a.draws} / {a.losses}"
            + (f" ({a.aborted} unfinished, counted as losses)" if a.aborted else ""),
        ),
        *([("Elo", batch.rating.line())] if batch.rating is not None else []),
        ("win_loss", fmt(a.win_loss, 3)),
        ("wrong moves / 1000 moves", fmt(a.wrong_moves_per_1000_moves, 1)),
        ("wrong actions / 1000 moves", fmt(a.wrong_actions_per_1000_moves, 1)),
        ("prompt tokens / move", fmt(a.prompt_tokens_per_move, 0)),
        ("completion tokens / move", fmt(a.completion_tokens_per_move, 0)),
        ("avg game time", f"{a.avg_game_time_s:.2f} s" if a.avg_game_time_s is not None else "—"),
        ("avg plies", f"{a.avg_plies}" if a.avg_plies is not None else "—"),
        ("avg centipawn loss", f"{a.avg_cp_loss}" if a.avg_cp_loss is not None else "—"),
        ("blunders / 1000 moves", f"{a.blunders_per_1000_moves}" if a.blunders_per_1000_moves is not None else "—"),
    ]
    for key, value in rows:
        table.add_row(key, value)
    return table


def fmt(e: Estimate, digits: int) -> str:
    if e.value is None:
        return "—"
    value = f"{e.value:,.{digits}f}"
    if e.low is None or e.high is None:
        return value
    return f"{value} (95% CI {e.low:,.{digits}f} to {e.high:,.{digits}f})"


@app.command("calibrate")
@exits_on_error
def calibrate_command(
    games_per_pair: int = typer.Option(4, min=1, help="Games each pairing plays, colours alternating."),
    neighbours: int = typer.Option(3, min=1, help="Each free rung meets this many rungs nearest its nominal Elo."),
    skills: str = typer.Option("0-20", help="Skill levels on the ladder: a range 0-20, a list 0,5,10, or none."),
    anchor_step: int = typer.Option(150, min=1, help="UCI_Elo anchors every this many points from 1350."),
    anchor_max: int = typer.Option(calibration.ELO_MAX, help="The highest UCI_Elo anchor."),
    weak: bool = typer.Option(True, "--weak/--no-weak", help="Include the random mover and its rungs."),
    nodes: int = typer.Option(calibration.NODES, min=1, help="Nodes a move for every Stockfish on the ladder."),
    seed: int = typer.Option(0, help="Game k of the calibration gets seeds seed + 2k (white) and + 1 (black)."),
    random_shares: str = typer.Option(
        "0.75,0.5,0.25", help="With --weak: the rungs of Stockfish skill 0 playing this share of moves at random."
    ),
    workers: int = typer.Option(1, min=1, help="Games played at once."),
    add_to: Path = typer.Option(
        None, help="An earlier table (same Stockfish, same nodes): its games are kept and fitted with these."
    ),
    out: Path = typer.Option(calibration.TABLE, help="Where the table is written (JSON)."),
) -> None:
    """Play the opponent ladder among itself and fit it: UCI_Elo anchors fixed, the rest placed by maximum likelihood."""
    try:
        shares = [float(x) for x in random_shares.split(",")]
    except ValueError:
        raise HarnessError(f"--random-shares {random_shares!r}: give shares between 0 and 1, e.g. 0.75,0.5.") from None
    ladder = calibration.rungs(
        parse_levels(skills), range(calibration.ELO_MIN, anchor_max + 1, anchor_step), weak, nodes, shares
    )
    earlier = calibration.load(add_to) if add_to is not None else None
    command = shlex.join(["harness", *sys.argv[1:]])

    def said(k: int, total: int, g: calibration.CalibrationGame) -> None:
        console.print(text(f"game {k}/{total}: {g.white} vs {g.black}: {g.score:g} ({g.termination}, {g.plies} plies)"))

    table = calibration.calibrate(ladder, games_per_pair, seed, command, neighbours, workers, said, earlier)
    calibration.save(table, out)
    console.print(ladder_table(table))
    console.print(text(f"{table.stockfish}, {nodes} nodes a move, {len(table.games)} games: written to {out}"))


def parse_levels(text_: str) -> list[int]:
    if text_ in ("", "none"):
        return []
    try:
        if "-" in text_:
            low, high = (int(x) for x in text_.split("-"))
            return list(range(low, high + 1))
        return [int(x) for x in text_.split(",")]
    except ValueError:
        raise HarnessError(f"--skills {text_!r}: give a range (0-20), a list (0,5,10) or none.") from None


def ladder_table(table: calibration.Calibration) -> Table:
    out = Table("opponent", "Elo (95% CI)", "games")
    for p in table.players:
        out.add_row(p.spec, "anchor " + f"{p.rating.elo:.0f}" if p.anchor else p.rating.line(), str(p.rating.games))
    return out
