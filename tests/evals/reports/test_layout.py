"""Every report page read as a person reads it: the run report, the chess run report, the batch
report and the A/B page rendered by headless Chromium at 1280×800 fit the width, no two chart
labels overlap, and the chess report shows the final board and the moves."""

from __future__ import annotations

import chess.pgn
import pytest

from agent.models.pricing import load_prices
from evals.ab.compare import compare
from evals.ab.html import render as render_ab
from evals.ab.records import load_batch
from evals.interop.imports.batch import import_batch
from evals.reports.batch import render_batch
from evals.reports.html import render_run
from evals.reports.load import load_run, run_dirs_in
from tests.evals.interop import documents as docs

VIEWPORT = {"width": 1280, "height": 800}

# The boxes of every text element of every chart, in page pixels.
CHART_TEXT_BOXES = """() => [...document.querySelectorAll('svg.chart')].map(svg =>
    [...svg.querySelectorAll('text')].map(t => { const r = t.getBoundingClientRect();
        return {text: t.textContent, x0: r.left, y0: r.top, x1: r.right, y1: r.bottom}; })
        .filter(b => b.x1 > b.x0 && b.y1 > b.y0))"""


@pytest.fixture(scope="module")
def pages(rich_run, chess_batches, tmp_path_factory) -> dict:
    prices = load_prices()
    a_dir, b_dir = chess_batches
    chess_runs = [load_run(d, prices) for d in run_dirs_in(a_dir)]
    a, b = load_batch(a_dir, prices), load_batch(b_dir, prices)
    ab_html, _ = render_ab(compare(a, b, a_dir.name, b_dir.name, resamples=500), tmp_path_factory.mktemp("ab"))
    return {
        "run": render_run(load_run(rich_run, prices, price_model="anthropic:claude-sonnet-4-5")),
        # A game where the agent plays white (run names sort by time, then colour): the test reads its first move.
        "chess": render_run(load_run(next(d for d in run_dirs_in(a_dir) if "-white-" in d.name), prices)),
        "batch": render_batch(a_dir, chess_runs),
        "ab": ab_html,
    }


def overlaps(a: dict, b: dict, slack: float = 0.5) -> bool:
    return (
        a["x0"] + slack < b["x1"]
        and b["x0"] + slack < a["x1"]
        and a["y0"] + slack < b["y1"]
        and b["y0"] + slack < a["y1"]
    )


def check_fits(page) -> list:
    """The loaded page fits its viewport's width, no table pushes past it (nothing hides behind a
    scrollbar) and no two labels of one chart overlap; returns the charts' text boxes."""
    assert page.evaluate("document.documentElement.scrollWidth") <= VIEWPORT["width"]
    too_wide = page.evaluate("""() => [...document.querySelectorAll('table')]
        .filter(t => t.getBoundingClientRect().right > document.documentElement.clientWidth + 0.5).length""")
    assert too_wide == 0
    charts = page.evaluate(CHART_TEXT_BOXES)
    clashes = [
        (a["text"], b["text"])
        for boxes in charts
        for i, a in enumerate(boxes)
        for b in boxes[i + 1 :]
        if overlaps(a, b)
    ]
    assert clashes == []
    return charts


@pytest.mark.parametrize("name", ["run", "chess", "batch", "ab"])
def test_the_page_fits_1280_pixels_and_no_chart_labels_overlap(browser, pages, name):
    page = browser.new_page(viewport=VIEWPORT)
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(pages[name].as_uri())
    assert check_fits(page), "every page has charts"
    assert errors == []
    page.close()


@pytest.fixture(scope="module")
def imported_pages(tmp_path_factory) -> dict:
    """An imported batch: its pages carry the source's columns and cards beside ours."""
    root = tmp_path_factory.mktemp("imported")
    files = [
        docs.write(root / "trajs" / f"{name}.traj.json", docs.mini_v1(name))
        for name in ("django__django-11099", "scikit-learn__scikit-learn-25747", "sphinx-doc__sphinx-10435")
    ]
    folder = root / "runs" / "import-trajs"
    import_batch(files, folder, "auto", load_prices())
    runs = [load_run(d, load_prices()) for d in run_dirs_in(folder)]
    return {"imported run": render_run(runs[0]), "imported batch": render_batch(folder, runs)}


@pytest.mark.parametrize("name", ["imported run", "imported batch"])
def test_an_imported_runs_pages_fit_1280_pixels_too(browser, imported_pages, name):
    page = browser.new_page(viewport=VIEWPORT)
    page.goto(imported_pages[name].as_uri())
    assert check_fits(page)
    assert "recorded by mini-swe-agent" in page.locator("#summary").inner_text()
    page.close()


def test_the_chess_report_shows_the_board_the_moves_and_the_record(browser, pages):
    page = browser.new_page(viewport=VIEWPORT)
    page.goto(pages["chess"].as_uri())
    assert page.locator("#board svg").count() == 1
    assert page.locator("#board svg").bounding_box()["width"] >= 300
    rows = page.locator("#moves tbody tr")
    assert rows.count() >= 2
    agent_losses = page.locator("#moves tbody td b").count()
    assert agent_losses >= 2
    first = rows.nth(0).locator("td").all_inner_texts()
    assert first[0] == "1" and first[1] and first[2].strip().isdigit()  # the agent plays white: its loss is shown
    record = dict(
        zip(
            page.locator("#game-record th").all_inner_texts(),
            page.locator("#game-record td").all_inner_texts(),
            strict=True,
        )
    )
    assert record["opponent"] == "stockfish:skill=0" and "for the agent" in record["result"]
    assert "=" not in page.locator("#summary .outcome").inner_text()  # no key = value dump
    page.close()


def test_the_ab_page_says_its_verdict_once_with_short_labels(browser, pages, chess_batches):
    page = browser.new_page(viewport=VIEWPORT)
    page.goto(pages["ab"].as_uri())
    headers = page.locator("#metrics thead th").all_inner_texts()
    assert headers[1:3] == ["A", "B"]
    legend = page.locator(".legend-ab").inner_text()
    assert chess_batches[0].name in legend and chess_batches[1].name in legend
    verdict = page.locator(".verdict").inner_text()
    assert verdict.count("B differs from A") + verdict.count("No detectable difference") == 1
    assert chess_batches[0].name not in page.locator("#metrics").inner_text()
    page.close()


def test_chess_ab_pairs_play_the_same_game(chess_batches):
    """Each seed's opponent is seeded, so the games of a pair are move for move the same."""

    def games(folder):
        out = {}
        for d in run_dirs_in(folder):
            record = load_run(d, load_prices()).summary.outcome
            with open(d / record["pgn"]) as f:
                out[record["seed"]] = [m.uci() for m in chess.pgn.read_game(f).mainline_moves()]
        return out

    a, b = games(chess_batches[0]), games(chess_batches[1])
    assert sorted(a) == sorted(b) == [11, 12, 13]
    assert all(a[seed] == b[seed] and len(a[seed]) >= 4 for seed in a)
    assert len({tuple(moves) for moves in a.values()}) == 3  # and the seeds differ
