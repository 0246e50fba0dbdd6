import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from evals.executors.run import LOOPBACK_ONLY
from tests import tiers

# Every Ray node a test starts, and its driver, on 127.0.0.1: no traffic leaves loopback. Ray reads this
# once, at import, and a test module may import Ray at collection: so it is set here, before any of them.
os.environ[LOOPBACK_ONLY] = "0"
# Ray Serve marks its HTTP proxy unhealthy, and kills it, when three readiness checks take over 5 s each: on two
# cores kept busy by the rest of the suite they do, and the replica set never comes up. Its processes read these
# when they start.
os.environ.setdefault("RAY_SERVE_PROXY_READY_CHECK_TIMEOUT_S", "60")
os.environ.setdefault("RAY_SERVE_PROXY_HEALTH_CHECK_TIMEOUT_S", "60")
# One torch (OpenMP) thread for every engine the tests start: in this process and in every process it starts
# (`harness serve`, `harness run --model local`, studies). `make test` runs two workers and the Ray tests at once on
# CI's two cores, so an engine never has a core to itself, and a parallel region of two threads then waits at each
# of its barriers for the thread the OS left off the CPU: one request to an engine beside two busy processes took
# 160-225 s with torch's default of two threads and 26-51 s with one (benchmarks/README.md, "The test suite").
# The CPU kernels' tests set two threads themselves, so each kernel's split between threads stays tested.
# Set before anything here imports torch; OMP_NUM_THREADS=2 in the environment runs the old way.
os.environ.setdefault("OMP_NUM_THREADS", "1")

# Property tests without settings of their own run hypothesis's usual 100 examples; CI runs 500 (.ci/run sets
# HYPOTHESIS_PROFILE=ci), five times the search, in a suite that must stay well under 40 minutes.
# HYPOTHESIS_PROFILE=deep runs 2,000, before a change to what a property test covers.
settings.register_profile("deep", max_examples=2000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("ci", max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("dev", max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))


@pytest.fixture(scope="session")
def ray_serve_instance():
    """One local Ray instance for the tests that start Ray Serve in this process, started once and shut down
    at the end of the session: Ray started a second time in one process, after a shutdown, can crash it
    with a segmentation fault at exit (its background threads outlive the first instance), as it did once
    under CI with a module fixture each. Its own folder (short: Ray's unix socket paths have a length
    limit), which a study's replica sets join; nothing here joins an earlier Ray run's cluster."""
    import ray

    temp = tempfile.mkdtemp(prefix="rs-", dir="/tmp")
    os.environ["RAY_TMPDIR"] = temp
    os.makedirs(os.path.join(temp, "ray"), exist_ok=True)
    ray.init(num_cpus=4, include_dashboard=False, log_to_driver=False, _temp_dir=temp)
    yield
    ray.shutdown()
    shutil.rmtree(temp, ignore_errors=True)


@pytest.fixture(scope="session")
def model_weights() -> Path:
    """The embedded model's file. A test that loads the model (in process, or in a `harness serve` it starts)
    uses this fixture, directly or through its own, which marks it `model` (tests/tiers.py)."""
    from engine.weights import default_model_path

    return default_model_path()


def chattr(flag: str, *paths: Path) -> None:
    subprocess.run(["chattr", flag, *map(str, paths)], check=True, capture_output=True)


@pytest.fixture
def immutable(tmp_path):
    """Make paths unwritable even for root: the filesystem's immutable attribute."""
    if shutil.which("chattr") is None:
        pytest.skip("chattr is not installed")
    made: list[Path] = []
    probe = tmp_path / "probe"
    probe.mkdir()
    try:
        chattr("+i", probe)
    except subprocess.CalledProcessError as e:
        pytest.skip(f"this filesystem has no immutable attribute: {e.stderr.decode().strip()}")
    chattr("-i", probe)

    def make(*paths: Path) -> None:
        chattr("+i", *paths)
        made.extend(paths)

    yield make
    chattr("-i", *made)


def pytest_addoption(parser):
    parser.addoption(
        "--quick",
        action="store_true",
        help="only the tests that need no Docker, Ray or model weights (`make quick`); tests/tiers.py says how",
    )


def pytest_configure(config):
    for marker in tiers.MARKERS:
        config.addinivalue_line("markers", marker)


def pytest_collection_modifyitems(config, items):
    """Tests are marked `docker`, `ray` and `model` by the fixtures they use (tests/tiers.py). `make test` runs
    the `ray` ones in a pytest process of their own, since Ray's memory monitor counts the memory the rest of
    the suite's process has grown to and kills Ray's workers near the machine's limit."""
    tiers.mark(items)
    if config.getoption("quick"):
        tiers.quick(config, items)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    tiers.Watch.judge(item, outcome.get_result())
