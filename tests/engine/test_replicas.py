"""Two CPU replicas of the embedded model on Ray Serve, behind each router: an agent-like workload
(sessions whose prompts grow turn by turn) finds more of its prompts cached under the affinity
routers than under round robin, and a replica killed mid-run fails only the requests on it, with
an error the harness retries, while Serve replaces it.

Ray, two engines and the front door need about 3 GB free: Ray's memory monitor kills actors
(and the test then hangs, retrying) when the machine is above 95% of its memory."""

import contextlib
import random
import threading
import time

import httpx
import pytest

# Ray, in a process of its own (tests/conftest.py), and alone: two replicas of the model and Serve's actors
# want both cores, and beside the other tests they start in minutes, near Serve's health checks' limits.
pytestmark = [pytest.mark.ray, pytest.mark.serial]
pytest.importorskip("ray.serve", reason="ray[serve] is not installed (pip install 'harness[serve-replicas]')")
openai = pytest.importorskip("openai")

import ray  # noqa: E402

from agent.models import load_model  # noqa: E402
from agent.retry import with_retries  # noqa: E402
from core.errors import TransientModelError  # noqa: E402
from core.policy import ModelParams  # noqa: E402
from core.types import Message  # noqa: E402
from engine import EngineConfig  # noqa: E402
from engine.server.replicas import DEPLOYMENT, running  # noqa: E402
from tests.engine.serving import free_port, metrics  # noqa: E402

SESSIONS, TURNS = 4, 6
# Small caches, one thread each: a replica holds a few sessions' prompts, as a loaded GPU would.
CONFIG = EngineConfig(kv_cache_bytes=64 << 20, num_threads=1, max_num_seqs=8)
SYSTEM = "You are a coding agent. Use the tools to inspect the repository and fix the failing test."


def observation(session: int, turn: int) -> str:
    words = random.Random(session * 100 + turn).choices(["src", "test", "ok", "fail", "def", "line", "42"], k=40)
    return f"Output of command {turn} in workspace {session}: " + " ".join(words)


def client(url: str, session: int) -> "openai.OpenAI":
    return openai.OpenAI(
        base_url=url + "/v1",
        api_key="none",
        max_retries=0,
        default_headers={"X-Harness-Session": f"run-{session}"},
    )


def agent_workload(url: str) -> None:
    """Each session's prompt is its previous prompt plus the reply and one more observation; the
    sessions take turns in a shuffled order each round, as agents waiting on tools do."""
    clients = [client(url, s) for s in range(SESSIONS)]
    histories = [[{"role": "system", "content": SYSTEM}] for _ in range(SESSIONS)]
    order = random.Random(7)
    for turn in range(TURNS):
        sessions = list(range(SESSIONS))
        order.shuffle(sessions)
        for s in sessions:
            histories[s].append({"role": "user", "content": observation(s, turn)})
            reply = clients[s].chat.completions.create(
                model="smollm2", messages=histories[s], max_tokens=4, temperature=0
            )
            histories[s].append({"role": "assistant", "content": reply.choices[0].message.content or ""})


def cached_share(url: str) -> tuple[float, dict[str, float]]:
    m = metrics(httpx.get(url + "/metrics", timeout=60).text)
    summed = m["engine_cached_tokens_total"] / m["engine_prompt_tokens_total"]
    per_replica = {
        k: v
        for k, v in m.items()
        if k.startswith("engine_prompt_tokens_total{") or k.startswith("engine_cached_tokens_total{")
    }
    return summed, per_replica


@pytest.fixture(scope="module")
def session_replicas(ray_serve_instance):
    """The session router's replica set, started once for both tests: the affinity test reads its cache
    counters fresh, then the other kills one of its replicas. Started when the other routers' sets are down:
    Serve runs one replica set at a time here."""
    with running(2, "session", config=CONFIG, port=free_port()) as url:
        yield url


def test_affinity_routers_cache_more_of_an_agent_workload_than_round_robin(ray_serve_instance, request):
    shares = {}
    for router in ("round_robin", "least_loaded", "prefix", "session"):
        with (
            contextlib.nullcontext(request.getfixturevalue("session_replicas"))
            if router == "session"
            else running(2, router, config=CONFIG, port=free_port())
        ) as url:
            agent_workload(url)
            shares[router], per_replica = cached_share(url)
            print(f"{router}: cached share {shares[router]:.3f}; {per_replica}")
            assert len({k.split("replica=")[1] for k in per_replica}) == 2, "both replicas report"
    assert shares["session"] > shares["round_robin"]
    assert shares["prefix"] > shares["round_robin"]


def replica_actors() -> list[str]:
    prefix = f"SERVE_REPLICA::harness#{DEPLOYMENT}#"
    return [a["name"] for a in ray.util.list_named_actors(all_namespaces=True) if a["name"].startswith(prefix)]


def in_flight(url: str) -> dict[str, float]:
    """Requests running or queued on each replica, by its id."""
    out: dict[str, float] = {}
    for k, v in metrics(httpx.get(url + "/metrics", timeout=60).text).items():
        if k.startswith(("engine_requests_running{", "engine_requests_waiting{")):
            replica = k.split("replica=")[1].rstrip("}")
            out[replica] = out.get(replica, 0) + v
    return out


def test_a_killed_replica_fails_only_its_requests_and_the_harness_retries_them(session_replicas):
    runs, url = 8, session_replicas
    models = [load_model(f"openai-compatible:{url}/v1#smollm2") for _ in range(runs)]
    params = ModelParams(max_tokens=64, temperature=0)
    errors: list[list[Exception]] = [[] for _ in range(runs)]
    replies: list[str | None] = [None] * runs

    def one_run(i: int) -> None:
        def call():
            try:
                return models[i].complete([Message(role="user", text=f"Count from {i} to 100.")], [], params)
            except Exception as e:
                errors[i].append(e)
                raise

        replies[i] = with_retries(call, attempts=6, multiplier_s=0.5, max_wait_s=5).message.text

    threads = [threading.Thread(target=one_run, args=(i,)) for i in range(runs)]
    for t in threads:
        t.start()
    deadline = time.monotonic() + 60
    # Every request reached an engine, and both engines have some: the moment to kill one.
    while not ((n := in_flight(url)) and sum(n.values()) == runs and min(n.values()) >= 1):
        assert time.monotonic() < deadline, f"the requests did not all reach the replicas: {n}"
        time.sleep(0.2)
    victim = replica_actors()[0]
    on_victim = in_flight(url)[victim.split("#")[-1]]
    ray.kill(ray.get_actor(victim, namespace="serve"), no_restart=True)
    for t in threads:
        t.join(timeout=300)

    failed = [i for i in range(runs) if errors[i]]
    print(f"{on_victim:g} of {runs} requests were on the killed replica; {len(failed)} failed, then were retried")
    assert all(r is not None for r in replies), "every run got its reply, retried where it failed"
    assert 0 < len(failed) <= on_victim < runs, "only the requests on the killed replica failed"
    assert all(isinstance(e, TransientModelError) and "503" in str(e) for i in failed for e in errors[i])
    deadline = time.monotonic() + 120
    while (len(replica_actors()) < 2 or victim in replica_actors()) and time.monotonic() < deadline:
        time.sleep(1)
    assert len(replica_actors()) == 2 and victim not in replica_actors(), "Serve replaced the replica"
