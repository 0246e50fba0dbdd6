"""study.html: the grid, each policy's figures at each point, the paired comparisons (between policies,
and between routers), and the sweep."""

from __future__ import annotations

import math
import re
from pathlib import Path

from jinja2 import ChoiceLoader, FileSystemLoader
from markupsafe import Markup

from evals.reports.html import common, environment
from evals.reports.svg import standalone
from evals.study.sweep import COLORS, CROSSOVER, sweep_charts

TEMPLATES = Path(__file__).resolve().parent / "templates"


def share(v: float | None) -> str:
    return "—" if v is None or not math.isfinite(v) else f"{v:.1%}"


def num(v: float | int | None, digits: int = 0) -> str:
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return "—"
    return f"{v:,.{digits}f}"


def seconds(v: float | None) -> str:
    return "—" if v is None else f"{v:.2f} s"


def interval(row: dict, key_low: str = "low", key_high: str = "high", fmt=lambda v: f"{v:+,.3g}") -> str:
    low, high = row.get(key_low), row.get(key_high)
    if low is None or high is None or not (math.isfinite(low) and math.isfinite(high)):
        return "—"
    return f"{fmt(low)} to {fmt(high)}"


def task_value(v: float, scale: float) -> str:
    """A per-task figure: four decimals for shares and dollars (|scale| < 1), else whole numbers."""
    return f"{v:+,.4f}" if abs(scale) < 1 else f"{v:+,.0f}"


def task_interval(row: dict) -> str:
    """A per-task row's 95% interval of B − A, in the row's own scale."""
    scale = max(abs(row["mean_a"]), abs(row["mean_b"]))
    return interval(row, fmt=lambda v: task_value(v, scale))


def cached_share_pair(pair) -> str:
    """A pair's paired difference in cached share (B − A), in percentage points, with its 95% interval."""
    extra = pair["extra"] if isinstance(pair, dict) else pair.extra
    m = next((e for e in extra if e["label"] == "cached share"), None)
    if m is None or m["diff"] is None or not math.isfinite(m["diff"]):
        return "—"
    return f"{m['diff'] * 100:+.1f} pp ({interval(m, fmt=lambda v: f'{v * 100:+.1f}')})"


def engines(point) -> str:
    """The engines of a point, as a heading says them: '' for one engine."""
    replicas, router = (
        (point["replicas"], point["router"]) if isinstance(point, dict) else (point.replicas, point.router)
    )
    return f"{replicas} replicas · {router} · " if router else ""


def render_study(study, folder: Path) -> Path:
    env = environment()
    env.loader = ChoiceLoader([FileSystemLoader(TEMPLATES), *([env.loader] if env.loader else [])])
    names = [f.policy for f in study.points[0].policies] if study.points else list(study.spec.policies)
    charts = [(caption, Markup(hit), Markup(speed)) for caption, hit, speed in sweep_charts(study.points, names)]
    html = env.get_template("study.html.j2").render(
        **common(),
        study=study,
        charts=charts,
        colors=dict(zip(names, COLORS * len(names), strict=False)),
        crossover=CROSSOVER,
        share=share,
        num=num,
        seconds=seconds,
        interval=interval,
        cached_share_pair=cached_share_pair,
        task_interval=task_interval,
        engines=engines,
        with_routers=any(p.router for p in study.points),
    )
    path = folder / "study.html"
    path.write_text(html, encoding="utf-8")
    for caption, *pair in charts:  # each chart also as a file of its own, to show elsewhere
        slug = re.sub(r"[^a-z0-9]+", "-", caption.lower()).strip("-")
        for what, chart in zip(("cached-share", "throughput"), pair):
            if chart.startswith("<svg"):
                (folder / f"sweep-{slug}-{what}.svg").write_text(standalone(chart), encoding="utf-8")
    return path


def markdown(study_json: dict) -> str:
    """The per-policy figures of every point as one Markdown table, as study.json holds them."""
    head = (
        "| runs in flight | KV cache | policy | runs | prompt tokens | cached share | ideal reuse | evicted blocks | "
        "preemptions | steps/s | tokens/s | TTFT p50 / p95 | peak context | outcome |"
    )
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for p in study_json["points"]:
        tokens = f"{num(p['cache_tokens'])} tok"
        cache = (
            f"{p['kv_cache_mb']} MiB ({tokens})"
            if p["kv_cache_mb"]
            else f"the server's ({tokens})"
            if p["cache_tokens"]
            else "default"
        )
        if p.get("router"):  # the tokens are the replicas' together
            cache = f"{p['replicas']} × {cache}, {p['router']}"
        for f in p["policies"]:
            e = f["engine"]
            lines.append(
                f"| {p['concurrency']} | {cache} | {f['policy']} | {f['runs']} | {num(f['prompt_tokens'])} | "
                f"{share(f['cached_share'])} | {share(f['ideal_reuse'])} | {num(e['evicted_blocks'])} | "
                f"{num(e['preemptions'])} | {num(f['steps_per_s'], 3)} | {num(f['tokens_per_s'], 1)} | "
                f"{seconds(f['ttft_p50_s'])} / {seconds(f['ttft_p95_s'])} | {num(f['peak_context'])} | "
                f"{f['finished']}/{f['runs']} |"
            )
    return "\n".join(lines)


def routers_markdown(study_json: dict) -> str:
    """One row per replicas count, router and policy, then the router pairs: as study.json holds them."""
    head = (
        "| replicas | router | policy | runs | cached share | TTFT p50 / p95 | tokens/s | load imbalance | "
        "prompt tokens per replica |"
    )
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for p in study_json["points"]:
        for f in p["policies"]:
            per_replica = f["engine"].get("replica_prompt_tokens") or {}
            lines.append(
                f"| {p['replicas']} | {p['router'] or '-'} | {f['policy']} | {f['runs']} | {share(f['cached_share'])} | "
                f"{seconds(f['ttft_p50_s'])} / {seconds(f['ttft_p95_s'])} | {num(f['tokens_per_s'], 1)} | "
                f"{num(f['load_imbalance'], 2)} | {' / '.join(num(v) for v in per_replica.values()) or '—'} |"
            )
    pairs = ["", "| policy | B vs A | pairs | cached share B − A (95% interval) | prompt tokens B/A (p) |"]
    pairs.append("|---|---|---|---|---|")
    for group in study_json.get("router_pairs", []):
        for pair in group["pairs"]:
            c = pair["comparison"]
            m = next((m for m in c["metrics"] if m["primary"]), None)
            ratio = f"×{m['ratio']:.3g} (p = {m['p']:.2g})" if m and m.get("ratio") is not None else "—"
            pairs.append(
                f"| {group['policy']} | {pair['b']} vs {pair['a']} | {c['pairs']} | {cached_share_pair(pair)} | {ratio} |"
            )
    return "\n".join(lines + (pairs if len(pairs) > 3 else []))
