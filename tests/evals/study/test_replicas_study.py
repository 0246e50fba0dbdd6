"""`harness study` over 2 CPU replicas of the embedded model on Ray Serve, behind two routers: the
study starts the replica set for each point, reads each replica's /metrics, and pairs the runs of
each policy between the routers. Kept small: 1 task, 2 seeds, 2 policies, 2 steps a run, 64 tokens a
reply.

Ray, two engines and the front door need about 3 GB free (see tests/engine/test_replicas.py)."""

from __future__ import annotations

import json

import pytest

# Ray, in a process of its own (tests/conftest.py), and alone: two replicas of the model and Serve's actors
# want both cores, and beside the other tests they start in minutes, near Serve's health checks' limits.
pytestmark = [pytest.mark.ray, pytest.mark.serial]
pytest.importorskip("ray.serve", reason="ray[serve] is not installed (pip install 'harness[serve-replicas]')")


from tests.evals.study.conftest import study  # noqa: E402

ROUTERS = ("round_robin", "session")


@pytest.fixture(scope="module")
def replica_study(ray_serve_instance, tmp_path_factory):
    code, output, folder = study(
        tmp_path_factory.mktemp("replicas") / "out",
        "--model",
        "local",
        "--task",
        "ledger",
        "--policy",
        "local_long",
        "--policy",
        "local_compact",
        "--seeds",
        "0,1",
        "--concurrency",
        "2",
        "--kv-cache-mb",
        "64",
        "--max-steps",
        "2",
        "--max-tokens",
        "64",
        "--sandbox",
        "local",
        "--replicas",
        "2",
        "--router",
        ",".join(ROUTERS),
        "--router-imbalance",
        "2",
    )
    assert code == 0, output
    assert folder is not None
    return folder, json.loads((folder / "study.json").read_text()), output


def test_each_router_is_a_point_with_its_replicas_own_counters(replica_study):
    folder, data, _ = replica_study
    assert [(p["replicas"], p["router"]) for p in data["points"]] == [(2, r) for r in ROUTERS]
    assert sorted(p.name for p in folder.iterdir() if p.is_dir()) == sorted(
        f"r2-{r}-c2-kv64-{policy}" for r in ROUTERS for policy in ("local_long", "local_compact")
    )
    for point in data["points"]:
        for f in point["policies"]:
            engine = f["engine"]
            assert engine["source"] == "/metrics"
            per_replica = engine["replica_prompt_tokens"]
            assert len(per_replica) == 2  # both replicas reported, each by its own id
            # the sums the study counts with are the replicas' together, and the runs' own usage
            assert sum(per_replica.values()) == engine["prompt_tokens"] == f["prompt_tokens"] > 0
            assert f["load_imbalance"] >= 1.0
            assert f["load_imbalance"] == max(per_replica.values()) * 2 / sum(per_replica.values())
            assert f["cached_share"] is not None and f["ttft_p50_s"] is not None


def test_each_policys_runs_pair_between_the_routers(replica_study):
    _, data, _ = replica_study
    groups = data["router_pairs"]
    assert sorted(g["policy"] for g in groups) == ["local_compact", "local_long"]
    for group in groups:
        assert (group["replicas"], group["concurrency"], group["kv_cache_mb"]) == (2, 2, 64)
        [pair] = group["pairs"]
        assert (pair["a"], pair["b"]) == ROUTERS
        assert pair["comparison"]["pairs"] == 2  # ledger × 2 seeds
        assert {e["label"] for e in pair["extra"]} == {"cached share", "peak context"}


def test_the_report_and_the_command_line_show_the_router_rows_and_pairs(replica_study):
    from evals.study.report import routers_markdown

    folder, data, output = replica_study
    html = (folder / "study.html").read_text()
    assert '<section id="routers">' in html
    rows = html.split('<table class="data routers">')[1].split("</table>")[0].count("<tr>") - 1  # less the head
    assert rows == 4  # 2 routers × 2 policies
    assert html.split('<table class="data router-pairs">')[1].count("session</b> vs round_robin") == 2
    assert "session vs round_robin: cached share" in output
    table = routers_markdown(data).splitlines()
    assert sum(1 for line in table if line.startswith("| 2 | ")) == 4
    assert sum(1 for line in table if "session vs round_robin" in line) == 2
